//! The environment captured on this machine agrees with what the usual
//! tools print: `uname`, /proc/cpuinfo, `sysctl`, `ip` and `ethtool`.

use bench_core::host::{self, NETWORK_SYSCTLS};
use run_record::env::HostEnv;
use std::collections::BTreeMap;
use std::process::Command;

/// Runs `program` with `args`; `None` when it is not installed or fails.
fn output_of(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Like [`output_of`], for tools the test suite needs installed.
fn required_output(program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("cannot run {program} (install it): {err}"));
    assert!(output.status.success(), "{program} {args:?} failed");
    String::from_utf8(output.stdout).unwrap()
}

fn fold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn local() -> HostEnv {
    host::capture_local(Some("lo"))
}

#[test]
fn kernel_agrees_with_uname() {
    let env = local();
    assert_eq!(
        env.kernel_release.as_deref(),
        Some(required_output("uname", &["-r"]).trim())
    );
    assert_eq!(
        env.kernel_version.as_deref(),
        Some(required_output("uname", &["-v"]).trim())
    );
    assert_eq!(
        env.cmdline.as_deref(),
        Some(std::fs::read_to_string("/proc/cmdline").unwrap().trim())
    );
}

#[test]
fn cpu_agrees_with_proc_cpuinfo() {
    let env = local();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap();
    let field = |line: &str, name: &str| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == name).then(|| fold(value))
    };
    let model = cpuinfo.lines().find_map(|line| field(line, "model name"));
    if let Some(model) = model {
        assert_eq!(env.cpu_model, Some(model));
    }
    // /proc/cpuinfo lists the online CPUs.
    let n_processors = cpuinfo
        .lines()
        .filter(|line| field(line, "processor").is_some())
        .count();
    let online = env.cpus_online.as_deref().expect("online CPUs recorded");
    assert_eq!(
        host::count_cpu_list(online),
        Some(u32::try_from(n_processors).unwrap())
    );
    let cpu_count = env.cpu_count.expect("CPU count recorded");
    assert!(cpu_count as usize >= n_processors);
}

#[test]
fn sysctls_agree_with_the_sysctl_command() {
    let env = local();
    for name in NETWORK_SYSCTLS {
        let printed = output_of("sysctl", &["-n", name]).map(|text| fold(&text));
        if printed.is_none() {
            // Tell a missing tool from a missing sysctl.
            required_output("sysctl", &["-n", "kernel.ostype"]);
        }
        assert_eq!(env.sysctls.get(*name), printed.as_ref(), "{name}");
    }
    assert!(!env.sysctls.is_empty());
}

/// The value after `key` in the words of `ip link` output.
fn ip_link_value(text: &str, key: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .find(|pair| pair[0] == key)
        .map(|pair| pair[1].to_string())
}

#[test]
fn loopback_agrees_with_ip_link() {
    let lo = local().interface.expect("interface described");
    let plain = required_output("ip", &["link", "show", "lo"]);
    let detailed = required_output("ip", &["-d", "link", "show", "lo"]);
    let number = |text: &str, key: &str| ip_link_value(text, key).map(|v| v.parse().unwrap());
    assert_eq!(lo.mtu, number(&plain, "mtu"));
    assert_eq!(lo.qdisc, ip_link_value(&plain, "qdisc"));
    assert_eq!(lo.tx_queue_len, number(&plain, "qlen"));
    assert_eq!(lo.gso_max_size, number(&detailed, "gso_max_size"));
    assert_eq!(lo.gro_max_size, number(&detailed, "gro_max_size"));
    let sysfs = |file: &str| {
        std::fs::read_to_string(format!("/sys/class/net/lo/{file}"))
            .ok()
            .and_then(|text| text.trim().parse::<u32>().ok())
    };
    assert_eq!(lo.mtu, sysfs("mtu"));
    assert_eq!(lo.tx_queue_len, sysfs("tx_queue_len"));
    // The loopback device reports no speed.
    assert_eq!(lo.speed_mbps, sysfs("speed"));
}

/// ethtool prints some features under an older name of its own; these
/// are the ones that stand for a single kernel feature.
const ETHTOOL_LEGACY_NAMES: &[(&str, &str)] = &[
    ("rx-checksumming", "rx-checksum"),
    ("generic-segmentation-offload", "tx-generic-segmentation"),
    ("generic-receive-offload", "rx-gro"),
    ("large-receive-offload", "rx-lro"),
    ("rx-vlan-offload", "rx-vlan-hw-parse"),
    ("tx-vlan-offload", "tx-vlan-hw-insert"),
    ("ntuple-filters", "rx-ntuple-filter"),
    ("receive-hashing", "rx-hashing"),
];

/// The kernel features in `ethtool -k` output: indented lines are single
/// features, an unindented line followed by indented ones is a group, and
/// any other unindented line is a feature under its kernel or legacy name.
fn parse_ethtool_features(text: &str) -> BTreeMap<String, bool> {
    let lines: Vec<&str> = text.lines().skip(1).collect();
    let mut features = BTreeMap::new();
    for (line_idx, line) in lines.iter().enumerate() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let indented = line.starts_with(char::is_whitespace);
        let is_group = !indented
            && lines
                .get(line_idx + 1)
                .is_some_and(|next| next.starts_with(char::is_whitespace));
        if is_group {
            continue;
        }
        let name = name.trim();
        let name = ETHTOOL_LEGACY_NAMES
            .iter()
            .find(|(legacy, _)| *legacy == name)
            .map_or(name, |(_, kernel)| kernel);
        let on = value.split_whitespace().next() == Some("on");
        features.insert(name.to_string(), on);
    }
    features
}

#[test]
fn loopback_features_agree_with_ethtool() {
    let lo = local().interface.expect("interface described");
    let Some(printed) = output_of("ethtool", &["-k", "lo"]) else {
        assert!(
            output_of("ethtool", &["--version"]).is_none(),
            "ethtool is installed but `ethtool -k lo` failed"
        );
        test_fixtures::skip::skip("ethtool is not installed (its parsing is checked without it)");
        return;
    };
    let printed = parse_ethtool_features(&printed);
    assert!(printed.len() > 10, "{printed:?}");
    assert_eq!(lo.features, printed);
}

#[test]
fn parses_ethtool_output_shapes() {
    let text = "Features for lo:\n\
                rx-checksumming: on [fixed]\n\
                tx-checksumming: on\n\
                \ttx-checksum-ipv4: off [fixed]\n\
                \ttx-checksum-sctp: on [fixed]\n\
                generic-receive-offload: on\n\
                rx-gro-list: off [requested on]\n";
    let features = parse_ethtool_features(text);
    let expected: BTreeMap<String, bool> = [
        ("rx-checksum", true),
        ("tx-checksum-ipv4", false),
        ("tx-checksum-sctp", true),
        ("rx-gro", true),
        ("rx-gro-list", false),
    ]
    .into_iter()
    .map(|(name, on)| (name.to_string(), on))
    .collect();
    assert_eq!(features, expected);
}
