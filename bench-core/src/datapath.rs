//! The data phase of every test, for each end: the hot loops, the flows
//! and their common window, and the CPU measured over that window.
//!
//! Rules of the loops: buffers are allocated once before the loop; each
//! message is one system call; nothing is formatted or allocated per
//! message (a latency histogram is a counter increment); the end of the
//! test is a monotonic deadline compared with `Instant::now()` (a vDSO
//! read, no system call, no signal) after every message, so a test ends
//! within one message time of its deadline and the elapsed time is
//! measured, not assumed.
//!
//! Flows: each end opens every flow first (the client connects them all,
//! the server accepts them all), then all of an end's threads meet at a
//! start gate, which fixes one window for all of them: `warmup_s` of
//! traffic that is not counted, then `duration_s` that is. The client
//! spreads its flows over `threads` threads, each serving its flows in
//! turn; the server gives every flow a port of its own and a thread of
//! its own, except that the flows of a TCP_STREAM test pinned to one CPU
//! are received by one thread. The CPU of a host is read once, at the
//! start and the end of the counted part of the window, so service
//! demand covers all flows.
//!
//! Stream tests end when the sender reaches its deadline and shuts its
//! side down; the receiver counts until end of file. Request/response
//! tests are driven by the client; the server answers until end of file
//! (TCP) or until told to stop over the control connection (TCP_CRR and
//! UDP). Every server loop also has a hard deadline, so a client that
//! misbehaves costs bounded time. A flow that fails fails the whole
//! data phase.

use crate::cpu::{self, CpuError, CpuMark, Rusage};
use crate::latency::Histogram;
use crate::protocol::PortRange;
use crate::record::{EndReport, HostCpu, SocketTruth};
use crate::sockets::{
    self, PlainIo, PortCycle, complete_truth, is_timeout, new_socket, record_addresses,
    recv_nowait, truth_after_setup,
};
use crate::spec::{RunSpec, TestKind};
use crate::watchdog::{Fired, Nudge, Watchdog, current_thread};
use socket2::{SockRef, Socket, Type};
use std::collections::{BTreeMap, VecDeque};
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// How often a server loop waiting for data looks at its stop flag.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// How many empty polls a UDP_STREAM receiver makes before it sleeps in
/// a blocking receive. A receiver that sleeps whenever its queue runs dry
/// makes the sender wake it (a cross-CPU wake-up) every few datagrams,
/// which slows the sender below what the path can carry; polling a short
/// while (tens of microseconds) keeps the receiver awake between bursts.
const UDP_SPIN_POLLS: u32 = 256;

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
    /// Another flow failed before the start, so this one did not run.
    #[error("another flow failed before the start")]
    OtherFlowFailed,
    /// Not every flow was ready within the time allowed.
    #[error("not every flow was ready within {0:?}")]
    StartTimeout(Duration),
    /// One flow of several failed; the measurement is void.
    #[error("flow {flow} of {n_flows} failed: {source}")]
    Flow {
        /// The flow, counted from 1.
        flow: usize,
        /// Flows in the test.
        n_flows: usize,
        /// What went wrong.
        source: Box<DataError>,
    },
    /// CPU utilisation could not be measured.
    #[error(transparent)]
    Cpu(#[from] CpuError),
    /// A data thread could not be started or panicked.
    #[error("a data thread failed: {0}")]
    Thread(String),
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

/// Counters of one flow at one end, turned into an [`EndReport`] at the
/// end.
#[derive(Default)]
struct Counters {
    bytes_sent: u64,
    bytes_received: u64,
    messages_sent: u64,
    messages_received: u64,
    transactions: u64,
    timeouts: u64,
    /// Failed sends by errno name; an entry is made on a kind's first
    /// failure only, so the hot loop does not allocate.
    send_errors: BTreeMap<&'static str, u64>,
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
            send_errors: self
                .send_errors
                .into_iter()
                .map(|(name, count)| (name.to_string(), count))
                .collect(),
            socket,
            tcp_info: None,
        }
    }
}

/// Counts a failed UDP send that does not end the test: the kernel
/// dropped the datagram at the sender (`ENOBUFS`: a device queue was
/// full; `EAGAIN`: no send buffer within the timeout). netperf counts the
/// first in its "Errors" column and so do we, by errno. Any other error
/// is returned.
fn count_send_error(counters: &mut Counters, err: io::Error) -> Result<(), DataError> {
    let name = match err.raw_os_error() {
        Some(libc::ENOBUFS) => "ENOBUFS",
        Some(libc::EAGAIN) => "EAGAIN",
        _ if err.kind() == io::ErrorKind::Interrupted => return Ok(()),
        _ => return Err(io_error("send")(err)),
    };
    match counters.send_errors.get_mut(name) {
        Some(count) => *count += 1,
        None => {
            counters.send_errors.insert(name, 1);
        }
    }
    Ok(())
}

/// The monotonic clock (the one `Instant` reads), nanoseconds: read
/// once per transaction, so without `Instant`'s checked arithmetic.
#[inline]
fn clock_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec for the call to fill;
    // CLOCK_MONOTONIC exists on every Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    (now.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(now.tv_nsec as u64)
}

fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX / 2)
}

fn duration_of(spec: &RunSpec) -> Duration {
    Duration::from_secs_f64(spec.duration_s)
}

fn warmup_of(spec: &RunSpec) -> Duration {
    Duration::from_secs_f64(spec.warmup_s)
}

/// Reads exactly `buffer.len()` bytes. Returns false on end of file before
/// the first byte (a clean end between messages).
fn read_message(stream: &mut impl Read, buffer: &mut [u8]) -> Result<bool, DataError> {
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

/// [`read_message`] that gives up at `hard`, however the bytes trickle
/// in: a peer sending one byte per read timeout cannot hold the server.
fn read_message_by(
    stream: &mut TcpStream,
    buffer: &mut [u8],
    hard: Instant,
) -> Result<bool, DataError> {
    let mut filled = 0;
    while filled < buffer.len() {
        if Instant::now() >= hard {
            return Err(DataError::Overrun);
        }
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

/// Reads until the peer's end of file, giving up at `hard`.
fn drain_until_closed(stream: &mut TcpStream, hard: Instant) {
    let mut scratch = [0u8; 64];
    while Instant::now() < hard && matches!(stream.read(&mut scratch), Ok(got) if got > 0) {}
}

// ---------------------------------------------------------------- window

/// The common window of all flows of one end.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    /// When every flow was ready; traffic starts.
    pub start: Instant,
    /// End of the warm-up: counting starts.
    pub measure_start: Instant,
    /// Counting (and sending, for the driving side) ends.
    pub deadline: Instant,
}

impl Window {
    fn new(spec: &RunSpec, start: Instant) -> Window {
        let measure_start = start + warmup_of(spec);
        Window {
            start,
            measure_start,
            deadline: measure_start + duration_of(spec),
        }
    }
}

/// The start gate: every party arrives once its flows are open; the last
/// to arrive fixes the window. A party that fails tells the others, who
/// then give up instead of waiting.
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
    parties: usize,
}

#[derive(Default)]
struct GateState {
    arrived: usize,
    failed: bool,
    window: Option<Window>,
}

impl Gate {
    fn new(parties: usize) -> Gate {
        Gate {
            state: Mutex::new(GateState::default()),
            changed: Condvar::new(),
            parties,
        }
    }

    fn arrive(&self, spec: &RunSpec, wait: Duration) -> Result<Window, DataError> {
        let give_up = Instant::now() + wait;
        let mut state = self
            .state
            .lock()
            .map_err(|_| DataError::Thread("start gate poisoned".to_string()))?;
        state.arrived += 1;
        if state.arrived == self.parties {
            state.window = Some(Window::new(spec, Instant::now()));
            self.changed.notify_all();
        }
        loop {
            if state.failed {
                return Err(DataError::OtherFlowFailed);
            }
            if let Some(window) = state.window {
                return Ok(window);
            }
            let left = give_up.saturating_duration_since(Instant::now());
            if left.is_zero() {
                state.failed = true;
                self.changed.notify_all();
                return Err(DataError::StartTimeout(wait));
            }
            state = self
                .changed
                .wait_timeout(state, left)
                .map_err(|_| DataError::Thread("start gate poisoned".to_string()))?
                .0;
        }
    }

    fn fail(&self) {
        if let Ok(mut state) = self.state.lock() {
            state.failed = true;
            self.changed.notify_all();
        }
    }
}

/// Runs `body` for a party of `gate`; a failure before the party arrived
/// releases the others.
fn gated<T>(gate: &Gate, body: impl FnOnce() -> Result<T, DataError>) -> Result<T, DataError> {
    let result = body();
    if result.is_err() {
        gate.fail();
    }
    result
}

/// Counts of the current window of one client thread, for interim
/// reports; on a cache line of its own so that flows do not share one.
#[repr(align(64))]
#[derive(Default)]
pub struct Progress {
    bytes: AtomicU64,
    transactions: AtomicU64,
}

/// What the client has moved so far in the counted window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InterimFigures {
    /// Seconds since the counted window started.
    pub since_start_s: f64,
    /// Seconds this report covers.
    pub interval_s: f64,
    /// Throughput over the interval, bits per second (payload this end
    /// sent or received, whichever the test is about).
    pub throughput_bps: f64,
    /// Transactions per second over the interval (request/response tests).
    pub transaction_rate: Option<f64>,
}

/// Interim reports while a test runs (netperf's demo mode, `-D`).
#[derive(Clone, Copy)]
pub struct Interim<'a> {
    /// How often to report.
    pub every: Duration,
    /// Where reports go.
    pub report: &'a (dyn Fn(&InterimFigures) + Sync),
}

impl std::fmt::Debug for Interim<'_> {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("Interim")
            .field("every", &self.every)
            .finish_non_exhaustive()
    }
}

fn sleep_until(moment: Instant) {
    let left = moment.saturating_duration_since(Instant::now());
    if !left.is_zero() {
        std::thread::sleep(left);
    }
}

// ---------------------------------------------------------------- client

/// What the client needs to run its side of one iteration.
pub struct ClientPlan<'a> {
    /// The test.
    pub spec: &'a RunSpec,
    /// The server's data socket of each flow.
    pub servers: &'a [SocketAddr],
    /// Longest wait for any one socket operation.
    pub io_timeout: Duration,
    /// How long a UDP_RR request waits for its response before it counts
    /// as lost.
    pub udp_rr_timeout: Duration,
    /// Interim reports, if any.
    pub interim: Option<Interim<'a>>,
    /// The test's secret, the first bytes of every data connection.
    pub data_secret: &'a [u8],
}

/// The client's side of one iteration.
#[derive(Debug, Default)]
pub struct ClientSide {
    /// Every flow's counts, in the order of [`ClientPlan::servers`].
    pub flows: Vec<EndReport>,
    /// Every flow's transaction times (request/response tests).
    pub latency: Vec<Option<Histogram>>,
    /// The local host's CPU over the counted window (`-c`).
    pub cpu: Option<HostCpu>,
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

fn connect_tcp(
    plan: &ClientPlan<'_>,
    server: SocketAddr,
) -> Result<(TcpStream, SocketTruth), DataError> {
    connect_tcp_from(plan, server, None)
}

/// [`connect_tcp`] from `local_port` when given: bound with
/// `SO_REUSEADDR`, which takes over a TIME_WAIT socket of that port (see
/// [`PortCycle`]).
fn connect_tcp_from(
    plan: &ClientPlan<'_>,
    server: SocketAddr,
    local_port: Option<u16>,
) -> Result<(TcpStream, SocketTruth), DataError> {
    let spec = plan.spec;
    let socket = new_socket(server.ip(), Type::STREAM, spec.local_socket_buffer_bytes)
        .map_err(io_error("socket set-up"))?;
    if let Some(port) = local_port {
        socket
            .set_reuse_address(true)
            .map_err(io_error("SO_REUSEADDR"))?;
        socket
            .bind(&SocketAddr::new(unspecified(server.ip()), port).into())
            .map_err(io_error("bind"))?;
    }
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
    // TCP_RR receives without a timeout (a watchdog keeps its deadline):
    // a receive timeout costs a kernel timer per round trip.
    if spec.test != TestKind::TcpRr {
        socket
            .set_read_timeout(Some(plan.io_timeout))
            .map_err(io_error("SO_RCVTIMEO"))?;
    }
    socket
        .connect(&server.into())
        .map_err(io_error("connect"))?;
    let mut truth = truth;
    record_addresses(&mut truth, &socket, None).map_err(io_error("getsockname"))?;
    let mut stream = TcpStream::from(socket);
    // TCP_CRR sends the secret with each request, in one segment.
    if spec.test != TestKind::TcpCrr {
        stream
            .write_all(plan.data_secret)
            .map_err(io_error("send"))?;
    }
    Ok((stream, truth))
}

/// Ports of the range a TCP_CRR client tries in a row before it leaves
/// the choice of one connection's port to the kernel.
const CRR_PORT_TRIES: u32 = 64;

/// A TCP_CRR connection from the next free port of `ports`. A port that
/// cannot be bound (a listener or a socket without `SO_REUSEADDR` holds
/// it) or connected from (a connection to the same server that is not in
/// TIME_WAIT yet) is passed over; after `CRR_PORT_TRIES` of those, or
/// without a range, the kernel picks the port.
fn connect_crr(
    plan: &ClientPlan<'_>,
    server: SocketAddr,
    ports: Option<&mut PortCycle>,
) -> Result<(TcpStream, SocketTruth), DataError> {
    if let Some(ports) = ports {
        for _ in 0..ports.n_ports().min(CRR_PORT_TRIES) {
            match connect_tcp_from(plan, server, Some(ports.take())) {
                Err(DataError::Io { source, .. })
                    if matches!(
                        source.raw_os_error(),
                        Some(libc::EADDRINUSE | libc::EADDRNOTAVAIL)
                    ) => {}
                done => return done,
            }
        }
    }
    connect_tcp(plan, server)
}

/// Reads the buffers and `TCP_INFO` of a TCP socket at the end of a test.
fn finish_tcp(stream: &TcpStream, truth: &mut SocketTruth) -> Result<(), DataError> {
    complete_truth(truth, &SockRef::from(stream)).map_err(io_error("reading the socket"))
}

fn tcp_info_of(stream: &TcpStream) -> Option<crate::record::TcpInfoFigures> {
    sockets::tcp_info(&SockRef::from(stream)).ok()
}

fn unspecified(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
    }
}

fn connect_udp(
    plan: &ClientPlan<'_>,
    server: SocketAddr,
) -> Result<(UdpSocket, Socket, SocketTruth), DataError> {
    let spec = plan.spec;
    let socket = new_socket(server.ip(), Type::DGRAM, spec.local_socket_buffer_bytes)
        .map_err(io_error("socket set-up"))?;
    let truth = truth_after_setup(&socket, spec.local_socket_buffer_bytes)
        .map_err(io_error("reading the socket buffers"))?;
    socket
        .bind(&SocketAddr::new(unspecified(server.ip()), 0).into())
        .map_err(io_error("bind"))?;
    socket
        .connect(&server.into())
        .map_err(io_error("connect"))?;
    socket
        .set_write_timeout(Some(plan.io_timeout))
        .map_err(io_error("SO_SNDTIMEO"))?;
    if spec.test == TestKind::UdpStream {
        // Without IP_RECVERR Linux hides ENOBUFS from a UDP sender (the
        // datagram is dropped, send() succeeds and only the host-wide
        // SndbufErrors counter moves), so failed sends could not be
        // counted per test.
        sockets::set_recverr(&socket, server.ip()).map_err(io_error("IP_RECVERR"))?;
    }
    let peer = socket.peer_addr().ok().and_then(|addr| addr.as_socket());
    check_peer(server, peer)?;
    let mut truth = truth;
    record_addresses(&mut truth, &socket, None).map_err(io_error("getsockname"))?;
    let clone = socket.try_clone().map_err(io_error("dup"))?;
    // The flow opens with the secret, twice in case one is lost; the
    // server counts neither.
    for _ in 0..2 {
        socket.send(plan.data_secret).map_err(io_error("send"))?;
    }
    Ok((UdpSocket::from(socket), clone, truth))
}

/// The socket of one client flow.
enum Link {
    Tcp(TcpStream),
    Udp(UdpSocket, Socket),
    /// TCP_CRR: a connection per transaction; the last one is kept until
    /// the next opens, for its socket truth. The local ports come from
    /// the cycle, when the kernel's range could be read.
    PerTransaction(Option<TcpStream>, Option<PortCycle>),
}

/// One client flow: its socket, buffers and counts.
struct ClientFlow {
    server: SocketAddr,
    link: Link,
    truth: SocketTruth,
    send: Vec<u8>,
    /// TCP_CRR: the secret, then the request.
    opening: Vec<u8>,
    receive: Vec<u8>,
    counters: Counters,
    latency: Option<Histogram>,
    /// The peer has closed (TCP_MAERTS).
    finished: bool,
    elapsed: Duration,
    /// First burst (TCP_RR `-b`): transactions that may be outstanding
    /// now, growing by one per response up to `first_burst + 1`.
    window: u32,
    /// Requests sent and not yet answered.
    outstanding: u32,
    /// When each outstanding request was sent, oldest first (burst only;
    /// sized for the whole window up front, so it never allocates).
    sent_at: VecDeque<u64>,
    /// When the request the last step completed was sent (burst only).
    started: Option<u64>,
    /// The socket is nonblocking, driven by an epoll loop.
    polled: bool,
}

/// What one step of a flow did.
#[derive(PartialEq, Eq)]
enum Step {
    /// Moved data; a request/response step completed a transaction.
    Done,
    /// A UDP_RR request or response was lost.
    Lost,
    /// The peer closed (TCP_MAERTS): the flow is over.
    End,
    /// A nonblocking socket would block: nothing moved.
    Blocked,
}

impl ClientFlow {
    fn open(plan: &ClientPlan<'_>, server: SocketAddr) -> Result<ClientFlow, DataError> {
        let spec = plan.spec;
        let (send_size, receive_size) = match spec.test {
            TestKind::TcpStream | TestKind::UdpStream => (spec.send_size_bytes, 0),
            TestKind::TcpMaerts => (0, spec.recv_size_bytes),
            _ => (spec.request_size_bytes, spec.response_size_bytes),
        };
        let (link, truth) = match spec.test {
            TestKind::TcpStream | TestKind::TcpMaerts | TestKind::TcpRr => {
                let (stream, truth) = connect_tcp(plan, server)?;
                check_peer(server, stream.peer_addr().ok())?;
                (Link::Tcp(stream), truth)
            }
            TestKind::TcpCrr => {
                let ports =
                    sockets::ephemeral_ports().map(|range| PortCycle::new(range, clock_ns()));
                (Link::PerTransaction(None, ports), SocketTruth::default())
            }
            TestKind::UdpStream | TestKind::UdpRr => {
                let (udp, socket, truth) = connect_udp(plan, server)?;
                (Link::Udp(udp, socket), truth)
            }
        };
        let opening = if spec.test == TestKind::TcpCrr {
            let mut opening = plan.data_secret.to_vec();
            opening.resize(plan.data_secret.len() + send_size as usize, 0);
            opening
        } else {
            Vec::new()
        };
        Ok(ClientFlow {
            server,
            link,
            truth,
            opening,
            send: vec![0u8; send_size as usize],
            receive: vec![0u8; receive_size as usize],
            counters: Counters::default(),
            latency: spec.test.is_request_response().then(Histogram::new),
            finished: false,
            elapsed: Duration::ZERO,
            window: 1,
            outstanding: 0,
            sent_at: VecDeque::with_capacity(spec.first_burst as usize + 1),
            started: None,
            polled: false,
        })
    }

    /// One message (stream tests) or one transaction.
    #[inline]
    fn step(&mut self, plan: &ClientPlan<'_>) -> Result<Step, DataError> {
        let counters = &mut self.counters;
        match (&mut self.link, plan.spec.test) {
            (Link::Tcp(stream), TestKind::TcpStream) => match stream.write(&self.send) {
                Ok(0) => Err(DataError::PeerClosed),
                Ok(sent) => {
                    counters.bytes_sent += sent as u64;
                    counters.messages_sent += 1;
                    Ok(Step::Done)
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => Ok(Step::Done),
                Err(err) if self.polled && err.kind() == io::ErrorKind::WouldBlock => {
                    Ok(Step::Blocked)
                }
                Err(err) => Err(io_error("send")(err)),
            },
            (Link::Tcp(stream), TestKind::TcpMaerts) => match stream.read(&mut self.receive) {
                Ok(0) => Ok(Step::End),
                Ok(got) => {
                    counters.bytes_received += got as u64;
                    counters.messages_received += 1;
                    Ok(Step::Done)
                }
                Err(err) if err.kind() == io::ErrorKind::Interrupted => Ok(Step::Done),
                Err(err) if self.polled && err.kind() == io::ErrorKind::WouldBlock => {
                    Ok(Step::Blocked)
                }
                Err(err) => Err(io_error("receive")(err)),
            },
            (Link::Tcp(stream), _) if plan.spec.first_burst > 0 => {
                // netperf's first burst: fill the window, then take one
                // response, which opens the window by one more until it
                // holds the first request and the whole burst.
                while self.outstanding < self.window {
                    stream.write_all(&self.send).map_err(io_error("send"))?;
                    self.sent_at.push_back(clock_ns());
                    self.outstanding += 1;
                }
                if !read_message(stream, &mut self.receive)? {
                    return Err(DataError::PeerClosed);
                }
                self.outstanding -= 1;
                self.started = self.sent_at.pop_front();
                if self.window <= plan.spec.first_burst {
                    self.window += 1;
                }
                counters.transactions += 1;
                Ok(Step::Done)
            }
            (Link::Tcp(stream), _) => {
                let mut socket = PlainIo::of(stream);
                socket.write_all(&self.send).map_err(io_error("send"))?;
                if !read_message(&mut socket, &mut self.receive)? {
                    return Err(DataError::PeerClosed);
                }
                counters.transactions += 1;
                Ok(Step::Done)
            }
            (Link::PerTransaction(last, ports), _) => {
                // Close the previous connection before opening the next:
                // one connection per transaction, as in netperf.
                let first = last.is_none() && counters.transactions == 0;
                drop(last.take());
                let (mut stream, truth) = connect_crr(plan, self.server, ports.as_mut())?;
                if first {
                    check_peer(self.server, stream.peer_addr().ok())?;
                }
                stream.write_all(&self.opening).map_err(io_error("send"))?;
                if !read_message(&mut stream, &mut self.receive)? {
                    return Err(DataError::PeerClosed);
                }
                counters.transactions += 1;
                self.truth = truth;
                *last = Some(stream);
                Ok(Step::Done)
            }
            (Link::Udp(udp, _), TestKind::UdpStream) => {
                match udp.send(&self.send) {
                    Ok(sent) => {
                        counters.bytes_sent += sent as u64;
                        counters.messages_sent += 1;
                    }
                    // A full device queue drops the datagram at the sender;
                    // that is loss, counted, not failure.
                    Err(err) => count_send_error(counters, err)?,
                }
                Ok(Step::Done)
            }
            (Link::Udp(udp, _), _) => {
                // One request outstanding, or with a first burst the
                // window, which opens one request per response as on TCP.
                let burst = plan.spec.first_burst;
                while self.outstanding < self.window {
                    match PlainIo::of(udp).write(&self.send) {
                        Ok(sent) => {
                            counters.bytes_sent += sent as u64;
                            counters.messages_sent += 1;
                        }
                        Err(err) => count_send_error(counters, err)?,
                    }
                    if burst > 0 {
                        self.sent_at.push_back(clock_ns());
                    }
                    self.outstanding += 1;
                }
                let received = PlainIo::of(udp).read(&mut self.receive);
                // Answered or given up, the oldest request is no longer
                // outstanding.
                self.outstanding -= 1;
                let oldest = if burst > 0 {
                    self.sent_at.pop_front()
                } else {
                    None
                };
                match received {
                    Ok(got) => {
                        counters.bytes_received += got as u64;
                        counters.messages_received += 1;
                        counters.transactions += 1;
                        self.started = oldest;
                        if self.window <= burst {
                            self.window += 1;
                        }
                        Ok(Step::Done)
                    }
                    // A lost request or response: count it and go on. A
                    // late response will then answer the next request,
                    // which keeps the count of transactions right. The
                    // receive has no timeout: the watchdog interrupts it
                    // when nothing has moved for the loss timeout.
                    Err(err) if is_timeout(&err) || err.kind() == io::ErrorKind::Interrupted => {
                        counters.timeouts += 1;
                        Ok(Step::Lost)
                    }
                    Err(err) => Err(io_error("receive")(err)),
                }
            }
        }
    }

    /// Forgets what the warm-up counted.
    fn start_counting(&mut self) {
        self.counters = Counters::default();
        if let Some(histogram) = &mut self.latency {
            histogram.clear();
        }
    }

    fn bytes_moved(&self) -> u64 {
        self.counters.bytes_sent + self.counters.bytes_received
    }

    /// Ends the flow after the window and reports it.
    fn finish(mut self, test: TestKind) -> Result<(EndReport, Option<Histogram>), DataError> {
        let mut tcp_info = None;
        match &mut self.link {
            Link::Tcp(stream) => {
                // Responses to a burst's requests still in flight are
                // taken, not counted, so that the server can answer all
                // it was asked before the connection closes.
                for _ in 0..self.outstanding {
                    if !read_message(stream, &mut self.receive)? {
                        return Err(DataError::PeerClosed);
                    }
                }
                if test != TestKind::TcpMaerts {
                    stream
                        .shutdown(Shutdown::Write)
                        .map_err(io_error("shutdown"))?;
                }
                tcp_info = tcp_info_of(stream);
                finish_tcp(stream, &mut self.truth)?;
            }
            Link::Udp(_, socket) => {
                complete_truth(&mut self.truth, socket).map_err(io_error("reading the socket"))?;
            }
            Link::PerTransaction(Some(stream), _) => finish_tcp(stream, &mut self.truth)?,
            Link::PerTransaction(None, _) => {}
        }
        if test.is_request_response() {
            let transactions = self.counters.transactions;
            self.counters.messages_sent = self.counters.messages_sent.max(transactions);
            self.counters.messages_received = self.counters.messages_received.max(transactions);
            if test != TestKind::UdpRr {
                self.counters.bytes_sent = transactions * self.send.len() as u64;
                self.counters.bytes_received = transactions * self.receive.len() as u64;
            }
        }
        let mut report = self.counters.report(test, self.elapsed, self.truth);
        report.tcp_info = tcp_info;
        Ok((report, self.latency))
    }
}

/// Passes over the ready flows per wait for readiness: each pass steps
/// every flow that can still move data once.
const POLL_PASSES: u32 = 16;

/// The epoll set of one thread's TCP stream flows, whose sockets it makes
/// nonblocking: a thread driving several flows sends on whichever can
/// take data instead of blocking on one while the others could.
///
/// The ready flows take turns, one message each per pass, as iperf3's
/// streams do. A flow served until its socket would block instead
/// (megabytes, with an autotuned send buffer) has its peer's ACKs
/// arrive while the sender holds its socket, so they queue to the
/// socket's backlog and are processed on the sender's CPU, the one that
/// limits a loopback test; in turn, each flow's ACKs find its socket
/// free and are processed where they are sent, by the receiver.
struct Poller {
    epoll: Epoll,
    /// The flows of the current turn (allocated once).
    turn: Vec<usize>,
}

impl Poller {
    fn new(flows: &mut [ClientFlow]) -> Result<Poller, DataError> {
        let epoll = Epoll::new(flows.len())?;
        for (idx, flow) in flows.iter_mut().enumerate() {
            let Link::Tcp(stream) = &flow.link else {
                continue;
            };
            let interest = if flow.send.is_empty() {
                libc::EPOLLIN
            } else {
                libc::EPOLLOUT
            };
            epoll.add(stream, interest, idx)?;
            flow.polled = true;
        }
        Ok(Poller {
            epoll,
            turn: Vec::with_capacity(flows.len()),
        })
    }

    /// Waits up to `timeout_ms` for flows to be ready, then steps them in
    /// turn for up to `POLL_PASSES` passes; a flow leaves the turn when
    /// its socket would block or its peer has closed, and is then given
    /// to `ended`. A flow's error is given to `failed` with its index.
    fn serve(
        &mut self,
        flows: &mut [ClientFlow],
        plan: &ClientPlan<'_>,
        timeout_ms: i32,
        failed: &dyn Fn(usize, DataError) -> DataError,
        ended: &mut dyn FnMut(usize, &mut ClientFlow) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        let n_ready = self.epoll.wait(timeout_ms)?;
        self.turn.clear();
        for k in 0..n_ready {
            let idx = self.epoll.ready(k);
            if !flows[idx].finished {
                self.turn.push(idx);
            }
        }
        for _ in 0..POLL_PASSES {
            let mut k = 0;
            while let Some(&idx) = self.turn.get(k) {
                let flow = &mut flows[idx];
                match flow.step(plan).map_err(|err| failed(idx, err))? {
                    Step::Done | Step::Lost => k += 1,
                    Step::Blocked => {
                        self.turn.swap_remove(k);
                    }
                    Step::End => {
                        self.turn.swap_remove(k);
                        if let Link::Tcp(stream) = &flow.link {
                            self.epoll.remove(stream);
                        }
                        ended(idx, flow)?;
                    }
                }
            }
            if self.turn.is_empty() {
                break;
            }
        }
        Ok(())
    }
}

/// An epoll set of TCP sockets, each known by an index; the sockets
/// added are made nonblocking. Level-triggered: a socket that can still
/// move data is reported again by the next wait.
struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// A set for up to `capacity` sockets.
    fn new(capacity: usize) -> Result<Epoll, DataError> {
        // SAFETY: a plain system call; the descriptor returned is owned
        // by nobody else.
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(io_error("epoll_create1")(io::Error::last_os_error()));
        }
        // SAFETY: `raw` is a new, open descriptor that only this owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Epoll {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; capacity.max(1)],
        })
    }

    /// Watches `stream` for `interest` (`EPOLLIN` or `EPOLLOUT`) as
    /// socket `idx`.
    fn add(&self, stream: &TcpStream, interest: i32, idx: usize) -> Result<(), DataError> {
        stream
            .set_nonblocking(true)
            .map_err(io_error("setting O_NONBLOCK"))?;
        let mut event = libc::epoll_event {
            events: interest as u32,
            u64: idx as u64,
        };
        // SAFETY: both descriptors are open; `event` is valid.
        let done = unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_ADD,
                stream.as_raw_fd(),
                &mut event,
            )
        };
        if done < 0 {
            return Err(io_error("epoll_ctl")(io::Error::last_os_error()));
        }
        Ok(())
    }

    /// Waits up to `timeout_ms` for sockets to be ready; their indices
    /// are then `self.ready(0..n)`.
    fn wait(&mut self, timeout_ms: i32) -> Result<usize, DataError> {
        // SAFETY: `events` has room for the count passed.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as i32,
                timeout_ms,
            )
        };
        if n < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(io_error("epoll_wait")(err));
        }
        Ok(n as usize)
    }

    fn ready(&self, k: usize) -> usize {
        let data = self.events[k].u64;
        data as usize
    }

    /// Stops watching a socket whose peer has closed.
    fn remove(&self, stream: &TcpStream) {
        // SAFETY: both descriptors are open. A failure leaves the socket
        // watched; its owner marks it finished and skips it anyway.
        unsafe {
            libc::epoll_ctl(
                self.fd.as_raw_fd(),
                libc::EPOLL_CTL_DEL,
                stream.as_raw_fd(),
                std::ptr::null_mut(),
            )
        };
    }
}

/// Milliseconds to wait for readiness before looking at the clock again.
fn poll_timeout_ms(now_ns: u64, until_ns: u64) -> i32 {
    (until_ns.saturating_sub(now_ns) / 1_000_000).clamp(1, 100) as i32
}

/// A pinned TCP_STREAM sender thread gives up its CPU to the other
/// flows' threads after about this many bytes.
const TURN_BYTES: u64 = 64 * 1024;

/// Turns of the client threads of a TCP_STREAM test pinned to one CPU,
/// a flow each (`--flows` without `--threads`). A sender blocks only
/// when its socket buffer is full, which with an autotuned buffer
/// (megabytes) is rare on loopback: without turns, one thread sends
/// while the others wait for the scheduler's tick, or forever under
/// SCHED_FIFO, with the cost told at [`Poller`] and flows that get
/// very unequal shares. Yielding every `TURN_BYTES` makes the threads
/// take turns message by message, as one thread's polled flows do.
struct Turns {
    take: bool,
    /// Bytes moved by the thread at its last turn.
    last: u64,
}

impl Turns {
    /// `shared`: other threads carry other flows of the test.
    fn new(spec: &RunSpec, shared: bool) -> Turns {
        Turns {
            take: shared && spec.test == TestKind::TcpStream && spec.cpu_pinning.local.is_some(),
            last: 0,
        }
    }

    /// Called after each round of steps with the bytes the thread's
    /// flows have moved so far.
    #[inline]
    fn after(&mut self, moved: u64) {
        if self.take && moved.wrapping_sub(self.last) >= TURN_BYTES {
            self.last = moved;
            std::thread::yield_now();
        }
    }

    /// The counts start again from zero.
    fn restart(&mut self) {
        self.last = 0;
    }
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
    let mut flows = gated(gate, || {
        pin(spec.cpu_pinning.local)?;
        flow_indices
            .iter()
            .map(|&flow_idx| ClientFlow::open(plan, plan.servers[flow_idx]))
            .collect::<Result<Vec<_>, _>>()
    })?;
    let window = gate.arrive(spec, plan.io_timeout)?;
    let hard = window.deadline + plan.io_timeout;
    // TCP_RR and UDP_RR receive without a timeout: the watchdog ends
    // them at the hard deadline, and wakes a UDP_RR receive that waits
    // for a lost datagram (which then counts as lost).
    let watchdog = if matches!(spec.test, TestKind::TcpRr | TestKind::UdpRr) {
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
        Some(watchdog.map_err(io_error("starting the watchdog"))?)
    } else {
        None
    };
    // An end of file or error once the watchdog has shut the sockets
    // down means the test ran past its hard deadline.
    let overrun = |err: DataError| match &watchdog {
        Some(watchdog) if watchdog.overran() => DataError::Overrun,
        _ => err,
    };
    let maerts = spec.test == TestKind::TcpMaerts;
    let n_flows = plan.servers.len();
    // A failure in a thread of several flows names its own flow.
    let failed = |idx: usize, err| flow_error(Some(flow_indices[idx]), n_flows, err);
    let mut poller =
        if flows.len() > 1 && matches!(spec.test, TestKind::TcpStream | TestKind::TcpMaerts) {
            Some(Poller::new(&mut flows)?)
        } else {
            None
        };

    // Warm-up: traffic, not counted.
    if let Some(poller) = &mut poller {
        let mut now_ns = clock_ns();
        let until_ns = now_ns
            + nanos(
                window
                    .measure_start
                    .saturating_duration_since(Instant::now()),
            );
        while now_ns < until_ns {
            poller.serve(
                &mut flows,
                plan,
                poll_timeout_ms(now_ns, until_ns),
                &failed,
                &mut |idx, _| Err(failed(idx, DataError::PeerClosed)),
            )?;
            now_ns = clock_ns();
        }
    }
    let mut turns = Turns::new(spec, flow_indices.len() < n_flows);
    let mut now = Instant::now();
    while poller.is_none() && now < window.measure_start {
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
    turns.restart();
    for flow in &mut flows {
        flow.start_counting();
    }
    let usage_start = Rusage::thread()?;
    let counting_start = Instant::now();
    // The loop keeps time in nanoseconds of the same clock: one read per
    // step, plain integer arithmetic after it.
    let start_ns = clock_ns();
    let deadline_ns = start_ns + nanos(window.deadline.saturating_duration_since(counting_start));
    let hard_ns = start_ns + nanos(hard.saturating_duration_since(counting_start));
    let mut now_ns = start_ns;
    let mut n_open = flows.len();
    while let Some(poller) = &mut poller {
        let until_ns = if maerts { hard_ns } else { deadline_ns };
        poller.serve(
            &mut flows,
            plan,
            poll_timeout_ms(now_ns, until_ns),
            &failed,
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
        if maerts {
            if n_open == 0 {
                break;
            }
            if now_ns >= hard_ns {
                return Err(DataError::Overrun);
            }
        } else if now_ns >= deadline_ns {
            break;
        }
    }
    while poller.is_none() {
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
        if maerts {
            // The receiver counts until every sender has closed.
            if n_open == 0 {
                break;
            }
            if now_ns >= hard_ns {
                return Err(DataError::Overrun);
            }
        } else if now_ns >= deadline_ns {
            break;
        }
    }
    let usage = Rusage::thread()?.since(&usage_start);
    let elapsed = counting_start.elapsed();
    let mut reports = Vec::with_capacity(flows.len());
    for (flow_idx, mut flow) in flow_indices.iter().copied().zip(flows) {
        if !maerts {
            flow.elapsed = elapsed;
        }
        let (report, histogram) = flow.finish(spec.test).map_err(overrun)?;
        reports.push((flow_idx, report, histogram));
    }
    Ok((reports, usage))
}

/// Runs the client's side of one iteration: every flow, over threads.
pub fn run_client(plan: &ClientPlan<'_>) -> Result<ClientSide, DataError> {
    let spec = plan.spec;
    let n_flows = plan.servers.len().max(1);
    let n_threads = spec
        .threads
        .map_or(n_flows, |threads| threads as usize)
        .clamp(1, n_flows);
    let assignment: Vec<Vec<usize>> = (0..n_threads)
        .map(|thread_idx| {
            (thread_idx..plan.servers.len())
                .step_by(n_threads)
                .collect()
        })
        .collect();
    let n_cpus = if spec.local_cpu {
        Some(cpu::n_cpus()?)
    } else {
        None
    };
    let gate = Gate::new(n_threads + 1);
    let progress: Vec<Progress> = (0..n_threads).map(|_| Progress::default()).collect();
    let (coordinated, outcomes) = std::thread::scope(|scope| {
        let handles: Vec<_> = assignment
            .iter()
            .zip(&progress)
            .map(|(flow_indices, progress)| {
                let gate = &gate;
                scope.spawn(move || client_thread(plan, flow_indices, gate, progress))
            })
            .collect();
        let coordinated = gated(&gate, || coordinate_client(plan, &gate, &progress));
        let outcomes: Vec<Result<ThreadOutcome, DataError>> = handles
            .into_iter()
            .map(|handle| {
                handle
                    .join()
                    .unwrap_or_else(|_| Err(DataError::Thread("a client flow panicked".into())))
            })
            .collect();
        (coordinated, outcomes)
    });
    let mut flows: Vec<Option<(EndReport, Option<Histogram>)>> =
        (0..plan.servers.len()).map(|_| None).collect();
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

fn flow_error(flow_idx: Option<usize>, n_flows: usize, source: DataError) -> DataError {
    if matches!(source, DataError::Flow { .. }) {
        return source;
    }
    match flow_idx {
        Some(flow_idx) if n_flows > 1 => DataError::Flow {
            flow: flow_idx + 1,
            n_flows,
            source: Box::new(source),
        },
        _ => source,
    }
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
                transaction_rate: spec
                    .test
                    .is_request_response()
                    .then(|| transactions.saturating_sub(last_transactions) as f64 / interval_s),
            });
            (last_at, last_bytes, last_transactions) = (now, bytes, transactions);
            next += every;
        }
    }
    sleep_until(window.deadline);
    Ok(match mark {
        Some(mark) => Some(mark.stop()?),
        None => None,
    })
}

// ---------------------------------------------------------------- server

/// A server data socket, bound before `ready` is sent.
pub struct Prepared {
    socket: Socket,
    truth: SocketTruth,
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

/// The server's side of one iteration.
#[derive(Debug, Default)]
pub struct ServerSide {
    /// Every flow's counts, in the order of the prepared sockets.
    pub flows: Vec<EndReport>,
    /// The server host's CPU over the counted window (`-C`).
    pub cpu: Option<HostCpu>,
}

/// Counting on the server: everything before the window's counted part
/// is forgotten when it starts.
struct Meter {
    measure_start: Instant,
    counting_since: Option<Instant>,
    usage_start: Rusage,
    counters: Counters,
    /// Messages since the clock was last read (counting only).
    unclocked: u32,
}

/// Once counting, the server reads the clock every this many
/// transactions: only the hard deadline needs it, and a clock read per
/// transaction costs a measurable part of a loopback round trip.
const CLOCK_EVERY: u32 = 16;

impl Meter {
    /// Without a warm-up, counting starts at once and nothing is
    /// forgotten.
    fn new(window: &Window) -> Meter {
        let counting_since =
            (window.measure_start <= window.start).then(|| window.start.min(Instant::now()));
        Meter {
            measure_start: window.measure_start,
            counting_since,
            usage_start: Rusage::thread().unwrap_or_default(),
            counters: Counters::default(),
            unclocked: 0,
        }
    }

    /// Whether to read the clock after this message: always in the
    /// warm-up, whose end must be seen at once; then every
    /// `CLOCK_EVERY` messages.
    #[inline]
    fn clock_due(&mut self) -> bool {
        if self.counting_since.is_none() {
            return true;
        }
        self.unclocked += 1;
        if self.unclocked < CLOCK_EVERY {
            return false;
        }
        self.unclocked = 0;
        true
    }

    /// Called after every message with the time read after it.
    #[inline]
    fn tick(&mut self, now: Instant) {
        if self.counting_since.is_none() && now >= self.measure_start {
            self.counters = Counters::default();
            self.counting_since = Some(now);
            self.usage_start = Rusage::thread().unwrap_or_default();
        }
    }

    /// The counts, the counted time up to `end`, and the thread's CPU time
    /// since counting started.
    fn finish(self, end: Instant) -> (Counters, Duration, Rusage) {
        match self.counting_since {
            Some(since) => {
                let usage = Rusage::thread()
                    .map(|now| now.since(&self.usage_start))
                    .unwrap_or_default();
                (self.counters, end.saturating_duration_since(since), usage)
            }
            None => (Counters::default(), Duration::ZERO, Rusage::default()),
        }
    }
}

fn hard_deadline(window: &Window, io_timeout: Duration) -> Instant {
    window.deadline + io_timeout
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
        return match server_tcp_stream_polled(plan, party, gate) {
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
        TestKind::TcpStream => server_tcp_stream(plan, prepared, gate),
        TestKind::TcpMaerts => server_tcp_maerts(plan, prepared, gate),
        TestKind::TcpRr => server_tcp_rr(plan, prepared, gate),
        TestKind::TcpCrr => server_tcp_crr(plan, prepared, gate),
        TestKind::UdpStream | TestKind::UdpRr => server_udp(plan, prepared, gate),
    }
}

/// Waits for a data connection from the client. Connections from other
/// addresses, or that do not open with the test's secret, are closed and
/// ignored.
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
fn accept_first(
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

fn server_tcp_stream(
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
/// before it sleeps. As for UDP_STREAM ([`UDP_SPIN_POLLS`]), a receiver
/// that sleeps whenever its queues run dry has the sender wake it for
/// nearly every message it sends, and on loopback the sender's CPU is
/// the one that limits the test; polling a short while (tens of
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
fn server_tcp_stream_polled(
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
        epoll.add(stream, libc::EPOLLIN, idx)?;
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

fn server_tcp_maerts(
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

fn server_tcp_rr(
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

fn server_tcp_crr(
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

fn server_udp(
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
            Err(err) if err.raw_os_error() == Some(libc::ECONNREFUSED) => break,
            Err(err) => return Err(io_error("receive")(err)),
        }
    }
    let (counters, elapsed, usage) = meter.finish(last_datagram);
    complete_truth(&mut truth, &socket).map_err(io_error("reading the socket"))?;
    Ok((counters.report(spec.test, elapsed, truth), usage))
}
