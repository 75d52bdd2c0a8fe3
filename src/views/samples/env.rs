//! Samples of `env`: a lab server, and a host that gave nothing away.

use super::Sample;
use crate::views::env::EnvContext;
use run_record::env::{HostEnv, InterfaceEnv};

pub fn samples() -> Vec<Sample> {
    let sysctls = [
        ("net.core.busy_poll", "0"),
        ("net.core.busy_read", "0"),
        ("net.core.netdev_max_backlog", "1000"),
        ("net.core.rmem_default", "212992"),
        ("net.core.rmem_max", "4194304"),
        ("net.core.wmem_default", "212992"),
        ("net.core.wmem_max", "4194304"),
        ("net.ipv4.tcp_autocorking", "1"),
        ("net.ipv4.tcp_congestion_control", "bbr"),
        ("net.ipv4.tcp_ecn", "2"),
        ("net.ipv4.tcp_limit_output_bytes", "4194304"),
        ("net.ipv4.tcp_mem", "287901 383869 575802"),
        ("net.ipv4.tcp_notsent_lowat", "4294967295"),
        ("net.ipv4.tcp_rmem", "4096 131072 33554432"),
        ("net.ipv4.tcp_sack", "1"),
        ("net.ipv4.tcp_slow_start_after_idle", "1"),
        ("net.ipv4.tcp_timestamps", "1"),
        ("net.ipv4.tcp_wmem", "4096 16384 4194304"),
    ];
    let server = HostEnv {
        kernel_release: Some("6.8.0-rc1-00123-gabcdef123456".into()),
        kernel_version: Some("#1 SMP PREEMPT_DYNAMIC Mon Jan 22 10:00:00 UTC 2024".into()),
        cpu_model: Some("Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz".into()),
        cpu_count: Some(128),
        cpus_online: Some("0-127".into()),
        smt: Some("on".into()),
        cpufreq_driver: Some("intel_pstate".into()),
        governor: Some("performance".into()),
        boost: Some(true),
        cpuidle_driver: Some("intel_idle".into()),
        clocksource: Some("tsc".into()),
        transparent_hugepages: Some("madvise".into()),
        sysctls: sysctls
            .iter()
            .map(|(name, value)| (name.to_string(), value.to_string()))
            .collect(),
        interface: Some(InterfaceEnv {
            name: "ens1f0np0".into(),
            mtu: Some(9000),
            driver: Some("mlx5_core".into()),
            speed_mbps: Some(100_000),
            qdisc: Some("mq".into()),
            tx_queue_len: Some(1000),
            ..InterfaceEnv::default()
        }),
        ..HostEnv::default()
    };
    let unreadable = HostEnv::default();
    vec![
        Sample::new("env", "server", &EnvContext { env: &server }),
        Sample::new("env", "nothing-readable", &EnvContext { env: &unreadable }),
    ]
}
