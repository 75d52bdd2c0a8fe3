//! A bounded soak of `netbisect serve` over loopback: for a minute (or
//! `NETBISECT_SOAK_SECONDS`), good clients run short tests while others
//! say hello and go silent, trickle bytes into a test, or vanish in the
//! middle of one. Every good client must succeed, and the server's
//! threads and memory must come back to where they started.
//!
//! A slow test: it runs when `NETBISECT_SLOW_TESTS=1` (as CI runs the
//! suite), else it says so and passes.

use bench_core::auth::Token;
use bench_core::client::{ClientOptions, run_test};
use bench_core::protocol::{Frame, PROTOCOL_NAME, PROTOCOL_VERSION, read_frame, write_frame};
use run_record::spec::{RunSpec, TestKind};
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const BINARY: &str = env!("CARGO_BIN_EXE_netbisect");

/// Threads and resident kilobytes of a process.
fn usage_of(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|number| number.parse().ok())
            .unwrap_or(0)
    };
    (field("Threads:"), field("VmRSS:"))
}

fn handshake(stream: &mut TcpStream, token: &Token) -> bool {
    let hello = Frame::Hello {
        protocol: PROTOCOL_NAME.to_string(),
        version: PROTOCOL_VERSION,
    };
    if write_frame(stream, &hello).is_err() {
        return false;
    }
    let Ok(Frame::Welcome {
        challenge: Some(challenge),
        ..
    }) = read_frame(stream, Duration::from_secs(10))
    else {
        return false;
    };
    let auth = Frame::Auth {
        mac: token.respond(&challenge),
    };
    write_frame(stream, &auth).is_ok()
        && matches!(
            read_frame(stream, Duration::from_secs(10)),
            Ok(Frame::AuthOk)
        )
}

/// Asks for `spec`; the data ports and secret.
fn ready(stream: &mut TcpStream, spec: RunSpec) -> Option<(Vec<u16>, String)> {
    write_frame(
        stream,
        &Frame::Test {
            spec,
            data_ports: None,
        },
    )
    .ok()?;
    match read_frame(stream, Duration::from_secs(10)) {
        Ok(Frame::Ready {
            data_ports,
            data_secret,
        }) => Some((data_ports, data_secret)),
        _ => None,
    }
}

fn short_spec(test: TestKind) -> RunSpec {
    let mut spec = RunSpec::defaults(test);
    spec.duration_s = 0.2;
    spec
}

#[test]
fn serve_survives_a_minute_of_mixed_clients() {
    if test_fixtures::skip::unless_slow_tests() {
        return;
    }
    let seconds: u64 = std::env::var("NETBISECT_SOAK_SECONDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(60);
    let dir = tempfile::tempdir().unwrap();
    let token_path = dir.path().join("token");
    std::fs::write(&token_path, "a soak test secret of some length\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let token = Token::from_file(&token_path).unwrap();
    let mut server = std::process::Command::new(BINARY)
        .args(["serve", "-q", "-p", "0", "--timeout", "2", "--token-file"])
        .arg(&token_path)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let address: SocketAddr = first.rsplit(' ').next().unwrap().parse().unwrap();
    std::thread::spawn(move || for _ in lines.map_while(Result::ok) {});
    let mut options = ClientOptions::new("127.0.0.1", address.port());
    options.token = Some(token.clone());
    // One test first, so that the baseline has what a test leaves behind
    // (the captured environment, the allocator's pools).
    run_test(&short_spec(TestKind::TcpRr), &options).unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let (base_threads, base_rss_kb) = usage_of(server.id());

    let stop = Arc::new(AtomicBool::new(false));
    let end = Instant::now() + Duration::from_secs(seconds);
    let good = Arc::new(AtomicU64::new(0));
    let mut workers = Vec::new();
    let mut good_clients = Vec::new();
    for worker_idx in 0..3 {
        let (options, good, stop) = (options.clone(), Arc::clone(&good), Arc::clone(&stop));
        good_clients.push(std::thread::spawn(move || {
            let tests = [
                TestKind::TcpRr,
                TestKind::TcpStream,
                TestKind::UdpRr,
                TestKind::TcpCrr,
                TestKind::TcpMaerts,
                TestKind::UdpStream,
            ];
            let mut failures = Vec::new();
            let mut test_idx = worker_idx;
            while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                let test = tests[test_idx % tests.len()];
                test_idx += 1;
                match run_test(&short_spec(test), &options) {
                    Ok(_) => {
                        good.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(err) => failures.push(format!("{test}: {err}")),
                }
            }
            failures
        }));
    }
    // Hello-only clients from 127.0.0.2-9: hello, then silence.
    for worker_idx in 0..2u8 {
        let stop = Arc::clone(&stop);
        workers.push(std::thread::spawn(move || {
            let mut n_connects = 0u32;
            while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                let source = Ipv4Addr::new(127, 0, 0, 2 + worker_idx * 4 + (n_connects % 4) as u8);
                n_connects += 1;
                let socket =
                    socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                        .unwrap();
                let bound = socket.bind(&SocketAddr::new(source.into(), 0).into());
                if bound.is_ok()
                    && socket
                        .connect_timeout(&address.into(), Duration::from_secs(1))
                        .is_ok()
                {
                    let mut stream = TcpStream::from(socket);
                    let _ = write_frame(
                        &mut stream,
                        &Frame::Hello {
                            protocol: PROTOCOL_NAME.to_string(),
                            version: PROTOCOL_VERSION,
                        },
                    );
                    std::thread::sleep(Duration::from_millis(300));
                }
            }
        }));
    }
    // Tricklers: a TCP_RR request one byte at a time, for up to 4 s.
    {
        let (token, stop) = (token.clone(), Arc::clone(&stop));
        workers.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                let Ok(mut control) = TcpStream::connect(address) else {
                    continue;
                };
                if !handshake(&mut control, &token) {
                    continue;
                }
                let mut spec = short_spec(TestKind::TcpRr);
                spec.request_size_bytes = 4096;
                let Some((ports, secret)) = ready(&mut control, spec) else {
                    continue;
                };
                let Ok(mut data) = TcpStream::connect(("127.0.0.1", ports[0])) else {
                    continue;
                };
                let _ = data.write_all(secret.as_bytes());
                let give_up = Instant::now() + Duration::from_secs(4);
                while Instant::now() < give_up && !stop.load(Ordering::Relaxed) {
                    if data.write_all(&[1]).is_err() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }));
    }
    // Vanishing clients: start a TCP_STREAM test, send a little, go.
    {
        let (token, stop) = (token.clone(), Arc::clone(&stop));
        workers.push(std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) && Instant::now() < end {
                let Ok(mut control) = TcpStream::connect(address) else {
                    continue;
                };
                if !handshake(&mut control, &token) {
                    continue;
                }
                let mut spec = short_spec(TestKind::TcpStream);
                spec.flows = 4;
                let Some((ports, secret)) = ready(&mut control, spec) else {
                    continue;
                };
                for port in ports {
                    if let Ok(mut data) = TcpStream::connect(("127.0.0.1", port)) {
                        let _ = data.write_all(secret.as_bytes());
                        let _ = data.write_all(&[0u8; 65_536]);
                    }
                }
                drop(control);
                std::thread::sleep(Duration::from_millis(100));
            }
        }));
    }
    let mut failures = Vec::new();
    for client in good_clients {
        failures.extend(client.join().unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.join().unwrap();
    }
    let (peak_threads, peak_rss_kb) = usage_of(server.id());
    // Everything the misbehaving clients started ends within the
    // server's own bounds (control 2 s, I/O 10 s, handshake 5 s).
    let give_up = Instant::now() + Duration::from_secs(40);
    let mut settled = usage_of(server.id());
    while Instant::now() < give_up
        && (settled.0 > base_threads || settled.1 > base_rss_kb + 32 * 1024)
    {
        std::thread::sleep(Duration::from_millis(500));
        settled = usage_of(server.id());
    }
    let still_serves = run_test(&short_spec(TestKind::TcpRr), &options);
    let _ = server.kill();
    let _ = server.wait();
    eprintln!(
        "soak: {} s, {} good tests; serve threads {base_threads} -> {peak_threads} at the end \
         -> {} settled; RSS {base_rss_kb} kB -> {peak_rss_kb} kB -> {} kB",
        seconds,
        good.load(Ordering::Relaxed),
        settled.0,
        settled.1
    );
    assert!(failures.is_empty(), "good clients failed: {failures:#?}");
    assert!(good.load(Ordering::Relaxed) > 0);
    assert!(
        settled.0 <= base_threads,
        "threads: {base_threads} at the start, {} at the end",
        settled.0
    );
    assert!(
        settled.1 <= base_rss_kb + 32 * 1024,
        "resident memory: {base_rss_kb} kB at the start, {} kB at the end",
        settled.1
    );
    still_serves.unwrap();
}
