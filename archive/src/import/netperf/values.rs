//! The values of netperf's output that every form reads alike: numbers,
//! sizes (-1 for "default") and throughput units.

use crate::import::ImportError;

/// Bits per second per unit of a netperf throughput header, or `None` for
/// a transaction rate.
pub(super) fn throughput_unit(unit: &str, line_no: usize) -> Result<Option<f64>, ImportError> {
    let bare = unit.trim().trim_end_matches("/sec").trim_end_matches("/s");
    if bare.eq_ignore_ascii_case("trans") || bare.eq_ignore_ascii_case("tran") {
        return Ok(None);
    }
    if let Some(exponent) = bare
        .strip_prefix("10^")
        .and_then(|rest| rest.strip_suffix("bits"))
    {
        let exponent: i32 = exponent.parse().map_err(|_| {
            ImportError::parse(line_no, format!("unknown throughput unit \"{unit}\""))
        })?;
        return Ok(Some(10f64.powi(exponent)));
    }
    let factor = match bare {
        "Bytes" => 8.0,
        "KBytes" => 8.0 * 1024.0,
        "MBytes" => 8.0 * 1024.0 * 1024.0,
        "GBytes" => 8.0 * 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(ImportError::parse(
                line_no,
                format!("unknown throughput unit \"{unit}\""),
            ));
        }
    };
    Ok(Some(factor))
}

pub(super) fn number(text: &str, what: &str, line_no: usize) -> Result<f64, ImportError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|value| value.is_finite())
        .ok_or_else(|| ImportError::parse(line_no, format!("{what}: \"{text}\" is not a number")))
}

/// A socket-buffer or message size; netperf writes -1 for "default".
pub(super) fn size(value: f64) -> Option<u32> {
    (value >= 0.0 && value <= f64::from(u32::MAX)).then(|| value.round() as u32)
}
