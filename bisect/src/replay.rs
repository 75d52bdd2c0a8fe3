//! Resuming a bisection: the journal read back into what the loop feeds
//! the machine before anything is measured afresh, and written on as the
//! bisection goes ([`Journaled`]). The journal must belong to this
//! bisection (same ends, same options, a schema this crate reads); the
//! machine's verdicts are checked against the journaled ones as it
//! reaches them, so a journal that the engine would no longer walk the
//! same way is refused rather than misread.
//!
//! A journal is read one of two ways, as it was written:
//!
//! - One job: the journal records no starts and no slots (with one slot
//!   nothing is in flight when the machine chooses, so there is nothing
//!   to record). Every netbisect before `--jobs` wrote such journals,
//!   and one job still does. Its measurements are queued by commit and
//!   fed whenever the walk comes to that commit, and its verdicts are
//!   checked in their order ([`Replay`]).
//! - Several jobs: the machine's choices depend on what was in flight
//!   when it made them, so the journal is read in its order ([`Cursor`]):
//!   at every point the loop would start a repeat, the journal must say
//!   it started that very commit (`started`, with its slot), and every
//!   sample is fed where the journal has it.
//!
//! What the journal does not hold yet is asked of the measurer and
//! written, by the loop, through [`Journaled`]'s `record_` methods.

use crate::config::BisectConfig;
use crate::decision::Verdict;
use crate::error::EngineError;
use crate::estimate::Estimate;
use crate::graph::CommitGraph;
use crate::journal::{
    BoxError, JOURNAL_SCHEMA, JOURNAL_SCHEMAS_READ, Journal, JournalEvent, JournalSample,
};
use crate::measurement::{Measurement, Sample};
use crate::report::{BisectResult, Outcome};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// What a journal holds beside its order: the bisection it belongs to,
/// and, read by commit, its measurements and its verdicts.
pub(crate) struct Replay {
    queues: BTreeMap<String, VecDeque<Measurement>>,
    archive_checked: BTreeSet<String>,
    verdicts: Vec<(String, Verdict)>,
    verdicts_seen: usize,
    /// The journal ends with the bisection's end.
    finished: bool,
    /// The journaled estimate of the rest.
    pub(crate) estimate: Option<Estimate>,
    /// Measurements run at once, as the journal started; `None` for an
    /// empty journal.
    pub(crate) jobs: Option<u32>,
    /// The journal's schema can record measurements in flight.
    pub(crate) has_jobs: bool,
}

impl Replay {
    /// Reads `events`, checking that they belong to this bisection.
    pub(crate) fn from_events(
        events: &[JournalEvent],
        graph: &CommitGraph,
        config: &BisectConfig,
    ) -> Result<Replay, EngineError> {
        let mut replay = Replay {
            queues: BTreeMap::new(),
            archive_checked: BTreeSet::new(),
            verdicts: Vec::new(),
            verdicts_seen: 0,
            finished: false,
            estimate: None,
            jobs: None,
            has_jobs: true,
        };
        let bad = &graph.nodes[graph.bad_idx()].info.id;
        for (event_idx, event) in events.iter().enumerate() {
            match event {
                JournalEvent::Start {
                    schema,
                    good: journal_good,
                    bad: journal_bad,
                    first_parent,
                    config: journal_config,
                    jobs,
                } => {
                    if event_idx != 0 {
                        return Err(EngineError::JournalMismatch(
                            "a start event in the middle".to_string(),
                        ));
                    }
                    if !JOURNAL_SCHEMAS_READ.contains(&schema.as_str()) {
                        return Err(EngineError::JournalMismatch(format!(
                            "schema \"{schema}\", expected \"{JOURNAL_SCHEMA}\""
                        )));
                    }
                    if journal_good != &graph.good.id || journal_bad != bad {
                        return Err(EngineError::JournalMismatch(format!(
                            "it bisects {journal_good}..{journal_bad}"
                        )));
                    }
                    if *first_parent != graph.first_parent || journal_config != config {
                        return Err(EngineError::JournalMismatch(
                            "it was started with other options".to_string(),
                        ));
                    }
                    replay.jobs = Some(*jobs);
                    replay.has_jobs = crate::journal::schema_has_jobs(schema);
                }
                _ if event_idx == 0 => {
                    return Err(EngineError::JournalMismatch(
                        "the first event is not a start".to_string(),
                    ));
                }
                JournalEvent::Archived { commit, samples } => {
                    replay.add_archived(commit, samples.iter().map(sample_of).collect());
                }
                JournalEvent::Sample { commit, sample, .. } => {
                    replay.archive_checked.insert(commit.clone());
                    let queue = replay.queues.entry(commit.clone()).or_default();
                    queue.push_back(Measurement::Sample(sample_of(sample)));
                }
                JournalEvent::Skip { commit, reason, .. } => {
                    replay.archive_checked.insert(commit.clone());
                    let queue = replay.queues.entry(commit.clone()).or_default();
                    queue.push_back(Measurement::Skip(reason.clone()));
                }
                JournalEvent::Verdict {
                    commit, verdict, ..
                } => replay.verdicts.push((commit.clone(), *verdict)),
                JournalEvent::Finished { .. } => replay.finished = true,
                JournalEvent::Estimate { estimate } => replay.estimate = Some(estimate.clone()),
                JournalEvent::Interrupted { .. } | JournalEvent::Started { .. } => {}
            }
        }
        Ok(replay)
    }

    /// Leaves the journal's measurements, verdicts and end to be read in
    /// its order: nothing is queued by commit, and the archive's samples
    /// are queued as the reading comes to them.
    fn read_in_order(&mut self) {
        self.queues.clear();
        self.archive_checked.clear();
        self.verdicts.clear();
        self.finished = false;
    }

    /// The next measurement of `commit` queued, while one is left.
    fn next_measurement(&mut self, commit: &str) -> Option<Measurement> {
        self.queues.get_mut(commit).and_then(VecDeque::pop_front)
    }

    /// Queues the samples the archive holds of `commit`, now asked.
    fn add_archived(&mut self, commit: &str, samples: Vec<Sample>) {
        self.archive_checked.insert(commit.to_string());
        self.queues
            .entry(commit.to_string())
            .or_default()
            .extend(samples.into_iter().map(Measurement::Sample));
    }

    /// Whether the verdict the machine reached, `verdict` on `commit`, is
    /// the journal's next (true), or beyond what it holds (false); a
    /// verdict that differs from the journal's is a mismatch.
    fn journaled_verdict(&mut self, commit: &str, verdict: Verdict) -> Result<bool, EngineError> {
        let journaled = self.verdicts.get(self.verdicts_seen);
        self.verdicts_seen += 1;
        match journaled {
            None => Ok(false),
            Some((journaled_commit, journaled_verdict))
                if journaled_commit == commit && *journaled_verdict == verdict =>
            {
                Ok(true)
            }
            Some((journaled_commit, journaled_verdict)) => {
                Err(EngineError::JournalMismatch(format!(
                    "replay classified {commit} as {verdict:?}, the journal says {journaled_commit} \
                     is {journaled_verdict:?}"
                )))
            }
        }
    }
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

/// The journal as the loop reads it back and writes it on: what it
/// holds is fed first, in the reading its jobs call for, and only what
/// it does not hold is measured and written (when the bisection is live:
/// a status only reads).
pub(crate) struct Journaled<'a> {
    journal: &'a mut dyn Journal,
    replay: Replay,
    /// The events read in order (several jobs); none when the journal is
    /// read by commit.
    cursor: Cursor,
    /// Repeats are journaled with their start and slot (several jobs).
    records_slots: bool,
    /// New events are written.
    live: bool,
}

impl<'a> Journaled<'a> {
    /// The journal `events` of `journal` with `replay` read from them, for
    /// a bisection of `jobs`, writing on when `live`.
    pub(crate) fn new(
        journal: &'a mut dyn Journal,
        events: Vec<JournalEvent>,
        mut replay: Replay,
        jobs: usize,
        live: bool,
    ) -> Journaled<'a> {
        let records_slots = jobs > 1;
        let events = if records_slots {
            replay.read_in_order();
            events.into_iter().skip(1).collect()
        } else {
            Vec::new()
        };
        Journaled {
            journal,
            replay,
            cursor: Cursor {
                events,
                position: 0,
            },
            records_slots,
            live,
        }
    }

    /// The journaled estimate of the rest.
    pub(crate) fn estimate(&self) -> Option<&Estimate> {
        self.replay.estimate.as_ref()
    }

    /// Whether the replay has reached what the journal does not hold
    /// (always, read by commit: its measurements wait for their commit).
    pub(crate) fn replayed(&mut self) -> bool {
        self.cursor.peek().is_none()
    }

    fn append(&mut self, event: &JournalEvent) -> Result<(), EngineError> {
        self.journal.append(event).map_err(EngineError::Journal)
    }

    /// Checks the verdicts the machine `reached` against the journal's,
    /// and writes those it does not hold.
    pub(crate) fn verdicts(&mut self, reached: Vec<JournalEvent>) -> Result<(), EngineError> {
        for event in reached {
            let JournalEvent::Verdict {
                commit: reached_commit,
                verdict: reached,
                ..
            } = &event
            else {
                continue;
            };
            match self.cursor.peek() {
                Some(JournalEvent::Verdict {
                    commit, verdict, ..
                }) if commit == reached_commit && verdict == reached => self.cursor.advance(),
                None => {
                    if !self.replay.journaled_verdict(reached_commit, *reached)? && self.live {
                        self.append(&event)?;
                    }
                }
                found => {
                    return Err(mismatch(
                        &format!("the verdict {reached:?} on {reached_commit}"),
                        found,
                    ));
                }
            }
        }
        Ok(())
    }

    /// The bisection ended with `outcome`: the journal's end, or written.
    pub(crate) fn finished(&mut self, outcome: &Outcome) -> Result<(), EngineError> {
        match self.cursor.peek() {
            Some(JournalEvent::Finished { .. }) => self.cursor.advance(),
            None if self.live && !self.replay.finished => self.append(&finished_event(outcome))?,
            None => {}
            found => return Err(mismatch("the end", found)),
        }
        Ok(())
    }

    /// The estimate of the rest, made once the ends are measured.
    pub(crate) fn record_estimate(&mut self, estimate: &Estimate) -> Result<(), EngineError> {
        self.append(&JournalEvent::Estimate {
            estimate: estimate.clone(),
        })
    }

    /// The next measurement of `commit` the journal holds where the walk
    /// is, read by commit (the archive's samples come this way in both
    /// readings).
    pub(crate) fn queued(&mut self, commit: &str) -> Option<Measurement> {
        self.replay.next_measurement(commit)
    }

    /// Whether the archive was already asked for `commit`'s samples (or
    /// the commit was measured, which comes after that question).
    pub(crate) fn archive_checked(&self, commit: &str) -> bool {
        self.replay.archive_checked.contains(commit)
    }

    /// The archive's samples of `commit` where the journal holds them,
    /// now queued; `false` when it does not: the archive is asked.
    pub(crate) fn journaled_archive(&mut self, commit: &str) -> Result<bool, EngineError> {
        match self.cursor.peek() {
            Some(JournalEvent::Archived {
                commit: journaled,
                samples,
            }) if journaled == commit => {
                let samples = samples.iter().map(sample_of).collect();
                self.cursor.advance();
                self.replay.add_archived(commit, samples);
                Ok(true)
            }
            None => Ok(false),
            found => Err(mismatch(&format!("the archive of {commit}"), found)),
        }
    }

    /// The archive's samples of `commit` as the measurer `found` them,
    /// journaled, then queued.
    pub(crate) fn record_archived(
        &mut self,
        commit: &str,
        found: Result<Vec<Sample>, BoxError>,
    ) -> Result<(), EngineError> {
        let samples = found.map_err(|source| EngineError::Measure {
            commit: commit.to_string(),
            source,
        })?;
        self.append(&JournalEvent::Archived {
            commit: commit.to_string(),
            samples: samples.iter().map(journal_sample).collect(),
        })?;
        self.replay.add_archived(commit, samples);
        Ok(())
    }

    /// The slot the journal started a repeat of `commit` on, where it
    /// says so next and `is_free` that slot; `None` when the journal holds
    /// no more: the repeat starts live.
    pub(crate) fn journaled_start(
        &mut self,
        commit: &str,
        is_free: impl Fn(usize) -> bool,
    ) -> Result<Option<usize>, EngineError> {
        match self.cursor.peek() {
            Some(JournalEvent::Started {
                commit: journaled,
                slot,
            }) if journaled == commit && is_free(*slot as usize) => {
                let slot = *slot as usize;
                self.cursor.advance();
                Ok(Some(slot))
            }
            None => Ok(None),
            found => Err(mismatch(&format!("a start of {commit}"), found)),
        }
    }

    /// A repeat of `commit` started on `slot`: journaled with several
    /// jobs, where the replay must know what was in flight.
    pub(crate) fn record_start(&mut self, commit: &str, slot: usize) -> Result<(), EngineError> {
        if !self.records_slots {
            return Ok(());
        }
        self.append(&JournalEvent::Started {
            commit: commit.to_string(),
            slot: slot as u32,
        })
    }

    /// The next repeat the journal has come back, with the commit and the
    /// slot it ran on; `None` when the journal holds no more: one is
    /// waited for.
    pub(crate) fn journaled_sample(
        &mut self,
    ) -> Result<Option<(String, usize, Measurement)>, EngineError> {
        let journaled = match self.cursor.peek() {
            Some(JournalEvent::Sample {
                commit,
                sample,
                slot: Some(slot),
            }) => (
                commit.clone(),
                *slot as usize,
                Measurement::Sample(sample_of(sample)),
            ),
            Some(JournalEvent::Skip {
                commit,
                reason,
                slot: Some(slot),
            }) => (
                commit.clone(),
                *slot as usize,
                Measurement::Skip(reason.clone()),
            ),
            None => return Ok(None),
            found => return Err(mismatch("a sample of a commit in flight", found)),
        };
        self.cursor.advance();
        Ok(Some(journaled))
    }

    /// A repeat of `commit` came back from `slot` with `measurement`.
    pub(crate) fn record_sample(
        &mut self,
        commit: &str,
        slot: usize,
        measurement: &Measurement,
    ) -> Result<(), EngineError> {
        let slot = self.records_slots.then_some(slot as u32);
        self.append(&match measurement {
            Measurement::Sample(sample) => JournalEvent::Sample {
                commit: commit.to_string(),
                sample: journal_sample(sample),
                slot,
            },
            Measurement::Skip(reason) => JournalEvent::Skip {
                commit: commit.to_string(),
                reason: reason.clone(),
                slot,
            },
        })
    }

    /// A signal stopped the repeats of `commits`.
    pub(crate) fn record_interrupted(
        &mut self,
        commits: &[String],
        signal: &str,
    ) -> Result<(), EngineError> {
        for commit in commits {
            self.append(&JournalEvent::Interrupted {
                commit: commit.clone(),
                signal: signal.to_string(),
            })?;
        }
        Ok(())
    }

    /// A signal came as a repeat of `commit` was about to start. With one
    /// job a repeat's start is not journaled apart from its end, so the
    /// signal is journaled against it as one during it would be; with
    /// several, the journal says what started, and this did not.
    pub(crate) fn record_interrupted_start(
        &mut self,
        commit: &str,
        signal: &str,
    ) -> Result<(), EngineError> {
        if self.records_slots {
            return Ok(());
        }
        self.record_interrupted(&[commit.to_string()], signal)
    }
}

fn sample_of(sample: &JournalSample) -> Sample {
    Sample {
        value: sample.value,
        run_id: sample.run_id.clone(),
    }
}

fn journal_sample(sample: &Sample) -> JournalSample {
    JournalSample {
        value: sample.value,
        run_id: sample.run_id.clone(),
    }
}

fn finished_event(outcome: &Outcome) -> JournalEvent {
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
