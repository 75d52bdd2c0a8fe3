//! `netbisect bisect`: start, run, status, log, report and reset a
//! bisection.
//!
//! A session lives in the archive: `start` checks everything and records
//! the session's description ([`session::SessionSpec`]); `run` builds the range
//! with bisect's git layer, opens the bisect worktree under the
//! repository's git directory (`.git/netbisect/`), and runs the engine
//! with the archive-backed measurer and journal of [`wiring`], which
//! resumes from the journal after any interruption; `status`, `log` and
//! `report` replay the journal without measuring; `reset` removes the
//! worktree and ends the session, keeping its runs.
//!
//! # JSON
//!
//! `start --json` and `status --json` print a `netbisect.bisect-status/1`
//! document ([`crate::views::bisect_status::StatusDoc`]); `run --json` and `report --json` print
//! bisect's report (`netbisect.bisect/1`) or refusal
//! (`netbisect.bisect-refusal/1`).
//!
//! This module holds the dispatch and the commands that change a session
//! (`start`, `run`, `reset`); [`session`] its state, [`status`] the
//! status and the log, [`report`] the report of a finished bisection,
//! [`timing`] what it cost in time (jobs, rounds, wall-clock).

mod progress;
mod report;
use crate::bisection::{ArchiveJournal, Range};
use crate::cli::{BisectAction, BisectArgs, BisectRepoArgs, BisectRunArgs, BisectStartArgs};
use crate::exit::{self, Code, Context, InputError};
use crate::global_options::GlobalOptions;
use crate::output;
use bisect::decision::Method as WalkMethod;
use bisect::engine;
use bisect::measure::CommandMeasurer;
use bisect::range;
use bisect::worktree::BisectWorktree;
use child_process::runner;
use report::print_outcome;
use run_record::record::Metric;
use session::{SessionSpec, WORKTREE_NAME, load, lock_state, repo_key, state_dir};
use status::print_status;
use std::path::PathBuf;
use wiring::SessionMeasurer;

mod session;
mod slots;
mod status;
mod timing;
pub mod wiring;

pub fn run(global: &GlobalOptions, args: &BisectArgs) -> exit::Result<Code> {
    match &args.action {
        BisectAction::Start(start_args) => start(global, start_args),
        BisectAction::Run(run_args) => run_session(global, run_args),
        BisectAction::Status(repo_args) => status::status(global, repo_args),
        BisectAction::Log(repo_args) => status::log(global, repo_args),
        BisectAction::Report(report_args) => report::report(global, report_args),
        BisectAction::Reset(repo_args) => reset(global, repo_args),
    }
}

fn input(err: impl std::fmt::Display) -> exit::Failure {
    InputError(err.to_string()).into()
}

fn short(id: &str) -> &str {
    &id[..id.len().min(12)]
}

fn start(global: &GlobalOptions, args: &BisectStartArgs) -> exit::Result<Code> {
    let repo = range::open_repository(&args.repo).map_err(input)?;
    let key = repo_key(&repo, &args.repo)?;
    let workdir = PathBuf::from(&key);
    let good = range::resolve(&repo, &args.good).map_err(input)?;
    let bad = range::resolve(&repo, &args.bad).map_err(input)?;
    let graph = range::load(&repo, good, bad, args.recipe.first_parent).map_err(input)?;
    let recipe = crate::request::recipe::recipe_of(&args.recipe, &workdir)?;
    let spec = SessionSpec::new(
        recipe,
        Range {
            repo: key.clone(),
            good: (args.good.clone(), good.to_string()),
            bad: (args.bad.clone(), bad.to_string()),
            n_commits: graph.nodes.len() as u32,
        },
    );
    let text = serde_json::to_string(&spec).context("failed to encode the session")?;
    let mut archive = crate::store::open_archive(global)?;
    let session = archive.start_session(&key, &text).context(
        "failed to start the bisection (`netbisect bisect reset` ends the one in progress)",
    )?;
    let status =
        engine::status(&graph, &spec.config, &[]).context("failed to plan the bisection")?;
    print_status(global, &session, &spec, &graph, &status)?;
    Ok(Code::Ok)
}

/// The jobs of `bisect run`: those asked, checked against the journal's
/// (a bisection keeps the jobs of its first run), the range and the
/// method.
fn jobs_of(loaded: &session::Loaded, asked: Option<u32>) -> exit::Result<usize> {
    let events = session::load_events(loaded)?;
    let journaled = engine::journaled_jobs(&loaded.graph, &loaded.spec.config, &events)
        .context("failed to replay the journal")?;
    let jobs = match (asked, journaled) {
        (None, None) => 1,
        (Some(asked), None) => asked,
        (None, Some((journaled, _))) => journaled,
        (Some(asked), Some((journaled, _))) if asked == journaled => asked,
        (Some(asked), Some((_, false))) if asked > 1 => {
            return Err(input(bisect::error::EngineError::JobsUnrecorded));
        }
        (Some(asked), Some((journaled, _))) => {
            return Err(input(bisect::error::EngineError::Jobs { journaled, asked }));
        }
    };
    // The commits of the range and the good end.
    let n_targets = loaded.graph.nodes.len() + 1;
    if jobs as usize > n_targets {
        return Err(input(format!(
            "--jobs {jobs} is more than the {n_targets} commits this bisection measures \
             (the range and its good end): give at most --jobs {n_targets}"
        )));
    }
    if jobs > 1 && loaded.spec.config.decision.method != WalkMethod::Posterior {
        return Err(input(
            "--jobs above 1 needs --method posterior: the sequential method classifies \
             one commit at a time",
        ));
    }
    Ok(jobs as usize)
}

fn run_session(global: &GlobalOptions, run_args: &BisectRunArgs) -> exit::Result<Code> {
    let args = &run_args.repo;
    let loaded = load(global, args.repo.as_deref())?;
    let spec = &loaded.spec;
    let dir = state_dir(&loaded.repo);
    let _lock = lock_state(&dir)?;
    let jobs = jobs_of(&loaded, run_args.jobs)?;
    // A signal kills the running command's group (the handler is
    // installed for `bisect run` in Journal mode); the engine journals the
    // interruption and the command exits 130.
    let bad_oid = range::resolve(&loaded.repo, &spec.bad).map_err(input)?;
    let worktree = BisectWorktree::open_or_create(&loaded.repo, &dir, WORKTREE_NAME, bad_oid)
        .context("failed to prepare the bisect worktree")?;
    let recipe = spec.recipe();
    let metric: Metric = recipe.metric()?;
    let method = crate::bisection::measuring::method_of(
        &recipe,
        worktree.path(),
        dir.join("consoles"),
        crate::vm::Notes {
            quiet: global.quiet(),
            verbose: global.verbose(),
        },
    )?;
    let step = recipe.step()?;
    let mut slot_worktrees = Vec::new();
    let mut cpu_sets = Vec::new();
    if jobs > 1
        && let Some(kernel) = &spec.kernel
    {
        cpu_sets = slots::cpu_sets(jobs, kernel.options.cpus as usize).map_err(input)?;
        runner::check_command("taskset -V", &dir).map_err(input)?;
    }
    if jobs > 1 {
        for slot in 0..jobs {
            let name = slots::slot_worktree_name(WORKTREE_NAME, slot);
            let worktree = BisectWorktree::open_or_create(&loaded.repo, &dir, &name, bad_oid)
                .with_context(|| format!("failed to prepare the worktree of slot {slot}"))?;
            slot_worktrees.push(worktree);
        }
    }
    // The first run of the good end, before the slots, runs as slot 0.
    let slot_env = if jobs > 1 {
        vec![
            ("NETBISECT_SLOT".to_string(), "0".to_string()),
            ("NETBISECT_JOBS".to_string(), jobs.to_string()),
        ]
    } else {
        Vec::new()
    };
    let mut measurer = SessionMeasurer::new(
        CommandMeasurer::new(&worktree, step.clone()).with_env(slot_env),
        method,
        metric,
        crate::store::open_archive(global)?,
        loaded.session.id,
        loaded.session.config_key.clone(),
    );
    let mut printer = progress::ProgressPrinter::new(global, spec.config.decision.confirm_repeats);
    // The config_key runs are compared under comes from the first run of
    // the session: one repeat of the good end, before the engine asks the
    // archive what it already has.
    if measurer.config_key().is_none() {
        printer.say(&format!(
            "first run of the good end {} to learn the configuration",
            short(&loaded.graph.good.id)
        ));
        let good = loaded.graph.good.clone();
        let measurement = bisect::Measurer::measure(&mut measurer, &good)
            .map_err(exit::Failure::msg)
            .with_context(|| format!("measuring the good commit {} failed", good.id))?;
        if let bisect::Measurement::Skip(reason) = measurement {
            return Err(exit::Failure::msg(format!(
                "cannot measure the good commit {}: {reason}",
                good.id
            )));
        }
    }
    let mut journal = ArchiveJournal::new(crate::store::open_archive(global)?, loaded.session.id);
    let outcome = if jobs > 1 {
        let build_jobs = run_args.build_jobs.map_or(jobs, |n| n as usize);
        std::thread::scope(|scope| {
            let mut slots = slots::Slots::new(
                scope,
                &mut measurer,
                slot_worktrees,
                &step,
                build_jobs,
                &cpu_sets,
            );
            engine::run_jobs(
                &loaded.graph,
                &spec.config,
                jobs,
                &mut slots,
                &mut journal,
                &mut |progress| printer.show(progress),
            )
        })
    } else {
        engine::run(
            &loaded.graph,
            &spec.config,
            &mut measurer,
            &mut journal,
            &mut |progress| printer.show(progress),
        )
    }
    .context("the bisection stopped; `netbisect bisect run` resumes it")?;
    // The session's config_key may have been learnt by this very run:
    // ask the measurer, not the session as it was loaded.
    let config_key = measurer.config_key().map(str::to_string);
    print_outcome(global, &loaded, config_key.as_deref(), &outcome)
}

fn reset(global: &GlobalOptions, args: &BisectRepoArgs) -> exit::Result<Code> {
    let mut loaded = load(global, args.repo.as_deref())?;
    let dir = state_dir(&loaded.repo);
    let lock = lock_state(&dir)?;
    // The bisect worktree and those of the slots of `run --jobs`.
    let mut names = vec![WORKTREE_NAME.to_string()];
    names.extend(
        (1..=crate::cli::MAX_JOBS as usize)
            .map(|slot| slots::slot_worktree_name(WORKTREE_NAME, slot))
            .filter(|name| dir.join(name).exists() || loaded.repo.find_worktree(name).is_ok()),
    );
    for name in names {
        BisectWorktree::remove(&loaded.repo, &name)
            .context("failed to remove the bisect worktree")?;
        let worktree_dir = dir.join(&name);
        if worktree_dir.exists() {
            std::fs::remove_dir_all(&worktree_dir)
                .with_context(|| format!("failed to remove {}", worktree_dir.display()))?;
        }
    }
    drop(lock);
    let _ = std::fs::remove_file(dir.join("lock"));
    let _ = std::fs::remove_dir(&dir);
    let session = loaded.archive.end_session(loaded.session.id)?;
    if !global.quiet() {
        output::note(&format!(
            "bisection session {} of {} ended; its runs stay in the archive",
            session.id, session.repo
        ));
    }
    Ok(Code::Ok)
}
