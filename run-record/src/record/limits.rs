//! The physical ranges of a record's figures and the sizes of its parts,
//! stated once and held at the record check: whatever a record's source
//! (a file, a mail, a guest, an archive), a figure no run can have, or a
//! record larger than any run writes, is refused by name
//! ([`RunRecord::check_limits`], called by [`RunRecord::from_slice`]).
//! The importers of peer tools' text hold the same ceilings before a
//! record is built (`archive`'s `plausible` check).
//!
//! The ceilings:
//!
//! - rates: throughput at most [`MAX_THROUGHPUT_BPS`], transaction and
//!   operation rates at most [`MAX_TRANSACTION_RATE`], none negative;
//! - latencies: at most [`MAX_LATENCY_US`], none negative;
//! - CPU: utilisation at most 100 % times [`MAX_HOST_CPUS`];
//! - sizes: a message, request or response at most [`MAX_MESSAGE_BYTES`]
//!   (a UDP datagram at most [`MAX_DATAGRAM_BYTES`]), a socket buffer at
//!   most [`MAX_SOCKET_BUFFER_BYTES`]; a measured time not negative;
//! - parts: at most [`MAX_RECORD_ITERATIONS`] iterations of at most
//!   [`MAX_RECORD_FLOWS`] flows, and every latency histogram of the
//!   layout of [`super::histogram`] (so at most
//!   [`super::histogram::N_BUCKETS`] buckets each, ascending, their counts
//!   adding up to the total).
//!
//! These are limits of what can be measured, not of what netbisect's
//! own `bench` asks (`spec::limits`): a run of a peer tool may ask more
//! than `bench` does and still be read.

use super::histogram::{HistogramError, N_BUCKETS};
use super::{
    BufferTruth, CpuFigures, Iteration, LatencyFigures, LatencyHistogram, LatencyReport, RunRecord,
    Spread, Summary,
};
use crate::spec::RunSpec;

/// The highest throughput a record may state, bits per second: 10
/// Tbit/s, beyond any link or loopback a run can measure today.
pub const MAX_THROUGHPUT_BPS: f64 = 1e13;

/// The highest transaction or operation rate a record may state, per
/// second.
pub const MAX_TRANSACTION_RATE: f64 = 1e10;

/// The most CPUs a host may have (Linux's largest `NR_CPUS`): a CPU
/// figure is at most 100 % times this many, since the tools that report
/// one do not say how many CPUs it was taken over.
pub const MAX_HOST_CPUS: f64 = 8192.0;

/// The longest latency a record may state, microseconds: an hour, the
/// longest test (`spec::MAX_DURATION_S`); no transaction of a run
/// outlasts it.
pub const MAX_LATENCY_US: f64 = 3.6e9;

/// The largest message, request or response, bytes: the most one read or
/// write moves on Linux (`MAX_RW_COUNT`, `INT_MAX` rounded down to a
/// page).
pub const MAX_MESSAGE_BYTES: u64 = 0x7fff_f000;

/// The largest UDP datagram, bytes (a 16-bit length).
pub const MAX_DATAGRAM_BYTES: u64 = 65_535;

/// The largest socket buffer, bytes: Linux keeps it in an `int`.
pub const MAX_SOCKET_BUFFER_BYTES: u64 = i32::MAX as u64;

/// The most iterations a record may have (netperf's `-i` limit, as
/// `spec::MAX_ITERATIONS`).
pub const MAX_RECORD_ITERATIONS: usize = crate::spec::MAX_ITERATIONS as usize;

/// The most flows an iteration may have (`spec::MAX_FLOWS`).
pub const MAX_RECORD_FLOWS: usize = crate::spec::MAX_FLOWS as usize;

/// The most latency buckets a record may hold: one histogram per
/// iteration and one for the summary, each of the whole layout.
pub const MAX_RECORD_BUCKETS: usize = (MAX_RECORD_ITERATIONS + 1) * N_BUCKETS;

/// A record beyond a limit: what, where, its value and the limit.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LimitError {
    /// A figure outside its physical range.
    #[error("{path} is {value} {unit}, {why} {limit} {unit}: no run measures that")]
    Figure {
        /// Where in the record, as `$.iterations[0].transaction_rate`.
        path: String,
        /// The value as found.
        value: String,
        /// Its unit.
        unit: &'static str,
        /// `beyond` or `below`.
        why: &'static str,
        /// The limit it passes.
        limit: String,
    },
    /// More parts than any run writes.
    #[error("{path} has {count} {what}, more than the {limit} a record may have")]
    TooMany {
        /// Where in the record.
        path: String,
        /// What is counted.
        what: &'static str,
        /// How many there are.
        count: usize,
        /// How many may be.
        limit: usize,
    },
    /// A latency histogram not of the record's layout.
    #[error("{path}: {source}")]
    Histogram {
        /// Where in the record.
        path: String,
        /// What is wrong with it.
        source: HistogramError,
    },
}

/// `value` as a message shows it: whole numbers below ten million in
/// digits, others in exponent form (`1.7e308`).
fn shown(value: f64) -> String {
    if value == value.trunc() && value.abs() < 1e7 {
        format!("{value:.0}")
    } else {
        format!("{value:e}")
    }
}

/// The checks of one record, with the path of the part being checked.
struct Check {
    path: String,
}

impl Check {
    /// Runs `check` with `part` added to the path.
    fn within<T>(
        &mut self,
        part: &str,
        check: impl FnOnce(&mut Check) -> Result<T, LimitError>,
    ) -> Result<T, LimitError> {
        let len = self.path.len();
        self.path.push_str(part);
        let result = check(self);
        self.path.truncate(len);
        result
    }

    fn here(&self, name: &str) -> String {
        format!("{}.{name}", self.path)
    }

    /// `value` of `name` within `[low, high]`.
    fn range(
        &self,
        name: &str,
        value: f64,
        unit: &'static str,
        low: Option<f64>,
        high: f64,
    ) -> Result<(), LimitError> {
        let beyond = |why: &'static str, limit: f64| LimitError::Figure {
            path: self.here(name),
            value: shown(value),
            unit,
            why,
            limit: shown(limit),
        };
        if let Some(low) = low
            && value < low
        {
            return Err(beyond("below", low));
        }
        if value > high {
            return Err(beyond("beyond", high));
        }
        Ok(())
    }

    fn throughput(&self, name: &str, value: f64) -> Result<(), LimitError> {
        self.range(name, value, "bit/s", Some(0.0), MAX_THROUGHPUT_BPS)
    }

    fn rate(&self, name: &str, value: f64) -> Result<(), LimitError> {
        self.range(name, value, "/s", Some(0.0), MAX_TRANSACTION_RATE)
    }

    fn latency(&self, name: &str, value: f64) -> Result<(), LimitError> {
        self.range(name, value, "us", Some(0.0), MAX_LATENCY_US)
    }

    fn size(&self, name: &str, value: u64, limit: u64) -> Result<(), LimitError> {
        self.range(name, value as f64, "bytes", None, limit as f64)
    }

    fn count(
        &self,
        name: &str,
        what: &'static str,
        count: usize,
        limit: usize,
    ) -> Result<(), LimitError> {
        if count > limit {
            return Err(LimitError::TooMany {
                path: self.here(name),
                what,
                count,
                limit,
            });
        }
        Ok(())
    }

    fn spread(
        &mut self,
        name: &str,
        spread: &Spread,
        each: fn(&Check, &str, f64) -> Result<(), LimitError>,
    ) -> Result<(), LimitError> {
        self.within(&format!(".{name}"), |check| {
            each(check, "mean", spread.mean)?;
            each(check, "stddev", spread.stddev)?;
            each(check, "min", spread.min)?;
            each(check, "max", spread.max)
        })
    }

    fn cpu(&mut self, cpu: &CpuFigures) -> Result<(), LimitError> {
        let max_pct = 100.0 * MAX_HOST_CPUS;
        self.within(".cpu", |check| {
            for (name, value) in [
                ("local_util_pct", cpu.local_util_pct),
                ("remote_util_pct", cpu.remote_util_pct),
            ] {
                if let Some(value) = value {
                    check.range(name, value, "%", None, max_pct)?;
                }
            }
            Ok(())
        })
    }

    fn latency_figures(&mut self, name: &str, figures: &LatencyFigures) -> Result<(), LimitError> {
        self.within(&format!(".{name}"), |check| {
            for (name, value) in [
                ("min_us", figures.min_us),
                ("mean_us", figures.mean_us),
                ("stddev_us", figures.stddev_us),
                ("p50_us", figures.p50_us),
                ("p90_us", figures.p90_us),
                ("p99_us", figures.p99_us),
                ("p999_us", figures.p999_us),
                ("max_us", figures.max_us),
            ] {
                check.latency(name, value)?;
            }
            Ok(())
        })
    }

    fn latency_report(&mut self, name: &str, report: &LatencyReport) -> Result<(), LimitError> {
        self.within(&format!(".{name}"), |check| {
            for (name, value) in [
                ("min_us", report.min_us),
                ("mean_us", report.mean_us),
                ("stddev_us", report.stddev_us),
                ("p50_us", report.p50_us),
                ("p90_us", report.p90_us),
                ("p99_us", report.p99_us),
                ("p999_us", report.p999_us),
                ("max_us", report.max_us),
            ] {
                if let Some(value) = value {
                    check.latency(name, value)?;
                }
            }
            Ok(())
        })
    }

    fn histogram(&self, name: &str, histogram: &LatencyHistogram) -> Result<(), LimitError> {
        self.count(name, "latency buckets", histogram.buckets.len(), N_BUCKETS)?;
        histogram.check().map_err(|source| LimitError::Histogram {
            path: self.here(name),
            source,
        })
    }

    fn buffer(&mut self, name: &str, buffer: &BufferTruth) -> Result<(), LimitError> {
        self.within(&format!(".{name}"), |check| {
            let limit = MAX_SOCKET_BUFFER_BYTES;
            if let Some(requested) = buffer.requested_bytes {
                check.size("requested_bytes", requested, limit)?;
            }
            check.size("after_setup_bytes", buffer.after_setup_bytes, limit)?;
            check.size("at_end_bytes", buffer.at_end_bytes, limit)
        })
    }

    fn spec(&mut self, spec: &RunSpec) -> Result<(), LimitError> {
        self.within(".spec", |check| {
            let message = if spec.test.is_udp() {
                MAX_DATAGRAM_BYTES
            } else {
                MAX_MESSAGE_BYTES
            };
            // A UDP receive may ask more than a datagram holds.
            check.size(
                "recv_size_bytes",
                u64::from(spec.recv_size_bytes),
                MAX_MESSAGE_BYTES,
            )?;
            for (name, value) in [
                ("send_size_bytes", spec.send_size_bytes),
                ("request_size_bytes", spec.request_size_bytes),
                ("response_size_bytes", spec.response_size_bytes),
            ] {
                check.size(name, u64::from(value), message)?;
            }
            for (name, value) in [
                ("local_socket_buffer_bytes", spec.local_socket_buffer_bytes),
                (
                    "remote_socket_buffer_bytes",
                    spec.remote_socket_buffer_bytes,
                ),
            ] {
                if let Some(value) = value {
                    check.size(name, u64::from(value), MAX_SOCKET_BUFFER_BYTES)?;
                }
            }
            if let Some(reported) = &spec.reported_socket_buffers {
                for (name, value) in [
                    ("local_send_bytes", reported.local_send_bytes),
                    ("local_recv_bytes", reported.local_recv_bytes),
                    ("remote_send_bytes", reported.remote_send_bytes),
                    ("remote_recv_bytes", reported.remote_recv_bytes),
                ] {
                    if let Some(value) = value {
                        check.within(".reported_socket_buffers", |check| {
                            check.size(name, u64::from(value), MAX_SOCKET_BUFFER_BYTES)
                        })?;
                    }
                }
            }
            Ok(())
        })
    }

    fn iteration(&mut self, iteration: &Iteration) -> Result<(), LimitError> {
        self.range("elapsed_s", iteration.elapsed_s, "s", Some(0.0), f64::MAX)?;
        self.throughput("throughput_bps", iteration.throughput_bps)?;
        if let Some(value) = iteration.reported_sent_throughput_bps {
            self.throughput("reported_sent_throughput_bps", value)?;
        }
        if let Some(value) = iteration.transaction_rate {
            self.rate("transaction_rate", value)?;
        }
        if let Some(value) = iteration.reported_operation_rate {
            self.rate("reported_operation_rate", value)?;
        }
        if let Some(cpu) = &iteration.cpu {
            self.cpu(cpu)?;
        }
        if let Some(latency) = &iteration.latency {
            self.latency_figures("latency", latency)?;
        }
        if let Some(report) = &iteration.reported_latency {
            self.latency_report("reported_latency", report)?;
        }
        if let Some(histogram) = &iteration.latency_histogram {
            self.histogram("latency_histogram", histogram)?;
        }
        self.count("flows", "flows", iteration.flows.len(), MAX_RECORD_FLOWS)?;
        for (flow_idx, flow) in iteration.flows.iter().enumerate() {
            self.within(&format!(".flows[{flow_idx}]"), |check| {
                check.range("elapsed_s", flow.elapsed_s, "s", Some(0.0), f64::MAX)?;
                check.throughput("throughput_bps", flow.throughput_bps)?;
                if let Some(value) = flow.transaction_rate {
                    check.rate("transaction_rate", value)?;
                }
                if let Some(latency) = &flow.latency {
                    check.latency_figures("latency", latency)?;
                }
                Ok(())
            })?;
        }
        if let Some(ends) = &iteration.ends {
            for (name, end) in [("local", &ends.local), ("remote", &ends.remote)] {
                self.within(&format!(".ends.{name}.socket"), |check| {
                    check.buffer("send_buffer", &end.socket.send_buffer)?;
                    check.buffer("recv_buffer", &end.socket.recv_buffer)
                })?;
            }
        }
        Ok(())
    }

    fn summary(&mut self, summary: &Summary) -> Result<(), LimitError> {
        self.within(".summary", |check| {
            check.spread("throughput_bps", &summary.throughput_bps, Check::throughput)?;
            if let Some(rate) = &summary.transaction_rate {
                check.spread("transaction_rate", rate, Check::rate)?;
            }
            if let Some(cpu) = &summary.cpu {
                check.cpu(cpu)?;
            }
            if let Some(latency) = &summary.latency {
                check.latency_figures("latency", latency)?;
            }
            if let Some(report) = &summary.reported_latency {
                check.latency_report("reported_latency", report)?;
            }
            if let Some(histogram) = &summary.latency_histogram {
                check.histogram("latency_histogram", histogram)?;
            }
            Ok(())
        })
    }
}

impl RunRecord {
    /// Checks the record against the limits of this module: every figure
    /// within its physical range, no more iterations, flows or latency
    /// buckets than a run writes, every histogram of the record's layout.
    /// The error names the first figure or part beyond, its value and
    /// the limit.
    pub fn check_limits(&self) -> Result<(), LimitError> {
        let mut check = Check {
            path: String::from("$"),
        };
        check.spec(&self.spec)?;
        check.count(
            "iterations",
            "iterations",
            self.iterations.len(),
            MAX_RECORD_ITERATIONS,
        )?;
        for (iteration_idx, iteration) in self.iterations.iter().enumerate() {
            check.within(&format!(".iterations[{iteration_idx}]"), |check| {
                check.iteration(iteration)
            })?;
        }
        check.summary(&self.summary)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::histogram::bucket_high;
    use crate::record::{Endpoint, Environments, Source, Subject};
    use crate::spec::TestKind;

    fn record(test: TestKind) -> RunRecord {
        RunRecord {
            schema: String::new(),
            id: String::new(),
            config_key: String::new(),
            source: Source {
                tool: "netbisect".into(),
                version: None,
                undated: false,
            },
            started_at: "2026-01-22T10:00:00Z".into(),
            finished_at: "2026-01-22T10:00:10Z".into(),
            spec: RunSpec::defaults(test),
            endpoint: Endpoint {
                host: "127.0.0.1".into(),
                port: None,
            },
            subject: Subject::default(),
            testbed: "lab".into(),
            env: Environments::default(),
            iterations: vec![Iteration {
                elapsed_s: 10.0,
                throughput_bps: 1e9,
                transaction_rate: Some(5e4),
                ..Iteration::default()
            }],
            summary: Summary::default(),
            system: None,
            experiment: None,
            command: None,
        }
    }

    fn histogram(n_buckets: usize) -> LatencyHistogram {
        LatencyHistogram {
            sub_buckets: 64,
            count: n_buckets as u64,
            min_ns: 0,
            max_ns: bucket_high(n_buckets - 1),
            buckets: (0..n_buckets)
                .map(|index| [bucket_high(index), 1])
                .collect(),
        }
    }

    #[test]
    fn a_rate_beyond_any_run_is_refused_naming_where_its_value_and_the_limit() {
        let mut absurd = record(TestKind::TcpRr);
        absurd.iterations[0].transaction_rate = Some(1.7e308);
        let err = absurd.check_limits().unwrap_err().to_string();
        assert_eq!(
            err,
            "$.iterations[0].transaction_rate is 1.7e308 /s, beyond 1e10 /s: \
             no run measures that"
        );
        let mut summary = record(TestKind::TcpStream);
        summary.summary.throughput_bps.max = 2e13;
        let err = summary.check_limits().unwrap_err().to_string();
        assert!(
            err.starts_with("$.summary.throughput_bps.max is 2e13 bit/s, beyond 1e13"),
            "{err}"
        );
        let mut negative = record(TestKind::TcpStream);
        negative.iterations[0].throughput_bps = -1.0;
        let err = negative.check_limits().unwrap_err().to_string();
        assert!(
            err.contains("throughput_bps is -1 bit/s, below 0 bit/s"),
            "{err}"
        );
    }

    #[test]
    fn latencies_cpu_and_sizes_have_their_ceilings() {
        let mut slow = record(TestKind::TcpRr);
        slow.iterations[0].latency = Some(LatencyFigures {
            p99_us: 1e12,
            ..LatencyFigures::default()
        });
        assert!(
            slow.check_limits()
                .unwrap_err()
                .to_string()
                .contains("latency.p99_us")
        );
        let mut busy = record(TestKind::TcpStream);
        busy.summary.cpu = Some(CpuFigures {
            remote_util_pct: Some(1e6),
            ..CpuFigures::default()
        });
        assert!(
            busy.check_limits()
                .unwrap_err()
                .to_string()
                .contains("remote_util_pct")
        );
        let mut datagram = record(TestKind::UdpStream);
        datagram.spec.send_size_bytes = 70_000;
        assert!(
            datagram
                .check_limits()
                .unwrap_err()
                .to_string()
                .contains("$.spec.send_size_bytes is 70000 bytes, beyond 65535 bytes")
        );
        let mut buffers = record(TestKind::TcpStream);
        buffers.spec.local_socket_buffer_bytes = Some(u32::MAX);
        assert!(buffers.check_limits().is_err());
    }

    #[test]
    fn histograms_of_the_layout_pass_and_others_are_refused_by_name() {
        let mut full = record(TestKind::TcpRr);
        full.iterations = vec![full.iterations[0].clone(); MAX_RECORD_ITERATIONS];
        for iteration in &mut full.iterations {
            iteration.latency_histogram = Some(histogram(N_BUCKETS));
        }
        full.summary.latency_histogram = Some(histogram(N_BUCKETS));
        full.check_limits().unwrap();

        let mut off_layout = record(TestKind::TcpRr);
        let mut buckets = histogram(N_BUCKETS);
        buckets.buckets.push([bucket_high(N_BUCKETS - 1) + 1, 1]);
        buckets.count += 1;
        off_layout.iterations[0].latency_histogram = Some(buckets);
        assert_eq!(
            off_layout.check_limits().unwrap_err().to_string(),
            "$.iterations[0].latency_histogram has 2241 latency buckets, more than the \
             2240 a record may have"
        );
        let mut unordered = record(TestKind::TcpRr);
        let mut buckets = histogram(4);
        buckets.buckets.swap(1, 2);
        unordered.summary.latency_histogram = Some(buckets);
        assert_eq!(
            unordered.check_limits().unwrap_err().to_string(),
            "$.summary.latency_histogram: histogram bucket 1 is not a valid bucket"
        );

        let mut many = record(TestKind::TcpRr);
        many.iterations = vec![many.iterations[0].clone(); MAX_RECORD_ITERATIONS + 1];
        assert_eq!(
            many.check_limits().unwrap_err().to_string(),
            "$.iterations has 31 iterations, more than the 30 a record may have"
        );
    }
}
