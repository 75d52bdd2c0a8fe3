//! What the archive keeps of a bisection session ([`BisectSession`]),
//! and how a row of either backend gives it
//! ([`BisectSession::from_row`] over [`SESSION_COLUMNS`]). The sessions'
//! public reads and writes are `journal`'s; their SQL each backend's.

use super::row::Columns;
use crate::ArchiveError;
use serde::Serialize;

/// One bisection session.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BisectSession {
    /// Session id, unique in this archive.
    pub id: i64,
    /// The repository bisected (the caller's canonical path).
    pub repo: String,
    /// The caller's description of the bisection (JSON).
    pub spec: String,
    /// The config_key runs of this session are compared under, once known.
    pub config_key: Option<String>,
    /// When the session started, RFC 3339.
    pub started_at: String,
    /// When it ended (`reset`), RFC 3339.
    pub ended_at: Option<String>,
    /// Events in its journal.
    pub n_events: u64,
}

impl BisectSession {
    /// True until the session is ended.
    pub fn is_active(&self) -> bool {
        self.ended_at.is_none()
    }
}

/// The columns of `bisect_sessions` a [`BisectSession`] is read from,
/// in the order [`BisectSession::from_row`] reads them: the session's,
/// and the count of its events.
const SESSION_COLUMNS: &str = "id, repo, spec, config_key, started_at, ended_at, \
     (SELECT count(*) FROM bisect_events WHERE session_id = bisect_sessions.id)";

/// The sessions `filter` selects (a `WHERE` clause, or nothing), oldest
/// first, in the columns [`BisectSession::from_row`] reads.
pub(crate) fn select_sessions_sql(filter: &str) -> String {
    format!("SELECT {SESSION_COLUMNS} FROM bisect_sessions {filter} ORDER BY id")
}

impl BisectSession {
    /// The session a row of [`SESSION_COLUMNS`] gives.
    pub(crate) fn from_row(row: &impl Columns) -> Result<BisectSession, ArchiveError> {
        Ok(BisectSession {
            id: row.read(0)?,
            repo: row.read(1)?,
            spec: row.read(2)?,
            config_key: row.read(3)?,
            started_at: row.read(4)?,
            ended_at: row.read(5)?,
            n_events: u64::try_from(row.read::<i64>(6)?).unwrap_or(0),
        })
    }
}
