//! The client side of a test: the control session with a server, here;
//! the client's half of the data phase in [`data`]; one iteration's
//! figures from both ends' counts in `combine`.

mod combine;
pub mod data;

pub use combine::{combine, combine_flows, cpu_figures, work_rate};

use crate::auth::Token;
use crate::datapath::{DataError, Interim};
use crate::iterate;
use crate::protocol::{
    Frame, PROTOCOL_NAME, PROTOCOL_VERSION, PortRange, ProtocolError, read_frame_within,
    write_frame,
};
use data::ClientPlan;
use run_record::env::HostEnv;
use run_record::record::Iteration;
use run_record::spec::{AddressFamily, RunSpec, SpecError, TestKind};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs};
use std::time::Duration;

/// Where the server is and how to talk to it.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    /// Server host name or address, as given.
    pub host: String,
    /// Server control port.
    pub port: u16,
    /// Token for a server that demands one.
    pub token: Option<Token>,
    /// Ports the server's data socket must use.
    pub data_ports: Option<PortRange>,
    /// Longest wait for the control connection.
    pub connect_timeout: Duration,
    /// Longest wait for any one data or control operation, beyond the
    /// test's own length.
    pub io_timeout: Duration,
    /// How long a UDP_RR request waits for its response before it counts
    /// as lost.
    pub udp_rr_timeout: Duration,
}

/// Default for [`ClientOptions::connect_timeout`].
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Default for [`ClientOptions::io_timeout`].
pub const DEFAULT_IO_TIMEOUT: Duration = Duration::from_secs(10);
/// Default for [`ClientOptions::udp_rr_timeout`].
pub const DEFAULT_UDP_RR_TIMEOUT: Duration = Duration::from_millis(50);

impl ClientOptions {
    /// Options for the server at `host`:`port` with default timeouts.
    pub fn new(host: &str, port: u16) -> ClientOptions {
        ClientOptions {
            host: host.to_string(),
            port,
            token: None,
            data_ports: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            io_timeout: DEFAULT_IO_TIMEOUT,
            udp_rr_timeout: DEFAULT_UDP_RR_TIMEOUT,
        }
    }

    fn target(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }
}

/// Why a test could not be run.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The spec is outside the limits; nothing was sent.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The host name did not resolve.
    #[error("cannot resolve {target}: {source}")]
    Resolve {
        /// `host:port`.
        target: String,
        /// What the resolver said.
        source: std::io::Error,
    },
    /// The host has no address of the requested family.
    #[error("{target} has no {family} address")]
    NoAddress {
        /// `host:port`.
        target: String,
        /// `IPv4` or `IPv6`.
        family: &'static str,
    },
    /// The control connection could not be made.
    #[error("cannot connect to {target}: {source}")]
    Connect {
        /// `host:port`.
        target: String,
        /// What the kernel said.
        source: std::io::Error,
    },
    /// The control connection failed.
    #[error("control connection to {target}: {source}")]
    Control {
        /// `host:port`.
        target: String,
        /// What went wrong.
        source: ProtocolError,
    },
    /// The server answered with an error.
    #[error("server {target} refused: {message}")]
    Server {
        /// `host:port`.
        target: String,
        /// The server's message.
        message: String,
    },
    /// The server speaks another protocol version.
    #[error("protocol version mismatch: client speaks {client}, server {target} speaks {server}")]
    VersionMismatch {
        /// `host:port`.
        target: String,
        /// Our version.
        client: u32,
        /// The server's.
        server: u32,
    },
    /// The server demands a token and none was given.
    #[error("server {0} demands a token: give --token-file")]
    TokenRequired(String),
    /// The server sent something out of turn.
    #[error("server {target} sent an unexpected {frame} frame")]
    Unexpected {
        /// `host:port`.
        target: String,
        /// The frame's type.
        frame: String,
    },
    /// The control connection went to another address than asked.
    #[error("control connection went to {got}, not to {asked} as asked")]
    AddressMismatch {
        /// The address asked for.
        asked: SocketAddr,
        /// The address the kernel reports.
        got: SocketAddr,
    },
    /// The client's side of the data phase failed.
    #[error("{test} to {target}: {source}")]
    Data {
        /// The test.
        test: TestKind,
        /// `host:port` of the data socket.
        target: SocketAddr,
        /// What went wrong.
        source: DataError,
    },
}

/// An open control session with a server.
pub struct Session {
    stream: TcpStream,
    target: String,
    server: SocketAddr,
    options: ClientOptions,
}

/// The figures of a finished test, before they become a record.
#[derive(Clone, Debug)]
pub struct TestOutcome {
    /// Every iteration's figures, both ends.
    pub iterations: Vec<Iteration>,
    /// The server's environment.
    pub remote_env: HostEnv,
    /// The server's control address.
    pub server: SocketAddr,
}

fn family_name(family: AddressFamily) -> &'static str {
    match family {
        AddressFamily::Ipv4 => "IPv4",
        AddressFamily::Ipv6 => "IPv6",
    }
}

fn family_of(ip: IpAddr) -> AddressFamily {
    match ip {
        IpAddr::V4(_) => AddressFamily::Ipv4,
        IpAddr::V6(_) => AddressFamily::Ipv6,
    }
}

impl Session {
    /// Connects to the server, checks its version and answers its
    /// challenge.
    pub fn connect(options: &ClientOptions, family: AddressFamily) -> Result<Session, ClientError> {
        let target = options.target();
        let addresses: Vec<SocketAddr> = (options.host.as_str(), options.port)
            .to_socket_addrs()
            .map_err(|source| ClientError::Resolve {
                target: target.clone(),
                source,
            })?
            .filter(|address| family_of(address.ip()) == family)
            .collect();
        if addresses.is_empty() {
            return Err(ClientError::NoAddress {
                target,
                family: family_name(family),
            });
        }
        let mut last_error = None;
        let mut connected = None;
        for address in addresses {
            match TcpStream::connect_timeout(&address, options.connect_timeout) {
                Ok(stream) => {
                    connected = Some((stream, address));
                    break;
                }
                Err(err) => last_error = Some(err),
            }
        }
        let Some((stream, server)) = connected else {
            return Err(ClientError::Connect {
                target,
                source: last_error.unwrap_or_else(|| std::io::ErrorKind::NotFound.into()),
            });
        };
        let control = |source| ClientError::Control {
            target: target.clone(),
            source,
        };
        match stream.peer_addr() {
            Ok(got) if got == server => {}
            Ok(got) => return Err(ClientError::AddressMismatch { asked: server, got }),
            Err(err) => return Err(control(err.into())),
        }
        stream
            .set_nodelay(true)
            .and_then(|()| stream.set_write_timeout(Some(options.io_timeout)))
            .map_err(|err| control(err.into()))?;
        let mut session = Session {
            stream,
            target: target.clone(),
            server,
            options: options.clone(),
        };
        session.handshake()?;
        Ok(session)
    }

    fn control_error(&self, source: ProtocolError) -> ClientError {
        ClientError::Control {
            target: self.target.clone(),
            source,
        }
    }

    fn send(&mut self, frame: &Frame) -> Result<(), ClientError> {
        write_frame(&mut self.stream, frame).map_err(|err| self.control_error(err))
    }

    fn receive(&mut self, timeout: Duration) -> Result<Frame, ClientError> {
        match read_frame_within(&mut self.stream, timeout) {
            Ok(Frame::Error { message }) => Err(ClientError::Server {
                target: self.target.clone(),
                message,
            }),
            Ok(frame) => Ok(frame),
            Err(err) => Err(self.control_error(err)),
        }
    }

    fn unexpected(&self, frame: &Frame) -> ClientError {
        let text = serde_json::to_value(frame)
            .ok()
            .and_then(|value| {
                value
                    .get("type")
                    .and_then(|t| t.as_str().map(str::to_string))
            })
            .unwrap_or_default();
        ClientError::Unexpected {
            target: self.target.clone(),
            frame: text,
        }
    }

    fn handshake(&mut self) -> Result<(), ClientError> {
        let timeout = self.options.io_timeout;
        self.send(&Frame::Hello {
            protocol: PROTOCOL_NAME.to_string(),
            version: PROTOCOL_VERSION,
        })?;
        let challenge = match self.receive(timeout)? {
            Frame::Welcome { version, challenge } if version == PROTOCOL_VERSION => challenge,
            Frame::Welcome { version, .. } => {
                return Err(ClientError::VersionMismatch {
                    target: self.target.clone(),
                    client: PROTOCOL_VERSION,
                    server: version,
                });
            }
            other => return Err(self.unexpected(&other)),
        };
        let Some(challenge) = challenge else {
            return Ok(());
        };
        let Some(token) = self.options.token.clone() else {
            // Tell the server, so that it logs the refusal, then stop.
            let _ = self.send(&Frame::Bye);
            return Err(ClientError::TokenRequired(self.target.clone()));
        };
        self.send(&Frame::Auth {
            mac: token.respond(&challenge),
        })?;
        match self.receive(timeout)? {
            Frame::AuthOk => Ok(()),
            other => Err(self.unexpected(&other)),
        }
    }

    /// Runs one iteration of `spec`: both ends' figures and the server's
    /// environment.
    pub fn run_iteration(
        &mut self,
        spec: &RunSpec,
        interim: Option<Interim<'_>>,
    ) -> Result<(Iteration, HostEnv), ClientError> {
        spec.validate()?;
        self.send(&Frame::Test {
            spec: spec.clone(),
            data_ports: self.options.data_ports,
        })?;
        let (data_ports, data_secret) = match self.receive(self.options.io_timeout)? {
            Frame::Ready {
                data_ports,
                data_secret,
            } => (data_ports, data_secret),
            other => return Err(self.unexpected(&other)),
        };
        if data_ports.len() != spec.flows as usize {
            return Err(ClientError::Server {
                target: self.target.clone(),
                message: format!(
                    "offered {} data ports for {} flows",
                    data_ports.len(),
                    spec.flows
                ),
            });
        }
        let servers: Vec<SocketAddr> = data_ports
            .iter()
            .map(|port| SocketAddr::new(self.server.ip(), *port))
            .collect();
        let plan = ClientPlan {
            spec,
            servers: &servers,
            io_timeout: self.options.io_timeout,
            udp_rr_timeout: self.options.udp_rr_timeout,
            interim,
            data_secret: data_secret.as_bytes(),
        };
        // The data phase runs on threads of its own so that CPU pinning
        // does not outlive it.
        let local = data::run_client(&plan).map_err(|source| ClientError::Data {
            test: spec.test,
            target: servers[0],
            source,
        })?;
        self.send(&Frame::Finished)?;
        let (remote_flows, remote_cpu, env) = match self.receive(self.options.io_timeout)? {
            Frame::Results { flows, cpu, env } => (flows, cpu, *env),
            other => return Err(self.unexpected(&other)),
        };
        if remote_flows.len() != local.flows.len() {
            return Err(ClientError::Server {
                target: self.target.clone(),
                message: format!(
                    "reported {} flows, {} ran",
                    remote_flows.len(),
                    local.flows.len()
                ),
            });
        }
        Ok((combine_flows(spec, local, remote_flows, remote_cpu), env))
    }

    /// Ends the session politely.
    pub fn close(mut self) {
        let _ = self.send(&Frame::Bye);
    }

    /// The server's control address.
    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// This end's address of the control connection, which names the
    /// interface a test to this server uses.
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.stream.local_addr()
    }
}

/// Runs every iteration of `spec` against the server of `options`.
pub fn run_test(spec: &RunSpec, options: &ClientOptions) -> Result<TestOutcome, ClientError> {
    run_test_with(spec, options, None)
}

/// Runs the iterations of `spec` against the server of `options` until
/// the spec's confidence request is met or its maximum is reached (see
/// [`crate::iterate`]), with interim reports when asked for.
pub fn run_test_with(
    spec: &RunSpec,
    options: &ClientOptions,
    interim: Option<Interim<'_>>,
) -> Result<TestOutcome, ClientError> {
    spec.validate()?;
    let session = Session::connect(options, spec.family)?;
    run_session(session, spec, interim)
}

/// Runs the iterations of `spec` in `session`, connected already, as
/// [`run_test_with`] does, and ends the session.
pub fn run_session(
    mut session: Session,
    spec: &RunSpec,
    interim: Option<Interim<'_>>,
) -> Result<TestOutcome, ClientError> {
    spec.validate()?;
    let mut remote_env = HostEnv::default();
    let iterations = iterate::run_iterations(spec, |_| {
        let (iteration, env) = session.run_iteration(spec, interim)?;
        remote_env = env;
        Ok::<_, ClientError>(iteration)
    })?;
    let server = session.server();
    session.close();
    Ok(TestOutcome {
        iterations,
        remote_env,
        server,
    })
}
