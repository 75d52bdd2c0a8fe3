//! Where the next sample goes while others are in flight: with K
//! measurements at once, the posterior chooses the commits of a round
//! together, and every slot that comes free gets the commit that adds
//! most to what the samples in flight will tell with it.
//!
//! Method: greedy maximisation of the information the samples give
//! together about the culprit. A sample of commit `x` tells the culprit
//! through `b_x`, "is `x` new" (1 or 0), seen through Gaussian noise with
//! the two hypotheses `d` noise scales apart (`d` the model's effect
//! size). The information of several such samples is taken in the
//! Gaussian approximation `1/2 log det(I + d^2 S)`, `S` the posterior
//! covariance of their `b`: `S(x, x) = p_x (1 - p_x)` with `p_x = P(x
//! new)`, and `S(x, y) = P(x new and y new) - p_x p_y`, the mass of the
//! common ancestors less the product. The samples in flight are held
//! fixed, as if already answered; the free slot gets the commit `x` that
//! raises the determinant most, that is the largest Schur complement
//! `S(x, x) - d^2 s' (I + d^2 S_f)^-1 s`, `S_f` the covariance of the
//! samples in flight and `s` that of `x` with them.
//!
//! What that does: with nothing in flight it is the commit whose `P(new)`
//! is nearest one half, the choice of one measurement at a time (the
//! machine keeps that path as it is). With strong samples (a step
//! several times the noise) a sample in flight at the median makes the
//! next go to a quantile either side, the K samples of a round splitting
//! the posterior as a (K+1)-section does; with weak samples (a step near
//! the noise) the covariance term is small and the next sample goes near
//! the median again, as repeats there tell more than samples spread out
//! (the information of weak samples adds up, that of strong ones
//! saturates at the entropy of what they split). Compare the batch
//! designs of noisy search in P. I. Frazier, S. G. Henderson and
//! R. Waeber, "Probabilistic bisection converges almost as quickly as
//! stochastic approximation" (Math. Oper. Res. 44(2), 2019), and the
//! log-determinant criterion of D-optimal batch designs.

use crate::posterior::Ancestry;

/// The information a sample of each commit adds beside the samples in
/// flight, for one choice.
pub struct JointInformation<'a> {
    ancestry: &'a Ancestry,
    culprit: &'a [f64],
    p_new: &'a [f64],
    in_flight: Vec<usize>,
    /// `d^2`, the squared effect size.
    d2: f64,
    /// The Cholesky factor of `I + d^2 S_f`, row-major, lower.
    factor: Vec<f64>,
}

impl<'a> JointInformation<'a> {
    /// The information beside the samples `in_flight` (commits of the
    /// range, repeated as often as they run), under the posterior
    /// `culprit` with `P(x new)` in `p_new`, for samples `effect_size`
    /// noise scales apart.
    pub fn new(
        ancestry: &'a Ancestry,
        culprit: &'a [f64],
        p_new: &'a [f64],
        in_flight: Vec<usize>,
        effect_size: f64,
    ) -> JointInformation<'a> {
        let d2 = if effect_size.is_finite() {
            effect_size * effect_size
        } else {
            0.0
        };
        let n_flight = in_flight.len();
        let mut matrix = vec![0.0; n_flight * n_flight];
        for row in 0..n_flight {
            for col in 0..=row {
                let covariance =
                    covariance(ancestry, culprit, p_new, in_flight[row], in_flight[col]);
                let value = d2 * covariance + if row == col { 1.0 } else { 0.0 };
                matrix[row * n_flight + col] = value;
                matrix[col * n_flight + row] = value;
            }
        }
        JointInformation {
            ancestry,
            culprit,
            p_new,
            in_flight,
            d2,
            factor: cholesky(&matrix, n_flight),
        }
    }

    /// What a sample of `node_idx` adds to the determinant (the Schur
    /// complement above): larger is better, 0 adds nothing.
    pub fn gain(&self, node_idx: usize) -> f64 {
        let p = self.p_new.get(node_idx).copied().unwrap_or(0.0);
        let own = p * (1.0 - p);
        if self.in_flight.is_empty() {
            return own;
        }
        let cross: Vec<f64> = self
            .in_flight
            .iter()
            .map(|&other| covariance(self.ancestry, self.culprit, self.p_new, node_idx, other))
            .collect();
        let solved = forward_substitute(&self.factor, &cross);
        let explained: f64 = solved.iter().map(|v| v * v).sum();
        (own - self.d2 * explained).max(0.0)
    }
}

fn covariance(ancestry: &Ancestry, culprit: &[f64], p_new: &[f64], a: usize, b: usize) -> f64 {
    let p_a = p_new.get(a).copied().unwrap_or(0.0);
    let p_b = p_new.get(b).copied().unwrap_or(0.0);
    ancestry.common_mass(a, b, culprit, p_new) - p_a * p_b
}

/// The lower Cholesky factor of the symmetric positive definite `n` by
/// `n` `matrix` (the identity plus a covariance, so its diagonal is at
/// least 1 and no pivot vanishes).
fn cholesky(matrix: &[f64], n: usize) -> Vec<f64> {
    let mut factor = vec![0.0; n * n];
    for row in 0..n {
        for col in 0..=row {
            let dot: f64 = (0..col)
                .map(|k| factor[row * n + k] * factor[col * n + k])
                .sum();
            let value = matrix[row * n + col] - dot;
            factor[row * n + col] = if row == col {
                value.max(1e-12).sqrt()
            } else {
                value / factor[col * n + col]
            };
        }
    }
    factor
}

/// `L^-1 v` for the lower factor `L`: its squared norm is `v' M^-1 v`.
fn forward_substitute(factor: &[f64], vector: &[f64]) -> Vec<f64> {
    let n = vector.len();
    let mut solved = vec![0.0; n];
    for row in 0..n {
        let dot: f64 = (0..row).map(|k| factor[row * n + k] * solved[k]).sum();
        solved[row] = (vector[row] - dot) / factor[row * n + row];
    }
    solved
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::CommitGraph;
    use crate::posterior::new_probabilities;

    fn uniform(n_nodes: usize) -> (Ancestry, Vec<f64>, Vec<f64>) {
        let ancestry = Ancestry::of(&CommitGraph::linear(n_nodes));
        let culprit = vec![1.0 / n_nodes as f64; n_nodes];
        let p_new = new_probabilities(&ancestry, &culprit);
        (ancestry, culprit, p_new)
    }

    fn best(info: &JointInformation<'_>, n_nodes: usize) -> usize {
        (0..n_nodes)
            .max_by(|&a, &b| info.gain(a).total_cmp(&info.gain(b)).then(b.cmp(&a)))
            .unwrap()
    }

    #[test]
    fn alone_it_is_the_median() {
        let (ancestry, culprit, p_new) = uniform(100);
        let info = JointInformation::new(&ancestry, &culprit, &p_new, Vec::new(), 3.0);
        assert_eq!(best(&info, 100), 49);
    }

    #[test]
    fn strong_samples_split_the_posterior_and_weak_ones_repeat_the_median() {
        let (ancestry, culprit, p_new) = uniform(99);
        // A step four noise scales high: beside a sample at the median
        // the next goes to a quartile.
        let strong = JointInformation::new(&ancestry, &culprit, &p_new, vec![49], 4.0);
        let next = best(&strong, 99);
        assert!(
            (20..=30).contains(&next) || (68..=78).contains(&next),
            "{next}"
        );
        // Three at the quartiles and the median: the next strong one
        // splits a quarter.
        let spread = JointInformation::new(&ancestry, &culprit, &p_new, vec![24, 49, 74], 4.0);
        let next = best(&spread, 99);
        assert!(![24, 49, 74].contains(&next), "{next}");
        // A step a third of the noise: the median again.
        let weak = JointInformation::new(&ancestry, &culprit, &p_new, vec![49], 0.3);
        let next = best(&weak, 99);
        assert!((45..=53).contains(&next), "{next}");
    }

    #[test]
    fn gains_shrink_beside_what_is_in_flight() {
        let (ancestry, culprit, p_new) = uniform(64);
        let alone = JointInformation::new(&ancestry, &culprit, &p_new, Vec::new(), 2.0);
        let beside = JointInformation::new(&ancestry, &culprit, &p_new, vec![31, 31], 2.0);
        for node_idx in 0..64 {
            assert!(beside.gain(node_idx) <= alone.gain(node_idx) + 1e-12);
            assert!(beside.gain(node_idx) >= 0.0);
        }
        assert!(beside.gain(31) < alone.gain(31) / 2.0);
    }
}
