//! The loop that drives the machine: it replays the journal first
//! (feeding journaled samples instead of measuring), then asks the
//! archive once per commit, then the measurer, and appends every fresh
//! measurement and every verdict to the journal before the next step
//! starts. A signal stops it between two measurements, journaled.
//!
//! The engine's `run` drives it with the estimate of the rest; the
//! simulator drives it without (a simulated measurer never asks for one),
//! which keeps the simulator, and the planner built on it, free of the
//! engine that uses them.

use crate::config::BisectConfig;
use crate::error::EngineError;
use crate::estimate::Estimate;
use crate::graph::CommitGraph;
use crate::journal::{BoxError, JOURNAL_SCHEMA, Journal, JournalEvent, JournalSample};
use crate::machine::{Action, Machine, Target};
use crate::measurement::{Measurement, Measurer, Sample};
use crate::progress::{Phase, Progress, Status};
use crate::replay::Replay;
use crate::report::{BisectResult, Outcome};
use child_process::interrupt;

/// Makes the estimate of the rest once the ends are measured, from the
/// samples of the good and the bad end and the seconds one sample takes;
/// `None` when the ends show no usable step.
pub(crate) type EstimateRest<'a> =
    &'a dyn Fn((&[f64], &[f64]), f64) -> Result<Option<Estimate>, EngineError>;

/// Where `machine`'s bisection stands: about to measure `next`, or finished
/// with `outcome` (one of the two), with `estimate` of the rest.
pub(crate) fn status(
    machine: &Machine<'_>,
    next: Option<Target>,
    outcome: Option<Outcome>,
    estimate: Option<Estimate>,
) -> Status {
    Status {
        phase: machine.phase,
        next_commit: next.map(|target| machine.info(target).clone()),
        next_n_samples: next.map_or(0, |target| machine.samples(target).len() as u32),
        steps: machine.step_reports(None),
        candidates_left: machine.candidates_left,
        est_steps_left: match next {
            Some(_) => crate::graph::steps_left(machine.candidates_left as usize),
            None => 0,
        },
        n_measurements: machine.n_measurements(),
        estimate,
        outcome,
    }
}

/// The archive's samples of `commit` as the measurer `found` them,
/// journaled before the bisection uses them.
pub(crate) fn journal_archived(
    journal: &mut dyn Journal,
    commit: &str,
    found: Result<Vec<Sample>, BoxError>,
) -> Result<Vec<Sample>, EngineError> {
    let samples = found.map_err(|source| EngineError::Measure {
        commit: commit.to_string(),
        source,
    })?;
    journal
        .append(&JournalEvent::Archived {
            commit: commit.to_string(),
            samples: samples.iter().map(journal_sample).collect(),
        })
        .map_err(EngineError::Journal)?;
    Ok(samples)
}

/// Once the ends are measured, before the first step: the estimate of
/// what the rest takes, made and journaled once per bisection (when the
/// measurer tells the `seconds` of a sample).
pub(crate) fn estimate_once(
    machine: &mut Machine<'_>,
    journal: &mut dyn Journal,
    estimate_rest: Option<EstimateRest<'_>>,
    seconds: Option<f64>,
) -> Result<(), EngineError> {
    if machine.phase != Phase::Ends
        && machine.estimate.is_none()
        && let Some(estimate_rest) = estimate_rest
        && let Some(seconds) = seconds
        && let Some(estimate) = estimate_rest(machine.ends_samples(), seconds)?
    {
        journal
            .append(&JournalEvent::Estimate {
                estimate: estimate.clone(),
            })
            .map_err(EngineError::Journal)?;
        machine.estimate = Some(estimate);
    }
    Ok(())
}

/// Runs (or resumes) the bisection of `graph` to its end, journaling the
/// estimate of the rest made by `estimate_rest` when the measurer can
/// tell the time of a sample.
pub(crate) fn drive(
    graph: &CommitGraph,
    config: &BisectConfig,
    measurer: &mut dyn Measurer,
    journal: &mut dyn Journal,
    progress: &mut dyn FnMut(&Progress<'_>),
    estimate_rest: Option<EstimateRest<'_>>,
) -> Result<Outcome, EngineError> {
    graph.validate()?;
    let events = journal.load().map_err(EngineError::Journal)?;
    let mut replay = Replay::from_events(&events, graph, config)?;
    if let Some(journaled) = replay.jobs.filter(|&jobs| jobs != 1) {
        return Err(EngineError::Jobs {
            journaled,
            asked: 1,
        });
    }
    if events.is_empty() {
        journal
            .append(&JournalEvent::Start {
                schema: JOURNAL_SCHEMA.to_string(),
                good: graph.good.id.clone(),
                bad: graph.nodes[graph.bad_idx()].info.id.clone(),
                first_parent: graph.first_parent,
                config: config.clone(),
                jobs: 1,
            })
            .map_err(EngineError::Journal)?;
    }
    let mut machine = Machine::new(graph, config);
    machine.estimate = replay.estimate.clone();
    loop {
        let action = machine.next()?;
        replay.sync_verdicts(machine.take_new_verdicts(), Some(&mut *journal))?;
        estimate_once(
            &mut machine,
            journal,
            estimate_rest,
            measurer.seconds_per_sample(),
        )?;
        let target = match action {
            Action::Done(outcome) => {
                if !replay.finished {
                    journal
                        .append(&finished_event(&outcome))
                        .map_err(EngineError::Journal)?;
                }
                return Ok(outcome);
            }
            Action::Measure(target) => target,
            Action::Wait => return Err(nothing_in_flight()),
        };
        let info = machine.info(target);
        if let Some(measurement) = replay.next_measurement(&info.id) {
            machine.feed(target, measurement);
            continue;
        }
        if !replay.archive_checked(&info.id) {
            let samples = journal_archived(journal, &info.id, measurer.archived(info))?;
            replay.add_archived(&info.id, samples);
            continue;
        }
        progress(&machine.progress(target));
        let measured = interrupt::check()
            .map_err(|interrupted| Box::new(interrupted) as BoxError)
            .and_then(|()| measurer.measure(info));
        let measurement = match (measured, interrupt::check()) {
            (Ok(measurement), Ok(())) => measurement,
            (_, Err(interrupted)) => {
                journal
                    .append(&JournalEvent::Interrupted {
                        commit: info.id.clone(),
                        signal: interrupt::signal_name(interrupted.signal),
                    })
                    .map_err(EngineError::Journal)?;
                return Err(EngineError::Interrupted {
                    commit: info.id.clone(),
                    source: interrupted,
                });
            }
            (Err(source), Ok(())) => {
                return Err(EngineError::Measure {
                    commit: info.id.clone(),
                    source,
                });
            }
        };
        let event = match &measurement {
            Measurement::Sample(sample) => JournalEvent::Sample {
                commit: info.id.clone(),
                sample: journal_sample(sample),
                slot: None,
            },
            Measurement::Skip(reason) => JournalEvent::Skip {
                commit: info.id.clone(),
                reason: reason.clone(),
                slot: None,
            },
        };
        journal.append(&event).map_err(EngineError::Journal)?;
        machine.feed(target, measurement);
    }
}

/// The machine waits only for measurements in flight; one at a time
/// there are none when it is asked.
pub(crate) fn nothing_in_flight() -> EngineError {
    EngineError::JournalMismatch("the walk waits with nothing in flight".to_string())
}

pub(crate) fn journal_sample(sample: &Sample) -> JournalSample {
    JournalSample {
        value: sample.value,
        run_id: sample.run_id.clone(),
    }
}

pub(crate) fn finished_event(outcome: &Outcome) -> JournalEvent {
    match outcome {
        Outcome::Refused(_) => JournalEvent::Finished {
            result: "refused".to_string(),
            commit: None,
        },
        Outcome::Finished(bisect_report) => match &bisect_report.result {
            BisectResult::FirstBad { commit, .. } => JournalEvent::Finished {
                result: "first_bad".to_string(),
                commit: Some(commit.id.clone()),
            },
            BisectResult::Range { .. } => JournalEvent::Finished {
                result: "range".to_string(),
                commit: None,
            },
        },
    }
}
