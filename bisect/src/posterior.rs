//! Probabilistic bisection: a posterior over which commit of the range is
//! the first new one, updated with every sample of every commit, and the
//! choice of the commit whose next sample tells the most.
//!
//! Method: the noisy bisection of M. Horstein ("Sequential transmission
//! using noiseless feedback", IEEE Trans. Inf. Theory 9(3), 1963) in the
//! form analysed by R. Waeber, P. I. Frazier and S. G. Henderson
//! ("Bisection search with noisy responses", SIAM J. Control Optim.
//! 51(3), 2013), on a commit graph rather than an interval; see also
//! R. M. Karp and R. Kleinberg, "Noisy binary search and its
//! applications" (SODA 2007).
//!
//! The hypotheses are "commit `c` is the first new one", one per commit
//! of the range, with a uniform prior. Under `c`, a commit `x` is new
//! exactly when `c` is `x` or one of its ancestors in the range. A commit's
//! samples enter through their log-likelihood ratio `L(x)` of new against
//! old (the decision module's clipped Gaussian model), so the log weight of
//! `c` is the sum of `L(x)` over the measured `x` that descend from `c`.
//!
//! Where to measure next: with the model fixed, one more sample of `x`
//! carries information about the culprit only through "is `x` new", whose
//! probability is `P(x new)`, the posterior mass of `x`'s ancestors; the
//! mutual information of a two-hypothesis Gaussian observation grows as
//! that probability nears one half, so the greedy most-informative choice
//! is the commit whose `P(x new)` is nearest one half (the posterior
//! median on a line, as Horstein measures).

use crate::graph::CommitGraph;

/// Which commits of a range descend from which: `x` is new under the
/// hypothesis "`c` is the first new commit" when `c` is an ancestor of `x`
/// or `x` itself.
#[derive(Clone, Debug)]
pub struct Ancestry {
    n_nodes: usize,
    /// `None` for a straight line (node `i`'s ancestors are `0..=i`);
    /// otherwise one bit set per node, `n_words` words each.
    sets: Option<Vec<u64>>,
    n_words: usize,
}

impl Ancestry {
    /// The ancestry of every node of `graph`. A straight line needs no
    /// sets; a graph with merges keeps one bit per pair of nodes.
    pub fn of(graph: &CommitGraph) -> Ancestry {
        let n_nodes = graph.nodes.len();
        let is_line = graph.nodes.iter().enumerate().all(|(node_idx, node)| {
            if node_idx == 0 {
                node.parents.is_empty()
            } else {
                node.parents.as_slice() == [node_idx - 1]
            }
        });
        if is_line {
            return Ancestry {
                n_nodes,
                sets: None,
                n_words: 0,
            };
        }
        let n_words = n_nodes.div_ceil(64);
        let mut sets = vec![0u64; n_words * n_nodes];
        // Nodes are listed parents first, so every parent's set is complete
        // when its child is reached.
        for node_idx in 0..n_nodes {
            let (before, rest) = sets.split_at_mut(node_idx * n_words);
            let own = &mut rest[..n_words];
            own[node_idx / 64] |= 1 << (node_idx % 64);
            for &parent_idx in &graph.nodes[node_idx].parents {
                if parent_idx >= node_idx {
                    continue;
                }
                let parent_set = &before[parent_idx * n_words..(parent_idx + 1) * n_words];
                for (word, parent_word) in own.iter_mut().zip(parent_set) {
                    *word |= parent_word;
                }
            }
        }
        Ancestry {
            n_nodes,
            sets: Some(sets),
            n_words,
        }
    }

    /// Number of commits in the range.
    pub fn len(&self) -> usize {
        self.n_nodes
    }

    /// True for an empty range.
    pub fn is_empty(&self) -> bool {
        self.n_nodes == 0
    }

    /// `P(a new and b new)`: the posterior mass of the commits that are
    /// ancestors of both (or either itself), from the posterior over the
    /// culprit and `P(x new)` of [`new_probabilities`].
    pub fn common_mass(&self, a: usize, b: usize, culprit: &[f64], p_new: &[f64]) -> f64 {
        match &self.sets {
            None => p_new.get(a.min(b)).copied().unwrap_or(0.0),
            Some(sets) => {
                let set_a = &sets[a * self.n_words..(a + 1) * self.n_words];
                let set_b = &sets[b * self.n_words..(b + 1) * self.n_words];
                let mut mass = 0.0;
                for (word_idx, (&word_a, &word_b)) in set_a.iter().zip(set_b).enumerate() {
                    let mut bits = word_a & word_b;
                    while bits != 0 {
                        let bit = bits.trailing_zeros() as usize;
                        mass += culprit.get(word_idx * 64 + bit).copied().unwrap_or(0.0);
                        bits &= bits - 1;
                    }
                }
                mass.min(1.0)
            }
        }
    }

    /// Calls `each` with every node that is `node_idx` or one of its
    /// ancestors in the range.
    fn for_each_ancestor(&self, node_idx: usize, mut each: impl FnMut(usize)) {
        match &self.sets {
            None => (0..=node_idx.min(self.n_nodes.saturating_sub(1))).for_each(each),
            Some(sets) => {
                let own = &sets[node_idx * self.n_words..(node_idx + 1) * self.n_words];
                for (word_idx, &word) in own.iter().enumerate() {
                    let mut bits = word;
                    while bits != 0 {
                        let bit = bits.trailing_zeros() as usize;
                        each(word_idx * 64 + bit);
                        bits &= bits - 1;
                    }
                }
            }
        }
    }
}

/// Count, sum and sum of squares of some samples.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Moments {
    /// Number of samples.
    pub n: f64,
    /// Their sum.
    pub sum: f64,
    /// The sum of their squares.
    pub sum_sq: f64,
}

impl Moments {
    /// The moments of `values`.
    pub fn of(values: impl IntoIterator<Item = f64>) -> Moments {
        values
            .into_iter()
            .fold(Moments::default(), |acc, value| Moments {
                n: acc.n + 1.0,
                sum: acc.sum + value,
                sum_sq: acc.sum_sq + value * value,
            })
    }

    fn add(self, other: Moments) -> Moments {
        Moments {
            n: self.n + other.n,
            sum: self.sum + other.sum,
            sum_sq: self.sum_sq + other.sum_sq,
        }
    }

    fn sub(self, other: Moments) -> Moments {
        Moments {
            n: self.n - other.n,
            sum: self.sum - other.sum,
            sum_sq: self.sum_sq - other.sum_sq,
        }
    }

    /// The sum of squared deviations from the mean.
    fn residual(self) -> f64 {
        if self.n <= 0.0 {
            return 0.0;
        }
        (self.sum_sq - self.sum * self.sum / self.n).max(0.0)
    }
}

/// The posterior probability of each commit being the first new one.
///
/// `good` and `bad` are the moments of the ends' samples, `nodes` those of
/// the measured commits of the range (the bad end excluded). Under "`c`
/// is the first new commit" the samples fall into an old group (the good
/// end and every commit not descending from `c`) and a new group (the bad
/// end and the commits descending from `c`), each normal with its own
/// mean and a common noise scale. With flat priors on the two means and
/// Jeffreys' prior on the scale, both integrated out, the likelihood of
/// `c` is proportional to `(n_old n_new)^(-1/2) RSS_c^(-(N-2)/2)`, `RSS_c`
/// being the within-group sum of squares and `N` the number of samples
/// (the two-group case of the Bayesian change-point model; see for
/// example D. Barry and J. A. Hartigan, "A Bayesian analysis for change
/// point problems", JASA 88(421), 1993). Nothing is assumed of the means
/// or the noise: every sample of every commit sharpens them, and their
/// uncertainty widens the posterior instead of being ignored. The prior is
/// uniform over the commits. Values should be centred and scaled (for
/// example relative to the good end's mean) so that the sums keep their
/// precision.
pub fn culprit_probabilities(
    ancestry: &Ancestry,
    good: Moments,
    bad: Moments,
    nodes: &[(usize, Moments)],
) -> Vec<f64> {
    let n_nodes = ancestry.len();
    // For every `c`: the moments of the commits descending from it.
    let mut descending = vec![Moments::default(); n_nodes];
    match ancestry.sets {
        None => {
            let mut at = vec![Moments::default(); n_nodes];
            for &(node_idx, moments) in nodes {
                if node_idx < n_nodes {
                    at[node_idx] = at[node_idx].add(moments);
                }
            }
            let mut suffix = Moments::default();
            for node_idx in (0..n_nodes).rev() {
                suffix = suffix.add(at[node_idx]);
                descending[node_idx] = suffix;
            }
        }
        Some(_) => {
            for &(node_idx, moments) in nodes {
                if node_idx < n_nodes {
                    ancestry.for_each_ancestor(node_idx, |ancestor| {
                        descending[ancestor] = descending[ancestor].add(moments);
                    });
                }
            }
        }
    }
    let measured = nodes
        .iter()
        .filter(|(node_idx, _)| *node_idx < n_nodes)
        .fold(Moments::default(), |acc, (_, moments)| acc.add(*moments));
    let n_total = good.n + bad.n + measured.n;
    let log_weights: Vec<f64> = descending
        .iter()
        .map(|&below| {
            let new = bad.add(below);
            let old = good.add(measured.sub(below));
            if old.n < 1.0 || new.n < 1.0 || n_total <= 2.0 {
                return 0.0;
            }
            let rss = (old.residual() + new.residual()).max(f64::MIN_POSITIVE);
            -0.5 * (old.n * new.n).ln() - 0.5 * (n_total - 2.0) * rss.ln()
        })
        .collect();
    let max = log_weights
        .iter()
        .copied()
        .filter(|w| w.is_finite())
        .fold(f64::NEG_INFINITY, f64::max);
    if !max.is_finite() {
        return vec![1.0 / n_nodes.max(1) as f64; n_nodes];
    }
    let mut probabilities: Vec<f64> = log_weights
        .iter()
        .map(|&w| if w.is_finite() { (w - max).exp() } else { 0.0 })
        .collect();
    let total: f64 = probabilities.iter().sum();
    for probability in &mut probabilities {
        *probability /= total;
    }
    probabilities
}

/// `P(x new)` for every commit `x`: the posterior mass of `x` and its
/// ancestors.
pub fn new_probabilities(ancestry: &Ancestry, culprit: &[f64]) -> Vec<f64> {
    let n_nodes = ancestry.len();
    match ancestry.sets {
        None => {
            let mut prefix = 0.0;
            culprit
                .iter()
                .take(n_nodes)
                .map(|&probability| {
                    prefix += probability;
                    prefix.min(1.0)
                })
                .collect()
        }
        Some(_) => (0..n_nodes)
            .map(|node_idx| {
                let mut mass = 0.0;
                ancestry.for_each_ancestor(node_idx, |ancestor| mass += culprit[ancestor]);
                mass.min(1.0)
            })
            .collect(),
    }
}

/// The fewest commits that together hold at least `mass` of the
/// posterior, most probable first.
pub fn credible_set(culprit: &[f64], mass: f64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..culprit.len()).collect();
    order.sort_by(|&a, &b| culprit[b].total_cmp(&culprit[a]).then(a.cmp(&b)));
    let mut held = 0.0;
    let mut set = Vec::new();
    for node_idx in order {
        if held >= mass {
            break;
        }
        held += culprit[node_idx];
        set.push(node_idx);
    }
    set
}

/// Expected information, in nats, that one more sample gives about the
/// culprit when the sampled commit is new with probability `p_new` and the
/// two hypotheses lie `effect_size` noise scales apart (the mutual
/// information of a two-component Gaussian mixture and its label,
/// integrated numerically). Used to estimate how many samples are left.
pub fn information_per_sample(p_new: f64, effect_size: f64) -> f64 {
    let p = p_new.clamp(0.0, 1.0);
    if p <= 0.0 || p >= 1.0 || !effect_size.is_finite() || effect_size <= 0.0 {
        return 0.0;
    }
    let entropy = |q: f64| {
        if q <= 0.0 || q >= 1.0 {
            0.0
        } else {
            -q * q.ln() - (1.0 - q) * (1.0 - q).ln()
        }
    };
    // I = H(label) - E_y[H(label | y)], over y on a grid wide enough for
    // both components.
    let d = effect_size;
    let (low, high) = (-6.0, d + 6.0);
    let n_points = 400;
    let step = (high - low) / f64::from(n_points);
    let density = |y: f64, mean: f64| {
        (-(y - mean) * (y - mean) / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt()
    };
    let mut conditional = 0.0;
    for point_idx in 0..n_points {
        let y = low + (f64::from(point_idx) + 0.5) * step;
        let f_new = p * density(y, d);
        let f_old = (1.0 - p) * density(y, 0.0);
        let f = f_new + f_old;
        if f > 0.0 {
            conditional += f * entropy(f_new / f) * step;
        }
    }
    (entropy(p) - conditional).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{CommitInfo, Node};

    fn diamond() -> CommitGraph {
        // 0 -> 1 -> 3, 0 -> 2 -> 3 (3 merges 1 and 2), 3 -> 4.
        let parents = [vec![], vec![0], vec![0], vec![1, 2], vec![3]];
        CommitGraph {
            good: CommitInfo::bare("good"),
            nodes: parents
                .iter()
                .enumerate()
                .map(|(node_idx, parents)| Node {
                    info: CommitInfo::bare(format!("n{node_idx}")),
                    parents: parents.clone(),
                })
                .collect(),
            first_parent: false,
        }
    }

    fn ends() -> (Moments, Moments) {
        (Moments::of([0.0, 0.1, -0.1]), Moments::of([1.0, 1.1, 0.9]))
    }

    #[test]
    fn uniform_without_evidence() {
        let ancestry = Ancestry::of(&CommitGraph::linear(4));
        let (good, bad) = ends();
        let culprit = culprit_probabilities(&ancestry, good, bad, &[]);
        for probability in &culprit {
            assert!((probability - 0.25).abs() < 1e-12);
        }
        let new = new_probabilities(&ancestry, &culprit);
        for (got, want) in new.iter().zip([0.25, 0.5, 0.75, 1.0]) {
            assert!((got - want).abs() < 1e-12);
        }
    }

    #[test]
    fn two_hypotheses_by_hand() {
        // Good end 0 and 0.1, bad end 1 and 1.1, the one commit before
        // the bad end measured once at 0.9. Under "it is the culprit" the
        // groups are {0, 0.1} and {0.9, 1, 1.1}: RSS 0.005 + 0.02; under
        // "the bad end is" they are {0, 0.1, 0.9} and {1, 1.1}: RSS
        // 0.48667 + 0.005. Both have n_old n_new = 6 and N = 5, so the odds
        // are (0.491667 / 0.025)^(3/2).
        let ancestry = Ancestry::of(&CommitGraph::linear(2));
        let culprit = culprit_probabilities(
            &ancestry,
            Moments::of([0.0, 0.1]),
            Moments::of([1.0, 1.1]),
            &[(0, Moments::of([0.9]))],
        );
        let rss_old = 1.0 / 9.0 + (0.1f64 - 1.0 / 3.0).powi(2) + (0.9f64 - 1.0 / 3.0).powi(2);
        let odds = ((rss_old + 0.005) / 0.025f64).powf(1.5);
        assert!(
            (culprit[0] - odds / (1.0 + odds)).abs() < 1e-9,
            "{culprit:?}"
        );
        assert!((culprit[0] + culprit[1] - 1.0).abs() < 1e-12);
        assert!(culprit[0] > 0.98);
    }

    #[test]
    fn a_new_looking_commit_moves_mass_to_its_ancestors() {
        let ancestry = Ancestry::of(&CommitGraph::linear(8));
        let (good, bad) = ends();
        let culprit = culprit_probabilities(&ancestry, good, bad, &[(3, Moments::of([1.0, 0.95]))]);
        let at_or_before: f64 = culprit[..=3].iter().sum();
        assert!(at_or_before > 0.99, "{culprit:?}");
        // Nothing tells the four apart.
        for node_idx in 1..=3 {
            assert!((culprit[node_idx] - culprit[0]).abs() < 1e-12);
        }
    }

    #[test]
    fn merges_count_every_path() {
        let graph = diamond();
        let ancestry = Ancestry::of(&graph);
        assert!(ancestry.sets.is_some());
        // Node 2 looks old: every hypothesis that makes it new (0 and 2)
        // loses; 1, 3 and 4 stay equal.
        let (good, bad) = ends();
        let old_looking = Moments::of([0.0, 0.05, -0.05, 0.02]);
        let culprit = culprit_probabilities(&ancestry, good, bad, &[(2, old_looking)]);
        assert!(culprit[0] < 1e-4 && culprit[2] < 1e-4, "{culprit:?}");
        assert!((culprit[1] - culprit[3]).abs() < 1e-12);
        assert!((culprit[3] - culprit[4]).abs() < 1e-12);
        // P(3 new) holds 0..=3 (all of its ancestors), P(1 new) only 0
        // and 1.
        let new = new_probabilities(&ancestry, &culprit);
        assert!((new[3] - (culprit[0] + culprit[1] + culprit[2] + culprit[3])).abs() < 1e-12);
        assert!((new[1] - (culprit[0] + culprit[1])).abs() < 1e-12);
    }

    #[test]
    fn line_and_sets_agree() {
        // The same line in the set form the graphs with merges use.
        let line = CommitGraph::linear(70);
        let ancestry_line = Ancestry::of(&line);
        let n_words = 70usize.div_ceil(64);
        let mut sets = vec![0u64; n_words * 70];
        for node_idx in 0..70 {
            for ancestor in 0..=node_idx {
                sets[node_idx * n_words + ancestor / 64] |= 1 << (ancestor % 64);
            }
        }
        let ancestry_sets = Ancestry {
            n_nodes: 70,
            sets: Some(sets),
            n_words,
        };
        let (good, bad) = ends();
        let nodes = [
            (10, Moments::of([0.1, 0.0])),
            (40, Moments::of([0.6])),
            (65, Moments::of([0.9, 1.2])),
            (68, Moments::of([1.0])),
        ];
        let a = culprit_probabilities(&ancestry_line, good, bad, &nodes);
        let b = culprit_probabilities(&ancestry_sets, good, bad, &nodes);
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-12);
        }
        let a = new_probabilities(&ancestry_line, &a);
        let b = new_probabilities(&ancestry_sets, &b);
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() < 1e-12);
        }
    }

    #[test]
    fn posteriors_are_probabilities() {
        let mut rng = crate::sim::Rng::new(3);
        for n_nodes in [1, 2, 17, 130] {
            let ancestry = Ancestry::of(&CommitGraph::linear(n_nodes));
            let (good, bad) = ends();
            let nodes: Vec<(usize, Moments)> = (0..n_nodes.min(9))
                .map(|_| {
                    let node_idx = rng.below(n_nodes);
                    (node_idx, Moments::of((0..3).map(|_| rng.normal())))
                })
                .collect();
            let culprit = culprit_probabilities(&ancestry, good, bad, &nodes);
            assert!((culprit.iter().sum::<f64>() - 1.0).abs() < 1e-9);
            assert!(culprit.iter().all(|p| (0.0..=1.0).contains(p)));
            let new = new_probabilities(&ancestry, &culprit);
            assert!(new.windows(2).all(|pair| pair[0] <= pair[1] + 1e-12));
            assert!((new[n_nodes - 1] - 1.0).abs() < 1e-9);
        }
    }

    #[test]
    fn credible_set_is_smallest() {
        assert_eq!(credible_set(&[0.1, 0.6, 0.3], 0.85), vec![1, 2]);
        assert_eq!(credible_set(&[0.1, 0.6, 0.3], 0.5), vec![1]);
    }

    #[test]
    fn information_peaks_at_one_half() {
        // For separated hypotheses the information of one sample nears
        // the entropy of the label, ln 2 at p = 1/2.
        let far = information_per_sample(0.5, 12.0);
        assert!((far - std::f64::consts::LN_2).abs() < 1e-3, "{far}");
        let half = information_per_sample(0.5, 1.0);
        let skewed = information_per_sample(0.1, 1.0);
        assert!(half > skewed && skewed > 0.0);
        assert_eq!(information_per_sample(1.0, 1.0), 0.0);
    }
}
