//! Resuming a bisection: the journal's events turned back into what the
//! machine is fed before anything is measured afresh ([`Replay`]). The
//! journal must belong to this bisection (same ends, same options, a
//! schema this crate reads); the machine's verdicts are checked against
//! the journaled ones as it reaches them, so a journal that the engine
//! would no longer walk the same way is refused rather than misread.

use crate::config::BisectConfig;
use crate::decision::Verdict;
use crate::error::EngineError;
use crate::estimate::Estimate;
use crate::graph::CommitGraph;
use crate::journal::{JOURNAL_SCHEMA, JOURNAL_SCHEMAS_READ, Journal, JournalEvent, JournalSample};
use crate::measurement::{Measurement, Sample};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Journaled measurements waiting to be fed back on resume.
pub(crate) struct Replay {
    queues: BTreeMap<String, VecDeque<Measurement>>,
    archive_checked: BTreeSet<String>,
    verdicts: Vec<(String, Verdict)>,
    verdicts_seen: usize,
    /// The journal ends with the bisection's end.
    pub(crate) finished: bool,
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
                    replay.archive_checked.insert(commit.clone());
                    let queue = replay.queues.entry(commit.clone()).or_default();
                    queue.extend(samples.iter().map(measurement_of));
                }
                JournalEvent::Sample { commit, sample, .. } => {
                    replay.archive_checked.insert(commit.clone());
                    let queue = replay.queues.entry(commit.clone()).or_default();
                    queue.push_back(measurement_of(sample));
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

    /// The next journaled measurement of `commit`, while one is left.
    pub(crate) fn next_measurement(&mut self, commit: &str) -> Option<Measurement> {
        self.queues.get_mut(commit).and_then(VecDeque::pop_front)
    }

    /// Whether the archive was already asked for `commit`'s samples (or
    /// the commit was measured, which comes after that question).
    pub(crate) fn archive_checked(&self, commit: &str) -> bool {
        self.archive_checked.contains(commit)
    }

    /// Queues the samples the archive holds of `commit`, now asked.
    pub(crate) fn add_archived(&mut self, commit: &str, samples: Vec<Sample>) {
        self.archive_checked.insert(commit.to_string());
        self.queues
            .entry(commit.to_string())
            .or_default()
            .extend(samples.into_iter().map(Measurement::Sample));
    }

    /// Writes the verdicts the machine reached that the journal does not hold
    /// yet, checking those it does.
    pub(crate) fn sync_verdicts(
        &mut self,
        new_verdicts: Vec<JournalEvent>,
        journal: Option<&mut dyn Journal>,
    ) -> Result<(), EngineError> {
        let mut journal = journal;
        for event in new_verdicts {
            let JournalEvent::Verdict {
                commit, verdict, ..
            } = &event
            else {
                continue;
            };
            if let Some((journaled_commit, journaled_verdict)) =
                self.verdicts.get(self.verdicts_seen)
            {
                if journaled_commit != commit || journaled_verdict != verdict {
                    return Err(EngineError::JournalMismatch(format!(
                        "replay classified {commit} as {verdict:?}, the journal says {journaled_commit} \
                         is {journaled_verdict:?}"
                    )));
                }
                self.verdicts_seen += 1;
                continue;
            }
            self.verdicts_seen += 1;
            if let Some(journal) = journal.as_deref_mut() {
                journal.append(&event).map_err(EngineError::Journal)?;
            }
        }
        Ok(())
    }
}

fn measurement_of(sample: &JournalSample) -> Measurement {
    Measurement::Sample(Sample {
        value: sample.value,
        run_id: sample.run_id.clone(),
    })
}
