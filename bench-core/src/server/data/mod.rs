//! The server's half of the data phase: a thread per flow (or one thread
//! for the flows of a pinned TCP_STREAM test), the start gate, the CPU
//! read at the window's counted ends, and every flow's report. The loops
//! are in `tcp` and `udp`; a flow's socket and its accept in `flow`.

mod flow;
mod tcp;
mod udp;

pub use flow::{FLOWS_FAILED, FLOWS_STARTED, Prepared, ServerPlan, prepare_server};

use crate::cpu::{self, CpuMark, Rusage};
use crate::datapath::gate::{Gate, gated, sleep_until};
use crate::datapath::{DataError, flow_error, pin};
use run_record::record::{EndReport, HostCpu};
use run_record::spec::{RunSpec, TestKind};
use std::sync::atomic::Ordering;

/// The server's side of one iteration.
#[derive(Debug, Default)]
pub struct ServerSide {
    /// Every flow's counts, in the order of the prepared sockets.
    pub flows: Vec<EndReport>,
    /// The server host's CPU over the counted window (`-C`).
    pub cpu: Option<HostCpu>,
}

/// Runs the server's side of one iteration: a thread per flow.
pub fn run_server(plan: &ServerPlan<'_>, prepared: Vec<Prepared>) -> Result<ServerSide, DataError> {
    let spec = plan.spec;
    let n_flows = prepared.len();
    let n_cpus = if spec.remote_cpu {
        Some(cpu::n_cpus()?)
    } else {
        None
    };
    let polled = receives_polled(spec, n_flows);
    let parties: Vec<Vec<Prepared>> = if polled {
        vec![prepared]
    } else {
        prepared
            .into_iter()
            .map(|prepared| vec![prepared])
            .collect()
    };
    let gate = Gate::new(parties.len() + 1);
    let (coordinated, outcomes) = std::thread::scope(|scope| {
        // A thread that cannot be started (a process or cgroup limit)
        // fails the test, never the server.
        let mut handles = Vec::with_capacity(parties.len());
        let mut spawn_error = None;
        for (flow_idx, party) in parties.into_iter().enumerate() {
            let gate = &gate;
            let name = if polled {
                "flows".to_string()
            } else {
                format!("flow {flow_idx}")
            };
            match std::thread::Builder::new()
                .name(name)
                .spawn_scoped(scope, move || server_party(plan, party, gate))
            {
                Ok(handle) => handles.push(handle),
                Err(err) => {
                    gate.fail();
                    spawn_error = Some(DataError::Thread(format!(
                        "cannot start a thread for flow {} of {n_flows}: {err} (the process \
                         or cgroup thread limit, ulimit -u or pids.max, is reached)",
                        flow_idx + 1
                    )));
                    break;
                }
            }
        }
        if let Some(err) = spawn_error {
            plan.flows_started.store(FLOWS_FAILED, Ordering::SeqCst);
            plan.stop.store(true, Ordering::Relaxed);
            for handle in handles {
                let _ = handle.join();
            }
            return (Err(err), Vec::new());
        }
        plan.flows_started.store(FLOWS_STARTED, Ordering::SeqCst);
        let coordinated = gated(&gate, || {
            let window = gate.arrive(spec, plan.io_timeout)?;
            sleep_until(window.measure_start);
            Ok(if spec.remote_cpu {
                Some(CpuMark::now()?)
            } else {
                None
            })
        });
        let outcomes: Vec<Result<(EndReport, Rusage), DataError>> = handles
            .into_iter()
            .flat_map(|handle| {
                handle.join().unwrap_or_else(|_| {
                    vec![Err(DataError::Thread("a server flow panicked".into()))]
                })
            })
            .collect();
        let span = match coordinated {
            Ok(Some(mark)) => mark.stop().map(Some).map_err(DataError::from),
            Ok(None) => Ok(None),
            Err(err) => Err(err),
        };
        (span, outcomes)
    });
    let mut side = ServerSide::default();
    let mut usage = Rusage::default();
    let mut first_error = None;
    for (flow_idx, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Ok((report, flow_usage)) => {
                usage = usage.plus(&flow_usage);
                side.flows.push(report);
            }
            Err(DataError::OtherFlowFailed) => {}
            Err(err) if first_error.is_none() => first_error = Some((flow_idx, err)),
            Err(_) => {}
        }
    }
    if let Some((flow_idx, source)) = first_error {
        return Err(flow_error(Some(flow_idx), n_flows, source));
    }
    let span = coordinated?;
    if side.flows.len() != n_flows {
        return Err(DataError::OtherFlowFailed);
    }
    side.cpu = match (span, n_cpus) {
        (Some(span), Some(n_cpus)) => Some(span.host_cpu(n_cpus, usage)),
        _ => None,
    };
    Ok(side)
}

/// Whether the server receives the flows of `spec` in one thread: a
/// TCP_STREAM test of several flows pinned to one CPU, on which threads
/// of their own could only take turns.
fn receives_polled(spec: &RunSpec, n_flows: usize) -> bool {
    spec.test == TestKind::TcpStream && n_flows > 1 && spec.cpu_pinning.remote.is_some()
}

/// Runs the flows of one server thread: a flow, or the flows received
/// in one thread. The thread's CPU time goes with the first flow.
fn server_party(
    plan: &ServerPlan<'_>,
    party: Vec<Prepared>,
    gate: &Gate,
) -> Vec<Result<(EndReport, Rusage), DataError>> {
    if party.len() > 1 {
        return match tcp::server_tcp_stream_polled(plan, party, gate) {
            Ok((reports, usage)) => reports
                .into_iter()
                .enumerate()
                .map(|(idx, report)| Ok((report, if idx == 0 { usage } else { Rusage::default() })))
                .collect(),
            Err(err) => vec![Err(err)],
        };
    }
    party
        .into_iter()
        .map(|prepared| server_flow(plan, prepared, gate))
        .collect()
}

fn server_flow(
    plan: &ServerPlan<'_>,
    prepared: Prepared,
    gate: &Gate,
) -> Result<(EndReport, Rusage), DataError> {
    gated(gate, || pin(plan.spec.cpu_pinning.remote))?;
    match plan.spec.test {
        TestKind::TcpStream => tcp::server_tcp_stream(plan, prepared, gate),
        TestKind::TcpMaerts => tcp::server_tcp_maerts(plan, prepared, gate),
        TestKind::TcpRr => tcp::server_tcp_rr(plan, prepared, gate),
        TestKind::TcpCrr => tcp::server_tcp_crr(plan, prepared, gate),
        TestKind::UdpStream | TestKind::UdpRr => udp::server_udp(plan, prepared, gate),
    }
}
