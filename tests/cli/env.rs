//! `netbisect env`: the environment as text, and as JSON with `--json`.

fn env_json(args: &[&str]) -> serde_json::Value {
    let output = crate::netbisect()
        .args(["env", "--json"])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn prints_the_kernel_release() {
    let env = env_json(&[]);
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert_eq!(env["kernel_release"], release.trim());
    assert!(env["sysctls"]["net.ipv4.tcp_rmem"].is_string());
    assert!(env.get("interface").is_none());
}

#[test]
fn describes_an_interface_when_asked() {
    let env = env_json(&["--interface", "lo"]);
    assert_eq!(env["interface"]["name"], "lo");
    assert!(env["interface"]["mtu"].as_u64().is_some_and(|mtu| mtu > 0));
    assert_eq!(env["interface"]["features"]["loopback"], true);
}

#[test]
fn prints_a_readable_summary_without_json() {
    let output = crate::netbisect()
        .args(["env", "-i", "lo"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8(output.stdout).unwrap();
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    assert!(
        text.starts_with(&format!("Kernel:      {}\n", release.trim())),
        "{text}"
    );
    assert!(text.contains("Interface:   lo, mtu "), "{text}");
    assert!(
        text.lines().all(|line| line.len() <= 80 && line.is_ascii()),
        "{text}"
    );
}

#[test]
fn an_interface_that_does_not_exist_is_an_error() {
    let output = crate::netbisect()
        .args(["env", "-i", "nosuch0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no network interface 'nosuch0'"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty(), "{output:?}");
}
