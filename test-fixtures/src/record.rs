//! Run records for tests: one builder with the defaults a loopback run on
//! a lab testbed would have, and setters for what tests vary.
//!
//! Every record a builder makes is sealed (`schema`, `config_key` and `id`
//! set), so it reads back with `RunRecord::from_slice` and stores as is;
//! [`RecordBuilder::build_unsealed`] leaves that to a test that changes
//! the record further.

use run_record::record::{
    CpuFigures, Endpoint, Environments, Iteration, LatencyFigures, RunRecord, Source, Spread,
    Subject, Summary,
};
use run_record::spec::{RunSpec, TestKind};

/// The start of a run when a test does not choose it.
pub const STARTED_AT: &str = "2026-11-30T07:00:00.000000Z";
/// The end of a run when a test does not choose it: ten seconds later.
pub const FINISHED_AT: &str = "2026-11-30T07:00:10.000000Z";

/// How the summary of a built record is made.
enum SummaryOf {
    /// From the iterations: their count, the spread of throughput and of
    /// the transaction rate where iterations have one.
    Iterations(Box<dyn FnOnce(&mut Summary)>),
    /// As given.
    Given(Box<Summary>),
}

/// Builds a [`RunRecord`].
///
/// Defaults: a run of `RunSpec::defaults(test)` by netbisect (no version)
/// from [`STARTED_AT`] to [`FINISHED_AT`], against 127.0.0.1 without a
/// port, on testbed `lab`, with no subject, an empty environment and no
/// iterations; the summary is computed from the iterations at
/// [`build`](Self::build).
pub struct RecordBuilder {
    record: RunRecord,
    summary: SummaryOf,
}

impl RecordBuilder {
    /// A record of a `test` run with the defaults above.
    pub fn new(test: TestKind) -> RecordBuilder {
        RecordBuilder {
            record: RunRecord {
                schema: String::new(),
                id: String::new(),
                config_key: String::new(),
                source: Source {
                    tool: "netbisect".to_string(),
                    version: None,
                    undated: false,
                },
                started_at: STARTED_AT.to_string(),
                finished_at: FINISHED_AT.to_string(),
                spec: RunSpec::defaults(test),
                endpoint: Endpoint {
                    host: "127.0.0.1".to_string(),
                    port: None,
                },
                subject: Subject::default(),
                testbed: "lab".to_string(),
                env: Environments::default(),
                iterations: Vec::new(),
                summary: Summary::default(),
                system: None,
                experiment: None,
                command: None,
            },
            summary: SummaryOf::Iterations(Box::new(|_| {})),
        }
    }

    /// Replaces the spec (its test too).
    pub fn spec(mut self, spec: RunSpec) -> RecordBuilder {
        self.record.spec = spec;
        self
    }

    /// Changes the spec in place, for a parameter or two.
    pub fn spec_with(mut self, change: impl FnOnce(&mut RunSpec)) -> RecordBuilder {
        change(&mut self.record.spec);
        self
    }

    /// The commit measured.
    pub fn commit(mut self, commit: &str) -> RecordBuilder {
        self.record.subject.commit = Some(commit.to_string());
        self
    }

    /// The run's label (`base`, `patched`, ...).
    pub fn label(mut self, label: &str) -> RecordBuilder {
        self.record.subject.label = Some(label.to_string());
        self
    }

    /// Replaces the whole subject.
    pub fn subject(mut self, subject: Subject) -> RecordBuilder {
        self.record.subject = subject;
        self
    }

    /// The start of the run, an RFC 3339 UTC time.
    pub fn started_at(mut self, started_at: &str) -> RecordBuilder {
        self.record.started_at = started_at.to_string();
        self
    }

    /// The end of the run, an RFC 3339 UTC time.
    pub fn finished_at(mut self, finished_at: &str) -> RecordBuilder {
        self.record.finished_at = finished_at.to_string();
        self
    }

    /// The version of netbisect that made the run.
    pub fn tool_version(mut self, version: &str) -> RecordBuilder {
        self.record.source.version = Some(version.to_string());
        self
    }

    /// The testbed's name.
    pub fn testbed(mut self, testbed: &str) -> RecordBuilder {
        self.record.testbed = testbed.to_string();
        self
    }

    /// Where the remote end was.
    pub fn endpoint(mut self, host: &str, port: Option<u16>) -> RecordBuilder {
        self.record.endpoint = Endpoint {
            host: host.to_string(),
            port,
        };
        self
    }

    /// Replaces the environment of both ends.
    pub fn env(mut self, env: Environments) -> RecordBuilder {
        self.record.env = env;
        self
    }

    /// Sets a sysctl of the local end (it enters the config_key).
    pub fn local_sysctl(mut self, name: &str, value: &str) -> RecordBuilder {
        self.record
            .env
            .local
            .sysctls
            .insert(name.to_string(), value.to_string());
        self
    }

    /// Adds an iteration.
    pub fn iteration(mut self, iteration: Iteration) -> RecordBuilder {
        self.record.iterations.push(iteration);
        self
    }

    /// Adds an iteration of `elapsed_s` seconds at `throughput_bps` and
    /// nothing else.
    pub fn throughput(self, elapsed_s: f64, throughput_bps: f64) -> RecordBuilder {
        self.iteration(Iteration {
            elapsed_s,
            throughput_bps,
            ..Iteration::default()
        })
    }

    /// Replaces the iterations.
    pub fn iterations(mut self, iterations: Vec<Iteration>) -> RecordBuilder {
        self.record.iterations = iterations;
        self
    }

    /// Replaces the iterations with one of ten seconds per sample of the
    /// spec's primary metric: throughput for stream tests; for
    /// request/response tests the transaction rate, with 16 bytes per
    /// transaction, ten seconds' transactions and a p99 latency of 1.5
    /// transaction times.
    pub fn samples(mut self, samples: &[f64]) -> RecordBuilder {
        let request_response = self.record.spec.test.is_request_response();
        self.record.iterations = samples
            .iter()
            .map(|&sample| Iteration {
                elapsed_s: 10.0,
                throughput_bps: if request_response {
                    16.0 * sample
                } else {
                    sample
                },
                transaction_rate: request_response.then_some(sample),
                transactions: request_response.then_some((sample * 10.0) as u64),
                latency: request_response.then(|| LatencyFigures {
                    p99_us: 1.5e6 / sample,
                    ..LatencyFigures::default()
                }),
                ..Iteration::default()
            })
            .collect();
        self
    }

    /// Changes each iteration in place, with its index.
    pub fn each_iteration(
        mut self,
        mut change: impl FnMut(usize, &mut Iteration),
    ) -> RecordBuilder {
        for (idx, iteration) in self.record.iterations.iter_mut().enumerate() {
            change(idx, iteration);
        }
        self
    }

    /// Gives the summary as is instead of computing it.
    pub fn summary(mut self, summary: Summary) -> RecordBuilder {
        self.summary = SummaryOf::Given(Box::new(summary));
        self
    }

    /// Computes the summary from the iterations, then changes it.
    pub fn summary_with(mut self, change: impl FnOnce(&mut Summary) + 'static) -> RecordBuilder {
        self.summary = SummaryOf::Iterations(Box::new(change));
        self
    }

    /// The record, with its summary, not sealed.
    pub fn build_unsealed(self) -> RunRecord {
        let mut record = self.record;
        record.summary = match self.summary {
            SummaryOf::Given(summary) => *summary,
            SummaryOf::Iterations(change) => {
                let iterations = &record.iterations;
                let throughputs: Vec<f64> = iterations.iter().map(|i| i.throughput_bps).collect();
                let rates: Vec<f64> = iterations
                    .iter()
                    .filter_map(|i| i.transaction_rate)
                    .collect();
                let mut summary = Summary {
                    n_iterations: u32::try_from(iterations.len()).expect("a test's iterations"),
                    throughput_bps: Spread::of(&throughputs).unwrap_or_default(),
                    transaction_rate: Spread::of(&rates),
                    ..Summary::default()
                };
                change(&mut summary);
                summary
            }
        };
        record
    }

    /// The sealed record.
    pub fn build(self) -> RunRecord {
        let mut record = self.build_unsealed();
        record
            .seal()
            .unwrap_or_else(|err| panic!("a test record does not seal: {err}"));
        record
    }
}

/// A sealed run of `test` at `commit` whose iterations carry `samples`
/// as the primary metric ([`RecordBuilder::samples`]), with an empty
/// summary, as comparisons and histories read runs. Runs with `cpu` get
/// a local service demand of 1000 / sample.
pub fn sampled_run(
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

/// Canonical bytes of `records`, one a line, as `archive import` and
/// `archive export` read and write them.
pub fn json_lines(records: &[RunRecord]) -> String {
    let mut text = String::new();
    for record in records {
        let bytes = record
            .to_canonical_bytes()
            .expect("a sealed record has canonical bytes");
        text.push_str(std::str::from_utf8(&bytes).expect("canonical bytes are UTF-8"));
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_built_record_reads_back_with_its_id() {
        let record = RecordBuilder::new(TestKind::TcpRr)
            .commit("abcdef")
            .label("base")
            .samples(&[40_000.0, 42_000.0])
            .build();
        let bytes = record.to_canonical_bytes().unwrap();
        assert_eq!(RunRecord::from_slice(&bytes).unwrap(), record);
        assert_eq!(record.summary.n_iterations, 2);
        assert_eq!(
            record.summary.transaction_rate.as_ref().unwrap().mean,
            41_000.0
        );
        assert_eq!(record.summary.throughput_bps.mean, 16.0 * 41_000.0);
        assert_eq!(json_lines(std::slice::from_ref(&record)).lines().count(), 1);
    }

    #[test]
    fn a_given_summary_is_kept() {
        let record = RecordBuilder::new(TestKind::TcpStream)
            .throughput(1.0, 1e9)
            .summary(Summary::default())
            .build();
        assert_eq!(record.summary, Summary::default());
        let record = RecordBuilder::new(TestKind::TcpStream)
            .throughput(1.0, 1e9)
            .summary_with(|summary| summary.n_iterations = 7)
            .build();
        assert_eq!(record.summary.n_iterations, 7);
        assert_eq!(record.summary.throughput_bps.mean, 1e9);
    }
}
