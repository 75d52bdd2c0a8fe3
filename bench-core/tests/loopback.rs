//! Every test kind end to end over loopback, IPv4 and IPv6 (where `::1`
//! exists): figures plausible and consistent between the two ends, the
//! measured time close to `-l`, socket-buffer truth recorded.

use bench_core::record::{Iteration, RunRecord};
use bench_core::run::{BenchRequest, bench};
use bench_core::spec::{AddressFamily, RunSpec, TestKind};

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
    let record = bench(&request).unwrap();
    // A sealed record reads back whole.
    let bytes = record.to_canonical_bytes().unwrap();
    assert_eq!(RunRecord::from_slice(&bytes).unwrap(), record);
    record
}

fn only_iteration(record: &RunRecord) -> &Iteration {
    assert_eq!(record.iterations.len(), 1);
    &record.iterations[0]
}

fn assert_elapsed_close(elapsed_s: f64) {
    // A test ends within 100 ms of its deadline, whatever else the two
    // cores of a test machine are doing (the rest of this suite, in
    // parallel); a loop that ignored its deadline would miss by far more.
    assert!(
        (elapsed_s - DURATION_S).abs() <= 0.1,
        "elapsed {elapsed_s} s, asked for {DURATION_S} s"
    );
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
        assert!(iteration.bytes_sent.unwrap() > 1_000_000, "{iteration:?}");
        assert_eq!(ends.local.bytes_sent, ends.remote.bytes_received);
        assert_eq!(iteration.bytes_sent, iteration.bytes_received);
        assert_eq!(ends.local.messages_sent * 16 * 1024, ends.local.bytes_sent);
        assert_elapsed_close(iteration.elapsed_s);
        assert_elapsed_close(ends.local.elapsed_s);
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
        assert!(ends.remote.bytes_sent > 1_000_000);
        assert_eq!(ends.remote.bytes_sent, ends.local.bytes_received);
        assert_elapsed_close(iteration.elapsed_s);
        assert_elapsed_close(ends.remote.elapsed_s);
        // Left to autotuning, buffers carry no request.
        assert_eq!(ends.local.socket.recv_buffer.requested_bytes, None);
        check_addresses(iteration, family);
    }
}

fn check_request_response(record: &RunRecord, family: AddressFamily) {
    let iteration = only_iteration(record);
    let ends = iteration.ends.as_ref().unwrap();
    let transactions = iteration.transactions.unwrap();
    assert!(transactions > 100, "{iteration:?}");
    assert_eq!(ends.local.transactions, Some(transactions));
    assert_elapsed_close(iteration.elapsed_s);
    let rate = iteration.transaction_rate.unwrap();
    assert!((rate - transactions as f64 / iteration.elapsed_s).abs() < 1e-6);
    assert_eq!(record.summary.transaction_rate.as_ref().unwrap().mean, rate);
    assert_eq!(
        ends.local.bytes_sent,
        transactions * u64::from(record.spec.request_size_bytes)
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
        assert!(ends.local.messages_sent > 1000);
        assert!(ends.remote.messages_received > 0);
        assert!(ends.remote.messages_received <= ends.local.messages_sent);
        assert_eq!(
            ends.remote.bytes_received,
            ends.remote.messages_received * 1472
        );
        assert_elapsed_close(iteration.elapsed_s);
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
    use bench_core::datapath::{ClientPlan, run_client};
    use std::net::UdpSocket;
    use std::time::{Duration, Instant};

    const SECRET: &[u8] = b"0123456789abcdef";
    // An echo that drops every tenth request, for one second at most.
    let echo = UdpSocket::bind("127.0.0.1:0").unwrap();
    echo.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let server = echo.local_addr().unwrap();
    let echo_thread = std::thread::spawn(move || {
        let give_up = Instant::now() + Duration::from_secs(1);
        let mut buffer = [0u8; 64];
        let mut n_requests = 0u64;
        while Instant::now() < give_up {
            if let Ok((got, peer)) = echo.recv_from(&mut buffer) {
                // The datagrams that open the flow are not requests.
                if &buffer[..got] == SECRET {
                    continue;
                }
                n_requests += 1;
                if !n_requests.is_multiple_of(10) {
                    echo.send_to(&buffer[..1], peer).unwrap();
                }
            }
        }
    });
    let mut spec = RunSpec::defaults(TestKind::UdpRr);
    spec.duration_s = DURATION_S;
    let servers = [server];
    let plan = ClientPlan {
        spec: &spec,
        servers: &servers,
        io_timeout: Duration::from_secs(1),
        udp_rr_timeout: Duration::from_millis(5),
        interim: None,
        data_secret: SECRET,
    };
    let end = run_client(&plan).unwrap().flows.remove(0);
    echo_thread.join().unwrap();
    let transactions = end.transactions.unwrap();
    let timeouts = end.timeouts.unwrap();
    assert!(transactions > 10, "{end:?}");
    assert!(timeouts > 0, "{end:?}");
    assert_eq!(end.messages_sent, transactions + timeouts);
    assert_elapsed_close(end.elapsed_s);
}
