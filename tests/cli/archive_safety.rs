//! The archive for unattended use: read commands work on an archive the
//! user may only read and leave nothing beside it, a mistyped path is an
//! error, tampered runs are refused by show and export, and a full file
//! system is reported as full.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

const BINARY: &str = env!("CARGO_BIN_EXE_netbisect");

/// The unprivileged user the read-only tests run as, and the binary where
/// it may run it.
struct OtherUser {
    uid: u32,
    binary: crate::SharedBinary,
}

/// `nobody`, or `None` (the test has said why it skips) when no place
/// for the binary is open to it.
fn nobody() -> Option<OtherUser> {
    crate::SharedBinary::new().map(|binary| OtherUser {
        uid: 65_534,
        binary,
    })
}

fn run(archive: &Path, args: &[&str], user: Option<&OtherUser>) -> (Option<i32>, String, String) {
    let binary = user.map_or_else(|| PathBuf::from(BINARY), |user| user.binary.path());
    let mut command = std::process::Command::new(binary);
    command
        .args(args)
        .env("NETBISECT_ARCHIVE", archive)
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .current_dir("/");
    if let Some(uid) = user.map(|user| user.uid) {
        // SAFETY: setgid/setuid are async-signal-safe, as pre_exec needs.
        unsafe {
            command.pre_exec(move || {
                if libc::setgid(uid) != 0 || libc::setuid(uid) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let output = command.output().unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn ok(archive: &Path, args: &[&str], user: Option<&OtherUser>) -> String {
    let (code, stdout, stderr) = run(archive, args, user);
    assert_eq!(code, Some(0), "{args:?}: {stderr}");
    stdout
}

/// An archive with two runs of each of two commits, in a directory every
/// user may enter.
fn archive_with_runs() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    set_mode(dir.path(), 0o755);
    let db = dir.path().join("archive.db");
    for commit in ["aaaa1111", "bbbb2222", "aaaa1111", "bbbb2222"] {
        ok(
            &db,
            &["bench", "-t", "TCP_STREAM", "-l", "0.1", "--commit", commit],
            None,
        );
    }
    (dir, db)
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn side_files(db: &Path) -> Vec<PathBuf> {
    ["-wal", "-shm", "-journal"]
        .iter()
        .map(|suffix| PathBuf::from(format!("{}{suffix}", db.display())))
        .filter(|path| path.exists())
        .collect()
}

fn first_id(db: &Path, user: Option<&OtherUser>) -> String {
    let list: serde_json::Value =
        serde_json::from_str(&ok(db, &["archive", "list", "--json"], user)).unwrap();
    list[0]["id"].as_str().unwrap().to_string()
}

/// Every read command, as `user`.
fn read_everything(db: &Path, user: Option<&OtherUser>) {
    let id = first_id(db, user);
    ok(db, &["archive", "show", &id[..12]], user);
    let export = ok(db, &["archive", "export"], user);
    assert_eq!(export.lines().count(), 4);
    ok(db, &["archive", "check"], user);
    ok(db, &["compare", "aaaa1111", "bbbb2222"], user);
    ok(
        db,
        &[
            "history",
            "--metric",
            "throughput_bps",
            "--test",
            "TCP_STREAM",
        ],
        user,
    );
}

#[test]
fn an_archive_another_user_owns_is_read_without_locking_its_owner_out() {
    let Some(nobody) = nobody() else {
        return;
    };
    let (dir, db) = archive_with_runs();
    assert!(side_files(&db).is_empty(), "{:?}", side_files(&db));
    // The owner's file, readable by all; the directory is not writable
    // by the reader.
    set_mode(&db, 0o644);
    read_everything(&db, Some(&nobody));
    assert!(side_files(&db).is_empty(), "{:?}", side_files(&db));
    // Read-only file and directory.
    set_mode(&db, 0o444);
    set_mode(dir.path(), 0o555);
    read_everything(&db, Some(&nobody));
    assert!(side_files(&db).is_empty(), "{:?}", side_files(&db));
    set_mode(dir.path(), 0o755);
    set_mode(&db, 0o644);
    // The owner still writes.
    ok(
        &db,
        &[
            "bench",
            "-t",
            "TCP_STREAM",
            "-l",
            "0.1",
            "--commit",
            "cccc3333",
        ],
        None,
    );
}

#[test]
fn an_archive_on_a_read_only_mount_is_read() {
    let (dir, db) = archive_with_runs();
    let id = first_id(&db, None);
    let script = format!(
        "mount --bind '{dir}' '{dir}' && mount -o remount,bind,ro '{dir}' || exit 99; \
         touch '{dir}/probe' 2>/dev/null && exit 98; \
         '{BINARY}' archive list >/dev/null && '{BINARY}' archive show {id} >/dev/null \
         && '{BINARY}' archive export >/dev/null && '{BINARY}' archive check >/dev/null \
         && '{BINARY}' compare aaaa1111 bbbb2222 >/dev/null",
        dir = dir.path().display(),
        id = &id[..12],
    );
    let output = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .env("NETBISECT_ARCHIVE", &db)
        .output();
    let output = match output {
        Ok(output) if output.status.code() != Some(99) => output,
        other => {
            test_fixtures::skip::skip(format!("cannot make a read-only mount here: {other:?}"));
            return;
        }
    };
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(side_files(&db).is_empty(), "{:?}", side_files(&db));
}

#[test]
fn a_mistyped_archive_path_is_an_error_for_read_commands() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archvie.db");
    for args in [
        &["archive", "list"][..],
        &["archive", "export"],
        &["archive", "check"],
        &["archive", "show", "abcdef"],
        &["compare", "a", "b"],
        &["history", "--metric", "throughput_bps"],
    ] {
        let (code, _, stderr) = run(&db, args, None);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains(&format!("no archive at {}", db.display())),
            "{args:?}: {stderr}"
        );
        assert!(!db.exists(), "{args:?} created the archive");
    }
}

#[test]
fn show_and_export_refuse_a_run_whose_bytes_do_not_match_its_id() {
    let (_dir, db) = archive_with_runs();
    let id = first_id(&db, None);
    let connection = rusqlite::Connection::open(&db).unwrap();
    let record: Vec<u8> = connection
        .query_row("SELECT record FROM runs WHERE id = ?1", [&id], |row| {
            row.get(0)
        })
        .unwrap();
    let tampered =
        String::from_utf8(record)
            .unwrap()
            .replacen("\"testbed\":\"", "\"testbed\":\"x", 1);
    connection
        .execute(
            "UPDATE runs SET record = ?1 WHERE id = ?2",
            rusqlite::params![tampered.as_bytes(), id],
        )
        .unwrap();
    drop(connection);

    let (code, stdout, stderr) = run(&db, &["archive", "show", &id], None);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(
        stderr.contains(&format!("stored run {id} is damaged")),
        "{stderr}"
    );

    let (code, stdout, stderr) = run(&db, &["archive", "export"], None);
    assert_eq!(code, Some(3), "{stderr}");
    assert_eq!(stdout.lines().count(), 3, "{stdout}");
    assert!(!stdout.contains(&id), "{stdout}");
    assert!(stderr.contains("left out"), "{stderr}");
    assert!(stderr.contains("netbisect archive check"), "{stderr}");
}

#[test]
fn a_full_file_system_is_reported_as_full() {
    let dir = tempfile::tempdir().unwrap();
    let record = dir.path().join("run.json");
    let scratch = dir.path().join("scratch.db");
    let json = ok(
        &scratch,
        &[
            "bench",
            "-t",
            "TCP_STREAM",
            "-l",
            "0.1",
            "--json",
            "--no-archive",
        ],
        None,
    );
    std::fs::write(&record, json).unwrap();
    let mount = dir.path().join("small");
    std::fs::create_dir(&mount).unwrap();
    // Already full when the archive is opened; then full in the middle of
    // a write to an archive that exists.
    let script = format!(
        "mount -t tmpfs -o size=256k tmpfs '{mount}' || exit 99; \
         dd if=/dev/zero of='{mount}/fill' bs=4k 2>/dev/null; \
         NETBISECT_ARCHIVE='{mount}/full-at-open.db' '{BINARY}' archive import '{record}'; \
         echo \"exit $?\"; \
         rm '{mount}/fill'; \
         NETBISECT_ARCHIVE='{mount}/a.db' '{BINARY}' archive list >/dev/null 2>&1; \
         '{BINARY}' --archive '{mount}/a.db' archive import '{record}' >/dev/null 2>&1 || exit 97; \
         dd if=/dev/zero of='{mount}/fill' bs=1k 2>/dev/null; \
         i=0; code=0; while [ $i -lt 20 ]; do \
           '{BINARY}' --archive '{mount}/a.db' bench -t TCP_STREAM -l 0.05 --commit c$i \
             >/dev/null; code=$?; [ $code -ne 0 ] && break; i=$((i + 1)); done; \
         echo \"exit $code\"",
        mount = mount.display(),
        record = record.display(),
    );
    let output = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    if output.status.code() == Some(99) {
        test_fixtures::skip::skip("cannot mount a small tmpfs here");
        return;
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stdout}\n{stderr}");
    let exits: Vec<&str> = stdout.lines().filter(|l| l.starts_with("exit ")).collect();
    assert_eq!(exits, ["exit 3", "exit 3"], "{stdout}\n{stderr}");
    let full_reports = stderr.matches("database or disk is full").count();
    assert!(full_reports >= 2, "{stderr}");
}

#[test]
fn another_users_archive_is_read_while_its_owner_writes() {
    let Some(nobody) = nobody() else {
        return;
    };
    let (_dir, db) = archive_with_runs();
    set_mode(&db, 0o644);
    // The owner has it open and has written since: the newest run is in
    // the -wal file, not yet in the database file.
    let mut owner = archive::Archive::open(&db).unwrap();
    let json = ok(
        &db,
        &[
            "bench",
            "-t",
            "TCP_RR",
            "-l",
            "0.1",
            "--json",
            "--no-archive",
        ],
        None,
    );
    let run = archive::CanonicalRun::from_json(json.trim().as_bytes()).unwrap();
    owner.store(&run).unwrap();
    assert!(!side_files(&db).is_empty(), "the owner's -wal is there");
    let export = ok(&db, &["archive", "export"], Some(&nobody));
    assert_eq!(export.lines().count(), 5, "{export}");
    assert!(export.contains(&run.record().id));
    drop(owner);
}

/// Takes an archive back to schema version 4, as a netbisect of that
/// version left it: without the per-run table history reads (nor the
/// indexes, the lab's tables and who stored each run, of later
/// versions).
fn as_version_4(db: &Path) {
    let connection = rusqlite::Connection::open(db).unwrap();
    connection
        .execute_batch(
            "DROP TABLE run_series;
             DROP INDEX runs_history;
             DROP INDEX runs_by_time;
             DROP TABLE lab_notifications;
             DROP TABLE lab_regressions;
             DROP TABLE lab_tracks;
             DROP TABLE lab_workers;
             DROP TABLE lab_jobs;
             ALTER TABLE runs DROP COLUMN stored_by;
             ALTER TABLE runs DROP COLUMN stored_from;
             PRAGMA user_version = 4;",
        )
        .unwrap();
    connection
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(connection);
    for side in side_files(db) {
        std::fs::remove_file(side).unwrap();
    }
}

/// Takes an archive back to schema version 5, as a netbisect of that
/// version left it: `run_series` keyed by the run id alone, no
/// `runs_history` or `runs_by_time` index, none of the lab's tables, and
/// nothing of who stored each run.
fn as_version_5(db: &Path) {
    let connection = rusqlite::Connection::open(db).unwrap();
    connection
        .execute_batch(
            "CREATE TABLE run_series_v5 (
                 run_id TEXT PRIMARY KEY NOT NULL REFERENCES runs (id),
                 spec_key TEXT NOT NULL,
                 series TEXT NOT NULL CHECK (json_valid(series))
             ) STRICT, WITHOUT ROWID;
             INSERT INTO run_series_v5 SELECT run_id, spec_key, series FROM run_series;
             DROP TABLE run_series;
             ALTER TABLE run_series_v5 RENAME TO run_series;
             DROP INDEX runs_history;
             DROP INDEX runs_by_time;
             DROP TABLE lab_notifications;
             DROP TABLE lab_regressions;
             DROP TABLE lab_tracks;
             DROP TABLE lab_workers;
             DROP TABLE lab_jobs;
             ALTER TABLE runs DROP COLUMN stored_by;
             ALTER TABLE runs DROP COLUMN stored_from;
             PRAGMA user_version = 5;",
        )
        .unwrap();
    connection
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    drop(connection);
    for side in side_files(db) {
        std::fs::remove_file(side).unwrap();
    }
}

/// The schema version in the file's header (offset 60, big-endian), read
/// without opening it as a database, which would leave side files.
fn user_version(db: &Path) -> u32 {
    let bytes = std::fs::read(db).unwrap();
    u32::from_be_bytes(bytes[60..64].try_into().unwrap())
}

#[test]
fn history_reads_an_older_archive_it_may_not_upgrade() {
    let Some(nobody) = nobody() else {
        return;
    };
    let (dir, db) = archive_with_runs();
    let args = [
        "history",
        "--json",
        "--metric",
        "throughput_bps",
        "--test",
        "TCP_STREAM",
    ];
    let from_columns = ok(&db, &args, None);
    as_version_4(&db);
    assert_eq!(user_version(&db), 4);
    // Read-only to this reader: history reads the records instead, and
    // says the same.
    set_mode(&db, 0o444);
    set_mode(dir.path(), 0o555);
    assert_eq!(ok(&db, &args, Some(&nobody)), from_columns);
    assert!(side_files(&db).is_empty(), "{:?}", side_files(&db));
    assert_eq!(user_version(&db), 4);
    // Its owner upgrades it on the way, filling run_series from the
    // records.
    set_mode(dir.path(), 0o755);
    set_mode(&db, 0o644);
    assert_eq!(ok(&db, &args, None), from_columns);
    assert_eq!(user_version(&db), archive::FILE_SCHEMA_VERSION);
}

#[test]
fn history_reads_a_version_5_archive_it_may_not_upgrade() {
    let Some(nobody) = nobody() else {
        return;
    };
    let (dir, db) = archive_with_runs();
    let args = [
        "history",
        "--json",
        "--metric",
        "throughput_bps",
        "--test",
        "TCP_STREAM",
    ];
    let current = ok(&db, &args, None);
    as_version_5(&db);
    assert_eq!(user_version(&db), 5);
    // Read-only to this reader: run_series is read by the run id.
    set_mode(&db, 0o444);
    set_mode(dir.path(), 0o555);
    assert_eq!(ok(&db, &args, Some(&nobody)), current);
    let check = ok(&db, &["archive", "check"], Some(&nobody));
    assert!(check.contains(", damaged: 0"), "{check}");
    // Who stored its runs is not known at that version.
    let list: serde_json::Value =
        serde_json::from_str(&ok(&db, &["archive", "list", "--json"], Some(&nobody))).unwrap();
    let runs = list.as_array().unwrap();
    assert!(!runs.is_empty());
    assert!(runs.iter().all(|run| run["stored_by"].is_null()), "{list}");
    assert_eq!(user_version(&db), 5);
    // Its owner upgrades it on the way, keying run_series anew, and says
    // so first; the next command has nothing to upgrade.
    set_mode(dir.path(), 0o755);
    set_mode(&db, 0o644);
    let (code, stdout, stderr) = run(&db, &args, None);
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(stdout, current);
    let notice = format!(
        "netbisect: upgrading the archive at {} (schema 5 to {});",
        db.display(),
        archive::FILE_SCHEMA_VERSION
    );
    assert!(stderr.contains(&notice), "{stderr}");
    assert_eq!(user_version(&db), archive::FILE_SCHEMA_VERSION);
    let (_, _, stderr) = run(&db, &args, None);
    assert!(!stderr.contains("upgrading"), "{stderr}");
    let report = archive::Archive::open(&db).unwrap().check().unwrap();
    assert!(report.is_clean(), "{report:?}");
}

/// An archive of netperf's outputs with CPU figures, imported.
fn archive_of_imports() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let outputs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/peer-outputs");
    for name in [
        "netperf-TCP_STREAM-l5-cC.txt",
        "netperf-TCP_STREAM-l5-cC-run2.txt",
        "netperf-TCP_RR-l5-cC-r64,64.txt",
        "netperf-UDP_STREAM-l5-cC-m1472.txt",
        "netperf-TCP_MAERTS-l5-cC.txt",
    ] {
        let path = outputs.join(name);
        ok(&db, &["archive", "import", path.to_str().unwrap()], None);
    }
    (dir, db)
}

fn n_runs(db: &Path) -> i64 {
    let connection = rusqlite::Connection::open(db).unwrap();
    connection
        .query_row("SELECT count(*) FROM runs", [], |row| row.get(0))
        .unwrap()
}

#[test]
fn check_names_every_edited_figure_column() {
    let (_dir, db) = archive_of_imports();
    let connection = rusqlite::Connection::open(&db).unwrap();
    let ids: Vec<String> = connection
        .prepare("SELECT id FROM runs WHERE remote_cpu_pct IS NOT NULL ORDER BY id LIMIT 3")
        .unwrap()
        .query_map([], |row| row.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(ids.len(), 3);
    let edits = [
        ("throughput_bps", "throughput_bps = throughput_bps * 2"),
        ("remote_cpu_pct", "remote_cpu_pct = remote_cpu_pct + 1"),
        ("n_iterations", "n_iterations = n_iterations + 4"),
    ];
    for ((_, edit), id) in edits.iter().zip(&ids) {
        let changed = connection
            .execute(&format!("UPDATE runs SET {edit} WHERE id = ?1"), [id])
            .unwrap();
        assert_eq!(changed, 1);
    }
    drop(connection);

    let (code, stdout, stderr) = run(&db, &["archive", "check"], None);
    assert_eq!(code, Some(3), "{stdout}{stderr}");
    assert!(stdout.contains("damaged: 3"), "{stdout}");
    for ((column, _), id) in edits.iter().zip(&ids) {
        let line = stdout
            .lines()
            .find(|line| line.contains(id.as_str()))
            .unwrap_or_else(|| panic!("{id} not reported: {stdout}"));
        assert!(
            line.ends_with(&format!("columns disagree with the record: {column}")),
            "{line}"
        );
    }
}

/// Overwrites page `page_idx` (counted from 0) of `db` with 0xff bytes.
fn overwrite_page(db: &Path, page_idx: u64) {
    use std::io::{Seek, SeekFrom, Write};
    let mut file = std::fs::OpenOptions::new().write(true).open(db).unwrap();
    file.seek(SeekFrom::Start(page_idx * 4096)).unwrap();
    file.write_all(&[0xff; 512]).unwrap();
}

#[test]
fn check_reports_on_a_malformed_file() {
    let (_dir, db) = archive_of_imports();
    let root_page: u32 = rusqlite::Connection::open(&db)
        .unwrap()
        .query_row(
            "SELECT rootpage FROM sqlite_schema WHERE name = 'runs'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    overwrite_page(&db, u64::from(root_page) - 1);

    let (code, stdout, stderr) = run(&db, &["archive", "check"], None);
    assert_eq!(code, Some(3), "{stdout}{stderr}");
    assert!(
        stdout.contains(&format!("schema version: {}", archive::FILE_SCHEMA_VERSION)),
        "{stdout}"
    );
    let integrity = stdout
        .lines()
        .find(|line| line.starts_with("integrity: "))
        .unwrap_or_else(|| panic!("no integrity line: {stdout}"));
    assert_ne!(integrity, "integrity: ok");
    assert!(stdout.contains("could not read the runs table"), "{stdout}");
    assert!(stderr.contains("the archive has problems"), "{stderr}");

    // The same file refuses an import and keeps what it had.
    let before = std::fs::read(&db).unwrap();
    let more =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/peer-outputs/netperf-UDP_RR-l5.txt");
    let (code, _, stderr) = run(&db, &["archive", "import", more.to_str().unwrap()], None);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("is damaged"), "{stderr}");
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

/// The refusal of writes to a damaged file does not depend on its size:
/// a file over 256 MiB (once the size up to which the check ran) with a
/// broken page the write does not touch is refused too.
#[test]
fn a_damaged_archive_of_any_size_refuses_writes() {
    let (_dir, db) = archive_of_imports();
    let connection = rusqlite::Connection::open(&db).unwrap();
    connection
        .execute_batch(
            "CREATE TABLE padding (content BLOB) STRICT;
             INSERT INTO padding VALUES (zeroblob(280000000));
             PRAGMA wal_checkpoint(TRUNCATE);",
        )
        .unwrap();
    drop(connection);
    let size = std::fs::metadata(&db).unwrap().len();
    assert!(size > 256 << 20, "{size}");
    // An overflow page of the padding, halfway through the file: its
    // first four bytes name the next page of the chain, the rest is the
    // blob's zeros. Pointing it past the end of the file breaks the
    // chain where no insert into `runs` looks.
    let bytes = std::fs::read(&db).unwrap();
    let page_idx = (bytes.len() / 4096 / 2..bytes.len() / 4096)
        .find(|idx| {
            bytes[idx * 4096 + 4..(idx + 1) * 4096]
                .iter()
                .all(|b| *b == 0)
        })
        .unwrap() as u64;
    drop(bytes);
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut file = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
        file.seek(SeekFrom::Start(page_idx * 4096)).unwrap();
        file.write_all(&0x7fff_fff0_u32.to_be_bytes()).unwrap();
    }
    let n_before = n_runs(&db);

    let more =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/peer-outputs/netperf-UDP_RR-l5.txt");
    let (code, _, stderr) = run(&db, &["archive", "import", more.to_str().unwrap()], None);
    assert_eq!(code, Some(3), "{stderr}");
    assert!(stderr.contains("is damaged"), "{stderr}");
    assert!(stderr.contains("netbisect archive check"), "{stderr}");
    assert_eq!(n_runs(&db), n_before);
}
