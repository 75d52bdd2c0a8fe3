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

/// How the CPU figures of a table's rows are laid out under each row.
#[derive(Clone, Debug, PartialEq)]
struct CpuLayout {
    /// The widths of the CPU lines and their heads (set 1).
    widths: Vec<i64>,
    /// The widths of the heads that name each side's figures (set 2):
    /// `prefix` and the width each side's shown figures take (a line per
    /// side names its own).
    side_widths: Vec<i64>,
    /// Utilisation is shown beside the service demand.
    utilisation: bool,
    /// A line per side, named by its head, under the row's columns from
    /// the first (where both sides' figures after the row's names would
    /// pass the width).
    per_side: bool,
}

/// The layout of the CPU figures under each row of a table whose rows
/// are named by columns of `prefix` widths, from `cells` (both sides'
/// four figures of every row: utilisation local and remote, service
/// demand local and remote), within `limit`: both sides' figures on one
/// line after the row's names; where that line would pass the width,
/// the service demand alone; where that would too, a line per side,
/// each named by its head, with all four.
fn cpu_layout(prefix: &[i64], cells: &[[[String; 4]; 2]], limit: usize) -> CpuLayout {
    // Each side's four columns as wide as their widest figure.
    let mut widths: [[i64; 4]; 2] = [[6, 6, 7, 7]; 2];
    for row in cells {
        for (side_widths, side) in widths.iter_mut().zip(row) {
            for (width, cell) in side_widths.iter_mut().zip(side) {
                *width = (*width).max(cell.len() as i64);
            }
        }
    }
    let fits = |widths: &[i64]| {
        let shown: Vec<i64> = widths.iter().copied().filter(|width| *width != 0).collect();
        shown.iter().map(|width| width.abs()).sum::<i64>() + shown.len() as i64 - 1 <= limit as i64
    };
    let after_prefix = |first: [i64; 4], second: [i64; 4]| -> Vec<i64> {
        prefix.iter().copied().chain(first).chain(second).collect()
    };
    // A side's name over its figures, as wide as they are together.
    let heads_over = |sides: [[i64; 4]; 2]| -> Vec<i64> {
        let over = |side: [i64; 4]| {
            let shown: Vec<i64> = side.into_iter().filter(|width| *width != 0).collect();
            shown.iter().sum::<i64>() + shown.len() as i64 - 1
        };
        prefix.iter().copied().chain(sides.map(over)).collect()
    };
    let full = after_prefix(widths[0], widths[1]);
    if fits(&full) {
        return CpuLayout {
            side_widths: heads_over(widths),
            widths: full,
            utilisation: true,
            per_side: false,
        };
    }
    let demand = |[_, _, local, remote]: [i64; 4]| [0, 0, local, remote];
    let demand_only = after_prefix(demand(widths[0]), demand(widths[1]));
    if fits(&demand_only) {
        return CpuLayout {
            side_widths: heads_over(widths.map(demand)),
            widths: demand_only,
            utilisation: false,
            per_side: false,
        };
    }
    let both: Vec<i64> = (0..4)
        .map(|idx| widths[0][idx].max(widths[1][idx]))
        .collect();
    CpuLayout {
        widths: [-8].into_iter().chain(both).collect(),
        // No row names the sides over the figures: each line names its
        // own, in the first column, which the sets share.
        side_widths: vec![-8],
        utilisation: true,
        per_side: true,
    }
}

impl CpuLayout {
    /// The heads of the CPU lines: the sides' names over their figures
    /// (set 2), unless each line names its side, then what each figure
    /// is, with `blank` cells before them under the row's names.
    fn heads(&self, blank: &[&str], heads: &[String]) -> Vec<TableRow> {
        if self.per_side {
            return [CPU_HEADS, LOCAL_REMOTE]
                .into_iter()
                .map(|cells| TableRow::in_set(1, [""].into_iter().chain(cells.into_iter().take(4))))
                .collect();
        }
        vec![
            TableRow::in_set(2, after(blank, [heads[0].clone(), heads[1].clone()])),
            TableRow::in_set(1, after(blank, CPU_HEADS.map(String::from))),
            TableRow::in_set(1, after(blank, LOCAL_REMOTE.map(String::from))),
        ]
    }

    /// The CPU lines under a row: both sides' figures after `n_blank`
    /// cells, or a line per side named by its head.
    fn lines(&self, n_blank: usize, sides: [[String; 4]; 2], heads: &[String]) -> Vec<TableRow> {
        let [first, second] = sides;
        if self.per_side {
            return [(&heads[0], first), (&heads[1], second)]
                .into_iter()
                .map(|(head, figures)| {
                    TableRow::in_set(1, [head.clone()].into_iter().chain(figures))
                })
                .collect();
        }
        let blank = std::iter::repeat_n(String::new(), n_blank);
        vec![TableRow::in_set(1, blank.chain(first).chain(second))]
    }
}

/// Both sides' CPU figures of every group of `groups`, as the lines
/// under their rows give them.
fn cpu_cells<'a>(groups: impl Iterator<Item = &'a ComparisonGroup>) -> Vec<[[String; 4]; 2]> {
    groups
        .map(|group| {
            [
                cpu_figures(&group.first_figures),
                cpu_figures(&group.second_figures),
            ]
        })
        .collect()
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
    /// The CPU figures are on a line per side, named by its head (where
    /// both sides' would pass the width on one).
    pub cpu_per_side: bool,
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

/// The columns that name the rows of a family's table: their widths, and
/// blank cells for them.
fn family_prefix(swept: Swept) -> (Vec<i64>, &'static [&'static str]) {
    match swept {
        Swept::Datagram => (vec![5, 4], &["", ""]),
        Swept::RequestResponse => (vec![7, 6], &["", ""]),
        Swept::SendSize => (vec![7], &[""]),
    }
}

/// The heads of a family's table and the width sets of its rows: the
/// figures (0), the CPU lines under them laid out as `cpu` says (1, and
/// the sides' names over them, 2), and for datagrams the sides' names
/// over their figures (3).
fn family_heads(
    swept: Swept,
    cpu: Option<&CpuLayout>,
    frame: &Frame<'_>,
) -> (Vec<TableRow>, Vec<Vec<i64>>) {
    let (first, second) = (frame.heads[0].clone(), frame.heads[1].clone());
    let (_, blank) = family_prefix(swept);
    let cpu_sets = cpu.map_or_else(
        || vec![Vec::new(), Vec::new()],
        |cpu| vec![cpu.widths.clone(), cpu.side_widths.clone()],
    );
    let mut rows = Vec::new();
    if swept == Swept::Datagram {
        let widths = vec![5, 4, 8, 6, 9, 8, 6, 9, 9];
        let side = widths[2..5].iter().sum::<i64>() + 2;
        rows.push(TableRow::in_set(
            3,
            after(&["Send", ""], [first.clone(), second.clone()]),
        ));
        rows.push(TableRow::of([
            "Size", "", "Okay", "Errors", "Tput", "Okay", "Errors", "Tput",
        ]));
        rows.push(TableRow::of([
            "bytes", "", "#", "#", "", "#", "#", "", "change",
        ]));
        if let Some(cpu) = cpu {
            rows.extend(cpu.heads(blank, frame.heads));
        }
        let mut sets = vec![widths];
        sets.extend(cpu_sets);
        sets.push(vec![5, 4, side, side]);
        return (rows, sets);
    }
    let request_response = swept == Swept::RequestResponse;
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
    if let Some(cpu) = cpu {
        rows.extend(cpu.heads(blank, frame.heads));
    }
    let mut sets = vec![widths];
    sets.extend(cpu_sets);
    (rows, sets)
}

/// The table of `family`, whose members are of `groups`; the marks of
/// its rows noted in `marks`.
pub(super) fn family_table(
    family: &Family,
    groups: &[ComparisonGroup],
    frame: &Frame<'_>,
    marks: &mut Marks,
) -> FamilyTable {
    let members = || family.groups.iter().map(|&idx| &groups[idx]);
    let cpu = family.with_cpu.then(|| {
        let (prefix, _) = family_prefix(family.swept);
        cpu_layout(&prefix, &cpu_cells(members()), frame.limit())
    });
    let (mut rows, sets) = family_heads(family.swept, cpu.as_ref(), frame);
    rows.push(TableRow::blank());
    let request_response = family.swept == Swept::RequestResponse;
    let mut missed: [Vec<String>; 2] = Default::default();
    for group in members() {
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
        rows.extend(size_rows(group, family.swept, cpu.as_ref(), frame, flag));
    }
    let [first_missed, second_missed] = missed;
    FamilyTable {
        title: family.title.clone(),
        request_response,
        datagrams: family.swept == Swept::Datagram,
        cpu: cpu.is_some(),
        cpu_utilisation: cpu.as_ref().is_some_and(|cpu| cpu.utilisation),
        cpu_per_side: cpu.as_ref().is_some_and(|cpu| cpu.per_side),
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
    cpu: Option<&CpuLayout>,
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
    if let Some(cpu) = cpu {
        // Under the columns that name the row.
        let (_, blank) = family_prefix(swept);
        rows.extend(cpu.lines(blank.len(), [cpu_figures(a), cpu_figures(b)], frame.heads));
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
    /// The CPU figures are on a line per side, named by its head.
    pub cpu_per_side: bool,
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
    let columns: Vec<i64> = matrix.widths.clone();
    let cpu = matrix.with_cpu.then(|| {
        let members = matrix.rows.iter().map(|row| &groups[row.group]);
        cpu_layout(&columns, &cpu_cells(members), frame.limit())
    });
    let mut sets = vec![columns.iter().copied().chain([10, 10, 9, -3]).collect()];
    if let Some(cpu) = &cpu {
        sets.extend([cpu.widths.clone(), cpu.side_widths.clone()]);
    }
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
    if let Some(cpu) = &cpu {
        rows.extend(cpu.heads(&blank, frame.heads));
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
        if let Some(cpu) = &cpu {
            rows.extend(cpu.lines(blank.len(), [cpu_figures(a), cpu_figures(b)], frame.heads));
        }
    }
    MatrixTable {
        title: matrix.title.clone(),
        request_response: matrix.request_response,
        cpu: cpu.is_some(),
        cpu_utilisation: cpu.as_ref().is_some_and(|cpu| cpu.utilisation),
        cpu_per_side: cpu.as_ref().is_some_and(|cpu| cpu.per_side),
        rows: matrix.rows.clone(),
        lines: frame.lay_out(&rows, &sets),
    }
}
