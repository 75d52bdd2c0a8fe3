//! The canonical run record as a reader sees it: golden bytes, id and
//! config_key of a fixture, round trips, and every way a file can be bad.

use run_record::env::{HostEnv, InterfaceEnv, VmEnv};
use run_record::record::{
    BufferTruth, ConfidenceOutcome, CpuConfidence, CpuDetail, CpuFigures, EndReport, Endpoint,
    EndsReport, Environments, ExperimentTag, FlowFigures, Granted, HostCpu, Iteration,
    LatencyFigures, LatencyHistogram, LatencyReport, RecordError, RunRecord, SocketTruth, Source,
    Spread, Subject, Summary, SystemOutcome, TcpInfoFigures, UdpFigures,
};
use run_record::spec::{
    AddressFamily, ConfidenceSpec, CpuPinning, ReportedSocketBuffers, RunSpec, Setting,
    SystemSettings, TestKind,
};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The id of the fixture record.
const FIXTURE_ID: &str = "389cf3ef211d253db01f06772020e110c6ca96170557b667bae470699e1c08cc";
/// The config_key of the fixture record.
const FIXTURE_CONFIG_KEY: &str = "c1ab09600994976f931d9518e621659c1b4ab371177346bc1db109bf22705e41";

/// The id of the same record as schema `netbisect.run/1.1` wrote it.
const FIXTURE_1_1_ID: &str = "c63b9e12f749bc6e75dc95deece76e3e607ae9dbef37e88c6e6698a23bee8c92";

/// The id of the same record as netbisect 0.1 wrote it, schema
/// `netbisect.run/1`.
const FIXTURE_1_0_ID: &str = "aaaa9541da83110b5ebb2efd7f214effe502ca971f4e8317dd977869c2bd3391";
/// Its config_key, which a 1.1 record of the same spec keeps.
const FIXTURE_1_0_CONFIG_KEY: &str =
    "89f2dc6b658f529c204f7b12e3f4080b0daab6162560fe5f1e4c3f046c24cfea";

fn data_path(name: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "tests", "data", name]
        .iter()
        .collect()
}

fn golden_path() -> PathBuf {
    data_path("record-fixture.json")
}

/// The golden file of schema `netbisect.run/1.1`, as written before 1.2.
fn golden_1_1_path() -> PathBuf {
    data_path("record-fixture-1.1.json")
}

/// The golden file of schema `netbisect.run/1`, as written before 1.1.
fn golden_1_0_path() -> PathBuf {
    data_path("record-fixture-1.0.json")
}

fn host_env(name: &str, governor: &str) -> HostEnv {
    let mut features = BTreeMap::new();
    features.insert("rx-gro".to_string(), true);
    features.insert("tx-tcp-segmentation".to_string(), true);
    features.insert("rx-lro".to_string(), false);
    let mut sysctls = BTreeMap::new();
    sysctls.insert(
        "net.ipv4.tcp_rmem".to_string(),
        "4096 131072 6291456".to_string(),
    );
    sysctls.insert("net.core.rmem_max".to_string(), "212992".to_string());
    sysctls.insert(
        "net.ipv4.tcp_congestion_control".to_string(),
        "cubic".to_string(),
    );
    let mut mitigations = BTreeMap::new();
    mitigations.insert(
        "spectre_v2".to_string(),
        "Mitigation: Enhanced / Automatic IBRS".to_string(),
    );
    mitigations.insert("meltdown".to_string(), "Not affected".to_string());
    HostEnv {
        kernel_release: Some("6.8.0-rc1-00123-gabcdef123456".into()),
        kernel_version: Some("#7 SMP PREEMPT_DYNAMIC Mon Jan  8 10:00:00 UTC 2024".into()),
        cmdline: Some("BOOT_IMAGE=/vmlinuz root=/dev/vda1 quiet".into()),
        cpu_model: Some("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz".into()),
        cpu_count: Some(64),
        cpus_online: Some("0-63".into()),
        smt: Some("on".into()),
        cpufreq_driver: Some("intel_pstate".into()),
        governor: Some(governor.into()),
        boost: Some(true),
        cpuidle_driver: Some("intel_idle".into()),
        mitigations,
        clocksource: Some("tsc".into()),
        transparent_hugepages: Some("madvise".into()),
        sysctls,
        interface: Some(InterfaceEnv {
            name: name.into(),
            mtu: Some(1500),
            driver: Some("ice".into()),
            speed_mbps: Some(100_000),
            qdisc: Some("mq".into()),
            tx_queue_len: Some(1000),
            features,
            gro_max_size: Some(65536),
            gso_max_size: Some(65536),
        }),
    }
}

fn reported_latency() -> LatencyReport {
    LatencyReport {
        min_us: Some(20.5),
        mean_us: Some(31.25),
        p99_us: Some(60.0),
        ..LatencyReport::default()
    }
}

fn latency(scale: f64) -> LatencyFigures {
    LatencyFigures {
        min_us: 18.5 * scale,
        mean_us: 24.25 * scale,
        stddev_us: 3.125 * scale,
        p50_us: 23.5 * scale,
        p90_us: 28.75 * scale,
        p99_us: 41.0 * scale,
        p999_us: 97.5 * scale,
        max_us: 512.0 * scale,
    }
}

fn cpu() -> CpuFigures {
    CpuFigures {
        local_util_pct: Some(12.5),
        remote_util_pct: Some(11.75),
        local_service_demand: Some(30.125),
        remote_service_demand: Some(28.5),
    }
}

fn iteration(transactions: u64) -> Iteration {
    let rate = transactions as f64 / 10.0;
    Iteration {
        elapsed_s: 10.0,
        throughput_bps: rate * 2.0 * 64.0 * 8.0,
        transaction_rate: Some(rate),
        transactions: Some(transactions),
        bytes_sent: Some(transactions * 64),
        bytes_received: Some(transactions * 64),
        messages_sent: Some(transactions),
        messages_received: Some(transactions),
        cpu: Some(cpu()),
        latency: Some(latency(1.0)),
        reported_latency: Some(reported_latency()),
        reported_sent_throughput_bps: None,
        reported_operation_rate: None,
        lost_transactions: Some(0),
        send_errors: Some(4),
        ends: Some(EndsReport {
            local: end_report(transactions, "[::1]:40000", "[::1]:40001"),
            remote: end_report(transactions, "[::1]:40001", "[::1]:40000"),
        }),
        cpu_detail: Some(CpuDetail {
            local: Some(host_cpu(12.5)),
            remote: Some(host_cpu(11.75)),
        }),
        latency_histogram: Some(histogram(transactions)),
        flows: [
            ("[::1]:40000", "[::1]:40001"),
            ("[::1]:40002", "[::1]:40003"),
        ]
        .iter()
        .map(|(local, remote)| flow(transactions / 2, local, remote))
        .collect(),
    }
}

fn host_cpu(util_pct: f64) -> HostCpu {
    HostCpu {
        window_s: 10.0,
        n_cpus: 64,
        util_pct,
        user_pct: util_pct / 2.0,
        nice_pct: 0.0,
        system_pct: util_pct / 4.0,
        iowait_pct: 0.0,
        irq_pct: 0.0,
        softirq_pct: util_pct / 4.0,
        steal_pct: 0.0,
        idle_pct: 100.0 - util_pct,
        process_user_s: 0.5,
        process_system_s: 6.25,
    }
}

/// Transactions of 24 us, and one each of the fastest and slowest, in the
/// compact form bench-core's latency histogram writes (1/64 precision: each
/// bucket named by the highest nanosecond it holds).
fn histogram(transactions: u64) -> LatencyHistogram {
    LatencyHistogram {
        sub_buckets: 64,
        count: transactions,
        min_ns: 18_500,
        max_ns: 512_000,
        buckets: vec![[18_687, 1], [24_063, transactions - 2], [516_095, 1]],
    }
}

fn flow(transactions: u64, local_address: &str, peer_address: &str) -> FlowFigures {
    let rate = transactions as f64 / 10.0;
    FlowFigures {
        elapsed_s: 10.0,
        throughput_bps: rate * 2.0 * 64.0 * 8.0,
        transaction_rate: Some(rate),
        transactions: Some(transactions),
        bytes_sent: transactions * 64,
        bytes_received: transactions * 64,
        latency: Some(latency(1.0)),
        ends: EndsReport {
            local: end_report(transactions, local_address, peer_address),
            remote: end_report(transactions, peer_address, local_address),
        },
    }
}

fn end_report(transactions: u64, local_address: &str, peer_address: &str) -> EndReport {
    let buffer = BufferTruth {
        requested_bytes: Some(262144),
        after_setup_bytes: 524288,
        at_end_bytes: 524288,
    };
    EndReport {
        elapsed_s: 10.0,
        bytes_sent: transactions * 64,
        bytes_received: transactions * 64,
        messages_sent: transactions,
        messages_received: transactions,
        transactions: Some(transactions),
        timeouts: Some(0),
        send_errors: BTreeMap::from([("EAGAIN".to_string(), 1), ("ENOBUFS".to_string(), 1)]),
        socket: SocketTruth {
            local_address: local_address.to_string(),
            peer_address: peer_address.to_string(),
            send_buffer: buffer.clone(),
            recv_buffer: buffer,
        },
        tcp_info: Some(TcpInfoFigures {
            total_retrans: 3,
            rtt_us: 42,
            rttvar_us: 7,
            snd_cwnd: 10,
            snd_mss: 1448,
            delivery_rate_bps: Some(2_500_000_000),
            busy_time_us: Some(9_990_000),
            rwnd_limited_us: Some(1_250),
            sndbuf_limited_us: Some(0),
        }),
    }
}

/// A record with fixed values and every optional part filled.
fn fixture() -> RunRecord {
    let spec = RunSpec {
        system: None,
        reported_socket_buffers: None,
        test: TestKind::TcpRr,
        family: AddressFamily::Ipv6,
        duration_s: 10.0,
        send_size_bytes: 16384,
        recv_size_bytes: 131072,
        request_size_bytes: 64,
        response_size_bytes: 64,
        local_socket_buffer_bytes: Some(262144),
        remote_socket_buffer_bytes: Some(524288),
        nodelay: true,
        cpu_pinning: CpuPinning {
            local: Some(2),
            remote: Some(3),
        },
        local_cpu: true,
        remote_cpu: true,
        confidence: Some(ConfidenceSpec {
            level_pct: 99,
            width_pct: 5.0,
        }),
        iterations_max: 10,
        iterations_min: 3,
        flows: 2,
        warmup_s: 1.5,
        threads: Some(1),
        first_burst: 4,
    };
    let iterations = vec![iteration(400_000), iteration(401_234), iteration(398_765)];
    let rates: Vec<f64> = iterations
        .iter()
        .filter_map(|i| i.transaction_rate)
        .collect();
    let throughputs: Vec<f64> = iterations.iter().map(|i| i.throughput_bps).collect();
    let mut record = RunRecord {
        schema: String::new(),
        id: String::new(),
        config_key: String::new(),
        source: Source {
            tool: "netbisect".into(),
            version: Some("0.1.0".into()),
            undated: false,
        },
        started_at: "2026-01-15T09:30:00.000000Z".into(),
        finished_at: "2026-01-15T09:30:36.250000Z".into(),
        spec,
        endpoint: Endpoint {
            host: "2001:db8::2".into(),
            port: Some(12865),
        },
        subject: Subject {
            commit: Some("abcdef1234567890abcdef1234567890abcdef12".into()),
            describe: Some("v6.8-rc1-123-gabcdef123456".into()),
            kernel_release: Some("6.8.0-rc1-00123-gabcdef123456".into()),
            label: Some("patched".into()),
        },
        testbed: "lab-a/pair-1".into(),
        env: Environments {
            local: host_env("eth0", "performance"),
            remote: Some(host_env("ens1f0", "performance")),
            vm: None,
        },
        iterations,
        summary: Summary {
            n_iterations: 3,
            throughput_bps: Spread::of(&throughputs).unwrap(),
            transaction_rate: Spread::of(&rates),
            confidence: Some(ConfidenceOutcome {
                level_pct: 99,
                low: 39_700.5,
                high: 40_300.25,
                width_pct: 1.5,
                target_width_pct: 5.0,
                met: true,
            }),
            cpu: Some(cpu()),
            latency: Some(latency(1.0)),
            reported_latency: Some(reported_latency()),
            udp: Some(UdpFigures {
                messages_sent: 1000,
                messages_received: 990,
                loss_pct: 1.0,
                send_errors: Some(12),
            }),
            latency_histogram: Some(histogram(1_200_000)),
            cpu_confidence: Some(CpuConfidence {
                local: Some(ConfidenceOutcome {
                    level_pct: 99,
                    low: 12.25,
                    high: 12.75,
                    width_pct: 4.0,
                    target_width_pct: 5.0,
                    met: true,
                }),
                remote: Some(ConfidenceOutcome {
                    level_pct: 99,
                    low: 11.0,
                    high: 12.5,
                    width_pct: 12.75,
                    target_width_pct: 5.0,
                    met: false,
                }),
            }),
        },
        system: None,
        experiment: None,
        command: None,
    };
    record.seal().unwrap();
    record
}

#[test]
fn fixture_bytes_match_the_golden_file() {
    let bytes = fixture().to_canonical_bytes().unwrap();
    if std::env::var_os("NETBISECT_BLESS").is_some() {
        std::fs::write(golden_path(), &bytes).unwrap();
    }
    let golden = std::fs::read(golden_path()).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&bytes),
        String::from_utf8_lossy(&golden),
        "canonical bytes changed; if on purpose, bump the schema where \
         needed and rerun with NETBISECT_BLESS=1"
    );
}

#[test]
fn fixture_id_and_config_key_are_pinned() {
    let record = fixture();
    assert_eq!(record.id, FIXTURE_ID);
    assert_eq!(record.config_key, FIXTURE_CONFIG_KEY);
    assert_eq!(record.schema, "netbisect.run/1.3");
    // The id is the blake3 hash of the canonical bytes without `id`.
    let mut tree: Value = serde_json::from_slice(&record.to_canonical_bytes().unwrap()).unwrap();
    tree.as_object_mut().unwrap().remove("id");
    let without_id = run_record::canonical::to_canonical_bytes(&tree).unwrap();
    assert_eq!(blake3::hash(&without_id).to_hex().as_str(), FIXTURE_ID);
}

#[test]
fn golden_file_round_trips() {
    let golden = std::fs::read(golden_path()).unwrap();
    let record = RunRecord::from_slice(&golden).unwrap();
    assert_eq!(record, fixture());
    assert_eq!(record.to_canonical_bytes().unwrap(), golden);
    // Whitespace and key order do not matter to a reader.
    let tree: Value = serde_json::from_slice(&golden).unwrap();
    let pretty = serde_json::to_vec_pretty(&tree).unwrap();
    let reread = RunRecord::from_slice(&pretty).unwrap();
    assert_eq!(reread.to_canonical_bytes().unwrap(), golden);
}

/// The golden document as a JSON tree, for making bad variants.
fn golden_tree() -> Value {
    serde_json::from_slice(&std::fs::read(golden_path()).unwrap()).unwrap()
}

fn read_error(bytes: &[u8]) -> String {
    RunRecord::from_slice(bytes).unwrap_err().to_string()
}

fn tree_error(tree: &Value) -> String {
    read_error(&serde_json::to_vec(tree).unwrap())
}

#[test]
fn malformed_json_is_reported_with_its_place() {
    assert_eq!(
        read_error(b"{\"schema\": \"netbisect.run/1\",}"),
        "malformed JSON at line 1, column 30: trailing comma"
    );
    assert_eq!(
        read_error(b"{\n  \"schema\" \"netbisect.run/1\"\n}"),
        "malformed JSON at line 2, column 12: expected `:`"
    );
}

#[test]
fn truncated_file_is_reported() {
    let golden = std::fs::read(golden_path()).unwrap();
    assert_eq!(
        read_error(&golden[..golden.len() / 2]),
        format!(
            "truncated JSON: input ends at line 1, column {}",
            golden.len() / 2
        )
    );
    assert_eq!(
        read_error(b""),
        "truncated JSON: input ends at line 1, column 0"
    );
}

#[test]
fn non_utf8_is_reported_with_its_offset() {
    let mut bytes = std::fs::read(golden_path()).unwrap();
    let offset = bytes.windows(7).position(|w| w == b"patched").unwrap();
    bytes[offset] = 0xff;
    assert_eq!(
        read_error(&bytes),
        format!("not UTF-8: invalid byte at offset {offset}")
    );
}

#[test]
fn schema_problems_are_reported() {
    let mut tree = golden_tree();
    tree.as_object_mut().unwrap().remove("schema");
    assert_eq!(
        tree_error(&tree),
        "missing \"schema\" field (expected \"netbisect.run/1.4\")"
    );
    tree["schema"] = "netbisect.run/2".into();
    assert_eq!(
        tree_error(&tree),
        "unsupported schema \"netbisect.run/2\": this netbisect reads netbisect.run/1.x"
    );
    tree["schema"] = "iperf3".into();
    assert_eq!(
        tree_error(&tree),
        "unsupported schema \"iperf3\": this netbisect reads netbisect.run/1.x"
    );
    assert_eq!(
        read_error(b"[1, 2]"),
        "invalid record: a run record is a JSON object"
    );
}

#[test]
fn missing_field_is_named() {
    let mut tree = golden_tree();
    tree.as_object_mut().unwrap().remove("testbed");
    assert_eq!(tree_error(&tree), "invalid record: missing field `testbed`");
}

#[test]
fn integer_beyond_two_to_the_53_is_refused() {
    let text = String::from_utf8(std::fs::read(golden_path()).unwrap()).unwrap();
    let big = text.replacen(
        "\"bytes_sent\":25600000,",
        "\"bytes_sent\":9007199254740993,",
        1,
    );
    assert_ne!(big, text);
    assert_eq!(
        read_error(big.as_bytes()),
        "integer 9007199254740993 at $.iterations[0].bytes_sent is beyond +-2^53 \
         and would lose digits"
    );
}

#[test]
fn nan_is_refused_at_seal_time() {
    let mut record = fixture();
    record.iterations[1].throughput_bps = f64::NAN;
    let err = record.seal().unwrap_err();
    assert!(matches!(err, RecordError::Canonical(_)), "{err:?}");
    assert_eq!(
        err.to_string(),
        "non-finite number (NaN or infinity) at $.iterations[1].throughput_bps \
         cannot be written as JSON"
    );
    let mut record = fixture();
    record.spec.warmup_s = f64::INFINITY;
    assert_eq!(
        record.seal().unwrap_err().to_string(),
        "non-finite number (NaN or infinity) at $.spec.warmup_s cannot be written as JSON"
    );
}

#[test]
fn tampered_content_is_refused() {
    let mut tree = golden_tree();
    tree["subject"]["label"] = "base".into();
    let err = tree_error(&tree);
    assert_eq!(
        err,
        format!(
            "id does not match the content: stated {FIXTURE_ID}, computed 8ed17a666218f782c2eb033b033b7d47ec225c7da48ed7f00e1ecd8be3f8c0e9"
        )
    );
    let mut tree = golden_tree();
    tree["testbed"] = "lab-b/pair-1".into();
    assert_eq!(
        tree_error(&tree),
        format!(
            "config_key does not match the content: stated {FIXTURE_CONFIG_KEY}, \
             computed 8336eaa8e278b97b9ded278c0027fb4b477ae26e130f187f1e7014cdc9e5a8bd"
        )
    );
}

#[test]
fn config_key_ignores_commit_and_times() {
    let base = fixture();
    let mut other = base.clone();
    other.subject.commit = Some("0123456789abcdef0123456789abcdef01234567".into());
    other.subject.describe = Some("v6.8-rc1-124-g0123456789ab".into());
    other.started_at = "2026-02-01T00:00:00.000000Z".into();
    other.finished_at = "2026-02-01T00:00:36.000000Z".into();
    other.env.local.kernel_release = Some("6.8.0-rc1-00124-g0123456789ab".into());
    other.seal().unwrap();
    assert_eq!(other.config_key, base.config_key);
    assert_ne!(other.id, base.id);
}

#[test]
fn config_key_follows_socket_buffers_and_sysctls() {
    let base = fixture();
    let mut buffer = base.clone();
    buffer.spec.local_socket_buffer_bytes = Some(131072);
    buffer.seal().unwrap();
    assert_ne!(buffer.config_key, base.config_key);

    let mut sysctl = base.clone();
    sysctl
        .env
        .local
        .sysctls
        .insert("net.core.rmem_max".into(), "4194304".into());
    sysctl.seal().unwrap();
    assert_ne!(sysctl.config_key, base.config_key);

    let mut remote_sysctl = base.clone();
    if let Some(remote) = remote_sysctl.env.remote.as_mut() {
        remote
            .sysctls
            .insert("net.ipv4.tcp_congestion_control".into(), "bbr".into());
    }
    remote_sysctl.seal().unwrap();
    assert_ne!(remote_sysctl.config_key, base.config_key);
    assert_ne!(remote_sysctl.config_key, sysctl.config_key);
}

#[test]
fn schema_versions_are_read_strictly() {
    for schema in [
        "netbisect.run/+1",
        "netbisect.run/01",
        "netbisect.run/1.",
        "netbisect.run/1.x",
        "netbisect.run/1.2.3",
        "netbisect.run/",
        "netbisect.run/10",
        "netbisect.run",
    ] {
        let mut tree = golden_tree();
        tree["schema"] = schema.into();
        let err = RunRecord::from_slice(&serde_json::to_vec(&tree).unwrap()).unwrap_err();
        assert!(
            matches!(err, RecordError::UnsupportedSchema { .. }),
            "{schema}: {err}"
        );
    }
    // Every minor revision of the same major version is read; the
    // changed schema then no longer matches the id.
    for schema in [
        "netbisect.run/1",
        "netbisect.run/1.0",
        "netbisect.run/1.1",
        "netbisect.run/1.2",
        "netbisect.run/1.4",
        "netbisect.run/1.99999999999",
    ] {
        let mut tree = golden_tree();
        tree["schema"] = schema.into();
        let err = RunRecord::from_slice(&serde_json::to_vec(&tree).unwrap()).unwrap_err();
        assert!(matches!(err, RecordError::IdMismatch { .. }), "{err}");
    }
}

#[test]
fn records_of_schema_1_0_read_back_with_their_ids() {
    // New reader, old data: a record written before 1.1 is read, keeps
    // its schema and id, and writes back to the same bytes.
    let golden = std::fs::read(golden_1_0_path()).unwrap();
    let record = RunRecord::from_slice(&golden).unwrap();
    assert_eq!(record.schema, "netbisect.run/1");
    assert_eq!(record.id, FIXTURE_1_0_ID);
    assert_eq!(record.to_canonical_bytes().unwrap(), golden);
    // Its config_key is what 1.1 computes for the same spec with no burst,
    // so old and new runs of one test still pair.
    assert_eq!(record.config_key, FIXTURE_1_0_CONFIG_KEY);
    let mut resealed = record.clone();
    resealed.seal().unwrap();
    assert_eq!(resealed.schema, "netbisect.run/1.3");
    assert_eq!(resealed.config_key, FIXTURE_1_0_CONFIG_KEY);
    assert_ne!(resealed.id, FIXTURE_1_0_ID);
    // A 1.0 record is held to exact read-back like a 1.1 one.
    let mut tree: Value = serde_json::from_slice(&golden).unwrap();
    tree["summary"]["new_figure"] = 1.into();
    assert_eq!(
        read_error(&reseal(tree)),
        "invalid record: unknown member $.summary.new_figure"
    );
}

#[test]
fn records_of_schema_1_1_read_back_with_their_ids() {
    // New reader, old data: a record written before 1.2 is read, keeps
    // its schema and id, writes back to the same bytes, and keeps its
    // config_key when sealed again.
    let golden = std::fs::read(golden_1_1_path()).unwrap();
    let record = RunRecord::from_slice(&golden).unwrap();
    assert_eq!(record.schema, "netbisect.run/1.1");
    assert_eq!(record.id, FIXTURE_1_1_ID);
    assert_eq!(record.to_canonical_bytes().unwrap(), golden);
    let mut resealed = record.clone();
    resealed.seal().unwrap();
    assert_eq!(resealed.config_key, FIXTURE_CONFIG_KEY);
    assert_eq!(resealed.id, FIXTURE_ID);
}

#[test]
fn settings_enter_the_config_key_and_experiments_do_not() {
    let plain = fixture();
    let mut tagged = fixture();
    tagged.experiment = Some(ExperimentTag {
        id: "0123456789abcdef".to_string(),
        round: 2,
    });
    let mut granted = SystemOutcome {
        interface: "eth0".to_string(),
        ..SystemOutcome::default()
    };
    granted.features.insert(
        "gso".to_string(),
        Granted {
            requested: false,
            granted: false,
        },
    );
    tagged.system = Some(granted);
    tagged.seal().unwrap();
    assert_eq!(tagged.config_key, plain.config_key);
    assert_ne!(tagged.id, plain.id);
    let back = RunRecord::from_slice(&tagged.to_canonical_bytes().unwrap()).unwrap();
    assert_eq!(back, tagged);
    let mut asked = fixture();
    let mut settings = SystemSettings::default();
    settings.set(Setting::parse("gso=off").unwrap());
    asked.spec.system = Some(settings);
    asked.seal().unwrap();
    assert_ne!(asked.config_key, plain.config_key);
    let text = String::from_utf8(asked.to_canonical_bytes().unwrap()).unwrap();
    assert!(
        text.contains(r#""system":{"features":{"gso":false}}"#),
        "{text}"
    );
    // A bad setting is refused like any spec value out of range.
    asked.spec.system.as_mut().unwrap().mtu = Some(10);
    assert!(asked.spec.validate().is_err());
}

#[test]
fn what_an_import_reports_round_trips_and_only_its_buffers_key_it() {
    let plain = fixture();
    let mut imported = fixture();
    imported.iterations[0].reported_sent_throughput_bps = Some(127_583.97e6);
    imported.iterations[0].reported_operation_rate = Some(92_009.0);
    imported.seal().unwrap();
    // Figures are not part of the configuration.
    assert_eq!(imported.config_key, plain.config_key);
    imported.spec.reported_socket_buffers = Some(ReportedSocketBuffers {
        local_send_bytes: Some(16384),
        remote_recv_bytes: Some(87380),
        ..ReportedSocketBuffers::default()
    });
    imported.seal().unwrap();
    // Granted buffers are all an import says of its sockets: they key it.
    assert_ne!(imported.config_key, plain.config_key);
    let bytes = imported.to_canonical_bytes().unwrap();
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert!(
        text.contains(
            r#""reported_socket_buffers":{"local_send_bytes":16384,"remote_recv_bytes":87380}"#
        ),
        "{text}"
    );
    assert!(
        text.contains(r#""reported_sent_throughput_bps":127583970000"#),
        "{text}"
    );
    let back = RunRecord::from_slice(&bytes).unwrap();
    assert_eq!(back, imported);
    // Absent, they are left out, so other runs keep their config_key.
    assert!(
        !String::from_utf8(plain.to_canonical_bytes().unwrap())
            .unwrap()
            .contains("reported_s")
    );
}

#[test]
fn a_burst_enters_the_config_key_only_when_set() {
    let burst = fixture();
    let mut no_burst = fixture();
    no_burst.spec.first_burst = 0;
    no_burst.seal().unwrap();
    // Without a burst, the key is the one 1.0 computed for the same run.
    assert_eq!(no_burst.config_key, FIXTURE_1_0_CONFIG_KEY);
    assert_ne!(burst.config_key, no_burst.config_key);
    let text = String::from_utf8(no_burst.to_canonical_bytes().unwrap()).unwrap();
    assert!(!text.contains("first_burst"), "{text}");
}

#[test]
fn newer_minor_revisions_may_add_members() {
    // Old reader, new data, as this reader treats a revision newer than
    // its own: unknown members are accepted and the id covers them.
    let mut tree = golden_tree();
    tree["schema"] = "netbisect.run/1.5".into();
    tree["summary"]["new_figure"] = 1.into();
    tree["iterations"][0]["ends"]["local"]["new_count"] = 7.into();
    let bytes = reseal(tree);
    let record = RunRecord::from_slice(&bytes).unwrap();
    assert_eq!(record.schema, "netbisect.run/1.5");
    let stated: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(record.id, stated["id"].as_str().unwrap());
    // A member added to the spec enters the config_key as written: a
    // document whose key was computed without it is refused.
    let mut tree = golden_tree();
    tree["schema"] = "netbisect.run/1.5".into();
    tree["spec"]["new_knob"] = 3.into();
    let err = RunRecord::from_slice(&reseal(tree)).unwrap_err();
    assert!(
        matches!(err, RecordError::ConfigKeyMismatch { .. }),
        "{err}"
    );
    // The same member in a record of a revision this reader knows is an
    // error, not something to drop.
    let mut tree = golden_tree();
    tree["spec"]["new_knob"] = 3.into();
    assert_eq!(
        read_error(&reseal(tree)),
        "invalid record: unknown member $.spec.new_knob"
    );
}

#[test]
fn duplicate_members_are_refused() {
    let text = String::from_utf8(std::fs::read(golden_path()).unwrap()).unwrap();
    let doubled = text.replacen('{', "{\"testbed\":\"lab-b/pair-1\",", 1);
    assert_eq!(
        read_error(doubled.as_bytes()),
        format!(
            "malformed JSON at line 1, column {}: duplicate member \"testbed\"",
            doubled.find("\"testbed\":\"lab-a").unwrap() + "\"testbed\"".len()
        )
    );
}

/// Gives `tree` the id and config_key of its content, as a careless
/// writer would, so that only the member check can refuse it.
fn reseal(mut tree: Value) -> Vec<u8> {
    let members = tree.as_object_mut().unwrap();
    members.remove("id");
    let without_id = run_record::canonical::to_canonical_bytes(&tree).unwrap();
    tree["id"] = blake3::hash(&without_id).to_hex().as_str().into();
    serde_json::to_vec(&tree).unwrap()
}

#[test]
fn records_read_back_as_written() {
    // An unknown member, or a null where an absent value is left out,
    // would be dropped when the record is written again, changing its id.
    let mut tree = golden_tree();
    tree["summary"]["thruput_bps"] = 1.into();
    assert_eq!(
        read_error(&reseal(tree)),
        "invalid record: unknown member $.summary.thruput_bps"
    );
    let mut tree = golden_tree();
    tree["env"]["remote"]["interface"]["speed_mbps"] = Value::Null;
    assert_eq!(
        read_error(&reseal(tree)),
        "invalid record: $.env.remote.interface.speed_mbps is null or empty; \
         leave an absent value out"
    );
    let mut tree = golden_tree();
    tree["env"]["local"]["mitigations"] = serde_json::json!({});
    assert_eq!(
        read_error(&reseal(tree)),
        "invalid record: $.env.local.mitigations is null or empty; leave an absent value out"
    );
    // A float written as an integer is the same number.
    let mut tree = golden_tree();
    tree["iterations"][0]["elapsed_s"] = 10.into();
    let bytes = reseal(tree);
    let record = RunRecord::from_slice(&bytes).unwrap();
    assert_eq!(
        RunRecord::from_slice(&record.to_canonical_bytes().unwrap()).unwrap(),
        record
    );
    // A newer minor revision may carry members this reader does not know.
    let mut tree = golden_tree();
    tree["schema"] = "netbisect.run/1.5".into();
    tree["summary"]["new_figure"] = 1.into();
    assert!(RunRecord::from_slice(&reseal(tree)).is_ok());
}

#[test]
fn a_vm_section_round_trips_and_keys_the_guest_knobs() {
    let base = fixture();
    let mut guest = base.clone();
    guest.env.vm = Some(VmEnv {
        runner: "virtme-ng".into(),
        runner_version: Some("1.42".into()),
        accelerator: "tcg".into(),
        vcpus: 2,
        memory_mib: 1024,
        network: "pair".into(),
        network_backend: Some("virtio-net, qemu hub".into()),
        append: vec!["mitigations=off".into()],
        sysctls: BTreeMap::from([("net.ipv4.tcp_rmem".into(), "4096 4096 4096".into())]),
        vhost: false,
        tx_queue_size: None,
        host_cpus: None,
        boot_to_test_s: Some(9.25),
    });
    guest.seal().unwrap();
    assert_ne!(guest.config_key, base.config_key);
    let bytes = guest.to_canonical_bytes().unwrap();
    let read = RunRecord::from_slice(&bytes).unwrap();
    assert_eq!(read, guest);
    assert_eq!(read.to_canonical_bytes().unwrap(), bytes);

    // Another boot of the same guest: only the boot time and the
    // runner's version differ, which do not make runs incomparable.
    let mut again = guest.clone();
    if let Some(vm) = again.env.vm.as_mut() {
        vm.boot_to_test_s = Some(11.5);
        vm.runner_version = Some("1.43".into());
    }
    again.seal().unwrap();
    assert_eq!(again.config_key, guest.config_key);
    assert_ne!(again.id, guest.id);

    // Without a VM, nothing of it is written.
    assert!(
        !String::from_utf8(base.to_canonical_bytes().unwrap())
            .unwrap()
            .contains("\"vm\"")
    );
}

#[test]
fn times_must_be_utc_with_valid_fields() {
    // Runs are ordered by these strings: a time in another offset, a
    // word or an impossible date would sort wrongly, so even a record
    // whose id matches its content is refused.
    for (member, time) in [
        ("started_at", "yesterday"),
        ("started_at", "2026-13-01T00:00:00Z"),
        ("finished_at", "2026-11-30T07:04:23+01:00"),
        ("finished_at", "2026-02-30T07:04:23Z"),
    ] {
        let mut tree = golden_tree();
        tree[member] = time.into();
        let message = read_error(&reseal(tree));
        assert!(
            message.contains(member) && message.contains("RFC 3339 UTC"),
            "{time}: {message}"
        );
    }
}

#[test]
fn a_command_is_a_member_of_1_4_and_records_without_one_stay_1_3() {
    let plain = fixture();
    assert_eq!(plain.schema, "netbisect.run/1.3");
    let mut with_command = fixture();
    with_command.command = Some(
        [
            "ab",
            "--kernel-a",
            "base/bzImage",
            "--sweep",
            "S=18000,2280",
        ]
        .map(String::from)
        .to_vec(),
    );
    with_command.seal().unwrap();
    assert_eq!(with_command.schema, "netbisect.run/1.4");
    // Not in the config_key: the run pairs with one made without it.
    assert_eq!(with_command.config_key, plain.config_key);
    let bytes = with_command.to_canonical_bytes().unwrap();
    assert_eq!(RunRecord::from_slice(&bytes).unwrap(), with_command);
    // A record that says it is of 1.3 cannot carry one.
    let mut tree = golden_tree();
    tree["command"] = serde_json::json!(["bench"]);
    assert_eq!(
        read_error(&reseal(tree)),
        "invalid record: command is a member of netbisect.run/1.4, and this record is of 1.3"
    );
    let mut tree = golden_tree();
    tree["schema"] = "netbisect.run/1.4".into();
    tree["command"] = serde_json::json!(["sh", "-c", "id"]);
    assert!(
        read_error(&reseal(tree)).contains("command starts with \"sh\""),
        "a command netbisect does not keep is refused"
    );
}

#[test]
fn an_experiment_id_not_of_its_form_is_refused_by_name() {
    for id in ["e1;touch pwn;#", "$(id)", "0123456789ABCDEF", "abc"] {
        let mut tree = golden_tree();
        tree["experiment"] = serde_json::json!({"id": id, "round": 1});
        let err = read_error(&reseal(tree));
        assert!(
            err.starts_with("invalid record: experiment.id "),
            "{id}: {err}"
        );
    }
    let mut tree = golden_tree();
    tree["experiment"] = serde_json::json!({"id": "0123456789abcdef", "round": 2});
    assert!(RunRecord::from_slice(&reseal(tree)).is_ok());
}
