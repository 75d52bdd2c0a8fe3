//! A regression's bisection, driven by a tracker: one driver at a time
//! (a hold on the regression, renewed while it drives, taken over by
//! another tracker once it expires), a bisect session of the tracker's
//! repository (so that `bisect status`, `bisect report` and the
//! published site show it), bisect's engine with the lab's workers as
//! its slots ([`super::slots`]), and at its end the report put in the
//! outbox in the transaction that records the culprit.
//!
//! Everything it does is in the archive before it goes on: a driver that
//! dies (or loses the archive) is followed by another, or by itself
//! again, which finds the session and its journal and resumes where it
//! stopped, every job it asked for found by its key.

use super::job::TrackSpec;
use super::slots::{Driver, QueueSlots, SlotsOf, ended_per_slot};
use crate::bisection::{ArchiveJournal, Range, SessionSpec, decode_events};
use crate::exit::{self, Context};
use archive::Location;
use archive::lab::{BisectionEnd, Regression};
use archive::{Archive, ArchiveError};
use bisect::engine;
use bisect::report::{BisectResult, Outcome};
use std::path::PathBuf;
use std::time::Duration;

/// How a tracker drives its regressions' bisections.
#[derive(Clone, Debug)]
pub struct DriveOptions {
    /// The archive.
    pub location: Location,
    /// The track.
    pub spec: TrackSpec,
    /// The config_key the track's runs are compared under.
    pub config_key: String,
    /// The driver's name.
    pub driver: String,
    /// The hold's length.
    pub hold: Duration,
    /// How often the queue is looked at.
    pub poll: Duration,
    /// Templates overriding the built-in report's.
    pub template_dir: Option<PathBuf>,
}

/// How driving went.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Driven {
    /// Another driver holds it, or the repository has another bisection
    /// in progress: nothing done now.
    NotNow(String),
    /// The bisection named `culprit`; its report is in the outbox.
    Culprit(String),
    /// The bisection was refused, or named no single commit.
    Refused(String),
}

/// Drives the bisection of `regression` to its end, or until it cannot
/// go on now.
pub fn drive(options: &DriveOptions, regression: &Regression) -> exit::Result<Driven> {
    let mut archive = Archive::open_location(&options.location)?;
    let driver = Driver {
        regression_id: regression.id,
        name: options.driver.clone(),
        hold: options.hold,
    };
    if !archive.hold_regression(regression.id, &driver.name, driver.hold)? {
        return Ok(Driven::NotNow("another tracker drives it".to_string()));
    }
    let repo = bisect::range::discover(std::path::Path::new(&options.spec.repo))
        .map_err(|err| exit::Failure::msg(err.to_string()))?;
    let good = bisect::range::resolve(&repo, &regression.good)
        .map_err(|err| exit::Failure::msg(err.to_string()))?;
    let bad = bisect::range::resolve(&repo, &regression.bad)
        .map_err(|err| exit::Failure::msg(err.to_string()))?;
    let recipe = &options.spec.recipe;
    let graph = bisect::range::load(&repo, good, bad, recipe.first_parent)
        .map_err(|err| exit::Failure::msg(err.to_string()))?;
    let spec = SessionSpec {
        regression: Some(regression.id),
        ..SessionSpec::new(
            recipe.clone(),
            Range {
                repo: options.spec.repo.clone(),
                good: (regression.good.clone(), regression.good.clone()),
                bad: (regression.bad.clone(), regression.bad.clone()),
                n_commits: graph.nodes.len() as u32,
            },
        )
    };
    let session_id = match session_of(&mut archive, options, regression, &spec)? {
        Ok(session_id) => session_id,
        Err(why) => {
            archive.release_regression(regression.id, &driver.name)?;
            return Ok(Driven::NotNow(why));
        }
    };
    let events = decode_events(&archive.session_events(session_id)?)
        .context("the bisection's journal is damaged")?;
    // The range and its good end, each a slot at most.
    let n_targets = graph.nodes.len() + 1;
    let jobs = (options.spec.jobs.max(1) as usize).min(n_targets);
    let jobs = engine::journaled_jobs(&graph, &spec.config, &events)
        .context("failed to replay the journal")?
        .map_or(jobs, |(journaled, _)| journaled as usize);
    let mut slots = QueueSlots::new(
        Archive::open_location(&options.location)?,
        SlotsOf {
            session_id,
            pool: options.spec.pool.clone(),
            payload: options.spec.payload(&regression.bad, None),
            jobs: jobs as u32,
            config_key: options.config_key.clone(),
            driver: driver.clone(),
            poll: options.poll,
            ended: ended_per_slot(&events, jobs),
        },
    )?;
    let mut journal = ArchiveJournal::new(Archive::open_location(&options.location)?, session_id);
    let outcome = engine::run_jobs(
        &graph,
        &spec.config,
        jobs,
        &mut slots,
        &mut journal,
        &mut |_| {},
    )
    .context("the bisection stopped; the tracker resumes it")?;
    let report = crate::bisection::report::report_text(
        options.template_dir.as_deref(),
        &archive,
        &spec,
        Some(&options.config_key),
        &outcome,
        None,
    )?;
    let (end, driven) = match &outcome {
        Outcome::Finished(finished) => match &finished.result {
            BisectResult::FirstBad { commit, .. } => (
                BisectionEnd::Culprit {
                    culprit: commit.id.clone(),
                    report,
                    command: options.spec.notify.clone(),
                },
                Driven::Culprit(commit.id.clone()),
            ),
            BisectResult::Range { .. } => (
                BisectionEnd::Refused,
                Driven::Refused("no single first bad commit".to_string()),
            ),
        },
        Outcome::Refused(_) => (
            BisectionEnd::Refused,
            Driven::Refused("its ends do not differ enough".to_string()),
        ),
    };
    archive.end_regression_bisection(regression.id, &driver.name, &end)?;
    archive.end_session(session_id)?;
    archive.cancel_jobs(&QueueSlots::owner(session_id), "the bisection ended")?;
    Ok(driven)
}

/// The session of `regression`: the one it names, one a driver started
/// and died before naming (found by the regression it records), or a new
/// one. `Err(why)` when the repository has another bisection in
/// progress: this one waits for it.
fn session_of(
    archive: &mut Archive,
    options: &DriveOptions,
    regression: &Regression,
    spec: &SessionSpec,
) -> exit::Result<Result<i64, String>> {
    if let Some(session_id) = regression.session_id {
        return Ok(Ok(session_id));
    }
    let text = serde_json::to_string(spec).context("failed to encode the session")?;
    let session_id = match archive.start_session(&options.spec.repo, &text) {
        Ok(session) => session.id,
        Err(ArchiveError::SessionActive { session_id, .. }) => {
            let active = archive.session(session_id)?;
            let adopted = serde_json::from_str::<SessionSpec>(&active.spec)
                .is_ok_and(|active| active.regression == Some(regression.id));
            if !adopted {
                return Ok(Err(format!(
                    "the repository has another bisection in progress (session {session_id})"
                )));
            }
            session_id
        }
        Err(err) => return Err(err.into()),
    };
    archive.set_session_config_key(session_id, &options.config_key)?;
    archive.set_regression_session(regression.id, &options.driver, session_id)?;
    Ok(Ok(session_id))
}
