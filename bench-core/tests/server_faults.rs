//! The server against misbehaving clients: each fault is followed by a
//! normal test against the same server, which must succeed.

use bench_core::auth::Token;
use bench_core::client::{ClientError, ClientOptions, run_test};
use bench_core::protocol::{
    Frame, MAX_FRAME_BYTES, PROTOCOL_NAME, PROTOCOL_VERSION, read_frame, write_frame,
};
use bench_core::server::{EventSink, Server, ServerConfig, ServerError, ServerEvent, ServerHandle};
use run_record::spec::{AddressFamily, RunSpec, TestKind};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const CONTROL_TIMEOUT: Duration = Duration::from_millis(300);

type Events = Arc<Mutex<Vec<ServerEvent>>>;

fn start(config: ServerConfig) -> (ServerHandle, Events) {
    let events: Events = Arc::default();
    let sink: EventSink = {
        let events = Arc::clone(&events);
        Arc::new(move |event: &ServerEvent| events.lock().unwrap().push(event.clone()))
    };
    let handle = Server::bind(config, sink).unwrap().spawn().unwrap();
    (handle, events)
}

fn loopback_config() -> ServerConfig {
    let mut config = ServerConfig::loopback(AddressFamily::Ipv4);
    config.control_timeout = CONTROL_TIMEOUT;
    config.pre_auth_timeout = CONTROL_TIMEOUT;
    config.io_timeout = Duration::from_secs(2);
    config
}

fn quick_spec(test: TestKind) -> RunSpec {
    let mut spec = RunSpec::defaults(test);
    spec.duration_s = 0.2;
    spec
}

fn options_for(address: SocketAddr) -> ClientOptions {
    ClientOptions::new(&address.ip().to_string(), address.port())
}

/// A normal test against the server; panics when it fails.
fn normal_test(address: SocketAddr) {
    let outcome = run_test(&quick_spec(TestKind::TcpRr), &options_for(address)).unwrap();
    assert!(outcome.iterations[0].transactions.unwrap() > 0);
}

/// Waits until the server closes `stream`; returns how long that took.
fn time_until_closed(stream: &mut TcpStream) -> Duration {
    let start = Instant::now();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut sink = [0u8; 1024];
    loop {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return start.elapsed(),
            Ok(_) => {}
        }
    }
}

fn hello(stream: &mut TcpStream) {
    write_frame(
        stream,
        &Frame::Hello {
            protocol: PROTOCOL_NAME.to_string(),
            version: PROTOCOL_VERSION,
        },
    )
    .unwrap();
    let welcome = read_frame(stream, Duration::from_secs(2)).unwrap();
    assert!(
        matches!(
            welcome,
            Frame::Welcome {
                challenge: None,
                ..
            }
        ),
        "{welcome:?}"
    );
}

fn has_event(events: &Events, wanted: impl Fn(&ServerEvent) -> bool) -> bool {
    // Events of a dropped session arrive when its thread ends.
    let give_up = Instant::now() + Duration::from_secs(3);
    while Instant::now() < give_up {
        if events.lock().unwrap().iter().any(&wanted) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    false
}

#[test]
fn silent_client_is_dropped_after_the_timeout() {
    let (server, _) = start(loopback_config());
    let mut silent = TcpStream::connect(server.address()).unwrap();
    let waited = time_until_closed(&mut silent);
    assert!(
        waited >= CONTROL_TIMEOUT - Duration::from_millis(50),
        "{waited:?}"
    );
    assert!(waited < Duration::from_secs(3), "{waited:?}");
    normal_test(server.address());
}

#[test]
fn garbage_and_oversized_frames_are_dropped() {
    let (server, events) = start(loopback_config());
    let mut http = TcpStream::connect(server.address()).unwrap();
    http.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    time_until_closed(&mut http);

    let mut oversized = TcpStream::connect(server.address()).unwrap();
    oversized
        .write_all(&(MAX_FRAME_BYTES + 1).to_be_bytes())
        .unwrap();
    time_until_closed(&mut oversized);
    assert!(has_event(&events, |event| matches!(
        event,
        ServerEvent::Dropped { reason, .. } if reason.contains("exceeds the limit")
    )));

    let mut not_json = TcpStream::connect(server.address()).unwrap();
    let mut frame = 7u32.to_be_bytes().to_vec();
    frame.extend_from_slice(b"{nope}!");
    not_json.write_all(&frame).unwrap();
    time_until_closed(&mut not_json);
    normal_test(server.address());
}

#[test]
fn version_mismatch_names_both_versions() {
    let (server, events) = start(loopback_config());
    let mut stream = TcpStream::connect(server.address()).unwrap();
    write_frame(
        &mut stream,
        &Frame::Hello {
            protocol: PROTOCOL_NAME.to_string(),
            version: 99,
        },
    )
    .unwrap();
    let Frame::Error { message } = read_frame(&mut stream, Duration::from_secs(2)).unwrap() else {
        panic!("expected an error frame");
    };
    assert_eq!(
        message,
        "protocol version mismatch: client speaks 99, server speaks 3"
    );
    assert!(has_event(&events, |event| matches!(
        event,
        ServerEvent::Refused { .. }
    )));
    normal_test(server.address());
}

#[test]
fn client_names_both_versions_when_the_server_differs() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let fake = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let _ = read_frame(&mut stream, Duration::from_secs(2)).unwrap();
        write_frame(
            &mut stream,
            &Frame::Welcome {
                version: 7,
                challenge: None,
            },
        )
        .unwrap();
    });
    let err = run_test(&quick_spec(TestKind::TcpStream), &options_for(address)).unwrap_err();
    fake.join().unwrap();
    let message = err.to_string();
    assert!(matches!(err, ClientError::VersionMismatch { .. }));
    assert!(
        message.contains("client speaks 3") && message.contains("speaks 7"),
        "{message}"
    );
}

#[test]
fn bad_request_gets_an_error_frame_and_the_session_goes_on() {
    let (server, events) = start(loopback_config());
    let mut stream = TcpStream::connect(server.address()).unwrap();
    hello(&mut stream);
    let mut spec = quick_spec(TestKind::UdpStream);
    spec.send_size_bytes = 70_000;
    write_frame(
        &mut stream,
        &Frame::Test {
            spec,
            data_ports: None,
        },
    )
    .unwrap();
    let Frame::Error { message } = read_frame(&mut stream, Duration::from_secs(2)).unwrap() else {
        panic!("expected an error frame");
    };
    assert!(
        message.contains("send size (-m) must be between 1 and 65507"),
        "{message}"
    );
    assert!(has_event(&events, |event| matches!(
        event,
        ServerEvent::Rejected { .. }
    )));
    // The same session still serves a good request.
    write_frame(
        &mut stream,
        &Frame::Test {
            spec: quick_spec(TestKind::TcpStream),
            data_ports: None,
        },
    )
    .unwrap();
    let frame = read_frame(&mut stream, Duration::from_secs(2)).unwrap();
    assert!(matches!(frame, Frame::Ready { .. }), "{frame:?}");
    drop(stream);
    normal_test(server.address());
}

#[test]
fn client_vanishing_mid_test_is_dropped() {
    let (server, events) = start(loopback_config());
    let mut stream = TcpStream::connect(server.address()).unwrap();
    hello(&mut stream);
    let mut spec = quick_spec(TestKind::TcpStream);
    spec.duration_s = 0.5;
    write_frame(
        &mut stream,
        &Frame::Test {
            spec,
            data_ports: None,
        },
    )
    .unwrap();
    let Frame::Ready {
        data_ports,
        data_secret,
    } = read_frame(&mut stream, Duration::from_secs(2)).unwrap()
    else {
        panic!("expected ready");
    };
    let data_port = data_ports[0];
    let mut data = TcpStream::connect(("127.0.0.1", data_port)).unwrap();
    data.write_all(data_secret.as_bytes()).unwrap();
    data.write_all(&[0u8; 65_536]).unwrap();
    drop(data);
    drop(stream);
    assert!(has_event(&events, |event| matches!(
        event,
        ServerEvent::Dropped { .. }
    )));
    normal_test(server.address());
}

#[test]
fn many_concurrent_clients_are_served_independently() {
    let (server, events) = start(loopback_config());
    let address = server.address();
    let tests = [
        TestKind::TcpRr,
        TestKind::TcpStream,
        TestKind::UdpRr,
        TestKind::TcpCrr,
    ];
    let clients: Vec<_> = (0..12)
        .map(|index| {
            let test = tests[index % tests.len()];
            std::thread::spawn(move || run_test(&quick_spec(test), &options_for(address)))
        })
        .collect();
    // A silent client at the same time does not hold anyone up.
    let _silent = TcpStream::connect(address).unwrap();
    for client in clients {
        let outcome = client.join().unwrap().unwrap();
        assert_eq!(outcome.iterations.len(), 1);
    }
    // The server logs a test after its results are sent, so wait for it.
    let count_tested = || {
        events
            .lock()
            .unwrap()
            .iter()
            .filter(|event| matches!(event, ServerEvent::Tested { .. }))
            .count()
    };
    let give_up = Instant::now() + Duration::from_secs(3);
    while count_tested() < 12 && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(count_tested(), 12);
}

fn write_token(dir: &tempfile::TempDir, name: &str, text: &str) -> Token {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    Token::from_file(&path).unwrap()
}

#[test]
fn wildcard_listener_demands_the_token() {
    let wildcard: SocketAddr = "0.0.0.0:0".parse().unwrap();
    let mut config = ServerConfig::new(wildcard);
    config.control_timeout = CONTROL_TIMEOUT;
    let refused = Server::bind(config.clone(), bench_core::server::quiet());
    assert!(matches!(refused, Err(ServerError::TokenRequired(_))));
    config.no_auth = true;
    drop(Server::bind(config.clone(), bench_core::server::quiet()).unwrap());

    let dir = tempfile::tempdir().unwrap();
    config.no_auth = false;
    config.token = Some(write_token(
        &dir,
        "token",
        "a shared secret of enough length",
    ));
    let (server, events) = start(config);
    // The client reaches the wildcard listener through loopback only.
    let address = SocketAddr::from(([127, 0, 0, 1], server.address().port()));
    let spec = quick_spec(TestKind::TcpRr);

    let err = run_test(&spec, &options_for(address)).unwrap_err();
    assert!(matches!(err, ClientError::TokenRequired(_)), "{err}");
    assert!(has_event(&events, |event| matches!(
        event,
        ServerEvent::Refused { reason, .. } if reason.contains("no token")
    )));

    let mut wrong = options_for(address);
    wrong.token = Some(write_token(&dir, "wrong", "not the shared secret at all"));
    let err = run_test(&spec, &wrong).unwrap_err();
    assert!(err.to_string().contains("authentication failed"), "{err}");
    assert!(has_event(&events, |event| matches!(
        event,
        ServerEvent::Refused { reason, .. } if reason.contains("wrong token")
    )));

    let mut right = options_for(address);
    right.token = Some(write_token(
        &dir,
        "right",
        "a shared secret of enough length\n",
    ));
    let outcome = run_test(&spec, &right).unwrap();
    assert!(outcome.iterations[0].transactions.unwrap() > 0);
}

#[test]
fn unreachable_server_is_named_within_the_connect_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let start = Instant::now();
    let err = run_test(&quick_spec(TestKind::TcpStream), &options_for(address)).unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(
        err.to_string()
            .contains(&format!("127.0.0.1:{}", address.port())),
        "{err}"
    );
}

#[test]
fn bad_spec_fails_before_any_connection() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let address = listener.local_addr().unwrap();
    let mut spec = quick_spec(TestKind::TcpStream);
    spec.send_size_bytes = 0;
    let err = run_test(&spec, &options_for(address)).unwrap_err();
    assert!(matches!(err, ClientError::Spec(_)), "{err}");
    assert!(listener.accept().is_err(), "a connection was made");
}
