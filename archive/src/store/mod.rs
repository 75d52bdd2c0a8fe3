//! The store: every run record verbatim, in a SQLite file or a
//! PostgreSQL database, behind one [`Archive`].
//!
//! Each run is kept as its canonical bytes (RFC 8785) under its content
//! id, beside indexed columns for the queries `list`, `compare` and
//! `history` make: commit, describe, label, config_key, testbed, test,
//! source tool, start time and one column per [`Metric`], and a history
//! row (`run_series`) of its samples. Storing a run whose id is already
//! present changes nothing, which makes imports and merges idempotent.
//! Every write is one transaction, so a process killed at any moment
//! leaves either all or none of it.
//!
//! The seam: [`Archive`] holds a `Box<dyn Backend>`. `Backend`
//! (`backend.rs`) says what a backend provides: a few primitives
//! (storing a batch, selecting runs in order, walking their records,
//! counting, a metric's values, a history's series, the check, and the
//! sessions of the journal), from which `Archive` makes every public read
//! and write, with the order of runs, the verification of records as
//! they are read and the errors the same on both. `sqlite/`
//! (`SqliteArchive`) and `postgres/` (`PgArchive`) implement it; each
//! writes its own SQL (from one builder, `query.rs`, where the dialects
//! differ in parameters and prefix matches) and reads each row through
//! one decoder per stored type over either driver's row (`row.rs`).
//!
//! The parts: [`Archive`] and [`CanonicalRun`] here; `backend` (the
//! trait); `query` ([`RunQuery`], [`StoredRun`], [`MetricValue`] and the
//! SQL of a selection), `series` ([`SeriesRun`]), `session` (what a
//! bisection session is), `write` (what storing counts and the values a
//! run is stored under), `check` ([`CheckReport`] and the checks of a
//! run's rows), `row` (reading a row of either driver); then the two
//! backends.

use crate::ArchiveError;
use crate::location::Location;
use run_record::record::{Metric, RecordError, RunRecord};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

mod backend;
mod check;
pub(crate) mod lab;
mod merge;
mod postgres;
mod prune;
mod query;
mod row;
mod series;
pub(crate) mod session;
mod sqlite;
mod write;

use self::postgres::PgArchive;
use self::sqlite::SqliteArchive;
use backend::Backend;

pub use check::{CheckReport, DamagedRun};
pub use prune::{Citation, KeptRun, PruneSelection, Pruned};
use query::Order;
pub use query::{MetricValue, RunQuery, StoredRun};
pub use series::SeriesRun;
pub use sqlite::BUSY_TIMEOUT;
pub use write::{MergeCounts, RefusedRun, StoreCounts, StoreOutcome};

/// A validated run record together with its canonical bytes, ready to
/// store.
#[derive(Clone, Debug)]
pub struct CanonicalRun {
    record: RunRecord,
    bytes: Vec<u8>,
}

impl CanonicalRun {
    /// Wraps a sealed record; fails when its id is not that of its content
    /// (call [`RunRecord::seal`] first), when a name of it is beyond what
    /// every archive stores ([`RunRecord::check_names`]), or when it is
    /// beyond the limits every record is read with
    /// ([`RunRecord::check_limits`]), so that nothing is stored that could
    /// not be read back.
    pub fn from_record(record: RunRecord) -> Result<CanonicalRun, ArchiveError> {
        record.check_names()?;
        record.check_limits().map_err(RecordError::from)?;
        let computed = record.compute_id()?;
        if computed != record.id {
            return Err(ArchiveError::NotSealed {
                stated: record.id,
                computed,
            });
        }
        let bytes = record.to_canonical_bytes()?;
        Ok(CanonicalRun { record, bytes })
    }

    /// Reads and validates one JSON run record (any formatting) and keeps
    /// its canonical form. Members a newer minor revision added are kept.
    pub fn from_json(text: &[u8]) -> Result<CanonicalRun, RecordError> {
        // The canonical form of the document as written, so that no member
        // is lost; checking its id writes it.
        let (record, bytes) = RunRecord::read_canonical(text)?;
        Ok(CanonicalRun { record, bytes })
    }

    /// The run stored as `id` with `bytes` in another archive, checked
    /// before it is copied into this one: bytes the record check refuses
    /// (a damaged run, or one stored before a limit of the check), or the
    /// record of another id, are the [`RefusedRun`] a merge reports.
    pub(crate) fn copied(id: &str, bytes: &[u8]) -> Result<CanonicalRun, RefusedRun> {
        let refused = |reason: String| RefusedRun {
            id: id.to_string(),
            reason,
        };
        let run = CanonicalRun::from_json(bytes).map_err(|err| refused(err.to_string()))?;
        if run.record.id != id {
            return Err(refused(format!("its record's id is {}", run.record.id)));
        }
        Ok(run)
    }

    /// The record.
    pub fn record(&self) -> &RunRecord {
        &self.record
    }

    /// Its canonical bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// A schema upgrade about to start, for a caller that tells its user:
/// the first writer to open a large archive of an older schema waits
/// while it is converted (a minute and more for a million runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Upgrade {
    /// The archive's schema version.
    pub from: u32,
    /// The version it is brought to.
    pub to: u32,
}

/// What is called just before an upgrade starts.
pub type UpgradeNotice<'a> = &'a mut dyn FnMut(Upgrade);

/// A statement of the archive's that waits for a lock another session
/// holds (a table locked by another program, another writer's long
/// transaction, another netbisect's upgrade), for a caller that tells
/// its user ([`Archive::report_lock_waits`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LockWait {
    /// How long the statement has waited so far.
    pub waited: Duration,
}

/// What is called, on a thread of the archive's own, while a statement
/// waits for a lock: when the wait is first seen, then every few
/// seconds until it ends.
pub type LockWaitReport = Arc<dyn Fn(LockWait) + Send + Sync>;

/// An open archive, on whichever backend holds it.
///
/// Every public read and write is here; each backend implements the few
/// primitives these are made of (`Backend`: storing a batch, selecting
/// runs, their records, a metric, a history's series, the check, the
/// journal), so that what a caller sees, and the refusals of damaged
/// runs, are the same on both.
pub struct Archive {
    backend: Box<dyn Backend>,
    /// Who hears of lock waits, also those of an archive a merge reads.
    lock_waits: Option<LockWaitReport>,
}

impl Archive {
    /// Opens the archive file at `path`, creating it (not its directory)
    /// when absent and bringing an older schema up to date. Refuses files
    /// that are not archives, are damaged or have a newer schema, without
    /// writing to them.
    pub fn open(path: &Path) -> Result<Archive, ArchiveError> {
        Ok(Archive::of(Box::new(SqliteArchive::open(
            path,
            &mut |_| {},
        )?)))
    }

    /// Opens the archive file at `path` for reading: never creates it (a
    /// missing file is [`ArchiveError::NoArchive`]) and never leaves
    /// files beside it that the owner could not use. An archive this user
    /// may write is opened as by [`Archive::open`].
    pub fn open_read_only(path: &Path) -> Result<Archive, ArchiveError> {
        Ok(Archive::of(Box::new(SqliteArchive::open_read_only(
            path,
            &mut |_| {},
        )?)))
    }

    /// Opens the archive at `location`, as [`Archive::open`] does a file;
    /// a PostgreSQL database without the archive's tables gets them, one
    /// of another program or with a newer schema is refused before
    /// anything is written.
    pub fn open_location(location: &Location) -> Result<Archive, ArchiveError> {
        Archive::open_location_noting(location, &mut |_| {})
    }

    /// Opens the archive at `location` as [`Archive::open_location`]
    /// does, calling `notice` just before an older schema is upgraded
    /// (which on a large archive takes a while).
    pub fn open_location_noting(
        location: &Location,
        notice: UpgradeNotice<'_>,
    ) -> Result<Archive, ArchiveError> {
        let backend: Box<dyn Backend> = match location {
            Location::File(path) => Box::new(SqliteArchive::open(path, notice)?),
            Location::Server(address) => Box::new(PgArchive::open(address, notice)?),
        };
        Ok(Archive::of(backend))
    }

    /// Opens the archive at `location` for reading, as
    /// [`Archive::open_read_only`] does a file: nothing is created.
    pub fn open_location_read_only(location: &Location) -> Result<Archive, ArchiveError> {
        Archive::open_location_read_only_noting(location, &mut |_| {})
    }

    /// Opens the archive at `location` for reading as
    /// [`Archive::open_location_read_only`] does, calling `notice` just
    /// before a file this user may write is upgraded.
    pub fn open_location_read_only_noting(
        location: &Location,
        notice: UpgradeNotice<'_>,
    ) -> Result<Archive, ArchiveError> {
        let backend: Box<dyn Backend> = match location {
            Location::File(path) => Box::new(SqliteArchive::open_read_only(path, notice)?),
            Location::Server(address) => Box::new(PgArchive::open_read_only(address)?),
        };
        Ok(Archive::of(backend))
    }

    fn of(backend: Box<dyn Backend>) -> Archive {
        Archive {
            backend,
            lock_waits: None,
        }
    }

    /// From now on, calls `report` while a statement of this archive
    /// waits for a lock another session holds. On PostgreSQL a thread
    /// watches the statements that run for over a second (from a second
    /// connection, opened only then) and calls `report` when the server
    /// shows one waiting, then every 5 s while it waits; the server's
    /// `lock_timeout` ends the wait. A SQLite file's waits for another
    /// writer are bounded by [`BUSY_TIMEOUT`] and not reported.
    pub fn report_lock_waits(&mut self, report: LockWaitReport) {
        self.backend.report_lock_waits(Arc::clone(&report));
        self.lock_waits = Some(report);
    }

    /// Where this archive lives, as it may be shown (an address without
    /// its password).
    pub fn location(&self) -> Location {
        self.backend.location()
    }

    /// The backend, for the journal's reads.
    pub(crate) fn backend(&self) -> &dyn Backend {
        &*self.backend
    }

    /// The backend, for the journal's writes.
    pub(crate) fn backend_mut(&mut self) -> &mut dyn Backend {
        &mut *self.backend
    }

    /// The schema version of the archive.
    pub fn schema_version(&self) -> Result<u32, ArchiveError> {
        self.backend.schema_version()
    }

    /// Stores one run; a run already present is left as it is.
    pub fn store(&mut self, run: &CanonicalRun) -> Result<StoreOutcome, ArchiveError> {
        let counts = self.store_all(std::slice::from_ref(run))?;
        Ok(if counts.added == 1 {
            StoreOutcome::Added
        } else {
            StoreOutcome::AlreadyPresent
        })
    }

    /// Stores every run in one transaction: all of them or, on failure,
    /// none.
    pub fn store_all(&mut self, runs: &[CanonicalRun]) -> Result<StoreCounts, ArchiveError> {
        self.backend.store_all(runs)
    }

    /// Number of runs stored.
    pub fn count(&self) -> Result<u64, ArchiveError> {
        self.backend.count()
    }

    /// The runs `query` selects, oldest first, without their records.
    pub fn runs(&self, query: &RunQuery) -> Result<Vec<StoredRun>, ArchiveError> {
        self.backend.runs_in_order(query, Order::OldestFirst)
    }

    /// The runs `query` selects, newest first, without their records; its
    /// limit keeps the newest.
    pub fn runs_newest_first(&self, query: &RunQuery) -> Result<Vec<StoredRun>, ArchiveError> {
        self.backend.runs_in_order(query, Order::NewestFirst)
    }

    /// Calls `visit` with each selected run and its canonical bytes,
    /// oldest first, without holding them all in memory; the first error
    /// `visit` returns ends the walk and is returned. `visit` may read
    /// this archive again, on either backend.
    pub fn for_each_record<E, F>(&self, query: &RunQuery, mut visit: F) -> Result<(), E>
    where
        E: From<ArchiveError>,
        F: FnMut(&StoredRun, &[u8]) -> Result<(), E>,
    {
        let mut failure = None;
        self.backend
            .for_each_record(query, &mut |run, bytes| match visit(run, bytes) {
                Ok(()) => ControlFlow::Continue(()),
                Err(err) => {
                    failure = Some(err);
                    ControlFlow::Break(())
                }
            })?;
        failure.map_or(Ok(()), Err)
    }

    /// Checks stored bytes against the run's id column: they must read as
    /// a valid record (schema, numbers, id and config_key of its content)
    /// whose id is that of the row. A tampered or damaged run is
    /// [`ArchiveError::DamagedRun`].
    pub fn verify_stored(run: &StoredRun, bytes: &[u8]) -> Result<(), ArchiveError> {
        Archive::stored_record(run, bytes).map(drop)
    }

    /// The record of stored bytes, checked as [`Archive::verify_stored`]
    /// checks them, for a caller that reads the record as well.
    pub fn stored_record(run: &StoredRun, bytes: &[u8]) -> Result<RunRecord, ArchiveError> {
        let damaged = |detail: String| ArchiveError::DamagedRun {
            id: run.id.clone(),
            detail,
        };
        let record = RunRecord::from_slice(bytes).map_err(|err| damaged(err.to_string()))?;
        if record.id != run.id {
            return Err(damaged(format!("its bytes are those of run {}", record.id)));
        }
        Ok(record)
    }

    /// The decoded records of the selected runs, oldest first. Each is
    /// verified (schema, id, config_key) as it is read.
    pub fn records(&self, query: &RunQuery) -> Result<Vec<RunRecord>, ArchiveError> {
        let mut records = Vec::new();
        self.for_each_record(query, |run, bytes| {
            records.push(decode_stored(&run.id, bytes)?);
            Ok::<(), ArchiveError>(())
        })?;
        Ok(records)
    }

    /// The one run whose id starts with `id_prefix`, and its canonical
    /// bytes.
    pub fn find(&self, id_prefix: &str) -> Result<(StoredRun, Vec<u8>), ArchiveError> {
        if id_prefix.is_empty() {
            return Err(ArchiveError::InvalidQuery("empty run id".to_string()));
        }
        let query = RunQuery {
            id_prefix: Some(id_prefix.to_string()),
            limit: Some(2),
            ..RunQuery::default()
        };
        let mut found = Vec::new();
        self.for_each_record(&query, |run, bytes| {
            found.push((run.clone(), bytes.to_vec()));
            Ok::<(), ArchiveError>(())
        })?;
        if found.len() > 1 {
            let n_matches = self.backend.count_matching(&query)?;
            return Err(ArchiveError::AmbiguousId {
                prefix: id_prefix.to_string(),
                n_matches: usize::try_from(n_matches).unwrap_or(usize::MAX),
            });
        }
        found
            .pop()
            .ok_or_else(|| ArchiveError::NoSuchRun(id_prefix.to_string()))
    }

    /// The run-level value of `metric` for each selected run that has it,
    /// oldest first. Reads indexed columns only.
    pub fn metric_values(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Vec<MetricValue>, ArchiveError> {
        self.backend.metric_values(query, metric)
    }

    /// What a history of `metric` needs of each selected run, oldest
    /// first, from the columns filled when the run was stored: no record
    /// is decoded or verified (`archive check` does that). `None` when
    /// the archive is older than those columns (one opened read-only at
    /// an older schema): read the records then ([`SeriesRun::of`]).
    pub fn series_runs(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Option<Vec<SeriesRun>>, ArchiveError> {
        self.backend.series_runs(query, metric)
    }

    /// Removes the runs `selection` selects, but those a bisection or a
    /// lab regression cites (see [`Citation`]), with their history rows,
    /// in one transaction; with `dry_run`, says what would be removed and
    /// changes nothing. A selection of every run is the caller's to
    /// refuse or allow ([`PruneSelection::is_narrowed`]).
    pub fn prune(
        &mut self,
        selection: &PruneSelection,
        dry_run: bool,
    ) -> Result<Pruned, ArchiveError> {
        self.backend.prune(selection, dry_run)
    }

    /// Gives the space of removed runs back to the file system: a file
    /// is rewritten whole (`VACUUM`, which needs as much free space as
    /// the file takes and waits for every reader); `false` on PostgreSQL,
    /// whose autovacuum makes the space of deleted rows reusable.
    pub fn vacuum(&mut self) -> Result<bool, ArchiveError> {
        self.backend.vacuum().transpose().map(|done| done.is_some())
    }

    /// Checks the archive (the database's own checks, foreign keys) and
    /// every stored run: its bytes decode to a valid record whose id and
    /// indexed columns match the row, and its history row matches the
    /// record.
    pub fn check(&self) -> Result<CheckReport, ArchiveError> {
        self.backend.check()
    }

    /// Checks the archive at `location` as it is, without creating,
    /// migrating or writing it: a damaged file still gets a report, with
    /// what could not be read in [`CheckReport::unreadable`].
    pub fn check_location(location: &Location) -> Result<CheckReport, ArchiveError> {
        match location {
            Location::File(path) => SqliteArchive::check_file(path),
            Location::Server(_) => Archive::open_location_read_only(location)?.check(),
        }
    }
}

pub use merge::MERGE_BATCH;

/// `bytes` read as the record of run `id`; a record that does not decode
/// or verify is [`ArchiveError::DamagedRun`].
pub(crate) fn decode_stored(id: &str, bytes: &[u8]) -> Result<RunRecord, ArchiveError> {
    RunRecord::from_slice(bytes).map_err(|err| ArchiveError::DamagedRun {
        id: id.to_string(),
        detail: err.to_string(),
    })
}
