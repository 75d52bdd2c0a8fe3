//! Detection at the head over many simulated branches: how soon a step
//! is confirmed (commits landed after it), how often a range without a
//! step is confirmed (false alarms per 1000 commits), and how many
//! measurements each commit costs, at each noise level given.
//!
//! Usage: track STEP_PCT CV_PCT[,CV_PCT...] SHAPE TRIALS SEED
//! [--min-effect PCT] [--sigmas Z] [--suspect-points N] [--flat-commits N]
//!
//! Each trial follows two branches: one whose metric drops by STEP_PCT
//! at a commit 40 to 59 commits after the first of 20 measured before
//! tracking starts, followed until 30 commits after the step; and one
//! without a step, of --flat-commits commits (default 1000), for the
//! false alarms and the cost of a quiet branch. Run it through
//! scripts/bench-track-sim.sh.

use bisect::head::HeadConfig;
use bisect::head::sim::{Branch, TrackTally, track};
use bisect::sim::{NoiseShape, Rng};
use run_record::record::Direction;
use std::process::ExitCode;

struct Args {
    step_pct: f64,
    cvs_pct: Vec<f64>,
    shape: NoiseShape,
    n_trials: u32,
    seed: u64,
    config: HeadConfig,
    flat_commits: usize,
}

fn parse() -> Result<Args, String> {
    let mut positional = Vec::new();
    let mut config = HeadConfig::new(Direction::HigherIsBetter, 1.0);
    let mut flat_commits = 1000;
    let mut args = std::env::args().skip(1);
    let bad = |what: &str| format!("bad {what}");
    while let Some(arg) = args.next() {
        let mut value = |what: &str| args.next().ok_or_else(|| bad(what));
        match arg.as_str() {
            "--min-effect" => {
                config.min_effect_pct = value("--min-effect")?.parse().map_err(|_| bad("PCT"))?;
            }
            "--sigmas" => {
                config.suspect_sigmas = value("--sigmas")?.parse().map_err(|_| bad("Z"))?;
            }
            "--suspect-points" => {
                config.max_suspect_points =
                    value("--suspect-points")?.parse().map_err(|_| bad("N"))?;
            }
            "--flat-commits" => {
                flat_commits = value("--flat-commits")?.parse().map_err(|_| bad("N"))?;
            }
            _ => positional.push(arg),
        }
    }
    if positional.len() != 5 {
        return Err("usage: track STEP_PCT CV_PCT[,CV_PCT...] SHAPE TRIALS SEED [OPTIONS]".into());
    }
    Ok(Args {
        step_pct: positional[0].parse().map_err(|_| bad("step"))?,
        cvs_pct: positional[1]
            .split(',')
            .map(|cv| cv.parse::<f64>().map_err(|_| bad("cv")))
            .collect::<Result<_, _>>()?,
        shape: positional[2]
            .parse()
            .map_err(|err: bisect::sim::UnknownShape| err.to_string())?,
        n_trials: positional[3].parse().map_err(|_| bad("trial count"))?,
        seed: positional[4].parse().map_err(|_| bad("seed"))?,
        config,
        flat_commits,
    })
}

/// The tallies of the branches with a step and of those without, at
/// noise `cv_pct`.
fn simulate(args: &Args, cv_pct: f64) -> (TrackTally, TrackTally) {
    let mut steps = TrackTally::default();
    let mut flat = TrackTally::default();
    let mut rng = Rng::new(args.seed);
    for trial_idx in 0..args.n_trials {
        let step_at = 40 + (trial_idx as usize * 7) % 20;
        let stepped = Branch {
            n_commits: step_at + 30,
            step_at: Some(step_at),
            step_pct: args.step_pct,
            cv_pct,
            shape: args.shape,
            n_before: 20,
        };
        steps.add(&stepped, &track(&stepped, &args.config, &mut rng));
        let quiet = Branch {
            n_commits: args.flat_commits,
            step_at: None,
            step_pct: 0.0,
            ..stepped
        };
        flat.add(&quiet, &track(&quiet, &args.config, &mut rng));
    }
    (steps, flat)
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("track: {message}");
            return ExitCode::from(2);
        }
    };
    println!(
        "step={}% shape={:?} trials={} seed={} min_effect={}% sigmas={} suspect_points={} \
         flat_commits={}",
        args.step_pct,
        args.shape,
        args.n_trials,
        args.seed,
        args.config.min_effect_pct,
        args.config.suspect_sigmas,
        args.config.max_suspect_points,
        args.flat_commits
    );
    println!(
        "{:>6} {:>7} {:>7} {:>7} {:>7} {:>7} {:>11} {:>10} {:>11} {:>10}",
        "noise",
        "at_K_%",
        "K+1_%",
        "K+2_%",
        "missed",
        "delay",
        "meas/commit",
        "false/1000",
        "quiet_meas",
        "susp/1000"
    );
    for &cv_pct in &args.cvs_pct {
        let (steps, flat) = simulate(&args, cv_pct);
        println!(
            "{:>5}% {:>7.1} {:>7.1} {:>7.1} {:>6.1}% {:>7.2} {:>11.2} {:>10.2} {:>11.3} {:>10.1}",
            cv_pct,
            steps.within_pct(0),
            steps.within_pct(1),
            steps.within_pct(2),
            f64::from(steps.n_missed) * 100.0 / f64::from(steps.n_branches.max(1)),
            steps.mean_delay(),
            steps.measurements_per_commit(),
            flat.false_alarms_per_1000(),
            flat.measurements_per_commit(),
            flat.suspicions_per_1000()
        );
    }
    ExitCode::SUCCESS
}
