//! Size sweeps (`--sweep m=1K,64K`): one spec per size, each checked
//! against the same limits as a single run; the CLI runs the loop.

use super::{MAX_SWEEP_POINTS, RunSpec, SpecError, parse_size};
use std::fmt;

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
    use crate::spec::TestKind;

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
