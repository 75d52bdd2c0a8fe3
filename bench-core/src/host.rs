//! Reading the state of this host into the record's [`HostEnv`], without
//! root, from /proc and /sys; and which interface a test's traffic uses.
//!
//! What cannot be read is recorded as absent (`None`, or missing from a
//! map), never guessed: every failure below leaves a field absent.
//!
//! The interface is described from three sources: sysfs (link speed, and
//! the driver when the device has one), rtnetlink (MTU, queue length,
//! qdisc, GSO/GRO limits; `host/netlink.rs`) and the ethtool ioctl (driver
//! and offload features; `host/ethtool.rs`). None needs root; which
//! interface owns an address comes from rtnetlink too (`host/address.rs`).
//! [`running_release`] reads the running kernel's release for the
//! record's subject. [`settings`] changes the interface and sysctls
//! through the same two interfaces, which needs root, and puts them back.

mod address;
mod ethtool;
mod netlink;
pub mod settings;

pub use address::{egress_interface, interface_for_address, interface_ipv4};

use run_record::env::{HostEnv, InterfaceEnv};
use rustix::net::{AddressFamily, SocketFlags, SocketType};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

/// Sysctls that move network numbers, read from /proc/sys.
pub const NETWORK_SYSCTLS: &[&str] = &[
    "net.core.rmem_max",
    "net.core.wmem_max",
    "net.core.rmem_default",
    "net.core.wmem_default",
    "net.core.netdev_max_backlog",
    "net.core.busy_read",
    "net.core.busy_poll",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_wmem",
    "net.ipv4.tcp_mem",
    "net.ipv4.tcp_congestion_control",
    "net.ipv4.tcp_autocorking",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_limit_output_bytes",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_timestamps",
    "net.ipv4.tcp_sack",
    "net.ipv4.tcp_ecn",
];
/// Reads the local host's environment. `interface` names the egress
/// interface to describe, if known.
pub fn capture_local(interface: Option<&str>) -> HostEnv {
    let mut env = capture_from(Path::new("/"), interface);
    if let Some(described) = env.interface.as_mut() {
        add_live_interface_state(described);
    }
    env
}

/// What the running kernel says of the interface beyond sysfs: rtnetlink
/// attributes (preferred over sysfs, which has no qdisc or size limits)
/// and the ethtool driver and features.
fn add_live_interface_state(interface: &mut InterfaceEnv) {
    if !is_interface_name(&interface.name) {
        return;
    }
    if let Some(link) = interface_index(&interface.name).and_then(netlink::link_attributes) {
        interface.mtu = link.mtu.or(interface.mtu);
        interface.tx_queue_len = link.tx_queue_len.or(interface.tx_queue_len);
        interface.qdisc = link.qdisc;
        interface.gso_max_size = link.gso_max_size;
        interface.gro_max_size = link.gro_max_size;
    }
    if let Some(driver) = ethtool::driver(&interface.name) {
        interface.driver = Some(driver);
    }
    if let Some(features) = ethtool::features(&interface.name) {
        interface.features = features;
    }
}

/// Whether this host (its network namespace) has an interface `name`.
pub fn interface_exists(name: &str) -> bool {
    is_interface_name(name) && interface_index(name).is_some()
}

/// The kernel's index of interface `name`, asked as if_nametoindex(3)
/// does: `SIOCGIFINDEX` on a datagram socket.
fn interface_index(name: &str) -> Option<u32> {
    let socket = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::DGRAM,
        SocketFlags::CLOEXEC,
        None,
    )
    .ok()?;
    let index = rustix::net::netdevice::name_to_index(&socket, name).ok()?;
    (index != 0).then_some(index)
}

/// True when `name` can name an interface: 1 to 15 bytes, no NUL, no
/// slash, no whitespace, not `.` or `..` (the kernel's own rule), so that
/// it is also safe as a path component under /sys/class/net.
fn is_interface_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() < libc::IFNAMSIZ
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c == ':' || c == '\0' || c.is_whitespace())
}

/// Reads a host environment from a root directory laid out like `/`
/// (tests point this at a fabricated tree). Only files are read: the
/// interface's netlink and ethtool state comes from [`capture_local`].
pub fn capture_from(root: &Path, interface: Option<&str>) -> HostEnv {
    let read = |relative: &str| read_trimmed(&root.join(relative));
    let cpuinfo = read("proc/cpuinfo");
    let mut sysctls = BTreeMap::new();
    for name in NETWORK_SYSCTLS {
        let path = format!("proc/sys/{}", name.replace('.', "/"));
        if let Some(value) = read(&path) {
            sysctls.insert((*name).to_string(), fold_whitespace(&value));
        }
    }
    let mut mitigations = BTreeMap::new();
    if let Ok(entries) = fs::read_dir(root.join("sys/devices/system/cpu/vulnerabilities")) {
        for entry in entries.flatten() {
            if let (Some(name), Some(value)) = (
                entry.file_name().to_str().map(str::to_string),
                read_trimmed(&entry.path()),
            ) {
                mitigations.insert(name, value);
            }
        }
    }
    let boost = read("sys/devices/system/cpu/cpufreq/boost")
        .map(|value| value == "1")
        .or_else(|| read("sys/devices/system/cpu/intel_pstate/no_turbo").map(|v| v == "0"));
    HostEnv {
        kernel_release: read("proc/sys/kernel/osrelease"),
        kernel_version: read("proc/sys/kernel/version"),
        cmdline: read("proc/cmdline"),
        cpu_model: cpuinfo.as_deref().and_then(cpu_model_from_cpuinfo),
        cpu_count: read("sys/devices/system/cpu/present")
            .and_then(|list| count_cpu_list(&list))
            .or_else(|| cpuinfo.as_deref().map(count_processors)),
        cpus_online: read("sys/devices/system/cpu/online"),
        smt: read("sys/devices/system/cpu/smt/control"),
        cpufreq_driver: read("sys/devices/system/cpu/cpu0/cpufreq/scaling_driver"),
        governor: read("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"),
        boost,
        cpuidle_driver: read("sys/devices/system/cpu/cpuidle/current_driver"),
        mitigations,
        clocksource: read("sys/devices/system/clocksource/clocksource0/current_clocksource"),
        transparent_hugepages: read("sys/kernel/mm/transparent_hugepage/enabled")
            .and_then(|value| bracketed_choice(&value)),
        sysctls,
        interface: interface.map(|name| capture_interface_from(root, name)),
    }
}

/// Reads what /sys says of interface `name`.
fn capture_interface_from(root: &Path, name: &str) -> InterfaceEnv {
    if !is_interface_name(name) {
        return InterfaceEnv {
            name: name.to_string(),
            ..InterfaceEnv::default()
        };
    }
    let base = root.join("sys/class/net").join(name);
    let read = |file: &str| read_trimmed(&base.join(file));
    let driver = fs::read_link(base.join("device/driver"))
        .ok()
        .and_then(|target| {
            target
                .file_name()
                .and_then(|n| n.to_str())
                .map(str::to_string)
        });
    InterfaceEnv {
        name: name.to_string(),
        mtu: read("mtu").and_then(|v| v.parse().ok()),
        driver,
        // Virtual devices answer -1 or refuse the read: both are absent.
        speed_mbps: read("speed").and_then(|v| v.parse().ok()),
        qdisc: None,
        tx_queue_len: read("tx_queue_len").and_then(|v| v.parse().ok()),
        features: BTreeMap::new(),
        gro_max_size: None,
        gso_max_size: None,
    }
}

fn read_trimmed(path: &Path) -> Option<String> {
    let text = fs::read_to_string(path).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn fold_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn cpu_model_from_cpuinfo(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let key = key.trim();
        (key == "model name" || key == "Model" || key == "cpu model")
            .then(|| fold_whitespace(value))
    })
}

fn count_processors(cpuinfo: &str) -> u32 {
    let count = cpuinfo
        .lines()
        .filter(|line| line.split(':').next().map(str::trim) == Some("processor"))
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// Counts the CPUs in a kernel CPU list such as `0-3,6`.
pub fn count_cpu_list(list: &str) -> Option<u32> {
    let mut total: u32 = 0;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let count = match part.split_once('-') {
            Some((low, high)) => {
                let low: u32 = low.trim().parse().ok()?;
                let high: u32 = high.trim().parse().ok()?;
                high.checked_sub(low)?.checked_add(1)?
            }
            None => {
                part.trim().parse::<u32>().ok()?;
                1
            }
        };
        total = total.checked_add(count)?;
    }
    Some(total)
}

/// The bracketed choice of a sysfs selector such as
/// `always [madvise] never`.
fn bracketed_choice(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = start + text[start..].find(']')?;
    Some(text[start + 1..end].to_string())
}

/// The running kernel's release, from `/proc/sys/kernel/osrelease`.
pub fn running_release() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|text| text.trim().to_string())
        .filter(|text| !text.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_cpu_lists() {
        assert_eq!(count_cpu_list("0-3,6"), Some(5));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
    }

    #[test]
    fn picks_bracketed_choice() {
        assert_eq!(
            bracketed_choice("always [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(bracketed_choice("always"), None);
    }

    /// Writes `files` (path relative to `root`, contents) into `root`.
    fn fabricate(root: &Path, files: &[(&str, &[u8])]) {
        for (relative, contents) in files {
            let path = root.join(relative);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, contents).unwrap();
        }
    }

    const CPUINFO: &[u8] = b"processor\t: 0\nmodel name\t: Test  CPU @ 3.00GHz\n\n\
processor\t: 1\nmodel name\t: Test  CPU @ 3.00GHz\n";

    #[test]
    fn captures_a_fabricated_tree() {
        let root = tempfile::tempdir().unwrap();
        fabricate(
            root.path(),
            &[
                (
                    "proc/sys/kernel/osrelease",
                    b"6.8.0-rc1-00123-gabcdef123456\n",
                ),
                ("proc/sys/kernel/version", b"#1 SMP PREEMPT_DYNAMIC\n"),
                ("proc/cmdline", b"quiet mitigations=off\n"),
                ("proc/cpuinfo", CPUINFO),
                ("proc/sys/net/ipv4/tcp_rmem", b"4096\t131072\t6291456\n"),
                ("proc/sys/net/core/rmem_max", b"212992\n"),
                ("sys/devices/system/cpu/present", b"0-3\n"),
                ("sys/devices/system/cpu/online", b"0-1\n"),
                ("sys/devices/system/cpu/smt/control", b"on\n"),
                (
                    "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
                    b"intel_pstate\n",
                ),
                (
                    "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                    b"performance\n",
                ),
                ("sys/devices/system/cpu/intel_pstate/no_turbo", b"1\n"),
                (
                    "sys/devices/system/cpu/cpuidle/current_driver",
                    b"intel_idle\n",
                ),
                (
                    "sys/devices/system/cpu/vulnerabilities/meltdown",
                    b"Not affected\n",
                ),
                (
                    "sys/devices/system/clocksource/clocksource0/current_clocksource",
                    b"tsc\n",
                ),
                (
                    "sys/kernel/mm/transparent_hugepage/enabled",
                    b"always [madvise] never\n",
                ),
                ("sys/class/net/eth9/mtu", b"9000\n"),
                ("sys/class/net/eth9/speed", b"25000\n"),
                ("sys/class/net/eth9/tx_queue_len", b"1000\n"),
            ],
        );
        // sysfs links a device to its driver's directory.
        fs::create_dir_all(root.path().join("sys/class/net/eth9/device")).unwrap();
        std::os::unix::fs::symlink(
            "../../../../bus/pci/drivers/ice",
            root.path().join("sys/class/net/eth9/device/driver"),
        )
        .unwrap();
        let env = capture_from(root.path(), Some("eth9"));
        let mut sysctls = BTreeMap::new();
        sysctls.insert("net.core.rmem_max".to_string(), "212992".to_string());
        sysctls.insert(
            "net.ipv4.tcp_rmem".to_string(),
            "4096 131072 6291456".to_string(),
        );
        let mut mitigations = BTreeMap::new();
        mitigations.insert("meltdown".to_string(), "Not affected".to_string());
        let expected = HostEnv {
            kernel_release: Some("6.8.0-rc1-00123-gabcdef123456".into()),
            kernel_version: Some("#1 SMP PREEMPT_DYNAMIC".into()),
            cmdline: Some("quiet mitigations=off".into()),
            cpu_model: Some("Test CPU @ 3.00GHz".into()),
            cpu_count: Some(4),
            cpus_online: Some("0-1".into()),
            smt: Some("on".into()),
            cpufreq_driver: Some("intel_pstate".into()),
            governor: Some("performance".into()),
            boost: Some(false),
            cpuidle_driver: Some("intel_idle".into()),
            mitigations,
            clocksource: Some("tsc".into()),
            transparent_hugepages: Some("madvise".into()),
            sysctls,
            interface: Some(InterfaceEnv {
                name: "eth9".into(),
                mtu: Some(9000),
                driver: Some("ice".into()),
                speed_mbps: Some(25000),
                tx_queue_len: Some(1000),
                ..InterfaceEnv::default()
            }),
        };
        assert_eq!(env, expected);
    }

    #[test]
    fn unreadable_or_odd_entries_are_absent() {
        let root = tempfile::tempdir().unwrap();
        fabricate(
            root.path(),
            &[
                // Not UTF-8.
                ("proc/sys/kernel/osrelease", b"6.8.0-\xff\xfe\n"),
                // Empty, or only whitespace.
                ("proc/cmdline", b""),
                ("proc/sys/kernel/version", b" \n"),
                // A CPU list that is not one, with a cpuinfo to fall back on.
                ("sys/devices/system/cpu/present", b"0-x\n"),
                ("proc/cpuinfo", CPUINFO),
                // No bracketed choice.
                ("sys/kernel/mm/transparent_hugepage/enabled", b"always\n"),
                // Values that do not parse, as virtual devices report them.
                ("sys/class/net/veth0/mtu", b"lots\n"),
                ("sys/class/net/veth0/speed", b"-1\n"),
                ("sys/class/net/veth0/tx_queue_len", b"\xff\n"),
                // A vulnerability file that cannot be read as text.
                ("sys/devices/system/cpu/vulnerabilities/odd", b"\xff\n"),
            ],
        );
        // A directory where a file is expected cannot be read.
        for dir in [
            "proc/sys/net/ipv4/tcp_rmem",
            "sys/devices/system/cpu/online",
            "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
        ] {
            fs::create_dir_all(root.path().join(dir)).unwrap();
        }
        // A link to nowhere.
        std::os::unix::fs::symlink(
            root.path().join("nowhere"),
            root.path().join("sys/devices/system/cpu/smt"),
        )
        .unwrap();
        let env = capture_from(root.path(), Some("veth0"));
        assert_eq!(
            env,
            HostEnv {
                cpu_model: Some("Test CPU @ 3.00GHz".into()),
                cpu_count: Some(2),
                interface: Some(InterfaceEnv {
                    name: "veth0".into(),
                    ..InterfaceEnv::default()
                }),
                ..HostEnv::default()
            }
        );
        // An empty root, and an interface that does not exist.
        let empty = tempfile::tempdir().unwrap();
        let env = capture_from(empty.path(), Some("eth0"));
        assert_eq!(
            env,
            HostEnv {
                interface: Some(InterfaceEnv {
                    name: "eth0".into(),
                    ..InterfaceEnv::default()
                }),
                ..HostEnv::default()
            }
        );
        assert_eq!(capture_from(empty.path(), None), HostEnv::default());
    }

    #[test]
    fn interface_names_that_could_escape_sysfs_are_not_read() {
        let root = tempfile::tempdir().unwrap();
        fabricate(root.path(), &[("sys/class/mtu", b"1500\n")]);
        for name in ["..", "../net/..", "a/b", "", "x y", "sixteen-chars-xx"] {
            assert!(!is_interface_name(name), "{name:?}");
        }
        let env = capture_from(root.path(), Some(".."));
        assert_eq!(env.interface.and_then(|i| i.mtu), None);
        assert!(is_interface_name("eth0.100"));
        assert!(is_interface_name("lo"));
    }

    #[test]
    fn live_capture_describes_loopback() {
        let env = capture_local(Some("lo"));
        let lo = env.interface.unwrap();
        assert_eq!(lo.name, "lo");
        assert!(lo.mtu.is_some());
        assert!(lo.qdisc.is_some());
        assert_eq!(lo.features.get("loopback"), Some(&true));
        let missing = capture_local(Some("no-such-if0")).interface.unwrap();
        assert_eq!(
            missing,
            InterfaceEnv {
                name: "no-such-if0".into(),
                ..InterfaceEnv::default()
            }
        );
    }

    #[test]
    fn running_kernel_agrees_with_uname() {
        let release = running_release().expect("running kernel release");
        let output = std::process::Command::new("uname")
            .arg("-r")
            .output()
            .unwrap();
        let printed = String::from_utf8(output.stdout).unwrap();
        assert_eq!(release, printed.trim());
        let parsed = run_record::kernel::parse_release(&release);
        assert_eq!(parsed.release, release);
        assert!(release.starts_with(&parsed.base));
    }
}
