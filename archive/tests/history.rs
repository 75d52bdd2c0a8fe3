//! History through the public API: change points in git and time order,
//! and points without samples. The histories the `history` template is
//! shown on are made in the CLI's own samples.

mod support;

use archive::compare::ChangeKind;
use archive::history::{
    HistoryOptions, PointRuns, SeriesOrder, history, points_in_commit_order, points_in_time_order,
};
use archive::store::SeriesRun;
use run_record::record::{Metric, RunRecord};
use run_record::spec::TestKind;
use support::{Noise, run};

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
    assert_eq!(change.direction, Some(ChangeKind::Regression));
    assert_eq!(history.points[0].n_samples, 3);
    assert!(history.min_mean.unwrap() < 9.4e9 * 0.93);
    assert!(history.max_mean.unwrap() > 9.4e9 * 0.99);
}

#[test]
fn flat_series_has_no_change_point() {
    let runs = series(&[9.4e9; 20], 9);
    let points = points_in_time_order(&runs);
    assert_eq!(points[0].label, "2024-01-01T00:00:00.000000Z");
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
