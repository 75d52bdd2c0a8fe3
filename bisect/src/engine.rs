//! A bisection from start to end: [`run`] measures the ends, refuses or
//! bisects, steps through the range (one commit at a time with the
//! sequential decision, or where the posterior points with the
//! probabilistic method), confirms the culprit, and builds the report.
//!
//! The engine takes its measurements through [`Measurer`] and keeps its
//! journal through [`Journal`]; it is deterministic given the
//! measurements. [`run`] replays the journal first (feeding journaled
//! samples instead of measuring), so a bisection resumed after a crash
//! walks the same path, measures nothing it already has, and reaches the
//! same answer. [`status`] replays without measuring anything.
//!
//! The parts: the state machine (`machine`), the journal's replay
//! (`replay`) and the one loop that feeds the one from the other and
//! from the measurer, with K measurements in flight or one (`parallel`).
//! This module adds what needs the planner: once the ends are measured,
//! [`run`] and [`run_jobs`] journal what the rest is estimated to take
//! ([`crate::plan`]), which simulates bisections with that same loop.

use crate::config::BisectConfig;
use crate::error::EngineError;
use crate::estimate::Estimate;
use crate::graph::CommitGraph;
use crate::journal::{Journal, JournalEvent, NullJournal};
use crate::measurement::{Measurer, OneSlot, SlotMeasurer};
use crate::parallel::{self, Ended, nothing_in_flight};
use crate::plan::{self, PlanInput};
use crate::progress::{Progress, Status};
use crate::replay::Replay;
use crate::report::Outcome;

/// Runs (or resumes) the bisection of `graph` to its end, one
/// measurement at a time: [`run_jobs`] with one job, `measurer` its slot.
///
/// The journal is replayed first; then every fresh measurement and every
/// verdict is appended to it before the next step starts. `progress` is
/// called before each fresh measurement.
pub fn run(
    graph: &CommitGraph,
    config: &BisectConfig,
    measurer: &mut dyn Measurer,
    journal: &mut dyn Journal,
    progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<Outcome, EngineError> {
    run_jobs(
        graph,
        config,
        1,
        &mut OneSlot::new(measurer),
        journal,
        progress,
    )
}

/// Runs (or resumes) the bisection of `graph` with up to `jobs`
/// measurements in flight on the slots of `measurer` (see
/// [`crate::schedule`] for where each goes). With more than one job the
/// journal records what each slot started and what came back, so a
/// resumed bisection walks the same path, starts again what was in
/// flight, and measures nothing that finished; with one, nothing is in
/// flight when the next commit is chosen, and the journal is that of one
/// measurement at a time, as [`run`] writes and every netbisect before
/// `--jobs` wrote it. A journal started with another number of jobs, or
/// more than one job asked of a journal of an older netbisect, is refused
/// ([`EngineError::Jobs`], [`EngineError::JobsUnrecorded`]).
pub fn run_jobs(
    graph: &CommitGraph,
    config: &BisectConfig,
    jobs: usize,
    measurer: &mut dyn SlotMeasurer,
    journal: &mut dyn Journal,
    progress: &mut dyn FnMut(&Progress<'_>),
) -> Result<Outcome, EngineError> {
    let estimate_rest = |(good, bad): (&[f64], &[f64]), seconds_per_sample: f64| {
        estimate_rest(graph, config, jobs, good, bad, seconds_per_sample)
    };
    match parallel::drive(
        graph,
        config,
        jobs,
        Some(measurer),
        journal,
        progress,
        Some(&estimate_rest),
        None,
    )? {
        Ended::Outcome(outcome) => Ok(outcome),
        Ended::Status(_) => Err(nothing_in_flight()),
    }
}

/// The number of jobs the journal `events` was started with: `None`
/// before it starts, 1 for a journal of one measurement at a time.
pub fn journaled_jobs(
    graph: &CommitGraph,
    config: &BisectConfig,
    events: &[JournalEvent],
) -> Result<Option<(u32, bool)>, EngineError> {
    let replay = Replay::from_events(events, graph, config)?;
    Ok(replay.jobs.map(|jobs| (jobs, replay.has_jobs)))
}

/// Where the bisection recorded in `events` stands, measuring nothing.
pub fn status(
    graph: &CommitGraph,
    config: &BisectConfig,
    events: &[JournalEvent],
) -> Result<Status, EngineError> {
    graph.validate()?;
    let jobs = Replay::from_events(events, graph, config)?
        .jobs
        .unwrap_or(1);
    let ended = parallel::drive(
        graph,
        config,
        jobs as usize,
        None,
        &mut NullJournal,
        &mut |_| {},
        None,
        Some(events.to_vec()),
    )?;
    match ended {
        Ended::Status(status) => Ok(*status),
        Ended::Outcome(_) => Err(nothing_in_flight()),
    }
}

/// The estimate of the rest from the ends' samples, with
/// `seconds_per_sample`; `None` when the ends show no usable step.
fn estimate_rest(
    graph: &CommitGraph,
    config: &BisectConfig,
    jobs: usize,
    good: &[f64],
    bad: &[f64],
    seconds_per_sample: f64,
) -> Result<Option<Estimate>, EngineError> {
    let Some((step_pct, cv_pct)) = plan::from_ends(good, bad) else {
        return Ok(None);
    };
    let input = PlanInput {
        decision: config.decision.clone(),
        jobs,
        ..PlanInput::new(graph.nodes.len(), step_pct, cv_pct, seconds_per_sample)
    };
    match plan::estimate(&input) {
        Ok(estimate) => Ok(Some(estimate)),
        Err(plan::PlanError::Invalid(_)) => Ok(None),
        Err(plan::PlanError::Engine(err)) => Err(err),
    }
}
