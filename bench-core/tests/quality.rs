//! Measurement quality end to end over loopback: parallel flows and their
//! aggregate, CPU utilisation and service demand on both ends, latency
//! histograms, TCP_INFO, warm-up, interim reports, iterations driven by a
//! confidence request, and a flow failing mid-test.

use bench_core::client::data::{ClientPlan, run_client};
use bench_core::cpu;
use bench_core::datapath::{DataError, InterimFigures};
use bench_core::run::{BenchRequest, InterimReports, bench};
use run_record::record::{HostCpu, Iteration, RunRecord};
use run_record::spec::{ConfidenceSpec, RunSpec, TestKind};
use run_record::stats;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn run(test: TestKind, adjust: impl FnOnce(&mut RunSpec)) -> RunRecord {
    run_with(test, adjust, None)
}

fn run_with(
    test: TestKind,
    adjust: impl FnOnce(&mut RunSpec),
    interim: Option<InterimReports>,
) -> RunRecord {
    let mut spec = RunSpec::defaults(test);
    spec.duration_s = 0.25;
    adjust(&mut spec);
    let request = BenchRequest {
        spec,
        server: None,
        subject: Default::default(),
        testbed: "loopback".to_string(),
        interim,
    };
    let record = bench(&request).unwrap();
    let bytes = record.to_canonical_bytes().unwrap();
    assert_eq!(RunRecord::from_slice(&bytes).unwrap(), record);
    record
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= 1e-9 * expected.abs().max(1.0)
}

#[test]
fn aggregate_is_the_sum_of_the_flows() {
    let record = run(TestKind::TcpStream, |spec| {
        spec.flows = 4;
        spec.threads = Some(2);
    });
    let iteration = &record.iterations[0];
    assert_eq!(iteration.flows.len(), 4);
    let sum: f64 = iteration.flows.iter().map(|f| f.throughput_bps).sum();
    assert!(close(iteration.throughput_bps, sum));
    let bytes: u64 = iteration.flows.iter().map(|f| f.bytes_received).sum();
    assert_eq!(iteration.bytes_received, Some(bytes));
    let ends = iteration.ends.as_ref().unwrap();
    assert_eq!(ends.remote.bytes_received, bytes);
    // Each flow had its own connection, and every one of them moved data
    // in the common window.
    let mut ports: Vec<&str> = iteration
        .flows
        .iter()
        .map(|f| f.ends.local.socket.peer_address.as_str())
        .collect();
    ports.dedup();
    assert_eq!(ports.len(), 4);
    for flow in &iteration.flows {
        assert!(flow.bytes_received > 0, "{flow:?}");
        assert_eq!(flow.ends.local.bytes_sent, flow.ends.remote.bytes_received);
        // Within a common window of 0.25 s, give or take a loaded host.
        assert!(flow.elapsed_s > 0.2 && flow.elapsed_s < 0.6, "{flow:?}");
        assert!(flow.ends.local.tcp_info.is_some());
    }

    let record = run(TestKind::TcpRr, |spec| spec.flows = 3);
    let iteration = &record.iterations[0];
    let rates: f64 = iteration
        .flows
        .iter()
        .filter_map(|f| f.transaction_rate)
        .sum();
    assert!(close(iteration.transaction_rate.unwrap(), rates));
    let transactions: u64 = iteration.flows.iter().filter_map(|f| f.transactions).sum();
    assert_eq!(iteration.transactions, Some(transactions));
    // The latency histogram covers every flow's transactions.
    assert_eq!(
        iteration.latency_histogram.as_ref().unwrap().count,
        transactions
    );
}

#[test]
fn one_thread_drives_every_flow_of_a_stream_test() {
    for test in [TestKind::TcpStream, TestKind::TcpMaerts] {
        let record = run(test, |spec| {
            spec.flows = 3;
            spec.threads = Some(1);
        });
        let iteration = &record.iterations[0];
        assert_eq!(iteration.flows.len(), 3, "{test:?}");
        let sum: f64 = iteration.flows.iter().map(|f| f.throughput_bps).sum();
        assert!(close(iteration.throughput_bps, sum), "{test:?}");
        for flow in &iteration.flows {
            // Every flow carried traffic, and what one end sent the other
            // received.
            assert!(flow.bytes_received > 0, "{test:?} {flow:?}");
            let (sender, receiver) = if test == TestKind::TcpStream {
                (&flow.ends.local, &flow.ends.remote)
            } else {
                (&flow.ends.remote, &flow.ends.local)
            };
            assert_eq!(sender.bytes_sent, receiver.bytes_received, "{test:?}");
            assert!(flow.elapsed_s > 0.2 && flow.elapsed_s < 0.6, "{flow:?}");
        }
    }
}

#[test]
fn many_flows_on_few_threads_move_every_flows_data() {
    // Stream flows through each thread's epoll set; request/response
    // flows in turn on a thread, their receives watched by one watchdog
    // per thread.
    for (test, flows, threads) in [
        (TestKind::TcpStream, 12, 3),
        (TestKind::TcpRr, 4, 2),
        (TestKind::UdpRr, 4, 2),
    ] {
        let record = run(test, |spec| {
            spec.flows = flows;
            spec.threads = Some(threads);
        });
        let iteration = &record.iterations[0];
        assert_eq!(iteration.flows.len(), flows as usize, "{test:?}");
        for flow in &iteration.flows {
            assert!(flow.bytes_received > 0, "{test:?} {flow:?}");
            if test.is_request_response() {
                assert!(flow.transactions.unwrap() > 0, "{test:?} {flow:?}");
            } else {
                assert_eq!(
                    flow.ends.local.bytes_sent, flow.ends.remote.bytes_received,
                    "{test:?}"
                );
            }
        }
    }
}

#[test]
fn pinned_stream_flows_share_one_receiving_thread_and_all_move_data() {
    // Pinned to one CPU, the server receives every flow in one thread;
    // the client's senders take turns (a thread per flow) or share one
    // epoll thread. A warm-up is forgotten by each flow on its own, and
    // the receiving thread's CPU time is counted once.
    for (threads, warmup_s) in [(None, 0.0), (Some(1), 0.1)] {
        let record = run(TestKind::TcpStream, |spec| {
            spec.flows = 4;
            spec.threads = threads;
            spec.warmup_s = warmup_s;
            spec.cpu_pinning.local = Some(0);
            spec.cpu_pinning.remote = Some(0);
            spec.local_cpu = true;
            spec.remote_cpu = true;
        });
        let iteration = &record.iterations[0];
        assert_eq!(iteration.flows.len(), 4, "{threads:?}");
        let mut ports: Vec<&str> = iteration
            .flows
            .iter()
            .map(|f| f.ends.remote.socket.local_address.as_str())
            .collect();
        ports.sort_unstable();
        ports.dedup();
        assert_eq!(ports.len(), 4, "{threads:?}");
        for flow in &iteration.flows {
            assert!(flow.bytes_received > 0, "{threads:?} {flow:?}");
            assert!(flow.ends.local.bytes_sent > 0, "{threads:?} {flow:?}");
            // After a warm-up, each end starts counting on its own clock.
            if warmup_s == 0.0 {
                assert_eq!(
                    flow.ends.local.bytes_sent, flow.ends.remote.bytes_received,
                    "{threads:?}"
                );
            }
            assert!(flow.elapsed_s > 0.2 && flow.elapsed_s < 0.6, "{flow:?}");
            assert!(flow.ends.remote.tcp_info.is_some(), "{flow:?}");
        }
        check_cpu(&record, |iteration| iteration.throughput_bps / 8.0 / 1024.0);
    }
}

fn service_demand_by_formula(host: &HostCpu, units_per_s: f64) -> f64 {
    host.util_pct / 100.0 * f64::from(host.n_cpus) * 1e6 / units_per_s
}

fn check_host(host: &HostCpu) {
    assert!(host.window_s > 0.2 && host.window_s < 0.8, "{host:?}");
    assert!(host.util_pct > 0.0 && host.util_pct <= 100.0, "{host:?}");
    let parts = host.user_pct
        + host.nice_pct
        + host.system_pct
        + host.iowait_pct
        + host.irq_pct
        + host.softirq_pct
        + host.steal_pct;
    assert!((parts + host.idle_pct - 100.0).abs() < 1e-6, "{host:?}");
    assert!(
        host.process_user_s + host.process_system_s > 0.0,
        "{host:?}"
    );
    assert_eq!(host.n_cpus, cpu::n_cpus().unwrap());
}

fn check_cpu(record: &RunRecord, units_per_s: impl Fn(&Iteration) -> f64) {
    let iteration = &record.iterations[0];
    let figures = iteration.cpu.as_ref().unwrap();
    let detail = iteration.cpu_detail.as_ref().unwrap();
    let local = detail.local.as_ref().unwrap();
    let remote = detail.remote.as_ref().unwrap();
    check_host(local);
    check_host(remote);
    assert_eq!(figures.local_util_pct, Some(local.util_pct));
    assert_eq!(figures.remote_util_pct, Some(remote.util_pct));
    let rate = units_per_s(iteration);
    assert!(close(
        figures.local_service_demand.unwrap(),
        service_demand_by_formula(local, rate)
    ));
    assert!(close(
        figures.remote_service_demand.unwrap(),
        service_demand_by_formula(remote, rate)
    ));
    // One iteration: the summary's demand is the iteration's.
    let summary = record.summary.cpu.as_ref().unwrap();
    assert!(close(
        summary.local_service_demand.unwrap(),
        figures.local_service_demand.unwrap()
    ));
}

#[test]
fn service_demand_follows_the_recorded_utilisation_and_work() {
    let record = run(TestKind::TcpStream, |spec| {
        spec.local_cpu = true;
        spec.remote_cpu = true;
    });
    // Stream tests: microseconds per KB of payload.
    check_cpu(&record, |iteration| {
        iteration.bytes_received.unwrap() as f64 / 1024.0 / iteration.elapsed_s
    });
    // Several flows: once for all of them, over the aggregate.
    let record = run(TestKind::TcpStream, |spec| {
        spec.local_cpu = true;
        spec.remote_cpu = true;
        spec.flows = 2;
    });
    check_cpu(&record, |iteration| iteration.throughput_bps / 8.0 / 1024.0);

    let record = run(TestKind::TcpRr, |spec| {
        spec.local_cpu = true;
        spec.remote_cpu = true;
    });
    // Request/response tests: microseconds per transaction.
    check_cpu(&record, |iteration| iteration.transaction_rate.unwrap());
}

#[test]
fn latency_figures_come_from_the_recorded_histogram() {
    for test in [TestKind::TcpRr, TestKind::TcpCrr, TestKind::UdpRr] {
        let record = run(test, |_| {});
        let iteration = &record.iterations[0];
        let histogram = iteration.latency_histogram.as_ref().unwrap();
        histogram.check().unwrap();
        assert_eq!(Some(histogram.count), iteration.transactions);
        let latency = iteration.latency.as_ref().unwrap();
        let us = |ns: Option<u64>| ns.unwrap() as f64 / 1000.0;
        assert_eq!(latency.p50_us, us(histogram.percentile_ns(50.0)));
        assert_eq!(latency.p999_us, us(histogram.percentile_ns(99.9)));
        assert!(latency.min_us <= latency.p50_us && latency.p50_us <= latency.p90_us);
        assert!(latency.p90_us <= latency.p99_us && latency.p99_us <= latency.max_us);
        assert!(latency.mean_us >= latency.min_us && latency.mean_us <= latency.max_us);
        // The client's mean transaction time is the inverse of its rate,
        // give or take the loop's own time.
        let rate = iteration.transaction_rate.unwrap();
        let implied_us = 1e6 / rate;
        assert!(latency.mean_us <= implied_us * 1.05, "{test}: {latency:?}");
        let summary = record.summary.latency.as_ref().unwrap();
        assert_eq!(summary.p99_us, latency.p99_us);
        assert_eq!(record.summary.latency_histogram.as_ref(), Some(histogram));
    }
    let record = run(TestKind::TcpStream, |_| {});
    assert!(record.iterations[0].latency.is_none());
    assert!(record.summary.latency_histogram.is_none());
}

#[test]
fn warm_up_is_not_counted() {
    let started = Instant::now();
    let record = run(TestKind::TcpStream, |spec| {
        spec.duration_s = 0.2;
        spec.warmup_s = 0.15;
    });
    assert!(started.elapsed() >= Duration::from_millis(350));
    let iteration = &record.iterations[0];
    let ends = iteration.ends.as_ref().unwrap();
    // Counted: the 0.2 s after the warm-up, not the 0.35 s of traffic.
    assert!(ends.local.elapsed_s < 0.32, "{ends:?}");
    assert!(iteration.elapsed_s < 0.32, "{iteration:?}");
    // The receiver counted what the sender sent after the warm-up, within
    // what was in flight at its start.
    let sent = ends.local.bytes_sent as f64;
    let received = ends.remote.bytes_received as f64;
    assert!((received - sent).abs() < 0.2 * sent, "{sent} {received}");
    let info = ends.local.tcp_info.as_ref().unwrap();
    assert!(info.snd_mss > 0 && info.snd_cwnd > 0, "{info:?}");
    assert!(info.busy_time_us.is_some());
}

#[test]
fn interim_reports_arrive_while_the_test_runs() {
    let reports: Arc<Mutex<Vec<InterimFigures>>> = Arc::default();
    let sink = Arc::clone(&reports);
    let interim = InterimReports {
        every: Duration::from_millis(50),
        report: Arc::new(move |figures: &InterimFigures| {
            sink.lock().unwrap().push(*figures);
        }),
    };
    run_with(TestKind::TcpRr, |spec| spec.duration_s = 0.3, Some(interim));
    let reports = reports.lock().unwrap();
    assert!(reports.len() >= 3, "{reports:?}");
    for report in reports.iter() {
        assert!(report.interval_s > 0.0);
        assert!(report.transaction_rate.unwrap() > 0.0, "{report:?}");
    }
}

#[test]
fn iterations_follow_the_confidence_request() {
    let confidence = ConfidenceSpec {
        level_pct: 95,
        width_pct: 100.0,
    };
    let record = run(TestKind::TcpRr, |spec| {
        spec.duration_s = 0.1;
        spec.confidence = Some(confidence.clone());
        spec.iterations_max = 3;
        spec.iterations_min = 2;
    });
    // A third iteration ran only if the first two missed the width.
    let rates = record.samples(run_record::record::Metric::TransactionRate);
    let after_two = stats::confidence_outcome(&rates[..2], &confidence).unwrap();
    assert_eq!(record.iterations.len(), if after_two.met { 2 } else { 3 });
    let reached = record.summary.confidence.as_ref().unwrap();
    assert_eq!(reached.met, reached.width_pct <= 100.0, "{reached:?}");
    assert_eq!(reached.target_width_pct, 100.0);

    let record = run(TestKind::TcpRr, |spec| {
        spec.duration_s = 0.1;
        spec.confidence = Some(ConfidenceSpec {
            level_pct: 99,
            width_pct: 0.0001,
        });
        spec.iterations_max = 3;
        spec.iterations_min = 2;
    });
    assert_eq!(record.iterations.len(), 3);
    let reached = record.summary.confidence.as_ref().unwrap();
    assert!(!reached.met && reached.width_pct > 0.0001, "{reached:?}");
    assert_eq!(record.summary.n_iterations, 3);
}

#[test]
fn a_flow_failing_mid_test_fails_the_measurement() {
    flow_failing_mid_test(None);
}

#[test]
fn a_flow_failing_in_a_shared_thread_fails_the_measurement_and_is_named() {
    // One thread drives both flows through epoll: the error still names
    // the flow that failed, not the thread's first.
    flow_failing_mid_test(Some(1));
}

fn flow_failing_mid_test(threads: Option<u32>) {
    // Two stream receivers: one reads to the end, the other closes after
    // its first bytes, which the sender sees as a reset.
    let good = TcpListener::bind("127.0.0.1:0").unwrap();
    let bad = TcpListener::bind("127.0.0.1:0").unwrap();
    let servers = [good.local_addr().unwrap(), bad.local_addr().unwrap()];
    let good_thread = std::thread::spawn(move || {
        let (mut stream, _) = good.accept().unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(2)))
            .unwrap();
        let mut buffer = vec![0u8; 65_536];
        while matches!(stream.read(&mut buffer), Ok(got) if got > 0) {}
    });
    let bad_thread = std::thread::spawn(move || {
        let (mut stream, _) = bad.accept().unwrap();
        let mut buffer = [0u8; 1024];
        let _ = stream.read(&mut buffer);
        // Unread data at close makes the kernel send a reset.
        let _ = stream.write_all(b"x");
    });
    let mut spec = RunSpec::defaults(TestKind::TcpStream);
    spec.duration_s = 0.3;
    spec.flows = 2;
    spec.threads = threads;
    let plan = ClientPlan {
        spec: &spec,
        servers: &servers,
        io_timeout: Duration::from_secs(1),
        udp_rr_timeout: Duration::from_millis(5),
        interim: None,
        data_secret: b"0123456789abcdef",
    };
    let err = run_client(&plan).unwrap_err();
    good_thread.join().unwrap();
    bad_thread.join().unwrap();
    assert!(
        matches!(
            err,
            DataError::Flow {
                flow: 2,
                n_flows: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().starts_with("flow 2 of 2 failed: "), "{err}");
}
