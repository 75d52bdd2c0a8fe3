//! Running the user's build and measure commands: `sh -c` in the bisect
//! worktree, in a process group of their own, with a timeout that kills
//! the whole group, so that a hung measurement becomes a skip and not a
//! hang.

use crate::interrupt::{self, Interrupted};
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

/// How often a running command is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// How long to wait for the output pipes to close after the command
/// ended. A daemon the command left behind may hold them open for ever:
/// then what the command itself printed (all in the pipe once it exited)
/// is taken without waiting for the end of the file.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);
/// Once the command ended, how long its output may stay quiet before it
/// counts as all read.
const DRAIN_QUIET: Duration = Duration::from_millis(200);
/// How long a command left running by a killed netbisect may take to end
/// before a new one is refused.
const STALE_GRACE: Duration = Duration::from_secs(10);
/// How much of stderr is kept for messages.
const STDERR_TAIL_BYTES: usize = 2000;

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
        /// Everything it wrote to stdout.
        stdout: Vec<u8>,
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
    interrupt::check().map_err(RunnerError::Interrupted)?;
    if let Some(marker) = marker {
        check_marker(marker)?;
    }
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(dir)
        .envs(env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|source| RunnerError::Spawn {
            command: command.to_string(),
            source,
        })?;
    let group = i32::try_from(child.id()).unwrap_or(0);
    interrupt::set_running_group(group);
    let outcome = supervise(&mut child, command, timeout, marker);
    interrupt::set_running_group(0);
    if let Some(marker) = marker {
        let _ = std::fs::remove_file(marker);
    }
    outcome
}

fn supervise(
    child: &mut Child,
    command: &str,
    timeout: Option<Duration>,
    marker: Option<&Path>,
) -> Result<CommandOutcome, RunnerError> {
    if let Some(marker) = marker
        && let Err(source) = std::fs::write(marker, format!("{}\n", child.id()))
    {
        kill_group(child);
        return Err(RunnerError::Marker {
            path: marker.to_path_buf(),
            source,
        });
    }
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        if let Err(interrupted) = interrupt::check() {
            kill_group(child);
            return Err(RunnerError::Interrupted(interrupted));
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(source) => {
                kill_group(child);
                return Err(RunnerError::Wait {
                    command: command.to_string(),
                    source,
                });
            }
        }
        if timeout.is_some_and(|limit| started.elapsed() >= limit) {
            kill_group(child);
            break None;
        }
        std::thread::sleep(POLL_INTERVAL);
    };
    let Some(status) = status else {
        return Ok(CommandOutcome::TimedOut);
    };
    // A child that left the group may hold the pipes open; do not wait for
    // it forever, and keep what the command printed before it ended.
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    let stdout = stdout.collect(deadline);
    let stderr = stderr.collect(deadline);
    let tail_start = stderr.len().saturating_sub(STDERR_TAIL_BYTES);
    Ok(CommandOutcome::Exited {
        code: status.code(),
        stdout,
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
    // SAFETY: kill with signal 0 only checks that the group exists.
    let alive = || group > 0 && unsafe { libc::kill(-group, 0) } == 0;
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

/// What a drain thread has read of a pipe so far, and whether it reached
/// the end.
struct Drained {
    bytes: Arc<Mutex<(Vec<u8>, Instant)>>,
    done: mpsc::Receiver<()>,
}

impl Drained {
    /// Everything read by the end of the pipe or, when the pipe stays open
    /// (a daemon holds it), by the moment it has been quiet for
    /// [`DRAIN_QUIET`] or `deadline` passed.
    fn collect(self, deadline: Instant) -> Vec<u8> {
        let ended = Instant::now();
        loop {
            let now = Instant::now();
            let wait = POLL_INTERVAL.min(deadline.saturating_duration_since(now));
            match self.done.recv_timeout(wait) {
                Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            let last_read = self.bytes.lock().map(|guard| guard.1).unwrap_or(now);
            let quiet_since = last_read.max(ended);
            if Instant::now() >= deadline || quiet_since.elapsed() >= DRAIN_QUIET {
                break;
            }
        }
        match self.bytes.lock() {
            Ok(guard) => guard.0.clone(),
            Err(poisoned) => poisoned.into_inner().0.clone(),
        }
    }
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> Drained {
    let bytes = Arc::new(Mutex::new((Vec::new(), Instant::now())));
    let (sender, done) = mpsc::channel();
    let shared = Arc::clone(&bytes);
    std::thread::spawn(move || {
        if let Some(mut pipe) = pipe {
            let mut buffer = [0u8; 8192];
            loop {
                match pipe.read(&mut buffer) {
                    Ok(0) => break,
                    Ok(n_read) => {
                        if let Ok(mut guard) = shared.lock() {
                            guard.0.extend_from_slice(&buffer[..n_read]);
                            guard.1 = Instant::now();
                        }
                    }
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        }
        let _ = sender.send(());
    });
    Drained { bytes, done }
}

fn kill_group(child: &mut Child) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // The child leads its own group (process_group(0)), so -pid names
        // the group: the shell and everything it started.
        // SAFETY: kill has no memory effects; a stale group id only makes
        // it fail with ESRCH.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
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
mod tests {
    use super::*;

    #[test]
    fn captures_stdout_and_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let outcome =
            run_command("echo hello; echo oops >&2; exit 3", dir.path(), &[], None).unwrap();
        let CommandOutcome::Exited {
            code,
            stdout,
            stderr_tail,
        } = outcome
        else {
            panic!("timed out");
        };
        assert_eq!(code, Some(3));
        assert_eq!(stdout, b"hello\n");
        assert_eq!(stderr_tail, "oops\n");
    }

    #[test]
    fn a_hung_group_is_killed_at_the_timeout() {
        let dir = tempfile::tempdir().unwrap();
        let started = Instant::now();
        // The grandchild keeps the pipe open: only killing the group ends it.
        let outcome = run_command(
            "sleep 30 & sleep 30",
            dir.path(),
            &[],
            Some(Duration::from_millis(300)),
        )
        .unwrap();
        assert_eq!(outcome, CommandOutcome::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn output_is_kept_when_a_daemon_holds_the_pipe() {
        let dir = tempfile::tempdir().unwrap();
        // The grandchild outlives the command with stdout open: what the
        // command printed is still taken, without waiting for the daemon.
        let outcome = run_command(
            "sleep 8 & echo '{\"record\": 1}'; echo done >&2",
            dir.path(),
            &[],
            Some(Duration::from_secs(30)),
        )
        .unwrap();
        let CommandOutcome::Exited {
            code,
            stdout,
            stderr_tail,
        } = outcome
        else {
            panic!("timed out");
        };
        assert_eq!(code, Some(0));
        assert_eq!(stdout, b"{\"record\": 1}\n");
        assert_eq!(stderr_tail, "done\n");
    }

    #[test]
    fn a_live_group_in_the_marker_blocks_a_second_command() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("running");
        let mut sleeper = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        std::fs::write(&marker, format!("{}\n", sleeper.id())).unwrap();
        let err =
            run_command_marked("touch ran", dir.path(), &[], None, Some(&marker)).unwrap_err();
        assert!(matches!(err, RunnerError::StillRunning { .. }), "{err}");
        assert!(!dir.path().join("ran").exists());
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        // A dead group is stale: the command runs and the marker goes.
        let outcome =
            run_command_marked("touch ran", dir.path(), &[], None, Some(&marker)).unwrap();
        assert!(matches!(
            outcome,
            CommandOutcome::Exited { code: Some(0), .. }
        ));
        assert!(dir.path().join("ran").exists());
        assert!(!marker.exists());
    }

    #[test]
    fn missing_programs_are_found_before_running() {
        let dir = tempfile::tempdir().unwrap();
        assert!(check_command("sh -c true", dir.path()).is_ok());
        let err = check_command("no-such-program-xyz --flag", dir.path()).unwrap_err();
        assert!(err.to_string().contains("no-such-program-xyz"));
        assert!(check_command("./build.sh", dir.path()).is_err());
        std::fs::write(dir.path().join("build.sh"), "true").unwrap();
        assert!(check_command("./build.sh", dir.path()).is_ok());
    }
}
