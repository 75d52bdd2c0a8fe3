//! The context of `archive-list`: the runs an archive query selected,
//! newest first, as `archive list --json` prints them.

use archive::store::StoredRun;
use serde::Serialize;

/// What the `archive-list` template is given.
#[derive(Debug, Serialize)]
pub struct ArchiveListContext<'a> {
    /// The runs, newest first.
    pub runs: &'a [StoredRun],
}
