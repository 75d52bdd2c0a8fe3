//! archive: the SQLite store of run records and the importers that turn
//! results of peer tools into run records.
//!
//! - [`store`]: one SQLite file of canonical run records, keyed by
//!   content id and indexed by commit, label, config_key, testbed, test and
//!   the main metrics; queries for listing, comparing and history; merge
//!   and integrity check.
//! - [`import`]: netperf classic and omni output, iperf3 `-J`, and
//!   canonical run records, detected from content.
//!
//! Architecture invariant: SQL lives in this crate only, and this crate
//! knows nothing of git, the command line or templates. Commit order for
//! history comes from the caller.
#![deny(missing_docs)]

mod error;
pub mod import;
mod schema;
pub mod store;

pub use error::ArchiveError;
pub use store::{
    Archive, CanonicalRun, CheckReport, MergeCounts, MetricValue, RunQuery, StoreCounts,
    StoreOutcome, StoredRun,
};
