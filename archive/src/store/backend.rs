//! What a storage backend provides ([`Backend`]): the few primitives
//! every public read and write of [`Archive`](super::Archive) and of the
//! journal is made of. `SqliteArchive` (`sqlite/`) implements them on one
//! SQLite file, `PgArchive` (`postgres/`) on a PostgreSQL database. What
//! a caller gets above them, the order of the runs, the verification of
//! each record as it is read, the refusals of damaged runs and the
//! errors of a missing session, is `Archive`'s one code.
//!
//! A primitive that reads takes `&self`, one that writes `&mut self`, as
//! `Archive`'s own methods do; a backend whose driver needs `&mut` to
//! read keeps its connection in a cell and borrows it for one statement
//! at a time, never across a call back into the caller
//! ([`Backend::for_each_record`]).

use super::check::CheckReport;
use super::query::{MetricValue, Order, RunQuery, StoredRun};
use super::session::BisectSession;
use super::write::{MergeCounts, StoreCounts};
use super::{CanonicalRun, LockWaitReport, SeriesRun};
use crate::ArchiveError;
use crate::location::Location;
use run_record::record::Metric;
use std::ops::ControlFlow;
use std::path::Path;

/// What [`Backend::for_each_record`] calls with each run and its
/// canonical bytes; [`ControlFlow::Break`] ends the walk there.
pub(crate) type RecordVisitor<'visit> = &'visit mut dyn FnMut(&StoredRun, &[u8]) -> ControlFlow<()>;

/// A storage backend of the archive: its runs here, its sessions
/// ([`SessionStore`]) beside.
pub(crate) trait Backend: SessionStore + Send {
    /// Where the archive lives, as it may be shown (an address without
    /// its password).
    fn location(&self) -> Location;

    /// The archive's schema version (each backend numbers its own).
    fn schema_version(&self) -> Result<u32, ArchiveError>;

    /// Stores every run in one transaction, all of them or none; a run
    /// already present is left as it is and counted so.
    fn store_all(&mut self, runs: &[CanonicalRun]) -> Result<StoreCounts, ArchiveError>;

    /// Copies in, in one transaction, every run of the archive file at
    /// `path` that this archive lacks, each verified first, where this
    /// backend reads such a file itself; `None` where it does not, and
    /// the runs are read through an archive of that file instead.
    fn merge_file(&mut self, path: &Path) -> Option<Result<MergeCounts, ArchiveError>> {
        let _ = path;
        None
    }

    /// Number of runs stored.
    fn count(&self) -> Result<u64, ArchiveError>;

    /// How many runs `query` selects, its limit aside.
    fn count_matching(&self, query: &RunQuery) -> Result<u64, ArchiveError>;

    /// The runs `query` selects, in `order`, without their records (a
    /// limit keeps the first of that order).
    fn runs_in_order(&self, query: &RunQuery, order: Order)
    -> Result<Vec<StoredRun>, ArchiveError>;

    /// Calls `visit` with each run `query` selects and its canonical
    /// bytes as stored, oldest first, without holding them all in
    /// memory, until `visit` breaks off. The bytes are not verified here.
    /// `visit` may read this archive again: no backend holds its
    /// connection while `visit` runs.
    fn for_each_record(
        &self,
        query: &RunQuery,
        visit: RecordVisitor<'_>,
    ) -> Result<(), ArchiveError>;

    /// The run-level value of `metric` for each selected run that has it,
    /// oldest first, from the indexed columns.
    fn metric_values(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Vec<MetricValue>, ArchiveError>;

    /// What a history of `metric` needs of each selected run, oldest
    /// first, from `run_series`; a run missing there is
    /// [`ArchiveError::DamagedRun`]. `None` when the archive is older
    /// than that table (a file read at an older schema).
    fn series_runs(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Option<Vec<SeriesRun>>, ArchiveError>;

    /// Checks the archive (the database's own checks, or what stands in
    /// for them) and every stored run against its columns and its
    /// history row.
    fn check(&self) -> Result<CheckReport, ArchiveError>;

    /// From now on, calls `report` while a statement waits for a lock
    /// another session holds, where the backend can see such a wait; see
    /// [`Archive::report_lock_waits`](super::Archive::report_lock_waits).
    fn report_lock_waits(&mut self, report: LockWaitReport);
}

/// The bisection sessions of a backend, and their journals: the primitives
/// of `journal`'s reads and writes, each backend's in its `journal.rs`.
pub(crate) trait SessionStore {
    /// Starts a session bisecting `repo`, described by `spec`, at time
    /// `started_at`; returns its id. Fails with
    /// [`ArchiveError::SessionActive`] when `repo` has an active session,
    /// even one another process starts at the same moment.
    fn insert_session(
        &mut self,
        repo: &str,
        spec: &str,
        started_at: &str,
    ) -> Result<i64, ArchiveError>;

    /// The session with id `session_id`, if there is one.
    fn session(&self, session_id: i64) -> Result<Option<BisectSession>, ArchiveError>;

    /// The active session of `repo`, if there is one.
    fn active_session(&self, repo: &str) -> Result<Option<BisectSession>, ArchiveError>;

    /// Every session, oldest first.
    fn sessions(&self) -> Result<Vec<BisectSession>, ArchiveError>;

    /// Appends `event` (JSON), written at `written_at`, to the journal of
    /// the active session `session_id` in one transaction that is
    /// durable when this returns; returns its sequence number, from 1.
    /// Fails with [`ArchiveError::NoSuchSession`] or
    /// [`ArchiveError::SessionEnded`].
    fn append_event(
        &mut self,
        session_id: i64,
        event: &str,
        written_at: &str,
    ) -> Result<u64, ArchiveError>;

    /// The events of session `session_id`, oldest first.
    fn session_events(&self, session_id: i64) -> Result<Vec<String>, ArchiveError>;

    /// When each event of session `session_id` was written, in the
    /// order of [`Backend::session_events`].
    fn session_event_times(&self, session_id: i64) -> Result<Vec<String>, ArchiveError>;

    /// Records the config_key of session `session_id`; false when no
    /// session has that id.
    fn set_session_config_key(
        &mut self,
        session_id: i64,
        config_key: &str,
    ) -> Result<bool, ArchiveError>;

    /// Ends session `session_id` at `ended_at`, unless it has ended.
    fn end_session(&mut self, session_id: i64, ended_at: &str) -> Result<(), ArchiveError>;
}
