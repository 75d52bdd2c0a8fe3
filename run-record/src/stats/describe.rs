//! Descriptive statistics of one sample: mean, standard deviation,
//! percentiles, and the signed relative change between two numbers.
//!
//! The mean and variance use the corrected two-pass algorithm (Chan, Golub
//! and LeVeque, "Algorithms for computing the sample variance", The
//! American Statistician 37, 1983), which stays accurate when the spread
//! is tiny next to the mean, as with throughput in bits per second.

use super::{StatsError, check_finite};

/// Arithmetic mean of finite, non-empty `values`, not checked.
///
/// A second pass adds the mean residual, which removes most of the
/// rounding error of the first sum.
pub(crate) fn mean_of(values: &[f64]) -> f64 {
    let n_values = values.len() as f64;
    let first = values.iter().sum::<f64>() / n_values;
    let residual = values.iter().map(|value| value - first).sum::<f64>() / n_values;
    first + residual
}

/// Sample variance (divisor `n - 1`) of finite `values` with at least two
/// values and their mean, not checked.
pub(crate) fn variance_of(values: &[f64], mean: f64) -> f64 {
    let n_values = values.len() as f64;
    let (sum_sq, sum) = values.iter().fold((0.0, 0.0), |(sum_sq, sum), value| {
        let deviation = value - mean;
        (sum_sq + deviation * deviation, sum + deviation)
    });
    ((sum_sq - sum * sum / n_values) / (n_values - 1.0)).max(0.0)
}

/// Checks that `values` are non-empty and finite.
pub(crate) fn check_sample(values: &[f64], needed: usize) -> Result<(), StatsError> {
    if values.is_empty() {
        return Err(StatsError::Empty);
    }
    if values.len() < needed {
        return Err(StatsError::TooFewValues {
            needed,
            got: values.len(),
        });
    }
    check_finite(values)
}

/// Arithmetic mean.
pub fn mean(values: &[f64]) -> Result<f64, StatsError> {
    check_sample(values, 1)?;
    Ok(mean_of(values))
}

/// Sample variance with Bessel's correction (divisor `n - 1`); needs two
/// values.
pub fn sample_variance(values: &[f64]) -> Result<f64, StatsError> {
    check_sample(values, 2)?;
    Ok(variance_of(values, mean_of(values)))
}

/// Sample standard deviation (divisor `n - 1`, as numpy's `ddof=1`); needs
/// two values.
pub fn sample_stddev(values: &[f64]) -> Result<f64, StatsError> {
    Ok(sample_variance(values)?.sqrt())
}

/// The `pct`-th percentile (0 to 100) of `values`, interpolating linearly
/// between order statistics: numpy's and scipy's default (`'linear'`,
/// Hyndman and Fan's definition 7). With sorted values `x_0..x_{n-1}`, the
/// percentile sits at position `h = (n - 1) pct / 100` and is
/// `x_floor(h) + (h - floor(h)) (x_floor(h)+1 - x_floor(h))`.
pub fn percentile(values: &[f64], pct: f64) -> Result<f64, StatsError> {
    Ok(percentiles(values, &[pct])?[0])
}

/// Several percentiles of `values` with one sort; see [`percentile`].
pub fn percentiles(values: &[f64], pcts: &[f64]) -> Result<Vec<f64>, StatsError> {
    check_sample(values, 1)?;
    if let Some(&bad) = pcts.iter().find(|pct| !(0.0..=100.0).contains(*pct)) {
        return Err(StatsError::InvalidPercentile(bad));
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    Ok(pcts
        .iter()
        .map(|pct| percentile_of_sorted(&sorted, *pct))
        .collect())
}

/// Linear interpolation between order statistics of non-empty `sorted`.
fn percentile_of_sorted(sorted: &[f64], pct: f64) -> f64 {
    let position = (sorted.len() - 1) as f64 * pct / 100.0;
    let below_idx = position.floor() as usize;
    let fraction = position - below_idx as f64;
    match sorted.get(below_idx + 1) {
        Some(above) if fraction > 0.0 => {
            let below = sorted[below_idx];
            below + fraction * (above - below)
        }
        _ => sorted[below_idx],
    }
}

/// Relative change from `from` to `to` in percent, with a sign: negative
/// when `to` is below `from`. The base is `|from|`, so the sign says the
/// direction even for a negative base. A zero base is an error.
pub fn relative_change_pct(from: f64, to: f64) -> Result<f64, StatsError> {
    check_finite(&[from, to])?;
    if from == 0.0 {
        return Err(StatsError::ZeroBase);
    }
    Ok((to - from) / from.abs() * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mean_and_stddev_of_small_samples() {
        assert_eq!(mean(&[1.0, 2.0, 6.0]), Ok(3.0));
        assert_eq!(sample_variance(&[1.0, 2.0, 6.0]), Ok(7.0));
        assert_eq!(sample_stddev(&[4.0, 4.0, 4.0]), Ok(0.0));
        assert_eq!(mean(&[]), Err(StatsError::Empty));
        assert_eq!(
            sample_stddev(&[1.0]),
            Err(StatsError::TooFewValues { needed: 2, got: 1 })
        );
        assert_eq!(
            mean(&[1.0, f64::NAN]),
            Err(StatsError::NonFinite { index: 1 })
        );
    }

    #[test]
    fn variance_survives_a_large_offset() {
        // A naive sum of squares loses every digit here.
        let values = [1e9 + 4.0, 1e9 + 7.0, 1e9 + 13.0, 1e9 + 16.0];
        assert_eq!(sample_variance(&values), Ok(30.0));
    }

    #[test]
    fn percentile_interpolates_linearly() {
        let values = [15.0, 20.0, 35.0, 40.0, 50.0];
        assert_eq!(percentile(&values, 0.0), Ok(15.0));
        assert_eq!(percentile(&values, 40.0), Ok(29.0));
        assert_eq!(percentile(&values, 100.0), Ok(50.0));
        assert_eq!(percentile(&[7.0], 99.0), Ok(7.0));
        assert_eq!(
            percentile(&values, 100.5),
            Err(StatsError::InvalidPercentile(100.5))
        );
        assert!(percentile(&values, f64::NAN).is_err());
    }

    #[test]
    fn relative_change_has_a_sign() {
        assert_eq!(relative_change_pct(200.0, 150.0), Ok(-25.0));
        assert_eq!(relative_change_pct(-200.0, -100.0), Ok(50.0));
        assert_eq!(relative_change_pct(0.0, 1.0), Err(StatsError::ZeroBase));
    }
}
