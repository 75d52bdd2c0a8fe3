//! [`EngineError`]: why a bisection stopped without an outcome (a range
//! that cannot be bisected, an end that cannot be measured, a measurer or
//! a journal that failed, a journal of another bisection, a signal).

use crate::graph::GraphError;
use crate::journal::BoxError;

/// Why a bisection stopped without an outcome.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The range is not bisectable.
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// An end could not be measured.
    #[error("cannot measure the {end} commit {commit}: {reason}")]
    EndUnmeasurable {
        /// `good` or `bad`.
        end: &'static str,
        /// Commit id.
        commit: String,
        /// Why.
        reason: String,
    },
    /// The measurer failed (not a skip: the measuring itself broke).
    #[error("measuring {commit} failed")]
    Measure {
        /// Commit id.
        commit: String,
        /// The measurer's error.
        #[source]
        source: BoxError,
    },
    /// A signal stopped the bisection (journaled).
    #[error("stopped while measuring {commit}")]
    Interrupted {
        /// The commit being measured.
        commit: String,
        /// The signal.
        #[source]
        source: child_process::interrupt::Interrupted,
    },
    /// Reading or writing the journal failed.
    #[error("journal failed")]
    Journal(#[source] BoxError),
    /// The bisection was started with another number of jobs than asked.
    #[error(
        "this bisection was started with --jobs {journaled}: resume it with \
         --jobs {journaled}, or without --jobs"
    )]
    Jobs {
        /// The jobs of the journal.
        journaled: u32,
        /// The jobs asked.
        asked: u32,
    },
    /// More than one job asked of a journal written by a netbisect that
    /// records one measurement at a time.
    #[error(
        "this bisection was started by an older netbisect, whose journal records one \
         measurement at a time: resume it without --jobs, or start it again"
    )]
    JobsUnrecorded,
    /// The journal belongs to another bisection or was written by an
    /// incompatible version.
    #[error("the journal does not match this bisection: {0}")]
    JournalMismatch(String),
}
