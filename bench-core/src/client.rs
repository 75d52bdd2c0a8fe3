//! The client side of a test: the control session with a server and the
//! client's half of every iteration.

use crate::auth::Token;
use crate::cpu;
use crate::datapath::{self, ClientPlan, ClientSide, DataError, Interim};
use crate::env::HostEnv;
use crate::iterate;
use crate::latency::Histogram;
use crate::protocol::{
    Frame, PROTOCOL_NAME, PROTOCOL_VERSION, PortRange, ProtocolError, read_frame_within,
    write_frame,
};
use crate::record::{
    CpuDetail, CpuFigures, EndReport, EndsReport, FlowFigures, HostCpu, Iteration,
};
use crate::spec::{AddressFamily, RunSpec, SpecError, TestKind};
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
        let local = datapath::run_client(&plan).map_err(|source| ClientError::Data {
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
    let mut session = Session::connect(options, spec.family)?;
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

fn per_second(count: f64, elapsed_s: f64) -> f64 {
    if elapsed_s > 0.0 {
        count / elapsed_s
    } else {
        0.0
    }
}

/// One iteration's figures from both ends' counts. Stream tests take the
/// receiver's bytes and, for TCP, the receiver's elapsed time; UDP_STREAM
/// takes the receiver's bytes over the sender's time (the receiver cannot
/// tell when the last datagram was sent); request/response tests take the
/// client's transactions and time.
pub fn combine(spec: &RunSpec, local: EndReport, remote: EndReport) -> Iteration {
    let mut iteration = Iteration::default();
    match spec.test {
        TestKind::TcpStream | TestKind::UdpStream => {
            iteration.elapsed_s = if spec.test == TestKind::TcpStream {
                remote.elapsed_s
            } else {
                local.elapsed_s
            };
            iteration.bytes_sent = Some(local.bytes_sent);
            iteration.messages_sent = Some(local.messages_sent);
            iteration.bytes_received = Some(remote.bytes_received);
            iteration.messages_received = Some(remote.messages_received);
            iteration.throughput_bps =
                per_second(8.0 * remote.bytes_received as f64, iteration.elapsed_s);
        }
        TestKind::TcpMaerts => {
            iteration.elapsed_s = local.elapsed_s;
            iteration.bytes_sent = Some(remote.bytes_sent);
            iteration.messages_sent = Some(remote.messages_sent);
            iteration.bytes_received = Some(local.bytes_received);
            iteration.messages_received = Some(local.messages_received);
            iteration.throughput_bps =
                per_second(8.0 * local.bytes_received as f64, local.elapsed_s);
        }
        TestKind::TcpRr | TestKind::TcpCrr | TestKind::UdpRr => {
            let transactions = local.transactions.unwrap_or(0);
            iteration.elapsed_s = local.elapsed_s;
            iteration.transactions = Some(transactions);
            iteration.transaction_rate = Some(per_second(transactions as f64, local.elapsed_s));
            iteration.bytes_sent = Some(local.bytes_sent + remote.bytes_sent);
            iteration.bytes_received = Some(local.bytes_received + remote.bytes_received);
            iteration.messages_sent = Some(local.messages_sent + remote.messages_sent);
            iteration.messages_received = Some(local.messages_received + remote.messages_received);
            let per_transaction =
                u64::from(spec.request_size_bytes) + u64::from(spec.response_size_bytes);
            iteration.throughput_bps = per_second(
                8.0 * (transactions * per_transaction) as f64,
                local.elapsed_s,
            );
            if spec.test == TestKind::UdpRr {
                iteration.lost_transactions = local.timeouts;
            }
        }
    }
    iteration.send_errors = send_errors_of(spec.test, &local, &remote);
    iteration.ends = Some(EndsReport { local, remote });
    iteration
}

/// Sums the counts of several flows' reports of one end: the longest
/// time, the first flow's socket.
fn sum_ends(reports: &[EndReport]) -> EndReport {
    let mut sum = reports.first().cloned().unwrap_or_default();
    sum.tcp_info = None;
    for report in reports.iter().skip(1) {
        sum.elapsed_s = sum.elapsed_s.max(report.elapsed_s);
        sum.bytes_sent += report.bytes_sent;
        sum.bytes_received += report.bytes_received;
        sum.messages_sent += report.messages_sent;
        sum.messages_received += report.messages_received;
        sum.transactions = add_options(sum.transactions, report.transactions);
        sum.timeouts = add_options(sum.timeouts, report.timeouts);
        for (name, count) in &report.send_errors {
            *sum.send_errors.entry(name.clone()).or_insert(0) += count;
        }
    }
    sum
}

/// Failed sends of both ends, for UDP tests (the only ones that count
/// them).
fn send_errors_of(test: TestKind, local: &EndReport, remote: &EndReport) -> Option<u64> {
    test.is_udp().then(|| {
        local
            .send_errors
            .values()
            .chain(remote.send_errors.values())
            .sum()
    })
}

fn add_options(first: Option<u64>, second: Option<u64>) -> Option<u64> {
    match (first, second) {
        (None, None) => None,
        (first, second) => Some(first.unwrap_or(0) + second.unwrap_or(0)),
    }
}

/// The units of work per second service demand divides by: KB (1024
/// bytes) per second for stream tests, transactions per second for
/// request/response tests.
pub fn work_rate(spec: &RunSpec, iteration: &Iteration) -> f64 {
    if spec.test.is_request_response() {
        iteration.transaction_rate.unwrap_or(0.0)
    } else {
        iteration.throughput_bps / 8.0 / 1024.0
    }
}

/// CPU figures of an iteration from both hosts' measurements: utilisation
/// and service demand over all flows together.
pub fn cpu_figures(
    spec: &RunSpec,
    iteration: &Iteration,
    local: Option<&HostCpu>,
    remote: Option<&HostCpu>,
) -> CpuFigures {
    let rate = work_rate(spec, iteration);
    let demand = |host: Option<&HostCpu>| {
        host.and_then(|host| cpu::service_demand(host.util_pct, host.n_cpus, rate))
    };
    CpuFigures {
        local_util_pct: local.map(|host| host.util_pct),
        remote_util_pct: remote.map(|host| host.util_pct),
        local_service_demand: demand(local),
        remote_service_demand: demand(remote),
    }
}

/// One iteration from every flow of both ends: per-flow figures (when
/// there are several flows), their aggregate, latency over all flows, and
/// CPU over the common window.
pub fn combine_flows(
    spec: &RunSpec,
    local: ClientSide,
    remote_flows: Vec<EndReport>,
    remote_cpu: Option<HostCpu>,
) -> Iteration {
    let mut merged: Option<Histogram> = None;
    for histogram in local.latency.iter().flatten() {
        match &mut merged {
            Some(merged) => merged.merge(histogram),
            None => merged = Some(histogram.clone()),
        }
    }
    let mut iteration = if local.flows.len() == 1 && remote_flows.len() == 1 {
        let local_end = local.flows.into_iter().next().unwrap_or_default();
        let remote_end = remote_flows.into_iter().next().unwrap_or_default();
        combine(spec, local_end, remote_end)
    } else {
        let local_sum = sum_ends(&local.flows);
        let remote_sum = sum_ends(&remote_flows);
        let flows: Vec<FlowFigures> = local
            .flows
            .into_iter()
            .zip(remote_flows)
            .zip(&local.latency)
            .map(|((local_end, remote_end), histogram)| {
                let flow = combine(spec, local_end, remote_end);
                FlowFigures {
                    elapsed_s: flow.elapsed_s,
                    throughput_bps: flow.throughput_bps,
                    transaction_rate: flow.transaction_rate,
                    transactions: flow.transactions,
                    bytes_sent: flow.bytes_sent.unwrap_or(0),
                    bytes_received: flow.bytes_received.unwrap_or(0),
                    latency: histogram.as_ref().and_then(Histogram::figures),
                    ends: flow.ends.unwrap_or_default(),
                }
            })
            .collect();
        let mut aggregate = combine(spec, local_sum, remote_sum);
        aggregate.elapsed_s = flows.iter().map(|f| f.elapsed_s).fold(0.0, f64::max);
        aggregate.throughput_bps = flows.iter().map(|f| f.throughput_bps).sum();
        if spec.test.is_request_response() {
            aggregate.transaction_rate =
                Some(flows.iter().filter_map(|f| f.transaction_rate).sum());
        }
        aggregate.bytes_sent = Some(flows.iter().map(|f| f.bytes_sent).sum());
        aggregate.bytes_received = Some(flows.iter().map(|f| f.bytes_received).sum());
        aggregate.flows = flows;
        aggregate
    };
    if let Some(histogram) = &merged {
        iteration.latency = histogram.figures();
        iteration.latency_histogram = histogram.to_record();
    }
    if spec.local_cpu || spec.remote_cpu {
        let local_cpu = local.cpu.filter(|_| spec.local_cpu);
        let remote_cpu = remote_cpu.filter(|_| spec.remote_cpu);
        iteration.cpu = Some(cpu_figures(
            spec,
            &iteration,
            local_cpu.as_ref(),
            remote_cpu.as_ref(),
        ));
        iteration.cpu_detail = Some(CpuDetail {
            local: local_cpu,
            remote: remote_cpu,
        });
    }
    iteration
}
