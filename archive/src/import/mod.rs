//! Importers: results people already have, turned into run records.
//!
//! [`parse`] detects the format from the content, not the file name:
//!
//! - canonical run records (`netbisect.run/1`), one JSON document or JSON
//!   lines; kept verbatim, their subject and testbed untouched;
//! - iperf3 `-J` output, TCP and UDP ([`iperf3`]);
//! - netperf output after its banner line: the classic tables of
//!   TCP_STREAM, TCP_MAERTS, TCP_RR, TCP_CRR, UDP_STREAM and UDP_RR, omni
//!   `-k` keyval and omni `-o` CSV ([`netperf`]);
//! - uperf's text output of the profiles pbench-uperf writes ([`uperf`]).
//!
//! A text input may hold several outputs; [`ImportOptions::output_labels`]
//! labels them in order, and rows that begin with a side name label
//! their own runs.
//!
//! Runs of peer tools become records whose `source.tool` names the tool,
//! with the commit, label and testbed the user gives in [`ImportOptions`].
//! Peer outputs carry no start time (netperf) or carry their own (iperf3).
//! A run whose output has none is `undated`: its start is the import time
//! ([`ImportOptions::imported_at`]), kept for ordering but left out of its
//! id, so the same text imported twice is one run whatever the file's
//! modification time.
//!
//! Text from a mail is read as mails carry it: quote markers are taken
//! off, and lines a mail client broke at 72 to 80 columns are joined back
//! where the tool's layout leaves one reading (`wrap` says which lines
//! could have been broken; the tool's reader which to join).
//!
//! A file either parses completely or yields an error naming the first line
//! that did not parse; there is no partial result.

mod batches;
mod input;
pub mod iperf3;
mod mail;
pub mod netperf;
mod plausible;
mod records;
pub mod uperf;
mod wrap;

pub use batches::{
    IMPORT_BATCH_BYTES, IMPORT_BATCH_RUNS, ImportFailure, ImportReport, ImportStopped, Input,
    import_into,
};
pub use input::ReadError;

use crate::store::CanonicalRun;
use mail::{table_start, unquote};
use plausible::check_plausible;
pub use run_record::record::limits::{
    MAX_HOST_CPUS as MAX_CPUS, MAX_THROUGHPUT_BPS, MAX_TRANSACTION_RATE,
};
use run_record::record::{
    CpuFigures, Endpoint, Environments, Iteration, LatencyReport, RunRecord, Source, Spread,
    Subject, Summary, UdpFigures,
};
use run_record::spec::RunSpec;
use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The longest line an input may have, bytes. [`import_into`] refuses a
/// longer line as soon as it has read this much of it, so one line of an
/// input never holds more memory than this; [`parse`] refuses one too.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// The most lines a text input (netperf or uperf output, a mail) may
/// have: its lines are indexed, and the index is kept within tens of MiB.
pub const MAX_TEXT_LINES: usize = 1 << 20;

/// The largest text input (netperf or uperf output, iperf3's JSON, a
/// mail), bytes: a text is parsed whole, and its parse takes a few times
/// its size.
pub const MAX_TEXT_BYTES: usize = 128 << 20;

/// The largest JSON document (one run record, one iperf3 output) an input
/// may hold, bytes; a larger one is refused before it is parsed into a
/// tree, which takes several times its size.
pub const MAX_DOCUMENT_BYTES: usize = 16 << 20;

/// The most runs one input may hold: counted before any is stored, and
/// for JSON lines before any document is read into a record.
pub const MAX_RUNS_PER_INPUT: usize = 100_000;

/// Testbed name given to imported runs when the user names none.
pub const DEFAULT_TESTBED: &str = "default";

/// What the user says about imported peer-tool runs.
#[derive(Clone, Debug, Default)]
pub struct ImportOptions {
    /// Commit, describe, kernel release and label of the code under test.
    pub subject: Subject,
    /// Testbed name; [`DEFAULT_TESTBED`] when `None`.
    pub testbed: Option<String>,
    /// When the input is imported: the start of a run whose output says
    /// nothing of its time (netperf's), kept for ordering but not in the
    /// run's id; the Unix epoch when `None`.
    pub imported_at: Option<SystemTime>,
    /// Side names of labelled rows (`current`, `Org`) and the label each
    /// becomes; a name not in the map stays as written.
    pub side_labels: BTreeMap<String, String>,
    /// Put before every side name taken as a label.
    pub label_prefix: Option<String>,
    /// Labels of the outputs of a text input, in order: the runs of the
    /// first output take the first, and so on. There must be one per
    /// output, and an output whose lines name their sides takes none.
    pub output_labels: Vec<String>,
}

impl ImportOptions {
    /// The options of each of `n_outputs` outputs of one input: each with
    /// its label of [`ImportOptions::output_labels`], if any are given.
    pub(crate) fn for_outputs(&self, n_outputs: usize) -> Result<Vec<ImportOptions>, ImportError> {
        if self.output_labels.is_empty() {
            return Ok(vec![self.clone(); n_outputs]);
        }
        if self.output_labels.len() != n_outputs {
            return Err(ImportError::LabelCount {
                labels: self.output_labels.len(),
                outputs: n_outputs,
            });
        }
        Ok(self
            .output_labels
            .iter()
            .map(|label| {
                let mut options = self.clone();
                options.subject.label = Some(label.clone());
                options
            })
            .collect())
    }

    /// Whether the output these options are for was labelled by
    /// [`ImportOptions::output_labels`].
    pub(crate) fn labels_outputs(&self) -> bool {
        !self.output_labels.is_empty()
    }

    /// The options of the run of a row labelled `side`: its label is the
    /// side name, mapped and prefixed as asked.
    pub(crate) fn with_side_label(&self, side: &str) -> ImportOptions {
        let mapped = self.side_labels.get(side).map_or(side, String::as_str);
        let mut options = self.clone();
        options.subject.label = Some(format!(
            "{}{mapped}",
            self.label_prefix.as_deref().unwrap_or("")
        ));
        options
    }
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
    /// uperf's text output.
    Uperf,
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
            Format::Uperf => "uperf",
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
    #[error("line {line}: not netperf or uperf output, iperf3 JSON or a run record: \"{text}\"")]
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
    /// Output labels were given, but not one per output.
    #[error("{labels} labels for {outputs} outputs: give one label per output, in order")]
    LabelCount {
        /// Labels given.
        labels: usize,
        /// Outputs in the input.
        outputs: usize,
    },
    /// More lines of text than an import reads.
    #[error(
        "line {line}: more than {} lines of text; import the outputs in parts",
        MAX_TEXT_LINES
    )]
    TooManyLines {
        /// The first line past the limit.
        line: usize,
    },
    /// More runs in one input than [`MAX_RUNS_PER_INPUT`].
    #[error("{}", too_many_runs(*count, *line))]
    TooManyRuns {
        /// The runs counted (for JSON lines, the documents); for an input
        /// refused at the first run past the ceiling, that run's number.
        count: usize,
        /// The line that starts the first run past the ceiling, where the
        /// input is refused as soon as it is reached (netperf's tables).
        line: Option<usize>,
    },
    /// A text larger than [`MAX_TEXT_BYTES`].
    #[error(
        "line {line}: more than {} MiB of text, the most one import reads; import the outputs in parts",
        MAX_TEXT_BYTES >> 20
    )]
    TextTooLarge {
        /// The line where the text passes the ceiling.
        line: usize,
    },
    /// A line longer than [`MAX_LINE_BYTES`].
    #[error("line {line}: longer than {} MiB, the longest line netbisect reads", MAX_LINE_BYTES >> 20)]
    LineTooLong {
        /// The line.
        line: usize,
    },
    /// A JSON document larger than [`MAX_DOCUMENT_BYTES`].
    #[error("line {line}: a JSON document larger than {} MiB, the largest netbisect reads", MAX_DOCUMENT_BYTES >> 20)]
    DocumentTooLarge {
        /// The line the document starts on.
        line: usize,
    },
}

/// The text of [`ImportError::TooManyRuns`].
fn too_many_runs(count: usize, line: Option<usize>) -> String {
    let (line, runs) = match line {
        Some(line) => (format!("line {line}: "), format!("run {count} of")),
        None => (String::new(), format!("{count} runs in")),
    };
    format!(
        "{line}{runs} one input, more than the {MAX_RUNS_PER_INPUT} one import stores; \
         import it in parts"
    )
}

impl ImportError {
    fn parse(line: usize, message: impl Into<String>) -> ImportError {
        ImportError::Parse {
            line,
            message: message.into(),
        }
    }

    pub(crate) fn unrecognised(line: usize, text: &str) -> ImportError {
        let mut text: String = text.trim().chars().take(60).collect();
        text = text.replace(|c: char| !c.is_ascii() || c.is_ascii_control(), "?");
        ImportError::Unrecognised { line, text }
    }
}

/// Detects the format of `input` and parses every run in it, held in
/// memory: for an input already there (a test, a fuzzer). An input read
/// from a file or a stream goes to the archive through [`import_into`],
/// which holds one batch of it at a time.
pub fn parse(input: &[u8], options: &ImportOptions) -> Result<Imported, ImportError> {
    /// Every run, kept.
    struct Kept(Vec<CanonicalRun>);
    impl batches::RunSink for Kept {
        fn take(&mut self, run: CanonicalRun) -> Result<(), crate::ArchiveError> {
            self.0.push(run);
            Ok(())
        }
        fn keeps_as_it_goes(&self) -> bool {
            false
        }
    }
    let as_input = |err: ReadError| match err {
        ReadError::Input(err) => err,
        // Reading bytes in memory does not fail.
        ReadError::Io(err) => ImportError::parse(1, err.to_string()),
    };
    let mut reader = input;
    let start = input::Start::read(&mut reader).map_err(as_input)?;
    if start.first == Some(b'{') {
        records::check_documents(&mut reader, &start).map_err(as_input)?;
    }
    let mut kept = Kept(Vec::new());
    let (format, _) =
        batches::import_stream(&mut &input[..], options, &mut kept).map_err(|err| match err {
            ImportFailure::Read(err) => as_input(err),
            ImportFailure::Store(err) => ImportError::parse(1, err.to_string()),
        })?;
    Ok(Imported {
        format,
        runs: kept.0,
    })
}

/// What [`parse_text`] and the text readers hand each run to, with the
/// line the run starts on.
pub(crate) type RecordSink<'a> = &'a mut dyn FnMut(RunRecord, usize) -> Result<(), ImportError>;

/// Parses every run of a text input (iperf3's JSON, netperf or uperf
/// output, a mail of them), handing each to `take` as it is read;
/// returns the format and the number of runs.
pub(crate) fn parse_text(
    text: &str,
    options: &ImportOptions,
    take: &mut dyn FnMut(CanonicalRun) -> Result<(), ImportError>,
) -> Result<(Format, usize), ImportError> {
    let Some((first_idx, first_line)) = text
        .lines()
        .enumerate()
        .find(|(_, line)| !line.trim().is_empty())
    else {
        return Err(ImportError::Empty);
    };
    let mut n_runs = 0_usize;
    let mut sink = |record: RunRecord, line: usize| {
        if n_runs == MAX_RUNS_PER_INPUT {
            return Err(ImportError::TooManyRuns {
                count: n_runs + 1,
                line: Some(line),
            });
        }
        let run = CanonicalRun::from_record(record)
            .map_err(|err| ImportError::parse(line, err.to_string()))?;
        n_runs += 1;
        take(run)
    };
    if first_line.trim_start().starts_with('{') {
        let options = options.for_outputs(1)?.remove(0);
        sink(iperf3::parse(text, &options)?, first_idx + 1)?;
        return Ok((Format::Iperf3, n_runs));
    }
    // Text from an email: quoted lines are read unquoted, and the prose
    // around the outputs is not read.
    if let Some((idx, _)) = text.lines().enumerate().nth(MAX_TEXT_LINES) {
        return Err(ImportError::TooManyLines { line: idx + 1 });
    }
    let text = unquote(text);
    let netperf_start = text.lines().position(netperf::is_banner);
    let uperf_start = text.lines().position(uperf::is_start);
    let format = match (netperf_start, uperf_start) {
        (Some(_), None) => netperf::parse_each(&text, options, &mut sink)?,
        (None, Some(_)) => {
            uperf::parse_each(&text, options, &mut sink)?;
            Format::Uperf
        }
        (Some(netperf), Some(uperf)) => {
            return Err(ImportError::parse(
                netperf.max(uperf) + 1,
                "netperf and uperf outputs in one input: import them apart",
            ));
        }
        (None, None) => {
            // A mail's table made by hand: the error points at it, not at
            // the mail's first header.
            let (line, text) = table_start(&text).unwrap_or((first_idx + 1, first_line));
            return Err(ImportError::unrecognised(line, text));
        }
    };
    if n_runs == 0 {
        return Err(ImportError::Empty);
    }
    Ok((format, n_runs))
}

/// Figures one peer-tool run reported; absent ones were not printed.
#[derive(Clone, Debug, Default)]
pub(crate) struct PeerFigures {
    /// Measured length, seconds.
    pub elapsed_s: Option<f64>,
    /// Throughput at the receiver, bits per second.
    pub throughput_bps: Option<f64>,
    /// Throughput at the sender, when printed apart (UDP_STREAM).
    pub sent_throughput_bps: Option<f64>,
    /// Operations per second (uperf: each write and each read is one).
    pub operation_rate: Option<f64>,
    /// Completed transactions, when printed.
    pub transactions: Option<u64>,
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
    /// Failed sends (netperf's UDP_STREAM "Errors"), when reported.
    pub send_errors: Option<u64>,
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
    pub confidence: Option<run_record::record::ConfidenceOutcome>,
}

fn nonnegative(value: Option<f64>) -> Option<f64> {
    value.filter(|v| v.is_finite() && *v >= 0.0)
}

/// Why a peer-tool run could not become a record.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BuildError {
    /// A figure no real run can have.
    #[error("implausible figure: {0}")]
    Implausible(String),
    /// The record could not be sealed.
    #[error(transparent)]
    Record(#[from] run_record::record::RecordError),
}

/// Builds and seals the record of one peer-tool run: one iteration with
/// the figures the tool printed; what it did not print stays absent.
pub(crate) fn build_record(run: PeerRun, options: &ImportOptions) -> Result<RunRecord, BuildError> {
    check_plausible(&run, options)?;
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
        send_errors: figures.send_errors,
        transactions: figures.transactions,
        reported_sent_throughput_bps: figures.sent_throughput_bps,
        reported_operation_rate: figures.operation_rate,
        ..Iteration::default()
    };
    // Counts are kept as the tool printed them; none is derived from a
    // rate, which would make up a figure the tool never measured.
    iteration.bytes_sent = figures.bytes_sent;
    iteration.bytes_received = figures.bytes_received;
    iteration.messages_sent = figures.messages_sent;
    iteration.messages_received = figures.messages_received;
    if spec.test.is_request_response() {
        let rate = figures.transaction_rate.unwrap_or(0.0);
        let bytes_per_transaction =
            f64::from(spec.request_size_bytes) + f64::from(spec.response_size_bytes);
        iteration.transaction_rate = Some(rate);
        // netbisect's throughput of an RR test is defined from the rate
        // and the sizes, so it is the same figure, not an estimate.
        iteration.throughput_bps = figures
            .throughput_bps
            .unwrap_or(rate * bytes_per_transaction * 8.0);
    } else {
        iteration.throughput_bps = figures.throughput_bps.unwrap_or(0.0);
    }
    let udp = match (spec.test, figures.messages_sent, figures.messages_received) {
        (run_record::spec::TestKind::UdpStream, Some(sent), Some(received)) => {
            let loss_pct = figures.loss_pct.unwrap_or(if sent > 0 {
                100.0 * sent.saturating_sub(received) as f64 / sent as f64
            } else {
                0.0
            });
            Some(UdpFigures {
                messages_sent: sent,
                messages_received: received,
                loss_pct,
                send_errors: figures.send_errors,
            })
        }
        _ => None,
    };

    let mut source = source;
    source.undated = started_at.is_none();
    let started_at = started_at.or(options.imported_at).unwrap_or(UNIX_EPOCH);
    let finished_at = Duration::try_from_secs_f64(elapsed_s.max(0.0))
        .ok()
        .and_then(|elapsed| started_at.checked_add(elapsed))
        .unwrap_or(started_at);
    // Record times have four-digit years (RFC 3339): refuse what lies
    // beyond rather than write a record no reader takes.
    let last_second = UNIX_EPOCH + Duration::from_secs(253_402_300_799);
    if started_at > last_second || finished_at > last_second {
        return Err(BuildError::Implausible(
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
        started_at: run_record::time::rfc3339_utc(started_at),
        finished_at: run_record::time::rfc3339_utc(finished_at),
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
        system: None,
        experiment: None,
        command: None,
    };
    record.seal()?;
    Ok(record)
}
