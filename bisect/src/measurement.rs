//! What measuring a commit once gives ([`Measurement`]: a [`Sample`] or a
//! skip) and the [`Measurer`] trait the engine takes its measurements
//! through: the command-line tool measures real commits (the `measure`
//! module builds one from commands), the simulator noisy histories.

use crate::graph::CommitInfo;
use crate::journal::BoxError;

/// One fresh repeat from a [`Measurer`].
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// The metric's value.
    pub value: f64,
    /// Id of the run record, when there is one.
    pub run_id: Option<String>,
}

/// What measuring a commit once gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Measurement {
    /// A value.
    Sample(Sample),
    /// The commit cannot be measured (build failed, timed out, exit 125):
    /// it is skipped, as `git bisect run` skips on exit 125.
    Skip(String),
}

/// Takes measurements of commits.
pub trait Measurer {
    /// Samples of `commit` measured before, under the same configuration
    /// (the archive's runs with the same commit and config_key). Asked
    /// once per commit per bisection.
    fn archived(&mut self, commit: &CommitInfo) -> Result<Vec<Sample>, BoxError> {
        let _ = commit;
        Ok(Vec::new())
    }

    /// Measures `commit` once (one repeat: one build if needed, one run).
    fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError>;

    /// Wall time of one repeat (build included), seconds, for the
    /// estimate of the rest that the engine's `run` journals once the
    /// ends are measured (made by the planner). `None`, the default, makes
    /// no estimate: the simulations the estimate itself runs use it.
    fn seconds_per_sample(&self) -> Option<f64> {
        None
    }
}
