//! Bisects many simulated noisy histories with the engine's two methods
//! (sequential and posterior) and with a naive fixed-repeat bisection,
//! and prints accuracy and cost: how often the right commit was named,
//! the mean measurements, how often the ends were refused, and the
//! median repeats of each end before the steps or the refusal (a step
//! of 0 simulates ends that do not differ).
//!
//! Usage: simulate N_COMMITS STEP_PCT CV_PCT SHAPE TRIALS SEED [REPEATS,...]
//! [MAX_REPEATS]. SHAPE is normal, heavy, outliers, bimodal or drift; REPEATS are the
//! naive method's fixed repeat counts (default 3,10); MAX_REPEATS is the
//! both methods' cap per commit. Run it through
//! scripts/bench-bisect-sim.sh.

use bisect::decision::{DecisionConfig, Method};
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
}

fn parse() -> Result<Args, String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
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
        "commits={} step={}% cv={}% shape={:?} trials={} seed={} max_repeats={}",
        args.n_commits,
        args.step_pct,
        args.cv_pct,
        args.shape,
        args.n_trials,
        args.seed,
        decision.max_repeats
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
