//! The journal in a file: every append its own `BEGIN IMMEDIATE`
//! transaction, committed with `synchronous = FULL`.

use super::SqliteArchive;
use crate::ArchiveError;
use crate::store::backend::SessionStore;
use crate::store::session::{BisectSession, select_sessions_sql};
use rusqlite::{OptionalExtension, TransactionBehavior, params};

impl SessionStore for SqliteArchive {
    fn insert_session(
        &mut self,
        repo: &str,
        spec: &str,
        started_at: &str,
    ) -> Result<i64, ArchiveError> {
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
            params![repo, spec, started_at],
        )?;
        let session_id = transaction.last_insert_rowid();
        transaction.commit()?;
        Ok(session_id)
    }

    fn session(&self, session_id: i64) -> Result<Option<BisectSession>, ArchiveError> {
        Ok(self.select_sessions("WHERE id = ?1", [session_id])?.pop())
    }

    fn active_session(&self, repo: &str) -> Result<Option<BisectSession>, ArchiveError> {
        let filter = "WHERE repo = ?1 AND ended_at IS NULL";
        Ok(self.select_sessions(filter, [repo])?.pop())
    }

    fn sessions(&self) -> Result<Vec<BisectSession>, ArchiveError> {
        self.select_sessions("", ())
    }

    fn append_event(
        &mut self,
        session_id: i64,
        event: &str,
        written_at: &str,
    ) -> Result<u64, ArchiveError> {
        self.check_before_write()?;
        self.connection.pragma_update(None, "synchronous", "FULL")?;
        let appended = self
            .append_event_in_transaction(session_id, event, written_at)
            .map_err(|err| self.write_error(err));
        // Back to the archive's usual setting whatever happened; a failure
        // here leaves the stricter one, which is harmless.
        let _ = self.connection.pragma_update(None, "synchronous", "NORMAL");
        appended
    }

    fn session_events(&self, session_id: i64) -> Result<Vec<String>, ArchiveError> {
        let mut statement = self
            .connection
            .prepare("SELECT event FROM bisect_events WHERE session_id = ?1 ORDER BY seq")?;
        let events = statement
            .query_map([session_id], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(events)
    }

    fn session_event_times(&self, session_id: i64) -> Result<Vec<String>, ArchiveError> {
        let mut statement = self
            .connection
            .prepare("SELECT written_at FROM bisect_events WHERE session_id = ?1 ORDER BY seq")?;
        let times = statement
            .query_map([session_id], |row| row.get(0))?
            .collect::<Result<Vec<String>, _>>()?;
        Ok(times)
    }

    fn set_session_config_key(
        &mut self,
        session_id: i64,
        config_key: &str,
    ) -> Result<bool, ArchiveError> {
        let changed = self.connection.execute(
            "UPDATE bisect_sessions SET config_key = ?2 WHERE id = ?1",
            params![session_id, config_key],
        )?;
        Ok(changed > 0)
    }

    fn end_session(&mut self, session_id: i64, ended_at: &str) -> Result<(), ArchiveError> {
        self.connection.execute(
            "UPDATE bisect_sessions SET ended_at = ?2 WHERE id = ?1 AND ended_at IS NULL",
            params![session_id, ended_at],
        )?;
        Ok(())
    }
}

impl SqliteArchive {
    /// The sessions `filter` selects (a `WHERE` clause of `parameters`,
    /// or nothing), oldest first.
    fn select_sessions(
        &self,
        filter: &str,
        parameters: impl rusqlite::Params,
    ) -> Result<Vec<BisectSession>, ArchiveError> {
        let mut statement = self.connection.prepare(&select_sessions_sql(filter))?;
        let mut rows = statement.query(parameters)?;
        let mut sessions = Vec::new();
        while let Some(row) = rows.next()? {
            sessions.push(BisectSession::from_row(row)?);
        }
        Ok(sessions)
    }

    fn append_event_in_transaction(
        &mut self,
        session_id: i64,
        event: &str,
        written_at: &str,
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
            params![session_id, seq, event, written_at],
        )?;
        transaction.commit()?;
        Ok(u64::try_from(seq).unwrap_or(0))
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
