//! Running the user's build and measure commands: `sh -c` in the bisect
//! worktree, in a process group of their own, with a timeout that kills
//! the whole group, so that a hung measurement becomes a skip and not a
//! hang.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How often a running command is polled.
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// How long to wait for the output pipes after the command ended.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);
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
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {}
            Err(source) => {
                kill_group(&mut child);
                return Err(RunnerError::Wait {
                    command: command.to_string(),
                    source,
                });
            }
        }
        if timeout.is_some_and(|limit| started.elapsed() >= limit) {
            kill_group(&mut child);
            break None;
        }
        std::thread::sleep(POLL_INTERVAL);
    };
    let Some(status) = status else {
        return Ok(CommandOutcome::TimedOut);
    };
    // A child that left the group may hold the pipes open; do not wait for
    // it forever.
    let stdout = stdout.recv_timeout(DRAIN_TIMEOUT).unwrap_or_default();
    let stderr = stderr.recv_timeout(DRAIN_TIMEOUT).unwrap_or_default();
    let tail_start = stderr.len().saturating_sub(STDERR_TAIL_BYTES);
    Ok(CommandOutcome::Exited {
        code: status.code(),
        stdout,
        stderr_tail: String::from_utf8_lossy(&stderr[tail_start..]).into_owned(),
    })
}

fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut bytes);
        }
        let _ = sender.send(bytes);
    });
    receiver
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
