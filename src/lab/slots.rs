//! A regression's bisection measured by the lab's workers: bisect's
//! slots ([`SlotMeasurer`]) as jobs of the queue. Starting a repeat on
//! slot S puts in a job (`bisection/SESSION/S/N`, the slot's Nth repeat)
//! that any worker of the pool takes; a repeat ends when its job is done
//! (its run stored by the worker, read back here) or given up (a skip).
//!
//! The keys make a restart safe: the slot's repeat N is the one after
//! the N - 1 the journal holds a sample or a skip of, so that a driver
//! that starts again, replaying the journal and starting again what was
//! in flight, asks for the same job, and finds it waiting, taken or
//! done, never measured twice. While it waits, the driver renews its hold
//! on the regression; a hold another took over ends the wait.

use super::job::{JobPayload, JobResult, KIND_SLOT, SlotOf};
use super::plan::PRIORITY_BISECT;
use crate::exit;
use archive::lab::{JobState, NewJob};
use archive::{Archive, RunQuery};
use bisect::graph::CommitInfo;
use bisect::journal::BoxError;
use bisect::measurement::SlotMeasurer;
use bisect::{JournalEvent, Measurement, Sample};
use run_record::record::Metric;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Who drives a bisection, and for how long its hold lasts.
#[derive(Clone, Debug)]
pub struct Driver {
    /// The regression.
    pub regression_id: i64,
    /// The driver's name (`HOST:PID`).
    pub name: String,
    /// Its hold's length, renewed every third of it.
    pub hold: Duration,
}

/// The slots of a bisection, through the queue.
pub struct QueueSlots {
    archive: Archive,
    session_id: i64,
    pool: String,
    /// What every job of the bisection does but its commit and slot.
    payload: JobPayload,
    jobs: u32,
    metric: Metric,
    config_key: String,
    driver: Driver,
    poll: Duration,
    /// Repeats of each slot that ended, as the journal and this process
    /// saw them.
    ended: Vec<u32>,
    /// The job of each slot in flight, and its commit.
    in_flight: BTreeMap<usize, (String, String)>,
    renewed: Instant,
}

/// The repeats of each of `jobs` slots that the journal `events` holds a
/// sample or a skip of (a journal of one job has no slots: its repeats
/// are slot 0's).
pub fn ended_per_slot(events: &[JournalEvent], jobs: usize) -> Vec<u32> {
    let mut ended = vec![0; jobs.max(1)];
    for event in events {
        let slot = match event {
            JournalEvent::Sample { slot, .. } | JournalEvent::Skip { slot, .. } => {
                slot.unwrap_or(0) as usize
            }
            _ => continue,
        };
        if let Some(count) = ended.get_mut(slot) {
            *count += 1;
        }
    }
    ended
}

/// What a bisection's slots need to know.
pub struct SlotsOf {
    /// The session.
    pub session_id: i64,
    /// The pool of workers.
    pub pool: String,
    /// Every job's payload but its commit and slot.
    pub payload: JobPayload,
    /// The slots.
    pub jobs: u32,
    /// The config_key the runs are compared under.
    pub config_key: String,
    /// The driver.
    pub driver: Driver,
    /// How often the queue is looked at while repeats run.
    pub poll: Duration,
    /// Repeats each slot ended before ([`ended_per_slot`]).
    pub ended: Vec<u32>,
}

impl QueueSlots {
    /// The slots of `of`, through `archive`.
    pub fn new(archive: Archive, of: SlotsOf) -> exit::Result<QueueSlots> {
        let metric = of.payload.recipe.metric()?;
        Ok(QueueSlots {
            archive,
            session_id: of.session_id,
            pool: of.pool,
            payload: of.payload,
            jobs: of.jobs,
            metric,
            config_key: of.config_key,
            driver: of.driver,
            poll: of.poll,
            ended: of.ended,
            in_flight: BTreeMap::new(),
            renewed: Instant::now(),
        })
    }

    /// The owner of the bisection's jobs.
    pub fn owner(session_id: i64) -> String {
        format!("bisection {session_id}")
    }

    fn key(&self, slot: usize, repeat: u32) -> String {
        format!("bisection/{}/{slot}/{repeat}", self.session_id)
    }

    /// Renews the driver's hold every third of its length; an error once
    /// another driver holds the regression.
    fn renew(&mut self) -> exit::Result<()> {
        if self.renewed.elapsed() < self.driver.hold / 3 {
            return Ok(());
        }
        let held = self.archive.hold_regression(
            self.driver.regression_id,
            &self.driver.name,
            self.driver.hold,
        )?;
        if !held {
            return Err(exit::Failure::msg(format!(
                "regression {} is driven by another tracker now",
                self.driver.regression_id
            )));
        }
        self.renewed = Instant::now();
        Ok(())
    }

    /// The sample a done job gave, or the skip it was.
    fn measurement_of(&self, commit: &str, result: &JobResult) -> exit::Result<Measurement> {
        let (Some(run_id), None) = (&result.run_id, &result.skip) else {
            let reason = result.skip.clone().unwrap_or_else(|| "no run".to_string());
            return Ok(Measurement::Skip(reason));
        };
        let (stored, bytes) = self.archive.find(run_id)?;
        let record = Archive::stored_record(&stored, &bytes)?;
        if record.subject.commit.as_deref() != Some(commit) {
            return Ok(Measurement::Skip(format!(
                "run {run_id} is not of commit {commit}"
            )));
        }
        Ok(match record.sample(self.metric) {
            Some(value) => Measurement::Sample(Sample {
                value,
                run_id: Some(run_id.clone()),
            }),
            None => Measurement::Skip(format!("run {run_id} has no {} figures", self.metric)),
        })
    }

    /// The first repeat in flight whose job ended, with what it gave.
    fn one_ended(&mut self) -> exit::Result<Option<(usize, Measurement)>> {
        let keys: Vec<String> = self
            .in_flight
            .values()
            .map(|(key, _)| key.clone())
            .collect();
        let jobs = self.archive.jobs_by_key(&keys)?;
        for (&slot, (key, commit)) in &self.in_flight {
            let Some(job) = jobs.iter().find(|job| &job.key == key) else {
                continue;
            };
            let measurement = match job.state {
                JobState::Done => match super::job::result_of(job) {
                    Some(result) => self.measurement_of(commit, &result)?,
                    None => Measurement::Skip("the job's result is unreadable".to_string()),
                },
                JobState::Failed => Measurement::Skip(format!(
                    "its job was given up: {}",
                    super::job::given_up_reason(job).unwrap_or_default()
                )),
                JobState::Queued | JobState::Leased => continue,
            };
            return Ok(Some((slot, measurement)));
        }
        Ok(None)
    }

    fn samples_of(&self, commit: &CommitInfo) -> exit::Result<Vec<Sample>> {
        let query = RunQuery {
            commit_prefix: Some(commit.id.clone()),
            config_key_prefix: Some(self.config_key.clone()),
            ..RunQuery::default()
        };
        Ok(self
            .archive
            .records(&query)?
            .iter()
            .filter(|record| record.subject.commit.as_deref() == Some(commit.id.as_str()))
            .filter_map(|record| {
                record.sample(self.metric).map(|value| Sample {
                    value,
                    run_id: Some(record.id.clone()),
                })
            })
            .collect())
    }

    fn start_slot(&mut self, slot: usize, commit: &CommitInfo) -> exit::Result<()> {
        let repeat = self.ended.get(slot).copied().unwrap_or(0) + 1;
        let key = self.key(slot, repeat);
        let payload = JobPayload {
            commit: commit.id.clone(),
            slot: Some(SlotOf {
                slot: slot as u32,
                jobs: self.jobs,
            }),
            ..self.payload.clone()
        };
        let job = NewJob {
            pool: self.pool.clone(),
            kind: KIND_SLOT.to_string(),
            owner: QueueSlots::owner(self.session_id),
            key: key.clone(),
            payload: serde_json::to_string(&payload).map_err(exit::Failure::from)?,
            priority: PRIORITY_BISECT,
        };
        self.archive.enqueue_jobs(&[job])?;
        self.in_flight.insert(slot, (key, commit.id.clone()));
        Ok(())
    }

    fn wait_for_one(&mut self) -> exit::Result<(usize, Measurement)> {
        if self.in_flight.is_empty() {
            return Err(exit::Failure::msg("no slot is measuring"));
        }
        loop {
            self.renew()?;
            if let Some((slot, measurement)) = self.one_ended()? {
                self.in_flight.remove(&slot);
                if let Some(count) = self.ended.get_mut(slot) {
                    *count += 1;
                }
                return Ok((slot, measurement));
            }
            super::worker::sleep_or_stop(self.poll)?;
        }
    }
}

impl SlotMeasurer for QueueSlots {
    fn archived(&mut self, commit: &CommitInfo) -> Result<Vec<Sample>, BoxError> {
        Ok(self.samples_of(commit)?)
    }

    fn start(&mut self, slot: usize, commit: &CommitInfo) -> Result<(), BoxError> {
        Ok(self.start_slot(slot, commit)?)
    }

    fn finished(&mut self) -> Result<(usize, Result<Measurement, BoxError>), BoxError> {
        let (slot, measurement) = self.wait_for_one()?;
        Ok((slot, Ok(measurement)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bisect::journal::JournalSample;

    #[test]
    fn the_repeats_a_journal_ended_are_counted_per_slot() {
        let sample = |slot: Option<u32>| JournalEvent::Sample {
            commit: "c".to_string(),
            sample: JournalSample {
                value: 1.0,
                run_id: None,
            },
            slot,
        };
        let events = vec![
            sample(Some(0)),
            sample(Some(1)),
            JournalEvent::Skip {
                commit: "c".to_string(),
                reason: "build failed".to_string(),
                slot: Some(1),
            },
            JournalEvent::Started {
                commit: "c".to_string(),
                slot: 0,
            },
        ];
        assert_eq!(ended_per_slot(&events, 2), [1, 2]);
        // A journal of one job: its samples have no slot.
        assert_eq!(ended_per_slot(&[sample(None), sample(None)], 1), [2]);
    }
}
