//! `archive check` and the reads on tampered archives: damage is
//! refused where it is read and listed by `check`, on both backends, and
//! what `check` reads on PostgreSQL in place of an integrity check.

use super::{Place, canonical, places, record};
use archive::{Archive, ArchiveError, CanonicalRun, RunQuery};
use run_record::record::Metric;
use run_record::spec::TestKind;
use test_fixtures::postgres::Cluster;

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
        let by_label = RunQuery {
            label: Some("base".to_string()),
            config_key_prefix: Some(run.record().config_key.clone()),
            ..RunQuery::default()
        };
        for query in [RunQuery::default(), by_label] {
            let err = archive
                .series_runs(&query, Metric::ThroughputBps)
                .unwrap_err();
            assert!(err.to_string().contains("missing from run_series"), "{err}");
        }
    }
}

#[test]
fn check_on_postgresql_says_what_it_checked_and_finds_a_broken_catalog() {
    let Some(cluster) = Cluster::shared_or_skip() else {
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
        checks.contains("catalog: 10 tables, 24 indexes valid, "),
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

/// A `run_series` row under another label than its run's (or none) is
/// damage `archive check` reports, and a history of the run's label
/// fails naming it rather than leaving the run out.
#[test]
fn a_run_series_label_that_disagrees_with_its_run_is_found() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let place = Place::Server(cluster, cluster.database());
    let mut archive = Archive::open_location(&place.location()).unwrap();
    let runs: Vec<CanonicalRun> = (0..2)
        .map(|idx| {
            canonical(record(
                "aaaa1111",
                "base",
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
    assert_eq!(
        archive
            .series_runs(&query, Metric::ThroughputBps)
            .unwrap()
            .unwrap()
            .len(),
        2
    );
    for label in ["'patched'", "NULL"] {
        place.tamper(&format!(
            "UPDATE run_series SET label = {label} WHERE run_id = '{}'",
            runs[1].record().id
        ));
        let report = archive.check().unwrap();
        assert_eq!(report.damaged_runs.len(), 1, "{label}: {report:?}");
        assert_eq!(report.damaged_runs[0].id, runs[1].record().id);
        assert_eq!(
            report.damaged_runs[0].problem,
            "its run_series row disagrees with its run: label"
        );
        let err = archive
            .series_runs(&query, Metric::ThroughputBps)
            .unwrap_err();
        assert!(
            matches!(&err, ArchiveError::DamagedRun { id, .. } if *id == runs[1].record().id),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains("its run_series row disagrees with its run: label"),
            "{err}"
        );
    }
}
