//! The end of a bisection as data: the first bad commit (id, subject,
//! author, date), the regression size with its confidence interval, the
//! confidence in the culprit, every step with its samples and verdict,
//! and a `git bisect log`-style replay. The command-line tool prints it as
//! JSON (`--json`) or through a template.
//!
//! # Format
//!
//! [`BisectReport`] serialises with `"schema": "netbisect.bisect/1"`
//! ([`REPORT_SCHEMA`]); a refusal with `"schema":
//! "netbisect.bisect-refusal/1"` ([`REFUSAL_SCHEMA`]). Differences are
//! new minus old, in the metric's unit and in percent of the old mean;
//! intervals are Welch's at `level_pct`. The `result` member is tagged by
//! `"kind"`: `first_bad` or `range` (the culprit is hidden among skipped
//! commits, listed newest first).

use crate::decision::{Method, Verdict};
use crate::ends::{Difference, RefusalReason};
use crate::graph::CommitInfo;
use crate::robust::mean_var;
use run_record::record::Direction;
use serde::{Deserialize, Serialize};

/// Schema of [`BisectReport`].
pub const REPORT_SCHEMA: &str = "netbisect.bisect/1";
/// Schema of [`Refusal`].
pub const REFUSAL_SCHEMA: &str = "netbisect.bisect-refusal/1";

/// How a bisection ended.
#[expect(
    clippy::large_enum_variant,
    reason = "made once at the end of a bisection; boxing buys nothing"
)]
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Bisected to a commit, or to a range hidden among skips.
    Finished(BisectReport),
    /// The ends do not differ enough to bisect.
    Refused(Refusal),
}

/// One end of the range and its samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EndSummary {
    /// The commit.
    pub commit: CommitInfo,
    /// Its samples, in the order taken.
    pub samples: Vec<f64>,
    /// Mean of the samples (0 when there are none).
    pub mean: f64,
    /// Standard deviation of the samples (n - 1).
    pub stddev: f64,
}

impl EndSummary {
    /// Summarises `samples` of `commit`.
    pub fn of(commit: CommitInfo, samples: &[f64]) -> EndSummary {
        let (mean, variance) = if samples.is_empty() {
            (0.0, 0.0)
        } else {
            mean_var(samples)
        };
        EndSummary {
            commit,
            samples: samples.to_vec(),
            mean,
            stddev: variance.sqrt(),
        }
    }
}

/// Why a bisection was not started: the ends do not differ by more than
/// the noise and the minimum effect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Refusal {
    /// Always [`REFUSAL_SCHEMA`].
    pub schema: String,
    /// The metric.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// The good end.
    pub good: EndSummary,
    /// The bad end.
    pub bad: EndSummary,
    /// Bad minus good with its 95% interval.
    pub difference: Option<Difference>,
    /// The smallest effect worth bisecting, percent.
    pub min_effect_pct: f64,
    /// Which rule refused (absent from refusals written before there was
    /// more than one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<RefusalReason>,
    /// The smallest step the ends' test was built to see: the larger of
    /// the minimum effect and one and a half noise scales of one run, or
    /// the minimum effect alone when it was promised; percent of the good
    /// end's mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub smallest_step_pct: Option<f64>,
    /// The noise of one run the ends show, percent of the good end's mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_pct: Option<f64>,
    /// The most repeats of each end (`--max-repeats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_end_repeats: Option<u32>,
}

/// One commit classified on the way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StepReport {
    /// Step number, from 1.
    pub step: u32,
    /// The commit.
    pub commit: CommitInfo,
    /// Its samples, in the order taken.
    pub samples: Vec<f64>,
    /// Mean of the samples.
    pub mean: f64,
    /// The verdict.
    pub verdict: Verdict,
    /// Log-likelihood ratio (new against old) when decided.
    pub llr: f64,
    /// Log-likelihood ratio under the final estimates of the two ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub final_llr: Option<f64>,
    /// Why it was skipped, when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip_reason: Option<String>,
    /// Commits that could still be the culprit after this step.
    pub candidates_after: u32,
}

/// What the bisection found.
#[expect(
    clippy::large_enum_variant,
    reason = "one per report; a box would only complicate serde"
)]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BisectResult {
    /// The first bad (new) commit.
    FirstBad {
        /// The culprit.
        commit: CommitInfo,
        /// Its (first) parent, or the good end.
        parent: CommitInfo,
        /// The culprit's samples, confirmation included.
        culprit_samples: Vec<f64>,
        /// The parent's samples, confirmation included.
        parent_samples: Vec<f64>,
        /// Culprit minus parent with its 95% interval: the size of the
        /// regression.
        regression: Option<Difference>,
        /// Probability that every verdict on the way was right, percent.
        confidence_pct: f64,
        /// True when the confirmation repeats still put the culprit with
        /// the new commits and its parent with the old ones.
        confirmed: bool,
    },
    /// The culprit is one of these (skipped commits and the first known
    /// bad one), newest first.
    Range {
        /// The commits.
        commits: Vec<CommitInfo>,
    },
}

/// The end of a bisection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BisectReport {
    /// Always [`REPORT_SCHEMA`].
    pub schema: String,
    /// The metric bisected on.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// Whether only first parents were followed.
    pub first_parent: bool,
    /// How the range was walked; with [`Method::Posterior`] the culprit's
    /// `confidence_pct` is its posterior probability.
    #[serde(default)]
    pub method: Method,
    /// The good end.
    pub good: EndSummary,
    /// The bad end.
    pub bad: EndSummary,
    /// Bad minus good with its 95% interval.
    pub ends: Option<Difference>,
    /// What was found.
    pub result: BisectResult,
    /// Every commit classified, in order.
    pub steps: Vec<StepReport>,
    /// Samples used in all (archived ones included).
    pub n_measurements: u32,
    /// `git bisect log`-style lines that `git bisect replay` accepts.
    pub log: Vec<String>,
}

impl BisectReport {
    /// True when the change is for the worse in the metric's direction.
    pub fn is_regression(&self) -> bool {
        let worse_when_lower = self.direction == Direction::HigherIsBetter;
        (self.bad.mean < self.good.mean) == worse_when_lower
    }
}

fn comment(term: &str, commit: &CommitInfo) -> String {
    format!("# {term}: [{}] {}", commit.id, commit.subject)
}

/// The `git bisect log` of a finished bisection: start, the two ends, one
/// line per step, and the answer as a comment.
pub fn bisect_log(bisect_report: &BisectReport) -> Vec<String> {
    let mut lines = Vec::new();
    if bisect_report.first_parent {
        lines.push("git bisect start '--first-parent'".to_string());
    } else {
        lines.push("git bisect start".to_string());
    }
    for (term, end) in [("bad", &bisect_report.bad), ("good", &bisect_report.good)] {
        lines.push(comment(term, &end.commit));
        lines.push(format!("git bisect {term} {}", end.commit.id));
    }
    for step in &bisect_report.steps {
        let term = step.verdict.git_term();
        lines.push(comment(term, &step.commit));
        lines.push(format!("git bisect {term} {}", step.commit.id));
    }
    match &bisect_report.result {
        BisectResult::FirstBad { commit, .. } => {
            lines.push(comment("first bad commit", commit));
        }
        BisectResult::Range { commits } => {
            lines.push("# only skipped commits left to test".to_string());
            for commit in commits {
                lines.push(comment("possible first bad commit", commit));
            }
        }
    }
    lines
}
