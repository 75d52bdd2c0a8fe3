//! The archive's SQL schema and its ordered migrations.
//!
//! The schema version lives in `PRAGMA user_version`; the file is marked
//! as a netbisect archive with `PRAGMA application_id`. Migration `n`
//! takes a file from version `n - 1` to version `n`; all pending
//! migrations of one open run in one transaction, so a file is never left
//! between versions.
//!
//! Version history:
//!
//! 1. `runs`: the canonical bytes of each record, keyed by its id, with
//!    indexed columns for commit, describe, label, config_key, testbed,
//!    test, source tool, start time, throughput and transaction rate.
//! 2. One column per remaining metric of [`Metric`] (latency, CPU, service
//!    demand), filled from the stored records, so history over any metric
//!    reads no JSON.
//! 3. `bisect_sessions` and `bisect_events`: bisection sessions and their
//!    journals (written by the `journal` module); at most one active
//!    session per repository.
//! 4. `imported_at`: when an undated import was imported.
//! 5. `run_series`: one row per run with its `spec_key` and `series`
//!    (every iteration's value of every metric the run measured, see
//!    [`series_json`]), filled from the stored records, so that a history
//!    reads neither records nor hashes ([`crate::Archive::series_runs`]).
//!    A side table rather than columns of `runs`: a few hundred bytes
//!    more per `runs` row would take a typical row past half a page, and
//!    SQLite would then store one row per page.
//! 6. `run_series` keyed by `(config_key, started_at, run_id)` instead of
//!    `run_id` alone, and `runs_history`, an index of `runs` on
//!    `(config_key, label, started_at, id, commit_id, test)` that holds
//!    every column a history reads of `runs`. A history of one
//!    configuration then reads neither `runs` rows (a page each, since
//!    the record makes a row most of a page) nor `run_series` rows
//!    scattered in id order: it walks the index and finds each series
//!    row beside the one before it. A history still selects from `runs`
//!    and joins `run_series` on all three columns, so a series row that
//!    disagrees with its run's key is missing, not trusted.
//! 7. `started_at` of `runs` and `run_series` written with exactly six
//!    fraction digits ([`run_record::time::sortable_utc`]), so that runs
//!    order by time whatever fraction their records' times have (a
//!    record's `...23.5Z` sorted before `...23Z` as a string). The record
//!    keeps its own time as it was.
//! 8. `runs_by_time`, an index of `runs` on `(started_at, id)`, as the
//!    PostgreSQL archive has had from its first version: the newest runs
//!    (`archive list --limit N`) are read from the end of the index
//!    instead of by sorting every row of the table, which took seconds
//!    on a million runs.
//! 9. The lab's tables (see `store/lab.rs`): `lab_jobs`, the queue of
//!    work for the testbeds' workers, each job leased to one worker at a
//!    time (`lease_expires_us`), its `job_key` unique so that asking for
//!    the same work twice adds nothing; `lab_workers`, what each worker
//!    last said it does; `lab_tracks`, what each tracker watches;
//!    `lab_regressions`, the ranges trackers suspected, confirmed or
//!    dismissed, unique by track and range and at most one active (open
//!    or bisecting) per track, so that several trackers never start two
//!    bisections of one regression; `lab_notifications`, the reports waiting for their
//!    command, one per regression. Times there are integer
//!    microseconds since the epoch, compared with the clock.
//! 10. Who stored each run: `stored_by`, the user of the process that
//!     wrote the row (the file's permissions say who may write it), and
//!     `stored_from`, the name of its host. A merged run is stored by
//!     the user who merged it in. Runs stored before this version have
//!     neither (NULL, shown as unknown).
//! 11. `run_series_by_run`, an index of `run_series` on `run_id`: a run
//!     removed (`archive prune`) takes its history row with it by its id,
//!     and the foreign key's check of each run removed finds its rows
//!     through the index instead of reading the whole table.

use crate::ArchiveError;
use run_record::record::{Metric, RunRecord};
use rusqlite::{Connection, params};
use std::collections::BTreeMap;

/// `PRAGMA application_id` of a netbisect archive ("nbis").
pub const APPLICATION_ID: i32 = 0x6e62_6973;

/// The newest schema version this build writes and reads.
pub const CURRENT_VERSION: u32 = 11;

/// The oldest schema an archive opened read-only (not migrated) may
/// have: every read but a history's works on it, and a history falls
/// back to reading the records.
pub const OLDEST_READABLE_VERSION: u32 = 4;

/// The version since which `run_series` exists and is filled.
pub const SERIES_VERSION: u32 = 5;

/// The version since which `run_series` is keyed by
/// `(config_key, started_at, run_id)`.
pub const SERIES_BY_CONFIG_VERSION: u32 = 6;

/// The version since which the lab's tables exist.
pub const LAB_VERSION: u32 = 9;

/// The version since which `runs` says who stored each run.
pub const STORED_BY_VERSION: u32 = 10;

/// A data conversion that runs inside a migration's transaction.
pub type Backfill = fn(&Connection) -> Result<(), ArchiveError>;

/// One step of the schema.
pub struct Migration {
    /// SQL run first.
    pub sql: &'static str,
    /// Data conversion run after `sql`, in the same transaction.
    pub backfill: Option<Backfill>,
}

/// Migrations in order: index 0 makes version 1.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        sql: "
            CREATE TABLE runs (
                id TEXT PRIMARY KEY NOT NULL,
                commit_id TEXT,
                describe TEXT,
                label TEXT,
                config_key TEXT NOT NULL,
                testbed TEXT NOT NULL,
                test TEXT NOT NULL,
                source_tool TEXT NOT NULL,
                started_at TEXT NOT NULL,
                n_iterations INTEGER NOT NULL,
                throughput_bps REAL NOT NULL,
                transaction_rate REAL,
                record BLOB NOT NULL
            ) STRICT;
            CREATE INDEX runs_by_commit ON runs (commit_id, config_key);
            CREATE INDEX runs_by_config ON runs (config_key, commit_id);
            CREATE INDEX runs_by_label ON runs (label, config_key);
        ",
        backfill: None,
    },
    Migration {
        sql: "
            ALTER TABLE runs ADD COLUMN latency_mean_us REAL;
            ALTER TABLE runs ADD COLUMN latency_p50_us REAL;
            ALTER TABLE runs ADD COLUMN latency_p90_us REAL;
            ALTER TABLE runs ADD COLUMN latency_p99_us REAL;
            ALTER TABLE runs ADD COLUMN latency_p999_us REAL;
            ALTER TABLE runs ADD COLUMN local_cpu_pct REAL;
            ALTER TABLE runs ADD COLUMN remote_cpu_pct REAL;
            ALTER TABLE runs ADD COLUMN local_service_demand REAL;
            ALTER TABLE runs ADD COLUMN remote_service_demand REAL;
        ",
        backfill: Some(backfill_metric_columns),
    },
    Migration {
        sql: "
            CREATE TABLE bisect_sessions (
                id INTEGER PRIMARY KEY,
                repo TEXT NOT NULL,
                spec TEXT NOT NULL CHECK (json_valid(spec)),
                config_key TEXT,
                started_at TEXT NOT NULL,
                ended_at TEXT
            ) STRICT;
            CREATE UNIQUE INDEX bisect_sessions_active ON bisect_sessions (repo)
                WHERE ended_at IS NULL;
            CREATE TABLE bisect_events (
                session_id INTEGER NOT NULL REFERENCES bisect_sessions (id),
                seq INTEGER NOT NULL,
                event TEXT NOT NULL CHECK (json_valid(event)),
                written_at TEXT NOT NULL,
                PRIMARY KEY (session_id, seq)
            ) STRICT, WITHOUT ROWID;
        ",
        backfill: None,
    },
    // When an undated run (an import whose text has no time) was
    // imported; its record's started_at says the same, outside its id.
    Migration {
        sql: "ALTER TABLE runs ADD COLUMN imported_at TEXT;",
        backfill: None,
    },
    Migration {
        sql: "
            CREATE TABLE run_series (
                run_id TEXT PRIMARY KEY NOT NULL REFERENCES runs (id),
                spec_key TEXT NOT NULL,
                series TEXT NOT NULL CHECK (json_valid(series))
            ) STRICT, WITHOUT ROWID;
        ",
        backfill: Some(backfill_series),
    },
    // The rows are copied in key order, so the new table is written
    // from left to right.
    Migration {
        sql: "
            CREATE TABLE run_series_by_config (
                config_key TEXT NOT NULL,
                started_at TEXT NOT NULL,
                run_id TEXT NOT NULL REFERENCES runs (id),
                spec_key TEXT NOT NULL,
                series TEXT NOT NULL CHECK (json_valid(series)),
                PRIMARY KEY (config_key, started_at, run_id)
            ) STRICT, WITHOUT ROWID;
            INSERT INTO run_series_by_config
                SELECT runs.config_key, runs.started_at, run_series.run_id,
                       run_series.spec_key, run_series.series
                FROM run_series JOIN runs ON runs.id = run_series.run_id
                ORDER BY 1, 2, 3;
            DROP TABLE run_series;
            ALTER TABLE run_series_by_config RENAME TO run_series;
            CREATE INDEX runs_history
                ON runs (config_key, label, started_at, id, commit_id, test);
        ",
        backfill: None,
    },
    // Times of another fraction length than six digits (none that
    // netbisect wrote): the whole seconds, then the fraction padded with
    // zeros or cut to six digits.
    Migration {
        sql: "
            UPDATE runs SET started_at = substr(started_at, 1, 19) || '.'
                || substr(substr(started_at, 21, max(length(started_at) - 21, 0))
                          || '000000', 1, 6) || 'Z'
            WHERE length(started_at) != 27 AND substr(started_at, -1) = 'Z';
            UPDATE run_series SET started_at = substr(started_at, 1, 19) || '.'
                || substr(substr(started_at, 21, max(length(started_at) - 21, 0))
                          || '000000', 1, 6) || 'Z'
            WHERE length(started_at) != 27 AND substr(started_at, -1) = 'Z';
        ",
        backfill: None,
    },
    Migration {
        sql: "CREATE INDEX runs_by_time ON runs (started_at, id);",
        backfill: None,
    },
    Migration {
        sql: "
            CREATE TABLE lab_jobs (
                id INTEGER PRIMARY KEY,
                pool TEXT NOT NULL,
                kind TEXT NOT NULL,
                owner TEXT NOT NULL,
                job_key TEXT NOT NULL UNIQUE,
                payload TEXT NOT NULL CHECK (json_valid(payload)),
                priority INTEGER NOT NULL,
                state TEXT NOT NULL
                    CHECK (state IN ('queued', 'leased', 'done', 'failed')),
                worker TEXT,
                attempts INTEGER NOT NULL DEFAULT 0,
                created_us INTEGER NOT NULL,
                leased_us INTEGER,
                lease_expires_us INTEGER,
                finished_us INTEGER,
                result TEXT CHECK (result IS NULL OR json_valid(result))
            ) STRICT;
            CREATE INDEX lab_jobs_queue ON lab_jobs (pool, state, priority DESC, id);
            CREATE INDEX lab_jobs_by_owner ON lab_jobs (owner, state);
            CREATE TABLE lab_workers (
                name TEXT PRIMARY KEY NOT NULL,
                pool TEXT NOT NULL,
                host TEXT NOT NULL,
                pid INTEGER NOT NULL,
                job_id INTEGER,
                started_us INTEGER NOT NULL,
                seen_us INTEGER NOT NULL
            ) STRICT;
            CREATE TABLE lab_tracks (
                track_key TEXT PRIMARY KEY NOT NULL,
                spec TEXT NOT NULL CHECK (json_valid(spec)),
                created_us INTEGER NOT NULL,
                seen_us INTEGER NOT NULL
            ) STRICT;
            CREATE TABLE lab_regressions (
                id INTEGER PRIMARY KEY,
                track TEXT NOT NULL,
                good TEXT NOT NULL,
                bad TEXT NOT NULL,
                state TEXT NOT NULL
                    CHECK (state IN ('suspected', 'open', 'bisecting', 'bisected', 'refused', 'fixed',
                    'dismissed')),
                detail TEXT NOT NULL CHECK (json_valid(detail)),
                session_id INTEGER REFERENCES bisect_sessions (id),
                culprit TEXT,
                fixed_by TEXT,
                driver TEXT,
                driver_expires_us INTEGER,
                opened_us INTEGER NOT NULL,
                updated_us INTEGER NOT NULL,
                UNIQUE (track, good, bad)
            ) STRICT;
            CREATE UNIQUE INDEX lab_regressions_active ON lab_regressions (track)
                WHERE state IN ('open', 'bisecting');
            CREATE TABLE lab_notifications (
                id INTEGER PRIMARY KEY,
                regression_id INTEGER NOT NULL UNIQUE REFERENCES lab_regressions (id),
                command TEXT,
                body TEXT NOT NULL,
                created_us INTEGER NOT NULL,
                sent_us INTEGER,
                attempts INTEGER NOT NULL DEFAULT 0,
                last_error TEXT,
                next_attempt_us INTEGER NOT NULL,
                sender TEXT,
                sender_expires_us INTEGER
            ) STRICT;
        ",
        backfill: None,
    },
    Migration {
        sql: "
            ALTER TABLE runs ADD COLUMN stored_by TEXT;
            ALTER TABLE runs ADD COLUMN stored_from TEXT;
        ",
        backfill: None,
    },
    // A file whose version was set back by hand, as the tests of older
    // archives do, may have the index already.
    Migration {
        sql: "CREATE INDEX IF NOT EXISTS run_series_by_run ON run_series (run_id);",
        backfill: None,
    },
];

/// Metrics stored as columns since version 2, besides the two of version 1.
pub const V2_METRICS: [Metric; 9] = [
    Metric::LatencyMeanUs,
    Metric::LatencyP50Us,
    Metric::LatencyP90Us,
    Metric::LatencyP99Us,
    Metric::LatencyP999Us,
    Metric::LocalCpuPct,
    Metric::RemoteCpuPct,
    Metric::LocalServiceDemand,
    Metric::RemoteServiceDemand,
];

/// The column holding `metric`: its name, which is a plain identifier.
pub fn metric_column(metric: Metric) -> &'static str {
    metric.name()
}

fn backfill_metric_columns(transaction: &Connection) -> Result<(), ArchiveError> {
    let mut select = transaction.prepare("SELECT id, record FROM runs")?;
    let mut update = transaction.prepare(
        "UPDATE runs SET latency_mean_us = ?2, latency_p50_us = ?3, latency_p90_us = ?4,
             latency_p99_us = ?5, latency_p999_us = ?6, local_cpu_pct = ?7,
             remote_cpu_pct = ?8, local_service_demand = ?9, remote_service_demand = ?10
         WHERE id = ?1",
    )?;
    let mut rows = select.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let bytes: Vec<u8> = row.get(1)?;
        let record = RunRecord::from_slice(&bytes).map_err(|err| ArchiveError::DamagedRun {
            id: id.clone(),
            detail: err.to_string(),
        })?;
        let values = V2_METRICS.map(|metric| record.value(metric));
        update.execute(params![
            id, values[0], values[1], values[2], values[3], values[4], values[5], values[6],
            values[7], values[8]
        ])?;
    }
    Ok(())
}

/// The `series` of `record` in `run_series`: a JSON object with, for every metric
/// the run measured, its value in each iteration, in iteration order
/// (`{"throughput_bps":[9.4e9,9.41e9]}`); metrics without a value are
/// left out. Values are finite, as in any valid record.
pub fn series_json(record: &RunRecord) -> Result<String, serde_json::Error> {
    let series: BTreeMap<&str, Vec<f64>> = Metric::ALL
        .iter()
        .map(|metric| (metric.name(), record.samples(*metric)))
        .filter(|(_, samples)| !samples.is_empty())
        .collect();
    serde_json::to_string(&series)
}

fn backfill_series(transaction: &Connection) -> Result<(), ArchiveError> {
    let mut select = transaction.prepare("SELECT id, record FROM runs")?;
    let mut insert = transaction
        .prepare("INSERT INTO run_series (run_id, spec_key, series) VALUES (?1, ?2, ?3)")?;
    let mut rows = select.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let bytes: Vec<u8> = row.get(1)?;
        let damaged = |detail: String| ArchiveError::DamagedRun {
            id: id.clone(),
            detail,
        };
        let record = RunRecord::from_slice(&bytes).map_err(|err| damaged(err.to_string()))?;
        let spec_key = record
            .compute_spec_key()
            .map_err(|err| damaged(err.to_string()))?;
        let series = series_json(&record).map_err(|err| damaged(err.to_string()))?;
        insert.execute(params![id, spec_key, series])?;
    }
    Ok(())
}
