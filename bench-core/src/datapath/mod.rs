//! The data phase of every test: what both ends share. The hot loops
//! themselves sit with their end: the client's in `client::data`, the
//! server's in `server::data`.
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
//!
//! The parts: `gate` (the start gate and the common window), `counters`
//! (what a flow counts, and the clock), `meter` (counting over the
//! window, for the server's loops), `message` (whole messages and the end
//! of a TCP flow), `epoll` (the epoll set of the loops that drive several
//! flows from one thread).

pub(crate) mod counters;
pub(crate) mod epoll;
pub(crate) mod gate;
pub(crate) mod message;
pub(crate) mod meter;

use crate::cpu::CpuError;
use crate::sockets;
use std::io;
use std::net::SocketAddr;
use std::time::Duration;

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

/// The error of a failed socket call: an end of file in the middle of a
/// message is the peer's close.
pub(crate) fn io_error(action: &'static str) -> impl Fn(io::Error) -> DataError {
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

/// `source`, named after its flow when the test has several.
pub(crate) fn flow_error(flow_idx: Option<usize>, n_flows: usize, source: DataError) -> DataError {
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
