//! Detection at the head: after each new point of a tracked branch (a
//! commit measured), is the newest commit on another level than the
//! commits before it? A pure function of the points, so that a tracker
//! that restarts, or several that read one archive, reach the same
//! answer, and so that it runs over thousands of simulated histories
//! ([`sim`]).
//!
//! # Suspect
//!
//! The points are the measured commits in the branch's order, oldest
//! first, each with its samples; the caller gives those since the last
//! level change it knows of (a regression found, or fixed). For each of
//! the last [`HeadConfig::max_suspect_points`] points `j` as the first on
//! a new level, the samples of `j` up to the head are compared with
//! those of the [`HeadConfig::baseline_points`] points before `j`: with
//! `sigma` the noise of one sample in the baseline (its robust standard
//! deviation, [`pooled_scale`] of the baseline as one group, so that the
//! scatter from commit to commit counts as noise), the Huber means of
//! both sides ([`huber_location`]) and `n` samples on each,
//!
//! ```text
//! z = (baseline - suspect) / (sigma * sqrt(1/n_baseline + 1/n_suspect))
//! ```
//!
//! signed so that a change for the worse in the metric's direction is
//! positive. The head is suspected when the largest `z` reaches
//! [`HeadConfig::suspect_sigmas`] and its change is at least half the
//! minimum effect. This is a one-sided z-test of the newest points
//! against a window, as the change point's t-test of the history
//! ([`run_record::stats::change_point`]) is for a split in the middle;
//! at the head, where the newest side has one or two points, a
//! window's mean and scale are what can be known.
//!
//! # Confirm
//!
//! A suspicion is not waited on: the head and the last point before the
//! suspected change are measured again, as bisect measures its ends
//! ([`compare_ends`]), on their repeats only (the first sample of each
//! point, measured as its commit landed, is what the suspicion was
//! chosen on, and would weigh for it): each to the ends' first repeats, then more only
//! while their difference is neither clear nor ruled out; a clear
//! difference for the worse of at least the minimum effect confirms the
//! regression, a refusal (the interval inside the minimum effect, the
//! futility bound, the cap) or a difference for the better dismisses the
//! suspicion. The confirmed range is the last good point to the head:
//! both were just measured to differ, whatever the points between them.
//!
//! The thresholds were chosen in simulation
//! (`scripts/bench-track-sim.sh`, [`sim`]); docs/benchmarks.md has the
//! figures.

pub mod sim;

use crate::decision::{DecisionConfig, Method};
use crate::ends::{Difference, EndsDecision, EndsWait, RefusalReason, compare_ends};
use crate::robust::{huber_location, pooled_scale};
use run_record::record::Direction;
use serde::{Deserialize, Serialize};

/// The options of detection at the head.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeadConfig {
    /// Which way is better.
    pub direction: Direction,
    /// Smallest change worth a bisection, percent of the level before.
    pub min_effect_pct: f64,
    /// The head is suspected at this many standard errors for the worse.
    pub suspect_sigmas: f64,
    /// Most points of the window the newest are compared with.
    pub baseline_points: usize,
    /// Fewest samples in that window before anything is suspected.
    pub min_baseline_samples: usize,
    /// Most points at the head that may be on a new level together.
    pub max_suspect_points: usize,
    /// Fewest repeats of each of the two commits a confirmation compares
    /// (bisect's `--end-repeats`).
    pub confirm_repeats: u32,
    /// Most repeats of each: a comparison still unclear there dismisses
    /// the suspicion.
    pub max_confirm_repeats: u32,
}

/// The defaults, as chosen in simulation.
pub const SUSPECT_SIGMAS: f64 = 2.0;
/// The window's points by default.
pub const BASELINE_POINTS: usize = 20;
/// The window's fewest samples by default.
pub const MIN_BASELINE_SAMPLES: usize = 5;
/// The points at the head by default.
pub const MAX_SUSPECT_POINTS: usize = 5;

impl HeadConfig {
    /// The defaults for `direction` and `min_effect_pct`: bisect's ends
    /// for the confirmation (5 repeats first, at most 30).
    pub fn new(direction: Direction, min_effect_pct: f64) -> HeadConfig {
        HeadConfig {
            direction,
            min_effect_pct,
            suspect_sigmas: SUSPECT_SIGMAS,
            baseline_points: BASELINE_POINTS,
            min_baseline_samples: MIN_BASELINE_SAMPLES,
            max_suspect_points: MAX_SUSPECT_POINTS,
            confirm_repeats: DecisionConfig::default().min_end_repeats,
            max_confirm_repeats: 30,
        }
    }

    /// The ends' options a confirmation compares with.
    pub fn decision(&self) -> DecisionConfig {
        DecisionConfig {
            min_end_repeats: self.confirm_repeats,
            max_repeats: self.max_confirm_repeats,
            min_effect_pct: self.min_effect_pct,
            method: Method::Posterior,
            ..DecisionConfig::default()
        }
    }

    /// The same with the direction turned round: what is a regression
    /// for one is a fix for the other.
    pub fn reversed(&self) -> HeadConfig {
        HeadConfig {
            direction: match self.direction {
                Direction::HigherIsBetter => Direction::LowerIsBetter,
                Direction::LowerIsBetter => Direction::HigherIsBetter,
            },
            ..self.clone()
        }
    }
}

/// A suspected change at the head.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Suspicion {
    /// The last point before the change (an index into the points).
    pub last_good: usize,
    /// The first point on the new level.
    pub first_bad: usize,
    /// The head, the newest point.
    pub head: usize,
    /// The point on the new level compared with the last good one: the
    /// head when the suspicion was made (it stays the one compared when
    /// newer commits land during its confirmation).
    #[serde(default)]
    pub compared: usize,
    /// How many standard errors for the worse.
    pub z: f64,
    /// The change, percent of the window's level (negative: lower).
    pub change_pct: f64,
    /// The window's level.
    pub baseline: f64,
    /// The noise of one sample there.
    pub sigma: f64,
}

/// What the head shows.
#[derive(Clone, Debug, PartialEq)]
pub enum HeadCheck {
    /// Too few samples to compare with: measure more of the window.
    Warming {
        /// Samples there.
        n_samples: usize,
    },
    /// Nothing suspected.
    Steady,
    /// A change is suspected.
    Suspect(Suspicion),
}

/// Looks for a change at the head of `points` (each commit's samples,
/// oldest first; a point without samples is left out as if not there).
pub fn check_head(points: &[Vec<f64>], config: &HeadConfig) -> HeadCheck {
    let measured: Vec<usize> = (0..points.len())
        .filter(|&idx| !points[idx].is_empty())
        .collect();
    let n_window: usize = measured
        .iter()
        .rev()
        .skip(1)
        .take(config.baseline_points)
        .map(|&idx| points[idx].len())
        .sum();
    if measured.len() < 2 || n_window < config.min_baseline_samples {
        return HeadCheck::Warming {
            n_samples: n_window,
        };
    }
    let head = measured[measured.len() - 1];
    let mut best: Option<Suspicion> = None;
    for n_suspect in 1..=config.max_suspect_points.max(1) {
        // The suspect side: the newest `n_suspect` points; the window:
        // up to `baseline_points` before them, with enough samples.
        let Some(split) = measured.len().checked_sub(n_suspect) else {
            break;
        };
        let window_idx = &measured[split.saturating_sub(config.baseline_points)..split];
        let window: Vec<f64> = window_idx
            .iter()
            .flat_map(|&idx| points[idx].iter().copied())
            .collect();
        if window.len() < config.min_baseline_samples || window_idx.is_empty() {
            break;
        }
        let suspect: Vec<f64> = measured[split..]
            .iter()
            .flat_map(|&idx| points[idx].iter().copied())
            .collect();
        let Some(found) = compare_window(&window, &suspect, config) else {
            continue;
        };
        let suspicion = Suspicion {
            last_good: window_idx[window_idx.len() - 1],
            first_bad: measured[split],
            head,
            compared: head,
            ..found
        };
        if best.as_ref().is_none_or(|best| suspicion.z > best.z) {
            best = Some(suspicion);
        }
    }
    match best {
        Some(suspicion)
            if suspicion.z >= config.suspect_sigmas
                && worse_pct(suspicion.change_pct, config.direction)
                    >= config.min_effect_pct / 2.0 =>
        {
            HeadCheck::Suspect(suspicion)
        }
        _ => HeadCheck::Steady,
    }
}

/// The change `change_pct` (new over old, percent) as a loss: positive
/// when it is for the worse in `direction`.
fn worse_pct(change_pct: f64, direction: Direction) -> f64 {
    match direction {
        Direction::HigherIsBetter => -change_pct,
        Direction::LowerIsBetter => change_pct,
    }
}

/// The z and change of `suspect` against `window` (indices left to the
/// caller); `None` where the window has no noise or no level.
fn compare_window(window: &[f64], suspect: &[f64], config: &HeadConfig) -> Option<Suspicion> {
    let sigma = pooled_scale(&[window]);
    let baseline = huber_location(window, sigma);
    if !(sigma > 0.0 && sigma.is_finite() && baseline != 0.0 && baseline.is_finite()) {
        return None;
    }
    let level = huber_location(suspect, sigma);
    let standard_error = sigma * (1.0 / window.len() as f64 + 1.0 / suspect.len() as f64).sqrt();
    let change_pct = (level - baseline) / baseline.abs() * 100.0;
    let loss = match config.direction {
        Direction::HigherIsBetter => baseline - level,
        Direction::LowerIsBetter => level - baseline,
    };
    Some(Suspicion {
        last_good: 0,
        first_bad: 0,
        head: 0,
        compared: 0,
        z: loss / standard_error,
        change_pct,
        baseline,
        sigma,
    })
}

/// The suspicion between `last_good` and `compared` whose confirmation
/// is under way, with its figures as the points show them now.
fn pinned_suspicion(
    points: &[Vec<f64>],
    config: &HeadConfig,
    last_good: usize,
    compared: usize,
) -> Suspicion {
    let window: Vec<f64> = (0..=last_good)
        .rev()
        .filter(|&idx| !points[idx].is_empty())
        .take(config.baseline_points)
        .flat_map(|idx| points[idx].iter().copied())
        .collect();
    let figures = compare_window(&window, &points[compared], config);
    Suspicion {
        last_good,
        first_bad: compared,
        head: points.len().saturating_sub(1),
        compared,
        ..figures.unwrap_or(Suspicion {
            last_good,
            first_bad: compared,
            head: compared,
            compared,
            z: 0.0,
            change_pct: 0.0,
            baseline: 0.0,
            sigma: 0.0,
        })
    }
}

/// Where the confirmation of a suspicion stands.
#[derive(Clone, Debug, PartialEq)]
pub enum Confirmation {
    /// Measure both again (`why`).
    NeedMore(EndsWait),
    /// A regression: the two differ clearly, for the worse, by at least
    /// the minimum effect.
    Confirmed(Box<Difference>),
    /// Not a regression: the comparison refused (this rule), or found a
    /// change for the better.
    Dismissed(Option<RefusalReason>),
}

/// Compares the samples of the last good point and of the head, as
/// bisect compares its ends.
pub fn confirm(last_good: &[f64], head: &[f64], config: &HeadConfig) -> Confirmation {
    match compare_ends(last_good, head, &config.decision()) {
        EndsDecision::NeedMore(wait) => Confirmation::NeedMore(wait),
        EndsDecision::Refuse(reason) => Confirmation::Dismissed(Some(reason)),
        EndsDecision::Differ => match Difference::yuen(last_good, head, 0.95) {
            Some(difference)
                if worse_pct(difference.diff_pct, config.direction) >= config.min_effect_pct =>
            {
                Confirmation::Confirmed(Box::new(difference))
            }
            _ => Confirmation::Dismissed(None),
        },
    }
}

/// What a tracker does next at the head of its points.
#[derive(Clone, Debug, PartialEq)]
pub enum HeadNext {
    /// The window needs more samples: measure the commits before the
    /// head (or the head again when there are none).
    Warming,
    /// Nothing suspected: measure new commits as they come.
    Steady,
    /// A suspicion to confirm: measure each of these points once more.
    Measure(Suspicion, Vec<usize>),
    /// A regression, confirmed: between the suspicion's last good point
    /// and the point it compared.
    Confirmed(Suspicion, Box<Difference>),
    /// A suspicion dismissed: the caller remembers it, so as not to
    /// suspect the same again ([`next_at_head`]'s `dismissed`).
    Dismissed(Suspicion),
}

/// The next thing to do at the head of `points` (see [`check_head`] and
/// [`confirm`]). `dismissed` tells whether a suspicion between a last
/// good point and a head was dismissed before; such a one is left alone.
/// `pinned` is the suspicion whose confirmation is under way (its last
/// good point and the point it compares), which goes on whatever commits
/// land meanwhile, to its confirmation, or to its dismissal, by the
/// comparison or as soon as the point, measured again, no longer looks
/// worse than the window before the last good point.
pub fn next_at_head(
    points: &[Vec<f64>],
    config: &HeadConfig,
    dismissed: &dyn Fn(usize, usize) -> bool,
    pinned: Option<(usize, usize)>,
) -> HeadNext {
    let suspicion = match pinned {
        Some((last_good, compared)) => {
            let suspicion = pinned_suspicion(points, config, last_good, compared);
            // Measured again, the point no longer looks worse than the
            // window: the suspicion ends here, as it would not have been
            // made on these samples.
            if suspicion.z < config.suspect_sigmas {
                return HeadNext::Dismissed(suspicion);
            }
            suspicion
        }
        None => match check_head(points, config) {
            HeadCheck::Warming { .. } => return HeadNext::Warming,
            HeadCheck::Steady => return HeadNext::Steady,
            HeadCheck::Suspect(suspicion) if dismissed(suspicion.last_good, suspicion.head) => {
                return HeadNext::Steady;
            }
            HeadCheck::Suspect(suspicion) => suspicion,
        },
    };
    // The first sample of each point is the one measured as its commit
    // landed, and the suspicion chose the two for what those showed:
    // only the repeats measured since are compared, so that the choice
    // does not weigh in the comparison that confirms it.
    let repeats = |point: &[f64]| point.get(1..).unwrap_or_default().to_vec();
    let (good, head) = (
        repeats(&points[suspicion.last_good]),
        repeats(&points[suspicion.compared]),
    );
    match confirm(&good, &head, config) {
        Confirmation::Confirmed(difference) => HeadNext::Confirmed(suspicion, difference),
        Confirmation::Dismissed(_) => HeadNext::Dismissed(suspicion),
        Confirmation::NeedMore(_) => {
            // As bisect measures its ends: the one with fewer samples
            // first, both when they have as many.
            let wanted = if good.len() < head.len() {
                vec![suspicion.last_good]
            } else if head.len() < good.len() {
                vec![suspicion.compared]
            } else {
                vec![suspicion.last_good, suspicion.compared]
            };
            HeadNext::Measure(suspicion, wanted)
        }
    }
}

#[cfg(test)]
mod tests;
