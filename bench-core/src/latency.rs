//! Transaction latency: a log-linear histogram that records a time with
//! no allocation and a few integer operations, its compact form in the
//! run record, and the figures (min, mean, stddev, percentiles) derived
//! from it.
//!
//! The bucket layout is the record's (`run_record::record::histogram`,
//! the scheme of HdrHistogram with a fixed precision of 1/64): up to
//! 2^40 ns (18 minutes) that is 2240 counters, allocated once per flow.
//! Mean and standard deviation are kept exactly beside the buckets.

use run_record::record::histogram::{
    MAX_NS, N_BUCKETS, SUB_BUCKETS, bucket_high, bucket_of, percentile_of_buckets,
};
use run_record::record::{LatencyFigures, LatencyHistogram};
use std::time::Duration;

/// A latency histogram being recorded.
#[derive(Clone, Debug)]
pub struct Histogram {
    counts: Vec<u64>,
    count: u64,
    min_ns: u64,
    max_ns: u64,
    // Sum and sum of squares, nanoseconds: exact, and integer adds per
    // time recorded (no division in the loop that measures).
    sum_ns: u128,
    sum_sq_ns: u128,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram::new()
    }
}

impl Histogram {
    /// An empty histogram; the one allocation it makes.
    pub fn new() -> Histogram {
        Histogram {
            counts: vec![0; N_BUCKETS],
            count: 0,
            min_ns: u64::MAX,
            max_ns: 0,
            sum_ns: 0,
            sum_sq_ns: 0,
        }
    }

    /// Records one time.
    #[inline]
    pub fn record(&mut self, time: Duration) {
        self.record_ns(u64::try_from(time.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Records one time given in nanoseconds.
    #[inline]
    pub fn record_ns(&mut self, value_ns: u64) {
        let value_ns = value_ns.min(MAX_NS);
        self.counts[bucket_of(value_ns)] += 1;
        self.count += 1;
        self.min_ns = self.min_ns.min(value_ns);
        self.max_ns = self.max_ns.max(value_ns);
        let value = u128::from(value_ns);
        self.sum_ns += value;
        self.sum_sq_ns += value * value;
    }

    /// Mean, nanoseconds (0 when empty).
    fn mean_ns(&self) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        self.sum_ns as f64 / self.count as f64
    }

    /// Sample standard deviation, nanoseconds (0 below two times).
    fn stddev_ns(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = u128::from(self.count);
        // n * sum of squared deviations = n * sum_sq - sum^2, exact while
        // it fits; past that (times of hours by the billion) in floats.
        let scaled = match (
            self.sum_sq_ns.checked_mul(n),
            self.sum_ns.checked_mul(self.sum_ns),
        ) {
            (Some(a), Some(b)) => a.saturating_sub(b) as f64,
            _ => {
                let mean = self.mean_ns();
                (self.sum_sq_ns as f64 - mean * self.sum_ns as f64).max(0.0) * n as f64
            }
        };
        (scaled / (n as f64 * (n - 1) as f64)).sqrt()
    }

    /// Forgets every time recorded, keeping the buckets' memory.
    pub fn clear(&mut self) {
        self.counts.fill(0);
        self.count = 0;
        self.min_ns = u64::MAX;
        self.max_ns = 0;
        self.sum_ns = 0;
        self.sum_sq_ns = 0;
    }

    /// Times recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds every time of `other`.
    pub fn merge(&mut self, other: &Histogram) {
        if other.count == 0 {
            return;
        }
        for (mine, theirs) in self.counts.iter_mut().zip(&other.counts) {
            *mine += theirs;
        }
        self.sum_ns += other.sum_ns;
        self.sum_sq_ns += other.sum_sq_ns;
        self.count += other.count;
        self.min_ns = self.min_ns.min(other.min_ns);
        self.max_ns = self.max_ns.max(other.max_ns);
    }

    /// The value at percentile `pct` (0 to 100), nanoseconds, by nearest
    /// rank: the highest value of the bucket holding the
    /// `ceil(pct / 100 * count)`-th smallest time, within the recorded
    /// minimum and maximum. `None` for an empty histogram.
    pub fn percentile_ns(&self, pct: f64) -> Option<u64> {
        percentile_of_buckets(
            self.counts
                .iter()
                .enumerate()
                .filter(|(_, count)| **count > 0)
                .map(|(index, count)| (bucket_high(index), *count)),
            self.count,
            self.min_ns,
            self.max_ns,
            pct,
        )
    }

    /// The figures of the record, microseconds; `None` when empty.
    pub fn figures(&self) -> Option<LatencyFigures> {
        if self.count == 0 {
            return None;
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        let at = |pct: f64| us(self.percentile_ns(pct).unwrap_or(0));
        Some(LatencyFigures {
            min_us: us(self.min_ns),
            mean_us: self.mean_ns() / 1000.0,
            stddev_us: self.stddev_ns() / 1000.0,
            p50_us: at(50.0),
            p90_us: at(90.0),
            p99_us: at(99.0),
            p999_us: at(99.9),
            max_us: us(self.max_ns),
        })
    }

    /// The compact form kept in the run record; `None` when empty.
    pub fn to_record(&self) -> Option<LatencyHistogram> {
        (self.count > 0).then(|| LatencyHistogram {
            sub_buckets: SUB_BUCKETS as u32,
            count: self.count,
            min_ns: self.min_ns,
            max_ns: self.max_ns,
            buckets: self
                .counts
                .iter()
                .enumerate()
                .filter(|(_, count)| **count > 0)
                .map(|(index, count)| [bucket_high(index), *count])
                .collect(),
        })
    }
}

/// Pools per-part latency figures (count, mean, stddev) into one mean and
/// standard deviation, exactly: the total sum of squares is the parts'
/// own plus their means' spread around the pooled mean.
pub fn pooled_mean_stddev(parts: &[(u64, f64, f64)]) -> Option<(f64, f64)> {
    let total: u64 = parts.iter().map(|(count, _, _)| count).sum();
    if total == 0 {
        return None;
    }
    let mean = parts
        .iter()
        .map(|(count, mean, _)| *count as f64 * mean)
        .sum::<f64>()
        / total as f64;
    if total < 2 {
        return Some((mean, 0.0));
    }
    let sum_sq: f64 = parts
        .iter()
        .map(|(count, part_mean, stddev)| {
            let count = *count as f64;
            (count - 1.0).max(0.0) * stddev * stddev + count * (part_mean - mean).powi(2)
        })
        .sum();
    Some((mean, (sum_sq / (total - 1) as f64).sqrt()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use run_record::stats;

    /// A deterministic, skewed sample of times: a body around 20 us and a
    /// long tail, from a small linear congruential generator.
    fn sample_times(n_samples: usize) -> Vec<u64> {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        (0..n_samples)
            .map(|_| {
                state = state
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let uniform = (state >> 11) as f64 / (1u64 << 53) as f64;
                // Exponential tail on top of a 15 us floor.
                (15_000.0 - 8_000.0 * (1.0 - uniform).ln()) as u64
            })
            .collect()
    }

    #[test]
    fn percentiles_match_the_sorted_samples_within_precision() {
        let times = sample_times(100_000);
        let mut histogram = Histogram::new();
        for time in &times {
            histogram.record(Duration::from_nanos(*time));
        }
        let mut sorted = times.clone();
        sorted.sort_unstable();
        let as_f64: Vec<f64> = times.iter().map(|t| *t as f64).collect();
        let record = histogram.to_record().unwrap();
        record.check().unwrap();
        for pct in [1.0, 10.0, 50.0, 90.0, 99.0, 99.9, 100.0] {
            let got = histogram.percentile_ns(pct).unwrap() as f64;
            assert_eq!(record.percentile_ns(pct), histogram.percentile_ns(pct));
            // Nearest rank from the sorted samples: the histogram gives the
            // top of that sample's bucket, at most 1/64 above it.
            let rank = ((pct / 100.0 * times.len() as f64).ceil() as usize).max(1);
            let exact = sorted[rank - 1] as f64;
            assert!(got >= exact && got <= exact * (1.0 + 1.0 / 64.0), "{pct}");
            // And numpy's interpolated percentile, the stats module's.
            let interpolated = stats::percentile(&as_f64, pct).unwrap();
            assert!(
                (got - interpolated).abs() <= interpolated / 64.0 + 1.0,
                "{pct}"
            );
        }
        let figures = histogram.figures().unwrap();
        let mean = stats::mean(&as_f64).unwrap();
        let stddev = stats::sample_stddev(&as_f64).unwrap();
        assert!((figures.mean_us * 1000.0 - mean).abs() < 1e-6 * mean);
        assert!((figures.stddev_us * 1000.0 - stddev).abs() < 1e-6 * stddev);
        assert_eq!(figures.min_us * 1000.0, sorted[0] as f64);
        assert_eq!(figures.max_us * 1000.0, *sorted.last().unwrap() as f64);
    }

    #[test]
    fn merging_equals_recording_together() {
        let times = sample_times(5_000);
        let (first, second) = times.split_at(1_234);
        let mut whole = Histogram::new();
        let mut one = Histogram::new();
        let mut two = Histogram::new();
        for time in &times {
            whole.record(Duration::from_nanos(*time));
        }
        for time in first {
            one.record(Duration::from_nanos(*time));
        }
        for time in second {
            two.record(Duration::from_nanos(*time));
        }
        let parts: Vec<(u64, f64, f64)> = [&one, &two]
            .iter()
            .map(|h| {
                let f = h.figures().unwrap();
                (h.count(), f.mean_us, f.stddev_us)
            })
            .collect();
        one.merge(&two);
        assert_eq!(one.to_record(), whole.to_record());
        let merged = one.figures().unwrap();
        let direct = whole.figures().unwrap();
        assert!((merged.mean_us - direct.mean_us).abs() < 1e-9);
        assert!((merged.stddev_us - direct.stddev_us).abs() < 1e-9);
        let (mean, stddev) = pooled_mean_stddev(&parts).unwrap();
        assert!((mean - direct.mean_us).abs() < 1e-9);
        assert!((stddev - direct.stddev_us).abs() < 1e-9);
    }

    #[test]
    fn bad_recorded_histograms_are_caught() {
        let mut histogram = Histogram::new();
        histogram.record(Duration::from_micros(20));
        histogram.record(Duration::from_micros(30));
        let mut record = histogram.to_record().unwrap();
        record.check().unwrap();
        record.count = 3;
        assert!(record.check().is_err());
        record.count = 2;
        record.buckets.reverse();
        assert!(record.check().is_err());
        record.buckets[0][0] += 1;
        assert!(record.check().is_err());
        assert_eq!(Histogram::new().figures(), None);
    }
}
