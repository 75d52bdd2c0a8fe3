//! Unit tests of the store in a file: migrations of older files, and the
//! order and figures of what is stored.

use super::open::migrate_from;
use crate::schema::CURRENT_VERSION;
use crate::store::query::{Dialect, Order, RUN_COLUMNS, select_sql};
use crate::store::{Archive, CanonicalRun, RunQuery, SeriesRun};
use run_record::record::{CpuFigures, Iteration, Metric, RunRecord};
use run_record::spec::TestKind;
use rusqlite::{Connection, params};
use test_fixtures::record::RecordBuilder;

/// A second connection to the archive's file, as another process would
/// have: it sees what the archive committed.
fn sqlite_connection(archive: &Archive) -> Connection {
    let location = archive.location();
    let path = location.file().expect("a file was opened");
    Connection::open(path).unwrap()
}

fn cpu_record() -> RunRecord {
    let cpu = CpuFigures {
        local_util_pct: Some(42.5),
        remote_util_pct: Some(40.0),
        ..CpuFigures::default()
    };
    let summary_cpu = cpu.clone();
    RecordBuilder::new(TestKind::TcpStream)
        .started_at("2026-01-01T00:00:00.000000Z")
        .finished_at("2026-01-01T00:00:10.000000Z")
        .commit("abcdef")
        .iteration(Iteration {
            elapsed_s: 10.0,
            throughput_bps: 1e9,
            cpu: Some(cpu),
            ..Iteration::default()
        })
        .summary_with(|summary| summary.cpu = Some(summary_cpu))
        .build()
}

#[test]
fn migrates_an_empty_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.db");
    std::fs::write(&path, b"").unwrap();
    let archive = Archive::open(&path).unwrap();
    assert_eq!(archive.schema_version().unwrap(), CURRENT_VERSION);
    assert!(archive.check().unwrap().is_clean());
}

#[test]
fn migrates_a_version_1_file_and_backfills_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v1.db");
    let record = cpu_record();
    {
        // A file as version 1 wrote it: its schema and one run.
        let connection = Connection::open(&path).unwrap();
        connection.execute_batch("BEGIN").unwrap();
        migrate_from(&connection, 0, 1).unwrap();
        connection
            .execute(
                "INSERT INTO runs (id, commit_id, describe, label, config_key, testbed, \
                 test, source_tool, started_at, n_iterations, throughput_bps, \
                 transaction_rate, record) \
                 VALUES (?1, ?2, NULL, NULL, ?3, ?4, ?5, ?6, ?7, 1, 1e9, NULL, ?8)",
                params![
                    record.id,
                    "abcdef",
                    record.config_key,
                    "lab",
                    "TCP_STREAM",
                    "netbisect",
                    record.started_at,
                    record.to_canonical_bytes().unwrap()
                ],
            )
            .unwrap();
        connection.execute_batch("COMMIT").unwrap();
        let version: u32 = connection
            .query_row("PRAGMA user_version", [], |row| row.get(0))
            .unwrap();
        assert_eq!(version, 1);
    }
    let archive = Archive::open(&path).unwrap();
    assert_eq!(archive.schema_version().unwrap(), CURRENT_VERSION);
    let values = archive
        .metric_values(&RunQuery::default(), Metric::LocalCpuPct)
        .unwrap();
    assert_eq!(values.len(), 1);
    assert_eq!(values[0].value, 42.5);
    assert_eq!(values[0].run_id, record.id);
    let values = archive
        .metric_values(&RunQuery::default(), Metric::LatencyP99Us)
        .unwrap();
    assert!(values.is_empty());
    // The history columns are filled from the record.
    for metric in [
        Metric::ThroughputBps,
        Metric::LocalCpuPct,
        Metric::LatencyP99Us,
    ] {
        let runs = archive
            .series_runs(&RunQuery::default(), metric)
            .unwrap()
            .unwrap();
        assert_eq!(runs, vec![SeriesRun::of(&record, metric).unwrap()]);
    }
    let report = archive.check().unwrap();
    assert!(report.is_clean(), "{report:?}");
    assert_eq!(report.n_runs, 1);
}

/// Records started at `times`, in that order, each of its own
/// throughput.
fn records_at(times: &[&str]) -> Vec<RunRecord> {
    times
        .iter()
        .enumerate()
        .map(|(idx, time)| {
            RecordBuilder::new(TestKind::TcpStream)
                .started_at(time)
                .finished_at("2026-01-02T00:00:00Z")
                .throughput(10.0, 1e9 + idx as f64)
                .build()
        })
        .collect()
}

#[test]
fn runs_order_by_time_whatever_the_fraction_of_their_times() {
    // In time order; as strings, `23.5Z` sorts before `23Z`.
    let times = [
        "2026-01-01T00:00:22.9Z",
        "2026-01-01T00:00:23Z",
        "2026-01-01T00:00:23.25Z",
        "2026-01-01T00:00:23.5Z",
        "2026-01-01T00:00:24Z",
    ];
    let records = records_at(&times);
    let ids: Vec<&str> = records.iter().map(|record| record.id.as_str()).collect();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    {
        let mut archive = Archive::open(&path).unwrap();
        for record in records.iter().rev() {
            archive
                .store(&CanonicalRun::from_record(record.clone()).unwrap())
                .unwrap();
        }
        let stored = archive.records(&RunQuery::default()).unwrap();
        let order: Vec<&str> = stored.iter().map(|record| record.id.as_str()).collect();
        assert_eq!(order, ids);
        let series = archive
            .series_runs(&RunQuery::default(), Metric::ThroughputBps)
            .unwrap()
            .unwrap();
        let order: Vec<&str> = series.iter().map(|run| run.id.as_str()).collect();
        assert_eq!(order, ids);
        assert!(archive.check().unwrap().is_clean());
    }
    // An archive of version 6 kept each record's time as it was; the
    // migration writes them all with six fraction digits.
    {
        let connection = Connection::open(&path).unwrap();
        for (record, time) in records.iter().zip(times) {
            for table in ["runs", "run_series"] {
                let column = if table == "runs" { "id" } else { "run_id" };
                connection
                    .execute(
                        &format!("UPDATE {table} SET started_at = ?1 WHERE {column} = ?2"),
                        params![time, record.id],
                    )
                    .unwrap();
            }
        }
        connection.execute("DROP INDEX runs_by_time", []).unwrap();
        connection
            .execute_batch(crate::store::lab::DROP_LAB_TABLES)
            .unwrap();
        connection
            .execute_batch(
                "ALTER TABLE runs DROP COLUMN stored_by; ALTER TABLE runs DROP COLUMN stored_from;",
            )
            .unwrap();
        connection.pragma_update(None, "user_version", 6).unwrap();
    }
    let archive = Archive::open(&path).unwrap();
    assert_eq!(archive.schema_version().unwrap(), CURRENT_VERSION);
    let stored = archive.records(&RunQuery::default()).unwrap();
    let order: Vec<&str> = stored.iter().map(|record| record.id.as_str()).collect();
    assert_eq!(order, ids);
    let report = archive.check().unwrap();
    assert!(report.is_clean(), "{report:?}");
}

#[test]
fn a_stored_run_gives_history_what_its_record_does() {
    let dir = tempfile::tempdir().unwrap();
    let mut archive = Archive::open(&dir.path().join("a.db")).unwrap();
    let record = cpu_record();
    archive
        .store(&CanonicalRun::from_record(record.clone()).unwrap())
        .unwrap();
    for metric in Metric::ALL {
        let runs = archive
            .series_runs(&RunQuery::default(), metric)
            .unwrap()
            .unwrap();
        assert_eq!(
            runs,
            vec![SeriesRun::of(&record, metric).unwrap()],
            "{metric}"
        );
    }
    let none = RunQuery {
        label: Some("no such label".to_string()),
        ..RunQuery::default()
    };
    assert!(
        archive
            .series_runs(&none, Metric::ThroughputBps)
            .unwrap()
            .unwrap()
            .is_empty()
    );
    assert!(archive.check().unwrap().is_clean());
    // A history column changed behind the record's back is caught.
    sqlite_connection(&archive)
        .execute(
            "UPDATE run_series SET series = '{\"throughput_bps\":[1.0]}'",
            [],
        )
        .unwrap();
    let report = archive.check().unwrap();
    assert_eq!(report.damaged_runs.len(), 1, "{report:?}");
    assert_eq!(
        report.damaged_runs[0].problem,
        "its run_series row disagrees with the record: series"
    );
    // So is a run whose history row is gone.
    sqlite_connection(&archive)
        .execute("DELETE FROM run_series", [])
        .unwrap();
    let report = archive.check().unwrap();
    assert_eq!(report.damaged_runs.len(), 1, "{report:?}");
    assert_eq!(report.damaged_runs[0].problem, "missing from run_series");
    let err = archive
        .series_runs(&RunQuery::default(), Metric::ThroughputBps)
        .unwrap_err();
    assert!(err.to_string().contains("missing from run_series"), "{err}");
}

#[test]
fn the_newest_runs_are_read_from_the_time_index_not_sorted() {
    let dir = tempfile::tempdir().unwrap();
    let archive = Archive::open(&dir.path().join("plan.db")).unwrap();
    let query = RunQuery {
        limit: Some(1),
        ..RunQuery::default()
    };
    for order in [Order::NewestFirst, Order::OldestFirst] {
        let (sql, _) = select_sql(Dialect::Sqlite, RUN_COLUMNS, "runs", &query, order).unwrap();
        let connection = sqlite_connection(&archive);
        let mut statement = connection
            .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
            .unwrap();
        let plan: Vec<String> = statement
            .query_map([], |row| row.get(3))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter().any(|step| step.contains("runs_by_time")),
            "{plan:?}"
        );
        assert!(
            !plan.iter().any(|step| step.contains("TEMP B-TREE")),
            "{plan:?}"
        );
    }
}

/// A file of schema 9 gains who stored each run when a writer opens it:
/// unknown for the runs it held, this process's user and host for a run
/// stored since, and for a run merged in from another file too (stored
/// into this file by this user, whoever stored it in the other), while
/// the records and their ids stay as they were.
#[test]
fn a_file_of_schema_9_records_who_stores_runs_from_then_on() {
    let records = records_at(&["2026-01-01T00:00:01Z", "2026-01-01T00:00:02Z"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    {
        let mut archive = Archive::open(&path).unwrap();
        archive
            .store(&CanonicalRun::from_record(records[0].clone()).unwrap())
            .unwrap();
    }
    {
        let connection = Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "ALTER TABLE runs DROP COLUMN stored_by; ALTER TABLE runs DROP COLUMN stored_from;",
            )
            .unwrap();
        connection.pragma_update(None, "user_version", 9).unwrap();
    }
    let bytes = records[0].to_canonical_bytes().unwrap();
    let other = dir.path().join("other.db");
    Archive::open(&other)
        .unwrap()
        .store(&CanonicalRun::from_record(records[1].clone()).unwrap())
        .unwrap();
    let mut archive = Archive::open(&path).unwrap();
    assert_eq!(archive.schema_version().unwrap(), CURRENT_VERSION);
    let (old, bytes_after) = archive.find(&records[0].id).unwrap();
    assert_eq!((old.stored_by, old.stored_from), (None, None));
    assert_eq!(bytes_after, bytes);
    assert_eq!(archive.merge_from(&other).unwrap().added, 1);
    let storer = super::storer::Storer::of_this_process();
    let (merged, merged_bytes) = archive.find(&records[1].id).unwrap();
    assert_eq!(merged.stored_by.as_deref(), Some(storer.user.as_str()));
    assert_eq!(merged.stored_from, storer.host);
    assert_eq!(merged.id, records[1].id);
    assert_eq!(
        run_record::record::RunRecord::from_slice(&merged_bytes).unwrap(),
        records[1]
    );
    assert!(archive.check().unwrap().is_clean());
}
