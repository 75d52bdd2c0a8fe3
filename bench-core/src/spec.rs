//! The resolved test specification: what was measured, with every default
//! written out, so that a record says exactly what ran.
//!
//! Names and meanings follow netperf (`-t`, `-l`, `-m/-M`, `-s/-S`, `-r`,
//! `-T`, `-I`, `-i`), so that existing habits carry over.

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
        }
    }
}

/// Shortest test accepted, seconds.
pub const MIN_DURATION_S: f64 = 0.01;
/// Longest test accepted, seconds.
pub const MAX_DURATION_S: f64 = 3600.0;
/// Largest send, receive, request or response size over TCP, bytes.
pub const MAX_TCP_MESSAGE_BYTES: u32 = 16 * 1024 * 1024;
/// Largest UDP payload over IPv4 (65535 - 20 - 8), bytes.
pub const MAX_UDP_PAYLOAD_BYTES: u32 = 65_507;
/// Largest socket buffer that may be requested, bytes.
pub const MAX_SOCKET_BUFFER_BYTES: u32 = 256 * 1024 * 1024;
/// Most iterations of one run (netperf's limit for `-i`).
pub const MAX_ITERATIONS: u32 = 30;
/// Highest CPU number that may be named for pinning, plus one.
pub const MAX_CPUS: u32 = 1024;
/// Longest warm-up, seconds.
pub const MAX_WARMUP_S: f64 = 60.0;
/// Most parallel flows of one test.
pub const MAX_FLOWS: u32 = 128;
/// The confidence levels `-I` accepts, percent (netperf's).
pub const CONFIDENCE_LEVELS: [u32; 2] = [95, 99];
/// Widest confidence interval `-I` accepts, percent of the mean.
pub const MAX_CONFIDENCE_WIDTH_PCT: f64 = 100.0;
/// Iterations when `-I` is given without `-i` (netperf's): at most 10, at
/// least 3.
pub const DEFAULT_CONFIDENCE_ITERATIONS: (u32, u32) = (10, 3);

/// A specification outside the documented limits.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecError {
    /// A figure is out of its range.
    #[error("{field} must be between {min} and {max}, got {value}")]
    OutOfRange {
        /// The option, as netperf names it.
        field: &'static str,
        /// The value given.
        value: String,
        /// Smallest accepted value.
        min: String,
        /// Largest accepted value.
        max: String,
    },
    /// A feature this version does not run yet.
    #[error("{0} is not supported yet")]
    Unsupported(&'static str),
    /// A confidence interval asked for with fewer than two iterations.
    #[error("a confidence interval (-I) needs at least 2 iterations (-i max >= 2)")]
    TooFewIterations,
}

fn check_u32(field: &'static str, value: u32, min: u32, max: u32) -> Result<(), SpecError> {
    if (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(SpecError::OutOfRange {
            field,
            value: value.to_string(),
            min: min.to_string(),
            max: max.to_string(),
        })
    }
}

fn check_seconds(field: &'static str, value: f64, min: f64, max: f64) -> Result<(), SpecError> {
    if value.is_finite() && (min..=max).contains(&value) {
        Ok(())
    } else {
        Err(SpecError::OutOfRange {
            field,
            value: value.to_string(),
            min: min.to_string(),
            max: max.to_string(),
        })
    }
}

impl RunSpec {
    /// Checks every figure against the documented limits above. Both the
    /// client (before any connection) and the server (on every request)
    /// apply it.
    pub fn validate(&self) -> Result<(), SpecError> {
        check_seconds(
            "test length (-l)",
            self.duration_s,
            MIN_DURATION_S,
            MAX_DURATION_S,
        )?;
        check_seconds("warm-up", self.warmup_s, 0.0, MAX_WARMUP_S)?;
        let message_max = if self.test.is_udp() {
            MAX_UDP_PAYLOAD_BYTES
        } else {
            MAX_TCP_MESSAGE_BYTES
        };
        check_u32("send size (-m)", self.send_size_bytes, 1, message_max)?;
        check_u32(
            "receive size (-M)",
            self.recv_size_bytes,
            1,
            MAX_TCP_MESSAGE_BYTES,
        )?;
        check_u32("request size (-r)", self.request_size_bytes, 1, message_max)?;
        check_u32(
            "response size (-r)",
            self.response_size_bytes,
            1,
            message_max,
        )?;
        if let Some(bytes) = self.local_socket_buffer_bytes {
            check_u32(
                "local socket buffer (-s)",
                bytes,
                1,
                MAX_SOCKET_BUFFER_BYTES,
            )?;
        }
        if let Some(bytes) = self.remote_socket_buffer_bytes {
            check_u32(
                "remote socket buffer (-S)",
                bytes,
                1,
                MAX_SOCKET_BUFFER_BYTES,
            )?;
        }
        if let Some(cpu) = self.cpu_pinning.local {
            check_u32("local CPU (-T)", cpu, 0, MAX_CPUS - 1)?;
        }
        if let Some(cpu) = self.cpu_pinning.remote {
            check_u32("remote CPU (-T)", cpu, 0, MAX_CPUS - 1)?;
        }
        check_u32(
            "iterations (-i max)",
            self.iterations_max,
            1,
            MAX_ITERATIONS,
        )?;
        check_u32(
            "iterations (-i min)",
            self.iterations_min,
            1,
            self.iterations_max,
        )?;
        check_u32("flows (--flows)", self.flows, 1, MAX_FLOWS)?;
        if let Some(threads) = self.threads {
            check_u32("threads (--threads)", threads, 1, self.flows)?;
        }
        if let Some(confidence) = &self.confidence {
            if !CONFIDENCE_LEVELS.contains(&confidence.level_pct) {
                return Err(SpecError::OutOfRange {
                    field: "confidence level (-I)",
                    value: confidence.level_pct.to_string(),
                    min: "95".to_string(),
                    max: "99 (95 or 99)".to_string(),
                });
            }
            let width = confidence.width_pct;
            if !(width.is_finite() && width > 0.0 && width <= MAX_CONFIDENCE_WIDTH_PCT) {
                return Err(SpecError::OutOfRange {
                    field: "confidence width (-I)",
                    value: width.to_string(),
                    min: "more than 0".to_string(),
                    max: MAX_CONFIDENCE_WIDTH_PCT.to_string(),
                });
            }
            if self.iterations_max < 2 {
                return Err(SpecError::TooFewIterations);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_limits_hold() {
        for kind in TestKind::ALL {
            RunSpec::defaults(kind).validate().unwrap();
        }
        let mut spec = RunSpec::defaults(TestKind::UdpStream);
        spec.send_size_bytes = 65_508;
        let message = spec.validate().unwrap_err().to_string();
        assert_eq!(
            message,
            "send size (-m) must be between 1 and 65507, got 65508"
        );
        spec.send_size_bytes = 0;
        assert!(spec.validate().is_err());
        let mut spec = RunSpec::defaults(TestKind::TcpStream);
        spec.local_socket_buffer_bytes = Some(u32::MAX);
        assert!(spec.validate().is_err());
        spec.local_socket_buffer_bytes = None;
        spec.duration_s = f64::NAN;
        assert!(spec.validate().is_err());
        spec.duration_s = 0.2;
        spec.validate().unwrap();
    }

    #[test]
    fn impossible_requests_are_refused() {
        let mut spec = RunSpec::defaults(TestKind::TcpStream);
        spec.confidence = Some(ConfidenceSpec {
            level_pct: 90,
            width_pct: 5.0,
        });
        spec.iterations_max = 10;
        let message = spec.validate().unwrap_err().to_string();
        assert!(message.starts_with("confidence level (-I)"), "{message}");
        spec.confidence = Some(ConfidenceSpec {
            level_pct: 95,
            width_pct: 0.0,
        });
        assert!(spec.validate().is_err());
        spec.confidence = Some(ConfidenceSpec {
            level_pct: 95,
            width_pct: 5.0,
        });
        spec.validate().unwrap();
        spec.iterations_max = 1;
        assert_eq!(spec.validate(), Err(SpecError::TooFewIterations));
        spec.confidence = None;
        spec.iterations_max = 2;
        spec.iterations_min = 5;
        let message = spec.validate().unwrap_err().to_string();
        assert_eq!(
            message,
            "iterations (-i min) must be between 1 and 2, got 5"
        );
        spec.iterations_min = 1;
        spec.flows = 0;
        assert!(
            spec.validate()
                .unwrap_err()
                .to_string()
                .starts_with("flows")
        );
        spec.flows = 4;
        spec.threads = Some(5);
        assert!(
            spec.validate()
                .unwrap_err()
                .to_string()
                .starts_with("threads")
        );
        spec.threads = Some(2);
        spec.validate().unwrap();
    }
}
