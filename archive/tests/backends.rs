//! One archive test suite on both backends: every test runs on a SQLite
//! file and on a PostgreSQL database of a cluster the tests start
//! themselves. Where no PostgreSQL binaries are installed the PostgreSQL
//! half says so and passes; where they are, a cluster that does not
//! start is a failure.

use archive::location::ServerAddress;
use archive::store::SeriesRun;
use archive::{Archive, ArchiveError, CanonicalRun, Location, RunQuery, StoreOutcome};
use run_record::record::{Iteration, Metric, RunRecord};
use run_record::spec::TestKind;
use test_fixtures::postgres::Cluster;
use test_fixtures::record::RecordBuilder;

/// An archive location of each backend, with what keeps it alive.
enum Place {
    File(tempfile::TempDir),
    Server(&'static Cluster, String),
}

impl Place {
    fn location(&self) -> Location {
        match self {
            Place::File(dir) => Location::File(dir.path().join("archive.db")),
            Place::Server(cluster, name) => {
                Location::Server(Box::new(ServerAddress::parse(&cluster.url(name)).unwrap()))
            }
        }
    }

    /// Runs `sql` on the archive's own storage, behind netbisect's back.
    fn tamper(&self, sql: &str) {
        match self {
            Place::File(dir) => {
                let connection = rusqlite::Connection::open(dir.path().join("archive.db")).unwrap();
                connection.execute_batch(sql).unwrap();
            }
            Place::Server(cluster, name) => cluster.run_in(name, sql),
        }
    }
}

/// A SQLite place, then a PostgreSQL one when a server can be had.
fn places() -> Vec<Place> {
    let mut places = vec![Place::File(tempfile::tempdir().unwrap())];
    if let Some(cluster) = cluster() {
        places.push(Place::Server(cluster, cluster.database()));
    }
    places
}

/// The tests' PostgreSQL server; `None`, said on stderr, only where no
/// PostgreSQL is installed.
fn cluster() -> Option<&'static Cluster> {
    match Cluster::shared() {
        Ok(cluster) => Some(cluster),
        Err(why) if !Cluster::installed() => {
            eprintln!("skipping the PostgreSQL half: {why}");
            None
        }
        Err(why) => panic!("PostgreSQL is installed but its cluster failed: {why}"),
    }
}

fn record(commit: &str, label: &str, throughput_bps: f64, test: TestKind) -> RunRecord {
    let iterations: Vec<Iteration> = [0.99, 1.0, 1.01]
        .iter()
        .map(|factor| Iteration {
            elapsed_s: 1.0,
            throughput_bps: throughput_bps * factor,
            transaction_rate: test
                .is_request_response()
                .then_some(throughput_bps * factor / 16.0),
            ..Iteration::default()
        })
        .collect();
    RecordBuilder::new(test)
        .started_at(&format!(
            "2026-11-30T07:{:02}:00.000000Z",
            (throughput_bps as u64 / 1000) % 60
        ))
        .finished_at("2026-11-30T08:00:00.000000Z")
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
fn a_run_stored_twice_is_stored_once_and_read_back_byte_for_byte() {
    for place in places() {
        let location = place.location();
        let mut archive = Archive::open_location(&location).unwrap();
        let run = canonical(record("aaaa1111", "base", 1e9, TestKind::TcpStream));
        assert_eq!(archive.store(&run).unwrap(), StoreOutcome::Added);
        assert_eq!(archive.store(&run).unwrap(), StoreOutcome::AlreadyPresent);
        let counts = archive.store_all(&[run.clone(), run.clone()]).unwrap();
        assert_eq!((counts.added, counts.already_present), (0, 2), "{location}");
        assert_eq!(archive.count().unwrap(), 1);
        drop(archive);

        let archive = Archive::open_location_read_only(&location).unwrap();
        let (stored, bytes) = archive.find(&run.record().id[..8]).unwrap();
        assert_eq!(bytes, run.bytes());
        assert_eq!(stored.commit.as_deref(), Some("aaaa1111"));
        assert_eq!(stored.n_iterations, 3);
        assert_eq!(
            archive.records(&RunQuery::default()).unwrap(),
            [run.record().clone()]
        );
        assert!(archive.check().unwrap().is_clean());
    }
}

#[test]
fn queries_select_and_order_the_same_on_both_backends() {
    let runs: Vec<CanonicalRun> = [
        ("aaaa1111", "base", 1e6, TestKind::TcpStream),
        ("aaaa1111", "base", 2e6, TestKind::TcpRr),
        ("bbbb2222", "patched", 3e6, TestKind::TcpStream),
        ("bbbb2222", "patched", 4e6, TestKind::TcpStream),
        ("ab%_2222", "odd", 5e6, TestKind::TcpStream),
    ]
    .into_iter()
    .map(|(commit, label, rate, test)| canonical(record(commit, label, rate, test)))
    .collect();
    let mut answers = Vec::new();
    for place in places() {
        let mut archive = Archive::open_location(&place.location()).unwrap();
        assert_eq!(archive.store_all(&runs).unwrap().added, 5);
        let ids = |query: RunQuery| -> Vec<String> {
            archive
                .runs(&query)
                .unwrap()
                .into_iter()
                .map(|run| run.id)
                .collect()
        };
        let answer = vec![
            ids(RunQuery::default()),
            ids(RunQuery {
                commit_prefix: Some("aaaa".to_string()),
                ..RunQuery::default()
            }),
            // Wildcards of either dialect are plain characters.
            ids(RunQuery {
                commit_prefix: Some("ab%".to_string()),
                ..RunQuery::default()
            }),
            ids(RunQuery {
                commit_prefix: Some("a_".to_string()),
                ..RunQuery::default()
            }),
            ids(RunQuery {
                label: Some("patched".to_string()),
                test: Some(TestKind::TcpStream),
                limit: Some(1),
                ..RunQuery::default()
            }),
            ids(RunQuery {
                config_key_prefix: Some(runs[0].record().config_key.clone()),
                ..RunQuery::default()
            }),
            archive
                .runs_newest_first(&RunQuery {
                    limit: Some(2),
                    ..RunQuery::default()
                })
                .unwrap()
                .into_iter()
                .map(|run| run.id)
                .collect(),
        ];
        assert_eq!(answer[2].len(), 1);
        assert!(answer[3].is_empty());
        let values = archive
            .metric_values(&RunQuery::default(), Metric::ThroughputBps)
            .unwrap();
        assert_eq!(values.len(), 5);
        let series = archive
            .series_runs(&RunQuery::default(), Metric::ThroughputBps)
            .unwrap()
            .unwrap();
        let expected: Vec<SeriesRun> = archive
            .records(&RunQuery::default())
            .unwrap()
            .iter()
            .map(|record| SeriesRun::of(record, Metric::ThroughputBps).unwrap())
            .collect();
        assert_eq!(series, expected);
        let err = archive.find("").unwrap_err();
        assert!(matches!(err, ArchiveError::InvalidQuery(_)), "{err}");
        answers.push(answer);
    }
    for answer in &answers[1..] {
        assert_eq!(answer, &answers[0]);
    }
}

#[test]
fn a_tampered_run_is_refused_on_read_and_listed_by_check() {
    for place in places() {
        let location = place.location();
        let mut archive = Archive::open_location(&location).unwrap();
        let run = canonical(record("aaaa1111", "base", 1e9, TestKind::TcpStream));
        let other = canonical(record("aaaa1111", "base", 2e9, TestKind::TcpStream));
        archive.store_all(&[run.clone(), other.clone()]).unwrap();
        let forged = String::from_utf8(other.bytes().to_vec()).unwrap();
        let literal = match &place {
            Place::File(_) => format!("CAST('{forged}' AS BLOB)"),
            Place::Server(..) => format!("convert_to('{forged}', 'UTF8')"),
        };
        place.tamper(&format!(
            "UPDATE runs SET record = {literal} WHERE id = '{}'",
            run.record().id
        ));
        // Another run's bytes under this run's id.
        let (stored, bytes) = archive.find(&run.record().id).unwrap();
        let err = Archive::verify_stored(&stored, &bytes).unwrap_err();
        assert!(matches!(err, ArchiveError::DamagedRun { .. }), "{err}");
        let report = archive.check().unwrap();
        assert_eq!(report.damaged_runs.len(), 1, "{location}: {report:?}");
        assert_eq!(report.damaged_runs[0].id, run.record().id);
        // A figure changed: the bytes no longer hash to their id.
        let altered = forged.replace("2000000000", "2500000000");
        assert_ne!(altered, forged);
        let literal = match &place {
            Place::File(_) => format!("CAST('{altered}' AS BLOB)"),
            Place::Server(..) => format!("convert_to('{altered}', 'UTF8')"),
        };
        place.tamper(&format!(
            "UPDATE runs SET record = {literal} WHERE id = '{}'",
            other.record().id
        ));
        let err = archive.records(&RunQuery::default()).unwrap_err();
        assert!(matches!(err, ArchiveError::DamagedRun { .. }), "{err}");
        assert_eq!(archive.check().unwrap().damaged_runs.len(), 2);
        place.tamper("DELETE FROM run_series");
        let err = archive
            .series_runs(&RunQuery::default(), Metric::ThroughputBps)
            .unwrap_err();
        assert!(err.to_string().contains("missing from run_series"), "{err}");
    }
}

#[test]
fn check_on_postgresql_says_what_it_checked_and_finds_a_broken_catalog() {
    let Some(cluster) = cluster() else {
        return;
    };
    let place = Place::Server(cluster, cluster.database());
    let mut archive = Archive::open_location(&place.location()).unwrap();
    let runs: Vec<CanonicalRun> = (0..3)
        .map(|idx| {
            canonical(record(
                "aaaa1111",
                "base",
                1e9 + f64::from(idx),
                TestKind::TcpStream,
            ))
        })
        .collect();
    archive.store_all(&runs).unwrap();
    let report = archive.check().unwrap();
    assert!(report.is_clean(), "{report:?}");
    let checks = report.integrity_checks.join("\n");
    assert!(
        checks.contains("catalog: 5 tables, 11 indexes valid, "),
        "{checks}"
    );
    assert!(
        checks.contains("runs: 3 rows by a sequential scan and through index runs_"),
        "{checks}"
    );
    assert!(
        checks.contains("run_series: 3 rows by a sequential scan and through index"),
        "{checks}"
    );
    assert!(checks.contains("pages: "), "{checks}");

    // Rows an index does not hold: added while the table claimed to have
    // no index.
    place.tamper("UPDATE pg_class SET relhasindex = false WHERE oid = 'runs'::regclass");
    place.tamper(
        "CREATE TEMPORARY TABLE copied AS SELECT * FROM runs LIMIT 1; \
         UPDATE copied SET id = 'x' || id; \
         INSERT INTO runs SELECT * FROM copied; \
         UPDATE pg_class SET relhasindex = true WHERE oid = 'runs'::regclass",
    );
    let report = archive.check().unwrap();
    assert!(!report.is_clean());
    let problems = report.integrity.join("\n");
    assert!(
        problems.contains("runs: 4 rows by a sequential scan but 3 through index"),
        "{problems}"
    );
    place.tamper("REINDEX TABLE runs; DELETE FROM runs WHERE id LIKE 'x%'");
    let report = archive.check().unwrap();
    assert!(report.is_clean(), "{report:?}");

    // An index made invalid, and one dropped.
    place.tamper(
        "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'runs_by_time'::regclass; \
         DROP INDEX runs_by_label",
    );
    let report = archive.check().unwrap();
    assert!(!report.is_clean());
    assert!(
        report
            .integrity
            .contains(&"index runs_by_time is not valid (rebuild it with REINDEX)".to_string()),
        "{report:?}"
    );
    assert!(
        report
            .integrity
            .contains(&"index runs_by_label is missing".to_string()),
        "{report:?}"
    );
}

#[test]
fn the_journal_keeps_sessions_and_events_in_order() {
    for place in places() {
        let location = place.location();
        let mut archive = Archive::open_location(&location).unwrap();
        let session = archive.start_session("/src/linux", r#"{"a":1}"#).unwrap();
        let err = archive.start_session("/src/linux", "{}").unwrap_err();
        assert!(
            matches!(err, ArchiveError::SessionActive { session_id, .. } if session_id == session.id),
            "{err}"
        );
        assert_eq!(archive.append_event(session.id, r#"{"n":1}"#).unwrap(), 1);
        assert_eq!(archive.append_event(session.id, r#"{"n":2}"#).unwrap(), 2);
        assert!(archive.append_event(session.id, "not json").is_err());
        archive.set_session_config_key(session.id, "abc").unwrap();
        let reader = Archive::open_location_read_only(&location).unwrap();
        assert_eq!(
            reader.session_events(session.id).unwrap(),
            [r#"{"n":1}"#, r#"{"n":2}"#]
        );
        let active = reader.active_session("/src/linux").unwrap().unwrap();
        assert_eq!(
            (active.n_events, active.config_key.as_deref()),
            (2, Some("abc"))
        );
        let ended = archive.end_session(session.id).unwrap();
        assert!(!ended.is_active());
        assert!(matches!(
            archive.append_event(session.id, "{}"),
            Err(ArchiveError::SessionEnded(_))
        ));
        assert!(archive.start_session("/src/linux", "{}").is_ok());
        assert_eq!(archive.sessions().unwrap().len(), 2);
        assert!(matches!(
            archive.session(999),
            Err(ArchiveError::NoSuchSession(999))
        ));
        assert!(archive.check().unwrap().is_clean());
    }
}

#[test]
fn merge_copies_between_any_two_archives_idempotently() {
    let places = places();
    let runs: Vec<CanonicalRun> = (1..=5)
        .map(|idx| {
            canonical(record(
                "cccc3333",
                "m",
                f64::from(idx) * 1e6,
                TestKind::TcpStream,
            ))
        })
        .collect();
    for source in &places {
        for kind in &places {
            let target = match kind {
                Place::File(_) => Place::File(tempfile::tempdir().unwrap()),
                Place::Server(cluster, _) => Place::Server(cluster, cluster.database()),
            };
            let mut from = Archive::open_location(&source.location()).unwrap();
            from.store_all(&runs[..3]).unwrap();
            let mut into = Archive::open_location(&target.location()).unwrap();
            into.store_all(&runs[2..]).unwrap();
            let counts = into.merge(&source.location()).unwrap();
            assert_eq!(
                (counts.examined, counts.added, counts.already_present),
                (3, 2, 1),
                "{} into {}",
                source.location(),
                target.location()
            );
            let again = into.merge(&source.location()).unwrap();
            assert_eq!((again.added, again.already_present), (0, 3));
            assert_eq!(into.count().unwrap(), 5);
            assert!(into.check().unwrap().is_clean());
        }
    }
}

#[test]
fn concurrent_writers_store_each_run_once() {
    let Some(cluster) = cluster() else {
        return;
    };
    let name = cluster.database();
    let location = Location::Server(Box::new(ServerAddress::parse(&cluster.url(&name)).unwrap()));
    let runs: Vec<CanonicalRun> = (0..64)
        .map(|idx| {
            canonical(record(
                "dddd4444",
                "c",
                f64::from(idx + 1) * 1e5,
                TestKind::TcpStream,
            ))
        })
        .collect();
    std::thread::scope(|scope| {
        for writer in 0..8usize {
            let (runs, location) = (&runs, &location);
            scope.spawn(move || {
                let mut archive = Archive::open_location(location).unwrap();
                // Overlapping sets, in different orders.
                let mut mine: Vec<CanonicalRun> =
                    runs.iter().skip(writer * 4).take(40).cloned().collect();
                if writer % 2 == 1 {
                    mine.reverse();
                }
                archive.store_all(&mine).unwrap();
            });
        }
    });
    let archive = Archive::open_location_read_only(&location).unwrap();
    assert_eq!(archive.count().unwrap(), 64);
    assert!(archive.check().unwrap().is_clean());
}

/// A PostgreSQL archive at schema version 1 (its history index without
/// the columns it covers since version 2) is brought to version 2 when a
/// writer opens it, its runs kept and read as before; a reader leaves it
/// at version 1 and reads it too. A version beyond this build's is still
/// refused, naming both.
#[test]
fn a_postgresql_archive_at_version_1_is_upgraded_and_a_newer_one_refused() {
    let Some(cluster) = cluster() else {
        return;
    };
    let name = cluster.database();
    let location = Place::Server(cluster, name.clone()).location();
    let mut archive = Archive::open_location(&location).unwrap();
    let runs: Vec<CanonicalRun> = (0..4)
        .map(|idx| {
            canonical(record(
                "aaaa1111",
                if idx % 2 == 0 { "base" } else { "new" },
                1e9 + f64::from(idx) * 1e6,
                TestKind::TcpStream,
            ))
        })
        .collect();
    archive.store_all(&runs).unwrap();
    let query = RunQuery {
        label: Some("base".to_string()),
        config_key_prefix: Some(runs[0].record().config_key.clone()),
        ..RunQuery::default()
    };
    let history = archive
        .series_runs(&query, Metric::ThroughputBps)
        .unwrap()
        .unwrap();
    assert_eq!(history.len(), 2);
    drop(archive);
    // The index as version 1 made it.
    cluster.run_in(
        &name,
        "DROP INDEX runs_history; \
         CREATE INDEX runs_history ON runs (config_key, label, started_at, id); \
         UPDATE netbisect_archive SET schema_version = 1",
    );
    let covering = "DO $$ BEGIN IF (SELECT indexdef FROM pg_indexes \
         WHERE indexname = 'runs_history') NOT LIKE \
         '%(config_key, label, started_at, id) INCLUDE (commit_id, test)' \
         THEN RAISE 'runs_history covers nothing'; END IF; END $$";

    let reader = Archive::open_location_read_only(&location).unwrap();
    assert_eq!(reader.schema_version().unwrap(), 1);
    assert_eq!(
        reader
            .series_runs(&query, Metric::ThroughputBps)
            .unwrap()
            .unwrap(),
        history
    );
    drop(reader);

    let archive = Archive::open_location(&location).unwrap();
    assert_eq!(archive.schema_version().unwrap(), 2);
    cluster.run_in(&name, covering);
    assert_eq!(
        archive
            .series_runs(&query, Metric::ThroughputBps)
            .unwrap()
            .unwrap(),
        history
    );
    assert_eq!(archive.count().unwrap(), 4);
    assert!(archive.check().unwrap().is_clean());
    drop(archive);

    cluster.run_in(&name, "UPDATE netbisect_archive SET schema_version = 3");
    for err in [
        Archive::open_location(&location).err().unwrap(),
        Archive::open_location_read_only(&location).err().unwrap(),
    ] {
        assert!(
            err.to_string()
                .contains("archive schema version 3 is newer than version 2"),
            "{err}"
        );
    }
}

#[test]
fn a_server_that_cannot_be_used_is_refused_naming_its_address_not_its_password() {
    let Some(cluster) = cluster() else {
        return;
    };
    let name = cluster.database();
    let wrong = format!(
        "postgres://{}:not-the-password@127.0.0.1:{}/{name}",
        test_fixtures::postgres::USER,
        cluster.port()
    );
    let err = Archive::open_location(&Location::Server(Box::new(
        ServerAddress::parse(&wrong).unwrap(),
    )))
    .err()
    .unwrap();
    let text = err.to_string();
    assert!(matches!(err, ArchiveError::Server { .. }), "{text}");
    assert!(!text.contains("not-the-password"), "{text}");
    assert!(
        text.contains(&cluster.url_without_password(&name)),
        "{text}"
    );

    // Nothing listens on a port just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let unreachable = format!("postgres://lab:pw@127.0.0.1:{port}/x?connect_timeout=5");
    let err = Archive::open_location(&Location::Server(Box::new(
        ServerAddress::parse(&unreachable).unwrap(),
    )))
    .err()
    .unwrap();
    assert!(matches!(err, ArchiveError::Server { .. }), "{err}");
    assert!(!err.to_string().contains(":pw@"), "{err}");

    // Another program's database is left as it is.
    cluster.run_in(&name, "CREATE TABLE accounts (id integer)");
    let location = Location::Server(Box::new(ServerAddress::parse(&cluster.url(&name)).unwrap()));
    let err = Archive::open_location(&location).err().unwrap();
    assert!(err.to_string().contains("another program"), "{err}");
    cluster.run_in(
        &name,
        "DO $$ BEGIN IF to_regclass('runs') IS NOT NULL THEN RAISE 'written'; END IF; END $$",
    );

    // A newer schema.
    let newer = cluster.database();
    let location = Location::Server(Box::new(
        ServerAddress::parse(&cluster.url(&newer)).unwrap(),
    ));
    drop(Archive::open_location(&location).unwrap());
    cluster.run_in(&newer, "UPDATE netbisect_archive SET schema_version = 99");
    let err = Archive::open_location(&location).err().unwrap();
    assert!(err.to_string().contains("newer"), "{err}");

    // A reader creates nothing in an empty database.
    let empty = cluster.database();
    let location = Location::Server(Box::new(
        ServerAddress::parse(&cluster.url(&empty)).unwrap(),
    ));
    let err = Archive::open_location_read_only(&location).err().unwrap();
    assert!(err.to_string().contains("no netbisect archive"), "{err}");
    cluster.run_in(
        &empty,
        "DO $$ BEGIN IF to_regclass('runs') IS NOT NULL THEN RAISE 'written'; END IF; END $$",
    );
}
