//! One netperf output as a mail client may have re-wrapped it, joined
//! back where netperf's layout leaves one reading.
//!
//! A mail client breaks lines wider than 72 to 80 columns at a space
//! ([`crate::import::wrap`]): netperf's banner always, a header row or a
//! result line with CPU columns or a side name in front often. Each part
//! of an output is joined by what netperf prints there:
//!
//! - the banner: a line after it that begins none of what follows a
//!   banner (a `!!!` warning, a header row, omni's `KEY=VALUE` or CSV) is
//!   the banner's rest;
//! - the header: netperf prints 4 rows (3 for UDP_STREAM), each beginning
//!   with a known word (`Recv`/`Socket`/`Size`/`bytes`, ...); extra lines
//!   are joined to the row above them where exactly one choice of joins
//!   gives that layout;
//! - the results: a run's first line has a figure for every column, its
//!   second line (UDP_STREAM, request/response) the figures netperf
//!   prints there; lines are joined where exactly one choice of joins
//!   gives whole lines.
//!
//! Two readings are an error naming the first line they disagree on; no
//! reading leaves the lines as they are, for the table's reader to refuse
//! with its own message. Only lines a client could have broken are
//! joined (the first part fits 80 columns, the next word would not have
//! fitted at 72), and a result block is read for breaks up to
//! [`MAX_WRAPPED_RESULT_LINES`] lines, so the search stays small.

use super::banner::{is_banner, parse_banner};
use super::classic::result_shape;
use super::omni::is_keyval_line;
use crate::import::ImportError;
use crate::import::wrap::{could_be_broken, join};
use run_record::spec::TestKind;
use std::collections::HashMap;

/// Most result lines of one table searched for joins.
pub(super) const MAX_WRAPPED_RESULT_LINES: usize = 256;

/// The lines of one output after joining, each with the input line it
/// starts on.
#[derive(Default)]
pub(super) struct Section {
    /// The lines, joined where they were broken.
    pub(super) lines: Vec<String>,
    /// The input line (from 1) each of `lines` starts on.
    numbers: Vec<usize>,
}

impl Section {
    fn push(&mut self, line: String, number: usize) {
        self.lines.push(line);
        self.numbers.push(number);
    }

    /// Line `line` of `lines` (from 1) counted in the input.
    pub(super) fn input_line(&self, line: usize) -> usize {
        self.numbers
            .get(line.saturating_sub(1))
            .or(self.numbers.last())
            .copied()
            .unwrap_or(line)
    }

    /// `err` with its line counted in the input rather than in `lines`.
    pub(super) fn renumber(&self, err: ImportError) -> ImportError {
        let input_line = |line: usize| self.input_line(line);
        match err {
            ImportError::Parse { line, message } => ImportError::Parse {
                line: input_line(line),
                message: renumber_message(&message, input_line),
            },
            ImportError::Unrecognised { line, text } => ImportError::Unrecognised {
                line: input_line(line),
                text,
            },
            ImportError::TooManyRuns {
                count,
                line: Some(line),
            } => ImportError::TooManyRuns {
                count,
                line: Some(input_line(line)),
            },
            other => other,
        }
    }
}

/// `message` with the line it names in parentheses (`(line 6)`, as a
/// result line names its header) counted in the input.
fn renumber_message(message: &str, input_line: impl Fn(usize) -> usize) -> String {
    let Some(at) = message.rfind("(line ") else {
        return message.to_string();
    };
    let rest = &message[at + "(line ".len()..];
    let Some(close) = rest.find(')') else {
        return message.to_string();
    };
    match rest[..close].parse::<usize>() {
        Ok(line) => format!(
            "{}(line {}){}",
            &message[..at],
            input_line(line),
            &rest[close + 1..]
        ),
        Err(_) => message.to_string(),
    }
}

/// The first words of netperf's header rows for `test`, row by row.
fn header_rows(test: TestKind) -> &'static [&'static [&'static str]] {
    match test {
        TestKind::TcpStream | TestKind::TcpMaerts => {
            &[&["Recv"], &["Socket"], &["Size"], &["bytes"]]
        }
        TestKind::UdpStream => &[&["Socket"], &["Size"], &["bytes"]],
        TestKind::TcpRr | TestKind::TcpCrr | TestKind::UdpRr => {
            &[&["Local"], &["Socket"], &["Send"], &["bytes"]]
        }
    }
}

/// True when `line` begins what netperf prints after its banner.
fn begins_output_body(line: &str) -> bool {
    let trimmed = line.trim();
    let first = trimmed.split_whitespace().next().unwrap_or("");
    trimmed.starts_with("!!!")
        || is_keyval_line(line)
        || trimmed.contains(',')
        || matches!(
            first,
            "Recv" | "Socket" | "Local" | "Size" | "Send" | "bytes"
        )
}

fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// The output whose banner is `lines[0]`, input line `first_no`, with the
/// lines a mail client broke joined back.
pub(super) fn unwrap_section(lines: &[&str], first_no: usize) -> Result<Section, ImportError> {
    let mut section = Section::default();
    let mut banner = lines[0].to_string();
    let mut idx = 1;
    while let Some(next) = lines.get(idx) {
        if is_blank(next)
            || begins_output_body(next)
            || is_banner(next)
            || !could_be_broken(lines[idx - 1], next)
        {
            break;
        }
        banner = join(&banner, next);
        idx += 1;
    }
    let test = parse_banner(&banner, first_no)
        .ok()
        .map(|banner| banner.test);
    section.push(banner, first_no);
    let copy = |section: &mut Section, from: usize, to: usize| {
        for (offset, line) in lines[from..to].iter().enumerate() {
            section.push((*line).to_string(), first_no + from + offset);
        }
    };
    let warnings_end = (idx..lines.len())
        .find(|&at| !is_blank(lines[at]) && !lines[at].trim().starts_with("!!!"))
        .unwrap_or(lines.len());
    copy(&mut section, idx, warnings_end);
    idx = warnings_end;
    let Some(test) = test.filter(|_| {
        lines
            .get(idx)
            .is_some_and(|line| !is_keyval_line(line) && !line.contains(','))
    }) else {
        copy(&mut section, idx, lines.len());
        return Ok(section);
    };
    let header_end = (idx..lines.len())
        .find(|&at| is_blank(lines[at]))
        .unwrap_or(lines.len());
    let header = join_header(&lines[idx..header_end], header_rows(test), first_no + idx)?;
    let header_lines: Vec<&str> = header.iter().map(|(line, _)| line.as_str()).collect();
    let shape = result_shape(&header_lines, 0, test);
    for (line, number) in header {
        section.push(line, number);
    }
    let results_start = (header_end..lines.len())
        .find(|&at| !is_blank(lines[at]))
        .unwrap_or(lines.len());
    copy(&mut section, header_end, results_start);
    let results_end = (results_start..lines.len())
        .find(|&at| is_blank(lines[at]))
        .unwrap_or(lines.len());
    let block = &lines[results_start..results_end];
    match shape {
        Some((columns, second)) if block.len() <= MAX_WRAPPED_RESULT_LINES => {
            let layout = Layout {
                columns,
                second,
                test,
                labelled: block.iter().any(|line| label_of(line).is_some()),
            };
            for (line, number) in join_results(block, &layout, first_no + results_start)? {
                section.push(line, number);
            }
        }
        _ => copy(&mut section, results_start, results_end),
    }
    copy(&mut section, results_end, lines.len());
    Ok(section)
}

/// Where each logical line starts: `starts[k]` is the index of the
/// physical line logical line `k` begins on.
type Reading = Vec<usize>;

/// The physical lines `lines` joined as `reading` says, each with its
/// input line (`lines[0]` is input line `first_no`).
fn apply(lines: &[&str], reading: &[usize], first_no: usize) -> Vec<(String, usize)> {
    let mut joined = Vec::with_capacity(reading.len());
    for (k, &start) in reading.iter().enumerate() {
        let end = reading.get(k + 1).copied().unwrap_or(lines.len());
        let mut line = lines[start].to_string();
        for rest in &lines[start + 1..end] {
            line = join(&line, rest);
        }
        joined.push((line, first_no + start));
    }
    joined
}

/// The first line two readings disagree on: a line that begins a
/// logical line in one and continues one in the other.
fn first_difference(first: &[usize], second: &[usize]) -> usize {
    let shared = first.len().min(second.len());
    first
        .iter()
        .zip(second)
        .find(|(a, b)| a != b)
        .map(|(a, b)| *a.min(b))
        .or_else(|| first.get(shared).or(second.get(shared)).copied())
        .unwrap_or(0)
}

fn ambiguous(line: usize, part: &str) -> ImportError {
    ImportError::parse(
        line,
        format!(
            "this {part} line could be joined two ways to the lines a mail client \
             broke; join them by hand"
        ),
    )
}

/// The header block `lines` (input line `first_no` on) with its broken
/// rows joined back to the rows of `rows`.
fn join_header(
    lines: &[&str],
    rows: &[&[&str]],
    first_no: usize,
) -> Result<Vec<(String, usize)>, ImportError> {
    let unbroken: Reading = (0..lines.len()).collect();
    let breaks = (1..lines.len()).any(|at| could_be_broken(lines[at - 1], lines[at]));
    if lines.len() <= rows.len() || !breaks {
        return Ok(apply(lines, &unbroken, first_no));
    }
    let mut found: Vec<Reading> = Vec::new();
    header_readings(lines, rows, 0, &mut Vec::new(), &mut found);
    match found.as_slice() {
        [one] => Ok(apply(lines, one, first_no)),
        [first, second, ..] => Err(ambiguous(
            first_no + first_difference(first, second),
            "header",
        )),
        [] => Err(ImportError::parse(
            first_no,
            format!(
                "a netperf header of {} lines where netperf prints {}, and no joining \
                 of lines a mail client broke gives its rows",
                lines.len(),
                rows.len()
            ),
        )),
    }
}

/// Every way (up to two) of reading `lines[at..]` as the header rows
/// `rows[starts.len()..]`, appended to `found`.
fn header_readings(
    lines: &[&str],
    rows: &[&[&str]],
    at: usize,
    starts: &mut Vec<usize>,
    found: &mut Vec<Reading>,
) {
    if found.len() >= 2 {
        return;
    }
    let row = starts.len();
    if row == rows.len() || at == lines.len() {
        if row == rows.len() && at == lines.len() {
            found.push(starts.clone());
        }
        return;
    }
    let first_word = lines[at].split_whitespace().next().unwrap_or("");
    if !rows[row].contains(&first_word) {
        return;
    }
    starts.push(at);
    let mut end = at + 1;
    loop {
        header_readings(lines, rows, end, starts, found);
        if end == lines.len() || !could_be_broken(lines[end - 1], lines[end]) {
            break;
        }
        end += 1;
    }
    starts.pop();
}

/// What the result lines of a table hold.
struct Layout {
    /// Figures of a run's first line.
    columns: usize,
    /// Figures of its second line, for tests that print one.
    second: Option<usize>,
    test: TestKind,
    /// Whether any line begins with a side name.
    labelled: bool,
}

/// The side name a line begins with, if any.
fn label_of(line: &str) -> Option<&str> {
    let first = line.split_whitespace().next()?;
    first
        .parse::<f64>()
        .is_err()
        .then(|| first.trim_end_matches(':'))
}

/// Where a run stands before a line: at its start, after a first line
/// whose second line must come, or after one whose second line may.
#[derive(Clone, Copy, Hash, PartialEq, Eq)]
enum Phase {
    Start,
    /// After a first line; the index of its physical line.
    NeedsSecond(usize),
    MaySecond(usize),
}

/// Readings of `block[at..]` from `phase`: how many (0, 1 or 2 for "more
/// than one"), and the end of the first logical line of the first.
#[derive(Clone, Copy)]
struct Count {
    readings: u8,
    first_end: usize,
}

struct ResultSearch<'a> {
    block: &'a [&'a str],
    layout: &'a Layout,
    memo: HashMap<(usize, Phase), Count>,
}

impl ResultSearch<'_> {
    /// The ends of the logical lines that can start at `at`: the line
    /// alone, and with each next line a client could have broken off it.
    fn spans(&self, at: usize) -> Vec<usize> {
        let mut ends = vec![at + 1];
        let mut end = at + 1;
        let mut figures = figures_of(self.block[at]);
        let whole = self.layout.columns + usize::from(label_of(self.block[at]).is_some());
        while end < self.block.len()
            && figures < whole
            && label_of(self.block[end]).is_none()
            && could_be_broken(self.block[end - 1], self.block[end])
        {
            figures += figures_of(self.block[end]);
            end += 1;
            ends.push(end);
        }
        ends
    }

    /// The side name and figures of the logical line `block[at..end]`.
    fn line(&self, at: usize, end: usize) -> (Option<&str>, usize) {
        let label = label_of(self.block[at]);
        let figures: usize = self.block[at..end]
            .iter()
            .map(|line| figures_of(line))
            .sum();
        (label, figures - usize::from(label.is_some()))
    }

    /// The phase after the logical line `block[at..end]` read from
    /// `phase`, or `None` when it cannot stand there.
    fn step(&self, phase: Phase, at: usize, end: usize) -> Vec<Phase> {
        let (label, figures) = self.line(at, end);
        let layout = self.layout;
        let mut next = Vec::new();
        let first_line = |next: &mut Vec<Phase>| {
            if figures != layout.columns || (layout.labelled && label.is_none()) {
                return;
            }
            next.push(match layout.test {
                TestKind::TcpStream | TestKind::TcpMaerts => Phase::Start,
                TestKind::UdpStream => Phase::NeedsSecond(at),
                _ if label.is_some() => Phase::MaySecond(at),
                _ => Phase::NeedsSecond(at),
            });
        };
        match phase {
            Phase::Start => first_line(&mut next),
            Phase::NeedsSecond(first) | Phase::MaySecond(first) => {
                let same_side = label.is_none() || label == label_of(self.block[first]);
                if Some(figures) == layout.second && same_side {
                    next.push(Phase::Start);
                }
                if matches!(phase, Phase::MaySecond(_)) {
                    first_line(&mut next);
                }
            }
        }
        next
    }

    fn count(&mut self, at: usize, phase: Phase) -> Count {
        if at == self.block.len() {
            let whole = !matches!(phase, Phase::NeedsSecond(_));
            return Count {
                readings: u8::from(whole),
                first_end: at,
            };
        }
        if let Some(count) = self.memo.get(&(at, phase)) {
            return *count;
        }
        let mut total = Count {
            readings: 0,
            first_end: at + 1,
        };
        for end in self.spans(at) {
            for next in self.step(phase, at, end) {
                let readings = self.count(end, next).readings;
                if readings > 0 && total.readings == 0 {
                    total.first_end = end;
                }
                total.readings = total.readings.saturating_add(readings).min(2);
            }
        }
        self.memo.insert((at, phase), total);
        total
    }

    /// The first reading, and the first line where a second one departs
    /// from it, if there is a second.
    fn first_reading(&mut self) -> (Reading, Option<usize>) {
        let mut reading = Vec::new();
        let mut departs = None;
        let (mut at, mut phase) = (0, Phase::Start);
        while at < self.block.len() {
            reading.push(at);
            let mut chosen = None;
            for end in self.spans(at) {
                for next in self.step(phase, at, end) {
                    let readings = self.count(end, next).readings;
                    if readings == 0 {
                        continue;
                    }
                    match chosen {
                        None => chosen = Some((end, next)),
                        // Two ways on from here: they part at the first
                        // line one joins and the other does not, or here.
                        Some((first_end, _)) if departs.is_none() => {
                            departs = Some(if first_end == end {
                                at
                            } else {
                                first_end.min(end)
                            });
                        }
                        Some(_) => {}
                    }
                }
            }
            let Some((end, next)) = chosen else {
                break;
            };
            at = end;
            phase = next;
        }
        (reading, departs)
    }
}

/// The count of words of `line`: figures, and a side name if it has one.
fn figures_of(line: &str) -> usize {
    line.split_whitespace().count()
}

/// The result block `block` (input line `first_no` on) with the lines a
/// client broke joined back.
fn join_results(
    block: &[&str],
    layout: &Layout,
    first_no: usize,
) -> Result<Vec<(String, usize)>, ImportError> {
    let unbroken: Reading = (0..block.len()).collect();
    let breaks = (1..block.len()).any(|at| could_be_broken(block[at - 1], block[at]));
    if !breaks {
        return Ok(apply(block, &unbroken, first_no));
    }
    let mut search = ResultSearch {
        block,
        layout,
        memo: HashMap::new(),
    };
    let count = search.count(0, Phase::Start);
    match count.readings {
        0 => Ok(apply(block, &unbroken, first_no)),
        1 => Ok(apply(block, &search.first_reading().0, first_no)),
        _ => {
            let departs = search.first_reading().1.unwrap_or(0);
            Err(ambiguous(first_no + departs.min(block.len() - 1), "result"))
        }
    }
}
