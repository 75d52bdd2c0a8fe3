//! How one client thread shares the CPU among flows: the epoll set of a
//! thread that drives several TCP stream flows, and the turns of pinned
//! TCP_STREAM senders that each have a thread of their own.

use super::flow::{ClientFlow, Link, Step};
use super::plan::ClientPlan;
use crate::datapath::DataError;
use crate::datapath::epoll::{Epoll, Interest, POLL_PASSES};
use run_record::spec::{RunSpec, TestKind};

/// The epoll set of one thread's TCP stream flows, whose sockets it makes
/// nonblocking: a thread driving several flows sends on whichever can
/// take data instead of blocking on one while the others could.
///
/// The ready flows take turns, one message each per pass, as iperf3's
/// streams do. A flow served until its socket would block instead
/// (megabytes, with an autotuned send buffer) has its peer's ACKs
/// arrive while the sender holds its socket, so they queue to the
/// socket's backlog and are processed on the sender's CPU, the one that
/// limits a loopback test; in turn, each flow's ACKs find its socket
/// free and are processed where they are sent, by the receiver.
pub(crate) struct Poller {
    epoll: Epoll,
    /// The flows of the current turn (allocated once).
    turn: Vec<usize>,
}

impl Poller {
    /// Watches the TCP flows of `flows`, made nonblocking.
    pub(crate) fn new(flows: &mut [ClientFlow]) -> Result<Poller, DataError> {
        let epoll = Epoll::new(flows.len())?;
        for (idx, flow) in flows.iter_mut().enumerate() {
            let Link::Tcp(stream) = &flow.link else {
                continue;
            };
            let interest = if flow.send.is_empty() {
                Interest::Read
            } else {
                Interest::Write
            };
            epoll.add(stream, interest, idx)?;
            flow.polled = true;
        }
        Ok(Poller {
            epoll,
            turn: Vec::with_capacity(flows.len()),
        })
    }

    /// Waits up to `timeout_ms` for flows to be ready, then steps them in
    /// turn for up to `POLL_PASSES` passes; a flow leaves the turn when
    /// its socket would block or its peer has closed, and is then given
    /// to `ended`. A flow's error is given to `failed` with its index.
    pub(crate) fn serve(
        &mut self,
        flows: &mut [ClientFlow],
        plan: &ClientPlan<'_>,
        timeout_ms: i32,
        failed: &dyn Fn(usize, DataError) -> DataError,
        ended: &mut dyn FnMut(usize, &mut ClientFlow) -> Result<(), DataError>,
    ) -> Result<(), DataError> {
        let n_ready = self.epoll.wait(timeout_ms)?;
        self.turn.clear();
        for k in 0..n_ready {
            let idx = self.epoll.ready(k);
            if !flows[idx].finished {
                self.turn.push(idx);
            }
        }
        for _ in 0..POLL_PASSES {
            let mut k = 0;
            while let Some(&idx) = self.turn.get(k) {
                let flow = &mut flows[idx];
                match flow.step(plan).map_err(|err| failed(idx, err))? {
                    Step::Done | Step::Lost => k += 1,
                    Step::Blocked => {
                        self.turn.swap_remove(k);
                    }
                    Step::End => {
                        self.turn.swap_remove(k);
                        if let Link::Tcp(stream) = &flow.link {
                            self.epoll.remove(stream);
                        }
                        ended(idx, flow)?;
                    }
                }
            }
            if self.turn.is_empty() {
                break;
            }
        }
        Ok(())
    }
}

/// Milliseconds to wait for readiness before looking at the clock again.
pub(crate) fn poll_timeout_ms(now_ns: u64, until_ns: u64) -> i32 {
    (until_ns.saturating_sub(now_ns) / 1_000_000).clamp(1, 100) as i32
}

/// A pinned TCP_STREAM sender thread gives up its CPU to the other
/// flows' threads after about this many bytes.
const TURN_BYTES: u64 = 64 * 1024;

/// Turns of the client threads of a TCP_STREAM test pinned to one CPU,
/// a flow each (`--flows` without `--threads`). A sender blocks only
/// when its socket buffer is full, which with an autotuned buffer
/// (megabytes) is rare on loopback: without turns, one thread sends
/// while the others wait for the scheduler's tick, or forever under
/// SCHED_FIFO, with the cost told at [`Poller`] and flows that get
/// very unequal shares. Yielding every `TURN_BYTES` makes the threads
/// take turns message by message, as one thread's polled flows do.
pub(crate) struct Turns {
    take: bool,
    /// Bytes moved by the thread at its last turn.
    last: u64,
}

impl Turns {
    /// `shared`: other threads carry other flows of the test.
    pub(crate) fn new(spec: &RunSpec, shared: bool) -> Turns {
        Turns {
            take: shared && spec.test == TestKind::TcpStream && spec.cpu_pinning.local.is_some(),
            last: 0,
        }
    }

    /// Called after each round of steps with the bytes the thread's
    /// flows have moved so far.
    #[inline]
    pub(crate) fn after(&mut self, moved: u64) {
        if self.take && moved.wrapping_sub(self.last) >= TURN_BYTES {
            self.last = moved;
            std::thread::yield_now();
        }
    }

    /// The counts start again from zero.
    pub(crate) fn restart(&mut self) {
        self.last = 0;
    }
}
