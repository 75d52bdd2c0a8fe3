//! One archive test suite on both backends: every test runs on a SQLite
//! file and on a PostgreSQL database of a cluster the tests start
//! themselves. Where no PostgreSQL binaries are installed the PostgreSQL
//! half says so and passes (a failure under `NETBISECT_SLOW_TESTS=1`,
//! since CI installs them); where they are, a cluster that does not
//! start is a failure.
//!
//! Here the reads and writes; `check` (damage and `archive check`),
//! `lab` (the queue, regressions and outbox of a lab that runs itself),
//! `opening` (schema versions and what is refused) and `prune` (removing
//! runs, and keeping those cited) apart.

mod acceptance;
mod check;
mod lab;
mod opening;
mod prune;
mod rows;

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
    if let Some(cluster) = Cluster::shared_or_skip() {
        places.push(Place::Server(cluster, cluster.database()));
    }
    places
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
        // A history of one label, which PostgreSQL joins by the label.
        let patched = RunQuery {
            label: Some("patched".to_string()),
            config_key_prefix: Some(runs[2].record().config_key.clone()),
            ..RunQuery::default()
        };
        let series = archive
            .series_runs(&patched, Metric::ThroughputBps)
            .unwrap()
            .unwrap();
        let expected: Vec<SeriesRun> = archive
            .records(&patched)
            .unwrap()
            .iter()
            .map(|record| SeriesRun::of(record, Metric::ThroughputBps).unwrap())
            .collect();
        assert_eq!(series.len(), 2);
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
        let times = reader.session_event_times(session.id).unwrap();
        assert_eq!(times.len(), 2, "{times:?}");
        assert!(
            times
                .iter()
                .all(|time| run_record::time::is_rfc3339_utc(time))
                && times[0] <= times[1],
            "{times:?}"
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

/// A walk of records may read the archive it walks, on either backend:
/// neither holds its connection while the caller's code runs (writing is
/// another matter: the walk borrows the archive, which a write needs
/// whole). On PostgreSQL the walk reads a thousand runs at a time; here
/// it crosses those parts inside groups of runs that started at the same
/// time, and a limit ends it inside one.
#[test]
fn a_walk_of_records_may_read_the_archive_it_walks() {
    let runs: Vec<CanonicalRun> = (0..2500)
        .map(|idx| {
            let rate = 1e6 + f64::from(idx);
            canonical(record("cccc3333", "walk", rate, TestKind::TcpStream))
        })
        .collect();
    for place in places() {
        let location = place.location();
        let mut archive = Archive::open_location(&location).unwrap();
        archive.store_all(&runs).unwrap();
        let session = archive.start_session("/src/walk", "{}").unwrap();
        let in_order: Vec<String> = archive
            .runs(&RunQuery::default())
            .unwrap()
            .into_iter()
            .map(|run| run.id)
            .collect();
        for limit in [None, Some(1500)] {
            let query = RunQuery {
                limit,
                ..RunQuery::default()
            };
            let mut visited = Vec::new();
            archive
                .for_each_record(&query, |run, bytes| {
                    let position = visited.len();
                    if position % 100 == 0 || (995..1005).contains(&position) {
                        assert_eq!(archive.count()?, 2500);
                        let (found, found_bytes) = archive.find(&run.id)?;
                        assert_eq!(found, *run);
                        assert_eq!(found_bytes, bytes);
                        assert_eq!(archive.session(session.id)?.repo, "/src/walk");
                    }
                    visited.push(run.id.clone());
                    Ok::<(), ArchiveError>(())
                })
                .unwrap();
            let n_expected = limit.map_or(in_order.len(), |limit| limit as usize);
            assert!(visited == in_order[..n_expected], "{location}: {limit:?}");
        }
        // The caller's error ends the walk where it was returned.
        let mut n_visited = 0;
        let err = archive
            .for_each_record(&RunQuery::default(), |_, _| {
                n_visited += 1;
                if n_visited == 1200 {
                    return Err(ArchiveError::NoSuchRun("stop".to_string()));
                }
                Ok(())
            })
            .unwrap_err();
        assert!(matches!(err, ArchiveError::NoSuchRun(_)), "{err}");
        assert_eq!(n_visited, 1200, "{location}");
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
    let Some(cluster) = Cluster::shared_or_skip() else {
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
