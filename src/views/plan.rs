//! The context of `plan`: the plan of a bisection, as `plan --json`
//! prints it, and its times as people read them.

use crate::views::bisection::duration;
use bisect::estimate::Estimate;
use serde::Serialize;

/// The output of `plan --json`.
#[derive(Debug, Serialize)]
pub struct Plan {
    /// Test name of the spec.
    pub test: String,
    /// The metric a bisection of it follows.
    pub metric: String,
    /// Where the noise came from: `archive` or `given`.
    pub noise_from: &'static str,
    /// Where the seconds per run came from: `archive`, `spec` or `given`.
    pub seconds_from: &'static str,
    /// Archived runs of the same spec, testbed and config_key that were
    /// read.
    pub n_archived_runs: usize,
    /// The config_key of those runs: the newest matching run's (`null`
    /// when none was read).
    pub config_key: Option<String>,
    /// Percent of bisections a bisection aims to get right.
    pub target_pct: f64,
    /// The estimate.
    pub estimate: Estimate,
}

/// What the `plan` template is given.
#[derive(Debug, Serialize)]
pub struct PlanContext<'a> {
    /// The plan, as `plan --json` prints it.
    #[serde(flatten)]
    pub plan: &'a Plan,
    /// The time a bisection takes, mean and 95th percentile, as people
    /// read a time (`16.9 h`).
    pub time: [String; 2],
}

impl<'a> PlanContext<'a> {
    /// The context of `plan`.
    pub fn new(plan: &'a Plan) -> PlanContext<'a> {
        let estimate = &plan.estimate;
        PlanContext {
            plan,
            time: [estimate.mean_seconds, estimate.p95_seconds].map(duration),
        }
    }
}
