//! Selecting stored runs, in the SQL of either backend: the filters of
//! [`RunQuery`] ([`select_sql`], with the two dialects' parameters and
//! prefix matches), what a selection reads of a run ([`StoredRun`],
//! [`MetricValue`]) and how a row of either backend gives it.

use super::row::Columns;
use crate::ArchiveError;
use crate::schema;
use run_record::record::Metric;
use run_record::spec::TestKind;
use serde::Serialize;
use std::str::FromStr;

/// Length of a full id or config_key: 64 hex digits of blake3.
const FULL_HASH_LEN: usize = 64;

/// `runs` with each run's history row, if any, on the whole key of
/// `run_series` ([`schema`] version 6 of a file, and every version on
/// PostgreSQL).
pub(crate) const SERIES_JOIN: &str = "runs LEFT JOIN run_series ON run_series.config_key = runs.config_key \
                           AND run_series.started_at = runs.started_at \
                           AND run_series.run_id = runs.id";

/// [`SERIES_JOIN`] at schema version 5 of a file, read where the file may
/// not be upgraded: `run_series` keyed by the run id alone.
const SERIES_JOIN_V5: &str = "runs LEFT JOIN run_series ON run_series.run_id = runs.id";

/// The join of `runs` to `run_series` in a file at schema `version` (5
/// or later).
pub(crate) fn series_join(version: u32) -> &'static str {
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
    /// Started before this time, RFC 3339 in UTC with six fraction
    /// digits as runs are stored ([`run_record::time::sortable_utc`]).
    pub started_before: Option<String>,
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
    /// Who stored the run in this archive: on PostgreSQL the database
    /// role of the session that wrote the row, as the server gave it; in
    /// a file the user of the process that wrote it. `None` for a run
    /// stored before the archive recorded it. Archive metadata, not part
    /// of the record: a merged or spooled run is stored by whoever wrote
    /// it into this archive.
    pub stored_by: Option<String>,
    /// Where it was stored from: on PostgreSQL the address the writer's
    /// connection came from (`[local]` over a Unix socket), in a file the
    /// name of the writer's host; `None` as for [`StoredRun::stored_by`].
    pub stored_from: Option<String>,
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

/// The columns of `runs` a [`StoredRun`] is read from, in the order
/// [`StoredRun::from_row`] reads them.
pub(crate) const RUN_COLUMNS: &str = "id, commit_id, describe, label, config_key, testbed, test, \
                           source_tool, started_at, n_iterations, throughput_bps, transaction_rate";

/// How many columns [`RUN_COLUMNS`] names: a selection that reads more
/// of a run names them after these.
pub(crate) const N_RUN_COLUMNS: usize = 12;

/// The columns a selection of runs reads, in the order
/// [`StoredRun::from_row_with_storer`] reads them: [`RUN_COLUMNS`], then
/// who stored the run where the schema has it (`recorded`), else NULLs
/// in their place. Apart from [`RUN_COLUMNS`], which a run is inserted
/// under too: no insert names who stored it.
pub(crate) fn read_columns(recorded: bool) -> String {
    let storer = if recorded {
        "stored_by, stored_from"
    } else {
        "CAST(NULL AS TEXT), CAST(NULL AS TEXT)"
    };
    format!("{RUN_COLUMNS}, {storer}")
}

/// How many columns [`read_columns`] names.
pub(crate) const N_READ_COLUMNS: usize = N_RUN_COLUMNS + 2;

impl StoredRun {
    /// The run a row starting with [`RUN_COLUMNS`] gives; a test or an
    /// iteration count no record can have is [`ArchiveError::DamagedRun`].
    pub(crate) fn from_row(row: &impl Columns) -> Result<StoredRun, ArchiveError> {
        let id: String = row.read(0)?;
        let damaged = |detail: String| ArchiveError::DamagedRun {
            id: id.clone(),
            detail,
        };
        let test_name: String = row.read(6)?;
        let test = TestKind::from_str(&test_name).map_err(|err| damaged(err.to_string()))?;
        let n_iterations: i64 = row.read(9)?;
        let n_iterations = u32::try_from(n_iterations)
            .map_err(|_| damaged(format!("{n_iterations} iterations")))?;
        Ok(StoredRun {
            commit: row.read(1)?,
            describe: row.read(2)?,
            label: row.read(3)?,
            config_key: row.read(4)?,
            testbed: row.read(5)?,
            test,
            source_tool: row.read(7)?,
            started_at: row.read(8)?,
            n_iterations,
            throughput_bps: row.read(10)?,
            transaction_rate: row.read(11)?,
            id,
            stored_by: None,
            stored_from: None,
        })
    }

    /// The run a row of [`read_columns`] gives, with who stored it.
    pub(crate) fn from_row_with_storer(row: &impl Columns) -> Result<StoredRun, ArchiveError> {
        Ok(StoredRun {
            stored_by: row.read(N_RUN_COLUMNS)?,
            stored_from: row.read(N_RUN_COLUMNS + 1)?,
            ..StoredRun::from_row(row)?
        })
    }
}

impl MetricValue {
    /// The columns a [`MetricValue`] of `metric` is read from, in the
    /// order [`MetricValue::from_row`] reads them.
    pub(crate) fn columns(metric: Metric) -> String {
        format!(
            "id, commit_id, label, config_key, started_at, {}",
            schema::metric_column(metric)
        )
    }

    /// The value a row of [`MetricValue::columns`] gives; `None` when the
    /// run has no value of the metric.
    pub(crate) fn from_row(row: &impl Columns) -> Result<Option<MetricValue>, ArchiveError> {
        let Some(value) = row.read::<Option<f64>>(5)? else {
            return Ok(None);
        };
        Ok(Some(MetricValue {
            run_id: row.read(0)?,
            commit: row.read(1)?,
            label: row.read(2)?,
            config_key: row.read(3)?,
            started_at: row.read(4)?,
            value,
        }))
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

/// The order of selected runs, by start time (then id).
#[derive(Clone, Copy)]
pub(crate) enum Order {
    OldestFirst,
    NewestFirst,
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

/// The run a walk of runs oldest first last read: the next selection of
/// the walk starts after it ([`select_sql_after`]).
pub(crate) struct RunPosition {
    /// Its `started_at` column.
    pub started_at: String,
    /// Its id.
    pub id: String,
}

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
    select_sql_from(dialect, columns, from, query, order, None)
}

/// [`select_sql`] of the runs after `after`, oldest first: the next part
/// of a walk that reads the runs a part at a time. `(started_at, id)`
/// orders the runs wholly, so that no run is read twice or passed over.
pub(crate) fn select_sql_after(
    dialect: Dialect,
    columns: &str,
    query: &RunQuery,
    after: &RunPosition,
) -> Result<(String, Vec<String>), ArchiveError> {
    select_sql_from(
        dialect,
        columns,
        "runs",
        query,
        Order::OldestFirst,
        Some(after),
    )
}

fn select_sql_from(
    dialect: Dialect,
    columns: &str,
    from: &str,
    query: &RunQuery,
    order: Order,
    after: Option<&RunPosition>,
) -> Result<(String, Vec<String>), ArchiveError> {
    let mut conditions = Vec::new();
    let mut values = Vec::new();
    // Adds a parameter; returns its placeholder.
    let mut parameter = |value: String| -> String {
        values.push(value);
        match dialect {
            Dialect::Sqlite => format!("?{}", values.len()),
            Dialect::Postgres => format!("${}", values.len()),
        }
    };
    let prefix_match = |column: &str, prefix: &str| match dialect {
        Dialect::Sqlite => (format!("{column} GLOB ?"), glob_prefix(prefix)),
        Dialect::Postgres => (format!("{column} LIKE ?"), like_prefix(prefix)),
    };
    // A condition with one parameter, `?` in `condition`.
    let mut add = |condition: &str, value: String| -> String {
        let placeholder = parameter(value);
        conditions.push(condition.replace('?', &placeholder));
        placeholder
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
    if let Some(before) = &query.started_before {
        add("runs.started_at < ?", before.clone());
    }
    if let Some(after) = after {
        // One comparison of both columns, which the index on
        // (started_at, id) serves as a range.
        let started_at = parameter(after.started_at.clone());
        let id = parameter(after.id.clone());
        conditions.push(format!("(runs.started_at, runs.id) > ({started_at}, {id})"));
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
        sql.push_str(&format!(" LIMIT {}", checked_limit(limit)?));
    }
    Ok((sql, values))
}

/// `limit` as SQL takes it; one beyond what a signed 64-bit integer
/// holds is refused.
pub(crate) fn checked_limit(limit: u64) -> Result<i64, ArchiveError> {
    i64::try_from(limit)
        .map_err(|_| ArchiveError::InvalidQuery(format!("limit {limit} is too large")))
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
