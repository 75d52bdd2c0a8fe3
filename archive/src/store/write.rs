//! Storing runs and merging archives: every write one immediate
//! transaction, a run already present left as it is.

use super::open::{classify_open_error, open_existing, read_header};
use super::query::RUN_COLUMNS;
use super::{CanonicalRun, SqliteArchive};
use crate::ArchiveError;
use crate::schema::{self, V2_METRICS};
use rusqlite::{Connection, TransactionBehavior, params};
use serde::Serialize;
use std::path::Path;

/// What storing one run did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StoreOutcome {
    /// The run was new and is now stored.
    Added,
    /// A run with the same id was already stored; nothing changed.
    AlreadyPresent,
}

/// Counts of a batch store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StoreCounts {
    /// Runs that were new.
    pub added: u64,
    /// Runs already present.
    pub already_present: u64,
}

/// Counts of a merge.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MergeCounts {
    /// Runs in the other archive.
    pub examined: u64,
    /// Runs copied in.
    pub added: u64,
    /// Runs this archive already had.
    pub already_present: u64,
}

impl SqliteArchive {
    /// Stores every run in one transaction: all of them or, on failure,
    /// none.
    pub fn store_all(&mut self, runs: &[CanonicalRun]) -> Result<StoreCounts, ArchiveError> {
        self.check_before_write()?;
        self.store_all_checked(runs)
            .map_err(|err| self.write_error(err))
    }

    fn store_all_checked(&mut self, runs: &[CanonicalRun]) -> Result<StoreCounts, ArchiveError> {
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut counts = StoreCounts::default();
        {
            let mut insert = prepare_insert(&transaction)?;
            for run in runs {
                if insert_run(&mut insert, run)? {
                    counts.added += 1;
                } else {
                    counts.already_present += 1;
                }
            }
        }
        transaction.commit()?;
        Ok(counts)
    }

    /// Copies into this archive every run of the archive at `other` that
    /// it lacks, in one transaction. Each copied run is verified first.
    /// Merging the same archive again adds nothing.
    pub fn merge_from(&mut self, other: &Path) -> Result<MergeCounts, ArchiveError> {
        self.check_before_write()?;
        self.merge_from_checked(other)
            .map_err(|err| self.write_error(err))
    }

    fn merge_from_checked(&mut self, other: &Path) -> Result<MergeCounts, ArchiveError> {
        let source = open_existing(other)?;
        let version = read_header(&source, other)?;
        if version == 0 {
            return Err(ArchiveError::NotAnArchive {
                path: other.to_path_buf(),
                detail: "no archive schema".to_string(),
            });
        }
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
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
                let run =
                    CanonicalRun::from_json(&bytes).map_err(|err| ArchiveError::DamagedRun {
                        id: id.clone(),
                        detail: format!("in {}: {err}", other.display()),
                    })?;
                if run.record.id != id {
                    return Err(ArchiveError::DamagedRun {
                        id,
                        detail: format!(
                            "in {}: the record's id is {}",
                            other.display(),
                            run.record.id
                        ),
                    });
                }
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
}

/// The statements that store one run: its `runs` row and its
/// `run_series` row, in the caller's transaction.
struct Insert<'conn> {
    run: rusqlite::Statement<'conn>,
    series: rusqlite::Statement<'conn>,
}

fn prepare_insert(connection: &Connection) -> Result<Insert<'_>, ArchiveError> {
    let metric_columns: Vec<&str> = V2_METRICS
        .iter()
        .map(|m| schema::metric_column(*m))
        .collect();
    let sql = format!(
        "INSERT INTO runs ({RUN_COLUMNS}, record, {}, imported_at) \
         VALUES ({}) ON CONFLICT (id) DO NOTHING",
        metric_columns.join(", "),
        (1..=14 + metric_columns.len())
            .map(|idx| format!("?{idx}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(Insert {
        run: connection.prepare(&sql)?,
        series: connection.prepare(
            "INSERT INTO run_series (config_key, started_at, run_id, spec_key, series) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )?,
    })
}

/// Inserts one run and its history row; false when its id was already
/// present.
fn insert_run(insert: &mut Insert<'_>, run: &CanonicalRun) -> Result<bool, ArchiveError> {
    let record = &run.record;
    let metrics = V2_METRICS.map(|metric| record.value(metric));
    let damaged = |detail: String| ArchiveError::DamagedRun {
        id: record.id.clone(),
        detail,
    };
    let spec_key = record.compute_spec_key()?;
    let series = schema::series_json(record).map_err(|err| damaged(err.to_string()))?;
    let changed = insert.run.execute(params![
        record.id,
        record.subject.commit,
        record.subject.describe,
        record.subject.label,
        record.config_key,
        record.testbed,
        record.spec.test.name(),
        record.source.tool,
        run_record::time::sortable_utc(&record.started_at),
        record.summary.n_iterations,
        record.summary.throughput_bps.mean,
        record.summary.transaction_rate.as_ref().map(|s| s.mean),
        run.bytes,
        metrics[0],
        metrics[1],
        metrics[2],
        metrics[3],
        metrics[4],
        metrics[5],
        metrics[6],
        metrics[7],
        metrics[8],
        record.source.undated.then_some(&record.started_at),
    ])?;
    if changed != 1 {
        return Ok(false);
    }
    insert.series.execute(params![
        record.config_key,
        run_record::time::sortable_utc(&record.started_at),
        record.id,
        spec_key,
        series
    ])?;
    Ok(true)
}
