//! The schema of `compare --json`: a comparison, its groups and rows,
//! each side's summary, the verdict and direction of a row, and the
//! groups seen on one side only. These types are also what the
//! `compare` and `compare-stats` templates read.

use crate::figures::SideFigures;
use run_record::record::{Metric, RunRecord, SystemOutcome};
use run_record::spec::{AddressFamily, RunSpec};
use run_record::stats::{self, StatsError};
use serde::Serialize;

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
    /// ([`crate::figures::spec_title`]); no two groups share one. Its
    /// settings are named as the kernel granted them
    /// ([`crate::figures::granted_words`]), of the first side's earliest
    /// run, or of the second's where only that side was refused one.
    pub title: String,
    /// What the kernel granted of the settings the spec asked, on the
    /// earliest run of each side (first, second); absent where nothing
    /// was asked.
    pub granted: [Option<SystemOutcome>; 2],
    /// The `netbisect bench` command that runs the configuration again
    /// where its first run of the first side ran (its server or its
    /// kernel and VM, its testbed), quoted for a POSIX shell; a `--set`
    /// as asked, whatever the kernel granted.
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
    /// scale; see `run_record::stats::ratio`); `null` with fewer than two
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
    pub direction: Option<ChangeKind>,
    /// For a row not called significant (`?` or `~`): the samples per
    /// side at which the Mann-Whitney test would reach alpha with
    /// [`DECIDE_POWER`](super::DECIDE_POWER) for a change of [`ComparisonRow::effect_pct`], at
    /// the noise observed (the pooled standard deviation of the sides;
    /// see `run_record::stats::power`); `null` when the sides show no
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

/// Whether a change is for the better, given which way of the metric is
/// better ([`Metric::direction`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    /// The metric moved the good way.
    Improvement,
    /// The metric moved the bad way.
    Regression,
}

impl ChangeKind {
    /// What a move from `from` to `to` of `metric` is; `None` when they
    /// are equal.
    pub fn of_change(metric: Metric, from: f64, to: f64) -> Option<ChangeKind> {
        if to == from {
            return None;
        }
        let went_up = to > from;
        if went_up == metric.direction().higher_is_better() {
            Some(ChangeKind::Improvement)
        } else {
            Some(ChangeKind::Regression)
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
    /// The whole spec of the group, for the notes on settings the
    /// kernel did not grant (not in the JSON: `title_options` says it).
    #[serde(skip)]
    pub run_spec: RunSpec,
    /// What the kernel granted of the settings the spec asked, on the
    /// earliest run; absent where nothing was asked.
    #[serde(skip)]
    pub granted: Option<SystemOutcome>,
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
