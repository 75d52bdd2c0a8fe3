//! The comparison of the two ends before any step: is the difference
//! clear enough to bisect, must the ends be measured again (and why), or
//! is the bisection refused?
//!
//! # Bisect
//!
//! The ends are measured until their difference is clear: Yuen's
//! trimmed-mean interval (see [`Difference::yuen`]) excludes zero at
//! [`END_CONFIDENCE`] and the change is at least the minimum effect (for
//! a promised effect, see below: the interval still reaches it); the
//! sequential method also waits until the midpoint between them is known
//! to within an eighth of the step ([`END_MIDPOINT_PRECISION`]), since it
//! compares every commit with that midpoint.
//!
//! # Refuse
//!
//! A bisection is refused as soon as one of these holds:
//!
//! - Equivalence: the interval at [`END_CONFIDENCE`] lies inside plus or
//!   minus the minimum effect (two one-sided tests, each at half of one
//!   minus that confidence).
//! - Futility ([`EndsTest::Futility`], the default): the futility bound
//!   of a sequential test on the ends' measurements. The test is Wald's
//!   (A. Wald, "Sequential Analysis", Wiley, 1947) between `H0`, the ends
//!   do not differ, and `H1`, they differ by `delta1` either way, where
//!   `delta1` is the larger of the minimum effect and [`FUTILITY_SIGMAS`]
//!   noise scales of one run: the smallest step the test is built to
//!   see ([`FutilityAlternative::NoiseScale`], when no minimum effect is
//!   given). A minimum effect given (`bisect start --min-effect`) is a
//!   promise, [`FutilityAlternative::MinEffect`]: `delta1` is that effect
//!   alone and the bound is set at `ln(`[`PROMISED_FUTILITY_ERROR`]`)`,
//!   so that a step of that size is refused at most [`FUTILITY_ERROR`] of
//!   the time however noisy the runs, with the noise estimated from the
//!   ends' own repeats; in exchange ends that do not
//!   differ take more repeats to refuse when the effect is small against
//!   the noise. `H1` is the even mixture of `+delta1` and `-delta1` (Wald's
//!   weight functions for a composite hypothesis). With `z` the
//!   difference of the ends' Huber means over its standard error (the
//!   pooled robust noise scale of one run, as the decision's model
//!   estimates it, times `sqrt(1/n_good + 1/n_bad)`) and `theta` `delta1`
//!   over that standard error, the log-likelihood ratio is
//!
//!   ```text
//!   llr = ln cosh(theta z) - theta^2 / 2
//!   ```
//!
//!   and the bisection is refused once it falls to
//!   `ln(`[`FUTILITY_ERROR`]`)`: ends that truly differ by `delta1` are
//!   refused with a probability of at most [`FUTILITY_ERROR`] (Wald's
//!   bound, for a known noise scale). Ends that do not differ drift down
//!   by `theta^2 / 2`, which grows with the repeats, and are refused
//!   after a few. A clear difference (above) always wins: the bound acts
//!   only while the difference is unclear. This is the early stopping to
//!   accept the null hypothesis of two-sided group sequential tests (C.
//!   Jennison and B. W. Turnbull, "Group Sequential Methods with
//!   Applications to Clinical Trials", Chapman & Hall, 2000), looked at
//!   after every repeat of both ends.
//! - The cap: neither clear nor refused after `max_repeats` of each end.
//!
//! The futility bound's two constants were chosen in simulation
//! (`scripts/bench-bisect-sim.sh 64 STEP CV normal 1000 SEED`, the
//! posterior method, seeds 1 to 3): ends that do not differ are refused
//! after a median of 9 to 10 repeats of each end, at 2% and at 5% noise
//! alike (with the default minimum effect of 1%, the noise sets
//! `delta1`, and in units of noise both are the same case); a 5% step in
//! 2% noise (2.5 noise scales) is never refused. A step of about one
//! noise scale is where the two errors meet: a 5% step in 5% noise is
//! refused 21% to 25% of the time. Some such errors are unavoidable: any
//! rule that refuses half of the ends that do not differ by their tenth
//! repeat refuses at least 5.7% of the steps of one noise scale (the
//! Neyman-Pearson lemma at ten repeats, against a step either way, with
//! the noise known). This bound pays more than that for looking after
//! every repeat, which ends clear cases sooner, and a looser one would
//! leave ends that do not differ measured for tens of repeats. Less noise
//! per run moves such a step out of the bound's reach. The figures are
//! pinned by `tests/simulated.rs`.
//!
//! [`Difference`] also gives the reports their intervals (Welch's).
//!
//! Everything here is a pure function of the samples.

use crate::decision::{DecisionConfig, EndsTest, FutilityAlternative, Method, Model};
use crate::robust::{huber_location, mean_var, pooled_scale};
use run_record::stats::ratio::{self, MeanEstimate};
use serde::{Deserialize, Serialize};

/// Confidence with which the ends must differ before bisecting.
pub const END_CONFIDENCE: f64 = 0.999;
/// The midpoint between the ends' means must be known to within this
/// fraction of their difference (one standard error) before bisecting.
pub const END_MIDPOINT_PRECISION: f64 = 0.125;
/// The futility bound's alternative: the ends differ by this many noise
/// scales of one run (or by the minimum effect, when that is larger).
pub const FUTILITY_SIGMAS: f64 = 1.5;
/// The futility bound's error: ends that differ by the alternative are
/// refused with at most this probability.
pub const FUTILITY_ERROR: f64 = 0.02;
/// The error the bound is built with when the minimum effect is
/// promised. Wald's bound holds for a known noise; the ends' noise is
/// estimated from their few repeats, and an estimate that falls short
/// makes the bound refuse more often than it says: a 5% step in 5%
/// noise, 1000 simulated ranges, was refused 2.9% of the time with the
/// bound at 2%, and 1.5% with it at 0.5%. A tenth of the error keeps a
/// promised step refused well within [`FUTILITY_ERROR`] of the time.
pub const PROMISED_FUTILITY_ERROR: f64 = FUTILITY_ERROR / 10.0;

/// Where the comparison of the two ends stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndsDecision {
    /// The ends differ clearly: bisect.
    Differ,
    /// Measure both ends once more, for this reason.
    NeedMore(EndsWait),
    /// They do not differ by more than the noise and the minimum effect,
    /// as this rule found.
    Refuse(RefusalReason),
}

/// Why the ends are measured once more.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndsWait {
    /// Each end's first repeats (`--end-repeats`), taken before anything
    /// is decided.
    FirstRepeats,
    /// Their difference is neither clear nor ruled out yet.
    Unclear,
    /// They differ clearly, but the midpoint between them is not known
    /// well enough yet for the sequential method.
    Midpoint,
}

/// Which rule refused a bisection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalReason {
    /// The interval on the difference lies inside the minimum effect.
    Equivalent,
    /// The futility bound: the ends do not differ by the smallest step
    /// the test is built to see.
    Futile,
    /// Neither clear nor ruled out after the most repeats of each end.
    Cap,
}

/// Figures of the comparison of two sets of samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// Mean of the old samples.
    pub old_mean: f64,
    /// Mean of the new samples.
    pub new_mean: f64,
    /// Standard deviation of the old samples.
    pub old_stddev: f64,
    /// Standard deviation of the new samples.
    pub new_stddev: f64,
    /// Number of old samples.
    pub n_old: u32,
    /// Number of new samples.
    pub n_new: u32,
    /// new - old.
    pub diff: f64,
    /// new - old, percent of the old mean.
    pub diff_pct: f64,
    /// Confidence level of the interval, percent.
    pub level_pct: f64,
    /// Lower bound of the interval on the difference, percent of the old
    /// mean.
    pub ci_low_pct: f64,
    /// Upper bound, percent of the old mean.
    pub ci_high_pct: f64,
}

impl Difference {
    /// Welch's means and degrees of freedom, with the interval on the
    /// change taken on the ratio of the means (Fieller's, see
    /// [`run_record::stats::ratio`]) at `level` (for example 0.95). `None`
    /// with fewer than two samples on a side, or when the old mean is not
    /// clearly away from zero.
    pub fn welch(old: &[f64], new: &[f64], level: f64) -> Option<Difference> {
        let old_estimate = MeanEstimate::of(old).ok()?;
        let new_estimate = MeanEstimate::of(new).ok()?;
        let df = ratio::welch_df(
            old_estimate.variance_of_mean,
            old.len(),
            new_estimate.variance_of_mean,
            new.len(),
        );
        Difference::assemble(old, new, old_estimate, new_estimate, df, level)
    }

    /// Yuen's trimmed means (K. K. Yuen, "The two-sample trimmed t for
    /// unequal population variances", Biometrika 61(1), 1974): Welch's
    /// interval made robust to outliers by trimming a fifth of each side
    /// and using winsorised variances; the interval on the change is
    /// taken on the ratio of the trimmed means, with Yuen's degrees of
    /// freedom. `None` with fewer than three samples on a side.
    pub fn yuen(old: &[f64], new: &[f64], level: f64) -> Option<Difference> {
        if old.len() < 3 || new.len() < 3 {
            return None;
        }
        let (old_mean, old_d, old_h) = trimmed(old);
        let (new_mean, new_d, new_h) = trimmed(new);
        let df = if old_d + new_d > 0.0 {
            (old_d + new_d).powi(2)
                / (old_d.powi(2) / (old_h - 1.0) + new_d.powi(2) / (new_h - 1.0))
        } else {
            old_h + new_h - 2.0
        };
        let old_estimate = MeanEstimate {
            mean: old_mean,
            variance_of_mean: old_d,
        };
        let new_estimate = MeanEstimate {
            mean: new_mean,
            variance_of_mean: new_d,
        };
        Difference::assemble(old, new, old_estimate, new_estimate, df, level)
    }

    /// The difference of the new estimate over the old one, with the
    /// interval on their ratio in percent of the old mean's magnitude.
    fn assemble(
        old: &[f64],
        new: &[f64],
        old_estimate: MeanEstimate,
        new_estimate: MeanEstimate,
        df: f64,
        level: f64,
    ) -> Option<Difference> {
        let interval = ratio::ratio_interval_of(new_estimate, old_estimate, df, level).ok()?;
        let relative = interval.relative();
        Some(Difference {
            old_mean: old_estimate.mean,
            new_mean: new_estimate.mean,
            old_stddev: mean_var(old).1.sqrt(),
            new_stddev: mean_var(new).1.sqrt(),
            n_old: old.len() as u32,
            n_new: new.len() as u32,
            diff: new_estimate.mean - old_estimate.mean,
            diff_pct: relative.change_pct,
            level_pct: level * 100.0,
            ci_low_pct: relative.low_pct,
            ci_high_pct: relative.high_pct,
        })
    }

    /// True when the interval excludes zero.
    pub fn is_significant(&self) -> bool {
        self.ci_low_pct > 0.0 || self.ci_high_pct < 0.0
    }
}

/// Decides whether the ends have been measured enough, and whether they
/// differ. `good` and `bad` are the samples of the two ends.
pub fn compare_ends(good: &[f64], bad: &[f64], config: &DecisionConfig) -> EndsDecision {
    let n_min = good.len().min(bad.len()) as u32;
    let at_cap = n_min >= end_cap(config);
    if n_min < config.min_end_repeats.max(2) {
        return EndsDecision::NeedMore(EndsWait::FirstRepeats);
    }
    let undecided = |wait: EndsWait| {
        if at_cap {
            EndsDecision::Refuse(RefusalReason::Cap)
        } else {
            EndsDecision::NeedMore(wait)
        }
    };
    let Some(difference) = Difference::yuen(good, bad, END_CONFIDENCE) else {
        // No bounded interval (a good end not clearly away from zero):
        // more samples may give one, up to the cap.
        return undecided(EndsWait::Unclear);
    };
    let inside_min_effect = difference.ci_low_pct > -config.min_effect_pct
        && difference.ci_high_pct < config.min_effect_pct;
    let big_enough = match config.futility_alternative {
        FutilityAlternative::NoiseScale => difference.diff_pct.abs() >= config.min_effect_pct,
        // A promised effect is kept while the interval still reaches it:
        // the estimate of a step of exactly that size falls short of it
        // half of the time, and waiting for it to pass would refuse
        // that step at the cap as often.
        FutilityAlternative::MinEffect => !inside_min_effect,
    };
    let clear = difference.is_significant() && big_enough;
    if clear {
        let Some(model) = Model::estimate(&[good], &[bad]) else {
            return EndsDecision::NeedMore(EndsWait::Midpoint);
        };
        let midpoint_se =
            model.sigma / 2.0 * (1.0 / good.len() as f64 + 1.0 / bad.len() as f64).sqrt();
        let precise =
            midpoint_se <= END_MIDPOINT_PRECISION * (model.new_mean - model.old_mean).abs();
        // The sequential test compares each commit with the midpoint of
        // the ends, so it needs that midpoint first; the probabilistic
        // method learns both means from every sample as it goes.
        if precise || at_cap || config.method == Method::Posterior {
            return EndsDecision::Differ;
        }
        return EndsDecision::NeedMore(EndsWait::Midpoint);
    }
    // Stop early when the interval already lies inside the minimum
    // effect: more repeats cannot make the ends differ by enough.
    if inside_min_effect {
        return EndsDecision::Refuse(RefusalReason::Equivalent);
    }
    if config.ends_test == EndsTest::Futility
        && futility(good, bad, config)
            .is_some_and(|futility| futility.llr <= futility_error(config).ln())
    {
        return EndsDecision::Refuse(RefusalReason::Futile);
    }
    undecided(EndsWait::Unclear)
}

/// The most repeats of each end before a comparison that is still
/// unclear is refused.
pub fn end_cap(config: &DecisionConfig) -> u32 {
    config.max_repeats.max(config.min_end_repeats)
}

/// Where the sequential test of the ends stands (see the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Futility {
    /// The alternative `delta1`: the smallest step the test is built to
    /// see, percent of the good end's trimmed mean.
    pub alternative_pct: f64,
    /// The noise of one run, percent of the good end's trimmed mean.
    pub noise_pct: f64,
    /// The log-likelihood ratio of a difference of `delta1` against none;
    /// the bisection is refused at `ln(`[`FUTILITY_ERROR`]`)` or below.
    pub llr: f64,
}

/// The futility test of the ends' samples, against the alternative the
/// decision names (from its minimum effect, and the noise unless that
/// effect is promised). `None` with fewer than three samples an end, or
/// when the difference has no standard error (noise-free samples) or the
/// good end's mean is zero.
pub fn futility(good: &[f64], bad: &[f64], config: &DecisionConfig) -> Option<Futility> {
    if good.len() < 3 || bad.len() < 3 {
        return None;
    }
    let noise = pooled_scale(&[good, bad]);
    let good_mean = huber_location(good, noise);
    let bad_mean = huber_location(bad, noise);
    let standard_error = noise * (1.0 / good.len() as f64 + 1.0 / bad.len() as f64).sqrt();
    let scale = good_mean.abs();
    if !(standard_error > 0.0 && standard_error.is_finite() && scale > 0.0) {
        return None;
    }
    let min_effect = config.min_effect_pct / 100.0 * scale;
    let alternative = match config.futility_alternative {
        FutilityAlternative::NoiseScale => min_effect.max(FUTILITY_SIGMAS * noise),
        FutilityAlternative::MinEffect => min_effect,
    };
    // A promise of no effect at all has no alternative to tell from none.
    if alternative <= 0.0 {
        return None;
    }
    let theta = alternative / standard_error;
    let z = (bad_mean - good_mean) / standard_error;
    let llr = ln_cosh(theta * z) - theta * theta / 2.0;
    llr.is_finite().then_some(Futility {
        alternative_pct: alternative / scale * 100.0,
        noise_pct: noise / scale * 100.0,
        llr,
    })
}

/// The error the futility bound of `config` is built with: at most this
/// share of the ends that differ by its alternative are refused.
pub fn futility_error(config: &DecisionConfig) -> f64 {
    match config.futility_alternative {
        FutilityAlternative::NoiseScale => FUTILITY_ERROR,
        FutilityAlternative::MinEffect => PROMISED_FUTILITY_ERROR,
    }
}

/// `ln(cosh(x))` without overflow: `|x| + ln(1 + e^(-2|x|)) - ln 2`.
fn ln_cosh(x: f64) -> f64 {
    let x = x.abs();
    x + (-2.0 * x).exp().ln_1p() - std::f64::consts::LN_2
}

/// The 20%-trimmed mean, Yuen's squared standard error `d` and the
/// number of samples kept `h`.
fn trimmed(values: &[f64]) -> (f64, f64, f64) {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n_samples = sorted.len();
    let n_trim = n_samples / 5;
    let kept = &sorted[n_trim..n_samples - n_trim];
    let h = kept.len() as f64;
    let trimmed_mean = kept.iter().sum::<f64>() / h;
    let low = kept[0];
    let high = kept[kept.len() - 1];
    let winsorised: Vec<f64> = sorted.iter().map(|x| x.clamp(low, high)).collect();
    let (_, winsorised_var) = mean_var(&winsorised);
    let d = (n_samples as f64 - 1.0) * winsorised_var / (h * (h - 1.0));
    (trimmed_mean, d, h)
}

#[cfg(test)]
mod tests;
