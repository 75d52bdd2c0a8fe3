//! The tables of `compare` laid out: a size sweep in one table
//! (netperf's layout), every configuration of a test in one table
//! (`--layout matrix`), and what the legend after them needs to know of
//! the rows they showed.

use super::cells::{change, cpu_figures, figure, whole};
use super::layout::{Family, Matrix, MatrixRow, Swept};
use crate::render::table::{TableRow, lay_out};
use crate::views::units::Units;
use archive::compare::{ChangeKind, ComparisonGroup, ComparisonRow, Verdict};
use serde::Serialize;

/// The heads of the CPU line: utilisation and service demand, each
/// local and remote, of both sides.
const CPU_HEADS: [&str; 8] = [
    "CPU %", "CPU %", "S.dem", "S.dem", "CPU %", "CPU %", "S.dem", "S.dem",
];
/// The line under [`CPU_HEADS`].
const LOCAL_REMOTE: [&str; 8] = [
    "local", "remote", "local", "remote", "local", "remote", "local", "remote",
];

/// What every table of one comparison is laid out with.
pub(super) struct Frame<'a> {
    /// Throughput's unit.
    pub(super) units: Units,
    /// The sides as column heads name them: two names.
    pub(super) heads: &'a [String],
    /// The sides' names in full.
    pub(super) names: [&'a str; 2],
    /// At most 72 columns, for a mail.
    pub(super) email: bool,
}

impl Frame<'_> {
    /// The widest line a table may have.
    pub(super) fn limit(&self) -> usize {
        if self.email { 72 } else { 80 }
    }

    /// `rows` laid out with the width `sets` of their table.
    pub(super) fn lay_out(&self, rows: &[TableRow], sets: &[Vec<i64>]) -> Vec<String> {
        lay_out(rows, sets, self.limit()).expect("every row names a set of widths of its table")
    }
}

/// Which marks the rows shown carry, for the legend after the tables.
#[derive(Debug, Default, Serialize)]
pub struct Marks {
    /// Some row is a significant improvement (`+`).
    pub improvement: bool,
    /// Some row is a significant regression (`!`).
    pub regression: bool,
    /// Some row shows no significant difference (`~`).
    pub same: bool,
    /// Some row has too few samples for a verdict (`?`).
    pub need_samples: bool,
    /// Some side of a row shown missed the interval `-I` asked (`!!!`).
    pub confidence_missed: bool,
}

impl Marks {
    /// Notes the mark of `row`.
    pub(super) fn see(&mut self, row: &ComparisonRow) {
        match (row.verdict, row.direction) {
            (Verdict::NeedSamples, _) => self.need_samples = true,
            (Verdict::NotSignificant, _) => self.same = true,
            (Verdict::Significant, Some(ChangeKind::Regression)) => self.regression = true,
            (Verdict::Significant, _) => self.improvement = true,
        }
    }

    /// Notes whether a side of `group` missed its interval; `!!!` when it
    /// did, for the last cell of its row.
    pub(super) fn see_sides(&mut self, group: &ComparisonGroup) -> &'static str {
        if group.first_figures.confidence_missed || group.second_figures.confidence_missed {
            self.confidence_missed = true;
            "!!!"
        } else {
            ""
        }
    }
}

/// The widths of the line under each row that gives both sides' CPU
/// figures after the columns `prefix`, and the width that heads each
/// side's four: utilisation and service demand, or, where that line
/// would pass `limit`, the service demand alone.
fn cpu_widths(prefix: &[i64], limit: usize) -> (Vec<i64>, i64) {
    let full: Vec<i64> = prefix
        .iter()
        .copied()
        .chain([6, 6, 7, 7, 6, 6, 7, 7])
        .collect();
    let width = full.iter().sum::<i64>() + full.len() as i64 - 1;
    if width > limit as i64 {
        let demand_only = prefix
            .iter()
            .copied()
            .chain([0, 0, 7, 7, 0, 0, 7, 7])
            .collect();
        (demand_only, 15)
    } else {
        (full, 29)
    }
}

/// The cells `prefix` followed by `cells`.
fn after<const N: usize>(prefix: &[&str], cells: [String; N]) -> Vec<String> {
    prefix
        .iter()
        .map(|cell| cell.to_string())
        .chain(cells)
        .collect()
}

/// A size sweep as one table.
#[derive(Debug, Serialize)]
pub struct FamilyTable {
    /// The test, what every size shares, and the testbed.
    pub title: String,
    /// Rows of request and response sizes; else of send sizes.
    pub request_response: bool,
    /// UDP_STREAM: a send and a receive line per size.
    pub datagrams: bool,
    /// A line under each size gives each side's CPU figures.
    pub cpu: bool,
    /// That line has the utilisation beside the service demand (where
    /// both fit the width).
    pub cpu_utilisation: bool,
    /// The groups of the rows, indices into `groups`, in order.
    pub groups: Vec<usize>,
    /// The table, laid out.
    pub lines: Vec<String>,
    /// The sides that missed their `-I` interval, each with the sizes.
    pub missed_by: Vec<MissedBy>,
}

/// A side and the sizes at which it missed its interval.
#[derive(Debug, Serialize)]
pub struct MissedBy {
    /// The side's name.
    pub name: String,
    /// The sizes, as options (`-m 1024`, `-r 1,1`).
    pub sizes: Vec<String>,
}

/// The heads of a family's table, the width sets of its rows, and
/// whether its CPU line has room for the utilisation.
fn family_heads(
    swept: Swept,
    cpu: bool,
    frame: &Frame<'_>,
) -> (Vec<TableRow>, Vec<Vec<i64>>, bool) {
    let (first, second) = (frame.heads[0].clone(), frame.heads[1].clone());
    let mut rows = Vec::new();
    if swept == Swept::Datagram {
        let widths = vec![5, 4, 8, 6, 9, 8, 6, 9, 9];
        let side = widths[2..5].iter().sum::<i64>() + 2;
        rows.push(TableRow::in_set(
            1,
            after(&["Send", ""], [first.clone(), second.clone()]),
        ));
        rows.push(TableRow::of([
            "Size", "", "Okay", "Errors", "Tput", "Okay", "Errors", "Tput",
        ]));
        rows.push(TableRow::of([
            "bytes", "", "#", "#", "", "#", "#", "", "change",
        ]));
        if cpu {
            rows.push(TableRow::in_set(3, after(&["", ""], [first, second])));
            rows.push(TableRow::in_set(
                2,
                after(&["", ""], CPU_HEADS.map(String::from)),
            ));
            rows.push(TableRow::in_set(
                2,
                after(&["", ""], LOCAL_REMOTE.map(String::from)),
            ));
        }
        let sets = vec![
            widths,
            vec![5, 4, side, side],
            vec![5, 4, 6, 6, 7, 7, 6, 6, 7, 7],
            vec![5, 4, 29, 29],
        ];
        return (rows, sets, true);
    }
    let request_response = swept == Swept::RequestResponse;
    let (prefix, blank): (Vec<i64>, &[&str]) = if request_response {
        (vec![7, 6], &["", ""])
    } else {
        (vec![7], &[""])
    };
    let (cpu_widths, side_width) = cpu_widths(&prefix, frame.limit());
    let widths: Vec<i64> = if request_response {
        rows.push(TableRow::of([
            "Request", "Resp.", "Rate", "Rate", "", "Tput", "Tput",
        ]));
        rows.push(TableRow::of(after(
            &["Size", "Size"],
            [
                first.clone(),
                second.clone(),
                "change".into(),
                first.clone(),
                second.clone(),
            ],
        )));
        rows.push(TableRow::of(["bytes", "bytes"]));
        vec![7, 6, 9, 9, 9, 8, 8, -3]
    } else {
        rows.push(TableRow::of(["Send", "Tput", "Tput"]));
        rows.push(TableRow::of(after(
            &["Size"],
            [first.clone(), second.clone(), "change".into()],
        )));
        rows.push(TableRow::of(["bytes"]));
        vec![7, 10, 10, 9, -3]
    };
    if cpu {
        rows.push(TableRow::in_set(2, after(blank, [first, second])));
        rows.push(TableRow::in_set(
            1,
            after(blank, CPU_HEADS.map(String::from)),
        ));
        rows.push(TableRow::in_set(
            1,
            after(blank, LOCAL_REMOTE.map(String::from)),
        ));
    }
    let side_widths = prefix.iter().copied().chain([side_width; 2]).collect();
    (
        rows,
        vec![widths, cpu_widths, side_widths],
        side_width == 29,
    )
}

/// The table of `family`, whose members are of `groups`; the marks of
/// its rows noted in `marks`.
pub(super) fn family_table(
    family: &Family,
    groups: &[ComparisonGroup],
    frame: &Frame<'_>,
    marks: &mut Marks,
) -> FamilyTable {
    let cpu = family.with_cpu;
    let (mut rows, sets, cpu_utilisation) = family_heads(family.swept, cpu, frame);
    rows.push(TableRow::blank());
    let request_response = family.swept == Swept::RequestResponse;
    let mut missed: [Vec<String>; 2] = Default::default();
    for group in family.groups.iter().map(|&idx| &groups[idx]) {
        let Some(row) = group.rows.first() else {
            continue;
        };
        marks.see(row);
        let flag = marks.see_sides(group);
        let spec = &group.run_spec;
        let size = if request_response {
            format!(
                "-r {},{}",
                spec.request_size_bytes, spec.response_size_bytes
            )
        } else {
            format!("-m {}", spec.send_size_bytes)
        };
        for (side, figures) in [&group.first_figures, &group.second_figures]
            .into_iter()
            .enumerate()
        {
            if figures.confidence_missed {
                missed[side].push(size.clone());
            }
        }
        rows.extend(size_rows(group, family.swept, cpu, frame, flag));
    }
    let [first_missed, second_missed] = missed;
    FamilyTable {
        title: family.title.clone(),
        request_response,
        datagrams: family.swept == Swept::Datagram,
        cpu,
        cpu_utilisation,
        groups: family.groups.clone(),
        lines: frame.lay_out(&rows, &sets),
        missed_by: [
            (frame.names[0], first_missed),
            (frame.names[1], second_missed),
        ]
        .into_iter()
        .filter(|(_, sizes)| !sizes.is_empty())
        .map(|(name, sizes)| MissedBy {
            name: name.to_string(),
            sizes,
        })
        .collect(),
    }
}

/// The rows of one size of a family: its figures (a send and a receive
/// line for datagrams), `flag` where a side missed its interval, and
/// the CPU line under them.
fn size_rows(
    group: &ComparisonGroup,
    swept: Swept,
    cpu: bool,
    frame: &Frame<'_>,
    flag: &str,
) -> Vec<TableRow> {
    let Some(row) = group.rows.first() else {
        return Vec::new();
    };
    let (a, b) = (&group.first_figures, &group.second_figures);
    let spec = &group.run_spec;
    let units = frame.units;
    let mut rows = match swept {
        Swept::Datagram => vec![
            TableRow::of([
                spec.send_size_bytes.to_string(),
                "send".into(),
                whole(a.messages_sent),
                whole(a.send_errors),
                units.figure(a.sent_throughput_bps),
                whole(b.messages_sent),
                whole(b.send_errors),
                units.figure(b.sent_throughput_bps),
                flag.into(),
            ]),
            TableRow::of([
                String::new(),
                "recv".into(),
                whole(a.messages_received),
                String::new(),
                units.figure(a.throughput_bps),
                whole(b.messages_received),
                String::new(),
                units.figure(b.throughput_bps),
                change(row),
            ]),
        ],
        Swept::RequestResponse => vec![TableRow::of([
            spec.request_size_bytes.to_string(),
            spec.response_size_bytes.to_string(),
            figure(a.transaction_rate, 2),
            figure(b.transaction_rate, 2),
            change(row),
            units.figure(a.throughput_bps),
            units.figure(b.throughput_bps),
            flag.into(),
        ])],
        Swept::SendSize => vec![TableRow::of([
            spec.send_size_bytes.to_string(),
            units.figure(a.throughput_bps),
            units.figure(b.throughput_bps),
            change(row),
            flag.into(),
        ])],
    };
    if cpu {
        // The CPU line's set of widths, and the columns it leaves blank
        // before the figures (those that name the row).
        let (set, n_blank) = match swept {
            Swept::Datagram => (2, 2),
            Swept::RequestResponse => (1, 2),
            Swept::SendSize => (1, 1),
        };
        let blank = std::iter::repeat_n(String::new(), n_blank);
        rows.push(TableRow::in_set(
            set,
            blank.chain(cpu_figures(a)).chain(cpu_figures(b)),
        ));
    }
    rows
}

/// Every configuration of a test as one table.
#[derive(Debug, Serialize)]
pub struct MatrixTable {
    /// The test, what every row shares, and the testbed.
    pub title: String,
    /// Rates of transactions; else throughput.
    pub request_response: bool,
    /// A line under each row gives each side's CPU figures.
    pub cpu: bool,
    /// That line has the utilisation beside the service demand.
    pub cpu_utilisation: bool,
    /// The rows: the values that name each and its group.
    pub rows: Vec<MatrixRow>,
    /// The table, laid out.
    pub lines: Vec<String>,
}

/// The table of `matrix`, whose rows are of `groups`; the marks of its
/// rows noted in `marks`.
pub(super) fn matrix_table(
    matrix: &Matrix,
    groups: &[ComparisonGroup],
    frame: &Frame<'_>,
    marks: &mut Marks,
) -> MatrixTable {
    let (first, second) = (frame.heads[0].clone(), frame.heads[1].clone());
    let columns: Vec<i64> = matrix.widths.iter().map(|&width| width as i64).collect();
    let (cpu_widths, side_width) = cpu_widths(&columns, frame.limit());
    let sets = vec![
        columns.iter().copied().chain([10, 10, 9, -3]).collect(),
        cpu_widths,
        columns.iter().copied().chain([side_width; 2]).collect(),
    ];
    let blank: Vec<&str> = vec![""; matrix.columns.len()];
    let figure_head = if matrix.request_response {
        "Rate"
    } else {
        "BW"
    };
    let mut rows = vec![
        TableRow::of(after(
            &blank,
            [figure_head.to_string(), figure_head.to_string()],
        )),
        TableRow::of(matrix.columns.iter().cloned().chain([
            first.clone(),
            second.clone(),
            "change".into(),
        ])),
    ];
    if matrix.with_cpu {
        rows.push(TableRow::in_set(2, after(&blank, [first, second])));
        rows.push(TableRow::in_set(
            1,
            after(&blank, CPU_HEADS.map(String::from)),
        ));
        rows.push(TableRow::in_set(
            1,
            after(&blank, LOCAL_REMOTE.map(String::from)),
        ));
    }
    rows.push(TableRow::blank());
    for matrix_row in &matrix.rows {
        let group = &groups[matrix_row.group];
        let Some(row) = group.rows.first() else {
            continue;
        };
        marks.see(row);
        let flag = marks.see_sides(group);
        let (a, b) = (&group.first_figures, &group.second_figures);
        let figures = if matrix.request_response {
            [figure(a.transaction_rate, 2), figure(b.transaction_rate, 2)]
        } else {
            [
                frame.units.figure(a.throughput_bps),
                frame.units.figure(b.throughput_bps),
            ]
        };
        rows.push(TableRow::of(
            matrix_row
                .values
                .iter()
                .cloned()
                .chain(figures)
                .chain([change(row), flag.into()]),
        ));
        if matrix.with_cpu {
            rows.push(TableRow::in_set(
                1,
                after(&blank, cpu_figures(a))
                    .into_iter()
                    .chain(cpu_figures(b)),
            ));
        }
    }
    MatrixTable {
        title: matrix.title.clone(),
        request_response: matrix.request_response,
        cpu: matrix.with_cpu,
        cpu_utilisation: side_width == 29,
        rows: matrix.rows.clone(),
        lines: frame.lay_out(&rows, &sets),
    }
}
