//! Bisections with several measurements at once: one job walks exactly as
//! one measurement at a time does; more jobs take fewer rounds for a few
//! more measurements; a journal of several jobs cut anywhere resumes with
//! nothing that finished measured again and what was in flight started
//! again; the number of jobs is the journal's.

use bisect::config::BisectConfig;
use bisect::decision::DecisionConfig;
use bisect::engine;
use bisect::error::EngineError;
use bisect::graph::{CommitGraph, CommitInfo};
use bisect::journal::{BoxError, JournalEvent, MemoryJournal};
use bisect::measurement::{Measurement, Measurer, Sample, SlotMeasurer};
use bisect::report::{BisectResult, Outcome};
use bisect::sim::{self, History, NoiseShape, Rng, SimMeasurer, Tally};
use run_record::record::Direction;
use std::collections::BTreeMap;

fn config() -> BisectConfig {
    BisectConfig {
        metric: "throughput_bps".to_string(),
        direction: Direction::HigherIsBetter,
        decision: DecisionConfig::default(),
    }
}

/// [`SimMeasurer`], remembering the commits it measured in order.
struct Recording<'a> {
    inner: SimMeasurer<'a>,
    measured: Vec<String>,
}

impl Measurer for Recording<'_> {
    fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError> {
        self.measured.push(commit.id.clone());
        self.inner.measure(commit)
    }
}

#[test]
fn one_job_measures_what_one_measurement_at_a_time_measures() {
    let mut history_rng = Rng::new(26);
    for (trial_idx, cv_pct) in [2.0, 5.0, 2.0, 5.0, 3.0, 1.0, 5.0, 2.0]
        .into_iter()
        .enumerate()
    {
        let history = History::random(200, 5.0, cv_pct, NoiseShape::Normal, &mut history_rng);
        let graph = CommitGraph::linear(history.n_commits);
        let seed = 1000 + trial_idx as u64;
        let mut rng = Rng::new(seed);
        let mut recording = Recording {
            inner: SimMeasurer {
                history: &history,
                rng: &mut rng,
                n_measurements: 0,
            },
            measured: Vec::new(),
        };
        let mut journal = MemoryJournal::default();
        let one_at_a_time =
            engine::run(&graph, &config(), &mut recording, &mut journal, &mut |_| {}).unwrap();
        let measured = recording.measured;
        let mut rng = Rng::new(seed);
        let (_, started) =
            sim::engine_bisect_jobs(&history, &config().decision, 1, &mut rng).unwrap();
        assert_eq!(started, measured, "trial {trial_idx}: another walk");
        // The same outcome, through the parallel loop's own journal.
        let mut rng = Rng::new(seed);
        let mut slots = sim::SimSlots::new(&history, &mut rng);
        let one_job = engine::run_jobs(
            &graph,
            &config(),
            1,
            &mut slots,
            &mut MemoryJournal::default(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(one_job, one_at_a_time, "trial {trial_idx}");
    }
}

fn jobs_tally(jobs: usize, cv_pct: f64, n_trials: u32, seed: u64) -> Tally {
    let mut history_rng = Rng::new(seed);
    let mut tally = Tally::default();
    for trial_idx in 0..n_trials {
        let history = History::random(256, 5.0, cv_pct, NoiseShape::Normal, &mut history_rng);
        let mut rng = Rng::new(seed ^ (u64::from(trial_idx) << 32));
        let (trial, _) =
            sim::engine_bisect_jobs(&history, &DecisionConfig::default(), jobs, &mut rng).unwrap();
        tally.add(trial);
    }
    tally
}

#[test]
fn four_jobs_take_fewer_rounds_for_a_few_more_measurements() {
    // The shape of scripts/bench-bisect-sim.sh --jobs 1,4 at 256 commits,
    // a 5% step in 2% noise, 60 trials.
    let one = jobs_tally(1, 2.0, 60, 9);
    let four = jobs_tally(4, 2.0, 60, 9);
    assert!(
        (one.rounds - one.n_measurements as f64).abs() < 1e-9,
        "{one:?}"
    );
    assert!(one.accuracy_pct() >= 97.0, "{one:?}");
    assert!(four.accuracy_pct() >= 97.0, "{four:?}");
    assert!(
        four.mean_rounds() <= 0.5 * one.mean_measurements(),
        "{one:?} {four:?}"
    );
    assert!(
        four.mean_measurements() <= 1.6 * one.mean_measurements(),
        "{one:?} {four:?}"
    );
    assert!(four.mean_measurements() >= one.mean_measurements() * 0.9);
}

/// Slots whose repeats take from half a unit to one and a half, so that
/// they come back out of order; the value and the length of the k-th
/// repeat of a commit are the same whenever it is taken, so a resumed
/// bisection sees what the first would have.
struct Scrambled<'a> {
    history: &'a History,
    clock: f64,
    taken: BTreeMap<String, u64>,
    running: Vec<(f64, usize, f64)>,
    started: Vec<(usize, String)>,
}

impl<'a> Scrambled<'a> {
    /// Slots after the journal `events`: the repeats it started count as
    /// taken, those left in flight included (they are taken again).
    fn after(history: &'a History, events: &[JournalEvent]) -> Scrambled<'a> {
        let mut taken: BTreeMap<String, u64> = BTreeMap::new();
        for event in events {
            if let JournalEvent::Sample { commit, .. } | JournalEvent::Skip { commit, .. } = event {
                *taken.entry(commit.clone()).or_default() += 1;
            }
        }
        Scrambled {
            history,
            clock: 0.0,
            taken,
            running: Vec::new(),
            started: Vec::new(),
        }
    }
}

impl SlotMeasurer for Scrambled<'_> {
    fn start(&mut self, slot: usize, commit: &CommitInfo) -> Result<(), BoxError> {
        let node_idx = commit.id.strip_prefix('c').and_then(|n| n.parse().ok());
        let taken = self.taken.entry(commit.id.clone()).or_default();
        let key = commit.id.bytes().fold(77u64, |acc, b| {
            acc.wrapping_mul(0x100000001b3) ^ u64::from(b)
        });
        let mut rng = Rng::new(key ^ (*taken << 40));
        *taken += 1;
        let value = self.history.draw(node_idx, &mut rng);
        let length = 0.5 + rng.uniform();
        self.running.push((self.clock + length, slot, value));
        self.started.push((slot, commit.id.clone()));
        Ok(())
    }

    fn finished(&mut self) -> Result<(usize, Result<Measurement, BoxError>), BoxError> {
        let first = self
            .running
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| a.0.total_cmp(&b.0))
            .map(|(idx, _)| idx)
            .ok_or("nothing runs")?;
        let (ends, slot, value) = self.running.remove(first);
        self.clock = ends;
        Ok((
            slot,
            Ok(Measurement::Sample(Sample {
                value,
                run_id: None,
            })),
        ))
    }
}

fn culprit(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Finished(report) => match &report.result {
            BisectResult::FirstBad { commit, .. } => commit.id.clone(),
            BisectResult::Range { .. } => panic!("a range: {report:?}"),
        },
        Outcome::Refused(refusal) => panic!("refused: {refusal:?}"),
    }
}

/// The repeats the journal `events` leaves in flight: (slot, commit).
fn in_flight(events: &[JournalEvent]) -> Vec<(usize, String)> {
    let mut slots: BTreeMap<u32, String> = BTreeMap::new();
    for event in events {
        match event {
            JournalEvent::Started { commit, slot } => {
                slots.insert(*slot, commit.clone());
            }
            JournalEvent::Sample {
                slot: Some(slot), ..
            }
            | JournalEvent::Skip {
                slot: Some(slot), ..
            } => {
                slots.remove(slot);
            }
            _ => {}
        }
    }
    slots
        .into_iter()
        .map(|(slot, commit)| (slot as usize, commit))
        .collect()
}

#[test]
fn a_journal_of_three_jobs_cut_anywhere_resumes_without_measuring_again() {
    let history = History {
        n_commits: 40,
        culprit_idx: 23,
        old_value: 1e9,
        step_pct: 10.0,
        cv_pct: 2.0,
        shape: NoiseShape::Normal,
    };
    let graph = CommitGraph::linear(history.n_commits);
    let mut full = MemoryJournal::default();
    let mut slots = Scrambled::after(&history, &[]);
    let outcome =
        engine::run_jobs(&graph, &config(), 3, &mut slots, &mut full, &mut |_| {}).unwrap();
    assert_eq!(culprit(&outcome), "c23");
    // Three at once, from the first repeats of the ends on.
    let first_three: Vec<usize> = slots
        .started
        .iter()
        .take(3)
        .map(|(slot, _)| *slot)
        .collect();
    assert_eq!(first_three, [0, 1, 2]);
    let n_events = full.events.len();
    assert!(n_events > 40, "{n_events} events");

    for cut in (1..n_events).step_by(3) {
        let prefix = full.events[..cut].to_vec();
        let n_samples_before = prefix
            .iter()
            .filter(|event| matches!(event, JournalEvent::Sample { .. }))
            .count();
        let left = in_flight(&prefix);
        let mut journal = MemoryJournal { events: prefix };
        let mut slots = Scrambled::after(&history, &journal.events);
        let resumed = engine::run_jobs(&graph, &config(), 3, &mut slots, &mut journal, &mut |_| {})
            .unwrap_or_else(|err| panic!("cut at {cut}: {err}"));
        assert_eq!(culprit(&resumed), "c23", "cut at {cut}");
        // What was in flight is started first, on its own slots...
        let restarted: Vec<(usize, String)> =
            slots.started.iter().take(left.len()).cloned().collect();
        assert_eq!(restarted, left, "cut at {cut}");
        // ...and everything started afresh is journaled as started;
        // nothing journaled as finished is started again.
        let n_started_after = journal.events[cut..]
            .iter()
            .filter(|event| matches!(event, JournalEvent::Started { .. }))
            .count();
        assert_eq!(
            slots.started.len(),
            left.len() + n_started_after,
            "cut at {cut}"
        );
        let n_samples_after = journal
            .events
            .iter()
            .filter(|event| matches!(event, JournalEvent::Sample { .. }))
            .count();
        assert_eq!(
            n_samples_after - n_samples_before,
            slots.started.len(),
            "cut at {cut}"
        );
        // The whole journal replays without measuring anything.
        let mut idle = Scrambled::after(&history, &journal.events);
        let again = engine::run_jobs(
            &graph,
            &config(),
            3,
            &mut idle,
            &mut journal.clone(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(again, resumed, "cut at {cut}");
        assert!(idle.started.is_empty(), "cut at {cut}");
        // And its status, measuring nothing, is finished.
        let status = engine::status(&graph, &config(), &journal.events).unwrap();
        assert_eq!(status.outcome.as_ref(), Some(&resumed), "cut at {cut}");
    }
}

#[test]
fn the_number_of_jobs_is_the_journals() {
    let history = History {
        n_commits: 30,
        culprit_idx: 11,
        old_value: 1e9,
        step_pct: 10.0,
        cv_pct: 2.0,
        shape: NoiseShape::Normal,
    };
    let graph = CommitGraph::linear(history.n_commits);
    let mut journal = MemoryJournal::default();
    let mut slots = Scrambled::after(&history, &[]);
    engine::run_jobs(&graph, &config(), 3, &mut slots, &mut journal, &mut |_| {}).unwrap();
    let cut = MemoryJournal {
        events: journal.events[..20].to_vec(),
    };
    // Resumed with two jobs, or one at a time: refused, naming the three.
    let err = engine::run_jobs(
        &graph,
        &config(),
        2,
        &mut Scrambled::after(&history, &cut.events),
        &mut cut.clone(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::Jobs {
                journaled: 3,
                asked: 2
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("--jobs 3"), "{err}");
    let mut rng = Rng::new(1);
    let err = engine::run(
        &graph,
        &config(),
        &mut SimMeasurer {
            history: &history,
            rng: &mut rng,
            n_measurements: 0,
        },
        &mut cut.clone(),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(
            err,
            EngineError::Jobs {
                journaled: 3,
                asked: 1
            }
        ),
        "{err}"
    );
    // A journal of an older netbisect (schema 1.2, no jobs) runs on one
    // at a time, and refuses three.
    let mut old = MemoryJournal::default();
    let mut rng = Rng::new(1);
    let mut one = SimMeasurer {
        history: &history,
        rng: &mut rng,
        n_measurements: 0,
    };
    engine::run(&graph, &config(), &mut one, &mut old, &mut |_| {}).unwrap();
    let mut old_events = old.events[..10].to_vec();
    if let JournalEvent::Start { schema, .. } = &mut old_events[0] {
        *schema = "netbisect.bisect-journal/1.2".to_string();
    }
    let err = engine::run_jobs(
        &graph,
        &config(),
        3,
        &mut Scrambled::after(&history, &old_events),
        &mut MemoryJournal { events: old_events },
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(err, EngineError::JobsUnrecorded), "{err}");
    assert!(err.to_string().contains("older netbisect"), "{err}");
}

#[test]
fn one_job_journals_one_measurement_at_a_time_whichever_measurer() {
    let history = History {
        n_commits: 30,
        culprit_idx: 17,
        old_value: 1e9,
        step_pct: 10.0,
        cv_pct: 2.0,
        shape: NoiseShape::Normal,
    };
    let graph = CommitGraph::linear(history.n_commits);
    let mut rng = Rng::new(3);
    let mut one_at_a_time = MemoryJournal::default();
    let outcome = engine::run(
        &graph,
        &config(),
        &mut SimMeasurer {
            history: &history,
            rng: &mut rng,
            n_measurements: 0,
        },
        &mut one_at_a_time,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(culprit(&outcome), "c17");
    let mut rng = Rng::new(3);
    let mut one_slot = MemoryJournal::default();
    let on_slots = engine::run_jobs(
        &graph,
        &config(),
        1,
        &mut sim::SimSlots::new(&history, &mut rng),
        &mut one_slot,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(on_slots, outcome);
    // No starts and no slots: with one job nothing is in flight when the
    // next commit is chosen.
    assert_eq!(one_slot.events, one_at_a_time.events);
    assert!(one_slot.events.iter().all(|event| match event {
        JournalEvent::Started { .. } => false,
        JournalEvent::Sample { slot, .. } | JournalEvent::Skip { slot, .. } => slot.is_none(),
        _ => true,
    }));
    // Either resumes the other's journal, cut anywhere.
    for cut in (1..one_slot.events.len()).step_by(7) {
        let prefix = one_slot.events[..cut].to_vec();
        let mut journal = MemoryJournal { events: prefix };
        let mut slots = Scrambled::after(&history, &journal.events);
        let resumed = engine::run_jobs(&graph, &config(), 1, &mut slots, &mut journal, &mut |_| {})
            .unwrap_or_else(|err| panic!("cut at {cut}: {err}"));
        assert_eq!(culprit(&resumed), "c17", "cut at {cut}");
        assert_eq!(
            journal.events[..cut],
            one_slot.events[..cut],
            "cut at {cut}"
        );
    }
}
