//! What the comparison and history tests share: scattered samples and
//! sealed runs carrying them, as every crate's tests make them.

pub use test_fixtures::noise::Noise;
pub use test_fixtures::record::sampled_run as run;
