//! The context of `compare-stats`: the archive's comparison, as `compare
//! --json` prints it, and each metric's row as the table prints its
//! figures, for pasting under a commit message.

use crate::render::filters::{figure_text, fixed_text, signed_pct_text};
use crate::views::compare::cells::mark;
use crate::views::compare::{MoreRuns, granted_notes, more_runs};
use archive::compare::{ChangeKind, Comparison, ComparisonRow, SideSummary, Verdict};
use serde::Serialize;

/// What the `compare-stats` template is given.
#[derive(Debug, Serialize)]
pub struct CompareStatsContext<'a> {
    /// The comparison, as `compare --json` prints it.
    #[serde(flatten)]
    pub comparison: &'a Comparison,
    /// The rows of each group (in the order of `groups`) as the table
    /// prints them.
    pub group_rows: Vec<Vec<StatsRow>>,
    /// The marks the rows carry that the legend explains.
    pub marks: StatsMarks,
    /// Of the rows with too few samples: the fewest and the most runs a
    /// side that would decide them at the noise seen.
    pub more_runs: Option<MoreRuns>,
    /// What the kernel did not grant of the settings the groups asked,
    /// as the table layouts say it.
    pub granted_notes: Vec<String>,
}

/// Which of the marks the legend explains the rows carry.
#[derive(Debug, Default, Serialize)]
pub struct StatsMarks {
    /// Some row is a significant regression (`!`).
    pub regression: bool,
    /// Some row has too few samples for a verdict (`?`).
    pub need_samples: bool,
}

/// One metric of a group, its figures as the table prints them (`-`
/// where a side has none).
#[derive(Debug, Serialize)]
pub struct StatsRow {
    /// The metric (`throughput_bps`).
    pub metric: String,
    /// Its unit as the archive names it (`bits/s`, `us/KB`).
    pub unit: String,
    /// The first side's mean, throughput in 10^6 bits/s.
    pub first_mean: String,
    /// The first side's standard deviation, percent of its mean.
    pub first_spread: String,
    /// The second side's mean.
    pub second_mean: String,
    /// The second side's standard deviation, percent of its mean.
    pub second_spread: String,
    /// The change of the means, signed (`+9.8%`).
    pub change: String,
    /// `!` a significant regression, `~` no significant difference, `?`
    /// too few samples, blank for a significant improvement.
    pub mark: &'static str,
    /// The Mann-Whitney p value (`<.0001`, `0.3095`).
    pub p_value: String,
    /// The samples of each side, `base/patched`.
    pub samples: String,
}

impl<'a> CompareStatsContext<'a> {
    /// The context of `comparison`.
    pub fn new(comparison: &'a Comparison) -> CompareStatsContext<'a> {
        let mut marks = StatsMarks::default();
        let group_rows = comparison
            .groups
            .iter()
            .map(|group| {
                group
                    .rows
                    .iter()
                    .map(|row| {
                        match (row.verdict, row.direction) {
                            (Verdict::NeedSamples, _) => marks.need_samples = true,
                            (Verdict::Significant, Some(ChangeKind::Regression)) => {
                                marks.regression = true;
                            }
                            _ => {}
                        }
                        StatsRow::of(row)
                    })
                    .collect()
            })
            .collect();
        CompareStatsContext {
            comparison,
            group_rows,
            marks,
            more_runs: more_runs(comparison),
            granted_notes: granted_notes(
                comparison,
                [&comparison.first_name, &comparison.second_name],
            ),
        }
    }
}

impl StatsRow {
    fn of(row: &ComparisonRow) -> StatsRow {
        let mean = |side: Option<&SideSummary>| match side {
            None => "-".to_string(),
            Some(side) => match row.unit.as_str() {
                "bits/s" => figure_text(side.mean / 1e6, 2),
                "us/KB" | "us/Tran" => figure_text(side.mean, 3),
                _ => figure_text(side.mean, 2),
            },
        };
        let spread = |side: Option<&SideSummary>| {
            side.and_then(|side| side.spread_pct)
                .map_or_else(|| "-".to_string(), |spread| fixed_text(spread, 1))
        };
        let samples = |side: Option<&SideSummary>| side.map_or(0, |side| side.n_samples);
        StatsRow {
            metric: row.metric.clone(),
            unit: row.unit.clone(),
            first_mean: mean(row.first.as_ref()),
            first_spread: spread(row.first.as_ref()),
            second_mean: mean(row.second.as_ref()),
            second_spread: spread(row.second.as_ref()),
            change: row
                .change_pct
                .map_or_else(|| "-".to_string(), |pct| signed_pct_text(pct, 1)),
            mark: match mark(row) {
                "+" => " ",
                other => other,
            },
            p_value: match row.p_value {
                None => "-".to_string(),
                Some(p) if p < 0.0001 => "<.0001".to_string(),
                Some(p) => fixed_text(p, 4),
            },
            samples: format!(
                "{}/{}",
                samples(row.first.as_ref()),
                samples(row.second.as_ref())
            ),
        }
    }
}
