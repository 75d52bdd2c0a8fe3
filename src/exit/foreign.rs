//! The exit codes of other crates' errors, which cannot be declared
//! beside their types. A library knows no exit code, but says which of
//! its errors the user can fix (`is_input()`, when some can and some
//! cannot); those are [`Code::Input`], the rest [`Code::Runtime`]. An
//! interruption is [`Code::Interrupted`] wherever it is carried, and an
//! error of ours that a library boxed keeps the code it declared.

use super::Code;
use super::failure::{ExitCoded, code_of_boxed};

/// Errors that are the user's to fix, every one of them: a run record
/// that fails its checks, a test or metric name netbisect does not know,
/// an input no importer reads.
macro_rules! input {
    ($($error:ty),+ $(,)?) => {$(
        impl ExitCoded for $error {
            fn exit_code(&self) -> Code {
                Code::Input
            }
        }
    )+};
}

/// Errors whose library says which are the user's to fix.
macro_rules! input_when_the_library_says {
    ($($error:ty),+ $(,)?) => {$(
        impl ExitCoded for $error {
            fn exit_code(&self) -> Code {
                if self.is_input() { Code::Input } else { Code::Runtime }
            }
        }
    )+};
}

/// Errors that are failures of the run, never of what the user asked.
macro_rules! runtime {
    ($($error:ty),+ $(,)?) => {$(
        impl ExitCoded for $error {
            fn exit_code(&self) -> Code {
                Code::Runtime
            }
        }
    )+};
}

input!(
    run_record::record::RecordError,
    run_record::record::UnknownMetric,
    run_record::spec::UnknownTest,
    archive::import::ImportError,
);

input_when_the_library_says!(
    archive::ArchiveError,
    archive::compare::CompareError,
    bench_core::host::settings::SettingsError,
    bench_core::run::BenchError,
);

runtime!(
    std::io::Error,
    std::str::Utf8Error,
    serde_json::Error,
    git2::Error,
    tempfile::PersistError,
    run_record::canonical::CanonicalError,
    run_record::stats::StatsError,
    bench_core::auth::AuthError,
    bench_core::server::ServerError,
    archive::history::HistoryError,
    bisect::range::RangeError,
    bisect::worktree::WorktreeError,
);

impl ExitCoded for child_process::interrupt::Interrupted {
    fn exit_code(&self) -> Code {
        Code::Interrupted
    }
}

impl ExitCoded for child_process::runner::RunnerError {
    fn exit_code(&self) -> Code {
        match self {
            child_process::runner::RunnerError::Interrupted(interrupted) => interrupted.exit_code(),
            _ => Code::Runtime,
        }
    }
}

/// A bisection's measurer and journal are the CLI's: what they failed
/// with comes back boxed, with its code.
impl ExitCoded for bisect::error::EngineError {
    fn exit_code(&self) -> Code {
        use bisect::error::EngineError;
        match self {
            EngineError::Measure { source, .. } | EngineError::Journal(source) => {
                code_of_boxed(source.as_ref())
            }
            EngineError::Interrupted { source, .. } => source.exit_code(),
            _ => Code::Runtime,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::{Failure, InputError};
    use archive::ArchiveError;
    use bisect::error::EngineError;

    fn code_of(failure: impl Into<Failure>) -> Code {
        failure.into().code()
    }

    #[test]
    fn a_library_error_is_input_where_its_library_says() {
        assert_eq!(code_of(ArchiveError::NoSuchRun("abc".into())), Code::Input);
        assert_eq!(
            code_of(ArchiveError::Full {
                path: "/a.db".into()
            }),
            Code::Runtime
        );
        let record = || run_record::record::RecordError::MissingSchema;
        assert_eq!(code_of(record()), Code::Input);
        assert_eq!(
            code_of(bench_core::run::BenchError::Record(record())),
            Code::Input
        );
        let unreadable = bench_core::host::settings::SettingsError::Read {
            what: "the offload features of eth0".into(),
        };
        assert_eq!(
            code_of(bench_core::run::BenchError::Settings(unreadable)),
            Code::Runtime
        );
    }

    #[test]
    fn an_engine_error_hands_on_the_code_of_what_our_measurer_boxed() {
        let boxed = |failure: Failure| -> bisect::journal::BoxError { Box::new(failure) };
        let measure = |source| EngineError::Measure {
            commit: "c0ffee".into(),
            source,
        };
        let input = Failure::from(InputError("no such metric".into()));
        assert_eq!(code_of(measure(boxed(input))), Code::Input);
        let session = Failure::from(ArchiveError::NoSuchSession(7)).context("journal");
        assert_eq!(code_of(EngineError::Journal(boxed(session))), Code::Input);
        let io = std::io::Error::from(std::io::ErrorKind::NotFound);
        assert_eq!(code_of(measure(Box::new(io))), Code::Runtime);
    }
}
