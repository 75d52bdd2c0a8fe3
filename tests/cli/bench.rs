//! `netbisect bench` and `netbisect serve` end to end, over loopback.

use serde::Deserialize;
use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_netbisect");

use crate::netbisect;

#[test]
fn a_run_is_stored_in_the_archive_unless_told_not_to() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("nested").join("runs.db");
    let output = netbisect()
        .args([
            "bench", "-t", "TCP_RR", "-l", "0.2", "--json", "--label", "stored",
        ])
        .env("NETBISECT_ARCHIVE", &db)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let record: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let id = record["id"].as_str().unwrap();

    let output = netbisect()
        .args(["archive", "show", &id[..10], "--json"])
        .env("NETBISECT_ARCHIVE", &db)
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stored: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(stored, record);

    let output = netbisect()
        .args([
            "bench",
            "-t",
            "TCP_RR",
            "-l",
            "0.1",
            "--no-archive",
            "--json",
        ])
        .env("NETBISECT_ARCHIVE", &db)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let output = netbisect()
        .args(["archive", "list", "--json"])
        .env("NETBISECT_ARCHIVE", &db)
        .output()
        .unwrap();
    let runs: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(runs.len(), 1, "--no-archive stored a run");

    // The table of a run kept out says so next to the id that `archive
    // show` cannot find; a stored run's id has no such note.
    let output = netbisect()
        .args(["bench", "-t", "TCP_RR", "-l", "0.1", "--no-archive"])
        .env("NETBISECT_ARCHIVE", &db)
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let last = text.lines().last().unwrap();
    assert!(last.ends_with(" (not stored)"), "{text}");
    let id = last
        .split(", run ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap();
    let output = netbisect()
        .args(["archive", "show", id])
        .env("NETBISECT_ARCHIVE", &db)
        .output()
        .unwrap();
    assert_ne!(output.status.code(), Some(0), "{output:?}");
    let output = netbisect()
        .args(["bench", "-t", "TCP_RR", "-l", "0.1"])
        .env("NETBISECT_ARCHIVE", &db)
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(!text.contains("not stored"), "{text}");
}

use crate::check_mailing_list_rules as check_text;

#[test]
fn every_test_prints_a_netperf_table() {
    for test in [
        "TCP_STREAM",
        "TCP_MAERTS",
        "TCP_RR",
        "TCP_CRR",
        "UDP_STREAM",
        "UDP_RR",
    ] {
        let output = netbisect()
            .args(["bench", "-t", test, "-l", "0.2", "--no-archive"])
            .output()
            .unwrap();
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(
            output.status.success(),
            "{test}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(
            stdout.starts_with(&format!("{test} TEST from 127.0.0.1:")),
            "{stdout}"
        );
        assert!(stdout.contains("testbed loopback"), "{stdout}");
        check_text(&stdout);
    }
}

/// The parts of a run record this test relies on, declared here so that
/// an accidental change of the format breaks the test.
#[derive(Deserialize)]
struct Record {
    schema: String,
    id: String,
    spec: Spec,
    subject: RecordSubject,
    testbed: String,
    iterations: Vec<Iteration>,
}

#[derive(Deserialize)]
struct Spec {
    test: String,
    duration_s: f64,
    request_size_bytes: u32,
    response_size_bytes: u32,
    local_socket_buffer_bytes: Option<u32>,
    send_size_bytes: u32,
}

#[derive(Deserialize)]
struct RecordSubject {
    commit: Option<String>,
    label: Option<String>,
}

#[derive(Deserialize)]
struct Iteration {
    elapsed_s: f64,
    transactions: Option<u64>,
    ends: Ends,
}

#[derive(Deserialize)]
struct Ends {
    local: End,
    remote: End,
}

#[derive(Deserialize)]
struct End {
    transactions: Option<u64>,
    socket: Socket,
}

#[derive(Deserialize)]
struct Socket {
    local_address: String,
    send_buffer: Buffer,
}

#[derive(Deserialize)]
struct Buffer {
    requested_bytes: Option<u64>,
    after_setup_bytes: u64,
    at_end_bytes: u64,
}

#[test]
fn json_prints_the_canonical_record_with_every_default() {
    let output = netbisect()
        .args([
            "--json", "bench", "-t", "TCP_RR", "-l", "0.2", "-r", "32,64", "-s", "64K",
        ])
        .args(["--commit", "deadbeef", "--label", "base", "--no-archive"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let record: Record = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(record.schema, "netbisect.run/1.3");
    assert_eq!(record.id.len(), 64);
    assert_eq!(record.spec.test, "TCP_RR");
    assert_eq!(record.spec.duration_s, 0.2);
    assert_eq!(
        (
            record.spec.request_size_bytes,
            record.spec.response_size_bytes
        ),
        (32, 64)
    );
    assert_eq!(record.spec.send_size_bytes, 16_384);
    assert_eq!(record.spec.local_socket_buffer_bytes, Some(65_536));
    assert_eq!(record.subject.commit.as_deref(), Some("deadbeef"));
    assert_eq!(record.subject.label.as_deref(), Some("base"));
    assert_eq!(record.testbed, "loopback");
    let iteration = &record.iterations[0];
    // Within 100 ms of the deadline, as every test promises.
    assert!((iteration.elapsed_s - 0.2).abs() <= 0.1);
    assert_eq!(iteration.transactions, iteration.ends.local.transactions);
    assert_eq!(
        iteration.ends.remote.transactions,
        iteration.ends.local.transactions
    );
    let buffer = &iteration.ends.local.socket.send_buffer;
    assert_eq!(buffer.requested_bytes, Some(65_536));
    assert_eq!(buffer.after_setup_bytes, buffer.at_end_bytes);
    assert!(
        iteration
            .ends
            .local
            .socket
            .local_address
            .starts_with("127.0.0.1:")
    );

    // The output is a valid record as `record check` reads it.
    netbisect()
        .args(["record", "check", "-"])
        .write_stdin(output.stdout)
        .assert()
        .success();
}

#[test]
fn bad_input_fails_before_any_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &["-I", "90,5"],
            "confidence level (-I) must be between 95 and 99",
        ),
        (&["-I", "99,x"], "invalid confidence '99,x' for -I"),
        (
            &["-i", "2,5"],
            "iterations (-i min) must be between 1 and 2, got 5",
        ),
        (&["-I", "95,5", "-i", "1"], "needs at least 2 iterations"),
        (
            &["--flows", "0"],
            "flows (--flows) must be between 1 and 128, got 0",
        ),
        (
            &["--flows", "2", "--threads", "3"],
            "threads (--threads) must be",
        ),
        (
            &["--warmup", "61"],
            "warm-up must be between 0 and 60, got 61",
        ),
        (&["-D", "0"], "interim interval (-D) must be between"),
        (&["-m", "0"], "send size (-m) must be between 1 and"),
        (
            &["-t", "UDP_STREAM", "-m", "65508"],
            "between 1 and 65507, got 65508",
        ),
        (&["-t", "TCP_FOO"], "unknown test 'TCP_FOO'"),
        (&["-s", "1G"], "local socket buffer (-s) must be between"),
        (&["-l", "0"], "test length (-l) must be between"),
        (&["-r", "1,x"], "invalid size 'x' for -r"),
    ];
    for &(args, message) in cases {
        let output = netbisect()
            .args(["bench", "-H", "127.0.0.1", "-p", &port])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
    assert!(listener.accept().is_err(), "a bad command line connected");
}

#[test]
fn unreachable_server_is_named() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let start = Instant::now();
    let output = netbisect()
        .args([
            "bench",
            "-H",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-l",
            "0.2",
        ])
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(output.status.code(), Some(3));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!("cannot connect to 127.0.0.1:{port}")),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

/// A `netbisect serve` child; killed (by its own PID) when dropped.
struct ServeProcess {
    child: Child,
    address: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
}

impl ServeProcess {
    fn start(args: &[&str]) -> ServeProcess {
        let mut child = std::process::Command::new(BINARY)
            .args(["serve", "-p", "0"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let address = first
            .strip_prefix("netbisect serve: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .parse()
            .unwrap();
        let log = Arc::new(Mutex::new(Vec::new()));
        std::thread::spawn({
            let log = Arc::clone(&log);
            move || {
                for line in lines.map_while(Result::ok) {
                    log.lock().unwrap().push(line);
                }
            }
        });
        ServeProcess {
            child,
            address,
            log,
        }
    }

    fn port(&self) -> String {
        self.address.port().to_string()
    }

    fn logged(&self, wanted: &str) -> bool {
        self.logged_times(wanted, 1)
    }

    /// Waits until `times` lines of the log contain `wanted`.
    fn logged_times(&self, wanted: &str, times: usize) -> bool {
        let give_up = Instant::now() + Duration::from_secs(10);
        while Instant::now() < give_up {
            if self
                .log
                .lock()
                .unwrap()
                .iter()
                .filter(|line| line.contains(wanted))
                .count()
                >= times
            {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for ServeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn bench_against_serve_and_a_server_dying_mid_test() {
    let server = ServeProcess::start(&[]);
    let output = netbisect()
        .args(["--json", "bench", "-H", "127.0.0.1", "-p", &server.port()])
        .args(["-t", "TCP_STREAM", "-l", "0.2", "--no-archive"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let record: Record = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(record.testbed, "127.0.0.1");

    // Kill the server while a test runs: an error, and no record.
    let mut server = server;
    let client = std::process::Command::new(BINARY)
        .args(["--json", "bench", "-H", "127.0.0.1", "-p", &server.port()])
        .args(["-t", "TCP_STREAM", "-l", "3", "--no-archive"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Kill only once the client is in its data phase: a server killed
    // earlier frees its ports, which another test's server may then take.
    assert!(
        server.logged_times("TCP_STREAM started", 2),
        "the client's test never started"
    );
    std::thread::sleep(Duration::from_millis(300));
    server.child.kill().unwrap();
    let output = client.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(3));
    assert!(output.stdout.is_empty(), "a record was printed");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("no run was recorded"), "{stderr}");
}

#[test]
fn wildcard_serve_demands_a_token() {
    let output = netbisect()
        .args(["serve", "--listen", "0.0.0.0", "-p", "0"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("give a token file, or --no-auth"),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "a secret shared by both ends\n").unwrap();
    let wrong = dir.path().join("wrong");
    std::fs::write(&wrong, "some other secret of a length\n").unwrap();
    // A token others may read is refused on both ends, with the fix.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).unwrap();
    let output = netbisect()
        .args(["serve", "--listen", "0.0.0.0", "-p", "0", "--token-file"])
        .arg(&token)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(&format!("chmod 600 {}", token.display())),
        "{stderr}"
    );
    let output = netbisect()
        .args(["bench", "-H", "127.0.0.1", "--no-archive", "--token-file"])
        .arg(&token)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("readable by group and others"), "{stderr}");
    for path in [&token, &wrong] {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let token = token.to_str().unwrap();
    let server = ServeProcess::start(&["--listen", "0.0.0.0", "--token-file", token]);
    // Through loopback only, although the server listens on every address.
    let bench = |extra: &[&str]| {
        netbisect()
            .args([
                "bench",
                "-H",
                "127.0.0.1",
                "-p",
                &server.port(),
                "-t",
                "TCP_RR",
            ])
            .args(["-l", "0.2", "--no-archive"])
            .args(extra)
            .output()
            .unwrap()
    };
    let output = bench(&[]);
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).contains("demands a token"));
    assert!(server.logged("refused: authentication failed: no token"));

    let output = bench(&["--token-file", wrong.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&output.stderr).contains("authentication failed"));
    assert!(server.logged("refused: authentication failed: wrong token"));

    let output = bench(&["--token-file", token]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(String::from_utf8_lossy(&output.stdout).contains("TCP_RR TEST"));
}

/// The run table is netperf-compatible enough that the archive's netperf
/// importer reads it back with the same figures as the run record.
#[test]
fn the_run_table_imports_back_with_the_same_figures() {
    let dir = tempfile::tempdir().unwrap();
    let measured = dir.path().join("measured.db");
    let imported = dir.path().join("imported.db");
    for test in ["TCP_STREAM", "TCP_RR", "UDP_STREAM"] {
        let output = netbisect()
            .env("NETBISECT_ARCHIVE", &measured)
            .args(["bench", "-t", test, "-l", "0.2", "--label", test])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0), "{test}");
        let table = dir.path().join(format!("{test}.txt"));
        std::fs::write(&table, &output.stdout).unwrap();
        let output = netbisect()
            .env("NETBISECT_ARCHIVE", &imported)
            .args(["archive", "import", "--label", test])
            .arg(&table)
            .output()
            .unwrap();
        assert_eq!(
            output.status.code(),
            Some(0),
            "{test}: {}",
            String::from_utf8_lossy(&output.stderr)
        );

        let export = |db: &std::path::Path| -> serde_json::Value {
            let output = netbisect()
                .env("NETBISECT_ARCHIVE", db)
                .args(["archive", "export", "--label", test])
                .output()
                .unwrap();
            let text = String::from_utf8(output.stdout).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 1, "{test}: {text}");
            serde_json::from_str(lines[0]).unwrap()
        };
        let original = export(&measured);
        let read_back = export(&imported);
        assert_eq!(read_back["source"]["tool"], "netperf");
        assert_eq!(read_back["spec"]["test"], test);
        let figure = |record: &serde_json::Value, name: &str| {
            record["summary"][name]["mean"].as_f64().unwrap()
        };
        // The table prints 10^6 bits/s and transactions/s with two decimals.
        let throughput_gap =
            (figure(&original, "throughput_bps") - figure(&read_back, "throughput_bps")).abs();
        assert!(throughput_gap <= 0.005e6 + 1.0, "{test}: {throughput_gap}");
        if test == "TCP_RR" {
            let rate_gap = (figure(&original, "transaction_rate")
                - figure(&read_back, "transaction_rate"))
            .abs();
            assert!(rate_gap <= 0.005 + 1e-9, "{test}: {rate_gap}");
        }
        let spec = |record: &serde_json::Value, name: &str| record["spec"][name].clone();
        for size in [
            "send_size_bytes",
            "request_size_bytes",
            "response_size_bytes",
        ] {
            if test.contains("STREAM") && size != "send_size_bytes" {
                continue;
            }
            if test == "TCP_RR" && size == "send_size_bytes" {
                continue;
            }
            assert_eq!(
                spec(&original, size),
                spec(&read_back, size),
                "{test} {size}"
            );
        }
    }
}

#[test]
fn cpu_confidence_latency_and_flows_show_in_the_table() {
    let output = netbisect()
        .args(["bench", "-t", "TCP_RR", "-l", "0.1", "-c", "-C"])
        .args(["-I", "99,0.001", "-i", "2,2", "--flows", "2", "-D", "0.04"])
        .args(["--no-archive"])
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(output.status.success(), "{stderr}");
    check_text(&stdout);
    for wanted in [
        "2 flows; figures are their sums.",
        "!!! Desired confidence was not achieved within the specified iterations.",
        "!!! Asked for: 99% confidence, 0.001% wide (+-0.001%), after 2 iterations.",
        "us/Tr   us/Tr",
        "Latency usecs      Min      P50      P90      P99    P99.9      Max",
        "CPU %      Util    User    Nice  System",
        "Flows of the last iteration:",
    ] {
        assert!(
            stdout.contains(wanted),
            "{wanted:?} missing from:\n{stdout}"
        );
    }
    assert!(
        stderr.contains("Interim result: ") && stderr.contains(" Trans/s over "),
        "{stderr}"
    );
}
