//! The context of `bisect-status`: where a bisection stands, the
//! document `bisect status --json` prints.

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
