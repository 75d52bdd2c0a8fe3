//! Exit codes, documented in GUIDE.md and in `netbisect --help`:
//!
//! | code | meaning                                                     |
//! |------|-------------------------------------------------------------|
//! | 0    | success; for verdicts, "old" (like the good side)           |
//! | 1    | a verdict of "regression" / "new" (like the bad side);      |
//! |      | `history --check`, `compare --check`: a change for the worse |
//! | 2    | usage or input error: bad arguments, unreadable input files |
//! | 3    | runtime failure: network, file system, a failed child      |
//! | 4    | bisect refused: the ends do not differ enough               |
//! | 5    | plan --strict: simulated accuracy below the bisection's aim |
//! | 125  | cannot tell (as `git bisect run` reads it)                  |
//! | 128  | verdict: usage or configuration error (aborts git bisect)   |
//! | 130  | interrupted by SIGINT or SIGTERM                            |
//!
//! A failure carries its code from where it arose, so that classifying
//! one consults no list of error types. Every error a command can fail
//! with declares its exit code ([`ExitCoded`]): the CLI's own errors in
//! one impl beside each type, the other crates' in [`foreign`], where
//! the libraries' are read from what each says of its errors (their
//! `is_input()`: the user can fix it), since a library knows no exit
//! code. An error becomes a [`Failure`] (by `?`, or by [`Context`]'s
//! `context`) with the code it declares, and keeps it through every
//! context added after; an error type that declares none cannot become
//! one (it does not compile). What a library boxes of ours (a
//! bisection's measurer and journal, `bisect::journal::BoxError`) is a
//! boxed `Failure`, whose code the engine's error hands on. Two things
//! are decided at the end: a signal received ends the process with 130
//! whatever the failure ([`classify`]), and a closed stdout, which
//! declares 0, is no failure at all ([`is_broken_pipe`]).
//!
//! Why a code carried and not read off the error chain at the end: stable
//! Rust can ask a `&dyn Error` of the chain for a concrete type only, not
//! for a trait, so reading it needs a hand-kept list of every type that
//! decides a code, which falls behind as errors are added, and reaches up
//! into every module that defines one.

mod failure;
mod foreign;

use crate::render::text::plain_lines;

pub use failure::{Context, ExitCoded, Failure, Result};

use std::process::ExitCode;

/// A documented exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// Success.
    Ok = 0,
    /// Input error: the user can fix the command line or the input.
    Input = 2,
    /// Runtime failure.
    Runtime = 3,
    /// A verdict of "new": like the bad side; for `history --check` and
    /// `compare --check`, a change for the worse found. One code for
    /// both, as `git bisect run` and a CI job read a regression alike.
    New = 1,
    /// A bisection refused: its ends do not differ enough.
    Refused = 4,
    /// `plan --strict`: the simulated bisections name the right commit
    /// less often than a bisection aims for.
    BelowTarget = 5,
    /// A verdict that cannot tell (or a failure to measure): git bisect
    /// run's "skip".
    CannotTell = 125,
    /// `verdict`'s usage or configuration error: `git bisect run` aborts
    /// on it, where 2 would mark every commit bad.
    Abort = 128,
    /// Interrupted by SIGINT or SIGTERM.
    Interrupted = 130,
}

impl From<Code> for ExitCode {
    fn from(code: Code) -> ExitCode {
        ExitCode::from(code as u8)
    }
}

/// An error the user caused with the command line or an input file;
/// exits with [`Code::Input`].
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct InputError(pub String);

impl ExitCoded for InputError {
    fn exit_code(&self) -> Code {
        Code::Input
    }
}

/// The exit code of a failed command: 130 once a signal came (whatever
/// the work it stopped failed with), else the code the failure's error
/// declared.
pub fn classify(failure: &Failure) -> Code {
    if child_process::interrupt::check().is_err() {
        return Code::Interrupted;
    }
    failure.code()
}

/// A failure as netbisect prints it: `netbisect: error: ...` and a line
/// for each cause, every line of each [`plain_lines`]: an error that
/// quotes a record, a file or a server as it was reaches the terminal
/// with its escape sequences escaped.
pub fn error_text(failure: &Failure) -> String {
    let mut text = format!("netbisect: error: {}\n", plain_lines(&failure.to_string()));
    for cause in failure.chain().skip(1) {
        text.push_str(&format!(
            "  caused by: {}\n",
            plain_lines(&cause.to_string())
        ));
    }
    text
}

/// Standard output was closed under us (`netbisect ... | head`), which
/// is not an error for a command-line tool.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
pub struct StdoutClosed;

impl ExitCoded for StdoutClosed {
    /// Success: the reader has all it wanted.
    fn exit_code(&self) -> Code {
        Code::Ok
    }
}

/// The error for a failed write to standard output: [`StdoutClosed`] for
/// a closed pipe, else the I/O error with context. Only writes to stdout
/// go through here, so a broken pipe on a socket is never mistaken for a
/// reader that stopped reading.
pub fn stdout_error(err: std::io::Error) -> Failure {
    if err.kind() == std::io::ErrorKind::BrokenPipe {
        Failure::from(StdoutClosed)
    } else {
        Failure::from(err).context("failed to write to stdout")
    }
}

/// True when the failure is that standard output was closed: the one
/// error that declares success.
pub fn is_broken_pipe(failure: &Failure) -> bool {
    failure.code() == Code::Ok
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    #[test]
    fn only_a_closed_stdout_counts_as_a_closed_pipe() {
        let closed = stdout_error(Error::from(ErrorKind::BrokenPipe));
        assert!(is_broken_pipe(&closed));
        assert!(is_broken_pipe(&closed.context("failed to print the run")));

        // A peer that went away mid-test also gives EPIPE: that is a
        // failed measurement, never a reader that stopped reading.
        let socket = Err::<(), _>(Error::from(ErrorKind::BrokenPipe))
            .context("send failed on the data socket")
            .unwrap_err();
        assert!(!is_broken_pipe(&socket));
        assert_eq!(socket.code(), Code::Runtime);

        let full_disk = stdout_error(Error::from(ErrorKind::StorageFull));
        assert!(!is_broken_pipe(&full_disk));
        assert_eq!(full_disk.to_string(), "failed to write to stdout");
    }
}
