//! The comparison of the two ends before any step: is the difference
//! clear enough to bisect, must the ends be measured again, or is the
//! bisection refused?
//!
//! The ends are measured until their difference is clear (Yuen's
//! trimmed-mean interval, see [`Difference::yuen`], excludes zero at
//! [`END_CONFIDENCE`] and the midpoint between them is known to within an
//! eighth of the step) or the cap is reached; a bisection whose ends do
//! not differ by more than the noise and the minimum effect is refused.
//! [`Difference`] also gives the reports their intervals (Welch's).
//!
//! Everything here is a pure function of the samples.

use crate::decision::{DecisionConfig, Method, Model};
use crate::robust::mean_var;
use run_record::stats::ratio::{self, MeanEstimate};
use serde::{Deserialize, Serialize};

/// Confidence with which the ends must differ before bisecting.
pub const END_CONFIDENCE: f64 = 0.999;
/// The midpoint between the ends' means must be known to within this
/// fraction of their difference (one standard error) before bisecting.
pub const END_MIDPOINT_PRECISION: f64 = 0.125;

/// Where the comparison of the two ends stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EndsDecision {
    /// The ends differ clearly: bisect.
    Differ,
    /// Measure both ends once more.
    NeedMore,
    /// They do not differ by more than the noise and the minimum effect.
    Refuse,
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
    let at_cap = n_min >= config.max_repeats.max(config.min_end_repeats);
    if n_min < config.min_end_repeats.max(2) {
        return EndsDecision::NeedMore;
    }
    let Some(difference) = Difference::yuen(good, bad, END_CONFIDENCE) else {
        // No bounded interval (a good end not clearly away from zero):
        // more samples may give one, up to the cap.
        return if at_cap {
            EndsDecision::Refuse
        } else {
            EndsDecision::NeedMore
        };
    };
    let big_enough = difference.diff_pct.abs() >= config.min_effect_pct;
    let clear = difference.is_significant() && big_enough;
    if clear {
        let Some(model) = Model::estimate(&[good], &[bad]) else {
            return EndsDecision::NeedMore;
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
        return EndsDecision::NeedMore;
    }
    // Stop early when the interval already lies inside the minimum
    // effect: more repeats cannot make the ends differ by enough.
    let inside_min_effect = difference.ci_low_pct > -config.min_effect_pct
        && difference.ci_high_pct < config.min_effect_pct;
    if at_cap || inside_min_effect {
        EndsDecision::Refuse
    } else {
        EndsDecision::NeedMore
    }
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
mod tests {
    use super::*;

    #[test]
    fn a_hundredfold_drop_reads_above_minus_one_hundred_percent() {
        // The ends of a loopback bisection whose report once read
        // "-98.2% [-126.7%, -69.7%]".
        let good = [
            10418495124.5,
            7625127923.7,
            7068554605.8,
            22583090553.4,
            9543123023.9,
            18652021973.2,
            14349637025.9,
            7334694755.6,
            8394502987.5,
            10836738898.5,
            13233991372.8,
        ];
        let bad = [
            139092241.9,
            146681161.5,
            149534131.6,
            225707438.5,
            290969657.3,
            296805174.7,
            268905914.99,
            216117536.6,
            187394552.0,
            187134847.9,
        ];
        for difference in [
            Difference::welch(&good, &bad, 0.95).unwrap(),
            Difference::yuen(&good, &bad, 0.95).unwrap(),
        ] {
            assert!(difference.ci_low_pct > -100.0, "{difference:?}");
            assert!(difference.ci_low_pct < difference.diff_pct);
            assert!(difference.diff_pct < difference.ci_high_pct);
            assert!(difference.ci_high_pct < 0.0);
            assert!(difference.is_significant());
        }
    }

    #[test]
    fn ends_that_do_not_differ_are_refused() {
        let good = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2];
        let bad = [100.1, 100.9, 99.2, 100.4, 99.6, 100.0];
        let config = DecisionConfig {
            max_repeats: 6,
            ..DecisionConfig::default()
        };
        assert_eq!(compare_ends(&good, &bad, &config), EndsDecision::Refuse);
        let bad = [90.1, 90.9, 89.2, 90.4, 89.6, 90.0];
        assert_eq!(compare_ends(&good, &bad, &config), EndsDecision::Differ);
    }
}
