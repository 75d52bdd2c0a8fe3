//! The data phase of every test, for each end: the hot loops.
//!
//! Rules of the loops: buffers are allocated once before the loop; each
//! message is one system call; nothing is formatted or allocated per
//! message; the end of the test is a monotonic deadline compared with
//! `Instant::now()` (a vDSO read, no system call, no signal) after every
//! message, so a test ends within one message time of its deadline and
//! the elapsed time is measured, not assumed.
//!
//! Stream tests end when the sender reaches its deadline and shuts its
//! side down; the receiver counts until end of file. Request/response
//! tests are driven by the client; the server answers until end of file
//! (TCP) or until told to stop over the control connection (TCP_CRR and
//! UDP). Every server loop also has a hard deadline, so a client that
//! misbehaves costs bounded time.

use crate::protocol::PortRange;
use crate::record::{EndReport, SocketTruth};
use crate::sockets::{
    self, complete_truth, is_timeout, new_socket, record_addresses, truth_after_setup,
};
use crate::spec::{RunSpec, TestKind};
use socket2::{SockRef, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often a server loop waiting for data looks at its stop flag.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Why the data phase failed.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A socket call failed.
    #[error("{action} failed on the data socket: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// What the kernel said.
        source: io::Error,
    },
    /// The peer closed the data connection in the middle of the test.
    #[error("the peer closed the data connection before the test ended")]
    PeerClosed,
    /// The kernel used another address than the one asked for.
    #[error("the data connection went to {got}, not to {asked} as asked")]
    AddressMismatch {
        /// The address asked for.
        asked: SocketAddr,
        /// The address the kernel reports.
        got: SocketAddr,
    },
    /// The client never opened its data connection.
    #[error("no data from the client within {0:?}")]
    NoClient(Duration),
    /// The peer went on past every deadline.
    #[error("the test ran past its hard deadline")]
    Overrun,
    /// CPU pinning failed.
    #[error("cannot pin to CPU {cpu}: {source}")]
    Pin {
        /// The CPU asked for.
        cpu: u32,
        /// What the kernel said.
        source: io::Error,
    },
}

fn io_error(action: &'static str) -> impl Fn(io::Error) -> DataError {
    move |source| match source.kind() {
        io::ErrorKind::UnexpectedEof => DataError::PeerClosed,
        _ => DataError::Io { action, source },
    }
}

/// Pins the calling thread when `cpu` says so.
pub fn pin(cpu: Option<u32>) -> Result<(), DataError> {
    match cpu {
        Some(cpu) => {
            sockets::pin_current_thread(cpu).map_err(|source| DataError::Pin { cpu, source })
        }
        None => Ok(()),
    }
}

/// Counters of one end, turned into an [`EndReport`] at the end.
#[derive(Default)]
struct Counters {
    bytes_sent: u64,
    bytes_received: u64,
    messages_sent: u64,
    messages_received: u64,
    transactions: u64,
    timeouts: u64,
}

impl Counters {
    fn report(self, test: TestKind, elapsed: Duration, socket: SocketTruth) -> EndReport {
        EndReport {
            elapsed_s: elapsed.as_secs_f64(),
            bytes_sent: self.bytes_sent,
            bytes_received: self.bytes_received,
            messages_sent: self.messages_sent,
            messages_received: self.messages_received,
            transactions: test.is_request_response().then_some(self.transactions),
            timeouts: (test == TestKind::UdpRr).then_some(self.timeouts),
            socket,
        }
    }
}

fn duration_of(spec: &RunSpec) -> Duration {
    Duration::from_secs_f64(spec.duration_s)
}

/// Reads exactly `buffer.len()` bytes. Returns false on end of file before
/// the first byte (a clean end between messages).
fn read_message(stream: &mut TcpStream, buffer: &mut [u8]) -> Result<bool, DataError> {
    let mut filled = 0;
    while filled < buffer.len() {
        match stream.read(&mut buffer[filled..]) {
            Ok(0) if filled == 0 => return Ok(false),
            Ok(0) => return Err(DataError::PeerClosed),
            Ok(got) => filled += got,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_error("receive")(err)),
        }
    }
    Ok(true)
}

// ---------------------------------------------------------------- client

/// What the client needs to run its side of one iteration.
pub struct ClientPlan<'a> {
    /// The test.
    pub spec: &'a RunSpec,
    /// The server's data socket.
    pub server: SocketAddr,
    /// Longest wait for any one socket operation.
    pub io_timeout: Duration,
    /// How long a UDP_RR request waits for its response before it counts
    /// as lost.
    pub udp_rr_timeout: Duration,
}

fn check_peer(asked: SocketAddr, got: Option<SocketAddr>) -> Result<(), DataError> {
    match got {
        Some(got) if got == asked => Ok(()),
        Some(got) => Err(DataError::AddressMismatch { asked, got }),
        None => Err(DataError::Io {
            action: "getpeername",
            source: io::Error::from(io::ErrorKind::NotConnected),
        }),
    }
}

fn connect_tcp(plan: &ClientPlan<'_>) -> Result<(TcpStream, SocketTruth), DataError> {
    let spec = plan.spec;
    let socket = new_socket(
        plan.server.ip(),
        Type::STREAM,
        spec.local_socket_buffer_bytes,
    )
    .map_err(io_error("socket set-up"))?;
    if spec.nodelay {
        socket
            .set_tcp_nodelay(true)
            .map_err(io_error("TCP_NODELAY"))?;
    }
    let truth = truth_after_setup(&socket, spec.local_socket_buffer_bytes)
        .map_err(io_error("reading the socket buffers"))?;
    // A blocking connect honours SO_SNDTIMEO on Linux, which bounds it.
    socket
        .set_write_timeout(Some(plan.io_timeout))
        .map_err(io_error("SO_SNDTIMEO"))?;
    socket
        .set_read_timeout(Some(plan.io_timeout))
        .map_err(io_error("SO_RCVTIMEO"))?;
    socket
        .connect(&plan.server.into())
        .map_err(io_error("connect"))?;
    let mut truth = truth;
    record_addresses(&mut truth, &socket, None).map_err(io_error("getsockname"))?;
    Ok((TcpStream::from(socket), truth))
}

fn finish_tcp(stream: &TcpStream, truth: &mut SocketTruth) -> Result<(), DataError> {
    complete_truth(truth, &SockRef::from(stream)).map_err(io_error("reading the socket"))
}

/// Runs the client's side of one iteration.
pub fn run_client(plan: &ClientPlan<'_>) -> Result<EndReport, DataError> {
    pin(plan.spec.cpu_pinning.local)?;
    match plan.spec.test {
        TestKind::TcpStream => client_tcp_stream(plan),
        TestKind::TcpMaerts => client_tcp_maerts(plan),
        TestKind::TcpRr => client_tcp_rr(plan),
        TestKind::TcpCrr => client_tcp_crr(plan),
        TestKind::UdpStream => client_udp_stream(plan),
        TestKind::UdpRr => client_udp_rr(plan),
    }
}

fn client_tcp_stream(plan: &ClientPlan<'_>) -> Result<EndReport, DataError> {
    let (mut stream, mut truth) = connect_tcp(plan)?;
    check_peer(plan.server, stream.peer_addr().ok())?;
    let buffer = vec![0u8; plan.spec.send_size_bytes as usize];
    let mut counters = Counters::default();
    let start = Instant::now();
    let deadline = start + duration_of(plan.spec);
    loop {
        match stream.write(&buffer) {
            Ok(0) => return Err(DataError::PeerClosed),
            Ok(sent) => {
                counters.bytes_sent += sent as u64;
                counters.messages_sent += 1;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_error("send")(err)),
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    stream
        .shutdown(Shutdown::Write)
        .map_err(io_error("shutdown"))?;
    let elapsed = start.elapsed();
    finish_tcp(&stream, &mut truth)?;
    Ok(counters.report(plan.spec.test, elapsed, truth))
}

fn receive_to_end(
    stream: &mut TcpStream,
    buffer: &mut [u8],
    counters: &mut Counters,
    hard_deadline: Instant,
) -> Result<Duration, DataError> {
    let start = Instant::now();
    loop {
        match stream.read(buffer) {
            Ok(0) => return Ok(start.elapsed()),
            Ok(got) => {
                counters.bytes_received += got as u64;
                counters.messages_received += 1;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_error("receive")(err)),
        }
        if Instant::now() >= hard_deadline {
            return Err(DataError::Overrun);
        }
    }
}

fn hard_deadline(spec: &RunSpec, io_timeout: Duration) -> Instant {
    Instant::now() + duration_of(spec) + io_timeout
}

fn client_tcp_maerts(plan: &ClientPlan<'_>) -> Result<EndReport, DataError> {
    let (mut stream, mut truth) = connect_tcp(plan)?;
    check_peer(plan.server, stream.peer_addr().ok())?;
    let mut buffer = vec![0u8; plan.spec.recv_size_bytes as usize];
    let mut counters = Counters::default();
    let hard = hard_deadline(plan.spec, plan.io_timeout);
    let elapsed = receive_to_end(&mut stream, &mut buffer, &mut counters, hard)?;
    finish_tcp(&stream, &mut truth)?;
    Ok(counters.report(plan.spec.test, elapsed, truth))
}

fn client_tcp_rr(plan: &ClientPlan<'_>) -> Result<EndReport, DataError> {
    let (mut stream, mut truth) = connect_tcp(plan)?;
    check_peer(plan.server, stream.peer_addr().ok())?;
    let request = vec![0u8; plan.spec.request_size_bytes as usize];
    let mut response = vec![0u8; plan.spec.response_size_bytes as usize];
    let mut counters = Counters::default();
    let start = Instant::now();
    let deadline = start + duration_of(plan.spec);
    loop {
        stream.write_all(&request).map_err(io_error("send"))?;
        if !read_message(&mut stream, &mut response)? {
            return Err(DataError::PeerClosed);
        }
        counters.transactions += 1;
        if Instant::now() >= deadline {
            break;
        }
    }
    let elapsed = start.elapsed();
    stream
        .shutdown(Shutdown::Write)
        .map_err(io_error("shutdown"))?;
    counters.messages_sent = counters.transactions;
    counters.messages_received = counters.transactions;
    counters.bytes_sent = counters.transactions * u64::from(plan.spec.request_size_bytes);
    counters.bytes_received = counters.transactions * u64::from(plan.spec.response_size_bytes);
    finish_tcp(&stream, &mut truth)?;
    Ok(counters.report(plan.spec.test, elapsed, truth))
}

fn client_tcp_crr(plan: &ClientPlan<'_>) -> Result<EndReport, DataError> {
    let request = vec![0u8; plan.spec.request_size_bytes as usize];
    let mut response = vec![0u8; plan.spec.response_size_bytes as usize];
    let mut counters = Counters::default();
    let mut last = None;
    let start = Instant::now();
    let deadline = start + duration_of(plan.spec);
    let mut first = true;
    loop {
        // Close the previous connection before opening the next: one
        // connection per transaction, as in netperf.
        drop(last.take());
        let (mut stream, truth) = connect_tcp(plan)?;
        if first {
            first = false;
            check_peer(plan.server, stream.peer_addr().ok())?;
        }
        stream.write_all(&request).map_err(io_error("send"))?;
        if !read_message(&mut stream, &mut response)? {
            return Err(DataError::PeerClosed);
        }
        counters.transactions += 1;
        last = Some((stream, truth));
        if Instant::now() >= deadline {
            break;
        }
    }
    let elapsed = start.elapsed();
    counters.messages_sent = counters.transactions;
    counters.messages_received = counters.transactions;
    counters.bytes_sent = counters.transactions * u64::from(plan.spec.request_size_bytes);
    counters.bytes_received = counters.transactions * u64::from(plan.spec.response_size_bytes);
    let mut truth = SocketTruth::default();
    if let Some((stream, mut last_truth)) = last {
        finish_tcp(&stream, &mut last_truth)?;
        truth = last_truth;
    }
    Ok(counters.report(plan.spec.test, elapsed, truth))
}

fn unspecified(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

fn connect_udp(plan: &ClientPlan<'_>) -> Result<(UdpSocket, Socket, SocketTruth), DataError> {
    let spec = plan.spec;
    let socket = new_socket(
        plan.server.ip(),
        Type::DGRAM,
        spec.local_socket_buffer_bytes,
    )
    .map_err(io_error("socket set-up"))?;
    let truth = truth_after_setup(&socket, spec.local_socket_buffer_bytes)
        .map_err(io_error("reading the socket buffers"))?;
    socket
        .bind(&SocketAddr::new(unspecified(plan.server.ip()), 0).into())
        .map_err(io_error("bind"))?;
    socket
        .connect(&plan.server.into())
        .map_err(io_error("connect"))?;
    socket
        .set_write_timeout(Some(plan.io_timeout))
        .map_err(io_error("SO_SNDTIMEO"))?;
    let peer = socket.peer_addr().ok().and_then(|addr| addr.as_socket());
    check_peer(plan.server, peer)?;
    let mut truth = truth;
    record_addresses(&mut truth, &socket, None).map_err(io_error("getsockname"))?;
    let clone = socket.try_clone().map_err(io_error("dup"))?;
    Ok((UdpSocket::from(socket), clone, truth))
}

fn client_udp_stream(plan: &ClientPlan<'_>) -> Result<EndReport, DataError> {
    let (udp, socket, mut truth) = connect_udp(plan)?;
    let buffer = vec![0u8; plan.spec.send_size_bytes as usize];
    let mut counters = Counters::default();
    let start = Instant::now();
    let deadline = start + duration_of(plan.spec);
    loop {
        match udp.send(&buffer) {
            Ok(sent) => {
                counters.bytes_sent += sent as u64;
                counters.messages_sent += 1;
            }
            // A full device queue drops the datagram at the sender; that
            // is loss, not failure.
            Err(err) if err.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_error("send")(err)),
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    let elapsed = start.elapsed();
    complete_truth(&mut truth, &socket).map_err(io_error("reading the socket"))?;
    Ok(counters.report(plan.spec.test, elapsed, truth))
}

fn client_udp_rr(plan: &ClientPlan<'_>) -> Result<EndReport, DataError> {
    let (udp, socket, mut truth) = connect_udp(plan)?;
    udp.set_read_timeout(Some(plan.udp_rr_timeout))
        .map_err(io_error("SO_RCVTIMEO"))?;
    let request = vec![0u8; plan.spec.request_size_bytes as usize];
    let mut response = vec![0u8; plan.spec.response_size_bytes as usize];
    let mut counters = Counters::default();
    let start = Instant::now();
    let deadline = start + duration_of(plan.spec);
    loop {
        match udp.send(&request) {
            Ok(sent) => {
                counters.bytes_sent += sent as u64;
                counters.messages_sent += 1;
            }
            Err(err) if err.raw_os_error() == Some(libc::ENOBUFS) => {}
            Err(err) => return Err(io_error("send")(err)),
        }
        match udp.recv(&mut response) {
            Ok(got) => {
                counters.bytes_received += got as u64;
                counters.messages_received += 1;
                counters.transactions += 1;
            }
            // A lost request or response: count it and go on. A late
            // response will then answer the next request, which keeps
            // the count of transactions right.
            Err(err) if is_timeout(&err) => counters.timeouts += 1,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_error("receive")(err)),
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    let elapsed = start.elapsed();
    complete_truth(&mut truth, &socket).map_err(io_error("reading the socket"))?;
    Ok(counters.report(plan.spec.test, elapsed, truth))
}

// ---------------------------------------------------------------- server

/// A server data socket, bound before `ready` is sent.
pub struct Prepared {
    socket: Socket,
    truth: SocketTruth,
    /// The port to announce.
    pub port: u16,
}

/// Binds the server's data socket for `spec` on `local_ip`.
pub fn prepare_server(
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
}

/// Runs the server's side of one iteration.
pub fn run_server(plan: &ServerPlan<'_>, prepared: Prepared) -> Result<EndReport, DataError> {
    pin(plan.spec.cpu_pinning.remote)?;
    match plan.spec.test {
        TestKind::TcpStream => server_tcp_stream(plan, prepared),
        TestKind::TcpMaerts => server_tcp_maerts(plan, prepared),
        TestKind::TcpRr => server_tcp_rr(plan, prepared),
        TestKind::TcpCrr => server_tcp_crr(plan, prepared),
        TestKind::UdpStream | TestKind::UdpRr => server_udp(plan, prepared),
    }
}

/// Waits for a data connection from the client. Connections from other
/// addresses are closed and ignored.
fn accept_client(
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
                return Ok(Some(TcpStream::from(socket)));
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

fn accept_first(plan: &ServerPlan<'_>, listener: &Socket) -> Result<TcpStream, DataError> {
    accept_client(plan, listener, plan.io_timeout)?.ok_or(DataError::NoClient(plan.io_timeout))
}

fn server_tcp_stream(plan: &ServerPlan<'_>, prepared: Prepared) -> Result<EndReport, DataError> {
    let mut stream = accept_first(plan, &prepared.socket)?;
    let mut truth = prepared.truth;
    record_addresses(&mut truth, &SockRef::from(&stream), None).map_err(io_error("getsockname"))?;
    let mut buffer = vec![0u8; plan.spec.recv_size_bytes as usize];
    let mut counters = Counters::default();
    let hard = hard_deadline(plan.spec, plan.io_timeout);
    let elapsed = receive_to_end(&mut stream, &mut buffer, &mut counters, hard)?;
    finish_tcp(&stream, &mut truth)?;
    Ok(counters.report(plan.spec.test, elapsed, truth))
}

fn server_tcp_maerts(plan: &ServerPlan<'_>, prepared: Prepared) -> Result<EndReport, DataError> {
    let mut stream = accept_first(plan, &prepared.socket)?;
    let mut truth = prepared.truth;
    record_addresses(&mut truth, &SockRef::from(&stream), None).map_err(io_error("getsockname"))?;
    let buffer = vec![0u8; plan.spec.send_size_bytes as usize];
    let mut counters = Counters::default();
    let start = Instant::now();
    let deadline = start + duration_of(plan.spec);
    loop {
        match stream.write(&buffer) {
            Ok(0) => return Err(DataError::PeerClosed),
            Ok(sent) => {
                counters.bytes_sent += sent as u64;
                counters.messages_sent += 1;
            }
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(io_error("send")(err)),
        }
        if Instant::now() >= deadline {
            break;
        }
    }
    stream
        .shutdown(Shutdown::Write)
        .map_err(io_error("shutdown"))?;
    let elapsed = start.elapsed();
    finish_tcp(&stream, &mut truth)?;
    // Wait for the client's end of file, so that closing does not reset
    // a connection whose last bytes are still in flight.
    let mut scratch = [0u8; 64];
    while matches!(stream.read(&mut scratch), Ok(got) if got > 0) {}
    Ok(counters.report(plan.spec.test, elapsed, truth))
}

fn server_tcp_rr(plan: &ServerPlan<'_>, prepared: Prepared) -> Result<EndReport, DataError> {
    let mut stream = accept_first(plan, &prepared.socket)?;
    let mut truth = prepared.truth;
    record_addresses(&mut truth, &SockRef::from(&stream), None).map_err(io_error("getsockname"))?;
    let mut request = vec![0u8; plan.spec.request_size_bytes as usize];
    let response = vec![0u8; plan.spec.response_size_bytes as usize];
    let mut counters = Counters::default();
    let start = Instant::now();
    let hard = hard_deadline(plan.spec, plan.io_timeout);
    while read_message(&mut stream, &mut request)? {
        stream.write_all(&response).map_err(io_error("send"))?;
        counters.transactions += 1;
        if Instant::now() >= hard {
            return Err(DataError::Overrun);
        }
    }
    let elapsed = start.elapsed();
    fill_rr_counters(&mut counters, plan.spec);
    finish_tcp(&stream, &mut truth)?;
    Ok(counters.report(plan.spec.test, elapsed, truth))
}

fn fill_rr_counters(counters: &mut Counters, spec: &RunSpec) {
    counters.messages_received = counters.transactions;
    counters.messages_sent = counters.transactions;
    counters.bytes_received = counters.transactions * u64::from(spec.request_size_bytes);
    counters.bytes_sent = counters.transactions * u64::from(spec.response_size_bytes);
}

fn server_tcp_crr(plan: &ServerPlan<'_>, prepared: Prepared) -> Result<EndReport, DataError> {
    let mut truth = prepared.truth;
    let mut request = vec![0u8; plan.spec.request_size_bytes as usize];
    let response = vec![0u8; plan.spec.response_size_bytes as usize];
    let mut counters = Counters::default();
    let start = Instant::now();
    let hard = hard_deadline(plan.spec, plan.io_timeout);
    let mut last = None;
    let mut scratch = [0u8; 64];
    while let Some(mut stream) = accept_client(plan, &prepared.socket, plan.io_timeout)? {
        if read_message(&mut stream, &mut request)? {
            stream.write_all(&response).map_err(io_error("send"))?;
            counters.transactions += 1;
            // The client closes first, after reading the response; this
            // read returns at its end of file.
            while matches!(stream.read(&mut scratch), Ok(got) if got > 0) {}
        }
        if last.is_none() {
            record_addresses(&mut truth, &SockRef::from(&stream), None)
                .map_err(io_error("getsockname"))?;
        }
        last = Some(stream);
        if Instant::now() >= hard {
            return Err(DataError::Overrun);
        }
    }
    let elapsed = start.elapsed();
    fill_rr_counters(&mut counters, plan.spec);
    if let Some(stream) = last {
        // The connection is closed by now; its buffers still read back.
        let _ = finish_tcp(&stream, &mut truth);
    }
    Ok(counters.report(plan.spec.test, elapsed, truth))
}

fn server_udp(plan: &ServerPlan<'_>, prepared: Prepared) -> Result<EndReport, DataError> {
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
    let mut buffer = vec![0u8; size as usize];
    let response = vec![0u8; spec.response_size_bytes as usize];
    let udp = UdpSocket::from(socket.try_clone().map_err(io_error("dup"))?);
    let mut counters = Counters::default();
    let wait_for_client = Instant::now() + plan.io_timeout;
    // The first datagram from the client's address names its port; the
    // socket is then connected to it, so strangers are filtered by the
    // kernel.
    let peer = loop {
        match udp.recv_from(&mut buffer) {
            Ok((got, peer)) if peer.ip() == plan.client_ip => {
                counters.bytes_received += got as u64;
                counters.messages_received += 1;
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
    let start = Instant::now();
    let mut last_datagram = start;
    let hard = hard_deadline(spec, plan.io_timeout);
    if answer {
        udp.send(&response).map_err(io_error("send"))?;
        counters.messages_sent += 1;
        counters.bytes_sent += response.len() as u64;
        counters.transactions += 1;
    }
    loop {
        match udp.recv(&mut buffer) {
            Ok(got) => {
                counters.bytes_received += got as u64;
                counters.messages_received += 1;
                if answer {
                    match udp.send(&response) {
                        Ok(sent) => {
                            counters.bytes_sent += sent as u64;
                            counters.messages_sent += 1;
                            counters.transactions += 1;
                        }
                        Err(err) if err.raw_os_error() == Some(libc::ENOBUFS) => {}
                        Err(err) => return Err(io_error("send")(err)),
                    }
                }
                last_datagram = Instant::now();
                if last_datagram >= hard {
                    return Err(DataError::Overrun);
                }
            }
            Err(err) if is_timeout(&err) || err.kind() == io::ErrorKind::Interrupted => {
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
            Err(err) if err.raw_os_error() == Some(libc::ECONNREFUSED) => break,
            Err(err) => return Err(io_error("receive")(err)),
        }
    }
    let elapsed = last_datagram - start;
    complete_truth(&mut truth, &socket).map_err(io_error("reading the socket"))?;
    Ok(counters.report(spec.test, elapsed, truth))
}
