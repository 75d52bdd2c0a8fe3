//! What the contexts of `bisect-report`, `bisect-status` and `plan`
//! share: a bisected metric's unit and figures, the rows of the table of
//! steps, and a length of time as people read it.

use crate::render::filters::{figure_text, fixed_text};
use bisect::decision::Verdict;
use bisect::report::StepReport;
use serde::Serialize;

/// The unit a bisected `metric`'s figures are printed in: throughput in
/// 10^6 bits/s (netperf's `-f m`), latency in usec, else the metric's
/// own.
pub fn unit_of(metric: &str) -> String {
    match metric {
        "throughput_bps" => "10^6bits/s".to_string(),
        "transaction_rate" => "trans/s".to_string(),
        "local_cpu_pct" | "remote_cpu_pct" => "% CPU".to_string(),
        "local_service_demand" | "remote_service_demand" => "us/KB".to_string(),
        other if other.ends_with("_us") => "usec".to_string(),
        other => other.to_string(),
    }
}

/// A figure of `metric` in its [`unit_of`], with two decimals or more
/// where it needs them; `-` for none.
pub fn value_of(metric: &str, value: Option<f64>) -> String {
    let scale = if metric == "throughput_bps" { 1e6 } else { 1.0 };
    value.map_or_else(|| "-".to_string(), |value| figure_text(value / scale, 2))
}

/// One step of the table of steps, as printed.
#[derive(Debug, Serialize)]
pub struct StepRow {
    /// Its number, from 1.
    pub step: u32,
    /// The commit, cut to 12 digits.
    pub commit: String,
    /// `good`, `bad`, `unknown` (undecided at the repeat cap) or `skip`.
    pub verdict: &'static str,
    /// Samples taken of the commit.
    pub n_samples: usize,
    /// Their mean in the metric's unit; `-` without samples.
    pub mean: String,
    /// Commits that could still be the culprit after the step.
    pub candidates_after: u32,
    /// Why the commit was skipped, when it was.
    pub skip_reason: Option<String>,
}

/// The rows of `steps` of a bisection on `metric`.
pub fn step_rows(metric: &str, steps: &[StepReport]) -> Vec<StepRow> {
    steps
        .iter()
        .map(|step| StepRow {
            step: step.step,
            commit: short_id(&step.commit.id),
            verdict: match step.verdict {
                Verdict::Old => "good",
                Verdict::New => "bad",
                Verdict::Unknown => "unknown",
                Verdict::Skip => "skip",
            },
            n_samples: step.samples.len(),
            mean: if step.samples.is_empty() {
                "-".to_string()
            } else {
                value_of(metric, Some(step.mean))
            },
            candidates_after: step.candidates_after,
            skip_reason: step.skip_reason.clone(),
        })
        .collect()
}

/// A commit id cut to 12 digits, as git's short ids print.
pub fn short_id(id: &str) -> String {
    id.chars().take(12).collect()
}

/// `seconds` as people read a length of time: `16.9 h` from two hours,
/// `4.2 min` from two minutes, else `54.0 s`.
pub fn duration(seconds: f64) -> String {
    if seconds >= 7200.0 {
        format!("{} h", fixed_text(seconds / 3600.0, 1))
    } else if seconds >= 120.0 {
        format!("{} min", fixed_text(seconds / 60.0, 1))
    } else {
        format!("{} s", fixed_text(seconds, 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_take_the_unit_of_their_metric() {
        assert_eq!(unit_of("throughput_bps"), "10^6bits/s");
        assert_eq!(unit_of("latency_p99_us"), "usec");
        assert_eq!(unit_of("odd_metric"), "odd_metric");
        assert_eq!(value_of("throughput_bps", Some(9.41e9)), "9410.00");
        assert_eq!(value_of("latency_p99_us", Some(0.004)), "0.0040");
        assert_eq!(value_of("transaction_rate", None), "-");
    }

    #[test]
    fn durations_read_in_seconds_minutes_or_hours() {
        assert_eq!(duration(54.0), "54.0 s");
        assert_eq!(duration(120.0), "2.0 min");
        assert_eq!(duration(60918.0), "16.9 h");
    }
}
