//! The members of a run record below its top level: where the run came
//! from and what it ran against ([`Source`], [`Endpoint`], [`Subject`],
//! [`Environments`]), each iteration's figures down to the flows, the
//! sockets and the CPUs ([`Iteration`]), and the summary over the
//! iterations ([`Summary`]). Plain data: how a record is sealed and read
//! is the parent module's.

use crate::env::{HostEnv, VmEnv};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The tool that produced a record.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// `netbisect`, or the peer tool an imported run came from (`netperf`,
    /// `iperf3`).
    pub tool: String,
    /// Version of that tool, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The tool's output said nothing of when the run took place (netperf
    /// prints no time): `started_at` and `finished_at` hold when it was
    /// imported, for ordering, and are left out of the id, so the same
    /// output imported twice is one run. Since 1.1.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub undated: bool,
}

/// The control port of `netbisect serve` when none is given: a run's
/// [`Endpoint`] on another port was made with `-p`.
pub const DEFAULT_CONTROL_PORT: u16 = 12866;

/// Where the remote end was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Remote host as given (`127.0.0.1` for the embedded server).
    pub host: String,
    /// Control port, when there was one (a server given with `-H`; the
    /// embedded server has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

/// What was measured: the code under test.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    /// Commit id (full or abbreviated hex).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// `git describe` of the commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub describe: Option<String>,
    /// Kernel release of the system under test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel_release: Option<String>,
    /// Free-form label such as `base` or `patched`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// The environment of both ends.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environments {
    /// The end that ran `bench`.
    pub local: HostEnv,
    /// The server end, when it reported one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<HostEnv>,
    /// The virtual machine the local end ran in, when it ran in one
    /// (`netbisect bench --kernel`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vm: Option<VmEnv>,
}

/// CPU figures of one iteration or of a whole run.
///
/// Service demand is in netperf's units: microseconds of CPU per KB (1024
/// bytes) for stream tests, per transaction for request/response tests.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuFigures {
    /// System-wide utilisation of the local host, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_util_pct: Option<f64>,
    /// System-wide utilisation of the remote host, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_util_pct: Option<f64>,
    /// Local service demand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_service_demand: Option<f64>,
    /// Remote service demand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_service_demand: Option<f64>,
}

/// Latency of request/response transactions, microseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyFigures {
    /// Fastest transaction.
    pub min_us: f64,
    /// Mean transaction time.
    pub mean_us: f64,
    /// Standard deviation.
    pub stddev_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Slowest transaction.
    pub max_us: f64,
}

/// Latency as a peer tool reported it, microseconds: only the figures it
/// printed (netperf omni prints the selectors it was asked for), so each
/// one may be absent. Imported runs carry this where the full set of
/// [`LatencyFigures`] is not known.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyReport {
    /// Fastest transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_us: Option<f64>,
    /// Mean transaction time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_us: Option<f64>,
    /// Standard deviation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev_us: Option<f64>,
    /// Median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_us: Option<f64>,
    /// 90th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p90_us: Option<f64>,
    /// 99th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_us: Option<f64>,
    /// 99.9th percentile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p999_us: Option<f64>,
    /// Slowest transaction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_us: Option<f64>,
}

/// Raw figures of one iteration (one measured window).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    /// Measured length of the window, seconds.
    pub elapsed_s: f64,
    /// Payload throughput at the receiver, bits per second. For
    /// request/response tests: request plus response bytes per second.
    pub throughput_bps: f64,
    /// Transactions per second (request/response tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_rate: Option<f64>,
    /// Completed transactions (request/response tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// Payload bytes sent by the sending end(s). Absent only in an
    /// imported run whose tool did not print it (since 1.1: a count is
    /// never derived from a rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_sent: Option<u64>,
    /// Payload bytes received by the receiving end(s); absent as above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_received: Option<u64>,
    /// Messages (send calls, datagrams) sent; absent as above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_sent: Option<u64>,
    /// Messages received; absent as above.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages_received: Option<u64>,
    /// CPU figures, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuFigures>,
    /// Latency figures (request/response tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyFigures>,
    /// Transactions given up after a lost datagram (UDP_RR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_transactions: Option<u64>,
    /// Send calls that failed (UDP tests; netperf's "Errors"): the sum of
    /// both ends' `send_errors`. Absent when not counted (records before
    /// 1.1, imports whose text has no such column).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_errors: Option<u64>,
    /// What each end counted and which sockets it used. With several
    /// flows: counts summed over the flows, the time of the longest flow,
    /// and the first flow's socket.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ends: Option<EndsReport>,
    /// Partial latency figures of an imported run (see [`LatencyReport`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_latency: Option<LatencyReport>,
    /// The sender's throughput as an imported tool printed it, bits per
    /// second (netperf's UDP_STREAM prints it on its first line);
    /// `throughput_bps` is the receiver's. Since 1.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_sent_throughput_bps: Option<f64>,
    /// Operations per second as uperf printed them, each write and each
    /// read one operation; `transaction_rate` counts a write and its read
    /// as one transaction. Since 1.2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_operation_rate: Option<f64>,
    /// CPU utilisation broken out by state, and the tool's own CPU time,
    /// of each measured end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_detail: Option<CpuDetail>,
    /// Every transaction's time (request/response tests), all flows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<LatencyHistogram>,
    /// Per-flow figures when the test ran more than one flow; the
    /// iteration's own figures are then the aggregate: rates, counts and
    /// bytes are the sums over the flows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<FlowFigures>,
}

/// The figures of one flow of a multi-flow iteration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowFigures {
    /// Measured length of the flow's window, seconds.
    pub elapsed_s: f64,
    /// Payload throughput of the flow, bits per second.
    pub throughput_bps: f64,
    /// Transactions per second (request/response tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_rate: Option<f64>,
    /// Completed transactions (request/response tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// Payload bytes sent.
    pub bytes_sent: u64,
    /// Payload bytes received.
    pub bytes_received: u64,
    /// Latency of the flow's transactions (request/response tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyFigures>,
    /// What each end of the flow counted, and its sockets.
    pub ends: EndsReport,
}

/// CPU detail of both ends of one iteration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuDetail {
    /// The local host (`-c`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<HostCpu>,
    /// The remote host (`-C`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<HostCpu>,
}

/// One host's CPU over the measured window: system-wide time by state
/// from `/proc/stat` (percent of all CPUs' time; they add up to 100),
/// and the CPU time of the tool's own data threads (`getrusage`).
///
/// Utilisation is everything but `idle_pct`: as netperf does, time in
/// iowait counts as busy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostCpu {
    /// Length of the window the counters were read over, seconds.
    pub window_s: f64,
    /// CPUs counted in `/proc/stat`.
    pub n_cpus: u32,
    /// Utilisation: 100 minus idle, percent.
    pub util_pct: f64,
    /// User time, percent.
    pub user_pct: f64,
    /// Niced user time, percent.
    pub nice_pct: f64,
    /// System time, percent.
    pub system_pct: f64,
    /// Time waiting for I/O, percent (counted as busy).
    pub iowait_pct: f64,
    /// Hard interrupt time, percent.
    pub irq_pct: f64,
    /// Soft interrupt time, percent.
    pub softirq_pct: f64,
    /// Time stolen by the hypervisor, percent.
    pub steal_pct: f64,
    /// Idle time, percent.
    pub idle_pct: f64,
    /// User CPU time of the tool's data threads, seconds.
    pub process_user_s: f64,
    /// System CPU time of the tool's data threads, seconds.
    pub process_system_s: f64,
}

/// Transaction times in log-linear buckets (at most 1/64 wide relative to
/// their value), so that any percentile can be computed later within
/// that precision.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LatencyHistogram {
    /// Sub-buckets per power of two: a bucket's width is at most
    /// 1/`sub_buckets` of its values.
    pub sub_buckets: u32,
    /// Transactions recorded.
    pub count: u64,
    /// Fastest transaction, nanoseconds.
    pub min_ns: u64,
    /// Slowest transaction, nanoseconds.
    pub max_ns: u64,
    /// Non-empty buckets in ascending order, each as the highest value
    /// the bucket holds (nanoseconds) and its count.
    pub buckets: Vec<[u64; 2]>,
}

/// What `TCP_INFO` said about a connection when its test ended.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TcpInfoFigures {
    /// Segments retransmitted over the connection's life.
    pub total_retrans: u64,
    /// Smoothed round-trip time, microseconds.
    pub rtt_us: u64,
    /// Round-trip time variation, microseconds.
    pub rttvar_us: u64,
    /// Congestion window, segments.
    pub snd_cwnd: u64,
    /// Sender's maximum segment size, bytes.
    pub snd_mss: u64,
    /// Most recent delivery rate, bits per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate_bps: Option<u64>,
    /// Time spent sending data, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub busy_time_us: Option<u64>,
    /// Time limited by the peer's receive window, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rwnd_limited_us: Option<u64>,
    /// Time limited by the send buffer, microseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sndbuf_limited_us: Option<u64>,
}

/// The raw figures of both ends of one iteration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EndsReport {
    /// The end that ran `bench` (the client).
    pub local: EndReport,
    /// The server end.
    pub remote: EndReport,
}

/// What one end counted in one iteration, and the socket it used.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct EndReport {
    /// Time this end measured from its first to its last data operation,
    /// seconds.
    pub elapsed_s: f64,
    /// Payload bytes this end sent.
    pub bytes_sent: u64,
    /// Payload bytes this end received.
    pub bytes_received: u64,
    /// Send calls (datagrams) that succeeded.
    pub messages_sent: u64,
    /// Receive calls (datagrams) that returned data.
    pub messages_received: u64,
    /// Transactions completed (request/response tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transactions: Option<u64>,
    /// Receive timeouts taken as lost datagrams (UDP_RR client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeouts: Option<u64>,
    /// Send calls that failed and were counted rather than ending the
    /// test (UDP: `ENOBUFS` when a device queue is full, `EAGAIN`), by
    /// errno name; left out when none failed. Since 1.1.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub send_errors: BTreeMap<String, u64>,
    /// The data socket (for TCP_CRR, the last connection's).
    pub socket: SocketTruth,
    /// `TCP_INFO` of the data socket when the test ended (TCP tests but
    /// TCP_CRR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp_info: Option<TcpInfoFigures>,
}

/// The data socket of one end as the kernel reported it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SocketTruth {
    /// Address of this end (`getsockname`), as `ip:port` or `[ip]:port`.
    pub local_address: String,
    /// Address of the other end (`getpeername`, or the first sender for a
    /// UDP server).
    pub peer_address: String,
    /// `SO_SNDBUF`.
    pub send_buffer: BufferTruth,
    /// `SO_RCVBUF`.
    pub recv_buffer: BufferTruth,
}

/// One socket buffer: what was asked and what the kernel did with it.
///
/// Linux doubles a requested size to leave room for its bookkeeping, and
/// setting a TCP buffer turns off autotuning for it, so the size at the
/// end of a test differs from the size after setup only when the buffer
/// was left to autotuning.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferTruth {
    /// Requested size (`-s`/`-S`); absent when left to the kernel.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_bytes: Option<u64>,
    /// Size read back right after the socket was set up.
    pub after_setup_bytes: u64,
    /// Size read back when the test ended.
    pub at_end_bytes: u64,
}

/// Mean, spread and range of one figure over the iterations.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Spread {
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1); 0 for one iteration.
    pub stddev: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Spread {
    /// Summarises `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let n_samples = values.len();
        if n_samples == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n_samples as f64;
        let stddev = if n_samples > 1 {
            let sum_sq: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
            (sum_sq / (n_samples - 1) as f64).sqrt()
        } else {
            0.0
        };
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        Some(Spread {
            mean,
            stddev,
            min,
            max,
        })
    }
}

/// The confidence interval reached on the main metric.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceOutcome {
    /// Confidence level, percent.
    pub level_pct: u32,
    /// Lower bound of the interval on the mean.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Full width of the interval, percent of the mean.
    pub width_pct: f64,
    /// Requested full width, percent of the mean.
    pub target_width_pct: f64,
    /// True when the interval is within the requested width.
    pub met: bool,
}

/// Datagram accounting of a UDP_STREAM run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct UdpFigures {
    /// Datagrams the client sent.
    pub messages_sent: u64,
    /// Datagrams the server received.
    pub messages_received: u64,
    /// Lost datagrams as percent of those sent.
    pub loss_pct: f64,
    /// Send calls that failed, all iterations together; absent when not
    /// counted. Since 1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_errors: Option<u64>,
}

/// The summary of a run over its iterations.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of iterations summarised.
    pub n_iterations: u32,
    /// Throughput, bits per second.
    pub throughput_bps: Spread,
    /// Transactions per second (request/response tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction_rate: Option<Spread>,
    /// Confidence interval on the main metric, when one was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<ConfidenceOutcome>,
    /// Mean CPU figures, when measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuFigures>,
    /// Latency over all transactions (request/response tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyFigures>,
    /// Datagram accounting (UDP_STREAM).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpFigures>,
    /// Partial latency figures of an imported run (see [`LatencyReport`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_latency: Option<LatencyReport>,
    /// Every transaction of every iteration (request/response tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_histogram: Option<LatencyHistogram>,
    /// Confidence intervals reached on CPU utilisation, when both a
    /// confidence interval and CPU figures were asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_confidence: Option<CpuConfidence>,
}

/// The intervals reached on each end's CPU utilisation.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct CpuConfidence {
    /// On the local utilisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<ConfidenceOutcome>,
    /// On the remote utilisation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<ConfidenceOutcome>,
}
