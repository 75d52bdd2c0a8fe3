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
//!   demanded) it is in its handshake, which the accept loop's thread
//!   reads without blocking, many at once: at most
//!   [`ServerConfig::max_pre_auth`] connections, each for at most
//!   [`ServerConfig::pre_auth_timeout`]; when the places run out, the
//!   oldest handshake, whichever address it comes from, makes room and
//!   is told so. How that lets a prompt client in through any crowd is
//!   in `admission`. The [`ServerConfig::max_clients`] slots count
//!   sessions past their handshake only, so a flood of hello-only
//!   connections never takes them.
//! - Every wait of a test has a deadline: the data connections must come
//!   within the I/O timeout (each, accepted alongside whatever else
//!   connects to its port, has a short time for the test's secret), a
//!   data connection that trickles is dropped at the test's end plus the
//!   I/O timeout, and once the server's side of a test is over the
//!   client has the control timeout to say `finished`.
//! - The message buffers a test needs are counted before anything is
//!   allocated, against [`ServerConfig::max_test_memory`] per test and
//!   [`ServerConfig::max_total_memory`] for all tests at once; beyond, the
//!   request gets an `error` frame.
//! - A thread that cannot be started (a process or cgroup limit) is an
//!   `error` frame naming the limit, never a panic.
//! - With [`ServerConfig::event_limit`], a crowd's thousands of events a
//!   second reach the event sink at a bounded rate, and what was left
//!   out is counted ([`ServerEvent::NotLogged`]).
//!
//! Here: the listener and its accept loop. Its configuration and events
//! (with which of them reach the sink, and how many) are in `config`,
//! the log that keeps to them in `log`, the state its threads share in
//! `shared`, the handshakes in `admission` and `handshake`, a client's
//! session and its tests in `session`, and the server's half of the data
//! phase, with its hot loops, in [`data`].

mod admission;
mod config;
pub mod data;
mod handshake;
mod log;
mod session;
mod shared;

pub use config::{
    DEFAULT_CONTROL_TIMEOUT, DEFAULT_EVENT_LIMIT, DEFAULT_IO_TIMEOUT, DEFAULT_MAX_CLIENTS,
    DEFAULT_MAX_PRE_AUTH, DEFAULT_MAX_TEST_MEMORY, DEFAULT_MAX_TOTAL_MEMORY, EventLevel,
    EventLimit, EventSink, ServerConfig, ServerEvent, quiet,
};
pub use session::test_buffer_bytes;

use crate::protocol::{Frame, write_frame};
use crate::sockets;
use admission::{Admission, Admitted};
use log::EventLog;
use session::{SessionEnd, SessionSlot, serve_client};
use shared::{Shared, thread_error};
use socket2::{Socket, Type};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Connections the kernel may queue for the accept loop, which takes
/// them in at a bounded pace (see `admission`): a crowd must hold more
/// than the places and this many (or `net.core.somaxconn`, when lower)
/// before a client's connection waits for the kernel's retries.
const LISTEN_BACKLOG: i32 = 4096;

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
    /// The accept loop's epoll set could not be made.
    #[error("cannot set up the accept loop: {0}")]
    Poll(std::io::Error),
}

/// A bound server, not yet serving.
pub struct Server {
    listener: Socket,
    address: SocketAddr,
    shared: Arc<Shared>,
    admission: Mutex<Admission>,
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
        listener.listen(LISTEN_BACKLOG).map_err(listen)?;
        listener.set_nonblocking(true).map_err(listen)?;
        let address = sockets::address_of(&listener.local_addr().map_err(listen)?);
        let admission = rustix::event::epoll::create(rustix::event::epoll::CreateFlags::CLOEXEC)
            .map_err(std::io::Error::from)
            .and_then(|epoll| Admission::new(epoll, &listener))
            .map_err(ServerError::Poll)?;
        Ok(Server {
            listener,
            address,
            shared: Arc::new(Shared {
                log: EventLog::new(events, config.event_level, config.event_limit),
                config,
                active: AtomicUsize::new(0),
                memory_in_use: AtomicU64::new(0),
            }),
            admission: Mutex::new(admission),
        })
    }

    /// The address the server listens on (with the port the kernel chose).
    pub fn local_addr(&self) -> SocketAddr {
        self.address
    }

    /// Serves clients until `stop` is set.
    pub fn serve(&self, stop: &AtomicBool) {
        self.shared.log.emit(&ServerEvent::Listening(self.address));
        // One accept loop at a time; a lock poisoned by a loop that
        // panicked is taken over as it is.
        let mut admission = self
            .admission
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut events = admission::event_buffer();
        while !stop.load(Ordering::Relaxed) {
            for admitted in admission.round(&self.listener, &self.shared, &mut events) {
                self.start_session(admitted);
            }
        }
    }

    /// Starts the session of a client past its handshake, on a thread of
    /// its own, or refuses it when the session slots are full.
    fn start_session(&self, admitted: Admitted) {
        let Admitted { mut stream, peer } = admitted;
        let shared = &self.shared;
        let log = &shared.log;
        let config = &shared.config;
        let refuse = |stream: &mut std::net::TcpStream, reason: String| {
            let _ = stream
                .set_nonblocking(false)
                .and_then(|()| stream.set_write_timeout(Some(Duration::from_millis(200))));
            let _ = write_frame(
                stream,
                &Frame::Error {
                    message: format!("server {reason}"),
                },
            );
        };
        if shared.active.fetch_add(1, Ordering::SeqCst) >= config.max_clients {
            shared.active.fetch_sub(1, Ordering::SeqCst);
            let reason = format!("busy: {} clients already", config.max_clients);
            refuse(&mut stream, reason.clone());
            log.emit(&ServerEvent::Refused { peer, reason });
            return;
        }
        let mut session_stream = match stream.try_clone() {
            Ok(clone) => clone,
            Err(err) => {
                shared.active.fetch_sub(1, Ordering::SeqCst);
                log.emit(&ServerEvent::Dropped {
                    peer,
                    reason: err.to_string(),
                });
                return;
            }
        };
        let spawned = std::thread::Builder::new()
            .name(format!("client {peer}"))
            .spawn({
                let shared = Arc::clone(shared);
                move || {
                    let _slot = SessionSlot(&shared.active);
                    let end = match serve_client(&mut session_stream, peer, &shared) {
                        Ok(()) => ServerEvent::Closed(peer),
                        Err(SessionEnd::Dropped(reason)) => ServerEvent::Dropped { peer, reason },
                    };
                    shared.log.emit(&end);
                }
            });
        if let Err(err) = spawned {
            // The closure, and the slot it would have given back, never
            // ran.
            shared.active.fetch_sub(1, Ordering::SeqCst);
            let reason = thread_error("this client", &err);
            refuse(&mut stream, reason.clone());
            log.emit(&ServerEvent::Dropped { peer, reason });
        }
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
