//! The context of `bisect-status`: where a bisection stands, the
//! document `bisect status --json` prints, and beside it the figures of
//! the table of steps and the estimate's time as printed.

use crate::views::bisection::{StepRow, duration, step_rows, unit_of};
use bisect::estimate::Estimate;
use bisect::graph::CommitInfo;
use bisect::progress::Phase;
use bisect::report::StepReport;
use serde::Serialize;

/// Schema of [`StatusDoc`].
pub const STATUS_SCHEMA: &str = "netbisect.bisect-status/1";
/// Where a bisection stands, for `status --json`.
#[derive(Debug, Serialize)]
pub struct StatusDoc {
    /// Always [`STATUS_SCHEMA`].
    pub schema: &'static str,
    /// Session id.
    pub session: i64,
    /// The repository.
    pub repo: String,
    /// Good end.
    pub good: CommitInfo,
    /// Bad end.
    pub bad: CommitInfo,
    /// Commits in the range.
    pub n_commits: u32,
    /// Metric bisected on.
    pub metric: String,
    /// Where the bisection is.
    pub phase: Phase,
    /// `running`, `first_bad`, `range` or `refused`.
    pub state: &'static str,
    /// The commit measured next.
    pub next_commit: Option<CommitInfo>,
    /// Its samples so far.
    pub next_n_samples: u32,
    /// Commits that may still be the culprit.
    pub candidates_left: u32,
    /// Estimated steps left.
    pub est_steps_left: u32,
    /// Samples taken so far, archived ones included.
    pub n_measurements: u32,
    /// Events in the journal.
    pub n_events: u64,
    /// Steps classified so far.
    pub steps: Vec<StepReport>,
    /// What the rest was estimated to take once the ends were measured
    /// (`null` before, or when the ends gave no usable step).
    pub estimate: Option<Estimate>,
}

/// What the `bisect-status` template is given.
#[derive(Debug, Serialize)]
pub struct StatusContext<'a> {
    /// The status, as `bisect status --json` prints it.
    #[serde(flatten)]
    pub status: &'a StatusDoc,
    /// The unit of the metric's figures (`10^6bits/s`, `usec`).
    pub unit: String,
    /// The steps so far, as the table of steps prints them.
    pub step_rows: Vec<StepRow>,
    /// The step under way, from 1.
    pub step_now: usize,
    /// The steps the whole bisection is expected to take.
    pub steps_expected: usize,
    /// What the estimate says the rest takes, mean and 95th percentile,
    /// as people read a time; none before a measurement was timed.
    pub rest_time: Option<[String; 2]>,
}

impl<'a> StatusContext<'a> {
    /// The context of `status`.
    pub fn new(status: &'a StatusDoc) -> StatusContext<'a> {
        // The progress line's words, with the jobs the bisection runs.
        let rest_time = status
            .estimate
            .as_ref()
            .and_then(Estimate::rest_seconds)
            .map(|seconds| seconds.map(duration));
        StatusContext {
            status,
            unit: unit_of(&status.metric),
            step_rows: step_rows(&status.metric, &status.steps),
            step_now: status.steps.len() + 1,
            steps_expected: status.steps.len() + status.est_steps_left as usize,
            rest_time,
        }
    }
}
