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

/// Takes up to K measurements at once, each on a numbered slot (0 to
/// K - 1): K testbeds, K VMs, K worktrees.
pub trait SlotMeasurer {
    /// As [`Measurer::archived`].
    fn archived(&mut self, commit: &CommitInfo) -> Result<Vec<Sample>, BoxError> {
        let _ = commit;
        Ok(Vec::new())
    }

    /// Starts one repeat of `commit` on `slot`, which is free, and
    /// returns at once.
    fn start(&mut self, slot: usize, commit: &CommitInfo) -> Result<(), BoxError>;

    /// Waits until a repeat started ends, and returns its slot and what
    /// it gave: a measurement, or the error that broke the measuring
    /// (not a skip). `Err` when no slot can tell (nothing runs, or the
    /// measurer itself failed).
    fn finished(&mut self) -> Result<(usize, Result<Measurement, BoxError>), BoxError>;

    /// As [`Measurer::seconds_per_sample`]: the wall time of one repeat
    /// on one slot.
    fn seconds_per_sample(&self) -> Option<f64> {
        None
    }
}
