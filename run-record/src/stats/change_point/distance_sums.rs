//! Sums of the distances from each value of a series to the values before
//! it and to the values after it, in O(n log n) rather than O(n^2).
//!
//! For one value `x_i`, the earlier values below it contribute
//! `count_below * x_i - sum_below` and those above it `sum_above -
//! count_above * x_i`; counts and sums over the earlier values whose rank
//! is below (or above) a given rank come from Fenwick (binary indexed)
//! trees filled in index order. The sums to later values are the same
//! computation on the reversed series.
//!
//! Rounding: the values are taken relative to the series' median first,
//! so that a large level with a small spread (9e9 +- 1 bits/s) does not
//! lose its differences in sums of the large level. Equal values share a
//! rank and contribute nothing to each other, exactly like their zero
//! distance does; a run of equal values therefore sums to exactly zero.

/// For each index `i` of `values`: `sum_{j<i} |x_i - x_j|` and
/// `sum_{j>i} |x_i - x_j|`, up to rounding. `values` must be finite.
pub(super) fn distance_sums(values: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let len = values.len();
    if len == 0 {
        return (Vec::new(), Vec::new());
    }
    let mut order: Vec<usize> = (0..len).collect();
    order.sort_unstable_by(|&left, &right| values[left].total_cmp(&values[right]));
    // Dense ranks: equal values (0.0 and -0.0 too) share one.
    let mut ranks = vec![0; len];
    let mut rank = 0;
    for pair in order.windows(2) {
        if values[pair[1]] != values[pair[0]] {
            rank += 1;
        }
        ranks[pair[1]] = rank;
    }
    let n_ranks = rank + 1;
    // An element of the series, so that values near it are subtracted
    // exactly (Sterbenz) and integers stay integers.
    let reference = values[order[len / 2]];
    let centred: Vec<f64> = values.iter().map(|value| value - reference).collect();
    let to_earlier = sums_to_earlier(&centred, &ranks, n_ranks);
    let centred_reversed: Vec<f64> = centred.iter().rev().copied().collect();
    let ranks_reversed: Vec<usize> = ranks.iter().rev().copied().collect();
    let mut to_later = sums_to_earlier(&centred_reversed, &ranks_reversed, n_ranks);
    to_later.reverse();
    (to_earlier, to_later)
}

/// `sum_{j<i} |x_i - x_j|` for each `i`, from values and their dense
/// ranks in `0..n_ranks`.
fn sums_to_earlier(values: &[f64], ranks: &[usize], n_ranks: usize) -> Vec<f64> {
    let mut counts = Fenwick::<usize>::new(n_ranks);
    // Sums by rank, and by rank counted from the top: each side's sum is
    // then one prefix query, not a difference of two large sums.
    let mut sums_up = Fenwick::<f64>::new(n_ranks);
    let mut sums_down = Fenwick::<f64>::new(n_ranks);
    let mut sums = Vec::with_capacity(values.len());
    for (idx, (&value, &rank)) in values.iter().zip(ranks).enumerate() {
        let down_rank = n_ranks - 1 - rank;
        let count_below = counts.prefix(rank);
        let count_above = idx - counts.prefix(rank + 1);
        // Each side is a sum of non-negative distances; rounding must not
        // make it negative.
        let below = (count_below as f64 * value - sums_up.prefix(rank)).max(0.0);
        let above = (sums_down.prefix(down_rank) - count_above as f64 * value).max(0.0);
        sums.push(below + above);
        counts.add(rank, 1);
        sums_up.add(rank, value);
        sums_down.add(down_rank, value);
    }
    sums
}

/// A Fenwick tree: adds at a position and sums a prefix, each in
/// O(log len).
struct Fenwick<T> {
    /// `tree[k - 1]` holds the sum of the `k & k.wrapping_neg()`
    /// positions ending at position `k - 1`.
    tree: Vec<T>,
}

impl<T: Copy + Default + std::ops::AddAssign> Fenwick<T> {
    /// A tree of `len` zeros.
    fn new(len: usize) -> Fenwick<T> {
        Fenwick {
            tree: vec![T::default(); len],
        }
    }

    /// Adds `value` at `position`.
    fn add(&mut self, position: usize, value: T) {
        let mut k = position + 1;
        while k <= self.tree.len() {
            self.tree[k - 1] += value;
            k += k & k.wrapping_neg();
        }
    }

    /// The sum of positions `0..end`.
    fn prefix(&self, end: usize) -> T {
        let mut sum = T::default();
        let mut k = end;
        while k > 0 {
            sum += self.tree[k - 1];
            k -= k & k.wrapping_neg();
        }
        sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sums by definition, one distance at a time.
    fn quadratic(values: &[f64]) -> (Vec<f64>, Vec<f64>) {
        let to = |idx: usize, others: &[f64]| -> f64 {
            others.iter().map(|other| (values[idx] - other).abs()).sum()
        };
        (0..values.len())
            .map(|idx| (to(idx, &values[..idx]), to(idx, &values[idx + 1..])))
            .unzip()
    }

    #[test]
    fn integers_and_ties_sum_exactly() {
        let values = [
            3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0, -0.0, 0.0,
        ];
        assert_eq!(distance_sums(&values), quadratic(&values));
        assert_eq!(distance_sums(&[]), (vec![], vec![]));
        assert_eq!(distance_sums(&[7.0]), (vec![0.0], vec![0.0]));
        // A run of one value sums to zero whatever the value.
        let run = [0.1; 9];
        assert_eq!(distance_sums(&run), (vec![0.0; 9], vec![0.0; 9]));
    }

    #[test]
    fn small_spread_on_a_large_level_keeps_its_differences() {
        // 9e9 +- 1 with all the bits of the fraction used: summed as they
        // are, not relative to the median, these values would leave
        // errors of about 4e-6 in the sums of distances.
        let values: Vec<f64> = (0..200_u32)
            .map(|idx| 9e9 + (f64::from(idx) * 0.618_034).fract() * 2.0 - 1.0)
            .collect();
        let (to_earlier, to_later) = distance_sums(&values);
        let (want_earlier, want_later) = quadratic(&values);
        let sums = to_earlier.iter().chain(&to_later);
        let wanted = want_earlier.iter().chain(&want_later);
        for (sum, want) in sums.zip(wanted) {
            assert!((sum - want).abs() <= 1e-12 * want, "{sum} {want}");
        }
    }
}
