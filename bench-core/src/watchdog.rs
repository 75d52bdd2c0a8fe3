//! A deadline kept off the hot path: a thread that shuts sockets down
//! when a test runs past its hard deadline.
//!
//! A blocking receive with `SO_RCVTIMEO` arms and cancels a kernel timer
//! every time it sleeps, which on loopback is about 1% of a TCP_RR round
//! trip per end. Request/response loops therefore receive without a
//! timeout; the watchdog wakes them instead: `shutdown(2)` on a socket
//! ends every receive blocked on it (it returns end of file), however the
//! peer behaves. A stop flag can end the receive the same way, for a
//! server told over the control connection that the client is done.
//!
//! The same thread keeps UDP_RR's loss timer ([`Nudge`]): a datagram
//! lost leaves a receive blocked with no end of file to come, so a
//! receive whose thread makes no progress is interrupted with
//! `child_process::wake`'s signal, and the thread counts the loss.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{Scope, ScopedJoinHandle};
use std::time::{Duration, Instant};

/// How often a watchdog with a stop flag looks at it.
const STOP_POLL: Duration = Duration::from_millis(20);

/// Why a watchdog shut its sockets down.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fired {
    /// The hard deadline passed.
    Deadline,
    /// The stop flag was set.
    Stop,
}

const NOT_FIRED: u8 = 0;
const FIRED_DEADLINE: u8 = 1;
const FIRED_STOP: u8 = 2;

/// What the watchdog's thread and its owner share.
struct Shared {
    /// Set by the owner when the watched work is over.
    disarmed: Mutex<bool>,
    wake: Condvar,
    /// Set by the thread when it has shut the sockets down, and why.
    fired: AtomicU8,
}

/// Shuts its sockets down (both directions) at a deadline, or when a
/// stop flag is set, unless dropped before. It keeps duplicates of the
/// descriptors, so the sockets may be closed by their owners in any
/// order. Its thread lives in the caller's scope, so the stop flag may
/// be borrowed.
pub(crate) struct Watchdog<'scope> {
    shared: Arc<Shared>,
    thread: Option<ScopedJoinHandle<'scope, ()>>,
}

/// Wakes a thread blocked in a receive that makes no progress: the
/// receive returns `EINTR`, which the thread takes as a timeout. This is
/// UDP_RR's loss timer without a receive timeout: the receive is woken
/// once the thread's progress has not moved for one to two `every`.
pub(crate) struct Nudge<'env> {
    /// How often progress is looked at.
    pub every: Duration,
    /// A count the thread raises as it works.
    pub progress: &'env AtomicU64,
    /// The thread to wake, [`child_process::wake::current_thread`]
    /// called on it.
    pub thread: child_process::wake::Thread,
}

impl<'scope> Watchdog<'scope> {
    /// Watches `sockets` until `deadline` or until `stop` is set.
    pub(crate) fn arm<'env>(
        scope: &'scope Scope<'scope, 'env>,
        sockets: &[BorrowedFd<'_>],
        deadline: Instant,
        stop: Option<&'env AtomicBool>,
    ) -> io::Result<Watchdog<'scope>> {
        Watchdog::arm_nudging(scope, sockets, deadline, stop, None)
    }

    /// [`Watchdog::arm`] that also nudges a thread whose progress stalls.
    /// The thread must outlive the watchdog (drop it first).
    pub(crate) fn arm_nudging<'env>(
        scope: &'scope Scope<'scope, 'env>,
        sockets: &[BorrowedFd<'_>],
        deadline: Instant,
        stop: Option<&'env AtomicBool>,
        nudge: Option<Nudge<'env>>,
    ) -> io::Result<Watchdog<'scope>> {
        if nudge.is_some() {
            child_process::wake::install()?;
        }
        let fds = sockets
            .iter()
            .map(BorrowedFd::try_clone_to_owned)
            .collect::<io::Result<Vec<OwnedFd>>>()?;
        let shared = Arc::new(Shared {
            disarmed: Mutex::new(false),
            wake: Condvar::new(),
            fired: AtomicU8::new(NOT_FIRED),
        });
        let theirs = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("watchdog".into())
            .spawn_scoped(scope, move || watch(&theirs, &fds, deadline, stop, nudge))?;
        Ok(Watchdog {
            shared,
            thread: Some(thread),
        })
    }

    /// Whether, and why, the sockets were shut down: an end of file or
    /// error seen since is the watchdog's doing.
    pub(crate) fn fired(&self) -> Option<Fired> {
        match self.shared.fired.load(Ordering::Acquire) {
            FIRED_DEADLINE => Some(Fired::Deadline),
            FIRED_STOP => Some(Fired::Stop),
            _ => None,
        }
    }

    /// Whether the hard deadline passed and the sockets were shut down.
    pub(crate) fn overran(&self) -> bool {
        self.fired() == Some(Fired::Deadline)
    }
}

fn watch(
    shared: &Shared,
    fds: &[OwnedFd],
    deadline: Instant,
    stop: Option<&AtomicBool>,
    nudge: Option<Nudge<'_>>,
) {
    let Ok(mut disarmed) = shared.disarmed.lock() else {
        return;
    };
    let mut next_nudge = nudge.as_ref().map(|nudge| Instant::now() + nudge.every);
    let mut last_progress = nudge
        .as_ref()
        .map(|nudge| nudge.progress.load(Ordering::Relaxed));
    let why = loop {
        if *disarmed {
            return;
        }
        if stop.is_some_and(|stop| stop.load(Ordering::Relaxed)) {
            break FIRED_STOP;
        }
        let now = Instant::now();
        if now >= deadline {
            break FIRED_DEADLINE;
        }
        if let (Some(nudge), Some(due)) = (&nudge, next_nudge)
            && now >= due
        {
            let progress = nudge.progress.load(Ordering::Relaxed);
            if last_progress == Some(progress) {
                // SAFETY: the thread outlives the watchdog (its owner
                // drops the watchdog first, which joins this thread).
                unsafe { child_process::wake::wake(nudge.thread) };
            }
            last_progress = Some(progress);
            next_nudge = Some(now + nudge.every);
        }
        let mut wait = deadline - now;
        if stop.is_some() {
            wait = wait.min(STOP_POLL);
        }
        if let Some(due) = next_nudge {
            wait = wait.min(due.saturating_duration_since(now));
        }
        disarmed = match shared.wake.wait_timeout(disarmed, wait) {
            Ok((guard, _)) => guard,
            Err(_) => return,
        };
    };
    shared.fired.store(why, Ordering::Release);
    for fd in fds {
        // A failure (the socket is not connected any more) leaves nothing
        // to wake.
        let _ = rustix::net::shutdown(fd, rustix::net::Shutdown::Both);
    }
}

impl Drop for Watchdog<'_> {
    fn drop(&mut self) {
        if let Ok(mut disarmed) = self.shared.disarmed.lock() {
            *disarmed = true;
        }
        self.shared.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            // The thread cannot panic; if it did, there is nothing to add.
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::net::{TcpListener, TcpStream, UdpSocket};
    use std::os::fd::AsFd;

    fn pair() -> (TcpStream, TcpStream) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (server, _) = listener.accept().unwrap();
        (client, server)
    }

    #[test]
    fn a_blocked_tcp_receive_without_timeout_ends_at_the_deadline() {
        let (mut client, _server) = pair();
        let started = Instant::now();
        std::thread::scope(|scope| {
            let deadline = started + Duration::from_millis(100);
            let watchdog = Watchdog::arm(scope, &[client.as_fd()], deadline, None).unwrap();
            let mut byte = [0u8; 1];
            // The peer sends nothing: only the watchdog ends this read.
            assert_eq!(client.read(&mut byte).unwrap(), 0);
            assert_eq!(watchdog.fired(), Some(Fired::Deadline));
            assert!(watchdog.overran());
        });
        assert!(started.elapsed() >= Duration::from_millis(100));
    }

    #[test]
    fn a_blocked_udp_receive_without_timeout_ends_when_told_to_stop() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(peer.local_addr().unwrap()).unwrap();
        let stop = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let deadline = Instant::now() + Duration::from_secs(30);
            let watchdog = Watchdog::arm(scope, &[socket.as_fd()], deadline, Some(&stop)).unwrap();
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                stop.store(true, Ordering::Relaxed);
            });
            let mut byte = [0u8; 1];
            // Nothing comes: the stop flag ends this receive.
            assert_eq!(socket.recv(&mut byte).unwrap(), 0);
            assert_eq!(watchdog.fired(), Some(Fired::Stop));
            assert!(!watchdog.overran());
        });
    }

    #[test]
    fn a_nudge_interrupts_a_receive_that_makes_no_progress() {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
        socket.connect(peer.local_addr().unwrap()).unwrap();
        let progress = AtomicU64::new(0);
        let started = Instant::now();
        std::thread::scope(|scope| {
            let nudge = Nudge {
                every: Duration::from_millis(20),
                progress: &progress,
                thread: child_process::wake::current_thread(),
            };
            let deadline = started + Duration::from_secs(30);
            let watchdog =
                Watchdog::arm_nudging(scope, &[socket.as_fd()], deadline, None, Some(nudge))
                    .unwrap();
            let mut byte = [0u8; 1];
            // Nothing comes and nothing moves: the receive is woken with
            // EINTR, the socket left open.
            let err = socket.recv(&mut byte).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::Interrupted);
            assert_eq!(watchdog.fired(), None);
            peer.send_to(b"x", socket.local_addr().unwrap()).unwrap();
            progress.store(1, Ordering::Relaxed);
            assert_eq!(socket.recv(&mut byte).unwrap(), 1);
            drop(watchdog);
        });
        assert!(started.elapsed() < Duration::from_secs(20));
    }

    #[test]
    fn dropped_before_the_deadline_it_leaves_the_sockets_alone() {
        let (mut client, mut server) = pair();
        std::thread::scope(|scope| {
            let deadline = Instant::now() + Duration::from_millis(50);
            let watchdog = Watchdog::arm(scope, &[client.as_fd()], deadline, None).unwrap();
            drop(watchdog);
        });
        std::thread::sleep(Duration::from_millis(100));
        std::io::Write::write_all(&mut server, b"x").unwrap();
        let mut byte = [0u8; 1];
        assert_eq!(client.read(&mut byte).unwrap(), 1);
    }

    #[test]
    fn the_sockets_may_close_before_the_watchdog_drops() {
        let (client, _server) = pair();
        std::thread::scope(|scope| {
            let deadline = Instant::now() + Duration::from_millis(20);
            let watchdog = Watchdog::arm(scope, &[client.as_fd()], deadline, None).unwrap();
            drop(client);
            std::thread::sleep(Duration::from_millis(50));
            assert!(watchdog.overran());
        });
    }
}
