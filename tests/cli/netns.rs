//! Tests that need a network of their own: each makes a network namespace
//! (`ip netns`, which takes root), shapes its loopback device with `tc`
//! and runs the binary inside it, so that nothing leaves the namespace.
//! Where a namespace cannot be made, the test says why and passes
//! without running (a failure under `NETBISECT_SLOW_TESTS=1`, since CI
//! runs as root). `bench --set` is tested in [`settings`], a PostgreSQL
//! archive reached through its socket directory in [`postgres`].

mod postgres;
mod settings;

use serde_json::Value;
use std::process::{Command, Output};

/// A network namespace that is deleted when dropped.
pub(crate) struct Namespace {
    name: String,
}

impl Namespace {
    /// Makes a namespace with its loopback device up, or says why not.
    pub(crate) fn new(tag: &str) -> Result<Namespace, String> {
        let name = format!("netbisect-{tag}-{}", std::process::id());
        let made = Command::new("ip")
            .args(["netns", "add", &name])
            .output()
            .map_err(|err| format!("cannot run ip: {err}"))?;
        if !made.status.success() {
            return Err(format!(
                "ip netns add failed: {}",
                String::from_utf8_lossy(&made.stderr).trim()
            ));
        }
        let namespace = Namespace { name };
        namespace.run(&["ip", "link", "set", "lo", "up"]);
        Ok(namespace)
    }

    /// The namespace's name, for `ip -n` and `/run/netns/`.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Runs `argv` inside the namespace and expects success.
    pub(crate) fn run(&self, argv: &[&str]) -> Output {
        let output = Command::new("ip")
            .args(["netns", "exec", &self.name])
            .args(argv)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{argv:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        output
    }

    /// The binary, run inside the namespace with its own archive.
    pub(crate) fn netbisect(&self, archive: &std::path::Path) -> assert_cmd::Command {
        let mut command = assert_cmd::Command::new("ip");
        command
            .args(["netns", "exec", &self.name, env!("CARGO_BIN_EXE_netbisect")])
            .env("NETBISECT_ARCHIVE", archive)
            .env_remove("NETBISECT_TEMPLATE_DIR");
        command
    }

    /// `netbisect bench ARGS --json` inside the namespace, which must
    /// succeed; its record.
    fn bench_record(&self, archive: &std::path::Path, args: &[&str]) -> Value {
        let output = self
            .netbisect(archive)
            .arg("bench")
            .args(args)
            .arg("--json")
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).unwrap()
    }

    /// The kernel's count of UDP sends dropped for want of buffer or
    /// queue space in the namespace (`SndbufErrors` of /proc/net/snmp).
    fn udp_sndbuf_errors(&self) -> u64 {
        let snmp = String::from_utf8(self.run(&["cat", "/proc/net/snmp"]).stdout).unwrap();
        let mut udp_lines = snmp.lines().filter(|line| line.starts_with("Udp: "));
        let names: Vec<&str> = udp_lines.next().unwrap().split_whitespace().collect();
        let values: Vec<&str> = udp_lines.next().unwrap().split_whitespace().collect();
        let column = names.iter().position(|n| *n == "SndbufErrors").unwrap();
        values[column].parse().unwrap()
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.name])
            .output();
    }
}

/// A namespace whose loopback device sends at most 200 Mbit/s through a
/// 32 KB queue: a UDP sender that outruns it finds the queue full.
fn shaped_namespace(tag: &str) -> Option<Namespace> {
    match Namespace::new(tag) {
        Ok(namespace) => {
            namespace.run(&[
                "tc", "qdisc", "replace", "dev", "lo", "root", "tbf", "rate", "200mbit", "burst",
                "32kb", "limit", "32kb",
            ]);
            Some(namespace)
        }
        Err(reason) => {
            test_fixtures::skip::skip(format!("no network namespace: {reason}"));
            None
        }
    }
}

#[test]
fn udp_send_errors_are_counted_by_errno_in_the_record() {
    let Some(namespace) = shaped_namespace("udperr") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let before = namespace.udp_sndbuf_errors();
    let record =
        namespace.bench_record(&dir.path().join("a.db"), &["-t", "UDP_STREAM", "-l", "0.2"]);
    let dropped = namespace.udp_sndbuf_errors() - before;
    assert_eq!(record["schema"], "netbisect.run/1.3");
    let iteration = &record["iterations"][0];
    let by_errno = &iteration["ends"]["local"]["send_errors"];
    let enobufs = by_errno["ENOBUFS"].as_u64().unwrap();
    assert!(enobufs > 0, "no failed send: {by_errno}");
    // Every datagram the kernel dropped at the sender is one counted
    // failed send, and nothing else is.
    assert_eq!(enobufs, dropped);
    assert_eq!(by_errno.as_object().unwrap().len(), 1, "{by_errno}");
    assert_eq!(iteration["send_errors"].as_u64(), Some(enobufs));
    assert_eq!(
        record["summary"]["udp"]["send_errors"].as_u64(),
        Some(enobufs)
    );
}

/// The first data line of a UDP_STREAM run table: socket size, message
/// size, elapsed, okay, errors, throughput.
fn udp_sender_row(table: &str) -> Vec<String> {
    let units = table
        .lines()
        .position(|line| line.starts_with("bytes   bytes    secs"))
        .unwrap();
    table
        .lines()
        .nth(units + 2)
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect()
}

#[test]
fn udp_table_shows_failed_sends_and_per_iteration_means() {
    let Some(namespace) = shaped_namespace("udptable") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let before = namespace.udp_sndbuf_errors();
    let output = namespace
        .netbisect(&dir.path().join("a.db"))
        .args(["bench", "-t", "UDP_STREAM", "-l", "0.2", "-i", "3,3"])
        .output()
        .unwrap();
    let table = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{table}");
    let dropped = namespace.udp_sndbuf_errors() - before;
    assert!(dropped > 0);
    crate::check_mailing_list_rules(&table);
    assert!(table.contains("3 iterations; figures are per-iteration means."));
    let row = udp_sender_row(&table);
    let message_bytes: f64 = row[1].parse().unwrap();
    let elapsed_s: f64 = row[2].parse().unwrap();
    let okay: f64 = row[3].parse().unwrap();
    let errors: f64 = row[4].parse().unwrap();
    let throughput_mbps: f64 = row[5].parse().unwrap();
    // The Errors column is the mean of the three iterations' counted
    // failures, which add up to what the kernel dropped.
    assert!(
        (errors - dropped as f64 / 3.0).abs() <= 0.5,
        "{errors} vs {dropped} / 3\n{table}"
    );
    assert!(
        table.contains(&format!("Failed sends: {dropped} in all 3 iterations")),
        "{table}"
    );
    // Messages per iteration agree with the time and the throughput
    // beside them (the time is printed to 10 ms).
    let implied_mbps = okay * message_bytes * 8.0 / elapsed_s / 1e6;
    assert!(
        (implied_mbps / throughput_mbps - 1.0).abs() < 0.06,
        "{implied_mbps} vs {throughput_mbps}\n{table}"
    );
}

#[test]
fn tcp_crr_goes_round_a_narrow_port_range_without_failing() {
    let namespace = match Namespace::new("crrports") {
        Ok(namespace) => namespace,
        Err(reason) => {
            test_fixtures::skip::skip(format!("no network namespace: {reason}"));
            return;
        }
    };
    // 64 ports, some of them taken by the server's sockets and the
    // control connection. Left to the kernel, connect() runs out of
    // ports once they are all in TIME_WAIT (each younger than
    // tcp_tw_reuse_delay); bound by the client, each port's TIME_WAIT
    // socket is taken over at once, however often the cycle wraps. The
    // cycle keeps to the top quarter of the range (16 ports here): a
    // port bound by hand is one the kernel passes over while its
    // TIME_WAIT socket lives, and the rest must stay free for the next
    // test and every other program.
    let (low, high) = (40_000u16, 40_063u16);
    namespace.run(&[
        "sysctl",
        "-qw",
        &format!("net.ipv4.ip_local_port_range={low} {high}"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("a.db");
    let record = namespace.bench_record(&archive, &["-t", "TCP_CRR", "-l", "1"]);
    let iteration = &record["iterations"][0];
    let transactions = iteration["transactions"].as_u64().unwrap();
    let n_ports = u64::from(high - low) + 1;
    // Twice as many connections as the range has ports, within a second:
    // far more than the kernel alone would give before TIME_WAIT ends
    // (unloaded, thousands).
    assert!(
        transactions > 2 * n_ports,
        "{transactions} transactions over {n_ports} ports"
    );
    let local = iteration["ends"]["local"]["socket"]["local_address"]
        .as_str()
        .unwrap();
    let port: u16 = local.rsplit(':').next().unwrap().parse().unwrap();
    assert!((high - 15..=high).contains(&port), "{local}");
    // The next test, at once: its server binds a data socket to a port
    // the kernel picks, and its client connects from one.
    namespace.bench_record(&archive, &["-t", "TCP_RR", "-l", "0.1"]);
}
