//! How long a bisection will take, before it runs.
//!
//! The estimate is the simulator's: [`estimate`] bisects [`TRIALS`]
//! simulated histories ([`crate::sim::History`]) of the range's length,
//! with the step to find and the noise observed (normal noise at the
//! measured coefficient of variation, the culprit drawn uniformly), with
//! the very engine and decision settings the real bisection uses. It
//! reports the mean, the 95th percentile and the most of the
//! measurements taken (confirmation included) over the same simulated
//! bisections, the rounds when several run at once (the wall-clock in
//! units of one measurement), and the rounds times the observed seconds
//! per measurement,
//! with how many named the right commit and how many were refused at
//! their ends. The figures are what this engine needs on such a range,
//! not a bound: heavier tails or drift than normal noise cost more. A
//! mean can lie above the 95th percentile when a few simulated
//! bisections take far longer than the rest (a step lost in the noise,
//! bisected commit by commit to the repeat cap); the most says how far.
//!
//! A bisection aims to name the right commit with the probability of
//! [`accuracy_target_pct`]; an estimate whose simulated accuracy falls
//! short of it describes a bisection that will often fail, and the
//! command-line tool says so.
//!
//! A bisection makes the same estimate once it has measured its ends
//! ([`from_ends`]: the step is the ends' difference, the noise their
//! pooled spread), journals it, and says what the rest (the measurements
//! after the ends) will take.

use crate::decision::DecisionConfig;
use crate::error::EngineError;
use crate::estimate::Estimate;
use crate::robust::mean_var;
use crate::sim::{History, NoiseShape, Rng, engine_bisect, engine_bisect_jobs};
use std::time::{Duration, Instant};

/// Simulated bisections of an estimate when it is not cut short by a
/// time budget (`netbisect plan` never cuts it) or by the length of the
/// range ([`trials_for`]).
pub const TRIALS: u32 = 300;

/// Fewest simulated bisections of a plan, however long its range.
pub const FEWEST_TRIALS: u32 = 30;

/// Commits times trials that a plan simulates at most: [`TRIALS`]
/// bisections of a 2048-commit range. Every step of a simulated bisection
/// walks its posterior over every commit of the range, so the time grows
/// with their product; a longer range takes fewer trials and so about as
/// long as a 2048-commit one.
pub const WORK: usize = TRIALS as usize * 2048;

/// The longest range a plan simulates, commits: [`FEWEST_TRIALS`] of it
/// fill [`WORK`]. A release cycle of Linux is about 15,000 commits.
pub const MAX_COMMITS: usize = WORK / FEWEST_TRIALS as usize;

/// The trials a plan of `n_commits` takes: [`TRIALS`] up to 2048 commits,
/// fewer past that, never under [`FEWEST_TRIALS`]. The count depends on
/// the range alone, not on the machine's speed, so that the same plan
/// gives the same figures anywhere.
pub fn trials_for(n_commits: usize) -> u32 {
    let trials = (WORK / n_commits.max(1)).clamp(FEWEST_TRIALS as usize, TRIALS as usize);
    u32::try_from(trials).unwrap_or(TRIALS)
}

/// The accuracy a bisection with `decision` aims for, percent: the
/// posterior probability at which it names a culprit.
pub fn accuracy_target_pct(decision: &DecisionConfig) -> f64 {
    decision.culprit_confidence * 100.0
}

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
    /// Measurements run at once (`bisect run --jobs`).
    pub jobs: usize,
}

impl PlanInput {
    /// An input with [`TRIALS`] trials, at least 10, within two seconds.
    pub fn new(n_commits: usize, step_pct: f64, cv_pct: f64, seconds_per_run: f64) -> PlanInput {
        PlanInput {
            n_commits,
            step_pct,
            cv_pct,
            seconds_per_run,
            decision: DecisionConfig::default(),
            max_trials: TRIALS,
            min_trials: 10,
            time_budget: Duration::from_secs(2),
            seed: 0x706c_616e,
            jobs: 1,
        }
    }
}

/// Estimates the measurements and time a bisection of `input` takes.
pub fn estimate(input: &PlanInput) -> Result<Estimate, PlanError> {
    estimate_with_progress(input, &mut |_| {})
}

/// [`estimate`], calling `on_trial` with the number of simulated
/// bisections done after each one (a long plan shows where it stands).
pub fn estimate_with_progress(
    input: &PlanInput,
    on_trial: &mut dyn FnMut(u32),
) -> Result<Estimate, PlanError> {
    check(input)?;
    let started = Instant::now();
    let mut rng = Rng::new(input.seed);
    let mut counts: Vec<u32> = Vec::with_capacity(input.max_trials as usize);
    let mut after_ends: Vec<u32> = Vec::with_capacity(input.max_trials as usize);
    let mut rounds: Vec<u32> = Vec::with_capacity(input.max_trials as usize);
    let mut n_correct = 0u32;
    let mut n_refused = 0u32;
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
        let trial = if input.jobs > 1 {
            engine_bisect_jobs(&history, &input.decision, input.jobs, &mut rng)?.0
        } else {
            engine_bisect(&history, &input.decision, &mut rng)?
        };
        // Every simulated repeat takes one unit: the rounds are whole.
        rounds.push(trial.rounds_to_end.round() as u32);
        n_correct += u32::from(trial.correct);
        n_refused += u32::from(trial.refused);
        counts.push(trial.n_measurements + trial.n_confirm);
        after_ends.push(trial.n_measurements + trial.n_confirm - trial.n_ends);
        on_trial(u32::try_from(counts.len()).unwrap_or(u32::MAX));
    }
    let n_trials = u32::try_from(counts.len()).unwrap_or(u32::MAX);
    let (mean, p95) = mean_and_p95(&mut counts);
    let max = counts.iter().copied().max().unwrap_or(0);
    let (mean_after_ends, p95_after_ends) = mean_and_p95(&mut after_ends);
    let (mean_rounds, p95_rounds) = mean_and_p95(&mut rounds);
    Ok(Estimate {
        n_commits: input.n_commits,
        step_pct: input.step_pct,
        cv_pct: input.cv_pct,
        seconds_per_run: input.seconds_per_run,
        n_trials,
        correct_pct: f64::from(n_correct) / f64::from(n_trials) * 100.0,
        refused_pct: f64::from(n_refused) / f64::from(n_trials) * 100.0,
        mean_measurements: mean,
        p95_measurements: p95,
        max_measurements: max,
        mean_seconds: mean_rounds * input.seconds_per_run,
        p95_seconds: f64::from(p95_rounds) * input.seconds_per_run,
        mean_after_ends,
        p95_after_ends,
        jobs: input.jobs as u32,
        mean_rounds,
        p95_rounds,
    })
}

/// The mean and the 95th percentile (nearest rank: the smallest count
/// with at least 95% at or below it) of `counts`, which is not empty.
fn mean_and_p95(counts: &mut [u32]) -> (f64, u32) {
    let mean = counts.iter().map(|&n| f64::from(n)).sum::<f64>() / counts.len() as f64;
    counts.sort_unstable();
    let rank = (0.95 * counts.len() as f64).ceil() as usize;
    (mean, counts[rank.clamp(1, counts.len()) - 1])
}

/// The step and noise the ends show, as percentages of the larger end's
/// mean: `(step_pct, cv_pct)`, with the noise the pooled standard
/// deviation of the two ends. Only their ratio matters to the simulated
/// normal noise, and this keeps the step below 100% whichever way it
/// goes. `None` without two samples at each end, or when the ends do not
/// differ.
pub fn from_ends(good: &[f64], bad: &[f64]) -> Option<(f64, f64)> {
    if good.len() < 2 || bad.len() < 2 {
        return None;
    }
    let (good_mean, good_var) = mean_var(good);
    let (bad_mean, bad_var) = mean_var(bad);
    let (n_good, n_bad) = (good.len() as f64, bad.len() as f64);
    let pooled =
        (((n_good - 1.0) * good_var + (n_bad - 1.0) * bad_var) / (n_good + n_bad - 2.0)).sqrt();
    let scale = good_mean.abs().max(bad_mean.abs());
    let step_pct = (bad_mean - good_mean).abs() / scale * 100.0;
    let cv_pct = pooled / scale * 100.0;
    let usable = step_pct.is_finite() && step_pct > 0.0 && cv_pct.is_finite() && cv_pct < 100.0;
    usable.then_some((step_pct, cv_pct))
}

fn check(input: &PlanInput) -> Result<(), PlanError> {
    let invalid = |text: &str| Err(PlanError::Invalid(text.to_string()));
    if input.n_commits == 0 {
        return invalid("a range has at least one commit");
    }
    if input.n_commits > MAX_COMMITS {
        return Err(PlanError::Invalid(format!(
            "a plan simulates at most {MAX_COMMITS} commits"
        )));
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
    if input.jobs == 0 {
        return invalid("at least one job");
    }
    if input.min_trials == 0 || input.max_trials < input.min_trials {
        return invalid("trials: at least one, and max_trials >= min_trials");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_ranges_take_fewer_trials_and_the_longest_the_fewest() {
        assert_eq!(trials_for(16), TRIALS);
        assert_eq!(trials_for(2048), TRIALS);
        assert_eq!(trials_for(4096), 150);
        assert_eq!(trials_for(MAX_COMMITS), FEWEST_TRIALS);
        assert_eq!(MAX_COMMITS, 20_480);
        // Every plan simulates at most about the work of the longest.
        for n_commits in [1, 100, 2048, 2049, 5000, 15_000, MAX_COMMITS] {
            assert!(trials_for(n_commits) as usize * n_commits <= WORK);
        }
    }

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
        assert!(estimate.max_measurements >= estimate.p95_measurements);
        assert!(f64::from(estimate.max_measurements) >= estimate.mean_measurements);
        assert!(estimate.correct_pct >= 90.0, "{estimate:?}");
        assert_eq!(estimate.refused_pct, 0.0, "{estimate:?}");
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
    fn four_jobs_take_fewer_rounds_than_one_and_time_follows_the_rounds() {
        let one = estimate(&quick(128, 5.0, 2.0)).unwrap();
        let four = estimate(&PlanInput {
            jobs: 4,
            ..quick(128, 5.0, 2.0)
        })
        .unwrap();
        assert_eq!((one.jobs, four.jobs), (1, 4));
        assert!(
            (one.mean_rounds - one.mean_measurements).abs() < 1e-9,
            "{one:?}"
        );
        assert!(four.mean_rounds < 0.5 * one.mean_rounds, "{one:?} {four:?}");
        assert!(four.mean_measurements >= one.mean_measurements * 0.9);
        assert!((four.mean_seconds - four.mean_rounds * 3.0).abs() < 1e-9);
        assert!((four.p95_seconds - f64::from(four.p95_rounds) * 3.0).abs() < 1e-9);
    }

    #[test]
    fn the_ends_give_step_and_noise_of_the_larger_end() {
        // Means 100 and 90, each with a standard deviation of 2.
        let (step_pct, cv_pct) = from_ends(&[98.0, 100.0, 102.0], &[88.0, 90.0, 92.0]).unwrap();
        assert!((step_pct - 10.0).abs() < 1e-12, "{step_pct}");
        assert!((cv_pct - 2.0).abs() < 1e-12, "{cv_pct}");
        // A latency that triples stays below 100%: 200 of 300.
        let (step_pct, cv_pct) = from_ends(&[99.0, 101.0], &[297.0, 303.0]).unwrap();
        assert!((step_pct - 200.0 / 3.0).abs() < 1e-9, "{step_pct}");
        assert!(cv_pct > 0.0);
        assert_eq!(from_ends(&[1.0], &[2.0, 3.0]), None);
        assert_eq!(from_ends(&[1.0, 1.0], &[1.0, 1.0]), None);
    }

    #[test]
    fn the_rest_after_the_ends_is_part_of_the_whole() {
        let estimate = estimate(&quick(64, 5.0, 2.0)).unwrap();
        assert!(estimate.mean_after_ends > 0.0);
        assert!(estimate.mean_after_ends < estimate.mean_measurements);
        assert!(estimate.p95_after_ends <= estimate.p95_measurements);
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
