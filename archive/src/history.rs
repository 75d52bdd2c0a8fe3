//! A metric across commits, or across time, with its change points: the
//! data behind `netbisect history` and its `--json` output.
//!
//! The caller hands over the points in order: commits in git order (the
//! CLI asks bisect's git layer for the order, so this crate stays free of
//! git; [`points_in_commit_order`] then picks each commit's runs), or runs
//! in time order ([`points_in_time_order`]). Each point's value is the
//! mean of all its samples (every iteration of every run at the point).
//!
//! Change points are found over the per-point means by
//! [`run_record::stats::change_points`], the method of Hunter (M. Fleming
//! et al., "Hunter: Using Change Point Detection to Hunt for Performance
//! Regressions", ICPE 2023): E-divisive means (Matteson and James, JASA
//! 2014) proposes splits by binary segmentation and a Student's t-test
//! decides whether each is real, which keeps the result deterministic.
//! Points without samples are shown but take no part in the search.
//!
//! # JSON
//!
//! [`History`] and the types below it are the schema of `history --json`.
//! Values are in `unit` (SI base units, as in the run record).

use crate::compare::ChangeKind;
use crate::store::SeriesRun;
use run_record::record::Metric;
use run_record::stats::{self, ChangePointOptions, StatsError};
use serde::Serialize;
use std::collections::BTreeSet;

/// Why a history could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// A statistic failed (a non-finite sample, or options out of range).
    #[error("statistics failed for {metric}")]
    Stats {
        /// The metric of the history.
        metric: Metric,
        /// Why.
        #[source]
        source: StatsError,
    },
}

/// The order the points are in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SeriesOrder {
    /// Commits in git order, oldest first.
    Git,
    /// Runs in order of their start time.
    Time,
}

/// What to compute.
#[derive(Clone, Debug, PartialEq)]
pub struct HistoryOptions {
    /// The metric to follow.
    pub metric: Metric,
    /// The order the points are in, for the reader.
    pub order: SeriesOrder,
    /// How change points are searched.
    pub change_points: ChangePointOptions,
}

impl HistoryOptions {
    /// Default change-point options for `metric` in `order`.
    pub fn new(metric: Metric, order: SeriesOrder) -> HistoryOptions {
        HistoryOptions {
            metric,
            order,
            change_points: ChangePointOptions::default(),
        }
    }
}

/// One point of the series as handed over: a label and its runs.
#[derive(Clone, Debug, PartialEq)]
pub struct PointRuns<'a> {
    /// Commit (abbreviated) or time, as it should be printed.
    pub label: String,
    /// The runs measured at this point, with the history's metric.
    pub runs: Vec<&'a SeriesRun>,
}

/// The metric across the points, with change points marked.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct History {
    /// Metric name ([`Metric::name`]).
    pub metric: String,
    /// Unit of every value (`bits/s`, `trans/s`, `us`, `us/KB`,
    /// `us/Tran`, `%`).
    pub unit: String,
    /// True when a larger value is better.
    pub higher_is_better: bool,
    /// The order of the points.
    pub order: SeriesOrder,
    /// Test names seen in the runs, sorted.
    pub tests: Vec<String>,
    /// Significance level of the change-point test.
    pub alpha: f64,
    /// Fewest points with samples on each side of a change point.
    pub min_segment_len: usize,
    /// Smallest point mean; `null` without samples.
    pub min_mean: Option<f64>,
    /// Largest point mean.
    pub max_mean: Option<f64>,
    /// Number of change points found.
    pub n_change_points: usize,
    /// The points, in the order given.
    pub points: Vec<HistoryPoint>,
}

/// One point of the series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HistoryPoint {
    /// Commit or time, as given.
    pub label: String,
    /// Runs at this point.
    pub n_runs: usize,
    /// Samples of the metric at this point.
    pub n_samples: usize,
    /// Mean of the samples; `null` without samples.
    pub mean: Option<f64>,
    /// Sample standard deviation; `null` with fewer than two samples.
    pub stddev: Option<f64>,
    /// Standard deviation as percent of `|mean|`.
    pub spread_pct: Option<f64>,
    /// Set when a new level starts at this point.
    pub change: Option<LevelChange>,
}

/// A change of level that starts at a point.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LevelChange {
    /// Mean of the point means since the previous change point.
    pub mean_before: f64,
    /// Mean of the point means up to the next change point.
    pub mean_after: f64,
    /// Change from `mean_before`, percent, signed; `null` from zero.
    pub change_pct: Option<f64>,
    /// Two-sided p value of the t-test between the two levels.
    pub p_value: f64,
    /// Better or worse for this metric.
    pub direction: Option<ChangeKind>,
}

/// The history of `options.metric` over `points`.
pub fn history(
    points: &[PointRuns<'_>],
    options: &HistoryOptions,
) -> Result<History, HistoryError> {
    let metric = options.metric;
    let failed = |source| HistoryError::Stats { metric, source };
    let mut out_points = Vec::with_capacity(points.len());
    // Positions (in `out_points`) of the points that have a mean.
    let mut measured: Vec<usize> = Vec::new();
    let mut means: Vec<f64> = Vec::new();
    let mut tests = BTreeSet::new();
    for point in points {
        let samples: Vec<f64> = point
            .runs
            .iter()
            .flat_map(|run| run.samples.iter().copied())
            .collect();
        for run in &point.runs {
            tests.insert(run.test);
        }
        let mean = if samples.is_empty() {
            None
        } else {
            Some(stats::mean(&samples).map_err(failed)?)
        };
        let stddev = if samples.len() > 1 {
            Some(stats::sample_stddev(&samples).map_err(failed)?)
        } else {
            None
        };
        if let Some(mean) = mean {
            measured.push(out_points.len());
            means.push(mean);
        }
        out_points.push(HistoryPoint {
            label: point.label.clone(),
            n_runs: point.runs.len(),
            n_samples: samples.len(),
            mean,
            stddev,
            spread_pct: match (mean, stddev) {
                (Some(mean), Some(stddev)) if mean != 0.0 => Some(stddev / mean.abs() * 100.0),
                _ => None,
            },
            change: None,
        });
    }
    let found = stats::change_points(&means, &options.change_points).map_err(failed)?;
    for change in &found {
        let position = measured[change.index];
        out_points[position].change = Some(LevelChange {
            mean_before: change.mean_before,
            mean_after: change.mean_after,
            change_pct: change.change_pct,
            p_value: change.p_value,
            direction: ChangeKind::of_change(metric, change.mean_before, change.mean_after),
        });
    }
    // The unit of service demand depends on the test kind; a history is
    // filtered to one test by the caller, so the first run decides.
    let first_test = tests.first().copied();
    let unit = match first_test {
        Some(test) => metric.unit(test),
        None => metric.unit(run_record::spec::TestKind::TcpStream),
    };
    Ok(History {
        metric: metric.name().to_string(),
        unit: unit.to_string(),
        higher_is_better: metric.direction().higher_is_better(),
        order: options.order,
        tests: tests.iter().map(|test| test.name().to_string()).collect(),
        alpha: options.change_points.alpha,
        min_segment_len: options.change_points.min_segment_len,
        min_mean: means.iter().copied().reduce(f64::min),
        max_mean: means.iter().copied().reduce(f64::max),
        n_change_points: found.len(),
        points: out_points,
    })
}

/// The points of a history in git order: one per commit of `commits`
/// (oldest first, as the caller's git layer lists them) that has runs,
/// labelled with the commit's first 12 characters. A run belongs to a
/// commit when its `subject.commit` and the commit id agree on the
/// length of the shorter one, which lets abbreviated ids of imported
/// runs match (at least 7 hex digits are needed). Commits without runs
/// are left out.
pub fn points_in_commit_order<'a>(commits: &[String], runs: &'a [SeriesRun]) -> Vec<PointRuns<'a>> {
    commits
        .iter()
        .filter_map(|commit| {
            let matching: Vec<&SeriesRun> = runs
                .iter()
                .filter(|run| {
                    run.commit
                        .as_deref()
                        .is_some_and(|recorded| same_commit(recorded, commit))
                })
                .collect();
            (!matching.is_empty()).then(|| PointRuns {
                label: commit.chars().take(12).collect(),
                runs: matching,
            })
        })
        .collect()
}

/// True when two commit ids, possibly abbreviated, name the same commit.
fn same_commit(recorded: &str, listed: &str) -> bool {
    const MIN_ABBREV: usize = 7;
    let shorter = recorded.len().min(listed.len());
    shorter >= MIN_ABBREV
        && recorded.as_bytes()[..shorter].eq_ignore_ascii_case(&listed.as_bytes()[..shorter])
}

/// The points of a history in time order: one per run, by start time (the
/// id breaks ties), labelled with the start time.
pub fn points_in_time_order(runs: &[SeriesRun]) -> Vec<PointRuns<'_>> {
    let mut ordered: Vec<&SeriesRun> = runs.iter().collect();
    ordered.sort_by(|a, b| (&a.started_at, &a.id).cmp(&(&b.started_at, &b.id)));
    ordered
        .into_iter()
        .map(|run| PointRuns {
            label: run.started_at.clone(),
            runs: vec![run],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use run_record::spec::TestKind;

    /// A run of `commit` at `minute` past midnight, with one sample.
    fn series_run(commit: &str, minute: usize) -> SeriesRun {
        SeriesRun {
            id: format!("{minute:064x}"),
            commit: Some(commit.to_string()),
            started_at: format!("2024-01-01T00:{minute:02}:00Z"),
            test: TestKind::TcpStream,
            spec_key: "0".repeat(64),
            samples: vec![1.0],
        }
    }

    fn commits(n: usize) -> Vec<String> {
        (0..n).map(|idx| format!("{idx:07x}{idx:033x}")).collect()
    }

    #[test]
    fn abbreviated_commits_match_and_unrelated_ones_do_not() {
        assert!(same_commit("abcdef1", "ABCDEF1234567890"));
        assert!(!same_commit("abcdef2", "abcdef1234567890"));
        assert!(!same_commit("abc", "abc1234567"));
        let runs: Vec<SeriesRun> = commits(2)
            .iter()
            .enumerate()
            .map(|(idx, commit)| series_run(commit, idx))
            .collect();
        let listed = vec![commits(2)[1].clone(), "f".repeat(40)];
        let points = points_in_commit_order(&listed, &runs);
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].runs[0].commit, runs[1].commit);
    }
}
