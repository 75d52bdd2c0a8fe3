//! What a server flow is given and how it starts: its data socket, bound
//! before `ready` is sent, and the client's data connection, accepted
//! only from the client's address and with the test's secret.

use crate::datapath::gate::{Gate, Window, gated};
use crate::datapath::message::read_message_by;
use crate::datapath::{DataError, io_error};
use crate::protocol::PortRange;
use crate::sockets::{self, is_timeout, new_socket, record_addresses, truth_after_setup};
use run_record::record::SocketTruth;
use run_record::spec::RunSpec;
use socket2::{SockRef, Socket, Type};
use std::io;
use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// How often a server loop waiting for data looks at its stop flag.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// A server data socket, bound before `ready` is sent.
pub struct Prepared {
    pub(crate) socket: Socket,
    pub(crate) truth: SocketTruth,
    /// The port to announce.
    pub port: u16,
}

/// Binds one data socket for each flow of `spec` on `local_ip`.
pub fn prepare_server(
    spec: &RunSpec,
    local_ip: IpAddr,
    ports: Option<PortRange>,
) -> Result<Vec<Prepared>, DataError> {
    (0..spec.flows.max(1))
        .map(|_| prepare_flow(spec, local_ip, ports))
        .collect()
}

fn prepare_flow(
    spec: &RunSpec,
    local_ip: IpAddr,
    ports: Option<PortRange>,
) -> Result<Prepared, DataError> {
    let kind = if spec.test.is_udp() {
        Type::DGRAM
    } else {
        Type::STREAM
    };
    let buffer = spec.remote_socket_buffer_bytes;
    let socket = new_socket(local_ip, kind, buffer).map_err(io_error("socket set-up"))?;
    if kind == Type::STREAM {
        socket
            .set_reuse_address(true)
            .map_err(io_error("SO_REUSEADDR"))?;
        if spec.nodelay {
            socket
                .set_tcp_nodelay(true)
                .map_err(io_error("TCP_NODELAY"))?;
        }
    }
    let truth =
        truth_after_setup(&socket, buffer).map_err(io_error("reading the socket buffers"))?;
    let port = sockets::bind_in_range(&socket, local_ip, ports).map_err(io_error("bind"))?;
    if kind == Type::STREAM {
        socket.listen(128).map_err(io_error("listen"))?;
    }
    socket
        .set_read_timeout(Some(POLL_INTERVAL))
        .map_err(io_error("SO_RCVTIMEO"))?;
    Ok(Prepared {
        socket,
        truth,
        port,
    })
}

/// What the server needs to run its side of one iteration.
pub struct ServerPlan<'a> {
    /// The test.
    pub spec: &'a RunSpec,
    /// The client's address on the control connection: data must come
    /// from the same address.
    pub client_ip: IpAddr,
    /// Set when the client has said it is finished (or has gone).
    pub stop: &'a AtomicBool,
    /// Longest wait for any one socket operation.
    pub io_timeout: Duration,
    /// The test's secret: a data connection or an opening datagram
    /// without it is dropped.
    pub data_secret: &'a [u8],
    /// Set to [`FLOWS_STARTED`] once every flow's thread runs, or to
    /// [`FLOWS_FAILED`] when one could not be started, so that the caller
    /// answers `ready` only when the server can carry the test.
    pub flows_started: &'a AtomicU8,
}

/// [`ServerPlan::flows_started`]: every flow's thread runs.
pub const FLOWS_STARTED: u8 = 1;
/// [`ServerPlan::flows_started`]: a flow's thread could not be started.
pub const FLOWS_FAILED: u8 = 2;

/// When a server loop gives up on a client that goes on past the
/// window: the end of the window plus the I/O timeout.
pub(crate) fn hard_deadline(window: &Window, io_timeout: Duration) -> Instant {
    window.deadline + io_timeout
}

/// Waits for a data connection from the client. Connections from other
/// addresses, or that do not open with the test's secret, are closed and
/// ignored.
pub(crate) fn accept_client(
    plan: &ServerPlan<'_>,
    listener: &Socket,
    wait: Duration,
) -> Result<Option<TcpStream>, DataError> {
    let give_up = Instant::now() + wait;
    loop {
        match listener.accept() {
            Ok((socket, peer)) => {
                if peer.as_socket().map(|addr| addr.ip()) != Some(plan.client_ip) {
                    continue;
                }
                socket
                    .set_read_timeout(Some(plan.io_timeout))
                    .map_err(io_error("SO_RCVTIMEO"))?;
                socket
                    .set_write_timeout(Some(plan.io_timeout))
                    .map_err(io_error("SO_SNDTIMEO"))?;
                let mut stream = TcpStream::from(socket);
                let mut secret = vec![0u8; plan.data_secret.len()];
                let deadline = Instant::now() + plan.io_timeout;
                match read_message_by(&mut stream, &mut secret, deadline) {
                    Ok(true) if secret == plan.data_secret => return Ok(Some(stream)),
                    _ => continue,
                }
            }
            Err(err) if is_timeout(&err) || err.kind() == io::ErrorKind::Interrupted => {
                if plan.stop.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                if Instant::now() >= give_up {
                    return Err(DataError::NoClient(wait));
                }
            }
            Err(err) => return Err(io_error("accept")(err)),
        }
    }
}

/// Accepts the flow's connection and waits at the gate with it.
pub(crate) fn accept_first(
    plan: &ServerPlan<'_>,
    prepared: Prepared,
    gate: &Gate,
) -> Result<(TcpStream, SocketTruth, Window), DataError> {
    let (stream, truth) = gated(gate, || {
        let stream = accept_client(plan, &prepared.socket, plan.io_timeout)?
            .ok_or(DataError::NoClient(plan.io_timeout))?;
        let mut truth = prepared.truth;
        record_addresses(&mut truth, &SockRef::from(&stream), None)
            .map_err(io_error("getsockname"))?;
        Ok((stream, truth))
    })?;
    let window = gate.arrive(plan.spec, plan.io_timeout)?;
    Ok((stream, truth, window))
}
