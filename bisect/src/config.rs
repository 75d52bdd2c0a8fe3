//! The options of a bisection, [`BisectConfig`], as the journal's `start`
//! event records them and the reports repeat them: the metric, which way
//! is better, and the decision's settings.

use crate::decision::DecisionConfig;
use serde::{Deserialize, Serialize};

/// Which way is better.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Larger values are better (throughput, transaction rate).
    HigherIsBetter,
    /// Smaller values are better (latency, CPU).
    LowerIsBetter,
}

/// Options of a bisection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BisectConfig {
    /// Name of the metric bisected on (for the report).
    pub metric: String,
    /// Which way is better (for the report: regression or improvement).
    pub direction: Direction,
    /// The statistical decision's options.
    pub decision: DecisionConfig,
}
