//! The resolved test specification: what was measured, with every default
//! written out, so that a record says exactly what ran.
//!
//! Names and meanings follow netperf (`-t`, `-l`, `-m/-M`, `-s/-S`, `-r`,
//! `-T`, `-I`, `-i`), so that existing habits carry over.
//!
//! Sizes are read here as netperf reads them ([`parse_size`]), and so are
//! size sweeps ([`parse_sweep`]): one spec per size, each checked against
//! the same limits.

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
/// Largest first burst (`-b`).
pub const MAX_FIRST_BURST: u32 = 1024;
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
    /// A size that is not a number with an optional suffix.
    #[error("invalid size '{text}' for {option}")]
    InvalidSize {
        /// The option, as given on the command line.
        option: String,
        /// The text given.
        text: String,
    },
    /// A size beyond 32 bits.
    #[error("size '{text}' for {option} is too large")]
    SizeTooLarge {
        /// The option, as given on the command line.
        option: String,
        /// The text given.
        text: String,
    },
    /// A sweep that is not `m=SIZES` or `r=SIZES`.
    #[error("invalid sweep '{0}': expected m=SIZE,SIZE,... or r=SIZE,SIZE,...")]
    SweepSyntax(String),
    /// A sweep with nothing after `=`.
    #[error("the sweep {key}= has no sizes")]
    EmptySweep {
        /// `m` or `r`.
        key: &'static str,
    },
    /// A sweep with more sizes than [`MAX_SWEEP_POINTS`].
    #[error("a sweep has at most {MAX_SWEEP_POINTS} sizes, got {count}")]
    TooManySweepPoints {
        /// Sizes given.
        count: usize,
    },
    /// A sweep parameter the test does not have.
    #[error("a sweep of {key}= needs {needs}; {test} is {is}: use {other}=")]
    SweepMismatch {
        /// `m` or `r`.
        key: &'static str,
        /// What kind of test the parameter needs.
        needs: &'static str,
        /// The test.
        test: TestKind,
        /// What kind of test it is.
        is: &'static str,
        /// The parameter that fits the test.
        other: &'static str,
    },
    /// A first burst asked of a test that has no transactions to burst.
    #[error("a first burst (-b) needs a request/response test; {0} is a stream test")]
    BurstOnStream(TestKind),
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
        if self.first_burst > 0 {
            match self.test {
                TestKind::TcpRr | TestKind::UdpRr => {}
                // A connection per transaction leaves nothing to keep
                // outstanding on it; netperf has no burst there either.
                TestKind::TcpCrr => {
                    return Err(SpecError::Unsupported("a first burst (-b) on TCP_CRR"));
                }
                stream => return Err(SpecError::BurstOnStream(stream)),
            }
            check_u32("first burst (-b)", self.first_burst, 0, MAX_FIRST_BURST)?;
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

/// A size as netperf reads it: a number with an optional suffix, K, M, G
/// for powers of 2 and k, m, g for powers of 10. `option` names the flag
/// in the error.
pub fn parse_size(option: &str, text: &str) -> Result<u32, SpecError> {
    let text = text.trim();
    let (digits, multiplier) = match text.char_indices().last() {
        Some((at, 'K')) => (&text[..at], 1u64 << 10),
        Some((at, 'M')) => (&text[..at], 1 << 20),
        Some((at, 'G')) => (&text[..at], 1 << 30),
        Some((at, 'k')) => (&text[..at], 1_000),
        Some((at, 'm')) => (&text[..at], 1_000_000),
        Some((at, 'g')) => (&text[..at], 1_000_000_000),
        _ => (text, 1),
    };
    let number: u64 = digits.parse().map_err(|_| SpecError::InvalidSize {
        option: option.to_string(),
        text: text.to_string(),
    })?;
    number
        .checked_mul(multiplier)
        .and_then(|bytes| u32::try_from(bytes).ok())
        .ok_or_else(|| SpecError::SizeTooLarge {
            option: option.to_string(),
            text: text.to_string(),
        })
}

/// Most sizes in one sweep.
pub const MAX_SWEEP_POINTS: usize = 64;

/// The size a sweep varies (`--sweep m=...` or `--sweep r=...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepParameter {
    /// Bytes per send of a stream test, as `-m`.
    SendSize,
    /// Request and response sizes of a request/response test, as `-r`.
    RequestResponseSize,
}

impl SweepParameter {
    /// The name before `=` in a sweep.
    pub fn key(self) -> &'static str {
        match self {
            SweepParameter::SendSize => "m",
            SweepParameter::RequestResponseSize => "r",
        }
    }

    /// The test option the parameter sets.
    pub fn option(self) -> &'static str {
        match self {
            SweepParameter::SendSize => "-m",
            SweepParameter::RequestResponseSize => "-r",
        }
    }
}

/// One size of a sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepPoint {
    /// `-m BYTES`.
    Send {
        /// Bytes per send.
        bytes: u32,
    },
    /// `-r REQUEST,RESPONSE`.
    RequestResponse {
        /// Request size, bytes.
        request_bytes: u32,
        /// Response size, bytes.
        response_bytes: u32,
    },
}

impl SweepPoint {
    /// Sets the point's size in `spec`.
    pub fn apply(self, spec: &mut RunSpec) {
        match self {
            SweepPoint::Send { bytes } => spec.send_size_bytes = bytes,
            SweepPoint::RequestResponse {
                request_bytes,
                response_bytes,
            } => {
                spec.request_size_bytes = request_bytes;
                spec.response_size_bytes = response_bytes;
            }
        }
    }
}

impl fmt::Display for SweepPoint {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepPoint::Send { bytes } => write!(formatter, "-m {bytes}"),
            SweepPoint::RequestResponse {
                request_bytes,
                response_bytes,
            } => write!(formatter, "-r {request_bytes},{response_bytes}"),
        }
    }
}

/// A size sweep: one run per point, in the order given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepSpec {
    /// The size that varies.
    pub parameter: SweepParameter,
    /// The sizes, in the order to run them; every point is of the kind
    /// `parameter` names.
    pub points: Vec<SweepPoint>,
}

/// Reads a sweep: `m=SIZE,SIZE,...` (bytes per send) or `r=SIZE,...`
/// (request and response size each `SIZE`, or `REQ/RESP` for different
/// ones). Sizes take the suffixes of [`parse_size`]. Ranges depend on the
/// test and are checked by [`SweepSpec::resolve`].
pub fn parse_sweep(text: &str) -> Result<SweepSpec, SpecError> {
    let syntax = || SpecError::SweepSyntax(text.to_string());
    let (key, sizes) = text.split_once('=').ok_or_else(syntax)?;
    let parameter = match key.trim() {
        "m" => SweepParameter::SendSize,
        "r" => SweepParameter::RequestResponseSize,
        _ => return Err(syntax()),
    };
    let key = parameter.key();
    if sizes.trim().is_empty() {
        return Err(SpecError::EmptySweep { key });
    }
    let option = format!("--sweep {key}=");
    let items: Vec<&str> = sizes.split(',').collect();
    if items.len() > MAX_SWEEP_POINTS {
        return Err(SpecError::TooManySweepPoints { count: items.len() });
    }
    let points = items
        .into_iter()
        .map(|item| match parameter {
            SweepParameter::SendSize => Ok(SweepPoint::Send {
                bytes: parse_size(&option, item)?,
            }),
            SweepParameter::RequestResponseSize => {
                let (request, response) = item.split_once('/').unwrap_or((item, item));
                Ok(SweepPoint::RequestResponse {
                    request_bytes: parse_size(&option, request)?,
                    response_bytes: parse_size(&option, response)?,
                })
            }
        })
        .collect::<Result<Vec<_>, SpecError>>()?;
    Ok(SweepSpec { parameter, points })
}

impl SweepSpec {
    /// The spec of every point: `base` with the point's size, in order,
    /// each checked against the limits of [`RunSpec::validate`]. Fails
    /// when the parameter does not belong to the test (`m=` on a
    /// request/response test, `r=` on a stream test).
    pub fn resolve(&self, base: &RunSpec) -> Result<Vec<RunSpec>, SpecError> {
        let is_rr = base.test.is_request_response();
        let fits = match self.parameter {
            SweepParameter::SendSize => !is_rr,
            SweepParameter::RequestResponseSize => is_rr,
        };
        if !fits {
            let (needs, is, other) = match self.parameter {
                SweepParameter::SendSize => ("a stream test", "a request/response test", "r"),
                SweepParameter::RequestResponseSize => {
                    ("a request/response test", "a stream test", "m")
                }
            };
            return Err(SpecError::SweepMismatch {
                key: self.parameter.key(),
                needs,
                test: base.test,
                is,
                other,
            });
        }
        self.points
            .iter()
            .map(|point| {
                let mut spec = base.clone();
                point.apply(&mut spec);
                spec.validate()?;
                Ok(spec)
            })
            .collect()
    }
}

#[cfg(test)]
mod sweep_tests {
    use super::*;

    #[test]
    fn sizes_take_netperf_suffixes() {
        assert_eq!(parse_size("-m", "128K").unwrap(), 131_072);
        assert_eq!(parse_size("-m", " 128k ").unwrap(), 128_000);
        assert_eq!(parse_size("-m", "1M").unwrap(), 1 << 20);
        assert_eq!(
            parse_size("-m", "8G").unwrap_err().to_string(),
            "size '8G' for -m is too large"
        );
        assert_eq!(
            parse_size("-r", "x").unwrap_err().to_string(),
            "invalid size 'x' for -r"
        );
        assert!(parse_size("-m", "").is_err());
        assert!(parse_size("-m", "-1").is_err());
    }

    #[test]
    fn sweeps_parse_in_order() {
        let sweep = parse_sweep("m=1,90,900,4K,9000,60000").unwrap();
        assert_eq!(sweep.parameter, SweepParameter::SendSize);
        let sizes: Vec<String> = sweep.points.iter().map(|p| p.to_string()).collect();
        assert_eq!(
            sizes,
            ["-m 1", "-m 90", "-m 900", "-m 4096", "-m 9000", "-m 60000"]
        );
        let sweep = parse_sweep("r=64, 1K/1 ,1k/2k").unwrap();
        assert_eq!(sweep.parameter, SweepParameter::RequestResponseSize);
        let sizes: Vec<String> = sweep.points.iter().map(|p| p.to_string()).collect();
        assert_eq!(sizes, ["-r 64,64", "-r 1024,1", "-r 1000,2000"]);
    }

    #[test]
    fn bad_sweeps_say_what_is_wrong() {
        let message = |text: &str| parse_sweep(text).unwrap_err().to_string();
        assert_eq!(message("m="), "the sweep m= has no sizes");
        assert_eq!(message("r= "), "the sweep r= has no sizes");
        assert!(message("1,2,3").starts_with("invalid sweep '1,2,3': expected m="));
        assert!(message("M=1,2").starts_with("invalid sweep 'M=1,2'"));
        assert_eq!(message("m=1,,2"), "invalid size '' for --sweep m=");
        assert_eq!(message("m=1,x"), "invalid size 'x' for --sweep m=");
        assert_eq!(message("r=64/"), "invalid size '' for --sweep r=");
        assert_eq!(message("m=5G"), "size '5G' for --sweep m= is too large");
        let many = format!("m={}", vec!["1"; MAX_SWEEP_POINTS + 1].join(","));
        assert_eq!(message(&many), "a sweep has at most 64 sizes, got 65");
    }

    #[test]
    fn resolving_checks_the_test_and_every_size() {
        let stream = RunSpec::defaults(TestKind::TcpStream);
        let specs = parse_sweep("m=1,64K").unwrap().resolve(&stream).unwrap();
        let sizes: Vec<u32> = specs.iter().map(|spec| spec.send_size_bytes).collect();
        assert_eq!(sizes, [1, 65_536]);
        assert!(specs.iter().all(|spec| spec.test == TestKind::TcpStream));

        let udp = RunSpec::defaults(TestKind::UdpStream);
        let err = parse_sweep("m=1472,65508").unwrap().resolve(&udp);
        assert_eq!(
            err.unwrap_err().to_string(),
            "send size (-m) must be between 1 and 65507, got 65508"
        );
        let err = parse_sweep("m=0").unwrap().resolve(&stream);
        assert!(err.unwrap_err().to_string().contains("got 0"));

        let rr = RunSpec::defaults(TestKind::TcpRr);
        let specs = parse_sweep("r=64/1,1K").unwrap().resolve(&rr).unwrap();
        let sizes: Vec<(u32, u32)> = specs
            .iter()
            .map(|spec| (spec.request_size_bytes, spec.response_size_bytes))
            .collect();
        assert_eq!(sizes, [(64, 1), (1024, 1024)]);

        let err = parse_sweep("m=1").unwrap().resolve(&rr).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a sweep of m= needs a stream test; TCP_RR is a request/response \
             test: use r="
        );
        let err = parse_sweep("r=1").unwrap().resolve(&udp).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a sweep of r= needs a request/response test; UDP_STREAM is a \
             stream test: use m="
        );
        let udp_rr = RunSpec::defaults(TestKind::UdpRr);
        assert!(parse_sweep("r=65508/1").unwrap().resolve(&udp_rr).is_err());
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
