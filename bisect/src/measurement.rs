//! What measuring a commit once gives ([`Measurement`]: a [`Sample`] or a
//! skip) and the traits the engine takes its measurements through:
//! [`Measurer`], one at a time, and [`SlotMeasurer`], several at once on
//! numbered slots. The command-line tool measures real commits (the
//! `measure` module builds a [`Measurer`] from commands), the simulator
//! noisy histories. The engine's one loop runs on slots; a [`Measurer`]
//! is its one slot through `OneSlot`.

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

/// A [`Measurer`] as the one slot of a bisection of one job: a repeat
/// is taken when the loop waits for it, so that each starts after the
/// one before has been journaled and fed.
pub(crate) struct OneSlot<'a> {
    measurer: &'a mut dyn Measurer,
    /// The commit of the repeat started and not taken yet.
    started: Option<CommitInfo>,
}

impl<'a> OneSlot<'a> {
    /// `measurer` as one slot.
    pub(crate) fn new(measurer: &'a mut dyn Measurer) -> OneSlot<'a> {
        OneSlot {
            measurer,
            started: None,
        }
    }
}

impl SlotMeasurer for OneSlot<'_> {
    fn archived(&mut self, commit: &CommitInfo) -> Result<Vec<Sample>, BoxError> {
        self.measurer.archived(commit)
    }

    fn start(&mut self, _slot: usize, commit: &CommitInfo) -> Result<(), BoxError> {
        self.started = Some(commit.clone());
        Ok(())
    }

    fn finished(&mut self) -> Result<(usize, Result<Measurement, BoxError>), BoxError> {
        let commit = self.started.take().ok_or("no repeat was started")?;
        Ok((0, self.measurer.measure(&commit)))
    }

    fn seconds_per_sample(&self) -> Option<f64> {
        self.measurer.seconds_per_sample()
    }
}
