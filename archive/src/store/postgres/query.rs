//! The selections on PostgreSQL: the SQL of the SQLite file's reads in
//! PostgreSQL's dialect ([`Dialect::Postgres`]), each row read with
//! checked types, so that a column of an unexpected type is an error,
//! never a panic.
//!
//! Every selection is sent with its parameters' types (all text), in one
//! round trip: no statement is prepared first and closed after, which
//! would take three, and a command makes several selections.

use super::{PgArchive, SERIES_LABEL_VERSION};
use crate::ArchiveError;
use crate::store::query::{
    Dialect, Order, QUERY_LABEL, RUN_COLUMNS, RunQuery, SERIES_JOIN, select_sql,
};
use crate::store::{MetricValue, SeriesRun, StoredRun};
use postgres::types::{ToSql, Type};
use run_record::record::Metric;
use run_record::spec::TestKind;
use std::str::FromStr;

/// The parameters of a selection as the client takes them, with their
/// type: every one is text.
fn parameters(values: &[String]) -> Vec<(&(dyn ToSql + Sync), Type)> {
    values
        .iter()
        .map(|value| (value as &(dyn ToSql + Sync), Type::TEXT))
        .collect()
}

impl PgArchive {
    /// Number of runs stored.
    pub(crate) fn count(&self) -> Result<u64, ArchiveError> {
        let n_runs: i64 = self
            .client
            .borrow_mut()
            .query_typed_one("SELECT count(*) FROM runs", &[])?
            .try_get(0)?;
        Ok(u64::try_from(n_runs).unwrap_or(0))
    }

    /// How many runs `query` selects, its limit aside.
    pub(crate) fn count_matching(&self, query: &RunQuery) -> Result<u64, ArchiveError> {
        let query = RunQuery {
            limit: None,
            ..query.clone()
        };
        let (sql, values) = select_sql(
            Dialect::Postgres,
            "count(*)",
            "runs",
            &query,
            Order::OldestFirst,
        )?;
        let n_matches: i64 = self
            .client
            .borrow_mut()
            .query_typed_one(&sql, &parameters(&values))?
            .try_get(0)?;
        Ok(u64::try_from(n_matches).unwrap_or(0))
    }

    pub(crate) fn runs_in_order(
        &self,
        query: &RunQuery,
        order: Order,
    ) -> Result<Vec<StoredRun>, ArchiveError> {
        let (sql, values) = select_sql(Dialect::Postgres, RUN_COLUMNS, "runs", query, order)?;
        let rows = self
            .client
            .borrow_mut()
            .query_typed(&sql, &parameters(&values))?;
        rows.iter().map(stored_run_of).collect()
    }

    /// Calls `visit` with each selected run and its canonical bytes,
    /// oldest first, as the rows arrive.
    pub(crate) fn for_each_record<E, F>(&self, query: &RunQuery, mut visit: F) -> Result<(), E>
    where
        E: From<ArchiveError>,
        F: FnMut(&StoredRun, &[u8]) -> Result<(), E>,
    {
        use postgres::fallible_iterator::FallibleIterator;
        let columns = format!("{RUN_COLUMNS}, record");
        let (sql, values) = select_sql(
            Dialect::Postgres,
            &columns,
            "runs",
            query,
            Order::OldestFirst,
        )?;
        let mut client = self.client.borrow_mut();
        let mut rows = client
            .query_typed_raw(&sql, parameters(&values))
            .map_err(ArchiveError::from)?;
        while let Some(row) = rows.next().map_err(ArchiveError::from)? {
            let run = stored_run_of(&row)?;
            let bytes: &[u8] = row.try_get(12).map_err(ArchiveError::from)?;
            visit(&run, bytes)?;
        }
        Ok(())
    }

    /// The run-level value of `metric` for each selected run that has it,
    /// oldest first.
    pub(crate) fn metric_values(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Vec<MetricValue>, ArchiveError> {
        // Metric names are plain identifiers, the names of the columns.
        let columns = format!(
            "id, commit_id, label, config_key, started_at, {}",
            metric.name()
        );
        let (sql, values) = select_sql(
            Dialect::Postgres,
            &columns,
            "runs",
            query,
            Order::OldestFirst,
        )?;
        let rows = self
            .client
            .borrow_mut()
            .query_typed(&sql, &parameters(&values))?;
        let mut found = Vec::new();
        for row in &rows {
            let Some(value) = row.try_get::<_, Option<f64>>(5)? else {
                continue;
            };
            found.push(MetricValue {
                run_id: row.try_get(0)?,
                commit: row.try_get(1)?,
                label: row.try_get(2)?,
                config_key: row.try_get(3)?,
                started_at: row.try_get(4)?,
                value,
            });
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
    /// ([`SeriesRun::from_columns`]), faster than the server parsing it
    /// as jsonb to print the array as text again.
    pub(crate) fn series_runs(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Option<Vec<SeriesRun>>, ArchiveError> {
        let by_label = query.label.is_some() && self.version >= SERIES_LABEL_VERSION;
        let (sql, values) = select_sql(
            Dialect::Postgres,
            "runs.id, runs.commit_id, runs.started_at, runs.test, run_series.spec_key, \
             run_series.series",
            &if by_label {
                series_join_by_label()
            } else {
                SERIES_JOIN.to_string()
            },
            query,
            Order::OldestFirst,
        )?;
        let rows = self
            .client
            .borrow_mut()
            .query_typed(&sql, &parameters(&values))?;
        let mut found = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: String = row.try_get(0)?;
            let spec_key: Option<String> = row.try_get(4)?;
            if spec_key.is_none() && by_label {
                self.label_disagrees(&id)?;
            }
            found.push(SeriesRun::from_columns(
                id,
                row.try_get(1)?,
                row.try_get(2)?,
                row.try_get(3)?,
                spec_key,
                row.try_get(5)?,
                metric,
            )?);
        }
        Ok(Some(found))
    }

    /// Fails naming the label when run `id`, which a history joined by
    /// its label did not find in `run_series`, is there under another
    /// label; else leaves the run to be said missing.
    fn label_disagrees(&self, id: &str) -> Result<(), ArchiveError> {
        let id = id.to_string();
        let sql = format!(
            "SELECT 1 FROM {SERIES_JOIN} WHERE runs.id = $1 AND run_series.run_id IS NOT NULL"
        );
        let found = self
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
}

/// [`SERIES_JOIN`] narrowed to the rows of the query's label
/// ([`QUERY_LABEL`]), from schema version 3: the condition is on
/// `run_series` alone, so that its scan is of that label's rows, and a
/// row under another label leaves its run without one.
fn series_join_by_label() -> String {
    format!("{SERIES_JOIN} AND run_series.label = {QUERY_LABEL}")
}

/// What `archive check` and a history say of a run whose `run_series` row
/// has another label than the run.
pub(super) const SERIES_LABEL_DISAGREES: &str = "its run_series row disagrees with its run: label";

pub(super) fn stored_run_of(row: &postgres::Row) -> Result<StoredRun, ArchiveError> {
    let id: String = row.try_get(0)?;
    let test_name: String = row.try_get(6)?;
    let damaged = |detail: String| ArchiveError::DamagedRun {
        id: id.clone(),
        detail,
    };
    let test = TestKind::from_str(&test_name).map_err(|err| damaged(err.to_string()))?;
    let n_iterations: i64 = row.try_get(9)?;
    let n_iterations =
        u32::try_from(n_iterations).map_err(|_| damaged(format!("{n_iterations} iterations")))?;
    Ok(StoredRun {
        commit: row.try_get(1)?,
        describe: row.try_get(2)?,
        label: row.try_get(3)?,
        config_key: row.try_get(4)?,
        testbed: row.try_get(5)?,
        test,
        source_tool: row.try_get(7)?,
        started_at: row.try_get(8)?,
        n_iterations,
        throughput_bps: row.try_get(10)?,
        transaction_rate: row.try_get(11)?,
        id,
    })
}
