//! The server cannot be tied up: hello-only floods do not take the slots
//! of authenticated sessions, every wait of a test has a deadline, memory
//! is capped per test and in all, and a client cannot pick data port 0.
//! Every test bounds its own load in count and time.

use bench_core::auth::Token;
use bench_core::client::{ClientOptions, run_test};
use bench_core::protocol::{
    Frame, PROTOCOL_NAME, PROTOCOL_VERSION, PortRange, read_frame, write_frame,
};
use bench_core::server::{Server, ServerConfig, ServerHandle, quiet};
use run_record::spec::{AddressFamily, RunSpec, TestKind};
use socket2::{Domain, Socket, Type};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const SHORT: Duration = Duration::from_millis(500);

fn config() -> ServerConfig {
    let mut config = ServerConfig::loopback(AddressFamily::Ipv4);
    config.control_timeout = SHORT;
    config.io_timeout = SHORT;
    config.pre_auth_timeout = SHORT;
    config
}

fn start(config: ServerConfig) -> ServerHandle {
    Server::bind(config, quiet()).unwrap().spawn().unwrap()
}

fn quick_spec(test: TestKind) -> RunSpec {
    let mut spec = RunSpec::defaults(test);
    spec.duration_s = 0.2;
    spec
}

fn options_for(address: SocketAddr, token: Option<&Token>) -> ClientOptions {
    let mut options = ClientOptions::new(&address.ip().to_string(), address.port());
    options.token = token.cloned();
    options
}

fn normal_test(address: SocketAddr) {
    let outcome = run_test(&quick_spec(TestKind::TcpRr), &options_for(address, None)).unwrap();
    assert!(outcome.iterations[0].transactions.unwrap() > 0);
}

fn hello_frame() -> Frame {
    Frame::Hello {
        protocol: PROTOCOL_NAME.to_string(),
        version: PROTOCOL_VERSION,
    }
}

/// A control connection past its hello (no token).
fn session(address: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    write_frame(&mut stream, &hello_frame()).unwrap();
    let welcome = read_frame(&mut stream, Duration::from_secs(2)).unwrap();
    assert!(matches!(welcome, Frame::Welcome { .. }), "{welcome:?}");
    stream
}

fn ask(stream: &mut TcpStream, spec: RunSpec, data_ports: Option<PortRange>) -> Frame {
    write_frame(stream, &Frame::Test { spec, data_ports }).unwrap();
    read_frame(stream, Duration::from_secs(5)).unwrap()
}

/// Waits until the server closes `stream`; how long that took.
fn time_until_closed(stream: &mut TcpStream, started: Instant) -> Duration {
    stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut sink = [0u8; 4096];
    let give_up = Instant::now() + Duration::from_secs(20);
    while Instant::now() < give_up {
        match stream.read(&mut sink) {
            Ok(0) => break,
            Ok(_) => {}
            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
    }
    started.elapsed()
}

/// A data connection that opens with the test's secret.
fn data_connection(port: u16, secret: &str) -> TcpStream {
    let mut data = TcpStream::connect(("127.0.0.1", port)).unwrap();
    data.write_all(secret.as_bytes()).unwrap();
    data
}

/// Sends a byte every 200 ms on `data` until `stop` (at most 15 s).
fn trickle(mut data: TcpStream, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let give_up = Instant::now() + Duration::from_secs(15);
        while !stop.load(Ordering::Relaxed) && Instant::now() < give_up {
            if data.write_all(&[1]).is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    })
}

/// The test's own bound: length, I/O timeout and control timeout, with
/// room for a loaded machine; far below the 15 s a trickler goes on.
const BOUND: Duration = Duration::from_secs(6);

#[test]
fn a_trickler_after_tcp_maerts_ends_does_not_hold_its_slot() {
    let mut config = config();
    config.max_clients = 1;
    let server = start(config);
    let started = Instant::now();
    let mut control = session(server.address());
    let Frame::Ready {
        data_ports,
        data_secret,
    } = ask(&mut control, quick_spec(TestKind::TcpMaerts), None)
    else {
        panic!("expected ready");
    };
    let mut data = data_connection(data_ports[0], &data_secret);
    data.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut sink = vec![0u8; 1 << 16];
    while matches!(data.read(&mut sink), Ok(got) if got > 0) {}
    let stop = Arc::new(AtomicBool::new(false));
    let trickler = trickle(data, Arc::clone(&stop));
    let waited = time_until_closed(&mut control, started);
    stop.store(true, Ordering::Relaxed);
    trickler.join().unwrap();
    assert!(waited < BOUND, "the session held its slot for {waited:?}");
    normal_test(server.address());
}

#[test]
fn a_trickler_inside_a_tcp_rr_request_does_not_hold_its_slot() {
    let mut config = config();
    config.max_clients = 1;
    let server = start(config);
    let started = Instant::now();
    let mut control = session(server.address());
    let mut spec = quick_spec(TestKind::TcpRr);
    spec.request_size_bytes = 1000;
    let Frame::Ready {
        data_ports,
        data_secret,
    } = ask(&mut control, spec, None)
    else {
        panic!("expected ready");
    };
    let data = data_connection(data_ports[0], &data_secret);
    let stop = Arc::new(AtomicBool::new(false));
    let trickler = trickle(data, Arc::clone(&stop));
    let waited = time_until_closed(&mut control, started);
    stop.store(true, Ordering::Relaxed);
    trickler.join().unwrap();
    assert!(waited < BOUND, "the session held its slot for {waited:?}");
    normal_test(server.address());
}

#[test]
fn a_silent_tcp_rr_data_connection_does_not_hold_its_slot() {
    let mut config = config();
    config.max_clients = 1;
    let server = start(config);
    let started = Instant::now();
    let mut control = session(server.address());
    let Frame::Ready {
        data_ports,
        data_secret,
    } = ask(&mut control, quick_spec(TestKind::TcpRr), None)
    else {
        panic!("expected ready");
    };
    // The secret, then nothing at all: the server's receive, which has
    // no timeout, still ends at the hard deadline.
    let data = data_connection(data_ports[0], &data_secret);
    let waited = time_until_closed(&mut control, started);
    drop(data);
    assert!(waited < BOUND, "the session held its slot for {waited:?}");
    normal_test(server.address());
}

#[test]
fn a_udp_rr_client_that_goes_silent_does_not_hold_its_slot() {
    let mut config = config();
    config.max_clients = 1;
    let server = start(config);
    let started = Instant::now();
    let mut control = session(server.address());
    let Frame::Ready {
        data_ports,
        data_secret,
    } = ask(&mut control, quick_spec(TestKind::UdpRr), None)
    else {
        panic!("expected ready");
    };
    let data = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    data.connect(("127.0.0.1", data_ports[0])).unwrap();
    data.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    data.send(data_secret.as_bytes()).unwrap();
    // A few transactions, answered, then silence, and no word on the
    // control connection: the server's receive, which has no timeout,
    // ends at the hard deadline.
    let mut response = [0u8; 16];
    for _ in 0..3 {
        data.send(&[0]).unwrap();
        assert_eq!(data.recv(&mut response).unwrap(), 1);
    }
    let waited = time_until_closed(&mut control, started);
    assert!(waited < BOUND, "the session held its slot for {waited:?}");
    normal_test(server.address());
}

#[test]
fn a_trickler_after_a_tcp_crr_transaction_does_not_hold_its_slot() {
    let mut config = config();
    config.max_clients = 1;
    let server = start(config);
    let started = Instant::now();
    let mut control = session(server.address());
    let Frame::Ready {
        data_ports,
        data_secret,
    } = ask(&mut control, quick_spec(TestKind::TcpCrr), None)
    else {
        panic!("expected ready");
    };
    let mut data = TcpStream::connect(("127.0.0.1", data_ports[0])).unwrap();
    // TCP_CRR: the secret and the request in one write.
    let mut opening = data_secret.as_bytes().to_vec();
    opening.push(0);
    data.write_all(&opening).unwrap();
    let mut response = [0u8; 1];
    data.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    data.read_exact(&mut response).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let trickler = trickle(data, Arc::clone(&stop));
    let waited = time_until_closed(&mut control, started);
    stop.store(true, Ordering::Relaxed);
    trickler.join().unwrap();
    assert!(waited < BOUND, "the session held its slot for {waited:?}");
    normal_test(server.address());
}

#[test]
fn a_long_test_whose_data_connections_never_come_frees_its_slot() {
    let mut config = config();
    config.max_clients = 1;
    let server = start(config);
    let started = Instant::now();
    let mut control = session(server.address());
    let mut spec = quick_spec(TestKind::TcpStream);
    spec.duration_s = 3600.0;
    spec.warmup_s = 60.0;
    let frame = ask(&mut control, spec, None);
    assert!(matches!(frame, Frame::Ready { .. }), "{frame:?}");
    // Silent on both connections: the data side gives up after the I/O
    // timeout, and the client then has the control timeout to speak.
    let waited = time_until_closed(&mut control, started);
    assert!(waited < BOUND, "the session held its slot for {waited:?}");
    normal_test(server.address());
}

/// A connection from `source` (a loopback address) to `server`.
fn connect_from(source: Ipv4Addr, server: SocketAddr) -> Option<TcpStream> {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    socket
        .bind(&SocketAddr::V4(SocketAddrV4::new(source, 0)).into())
        .ok()?;
    socket
        .connect_timeout(&server.into(), Duration::from_secs(1))
        .ok()?;
    Some(TcpStream::from(socket))
}

#[test]
fn hello_only_floods_do_not_starve_authenticated_clients() {
    let dir = tempfile::tempdir().unwrap();
    let token_path = dir.path().join("token");
    std::fs::write(&token_path, "a secret shared by both ends\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&token_path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }
    let token = Token::from_file(&token_path).unwrap();
    let mut config = config();
    config.token = Some(token.clone());
    config.max_clients = 2;
    config.max_pre_auth = 8;
    config.pre_auth_timeout = Duration::from_secs(2);
    let server = start(config);
    let address = server.address();

    // 70 hello-only clients from 127.0.0.2-21, as in the attack that used
    // to hold every slot: each says hello, never authenticates, waits
    // until the server drops it and reconnects at once; for at most 6 s.
    let stop = Arc::new(AtomicBool::new(false));
    let flood: Vec<_> = (0..70u32)
        .map(|client_idx| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let source = Ipv4Addr::new(127, 0, 0, 2 + (client_idx % 20) as u8);
                let give_up = Instant::now() + Duration::from_secs(6);
                let mut n_connects = 0u32;
                while !stop.load(Ordering::Relaxed) && Instant::now() < give_up {
                    let Some(mut stream) = connect_from(source, address) else {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    };
                    n_connects += 1;
                    let _ = write_frame(&mut stream, &hello_frame());
                    let _ = stream.set_read_timeout(Some(Duration::from_millis(100)));
                    let mut sink = [0u8; 256];
                    while !stop.load(Ordering::Relaxed) && Instant::now() < give_up {
                        match stream.read(&mut sink) {
                            Ok(0) => break,
                            Ok(_) => {}
                            Err(err) if err.kind() == std::io::ErrorKind::WouldBlock => {}
                            Err(_) => break,
                        }
                    }
                }
                n_connects
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..3 {
        let outcome = run_test(
            &quick_spec(TestKind::TcpRr),
            &options_for(address, Some(&token)),
        );
        match outcome {
            Ok(outcome) => assert!(outcome.iterations[0].transactions.unwrap() > 0),
            Err(err) => {
                stop.store(true, Ordering::Relaxed);
                panic!("an authenticated client was not served: {err}");
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let n_connects: u32 = flood.into_iter().map(|client| client.join().unwrap()).sum();
    assert!(n_connects >= 70, "{n_connects}");
}

#[test]
fn memory_is_capped_per_test_and_in_all() {
    let mut config = config();
    config.max_test_memory = 1 << 20;
    config.max_total_memory = 3 << 19;
    let server = start(config);
    let mut control = session(server.address());
    let mut big = quick_spec(TestKind::TcpRr);
    big.flows = 128;
    big.request_size_bytes = 16 << 20;
    big.response_size_bytes = 16 << 20;
    let Frame::Error { message } = ask(&mut control, big, None) else {
        panic!("expected an error frame");
    };
    assert!(
        message.contains("4096.0 MiB of buffers, over the server's limit of 1.0 MiB per test")
            && message.contains("serve --max-test-memory"),
        "{message}"
    );
    // Two tests of 1 MiB at once: the second is over the 1.5 MiB total.
    let mut half = quick_spec(TestKind::TcpRr);
    half.request_size_bytes = 512 << 10;
    half.response_size_bytes = 512 << 10;
    half.duration_s = 3.0;
    let first = ask(&mut control, half.clone(), None);
    assert!(matches!(first, Frame::Ready { .. }), "{first:?}");
    let mut other = session(server.address());
    let Frame::Error { message } = ask(&mut other, half.clone(), None) else {
        panic!("expected an error frame");
    };
    assert!(message.contains("serve --max-total-memory"), "{message}");
    // The first test ends (its client goes away): its memory is given
    // back.
    drop(control);
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        half.duration_s = 0.2;
        match ask(&mut other, half.clone(), None) {
            Frame::Ready { .. } => break,
            Frame::Error { message } if Instant::now() < give_up => {
                assert!(message.contains("in all"), "{message}");
                std::thread::sleep(Duration::from_millis(100));
            }
            frame => panic!("{frame:?}"),
        }
    }
}

#[test]
fn a_client_cannot_ask_for_data_port_zero() {
    let server = start(config());
    let mut control = session(server.address());
    let frame = ask(
        &mut control,
        quick_spec(TestKind::TcpStream),
        Some(PortRange { low: 0, high: 0 }),
    );
    let Frame::Error { message } = frame else {
        panic!("expected an error frame, got {frame:?}");
    };
    assert!(message.contains("invalid data_ports 0-0"), "{message}");
    // The session goes on.
    let frame = ask(&mut control, quick_spec(TestKind::TcpStream), None);
    assert!(matches!(frame, Frame::Ready { .. }), "{frame:?}");
}

#[test]
fn a_stranger_on_the_data_port_cannot_take_a_flow() {
    // One data port, known in advance, as a firewall would have it.
    let port = free_port_below_ephemeral_range();
    let mut config = config();
    config.io_timeout = Duration::from_secs(2);
    config.data_ports = Some(PortRange {
        low: port,
        high: port,
    });
    let server = start(config);
    // A local process that connects to the data port (TCP) and sends
    // datagrams to it (UDP) as fast as it can, for at most 10 s.
    let stop = Arc::new(AtomicBool::new(false));
    let stranger = std::thread::spawn({
        let stop = Arc::clone(&stop);
        move || {
            let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            let give_up = Instant::now() + Duration::from_secs(10);
            let mut held = std::collections::VecDeque::new();
            let mut n_tries = 0u64;
            while !stop.load(Ordering::Relaxed) && Instant::now() < give_up {
                n_tries += 1;
                if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
                    let _ = stream.write_all(&[0x5a; 64]);
                    held.push_back(stream);
                    if held.len() > 4 {
                        held.pop_front();
                    }
                }
                let _ = udp.send_to(&[0x5a; 64], ("127.0.0.1", port));
            }
            n_tries
        }
    });
    for test in [
        TestKind::TcpStream,
        TestKind::TcpRr,
        TestKind::TcpCrr,
        TestKind::UdpStream,
        TestKind::UdpRr,
    ] {
        let mut options = options_for(server.address(), None);
        options.data_ports = Some(PortRange {
            low: port,
            high: port,
        });
        let outcome = run_test(&quick_spec(test), &options);
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(err) => {
                stop.store(true, Ordering::Relaxed);
                panic!("{test}: {err}");
            }
        };
        let iteration = &outcome.iterations[0];
        assert!(
            iteration.bytes_received > Some(0) || iteration.bytes_sent > Some(0),
            "{test}: {iteration:?}"
        );
    }
    stop.store(true, Ordering::Relaxed);
    assert!(stranger.join().unwrap() > 10);
}

/// A port free for TCP and UDP on 127.0.0.1 below the ephemeral range:
/// no connection of another test running beside this one (a TCP_CRR
/// client walks the ephemeral range port by port) can hold it.
fn free_port_below_ephemeral_range() -> u16 {
    let low = bench_core::sockets::ephemeral_ports().map_or(32768, |range| range.low);
    (1024..low)
        .rev()
        .find(|&port| {
            std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
                && std::net::UdpSocket::bind(("127.0.0.1", port)).is_ok()
        })
        .unwrap()
}
