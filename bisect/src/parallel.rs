//! The loop that drives the machine with up to K measurements in flight,
//! one per slot: every slot that comes free is given the machine's next
//! commit at once (the machine places it beside those in flight), and
//! every sample that comes back is journaled and fed before the next
//! choice, whichever slot it came from; nobody waits for the slowest.
//!
//! The journal of such a bisection holds, beside the samples, when each
//! repeat started and on which slot (`started`), and which slot each
//! sample came from. The machine's choices depend on what was in flight
//! when it made them, so the replay walks the journal in its order: at
//! every point the loop would start a repeat, the journal must say it
//! started that very commit, and every sample is fed where the journal
//! has it. What the journal leaves in flight (started, no sample: the
//! netbisect that started it was killed) is started again on its slot;
//! nothing that finished is measured again.
//!
//! Without a measurer the loop only replays, for `status`.

use crate::config::BisectConfig;
use crate::driver::{
    self, EstimateRest, estimate_once, finished_event, journal_archived, journal_sample,
};
use crate::error::EngineError;
use crate::graph::CommitGraph;
use crate::journal::{BoxError, JOURNAL_SCHEMA, Journal, JournalEvent};
use crate::machine::{Action, InFlight, Machine, Target};
use crate::measurement::{Measurement, Sample, SlotMeasurer};
use crate::progress::{Progress, Status};
use crate::replay::Replay;
use crate::report::Outcome;
use child_process::interrupt;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// How the loop ended.
#[expect(
    clippy::large_enum_variant,
    reason = "made once per bisection, as the machine's done action"
)]
pub(crate) enum Ended {
    /// The bisection's outcome.
    Outcome(Outcome),
    /// Replay only: where the journal ends (boxed: the outcome is as
    /// large).
    Status(Box<Status>),
}

/// The journal's events after `start`, read in order while replaying.
struct Cursor {
    events: Vec<JournalEvent>,
    position: usize,
}

impl Cursor {
    /// The next event that steers the loop, past those that do not
    /// (`estimate`, `interrupted`); `None` at the end: live from there.
    fn peek(&mut self) -> Option<&JournalEvent> {
        while let Some(event) = self.events.get(self.position) {
            match event {
                JournalEvent::Estimate { .. } | JournalEvent::Interrupted { .. } => {
                    self.position += 1;
                }
                _ => break,
            }
        }
        self.events.get(self.position)
    }

    fn advance(&mut self) {
        self.position += 1;
    }

    fn at_end(&mut self) -> bool {
        self.peek().is_none()
    }
}

fn mismatch(expected: &str, found: Option<&JournalEvent>) -> EngineError {
    let found = match found {
        Some(event) => serde_json::to_string(event).unwrap_or_else(|_| format!("{event:?}")),
        None => "nothing".to_string(),
    };
    EngineError::JournalMismatch(format!(
        "the replay expected {expected}, the journal has {found}"
    ))
}

/// The slots: what each runs, and whether this process started it.
struct Slots {
    target: Vec<Option<Target>>,
    running: Vec<bool>,
}

/// Runs (or resumes, or with no measurer replays) the bisection of
/// `graph` with `jobs` measurements in flight at most.
#[expect(
    clippy::too_many_arguments,
    reason = "the driver's arguments and the number of jobs; a struct would only carry them"
)]
pub(crate) fn drive(
    graph: &CommitGraph,
    config: &BisectConfig,
    jobs: usize,
    mut measurer: Option<&mut dyn SlotMeasurer>,
    journal: &mut dyn Journal,
    progress: &mut dyn FnMut(&Progress<'_>),
    estimate_rest: Option<EstimateRest<'_>>,
    events: Option<Vec<JournalEvent>>,
) -> Result<Ended, EngineError> {
    graph.validate()?;
    let jobs = jobs.max(1);
    let events = match events {
        Some(events) => events,
        None => journal.load().map_err(EngineError::Journal)?,
    };
    let replay = Replay::from_events(&events, graph, config)?;
    match replay.jobs {
        Some(_) if !replay.has_jobs && jobs > 1 => return Err(EngineError::JobsUnrecorded),
        Some(journaled) if journaled as usize != jobs => {
            return Err(EngineError::Jobs {
                journaled,
                asked: jobs as u32,
            });
        }
        _ => {}
    }
    let live = measurer.is_some();
    if events.is_empty() && live {
        journal
            .append(&JournalEvent::Start {
                schema: JOURNAL_SCHEMA.to_string(),
                good: graph.good.id.clone(),
                bad: graph.nodes[graph.bad_idx()].info.id.clone(),
                first_parent: graph.first_parent,
                config: config.clone(),
                jobs: jobs as u32,
            })
            .map_err(EngineError::Journal)?;
    }
    let mut cursor = Cursor {
        events: events.into_iter().skip(1).collect(),
        position: 0,
    };
    let mut machine = Machine::new(graph, config);
    machine.estimate = replay.estimate.clone();
    let mut in_flight = InFlight::default();
    let mut slots = Slots {
        target: vec![None; jobs],
        running: vec![false; jobs],
    };
    let mut archived: BTreeMap<String, VecDeque<Measurement>> = BTreeMap::new();
    let mut archive_checked: BTreeSet<String> = BTreeSet::new();
    loop {
        // Give every free slot the machine's next commit.
        while let Some(free_slot) = slots.target.iter().position(Option::is_none) {
            let action = machine.next_with(&in_flight)?;
            for verdict in machine.take_new_verdicts() {
                let JournalEvent::Verdict {
                    commit: reached_commit,
                    verdict: reached,
                    ..
                } = &verdict
                else {
                    continue;
                };
                match cursor.peek() {
                    Some(JournalEvent::Verdict {
                        commit, verdict, ..
                    }) if commit == reached_commit && verdict == reached => cursor.advance(),
                    None if live => journal.append(&verdict).map_err(EngineError::Journal)?,
                    None => {}
                    found => {
                        return Err(mismatch(
                            &format!("the verdict {reached:?} on {reached_commit}"),
                            found,
                        ));
                    }
                }
            }
            if cursor.at_end()
                && let Some(measurer) = measurer.as_deref()
            {
                estimate_once(
                    &mut machine,
                    journal,
                    estimate_rest,
                    measurer.seconds_per_sample(),
                )?;
            }
            let target = match action {
                Action::Done(outcome) => {
                    match cursor.peek() {
                        Some(JournalEvent::Finished { .. }) => cursor.advance(),
                        None if live => journal
                            .append(&finished_event(&outcome))
                            .map_err(EngineError::Journal)?,
                        None => {}
                        found => return Err(mismatch("the end", found)),
                    }
                    if !live {
                        return Ok(Ended::Status(Box::new(driver::status(
                            &machine,
                            None,
                            Some(outcome),
                            replay.estimate.clone(),
                        ))));
                    }
                    return Ok(Ended::Outcome(outcome));
                }
                Action::Wait => break,
                Action::Measure(target) => target,
            };
            let info = machine.info(target);
            if let Some(measurement) = archived.get_mut(&info.id).and_then(VecDeque::pop_front) {
                machine.feed(target, measurement);
                continue;
            }
            if !archive_checked.contains(&info.id) {
                let samples = match cursor.peek() {
                    Some(JournalEvent::Archived { commit, samples }) if *commit == info.id => {
                        let samples: Vec<Sample> = samples
                            .iter()
                            .map(|sample| Sample {
                                value: sample.value,
                                run_id: sample.run_id.clone(),
                            })
                            .collect();
                        cursor.advance();
                        samples
                    }
                    None => match measurer.as_deref_mut() {
                        Some(measurer) => {
                            journal_archived(journal, &info.id, measurer.archived(info))?
                        }
                        None => return Ok(status(&machine, target, replay.estimate.clone())),
                    },
                    found => return Err(mismatch(&format!("the archive of {}", info.id), found)),
                };
                archive_checked.insert(info.id.clone());
                archived
                    .entry(info.id.clone())
                    .or_default()
                    .extend(samples.into_iter().map(Measurement::Sample));
                continue;
            }
            let slot = match cursor.peek() {
                Some(JournalEvent::Started { commit, slot })
                    if *commit == info.id && slots.target.get(*slot as usize) == Some(&None) =>
                {
                    let slot = *slot as usize;
                    cursor.advance();
                    slot
                }
                None => match measurer.as_deref_mut() {
                    Some(measurer) => {
                        restart_left(measurer, &mut slots, &machine)?;
                        progress(&machine.progress(target));
                        start(measurer, &mut slots, &machine, free_slot, target)?;
                        journal
                            .append(&JournalEvent::Started {
                                commit: info.id.clone(),
                                slot: free_slot as u32,
                            })
                            .map_err(EngineError::Journal)?;
                        free_slot
                    }
                    None => return Ok(status(&machine, target, replay.estimate.clone())),
                },
                found => return Err(mismatch(&format!("a start of {}", info.id), found)),
            };
            slots.target[slot] = Some(target);
            in_flight.add(target);
        }
        // One sample back: the journal's next, or the first to end.
        let (slot, measurement) = match cursor.peek() {
            Some(JournalEvent::Sample {
                commit,
                sample,
                slot: Some(slot),
            }) => {
                let slot = check_slot(&slots, &machine, commit, *slot)?;
                let measurement = Measurement::Sample(Sample {
                    value: sample.value,
                    run_id: sample.run_id.clone(),
                });
                cursor.advance();
                (slot, measurement)
            }
            Some(JournalEvent::Skip {
                commit,
                reason,
                slot: Some(slot),
            }) => {
                let slot = check_slot(&slots, &machine, commit, *slot)?;
                let measurement = Measurement::Skip(reason.clone());
                cursor.advance();
                (slot, measurement)
            }
            None => match measurer.as_deref_mut() {
                Some(measurer) => {
                    let finished = wait_one(measurer, &mut slots, &machine, journal)?;
                    let (slot, measurement) = finished;
                    let commit = &machine.info(slot_target(&slots, slot)?).id;
                    let event = match &measurement {
                        Measurement::Sample(sample) => JournalEvent::Sample {
                            commit: commit.clone(),
                            sample: journal_sample(sample),
                            slot: Some(slot as u32),
                        },
                        Measurement::Skip(reason) => JournalEvent::Skip {
                            commit: commit.clone(),
                            reason: reason.clone(),
                            slot: Some(slot as u32),
                        },
                    };
                    journal.append(&event).map_err(EngineError::Journal)?;
                    (slot, measurement)
                }
                None => {
                    let target = slots.target.iter().flatten().next().copied();
                    let target = target.unwrap_or(Target::Good);
                    return Ok(status(&machine, target, replay.estimate.clone()));
                }
            },
            found => return Err(mismatch("a sample of a commit in flight", found)),
        };
        let target = slot_target(&slots, slot)?;
        slots.target[slot] = None;
        slots.running[slot] = false;
        in_flight.remove(target);
        machine.feed(target, measurement);
    }
}

fn slot_target(slots: &Slots, slot: usize) -> Result<Target, EngineError> {
    slots
        .target
        .get(slot)
        .copied()
        .flatten()
        .ok_or_else(|| EngineError::JournalMismatch(format!("slot {slot} runs nothing")))
}

/// The slot of a journaled sample, which must be running its commit.
fn check_slot(
    slots: &Slots,
    machine: &Machine<'_>,
    commit: &str,
    slot: u32,
) -> Result<usize, EngineError> {
    let slot = slot as usize;
    match slots.target.get(slot).copied().flatten() {
        Some(target) if machine.info(target).id == commit => Ok(slot),
        _ => Err(EngineError::JournalMismatch(format!(
            "a sample of {commit} from slot {slot}, which does not run it"
        ))),
    }
}

fn start(
    measurer: &mut dyn SlotMeasurer,
    slots: &mut Slots,
    machine: &Machine<'_>,
    slot: usize,
    target: Target,
) -> Result<(), EngineError> {
    let info = machine.info(target);
    interrupt::check().map_err(|source| EngineError::Interrupted {
        commit: info.id.clone(),
        source,
    })?;
    measurer
        .start(slot, info)
        .map_err(|source| EngineError::Measure {
            commit: info.id.clone(),
            source,
        })?;
    slots.running[slot] = true;
    Ok(())
}

/// Starts again, on their slots, the repeats the journal left in flight.
fn restart_left(
    measurer: &mut dyn SlotMeasurer,
    slots: &mut Slots,
    machine: &Machine<'_>,
) -> Result<(), EngineError> {
    for slot in 0..slots.target.len() {
        if let Some(target) = slots.target[slot]
            && !slots.running[slot]
        {
            start(measurer, slots, machine, slot, target)?;
        }
    }
    Ok(())
}

/// Starts again what the journal left in flight, then waits for one
/// repeat to end. A signal journals every repeat in flight as
/// interrupted and stops.
fn wait_one(
    measurer: &mut dyn SlotMeasurer,
    slots: &mut Slots,
    machine: &Machine<'_>,
    journal: &mut dyn Journal,
) -> Result<(usize, Measurement), EngineError> {
    restart_left(measurer, slots, machine)?;
    let finished = measurer.finished();
    if let Err(interrupted) = interrupt::check() {
        let mut first = None;
        for target in slots.target.iter().flatten() {
            let commit = machine.info(*target).id.clone();
            journal
                .append(&JournalEvent::Interrupted {
                    commit: commit.clone(),
                    signal: interrupt::signal_name(interrupted.signal),
                })
                .map_err(EngineError::Journal)?;
            first.get_or_insert(commit);
        }
        return Err(EngineError::Interrupted {
            commit: first.unwrap_or_default(),
            source: interrupted,
        });
    }
    let (slot, result) = finished.map_err(|source| EngineError::Measure {
        commit: slots
            .target
            .iter()
            .flatten()
            .map(|target| machine.info(*target).id.clone())
            .collect::<Vec<_>>()
            .join(", "),
        source,
    })?;
    let target = slot_target(slots, slot)?;
    let measurement = result.map_err(|source: BoxError| EngineError::Measure {
        commit: machine.info(target).id.clone(),
        source,
    })?;
    Ok((slot, measurement))
}

fn status(
    machine: &Machine<'_>,
    next: Target,
    estimate: Option<crate::estimate::Estimate>,
) -> Ended {
    Ended::Status(Box::new(driver::status(
        machine,
        Some(next),
        None,
        estimate,
    )))
}
