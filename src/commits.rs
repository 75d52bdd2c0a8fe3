//! The commits of a git range in order, as `history` and `publish` put
//! their points, and the subjects of commits, which `publish` shows:
//! bisect's git layer reads them, and errors the user can fix (no
//! repository there, a revision that does not resolve) are input errors.

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

/// The subjects of commits, read from a repository: the archive keeps a
/// run's commit id (and `git describe`), not its subject, so the pages
/// that show subjects read them where the commits are.
pub struct Subjects {
    repo: Option<git2::Repository>,
}

impl Subjects {
    /// No repository: no subject is known.
    pub fn none() -> Subjects {
        Subjects { repo: None }
    }

    /// The subjects of the repository at or above `path`; a path that is
    /// not in a repository is an input error.
    pub fn of_repository(path: &std::path::Path) -> exit::Result<Subjects> {
        let repo = bisect::range::discover(path).map_err(|err| {
            InputError(format!(
                "cannot read the commits of {}: {err}",
                path.display()
            ))
        })?;
        Ok(Subjects { repo: Some(repo) })
    }

    /// The subject of `commit` (an id, abbreviated or not); `None` without
    /// a repository, or where it does not hold the commit.
    pub fn subject(&self, commit: &str) -> Option<String> {
        let repo = self.repo.as_ref()?;
        // An id only: a record's commit is never read as a revision
        // (`HEAD~1`, a branch).
        if commit.len() < 4 || !commit.bytes().all(|byte| byte.is_ascii_hexdigit()) {
            return None;
        }
        let oid = bisect::range::resolve(repo, commit).ok()?;
        let info = bisect::range::commit_info(repo, oid).ok()?;
        Some(info.subject).filter(|subject| !subject.is_empty())
    }
}
