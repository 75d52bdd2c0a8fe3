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
//! ([`bench_core::stats::mann_whitney_u`] with
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
//! improvement or a regression for that metric ([`Metric::higher_is_better`]:
//! throughput and transaction rate higher, latency and service demand
//! lower). It is the direction of the point estimate and means something
//! only together with the verdict.
//!
//! # JSON
//!
//! [`Comparison`] and the types below it are the schema of
//! `compare --json`. Values are in the row's `unit` (SI base units:
//! `bits/s`, `trans/s`, `us`, `us/KB` or `us/Tran` for service demand,
//! `%`); percentages carry a `_pct` suffix. Absent values are `null`.

use crate::figures::{SideFigures, spec_command, spec_options, spec_title};
use bench_core::env::{self, HostEnv};
use bench_core::record::{RecordError, RunRecord};
use bench_core::spec::{AddressFamily, RunSpec, TestKind};
use bench_core::stats::{self, MannWhitneyMethod, StatsError};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

pub use bench_core::record::Metric;

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

/// The comparison of two sides, group by group.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Comparison {
    /// Name of the first side (the base).
    pub first_label: String,
    /// Name of the second side (the patched one).
    pub second_label: String,
    /// Short name of the first side, for table rows.
    pub first_name: String,
    /// Short name of the second side.
    pub second_name: String,
    /// Significance level used.
    pub alpha: f64,
    /// Minimum effect used, percent.
    pub min_effect_pct: f64,
    /// Samples per side, with equal sizes, from which the test can reach
    /// `alpha` at all.
    pub min_samples: usize,
    /// Groups present on both sides, ordered by test and sizes.
    pub groups: Vec<ComparisonGroup>,
    /// Groups present on one side only.
    pub unmatched: Vec<UnmatchedGroup>,
}

/// The runs of one spec key on both sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComparisonGroup {
    /// The spec key shared by the runs.
    pub spec_key: String,
    /// What the runs measured, for the group's heading.
    pub spec: SpecSummary,
    /// The whole spec of the group.
    pub run_spec: RunSpec,
    /// The group's title: the test and every parameter off its default
    /// ([`crate::figures::spec_title`]); no two groups share one.
    pub title: String,
    /// The `netbisect bench` command that runs the configuration again.
    pub command: String,
    /// The first side in netperf's columns.
    pub first_figures: SideFigures,
    /// The second side in netperf's columns.
    pub second_figures: SideFigures,
    /// Runs on the first side.
    pub n_runs_first: usize,
    /// Runs on the second side.
    pub n_runs_second: usize,
    /// True when the sides' sets of `config_key`s differ: the runs were
    /// made in environments that are not comparable knob for knob.
    pub config_keys_differ: bool,
    /// Environment differences that matter between a representative run
    /// of each side (the earliest); empty when the environments agree.
    pub env_differences: Vec<EnvChange>,
    /// One row per metric compared.
    pub rows: Vec<ComparisonRow>,
}

/// The parts of a run spec that name a group for a reader.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SpecSummary {
    /// Test name as netperf spells it (`TCP_STREAM`).
    pub test: String,
    /// Testbed name.
    pub testbed: String,
    /// `ipv4` or `ipv6`.
    pub family: String,
    /// Bytes per send call (stream tests; `null` otherwise).
    pub send_size_bytes: Option<u32>,
    /// Bytes per receive call (stream tests).
    pub recv_size_bytes: Option<u32>,
    /// Request size (request/response tests).
    pub request_size_bytes: Option<u32>,
    /// Response size (request/response tests).
    pub response_size_bytes: Option<u32>,
    /// Requested local socket buffer; `null` when left to the kernel.
    pub local_socket_buffer_bytes: Option<u32>,
    /// Requested remote socket buffer.
    pub remote_socket_buffer_bytes: Option<u32>,
    /// Parallel flows.
    pub flows: u32,
    /// TCP_NODELAY set.
    pub nodelay: bool,
    /// First burst (`-b`), when there is one.
    pub first_burst: Option<u32>,
    /// Length of one iteration, seconds.
    pub duration_s: f64,
}

impl SpecSummary {
    /// The summary of `record`'s spec and testbed.
    pub fn of(record: &RunRecord) -> SpecSummary {
        let spec = &record.spec;
        let request_response = spec.test.is_request_response();
        let stream_only = |value: u32| (!request_response).then_some(value);
        let rr_only = |value: u32| request_response.then_some(value);
        SpecSummary {
            test: spec.test.name().to_string(),
            testbed: record.testbed.clone(),
            family: match spec.family {
                AddressFamily::Ipv4 => "ipv4".to_string(),
                AddressFamily::Ipv6 => "ipv6".to_string(),
            },
            send_size_bytes: stream_only(spec.send_size_bytes),
            recv_size_bytes: stream_only(spec.recv_size_bytes),
            request_size_bytes: rr_only(spec.request_size_bytes),
            response_size_bytes: rr_only(spec.response_size_bytes),
            local_socket_buffer_bytes: spec.local_socket_buffer_bytes,
            remote_socket_buffer_bytes: spec.remote_socket_buffer_bytes,
            flows: spec.flows,
            nodelay: spec.nodelay,
            first_burst: (spec.first_burst > 0).then_some(spec.first_burst),
            duration_s: spec.duration_s,
        }
    }
}

/// Which end of the test an environment difference is on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Host {
    /// The end that ran `bench`.
    Local,
    /// The server end.
    Remote,
}

/// One environment knob that differs between the sides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EnvChange {
    /// The end the knob belongs to.
    pub host: Host,
    /// Flattened key, such as `sysctl.net.ipv4.tcp_rmem` or `governor`.
    pub key: String,
    /// Value on the first side; `null` when not recorded.
    pub first: Option<String>,
    /// Value on the second side.
    pub second: Option<String>,
}

/// One metric compared between the sides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ComparisonRow {
    /// Metric name ([`Metric::name`], such as `throughput_bps`).
    pub metric: String,
    /// Unit of every value of the row (`bits/s`, `trans/s`, `us`,
    /// `us/KB`, `us/Tran`, `%`).
    pub unit: String,
    /// True when a larger value is better.
    pub higher_is_better: bool,
    /// The first side; `null` when it has no sample of the metric.
    pub first: Option<SideSummary>,
    /// The second side.
    pub second: Option<SideSummary>,
    /// Change of the means from first to second, percent of the first,
    /// signed; `null` when a side is missing or the first mean is zero.
    pub change_pct: Option<f64>,
    /// Lower bound of the 95% interval on the change, percent: the
    /// interval on the ratio of the means (Fieller's, or on the log
    /// scale; see `bench_core::stats::ratio`); `null` with fewer than two
    /// samples a side or no bounded interval.
    pub change_low_pct: Option<f64>,
    /// Upper bound of that interval, percent.
    pub change_high_pct: Option<f64>,
    /// Two-sided Mann-Whitney p value; `null` when a side is missing.
    pub p_value: Option<f64>,
    /// What the test says.
    pub verdict: Verdict,
    /// Whether the change of the means is for the better or the worse;
    /// `null` when the means are equal or a side is missing.
    pub direction: Option<Direction>,
    /// For a row not called significant (`?` or `~`): the samples per
    /// side at which the Mann-Whitney test would reach alpha with
    /// [`DECIDE_POWER`] for a change of [`ComparisonRow::effect_pct`], at
    /// the noise observed (the pooled standard deviation of the sides;
    /// see `bench_core::stats::power`); `null` when the sides show no
    /// noise or the row is decided.
    pub samples_to_decide: Option<usize>,
    /// The change `samples_to_decide` is for, percent: `--min-effect`,
    /// or the observed change when that is 0.
    pub effect_pct: Option<f64>,
    /// `samples_to_decide` in runs: how many more runs each side needs,
    /// at the samples per run each side has (the larger of the two).
    pub more_runs_per_side: Option<usize>,
}

/// Mean, spread and count of one side's samples of a metric.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SideSummary {
    /// Number of samples (iterations over all runs of the side).
    pub n_samples: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation; `null` with one sample.
    pub stddev: Option<f64>,
    /// Standard deviation as percent of `|mean|`; `null` with one sample
    /// or a zero mean.
    pub spread_pct: Option<f64>,
    /// Smallest sample.
    pub min: f64,
    /// Largest sample.
    pub max: f64,
}

impl SideSummary {
    /// Summarises `samples`; `None` when there are none.
    pub fn of(samples: &[f64]) -> Result<Option<SideSummary>, StatsError> {
        if samples.is_empty() {
            return Ok(None);
        }
        let mean = stats::mean(samples)?;
        let stddev = if samples.len() > 1 {
            Some(stats::sample_stddev(samples)?)
        } else {
            None
        };
        let spread_pct = stddev
            .filter(|_| mean != 0.0)
            .map(|stddev| stddev / mean.abs() * 100.0);
        Ok(Some(SideSummary {
            n_samples: samples.len(),
            mean,
            stddev,
            spread_pct,
            min: samples.iter().copied().fold(f64::INFINITY, f64::min),
            max: samples.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        }))
    }
}

/// The significance verdict of a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Too few samples for the test to ever reach alpha (or a side has
    /// none); see [`Comparison::min_samples`].
    NeedSamples,
    /// Within noise: `p >= alpha`, or the change is below the minimum
    /// effect. Printed `~`.
    NotSignificant,
    /// A real change.
    Significant,
}

/// Whether a change is for the better, given the metric's direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The metric moved the good way.
    Improvement,
    /// The metric moved the bad way.
    Regression,
}

impl Direction {
    /// The direction of a move from `from` to `to` of `metric`; `None`
    /// when they are equal.
    pub fn of_change(metric: Metric, from: f64, to: f64) -> Option<Direction> {
        if to == from {
            return None;
        }
        let went_up = to > from;
        if went_up == metric.higher_is_better() {
            Some(Direction::Improvement)
        } else {
            Some(Direction::Regression)
        }
    }
}

/// A group with runs on one side only.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnmatchedGroup {
    /// The side that has runs.
    pub side: Side,
    /// The group's spec key.
    pub spec_key: String,
    /// What the runs measured.
    pub spec: SpecSummary,
    /// The group's title, as [`ComparisonGroup::title`].
    pub title: String,
    /// The title's parameters one by one (`-S 2280`, `nodelay`).
    pub title_options: Vec<String>,
    /// Number of runs.
    pub n_runs: usize,
    /// The testbed of the other side's runs when they measured the same
    /// test but on another testbed (an import without `--testbed` beside
    /// a local run, say): the reason they are not compared.
    pub other_testbed: Option<String>,
}

/// One of the two sides of a comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The first side (base).
    First,
    /// The second side (patched).
    Second,
}

/// The unit `metric` is recorded in for a run of `test`: SI base units,
/// and netperf's units for service demand.
pub fn metric_unit(metric: Metric, test: TestKind) -> &'static str {
    match metric {
        Metric::ThroughputBps => "bits/s",
        Metric::TransactionRate => "trans/s",
        Metric::LatencyMeanUs
        | Metric::LatencyP50Us
        | Metric::LatencyP90Us
        | Metric::LatencyP99Us
        | Metric::LatencyP999Us => "us",
        Metric::LocalCpuPct | Metric::RemoteCpuPct => "%",
        Metric::LocalServiceDemand | Metric::RemoteServiceDemand => {
            if test.is_request_response() {
                "us/Tran"
            } else {
                "us/KB"
            }
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
                    title: spec_title(&representative.spec, &representative.testbed),
                    title_options: spec_options(&representative.spec)
                        .into_iter()
                        .map(|option| option.title)
                        .collect(),
                    n_runs: runs.first.len() + runs.second.len(),
                    other_testbed: None,
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
        title: spec_title(&first_rep.spec, &first_rep.testbed),
        command: spec_command(&first_rep.spec),
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
        unit: metric_unit(metric, test).to_string(),
        higher_is_better: metric.higher_is_better(),
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
    row.direction = Direction::of_change(metric, first_summary.mean, second_summary.mean);
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use bench_core::record::{CpuFigures, Summary};
    use test_fixtures::record::RecordBuilder;

    /// Deterministic noise in [-1, 1): a 64-bit linear congruential
    /// generator (Knuth's MMIX constants), enough to scatter samples.
    pub(crate) struct Noise(pub u64);

    impl Noise {
        pub(crate) fn next(&mut self) -> f64 {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((self.0 >> 11) as f64 / (1_u64 << 53) as f64) * 2.0 - 1.0
        }

        /// `n` values around `level`, spread by `relative` of it.
        pub(crate) fn around(&mut self, level: f64, relative: f64, n: usize) -> Vec<f64> {
            (0..n)
                .map(|_| level * (1.0 + relative * self.next()))
                .collect()
        }
    }

    /// A sealed run of `test` at `commit` whose iterations carry
    /// `samples` as the primary metric. Request/response runs also get a
    /// p99 latency of 1.5 transaction times; runs with `cpu` get a local
    /// service demand of 1000 / sample.
    pub(crate) fn run(
        test: TestKind,
        commit: &str,
        started_at: &str,
        samples: &[f64],
        cpu: bool,
    ) -> RunRecord {
        RecordBuilder::new(test)
            .spec_with(|spec| spec.local_cpu = cpu)
            .started_at(started_at)
            .finished_at(started_at)
            .commit(commit)
            .samples(samples)
            .each_iteration(|idx, iteration| {
                iteration.cpu = cpu.then(|| CpuFigures {
                    local_service_demand: Some(1000.0 / samples[idx]),
                    ..CpuFigures::default()
                });
            })
            .summary(Summary::default())
            .build()
    }

    fn only_group(comparison: &Comparison) -> &ComparisonGroup {
        assert_eq!(comparison.groups.len(), 1, "{comparison:#?}");
        &comparison.groups[0]
    }

    #[test]
    fn clear_ten_percent_gain_is_significant_and_an_improvement() {
        let mut noise = Noise(1);
        let base = run(
            TestKind::TcpStream,
            "aaaaaaa",
            "2024-01-01T00:00:00Z",
            &noise.around(9.4e9, 0.01, 8),
            false,
        );
        let patched = run(
            TestKind::TcpStream,
            "bbbbbbb",
            "2024-01-02T00:00:00Z",
            &noise.around(9.4e9 * 1.1, 0.01, 8),
            false,
        );
        let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
        assert_eq!(comparison.min_samples, 4);
        let group = only_group(&comparison);
        assert_eq!(group.spec.test, "TCP_STREAM");
        assert!(!group.config_keys_differ);
        assert!(group.env_differences.is_empty());
        assert_eq!(group.rows.len(), 1);
        let row = &group.rows[0];
        assert_eq!(row.metric, "throughput_bps");
        assert_eq!(row.unit, "bits/s");
        assert_eq!(row.verdict, Verdict::Significant);
        assert_eq!(row.direction, Some(Direction::Improvement));
        let change_pct = row.change_pct.unwrap();
        assert!((change_pct - 10.0).abs() < 1.5, "{change_pct}");
        // Every patched sample beats every base sample: the exact p is
        // the smallest there is for 8 against 8.
        assert_eq!(row.p_value, Some(2.0 / 12870.0));
        assert_eq!(row.first.as_ref().unwrap().n_samples, 8);

        // The same data with a minimum effect above the change is noise.
        let strict = CompareOptions {
            min_effect_pct: 15.0,
            ..CompareOptions::default()
        };
        let base = run(
            TestKind::TcpStream,
            "aaaaaaa",
            "2024-01-01T00:00:00Z",
            &Noise(1).around(9.4e9, 0.01, 8),
            false,
        );
        let mut noise = Noise(1);
        noise.around(9.4e9, 0.01, 8);
        let patched = run(
            TestKind::TcpStream,
            "bbbbbbb",
            "2024-01-02T00:00:00Z",
            &noise.around(9.4e9 * 1.1, 0.01, 8),
            false,
        );
        let comparison = compare(&[base], &[patched], &strict).unwrap();
        assert_eq!(
            only_group(&comparison).rows[0].verdict,
            Verdict::NotSignificant
        );
    }

    #[test]
    fn same_distribution_is_noise() {
        let mut noise = Noise(7);
        let samples = noise.around(50_000.0, 0.02, 16);
        let (first, second): (Vec<f64>, Vec<f64>) =
            samples.chunks(2).map(|pair| (pair[0], pair[1])).unzip();
        let base = run(
            TestKind::TcpRr,
            "aaaaaaa",
            "2024-01-01T00:00:00Z",
            &first,
            false,
        );
        let patched = run(
            TestKind::TcpRr,
            "bbbbbbb",
            "2024-01-02T00:00:00Z",
            &second,
            false,
        );
        let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
        let group = only_group(&comparison);
        let metrics: Vec<&str> = group.rows.iter().map(|row| row.metric.as_str()).collect();
        assert_eq!(
            metrics,
            ["transaction_rate", "throughput_bps", "latency_p99_us"]
        );
        for row in &group.rows {
            assert_eq!(row.verdict, Verdict::NotSignificant, "{row:#?}");
            assert!(row.p_value.unwrap() >= 0.05);
        }
    }

    #[test]
    fn two_against_two_needs_more_samples() {
        let base = run(
            TestKind::TcpStream,
            "aaaaaaa",
            "2024-01-01T00:00:00Z",
            &[100.0, 101.0],
            false,
        );
        let patched = run(
            TestKind::TcpStream,
            "bbbbbbb",
            "2024-01-02T00:00:00Z",
            &[200.0, 201.0],
            false,
        );
        let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
        let row = &only_group(&comparison).rows[0];
        assert_eq!(row.verdict, Verdict::NeedSamples);
        assert_eq!(comparison.min_samples, 4);
        // The change is still reported, for what it is worth.
        assert_eq!(row.change_pct, Some(99.50248756218906));

        // Three runs of one iteration each are three samples, still too
        // few at 0.05; four are enough.
        let side = |commit: &str, values: &[f64]| -> Vec<RunRecord> {
            values
                .iter()
                .enumerate()
                .map(|(idx, value)| {
                    run(
                        TestKind::TcpStream,
                        commit,
                        &format!("2024-01-0{}T00:00:00Z", idx + 1),
                        &[*value],
                        false,
                    )
                })
                .collect()
        };
        let comparison = compare(
            &side("aaaaaaa", &[1.0, 2.0, 3.0]),
            &side("bbbbbbb", &[7.0, 8.0, 9.0]),
            &CompareOptions::default(),
        )
        .unwrap();
        let group = only_group(&comparison);
        assert_eq!((group.n_runs_first, group.n_runs_second), (3, 3));
        assert_eq!(group.rows[0].verdict, Verdict::NeedSamples);
        let comparison = compare(
            &side("aaaaaaa", &[1.0, 2.0, 3.0, 4.0]),
            &side("bbbbbbb", &[7.0, 8.0, 9.0, 10.0]),
            &CompareOptions::default(),
        )
        .unwrap();
        assert_eq!(
            only_group(&comparison).rows[0].verdict,
            Verdict::Significant
        );
    }

    #[test]
    fn an_undecided_row_says_how_many_more_runs_would_decide_it() {
        // One run of three iterations a side, standard deviation 2 on a
        // mean of 100 both sides.
        let base = run(
            TestKind::TcpStream,
            "aaaaaaa",
            "2024-01-01T00:00:00Z",
            &[98.0, 100.0, 102.0],
            false,
        );
        let patched = run(
            TestKind::TcpStream,
            "bbbbbbb",
            "2024-01-02T00:00:00Z",
            &[99.0, 101.0, 103.0],
            false,
        );
        let options = CompareOptions {
            min_effect_pct: 2.0,
            ..CompareOptions::default()
        };
        let comparison = compare(
            std::slice::from_ref(&base),
            std::slice::from_ref(&patched),
            &options,
        )
        .unwrap();
        let row = &only_group(&comparison).rows[0];
        assert_eq!(row.verdict, Verdict::NeedSamples);
        // 2% of 100 is one deviation: the t test needs 16.66 a side
        // (normal 15.70 + 1.96^2/4), Mann-Whitney 16.66 / (3/pi) = 17.4,
        // so 18: 15 more samples, five more runs of three.
        assert_eq!(row.effect_pct, Some(2.0));
        assert_eq!(row.samples_to_decide, Some(18));
        assert_eq!(row.more_runs_per_side, Some(5));

        // Without --min-effect the observed 1% is the change to see: half
        // a deviation, 67 a side, 64 more samples, 22 runs.
        let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
        let row = &only_group(&comparison).rows[0];
        assert_eq!(row.effect_pct.map(|pct| (pct * 1e9).round()), Some(1e9));
        assert_eq!(row.samples_to_decide, Some(67));
        assert_eq!(row.more_runs_per_side, Some(22));
    }

    #[test]
    fn a_decided_or_noiseless_row_has_no_runs_to_go() {
        let mut noise = Noise(11);
        let base = run(
            TestKind::TcpStream,
            "aaaaaaa",
            "2024-01-01T00:00:00Z",
            &noise.around(100.0, 0.01, 8),
            false,
        );
        let patched = run(
            TestKind::TcpStream,
            "bbbbbbb",
            "2024-01-02T00:00:00Z",
            &noise.around(120.0, 0.01, 8),
            false,
        );
        let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
        let row = &only_group(&comparison).rows[0];
        assert_eq!(row.verdict, Verdict::Significant);
        assert_eq!(row.samples_to_decide, None);
        assert_eq!(row.more_runs_per_side, None);

        // One sample a side shows no noise to reckon with.
        let one = |commit: &str, value: f64| {
            run(
                TestKind::TcpStream,
                commit,
                "2024-01-01T00:00:00Z",
                &[value],
                false,
            )
        };
        let comparison = compare(
            &[one("aaaaaaa", 100.0)],
            &[one("bbbbbbb", 101.0)],
            &CompareOptions::default(),
        )
        .unwrap();
        let row = &only_group(&comparison).rows[0];
        assert_eq!(row.verdict, Verdict::NeedSamples);
        assert_eq!(row.samples_to_decide, None);
        assert_eq!(row.more_runs_per_side, None);
    }

    #[test]
    fn environment_differences_that_matter_are_listed() {
        let mut noise = Noise(3);
        let mut base = run(
            TestKind::TcpStream,
            "aaaaaaa",
            "2024-01-01T00:00:00Z",
            &noise.around(1e9, 0.01, 5),
            false,
        );
        let mut patched = run(
            TestKind::TcpStream,
            "bbbbbbb",
            "2024-01-02T00:00:00Z",
            &noise.around(1e9, 0.01, 5),
            false,
        );
        base.env.local.kernel_release = Some("6.8.0".into());
        base.env.local.governor = Some("performance".into());
        base.env
            .local
            .sysctls
            .insert("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into());
        patched.env.local = base.env.local.clone();
        patched.env.local.kernel_release = Some("6.8.0-patched".into());
        patched
            .env
            .local
            .sysctls
            .insert("net.ipv4.tcp_rmem".into(), "4096 87380 6291456".into());
        base.env.remote = Some(HostEnv {
            cpu_count: Some(8),
            ..HostEnv::default()
        });
        patched.env.remote = Some(HostEnv {
            cpu_count: Some(16),
            ..HostEnv::default()
        });
        base.seal().unwrap();
        patched.seal().unwrap();
        let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
        let group = only_group(&comparison);
        assert!(group.config_keys_differ);
        assert_eq!(
            group.env_differences,
            [
                EnvChange {
                    host: Host::Local,
                    key: "sysctl.net.ipv4.tcp_rmem".into(),
                    first: Some("4096 131072 6291456".into()),
                    second: Some("4096 87380 6291456".into()),
                },
                EnvChange {
                    host: Host::Remote,
                    key: "cpu_count".into(),
                    first: Some("8".into()),
                    second: Some("16".into()),
                },
            ]
        );
    }

    #[test]
    fn groups_on_one_side_only_are_listed() {
        let stream = |commit: &str| {
            run(
                TestKind::TcpStream,
                commit,
                "2024-01-01T00:00:00Z",
                &[1.0, 2.0, 3.0, 4.0],
                false,
            )
        };
        let rr = run(
            TestKind::TcpRr,
            "aaaaaaa",
            "2024-01-01T00:00:00Z",
            &[1.0, 2.0],
            false,
        );
        let udp = run(
            TestKind::UdpStream,
            "bbbbbbb",
            "2024-01-01T00:00:00Z",
            &[1.0, 2.0],
            false,
        );
        let comparison = compare(
            &[stream("aaaaaaa"), rr.clone()],
            &[stream("bbbbbbb"), udp.clone()],
            &CompareOptions::default(),
        )
        .unwrap();
        assert_eq!(comparison.groups.len(), 1);
        let unmatched: Vec<(Side, &str, usize)> = comparison
            .unmatched
            .iter()
            .map(|group| (group.side, group.spec.test.as_str(), group.n_runs))
            .collect();
        assert_eq!(
            unmatched,
            [(Side::First, "TCP_RR", 1), (Side::Second, "UDP_STREAM", 1)]
        );
        assert_eq!(
            comparison.unmatched[0].spec_key,
            rr.compute_spec_key().unwrap()
        );
        assert_eq!(comparison.unmatched[0].spec.request_size_bytes, Some(1));
        assert_eq!(comparison.unmatched[0].spec.send_size_bytes, None);
    }

    #[test]
    fn lower_is_better_for_latency_and_service_demand() {
        let mut noise = Noise(11);
        let base = run(
            TestKind::TcpRr,
            "aaaaaaa",
            "2024-01-01T00:00:00Z",
            &noise.around(40_000.0, 0.01, 8),
            true,
        );
        let patched = run(
            TestKind::TcpRr,
            "bbbbbbb",
            "2024-01-02T00:00:00Z",
            &noise.around(36_000.0, 0.01, 8),
            true,
        );
        let comparison = compare(&[base], &[patched], &CompareOptions::default()).unwrap();
        let rows = &only_group(&comparison).rows;
        let summary: Vec<(&str, &str, Verdict, Option<Direction>, bool)> = rows
            .iter()
            .map(|row| {
                (
                    row.metric.as_str(),
                    row.unit.as_str(),
                    row.verdict,
                    row.direction,
                    row.change_pct.unwrap() > 0.0,
                )
            })
            .collect();
        // Fewer transactions: the rate fell (worse), so latency and CPU
        // per transaction rose (also worse), with the opposite sign.
        assert_eq!(
            summary,
            [
                (
                    "transaction_rate",
                    "trans/s",
                    Verdict::Significant,
                    Some(Direction::Regression),
                    false
                ),
                (
                    "throughput_bps",
                    "bits/s",
                    Verdict::Significant,
                    Some(Direction::Regression),
                    false
                ),
                (
                    "latency_p99_us",
                    "us",
                    Verdict::Significant,
                    Some(Direction::Regression),
                    true
                ),
                (
                    "local_service_demand",
                    "us/Tran",
                    Verdict::Significant,
                    Some(Direction::Regression),
                    true
                ),
            ]
        );
        assert_eq!(
            Direction::of_change(Metric::LatencyP99Us, 30.0, 25.0),
            Some(Direction::Improvement)
        );
        assert_eq!(Direction::of_change(Metric::LatencyP99Us, 30.0, 30.0), None);
    }

    /// Where the template samples live: the renderer's rules test renders
    /// every one of them and pins the text with a snapshot.
    fn samples_dir() -> std::path::PathBuf {
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/data/template-samples")
    }

    /// Checks that the committed sample `name` is `value` serialised, so
    /// the samples the templates are tested on follow the schema. With
    /// `NETBISECT_UPDATE_SAMPLES` set, rewrites it instead.
    pub(crate) fn check_template_sample(name: &str, value: &impl Serialize) {
        let text = serde_json::to_string_pretty(value).unwrap() + "\n";
        let path = samples_dir().join(format!("{name}.json"));
        if std::env::var_os("NETBISECT_UPDATE_SAMPLES").is_some() {
            std::fs::write(&path, &text).unwrap();
            return;
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == text,
            "{name}.json is stale: rerun with NETBISECT_UPDATE_SAMPLES=1, then review the snapshots"
        );
    }

    /// Replaces the CPU figures of every iteration with local and remote
    /// service demands taken in turn from the lists, then reseals.
    fn with_service_demand(mut record: RunRecord, local: &[f64], remote: &[f64]) -> RunRecord {
        for (idx, iteration) in record.iterations.iter_mut().enumerate() {
            iteration.cpu = Some(CpuFigures {
                local_util_pct: Some(12.5),
                remote_util_pct: Some(14.0),
                local_service_demand: local.get(idx % local.len().max(1)).copied(),
                remote_service_demand: remote.get(idx % remote.len().max(1)).copied(),
            });
        }
        record.seal().unwrap();
        record
    }

    /// Replaces the p99 latency of every iteration, then reseals.
    fn with_p99(mut record: RunRecord, p99_us: &[f64]) -> RunRecord {
        for (iteration, p99) in record.iterations.iter_mut().zip(p99_us) {
            if let Some(latency) = iteration.latency.as_mut() {
                latency.p99_us = *p99;
            }
        }
        record.seal().unwrap();
        record
    }

    #[test]
    fn template_samples_are_current() {
        let mut noise = Noise(42);
        let at = |day: u32| format!("2024-03-{day:02}T09:00:00Z");

        // A patch email: a throughput gain, a latency regression within an
        // unchanged transaction rate, too few UDP samples, one test per
        // side that the other lacks, and a sysctl that changed between.
        let mut stream_base = run(
            TestKind::TcpStream,
            "1a2b3c4d5e6f",
            &at(1),
            &noise.around(9.41325e9, 0.008, 8),
            true,
        );
        stream_base.env.local.governor = Some("performance".into());
        stream_base
            .env
            .local
            .sysctls
            .insert("net.ipv4.tcp_rmem".into(), "4096 131072 6291456".into());
        let stream_base = with_service_demand(
            stream_base,
            &noise.around(0.412, 0.02, 8),
            &noise.around(0.388, 0.02, 8),
        );
        let mut stream_patched = run(
            TestKind::TcpStream,
            "9f8e7d6c5b4a",
            &at(2),
            &noise.around(9.41325e9 * 1.1, 0.008, 8),
            true,
        );
        stream_patched.env.local.governor = Some("schedutil".into());
        stream_patched
            .env
            .local
            .sysctls
            .insert("net.ipv4.tcp_rmem".into(), "4096 87380 6291456".into());
        let stream_patched = with_service_demand(
            stream_patched,
            &noise.around(0.376, 0.02, 8),
            &noise.around(0.390, 0.02, 8),
        );
        let rr_base = with_p99(
            run(
                TestKind::TcpRr,
                "1a2b3c4d5e6f",
                &at(1),
                &noise.around(53_012.0, 0.004, 6),
                false,
            ),
            &noise.around(31.0, 0.01, 6),
        );
        let rr_patched = with_p99(
            run(
                TestKind::TcpRr,
                "9f8e7d6c5b4a",
                &at(2),
                &noise.around(52_990.0, 0.004, 6),
                false,
            ),
            &noise.around(33.0, 0.01, 6),
        );
        let udp_base = run(
            TestKind::UdpStream,
            "1a2b3c4d5e6f",
            &at(1),
            &noise.around(4.2e9, 0.01, 2),
            false,
        );
        let udp_patched = run(
            TestKind::UdpStream,
            "9f8e7d6c5b4a",
            &at(2),
            &noise.around(4.3e9, 0.01, 2),
            false,
        );
        let maerts = run(
            TestKind::TcpMaerts,
            "1a2b3c4d5e6f",
            &at(1),
            &noise.around(9.2e9, 0.01, 3),
            false,
        );
        let crr = run(
            TestKind::TcpCrr,
            "9f8e7d6c5b4a",
            &at(2),
            &noise.around(8_000.0, 0.01, 3),
            false,
        );
        let options = CompareOptions {
            first_label: "v6.8-rc1 (1a2b3c4d5e6f)".into(),
            second_label: "v6.8-rc1 + tcp: defer ack on sleep (9f8e7d6c5b4a)".into(),
            first_name: "v6.8-rc1".into(),
            second_name: "9f8e7d6c5b4a".into(),
            ..CompareOptions::default()
        };
        let comparison = compare(
            &[stream_base, rr_base, udp_base, maerts],
            &[stream_patched, rr_patched, udp_patched, crr],
            &options,
        )
        .unwrap();
        for template in ["compare", "compare-stats"] {
            check_template_sample(&format!("{template}--base-vs-patched"), &comparison);
        }

        // Extremes: 100 Gb/s, service demand of a thousandth, long labels
        // and testbed, many flows, set buffers, IPv6, and a long list of
        // environment differences, one of them unset on a side.
        let long_testbed = "rack42-mlx5-100g-back-to-back-numa1-with-a-very-long-name";
        let extreme_run = |commit: &str, day: u32, level: f64, noise: &mut Noise| {
            let mut record = run(
                TestKind::TcpStream,
                commit,
                &at(day),
                &noise.around(level, 0.002, 12),
                true,
            );
            record.testbed = long_testbed.into();
            record.spec.family = AddressFamily::Ipv6;
            record.spec.flows = 16;
            record.spec.nodelay = true;
            record.spec.local_socket_buffer_bytes = Some(4_194_304);
            record.spec.remote_socket_buffer_bytes = Some(4_194_304);
            record.spec.send_size_bytes = 65_536;
            record
        };
        let mut extreme_base = extreme_run("0123456789ab", 3, 1.0e11, &mut noise);
        let mut extreme_patched = extreme_run("ba9876543210", 4, 0.997e11, &mut noise);
        extreme_base.env.local.sysctls.insert(
            "net.ipv4.tcp_mem".into(),
            "18446744073709551615 18446744073709551615 18446744073709551615".into(),
        );
        extreme_patched
            .env
            .local
            .sysctls
            .insert("net.ipv4.tcp_mem".into(), "1 2 3".into());
        extreme_base
            .env
            .local
            .sysctls
            .insert("net.core.busy_poll".into(), "50".into());
        extreme_base.env.local.cpu_count = Some(256);
        extreme_patched.env.local.cpu_count = Some(8);
        extreme_base.env.remote = Some(HostEnv {
            interface: Some(bench_core::env::InterfaceEnv {
                name: "ens1f0np0".into(),
                features: [("tcp-segmentation-offload".to_string(), true)].into(),
                ..Default::default()
            }),
            ..HostEnv::default()
        });
        extreme_patched.env.remote = Some(HostEnv {
            interface: Some(bench_core::env::InterfaceEnv {
                name: "ens1f0np0".into(),
                features: [("tcp-segmentation-offload".to_string(), false)].into(),
                ..Default::default()
            }),
            ..HostEnv::default()
        });
        let extreme_base =
            with_service_demand(extreme_base, &noise.around(0.001, 0.05, 12), &[0.0004]);
        let extreme_patched =
            with_service_demand(extreme_patched, &noise.around(0.0011, 0.05, 12), &[0.0004]);
        let extreme_options = CompareOptions {
            alpha: 0.01,
            min_effect_pct: 1.0,
            first_label: "v6.9-rc7-01234-g0123456789ab-dirty built with CONFIG_DEBUG_PREEMPT=y \
                          and CONFIG_PROVE_LOCKING=y on the lab's slowest box"
                .into(),
            second_label: "ba9876543210ba9876543210ba9876543210ba98".into(),
            first_name: "v6.9-rc7-01234-g0123456789ab".into(),
            second_name: "ba9876543210".into(),
        };
        // An imported request/response run without transaction rates on
        // the base side, and a remote environment on one side only.
        let mut rr_without_rate = run(
            TestKind::TcpRr,
            "0123456789ab",
            &at(3),
            &noise.around(8.0, 0.01, 5),
            false,
        );
        for iteration in &mut rr_without_rate.iterations {
            iteration.transaction_rate = None;
        }
        rr_without_rate.seal().unwrap();
        let mut rr_with_remote = run(
            TestKind::TcpRr,
            "ba9876543210",
            &at(4),
            &noise.around(8.0, 0.01, 5),
            false,
        );
        rr_with_remote.env.remote = Some(HostEnv {
            cpu_count: Some(8),
            ..HostEnv::default()
        });
        rr_with_remote.seal().unwrap();
        let comparison = compare(
            &[extreme_base, rr_without_rate],
            &[extreme_patched, rr_with_remote],
            &extreme_options,
        )
        .unwrap();
        let rr_group = &comparison.groups[1];
        assert!(rr_group.config_keys_differ && rr_group.env_differences.is_empty());
        assert_eq!(rr_group.rows[0].first, None);
        for template in ["compare", "compare-stats"] {
            check_template_sample(&format!("{template}--extreme"), &comparison);
        }

        // Nothing in common: every group is on one side only.
        let comparison = compare(
            &[run(
                TestKind::TcpStream,
                "1a2b3c4d5e6f",
                &at(1),
                &[1e9, 1.1e9],
                false,
            )],
            &[run(TestKind::UdpRr, "9f8e7d6c5b4a", &at(2), &[1e4], false)],
            &CompareOptions::default(),
        )
        .unwrap();
        for template in ["compare", "compare-stats"] {
            check_template_sample(&format!("{template}--nothing-in-common"), &comparison);
        }
    }

    #[test]
    fn options_are_checked() {
        for options in [
            CompareOptions {
                alpha: 0.0,
                ..CompareOptions::default()
            },
            CompareOptions {
                alpha: f64::NAN,
                ..CompareOptions::default()
            },
            CompareOptions {
                min_effect_pct: -1.0,
                ..CompareOptions::default()
            },
        ] {
            assert!(matches!(
                compare(&[], &[], &options),
                Err(CompareError::InvalidOption(_))
            ));
        }
        let empty = compare(&[], &[], &CompareOptions::default()).unwrap();
        assert!(empty.groups.is_empty() && empty.unmatched.is_empty());
    }
}
