//! The client's half of the data phase: its flows spread over threads,
//! each thread stepping its flows in turn (or through an epoll set, for
//! several TCP stream flows), the warm-up and the counted window, the
//! CPU read at the window's counted ends, and interim reports.
//!
//! The loops keep time in integer nanoseconds of the monotonic clock,
//! read once per step. TCP_RR and UDP_RR receive without `SO_RCVTIMEO`:
//! the watchdog ends them at the hard deadline, and wakes a UDP_RR
//! receive that waits for a lost datagram once the thread's progress has
//! stalled for the loss timeout.

mod flow;
mod plan;
mod poller;

pub use plan::{ClientPlan, ClientSide};

use crate::cpu::{self, CpuMark, Rusage};
use crate::datapath::counters::clock_ns;
use crate::datapath::gate::{Gate, Window, gated, sleep_until};
use crate::datapath::{DataError, Interim, InterimFigures, flow_error, io_error, pin};
use crate::latency::Histogram;
use crate::watchdog::{Nudge, Watchdog};
use child_process::wake::current_thread;
use flow::{ClientFlow, Link, Step};
use poller::{Poller, Turns, poll_timeout_ms};
use run_record::record::EndReport;
use run_record::spec::TestKind;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Counts of the current window of one client thread, for interim
/// reports; on a cache line of its own so that flows do not share one.
#[repr(align(64))]
#[derive(Default)]
struct Progress {
    bytes: AtomicU64,
    transactions: AtomicU64,
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX / 2)
}

/// What one client thread returns: its flows' indices, reports and
/// histograms, and its CPU time over the counted window.
type ThreadOutcome = (Vec<(usize, EndReport, Option<Histogram>)>, Rusage);

fn client_thread(
    plan: &ClientPlan<'_>,
    flow_indices: &[usize],
    gate: &Gate,
    progress: &Progress,
) -> Result<ThreadOutcome, DataError> {
    let alive = AtomicU64::new(0);
    std::thread::scope(|scope| client_flows(scope, plan, flow_indices, gate, progress, &alive))
}

/// [`client_thread`]'s work, in a scope for its watchdog's thread.
/// `alive` is raised as the thread's flows move data, for the watchdog
/// to see a UDP_RR receive that waits for a lost datagram.
fn client_flows<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    plan: &ClientPlan<'_>,
    flow_indices: &[usize],
    gate: &Gate,
    progress: &Progress,
    alive: &'env AtomicU64,
) -> Result<ThreadOutcome, DataError> {
    let spec = plan.spec;
    let mut flows = gated(gate, || open_flows(plan, flow_indices))?;
    let window = gate.arrive(spec, plan.io_timeout)?;
    let hard = window.deadline + plan.io_timeout;
    let watchdog = arm_watchdog(scope, plan, &flows, hard, alive)?;
    // An end of file or error once the watchdog has shut the sockets
    // down means the test ran past its hard deadline.
    let overrun = |err: DataError| match &watchdog {
        Some(watchdog) if watchdog.overran() => DataError::Overrun,
        _ => err,
    };
    let n_flows = plan.servers.len();
    // A failure in a thread of several flows names its own flow.
    let failed = |idx: usize, err| flow_error(Some(flow_indices[idx]), n_flows, err);
    let mut poller =
        if flows.len() > 1 && matches!(spec.test, TestKind::TcpStream | TestKind::TcpMaerts) {
            Some(Poller::new(&mut flows)?)
        } else {
            None
        };
    let mut turns = Turns::new(spec, flow_indices.len() < n_flows);
    // Warm-up: traffic, not counted.
    match &mut poller {
        Some(poller) => warm_up_polled(poller, &mut flows, plan, &window, &failed)?,
        None => warm_up_stepped(&mut flows, plan, &window, &mut turns, alive, &overrun)?,
    }
    turns.restart();
    for flow in &mut flows {
        flow.start_counting();
    }
    let usage_start = Rusage::thread()?;
    let counting_start = Instant::now();
    let counted = CountedWindow::new(&window, hard, counting_start, spec.test);
    match &mut poller {
        Some(poller) => count_polled(poller, &mut flows, plan, counted, progress, &failed)?,
        None => count_stepped(
            &mut flows, plan, counted, &mut turns, progress, alive, &overrun,
        )?,
    }
    let usage = Rusage::thread()?.since(&usage_start);
    let elapsed = counting_start.elapsed();
    let reports = finish_flows(flows, flow_indices, spec.test, elapsed, &overrun)?;
    Ok((reports, usage))
}

/// Opens the thread's flows, on its pinned CPU if the test asks for one.
fn open_flows(plan: &ClientPlan<'_>, flow_indices: &[usize]) -> Result<Vec<ClientFlow>, DataError> {
    pin(plan.spec.cpu_pinning.local)?;
    flow_indices
        .iter()
        .map(|&flow_idx| ClientFlow::open(plan, plan.servers[flow_idx]))
        .collect::<Result<Vec<_>, _>>()
}

/// Arms the watchdog of a TCP_RR or UDP_RR thread; other tests have none.
fn arm_watchdog<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    plan: &ClientPlan<'_>,
    flows: &[ClientFlow],
    hard: Instant,
    alive: &'env AtomicU64,
) -> Result<Option<Watchdog<'scope>>, DataError> {
    let spec = plan.spec;
    // TCP_RR and UDP_RR receive without a timeout: the watchdog ends
    // them at the hard deadline, and wakes a UDP_RR receive that waits
    // for a lost datagram (which then counts as lost).
    if !matches!(spec.test, TestKind::TcpRr | TestKind::UdpRr) {
        return Ok(None);
    }
    let sockets: Vec<_> = flows
        .iter()
        .filter_map(|flow| match &flow.link {
            Link::Tcp(stream) => Some(stream.as_fd()),
            Link::Udp(udp, _) => Some(udp.as_fd()),
            Link::PerTransaction(..) => None,
        })
        .collect();
    let nudge = (spec.test == TestKind::UdpRr).then(|| Nudge {
        every: plan.udp_rr_timeout,
        progress: alive,
        thread: current_thread(),
    });
    let watchdog = Watchdog::arm_nudging(scope, &sockets, hard, None, nudge);
    Ok(Some(watchdog.map_err(io_error("starting the watchdog"))?))
}

/// Warms up the polled flows until the counted window starts.
fn warm_up_polled(
    poller: &mut Poller,
    flows: &mut [ClientFlow],
    plan: &ClientPlan<'_>,
    window: &Window,
    failed: &dyn Fn(usize, DataError) -> DataError,
) -> Result<(), DataError> {
    let mut now_ns = clock_ns();
    let until_ns = now_ns
        + nanos(
            window
                .measure_start
                .saturating_duration_since(Instant::now()),
        );
    while now_ns < until_ns {
        poller.serve(
            flows,
            plan,
            poll_timeout_ms(now_ns, until_ns),
            failed,
            &mut |idx, _| Err(failed(idx, DataError::PeerClosed)),
        )?;
        now_ns = clock_ns();
    }
    Ok(())
}

/// Warms up the flows stepped in turn until the counted window starts.
fn warm_up_stepped(
    flows: &mut [ClientFlow],
    plan: &ClientPlan<'_>,
    window: &Window,
    turns: &mut Turns,
    alive: &AtomicU64,
    overrun: &impl Fn(DataError) -> DataError,
) -> Result<(), DataError> {
    let mut now = Instant::now();
    while now < window.measure_start {
        for flow in flows.iter_mut().filter(|flow| !flow.finished) {
            if flow.step(plan).map_err(overrun)? == Step::End {
                return Err(DataError::PeerClosed);
            }
        }
        let moved = flows.iter().map(ClientFlow::bytes_moved).sum();
        alive.store(moved, Ordering::Relaxed);
        turns.after(moved);
        now = Instant::now();
    }
    Ok(())
}

/// The counted window of one client thread, in nanoseconds of the
/// monotonic clock, and when its counting stops.
#[derive(Clone, Copy)]
struct CountedWindow {
    /// When counting started.
    start_ns: u64,
    /// The end of the window.
    deadline_ns: u64,
    /// The hard deadline, past which the test has overrun.
    hard_ns: u64,
    /// The client receives (TCP_MAERTS) and counts until every sender
    /// has closed, not until the end of the window.
    maerts: bool,
}

impl CountedWindow {
    /// The counted window from `counting_start`, which is now, to the
    /// end of `window`, with the hard deadline `hard`.
    fn new(
        window: &Window,
        hard: Instant,
        counting_start: Instant,
        test: TestKind,
    ) -> CountedWindow {
        // The loop keeps time in nanoseconds of the same clock: one read
        // per step, plain integer arithmetic after it.
        let start_ns = clock_ns();
        CountedWindow {
            start_ns,
            deadline_ns: start_ns
                + nanos(window.deadline.saturating_duration_since(counting_start)),
            hard_ns: start_ns + nanos(hard.saturating_duration_since(counting_start)),
            maerts: test == TestKind::TcpMaerts,
        }
    }

    /// The latest moment a wait for polled flows may last to: the hard
    /// deadline for TCP_MAERTS's receiver, else the end of the window.
    #[inline]
    fn until_ns(&self) -> u64 {
        if self.maerts {
            self.hard_ns
        } else {
            self.deadline_ns
        }
    }

    /// The stop test, after each round of steps: whether counting is
    /// over at `now_ns` with `n_open` flows still open. The end of the
    /// window ends it, except for TCP_MAERTS's receiver, which has
    /// overrun if the hard deadline comes before every sender closed.
    #[inline]
    fn is_over(&self, now_ns: u64, n_open: usize) -> Result<bool, DataError> {
        if self.maerts {
            // The receiver counts until every sender has closed.
            if n_open == 0 {
                return Ok(true);
            }
            if now_ns >= self.hard_ns {
                return Err(DataError::Overrun);
            }
            Ok(false)
        } else {
            Ok(now_ns >= self.deadline_ns)
        }
    }
}

/// Counts the polled flows over the window.
fn count_polled(
    poller: &mut Poller,
    flows: &mut [ClientFlow],
    plan: &ClientPlan<'_>,
    counted: CountedWindow,
    progress: &Progress,
    failed: &dyn Fn(usize, DataError) -> DataError,
) -> Result<(), DataError> {
    let start_ns = counted.start_ns;
    let mut now_ns = start_ns;
    let mut n_open = flows.len();
    loop {
        poller.serve(
            flows,
            plan,
            poll_timeout_ms(now_ns, counted.until_ns()),
            failed,
            &mut |_, flow| {
                flow.finished = true;
                flow.elapsed = Duration::from_nanos(clock_ns().saturating_sub(start_ns));
                n_open -= 1;
                Ok(())
            },
        )?;
        now_ns = clock_ns();
        progress.bytes.store(
            flows.iter().map(ClientFlow::bytes_moved).sum(),
            Ordering::Relaxed,
        );
        if counted.is_over(now_ns, n_open)? {
            return Ok(());
        }
    }
}

/// Counts the flows stepped in turn over the window.
fn count_stepped(
    flows: &mut [ClientFlow],
    plan: &ClientPlan<'_>,
    counted: CountedWindow,
    turns: &mut Turns,
    progress: &Progress,
    alive: &AtomicU64,
    overrun: &impl Fn(DataError) -> DataError,
) -> Result<(), DataError> {
    let start_ns = counted.start_ns;
    let mut now_ns = start_ns;
    let mut n_open = flows.len();
    loop {
        let mut moved = 0u64;
        let mut transactions = 0u64;
        for flow in flows.iter_mut().filter(|flow| !flow.finished) {
            let step = flow.step(plan).map_err(overrun)?;
            let after_ns = clock_ns();
            match step {
                Step::Done => {
                    // With a burst, a transaction's time runs from when
                    // its own request was sent.
                    let started = flow.started.take().unwrap_or(now_ns);
                    if let Some(histogram) = &mut flow.latency {
                        histogram.record_ns(after_ns.saturating_sub(started));
                    }
                }
                Step::Lost | Step::Blocked => {}
                Step::End => {
                    flow.finished = true;
                    flow.elapsed = Duration::from_nanos(after_ns.saturating_sub(start_ns));
                    n_open -= 1;
                }
            }
            now_ns = after_ns;
            moved += flow.bytes_moved();
            transactions += flow.counters.transactions;
        }
        progress.bytes.store(moved, Ordering::Relaxed);
        progress.transactions.store(transactions, Ordering::Relaxed);
        alive.store(moved, Ordering::Relaxed);
        turns.after(moved);
        if counted.is_over(now_ns, n_open)? {
            return Ok(());
        }
    }
}

/// Ends the thread's flows after the window and reports each, with its
/// index among the test's flows.
fn finish_flows(
    flows: Vec<ClientFlow>,
    flow_indices: &[usize],
    test: TestKind,
    elapsed: Duration,
    overrun: &impl Fn(DataError) -> DataError,
) -> Result<Vec<(usize, EndReport, Option<Histogram>)>, DataError> {
    let mut reports = Vec::with_capacity(flows.len());
    for (flow_idx, mut flow) in flow_indices.iter().copied().zip(flows) {
        // A TCP_MAERTS flow's time ran until its sender closed.
        if test != TestKind::TcpMaerts {
            flow.elapsed = elapsed;
        }
        let (report, histogram) = flow.finish(test).map_err(overrun)?;
        reports.push((flow_idx, report, histogram));
    }
    Ok(reports)
}

/// Runs the client's side of one iteration: every flow, over threads.
pub fn run_client(plan: &ClientPlan<'_>) -> Result<ClientSide, DataError> {
    let spec = plan.spec;
    let assignment = assign_flows(plan);
    let n_cpus = if spec.local_cpu {
        Some(cpu::n_cpus()?)
    } else {
        None
    };
    let (coordinated, outcomes) = run_threads(plan, &assignment)?;
    let (flows, usage) = collect_outcomes(plan, &assignment, outcomes)?;
    let span = coordinated?;
    let mut side = ClientSide::default();
    for flow in flows {
        let (report, histogram) = flow.ok_or(DataError::OtherFlowFailed)?;
        side.flows.push(report);
        side.latency.push(histogram);
    }
    side.cpu = match (span, n_cpus) {
        (Some(span), Some(n_cpus)) => Some(span.host_cpu(n_cpus, usage)),
        _ => None,
    };
    Ok(side)
}

/// The flows of each client thread: flow `k` goes to thread `k` modulo
/// the number of threads.
fn assign_flows(plan: &ClientPlan<'_>) -> Vec<Vec<usize>> {
    let n_flows = plan.servers.len().max(1);
    let n_threads = plan
        .spec
        .threads
        .map_or(n_flows, |threads| threads as usize)
        .clamp(1, n_flows);
    (0..n_threads)
        .map(|thread_idx| {
            (thread_idx..plan.servers.len())
                .step_by(n_threads)
                .collect()
        })
        .collect()
}

/// What the coordinator returns: the CPU span of the counted window, if
/// asked for.
type Coordinated = Result<Option<cpu::CpuSpan>, DataError>;

/// Spawns a thread for each set of flows in `assignment` and coordinates
/// them from this one; returns the coordinator's result and every
/// thread's outcome, in the order of `assignment`. A thread that cannot
/// be started (a process or cgroup limit) is the error, naming the
/// limit; the threads already started are released and joined first.
fn run_threads(
    plan: &ClientPlan<'_>,
    assignment: &[Vec<usize>],
) -> Result<(Coordinated, Vec<Result<ThreadOutcome, DataError>>), DataError> {
    let n_threads = assignment.len();
    let gate = Gate::new(n_threads + 1);
    let progress: Vec<Progress> = (0..n_threads).map(|_| Progress::default()).collect();
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n_threads);
        let mut spawn_error = None;
        for (thread_idx, (flow_indices, progress)) in assignment.iter().zip(&progress).enumerate() {
            let gate = &gate;
            let spawned = std::thread::Builder::new()
                .name(format!("flows {thread_idx}"))
                .spawn_scoped(scope, move || {
                    client_thread(plan, flow_indices, gate, progress)
                });
            match spawned {
                Ok(handle) => handles.push(handle),
                Err(err) => {
                    gate.fail();
                    let first_flow = flow_indices.first().copied().unwrap_or(0);
                    spawn_error = Some(DataError::Thread(format!(
                        "cannot start a thread for flow {} of {}: {err} (the process or \
                         cgroup thread limit, ulimit -u or pids.max, is reached)",
                        first_flow + 1,
                        plan.servers.len()
                    )));
                    break;
                }
            }
        }
        if let Some(err) = spawn_error {
            for handle in handles {
                let _ = handle.join();
            }
            return Err(err);
        }
        let coordinated = gated(&gate, || coordinate_client(plan, &gate, &progress));
        let outcomes: Vec<Result<ThreadOutcome, DataError>> = handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|_| Err(DataError::Thread("a client flow panicked".into())))
            })
            .collect();
        Ok((coordinated, outcomes))
    })
}

/// A flow's counts and, for a request/response test, its transaction
/// times.
type FlowReport = (EndReport, Option<Histogram>);

/// Gathers the threads' reports by flow and adds up their CPU time. The
/// first thread's failure that is not a consequence of another's is the
/// error, named by the thread's first flow.
fn collect_outcomes(
    plan: &ClientPlan<'_>,
    assignment: &[Vec<usize>],
    outcomes: Vec<Result<ThreadOutcome, DataError>>,
) -> Result<(Vec<Option<FlowReport>>, Rusage), DataError> {
    let mut flows: Vec<Option<FlowReport>> = (0..plan.servers.len()).map(|_| None).collect();
    let mut usage = Rusage::default();
    let mut first_error = None;
    for (thread_idx, outcome) in outcomes.into_iter().enumerate() {
        match outcome {
            Ok((reports, thread_usage)) => {
                usage = usage.plus(&thread_usage);
                for (flow_idx, report, histogram) in reports {
                    flows[flow_idx] = Some((report, histogram));
                }
            }
            // Another flow's failure is a consequence; keep looking for
            // the cause.
            Err(DataError::OtherFlowFailed) => {}
            Err(err) if first_error.is_none() => {
                first_error = Some((assignment[thread_idx].first().copied(), err));
            }
            Err(_) => {}
        }
    }
    if let Some((flow_idx, source)) = first_error {
        return Err(flow_error(flow_idx, plan.servers.len(), source));
    }
    Ok((flows, usage))
}

/// The client's coordinator: waits for the window, reads the CPU at its
/// counted ends and gives interim reports in between.
fn coordinate_client(
    plan: &ClientPlan<'_>,
    gate: &Gate,
    progress: &[Progress],
) -> Result<Option<cpu::CpuSpan>, DataError> {
    let spec = plan.spec;
    let window = gate.arrive(spec, plan.io_timeout)?;
    sleep_until(window.measure_start);
    let mark = if spec.local_cpu {
        Some(CpuMark::now()?)
    } else {
        None
    };
    if let Some(interim) = plan.interim {
        report_interim(interim, spec.test, &window, progress);
    }
    sleep_until(window.deadline);
    Ok(match mark {
        Some(mark) => Some(mark.stop()?),
        None => None,
    })
}

/// The coordinator's loop: an interim report every `interim.every` (10 ms
/// at least) of the counted window, from the threads' progress.
fn report_interim(interim: Interim<'_>, test: TestKind, window: &Window, progress: &[Progress]) {
    let every = interim.every.max(Duration::from_millis(10));
    let (mut last_at, mut last_bytes, mut last_transactions) = (window.measure_start, 0, 0);
    let mut next = window.measure_start + every;
    while next < window.deadline {
        sleep_until(next);
        let now = Instant::now();
        let bytes: u64 = progress
            .iter()
            .map(|p| p.bytes.load(Ordering::Relaxed))
            .sum();
        let transactions: u64 = progress
            .iter()
            .map(|p| p.transactions.load(Ordering::Relaxed))
            .sum();
        let interval_s = (now - last_at).as_secs_f64();
        (interim.report)(&InterimFigures {
            since_start_s: (now - window.measure_start).as_secs_f64(),
            interval_s,
            throughput_bps: 8.0 * bytes.saturating_sub(last_bytes) as f64 / interval_s,
            transaction_rate: test
                .is_request_response()
                .then(|| transactions.saturating_sub(last_transactions) as f64 / interval_s),
        });
        (last_at, last_bytes, last_transactions) = (now, bytes, transactions);
        // A coordinator woken late (a loaded host) does not make up the
        // reports it missed: back to back, they would cover microseconds
        // and read as a stalled test. The next one covers half a period
        // at least.
        next = (next + every).max(now + every / 2);
    }
}
