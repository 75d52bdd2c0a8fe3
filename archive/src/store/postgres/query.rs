//! The selections on PostgreSQL: [`select_sql`] in PostgreSQL's dialect,
//! each row read by the decoder its type shares with the file, each
//! column with checked types, so that a column of an unexpected type is
//! an error, never a panic.
//!
//! Every selection is sent with its parameters' types (all text), in one
//! round trip: no statement is prepared first and closed after, which
//! would take three, and a command makes several selections.
//!
//! The client is borrowed for one statement at a time. A walk of records
//! ([`for_each_record`]) reads them [`RECORD_BATCH`] at a time, each part
//! one selection after the last run read, and hands them over with the
//! client free, so that what it calls may use the archive meanwhile.

use super::{PgArchive, SERIES_LABEL_VERSION, STORED_BY_VERSION};
use crate::ArchiveError;
use crate::store::SeriesRun;
use crate::store::backend::RecordVisitor;
use crate::store::check::SERIES_LABEL_DISAGREES;
use crate::store::query::{
    Dialect, MetricValue, N_READ_COLUMNS, Order, QUERY_LABEL, RunPosition, RunQuery, SERIES_JOIN,
    StoredRun, checked_limit, read_columns, select_sql, select_sql_after,
};
use crate::store::row::Columns;
use crate::store::series::SERIES_RUN_COLUMNS;
use postgres::types::{ToSql, Type};
use run_record::record::Metric;

/// Runs of a walk of records read in one selection: the memory a walk
/// holds is this many records, and a walk of a million runs makes a
/// thousand selections, each a range of the index on
/// (`started_at`, `id`).
pub(super) const RECORD_BATCH: u64 = 1000;

/// The parameters of a selection as the client takes them, with their
/// type: every one is text.
fn parameters(values: &[String]) -> Vec<(&(dyn ToSql + Sync), Type)> {
    values
        .iter()
        .map(|value| (value as &(dyn ToSql + Sync), Type::TEXT))
        .collect()
}

/// The rows of `sql` with its text parameters `values`.
fn select_rows(
    archive: &PgArchive,
    (sql, values): (String, Vec<String>),
) -> Result<Vec<postgres::Row>, ArchiveError> {
    Ok(archive
        .client
        .borrow_mut()
        .query_typed(&sql, &parameters(&values))?)
}

/// The one row of `sql` with its text parameters `values`.
fn select_row(
    archive: &PgArchive,
    (sql, values): (String, Vec<String>),
) -> Result<postgres::Row, ArchiveError> {
    Ok(archive
        .client
        .borrow_mut()
        .query_typed_one(&sql, &parameters(&values))?)
}

/// Number of runs stored.
pub(super) fn count(archive: &PgArchive) -> Result<u64, ArchiveError> {
    let n_runs: i64 = select_row(
        archive,
        ("SELECT count(*) FROM runs".to_string(), Vec::new()),
    )?
    .read(0)?;
    Ok(u64::try_from(n_runs).unwrap_or(0))
}

/// How many runs `query` selects, its limit aside.
pub(super) fn count_matching(archive: &PgArchive, query: &RunQuery) -> Result<u64, ArchiveError> {
    let query = RunQuery {
        limit: None,
        ..query.clone()
    };
    let selection = select_sql(
        Dialect::Postgres,
        "count(*)",
        "runs",
        &query,
        Order::OldestFirst,
    )?;
    let n_matches: i64 = select_row(archive, selection)?.read(0)?;
    Ok(u64::try_from(n_matches).unwrap_or(0))
}

pub(super) fn runs_in_order(
    archive: &PgArchive,
    query: &RunQuery,
    order: Order,
) -> Result<Vec<StoredRun>, ArchiveError> {
    let selection = select_sql(
        Dialect::Postgres,
        &run_columns(archive),
        "runs",
        query,
        order,
    )?;
    select_rows(archive, selection)?
        .iter()
        .map(StoredRun::from_row_with_storer)
        .collect()
}

/// The columns a selection of runs reads of `archive`'s schema.
fn run_columns(archive: &PgArchive) -> String {
    read_columns(archive.version >= STORED_BY_VERSION)
}

/// Calls `visit` with each selected run and its canonical bytes, oldest
/// first, [`RECORD_BATCH`] runs a selection, the client free while
/// `visit` runs. A walk sees every run stored when it began and perhaps
/// some stored since (those that come after the last run it read), never
/// one twice.
pub(super) fn for_each_record(
    archive: &PgArchive,
    query: &RunQuery,
    visit: RecordVisitor<'_>,
) -> Result<(), ArchiveError> {
    let columns = format!("{}, record", run_columns(archive));
    // The limit is checked whole, as a selection of it all would be.
    query.limit.map(checked_limit).transpose()?;
    let mut remaining = query.limit;
    let mut after: Option<RunPosition> = None;
    loop {
        let batch = remaining.map_or(RECORD_BATCH, |remaining| remaining.min(RECORD_BATCH));
        if batch == 0 {
            return Ok(());
        }
        let part = RunQuery {
            limit: Some(batch),
            ..query.clone()
        };
        let selection = match &after {
            None => select_sql(
                Dialect::Postgres,
                &columns,
                "runs",
                &part,
                Order::OldestFirst,
            )?,
            Some(after) => select_sql_after(Dialect::Postgres, &columns, &part, after)?,
        };
        let rows = select_rows(archive, selection)?;
        for row in &rows {
            let run = StoredRun::from_row_with_storer(row)?;
            if visit(&run, row.read_bytes(N_READ_COLUMNS)?).is_break() {
                return Ok(());
            }
            after = Some(RunPosition {
                started_at: run.started_at,
                id: run.id,
            });
        }
        let n_read = rows.len() as u64;
        if n_read < batch {
            return Ok(());
        }
        remaining = remaining.map(|remaining| remaining - n_read);
    }
}

/// The run-level value of `metric` for each selected run that has it,
/// oldest first.
pub(super) fn metric_values(
    archive: &PgArchive,
    query: &RunQuery,
    metric: Metric,
) -> Result<Vec<MetricValue>, ArchiveError> {
    let columns = MetricValue::columns(metric);
    let selection = select_sql(
        Dialect::Postgres,
        &columns,
        "runs",
        query,
        Order::OldestFirst,
    )?;
    let mut found = Vec::new();
    for row in &select_rows(archive, selection)? {
        found.extend(MetricValue::from_row(row)?);
    }
    Ok(found)
}

/// What a history of `metric` needs of each selected run, from
/// `run_series`; a run missing there, or whose row there has another
/// label, is an error.
///
/// A history of one label joins `run_series` by the label too
/// ([`series_join_by_label`]): then both sides are read in the same
/// order through `runs_history` and `run_series_history` and merged,
/// where the key alone would look each run up in `run_series`'s heap.
/// The series is read whole and the metric picked from it in Rust
/// ([`SeriesRun::from_row`]), faster than the server parsing it as jsonb
/// to print the array as text again.
pub(super) fn series_runs(
    archive: &PgArchive,
    query: &RunQuery,
    metric: Metric,
) -> Result<Option<Vec<SeriesRun>>, ArchiveError> {
    let by_label = query.label.is_some() && archive.version >= SERIES_LABEL_VERSION;
    let from = if by_label {
        series_join_by_label()
    } else {
        SERIES_JOIN.to_string()
    };
    let selection = select_sql(
        Dialect::Postgres,
        SERIES_RUN_COLUMNS,
        &from,
        query,
        Order::OldestFirst,
    )?;
    let rows = select_rows(archive, selection)?;
    let mut found = Vec::with_capacity(rows.len());
    for row in &rows {
        if by_label && row.read::<Option<String>>(4)?.is_none() {
            label_disagrees(archive, row.read(0)?)?;
        }
        found.push(SeriesRun::from_row(row, metric)?);
    }
    Ok(Some(found))
}

/// Fails naming the label when run `id`, which a history joined by its
/// label did not find in `run_series`, is there under another label;
/// else leaves the run to be said missing.
fn label_disagrees(archive: &PgArchive, id: String) -> Result<(), ArchiveError> {
    let sql =
        format!("SELECT 1 FROM {SERIES_JOIN} WHERE runs.id = $1 AND run_series.run_id IS NOT NULL");
    let found = archive
        .client
        .borrow_mut()
        .query_typed_opt(&sql, &parameters(std::slice::from_ref(&id)))?;
    match found {
        Some(_) => Err(ArchiveError::DamagedRun {
            id,
            detail: SERIES_LABEL_DISAGREES.to_string(),
        }),
        None => Ok(()),
    }
}

/// [`SERIES_JOIN`] narrowed to the rows of the query's label
/// ([`QUERY_LABEL`]), from schema version 3: the condition is on
/// `run_series` alone, so that its scan is of that label's rows, and a
/// row under another label leaves its run without one.
fn series_join_by_label() -> String {
    format!("{SERIES_JOIN} AND run_series.label = {QUERY_LABEL}")
}
