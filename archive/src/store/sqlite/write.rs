//! Storing runs in a file and merging another file in: every write one
//! immediate transaction, a run already present left as it is, each run
//! added stored with who wrote it ([`Storer`]: a merged run too, since
//! who stored a run in the other file is that file's to say).

use super::open::{classify_open_error, open_existing, read_header};
use super::storer::Storer;
use crate::ArchiveError;
use crate::store::CanonicalRun;
use crate::store::write::{
    MergeCounts, N_INSERT_COLUMNS, RunValues, SERIES_COLUMNS, StoreCounts, insert_columns,
};
use rusqlite::{Connection, TransactionBehavior};
use std::path::Path;

/// Runs from which a store is a bulk write, given [`BULK_CACHE_KIB`].
const BULK_RUNS: usize = 1000;

/// The page cache of a connection once it has stored a bulk of runs, in
/// KiB: SQLite's default of 2 MiB holds little of the indexes a batch
/// inserts into at places all over them (ids are hashes), so pages were
/// written to the WAL before the commit to make room and read back from
/// it, a third of an import's time. The cache takes memory only as pages
/// are read, up to this.
const BULK_CACHE_KIB: i64 = 32 * 1024;

/// Stores every run in one transaction: all of them or, on failure,
/// none.
pub(super) fn store_all(
    connection: &mut Connection,
    runs: &[CanonicalRun],
) -> Result<StoreCounts, ArchiveError> {
    if runs.len() >= BULK_RUNS {
        // Negative: a size in KiB rather than in pages.
        connection.pragma_update(None, "cache_size", -BULK_CACHE_KIB)?;
    }
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let counts = store_in(&transaction, runs)?;
    transaction.commit()?;
    Ok(counts)
}

/// Stores every run in the caller's transaction (`transaction`), a run
/// already present left as it is.
pub(super) fn store_in(
    transaction: &Connection,
    runs: &[CanonicalRun],
) -> Result<StoreCounts, ArchiveError> {
    let mut counts = StoreCounts::default();
    let mut insert = prepare_insert(transaction)?;
    for run in runs {
        if insert_run(&mut insert, run)? {
            counts.added += 1;
        } else {
            counts.already_present += 1;
        }
    }
    Ok(counts)
}

/// Copies into the archive every run of the archive at `other` that it
/// lacks, in one transaction. Each copied run is verified first. Merging
/// the same archive again adds nothing.
pub(super) fn merge_from(
    connection: &mut Connection,
    other: &Path,
) -> Result<MergeCounts, ArchiveError> {
    let source = open_existing(other)?;
    let version = read_header(&source, other)?;
    if version == 0 {
        return Err(ArchiveError::NotAnArchive {
            path: other.to_path_buf(),
            detail: "no archive schema".to_string(),
        });
    }
    let transaction = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut counts = MergeCounts::default();
    {
        let mut exists = transaction.prepare("SELECT 1 FROM runs WHERE id = ?1")?;
        let mut insert = prepare_insert(&transaction)?;
        let mut select = source
            .prepare("SELECT id, record FROM runs ORDER BY rowid")
            .map_err(|err| classify_open_error(other, err))?;
        let mut rows = select.query([])?;
        while let Some(row) = rows.next()? {
            counts.examined += 1;
            let id: String = row.get(0)?;
            if exists.exists([&id])? {
                counts.already_present += 1;
                continue;
            }
            let bytes: Vec<u8> = row.get(1)?;
            let run = match CanonicalRun::copied(&id, &bytes) {
                Ok(run) => run,
                Err(refused) => {
                    counts.refused.push(refused);
                    continue;
                }
            };
            if insert_run(&mut insert, &run)? {
                counts.added += 1;
            } else {
                counts.already_present += 1;
            }
        }
    }
    transaction.commit()?;
    Ok(counts)
}

/// The statements that store one run: its `runs` row and its
/// `run_series` row, in the caller's transaction, and who stores it.
struct Insert<'conn> {
    run: rusqlite::Statement<'conn>,
    series: rusqlite::Statement<'conn>,
    storer: Storer,
}

fn prepare_insert(connection: &Connection) -> Result<Insert<'_>, ArchiveError> {
    let placeholders = |n_columns: usize| {
        (1..=n_columns)
            .map(|idx| format!("?{idx}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    Ok(Insert {
        run: connection.prepare(&format!(
            "INSERT INTO runs ({}, stored_by, stored_from) VALUES ({}) \
             ON CONFLICT (id) DO NOTHING",
            insert_columns(),
            placeholders(N_INSERT_COLUMNS + 2)
        ))?,
        series: connection.prepare(&format!(
            "INSERT INTO run_series ({SERIES_COLUMNS}) VALUES ({})",
            placeholders(5)
        ))?,
        storer: Storer::of_this_process(),
    })
}

/// Inserts one run and its history row; false when its id was already
/// present.
fn insert_run(insert: &mut Insert<'_>, run: &CanonicalRun) -> Result<bool, ArchiveError> {
    let values = RunValues::of(run)?;
    let storer: [&dyn rusqlite::ToSql; 2] = [&insert.storer.user, &insert.storer.host];
    let row = values
        .run
        .iter()
        .map(|value| value as &dyn rusqlite::ToSql)
        .chain(storer);
    let changed = insert.run.execute(rusqlite::params_from_iter(row))?;
    if changed != 1 {
        return Ok(false);
    }
    insert
        .series
        .execute(rusqlite::params_from_iter(&values.series))?;
    Ok(true)
}
