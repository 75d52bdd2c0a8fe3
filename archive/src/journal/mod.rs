//! Bisection sessions and their journals.
//!
//! A session is one bisection of one repository: the caller's description
//! of it (an opaque JSON document, `spec`), the config_key its runs are
//! compared under once known, and when it started and ended. Its journal
//! is the ordered list of events the bisection wrote, each an opaque JSON
//! document. The archive knows nothing of what the documents mean; the
//! command-line tool writes bisect's journal events there.
//!
//! Durability: every append is its own transaction, durable when
//! [`Archive::append_event`] returns (on a file `BEGIN IMMEDIATE` committed
//! with `synchronous = FULL`, on PostgreSQL with `synchronous_commit =
//! on`), so that the event survives a crash of the process, of the
//! machine or a power loss. A repository has at most one active (not
//! ended) session, which a unique index enforces even against concurrent
//! starts.
//!
//! Here the public reads and writes of sessions, made of the primitives
//! every backend of the store provides (its `SessionStore`, in
//! `store/sqlite/journal.rs` and `store/postgres/journal.rs`).

use crate::ArchiveError;
use crate::store::Archive;

pub use crate::store::session::BisectSession;

impl Archive {
    /// Starts a session bisecting `repo`, described by `spec` (JSON).
    /// Fails with [`ArchiveError::SessionActive`] when `repo` already has
    /// an active session.
    pub fn start_session(&mut self, repo: &str, spec: &str) -> Result<BisectSession, ArchiveError> {
        let now = run_record::time::now_rfc3339();
        let session_id = self.backend_mut().insert_session(repo, spec, &now)?;
        self.session(session_id)
    }

    /// The session with id `session_id`.
    pub fn session(&self, session_id: i64) -> Result<BisectSession, ArchiveError> {
        self.backend()
            .session(session_id)?
            .ok_or(ArchiveError::NoSuchSession(session_id))
    }

    /// The active session of `repo`, if there is one.
    pub fn active_session(&self, repo: &str) -> Result<Option<BisectSession>, ArchiveError> {
        self.backend().active_session(repo)
    }

    /// Every session, oldest first.
    pub fn sessions(&self) -> Result<Vec<BisectSession>, ArchiveError> {
        self.backend().sessions()
    }

    /// Appends `event` (JSON) to the journal of the active session
    /// `session_id`, durably; returns its sequence number, from 1.
    pub fn append_event(&mut self, session_id: i64, event: &str) -> Result<u64, ArchiveError> {
        let now = run_record::time::now_rfc3339();
        self.backend_mut().append_event(session_id, event, &now)
    }

    /// The journal of session `session_id`, oldest event first.
    pub fn session_events(&self, session_id: i64) -> Result<Vec<String>, ArchiveError> {
        self.session(session_id)?;
        self.backend().session_events(session_id)
    }

    /// When each event of the journal of session `session_id` was
    /// written, oldest first (RFC 3339, UTC): what a report reads the
    /// bisection's wall-clock from.
    pub fn session_event_times(&self, session_id: i64) -> Result<Vec<String>, ArchiveError> {
        self.session(session_id)?;
        self.backend().session_event_times(session_id)
    }

    /// Records the config_key the runs of session `session_id` are
    /// compared under.
    pub fn set_session_config_key(
        &mut self,
        session_id: i64,
        config_key: &str,
    ) -> Result<(), ArchiveError> {
        if self
            .backend_mut()
            .set_session_config_key(session_id, config_key)?
        {
            Ok(())
        } else {
            Err(ArchiveError::NoSuchSession(session_id))
        }
    }

    /// Ends session `session_id`: its journal is kept, and its repository
    /// may start another. Ending an ended session changes nothing.
    pub fn end_session(&mut self, session_id: i64) -> Result<BisectSession, ArchiveError> {
        self.session(session_id)?;
        let now = run_record::time::now_rfc3339();
        self.backend_mut().end_session(session_id, &now)?;
        self.session(session_id)
    }
}
