//! Compare pages: two sides as `compare A B` takes them (a commit, a
//! label or a run id each), group by group, every metric with both
//! sides' means, the change with its interval, the Mann-Whitney p value
//! and the verdict, and a chart of each group's primary metric: both
//! sides with the 95% interval on their means.

use super::chart::{ChartPoint, DrawnSvg, SeriesChart, format_value, series_svg};
use super::html::{Cell, escape, page, table};
use super::series::scale_of;
use crate::exit::InputError;
use crate::selector::{self, Selector};
use anyhow::Context;
use archive::compare::{CompareOptions, ComparisonRow, SideSummary, Verdict, compare};
use archive::{Archive, RunQuery};
use run_record::stats;
use std::fmt::Write as _;

/// A compare page.
pub struct ComparePage {
    /// File name.
    pub file: String,
    /// `A against B`, plain text.
    pub title: String,
    /// The page.
    pub html: String,
}

/// The two sides of `A..B`.
pub fn parse_sides(given: &str) -> Result<(Selector, Selector), InputError> {
    let Some((first, second)) = given.split_once("..") else {
        return Err(InputError(format!(
            "--compare '{given}' names no two sides: write A..B (a commit, label or run id each)"
        )));
    };
    if first.is_empty() || second.is_empty() || second.contains("..") {
        return Err(InputError(format!(
            "--compare '{given}' is not A..B with one side on each end"
        )));
    }
    Ok((Selector::parse(first)?, Selector::parse(second)?))
}

/// The page of the comparison `given` (`A..B`), the `number`th.
pub fn compare_page(archive: &Archive, given: &str, number: usize) -> anyhow::Result<ComparePage> {
    let (first, second) = parse_sides(given)?;
    let filters = RunQuery::default();
    let first_selection = selector::resolve(archive, &first, &filters)?;
    let second_selection = selector::resolve(archive, &second, &filters)?;
    let options = CompareOptions {
        first_label: first.value.clone(),
        second_label: second.value.clone(),
        first_name: first.value.clone(),
        second_name: second.value.clone(),
        ..CompareOptions::default()
    };
    let comparison = compare(
        &first_selection.records,
        &second_selection.records,
        &options,
    )
    .with_context(|| format!("failed to compare {given}"))?;

    let title = format!("{} against {}", first.value, second.value);
    let mut body = format!("<h1>{}</h1>\n", escape(&title));
    let _ = writeln!(
        body,
        "<p>A: {}.<br>B: {}.<br>Changes are B against A; p is the two-sided \
         Mann-Whitney test's, significant below {}.</p>",
        escape(&first_selection.description),
        escape(&second_selection.description),
        comparison.alpha
    );
    if comparison.groups.is_empty() {
        body.push_str("<p>The two sides have no test configuration in common.</p>\n");
    }
    for group in &comparison.groups {
        let _ = writeln!(
            body,
            "<h2>{}</h2>\n<p>{} run{} of A, {} of B; runs again with <code>{}</code>.</p>",
            escape(&group.title),
            group.n_runs_first,
            if group.n_runs_first == 1 { "" } else { "s" },
            group.n_runs_second,
            escape(&group.command)
        );
        if let Some(row) = group.rows.first()
            && let Some(svg) = sides_chart(&group.title, row, [&first.value, &second.value])?
        {
            let _ = writeln!(body, "<figure class=\"chart\">\n{}</figure>", svg.as_str());
        }
        body.push_str(&rows_table(&group.rows));
        if !group.env_differences.is_empty() {
            body.push_str("<p>The environments differ:</p>\n<ul>\n");
            for change in &group.env_differences {
                let _ = writeln!(
                    body,
                    "<li><code>{}</code>: {} / {}</li>",
                    escape(&change.key),
                    escape(change.first.as_deref().unwrap_or("-")),
                    escape(change.second.as_deref().unwrap_or("-"))
                );
            }
            body.push_str("</ul>\n");
        }
    }
    for unmatched in &comparison.unmatched {
        let _ = writeln!(
            body,
            "<p class=\"note\">Only on one side: {}.</p>",
            escape(&unmatched.title)
        );
    }
    Ok(ComparePage {
        file: format!("compare-{number}.html"),
        html: page(&title, &body),
        title,
    })
}

/// The mean of a side and its 95% interval (Student's t on its samples).
fn side_interval(side: &SideSummary) -> anyhow::Result<(f64, f64)> {
    match side.stddev {
        Some(stddev) if side.n_samples > 1 => {
            let critical =
                stats::distributions::student_t_quantile(0.975, (side.n_samples - 1) as f64)
                    .context("failed to compute an interval")?;
            let half = critical * stddev / (side.n_samples as f64).sqrt();
            Ok((side.mean - half, side.mean + half))
        }
        _ => Ok((side.mean, side.mean)),
    }
}

/// Both sides of `row` as a chart, when both have samples.
fn sides_chart(
    title: &str,
    row: &ComparisonRow,
    names: [&str; 2],
) -> anyhow::Result<Option<DrawnSvg>> {
    let (Some(first), Some(second)) = (&row.first, &row.second) else {
        return Ok(None);
    };
    let scale = scale_of(&row.unit, "m");
    let mut points = Vec::new();
    for (name, side) in names.iter().zip([first, second]) {
        let (low, high) = side_interval(side)?;
        let mean = side.mean / scale.divisor;
        points.push(ChartPoint {
            label: name.chars().take(16).collect(),
            center: mean,
            low: low / scale.divisor,
            high: high / scale.divisor,
            detail: format!(
                "{name}\nmean {} {}\n95% interval {} to {}\n{} samples",
                format_value(mean),
                scale.unit,
                format_value(low / scale.divisor),
                format_value(high / scale.divisor),
                side.n_samples
            ),
        });
    }
    let chart = SeriesChart {
        caption: title.to_string(),
        x_name: "side".to_string(),
        y_name: format!("{}, {} (95% interval)", row.metric, scale.unit),
        points,
        markers: Vec::new(),
    };
    Ok(Some(
        series_svg(&chart).with_context(|| format!("failed to draw {title}"))?,
    ))
}

fn rows_table(rows: &[ComparisonRow]) -> String {
    let cells: Vec<(Option<&str>, Vec<Cell>)> = rows
        .iter()
        .map(|row| {
            let scale = scale_of(&row.unit, "m");
            let mean = |side: &Option<SideSummary>| {
                side.as_ref().map_or("-".to_string(), |side| {
                    format_value(side.mean / scale.divisor)
                })
            };
            let change = match (row.change_pct, row.change_low_pct, row.change_high_pct) {
                (Some(pct), Some(low), Some(high)) => {
                    format!("{pct:+.2}% ({low:+.2}% to {high:+.2}%)")
                }
                (Some(pct), _, _) => format!("{pct:+.2}%"),
                _ => "-".to_string(),
            };
            let verdict = match row.verdict {
                Verdict::NeedSamples => "too few samples",
                Verdict::NotSignificant => "no significant change",
                Verdict::Significant => match row.direction {
                    Some(archive::compare::ChangeKind::Improvement) => "better",
                    Some(archive::compare::ChangeKind::Regression) => "worse",
                    None => "changed",
                },
            };
            (
                (row.verdict == Verdict::Significant).then_some("change"),
                vec![
                    Cell::Text(escape(&row.metric)),
                    Cell::Text(escape(&scale.unit)),
                    Cell::Num(mean(&row.first)),
                    Cell::Num(mean(&row.second)),
                    Cell::Num(change),
                    Cell::Num(row.p_value.map_or("-".to_string(), |p| format!("{p:.4}"))),
                    Cell::Text(verdict.to_string()),
                ],
            )
        })
        .collect();
    table(
        &[
            "metric",
            "unit",
            "A",
            "B",
            "change (interval)",
            "p",
            "verdict",
        ],
        &cells,
    )
}
