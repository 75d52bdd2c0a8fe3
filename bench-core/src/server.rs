//! `netbisect serve`: the remote end of every test (netserver's role).
//!
//! One thread per control connection; each client is served on its own,
//! so a client that stalls, babbles or vanishes costs only its own thread
//! until its timeout. Every request is checked against the limits of
//! [`RunSpec::validate`] and a bad one is answered with an `error` frame,
//! after which the session goes on. A server listening beyond loopback
//! (including the wildcard address) demands the pre-shared token unless
//! it was explicitly told not to.
//!
//! Nothing a client does holds the server for long:
//!
//! - Before a client has said hello (and proved the token, when one is
//!   demanded) it is "unauthenticated": it has [`ServerConfig::pre_auth_timeout`]
//!   for the whole handshake, at most [`ServerConfig::max_pre_auth_per_ip`]
//!   such connections per source address (more wait, without a thread,
//!   until one is done, and are refused after four handshake times), and at
//!   most [`ServerConfig::max_pre_auth`] in all; when they are full, the
//!   oldest connection that has had a quarter of its handshake time, of
//!   the address holding the most, is closed to make room (a newcomer
//!   waits while all are younger).
//!   The [`ServerConfig::max_clients`] slots count authenticated sessions
//!   only, so a flood of hello-only connections never takes them.
//! - Every wait of a test has a deadline: the data connections must come
//!   within the I/O timeout, a data connection that trickles is dropped at
//!   the test's end plus the I/O timeout, and once the server's side of a
//!   test is over the client has the control timeout to say `finished`.
//! - The message buffers a test needs are counted before anything is
//!   allocated, against [`ServerConfig::max_test_memory`] per test and
//!   [`ServerConfig::max_total_memory`] for all tests at once; beyond, the
//!   request gets an `error` frame.
//! - A thread that cannot be started (a process or cgroup limit) is an
//!   `error` frame naming the limit, never a panic.

use crate::auth::{self, Token};
use crate::datapath::{self, ServerPlan};
use crate::env::HostEnv;
use crate::protocol::{
    Frame, PROTOCOL_NAME, PROTOCOL_VERSION, PortRange, ProtocolError, read_frame_within,
    write_frame,
};
use crate::sockets::{self, is_timeout};
use crate::spec::{AddressFamily, RunSpec};
use socket2::{Socket, Type};
use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the accept loop looks at its stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(100);

/// How a server runs.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address of the control listener.
    pub listen: SocketAddr,
    /// Pre-shared token clients must prove they hold.
    pub token: Option<Token>,
    /// Serve without a token beyond loopback.
    pub no_auth: bool,
    /// Ports for data sockets when the client names none.
    pub data_ports: Option<PortRange>,
    /// Most clients served at once.
    pub max_clients: usize,
    /// Longest wait for a control frame between tests.
    pub control_timeout: Duration,
    /// Longest wait for any one data operation, and slack past a test's
    /// length before the server gives up on it.
    pub io_timeout: Duration,
    /// Longest time from connect to the end of the handshake (hello and,
    /// with a token, auth).
    pub pre_auth_timeout: Duration,
    /// Most connections still in their handshake, in all.
    pub max_pre_auth: usize,
    /// Most connections still in their handshake from one address.
    pub max_pre_auth_per_ip: usize,
    /// Most bytes of message buffers one test may ask for.
    pub max_test_memory: u64,
    /// Most bytes of message buffers all tests together may hold.
    pub max_total_memory: u64,
}

/// Default for [`ServerConfig::max_clients`].
pub const DEFAULT_MAX_CLIENTS: usize = 64;
/// Default for [`ServerConfig::control_timeout`].
pub const DEFAULT_CONTROL_TIMEOUT: Duration = Duration::from_secs(30);
/// Default for [`ServerConfig::io_timeout`].
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`ServerConfig::pre_auth_timeout`].
pub const DEFAULT_PRE_AUTH_TIMEOUT: Duration = Duration::from_secs(5);
/// Default for [`ServerConfig::max_pre_auth`].
pub const DEFAULT_MAX_PRE_AUTH: usize = 16;
/// Default for [`ServerConfig::max_pre_auth_per_ip`].
pub const DEFAULT_MAX_PRE_AUTH_PER_IP: usize = 4;
/// Default for [`ServerConfig::max_test_memory`]: 256 MiB.
pub const DEFAULT_MAX_TEST_MEMORY: u64 = 256 << 20;
/// Default for [`ServerConfig::max_total_memory`]: 1 GiB.
pub const DEFAULT_MAX_TOTAL_MEMORY: u64 = 1 << 30;

impl ServerConfig {
    /// A server on `listen` with default limits and no token.
    pub fn new(listen: SocketAddr) -> ServerConfig {
        ServerConfig {
            listen,
            token: None,
            no_auth: false,
            data_ports: None,
            max_clients: DEFAULT_MAX_CLIENTS,
            control_timeout: DEFAULT_CONTROL_TIMEOUT,
            io_timeout: DEFAULT_IO_TIMEOUT,
            pre_auth_timeout: DEFAULT_PRE_AUTH_TIMEOUT,
            max_pre_auth: DEFAULT_MAX_PRE_AUTH,
            max_pre_auth_per_ip: DEFAULT_MAX_PRE_AUTH_PER_IP,
            max_test_memory: DEFAULT_MAX_TEST_MEMORY,
            max_total_memory: DEFAULT_MAX_TOTAL_MEMORY,
        }
    }

    /// A server on the loopback address of `family`, on any free port.
    pub fn loopback(family: AddressFamily) -> ServerConfig {
        let ip = match family {
            AddressFamily::Ipv4 => IpAddr::V4(Ipv4Addr::LOCALHOST),
            AddressFamily::Ipv6 => IpAddr::V6(Ipv6Addr::LOCALHOST),
        };
        ServerConfig::new(SocketAddr::new(ip, 0))
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The listener could not be set up.
    #[error("cannot listen on {address}: {source}")]
    Listen {
        /// The address.
        address: SocketAddr,
        /// What the kernel said.
        source: std::io::Error,
    },
    /// Beyond loopback without a token or an explicit `--no-auth`.
    #[error(
        "listening on {0} reaches beyond loopback: give a token file, or --no-auth to serve anyone"
    )]
    TokenRequired(SocketAddr),
    /// The accept thread could not be started.
    #[error("cannot start the server thread: {0}")]
    Thread(std::io::Error),
}

/// Something the server did, for its log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerEvent {
    /// The listener is up.
    Listening(SocketAddr),
    /// A client connected.
    Connected(SocketAddr),
    /// A client was refused: bad or missing token, wrong version, busy.
    Refused {
        /// The client.
        peer: SocketAddr,
        /// Why.
        reason: String,
    },
    /// A request was answered with an error frame; the session went on.
    Rejected {
        /// The client.
        peer: SocketAddr,
        /// The error sent.
        message: String,
    },
    /// A test iteration's data phase is about to start.
    Started {
        /// The client.
        peer: SocketAddr,
        /// The test's name.
        test: &'static str,
    },
    /// A test iteration completed.
    Tested {
        /// The client.
        peer: SocketAddr,
        /// The test's name.
        test: &'static str,
    },
    /// The session ended cleanly.
    Closed(SocketAddr),
    /// The session was dropped.
    Dropped {
        /// The client.
        peer: SocketAddr,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for ServerEvent {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerEvent::Listening(address) => write!(formatter, "listening on {address}"),
            ServerEvent::Connected(peer) => write!(formatter, "{peer}: connected"),
            ServerEvent::Refused { peer, reason } => write!(formatter, "{peer}: refused: {reason}"),
            ServerEvent::Rejected { peer, message } => {
                write!(formatter, "{peer}: request rejected: {message}")
            }
            ServerEvent::Started { peer, test } => write!(formatter, "{peer}: {test} started"),
            ServerEvent::Tested { peer, test } => write!(formatter, "{peer}: {test} done"),
            ServerEvent::Closed(peer) => write!(formatter, "{peer}: closed"),
            ServerEvent::Dropped { peer, reason } => write!(formatter, "{peer}: dropped: {reason}"),
        }
    }
}

/// Where server events go.
pub type EventSink = Arc<dyn Fn(&ServerEvent) + Send + Sync>;

/// An event sink that discards everything.
pub fn quiet() -> EventSink {
    Arc::new(|_: &ServerEvent| {})
}

struct Shared {
    config: ServerConfig,
    events: EventSink,
    /// Authenticated sessions.
    active: AtomicUsize,
    /// Connections still in their handshake, oldest first.
    pre_auth: Mutex<Vec<PreAuth>>,
    /// Id of the next connection.
    next_id: AtomicU64,
    /// Bytes of message buffers reserved by tests running now.
    memory_in_use: AtomicU64,
}

/// A connection in its handshake; the stream is a handle to close it by.
struct PreAuth {
    id: u64,
    ip: IpAddr,
    stream: TcpStream,
    since: Instant,
}

/// A message that names the thread limit, for a thread that could not be
/// started.
fn thread_error(what: &str, err: &std::io::Error) -> String {
    format!(
        "cannot start a thread for {what}: {err} (the process or cgroup thread limit, \
         ulimit -u or pids.max, is reached)"
    )
}

/// A bound server, not yet serving.
pub struct Server {
    listener: Socket,
    address: SocketAddr,
    shared: Arc<Shared>,
}

/// True when a listener on `ip` can be reached from other hosts.
pub fn is_beyond_loopback(ip: IpAddr) -> bool {
    !ip.is_loopback()
}

impl Server {
    /// Binds the control listener. Refuses to listen beyond loopback
    /// without a token, unless `no_auth` is set.
    pub fn bind(config: ServerConfig, events: EventSink) -> Result<Server, ServerError> {
        let address = config.listen;
        if is_beyond_loopback(address.ip()) && config.token.is_none() && !config.no_auth {
            return Err(ServerError::TokenRequired(address));
        }
        let listen = |source| ServerError::Listen { address, source };
        let listener = sockets::new_socket(address.ip(), Type::STREAM, None).map_err(listen)?;
        listener.set_reuse_address(true).map_err(listen)?;
        listener.bind(&address.into()).map_err(listen)?;
        listener.listen(128).map_err(listen)?;
        listener
            .set_read_timeout(Some(ACCEPT_POLL))
            .map_err(listen)?;
        let address = sockets::address_of(&listener.local_addr().map_err(listen)?);
        Ok(Server {
            listener,
            address,
            shared: Arc::new(Shared {
                config,
                events,
                active: AtomicUsize::new(0),
                pre_auth: Mutex::new(Vec::new()),
                next_id: AtomicU64::new(0),
                memory_in_use: AtomicU64::new(0),
            }),
        })
    }

    /// The address the server listens on (with the port the kernel chose).
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Serves clients until `stop` is set.
    pub fn serve(&self, stop: &AtomicBool) {
        (self.shared.events)(&ServerEvent::Listening(self.address));
        // Connections from an address whose handshake places are taken
        // wait here, without a thread, until one is free.
        let mut waiting: VecDeque<Waiting> = VecDeque::new();
        while !stop.load(Ordering::Relaxed) {
            let accepted = match self.listener.accept() {
                Ok((socket, peer)) => peer.as_socket().map(|peer| (TcpStream::from(socket), peer)),
                Err(err) if is_timeout(&err) || err.kind() == std::io::ErrorKind::Interrupted => {
                    None
                }
                Err(_) => {
                    // Out of descriptors or memory: wait rather than spin.
                    std::thread::sleep(ACCEPT_POLL);
                    None
                }
            };
            self.retry_waiting(&mut waiting);
            if let Some((stream, peer)) = accepted {
                (self.shared.events)(&ServerEvent::Connected(peer));
                let entry = Waiting {
                    stream,
                    peer,
                    since: Instant::now(),
                };
                if let Some(deferred) = self.start_session(entry) {
                    self.defer(&mut waiting, deferred);
                }
            }
        }
    }

    /// Starts the sessions of waiting connections whose address has a
    /// free handshake place; refuses those that waited too long.
    fn retry_waiting(&self, waiting: &mut VecDeque<Waiting>) {
        for _ in 0..waiting.len() {
            let Some(entry) = waiting.pop_front() else {
                break;
            };
            // A connection waits for a place of its address at most four
            // handshake times (at least 2 s): long enough for clients of
            // one host started together, short enough to bound a flood.
            let longest_wait =
                (self.shared.config.pre_auth_timeout * 4).max(Duration::from_secs(2));
            if entry.since.elapsed() >= longest_wait {
                let reason = format!(
                    "busy: too many connections from {} in their handshake",
                    entry.peer.ip()
                );
                refuse(&self.shared, entry.stream, entry.peer, reason);
                continue;
            }
            if let Some(deferred) = self.start_session(entry) {
                waiting.push_back(deferred);
            }
        }
    }

    /// Queues a connection to wait; when the queue is full, the oldest
    /// connection of the address with the most waiting is refused.
    fn defer(&self, waiting: &mut VecDeque<Waiting>, entry: Waiting) {
        let capacity = self.shared.config.max_pre_auth.max(1) * 4;
        waiting.push_back(entry);
        if waiting.len() > capacity {
            let mut counts: HashMap<IpAddr, usize> = HashMap::new();
            for entry in waiting.iter() {
                *counts.entry(entry.peer.ip()).or_default() += 1;
            }
            // The oldest of the address with the most waiting.
            let victim = waiting
                .iter()
                .enumerate()
                .max_by_key(|(position, entry)| (counts[&entry.peer.ip()], usize::MAX - position))
                .map(|(position, _)| position);
            if let Some(position) = victim
                && let Some(entry) = waiting.remove(position)
            {
                let reason = format!(
                    "busy: too many connections from {} in their handshake",
                    entry.peer.ip()
                );
                refuse(&self.shared, entry.stream, entry.peer, reason);
            }
        }
    }

    /// Starts a session for `entry`, or gives it back when its address
    /// has no free handshake place.
    fn start_session(&self, entry: Waiting) -> Option<Waiting> {
        let shared = Arc::clone(&self.shared);
        let events = &shared.events;
        let peer = entry.peer;
        let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
        match admit(&shared, id, peer.ip(), &entry.stream) {
            Admission::Admitted => {}
            Admission::Wait => return Some(entry),
            Admission::Refused(reason) => {
                refuse(&shared, entry.stream, peer, reason);
                return None;
            }
        }
        let mut stream = entry.stream;
        let spawned = std::thread::Builder::new()
            .name(format!("client {peer}"))
            .spawn({
                let shared = Arc::clone(&shared);
                let mut stream = match stream.try_clone() {
                    Ok(clone) => clone,
                    Err(err) => {
                        forget_pre_auth(&shared, id);
                        events(&ServerEvent::Dropped {
                            peer,
                            reason: err.to_string(),
                        });
                        return None;
                    }
                };
                move || {
                    let end = match serve_client(&mut stream, peer, id, &shared) {
                        Ok(()) => ServerEvent::Closed(peer),
                        Err(SessionEnd::Refused(reason)) => ServerEvent::Refused { peer, reason },
                        Err(SessionEnd::Dropped(reason)) => ServerEvent::Dropped { peer, reason },
                    };
                    forget_pre_auth(&shared, id);
                    (shared.events)(&end);
                }
            });
        if let Err(err) = spawned {
            forget_pre_auth(&shared, id);
            let reason = thread_error("this client", &err);
            let _ = stream.set_write_timeout(Some(shared.config.control_timeout));
            let _ = write_frame(
                &mut stream,
                &Frame::Error {
                    message: format!("server {reason}"),
                },
            );
            events(&ServerEvent::Dropped { peer, reason });
        }
        None
    }

    /// Serves on a thread of its own until the handle is stopped or
    /// dropped.
    pub fn spawn(self) -> Result<ServerHandle, ServerError> {
        let stop = Arc::new(AtomicBool::new(false));
        let address = self.address;
        let thread = std::thread::Builder::new()
            .name("netbisect server".to_string())
            .spawn({
                let stop = Arc::clone(&stop);
                move || self.serve(&stop)
            })
            .map_err(ServerError::Thread)?;
        Ok(ServerHandle {
            stop,
            thread: Some(thread),
            address,
        })
    }
}

/// A server running on its own thread.
pub struct ServerHandle {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    address: SocketAddr,
}

impl ServerHandle {
    /// The address the server listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// Stops accepting clients and waits for the accept loop to end.
    /// Sessions in progress finish on their own threads.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop_now();
    }
}

enum SessionEnd {
    Refused(String),
    Dropped(String),
}

impl From<ProtocolError> for SessionEnd {
    fn from(err: ProtocolError) -> SessionEnd {
        SessionEnd::Dropped(err.to_string())
    }
}

/// A connection not yet in its handshake.
struct Waiting {
    stream: TcpStream,
    peer: SocketAddr,
    since: Instant,
}

/// Whether a connection may start its handshake.
enum Admission {
    Admitted,
    /// Its address has no free handshake place: wait for one.
    Wait,
    Refused(String),
}

/// Sends a `busy` error frame (bounded in time) and logs the refusal.
fn refuse(shared: &Shared, mut stream: TcpStream, peer: SocketAddr, reason: String) {
    let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
    let _ = write_frame(
        &mut stream,
        &Frame::Error {
            message: format!("server {reason}"),
        },
    );
    (shared.events)(&ServerEvent::Refused { peer, reason });
}

/// Admits a new connection to the handshake, or says to wait (its
/// address holds all its places, or all places are taken by connections
/// still young). When all places are taken, the oldest connection that
/// has had a quarter of its handshake time, of the address that holds the
/// most, is closed for it.
fn admit(shared: &Shared, id: u64, ip: IpAddr, stream: &TcpStream) -> Admission {
    let config = &shared.config;
    let handle = match stream.try_clone() {
        Ok(handle) => handle,
        Err(err) => return Admission::Refused(err.to_string()),
    };
    let Ok(mut pending) = shared.pre_auth.lock() else {
        return Admission::Refused("internal error: handshake table poisoned".to_string());
    };
    let from_ip = pending.iter().filter(|entry| entry.ip == ip).count();
    if from_ip >= config.max_pre_auth_per_ip.max(1) {
        return Admission::Wait;
    }
    if pending.len() >= config.max_pre_auth.max(1) {
        // Only a connection that has had a fair part of its handshake time
        // makes room, so that closing one never just makes room for the
        // next reconnection; among those, the oldest of the address that
        // holds the most.
        let stale_after = config.pre_auth_timeout / 4;
        let mut counts: HashMap<IpAddr, usize> = HashMap::new();
        for entry in pending.iter() {
            *counts.entry(entry.ip).or_default() += 1;
        }
        let victim = pending
            .iter()
            .enumerate()
            .filter(|(_, entry)| entry.since.elapsed() >= stale_after)
            .max_by_key(|(position, entry)| (counts[&entry.ip], usize::MAX - position))
            .map(|(position, _)| position);
        let Some(position) = victim else {
            return Admission::Wait;
        };
        let evicted = pending.remove(position);
        let _ = evicted.stream.shutdown(Shutdown::Both);
    }
    pending.push(PreAuth {
        id,
        ip,
        stream: handle,
        since: Instant::now(),
    });
    Admission::Admitted
}

/// Takes connection `id` out of the handshake table; false when it was no
/// longer there (it was closed to make room).
fn forget_pre_auth(shared: &Shared, id: u64) -> bool {
    let Ok(mut pending) = shared.pre_auth.lock() else {
        return false;
    };
    match pending.iter().position(|entry| entry.id == id) {
        Some(position) => {
            pending.remove(position);
            true
        }
        None => false,
    }
}

/// A slot among the authenticated sessions, given back when dropped.
struct SessionSlot<'a>(&'a AtomicUsize);

impl Drop for SessionSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Bytes of message buffers reserved for one test, given back when
/// dropped.
struct MemoryReservation<'a> {
    in_use: &'a AtomicU64,
    bytes: u64,
}

impl Drop for MemoryReservation<'_> {
    fn drop(&mut self) {
        self.in_use.fetch_sub(self.bytes, Ordering::SeqCst);
    }
}

/// The bytes of message buffers the server allocates for `spec`: each
/// flow's send and receive buffers.
pub fn test_buffer_bytes(spec: &RunSpec) -> u64 {
    use crate::spec::TestKind;
    let per_flow = match spec.test {
        TestKind::TcpStream => u64::from(spec.recv_size_bytes),
        TestKind::TcpMaerts => u64::from(spec.send_size_bytes),
        TestKind::TcpRr | TestKind::TcpCrr | TestKind::UdpRr => {
            u64::from(spec.request_size_bytes) + u64::from(spec.response_size_bytes)
        }
        TestKind::UdpStream => {
            u64::from(spec.send_size_bytes.max(spec.recv_size_bytes))
                + u64::from(spec.response_size_bytes)
        }
    };
    per_flow * u64::from(spec.flows.max(1))
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

/// Reserves the buffers of `spec` against both memory limits.
fn reserve_memory<'a>(shared: &'a Shared, spec: &RunSpec) -> Result<MemoryReservation<'a>, String> {
    let config = &shared.config;
    let bytes = test_buffer_bytes(spec);
    if bytes > config.max_test_memory {
        return Err(format!(
            "the test needs {} of buffers, over the server's limit of {} per test \
             (serve --max-test-memory)",
            mib(bytes),
            mib(config.max_test_memory)
        ));
    }
    let reserved =
        shared
            .memory_in_use
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |in_use| {
                in_use
                    .checked_add(bytes)
                    .filter(|total| *total <= config.max_total_memory)
            });
    match reserved {
        Ok(_) => Ok(MemoryReservation {
            in_use: &shared.memory_in_use,
            bytes,
        }),
        Err(in_use) => Err(format!(
            "the test needs {} of buffers and tests running now hold {}, over the \
             server's limit of {} in all (serve --max-total-memory); try again later",
            mib(bytes),
            mib(in_use),
            mib(config.max_total_memory)
        )),
    }
}

fn send_error(stream: &mut TcpStream, message: String) -> Result<(), SessionEnd> {
    write_frame(stream, &Frame::Error { message })?;
    Ok(())
}

fn serve_client(
    stream: &mut TcpStream,
    peer: SocketAddr,
    id: u64,
    shared: &Shared,
) -> Result<(), SessionEnd> {
    let config = &shared.config;
    let timeout = config.control_timeout;
    // The whole handshake shares one deadline.
    let handshake_end = Instant::now() + config.pre_auth_timeout;
    let handshake_left = || handshake_end.saturating_duration_since(Instant::now());
    stream
        .set_write_timeout(Some(config.pre_auth_timeout.min(timeout)))
        .and_then(|()| stream.set_nodelay(true))
        .map_err(|err| SessionEnd::Dropped(err.to_string()))?;
    match read_frame_within(stream, handshake_left())? {
        Frame::Hello { protocol, version }
            if protocol == PROTOCOL_NAME && version == PROTOCOL_VERSION => {}
        Frame::Hello { protocol, version } if protocol == PROTOCOL_NAME => {
            let message = format!(
                "protocol version mismatch: client speaks {version}, server speaks {PROTOCOL_VERSION}"
            );
            send_error(stream, message.clone())?;
            return Err(SessionEnd::Refused(message));
        }
        _ => {
            let message = format!("expected a {PROTOCOL_NAME} hello");
            send_error(stream, message.clone())?;
            return Err(SessionEnd::Refused(message));
        }
    }
    match &config.token {
        None => write_frame(
            stream,
            &Frame::Welcome {
                version: PROTOCOL_VERSION,
                challenge: None,
            },
        )?,
        Some(token) => authenticate(stream, token, handshake_left())?,
    }
    // Authenticated: out of the handshake table (unless it was closed to
    // make room meanwhile), into a session slot.
    if !forget_pre_auth(shared, id) {
        return Err(SessionEnd::Dropped(
            "closed in its handshake to make room".to_string(),
        ));
    }
    if shared.active.fetch_add(1, Ordering::SeqCst) >= config.max_clients {
        shared.active.fetch_sub(1, Ordering::SeqCst);
        let reason = format!("busy: {} clients already", config.max_clients);
        send_error(stream, format!("server {reason}"))?;
        return Err(SessionEnd::Refused(reason));
    }
    let _slot = SessionSlot(&shared.active);
    stream
        .set_write_timeout(Some(timeout))
        .map_err(|err| SessionEnd::Dropped(err.to_string()))?;
    let mut env: Option<Box<HostEnv>> = None;
    loop {
        match read_frame_within(stream, timeout) {
            Ok(Frame::Test { spec, data_ports }) => {
                run_one(stream, peer, shared, &spec, data_ports, &mut env)?;
            }
            Ok(Frame::Bye) | Err(ProtocolError::Closed) => return Ok(()),
            Ok(other) => {
                let message = format!("unexpected frame: {}", frame_name(&other));
                send_error(stream, message.clone())?;
                return Err(SessionEnd::Dropped(message));
            }
            Err(err) => return Err(err.into()),
        }
    }
}

fn authenticate(
    stream: &mut TcpStream,
    token: &Token,
    timeout: Duration,
) -> Result<(), SessionEnd> {
    let challenge = auth::new_challenge().map_err(|err| SessionEnd::Dropped(err.to_string()))?;
    write_frame(
        stream,
        &Frame::Welcome {
            version: PROTOCOL_VERSION,
            challenge: Some(challenge.clone()),
        },
    )?;
    let refused = |reason: &str| SessionEnd::Refused(reason.to_string());
    match read_frame_within(stream, timeout) {
        Ok(Frame::Auth { mac }) if token.verify(&challenge, &mac) => {
            write_frame(stream, &Frame::AuthOk)?;
            Ok(())
        }
        Ok(Frame::Auth { .. }) => {
            send_error(stream, "authentication failed: wrong token".to_string())?;
            Err(refused("authentication failed: wrong token"))
        }
        Ok(_) => {
            send_error(
                stream,
                "authentication required: this server demands a token".to_string(),
            )?;
            Err(refused("authentication failed: no token"))
        }
        Err(err) => Err(SessionEnd::Refused(format!("authentication failed: {err}"))),
    }
}

fn frame_name(frame: &Frame) -> &'static str {
    match frame {
        Frame::Hello { .. } => "hello",
        Frame::Welcome { .. } => "welcome",
        Frame::Auth { .. } => "auth",
        Frame::AuthOk => "auth_ok",
        Frame::Test { .. } => "test",
        Frame::Ready { .. } => "ready",
        Frame::Finished => "finished",
        Frame::Results { .. } => "results",
        Frame::Error { .. } => "error",
        Frame::Bye => "bye",
    }
}

/// Runs one test iteration for a client. A bad request or a failed data
/// phase is answered with an error frame and the session goes on; a
/// broken control connection ends the session.
fn run_one(
    stream: &mut TcpStream,
    peer: SocketAddr,
    shared: &Shared,
    spec: &RunSpec,
    data_ports: Option<PortRange>,
    env: &mut Option<Box<HostEnv>>,
) -> Result<(), SessionEnd> {
    let config = &shared.config;
    let reject = |stream: &mut TcpStream, message: String| {
        (shared.events)(&ServerEvent::Rejected {
            peer,
            message: message.clone(),
        });
        send_error(stream, message)
    };
    if let Err(err) = spec.validate() {
        return reject(stream, err.to_string());
    }
    if let Some(range) = data_ports
        && (range.low == 0 || range.low > range.high)
    {
        return reject(
            stream,
            format!(
                "invalid data_ports {}-{}: ports must be 1-65535, low <= high",
                range.low, range.high
            ),
        );
    }
    let _memory = match reserve_memory(shared, spec) {
        Ok(reservation) => reservation,
        Err(message) => return reject(stream, message),
    };
    let local_ip = match stream.local_addr() {
        Ok(address) => address.ip(),
        Err(err) => return Err(SessionEnd::Dropped(err.to_string())),
    };
    let ports = data_ports.or(config.data_ports);
    let prepared = match datapath::prepare_server(spec, local_ip, ports) {
        Ok(prepared) => prepared,
        Err(err) => return reject(stream, format!("cannot open a data socket: {err}")),
    };
    let ports: Vec<u16> = prepared.iter().map(|flow| flow.port).collect();
    let data_secret = match auth::new_challenge() {
        Ok(secret) => secret,
        Err(err) => return reject(stream, err.to_string()),
    };
    let stop = AtomicBool::new(false);
    let data_done = AtomicBool::new(false);
    let flows_started = AtomicU8::new(0);
    let plan = ServerPlan {
        spec,
        client_ip: peer.ip(),
        stop: &stop,
        io_timeout: config.io_timeout,
        data_secret: data_secret.as_bytes(),
        flows_started: &flows_started,
    };
    let wait = Duration::from_secs_f64(spec.warmup_s + spec.duration_s)
        + config.io_timeout
        + config.control_timeout;
    let scoped = std::thread::scope(|scope| {
        let data = std::thread::Builder::new()
            .name(format!("data {peer}"))
            .spawn_scoped(scope, || {
                let side = datapath::run_server(&plan, prepared);
                data_done.store(true, Ordering::SeqCst);
                side
            });
        let data = match data {
            Ok(data) => data,
            Err(err) => return Err(thread_error("the test", &err)),
        };
        // `ready` promises that the server carries the test: wait until
        // every flow's thread runs.
        let give_up = Instant::now() + config.io_timeout;
        while flows_started.load(Ordering::SeqCst) == 0
            && !data_done.load(Ordering::SeqCst)
            && Instant::now() < give_up
        {
            std::thread::sleep(Duration::from_micros(200));
        }
        if flows_started.load(Ordering::SeqCst) != datapath::FLOWS_STARTED {
            stop.store(true, Ordering::Relaxed);
            return Err(match data.join() {
                Ok(Err(err)) => format!("server side of {} failed: {err}", spec.test),
                _ => format!("server side of {} could not start", spec.test),
            });
        }
        let ready = Frame::Ready {
            data_ports: ports,
            data_secret: data_secret.clone(),
        };
        let control = match write_frame(stream, &ready) {
            Ok(()) => {
                (shared.events)(&ServerEvent::Started {
                    peer,
                    test: spec.test.name(),
                });
                wait_for_frame(stream, wait, config.control_timeout, &data_done)
            }
            Err(err) => Err(err),
        };
        stop.store(true, Ordering::Relaxed);
        Ok((control, data.join()))
    });
    let (control, data) = match scoped {
        Ok(outcome) => outcome,
        Err(message) => return reject(stream, message),
    };
    match control {
        Ok(Frame::Finished) => {}
        Ok(other) => {
            let message = format!("expected finished, got {}", frame_name(&other));
            send_error(stream, message.clone())?;
            return Err(SessionEnd::Dropped(message));
        }
        Err(err) => return Err(SessionEnd::Dropped(format!("during {}: {err}", spec.test))),
    }
    let side = match data {
        Ok(Ok(side)) => side,
        Ok(Err(err)) => {
            return reject(
                stream,
                format!("server side of {} failed: {err}", spec.test),
            );
        }
        Err(_) => return reject(stream, format!("server side of {} failed", spec.test)),
    };
    let env = env.get_or_insert_with(|| {
        let interface = sockets::egress_interface(local_ip);
        Box::new(crate::host::capture_local(interface.as_deref()))
    });
    write_frame(
        stream,
        &Frame::Results {
            flows: side.flows,
            cpu: side.cpu,
            env: env.clone(),
        },
    )?;
    (shared.events)(&ServerEvent::Tested {
        peer,
        test: spec.test.name(),
    });
    Ok(())
}

/// Waits for the client's next control frame for at most `wait`, and for
/// at most `after_data` once the server's side of the test is over
/// (`data_done`): a client whose data connections never came, or that
/// went silent, frees its slot within the test's own bound.
fn wait_for_frame(
    stream: &mut TcpStream,
    wait: Duration,
    after_data: Duration,
    data_done: &AtomicBool,
) -> Result<Frame, ProtocolError> {
    const POLL: Duration = Duration::from_millis(50);
    let started = Instant::now();
    let mut done_at: Option<Instant> = None;
    loop {
        let now = Instant::now();
        if done_at.is_none() && data_done.load(Ordering::SeqCst) {
            done_at = Some(now);
        }
        let mut deadline = started + wait;
        if let Some(done_at) = done_at {
            deadline = deadline.min(done_at + after_data);
        }
        let left = deadline.saturating_duration_since(now);
        if left.is_zero() {
            return Err(ProtocolError::Timeout(now - started));
        }
        stream.set_read_timeout(Some(left.min(POLL)))?;
        let mut probe = [0u8; 1];
        match stream.peek(&mut probe) {
            // Bytes are there, or the end of the stream: read the frame.
            Ok(_) => return read_frame_within(stream, after_data.max(POLL)),
            Err(err) if is_timeout(&err) || err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(ProtocolError::Io(err)),
        }
    }
}
