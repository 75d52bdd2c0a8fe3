//! SIGINT and SIGTERM while children run. [`install`] starts a thread
//! that waits for either signal; on the first, it kills the process group
//! of every child being tracked (each leads a group of its own, so the
//! terminal's Ctrl-C never reaches it) and remembers the signal, which the
//! runner, the VM runner and the bisect engine see at their next
//! [`check`]: they journal the interruption and stop with
//! [`Interrupted`].
//!
//! A second signal, or the first one in [`Mode::ExitNow`], ends the
//! process at once with exit code 130 (128 + SIGINT, as shells report an
//! interrupted command): nothing is half-written, since every archive
//! write is a transaction. What the process changed beyond itself and
//! registered with [`before_exit`] (a setting of the host's interface made
//! for a test) is put back first.
//!
//! Why a thread (signal-hook's iterator, whose handler only writes to a
//! pipe) and not a handler of our own: the thread may take a lock, so any
//! number of groups can be tracked at once, and no unsafe code is needed.
//! It acts within a scheduling delay of the signal; the exit it makes is
//! `_exit`, which runs no atexit handler of a library that another
//! thread may be inside.

use rustix::process::{Pid, Signal};
use signal_hook::consts::{SIGINT, SIGTERM};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// The exit code of an interrupted command.
pub const EXIT_INTERRUPTED: u8 = 130;

/// The signal received, 0 while none was.
static SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Whether the first signal ends the process at once.
static EXIT_NOW: AtomicBool = AtomicBool::new(false);
/// The process groups a signal must kill.
static TRACKED: Mutex<Vec<i32>> = Mutex::new(Vec::new());
/// The work done before the process ends at a signal, by id.
static BEFORE_EXIT: Mutex<Vec<(u64, Work)>> = Mutex::new(Vec::new());
/// The id of the next work registered.
static NEXT_WORK_ID: AtomicU64 = AtomicU64::new(0);
/// The outcome of the one installation.
static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();

/// The run was interrupted by a signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("interrupted by {}", signal_name(*.signal))]
pub struct Interrupted {
    /// The signal number.
    pub signal: i32,
}

/// The watcher could not be installed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("cannot install the SIGINT/SIGTERM handler: {0}")]
pub struct InstallError(String);

/// Work registered with [`before_exit`].
type Work = Arc<dyn Fn() + Send + Sync>;

/// What the first signal does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Kill the tracked groups and let the caller stop cleanly (journal,
    /// then exit 130); a second signal exits at once.
    Journal,
    /// Kill the tracked groups and exit 130 at once: for commands with
    /// nothing to journal.
    ExitNow,
}

/// Installs the watcher of SIGINT and SIGTERM, once per process; a later
/// call only changes the mode. A SIGINT that was ignored when the process
/// started (a background job of a non-interactive shell) stays ignored,
/// as shells expect.
pub fn install(mode: Mode) -> Result<(), InstallError> {
    EXIT_NOW.store(mode == Mode::ExitNow, Ordering::SeqCst);
    INSTALLED
        .get_or_init(|| start_watcher().map_err(|err| err.to_string()))
        .clone()
        .map_err(InstallError)
}

fn start_watcher() -> std::io::Result<()> {
    let mut signals = vec![SIGTERM];
    if !signal_ignored(SIGINT) {
        signals.push(SIGINT);
    }
    let mut watcher = signal_hook::iterator::Signals::new(&signals)?;
    std::thread::Builder::new()
        .name("signals".to_string())
        .spawn(move || {
            for signal in watcher.forever() {
                on_signal(signal);
            }
        })?;
    Ok(())
}

/// Whether `signal` is ignored in this process, from the `SigIgn` mask of
/// /proc/self/status (a mask of bits, bit N-1 for signal N). Unreadable:
/// not ignored.
fn signal_ignored(signal: i32) -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| {
            u32::try_from(signal - 1).is_ok_and(|bit| bit < 64 && mask & (1 << bit) != 0)
        })
}

fn on_signal(signal: i32) {
    let earlier = SIGNAL.swap(signal, Ordering::SeqCst);
    for &group in tracked().iter() {
        // A group that is gone already only makes this fail with ESRCH.
        if let Some(group) = Pid::from_raw(group) {
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
    }
    if earlier != 0 || EXIT_NOW.load(Ordering::SeqCst) {
        run_before_exit();
        signal_hook::low_level::exit(i32::from(EXIT_INTERRUPTED));
    }
}

/// Does every work registered with [`before_exit`], outside the lock, so
/// that a work may drop a registration.
fn run_before_exit() {
    let works: Vec<Work> = registered_works()
        .iter()
        .map(|(_, work)| Arc::clone(work))
        .collect();
    for work in works {
        work();
    }
}

fn registered_works() -> MutexGuard<'static, Vec<(u64, Work)>> {
    BEFORE_EXIT
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A work done before the process ends at a signal, for as long as this
/// lives.
#[derive(Debug)]
pub struct BeforeExit {
    id: u64,
}

/// Registers `work`, which puts back something this process changed
/// beyond itself, to be done before a signal ends the process (the second
/// one, or the first in [`Mode::ExitNow`]), until the returned guard is
/// dropped. It runs on the watcher's thread while the process's other
/// threads still run, so what it shares with them takes a lock; it never
/// runs at an ordinary exit, where its owner puts things back itself. The
/// process ends right after, so it must not wait for long.
pub fn before_exit(work: impl Fn() + Send + Sync + 'static) -> BeforeExit {
    let id = NEXT_WORK_ID.fetch_add(1, Ordering::Relaxed);
    registered_works().push((id, Arc::new(work)));
    BeforeExit { id }
}

impl Drop for BeforeExit {
    fn drop(&mut self) {
        registered_works().retain(|(id, _)| *id != self.id);
    }
}

fn tracked() -> MutexGuard<'static, Vec<i32>> {
    TRACKED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The interruption, once a signal came.
pub fn check() -> Result<(), Interrupted> {
    match SIGNAL.load(Ordering::SeqCst) {
        0 => Ok(()),
        signal => Err(Interrupted { signal }),
    }
}

/// A process group a signal kills, for as long as this lives.
#[derive(Debug)]
pub struct Tracked {
    group: i32,
}

/// Tracks `group`: a SIGINT or SIGTERM kills it until the returned guard
/// is dropped. A signal that came already kills it at once.
pub fn track(group: Pid) -> Tracked {
    tracked().push(group.as_raw_nonzero().get());
    if check().is_err() {
        let _ = rustix::process::kill_process_group(group, Signal::KILL);
    }
    Tracked {
        group: group.as_raw_nonzero().get(),
    }
}

impl Drop for Tracked {
    fn drop(&mut self) {
        let mut groups = tracked();
        if let Some(idx) = groups.iter().position(|&group| group == self.group) {
            groups.swap_remove(idx);
        }
    }
}

/// `SIGINT`, `SIGTERM` or the number.
pub fn signal_name(signal: i32) -> String {
    match signal {
        SIGINT => "SIGINT".to_string(),
        SIGTERM => "SIGTERM".to_string(),
        other => format!("signal {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ignored_mask_is_read_per_signal() {
        // SIGKILL can never be ignored; signal 0 and numbers past the
        // mask are not signals.
        assert!(!signal_ignored(9));
        assert!(!signal_ignored(0));
        assert!(!signal_ignored(65));
    }

    #[test]
    fn registered_work_is_done_until_its_guard_is_dropped() {
        let count = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&count);
        let guard = before_exit(move || {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        run_before_exit();
        assert_eq!(count.load(Ordering::SeqCst), 1);
        drop(guard);
        run_before_exit();
        assert_eq!(count.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn signal_names() {
        assert_eq!(signal_name(SIGINT), "SIGINT");
        assert_eq!(signal_name(SIGTERM), "SIGTERM");
        assert_eq!(signal_name(1), "signal 1");
    }
}
