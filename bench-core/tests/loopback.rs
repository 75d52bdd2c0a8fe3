//! Every test kind end to end over loopback, IPv4 and IPv6 (where `::1`
//! exists): figures plausible and consistent between the two ends, the
//! measured time close to `-l`, socket-buffer truth recorded.

use bench_core::run::{BenchRequest, bench};
use run_record::record::{Iteration, RunRecord};
use run_record::spec::{AddressFamily, RunSpec, TestKind};
use std::time::Instant;

const DURATION_S: f64 = 0.25;

fn has_ipv6_loopback() -> bool {
    std::net::TcpListener::bind("[::1]:0").is_ok()
}

fn run(test: TestKind, family: AddressFamily, adjust: impl FnOnce(&mut RunSpec)) -> RunRecord {
    let mut spec = RunSpec::defaults(test);
    spec.family = family;
    spec.duration_s = DURATION_S;
    adjust(&mut spec);
    let request = BenchRequest {
        spec,
        server: None,
        subject: Default::default(),
        testbed: "loopback".to_string(),
        interim: None,
    };
    let started = Instant::now();
    let record = bench(&request).unwrap();
    let wall_s = started.elapsed().as_secs_f64();
    check_elapsed(&record, wall_s);
    // A sealed record reads back whole.
    let bytes = record.to_canonical_bytes().unwrap();
    assert_eq!(RunRecord::from_slice(&bytes).unwrap(), record);
    record
}

fn only_iteration(record: &RunRecord) -> &Iteration {
    assert_eq!(record.iterations.len(), 1);
    &record.iterations[0]
}

/// The counted time of a run that took `wall_s` seconds from the call to
/// the record: the run lasts its whole -l, and no end counts more time
/// than the run took. Each end counts from its own start, which a loaded
/// machine may delay past the common start; how far past the deadline it
/// lets a loop run is not a property of the code either. A loop that
/// ignored its deadline fails the run with an overrun at the hard
/// deadline instead.
fn check_elapsed(record: &RunRecord, wall_s: f64) {
    let iterations = record.iterations.len() as f64;
    assert!(
        wall_s >= record.spec.duration_s * iterations,
        "{iterations} iterations of {} s done in {wall_s} s",
        record.spec.duration_s
    );
    for iteration in &record.iterations {
        let ends = iteration.ends.as_ref().unwrap();
        for elapsed_s in [
            iteration.elapsed_s,
            ends.local.elapsed_s,
            ends.remote.elapsed_s,
        ] {
            assert!(
                elapsed_s > 0.0 && elapsed_s <= wall_s,
                "elapsed {elapsed_s} s in a run of {wall_s} s"
            );
        }
    }
}

fn loopback_ip(family: AddressFamily) -> &'static str {
    match family {
        AddressFamily::Ipv4 => "127.0.0.1",
        AddressFamily::Ipv6 => "::1",
    }
}

fn check_addresses(iteration: &Iteration, family: AddressFamily) {
    let ends = iteration.ends.as_ref().unwrap();
    let ip = loopback_ip(family);
    for address in [
        &ends.local.socket.local_address,
        &ends.local.socket.peer_address,
        &ends.remote.socket.local_address,
        &ends.remote.socket.peer_address,
    ] {
        let parsed: std::net::SocketAddr = address.parse().unwrap();
        assert_eq!(parsed.ip().to_string(), ip, "{address}");
    }
    assert_eq!(
        ends.local.socket.peer_address,
        ends.remote.socket.local_address
    );
}

fn families() -> Vec<AddressFamily> {
    let mut families = vec![AddressFamily::Ipv4];
    if has_ipv6_loopback() {
        families.push(AddressFamily::Ipv6);
    }
    families
}

#[test]
fn tcp_stream_counts_agree_and_buffers_are_recorded() {
    for family in families() {
        let record = run(TestKind::TcpStream, family, |spec| {
            spec.local_socket_buffer_bytes = Some(128 * 1024);
            spec.remote_socket_buffer_bytes = Some(256 * 1024);
        });
        let iteration = only_iteration(&record);
        let ends = iteration.ends.as_ref().unwrap();
        // How much a loaded machine lets through is not the point; that
        // data moved and both ends count the same is.
        assert!(iteration.bytes_sent.unwrap() > 0, "{iteration:?}");
        assert_eq!(ends.local.bytes_sent, ends.remote.bytes_received);
        assert_eq!(iteration.bytes_sent, iteration.bytes_received);
        assert_eq!(ends.local.messages_sent * 16 * 1024, ends.local.bytes_sent);
        let expected = 8.0 * iteration.bytes_received.unwrap() as f64 / iteration.elapsed_s;
        assert!((iteration.throughput_bps - expected).abs() < 1.0);
        assert_eq!(record.summary.throughput_bps.mean, iteration.throughput_bps);
        check_addresses(iteration, family);

        let local = &ends.local.socket;
        assert_eq!(local.send_buffer.requested_bytes, Some(128 * 1024));
        // Linux doubles the request (within wmem_max) and, with the size
        // locked, autotuning leaves it alone.
        assert!(local.send_buffer.after_setup_bytes >= 2 * 4096);
        assert_eq!(
            local.send_buffer.after_setup_bytes,
            local.send_buffer.at_end_bytes
        );
        let remote = &ends.remote.socket;
        assert_eq!(remote.recv_buffer.requested_bytes, Some(256 * 1024));
        assert!(remote.recv_buffer.after_setup_bytes > 0);
        assert!(record.env.remote.is_some());
        assert_eq!(record.endpoint.host, loopback_ip(family));
    }
}

#[test]
fn tcp_maerts_counts_agree() {
    for family in families() {
        let record = run(TestKind::TcpMaerts, family, |_| {});
        let iteration = only_iteration(&record);
        let ends = iteration.ends.as_ref().unwrap();
        assert!(ends.remote.bytes_sent > 0, "{iteration:?}");
        assert_eq!(ends.remote.bytes_sent, ends.local.bytes_received);
        // Left to autotuning, buffers carry no request.
        assert_eq!(ends.local.socket.recv_buffer.requested_bytes, None);
        check_addresses(iteration, family);
    }
}

fn check_request_response(record: &RunRecord, family: AddressFamily) {
    let iteration = only_iteration(record);
    let ends = iteration.ends.as_ref().unwrap();
    let transactions = iteration.transactions.unwrap();
    assert!(transactions > 0, "{iteration:?}");
    // One transaction at a time, timed from its request to its response:
    // together they fit in the counted time, however few a loaded machine
    // allows.
    if let Some(latency) = &iteration.latency {
        let busy_us = latency.mean_us * transactions as f64;
        assert!(
            busy_us <= iteration.elapsed_s * 1e6 * (1.0 + 1e-9),
            "{transactions} transactions of {} us on average in {} s",
            latency.mean_us,
            iteration.elapsed_s
        );
    }
    assert_eq!(ends.local.transactions, Some(transactions));
    let rate = iteration.transaction_rate.unwrap();
    assert!((rate - transactions as f64 / iteration.elapsed_s).abs() < 1e-6);
    assert_eq!(record.summary.transaction_rate.as_ref().unwrap().mean, rate);
    // Every request is sent whole. Over UDP a request whose response was
    // late (a loaded machine) or lost is sent but not a transaction.
    let requests = if record.spec.test == TestKind::UdpRr {
        ends.local.messages_sent
    } else {
        transactions
    };
    assert_eq!(
        ends.local.bytes_sent,
        requests * u64::from(record.spec.request_size_bytes)
    );
    check_addresses(iteration, family);
}

#[test]
fn tcp_rr_and_crr_count_the_same_transactions_at_both_ends() {
    for family in families() {
        let record = run(TestKind::TcpRr, family, |spec| {
            spec.request_size_bytes = 64;
            spec.response_size_bytes = 1024;
            spec.nodelay = true;
        });
        check_request_response(&record, family);
        let ends = record.iterations[0].ends.as_ref().unwrap();
        assert_eq!(ends.remote.transactions, ends.local.transactions);
        assert_eq!(ends.remote.bytes_sent, ends.local.bytes_received);

        let record = run(TestKind::TcpCrr, family, |_| {});
        check_request_response(&record, family);
        let ends = record.iterations[0].ends.as_ref().unwrap();
        assert_eq!(ends.remote.transactions, ends.local.transactions);
    }
}

#[test]
fn udp_stream_reports_sent_received_and_loss() {
    for family in families() {
        let record = run(TestKind::UdpStream, family, |spec| {
            spec.remote_socket_buffer_bytes = Some(4 * 1024 * 1024);
        });
        let iteration = only_iteration(&record);
        let ends = iteration.ends.as_ref().unwrap();
        assert!(ends.local.messages_sent > 0, "{iteration:?}");
        assert!(ends.remote.messages_received > 0);
        assert!(ends.remote.messages_received <= ends.local.messages_sent);
        assert_eq!(
            ends.remote.bytes_received,
            ends.remote.messages_received * 1472
        );
        let udp = record.summary.udp.as_ref().unwrap();
        assert_eq!(udp.messages_sent, ends.local.messages_sent);
        assert_eq!(udp.messages_received, ends.remote.messages_received);
        let lost = (udp.messages_sent - udp.messages_received) as f64;
        assert!((udp.loss_pct - 100.0 * lost / udp.messages_sent as f64).abs() < 1e-9);
        let expected = 8.0 * ends.remote.bytes_received as f64 / iteration.elapsed_s;
        assert!((iteration.throughput_bps - expected).abs() < 1.0);
        check_addresses(iteration, family);
    }
}

#[test]
fn udp_rr_counts_transactions() {
    for family in families() {
        let record = run(TestKind::UdpRr, family, |_| {});
        check_request_response(&record, family);
        let iteration = &record.iterations[0];
        let ends = iteration.ends.as_ref().unwrap();
        let lost = iteration.lost_transactions.unwrap();
        assert_eq!(
            ends.local.messages_sent,
            ends.local.transactions.unwrap() + lost
        );
        assert!(ends.remote.transactions.unwrap() >= ends.local.transactions.unwrap());
    }
}

#[test]
fn pinned_run_records_its_pinning() {
    let record = run(TestKind::TcpRr, AddressFamily::Ipv4, |spec| {
        spec.cpu_pinning.local = Some(0);
        spec.cpu_pinning.remote = Some(0);
    });
    assert_eq!(record.spec.cpu_pinning.local, Some(0));
    check_request_response(&record, AddressFamily::Ipv4);
}

#[test]
fn udp_rr_counts_lost_datagrams_instead_of_stalling() {
    use bench_core::client::data::{ClientPlan, run_client};
    use std::net::UdpSocket;
    use std::time::Duration;

    const SECRET: &[u8] = b"0123456789abcdef";
    const IO_TIMEOUT: Duration = Duration::from_secs(5);
    // Long enough for a loaded machine to run a few steps of the client.
    const RUN_S: f64 = 1.0;
    // An echo that drops every other request, the first included, until
    // the client is done (or a minute has passed).
    let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
    echo.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let server = echo.local_addr().unwrap();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let echo_done = done.clone();
    let echo_thread = std::thread::spawn(move || {
        let give_up = Instant::now() + Duration::from_secs(60);
        let mut buffer = [0u8; 64];
        let mut n_requests = 0u64;
        while Instant::now() < give_up && !echo_done.load(std::sync::atomic::Ordering::Relaxed) {
            if let Ok((got, peer)) = echo.recv_from(&mut buffer) {
                // The datagrams that open the flow are not requests.
                if &buffer[..got] == SECRET {
                    continue;
                }
                n_requests += 1;
                if n_requests.is_multiple_of(2) {
                    echo.send_to(&buffer[..1], peer).unwrap();
                }
            }
        }
    });
    let mut spec = RunSpec::defaults(TestKind::UdpRr);
    spec.duration_s = RUN_S;
    let servers = [server];
    let plan = ClientPlan {
        spec: &spec,
        servers: &servers,
        io_timeout: IO_TIMEOUT,
        udp_rr_timeout: Duration::from_millis(5),
        interim: None,
        data_secret: SECRET,
    };
    let end = run_client(&plan).unwrap().flows.remove(0);
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    echo_thread.join().unwrap();
    let transactions = end.transactions.unwrap();
    let timeouts = end.timeouts.unwrap();
    // The first request was lost and counted; the client went on and
    // was answered. At most every other request had a response, however
    // late one came.
    assert!(timeouts > 0 && transactions > 0, "{end:?}");
    assert!(transactions <= timeouts, "{end:?}");
    assert_eq!(end.messages_sent, transactions + timeouts);
    // Requests that went unanswered were sent all the same.
    assert_eq!(
        end.bytes_sent,
        end.messages_sent * u64::from(spec.request_size_bytes)
    );
    // A lost datagram costs the UDP_RR timeout, never the I/O timeout: a
    // client that waited for the latter would take longer than it.
    assert!(
        end.elapsed_s > 0.0 && end.elapsed_s < IO_TIMEOUT.as_secs_f64(),
        "{end:?}"
    );
}

/// A TCP_RR server that answers a few requests, then holds the connection
/// open and says nothing: the client, which receives without a timeout,
/// still stops at its hard deadline (the test's end plus the I/O timeout).
#[test]
fn tcp_rr_client_stops_at_its_hard_deadline_when_the_server_goes_silent() {
    use bench_core::client::data::{ClientPlan, run_client};
    use bench_core::datapath::DataError;
    use std::io::{Read, Write};
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    const SECRET: &[u8] = b"0123456789abcdef";
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = listener.local_addr().unwrap();
    let server_thread = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut secret = [0u8; SECRET.len()];
        stream.read_exact(&mut secret).unwrap();
        let mut request = [0u8; 1];
        for _ in 0..5 {
            stream.read_exact(&mut request).unwrap();
            stream.write_all(b"r").unwrap();
        }
        // Silent, connection open, until the client gives up.
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut rest = [0u8; 64];
        while matches!(stream.read(&mut rest), Ok(got) if got > 0) {}
    });
    let mut spec = RunSpec::defaults(TestKind::TcpRr);
    spec.duration_s = DURATION_S;
    let servers = [server];
    let io_timeout = Duration::from_millis(300);
    let plan = ClientPlan {
        spec: &spec,
        servers: &servers,
        io_timeout,
        udp_rr_timeout: Duration::from_millis(5),
        interim: None,
        data_secret: SECRET,
    };
    let started = Instant::now();
    let err = run_client(&plan).unwrap_err();
    let took = started.elapsed();
    server_thread.join().unwrap();
    assert!(matches!(err, DataError::Overrun), "{err}");
    // Bounded: the window and the I/O timeout, with room for a loaded
    // machine, never the server's five seconds.
    assert!(took < Duration::from_secs(4), "{took:?}");
}
