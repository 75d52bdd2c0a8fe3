//! uperf's text output: the runs of profiles whose name gives the test
//! and its sizes.
//!
//! An output starts at `Starting N threads running profile:NAME ...`.
//! uperf's text names no size, so the profile must be one netbisect
//! knows: those pbench-uperf writes, named `PROTOCOL-TEST-SIZEB-Ni`
//! (`tcp-rr-64B-1i`, `tcp_stream-16384B-8i`; uperf prints the name in
//! lower case): TCP or UDP request/response (a write and a read of SIZE
//! bytes per transaction), TCP stream or maerts (writes or reads of
//! SIZE), N threads each with its own connection (flows). Any other
//! profile, and UDP streams (uperf reports what the sender wrote, not
//! what arrived), are refused naming the line.
//!
//! Read from the output:
//!
//! - the summary line of the profile's one transaction that moved data
//!   (`Txn2  57.34MB / 10.21(s) = 47.11Mb/s 92009op/s`): its time, its
//!   throughput and its operations per second, kept as printed (each
//!   write and each read is one operation; a request/response run's
//!   transaction rate is half of them, its one write and one read);
//! - with `-t` or `-a`, the same transaction's row of the `Txn Count avg
//!   cpu max min` table: its count of transactions, and for a
//!   request/response run its mean, fastest and slowest time;
//! - the slave's name from `Run Statistics`.
//!
//! A captured output holds uperf's live progress: a line is read as a
//! terminal shows it, from its last carriage return.

use super::{ImportError, ImportOptions, PeerFigures, PeerRun, RecordSink, build_record};
use run_record::record::{Endpoint, Environments, LatencyReport, RunRecord, Source};
use run_record::spec::{AddressFamily, RunSpec, TestKind};

/// True when `line` starts a uperf output.
pub fn is_start(line: &str) -> bool {
    let line = shown(line).trim();
    line.starts_with("Starting ") && line.contains(" running profile:")
}

/// `line` as a terminal shows it: what follows its last carriage return.
fn shown(line: &str) -> &str {
    line.rsplit('\r').next().unwrap_or(line)
}

/// What a known profile's name says.
struct Profile {
    test: TestKind,
    size_bytes: u32,
    threads: u32,
}

/// Reads a profile name as pbench-uperf writes it.
fn known_profile(name: &str) -> Option<Profile> {
    let name = name.to_ascii_lowercase();
    let (protocol, rest) = name.split_at_checked(3)?;
    let rest = rest.strip_prefix(['-', '_'])?;
    let mut parts = rest.split('-');
    let (kind, size, threads) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let test = match (protocol, kind) {
        ("tcp", "rr") => TestKind::TcpRr,
        ("udp", "rr") => TestKind::UdpRr,
        ("tcp", "stream") => TestKind::TcpStream,
        ("tcp", "maerts") => TestKind::TcpMaerts,
        _ => return None,
    };
    let size_bytes = size.strip_suffix('b')?.parse().ok().filter(|&s| s > 0)?;
    let threads = threads.strip_suffix('i')?.parse().ok().filter(|&n| n > 0)?;
    Some(Profile {
        test,
        size_bytes,
        threads,
    })
}

/// One summary line of a transaction.
struct TxnLine {
    line_no: usize,
    bytes: f64,
    seconds: f64,
    throughput_bps: f64,
    operation_rate: f64,
}

/// A figure with uperf's decimal unit (`47.11Mb/s`, `1.19GB`): the
/// number times the unit.
fn scaled(text: &str, suffix: &str, base: f64, line_no: usize) -> Result<f64, ImportError> {
    let bad = || ImportError::parse(line_no, format!("\"{text}\" is not a uperf figure"));
    if text == "0" {
        return Ok(0.0);
    }
    let body = text.strip_suffix(suffix).ok_or_else(bad)?;
    let (number, power) = match body.chars().last() {
        Some(unit @ ('K' | 'M' | 'G' | 'T' | 'P')) => {
            let power = "KMGTP".find(unit).map_or(0, |at| at + 1);
            (&body[..body.len() - 1], power)
        }
        _ => (body, 0),
    };
    let value: f64 = number.parse().map_err(|_| bad())?;
    let factor = base.powi(i32::try_from(power).map_err(|_| bad())?);
    Some(value * factor)
        .filter(|value| value.is_finite() && *value >= 0.0)
        .ok_or_else(bad)
}

/// A time as uperf prints it (`15.97us`, `35.39ms`, `487.00ns`, `1.20s`),
/// in microseconds.
fn micros(text: &str, line_no: usize) -> Result<f64, ImportError> {
    let bad = || ImportError::parse(line_no, format!("\"{text}\" is not a uperf time"));
    let (number, factor) = if let Some(number) = text.strip_suffix("ns") {
        (number, 1e-3)
    } else if let Some(number) = text.strip_suffix("us") {
        (number, 1.0)
    } else if let Some(number) = text.strip_suffix("ms") {
        (number, 1e3)
    } else if let Some(number) = text.strip_suffix('s') {
        (number, 1e6)
    } else {
        return Err(bad());
    };
    number
        .parse::<f64>()
        .ok()
        .filter(|value| value.is_finite() && *value >= 0.0)
        .map(|value| value * factor)
        .ok_or_else(bad)
}

/// `Txn2  57.34MB /  10.21(s) =  47.11Mb/s  92009op/s`.
fn txn_line(line: &str, line_no: usize) -> Result<TxnLine, ImportError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let [_, bytes, "/", seconds, "=", throughput, operations] = words.as_slice() else {
        return Err(ImportError::parse(
            line_no,
            "expected a uperf transaction line: TxnN BYTES / SECONDS(s) = RATE OPS op/s",
        ));
    };
    let seconds = seconds
        .strip_suffix("(s)")
        .and_then(|value| value.parse::<f64>().ok())
        .filter(|value| value.is_finite() && *value >= 0.0)
        .ok_or_else(|| ImportError::parse(line_no, format!("\"{seconds}\" is not a time")))?;
    let operation_rate = operations
        .strip_suffix("op/s")
        .and_then(|value| value.parse::<f64>().ok())
        .filter(|value| value.is_finite() && *value >= 0.0)
        .ok_or_else(|| ImportError::parse(line_no, format!("\"{operations}\" is not a rate")))?;
    Ok(TxnLine {
        line_no,
        bytes: scaled(bytes, "B", 1024.0, line_no)?,
        seconds,
        throughput_bps: scaled(throughput, "b/s", 1000.0, line_no)?,
        operation_rate,
    })
}

/// A row of the `Txn Count avg cpu max min` table.
struct TxnAverage {
    count: u64,
    mean_us: f64,
    max_us: f64,
    min_us: f64,
}

fn average_row(line: &str, line_no: usize) -> Result<TxnAverage, ImportError> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let [_, count, mean, _cpu, max, min, ..] = words.as_slice() else {
        return Err(ImportError::parse(
            line_no,
            "expected a uperf average: TxnN COUNT AVG CPU MAX MIN",
        ));
    };
    Ok(TxnAverage {
        count: count
            .parse()
            .map_err(|_| ImportError::parse(line_no, format!("\"{count}\" is not a count")))?,
        mean_us: micros(mean, line_no)?,
        max_us: micros(max, line_no)?,
        min_us: micros(min, line_no)?,
    })
}

/// The rows of the table whose header line begins with `first_word` and
/// whose rows follow a line of dashes, up to a blank line.
fn table_rows<'a>(lines: &[(usize, &'a str)], first_word: &str) -> Vec<(usize, &'a str)> {
    let Some(header) = lines
        .iter()
        .position(|(_, line)| line.split_whitespace().next() == Some(first_word))
    else {
        return Vec::new();
    };
    lines[header + 1..]
        .iter()
        .skip_while(|(_, line)| line.trim().starts_with("---"))
        .take_while(|(_, line)| !line.trim().is_empty() && !line.trim().starts_with("---"))
        .copied()
        .collect()
}

/// Every uperf output in `text`, each labelled as `options` says, handed
/// to `sink` as it is read.
pub(super) fn parse_each(
    text: &str,
    options: &ImportOptions,
    sink: RecordSink<'_>,
) -> Result<(), ImportError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(idx, line)| (idx + 1, shown(line)))
        .collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&idx| is_start(lines[idx].1))
        .collect();
    // A figure cut short reads as another figure: uperf ends every line,
    // so a last line without its end is refused rather than read.
    if let Some(&(line_no, last)) = lines.last().filter(|(_, line)| !line.trim().is_empty())
        && !text.ends_with('\n')
    {
        return Err(ImportError::parse(
            line_no,
            format!(
                "the input ends inside this line (cut short?): \"{}\"",
                last.trim()
            ),
        ));
    }
    let per_output = options.for_outputs(starts.len())?;
    for (start_idx, &start) in starts.iter().enumerate() {
        let end = starts.get(start_idx + 1).copied().unwrap_or(lines.len());
        let record = parse_output(&lines[start..end], &per_output[start_idx])?;
        sink(record, lines[start].0)?;
    }
    Ok(())
}

/// The run of the output `lines`, its first line the `Starting` line.
fn parse_output(
    lines: &[(usize, &str)],
    options: &ImportOptions,
) -> Result<RunRecord, ImportError> {
    let (start_no, start_line) = lines[0];
    let name = start_line
        .split_once("profile:")
        .map(|(_, rest)| rest.split_whitespace().next().unwrap_or(""))
        .unwrap_or("");
    let profile = known_profile(name).ok_or_else(|| {
        ImportError::parse(
            start_no,
            format!(
                "uperf profile \"{name}\" is not one netbisect knows: it reads the profiles \
                 pbench-uperf writes, named PROTOCOL-TEST-SIZEB-Ni (tcp-rr-64B-1i, \
                 tcp-stream-16384B-1i), whose names give the test and its sizes"
            ),
        )
    })?;
    // The summary lines run from the start to uperf's line of dashes and
    // the profile's total under it; without them the summary was cut.
    let dashes = lines
        .iter()
        .position(|(_, line)| line.trim().starts_with("---"));
    let total = dashes
        .and_then(|at| lines.get(at + 1))
        .filter(|(_, line)| line.contains(" = ") && line.contains("op/s"));
    if total.is_none() {
        let (last_no, _) = lines[dashes.unwrap_or(lines.len() - 1).min(lines.len() - 1)];
        return Err(ImportError::parse(
            last_no,
            "uperf's transaction summary ends without the profile's total line (cut short?)",
        ));
    }
    let summary: Vec<(usize, &str)> = lines[1..dashes.unwrap_or(lines.len())]
        .iter()
        .filter(|(_, line)| line.trim_start().starts_with("Txn"))
        .copied()
        .collect();
    let txns = summary
        .iter()
        .map(|&(line_no, line)| txn_line(line, line_no))
        .collect::<Result<Vec<_>, _>>()?;
    let moved: Vec<usize> = (0..txns.len())
        .filter(|&idx| txns[idx].bytes > 0.0)
        .collect();
    let [measured_idx] = moved.as_slice() else {
        return Err(ImportError::parse(
            start_no,
            format!(
                "a uperf output of profile \"{name}\" with {} transactions that moved data; \
                 its profile has one",
                moved.len()
            ),
        ));
    };
    let measured = &txns[*measured_idx];
    let averages = table_rows(lines, "Txn");
    let average = match averages.len() {
        0 => None,
        n if n == txns.len() => {
            let (line_no, line) = averages[*measured_idx];
            Some(average_row(line, line_no)?)
        }
        n => {
            return Err(ImportError::parse(
                averages[0].0,
                format!(
                    "{n} rows of transaction times for {} transactions",
                    txns.len()
                ),
            ));
        }
    };
    let host = table_rows(lines, "Hostname")
        .iter()
        .filter_map(|(_, line)| line.split_whitespace().next())
        .find(|host| *host != "master")
        .unwrap_or("unknown")
        .to_string();
    let mut spec = RunSpec::defaults(profile.test);
    spec.flows = profile.threads;
    spec.duration_s = measured.seconds.round().max(1.0);
    if host.contains(':') {
        spec.family = AddressFamily::Ipv6;
    }
    let mut figures = PeerFigures {
        elapsed_s: Some(measured.seconds),
        throughput_bps: Some(measured.throughput_bps),
        operation_rate: Some(measured.operation_rate),
        transactions: average.as_ref().map(|average| average.count),
        ..PeerFigures::default()
    };
    if profile.test.is_request_response() {
        spec.request_size_bytes = profile.size_bytes;
        spec.response_size_bytes = profile.size_bytes;
        figures.transaction_rate = Some(measured.operation_rate / 2.0);
        if let Some(average) = &average {
            figures.latency = LatencyReport {
                mean_us: Some(average.mean_us),
                min_us: Some(average.min_us),
                max_us: Some(average.max_us),
                ..LatencyReport::default()
            };
        }
    } else {
        spec.send_size_bytes = profile.size_bytes;
    }
    let run = PeerRun {
        source: Source {
            tool: "uperf".to_string(),
            version: None,
            undated: false,
        },
        spec,
        endpoint: Endpoint { host, port: None },
        env: Environments::default(),
        started_at: None,
        figures,
        confidence: None,
    };
    build_record(run, options).map_err(|err| ImportError::parse(measured.line_no, err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_are_known_by_pbench_names_only() {
        let rr = known_profile("tcp-rr-64b-1i").unwrap();
        assert_eq!(
            (rr.test, rr.size_bytes, rr.threads),
            (TestKind::TcpRr, 64, 1)
        );
        let stream = known_profile("tcp_stream-16384B-8i").unwrap();
        assert_eq!(stream.test, TestKind::TcpStream);
        assert_eq!(stream.threads, 8);
        for unknown in [
            "netperf",
            "tcp-rr",
            "udp-stream-64b-1i",
            "tcp-rr-0b-1i",
            "tcp-rr-64-1i",
        ] {
            assert!(known_profile(unknown).is_none(), "{unknown}");
        }
    }

    #[test]
    fn figures_read_with_uperfs_units() {
        assert_eq!(scaled("47.11Mb/s", "b/s", 1000.0, 1).unwrap(), 47.11e6);
        assert_eq!(
            scaled("1.19GB", "B", 1024.0, 1).unwrap(),
            1.19 * 1024.0 * 1024.0 * 1024.0
        );
        assert_eq!(scaled("0", "B", 1024.0, 1).unwrap(), 0.0);
        assert!(scaled("-1Mb/s", "b/s", 1000.0, 1).is_err());
        assert_eq!(micros("487.00ns", 1).unwrap(), 0.487);
        assert_eq!(micros("35.39ms", 1).unwrap(), 35390.0);
        assert!(micros("12", 1).is_err());
    }
}
