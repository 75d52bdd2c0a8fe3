//! Settings of the system a test runs on, asked per configuration: the
//! offload features of the test's interface (as `ethtool -K` names them),
//! its MTU and tx queue length, and sysctls. They are part of the spec
//! (`spec.system`), so runs with GSO on and off are different
//! configurations; a spec without them leaves the member out and keeps
//! the config_key it had before settings existed. What the kernel granted
//! is the record's own member (`RunRecord::system`), beside what was asked.
//!
//! A setting is written `KEY=VALUE`: `mtu=9000`, `txqueuelen=1000`, an
//! offload (`gso=off`; the short names of [`OFFLOAD_NAMES`] or a kernel
//! feature name with a dash, such as `tx-udp-segmentation=on`), or a sysctl
//! by its dotted name (`net.core.rmem_max=4194304`).

use super::SpecError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The short offload names of `ethtool -K`, which netbisect takes as they
/// are; any other feature is named as the kernel names it.
pub const OFFLOAD_NAMES: &[&str] = &["sg", "tx", "rx", "tso", "ufo", "gso", "gro", "lro"];
/// Most settings one spec may ask.
pub const MAX_SETTINGS: usize = 64;
/// Smallest MTU asked (IPv4's minimum).
pub const MIN_MTU: u32 = 68;
/// Largest MTU asked.
pub const MAX_MTU: u32 = 65_535;
/// Largest tx queue length asked, packets.
pub const MAX_TX_QUEUE_LEN: u32 = 1 << 20;
/// Longest sysctl value, bytes.
pub const MAX_SYSCTL_VALUE: usize = 256;

/// The settings a configuration asks of the system under test.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemSettings {
    /// Offload features, by the name asked, on (`true`) or off.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: BTreeMap<String, bool>,
    /// MTU of the test's interface, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Transmit queue length of the test's interface, packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_queue_len: Option<u32>,
    /// Sysctls by dotted name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, String>,
}

/// One setting, as read from `KEY=VALUE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Setting {
    /// An offload feature on or off.
    Feature {
        /// Its name, short or the kernel's.
        name: String,
        /// On.
        on: bool,
    },
    /// The interface's MTU.
    Mtu(u32),
    /// The interface's tx queue length.
    TxQueueLen(u32),
    /// A sysctl.
    Sysctl {
        /// Its dotted name.
        name: String,
        /// Its value.
        value: String,
    },
}

impl Setting {
    /// Reads `KEY=VALUE`; the error names what is wrong with it.
    pub fn parse(text: &str) -> Result<Setting, SpecError> {
        let bad = |why: &str| SpecError::BadSetting {
            setting: text.to_string(),
            why: why.to_string(),
        };
        let (key, value) = text
            .split_once('=')
            .ok_or_else(|| bad("expected KEY=VALUE"))?;
        let (key, value) = (key.trim(), value.trim());
        Setting::of_key(key, value).map_err(|why| bad(&why))
    }

    /// The setting `key` takes `value` as; `Err` says why it does not.
    pub fn of_key(key: &str, value: &str) -> Result<Setting, String> {
        match key {
            "mtu" => parse_number(value, MIN_MTU, MAX_MTU).map(Setting::Mtu),
            "txqueuelen" => parse_number(value, 0, MAX_TX_QUEUE_LEN).map(Setting::TxQueueLen),
            _ if is_sysctl_name(key) => {
                if value.len() > MAX_SYSCTL_VALUE || value.contains(['\n', '\r', '\0']) {
                    return Err(format!(
                        "a sysctl's value is one line of at most {MAX_SYSCTL_VALUE} bytes"
                    ));
                }
                Ok(Setting::Sysctl {
                    name: key.to_string(),
                    value: value.to_string(),
                })
            }
            _ if is_feature_name(key) => {
                let on = match value {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("{key} is an offload: give on or off")),
                };
                Ok(Setting::Feature {
                    name: key.to_string(),
                    on,
                })
            }
            _ => Err(format!(
                "unknown setting {key}: give mtu, txqueuelen, an offload ({} or a \
                 kernel feature name such as tx-udp-segmentation) or a dotted sysctl name",
                OFFLOAD_NAMES.join(", ")
            )),
        }
    }

    /// The setting as `KEY=VALUE`.
    pub fn text(&self) -> String {
        match self {
            Setting::Feature { name, on } => format!("{name}={}", if *on { "on" } else { "off" }),
            Setting::Mtu(mtu) => format!("mtu={mtu}"),
            Setting::TxQueueLen(len) => format!("txqueuelen={len}"),
            Setting::Sysctl { name, value } => format!("{name}={value}"),
        }
    }
}

fn parse_number(value: &str, min: u32, max: u32) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(number) if (min..=max).contains(&number) => Ok(number),
        _ => Err(format!("give a whole number from {min} to {max}")),
    }
}

/// A dotted sysctl name: parts of letters, digits, `_` and `-`.
pub fn is_sysctl_name(name: &str) -> bool {
    name.contains('.')
        && name.len() <= 128
        && name.split('.').all(|part| {
            !part.is_empty()
                && part
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'))
        })
}

/// A short offload name, or a kernel feature name (lower case, digits and
/// dashes, with at least one dash).
pub fn is_feature_name(name: &str) -> bool {
    OFFLOAD_NAMES.contains(&name)
        || (name.contains('-')
            && name.len() <= 64
            && !name.starts_with('-')
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
}

impl SystemSettings {
    /// True when nothing is asked.
    pub fn is_empty(&self) -> bool {
        self.features.is_empty()
            && self.mtu.is_none()
            && self.tx_queue_len.is_none()
            && self.sysctls.is_empty()
    }

    /// Adds `setting`, replacing one of the same key.
    pub fn set(&mut self, setting: Setting) {
        match setting {
            Setting::Feature { name, on } => {
                self.features.insert(name, on);
            }
            Setting::Mtu(mtu) => self.mtu = Some(mtu),
            Setting::TxQueueLen(len) => self.tx_queue_len = Some(len),
            Setting::Sysctl { name, value } => {
                self.sysctls.insert(name, value);
            }
        }
    }

    /// Every setting, features first, as [`Setting`]s.
    pub fn settings(&self) -> Vec<Setting> {
        let mut all: Vec<Setting> = self
            .features
            .iter()
            .map(|(name, on)| Setting::Feature {
                name: name.clone(),
                on: *on,
            })
            .collect();
        all.extend(self.mtu.map(Setting::Mtu));
        all.extend(self.tx_queue_len.map(Setting::TxQueueLen));
        all.extend(self.sysctls.iter().map(|(name, value)| Setting::Sysctl {
            name: name.clone(),
            value: value.clone(),
        }));
        all
    }

    /// Checks every setting as [`Setting::of_key`] would read it, and
    /// their number.
    pub fn validate(&self) -> Result<(), SpecError> {
        let settings = self.settings();
        if settings.len() > MAX_SETTINGS {
            return Err(SpecError::BadSetting {
                setting: format!("{} settings", settings.len()),
                why: format!("at most {MAX_SETTINGS} settings per configuration"),
            });
        }
        for setting in settings {
            Setting::parse(&setting.text())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_read_as_ethtool_ip_and_sysctl_name_them() {
        assert_eq!(
            Setting::parse("gso=off").unwrap(),
            Setting::Feature {
                name: "gso".to_string(),
                on: false
            }
        );
        assert_eq!(
            Setting::parse("tx-udp-segmentation=on").unwrap(),
            Setting::Feature {
                name: "tx-udp-segmentation".to_string(),
                on: true
            }
        );
        assert_eq!(Setting::parse("mtu=9000").unwrap(), Setting::Mtu(9000));
        assert_eq!(
            Setting::parse("txqueuelen=0").unwrap(),
            Setting::TxQueueLen(0)
        );
        assert_eq!(
            Setting::parse("net.ipv4.tcp_rmem=4096 87380 6291456").unwrap(),
            Setting::Sysctl {
                name: "net.ipv4.tcp_rmem".to_string(),
                value: "4096 87380 6291456".to_string()
            }
        );
        for bad in [
            "gso",
            "gso=maybe",
            "mtu=20",
            "mtu=70000",
            "txqueuelen=-1",
            "colour=red",
            "net..x=1",
            "-x=on",
            "net.core.x=a\nb",
        ] {
            assert!(Setting::parse(bad).is_err(), "{bad}");
        }
        let err = Setting::parse("colour=red").unwrap_err().to_string();
        assert!(err.contains("unknown setting colour"), "{err}");
    }

    #[test]
    fn settings_round_trip_through_their_text() {
        let mut settings = SystemSettings::default();
        for text in ["sg=off", "gso=on", "mtu=1500", "net.core.rmem_max=1"] {
            settings.set(Setting::parse(text).unwrap());
        }
        let texts: Vec<String> = settings.settings().iter().map(Setting::text).collect();
        assert_eq!(
            texts,
            ["gso=on", "sg=off", "mtu=1500", "net.core.rmem_max=1"]
        );
        assert!(settings.validate().is_ok());
        assert!(SystemSettings::default().is_empty());
    }
}
