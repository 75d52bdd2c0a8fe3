//! The context of `run`: one run in netperf's classic layout, as `bench`
//! prints it when the run ends and `archive show` prints it again. The
//! record as it is, and beside it what the template prints of it: the
//! banner's addresses, netperf's table laid out ([`netperf`]: socket
//! sizes right after setup, as netperf prints them), the sender's
//! TCP_INFO, what was lost, the CPU of each host, and for a reader who
//! asks the socket sizes at the end of the run, and for a run read from
//! the archive who stored it.

mod netperf;

use crate::render::text::plain;
use crate::views::units::Units;
use run_record::record::{HostCpu, Iteration, RunRecord, TcpInfoFigures};
use run_record::spec::{AddressFamily, TestKind};
use serde::Serialize;

/// What the `run` template is given.
#[derive(Debug, Serialize)]
pub struct RunContext<'a> {
    /// The canonical run record.
    pub record: &'a RunRecord,
    /// netperf's `-f` letter of throughput.
    pub units: &'static str,
    /// The unit of throughput as netperf's heads name it (`10^6bits/s`).
    pub unit_name: &'static str,
    /// False for netperf's `-P 0`: no banner and no column headers.
    pub banner: bool,
    /// False when the run was kept out of the archive (said next to its
    /// id, which `archive show` would not find).
    pub stored: bool,
    /// The data connection's local address, from the end of the last
    /// iteration; `null` for an imported run, which has none.
    pub local_address: Option<String>,
    /// The address of its peer (the record's endpoint for an imported
    /// run).
    pub peer_address: String,
    /// The address family as netperf's banner names it (`AF_INET`).
    pub address_family: &'static str,
    /// A request/response test (`TCP_RR`, `TCP_CRR`, `UDP_RR`).
    pub request_response: bool,
    /// Every interval `-I` asked for was reached (throughput, and the
    /// CPU utilisation that has one).
    pub confidence_met: bool,
    /// netperf's table of the run, laid out: column heads (with the
    /// banner) and figures.
    pub table: Vec<String>,
    /// TCP_STREAM and TCP_MAERTS: what TCP_INFO said of the sending end
    /// of the (first) connection when the test ended.
    pub sender: Option<SenderInfo>,
    /// UDP_STREAM: datagrams sent and not received, in every iteration.
    pub datagrams_lost: Option<u64>,
    /// UDP_STREAM of one iteration: the failed sends by error.
    pub send_errors: Vec<ErrnoCount>,
    /// UDP_RR: transactions that timed out, in every iteration.
    pub transactions_lost: Option<u64>,
    /// The CPU of each host over the last iteration, where measured.
    pub cpu_hosts: Vec<CpuHost<'a>>,
    /// Where a reader asks for them (`archive show`, `bench -v`): the
    /// socket buffers of the last iteration when the test ended, where
    /// one differs from its size after setup (the table's, as netperf
    /// prints it): an autotuned buffer grows as the test runs.
    pub sockets_at_end: Option<SocketsAtEnd>,
    /// The settings the run asked of the system (`--set`), each as the
    /// kernel granted it (`gso=on(off)` where it kept off), made plain.
    pub settings: Vec<String>,
    /// Notes under the table: the legend of a setting not granted, and
    /// what the CPU figures of a run in a VM are.
    pub notes: Vec<String>,
    /// For a run read from the archive (`archive show`): who stored it
    /// and from where (`alice from lab-host`), `unknown` for a run stored
    /// before the archive recorded it; `null` otherwise.
    pub stored_by: Option<String>,
}

/// The socket buffers of both ends when the test ended, bytes.
#[derive(Debug, Serialize)]
pub struct SocketsAtEnd {
    /// This end's send buffer.
    pub local_send: u64,
    /// This end's receive buffer.
    pub local_recv: u64,
    /// The far end's send buffer.
    pub remote_send: u64,
    /// The far end's receive buffer.
    pub remote_recv: u64,
}

/// The sending end's TCP_INFO.
#[derive(Debug, Serialize)]
pub struct SenderInfo {
    /// Of the first flow of several.
    pub first_flow: bool,
    /// The figures as the kernel gave them.
    pub tcp_info: TcpInfoFigures,
    /// Milliseconds limited by the receive window, then by the send
    /// buffer, where the kernel tells.
    pub limited_ms: Option<[f64; 2]>,
}

/// Failed sends of one error.
#[derive(Debug, Serialize)]
pub struct ErrnoCount {
    /// The error's name (`ENOBUFS`).
    pub name: String,
    /// How many sends failed with it.
    pub count: u64,
}

/// One host's CPU over the last iteration.
#[derive(Debug, Serialize)]
pub struct CpuHost<'a> {
    /// `local` or `remote`.
    pub name: &'static str,
    /// Its figures.
    pub cpu: &'a HostCpu,
    /// CPU seconds of the tool's data threads, user and system.
    pub tool_s: f64,
}

impl<'a> RunContext<'a> {
    /// The context of `record`, throughput in `units`; `banner` false
    /// for netperf's `-P 0`, `stored` false for a run kept out of the
    /// archive.
    pub fn new(record: &'a RunRecord, units: Units, banner: bool, stored: bool) -> RunContext<'a> {
        let spec = &record.spec;
        let last = record.iterations.last();
        let ends = last.and_then(|last| last.ends.as_ref());
        let udp_stream = spec.test == TestKind::UdpStream;
        RunContext {
            record,
            units: units.letter,
            unit_name: units.name,
            banner,
            stored,
            local_address: ends.map(|ends| ends.local.socket.local_address.clone()),
            peer_address: ends.map_or_else(
                || record.endpoint.host.clone(),
                |ends| ends.local.socket.peer_address.clone(),
            ),
            address_family: match spec.family {
                AddressFamily::Ipv4 => "AF_INET",
                AddressFamily::Ipv6 => "AF_INET6",
            },
            request_response: spec.test.is_request_response(),
            confidence_met: confidence_met(record),
            table: netperf::table(record, units, banner),
            sender: sender(record, last),
            datagrams_lost: udp_stream
                .then_some(record.summary.udp.as_ref())
                .flatten()
                .map(|udp| udp.messages_sent.saturating_sub(udp.messages_received)),
            send_errors: match (udp_stream, &record.iterations[..]) {
                (true, [only]) => only
                    .ends
                    .iter()
                    .flat_map(|ends| &ends.local.send_errors)
                    .map(|(name, count)| ErrnoCount {
                        name: name.clone(),
                        count: *count,
                    })
                    .collect(),
                _ => Vec::new(),
            },
            transactions_lost: (spec.test == TestKind::UdpRr).then(|| {
                record
                    .iterations
                    .iter()
                    .filter_map(|iteration| iteration.lost_transactions)
                    .sum()
            }),
            cpu_hosts: cpu_hosts(last),
            settings: record
                .spec
                .system
                .iter()
                .flat_map(|system| system.settings())
                .map(|setting| {
                    plain(&archive::figures::granted_words(
                        &setting,
                        record.system.as_ref(),
                    ))
                    .into_owned()
                })
                .collect(),
            notes: archive::figures::any_not_granted(&record.spec, record.system.as_ref())
                .then(|| archive::figures::NOT_GRANTED_LEGEND.to_string())
                .into_iter()
                .chain(crate::comparison::reproduce::cpu_caveat(&[record]))
                .collect(),
            sockets_at_end: None,
            stored_by: None,
        }
    }

    /// The context with who stored the run and from where, as the
    /// archive holds them (`None`: unknown).
    pub fn with_stored_by(
        mut self,
        stored_by: Option<&str>,
        stored_from: Option<&str>,
    ) -> RunContext<'a> {
        let who = stored_by.unwrap_or("unknown");
        let words = match stored_from {
            Some(from) => format!("{who} from {from}"),
            None => who.to_string(),
        };
        self.stored_by = Some(plain(&words).into_owned());
        self
    }

    /// The context with the socket buffers at the end of the run, where
    /// one differs from its size after setup: for a reader who asks.
    pub fn with_sockets_at_end(mut self) -> RunContext<'a> {
        let ends = self
            .record
            .iterations
            .last()
            .and_then(|last| last.ends.as_ref());
        self.sockets_at_end = ends
            .filter(|ends| {
                [&ends.local.socket, &ends.remote.socket]
                    .iter()
                    .flat_map(|socket| [&socket.send_buffer, &socket.recv_buffer])
                    .any(|buffer| buffer.at_end_bytes != buffer.after_setup_bytes)
            })
            .map(|ends| SocketsAtEnd {
                local_send: ends.local.socket.send_buffer.at_end_bytes,
                local_recv: ends.local.socket.recv_buffer.at_end_bytes,
                remote_send: ends.remote.socket.send_buffer.at_end_bytes,
                remote_recv: ends.remote.socket.recv_buffer.at_end_bytes,
            });
        self
    }
}

/// Whether every interval `-I` asked was reached; true without `-I`.
fn confidence_met(record: &RunRecord) -> bool {
    let summary = &record.summary;
    let cpu = summary.cpu_confidence.as_ref();
    summary
        .confidence
        .as_ref()
        .is_none_or(|confidence| confidence.met)
        && [
            cpu.and_then(|cpu| cpu.local.as_ref()),
            cpu.and_then(|cpu| cpu.remote.as_ref()),
        ]
        .into_iter()
        .flatten()
        .all(|confidence| confidence.met)
}

/// The sending end's TCP_INFO of a stream test: the first flow's where
/// the iteration has flows, else the connection's.
fn sender(record: &RunRecord, last: Option<&Iteration>) -> Option<SenderInfo> {
    let last = last?;
    let ends = match last.flows.first() {
        Some(flow) => &flow.ends,
        None => last.ends.as_ref()?,
    };
    let end = match record.spec.test {
        TestKind::TcpStream => &ends.local,
        TestKind::TcpMaerts => &ends.remote,
        _ => return None,
    };
    let tcp_info = end.tcp_info.clone()?;
    let limited_ms = tcp_info
        .rwnd_limited_us
        .zip(tcp_info.sndbuf_limited_us)
        .map(|(rwnd, sndbuf)| [rwnd as f64 / 1000.0, sndbuf as f64 / 1000.0]);
    Some(SenderInfo {
        first_flow: record.spec.flows > 1,
        tcp_info,
        limited_ms,
    })
}

/// The CPU of each host over `last`, local first.
fn cpu_hosts(last: Option<&Iteration>) -> Vec<CpuHost<'_>> {
    let Some(detail) = last.and_then(|last| last.cpu_detail.as_ref()) else {
        return Vec::new();
    };
    [("local", &detail.local), ("remote", &detail.remote)]
        .into_iter()
        .filter_map(|(name, cpu)| {
            let cpu = cpu.as_ref()?;
            Some(CpuHost {
                name,
                cpu,
                tool_s: cpu.process_user_s + cpu.process_system_s,
            })
        })
        .collect()
}
