//! The context of `sweep`: a size sweep of `bench --sweep`, one row per
//! size, as a sweep is laid out in a patch email.
//!
//! The template receives a [`SweepTable`]: the test, the swept parameter
//! (`send_size` or `request_response`), what the runs share (host,
//! address family, duration, socket buffers, receive size), the subject,
//! and one [`SweepRow`] per finished size. `ops_per_s` is transactions
//! per second for request/response tests and, for stream tests, messages
//! of the swept size delivered per second (throughput / 8 / size).
//! Absent CPU figures are `null`. `stopped` is set when a size failed.

use crate::views::bisection::short_id;
use crate::views::units::Units;
use run_record::record::{Metric, RunRecord};
use run_record::spec::{AddressFamily, RunSpec, SweepParameter, TestKind};
use serde::Serialize;

/// What the `sweep` template renders.
#[derive(Debug, Serialize)]
pub struct SweepTable {
    /// The test every run ran.
    pub test: TestKind,
    /// `send_size` or `request_response`.
    pub parameter: &'static str,
    /// The remote end, as the first record names it.
    pub host: String,
    /// Address family of the data connections.
    pub family: AddressFamily,
    /// Length of one iteration, seconds.
    pub duration_s: f64,
    /// Requested local socket buffer; `null` when left to the kernel.
    pub local_socket_buffer_bytes: Option<u32>,
    /// Requested remote socket buffer.
    pub remote_socket_buffer_bytes: Option<u32>,
    /// Bytes per receive of stream tests.
    pub recv_size_bytes: u32,
    /// The other options off netperf's defaults that every run shares, as
    /// a title names them (`-c`, `-C`, `-b 4`, `nodelay`, `flows 2`): all
    /// but the length, the sizes swept and the socket buffers, which the
    /// table says itself.
    pub options: Vec<String>,
    /// Where a setting of `options` is named with what the kernel kept
    /// instead (`gso=on(off)`), the legend of that form.
    pub not_granted_legend: Option<String>,
    /// Commit under test.
    pub commit: Option<String>,
    /// Label of the runs.
    pub label: Option<String>,
    /// Testbed name.
    pub testbed: String,
    /// Sizes the sweep was asked for.
    pub n_sizes: usize,
    /// True when some run has more than one iteration (figures are means).
    pub multiple_iterations: bool,
    /// Where the sweep stopped, when a size failed.
    pub stopped: Option<Stopped>,
    /// One row per finished size, in the order run.
    pub rows: Vec<SweepRow>,
}

/// The size at which a sweep failed.
#[derive(Debug, Serialize)]
pub struct Stopped {
    /// Position of the failed size, from 1.
    pub at: usize,
    /// The failed size as options (`-m 900`).
    pub size: String,
}

/// One finished size.
#[derive(Debug, Serialize)]
pub struct SweepRow {
    /// Bytes per send (send-size sweeps).
    pub size_bytes: Option<u32>,
    /// Request size (request/response sweeps).
    pub request_bytes: Option<u32>,
    /// Response size (request/response sweeps).
    pub response_bytes: Option<u32>,
    /// Transactions or delivered messages per second.
    pub ops_per_s: f64,
    /// Mean throughput, bits per second.
    pub throughput_bps: f64,
    /// Local CPU utilisation, percent.
    pub local_cpu_pct: Option<f64>,
    /// Remote CPU utilisation, percent.
    pub remote_cpu_pct: Option<f64>,
    /// Local service demand (us/KB for streams, us/Tran for RR).
    pub local_service_demand: Option<f64>,
    /// Remote service demand.
    pub remote_service_demand: Option<f64>,
    /// With `-I`: the half width of the interval reached, percent.
    pub confidence_half_width_pct: Option<f64>,
    /// With `-I`: the half width asked, percent.
    pub confidence_target_half_width_pct: Option<f64>,
    /// True when the run missed its `-I` interval (netperf's `!!!`).
    pub confidence_missed: bool,
    /// The record's id.
    pub run_id: String,
}

/// What the `sweep` template is given: the table, the unit of
/// throughput, and what the template prints of them.
#[derive(Serialize)]
pub struct SweepContext<'a> {
    /// The table.
    #[serde(flatten)]
    pub table: &'a SweepTable,
    /// netperf's `-f` letter of throughput.
    pub units: &'static str,
    /// The unit of throughput as a column head names it (`10^6bits/s`).
    pub unit_name: &'static str,
    /// The address family as netperf's banner names it (`AF_INET`).
    pub address_family: &'static str,
    /// Some size missed its `-I` interval.
    pub confidence_missed: bool,
    /// The runs' ids cut to 12 digits, one per row.
    pub run_ids: Vec<String>,
}

impl<'a> SweepContext<'a> {
    /// The context of `table`, throughput in `units`.
    pub fn new(table: &'a SweepTable, units: Units) -> SweepContext<'a> {
        SweepContext {
            table,
            units: units.letter,
            unit_name: units.name,
            address_family: match table.family {
                AddressFamily::Ipv4 => "AF_INET",
                AddressFamily::Ipv6 => "AF_INET6",
            },
            confidence_missed: table.rows.iter().any(|row| row.confidence_missed),
            run_ids: table.rows.iter().map(|row| short_id(&row.run_id)).collect(),
        }
    }
}

/// The table over `records`, the finished runs of a sweep of `n_sizes`
/// sizes whose shared settings are those of `base`.
pub fn sweep_table(
    base: &RunSpec,
    parameter: &SweepParameter,
    records: &[RunRecord],
    n_sizes: usize,
) -> SweepTable {
    let first = records.first();
    // The settings are the base's in every row: named as the first run
    // the kernel refused one of them kept them, else as asked.
    let outcome = records
        .iter()
        .map(|record| record.system.as_ref())
        .find(|outcome| archive::figures::any_not_granted(base, *outcome))
        .flatten();
    SweepTable {
        not_granted_legend: outcome
            .is_some()
            .then(|| archive::figures::NOT_GRANTED_LEGEND.to_string()),
        test: base.test,
        parameter: match parameter {
            SweepParameter::SendSize => "send_size",
            SweepParameter::RequestResponseSize => "request_response",
        },
        host: first.map_or_else(String::new, |record| record.endpoint.host.clone()),
        family: base.family,
        duration_s: base.duration_s,
        local_socket_buffer_bytes: base.local_socket_buffer_bytes,
        remote_socket_buffer_bytes: base.remote_socket_buffer_bytes,
        recv_size_bytes: base.recv_size_bytes,
        options: archive::figures::spec_options_as_granted(base, outcome)
            .into_iter()
            .map(|option| option.title)
            .filter(|title| {
                let flag = title.split(' ').next().unwrap_or_default();
                !matches!(flag, "-l" | "-m" | "-M" | "-r" | "-s" | "-S" | "granted")
            })
            .collect(),
        commit: first.and_then(|record| record.subject.commit.clone()),
        label: first.and_then(|record| record.subject.label.clone()),
        testbed: first.map_or_else(String::new, |record| record.testbed.clone()),
        n_sizes,
        multiple_iterations: records.iter().any(|record| record.summary.n_iterations > 1),
        stopped: None,
        rows: records
            .iter()
            .map(|record| sweep_row(parameter, record))
            .collect(),
    }
}

fn sweep_row(parameter: &SweepParameter, record: &RunRecord) -> SweepRow {
    let spec = &record.spec;
    let summary = &record.summary;
    let throughput_bps = summary.throughput_bps.mean;
    let (size_bytes, request_bytes, response_bytes, ops_per_s) = match parameter {
        SweepParameter::SendSize => {
            let bits_per_message = 8.0 * f64::from(spec.send_size_bytes.max(1));
            (
                Some(spec.send_size_bytes),
                None,
                None,
                throughput_bps / bits_per_message,
            )
        }
        SweepParameter::RequestResponseSize => (
            None,
            Some(spec.request_size_bytes),
            Some(spec.response_size_bytes),
            summary
                .transaction_rate
                .as_ref()
                .map_or(0.0, |rate| rate.mean),
        ),
    };
    let cpu = summary.cpu.as_ref();
    SweepRow {
        size_bytes,
        request_bytes,
        response_bytes,
        ops_per_s,
        throughput_bps,
        local_cpu_pct: cpu.and_then(|cpu| cpu.local_util_pct),
        remote_cpu_pct: cpu.and_then(|cpu| cpu.remote_util_pct),
        // The mean of the iterations' own demands, as compare takes it.
        local_service_demand: bench_core::cpu::mean_service_demand(
            record
                .samples(Metric::LocalServiceDemand)
                .into_iter()
                .map(Some),
        )
        .or_else(|| cpu.and_then(|cpu| cpu.local_service_demand)),
        remote_service_demand: bench_core::cpu::mean_service_demand(
            record
                .samples(Metric::RemoteServiceDemand)
                .into_iter()
                .map(Some),
        )
        .or_else(|| cpu.and_then(|cpu| cpu.remote_service_demand)),
        confidence_half_width_pct: summary
            .confidence
            .as_ref()
            .map(|confidence| confidence.width_pct / 2.0),
        confidence_target_half_width_pct: summary
            .confidence
            .as_ref()
            .map(|confidence| confidence.target_width_pct / 2.0),
        confidence_missed: summary
            .confidence
            .as_ref()
            .is_some_and(|confidence| !confidence.met),
        run_id: record.id.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::Renderer;

    fn fixture() -> RunRecord {
        let bytes = include_bytes!("../../run-record/tests/data/record-fixture.json");
        RunRecord::from_slice(bytes).unwrap()
    }

    #[test]
    fn rows_carry_rates_and_cpu_of_each_record() {
        let rr = fixture();
        let table = sweep_table(
            &rr.spec,
            &SweepParameter::RequestResponseSize,
            std::slice::from_ref(&rr),
            2,
        );
        assert_eq!(table.parameter, "request_response");
        assert!(table.multiple_iterations);
        let row = &table.rows[0];
        assert_eq!(
            (row.request_bytes, row.response_bytes),
            (Some(64), Some(64))
        );
        assert_eq!(row.size_bytes, None);
        assert_eq!(
            row.ops_per_s,
            rr.summary.transaction_rate.as_ref().unwrap().mean
        );
        assert_eq!(row.local_cpu_pct, Some(12.5));
        assert_eq!(row.remote_service_demand, Some(28.5));
        assert_eq!(row.run_id, rr.id);

        let mut stream = rr.clone();
        stream.spec.test = TestKind::TcpStream;
        stream.spec.send_size_bytes = 1000;
        stream.summary.cpu = None;
        stream.summary.throughput_bps.mean = 8e9;
        let table = sweep_table(
            &stream.spec,
            &SweepParameter::SendSize,
            std::slice::from_ref(&stream),
            1,
        );
        let row = &table.rows[0];
        assert_eq!(row.size_bytes, Some(1000));
        assert_eq!(row.ops_per_s, 1e6);
        assert_eq!(row.local_cpu_pct, None);

        let context = SweepContext::new(&table, Units::parse("m").unwrap());
        let text = Renderer::new(None).render("sweep", &context).unwrap();
        assert!(
            text.contains("    1000  1000000.00      8000.00       -"),
            "{text}"
        );
    }
}
