//! Storing runs on PostgreSQL: one transaction per batch a caller hands
//! over, the runs inserted in id order a few hundred per statement, a run
//! already present left as it is.

use super::PgArchive;
use crate::ArchiveError;
use crate::store::CanonicalRun;
use crate::store::write::{
    N_INSERT_COLUMNS, RunValues, SERIES_COLUMNS, StoreCounts, insert_columns,
};
use postgres::error::SqlState;
use postgres::types::ToSql;
use std::collections::BTreeSet;

/// Runs per INSERT statement: 23 parameters each, well under the
/// protocol's 65535, and few round trips for a large import.
const RUNS_PER_STATEMENT: usize = 250;

/// The columns of a history row on PostgreSQL: the file's, and the run's
/// label, by which a history of one label reads them (schema version 3).
const N_SERIES_COLUMNS: usize = 6;

/// How often a transaction the server chose as a deadlock's victim, or
/// could not serialise, is tried again before the failure is returned.
const MAX_ATTEMPTS: usize = 5;

/// `(VALUES ($1, .. $n), ($n+1, ..) ..)` for `n_rows` rows of `n_columns`.
fn placeholders(n_rows: usize, n_columns: usize) -> String {
    (0..n_rows)
        .map(|row_idx| {
            let row: Vec<String> = (1..=n_columns)
                .map(|column| format!("${}", row_idx * n_columns + column))
                .collect();
            format!("({})", row.join(", "))
        })
        .collect::<Vec<_>>()
        .join(", ")
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
/// transaction, a run already present left as it is.
pub(super) fn insert_runs(
    transaction: &mut postgres::Transaction<'_>,
    values: &[RunValues<'_>],
) -> Result<StoreCounts, ArchiveError> {
    let mut counts = StoreCounts::default();
    for chunk in values.chunks(RUNS_PER_STATEMENT) {
        let sql = format!(
            "INSERT INTO runs ({}) VALUES {} ON CONFLICT (id) DO NOTHING RETURNING id",
            insert_columns(),
            placeholders(chunk.len(), N_INSERT_COLUMNS)
        );
        let parameters: Vec<&(dyn ToSql + Sync)> = chunk
            .iter()
            .flat_map(|run| run.run.iter().map(|value| value.postgres()))
            .collect();
        let added: BTreeSet<String> = transaction
            .query(&sql, &parameters)?
            .iter()
            .map(|row| row.try_get::<_, String>(0))
            .collect::<Result<_, _>>()?;
        counts.added += added.len() as u64;
        counts.already_present += (chunk.len() - added.len()) as u64;
        let new_series: Vec<&RunValues<'_>> =
            chunk.iter().filter(|run| added.contains(run.id)).collect();
        if new_series.is_empty() {
            continue;
        }
        let sql = format!(
            "INSERT INTO run_series ({SERIES_COLUMNS}, label) VALUES {}",
            placeholders(new_series.len(), N_SERIES_COLUMNS)
        );
        let parameters: Vec<&(dyn ToSql + Sync)> = new_series
            .iter()
            .flat_map(|run| run.series.iter().chain([&run.label]))
            .map(|value| value.postgres())
            .collect();
        transaction.execute(&sql, &parameters)?;
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
