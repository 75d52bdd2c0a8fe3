//! Opening a PostgreSQL archive: older schemas brought up to date, and
//! what is refused (a newer schema, a server that cannot be used, another
//! program's database).

use super::{Place, canonical, record};
use archive::location::ServerAddress;
use archive::store::{SeriesRun, Upgrade};
use archive::{Archive, ArchiveError, CanonicalRun, Location, RunQuery};
use run_record::record::Metric;
use run_record::spec::TestKind;
use test_fixtures::postgres::Cluster;
use test_fixtures::record::RecordBuilder;

/// SQL that takes a PostgreSQL archive made at the current version back
/// to how version `version` (1 to 5) made it: without
/// `run_series_by_run` (before 6), without who stored each run (before
/// 5), without the lab's tables (before 4), `run_series` without the
/// label, its index and its
/// trigger (before 3), `runs_history` without the columns it covers
/// (before 2).
fn downgrade(version: u32) -> String {
    let mut sql = "DROP INDEX run_series_by_run; ".to_string();
    if version < 5 {
        sql.push_str(
            "DROP TRIGGER runs_stored_by ON runs; DROP FUNCTION runs_stored_by(); \
             ALTER TABLE runs DROP COLUMN stored_by; \
             ALTER TABLE runs DROP COLUMN stored_from; ",
        );
    }
    if version < 4 {
        sql.push_str(
            "DROP TABLE lab_notifications; DROP TABLE lab_regressions; \
             DROP TABLE lab_tracks; DROP TABLE lab_workers; DROP TABLE lab_jobs; ",
        );
    }
    if version < 3 {
        sql.push_str(
            "DROP TRIGGER run_series_label ON run_series; \
             DROP FUNCTION run_series_label(); \
             ALTER TABLE run_series DROP COLUMN label; ",
        );
    }
    if version < 2 {
        sql.push_str(
            "DROP INDEX runs_history; \
             CREATE INDEX runs_history ON runs (config_key, label, started_at, id); ",
        );
    }
    sql.push_str(&format!(
        "UPDATE netbisect_archive SET schema_version = {version}"
    ));
    sql
}

/// Raises an error in the database unless `condition` (SQL) holds.
fn assert_sql(cluster: &Cluster, name: &str, condition: &str, what: &str) {
    cluster.run_in(
        name,
        &format!("DO $$ BEGIN IF NOT ({condition}) THEN RAISE '{what}'; END IF; END $$"),
    );
}

/// A PostgreSQL archive at schema version 1 to 5 is brought to version 6
/// when a writer opens it: `runs_history` covers what a history reads
/// (since 2), `run_series` has each run's label, copied from `runs`, and
/// `run_series_history` (since 3), the lab's tables (since 4), who
/// stored each run (since 5: unknown for the runs stored before),
/// `run_series_by_run` (since 6); its runs are kept and read as before,
/// and new runs are stored with their label and with who stored them. A
/// reader leaves it at its version and reads
/// it too (an empty lab where it has none), and `archive check` finds
/// it clean at any version. A version beyond this build's is still
/// refused, naming both.
#[test]
fn a_postgresql_archive_at_version_1_to_4_is_upgraded_and_a_newer_one_refused() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let mut runs: Vec<CanonicalRun> = (0..4)
        .map(|idx| {
            canonical(record(
                "aaaa1111",
                if idx % 2 == 0 { "base" } else { "new" },
                1e9 + f64::from(idx) * 1e6,
                TestKind::TcpStream,
            ))
        })
        .collect();
    // A run without a label keeps none in run_series.
    runs.push(canonical(
        RecordBuilder::new(TestKind::TcpStream)
            .started_at("2026-11-30T06:00:00.000000Z")
            .finished_at("2026-11-30T06:00:10.000000Z")
            .commit("aaaa1111")
            .samples(&[1e9, 1.1e9])
            .build(),
    ));
    let query = RunQuery {
        label: Some("base".to_string()),
        config_key_prefix: Some(runs[0].record().config_key.clone()),
        ..RunQuery::default()
    };
    let covering = "(SELECT indexdef FROM pg_indexes WHERE indexname = 'runs_history') \
         LIKE '%(config_key, label, started_at, id) INCLUDE (commit_id, test)'";
    let labelled = "(SELECT indexdef FROM pg_indexes WHERE indexname = 'run_series_history') \
         LIKE '%(config_key, label, started_at, run_id)' \
         AND NOT EXISTS (SELECT 1 FROM runs JOIN run_series ON run_series.run_id = runs.id \
         WHERE run_series.label IS DISTINCT FROM runs.label) \
         AND (SELECT count(*) FROM run_series WHERE label IS NULL) = 1";
    for version in [1, 2, 3, 4, 5] {
        let name = cluster.database();
        let location = Place::Server(cluster, name.clone()).location();
        let mut archive = Archive::open_location(&location).unwrap();
        archive.store_all(&runs[..3]).unwrap();
        archive.store_all(&runs[4..]).unwrap();
        let history = archive
            .series_runs(&query, Metric::ThroughputBps)
            .unwrap()
            .unwrap();
        assert_eq!(history.len(), 2);
        drop(archive);
        cluster.run_in(&name, &downgrade(version));

        let reader = Archive::open_location_read_only(&location).unwrap();
        assert_eq!(reader.schema_version().unwrap(), version);
        assert_eq!(
            reader
                .series_runs(&query, Metric::ThroughputBps)
                .unwrap()
                .unwrap(),
            history
        );
        let report = reader.check().unwrap();
        assert!(report.is_clean(), "version {version}: {report:?}");
        drop(reader);
        if version < 4 {
            cluster.run_in(
                &name,
                "DO $$ BEGIN IF to_regclass('lab_jobs') IS NOT NULL THEN RAISE 'lab'; END IF; END $$",
            );
        }

        let mut upgrades = Vec::new();
        let mut archive =
            Archive::open_location_noting(&location, &mut |upgrade| upgrades.push(upgrade))
                .unwrap();
        assert_eq!(
            upgrades,
            [Upgrade {
                from: version,
                to: 6
            }]
        );
        assert_eq!(archive.schema_version().unwrap(), 6);
        assert!(archive.jobs(&Default::default()).unwrap().is_empty());
        assert_sql(cluster, &name, covering, "runs_history covers nothing");
        assert_sql(cluster, &name, labelled, "run_series has no labels");
        let by_run = "to_regclass('run_series_by_run') IS NOT NULL";
        assert_sql(cluster, &name, by_run, "run_series_by_run is missing");
        assert_eq!(
            archive
                .series_runs(&query, Metric::ThroughputBps)
                .unwrap()
                .unwrap(),
            history
        );
        // A run stored after the upgrade is read by its label too, and
        // so is one that a writer of version 2, which had the archive
        // open across the upgrade, stores without a label in run_series.
        archive.store(&runs[3]).unwrap();
        let id = &runs[3].record().id;
        cluster.run_in(
            &name,
            &format!(
                "CREATE TEMP TABLE old_writer AS SELECT * FROM run_series WHERE run_id = '{id}'; \
                 DELETE FROM run_series WHERE run_id = '{id}'; \
                 INSERT INTO run_series (config_key, started_at, run_id, spec_key, series) \
                     SELECT config_key, started_at, run_id, spec_key, series FROM old_writer"
            ),
        );
        let new = RunQuery {
            label: Some("new".to_string()),
            ..query.clone()
        };
        let expected: Vec<SeriesRun> = [&runs[1], &runs[3]]
            .iter()
            .map(|run| SeriesRun::of(run.record(), Metric::ThroughputBps).unwrap())
            .collect();
        assert_eq!(
            archive
                .series_runs(&new, Metric::ThroughputBps)
                .unwrap()
                .unwrap(),
            expected
        );
        assert_eq!(archive.count().unwrap(), 5);
        let report = archive.check().unwrap();
        assert!(report.is_clean(), "from version {version}: {report:?}");
        // Who stored a run: unknown before version 5, the server's word
        // from then on.
        for (idx, run) in runs.iter().enumerate() {
            let (stored, _) = archive.find(&run.record().id).unwrap();
            let known = idx == 3 || version >= 5;
            let expected = known.then(|| test_fixtures::postgres::USER.to_string());
            assert_eq!(stored.stored_by, expected, "run {idx}");
            let from = known.then(|| "127.0.0.1".to_string());
            assert_eq!(stored.stored_from, from, "run {idx}");
        }
        drop(archive);

        cluster.run_in(&name, "UPDATE netbisect_archive SET schema_version = 7");
        for err in [
            Archive::open_location(&location).err().unwrap(),
            Archive::open_location_read_only(&location).err().unwrap(),
        ] {
            assert!(
                err.to_string()
                    .contains("archive schema version 7 is newer than version 6"),
                "{err}"
            );
        }
    }
}

#[test]
fn a_server_that_cannot_be_used_is_refused_naming_its_address_not_its_password() {
    let Some(cluster) = Cluster::shared_or_skip() else {
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

#[test]
fn a_refused_connection_keeps_the_clients_error_as_its_source() {
    // Nothing listens on port 1 of loopback.
    let address = ServerAddress::parse("postgres://lab:pw@127.0.0.1:1/x").unwrap();
    let err = Archive::open_location(&Location::Server(Box::new(address)))
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "cannot use the archive at postgres://lab@127.0.0.1:1/x: connection refused"
    );
    let source = std::error::Error::source(&err).unwrap();
    assert!(source.is::<postgres::Error>(), "{source:?}");
    // Beneath the client's error, the system's.
    let beneath = source.source().unwrap();
    let io_error = beneath.downcast_ref::<std::io::Error>().unwrap();
    assert_eq!(io_error.kind(), std::io::ErrorKind::ConnectionRefused);
}
