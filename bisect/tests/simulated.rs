//! Property tests of the decision engine over many simulated noisy
//! histories, with fixed seeds so that they are deterministic.

use bisect::config::BisectConfig;
use bisect::decision::{DecisionConfig, FutilityAlternative, Method};
use bisect::engine;
use bisect::graph::{CommitGraph, CommitInfo};
use bisect::journal::{BoxError, JournalEvent, MemoryJournal};
use bisect::measurement::{Measurement, Measurer, Sample};
use bisect::progress::Phase;
use bisect::report::{BisectResult, Outcome};
use bisect::sim::{self, History, NoiseShape, Rng, Tally};
use run_record::record::Direction;
use std::collections::BTreeMap;

fn tally(
    method: Method,
    n_commits: usize,
    cv_pct: f64,
    shape: NoiseShape,
    n_trials: u32,
    seed: u64,
) -> (Tally, Tally) {
    let decision = DecisionConfig {
        method,
        ..DecisionConfig::default()
    };
    let mut history_rng = Rng::new(seed);
    let mut engine_tally = Tally::default();
    let mut naive_tally = Tally::default();
    for trial_idx in 0..n_trials {
        let history = History::random(n_commits, 5.0, cv_pct, shape, &mut history_rng);
        let mut rng = Rng::new(seed ^ u64::from(trial_idx) << 32);
        engine_tally.add(sim::engine_bisect(&history, &decision, &mut rng).unwrap());
        naive_tally.add(sim::naive_bisect(&history, 3, &mut rng));
    }
    (engine_tally, naive_tally)
}

#[test]
fn sequential_bisection_is_accurate_and_cheap_at_two_percent_noise() {
    let (engine, naive) = tally(Method::Sequential, 256, 2.0, NoiseShape::Normal, 200, 7);
    assert!(engine.accuracy_pct() >= 98.0, "{engine:?}");
    assert!(engine.mean_measurements() <= 60.0, "{engine:?}");
    assert!(engine.accuracy_pct() > naive.accuracy_pct());
}

#[test]
fn sequential_bisection_survives_outliers_and_heavy_tails() {
    let (engine, _) = tally(Method::Sequential, 256, 2.0, NoiseShape::Outliers, 100, 11);
    assert!(engine.accuracy_pct() >= 95.0, "{engine:?}");
    let (engine, _) = tally(
        Method::Sequential,
        256,
        2.0,
        NoiseShape::HeavyTailed,
        100,
        13,
    );
    assert!(engine.accuracy_pct() >= 95.0, "{engine:?}");
}

#[test]
fn posterior_bisection_is_accurate_and_cheaper_than_sequential() {
    let (posterior, naive) = tally(Method::Posterior, 256, 2.0, NoiseShape::Normal, 200, 7);
    let (sequential, _) = tally(Method::Sequential, 256, 2.0, NoiseShape::Normal, 200, 7);
    assert!(posterior.accuracy_pct() >= 98.0, "{posterior:?}");
    assert!(posterior.accuracy_pct() > naive.accuracy_pct());
    assert!(
        posterior.mean_measurements() < 0.8 * sequential.mean_measurements(),
        "{posterior:?} vs {sequential:?}"
    );
}

#[test]
fn posterior_bisection_survives_every_noise_shape() {
    for (shape, seed) in [
        (NoiseShape::Outliers, 11),
        (NoiseShape::HeavyTailed, 13),
        (NoiseShape::Bimodal, 17),
        (NoiseShape::Drift, 19),
    ] {
        let (posterior, _) = tally(Method::Posterior, 256, 2.0, shape, 100, seed);
        assert!(posterior.accuracy_pct() >= 95.0, "{shape:?}: {posterior:?}");
        assert_eq!(posterior.n_ranges, 0, "{shape:?}: {posterior:?}");
    }
}

#[test]
fn the_same_seed_gives_the_same_bisection() {
    for method in [Method::Sequential, Method::Posterior] {
        let first = tally(method, 64, 3.0, NoiseShape::Normal, 20, 5).0;
        let second = tally(method, 64, 3.0, NoiseShape::Normal, 20, 5).0;
        assert_eq!(first, second);
    }
}

/// The engine's default method over `n_trials` histories of 64 commits
/// with a step of `step_pct` (0: the ends do not differ) in normal noise
/// of `cv_pct`: the tally and each trial's repeats of each end.
fn ends_tally(step_pct: f64, cv_pct: f64, n_trials: u32, seed: u64) -> (Tally, Vec<u32>) {
    ends_tally_with(&DecisionConfig::default(), step_pct, cv_pct, n_trials, seed)
}

/// [`ends_tally`] under `decision`.
fn ends_tally_with(
    decision: &DecisionConfig,
    step_pct: f64,
    cv_pct: f64,
    n_trials: u32,
    seed: u64,
) -> (Tally, Vec<u32>) {
    let mut history_rng = Rng::new(seed);
    let mut engine_tally = Tally::default();
    let mut end_repeats = Vec::new();
    for trial_idx in 0..n_trials {
        let history = History::random(64, step_pct, cv_pct, NoiseShape::Normal, &mut history_rng);
        let mut rng = Rng::new(seed ^ u64::from(trial_idx) << 32);
        let trial = sim::engine_bisect(&history, decision, &mut rng).unwrap();
        engine_tally.add(trial);
        end_repeats.push(trial.n_end_repeats);
    }
    (engine_tally, end_repeats)
}

#[test]
fn ends_that_do_not_differ_are_refused_within_ten_repeats_of_each() {
    // The futility bound's error rates (see the `ends` module): ends
    // equal within 2% or 5% noise are refused after a median of at most
    // ten repeats of each end...
    for cv_pct in [2.0, 5.0] {
        let (tally, end_repeats) = ends_tally(0.0, cv_pct, 200, 29);
        assert!(tally.refused_pct() >= 97.0, "{cv_pct}%: {tally:?}");
        let median = sim::median(&end_repeats).unwrap();
        assert!(median <= 10.0, "{cv_pct}%: median {median}");
    }
    // ...while a 5% step in 2% noise is never refused and its culprit
    // is found...
    let (tally, _) = ends_tally(5.0, 2.0, 200, 31);
    assert_eq!(tally.n_refused, 0, "{tally:?}");
    assert!(tally.accuracy_pct() >= 99.0, "{tally:?}");
    // ...and a 5% step in 5% noise, one noise scale, the case where the
    // two errors meet, is refused 21% to 25% of the time in 1000 trials.
    let (tally, _) = ends_tally(5.0, 5.0, 100, 37);
    assert!(tally.refused_pct() <= 30.0, "{tally:?}");
    assert!(tally.refused_pct() >= 5.0, "{tally:?}");
}

#[test]
fn a_promised_minimum_effect_keeps_a_step_of_that_size() {
    // `--min-effect 5`: the futility bound is built against 5%, so a 5%
    // step in 5% noise, refused about a fifth of the time by the bound
    // built against the noise (above), is refused at most 2% of the time
    // (Wald's bound), and found.
    let promised = DecisionConfig {
        min_effect_pct: 5.0,
        futility_alternative: FutilityAlternative::MinEffect,
        ..DecisionConfig::default()
    };
    let (tally, _) = ends_tally_with(&promised, 5.0, 5.0, 200, 37);
    assert!(tally.refused_pct() <= 3.0, "{tally:?}");
    assert!(tally.accuracy_pct() >= 95.0, "{tally:?}");
    // Ends that do not differ are still refused, after more repeats
    // than the bound built against the noise takes, but well within
    // the cap.
    let (tally, end_repeats) = ends_tally_with(&promised, 0.0, 5.0, 200, 29);
    assert!(tally.refused_pct() >= 97.0, "{tally:?}");
    let median = sim::median(&end_repeats).unwrap();
    assert!((10.0..=40.0).contains(&median), "median {median}");
}

/// A measurer whose k-th sample of a commit is the same whenever it is
/// drawn, so that a resumed bisection sees what the first one would have.
struct Replayable<'a> {
    history: &'a History,
    seed: u64,
    taken: BTreeMap<String, u64>,
    n_fresh: u32,
}

impl Replayable<'_> {
    fn after<'h>(history: &'h History, seed: u64, events: &[JournalEvent]) -> Replayable<'h> {
        let mut taken = BTreeMap::new();
        for event in events {
            if let JournalEvent::Sample { commit, .. } = event {
                *taken.entry(commit.clone()).or_default() += 1;
            }
        }
        Replayable {
            history,
            seed,
            taken,
            n_fresh: 0,
        }
    }
}

impl Measurer for Replayable<'_> {
    fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError> {
        let node_idx = commit.id.strip_prefix('c').and_then(|n| n.parse().ok());
        let taken = self.taken.entry(commit.id.clone()).or_default();
        let key = commit.id.bytes().fold(self.seed, |acc, b| {
            acc.wrapping_mul(0x100000001b3) ^ u64::from(b)
        });
        let mut rng = Rng::new(key ^ (*taken << 40));
        *taken += 1;
        self.n_fresh += 1;
        Ok(Measurement::Sample(Sample {
            value: self.history.draw(node_idx, &mut rng),
            run_id: None,
        }))
    }
}

fn culprit_of(outcome: &Outcome) -> (String, f64) {
    match outcome {
        Outcome::Finished(report) => match &report.result {
            BisectResult::FirstBad {
                commit,
                confidence_pct,
                ..
            } => (commit.id.clone(), *confidence_pct),
            BisectResult::Range { .. } => ("range".to_string(), 0.0),
        },
        Outcome::Refused(_) => ("refused".to_string(), 0.0),
    }
}

#[test]
fn resuming_from_any_journal_prefix_gives_the_same_answer() {
    let config = BisectConfig {
        metric: "throughput_bps".to_string(),
        direction: Direction::HigherIsBetter,
        decision: DecisionConfig {
            confirm_repeats: 2,
            ..DecisionConfig::default()
        },
    };
    assert_eq!(config.decision.method, Method::Posterior);
    let graph = CommitGraph::linear(200);
    let mut history_rng = Rng::new(23);
    for trial_idx in 0..4u64 {
        let history = History::random(200, 5.0, 3.0, NoiseShape::Normal, &mut history_rng);
        let mut full = MemoryJournal::default();
        let mut measurer = Replayable::after(&history, trial_idx, &[]);
        let outcome = engine::run(&graph, &config, &mut measurer, &mut full, &mut |_| {}).unwrap();
        let (culprit, confidence_pct) = culprit_of(&outcome);
        // The culprit's posterior is a probability, and high.
        assert!(
            (0.0..=100.0).contains(&confidence_pct) && confidence_pct >= 90.0,
            "{confidence_pct}"
        );
        for prefix_len in (1..full.events.len()).step_by(5) {
            let prefix = &full.events[..prefix_len];
            let mut journal = MemoryJournal {
                events: prefix.to_vec(),
            };
            let mut measurer = Replayable::after(&history, trial_idx, prefix);
            let resumed =
                engine::run(&graph, &config, &mut measurer, &mut journal, &mut |_| {}).unwrap();
            assert_eq!(culprit_of(&resumed).0, culprit, "prefix {prefix_len}");
            assert_eq!(journal.events, full.events, "prefix {prefix_len}");
        }
    }
}

/// A measurer that says how long a repeat takes, so the engine
/// estimates the rest once the ends are measured.
struct Timed<'a>(Replayable<'a>);

impl Measurer for Timed<'_> {
    fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError> {
        self.0.measure(commit)
    }

    fn seconds_per_sample(&self) -> Option<f64> {
        Some(2.0)
    }
}

fn estimates(events: &[JournalEvent]) -> Vec<usize> {
    events
        .iter()
        .enumerate()
        .filter(|(_, event)| matches!(event, JournalEvent::Estimate { .. }))
        .map(|(event_idx, _)| event_idx)
        .collect()
}

#[test]
fn the_rest_is_estimated_once_when_the_ends_are_measured() {
    let config = BisectConfig {
        metric: "throughput_bps".to_string(),
        direction: Direction::HigherIsBetter,
        decision: DecisionConfig::default(),
    };
    let graph = CommitGraph::linear(16);
    let history = History::random(16, 10.0, 2.0, NoiseShape::Normal, &mut Rng::new(5));
    let mut journal = MemoryJournal::default();
    let mut measurer = Timed(Replayable::after(&history, 1, &[]));
    let mut seen: Vec<(Phase, bool)> = Vec::new();
    let outcome = engine::run(
        &graph,
        &config,
        &mut measurer,
        &mut journal,
        &mut |progress| seen.push((progress.phase, progress.estimate.is_some())),
    )
    .unwrap();
    assert_eq!(culprit_of(&outcome).0, format!("c{}", history.culprit_idx));

    // One estimate, after every sample of the ends and before the first
    // sample of anything else.
    let events = &journal.events;
    let [estimate_idx] = estimates(events)[..] else {
        panic!("{events:#?}");
    };
    let ends = [graph.good.id.clone(), "c15".to_string()];
    let is_sample_of = |event: &JournalEvent, ends_only: bool| match event {
        JournalEvent::Sample { commit, .. } => ends.contains(commit) == ends_only,
        _ => false,
    };
    assert!(
        events[..estimate_idx]
            .iter()
            .all(|e| !is_sample_of(e, false))
    );
    assert!(
        events[estimate_idx..]
            .iter()
            .any(|e| is_sample_of(e, false))
    );
    let JournalEvent::Estimate { estimate } = &events[estimate_idx] else {
        unreachable!()
    };
    assert_eq!(estimate.n_commits, 16);
    assert_eq!(estimate.seconds_per_run, 2.0);
    // The ends' 10% step at 2% noise, as percentages of the larger end.
    assert!(
        estimate.step_pct > 5.0 && estimate.step_pct < 15.0,
        "{estimate:?}"
    );
    assert!(
        estimate.cv_pct > 0.5 && estimate.cv_pct < 5.0,
        "{estimate:?}"
    );
    assert!(estimate.mean_after_ends > 0.0);
    assert!(estimate.mean_after_ends < estimate.mean_measurements);
    // The progress of the ends has none; every later one has it.
    assert!(
        seen.iter()
            .all(|(phase, has)| *has == (*phase != Phase::Ends))
    );

    // The status shows it; a resume keeps it and makes no other.
    let status = engine::status(&graph, &config, events).unwrap();
    assert_eq!(status.estimate.as_ref(), Some(estimate));
    let prefix = events[..estimate_idx + 1].to_vec();
    let mut resumed = MemoryJournal {
        events: prefix.clone(),
    };
    let mut measurer = Timed(Replayable::after(&history, 1, &prefix));
    engine::run(&graph, &config, &mut measurer, &mut resumed, &mut |_| {}).unwrap();
    assert_eq!(resumed.events, *events);
    // A resume from before it makes it then.
    let prefix = events[..estimate_idx].to_vec();
    let mut resumed = MemoryJournal {
        events: prefix.clone(),
    };
    let mut measurer = Timed(Replayable::after(&history, 1, &prefix));
    engine::run(&graph, &config, &mut measurer, &mut resumed, &mut |_| {}).unwrap();
    assert_eq!(estimates(&resumed.events), vec![estimate_idx]);

    // A measurer that cannot time its repeats gets no estimate.
    let mut journal = MemoryJournal::default();
    let mut measurer = Replayable::after(&history, 1, &[]);
    engine::run(&graph, &config, &mut measurer, &mut journal, &mut |_| {}).unwrap();
    assert!(estimates(&journal.events).is_empty());
}
