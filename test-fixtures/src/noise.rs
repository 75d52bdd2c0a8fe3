//! Deterministic scatter for samples: the same seed gives the same
//! figures on every machine, so that a comparison or a history built from
//! them, and the text printed of it, can be pinned.

/// Deterministic noise in [-1, 1): a 64-bit linear congruential
/// generator (Knuth's MMIX constants), enough to scatter samples.
pub struct Noise(pub u64);

impl Noise {
    /// The next value, in [-1, 1).
    pub fn next_value(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 / (1_u64 << 53) as f64) * 2.0 - 1.0
    }

    /// `n` values around `level`, spread by `relative` of it.
    pub fn around(&mut self, level: f64, relative: f64, n: usize) -> Vec<f64> {
        (0..n)
            .map(|_| level * (1.0 + relative * self.next_value()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_scatters_the_same_way_within_the_spread() {
        let first = Noise(42).around(100.0, 0.1, 50);
        assert_eq!(first, Noise(42).around(100.0, 0.1, 50));
        assert_ne!(first, Noise(43).around(100.0, 0.1, 50));
        assert!(first.iter().all(|value| (90.0..110.0).contains(value)));
    }
}
