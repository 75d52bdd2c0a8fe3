//! The header of a classic table: its rows of words and the columns they
//! name.
//!
//! The header runs from its first line to the next blank line, its last
//! row giving the units. Words are kept with the columns of the line they
//! cover, as a table's columns are told apart by where they stand.

use crate::import::ImportError;
use run_record::spec::{RunSpec, TestKind};

/// A word of a line and the columns it covers.
#[derive(Clone, Copy)]
pub(super) struct Token<'a> {
    pub(super) text: &'a str,
    start: usize,
    end: usize,
}

/// The words of `line`, each with the columns it covers.
pub(super) fn tokens(line: &str) -> Vec<Token<'_>> {
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
pub(super) fn owners(word: &Token<'_>, columns: &[Token<'_>]) -> Vec<usize> {
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
pub(super) enum Side {
    Local,
    Remote,
    /// The side of the data line (UDP_STREAM: first line local, second
    /// remote).
    Line,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Field {
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

/// A column of the table: its key word, what it holds and, for the
/// throughput column, its unit.
pub(super) struct Column<'a> {
    pub(super) key: Token<'a>,
    pub(super) field: Field,
    /// The throughput unit word, for the throughput column.
    pub(super) unit: Option<String>,
}

/// The column layout a table's header gives.
pub(super) struct Header<'a> {
    /// The header row that names one column per word.
    pub(super) key_row: Vec<Token<'a>>,
    /// The columns, in the order of `key_row`.
    pub(super) columns: Vec<Column<'a>>,
    /// The line of the header's first row, for errors.
    pub(super) line_no: usize,
    /// The index of the line after the header: a blank line, or the end.
    pub(super) end: usize,
}

impl Header<'_> {
    /// The line number of the units row, the header's last.
    pub(super) fn units_line_no(&self) -> usize {
        self.end
    }
}

/// Finds the header that starts at `header_idx`: its rows of words up to
/// the next blank line, and the index of that line.
fn header_block<'a>(
    lines: &[&'a str],
    header_idx: usize,
) -> Result<(Vec<Vec<Token<'a>>>, usize), ImportError> {
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
    Ok((header_rows, header_end))
}

/// Reads the column layout of the header that starts at `header_idx`.
pub(super) fn read_header<'a>(
    lines: &[&'a str],
    header_idx: usize,
) -> Result<Header<'a>, ImportError> {
    let (header_rows, header_end) = header_block(lines, header_idx)?;
    // The units row is the last; the row above it with the most words
    // names one column per word.
    let (key_row_idx, key_row) = header_rows[..header_rows.len() - 1]
        .iter()
        .enumerate()
        .max_by_key(|(_, row)| row.len())
        .ok_or_else(|| ImportError::parse(header_idx + 1, "empty header"))?;
    let words = column_words(&header_rows, key_row_idx);
    let columns = read_columns(key_row, &words, &header_rows[header_rows.len() - 1]);
    Ok(Header {
        key_row: key_row.clone(),
        columns,
        line_no: header_idx + 1,
        end: header_end,
    })
}

/// Recognises each column of `key_row` from its header words, and the
/// throughput column's unit from the units row.
fn read_columns<'a>(
    key_row: &[Token<'a>],
    words: &[Vec<String>],
    units_row: &[Token<'_>],
) -> Vec<Column<'a>> {
    key_row
        .iter()
        .zip(words)
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
        .collect()
}

/// The lowercased header words of each column of the key row
/// `key_row_idx`: its own word, and every other row's words over it.
fn column_words(header_rows: &[Vec<Token<'_>>], key_row_idx: usize) -> Vec<Vec<String>> {
    let key_row = &header_rows[key_row_idx];
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
    words
}

/// Refuses a header that lacks a column the banner's test needs.
pub(super) fn check_columns(header: &Header<'_>, spec: &RunSpec) -> Result<(), ImportError> {
    let has = |field: Field| header.columns.iter().any(|column| column.field == field);
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
                header.line_no,
                format!(
                    "the table's columns do not match the banner's {}: no {name} column",
                    spec.test
                ),
            ));
        }
    }
    Ok(())
}

/// The index of the key word `key` in `key_row`.
fn columns_index(key_row: &[Token<'_>], key: &Token<'_>) -> usize {
    key_row
        .iter()
        .position(|candidate| candidate.start == key.start)
        .unwrap_or(0)
}
