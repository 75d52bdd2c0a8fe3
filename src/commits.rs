//! The commits of a git range in order, as `history` and `publish` put
//! their points: bisect's git layer lists them, and errors the user can
//! fix (no repository there, a revision that does not resolve) are input
//! errors.

use crate::exit::{self, InputError};

/// The commits of `range` in `path`, oldest first. A path that is not a
/// repository and a revision that does not resolve are input errors.
pub fn commits_of(
    path: &std::path::Path,
    range: &str,
    first_parent: bool,
) -> exit::Result<Vec<String>> {
    use bisect::range::{RangeError, commits_in_order, discover};
    let classify = |err: RangeError| -> exit::Failure {
        let is_input = matches!(
            err,
            RangeError::Open { .. } | RangeError::Resolve { .. } | RangeError::UnsupportedRange(_)
        );
        let message = format!("cannot list the commits of {range} in {}", path.display());
        if is_input {
            // The exit code follows the error's type, so the causes are
            // folded into the message of an input error.
            let mut text = format!("{message}: {err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                text.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            InputError(text).into()
        } else {
            exit::Failure::from(err).context(message)
        }
    };
    let repo = discover(path).map_err(classify)?;
    commits_in_order(&repo, range, first_parent).map_err(classify)
}
