//! Estimates of location and scale from samples: the plain mean and
//! variance, and the robust estimates the decision's model rests on.
//!
//! The location is Huber's M-estimate (P. J. Huber, "Robust Estimation of
//! a Location Parameter", Annals of Mathematical Statistics 35(1), 1964),
//! computed by iteratively reweighted means from the median. The scale is
//! the pooled within-group standard deviation with residuals winsorised
//! at three robust scales (the median absolute deviation, made consistent
//! for the normal standard deviation).

/// Tuning constant of the Huber location estimate, in noise scales.
pub const HUBER_K: f64 = 1.5;

/// Mean and sample variance (n - 1).
pub fn mean_var(values: &[f64]) -> (f64, f64) {
    let n_samples = values.len();
    if n_samples == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / n_samples as f64;
    if n_samples < 2 {
        return (mean, 0.0);
    }
    let sum_sq: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (mean, sum_sq / (n_samples - 1) as f64)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n_samples = values.len();
    if n_samples == 0 {
        return f64::NAN;
    }
    if n_samples % 2 == 1 {
        values[n_samples / 2]
    } else {
        (values[n_samples / 2 - 1] + values[n_samples / 2]) / 2.0
    }
}

/// Huber M-estimate of location with scale `sigma`, by iteratively
/// reweighted means from the median.
pub fn huber_location(values: &[f64], sigma: f64) -> f64 {
    let mut sorted = values.to_vec();
    let mut location = median(&mut sorted);
    if sigma.is_nan() || sigma <= 0.0 || values.len() < 3 {
        return values.iter().sum::<f64>() / values.len() as f64;
    }
    let cutoff = HUBER_K * sigma;
    for _ in 0..30 {
        let mut weighted_sum = 0.0;
        let mut weight_total = 0.0;
        for &x in values {
            let residual = (x - location).abs();
            let weight = if residual <= cutoff {
                1.0
            } else {
                cutoff / residual
            };
            weighted_sum += weight * x;
            weight_total += weight;
        }
        let next = weighted_sum / weight_total;
        let converged = (next - location).abs() <= 1e-12 * location.abs().max(sigma);
        location = next;
        if converged {
            break;
        }
    }
    location
}

/// Pooled within-group standard deviation, residuals winsorised at three
/// robust scales. Groups with one sample add nothing.
pub fn pooled_scale(groups: &[&[f64]]) -> f64 {
    pooled_scale_dof(groups).0
}

/// [`pooled_scale`] with its degrees of freedom (residuals less groups).
pub(crate) fn pooled_scale_dof(groups: &[&[f64]]) -> (f64, usize) {
    let mut abs_deviations = Vec::new();
    let mut n_residuals = 0usize;
    let mut n_groups = 0usize;
    for group in groups.iter().filter(|g| g.len() >= 2) {
        let mut sorted = group.to_vec();
        let centre = median(&mut sorted);
        abs_deviations.extend(group.iter().map(|x| (x - centre).abs()));
        n_residuals += group.len();
        n_groups += 1;
    }
    if n_residuals <= n_groups {
        return (0.0, 0);
    }
    // 1.4826 makes the median absolute deviation consistent for the normal
    // standard deviation; the square root corrects for the centres having
    // been fitted to the same samples.
    let mad = median(&mut abs_deviations) * 1.4826;
    let robust = mad * (n_residuals as f64 / (n_residuals - n_groups) as f64).sqrt();
    let limit = 3.0 * robust;
    let mut sum_sq = 0.0;
    for group in groups.iter().filter(|g| g.len() >= 2) {
        let (mean, _) = mean_var(group);
        for &x in group.iter() {
            let residual = x - mean;
            let residual = if limit > 0.0 {
                residual.clamp(-limit, limit)
            } else {
                residual
            };
            sum_sq += residual * residual;
        }
    }
    let dof = n_residuals - n_groups;
    ((sum_sq / dof as f64).sqrt(), dof)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huber_location_resists_an_outlier() {
        let values = [10.0, 10.1, 9.9, 10.0, 10.05, 0.0];
        let location = huber_location(&values, 0.1);
        assert!((location - 10.0).abs() < 0.1, "{location}");
    }
}
