//! Two-sample tests, both two-sided: is the second sample different from
//! the first?
//!
//! - The Mann-Whitney U test (H. B. Mann and D. R. Whitney, "On a test of
//!   whether one of two random variables is stochastically larger than the
//!   other", Ann. Math. Statist. 18, 1947), with the exact null
//!   distribution for small untied samples and the tie-corrected normal
//!   approximation with continuity correction otherwise, as
//!   `scipy.stats.mannwhitneyu(x, y, alternative='two-sided')` does.
//! - Welch's unequal-variance t-test (B. L. Welch, "The generalization of
//!   Student's problem when several different population variances are
//!   involved", Biometrika 34, 1947) with the Welch-Satterthwaite degrees
//!   of freedom, as `scipy.stats.ttest_ind(x, y, equal_var=False)` does,
//!   and its confidence interval on the difference of the means.
//! - Student's pooled-variance t-test, as `scipy.stats.ttest_ind(x, y)`
//!   does; the right test when the null hypothesis is "one distribution",
//!   as it is for a change point.

use super::StatsError;
use super::describe::{check_sample, mean_of, variance_of};
use super::distributions::{normal_cdf, student_t_two_sided_p, student_t_upper_quantile};
use super::interval::check_level;

/// How the Mann-Whitney p value is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MannWhitneyMethod {
    /// scipy's `method='auto'`: exact when either sample has at most 8
    /// values and no value is tied, asymptotic otherwise.
    Auto,
    /// The exact null distribution of U, counted. With ties, U is
    /// rounded down before counting, as scipy does; the result is then
    /// conservative rather than exact.
    Exact,
    /// The normal approximation with tie correction and continuity
    /// correction.
    Asymptotic,
}

/// The outcome of a Mann-Whitney U test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: the number of (first, second) pairs where
    /// the first value is larger, ties counting one half.
    pub u_first: f64,
    /// Two-sided p value.
    pub p_value: f64,
    /// The method used: [`MannWhitneyMethod::Exact`] or
    /// [`MannWhitneyMethod::Asymptotic`], never `Auto`.
    pub method: MannWhitneyMethod,
}

/// Largest sample size for which `Auto` considers the exact method.
const AUTO_EXACT_MAX_SIZE: usize = 8;

/// The Mann-Whitney U test of `first` against `second`, two-sided.
///
/// U of the first sample comes from midranks of the pooled values:
/// `U1 = R1 - n1 (n1 + 1) / 2`. The p value uses `U = max(U1, U2)`:
///
/// - exact: `2 P(U' >= U)` under the null distribution of U', counted as
///   the coefficients of the Gaussian binomial coefficient
///   `[n1 + n2 choose n1]_q` (the number of arrangements with each value of
///   U; see e.g. G. E. Andrews, *The Theory of Partitions*, 1976, ch. 3),
///   built as the product `prod_i (1 - q^(n+i)) / (1 - q^i)` in exact
///   128-bit integers;
/// - asymptotic: `z = (U - n1 n2 / 2 - 1/2) / sigma` with
///   `sigma^2 = n1 n2 / 12 ((n + 1) - sum(t^3 - t) / (n (n - 1)))` over
///   tie groups of size `t`, and `p = 2 (1 - Phi(z))`.
///
/// p is clipped to 1. When every value is tied, sigma is zero and p is 1.
pub fn mann_whitney_u(
    first: &[f64],
    second: &[f64],
    method: MannWhitneyMethod,
) -> Result<MannWhitney, StatsError> {
    check_sample(first, 1)?;
    check_sample(second, 1)?;
    let n_first = first.len();
    let n_second = second.len();
    let ranks = midranks(first, second);
    let rank_sum_first: f64 = ranks.first_ranks.iter().sum();
    let n1 = n_first as f64;
    let n2 = n_second as f64;
    let u_first = rank_sum_first - n1 * (n1 + 1.0) / 2.0;
    let u_larger = u_first.max(n1 * n2 - u_first);
    let method = match method {
        MannWhitneyMethod::Auto => {
            let both_large = n_first > AUTO_EXACT_MAX_SIZE && n_second > AUTO_EXACT_MAX_SIZE;
            if both_large || ranks.tie_term > 0.0 {
                MannWhitneyMethod::Asymptotic
            } else {
                MannWhitneyMethod::Exact
            }
        }
        chosen => chosen,
    };
    let p_value = match method {
        MannWhitneyMethod::Exact => {
            // U is a whole or half number; flooring it is what scipy does.
            2.0 * exact_u_survival(u_larger.floor() as usize, n_first, n_second)?
        }
        _ => {
            let n = n1 + n2;
            let variance = n1 * n2 / 12.0 * ((n + 1.0) - ranks.tie_term / (n * (n - 1.0)));
            if variance <= 0.0 {
                1.0
            } else {
                let z = (u_larger - n1 * n2 / 2.0 - 0.5) / variance.sqrt();
                2.0 * normal_cdf(-z)
            }
        }
    };
    Ok(MannWhitney {
        u_first,
        p_value: p_value.clamp(0.0, 1.0),
        method,
    })
}

/// Midranks of the first sample within the pooled values, and the tie
/// term `sum(t^3 - t)` over groups of tied values.
struct Midranks {
    first_ranks: Vec<f64>,
    tie_term: f64,
}

/// Ranks the pooled values from 1, giving tied values the mean of the
/// ranks they span.
fn midranks(first: &[f64], second: &[f64]) -> Midranks {
    let mut pooled: Vec<(f64, bool)> = first
        .iter()
        .map(|value| (*value, true))
        .chain(second.iter().map(|value| (*value, false)))
        .collect();
    pooled.sort_by(|left, right| left.0.total_cmp(&right.0));
    let mut first_ranks = Vec::with_capacity(first.len());
    let mut tie_term = 0.0;
    let mut group_start = 0;
    while group_start < pooled.len() {
        let value = pooled[group_start].0;
        let group_len = pooled[group_start..]
            .iter()
            .take_while(|entry| entry.0 == value)
            .count();
        // Ranks group_start + 1 ..= group_start + group_len, averaged.
        let midrank = group_start as f64 + (group_len as f64 + 1.0) / 2.0;
        for entry in &pooled[group_start..group_start + group_len] {
            if entry.1 {
                first_ranks.push(midrank);
            }
        }
        let size = group_len as f64;
        tie_term += size * size * size - size;
        group_start += group_len;
    }
    Midranks {
        first_ranks,
        tie_term,
    }
}

/// `P(U >= u)` under the null hypothesis for samples of `n_first` and
/// `n_second` untied values.
fn exact_u_survival(u: usize, n_first: usize, n_second: usize) -> Result<f64, StatsError> {
    let too_large = StatsError::ExactTooLarge { n_first, n_second };
    let counts =
        exact_u_counts(n_first.min(n_second), n_first.max(n_second)).ok_or(too_large.clone())?;
    let max_u = counts.len() - 1;
    // The distribution is symmetric: P(U >= u) = P(U <= max_u - u).
    let Some(complement) = max_u.checked_sub(u) else {
        return Ok(0.0);
    };
    let total = counts
        .iter()
        .try_fold(0_i128, |sum, count| sum.checked_add(*count));
    let below = counts[..=complement].iter().sum::<i128>();
    let total = total.ok_or(too_large)?;
    Ok(below as f64 / total as f64)
}

/// Number of arrangements of `m` first and `n` second values giving each
/// U from 0 to `m n`: the coefficients of `[m + n choose m]_q`. `None` when
/// a count does not fit in an `i128`.
fn exact_u_counts(m: usize, n: usize) -> Option<Vec<i128>> {
    // [n choose 0]_q = 1; step i turns [n + i - 1 choose i - 1]_q into
    // [n + i choose i]_q by multiplying with (1 - q^(n+i)) / (1 - q^i).
    let mut counts: Vec<i128> = vec![1];
    for step in 1..=m {
        let degree = step.checked_mul(n)?;
        let mut next = vec![0_i128; degree + 1];
        for (power, slot) in next.iter_mut().enumerate() {
            let kept = counts.get(power).copied().unwrap_or(0);
            let shifted = power
                .checked_sub(n + step)
                .and_then(|lower| counts.get(lower).copied())
                .unwrap_or(0);
            *slot = kept.checked_sub(shifted)?;
        }
        // Dividing by (1 - q^step) is a running sum with stride `step`;
        // the quotient is a polynomial, so truncating at `degree` is exact.
        for power in step..=degree {
            next[power] = next[power].checked_add(next[power - step])?;
        }
        counts = next;
    }
    Some(counts)
}

/// The smallest two-sided p value the exact Mann-Whitney test can give
/// for samples of `n_first` and `n_second` untied values: the two extreme
/// arrangements out of `C(n1 + n2, n1)`, so `2 / C(n1 + n2, n1)`, at most
/// 1. An empty sample gives 1: no arrangement can be significant.
///
/// When this is not below the chosen alpha, no data of these sizes can
/// ever be called significant, whatever the values.
pub fn mann_whitney_min_p_value(n_first: usize, n_second: usize) -> f64 {
    if n_first == 0 || n_second == 0 {
        return 1.0;
    }
    let small = n_first.min(n_second);
    let large = n_first.max(n_second);
    // C(large + small, small) as the running product prod (large + i) / i,
    // exact in integers while it fits; beyond that the p value is far
    // below any alpha and the logarithm is plenty.
    let mut arrangements: u128 = 1;
    for step in 1..=small {
        let next = arrangements
            .checked_mul((large + step) as u128)
            .map(|product| product / step as u128);
        match next {
            Some(next) => arrangements = next,
            None => {
                let ln_choose = super::distributions::ln_gamma((large + small + 1) as f64)
                    - super::distributions::ln_gamma((small + 1) as f64)
                    - super::distributions::ln_gamma((large + 1) as f64);
                return (2.0 * (-ln_choose).exp()).min(1.0);
            }
        }
    }
    (2.0 / arrangements as f64).min(1.0)
}

/// The smallest number of values per side, with equal sizes, for which
/// the exact two-sided Mann-Whitney test can reach `p < alpha`: 4 at
/// alpha 0.05 (`2 / C(8, 4) = 0.029`, while three a side give at best
/// `2 / C(6, 3) = 0.1`). Errors when alpha is outside `(0, 1)`.
pub fn mann_whitney_min_samples(alpha: f64) -> Result<usize, StatsError> {
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(StatsError::InvalidOption("alpha must be in (0, 1)"));
    }
    // C(2n, n) grows like 4^n, so this ends within a few hundred steps
    // even for the smallest positive alpha.
    let mut n_per_side = 1;
    while mann_whitney_min_p_value(n_per_side, n_per_side) >= alpha {
        n_per_side += 1;
    }
    Ok(n_per_side)
}

/// The outcome of a two-sample t-test.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TTest {
    /// `(mean_first - mean_second) / standard_error`, scipy's sign.
    pub t: f64,
    /// Degrees of freedom: Welch-Satterthwaite for Welch's test,
    /// `n1 + n2 - 2` for Student's.
    pub df: f64,
    /// Two-sided p value.
    pub p_value: f64,
    /// Mean of the first sample.
    pub mean_first: f64,
    /// Mean of the second sample.
    pub mean_second: f64,
    /// Standard error of the difference of the means.
    pub standard_error: f64,
}

/// Welch's t-test of `first` against `second`, two-sided.
///
/// `t = (m1 - m2) / sqrt(v1/n1 + v2/n2)` with sample variances `v`, and
/// `df = (v1/n1 + v2/n2)^2 / ((v1/n1)^2/(n1-1) + (v2/n2)^2/(n2-1))`
/// (Satterthwaite, Biometrics Bulletin 2, 1946); `p = P(|T_df| >= |t|)`.
///
/// Each sample needs two values. When both samples are constant the
/// standard error is zero: the test then reports `df = n1 + n2 - 2` and,
/// for equal constants, `t = 0` and `p = 1`; for different constants,
/// `t = +-inf` and `p = 0`.
pub fn welch_t_test(first: &[f64], second: &[f64]) -> Result<TTest, StatsError> {
    let parts = WelchParts::of(first, second)?;
    t_test_from(
        parts.mean_first,
        parts.mean_second,
        parts.standard_error,
        parts.df,
    )
}

/// Student's two-sample t-test with pooled variance, two-sided:
/// `t = (m1 - m2) / (s_p sqrt(1/n1 + 1/n2))` with
/// `s_p^2 = ((n1 - 1) v1 + (n2 - 1) v2) / (n1 + n2 - 2)` and
/// `df = n1 + n2 - 2` (W. S. Gosset, "The probable error of a mean",
/// Biometrika 6, 1908).
///
/// Each sample needs two values; constant samples follow the conventions
/// of [`welch_t_test`].
pub fn student_t_test(first: &[f64], second: &[f64]) -> Result<TTest, StatsError> {
    check_sample(first, 2)?;
    check_sample(second, 2)?;
    let n1 = first.len() as f64;
    let n2 = second.len() as f64;
    let mean_first = mean_of(first);
    let mean_second = mean_of(second);
    let df = n1 + n2 - 2.0;
    let pooled = ((n1 - 1.0) * variance_of(first, mean_first)
        + (n2 - 1.0) * variance_of(second, mean_second))
        / df;
    let standard_error = (pooled * (1.0 / n1 + 1.0 / n2)).sqrt();
    t_test_from(mean_first, mean_second, standard_error, df)
}

/// The t statistic and its two-sided p value, with the conventions for a
/// zero standard error.
fn t_test_from(
    mean_first: f64,
    mean_second: f64,
    standard_error: f64,
    df: f64,
) -> Result<TTest, StatsError> {
    let difference = mean_first - mean_second;
    let (t, p_value) = if standard_error > 0.0 {
        let t = difference / standard_error;
        (t, student_t_two_sided_p(t, df)?)
    } else if difference == 0.0 {
        (0.0, 1.0)
    } else {
        (difference.signum() * f64::INFINITY, 0.0)
    };
    Ok(TTest {
        t,
        df,
        p_value,
        mean_first,
        mean_second,
        standard_error,
    })
}

/// Means, standard error and degrees of freedom shared by the test and
/// the interval.
struct WelchParts {
    mean_first: f64,
    mean_second: f64,
    standard_error: f64,
    df: f64,
}

impl WelchParts {
    fn of(first: &[f64], second: &[f64]) -> Result<WelchParts, StatsError> {
        check_sample(first, 2)?;
        check_sample(second, 2)?;
        let n1 = first.len() as f64;
        let n2 = second.len() as f64;
        let mean_first = mean_of(first);
        let mean_second = mean_of(second);
        let share_first = variance_of(first, mean_first) / n1;
        let share_second = variance_of(second, mean_second) / n2;
        let variance = share_first + share_second;
        let df = if variance > 0.0 {
            variance * variance
                / (share_first * share_first / (n1 - 1.0)
                    + share_second * share_second / (n2 - 1.0))
        } else {
            n1 + n2 - 2.0
        };
        Ok(WelchParts {
            mean_first,
            mean_second,
            standard_error: variance.sqrt(),
            df,
        })
    }
}

/// A confidence interval on the change of the mean from the first sample
/// to the second.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DifferenceInterval {
    /// Confidence level as a fraction (0.95).
    pub level: f64,
    /// `mean_second - mean_first`.
    pub change: f64,
    /// Lower bound of the change.
    pub low: f64,
    /// Upper bound of the change.
    pub high: f64,
    /// The same in percent of the first mean; `None` when that mean is 0.
    pub relative: Option<RelativeInterval>,
}

/// A change and its interval in percent of a base.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RelativeInterval {
    /// The change, percent of the base, signed.
    pub change_pct: f64,
    /// Lower bound, percent.
    pub low_pct: f64,
    /// Upper bound, percent.
    pub high_pct: f64,
}

/// Welch's confidence interval at `level` (a fraction, 0.95) on
/// `mean_second - mean_first`: `change +- t(1 - (1 - level)/2, df) se`
/// with the Welch-Satterthwaite `df` of [`welch_t_test`]. It matches the
/// interval of scipy's `ttest_ind(first, second, equal_var=False)` with
/// the sign turned, since scipy's is on `mean_first - mean_second`.
///
/// The relative form ("-8.1% [-9.0%, -7.2%]") is the interval on the
/// ratio of the means ([`super::ratio::ratio_interval`]), so that the
/// first mean's own uncertainty counts and no bound falls below -100% for
/// positive figures; `None` when that interval is unbounded.
pub fn welch_interval(
    first: &[f64],
    second: &[f64],
    level: f64,
) -> Result<DifferenceInterval, StatsError> {
    check_level(level)?;
    let parts = WelchParts::of(first, second)?;
    let change = parts.mean_second - parts.mean_first;
    let half_width = if parts.standard_error > 0.0 {
        student_t_upper_quantile(0.5 * (1.0 - level), parts.df)? * parts.standard_error
    } else {
        0.0
    };
    let low = change - half_width;
    let high = change + half_width;
    let relative = super::ratio::ratio_interval(first, second, level)
        .ok()
        .map(|interval| interval.relative());
    Ok(DifferenceInterval {
        level,
        change,
        low,
        high,
        relative,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_counts_are_gaussian_binomials() {
        // [4 choose 2]_q = 1 + q + 2q^2 + q^3 + q^4.
        assert_eq!(exact_u_counts(2, 2), Some(vec![1, 1, 2, 1, 1]));
        let counts = exact_u_counts(5, 7).unwrap();
        assert_eq!(counts.iter().sum::<i128>(), 792);
        assert_eq!(exact_u_counts(0, 7), Some(vec![1]));
        // C(200, 100) is about 9e58: no longer countable in an i128.
        assert_eq!(exact_u_counts(100, 100), None);
    }

    #[test]
    fn exact_survival_is_a_probability() {
        assert_eq!(exact_u_survival(0, 3, 4), Ok(1.0));
        assert_eq!(exact_u_survival(12, 3, 4), Ok(1.0 / 35.0));
        assert_eq!(exact_u_survival(13, 3, 4), Ok(0.0));
    }

    #[test]
    fn degenerate_samples_do_not_panic() {
        let tied = mann_whitney_u(&[2.0; 4], &[2.0; 3], MannWhitneyMethod::Auto).unwrap();
        assert_eq!(tied.p_value, 1.0);
        assert_eq!(tied.method, MannWhitneyMethod::Asymptotic);
        assert_eq!(
            mann_whitney_u(&[], &[1.0], MannWhitneyMethod::Auto),
            Err(StatsError::Empty)
        );
        let large = vec![1.0; 100];
        let large_second: Vec<f64> = (0..100).map(f64::from).collect();
        assert_eq!(
            mann_whitney_u(&large, &large_second, MannWhitneyMethod::Exact),
            Err(StatsError::ExactTooLarge {
                n_first: 100,
                n_second: 100
            })
        );

        let same = welch_t_test(&[5.0, 5.0, 5.0], &[5.0, 5.0]).unwrap();
        assert_eq!((same.t, same.p_value, same.df), (0.0, 1.0, 3.0));
        let same = student_t_test(&[5.0, 5.0, 5.0], &[5.0, 5.0]).unwrap();
        assert_eq!((same.t, same.p_value, same.df), (0.0, 1.0, 3.0));
        let apart = student_t_test(&[5.0, 5.0], &[6.0, 6.0, 6.0]).unwrap();
        assert_eq!((apart.t, apart.p_value), (f64::NEG_INFINITY, 0.0));
        let apart = welch_t_test(&[5.0, 5.0, 5.0], &[6.0, 6.0]).unwrap();
        assert_eq!((apart.t, apart.p_value), (f64::NEG_INFINITY, 0.0));
        let interval = welch_interval(&[5.0, 5.0, 5.0], &[6.0, 6.0], 0.95).unwrap();
        assert_eq!((interval.low, interval.high), (1.0, 1.0));
        assert_eq!(
            welch_t_test(&[1.0], &[1.0, 2.0]),
            Err(StatsError::TooFewValues { needed: 2, got: 1 })
        );
        assert_eq!(
            welch_t_test(&[1.0, f64::INFINITY], &[1.0, 2.0]),
            Err(StatsError::NonFinite { index: 1 })
        );
        let from_zero = welch_interval(&[-1.0, 1.0], &[1.0, 2.0], 0.95).unwrap();
        assert_eq!(from_zero.relative, None);
    }

    #[test]
    fn smallest_reachable_p_and_sample_count() {
        assert_eq!(mann_whitney_min_p_value(3, 3), 0.1);
        assert_eq!(mann_whitney_min_p_value(4, 4), 2.0 / 70.0);
        assert_eq!(mann_whitney_min_p_value(4, 3), 2.0 / 35.0);
        assert_eq!(mann_whitney_min_p_value(0, 9), 1.0);
        assert_eq!(mann_whitney_min_p_value(1, 1), 1.0);
        let huge = mann_whitney_min_p_value(100, 100);
        assert!(huge > 0.0 && huge < 1e-50, "{huge}");
        // The exact test agrees: the most extreme arrangement reaches the
        // bound.
        let extreme = mann_whitney_u(
            &[1.0, 2.0, 3.0, 4.0],
            &[5.0, 6.0, 7.0, 8.0],
            MannWhitneyMethod::Exact,
        )
        .unwrap();
        assert_eq!(extreme.p_value, mann_whitney_min_p_value(4, 4));
        assert_eq!(mann_whitney_min_samples(0.05), Ok(4));
        assert_eq!(mann_whitney_min_samples(0.1), Ok(4));
        assert_eq!(mann_whitney_min_samples(0.11), Ok(3));
        assert_eq!(mann_whitney_min_samples(0.01), Ok(5));
        assert!(mann_whitney_min_samples(1e-300).unwrap() > 400);
        assert!(mann_whitney_min_samples(0.0).is_err());
        assert!(mann_whitney_min_samples(f64::NAN).is_err());
    }

    #[test]
    fn relative_interval_is_a_regression_size() {
        let base = [100.0, 101.0, 99.0, 100.5, 99.5];
        let slower = [92.0, 91.5, 92.5, 91.0, 93.0];
        let interval = welch_interval(&base, &slower, 0.95).unwrap();
        let relative = interval.relative.unwrap();
        assert!((relative.change_pct - -8.0).abs() < 1e-12);
        assert!(relative.low_pct < -8.0 && relative.high_pct > -8.0);
        assert!(relative.high_pct < 0.0);
    }
}
