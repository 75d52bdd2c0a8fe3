//! The selections on a file: [`select_sql`] in SQLite's dialect, each
//! statement run on the archive's one connection and each row read by the
//! decoder its type shares with PostgreSQL.

use crate::ArchiveError;
use crate::schema;
use crate::store::SeriesRun;
use crate::store::backend::RecordVisitor;
use crate::store::query::{
    Dialect, MetricValue, N_READ_COLUMNS, Order, RunQuery, StoredRun, read_columns, select_sql,
    series_join,
};
use crate::store::row::Columns;
use crate::store::series::SERIES_RUN_COLUMNS;
use run_record::record::Metric;
use rusqlite::Connection;
use std::ops::ControlFlow;

/// Number of runs stored.
pub(super) fn count(connection: &Connection) -> Result<u64, ArchiveError> {
    let n_runs: i64 = connection.query_row("SELECT count(*) FROM runs", [], |row| row.get(0))?;
    Ok(u64::try_from(n_runs).unwrap_or(0))
}

/// How many runs `query` selects, its limit aside.
pub(super) fn count_matching(
    connection: &Connection,
    query: &RunQuery,
) -> Result<u64, ArchiveError> {
    let query = RunQuery {
        limit: None,
        ..query.clone()
    };
    let (sql, values) = select_sql(
        Dialect::Sqlite,
        "count(*)",
        "runs",
        &query,
        Order::OldestFirst,
    )?;
    let n_matches: i64 =
        connection.query_row(&sql, rusqlite::params_from_iter(values.iter()), |row| {
            row.get(0)
        })?;
    Ok(u64::try_from(n_matches).unwrap_or(0))
}

/// The selection of `columns` from `from` that `query` makes, oldest
/// first, in SQLite's dialect.
fn oldest_first(
    columns: &str,
    from: &str,
    query: &RunQuery,
) -> Result<(String, Vec<String>), ArchiveError> {
    select_sql(Dialect::Sqlite, columns, from, query, Order::OldestFirst)
}

/// Calls `each` with every row of `selection` (its SQL and parameters)
/// until it breaks off.
fn each_row(
    connection: &Connection,
    (sql, values): (String, Vec<String>),
    mut each: impl FnMut(&rusqlite::Row<'_>) -> Result<ControlFlow<()>, ArchiveError>,
) -> Result<(), ArchiveError> {
    let mut statement = connection.prepare(&sql)?;
    let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
    while let Some(row) = rows.next()? {
        if each(row)?.is_break() {
            break;
        }
    }
    Ok(())
}

/// The columns a selection of runs reads of a file at schema `version`.
fn run_columns(version: u32) -> String {
    read_columns(version >= schema::STORED_BY_VERSION)
}

pub(super) fn runs_in_order(
    connection: &Connection,
    version: u32,
    query: &RunQuery,
    order: Order,
) -> Result<Vec<StoredRun>, ArchiveError> {
    let mut runs = Vec::new();
    let selection = select_sql(Dialect::Sqlite, &run_columns(version), "runs", query, order)?;
    each_row(connection, selection, |row| {
        runs.push(StoredRun::from_row_with_storer(row)?);
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(runs)
}

/// Calls `visit` with each selected run and its canonical bytes, oldest
/// first, as one statement reads them: a reader on a file sees one state
/// of it throughout, and `visit` may make statements of its own on the
/// same connection meanwhile.
pub(super) fn for_each_record(
    connection: &Connection,
    version: u32,
    query: &RunQuery,
    visit: RecordVisitor<'_>,
) -> Result<(), ArchiveError> {
    let columns = format!("{}, record", run_columns(version));
    let selection = oldest_first(&columns, "runs", query)?;
    each_row(connection, selection, |row| {
        let run = StoredRun::from_row_with_storer(row)?;
        Ok(visit(&run, row.read_bytes(N_READ_COLUMNS)?))
    })
}

/// The run-level value of `metric` for each selected run that has it,
/// oldest first. Reads indexed columns only.
pub(super) fn metric_values(
    connection: &Connection,
    query: &RunQuery,
    metric: Metric,
) -> Result<Vec<MetricValue>, ArchiveError> {
    let mut found = Vec::new();
    let selection = oldest_first(&MetricValue::columns(metric), "runs", query)?;
    each_row(connection, selection, |row| {
        found.extend(MetricValue::from_row(row)?);
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(found)
}

/// What a history of `metric` needs of each selected run of a file at
/// schema `version`, oldest first; `None` before the file had
/// `run_series`.
pub(super) fn series_runs(
    connection: &Connection,
    version: u32,
    query: &RunQuery,
    metric: Metric,
) -> Result<Option<Vec<SeriesRun>>, ArchiveError> {
    if version < schema::SERIES_VERSION {
        return Ok(None);
    }
    let mut found = Vec::new();
    // A left join, so that a run missing from `run_series` is an error
    // rather than left out of the history.
    let selection = oldest_first(SERIES_RUN_COLUMNS, series_join(version), query)?;
    each_row(connection, selection, |row| {
        found.push(SeriesRun::from_row(row, metric)?);
        Ok(ControlFlow::Continue(()))
    })?;
    Ok(Some(found))
}
