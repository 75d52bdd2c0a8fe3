//! Comparison of two sides through the public API: grouping, verdicts,
//! directions, environment differences, options, and the template samples
//! of `compare` and `compare-stats`.

mod support;

use archive::compare::{
    ChangeKind, CompareError, CompareOptions, Comparison, ComparisonGroup, EnvChange, Host, Side,
    Verdict, compare,
};
use run_record::env::HostEnv;
use run_record::record::{CpuFigures, Metric, RunRecord};
use run_record::spec::{AddressFamily, TestKind};
use support::{Noise, check_template_sample, run};

fn only_group(comparison: &Comparison) -> &ComparisonGroup {
    assert_eq!(comparison.groups.len(), 1, "{comparison:#?}");
    &comparison.groups[0]
}

#[test]
fn clear_ten_percent_gain_is_significant_and_an_improvement() {
    let mut noise = Noise(1);
    let base = run(
        TestKind::TcpStream,
        "aaaaaaa",
        "2024-01-01T00:00:00Z",
        &noise.around(9.4e9, 0.01, 8),
        false,
    );
    let patched = run(
        TestKind::TcpStream,
        "bbbbbbb",
        "2024-01-02T00:00:00Z",
        &noise.around(9.4e9 * 1.1, 0.01, 8),
        false,
    );
    let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
    assert_eq!(comparison.min_samples, 4);
    let group = only_group(&comparison);
    assert_eq!(group.spec.test, "TCP_STREAM");
    assert!(!group.config_keys_differ);
    assert!(group.env_differences.is_empty());
    assert_eq!(group.rows.len(), 1);
    let row = &group.rows[0];
    assert_eq!(row.metric, "throughput_bps");
    assert_eq!(row.unit, "bits/s");
    assert_eq!(row.verdict, Verdict::Significant);
    assert_eq!(row.direction, Some(ChangeKind::Improvement));
    let change_pct = row.change_pct.unwrap();
    assert!((change_pct - 10.0).abs() < 1.5, "{change_pct}");
    // Every patched sample beats every base sample: the exact p is
    // the smallest there is for 8 against 8.
    assert_eq!(row.p_value, Some(2.0 / 12870.0));
    assert_eq!(row.first.as_ref().unwrap().n_samples, 8);

    // The same data with a minimum effect above the change is noise.
    let strict = CompareOptions {
        min_effect_pct: 15.0,
        ..CompareOptions::default()
    };
    let base = run(
        TestKind::TcpStream,
        "aaaaaaa",
        "2024-01-01T00:00:00Z",
        &Noise(1).around(9.4e9, 0.01, 8),
        false,
    );
    let mut noise = Noise(1);
    noise.around(9.4e9, 0.01, 8);
    let patched = run(
        TestKind::TcpStream,
        "bbbbbbb",
        "2024-01-02T00:00:00Z",
        &noise.around(9.4e9 * 1.1, 0.01, 8),
        false,
    );
    let comparison = compare(&[base], &[patched], &strict).unwrap();
    assert_eq!(
        only_group(&comparison).rows[0].verdict,
        Verdict::NotSignificant
    );
}

#[test]
fn same_distribution_is_noise() {
    let mut noise = Noise(7);
    let samples = noise.around(50_000.0, 0.02, 16);
    let (first, second): (Vec<f64>, Vec<f64>) =
        samples.chunks(2).map(|pair| (pair[0], pair[1])).unzip();
    let base = run(
        TestKind::TcpRr,
        "aaaaaaa",
        "2024-01-01T00:00:00Z",
        &first,
        false,
    );
    let patched = run(
        TestKind::TcpRr,
        "bbbbbbb",
        "2024-01-02T00:00:00Z",
        &second,
        false,
    );
    let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
    let group = only_group(&comparison);
    let metrics: Vec<&str> = group.rows.iter().map(|row| row.metric.as_str()).collect();
    assert_eq!(
        metrics,
        ["transaction_rate", "throughput_bps", "latency_p99_us"]
    );
    for row in &group.rows {
        assert_eq!(row.verdict, Verdict::NotSignificant, "{row:#?}");
        assert!(row.p_value.unwrap() >= 0.05);
    }
}

#[test]
fn two_against_two_needs_more_samples() {
    let base = run(
        TestKind::TcpStream,
        "aaaaaaa",
        "2024-01-01T00:00:00Z",
        &[100.0, 101.0],
        false,
    );
    let patched = run(
        TestKind::TcpStream,
        "bbbbbbb",
        "2024-01-02T00:00:00Z",
        &[200.0, 201.0],
        false,
    );
    let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
    let row = &only_group(&comparison).rows[0];
    assert_eq!(row.verdict, Verdict::NeedSamples);
    assert_eq!(comparison.min_samples, 4);
    // The change is still reported, for what it is worth.
    assert_eq!(row.change_pct, Some(99.50248756218906));

    // Three runs of one iteration each are three samples, still too
    // few at 0.05; four are enough.
    let side = |commit: &str, values: &[f64]| -> Vec<RunRecord> {
        values
            .iter()
            .enumerate()
            .map(|(idx, value)| {
                run(
                    TestKind::TcpStream,
                    commit,
                    &format!("2024-01-0{}T00:00:00Z", idx + 1),
                    &[*value],
                    false,
                )
            })
            .collect()
    };
    let comparison = compare(
        &side("aaaaaaa", &[1.0, 2.0, 3.0]),
        &side("bbbbbbb", &[7.0, 8.0, 9.0]),
        &CompareOptions::default(),
    )
    .unwrap();
    let group = only_group(&comparison);
    assert_eq!((group.n_runs_first, group.n_runs_second), (3, 3));
    assert_eq!(group.rows[0].verdict, Verdict::NeedSamples);
    let comparison = compare(
        &side("aaaaaaa", &[1.0, 2.0, 3.0, 4.0]),
        &side("bbbbbbb", &[7.0, 8.0, 9.0, 10.0]),
        &CompareOptions::default(),
    )
    .unwrap();
    assert_eq!(
        only_group(&comparison).rows[0].verdict,
        Verdict::Significant
    );
}

#[test]
fn an_undecided_row_says_how_many_more_runs_would_decide_it() {
    // One run of three iterations a side, standard deviation 2 on a
    // mean of 100 both sides.
    let base = run(
        TestKind::TcpStream,
        "aaaaaaa",
        "2024-01-01T00:00:00Z",
        &[98.0, 100.0, 102.0],
        false,
    );
    let patched = run(
        TestKind::TcpStream,
        "bbbbbbb",
        "2024-01-02T00:00:00Z",
        &[99.0, 101.0, 103.0],
        false,
    );
    let options = CompareOptions {
        min_effect_pct: 2.0,
        ..CompareOptions::default()
    };
    let comparison = compare(
        std::slice::from_ref(&base),
        std::slice::from_ref(&patched),
        &options,
    )
    .unwrap();
    let row = &only_group(&comparison).rows[0];
    assert_eq!(row.verdict, Verdict::NeedSamples);
    // 2% of 100 is one deviation: the t test needs 16.66 a side
    // (normal 15.70 + 1.96^2/4), Mann-Whitney 16.66 / (3/pi) = 17.4,
    // so 18: 15 more samples, five more runs of three.
    assert_eq!(row.effect_pct, Some(2.0));
    assert_eq!(row.samples_to_decide, Some(18));
    assert_eq!(row.more_runs_per_side, Some(5));

    // Without --min-effect the observed 1% is the change to see: half
    // a deviation, 67 a side, 64 more samples, 22 runs.
    let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
    let row = &only_group(&comparison).rows[0];
    assert_eq!(row.effect_pct.map(|pct| (pct * 1e9).round()), Some(1e9));
    assert_eq!(row.samples_to_decide, Some(67));
    assert_eq!(row.more_runs_per_side, Some(22));
}

#[test]
fn a_decided_or_noiseless_row_has_no_runs_to_go() {
    let mut noise = Noise(11);
    let base = run(
        TestKind::TcpStream,
        "aaaaaaa",
        "2024-01-01T00:00:00Z",
        &noise.around(100.0, 0.01, 8),
        false,
    );
    let patched = run(
        TestKind::TcpStream,
        "bbbbbbb",
        "2024-01-02T00:00:00Z",
        &noise.around(120.0, 0.01, 8),
        false,
    );
    let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
    let row = &only_group(&comparison).rows[0];
    assert_eq!(row.verdict, Verdict::Significant);
    assert_eq!(row.samples_to_decide, None);
    assert_eq!(row.more_runs_per_side, None);

    // One sample a side shows no noise to reckon with.
    let one = |commit: &str, value: f64| {
        run(
            TestKind::TcpStream,
            commit,
            "2024-01-01T00:00:00Z",
            &[value],
            false,
        )
    };
    let comparison = compare(
        &[one("aaaaaaa", 100.0)],
        &[one("bbbbbbb", 101.0)],
        &CompareOptions::default(),
    )
    .unwrap();
    let row = &only_group(&comparison).rows[0];
    assert_eq!(row.verdict, Verdict::NeedSamples);
    assert_eq!(row.samples_to_decide, None);
    assert_eq!(row.more_runs_per_side, None);
}

#[test]
fn environment_differences_that_matter_are_listed() {
    let mut noise = Noise(3);
    let mut base = run(
        TestKind::TcpStream,
        "aaaaaaa",
        "2024-01-01T00:00:00Z",
        &noise.around(1e9, 0.01, 5),
        false,
    );
    let mut patched = run(
        TestKind::TcpStream,
        "bbbbbbb",
        "2024-01-02T00:00:00Z",
        &noise.around(1e9, 0.01, 5),
        false,
    );
    base.env.local.kernel_release = Some("6.8.0".into());
    base.env.local.governor = Some("performance".into());
    base.env
        .local
        .sysctls
        .insert("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into());
    patched.env.local = base.env.local.clone();
    patched.env.local.kernel_release = Some("6.8.0-patched".into());
    patched
        .env
        .local
        .sysctls
        .insert("net.ipv4.tcp_rmem".into(), "4096 87380 6291456".into());
    base.env.remote = Some(HostEnv {
        cpu_count: Some(8),
        ..HostEnv::default()
    });
    patched.env.remote = Some(HostEnv {
        cpu_count: Some(16),
        ..HostEnv::default()
    });
    base.seal().unwrap();
    patched.seal().unwrap();
    let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
    let group = only_group(&comparison);
    assert!(group.config_keys_differ);
    assert_eq!(
        group.env_differences,
        [
            EnvChange {
                host: Host::Local,
                key: "sysctl.net.ipv4.tcp_rmem".into(),
                first: Some("4096 131072 6291456".into()),
                second: Some("4096 87380 6291456".into()),
            },
            EnvChange {
                host: Host::Remote,
                key: "cpu_count".into(),
                first: Some("8".into()),
                second: Some("16".into()),
            },
        ]
    );
}

#[test]
fn groups_on_one_side_only_are_listed() {
    let stream = |commit: &str| {
        run(
            TestKind::TcpStream,
            commit,
            "2024-01-01T00:00:00Z",
            &[1.0, 2.0, 3.0, 4.0],
            false,
        )
    };
    let rr = run(
        TestKind::TcpRr,
        "aaaaaaa",
        "2024-01-01T00:00:00Z",
        &[1.0, 2.0],
        false,
    );
    let udp = run(
        TestKind::UdpStream,
        "bbbbbbb",
        "2024-01-01T00:00:00Z",
        &[1.0, 2.0],
        false,
    );
    let comparison = compare(
        &[stream("aaaaaaa"), rr.clone()],
        &[stream("bbbbbbb"), udp.clone()],
        &CompareOptions::default(),
    )
    .unwrap();
    assert_eq!(comparison.groups.len(), 1);
    let unmatched: Vec<(Side, &str, usize)> = comparison
        .unmatched
        .iter()
        .map(|group| (group.side, group.spec.test.as_str(), group.n_runs))
        .collect();
    assert_eq!(
        unmatched,
        [(Side::First, "TCP_RR", 1), (Side::Second, "UDP_STREAM", 1)]
    );
    assert_eq!(
        comparison.unmatched[0].spec_key,
        rr.compute_spec_key().unwrap()
    );
    assert_eq!(comparison.unmatched[0].spec.request_size_bytes, Some(1));
    assert_eq!(comparison.unmatched[0].spec.send_size_bytes, None);
}

#[test]
fn lower_is_better_for_latency_and_service_demand() {
    let mut noise = Noise(11);
    let base = run(
        TestKind::TcpRr,
        "aaaaaaa",
        "2024-01-01T00:00:00Z",
        &noise.around(40_000.0, 0.01, 8),
        true,
    );
    let patched = run(
        TestKind::TcpRr,
        "bbbbbbb",
        "2024-01-02T00:00:00Z",
        &noise.around(36_000.0, 0.01, 8),
        true,
    );
    let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
    let rows = &only_group(&comparison).rows;
    let summary: Vec<(&str, &str, Verdict, Option<ChangeKind>, bool)> = rows
        .iter()
        .map(|row| {
            (
                row.metric.as_str(),
                row.unit.as_str(),
                row.verdict,
                row.direction,
                row.change_pct.unwrap() > 0.0,
            )
        })
        .collect();
    // Fewer transactions: the rate fell (worse), so latency and CPU
    // per transaction rose (also worse), with the opposite sign.
    assert_eq!(
        summary,
        [
            (
                "transaction_rate",
                "trans/s",
                Verdict::Significant,
                Some(ChangeKind::Regression),
                false
            ),
            (
                "throughput_bps",
                "bits/s",
                Verdict::Significant,
                Some(ChangeKind::Regression),
                false
            ),
            (
                "latency_p99_us",
                "us",
                Verdict::Significant,
                Some(ChangeKind::Regression),
                true
            ),
            (
                "local_service_demand",
                "us/Tran",
                Verdict::Significant,
                Some(ChangeKind::Regression),
                true
            ),
        ]
    );
    assert_eq!(
        ChangeKind::of_change(Metric::LatencyP99Us, 30.0, 25.0),
        Some(ChangeKind::Improvement)
    );
    assert_eq!(
        ChangeKind::of_change(Metric::LatencyP99Us, 30.0, 30.0),
        None
    );
}

/// Replaces the CPU figures of every iteration with local and remote
/// service demands taken in turn from the lists, then reseals.
fn with_service_demand(mut record: RunRecord, local: &[f64], remote: &[f64]) -> RunRecord {
    for (idx, iteration) in record.iterations.iter_mut().enumerate() {
        iteration.cpu = Some(CpuFigures {
            local_util_pct: Some(12.5),
            remote_util_pct: Some(14.0),
            local_service_demand: local.get(idx % local.len().max(1)).copied(),
            remote_service_demand: remote.get(idx % remote.len().max(1)).copied(),
        });
    }
    record.seal().unwrap();
    record
}

/// Replaces the p99 latency of every iteration, then reseals.
fn with_p99(mut record: RunRecord, p99_us: &[f64]) -> RunRecord {
    for (iteration, p99) in record.iterations.iter_mut().zip(p99_us) {
        if let Some(latency) = iteration.latency.as_mut() {
            latency.p99_us = *p99;
        }
    }
    record.seal().unwrap();
    record
}

#[test]
fn template_samples_are_current() {
    let mut noise = Noise(42);
    let at = |day: u32| format!("2024-03-{day:02}T09:00:00Z");

    // A patch email: a throughput gain, a latency regression within an
    // unchanged transaction rate, too few UDP samples, one test per
    // side that the other lacks, and a sysctl that changed between.
    let mut stream_base = run(
        TestKind::TcpStream,
        "1a2b3c4d5e6f",
        &at(1),
        &noise.around(9.41325e9, 0.008, 8),
        true,
    );
    stream_base.env.local.governor = Some("performance".into());
    stream_base
        .env
        .local
        .sysctls
        .insert("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into());
    let stream_base = with_service_demand(
        stream_base,
        &noise.around(0.412, 0.02, 8),
        &noise.around(0.388, 0.02, 8),
    );
    let mut stream_patched = run(
        TestKind::TcpStream,
        "9f8e7d6c5b4a",
        &at(2),
        &noise.around(9.41325e9 * 1.1, 0.008, 8),
        true,
    );
    stream_patched.env.local.governor = Some("schedutil".into());
    stream_patched
        .env
        .local
        .sysctls
        .insert("net.ipv4.tcp_rmem".into(), "4096 87380 6291456".into());
    let stream_patched = with_service_demand(
        stream_patched,
        &noise.around(0.376, 0.02, 8),
        &noise.around(0.390, 0.02, 8),
    );
    let rr_base = with_p99(
        run(
            TestKind::TcpRr,
            "1a2b3c4d5e6f",
            &at(1),
            &noise.around(53_012.0, 0.004, 6),
            false,
        ),
        &noise.around(31.0, 0.01, 6),
    );
    let rr_patched = with_p99(
        run(
            TestKind::TcpRr,
            "9f8e7d6c5b4a",
            &at(2),
            &noise.around(52_990.0, 0.004, 6),
            false,
        ),
        &noise.around(33.0, 0.01, 6),
    );
    let udp_base = run(
        TestKind::UdpStream,
        "1a2b3c4d5e6f",
        &at(1),
        &noise.around(4.2e9, 0.01, 2),
        false,
    );
    let udp_patched = run(
        TestKind::UdpStream,
        "9f8e7d6c5b4a",
        &at(2),
        &noise.around(4.3e9, 0.01, 2),
        false,
    );
    let maerts = run(
        TestKind::TcpMaerts,
        "1a2b3c4d5e6f",
        &at(1),
        &noise.around(9.2e9, 0.01, 3),
        false,
    );
    let crr = run(
        TestKind::TcpCrr,
        "9f8e7d6c5b4a",
        &at(2),
        &noise.around(8_000.0, 0.01, 3),
        false,
    );
    let options = CompareOptions {
        first_label: "v6.8-rc1 (1a2b3c4d5e6f)".into(),
        second_label: "v6.8-rc1 + tcp: defer ack on sleep (9f8e7d6c5b4a)".into(),
        first_name: "v6.8-rc1".into(),
        second_name: "9f8e7d6c5b4a".into(),
        ..CompareOptions::default()
    };
    let comparison = compare(
        &[stream_base, rr_base, udp_base, maerts],
        &[stream_patched, rr_patched, udp_patched, crr],
        &options,
    )
    .unwrap();
    for template in ["compare", "compare-stats"] {
        check_template_sample(&format!("{template}--base-vs-patched"), &comparison);
    }

    // Extremes: 100 Gb/s, service demand of a thousandth, long labels
    // and testbed, many flows, set buffers, IPv6, and a long list of
    // environment differences, one of them unset on a side.
    let long_testbed = "rack42-mlx5-100g-back-to-back-numa1-with-a-very-long-name";
    let extreme_run = |commit: &str, day: u32, level: f64, noise: &mut Noise| {
        let mut record = run(
            TestKind::TcpStream,
            commit,
            &at(day),
            &noise.around(level, 0.002, 12),
            true,
        );
        record.testbed = long_testbed.into();
        record.spec.family = AddressFamily::Ipv6;
        record.spec.flows = 16;
        record.spec.nodelay = true;
        record.spec.local_socket_buffer_bytes = Some(4_194_304);
        record.spec.remote_socket_buffer_bytes = Some(4_194_304);
        record.spec.send_size_bytes = 65_536;
        record
    };
    let mut extreme_base = extreme_run("0123456789ab", 3, 1.0e11, &mut noise);
    let mut extreme_patched = extreme_run("ba9876543210", 4, 0.997e11, &mut noise);
    extreme_base.env.local.sysctls.insert(
        "net.ipv4.tcp_mem".into(),
        "18446744073709551615 18446744073709551615 18446744073709551615".into(),
    );
    extreme_patched
        .env
        .local
        .sysctls
        .insert("net.ipv4.tcp_mem".into(), "1 2 3".into());
    extreme_base
        .env
        .local
        .sysctls
        .insert("net.core.busy_poll".into(), "50".into());
    extreme_base.env.local.cpu_count = Some(256);
    extreme_patched.env.local.cpu_count = Some(8);
    extreme_base.env.remote = Some(HostEnv {
        interface: Some(run_record::env::InterfaceEnv {
            name: "ens1f0np0".into(),
            features: [("tcp-segmentation-offload".to_string(), true)].into(),
            ..Default::default()
        }),
        ..HostEnv::default()
    });
    extreme_patched.env.remote = Some(HostEnv {
        interface: Some(run_record::env::InterfaceEnv {
            name: "ens1f0np0".into(),
            features: [("tcp-segmentation-offload".to_string(), false)].into(),
            ..Default::default()
        }),
        ..HostEnv::default()
    });
    let extreme_base = with_service_demand(extreme_base, &noise.around(0.001, 0.05, 12), &[0.0004]);
    let extreme_patched =
        with_service_demand(extreme_patched, &noise.around(0.0011, 0.05, 12), &[0.0004]);
    let extreme_options = CompareOptions {
        alpha: 0.01,
        min_effect_pct: 1.0,
        first_label: "v6.9-rc7-01234-g0123456789ab-dirty built with CONFIG_DEBUG_PREEMPT=y \
                      and CONFIG_PROVE_LOCKING=y on the lab's slowest box"
            .into(),
        second_label: "ba9876543210ba9876543210ba9876543210ba98".into(),
        first_name: "v6.9-rc7-01234-g0123456789ab".into(),
        second_name: "ba9876543210".into(),
    };
    // An imported request/response run without transaction rates on
    // the base side, and a remote environment on one side only.
    let mut rr_without_rate = run(
        TestKind::TcpRr,
        "0123456789ab",
        &at(3),
        &noise.around(8.0, 0.01, 5),
        false,
    );
    for iteration in &mut rr_without_rate.iterations {
        iteration.transaction_rate = None;
    }
    rr_without_rate.seal().unwrap();
    let mut rr_with_remote = run(
        TestKind::TcpRr,
        "ba9876543210",
        &at(4),
        &noise.around(8.0, 0.01, 5),
        false,
    );
    rr_with_remote.env.remote = Some(HostEnv {
        cpu_count: Some(8),
        ..HostEnv::default()
    });
    rr_with_remote.seal().unwrap();
    let comparison = compare(
        &[extreme_base, rr_without_rate],
        &[extreme_patched, rr_with_remote],
        &extreme_options,
    )
    .unwrap();
    let rr_group = &comparison.groups[1];
    assert!(rr_group.config_keys_differ && rr_group.env_differences.is_empty());
    assert_eq!(rr_group.rows[0].first, None);
    for template in ["compare", "compare-stats"] {
        check_template_sample(&format!("{template}--extreme"), &comparison);
    }

    // Nothing in common: every group is on one side only.
    let comparison = compare(
        &[run(
            TestKind::TcpStream,
            "1a2b3c4d5e6f",
            &at(1),
            &[1e9, 1.1e9],
            false,
        )],
        &[run(TestKind::UdpRr, "9f8e7d6c5b4a", &at(2), &[1e4], false)],
        &CompareOptions::default(),
    )
    .unwrap();
    for template in ["compare", "compare-stats"] {
        check_template_sample(&format!("{template}--nothing-in-common"), &comparison);
    }
}

#[test]
fn options_are_checked() {
    for options in [
        CompareOptions {
            alpha: 0.0,
            ..CompareOptions::default()
        },
        CompareOptions {
            alpha: f64::NAN,
            ..CompareOptions::default()
        },
        CompareOptions {
            min_effect_pct: -1.0,
            ..CompareOptions::default()
        },
    ] {
        assert!(matches!(
            compare(&[], &[], &options),
            Err(CompareError::InvalidOption(_))
        ));
    }
    let empty = compare(&[], &[], &CompareOptions::default()).unwrap();
    assert!(empty.groups.is_empty() && empty.unmatched.is_empty());
}
