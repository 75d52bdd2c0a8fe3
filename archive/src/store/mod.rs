//! The store: one SQLite file holding every run record verbatim.
//!
//! Each run is kept as its canonical bytes (RFC 8785) under its content id,
//! beside indexed columns for the queries `list`, `compare` and `history`
//! make: commit, describe, label, config_key, testbed, test, source tool,
//! start time and one column per
//! [`Metric`]. Storing a run whose id is
//! already present changes nothing, which makes imports and merges
//! idempotent.
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
//! Reading ([`Archive::open_read_only`]) never creates a file and works on
//! an archive the user may only read: a file or directory without write
//! permission, or a read-only mount, is opened `immutable` (no locks, no
//! `-wal` or `-shm` left behind to lock the owner out), or read-only
//! through the owner's `-wal` when a writer is active.
//!
//! The parts: [`Archive`] and [`CanonicalRun`] here; `open` (opening,
//! creating and migrating a file, the checks before the first write, and
//! what a failure is called), `write` (storing and merging runs), `query`
//! (the selections `list`, `show`, `compare` and `history` make) and
//! `check` (`archive check`).

use crate::ArchiveError;
use run_record::canonical;
use run_record::record::{Metric, RecordError, RunRecord};
use rusqlite::Connection;
use serde_json::Value;
use std::path::{Path, PathBuf};

mod check;
mod open;
mod postgres;
mod query;
mod series;
mod write;

pub(crate) use self::postgres::PgArchive;
use crate::location::Location;

pub use check::{CheckReport, DamagedRun};
pub use open::BUSY_TIMEOUT;
use query::Order;
pub use query::{MetricValue, RunQuery, StoredRun};
pub use series::SeriesRun;
pub use write::{MergeCounts, StoreCounts, StoreOutcome};

/// A validated run record together with its canonical bytes, ready to
/// store.
#[derive(Clone, Debug)]
pub struct CanonicalRun {
    record: RunRecord,
    bytes: Vec<u8>,
}

impl CanonicalRun {
    /// Wraps a sealed record; fails when its id is not that of its content
    /// (call [`RunRecord::seal`] first).
    pub fn from_record(record: RunRecord) -> Result<CanonicalRun, ArchiveError> {
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
        let record = RunRecord::from_slice(text)?;
        let struct_bytes = record.to_canonical_bytes()?;
        // Input that is already canonical (the usual case for JSON lines)
        // needs no second pass; anything else is canonicalised from the
        // document as written, so no member is lost.
        let bytes = if struct_bytes == text.trim_ascii() {
            struct_bytes
        } else {
            let tree: Value = serde_json::from_slice(text)
                .map_err(|err| RecordError::Invalid(err.to_string()))?;
            canonical::to_canonical_bytes(&tree)?
        };
        Ok(CanonicalRun { record, bytes })
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

/// An open archive, on whichever backend holds it.
///
/// Every public read and write is here; each backend implements the few
/// primitives these are made of (storing a batch, selecting runs, their
/// records, a metric, a history's series, the check, the journal), so
/// that what a caller sees, and the refusals of damaged runs, are the
/// same on both.
pub struct Archive {
    backend: Backend,
}

/// The backends an archive can live on.
pub(crate) enum Backend {
    /// One SQLite file.
    Sqlite(SqliteArchive),
    /// A PostgreSQL database (boxed: its client is several times the
    /// size of a SQLite connection).
    Postgres(Box<PgArchive>),
}

/// Calls the same method of whichever backend is behind `$archive`.
macro_rules! dispatch {
    ($archive:expr, $backend:ident => $call:expr) => {
        match $archive {
            Backend::Sqlite($backend) => $call,
            Backend::Postgres($backend) => $call,
        }
    };
}
pub(crate) use dispatch;

/// An open SQLite archive file.
pub(crate) struct SqliteArchive {
    pub(crate) connection: Connection,
    path: PathBuf,
    /// Whether `quick_check` is due before the first write.
    check_before_write: std::cell::Cell<bool>,
}

impl Archive {
    /// Opens the archive file at `path`, creating it (not its directory)
    /// when absent and bringing an older schema up to date. Refuses files
    /// that are not archives, are damaged or have a newer schema, without
    /// writing to them.
    pub fn open(path: &Path) -> Result<Archive, ArchiveError> {
        Ok(Archive {
            backend: Backend::Sqlite(SqliteArchive::open(path, &mut |_| {})?),
        })
    }

    /// Opens the archive file at `path` for reading: never creates it (a
    /// missing file is [`ArchiveError::NoArchive`]) and never leaves
    /// files beside it that the owner could not use. An archive this user
    /// may write is opened as by [`Archive::open`].
    pub fn open_read_only(path: &Path) -> Result<Archive, ArchiveError> {
        Ok(Archive {
            backend: Backend::Sqlite(SqliteArchive::open_read_only(path, &mut |_| {})?),
        })
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
        let backend = match location {
            Location::File(path) => Backend::Sqlite(SqliteArchive::open(path, notice)?),
            Location::Server(address) => {
                Backend::Postgres(Box::new(PgArchive::open(address, notice)?))
            }
        };
        Ok(Archive { backend })
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
        let backend = match location {
            Location::File(path) => Backend::Sqlite(SqliteArchive::open_read_only(path, notice)?),
            Location::Server(address) => {
                Backend::Postgres(Box::new(PgArchive::open_read_only(address)?))
            }
        };
        Ok(Archive { backend })
    }

    /// Where this archive lives, as it may be shown (an address without
    /// its password).
    pub fn location(&self) -> Location {
        match &self.backend {
            Backend::Sqlite(sqlite) => Location::File(sqlite.path.clone()),
            Backend::Postgres(postgres) => Location::Server(Box::new(postgres.address.clone())),
        }
    }

    pub(crate) fn backend(&self) -> &Backend {
        &self.backend
    }

    pub(crate) fn backend_mut(&mut self) -> &mut Backend {
        &mut self.backend
    }

    /// The schema version of the archive.
    pub fn schema_version(&self) -> Result<u32, ArchiveError> {
        dispatch!(&self.backend, backend => backend.schema_version())
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
        dispatch!(&mut self.backend, backend => backend.store_all(runs))
    }

    /// Copies into this archive every run of the archive file at `other`
    /// that it lacks. Each copied run is verified first. Merging the same
    /// archive again adds nothing. Between two files this is one
    /// transaction; see [`Archive::merge`] otherwise.
    pub fn merge_from(&mut self, other: &Path) -> Result<MergeCounts, ArchiveError> {
        self.merge(&Location::File(other.to_path_buf()))
    }

    /// Copies into this archive every run of the archive at `other` that
    /// it lacks, from either backend into either, verifying each run
    /// first. Between two SQLite files this is one transaction; otherwise
    /// the runs are read as a stream and stored [`MERGE_BATCH`] at a
    /// time, each batch one transaction, so that a merge cut short keeps
    /// whole batches and a second merge completes it. Merging the same
    /// archive again adds nothing.
    pub fn merge(&mut self, other: &Location) -> Result<MergeCounts, ArchiveError> {
        if let (Backend::Sqlite(sqlite), Location::File(path)) = (&mut self.backend, other) {
            return sqlite.merge_from(path);
        }
        let source = Archive::open_location_read_only(other)?;
        let mut counts = MergeCounts::default();
        let mut batch = Vec::with_capacity(MERGE_BATCH);
        let mut store_batch = |archive: &mut Archive, batch: &mut Vec<CanonicalRun>| {
            let stored = archive.store_all(batch)?;
            counts.added += stored.added;
            counts.already_present += stored.already_present;
            batch.clear();
            Ok::<(), ArchiveError>(())
        };
        source.for_each_record(&RunQuery::default(), |run, bytes| {
            let damaged = |detail: String| ArchiveError::DamagedRun {
                id: run.id.clone(),
                detail: format!("in {other}: {detail}"),
            };
            let canonical =
                CanonicalRun::from_json(bytes).map_err(|err| damaged(err.to_string()))?;
            if canonical.record.id != run.id {
                return Err(damaged(format!(
                    "the record's id is {}",
                    canonical.record.id
                )));
            }
            batch.push(canonical);
            if batch.len() == MERGE_BATCH {
                store_batch(self, &mut batch)?;
            }
            Ok(())
        })?;
        store_batch(self, &mut batch)?;
        counts.examined = counts.added + counts.already_present;
        Ok(counts)
    }

    /// Number of runs stored.
    pub fn count(&self) -> Result<u64, ArchiveError> {
        dispatch!(&self.backend, backend => backend.count())
    }

    /// The runs `query` selects, oldest first, without their records.
    pub fn runs(&self, query: &RunQuery) -> Result<Vec<StoredRun>, ArchiveError> {
        dispatch!(&self.backend, backend => backend.runs_in_order(query, Order::OldestFirst))
    }

    /// The runs `query` selects, newest first, without their records; its
    /// limit keeps the newest.
    pub fn runs_newest_first(&self, query: &RunQuery) -> Result<Vec<StoredRun>, ArchiveError> {
        dispatch!(&self.backend, backend => backend.runs_in_order(query, Order::NewestFirst))
    }

    /// Calls `visit` with each selected run and its canonical bytes,
    /// oldest first, without holding them all in memory.
    pub fn for_each_record<E, F>(&self, query: &RunQuery, visit: F) -> Result<(), E>
    where
        E: From<ArchiveError>,
        F: FnMut(&StoredRun, &[u8]) -> Result<(), E>,
    {
        dispatch!(&self.backend, backend => backend.for_each_record(query, visit))
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
            let n_matches = dispatch!(&self.backend, backend => backend.count_matching(&query))?;
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
        dispatch!(&self.backend, backend => backend.metric_values(query, metric))
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
        dispatch!(&self.backend, backend => backend.series_runs(query, metric))
    }

    /// Checks the archive (the database's own checks, foreign keys) and
    /// every stored run: its bytes decode to a valid record whose id and
    /// indexed columns match the row, and its history row matches the
    /// record.
    pub fn check(&self) -> Result<CheckReport, ArchiveError> {
        dispatch!(&self.backend, backend => backend.check())
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

/// Runs per transaction of a merge that is not between two files.
pub const MERGE_BATCH: usize = 1000;

/// `bytes` read as the record of run `id`; a record that does not decode
/// or verify is [`ArchiveError::DamagedRun`].
pub(crate) fn decode_stored(id: &str, bytes: &[u8]) -> Result<RunRecord, ArchiveError> {
    RunRecord::from_slice(bytes).map_err(|err| ArchiveError::DamagedRun {
        id: id.to_string(),
        detail: err.to_string(),
    })
}

#[cfg(test)]
mod tests;
