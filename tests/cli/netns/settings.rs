//! `bench --set` end to end, as root in namespaces of its own: a run on a
//! namespace's loopback with GSO off and an MTU of 9000, recorded as
//! asked and granted and seen in the captured environment, then put
//! back; a setting the kernel leaves other than asked, warned of, over a
//! veth pair to a `netbisect serve` in a second namespace; and a run
//! ended by SIGTERM, which puts the settings back before it exits 130.

use super::Namespace;
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_netbisect");

fn namespace(tag: &str) -> Option<Namespace> {
    match Namespace::new(tag) {
        Ok(namespace) => Some(namespace),
        Err(reason) => {
            test_fixtures::skip::skip(format!("no network namespace: {reason}"));
            None
        }
    }
}

impl Namespace {
    /// `ethtool -k DEVICE` in the namespace: each line's feature, on or
    /// off.
    fn offloads(&self, device: &str) -> Vec<(String, bool)> {
        let output = self.run(&["ethtool", "-k", device]);
        String::from_utf8(output.stdout)
            .unwrap()
            .lines()
            .filter_map(|line| {
                let (name, state) = line.trim().split_once(": ")?;
                Some((name.to_string(), state.starts_with("on")))
            })
            .collect()
    }

    fn offload(&self, device: &str, feature: &str) -> bool {
        self.offloads(device)
            .into_iter()
            .find(|(name, _)| name == feature)
            .unwrap_or_else(|| panic!("no {feature} on {device}"))
            .1
    }

    fn mtu(&self, device: &str) -> u64 {
        let output = self.run(&["ip", "-j", "link", "show", "dev", device]);
        let links: Value = serde_json::from_slice(&output.stdout).unwrap();
        links[0]["mtu"].as_u64().unwrap()
    }
}

#[test]
fn bench_set_makes_the_settings_for_the_run_and_puts_them_back() {
    let Some(namespace) = namespace("set") else {
        return;
    };
    let before = (namespace.offloads("lo"), namespace.mtu("lo"));
    assert!(namespace.offload("lo", "generic-segmentation-offload"));
    assert_ne!(before.1, 9000);
    let dir = tempfile::tempdir().unwrap();
    let record = namespace.bench_record(
        &dir.path().join("a.db"),
        &["-l", "0.2", "--set", "gso=off", "--set", "mtu=9000"],
    );
    let asked = &record["spec"]["system"];
    assert_eq!(asked["features"]["gso"], false);
    assert_eq!(asked["mtu"], 9000);
    let system = &record["system"];
    assert_eq!(system["interface"], "lo");
    assert_eq!(
        system["features"]["gso"],
        serde_json::json!({"requested": false, "granted": false})
    );
    assert_eq!(
        system["mtu"],
        serde_json::json!({"requested": 9000, "granted": 9000})
    );
    // The environment was captured while the settings held.
    let interface = &record["env"]["local"]["interface"];
    assert_eq!(interface["name"], "lo");
    assert_eq!(interface["features"]["tx-generic-segmentation"], false);
    assert_eq!(interface["mtu"], 9000);
    assert_eq!((namespace.offloads("lo"), namespace.mtu("lo")), before);
}

#[test]
fn a_setting_the_driver_refuses_is_said_as_such_not_as_a_failed_test() {
    let Some(namespace) = namespace("refused") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let output = namespace
        .netbisect(&dir.path().join("a.db"))
        .args(["bench", "-l", "0.2", "--set", "sg=off"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("a setting asked could not be made, so the test did not run"),
        "{stderr}"
    );
    assert!(stderr.contains("keeps sg fixed on"), "{stderr}");
    assert!(!stderr.contains("the test failed"), "{stderr}");
}

/// `netbisect serve` on `address` in `namespace`, without a token; killed
/// when dropped. Its port, read from its first line.
struct Serve {
    child: Child,
    port: String,
}

impl Serve {
    fn start(namespace: &Namespace, address: &str) -> Serve {
        let mut child = Command::new("ip")
            .args(["netns", "exec", &namespace.name, BINARY, "serve"])
            .args(["--listen", address, "--no-auth", "-p", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let port = first
            .rsplit(':')
            .next()
            .filter(|_| first.starts_with("netbisect serve: listening on "))
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .to_string();
        Serve { child, port }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_setting_the_kernel_leaves_off_is_warned_of_and_recorded() {
    let (Some(client), Some(server)) = (namespace("warn-c"), namespace("warn-s")) else {
        return;
    };
    client.run(&[
        "ip",
        "link",
        "add",
        "va",
        "type",
        "veth",
        "peer",
        "name",
        "vb",
        "netns",
        &server.name,
    ]);
    client.run(&["ip", "addr", "add", "10.199.8.1/24", "dev", "va"]);
    server.run(&["ip", "addr", "add", "10.199.8.2/24", "dev", "vb"]);
    client.run(&["ip", "link", "set", "va", "up"]);
    server.run(&["ip", "link", "set", "vb", "up"]);
    let before = client.offloads("va");
    let serve = Serve::start(&server, "10.199.8.2");
    let dir = tempfile::tempdir().unwrap();
    let output = client
        .netbisect(&dir.path().join("a.db"))
        .args(["bench", "-H", "10.199.8.2", "-p", &serve.port, "-l", "0.2"])
        .args(["--set", "sg=off", "--set", "tso=on", "--json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    // TCP segmentation needs scatter-gather: the kernel keeps it off.
    assert!(
        stderr.contains("netbisect: warning: the kernel did not grant tso=on (got off)"),
        "{stderr}"
    );
    let record: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(record["system"]["interface"], "va");
    assert_eq!(
        record["system"]["features"]["tso"],
        serde_json::json!({"requested": true, "granted": false})
    );
    assert_eq!(client.offloads("va"), before);
}

#[test]
fn a_run_ended_by_sigterm_puts_the_settings_back() {
    let Some(namespace) = namespace("sigterm") else {
        return;
    };
    let before = (namespace.offloads("lo"), namespace.mtu("lo"));
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new("ip")
        .args([
            "netns",
            "exec",
            &namespace.name,
            BINARY,
            "bench",
            "-l",
            "30",
        ])
        .args(["--set", "gso=off", "--set", "mtu=9000", "--no-archive"])
        .env("NETBISECT_ARCHIVE", dir.path().join("a.db"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while namespace.mtu("lo") != 9000 {
        assert!(child.try_wait().unwrap().is_none(), "bench ended early");
        assert!(Instant::now() < deadline, "the settings were never made");
        std::thread::sleep(Duration::from_millis(50));
    }
    // ip netns exec runs the binary in its own place: this is its pid.
    let killed = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "bench did not end at SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(130));
    assert_eq!((namespace.offloads("lo"), namespace.mtu("lo")), before);
}
