//! `archive check` on a file: `PRAGMA integrity_check`, the foreign
//! keys, and every stored run against its columns and its history row
//! (the checks of a row are shared with PostgreSQL, `store/check.rs`).
//!
//! A damaged file is checked as far as it can be read: the integrity
//! check comes first, then the runs are read in rowid order, and a page
//! that cannot be read is stepped over (further each time it fails
//! again), so that the report lists what is wrong and what could not be
//! read rather than stopping at SQLite's first "malformed".

use super::open::read_header;
use crate::ArchiveError;
use crate::schema::{self, CURRENT_VERSION};
use crate::store::check::{
    CheckReport, DamagedRun, FigureColumns, check_series_row, run_problem, series_check_sql,
};
use crate::store::query::series_join;
use rusqlite::Connection;
use std::path::Path;

/// The check of an open connection to the file at `path`; what cannot be
/// read is reported, not returned as an error.
pub(super) fn check_connection(
    connection: &Connection,
    path: &Path,
) -> Result<CheckReport, ArchiveError> {
    let mut unreadable = Vec::new();
    let mut integrity = Vec::new();
    if let Err(err) = pragma_lines(connection, "PRAGMA integrity_check", |line| {
        integrity.push(line)
    }) {
        integrity.push(format!("integrity_check stopped: {err}"));
    }
    let schema_version = match read_header(connection, path) {
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
        let figure_columns = FigureColumns {
            metrics: schema_version >= 2,
            imported_at: schema_version >= 4,
        };
        walk_runs(connection, figure_columns, &mut unreadable, |row| {
            n_runs += 1;
            damaged_runs.extend(run_problem(row, figure_columns));
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

/// How many times the walk over a damaged `runs` table steps over a page
/// that cannot be read before it gives up on the rest.
const MAX_READ_FAILURES: u32 = 64;

/// Calls `visit` with every `runs` row that can be read, as
/// `figure_columns` reads it, in rowid order; a stretch of the table that
/// cannot be read is stepped over and said in `unreadable`.
fn walk_runs(
    connection: &Connection,
    figure_columns: FigureColumns,
    unreadable: &mut Vec<String>,
    mut visit: impl FnMut(&rusqlite::Row<'_>),
) {
    // The rowid last, after the columns the check of a run reads.
    let rowid_idx = figure_columns.len();
    let columns = format!("{}, rowid", figure_columns.columns());
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
                let rowid: i64 = row.get(rowid_idx)?;
                if let Some((first, err)) = skipped.take() {
                    unreadable.push(format!("runs of rowids {first} to {}: {err}", rowid - 1));
                }
                read_until = Some(rowid);
                visit(row);
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

/// Adds to `damaged_runs` every run missing from `run_series` or whose
/// row there (`spec_key`, `series`) disagrees with its record; runs
/// whose record does not decode are already listed. A `run_series`
/// row without its run is a foreign key violation.
fn check_series(
    connection: &Connection,
    version: u32,
    damaged_runs: &mut Vec<DamagedRun>,
) -> Result<(), ArchiveError> {
    // A file's `run_series` has no label to disagree with its run's.
    let mut statement = connection.prepare(&series_check_sql(series_join(version), "false"))?;
    let mut rows = statement.query([])?;
    while let Some(row) = rows.next()? {
        check_series_row(row, damaged_runs)?;
    }
    Ok(())
}
