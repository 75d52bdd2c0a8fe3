//! The description of a virtual machine a test ran in: the `vm` member of
//! a record's `env`, written by the host that booted the guest.
//!
//! The guest's own environment (kernel release, command line, sysctls,
//! offloads) is the record's `env.local`, captured inside the guest like
//! on any host; this part says how the guest itself was made. What shapes
//! the figures (accelerator, vCPUs, memory, the network path, the kernel
//! command line and sysctls the user added) enters the config_key through
//! [`VmEnv::comparable_knobs`]; the runner's version and the boot time do
//! not.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// How the guest was made, and what carried its traffic.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VmEnv {
    /// The program that booted the guest (`qemu`; `virtme-ng` in older
    /// records).
    pub runner: String,
    /// Its version, when it said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_version: Option<String>,
    /// `kvm` or `tcg` (qemu's emulation, when KVM did not work).
    pub accelerator: String,
    /// Virtual CPUs of the guest.
    pub vcpus: u32,
    /// Memory of the guest, MiB.
    pub memory_mib: u64,
    /// Where the traffic flowed: `loopback` (inside the guest), `pair`
    /// (two virtio-net NICs looped to each other, one end per network
    /// namespace) or `host` (guest to a server on the host).
    pub network: String,
    /// What carried the traffic between the NICs, for `pair` and `host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_backend: Option<String>,
    /// Kernel command line arguments added for the test.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub append: Vec<String>,
    /// Sysctls set in the guest before the test, by dotted name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sysctls: BTreeMap<String, String>,
    /// The NICs' backend ran in the host kernel (vhost-net; since 1.2).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vhost: bool,
    /// The NICs' transmit queue size, descriptors, when one was asked
    /// (since 1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tx_queue_size: Option<u32>,
    /// The host's CPUs the VM was pinned to, as a CPU list (`2-3`), when
    /// it was: each slot of `bisect run --jobs` gets its own (since 1.3;
    /// not in the config_key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cpus: Option<String>,
    /// Seconds from the start of the runner to the first byte of the test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub boot_to_test_s: Option<f64>,
}

impl VmEnv {
    /// The part that decides whether two runs are comparable: everything
    /// but the runner's version, the host's CPUs it was pinned to and the
    /// boot time.
    pub fn comparable_knobs(&self) -> BTreeMap<String, String> {
        let mut knobs = BTreeMap::new();
        knobs.insert("vm.runner".to_string(), self.runner.clone());
        knobs.insert("vm.accelerator".to_string(), self.accelerator.clone());
        knobs.insert("vm.vcpus".to_string(), self.vcpus.to_string());
        knobs.insert("vm.memory_mib".to_string(), self.memory_mib.to_string());
        knobs.insert("vm.network".to_string(), self.network.clone());
        if let Some(backend) = &self.network_backend {
            knobs.insert("vm.network_backend".to_string(), backend.clone());
        }
        if !self.append.is_empty() {
            knobs.insert("vm.append".to_string(), self.append.join(" "));
        }
        for (name, value) in &self.sysctls {
            knobs.insert(format!("vm.sysctl.{name}"), value.clone());
        }
        if self.vhost {
            knobs.insert("vm.vhost".to_string(), "on".to_string());
        }
        if let Some(size) = self.tx_queue_size {
            knobs.insert("vm.tx_queue_size".to_string(), size.to_string());
        }
        knobs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boot_time_and_runner_version_stay_out_of_the_knobs() {
        let mut vm = VmEnv {
            runner: "virtme-ng".to_string(),
            runner_version: Some("1.42".to_string()),
            accelerator: "tcg".to_string(),
            vcpus: 2,
            memory_mib: 1024,
            network: "loopback".to_string(),
            boot_to_test_s: Some(9.5),
            ..VmEnv::default()
        };
        let knobs = vm.comparable_knobs();
        vm.runner_version = Some("1.43".to_string());
        vm.boot_to_test_s = Some(12.0);
        // Which CPUs of the host a slot's VM got does not split runs.
        vm.host_cpus = Some("1".to_string());
        assert_eq!(vm.comparable_knobs(), knobs);
        vm.sysctls.insert(
            "net.ipv4.tcp_rmem".to_string(),
            "4096 4096 4096".to_string(),
        );
        assert_ne!(vm.comparable_knobs(), knobs);
        vm.sysctls.clear();
        // vhost-net and a queue size shape the figures: they key.
        vm.vhost = true;
        assert_ne!(vm.comparable_knobs(), knobs);
        vm.vhost = false;
        vm.tx_queue_size = Some(256);
        assert_ne!(vm.comparable_knobs(), knobs);
        vm.tx_queue_size = None;
        assert_eq!(vm.comparable_knobs(), knobs);
        vm.accelerator = "kvm".to_string();
        assert_ne!(vm.comparable_knobs(), knobs);
    }
}
