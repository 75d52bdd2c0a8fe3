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
use super::lab::{
    BisectionEnd, Finished, Job, JobFilter, Lease, NewJob, Notification, Opened, Regression,
    SendHold, Track, Worker, WorkerNote,
};
use super::prune::{PruneSelection, Pruned};
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
/// ([`SessionStore`]) and its lab's queue and regressions ([`LabStore`])
/// beside.
pub(crate) trait Backend: SessionStore + LabStore + Send {
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

    /// Removes the runs `selection` selects that nothing cites, with
    /// their history rows, in one transaction that reads what cites runs
    /// (`prune.rs`) while no writer may add to it; with `dry_run`, says
    /// the same and changes nothing.
    fn prune(&mut self, selection: &PruneSelection, dry_run: bool) -> Result<Pruned, ArchiveError>;

    /// Gives the space of removed runs back to the file system, where the
    /// backend holds it (a file keeps its free pages for later writes);
    /// `None` where the database's own upkeep does that.
    fn vacuum(&mut self) -> Option<Result<(), ArchiveError>> {
        None
    }

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

/// The lab's queue, workers, tracks, regressions and outbox of a backend:
/// the primitives of `lab`'s reads and writes, each backend's in its
/// `lab.rs`. Times are microseconds since the epoch by the backend's
/// clock (the server's on PostgreSQL), lengths microseconds too. Every
/// write is one transaction; those that take something (a job, a
/// regression's bisection, a notification) lock what they take so that
/// two takers never take the same.
pub(crate) trait LabStore {
    /// The backend's clock.
    fn clock_us(&self) -> Result<i64, ArchiveError>;

    /// Puts `jobs` in the queue in one transaction and returns their ids
    /// in order; a job whose key is there already (in any state) is left
    /// as it is and its id returned.
    fn enqueue_jobs(&mut self, jobs: &[NewJob]) -> Result<Vec<i64>, ArchiveError>;

    /// Leases to `worker`, for `lease_us`, the queued job of one of
    /// `pools` with the highest priority (the oldest among equals), or a
    /// leased one whose lease expired; a job whose lease expired
    /// [`MAX_ATTEMPTS`](super::lab::MAX_ATTEMPTS) times is given up
    /// instead. `None` when there is none.
    fn take_job(
        &mut self,
        worker: &str,
        pools: &[String],
        lease_us: i64,
    ) -> Result<Option<Job>, ArchiveError>;

    /// Extends `lease` by `lease_us` from now; false when it is not held
    /// any more (taken over, finished, given up).
    fn heartbeat_job(&mut self, lease: Lease, lease_us: i64) -> Result<bool, ArchiveError>;

    /// Stores `runs` and marks the job of `lease` done with `result`, in
    /// one transaction, only while the lease is held.
    fn finish_job(
        &mut self,
        lease: Lease,
        runs: &[crate::store::CanonicalRun],
        result: &str,
    ) -> Result<Finished, ArchiveError>;

    /// Puts the job of `lease` back in the queue at once (its worker
    /// stops); false when the lease was not held.
    fn release_job(&mut self, lease: Lease) -> Result<bool, ArchiveError>;

    /// Gives up every queued job of `owner`, with `reason`; returns how
    /// many.
    fn cancel_jobs(&mut self, owner: &str, reason: &str) -> Result<u64, ArchiveError>;

    /// The jobs `filter` selects, oldest first.
    fn jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, ArchiveError>;

    /// The jobs of these keys, in no particular order.
    fn jobs_by_key(&self, keys: &[String]) -> Result<Vec<Job>, ArchiveError>;

    /// Records what a worker says of itself, now.
    fn note_worker(&mut self, note: &WorkerNote) -> Result<(), ArchiveError>;

    /// Every worker, by name.
    fn workers(&self) -> Result<Vec<Worker>, ArchiveError>;

    /// Records that a tracker looks at the track `key`, described by
    /// `spec` (JSON), now.
    fn note_track(&mut self, key: &str, spec: &str) -> Result<(), ArchiveError>;

    /// Every track, by key.
    fn tracks(&self) -> Result<Vec<Track>, ArchiveError>;

    /// Opens the regression of `track` between `good` and `bad` with
    /// `detail` (JSON), a new range or one suspected, unless it is there
    /// already in another state or the track has another one active (see
    /// [`Opened`]).
    fn open_regression(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<Opened, ArchiveError>;

    /// Records the suspicion of `track` between `good` and `bad` whose
    /// confirmation starts, with `detail` (JSON); false when the range
    /// was recorded before (in any state).
    fn note_suspicion(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<bool, ArchiveError>;

    /// Records the suspicion of `track` between `good` and `bad`, which
    /// measuring again did not confirm, with `detail` (JSON): a new
    /// range, or one suspected; false when the range was recorded in
    /// another state.
    fn dismiss_suspicion(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<bool, ArchiveError>;

    /// The regressions of `track`, or of every track, oldest first.
    fn regressions(&self, track: Option<&str>) -> Result<Vec<Regression>, ArchiveError>;

    /// Takes (or renews, for the same `driver`) the hold on driving the
    /// bisection of regression `id` for `hold_us`; false while another
    /// driver's hold has not expired, or once the regression is not
    /// active.
    fn hold_regression(
        &mut self,
        id: i64,
        driver: &str,
        hold_us: i64,
    ) -> Result<bool, ArchiveError>;

    /// Lets go of the hold of `driver` on regression `id`.
    fn release_regression(&mut self, id: i64, driver: &str) -> Result<(), ArchiveError>;

    /// Records that the bisection of regression `id`, held by `driver`,
    /// is session `session_id`; false when `driver` does not hold it.
    fn set_regression_session(
        &mut self,
        id: i64,
        driver: &str,
        session_id: i64,
    ) -> Result<bool, ArchiveError>;

    /// Records how the bisection of regression `id`, held by `driver`,
    /// ended, with its report put in the outbox in the same transaction;
    /// false when `driver` does not hold it.
    fn end_regression_bisection(
        &mut self,
        id: i64,
        driver: &str,
        end: &BisectionEnd,
    ) -> Result<bool, ArchiveError>;

    /// Marks regression `id` fixed at commit `fixed_by`, unless it is
    /// fixed already or still active; false then. In the same
    /// transaction the suspicion of `suspicion_track` that compared
    /// `fixed_by` and confirmed the fix is removed: it is the fix now.
    fn mark_regression_fixed(
        &mut self,
        id: i64,
        fixed_by: &str,
        suspicion_track: &str,
    ) -> Result<bool, ArchiveError>;

    /// Takes for `sender`, for `hold_us`, the oldest report of the outbox
    /// that is not sent, is due, and no other sender holds.
    fn take_notification(
        &mut self,
        sender: &str,
        hold_us: i64,
    ) -> Result<Option<Notification>, ArchiveError>;

    /// Marks the notification of `hold` sent; false when the hold was
    /// lost.
    fn notification_sent(&mut self, hold: SendHold) -> Result<bool, ArchiveError>;

    /// Records that the command of the notification of `hold` failed with
    /// `error`; it is tried again after `retry_after_us`.
    fn notification_failed(
        &mut self,
        hold: SendHold,
        error: &str,
        retry_after_us: i64,
    ) -> Result<bool, ArchiveError>;

    /// Every notification, oldest first.
    fn notifications(&self) -> Result<Vec<Notification>, ArchiveError>;
}
