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
//! [`bench_core::stats::change_points`], the method of Hunter (M. Fleming
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

use crate::compare::{Direction, metric_unit};
use bench_core::record::{Metric, RecordError, RunRecord};
use bench_core::spec::TestKind;
use bench_core::stats::{self, ChangePointOptions, StatsError};
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

/// What a history needs of one run: where it goes in the series, which
/// configuration it is of, and its values of the history's metric.
/// [`crate::Archive::series_runs`] reads it from the archive's columns;
/// [`SeriesRun::of`] takes it from a record.
#[derive(Clone, Debug, PartialEq)]
pub struct SeriesRun {
    /// Run id.
    pub id: String,
    /// Commit under test.
    pub commit: Option<String>,
    /// Start of the run, RFC 3339.
    pub started_at: String,
    /// Test kind.
    pub test: TestKind,
    /// The run's spec key ([`RunRecord::compute_spec_key`]).
    pub spec_key: String,
    /// The metric's value in each iteration that measured it.
    pub samples: Vec<f64>,
}

impl SeriesRun {
    /// The series run of `record` for `metric`.
    pub fn of(record: &RunRecord, metric: Metric) -> Result<SeriesRun, RecordError> {
        Ok(SeriesRun {
            id: record.id.clone(),
            commit: record.subject.commit.clone(),
            started_at: record.started_at.clone(),
            test: record.spec.test,
            spec_key: record.compute_spec_key()?,
            samples: record.samples(metric),
        })
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
    pub direction: Option<Direction>,
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
            direction: Direction::of_change(metric, change.mean_before, change.mean_after),
        });
    }
    // The unit of service demand depends on the test kind; a history is
    // filtered to one test by the caller, so the first run decides.
    let first_test = tests.first().copied();
    let unit = match first_test {
        Some(test) => metric_unit(metric, test),
        None => metric_unit(metric, bench_core::spec::TestKind::TcpStream),
    };
    Ok(History {
        metric: metric.name().to_string(),
        unit: unit.to_string(),
        higher_is_better: metric.higher_is_better(),
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
    use crate::compare::tests::{Noise, run};
    use bench_core::spec::TestKind;

    /// One run of three iterations per commit, at the given levels.
    /// The throughput series of [`records`].
    fn series(levels: &[f64], seed: u64) -> Vec<SeriesRun> {
        records(levels, seed)
            .iter()
            .map(|record| SeriesRun::of(record, Metric::ThroughputBps).unwrap())
            .collect()
    }

    fn records(levels: &[f64], seed: u64) -> Vec<RunRecord> {
        let mut noise = Noise(seed);
        levels
            .iter()
            .enumerate()
            .map(|(idx, level)| {
                run(
                    TestKind::TcpStream,
                    &format!("{idx:07x}{idx:033x}"),
                    &format!("2024-01-01T00:{:02}:00Z", idx),
                    &noise.around(*level, 0.005, 3),
                    false,
                )
            })
            .collect()
    }

    fn commits(n: usize) -> Vec<String> {
        (0..n).map(|idx| format!("{idx:07x}{idx:033x}")).collect()
    }

    #[test]
    fn marks_a_step_at_the_right_commit() {
        let mut levels = vec![9.4e9; 8];
        levels.extend([9.4e9 * 0.92; 7]);
        let runs = series(&levels, 5);
        let points = points_in_commit_order(&commits(levels.len()), &runs);
        assert_eq!(points.len(), 15);
        assert_eq!(points[3].label, "0000003".to_string() + "00000");
        let history = history(
            &points,
            &HistoryOptions::new(Metric::ThroughputBps, SeriesOrder::Git),
        )
        .unwrap();
        assert_eq!(history.n_change_points, 1);
        assert_eq!(history.unit, "bits/s");
        assert_eq!(history.tests, ["TCP_STREAM"]);
        let marked: Vec<usize> = history
            .points
            .iter()
            .enumerate()
            .filter(|(_, point)| point.change.is_some())
            .map(|(idx, _)| idx)
            .collect();
        assert_eq!(marked, [8]);
        let change = history.points[8].change.as_ref().unwrap();
        let change_pct = change.change_pct.unwrap();
        assert!((change_pct - -8.0).abs() < 0.5, "{change_pct}");
        assert!(change.p_value < 0.001);
        assert_eq!(change.direction, Some(Direction::Regression));
        assert_eq!(history.points[0].n_samples, 3);
        assert!(history.min_mean.unwrap() < 9.4e9 * 0.93);
        assert!(history.max_mean.unwrap() > 9.4e9 * 0.99);
    }

    #[test]
    fn flat_series_has_no_change_point() {
        let runs = series(&[9.4e9; 20], 9);
        let points = points_in_time_order(&runs);
        assert_eq!(points[0].label, "2024-01-01T00:00:00Z");
        let history = history(
            &points,
            &HistoryOptions::new(Metric::ThroughputBps, SeriesOrder::Time),
        )
        .unwrap();
        assert_eq!(history.points.len(), 20);
        assert_eq!(history.n_change_points, 0);
        assert!(history.points.iter().all(|point| point.change.is_none()));
    }

    #[test]
    fn points_without_samples_are_shown_but_not_searched() {
        let mut levels = vec![100.0; 6];
        levels.extend([150.0; 6]);
        let runs = series(&levels, 2);
        let mut points = points_in_commit_order(&commits(levels.len()), &runs);
        // A point with no runs, as a caller may hand over.
        points.insert(
            6,
            PointRuns {
                label: "unmeasured".into(),
                runs: Vec::new(),
            },
        );
        let history = history(
            &points,
            &HistoryOptions::new(Metric::ThroughputBps, SeriesOrder::Git),
        )
        .unwrap();
        assert_eq!(history.points[6].mean, None);
        assert!(history.points[6].change.is_none());
        assert!(history.points[7].change.is_some());
        assert_eq!(history.n_change_points, 1);
    }

    #[test]
    fn template_samples_are_current() {
        use crate::compare::tests::check_template_sample;

        // Throughput across commits in git order, with an 8% drop.
        let mut levels = vec![9.41e9; 8];
        levels.extend([9.41e9 * 0.919; 7]);
        let runs = series(&levels, 21);
        let points = points_in_commit_order(&commits(levels.len()), &runs);
        let step = history(
            &points,
            &HistoryOptions::new(Metric::ThroughputBps, SeriesOrder::Git),
        )
        .unwrap();
        assert_eq!(step.n_change_points, 1);
        check_template_sample("history--throughput-step", &step);

        // p99 latency of request/response runs in time order: up, then
        // partly back down, with a point that has no latency samples.
        let mut noise = Noise(8);
        let mut latency_runs = Vec::new();
        for (idx, level) in [
            45.2, 45.2, 45.2, 45.2, 45.2, 45.2, 52.8, 52.8, 52.8, 52.8, 52.8, 49.1, 49.1, 49.1,
            49.1, 49.1, 49.1,
        ]
        .iter()
        .enumerate()
        {
            let mut record = run(
                TestKind::UdpRr,
                "1a2b3c4d5e6f",
                &format!("2024-02-{:02}T06:30:00Z", idx + 1),
                &[1e6 / level; 3],
                false,
            );
            for iteration in &mut record.iterations {
                if let Some(latency) = iteration.latency.as_mut() {
                    latency.p99_us = level * (1.0 + 0.004 * noise.next());
                }
            }
            record.seal().unwrap();
            latency_runs.push(record);
        }
        let latency_runs: Vec<SeriesRun> = latency_runs
            .iter()
            .map(|record| SeriesRun::of(record, Metric::LatencyP99Us).unwrap())
            .collect();
        let mut points = points_in_time_order(&latency_runs);
        points.insert(
            7,
            PointRuns {
                label: "2024-02-07T18:00:00Z".into(),
                runs: Vec::new(),
            },
        );
        let latency = history(
            &points,
            &HistoryOptions::new(Metric::LatencyP99Us, SeriesOrder::Time),
        )
        .unwrap();
        assert_eq!(latency.n_change_points, 2, "{latency:#?}");
        check_template_sample("history--latency-by-time", &latency);

        // Extremes: 100 Gb/s, long describe labels, no change point.
        let runs = series(&[1.0e11; 6], 4);
        let listed = commits(6);
        let mut points = points_in_commit_order(&listed, &runs);
        for (idx, point) in points.iter_mut().enumerate() {
            point.label = format!("v6.10-rc3-{:05}-g{}-dirty", 1200 + idx, &listed[idx][..12]);
        }
        let flat = history(
            &points,
            &HistoryOptions::new(Metric::ThroughputBps, SeriesOrder::Git),
        )
        .unwrap();
        assert_eq!(flat.n_change_points, 0);
        check_template_sample("history--extreme", &flat);
    }

    #[test]
    fn abbreviated_commits_match_and_unrelated_ones_do_not() {
        assert!(same_commit("abcdef1", "ABCDEF1234567890"));
        assert!(!same_commit("abcdef2", "abcdef1234567890"));
        assert!(!same_commit("abc", "abc1234567"));
        let runs = series(&[1.0, 2.0], 1);
        let listed = vec![commits(2)[1].clone(), "f".repeat(40)];
        let points = points_in_commit_order(&listed, &runs);
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].runs[0].commit, runs[1].commit);
    }
}
