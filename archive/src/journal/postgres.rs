//! The journal on PostgreSQL: every append its own transaction, committed
//! with `synchronous_commit = on` (the server's default, set for the
//! transaction so that a server configured otherwise still keeps a
//! bisection's journal durable). The session's row is locked while an
//! event is appended, so two appends to one session are numbered one
//! after the other.

use super::BisectSession;
use crate::ArchiveError;
use crate::store::PgArchive;
use postgres::error::SqlState;

const SESSION_COLUMNS: &str = "id, repo, spec, config_key, started_at, ended_at, \
     (SELECT count(*) FROM bisect_events WHERE session_id = bisect_sessions.id)";

fn session_of(row: &postgres::Row) -> Result<BisectSession, ArchiveError> {
    Ok(BisectSession {
        id: row.try_get(0)?,
        repo: row.try_get(1)?,
        spec: row.try_get(2)?,
        config_key: row.try_get(3)?,
        started_at: row.try_get(4)?,
        ended_at: row.try_get(5)?,
        n_events: u64::try_from(row.try_get::<_, i64>(6)?).unwrap_or(0),
    })
}

impl PgArchive {
    pub(crate) fn start_session(
        &mut self,
        repo: &str,
        spec: &str,
    ) -> Result<BisectSession, ArchiveError> {
        let session_id = {
            let mut client = self.client.borrow_mut();
            let mut transaction = client.transaction()?;
            let active = transaction.query_opt(
                "SELECT id FROM bisect_sessions WHERE repo = $1 AND ended_at IS NULL",
                &[&repo],
            )?;
            if let Some(row) = active {
                return Err(ArchiveError::SessionActive {
                    repo: repo.to_string(),
                    session_id: row.try_get(0)?,
                });
            }
            let inserted = transaction.query_one(
                "INSERT INTO bisect_sessions (repo, spec, started_at) VALUES ($1, $2, $3) \
                 RETURNING id",
                &[&repo, &spec, &run_record::time::now_rfc3339()],
            );
            let session_id: i64 = match inserted {
                Ok(row) => row.try_get(0)?,
                // Another process started one between the check and the
                // insert: the unique index on active sessions says so.
                Err(err) if err.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                    drop(transaction);
                    let active = self_active_id(&mut client, repo)?;
                    return Err(ArchiveError::SessionActive {
                        repo: repo.to_string(),
                        session_id: active.unwrap_or_default(),
                    });
                }
                Err(err) => return Err(err.into()),
            };
            transaction.commit()?;
            session_id
        };
        self.session(session_id)
    }

    pub(crate) fn session(&self, session_id: i64) -> Result<BisectSession, ArchiveError> {
        let row = self.client.borrow_mut().query_opt(
            &format!("SELECT {SESSION_COLUMNS} FROM bisect_sessions WHERE id = $1"),
            &[&session_id],
        )?;
        match row {
            Some(row) => session_of(&row),
            None => Err(ArchiveError::NoSuchSession(session_id)),
        }
    }

    pub(crate) fn active_session(&self, repo: &str) -> Result<Option<BisectSession>, ArchiveError> {
        let row = self.client.borrow_mut().query_opt(
            &format!(
                "SELECT {SESSION_COLUMNS} FROM bisect_sessions \
                 WHERE repo = $1 AND ended_at IS NULL"
            ),
            &[&repo],
        )?;
        row.as_ref().map(session_of).transpose()
    }

    pub(crate) fn sessions(&self) -> Result<Vec<BisectSession>, ArchiveError> {
        let rows = self.client.borrow_mut().query(
            &format!("SELECT {SESSION_COLUMNS} FROM bisect_sessions ORDER BY id"),
            &[],
        )?;
        rows.iter().map(session_of).collect()
    }

    pub(crate) fn append_event(
        &mut self,
        session_id: i64,
        event: &str,
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
            Some(row) if row.try_get::<_, Option<String>>(0)?.is_some() => {
                return Err(ArchiveError::SessionEnded(session_id));
            }
            Some(_) => {}
        }
        let seq: i64 = transaction
            .query_one(
                "SELECT coalesce(max(seq), 0) + 1 FROM bisect_events WHERE session_id = $1",
                &[&session_id],
            )?
            .try_get(0)?;
        transaction.execute(
            "INSERT INTO bisect_events (session_id, seq, event, written_at) \
             VALUES ($1, $2, $3, $4)",
            &[&session_id, &seq, &event, &run_record::time::now_rfc3339()],
        )?;
        transaction.commit()?;
        Ok(u64::try_from(seq).unwrap_or(0))
    }

    pub(crate) fn session_events(&self, session_id: i64) -> Result<Vec<String>, ArchiveError> {
        self.session(session_id)?;
        let rows = self.client.borrow_mut().query(
            "SELECT event FROM bisect_events WHERE session_id = $1 ORDER BY seq",
            &[&session_id],
        )?;
        rows.iter()
            .map(|row| Ok(row.try_get::<_, String>(0)?))
            .collect()
    }

    pub(crate) fn set_session_config_key(
        &mut self,
        session_id: i64,
        config_key: &str,
    ) -> Result<(), ArchiveError> {
        let changed = self.client.borrow_mut().execute(
            "UPDATE bisect_sessions SET config_key = $2 WHERE id = $1",
            &[&session_id, &config_key],
        )?;
        if changed == 0 {
            return Err(ArchiveError::NoSuchSession(session_id));
        }
        Ok(())
    }

    pub(crate) fn end_session(&mut self, session_id: i64) -> Result<BisectSession, ArchiveError> {
        self.session(session_id)?;
        self.client.borrow_mut().execute(
            "UPDATE bisect_sessions SET ended_at = $2 WHERE id = $1 AND ended_at IS NULL",
            &[&session_id, &run_record::time::now_rfc3339()],
        )?;
        self.session(session_id)
    }
}

/// The id of `repo`'s active session, read outside any transaction.
fn self_active_id(client: &mut postgres::Client, repo: &str) -> Result<Option<i64>, ArchiveError> {
    let row = client.query_opt(
        "SELECT id FROM bisect_sessions WHERE repo = $1 AND ended_at IS NULL",
        &[&repo],
    )?;
    Ok(row.map(|row| row.try_get(0)).transpose()?)
}
