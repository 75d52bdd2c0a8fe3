//! The server's TCP loops: the TCP_STREAM receiver (a thread per flow,
//! or one epoll thread for the flows of a pinned test), the TCP_MAERTS
//! sender, and the TCP_RR and TCP_CRR responders.
//!
//! TCP_RR receives without `SO_RCVTIMEO` (a kernel timer per round
//! trip): the watchdog shuts the socket down at the hard deadline. Once
//! counting, the RR loops read the clock every 16 transactions only
//! (see the meter).

use super::flow::{Prepared, ServerPlan, accept_client, accept_first, hard_deadline};
use crate::cpu::Rusage;
use crate::datapath::counters::Counters;
use crate::datapath::epoll::{Epoll, Interest, POLL_PASSES};
use crate::datapath::gate::{Gate, gated};
use crate::datapath::message::{
    drain_until_closed, finish_tcp, read_message, read_message_by, tcp_info_of,
};
use crate::datapath::meter::Meter;
use crate::datapath::{DataError, flow_error, io_error, pin};
use crate::sockets::{PlainIo, record_addresses};
use crate::watchdog::Watchdog;
use run_record::record::EndReport;
use run_record::spec::RunSpec;
use socket2::SockRef;
use std::io::{self, Read, Write};
use std::net::Shutdown;
use std::os::fd::AsFd;
use std::time::Instant;

pub(super) fn server_tcp_stream(
    plan: &ServerPlan<'_>,
    prepared: Prepared,
    gate: &Gate,
) -> Result<(EndReport, Rusage), DataError> {
    let (mut stream, mut truth, window) = accept_first(plan, prepared, gate)?;
    let mut buffer = vec![0u8; plan.spec.recv_size_bytes as usize];
    let mut meter = Meter::new(&window);
    let hard = hard_deadline(&window, plan.io_timeout);
    let end = loop {
        match stream.read(&mut buffer) {
            Ok(0) => break Instant::now(),
            Ok(got) => {
                meter.counters.bytes_received += got as u64;
                meter.counters.messages_received += 1;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_error("receive")(err)),
        }
        let now = Instant::now();
        meter.tick(now);
        if now >= hard {
            return Err(DataError::Overrun);
        }
    };
    let tcp_info = tcp_info_of(&stream);
    finish_tcp(&stream, &mut truth)?;
    let (counters, elapsed, usage) = meter.finish(end);
    let mut report = counters.report(plan.spec.test, elapsed, truth);
    report.tcp_info = tcp_info;
    Ok((report, usage))
}

/// How many empty polls the receiver of several TCP_STREAM flows makes
/// before it sleeps. As for UDP_STREAM (`UDP_SPIN_POLLS` in `udp`), a
/// receiver that sleeps whenever its queues run dry has the sender wake
/// it for nearly every message it sends, and on loopback the sender's
/// CPU is the one that limits the test; polling a short while (tens of
/// microseconds) keeps the receiver awake between messages.
const STREAM_SPIN_POLLS: u32 = 256;

/// TCP_STREAM's receiver of several flows on one CPU: one thread reads
/// them all through an epoll set, one read per ready flow per pass, as
/// iperf3's server does. A thread per flow sleeps whenever its own queue
/// is empty, and the sender's CPU, the one that limits a loopback test,
/// pays for waking it (across CPUs an interrupt, on a virtual machine an
/// exit); one thread for all sleeps only when every queue is empty.
/// Returns every flow's report and the thread's CPU time over the
/// counted window.
pub(super) fn server_tcp_stream_polled(
    plan: &ServerPlan<'_>,
    prepared: Vec<Prepared>,
    gate: &Gate,
) -> Result<(Vec<EndReport>, Rusage), DataError> {
    let n_flows = prepared.len();
    let named = |idx: usize| move |err| flow_error(Some(idx), n_flows, err);
    let mut flows = gated(gate, || {
        pin(plan.spec.cpu_pinning.remote)?;
        prepared
            .into_iter()
            .enumerate()
            .map(|(idx, prepared)| {
                let stream = accept_client(plan, &prepared.socket, plan.io_timeout)
                    .and_then(|stream| stream.ok_or(DataError::NoClient(plan.io_timeout)))
                    .map_err(named(idx))?;
                let mut truth = prepared.truth;
                record_addresses(&mut truth, &SockRef::from(&stream), None)
                    .map_err(|err| named(idx)(io_error("getsockname")(err)))?;
                Ok((stream, truth))
            })
            .collect::<Result<Vec<_>, DataError>>()
    })?;
    let window = gate.arrive(plan.spec, plan.io_timeout)?;
    let mut epoll = Epoll::new(n_flows)?;
    for (idx, (stream, _)) in flows.iter().enumerate() {
        epoll.add(stream, Interest::Read, idx)?;
    }
    let mut buffer = vec![0u8; plan.spec.recv_size_bytes as usize];
    let mut meters: Vec<Meter> = flows.iter().map(|_| Meter::new(&window)).collect();
    let mut ends: Vec<Option<Instant>> = vec![None; n_flows];
    let mut n_open = n_flows;
    let mut turn = Vec::with_capacity(n_flows);
    let hard = hard_deadline(&window, plan.io_timeout);
    let mut empty_polls = 0u32;
    while n_open > 0 {
        let left = hard.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(DataError::Overrun);
        }
        let timeout_ms = if empty_polls < STREAM_SPIN_POLLS {
            0
        } else {
            left.as_millis().clamp(1, 100) as i32
        };
        let n_ready = epoll.wait(timeout_ms)?;
        empty_polls = if n_ready == 0 {
            empty_polls.saturating_add(1)
        } else {
            0
        };
        turn.clear();
        for k in 0..n_ready {
            let idx = epoll.ready(k);
            if ends[idx].is_none() {
                turn.push(idx);
            }
        }
        for _ in 0..POLL_PASSES {
            let mut k = 0;
            while let Some(&idx) = turn.get(k) {
                let stream = &mut flows[idx].0;
                match stream.read(&mut buffer) {
                    Ok(0) => {
                        ends[idx] = Some(Instant::now());
                        n_open -= 1;
                        epoll.remove(stream);
                        turn.swap_remove(k);
                    }
                    Ok(got) => {
                        let meter = &mut meters[idx];
                        meter.counters.bytes_received += got as u64;
                        meter.counters.messages_received += 1;
                        meter.tick(Instant::now());
                        k += 1;
                    }
                    Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                        turn.swap_remove(k);
                    }
                    Err(err) if err.kind() == io::ErrorKind::Interrupted => k += 1,
                    Err(err) => return Err(named(idx)(io_error("receive")(err))),
                }
            }
            if turn.is_empty() {
                break;
            }
        }
    }
    let mut reports = Vec::with_capacity(n_flows);
    let mut usage = Rusage::default();
    for ((stream, mut truth), (meter, end)) in flows.into_iter().zip(meters.into_iter().zip(ends)) {
        let tcp_info = tcp_info_of(&stream);
        finish_tcp(&stream, &mut truth)?;
        let (counters, elapsed, flow_usage) = meter.finish(end.unwrap_or_else(Instant::now));
        // Every flow's meter reads this thread's CPU time: the one that
        // started counting first covers the whole counted window.
        if flow_usage.user + flow_usage.system > usage.user + usage.system {
            usage = flow_usage;
        }
        let mut report = counters.report(plan.spec.test, elapsed, truth);
        report.tcp_info = tcp_info;
        reports.push(report);
    }
    Ok((reports, usage))
}

pub(super) fn server_tcp_maerts(
    plan: &ServerPlan<'_>,
    prepared: Prepared,
    gate: &Gate,
) -> Result<(EndReport, Rusage), DataError> {
    let (mut stream, mut truth, window) = accept_first(plan, prepared, gate)?;
    let buffer = vec![0u8; plan.spec.send_size_bytes as usize];
    let mut meter = Meter::new(&window);
    let end = loop {
        match stream.write(&buffer) {
            Ok(0) => return Err(DataError::PeerClosed),
            Ok(sent) => {
                meter.counters.bytes_sent += sent as u64;
                meter.counters.messages_sent += 1;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_error("send")(err)),
        }
        let now = Instant::now();
        meter.tick(now);
        if now >= window.deadline {
            break now;
        }
    };
    stream
        .shutdown(Shutdown::Write)
        .map_err(io_error("shutdown"))?;
    let tcp_info = tcp_info_of(&stream);
    finish_tcp(&stream, &mut truth)?;
    let (counters, elapsed, usage) = meter.finish(end);
    // Wait for the client's end of file, so that closing does not reset
    // a connection whose last bytes are still in flight; a client that
    // trickles instead is cut off at the hard deadline.
    drain_until_closed(&mut stream, hard_deadline(&window, plan.io_timeout));
    let mut report = counters.report(plan.spec.test, elapsed, truth);
    report.tcp_info = tcp_info;
    Ok((report, usage))
}

pub(super) fn server_tcp_rr(
    plan: &ServerPlan<'_>,
    prepared: Prepared,
    gate: &Gate,
) -> Result<(EndReport, Rusage), DataError> {
    std::thread::scope(|scope| server_tcp_rr_in(scope, plan, prepared, gate))
}

/// [`server_tcp_rr`]'s work, in a scope for its watchdog's thread.
fn server_tcp_rr_in<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    plan: &ServerPlan<'_>,
    prepared: Prepared,
    gate: &Gate,
) -> Result<(EndReport, Rusage), DataError> {
    let (stream, mut truth, window) = accept_first(plan, prepared, gate)?;
    let mut request = vec![0u8; plan.spec.request_size_bytes as usize];
    let response = vec![0u8; plan.spec.response_size_bytes as usize];
    let mut meter = Meter::new(&window);
    let hard = hard_deadline(&window, plan.io_timeout);
    // No receive timeout and no clock read per message: the watchdog
    // ends a read blocked (or a request trickling in) at the hard
    // deadline.
    stream
        .set_read_timeout(None)
        .map_err(io_error("SO_RCVTIMEO"))?;
    let watchdog = Watchdog::arm(scope, &[stream.as_fd()], hard, None)
        .map_err(io_error("starting the watchdog"))?;
    let overrun = |err: DataError| {
        if watchdog.overran() {
            DataError::Overrun
        } else {
            err
        }
    };
    let mut socket = PlainIo::of(&stream);
    while read_message(&mut socket, &mut request).map_err(overrun)? {
        socket
            .write_all(&response)
            .map_err(|err| overrun(io_error("send")(err)))?;
        meter.counters.transactions += 1;
        if meter.clock_due() {
            let now = Instant::now();
            meter.tick(now);
            if now >= hard {
                return Err(DataError::Overrun);
            }
        }
    }
    if watchdog.overran() {
        return Err(DataError::Overrun);
    }
    let end = Instant::now();
    let tcp_info = tcp_info_of(&stream);
    finish_tcp(&stream, &mut truth)?;
    let (mut counters, elapsed, usage) = meter.finish(end);
    fill_rr_counters(&mut counters, plan.spec);
    let mut report = counters.report(plan.spec.test, elapsed, truth);
    report.tcp_info = tcp_info;
    Ok((report, usage))
}

fn fill_rr_counters(counters: &mut Counters, spec: &RunSpec) {
    counters.messages_received = counters.transactions;
    counters.messages_sent = counters.transactions;
    counters.bytes_received = counters.transactions * u64::from(spec.request_size_bytes);
    counters.bytes_sent = counters.transactions * u64::from(spec.response_size_bytes);
}

pub(super) fn server_tcp_crr(
    plan: &ServerPlan<'_>,
    prepared: Prepared,
    gate: &Gate,
) -> Result<(EndReport, Rusage), DataError> {
    // Connections come one per transaction: the flow is ready as soon as
    // its socket listens.
    let window = gate.arrive(plan.spec, plan.io_timeout)?;
    let mut truth = prepared.truth;
    let mut request = vec![0u8; plan.spec.request_size_bytes as usize];
    let response = vec![0u8; plan.spec.response_size_bytes as usize];
    let mut meter = Meter::new(&window);
    let hard = hard_deadline(&window, plan.io_timeout);
    let mut last = None;
    while let Some(mut stream) = accept_client(plan, &prepared.socket, plan.io_timeout)? {
        if read_message_by(&mut stream, &mut request, hard)? {
            stream.write_all(&response).map_err(io_error("send"))?;
            meter.counters.transactions += 1;
            // The client closes first, after reading the response; this
            // read returns at its end of file (or the hard deadline).
            drain_until_closed(&mut stream, hard);
        }
        if last.is_none() {
            record_addresses(&mut truth, &SockRef::from(&stream), None)
                .map_err(io_error("getsockname"))?;
        }
        last = Some(stream);
        let now = Instant::now();
        meter.tick(now);
        if now >= hard {
            return Err(DataError::Overrun);
        }
    }
    let end = Instant::now();
    let (mut counters, elapsed, usage) = meter.finish(end);
    fill_rr_counters(&mut counters, plan.spec);
    if let Some(stream) = last {
        // The connection is closed by now; its buffers still read back.
        let _ = finish_tcp(&stream, &mut truth);
    }
    Ok((counters.report(plan.spec.test, elapsed, truth), usage))
}
