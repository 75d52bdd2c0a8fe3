//! Running the user's build and measure commands: `sh -c` in a given
//! directory (the bisect worktree, or the tree `verdict` runs in), in a
//! process group of their own, with a timeout that kills the whole group,
//! so that a hung measurement becomes a skip and not a hang.

use crate::group::GroupChild;
use crate::interrupt::{self, Interrupted};
use rustix::event::{PollFd, PollFlags, Timespec};
use rustix::fs::OFlags;
use rustix::io::Errno;
use rustix::process::Pid;
use std::io::Read;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often a running command is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// How long the output of a command that ended may take to read when a
/// process it left behind keeps writing to the pipe. Reading stops at the
/// first empty pipe, so this bounds only a writer that never pauses.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a command left running by a killed netbisect may take to end
/// before a new one is refused.
const STALE_GRACE: Duration = Duration::from_secs(10);
/// How much of stderr is kept for messages.
const STDERR_TAIL_BYTES: usize = 2000;
/// The most of a command's stdout kept: what a command prints there is
/// one run record (a few KiB to a few MiB); past this the rest is read
/// and dropped, so that the command is never blocked, and the outcome
/// says so.
pub const MAX_STDOUT_BYTES: usize = 64 << 20;

/// Why a command could not be run at all.
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// `sh` could not be started.
    #[error("cannot start sh for '{command}'")]
    Spawn {
        /// The command.
        command: String,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// Waiting for the command failed.
    #[error("cannot wait for '{command}'")]
    Wait {
        /// The command.
        command: String,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// A signal stopped netbisect; the command's group was killed.
    #[error("the command was stopped")]
    Interrupted(#[source] Interrupted),
    /// A command started by an earlier netbisect is still running.
    #[error(
        "a command started earlier is still running (process group {group}, \
         recorded in {}); wait for it to end or stop it with `kill -- -{group}`",
        marker.display()
    )]
    StillRunning {
        /// Its process group.
        group: i32,
        /// The marker file that records it.
        marker: PathBuf,
    },
    /// The marker file could not be written.
    #[error("cannot write {}", path.display())]
    Marker {
        /// The marker file.
        path: PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// The command's program is not there.
    #[error("command not found: '{program}' (from '{command}')")]
    NotFound {
        /// The program looked for.
        program: String,
        /// The command.
        command: String,
    },
}

/// How a command ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CommandOutcome {
    /// It exited (or was killed by a signal: `code` is then `None`).
    Exited {
        /// Exit code.
        code: Option<i32>,
        /// What it wrote to stdout, up to [`MAX_STDOUT_BYTES`].
        stdout: Vec<u8>,
        /// It wrote more than [`MAX_STDOUT_BYTES`] to stdout.
        stdout_cut: bool,
        /// The end of what it wrote to stderr.
        stderr_tail: String,
    },
    /// It ran past the timeout; its process group was killed.
    TimedOut,
}

/// Runs `command` with `sh -c` in `dir`, in its own process group, with
/// `env` added to the environment; kills the group after `timeout`.
pub fn run_command(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    timeout: Option<Duration>,
) -> Result<CommandOutcome, RunnerError> {
    run_command_marked(command, dir, env, timeout, None)
}

/// [`run_command`], recording the command's process group in `marker`
/// while it runs. When `marker` names a group that is still alive (its
/// netbisect was killed with it running), nothing is started.
pub fn run_command_marked(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    timeout: Option<Duration>,
    marker: Option<&Path>,
) -> Result<CommandOutcome, RunnerError> {
    run(command, dir, env, timeout, marker, None)
}

/// [`run_command`], with `input` on the command's stdin (a report handed
/// to a mail command, `sendmail -t` style), written by a thread of its
/// own so that a command that reads late, or not at all, never blocks
/// netbisect; the stdin closes once `input` is written.
pub fn run_command_with_input(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    timeout: Option<Duration>,
    input: Vec<u8>,
) -> Result<CommandOutcome, RunnerError> {
    run(command, dir, env, timeout, None, Some(input))
}

fn run(
    command: &str,
    dir: &Path,
    env: &[(String, String)],
    timeout: Option<Duration>,
    marker: Option<&Path>,
    input: Option<Vec<u8>>,
) -> Result<CommandOutcome, RunnerError> {
    interrupt::check().map_err(RunnerError::Interrupted)?;
    if let Some(marker) = marker {
        check_marker(marker)?;
    }
    let stdin = if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let mut child = GroupChild::spawn(
        Command::new("sh")
            .arg("-c")
            .arg(command)
            .current_dir(dir)
            .envs(env.iter().map(|(key, value)| (key, value)))
            .stdin(stdin)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .map_err(|source| RunnerError::Spawn {
        command: command.to_string(),
        source,
    })?;
    if let (Some(input), Some(mut pipe)) = (input, child.child().stdin.take()) {
        // A command that exits without reading makes the write fail with
        // a broken pipe: what it did is its exit code's to say.
        std::thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut pipe, &input);
        });
    }
    let outcome = supervise(child, command, timeout, marker);
    if let Some(marker) = marker {
        let _ = std::fs::remove_file(marker);
    }
    outcome
}

/// Waits for `child` to end, reading its output meanwhile; kills its group
/// at the timeout or on a signal. A command that ended leaves what it
/// started running.
fn supervise(
    mut child: GroupChild,
    command: &str,
    timeout: Option<Duration>,
    marker: Option<&Path>,
) -> Result<CommandOutcome, RunnerError> {
    if let Some(marker) = marker
        && let Err(source) = std::fs::write(marker, format!("{}\n", child.child().id()))
    {
        return Err(RunnerError::Marker {
            path: marker.to_path_buf(),
            source,
        });
    }
    let stdout = drain(child.child().stdout.take(), Keep::Head(MAX_STDOUT_BYTES));
    let stderr = drain(child.child().stderr.take(), Keep::Tail(STDERR_TAIL_BYTES));
    let started = Instant::now();
    let status = loop {
        if let Err(interrupted) = interrupt::check() {
            return Err(RunnerError::Interrupted(interrupted));
        }
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) => {}
            Err(source) => {
                return Err(RunnerError::Wait {
                    command: command.to_string(),
                    source,
                });
            }
        }
        if timeout.is_some_and(|limit| started.elapsed() >= limit) {
            return Ok(CommandOutcome::TimedOut);
        }
        std::thread::sleep(POLL_INTERVAL);
    };
    child.release();
    // A child that left the group may hold the pipes open; do not wait for
    // it, and keep what the command printed before it ended.
    let (stdout, stdout_cut) = stdout.collect();
    let (stderr, _) = stderr.collect();
    let tail_start = stderr.len().saturating_sub(STDERR_TAIL_BYTES);
    Ok(CommandOutcome::Exited {
        code: status.code(),
        stdout,
        stdout_cut,
        stderr_tail: String::from_utf8_lossy(&stderr[tail_start..]).into_owned(),
    })
}

/// Waits up to [`STALE_GRACE`] for the process group `marker` names to
/// end (a command whose netbisect was killed finishes on its own); refuses
/// to start while it is still alive.
fn check_marker(marker: &Path) -> Result<(), RunnerError> {
    let Ok(text) = std::fs::read_to_string(marker) else {
        return Ok(());
    };
    let Ok(group) = text.trim().parse::<i32>() else {
        return Ok(());
    };
    // Signal 0 only checks that the group exists.
    let alive = || {
        group > 0
            && Pid::from_raw(group)
                .is_some_and(|pid| rustix::process::test_kill_process_group(pid).is_ok())
    };
    let deadline = Instant::now() + STALE_GRACE;
    while alive() {
        if Instant::now() >= deadline {
            return Err(RunnerError::StillRunning {
                group,
                marker: marker.to_path_buf(),
            });
        }
        interrupt::check().map_err(RunnerError::Interrupted)?;
        std::thread::sleep(POLL_INTERVAL);
    }
    Ok(())
}

/// A pipe read by a thread of its own while the command runs, so that a
/// command printing more than the pipe holds is never blocked.
struct Drained {
    bytes: Arc<Mutex<Kept>>,
    /// Set once the command ended: the thread then takes what is in the
    /// pipe and stops.
    ended: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drained {
    /// Everything the command wrote before it ended. Whatever it wrote is
    /// in the pipe by then, so the thread reads until the end of the pipe
    /// or, when a process the command left behind holds it open, until
    /// the pipe is empty: no wait for the daemon, and nothing lost however
    /// late a loaded machine runs the thread.
    /// Returns the bytes kept and whether any were dropped; they are
    /// moved out, never copied, so a large output is held once.
    fn collect(mut self) -> (Vec<u8>, bool) {
        self.ended.store(true, Ordering::Release);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let mut guard = match self.bytes.lock() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        (std::mem::take(&mut guard.bytes), guard.dropped)
    }
}

impl Drop for Drained {
    /// A command killed at its timeout is not read to the end: its thread
    /// stops at once.
    fn drop(&mut self) {
        self.ended.store(true, Ordering::Release);
    }
}

/// What of a pipe is kept.
#[derive(Clone, Copy)]
enum Keep {
    /// Its first bytes, up to this many.
    Head(usize),
    /// Its last bytes, at least this many (at most twice as many).
    Tail(usize),
}

/// The bytes kept of a pipe.
struct Kept {
    keep: Keep,
    bytes: Vec<u8>,
    /// Some were dropped.
    dropped: bool,
}

impl Kept {
    fn add(&mut self, read: &[u8]) {
        match self.keep {
            Keep::Head(cap) => {
                let room = cap.saturating_sub(self.bytes.len());
                self.dropped |= read.len() > room;
                self.bytes.extend_from_slice(&read[..read.len().min(room)]);
            }
            Keep::Tail(n_bytes) => {
                self.bytes.extend_from_slice(read);
                if self.bytes.len() > 2 * n_bytes {
                    let cut = self.bytes.len() - n_bytes;
                    self.bytes.drain(..cut);
                    self.dropped = true;
                }
            }
        }
    }
}

fn drain<R: Read + AsFd + Send + 'static>(pipe: Option<R>, keep: Keep) -> Drained {
    let bytes = Arc::new(Mutex::new(Kept {
        keep,
        bytes: Vec::new(),
        dropped: false,
    }));
    let ended = Arc::new(AtomicBool::new(false));
    let thread = pipe.map(|pipe| {
        let (bytes, ended) = (Arc::clone(&bytes), Arc::clone(&ended));
        std::thread::spawn(move || read_pipe(pipe, &bytes, &ended))
    });
    Drained {
        bytes,
        ended,
        thread,
    }
}

/// Reads `pipe` into `bytes` to its end, or once `ended` is set until it
/// is empty (or [`DRAIN_TIMEOUT`] has passed with a writer that never
/// pauses).
fn read_pipe(mut pipe: impl Read + AsFd, bytes: &Mutex<Kept>, ended: &AtomicBool) {
    let poll_timeout = Timespec::try_from(POLL_INTERVAL).unwrap_or(Timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    });
    let mut buffer = [0u8; 8192];
    let mut give_up = None;
    loop {
        let emptying = ended.load(Ordering::Acquire);
        if emptying && give_up.is_none() {
            // From now on a read that would wait returns at once: the pipe
            // is empty.
            let nonblocking = rustix::fs::fcntl_getfl(&pipe)
                .and_then(|flags| rustix::fs::fcntl_setfl(&pipe, flags | OFlags::NONBLOCK));
            if nonblocking.is_err() {
                return;
            }
            give_up = Some(Instant::now() + DRAIN_TIMEOUT);
        }
        if give_up.is_some_and(|limit| Instant::now() >= limit) {
            return;
        }
        if !emptying {
            // Wait for data, and now and then look whether the command
            // ended.
            let mut poll_fds = [PollFd::new(&pipe, PollFlags::IN)];
            match rustix::event::poll(&mut poll_fds, Some(&poll_timeout)) {
                Ok(0) | Err(Errno::INTR) => continue,
                Ok(_) => {}
                Err(_) => return,
            }
        }
        match pipe.read(&mut buffer) {
            Ok(0) => return,
            Ok(n_read) => match bytes.lock() {
                Ok(mut guard) => guard.add(&buffer[..n_read]),
                Err(_) => return,
            },
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// Shell words that are not programs.
const SHELL_WORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "for", "while", "until", "do", "done", "case", "esac", "{",
    "}", "(", "!", "exec", "cd", "echo", "exit", "export", "set", "test", "[", ":", "true",
    "false", "printf", "read", "eval", ".", "env", "command", "trap", "ulimit", "umask", "wait",
];

/// Checks, before anything runs, that the program `command` starts with
/// exists: on `PATH` for a bare name, relative to `dir` for a path. Shell
/// syntax and builtins are accepted as they are.
pub fn check_command(command: &str, dir: &Path) -> Result<(), RunnerError> {
    let Some(program) = command
        .split_whitespace()
        .find(|word| !word.contains('=') || word.starts_with('='))
    else {
        return Ok(());
    };
    if SHELL_WORDS.contains(&program)
        || program.contains(['$', '`', '"', '\'', ';', '|', '&', '(', ')', '<', '>', '*'])
    {
        return Ok(());
    }
    let found = if program.contains('/') {
        let path = Path::new(program);
        if path.is_absolute() {
            path.exists()
        } else {
            dir.join(path).exists()
        }
    } else {
        std::env::var_os("PATH").is_some_and(|paths| {
            std::env::split_paths(&paths).any(|entry: PathBuf| entry.join(program).is_file())
        })
    };
    if found {
        Ok(())
    } else {
        Err(RunnerError::NotFound {
            program: program.to_string(),
            command: command.to_string(),
        })
    }
}

#[cfg(test)]
mod tests;
