//! A lab that runs itself, as the archive keeps it: the queue of work
//! for the testbeds' workers, the workers and trackers as they last said
//! what they do, the regressions the trackers confirmed, and the outbox
//! of their reports. No broker and no daemon beside the archive: the
//! database the lab already shares is where its processes meet.
//!
//! The queue: a job is put in once (its key is its identity: asking for
//! the same work again adds nothing), taken by one worker at a time under
//! a lease that the worker extends while it works ([`Archive::heartbeat_job`])
//! and that expires when it dies, after which the next worker takes the
//! job over; its runs are stored and the job marked done in one
//! transaction, only while the lease holds ([`Archive::finish_job`]). So
//! a worker thought dead, whose job another took over, stores nothing;
//! the same run stored twice (a finish whose answer was lost, tried
//! again) is one run, by its content-addressed id.
//!
//! A regression is opened once per track and range, at most one active
//! per track, and its bisection driven by one process at a time, under a
//! hold that expires as a lease does; its report goes to the outbox in
//! the transaction that records its culprit, and leaves it only when its
//! command succeeded, retried until then.
//!
//! Here the public reads and writes, made of the primitives every
//! backend of the store provides (its `LabStore`, in
//! `store/sqlite/lab.rs` and `store/postgres/lab.rs`); the types are
//! `store/lab.rs`'s.

use crate::ArchiveError;
use crate::store::lab::micros_of;
use crate::store::{Archive, CanonicalRun};
use std::time::Duration;

pub use crate::store::lab::{
    BisectionEnd, Finished, Job, JobFilter, JobState, Lease, MAX_ATTEMPTS, NewJob, Notification,
    Opened, Regression, RegressionState, SendHold, Track, Worker, WorkerNote, time_of_us,
};

impl Archive {
    /// The archive's clock, in microseconds since the epoch: the
    /// server's on PostgreSQL, this process's for a file. The lab's times
    /// are of this clock.
    pub fn clock_us(&self) -> Result<i64, ArchiveError> {
        self.backend().clock_us()
    }

    /// Puts `jobs` in the queue in one transaction and returns their ids
    /// in order; a job whose key is there already, in any state, is left
    /// as it is and its id returned.
    pub fn enqueue_jobs(&mut self, jobs: &[NewJob]) -> Result<Vec<i64>, ArchiveError> {
        self.backend_mut().enqueue_jobs(jobs)
    }

    /// Leases to `worker`, for `lease`, the next job of one of `pools`:
    /// the queued one of highest priority (oldest among equals), or one
    /// whose last taker's lease expired. A job whose lease expired
    /// [`MAX_ATTEMPTS`] times is given up instead of taken again.
    pub fn take_job(
        &mut self,
        worker: &str,
        pools: &[String],
        lease: Duration,
    ) -> Result<Option<Job>, ArchiveError> {
        let lease_us = micros_of(lease.as_secs_f64());
        self.backend_mut().take_job(worker, pools, lease_us)
    }

    /// Extends `lease` to `length` from now; false when it is not held
    /// any more (another worker took the job over, or it was given up):
    /// its worker stops.
    pub fn heartbeat_job(&mut self, lease: Lease, length: Duration) -> Result<bool, ArchiveError> {
        let lease_us = micros_of(length.as_secs_f64());
        self.backend_mut().heartbeat_job(lease, lease_us)
    }

    /// Stores `runs` and marks the job of `lease` done with `result`
    /// (JSON), in one transaction, only while the lease is held. Calling
    /// it again after an error that leaves the commit unknown is safe:
    /// it then says [`Finished::AlreadyDone`] or stores them.
    pub fn finish_job(
        &mut self,
        lease: Lease,
        runs: &[CanonicalRun],
        result: &str,
    ) -> Result<Finished, ArchiveError> {
        self.backend_mut().finish_job(lease, runs, result)
    }

    /// Puts the job of `lease` back in the queue at once: its worker
    /// stops without finishing it. False when the lease was not held.
    pub fn release_job(&mut self, lease: Lease) -> Result<bool, ArchiveError> {
        self.backend_mut().release_job(lease)
    }

    /// Gives up every job of `owner` that is still queued, with
    /// `reason`; returns how many.
    pub fn cancel_jobs(&mut self, owner: &str, reason: &str) -> Result<u64, ArchiveError> {
        self.backend_mut().cancel_jobs(owner, reason)
    }

    /// The jobs `filter` selects, oldest first.
    pub fn jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, ArchiveError> {
        self.backend().jobs(filter)
    }

    /// The jobs of these keys, in no particular order (a key with no job
    /// has none).
    pub fn jobs_by_key(&self, keys: &[String]) -> Result<Vec<Job>, ArchiveError> {
        self.backend().jobs_by_key(keys)
    }

    /// Records what a worker says of itself, now.
    pub fn note_worker(&mut self, note: &WorkerNote) -> Result<(), ArchiveError> {
        self.backend_mut().note_worker(note)
    }

    /// Every worker as it last said what it does, by name.
    pub fn workers(&self) -> Result<Vec<Worker>, ArchiveError> {
        self.backend().workers()
    }

    /// Records that a tracker looks at the track `key`, described by
    /// `spec` (JSON), now.
    pub fn note_track(&mut self, key: &str, spec: &str) -> Result<(), ArchiveError> {
        self.backend_mut().note_track(key, spec)
    }

    /// Every track, by key.
    pub fn tracks(&self) -> Result<Vec<Track>, ArchiveError> {
        self.backend().tracks()
    }

    /// Opens the regression of `track` between the commits `good` and
    /// `bad`, with what its detection found (`detail`, JSON): a new one
    /// (or the suspicion of that range, confirmed), the same one opened
    /// before (by any tracker), or none while the track has another
    /// active.
    pub fn open_regression(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<Opened, ArchiveError> {
        self.backend_mut().open_regression(track, good, bad, detail)
    }

    /// Records that the suspicion of `track` between `good` and `bad`
    /// (a regression in state [`RegressionState::Suspected`]) is being
    /// confirmed, with what detection found (`detail`, JSON), so that
    /// every tracker goes on confirming that range, whatever lands
    /// meanwhile; false when the range was recorded before.
    pub fn note_suspicion(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<bool, ArchiveError> {
        self.backend_mut().note_suspicion(track, good, bad, detail)
    }

    /// Records a suspicion of `track` between `good` and `bad` that
    /// measuring again did not confirm (a regression in state
    /// [`RegressionState::Dismissed`]), so that no tracker suspects the
    /// same range again; false when the range was recorded before.
    pub fn dismiss_suspicion(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<bool, ArchiveError> {
        self.backend_mut()
            .dismiss_suspicion(track, good, bad, detail)
    }

    /// The regressions of `track`, or of every track, oldest first.
    pub fn regressions(&self, track: Option<&str>) -> Result<Vec<Regression>, ArchiveError> {
        self.backend().regressions(track)
    }

    /// Takes, or renews for the same `driver`, the hold on driving the
    /// bisection of regression `id`, for `length`; false while another
    /// driver holds it, or once the regression is not active.
    pub fn hold_regression(
        &mut self,
        id: i64,
        driver: &str,
        length: Duration,
    ) -> Result<bool, ArchiveError> {
        let hold_us = micros_of(length.as_secs_f64());
        self.backend_mut().hold_regression(id, driver, hold_us)
    }

    /// Lets go of `driver`'s hold on regression `id`, so that another
    /// process may drive it at once.
    pub fn release_regression(&mut self, id: i64, driver: &str) -> Result<(), ArchiveError> {
        self.backend_mut().release_regression(id, driver)
    }

    /// Records that the bisection of regression `id`, which `driver`
    /// holds, is session `session_id`; false when it does not hold it.
    pub fn set_regression_session(
        &mut self,
        id: i64,
        driver: &str,
        session_id: i64,
    ) -> Result<bool, ArchiveError> {
        self.backend_mut()
            .set_regression_session(id, driver, session_id)
    }

    /// Records how the bisection of regression `id`, which `driver`
    /// holds, ended; a culprit's report goes to the outbox in the same
    /// transaction. False when `driver` does not hold it (another
    /// recorded the end, or took the regression over).
    pub fn end_regression_bisection(
        &mut self,
        id: i64,
        driver: &str,
        end: &BisectionEnd,
    ) -> Result<bool, ArchiveError> {
        self.backend_mut().end_regression_bisection(id, driver, end)
    }

    /// Marks regression `id` (bisected or refused) fixed at commit
    /// `fixed_by`, and removes the suspicion under `suspicion_track` that
    /// compared `fixed_by` (the fix's, confirmed: no longer under way),
    /// in one transaction; false when it is active or fixed already.
    pub fn mark_regression_fixed(
        &mut self,
        id: i64,
        fixed_by: &str,
        suspicion_track: &str,
    ) -> Result<bool, ArchiveError> {
        self.backend_mut()
            .mark_regression_fixed(id, fixed_by, suspicion_track)
    }

    /// Takes for `sender`, for `hold`, the oldest report of the outbox
    /// that is not sent, is due, and that no other sender holds.
    pub fn take_notification(
        &mut self,
        sender: &str,
        hold: Duration,
    ) -> Result<Option<Notification>, ArchiveError> {
        let hold_us = micros_of(hold.as_secs_f64());
        self.backend_mut().take_notification(sender, hold_us)
    }

    /// Marks the notification of `hold` sent; false when the hold was
    /// lost (another sender took it over after it expired).
    pub fn notification_sent(&mut self, hold: SendHold) -> Result<bool, ArchiveError> {
        self.backend_mut().notification_sent(hold)
    }

    /// Records that the command of the notification of `hold` failed,
    /// with `error`; it is due again after `retry_after`.
    pub fn notification_failed(
        &mut self,
        hold: SendHold,
        error: &str,
        retry_after: Duration,
    ) -> Result<bool, ArchiveError> {
        let retry_after_us = micros_of(retry_after.as_secs_f64());
        self.backend_mut()
            .notification_failed(hold, error, retry_after_us)
    }

    /// Every notification, oldest first.
    pub fn notifications(&self) -> Result<Vec<Notification>, ArchiveError> {
        self.backend().notifications()
    }
}
