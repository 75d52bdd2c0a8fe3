//! The bisection journal: every measurement and every decision, in the
//! order they happened, written before the next step starts, so that a
//! bisection killed at any moment resumes where it stopped.
//!
//! The journal is a list of [`JournalEvent`]s behind the [`Journal`]
//! trait. The command-line tool keeps it in the archive; tests and
//! simulations keep it in memory ([`MemoryJournal`]). Events serialise as
//! JSON objects tagged by `"event"` (`start`, `archived`, `sample`,
//! `skip`, `verdict`, `estimate`, `interrupted`, `finished`); the first
//! event of a journal is a `start` naming the schema, [`JOURNAL_SCHEMA`].
//! Version 1.1 added `estimate`; version 1.2 the `ends_test` of the
//! decision's options in `start` (journals without it refuse only on the
//! interval and the cap, as they were written). Journals of versions 1
//! and 1.1 are read too; a netbisect that reads only those refuses a 1.2
//! journal, whose ends it would judge otherwise.

use crate::config::BisectConfig;
use crate::decision::Verdict;
use crate::estimate::Estimate;
use serde::{Deserialize, Serialize};

/// The schema of journal events this crate writes and reads.
pub const JOURNAL_SCHEMA: &str = "netbisect.bisect-journal/1.2";

/// Every schema of journal this crate reads: its own, and the older ones
/// of its major version (which lack only events added since).
pub const JOURNAL_SCHEMAS_READ: [&str; 3] = [
    "netbisect.bisect-journal/1",
    "netbisect.bisect-journal/1.1",
    JOURNAL_SCHEMA,
];

/// An error from a trait implementation supplied by the caller.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// One measured repeat, as journaled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JournalSample {
    /// The metric's value in this repeat.
    pub value: f64,
    /// Id of the run record the value came from, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
}

/// One entry of the journal.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum JournalEvent {
    /// The bisection started: what it bisects, and how.
    Start {
        /// Always [`JOURNAL_SCHEMA`].
        schema: String,
        /// Good end, full commit id.
        good: String,
        /// Bad end, full commit id.
        bad: String,
        /// Whether only first parents are followed.
        first_parent: bool,
        /// The options of the bisection.
        config: BisectConfig,
    },
    /// Samples of `commit` found already measured (in the archive) when
    /// the bisection first came to it. Written even when empty, so that a
    /// resumed bisection does not look again.
    Archived {
        /// Commit id.
        commit: String,
        /// The samples found.
        samples: Vec<JournalSample>,
    },
    /// One fresh repeat of `commit`.
    Sample {
        /// Commit id.
        commit: String,
        /// The measured sample.
        sample: JournalSample,
    },
    /// `commit` could not be built or measured.
    Skip {
        /// Commit id.
        commit: String,
        /// Why, in a few words.
        reason: String,
    },
    /// A commit of the range was classified.
    Verdict {
        /// Commit id.
        commit: String,
        /// The verdict.
        verdict: Verdict,
        /// Samples it was decided on.
        n_samples: u32,
        /// Log-likelihood ratio of new against old at the decision.
        llr: f64,
    },
    /// Once the ends were measured: what the rest of the bisection was
    /// estimated to take (the planner's estimate from the ends' samples).
    /// Written once, for `status` and the progress lines; replay does not
    /// depend on it.
    Estimate {
        /// The estimate.
        estimate: Estimate,
    },
    /// A signal stopped the bisection while it measured `commit`; the
    /// repeat was thrown away and is taken again on resume.
    Interrupted {
        /// Commit id.
        commit: String,
        /// `SIGINT` or `SIGTERM`.
        signal: String,
    },
    /// The bisection ended.
    Finished {
        /// `first_bad`, `range` or `refused`.
        result: String,
        /// The first bad commit, when one was found.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
    },
}

/// Where a bisection keeps its journal.
pub trait Journal {
    /// Every event written so far, oldest first.
    fn load(&mut self) -> Result<Vec<JournalEvent>, BoxError>;
    /// Appends one event durably: when this returns, the event survives a
    /// crash.
    fn append(&mut self, event: &JournalEvent) -> Result<(), BoxError>;
}

/// A journal in memory.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MemoryJournal {
    /// The events, oldest first.
    pub events: Vec<JournalEvent>,
}

impl Journal for MemoryJournal {
    fn load(&mut self) -> Result<Vec<JournalEvent>, BoxError> {
        Ok(self.events.clone())
    }

    fn append(&mut self, event: &JournalEvent) -> Result<(), BoxError> {
        self.events.push(event.clone());
        Ok(())
    }
}

/// A journal that remembers nothing (simulations that never resume).
#[derive(Clone, Copy, Debug, Default)]
pub struct NullJournal;

impl Journal for NullJournal {
    fn load(&mut self) -> Result<Vec<JournalEvent>, BoxError> {
        Ok(Vec::new())
    }

    fn append(&mut self, _event: &JournalEvent) -> Result<(), BoxError> {
        Ok(())
    }
}
