//! The journal on PostgreSQL: every append its own transaction, committed
//! with `synchronous_commit = on` (the server's default, set for the
//! transaction so that a server configured otherwise still keeps a
//! bisection's journal durable). The session's row is locked while an
//! event is appended, so two appends to one session are numbered one
//! after the other.

use super::PgArchive;
use crate::ArchiveError;
use crate::store::backend::SessionStore;
use crate::store::row::Columns;
use crate::store::session::{BisectSession, select_sessions_sql};
use postgres::error::SqlState;
use postgres::types::ToSql;

impl SessionStore for PgArchive {
    fn insert_session(
        &mut self,
        repo: &str,
        spec: &str,
        started_at: &str,
    ) -> Result<i64, ArchiveError> {
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        let active = transaction.query_opt(
            "SELECT id FROM bisect_sessions WHERE repo = $1 AND ended_at IS NULL",
            &[&repo],
        )?;
        if let Some(row) = active {
            return Err(ArchiveError::SessionActive {
                repo: repo.to_string(),
                session_id: row.read(0)?,
            });
        }
        let inserted = transaction.query_one(
            "INSERT INTO bisect_sessions (repo, spec, started_at) VALUES ($1, $2, $3) \
             RETURNING id",
            &[&repo, &spec, &started_at],
        );
        let session_id: i64 = match inserted {
            Ok(row) => row.read(0)?,
            // Another process started one between the check and the
            // insert: the unique index on active sessions says so.
            Err(err) if err.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                drop(transaction);
                let active = active_id(&mut client, repo)?;
                return Err(ArchiveError::SessionActive {
                    repo: repo.to_string(),
                    session_id: active.unwrap_or_default(),
                });
            }
            Err(err) => return Err(err.into()),
        };
        transaction.commit()?;
        Ok(session_id)
    }

    fn session(&self, session_id: i64) -> Result<Option<BisectSession>, ArchiveError> {
        Ok(self.select_sessions("WHERE id = $1", &[&session_id])?.pop())
    }

    fn active_session(&self, repo: &str) -> Result<Option<BisectSession>, ArchiveError> {
        let filter = "WHERE repo = $1 AND ended_at IS NULL";
        Ok(self.select_sessions(filter, &[&repo])?.pop())
    }

    fn sessions(&self) -> Result<Vec<BisectSession>, ArchiveError> {
        self.select_sessions("", &[])
    }

    fn append_event(
        &mut self,
        session_id: i64,
        event: &str,
        written_at: &str,
    ) -> Result<u64, ArchiveError> {
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        transaction.batch_execute("SET LOCAL synchronous_commit = on")?;
        let ended = transaction.query_opt(
            "SELECT ended_at FROM bisect_sessions WHERE id = $1 FOR UPDATE",
            &[&session_id],
        )?;
        match ended {
            None => return Err(ArchiveError::NoSuchSession(session_id)),
            Some(row) if row.read::<Option<String>>(0)?.is_some() => {
                return Err(ArchiveError::SessionEnded(session_id));
            }
            Some(_) => {}
        }
        let seq: i64 = transaction
            .query_one(
                "SELECT coalesce(max(seq), 0) + 1 FROM bisect_events WHERE session_id = $1",
                &[&session_id],
            )?
            .read(0)?;
        transaction.execute(
            "INSERT INTO bisect_events (session_id, seq, event, written_at) \
             VALUES ($1, $2, $3, $4)",
            &[&session_id, &seq, &event, &written_at],
        )?;
        transaction.commit()?;
        Ok(u64::try_from(seq).unwrap_or(0))
    }

    fn session_events(&self, session_id: i64) -> Result<Vec<String>, ArchiveError> {
        let rows = self.client.borrow_mut().query(
            "SELECT event FROM bisect_events WHERE session_id = $1 ORDER BY seq",
            &[&session_id],
        )?;
        rows.iter().map(|row| row.read(0)).collect()
    }

    fn session_event_times(&self, session_id: i64) -> Result<Vec<String>, ArchiveError> {
        let rows = self.client.borrow_mut().query(
            "SELECT written_at FROM bisect_events WHERE session_id = $1 ORDER BY seq",
            &[&session_id],
        )?;
        rows.iter().map(|row| row.read(0)).collect()
    }

    fn set_session_config_key(
        &mut self,
        session_id: i64,
        config_key: &str,
    ) -> Result<bool, ArchiveError> {
        let changed = self.client.borrow_mut().execute(
            "UPDATE bisect_sessions SET config_key = $2 WHERE id = $1",
            &[&session_id, &config_key],
        )?;
        Ok(changed > 0)
    }

    fn end_session(&mut self, session_id: i64, ended_at: &str) -> Result<(), ArchiveError> {
        self.client.borrow_mut().execute(
            "UPDATE bisect_sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL",
            &[&session_id, &ended_at],
        )?;
        Ok(())
    }
}

impl PgArchive {
    /// The sessions `filter` selects (a `WHERE` clause of `parameters`,
    /// or nothing), oldest first.
    fn select_sessions(
        &self,
        filter: &str,
        parameters: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<BisectSession>, ArchiveError> {
        let rows = self
            .client
            .borrow_mut()
            .query(&select_sessions_sql(filter), parameters)?;
        rows.iter().map(BisectSession::from_row).collect()
    }
}

/// The id of `repo`'s active session, read outside any transaction.
fn active_id(client: &mut postgres::Client, repo: &str) -> Result<Option<i64>, ArchiveError> {
    let row = client.query_opt(
        "SELECT id FROM bisect_sessions WHERE repo = $1 AND ended_at IS NULL",
        &[&repo],
    )?;
    row.map(|row| row.read(0)).transpose()
}
