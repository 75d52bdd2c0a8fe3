//! A prune on PostgreSQL (see `store/prune.rs`): one transaction that
//! first locks the tables that cite runs (`SHARE`: others read them, no
//! one writes them until it ends), so that no journal event, job result
//! or regression that cites a run is added between the reading of what
//! cites runs and the deletion. The runs go by their ids in parts of
//! [`IDS_PER_STATEMENT`], each with its history row, found by
//! `run_series_by_run` (schema version 5), as the foreign key's check
//! finds it. A dry run takes no lock and writes nothing. The space of the
//! rows removed is the server's: autovacuum makes it reusable.

use super::{LAB_VERSION, PgArchive};
use crate::ArchiveError;
use crate::store::prune::{
    CITING_EVENTS, CITING_JOBS, CITING_REGRESSIONS, Citations, PruneSelection, Pruned,
    checked_query,
};
use crate::store::query::{Dialect, Order, RUN_COLUMNS, StoredRun, select_sql};
use crate::store::row::Columns;
use postgres::types::{ToSql, Type};

/// Run ids per `DELETE`: one array parameter each, so that a prune of a
/// million runs is a few hundred statements.
const IDS_PER_STATEMENT: usize = 5000;

/// The prune of `selection` on `archive`.
pub(super) fn prune(
    archive: &PgArchive,
    selection: &PruneSelection,
    dry_run: bool,
) -> Result<Pruned, ArchiveError> {
    let query = checked_query(selection)?;
    let with_lab = archive.version >= LAB_VERSION;
    let mut client = archive.client.borrow_mut();
    let mut transaction = client.transaction()?;
    if !dry_run {
        transaction.batch_execute(if with_lab {
            "LOCK TABLE bisect_events, lab_jobs, lab_regressions IN SHARE MODE"
        } else {
            "LOCK TABLE bisect_events IN SHARE MODE"
        })?;
    }
    let citations = citations(&mut transaction, with_lab)?;
    let (sql, values) = select_sql(
        Dialect::Postgres,
        RUN_COLUMNS,
        "runs",
        &query,
        Order::OldestFirst,
    )?;
    let parameters: Vec<(&(dyn ToSql + Sync), Type)> = values
        .iter()
        .map(|value| (value as &(dyn ToSql + Sync), Type::TEXT))
        .collect();
    let selected = transaction
        .query_typed(&sql, &parameters)?
        .iter()
        .map(StoredRun::from_row)
        .collect::<Result<Vec<_>, _>>()?;
    let pruned = citations.split(selected, selection.commits.as_ref(), dry_run);
    if dry_run {
        return Ok(pruned);
    }
    for part in pruned.removed.chunks(IDS_PER_STATEMENT) {
        let ids: Vec<&str> = part.iter().map(|run| run.id.as_str()).collect();
        transaction.execute("DELETE FROM run_series WHERE run_id = ANY($1)", &[&ids])?;
        transaction.execute("DELETE FROM runs WHERE id = ANY($1)", &[&ids])?;
    }
    transaction.commit()?;
    Ok(pruned)
}

/// What cites runs in the database, read in the caller's transaction; a
/// database older than the lab's tables has only journals.
fn citations(
    transaction: &mut postgres::Transaction<'_>,
    with_lab: bool,
) -> Result<Citations, ArchiveError> {
    let mut citations = Citations::default();
    for row in transaction.query(CITING_EVENTS, &[])? {
        let event: String = row.read(1)?;
        citations.note_event(row.read(0)?, &event)?;
    }
    if !with_lab {
        return Ok(citations);
    }
    for row in transaction.query(CITING_JOBS, &[])? {
        let payload: String = row.read(1)?;
        let result: String = row.read(2)?;
        citations.note_job(row.read(0)?, &payload, &result)?;
    }
    for row in transaction.query(CITING_REGRESSIONS, &[])? {
        citations.note_regression(
            row.read(0)?,
            [row.read(1)?, row.read(2)?, row.read(3)?, row.read(4)?],
        );
    }
    Ok(citations)
}
