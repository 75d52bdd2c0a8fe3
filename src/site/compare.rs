//! Compare pages: two sides as `compare A B` takes them (a commit, a
//! label or a run id each), group by group, every metric with both
//! sides' means, the change with its interval, the Mann-Whitney p value
//! and the verdict, and a chart of each group's primary metric: both
//! sides with the 95% interval on their means.

use super::IntervalView;
use super::chart::{ChartPoint, DrawnSvg, SeriesChart, format_value, series_svg};
use super::series::scale_of;
use crate::exit::{self, Context, InputError};
use crate::selector::{self, Selector};
use archive::compare::{
    ChangeKind, CompareOptions, ComparisonGroup, ComparisonRow, SideSummary, Verdict, compare,
};
use archive::{Archive, RunQuery};
use run_record::stats;
use serde::Serialize;

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
pub fn compare_page(archive: &Archive, given: &str, number: usize) -> exit::Result<ComparePage> {
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
    let groups = comparison
        .groups
        .iter()
        .map(|group| group_view(group, [&first.value, &second.value]))
        .collect::<exit::Result<_>>()?;
    let view = CompareView {
        title: &title,
        first_description: &first_selection.description,
        second_description: &second_selection.description,
        alpha: comparison.alpha.to_string(),
        groups,
        unmatched: comparison
            .unmatched
            .iter()
            .map(|unmatched| unmatched.title.as_str())
            .collect(),
    };
    Ok(ComparePage {
        file: format!("compare-{number}.html"),
        html: super::render_page("site/compare.html", &view)?,
        title,
    })
}

/// The context of `templates/site/compare.html`.
#[derive(Serialize)]
struct CompareView<'a> {
    title: &'a str,
    first_description: &'a str,
    second_description: &'a str,
    /// The significance level, as given.
    alpha: String,
    groups: Vec<GroupView<'a>>,
    /// Titles of the configurations only one side has.
    unmatched: Vec<&'a str>,
}

/// A test configuration both sides have.
#[derive(Serialize)]
struct GroupView<'a> {
    title: &'a str,
    n_runs_first: usize,
    n_runs_second: usize,
    command: &'a str,
    /// Both sides of the first metric, when both have samples.
    chart: Option<DrawnSvg>,
    rows: Vec<RowView<'a>>,
    env_differences: Vec<EnvDifference<'a>>,
}

/// A metric of a group, both sides in the unit shown.
#[derive(Serialize)]
struct RowView<'a> {
    metric: &'a str,
    unit: String,
    first_mean: Option<String>,
    second_mean: Option<String>,
    change: Option<ChangeView>,
    p_value: Option<String>,
    significant: bool,
    verdict: RowVerdict,
}

/// A change in percent, signed, with its interval when there is one.
#[derive(Serialize)]
struct ChangeView {
    pct: String,
    interval: Option<IntervalView>,
}

/// What a row's test says, as the page words it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum RowVerdict {
    TooFewSamples,
    NotSignificant,
    Better,
    Worse,
    Changed,
}

/// A key of the environment whose values differ between the sides.
#[derive(Serialize)]
struct EnvDifference<'a> {
    key: &'a str,
    first: Option<&'a str>,
    second: Option<&'a str>,
}

fn group_view<'a>(group: &'a ComparisonGroup, names: [&str; 2]) -> exit::Result<GroupView<'a>> {
    let chart = match group.rows.first() {
        Some(row) => sides_chart(&group.title, row, names)?,
        None => None,
    };
    Ok(GroupView {
        title: &group.title,
        n_runs_first: group.n_runs_first,
        n_runs_second: group.n_runs_second,
        command: &group.command,
        chart,
        rows: group.rows.iter().map(row_view).collect(),
        env_differences: group
            .env_differences
            .iter()
            .map(|change| EnvDifference {
                key: &change.key,
                first: change.first.as_deref(),
                second: change.second.as_deref(),
            })
            .collect(),
    })
}

/// The mean of a side and its 95% interval (Student's t on its samples).
fn side_interval(side: &SideSummary) -> exit::Result<(f64, f64)> {
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
) -> exit::Result<Option<DrawnSvg>> {
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
            link: None,
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

fn row_view(row: &ComparisonRow) -> RowView<'_> {
    let scale = scale_of(&row.unit, "m");
    let mean = |side: &Option<SideSummary>| {
        side.as_ref()
            .map(|side| format_value(side.mean / scale.divisor))
    };
    let change = row.change_pct.map(|pct| ChangeView {
        pct: format!("{pct:+.2}"),
        interval: match (row.change_low_pct, row.change_high_pct) {
            (Some(low), Some(high)) => Some(IntervalView {
                low: format!("{low:+.2}"),
                high: format!("{high:+.2}"),
            }),
            _ => None,
        },
    });
    let verdict = match row.verdict {
        Verdict::NeedSamples => RowVerdict::TooFewSamples,
        Verdict::NotSignificant => RowVerdict::NotSignificant,
        Verdict::Significant => match row.direction {
            Some(ChangeKind::Improvement) => RowVerdict::Better,
            Some(ChangeKind::Regression) => RowVerdict::Worse,
            None => RowVerdict::Changed,
        },
    };
    RowView {
        metric: &row.metric,
        first_mean: mean(&row.first),
        second_mean: mean(&row.second),
        unit: scale.unit,
        change,
        p_value: row.p_value.map(|p| format!("{p:.4}")),
        significant: row.verdict == Verdict::Significant,
        verdict,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_verdict_has_its_words() {
        let words = [
            (RowVerdict::TooFewSamples, "too few samples"),
            (RowVerdict::NotSignificant, "no significant change"),
            (RowVerdict::Better, "better"),
            (RowVerdict::Worse, "worse"),
            (RowVerdict::Changed, "changed"),
        ];
        let rows = words
            .iter()
            .map(|(verdict, _)| RowView {
                metric: "throughput_bps",
                unit: "10^6bits/s".to_string(),
                first_mean: None,
                second_mean: Some("1.000".to_string()),
                change: None,
                p_value: None,
                significant: false,
                verdict: *verdict,
            })
            .collect();
        let view = CompareView {
            title: "a against b",
            first_description: "a",
            second_description: "b",
            alpha: "0.05".to_string(),
            groups: vec![GroupView {
                title: "TCP_STREAM",
                n_runs_first: 1,
                n_runs_second: 2,
                command: "netbisect bench",
                chart: None,
                rows,
                env_differences: Vec::new(),
            }],
            unmatched: Vec::new(),
        };
        let html = crate::render::html::render("site/compare.html", &view).unwrap();
        // The texts of each row's cells, read off the page.
        let rows: Vec<Vec<&str>> = crate::site::page_text::inner_of(&html, "tr")
            .into_iter()
            .map(|row| crate::site::page_text::inner_of(row, "td"))
            .collect();
        for (_, word) in words {
            // A's mean, B's, the change, p, then the verdict's words.
            assert!(
                rows.iter()
                    .any(|cells| cells.ends_with(&["-", "1.000", "-", "-", word])),
                "{word}: {html}"
            );
        }
        assert!(
            crate::site::page_text::inner_of(&html, "p")
                .iter()
                .any(|paragraph| paragraph.starts_with("1 run of A, 2 of B;")),
            "{html}"
        );
    }
}
