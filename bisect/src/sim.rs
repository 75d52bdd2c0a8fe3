//! Simulated noisy histories, to measure how often the bisection finds the
//! right commit and what it costs, without git or a network.
//!
//! A history is a straight line of `n_commits` commits after a good one;
//! from commit `culprit_idx` on, the metric drops by `step_pct` percent.
//! Every repeat draws noise with coefficient of variation `cv_pct` from a
//! [`NoiseShape`]. The same histories (same seed) are bisected by the
//! engine and by [`naive_bisect`], a fixed-repeat threshold bisection,
//! for comparison.
//!
//! [`engine_bisect`] runs the engine's loop with one job;
//! [`engine_bisect_jobs`] with K measurements at once ([`SimSlots`]:
//! every repeat takes one unit of time), and counts the rounds, the
//! wall-clock in units of one measurement, beside the measurements.

use crate::config::BisectConfig;
use crate::decision::DecisionConfig;
use crate::error::EngineError;
use crate::graph::{CommitGraph, CommitInfo};
use crate::journal::{BoxError, NullJournal};
use crate::measurement::{Measurement, Measurer, OneSlot, Sample, SlotMeasurer};
use crate::parallel::{self, Ended};
use crate::progress::Phase;
use crate::report::{BisectResult, Outcome};
use crate::robust::mean_var;
use run_record::record::Direction;
use std::str::FromStr;

/// A small seeded generator: xoshiro256** (Blackman and Vigna, 2018),
/// seeded through splitmix64.
#[derive(Clone, Debug)]
pub struct Rng {
    state: [u64; 4],
}

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut splitmix = seed;
        let mut next = || {
            splitmix = splitmix.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = splitmix;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        Rng {
            state: [next(), next(), next(), next()],
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let result = self.state[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let shifted = self.state[1] << 17;
        self.state[2] ^= self.state[0];
        self.state[3] ^= self.state[1];
        self.state[1] ^= self.state[2];
        self.state[0] ^= self.state[3];
        self.state[2] ^= shifted;
        self.state[3] = self.state[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in [0, bound).
    pub fn below(&mut self, bound: usize) -> usize {
        ((self.uniform() * bound as f64) as usize).min(bound.saturating_sub(1))
    }

    /// Standard normal (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = 1.0 - self.uniform();
        let u2 = self.uniform();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// The distribution of the noise of one repeat.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoiseShape {
    /// Normal.
    Normal,
    /// Student's t with 3 degrees of freedom, scaled to the same standard
    /// deviation: heavy tails.
    HeavyTailed,
    /// Normal, except that 2% of repeats lose 10% to 40% of the value (a
    /// run disturbed by something else on the machine).
    Outliers,
    /// Two levels one noise scale either side of the value, a run landing
    /// on either at random (as CPU placement makes it on loopback), with a
    /// quarter of the noise scale of normal noise on top.
    Bimodal,
    /// Normal, on a machine whose every figure drifts down by 0.01% of the
    /// value per repeat taken (1% per hundred): slow drift across the
    /// bisection.
    Drift,
}

/// Drift of [`NoiseShape::Drift`] per repeat, as a fraction of the value.
pub const DRIFT_PER_REPEAT: f64 = 1e-4;

/// A noise shape name that is not known.
#[derive(Debug, thiserror::Error)]
#[error("unknown noise shape '{0}' (known: normal, heavy, outliers, bimodal, drift)")]
pub struct UnknownShape(pub String);

impl FromStr for NoiseShape {
    type Err = UnknownShape;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "normal" => Ok(NoiseShape::Normal),
            "heavy" | "heavy-tailed" => Ok(NoiseShape::HeavyTailed),
            "outliers" => Ok(NoiseShape::Outliers),
            "bimodal" => Ok(NoiseShape::Bimodal),
            "drift" => Ok(NoiseShape::Drift),
            _ => Err(UnknownShape(text.to_string())),
        }
    }
}

/// One simulated history.
#[derive(Clone, Debug)]
pub struct History {
    /// Commits in the range (the bad end is the last).
    pub n_commits: usize,
    /// Index of the first commit with the step.
    pub culprit_idx: usize,
    /// Metric of the old commits.
    pub old_value: f64,
    /// Size of the drop, percent.
    pub step_pct: f64,
    /// Coefficient of variation of the noise, percent.
    pub cv_pct: f64,
    /// Shape of the noise.
    pub shape: NoiseShape,
}

impl History {
    /// A history with the culprit drawn uniformly from `rng`.
    pub fn random(
        n_commits: usize,
        step_pct: f64,
        cv_pct: f64,
        shape: NoiseShape,
        rng: &mut Rng,
    ) -> History {
        History {
            n_commits,
            culprit_idx: rng.below(n_commits),
            old_value: 1e9,
            step_pct,
            cv_pct,
            shape,
        }
    }

    /// The true value of commit `node_idx` (`None`: the good end).
    pub fn true_value(&self, node_idx: Option<usize>) -> f64 {
        match node_idx {
            Some(node_idx) if node_idx >= self.culprit_idx => {
                self.old_value * (1.0 - self.step_pct / 100.0)
            }
            _ => self.old_value,
        }
    }

    /// One noisy repeat of commit `node_idx`, the first of a bisection.
    pub fn draw(&self, node_idx: Option<usize>, rng: &mut Rng) -> f64 {
        self.draw_at(node_idx, 0, rng)
    }

    /// One noisy repeat of commit `node_idx`, after `n_before` others.
    pub fn draw_at(&self, node_idx: Option<usize>, n_before: u32, rng: &mut Rng) -> f64 {
        let value = self.true_value(node_idx);
        let sigma = value * self.cv_pct / 100.0;
        match self.shape {
            NoiseShape::Normal => value + sigma * rng.normal(),
            NoiseShape::HeavyTailed => {
                let chi2: f64 = (0..3).map(|_| rng.normal().powi(2)).sum();
                // t(3) has variance 3; scale to unit variance.
                let t3 = rng.normal() / (chi2 / 3.0).sqrt() / 3f64.sqrt();
                value + sigma * t3
            }
            NoiseShape::Outliers => {
                let base = value + sigma * rng.normal();
                if rng.uniform() < 0.02 {
                    base * (1.0 - 0.1 - 0.3 * rng.uniform())
                } else {
                    base
                }
            }
            NoiseShape::Bimodal => {
                let level = if rng.uniform() < 0.5 { -1.0 } else { 1.0 };
                value + sigma * level + sigma / 4.0 * rng.normal()
            }
            NoiseShape::Drift => {
                value * (1.0 - DRIFT_PER_REPEAT * f64::from(n_before)) + sigma * rng.normal()
            }
        }
    }
}

/// A [`Measurer`] over a simulated history; commits are named as in
/// [`CommitGraph::linear`].
pub struct SimMeasurer<'a> {
    /// The history.
    pub history: &'a History,
    /// The noise source.
    pub rng: &'a mut Rng,
    /// Repeats taken.
    pub n_measurements: u32,
}

impl Measurer for SimMeasurer<'_> {
    fn measure(&mut self, commit: &CommitInfo) -> Result<Measurement, BoxError> {
        let node_idx = commit
            .id
            .strip_prefix('c')
            .and_then(|n| n.parse::<usize>().ok());
        let n_before = self.n_measurements;
        self.n_measurements += 1;
        Ok(Measurement::Sample(Sample {
            value: self.history.draw_at(node_idx, n_before, self.rng),
            run_id: None,
        }))
    }
}

/// The result of bisecting one history.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TrialResult {
    /// The right commit was named.
    pub correct: bool,
    /// Repeats taken to name it (ends included, confirmation excluded).
    pub n_measurements: u32,
    /// Repeats of the confirmation pass.
    pub n_confirm: u32,
    /// Repeats of the ends, before the steps (included in
    /// `n_measurements`).
    pub n_ends: u32,
    /// The answer was a range (the culprit hidden among unknown commits).
    pub ended_in_range: bool,
    /// The bisection was refused: the ends were found not to differ.
    pub refused: bool,
    /// Repeats of each end before the bisection was refused or the steps
    /// began (the more of the two).
    pub n_end_repeats: u32,
    /// Wall-clock to name the culprit (or to end), in units of one
    /// measurement, the confirmation excluded: `n_measurements` with one
    /// job.
    pub rounds: f64,
    /// Wall-clock to the end, the confirmation included.
    pub rounds_to_end: f64,
}

/// Bisects `history` with the engine: its loop, fed by a [`SimMeasurer`],
/// which never asks for the estimate of the rest.
pub fn engine_bisect(
    history: &History,
    decision: &DecisionConfig,
    rng: &mut Rng,
) -> Result<TrialResult, EngineError> {
    let graph = CommitGraph::linear(history.n_commits);
    let config = BisectConfig {
        metric: "throughput_bps".to_string(),
        direction: Direction::HigherIsBetter,
        decision: decision.clone(),
    };
    let mut measurer = SimMeasurer {
        history,
        rng,
        n_measurements: 0,
    };
    let mut n_ends = 0;
    let ended = parallel::drive(
        &graph,
        &config,
        1,
        Some(&mut OneSlot::new(&mut measurer)),
        &mut NullJournal,
        &mut |progress| n_ends += u32::from(progress.phase == Phase::Ends),
        None,
        Some(Vec::new()),
    )?;
    let Ended::Outcome(outcome) = ended else {
        unreachable!("a live drive ends with an outcome");
    };
    let n_total = measurer.n_measurements;
    let n_confirm = 2 * decision.confirm_repeats;
    Ok(match outcome {
        Outcome::Finished(bisect_report) => {
            let correct = match &bisect_report.result {
                BisectResult::FirstBad { commit, .. } => {
                    commit.id == format!("c{}", history.culprit_idx)
                }
                BisectResult::Range { .. } => false,
            };
            TrialResult {
                correct,
                ended_in_range: matches!(bisect_report.result, BisectResult::Range { .. }),
                n_measurements: n_total.saturating_sub(n_confirm),
                n_confirm: n_confirm.min(n_total),
                n_ends,
                refused: false,
                n_end_repeats: n_ends.div_ceil(2),
                rounds: f64::from(n_total.saturating_sub(n_confirm)),
                rounds_to_end: f64::from(n_total),
            }
        }
        Outcome::Refused(_) => TrialResult {
            correct: false,
            n_measurements: n_total,
            n_confirm: 0,
            n_ends,
            ended_in_range: false,
            refused: true,
            n_end_repeats: n_ends.div_ceil(2),
            rounds: f64::from(n_total),
            rounds_to_end: f64::from(n_total),
        },
    })
}

/// A [`SlotMeasurer`] over a simulated history: each repeat's value is
/// drawn when it starts (so that one job draws as [`SimMeasurer`] does)
/// and it ends one unit of time later; of repeats that end together, the
/// lower slot's comes back first.
pub struct SimSlots<'a> {
    /// The history.
    pub history: &'a History,
    /// The noise source.
    pub rng: &'a mut Rng,
    /// The clock, in units of one measurement.
    pub clock: f64,
    /// Every repeat started: its commit and when it started, in order.
    pub started: Vec<(String, f64)>,
    /// Repeats in flight: when each ends, its slot, its value.
    running: Vec<(f64, usize, f64)>,
}

impl<'a> SimSlots<'a> {
    /// Slots over `history`, at time 0, with nothing running.
    pub fn new(history: &'a History, rng: &'a mut Rng) -> SimSlots<'a> {
        SimSlots {
            history,
            rng,
            clock: 0.0,
            started: Vec::new(),
            running: Vec::new(),
        }
    }
}

impl SlotMeasurer for SimSlots<'_> {
    fn start(&mut self, slot: usize, commit: &CommitInfo) -> Result<(), BoxError> {
        let node_idx = commit
            .id
            .strip_prefix('c')
            .and_then(|n| n.parse::<usize>().ok());
        let n_before = self.started.len() as u32;
        let value = self.history.draw_at(node_idx, n_before, self.rng);
        self.started.push((commit.id.clone(), self.clock));
        self.running.push((self.clock + 1.0, slot, value));
        Ok(())
    }

    fn finished(&mut self) -> Result<(usize, Result<Measurement, BoxError>), BoxError> {
        let first = self
            .running
            .iter()
            .enumerate()
            .min_by(|(_, a), (_, b)| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)))
            .map(|(idx, _)| idx)
            .ok_or("no simulated repeat is running")?;
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

/// Bisects `history` with `jobs` measurements at once, on the engine's
/// loop; with one job, the same choices as [`engine_bisect`]
/// (the same repeats in the same order). Also returns the commits
/// started, in order.
pub fn engine_bisect_jobs(
    history: &History,
    decision: &DecisionConfig,
    jobs: usize,
    rng: &mut Rng,
) -> Result<(TrialResult, Vec<String>), EngineError> {
    let graph = CommitGraph::linear(history.n_commits);
    let config = BisectConfig {
        metric: "throughput_bps".to_string(),
        direction: Direction::HigherIsBetter,
        decision: decision.clone(),
    };
    let mut slots = SimSlots::new(history, rng);
    let mut phases: Vec<Phase> = Vec::new();
    let ended = parallel::drive(
        &graph,
        &config,
        jobs,
        Some(&mut slots),
        &mut NullJournal,
        &mut |progress| phases.push(progress.phase),
        None,
        Some(Vec::new()),
    )?;
    let Ended::Outcome(outcome) = ended else {
        unreachable!("a live drive ends with an outcome");
    };
    let count = |phase: Phase| phases.iter().filter(|&&p| p == phase).count() as u32;
    let n_ends = count(Phase::Ends);
    let n_confirm = count(Phase::Confirm);
    let n_measurements = phases.len() as u32 - n_confirm;
    // The culprit is named when the first repeat of the confirmation
    // starts.
    let rounds = phases
        .iter()
        .zip(&slots.started)
        .find(|(phase, _)| **phase == Phase::Confirm)
        .map_or(slots.clock, |(_, (_, at))| *at);
    let started = slots.started.iter().map(|(id, _)| id.clone()).collect();
    let (correct, ended_in_range, refused) = match &outcome {
        Outcome::Finished(bisect_report) => match &bisect_report.result {
            BisectResult::FirstBad { commit, .. } => (
                commit.id == format!("c{}", history.culprit_idx),
                false,
                false,
            ),
            BisectResult::Range { .. } => (false, true, false),
        },
        Outcome::Refused(_) => (false, false, true),
    };
    Ok((
        TrialResult {
            correct,
            n_measurements,
            n_confirm,
            n_ends,
            ended_in_range,
            refused,
            n_end_repeats: n_ends.div_ceil(2),
            rounds,
            rounds_to_end: slots.clock,
        },
        started,
    ))
}

/// Bisects `history` the naive way: `repeats` repeats of each end and of
/// each commit tested, a commit is bad when its mean is nearer the bad
/// end's mean than the good end's.
pub fn naive_bisect(history: &History, repeats: u32, rng: &mut Rng) -> TrialResult {
    let mut n_measurements = 0;
    let mut mean_of = |node_idx: Option<usize>, rng: &mut Rng| {
        n_measurements += repeats;
        let samples: Vec<f64> = (0..repeats).map(|_| history.draw(node_idx, rng)).collect();
        mean_var(&samples).0
    };
    let good_mean = mean_of(None, rng);
    let bad_mean = mean_of(Some(history.n_commits - 1), rng);
    let midpoint = (good_mean + bad_mean) / 2.0;
    let bad_is_lower = bad_mean < good_mean;
    // The culprit lies in (low, high]: low is known good (-1: the good
    // end), high known bad.
    let mut low: isize = -1;
    let mut high = history.n_commits as isize - 1;
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        let mean = mean_of(Some(mid as usize), rng);
        if (mean < midpoint) == bad_is_lower {
            high = mid;
        } else {
            low = mid;
        }
    }
    TrialResult {
        correct: high as usize == history.culprit_idx,
        n_confirm: 0,
        n_ends: 2 * repeats,
        n_measurements,
        ended_in_range: false,
        refused: false,
        n_end_repeats: repeats,
        rounds: f64::from(n_measurements),
        rounds_to_end: f64::from(n_measurements),
    }
}

/// Accuracy and cost over many histories.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    /// Histories bisected.
    pub n_trials: u32,
    /// Right answers.
    pub n_correct: u32,
    /// Repeats in all (confirmation excluded).
    pub n_measurements: u64,
    /// Confirmation repeats in all.
    pub n_confirm: u64,
    /// Bisections that ended in a range.
    pub n_ranges: u32,
    /// Bisections refused at their ends.
    pub n_refused: u32,
    /// Rounds in all (wall-clock in units of one measurement).
    pub rounds: f64,
    /// Repeats of the ends in all, before the steps or the refusal.
    pub n_ends: u64,
}

impl Tally {
    /// Adds one trial.
    pub fn add(&mut self, trial: TrialResult) {
        self.n_trials += 1;
        self.n_correct += u32::from(trial.correct);
        self.n_measurements += u64::from(trial.n_measurements);
        self.n_confirm += u64::from(trial.n_confirm);
        self.n_ranges += u32::from(trial.ended_in_range);
        self.n_refused += u32::from(trial.refused);
        self.rounds += trial.rounds;
        self.n_ends += u64::from(trial.n_ends);
    }

    /// Percent correct.
    pub fn accuracy_pct(&self) -> f64 {
        100.0 * f64::from(self.n_correct) / f64::from(self.n_trials.max(1))
    }

    /// Percent refused at their ends.
    pub fn refused_pct(&self) -> f64 {
        100.0 * f64::from(self.n_refused) / f64::from(self.n_trials.max(1))
    }

    /// Mean repeats per bisection (confirmation excluded).
    pub fn mean_measurements(&self) -> f64 {
        self.n_measurements as f64 / f64::from(self.n_trials.max(1))
    }

    /// Percent correct of the bisections not refused at their ends.
    pub fn accuracy_of_bisected_pct(&self) -> f64 {
        let bisected = self.n_trials - self.n_refused;
        100.0 * f64::from(self.n_correct) / f64::from(bisected.max(1))
    }

    /// Mean repeats of the ends per bisection.
    pub fn mean_ends(&self) -> f64 {
        self.n_ends as f64 / f64::from(self.n_trials.max(1))
    }

    /// Mean rounds per bisection (confirmation excluded).
    pub fn mean_rounds(&self) -> f64 {
        self.rounds / f64::from(self.n_trials.max(1))
    }
}

/// The median of `values` (the mean of the middle two of an even
/// count); `None` when there are none.
pub fn median(values: &[u32]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_unstable();
    let n_values = sorted.len();
    match n_values {
        0 => None,
        _ if n_values % 2 == 1 => Some(f64::from(sorted[n_values / 2])),
        _ => Some((f64::from(sorted[n_values / 2 - 1]) + f64::from(sorted[n_values / 2])) / 2.0),
    }
}
