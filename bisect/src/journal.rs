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
//! interval and the cap, as they were written); version 1.3 the `jobs`
//! of `start` (how many measurements run at once, 1 when absent), the
//! `started` event and the `slot` of `sample` and `skip`, which a
//! bisection of more than one job writes so that its replay knows what
//! was in flight at every choice. Journals of versions 1 to 1.2 are read
//! too; a netbisect that reads only those refuses a 1.3 journal, whose
//! measurements in flight it would not know.

use crate::config::BisectConfig;
use crate::decision::Verdict;
use crate::estimate::Estimate;
use serde::{Deserialize, Serialize};

/// The schema of journal events this crate writes and reads.
pub const JOURNAL_SCHEMA: &str = "netbisect.bisect-journal/1.3";

/// Every schema of journal this crate reads: its own, and the older ones
/// of its major version (which lack only events added since).
pub const JOURNAL_SCHEMAS_READ: [&str; 4] = [
    "netbisect.bisect-journal/1",
    "netbisect.bisect-journal/1.1",
    "netbisect.bisect-journal/1.2",
    JOURNAL_SCHEMA,
];

/// Whether a journal of `schema` can record measurements in flight on
/// several slots (version 1.3 and later).
pub fn schema_has_jobs(schema: &str) -> bool {
    JOURNAL_SCHEMAS_READ[3..].contains(&schema)
}

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
        /// Measurements run at once (`bisect run --jobs`); 1, one at a
        /// time, when absent.
        #[serde(default = "one_job", skip_serializing_if = "is_one_job")]
        jobs: u32,
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
    /// A repeat of `commit` started on `slot` (bisections of more than
    /// one job): it is in flight until its `sample` or `skip` of the same
    /// slot.
    Started {
        /// Commit id.
        commit: String,
        /// The slot, from 0.
        slot: u32,
    },
    /// One fresh repeat of `commit`.
    Sample {
        /// Commit id.
        commit: String,
        /// The measured sample.
        sample: JournalSample,
        /// The slot it ran on (bisections of more than one job).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slot: Option<u32>,
    },
    /// `commit` could not be built or measured.
    Skip {
        /// Commit id.
        commit: String,
        /// Why, in a few words.
        reason: String,
        /// The slot it ran on (bisections of more than one job).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        slot: Option<u32>,
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

fn one_job() -> u32 {
    1
}

fn is_one_job(jobs: &u32) -> bool {
    *jobs == 1
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
