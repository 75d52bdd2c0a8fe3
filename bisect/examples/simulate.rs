//! Bisects many simulated noisy histories with the engine's two methods
//! (sequential and posterior) and with a naive fixed-repeat bisection,
//! and prints accuracy and cost: how often the right commit was named,
//! the mean measurements, how often the ends were refused, and the
//! median repeats of each end before the steps or the refusal (a step
//! of 0 simulates ends that do not differ).
//!
//! Usage: simulate [--min-effect PCT] [--jobs K,...] N_COMMITS STEP_PCT CV_PCT SHAPE TRIALS
//! SEED [REPEATS,...] [MAX_REPEATS]. SHAPE is normal, heavy, outliers,
//! bimodal or drift; REPEATS are the naive method's fixed repeat counts
//! (default 3,10); MAX_REPEATS is the both methods' cap per commit. With
//! `--jobs`, the posterior method alone is run with each K measurements
//! at once, and the rounds (wall-clock in units of one measurement) are
//! printed beside the measurements. With `--min-effect`, the ends'
//! futility bound is built against that effect, as `bisect start
//! --min-effect` builds it. Run it through
//! scripts/bench-bisect-sim.sh.

use bisect::decision::{DecisionConfig, FutilityAlternative, Method};
use bisect::sim::{self, History, NoiseShape, Rng, Tally};
use std::process::ExitCode;

struct Args {
    n_commits: usize,
    step_pct: f64,
    cv_pct: f64,
    shape: NoiseShape,
    n_trials: u32,
    seed: u64,
    naive_repeats: Vec<u32>,
    max_repeats: Option<u32>,
    jobs: Option<Vec<usize>>,
    min_effect_pct: Option<f64>,
}

fn parse() -> Result<Args, String> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let mut jobs = None;
    let mut min_effect_pct = None;
    // Leading options, in either order, before the positional arguments.
    while let Some(option) = args.first().filter(|arg| arg.starts_with("--")).cloned() {
        let value = args.get(1).cloned().unwrap_or_default();
        args.drain(..2.min(args.len()));
        match option.as_str() {
            "--jobs" => {
                let list = value
                    .split(',')
                    .map(|k| k.parse::<usize>().ok().filter(|&k| k >= 1))
                    .collect::<Option<Vec<_>>>()
                    .ok_or("bad --jobs list")?;
                jobs = Some(list);
            }
            "--min-effect" => {
                let pct = value
                    .parse::<f64>()
                    .ok()
                    .filter(|pct| pct.is_finite() && *pct >= 0.0)
                    .ok_or("bad --min-effect percentage")?;
                min_effect_pct = Some(pct);
            }
            _ => return Err(format!("unknown option {option}")),
        }
    }
    if args.len() < 6 {
        return Err(
            "usage: simulate N_COMMITS STEP_PCT CV_PCT SHAPE TRIALS SEED [REPEATS,...]".into(),
        );
    }
    let bad = |what: &str| format!("bad {what}");
    let naive_repeats = match args.get(6) {
        Some(list) => list
            .split(',')
            .map(|r| r.parse::<u32>().map_err(|_| bad("naive repeats")))
            .collect::<Result<Vec<_>, _>>()?,
        None => vec![3, 10],
    };
    let n_commits: usize = args[0].parse().map_err(|_| bad("commit count"))?;
    if n_commits < 1 {
        return Err(bad("commit count"));
    }
    Ok(Args {
        n_commits,
        step_pct: args[1].parse().map_err(|_| bad("step"))?,
        cv_pct: args[2].parse().map_err(|_| bad("cv"))?,
        shape: args[3]
            .parse()
            .map_err(|err: sim::UnknownShape| err.to_string())?,
        n_trials: args[4].parse().map_err(|_| bad("trial count"))?,
        seed: args[5].parse().map_err(|_| bad("seed"))?,
        naive_repeats,
        max_repeats: match args.get(7) {
            Some(cap) => Some(cap.parse().map_err(|_| bad("max repeats"))?),
            None => None,
        },
        jobs,
        min_effect_pct,
    })
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("simulate: {message}");
            return ExitCode::from(2);
        }
    };
    let mut decision = DecisionConfig::default();
    if let Some(max_repeats) = args.max_repeats {
        decision.max_repeats = max_repeats;
    }
    if let Some(min_effect_pct) = args.min_effect_pct {
        // As `bisect start --min-effect`: the effect given is a promise.
        decision.min_effect_pct = min_effect_pct;
        decision.futility_alternative = FutilityAlternative::MinEffect;
    }
    if let Some(jobs) = &args.jobs {
        return simulate_jobs(&args, &decision, jobs);
    }
    let methods = [Method::Sequential, Method::Posterior];
    let mut method_tallies = [Tally::default(); 2];
    let mut method_end_repeats: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
    let mut naive_tallies = vec![Tally::default(); args.naive_repeats.len()];
    let mut history_rng = Rng::new(args.seed);
    for trial_idx in 0..args.n_trials {
        let history = History::random(
            args.n_commits,
            args.step_pct,
            args.cv_pct,
            args.shape,
            &mut history_rng,
        );
        for ((tally, end_repeats), &method) in method_tallies
            .iter_mut()
            .zip(method_end_repeats.iter_mut())
            .zip(&methods)
        {
            let mut rng = Rng::new(args.seed ^ (u64::from(trial_idx) << 32) ^ 0x5eed);
            let decision = DecisionConfig {
                method,
                ..decision.clone()
            };
            match sim::engine_bisect(&history, &decision, &mut rng) {
                Ok(trial) => {
                    tally.add(trial);
                    end_repeats.push(trial.n_end_repeats);
                }
                Err(err) => {
                    eprintln!("simulate: trial {trial_idx}: {err}");
                    return ExitCode::FAILURE;
                }
            }
        }
        for (tally, &repeats) in naive_tallies.iter_mut().zip(&args.naive_repeats) {
            let mut rng = Rng::new(args.seed ^ (u64::from(trial_idx) << 32) ^ 0x4a1e);
            tally.add(sim::naive_bisect(&history, repeats, &mut rng));
        }
    }
    println!(
        "commits={} step={}% cv={}% shape={:?} trials={} seed={} max_repeats={}{}",
        args.n_commits,
        args.step_pct,
        args.cv_pct,
        args.shape,
        args.n_trials,
        args.seed,
        decision.max_repeats,
        min_effect_words(&decision)
    );
    println!(
        "{:<24} {:>10} {:>14} {:>10} {:>10}",
        "method", "correct_%", "measurements", "refused_%", "end_median"
    );
    for ((tally, end_repeats), name) in method_tallies
        .iter()
        .zip(&method_end_repeats)
        .zip(["sequential", "posterior"])
    {
        println!(
            "{:<24} {:>10.1} {:>14.1} {:>10.1} {:>10.1}   (+{} confirmation; {} ended in a range)",
            name,
            tally.accuracy_pct(),
            tally.mean_measurements(),
            tally.refused_pct(),
            sim::median(end_repeats).unwrap_or(0.0),
            2 * decision.confirm_repeats,
            tally.n_ranges
        );
    }
    for (tally, repeats) in naive_tallies.iter().zip(&args.naive_repeats) {
        println!(
            "{:<24} {:>10.1} {:>14.1}",
            format!("naive r={repeats}"),
            tally.accuracy_pct(),
            tally.mean_measurements()
        );
    }
    ExitCode::SUCCESS
}

/// The posterior method with each K of `jobs` measurements at once, over
/// the same histories and noise.
fn simulate_jobs(args: &Args, decision: &DecisionConfig, jobs: &[usize]) -> ExitCode {
    let mut tallies = vec![Tally::default(); jobs.len()];
    let mut history_rng = Rng::new(args.seed);
    for trial_idx in 0..args.n_trials {
        let history = History::random(
            args.n_commits,
            args.step_pct,
            args.cv_pct,
            args.shape,
            &mut history_rng,
        );
        for (tally, &n_jobs) in tallies.iter_mut().zip(jobs) {
            let mut rng = Rng::new(args.seed ^ (u64::from(trial_idx) << 32) ^ 0x5eed);
            match sim::engine_bisect_jobs(&history, decision, n_jobs, &mut rng) {
                Ok((trial, _)) => tally.add(trial),
                Err(err) => {
                    eprintln!("simulate: trial {trial_idx}, {n_jobs} jobs: {err}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    println!(
        "commits={} step={}% cv={}% shape={:?} trials={} seed={} max_repeats={}{} method=posterior",
        args.n_commits,
        args.step_pct,
        args.cv_pct,
        args.shape,
        args.n_trials,
        args.seed,
        decision.max_repeats,
        min_effect_words(decision)
    );
    println!(
        "{:>4} {:>9} {:>9} {:>9} {:>12} {:>6} {:>8} {:>11} {:>8}",
        "jobs",
        "correct_%",
        "of_bisect",
        "refused_%",
        "measurements",
        "ends",
        "rounds",
        "rounds/m1_%",
        "meas/m1"
    );
    let one = tallies
        .iter()
        .zip(jobs)
        .find(|(_, n_jobs)| **n_jobs == 1)
        .map(|(tally, _)| tally.mean_measurements());
    for (tally, n_jobs) in tallies.iter().zip(jobs) {
        let (of_rounds, of_measurements) = match one {
            Some(m1) if m1 > 0.0 => (
                format!("{:.1}", 100.0 * tally.mean_rounds() / m1),
                format!("{:.2}", tally.mean_measurements() / m1),
            ),
            _ => ("-".to_string(), "-".to_string()),
        };
        println!(
            "{:>4} {:>9.1} {:>9.1} {:>9.1} {:>12.1} {:>6.1} {:>8.1} {:>11} {:>8}",
            n_jobs,
            tally.accuracy_pct(),
            tally.accuracy_of_bisected_pct(),
            tally.refused_pct(),
            tally.mean_measurements(),
            tally.mean_ends(),
            tally.mean_rounds(),
            of_rounds,
            of_measurements
        );
    }
    ExitCode::SUCCESS
}

/// The header's word on the minimum effect, when one is promised.
fn min_effect_words(decision: &DecisionConfig) -> String {
    match decision.futility_alternative {
        FutilityAlternative::MinEffect => format!(" min_effect={}%", decision.min_effect_pct),
        FutilityAlternative::NoiseScale => String::new(),
    }
}
