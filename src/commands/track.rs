//! `netbisect track`: watches a branch, a look every `--interval`
//! ([`crate::lab::tracker`]): its new commits measured on the lab's
//! workers, a change at the head confirmed, a confirmed regression
//! bisected on the workers and its report handed to `--notify`. `track
//! status` shows the lab: the workers and what each does, the queue, the
//! regressions (`--json`: `netbisect.lab/1`).
//!
//! The tracker keeps nothing of its own: its options and what it found
//! are in the archive, so that it can be stopped and started again, on
//! this machine or another, and carry on. Its progress goes to stderr: a
//! live line on a terminal, a line per event in a log.

use crate::bisection::Recipe;
use crate::cli::{LabListArgs, TrackAction, TrackArgs, TrackWatchArgs};
use crate::exit::{self, Code, Context, InputError};
use crate::global_options::GlobalOptions;
use crate::lab::job::{TRACK_SCHEMA, TrackSpec};
use crate::lab::notify::Retry;
use crate::lab::plan::HeadState;
use crate::lab::tracker::{Looked, TrackOptions, Tracker};
use crate::lab::worker::{open_patiently, sleep_or_stop};
use crate::output;
use crate::progress::Reporter;
use crate::views::lab::LabContext;
use std::time::Duration;

/// Commits before the head a new track starts from, without `--since`.
const DEFAULT_HISTORY: usize = 10;

pub fn run(global: &GlobalOptions, args: &TrackArgs) -> exit::Result<Code> {
    match &args.action {
        Some(TrackAction::Status(list)) => status(global, list),
        None => track(global, &args.watch),
    }
}

fn input(err: impl std::fmt::Display) -> exit::Failure {
    InputError(err.to_string()).into()
}

/// The kind of testbed, which clap asks for unless `status` is given.
fn testbed(args: &TrackWatchArgs) -> exit::Result<&str> {
    args.testbed
        .as_deref()
        .ok_or_else(|| input("give the kind of testbed to measure on: --testbed KIND"))
}

fn status(global: &GlobalOptions, args: &LabListArgs) -> exit::Result<Code> {
    let archive = crate::store::open_archive_read(global)?;
    let status = crate::lab::status::read(&archive, args.all)?;
    output::emit(
        global,
        || output::pretty(&status, "the lab's status"),
        || {
            output::template(
                global,
                "lab",
                &LabContext::new(&status, true),
                "the lab's status",
            )
        },
    )?;
    Ok(Code::Ok)
}

/// The track `args` describe, checked: the repository, the branch (or
/// its remote), the recipe, and the first commit tracked (the one an
/// earlier tracker of the same track started from, else `--since`, else
/// ten commits before the head).
fn spec_of(global: &GlobalOptions, args: &TrackWatchArgs) -> exit::Result<TrackSpec> {
    let repo = bisect::range::discover(&args.repo).map_err(input)?;
    let workdir = repo.workdir().ok_or_else(|| {
        input(format!(
            "{} is a bare repository: the commits are built in worktrees of a repository \
             with a working tree",
            args.repo.display()
        ))
    })?;
    let workdir = std::fs::canonicalize(workdir)
        .with_context(|| format!("failed to resolve {}", workdir.display()))?;
    let recipe: Recipe = crate::request::recipe::recipe_of(&args.recipe, &workdir)?;
    let head = match &args.remote {
        Some(remote) => bisect::fetch::fetch_branch(&repo, remote, &args.branch).map_err(input)?,
        None => bisect::range::resolve(&repo, &args.branch).map_err(input)?,
    };
    let mut spec = TrackSpec {
        schema: TRACK_SCHEMA.to_string(),
        repo: workdir.display().to_string(),
        branch: args.branch.clone(),
        remote: args.remote.clone(),
        since: String::new(),
        pool: testbed(args)?.to_string(),
        recipe,
        jobs: args.jobs,
        notify: args.notify.clone(),
        config_key: None,
    };
    let key = spec.key();
    let archive = crate::store::open_archive(global)?;
    let earlier = archive
        .tracks()?
        .into_iter()
        .find(|track| track.key == key)
        .and_then(|track| serde_json::from_str::<TrackSpec>(&track.spec).ok());
    spec.since = match (&args.since, earlier) {
        (Some(rev), _) => bisect::range::resolve(&repo, rev)
            .map_err(input)?
            .to_string(),
        (None, Some(earlier)) => {
            spec.config_key = earlier.config_key;
            earlier.since
        }
        (None, None) => {
            let history =
                bisect::range::commits_in_order(&repo, &head.to_string(), true).map_err(input)?;
            let first = history.len().saturating_sub(DEFAULT_HISTORY + 1);
            history[first].clone()
        }
    };
    Ok(spec)
}

fn track(global: &GlobalOptions, args: &TrackWatchArgs) -> exit::Result<Code> {
    let spec = spec_of(global, args)?;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "localhost".to_string());
    let options = TrackOptions {
        location: global.archive.location()?.clone(),
        spec,
        name: format!("{host}:{}", std::process::id()),
        hold: Duration::from_secs_f64(args.hold),
        poll: Duration::from_secs_f64((args.interval / 4.0).clamp(0.05, 5.0)),
        retry: Retry {
            first: Duration::from_secs_f64(args.retry),
            ..Retry::default()
        },
        template_dir: global.template_dir.clone(),
    };
    let location = options.location.clone();
    let mut tracker = Tracker::new(options);
    let reporter = Reporter::new(global, None);
    let say = |text: &str| reporter.line(text);
    say(&format!(
        "tracking {} of {} on {} (track {})",
        args.branch,
        args.remote
            .as_deref()
            .unwrap_or(&args.repo.display().to_string()),
        testbed(args)?,
        &tracker.key()[..12]
    ));
    let mut archive = open_patiently(&location, &say)?;
    // In a log, a status only when it changes.
    let mut last_status = String::new();
    let outcome = (|| loop {
        match tracker.look(&mut archive) {
            Ok(looked) => {
                for news in &looked.news {
                    say(news);
                }
                let status = status_line(&looked, tracker.n_driving());
                if status != last_status {
                    reporter.status(&status);
                    last_status = status;
                }
            }
            Err(err) if exit::classify(&err) == Code::Interrupted => return Err(err),
            Err(err) => {
                say(&crate::lab::worker::failure_text(&err));
                let away = crate::lab::worker::archive_away(&err);
                if away {
                    archive = open_patiently(&location, &say)?;
                }
            }
        }
        if args.once && tracker.n_driving() == 0 {
            return Ok(Code::Ok);
        }
        sleep_or_stop(Duration::from_secs_f64(args.interval))?;
    })();
    tracker.stop();
    outcome
}

/// The live line: where the head stands and what waits.
fn status_line(looked: &Looked, n_driving: usize) -> String {
    let head = match &looked.head {
        Some(HeadState::Steady) => "steady".to_string(),
        Some(HeadState::Warming) | None => "warming up".to_string(),
        Some(HeadState::Confirming { suspicion }) => format!(
            "confirming a change of {:+.1}% at the head",
            suspicion.change_pct
        ),
        Some(HeadState::Confirmed { suspicion }) => {
            format!("a change of {:+.1}% confirmed", suspicion.change_pct)
        }
    };
    format!(
        "{} of {} commits measured; head {head}; {} jobs waiting or taken; {} bisecting",
        looked.n_measured, looked.n_commits, looked.n_open_jobs, n_driving
    )
}
