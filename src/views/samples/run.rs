//! Samples of `run`: each test kind as a loopback run makes it (TCP_RR
//! and TCP_STREAM plain, and TCP_STREAM's autotuned buffers as `archive
//! show` prints them; TCP_RR with CPU figures and latency, and with
//! figures too wide for one line, both ends in one guest; TCP_STREAM
//! with a setting the kernel did not grant; TCP_CRR
//! with flows, threads, warm-up and an interval reached; TCP_STREAM with
//! flows and an interval missed; UDP_STREAM plain, with CPU figures,
//! with failed sends), and a UDP_STREAM run imported from netperf's text.
//!
//! Each record keeps the id its sample has always shown, so that the
//! pinned text stays the same: only the fields the template reads are
//! built, so the id is not that of these contents.

use super::Sample;
use crate::views::run::RunContext;
use crate::views::units::Units;
use run_record::record::{
    BufferTruth, ConfidenceOutcome, CpuConfidence, CpuDetail, CpuFigures, EndReport, EndsReport,
    FlowFigures, HostCpu, Iteration, LatencyFigures, LatencyHistogram, RunRecord, SocketTruth,
    Subject, Summary, TcpInfoFigures, UdpFigures,
};
use run_record::spec::{ConfidenceSpec, RunSpec, TestKind};
use test_fixtures::record::RecordBuilder;

/// One end of a connection on loopback, from `port` to `peer_port`, its
/// socket buffers (send, receive) as they were after setup and when the
/// test ended (the same: buffers that were not autotuned).
fn end(port: u16, peer_port: u16, buffers: [u64; 2]) -> EndReport {
    let buffer = |bytes: u64| BufferTruth {
        after_setup_bytes: bytes,
        at_end_bytes: bytes,
        ..BufferTruth::default()
    };
    EndReport {
        socket: SocketTruth {
            local_address: format!("127.0.0.1:{port}"),
            peer_address: format!("127.0.0.1:{peer_port}"),
            send_buffer: buffer(buffers[0]),
            recv_buffer: buffer(buffers[1]),
        },
        ..EndReport::default()
    }
}

/// The two ends of a connection from `ports[0]` to `ports[1]`, with
/// their socket buffers (send, receive).
fn connection(ports: [u16; 2], local: [u64; 2], remote: [u64; 2]) -> EndsReport {
    EndsReport {
        local: end(ports[0], ports[1], local),
        remote: end(ports[1], ports[0], remote),
    }
}

/// A host's CPU over an iteration: utilisation, user, nice, system,
/// irq, softirq, iowait and steal in percent, and the seconds of the
/// tool's data threads (user, system).
fn host_cpu(pct: [f64; 8], process_s: [f64; 2]) -> HostCpu {
    HostCpu {
        n_cpus: 2,
        util_pct: pct[0],
        user_pct: pct[1],
        nice_pct: pct[2],
        system_pct: pct[3],
        irq_pct: pct[4],
        softirq_pct: pct[5],
        iowait_pct: pct[6],
        steal_pct: pct[7],
        idle_pct: 100.0 - pct[0],
        process_user_s: process_s[0],
        process_system_s: process_s[1],
        ..HostCpu::default()
    }
}

/// An interval at `level_pct`, `width_pct` wide of `target_width_pct`.
fn confidence(level_pct: u32, width_pct: f64, target_width_pct: f64) -> ConfidenceOutcome {
    ConfidenceOutcome {
        level_pct,
        low: 0.0,
        high: 0.0,
        width_pct,
        target_width_pct,
        met: width_pct <= target_width_pct,
    }
}

/// Latency figures, microseconds: min, p50, p90, p99, p99.9, max, then
/// the mean and the standard deviation.
fn latency(figures: [f64; 8]) -> LatencyFigures {
    LatencyFigures {
        min_us: figures[0],
        p50_us: figures[1],
        p90_us: figures[2],
        p99_us: figures[3],
        p999_us: figures[4],
        max_us: figures[5],
        mean_us: figures[6],
        stddev_us: figures[7],
    }
}

/// Iterations carrying their time and figures, the rest to fill in.
fn iteration(elapsed_s: f64, throughput_bps: f64, transaction_rate: Option<f64>) -> Iteration {
    Iteration {
        elapsed_s,
        throughput_bps,
        transaction_rate,
        ..Iteration::default()
    }
}

/// A run of `spec` by netbisect 0.1.0 on loopback, of `subject`, whose
/// summary is computed from `iterations` and then changed by `summary`,
/// shown with `id`.
fn loopback_run(
    spec: RunSpec,
    subject: Subject,
    iterations: Vec<Iteration>,
    summary: impl FnOnce(&mut Summary) + 'static,
    id: &str,
) -> RunRecord {
    let mut record = RecordBuilder::new(spec.test)
        .spec(spec)
        .tool_version("0.1.0")
        .testbed("loopback")
        .subject(subject)
        .iterations(iterations)
        .summary_with(summary)
        .build();
    record.id = id.into();
    record
}

/// A patched kernel at commit 0123456789ab.
fn patched() -> Subject {
    Subject {
        commit: Some("0123456789abcdef0123456789abcdef01234567".into()),
        label: Some("patched".into()),
        kernel_release: Some("6.18.44-fc-v595".into()),
        ..Subject::default()
    }
}

/// A kernel at commit abcdef123456, without a label.
fn unlabelled() -> Subject {
    Subject {
        commit: Some("abcdef1234567890".into()),
        label: None,
        ..patched()
    }
}

/// `test`'s defaults for 0.2 s.
fn spec(test: TestKind) -> RunSpec {
    RunSpec {
        duration_s: 0.2,
        ..RunSpec::defaults(test)
    }
}

fn tcp_stream() -> RunRecord {
    let mut run = iteration(0.200554912, 18567915165.29897, None);
    run.messages_sent = Some(28411);
    run.messages_received = Some(3569);
    run.ends = Some(connection(
        [52320, 40025],
        [4194304, 131072],
        [4194304, 2064869],
    ));
    loopback_run(
        spec(TestKind::TcpStream),
        patched(),
        vec![run],
        |_| {},
        "52292c22c8d4f9f7a3af2024edcfb0b54545b160cbfba42f926aa936751fb869",
    )
}

/// TCP_STREAM as `archive show` prints it, its buffers left to
/// autotuning: netperf's sizes after setup in the table, the larger ones
/// the kernel had grown them to by the end under it.
fn tcp_stream_autotuned() -> RunRecord {
    let mut record = tcp_stream();
    let ends = record.iterations[0]
        .ends
        .as_mut()
        .expect("the sample has its ends");
    for (buffer, after_setup) in [
        (&mut ends.local.socket.send_buffer, 16384),
        (&mut ends.local.socket.recv_buffer, 131072),
        (&mut ends.remote.socket.send_buffer, 16384),
        (&mut ends.remote.socket.recv_buffer, 131072),
    ] {
        buffer.after_setup_bytes = after_setup;
    }
    record
}

fn tcp_rr() -> RunRecord {
    let mut run = iteration(0.20001041, 983788.793793283, Some(61486.79961208019));
    run.messages_sent = Some(24596);
    run.messages_received = Some(24596);
    run.ends = Some(connection(
        [46206, 39065],
        [4194304, 131072],
        [4194304, 131072],
    ));
    loopback_run(
        spec(TestKind::TcpRr),
        patched(),
        vec![run],
        |_| {},
        "efcaf97915273aad2f84f40833e4a526d46681c06c7ab80929461b9e9b3e2312",
    )
}

fn tcp_rr_cpu_latency() -> RunRecord {
    let demand = 33.57988557642599;
    let util = 97.43589743589743;
    let cpu = CpuFigures {
        local_util_pct: Some(util),
        remote_util_pct: Some(util),
        local_service_demand: Some(demand),
        remote_service_demand: Some(demand),
    };
    let figures = latency([
        13.36,
        13.951,
        17.663,
        45.055,
        104.447,
        4151.17,
        17.231252714113324,
        73.55529869927811,
    ]);
    let pct = [
        util,
        38.46153846153846,
        0.0,
        28.205128205128204,
        0.0,
        17.94871794871795,
        12.820512820512821,
        0.0,
    ];
    let mut run = iteration(0.199992078, 59425073.8271743, Some(58032.2986593499));
    run.cpu = Some(cpu.clone());
    run.latency = Some(figures.clone());
    run.ends = Some(connection(
        [60636, 41401],
        [4194304, 278748],
        [4194304, 277956],
    ));
    run.cpu_detail = Some(CpuDetail {
        local: Some(host_cpu(pct, [0.008417, 0.084171])),
        remote: Some(host_cpu(pct, [0.011903, 0.079545])),
    });
    let spec = RunSpec {
        local_cpu: true,
        remote_cpu: true,
        request_size_bytes: 64,
        response_size_bytes: 64,
        ..spec(TestKind::TcpRr)
    };
    loopback_run(
        spec,
        unlabelled(),
        vec![run],
        move |summary| {
            summary.cpu = Some(cpu);
            summary.latency = Some(figures);
            summary.latency_histogram = Some(LatencyHistogram {
                sub_buckets: 64,
                count: 11606,
                min_ns: 13360,
                max_ns: 4151170,
                buckets: Vec::new(),
            });
        },
        "ac1544b9f9e5d4df28dd0cff1490ef6a603dc3baa09759fe27a1763db7a42c6d",
    )
}

/// TCP_RR as a guest under emulation gives it: 9-digit socket buffers
/// and a service demand of five digits, so that the CPU columns pass the
/// width beside the rest and move to a table of their own.
fn tcp_rr_cpu_wide() -> RunRecord {
    let mut record = tcp_rr_cpu_latency();
    let cpu = CpuFigures {
        local_util_pct: Some(100.0),
        remote_util_pct: Some(100.0),
        local_service_demand: Some(98765.432),
        remote_service_demand: Some(87654.321),
    };
    record.summary.cpu = Some(cpu.clone());
    let run = &mut record.iterations[0];
    run.cpu = Some(cpu);
    run.ends = Some(connection(
        [60636, 41401],
        [12582912, 268435456],
        [12582912, 268435456],
    ));
    // Both ends in one guest, whose CPU both columns are.
    record.env.vm = Some(run_record::env::VmEnv {
        runner: "qemu".to_string(),
        accelerator: "tcg".to_string(),
        vcpus: 2,
        memory_mib: 1024,
        network: "pair".to_string(),
        ..run_record::env::VmEnv::default()
    });
    record
}

/// TCP_STREAM with settings asked of the system, one of which the
/// kernel did not grant: it is named with what the kernel kept.
fn tcp_stream_setting_not_granted() -> RunRecord {
    let mut record = tcp_stream();
    let mut system = run_record::spec::SystemSettings::default();
    for setting in ["sg=off", "gso=on"] {
        system.set(run_record::spec::Setting::parse(setting).expect("a valid setting"));
    }
    record.spec.system = Some(system);
    let mut outcome = run_record::record::SystemOutcome {
        interface: "lo".to_string(),
        ..run_record::record::SystemOutcome::default()
    };
    for (name, requested, granted) in [("sg", false, false), ("gso", true, false)] {
        outcome.features.insert(
            name.to_string(),
            run_record::record::Granted { requested, granted },
        );
    }
    record.system = Some(outcome);
    record
}

/// A flow of an iteration, with the sender's TCP_INFO where it matters.
fn flow(elapsed_s: f64, throughput_bps: f64, transaction_rate: Option<f64>) -> FlowFigures {
    FlowFigures {
        elapsed_s,
        throughput_bps,
        transaction_rate,
        ..FlowFigures::default()
    }
}

fn tcp_crr_flows_warmup() -> RunRecord {
    let first = iteration(0.099979069, 436899.9442902268, Some(27306.246518139174));
    let mut last = iteration(0.100309518, 426519.1074708073, Some(26657.444216925458));
    last.ends = Some(connection(
        [45972, 45245],
        [4194304, 131072],
        [4194304, 131072],
    ));
    last.cpu_detail = Some(CpuDetail {
        local: Some(host_cpu(
            [100.0, 5.0, 0.0, 70.0, 0.0, 25.0, 0.0, 0.0],
            [0.003089, 0.104801],
        )),
        remote: None,
    });
    last.flows = vec![
        flow(0.100309518, 101286.50005077285, Some(6330.406253173303)),
        flow(0.100024065, 223946.1073692616, Some(13996.63171057885)),
        flow(0.100309518, 101286.50005077285, Some(6330.406253173303)),
    ];
    let spec = RunSpec {
        duration_s: 0.1,
        flows: 3,
        threads: Some(2),
        warmup_s: 0.05,
        local_cpu: true,
        iterations_min: 2,
        iterations_max: 3,
        confidence: Some(ConfidenceSpec {
            level_pct: 95,
            width_pct: 50.0,
        }),
        ..spec(TestKind::TcpCrr)
    };
    loopback_run(
        spec,
        unlabelled(),
        vec![first, last],
        |summary| {
            summary.confidence = Some(confidence(95, 30.553191452363286, 50.0));
            summary.cpu = Some(CpuFigures {
                local_util_pct: Some(100.0),
                local_service_demand: Some(74.1239145342754),
                ..CpuFigures::default()
            });
            summary.cpu_confidence = Some(CpuConfidence {
                local: Some(confidence(95, 0.0, 50.0)),
                remote: None,
            });
            summary.latency = Some(latency([
                59.859,
                69.631,
                94.207,
                165.887,
                274.431,
                982.957,
                74.1250066666667,
                25.859194668315265,
            ]));
            summary.latency_histogram = Some(LatencyHistogram {
                count: 5400,
                ..LatencyHistogram::default()
            });
        },
        "cddef6476121d150b2e9fe3f659f25273b6cce1d41b7e37dcc00966188a26630",
    )
}

fn tcp_stream_cpu_flows_not_met() -> RunRecord {
    let first = iteration(0.202076867, 17449130719.798122, None);
    let second = iteration(0.201922047, 21138163612.998486, None);
    let mut last = iteration(0.2024432, 13885482612.409107, None);
    last.ends = Some(connection(
        [40360, 44501],
        [4194304, 131072],
        [4194304, 2205762],
    ));
    let pct = [
        100.0,
        41.02564102564103,
        0.0,
        43.58974358974359,
        0.0,
        15.384615384615385,
        0.0,
        0.0,
    ];
    last.cpu_detail = Some(CpuDetail {
        local: Some(host_cpu(pct, [0.0, 0.064323])),
        remote: Some(host_cpu(pct, [0.0, 0.089382])),
    });
    let mut sending = flow(0.2024432, 6088626775.312779, None);
    sending.ends.local.tcp_info = Some(TcpInfoFigures {
        total_retrans: 0,
        rtt_us: 361,
        rttvar_us: 527,
        snd_cwnd: 22,
        snd_mss: 65483,
        rwnd_limited_us: Some(52000),
        sndbuf_limited_us: Some(0),
        ..TcpInfoFigures::default()
    });
    last.flows = vec![sending, flow(0.20157925, 7796855837.096329, None)];
    let spec = RunSpec {
        flows: 2,
        local_cpu: true,
        remote_cpu: true,
        iterations_min: 2,
        iterations_max: 3,
        confidence: Some(ConfidenceSpec {
            level_pct: 99,
            width_pct: 1.0,
        }),
        ..spec(TestKind::TcpStream)
    };
    loopback_run(
        spec,
        Subject {
            label: Some("patched".into()),
            ..unlabelled()
        },
        vec![first, second, last],
        |summary| {
            summary.confidence = Some(confidence(99, 237.61313351336958, 1.0));
            let demand = Some(0.9367142899893899);
            summary.cpu = Some(CpuFigures {
                local_util_pct: Some(100.0),
                remote_util_pct: Some(100.0),
                local_service_demand: demand,
                remote_service_demand: demand,
            });
            summary.cpu_confidence = Some(CpuConfidence {
                local: Some(confidence(99, 0.0, 1.0)),
                remote: Some(confidence(99, 0.0, 1.0)),
            });
        },
        "21d172baba0351399e62d293d5ad035d5b9b3b93421082fd9e8bf70ea30d3dde",
    )
}

/// A UDP_STREAM iteration: `messages` sent and received, the sender's
/// bytes over its own time beside the iteration's.
fn datagrams(
    elapsed_s: [f64; 2],
    throughput_bps: f64,
    messages: [u64; 2],
    bytes_sent: u64,
    ends: EndsReport,
) -> Iteration {
    let mut ends = ends;
    ends.local.elapsed_s = elapsed_s[1];
    ends.local.bytes_sent = bytes_sent;
    Iteration {
        messages_sent: Some(messages[0]),
        messages_received: Some(messages[1]),
        ends: Some(ends),
        ..iteration(elapsed_s[0], throughput_bps, None)
    }
}

/// What was lost of the datagrams sent.
fn udp_summary(messages_sent: u64, messages_received: u64, send_errors: Option<u64>) -> UdpFigures {
    UdpFigures {
        messages_sent,
        messages_received,
        loss_pct: 100.0 * (messages_sent - messages_received) as f64 / messages_sent as f64,
        send_errors,
    }
}

fn udp_stream() -> RunRecord {
    let run = datagrams(
        [0.200572268; 2],
        735837558.5601894,
        [32996, 12533],
        48570112,
        connection([41712, 40828], [212992; 2], [212992; 2]),
    );
    loopback_run(
        spec(TestKind::UdpStream),
        patched(),
        vec![run],
        |summary| summary.udp = Some(udp_summary(32996, 12533, None)),
        "fb94800ea8769b12722eb74aba03ccb4c93ad91a78f03eccee917116e168e64e",
    )
}

fn udp_stream_cpu() -> RunRecord {
    let mut run = datagrams(
        [0.199969695; 2],
        883863847.4694878,
        [29222, 15009],
        43014784,
        connection([39439, 38731], [212992; 2], [212992; 2]),
    );
    run.cpu_detail = Some(CpuDetail {
        local: Some(host_cpu(
            [100.0, 55.0, 0.0, 35.0, 0.0, 10.0, 0.0, 0.0],
            [0.019468, 0.091217],
        )),
        remote: Some(host_cpu(
            [
                97.77777777777777,
                55.55555555555556,
                0.0,
                33.333333333333336,
                0.0,
                8.88888888888889,
                0.0,
                0.0,
            ],
            [0.0, 0.05266],
        )),
    });
    let spec = RunSpec {
        local_cpu: true,
        remote_cpu: true,
        ..spec(TestKind::UdpStream)
    };
    loopback_run(
        spec,
        unlabelled(),
        vec![run],
        |summary| {
            summary.cpu = Some(CpuFigures {
                local_util_pct: Some(100.0),
                remote_util_pct: Some(97.77777777777777),
                local_service_demand: Some(18.536791664131957),
                remote_service_demand: Some(18.124862960484577),
            });
            summary.udp = Some(udp_summary(29222, 15009, None));
        },
        "ff610af8eb9a76ee68ed13674509ae17d50bed211190bd67333fdf749bbf4f0d",
    )
}

fn udp_stream_send_errors() -> RunRecord {
    let mut iterations = Vec::new();
    for (elapsed_s, throughput_bps, messages, bytes_sent, ports, errors) in [
        (
            0.199983555,
            126249100.83231594,
            [2232, 2144],
            3285504,
            [48765, 42520],
            19833,
        ),
        (
            0.200003199,
            162035168.24748388,
            [2769, 2752],
            4075968,
            [57328, 49690],
            27080,
        ),
    ] {
        let mut run = datagrams(
            [elapsed_s; 2],
            throughput_bps,
            messages,
            bytes_sent,
            connection(ports, [212992; 2], [212992; 2]),
        );
        run.send_errors = Some(errors);
        if let Some(ends) = run.ends.as_mut() {
            ends.local.send_errors.insert("ENOBUFS".into(), errors);
        }
        iterations.push(run);
    }
    let spec = RunSpec {
        iterations_min: 2,
        iterations_max: 2,
        ..spec(TestKind::UdpStream)
    };
    loopback_run(
        spec,
        Subject {
            kernel_release: Some("6.18.44-fc-v669".into()),
            ..Subject::default()
        },
        iterations,
        |summary| summary.udp = Some(udp_summary(5001, 4896, Some(46913))),
        "49f5337c2649dc15ee9cf4ce05b1db1194d09d6ef3113b3e7bd5c6295f77755b",
    )
}

/// A UDP_STREAM run as `archive import` reads netperf's text: no socket
/// truth, no ends, one iteration of the figures netperf printed.
fn udp_stream_imported_netperf() -> RunRecord {
    let cpu = CpuFigures {
        local_util_pct: Some(72.21),
        remote_util_pct: Some(72.21),
        local_service_demand: Some(6.129),
        remote_service_demand: Some(6.129),
    };
    let run = Iteration {
        messages_sent: Some(1639404),
        messages_received: Some(1592774),
        cpu: Some(cpu.clone()),
        ..iteration(10.0, 1875600000.0, None)
    };
    let spec = RunSpec {
        duration_s: 10.0,
        local_cpu: true,
        remote_cpu: true,
        local_socket_buffer_bytes: Some(212992),
        remote_socket_buffer_bytes: Some(212992),
        ..RunSpec::defaults(TestKind::UdpStream)
    };
    let mut record = RecordBuilder::new(TestKind::UdpStream)
        .spec(spec)
        .testbed("default")
        .iteration(run)
        .summary_with(move |summary| {
            summary.cpu = Some(cpu);
            summary.udp = Some(udp_summary(1639404, 1592774, None));
        })
        .build();
    record.source.tool = "netperf".into();
    record.id = "0175a473da0ae771162b26963d9688cec40209ad7ca15df24acef88debd015d2".into();
    record
}

pub fn samples() -> Vec<Sample> {
    [
        ("tcp-stream", tcp_stream()),
        ("tcp-rr", tcp_rr()),
        ("tcp-rr-cpu-latency", tcp_rr_cpu_latency()),
        ("tcp-rr-cpu-wide", tcp_rr_cpu_wide()),
        (
            "tcp-stream-setting-not-granted",
            tcp_stream_setting_not_granted(),
        ),
        ("tcp-crr-flows-warmup", tcp_crr_flows_warmup()),
        (
            "tcp-stream-cpu-flows-not-met",
            tcp_stream_cpu_flows_not_met(),
        ),
        ("udp-stream", udp_stream()),
        ("udp-stream-cpu", udp_stream_cpu()),
        ("udp-stream-send-errors", udp_stream_send_errors()),
        ("udp-stream-imported-netperf", udp_stream_imported_netperf()),
    ]
    .iter()
    .map(|(case, record)| {
        let units = Units::parse("m").expect("netperf's m");
        Sample::new("run", case, &RunContext::new(record, units, true, true))
    })
    .chain([Sample::new(
        "run",
        "tcp-stream-autotuned-shown",
        &RunContext::new(
            &tcp_stream_autotuned(),
            Units::parse("m").expect("netperf's m"),
            true,
            true,
        )
        .with_sockets_at_end()
        .with_stored_by(Some("writer_lab_a"), Some("192.0.2.7")),
    )])
    .collect()
}
