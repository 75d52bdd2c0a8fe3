//! The loop that drives the machine, the one every bisection runs on:
//! up to K measurements in flight, one per slot. Every slot that comes
//! free is given the machine's next commit at once (the machine places
//! it beside those in flight), and every sample that comes back is
//! journaled and fed before the next choice, whichever slot it came
//! from; nobody waits for the slowest. One job is one slot: the
//! machine then chooses with nothing in flight, one measurement at a
//! time, and a [`Measurer`](crate::Measurer) is that slot
//! ([`crate::measurement::OneSlot`]).
//!
//! The loop replays the journal first, feeding what it holds instead of
//! measuring (read as the journal was written: see [`crate::replay`]),
//! then asks the archive once per commit, then the measurer, and
//! journals every fresh measurement and every verdict before the next
//! choice. What the journal leaves in flight (a repeat of several jobs
//! started, with no sample: the netbisect that started it was killed) is
//! started again on its slot; nothing that finished is measured again.
//! A signal stops it between two measurements, journaled.
//!
//! The engine's `run` and `run_jobs` drive it with the estimate of the
//! rest; the simulator drives it without (a simulated measurer never asks
//! for one), which keeps the simulator, and the planner built on it,
//! free of the engine that uses them. Without a measurer the loop only
//! replays, for `status`.

use crate::config::BisectConfig;
use crate::error::EngineError;
use crate::estimate::Estimate;
use crate::graph::CommitGraph;
use crate::journal::{BoxError, JOURNAL_SCHEMA, Journal, JournalEvent};
use crate::machine::{Action, InFlight, Machine, Target};
use crate::measurement::{Measurement, SlotMeasurer};
use crate::progress::{Phase, Progress, Status};
use crate::replay::{Journaled, Replay};
use crate::report::Outcome;
use child_process::interrupt;

/// Makes the estimate of the rest once the ends are measured, from the
/// samples of the good and the bad end and the seconds one sample takes;
/// `None` when the ends show no usable step.
pub(crate) type EstimateRest<'a> =
    &'a dyn Fn((&[f64], &[f64]), f64) -> Result<Option<Estimate>, EngineError>;

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

/// Runs (or resumes, or with no measurer replays) the bisection of
/// `graph` with `jobs` measurements in flight at most, journaling the
/// estimate of the rest made by `estimate_rest` when the measurer can
/// tell the time of a sample. `events` are the journal's when the caller
/// has them already.
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
    let mut machine = Machine::new(graph, config);
    machine.estimate = replay.estimate.clone();
    let mut walk = Walk {
        machine,
        in_flight: InFlight::default(),
        slots: Slots {
            target: vec![None; jobs],
            running: vec![false; jobs],
        },
        journaled: Journaled::new(journal, events, replay, jobs, live),
        progress,
        estimate_rest,
    };
    loop {
        if let Some(ended) = walk.fill_slots(measurer.as_deref_mut())? {
            return Ok(ended);
        }
        if let Some(ended) = walk.one_back(measurer.as_deref_mut())? {
            return Ok(ended);
        }
    }
}

/// The slots: what each runs, and whether this process started it.
struct Slots {
    target: Vec<Option<Target>>,
    running: Vec<bool>,
}

impl Slots {
    fn target(&self, slot: usize) -> Result<Target, EngineError> {
        self.target
            .get(slot)
            .copied()
            .flatten()
            .ok_or_else(|| EngineError::JournalMismatch(format!("slot {slot} runs nothing")))
    }

    fn is_free(&self, slot: usize) -> bool {
        self.target.get(slot) == Some(&None)
    }
}

/// A bisection under way: the machine, the slots and what runs on them,
/// the journal. Its steps take the measurer, `None` when it only
/// replays.
struct Walk<'a, 'g> {
    machine: Machine<'g>,
    in_flight: InFlight,
    slots: Slots,
    journaled: Journaled<'a>,
    progress: &'a mut dyn FnMut(&Progress<'_>),
    estimate_rest: Option<EstimateRest<'a>>,
}

/// What the machine asked for, the journal checked and written.
#[expect(
    clippy::large_enum_variant,
    reason = "the end is made once per bisection, as the machine's done action"
)]
enum Next {
    /// A repeat of this.
    Measure(Target),
    /// A sample of what is in flight.
    Wait,
    /// The end.
    Ended(Ended),
}

impl Walk<'_, '_> {
    /// Gives every free slot the machine's next commit, feeding what the
    /// journal and the archive hold on the way; `Some` at the end, or
    /// where a replay without measurer stops.
    fn fill_slots(
        &mut self,
        mut measurer: Option<&mut (dyn SlotMeasurer + '_)>,
    ) -> Result<Option<Ended>, EngineError> {
        while let Some(free_slot) = self.slots.target.iter().position(Option::is_none) {
            let target = match self.next(measurer.as_deref())? {
                Next::Measure(target) => target,
                Next::Wait if self.in_flight.is_empty() => return Err(nothing_in_flight()),
                Next::Wait => break,
                Next::Ended(ended) => return Ok(Some(ended)),
            };
            let commit = &self.machine.info(target).id;
            if let Some(measurement) = self.journaled.queued(commit) {
                self.machine.feed(target, measurement);
                continue;
            }
            if !self.journaled.archive_checked(commit) {
                if !self.journaled.journaled_archive(commit)? {
                    let Some(measurer) = measurer.as_deref_mut() else {
                        return Ok(Some(self.status(Some(target), None)));
                    };
                    let found = measurer.archived(self.machine.info(target));
                    self.journaled.record_archived(commit, found)?;
                }
                continue;
            }
            let journaled_slot = self
                .journaled
                .journaled_start(commit, |slot| self.slots.is_free(slot))?;
            let slot = match (journaled_slot, measurer.as_deref_mut()) {
                (Some(slot), _) => slot,
                (None, Some(measurer)) => {
                    self.start_live(measurer, free_slot, target)?;
                    free_slot
                }
                (None, None) => return Ok(Some(self.status(Some(target), None))),
            };
            self.slots.target[slot] = Some(target);
            self.in_flight.add(target);
        }
        Ok(None)
    }

    /// The machine's next action, with the verdicts it reached checked
    /// against the journal or written, the estimate of the rest made once
    /// the ends are measured, and the end checked or written.
    fn next(&mut self, measurer: Option<&(dyn SlotMeasurer + '_)>) -> Result<Next, EngineError> {
        let action = self.machine.next_with(&self.in_flight)?;
        self.journaled.verdicts(self.machine.take_new_verdicts())?;
        if self.journaled.replayed()
            && let Some(measurer) = measurer
        {
            self.estimate_once(measurer.seconds_per_sample())?;
        }
        Ok(match action {
            Action::Measure(target) => Next::Measure(target),
            Action::Wait => Next::Wait,
            Action::Done(outcome) => {
                self.journaled.finished(&outcome)?;
                Next::Ended(if measurer.is_some() {
                    Ended::Outcome(outcome)
                } else {
                    self.status(None, Some(outcome))
                })
            }
        })
    }

    /// Once the ends are measured, before the first step: the estimate
    /// of what the rest takes, made and journaled once per bisection
    /// (when the measurer tells the `seconds` of a sample).
    fn estimate_once(&mut self, seconds: Option<f64>) -> Result<(), EngineError> {
        if self.machine.phase != Phase::Ends
            && self.machine.estimate.is_none()
            && let Some(estimate_rest) = self.estimate_rest
            && let Some(seconds) = seconds
            && let Some(estimate) = estimate_rest(self.machine.ends_samples(), seconds)?
        {
            self.journaled.record_estimate(&estimate)?;
            self.machine.estimate = Some(estimate);
        }
        Ok(())
    }

    /// Starts a repeat of `target` on `slot` that the journal does not
    /// hold, after those it left in flight, and journals it.
    fn start_live(
        &mut self,
        measurer: &mut (dyn SlotMeasurer + '_),
        slot: usize,
        target: Target,
    ) -> Result<(), EngineError> {
        self.restart_left(measurer)?;
        (self.progress)(&self.machine.progress(target));
        self.start(measurer, slot, target)?;
        let commit = &self.machine.info(target).id;
        self.journaled.record_start(commit, slot)
    }

    /// Starts a repeat of `target` on `slot`, unless a signal came:
    /// then it stops, journaled.
    fn start(
        &mut self,
        measurer: &mut (dyn SlotMeasurer + '_),
        slot: usize,
        target: Target,
    ) -> Result<(), EngineError> {
        let info = self.machine.info(target);
        if let Err(interrupted) = interrupt::check() {
            let signal = interrupt::signal_name(interrupted.signal);
            self.journaled.record_interrupted_start(&info.id, &signal)?;
            return Err(EngineError::Interrupted {
                commit: info.id.clone(),
                source: interrupted,
            });
        }
        measurer
            .start(slot, info)
            .map_err(|source| EngineError::Measure {
                commit: info.id.clone(),
                source,
            })?;
        self.slots.running[slot] = true;
        Ok(())
    }

    /// Starts again, on their slots, the repeats the journal left in
    /// flight.
    fn restart_left(&mut self, measurer: &mut (dyn SlotMeasurer + '_)) -> Result<(), EngineError> {
        for slot in 0..self.slots.target.len() {
            if let Some(target) = self.slots.target[slot]
                && !self.slots.running[slot]
            {
                self.start(measurer, slot, target)?;
            }
        }
        Ok(())
    }

    /// One repeat back, the journal's next or the first to end, journaled
    /// and fed; `Some` where a replay without measurer stops.
    fn one_back(
        &mut self,
        measurer: Option<&mut (dyn SlotMeasurer + '_)>,
    ) -> Result<Option<Ended>, EngineError> {
        let journaled = self.journaled.journaled_sample()?;
        let (slot, measurement) = match (journaled, measurer) {
            (Some((commit, slot, measurement)), _) => {
                (self.check_slot(&commit, slot)?, measurement)
            }
            (None, None) => {
                let target = self.slots.target.iter().flatten().next().copied();
                return Ok(Some(self.status(target.or(Some(Target::Good)), None)));
            }
            (None, Some(measurer)) => {
                let (slot, measurement) = self.wait_one(measurer)?;
                let commit = &self.machine.info(self.slots.target(slot)?).id;
                self.journaled.record_sample(commit, slot, &measurement)?;
                (slot, measurement)
            }
        };
        let target = self.slots.target(slot)?;
        self.slots.target[slot] = None;
        self.slots.running[slot] = false;
        self.in_flight.remove(target);
        self.machine.feed(target, measurement);
        Ok(None)
    }

    /// The slot of a journaled sample, which must be running its commit.
    fn check_slot(&self, commit: &str, slot: usize) -> Result<usize, EngineError> {
        match self.slots.target.get(slot).copied().flatten() {
            Some(target) if self.machine.info(target).id == commit => Ok(slot),
            _ => Err(EngineError::JournalMismatch(format!(
                "a sample of {commit} from slot {slot}, which does not run it"
            ))),
        }
    }

    /// The commits in flight, by slot.
    fn commits_in_flight(&self) -> Vec<String> {
        self.slots
            .target
            .iter()
            .flatten()
            .map(|target| self.machine.info(*target).id.clone())
            .collect()
    }

    /// Starts again what the journal left in flight, then waits for one
    /// repeat to end. A signal journals every repeat in flight as
    /// interrupted and stops.
    fn wait_one(
        &mut self,
        measurer: &mut (dyn SlotMeasurer + '_),
    ) -> Result<(usize, Measurement), EngineError> {
        self.restart_left(measurer)?;
        let finished = measurer.finished();
        if let Err(interrupted) = interrupt::check() {
            let commits = self.commits_in_flight();
            let signal = interrupt::signal_name(interrupted.signal);
            self.journaled.record_interrupted(&commits, &signal)?;
            return Err(EngineError::Interrupted {
                commit: commits.into_iter().next().unwrap_or_default(),
                source: interrupted,
            });
        }
        let (slot, result) = finished.map_err(|source| EngineError::Measure {
            commit: self.commits_in_flight().join(", "),
            source,
        })?;
        let target = self.slots.target(slot)?;
        let measurement = result.map_err(|source: BoxError| EngineError::Measure {
            commit: self.machine.info(target).id.clone(),
            source,
        })?;
        Ok((slot, measurement))
    }

    /// Where the bisection stands: about to measure `next`, or finished
    /// with `outcome`, with the journaled estimate of the rest.
    fn status(&self, next: Option<Target>, outcome: Option<Outcome>) -> Ended {
        let machine = &self.machine;
        Ended::Status(Box::new(Status {
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
            estimate: self.journaled.estimate().cloned(),
            outcome,
        }))
    }
}

/// The machine waits only for measurements in flight: waiting with none
/// is a walk the journal cannot have led to.
pub(crate) fn nothing_in_flight() -> EngineError {
    EngineError::JournalMismatch("the walk waits with nothing in flight".to_string())
}
