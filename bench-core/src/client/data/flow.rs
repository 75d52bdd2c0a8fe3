//! One flow of the client: its socket (a TCP connection, a connected
//! UDP socket, or TCP_CRR's connection per transaction), its buffers and
//! counts, and its step: one message, or one transaction. The step is the
//! client's hot loop; the threads in [`super`] call it in turn.

use super::plan::ClientPlan;
use crate::datapath::counters::{Counters, clock_ns, count_send_error};
use crate::datapath::message::{finish_tcp, read_message, tcp_info_of};
use crate::datapath::{DataError, io_error};
use crate::latency::Histogram;
use crate::sockets::{
    self, PlainIo, PortCycle, complete_truth, is_timeout, new_socket, record_addresses,
    truth_after_setup,
};
use run_record::record::{EndReport, SocketTruth};
use run_record::spec::TestKind;
use rustix::io::Errno;
use socket2::{Socket, Type};
use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

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
                        Some(code) if code == Errno::ADDRINUSE.raw_os_error()
                            || code == Errno::ADDRNOTAVAIL.raw_os_error()
                    ) => {}
                done => return done,
            }
        }
    }
    connect_tcp(plan, server)
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
pub(crate) enum Link {
    Tcp(TcpStream),
    Udp(UdpSocket, Socket),
    /// TCP_CRR: a connection per transaction; the last one is kept until
    /// the next opens, for its socket truth. The local ports come from
    /// the cycle, when the kernel's range could be read.
    PerTransaction(Option<TcpStream>, Option<PortCycle>),
}

/// One client flow: its socket, buffers and counts.
pub(crate) struct ClientFlow {
    server: SocketAddr,
    pub(crate) link: Link,
    truth: SocketTruth,
    pub(crate) send: Vec<u8>,
    /// TCP_CRR: the secret, then the request.
    opening: Vec<u8>,
    receive: Vec<u8>,
    pub(crate) counters: Counters,
    pub(crate) latency: Option<Histogram>,
    /// The peer has closed (TCP_MAERTS).
    pub(crate) finished: bool,
    pub(crate) elapsed: Duration,
    /// First burst (TCP_RR `-b`): transactions that may be outstanding
    /// now, growing by one per response up to `first_burst + 1`.
    window: u32,
    /// Requests sent and not yet answered.
    outstanding: u32,
    /// When each outstanding request was sent, oldest first (burst only;
    /// sized for the whole window up front, so it never allocates).
    sent_at: VecDeque<u64>,
    /// When the request the last step completed was sent (burst only).
    pub(crate) started: Option<u64>,
    /// The socket is nonblocking, driven by an epoll loop.
    pub(crate) polled: bool,
}

/// What one step of a flow did.
#[derive(PartialEq, Eq)]
pub(crate) enum Step {
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
    /// Opens the flow to `server`; TCP_CRR opens its connections as it
    /// goes.
    pub(crate) fn open(plan: &ClientPlan<'_>, server: SocketAddr) -> Result<ClientFlow, DataError> {
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
                let ports = sockets::ephemeral_ports()
                    .map(|range| PortCycle::new(PortCycle::window_of(range), clock_ns()));
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
    pub(crate) fn step(&mut self, plan: &ClientPlan<'_>) -> Result<Step, DataError> {
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
    pub(crate) fn start_counting(&mut self) {
        self.counters = Counters::default();
        if let Some(histogram) = &mut self.latency {
            histogram.clear();
        }
    }

    /// Bytes sent and received so far.
    pub(crate) fn bytes_moved(&self) -> u64 {
        self.counters.bytes_sent + self.counters.bytes_received
    }

    /// Ends the flow after the window and reports it.
    pub(crate) fn finish(
        mut self,
        test: TestKind,
    ) -> Result<(EndReport, Option<Histogram>), DataError> {
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
