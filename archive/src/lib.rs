//! archive: the SQLite store of run records, the importers that turn
//! results of peer tools into run records, and the statistics over stored
//! runs.
//!
//! - [`store`]: one SQLite file of canonical run records, keyed by
//!   content id and indexed by commit, label, config_key, testbed, test and
//!   the main metrics; queries for listing, comparing and history; merge
//!   and integrity check.
//! - [`import`]: netperf classic and omni output, iperf3 `-J`, and
//!   canonical run records, detected from content.
//! - [`compare`]: current versus patched, group by group, with a
//!   significance verdict per metric.
//! - [`figures`]: titles and command lines of specs, and the figures of
//!   a side in netperf's columns, for the tables of a comparison.
//! - [`history`]: a metric across commits (or time) with change points.
//! - [`journal`]: bisection sessions and their journals of events, one
//!   durable append at a time.
//!
//! Architecture invariant: SQL lives in this crate only, and this crate
//! knows nothing of git, the command line or templates. Commit order for
//! history comes from the caller.
#![deny(missing_docs)]

pub mod compare;
mod error;
pub mod figures;
pub mod history;
pub mod import;
pub mod journal;
mod schema;
pub mod store;

pub use error::ArchiveError;
pub use store::{
    Archive, CanonicalRun, CheckReport, MergeCounts, MetricValue, RunQuery, StoreCounts,
    StoreOutcome, StoredRun,
};
