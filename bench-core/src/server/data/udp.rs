//! The server's UDP loop, for UDP_STREAM (receive only, polling a while
//! before it sleeps) and UDP_RR (answer each request). The flow opens
//! with the test's secret from the client's address; the socket is then
//! connected to the client's port.

use super::flow::{Prepared, ServerPlan, hard_deadline};
use crate::cpu::Rusage;
use crate::datapath::counters::count_send_error;
use crate::datapath::gate::{Gate, gated};
use crate::datapath::meter::Meter;
use crate::datapath::{DataError, io_error};
use crate::sockets::{PlainIo, complete_truth, is_timeout, record_addresses, recv_nowait};
use crate::watchdog::{Fired, Watchdog};
use run_record::record::EndReport;
use run_record::spec::TestKind;
use rustix::io::Errno;
use std::io::{self, Read, Write};
use std::net::UdpSocket;
use std::os::fd::AsFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// How many empty polls a UDP_STREAM receiver makes before it sleeps in
/// a blocking receive. A receiver that sleeps whenever its queue runs dry
/// makes the sender wake it (a cross-CPU wake-up) every few datagrams,
/// which slows the sender below what the path can carry; polling a short
/// while (tens of microseconds) keeps the receiver awake between bursts.
const UDP_SPIN_POLLS: u32 = 256;

pub(super) fn server_udp(
    plan: &ServerPlan<'_>,
    prepared: Prepared,
    gate: &Gate,
) -> Result<(EndReport, Rusage), DataError> {
    std::thread::scope(|scope| server_udp_in(scope, plan, prepared, gate))
}

/// [`server_udp`]'s work, in a scope for its watchdog's thread.
fn server_udp_in<'scope, 'env>(
    scope: &'scope std::thread::Scope<'scope, 'env>,
    plan: &ServerPlan<'env>,
    prepared: Prepared,
    gate: &Gate,
) -> Result<(EndReport, Rusage), DataError> {
    let spec = plan.spec;
    let Prepared {
        socket, mut truth, ..
    } = prepared;
    let answer = spec.test == TestKind::UdpRr;
    let size = if answer {
        spec.request_size_bytes
    } else {
        spec.send_size_bytes.max(spec.recv_size_bytes)
    };
    let secret = plan.data_secret;
    // Room for the secret that opens the flow, whatever the message size.
    let mut buffer = vec![0u8; (size as usize).max(secret.len())];
    let response = vec![0u8; spec.response_size_bytes as usize];
    let udp = gated(gate, || {
        let udp = UdpSocket::from(socket.try_clone().map_err(io_error("dup"))?);
        let wait_for_client = Instant::now() + plan.io_timeout;
        // The first datagram from the client's address names its port;
        // the socket is then connected to it, so strangers are filtered
        // by the kernel.
        let peer = loop {
            match udp.recv_from(&mut buffer) {
                Ok((got, peer))
                    if peer.ip() == plan.client_ip && buffer.get(..got) == Some(secret) =>
                {
                    break peer;
                }
                Ok(_) => {}
                Err(err) if is_timeout(&err) || err.kind() == io::ErrorKind::Interrupted => {
                    if plan.stop.load(Ordering::Relaxed) || Instant::now() >= wait_for_client {
                        return Err(DataError::NoClient(plan.io_timeout));
                    }
                }
                Err(err) => return Err(io_error("receive")(err)),
            }
        };
        udp.connect(peer).map_err(io_error("connect"))?;
        record_addresses(&mut truth, &socket, Some(peer)).map_err(io_error("getsockname"))?;
        Ok(udp)
    })?;
    let window = gate.arrive(spec, plan.io_timeout)?;
    let mut meter = Meter::new(&window);
    let mut last_datagram = Instant::now();
    let hard = hard_deadline(&window, plan.io_timeout);
    // UDP_RR receives without a timeout, which would cost a kernel timer
    // per request: a watchdog ends the blocked receive when the client
    // is done (the stop flag) or at the hard deadline.
    let watchdog = if answer {
        udp.set_read_timeout(None)
            .map_err(io_error("SO_RCVTIMEO"))?;
        let watchdog = Watchdog::arm(scope, &[udp.as_fd()], hard, Some(plan.stop));
        Some(watchdog.map_err(io_error("starting the watchdog"))?)
    } else {
        None
    };
    // Once the watchdog has shut the socket down, what receive and send
    // return is its doing: the end (told to stop) or an overrun.
    let ended = || match watchdog.as_ref().and_then(Watchdog::fired) {
        Some(Fired::Stop) => Some(Ok(())),
        Some(Fired::Deadline) => Some(Err(DataError::Overrun)),
        None => None,
    };
    let spin = if answer { 0 } else { UDP_SPIN_POLLS };
    let mut empty_polls = 0u32;
    loop {
        let received = if empty_polls < spin {
            recv_nowait(&udp, &mut buffer)
        } else {
            PlainIo::of(&udp).read(&mut buffer)
        };
        if let Some(end) = matches!(received, Ok(0) | Err(_)).then(ended).flatten() {
            end?;
            break;
        }
        match received {
            // The second copy of the secret that opened the flow.
            Ok(got) if got == secret.len() && buffer.get(..got) == Some(secret) => {}
            Ok(got) => {
                empty_polls = 0;
                meter.counters.bytes_received += got as u64;
                meter.counters.messages_received += 1;
                if answer {
                    match PlainIo::of(&udp).write(&response) {
                        Ok(sent) => {
                            meter.counters.bytes_sent += sent as u64;
                            meter.counters.messages_sent += 1;
                            meter.counters.transactions += 1;
                        }
                        Err(err) => {
                            if let Some(end) = ended() {
                                end?;
                                break;
                            }
                            count_send_error(&mut meter.counters, err)?;
                        }
                    }
                }
                // UDP_STREAM's receiver needs the time of its last
                // datagram; UDP_RR's counted time is the client's.
                if !answer || meter.clock_due() {
                    last_datagram = Instant::now();
                    meter.tick(last_datagram);
                    if last_datagram >= hard {
                        return Err(DataError::Overrun);
                    }
                }
            }
            Err(err) if is_timeout(&err) || err.kind() == io::ErrorKind::Interrupted => {
                empty_polls = empty_polls.saturating_add(1);
                if plan.stop.load(Ordering::Relaxed) {
                    break;
                }
                if Instant::now() >= hard {
                    return Err(DataError::Overrun);
                }
            }
            // The client's socket is gone (an ICMP error came back): the
            // client has finished, or the control connection will say
            // what went wrong.
            Err(err) if err.raw_os_error() == Some(Errno::CONNREFUSED.raw_os_error()) => break,
            Err(err) => return Err(io_error("receive")(err)),
        }
    }
    let (counters, elapsed, usage) = meter.finish(last_datagram);
    complete_truth(&mut truth, &socket).map_err(io_error("reading the socket"))?;
    Ok((counters.report(spec.test, elapsed, truth), usage))
}
