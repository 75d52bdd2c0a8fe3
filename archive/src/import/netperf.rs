//! netperf output: classic tables, omni `-k` keyval and omni `-o` CSV.
//!
//! Every form starts with netperf's banner line (`MIGRATED TCP STREAM TEST
//! from ... to HOST () port 0 AF_INET : demo`), which names the test, the
//! remote host, the address family and, with `-I`, the requested
//! confidence interval (`: +/-2.500% @ 99% conf.`). A `!!!` warning block
//! (confidence not reached) may follow; its throughput interval becomes
//! the record's confidence outcome. Older netperfs' banners (`UDP
//! UNIDIRECTIONAL SEND TEST`, `TCP STREAM TEST ... : +/-2.500% @ 95%
//! conf.  : demo`) read the same; the notes `: first burst N` and `:
//! nodelay` enter the spec.
//!
//! An input may hold several outputs (a log appended to, an email): each
//! runs from its banner to the next. Text before the first banner, and
//! after a table's block of results, is not read, except that a line of
//! numbers there is refused rather than dropped. A table whose rows begin
//! with a word (`current`, `patched`, `Org:`) gives one run per such row,
//! labelled by the word; an unlabelled line under one is its second line.
//!
//! Nothing is guessed: the first line of a run needs a figure for every
//! column, a run needs all its lines (request/response rows given by side
//! name may leave out the second, which holds only socket sizes), and an
//! input whose last line lacks its end was cut and is refused.
//!
//! Classic tables are read by their headers, not by counting: the header
//! row with the most words defines the columns, every other header word
//! joins the columns it stands over, and each column is recognised by its
//! words (`Throughput`, `Elapsed Time`, `Utilization ... local`,
//! `us/KB`, ...). Values are matched to columns by order when a data line
//! has one value per column, else by position (the second line of
//! UDP_STREAM and request/response tables). The throughput unit is read
//! from the header (`10^6bits/s`, `10^9bits/sec`, `KBytes/s`, ...), so any
//! `-f` works; results are stored in bits per second.
//!
//! netperf prints the socket buffer sizes the kernel granted, not those
//! requested; they are recorded as the spec's socket buffers (receive
//! buffer for request/response tests), so imports of the same command
//! compare. The elapsed time rounded to whole seconds is taken as the
//! test length (`-l` takes whole seconds). A CPU figure of -1 means "not
//! measured" and is dropped.

use super::{Format, ImportError, ImportOptions, PeerFigures, PeerRun, build_record};
use bench_core::record::{ConfidenceOutcome, Endpoint, Environments, RunRecord, Source};
use bench_core::spec::{AddressFamily, ConfidenceSpec, RunSpec, TestKind};
use std::collections::BTreeMap;

/// True when `line` is the last line of netbisect's run table:
/// `commit C, testbed T[, label L], run ID`.
fn is_netbisect_trailer(line: &str) -> bool {
    let line = line.trim();
    line.starts_with("commit ")
        && line.contains(", testbed ")
        && line
            .rsplit_once(", run ")
            .is_some_and(|(_, id)| !id.is_empty() && id.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// True when `line` is a netperf test banner: a test name that starts as
/// netperf's do (`MIGRATED TCP STREAM`, `UDP UNIDIRECTIONAL SEND`, `TCP
/// Connect/Request/Response`, netbisect's `TCP_RR`), then ` TEST`, and
/// where from or to. The name keeps an email's prose ("we TEST it to
/// see") from starting an output.
pub fn is_banner(line: &str) -> bool {
    let line = line.trim();
    let Some(at) = line.find(" TEST") else {
        return false;
    };
    let first_word = line[..at].split(' ').next().unwrap_or("");
    let named = matches!(first_word, "MIGRATED" | "OMNI")
        || ["TCP", "UDP", "SCTP"]
            .iter()
            .any(|protocol| first_word.starts_with(protocol));
    named && (line[at..].starts_with(" TEST from ") || line.contains(" to "))
}

/// What the banner says.
struct Banner {
    test: TestKind,
    host: String,
    family: AddressFamily,
    confidence: Option<ConfidenceSpec>,
    /// `: first burst N` (`-b`).
    first_burst: u32,
    /// `: nodelay` (`-- -D`).
    nodelay: bool,
}

/// The banner's `: ...` notes that change what was measured: the first
/// burst and TCP_NODELAY. Others (`: demo`, `: cpu bind`, the confidence
/// request) change nothing the record keys on.
fn banner_notes(line: &str, line_no: usize) -> Result<(u32, bool), ImportError> {
    let mut first_burst = 0;
    let mut nodelay = false;
    for note in line.split(" : ").skip(1).map(str::trim) {
        if let Some(count) = note.strip_prefix("first burst") {
            first_burst = count.trim().parse().map_err(|_| {
                ImportError::parse(line_no, format!("invalid first burst \"{}\"", count.trim()))
            })?;
        } else if note == "nodelay" {
            nodelay = true;
        }
    }
    Ok((first_burst, nodelay))
}

fn parse_banner(line: &str, line_no: usize) -> Result<Banner, ImportError> {
    let line = line.trim();
    let name_end = line
        .find(" TEST")
        .ok_or_else(|| ImportError::parse(line_no, "not a netperf banner"))?;
    let name = line[..name_end].trim_start_matches("MIGRATED").trim();
    let test = match name.to_ascii_uppercase().as_str() {
        "TCP STREAM" => TestKind::TcpStream,
        "TCP MAERTS" => TestKind::TcpMaerts,
        "TCP REQUEST/RESPONSE" => TestKind::TcpRr,
        "TCP CONNECT/REQUEST/RESPONSE" => TestKind::TcpCrr,
        // netperf before 2.5 named UDP_STREAM this way.
        "UDP STREAM" | "UDP UNIDIRECTIONAL SEND" => TestKind::UdpStream,
        "UDP REQUEST/RESPONSE" => TestKind::UdpRr,
        // netbisect's own run table names the test as `-t` does.
        other => other.parse().map_err(|_| {
            ImportError::parse(line_no, format!("unsupported netperf test \"{name}\""))
        })?,
    };
    let host = line
        .find(" to ")
        .map(|at| &line[at + 4..])
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or("unknown");
    // netbisect's run table writes `ip:port` or `[ip]:port`.
    let host = match host.parse::<std::net::SocketAddr>() {
        Ok(address) => address.ip().to_string(),
        Err(_) => host.to_string(),
    };
    let family = if line.contains("AF_INET6") {
        AddressFamily::Ipv6
    } else {
        AddressFamily::Ipv4
    };
    let (first_burst, nodelay) = banner_notes(line, line_no)?;
    Ok(Banner {
        test,
        host,
        family,
        confidence: parse_confidence_request(line),
        first_burst,
        nodelay,
    })
}

/// `+/-2.500% @ 99% conf.` -> level 99, full width 5%.
fn parse_confidence_request(line: &str) -> Option<ConfidenceSpec> {
    let rest = &line[line.find("+/-")? + 3..];
    let half_width: f64 = rest[..rest.find('%')?].trim().parse().ok()?;
    let after_at = &rest[rest.find('@')? + 1..];
    let level: u32 = after_at[..after_at.find('%')?].trim().parse().ok()?;
    Some(ConfidenceSpec {
        level_pct: level,
        width_pct: 2.0 * half_width,
    })
}

/// `!!! Confidence intervals: Throughput      : 6.686%` -> 6.686.
fn parse_warning_width(line: &str) -> Option<f64> {
    let rest = &line[line.find("Throughput")? + "Throughput".len()..];
    let rest = rest.trim_start().strip_prefix(':')?;
    rest.trim().trim_end_matches('%').trim().parse().ok()
}

/// Parses every netperf output in `text`: each starts at a banner line
/// and runs to the next one. Lines before the first banner (the prose of
/// an email) are not read.
pub fn parse(text: &str, options: &ImportOptions) -> Result<(Format, Vec<RunRecord>), ImportError> {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&idx| is_banner(lines[idx]))
        .collect();
    let mut format = None;
    let mut records = Vec::new();
    for (start_idx, &start) in starts.iter().enumerate() {
        let end = starts.get(start_idx + 1).copied().unwrap_or(lines.len());
        let (section_format, section_records) = parse_section(&lines[..end], start, options)?;
        format.get_or_insert(section_format);
        records.extend(section_records);
    }
    // A cut in the middle of the last line would leave a figure shorter
    // than printed; netperf ends every line, so a last line without its
    // end is refused rather than read.
    if let Some(last) = lines.last().filter(|line| !line.trim().is_empty())
        && !text.ends_with('\n')
        && !starts.is_empty()
    {
        return Err(ImportError::parse(
            lines.len(),
            format!(
                "the input ends inside this line (cut short?): \"{}\"",
                last.trim()
            ),
        ));
    }
    match format {
        Some(format) => Ok((format, records)),
        None => Err(ImportError::Empty),
    }
}

/// Parses the netperf output whose banner is `lines[start]` and which
/// runs to the end of `lines`. Line numbers are those of the whole input.
fn parse_section(
    lines: &[&str],
    start: usize,
    options: &ImportOptions,
) -> Result<(Format, Vec<RunRecord>), ImportError> {
    let banner = parse_banner(lines[start], start + 1)?;
    let mut line_idx = start + 1;
    let mut achieved_width = None;
    while let Some(line) = lines.get(line_idx) {
        let trimmed = line.trim();
        if trimmed.starts_with("!!!") {
            if achieved_width.is_none() {
                achieved_width = parse_warning_width(trimmed);
            }
        } else if !trimmed.is_empty() {
            break;
        }
        line_idx += 1;
    }
    let Some(first_body) = lines.get(line_idx) else {
        return Err(ImportError::parse(
            lines.len().max(start + 1),
            "netperf banner without results",
        ));
    };
    let mut spec = RunSpec::defaults(banner.test);
    spec.family = banner.family;
    spec.confidence = banner.confidence.clone();
    spec.first_burst = banner.first_burst;
    spec.nodelay = banner.nodelay;
    let (format, runs) = if is_keyval_line(first_body) {
        let values = parse_keyval(lines, line_idx)?;
        let figures = omni_figures(&values, &mut spec, line_idx + 1)?;
        (
            Format::NetperfKeyval,
            vec![ClassicRun::unlabelled(line_idx + 1, spec, figures)],
        )
    } else if first_body.contains(',') {
        let values = parse_csv(lines, line_idx)?;
        let figures = omni_figures(&values, &mut spec, line_idx + 1)?;
        (
            Format::NetperfCsv,
            vec![ClassicRun::unlabelled(line_idx + 1, spec, figures)],
        )
    } else {
        (
            Format::NetperfClassic,
            classic_runs(lines, line_idx, &spec)?,
        )
    };
    let mut records = Vec::with_capacity(runs.len());
    for run in runs {
        let ClassicRun {
            label,
            line_no,
            mut spec,
            figures,
        } = run;
        if let Some(elapsed) = figures.elapsed_s {
            spec.duration_s = elapsed.round().max(1.0);
        }
        let confidence = match (&spec.confidence, achieved_width) {
            (Some(requested), Some(width_pct)) => {
                let mean = if banner.test.is_request_response() {
                    figures.transaction_rate
                } else {
                    figures.throughput_bps
                }
                .unwrap_or(0.0);
                Some(ConfidenceOutcome {
                    level_pct: requested.level_pct,
                    low: mean * (1.0 - width_pct / 200.0),
                    high: mean * (1.0 + width_pct / 200.0),
                    width_pct,
                    target_width_pct: requested.width_pct,
                    met: width_pct <= requested.width_pct,
                })
            }
            _ => None,
        };
        let run = PeerRun {
            source: Source {
                tool: String::from("netperf"),
                version: None,
                undated: false,
            },
            spec,
            endpoint: Endpoint {
                host: banner.host.clone(),
                port: None,
            },
            env: Environments::default(),
            started_at: None,
            figures,
            confidence,
        };
        let run_options = match &label {
            Some(label) => options.with_side_label(label),
            None => options.clone(),
        };
        let record = build_record(run, &run_options)
            .map_err(|err| ImportError::parse(line_no, err.to_string()))?;
        records.push(record);
    }
    Ok((format, records))
}

fn is_keyval_line(line: &str) -> bool {
    match line.trim().split_once('=') {
        Some((key, _)) => {
            !key.is_empty()
                && key
                    .chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        }
        None => false,
    }
}

/// `KEY=VALUE` lines up to the end; blank lines are skipped.
fn parse_keyval(
    lines: &[&str],
    first_idx: usize,
) -> Result<BTreeMap<String, (String, usize)>, ImportError> {
    let mut values = BTreeMap::new();
    for (line_idx, line) in lines.iter().enumerate().skip(first_idx) {
        if line.trim().is_empty() {
            continue;
        }
        if !is_keyval_line(line) {
            return Err(ImportError::parse(
                line_idx + 1,
                "expected KEY=VALUE (netperf omni -k output)",
            ));
        }
        if let Some((key, value)) = line.trim().split_once('=') {
            values.insert(key.to_string(), (value.trim().to_string(), line_idx + 1));
        }
    }
    Ok(values)
}

/// netperf's CSV header names for the omni output selectors this importer
/// reads.
const CSV_NAMES: &[(&str, &str)] = &[
    ("Throughput", "THROUGHPUT"),
    ("Throughput Units", "THROUGHPUT_UNITS"),
    ("Elapsed Time (sec)", "ELAPSED_TIME"),
    ("Local Send Size", "LOCAL_SEND_SIZE"),
    ("Remote Recv Size", "REMOTE_RECV_SIZE"),
    ("Request Size Bytes", "REQUEST_SIZE"),
    ("Response Size Bytes", "RESPONSE_SIZE"),
    ("Local CPU Util %", "LOCAL_CPU_UTIL"),
    ("Remote CPU Util %", "REMOTE_CPU_UTIL"),
    ("Local Service Demand", "LOCAL_SD"),
    ("Remote Service Demand", "REMOTE_SD"),
    ("Minimum Latency Microseconds", "MIN_LATENCY"),
    ("Maximum Latency Microseconds", "MAX_LATENCY"),
    ("Mean Latency Microseconds", "MEAN_LATENCY"),
    ("Stddev Latency Microseconds", "STDDEV_LATENCY"),
    ("50th Percentile Latency Microseconds", "P50_LATENCY"),
    ("90th Percentile Latency Microseconds", "P90_LATENCY"),
    ("99th Percentile Latency Microseconds", "P99_LATENCY"),
    ("Transaction Rate Tran/s", "TRANSACTION_RATE"),
    ("Local Send Socket Size Requested", "LSS_SIZE_REQ"),
    ("Local Recv Socket Size Requested", "LSR_SIZE_REQ"),
    ("Remote Send Socket Size Requested", "RSS_SIZE_REQ"),
    ("Remote Recv Socket Size Requested", "RSR_SIZE_REQ"),
];

/// A header line of names and one line of values; names are translated
/// to omni keys, unknown names kept as written.
fn parse_csv(
    lines: &[&str],
    header_idx: usize,
) -> Result<BTreeMap<String, (String, usize)>, ImportError> {
    let names: Vec<&str> = lines[header_idx].split(',').map(str::trim).collect();
    let Some((value_idx, value_line)) = lines
        .iter()
        .enumerate()
        .skip(header_idx + 1)
        .find(|(_, line)| !line.trim().is_empty())
    else {
        return Err(ImportError::parse(
            header_idx + 1,
            "CSV header without a line of values",
        ));
    };
    let cells: Vec<&str> = value_line.split(',').map(str::trim).collect();
    if cells.len() != names.len() {
        return Err(ImportError::parse(
            value_idx + 1,
            format!(
                "{} values for {} column names in the header",
                cells.len(),
                names.len()
            ),
        ));
    }
    if let Some((extra_idx, _)) = lines
        .iter()
        .enumerate()
        .skip(value_idx + 1)
        .find(|(_, line)| !line.trim().is_empty())
    {
        return Err(ImportError::parse(
            extra_idx + 1,
            "unexpected text after the CSV values",
        ));
    }
    let mut values = BTreeMap::new();
    for (name, cell) in names.iter().zip(cells) {
        let key = CSV_NAMES
            .iter()
            .find(|(csv_name, _)| csv_name.eq_ignore_ascii_case(name))
            .map_or_else(|| name.to_ascii_uppercase(), |(_, key)| (*key).to_string());
        values.insert(key, (cell.to_string(), value_idx + 1));
    }
    Ok(values)
}

/// Bits per second per unit of a netperf throughput header, or `None` for
/// a transaction rate.
fn throughput_unit(unit: &str, line_no: usize) -> Result<Option<f64>, ImportError> {
    let bare = unit.trim().trim_end_matches("/sec").trim_end_matches("/s");
    if bare.eq_ignore_ascii_case("trans") || bare.eq_ignore_ascii_case("tran") {
        return Ok(None);
    }
    if let Some(exponent) = bare
        .strip_prefix("10^")
        .and_then(|rest| rest.strip_suffix("bits"))
    {
        let exponent: i32 = exponent.parse().map_err(|_| {
            ImportError::parse(line_no, format!("unknown throughput unit \"{unit}\""))
        })?;
        return Ok(Some(10f64.powi(exponent)));
    }
    let factor = match bare {
        "Bytes" => 8.0,
        "KBytes" => 8.0 * 1024.0,
        "MBytes" => 8.0 * 1024.0 * 1024.0,
        "GBytes" => 8.0 * 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(ImportError::parse(
                line_no,
                format!("unknown throughput unit \"{unit}\""),
            ));
        }
    };
    Ok(Some(factor))
}

fn number(text: &str, what: &str, line_no: usize) -> Result<f64, ImportError> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|value| value.is_finite())
        .ok_or_else(|| ImportError::parse(line_no, format!("{what}: \"{text}\" is not a number")))
}

/// A socket-buffer or message size; netperf writes -1 for "default".
fn size(value: f64) -> Option<u32> {
    (value >= 0.0 && value <= f64::from(u32::MAX)).then(|| value.round() as u32)
}

fn omni_figures(
    values: &BTreeMap<String, (String, usize)>,
    spec: &mut RunSpec,
    first_line_no: usize,
) -> Result<PeerFigures, ImportError> {
    let get = |key: &str| -> Result<Option<f64>, ImportError> {
        values
            .get(key)
            .map(|(text, line_no)| number(text, key, *line_no))
            .transpose()
    };
    let mut figures = PeerFigures {
        elapsed_s: get("ELAPSED_TIME")?,
        ..PeerFigures::default()
    };
    let test = spec.test;
    if let Some(request) = get("REQUEST_SIZE")?.and_then(size) {
        spec.request_size_bytes = request;
    }
    if let Some(response) = get("RESPONSE_SIZE")?.and_then(size) {
        spec.response_size_bytes = response;
    }
    if !test.is_request_response() {
        if let Some(send) = get("LOCAL_SEND_SIZE")?.and_then(size) {
            spec.send_size_bytes = send;
        }
        if let Some(recv) = get("REMOTE_RECV_SIZE")?.and_then(size) {
            spec.recv_size_bytes = recv;
        }
    }
    let (local_key, remote_key) = if test == TestKind::TcpMaerts {
        ("LSR_SIZE_REQ", "RSS_SIZE_REQ")
    } else if test.is_request_response() {
        ("LSR_SIZE_REQ", "RSR_SIZE_REQ")
    } else {
        ("LSS_SIZE_REQ", "RSR_SIZE_REQ")
    };
    spec.local_socket_buffer_bytes = get(local_key)?.and_then(size);
    spec.remote_socket_buffer_bytes = get(remote_key)?.and_then(size);

    let unit_text = values.get("THROUGHPUT_UNITS");
    let unit = match unit_text {
        Some((text, line_no)) => throughput_unit(text, *line_no)?,
        None if test.is_request_response() => None,
        None => Some(1e6),
    };
    if let Some(throughput) = get("THROUGHPUT")? {
        match unit {
            Some(factor) => figures.throughput_bps = Some(throughput * factor),
            None => figures.transaction_rate = Some(throughput),
        }
    }
    if let Some(rate) = get("TRANSACTION_RATE")? {
        figures.transaction_rate = Some(rate);
    }
    figures.cpu.local_util_pct = get("LOCAL_CPU_UTIL")?;
    figures.cpu.remote_util_pct = get("REMOTE_CPU_UTIL")?;
    figures.cpu.local_service_demand = get("LOCAL_SD")?;
    figures.cpu.remote_service_demand = get("REMOTE_SD")?;
    figures.latency.min_us = get("MIN_LATENCY")?;
    figures.latency.mean_us = get("MEAN_LATENCY")?;
    figures.latency.stddev_us = get("STDDEV_LATENCY")?;
    figures.latency.p50_us = get("P50_LATENCY")?;
    figures.latency.p90_us = get("P90_LATENCY")?;
    figures.latency.p99_us = get("P99_LATENCY")?;
    figures.latency.max_us = get("MAX_LATENCY")?;
    let has_main_figure = if test.is_request_response() {
        figures.transaction_rate.is_some()
    } else {
        figures.throughput_bps.is_some()
    };
    if !has_main_figure {
        return Err(ImportError::parse(
            first_line_no,
            "netperf omni output without THROUGHPUT (add it to the -k/-o selectors)",
        ));
    }
    Ok(figures)
}

/// A word of a line and the columns it covers.
#[derive(Clone, Copy)]
struct Token<'a> {
    text: &'a str,
    start: usize,
    end: usize,
}

fn tokens(line: &str) -> Vec<Token<'_>> {
    let mut found = Vec::new();
    let mut start = None;
    for (idx, character) in line.char_indices() {
        match (character.is_whitespace(), start) {
            (false, None) => start = Some(idx),
            (true, Some(begin)) => {
                found.push(Token {
                    text: &line[begin..idx],
                    start: begin,
                    end: idx,
                });
                start = None;
            }
            _ => {}
        }
    }
    if let Some(begin) = start {
        found.push(Token {
            text: &line[begin..],
            start: begin,
            end: line.len(),
        });
    }
    found
}

fn overlaps(first: &Token<'_>, second: &Token<'_>) -> bool {
    first.start < second.end && second.start < first.end
}

fn distance(first: &Token<'_>, second: &Token<'_>) -> usize {
    if overlaps(first, second) {
        0
    } else if first.end <= second.start {
        second.start - first.end
    } else {
        first.start - second.end
    }
}

/// The key columns a word belongs to: those it stands over, else the
/// nearest one.
fn owners(word: &Token<'_>, columns: &[Token<'_>]) -> Vec<usize> {
    let over: Vec<usize> = (0..columns.len())
        .filter(|&idx| overlaps(word, &columns[idx]))
        .collect();
    if !over.is_empty() {
        return over;
    }
    (0..columns.len())
        .min_by_key(|&idx| distance(word, &columns[idx]))
        .into_iter()
        .collect()
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Side {
    Local,
    Remote,
    /// The side of the data line (UDP_STREAM: first line local, second
    /// remote).
    Line,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Field {
    Throughput,
    ServiceDemand(Side),
    CpuUtil(Side),
    MessageErrors,
    MessagesOkay,
    TransactionRate,
    Elapsed,
    RequestSize,
    ResponseSize,
    MessageSize,
    SendSocket,
    RecvSocket,
    Socket,
    Unknown,
}

fn side_of(words: &str) -> Side {
    if words.contains("local") {
        Side::Local
    } else if words.contains("remote") && !words.contains("/remote") {
        Side::Remote
    } else {
        Side::Line
    }
}

/// Recognises a column from its header words, lowercased and joined.
fn classify(words: &str) -> Field {
    let has = |needle: &str| words.contains(needle);
    if has("throughput") {
        Field::Throughput
    } else if has("us/") || has("demand") || has("s.dem") {
        Field::ServiceDemand(side_of(words))
    } else if has("util") || has("cpu") || has("%") {
        Field::CpuUtil(side_of(words))
    } else if has("errors") {
        Field::MessageErrors
    } else if has("okay") {
        Field::MessagesOkay
    } else if has("trans") || has("rate") {
        Field::TransactionRate
    } else if has("elapsed") || has("secs") {
        Field::Elapsed
    } else if has("request") {
        Field::RequestSize
    } else if has("resp") {
        Field::ResponseSize
    } else if has("message") {
        Field::MessageSize
    } else if has("socket") || has("size") {
        if has("recv") {
            Field::RecvSocket
        } else if has("send") {
            Field::SendSocket
        } else {
            Field::Socket
        }
    } else {
        Field::Unknown
    }
}

struct Column<'a> {
    key: Token<'a>,
    field: Field,
    /// The throughput unit word, for the throughput column.
    unit: Option<String>,
}

/// One run of a classic table: the table's only run, or the run of one
/// labelled row (and the unlabelled row under it, if any).
struct ClassicRun {
    /// The side name the row began with.
    label: Option<String>,
    /// The line of the run's first row, for errors.
    line_no: usize,
    spec: RunSpec,
    figures: PeerFigures,
}

impl ClassicRun {
    fn unlabelled(line_no: usize, spec: RunSpec, figures: PeerFigures) -> ClassicRun {
        ClassicRun {
            label: None,
            line_no,
            spec,
            figures,
        }
    }
}

/// The side name a row of an emailed table begins with (`current`,
/// `patched`, `Org:`): any word before the first number.
fn row_label(first: &str) -> Option<&str> {
    if first.parse::<f64>().is_ok() {
        None
    } else {
        Some(first.trim_end_matches(':'))
    }
}

/// One data line: its number, side name and figures by column.
struct DataRow<'a> {
    line_no: usize,
    label: Option<&'a str>,
    values: Vec<Token<'a>>,
}

/// The runs of a classic table whose header starts at `header_idx`: one,
/// or one per labelled row.
fn classic_runs(
    lines: &[&str],
    header_idx: usize,
    spec: &RunSpec,
) -> Result<Vec<ClassicRun>, ImportError> {
    let header_end = (header_idx..lines.len())
        .find(|&idx| lines[idx].trim().is_empty())
        .unwrap_or(lines.len());
    let header_rows: Vec<Vec<Token<'_>>> = lines[header_idx..header_end]
        .iter()
        .map(|line| tokens(line))
        .collect();
    if header_rows.len() < 2 {
        return Err(ImportError::parse(
            header_idx + 1,
            "expected a netperf result header (two or more lines of column names)",
        ));
    }
    // The units row is the last; the row above it with the most words
    // names one column per word.
    let (key_row_idx, key_row) = header_rows[..header_rows.len() - 1]
        .iter()
        .enumerate()
        .max_by_key(|(_, row)| row.len())
        .ok_or_else(|| ImportError::parse(header_idx + 1, "empty header"))?;
    let mut words: Vec<Vec<String>> = vec![Vec::new(); key_row.len()];
    for (row_idx, row) in header_rows.iter().enumerate() {
        for word in row {
            let column_idxs = if row_idx == key_row_idx {
                key_row
                    .iter()
                    .position(|key| key.start == word.start)
                    .into_iter()
                    .collect()
            } else {
                owners(word, key_row)
            };
            for column_idx in column_idxs {
                words[column_idx].push(word.text.to_ascii_lowercase());
            }
        }
    }
    let units_row = &header_rows[header_rows.len() - 1];
    let columns: Vec<Column<'_>> = key_row
        .iter()
        .zip(&words)
        .map(|(key, column_words)| {
            let field = classify(&column_words.join(" "));
            let unit = (field == Field::Throughput)
                .then(|| {
                    units_row
                        .iter()
                        .find(|word| owners(word, key_row).contains(&columns_index(key_row, key)))
                        .map(|word| word.text.to_string())
                })
                .flatten();
            Column {
                key: *key,
                field,
                unit,
            }
        })
        .collect();
    let units_line_no = header_end;
    let header_line_no = header_idx + 1;
    let has = |field: Field| columns.iter().any(|column| column.field == field);
    let needed: &[(Field, &str)] = match spec.test {
        TestKind::TcpStream | TestKind::TcpMaerts => &[(Field::Throughput, "throughput")],
        TestKind::UdpStream => &[
            (Field::Throughput, "throughput"),
            (Field::MessagesOkay, "messages"),
        ],
        _ => &[(Field::TransactionRate, "transaction rate")],
    };
    for (field, name) in needed {
        if !has(*field) {
            return Err(ImportError::parse(
                header_line_no,
                format!(
                    "the table's columns do not match the banner's {}: no {name} column",
                    spec.test
                ),
            ));
        }
    }

    // The results are the block of lines after the header, up to the next
    // blank line. What follows (netbisect's notes, an email's prose) is
    // not read, but a line of numbers there is refused rather than
    // silently dropped.
    let own_table = lines.iter().any(|line| is_netbisect_trailer(line));
    let block: Vec<usize> = (header_end..lines.len())
        .skip_while(|&idx| lines[idx].trim().is_empty())
        .take_while(|&idx| !lines[idx].trim().is_empty())
        .collect();
    if block.is_empty() {
        return Err(ImportError::parse(
            header_end.max(1),
            "netperf result header without a line of results",
        ));
    }
    let after_block = block.last().map_or(lines.len(), |&last| last + 1);
    if !own_table {
        for (idx, line) in lines.iter().enumerate().skip(after_block) {
            let words = tokens(line);
            if words.len() >= 2 && words[0].text.parse::<f64>().is_ok() {
                return Err(ImportError::parse(
                    idx + 1,
                    "unexpected line after the netperf results",
                ));
            }
        }
    }
    let rows: Vec<DataRow<'_>> = block
        .iter()
        .map(|&idx| {
            let words = tokens(lines[idx]);
            let label = words.first().and_then(|word| row_label(word.text));
            let values = words[usize::from(label.is_some())..].to_vec();
            DataRow {
                line_no: idx + 1,
                label,
                values,
            }
        })
        .collect();
    let labelled = rows.iter().any(|row| row.label.is_some());
    // Rows of one run: one per run of a stream test, two for UDP_STREAM
    // (sender, receiver) and the RR tests (local, remote sockets).
    let per_run = match spec.test {
        TestKind::TcpStream | TestKind::TcpMaerts => 1,
        _ => 2,
    };
    let mut groups: Vec<Vec<&DataRow<'_>>> = Vec::new();
    for row in &rows {
        if let Some(label) = row.label {
            if row.values.is_empty() {
                return Err(ImportError::parse(
                    row.line_no,
                    format!("\"{label}\" has no figures after it"),
                ));
            }
            groups.push(vec![row]);
        } else if labelled {
            match groups.last_mut() {
                Some(group) if group.len() < per_run => group.push(row),
                Some(_) => {
                    return Err(ImportError::parse(
                        row.line_no,
                        "a line without a side name among labelled results",
                    ));
                }
                None => {
                    return Err(ImportError::parse(
                        row.line_no,
                        "a line without a side name before the labelled results",
                    ));
                }
            }
        } else if let Some(group) = groups.last_mut() {
            if group.len() == per_run {
                return Err(ImportError::parse(
                    row.line_no,
                    "unexpected line after the netperf results",
                ));
            }
            group.push(row);
        } else {
            groups.push(vec![row]);
        }
    }
    let mut runs = Vec::with_capacity(groups.len());
    for group in &groups {
        let first = group[0];
        // A labelled RR row may stand alone (its second line holds only
        // the remote socket sizes); every other run needs all its lines.
        let optional_second = labelled && spec.test.is_request_response();
        if group.len() < per_run && !optional_second {
            return Err(ImportError::parse(
                first.line_no,
                format!(
                    "{} results take {per_run} lines; the line after this one is missing",
                    spec.test
                ),
            ));
        }
        // The first line has a figure for every column: one missing (a
        // line cut short, a column dropped) is refused, never read as
        // another column's.
        if first.values.len() != columns.len() {
            return Err(ImportError::parse(
                first.line_no,
                format!(
                    "{} figures for the {} columns of the header (line {header_line_no})",
                    first.values.len(),
                    columns.len()
                ),
            ));
        }
        let mut field_rows: Vec<Vec<(Field, f64)>> = Vec::new();
        for (row_idx, row) in group.iter().enumerate() {
            let mut values = Vec::with_capacity(row.values.len());
            for (value_idx, value) in row.values.iter().enumerate() {
                let column_idx = if row_idx == 0 {
                    value_idx
                } else {
                    *owners(value, key_row).first().ok_or_else(|| {
                        ImportError::parse(row.line_no, "value outside the table's columns")
                    })?
                };
                let column = &columns[column_idx];
                let number = number(
                    value.text,
                    &column.key.text.to_ascii_lowercase(),
                    row.line_no,
                )?;
                values.push((column.field, number));
            }
            field_rows.push(values);
        }
        let mut run_spec = spec.clone();
        let figures = classic_run_figures(
            &field_rows,
            &columns,
            units_line_no,
            first.line_no,
            group.get(1).map(|row| row.line_no),
            &mut run_spec,
        )?;
        runs.push(ClassicRun {
            label: first.label.map(str::to_string),
            line_no: first.line_no,
            spec: run_spec,
            figures,
        });
    }
    Ok(runs)
}

/// The figures of one run from its lines' (field, value) pairs.
fn classic_run_figures(
    rows: &[Vec<(Field, f64)>],
    columns: &[Column<'_>],
    units_line_no: usize,
    first_line_no: usize,
    second_line_no: Option<usize>,
    spec: &mut RunSpec,
) -> Result<PeerFigures, ImportError> {
    let find = |row: &[(Field, f64)], wanted: Field| {
        row.iter()
            .find(|(field, _)| *field == wanted)
            .map(|(_, value)| *value)
    };
    let local = &rows[0];
    let remote = rows.get(1).map_or(&[][..], Vec::as_slice);

    let mut figures = PeerFigures {
        elapsed_s: find(local, Field::Elapsed),
        ..PeerFigures::default()
    };
    figures.cpu.local_util_pct = find(local, Field::CpuUtil(Side::Local))
        .or_else(|| find(local, Field::CpuUtil(Side::Line)));
    figures.cpu.remote_util_pct = find(local, Field::CpuUtil(Side::Remote))
        .or_else(|| find(remote, Field::CpuUtil(Side::Line)));
    figures.cpu.local_service_demand = find(local, Field::ServiceDemand(Side::Local))
        .or_else(|| find(local, Field::ServiceDemand(Side::Line)));
    figures.cpu.remote_service_demand = find(local, Field::ServiceDemand(Side::Remote))
        .or_else(|| find(remote, Field::ServiceDemand(Side::Line)));

    let throughput_factor = match columns.iter().find(|c| c.field == Field::Throughput) {
        Some(column) => {
            let unit = column.unit.as_deref().unwrap_or("10^6bits/s");
            throughput_unit(unit, units_line_no)?.unwrap_or(1e6)
        }
        None => 1e6,
    };
    match spec.test {
        TestKind::TcpStream | TestKind::TcpMaerts => {
            let throughput = find(local, Field::Throughput).ok_or_else(|| {
                ImportError::parse(first_line_no, "no throughput in the netperf results")
            })?;
            figures.throughput_bps = Some(throughput * throughput_factor);
            if let Some(message) = find(local, Field::MessageSize).and_then(size) {
                spec.send_size_bytes = message;
            }
            let recv_socket = find(local, Field::RecvSocket).and_then(size);
            let send_socket = find(local, Field::SendSocket).and_then(size);
            // The receiver is remote for TCP_STREAM, local for TCP_MAERTS.
            if spec.test == TestKind::TcpStream {
                spec.local_socket_buffer_bytes = send_socket;
                spec.remote_socket_buffer_bytes = recv_socket;
            } else {
                spec.local_socket_buffer_bytes = recv_socket;
                spec.remote_socket_buffer_bytes = send_socket;
            }
        }
        TestKind::UdpStream => {
            // The sender's rate is what it sent; the record keeps the
            // receiver's.
            let received = find(remote, Field::Throughput).ok_or_else(|| {
                ImportError::parse(
                    second_line_no.unwrap_or(first_line_no),
                    "no throughput on the receiving side's line",
                )
            })?;
            figures.throughput_bps = Some(received * throughput_factor);
            if let Some(message) = find(local, Field::MessageSize).and_then(size) {
                spec.send_size_bytes = message;
            }
            figures.messages_sent =
                find(local, Field::MessagesOkay).and_then(|v| size(v).map(u64::from));
            figures.messages_received =
                find(remote, Field::MessagesOkay).and_then(|v| size(v).map(u64::from));
            figures.send_errors =
                find(local, Field::MessageErrors).and_then(|v| size(v).map(u64::from));
            spec.local_socket_buffer_bytes = find(local, Field::Socket).and_then(size);
            spec.remote_socket_buffer_bytes = find(remote, Field::Socket).and_then(size);
        }
        TestKind::TcpRr | TestKind::TcpCrr | TestKind::UdpRr => {
            figures.transaction_rate =
                Some(find(local, Field::TransactionRate).ok_or_else(|| {
                    ImportError::parse(first_line_no, "no transaction rate in the netperf results")
                })?);
            if let Some(request) = find(local, Field::RequestSize).and_then(size) {
                spec.request_size_bytes = request;
            }
            if let Some(response) = find(local, Field::ResponseSize).and_then(size) {
                spec.response_size_bytes = response;
            }
            spec.local_socket_buffer_bytes = find(local, Field::RecvSocket).and_then(size);
            spec.remote_socket_buffer_bytes = find(remote, Field::RecvSocket).and_then(size);
        }
    }
    Ok(figures)
}

fn columns_index(key_row: &[Token<'_>], key: &Token<'_>) -> usize {
    key_row
        .iter()
        .position(|candidate| candidate.start == key.start)
        .unwrap_or(0)
}
