//! What a server flow is given and how it starts: its data socket, bound
//! before `ready` is sent, and the client's data connection, accepted
//! only from the client's address and with the test's secret.
//!
//! Whatever else connects to a data port (a stranger, or a silent
//! connection from the client's own address) cannot hold the flow up:
//! the connections are accepted as they come and their secrets read side
//! by side, each with [`SECRET_WAIT`] to send it, up to
//! [`PENDING_CONNECTIONS`] at once (beyond, the oldest is closed). The
//! first whose secret is right is the flow's. A connection whose secret
//! is there when it is accepted, as a client's always is but for a
//! scheduling delay, takes no more system calls than before.

use crate::datapath::gate::{Gate, Window, gated};
use crate::datapath::{DataError, io_error};
use crate::protocol::PortRange;
use crate::sockets::{self, is_timeout, new_socket, record_addresses, truth_after_setup};
use run_record::record::SocketTruth;
use run_record::spec::RunSpec;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use rustix::net::RecvFlags;
use socket2::{SockRef, Socket, Type};
use std::io;
use std::net::{IpAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Duration, Instant};

/// How often a server loop waiting for data looks at its stop flag.
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// Longest time a data connection has, from its accept, to send the
/// test's secret (at most the I/O timeout).
pub const SECRET_WAIT: Duration = Duration::from_secs(1);
/// Most data connections of one port whose secret is awaited at once.
pub const PENDING_CONNECTIONS: usize = 64;

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

/// A data connection whose secret is still coming.
struct Pending {
    stream: TcpStream,
    secret: Vec<u8>,
    deadline: Instant,
}

/// What a read of a data connection's secret found.
enum Secret {
    /// The whole secret, and it is the test's.
    Right,
    /// Not yet all of it.
    Partial,
    /// A wrong secret, an end of file or a failed read: close it.
    Wrong,
}

impl Pending {
    /// Reads what the connection has of its secret, without waiting.
    fn read(&mut self, expected: &[u8]) -> Secret {
        while self.secret.len() < expected.len() {
            let filled = self.secret.len();
            let mut chunk = [0u8; 128];
            let room = (expected.len() - filled).min(chunk.len());
            match rustix::net::recv(&self.stream, &mut chunk[..room], RecvFlags::DONTWAIT) {
                Ok((0, _)) => return Secret::Wrong,
                Ok((got, _)) => self.secret.extend_from_slice(&chunk[..got]),
                Err(Errno::INTR) => {}
                Err(Errno::AGAIN) => return Secret::Partial,
                Err(_) => return Secret::Wrong,
            }
        }
        if self.secret == expected {
            Secret::Right
        } else {
            Secret::Wrong
        }
    }
}

/// Waits for a data connection from the client. Connections from other
/// addresses, or that do not open with the test's secret within
/// [`SECRET_WAIT`], are closed and ignored; those still sending theirs
/// are read side by side (see the module's documentation).
pub(crate) fn accept_client(
    plan: &ServerPlan<'_>,
    listener: &Socket,
    wait: Duration,
) -> Result<Option<TcpStream>, DataError> {
    let give_up = Instant::now() + wait;
    let secret_wait = SECRET_WAIT.min(plan.io_timeout);
    let mut pending: Vec<Pending> = Vec::new();
    loop {
        let listener_ready = if pending.is_empty() {
            // Nothing is waiting: the accept itself waits (up to the
            // listener's poll interval).
            true
        } else {
            let (listener_ready, ready) = poll_pending(listener, &pending)?;
            // From the last, so that swap_remove moves only entries seen.
            for idx in ready.into_iter().rev() {
                match pending[idx].read(plan.data_secret) {
                    Secret::Right => return Ok(Some(pending.swap_remove(idx).stream)),
                    Secret::Wrong => drop(pending.swap_remove(idx)),
                    Secret::Partial => {}
                }
            }
            listener_ready
        };
        if listener_ready {
            match listener.accept() {
                Ok((socket, peer)) => {
                    if let Some(stream) = take_connection(plan, socket, peer, secret_wait)? {
                        match stream {
                            Taken::Ready(stream) => return Ok(Some(stream)),
                            Taken::Waiting(waiting) => {
                                if pending.len() >= PENDING_CONNECTIONS {
                                    pending.remove(0);
                                }
                                pending.push(waiting);
                            }
                        }
                    }
                }
                Err(err) if is_timeout(&err) || err.kind() == io::ErrorKind::Interrupted => {}
                Err(err) => return Err(io_error("accept")(err)),
            }
        }
        let now = Instant::now();
        pending.retain(|waiting| waiting.deadline > now);
        if plan.stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if now >= give_up {
            return Err(DataError::NoClient(wait));
        }
    }
}

/// A data connection just accepted: its secret was there, or it waits.
enum Taken {
    Ready(TcpStream),
    Waiting(Pending),
}

/// Sets up a data connection just accepted and reads its secret if it
/// has come; `None` for one to close (another address, a wrong secret).
fn take_connection(
    plan: &ServerPlan<'_>,
    socket: Socket,
    peer: socket2::SockAddr,
    secret_wait: Duration,
) -> Result<Option<Taken>, DataError> {
    if peer.as_socket().map(|addr| addr.ip()) != Some(plan.client_ip) {
        return Ok(None);
    }
    socket
        .set_read_timeout(Some(plan.io_timeout))
        .map_err(io_error("SO_RCVTIMEO"))?;
    socket
        .set_write_timeout(Some(plan.io_timeout))
        .map_err(io_error("SO_SNDTIMEO"))?;
    let mut waiting = Pending {
        stream: TcpStream::from(socket),
        secret: Vec::with_capacity(plan.data_secret.len()),
        deadline: Instant::now() + secret_wait,
    };
    Ok(match waiting.read(plan.data_secret) {
        Secret::Right => Some(Taken::Ready(waiting.stream)),
        Secret::Partial => Some(Taken::Waiting(waiting)),
        Secret::Wrong => None,
    })
}

/// Waits (at most the poll interval, or until the first pending
/// connection's time is up) for the listener or a pending connection to
/// be readable: whether the listener is, and the indices of the
/// readable pending connections.
fn poll_pending(listener: &Socket, pending: &[Pending]) -> Result<(bool, Vec<usize>), DataError> {
    let now = Instant::now();
    let first_deadline = pending
        .iter()
        .map(|waiting| waiting.deadline)
        .min()
        .unwrap_or(now);
    let wait = POLL_INTERVAL.min(first_deadline.saturating_duration_since(now));
    let mut fds = Vec::with_capacity(pending.len() + 1);
    fds.push(PollFd::new(listener, PollFlags::IN));
    fds.extend(
        pending
            .iter()
            .map(|waiting| PollFd::new(&waiting.stream, PollFlags::IN)),
    );
    let timeout = Timespec {
        tv_sec: 0,
        tv_nsec: i64::from(wait.subsec_nanos()),
    };
    match poll(&mut fds, Some(&timeout)) {
        Ok(0) | Err(Errno::INTR) => return Ok((false, Vec::new())),
        Ok(_) => {}
        Err(err) => return Err(io_error("poll")(err.into())),
    }
    let ready: Vec<usize> = fds[1..]
        .iter()
        .enumerate()
        .filter(|(_, fd)| !fd.revents().is_empty())
        .map(|(idx, _)| idx)
        .collect();
    Ok((!fds[0].revents().is_empty(), ready))
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
