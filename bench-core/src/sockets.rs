//! Socket set-up shared by both ends: buffer sizes and what the kernel made
//! of them, addresses, port ranges, CPU pinning.

use crate::protocol::PortRange;
use run_record::record::{BufferTruth, SocketTruth, TcpInfoFigures};
use rustix::net::{self, RecvFlags, SendFlags};
use rustix::thread::{CpuSet, sched_setaffinity};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};
use std::io::{self, Read, Write};
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};

/// Creates a socket of `kind` for the family of `ip`, with `buffer` (when
/// given) set as both its send and receive buffer, as netperf's `-s` and
/// `-S` do. IPv6 sockets are IPv6-only, so an IPv6 test never runs over
/// IPv4-mapped addresses.
pub fn new_socket(ip: IpAddr, kind: Type, buffer: Option<u32>) -> io::Result<Socket> {
    let (domain, protocol) = match (ip, kind) {
        (IpAddr::V4(_), kind) if kind == Type::STREAM => (Domain::IPV4, Protocol::TCP),
        (IpAddr::V4(_), _) => (Domain::IPV4, Protocol::UDP),
        (IpAddr::V6(_), kind) if kind == Type::STREAM => (Domain::IPV6, Protocol::TCP),
        (IpAddr::V6(_), _) => (Domain::IPV6, Protocol::UDP),
    };
    let socket = Socket::new(domain, kind, Some(protocol))?;
    if ip.is_ipv6() {
        socket.set_only_v6(true)?;
    }
    if let Some(bytes) = buffer {
        socket.set_send_buffer_size(bytes as usize)?;
        socket.set_recv_buffer_size(bytes as usize)?;
    }
    Ok(socket)
}

/// Reads the buffers back right after set-up.
pub fn truth_after_setup(socket: &Socket, requested: Option<u32>) -> io::Result<SocketTruth> {
    let send = socket.send_buffer_size()? as u64;
    let recv = socket.recv_buffer_size()? as u64;
    Ok(SocketTruth {
        local_address: String::new(),
        peer_address: String::new(),
        send_buffer: BufferTruth {
            requested_bytes: requested.map(u64::from),
            after_setup_bytes: send,
            at_end_bytes: send,
        },
        recv_buffer: BufferTruth {
            requested_bytes: requested.map(u64::from),
            after_setup_bytes: recv,
            at_end_bytes: recv,
        },
    })
}

/// Records the addresses the kernel used, right after connect or accept
/// (or, for a UDP server, the first datagram from `peer`).
pub fn record_addresses(
    truth: &mut SocketTruth,
    socket: &Socket,
    peer: Option<SocketAddr>,
) -> io::Result<()> {
    truth.local_address = address_of(&socket.local_addr()?).to_string();
    let peer = match peer {
        Some(peer) => peer,
        None => address_of(&socket.peer_addr()?),
    };
    truth.peer_address = peer.to_string();
    Ok(())
}

/// Reads the buffer sizes at the end of a test.
pub fn complete_truth(truth: &mut SocketTruth, socket: &Socket) -> io::Result<()> {
    truth.send_buffer.at_end_bytes = socket.send_buffer_size()? as u64;
    truth.recv_buffer.at_end_bytes = socket.recv_buffer_size()? as u64;
    Ok(())
}

/// The socket address of a socket2 address (unspecified when it is not
/// an IP address, which cannot happen for the sockets made here).
pub fn address_of(addr: &SockAddr) -> SocketAddr {
    addr.as_socket()
        .unwrap_or_else(|| SocketAddr::new(IpAddr::from([0, 0, 0, 0]), 0))
}

/// Binds `socket` to `ip` and a port in `range`, or to any free port.
pub fn bind_in_range(socket: &Socket, ip: IpAddr, range: Option<PortRange>) -> io::Result<u16> {
    let Some(range) = range else {
        socket.bind(&SocketAddr::new(ip, 0).into())?;
        return Ok(address_of(&socket.local_addr()?).port());
    };
    let mut last_error = None;
    for port in range.low..=range.high {
        match socket.bind(&SocketAddr::new(ip, port).into()) {
            Ok(()) => return Ok(port),
            Err(err) => last_error = Some(err),
        }
    }
    Err(last_error.unwrap_or_else(|| io::Error::from(io::ErrorKind::AddrInUse)))
}

/// The kernel's ephemeral port range for connections from this network
/// namespace (`net.ipv4.ip_local_port_range`, which IPv6 shares), or
/// `None` when it cannot be read.
pub fn ephemeral_ports() -> Option<PortRange> {
    let text = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    parse_ephemeral_ports(&text)
}

/// The two numbers of `ip_local_port_range` ("32768\t60999").
fn parse_ephemeral_ports(text: &str) -> Option<PortRange> {
    let mut numbers = text.split_whitespace().map(str::parse::<u16>);
    let (Some(Ok(low)), Some(Ok(high)), None) = (numbers.next(), numbers.next(), numbers.next())
    else {
        return None;
    };
    (low >= 1 && low <= high).then_some(PortRange { low, high })
}

/// The most ports a TCP_CRR client's cycle takes ([`PortCycle::window_of`]).
pub const CYCLE_MAX_PORTS: u32 = 1024;

/// The local ports of a client that opens a connection per transaction
/// (TCP_CRR): each connection is bound to the next port of the range,
/// round and round, instead of letting `connect()` pick one.
///
/// Every such connection leaves its client socket in TIME_WAIT. The
/// kernel's own choice searches the range for a port whose TIME_WAIT
/// socket it may take over (`tcp_tw_reuse`: only one older than
/// `tcp_tw_reuse_delay`), and searches longer as the range fills, until
/// `connect()` fails: the rate of a run would depend on the runs before
/// it. A socket bound explicitly, with `SO_REUSEADDR` as its TIME_WAIT
/// predecessor had, takes that predecessor over at `connect()` (TCP
/// timestamps keep the old and the new connection apart), so the cost of
/// a connection stays the same however full the range is. netperf's
/// TCP_CRR does the same.
///
/// A port bound explicitly is one `connect()` and `bind()` to port 0 then
/// pass over for as long as its TIME_WAIT socket lives (a minute): a
/// cycle over the whole range would leave every other program of the
/// host, and the next test, without a port for that minute. So the
/// cycle keeps to the top of the range ([`PortCycle::window_of`]).
#[derive(Debug, Clone)]
pub struct PortCycle {
    range: PortRange,
    next: u16,
}

impl PortCycle {
    /// A cycle over `range` that starts at the port `seed` falls on, so
    /// that flows and runs started together spread over the range.
    pub fn new(range: PortRange, seed: u64) -> PortCycle {
        let span = u64::from(range.high - range.low) + 1;
        PortCycle {
            range,
            next: range.low + (seed % span) as u16,
        }
    }

    /// The ports of `range` a cycle takes: its top quarter, at most
    /// [`CYCLE_MAX_PORTS`]. A connection takes its port's TIME_WAIT
    /// socket over however soon it comes round again, so a few ports
    /// serve any rate; the rest of the range stays the kernel's.
    pub fn window_of(range: PortRange) -> PortRange {
        let span = u32::from(range.high - range.low) + 1;
        let width = (span / 4).clamp(1, CYCLE_MAX_PORTS);
        PortRange {
            low: range.high - (width - 1) as u16,
            high: range.high,
        }
    }

    /// Ports in the range.
    pub fn n_ports(&self) -> u32 {
        u32::from(self.range.high - self.range.low) + 1
    }

    /// The next port.
    pub fn take(&mut self) -> u16 {
        let port = self.next;
        self.next = if port >= self.range.high {
            self.range.low
        } else {
            port + 1
        };
        port
    }
}

/// The interface traffic to `ip` leaves by, as far as this module can
/// tell without a routing lookup: `lo` for loopback addresses.
pub fn egress_interface(ip: IpAddr) -> Option<String> {
    ip.is_loopback().then(|| "lo".to_string())
}

/// Binds the calling thread to `cpu`.
pub fn pin_current_thread(cpu: u32) -> io::Result<()> {
    let cpu = cpu as usize;
    if cpu >= CpuSet::MAX_CPU {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let mut set = CpuSet::new();
    set.set(cpu);
    // No pid: the calling thread.
    Ok(sched_setaffinity(None, &set)?)
}

/// The start of Linux's `struct tcp_info` (include/uapi/linux/tcp.h) up
/// to `tcpi_sndbuf_limited` (Linux 4.10). Declared here because the libc
/// crate's copy stops earlier; the kernel fills as much as it has and says
/// how much, so older kernels leave the later fields out.
#[repr(C)]
#[derive(Default)]
struct KernelTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    flags: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
}

/// `TCP_INFO` of a connected TCP socket. Written by hand: neither
/// socket2 nor rustix reads `TCP_INFO`.
pub fn tcp_info(socket: &Socket) -> io::Result<TcpInfoFigures> {
    let mut info = KernelTcpInfo::default();
    let mut length = std::mem::size_of::<KernelTcpInfo>() as libc::socklen_t;
    // SAFETY: the buffer is a live, writable KernelTcpInfo of `length`
    // bytes; the kernel writes at most that many and updates `length`.
    let result = unsafe {
        libc::getsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut KernelTcpInfo).cast(),
            &mut length,
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    // JSON integers must stay within 2^53; a counter beyond that is
    // clamped rather than left to fail the record.
    let safe = |value: u64| value.min((1 << 53) - 1);
    let filled = length as usize;
    let has = |end_offset: usize| filled >= end_offset;
    let delivery_end = std::mem::offset_of!(KernelTcpInfo, delivery_rate) + 8;
    let limited_end = std::mem::size_of::<KernelTcpInfo>();
    Ok(TcpInfoFigures {
        total_retrans: u64::from(info.total_retrans),
        rtt_us: u64::from(info.rtt),
        rttvar_us: u64::from(info.rttvar),
        snd_cwnd: u64::from(info.snd_cwnd),
        snd_mss: u64::from(info.snd_mss),
        delivery_rate_bps: has(delivery_end).then(|| safe(info.delivery_rate.saturating_mul(8))),
        busy_time_us: has(limited_end).then_some(safe(info.busy_time)),
        rwnd_limited_us: has(limited_end).then_some(safe(info.rwnd_limited)),
        sndbuf_limited_us: has(limited_end).then_some(safe(info.sndbuf_limited)),
    })
}

/// Asks the kernel to report errors of a UDP socket to its sender
/// (`IP_RECVERR`, or `IPV6_RECVERR` for an IPv6 socket): a send that
/// finds the device queue full then fails with `ENOBUFS` instead of
/// succeeding while the datagram is dropped. Written by hand: neither
/// socket2 nor rustix sets `IP_RECVERR`.
pub fn set_recverr(socket: &Socket, ip: IpAddr) -> io::Result<()> {
    let (level, name) = match ip {
        IpAddr::V4(_) => (libc::IPPROTO_IP, libc::IP_RECVERR),
        IpAddr::V6(_) => (libc::IPPROTO_IPV6, libc::IPV6_RECVERR),
    };
    let on: libc::c_int = 1;
    // SAFETY: the option value is a live c_int of the length given.
    let result = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One `recv` on `socket` that does not wait: `WouldBlock` when no
/// datagram is queued. Lets a receiver poll its queue for a short while
/// before it sleeps, so that a sender does not have to wake it for every
/// datagram.
pub fn recv_nowait(socket: &impl AsFd, buffer: &mut [u8]) -> io::Result<usize> {
    let (got, _) = net::recv(socket, buffer, RecvFlags::DONTWAIT)?;
    Ok(got)
}

/// A connected socket read and written by the system calls themselves
/// (`recvfrom(2)`, `sendto(2)` with `MSG_NOSIGNAL`, as the standard
/// library's sockets do), not by the C library's `recv` and `send`:
/// rustix's `recv` and `send`, whose Linux backend (`linux_raw`, the
/// default) makes the system call itself, without the C library.
///
/// glibc's `recv` and `send` are thread cancellation points: around
/// every system call they switch asynchronous cancellation on and off,
/// two atomic operations on the thread's state. Nothing here cancels
/// threads, and in a request/response loop on one CPU (UDP_RR -T 0,0)
/// those two cost 1.6% of the CPU time (perf: 1.17% and 0.47%), more
/// than the clock read and the latency histogram together. The
/// request/response loops use this; their results and errors are the
/// same as through the standard library.
pub struct PlainIo<'fd>(BorrowedFd<'fd>);

impl<'fd> PlainIo<'fd> {
    /// The socket behind `socket`, borrowed.
    pub fn of(socket: &'fd impl AsFd) -> PlainIo<'fd> {
        PlainIo(socket.as_fd())
    }
}

impl Read for PlainIo<'_> {
    #[inline]
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        // The system call itself, with no address asked for.
        let (got, _) = net::recv(self.0, buffer, RecvFlags::empty())?;
        Ok(got)
    }
}

impl Write for PlainIo<'_> {
    #[inline]
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        // The system call itself, with no address given.
        Ok(net::send(self.0, buffer, SendFlags::NOSIGNAL)?)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// True for timeouts of a socket with `SO_RCVTIMEO`/`SO_SNDTIMEO` set.
pub fn is_timeout(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requested_buffer_reads_back_doubled() {
        let socket = new_socket(IpAddr::from([127, 0, 0, 1]), Type::STREAM, Some(65_536)).unwrap();
        let truth = truth_after_setup(&socket, Some(65_536)).unwrap();
        assert_eq!(truth.send_buffer.requested_bytes, Some(65_536));
        // Linux doubles the request, within net.core.wmem_max.
        assert!(truth.send_buffer.after_setup_bytes >= 4_608);
        assert!(truth.recv_buffer.after_setup_bytes >= 2_304);
    }

    #[test]
    fn plain_io_moves_what_the_standard_library_would() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        PlainIo::of(&client).write_all(b"ping").unwrap();
        let mut got = [0u8; 4];
        PlainIo::of(&server).read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
        server.write_all(b"pong").unwrap();
        client.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"pong");
        // End of file, then the error of a socket shut down both ways.
        server.shutdown(std::net::Shutdown::Write).unwrap();
        assert_eq!(PlainIo::of(&client).read(&mut got).unwrap(), 0);
        client.shutdown(std::net::Shutdown::Both).unwrap();
        let err = PlainIo::of(&client).write(b"x").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::BrokenPipe);

        let udp_a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let udp_b = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        udp_a.connect(udp_b.local_addr().unwrap()).unwrap();
        udp_b.connect(udp_a.local_addr().unwrap()).unwrap();
        assert_eq!(PlainIo::of(&udp_a).write(b"datagram").unwrap(), 8);
        let mut datagram = [0u8; 16];
        assert_eq!(PlainIo::of(&udp_b).read(&mut datagram).unwrap(), 8);
        assert_eq!(&datagram[..8], b"datagram");
        udp_b.set_nonblocking(true).unwrap();
        let err = PlainIo::of(&udp_b).read(&mut datagram).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        // A blocking socket polled without waiting: nothing queued, then
        // a datagram.
        let err = recv_nowait(&udp_a, &mut datagram).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::WouldBlock);
        PlainIo::of(&udp_b).write_all(b"again").unwrap();
        let mut got = None;
        for _ in 0..1000 {
            match recv_nowait(&udp_a, &mut datagram) {
                Ok(n) => {
                    got = Some(n);
                    break;
                }
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                Err(err) => panic!("{err}"),
            }
        }
        assert_eq!(got, Some(5));
        assert_eq!(&datagram[..5], b"again");
    }

    #[test]
    fn pins_a_thread_to_one_cpu() {
        let allowed = rustix::thread::sched_getaffinity(None).unwrap();
        let cpu = (0..CpuSet::MAX_CPU)
            .find(|&cpu| allowed.is_set(cpu))
            .unwrap();
        std::thread::spawn(move || {
            pin_current_thread(cpu as u32).unwrap();
            let now = rustix::thread::sched_getaffinity(None).unwrap();
            assert_eq!(now.count(), 1);
            assert!(now.is_set(cpu));
        })
        .join()
        .unwrap();
        let err = pin_current_thread(CpuSet::MAX_CPU as u32).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn reads_the_kernel_port_range() {
        assert_eq!(
            parse_ephemeral_ports("32768\t60999\n"),
            Some(PortRange {
                low: 32768,
                high: 60999
            })
        );
        assert_eq!(
            parse_ephemeral_ports("40000 40000"),
            Some(PortRange {
                low: 40000,
                high: 40000
            })
        );
        for bad in [
            "",
            "32768",
            "60999 32768",
            "0 10",
            "1 2 3",
            "a b",
            "1 70000",
        ] {
            assert_eq!(parse_ephemeral_ports(bad), None, "{bad:?}");
        }
        // This host's own range reads.
        assert!(ephemeral_ports().is_some());
    }

    #[test]
    fn port_cycle_goes_round_the_range_from_its_seed() {
        let range = PortRange {
            low: 40000,
            high: 40002,
        };
        let mut cycle = PortCycle::new(range, 7);
        assert_eq!(cycle.n_ports(), 3);
        let ports: Vec<u16> = (0..5).map(|_| cycle.take()).collect();
        assert_eq!(ports, [40001, 40002, 40000, 40001, 40002]);
        let mut whole = PortCycle::new(
            PortRange {
                low: 1,
                high: 65535,
            },
            u64::MAX,
        );
        let first = whole.take();
        assert_eq!(first, 1 + (u64::MAX % 65535) as u16);
        assert_eq!(whole.n_ports(), 65535);
    }

    #[test]
    fn the_cycle_keeps_to_the_top_quarter_of_the_range() {
        let window = |low, high| {
            let window = PortCycle::window_of(PortRange { low, high });
            (window.low, window.high)
        };
        // Linux's default range: 1024 ports at its top.
        assert_eq!(window(32768, 60999), (59976, 60999));
        // A narrow range: its top quarter.
        assert_eq!(window(40000, 40007), (40006, 40007));
        assert_eq!(window(40000, 40099), (40075, 40099));
        // One or three ports: one.
        assert_eq!(window(40000, 40000), (40000, 40000));
        assert_eq!(window(40000, 40002), (40002, 40002));
        assert_eq!(window(1, 65535), (64512, 65535));
    }

    #[test]
    fn binds_within_a_range() {
        let ip = IpAddr::from([127, 0, 0, 1]);
        let first = new_socket(ip, Type::STREAM, None).unwrap();
        let port = bind_in_range(&first, ip, None).unwrap();
        // Wide enough that the TIME_WAIT sockets of the TCP_CRR tests
        // running beside this one (each client cycles through up to 1024
        // ports at the top of the ephemeral range) cannot fill it.
        let range = PortRange {
            low: port,
            high: port.saturating_add(20_000),
        };
        let second = new_socket(ip, Type::STREAM, None).unwrap();
        let bound = bind_in_range(&second, ip, Some(range)).unwrap();
        assert!(bound > port && bound <= range.high);
    }
}
