//! Samples of `bisect-status`: a throughput bisection under way and
//! finished, and a latency bisection under way.

use super::Sample;
use super::bisect::{commit, estimate, throughput_steps};
use crate::views::bisect_status::{STATUS_SCHEMA, StatusContext, StatusDoc};
use bisect::estimate::Estimate;
use bisect::progress::Phase;

/// The status of the bisection of the samples' range at step 3 of
/// `metric`, two steps classified.
fn in_progress(metric: &str, estimate: Estimate) -> StatusDoc {
    StatusDoc {
        schema: STATUS_SCHEMA,
        session: 1,
        repo: "/src/netdemo".into(),
        good: commit(0),
        bad: commit(29),
        n_commits: 29,
        metric: metric.into(),
        phase: Phase::Steps,
        state: "running",
        next_commit: Some(commit(19)),
        next_n_samples: 1,
        candidates_left: 7,
        est_steps_left: 3,
        n_measurements: 26,
        n_events: 56,
        steps: throughput_steps()[..2].to_vec(),
        estimate: Some(estimate),
    }
}

pub fn samples() -> Vec<Sample> {
    let running = in_progress(
        "throughput_bps",
        Estimate {
            n_commits: 29,
            step_pct: 98.9,
            cv_pct: 2.1,
            seconds_per_run: 1.8,
            n_trials: 300,
            correct_pct: 100.0,
            mean_measurements: 31.2,
            p95_measurements: 40,
            mean_seconds: 56.16,
            p95_seconds: 72.0,
            mean_after_ends: 22.6,
            p95_after_ends: 30,
            ..estimate()
        },
    );
    // Latency in microseconds, and no time per run known yet.
    let mut latency = in_progress(
        "latency_p99_us",
        Estimate {
            n_commits: 29,
            step_pct: 12.5,
            cv_pct: 3.2,
            n_trials: 300,
            correct_pct: 99.3,
            mean_measurements: 61.0,
            p95_measurements: 90,
            mean_after_ends: 52.0,
            p95_after_ends: 80,
            ..estimate()
        },
    );
    latency.steps[0].mean = 231.465;
    latency.steps[1].mean = 2.167;
    let finished = StatusDoc {
        phase: Phase::Confirm,
        state: "first_bad",
        next_commit: None,
        next_n_samples: 0,
        candidates_left: 1,
        est_steps_left: 0,
        n_measurements: 43,
        steps: throughput_steps(),
        estimate: Some(Estimate {
            n_commits: 29,
            step_pct: 5.0,
            cv_pct: 1.0,
            seconds_per_run: 95.0,
            n_trials: 300,
            correct_pct: 99.7,
            mean_measurements: 180.0,
            p95_measurements: 240,
            mean_seconds: 17100.0,
            p95_seconds: 22800.0,
            mean_after_ends: 172.4,
            p95_after_ends: 231,
            ..estimate()
        }),
        ..in_progress("throughput_bps", estimate())
    };
    // Three jobs at once: the time left at the rounds' pace, as the
    // progress line says it.
    let jobs = in_progress(
        "throughput_bps",
        Estimate {
            jobs: 3,
            mean_rounds: 14.1,
            p95_rounds: 19,
            ..running.estimate.clone().unwrap()
        },
    );
    [
        ("in-progress", running),
        ("jobs-in-progress", jobs),
        ("latency-in-progress", latency),
        ("finished", finished),
    ]
    .iter()
    .map(|(case, status)| Sample::new("bisect-status", case, &StatusContext::new(status)))
    .collect()
}
