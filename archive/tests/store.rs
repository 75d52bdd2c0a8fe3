//! The store on real SQLite files in temp dirs: round trip, idempotent
//! store and merge, refusals, queries, concurrency.

use archive::FILE_SCHEMA_VERSION as CURRENT_VERSION;
use archive::{Archive, ArchiveError, CanonicalRun, RunQuery, StoreOutcome};
use run_record::record::{Iteration, Metric, RunRecord};
use run_record::spec::TestKind;
use test_fixtures::record::RecordBuilder;

fn record(commit: &str, label: &str, throughput_bps: f64, test: TestKind) -> RunRecord {
    let iterations: Vec<Iteration> = [0.99, 1.0, 1.01]
        .iter()
        .map(|factor| Iteration {
            elapsed_s: 1.0,
            throughput_bps: throughput_bps * factor,
            transaction_rate: test
                .is_request_response()
                .then_some(throughput_bps * factor / 16.0),
            bytes_sent: Some(1000),
            bytes_received: Some(1000),
            messages_sent: Some(10),
            messages_received: Some(10),
            ..Iteration::default()
        })
        .collect();
    RecordBuilder::new(test)
        .tool_version("0.1.0")
        .started_at(&format!(
            "2026-11-30T07:00:{:02}.000000Z",
            (throughput_bps as u64) % 60
        ))
        .finished_at("2026-11-30T07:01:00.000000Z")
        .commit(commit)
        .label(label)
        .testbed("lab1")
        .iterations(iterations)
        .build()
}

fn canonical(record: RunRecord) -> CanonicalRun {
    CanonicalRun::from_record(record).unwrap()
}

#[test]
fn round_trip_is_byte_identical_and_duplicates_are_no_ops() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("archive.db");
    let mut archive = Archive::open(&path).unwrap();
    assert_eq!(archive.schema_version().unwrap(), CURRENT_VERSION);
    let run = canonical(record("aaaa1111", "base", 1e9, TestKind::TcpStream));
    assert_eq!(archive.store(&run).unwrap(), StoreOutcome::Added);
    assert_eq!(archive.store(&run).unwrap(), StoreOutcome::AlreadyPresent);
    assert_eq!(archive.count().unwrap(), 1);
    drop(archive);

    let archive = Archive::open(&path).unwrap();
    let (stored, bytes) = archive.find(&run.record().id[..8]).unwrap();
    assert_eq!(bytes, run.bytes());
    assert_eq!(bytes, run.record().to_canonical_bytes().unwrap());
    assert_eq!(stored.commit.as_deref(), Some("aaaa1111"));
    assert_eq!(stored.test, TestKind::TcpStream);
    let records = archive.records(&RunQuery::default()).unwrap();
    assert_eq!(records, vec![run.record().clone()]);
    assert!(archive.check().unwrap().is_clean());
}

#[test]
fn pretty_json_is_stored_canonically_with_unknown_members_kept() {
    let run = record("bbbb", "x", 2e9, TestKind::TcpStream);
    let pretty = serde_json::to_vec_pretty(&run).unwrap();
    let parsed = CanonicalRun::from_json(&pretty).unwrap();
    assert_eq!(parsed.bytes(), run.to_canonical_bytes().unwrap());

    // A member from a newer minor revision survives, and the id still
    // verifies after storing.
    let mut tree: serde_json::Value = serde_json::from_slice(&pretty).unwrap();
    tree["schema"] = serde_json::json!(format!(
        "netbisect.run/1.{}",
        run_record::record::SCHEMA_MINOR + 1
    ));
    tree["future_field"] = serde_json::json!({"b": 1, "a": 2});
    tree.as_object_mut().unwrap().remove("id");
    let id =
        run_record::canonical::hash_hex(&run_record::canonical::to_canonical_bytes(&tree).unwrap());
    tree["id"] = serde_json::Value::String(id.clone());
    let text = serde_json::to_vec_pretty(&tree).unwrap();
    let parsed = CanonicalRun::from_json(&text).unwrap();
    assert!(String::from_utf8_lossy(parsed.bytes()).contains(r#""future_field":{"a":2,"b":1}"#));
    let dir = tempfile::tempdir().unwrap();
    let mut archive = Archive::open(&dir.path().join("a.db")).unwrap();
    archive.store(&parsed).unwrap();
    let (_, bytes) = archive.find(&id).unwrap();
    assert_eq!(RunRecord::from_slice(&bytes).unwrap().id, id);
    assert!(archive.check().unwrap().is_clean());
}

#[test]
fn unsealed_records_are_refused() {
    let mut run = record("cccc", "x", 1e9, TestKind::TcpStream);
    run.summary.throughput_bps.mean = 5.0;
    let err = CanonicalRun::from_record(run).unwrap_err();
    assert!(matches!(err, ArchiveError::NotSealed { .. }), "{err}");
}

#[test]
fn queries_filter_by_prefix_label_config_and_test() {
    let dir = tempfile::tempdir().unwrap();
    let mut archive = Archive::open(&dir.path().join("a.db")).unwrap();
    let runs: Vec<CanonicalRun> = [
        ("abc123", "base", 1e9, TestKind::TcpStream),
        ("abc123", "base", 1.1e9, TestKind::TcpStream),
        ("abd456", "patched", 0.9e9, TestKind::TcpStream),
        ("abd456", "patched", 8000.0, TestKind::TcpRr),
    ]
    .into_iter()
    .map(|(commit, label, value, test)| canonical(record(commit, label, value, test)))
    .collect();
    let counts = archive.store_all(&runs).unwrap();
    assert_eq!(counts.added, 4);

    let by_commit = |prefix: &str| RunQuery {
        commit_prefix: Some(prefix.to_string()),
        ..RunQuery::default()
    };
    assert_eq!(archive.runs(&by_commit("ab")).unwrap().len(), 4);
    assert_eq!(archive.runs(&by_commit("abc")).unwrap().len(), 2);
    assert_eq!(archive.runs(&by_commit("ab*")).unwrap().len(), 0);
    let stream_key = runs[0].record().config_key.clone();
    let query = RunQuery {
        config_key_prefix: Some(stream_key[..10].to_string()),
        label: Some("patched".to_string()),
        ..RunQuery::default()
    };
    let found = archive.runs(&query).unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].commit.as_deref(), Some("abd456"));
    let query = RunQuery {
        test: Some(TestKind::TcpRr),
        ..RunQuery::default()
    };
    let values = archive
        .metric_values(&query, Metric::TransactionRate)
        .unwrap();
    assert_eq!(values.len(), 1);
    assert!((values[0].value - 500.0).abs() < 1e-9);
    let values = archive
        .metric_values(&RunQuery::default(), Metric::LatencyP99Us)
        .unwrap();
    assert!(values.is_empty());

    let err = archive.find("").unwrap_err();
    assert!(matches!(err, ArchiveError::InvalidQuery(_)));
    let err = archive.find("zzzz").unwrap_err();
    assert!(matches!(err, ArchiveError::NoSuchRun(_)));
}

#[test]
fn ambiguous_prefix_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut archive = Archive::open(&dir.path().join("a.db")).unwrap();
    // 40 runs: two ids surely share their first hex digit.
    let runs: Vec<CanonicalRun> = (0..40)
        .map(|idx| {
            canonical(record(
                "c0ffee",
                "x",
                1e9 + f64::from(idx),
                TestKind::TcpStream,
            ))
        })
        .collect();
    archive.store_all(&runs).unwrap();
    let mut first_digits: Vec<char> = runs
        .iter()
        .map(|run| run.record().id.chars().next().unwrap())
        .collect();
    first_digits.sort_unstable();
    let shared = first_digits
        .windows(2)
        .find(|pair| pair[0] == pair[1])
        .unwrap()[0];
    let err = archive.find(&shared.to_string()).unwrap_err();
    assert!(
        matches!(err, ArchiveError::AmbiguousId { n_matches, .. } if n_matches >= 2),
        "{err}"
    );
}

#[test]
fn merge_is_idempotent() {
    let dir = tempfile::tempdir().unwrap();
    let mut first = Archive::open(&dir.path().join("first.db")).unwrap();
    let mut second = Archive::open(&dir.path().join("second.db")).unwrap();
    let shared = canonical(record("1111", "a", 1e9, TestKind::TcpStream));
    first.store(&shared).unwrap();
    first
        .store(&canonical(record("2222", "a", 2e9, TestKind::TcpStream)))
        .unwrap();
    second.store(&shared).unwrap();
    second
        .store(&canonical(record("3333", "b", 3e9, TestKind::UdpStream)))
        .unwrap();
    let counts = first.merge_from(&dir.path().join("second.db")).unwrap();
    assert_eq!(
        (counts.examined, counts.added, counts.already_present),
        (2, 1, 1)
    );
    let counts = first.merge_from(&dir.path().join("second.db")).unwrap();
    assert_eq!(
        (counts.examined, counts.added, counts.already_present),
        (2, 0, 2)
    );
    assert_eq!(first.count().unwrap(), 3);
    assert!(first.check().unwrap().is_clean());
    // A file that is not there is said as a read says it.
    let err = first.merge_from(&dir.path().join("absent.db")).unwrap_err();
    assert!(matches!(err, ArchiveError::NoArchive { .. }), "{err}");
    assert!(!dir.path().join("absent.db").exists());
}

#[test]
fn foreign_corrupt_and_newer_files_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let garbage = dir.path().join("garbage.db");
    let text = b"this is not an SQLite database, just text that is long enough....".repeat(10);
    std::fs::write(&garbage, &text).unwrap();
    let err = Archive::open(&garbage).err().unwrap();
    assert!(matches!(err, ArchiveError::NotAnArchive { .. }), "{err}");
    assert_eq!(std::fs::read(&garbage).unwrap(), text);

    let foreign = dir.path().join("foreign.db");
    {
        let connection = rusqlite::Connection::open(&foreign).unwrap();
        connection
            .execute_batch("CREATE TABLE notes (x TEXT)")
            .unwrap();
    }
    let before = std::fs::read(&foreign).unwrap();
    let err = Archive::open(&foreign).err().unwrap();
    assert!(matches!(err, ArchiveError::NotAnArchive { .. }), "{err}");
    assert_eq!(std::fs::read(&foreign).unwrap(), before);

    let newer = dir.path().join("newer.db");
    drop(Archive::open(&newer).unwrap());
    {
        let connection = rusqlite::Connection::open(&newer).unwrap();
        connection.pragma_update(None, "user_version", 99).unwrap();
    }
    let err = Archive::open(&newer).err().unwrap();
    assert_eq!(
        err.to_string(),
        format!(
            "{} has archive schema version 99, newer than version {CURRENT_VERSION} that this \
             netbisect reads; use a newer netbisect",
            newer.display()
        )
    );
}

#[test]
fn concurrent_writers_and_a_reader() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    drop(Archive::open(&path).unwrap());
    std::thread::scope(|scope| {
        for writer_idx in 0..2u32 {
            let path = &path;
            scope.spawn(move || {
                let mut archive = Archive::open(path).unwrap();
                for run_idx in 0..25u32 {
                    let value = 1e9 + f64::from(writer_idx * 1000 + run_idx);
                    let run = canonical(record("dead", "w", value, TestKind::TcpStream));
                    archive.store(&run).unwrap();
                }
            });
        }
        let path = &path;
        scope.spawn(move || {
            let archive = Archive::open(path).unwrap();
            for _ in 0..25 {
                let n_runs = archive.count().unwrap();
                assert!(n_runs <= 50);
                archive.runs(&RunQuery::default()).unwrap();
            }
        });
    });
    let archive = Archive::open(&path).unwrap();
    assert_eq!(archive.count().unwrap(), 50);
    assert!(archive.check().unwrap().is_clean());
}

#[test]
fn concurrent_creation_of_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new.db");
    std::thread::scope(|scope| {
        for _ in 0..4 {
            let path = &path;
            scope.spawn(move || Archive::open(path).unwrap());
        }
    });
    assert_eq!(
        Archive::open(&path).unwrap().schema_version().unwrap(),
        CURRENT_VERSION
    );
}

#[test]
fn an_undated_run_keeps_its_import_time_in_its_own_column() {
    let dated = record("dddd", "x", 1e9, TestKind::TcpStream);
    let mut undated = record("eeee", "x", 1e9, TestKind::TcpStream);
    undated.source.undated = true;
    undated.seal().unwrap();
    // The import time is not in the id.
    let mut later = undated.clone();
    later.started_at = "2027-01-01T00:00:00.000000Z".to_string();
    later.seal().unwrap();
    assert_eq!(later.id, undated.id);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.db");
    let mut archive = Archive::open(&path).unwrap();
    archive
        .store(&CanonicalRun::from_record(dated.clone()).unwrap())
        .unwrap();
    archive
        .store(&CanonicalRun::from_record(undated.clone()).unwrap())
        .unwrap();
    drop(archive);
    let connection = rusqlite::Connection::open(&path).unwrap();
    let imported_at = |id: &str| -> Option<String> {
        connection
            .query_row("SELECT imported_at FROM runs WHERE id = ?1", [id], |row| {
                row.get(0)
            })
            .unwrap()
    };
    assert_eq!(imported_at(&dated.id), None);
    assert_eq!(imported_at(&undated.id), Some(undated.started_at.clone()));
}

fn side_files(path: &std::path::Path) -> Vec<std::fs::Metadata> {
    ["-wal", "-shm"]
        .iter()
        .filter_map(|suffix| std::fs::metadata(format!("{}{suffix}", path.display())).ok())
        .collect()
}

#[test]
fn a_writer_keeps_its_side_files_only_where_others_may_create_files() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let run = canonical(record("aaaa1111", "base", 1e9, TestKind::TcpStream));
    // A directory only its owner may write: nothing is left beside the
    // archive once it is closed.
    let private = tempfile::tempdir().unwrap();
    let path = private.path().join("archive.db");
    Archive::open(&path).unwrap().store(&run).unwrap();
    assert!(side_files(&path).is_empty());
    // One every user may write (as /tmp): the -wal and -shm stay, the
    // -wal empty, both with the archive's owner and mode.
    let shared = tempfile::tempdir().unwrap();
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777)).unwrap();
    let path = shared.path().join("archive.db");
    Archive::open(&path).unwrap().store(&run).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o640)).unwrap();
    let again = canonical(record("bbbb2222", "base", 2e9, TestKind::TcpStream));
    Archive::open(&path).unwrap().store(&again).unwrap();
    let database = std::fs::metadata(&path).unwrap();
    let sides = side_files(&path);
    assert_eq!(sides.len(), 2);
    for side in &sides {
        assert_eq!(side.uid(), database.uid());
        assert_eq!(side.mode() & 0o777, 0o640);
    }
    assert_eq!(sides[0].len(), 0, "the -wal is truncated");
    assert_eq!(Archive::open(&path).unwrap().count().unwrap(), 2);
}
