//! The state of a host that moves network numbers, as a record keeps it:
//! [`HostEnv`] for each end, [`VmEnv`] for a guest a test ran in.
//!
//! What could not be read is recorded as absent (`None`, or missing from a
//! map), never guessed. [`HostEnv::comparable_knobs`] names the part of the
//! environment that decides whether two runs may be compared; the kernel
//! release and command line are deliberately left out of it, since they
//! change from commit to commit of the very thing being measured.
//!
//! Reading a host's state (/proc, /sys, rtnetlink, ethtool) is not done
//! here but by bench-core's `host` module, which fills these types.

mod vm;

pub use vm::VmEnv;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The state of one end of a test.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostEnv {
    /// Kernel release, as `uname -r` prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_release: Option<String>,
    /// Kernel version string, as `uname -v` prints it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_version: Option<String>,
    /// The kernel command line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmdline: Option<String>,
    /// CPU model name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_model: Option<String>,
    /// Number of CPUs present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_count: Option<u32>,
    /// Online CPUs, in the kernel's list syntax (`0-3,6`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus_online: Option<String>,
    /// SMT control state (`on`, `off`, `forceoff`, `notsupported`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smt: Option<String>,
    /// cpufreq scaling driver of CPU 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpufreq_driver: Option<String>,
    /// cpufreq governor of CPU 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub governor: Option<String>,
    /// Turbo or boost enabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boost: Option<bool>,
    /// cpuidle driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuidle_driver: Option<String>,
    /// Speculative-execution mitigations, one entry per vulnerability file.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mitigations: BTreeMap<String, String>,
    /// Current clocksource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clocksource: Option<String>,
    /// Transparent huge pages mode (the bracketed choice).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transparent_hugepages: Option<String>,
    /// Network sysctls by dotted name, values with whitespace folded to
    /// single spaces.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, String>,
    /// The egress interface of the test, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<InterfaceEnv>,
}

/// The state of one network interface.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterfaceEnv {
    /// Interface name, such as `eth0` or `lo`.
    pub name: String,
    /// MTU in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mtu: Option<u32>,
    /// Driver name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Link speed in Mb/s, when the driver reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed_mbps: Option<u32>,
    /// Root qdisc kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qdisc: Option<String>,
    /// Transmit queue length.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_queue_len: Option<u32>,
    /// Offload features by ethtool name, true when active.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub features: BTreeMap<String, bool>,
    /// Largest GRO packet, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gro_max_size: Option<u32>,
    /// Largest GSO packet, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gso_max_size: Option<u32>,
}

/// One way in which two environments differ.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvDifference {
    /// Flattened key, such as `sysctl.net.ipv4.tcp_rmem` or `governor`.
    pub key: String,
    /// Value on the first side, absent when it was not recorded.
    pub first: Option<String>,
    /// Value on the second side.
    pub second: Option<String>,
    /// True when the key is part of the comparable knobs.
    pub matters: bool,
}

/// Keys of [`HostEnv::flatten`] whose values differ per commit of the
/// kernel under test and so do not decide comparability.
const PER_COMMIT_KEYS: &[&str] = &["kernel_release", "kernel_version", "cmdline", "clocksource"];

impl HostEnv {
    /// Every recorded value under a flat key (`sysctl.<name>`,
    /// `mitigation.<name>`, `interface.<field>`, `feature.<name>`).
    pub fn flatten(&self) -> BTreeMap<String, String> {
        let mut flat = BTreeMap::new();
        let mut put = |key: &str, value: Option<String>| {
            if let Some(value) = value {
                flat.insert(key.to_string(), value);
            }
        };
        put("kernel_release", self.kernel_release.clone());
        put("kernel_version", self.kernel_version.clone());
        put("cmdline", self.cmdline.clone());
        put("cpu_model", self.cpu_model.clone());
        put("cpu_count", self.cpu_count.map(|n| n.to_string()));
        put("cpus_online", self.cpus_online.clone());
        put("smt", self.smt.clone());
        put("cpufreq_driver", self.cpufreq_driver.clone());
        put("governor", self.governor.clone());
        put("boost", self.boost.map(|b| b.to_string()));
        put("cpuidle_driver", self.cpuidle_driver.clone());
        put("clocksource", self.clocksource.clone());
        put("transparent_hugepages", self.transparent_hugepages.clone());
        for (name, value) in &self.mitigations {
            flat.insert(format!("mitigation.{name}"), value.clone());
        }
        for (name, value) in &self.sysctls {
            flat.insert(format!("sysctl.{name}"), value.clone());
        }
        if let Some(interface) = &self.interface {
            flat.insert("interface.name".into(), interface.name.clone());
            let mut put = |key: &str, value: Option<String>| {
                if let Some(value) = value {
                    flat.insert(format!("interface.{key}"), value);
                }
            };
            put("mtu", interface.mtu.map(|v| v.to_string()));
            put("driver", interface.driver.clone());
            put("speed_mbps", interface.speed_mbps.map(|v| v.to_string()));
            put("qdisc", interface.qdisc.clone());
            put(
                "tx_queue_len",
                interface.tx_queue_len.map(|v| v.to_string()),
            );
            put(
                "gro_max_size",
                interface.gro_max_size.map(|v| v.to_string()),
            );
            put(
                "gso_max_size",
                interface.gso_max_size.map(|v| v.to_string()),
            );
            for (name, on) in &interface.features {
                flat.insert(format!("feature.{name}"), on.to_string());
            }
        }
        flat
    }

    /// The part of the environment that decides whether two runs are
    /// comparable: CPU, frequency and idle policy, SMT, THP, sysctls and
    /// the interface, but not the kernel release, version, command line,
    /// mitigations or clocksource, which follow the commit under test.
    pub fn comparable_knobs(&self) -> BTreeMap<String, String> {
        self.flatten()
            .into_iter()
            .filter(|(key, _)| is_comparable_key(key))
            .collect()
    }
}

fn is_comparable_key(key: &str) -> bool {
    !PER_COMMIT_KEYS.contains(&key) && !key.starts_with("mitigation.")
}

/// Lists every key whose value differs between `first` and `second`,
/// in key order.
pub fn diff(first: &HostEnv, second: &HostEnv) -> Vec<EnvDifference> {
    let first = first.flatten();
    let second = second.flatten();
    let mut keys: Vec<&String> = first.keys().chain(second.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|key| first.get(*key) != second.get(*key))
        .map(|key| EnvDifference {
            key: key.clone(),
            first: first.get(key).cloned(),
            second: second.get(key).cloned(),
            matters: is_comparable_key(key),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_lists_only_what_differs_and_marks_what_matters() {
        let mut first = HostEnv {
            kernel_release: Some("6.8.0".into()),
            governor: Some("performance".into()),
            ..HostEnv::default()
        };
        first
            .sysctls
            .insert("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into());
        let mut second = first.clone();
        second.kernel_release = Some("6.9.0".into());
        second.governor = Some("powersave".into());
        let differences = diff(&first, &second);
        let keys: Vec<(&str, bool)> = differences
            .iter()
            .map(|d| (d.key.as_str(), d.matters))
            .collect();
        assert_eq!(keys, vec![("governor", true), ("kernel_release", false)]);
    }
}
