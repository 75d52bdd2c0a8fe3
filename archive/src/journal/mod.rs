//! Bisection sessions and their journals.
//!
//! A session is one bisection of one repository: the caller's description
//! of it (an opaque JSON document, `spec`), the config_key its runs are
//! compared under once known, and when it started and ended. Its journal
//! is the ordered list of events the bisection wrote, each an opaque JSON
//! document. The archive knows nothing of what the documents mean; the
//! command-line tool writes bisect's journal events there.
//!
//! Durability: every append is its own `BEGIN IMMEDIATE` transaction,
//! committed with `synchronous = FULL`, so that when [`Archive::append_event`]
//! returns the event survives a crash of the process, of the machine or a
//! power loss. A repository has at most one active (not ended) session,
//! which a unique index enforces even against concurrent starts.

mod postgres;
mod sqlite;

use crate::ArchiveError;
use crate::store::{Archive, Backend, dispatch};
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

impl Archive {
    /// Starts a session bisecting `repo`, described by `spec` (JSON).
    /// Fails with [`ArchiveError::SessionActive`] when `repo` already has
    /// an active session.
    pub fn start_session(&mut self, repo: &str, spec: &str) -> Result<BisectSession, ArchiveError> {
        dispatch!(self.backend_mut(), backend => backend.start_session(repo, spec))
    }

    /// The session with id `session_id`.
    pub fn session(&self, session_id: i64) -> Result<BisectSession, ArchiveError> {
        dispatch!(self.backend(), backend => backend.session(session_id))
    }

    /// The active session of `repo`, if there is one.
    pub fn active_session(&self, repo: &str) -> Result<Option<BisectSession>, ArchiveError> {
        dispatch!(self.backend(), backend => backend.active_session(repo))
    }

    /// Every session, oldest first.
    pub fn sessions(&self) -> Result<Vec<BisectSession>, ArchiveError> {
        dispatch!(self.backend(), backend => backend.sessions())
    }

    /// Appends `event` (JSON) to the journal of the active session
    /// `session_id`, durably; returns its sequence number, from 1.
    pub fn append_event(&mut self, session_id: i64, event: &str) -> Result<u64, ArchiveError> {
        dispatch!(self.backend_mut(), backend => backend.append_event(session_id, event))
    }

    /// The journal of session `session_id`, oldest event first.
    pub fn session_events(&self, session_id: i64) -> Result<Vec<String>, ArchiveError> {
        dispatch!(self.backend(), backend => backend.session_events(session_id))
    }

    /// Records the config_key the runs of session `session_id` are
    /// compared under.
    pub fn set_session_config_key(
        &mut self,
        session_id: i64,
        config_key: &str,
    ) -> Result<(), ArchiveError> {
        dispatch!(self.backend_mut(), backend => backend.set_session_config_key(session_id, config_key))
    }

    /// Ends session `session_id`: its journal is kept, and its repository
    /// may start another. Ending an ended session changes nothing.
    pub fn end_session(&mut self, session_id: i64) -> Result<BisectSession, ArchiveError> {
        dispatch!(self.backend_mut(), backend => backend.end_session(session_id))
    }
}
