//! Admission that numbers cannot beat: clients behind the address of
//! silent connections get in within their own timeout, the oldest
//! handshake makes room when places run out and is the one told so, and
//! silent connections on a data port do not starve the test's flows.
//! Every test bounds its own load in count and time.

use bench_core::auth::Token;
use bench_core::client::{ClientOptions, run_test};
use bench_core::protocol::{Frame, PROTOCOL_NAME, PROTOCOL_VERSION, read_frame, write_frame};
use bench_core::server::{EventSink, Server, ServerConfig, ServerEvent, ServerHandle};
use run_record::spec::{AddressFamily, RunSpec, TestKind};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

type Events = Arc<Mutex<Vec<ServerEvent>>>;

fn start(config: ServerConfig) -> (ServerHandle, Events) {
    let events: Events = Arc::default();
    let sink: EventSink = {
        let events = Arc::clone(&events);
        Arc::new(move |event: &ServerEvent| events.lock().unwrap().push(event.clone()))
    };
    (Server::bind(config, sink).unwrap().spawn().unwrap(), events)
}

fn quick_spec(test: TestKind) -> RunSpec {
    let mut spec = RunSpec::defaults(test);
    spec.duration_s = 0.2;
    spec
}

fn private_token(dir: &tempfile::TempDir) -> Token {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.path().join("token");
    std::fs::write(&path, "a secret shared by both ends\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    Token::from_file(&path).unwrap()
}

fn hello_frame() -> Frame {
    Frame::Hello {
        protocol: PROTOCOL_NAME.to_string(),
        version: PROTOCOL_VERSION,
    }
}

/// Waits (at most 10 s) until `count` events match `wanted`.
fn wait_for_events(events: &Events, count: usize, wanted: impl Fn(&ServerEvent) -> bool) {
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = events.lock().unwrap().iter().filter(|e| wanted(e)).count();
        if seen >= count {
            return;
        }
        assert!(Instant::now() < give_up, "{seen} of {count} events");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_client_behind_silent_connections_of_its_own_address_gets_in() {
    // Defaults but the token: a handshake has 5 s, a client waits 10 s
    // for each answer. Twenty connections from the client's own address
    // (127.0.0.1) say nothing, twenty more say hello and no more, as a
    // crowd behind one NAT or on one lab host would.
    let dir = tempfile::tempdir().unwrap();
    let token = private_token(&dir);
    let mut config = ServerConfig::loopback(AddressFamily::Ipv4);
    config.token = Some(token.clone());
    let (server, events) = start(config);
    let address = server.address();
    let mut crowd = Vec::new();
    for _ in 0..20 {
        crowd.push(TcpStream::connect(address).unwrap());
        let mut hello_only = TcpStream::connect(address).unwrap();
        write_frame(&mut hello_only, &hello_frame()).unwrap();
        crowd.push(hello_only);
    }
    wait_for_events(&events, 40, |event| {
        matches!(event, ServerEvent::Connected(_))
    });
    let mut options = ClientOptions::new("127.0.0.1", address.port());
    options.token = Some(token);
    for _ in 0..3 {
        let outcome = run_test(&quick_spec(TestKind::TcpRr), &options)
            .unwrap_or_else(|err| panic!("a client behind its address's crowd: {err}"));
        assert!(outcome.iterations[0].transactions.unwrap() > 0);
    }
    drop(crowd);
}

#[test]
fn the_oldest_handshake_makes_room_and_is_the_one_told() {
    // With a token, so that a client that has said hello stays in its
    // handshake.
    let dir = tempfile::tempdir().unwrap();
    let token = private_token(&dir);
    let mut config = ServerConfig::loopback(AddressFamily::Ipv4);
    config.token = Some(token.clone());
    config.max_pre_auth = 4;
    config.pre_auth_timeout = Duration::from_secs(20);
    let (server, events) = start(config);
    let address = server.address();
    let connected =
        |count: usize| wait_for_events(&events, count, |e| matches!(e, ServerEvent::Connected(_)));
    // Four places, taken one after the other; the first says hello last,
    // which changes nothing of their order.
    let mut first = TcpStream::connect(address).unwrap();
    connected(1);
    let second = TcpStream::connect(address).unwrap();
    let third = TcpStream::connect(address).unwrap();
    let fourth = TcpStream::connect(address).unwrap();
    connected(4);
    write_frame(&mut first, &hello_frame()).unwrap();
    let welcome = read_frame(&mut first, Duration::from_secs(5)).unwrap();
    assert!(matches!(welcome, Frame::Welcome { .. }), "{welcome:?}");
    // A fifth: the first, the oldest, makes room and is told why.
    let fifth = TcpStream::connect(address).unwrap();
    let message = match read_frame(&mut first, Duration::from_secs(5)) {
        Ok(Frame::Error { message }) => message,
        other => panic!("the oldest handshake was not told: {other:?}"),
    };
    assert!(
        message.starts_with("server busy:") && message.contains("to make room"),
        "{message}"
    );
    let mut rest = [0u8; 16];
    assert_eq!(first.read(&mut rest).unwrap_or(0), 0, "still open");
    let refused_peer = first.local_addr().unwrap();
    wait_for_events(&events, 1, |event| {
        matches!(event, ServerEvent::Refused { peer, reason }
            if *peer == refused_peer && reason.contains("to make room"))
    });
    // Nobody else was refused, and a client that answers promptly gets
    // in: room is made for it in turn.
    let refused: Vec<SocketAddr> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|event| match event {
            ServerEvent::Refused { peer, .. } => Some(*peer),
            _ => None,
        })
        .collect();
    assert_eq!(refused, [refused_peer]);
    let mut options = ClientOptions::new("127.0.0.1", address.port());
    options.token = Some(token);
    run_test(&quick_spec(TestKind::TcpRr), &options).unwrap();
    drop((second, third, fourth, fifth));
}

/// A control connection past its hello (no token).
fn session(address: SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(address).unwrap();
    write_frame(&mut stream, &hello_frame()).unwrap();
    let welcome = read_frame(&mut stream, Duration::from_secs(5)).unwrap();
    assert!(matches!(welcome, Frame::Welcome { .. }), "{welcome:?}");
    stream
}

#[test]
fn silent_connections_queued_before_a_flow_do_not_starve_it() {
    let mut config = ServerConfig::loopback(AddressFamily::Ipv4);
    config.io_timeout = Duration::from_secs(2);
    let (server, _) = start(config);
    let mut control = session(server.address());
    write_frame(
        &mut control,
        &Frame::Test {
            spec: quick_spec(TestKind::TcpRr),
            data_ports: None,
        },
    )
    .unwrap();
    let Frame::Ready {
        data_ports,
        data_secret,
    } = read_frame(&mut control, Duration::from_secs(5)).unwrap()
    else {
        panic!("expected ready");
    };
    // Ten connections from the client's own address reach the data port
    // first and say nothing; then the flow's own, whose requests must be
    // answered.
    let port = data_ports[0];
    let silent: Vec<TcpStream> = (0..10)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    let mut data = TcpStream::connect(("127.0.0.1", port)).unwrap();
    data.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut opening = data_secret.into_bytes();
    opening.push(0);
    data.write_all(&opening).unwrap();
    let mut response = [0u8; 1];
    // A hundred transactions, and nothing left unread at the close.
    let mut n_answered = 0;
    while data.read_exact(&mut response).is_ok() {
        n_answered += 1;
        if n_answered == 100 || data.write_all(&[0]).is_err() {
            break;
        }
    }
    drop(data);
    write_frame(&mut control, &Frame::Finished).unwrap();
    let results = read_frame(&mut control, Duration::from_secs(20)).unwrap();
    drop(silent);
    assert_eq!(n_answered, 100, "{results:?}");
    let Frame::Results { flows, .. } = results else {
        panic!("the flow did not run: {results:?}");
    };
    assert!(flows[0].transactions > Some(0), "{flows:?}");
}
