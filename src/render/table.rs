//! The layout of a whole table, so that it never lies about a column:
//! each column widened to its widest cell, so a figure never pushes its
//! row out of line, and, where the table would pass its width, the names
//! of its rows shortened each to a different name, with a legend after
//! the table. The views lay their tables out with [`lay_out`]; templates
//! reach it through the `table` filter.

use super::text::{plain, wrap_text};

/// One row of a table: its cells, laid out with the widths of set `set`
/// (0 for the figures; another set for a line under them, such as a
/// side's CPU figures). A row without cells is a blank line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TableRow {
    /// Which set of widths the row takes.
    pub set: usize,
    /// The cells, from the first column.
    pub cells: Vec<String>,
}

impl TableRow {
    /// A row of the first set of widths.
    pub fn of<S: Into<String>>(cells: impl IntoIterator<Item = S>) -> TableRow {
        TableRow::in_set(0, cells)
    }

    /// A row of the `set`-th set of widths.
    pub fn in_set<S: Into<String>>(set: usize, cells: impl IntoIterator<Item = S>) -> TableRow {
        TableRow {
            set,
            cells: cells.into_iter().map(Into::into).collect(),
        }
    }

    /// A blank line.
    pub fn blank() -> TableRow {
        TableRow::default()
    }
}

/// A row that names a set of widths the table does not have.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("a row of width set {set}, of {n_sets} sets")]
pub struct UnknownWidthSet {
    /// The set the row named.
    pub set: usize,
    /// The sets there are.
    pub n_sets: usize,
}

/// `rows` laid out in lines of at most `limit` columns where the names
/// allow. `sets` are the sets of widths, one per kind of row: each width
/// the least its column takes, right-aligned, or left-aligned when
/// negative, and a width of 0 hides its column. The first column, when
/// left-aligned in every set, names the rows and is shared by every set;
/// when the table would be wider than `limit` it is narrowed, its names
/// shortened each to a different name ([`unique_short_names`]), and a
/// legend after the table gives each shortened name in full. Every cell
/// is printed [`plain`].
pub fn lay_out(
    rows: &[TableRow],
    sets: &[Vec<i64>],
    limit: usize,
) -> Result<Vec<String>, UnknownWidthSet> {
    let rows: Vec<TableRow> = rows
        .iter()
        .map(|row| TableRow {
            set: row.set,
            cells: row
                .cells
                .iter()
                .map(|cell| plain(cell).into_owned())
                .collect(),
        })
        .collect();
    let column_widths = column_widths(&rows, sets)?;
    let line_width = |widths: &[usize], name_width: usize| -> usize {
        let shown: Vec<usize> = widths
            .iter()
            .enumerate()
            .map(|(column, width)| if column == 0 { name_width } else { *width })
            .filter(|width| *width > 0)
            .collect();
        shown.iter().sum::<usize>() + shown.len().saturating_sub(1)
    };
    let name_width = column_widths
        .iter()
        .filter_map(|widths| widths.first().copied())
        .max()
        .unwrap_or(0);
    let widest = column_widths
        .iter()
        .map(|widths| line_width(widths, name_width))
        .max()
        .unwrap_or(0);
    let names_left = sets.iter().all(|set| set.first().is_some_and(|w| *w < 0));
    let names = if names_left && widest > limit {
        let room = name_width.saturating_sub(widest - limit).max(3);
        RowNames::shortened(&rows, room)
    } else {
        RowNames::whole(name_width)
    };
    let mut lines: Vec<String> = rows
        .iter()
        .map(|row| names.line(row, &column_widths[row.set], &sets[row.set]))
        .collect();
    if !names.legend.is_empty() {
        lines.push(String::new());
        for (short, name) in &names.legend {
            let text = format!("{short}: {name}");
            for (idx, piece) in wrap_text(&text, limit.saturating_sub(2))
                .into_iter()
                .enumerate()
            {
                lines.push(if idx == 0 {
                    piece
                } else {
                    format!("  {piece}")
                });
            }
        }
    }
    Ok(lines)
}

/// The width of every column of every set: the width asked, widened to
/// the widest cell of the column (a width of 0 stays 0: hidden).
fn column_widths(rows: &[TableRow], sets: &[Vec<i64>]) -> Result<Vec<Vec<usize>>, UnknownWidthSet> {
    let mut column_widths: Vec<Vec<usize>> = sets
        .iter()
        .map(|set| {
            set.iter()
                .map(|width| width.unsigned_abs() as usize)
                .collect()
        })
        .collect();
    for TableRow { set, cells } in rows {
        let Some(widths) = column_widths.get_mut(*set) else {
            return Err(UnknownWidthSet {
                set: *set,
                n_sets: sets.len(),
            });
        };
        for (column, cell) in cells.iter().enumerate() {
            if let Some(width) = widths.get_mut(column)
                && *width > 0
            {
                *width = (*width).max(cell.len());
            }
        }
    }
    Ok(column_widths)
}

/// How the first column names the rows: its width, the names shortened
/// to fit it, and the legend of those.
struct RowNames {
    width: usize,
    renamed: std::collections::BTreeMap<String, String>,
    legend: Vec<(String, String)>,
}

impl RowNames {
    /// Names kept whole in a column of `width`.
    fn whole(width: usize) -> RowNames {
        RowNames {
            width,
            renamed: Default::default(),
            legend: Vec::new(),
        }
    }

    /// The names of `rows` shortened apart to `width` columns.
    fn shortened(rows: &[TableRow], width: usize) -> RowNames {
        let mut names: Vec<String> = Vec::new();
        for name in rows.iter().filter_map(|row| row.cells.first()) {
            if !name.is_empty() && !names.contains(name) {
                names.push(name.clone());
            }
        }
        let mut row_names = RowNames::whole(width);
        for (name, short) in names.iter().zip(unique_short_names(&names, width)) {
            if *name != short {
                row_names.legend.push((short.clone(), name.clone()));
            }
            row_names.renamed.insert(name.clone(), short);
        }
        row_names
    }

    /// `row` as a line: each cell padded to its column's width (`widths`,
    /// the first column's this one's), aligned as `set` says, joined by
    /// one space, without trailing spaces.
    fn line(&self, row: &TableRow, widths: &[usize], set: &[i64]) -> String {
        let mut line = String::new();
        let mut first = true;
        for (column, cell) in row.cells.iter().enumerate() {
            let Some(&width) = widths.get(column) else {
                break;
            };
            let width = if column == 0 { self.width } else { width };
            if width == 0 || set[column] == 0 {
                continue;
            }
            let cell = if column == 0 {
                self.renamed.get(cell).unwrap_or(cell)
            } else {
                cell
            };
            if !first {
                line.push(' ');
            }
            first = false;
            let pad = " ".repeat(width.saturating_sub(cell.len()));
            if set[column] < 0 {
                line.push_str(cell);
                line.push_str(&pad);
            } else {
                line.push_str(&pad);
                line.push_str(cell);
            }
        }
        line.trim_end().to_string()
    }
}

/// `names` each in at most `width` columns, each different from the
/// others where the names differ: a name that fits is kept; a longer one
/// keeps its start and, after a `~`, as much of its end as tells it from
/// the others (`nosg-gs~on`, `nosg-g~off`); where no such cut tells them
/// apart, a number does (`nosg~1`).
pub fn unique_short_names(names: &[String], width: usize) -> Vec<String> {
    let width = width.max(3);
    let fits = |name: &String| name.len() <= width;
    let cut = |name: &str, suffix: usize| -> String {
        let prefix = width - 1 - suffix;
        format!("{}~{}", &name[..prefix], &name[name.len() - suffix..])
    };
    let all_apart = |short: &[String]| {
        short.iter().enumerate().all(|(idx, name)| {
            short
                .iter()
                .enumerate()
                .all(|(other_idx, other)| idx == other_idx || name != other)
        })
    };
    for suffix in 0..width - 1 {
        let short: Vec<String> = names
            .iter()
            .map(|name| {
                if fits(name) {
                    name.clone()
                } else {
                    cut(name, suffix.min(name.len() - (width - 1 - suffix)))
                }
            })
            .collect();
        if all_apart(&short) {
            return short;
        }
    }
    let digits = names.len().to_string().len();
    names
        .iter()
        .enumerate()
        .map(|(idx, name)| {
            if fits(name) {
                name.clone()
            } else {
                let prefix = width.saturating_sub(1 + digits).max(1).min(name.len());
                format!("{}~{}", &name[..prefix], idx + 1)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_each_set_align_under_the_names_and_hidden_columns_stay_out() {
        let rows = [
            TableRow::of(["", "Rate", "Tput"]),
            TableRow::in_set(1, ["", "local", "hidden", "remote"]),
            TableRow::blank(),
            TableRow::of(["current", "61486.80", "0.98"]),
            TableRow::in_set(1, ["", "97.44", "-", "97.44"]),
        ];
        let sets = [vec![-8, 9, 5], vec![-8, 6, 0, 6]];
        assert_eq!(
            lay_out(&rows, &sets, 80).unwrap(),
            [
                "              Rate  Tput",
                "          local remote",
                "",
                "current   61486.80  0.98",
                "          97.44  97.44",
            ]
        );
        assert_eq!(
            lay_out(&[TableRow::in_set(2, ["x"])], &sets, 80),
            Err(UnknownWidthSet { set: 2, n_sets: 2 })
        );
    }

    #[test]
    fn names_too_wide_for_the_limit_are_cut_apart_with_a_legend() {
        let rows = [
            TableRow::of(["baseline-gro-on", "1"]),
            TableRow::of(["baseline-gro-off", "22"]),
            TableRow::of(["", "3"]),
        ];
        let lines = lay_out(&rows, &[vec![-10, 4]], 44).unwrap();
        assert_eq!(lines[0], "baseline-gro-on     1");
        let lines = lay_out(&rows, &[vec![-10, 28]], 42).unwrap();
        assert_eq!(
            lines,
            [
                format!("baseline-gr~n {:>28}", 1),
                format!("baseline-gr~f {:>28}", 22),
                format!("{:>42}", 3),
                String::new(),
                "baseline-gr~n: baseline-gro-on".to_string(),
                "baseline-gr~f: baseline-gro-off".to_string(),
            ]
        );
    }

    #[test]
    fn text_from_records_is_printed_plain() {
        let lines = lay_out(&[TableRow::of(["a\u{1b}b", "\u{e9}"])], &[vec![-3, 3]], 80).unwrap();
        assert_eq!(lines, ["a\\x1bb \\u{e9}"]);
    }
}
