//! `netbisect archive` end to end, on SQLite files in temp dirs.

use assert_cmd::Command;
use run_record::record::RunRecord;
use run_record::spec::TestKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};
use test_fixtures::record::{RecordBuilder, json_lines};

fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data")
}

use crate::netbisect_with as netbisect;

/// Copies the peer outputs into `dir` with a fixed modification time, so
/// imported runs have fixed times and ids.
fn peer_outputs(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for sub in ["peer-outputs", "peer-outputs/variants"] {
        let mut names: Vec<PathBuf> = std::fs::read_dir(data_dir().join(sub))
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .filter(|path| {
                path.extension()
                    .is_some_and(|ext| ext == "txt" || ext == "json")
            })
            .collect();
        names.sort();
        for source in names {
            let target = dir.join(source.file_name().unwrap());
            std::fs::copy(&source, &target).unwrap();
            let file = std::fs::File::options().write(true).open(&target).unwrap();
            file.set_modified(UNIX_EPOCH + Duration::from_secs(1_796_020_000))
                .unwrap();
            files.push(target);
        }
    }
    files
}

/// `text` with every `YYYY-MM-DD HH:MM` replaced by a mask of its width.
fn mask_times(text: &str) -> String {
    let shape = "dddd-dd-dd dd:dd";
    let mut masked = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        let fits = rest.len() >= shape.len()
            && rest.is_char_boundary(shape.len())
            && rest[..shape.len()]
                .chars()
                .zip(shape.chars())
                .all(|(c, s)| if s == 'd' { c.is_ascii_digit() } else { c == s });
        if fits {
            masked.push_str("YYYY-MM-DD hh:mm");
            rest = &rest[shape.len()..];
        } else {
            let next = rest.chars().next().unwrap_or(' ');
            masked.push(next);
            rest = &rest[next.len_utf8()..];
        }
    }
    masked
}

fn stdout_of(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn import_list_show_export_and_reimport() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let files = peer_outputs(dir.path());
    let mut import = netbisect(&db);
    import
        .args([
            "archive",
            "import",
            "--commit",
            "0123abcdef99",
            "--label",
            "base",
        ])
        .args(["--testbed", "lab1"])
        .args(&files);
    let text = stdout_of(&mut import);
    assert_eq!(text.lines().count(), files.len());
    assert!(
        text.lines()
            .all(|line| line.ends_with("1 added, 0 already present")),
        "{text}"
    );

    let list = stdout_of(netbisect(&db).args(["archive", "list"]));
    assert!(list.lines().all(|line| line.len() <= 80 && line.is_ascii()));
    // netperf outputs carry no time: they start when they are imported,
    // so the times of the list are masked.
    insta::assert_snapshot!("archive_list", mask_times(&list));

    // Importing the same files again adds nothing.
    let text = stdout_of(&mut import);
    assert!(
        text.lines()
            .all(|line| line.ends_with("0 added, 1 already present")),
        "{text}"
    );

    let listed: serde_json::Value = serde_json::from_str(&stdout_of(
        netbisect(&db).args(["archive", "list", "--json"]),
    ))
    .unwrap();
    let runs = listed.as_array().unwrap();
    assert_eq!(runs.len(), files.len());
    let id = runs[0]["id"].as_str().unwrap().to_string();

    let canonical = stdout_of(netbisect(&db).args(["archive", "show", "--json", &id[..12]]));
    let record = RunRecord::from_slice(canonical.trim_end().as_bytes()).unwrap();
    assert_eq!(record.id, id);
    // Without --json, the run as its netperf table.
    let table = stdout_of(netbisect(&db).args(["archive", "show", &id[..12]]));
    assert!(
        table.starts_with(&format!(
            "{} TEST from {} output",
            record.spec.test, record.source.tool
        )),
        "{table}"
    );
    // Then who stored it: this user, from this host.
    assert!(
        table.ends_with(&format!(
            "run {}\nstored by {}\n",
            &id[..12],
            crate::stored_by_this_user()
        )),
        "{table}"
    );
    crate::check_mailing_list_rules(&table);

    let export = stdout_of(
        netbisect(&db).args(["archive", "export", "--test", "TCP_RR", "--tool", "netperf"]),
    );
    assert_eq!(export.lines().count(), 6);
    for line in export.lines() {
        let record = RunRecord::from_slice(line.as_bytes()).unwrap();
        assert_eq!(record.to_canonical_bytes().unwrap(), line.as_bytes());
        assert_eq!(record.spec.test, TestKind::TcpRr);
        assert_eq!(record.source.tool, "netperf");
    }

    // An export imports into another archive with the same ids, and
    // merging it back and again adds nothing.
    let exported = dir.path().join("export.jsonl");
    std::fs::write(
        &exported,
        stdout_of(netbisect(&db).args(["archive", "export"])),
    )
    .unwrap();
    let other = dir.path().join("other.db");
    let text = stdout_of(netbisect(&other).args(["archive", "import"]).arg(&exported));
    assert!(
        text.contains(&format!(
            "{} runs (run records), {} added",
            files.len(),
            files.len()
        )),
        "{text}"
    );
    for _ in 0..2 {
        let text = stdout_of(netbisect(&db).args(["archive", "merge"]).arg(&other));
        assert!(
            text.ends_with(&format!(
                "{} runs, 0 added, {} already present\n",
                files.len(),
                files.len()
            )),
            "{text}"
        );
    }
    let check = stdout_of(netbisect(&db).args(["archive", "check"]));
    assert!(check.contains("integrity: ok"), "{check}");
    assert!(
        check.contains(&format!("runs: {}, damaged: 0", files.len())),
        "{check}"
    );
}

#[test]
fn malformed_files_import_nothing_and_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let bad = data_dir().join("malformed/netperf-bad-number.txt");
    let good = data_dir().join("peer-outputs/netperf-TCP_RR-l10-plain.txt");
    let output = netbisect(&db)
        .args(["archive", "import"])
        .arg(&bad)
        .arg(&good)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "{}: line 7: throughput: \"oops\" is not a number",
            bad.display()
        )),
        "{stderr}"
    );
    // The good file is still imported; the bad one left nothing.
    let export = stdout_of(netbisect(&db).args(["archive", "export"]));
    assert_eq!(export.lines().count(), 1);

    let output = netbisect(&db)
        .args(["archive", "import"])
        .arg(data_dir().join("malformed/text.txt"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("text.txt: line 1: not netperf or uperf output"),
        "{stderr}"
    );
    assert_eq!(
        stdout_of(netbisect(&db).args(["archive", "export"]))
            .lines()
            .count(),
        1
    );
}

#[test]
fn a_corrupt_or_newer_archive_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("corrupt.db");
    let garbage = b"garbage, not a database at all; ".repeat(64);
    std::fs::write(&db, &garbage).unwrap();
    let output = netbisect(&db).args(["archive", "list"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("is not a usable netbisect archive"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&db).unwrap(), garbage);

    let db = dir.path().join("newer.db");
    drop(archive::Archive::open(&db).unwrap());
    let newer = archive::FILE_SCHEMA_VERSION + 1;
    set_user_version(&db, newer);
    let output = netbisect(&db).args(["archive", "check"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(&format!(
            "has archive schema version {newer}, newer than version {}",
            archive::FILE_SCHEMA_VERSION
        )),
        "{stderr}"
    );
}

/// Sets the schema version of an archive as a newer netbisect would, by
/// patching the header field (offset 60, big-endian) of the SQLite file.
fn set_user_version(db: &Path, version: u32) {
    // Checkpointed and closed by the command above, so the main file holds
    // the header.
    let mut bytes = std::fs::read(db).unwrap();
    bytes[60..64].copy_from_slice(&version.to_be_bytes());
    std::fs::write(db, bytes).unwrap();
}

/// A sealed record of `commit`; `seed` makes it unique.
fn generated_record(commit: u32, seed: u32) -> RunRecord {
    RecordBuilder::new(TestKind::TcpStream)
        .commit(&format!("{commit:08x}"))
        .throughput(10.0, 1e9 + f64::from(seed))
        .build()
}

#[test]
fn a_killed_import_leaves_a_clean_archive_and_whole_files() {
    const N_FILES: u32 = 200;
    const RUNS_PER_FILE: u32 = 10;
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let mut files = Vec::new();
    for file_idx in 0..N_FILES {
        let records: Vec<RunRecord> = (0..RUNS_PER_FILE)
            .map(|run_idx| generated_record(file_idx, file_idx * RUNS_PER_FILE + run_idx))
            .collect();
        let path = dir.path().join(format!("runs-{file_idx:04}.jsonl"));
        std::fs::write(&path, json_lines(&records)).unwrap();
        files.push(path);
    }
    // Create the archive first, so the kill lands in the middle of imports.
    drop(archive::Archive::open(&db).unwrap());
    let binary = assert_cmd::cargo::cargo_bin("netbisect");
    let mut child = std::process::Command::new(binary)
        .env("NETBISECT_ARCHIVE", &db)
        .args(["archive", "import"])
        .args(&files)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until some files are in, then kill without warning.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 1];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    std::thread::sleep(Duration::from_millis(50));
    let still_running = child.try_wait().unwrap().is_none();
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on the PID of our own child, which has not been
    // reaped yet (try_wait saw it running or we only inspect the result).
    let killed = unsafe { libc::kill(pid, libc::SIGKILL) };
    let status = child.wait().unwrap();
    assert!(std::time::Instant::now() < deadline);
    assert!(
        still_running,
        "the import finished before it could be killed"
    );
    assert_eq!(killed, 0);
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );

    let check = stdout_of(netbisect(&db).args(["archive", "check"]));
    assert!(check.contains("integrity: ok"), "{check}");
    assert!(check.contains("damaged: 0"), "{check}");
    let export = stdout_of(netbisect(&db).args(["archive", "export"]));
    let n_runs = export.lines().count() as u32;
    assert!(
        n_runs > 0 && n_runs < N_FILES * RUNS_PER_FILE,
        "{n_runs} runs"
    );
    // Whole files only: every file's runs are all in or all out.
    assert_eq!(n_runs % RUNS_PER_FILE, 0, "{n_runs} runs");
    let mut runs_per_commit = std::collections::BTreeMap::new();
    for line in export.lines() {
        let record = RunRecord::from_slice(line.as_bytes()).unwrap();
        *runs_per_commit.entry(record.subject.commit).or_insert(0) += 1;
    }
    assert!(
        runs_per_commit.values().all(|&n| n == RUNS_PER_FILE),
        "{runs_per_commit:?}"
    );
}

/// Runs whose times have fractions of other lengths (a record from
/// another tool, `...23.5Z`) are listed newest first and followed in time
/// order as the times they are, not as strings (`23.5Z` before `23Z`).
#[test]
fn runs_are_ordered_by_their_times_not_by_strings() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let times = [
        "2026-11-30T07:04:22.9Z",
        "2026-11-30T07:04:23Z",
        "2026-11-30T07:04:23.25Z",
        "2026-11-30T07:04:23.5Z",
        "2026-11-30T07:04:24Z",
    ];
    let records: Vec<RunRecord> = times
        .iter()
        .enumerate()
        .map(|(idx, time)| {
            RecordBuilder::new(TestKind::TcpStream)
                .started_at(time)
                .finished_at("2026-11-30T07:05:00Z")
                .throughput(10.0, 1e9 * (idx + 1) as f64)
                .build()
        })
        .collect();
    let file = dir.path().join("runs.jsonl");
    let mut shuffled = records.clone();
    shuffled.reverse();
    shuffled.swap(0, 2);
    std::fs::write(&file, json_lines(&shuffled)).unwrap();
    stdout_of(netbisect(&db).args(["archive", "import"]).arg(&file));

    let list: serde_json::Value = serde_json::from_str(&stdout_of(
        netbisect(&db).args(["archive", "list", "--json"]),
    ))
    .unwrap();
    let listed: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|run| run["id"].as_str().unwrap())
        .collect();
    let newest_first: Vec<&str> = records.iter().rev().map(|run| run.id.as_str()).collect();
    assert_eq!(listed, newest_first);

    let history: serde_json::Value = serde_json::from_str(&stdout_of(netbisect(&db).args([
        "history",
        "--json",
        "--metric",
        "throughput_bps",
    ])))
    .unwrap();
    let means: Vec<f64> = history["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|point| point["mean"].as_f64().unwrap())
        .collect();
    assert_eq!(means, [1e9, 2e9, 3e9, 4e9, 5e9]);
    // Text for people gives the times as git prints dates.
    let text = stdout_of(netbisect(&db).args(["history", "--metric", "throughput_bps"]));
    assert!(text.contains("\n2026-11-30 07:04:23 +0000 "), "{text}");
}

#[test]
fn a_merge_of_a_missing_file_is_said_as_a_read_says_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let output = netbisect(&db)
        .current_dir(dir.path())
        .args(["archive", "merge", "nothere.db"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no archive at nothere.db"), "{stderr}");
    assert!(!stderr.contains("file:"), "{stderr}");
    // Neither the missing file nor the archive merged into is made.
    assert!(!dir.path().join("nothere.db").exists());
    assert!(!db.exists());
}

/// A record of [`generated_record`]'s kind with `label`.
fn labelled_record(label: &str) -> RunRecord {
    let mut record = generated_record(1, 1);
    record.subject.label = Some(label.to_string());
    record.seal().unwrap();
    record
}

#[test]
fn names_no_archive_stores_are_refused_by_name_wherever_they_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let long = "x".repeat(run_record::record::MAX_NAME_BYTES + 1);
    let expected = format!(
        "subject.label is {} bytes long, over the limit of 1024 bytes",
        long.len()
    );
    for (record, words) in [
        (labelled_record(&long), expected.as_str()),
        (
            labelled_record("base\u{0}"),
            "subject.label holds a NUL character (at byte 4)",
        ),
    ] {
        let output = netbisect(&db)
            .args(["archive", "import", "-"])
            .write_stdin(json_lines(&[record]))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(words), "{stderr}");
    }
    // A peer tool's output labelled so on the command line.
    let netperf = data_dir().join("peer-outputs/netperf-TCP_RR-l10-plain.txt");
    let output = netbisect(&db)
        .args(["archive", "import", "--label", &long])
        .arg(&netperf)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&expected), "{stderr}");
    // bench, before anything runs.
    let output = netbisect(&db)
        .args(["bench", "-t", "TCP_STREAM", "-l", "0.1", "--label", &long])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "--label is {} bytes long, over the limit of 1024 bytes",
            long.len()
        )),
        "{stderr}"
    );
    let check = stdout_of(netbisect(&db).args(["archive", "check"]));
    assert!(check.contains("runs: 0, damaged: 0"), "{check}");
}

#[test]
fn a_merge_names_the_runs_it_leaves_out_and_merges_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let older = dir.path().join("older.db");
    let kept = generated_record(2, 2);
    let stand_in = generated_record(3, 3);
    let planted = labelled_record(&"y".repeat(2000));
    netbisect(&older)
        .args(["archive", "import", "-"])
        .write_stdin(json_lines(&[kept.clone(), stand_in.clone()]))
        .assert()
        .success();
    // The row of an older netbisect, which held no names to a limit.
    let connection = rusqlite::Connection::open(&older).unwrap();
    connection
        .execute_batch("PRAGMA foreign_keys = OFF")
        .unwrap();
    connection
        .execute(
            "UPDATE run_series SET run_id = ?1 WHERE run_id = ?2",
            [&planted.id, &stand_in.id],
        )
        .unwrap();
    connection
        .execute(
            "UPDATE runs SET id = ?1, record = ?2 WHERE id = ?3",
            rusqlite::params![
                planted.id,
                planted.to_canonical_bytes().unwrap(),
                stand_in.id
            ],
        )
        .unwrap();
    drop(connection);

    let db = dir.path().join("archive.db");
    let output = netbisect(&db)
        .args(["archive", "merge"])
        .arg(&older)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stdout}{stderr}");
    assert_eq!(
        stdout,
        format!(
            "{}: 2 runs, 1 added, 0 already present, 1 refused\n",
            older.display()
        )
    );
    assert!(
        stderr.contains(&format!(
            "netbisect: warning: left out run {}: subject.label is 2000 bytes long, \
             over the limit of 1024 bytes",
            planted.id
        )),
        "{stderr}"
    );
    assert!(stderr.contains("1 runs of"), "{stderr}");
    let check = stdout_of(netbisect(&db).args(["archive", "check"]));
    assert!(check.contains("runs: 1, damaged: 0"), "{check}");
    // The archive that holds it names it too.
    let output = netbisect(&older)
        .args(["archive", "check"])
        .output()
        .unwrap();
    let check = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(3), "{check}");
    assert!(check.contains("runs: 2, damaged: 1"), "{check}");
    assert!(check.contains(&format!("{}: ", planted.id)), "{check}");
}

#[test]
fn a_path_that_is_not_a_regular_file_is_named_for_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let record_file = dir.path().join("run.jsonl");
    std::fs::write(&record_file, json_lines(&[generated_record(1, 1)])).unwrap();
    for (path, kind) in [
        (dir.path().to_path_buf(), "is a directory"),
        (PathBuf::from("/dev/null"), "is a character device"),
        (fifo, "is a FIFO"),
        (
            PathBuf::from("/proc/self/status"),
            "is a file the kernel makes up (a pseudo-file)",
        ),
    ] {
        for args in [
            &["archive", "list"][..],
            &["archive", "import", record_file.to_str().unwrap()][..],
        ] {
            let output = netbisect(&path).args(args).output().unwrap();
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{args:?} {stderr}");
            assert!(
                stderr.contains(&format!("{} {kind}, not an archive", path.display())),
                "{args:?} {stderr}"
            );
        }
    }
}
