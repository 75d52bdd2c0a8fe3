//! `netbisect serve`: the remote end of every test (netserver's role).
//!
//! One thread per control connection; each client is served on its own,
//! so a client that stalls, babbles or vanishes costs only its own thread
//! until its timeout. Every request is checked against the limits of
//! [`RunSpec::validate`] and a bad one is answered with an `error` frame,
//! after which the session goes on. A server listening beyond loopback
//! (including the wildcard address) demands the pre-shared token unless
//! it was explicitly told not to.

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
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

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
}

/// Default for [`ServerConfig::max_clients`].
pub const DEFAULT_MAX_CLIENTS: usize = 64;
/// Default for [`ServerConfig::control_timeout`].
pub const DEFAULT_CONTROL_TIMEOUT: Duration = Duration::from_secs(30);
/// Default for [`ServerConfig::io_timeout`].
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(10);

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
    active: AtomicUsize,
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
        while !stop.load(Ordering::Relaxed) {
            let (socket, peer) = match self.listener.accept() {
                Ok(accepted) => accepted,
                Err(err) if is_timeout(&err) || err.kind() == std::io::ErrorKind::Interrupted => {
                    continue;
                }
                Err(_) => {
                    // Out of descriptors or memory: wait rather than spin.
                    std::thread::sleep(ACCEPT_POLL);
                    continue;
                }
            };
            let Some(peer) = peer.as_socket() else {
                continue;
            };
            let stream = TcpStream::from(socket);
            self.start_session(stream, peer);
        }
    }

    fn start_session(&self, mut stream: TcpStream, peer: SocketAddr) {
        let shared = Arc::clone(&self.shared);
        let events = &shared.events;
        events(&ServerEvent::Connected(peer));
        if shared.active.fetch_add(1, Ordering::SeqCst) >= shared.config.max_clients {
            shared.active.fetch_sub(1, Ordering::SeqCst);
            let reason = format!("busy: {} clients already", shared.config.max_clients);
            let _ = stream.set_write_timeout(Some(shared.config.control_timeout));
            let _ = write_frame(
                &mut stream,
                &Frame::Error {
                    message: format!("server {reason}"),
                },
            );
            events(&ServerEvent::Refused { peer, reason });
            return;
        }
        let spawned = std::thread::Builder::new()
            .name(format!("client {peer}"))
            .spawn({
                let shared = Arc::clone(&shared);
                move || {
                    let end = match serve_client(&mut stream, peer, &shared) {
                        Ok(()) => ServerEvent::Closed(peer),
                        Err(SessionEnd::Refused(reason)) => ServerEvent::Refused { peer, reason },
                        Err(SessionEnd::Dropped(reason)) => ServerEvent::Dropped { peer, reason },
                    };
                    (shared.events)(&end);
                    shared.active.fetch_sub(1, Ordering::SeqCst);
                }
            });
        if let Err(err) = spawned {
            shared.active.fetch_sub(1, Ordering::SeqCst);
            events(&ServerEvent::Dropped {
                peer,
                reason: format!("cannot start a thread: {err}"),
            });
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

enum SessionEnd {
    Refused(String),
    Dropped(String),
}

impl From<ProtocolError> for SessionEnd {
    fn from(err: ProtocolError) -> SessionEnd {
        SessionEnd::Dropped(err.to_string())
    }
}

fn send_error(stream: &mut TcpStream, message: String) -> Result<(), SessionEnd> {
    write_frame(stream, &Frame::Error { message })?;
    Ok(())
}

fn serve_client(
    stream: &mut TcpStream,
    peer: SocketAddr,
    shared: &Shared,
) -> Result<(), SessionEnd> {
    let config = &shared.config;
    let timeout = config.control_timeout;
    stream
        .set_write_timeout(Some(timeout))
        .and_then(|()| stream.set_nodelay(true))
        .map_err(|err| SessionEnd::Dropped(err.to_string()))?;
    match read_frame_within(stream, timeout)? {
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
        Some(token) => authenticate(stream, token, timeout)?,
    }
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
    let local_ip = match stream.local_addr() {
        Ok(address) => address.ip(),
        Err(err) => return Err(SessionEnd::Dropped(err.to_string())),
    };
    let ports = data_ports.or(config.data_ports);
    let prepared = match datapath::prepare_server(spec, local_ip, ports) {
        Ok(prepared) => prepared,
        Err(err) => return reject(stream, format!("cannot open a data socket: {err}")),
    };
    write_frame(
        stream,
        &Frame::Ready {
            data_ports: prepared.iter().map(|flow| flow.port).collect(),
        },
    )?;
    (shared.events)(&ServerEvent::Started {
        peer,
        test: spec.test.name(),
    });
    let stop = AtomicBool::new(false);
    let plan = ServerPlan {
        spec,
        client_ip: peer.ip(),
        stop: &stop,
        io_timeout: config.io_timeout,
    };
    let wait = Duration::from_secs_f64(spec.warmup_s + spec.duration_s)
        + config.io_timeout
        + config.control_timeout;
    let (control, data) = std::thread::scope(|scope| {
        let data = scope.spawn(|| datapath::run_server(&plan, prepared));
        let control = read_frame_within(stream, wait);
        stop.store(true, Ordering::Relaxed);
        (control, data.join())
    });
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
        Box::new(crate::env::capture_local(interface.as_deref()))
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
