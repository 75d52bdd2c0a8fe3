//! A PostgreSQL archive cannot hang netbisect: a server that accepts and
//! never answers, never ends a TLS handshake, or answers the start-up
//! and never a query, ends in an error naming the server and the phase
//! within `connect_timeout`; a table locked by another session is
//! waited for with a message on stderr, until the lock goes or
//! `lock_timeout` (or `statement_timeout`) ends the wait, each settable
//! in the address. The silent servers are the test's own listeners on
//! loopback; the locks are taken on the tests' cluster (`test_fixtures::postgres`), where PostgreSQL is
//! installed (these say so and pass elsewhere, and fail under
//! `NETBISECT_SLOW_TESTS=1`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use test_fixtures::postgres::Cluster;
use test_fixtures::record::{RecordBuilder, json_lines};

/// What a silent server says before it falls silent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Says {
    /// Nothing at all.
    Nothing,
    /// Yes to a request for TLS, and then nothing: a handshake that never
    /// ends.
    YesToTls,
    /// No to a request for TLS, as a server without TLS says, and to the
    /// start-up message what a server that trusts every login says
    /// (authentication done, ready for a query).
    ReadyForQuery,
}

/// The code of a request for TLS, in place of a start-up message's
/// protocol version.
const SSL_REQUEST_CODE: u32 = 80_877_103;

/// A server on loopback that accepts every connection, says what `says`
/// tells, and holds it. Returns its port.
fn silent_server(says: Says) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held: Vec<TcpStream> = Vec::new();
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            if says != Says::Nothing {
                answer(&mut stream, says);
            }
            held.push(stream);
        }
    });
    port
}

/// Reads the client's messages of a start-up and answers them as `says`
/// tells: each is its length (4 bytes, itself included), then that many
/// bytes less four, a request for TLS a code in place of a version.
fn answer(stream: &mut TcpStream, says: Says) {
    loop {
        let mut length = [0u8; 4];
        if stream.read_exact(&mut length).is_err() {
            return;
        }
        let mut rest = vec![0u8; (u32::from_be_bytes(length) as usize).saturating_sub(4)];
        if stream.read_exact(&mut rest).is_err() {
            return;
        }
        if rest.len() == 4
            && u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) == SSL_REQUEST_CODE
        {
            let yes = says == Says::YesToTls;
            let _ = stream.write_all(if yes { b"S" } else { b"N" });
            if yes {
                return;
            }
            continue;
        }
        // AuthenticationOk, then ReadyForQuery (idle).
        let mut answer = vec![b'R'];
        answer.extend_from_slice(&8u32.to_be_bytes());
        answer.extend_from_slice(&0u32.to_be_bytes());
        answer.push(b'Z');
        answer.extend_from_slice(&5u32.to_be_bytes());
        answer.push(b'I');
        let _ = stream.write_all(&answer);
        return;
    }
}

/// `netbisect archive list` on the archive at `address`, and how long it
/// took; killed past 60 s, which fails the test.
fn list_at(address: &str) -> (Output, Duration) {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .env("NETBISECT_ARCHIVE", address)
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .args(["archive", "list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("netbisect archive list at {address} still runs after 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let output = child.wait_with_output().unwrap();
    (output, start.elapsed())
}

#[test]
fn a_server_that_accepts_and_never_answers_ends_within_the_bound() {
    let port = silent_server(Says::Nothing);
    // The default bound (10 s), well before the 30 s of a user's
    // `timeout 30`.
    let (output, took) = list_at(&format!("postgres://u:p@127.0.0.1:{port}/db"));
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(20),
        "{took:?}"
    );
    assert!(
        stderr.contains(&format!(
            "cannot use the archive at postgres://u@127.0.0.1:{port}/db: no answer to the \
             start-up and authentication within 10 s (connect_timeout)"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(":p@"), "{stderr}");

    // The address's own bound.
    let (output, took) = list_at(&format!(
        "postgres://u:p@127.0.0.1:{port}/db?connect_timeout=1"
    ));
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(stderr.contains("within 1 s (connect_timeout)"), "{stderr}");
}

#[test]
fn a_run_for_a_server_that_never_answers_is_kept_in_the_spool() {
    // A host that takes connections and never answers is as away as one
    // that refuses them: the run is kept, not lost.
    let port = silent_server(Says::Nothing);
    let state = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .env(
            "NETBISECT_ARCHIVE",
            format!("postgres://u:p@127.0.0.1:{port}/db?connect_timeout=1"),
        )
        .env("XDG_STATE_HOME", state.path())
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .args(["bench", "-t", "TCP_RR", "-l", "0.2"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the archive at postgres://u@127.0.0.1:{port}/db is unreachable \
             (no answer to the start-up and authentication within 1 s (connect_timeout))"
        )),
        "{stderr}"
    );
    let spool = state.path().join("netbisect").join("spool");
    let kept: Vec<_> = std::fs::read_dir(&spool)
        .unwrap()
        .flat_map(|archive| std::fs::read_dir(archive.unwrap().path()).unwrap())
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|ext| ext == "json")
        })
        .collect();
    assert_eq!(kept.len(), 1, "{stderr}");
}

#[test]
fn a_server_that_never_answers_a_query_ends_at_the_first_query() {
    let port = silent_server(Says::ReadyForQuery);
    let (output, took) = list_at(&format!(
        "postgres://u:p@127.0.0.1:{port}/db?connect_timeout=2"
    ));
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(took < Duration::from_secs(8), "{took:?}");
    assert!(
        stderr.contains(&format!(
            "cannot use the archive at postgres://u@127.0.0.1:{port}/db: no answer to the \
             first query within 2 s (connect_timeout)"
        )),
        "{stderr}"
    );
}

#[test]
fn a_tls_handshake_that_never_ends_ends_within_the_bound() {
    let port = silent_server(Says::YesToTls);
    for mode in ["require", "prefer"] {
        let (output, took) = list_at(&format!(
            "postgres://u:p@127.0.0.1:{port}/db?connect_timeout=1&sslmode={mode}"
        ));
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        assert_eq!(output.status.code(), Some(3), "{stderr}");
        assert!(took < Duration::from_secs(5), "{took:?}");
        assert!(
            stderr.contains(&format!(
                "cannot use the archive at postgres://u@127.0.0.1:{port}/db: no end to the \
                 TLS handshake within 1 s (connect_timeout)"
            )),
            "{stderr}"
        );
        assert!(!stderr.contains(":p@"), "{stderr}");
    }
}

/// A database of the cluster holding one run, and a session of the
/// cluster's that holds `runs` locked (`ACCESS EXCLUSIVE`, in an open
/// transaction) until it is rolled back or dropped.
fn locked_archive(cluster: &Cluster) -> (String, postgres::Client) {
    let name = cluster.database();
    let address = cluster.url(&name);
    let run = RecordBuilder::new(run_record::spec::TestKind::TcpStream)
        .label("locked")
        .build();
    Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .env("NETBISECT_ARCHIVE", &address)
        .args(["archive", "import", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .and_then(|mut child| {
            child
                .stdin
                .take()
                .unwrap()
                .write_all(json_lines(&[run]).as_bytes())?;
            child.wait()
        })
        .map(|status| assert!(status.success()))
        .unwrap();
    let mut blocker = postgres::Client::connect(&address, postgres::NoTls).unwrap();
    blocker
        .batch_execute("BEGIN; LOCK TABLE runs IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    (address, blocker)
}

#[test]
fn a_locked_table_is_waited_for_with_a_message_and_read_when_the_lock_goes() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let (address, mut blocker) = locked_archive(cluster);
    let mut child = Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .env("NETBISECT_ARCHIVE", &address)
        .args(["archive", "list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (lines, received) = mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let first = received
        .recv_timeout(Duration::from_secs(30))
        .expect("no message while the table is locked");
    assert!(
        first.starts_with("netbisect: waiting for a lock held by another session, ")
            && first.ends_with(" s"),
        "{first}"
    );
    // Still waiting, and said again, while the lock is held.
    let again = received.recv_timeout(Duration::from_secs(30)).unwrap();
    assert!(
        again.starts_with("netbisect: waiting for a lock"),
        "{again}"
    );
    assert!(child.try_wait().unwrap().is_none());
    blocker.batch_execute("ROLLBACK").unwrap();
    let output = child.wait_with_output().unwrap();
    reader.join().unwrap();
    assert!(output.status.success());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("locked"), "{stdout}");
}

#[test]
fn a_lock_held_past_lock_timeout_ends_in_an_error_that_names_it() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let (address, _blocker) = locked_archive(cluster);
    // The address's query sets a minute; its options, which win, a second.
    let (output, took) = list_at(&format!(
        "{address}?lock_timeout=1min&options=-c%20lock_timeout%3D1s"
    ));
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(
        stderr.contains("a lock held by another session was not released within lock_timeout"),
        "{stderr}"
    );
    assert!(
        stderr.contains("canceling statement due to lock timeout"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(test_fixtures::postgres::PASSWORD),
        "{stderr}"
    );

    // Without a lock_timeout, statement_timeout ends the wait.
    let (output, took) = list_at(&format!("{address}?lock_timeout=0&statement_timeout=2s"));
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    assert!(took < Duration::from_secs(20), "{took:?}");
    assert!(
        stderr.contains("a statement ran longer than statement_timeout"),
        "{stderr}"
    );
}
