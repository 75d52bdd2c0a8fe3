//! The epoll set of a thread that drives several TCP flows: the client's
//! stream senders and receivers of `--threads` below `--flows`, and the
//! server's receiver of a pinned multi-flow TCP_STREAM.

use super::{DataError, io_error};
use rustix::event::Timespec;
use rustix::event::epoll::{self, CreateFlags, Event, EventData, EventFlags};
use std::io;
use std::net::TcpStream;
use std::os::fd::OwnedFd;

/// Passes over the ready flows per wait for readiness: each pass steps
/// every flow that can still move data once.
pub(crate) const POLL_PASSES: u32 = 16;

/// An epoll set of TCP sockets, each known by an index; the sockets
/// added are made nonblocking. Level-triggered: a socket that can still
/// move data is reported again by the next wait.
pub(crate) struct Epoll {
    fd: OwnedFd,
    events: Vec<Event>,
}

/// Readiness to wait for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Interest {
    /// Data to read (or the peer's end of file).
    Read,
    /// Room to write.
    Write,
}

impl Epoll {
    /// A set for up to `capacity` sockets.
    pub(crate) fn new(capacity: usize) -> Result<Epoll, DataError> {
        let fd = epoll::create(CreateFlags::CLOEXEC)
            .map_err(|err| io_error("epoll_create1")(err.into()))?;
        let empty = Event {
            flags: EventFlags::empty(),
            data: EventData::new_u64(0),
        };
        Ok(Epoll {
            fd,
            events: vec![empty; capacity.max(1)],
        })
    }

    /// Watches `stream` for `interest` as socket `idx`.
    pub(crate) fn add(
        &self,
        stream: &TcpStream,
        interest: Interest,
        idx: usize,
    ) -> Result<(), DataError> {
        stream
            .set_nonblocking(true)
            .map_err(io_error("setting O_NONBLOCK"))?;
        let flags = match interest {
            Interest::Read => EventFlags::IN,
            Interest::Write => EventFlags::OUT,
        };
        epoll::add(&self.fd, stream, EventData::new_u64(idx as u64), flags)
            .map_err(|err| io_error("epoll_ctl")(err.into()))
    }

    /// Waits up to `timeout_ms` for sockets to be ready; their indices
    /// are then `self.ready(0..n)`.
    pub(crate) fn wait(&mut self, timeout_ms: i32) -> Result<usize, DataError> {
        let timeout = Timespec {
            tv_sec: i64::from(timeout_ms / 1000),
            tv_nsec: i64::from(timeout_ms % 1000) * 1_000_000,
        };
        match epoll::wait(&self.fd, &mut self.events[..], Some(&timeout)) {
            Ok(n) => Ok(n),
            Err(err) => {
                let err = io::Error::from(err);
                if err.kind() == io::ErrorKind::Interrupted {
                    return Ok(0);
                }
                Err(io_error("epoll_wait")(err))
            }
        }
    }

    /// The index of the `k`th ready socket of the last wait.
    pub(crate) fn ready(&self, k: usize) -> usize {
        let data = self.events[k].data.u64();
        data as usize
    }

    /// Stops watching a socket whose peer has closed. A failure leaves
    /// the socket watched; its owner marks it finished and skips it
    /// anyway.
    pub(crate) fn remove(&self, stream: &TcpStream) {
        let _ = epoll::delete(&self.fd, stream);
    }
}
