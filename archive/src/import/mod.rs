//! Importers: results people already have, turned into run records.
//!
//! [`parse`] detects the format from the content, not the file name:
//!
//! - canonical run records (`netbisect.run/1`), one JSON document or JSON
//!   lines; kept verbatim, their subject and testbed untouched;
//! - iperf3 `-J` output, TCP and UDP ([`iperf3`]);
//! - netperf output after its banner line: the classic tables of
//!   TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, UDP_STREAM and UDP_RR, omni
//!   `-k` keyval and omni `-o` CSV ([`netperf`]).
//!
//! Runs of peer tools become records whose `source.tool` names the tool,
//! with the commit, label and testbed the user gives in [`ImportOptions`].
//! Peer outputs carry no start time (netperf) or carry their own (iperf3);
//! for netperf the end of the run is taken from [`ImportOptions::finished_at`]
//! (the CLI passes the file's modification time), so importing the same
//! file twice gives the same ids.
//!
//! A file either parses completely or yields an error naming the first line
//! that did not parse; there is no partial result.

pub mod iperf3;
pub mod netperf;
mod records;

use crate::store::CanonicalRun;
use bench_core::record::{
    CpuFigures, Endpoint, Environments, Iteration, LatencyReport, RunRecord, Source, Spread,
    Subject, Summary, UdpFigures,
};
use bench_core::spec::RunSpec;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Testbed name given to imported runs when the user names none.
pub const DEFAULT_TESTBED: &str = "default";

/// What the user says about imported peer-tool runs.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Commit, describe, kernel release and label of the code under test.
    pub subject: Subject,
    /// Testbed name; [`DEFAULT_TESTBED`] when `None`.
    pub testbed: Option<String>,
    /// When the run ended, for outputs that do not say; the Unix epoch
    /// when `None`.
    pub finished_at: Option<SystemTime>,
}

/// The formats [`parse`] recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Format {
    /// Canonical run records.
    RunRecords,
    /// netperf classic tables.
    NetperfClassic,
    /// netperf omni `-k` keyval.
    NetperfKeyval,
    /// netperf omni `-o` CSV.
    NetperfCsv,
    /// iperf3 `-J`.
    Iperf3,
}

impl Format {
    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::RunRecords => "run records",
            Format::NetperfClassic => "netperf",
            Format::NetperfKeyval => "netperf omni keyval",
            Format::NetperfCsv => "netperf omni CSV",
            Format::Iperf3 => "iperf3 JSON",
        }
    }
}

/// The runs of one input.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The format detected.
    pub format: Format,
    /// The runs, in input order.
    pub runs: Vec<CanonicalRun>,
}

/// Why an input could not be imported. Lines count from 1.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ImportError {
    /// The input is in none of the known formats.
    #[error("line {line}: not netperf output, iperf3 JSON or a run record: \"{text}\"")]
    Unrecognised {
        /// The first line that did not parse.
        line: usize,
        /// Its text, shortened.
        text: String,
    },
    /// The input is in a known format but does not parse.
    #[error("line {line}: {message}")]
    Parse {
        /// The first line that did not parse.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// The input has no run in it.
    #[error("no run found")]
    Empty,
}

impl ImportError {
    fn parse(line: usize, message: impl Into<String>) -> ImportError {
        ImportError::Parse {
            line,
            message: message.into(),
        }
    }

    fn unrecognised(line: usize, text: &str) -> ImportError {
        let mut text: String = text.trim().chars().take(60).collect();
        text = text.replace(|c: char| !c.is_ascii() || c.is_ascii_control(), "?");
        ImportError::Unrecognised { line, text }
    }
}

/// Detects the format of `input` and parses every run in it.
pub fn parse(input: &[u8], options: &ImportOptions) -> Result<Imported, ImportError> {
    let text = std::str::from_utf8(input).map_err(|err| {
        let line = 1 + input[..err.valid_up_to()]
            .iter()
            .filter(|&&byte| byte == b'\n')
            .count();
        ImportError::parse(line, "not UTF-8 text")
    })?;
    let Some((first_idx, first_line)) = text
        .lines()
        .enumerate()
        .find(|(_, line)| !line.trim().is_empty())
    else {
        return Err(ImportError::Empty);
    };
    let first_line_no = first_idx + 1;
    let (format, runs) = if first_line.trim_start().starts_with('{') {
        let tree = records::first_value(text)?;
        if tree.get("schema").is_some() {
            (Format::RunRecords, records::parse(input)?)
        } else if tree.get("start").is_some() && tree.get("end").is_some() {
            let record = iperf3::parse(text, options)?;
            let run = CanonicalRun::from_record(record)
                .map_err(|err| ImportError::parse(first_line_no, err.to_string()))?;
            (Format::Iperf3, vec![run])
        } else {
            return Err(ImportError::unrecognised(first_line_no, first_line));
        }
    } else if netperf::is_banner(first_line) {
        let (format, record) = netperf::parse(text, options)?;
        (
            format,
            vec![
                CanonicalRun::from_record(record)
                    .map_err(|err| ImportError::parse(first_line_no, err.to_string()))?,
            ],
        )
    } else {
        return Err(ImportError::unrecognised(first_line_no, first_line));
    };
    if runs.is_empty() {
        return Err(ImportError::Empty);
    }
    Ok(Imported { format, runs })
}

/// Figures one peer-tool run reported; absent ones were not printed.
#[derive(Clone, Debug, Default)]
pub(crate) struct PeerFigures {
    /// Measured length, seconds.
    pub elapsed_s: Option<f64>,
    /// Throughput at the receiver, bits per second.
    pub throughput_bps: Option<f64>,
    /// Transactions per second.
    pub transaction_rate: Option<f64>,
    /// Bytes sent and received, when reported.
    pub bytes_sent: Option<u64>,
    pub bytes_received: Option<u64>,
    /// Messages (datagrams) sent and received, when reported.
    pub messages_sent: Option<u64>,
    pub messages_received: Option<u64>,
    /// CPU figures; negative values mean "not measured" and are dropped.
    pub cpu: CpuFigures,
    /// Latency figures.
    pub latency: LatencyReport,
    /// Datagrams lost, percent of those sent, when reported.
    pub loss_pct: Option<f64>,
}

/// What a peer-tool run says about itself besides its figures.
pub(crate) struct PeerRun {
    pub source: Source,
    pub spec: RunSpec,
    pub endpoint: Endpoint,
    pub env: Environments,
    /// Start of the run, when the tool said.
    pub started_at: Option<SystemTime>,
    pub figures: PeerFigures,
    /// The confidence outcome, when the tool printed one.
    pub confidence: Option<bench_core::record::ConfidenceOutcome>,
}

fn nonnegative(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite() && *v >= 0.0)
}

fn round_count(value: f64) -> u64 {
    if value.is_finite() && value > 0.0 {
        // Counts derived from rates stay far below 2^53.
        value.round() as u64
    } else {
        0
    }
}

/// Builds and seals the record of one peer-tool run: one iteration with
/// the figures; byte and message counts the tool did not print are derived
/// from the rates and sizes it did.
pub(crate) fn build_record(
    run: PeerRun,
    options: &ImportOptions,
) -> Result<RunRecord, bench_core::record::RecordError> {
    let PeerRun {
        source,
        mut spec,
        endpoint,
        env,
        started_at,
        figures,
        confidence,
    } = run;
    let elapsed_s = figures.elapsed_s.unwrap_or(spec.duration_s);
    let cpu = CpuFigures {
        local_util_pct: nonnegative(figures.cpu.local_util_pct),
        remote_util_pct: nonnegative(figures.cpu.remote_util_pct),
        local_service_demand: nonnegative(figures.cpu.local_service_demand),
        remote_service_demand: nonnegative(figures.cpu.remote_service_demand),
    };
    spec.local_cpu = cpu.local_util_pct.is_some();
    spec.remote_cpu = cpu.remote_util_pct.is_some();
    let cpu = (cpu != CpuFigures::default()).then_some(cpu);
    let reported_latency = (figures.latency != LatencyReport::default()).then_some(figures.latency);

    let mut iteration = Iteration {
        elapsed_s,
        cpu: cpu.clone(),
        reported_latency: reported_latency.clone(),
        ..Iteration::default()
    };
    if spec.test.is_request_response() {
        let rate = figures.transaction_rate.unwrap_or(0.0);
        let transactions = round_count(rate * elapsed_s);
        let bytes_per_transaction =
            f64::from(spec.request_size_bytes) + f64::from(spec.response_size_bytes);
        iteration.transaction_rate = Some(rate);
        iteration.transactions = Some(transactions);
        iteration.throughput_bps = figures
            .throughput_bps
            .unwrap_or(rate * bytes_per_transaction * 8.0);
        // Counts come from the input: saturate rather than overflow.
        iteration.bytes_sent = transactions.saturating_mul(u64::from(spec.request_size_bytes));
        iteration.bytes_received = transactions.saturating_mul(u64::from(spec.response_size_bytes));
        iteration.messages_sent = transactions;
        iteration.messages_received = transactions;
    } else {
        let throughput_bps = figures.throughput_bps.unwrap_or(0.0);
        let message_size = f64::from(spec.send_size_bytes.max(1));
        let derived_bytes = round_count(throughput_bps * elapsed_s / 8.0);
        iteration.throughput_bps = throughput_bps;
        iteration.bytes_received =
            figures
                .bytes_received
                .unwrap_or(match figures.messages_received {
                    Some(messages) => messages.saturating_mul(u64::from(spec.send_size_bytes)),
                    None => derived_bytes,
                });
        iteration.bytes_sent = figures.bytes_sent.unwrap_or(match figures.messages_sent {
            Some(messages) => messages.saturating_mul(u64::from(spec.send_size_bytes)),
            None => iteration.bytes_received,
        });
        iteration.messages_sent = figures
            .messages_sent
            .unwrap_or_else(|| round_count(iteration.bytes_sent as f64 / message_size));
        iteration.messages_received = figures
            .messages_received
            .unwrap_or_else(|| round_count(iteration.bytes_received as f64 / message_size));
    }
    let udp = (spec.test == bench_core::spec::TestKind::UdpStream).then(|| {
        let sent = iteration.messages_sent;
        let received = iteration.messages_received;
        let loss_pct = figures.loss_pct.unwrap_or(if sent > 0 {
            100.0 * sent.saturating_sub(received) as f64 / sent as f64
        } else {
            0.0
        });
        UdpFigures {
            messages_sent: sent,
            messages_received: received,
            loss_pct,
        }
    });

    let finished_at = match (started_at, options.finished_at) {
        (Some(start), _) => Duration::try_from_secs_f64(elapsed_s.max(0.0))
            .ok()
            .and_then(|elapsed| start.checked_add(elapsed))
            .unwrap_or(start),
        (None, Some(end)) => end,
        (None, None) => UNIX_EPOCH,
    };
    let started_at = started_at.unwrap_or_else(|| {
        Duration::try_from_secs_f64(elapsed_s.max(0.0))
            .ok()
            .and_then(|elapsed| finished_at.checked_sub(elapsed))
            .unwrap_or(UNIX_EPOCH)
    });
    // Record times have four-digit years (RFC 3339): refuse what lies
    // beyond rather than write a record no reader takes.
    let last_second = UNIX_EPOCH + Duration::from_secs(253_402_300_799);
    if started_at > last_second || finished_at > last_second {
        return Err(bench_core::record::RecordError::Invalid(
            "the run's times lie past the year 9999".to_string(),
        ));
    }
    let summary = Summary {
        n_iterations: 1,
        throughput_bps: Spread::of(&[iteration.throughput_bps]).unwrap_or_default(),
        transaction_rate: iteration
            .transaction_rate
            .and_then(|rate| Spread::of(&[rate])),
        confidence,
        cpu,
        latency: None,
        udp,
        reported_latency,
        ..Summary::default()
    };
    let mut record = RunRecord {
        schema: String::new(),
        id: String::new(),
        config_key: String::new(),
        source,
        started_at: bench_core::time::rfc3339_utc(started_at),
        finished_at: bench_core::time::rfc3339_utc(finished_at),
        spec,
        endpoint,
        subject: options.subject.clone(),
        testbed: options
            .testbed
            .clone()
            .unwrap_or_else(|| DEFAULT_TESTBED.to_string()),
        env,
        iterations: vec![iteration],
        summary,
    };
    record.seal()?;
    Ok(record)
}
