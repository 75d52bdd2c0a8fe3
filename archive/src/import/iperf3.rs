//! iperf3 `-J` output, TCP and UDP, as one run record.
//!
//! The whole test is one iteration: iperf3's intervals are reporting
//! windows of one transfer, not repeated measurements. Mapping:
//!
//! - test: UDP_STREAM for `-u`; TCP_STREAM, or TCP_MAERTS with `-R`;
//! - throughput: `end.sum_received.bits_per_second` (the receiver's);
//!   for UDP also `end.sum_sent.bits_per_second`, the sender's, as
//!   printed;
//! - bytes: `sum_sent.bytes` and `sum_received.bytes`; UDP datagrams:
//!   `sum_sent.packets`, and `sum_received.packets - lost_packets`;
//! - CPU: `cpu_utilization_percent.host_total` (local) and `remote_total`;
//! - spec: duration, block size as send size, streams as flows, socket
//!   buffer (`-w`) when set; start time from `start.timestamp.timesecs`.

use super::{ImportError, ImportOptions, PeerFigures, PeerRun, build_record};
use run_record::record::{CpuFigures, Endpoint, Environments, RunRecord, Source};
use run_record::spec::{AddressFamily, RunSpec, TestKind};
use serde::Deserialize;
use std::time::{Duration, UNIX_EPOCH};

#[derive(Deserialize)]
struct Document {
    start: Start,
    end: End,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Start {
    #[serde(default)]
    version: Option<String>,
    #[serde(default)]
    system_info: Option<String>,
    #[serde(default)]
    timestamp: Option<Timestamp>,
    #[serde(default)]
    connecting_to: Option<ConnectingTo>,
    #[serde(default)]
    sock_bufsize: Option<u64>,
    test_start: TestStart,
}

#[derive(Deserialize)]
struct Timestamp {
    timesecs: u64,
}

#[derive(Deserialize)]
struct ConnectingTo {
    host: String,
    port: u16,
}

#[derive(Deserialize)]
struct TestStart {
    protocol: String,
    num_streams: u32,
    blksize: u32,
    duration: f64,
    #[serde(default)]
    reverse: u32,
}

#[derive(Deserialize)]
struct End {
    sum_sent: Sum,
    sum_received: Sum,
    #[serde(default)]
    cpu_utilization_percent: Option<CpuUtilization>,
}

#[derive(Deserialize)]
struct Sum {
    seconds: f64,
    bytes: u64,
    bits_per_second: f64,
    #[serde(default)]
    packets: Option<u64>,
    #[serde(default)]
    lost_packets: Option<u64>,
    #[serde(default)]
    lost_percent: Option<f64>,
}

#[derive(Deserialize)]
struct CpuUtilization {
    host_total: f64,
    remote_total: f64,
}

/// Parses one iperf3 `-J` document.
pub fn parse(text: &str, options: &ImportOptions) -> Result<RunRecord, ImportError> {
    let document: Document = serde_json::from_str(text)
        .map_err(|err| ImportError::parse(err.line(), format!("not iperf3 -J output: {err}")))?;
    if let Some(error) = document.error {
        return Err(ImportError::parse(
            1,
            format!("iperf3 reported an error: {error}"),
        ));
    }
    let start = document.start;
    let test_start = &start.test_start;
    let test = match (test_start.protocol.as_str(), test_start.reverse) {
        ("UDP", 0) => TestKind::UdpStream,
        ("TCP", 0) => TestKind::TcpStream,
        ("TCP", _) => TestKind::TcpMaerts,
        (protocol, _) => {
            return Err(ImportError::parse(
                1,
                format!(
                    "unsupported iperf3 test: protocol {protocol}, reverse {}",
                    test_start.reverse
                ),
            ));
        }
    };
    let mut spec = RunSpec::defaults(test);
    spec.duration_s = test_start.duration;
    spec.send_size_bytes = test_start.blksize;
    spec.flows = test_start.num_streams.max(1);
    let buffer = start
        .sock_bufsize
        .filter(|size| *size > 0)
        .and_then(|size| u32::try_from(size).ok());
    spec.local_socket_buffer_bytes = buffer;
    spec.remote_socket_buffer_bytes = buffer;
    let endpoint = match &start.connecting_to {
        Some(to) => Endpoint {
            host: to.host.clone(),
            port: Some(to.port),
        },
        None => Endpoint {
            host: String::from("unknown"),
            port: None,
        },
    };
    if endpoint.host.contains(':') {
        spec.family = AddressFamily::Ipv6;
    }
    let mut env = Environments::default();
    // "Linux host 6.18.44 #1 SMP ..." names the local kernel release.
    env.local.kernel_release = start
        .system_info
        .as_deref()
        .and_then(|info| info.split_whitespace().nth(2))
        .map(str::to_string);
    let end = document.end;
    let sent = &end.sum_sent;
    let received = &end.sum_received;
    let mut figures = PeerFigures {
        elapsed_s: Some(received.seconds.max(sent.seconds)),
        throughput_bps: Some(received.bits_per_second),
        bytes_sent: Some(sent.bytes),
        bytes_received: Some(received.bytes),
        ..PeerFigures::default()
    };
    if test == TestKind::UdpStream {
        figures.messages_sent = sent.packets;
        figures.messages_received = received
            .packets
            .map(|packets| packets.saturating_sub(received.lost_packets.unwrap_or(0)));
        figures.loss_pct = received.lost_percent;
        figures.sent_throughput_bps = Some(sent.bits_per_second);
    }
    if let Some(cpu) = end.cpu_utilization_percent {
        figures.cpu = CpuFigures {
            local_util_pct: Some(cpu.host_total),
            remote_util_pct: Some(cpu.remote_total),
            ..CpuFigures::default()
        };
    }
    let version = start
        .version
        .as_deref()
        .map(|text| text.trim_start_matches("iperf").trim().to_string());
    // Record times are RFC 3339 with four-digit years: a start past
    // 9999-12-31 is not a time iperf3 wrote.
    const LAST_SECOND_OF_9999: u64 = 253_402_300_799;
    if let Some(stamp) = &start.timestamp
        && stamp.timesecs > LAST_SECOND_OF_9999
    {
        return Err(ImportError::parse(
            1,
            format!(
                "start.timestamp.timesecs {} is past the year 9999",
                stamp.timesecs
            ),
        ));
    }
    let run = PeerRun {
        source: Source {
            tool: String::from("iperf3"),
            version,
            undated: false,
        },
        spec,
        endpoint,
        env,
        started_at: start
            .timestamp
            .map(|stamp| UNIX_EPOCH + Duration::from_secs(stamp.timesecs)),
        figures,
        confidence: None,
    };
    build_record(run, options).map_err(|err| ImportError::parse(1, err.to_string()))
}
