//! Exit codes, documented in GUIDE.md and in `netbisect --help`:
//!
//! | code | meaning                                                     |
//! |------|-------------------------------------------------------------|
//! | 0    | success; for verdicts, "old" (like the good side)           |
//! | 1    | a verdict of "regression" / "new" (like the bad side)       |
//! | 2    | usage or input error: bad arguments, unreadable input files |
//! | 3    | runtime failure: network, file system, a failed child      |
//! | 4    | bisect refused: the ends do not differ enough               |
//! | 5    | plan --strict: simulated accuracy below the bisection's aim |
//! | 125  | cannot tell (as `git bisect run` reads it)                  |
//! | 128  | verdict: usage or configuration error (aborts git bisect)   |
//! | 130  | interrupted by SIGINT or SIGTERM                            |

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
    /// A verdict of "new": like the bad side.
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

/// Picks the exit code for a failure: an interruption is 130, input
/// errors anywhere in the chain (including bad run records) are 2,
/// everything else is 3.
pub fn classify(err: &anyhow::Error) -> Code {
    if child_process::interrupt::check().is_err()
        || err
            .chain()
            .any(|cause| cause.is::<child_process::interrupt::Interrupted>())
    {
        return Code::Interrupted;
    }
    let is_input = err.chain().any(|cause| {
        cause.is::<InputError>()
            || cause.is::<run_record::record::RecordError>()
            || cause.is::<run_record::spec::UnknownTest>()
            || cause.is::<run_record::record::UnknownMetric>()
            || cause.is::<archive::import::ImportError>()
            || cause
                .downcast_ref::<crate::vm::VmError>()
                .is_some_and(crate::vm::VmError::is_input)
            || cause
                .downcast_ref::<bench_core::host::settings::SettingsError>()
                .is_some_and(bench_core::host::settings::SettingsError::is_input)
            || cause
                .downcast_ref::<archive::ArchiveError>()
                .is_some_and(is_input_archive_error)
    });
    if is_input { Code::Input } else { Code::Runtime }
}

/// An error as netbisect prints it: `netbisect: error: ...` and a line
/// for each cause.
pub fn error_text(err: &anyhow::Error) -> String {
    let mut text = format!("netbisect: error: {err}\n");
    for cause in err.chain().skip(1) {
        text.push_str(&format!("  caused by: {cause}\n"));
    }
    text
}

/// Archive failures the user can fix: a wrong file, id or query.
fn is_input_archive_error(err: &archive::ArchiveError) -> bool {
    use archive::ArchiveError;
    matches!(
        err,
        ArchiveError::NotAnArchive { .. }
            | ArchiveError::NoArchive { .. }
            | ArchiveError::NewerSchema { .. }
            | ArchiveError::NoSuchRun(_)
            | ArchiveError::AmbiguousId { .. }
            | ArchiveError::InvalidQuery(_)
            | ArchiveError::SessionActive { .. }
            | ArchiveError::NoSuchSession(_)
            | ArchiveError::SessionEnded(_)
            | ArchiveError::BadAddress { .. }
    )
}

/// Standard output was closed under us (`netbisect ... | head`), which
/// is not an error for a command-line tool.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
pub struct StdoutClosed;

/// The error for a failed write to standard output: [`StdoutClosed`] for
/// a closed pipe, else the I/O error with context. Only writes to stdout
/// go through here, so a broken pipe on a socket is never mistaken for a
/// reader that stopped reading.
pub fn stdout_error(err: std::io::Error) -> anyhow::Error {
    if err.kind() == std::io::ErrorKind::BrokenPipe {
        anyhow::Error::new(StdoutClosed)
    } else {
        anyhow::Error::new(err).context("failed to write to stdout")
    }
}

/// True when the failure is that standard output was closed.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| cause.is::<StdoutClosed>())
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;
    use std::io::{Error, ErrorKind};

    #[test]
    fn only_a_closed_stdout_counts_as_a_closed_pipe() {
        let closed = stdout_error(Error::from(ErrorKind::BrokenPipe));
        assert!(is_broken_pipe(&closed));
        assert_eq!(classify(&closed), Code::Runtime);

        // A peer that went away mid-test also gives EPIPE: that is a
        // failed measurement, never a reader that stopped reading.
        let socket = Err::<(), _>(Error::from(ErrorKind::BrokenPipe))
            .context("send failed on the data socket")
            .unwrap_err();
        assert!(!is_broken_pipe(&socket));

        let full_disk = stdout_error(Error::from(ErrorKind::StorageFull));
        assert!(!is_broken_pipe(&full_disk));
        assert_eq!(full_disk.to_string(), "failed to write to stdout");
    }
}
