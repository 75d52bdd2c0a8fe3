//! `netbisect bench --sweep` end to end, over loopback: one record per
//! size, the sweep table, input errors before any connection, and a sweep
//! whose server dies between sizes.

use serde::Deserialize;
use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BINARY: &str = env!("CARGO_BIN_EXE_netbisect");

use crate::netbisect;

/// The parts of a run record these tests rely on, declared here so that
/// an accidental change of the format breaks them.
#[derive(Deserialize)]
struct Record {
    id: String,
    spec: Spec,
    subject: Subject,
}

#[derive(Deserialize)]
struct Spec {
    test: String,
    duration_s: f64,
    send_size_bytes: u32,
    request_size_bytes: u32,
    response_size_bytes: u32,
}

#[derive(Deserialize)]
struct Subject {
    label: Option<String>,
}

use crate::check_mailing_list_rules;

#[test]
fn every_size_of_a_sweep_is_stored_in_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sweep.db");
    let output = netbisect()
        .env("NETBISECT_ARCHIVE", &db)
        .args(["--json", "bench", "-t", "TCP_RR", "-l", "0.1"])
        .args(["--sweep", "r=1,64,1K", "--label", "stored-sweep"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed: Vec<String> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["id"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let output = netbisect()
        .env("NETBISECT_ARCHIVE", &db)
        .args(["archive", "list", "--json", "--label", "stored-sweep"])
        .output()
        .unwrap();
    let stored: Vec<serde_json::Value> = serde_json::from_slice(&output.stdout).unwrap();
    let mut stored: Vec<String> = stored
        .iter()
        .map(|run| run["id"].as_str().unwrap().to_string())
        .collect();
    let mut printed_sorted = printed.clone();
    printed_sorted.sort();
    stored.sort();
    assert_eq!(printed.len(), 3);
    assert_eq!(stored, printed_sorted);
}

#[test]
fn a_buffer_axis_takes_default_as_the_kernels_own_size() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sweep.db");
    let output = netbisect()
        .env("NETBISECT_ARCHIVE", &db)
        .args([
            "--json",
            "bench",
            "-l",
            "0.1",
            "--sweep",
            "S=212992,default",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let records: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(records.len(), 2, "{stderr}");
    // In the order given: the size asked, then none (the kernel's).
    assert_eq!(records[0]["spec"]["remote_socket_buffer_bytes"], 212_992);
    assert!(
        records[1]["spec"]["remote_socket_buffer_bytes"].is_null(),
        "{}",
        records[1]["spec"]
    );
    // The default configuration is the run of plain bench: the same spec.
    let plain = netbisect()
        .env("NETBISECT_ARCHIVE", &db)
        .args(["--json", "bench", "-l", "0.1"])
        .output()
        .unwrap();
    let plain: serde_json::Value = serde_json::from_slice(&plain.stdout).unwrap();
    assert_eq!(plain["spec"], records[1]["spec"]);
}

#[test]
fn configurations_listed_whole_run_as_given_each_with_the_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("sweep.db");
    let output = netbisect()
        .env("NETBISECT_ARCHIVE", &db)
        .args(["--json", "bench", "-l", "0.1"])
        .args([
            "--config",
            "S=212992 s=212992",
            "--config",
            "S=default s=default",
        ])
        .args(["--sweep", "m=16K,1K"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    let specs: Vec<serde_json::Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap()["spec"].clone())
        .collect();
    // Two configurations times two sizes, in the order given; not the
    // product of two buffer axes.
    let seen: Vec<(serde_json::Value, serde_json::Value, u64)> = specs
        .iter()
        .map(|spec| {
            (
                spec["remote_socket_buffer_bytes"].clone(),
                spec["local_socket_buffer_bytes"].clone(),
                spec["send_size_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    let size = serde_json::json!(212_992);
    let none = serde_json::Value::Null;
    assert_eq!(
        seen,
        [
            (size.clone(), size.clone(), 16_384),
            (size.clone(), size, 1024),
            (none.clone(), none.clone(), 16_384),
            (none.clone(), none, 1024),
        ],
        "{stderr}"
    );
    // Configurations on different axes are refused before anything runs.
    let refused = netbisect()
        .env("NETBISECT_ARCHIVE", &db)
        .args(["bench", "-l", "0.1", "--config", "S=1K", "--config", "s=1K"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("names the same axes"),
        "{refused:?}"
    );
}

#[test]
fn a_stream_sweep_prints_one_record_per_size() {
    let output = netbisect()
        .args(["--json", "bench", "-t", "TCP_STREAM", "-l", "0.1"])
        .args([
            "--sweep",
            "m=1K,9000,16K",
            "--label",
            "sweep",
            "--no-archive",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Not a terminal: progress as plain, timestamped lines on stderr,
    // one a size, and nothing of it on stdout.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{stderr}");
    for (line, size) in lines
        .iter()
        .zip(["1/3: -m 1024", "2/3: -m 9000", "3/3: -m 16384"])
    {
        assert!(
            line.ends_with(&format!("netbisect: size {size}")),
            "{stderr}"
        );
        assert_eq!(line.as_bytes()[4], b'-', "a date first: {stderr}");
    }
    assert!(!stderr.contains('\r'), "{stderr:?}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let records: Vec<Record> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let sizes: Vec<u32> = records.iter().map(|r| r.spec.send_size_bytes).collect();
    assert_eq!(sizes, [1024, 9000, 16_384]);
    for record in &records {
        assert_eq!(record.spec.test, "TCP_STREAM");
        assert_eq!(record.spec.duration_s, 0.1);
        assert_eq!(record.subject.label.as_deref(), Some("sweep"));
    }
    let mut ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
    ids.dedup();
    assert_eq!(ids.len(), 3);

    // Each line is a canonical record as `record check` reads it.
    for line in stdout.lines() {
        netbisect()
            .args(["record", "check", "-"])
            .write_stdin(line.as_bytes().to_vec())
            .assert()
            .success();
    }
}

#[test]
fn a_request_response_sweep_prints_its_table() {
    let output = netbisect()
        .args(["bench", "-t", "TCP_RR", "-l", "0.1"])
        .args(["--sweep", "r=1,64/1K,1K/1", "--no-archive"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    check_mailing_list_rules(&stdout);
    assert!(
        stdout.starts_with("TCP_RR sweep over -r sizes to 127.0.0.1 AF_INET, 0.10 s each\n"),
        "{stdout}"
    );
    assert!(stdout.contains("trans/sec   10^6bits/s"), "{stdout}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|words| words.len() == 8 && words[0].parse::<u32>().is_ok())
        .collect();
    let sizes: Vec<(&str, &str)> = rows.iter().map(|row| (row[0], row[1])).collect();
    assert_eq!(sizes, [("1", "1"), ("64", "1024"), ("1024", "1")]);
    for row in &rows {
        let rate: f64 = row[2].parse().unwrap();
        assert!(rate > 0.0, "{row:?}");
        // CPU is not measured: every CPU column is "-".
        assert_eq!(row[4..], ["-", "-", "-", "-"], "{row:?}");
    }
    assert!(!stdout.contains("INCOMPLETE"), "{stdout}");

    // The records of a UDP_RR sweep carry each size pair.
    let output = netbisect()
        .args(["--json", "bench", "-t", "UDP_RR", "-l", "0.1"])
        .args(["--sweep", "r=32/64,128", "--no-archive"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let sizes: Vec<(u32, u32)> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Record>(line).unwrap())
        .map(|record| {
            (
                record.spec.request_size_bytes,
                record.spec.response_size_bytes,
            )
        })
        .collect();
    assert_eq!(sizes, [(32, 64), (128, 128)]);
}

#[test]
fn bad_sweeps_fail_before_any_connection() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port().to_string();
    let cases: [(&[&str], &str); 9] = [
        (&["--sweep", "m="], "the sweep m= has no sizes"),
        (&["--sweep", "m=1,,2"], "invalid size '' for --sweep m="),
        (&["--sweep", "m=1,x"], "invalid size 'x' for --sweep m="),
        (
            &["--sweep", "1,2"],
            "invalid --sweep '1,2': expected AXIS=VALUE",
        ),
        (
            &["-t", "UDP_STREAM", "--sweep", "m=1472,65508"],
            "send size (-m) must be between 1 and 65507, got 65508",
        ),
        (&["--sweep", "m=0"], "got 0"),
        (
            &["-t", "TCP_RR", "--sweep", "m=1,2"],
            "a sweep of m= needs a stream test; TCP_RR is a request/response",
        ),
        (
            &["--sweep", "r=1,2"],
            "a sweep of r= needs a request/response test; TCP_STREAM is a",
        ),
        (
            &["-m", "1K", "--sweep", "m=1,2"],
            "--sweep m= sets -m for each run; leave -m out",
        ),
    ];
    for (args, message) in cases {
        let output = netbisect()
            .args(["bench", "-H", "127.0.0.1", "-p", &port, "-l", "0.1"])
            .args(args)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
    assert!(listener.accept().is_err(), "a bad sweep connected");
}

/// A `netbisect serve` child on a free loopback port, and its stderr
/// lines as they come; killed (by its own PID) when dropped.
struct Serve {
    child: Child,
    port: String,
    log: mpsc::Receiver<String>,
}

impl Serve {
    fn start() -> Serve {
        let mut child = std::process::Command::new(BINARY)
            .args(["serve", "-p", "0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next().unwrap().unwrap();
        let address: std::net::SocketAddr = first
            .strip_prefix("netbisect serve: listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {first:?}"))
            .parse()
            .unwrap();
        let (sender, log) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        Serve {
            child,
            port: address.port().to_string(),
            log,
        }
    }

    /// Waits (a few seconds at most) for a log line containing `wanted`.
    fn wait_for(&self, wanted: &str) {
        loop {
            let line = self
                .log
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_else(|_| panic!("the server never logged {wanted:?}"));
            if line.contains(wanted) {
                return;
            }
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn sweep_against(serve: &Serve, json: bool) -> Child {
    let mut command = std::process::Command::new(BINARY);
    if json {
        command.arg("--json");
    }
    command
        .args(["bench", "-H", "127.0.0.1", "-p", &serve.port])
        .args(["-t", "TCP_STREAM", "-l", "0.2", "--no-archive"])
        .args(["--sweep", "m=1K,2K,4K"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

#[test]
fn a_failed_size_stops_the_sweep_and_names_the_size() {
    // --json: the first record is out when the server dies; the second
    // size fails and the third never runs.
    let mut serve = Serve::start();
    let mut client = sweep_against(&serve, true);
    let mut stdout = BufReader::new(client.stdout.take().unwrap());
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    serve.child.kill().unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let output = client.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(3));
    let record: Record = serde_json::from_str(&first).unwrap();
    assert_eq!(record.spec.send_size_bytes, 1024);
    assert!(rest.is_empty(), "more records after the failure: {rest}");
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(
            "the sweep stopped at size 2 of 3 (-m 2048); 1 finished run was \
             not stored (--no-archive)"
        ),
        "{stderr}"
    );
    drop(serve);

    // Text: the table of the sizes that finished, marked incomplete.
    let mut serve = Serve::start();
    let client = sweep_against(&serve, false);
    serve.wait_for(": closed");
    serve.child.kill().unwrap();
    let output = client.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(3));
    let stdout = String::from_utf8(output.stdout).unwrap();
    check_mailing_list_rules(&stdout);
    assert!(
        stdout.contains("INCOMPLETE: size 2 of 3 (-m 2048) failed; the sweep stopped there."),
        "{stdout}"
    );
    assert!(stdout.lines().any(|line| line.starts_with("    1024 ")));
    assert!(!stdout.lines().any(|line| line.starts_with("    2048 ")));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("size 2 of 3 (-m 2048)"), "{stderr}");
}
