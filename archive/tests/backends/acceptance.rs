//! One acceptance on both engines: what a file stores a PostgreSQL
//! database stores (names up to the record check's limit, in the widest
//! index), both refuse the same names by the check, a run stored before
//! the check (or beyond a limit of the database) is left out of a merge
//! by id while the rest is merged, and `archive check` reports it.

use super::{Place, canonical, places, record};
use archive::{Archive, ArchiveError, CanonicalRun, Location, RunQuery};
use run_record::record::{MAX_NAME_BYTES, RecordError, RunRecord, Subject};
use run_record::spec::TestKind;
use test_fixtures::postgres::Cluster;
use test_fixtures::record::RecordBuilder;

/// `length` bytes of letters and digits that do not repeat in any short
/// period, so that no database compresses them below their length.
fn incompressible(seed: u64, length: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..length)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            char::from(ALPHABET[(state % ALPHABET.len() as u64) as usize])
        })
        .collect()
}

/// A run whose label is `label`, otherwise that of [`record`].
fn labelled(label: &str, throughput_bps: f64) -> RunRecord {
    let mut run = record("aaaa1111", "x", throughput_bps, TestKind::TcpStream);
    run.subject.label = Some(label.to_string());
    run.seal().unwrap();
    run
}

#[test]
fn names_at_the_limit_are_stored_by_both_and_beyond_it_refused_by_both() {
    let widest = RecordBuilder::new(TestKind::TcpStream)
        .subject(Subject {
            commit: Some(incompressible(1, MAX_NAME_BYTES)),
            describe: Some(incompressible(2, MAX_NAME_BYTES)),
            kernel_release: None,
            label: Some(incompressible(3, MAX_NAME_BYTES)),
        })
        .testbed(&incompressible(4, MAX_NAME_BYTES))
        .build();
    for place in places() {
        let location = place.location();
        let mut archive = Archive::open_location(&location).unwrap();
        archive.store(&canonical(widest.clone())).unwrap();
        assert_eq!(
            archive.records(&RunQuery::default()).unwrap(),
            std::slice::from_ref(&widest),
            "{location}"
        );
        assert!(archive.check().unwrap().is_clean(), "{location}");
    }

    let too_long = labelled(&"é".repeat(MAX_NAME_BYTES / 2 + 1), 1e9);
    let with_nul = labelled("base\0line", 2e9);
    for (run, expected) in [
        (
            &too_long,
            format!(
                "subject.label is {} bytes long, over the limit of {MAX_NAME_BYTES} bytes",
                MAX_NAME_BYTES + 2
            ),
        ),
        (
            &with_nul,
            "subject.label holds a NUL character (at byte 4), which no archive stores".to_string(),
        ),
    ] {
        // As a record the store is handed, and as bytes it reads.
        let err = CanonicalRun::from_record(run.clone()).unwrap_err();
        assert!(matches!(err, ArchiveError::Record(_)), "{err}");
        assert_eq!(err.to_string(), expected);
        let err = CanonicalRun::from_json(&run.to_canonical_bytes().unwrap()).unwrap_err();
        assert!(
            matches!(
                err,
                RecordError::NameTooLong { .. } | RecordError::NulInName { .. }
            ),
            "{err}"
        );
        assert_eq!(err.to_string(), expected);
    }
}

/// Stores `good` in the file archive at `path` and then, behind
/// netbisect's back, makes its row that of `planted`: a run an archive
/// of an older netbisect could hold.
fn plant(path: &std::path::Path, good: &CanonicalRun, planted: &RunRecord) {
    Archive::open(path).unwrap().store(good).unwrap();
    let connection = rusqlite::Connection::open(path).unwrap();
    connection
        .execute_batch("PRAGMA foreign_keys = OFF")
        .unwrap();
    let (old, new) = (&good.record().id, &planted.id);
    connection
        .execute(
            "UPDATE run_series SET run_id = ?1 WHERE run_id = ?2",
            [new, old],
        )
        .unwrap();
    connection
        .execute(
            "UPDATE runs SET id = ?1, label = ?2, record = ?3 WHERE id = ?4",
            rusqlite::params![
                new,
                planted.subject.label,
                planted.to_canonical_bytes().unwrap(),
                old
            ],
        )
        .unwrap();
}

/// Checks that `found` names exactly the runs of `expected`, each with
/// its words, whatever their order.
fn assert_named<'a>(
    found: impl Iterator<Item = (&'a str, &'a str)>,
    expected: &[(&str, &str)],
    what: &str,
) {
    let mut found: Vec<(&str, &str)> = found.collect();
    found.sort_unstable();
    assert_eq!(found.len(), expected.len(), "{what}: {found:?}");
    for ((id, text), (expected_id, words)) in found.iter().zip(expected) {
        assert_eq!(id, expected_id, "{what}");
        assert!(text.contains(words), "{what}: {text}");
    }
}

#[test]
fn a_merge_leaves_out_by_id_what_the_check_refuses_and_merges_the_rest() {
    let source_dir = tempfile::tempdir().unwrap();
    let source = source_dir.path().join("older.db");
    let kept: Vec<CanonicalRun> = (1..=3)
        .map(|idx| {
            canonical(record(
                "bbbb2222",
                "kept",
                f64::from(idx) * 1e7,
                TestKind::TcpStream,
            ))
        })
        .collect();
    Archive::open(&source).unwrap().store_all(&kept).unwrap();
    let too_long = labelled(&incompressible(5, 3000), 5e7);
    let with_nul = labelled("base\0line", 6e7);
    plant(&source, &canonical(labelled("stand-in-1", 7e7)), &too_long);
    plant(&source, &canonical(labelled("stand-in-2", 8e7)), &with_nul);

    // The archive that holds them reports them, and reads the rest.
    let holder = Archive::open_location_read_only(&Location::File(source.clone())).unwrap();
    let report = holder.check().unwrap();
    let mut planted = [
        (too_long.id.as_str(), "subject.label is 3000 bytes long"),
        (with_nul.id.as_str(), "subject.label holds a NUL character"),
    ];
    planted.sort_unstable();
    let damaged = report
        .damaged_runs
        .iter()
        .map(|run| (run.id.as_str(), run.problem.as_str()));
    assert_named(damaged, &planted, "archive check");
    drop(holder);

    for place in places() {
        let target = place.location();
        let mut into = Archive::open_location(&target).unwrap();
        let counts = into.merge(&Location::File(source.clone())).unwrap();
        assert_eq!(
            (counts.examined, counts.added, counts.already_present),
            (5, 3, 0),
            "{target}"
        );
        let refused = counts
            .refused
            .iter()
            .map(|run| (run.id.as_str(), run.reason.as_str()));
        assert_named(refused, &planted, &target.to_string());
        assert_eq!(into.count().unwrap(), 3);
        assert!(into.check().unwrap().is_clean(), "{target}");
        // Again: the same runs left out, nothing added.
        let again = into.merge(&Location::File(source.clone())).unwrap();
        assert_eq!((again.added, again.already_present), (0, 3));
        assert_eq!(again.refused.len(), 2);
        drop(place);
    }
}

#[test]
fn a_merge_into_postgresql_leaves_out_by_id_what_the_server_refuses() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let place = Place::Server(cluster, cluster.database());
    let target = place.location();
    drop(Archive::open_location(&target).unwrap());
    // A limit of the database that the record check does not hold runs
    // to, as a lab's own constraint would be.
    place.tamper("ALTER TABLE runs ALTER COLUMN testbed TYPE varchar(8)");
    let source_dir = tempfile::tempdir().unwrap();
    let source = source_dir.path().join("lab.db");
    let mut runs: Vec<RunRecord> = (1..=3)
        .map(|idx| record("cccc3333", "m", f64::from(idx) * 1e6, TestKind::TcpStream))
        .collect();
    runs[1].testbed = "a-testbed-of-many-letters".to_string();
    runs[1].seal().unwrap();
    let runs: Vec<CanonicalRun> = runs.into_iter().map(canonical).collect();
    Archive::open(&source).unwrap().store_all(&runs).unwrap();

    let mut into = Archive::open_location(&target).unwrap();
    let counts = into.merge(&Location::File(source)).unwrap();
    assert_eq!((counts.examined, counts.added), (3, 2));
    assert_eq!(counts.refused.len(), 1, "{:?}", counts.refused);
    assert_eq!(counts.refused[0].id, runs[1].record().id);
    assert!(
        counts.refused[0].reason.contains("value too long"),
        "{}",
        counts.refused[0].reason
    );
    assert_eq!(into.count().unwrap(), 2);
}
