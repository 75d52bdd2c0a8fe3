//! Samples of `compare` and `compare-stats`, on comparisons the archive
//! makes of scattered runs: a patch email (a throughput gain, a latency
//! regression within an unchanged transaction rate, too few UDP samples,
//! one test per side that the other lacks, a sysctl that changed),
//! extremes (100 Gb/s, service demand of a thousandth, long labels and
//! testbed, many flows, set buffers, IPv6, a long list of environment
//! differences), and two sides with nothing in common.

use super::Sample;
use crate::views::compare::CompareContext;
use crate::views::compare::CompareLayout;
use crate::views::compare_stats::CompareStatsContext;
use crate::views::units::Units;
use archive::compare::{CompareOptions, Comparison, compare};
use run_record::env::HostEnv;
use run_record::record::{CpuFigures, RunRecord};
use run_record::spec::{AddressFamily, TestKind};
use test_fixtures::noise::Noise;
use test_fixtures::record::sampled_run as run;

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
    record.seal().expect("the record seals again");
    record
}

/// Replaces the p99 latency of every iteration, then reseals.
fn with_p99(mut record: RunRecord, p99_us: &[f64]) -> RunRecord {
    for (iteration, p99) in record.iterations.iter_mut().zip(p99_us) {
        if let Some(latency) = iteration.latency.as_mut() {
            latency.p99_us = *p99;
        }
    }
    record.seal().expect("the record seals again");
    record
}

/// A morning of March 2024, when the runs compared were made.
fn at(day: u32) -> String {
    format!("2024-03-{day:02}T09:00:00Z")
}

/// The patch email's comparison, and the noise it left for the next.
fn base_vs_patched() -> (Comparison, Noise) {
    let mut noise = Noise(42);
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
    .expect("the samples compare");
    (comparison, noise)
}

fn extreme(mut noise: Noise) -> Comparison {
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
    rr_without_rate.seal().expect("the samples compare");
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
    rr_with_remote.seal().expect("the samples compare");
    let comparison = compare(
        &[extreme_base, rr_without_rate],
        &[extreme_patched, rr_with_remote],
        &extreme_options,
    )
    .expect("the samples compare");
    let rr_group = &comparison.groups[1];
    assert!(rr_group.config_keys_differ && rr_group.env_differences.is_empty());
    assert_eq!(rr_group.rows[0].first, None);
    comparison
}

/// Nothing in common: every group is on one side only.
fn nothing_in_common() -> Comparison {
    compare(
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
    .expect("the samples compare")
}

pub fn samples() -> Vec<Sample> {
    let (first, noise) = base_vs_patched();
    let units = Units::of_letter("m").expect("netperf's m");
    let mut samples = Vec::new();
    for (case, comparison) in [
        ("base-vs-patched", first),
        ("extreme", extreme(noise)),
        ("nothing-in-common", nothing_in_common()),
    ] {
        let settings = vec![String::new(); comparison.groups.len()];
        let mut context =
            CompareContext::new(&comparison, &settings, CompareLayout::Netperf, units, None);
        // The sample shows the table's end without the list of what only
        // one side has; tests/cli/netperf_layout.rs pins that list.
        context.nothing_in_common.clear();
        samples.push(Sample::new("compare", case, &context));
        samples.push(Sample::new(
            "compare-stats",
            case,
            &CompareStatsContext::new(&comparison),
        ));
    }
    samples
}
