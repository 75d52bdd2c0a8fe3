//! A prune of a file (see `store/prune.rs`): one `BEGIN IMMEDIATE`
//! transaction, so that no other writer adds a citation between the
//! reading of what cites runs and the deletion; a dry run reads in a
//! transaction of its own and writes nothing. Each run goes with its
//! history row, found by `run_series_by_run` (schema version 11), so the
//! foreign key's check finds no row left either. Space: the pages freed
//! stay in the file, reused by later writes, until `VACUUM`
//! ([`vacuum`]).

use super::SqliteArchive;
use crate::ArchiveError;
use crate::schema;
use crate::store::backend::Backend;
use crate::store::prune::{
    CITING_EVENTS, CITING_JOBS, CITING_REGRESSIONS, Citations, PruneSelection, Pruned,
    checked_query,
};
use crate::store::query::{Dialect, Order, RUN_COLUMNS, StoredRun, select_sql};
use crate::store::row::Columns;
use rusqlite::{Connection, TransactionBehavior};

/// The prune of `selection` on `archive`.
pub(super) fn prune(
    archive: &mut SqliteArchive,
    selection: &PruneSelection,
    dry_run: bool,
) -> Result<Pruned, ArchiveError> {
    let query = checked_query(selection)?;
    let version = archive.schema_version()?;
    if !dry_run {
        archive.check_before_write()?;
    }
    let behavior = if dry_run {
        TransactionBehavior::Deferred
    } else {
        TransactionBehavior::Immediate
    };
    let pruned = (|| {
        let transaction = archive.connection.transaction_with_behavior(behavior)?;
        let citations = citations(&transaction, version)?;
        let (sql, values) = select_sql(
            Dialect::Sqlite,
            RUN_COLUMNS,
            "runs",
            &query,
            Order::OldestFirst,
        )?;
        let mut selected = Vec::new();
        {
            let mut statement = transaction.prepare(&sql)?;
            let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
            while let Some(row) = rows.next()? {
                selected.push(StoredRun::from_row(row)?);
            }
        }
        let pruned = citations.split(selected, selection.commits.as_ref(), dry_run);
        if !dry_run {
            delete(&transaction, &pruned.removed)?;
            transaction.commit()?;
        }
        Ok::<Pruned, ArchiveError>(pruned)
    })();
    if dry_run {
        pruned
    } else {
        pruned.map_err(|err| archive.write_error(err))
    }
}

/// What cites runs in the file, read in the caller's transaction; a file
/// older than the lab's tables (read, not upgraded) has only journals.
fn citations(connection: &Connection, version: u32) -> Result<Citations, ArchiveError> {
    let mut citations = Citations::default();
    let mut events = connection.prepare(CITING_EVENTS)?;
    let mut rows = events.query([])?;
    while let Some(row) = rows.next()? {
        citations.note_event(row.read(0)?, row.read_text_or_null(1)?.unwrap_or("null"))?;
    }
    if version < schema::LAB_VERSION {
        return Ok(citations);
    }
    let mut jobs = connection.prepare(CITING_JOBS)?;
    let mut rows = jobs.query([])?;
    while let Some(row) = rows.next()? {
        let payload: String = row.read(1)?;
        let result: String = row.read(2)?;
        citations.note_job(row.read(0)?, &payload, &result)?;
    }
    let mut regressions = connection.prepare(CITING_REGRESSIONS)?;
    let mut rows = regressions.query([])?;
    while let Some(row) = rows.next()? {
        citations.note_regression(
            row.read(0)?,
            [row.read(1)?, row.read(2)?, row.read(3)?, row.read(4)?],
        );
    }
    Ok(citations)
}

/// Deletes `runs` and their history rows in the caller's transaction.
fn delete(connection: &Connection, runs: &[StoredRun]) -> Result<(), ArchiveError> {
    let mut series = connection.prepare("DELETE FROM run_series WHERE run_id = ?1")?;
    let mut run = connection.prepare("DELETE FROM runs WHERE id = ?1")?;
    for stored in runs {
        series.execute([&stored.id])?;
        run.execute([&stored.id])?;
    }
    Ok(())
}

/// Rewrites the file without its free pages (`VACUUM`), then empties the
/// write-ahead log into it, so that the file shrinks on disk now.
pub(super) fn vacuum(archive: &mut SqliteArchive) -> Result<(), ArchiveError> {
    archive.check_before_write()?;
    let done = archive.connection.execute_batch("VACUUM").and_then(|()| {
        archive
            .connection
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
    });
    done.map_err(|err| archive.write_error(err.into()))
}
