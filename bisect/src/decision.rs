//! The statistical good/bad decision: is this commit's performance like
//! the old end's or like the new end's, or can we not tell yet?
//!
//! # Method
//!
//! Each bisection step is a sequential test between two simple
//! hypotheses, after Wald's sequential probability ratio test (A. Wald,
//! "Sequential Tests of Statistical Hypotheses", Annals of Mathematical
//! Statistics 16(2), 1945): `old`, the commit's samples come from the
//! distribution of the known-old commits (mean `mu_old`), and `new`, they
//! come from that of the known-new commits (mean `mu_new`), with a common
//! noise scale `sigma`. After every repeat the log-likelihood ratio of the
//! normal model
//!
//! ```text
//! llr = sum_i (mu_new - mu_old) / sigma^2 * (x_i - (mu_old + mu_new) / 2)
//! ```
//!
//! is compared with Wald's bounds `+-ln((1 - alpha) / alpha)`: above, the
//! commit is `new`; below, `old`; between, one more repeat is taken, up to
//! a cap, after which the commit is `unknown` and the bisection treats it
//! as a skip. That is the shape of Chromium's Pinpoint, which answers
//! "different", "same" or "unknown" and grows the repeat count until it
//! can tell, with Wald's test deciding when it can tell.
//!
//! Network figures have heavy tails and the occasional outlier (a run that
//! shared the machine with a cron job), so each sample's contribution is
//! clipped as in Huber's robust probability ratio test (P. J. Huber, "A
//! Robust Version of the Probability Ratio Test", Annals of Mathematical
//! Statistics 36(6), 1965): a sample counts at most as much as one lying
//! [`CLIP_SIGMAS`] noise scales beyond the far hypothesis. One wild sample
//! can then never decide a step alone.
//!
//! The two means and the noise scale are not known; they are estimated
//! from the samples of the two ends and of every commit already
//! classified, so the estimates sharpen as the bisection goes on. The
//! means are Huber M-estimates of location (Huber, "Robust Estimation of a
//! Location Parameter", 1964) and the scale is the pooled within-commit
//! standard deviation with residuals winsorised at three robust scales
//! (from the median absolute deviation). Network noise often grows with
//! the level, so each side (old, new) also gets a scale of its own, and
//! the scale used is the largest of the pooled scale and each side's
//! lower confidence bound ([`SIDE_SCALE_Z`] standard errors below its
//! estimate): a side clearly noisier than the pool sets the scale, two
//! sides that agree keep the steadier pooled one. Taking the larger of
//! the two sides' raw scales instead is as robust but biased upwards
//! (the maximum of two noisy estimates) and costs about a tenth more
//! repeats.
//!
//! A commit is never classified on fewer than three repeats
//! ([`DecisionConfig::min_repeats`]): with the parameters estimated from
//! a handful of end samples, two repeats that happen to agree decide too
//! easily on heavy-tailed noise, and the third repeat costs less than
//! the tighter error rate that would buy the same accuracy.
//!
//! Measured with `scripts/bench-bisect-sim.sh 1024 5 CV SHAPE TRIALS SEED`
//! (mean measurements, confirmation excluded): 2% normal noise, 1000
//! trials, seeds 1 and 2: 99.5% and 99.7% correct with 58.9 and 58.4
//! measurements; 2% heavy tails: 99.0% with 48.0; 2% outliers: 98.4% with
//! 75.1 (one range in a thousand refused at its ends). In 5% normal noise,
//! 500 trials, the step is one noise scale: 24.8% of the ranges are
//! refused at their ends (see the `ends` module) and 74.4% are bisected
//! right, with 234.6 measurements.
//!
//! The estimators themselves are in [`crate::robust`]; the comparison of
//! the two ends, before any step, in the `ends` module.
//!
//! Everything here is a pure function of the samples, so the engine that
//! calls it is deterministic given its measurements.

use crate::robust::{huber_location, pooled_scale, pooled_scale_dof};
use serde::{Deserialize, Serialize};

/// A sample's contribution to the likelihood ratio is clipped as if it
/// lay at most this many noise scales beyond the farther hypothesis mean.
pub const CLIP_SIGMAS: f64 = 1.0;
/// Standard errors below its estimate at which one side's own noise
/// scale is taken as a floor of the scale (see [`Model::estimate`]).
pub const SIDE_SCALE_Z: f64 = 1.0;

/// Options of the decision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DecisionConfig {
    /// Probability of a wrong verdict at one step (Wald's alpha and beta).
    pub step_error: f64,
    /// Fewest repeats before a commit in the range can be classified.
    pub min_repeats: u32,
    /// Most repeats of one commit; a commit still undecided there is
    /// `unknown` and skipped. The ends are measured at most this often too.
    pub max_repeats: u32,
    /// Fewest repeats of each end.
    pub min_end_repeats: u32,
    /// Smallest difference between the ends worth bisecting, percent of
    /// the old end's mean.
    pub min_effect_pct: f64,
    /// Repeats added to the culprit and its parent to confirm the answer.
    pub confirm_repeats: u32,
    /// How the range is walked. Journals written before there was a
    /// choice walked it sequentially.
    #[serde(default)]
    pub method: Method,
    /// Posterior probability at which the probabilistic method names the
    /// culprit.
    #[serde(default = "default_culprit_confidence")]
    pub culprit_confidence: f64,
    /// Which rules may refuse the bisection at its ends. Journals written
    /// before the futility bound refused only on the interval and the cap.
    #[serde(default)]
    pub ends_test: EndsTest,
    /// What the futility bound's alternative is built against. Journals
    /// written before the choice built it against the noise, and the
    /// noise is left out of a journal, so that one without a promise
    /// keeps the bytes it had.
    #[serde(default, skip_serializing_if = "FutilityAlternative::is_noise_scale")]
    pub futility_alternative: FutilityAlternative,
}

/// The smallest step the futility bound of the ends is built to keep
/// (see the `ends` module).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FutilityAlternative {
    /// The larger of the minimum effect and a few noise scales of one
    /// run: what a bisection uses when it is given no minimum effect.
    #[default]
    NoiseScale,
    /// The minimum effect itself, as a promise: ends that differ by that
    /// much are refused with a probability of at most the bound's error,
    /// however noisy the runs, at the cost of more repeats of the ends.
    MinEffect,
}

/// Which rules may refuse a bisection whose ends do not differ enough
/// (see the `ends` module).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndsTest {
    /// The interval on the difference inside the minimum effect, or the
    /// repeat cap.
    #[default]
    Interval,
    /// Those, and the futility bound of the sequential test on the ends,
    /// which refuses ends that do not differ after a few repeats.
    Futility,
}

impl FutilityAlternative {
    /// True for the default, built against the noise.
    fn is_noise_scale(&self) -> bool {
        *self == FutilityAlternative::NoiseScale
    }
}

/// How a bisection walks the range.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// One commit at a time, repeated until the sequential test
    /// classifies it (see [`classify`]); then the next, as `git bisect`.
    #[default]
    Sequential,
    /// Probabilistic bisection: every sample of every commit updates one
    /// posterior over the culprit, and the next sample goes where it tells
    /// the most (see [`crate::posterior`]).
    Posterior,
}

fn default_culprit_confidence() -> f64 {
    0.995
}

impl Default for DecisionConfig {
    fn default() -> Self {
        DecisionConfig {
            step_error: 0.0005,
            min_repeats: 3,
            max_repeats: 100,
            min_end_repeats: 5,
            min_effect_pct: 1.0,
            confirm_repeats: 5,
            method: Method::Posterior,
            culprit_confidence: default_culprit_confidence(),
            ends_test: EndsTest::Futility,
            futility_alternative: FutilityAlternative::NoiseScale,
        }
    }
}

/// What one commit looks like.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Like the good end (git's `good`, or `old`).
    Old,
    /// Like the bad end (git's `bad`, or `new`).
    New,
    /// Still undecided at the repeat cap; bisected around as a skip.
    Unknown,
    /// Could not be built or measured (git's `skip`).
    Skip,
}

impl Verdict {
    /// The word `git bisect` uses for this verdict.
    pub fn git_term(self) -> &'static str {
        match self {
            Verdict::Old => "good",
            Verdict::New => "bad",
            Verdict::Unknown | Verdict::Skip => "skip",
        }
    }
}

/// The answer of the sequential test after the samples seen so far.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum StepDecision {
    /// Classified, with the final log-likelihood ratio (positive: new).
    Decided {
        /// `Old`, `New` or `Unknown`.
        verdict: Verdict,
        /// Log-likelihood ratio of new against old.
        llr: f64,
    },
    /// Take one more repeat.
    NeedMore {
        /// Log-likelihood ratio so far.
        llr: f64,
    },
}

/// The two hypotheses of a step, estimated from the classified samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Model {
    /// Mean of the old (good-like) commits.
    pub old_mean: f64,
    /// Mean of the new (bad-like) commits.
    pub new_mean: f64,
    /// Noise scale: the standard deviation of one repeat.
    pub sigma: f64,
    /// Samples behind `old_mean`.
    pub n_old: f64,
    /// Samples behind `new_mean`.
    pub n_new: f64,
}

impl Model {
    /// Estimates the model from the samples of the old commits and of the
    /// new commits, one slice per commit. `None` when either side has no
    /// samples.
    pub fn estimate(old_groups: &[&[f64]], new_groups: &[&[f64]]) -> Option<Model> {
        let all_groups: Vec<&[f64]> = old_groups
            .iter()
            .chain(new_groups.iter())
            .copied()
            .filter(|group| !group.is_empty())
            .collect();
        let old: Vec<f64> = old_groups.iter().flat_map(|g| g.iter().copied()).collect();
        let new: Vec<f64> = new_groups.iter().flat_map(|g| g.iter().copied()).collect();
        if old.is_empty() || new.is_empty() {
            return None;
        }
        // Network noise grows with the level (a run at 20 Gbit/s wobbles
        // by gigabits, one at 200 Mbit/s by megabits), and pooling both
        // sides would then let the quiet one's many tight residuals shrink
        // the scale below the loud side's noise, and one noisy repeat
        // decide a step. So each side's scale is also estimated on its
        // own, and the scale used is the largest of the pooled scale and
        // each side's lower confidence bound: a side clearly noisier than
        // the pool sets the scale, while two sides that agree keep the
        // pooled estimate, whose doubled degrees of freedom make it
        // steadier (the larger of two noisy estimates would be biased
        // upwards and cost repeats).
        let side_scale = |groups: &[&[f64]]| {
            let non_empty: Vec<&[f64]> = groups.iter().copied().filter(|g| !g.is_empty()).collect();
            let (scale, dof) = pooled_scale_dof(&non_empty);
            scale_lower_bound(scale, dof)
        };
        let sigma_raw = pooled_scale(&all_groups)
            .max(side_scale(old_groups))
            .max(side_scale(new_groups));
        // A noise-free measurement (a test double, a deterministic counter)
        // would make every sample infinitely decisive; a floor of a
        // twentieth of the step keeps the arithmetic finite and still lets
        // a single clean sample decide.
        let old_mean = huber_location(&old, sigma_raw);
        let new_mean = huber_location(&new, sigma_raw);
        let floor = ((new_mean - old_mean).abs() / 20.0)
            .max(old_mean.abs().max(new_mean.abs()) * 1e-9)
            .max(f64::MIN_POSITIVE);
        Some(Model {
            old_mean,
            new_mean,
            sigma: sigma_raw.max(floor),
            n_old: old.len() as f64,
            n_new: new.len() as f64,
        })
    }

    /// Log-likelihood ratio of `new` against `old` for `samples`, with
    /// each sample clipped (see the module documentation).
    pub fn llr(&self, samples: &[f64]) -> f64 {
        if samples.is_empty() {
            return 0.0;
        }
        let n_samples = samples.len() as f64;
        let clipped_mean = samples.iter().map(|&x| self.clip(x)).sum::<f64>() / n_samples;
        let sigma2 = self.sigma * self.sigma;
        // The means are estimates: the commit's mean is compared with each
        // through the variance of the difference, so that the evidence
        // saturates when the reference is known less well than the commit.
        let var_old = sigma2 * (1.0 / n_samples + 1.0 / self.n_old.max(1.0));
        let var_new = sigma2 * (1.0 / n_samples + 1.0 / self.n_new.max(1.0));
        let dist_old = clipped_mean - self.old_mean;
        let dist_new = clipped_mean - self.new_mean;
        dist_old * dist_old / (2.0 * var_old)
            - dist_new * dist_new / (2.0 * var_new)
            - 0.5 * (var_new / var_old).ln()
    }

    /// `value` clipped to at most [`CLIP_SIGMAS`] noise scales beyond the
    /// farther of the two means, so that one wild sample weighs no more
    /// than a sample that far out.
    pub fn clip(&self, value: f64) -> f64 {
        self.clip_at(value, CLIP_SIGMAS)
    }

    /// `value` clipped to at most `sigmas` noise scales beyond the farther
    /// of the two means.
    pub fn clip_at(&self, value: f64, sigmas: f64) -> f64 {
        let midpoint = (self.old_mean + self.new_mean) / 2.0;
        let bound = (self.new_mean - self.old_mean).abs() / 2.0 + sigmas * self.sigma;
        midpoint + (value - midpoint).clamp(-bound, bound)
    }

    /// The step in units of noise: |new - old| / sigma.
    pub fn effect_size(&self) -> f64 {
        (self.new_mean - self.old_mean).abs() / self.sigma
    }
}

/// Classifies a commit from its `samples` under `model`.
pub fn classify(samples: &[f64], model: &Model, config: &DecisionConfig) -> StepDecision {
    let llr = model.llr(samples);
    let bound = wald_bound(config.step_error);
    let n_samples = samples.len() as u32;
    if n_samples >= config.min_repeats.max(1) {
        if llr >= bound {
            return StepDecision::Decided {
                verdict: Verdict::New,
                llr,
            };
        }
        if llr <= -bound {
            return StepDecision::Decided {
                verdict: Verdict::Old,
                llr,
            };
        }
    }
    if n_samples >= config.max_repeats.max(1) {
        return StepDecision::Decided {
            verdict: Verdict::Unknown,
            llr,
        };
    }
    StepDecision::NeedMore { llr }
}

/// Wald's decision bound for equal error rates `alpha` (clamped to a sane
/// range).
pub fn wald_bound(alpha: f64) -> f64 {
    let alpha = alpha.clamp(1e-12, 0.49);
    ((1.0 - alpha) / alpha).ln()
}

/// A lower confidence bound on a noise scale estimated as `scale` with
/// `dof` degrees of freedom: the estimate divided by one plus
/// [`SIDE_SCALE_Z`] of its relative standard error, `1 / sqrt(2 dof)`.
fn scale_lower_bound(scale: f64, dof: usize) -> f64 {
    if dof == 0 {
        return 0.0;
    }
    scale / (1.0 + SIDE_SCALE_Z / (2.0 * dof as f64).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::robust::mean_var;

    #[test]
    fn clear_samples_are_classified() {
        let model = Model {
            old_mean: 100.0,
            new_mean: 95.0,
            sigma: 2.0,
            n_old: 1e6,
            n_new: 1e6,
        };
        let config = DecisionConfig::default();
        let old = classify(&[100.5, 99.0, 101.0, 100.2], &model, &config);
        let new = classify(&[95.5, 94.0, 96.0, 94.8], &model, &config);
        assert!(matches!(
            old,
            StepDecision::Decided {
                verdict: Verdict::Old,
                ..
            }
        ));
        assert!(matches!(
            new,
            StepDecision::Decided {
                verdict: Verdict::New,
                ..
            }
        ));
        let unsure = classify(&[97.5], &model, &config);
        assert!(matches!(unsure, StepDecision::NeedMore { .. }));
    }

    #[test]
    fn one_outlier_cannot_decide_alone() {
        let model = Model {
            old_mean: 100.0,
            new_mean: 95.0,
            sigma: 2.0,
            n_old: 1e6,
            n_new: 1e6,
        };
        // A sample far below the new mean counts as one just beyond it.
        assert!(model.llr(&[10.0]) < wald_bound(0.001));
    }

    #[test]
    fn samples_at_the_cap_are_unknown() {
        let model = Model {
            old_mean: 100.0,
            new_mean: 95.0,
            sigma: 2.0,
            n_old: 1e6,
            n_new: 1e6,
        };
        let config = DecisionConfig {
            max_repeats: 4,
            ..DecisionConfig::default()
        };
        let decision = classify(&[97.5, 97.5, 97.5, 97.5], &model, &config);
        assert!(matches!(
            decision,
            StepDecision::Decided {
                verdict: Verdict::Unknown,
                ..
            }
        ));
    }

    #[test]
    fn noise_free_samples_still_decide() {
        let model = Model::estimate(&[&[10.0, 10.0]], &[&[9.0, 9.0]]).unwrap();
        assert!(model.sigma > 0.0);
        let config = DecisionConfig::default();
        assert!(matches!(
            classify(&[9.0, 9.0, 9.0], &model, &config),
            StepDecision::Decided {
                verdict: Verdict::New,
                ..
            }
        ));
    }

    #[test]
    fn a_loud_side_sets_the_scale_and_agreeing_sides_pool() {
        // The old side wobbles by hundreds, the new side, a hundredfold
        // lower, by units, over many commits: the pooled scale alone would
        // be far below the old side's noise.
        let loud: &[f64] = &[10_000.0, 10_150.0, 9_800.0, 10_100.0, 9_900.0];
        let quiet: Vec<Vec<f64>> = (0..8)
            .map(|i| vec![100.0 + f64::from(i % 3), 99.0, 101.0, 100.5, 99.5])
            .collect();
        let quiet_groups: Vec<&[f64]> = quiet.iter().map(Vec::as_slice).collect();
        let model = Model::estimate(&[loud], &quiet_groups).unwrap();
        let loud_scale = mean_var(loud).1.sqrt();
        assert!(model.sigma >= loud_scale / 2.0, "{model:?} {loud_scale}");
        // Two sides with the same noise keep the pooled scale.
        let old: &[f64] = &[100.0, 102.0, 98.0, 101.0, 99.0];
        let new: &[f64] = &[90.0, 91.0, 89.0, 90.5, 89.5];
        let model = Model::estimate(&[old], &[new]).unwrap();
        assert!((model.sigma - pooled_scale(&[old, new])).abs() < 1e-9);
    }
}
