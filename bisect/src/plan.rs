//! How long a bisection will take, before it runs.
//!
//! The estimate is the simulator's: [`estimate`] bisects a few hundred
//! simulated histories ([`crate::sim::History`]) of the range's length,
//! with the step to find and the noise observed (normal noise at the
//! measured coefficient of variation, the culprit drawn uniformly), with
//! the very engine and decision settings the real bisection uses. It
//! reports the mean and the 95th percentile of the measurements taken,
//! confirmation included, and the same times the observed seconds per
//! measurement. The figures are what this engine needs on such a range,
//! not a bound: heavier tails or drift than normal noise cost more.

use crate::decision::DecisionConfig;
use crate::engine::EngineError;
use crate::sim::{History, NoiseShape, Rng, engine_bisect};
use serde::Serialize;
use std::time::{Duration, Instant};

/// Why an estimate could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// An input is out of range.
    #[error("invalid plan input: {0}")]
    Invalid(String),
    /// The simulated bisection failed.
    #[error("simulated bisection failed")]
    Engine(#[from] EngineError),
}

/// What to estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanInput {
    /// Commits in the range (the bad end included).
    pub n_commits: usize,
    /// Size of the change to find, percent of the old value.
    pub step_pct: f64,
    /// Noise of one measurement: coefficient of variation, percent.
    pub cv_pct: f64,
    /// Wall time of one measurement (build excluded), seconds.
    pub seconds_per_run: f64,
    /// The decision settings of the bisection.
    pub decision: DecisionConfig,
    /// Most simulated bisections.
    pub max_trials: u32,
    /// Fewest simulated bisections, taken even past `time_budget`.
    pub min_trials: u32,
    /// Time after which no further trial starts (beyond `min_trials`).
    pub time_budget: Duration,
    /// Seed of the simulation; the same seed gives the same figures
    /// when the trials are not cut by `time_budget`.
    pub seed: u64,
}

impl PlanInput {
    /// An input with 300 trials, at least 10, within two seconds.
    pub fn new(n_commits: usize, step_pct: f64, cv_pct: f64, seconds_per_run: f64) -> PlanInput {
        PlanInput {
            n_commits,
            step_pct,
            cv_pct,
            seconds_per_run,
            decision: DecisionConfig::default(),
            max_trials: 300,
            min_trials: 10,
            time_budget: Duration::from_secs(2),
            seed: 0x706c_616e,
        }
    }
}

/// The estimate, the schema of `plan --json`'s `estimate`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// Commits in the range.
    pub n_commits: usize,
    /// Change to find, percent.
    pub step_pct: f64,
    /// Noise assumed, percent.
    pub cv_pct: f64,
    /// Seconds per measurement assumed.
    pub seconds_per_run: f64,
    /// Simulated bisections the figures come from.
    pub n_trials: u32,
    /// Percent of them that named the right commit.
    pub correct_pct: f64,
    /// Mean measurements (ends and confirmation included).
    pub mean_measurements: f64,
    /// 95th percentile of the measurements (nearest rank).
    pub p95_measurements: u32,
    /// `mean_measurements` times `seconds_per_run`.
    pub mean_seconds: f64,
    /// `p95_measurements` times `seconds_per_run`.
    pub p95_seconds: f64,
}

/// Estimates the measurements and time a bisection of `input` takes.
pub fn estimate(input: &PlanInput) -> Result<Estimate, PlanError> {
    check(input)?;
    let started = Instant::now();
    let mut rng = Rng::new(input.seed);
    let mut counts: Vec<u32> = Vec::with_capacity(input.max_trials as usize);
    let mut n_correct = 0u32;
    while counts.len() < input.max_trials as usize {
        if counts.len() >= input.min_trials as usize && started.elapsed() >= input.time_budget {
            break;
        }
        let history = History::random(
            input.n_commits,
            input.step_pct,
            input.cv_pct,
            NoiseShape::Normal,
            &mut rng,
        );
        let trial = engine_bisect(&history, &input.decision, &mut rng)?;
        n_correct += u32::from(trial.correct);
        counts.push(trial.n_measurements + trial.n_confirm);
    }
    let n_trials = u32::try_from(counts.len()).unwrap_or(u32::MAX);
    let mean = counts.iter().map(|&n| f64::from(n)).sum::<f64>() / f64::from(n_trials);
    counts.sort_unstable();
    // Nearest rank: the smallest count with at least 95% at or below it.
    let rank = (0.95 * counts.len() as f64).ceil() as usize;
    let p95 = counts[rank.clamp(1, counts.len()) - 1];
    Ok(Estimate {
        n_commits: input.n_commits,
        step_pct: input.step_pct,
        cv_pct: input.cv_pct,
        seconds_per_run: input.seconds_per_run,
        n_trials,
        correct_pct: f64::from(n_correct) / f64::from(n_trials) * 100.0,
        mean_measurements: mean,
        p95_measurements: p95,
        mean_seconds: mean * input.seconds_per_run,
        p95_seconds: f64::from(p95) * input.seconds_per_run,
    })
}

fn check(input: &PlanInput) -> Result<(), PlanError> {
    let invalid = |text: &str| Err(PlanError::Invalid(text.to_string()));
    if input.n_commits == 0 {
        return invalid("a range has at least one commit");
    }
    if !(input.step_pct.is_finite() && input.step_pct > 0.0 && input.step_pct < 100.0) {
        return invalid("the effect is a percent above 0 and below 100");
    }
    if !(input.cv_pct.is_finite() && input.cv_pct >= 0.0 && input.cv_pct < 100.0) {
        return invalid("the noise is a percent from 0 to below 100");
    }
    if !(input.seconds_per_run.is_finite() && input.seconds_per_run >= 0.0) {
        return invalid("the seconds per run are a non-negative number");
    }
    if input.min_trials == 0 || input.max_trials < input.min_trials {
        return invalid("trials: at least one, and max_trials >= min_trials");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn quick(n_commits: usize, step_pct: f64, cv_pct: f64) -> PlanInput {
        PlanInput {
            max_trials: 60,
            min_trials: 60,
            ..PlanInput::new(n_commits, step_pct, cv_pct, 3.0)
        }
    }

    #[test]
    fn figures_are_consistent() {
        let estimate = estimate(&quick(64, 5.0, 2.0)).unwrap();
        assert_eq!(estimate.n_trials, 60);
        assert!(estimate.mean_measurements > 0.0);
        assert!(f64::from(estimate.p95_measurements) >= estimate.mean_measurements * 0.9);
        assert!((estimate.mean_seconds - estimate.mean_measurements * 3.0).abs() < 1e-9);
        assert!((estimate.p95_seconds - f64::from(estimate.p95_measurements) * 3.0).abs() < 1e-9);
        assert!(estimate.correct_pct >= 90.0, "{estimate:?}");
    }

    #[test]
    fn more_noise_costs_more_measurements() {
        let quiet = estimate(&quick(64, 5.0, 1.0)).unwrap();
        let noisy = estimate(&quick(64, 5.0, 5.0)).unwrap();
        assert!(
            noisy.mean_measurements > quiet.mean_measurements * 1.5,
            "{quiet:?} {noisy:?}"
        );
    }

    #[test]
    fn longer_ranges_cost_more_measurements() {
        let short = estimate(&quick(8, 5.0, 2.0)).unwrap();
        let long = estimate(&quick(512, 5.0, 2.0)).unwrap();
        assert!(long.mean_measurements > short.mean_measurements);
    }

    #[test]
    fn same_seed_same_figures() {
        let input = quick(32, 5.0, 2.0);
        assert_eq!(estimate(&input).unwrap(), estimate(&input).unwrap());
    }

    #[test]
    fn the_time_budget_stops_after_the_fewest_trials() {
        let input = PlanInput {
            max_trials: 1000,
            min_trials: 5,
            time_budget: Duration::ZERO,
            ..PlanInput::new(16, 5.0, 2.0, 1.0)
        };
        assert_eq!(estimate(&input).unwrap().n_trials, 5);
    }

    #[test]
    fn rejects_inputs_out_of_range() {
        for input in [
            quick(0, 5.0, 2.0),
            quick(8, 0.0, 2.0),
            quick(8, f64::NAN, 2.0),
            quick(8, 5.0, -1.0),
            PlanInput {
                seconds_per_run: -1.0,
                ..quick(8, 5.0, 2.0)
            },
            PlanInput {
                min_trials: 0,
                ..quick(8, 5.0, 2.0)
            },
        ] {
            assert!(matches!(estimate(&input), Err(PlanError::Invalid(_))));
        }
    }
}
