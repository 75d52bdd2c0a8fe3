//! Exit codes, documented in the README and in `netbisect --help`:
//!
//! | code | meaning                                                     |
//! |------|-------------------------------------------------------------|
//! | 0    | success; for verdicts, "old" (like the good side)           |
//! | 1    | a verdict of "regression" / "new" (like the bad side)       |
//! | 2    | usage or input error: bad arguments, unreadable input files |
//! | 3    | runtime failure: network, file system, a failed child      |
//! | 4    | bisect refused: the ends do not differ enough               |
//! | 125  | cannot tell (as `git bisect run` reads it)                  |

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
    /// A verdict that cannot tell (or a failure to measure): git bisect
    /// run's "skip".
    CannotTell = 125,
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

/// Picks the exit code for a failure: input errors anywhere in the chain
/// (including bad run records) are 2, everything else is 3.
pub fn classify(err: &anyhow::Error) -> Code {
    let is_input = err.chain().any(|cause| {
        cause.is::<InputError>()
            || cause.is::<bench_core::record::RecordError>()
            || cause.is::<bench_core::spec::UnknownTest>()
            || cause.is::<bench_core::record::UnknownMetric>()
            || cause.is::<archive::import::ImportError>()
            || cause
                .downcast_ref::<archive::ArchiveError>()
                .is_some_and(is_input_archive_error)
    });
    if is_input { Code::Input } else { Code::Runtime }
}

/// Archive failures the user can fix: a wrong file, id or query.
fn is_input_archive_error(err: &archive::ArchiveError) -> bool {
    use archive::ArchiveError;
    matches!(
        err,
        ArchiveError::NotAnArchive { .. }
            | ArchiveError::NewerSchema { .. }
            | ArchiveError::NoSuchRun(_)
            | ArchiveError::AmbiguousId { .. }
            | ArchiveError::InvalidQuery(_)
            | ArchiveError::SessionActive { .. }
            | ArchiveError::NoSuchSession(_)
            | ArchiveError::SessionEnded(_)
    )
}

/// True when the failure is a write to a closed pipe (`netbisect ... |
/// head`), which is not an error for a command-line tool.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
