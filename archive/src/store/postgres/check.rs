//! `archive check` on PostgreSQL: every stored run against its columns
//! and its history row, and the rows whose references are broken.
//!
//! PostgreSQL has no counterpart of SQLite's `integrity_check` short of
//! an extension (amcheck) a netbisect user may not install; its pages
//! are checked by the server itself as they are read, so `integrity`
//! reports "ok" once every row has been read without an error.

use super::PgArchive;
use super::query::stored_run_of;
use crate::ArchiveError;
use crate::schema::{V2_METRICS, metric_column};
use crate::store::check::{CheckReport, DamagedRun, StoredFigures, series_problem, verify_row};
use crate::store::query::{MISSING_SERIES, RUN_COLUMNS, SERIES_JOIN};
use postgres::fallible_iterator::FallibleIterator;

impl PgArchive {
    /// Checks every stored run (its bytes decode to a valid record whose
    /// id, columns and figures match the row, its history row matches
    /// it) and the
    /// references between tables.
    pub(crate) fn check(&self) -> Result<CheckReport, ArchiveError> {
        let schema_version = self.schema_version()?;
        let mut n_runs = 0;
        let mut damaged_runs = Vec::new();
        let metric_columns: Vec<&str> = V2_METRICS.iter().map(|m| metric_column(*m)).collect();
        let sql = format!(
            "SELECT {RUN_COLUMNS}, record, {}, imported_at FROM runs ORDER BY started_at, id",
            metric_columns.join(", ")
        );
        {
            let mut client = self.client.borrow_mut();
            let mut rows = client.query_raw(&sql, std::iter::empty::<&str>())?;
            while let Some(row) = rows.next()? {
                n_runs += 1;
                let id: String = row.try_get(0)?;
                let checked = stored_run_of(&row)
                    .map_err(|err| err.to_string())
                    .and_then(|run| {
                        let bytes: &[u8] = row.try_get(12).map_err(|err| err.to_string())?;
                        let mut figures = StoredFigures::default();
                        for (idx, metric) in V2_METRICS.iter().enumerate() {
                            let value: Option<f64> =
                                row.try_get(13 + idx).map_err(|err| err.to_string())?;
                            figures.metrics.push((*metric, value));
                        }
                        figures.imported_at = Some(
                            row.try_get(13 + V2_METRICS.len())
                                .map_err(|err| err.to_string())?,
                        );
                        verify_row(&run, bytes, &figures)
                    });
                if let Err(problem) = checked {
                    damaged_runs.push(DamagedRun { id, problem });
                }
            }
        }
        let mut client = self.client.borrow_mut();
        let foreign_key_violations: i64 = client
            .query_one(
                "SELECT (SELECT count(*) FROM run_series \
                 WHERE NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = run_series.run_id)) \
                 + (SELECT count(*) FROM bisect_events WHERE NOT EXISTS \
                 (SELECT 1 FROM bisect_sessions WHERE bisect_sessions.id = bisect_events.session_id))",
                &[],
            )?
            .try_get(0)?;
        let sql = format!(
            "SELECT runs.id, run_series.spec_key, run_series.series, runs.record, \
             run_series.run_id IS NOT NULL FROM {SERIES_JOIN} ORDER BY runs.started_at, runs.id"
        );
        let mut rows = client.query_raw(&sql, std::iter::empty::<&str>())?;
        while let Some(row) = rows.next()? {
            let id: String = row.try_get(0)?;
            if damaged_runs.iter().any(|damaged| damaged.id == id) {
                continue;
            }
            let has_series: bool = row.try_get(4)?;
            if !has_series {
                damaged_runs.push(DamagedRun {
                    problem: MISSING_SERIES.to_string(),
                    id,
                });
                continue;
            }
            let bytes: &[u8] = row.try_get(3)?;
            if let Some(problem) = series_problem(bytes, row.try_get(1)?, row.try_get(2)?) {
                damaged_runs.push(DamagedRun { problem, id });
            }
        }
        Ok(CheckReport {
            schema_version,
            supported_version: super::CURRENT_VERSION,
            integrity: vec!["ok".to_string()],
            foreign_key_violations: u64::try_from(foreign_key_violations).unwrap_or(0),
            n_runs,
            damaged_runs,
            unreadable: Vec::new(),
        })
    }
}
