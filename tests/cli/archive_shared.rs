//! An archive shared in a directory every user may write (mode 1777, as
//! /tmp): readers of other users never create or take over the files
//! beside it, whatever moment of the owner's work they open it at, and
//! every import of the owner succeeds however many of them read at once.

use run_record::record::RunRecord;
use run_record::spec::TestKind;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use test_fixtures::record::{RecordBuilder, json_lines};

/// The user the readers run as.
const READER_UID: u32 = 65_534;
const N_IMPORTS: u32 = 40;
const N_READERS: usize = 4;

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn record(seed: u32) -> RunRecord {
    RecordBuilder::new(TestKind::TcpStream)
        .commit(&format!("{seed:08x}"))
        .throughput(10.0, 1e9 + f64::from(seed))
        .build()
}

/// `netbisect ARGS` as the reader, with `archive` as its archive: its
/// exit code and standard error.
fn as_reader(binary: &Path, archive: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut command = std::process::Command::new(binary);
    command
        .args(args)
        .env("NETBISECT_ARCHIVE", archive)
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .current_dir("/");
    // SAFETY: setgid/setuid are async-signal-safe, as pre_exec needs.
    unsafe {
        command.pre_exec(|| {
            if libc::setgid(READER_UID) != 0 || libc::setuid(READER_UID) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let output = command.output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `archive list` as the reader.
fn list_as_reader(binary: &Path, db: &Path) -> (Option<i32>, String) {
    as_reader(binary, db, &["archive", "list"])
}

fn side_files(db: &Path) -> Vec<PathBuf> {
    ["-wal", "-shm", "-journal"]
        .iter()
        .map(|suffix| PathBuf::from(format!("{}{suffix}", db.display())))
        .filter(|path| path.exists())
        .collect()
}

/// The foreign files beside `db`: any not of its owner and mode.
fn foreign_side_files(db: &Path) -> Vec<String> {
    let db_meta = std::fs::metadata(db).unwrap();
    side_files(db)
        .iter()
        .filter_map(|path| {
            let meta = std::fs::metadata(path).ok()?;
            (meta.uid() != db_meta.uid() || meta.mode() & 0o777 != db_meta.mode() & 0o777).then(
                || {
                    format!(
                        "{} (uid {}, mode {:o})",
                        path.display(),
                        meta.uid(),
                        meta.mode()
                    )
                },
            )
        })
        .collect()
}

#[test]
fn a_reader_that_opens_as_the_owner_closes_creates_nothing() {
    let Some(binary) = crate::SharedBinary::new() else {
        return;
    };
    let shared = tempfile::tempdir().unwrap();
    set_mode(shared.path(), 0o1777);
    let db = shared.path().join("archive.db");
    let inputs = tempfile::tempdir().unwrap();
    let file = inputs.path().join("runs.jsonl");
    std::fs::write(&file, json_lines(&[record(1), record(2)])).unwrap();
    let import = |file: &Path| {
        crate::netbisect_with(&db)
            .args(["archive", "import"])
            .arg(file)
            .output()
            .unwrap()
    };
    let first = import(&file);
    assert!(first.status.success(), "{first:?}");
    set_mode(&db, 0o644);
    // The moment a closing writer passes through: its -shm removed, its
    // -wal (all of it in the database file by now) not yet. The reader
    // lists the archive, and merges it into one of its own.
    let wal = PathBuf::from(format!("{}-wal", db.display()));
    let shm = PathBuf::from(format!("{}-shm", db.display()));
    let readers_own = tempfile::tempdir().unwrap();
    set_mode(readers_own.path(), 0o1777);
    let readers_db = readers_own.path().join("mine.db");
    let db_text = db.to_str().unwrap();
    for args in [&["archive", "list"][..], &["archive", "merge", db_text]] {
        let _ = std::fs::remove_file(&shm);
        std::fs::write(&wal, b"").unwrap();
        set_mode(&wal, 0o644);
        let archive = if args[1] == "list" { &db } else { &readers_db };
        let (code, stderr) = as_reader(&binary.path(), archive, args);
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        let foreign = foreign_side_files(&db);
        assert!(foreign.is_empty(), "{args:?}: {foreign:?}");
    }
    std::fs::write(&file, json_lines(&[record(3)])).unwrap();
    let next = import(&file);
    assert!(
        next.status.success(),
        "{}",
        String::from_utf8_lossy(&next.stderr)
    );
}

#[test]
fn readers_of_other_users_never_lock_the_owner_out_of_a_shared_archive() {
    let Some(binary) = crate::SharedBinary::new() else {
        return;
    };
    let shared = tempfile::tempdir().unwrap();
    set_mode(shared.path(), 0o1777);
    let db = shared.path().join("archive.db");
    let inputs = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..N_IMPORTS)
        .map(|import_idx| {
            let path = inputs.path().join(format!("run-{import_idx}.json"));
            std::fs::write(&path, json_lines(&[record(import_idx)])).unwrap();
            path
        })
        .collect();
    let import = |file: &Path| {
        crate::netbisect_with(&db)
            .args(["archive", "import"])
            .arg(file)
            .timeout(Duration::from_secs(120))
            .output()
            .unwrap()
    };
    // The owner makes the archive, readable by all.
    let first = import(&files[0]);
    assert!(first.status.success(), "{first:?}");
    set_mode(&db, 0o644);

    // Readers of another user list it over and over (at most 120 s, at
    // most 5,000 lists each) while the owner imports the rest.
    let stop = Arc::new(AtomicBool::new(false));
    let n_lists = Arc::new(AtomicU64::new(0));
    let readers: Vec<_> = (0..N_READERS)
        .map(|_| {
            let (stop, n_lists) = (Arc::clone(&stop), Arc::clone(&n_lists));
            let (binary, db) = (binary.path(), db.clone());
            std::thread::spawn(move || {
                let give_up = Instant::now() + Duration::from_secs(120);
                let mut failures = Vec::new();
                for _ in 0..5_000 {
                    if stop.load(Ordering::Relaxed) || Instant::now() >= give_up {
                        break;
                    }
                    let (code, stderr) = list_as_reader(&binary, &db);
                    n_lists.fetch_add(1, Ordering::Relaxed);
                    if code != Some(0) {
                        failures.push(stderr);
                    }
                }
                failures
            })
        })
        .collect();
    let mut import_failures = Vec::new();
    for (import_idx, file) in files.iter().enumerate().skip(1) {
        let output = import(file);
        if !output.status.success() {
            import_failures.push(format!(
                "import {import_idx}: {}",
                String::from_utf8_lossy(&output.stderr)
            ));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let reader_failures: Vec<String> = readers
        .into_iter()
        .flat_map(|reader| reader.join().unwrap())
        .collect();

    let foreign = foreign_side_files(&db);
    assert!(
        import_failures.is_empty(),
        "{import_failures:#?}\n{foreign:?}"
    );
    assert!(foreign.is_empty(), "{foreign:?}");
    assert!(reader_failures.is_empty(), "{reader_failures:#?}");
    assert!(n_lists.load(Ordering::Relaxed) > N_IMPORTS as u64);
    let list = crate::netbisect_with(&db)
        .args(["archive", "list", "--json"])
        .output()
        .unwrap();
    let runs: serde_json::Value = serde_json::from_slice(&list.stdout).unwrap();
    assert_eq!(runs.as_array().unwrap().len(), N_IMPORTS as usize);
}
