//! `netbisect serve` and `bench` at their limits: a test that needs more
//! threads than the server may start is answered with an error frame
//! naming the limit, and the server goes on serving; a client that
//! cannot start a flow's thread fails with an error naming the limit,
//! never a panic; a token file that is not a regular file is refused at
//! once rather than read until it ends.

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
    let binary = match crate::SharedBinary::new() {
        Ok(binary) => binary,
        Err(reason) => {
            eprintln!("skipped: another user cannot run the binary: {reason}");
            return;
        }
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
    let binary = match crate::SharedBinary::new() {
        Ok(binary) => binary,
        Err(reason) => {
            eprintln!("skipped: another user cannot run the binary: {reason}");
            return;
        }
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
