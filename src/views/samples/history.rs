//! Samples of `history`: throughput across commits in git order with an
//! 8% drop, p99 latency in time order (up, partly back down, a point
//! without samples), and extremes (100 Gb/s, long describe labels, no
//! change point).

use super::Sample;
use crate::views::history::HistoryContext;
use crate::views::units::Units;
use archive::history::{
    History, HistoryOptions, PointRuns, SeriesOrder, history, points_in_commit_order,
    points_in_time_order,
};
use archive::store::SeriesRun;
use run_record::record::Metric;
use run_record::spec::TestKind;
use test_fixtures::noise::Noise;
use test_fixtures::record::sampled_run;

/// The commits of a range of `n`, as 40 hex digits that count.
fn commits(n: usize) -> Vec<String> {
    (0..n).map(|idx| format!("{idx:07x}{idx:033x}")).collect()
}

/// A TCP_STREAM run of three iterations per commit of [`commits`], at
/// the throughput `levels`, scattered by half a percent from `seed`.
fn throughput_series(levels: &[f64], seed: u64) -> Vec<SeriesRun> {
    let mut noise = Noise(seed);
    commits(levels.len())
        .iter()
        .zip(levels)
        .enumerate()
        .map(|(idx, (commit, level))| {
            let record = sampled_run(
                TestKind::TcpStream,
                commit,
                &format!("2024-01-01T00:{idx:02}:00Z"),
                &noise.around(*level, 0.005, 3),
                false,
            );
            SeriesRun::of(&record, Metric::ThroughputBps).expect("a run of throughput")
        })
        .collect()
}

fn history_of(points: &[PointRuns<'_>], metric: Metric, order: SeriesOrder) -> History {
    history(points, &HistoryOptions::new(metric, order)).expect("a history of the samples")
}

fn throughput_step() -> History {
    let mut levels = vec![9.41e9; 8];
    levels.extend([9.41e9 * 0.919; 7]);
    let runs = throughput_series(&levels, 21);
    let points = points_in_commit_order(&commits(levels.len()), &runs);
    let step = history_of(&points, Metric::ThroughputBps, SeriesOrder::Git);
    assert_eq!(step.n_change_points, 1);
    step
}

fn latency_by_time() -> History {
    let mut noise = Noise(8);
    let levels = [
        45.2, 45.2, 45.2, 45.2, 45.2, 45.2, 52.8, 52.8, 52.8, 52.8, 52.8, 49.1, 49.1, 49.1, 49.1,
        49.1, 49.1,
    ];
    let runs: Vec<SeriesRun> = levels
        .iter()
        .enumerate()
        .map(|(idx, level)| {
            let mut record = sampled_run(
                TestKind::UdpRr,
                "1a2b3c4d5e6f",
                &format!("2024-02-{:02}T06:30:00Z", idx + 1),
                &[1e6 / level; 3],
                false,
            );
            for latency in record.iterations.iter_mut().flat_map(|it| &mut it.latency) {
                latency.p99_us = level * (1.0 + 0.004 * noise.next_value());
            }
            record.seal().expect("the record seals again");
            SeriesRun::of(&record, Metric::LatencyP99Us).expect("a run of latency")
        })
        .collect();
    let mut points = points_in_time_order(&runs);
    points.insert(
        7,
        PointRuns {
            label: "2024-02-07T18:00:00Z".into(),
            runs: Vec::new(),
        },
    );
    let latency = history_of(&points, Metric::LatencyP99Us, SeriesOrder::Time);
    assert_eq!(latency.n_change_points, 2, "{latency:#?}");
    latency
}

fn extreme() -> History {
    let runs = throughput_series(&[1.0e11; 6], 4);
    let listed = commits(6);
    let mut points = points_in_commit_order(&listed, &runs);
    for (idx, point) in points.iter_mut().enumerate() {
        point.label = format!("v6.10-rc3-{:05}-g{}-dirty", 1200 + idx, &listed[idx][..12]);
    }
    let flat = history_of(&points, Metric::ThroughputBps, SeriesOrder::Git);
    assert_eq!(flat.n_change_points, 0);
    flat
}

pub fn samples() -> Vec<Sample> {
    [
        ("throughput-step", throughput_step()),
        ("latency-by-time", latency_by_time()),
        ("extreme", extreme()),
    ]
    .iter()
    .map(|(case, history)| {
        let units = Units::parse("m").expect("netperf's m");
        Sample::new("history", case, &HistoryContext::new(history, units))
    })
    .collect()
}
