//! What the system under test granted of the settings a spec asked
//! (`spec.system`): each offload, the MTU, the tx queue length and each
//! sysctl, as asked and as read back after setting, like the socket
//! buffers' requested and granted sizes. The record's `system` member
//! (since 1.2); absent when nothing was asked.

use crate::spec::Setting;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One setting as asked and as read back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Granted<T> {
    /// What the spec asked.
    pub requested: T,
    /// What the kernel reported after the setting was made.
    pub granted: T,
}

impl<T: PartialEq> Granted<T> {
    /// True when the kernel gave what was asked.
    pub fn is_granted(&self) -> bool {
        self.requested == self.granted
    }
}

/// The settings of one end, as asked and as granted.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SystemOutcome {
    /// The interface the interface settings were made on (`lo` for a test
    /// over loopback).
    pub interface: String,
    /// Each offload asked, by the name asked: on (`true`) or off.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: BTreeMap<String, Granted<bool>>,
    /// The MTU, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<Granted<u32>>,
    /// The tx queue length, packets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_queue_len: Option<Granted<u32>>,
    /// Each sysctl asked, by dotted name, with its value read back.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, Granted<String>>,
}

impl SystemOutcome {
    /// What the kernel granted of `setting`, as its value's text, where it
    /// differs from what was asked; `None` where it gave what was asked
    /// or where the outcome does not hold the setting.
    pub fn granted_instead(&self, setting: &Setting) -> Option<String> {
        let on_off = |on: bool| if on { "on" } else { "off" }.to_string();
        match setting {
            Setting::Feature { name, .. } => self
                .features
                .get(name)
                .filter(|feature| !feature.is_granted())
                .map(|feature| on_off(feature.granted)),
            Setting::Mtu(_) => self
                .mtu
                .as_ref()
                .filter(|mtu| !mtu.is_granted())
                .map(|mtu| mtu.granted.to_string()),
            Setting::TxQueueLen(_) => self
                .tx_queue_len
                .as_ref()
                .filter(|len| !len.is_granted())
                .map(|len| len.granted.to_string()),
            Setting::Sysctl { name, .. } => self
                .sysctls
                .get(name)
                .filter(|value| !value.is_granted())
                .map(|value| value.granted.clone()),
        }
    }

    /// The settings the kernel did not grant, as `KEY=asked (got VALUE)`.
    pub fn refused(&self) -> Vec<String> {
        let on_off = |on: bool| if on { "on" } else { "off" };
        let mut refused: Vec<String> = self
            .features
            .iter()
            .filter(|(_, feature)| !feature.is_granted())
            .map(|(name, feature)| {
                format!(
                    "{name}={} (got {})",
                    on_off(feature.requested),
                    on_off(feature.granted)
                )
            })
            .collect();
        for (name, value) in [("mtu", &self.mtu), ("txqueuelen", &self.tx_queue_len)] {
            if let Some(value) = value.as_ref().filter(|value| !value.is_granted()) {
                refused.push(format!(
                    "{name}={} (got {})",
                    value.requested, value.granted
                ));
            }
        }
        for (name, value) in &self.sysctls {
            if !value.is_granted() {
                refused.push(format!(
                    "{name}={} (got {})",
                    value.requested, value.granted
                ));
            }
        }
        refused
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_settings_say_what_was_asked_and_got() {
        let mut outcome = SystemOutcome {
            interface: "eth0".to_string(),
            mtu: Some(Granted {
                requested: 9000,
                granted: 9000,
            }),
            ..SystemOutcome::default()
        };
        outcome.features.insert(
            "gso".to_string(),
            Granted {
                requested: true,
                granted: false,
            },
        );
        assert_eq!(outcome.refused(), ["gso=on (got off)"]);
        let gso = Setting::parse("gso=on").unwrap();
        assert_eq!(outcome.granted_instead(&gso), Some("off".to_string()));
        let mtu = Setting::parse("mtu=9000").unwrap();
        assert_eq!(outcome.granted_instead(&mtu), None);
    }
}
