//! `archive check`: the file's integrity, its foreign keys, and every
//! stored run against its columns (every figure among them) and its
//! history row.
//!
//! A damaged file is checked as far as it can be read: the integrity
//! check comes first, then the runs are read in rowid order, and a page
//! that cannot be read is stepped over (further each time it fails
//! again), so that the report lists what is wrong and what could not be
//! read rather than stopping at SQLite's first "malformed".

use super::query::{MISSING_SERIES, RUN_COLUMNS, StoredRun, series_join, stored_run_of};
use super::{CanonicalRun, SqliteArchive};
use crate::ArchiveError;
use crate::schema::{self, CURRENT_VERSION, V2_METRICS};
use run_record::record::{Metric, RunRecord};
use rusqlite::Connection;
use serde::Serialize;
use std::path::Path;

/// What `check` found.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CheckReport {
    /// Schema version of the file.
    pub schema_version: u32,
    /// Newest schema version this build knows.
    pub supported_version: u32,
    /// Lines of `PRAGMA integrity_check` on SQLite, the problems the
    /// checks of [`CheckReport::integrity_checks`] found on PostgreSQL
    /// (`["ok"]` when sound).
    pub integrity: Vec<String>,
    /// What `integrity` rests on where it is not SQLite's own
    /// `PRAGMA integrity_check`: one line per check made (empty on
    /// SQLite).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub integrity_checks: Vec<String>,
    /// Rows that break a foreign key.
    pub foreign_key_violations: u64,
    /// Runs stored.
    pub n_runs: u64,
    /// Runs whose bytes do not decode, or disagree with their columns.
    pub damaged_runs: Vec<DamagedRun>,
    /// What could not be read at all, and why (a damaged file): nothing
    /// is said of the runs there.
    pub unreadable: Vec<String>,
}

/// A stored run that failed verification.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DamagedRun {
    /// The id column.
    pub id: String,
    /// What is wrong.
    pub problem: String,
}

impl CheckReport {
    /// True when nothing is wrong.
    pub fn is_clean(&self) -> bool {
        self.integrity == ["ok"]
            && self.foreign_key_violations == 0
            && self.damaged_runs.is_empty()
            && self.unreadable.is_empty()
    }
}

impl SqliteArchive {
    /// Checks the file (`PRAGMA integrity_check`, foreign keys) and every
    /// stored run: its bytes decode to a valid record whose id, indexed
    /// columns and figures match the row.
    pub fn check(&self) -> Result<CheckReport, ArchiveError> {
        check_connection(&self.connection, &self.path)
    }

    /// Checks the file at `path` as it is, without creating, migrating
    /// or writing it: a damaged file gets a report of what could be read.
    /// Only a file that is no archive (or of a newer schema) is an error.
    pub fn check_file(path: &Path) -> Result<CheckReport, ArchiveError> {
        let connection = SqliteArchive::checking_connection(path)?;
        check_connection(&connection, path)
    }
}

/// The check of an open connection to the file at `path`; what cannot be
/// read is reported, not returned as an error.
fn check_connection(connection: &Connection, path: &Path) -> Result<CheckReport, ArchiveError> {
    let mut unreadable = Vec::new();
    let mut integrity = Vec::new();
    if let Err(err) = pragma_lines(connection, "PRAGMA integrity_check", |line| {
        integrity.push(line)
    }) {
        integrity.push(format!("integrity_check stopped: {err}"));
    }
    let schema_version = match super::open::read_header(connection, path) {
        Ok(version) => version,
        Err(
            err @ (ArchiveError::NotAnArchive { .. }
            | ArchiveError::NewerSchema { .. }
            | ArchiveError::Open { .. }),
        ) if integrity == ["ok"] => return Err(err),
        Err(err) => {
            unreadable.push(format!("the schema version: {err}"));
            0
        }
    };
    let mut foreign_key_violations = 0;
    if let Err(err) = pragma_lines(connection, "PRAGMA foreign_key_check", |_| {
        foreign_key_violations += 1
    }) {
        unreadable.push(format!("the foreign key check: {err}"));
    }
    let mut n_runs = 0;
    let mut damaged_runs = Vec::new();
    if schema_version > 0 {
        walk_runs(connection, schema_version, &mut unreadable, |run| {
            n_runs += 1;
            let problem = match run {
                Ok(row) => verify_row(&row.run, &row.bytes, &row.figures).err(),
                Err((_, problem)) => Some(problem.clone()),
            };
            if let Some(problem) = problem {
                let id = match run {
                    Ok(row) => row.run.id.clone(),
                    Err((id, _)) => id.clone(),
                };
                damaged_runs.push(DamagedRun { id, problem });
            }
        });
    }
    if schema_version >= schema::SERIES_VERSION
        && let Err(err) = check_series(connection, schema_version, &mut damaged_runs)
    {
        unreadable.push(format!("the history rows (run_series): {err}"));
    }
    Ok(CheckReport {
        schema_version,
        supported_version: CURRENT_VERSION,
        integrity,
        integrity_checks: Vec::new(),
        foreign_key_violations,
        n_runs,
        damaged_runs,
        unreadable,
    })
}

/// Calls `line` with each line a pragma returns, as text.
fn pragma_lines(
    connection: &Connection,
    pragma: &str,
    mut line: impl FnMut(String),
) -> Result<(), rusqlite::Error> {
    let mut statement = connection.prepare(pragma)?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let text = match row.get_ref(0)? {
            rusqlite::types::ValueRef::Text(text) => String::from_utf8_lossy(text).into_owned(),
            other => format!("{other:?}"),
        };
        line(text);
    }
    Ok(())
}

/// One `runs` row as the check reads it.
struct CheckedRow {
    run: StoredRun,
    bytes: Vec<u8>,
    figures: StoredFigures,
}

/// How many times the walk over a damaged `runs` table steps over a page
/// that cannot be read before it gives up on the rest.
const MAX_READ_FAILURES: u32 = 64;

/// Calls `visit` with every `runs` row that can be read, in rowid order
/// (a row whose columns do not parse as `(id, problem)`); a stretch of
/// the table that cannot be read is stepped over and said in
/// `unreadable`.
fn walk_runs(
    connection: &Connection,
    version: u32,
    unreadable: &mut Vec<String>,
    mut visit: impl FnMut(Result<&CheckedRow, &(String, String)>),
) {
    let mut columns = format!("{RUN_COLUMNS}, record, rowid");
    if version >= 2 {
        for metric in V2_METRICS {
            columns.push_str(", ");
            columns.push_str(schema::metric_column(metric));
        }
    }
    if version >= 4 {
        columns.push_str(", imported_at");
    }
    let last_rowid: i64 = match connection.query_row("SELECT max(rowid) FROM runs", [], |row| {
        row.get::<_, Option<i64>>(0)
    }) {
        Ok(Some(last)) => last,
        Ok(None) => return,
        Err(err) => {
            unreadable.push(format!("the runs table: {err}"));
            return;
        }
    };
    let sql = format!("SELECT {columns} FROM runs WHERE rowid >= ?1 ORDER BY rowid");
    // Rowids start at 1 unless a row was given another; the smallest is
    // read when it can be.
    let mut from_rowid = connection
        .query_row("SELECT min(rowid) FROM runs", [], |row| {
            row.get::<_, Option<i64>>(0)
        })
        .ok()
        .flatten()
        .unwrap_or(1);
    let mut step = 1_i64;
    let mut n_failures = 0;
    // The first rowid of the stretch that could not be read, and why.
    let mut skipped: Option<(i64, String)> = None;
    loop {
        let mut read_until = None;
        let outcome = (|| -> Result<(), rusqlite::Error> {
            let mut statement = connection.prepare(&sql)?;
            let mut rows = statement.query([from_rowid])?;
            while let Some(row) = rows.next()? {
                let rowid: i64 = row.get(13)?;
                if let Some((first, err)) = skipped.take() {
                    unreadable.push(format!("runs of rowids {first} to {}: {err}", rowid - 1));
                }
                read_until = Some(rowid);
                match checked_row(row, version) {
                    Ok(checked) => visit(Ok(&checked)),
                    Err(problem) => visit(Err(&problem)),
                }
            }
            Ok(())
        })();
        let Err(err) = outcome else { return };
        n_failures += 1;
        // Rows were read since the last failure: step over the next
        // rowid; none were: step twice as far as the last time.
        match read_until {
            Some(rowid) => {
                step = 1;
                skipped = Some((rowid + 1, err.to_string()));
                from_rowid = rowid + 1;
            }
            None => {
                step = step.saturating_mul(2);
                skipped.get_or_insert((from_rowid, err.to_string()));
            }
        }
        from_rowid = from_rowid.saturating_add(step);
        if from_rowid > last_rowid || n_failures >= MAX_READ_FAILURES {
            if let Some((first, err)) = skipped {
                unreadable.push(format!("runs of rowids {first} to {last_rowid}: {err}"));
            }
            return;
        }
    }
}

/// A row's columns, or `(id, problem)` when they do not parse.
fn checked_row(row: &rusqlite::Row<'_>, version: u32) -> Result<CheckedRow, (String, String)> {
    let id = row.get::<_, String>(0).unwrap_or_default();
    let wrong = |err: &dyn std::fmt::Display| (id.clone(), format!("its columns: {err}"));
    let run = stored_run_of(row).map_err(|err| wrong(&err))?;
    let bytes: Vec<u8> = row.get(12).map_err(|err| wrong(&err))?;
    let mut figures = StoredFigures::default();
    if version >= 2 {
        for (idx, metric) in V2_METRICS.iter().enumerate() {
            let value: Option<f64> = row.get(14 + idx).map_err(|err| wrong(&err))?;
            figures.metrics.push((*metric, value));
        }
    }
    if version >= 4 {
        figures.imported_at = Some(row.get(14 + V2_METRICS.len()).map_err(|err| wrong(&err))?);
    }
    Ok(CheckedRow {
        run,
        bytes,
        figures,
    })
}

/// Adds to `damaged_runs` every run missing from `run_series` or whose
/// row there (`spec_key`, `series`) disagrees with its record; runs
/// whose record does not decode are already listed. A `run_series`
/// row without its run is a foreign key violation.
fn check_series(
    connection: &Connection,
    version: u32,
    damaged_runs: &mut Vec<DamagedRun>,
) -> Result<(), ArchiveError> {
    let mut statement = connection.prepare(&format!(
        "SELECT id, spec_key, series, record, run_id IS NOT NULL FROM {} \
         ORDER BY runs.started_at, id",
        series_join(version)
    ))?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        let id: String = row.get(0)?;
        let spec_key: Option<String> = row.get(1)?;
        let series: Option<String> = row.get(2)?;
        let bytes: Vec<u8> = row.get(3)?;
        let has_series: bool = row.get(4)?;
        if damaged_runs.iter().any(|damaged| damaged.id == id) {
            continue;
        }
        if !has_series {
            damaged_runs.push(DamagedRun {
                problem: MISSING_SERIES.to_string(),
                id,
            });
            continue;
        }
        if let Some(problem) = series_problem(&bytes, spec_key, series) {
            damaged_runs.push(DamagedRun { problem, id });
        }
    }
    Ok(())
}

/// The figures of a `runs` row beyond [`StoredRun`]: the column of each
/// metric of [`V2_METRICS`] and `imported_at`, where the schema has them.
#[derive(Clone, Debug, Default)]
pub(crate) struct StoredFigures {
    /// Each metric column read, with its value.
    pub metrics: Vec<(Metric, Option<f64>)>,
    /// `imported_at`, when the schema has it.
    pub imported_at: Option<Option<String>>,
}

/// What is wrong with a run's history row (`spec_key`, `series`) given
/// its record's bytes, if anything; nothing is said of bytes that do not
/// decode (their run is listed already).
pub(crate) fn series_problem(
    bytes: &[u8],
    spec_key: Option<String>,
    series: Option<String>,
) -> Option<String> {
    let record = RunRecord::from_slice(bytes).ok()?;
    let mut wrong = Vec::new();
    if record.compute_spec_key().ok() != spec_key {
        wrong.push("spec_key");
    }
    if schema::series_json(&record).ok() != series {
        wrong.push("series");
    }
    (!wrong.is_empty()).then(|| {
        format!(
            "its run_series row disagrees with the record: {}",
            wrong.join(", ")
        )
    })
}

/// Checks that a row's bytes are a valid canonical record agreeing with
/// the row's columns and figures.
pub(crate) fn verify_row(
    run: &StoredRun,
    bytes: &[u8],
    figures: &StoredFigures,
) -> Result<(), String> {
    let canonical = CanonicalRun::from_json(bytes).map_err(|err| err.to_string())?;
    if canonical.bytes != bytes {
        return Err("stored bytes are not canonical".to_string());
    }
    let record = &canonical.record;
    let mismatches = [
        ("id", record.id != run.id),
        ("commit", record.subject.commit != run.commit),
        ("describe", record.subject.describe != run.describe),
        ("label", record.subject.label != run.label),
        ("config_key", record.config_key != run.config_key),
        ("testbed", record.testbed != run.testbed),
        ("test", record.spec.test != run.test),
        ("source_tool", record.source.tool != run.source_tool),
        (
            "started_at",
            run_record::time::sortable_utc(&record.started_at) != run.started_at,
        ),
        (
            "n_iterations",
            record.summary.n_iterations != run.n_iterations,
        ),
        (
            "throughput_bps",
            record.summary.throughput_bps.mean != run.throughput_bps,
        ),
        (
            "transaction_rate",
            record
                .summary
                .transaction_rate
                .as_ref()
                .map(|rate| rate.mean)
                != run.transaction_rate,
        ),
    ];
    let mut wrong: Vec<&str> = mismatches
        .iter()
        .filter(|(_, differs)| *differs)
        .map(|(name, _)| *name)
        .collect();
    // Every figure is compared exactly: a column holds the very f64 the
    // record's figure was when it was stored.
    for (metric, value) in &figures.metrics {
        if record.value(*metric) != *value {
            wrong.push(schema::metric_column(*metric));
        }
    }
    if let Some(imported_at) = &figures.imported_at {
        let expected = record.source.undated.then(|| record.started_at.clone());
        if *imported_at != expected {
            wrong.push("imported_at");
        }
    }
    if wrong.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "columns disagree with the record: {}",
            wrong.join(", ")
        ))
    }
}
