//! What a bisection is estimated to take, [`Estimate`]: the output of
//! the planner (`netbisect plan`), and the payload of the journal's
//! `estimate` event, which a bisection writes once its ends are measured.
//! The planner's module makes it; this one only holds the schema, so that
//! the journal and the progress reports need not depend on the simulator.

use serde::{Deserialize, Serialize};

/// The estimate, the schema of `plan --json`'s `estimate` and of the
/// journal's `estimate` event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    /// Commits in the range.
    pub n_commits: usize,
    /// Change to find, percent.
    pub step_pct: f64,
    /// Noise assumed, percent.
    pub cv_pct: f64,
    /// Seconds per measurement assumed.
    pub seconds_per_run: f64,
    /// Simulated bisections the figures come from.
    pub n_trials: u32,
    /// Percent of them that named the right commit.
    pub correct_pct: f64,
    /// Percent of them refused at their ends (absent from estimates
    /// journaled before it was counted).
    #[serde(default)]
    pub refused_pct: f64,
    /// Mean measurements (ends and confirmation included).
    pub mean_measurements: f64,
    /// 95th percentile of the measurements (nearest rank).
    pub p95_measurements: u32,
    /// The most measurements one of them took (absent from estimates
    /// journaled before it was kept).
    #[serde(default)]
    pub max_measurements: u32,
    /// `mean_rounds` times `seconds_per_run`: the wall-clock (with one
    /// job, the measurements').
    pub mean_seconds: f64,
    /// `p95_rounds` times `seconds_per_run`.
    pub p95_seconds: f64,
    /// Mean measurements after the ends (steps and confirmation): what
    /// is left once the ends are measured.
    pub mean_after_ends: f64,
    /// 95th percentile of those (nearest rank).
    pub p95_after_ends: u32,
    /// Measurements run at once (absent from estimates of one at a time
    /// journaled before they were counted).
    #[serde(default = "one_job")]
    pub jobs: u32,
    /// Mean rounds: the wall-clock in units of one measurement, ends and
    /// confirmation included; the measurements, with one job (absent
    /// from estimates journaled before they were counted).
    #[serde(default)]
    pub mean_rounds: f64,
    /// 95th percentile of the rounds (nearest rank).
    #[serde(default)]
    pub p95_rounds: u32,
}

impl Estimate {
    /// The wall-clock the rest takes, mean and 95th percentile, in
    /// seconds; `None` before a measurement was timed. With several jobs
    /// the measurements of the rest are taken at the ratio of rounds to
    /// measurements of the whole bisection, so that every place that
    /// says what is left says the same.
    pub fn rest_seconds(&self) -> Option<[f64; 2]> {
        if self.seconds_per_run <= 0.0 {
            return None;
        }
        let wall = if self.jobs > 1 && self.mean_measurements > 0.0 {
            (self.mean_rounds / self.mean_measurements).min(1.0)
        } else {
            1.0
        };
        Some(
            [self.mean_after_ends, f64::from(self.p95_after_ends)]
                .map(|runs| runs * self.seconds_per_run * wall),
        )
    }
}

fn one_job() -> u32 {
    1
}
