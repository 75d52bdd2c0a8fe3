//! The layout of the latency histogram a record keeps (`latency_histogram`
//! of an iteration), and what can be checked and read of it without the
//! code that recorded it.
//!
//! Layout (the scheme of HdrHistogram, with a fixed precision): values
//! below `2 * SUB_BUCKETS` nanoseconds have a bucket each; above, every
//! power of two is split into `SUB_BUCKETS` equal buckets, so a bucket is
//! at most 1/64 of its values wide. Up to 2^40 ns (18 minutes) that is
//! [`N_BUCKETS`] buckets. A record names each non-empty bucket by the
//! highest value it holds ([`bucket_high`]).

use super::LatencyHistogram;

/// Sub-buckets per power of two, as a power of two.
const SUB_BUCKET_BITS: u32 = 6;
/// Sub-buckets per power of two: the relative precision is 1/64.
pub const SUB_BUCKETS: u64 = 1 << SUB_BUCKET_BITS;
/// Largest value recorded, nanoseconds; larger ones are clamped to it.
pub const MAX_NS: u64 = (1 << 40) - 1;
/// Buckets of a histogram that can hold every value up to [`MAX_NS`].
pub const N_BUCKETS: usize =
    (2 * SUB_BUCKETS + (40 - SUB_BUCKET_BITS as u64 - 1) * SUB_BUCKETS) as usize;

/// Why a recorded histogram cannot be read back.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistogramError {
    /// The histogram was made with another precision.
    #[error("histogram has {0} sub-buckets, expected {SUB_BUCKETS}")]
    Precision(u32),
    /// A bucket's value is not a bucket boundary, or buckets are out of
    /// order.
    #[error("histogram bucket {0} is not a valid bucket")]
    Bucket(u64),
    /// The counts do not add up to the total.
    #[error("histogram counts add up to {sum}, not {count}")]
    Count {
        /// The sum of the buckets.
        sum: u64,
        /// The stated count.
        count: u64,
    },
}

/// Index of the bucket holding `value_ns` (clamped to [`MAX_NS`]).
/// Inlined across crates: bench-core records a transaction's time with
/// it in the request/response loops.
#[inline]
pub fn bucket_of(value_ns: u64) -> usize {
    let value = value_ns.min(MAX_NS);
    if value < 2 * SUB_BUCKETS {
        return value as usize;
    }
    let exponent = 63 - value.leading_zeros();
    let shift = exponent - SUB_BUCKET_BITS;
    let sub = (value >> shift) - SUB_BUCKETS;
    (2 * SUB_BUCKETS + u64::from(exponent - SUB_BUCKET_BITS - 1) * SUB_BUCKETS + sub) as usize
}

/// The highest value bucket `index` holds.
#[inline]
pub fn bucket_high(index: usize) -> u64 {
    let index = index as u64;
    if index < 2 * SUB_BUCKETS {
        return index;
    }
    let above = index - 2 * SUB_BUCKETS;
    let shift = above / SUB_BUCKETS + 1;
    let sub = above % SUB_BUCKETS + SUB_BUCKETS;
    ((sub + 1) << shift) - 1
}

/// The value at percentile `pct` (0 to 100), nanoseconds, by nearest rank
/// over non-empty `buckets` in ascending order, each as (highest value,
/// count): the highest value of the bucket holding the
/// `ceil(pct / 100 * count)`-th smallest time, within `min_ns` and
/// `max_ns`. `None` when `count` is 0 or `pct` is out of range.
pub fn percentile_of_buckets(
    buckets: impl Iterator<Item = (u64, u64)>,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    pct: f64,
) -> Option<u64> {
    if count == 0 || !(0.0..=100.0).contains(&pct) {
        return None;
    }
    let rank = ((pct / 100.0 * count as f64).ceil() as u64).clamp(1, count);
    let mut seen = 0;
    for (high, bucket_count) in buckets {
        seen += bucket_count;
        if seen >= rank {
            return Some(high.clamp(min_ns, max_ns));
        }
    }
    Some(max_ns)
}

impl LatencyHistogram {
    /// Checks the histogram: this precision, valid ascending buckets, and
    /// counts that add up.
    pub fn check(&self) -> Result<(), HistogramError> {
        if u64::from(self.sub_buckets) != SUB_BUCKETS {
            return Err(HistogramError::Precision(self.sub_buckets));
        }
        let mut previous = None;
        let mut sum = 0u64;
        for [high, count] in &self.buckets {
            let index = bucket_of(*high);
            if bucket_high(index) != *high || previous.is_some_and(|p| p >= index) {
                return Err(HistogramError::Bucket(*high));
            }
            previous = Some(index);
            sum = sum.saturating_add(*count);
        }
        if sum != self.count {
            return Err(HistogramError::Count {
                sum,
                count: self.count,
            });
        }
        Ok(())
    }

    /// The value at percentile `pct`, nanoseconds, by nearest rank
    /// ([`percentile_of_buckets`]), as the histogram that was recorded
    /// computes it.
    pub fn percentile_ns(&self, pct: f64) -> Option<u64> {
        percentile_of_buckets(
            self.buckets.iter().map(|[high, count]| (*high, *count)),
            self.count,
            self.min_ns,
            self.max_ns,
            pct,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_contiguous_and_narrow() {
        let mut expected_low = 0u64;
        for index in 0..N_BUCKETS {
            let high = bucket_high(index);
            assert_eq!(bucket_of(expected_low), index, "low of {index}");
            assert_eq!(bucket_of(high), index, "high of {index}");
            let width = high - expected_low + 1;
            assert!(width == 1 || width * SUB_BUCKETS <= expected_low, "{index}");
            expected_low = high + 1;
        }
        assert_eq!(bucket_high(N_BUCKETS - 1), MAX_NS);
    }
}
