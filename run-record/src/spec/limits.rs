//! The documented limits of a specification, [`RunSpec::validate`] that
//! holds a spec to them, and sizes read as netperf reads them
//! ([`parse_size`]).

use super::{RunSpec, TestKind};

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
/// Most sizes in one sweep.
pub const MAX_SWEEP_POINTS: usize = 64;

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
    /// A setting of the system under test that cannot be read.
    #[error("invalid setting '{setting}': {why}")]
    BadSetting {
        /// The setting as given.
        setting: String,
        /// What is wrong with it.
        why: String,
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
        if let Some(system) = &self.system {
            system.validate()?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::ConfidenceSpec;

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
