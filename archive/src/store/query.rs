//! Selecting stored runs: the filters of [`RunQuery`] as SQL, the
//! indexed columns of a run, a metric's run-level values, what a history
//! needs of each run, and the records themselves, verified as they are
//! read.

use super::{SeriesRun, SqliteArchive};
use crate::ArchiveError;
use crate::schema;
use run_record::record::Metric;
use run_record::spec::TestKind;
use serde::Serialize;
use std::str::FromStr;

/// Length of a full id or config_key: 64 hex digits of blake3.
const FULL_HASH_LEN: usize = 64;

/// `runs` with each run's history row, if any, on the whole key of
/// `run_series` ([`schema`] version 6).
pub(crate) const SERIES_JOIN: &str = "runs LEFT JOIN run_series ON run_series.config_key = runs.config_key \
                           AND run_series.started_at = runs.started_at \
                           AND run_series.run_id = runs.id";

/// [`SERIES_JOIN`] at schema version 5, read where the file may not be
/// upgraded: `run_series` keyed by the run id alone.
const SERIES_JOIN_V5: &str = "runs LEFT JOIN run_series ON run_series.run_id = runs.id";

/// The join of `runs` to `run_series` at schema `version` (5 or later).
pub(super) fn series_join(version: u32) -> &'static str {
    if version >= schema::SERIES_BY_CONFIG_VERSION {
        SERIES_JOIN
    } else {
        SERIES_JOIN_V5
    }
}

/// What `archive check` and a history say of a run without a history row.
pub(crate) const MISSING_SERIES: &str = "missing from run_series";

/// Which runs a query selects; every filter that is set must match.
///
/// Prefix filters match the start of the column, so abbreviated commit
/// and run ids work as they do in git.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunQuery {
    /// Commit id starts with this.
    pub commit_prefix: Option<String>,
    /// Label equals this.
    pub label: Option<String>,
    /// Run id starts with this.
    pub id_prefix: Option<String>,
    /// config_key starts with this.
    pub config_key_prefix: Option<String>,
    /// Test kind.
    pub test: Option<TestKind>,
    /// Testbed name equals this.
    pub testbed: Option<String>,
    /// Source tool (`netbisect`, `netperf`, `iperf3`) equals this.
    pub source_tool: Option<String>,
    /// At most this many runs: the earliest ones, or the newest where
    /// runs are read newest first.
    pub limit: Option<u64>,
}

/// The indexed columns of one stored run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StoredRun {
    /// Content id.
    pub id: String,
    /// Commit under test.
    pub commit: Option<String>,
    /// `git describe` of the commit.
    pub describe: Option<String>,
    /// Free-form label.
    pub label: Option<String>,
    /// Comparability hash.
    pub config_key: String,
    /// Testbed name.
    pub testbed: String,
    /// Test kind.
    pub test: TestKind,
    /// Tool that produced the run.
    pub source_tool: String,
    /// Start of the run, RFC 3339.
    pub started_at: String,
    /// Iterations in the run.
    pub n_iterations: u32,
    /// Mean throughput, bits per second.
    pub throughput_bps: f64,
    /// Mean transaction rate, per second (request/response tests).
    pub transaction_rate: Option<f64>,
}

/// One run's value of one metric, for history and comparison.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MetricValue {
    /// Run id.
    pub run_id: String,
    /// Commit under test.
    pub commit: Option<String>,
    /// Label.
    pub label: Option<String>,
    /// Comparability hash.
    pub config_key: String,
    /// Start of the run.
    pub started_at: String,
    /// The run-level value (the summary's figure).
    pub value: f64,
}

pub(crate) const RUN_COLUMNS: &str = "id, commit_id, describe, label, config_key, testbed, test, \
                           source_tool, started_at, n_iterations, throughput_bps, transaction_rate";

impl SqliteArchive {
    /// Number of runs stored.
    pub fn count(&self) -> Result<u64, ArchiveError> {
        let n_runs: i64 = self
            .connection
            .query_row("SELECT count(*) FROM runs", [], |row| row.get(0))?;
        Ok(u64::try_from(n_runs).unwrap_or(0))
    }

    pub(crate) fn runs_in_order(
        &self,
        query: &RunQuery,
        order: Order,
    ) -> Result<Vec<StoredRun>, ArchiveError> {
        let (sql, values) = build_select_ordered(RUN_COLUMNS, query, order)?;
        let mut statement = self.connection.prepare(&sql)?;
        let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
        let mut runs = Vec::new();
        while let Some(row) = rows.next()? {
            runs.push(stored_run_of(row)?);
        }
        Ok(runs)
    }

    /// Calls `visit` with each selected run and its canonical bytes,
    /// oldest first, without holding them all in memory.
    pub fn for_each_record<E, F>(&self, query: &RunQuery, mut visit: F) -> Result<(), E>
    where
        E: From<ArchiveError>,
        F: FnMut(&StoredRun, &[u8]) -> Result<(), E>,
    {
        let columns = format!("{RUN_COLUMNS}, record");
        let (sql, values) = build_select(&columns, query)?;
        let mut statement = self.connection.prepare(&sql).map_err(ArchiveError::from)?;
        let mut rows = statement
            .query(rusqlite::params_from_iter(values.iter()))
            .map_err(ArchiveError::from)?;
        while let Some(row) = rows.next().map_err(ArchiveError::from)? {
            let run = stored_run_of(row)?;
            let bytes: Vec<u8> = row.get(12).map_err(ArchiveError::from)?;
            visit(&run, &bytes)?;
        }
        Ok(())
    }

    /// How many runs `query` selects, its limit aside.
    pub(crate) fn count_matching(&self, query: &RunQuery) -> Result<u64, ArchiveError> {
        let (sql, values) = build_select(
            "count(*)",
            &RunQuery {
                limit: None,
                ..query.clone()
            },
        )?;
        let n_matches: i64 =
            self.connection
                .query_row(&sql, rusqlite::params_from_iter(values.iter()), |row| {
                    row.get(0)
                })?;
        Ok(u64::try_from(n_matches).unwrap_or(0))
    }

    /// The run-level value of `metric` for each selected run that has it,
    /// oldest first. Reads indexed columns only.
    pub fn metric_values(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Vec<MetricValue>, ArchiveError> {
        let columns = format!(
            "id, commit_id, label, config_key, started_at, {}",
            schema::metric_column(metric)
        );
        let (sql, values) = build_select(&columns, query)?;
        let mut statement = self.connection.prepare(&sql)?;
        let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            let Some(value) = row.get::<_, Option<f64>>(5)? else {
                continue;
            };
            found.push(MetricValue {
                run_id: row.get(0)?,
                commit: row.get(1)?,
                label: row.get(2)?,
                config_key: row.get(3)?,
                started_at: row.get(4)?,
                value,
            });
        }
        Ok(found)
    }

    /// What a history of `metric` needs of each selected run, oldest
    /// first, from the columns filled when the run was stored: no record
    /// is decoded or verified (`archive check` does that). `None` when
    /// the archive is older than those columns (one opened read-only at
    /// an older schema): read the records then
    /// ([`SeriesRun::of`]).
    pub fn series_runs(
        &self,
        query: &RunQuery,
        metric: Metric,
    ) -> Result<Option<Vec<SeriesRun>>, ArchiveError> {
        let version = self.schema_version()?;
        if version < schema::SERIES_VERSION {
            return Ok(None);
        }
        // The series is read whole and the metric picked from it in Rust
        // (`SeriesRun::from_columns`), faster than `json_extract` parsing
        // it in SQL to print the array as text again.
        let columns = "runs.id, runs.commit_id, runs.started_at, runs.test, spec_key, series";
        // A left join, so that a run missing from `run_series` is an
        // error rather than left out of the history.
        let (sql, values) = build_select_from(columns, series_join(version), query)?;
        let mut statement = self.connection.prepare(&sql)?;
        let mut rows = statement.query(rusqlite::params_from_iter(values.iter()))?;
        let mut found = Vec::new();
        while let Some(row) = rows.next()? {
            found.push(SeriesRun::from_columns(
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                &row.get::<_, String>(3)?,
                row.get(4)?,
                row.get_ref(5)?.as_str_or_null().map_err(|err| {
                    rusqlite::Error::FromSqlConversionFailure(
                        5,
                        rusqlite::types::Type::Text,
                        err.into(),
                    )
                })?,
                metric,
            )?);
        }
        Ok(Some(found))
    }
}

/// Escapes `prefix` for a GLOB pattern that matches strings starting
/// with it (GLOB, unlike LIKE, is case-sensitive and uses the index).
fn glob_prefix(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for character in prefix.chars() {
        match character {
            '*' | '?' | '[' => {
                pattern.push('[');
                pattern.push(character);
                pattern.push(']');
            }
            other => pattern.push(other),
        }
    }
    pattern.push('*');
    pattern
}

/// Escapes `prefix` for a LIKE pattern (backslash the escape character)
/// that matches strings starting with it.
fn like_prefix(prefix: &str) -> String {
    let mut pattern = String::with_capacity(prefix.len() + 1);
    for character in prefix.chars() {
        if matches!(character, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(character);
    }
    pattern.push('%');
    pattern
}

/// `SELECT columns FROM runs WHERE ... ORDER BY runs.started_at, runs.id`,
/// with its parameters.
fn build_select(columns: &str, query: &RunQuery) -> Result<(String, Vec<String>), ArchiveError> {
    build_select_from(columns, "runs", query)
}

/// The order of selected runs, by start time (then id).
#[derive(Clone, Copy)]
pub(crate) enum Order {
    OldestFirst,
    NewestFirst,
}

pub(super) fn build_select_ordered(
    columns: &str,
    query: &RunQuery,
    order: Order,
) -> Result<(String, Vec<String>), ArchiveError> {
    build_select_in_order(columns, "runs", query, order)
}

/// [`build_select`] from `from`: `runs`, or `runs` joined to other
/// tables; the conditions and the order name the columns of `runs`.
fn build_select_from(
    columns: &str,
    from: &str,
    query: &RunQuery,
) -> Result<(String, Vec<String>), ArchiveError> {
    build_select_in_order(columns, from, query, Order::OldestFirst)
}

fn build_select_in_order(
    columns: &str,
    from: &str,
    query: &RunQuery,
    order: Order,
) -> Result<(String, Vec<String>), ArchiveError> {
    select_sql(Dialect::Sqlite, columns, from, query, order)
}

/// The SQL a backend speaks where the two differ: parameters (`?1` or
/// `$1`) and a case-sensitive prefix match that an index serves (GLOB,
/// or LIKE on columns of the "C" collation).
#[derive(Clone, Copy)]
pub(crate) enum Dialect {
    Sqlite,
    Postgres,
}

/// Where `from` of [`select_sql`] compares a column to the query's label:
/// replaced by the label's parameter, so that a join can be narrowed by
/// the label as the runs are.
pub(crate) const QUERY_LABEL: &str = "{label}";

/// `SELECT columns FROM from WHERE (the filters of query) ORDER BY ...
/// LIMIT ...` in `dialect`, with its parameters in order; [`QUERY_LABEL`]
/// in `from` is the label's parameter (the query must have a label).
pub(crate) fn select_sql(
    dialect: Dialect,
    columns: &str,
    from: &str,
    query: &RunQuery,
    order: Order,
) -> Result<(String, Vec<String>), ArchiveError> {
    let mut conditions = Vec::new();
    let mut values = Vec::new();
    // Adds a condition with its parameter; returns the parameter's
    // placeholder.
    let mut add = |condition: &str, value: String| -> String {
        values.push(value);
        let placeholder = match dialect {
            Dialect::Sqlite => format!("?{}", values.len()),
            Dialect::Postgres => format!("${}", values.len()),
        };
        conditions.push(condition.replace('?', &placeholder));
        placeholder
    };
    let prefix_match = |column: &str, prefix: &str| match dialect {
        Dialect::Sqlite => (format!("{column} GLOB ?"), glob_prefix(prefix)),
        Dialect::Postgres => (format!("{column} LIKE ?"), like_prefix(prefix)),
    };
    if let Some(prefix) = &query.commit_prefix {
        let (condition, value) = prefix_match("runs.commit_id", prefix);
        add(&condition, value);
    }
    let label_placeholder = query
        .label
        .as_ref()
        .map(|label| add("runs.label = ?", label.clone()));
    if let Some(prefix) = &query.id_prefix {
        let (condition, value) = prefix_match("runs.id", prefix);
        add(&condition, value);
    }
    if let Some(prefix) = &query.config_key_prefix {
        // A whole key is an equality, which lets the index on
        // (config_key, commit_id) narrow on the commit too.
        if prefix.len() == FULL_HASH_LEN {
            add("runs.config_key = ?", prefix.clone());
        } else {
            let (condition, value) = prefix_match("runs.config_key", prefix);
            add(&condition, value);
        }
    }
    if let Some(test) = query.test {
        add("runs.test = ?", test.name().to_string());
    }
    if let Some(testbed) = &query.testbed {
        add("runs.testbed = ?", testbed.clone());
    }
    if let Some(tool) = &query.source_tool {
        add("runs.source_tool = ?", tool.clone());
    }
    let from = match label_placeholder {
        Some(placeholder) => from.replace(QUERY_LABEL, &placeholder),
        None if from.contains(QUERY_LABEL) => {
            return Err(ArchiveError::InvalidQuery(
                "the selection's join names a label but the query has none".to_string(),
            ));
        }
        None => from.to_string(),
    };
    let mut sql = format!("SELECT {columns} FROM {from}");
    if !conditions.is_empty() {
        sql.push_str(" WHERE ");
        sql.push_str(&conditions.join(" AND "));
    }
    if columns != "count(*)" {
        sql.push_str(match order {
            Order::OldestFirst => " ORDER BY runs.started_at, runs.id",
            Order::NewestFirst => " ORDER BY runs.started_at DESC, runs.id DESC",
        });
    }
    if let Some(limit) = query.limit {
        let limit = i64::try_from(limit)
            .map_err(|_| ArchiveError::InvalidQuery(format!("limit {limit} is too large")))?;
        sql.push_str(&format!(" LIMIT {limit}"));
    }
    Ok((sql, values))
}

pub(super) fn stored_run_of(row: &rusqlite::Row<'_>) -> Result<StoredRun, ArchiveError> {
    let id: String = row.get(0)?;
    let test_name: String = row.get(6)?;
    let test = TestKind::from_str(&test_name).map_err(|err| ArchiveError::DamagedRun {
        id: id.clone(),
        detail: err.to_string(),
    })?;
    Ok(StoredRun {
        commit: row.get(1)?,
        describe: row.get(2)?,
        label: row.get(3)?,
        config_key: row.get(4)?,
        testbed: row.get(5)?,
        test,
        source_tool: row.get(7)?,
        started_at: row.get(8)?,
        n_iterations: row.get(9)?,
        throughput_bps: row.get(10)?,
        transaction_rate: row.get(11)?,
        id,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_prefix_escapes_wildcards() {
        assert_eq!(glob_prefix("ab"), "ab*");
        assert_eq!(glob_prefix("a*?[b"), "a[*][?][[]b*");
    }

    #[test]
    fn like_prefix_escapes_wildcards() {
        assert_eq!(like_prefix("ab"), "ab%");
        assert_eq!(like_prefix("a%_\\b"), "a\\%\\_\\\\b%");
    }
}
