//! The canonical run record, schema `netbisect.run/1.1`: one test run as
//! one JSON document, the unit that everything else stores, compares and
//! bisects on.
//!
//! # Format
//!
//! A record is a JSON object with these members (see the types below for
//! every field):
//!
//! - `schema`: `"netbisect.run/1.1"`. A reader rejects any other major
//!   version. A record of a revision this crate knows (`netbisect.run/1`
//!   and `netbisect.run/1.1`) has exactly the members the types below
//!   define, absent values left out (never `null`), so that what is read
//!   writes back to the same bytes and keeps its id; a `netbisect.run/1`
//!   record stays one when read (its `schema` is kept). Only a newer minor
//!   revision (`netbisect.run/1.N`, N > 1) may carry members this crate
//!   does not know; the id still covers them, and its `config_key` is
//!   checked over its `spec` as written.
//!
//!   Revision 1.1 added the spec's `first_burst` (left out when 0, so the
//!   `config_key` of every run without a burst is what 1.0 computed), the
//!   count of failed sends by errno (`send_errors`) of UDP tests and
//!   `source.undated`, and made an iteration's byte and message counts
//!   optional (an import keeps only what its tool printed). A 1.0 reader
//!   reads a 1.1 record that uses none of these; it refuses one with a
//!   burst (its config_key), an undated one (its id) and one without
//!   counts (a missing field), rather than misread them.
//! - `id`: blake3 of the canonical bytes of the record without `id`, as 64
//!   hex digits. Identical content gives an identical id, which makes
//!   storing, importing and merging idempotent. For an imported run whose
//!   text carried no time (`source.undated`, since 1.1), `started_at` and
//!   `finished_at` are the import time and are left out too, so its id
//!   depends on the text's content only.
//! - `config_key`: blake3 of the canonical bytes of the resolved `spec`,
//!   the `testbed` and the comparable knobs of both ends' environments
//!   ([`HostEnv::comparable_knobs`]); never the commit or a time. Two runs
//!   with the same `config_key` measured the same thing the same way.
//! - `source`, `started_at`, `finished_at` (RFC 3339 UTC), `spec`,
//!   `endpoint`, `subject`, `testbed`, `env`, `iterations`, `summary`.
//!
//! Bytes are RFC 8785 canonical JSON. Units are SI base units unless the
//! key names another (`_bps` bits per second, `_bytes`, `_s` seconds, `_us`
//! microseconds, `_pct` percent).

use crate::canonical::{self, CanonicalError};
use crate::env::{HostEnv, VmEnv};
use crate::spec::RunSpec;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

/// The schema this crate writes.
pub const SCHEMA: &str = "netbisect.run/1.1";
/// The schema major version this crate reads.
pub const SCHEMA_MAJOR: u32 = 1;
/// The newest minor revision of [`SCHEMA_MAJOR`] whose members this crate
/// knows; a record of a newer one may carry members it does not.
pub const SCHEMA_MINOR: u32 = 1;
const SCHEMA_PREFIX: &str = "netbisect.run/";

/// Why a record could not be read, written or sealed.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The bytes are not UTF-8.
    #[error("not UTF-8: invalid byte at offset {offset}")]
    NotUtf8 {
        /// Offset of the first invalid byte.
        offset: usize,
    },
    /// The input ended inside the document.
    #[error("truncated JSON: input ends at line {line}, column {column}")]
    Truncated {
        /// Line where the input ends.
        line: usize,
        /// Column where the input ends.
        column: usize,
    },
    /// The JSON text is malformed.
    #[error("malformed JSON at line {line}, column {column}: {message}")]
    Malformed {
        /// Line of the error.
        line: usize,
        /// Column of the error.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// The document has no `schema` member.
    #[error("missing \"schema\" field (expected \"{SCHEMA}\")")]
    MissingSchema,
    /// The schema names another document type or major version.
    #[error("unsupported schema \"{found}\": this netbisect reads netbisect.run/{SCHEMA_MAJOR}.x")]
    UnsupportedSchema {
        /// The schema as found.
        found: String,
    },
    /// A field is missing or has the wrong type.
    #[error("invalid record: {0}")]
    Invalid(String),
    /// A number cannot be represented canonically.
    #[error(transparent)]
    Canonical(#[from] CanonicalError),
    /// The stated id is not the hash of the content.
    #[error("id does not match the content: stated {stated}, computed {computed}")]
    IdMismatch {
        /// The id in the document.
        stated: String,
        /// The id of the content.
        computed: String,
    },
    /// The stated config_key is not the hash of the spec and environment.
    #[error("config_key does not match the content: stated {stated}, computed {computed}")]
    ConfigKeyMismatch {
        /// The config_key in the document.
        stated: String,
        /// The config_key of the content.
        computed: String,
    },
}

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

/// Where the remote end was.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Endpoint {
    /// Remote host as given (`127.0.0.1` for the embedded server).
    pub host: String,
    /// Control port, when there was one.
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

/// One test run: the canonical run record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    /// Always [`SCHEMA`] when written by this crate.
    pub schema: String,
    /// Content hash; see the module documentation.
    pub id: String,
    /// Comparability hash; see the module documentation.
    pub config_key: String,
    /// The tool that produced the run.
    pub source: Source,
    /// Start of the run, RFC 3339 UTC.
    pub started_at: String,
    /// End of the run, RFC 3339 UTC.
    pub finished_at: String,
    /// The resolved test specification.
    pub spec: RunSpec,
    /// Where the remote end was.
    pub endpoint: Endpoint,
    /// The code under test.
    pub subject: Subject,
    /// Name of the testbed (the pair of machines and their wiring).
    pub testbed: String,
    /// Environment of both ends.
    pub env: Environments,
    /// Every iteration's raw figures.
    pub iterations: Vec<Iteration>,
    /// Summary over the iterations.
    pub summary: Summary,
}

/// What `config_key` hashes. The spec is a [`RunSpec`], or the `spec`
/// member as written when a newer minor revision may have added to it.
#[derive(Serialize)]
struct ConfigKeyInput<'a, S: Serialize> {
    spec: &'a S,
    testbed: &'a str,
    local_env: BTreeMap<String, String>,
    remote_env: Option<BTreeMap<String, String>>,
    /// Left out when there was no VM, so that such records keep the key
    /// they had before VMs were described.
    #[serde(skip_serializing_if = "Option::is_none")]
    vm: Option<BTreeMap<String, String>>,
}

/// What a spec key hashes.
#[derive(Serialize)]
struct SpecKeyInput<'a> {
    spec: &'a RunSpec,
    testbed: &'a str,
}

impl RunRecord {
    /// The spec key: blake3 of the canonical bytes of the resolved spec
    /// and the testbed, as 64 hex digits. Unlike `config_key` it leaves the
    /// environment out, so runs of the same test on the same testbed share
    /// it even when a sysctl or the governor changed between them; that is
    /// what `compare` groups on, so that it can show such differences
    /// rather than silently separate the runs.
    pub fn compute_spec_key(&self) -> Result<String, RecordError> {
        let input = SpecKeyInput {
            spec: &self.spec,
            testbed: &self.testbed,
        };
        Ok(canonical::hash_hex(&canonical::to_canonical_bytes(&input)?))
    }

    /// The `config_key` of this record's spec, testbed and environment.
    pub fn compute_config_key(&self) -> Result<String, RecordError> {
        self.config_key_over(&self.spec)
    }

    fn config_key_over<S: Serialize>(&self, spec: &S) -> Result<String, RecordError> {
        let input = ConfigKeyInput {
            spec,
            testbed: &self.testbed,
            local_env: self.env.local.comparable_knobs(),
            remote_env: self.env.remote.as_ref().map(HostEnv::comparable_knobs),
            vm: self.env.vm.as_ref().map(VmEnv::comparable_knobs),
        };
        Ok(canonical::hash_hex(&canonical::to_canonical_bytes(&input)?))
    }

    /// The id of this record's content (everything but `id`).
    pub fn compute_id(&self) -> Result<String, RecordError> {
        let bytes = canonical::to_canonical_bytes(self)?;
        let tree: Value =
            serde_json::from_slice(&bytes).map_err(|err| RecordError::Invalid(err.to_string()))?;
        id_of_tree(tree)
    }

    /// Sets `schema`, `config_key` and `id` from the content. Call after
    /// the last change to a record, before storing or printing it.
    pub fn seal(&mut self) -> Result<(), RecordError> {
        self.schema = SCHEMA.to_string();
        self.config_key = self.compute_config_key()?;
        self.id = self.compute_id()?;
        Ok(())
    }

    /// The canonical bytes of the record, `id` included.
    pub fn to_canonical_bytes(&self) -> Result<Vec<u8>, RecordError> {
        Ok(canonical::to_canonical_bytes(self)?)
    }

    /// Reads a record, checking encoding, schema version, numbers, fields,
    /// `id` and `config_key`.
    pub fn from_slice(bytes: &[u8]) -> Result<RunRecord, RecordError> {
        let text = std::str::from_utf8(bytes).map_err(|err| RecordError::NotUtf8 {
            offset: err.valid_up_to(),
        })?;
        let tree: Value = canonical::parse_json(text).map_err(json_error)?;
        let Value::Object(members) = &tree else {
            return Err(RecordError::Invalid(
                "a run record is a JSON object".to_string(),
            ));
        };
        let minor = match members.get("schema") {
            None => return Err(RecordError::MissingSchema),
            Some(Value::String(schema)) => check_schema(schema)?,
            Some(other) => {
                return Err(RecordError::UnsupportedSchema {
                    found: other.to_string(),
                });
            }
        };
        canonical::check_integers(&tree, &mut String::from("$"))?;
        let record: RunRecord = serde_json::from_value(tree.clone())
            .map_err(|err| RecordError::Invalid(err.to_string()))?;
        for (name, time) in [
            ("started_at", &record.started_at),
            ("finished_at", &record.finished_at),
        ] {
            if !crate::time::is_rfc3339_utc(time) {
                return Err(RecordError::Invalid(format!(
                    "{name} \"{time}\" is not an RFC 3339 UTC time \
                     (YYYY-MM-DDTHH:MM:SS[.frac]Z)"
                )));
            }
        }
        // A record of a revision this crate knows must be what the typed
        // record writes back, or storing `to_canonical_bytes` of what was
        // read would change its id. Newer minor revisions may add members,
        // to the spec too, so their config_key is checked over the spec as
        // written.
        let computed = if minor <= SCHEMA_MINOR {
            let written = serde_json::to_value(&record)
                .map_err(|err| RecordError::Invalid(err.to_string()))?;
            if let Some(problem) = first_difference(&tree, &written, &mut String::from("$")) {
                return Err(RecordError::Invalid(problem));
            }
            record.compute_config_key()?
        } else {
            let spec = tree.get("spec").unwrap_or(&Value::Null);
            record.config_key_over(spec)?
        };
        if computed != record.config_key {
            return Err(RecordError::ConfigKeyMismatch {
                stated: record.config_key,
                computed,
            });
        }
        // The id covers the document as written, including members a newer
        // minor revision may have added, so hash the tree, not the struct.
        let computed = id_of_tree(tree)?;
        if computed != record.id {
            return Err(RecordError::IdMismatch {
                stated: record.id,
                computed,
            });
        }
        Ok(record)
    }

    /// Samples of `metric`, one per iteration that has it.
    pub fn samples(&self, metric: Metric) -> Vec<f64> {
        self.iterations
            .iter()
            .filter_map(|iteration| metric.of_iteration(iteration))
            .collect()
    }

    /// The run-level value of `metric`: the summary's figure where the
    /// summary has one, else the mean over the iterations that measured it.
    pub fn value(&self, metric: Metric) -> Option<f64> {
        metric
            .of_summary(&self.summary)
            .or_else(|| Spread::of(&self.samples(metric)).map(|spread| spread.mean))
    }

    /// The metric a run of this test kind is judged by.
    pub fn primary_metric(&self) -> Metric {
        Metric::primary_for(&self.spec)
    }
}

fn id_of_tree(mut tree: Value) -> Result<String, RecordError> {
    if let Value::Object(members) = &mut tree {
        members.remove("id");
        let undated = members
            .get("source")
            .and_then(|source| source.get("undated"))
            .is_some_and(|undated| *undated == Value::Bool(true));
        if undated {
            members.remove("started_at");
            members.remove("finished_at");
        }
    }
    Ok(canonical::hash_hex(&canonical::to_canonical_bytes(&tree)?))
}

/// Where `read` (the document) has something `written` (the typed record
/// serialised again) has not: a member this schema does not define, or a
/// null or empty value where an absent one is left out.
fn first_difference(read: &Value, written: &Value, path: &mut String) -> Option<String> {
    match (read, written) {
        (Value::Object(read), Value::Object(written)) => {
            for (name, value) in read {
                let len = path.len();
                path.push('.');
                path.push_str(name);
                let problem = match written.get(name) {
                    Some(expected) => first_difference(value, expected, path),
                    None if is_null_or_empty(value) => Some(format!(
                        "{path} is null or empty; leave an absent value out"
                    )),
                    None => Some(format!("unknown member {path}")),
                };
                if problem.is_some() {
                    return problem;
                }
                path.truncate(len);
            }
            None
        }
        (Value::Array(read), Value::Array(written)) => {
            for (item_idx, (value, expected)) in read.iter().zip(written).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{item_idx}]"));
                if let Some(problem) = first_difference(value, expected, path) {
                    return Some(problem);
                }
                path.truncate(len);
            }
            None
        }
        // `10` and `10.0` are the same JSON number.
        (Value::Number(read), Value::Number(written)) if read.as_f64() == written.as_f64() => None,
        (read, written) if read == written => None,
        _ => Some(format!("{path} does not read back as written")),
    }
}

fn is_null_or_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(members) => members.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// Checks the schema and returns its minor revision (0 for
/// `netbisect.run/1`).
fn check_schema(schema: &str) -> Result<u32, RecordError> {
    let unsupported = || RecordError::UnsupportedSchema {
        found: schema.to_string(),
    };
    let version = schema.strip_prefix(SCHEMA_PREFIX).ok_or_else(unsupported)?;
    let (major, minor) = match version.split_once('.') {
        Some((major, minor)) => (major, Some(minor)),
        None => (version, None),
    };
    // Plain digits only: `+1` or `01` would parse as 1 but are not what
    // any writer of this schema produces.
    let is_digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    if major != SCHEMA_MAJOR.to_string() || !minor.is_none_or(is_digits) {
        return Err(unsupported());
    }
    // Digits beyond u32 still name a revision newer than this crate's.
    Ok(minor.map_or(0, |minor| minor.parse().unwrap_or(u32::MAX)))
}

fn json_error(err: serde_json::Error) -> RecordError {
    if err.is_eof() {
        RecordError::Truncated {
            line: err.line(),
            column: err.column(),
        }
    } else {
        let message = err.to_string();
        // serde_json appends " at line L column C"; the variant says that.
        let message = match message.rfind(" at line ") {
            Some(cut) => message[..cut].to_string(),
            None => message,
        };
        RecordError::Malformed {
            line: err.line(),
            column: err.column(),
            message,
        }
    }
}

/// A figure a run can be compared or bisected on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Throughput, bits per second.
    ThroughputBps,
    /// Transactions per second.
    TransactionRate,
    /// Mean transaction latency, microseconds.
    LatencyMeanUs,
    /// Median latency.
    LatencyP50Us,
    /// 90th-percentile latency.
    LatencyP90Us,
    /// 99th-percentile latency.
    LatencyP99Us,
    /// 99.9th-percentile latency.
    LatencyP999Us,
    /// Local CPU utilisation, percent.
    LocalCpuPct,
    /// Remote CPU utilisation, percent.
    RemoteCpuPct,
    /// Local service demand.
    LocalServiceDemand,
    /// Remote service demand.
    RemoteServiceDemand,
}

impl Metric {
    /// Every metric.
    pub const ALL: [Metric; 11] = [
        Metric::ThroughputBps,
        Metric::TransactionRate,
        Metric::LatencyMeanUs,
        Metric::LatencyP50Us,
        Metric::LatencyP90Us,
        Metric::LatencyP99Us,
        Metric::LatencyP999Us,
        Metric::LocalCpuPct,
        Metric::RemoteCpuPct,
        Metric::LocalServiceDemand,
        Metric::RemoteServiceDemand,
    ];

    /// The metric's name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Metric::ThroughputBps => "throughput_bps",
            Metric::TransactionRate => "transaction_rate",
            Metric::LatencyMeanUs => "latency_mean_us",
            Metric::LatencyP50Us => "latency_p50_us",
            Metric::LatencyP90Us => "latency_p90_us",
            Metric::LatencyP99Us => "latency_p99_us",
            Metric::LatencyP999Us => "latency_p999_us",
            Metric::LocalCpuPct => "local_cpu_pct",
            Metric::RemoteCpuPct => "remote_cpu_pct",
            Metric::LocalServiceDemand => "local_service_demand",
            Metric::RemoteServiceDemand => "remote_service_demand",
        }
    }

    /// True when a larger value is an improvement.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::ThroughputBps | Metric::TransactionRate)
    }

    /// The metric a test kind is judged by: transactions per second for
    /// request/response tests, throughput otherwise.
    pub fn primary_for(spec: &RunSpec) -> Metric {
        if spec.test.is_request_response() {
            Metric::TransactionRate
        } else {
            Metric::ThroughputBps
        }
    }

    /// The metric's value in one iteration, when it was measured.
    pub fn of_iteration(self, iteration: &Iteration) -> Option<f64> {
        match self {
            Metric::ThroughputBps => Some(iteration.throughput_bps),
            Metric::TransactionRate => iteration.transaction_rate,
            _ => self.of_latency_or_cpu(
                iteration.latency.as_ref(),
                iteration.reported_latency.as_ref(),
                iteration.cpu.as_ref(),
            ),
        }
    }

    /// The metric's value in a run's summary, when the summary has it.
    pub fn of_summary(self, summary: &Summary) -> Option<f64> {
        match self {
            Metric::ThroughputBps => Some(summary.throughput_bps.mean),
            Metric::TransactionRate => summary.transaction_rate.as_ref().map(|rate| rate.mean),
            _ => self.of_latency_or_cpu(
                summary.latency.as_ref(),
                summary.reported_latency.as_ref(),
                summary.cpu.as_ref(),
            ),
        }
    }

    /// Latency and CPU metrics: measured latency first, then the partial
    /// latency an imported run reported.
    fn of_latency_or_cpu(
        self,
        latency: Option<&LatencyFigures>,
        reported: Option<&LatencyReport>,
        cpu: Option<&CpuFigures>,
    ) -> Option<f64> {
        let latency_value =
            |measured: fn(&LatencyFigures) -> f64, imported: fn(&LatencyReport) -> Option<f64>| {
                latency
                    .map(measured)
                    .or_else(|| reported.and_then(imported))
            };
        match self {
            Metric::ThroughputBps | Metric::TransactionRate => None,
            Metric::LatencyMeanUs => latency_value(|l| l.mean_us, |r| r.mean_us),
            Metric::LatencyP50Us => latency_value(|l| l.p50_us, |r| r.p50_us),
            Metric::LatencyP90Us => latency_value(|l| l.p90_us, |r| r.p90_us),
            Metric::LatencyP99Us => latency_value(|l| l.p99_us, |r| r.p99_us),
            Metric::LatencyP999Us => latency_value(|l| l.p999_us, |r| r.p999_us),
            Metric::LocalCpuPct => cpu.and_then(|c| c.local_util_pct),
            Metric::RemoteCpuPct => cpu.and_then(|c| c.remote_util_pct),
            Metric::LocalServiceDemand => cpu.and_then(|c| c.local_service_demand),
            Metric::RemoteServiceDemand => cpu.and_then(|c| c.remote_service_demand),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A metric name that netbisect does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown metric '{0}'")]
pub struct UnknownMetric(pub String);

impl FromStr for Metric {
    type Err = UnknownMetric;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Metric::ALL
            .into_iter()
            .find(|metric| metric.name() == text)
            .ok_or_else(|| UnknownMetric(text.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::TestKind;

    fn record() -> RunRecord {
        let mut record = RunRecord {
            schema: String::new(),
            id: String::new(),
            config_key: String::new(),
            source: Source {
                tool: "netbisect".into(),
                version: None,
                undated: false,
            },
            started_at: "2024-01-22T10:00:00Z".into(),
            finished_at: "2024-01-22T10:00:10Z".into(),
            spec: RunSpec::defaults(TestKind::TcpStream),
            endpoint: Endpoint {
                host: "127.0.0.1".into(),
                port: None,
            },
            subject: Subject {
                commit: Some("abc123".into()),
                ..Subject::default()
            },
            testbed: "lab".into(),
            env: Environments::default(),
            iterations: Vec::new(),
            summary: Summary::default(),
        };
        record.seal().unwrap();
        record
    }

    #[test]
    fn spec_key_follows_spec_and_testbed_only() {
        let base = record();
        let key = base.compute_spec_key().unwrap();
        assert_eq!(key.len(), 64);

        let mut elsewhere = base.clone();
        elsewhere.subject.commit = Some("def456".into());
        elsewhere.started_at = "2025-02-01T00:00:00Z".into();
        elsewhere.finished_at = "2025-02-01T00:00:10Z".into();
        elsewhere.env.local.governor = Some("powersave".into());
        elsewhere
            .env
            .local
            .sysctls
            .insert("net.ipv4.tcp_rmem".into(), "4096 87380 6291456".into());
        elsewhere.seal().unwrap();
        assert_ne!(elsewhere.config_key, base.config_key);
        assert_eq!(elsewhere.compute_spec_key().unwrap(), key);

        let mut other_size = base.clone();
        other_size.spec.send_size_bytes = 1024;
        other_size.seal().unwrap();
        assert_ne!(other_size.compute_spec_key().unwrap(), key);

        let mut other_testbed = base.clone();
        other_testbed.testbed = "lab-2".into();
        assert_ne!(other_testbed.compute_spec_key().unwrap(), key);
    }
}
