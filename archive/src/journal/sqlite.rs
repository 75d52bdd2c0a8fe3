//! The journal on SQLite: every append its own `BEGIN IMMEDIATE`
//! transaction, committed with `synchronous = FULL`.

use super::BisectSession;
use crate::ArchiveError;
use crate::store::SqliteArchive;
use rusqlite::{OptionalExtension, TransactionBehavior, params};

const SESSION_COLUMNS: &str = "id, repo, spec, config_key, started_at, ended_at, \
     (SELECT count(*) FROM bisect_events WHERE session_id = bisect_sessions.id)";

fn session_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<BisectSession> {
    Ok(BisectSession {
        id: row.get(0)?,
        repo: row.get(1)?,
        spec: row.get(2)?,
        config_key: row.get(3)?,
        started_at: row.get(4)?,
        ended_at: row.get(5)?,
        n_events: u64::try_from(row.get::<_, i64>(6)?).unwrap_or(0),
    })
}

impl SqliteArchive {
    /// Starts a session bisecting `repo`, described by `spec` (JSON).
    /// Fails with [`ArchiveError::SessionActive`] when `repo` already has
    /// an active session.
    pub fn start_session(&mut self, repo: &str, spec: &str) -> Result<BisectSession, ArchiveError> {
        self.check_before_write()?;
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let active: Option<i64> = transaction
            .query_row(
                "SELECT id FROM bisect_sessions WHERE repo = ?1 AND ended_at IS NULL",
                [repo],
                |row| row.get(0),
            )
            .optional()?;
        if let Some(session_id) = active {
            return Err(ArchiveError::SessionActive {
                repo: repo.to_string(),
                session_id,
            });
        }
        transaction.execute(
            "INSERT INTO bisect_sessions (repo, spec, started_at) VALUES (?1, ?2, ?3)",
            params![repo, spec, run_record::time::now_rfc3339()],
        )?;
        let session_id = transaction.last_insert_rowid();
        transaction.commit()?;
        self.session(session_id)
    }

    /// The session with id `session_id`.
    pub fn session(&self, session_id: i64) -> Result<BisectSession, ArchiveError> {
        self.connection
            .query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM bisect_sessions WHERE id = ?1"),
                [session_id],
                session_of,
            )
            .optional()?
            .ok_or(ArchiveError::NoSuchSession(session_id))
    }

    /// The active session of `repo`, if there is one.
    pub fn active_session(&self, repo: &str) -> Result<Option<BisectSession>, ArchiveError> {
        Ok(self
            .connection
            .query_row(
                &format!(
                    "SELECT {SESSION_COLUMNS} FROM bisect_sessions \
                     WHERE repo = ?1 AND ended_at IS NULL"
                ),
                [repo],
                session_of,
            )
            .optional()?)
    }

    /// Every session, oldest first.
    pub fn sessions(&self) -> Result<Vec<BisectSession>, ArchiveError> {
        let mut statement = self.connection.prepare(&format!(
            "SELECT {SESSION_COLUMNS} FROM bisect_sessions ORDER BY id"
        ))?;
        let sessions = statement
            .query_map([], session_of)?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(sessions)
    }

    /// Appends `event` (JSON) to the journal of the active session
    /// `session_id`, durably; returns its sequence number, from 1.
    pub fn append_event(&mut self, session_id: i64, event: &str) -> Result<u64, ArchiveError> {
        self.check_before_write()?;
        self.connection.pragma_update(None, "synchronous", "FULL")?;
        let appended = self
            .append_event_in_transaction(session_id, event)
            .map_err(|err| self.write_error(err));
        // Back to the archive's usual setting whatever happened; a failure
        // here leaves the stricter one, which is harmless.
        let _ = self.connection.pragma_update(None, "synchronous", "NORMAL");
        appended
    }

    fn append_event_in_transaction(
        &mut self,
        session_id: i64,
        event: &str,
    ) -> Result<u64, ArchiveError> {
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let ended: Option<Option<String>> = transaction
            .query_row(
                "SELECT ended_at FROM bisect_sessions WHERE id = ?1",
                [session_id],
                |row| row.get(0),
            )
            .optional()?;
        match ended {
            None => return Err(ArchiveError::NoSuchSession(session_id)),
            Some(Some(_)) => return Err(ArchiveError::SessionEnded(session_id)),
            Some(None) => {}
        }
        let seq: i64 = transaction.query_row(
            "SELECT coalesce(max(seq), 0) + 1 FROM bisect_events WHERE session_id = ?1",
            [session_id],
            |row| row.get(0),
        )?;
        transaction.execute(
            "INSERT INTO bisect_events (session_id, seq, event, written_at) \
             VALUES (?1, ?2, ?3, ?4)",
            params![session_id, seq, event, run_record::time::now_rfc3339()],
        )?;
        transaction.commit()?;
        Ok(u64::try_from(seq).unwrap_or(0))
    }

    /// The journal of session `session_id`, oldest event first.
    pub fn session_events(&self, session_id: i64) -> Result<Vec<String>, ArchiveError> {
        self.session(session_id)?;
        let mut statement = self
            .connection
            .prepare("SELECT event FROM bisect_events WHERE session_id = ?1 ORDER BY seq")?;
        let events = statement
            .query_map([session_id], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(events)
    }

    /// Records the config_key the runs of session `session_id` are
    /// compared under.
    pub fn set_session_config_key(
        &mut self,
        session_id: i64,
        config_key: &str,
    ) -> Result<(), ArchiveError> {
        let changed = self.connection.execute(
            "UPDATE bisect_sessions SET config_key = ?2 WHERE id = ?1",
            params![session_id, config_key],
        )?;
        if changed == 0 {
            return Err(ArchiveError::NoSuchSession(session_id));
        }
        Ok(())
    }

    /// Ends session `session_id`: its journal is kept, and its repository
    /// may start another. Ending an ended session changes nothing.
    pub fn end_session(&mut self, session_id: i64) -> Result<BisectSession, ArchiveError> {
        self.session(session_id)?;
        self.connection.execute(
            "UPDATE bisect_sessions SET ended_at = ?2 WHERE id = ?1 AND ended_at IS NULL",
            params![session_id, run_record::time::now_rfc3339()],
        )?;
        self.session(session_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Archive;

    #[test]
    fn sessions_keep_their_events_in_order_and_one_is_active_per_repo() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("archive.db");
        let mut archive = Archive::open(&path).unwrap();
        let session = archive.start_session("/src/linux", r#"{"a":1}"#).unwrap();
        assert!(session.is_active());
        assert_eq!(session.n_events, 0);
        let err = archive.start_session("/src/linux", "{}").unwrap_err();
        assert!(
            matches!(err, ArchiveError::SessionActive { session_id, .. } if session_id == session.id),
            "{err}"
        );
        let other = archive.start_session("/src/other", "{}").unwrap();
        assert_ne!(other.id, session.id);

        assert_eq!(archive.append_event(session.id, r#"{"n":1}"#).unwrap(), 1);
        assert_eq!(archive.append_event(session.id, r#"{"n":2}"#).unwrap(), 2);
        assert!(archive.append_event(session.id, "not json").is_err());
        archive.set_session_config_key(session.id, "abc").unwrap();

        // Another connection, as another process would see it.
        let reader = Archive::open(&path).unwrap();
        assert_eq!(
            reader.session_events(session.id).unwrap(),
            vec![r#"{"n":1}"#, r#"{"n":2}"#]
        );
        let active = reader.active_session("/src/linux").unwrap().unwrap();
        assert_eq!(active.n_events, 2);
        assert_eq!(active.config_key.as_deref(), Some("abc"));

        let ended = archive.end_session(session.id).unwrap();
        assert!(!ended.is_active());
        assert!(matches!(
            archive.append_event(session.id, "{}"),
            Err(ArchiveError::SessionEnded(_))
        ));
        assert!(archive.active_session("/src/linux").unwrap().is_none());
        let again = archive.start_session("/src/linux", "{}").unwrap();
        assert!(again.id > other.id);
        assert_eq!(archive.sessions().unwrap().len(), 3);
        assert!(matches!(
            archive.session(999),
            Err(ArchiveError::NoSuchSession(999))
        ));
        assert!(archive.check().unwrap().is_clean());
    }
}
