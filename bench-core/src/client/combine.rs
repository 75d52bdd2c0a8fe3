//! One iteration's figures from both ends' counts: each flow's, their
//! aggregate, latency over all flows, and CPU with service demand.

use super::data::ClientSide;
use crate::cpu;
use crate::latency::Histogram;
use run_record::record::{
    CpuDetail, CpuFigures, EndReport, EndsReport, FlowFigures, HostCpu, Iteration,
};
use run_record::spec::{RunSpec, TestKind};

fn per_second(count: f64, elapsed_s: f64) -> f64 {
    if elapsed_s > 0.0 {
        count / elapsed_s
    } else {
        0.0
    }
}

/// One iteration's figures from both ends' counts. Stream tests take the
/// receiver's bytes and, for TCP, the receiver's elapsed time; UDP_STREAM
/// takes the receiver's bytes over the sender's time (the receiver cannot
/// tell when the last datagram was sent); request/response tests take the
/// client's transactions and time.
pub fn combine(spec: &RunSpec, local: EndReport, remote: EndReport) -> Iteration {
    let mut iteration = Iteration::default();
    match spec.test {
        TestKind::TcpStream | TestKind::UdpStream => {
            iteration.elapsed_s = if spec.test == TestKind::TcpStream {
                remote.elapsed_s
            } else {
                local.elapsed_s
            };
            iteration.bytes_sent = Some(local.bytes_sent);
            iteration.messages_sent = Some(local.messages_sent);
            iteration.bytes_received = Some(remote.bytes_received);
            iteration.messages_received = Some(remote.messages_received);
            iteration.throughput_bps =
                per_second(8.0 * remote.bytes_received as f64, iteration.elapsed_s);
        }
        TestKind::TcpMaerts => {
            iteration.elapsed_s = local.elapsed_s;
            iteration.bytes_sent = Some(remote.bytes_sent);
            iteration.messages_sent = Some(remote.messages_sent);
            iteration.bytes_received = Some(local.bytes_received);
            iteration.messages_received = Some(local.messages_received);
            iteration.throughput_bps =
                per_second(8.0 * local.bytes_received as f64, local.elapsed_s);
        }
        TestKind::TcpRr | TestKind::TcpCrr | TestKind::UdpRr => {
            let transactions = local.transactions.unwrap_or(0);
            iteration.elapsed_s = local.elapsed_s;
            iteration.transactions = Some(transactions);
            iteration.transaction_rate = Some(per_second(transactions as f64, local.elapsed_s));
            iteration.bytes_sent = Some(local.bytes_sent + remote.bytes_sent);
            iteration.bytes_received = Some(local.bytes_received + remote.bytes_received);
            iteration.messages_sent = Some(local.messages_sent + remote.messages_sent);
            iteration.messages_received = Some(local.messages_received + remote.messages_received);
            let per_transaction =
                u64::from(spec.request_size_bytes) + u64::from(spec.response_size_bytes);
            iteration.throughput_bps = per_second(
                8.0 * (transactions * per_transaction) as f64,
                local.elapsed_s,
            );
            if spec.test == TestKind::UdpRr {
                iteration.lost_transactions = local.timeouts;
            }
        }
    }
    iteration.send_errors = send_errors_of(spec.test, &local, &remote);
    iteration.ends = Some(EndsReport { local, remote });
    iteration
}

/// Sums the counts of several flows' reports of one end: the longest
/// time, the first flow's socket.
fn sum_ends(reports: &[EndReport]) -> EndReport {
    let mut sum = reports.first().cloned().unwrap_or_default();
    sum.tcp_info = None;
    for report in reports.iter().skip(1) {
        sum.elapsed_s = sum.elapsed_s.max(report.elapsed_s);
        sum.bytes_sent += report.bytes_sent;
        sum.bytes_received += report.bytes_received;
        sum.messages_sent += report.messages_sent;
        sum.messages_received += report.messages_received;
        sum.transactions = add_options(sum.transactions, report.transactions);
        sum.timeouts = add_options(sum.timeouts, report.timeouts);
        for (name, count) in &report.send_errors {
            *sum.send_errors.entry(name.clone()).or_insert(0) += count;
        }
    }
    sum
}

/// Failed sends of both ends, for UDP tests (the only ones that count
/// them).
fn send_errors_of(test: TestKind, local: &EndReport, remote: &EndReport) -> Option<u64> {
    test.is_udp().then(|| {
        local
            .send_errors
            .values()
            .chain(remote.send_errors.values())
            .sum()
    })
}

fn add_options(first: Option<u64>, second: Option<u64>) -> Option<u64> {
    match (first, second) {
        (None, None) => None,
        (first, second) => Some(first.unwrap_or(0) + second.unwrap_or(0)),
    }
}

/// The units of work per second service demand divides by: KB (1024
/// bytes) per second for stream tests, transactions per second for
/// request/response tests.
pub fn work_rate(spec: &RunSpec, iteration: &Iteration) -> f64 {
    if spec.test.is_request_response() {
        iteration.transaction_rate.unwrap_or(0.0)
    } else {
        iteration.throughput_bps / 8.0 / 1024.0
    }
}

/// CPU figures of an iteration from both hosts' measurements: utilisation
/// and service demand over all flows together.
pub fn cpu_figures(
    spec: &RunSpec,
    iteration: &Iteration,
    local: Option<&HostCpu>,
    remote: Option<&HostCpu>,
) -> CpuFigures {
    let rate = work_rate(spec, iteration);
    let demand = |host: Option<&HostCpu>| {
        host.and_then(|host| cpu::service_demand(host.util_pct, host.n_cpus, rate))
    };
    CpuFigures {
        local_util_pct: local.map(|host| host.util_pct),
        remote_util_pct: remote.map(|host| host.util_pct),
        local_service_demand: demand(local),
        remote_service_demand: demand(remote),
    }
}

/// One iteration from every flow of both ends: per-flow figures (when
/// there are several flows), their aggregate, latency over all flows, and
/// CPU over the common window.
pub fn combine_flows(
    spec: &RunSpec,
    local: ClientSide,
    remote_flows: Vec<EndReport>,
    remote_cpu: Option<HostCpu>,
) -> Iteration {
    let mut merged: Option<Histogram> = None;
    for histogram in local.latency.iter().flatten() {
        match &mut merged {
            Some(merged) => merged.merge(histogram),
            None => merged = Some(histogram.clone()),
        }
    }
    let mut iteration = if local.flows.len() == 1 && remote_flows.len() == 1 {
        let local_end = local.flows.into_iter().next().unwrap_or_default();
        let remote_end = remote_flows.into_iter().next().unwrap_or_default();
        combine(spec, local_end, remote_end)
    } else {
        let local_sum = sum_ends(&local.flows);
        let remote_sum = sum_ends(&remote_flows);
        let flows: Vec<FlowFigures> = local
            .flows
            .into_iter()
            .zip(remote_flows)
            .zip(&local.latency)
            .map(|((local_end, remote_end), histogram)| {
                let flow = combine(spec, local_end, remote_end);
                FlowFigures {
                    elapsed_s: flow.elapsed_s,
                    throughput_bps: flow.throughput_bps,
                    transaction_rate: flow.transaction_rate,
                    transactions: flow.transactions,
                    bytes_sent: flow.bytes_sent.unwrap_or(0),
                    bytes_received: flow.bytes_received.unwrap_or(0),
                    latency: histogram.as_ref().and_then(Histogram::figures),
                    ends: flow.ends.unwrap_or_default(),
                }
            })
            .collect();
        let mut aggregate = combine(spec, local_sum, remote_sum);
        aggregate.elapsed_s = flows.iter().map(|f| f.elapsed_s).fold(0.0, f64::max);
        aggregate.throughput_bps = flows.iter().map(|f| f.throughput_bps).sum();
        if spec.test.is_request_response() {
            aggregate.transaction_rate =
                Some(flows.iter().filter_map(|f| f.transaction_rate).sum());
        }
        aggregate.bytes_sent = Some(flows.iter().map(|f| f.bytes_sent).sum());
        aggregate.bytes_received = Some(flows.iter().map(|f| f.bytes_received).sum());
        aggregate.flows = flows;
        aggregate
    };
    if let Some(histogram) = &merged {
        iteration.latency = histogram.figures();
        iteration.latency_histogram = histogram.to_record();
    }
    if spec.local_cpu || spec.remote_cpu {
        let local_cpu = local.cpu.filter(|_| spec.local_cpu);
        let remote_cpu = remote_cpu.filter(|_| spec.remote_cpu);
        iteration.cpu = Some(cpu_figures(
            spec,
            &iteration,
            local_cpu.as_ref(),
            remote_cpu.as_ref(),
        ));
        iteration.cpu_detail = Some(CpuDetail {
            local: local_cpu,
            remote: remote_cpu,
        });
    }
    iteration
}
