//! The options of a bisection, [`BisectConfig`], as the journal's `start`
//! event records them and the reports repeat them: the metric, which way
//! is better, and the decision's settings.

use crate::decision::DecisionConfig;
use run_record::record::Direction;
use serde::{Deserialize, Serialize};

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
