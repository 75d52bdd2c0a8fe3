//! Comparison of two sets of runs, "current versus patched": the data
//! behind `netbisect compare A B` and its `--json` output.
//!
//! # Grouping
//!
//! Runs are grouped by *spec key* ([`RunRecord::compute_spec_key`]: the
//! resolved test spec and the testbed), not by `config_key`. The
//! `config_key` also hashes the environment knobs, so two sides whose
//! sysctls differ would never meet in one group and nobody would be told
//! why; grouping by spec key puts them side by side and lists the
//! environment differences that matter as a warning
//! ([`ComparisonGroup::env_differences`]). A group seen on one side only is
//! listed in [`Comparison::unmatched`].
//!
//! # Samples and metrics
//!
//! Every iteration of every run of a side is one sample
//! ([`RunRecord::samples`]). Each group has a row for:
//!
//! - the primary metric of the test ([`Metric::primary_for`]: throughput
//!   for stream tests, transactions per second for request/response
//!   tests), always;
//! - throughput in bits/s for request/response tests, whose main metric
//!   is the rate, when both sides have it;
//! - the 99th-percentile latency, when both sides have latency samples
//!   (request/response tests): the tail is where scheduling and wakeup
//!   regressions show first, while the mean latency is only the inverse
//!   of the transaction rate for one flow;
//! - local and remote CPU utilisation and service demand, when both
//!   sides measured them (`-c`, `-C`): CPU cost per unit of work, the
//!   figure netdev reviewers ask for when throughput is bounded by the
//!   link.
//!
//! # Verdict
//!
//! The test is Mann-Whitney U, two-sided
//! ([`run_record::stats::mann_whitney_u`] with
//! [`MannWhitneyMethod::Auto`]: exact null distribution for small untied
//! samples, tie-corrected normal approximation otherwise), the same
//! statistics bisect uses. Per row:
//!
//! - [`Verdict::NeedSamples`] when no data of these sizes could reach the
//!   chosen alpha: the smallest p value the exact test can give,
//!   `2 / C(n1 + n2, n1)`, is not below alpha. [`Comparison::min_samples`]
//!   is the per-side count, with equal sizes, from which a verdict becomes
//!   possible (4 at alpha 0.05), as benchstat's "need >= N samples";
//! - [`Verdict::NotSignificant`] (printed `~`) when `p >= alpha` or the
//!   change is smaller than the minimum effect;
//! - [`Verdict::Significant`] otherwise.
//!
//! [`ComparisonRow::direction`] says whether the change of the means is an
//! improvement or a regression for that metric ([`Metric::direction`]:
//! throughput and transaction rate higher, latency and service demand
//! lower). It is the direction of the point estimate and means something
//! only together with the verdict.
//!
//! # JSON
//!
//! [`Comparison`] and the types it holds (`compare/output.rs`) are the
//! schema of `compare --json`. Values are in the row's `unit` (SI base
//! units: `bits/s`, `trans/s`, `us`, `us/KB` or `us/Tran` for service
//! demand, `%`); percentages carry a `_pct` suffix. Absent values are
//! `null`.

use crate::figures::{
    SideFigures, configuration_command, spec_options_as_granted, spec_title_as_granted,
    title_outcome,
};
use run_record::env::{self, HostEnv};
use run_record::record::{Metric, RecordError, RunRecord};
use run_record::spec::TestKind;
use run_record::stats::{self, MannWhitneyMethod, StatsError};
use std::collections::{BTreeMap, BTreeSet};

mod output;

pub use output::{
    ChangeKind, Comparison, ComparisonGroup, ComparisonRow, EnvChange, Host, Side, SideSummary,
    SpecSummary, UnmatchedGroup, Verdict,
};

/// Why a comparison could not be made.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// An option outside its documented range.
    #[error("invalid compare option: {0}")]
    InvalidOption(&'static str),
    /// A run's spec key could not be computed.
    #[error("cannot compute the spec key of run {id}")]
    SpecKey {
        /// The run's id.
        id: String,
        /// Why.
        #[source]
        source: RecordError,
    },
    /// A statistic failed (a non-finite sample, for instance).
    #[error("statistics failed for {metric} of {test}")]
    Stats {
        /// The metric compared.
        metric: Metric,
        /// The test of the group.
        test: TestKind,
        /// Why.
        #[source]
        source: StatsError,
    },
}

impl CompareError {
    /// True for what the user can fix: a run whose record fails its
    /// checks. An option out of range is the caller's to check first.
    pub fn is_input(&self) -> bool {
        matches!(self, CompareError::SpecKey { .. })
    }
}

/// How to compare.
#[derive(Clone, Debug, PartialEq)]
pub struct CompareOptions {
    /// Significance level of the two-sided Mann-Whitney test, in `(0, 1)`
    /// (default 0.05).
    pub alpha: f64,
    /// Smallest change of the means, percent, that counts as a change
    /// even when significant (default 0: any significant change).
    pub min_effect_pct: f64,
    /// Name of the first side in the output (default `base`).
    pub first_label: String,
    /// Name of the second side (default `patched`).
    pub second_label: String,
    /// Short name of the first side for the rows of a table (a label,
    /// a short commit id; default `base`).
    pub first_name: String,
    /// Short name of the second side (default `patched`).
    pub second_name: String,
}

impl Default for CompareOptions {
    fn default() -> CompareOptions {
        CompareOptions {
            alpha: 0.05,
            min_effect_pct: 0.0,
            first_label: "base".to_string(),
            second_label: "patched".to_string(),
            first_name: "base".to_string(),
            second_name: "patched".to_string(),
        }
    }
}

/// The runs of one spec key, split by side.
#[derive(Default)]
struct SideRuns<'a> {
    first: Vec<&'a RunRecord>,
    second: Vec<&'a RunRecord>,
}

/// Compares the runs of `first` (the base) with those of `second` (the
/// patched side); see the module documentation for the method.
pub fn compare(
    first: &[RunRecord],
    second: &[RunRecord],
    options: &CompareOptions,
) -> Result<Comparison, CompareError> {
    if !(options.alpha > 0.0 && options.alpha < 1.0) {
        return Err(CompareError::InvalidOption("alpha must be in (0, 1)"));
    }
    if !(options.min_effect_pct >= 0.0 && options.min_effect_pct.is_finite()) {
        return Err(CompareError::InvalidOption(
            "minimum effect must be zero or a positive percentage",
        ));
    }
    let min_samples = stats::mann_whitney_min_samples(options.alpha)
        .map_err(|_| CompareError::InvalidOption("alpha must be in (0, 1)"))?;

    let mut by_spec: BTreeMap<String, SideRuns<'_>> = BTreeMap::new();
    for (records, is_first) in [(first, true), (second, false)] {
        for record in records {
            let spec_key = record
                .compute_spec_key()
                .map_err(|source| CompareError::SpecKey {
                    id: record.id.clone(),
                    source,
                })?;
            let entry = by_spec.entry(spec_key).or_default();
            if is_first {
                entry.first.push(record);
            } else {
                entry.second.push(record);
            }
        }
    }

    let mut groups = Vec::new();
    let mut unmatched = Vec::new();
    for (spec_key, mut runs) in by_spec {
        runs.first.sort_by(|a, b| run_order(a, b));
        runs.second.sort_by(|a, b| run_order(a, b));
        match (runs.first.first(), runs.second.first()) {
            (Some(first_rep), Some(second_rep)) => {
                groups.push(compare_group(
                    spec_key, &runs, first_rep, second_rep, options,
                )?);
            }
            (Some(representative), None) | (None, Some(representative)) => {
                let side = if runs.first.is_empty() {
                    Side::Second
                } else {
                    Side::First
                };
                unmatched.push(UnmatchedGroup {
                    side,
                    spec_key,
                    spec: SpecSummary::of(representative),
                    title: crate::figures::record_title(representative),
                    title_options: spec_options_as_granted(
                        &representative.spec,
                        representative.system.as_ref(),
                    )
                    .into_iter()
                    .map(|option| option.title)
                    .collect(),
                    n_runs: runs.first.len() + runs.second.len(),
                    other_testbed: None,
                    run_spec: representative.spec.clone(),
                    granted: representative.system.clone(),
                });
            }
            (None, None) => {}
        }
    }
    groups.sort_by(|a, b| group_order(&a.spec, &a.spec_key, &b.spec, &b.spec_key));
    // Runs that differ only in their testbed do not pair; say so, since
    // it is easy to miss (an import names its testbed "default").
    let other_testbeds: Vec<Option<String>> = unmatched
        .iter()
        .map(|group| {
            unmatched
                .iter()
                .find(|other| {
                    other.side != group.side
                        && other.spec.testbed != group.spec.testbed
                        && SpecSummary {
                            testbed: group.spec.testbed.clone(),
                            ..other.spec.clone()
                        } == group.spec
                })
                .map(|other| other.spec.testbed.clone())
        })
        .collect();
    for (group, other_testbed) in unmatched.iter_mut().zip(other_testbeds) {
        group.other_testbed = other_testbed;
    }
    unmatched.sort_by(|a, b| {
        a.side
            .cmp(&b.side)
            .then_with(|| group_order(&a.spec, &a.spec_key, &b.spec, &b.spec_key))
    });
    Ok(Comparison {
        first_label: options.first_label.clone(),
        second_label: options.second_label.clone(),
        first_name: options.first_name.clone(),
        second_name: options.second_name.clone(),
        alpha: options.alpha,
        min_effect_pct: options.min_effect_pct,
        min_samples,
        groups,
        unmatched,
    })
}

/// Earliest run first; the id breaks ties so the order is total.
fn run_order(a: &RunRecord, b: &RunRecord) -> std::cmp::Ordering {
    (&a.started_at, &a.id).cmp(&(&b.started_at, &b.id))
}

/// Groups in netperf's test order, then numerically by socket buffers,
/// sizes, flows and length, then by key.
fn group_order(a: &SpecSummary, a_key: &str, b: &SpecSummary, b_key: &str) -> std::cmp::Ordering {
    let rank = |summary: &SpecSummary| {
        TestKind::ALL
            .iter()
            .position(|kind| kind.name() == summary.test)
            .unwrap_or(usize::MAX)
    };
    let sizes = |summary: &SpecSummary| {
        (
            summary.family.clone(),
            summary.remote_socket_buffer_bytes,
            summary.local_socket_buffer_bytes,
            summary.send_size_bytes,
            summary.recv_size_bytes,
            summary.request_size_bytes,
            summary.response_size_bytes,
            summary.flows,
        )
    };
    rank(a)
        .cmp(&rank(b))
        .then_with(|| a.testbed.cmp(&b.testbed))
        .then_with(|| sizes(a).cmp(&sizes(b)))
        .then_with(|| a.duration_s.total_cmp(&b.duration_s))
        .then_with(|| a_key.cmp(b_key))
}

fn compare_group(
    spec_key: String,
    runs: &SideRuns<'_>,
    first_rep: &RunRecord,
    second_rep: &RunRecord,
    options: &CompareOptions,
) -> Result<ComparisonGroup, CompareError> {
    let test = first_rep.spec.test;
    let keys_of = |side: &[&RunRecord]| -> BTreeSet<String> {
        side.iter().map(|run| run.config_key.clone()).collect()
    };
    let samples_of = |side: &[&RunRecord], metric: Metric| -> Vec<f64> {
        side.iter().flat_map(|run| run.samples(metric)).collect()
    };
    let primary = Metric::primary_for(&first_rep.spec);
    let mut metrics = vec![primary];
    for optional in [
        Metric::ThroughputBps,
        Metric::LatencyP99Us,
        Metric::LocalCpuPct,
        Metric::RemoteCpuPct,
        Metric::LocalServiceDemand,
        Metric::RemoteServiceDemand,
    ] {
        let on_both = !samples_of(&runs.first, optional).is_empty()
            && !samples_of(&runs.second, optional).is_empty();
        if on_both && optional != primary {
            metrics.push(optional);
        }
    }
    let mut rows = Vec::with_capacity(metrics.len());
    for metric in metrics {
        let first = samples_of(&runs.first, metric);
        let second = samples_of(&runs.second, metric);
        let mut row =
            compare_samples(metric, test, &first, &second, options).map_err(|source| {
                CompareError::Stats {
                    metric,
                    test,
                    source,
                }
            })?;
        row.more_runs_per_side = row.samples_to_decide.and_then(|samples| {
            more_runs_per_side(samples, &row, runs.first.len(), runs.second.len())
        });
        rows.push(row);
    }
    Ok(ComparisonGroup {
        spec_key,
        spec: SpecSummary::of(first_rep),
        run_spec: first_rep.spec.clone(),
        title: spec_title_as_granted(
            &first_rep.spec,
            &first_rep.testbed,
            title_outcome(
                &first_rep.spec,
                [first_rep, second_rep].map(|rep| rep.system.as_ref()),
            ),
        ),
        granted: [first_rep.system.clone(), second_rep.system.clone()],
        command: configuration_command(first_rep).render(),
        first_figures: SideFigures::of(&runs.first),
        second_figures: SideFigures::of(&runs.second),
        n_runs_first: runs.first.len(),
        n_runs_second: runs.second.len(),
        config_keys_differ: keys_of(&runs.first) != keys_of(&runs.second),
        env_differences: env_changes(first_rep, second_rep),
        rows,
    })
}

/// The environment differences that matter between two runs, local end
/// then remote end. The remote ends are compared only when both runs
/// recorded one: a missing remote environment says nothing about it.
pub fn env_changes(first: &RunRecord, second: &RunRecord) -> Vec<EnvChange> {
    let mut changes = host_changes(Host::Local, &first.env.local, &second.env.local);
    if let (Some(first_remote), Some(second_remote)) = (&first.env.remote, &second.env.remote) {
        changes.extend(host_changes(Host::Remote, first_remote, second_remote));
    }
    changes
}

fn host_changes(host: Host, first: &HostEnv, second: &HostEnv) -> Vec<EnvChange> {
    env::diff(first, second)
        .into_iter()
        .filter(|difference| difference.matters)
        .map(|difference| EnvChange {
            host,
            key: difference.key,
            first: difference.first,
            second: difference.second,
        })
        .collect()
}

/// Confidence level of the interval on each change.
pub const CHANGE_INTERVAL_LEVEL: f64 = 0.95;

/// Power at which [`ComparisonRow::samples_to_decide`] is reckoned: the
/// usual 80%, the chance that a change of the size asked is called.
pub const DECIDE_POWER: f64 = 0.8;

/// Compares the samples of one metric; see the module documentation.
pub fn compare_samples(
    metric: Metric,
    test: TestKind,
    first: &[f64],
    second: &[f64],
    options: &CompareOptions,
) -> Result<ComparisonRow, StatsError> {
    let first_summary = SideSummary::of(first)?;
    let second_summary = SideSummary::of(second)?;
    let mut row = ComparisonRow {
        metric: metric.name().to_string(),
        unit: metric.unit(test).to_string(),
        higher_is_better: metric.direction().higher_is_better(),
        first: first_summary.clone(),
        second: second_summary.clone(),
        change_pct: None,
        change_low_pct: None,
        change_high_pct: None,
        p_value: None,
        verdict: Verdict::NeedSamples,
        direction: None,
        samples_to_decide: None,
        effect_pct: None,
        more_runs_per_side: None,
    };
    let (Some(first_summary), Some(second_summary)) = (first_summary, second_summary) else {
        return Ok(row);
    };
    row.change_pct = stats::relative_change_pct(first_summary.mean, second_summary.mean).ok();
    if let Ok(interval) = stats::ratio_interval(first, second, CHANGE_INTERVAL_LEVEL) {
        let relative = interval.relative();
        row.change_low_pct = Some(relative.low_pct);
        row.change_high_pct = Some(relative.high_pct);
    }
    row.direction = ChangeKind::of_change(metric, first_summary.mean, second_summary.mean);
    let test_result = stats::mann_whitney_u(first, second, MannWhitneyMethod::Auto)?;
    row.p_value = Some(test_result.p_value);
    let decidable = stats::mann_whitney_min_p_value(first.len(), second.len()) < options.alpha;
    let large_enough = match row.change_pct {
        Some(change_pct) => change_pct.abs() >= options.min_effect_pct,
        None => options.min_effect_pct == 0.0,
    };
    row.verdict = if !decidable {
        Verdict::NeedSamples
    } else if test_result.p_value < options.alpha && large_enough {
        Verdict::Significant
    } else {
        Verdict::NotSignificant
    };
    if row.verdict != Verdict::Significant {
        let effect_pct = if options.min_effect_pct > 0.0 {
            Some(options.min_effect_pct)
        } else {
            row.change_pct.map(f64::abs)
        };
        row.samples_to_decide = effect_pct.and_then(|effect_pct| {
            samples_to_decide(&first_summary, &second_summary, effect_pct, options.alpha)
        });
        row.effect_pct = row.samples_to_decide.and(effect_pct);
    }
    Ok(row)
}

/// Samples per side for a change of `effect_pct` of the first mean to be
/// called, at the sides' pooled noise; `None` without noise to go by.
fn samples_to_decide(
    first: &SideSummary,
    second: &SideSummary,
    effect_pct: f64,
    alpha: f64,
) -> Option<usize> {
    let (first_sd, second_sd) = (first.stddev?, second.stddev?);
    let (n_first, n_second) = (first.n_samples as f64, second.n_samples as f64);
    let pooled_variance = ((n_first - 1.0) * first_sd.powi(2)
        + (n_second - 1.0) * second_sd.powi(2))
        / (n_first + n_second - 2.0);
    let effect_size = effect_pct / 100.0 * first.mean.abs() / pooled_variance.sqrt();
    // No noise, or no change to look for: nothing to reckon.
    if !(effect_size.is_finite() && effect_size > 0.0) {
        return None;
    }
    stats::mann_whitney_samples_per_side(effect_size, alpha, DECIDE_POWER).ok()
}

/// More runs per side for `samples_per_side`, at each side's samples per
/// run; the larger count of the two.
fn more_runs_per_side(
    samples_per_side: usize,
    row: &ComparisonRow,
    n_runs_first: usize,
    n_runs_second: usize,
) -> Option<usize> {
    let sides = [(&row.first, n_runs_first), (&row.second, n_runs_second)];
    sides
        .into_iter()
        .map(|(side, n_runs)| {
            let side = side.as_ref()?;
            let missing = samples_per_side.saturating_sub(side.n_samples);
            if missing == 0 || n_runs == 0 {
                return Some(0);
            }
            // Whole runs at this side's samples per run, rounded up.
            Some((missing * n_runs).div_ceil(side.n_samples))
        })
        .try_fold(0, |most, runs| runs.map(|runs| most.max(runs)))
}
