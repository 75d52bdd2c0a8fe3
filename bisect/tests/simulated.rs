//! Property tests of the decision engine over many simulated noisy
//! histories, with fixed seeds so that they are deterministic.

use bisect::decision::DecisionConfig;
use bisect::sim::{self, History, NoiseShape, Rng, Tally};

fn tally(
    n_commits: usize,
    cv_pct: f64,
    shape: NoiseShape,
    n_trials: u32,
    seed: u64,
) -> (Tally, Tally) {
    let decision = DecisionConfig::default();
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
    let (engine, naive) = tally(256, 2.0, NoiseShape::Normal, 200, 7);
    assert!(engine.accuracy_pct() >= 98.0, "{engine:?}");
    assert!(engine.mean_measurements() <= 60.0, "{engine:?}");
    assert!(engine.accuracy_pct() > naive.accuracy_pct());
}

#[test]
fn sequential_bisection_survives_outliers_and_heavy_tails() {
    let (engine, _) = tally(256, 2.0, NoiseShape::Outliers, 100, 11);
    assert!(engine.accuracy_pct() >= 95.0, "{engine:?}");
    let (engine, _) = tally(256, 2.0, NoiseShape::HeavyTailed, 100, 13);
    assert!(engine.accuracy_pct() >= 95.0, "{engine:?}");
}

#[test]
fn the_same_seed_gives_the_same_bisection() {
    let first = tally(64, 3.0, NoiseShape::Normal, 20, 5).0;
    let second = tally(64, 3.0, NoiseShape::Normal, 20, 5).0;
    assert_eq!(first, second);
}
