//! SIGINT and SIGTERM while commands run: the handler kills the process
//! group of the build or measure command that is running (it lives in a
//! group of its own, so the terminal's Ctrl-C never reaches it) and
//! remembers the signal; the runner and the engine see it at their next
//! check, journal the interruption and stop with [`Interrupted`].
//!
//! A second signal, or the first one in [`Mode::ExitNow`], ends the
//! process at once with exit code 130 (128 + SIGINT, as shells report
//! an interrupted command): nothing is half-written, since every archive
//! write is a transaction.

use rustix::process::{Pid, Signal};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// The exit code of an interrupted command.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The signal received, 0 while none was.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// The process group of the command running, 0 while none runs.
static RUNNING_GROUP: AtomicI32 = AtomicI32::new(0);
/// Whether the first signal ends the process at once.
static EXIT_NOW: AtomicBool = AtomicBool::new(false);

/// The run was interrupted by a signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("interrupted by {}", signal_name(*.signal))]
pub struct Interrupted {
    /// The signal number.
    pub signal: i32,
}

/// What the first signal does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Kill the running command's group and let the caller stop cleanly
    /// (journal, then exit 130); a second signal exits at once.
    Journal,
    /// Kill the running command's group and exit 130 at once: for
    /// commands with nothing to journal.
    ExitNow,
}

/// Installs the handler for SIGINT and SIGTERM. A SIGINT that was
/// ignored when the process started (a background job of a
/// non-interactive shell) stays ignored, as shells expect.
pub fn install(mode: Mode) {
    EXIT_NOW.store(mode == Mode::ExitNow, Ordering::SeqCst);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // Hand-written: rustix's sigaction is in its unstable, hidden runtime API.
        // SAFETY: sigaction with a zeroed, then filled, struct; the
        // handler only touches atomics and calls kill and _exit, which
        // are async-signal-safe.
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut old) != 0 {
                continue;
            }
            if signal == libc::SIGINT && old.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut());
        }
    }
}

extern "C" fn on_signal(signal: libc::c_int) {
    let earlier = SIGNAL.swap(signal, Ordering::SeqCst);
    // kill is async-signal-safe (a bare system call); a stale group only
    // fails.
    let group = RUNNING_GROUP.load(Ordering::SeqCst);
    if group > 0
        && let Some(group) = Pid::from_raw(group)
    {
        let _ = rustix::process::kill_process_group(group, Signal::KILL);
    }
    if earlier != 0 || EXIT_NOW.load(Ordering::SeqCst) {
        // Hand-written: rustix's exit_group is runtime-only; std's exit is not signal-safe.
        // SAFETY: _exit is async-signal-safe and skips atexit handlers.
        unsafe { libc::_exit(i32::from(EXIT_INTERRUPTED)) }
    }
}

/// The interruption, once a signal came.
pub fn check() -> Result<(), Interrupted> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => Ok(()),
        signal => Err(Interrupted { signal }),
    }
}

/// Records `group` as the process group a signal must kill (0: none):
/// the build or measure command here, a guest's runner elsewhere.
pub fn set_running_group(group: i32) {
    RUNNING_GROUP.store(group, Ordering::SeqCst);
}

/// `SIGINT`, `SIGTERM` or the number.
pub fn signal_name(signal: i32) -> String {
    match signal {
        libc::SIGINT => "SIGINT".to_string(),
        libc::SIGTERM => "SIGTERM".to_string(),
        other => format!("signal {other}"),
    }
}
