//! `archive check` on PostgreSQL: every stored run against its columns
//! and its history row, the rows whose references are broken, and what
//! stands in for SQLite's `integrity_check`.
//!
//! PostgreSQL has no counterpart of `integrity_check` short of an
//! extension (amcheck) a netbisect user may not be allowed to install.
//! What `integrity` rests on instead is said line by line in
//! `integrity_checks`: the catalog (every table, index and constraint
//! the migrations make is there, each index valid and each constraint
//! validated), every table read whole, and the rows of `runs` and
//! `run_series` counted both by a sequential scan and through an index.
//! The pages themselves are verified by the server as it reads them
//! only where the cluster has data checksums, which is said too.

use super::{LAB_VERSION, PgArchive, SERIES_LABEL_VERSION};
use crate::ArchiveError;
use crate::store::backend::Backend;
use crate::store::check::{
    CheckReport, FigureColumns, check_series_row, run_problem, series_check_sql,
};
use crate::store::query::SERIES_JOIN;
use postgres::fallible_iterator::FallibleIterator;

/// The tables the migrations up to version 3 make, each read whole by
/// `check`.
const TABLES: [&str; 5] = [
    "netbisect_archive",
    "runs",
    "run_series",
    "bisect_sessions",
    "bisect_events",
];

/// The lab's tables (version 4), each read whole by `check`.
const LAB_TABLES: [&str; 5] = [
    "lab_jobs",
    "lab_workers",
    "lab_tracks",
    "lab_regressions",
    "lab_notifications",
];

/// The indexes the migrations up to version 2 make.
const INDEXES: [&str; 11] = [
    "netbisect_archive_pkey",
    "runs_pkey",
    "runs_by_commit",
    "runs_by_config",
    "runs_by_label",
    "runs_by_time",
    "runs_history",
    "run_series_pkey",
    "bisect_sessions_pkey",
    "bisect_sessions_active",
    "bisect_events_pkey",
];

/// The indexes of later versions, with the version that makes each.
const LATER_INDEXES: [(u32, &str); 12] = [
    (SERIES_LABEL_VERSION, "run_series_history"),
    (LAB_VERSION, "lab_jobs_pkey"),
    (LAB_VERSION, "lab_jobs_job_key_key"),
    (LAB_VERSION, "lab_jobs_queue"),
    (LAB_VERSION, "lab_jobs_by_owner"),
    (LAB_VERSION, "lab_workers_pkey"),
    (LAB_VERSION, "lab_tracks_pkey"),
    (LAB_VERSION, "lab_regressions_pkey"),
    (LAB_VERSION, "lab_regressions_track_good_bad_key"),
    (LAB_VERSION, "lab_regressions_active"),
    (LAB_VERSION, "lab_notifications_pkey"),
    (LAB_VERSION, "lab_notifications_regression_id_key"),
];

/// The foreign keys the migrations make, with the version that makes
/// each.
const FOREIGN_KEYS: [(u32, &str); 4] = [
    (1, "run_series_run_id_fkey"),
    (1, "bisect_events_session_id_fkey"),
    (LAB_VERSION, "lab_regressions_session_id_fkey"),
    (LAB_VERSION, "lab_notifications_regression_id_fkey"),
];

/// The tables of an archive at schema `version`.
fn tables(version: u32) -> Vec<&'static str> {
    let lab: &[&str] = if version >= LAB_VERSION {
        &LAB_TABLES
    } else {
        &[]
    };
    TABLES.iter().chain(lab).copied().collect()
}

/// What the integrity checks found, and what they were.
struct Integrity {
    problems: Vec<String>,
    checks: Vec<String>,
}

/// Checks every stored run (its bytes decode to a valid record whose id,
/// columns and figures match the row, its history row matches it) and
/// the references between tables.
pub(super) fn check(archive: &PgArchive) -> Result<CheckReport, ArchiveError> {
    let schema_version = archive.schema_version()?;
    let mut client = archive.client.borrow_mut();
    let figure_columns = FigureColumns {
        metrics: true,
        imported_at: true,
    };
    let sql = format!(
        "SELECT {} FROM runs ORDER BY started_at, id",
        figure_columns.columns()
    );
    let mut n_runs = 0;
    let mut damaged_runs = Vec::new();
    let mut rows = client.query_raw(&sql, std::iter::empty::<&str>())?;
    while let Some(row) = rows.next()? {
        n_runs += 1;
        damaged_runs.extend(run_problem(&row, figure_columns));
    }
    drop(rows);
    let integrity = integrity(&mut client, n_runs, schema_version)?;
    let lab_violations = if schema_version >= LAB_VERSION {
        " + (SELECT count(*) FROM lab_regressions WHERE session_id IS NOT NULL AND NOT EXISTS \
         (SELECT 1 FROM bisect_sessions WHERE bisect_sessions.id = lab_regressions.session_id)) \
         + (SELECT count(*) FROM lab_notifications WHERE NOT EXISTS \
         (SELECT 1 FROM lab_regressions \
         WHERE lab_regressions.id = lab_notifications.regression_id))"
    } else {
        ""
    };
    let foreign_key_violations: i64 = client
        .query_one(
            &format!(
                "SELECT (SELECT count(*) FROM run_series \
                 WHERE NOT EXISTS (SELECT 1 FROM runs WHERE runs.id = run_series.run_id)) \
                 + (SELECT count(*) FROM bisect_events WHERE NOT EXISTS \
                 (SELECT 1 FROM bisect_sessions \
                 WHERE bisect_sessions.id = bisect_events.session_id)){lab_violations}"
            ),
            &[],
        )?
        .try_get(0)?;
    // The label a history joins by, from the version that stores it.
    let label_differs = if schema_version >= SERIES_LABEL_VERSION {
        "run_series.label IS DISTINCT FROM runs.label"
    } else {
        "false"
    };
    let sql = series_check_sql(SERIES_JOIN, label_differs);
    let mut rows = client.query_raw(&sql, std::iter::empty::<&str>())?;
    while let Some(row) = rows.next()? {
        check_series_row(&row, &mut damaged_runs)?;
    }
    Ok(CheckReport {
        schema_version,
        supported_version: super::CURRENT_VERSION,
        integrity: if integrity.problems.is_empty() {
            vec!["ok".to_string()]
        } else {
            integrity.problems
        },
        integrity_checks: integrity.checks,
        foreign_key_violations: u64::try_from(foreign_key_violations).unwrap_or(0),
        n_runs,
        damaged_runs,
        unreadable: Vec::new(),
    })
}

/// The catalog (as the migrations up to `version` made it), every table
/// read whole, and the row counts of `runs` (of which `n_runs` were read
/// as records) and `run_series` by a sequential scan and through an
/// index.
fn integrity(
    client: &mut postgres::Client,
    n_runs: u64,
    version: u32,
) -> Result<Integrity, ArchiveError> {
    let mut problems = Vec::new();
    let expected = self::tables(version);
    let tables: Vec<String> = client
        .query(
            "SELECT tablename::text FROM pg_catalog.pg_tables \
             WHERE schemaname = current_schema() AND tablename::text = ANY($1)",
            &[&expected],
        )?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?;
    for table in expected.iter().copied() {
        if !tables.iter().any(|found| found == table) {
            problems.push(format!("table {table} is missing"));
        }
    }
    let indexes = client.query(
        "SELECT index.relname::text, pg_index.indisvalid AND pg_index.indisready \
         FROM pg_catalog.pg_index \
         JOIN pg_catalog.pg_class AS index ON index.oid = pg_index.indexrelid \
         JOIN pg_catalog.pg_class AS tab ON tab.oid = pg_index.indrelid \
         WHERE tab.relnamespace = to_regnamespace(current_schema())::oid \
         AND tab.relname::text = ANY($1)",
        &[&expected],
    )?;
    let mut n_valid_indexes = 0;
    for row in &indexes {
        let name: String = row.try_get(0)?;
        if row.try_get::<_, bool>(1)? {
            n_valid_indexes += 1;
        } else {
            problems.push(format!(
                "index {name} is not valid (rebuild it with REINDEX)"
            ));
        }
    }
    let later = LATER_INDEXES
        .iter()
        .filter(|(since, _)| version >= *since)
        .map(|(_, name)| *name);
    for name in INDEXES.into_iter().chain(later) {
        if !indexes
            .iter()
            .any(|row| row.try_get::<_, String>(0).is_ok_and(|found| found == name))
        {
            problems.push(format!("index {name} is missing"));
        }
    }
    let constraints = client.query(
        "SELECT conname::text, convalidated FROM pg_catalog.pg_constraint \
         JOIN pg_catalog.pg_class AS tab ON tab.oid = pg_constraint.conrelid \
         WHERE tab.relnamespace = to_regnamespace(current_schema())::oid \
         AND tab.relname::text = ANY($1)",
        &[&expected],
    )?;
    let mut n_constraints = 0;
    for row in &constraints {
        let name: String = row.try_get(0)?;
        n_constraints += 1;
        if !row.try_get::<_, bool>(1)? {
            problems.push(format!("constraint {name} is not validated"));
        }
    }
    let foreign_keys = FOREIGN_KEYS
        .iter()
        .filter(|(since, _)| version >= *since)
        .map(|(_, name)| *name);
    for name in foreign_keys {
        if !constraints
            .iter()
            .any(|row| row.try_get::<_, String>(0).is_ok_and(|found| found == name))
        {
            problems.push(format!("foreign key {name} is missing"));
        }
    }
    let mut checks = vec![format!(
        "catalog: {} tables, {n_valid_indexes} indexes valid, {n_constraints} constraints \
         validated",
        tables.len()
    )];
    if !problems.is_empty() {
        // What the reads below need is not all there.
        return Ok(Integrity { problems, checks });
    }
    // The tables the runs' reads do not read whole.
    let mut transaction = client.transaction()?;
    let lab = if version >= LAB_VERSION {
        &LAB_TABLES[..]
    } else {
        &[]
    };
    let others: Vec<&str> = ["netbisect_archive", "bisect_sessions", "bisect_events"]
        .iter()
        .chain(lab)
        .copied()
        .collect();
    let count_rows: Vec<String> = others
        .iter()
        .map(|table| {
            format!("(SELECT count(*) FROM {table} AS row WHERE octet_length(row::text) > 0)")
        })
        .collect();
    let n_other_rows: i64 = transaction
        .query_one(&format!("SELECT {}", count_rows.join(" + ")), &[])?
        .try_get(0)?;
    let others_named = if lab.is_empty() {
        "netbisect_archive, bisect_sessions and bisect_events"
    } else {
        "netbisect_archive, bisect_sessions, bisect_events and the lab's tables"
    };
    checks.push(format!(
        "read whole: runs ({n_runs} records), run_series (each row beside its run, and \
         every row for its run id), {others_named} ({})",
        rows(n_other_rows)
    ));
    for table in ["runs", "run_series"] {
        let (by_table, by_index, index) = counts_both_ways(&mut transaction, table)?;
        match index {
            Some(index) if by_table == by_index => checks.push(format!(
                "{table}: {} by a sequential scan and through index {index}",
                rows(by_table)
            )),
            Some(index) => problems.push(format!(
                "{table}: {} by a sequential scan but {by_index} through index {index} \
                 (rebuild it with REINDEX)",
                rows(by_table)
            )),
            None => checks.push(format!(
                "{table}: {} by a sequential scan (the server would not count them \
                 through an index)",
                rows(by_table)
            )),
        }
    }
    let checksums: String = transaction
        .query_one("SHOW data_checksums", &[])?
        .try_get(0)?;
    checks.push(if checksums == "on" {
        "pages: verified by the server's data checksums as they were read".to_string()
    } else {
        "pages: not verified (the cluster has no data checksums, and amcheck is not used)"
            .to_string()
    });
    transaction.rollback()?;
    Ok(Integrity { problems, checks })
}

/// The rows of `table` counted by a sequential scan and through an index
/// (the index the server chose, `None` when it would use none).
fn counts_both_ways(
    transaction: &mut postgres::Transaction<'_>,
    table: &str,
) -> Result<(i64, i64, Option<String>), ArchiveError> {
    let count = format!("SELECT count(*) FROM {table}");
    transaction.batch_execute(
        "SET LOCAL enable_indexscan = off; SET LOCAL enable_indexonlyscan = off; \
         SET LOCAL enable_bitmapscan = off",
    )?;
    let by_table: i64 = transaction.query_one(&count, &[])?.try_get(0)?;
    transaction.batch_execute(
        "SET LOCAL enable_seqscan = off; SET LOCAL enable_indexonlyscan = on; \
         SET LOCAL enable_indexscan = on",
    )?;
    let plan: Vec<String> = transaction
        .query(&format!("EXPLAIN {count}"), &[])?
        .iter()
        .map(|row| row.try_get(0))
        .collect::<Result<_, _>>()?;
    let index = plan.iter().find_map(|line| {
        let (_, after) = line.split_once(" using ")?;
        let (name, _) = after.split_once(" on ")?;
        Some(name.to_string())
    });
    let by_index: i64 = transaction.query_one(&count, &[])?.try_get(0)?;
    transaction.batch_execute("SET LOCAL enable_seqscan = on; SET LOCAL enable_bitmapscan = on")?;
    Ok((by_table, by_index, index))
}

fn rows(n_rows: i64) -> String {
    format!("{n_rows} row{}", if n_rows == 1 { "" } else { "s" })
}
