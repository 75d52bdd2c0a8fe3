//! The context of `lab`, what `track status` and `regressions` print:
//! the lab as its archive holds it ([`LabStatus`], the `--json`
//! document), and beside it the tables laid out for people: the workers
//! and what each does, the jobs waiting or taken, the regressions and
//! their reports, how long the queue takes to drain, and what the lab
//! answers next and when.

use crate::lab::plan::{PRIORITY_BISECT, PRIORITY_CONFIRM, PRIORITY_HEAD};
use crate::render::table::{TableRow, lay_out};
use crate::views::bisection::duration;
use archive::lab::{Job, JobState, Notification, Regression, RegressionState, Track, Worker};
use serde::Serialize;

/// The schema of [`LabStatus`].
pub const LAB_SCHEMA: &str = "netbisect.lab/1";

/// A worker not seen for this long is taken for gone.
pub const GONE_AFTER_S: f64 = 120.0;

/// The lab as the archive holds it: `track status --json` and
/// `regressions --json`.
#[derive(Clone, Debug, Serialize)]
pub struct LabStatus {
    /// Always [`LAB_SCHEMA`].
    pub schema: &'static str,
    /// The archive's clock when read (microseconds since the epoch).
    pub now_us: i64,
    /// What the trackers watch.
    pub tracks: Vec<Track>,
    /// The workers, as each last said what it does.
    pub workers: Vec<Worker>,
    /// The jobs waiting or taken, oldest first.
    pub jobs: Vec<Job>,
    /// The regressions (the dismissed suspicions with `--all` only).
    pub regressions: Vec<Regression>,
    /// The reports, without their text.
    pub notifications: Vec<ReportState>,
    /// Mean seconds of the jobs done lately, taking to finishing.
    pub seconds_per_job: Option<f64>,
}

/// A report in the outbox, without its text.
#[derive(Clone, Debug, Serialize)]
pub struct ReportState {
    /// The regression it reports.
    pub regression_id: i64,
    /// When its command took it (microseconds since the epoch).
    pub sent_us: Option<i64>,
    /// Whether it has a command at all.
    pub has_command: bool,
    /// Its command's runs so far.
    pub attempts: i64,
    /// Why the last run failed.
    pub last_error: Option<String>,
}

impl ReportState {
    /// The state of `notification`.
    pub fn of(notification: &Notification) -> ReportState {
        ReportState {
            regression_id: notification.regression_id,
            sent_us: notification.sent_us,
            has_command: notification.command.is_some(),
            attempts: notification.attempts,
            last_error: notification.last_error.clone(),
        }
    }
}

/// What the `lab` template is given.
#[derive(Debug, Serialize)]
pub struct LabContext<'a> {
    /// The lab, as `--json` prints it.
    #[serde(flatten)]
    pub status: &'a LabStatus,
    /// Whether the workers, the queue and the tracks are shown (`track
    /// status`), or only the regressions (`regressions`).
    pub show_status: bool,
    /// The tracks, laid out.
    pub track_lines: Vec<String>,
    /// The workers, laid out.
    pub worker_lines: Vec<String>,
    /// The jobs waiting or taken, laid out.
    pub job_lines: Vec<String>,
    /// Jobs waiting for a worker.
    pub n_queued: usize,
    /// Jobs a worker holds.
    pub n_taken: usize,
    /// The workers seen lately.
    pub n_live_workers: usize,
    /// How long the queue takes to drain at the seconds a job took
    /// lately, on the workers seen lately, as people read a time.
    pub drains_in: Option<String>,
    /// The seconds a job took lately, as people read them.
    pub per_job: Option<String>,
    /// What the lab answers next and in about how long, when a job is
    /// waiting or taken ([`next_answer`]).
    pub next_answer: Option<String>,
    /// The regressions, laid out.
    pub regression_lines: Vec<String>,
}

/// The first twelve digits of a commit id.
fn short(commit: &str) -> String {
    commit.chars().take(12).collect()
}

/// The first ten digits of a commit id, for the regressions' table of
/// four commits a row.
fn shorter(commit: &str) -> String {
    commit.chars().take(10).collect()
}

/// Seconds from `then_us` to `now_us`.
fn seconds_between(then_us: i64, now_us: i64) -> f64 {
    (now_us - then_us) as f64 / 1e6
}

impl<'a> LabContext<'a> {
    /// The context of `status`, with the sections of `track status`
    /// when `show_status`.
    pub fn new(status: &'a LabStatus, show_status: bool) -> LabContext<'a> {
        let now = status.now_us;
        let n_live_workers = status
            .workers
            .iter()
            .filter(|worker| seconds_between(worker.seen_us, now) < GONE_AFTER_S)
            .count();
        let n_queued = count_state(&status.jobs, JobState::Queued);
        let n_taken = count_state(&status.jobs, JobState::Leased);
        let drains_in = status
            .seconds_per_job
            .filter(|_| n_live_workers > 0 && n_queued + n_taken > 0)
            .map(|seconds| {
                let rounds = (n_queued + n_taken).div_ceil(n_live_workers);
                duration(seconds * rounds as f64)
            });
        LabContext {
            status,
            show_status,
            track_lines: track_lines(&status.tracks),
            worker_lines: worker_lines(status),
            job_lines: job_lines(status),
            n_queued,
            n_taken,
            n_live_workers,
            drains_in,
            per_job: status.seconds_per_job.map(duration),
            next_answer: next_answer(&status.jobs, n_live_workers, status.seconds_per_job),
            regression_lines: regression_lines(status),
        }
    }
}

/// What the lab answers next, and in about how long. Workers take the
/// jobs of the highest priority first, so the next answer waits on
/// those: a suspicion's repeats (the change at the head confirmed or
/// dismissed), else a bisection's slots (its next step), else the newest
/// commit's first point; they are done in rounds of the workers seen
/// lately, each round the seconds a job took lately.
fn next_answer(
    jobs: &[Job],
    n_live_workers: usize,
    seconds_per_job: Option<f64>,
) -> Option<String> {
    let top = jobs.iter().map(|job| job.priority).max()?;
    let what = if top >= PRIORITY_CONFIRM {
        "a change at the head confirmed or dismissed"
    } else if top >= PRIORITY_BISECT {
        "a bisection's next step"
    } else if top >= PRIORITY_HEAD {
        "the newest commit's point"
    } else {
        "a gap between the commits measured filled"
    };
    let n_top = jobs.iter().filter(|job| job.priority == top).count();
    let when = match seconds_per_job.filter(|_| n_live_workers > 0) {
        Some(seconds) => format!(
            "in about {}",
            duration(seconds * n_top.div_ceil(n_live_workers) as f64)
        ),
        None => "once a worker takes its jobs".to_string(),
    };
    Some(format!("next answer: {what}, {when}"))
}

fn count_state(jobs: &[Job], state: JobState) -> usize {
    jobs.iter().filter(|job| job.state == state).count()
}

/// The widest line of the lab's tables.
const WIDTH: usize = 78;

/// `rows` laid out under `widths` (negative: left-aligned).
fn table(rows: &[TableRow], widths: Vec<i64>) -> Vec<String> {
    lay_out(rows, &[widths], WIDTH).unwrap_or_default()
}

fn track_lines(tracks: &[Track]) -> Vec<String> {
    let mut rows = vec![TableRow::of(["TRACK", "WATCHES"])];
    for track in tracks {
        let spec: serde_json::Value = serde_json::from_str(&track.spec).unwrap_or_default();
        let text = |key: &str| spec[key].as_str().unwrap_or("?").to_string();
        let watches = format!(
            "{} of {} on {}",
            text("branch"),
            spec["remote"]
                .as_str()
                .map_or_else(|| text("repo"), str::to_string),
            text("pool")
        );
        rows.push(TableRow::of([short(&track.key), watches]));
    }
    table(&rows, vec![-12, -1])
}

fn worker_lines(status: &LabStatus) -> Vec<String> {
    let now = status.now_us;
    let mut rows = vec![TableRow::of(["WORKER", "POOL", "HOST", "DOING", "SEEN"])];
    for worker in &status.workers {
        let ago = seconds_between(worker.seen_us, now);
        let doing = match worker.job_id {
            _ if ago >= GONE_AFTER_S => "gone".to_string(),
            Some(job_id) => status
                .jobs
                .iter()
                .find(|job| job.id == job_id)
                .map_or(format!("job {job_id}"), |job| {
                    format!("job {job_id}, {} {}", job.kind, short(commit_of(job)))
                }),
            None => "waiting for a job".to_string(),
        };
        rows.push(TableRow::of([
            worker.name.clone(),
            worker.pool.clone(),
            worker.host.clone(),
            doing,
            format!("{} ago", duration(ago.max(0.0))),
        ]));
    }
    table(&rows, vec![-1, -1, -1, -1, 1])
}

/// The commit a job's payload names (`?` when it names none).
fn commit_of(job: &Job) -> &str {
    // The payload's `"commit":"<hex>"`, found without a JSON parser's
    // allocation for each row.
    job.payload
        .split_once("\"commit\":\"")
        .and_then(|(_, rest)| rest.split('"').next())
        .unwrap_or("?")
}

fn job_lines(status: &LabStatus) -> Vec<String> {
    let now = status.now_us;
    let mut rows = vec![TableRow::of([
        "JOB", "KIND", "COMMIT", "FOR", "PRIO", "STATE", "LEASE",
    ])];
    for job in &status.jobs {
        let (state, lease) = match (job.state, job.lease_expires_us) {
            (JobState::Leased, Some(expires)) => {
                let left = seconds_between(now, expires);
                let lease = if left >= 0.0 {
                    format!("{} left", duration(left))
                } else {
                    format!("expired {} ago", duration(-left))
                };
                (
                    format!("taken by {}", job.worker.as_deref().unwrap_or("?")),
                    lease,
                )
            }
            _ => ("queued".to_string(), "-".to_string()),
        };
        rows.push(TableRow::of([
            job.id.to_string(),
            job.kind.clone(),
            short(commit_of(job)),
            short(&job.owner),
            job.priority.to_string(),
            state,
            lease,
        ]));
    }
    table(&rows, vec![1, -1, -1, -1, 1, -1, -1])
}

/// The change a regression's detail found, in percent.
fn change_of(regression: &Regression) -> String {
    let detail: serde_json::Value = serde_json::from_str(&regression.detail).unwrap_or_default();
    detail["difference"]["diff_pct"]
        .as_f64()
        .map_or("-".to_string(), |pct| format!("{pct:+.1}%"))
}

fn report_of(status: &LabStatus, regression: &Regression) -> String {
    let Some(report) = status
        .notifications
        .iter()
        .find(|report| report.regression_id == regression.id)
    else {
        return "-".to_string();
    };
    match (report.sent_us, report.has_command, report.attempts) {
        (Some(_), false, _) => "kept".to_string(),
        (Some(_), true, _) => "sent".to_string(),
        (None, _, 0) => "waiting".to_string(),
        (None, _, attempts) => format!("failed {attempts}x"),
    }
}

fn regression_lines(status: &LabStatus) -> Vec<String> {
    let mut rows = vec![TableRow::of([
        "ID", "STATE", "GOOD", "BAD", "CHANGE", "CULPRIT", "FIXED AT", "REPORT",
    ])];
    for regression in &status.regressions {
        let state = match regression.state {
            RegressionState::Suspected => "suspected",
            RegressionState::Open => "open",
            RegressionState::Bisecting => "bisecting",
            RegressionState::Bisected => "bisected",
            RegressionState::Refused => "refused",
            RegressionState::Fixed => "fixed",
            RegressionState::Dismissed => "dismissed",
        };
        rows.push(TableRow::of([
            regression.id.to_string(),
            state.to_string(),
            shorter(&regression.good),
            shorter(&regression.bad),
            change_of(regression),
            regression
                .culprit
                .as_deref()
                .map_or("-".to_string(), shorter),
            regression
                .fixed_by
                .as_deref()
                .map_or("-".to_string(), shorter),
            report_of(status, regression),
        ]));
    }
    table(&rows, vec![1, -1, -1, -1, 1, -1, -1, -1])
}
