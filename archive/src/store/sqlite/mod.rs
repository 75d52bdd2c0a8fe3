//! The archive in one SQLite file, holding every run record verbatim.
//!
//! Durability and concurrency: the file is in WAL mode with foreign keys
//! on; every write is one `BEGIN IMMEDIATE` transaction, so a process
//! killed at any moment leaves either all or none of a write, and
//! concurrent writers wait for each other (busy timeout) instead of
//! failing, while readers keep reading the last committed state.
//! `synchronous = NORMAL` keeps commits durable across a crash of the
//! process; only a power loss can undo the last commits, never corrupt
//! the file.
//!
//! A file that is not an archive, is damaged, or has a newer schema is
//! refused with an error before anything is written to it. Before the
//! first write of an open archive, `PRAGMA quick_check` runs, whatever
//! the file's size (it reads every page once: 0.5-0.75 s for 294 MiB,
//! as `scripts/bench-quick-check.sh` measured it); a damaged file
//! refuses writes and names `netbisect archive check`.
//!
//! Reading ([`crate::Archive::open_read_only`]) never creates a file and
//! works on an archive the user may only read: a file or directory
//! without write permission, or a read-only mount, is opened `immutable`
//! (no locks, no `-wal` or `-shm` left behind to lock the owner out), or
//! read-only through the owner's `-wal` when a writer is active.
//!
//! The parts: [`SqliteArchive`] and its [`Backend`] here; `open`
//! (opening, creating and migrating a file, the checks before the first
//! write, and what a failure is called), `write` (storing and merging
//! runs), `storer` (who writes them), `query` (the selections), `check`
//! (`archive check`), `prune` (removing runs nothing cites, and
//! `VACUUM`), `journal` (the bisection sessions) and `lab` (the lab's
//! tables).

use crate::ArchiveError;
use crate::location::Location;
use crate::store::backend::{Backend, RecordVisitor};
use crate::store::check::CheckReport;
use crate::store::prune::{PruneSelection, Pruned};
use crate::store::query::{MetricValue, Order, RunQuery, StoredRun};
use crate::store::write::{MergeCounts, StoreCounts};
use crate::store::{CanonicalRun, LockWaitReport, SeriesRun};
use run_record::record::Metric;
use rusqlite::Connection;
use std::cell::Cell;
use std::path::{Path, PathBuf};

mod check;
mod journal;
mod lab;
mod open;
mod path_kind;
mod prune;
mod query;
mod storer;
mod write;

#[cfg(test)]
mod tests;

pub use open::BUSY_TIMEOUT;

/// An open SQLite archive file.
pub(crate) struct SqliteArchive {
    connection: Connection,
    path: PathBuf,
    /// Whether `quick_check` is due before the first write.
    check_before_write: Cell<bool>,
}

impl SqliteArchive {
    /// Checks the file at `path` as it is, without creating, migrating
    /// or writing it: a damaged file gets a report of what could be read.
    /// Only a file that is no archive (or of a newer schema) is an error.
    pub(crate) fn check_file(path: &Path) -> Result<CheckReport, ArchiveError> {
        let connection = SqliteArchive::checking_connection(path)?;
        check::check_connection(&connection, path)
    }
}

impl Backend for SqliteArchive {
    fn location(&self) -> Location {
        Location::File(self.path.clone())
    }

    fn schema_version(&self) -> Result<u32, ArchiveError> {
        open::read_header(&self.connection, &self.path)
    }

    fn store_all(&mut self, runs: &[CanonicalRun]) -> Result<StoreCounts, ArchiveError> {
        self.check_before_write()?;
        write::store_all(&mut self.connection, runs).map_err(|err| self.write_error(err))
    }

    fn merge_file(&mut self, path: &Path) -> Option<Result<MergeCounts, ArchiveError>> {
        Some(self.check_before_write().and_then(|()| {
            write::merge_from(&mut self.connection, path).map_err(|err| self.write_error(err))
        }))
    }

    fn count(&self) -> Result<u64, ArchiveError> {
        query::count(&self.connection)
    }

    fn count_matching(&self, query: &RunQuery) -> Result<u64, ArchiveError> {
        query::count_matching(&self.connection, query)
    }

    fn runs_in_order(
        &self,
        query: &RunQuery,
        order: Order,
    ) -> Result<Vec<StoredRun>, ArchiveError> {
        query::runs_in_order(&self.connection, self.schema_version()?, query, order)
    }

    fn for_each_record(
        &self,
        query: &RunQuery,
        visit: RecordVisitor<'_>,
    ) -> Result<(), ArchiveError> {
        query::for_each_record(&self.connection, self.schema_version()?, query, visit)
    }

    fn metric_values(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Vec<MetricValue>, ArchiveError> {
        query::metric_values(&self.connection, query, metric)
    }

    fn series_runs(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Option<Vec<SeriesRun>>, ArchiveError> {
        query::series_runs(&self.connection, self.schema_version()?, query, metric)
    }

    fn check(&self) -> Result<CheckReport, ArchiveError> {
        check::check_connection(&self.connection, &self.path)
    }

    fn prune(&mut self, selection: &PruneSelection, dry_run: bool) -> Result<Pruned, ArchiveError> {
        prune::prune(self, selection, dry_run)
    }

    fn vacuum(&mut self) -> Option<Result<(), ArchiveError>> {
        Some(prune::vacuum(self))
    }

    /// Nothing is reported: a file's writers wait for each other at most
    /// [`BUSY_TIMEOUT`], and readers never wait.
    fn report_lock_waits(&mut self, report: LockWaitReport) {
        let _ = report;
    }
}
