//! Throughput in netperf's `-f` units, as the views print it: the unit's
//! name for a column head and a throughput as a figure in it.

use crate::render::filters::{figure_text, netperf_divisor};
use serde::Serialize;

/// One of netperf's `-f` units of throughput.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Units {
    /// netperf's letter: `k`, `m`, `g` (10^3, 10^6, 10^9 bits/s) or `K`,
    /// `M`, `G` (2^10, 2^20, 2^30 bytes/s).
    pub letter: &'static str,
    /// The unit as a column head names it: `10^6bits/s`, `MBytes/s`.
    pub name: &'static str,
    /// Bits per second in one unit.
    #[serde(skip)]
    bits_per_s: f64,
}

/// A letter netperf's `-f` does not know.
#[derive(Debug, thiserror::Error)]
#[error("unknown unit letter '{0}' (use k, m, g, K, M or G)")]
pub struct UnknownUnits(pub String);

/// The letters, each with the name a column head gives it.
const UNITS: [(&str, &str); 6] = [
    ("k", "10^3bits/s"),
    ("m", "10^6bits/s"),
    ("g", "10^9bits/s"),
    ("K", "KBytes/s"),
    ("M", "MBytes/s"),
    ("G", "GBytes/s"),
];

impl Units {
    /// The unit of netperf's `-f letter` (the command line accepts only
    /// the letters netperf knows).
    pub fn parse(letter: &str) -> Result<Units, UnknownUnits> {
        Units::of_letter(letter).ok_or_else(|| UnknownUnits(letter.to_string()))
    }

    /// The unit of netperf's `-f letter`; `None` for a letter netperf
    /// does not know.
    pub fn of_letter(letter: &str) -> Option<Units> {
        let (letter, name) = UNITS.into_iter().find(|(known, _)| *known == letter)?;
        let bits_per_s = netperf_divisor(letter).ok()?;
        Some(Units {
            letter,
            name,
            bits_per_s,
        })
    }

    /// Bits per second in one unit.
    pub fn bits_per_s(self) -> f64 {
        self.bits_per_s
    }

    /// `bits_per_s` in this unit: a figure with two decimals, or more
    /// where it needs them; `-` for none.
    pub fn figure(self, bits_per_s: Option<f64>) -> String {
        bits_per_s.map_or_else(
            || "-".to_string(),
            |bits| figure_text(bits / self.bits_per_s, 2),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_letter_of_netperf_has_a_name_and_a_scale() {
        let mega = Units::of_letter("m").unwrap();
        assert_eq!((mega.letter, mega.name), ("m", "10^6bits/s"));
        assert_eq!(mega.figure(Some(11_831.79e6)), "11831.79");
        assert_eq!(Units::of_letter("K").unwrap().figure(Some(8192.0)), "1.00");
        assert_eq!(mega.figure(None), "-");
        assert_eq!(Units::of_letter("x"), None);
        assert_eq!(
            Units::parse("x").unwrap_err().to_string(),
            "unknown unit letter 'x' (use k, m, g, K, M or G)"
        );
    }
}
