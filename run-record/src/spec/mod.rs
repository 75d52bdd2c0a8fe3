//! The resolved test specification: what was measured, with every default
//! written out, so that a record says exactly what ran.
//!
//! Names and meanings follow netperf (`-t`, `-l`, `-m/-M`, `-s/-S`, `-r`,
//! `-T`, `-I`, `-i`), so that existing habits carry over.
//!
//! Sizes are read here as netperf reads them ([`parse_size`]), and so are
//! size sweeps ([`parse_sweep`]): one spec per size, each checked against
//! the same limits.

mod limits;
mod sweep;
mod system;

pub use limits::{
    CONFIDENCE_LEVELS, DEFAULT_CONFIDENCE_ITERATIONS, MAX_CONFIDENCE_WIDTH_PCT, MAX_CPUS,
    MAX_DURATION_S, MAX_FIRST_BURST, MAX_FLOWS, MAX_ITERATIONS, MAX_SOCKET_BUFFER_BYTES,
    MAX_SWEEP_POINTS, MAX_TCP_MESSAGE_BYTES, MAX_UDP_PAYLOAD_BYTES, MAX_WARMUP_S, MIN_DURATION_S,
    SpecError, parse_size,
};
pub use sweep::{SweepParameter, SweepPoint, SweepSpec, parse_sweep};
pub use system::{
    MAX_MTU, MAX_SETTINGS, MAX_SYSCTL_VALUE, MAX_TX_QUEUE_LEN, MIN_MTU, OFFLOAD_NAMES, Setting,
    SystemSettings, is_feature_name, is_sysctl_name,
};

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// The socket tests netbisect runs, named as netperf names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum TestKind {
    /// Bulk transfer, client sends.
    #[serde(rename = "TCP_STREAM")]
    TcpStream,
    /// Bulk transfer, server sends.
    #[serde(rename = "TCP_MAERTS")]
    TcpMaerts,
    /// Request/response on one connection.
    #[serde(rename = "TCP_RR")]
    TcpRr,
    /// Connect, request, response, close per transaction.
    #[serde(rename = "TCP_CRR")]
    TcpCrr,
    /// Datagrams, client sends.
    #[serde(rename = "UDP_STREAM")]
    UdpStream,
    /// Request/response over datagrams.
    #[serde(rename = "UDP_RR")]
    UdpRr,
}

impl TestKind {
    /// Every test kind, in netperf's customary order.
    pub const ALL: [TestKind; 6] = [
        TestKind::TcpStream,
        TestKind::TcpMaerts,
        TestKind::TcpRr,
        TestKind::TcpCrr,
        TestKind::UdpStream,
        TestKind::UdpRr,
    ];

    /// The name as netperf spells it.
    pub fn name(self) -> &'static str {
        match self {
            TestKind::TcpStream => "TCP_STREAM",
            TestKind::TcpMaerts => "TCP_MAERTS",
            TestKind::TcpRr => "TCP_RR",
            TestKind::TcpCrr => "TCP_CRR",
            TestKind::UdpStream => "UDP_STREAM",
            TestKind::UdpRr => "UDP_RR",
        }
    }

    /// True for request/response tests, whose main figure is a rate of
    /// transactions rather than a throughput.
    pub fn is_request_response(self) -> bool {
        matches!(self, TestKind::TcpRr | TestKind::TcpCrr | TestKind::UdpRr)
    }

    /// True for tests that use UDP.
    pub fn is_udp(self) -> bool {
        matches!(self, TestKind::UdpStream | TestKind::UdpRr)
    }
}

impl fmt::Display for TestKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A test name that netbisect does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown test '{0}' (known: TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, UDP_STREAM, UDP_RR)")]
pub struct UnknownTest(pub String);

impl FromStr for TestKind {
    type Err = UnknownTest;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        TestKind::ALL
            .into_iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(text))
            .ok_or_else(|| UnknownTest(text.to_string()))
    }
}

/// The address family of the data connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AddressFamily {
    /// IPv4.
    Ipv4,
    /// IPv6.
    Ipv6,
}

/// CPU pinning of each end (`-T lcpu,rcpu`); `None` leaves placement to
/// the scheduler.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPinning {
    /// CPU the local (client) end is bound to.
    pub local: Option<u32>,
    /// CPU the remote (server) end is bound to.
    pub remote: Option<u32>,
}

/// Confidence-interval request (`-I level,width` and `-i max,min`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfidenceSpec {
    /// Confidence level in percent: 95 or 99.
    pub level_pct: u32,
    /// Full width of the interval, in percent of the mean (`-I 95,5` is
    /// +-2.5%).
    pub width_pct: f64,
}

/// The resolved specification of one test run.
///
/// Sizes are bytes. `None` in a socket-buffer field means the buffer was
/// left to the kernel (and so to autotuning).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunSpec {
    /// Which test ran.
    pub test: TestKind,
    /// Address family of the data connections.
    pub family: AddressFamily,
    /// Length of one iteration's measured window, seconds (`-l`).
    pub duration_s: f64,
    /// Bytes per send call for stream tests (`-m`).
    pub send_size_bytes: u32,
    /// Bytes per receive call for stream tests (`-M`).
    pub recv_size_bytes: u32,
    /// Request size for request/response tests (`-r req,resp`).
    pub request_size_bytes: u32,
    /// Response size for request/response tests.
    pub response_size_bytes: u32,
    /// Requested local socket buffer (`-s`).
    pub local_socket_buffer_bytes: Option<u32>,
    /// Requested remote socket buffer (`-S`).
    pub remote_socket_buffer_bytes: Option<u32>,
    /// TCP_NODELAY on the data connections.
    pub nodelay: bool,
    /// CPU pinning of each end (`-T`).
    pub cpu_pinning: CpuPinning,
    /// Measure local CPU utilisation (`-c`).
    pub local_cpu: bool,
    /// Measure remote CPU utilisation (`-C`).
    pub remote_cpu: bool,
    /// Confidence interval to reach, if any (`-I`).
    pub confidence: Option<ConfidenceSpec>,
    /// Most iterations to run (`-i max,min`).
    pub iterations_max: u32,
    /// Fewest iterations to run.
    pub iterations_min: u32,
    /// Parallel flows (`--flows`).
    pub flows: u32,
    /// Seconds of traffic before the measured window, not counted.
    pub warmup_s: f64,
    /// Threads the local end spreads its flows over (`--threads`);
    /// absent: one thread per flow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threads: Option<u32>,
    /// netperf's first burst (`-b`, TCP_RR and UDP_RR): requests sent beyond the
    /// first before waiting for a response, so that up to `first_burst +
    /// 1` transactions are outstanding. The window opens one transaction
    /// per response, as netperf's does, so that slow start does not batch
    /// the burst. 0 (one transaction at a time) is left out of the record
    /// and so of the config_key: runs without a burst pair with runs
    /// recorded before the field existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub first_burst: u32,
    /// Settings asked of the system under test (offloads, MTU, tx queue
    /// length, sysctls; since 1.2); absent when none, so that such runs
    /// keep the config_key they had before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system: Option<SystemSettings>,
    /// The socket buffers a peer tool printed for an imported run, where
    /// its text gives the sizes the kernel granted but not those asked
    /// for (netperf prints a buffer as read back after setup, so `-s
    /// 87380` prints 174760 on Linux, and no `-s` prints the default):
    /// kept as printed, never taken for `-s`/`-S`. Part of the spec, and
    /// so of the config_key, because it is all such a text says of the
    /// buffers: imports whose sockets differed never pair. Absent for
    /// netbisect's own runs, whose buffers are in each iteration's
    /// `ends`, so that their config_key is what it was (since 1.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_socket_buffers: Option<ReportedSocketBuffers>,
}

/// Socket buffer sizes as a peer tool printed them, bytes: granted by the
/// kernel (netperf prints them as read back right after setup); each
/// absent when the tool did not print it. See
/// [`RunSpec::reported_socket_buffers`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportedSocketBuffers {
    /// `SO_SNDBUF` of the local (client) end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_send_bytes: Option<u32>,
    /// `SO_RCVBUF` of the local end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_recv_bytes: Option<u32>,
    /// `SO_SNDBUF` of the remote (server) end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_send_bytes: Option<u32>,
    /// `SO_RCVBUF` of the remote end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_recv_bytes: Option<u32>,
}

fn is_zero(value: &u32) -> bool {
    *value == 0
}

/// netperf's default send size for stream tests.
pub const DEFAULT_SEND_SIZE: u32 = 16 * 1024;
/// Default receive size for stream tests (netperf uses the receive socket
/// buffer size; 128 KiB is what that is on a default Linux loopback).
pub const DEFAULT_RECV_SIZE: u32 = 128 * 1024;
/// Default datagram size for UDP_STREAM: the largest payload that fits an
/// Ethernet MTU of 1500 without fragmentation.
pub const DEFAULT_UDP_SEND_SIZE: u32 = 1472;
/// netperf's default test length, seconds.
pub const DEFAULT_DURATION_S: f64 = 10.0;

impl RunSpec {
    /// The specification netperf would run for `test` with no options.
    pub fn defaults(test: TestKind) -> RunSpec {
        let send_size_bytes = if test == TestKind::UdpStream {
            DEFAULT_UDP_SEND_SIZE
        } else {
            DEFAULT_SEND_SIZE
        };
        RunSpec {
            test,
            family: AddressFamily::Ipv4,
            duration_s: DEFAULT_DURATION_S,
            send_size_bytes,
            recv_size_bytes: DEFAULT_RECV_SIZE,
            request_size_bytes: 1,
            response_size_bytes: 1,
            local_socket_buffer_bytes: None,
            remote_socket_buffer_bytes: None,
            nodelay: false,
            cpu_pinning: CpuPinning::default(),
            local_cpu: false,
            remote_cpu: false,
            confidence: None,
            iterations_max: 1,
            iterations_min: 1,
            flows: 1,
            warmup_s: 0.0,
            threads: None,
            first_burst: 0,
            system: None,
            reported_socket_buffers: None,
        }
    }
}
