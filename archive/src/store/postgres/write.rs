//! Storing runs on PostgreSQL: one transaction per batch a caller hands
//! over, the runs inserted in id order a few hundred per statement, a run
//! already present left as it is.

use super::PgArchive;
use crate::ArchiveError;
use crate::schema::{self, V2_METRICS};
use crate::store::{CanonicalRun, StoreCounts};
use postgres::error::SqlState;
use postgres::types::ToSql;
use std::collections::BTreeSet;

/// Runs per INSERT statement: 23 parameters each, well under the
/// protocol's 65535, and few round trips for a large import.
const RUNS_PER_STATEMENT: usize = 250;

/// How often a transaction the server chose as a deadlock's victim, or
/// could not serialise, is tried again before the failure is returned.
const MAX_ATTEMPTS: usize = 5;

const INSERT_COLUMNS: &str = "id, commit_id, describe, label, config_key, testbed, test, \
     source_tool, started_at, n_iterations, throughput_bps, transaction_rate, record, \
     latency_mean_us, latency_p50_us, latency_p90_us, latency_p99_us, latency_p999_us, \
     local_cpu_pct, remote_cpu_pct, local_service_demand, remote_service_demand, imported_at";

const N_INSERT_COLUMNS: usize = 23;

/// The columns of a history row: its key, what it holds, and the run's
/// label, by which a history of one label reads them (schema version 3).
const SERIES_COLUMNS: &str = "config_key, started_at, run_id, spec_key, series, label";

const N_SERIES_COLUMNS: usize = 6;

/// One run's values in the order of [`INSERT_COLUMNS`], and its history
/// row's in the order of [`SERIES_COLUMNS`]: the text columns, then the
/// label, which a run may not have.
struct RunValues<'run> {
    id: &'run str,
    run: Vec<Box<dyn ToSql + Sync + 'run>>,
    series: [String; N_SERIES_COLUMNS - 1],
    label: Option<&'run str>,
}

fn values_of(run: &CanonicalRun) -> Result<RunValues<'_>, ArchiveError> {
    let record = run.record();
    let damaged = |detail: String| ArchiveError::DamagedRun {
        id: record.id.clone(),
        detail,
    };
    let spec_key = record.compute_spec_key()?;
    let series = schema::series_json(record).map_err(|err| damaged(err.to_string()))?;
    let metrics = V2_METRICS.map(|metric| record.value(metric));
    let mut values: Vec<Box<dyn ToSql + Sync>> = vec![
        Box::new(&record.id),
        Box::new(&record.subject.commit),
        Box::new(&record.subject.describe),
        Box::new(&record.subject.label),
        Box::new(&record.config_key),
        Box::new(&record.testbed),
        Box::new(record.spec.test.name()),
        Box::new(&record.source.tool),
        // Six fraction digits, so that the column orders as the times.
        Box::new(run_record::time::sortable_utc(&record.started_at)),
        Box::new(i64::from(record.summary.n_iterations)),
        Box::new(record.summary.throughput_bps.mean),
        Box::new(record.summary.transaction_rate.as_ref().map(|s| s.mean)),
        Box::new(run.bytes()),
    ];
    for value in metrics {
        values.push(Box::new(value));
    }
    values.push(Box::new(
        record.source.undated.then_some(&record.started_at),
    ));
    Ok(RunValues {
        id: &record.id,
        run: values,
        series: [
            record.config_key.clone(),
            run_record::time::sortable_utc(&record.started_at),
            record.id.clone(),
            spec_key,
            series,
        ],
        label: record.subject.label.as_deref(),
    })
}

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

impl PgArchive {
    /// Stores every run in one transaction: all of them or, on failure,
    /// none. A transaction the server broke off to end a deadlock or a
    /// serialisation conflict is tried again; any other failure names
    /// the address ([`ArchiveError::StoreFailed`], or
    /// [`ArchiveError::CommitUnknown`] when the connection was lost
    /// while committing).
    pub(crate) fn store_all(&mut self, runs: &[CanonicalRun]) -> Result<StoreCounts, ArchiveError> {
        let mut sorted: Vec<&CanonicalRun> = runs.iter().collect();
        sorted.sort_by(|left, right| left.record().id.cmp(&right.record().id));
        sorted.dedup_by(|left, right| left.record().id == right.record().id);
        let values = sorted
            .iter()
            .map(|run| values_of(run))
            .collect::<Result<Vec<_>, _>>()?;
        let mut attempt = 1;
        loop {
            match self.store_in_transaction(&values) {
                Ok(mut counts) => {
                    counts.already_present += (runs.len() - sorted.len()) as u64;
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
                Err(ArchiveError::Postgres(error)) => {
                    return Err(ArchiveError::StoreFailed {
                        address: self.address.to_string(),
                        error,
                    });
                }
                Err(err) => return Err(err),
            }
        }
    }

    fn store_in_transaction(
        &mut self,
        values: &[RunValues<'_>],
    ) -> Result<StoreCounts, ArchiveError> {
        let mut client = self.client.borrow_mut();
        let mut transaction = client.transaction()?;
        let mut counts = StoreCounts::default();
        for chunk in values.chunks(RUNS_PER_STATEMENT) {
            let sql = format!(
                "INSERT INTO runs ({INSERT_COLUMNS}) VALUES {} \
                 ON CONFLICT (id) DO NOTHING RETURNING id",
                placeholders(chunk.len(), N_INSERT_COLUMNS)
            );
            let parameters: Vec<&(dyn ToSql + Sync)> = chunk
                .iter()
                .flat_map(|run| run.run.iter().map(|value| value.as_ref()))
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
                "INSERT INTO run_series ({SERIES_COLUMNS}) VALUES {}",
                placeholders(new_series.len(), N_SERIES_COLUMNS)
            );
            let parameters: Vec<&(dyn ToSql + Sync)> = new_series
                .iter()
                .flat_map(|run| {
                    run.series
                        .iter()
                        .map(|value| value as &(dyn ToSql + Sync))
                        .chain([&run.label as &(dyn ToSql + Sync)])
                })
                .collect();
            transaction.execute(&sql, &parameters)?;
        }
        transaction.commit().map_err(|error| {
            // An answer from the server means it did not commit; no
            // answer leaves the outcome with the server.
            if error.as_db_error().is_some() {
                ArchiveError::StoreFailed {
                    address: self.address.to_string(),
                    error,
                }
            } else {
                ArchiveError::CommitUnknown {
                    address: self.address.to_string(),
                    error,
                }
            }
        })?;
        Ok(counts)
    }
}
