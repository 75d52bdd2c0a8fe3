//! `netbisect serve`: the remote end of every test (netserver's role).
//!
//! One thread per control connection; each client is served on its own,
//! so a client that stalls, babbles or vanishes costs only its own thread
//! until its timeout. Every request is checked against the limits of
//! [`RunSpec::validate`](run_record::spec::RunSpec::validate) and a bad one
//! is answered with an `error` frame, after which the session goes on.
//! A server listening beyond loopback (including the wildcard address)
//! demands the pre-shared token unless it was explicitly told not to.
//! The settings a spec asks of the system under test (`spec.system`) are
//! the client's to make on its own end ([`crate::run::bench`]); a server
//! never makes them, so no client changes a server's host.
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
//!
//! Here: the listener and its accept loop. Its configuration and events
//! are in `config`, the state its threads share in `shared`, the
//! handshake places in `admission`, a client's session and its tests in
//! `session`, and the server's half of the data phase, with its hot
//! loops, in [`data`].

mod admission;
mod config;
pub mod data;
mod session;
mod shared;

pub use config::{
    DEFAULT_CONTROL_TIMEOUT, DEFAULT_IO_TIMEOUT, DEFAULT_MAX_CLIENTS, DEFAULT_MAX_PRE_AUTH,
    DEFAULT_MAX_PRE_AUTH_PER_IP, DEFAULT_MAX_TEST_MEMORY, DEFAULT_MAX_TOTAL_MEMORY, EventSink,
    ServerConfig, ServerEvent, quiet,
};
pub use session::test_buffer_bytes;

use crate::protocol::{Frame, write_frame};
use crate::sockets::{self, is_timeout};
use admission::{Admission, Waiting, admit, forget_pre_auth, refuse};
use session::{SessionEnd, serve_client};
use shared::{Shared, thread_error};
use socket2::{Socket, Type};
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the accept loop looks at its stop flag.
const ACCEPT_POLL: Duration = Duration::from_millis(100);

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
