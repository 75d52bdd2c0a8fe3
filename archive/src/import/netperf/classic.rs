//! netperf's classic tables: one run per table, or one per labelled row
//! of an emailed table.
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

use super::values::{number, size, throughput_unit};
use crate::import::{ImportError, PeerFigures};
use run_record::spec::{RunSpec, TestKind};

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
pub(super) struct ClassicRun {
    /// The side name the row began with.
    pub(super) label: Option<String>,
    /// The line of the run's first row, for errors.
    pub(super) line_no: usize,
    pub(super) spec: RunSpec,
    pub(super) figures: PeerFigures,
}

impl ClassicRun {
    pub(super) fn unlabelled(line_no: usize, spec: RunSpec, figures: PeerFigures) -> ClassicRun {
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
pub(super) fn classic_runs(
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
