//! The figures a run can be compared or bisected on, by name, where each
//! is found in an iteration or a summary, the unit it is recorded in and
//! which way of it is better.

use super::{CpuFigures, Iteration, LatencyFigures, LatencyReport, Summary};
use crate::spec::{RunSpec, TestKind};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A figure a run can be compared or bisected on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// Throughput, bits per second.
    ThroughputBps,
    /// Transactions per second.
    TransactionRate,
    /// Mean transaction latency, microseconds.
    LatencyMeanUs,
    /// Median latency.
    LatencyP50Us,
    /// 90th-percentile latency.
    LatencyP90Us,
    /// 99th-percentile latency.
    LatencyP99Us,
    /// 99.9th-percentile latency.
    LatencyP999Us,
    /// Local CPU utilisation, percent.
    LocalCpuPct,
    /// Remote CPU utilisation, percent.
    RemoteCpuPct,
    /// Local service demand.
    LocalServiceDemand,
    /// Remote service demand.
    RemoteServiceDemand,
}

impl Metric {
    /// Every metric.
    pub const ALL: [Metric; 11] = [
        Metric::ThroughputBps,
        Metric::TransactionRate,
        Metric::LatencyMeanUs,
        Metric::LatencyP50Us,
        Metric::LatencyP90Us,
        Metric::LatencyP99Us,
        Metric::LatencyP999Us,
        Metric::LocalCpuPct,
        Metric::RemoteCpuPct,
        Metric::LocalServiceDemand,
        Metric::RemoteServiceDemand,
    ];

    /// The metric's name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            Metric::ThroughputBps => "throughput_bps",
            Metric::TransactionRate => "transaction_rate",
            Metric::LatencyMeanUs => "latency_mean_us",
            Metric::LatencyP50Us => "latency_p50_us",
            Metric::LatencyP90Us => "latency_p90_us",
            Metric::LatencyP99Us => "latency_p99_us",
            Metric::LatencyP999Us => "latency_p999_us",
            Metric::LocalCpuPct => "local_cpu_pct",
            Metric::RemoteCpuPct => "remote_cpu_pct",
            Metric::LocalServiceDemand => "local_service_demand",
            Metric::RemoteServiceDemand => "remote_service_demand",
        }
    }

    /// Which way of the metric is better: higher for rates, lower for
    /// latency, CPU and service demand.
    pub fn direction(self) -> Direction {
        match self {
            Metric::ThroughputBps | Metric::TransactionRate => Direction::HigherIsBetter,
            _ => Direction::LowerIsBetter,
        }
    }

    /// The unit the metric is recorded in for a run of `test`: SI base
    /// units, and netperf's units for service demand.
    pub fn unit(self, test: TestKind) -> &'static str {
        match self {
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

    /// The metric a test kind is judged by: transactions per second for
    /// request/response tests, throughput otherwise.
    pub fn primary_for(spec: &RunSpec) -> Metric {
        if spec.test.is_request_response() {
            Metric::TransactionRate
        } else {
            Metric::ThroughputBps
        }
    }

    /// The metric's value in one iteration, when it was measured.
    pub fn of_iteration(self, iteration: &Iteration) -> Option<f64> {
        match self {
            Metric::ThroughputBps => Some(iteration.throughput_bps),
            Metric::TransactionRate => iteration.transaction_rate,
            _ => self.of_latency_or_cpu(
                iteration.latency.as_ref(),
                iteration.reported_latency.as_ref(),
                iteration.cpu.as_ref(),
            ),
        }
    }

    /// The metric's value in a run's summary, when the summary has it.
    pub fn of_summary(self, summary: &Summary) -> Option<f64> {
        match self {
            Metric::ThroughputBps => Some(summary.throughput_bps.mean),
            Metric::TransactionRate => summary.transaction_rate.as_ref().map(|rate| rate.mean),
            _ => self.of_latency_or_cpu(
                summary.latency.as_ref(),
                summary.reported_latency.as_ref(),
                summary.cpu.as_ref(),
            ),
        }
    }

    /// Latency and CPU metrics: measured latency first, then the partial
    /// latency an imported run reported.
    fn of_latency_or_cpu(
        self,
        latency: Option<&LatencyFigures>,
        reported: Option<&LatencyReport>,
        cpu: Option<&CpuFigures>,
    ) -> Option<f64> {
        let latency_value =
            |measured: fn(&LatencyFigures) -> f64, imported: fn(&LatencyReport) -> Option<f64>| {
                latency
                    .map(measured)
                    .or_else(|| reported.and_then(imported))
            };
        match self {
            Metric::ThroughputBps | Metric::TransactionRate => None,
            Metric::LatencyMeanUs => latency_value(|l| l.mean_us, |r| r.mean_us),
            Metric::LatencyP50Us => latency_value(|l| l.p50_us, |r| r.p50_us),
            Metric::LatencyP90Us => latency_value(|l| l.p90_us, |r| r.p90_us),
            Metric::LatencyP99Us => latency_value(|l| l.p99_us, |r| r.p99_us),
            Metric::LatencyP999Us => latency_value(|l| l.p999_us, |r| r.p999_us),
            Metric::LocalCpuPct => cpu.and_then(|c| c.local_util_pct),
            Metric::RemoteCpuPct => cpu.and_then(|c| c.remote_util_pct),
            Metric::LocalServiceDemand => cpu.and_then(|c| c.local_service_demand),
            Metric::RemoteServiceDemand => cpu.and_then(|c| c.remote_service_demand),
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Which way of a metric is better (a bisection's journal records it in
/// its options as `higher_is_better` or `lower_is_better`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Larger values are better (throughput, transaction rate).
    HigherIsBetter,
    /// Smaller values are better (latency, CPU).
    LowerIsBetter,
}

impl Direction {
    /// True for [`Direction::HigherIsBetter`].
    pub fn higher_is_better(self) -> bool {
        self == Direction::HigherIsBetter
    }
}

/// A metric name that netbisect does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown metric '{0}'")]
pub struct UnknownMetric(pub String);

impl FromStr for Metric {
    type Err = UnknownMetric;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Metric::ALL
            .into_iter()
            .find(|metric| metric.name() == text)
            .ok_or_else(|| UnknownMetric(text.to_string()))
    }
}
