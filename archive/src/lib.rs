//! archive: the store of run records, in a SQLite file or a PostgreSQL
//! database, the importers that turn results of peer tools into run
//! records, and the statistics over stored runs.
//!
//! - [`store`]: canonical run records keyed by content id and indexed by
//!   commit, label, config_key, testbed, test and the main metrics;
//!   queries for listing, comparing and history; merge (between any two
//!   archives), integrity check, and prune (removing the runs of a
//!   selection that no bisection or regression cites). [`Archive`] is the one front door;
//!   behind it each backend implements the same primitives.
//! - [`location`]: where an archive lives, a file path or a
//!   `postgres://` address, shown without its password, with what bounds
//!   a session with the server (`connect_timeout`, `statement_timeout`,
//!   `lock_timeout`).
//! - [`import`]: netperf classic and omni output, uperf's text output,
//!   iperf3 `-J`, and canonical run records, detected from content.
//! - [`compare`]: current versus patched, group by group, with a
//!   significance verdict per metric.
//! - [`figures`]: titles and command lines of specs, and the figures of
//!   a side in netperf's columns, for the tables of a comparison.
//! - [`history`]: a metric across commits (or time) with change points.
//! - [`journal`]: bisection sessions and their journals of events, one
//!   durable append at a time.
//! - [`lab`]: a lab that runs itself: the queue of the workers' jobs
//!   under leases, the trackers' regressions and the outbox of their
//!   reports.
//!
//! Architecture invariant: SQL lives in this crate only, and this crate
//! knows nothing of git, the command line or templates. Commit order for
//! history comes from the caller.
//!
//! # Example
//!
//! A netperf result imported into an archive in a temporary directory,
//! then read back: its record by a query, its canonical bytes by an
//! abbreviated id.
//!
//! ```
//! use archive::import::{self, ImportOptions};
//! use archive::{Archive, RunQuery, StoreOutcome};
//!
//! let netperf = "\
//! MIGRATED TCP STREAM TEST from 0.0.0.0 (0.0.0.0) port 0 AF_INET to 127.0.0.1 () port 0 AF_INET : demo
//! Recv   Send    Send
//! Socket Socket  Message  Elapsed
//! Size   Size    Size     Time     Throughput
//! bytes  bytes   bytes    secs.    10^6bits/sec
//!
//! 131072  16384  16384    10.00    11967.53
//! ";
//! let imported = import::parse(netperf.as_bytes(), &ImportOptions::default())?;
//! let run = &imported.runs[0];
//!
//! let dir = tempfile::tempdir()?;
//! let mut archive = Archive::open(&dir.path().join("runs.db"))?;
//! assert_eq!(archive.store(run)?, StoreOutcome::Added);
//! assert_eq!(archive.store(run)?, StoreOutcome::AlreadyPresent);
//!
//! assert_eq!(archive.records(&RunQuery::default())?, [run.record().clone()]);
//! let (stored, bytes) = archive.find(&run.record().id[..12])?;
//! assert_eq!(stored.source_tool, "netperf");
//! assert_eq!(bytes, run.bytes());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

pub mod compare;
mod error;
pub mod figures;
pub mod history;
pub mod import;
pub mod journal;
pub mod lab;
pub mod location;
mod schema;
pub mod store;

pub use error::ArchiveError;
pub use location::Location;
/// The newest schema version of an archive file this build writes and
/// reads.
pub use schema::CURRENT_VERSION as FILE_SCHEMA_VERSION;
pub use store::{
    Archive, CanonicalRun, CheckReport, MergeCounts, MetricValue, RefusedRun, RunQuery,
    StoreCounts, StoreOutcome, StoredRun,
};
