//! The confidence interval on a mean and netperf's rule for when to stop
//! repeating iterations (`-I level,width` with `-i max,min`).
//!
//! The interval is Student's: `mean +- t(1 - (1 - level) / 2, n - 1) s /
//! sqrt(n)`, with `s` the sample standard deviation (see any statistics
//! text, e.g. NIST/SEMATECH e-Handbook of Statistical Methods, section
//! 7.2.2.1). netperf states the requested precision as the *full* width
//! of that interval in percent of the mean: `-I 95,5` asks for a 95%
//! interval no wider than 5% of the mean, that is +-2.5%.

use crate::record::ConfidenceOutcome;
use crate::spec::ConfidenceSpec;

use super::StatsError;
use super::describe::{check_sample, mean_of, variance_of};
use super::distributions::student_t_upper_quantile;

/// A two-sided Student-t confidence interval on the mean of one sample.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MeanInterval {
    /// Number of values the interval is over.
    pub n_samples: usize,
    /// Confidence level as a fraction (0.95).
    pub level: f64,
    /// Sample mean.
    pub mean: f64,
    /// Sample standard deviation (divisor `n - 1`).
    pub stddev: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Half the width: the `+-` part.
    pub half_width: f64,
    /// Full width (`high - low`) in percent of `|mean|`; `None` when the
    /// mean is zero and a relative width has no meaning.
    pub width_pct: Option<f64>,
}

/// Checks a confidence level given as a fraction.
pub(crate) fn check_level(level: f64) -> Result<(), StatsError> {
    if level > 0.0 && level < 1.0 {
        Ok(())
    } else {
        Err(StatsError::InvalidLevel(level))
    }
}

/// The level of a [`ConfidenceSpec`] as a fraction (95 -> 0.95).
pub fn level_fraction(confidence: &ConfidenceSpec) -> f64 {
    f64::from(confidence.level_pct) / 100.0
}

/// The Student-t confidence interval at `level` (a fraction, 0.95) on the
/// mean of `samples`. Needs two values: one value has no spread and so no
/// interval.
pub fn mean_interval(samples: &[f64], level: f64) -> Result<MeanInterval, StatsError> {
    check_level(level)?;
    check_sample(samples, 2)?;
    let n_samples = samples.len();
    let mean = mean_of(samples);
    let stddev = variance_of(samples, mean).sqrt();
    let critical = student_t_upper_quantile(0.5 * (1.0 - level), (n_samples - 1) as f64)?;
    let half_width = critical * stddev / (n_samples as f64).sqrt();
    let width_pct = (mean != 0.0).then(|| 2.0 * half_width / mean.abs() * 100.0);
    Ok(MeanInterval {
        n_samples,
        level,
        mean,
        stddev,
        low: mean - half_width,
        high: mean + half_width,
        half_width,
        width_pct,
    })
}

/// What to do after an iteration of a test with a confidence request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IterationDecision {
    /// Run another iteration.
    Continue,
    /// Stop iterating.
    Stop {
        /// True when the interval is within the requested width.
        met: bool,
    },
}

/// netperf's stop rule: after `samples.len()` iterations, stop when at
/// least `iterations_min` have run and the interval's full width is at
/// most `confidence.width_pct` percent of the mean, or when
/// `iterations_max` have run (then `met` says whether the width was
/// reached anyway).
///
/// One value has no interval, so the rule continues unless the maximum is
/// reached. Values that give no interval (non-finite, zero mean) never
/// meet the width.
pub fn iteration_decision(
    samples: &[f64],
    confidence: &ConfidenceSpec,
    iterations_min: u32,
    iterations_max: u32,
) -> IterationDecision {
    let n_samples = samples.len();
    let met = mean_interval(samples, level_fraction(confidence))
        .ok()
        .and_then(|interval| interval.width_pct)
        .is_some_and(|width_pct| width_pct <= confidence.width_pct);
    let reached = |iterations: u32| n_samples >= usize::try_from(iterations).unwrap_or(usize::MAX);
    if reached(iterations_max) {
        IterationDecision::Stop { met }
    } else if reached(iterations_min) && met {
        IterationDecision::Stop { met: true }
    } else {
        IterationDecision::Continue
    }
}

/// The interval reached by `samples`, as the run record states it.
///
/// Errors when there is no interval (fewer than two values, a level
/// outside (0, 100)) or no relative width (zero mean).
pub fn confidence_outcome(
    samples: &[f64],
    confidence: &ConfidenceSpec,
) -> Result<ConfidenceOutcome, StatsError> {
    let interval = mean_interval(samples, level_fraction(confidence))?;
    let width_pct = interval.width_pct.ok_or(StatsError::ZeroBase)?;
    Ok(ConfidenceOutcome {
        level_pct: confidence.level_pct,
        low: interval.low,
        high: interval.high,
        width_pct,
        target_width_pct: confidence.width_pct,
        met: width_pct <= confidence.width_pct,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(level_pct: u32, width_pct: f64) -> ConfidenceSpec {
        ConfidenceSpec {
            level_pct,
            width_pct,
        }
    }

    /// Runs the stop rule the way the bench loop does, drawing one value
    /// per iteration from `source`, and returns how many iterations ran and
    /// the final decision.
    fn drive(
        source: impl IntoIterator<Item = f64>,
        confidence: &ConfidenceSpec,
        iterations_min: u32,
        iterations_max: u32,
    ) -> (usize, IterationDecision) {
        let mut samples = Vec::new();
        for value in source {
            samples.push(value);
            let decision = iteration_decision(&samples, confidence, iterations_min, iterations_max);
            if decision != IterationDecision::Continue {
                return (samples.len(), decision);
            }
        }
        panic!("the source ran dry after {} values", samples.len());
    }

    /// Values alternating around `center` by `+-spread`.
    fn alternating(center: f64, spread: f64) -> impl Iterator<Item = f64> {
        (0..1000).map(move |idx| {
            if idx % 2 == 0 {
                center + spread
            } else {
                center - spread
            }
        })
    }

    #[test]
    fn stops_early_when_variance_is_tiny() {
        let confidence = spec(99, 5.0);
        let outcome = drive(alternating(1e9, 1e5), &confidence, 3, 30);
        assert_eq!(outcome, (3, IterationDecision::Stop { met: true }));
    }

    #[test]
    fn respects_the_minimum() {
        // Two values already give a narrow interval; the minimum holds.
        let confidence = spec(95, 5.0);
        let samples = [100.0, 100.001];
        assert_eq!(
            iteration_decision(&samples, &confidence, 5, 10),
            IterationDecision::Continue
        );
        let outcome = drive(alternating(100.0, 0.001), &confidence, 5, 10);
        assert_eq!(outcome, (5, IterationDecision::Stop { met: true }));
    }

    #[test]
    fn runs_to_the_maximum_when_variance_is_large() {
        let confidence = spec(95, 5.0);
        let outcome = drive(alternating(100.0, 30.0), &confidence, 3, 10);
        assert_eq!(outcome, (10, IterationDecision::Stop { met: false }));
    }

    #[test]
    fn met_at_the_maximum_when_the_width_is_reached_there() {
        // +-1% alternation: at 95% the interval is within 5% of the mean
        // from n = 3 on, but the minimum is the maximum.
        let confidence = spec(95, 5.0);
        let outcome = drive(alternating(100.0, 1.0), &confidence, 6, 6);
        assert_eq!(outcome, (6, IterationDecision::Stop { met: true }));
    }

    #[test]
    fn one_value_has_no_interval() {
        let confidence = spec(95, 5.0);
        assert_eq!(
            iteration_decision(&[5.0], &confidence, 1, 10),
            IterationDecision::Continue
        );
        assert_eq!(
            iteration_decision(&[5.0], &confidence, 1, 1),
            IterationDecision::Stop { met: false }
        );
        assert_eq!(
            iteration_decision(&[], &confidence, 0, 0),
            IterationDecision::Stop { met: false }
        );
        assert_eq!(
            iteration_decision(&[0.0, 0.0, 0.0], &confidence, 1, 5),
            IterationDecision::Continue
        );
    }

    #[test]
    fn the_width_is_the_full_width() {
        // With a mean of 100 the full width in percent equals the full
        // width itself: twice the half width.
        let samples = [99.0, 101.0, 99.0, 101.0];
        let interval = mean_interval(&samples, 0.95).unwrap();
        let width = interval.width_pct.unwrap();
        assert!((interval.high - interval.low - 2.0 * interval.half_width).abs() < 1e-12);
        assert!((width - 2.0 * interval.half_width).abs() < 1e-12);
        assert_eq!(
            iteration_decision(&samples, &spec(95, width + 1e-9), 2, 10),
            IterationDecision::Stop { met: true }
        );
        assert_eq!(
            iteration_decision(&samples, &spec(95, width - 1e-9), 2, 10),
            IterationDecision::Continue
        );
    }

    #[test]
    fn outcome_reports_target_and_met() {
        let outcome = confidence_outcome(&[99.0, 100.0, 101.0], &spec(99, 10.0)).unwrap();
        assert_eq!(outcome.level_pct, 99);
        assert_eq!(outcome.target_width_pct, 10.0);
        assert!(!outcome.met);
        assert!(outcome.low < 100.0 && outcome.high > 100.0);
        assert_eq!(
            confidence_outcome(&[1.0], &spec(95, 5.0)),
            Err(StatsError::TooFewValues { needed: 2, got: 1 })
        );
        assert_eq!(
            mean_interval(&[1.0, 2.0], 1.0),
            Err(StatsError::InvalidLevel(1.0))
        );
    }
}
