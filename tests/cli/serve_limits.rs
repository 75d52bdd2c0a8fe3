//! `netbisect serve` and `bench` at their limits: a test that needs more
//! threads than the server may start is answered with an error frame
//! naming the limit, and the server goes on serving; a client that
//! cannot start a flow's thread fails with an error naming the limit,
//! never a panic; a token file that is not a regular file is refused at
//! once rather than read until it ends; a flood of connections is logged
//! at a bounded rate, with a count of what was left out; a data-port
//! range with fewer ports than flows is said as such, on either side.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::Duration;

/// A user id no other test runs as: the thread limit counts every thread
/// of the user.
const THREAD_LIMIT_UID: u32 = 65_533;

fn threads_of(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|line| line.strip_prefix("Threads:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn a_thread_limit_is_an_error_frame_naming_it() {
    // The server runs as a user of its own, which must reach the binary.
    let Some(binary) = crate::SharedBinary::new() else {
        return;
    };
    let mut command = std::process::Command::new(binary.path());
    command
        .args(["serve", "-p", "0", "--timeout", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Room for the main thread, a session, its data thread and a flow
    // thread, with some to spare, but not for eight flows; set before
    // dropping privileges (lowering a limit needs
    // none), then run as a user of its own.
    let limit: libc::rlim_t = 6;
    // SAFETY: setrlimit/setgid/setuid are async-signal-safe, as pre_exec
    // needs.
    unsafe {
        command.pre_exec(move || {
            let rlimit = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_NPROC, &rlimit) != 0
                || libc::setgid(THREAD_LIMIT_UID) != 0
                || libc::setuid(THREAD_LIMIT_UID) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut server = command.spawn().unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let port = first.rsplit(':').next().unwrap().to_string();
    let log = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<String>>());
    assert_eq!(threads_of(server.id()), 1, "serve runs on its main thread");

    let bench = |flows: &str| {
        crate::netbisect()
            .args(["bench", "-H", "127.0.0.1", "-p", &port, "-t", "TCP_STREAM"])
            .args(["-l", "0.2", "--flows", flows, "--no-archive"])
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap()
    };
    let many = bench("8");
    let one = bench("1");
    let _ = server.kill();
    let _ = server.wait();
    let log = log.join().unwrap().join("\n");
    let stderr = String::from_utf8_lossy(&many.stderr);
    assert_eq!(many.status.code(), Some(3), "{stderr}\n{log}");
    assert!(
        stderr.contains("cannot start a thread") && stderr.contains("thread limit"),
        "{stderr}\n{log}"
    );
    assert!(!log.contains("panicked"), "{log}");
    assert!(
        one.status.success(),
        "{}\n{log}",
        String::from_utf8_lossy(&one.stderr)
    );
}

/// A user id no other test runs as, for the client at a thread limit.
const CLIENT_THREAD_LIMIT_UID: u32 = 65_532;

#[test]
fn a_client_at_its_thread_limit_fails_with_an_error_naming_it() {
    let Some(binary) = crate::SharedBinary::new() else {
        return;
    };
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .args(["serve", "-p", "0", "--timeout", "2"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let port = first.rsplit(':').next().unwrap().to_string();
    let log = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<String>>());
    // The client runs as a user of its own with room for its main
    // thread, the signal watcher and a flow thread or two, not eight.
    let mut client = std::process::Command::new(binary.path());
    client
        .args(["bench", "-H", "127.0.0.1", "-p", &port, "-t", "TCP_STREAM"])
        .args(["-l", "0.2", "--flows", "8", "--no-archive"])
        .env("NETBISECT_ARCHIVE", "/nonexistent/archive.db")
        .current_dir("/");
    let limit: libc::rlim_t = 4;
    // SAFETY: setrlimit/setgid/setuid are async-signal-safe, as pre_exec
    // needs.
    unsafe {
        client.pre_exec(move || {
            let rlimit = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_NPROC, &rlimit) != 0
                || libc::setgid(CLIENT_THREAD_LIMIT_UID) != 0
                || libc::setuid(CLIENT_THREAD_LIMIT_UID) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let output = assert_cmd::Command::from_std(client)
        .timeout(Duration::from_secs(60))
        .output()
        .unwrap();
    let _ = server.kill();
    let _ = server.wait();
    let log = log.join().unwrap().join("\n");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(output.status.code(), Some(3), "{stderr}\n{log}");
    assert!(
        stderr.contains("cannot start a thread for flow") && stderr.contains("thread limit"),
        "{stderr}"
    );
}

#[test]
fn a_token_file_that_is_not_a_regular_file_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("token");
    let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let fifo = fifo.to_str().unwrap();
    for args in [
        &["serve", "-p", "0", "--token-file", fifo][..],
        &[
            "bench",
            "-H",
            "127.0.0.1",
            "--token-file",
            fifo,
            "--no-archive",
        ],
    ] {
        // Bounded: a read that blocks on the FIFO is killed after 20 s.
        let output = crate::netbisect()
            .args(args)
            .timeout(Duration::from_secs(20))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("token file {fifo} is not a regular file")),
            "{args:?}: {stderr}"
        );
    }
}

/// Events `serve` logs at once before the rate applies, and a second
/// after, as GUIDE.md promises.
const LOG_BURST: usize = 20;
const LOG_PER_SECOND: usize = 10;

/// The events a `serve` log line stands for: one for an event's line, the
/// counts of a line saying what was not logged.
fn events_of_line(line: &str) -> usize {
    match line.split_once(" not logged ") {
        Some((_, counts)) => counts
            .rsplit_once(": ")
            .map_or("", |(_, list)| list)
            .split(", ")
            .filter_map(|item| item.split_whitespace().next()?.parse::<usize>().ok())
            .sum(),
        None => usize::from(line.contains(": connected") || line.contains(": dropped")),
    }
}

#[test]
fn a_flood_of_connections_is_logged_at_a_bounded_rate_with_a_count() {
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .args(["serve", "-p", "0"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let port: u16 = first.rsplit(':').next().unwrap().parse().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    // A thousand connections that close at once: a connect and a drop
    // each, two thousand events.
    let n_connections = 1000;
    let started = std::time::Instant::now();
    for _ in 0..n_connections {
        drop(std::net::TcpStream::connect(("127.0.0.1", port)).unwrap());
    }
    let mut log = Vec::new();
    let mut n_events = 0;
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    while n_events < 2 * n_connections && std::time::Instant::now() < give_up {
        if let Ok(line) = receiver.recv_timeout(Duration::from_millis(100)) {
            n_events += events_of_line(&line);
            log.push(line);
        }
    }
    let elapsed_s = started.elapsed().as_secs_f64();
    let _ = server.kill();
    let _ = server.wait();
    let text = log.join("\n");
    assert_eq!(n_events, 2 * n_connections, "{text}");
    let n_summaries = log.iter().filter(|l| l.contains(" not logged ")).count();
    assert!(n_summaries >= 1, "{text}");
    let n_event_lines = log.len() - n_summaries;
    let most = LOG_BURST + LOG_PER_SECOND * (elapsed_s.ceil() as usize + 1);
    assert!(
        n_event_lines <= most,
        "{n_event_lines} lines in {elapsed_s:.1} s, more than {most}"
    );
}

#[test]
fn a_data_port_range_smaller_than_the_flows_is_said_as_such() {
    // The client's own range: refused before anything connects.
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .args([
            "bench",
            "-H",
            "127.0.0.1",
            "-p",
            "1",
            "--data-port",
            "40002-40002",
        ])
        .args(["-l", "0.2", "--flows", "8", "--no-archive"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the data-port range 40002-40002 holds 1 port for 8 flows"),
        "{stderr}"
    );
    // The server's range (below the ephemeral ports, which other tests'
    // connections take), which the client does not see: the server's
    // refusal names it, and the server goes on serving.
    let mut server = std::process::Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .args([
            "serve",
            "-p",
            "0",
            "--timeout",
            "2",
            "--data-port",
            "29603-29604",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let port = first.rsplit(':').next().unwrap().to_string();
    let bench = |flows: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_netbisect"))
            .args(["bench", "-H", "127.0.0.1", "-p", &port, "-t", "TCP_STREAM"])
            .args(["-l", "0.2", "--flows", flows, "--no-archive"])
            .output()
            .unwrap()
    };
    let refused = bench("3");
    let two_flows = bench("2");
    let _ = server.kill();
    let _ = server.wait();
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("the data-port range 29603-29604 holds 2 ports for 3 flows"),
        "{stderr}"
    );
    assert!(!stderr.contains("Address already in use"), "{stderr}");
    assert_eq!(
        two_flows.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&two_flows.stderr)
    );
}
