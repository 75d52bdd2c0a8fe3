//! An archive that fails safe: a damaged file refuses writes, a missing
//! file is not created by a read, stored bytes are checked against their
//! id, and several processes creating one file at once all succeed.

use archive::{Archive, ArchiveError, CanonicalRun, RunQuery};
use run_record::record::Iteration;
use run_record::spec::TestKind;
use test_fixtures::record::RecordBuilder;

fn run(seed: u32) -> CanonicalRun {
    let record = RecordBuilder::new(TestKind::TcpStream)
        .tool_version("0.1.0")
        .finished_at("2026-11-30T07:00:01.000000Z")
        .commit(&format!("{seed:012x}"))
        .label("fail-safe")
        .testbed("lab1")
        .iteration(Iteration {
            elapsed_s: 1.0,
            throughput_bps: 1e9 + f64::from(seed),
            bytes_sent: Some(1000),
            bytes_received: Some(1000),
            messages_sent: Some(10),
            messages_received: Some(10),
            ..Iteration::default()
        })
        .build();
    CanonicalRun::from_record(record).unwrap()
}

/// Flips `n_bytes` bytes past the first page, spread over the file as
/// a disk or a careless edit would.
fn flip_bytes(path: &std::path::Path, n_bytes: usize) {
    let mut bytes = std::fs::read(path).unwrap();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    for _ in 0..n_bytes {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        let offset = 4096 + (state >> 33) as usize % (bytes.len() - 4096);
        bytes[offset] ^= 0xa5;
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_damaged_archive_refuses_writes_and_names_archive_check() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.db");
    {
        let mut archive = Archive::open(&path).unwrap();
        let runs: Vec<CanonicalRun> = (0..300).map(run).collect();
        archive.store_all(&runs).unwrap();
    }
    flip_bytes(&path, 200);
    let before = std::fs::read(&path).unwrap();
    // Opening may already see the damage; if not, the first write must.
    let refused = match Archive::open(&path) {
        Err(err) => err,
        Ok(mut archive) => archive.store(&run(10_000)).unwrap_err(),
    };
    assert!(
        matches!(
            refused,
            ArchiveError::Damaged { .. } | ArchiveError::NotAnArchive { .. }
        ),
        "{refused}"
    );
    if let ArchiveError::Damaged { .. } = refused {
        assert!(
            refused.to_string().contains("netbisect archive check"),
            "{refused}"
        );
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "the file was written"
    );
}

#[test]
fn a_read_never_creates_an_archive() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mistyped.db");
    let err = Archive::open_read_only(&path).err().unwrap();
    assert!(matches!(err, ArchiveError::NoArchive { .. }), "{err}");
    assert_eq!(err.to_string(), format!("no archive at {}", path.display()));
    assert!(!path.exists());
}

#[test]
fn stored_bytes_are_checked_against_their_id() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tampered.db");
    let mut archive = Archive::open(&path).unwrap();
    archive.store_all(&[run(1), run(2)]).unwrap();
    let original = run(1);
    let tampered = String::from_utf8(original.bytes().to_vec())
        .unwrap()
        .replace("1000000001", "2000000001");
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE runs SET record = ?1 WHERE id = ?2",
            rusqlite::params![tampered.as_bytes(), original.record().id],
        )
        .unwrap();
    let mut seen = Vec::new();
    archive
        .for_each_record(&RunQuery::default(), |stored, bytes| {
            seen.push((
                stored.id.clone(),
                Archive::verify_stored(stored, bytes).is_ok(),
            ));
            Ok::<(), ArchiveError>(())
        })
        .unwrap();
    seen.sort();
    let mut expected = vec![
        (run(1).record().id.clone(), false),
        (run(2).record().id.clone(), true),
    ];
    expected.sort();
    assert_eq!(seen, expected);
}

#[test]
fn many_processes_creating_one_archive_all_succeed() {
    // Each round races four openers on a fresh file; before the retry,
    // `PRAGMA journal_mode = WAL` failed with "database is locked" about
    // once in sixty rounds.
    let dir = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    for round in 0..100 {
        let path = dir.path().join(format!("new-{round}.db"));
        let barrier = std::sync::Barrier::new(4);
        std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let (path, barrier) = (&path, &barrier);
                    scope.spawn(move || {
                        barrier.wait();
                        Archive::open(path).map(|_| ())
                    })
                })
                .collect();
            for handle in handles {
                if let Err(err) = handle.join().unwrap() {
                    panic!("round {round}: {err}");
                }
            }
        });
        if started.elapsed() > std::time::Duration::from_secs(30) {
            break;
        }
    }
}
