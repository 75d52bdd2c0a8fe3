//! A testbed's worker: it takes the jobs of its pool from the archive's
//! queue, one at a time, and does each (measure a commit once, with the
//! recipe the job names, in a worktree of its own), extending its lease
//! from a thread of its own while the job runs; the run and the job's
//! end are stored in one transaction, and only while the lease holds.
//!
//! What survives what: a worker killed mid-job loses that job's
//! measurement only (its lease expires and another worker takes the job
//! over); an archive that goes away (a database server restarting) is
//! opened again until it is back, the finished run kept meanwhile and
//! stored then, once, if the lease still holds (else another worker
//! measured the commit, and this run is dropped). A finished run of a
//! shared archive is kept in the spool ([`crate::spool`]) until the
//! archive said how its job went, so that a worker killed after the
//! measurement loses nothing: the next worker started on the machine
//! sends it. A signal releases the job, so that it returns to the queue
//! at once.

use super::job::{JobPayload, JobResult, RESULT_SCHEMA};
use crate::bisection::measuring::{self, Checked};
use crate::exit::{self, Context};
use archive::lab::{Finished, Job, Lease, WorkerNote};
use archive::{Archive, CanonicalRun, Location};
use bisect::graph::CommitInfo;
use bisect::measure::CommandMeasurer;
use bisect::worktree::BisectWorktree;
use git2::Oid;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How a worker works.
#[derive(Clone, Debug)]
pub struct WorkerOptions {
    /// The archive.
    pub location: Location,
    /// The worker's name (its testbed's).
    pub name: String,
    /// The pool it serves.
    pub pool: String,
    /// Its repository, when not the one a job names.
    pub repo: Option<PathBuf>,
    /// Where its worktree and the consoles of failed boots are kept.
    pub state_dir: PathBuf,
    /// A job's lease, extended every third of it.
    pub lease: Duration,
    /// How long it waits between looks at an empty queue.
    pub poll: Duration,
    /// What the VM runner tells on stderr.
    pub notes: crate::vm::Notes,
}

/// What a worker tells as it works.
pub type Say<'a> = &'a dyn Fn(&str);

/// Opens the archive, again and again until it answers (or a signal
/// comes): a worker outlives a database server's restart.
pub fn open_patiently(location: &Location, say: Say<'_>) -> exit::Result<Archive> {
    let mut delay = Duration::from_millis(200);
    let mut told = false;
    loop {
        match Archive::open_location(location) {
            Ok(archive) => {
                if told {
                    say(&format!("the archive at {location} answers again"));
                }
                return Ok(archive);
            }
            Err(err) if err.is_transient() => {
                if !told {
                    say(&format!("{err}; trying again until it answers"));
                    told = true;
                }
            }
            Err(err) => return Err(exit::Failure::from(err).context("failed to open the archive")),
        }
        sleep_or_stop(delay)?;
        delay = (delay * 2).min(Duration::from_secs(5));
    }
}

/// Whether `failure` comes of the archive being away, or of a
/// transaction it rolled back ([`archive::ArchiveError::is_transient`]):
/// opening it again may do, where any other failure stays.
pub fn archive_away(failure: &exit::Failure) -> bool {
    failure
        .chain()
        .filter_map(|cause| cause.downcast_ref::<archive::ArchiveError>())
        .any(archive::ArchiveError::is_transient)
}

/// A failure a long-running process goes on after, as its log says it:
/// `error: ...` and a line for each cause.
pub fn failure_text(failure: &exit::Failure) -> String {
    let text = exit::error_text(failure);
    text.trim_end()
        .strip_prefix("netbisect: ")
        .unwrap_or(text.trim_end())
        .to_string()
}

/// Sleeps `delay`, or stops at a signal.
pub fn sleep_or_stop(delay: Duration) -> exit::Result<()> {
    let until = Instant::now() + delay;
    loop {
        child_process::interrupt::check()
            .map_err(|interrupted| exit::Failure::from(WorkerStopped(interrupted)))?;
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(());
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

/// A signal stopped the worker.
#[derive(Debug, thiserror::Error)]
#[error("the worker was stopped ({0})")]
pub struct WorkerStopped(child_process::interrupt::Interrupted);

impl exit::ExitCoded for WorkerStopped {
    fn exit_code(&self) -> exit::Code {
        exit::Code::Interrupted
    }
}

/// Takes one job, does it and stores what it gave; false when the queue
/// had none.
pub fn work_once(
    options: &WorkerOptions,
    archive: &mut Archive,
    say: Say<'_>,
) -> exit::Result<bool> {
    note(archive, options, None)?;
    let pools = [options.pool.clone()];
    let Some(job) = archive.take_job(&options.name, &pools, options.lease)? else {
        return Ok(false);
    };
    let Some(lease) = job.lease() else {
        return Ok(false);
    };
    note(archive, options, Some(job.id))?;
    say(&format!(
        "job {} ({}, attempt {}): {}",
        job.id,
        job.kind,
        job.attempts,
        super::job::commit_of(&job).unwrap_or_default()
    ));
    let started = Instant::now();
    let beat = Heartbeat::start(options, lease);
    let done = do_job(options, &job);
    let lost = beat.stop();
    let (runs, result) = match done {
        Ok(done) => done,
        Err(err) => {
            // Stopped by a signal, or the worker's own trouble: the job
            // goes back to the queue for another.
            let _ = archive.release_job(lease);
            return Err(err);
        }
    };
    let result = JobResult {
        seconds: started.elapsed().as_secs_f64(),
        ..result
    };
    if lost {
        say(&format!(
            "job {}: the lease was lost while it ran; what it measured is dropped",
            job.id
        ));
        return Ok(true);
    }
    finish(options, archive, lease, &runs, &result, say)?;
    note(archive, options, None)?;
    Ok(true)
}

fn note(archive: &mut Archive, options: &WorkerOptions, job_id: Option<i64>) -> exit::Result<()> {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "?".to_string());
    archive.note_worker(&WorkerNote {
        name: options.name.clone(),
        pool: options.pool.clone(),
        host,
        pid: i64::from(std::process::id()),
        job_id,
    })?;
    Ok(())
}

/// Stores the job's runs and end, again through a reopened archive
/// while it is away, until the archive says how it went.
fn finish(
    options: &WorkerOptions,
    archive: &mut Archive,
    lease: Lease,
    runs: &[CanonicalRun],
    result: &JobResult,
    say: Say<'_>,
) -> exit::Result<()> {
    let text = serde_json::to_string(result).context("failed to encode the job's result")?;
    // The runs are kept on this machine first, so that a worker killed
    // before the archive has them (or while it is away) loses nothing:
    // the next worker started here sends them. Removed once the archive
    // said how the job went.
    let mut kept = keep_in_spool(&options.location, runs, say);
    loop {
        let finished = archive.finish_job(lease, runs, &text);
        if finished.is_ok() {
            for path in kept.drain(..) {
                crate::spool::forget(&path)?;
            }
        }
        match finished {
            Ok(Finished::Done | Finished::AlreadyDone) => {
                say(&match (&result.run_id, &result.skip) {
                    (Some(run_id), _) => format!(
                        "job {}: run {} stored",
                        lease.job_id,
                        &run_id[..run_id.len().min(12)]
                    ),
                    (None, Some(skip)) => format!("job {}: skipped ({skip})", lease.job_id),
                    (None, None) => format!("job {}: done", lease.job_id),
                });
                return Ok(());
            }
            Ok(Finished::LeaseLost) => {
                say(&format!(
                    "job {}: another worker took it over; what this one measured is dropped",
                    lease.job_id
                ));
                return Ok(());
            }
            Err(err) if err.is_transient() => {
                say(&format!(
                    "job {}: {err}; storing it once the archive answers{}",
                    lease.job_id,
                    match kept.first().and_then(|path| path.parent()) {
                        Some(dir) => format!(" (kept in {} meanwhile)", dir.display()),
                        None => String::new(),
                    }
                ));
                sleep_or_stop(Duration::from_millis(500))?;
                *archive = open_patiently(&options.location, say)?;
            }
            Err(err) => {
                return Err(exit::Failure::from(err).context("failed to store the job's run"));
            }
        }
    }
}

/// Keeps `runs` in the spool of the shared archive at `location` (see
/// [`crate::spool`]) and returns the files; none for an archive file,
/// which is never away. A spool that cannot be written is said and
/// done without: the archive may well take the runs at once.
fn keep_in_spool(location: &Location, runs: &[CanonicalRun], say: Say<'_>) -> Vec<PathBuf> {
    if location.file().is_some() || runs.is_empty() {
        return Vec::new();
    }
    let address = location.to_string();
    let kept = crate::spool::Spool::of_archive(&address).and_then(|spool| {
        runs.iter()
            .map(|run| spool.keep(&address, run.record()))
            .collect::<exit::Result<Vec<_>>>()
    });
    kept.unwrap_or_else(|err| {
        say(&format!(
            "warning: the run could not be kept on this machine: {}",
            failure_text(&err)
        ));
        Vec::new()
    })
}

/// Opens the archive as [`open_patiently`] does, then sends it the runs
/// its spool kept (a worker killed while the archive was away left
/// them), saying how many.
pub fn open_and_send_spooled(location: &Location, say: Say<'_>) -> exit::Result<Archive> {
    let mut archive = open_patiently(location, say)?;
    if location.file().is_none() {
        match crate::store::send_spooled(location, &mut archive) {
            Ok(0) => {}
            Ok(n_sent) => say(&format!("sent {n_sent} spooled runs to {location}")),
            Err(err) => say(&format!("warning: {}", failure_text(&err))),
        }
    }
    Ok(archive)
}

/// Does `job`: the commit built and measured once in the worker's
/// worktree; its run (none for a skip) and what it gave.
fn do_job(options: &WorkerOptions, job: &Job) -> exit::Result<(Vec<CanonicalRun>, JobResult)> {
    let skip = |reason: String| {
        (
            Vec::new(),
            JobResult {
                schema: RESULT_SCHEMA.to_string(),
                run_id: None,
                value: None,
                config_key: None,
                skip: Some(reason),
                worker: options.name.clone(),
                seconds: 0.0,
            },
        )
    };
    let payload: JobPayload = match serde_json::from_str(&job.payload) {
        Ok(payload) => payload,
        Err(err) => {
            return Ok(skip(format!(
                "the job is not one this netbisect reads: {err}"
            )));
        }
    };
    let repo_path = options
        .repo
        .clone()
        .unwrap_or_else(|| PathBuf::from(&payload.repo));
    let repo = bisect::range::discover(&repo_path)
        .map_err(|err| exit::Failure::msg(format!("cannot open {}: {err}", repo_path.display())))?;
    let Some(oid) = find_commit(&repo, &payload) else {
        return Ok(skip(format!(
            "commit {} is not in {} (nor on its branch's remote)",
            payload.commit,
            repo_path.display()
        )));
    };
    let worktree = BisectWorktree::open_or_create(
        &repo,
        &options.state_dir,
        &worktree_name(&options.name),
        oid,
    )
    .context("failed to prepare the worker's worktree")?;
    let mut env = vec![("NETBISECT_TESTBED".to_string(), options.name.clone())];
    if let Some(slot) = payload.slot {
        env.push(("NETBISECT_SLOT".to_string(), slot.slot.to_string()));
        env.push(("NETBISECT_JOBS".to_string(), slot.jobs.to_string()));
    }
    let recipe = &payload.recipe;
    let mut commands = CommandMeasurer::new(&worktree, recipe.step()?).with_env(env);
    let method = measuring::method_of(
        recipe,
        worktree.path(),
        options.state_dir.join("consoles"),
        options.notes,
    )?;
    let commit = CommitInfo::bare(payload.commit.clone());
    let measured = measuring::measure_record(&method, &mut commands, &commit)?;
    Ok(
        match measuring::checked(&commit, measured, recipe.metric()?)? {
            Checked::Skip(reason) => skip(reason),
            Checked::Run(run, value) => {
                let result = JobResult {
                    schema: RESULT_SCHEMA.to_string(),
                    run_id: Some(run.record().id.clone()),
                    value: Some(value),
                    config_key: Some(run.record().config_key.clone()),
                    skip: None,
                    worker: options.name.clone(),
                    seconds: 0.0,
                };
                (vec![*run], result)
            }
        },
    )
}

/// The commit of `payload` in `repo`, fetched from its branch's remote
/// when the repository lacks it.
fn find_commit(repo: &git2::Repository, payload: &JobPayload) -> Option<Oid> {
    let oid = Oid::from_str(&payload.commit).ok()?;
    if repo.find_commit(oid).is_ok() {
        return Some(oid);
    }
    let remote = payload.remote.as_deref()?;
    bisect::fetch::fetch_branch(repo, remote, &payload.branch).ok()?;
    repo.find_commit(oid).ok().map(|commit| commit.id())
}

/// The worktree of worker `name`: its name made of the characters git
/// takes in a worktree's name.
fn worktree_name(name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("netbisect-worker-{safe}")
}

/// The thread that extends a job's lease while the job runs.
struct Heartbeat {
    stop: mpsc::Sender<()>,
    lost: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Heartbeat {
    /// Extends `lease` every third of its length, through a connection
    /// of its own (opened again when the archive comes back), until
    /// stopped; a lease found taken over is remembered as lost.
    fn start(options: &WorkerOptions, lease: Lease) -> Heartbeat {
        let (stop, stopped) = mpsc::channel::<()>();
        let lost = Arc::new(AtomicBool::new(false));
        let (location, length) = (options.location.clone(), options.lease);
        let thread = {
            let lost = Arc::clone(&lost);
            std::thread::spawn(move || {
                let mut archive: Option<Archive> = None;
                while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(length / 3) {
                    if archive.is_none() {
                        archive = Archive::open_location(&location).ok();
                    }
                    match archive
                        .as_mut()
                        .map(|archive| archive.heartbeat_job(lease, length))
                    {
                        Some(Ok(true)) => {}
                        Some(Ok(false)) => {
                            lost.store(true, Ordering::SeqCst);
                            return;
                        }
                        // The archive is away: try again at the next beat.
                        Some(Err(_)) | None => archive = None,
                    }
                }
            })
        };
        Heartbeat { stop, lost, thread }
    }

    /// Stops the beats; whether the lease was lost meanwhile.
    fn stop(self) -> bool {
        let _ = self.stop.send(());
        let _ = self.thread.join();
        self.lost.load(Ordering::SeqCst)
    }
}
