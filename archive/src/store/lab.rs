//! What the archive keeps of a lab that runs itself: the queue of work
//! for the testbeds' workers ([`Job`], leased to one worker at a time),
//! the workers as they last said what they do ([`Worker`]), what each
//! tracker watches ([`Track`]), the regressions found ([`Regression`],
//! one bisection each) and the reports waiting to be handed to a
//! notification command ([`Notification`]). The public reads and writes
//! are `lab`'s; here the types, how a row of either backend gives each
//! (one decoder per type over the column lists beside it), and the
//! times, which the lab's tables keep as integer microseconds since the
//! Unix epoch (a lease's expiry is compared with the clock, not read).
//!
//! Whose clock: on PostgreSQL the server's (`clock_timestamp()`), so
//! that workers on machines whose clocks disagree still agree on when a
//! lease expires; in a SQLite file, which serves one machine, this
//! process's. Payloads, results, details and specs are the caller's JSON
//! documents: the archive checks that they are JSON and nothing more.

use super::row::Columns;
use crate::ArchiveError;
use serde::Serialize;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Microseconds since the Unix epoch, by this process's clock.
pub(crate) fn local_clock_us() -> i64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    i64::try_from(since.as_micros()).unwrap_or(i64::MAX)
}

/// A time of the lab's tables (microseconds since the epoch) in RFC 3339,
/// as every other time netbisect writes.
pub fn time_of_us(micros: i64) -> String {
    let micros = u64::try_from(micros).unwrap_or(0);
    run_record::time::rfc3339_utc(UNIX_EPOCH + Duration::from_micros(micros))
}

/// Seconds as whole microseconds, for a lease's length.
pub(crate) fn micros_of(seconds: f64) -> i64 {
    if seconds.is_finite() && seconds > 0.0 {
        (seconds * 1e6).min(i64::MAX as f64 / 2.0) as i64
    } else {
        0
    }
}

/// A job to put in the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewJob {
    /// Which workers may take it: those serving this pool (a kind of
    /// testbed).
    pub pool: String,
    /// What kind of work it is, in the caller's words (`measure`,
    /// `slot`).
    pub kind: String,
    /// What enqueued it (a tracker's key, a bisection), for listing and
    /// cancelling its jobs together.
    pub owner: String,
    /// The job's identity: enqueuing a key that is queued or done already
    /// adds nothing, so that a tracker that restarts, or two that watch
    /// the same branch, never ask for the same work twice.
    pub key: String,
    /// What to do, a JSON document the worker reads.
    pub payload: String,
    /// Higher first; among equals, the oldest first.
    pub priority: i64,
}

/// Where a job stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for a worker.
    Queued,
    /// A worker holds it (its lease may have expired: the next taker
    /// takes it over).
    Leased,
    /// Finished, with its result.
    Done,
    /// Given up: its lease expired [`MAX_ATTEMPTS`] times, or it was
    /// cancelled.
    Failed,
}

impl JobState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Leased => "leased",
            JobState::Done => "done",
            JobState::Failed => "failed",
        }
    }

    fn parse(text: &str) -> Result<JobState, ArchiveError> {
        Ok(match text {
            "queued" => JobState::Queued,
            "leased" => JobState::Leased,
            "done" => JobState::Done,
            "failed" => JobState::Failed,
            other => return Err(unknown_state("job", other)),
        })
    }
}

fn unknown_state(what: &str, state: &str) -> ArchiveError {
    ArchiveError::InvalidQuery(format!("a {what} in the unknown state {state:?}"))
}

/// How often a job's lease may expire (its worker died, or lost the
/// archive) before the job is given up as one that kills its workers.
pub const MAX_ATTEMPTS: i64 = 5;

/// A job of the queue, as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Job {
    /// Its id, unique in this archive.
    pub id: i64,
    /// The pool of workers that may take it.
    pub pool: String,
    /// Its kind.
    pub kind: String,
    /// What enqueued it.
    pub owner: String,
    /// Its identity ([`NewJob::key`]).
    pub key: String,
    /// What to do (JSON).
    pub payload: String,
    /// Higher first.
    pub priority: i64,
    /// Where it stands.
    pub state: JobState,
    /// The worker that holds it, or held it last.
    pub worker: Option<String>,
    /// How many times it was taken; the lease of the last taker is this
    /// number.
    pub attempts: i64,
    /// When it was queued (microseconds since the epoch).
    pub created_us: i64,
    /// When its last taker took it.
    pub leased_us: Option<i64>,
    /// When its last taker's lease expires (or expired).
    pub lease_expires_us: Option<i64>,
    /// When it finished or was given up.
    pub finished_us: Option<i64>,
    /// What it gave (JSON), once done; why it was given up, once failed.
    pub result: Option<String>,
}

impl Job {
    /// The lease its last taker holds, while it is leased.
    pub fn lease(&self) -> Option<Lease> {
        (self.state == JobState::Leased).then_some(Lease {
            job_id: self.id,
            attempt: self.attempts,
        })
    }
}

/// The columns of `lab_jobs` a [`Job`] is read from, in the order
/// [`Job::from_row`] reads them.
pub(crate) const JOB_COLUMNS: &str = "id, pool, kind, owner, job_key, payload, priority, state, \
     worker, attempts, created_us, leased_us, lease_expires_us, finished_us, result";

impl Job {
    pub(crate) fn from_row(row: &impl Columns) -> Result<Job, ArchiveError> {
        Ok(Job {
            id: row.read(0)?,
            pool: row.read(1)?,
            kind: row.read(2)?,
            owner: row.read(3)?,
            key: row.read(4)?,
            payload: row.read(5)?,
            priority: row.read(6)?,
            state: JobState::parse(&row.read::<String>(7)?)?,
            worker: row.read(8)?,
            attempts: row.read(9)?,
            created_us: row.read(10)?,
            leased_us: row.read(11)?,
            lease_expires_us: row.read(12)?,
            finished_us: row.read(13)?,
            result: row.read(14)?,
        })
    }
}

/// A worker's hold on a job: the job and the attempt that took it. Only
/// the holder of the newest attempt may heartbeat or finish it, so that
/// a worker thought dead, whose job another took over, changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Lease {
    /// The job.
    pub job_id: i64,
    /// The attempt ([`Job::attempts`] when it was taken).
    pub attempt: i64,
}

/// Which jobs a listing selects; every filter set must match.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobFilter {
    /// Enqueued by this owner.
    pub owner: Option<String>,
    /// In these states (all when empty).
    pub states: Vec<JobState>,
}

/// How finishing a job went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finished {
    /// Its runs are stored and it is done.
    Done,
    /// It was done already by this same lease: an earlier attempt to
    /// finish it committed, and its answer was lost on the way back.
    AlreadyDone,
    /// Another worker holds it now (this lease expired and the job was
    /// taken over), or it was given up: nothing was stored.
    LeaseLost,
}

/// What a worker says of itself at each look at the queue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerNote {
    /// Its name, unique in the lab (`--testbed`).
    pub name: String,
    /// The pool it serves.
    pub pool: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id there.
    pub pid: i64,
    /// The job it holds, if any.
    pub job_id: Option<i64>,
}

/// A worker as it last said what it does.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Worker {
    /// Its name.
    pub name: String,
    /// The pool it serves.
    pub pool: String,
    /// The host it runs on.
    pub host: String,
    /// Its process id there.
    pub pid: i64,
    /// The job it held when it last said so.
    pub job_id: Option<i64>,
    /// When it first said so (microseconds since the epoch).
    pub started_us: i64,
    /// When it last said so.
    pub seen_us: i64,
}

pub(crate) const WORKER_COLUMNS: &str = "name, pool, host, pid, job_id, started_us, seen_us";

impl Worker {
    pub(crate) fn from_row(row: &impl Columns) -> Result<Worker, ArchiveError> {
        Ok(Worker {
            name: row.read(0)?,
            pool: row.read(1)?,
            host: row.read(2)?,
            pid: row.read(3)?,
            job_id: row.read(4)?,
            started_us: row.read(5)?,
            seen_us: row.read(6)?,
        })
    }
}

/// What a tracker watches, as it last said.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Track {
    /// Its key: the same branch watched the same way has the same key.
    pub key: String,
    /// The tracker's description of it (JSON).
    pub spec: String,
    /// When it was first tracked (microseconds since the epoch).
    pub created_us: i64,
    /// When a tracker last looked at it.
    pub seen_us: i64,
}

pub(crate) const TRACK_COLUMNS: &str = "track_key, spec, created_us, seen_us";

impl Track {
    pub(crate) fn from_row(row: &impl Columns) -> Result<Track, ArchiveError> {
        Ok(Track {
            key: row.read(0)?,
            spec: row.read(1)?,
            created_us: row.read(2)?,
            seen_us: row.read(3)?,
        })
    }
}

/// Where a regression stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RegressionState {
    /// A suspicion being confirmed: the range's two commits are
    /// measured again until they are found to differ (it opens) or not
    /// (it is dismissed).
    Suspected,
    /// Confirmed, its bisection not started yet.
    Open,
    /// Its bisection runs.
    Bisecting,
    /// Its bisection named a culprit; the report is in the outbox.
    Bisected,
    /// Its bisection found that its ends do not differ after all, or
    /// named no single commit.
    Refused,
    /// The metric came back later.
    Fixed,
    /// A suspicion that measuring again did not confirm: kept so that
    /// the same range is not suspected again.
    Dismissed,
}

impl RegressionState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            RegressionState::Suspected => "suspected",
            RegressionState::Open => "open",
            RegressionState::Bisecting => "bisecting",
            RegressionState::Bisected => "bisected",
            RegressionState::Refused => "refused",
            RegressionState::Fixed => "fixed",
            RegressionState::Dismissed => "dismissed",
        }
    }

    fn parse(text: &str) -> Result<RegressionState, ArchiveError> {
        Ok(match text {
            "suspected" => RegressionState::Suspected,
            "open" => RegressionState::Open,
            "bisecting" => RegressionState::Bisecting,
            "bisected" => RegressionState::Bisected,
            "refused" => RegressionState::Refused,
            "fixed" => RegressionState::Fixed,
            "dismissed" => RegressionState::Dismissed,
            other => return Err(unknown_state("regression", other)),
        })
    }

    /// True while its bisection is to start or runs: a track has at most
    /// one such regression.
    pub fn is_active(self) -> bool {
        matches!(self, RegressionState::Open | RegressionState::Bisecting)
    }
}

/// A regression a tracker confirmed, and what became of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Regression {
    /// Its id, unique in this archive.
    pub id: i64,
    /// The track it was found on.
    pub track: String,
    /// The last commit measured before the change.
    pub good: String,
    /// The first commit measured after it.
    pub bad: String,
    /// Where it stands.
    pub state: RegressionState,
    /// What the detection found (JSON, the tracker's).
    pub detail: String,
    /// Its bisection session, once started.
    pub session_id: Option<i64>,
    /// The commit its bisection named.
    pub culprit: Option<String>,
    /// The commit at which the metric was found back, once fixed.
    pub fixed_by: Option<String>,
    /// The process that drives its bisection, while it does.
    pub driver: Option<String>,
    /// When the driver's hold expires (microseconds since the epoch).
    pub driver_expires_us: Option<i64>,
    /// When it was confirmed.
    pub opened_us: i64,
    /// When it last changed.
    pub updated_us: i64,
}

pub(crate) const REGRESSION_COLUMNS: &str = "id, track, good, bad, state, detail, session_id, \
     culprit, fixed_by, driver, driver_expires_us, opened_us, updated_us";

impl Regression {
    pub(crate) fn from_row(row: &impl Columns) -> Result<Regression, ArchiveError> {
        Ok(Regression {
            id: row.read(0)?,
            track: row.read(1)?,
            good: row.read(2)?,
            bad: row.read(3)?,
            state: RegressionState::parse(&row.read::<String>(4)?)?,
            detail: row.read(5)?,
            session_id: row.read(6)?,
            culprit: row.read(7)?,
            fixed_by: row.read(8)?,
            driver: row.read(9)?,
            driver_expires_us: row.read(10)?,
            opened_us: row.read(11)?,
            updated_us: row.read(12)?,
        })
    }
}

/// What opening a regression did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opened {
    /// A new regression, with this id.
    New(i64),
    /// The same regression (track, good and bad) was opened before, by
    /// this tracker or another: this id.
    Existing(i64),
    /// The track has another regression whose bisection is to start or
    /// runs (this id): one at a time per track.
    AnotherActive(i64),
}

/// How a regression's bisection ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BisectionEnd {
    /// It named `culprit`; `report` goes to the outbox, to be handed to
    /// `command` (a shell command, the report on its stdin).
    Culprit {
        /// The first bad commit.
        culprit: String,
        /// The report, as `bisect` prints it.
        report: String,
        /// The notification command, when there is one; without it the
        /// report is kept, marked as sent to no one.
        command: Option<String>,
    },
    /// It was refused, or named no single commit.
    Refused,
}

/// A report in the outbox.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Notification {
    /// Its id.
    pub id: i64,
    /// The regression it reports.
    pub regression_id: i64,
    /// The command it is handed to (its stdin), if any.
    pub command: Option<String>,
    /// The report.
    pub body: String,
    /// When it was put in the outbox (microseconds since the epoch).
    pub created_us: i64,
    /// When its command succeeded (or, without a command, when it was
    /// kept).
    pub sent_us: Option<i64>,
    /// How many times its command was run.
    pub attempts: i64,
    /// Why the last run failed.
    pub last_error: Option<String>,
    /// Not to be tried before this time.
    pub next_attempt_us: i64,
    /// The process sending it, while it does.
    pub sender: Option<String>,
    /// When the sender's hold expires.
    pub sender_expires_us: Option<i64>,
}

pub(crate) const NOTIFICATION_COLUMNS: &str = "id, regression_id, command, body, created_us, \
     sent_us, attempts, last_error, next_attempt_us, sender, sender_expires_us";

impl Notification {
    pub(crate) fn from_row(row: &impl Columns) -> Result<Notification, ArchiveError> {
        Ok(Notification {
            id: row.read(0)?,
            regression_id: row.read(1)?,
            command: row.read(2)?,
            body: row.read(3)?,
            created_us: row.read(4)?,
            sent_us: row.read(5)?,
            attempts: row.read(6)?,
            last_error: row.read(7)?,
            next_attempt_us: row.read(8)?,
            sender: row.read(9)?,
            sender_expires_us: row.read(10)?,
        })
    }

    /// The sender's hold on it: the attempt its last take made.
    pub fn hold(&self) -> SendHold {
        SendHold {
            notification_id: self.id,
            attempt: self.attempts,
        }
    }
}

/// A sender's hold on a notification it runs the command of: the
/// notification and the attempt that took it, as a [`Lease`] is a
/// worker's on a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct SendHold {
    /// The notification.
    pub notification_id: i64,
    /// The attempt ([`Notification::attempts`] when it was taken).
    pub attempt: i64,
}

/// The result of a job given up because its lease expired
/// [`MAX_ATTEMPTS`] times.
pub(crate) fn given_up() -> String {
    given_up_because(&format!(
        "its lease expired {MAX_ATTEMPTS} times: each worker that took it died, hung or \
         lost the archive"
    ))
}

/// The result of a job given up for `reason`: `{"given_up": REASON}`.
pub(crate) fn given_up_because(reason: &str) -> String {
    serde_json::json!({ "given_up": reason }).to_string()
}

/// SQL that drops the lab's tables, taking an archive of either backend
/// back to the schema before them (for the tests of upgrades).
#[cfg(test)]
pub(crate) const DROP_LAB_TABLES: &str = "DROP TABLE lab_notifications; \
     DROP TABLE lab_regressions; DROP TABLE lab_tracks; DROP TABLE lab_workers; \
     DROP TABLE lab_jobs;";
