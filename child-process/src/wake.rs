//! Waking a thread blocked in a system call: a signal whose handler does
//! nothing, installed without `SA_RESTART` and sent to that one thread,
//! makes its blocked call return `EINTR`. bench-core's UDP_RR loop takes
//! that as its loss timer, which a receive timeout would cost a kernel
//! timer per transaction.
//!
//! Written with `sigaction` by hand, not with signal-hook: signal-hook
//! installs every handler with `SA_RESTART`, under which the kernel would
//! restart the receive instead of interrupting it; rustix has
//! `sigaction` and `pthread_kill` only in its runtime module, for
//! programs without a C library.

use std::io;
use std::sync::OnceLock;

/// The signal that wakes a thread. Ignored by default, so one sent from
/// elsewhere before the handler is installed does no harm.
const WAKE_SIGNAL: libc::c_int = libc::SIGURG;

extern "C" fn on_wake(_: libc::c_int) {}

/// A thread that [`wake`] can reach.
#[derive(Clone, Copy, Debug)]
pub struct Thread(libc::pthread_t);

/// The calling thread. Neither std (only through a `JoinHandle`) nor
/// rustix gives its `pthread_t`.
pub fn current_thread() -> Thread {
    // SAFETY: always valid to call.
    Thread(unsafe { libc::pthread_self() })
}

/// Installs the handler that lets [`wake`] interrupt a blocked system
/// call; once per process, later calls return the first outcome.
pub fn install() -> io::Result<()> {
    static INSTALLED: OnceLock<Result<(), i32>> = OnceLock::new();
    let done = INSTALLED.get_or_init(|| {
        // SAFETY: a zeroed sigaction is valid; the handler does nothing,
        // which is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_wake as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = 0;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(WAKE_SIGNAL, &action, std::ptr::null_mut()) != 0 {
                return Err(io::Error::last_os_error().raw_os_error().unwrap_or(0));
            }
        }
        Ok(())
    });
    done.map_err(io::Error::from_raw_os_error)
}

/// Interrupts the system call `thread` is blocked in (after [`install`]).
///
/// # Safety
///
/// `thread` must still be running: a `pthread_t` of a thread that has
/// ended may name another one, or nothing.
pub unsafe fn wake(thread: Thread) {
    // SAFETY: the caller keeps the thread alive; a signal with an empty
    // handler does nothing but interrupt.
    unsafe { libc::pthread_kill(thread.0, WAKE_SIGNAL) };
}
