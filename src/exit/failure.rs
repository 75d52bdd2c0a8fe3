//! [`Failure`], what a command fails with: the chain of errors `main`
//! prints, and the exit code its first error declared ([`ExitCoded`]);
//! [`Context`], which adds a line to the chain and keeps the code.

use super::Code;
use std::fmt;

/// An error that says which documented exit code a command failing with
/// it ends with.
pub trait ExitCoded {
    /// The exit code.
    fn exit_code(&self) -> Code;
}

/// A failed command: the error chain `main` prints whole, and the exit
/// code its error declared when it became a failure.
pub struct Failure {
    error: anyhow::Error,
    code: Code,
}

/// A command's result, and the result of what it calls in the CLI.
pub type Result<T, E = Failure> = std::result::Result<T, E>;

impl Failure {
    /// A runtime failure that is only a message (no error of a type
    /// behind it).
    pub fn msg(message: impl fmt::Display) -> Failure {
        Failure {
            error: anyhow::Error::msg(message.to_string()),
            code: Code::Runtime,
        }
    }

    /// What the failure was first declared as: its exit code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The failure's errors, the outermost context first.
    pub fn chain(&self) -> anyhow::Chain<'_> {
        self.error.chain()
    }

    /// The same failure under a line that says what was being done.
    pub fn context<C>(self, context: C) -> Failure
    where
        C: fmt::Display + Send + Sync + 'static,
    {
        Failure {
            error: self.error.context(context),
            code: self.code,
        }
    }
}

impl<E> From<E> for Failure
where
    E: ExitCoded + std::error::Error + Send + Sync + 'static,
{
    fn from(error: E) -> Failure {
        Failure {
            code: error.exit_code(),
            error: anyhow::Error::new(error),
        }
    }
}

/// What a library hands back of a boxed error: a [`Failure`] the CLI
/// boxed keeps its code; anything else the library boxed is a runtime
/// failure (an interruption among them is 130 through [`super::classify`]).
impl From<Box<dyn std::error::Error + Send + Sync>> for Failure {
    fn from(boxed: Box<dyn std::error::Error + Send + Sync>) -> Failure {
        match boxed.downcast::<Failure>() {
            Ok(failure) => *failure,
            Err(other) => Failure {
                error: anyhow::Error::from_boxed(other),
                code: Code::Runtime,
            },
        }
    }
}

/// The code of a boxed error a library carries as a source (a bisection's
/// measurer or journal): a boxed [`Failure`]'s, else a runtime failure's.
pub(super) fn code_of_boxed(boxed: &(dyn std::error::Error + Send + Sync + 'static)) -> Code {
    boxed
        .downcast_ref::<Failure>()
        .map_or(Code::Runtime, Failure::code)
}

/// Prints as the outermost error; `{:#}` prints the chain on one line,
/// as anyhow does.
impl fmt::Display for Failure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, formatter)
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.error, formatter)
    }
}

/// A failure is an error of its own, so that it can be boxed where a
/// library takes a boxed error; its sources are the chain's, so that the
/// box prints as the failure would.
impl std::error::Error for Failure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

/// Adds a line saying what was being done to an error, as anyhow's
/// `Context` does, keeping the code the error declared.
pub trait Context<T> {
    /// Adds `context` above the error.
    fn context<C>(self, context: C) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static;

    /// Adds the context `context()` makes, only on an error.
    fn with_context<C, F>(self, context: F) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C;
}

impl<T, E: Into<Failure>> Context<T> for std::result::Result<T, E> {
    fn context<C>(self, context: C) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
    {
        self.map_err(|error| error.into().context(context))
    }

    fn with_context<C, F>(self, context: F) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C,
    {
        self.map_err(|error| error.into().context(context()))
    }
}

/// A missing value is a runtime failure that says what was missing.
impl<T> Context<T> for Option<T> {
    fn context<C>(self, context: C) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
    {
        self.ok_or_else(|| Failure::msg(context))
    }

    fn with_context<C, F>(self, context: F) -> Result<T>
    where
        C: fmt::Display + Send + Sync + 'static,
        F: FnOnce() -> C,
    {
        self.ok_or_else(|| Failure::msg(context()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::InputError;

    #[test]
    fn a_context_keeps_the_code_and_the_chain() {
        let failure = Err::<(), _>(InputError("no such test".to_string()))
            .context("failed to read the spec")
            .context("failed to start")
            .unwrap_err();
        assert_eq!(failure.code(), Code::Input);
        let chain: Vec<String> = failure.chain().map(ToString::to_string).collect();
        assert_eq!(
            chain,
            ["failed to start", "failed to read the spec", "no such test"]
        );
    }

    #[test]
    fn a_boxed_failure_comes_back_with_its_code_and_prints_the_same() {
        let failure = Failure::from(InputError("bad".to_string())).context("while measuring");
        let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(failure);
        assert_eq!(code_of_boxed(&*boxed), Code::Input);
        assert_eq!(boxed.to_string(), "while measuring");
        assert_eq!(
            boxed.source().map(ToString::to_string).as_deref(),
            Some("bad")
        );
        let back = Failure::from(boxed);
        assert_eq!(back.code(), Code::Input);
        assert_eq!(back.chain().count(), 2);

        let other: Box<dyn std::error::Error + Send + Sync> = "no slot is measuring".into();
        assert_eq!(code_of_boxed(&*other), Code::Runtime);
        assert_eq!(Failure::from(other).to_string(), "no slot is measuring");
    }
}
