//! What a bisection says of itself: where it is ([`Phase`]), what it is
//! about to do before every fresh measurement ([`Progress`]), and where
//! it stands from its journal alone ([`Status`]). The command-line tool
//! prints them; the engine makes them.

use crate::ends::{Difference, EndsWait};
use crate::estimate::Estimate;
use crate::graph::CommitInfo;
use crate::report::{Outcome, StepReport};
use serde::{Deserialize, Serialize};

/// Where the bisection is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Measuring the good and bad ends.
    Ends,
    /// Walking the range.
    Steps,
    /// Extra repeats on the culprit and its parent.
    Confirm,
}

/// Progress, reported before every fresh measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Progress<'a> {
    /// Where the bisection is.
    pub phase: Phase,
    /// While the ends are measured: why, and how many repeats it takes
    /// at most.
    pub ends: Option<EndsProgress>,
    /// Number of the step (the commit being classified), from 1; 0 while
    /// measuring the ends.
    pub step: u32,
    /// Estimated total number of steps (steps so far + log2 of what is
    /// left).
    pub est_steps_total: u32,
    /// Estimated samples left before the culprit is named (confirmation
    /// excluded), when the method can tell.
    pub est_samples_left: Option<u32>,
    /// The commit about to be measured.
    pub commit: &'a CommitInfo,
    /// Samples of that commit so far.
    pub n_samples: u32,
    /// Samples taken over the whole bisection so far.
    pub n_measurements: u32,
    /// Commits that may still be the culprit.
    pub candidates_left: u32,
    /// What the rest was estimated to take once the ends were measured.
    pub estimate: Option<&'a Estimate>,
}

/// Why the ends are being measured, and for how long at most.
#[derive(Clone, Debug, PartialEq)]
pub struct EndsProgress {
    /// Why: each end's first repeats, or more because their difference
    /// is unclear (or their midpoint is, for the sequential method).
    pub wait: EndsWait,
    /// Repeats of each end so far (the fewer of the two).
    pub n_each: u32,
    /// The most repeats of each end: a difference still unclear there is
    /// refused.
    pub max_each: u32,
    /// Their difference so far, with its interval at
    /// [`crate::ends::END_CONFIDENCE`] (`None` before three repeats of
    /// each end).
    pub difference: Option<Difference>,
}

/// Where a bisection stands, from its journal alone.
#[derive(Clone, Debug, PartialEq)]
pub struct Status {
    /// Where it is.
    pub phase: Phase,
    /// The commit it will measure next; `None` when finished.
    pub next_commit: Option<CommitInfo>,
    /// Samples of that commit so far.
    pub next_n_samples: u32,
    /// Steps classified so far.
    pub steps: Vec<StepReport>,
    /// Commits that may still be the culprit.
    pub candidates_left: u32,
    /// Estimated steps left.
    pub est_steps_left: u32,
    /// Samples taken so far.
    pub n_measurements: u32,
    /// What the rest was estimated to take once the ends were measured.
    pub estimate: Option<Estimate>,
    /// The outcome, when finished.
    pub outcome: Option<Outcome>,
}
