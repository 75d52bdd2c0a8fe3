//! The lab's queue, workers, tracks, regressions and outbox in a file:
//! every write one `BEGIN IMMEDIATE` transaction, which takes the file's
//! write lock before it reads, so that two processes taking a job (or a
//! regression's bisection, or a notification) at once take it one after
//! the other and never both: the same semantics as PostgreSQL's row locks
//! with `SKIP LOCKED`, for the processes of one machine. Times are this
//! process's clock, in microseconds since the epoch.
//!
//! A file read at a schema older than the lab's tables (one this user may
//! not upgrade) has no lab: its reads are empty.

use super::SqliteArchive;
use crate::ArchiveError;
use crate::schema::LAB_VERSION;
use crate::store::CanonicalRun;
use crate::store::backend::LabStore;
use crate::store::lab::{
    BisectionEnd, Finished, JOB_COLUMNS, Job, JobFilter, JobState, Lease, MAX_ATTEMPTS,
    NOTIFICATION_COLUMNS, NewJob, Notification, Opened, REGRESSION_COLUMNS, Regression,
    RegressionState, SendHold, TRACK_COLUMNS, Track, WORKER_COLUMNS, Worker, WorkerNote, given_up,
    given_up_because, local_clock_us,
};
use rusqlite::{OptionalExtension, Transaction, TransactionBehavior, params, params_from_iter};

impl SqliteArchive {
    /// An immediate transaction, after the check due before the first
    /// write.
    fn lab_write(&mut self) -> Result<Transaction<'_>, ArchiveError> {
        self.check_before_write()?;
        Ok(self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?)
    }

    /// Whether the file has the lab's tables.
    fn has_lab(&self) -> Result<bool, ArchiveError> {
        Ok(super::open::read_header(&self.connection, &self.path)? >= LAB_VERSION)
    }

    /// The rows of `sql` (with `parameters`), each read by `decode`; none
    /// in a file without the lab's tables.
    fn lab_rows<T>(
        &self,
        sql: &str,
        parameters: impl rusqlite::Params,
        decode: fn(&rusqlite::Row<'_>) -> Result<T, ArchiveError>,
    ) -> Result<Vec<T>, ArchiveError> {
        if !self.has_lab()? {
            return Ok(Vec::new());
        }
        let mut statement = self.connection.prepare(sql)?;
        let mut rows = statement.query(parameters)?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            found.push(decode(row)?);
        }
        Ok(found)
    }
}

/// The job `id` in `transaction`.
fn job_in(transaction: &Transaction<'_>, id: i64) -> Result<Option<Job>, ArchiveError> {
    let mut statement =
        transaction.prepare(&format!("SELECT {JOB_COLUMNS} FROM lab_jobs WHERE id = ?1"))?;
    let mut rows = statement.query([id])?;
    rows.next()?.map(Job::from_row).transpose()
}

impl LabStore for SqliteArchive {
    fn clock_us(&self) -> Result<i64, ArchiveError> {
        Ok(local_clock_us())
    }

    fn enqueue_jobs(&mut self, jobs: &[NewJob]) -> Result<Vec<i64>, ArchiveError> {
        let transaction = self.lab_write()?;
        let now = local_clock_us();
        let mut ids = Vec::with_capacity(jobs.len());
        for job in jobs {
            transaction.execute(
                "INSERT INTO lab_jobs (pool, kind, owner, job_key, payload, priority, state, \
                 created_us) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'queued', ?7) \
                 ON CONFLICT (job_key) DO NOTHING",
                params![
                    job.pool,
                    job.kind,
                    job.owner,
                    job.key,
                    job.payload,
                    job.priority,
                    now
                ],
            )?;
            ids.push(transaction.query_row(
                "SELECT id FROM lab_jobs WHERE job_key = ?1",
                [&job.key],
                |row| row.get(0),
            )?);
        }
        transaction.commit()?;
        Ok(ids)
    }

    fn take_job(
        &mut self,
        worker: &str,
        pools: &[String],
        lease_us: i64,
    ) -> Result<Option<Job>, ArchiveError> {
        if pools.is_empty() {
            return Ok(None);
        }
        let transaction = self.lab_write()?;
        let now = local_clock_us();
        let placeholders = |first: usize| {
            (first..first + pools.len())
                .map(|idx| format!("?{idx}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let pool_values = pools.iter().map(|pool| pool.clone().into());
        let mut parameters: Vec<rusqlite::types::Value> =
            vec![now.into(), MAX_ATTEMPTS.into(), given_up().into()];
        parameters.extend(pool_values.clone());
        transaction.execute(
            &format!(
                "UPDATE lab_jobs SET state = 'failed', finished_us = ?1, result = ?3 \
                 WHERE state = 'leased' AND lease_expires_us < ?1 AND attempts >= ?2 \
                 AND pool IN ({})",
                placeholders(4)
            ),
            params_from_iter(&parameters),
        )?;
        let mut parameters: Vec<rusqlite::types::Value> = vec![now.into(), MAX_ATTEMPTS.into()];
        parameters.extend(pool_values);
        let next: Option<i64> = transaction
            .query_row(
                &format!(
                    "SELECT id FROM lab_jobs WHERE pool IN ({}) AND (state = 'queued' \
                     OR (state = 'leased' AND lease_expires_us < ?1 AND attempts < ?2)) \
                     ORDER BY priority DESC, id LIMIT 1",
                    placeholders(3)
                ),
                params_from_iter(&parameters),
                |row| row.get(0),
            )
            .optional()?;
        let Some(id) = next else {
            transaction.commit()?;
            return Ok(None);
        };
        transaction.execute(
            "UPDATE lab_jobs SET state = 'leased', worker = ?2, attempts = attempts + 1, \
             leased_us = ?3, lease_expires_us = ?4 WHERE id = ?1",
            params![id, worker, now, now.saturating_add(lease_us)],
        )?;
        let job = job_in(&transaction, id)?;
        transaction.commit()?;
        Ok(job)
    }

    fn heartbeat_job(&mut self, lease: Lease, lease_us: i64) -> Result<bool, ArchiveError> {
        let transaction = self.lab_write()?;
        let expires = local_clock_us().saturating_add(lease_us);
        let changed = transaction.execute(
            "UPDATE lab_jobs SET lease_expires_us = ?3 \
             WHERE id = ?1 AND attempts = ?2 AND state = 'leased'",
            params![lease.job_id, lease.attempt, expires],
        )?;
        transaction.commit()?;
        Ok(changed == 1)
    }

    fn finish_job(
        &mut self,
        lease: Lease,
        runs: &[CanonicalRun],
        result: &str,
    ) -> Result<Finished, ArchiveError> {
        let outcome = (|| {
            let transaction = self.lab_write()?;
            let Some(job) = job_in(&transaction, lease.job_id)? else {
                return Ok(Finished::LeaseLost);
            };
            match (job.state, job.attempts == lease.attempt) {
                (JobState::Leased, true) => {}
                (JobState::Done, true) => return Ok(Finished::AlreadyDone),
                _ => return Ok(Finished::LeaseLost),
            }
            super::write::store_in(&transaction, runs)?;
            transaction.execute(
                "UPDATE lab_jobs SET state = 'done', finished_us = ?2, result = ?3 \
                 WHERE id = ?1",
                params![lease.job_id, local_clock_us(), result],
            )?;
            transaction.commit()?;
            Ok(Finished::Done)
        })();
        outcome.map_err(|err| self.write_error(err))
    }

    fn release_job(&mut self, lease: Lease) -> Result<bool, ArchiveError> {
        let transaction = self.lab_write()?;
        let changed = transaction.execute(
            "UPDATE lab_jobs SET state = 'queued', lease_expires_us = NULL \
             WHERE id = ?1 AND attempts = ?2 AND state = 'leased'",
            params![lease.job_id, lease.attempt],
        )?;
        transaction.commit()?;
        Ok(changed == 1)
    }

    fn cancel_jobs(&mut self, owner: &str, reason: &str) -> Result<u64, ArchiveError> {
        let transaction = self.lab_write()?;
        let result = given_up_because(reason);
        let changed = transaction.execute(
            "UPDATE lab_jobs SET state = 'failed', finished_us = ?2, result = ?3 \
             WHERE owner = ?1 AND state = 'queued'",
            params![owner, local_clock_us(), result],
        )?;
        transaction.commit()?;
        Ok(changed as u64)
    }

    fn jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, ArchiveError> {
        let mut conditions = Vec::new();
        let mut parameters: Vec<String> = Vec::new();
        if let Some(owner) = &filter.owner {
            parameters.push(owner.clone());
            conditions.push(format!("owner = ?{}", parameters.len()));
        }
        if !filter.states.is_empty() {
            let states: Vec<String> = filter
                .states
                .iter()
                .map(|state| {
                    parameters.push(state.name().to_string());
                    format!("?{}", parameters.len())
                })
                .collect();
            conditions.push(format!("state IN ({})", states.join(", ")));
        }
        let filter = if conditions.is_empty() {
            String::new()
        } else {
            format!("WHERE {}", conditions.join(" AND "))
        };
        self.lab_rows(
            &format!("SELECT {JOB_COLUMNS} FROM lab_jobs {filter} ORDER BY id"),
            params_from_iter(&parameters),
            |row| Job::from_row(row),
        )
    }

    fn jobs_by_key(&self, keys: &[String]) -> Result<Vec<Job>, ArchiveError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let placeholders = (1..=keys.len())
            .map(|idx| format!("?{idx}"))
            .collect::<Vec<_>>()
            .join(", ");
        self.lab_rows(
            &format!("SELECT {JOB_COLUMNS} FROM lab_jobs WHERE job_key IN ({placeholders})"),
            params_from_iter(keys),
            |row| Job::from_row(row),
        )
    }

    fn note_worker(&mut self, note: &WorkerNote) -> Result<(), ArchiveError> {
        let transaction = self.lab_write()?;
        transaction.execute(
            "INSERT INTO lab_workers (name, pool, host, pid, job_id, started_us, seen_us) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6) \
             ON CONFLICT (name) DO UPDATE SET pool = ?2, host = ?3, \
             started_us = CASE WHEN pid = ?4 AND host = ?3 THEN started_us ELSE ?6 END, \
             pid = ?4, job_id = ?5, seen_us = ?6",
            params![
                note.name,
                note.pool,
                note.host,
                note.pid,
                note.job_id,
                local_clock_us()
            ],
        )?;
        transaction.commit()?;
        Ok(())
    }

    fn workers(&self) -> Result<Vec<Worker>, ArchiveError> {
        self.lab_rows(
            &format!("SELECT {WORKER_COLUMNS} FROM lab_workers ORDER BY name"),
            [],
            |row| Worker::from_row(row),
        )
    }

    fn note_track(&mut self, key: &str, spec: &str) -> Result<(), ArchiveError> {
        let transaction = self.lab_write()?;
        transaction.execute(
            "INSERT INTO lab_tracks (track_key, spec, created_us, seen_us) \
             VALUES (?1, ?2, ?3, ?3) \
             ON CONFLICT (track_key) DO UPDATE SET spec = ?2, seen_us = ?3",
            params![key, spec, local_clock_us()],
        )?;
        transaction.commit()?;
        Ok(())
    }

    fn tracks(&self) -> Result<Vec<Track>, ArchiveError> {
        self.lab_rows(
            &format!("SELECT {TRACK_COLUMNS} FROM lab_tracks ORDER BY track_key"),
            [],
            |row| Track::from_row(row),
        )
    }

    fn open_regression(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<Opened, ArchiveError> {
        let transaction = self.lab_write()?;
        let same: Option<(i64, String)> = transaction
            .query_row(
                "SELECT id, state FROM lab_regressions \
                 WHERE track = ?1 AND good = ?2 AND bad = ?3",
                params![track, good, bad],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        let suspected = match same {
            Some((id, state)) if state == RegressionState::Suspected.name() => Some(id),
            Some((id, _)) => return Ok(Opened::Existing(id)),
            None => None,
        };
        let active: Option<i64> = transaction
            .query_row(
                "SELECT id FROM lab_regressions \
                 WHERE track = ?1 AND state IN ('open', 'bisecting')",
                [track],
                |row| row.get(0),
            )
            .optional()?;
        if let Some(id) = active {
            return Ok(Opened::AnotherActive(id));
        }
        let now = local_clock_us();
        let id = match suspected {
            Some(id) => {
                transaction.execute(
                    "UPDATE lab_regressions SET state = 'open', detail = ?2, opened_us = ?3, \
                     updated_us = ?3 WHERE id = ?1",
                    params![id, detail, now],
                )?;
                id
            }
            None => {
                transaction.execute(
                    "INSERT INTO lab_regressions (track, good, bad, state, detail, opened_us, \
                     updated_us) VALUES (?1, ?2, ?3, 'open', ?4, ?5, ?5)",
                    params![track, good, bad, detail, now],
                )?;
                transaction.last_insert_rowid()
            }
        };
        transaction.commit()?;
        Ok(Opened::New(id))
    }

    fn note_suspicion(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<bool, ArchiveError> {
        let transaction = self.lab_write()?;
        let now = local_clock_us();
        let added = transaction.execute(
            "INSERT INTO lab_regressions (track, good, bad, state, detail, opened_us, \
             updated_us) VALUES (?1, ?2, ?3, 'suspected', ?4, ?5, ?5) \
             ON CONFLICT (track, good, bad) DO NOTHING",
            params![track, good, bad, detail, now],
        )?;
        transaction.commit()?;
        Ok(added == 1)
    }

    fn dismiss_suspicion(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<bool, ArchiveError> {
        let transaction = self.lab_write()?;
        let now = local_clock_us();
        let added = transaction.execute(
            "INSERT INTO lab_regressions (track, good, bad, state, detail, opened_us, \
             updated_us) VALUES (?1, ?2, ?3, 'dismissed', ?4, ?5, ?5) \
             ON CONFLICT (track, good, bad) DO UPDATE SET state = 'dismissed', \
             detail = excluded.detail, updated_us = excluded.updated_us \
             WHERE lab_regressions.state = 'suspected'",
            params![track, good, bad, detail, now],
        )?;
        transaction.commit()?;
        Ok(added == 1)
    }

    fn regressions(&self, track: Option<&str>) -> Result<Vec<Regression>, ArchiveError> {
        let sql = format!(
            "SELECT {REGRESSION_COLUMNS} FROM lab_regressions \
             WHERE ?1 IS NULL OR track = ?1 ORDER BY id"
        );
        self.lab_rows(&sql, [track], |row| Regression::from_row(row))
    }

    fn hold_regression(
        &mut self,
        id: i64,
        driver: &str,
        hold_us: i64,
    ) -> Result<bool, ArchiveError> {
        let transaction = self.lab_write()?;
        let now = local_clock_us();
        let changed = transaction.execute(
            "UPDATE lab_regressions SET driver = ?2, driver_expires_us = ?4 \
             WHERE id = ?1 AND state IN ('open', 'bisecting') \
             AND (driver IS NULL OR driver = ?2 OR driver_expires_us < ?3)",
            params![id, driver, now, now.saturating_add(hold_us)],
        )?;
        transaction.commit()?;
        Ok(changed == 1)
    }

    fn release_regression(&mut self, id: i64, driver: &str) -> Result<(), ArchiveError> {
        let transaction = self.lab_write()?;
        transaction.execute(
            "UPDATE lab_regressions SET driver = NULL, driver_expires_us = NULL \
             WHERE id = ?1 AND driver = ?2",
            params![id, driver],
        )?;
        transaction.commit()?;
        Ok(())
    }

    fn set_regression_session(
        &mut self,
        id: i64,
        driver: &str,
        session_id: i64,
    ) -> Result<bool, ArchiveError> {
        let transaction = self.lab_write()?;
        let changed = transaction.execute(
            "UPDATE lab_regressions SET state = 'bisecting', session_id = ?3, updated_us = ?4 \
             WHERE id = ?1 AND driver = ?2 AND state IN ('open', 'bisecting')",
            params![id, driver, session_id, local_clock_us()],
        )?;
        transaction.commit()?;
        Ok(changed == 1)
    }

    fn end_regression_bisection(
        &mut self,
        id: i64,
        driver: &str,
        end: &BisectionEnd,
    ) -> Result<bool, ArchiveError> {
        let transaction = self.lab_write()?;
        let now = local_clock_us();
        let (state, culprit) = match end {
            BisectionEnd::Culprit { culprit, .. } => (RegressionState::Bisected, Some(culprit)),
            BisectionEnd::Refused => (RegressionState::Refused, None),
        };
        let changed = transaction.execute(
            "UPDATE lab_regressions SET state = ?3, culprit = ?4, driver = NULL, \
             driver_expires_us = NULL, updated_us = ?5 \
             WHERE id = ?1 AND driver = ?2 AND state IN ('open', 'bisecting')",
            params![id, driver, state.name(), culprit, now],
        )?;
        if changed != 1 {
            return Ok(false);
        }
        if let BisectionEnd::Culprit {
            report, command, ..
        } = end
        {
            // Without a command the report is kept, and there is nothing
            // left to send.
            let sent = command.is_none().then_some(now);
            transaction.execute(
                "INSERT INTO lab_notifications (regression_id, command, body, created_us, \
                 sent_us, next_attempt_us) VALUES (?1, ?2, ?3, ?4, ?5, ?4)",
                params![id, command, report, now, sent],
            )?;
        }
        transaction.commit()?;
        Ok(true)
    }

    fn mark_regression_fixed(
        &mut self,
        id: i64,
        fixed_by: &str,
        suspicion_track: &str,
    ) -> Result<bool, ArchiveError> {
        let transaction = self.lab_write()?;
        let changed = transaction.execute(
            "UPDATE lab_regressions SET state = 'fixed', fixed_by = ?2, updated_us = ?3 \
             WHERE id = ?1 AND state IN ('bisected', 'refused')",
            params![id, fixed_by, local_clock_us()],
        )?;
        let sql =
            "DELETE FROM lab_regressions WHERE track = ?1 AND bad = ?2 AND state = 'suspected'";
        if changed == 1 {
            transaction.execute(sql, params![suspicion_track, fixed_by])?;
            transaction.commit()?;
        }
        Ok(changed == 1)
    }

    fn take_notification(
        &mut self,
        sender: &str,
        hold_us: i64,
    ) -> Result<Option<Notification>, ArchiveError> {
        let transaction = self.lab_write()?;
        let now = local_clock_us();
        let next: Option<i64> = transaction
            .query_row(
                "SELECT id FROM lab_notifications WHERE sent_us IS NULL \
                 AND next_attempt_us <= ?1 \
                 AND (sender IS NULL OR sender_expires_us < ?1) ORDER BY id LIMIT 1",
                [now],
                |row| row.get(0),
            )
            .optional()?;
        let Some(id) = next else {
            transaction.commit()?;
            return Ok(None);
        };
        transaction.execute(
            "UPDATE lab_notifications SET sender = ?2, sender_expires_us = ?3, \
             attempts = attempts + 1 WHERE id = ?1",
            params![id, sender, now.saturating_add(hold_us)],
        )?;
        let notification = transaction.query_row(
            &format!("SELECT {NOTIFICATION_COLUMNS} FROM lab_notifications WHERE id = ?1"),
            [id],
            |row| Ok(Notification::from_row(row)),
        )??;
        transaction.commit()?;
        Ok(Some(notification))
    }

    fn notification_sent(&mut self, hold: SendHold) -> Result<bool, ArchiveError> {
        let transaction = self.lab_write()?;
        let changed = transaction.execute(
            "UPDATE lab_notifications SET sent_us = ?3, sender = NULL, \
             sender_expires_us = NULL, last_error = NULL \
             WHERE id = ?1 AND attempts = ?2 AND sent_us IS NULL",
            params![hold.notification_id, hold.attempt, local_clock_us()],
        )?;
        transaction.commit()?;
        Ok(changed == 1)
    }

    fn notification_failed(
        &mut self,
        hold: SendHold,
        error: &str,
        retry_after_us: i64,
    ) -> Result<bool, ArchiveError> {
        let transaction = self.lab_write()?;
        let changed = transaction.execute(
            "UPDATE lab_notifications SET last_error = ?3, next_attempt_us = ?4, \
             sender = NULL, sender_expires_us = NULL \
             WHERE id = ?1 AND attempts = ?2 AND sent_us IS NULL",
            params![
                hold.notification_id,
                hold.attempt,
                error,
                local_clock_us().saturating_add(retry_after_us)
            ],
        )?;
        transaction.commit()?;
        Ok(changed == 1)
    }

    fn notifications(&self) -> Result<Vec<Notification>, ArchiveError> {
        self.lab_rows(
            &format!("SELECT {NOTIFICATION_COLUMNS} FROM lab_notifications ORDER BY id"),
            [],
            |row| Notification::from_row(row),
        )
    }
}
