//! Samples of `plan`: noise from the archive, a range of ten thousand
//! commits with an hour a run, and four measurements at once.

use super::Sample;
use crate::views::plan::{Plan, PlanContext};
use bisect::estimate::Estimate;

/// A plan of `test` on `metric` with `estimate`, the rest as `plan`
/// fills it without an archive.
fn plan(test: &str, metric: &str, sources: [&'static str; 2], estimate: Estimate) -> Plan {
    Plan {
        test: test.into(),
        metric: metric.into(),
        noise_from: sources[0],
        seconds_from: sources[1],
        n_archived_runs: 0,
        config_key: None,
        target_pct: 95.0,
        estimate,
    }
}

pub fn samples() -> Vec<Sample> {
    let archived = Plan {
        n_archived_runs: 4,
        config_key: Some("b194ba492bee8b7b9c8015e8dfaf628c8c3cacc7be3738d3269853ec57d49856".into()),
        ..plan(
            "TCP_RR",
            "transaction_rate",
            ["archive", "archive"],
            Estimate {
                n_commits: 64,
                step_pct: 5.0,
                cv_pct: 41.0656416638713,
                seconds_per_run: 0.30041109575,
                n_trials: 10,
                correct_pct: 0.0,
                mean_measurements: 830.0,
                p95_measurements: 6500,
                mean_seconds: 249.34120947250003,
                p95_seconds: 1952.672122375,
                ..super::bisect::estimate()
            },
        )
    };
    let extreme = plan(
        "TCP_STREAM",
        "throughput_bps",
        ["given", "spec"],
        Estimate {
            n_commits: 10000,
            step_pct: 2.0,
            cv_pct: 8.0,
            seconds_per_run: 60.0,
            n_trials: 10,
            correct_pct: 0.0,
            mean_measurements: 1015.3,
            p95_measurements: 6647,
            mean_seconds: 60918.0,
            p95_seconds: 398820.0,
            ..super::bisect::estimate()
        },
    );
    let jobs = plan(
        "TCP_RR",
        "transaction_rate",
        ["given", "given"],
        Estimate {
            n_commits: 1024,
            step_pct: 5.0,
            cv_pct: 2.0,
            seconds_per_run: 600.0,
            n_trials: 300,
            correct_pct: 100.0,
            mean_measurements: 66.3,
            p95_measurements: 81,
            mean_seconds: 13320.0,
            p95_seconds: 15600.0,
            jobs: 4,
            mean_rounds: 22.2,
            p95_rounds: 26,
            ..super::bisect::estimate()
        },
    );
    [
        ("archived-noise", archived),
        ("extreme", extreme),
        ("jobs", jobs),
    ]
    .iter()
    .map(|(case, plan)| Sample::new("plan", case, &PlanContext::new(plan)))
    .collect()
}
