//! The store: one SQLite file holding every run record verbatim.
//!
//! Each run is kept as its canonical bytes (RFC 8785) under its content id,
//! beside indexed columns for the queries `list`, `compare` and `history`
//! make: commit, describe, label, config_key, testbed, test, source tool,
//! start time and one column per [`Metric`]. Storing a run whose id is
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
//! first write of an open archive, `PRAGMA quick_check` runs when the
//! file was not closed cleanly (a `-wal` file was there) or is small
//! enough for the check to take well under a second
//! ([`QUICK_CHECK_MAX_BYTES`]); on larger files SQLite's own checks of
//! the pages a write touches stand guard. A damaged file refuses writes
//! and names `netbisect archive check`.
//!
//! Reading ([`Archive::open_read_only`]) never creates a file and works on
//! an archive the user may only read: a file or directory without write
//! permission, or a read-only mount, is opened `immutable` (no locks, no
//! `-wal` or `-shm` left behind to lock the owner out), or read-only
//! through the owner's `-wal` when a writer is active.

use crate::ArchiveError;
use crate::history::SeriesRun;
use crate::schema::{self, APPLICATION_ID, CURRENT_VERSION, MIGRATIONS, V2_METRICS};
use bench_core::canonical;
use bench_core::record::{Metric, RecordError, RunRecord};
use bench_core::spec::TestKind;
use rusqlite::{Connection, ErrorCode, OpenFlags, TransactionBehavior, params};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

/// Length of a full id or config_key: 64 hex digits of blake3.
const FULL_HASH_LEN: usize = 64;

/// `runs` with each run's history row, if any, on the whole key of
/// `run_series` ([`schema`] version 6).
const SERIES_JOIN: &str = "runs LEFT JOIN run_series ON run_series.config_key = runs.config_key \
                           AND run_series.started_at = runs.started_at \
                           AND run_series.run_id = runs.id";

/// [`SERIES_JOIN`] at schema version 5, read where the file may not be
/// upgraded: `run_series` keyed by the run id alone.
const SERIES_JOIN_V5: &str = "runs LEFT JOIN run_series ON run_series.run_id = runs.id";

/// The join of `runs` to `run_series` at schema `version` (5 or later).
fn series_join(version: u32) -> &'static str {
    if version >= schema::SERIES_BY_CONFIG_VERSION {
        SERIES_JOIN
    } else {
        SERIES_JOIN_V5
    }
}

/// What `archive check` and a history say of a run without a history row.
const MISSING_SERIES: &str = "missing from run_series";

/// How long a write waits for another writer before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// Files up to this size get `PRAGMA quick_check` before their first
/// write, whether or not they were closed cleanly.
pub const QUICK_CHECK_MAX_BYTES: u64 = 256 << 20;

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

/// What storing one run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreOutcome {
    /// The run was new and is now stored.
    Added,
    /// A run with the same id was already stored; nothing changed.
    AlreadyPresent,
}

/// Counts of a batch store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreCounts {
    /// Runs that were new.
    pub added: u64,
    /// Runs already present.
    pub already_present: u64,
}

/// Counts of a merge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MergeCounts {
    /// Runs in the other archive.
    pub examined: u64,
    /// Runs copied in.
    pub added: u64,
    /// Runs this archive already had.
    pub already_present: u64,
}

/// Which runs a query selects; every filter that is set must match.
///
/// Prefix filters match the start of the column, so abbreviated commit
/// and run ids work as they do in git.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Commit id starts with this.
    pub commit_prefix: Option<String>,
    /// Label equals this.
    pub label: Option<String>,
    /// Run id starts with this.
    pub id_prefix: Option<String>,
    /// config_key starts with this.
    pub config_key_prefix: Option<String>,
    /// Test kind.
    pub test: Option<TestKind>,
    /// Testbed name equals this.
    pub testbed: Option<String>,
    /// Source tool (`netbisect`, `netperf`, `iperf3`) equals this.
    pub source_tool: Option<String>,
    /// At most this many runs (the earliest ones).
    pub limit: Option<u64>,
}

/// The indexed columns of one stored run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredRun {
    /// Content id.
    pub id: String,
    /// Commit under test.
    pub commit: Option<String>,
    /// `git describe` of the commit.
    pub describe: Option<String>,
    /// Free-form label.
    pub label: Option<String>,
    /// Comparability hash.
    pub config_key: String,
    /// Testbed name.
    pub testbed: String,
    /// Test kind.
    pub test: TestKind,
    /// Tool that produced the run.
    pub source_tool: String,
    /// Start of the run, RFC 3339.
    pub started_at: String,
    /// Iterations in the run.
    pub n_iterations: u32,
    /// Mean throughput, bits per second.
    pub throughput_bps: f64,
    /// Mean transaction rate, per second (request/response tests).
    pub transaction_rate: Option<f64>,
}

/// One run's value of one metric, for history and comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricValue {
    /// Run id.
    pub run_id: String,
    /// Commit under test.
    pub commit: Option<String>,
    /// Label.
    pub label: Option<String>,
    /// Comparability hash.
    pub config_key: String,
    /// Start of the run.
    pub started_at: String,
    /// The run-level value (the summary's figure).
    pub value: f64,
}

/// What `check` found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    /// Schema version of the file.
    pub schema_version: u32,
    /// Newest schema version this build knows.
    pub supported_version: u32,
    /// Lines of `PRAGMA integrity_check` (`["ok"]` when sound).
    pub integrity: Vec<String>,
    /// Rows that break a foreign key.
    pub foreign_key_violations: u64,
    /// Runs stored.
    pub n_runs: u64,
    /// Runs whose bytes do not decode, or disagree with their columns.
    pub damaged_runs: Vec<DamagedRun>,
}

/// A stored run that failed verification.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DamagedRun {
    /// The id column.
    pub id: String,
    /// What is wrong.
    pub problem: String,
}

impl CheckReport {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.integrity == ["ok"] && self.foreign_key_violations == 0 && self.damaged_runs.is_empty()
    }
}

/// An open archive file.
pub struct Archive {
    pub(crate) connection: Connection,
    path: PathBuf,
    /// Whether `quick_check` is due before the first write.
    check_before_write: std::cell::Cell<bool>,
}

const RUN_COLUMNS: &str = "id, commit_id, describe, label, config_key, testbed, test, \
                           source_tool, started_at, n_iterations, throughput_bps, transaction_rate";

impl Archive {
    /// Opens the archive at `path`, creating it (not its directory) when
    /// absent and bringing an older schema up to date. Refuses files that
    /// are not archives, are damaged or have a newer schema, without
    /// writing to them.
    pub fn open(path: &Path) -> Result<Archive, ArchiveError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        Archive::open_with_flags(path, flags).map_err(|err| full_or(path, err))
    }

    /// Opens the archive at `path` for reading: never creates it (a
    /// missing file is [`ArchiveError::NoArchive`]) and never leaves files
    /// beside it that the owner could not use. An archive this user may
    /// write is opened as by [`Archive::open`].
    pub fn open_read_only(path: &Path) -> Result<Archive, ArchiveError> {
        if !path.exists() {
            return Err(ArchiveError::NoArchive {
                path: path.to_path_buf(),
            });
        }
        if may_write(path) {
            let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX;
            return Archive::open_with_flags(path, flags).map_err(|err| full_or(path, err));
        }
        // Without a -wal file the database file holds everything committed
        // and is read as immutable: no locks, no -shm. With one, a writer
        // is active (or crashed): read through it without writing.
        let wal = wal_path(path);
        let immutable = !wal.exists();
        let uri = format!(
            "file:{}?mode=ro{}",
            uri_path(path),
            if immutable { "&immutable=1" } else { "" }
        );
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_URI
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let open_error = |source| ArchiveError::Open {
            path: path.to_path_buf(),
            source,
        };
        let connection = Connection::open_with_flags(&uri, flags).map_err(open_error)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        let archive = Archive {
            connection,
            path: path.to_path_buf(),
            check_before_write: std::cell::Cell::new(false),
        };
        let version = archive.read_version()?;
        if version == 0 {
            return Err(ArchiveError::NotAnArchive {
                path: path.to_path_buf(),
                detail: "no archive schema".to_string(),
            });
        }
        // An older schema that has every table and column the reads use
        // is read as it is; what it lacks ([`Archive::series_runs`]) is
        // read the long way.
        if version < schema::OLDEST_READABLE_VERSION {
            return Err(ArchiveError::ReadOnlyOldSchema {
                path: path.to_path_buf(),
                found: version,
                supported: CURRENT_VERSION,
            });
        }
        Ok(archive)
    }

    fn open_with_flags(path: &Path, flags: OpenFlags) -> Result<Archive, ArchiveError> {
        let open_error = |source| ArchiveError::Open {
            path: path.to_path_buf(),
            source,
        };
        let unclean = wal_path(path).exists();
        let connection = Connection::open_with_flags(path, flags).map_err(open_error)?;
        connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        let small = std::fs::metadata(path).is_ok_and(|meta| meta.len() <= QUICK_CHECK_MAX_BYTES);
        let archive = Archive {
            connection,
            path: path.to_path_buf(),
            check_before_write: std::cell::Cell::new(unclean || small),
        };
        let version = archive.read_version()?;
        // A foreign database is refused before WAL mode touches it. Tables
        // seen with version 0 may be another process creating this archive
        // right now, so the version is read again before deciding.
        if version == 0 && archive.has_objects()? && archive.read_version()? == 0 {
            return Err(archive.foreign_database());
        }
        archive.configure()?;
        if version < CURRENT_VERSION {
            archive.migrate()?;
        }
        Ok(archive)
    }

    /// Runs `PRAGMA quick_check` once, before the first write, when it is
    /// due; a damaged file refuses the write.
    pub(crate) fn check_before_write(&self) -> Result<(), ArchiveError> {
        if !self.check_before_write.get() {
            return Ok(());
        }
        let damaged = |detail: String| ArchiveError::Damaged {
            path: self.path.clone(),
            detail,
        };
        let mut statement = self
            .connection
            .prepare("PRAGMA quick_check(1)")
            .map_err(|err| damaged(err.to_string()))?;
        let first: String = statement
            .query_row([], |row| row.get(0))
            .map_err(|err| damaged(err.to_string()))?;
        if first != "ok" {
            return Err(damaged(first));
        }
        self.check_before_write.set(false);
        Ok(())
    }

    /// Names a failed write's cause plainly: a full file system, or a
    /// damaged file (with the command that tells more).
    pub(crate) fn write_error(&self, err: ArchiveError) -> ArchiveError {
        let code = match &err {
            ArchiveError::Sqlite(sqlite) | ArchiveError::Open { source: sqlite, .. } => {
                sqlite.sqlite_error_code()
            }
            _ => None,
        };
        match code {
            Some(ErrorCode::DiskFull) => ArchiveError::Full {
                path: self.path.clone(),
            },
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => ArchiveError::Damaged {
                path: self.path.clone(),
                detail: err.to_string(),
            },
            _ => full_or(&self.path, err),
        }
    }

    /// The file this archive lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Reads and checks the schema version and the application id.
    fn read_version(&self) -> Result<u32, ArchiveError> {
        read_header(&self.connection, &self.path)
    }

    fn has_objects(&self) -> Result<bool, ArchiveError> {
        let n_objects: i64 = self
            .connection
            .query_row("SELECT count(*) FROM sqlite_schema", [], |row| row.get(0))
            .map_err(|err| self.classify(err))?;
        Ok(n_objects > 0)
    }

    fn foreign_database(&self) -> ArchiveError {
        ArchiveError::NotAnArchive {
            path: self.path.clone(),
            detail: "an SQLite database with other tables and no archive schema".to_string(),
        }
    }

    fn configure(&self) -> Result<(), ArchiveError> {
        let connection = &self.connection;
        // Switching to WAL takes an exclusive lock for a moment, which
        // the busy handler does not wait for: several processes creating
        // one archive at once retry here, within the busy timeout.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let mode: String = loop {
            match connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0)) {
                Ok(mode) => break mode,
                Err(err)
                    if matches!(
                        err.sqlite_error_code(),
                        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
                    ) && std::time::Instant::now() < deadline =>
                {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(err) => return Err(self.classify(err)),
            }
        };
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(ArchiveError::NotAnArchive {
                path: self.path.clone(),
                detail: format!("cannot switch to WAL mode (journal mode is {mode})"),
            });
        }
        connection.pragma_update(None, "foreign_keys", true)?;
        connection.pragma_update(None, "synchronous", "NORMAL")?;
        Ok(())
    }

    /// Applies every pending migration in one transaction. The version is
    /// read again inside it, since another process may have migrated the
    /// file meanwhile.
    fn migrate(&self) -> Result<(), ArchiveError> {
        let transaction = ImmediateTransaction::begin(&self.connection)?;
        let version = read_header(transaction.connection, &self.path)?;
        if version > CURRENT_VERSION {
            return Err(ArchiveError::NewerSchema {
                path: self.path.clone(),
                found: version,
                supported: CURRENT_VERSION,
            });
        }
        if version == 0 && self.has_objects()? {
            return Err(self.foreign_database());
        }
        migrate_from(transaction.connection, version, CURRENT_VERSION)?;
        transaction.commit()
    }

    /// Maps "file is not a database" and similar to [`ArchiveError::NotAnArchive`].
    fn classify(&self, err: rusqlite::Error) -> ArchiveError {
        classify_open_error(&self.path, err)
    }

    /// The schema version of the file.
    pub fn schema_version(&self) -> Result<u32, ArchiveError> {
        read_header(&self.connection, &self.path)
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
        self.check_before_write()?;
        self.store_all_checked(runs)
            .map_err(|err| self.write_error(err))
    }

    fn store_all_checked(&mut self, runs: &[CanonicalRun]) -> Result<StoreCounts, ArchiveError> {
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut counts = StoreCounts::default();
        {
            let mut insert = prepare_insert(&transaction)?;
            for run in runs {
                if insert_run(&mut insert, run)? {
                    counts.added += 1;
                } else {
                    counts.already_present += 1;
                }
            }
        }
        transaction.commit()?;
        Ok(counts)
    }

    /// Number of runs stored.
    pub fn count(&self) -> Result<u64, ArchiveError> {
        let n_runs: i64 = self
            .connection
            .query_row("SELECT count(*) FROM runs", [], |row| row.get(0))?;
        Ok(u64::try_from(n_runs).unwrap_or(0))
    }

    /// The runs `query` selects, oldest first, without their records.
    pub fn runs(&self, query: &RunQuery) -> Result<Vec<StoredRun>, ArchiveError> {
        let (sql, values) = build_select(RUN_COLUMNS, query)?;
        let mut statement = self.connection.prepare(&sql)?;
        let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
        let mut runs = Vec::new();
        while let Some(row) = rows.next()? {
            runs.push(stored_run_of(row)?);
        }
        Ok(runs)
    }

    /// Calls `visit` with each selected run and its canonical bytes,
    /// oldest first, without holding them all in memory.
    pub fn for_each_record<E, F>(&self, query: &RunQuery, mut visit: F) -> Result<(), E>
    where
        E: From<ArchiveError>,
        F: FnMut(&StoredRun, &[u8]) -> Result<(), E>,
    {
        let columns = format!("{RUN_COLUMNS}, record");
        let (sql, values) = build_select(&columns, query)?;
        let mut statement = self.connection.prepare(&sql).map_err(ArchiveError::from)?;
        let mut rows = statement
            .query(rusqlite::params_from_iter(values.iter()))
            .map_err(ArchiveError::from)?;
        while let Some(row) = rows.next().map_err(ArchiveError::from)? {
            let run = stored_run_of(row)?;
            let bytes: Vec<u8> = row.get(12).map_err(ArchiveError::from)?;
            visit(&run, &bytes)?;
        }
        Ok(())
    }

    /// Checks stored bytes against the run's id column: they must read as
    /// a valid record (schema, numbers, id and config_key of its content)
    /// whose id is that of the row. A tampered or damaged run is
    /// [`ArchiveError::DamagedRun`].
    pub fn verify_stored(run: &StoredRun, bytes: &[u8]) -> Result<(), ArchiveError> {
        let damaged = |detail: String| ArchiveError::DamagedRun {
            id: run.id.clone(),
            detail,
        };
        let record = RunRecord::from_slice(bytes).map_err(|err| damaged(err.to_string()))?;
        if record.id != run.id {
            return Err(damaged(format!("its bytes are those of run {}", record.id)));
        }
        Ok(())
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
            let (sql, values) = build_select(
                "count(*)",
                &RunQuery {
                    limit: None,
                    ..query
                },
            )?;
            let n_matches: i64 = self.connection.query_row(
                &sql,
                rusqlite::params_from_iter(values.iter()),
                |row| row.get(0),
            )?;
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
        let columns = format!(
            "id, commit_id, label, config_key, started_at, {}",
            schema::metric_column(metric)
        );
        let (sql, values) = build_select(&columns, query)?;
        let mut statement = self.connection.prepare(&sql)?;
        let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            let Some(value) = row.get::<_, Option<f64>>(5)? else {
                continue;
            };
            found.push(MetricValue {
                run_id: row.get(0)?,
                commit: row.get(1)?,
                label: row.get(2)?,
                config_key: row.get(3)?,
                started_at: row.get(4)?,
                value,
            });
        }
        Ok(found)
    }

    /// What a history of `metric` needs of each selected run, oldest
    /// first, from the columns filled when the run was stored: no record
    /// is decoded or verified (`archive check` does that). `None` when
    /// the archive is older than those columns (one opened read-only at
    /// an older schema): read the records then
    /// ([`crate::history::SeriesRun::of`]).
    pub fn series_runs(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Option<Vec<SeriesRun>>, ArchiveError> {
        let version = self.schema_version()?;
        if version < schema::SERIES_VERSION {
            return Ok(None);
        }
        // Metric names are plain identifiers, safe inside the path.
        let columns = format!(
            "runs.id, runs.commit_id, runs.started_at, runs.test, spec_key, \
             json_extract(series, '$.{}')",
            metric.name()
        );
        // A left join, so that a run missing from `run_series` is an
        // error rather than left out of the history.
        let (sql, values) = build_select_from(&columns, series_join(version), query)?;
        let mut statement = self.connection.prepare(&sql)?;
        let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            let id: String = row.get(0)?;
            let damaged = |detail: String| ArchiveError::DamagedRun {
                id: id.clone(),
                detail,
            };
            let test_name: String = row.get(3)?;
            let test = TestKind::from_str(&test_name).map_err(|err| damaged(err.to_string()))?;
            let spec_key: Option<String> = row.get(4)?;
            let spec_key = spec_key.ok_or_else(|| damaged(MISSING_SERIES.to_string()))?;
            let samples = match row.get::<_, Option<String>>(5)? {
                Some(text) => serde_json::from_str::<Vec<f64>>(&text)
                    .map_err(|err| damaged(format!("its stored {metric} values: {err}")))?,
                None => Vec::new(),
            };
            found.push(SeriesRun {
                commit: row.get(1)?,
                started_at: row.get(2)?,
                test,
                spec_key,
                samples,
                id,
            });
        }
        Ok(Some(found))
    }

    /// Copies into this archive every run of the archive at `other` that
    /// it lacks, in one transaction. Each copied run is verified first.
    /// Merging the same archive again adds nothing.
    pub fn merge_from(&mut self, other: &Path) -> Result<MergeCounts, ArchiveError> {
        self.check_before_write()?;
        self.merge_from_checked(other)
            .map_err(|err| self.write_error(err))
    }

    fn merge_from_checked(&mut self, other: &Path) -> Result<MergeCounts, ArchiveError> {
        let source = open_existing(other)?;
        let version = read_header(&source, other)?;
        if version == 0 {
            return Err(ArchiveError::NotAnArchive {
                path: other.to_path_buf(),
                detail: "no archive schema".to_string(),
            });
        }
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut counts = MergeCounts::default();
        {
            let mut exists = transaction.prepare("SELECT 1 FROM runs WHERE id = ?1")?;
            let mut insert = prepare_insert(&transaction)?;
            let mut select = source
                .prepare("SELECT id, record FROM runs ORDER BY rowid")
                .map_err(|err| classify_open_error(other, err))?;
            let mut rows = select.query([])?;
            while let Some(row) = rows.next()? {
                counts.examined += 1;
                let id: String = row.get(0)?;
                if exists.exists([&id])? {
                    counts.already_present += 1;
                    continue;
                }
                let bytes: Vec<u8> = row.get(1)?;
                let run =
                    CanonicalRun::from_json(&bytes).map_err(|err| ArchiveError::DamagedRun {
                        id: id.clone(),
                        detail: format!("in {}: {err}", other.display()),
                    })?;
                if run.record.id != id {
                    return Err(ArchiveError::DamagedRun {
                        id,
                        detail: format!(
                            "in {}: the record's id is {}",
                            other.display(),
                            run.record.id
                        ),
                    });
                }
                if insert_run(&mut insert, &run)? {
                    counts.added += 1;
                } else {
                    counts.already_present += 1;
                }
            }
        }
        transaction.commit()?;
        Ok(counts)
    }

    /// Checks the file (`PRAGMA integrity_check`, foreign keys) and every
    /// stored run: its bytes decode to a valid record whose id and indexed
    /// columns match the row.
    pub fn check(&self) -> Result<CheckReport, ArchiveError> {
        let schema_version = self.schema_version()?;
        let mut integrity = Vec::new();
        {
            let mut statement = self.connection.prepare("PRAGMA integrity_check")?;
            let mut rows = statement.query([])?;
            while let Some(row) = rows.next()? {
                integrity.push(row.get::<_, String>(0)?);
            }
        }
        let mut foreign_key_violations = 0;
        {
            let mut statement = self.connection.prepare("PRAGMA foreign_key_check")?;
            let mut rows = statement.query([])?;
            while rows.next()?.is_some() {
                foreign_key_violations += 1;
            }
        }
        let mut n_runs = 0;
        let mut damaged_runs = Vec::new();
        self.for_each_record(&RunQuery::default(), |run, bytes| {
            n_runs += 1;
            if let Err(problem) = verify_row(run, bytes) {
                damaged_runs.push(DamagedRun {
                    id: run.id.clone(),
                    problem,
                });
            }
            Ok::<(), ArchiveError>(())
        })?;
        if schema_version >= schema::SERIES_VERSION {
            self.check_series(schema_version, &mut damaged_runs)?;
        }
        Ok(CheckReport {
            schema_version,
            supported_version: CURRENT_VERSION,
            integrity,
            foreign_key_violations,
            n_runs,
            damaged_runs,
        })
    }
}

impl Archive {
    /// Adds to `damaged_runs` every run missing from `run_series` or whose
    /// row there (`spec_key`, `series`) disagrees with its record; runs
    /// whose record does not decode are already listed. A `run_series`
    /// row without its run is a foreign key violation.
    fn check_series(
        &self,
        version: u32,
        damaged_runs: &mut Vec<DamagedRun>,
    ) -> Result<(), ArchiveError> {
        let mut statement = self.connection.prepare(&format!(
            "SELECT id, spec_key, series, record, run_id IS NOT NULL FROM {} \
             ORDER BY runs.started_at, id",
            series_join(version)
        ))?;
        let mut rows = statement.query([])?;
        while let Some(row) = rows.next()? {
            let id: String = row.get(0)?;
            let spec_key: Option<String> = row.get(1)?;
            let series: Option<String> = row.get(2)?;
            let bytes: Vec<u8> = row.get(3)?;
            let has_series: bool = row.get(4)?;
            if damaged_runs.iter().any(|damaged| damaged.id == id) {
                continue;
            }
            if !has_series {
                damaged_runs.push(DamagedRun {
                    problem: MISSING_SERIES.to_string(),
                    id,
                });
                continue;
            }
            let Ok(record) = RunRecord::from_slice(&bytes) else {
                continue;
            };
            let mut wrong = Vec::new();
            if record.compute_spec_key().ok() != spec_key {
                wrong.push("spec_key");
            }
            if schema::series_json(&record).ok() != series {
                wrong.push("series");
            }
            if !wrong.is_empty() {
                damaged_runs.push(DamagedRun {
                    problem: format!(
                        "its run_series row disagrees with the record: {}",
                        wrong.join(", ")
                    ),
                    id,
                });
            }
        }
        Ok(())
    }
}

/// A `BEGIN IMMEDIATE` transaction on a shared connection reference, used
/// while the archive is borrowed immutably (opening); rolled back unless
/// committed.
struct ImmediateTransaction<'conn> {
    connection: &'conn Connection,
    done: bool,
}

impl<'conn> ImmediateTransaction<'conn> {
    fn begin(connection: &'conn Connection) -> Result<Self, ArchiveError> {
        connection.execute_batch("BEGIN IMMEDIATE")?;
        Ok(ImmediateTransaction {
            connection,
            done: false,
        })
    }

    fn commit(mut self) -> Result<(), ArchiveError> {
        self.connection.execute_batch("COMMIT")?;
        self.done = true;
        Ok(())
    }
}

impl Drop for ImmediateTransaction<'_> {
    fn drop(&mut self) {
        if !self.done {
            let _ = self.connection.execute_batch("ROLLBACK");
        }
    }
}

/// Applies migrations `from + 1 ..= to` on `connection`, inside the
/// caller's transaction, and records the new version.
pub(crate) fn migrate_from(
    connection: &Connection,
    from: u32,
    to: u32,
) -> Result<(), ArchiveError> {
    for (migration_idx, migration) in MIGRATIONS.iter().enumerate() {
        let target = migration_idx as u32 + 1;
        if target <= from || target > to {
            continue;
        }
        connection.execute_batch(migration.sql)?;
        if let Some(backfill) = migration.backfill {
            backfill(connection)?;
        }
        connection.pragma_update(None, "user_version", target)?;
    }
    connection.pragma_update(None, "application_id", APPLICATION_ID)?;
    Ok(())
}

/// Reads `user_version` and checks `application_id`.
fn read_header(connection: &Connection, path: &Path) -> Result<u32, ArchiveError> {
    let version: i64 = connection
        .query_row("PRAGMA user_version", [], |row| row.get(0))
        .map_err(|err| classify_open_error(path, err))?;
    let application_id: i32 = connection
        .query_row("PRAGMA application_id", [], |row| row.get(0))
        .map_err(|err| classify_open_error(path, err))?;
    let version = u32::try_from(version).map_err(|_| ArchiveError::NotAnArchive {
        path: path.to_path_buf(),
        detail: format!("schema version {version} is not valid"),
    })?;
    if version > 0 && application_id != APPLICATION_ID {
        return Err(ArchiveError::NotAnArchive {
            path: path.to_path_buf(),
            detail: format!("an SQLite database of another application (id {application_id:#x})"),
        });
    }
    if version > CURRENT_VERSION {
        return Err(ArchiveError::NewerSchema {
            path: path.to_path_buf(),
            found: version,
            supported: CURRENT_VERSION,
        });
    }
    Ok(version)
}

/// The `-wal` file beside `path`.
fn wal_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push("-wal");
    PathBuf::from(name)
}

/// True when this user may write both `path` and its directory (where
/// SQLite keeps the `-wal` and `-shm` files): false for another user's
/// file, a read-only directory or a read-only mount.
fn may_write(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    [path, dir].iter().all(|entry| {
        std::ffi::CString::new(entry.as_os_str().as_bytes()).is_ok_and(|name| {
            // SAFETY: access reads the NUL-terminated name only.
            unsafe { libc::access(name.as_ptr(), libc::W_OK) == 0 }
        })
    })
}

/// `path` for an SQLite `file:` URI: `%`, `?` and `#` escaped.
fn uri_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let mut escaped = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '%' => escaped.push_str("%25"),
            '?' => escaped.push_str("%3f"),
            '#' => escaped.push_str("%23"),
            _ => escaped.push(ch),
        }
    }
    escaped
}

/// True when the file system holding `path` has no block left for us.
fn file_system_full(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let Ok(name) = std::ffi::CString::new(dir.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: statvfs fills the zeroed struct it is given.
    unsafe {
        let mut stats: libc::statvfs = std::mem::zeroed();
        libc::statvfs(name.as_ptr(), &mut stats) == 0 && stats.f_bavail == 0
    }
}

/// `err`, or [`ArchiveError::Full`] when it is SQLite's "disk full" or an
/// I/O failure on a file system with no space left (SQLite reports a
/// file it cannot create on a full file system as "unable to open").
fn full_or(path: &Path, err: ArchiveError) -> ArchiveError {
    let code = match &err {
        ArchiveError::Sqlite(sqlite) | ArchiveError::Open { source: sqlite, .. } => {
            sqlite.sqlite_error_code()
        }
        _ => None,
    };
    let full = match code {
        Some(ErrorCode::DiskFull) => true,
        Some(ErrorCode::CannotOpen | ErrorCode::SystemIoFailure) => file_system_full(path),
        _ => false,
    };
    if full {
        ArchiveError::Full {
            path: path.to_path_buf(),
        }
    } else {
        err
    }
}

fn classify_open_error(path: &Path, err: rusqlite::Error) -> ArchiveError {
    match err.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => ArchiveError::NotAnArchive {
            path: path.to_path_buf(),
            detail: err.to_string(),
        },
        _ => ArchiveError::Open {
            path: path.to_path_buf(),
            source: err,
        },
    }
}

/// Opens an existing archive for reading (merge source); never creates it.
fn open_existing(path: &Path) -> Result<Connection, ArchiveError> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection =
        Connection::open_with_flags(path, flags).map_err(|source| ArchiveError::Open {
            path: path.to_path_buf(),
            source,
        })?;
    connection
        .busy_timeout(BUSY_TIMEOUT)
        .map_err(|source| ArchiveError::Open {
            path: path.to_path_buf(),
            source,
        })?;
    Ok(connection)
}

/// The statements that store one run: its `runs` row and its
/// `run_series` row, in the caller's transaction.
struct Insert<'conn> {
    run: rusqlite::Statement<'conn>,
    series: rusqlite::Statement<'conn>,
}

fn prepare_insert(connection: &Connection) -> Result<Insert<'_>, ArchiveError> {
    let metric_columns: Vec<&str> = V2_METRICS
        .iter()
        .map(|m| schema::metric_column(*m))
        .collect();
    let sql = format!(
        "INSERT INTO runs ({RUN_COLUMNS}, record, {}, imported_at) \
         VALUES ({}) ON CONFLICT (id) DO NOTHING",
        metric_columns.join(", "),
        (1..=14 + metric_columns.len())
            .map(|idx| format!("?{idx}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(Insert {
        run: connection.prepare(&sql)?,
        series: connection.prepare(
            "INSERT INTO run_series (config_key, started_at, run_id, spec_key, series) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?,
    })
}

/// Inserts one run and its history row; false when its id was already
/// present.
fn insert_run(insert: &mut Insert<'_>, run: &CanonicalRun) -> Result<bool, ArchiveError> {
    let record = &run.record;
    let metrics = V2_METRICS.map(|metric| record.value(metric));
    let damaged = |detail: String| ArchiveError::DamagedRun {
        id: record.id.clone(),
        detail,
    };
    let spec_key = record.compute_spec_key()?;
    let series = schema::series_json(record).map_err(|err| damaged(err.to_string()))?;
    let changed = insert.run.execute(params![
        record.id,
        record.subject.commit,
        record.subject.describe,
        record.subject.label,
        record.config_key,
        record.testbed,
        record.spec.test.name(),
        record.source.tool,
        record.started_at,
        record.summary.n_iterations,
        record.summary.throughput_bps.mean,
        record.summary.transaction_rate.as_ref().map(|s| s.mean),
        run.bytes,
        metrics[0],
        metrics[1],
        metrics[2],
        metrics[3],
        metrics[4],
        metrics[5],
        metrics[6],
        metrics[7],
        metrics[8],
        record.source.undated.then_some(&record.started_at),
    ])?;
    if changed != 1 {
        return Ok(false);
    }
    insert.series.execute(params![
        record.config_key,
        record.started_at,
        record.id,
        spec_key,
        series
    ])?;
    Ok(true)
}

/// Escapes `prefix` for a GLOB pattern that matches strings starting
/// with it (GLOB, unlike LIKE, is case-sensitive and uses the index).
fn glob_prefix(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for character in prefix.chars() {
        match character {
            '*' | '?' | '[' => {
                pattern.push('[');
                pattern.push(character);
                pattern.push(']');
            }
            other => pattern.push(other),
        }
    }
    pattern.push('*');
    pattern
}

/// `SELECT columns FROM runs WHERE ... ORDER BY runs.started_at, runs.id`,
/// with its parameters.
fn build_select(columns: &str, query: &RunQuery) -> Result<(String, Vec<String>), ArchiveError> {
    build_select_from(columns, "runs", query)
}

/// [`build_select`] from `from`: `runs`, or `runs` joined to other
/// tables; the conditions and the order name the columns of `runs`.
fn build_select_from(
    columns: &str,
    from: &str,
    query: &RunQuery,
) -> Result<(String, Vec<String>), ArchiveError> {
    let mut conditions = Vec::new();
    let mut values = Vec::new();
    let mut add = |condition: &str, value: String| {
        values.push(value);
        conditions.push(condition.replace('?', &format!("?{}", values.len())));
    };
    if let Some(prefix) = &query.commit_prefix {
        add("runs.commit_id GLOB ?", glob_prefix(prefix));
    }
    if let Some(label) = &query.label {
        add("runs.label = ?", label.clone());
    }
    if let Some(prefix) = &query.id_prefix {
        add("runs.id GLOB ?", glob_prefix(prefix));
    }
    if let Some(prefix) = &query.config_key_prefix {
        // A whole key is an equality, which lets the index on
        // (config_key, commit_id) narrow on the commit too.
        if prefix.len() == FULL_HASH_LEN {
            add("runs.config_key = ?", prefix.clone());
        } else {
            add("runs.config_key GLOB ?", glob_prefix(prefix));
        }
    }
    if let Some(test) = query.test {
        add("runs.test = ?", test.name().to_string());
    }
    if let Some(testbed) = &query.testbed {
        add("runs.testbed = ?", testbed.clone());
    }
    if let Some(tool) = &query.source_tool {
        add("runs.source_tool = ?", tool.clone());
    }
    let mut sql = format!("SELECT {columns} FROM {from}");
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    if columns != "count(*)" {
        sql.push_str(" ORDER BY runs.started_at, runs.id");
    }
    if let Some(limit) = query.limit {
        let limit = i64::try_from(limit)
            .map_err(|_| ArchiveError::InvalidQuery(format!("limit {limit} is too large")))?;
        sql.push_str(&format!(" LIMIT {limit}"));
    }
    Ok((sql, values))
}

fn stored_run_of(row: &rusqlite::Row<'_>) -> Result<StoredRun, ArchiveError> {
    let id: String = row.get(0)?;
    let test_name: String = row.get(6)?;
    let test = TestKind::from_str(&test_name).map_err(|err| ArchiveError::DamagedRun {
        id: id.clone(),
        detail: err.to_string(),
    })?;
    Ok(StoredRun {
        commit: row.get(1)?,
        describe: row.get(2)?,
        label: row.get(3)?,
        config_key: row.get(4)?,
        testbed: row.get(5)?,
        test,
        source_tool: row.get(7)?,
        started_at: row.get(8)?,
        n_iterations: row.get(9)?,
        throughput_bps: row.get(10)?,
        transaction_rate: row.get(11)?,
        id,
    })
}

fn decode_stored(id: &str, bytes: &[u8]) -> Result<RunRecord, ArchiveError> {
    RunRecord::from_slice(bytes).map_err(|err| ArchiveError::DamagedRun {
        id: id.to_string(),
        detail: err.to_string(),
    })
}

/// Checks that a row's bytes are a valid canonical record agreeing with
/// the row's columns.
fn verify_row(run: &StoredRun, bytes: &[u8]) -> Result<(), String> {
    let canonical = CanonicalRun::from_json(bytes).map_err(|err| err.to_string())?;
    if canonical.bytes != bytes {
        return Err("stored bytes are not canonical".to_string());
    }
    let record = &canonical.record;
    let mismatches = [
        ("id", record.id != run.id),
        ("commit", record.subject.commit != run.commit),
        ("describe", record.subject.describe != run.describe),
        ("label", record.subject.label != run.label),
        ("config_key", record.config_key != run.config_key),
        ("testbed", record.testbed != run.testbed),
        ("test", record.spec.test != run.test),
        ("source_tool", record.source.tool != run.source_tool),
        ("started_at", record.started_at != run.started_at),
    ];
    let wrong: Vec<&str> = mismatches
        .iter()
        .filter(|(_, differs)| *differs)
        .map(|(name, _)| *name)
        .collect();
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "columns disagree with the record: {}",
            wrong.join(", ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_core::record::{CpuFigures, Iteration};
    use test_fixtures::record::RecordBuilder;

    fn cpu_record() -> RunRecord {
        let cpu = CpuFigures {
            local_util_pct: Some(42.5),
            remote_util_pct: Some(40.0),
            ..CpuFigures::default()
        };
        let summary_cpu = cpu.clone();
        RecordBuilder::new(TestKind::TcpStream)
            .started_at("2026-01-01T00:00:00.000000Z")
            .finished_at("2026-01-01T00:00:10.000000Z")
            .commit("abcdef")
            .iteration(Iteration {
                elapsed_s: 10.0,
                throughput_bps: 1e9,
                cpu: Some(cpu),
                ..Iteration::default()
            })
            .summary_with(|summary| summary.cpu = Some(summary_cpu))
            .build()
    }

    #[test]
    fn migrates_an_empty_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("empty.db");
        std::fs::write(&path, b"").unwrap();
        let archive = Archive::open(&path).unwrap();
        assert_eq!(archive.schema_version().unwrap(), CURRENT_VERSION);
        assert!(archive.check().unwrap().is_clean());
    }

    #[test]
    fn migrates_a_version_1_file_and_backfills_metrics() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v1.db");
        let record = cpu_record();
        {
            // A file as version 1 wrote it: its schema and one run.
            let connection = Connection::open(&path).unwrap();
            connection.execute_batch("BEGIN").unwrap();
            migrate_from(&connection, 0, 1).unwrap();
            connection
                .execute(
                    "INSERT INTO runs (id, commit_id, describe, label, config_key, testbed, \
                     test, source_tool, started_at, n_iterations, throughput_bps, \
                     transaction_rate, record) \
                     VALUES (?1, ?2, NULL, NULL, ?3, ?4, ?5, ?6, ?7, 1, 1e9, NULL, ?8)",
                    params![
                        record.id,
                        "abcdef",
                        record.config_key,
                        "lab",
                        "TCP_STREAM",
                        "netbisect",
                        record.started_at,
                        record.to_canonical_bytes().unwrap()
                    ],
                )
                .unwrap();
            connection.execute_batch("COMMIT").unwrap();
            let version: u32 = connection
                .query_row("PRAGMA user_version", [], |row| row.get(0))
                .unwrap();
            assert_eq!(version, 1);
        }
        let archive = Archive::open(&path).unwrap();
        assert_eq!(archive.schema_version().unwrap(), CURRENT_VERSION);
        let values = archive
            .metric_values(&RunQuery::default(), Metric::LocalCpuPct)
            .unwrap();
        assert_eq!(values.len(), 1);
        assert_eq!(values[0].value, 42.5);
        assert_eq!(values[0].run_id, record.id);
        let values = archive
            .metric_values(&RunQuery::default(), Metric::LatencyP99Us)
            .unwrap();
        assert!(values.is_empty());
        // The history columns are filled from the record.
        for metric in [
            Metric::ThroughputBps,
            Metric::LocalCpuPct,
            Metric::LatencyP99Us,
        ] {
            let runs = archive
                .series_runs(&RunQuery::default(), metric)
                .unwrap()
                .unwrap();
            assert_eq!(runs, vec![SeriesRun::of(&record, metric).unwrap()]);
        }
        let report = archive.check().unwrap();
        assert!(report.is_clean(), "{report:?}");
        assert_eq!(report.n_runs, 1);
    }

    #[test]
    fn a_stored_run_gives_history_what_its_record_does() {
        let dir = tempfile::tempdir().unwrap();
        let mut archive = Archive::open(&dir.path().join("a.db")).unwrap();
        let record = cpu_record();
        archive
            .store(&CanonicalRun::from_record(record.clone()).unwrap())
            .unwrap();
        for metric in Metric::ALL {
            let runs = archive
                .series_runs(&RunQuery::default(), metric)
                .unwrap()
                .unwrap();
            assert_eq!(
                runs,
                vec![SeriesRun::of(&record, metric).unwrap()],
                "{metric}"
            );
        }
        let none = RunQuery {
            label: Some("no such label".to_string()),
            ..RunQuery::default()
        };
        assert!(
            archive
                .series_runs(&none, Metric::ThroughputBps)
                .unwrap()
                .unwrap()
                .is_empty()
        );
        assert!(archive.check().unwrap().is_clean());
        // A history column changed behind the record's back is caught.
        archive
            .connection
            .execute(
                "UPDATE run_series SET series = '{\"throughput_bps\":[1.0]}'",
                [],
            )
            .unwrap();
        let report = archive.check().unwrap();
        assert_eq!(report.damaged_runs.len(), 1, "{report:?}");
        assert_eq!(
            report.damaged_runs[0].problem,
            "its run_series row disagrees with the record: series"
        );
        // So is a run whose history row is gone.
        archive
            .connection
            .execute("DELETE FROM run_series", [])
            .unwrap();
        let report = archive.check().unwrap();
        assert_eq!(report.damaged_runs.len(), 1, "{report:?}");
        assert_eq!(report.damaged_runs[0].problem, "missing from run_series");
        let err = archive
            .series_runs(&RunQuery::default(), Metric::ThroughputBps)
            .unwrap_err();
        assert!(err.to_string().contains("missing from run_series"), "{err}");
    }

    #[test]
    fn glob_prefix_escapes_wildcards() {
        assert_eq!(glob_prefix("ab"), "ab*");
        assert_eq!(glob_prefix("a*?[b"), "a[*][?][[]b*");
    }
}
