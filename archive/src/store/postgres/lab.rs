//! The lab's queue, workers, tracks, regressions and outbox on
//! PostgreSQL. Taking a job (or a notification) locks the row it takes
//! with `FOR UPDATE SKIP LOCKED`: takers at once neither wait for each
//! other nor take the same row, and a taker whose transaction dies takes
//! nothing. Times are the server's clock (`clock_timestamp()`), so that
//! leases expire alike for workers whose clocks disagree.
//!
//! Finishing a job stores its runs and marks it done in one transaction,
//! after locking the job's row and checking the lease: a worker whose
//! lease another took over stores nothing, and one whose commit's answer
//! was lost finds its job done by its own lease when it tries again.

use super::write::{commit, denied_or, insert_runs, values_in_id_order};
use super::{LAB_VERSION, PgArchive};
use crate::ArchiveError;
use crate::store::CanonicalRun;
use crate::store::backend::LabStore;
use crate::store::lab::{
    BisectionEnd, Finished, JOB_COLUMNS, Job, JobFilter, Lease, MAX_ATTEMPTS, NOTIFICATION_COLUMNS,
    NewJob, Notification, Opened, REGRESSION_COLUMNS, Regression, RegressionState, SendHold,
    TRACK_COLUMNS, Track, WORKER_COLUMNS, Worker, WorkerNote, given_up, given_up_because,
};
use crate::store::row::Columns;
use postgres::error::SqlState;
use postgres::types::ToSql;

/// The server's clock in microseconds since the epoch.
const NOW_US: &str = "(extract(epoch FROM clock_timestamp()) * 1000000)::bigint";

/// `columns` (a list of column names) each prefixed with `table.`, for a
/// statement that names another relation with the same columns.
fn qualified(columns: &str, table: &str) -> String {
    columns
        .split(", ")
        .map(|column| format!("{table}.{column}"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl PgArchive {
    /// The rows of `sql` with `parameters`, each read by `decode`; none
    /// in an archive read at a schema older than the lab's tables.
    fn lab_rows<T>(
        &self,
        sql: &str,
        parameters: &[&(dyn ToSql + Sync)],
        decode: fn(&postgres::Row) -> Result<T, ArchiveError>,
    ) -> Result<Vec<T>, ArchiveError> {
        if self.version < LAB_VERSION {
            return Ok(Vec::new());
        }
        let rows = self.client.borrow_mut().query(sql, parameters)?;
        rows.iter().map(decode).collect()
    }

    /// How many rows `sql` with `parameters` changed, in a transaction
    /// of its own.
    fn lab_execute(
        &self,
        sql: &str,
        parameters: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, ArchiveError> {
        Ok(self.client.borrow_mut().execute(sql, parameters)?)
    }
}

impl LabStore for PgArchive {
    fn clock_us(&self) -> Result<i64, ArchiveError> {
        let row = self
            .client
            .borrow_mut()
            .query_one(&format!("SELECT {NOW_US}"), &[])?;
        row.read(0)
    }

    fn enqueue_jobs(&mut self, jobs: &[NewJob]) -> Result<Vec<i64>, ArchiveError> {
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        let mut ids = Vec::with_capacity(jobs.len());
        for job in jobs {
            let inserted = transaction.query_opt(
                &format!(
                    "INSERT INTO lab_jobs (pool, kind, owner, job_key, payload, priority, \
                     state, created_us) VALUES ($1, $2, $3, $4, $5, $6, 'queued', {NOW_US}) \
                     ON CONFLICT (job_key) DO NOTHING RETURNING id"
                ),
                &[
                    &job.pool,
                    &job.kind,
                    &job.owner,
                    &job.key,
                    &job.payload,
                    &job.priority,
                ],
            )?;
            let row = match inserted {
                Some(row) => row,
                None => transaction
                    .query_one("SELECT id FROM lab_jobs WHERE job_key = $1", &[&job.key])?,
            };
            ids.push(row.read(0)?);
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
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        transaction.execute(
            &format!(
                "UPDATE lab_jobs SET state = 'failed', finished_us = {NOW_US}, result = $3 \
                 WHERE id IN (SELECT id FROM lab_jobs WHERE pool = ANY($1) \
                 AND state = 'leased' AND lease_expires_us < {NOW_US} AND attempts >= $2 \
                 FOR UPDATE SKIP LOCKED)"
            ),
            &[&pools, &MAX_ATTEMPTS, &given_up()],
        )?;
        let row = transaction.query_opt(
            &format!(
                "WITH next AS (SELECT id FROM lab_jobs WHERE pool = ANY($1) \
                 AND (state = 'queued' OR (state = 'leased' \
                 AND lease_expires_us < {NOW_US} AND attempts < $2)) \
                 ORDER BY priority DESC, id LIMIT 1 FOR UPDATE SKIP LOCKED) \
                 UPDATE lab_jobs SET state = 'leased', worker = $3, \
                 attempts = lab_jobs.attempts + 1, leased_us = {NOW_US}, \
                 lease_expires_us = {NOW_US} + $4 \
                 FROM next WHERE lab_jobs.id = next.id RETURNING {}",
                qualified(JOB_COLUMNS, "lab_jobs")
            ),
            &[&pools, &MAX_ATTEMPTS, &worker, &lease_us],
        )?;
        let job = row.map(|row| Job::from_row(&row)).transpose()?;
        transaction.commit()?;
        Ok(job)
    }

    fn heartbeat_job(&mut self, lease: Lease, lease_us: i64) -> Result<bool, ArchiveError> {
        let changed = self.lab_execute(
            &format!(
                "UPDATE lab_jobs SET lease_expires_us = {NOW_US} + $3 \
                 WHERE id = $1 AND attempts = $2 AND state = 'leased'"
            ),
            &[&lease.job_id, &lease.attempt, &lease_us],
        )?;
        Ok(changed == 1)
    }

    fn finish_job(
        &mut self,
        lease: Lease,
        runs: &[CanonicalRun],
        result: &str,
    ) -> Result<Finished, ArchiveError> {
        let values = values_in_id_order(runs)?;
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        let row = transaction.query_opt(
            "SELECT state, attempts FROM lab_jobs WHERE id = $1 FOR UPDATE",
            &[&lease.job_id],
        )?;
        let Some(row) = row else {
            return Ok(Finished::LeaseLost);
        };
        let state: String = row.read(0)?;
        let attempts: i64 = row.read(1)?;
        match (state.as_str(), attempts == lease.attempt) {
            ("leased", true) => {}
            ("done", true) => return Ok(Finished::AlreadyDone),
            _ => return Ok(Finished::LeaseLost),
        }
        if let Err(err) = insert_runs(&mut transaction, &values) {
            drop(transaction);
            drop(client);
            return Err(denied_or(self, runs, err));
        }
        transaction.execute(
            &format!(
                "UPDATE lab_jobs SET state = 'done', finished_us = {NOW_US}, result = $2 \
                 WHERE id = $1"
            ),
            &[&lease.job_id, &result],
        )?;
        commit(self, transaction)?;
        Ok(Finished::Done)
    }

    fn release_job(&mut self, lease: Lease) -> Result<bool, ArchiveError> {
        let changed = self.lab_execute(
            "UPDATE lab_jobs SET state = 'queued', lease_expires_us = NULL \
             WHERE id = $1 AND attempts = $2 AND state = 'leased'",
            &[&lease.job_id, &lease.attempt],
        )?;
        Ok(changed == 1)
    }

    fn cancel_jobs(&mut self, owner: &str, reason: &str) -> Result<u64, ArchiveError> {
        self.lab_execute(
            &format!(
                "UPDATE lab_jobs SET state = 'failed', finished_us = {NOW_US}, result = $2 \
                 WHERE owner = $1 AND state = 'queued'"
            ),
            &[&owner, &given_up_because(reason)],
        )
    }

    fn jobs(&self, filter: &JobFilter) -> Result<Vec<Job>, ArchiveError> {
        let states: Vec<&str> = filter.states.iter().map(|state| state.name()).collect();
        let all_states = states.is_empty();
        self.lab_rows(
            &format!(
                "SELECT {JOB_COLUMNS} FROM lab_jobs \
                 WHERE ($1::text IS NULL OR owner = $1) AND ($3 OR state = ANY($2)) \
                 ORDER BY id"
            ),
            &[&filter.owner, &states, &all_states],
            Job::from_row,
        )
    }

    fn jobs_by_key(&self, keys: &[String]) -> Result<Vec<Job>, ArchiveError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        self.lab_rows(
            &format!("SELECT {JOB_COLUMNS} FROM lab_jobs WHERE job_key = ANY($1)"),
            &[&keys],
            Job::from_row,
        )
    }

    fn note_worker(&mut self, note: &WorkerNote) -> Result<(), ArchiveError> {
        self.lab_execute(
            &format!(
                "INSERT INTO lab_workers (name, pool, host, pid, job_id, started_us, seen_us) \
                 VALUES ($1, $2, $3, $4, $5, {NOW_US}, {NOW_US}) \
                 ON CONFLICT (name) DO UPDATE SET pool = $2, host = $3, \
                 started_us = CASE WHEN lab_workers.pid = $4 AND lab_workers.host = $3 \
                 THEN lab_workers.started_us ELSE {NOW_US} END, \
                 pid = $4, job_id = $5, seen_us = {NOW_US}"
            ),
            &[&note.name, &note.pool, &note.host, &note.pid, &note.job_id],
        )?;
        Ok(())
    }

    fn workers(&self) -> Result<Vec<Worker>, ArchiveError> {
        self.lab_rows(
            &format!("SELECT {WORKER_COLUMNS} FROM lab_workers ORDER BY name"),
            &[],
            Worker::from_row,
        )
    }

    fn note_track(&mut self, key: &str, spec: &str) -> Result<(), ArchiveError> {
        self.lab_execute(
            &format!(
                "INSERT INTO lab_tracks (track_key, spec, created_us, seen_us) \
                 VALUES ($1, $2, {NOW_US}, {NOW_US}) \
                 ON CONFLICT (track_key) DO UPDATE SET spec = $2, seen_us = {NOW_US}"
            ),
            &[&key, &spec],
        )?;
        Ok(())
    }

    fn tracks(&self) -> Result<Vec<Track>, ArchiveError> {
        self.lab_rows(
            &format!("SELECT {TRACK_COLUMNS} FROM lab_tracks ORDER BY track_key"),
            &[],
            Track::from_row,
        )
    }

    fn open_regression(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<Opened, ArchiveError> {
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        let inserted = transaction.query_opt(
            &format!(
                "INSERT INTO lab_regressions (track, good, bad, state, detail, opened_us, \
                 updated_us) VALUES ($1, $2, $3, 'open', $4, {NOW_US}, {NOW_US}) \
                 ON CONFLICT (track, good, bad) DO UPDATE SET state = 'open', \
                 detail = excluded.detail, opened_us = excluded.opened_us, \
                 updated_us = excluded.updated_us \
                 WHERE lab_regressions.state = 'suspected' RETURNING id"
            ),
            &[&track, &good, &bad, &detail],
        );
        match inserted {
            Ok(Some(row)) => {
                let id = row.read(0)?;
                transaction.commit()?;
                return Ok(Opened::New(id));
            }
            Ok(None) => {}
            // Another regression of the track is active: the unique index
            // on active regressions says so, whoever opened it.
            Err(err) if err.code() == Some(&SqlState::UNIQUE_VIOLATION) => {}
            Err(err) => return Err(err.into()),
        }
        drop(transaction);
        let same = client.query_opt(
            "SELECT id FROM lab_regressions WHERE track = $1 AND good = $2 AND bad = $3",
            &[&track, &good, &bad],
        )?;
        if let Some(row) = same {
            return Ok(Opened::Existing(row.read(0)?));
        }
        let active = client.query_opt(
            "SELECT id FROM lab_regressions WHERE track = $1 AND state IN ('open', 'bisecting')",
            &[&track],
        )?;
        Ok(Opened::AnotherActive(match active {
            Some(row) => row.read(0)?,
            None => 0,
        }))
    }

    fn note_suspicion(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<bool, ArchiveError> {
        let added = self.lab_execute(
            &format!(
                "INSERT INTO lab_regressions (track, good, bad, state, detail, opened_us, \
                 updated_us) VALUES ($1, $2, $3, 'suspected', $4, {NOW_US}, {NOW_US}) \
                 ON CONFLICT (track, good, bad) DO NOTHING"
            ),
            &[&track, &good, &bad, &detail],
        )?;
        Ok(added == 1)
    }

    fn dismiss_suspicion(
        &mut self,
        track: &str,
        good: &str,
        bad: &str,
        detail: &str,
    ) -> Result<bool, ArchiveError> {
        let added = self.lab_execute(
            &format!(
                "INSERT INTO lab_regressions (track, good, bad, state, detail, opened_us, \
                 updated_us) VALUES ($1, $2, $3, 'dismissed', $4, {NOW_US}, {NOW_US}) \
                 ON CONFLICT (track, good, bad) DO UPDATE SET state = 'dismissed', \
                 detail = excluded.detail, updated_us = excluded.updated_us \
                 WHERE lab_regressions.state = 'suspected'"
            ),
            &[&track, &good, &bad, &detail],
        )?;
        Ok(added == 1)
    }

    fn regressions(&self, track: Option<&str>) -> Result<Vec<Regression>, ArchiveError> {
        self.lab_rows(
            &format!(
                "SELECT {REGRESSION_COLUMNS} FROM lab_regressions \
                 WHERE $1::text IS NULL OR track = $1 ORDER BY id"
            ),
            &[&track],
            Regression::from_row,
        )
    }

    fn hold_regression(
        &mut self,
        id: i64,
        driver: &str,
        hold_us: i64,
    ) -> Result<bool, ArchiveError> {
        let changed = self.lab_execute(
            &format!(
                "UPDATE lab_regressions SET driver = $2, driver_expires_us = {NOW_US} + $3 \
                 WHERE id = $1 AND state IN ('open', 'bisecting') \
                 AND (driver IS NULL OR driver = $2 OR driver_expires_us < {NOW_US})"
            ),
            &[&id, &driver, &hold_us],
        )?;
        Ok(changed == 1)
    }

    fn release_regression(&mut self, id: i64, driver: &str) -> Result<(), ArchiveError> {
        self.lab_execute(
            "UPDATE lab_regressions SET driver = NULL, driver_expires_us = NULL \
             WHERE id = $1 AND driver = $2",
            &[&id, &driver],
        )?;
        Ok(())
    }

    fn set_regression_session(
        &mut self,
        id: i64,
        driver: &str,
        session_id: i64,
    ) -> Result<bool, ArchiveError> {
        let changed = self.lab_execute(
            &format!(
                "UPDATE lab_regressions SET state = 'bisecting', session_id = $3, \
                 updated_us = {NOW_US} \
                 WHERE id = $1 AND driver = $2 AND state IN ('open', 'bisecting')"
            ),
            &[&id, &driver, &session_id],
        )?;
        Ok(changed == 1)
    }

    fn end_regression_bisection(
        &mut self,
        id: i64,
        driver: &str,
        end: &BisectionEnd,
    ) -> Result<bool, ArchiveError> {
        let (state, culprit) = match end {
            BisectionEnd::Culprit { culprit, .. } => {
                (RegressionState::Bisected, Some(culprit.as_str()))
            }
            BisectionEnd::Refused => (RegressionState::Refused, None),
        };
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        let changed = transaction.execute(
            &format!(
                "UPDATE lab_regressions SET state = $3, culprit = $4, driver = NULL, \
                 driver_expires_us = NULL, updated_us = {NOW_US} \
                 WHERE id = $1 AND driver = $2 AND state IN ('open', 'bisecting')"
            ),
            &[&id, &driver, &state.name(), &culprit],
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
            transaction.execute(
                &format!(
                    "INSERT INTO lab_notifications (regression_id, command, body, \
                     created_us, sent_us, next_attempt_us) VALUES ($1, $2, $3, {NOW_US}, \
                     CASE WHEN $2::text IS NULL THEN {NOW_US} END, {NOW_US})"
                ),
                &[&id, command, report],
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
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        let changed = transaction.execute(
            &format!(
                "UPDATE lab_regressions SET state = 'fixed', fixed_by = $2, \
                 updated_us = {NOW_US} WHERE id = $1 AND state IN ('bisected', 'refused')"
            ),
            &[&id, &fixed_by],
        )?;
        if changed != 1 {
            return Ok(false);
        }
        transaction.execute(
            "DELETE FROM lab_regressions WHERE track = $1 AND bad = $2 AND state = 'suspected'",
            &[&suspicion_track, &fixed_by],
        )?;
        transaction.commit()?;
        Ok(true)
    }

    fn take_notification(
        &mut self,
        sender: &str,
        hold_us: i64,
    ) -> Result<Option<Notification>, ArchiveError> {
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        let row = transaction.query_opt(
            &format!(
                "WITH next AS (SELECT id FROM lab_notifications WHERE sent_us IS NULL \
                 AND next_attempt_us <= {NOW_US} \
                 AND (sender IS NULL OR sender_expires_us < {NOW_US}) \
                 ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED) \
                 UPDATE lab_notifications SET sender = $1, \
                 sender_expires_us = {NOW_US} + $2, \
                 attempts = lab_notifications.attempts + 1 \
                 FROM next WHERE lab_notifications.id = next.id RETURNING {}",
                qualified(NOTIFICATION_COLUMNS, "lab_notifications")
            ),
            &[&sender, &hold_us],
        )?;
        let notification = row.map(|row| Notification::from_row(&row)).transpose()?;
        transaction.commit()?;
        Ok(notification)
    }

    fn notification_sent(&mut self, hold: SendHold) -> Result<bool, ArchiveError> {
        let changed = self.lab_execute(
            &format!(
                "UPDATE lab_notifications SET sent_us = {NOW_US}, sender = NULL, \
                 sender_expires_us = NULL, last_error = NULL \
                 WHERE id = $1 AND attempts = $2 AND sent_us IS NULL"
            ),
            &[&hold.notification_id, &hold.attempt],
        )?;
        Ok(changed == 1)
    }

    fn notification_failed(
        &mut self,
        hold: SendHold,
        error: &str,
        retry_after_us: i64,
    ) -> Result<bool, ArchiveError> {
        let changed = self.lab_execute(
            &format!(
                "UPDATE lab_notifications SET last_error = $3, \
                 next_attempt_us = {NOW_US} + $4, sender = NULL, sender_expires_us = NULL \
                 WHERE id = $1 AND attempts = $2 AND sent_us IS NULL"
            ),
            &[
                &hold.notification_id,
                &hold.attempt,
                &error,
                &retry_after_us,
            ],
        )?;
        Ok(changed == 1)
    }

    fn notifications(&self) -> Result<Vec<Notification>, ArchiveError> {
        self.lab_rows(
            &format!("SELECT {NOTIFICATION_COLUMNS} FROM lab_notifications ORDER BY id"),
            &[],
            Notification::from_row,
        )
    }
}
