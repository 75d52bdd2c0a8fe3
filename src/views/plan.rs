//! The context of `plan`: the plan of a bisection, as `plan --json`
//! prints it.

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
