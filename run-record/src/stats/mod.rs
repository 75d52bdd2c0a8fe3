//! Shared statistics: the one place where netbisect decides what a number
//! means, so that `bench`, `compare`, `history` and `bisect` agree.
//!
//! Everything here is a pure function over slices; nothing keeps state,
//! reads a clock or draws random numbers. Each function names its method
//! and its source. Results are checked against values computed once with
//! scipy and numpy (`scripts/stats-reference.py`, committed as
//! `run-record/tests/data/stats-reference.json`).
//!
//! - [`distributions`]: normal and Student's t distribution functions and
//!   quantiles.
//! - [`describe`]: mean, standard deviation, percentiles, relative change.
//! - [`interval`]: the Student-t confidence interval on a mean and the
//!   netperf-style rule that decides when to stop repeating iterations.
//! - [`two_sample`]: Mann-Whitney U, Welch's and Student's t-tests, and
//!   an interval on the difference of means.
//! - [`ratio`]: intervals on the ratio of two means (Fieller's, or on the
//!   log scale), which give every relative change its bounds.
//! - [`change_point`]: change points in a metric across commits.
//! - [`power`]: how many samples a side a two-sample test needs to see
//!   an effect.

pub mod change_point;
pub mod describe;
pub mod distributions;
pub mod interval;
pub mod power;
pub mod ratio;
pub mod two_sample;

pub use change_point::{ChangePoint, ChangePointOptions, SplitTest, change_points};
pub use describe::{
    mean, percentile, percentiles, relative_change_pct, sample_stddev, sample_variance,
};
pub use interval::{
    IterationDecision, MeanInterval, confidence_outcome, iteration_decision, level_fraction,
    mean_interval,
};
pub use power::{mann_whitney_samples_per_side, normal_samples_per_side, t_samples_per_side};
pub use ratio::{
    MeanEstimate, RatioInterval, RatioMethod, fieller_interval, log_ratio_interval, ratio_interval,
    ratio_interval_of,
};
pub use two_sample::{
    DifferenceInterval, MannWhitney, MannWhitneyMethod, RelativeInterval, TTest, mann_whitney_u,
    student_t_test, welch_interval, welch_t_test,
};
pub use two_sample::{mann_whitney_min_p_value, mann_whitney_min_samples};

use thiserror::Error;

/// Why a statistic could not be computed.
#[derive(Clone, Debug, Error, PartialEq)]
pub enum StatsError {
    /// A sample had no values.
    #[error("no values to summarise")]
    Empty,
    /// A sample had fewer values than the statistic needs.
    #[error("need at least {needed} values, got {got}")]
    TooFewValues {
        /// Values the statistic needs.
        needed: usize,
        /// Values given.
        got: usize,
    },
    /// A value was NaN or infinite.
    #[error("value {index} is not a finite number")]
    NonFinite {
        /// Position of the value in its slice.
        index: usize,
    },
    /// A probability outside `[0, 1]`.
    #[error("probability {0} is outside [0, 1]")]
    InvalidProbability(f64),
    /// A confidence level outside `(0, 1)`.
    #[error("confidence level {0} is outside (0, 1)")]
    InvalidLevel(f64),
    /// Degrees of freedom that are not positive and finite.
    #[error("degrees of freedom {0} must be positive and finite")]
    InvalidDegreesOfFreedom(f64),
    /// A percentile outside `[0, 100]`.
    #[error("percentile {0} is outside [0, 100]")]
    InvalidPercentile(f64),
    /// A relative change from zero, which has no meaning.
    #[error("relative change from zero is undefined")]
    ZeroBase,
    /// A ratio whose denominator is not clearly away from zero: its
    /// interval has no finite bounds.
    #[error("the interval on the ratio is unbounded: the base is not clearly away from zero")]
    UnboundedRatio,
    /// The exact Mann-Whitney distribution has too many arrangements to
    /// count in 128-bit integers.
    #[error("exact mann-whitney distribution for sizes {n_first} and {n_second} is too large")]
    ExactTooLarge {
        /// Size of the first sample.
        n_first: usize,
        /// Size of the second sample.
        n_second: usize,
    },
    /// An option outside its documented range.
    #[error("invalid option: {0}")]
    InvalidOption(&'static str),
    /// An iterative method did not converge.
    #[error("{what} did not converge")]
    NoConvergence {
        /// The method that did not converge.
        what: &'static str,
    },
}

/// Checks that every value is finite.
fn check_finite(values: &[f64]) -> Result<(), StatsError> {
    match values.iter().position(|value| !value.is_finite()) {
        Some(index) => Err(StatsError::NonFinite { index }),
        None => Ok(()),
    }
}
