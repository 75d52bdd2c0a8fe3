//! Storing runs on PostgreSQL: one transaction per batch a caller hands
//! over, the runs inserted in id order by one prepared statement that
//! unnests a column array per column, a thousand runs at a time, a run
//! already present left as it is.

use super::PgArchive;
use crate::ArchiveError;
use crate::store::CanonicalRun;
use crate::store::write::{
    N_INSERT_COLUMNS, RunValues, SERIES_COLUMNS, StoreCounts, Value, insert_columns,
};
use postgres::error::SqlState;
use postgres::types::ToSql;
use std::collections::BTreeSet;

/// Runs per execution of the insert: a few MiB of records a message, so
/// that what the client encodes stays small beside the batch, and few
/// round trips for a large import. The statement is the same for any
/// number of runs, so it is parsed and planned once a transaction.
const RUNS_PER_STATEMENT: usize = 1000;

/// The columns of a history row on PostgreSQL: the file's, and the run's
/// label, by which a history of one label reads them (schema version 3).
const N_SERIES_COLUMNS: usize = 6;

/// How often a transaction the server chose as a deadlock's victim, or
/// could not serialise, is tried again before the failure is returned.
const MAX_ATTEMPTS: usize = 5;

/// One column of the rows a statement inserts, as the array the server
/// unnests: a row of placeholders per run made the server parse and plan
/// thousands of them for every few hundred runs.
enum Column<'a> {
    Text(Vec<Option<&'a str>>),
    Integer(Vec<i64>),
    Real(Vec<Option<f64>>),
    Bytes(Vec<&'a [u8]>),
}

impl<'a> Column<'a> {
    /// The column of `values` (one a row), of the type of the first;
    /// `None` when there is none, or a value of another type (no row
    /// [`RunValues::of`] makes).
    fn of(values: impl Iterator<Item = &'a Value<'a>>) -> Option<Column<'a>> {
        let mut values = values.peekable();
        let mut column = match values.peek()? {
            Value::Text(_) | Value::ComputedText(_) => Column::Text(Vec::new()),
            Value::Integer(_) => Column::Integer(Vec::new()),
            Value::Real(_) => Column::Real(Vec::new()),
            Value::Bytes(_) => Column::Bytes(Vec::new()),
        };
        for value in values {
            match (&mut column, value) {
                (Column::Text(texts), Value::Text(text)) => texts.push(*text),
                (Column::Text(texts), Value::ComputedText(text)) => texts.push(Some(text)),
                (Column::Integer(integers), Value::Integer(integer)) => integers.push(*integer),
                (Column::Real(reals), Value::Real(real)) => reals.push(*real),
                (Column::Bytes(blobs), Value::Bytes(bytes)) => blobs.push(bytes),
                _ => return None,
            }
        }
        Some(column)
    }

    /// The array's type, as the statement casts its parameter.
    fn sql_type(&self) -> &'static str {
        match self {
            Column::Text(_) => "text[]",
            Column::Integer(_) => "int8[]",
            Column::Real(_) => "float8[]",
            Column::Bytes(_) => "bytea[]",
        }
    }

    fn postgres(&self) -> &(dyn ToSql + Sync) {
        match self {
            Column::Text(texts) => texts,
            Column::Integer(integers) => integers,
            Column::Real(reals) => reals,
            Column::Bytes(blobs) => blobs,
        }
    }
}

/// The `n_columns` columns of `runs`, the values of column `idx` of a run
/// being `value(run, idx)`; values that do not make a column are
/// [`ArchiveError::DamagedRun`] of the first run.
fn columns_of<'a>(
    runs: &[&'a RunValues<'a>],
    n_columns: usize,
    value: impl Fn(&'a RunValues<'a>, usize) -> &'a Value<'a>,
) -> Result<Vec<Column<'a>>, ArchiveError> {
    (0..n_columns)
        .map(|column_idx| {
            Column::of(runs.iter().map(|run| value(run, column_idx))).ok_or_else(|| {
                ArchiveError::DamagedRun {
                    id: runs.first().map_or("", |run| run.id).to_string(),
                    detail: format!("its values do not fit column {column_idx} of the batch"),
                }
            })
        })
        .collect()
}

/// `INSERT INTO table (names) SELECT * FROM unnest($1::type[], ..)`, the
/// types those of `columns`; `suffix` follows.
fn unnest_insert(table: &str, names: &str, columns: &[Column<'_>], suffix: &str) -> String {
    let arrays: Vec<String> = columns
        .iter()
        .enumerate()
        .map(|(column_idx, column)| format!("${}::{}", column_idx + 1, column.sql_type()))
        .collect();
    format!(
        "INSERT INTO {table} ({names}) SELECT * FROM unnest({}){suffix}",
        arrays.join(", ")
    )
}

/// Value `idx` of a run's history row: its `run_series` values, then
/// its label.
fn series_value<'a>(run: &'a RunValues<'a>, idx: usize) -> &'a Value<'a> {
    run.series.get(idx).unwrap_or(&run.label)
}

fn parameters<'c>(columns: &'c [Column<'_>]) -> Vec<&'c (dyn ToSql + Sync)> {
    columns.iter().map(Column::postgres).collect()
}

/// Stores every run in one transaction: all of them or, on failure,
/// none. A transaction the server broke off to end a deadlock or a
/// serialisation conflict is tried again; any other failure names the
/// address ([`ArchiveError::StoreFailed`], or
/// [`ArchiveError::CommitUnknown`] when the connection was lost while
/// committing).
pub(super) fn store_all(
    archive: &mut PgArchive,
    runs: &[CanonicalRun],
) -> Result<StoreCounts, ArchiveError> {
    let values = values_in_id_order(runs)?;
    let mut attempt = 1;
    loop {
        match store_in_transaction(archive, &values) {
            Ok(mut counts) => {
                counts.already_present += (runs.len() - values.len()) as u64;
                return Ok(counts);
            }
            Err(ArchiveError::Postgres(err))
                if attempt < MAX_ATTEMPTS
                    && matches!(
                        err.code(),
                        Some(&SqlState::T_R_DEADLOCK_DETECTED)
                            | Some(&SqlState::T_R_SERIALIZATION_FAILURE)
                    ) =>
            {
                attempt += 1;
            }
            Err(ArchiveError::Postgres(error))
                if error.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) =>
            {
                return Err(denied_or(archive, runs, ArchiveError::Postgres(error)));
            }
            Err(ArchiveError::Postgres(error)) => {
                return Err(ArchiveError::StoreFailed {
                    address: archive.address.to_string(),
                    error,
                });
            }
            Err(err) => return Err(err),
        }
    }
}

/// `err`, failing to store `runs`, or where the server refused the write
/// for want of privilege (SQLSTATE 42501: a row-level security policy,
/// or no grant), [`ArchiveError::WriteDenied`] with the role it refused
/// (asked of the server once the write is rolled back, since the session
/// may have set another role than its login's) and the testbeds of the
/// runs. The caller's transaction must be over.
pub(super) fn denied_or(
    archive: &PgArchive,
    runs: &[CanonicalRun],
    err: ArchiveError,
) -> ArchiveError {
    let error = match err {
        ArchiveError::Postgres(error)
            if error.code() == Some(&SqlState::INSUFFICIENT_PRIVILEGE) =>
        {
            error
        }
        other => return other,
    };
    let role = archive
        .client
        .borrow_mut()
        .query_typed_one("SELECT current_user::text", &[])
        .and_then(|row| row.try_get::<_, String>(0))
        .ok()
        .or_else(|| archive.address.config().get_user().map(str::to_string))
        .unwrap_or_default();
    let testbeds: BTreeSet<&str> = runs
        .iter()
        .map(|run| run.record().testbed.as_str())
        .collect();
    ArchiveError::WriteDenied {
        address: archive.address.to_string(),
        role,
        testbeds: testbeds.into_iter().map(str::to_string).collect(),
        error,
    }
}

fn store_in_transaction(
    archive: &PgArchive,
    values: &[RunValues<'_>],
) -> Result<StoreCounts, ArchiveError> {
    let mut client = archive.client.borrow_mut();
    let mut transaction = client.transaction()?;
    let counts = insert_runs(&mut transaction, values)?;
    commit(archive, transaction)?;
    Ok(counts)
}

/// The values of `runs`, sorted by id and without repeats: the order in
/// which concurrent writers take their row locks without deadlocking.
pub(super) fn values_in_id_order(
    runs: &[CanonicalRun],
) -> Result<Vec<RunValues<'_>>, ArchiveError> {
    let mut sorted: Vec<&CanonicalRun> = runs.iter().collect();
    sorted.sort_by(|left, right| left.record().id.cmp(&right.record().id));
    sorted.dedup_by(|left, right| left.record().id == right.record().id);
    sorted.iter().map(|run| RunValues::of(run)).collect()
}

/// Inserts the runs of `values` (in id order) in the caller's
/// transaction, a run already present left as it is. The arrays keep
/// that order, and so does the insert: concurrent writers take their row
/// locks in the same order.
pub(super) fn insert_runs(
    transaction: &mut postgres::Transaction<'_>,
    values: &[RunValues<'_>],
) -> Result<StoreCounts, ArchiveError> {
    let mut counts = StoreCounts::default();
    // Prepared at the first chunk, whose arrays give the types.
    let mut statements: Option<(postgres::Statement, postgres::Statement)> = None;
    for chunk in values.chunks(RUNS_PER_STATEMENT) {
        let runs: Vec<&RunValues<'_>> = chunk.iter().collect();
        let columns = columns_of(&runs, N_INSERT_COLUMNS, |run, idx| &run.run[idx])?;
        let (insert_run, insert_series) = match statements {
            Some(ref prepared) => prepared,
            None => {
                let series = columns_of(&runs, N_SERIES_COLUMNS, series_value)?;
                statements.insert((
                    transaction.prepare(&unnest_insert(
                        "runs",
                        &insert_columns(),
                        &columns,
                        " ON CONFLICT (id) DO NOTHING RETURNING id",
                    ))?,
                    transaction.prepare(&unnest_insert(
                        "run_series",
                        &format!("{SERIES_COLUMNS}, label"),
                        &series,
                        "",
                    ))?,
                ))
            }
        };
        let added: BTreeSet<String> = transaction
            .query(insert_run, &parameters(&columns))?
            .iter()
            .map(|row| row.try_get::<_, String>(0))
            .collect::<Result<_, _>>()?;
        counts.added += added.len() as u64;
        counts.already_present += (chunk.len() - added.len()) as u64;
        let new_runs: Vec<&RunValues<'_>> = runs
            .into_iter()
            .filter(|run| added.contains(run.id))
            .collect();
        if new_runs.is_empty() {
            continue;
        }
        let series = columns_of(&new_runs, N_SERIES_COLUMNS, series_value)?;
        transaction.execute(insert_series, &parameters(&series))?;
    }
    Ok(counts)
}

/// Commits `transaction`, naming a failure as storing does: an answer
/// from the server means it did not commit
/// ([`ArchiveError::StoreFailed`]); no answer leaves the outcome with the
/// server ([`ArchiveError::CommitUnknown`]).
pub(super) fn commit(
    archive: &PgArchive,
    transaction: postgres::Transaction<'_>,
) -> Result<(), ArchiveError> {
    transaction.commit().map_err(|error| {
        // An answer from the server means it did not commit; no answer
        // leaves the outcome with the server.
        if error.as_db_error().is_some() {
            ArchiveError::StoreFailed {
                address: archive.address.to_string(),
                error,
            }
        } else {
            ArchiveError::CommitUnknown {
                address: archive.address.to_string(),
                error,
            }
        }
    })
}
