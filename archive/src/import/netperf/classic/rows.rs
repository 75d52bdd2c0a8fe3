//! The result lines of a classic table and the runs they make up.
//!
//! The results are the block of lines under the header. Each line is read
//! on its own (`data_row`), then the lines are gathered into runs
//! (`group_rows`): a line that begins with a side name starts a run of
//! its own, and the lines a test prints per run follow it. Rules on which
//! lines make up one result belong in `read_results` and the steps it
//! calls.

use super::header::{Token, tokens};
use crate::import::ImportError;

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
pub(super) struct DataRow<'a> {
    pub(super) line_no: usize,
    pub(super) label: Option<&'a str>,
    pub(super) values: Vec<Token<'a>>,
}

/// The result lines of a table, gathered into runs.
pub(super) struct Results<'a> {
    /// The lines of each run, in input order.
    pub(super) runs: Vec<Vec<DataRow<'a>>>,
    /// Whether any line begins with a side name, which makes every such
    /// line a run of its own.
    pub(super) labelled: bool,
}

/// The indices of the result lines under a header that ends at
/// `header_end`.
fn results_block(lines: &[&str], header_end: usize) -> Result<Vec<usize>, ImportError> {
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
    Ok(block)
}

/// Reads the result lines under a header that ends at `header_end` and
/// gathers them into runs of up to `per_run` lines each; a run's second
/// line has `second_count` figures. The input may hold `room` more runs:
/// the line that starts one more is refused, and no line after it is
/// read.
pub(super) fn read_results<'a>(
    lines: &[&'a str],
    header_end: usize,
    per_run: usize,
    second_count: Option<usize>,
    room: usize,
) -> Result<Results<'a>, ImportError> {
    let block = results_block(lines, header_end)?;
    let labelled = block.iter().any(|&idx| {
        lines[idx]
            .split_whitespace()
            .next()
            .and_then(row_label)
            .is_some()
    });
    let rows = block.iter().map(|&idx| data_row(lines, idx));
    let runs = group_rows(rows, labelled, per_run, second_count, room)?;
    Ok(Results { runs, labelled })
}

/// Reads the result line `lines[idx]`: its side name, if any, and its
/// figures.
fn data_row<'a>(lines: &[&'a str], idx: usize) -> DataRow<'a> {
    let words = tokens(lines[idx]);
    let label = words.first().and_then(|word| row_label(word.text));
    let values = words[usize::from(label.is_some())..].to_vec();
    DataRow {
        line_no: idx + 1,
        label,
        values,
    }
}

/// Gathers the result lines into runs of up to `per_run` lines each: a
/// line with a side name starts a run, unless it has the figures of a
/// second line and the run above it, of the same side name, lacks its
/// second line (side names written on every line, as mails paste
/// UDP_STREAM rows); a line without one continues the run above it (or,
/// in a table without side names, starts the first). A line that would
/// start run `room + 1` is refused at once.
fn group_rows<'a>(
    rows: impl Iterator<Item = DataRow<'a>>,
    labelled: bool,
    per_run: usize,
    second_count: Option<usize>,
    room: usize,
) -> Result<Vec<Vec<DataRow<'a>>>, ImportError> {
    let mut groups: Vec<Vec<DataRow<'a>>> = Vec::new();
    let push = |groups: &mut Vec<Vec<DataRow<'a>>>, row: DataRow<'a>| {
        if groups.len() == room {
            return Err(super::super::runs_past_limit(row.line_no));
        }
        groups.push(vec![row]);
        Ok(())
    };
    for row in rows {
        if let Some(label) = row.label {
            if row.values.is_empty() {
                return Err(ImportError::parse(
                    row.line_no,
                    format!("\"{label}\" has no figures after it"),
                ));
            }
            let second_of_above = groups.last().is_some_and(|group| {
                group.len() < per_run
                    && group[0].label == Some(label)
                    && second_count == Some(row.values.len())
            });
            match groups.last_mut() {
                Some(group) if second_of_above => group.push(row),
                _ => push(&mut groups, row)?,
            }
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
            push(&mut groups, row)?;
        }
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::MAX_RUNS_PER_INPUT;

    #[test]
    fn the_row_that_starts_a_run_past_the_room_left_is_refused() {
        let lines = [
            "header",
            "current 1 2",
            "patched 1 2",
            "current 1 2",
            "",
            "prose after the table",
        ];
        let results = read_results(&lines, 1, 1, None, 3).unwrap();
        assert_eq!(results.runs.len(), 3);
        assert!(results.labelled);
        match read_results(&lines, 1, 1, None, 2) {
            Err(ImportError::TooManyRuns { count, line }) => {
                assert_eq!((count, line), (MAX_RUNS_PER_INPUT + 1, Some(4)));
            }
            other => panic!("{:?}", other.map(|results| results.runs.len())),
        }
        // The lines of one run count once.
        let lines = ["header", "1 2", "3 4"];
        let results = read_results(&lines, 1, 2, Some(2), 1).unwrap();
        assert_eq!(results.runs.len(), 1);
        assert_eq!(results.runs[0].len(), 2);
    }
}
