//! `netbisect` on a PostgreSQL archive: eight processes importing at once,
//! the reads of the command line, merge to and from a file, and the
//! addresses it refuses. The server is the tests' own cluster
//! (`test_fixtures::postgres`); where PostgreSQL is not installed these
//! tests say so and pass (and fail under `NETBISECT_SLOW_TESTS=1`).

use run_record::record::RunRecord;
use run_record::spec::TestKind;
use std::path::Path;
use test_fixtures::postgres::Cluster;
use test_fixtures::record::{RecordBuilder, json_lines};

/// The binary pointed at the archive `address`.
fn netbisect_at(address: &str) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::new(env!("CARGO_BIN_EXE_netbisect"));
    command
        .env("NETBISECT_ARCHIVE", address)
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE");
    command
}

fn record(idx: u32) -> RunRecord {
    RecordBuilder::new(TestKind::TcpStream)
        .started_at(&format!(
            "2026-12-01T{:02}:{:02}:00.000000Z",
            idx / 60,
            idx % 60
        ))
        .finished_at("2026-12-01T23:00:00.000000Z")
        .commit(if idx.is_multiple_of(2) {
            "aaaa0000"
        } else {
            "bbbb1111"
        })
        .label("lab")
        .testbed(&format!("bed{}", idx % 8))
        .samples(&[9e9 + f64::from(idx) * 1e6, 9.1e9 + f64::from(idx) * 1e6])
        .build()
}

fn check_text(address: &str) -> String {
    let output = netbisect_at(address)
        .args(["archive", "check"])
        .assert()
        .success();
    String::from_utf8(output.get_output().stdout.clone()).unwrap()
}

#[test]
fn eight_processes_import_overlapping_runs_and_each_is_stored_once() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let address = cluster.url(&cluster.database());
    let records: Vec<RunRecord> = (0..120).map(record).collect();
    let dir = tempfile::tempdir().unwrap();
    // Writer k imports runs 10k .. 10k + 50: each run but the first ten
    // and last thirty is imported by several writers at once.
    let files: Vec<std::path::PathBuf> = (0..8)
        .map(|writer| {
            let path = dir.path().join(format!("runs-{writer}.jsonl"));
            let start = writer * 10;
            std::fs::write(&path, json_lines(&records[start..start + 50])).unwrap();
            path
        })
        .collect();
    let children: Vec<std::process::Child> = files
        .iter()
        .map(|file| {
            std::process::Command::new(env!("CARGO_BIN_EXE_netbisect"))
                .env("NETBISECT_ARCHIVE", &address)
                .args(["archive", "import"])
                .arg(file)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut n_added = 0;
    for child in children {
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let added: u64 = stdout
            .split(", ")
            .find_map(|part| part.strip_suffix(" added"))
            .and_then(|count| count.parse().ok())
            .unwrap_or_else(|| panic!("no count in {stdout}"));
        n_added += added;
    }
    let distinct = 7 * 10 + 50;
    assert_eq!(n_added, distinct as u64);
    let text = check_text(&address);
    assert!(
        text.contains(&format!("runs: {distinct}, damaged: 0")),
        "{text}"
    );
    // The password is not shown where the archive is named.
    assert!(!text.contains(test_fixtures::postgres::PASSWORD), "{text}");
}

#[test]
fn the_reads_and_merge_give_what_a_file_gives() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let address = cluster.url(&cluster.database());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("runs.jsonl");
    let records: Vec<RunRecord> = (0..20).map(record).collect();
    std::fs::write(&file, json_lines(&records)).unwrap();
    netbisect_at(&address)
        .args(["archive", "import"])
        .arg(&file)
        .assert()
        .success();
    // Into a file, and from that file into a second database.
    let copy = dir.path().join("copy.db");
    for _ in 0..2 {
        crate::netbisect_with(&copy)
            .args(["archive", "merge", &address])
            .assert()
            .success();
    }
    let second = cluster.url(&cluster.database());
    netbisect_at(&second)
        .args(["archive", "merge"])
        .arg(&copy)
        .assert()
        .success();
    let output_of = |command: &mut assert_cmd::Command, args: &[&str]| {
        let output = command.args(args).assert().success();
        output.get_output().stdout.clone()
    };
    for args in [
        &["archive", "export"][..],
        &["archive", "list"],
        &["compare", "aaaa0000", "bbbb1111"],
        &["history", "--metric", "throughput_bps", "--testbed", "bed3"],
    ] {
        let from_file = output_of(&mut crate::netbisect_with(&copy), args);
        assert_eq!(
            output_of(&mut netbisect_at(&address), args),
            from_file,
            "{args:?}"
        );
        assert_eq!(
            output_of(&mut netbisect_at(&second), args),
            from_file,
            "{args:?}"
        );
    }
    assert!(copy_has_runs(&copy, 20));
}

fn copy_has_runs(copy: &Path, n_runs: usize) -> bool {
    let output = crate::netbisect_with(copy)
        .args(["archive", "check"])
        .assert()
        .success();
    String::from_utf8_lossy(&output.get_output().stdout)
        .contains(&format!("runs: {n_runs}, damaged: 0"))
}

#[test]
fn addresses_that_cannot_be_used_are_refused_with_their_exit_codes() {
    // A malformed address needs no server.
    let output = netbisect_at("postgres://lab:s3cret@127.0.0.1:notaport/runs")
        .args(["archive", "list"])
        .assert()
        .code(2);
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).to_string();
    assert!(
        stderr.contains("postgres://lab@127.0.0.1:notaport/runs"),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");
    // So is one asking to verify a certificate without a CA file.
    netbisect_at(
        "postgres://lab@127.0.0.1/runs?sslmode=verify-full&sslrootcert=/nonexistent/ca.crt",
    )
    .args(["archive", "list"])
    .assert()
    .code(2);

    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let name = cluster.database();
    let wrong = format!(
        "postgres://{}:s3cret@127.0.0.1:{}/{name}",
        test_fixtures::postgres::USER,
        cluster.port()
    );
    let output = netbisect_at(&wrong)
        .args(["archive", "import", "-"])
        .write_stdin(json_lines(&[record(1)]))
        .assert()
        .code(3);
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).to_string();
    assert!(
        stderr.contains(&cluster.url_without_password(&name)),
        "{stderr}"
    );
    assert!(!stderr.contains("s3cret"), "{stderr}");

    // The password from PGPASSWORD.
    netbisect_at(&cluster.url_without_password(&name))
        .env("PGPASSWORD", test_fixtures::postgres::PASSWORD)
        .args(["archive", "import", "-"])
        .write_stdin(json_lines(&[record(1)]))
        .assert()
        .success();

    // Another program's database: exit 3, nothing written.
    let foreign = cluster.database();
    cluster.run_in(&foreign, "CREATE TABLE accounts (id integer)");
    let output = netbisect_at(&cluster.url(&foreign))
        .args(["archive", "import", "-"])
        .write_stdin(json_lines(&[record(1)]))
        .assert()
        .code(3);
    let stderr = String::from_utf8_lossy(&output.get_output().stderr).to_string();
    assert!(stderr.contains("another program"), "{stderr}");
}

#[test]
fn check_names_an_edited_figure_column_as_on_a_file() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let name = cluster.database();
    let address = cluster.url(&name);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("runs.jsonl");
    let records: Vec<RunRecord> = (0..3).map(record).collect();
    std::fs::write(&file, json_lines(&records)).unwrap();
    netbisect_at(&address)
        .args(["archive", "import"])
        .arg(&file)
        .assert()
        .success();
    cluster.run_in(
        &name,
        &format!(
            "UPDATE runs SET throughput_bps = throughput_bps * 2 WHERE id = '{}'; \
             UPDATE runs SET n_iterations = 7 WHERE id = '{}'",
            records[0].id, records[1].id
        ),
    );
    let output = netbisect_at(&address)
        .args(["archive", "check"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(3));
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("runs: 3, damaged: 2"), "{text}");
    for (record, column) in [
        (&records[0], "throughput_bps"),
        (&records[1], "n_iterations"),
    ] {
        assert!(
            text.contains(&format!(
                "{}: columns disagree with the record: {column}",
                record.id
            )),
            "{text}"
        );
    }
}

/// A run of the large input of the dropped-connection test, apart from
/// those of [`record`].
fn large_input_record(idx: u32) -> RunRecord {
    RecordBuilder::new(TestKind::TcpStream)
        .started_at(&format!(
            "2026-12-02T{:02}:{:02}:{:02}.000000Z",
            idx / 3600,
            idx / 60 % 60,
            idx % 60
        ))
        .finished_at("2026-12-02T23:59:59.000000Z")
        .commit("cccc2222")
        .label("large")
        .testbed("bed9")
        .samples(&[8e9 + f64::from(idx) * 1e5])
        .build()
}

/// The ids `archive export` gives.
fn exported_ids(address: &str) -> std::collections::BTreeSet<String> {
    let output = netbisect_at(address)
        .args(["archive", "export"])
        .assert()
        .success();
    String::from_utf8_lossy(&output.get_output().stdout)
        .lines()
        .map(|line| RunRecord::from_slice(line.as_bytes()).unwrap().id)
        .collect()
}

#[test]
fn a_connection_dropped_mid_import_stores_each_file_whole_or_not_at_all() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let name = cluster.database();
    let address = cluster.url(&name);
    let dir = tempfile::tempdir().unwrap();
    // An archive with a run in it, so that its tables exist.
    netbisect_at(&address)
        .args(["archive", "import", "-"])
        .write_stdin(json_lines(&[record(0)]))
        .assert()
        .success();
    let small: Vec<RunRecord> = (1..21).map(record).collect();
    let large: Vec<RunRecord> = (0..3000).map(large_input_record).collect();
    let small_file = dir.path().join("small.jsonl");
    let large_file = dir.path().join("large.jsonl");
    std::fs::write(&small_file, json_lines(&small)).unwrap();
    std::fs::write(&large_file, json_lines(&large)).unwrap();

    // A second connection inserts, without committing, the run that
    // comes halfway through the large input in id order: the import
    // inserts its runs in that order, so it stores the first half inside
    // its transaction and then waits on that row, mid-import, until its
    // connection is terminated.
    let mut large_ids: Vec<&str> = large.iter().map(|run| run.id.as_str()).collect();
    large_ids.sort_unstable();
    let halfway = large_ids[large_ids.len() / 2].to_string();
    let mut blocker = postgres::Client::connect(&address, postgres::NoTls).unwrap();
    let mut blocking = blocker.transaction().unwrap();
    blocking
        .execute(
            "INSERT INTO runs (id, config_key, testbed, test, source_tool, started_at, \
             n_iterations, throughput_bps, record) \
             VALUES ($1, 'k', 'bed9', 'TCP_STREAM', 'netbisect', 'now', 1, 1, '\\x00')",
            &[&halfway],
        )
        .unwrap();

    let import = std::process::Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .env("NETBISECT_ARCHIVE", &address)
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .args(["archive", "import"])
        .arg(&small_file)
        .arg(&large_file)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut watcher = postgres::Client::connect(&address, postgres::NoTls).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let terminated = loop {
        // The import's connection, waiting on the uncommitted row.
        let rows = watcher
            .query(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND pid <> pg_backend_pid() \
                 AND wait_event_type = 'Lock' AND query LIKE 'INSERT INTO runs %'",
                &[&name],
            )
            .unwrap();
        if let Some(row) = rows.first() {
            break row.get::<_, bool>(0);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the import never waited on the uncommitted run"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(terminated);
    blocking.rollback().unwrap();

    let output = import.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    let stderr = String::from_utf8_lossy(&output.stderr).to_string();
    assert_eq!(output.status.code(), Some(3), "{stdout}{stderr}");
    // What was stored: the small file, reported before the failure ...
    assert!(
        stdout.contains(&format!(
            "{}: 20 runs (run records), 20 added, 0 already present",
            small_file.display()
        )),
        "{stdout}"
    );
    assert!(!stdout.contains("large.jsonl"), "{stdout}");
    // ... and what was not, with the server's address but no password.
    assert!(
        stderr.contains(&format!(
            "failed to store the runs of {}; none of them was stored",
            large_file.display()
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "storing in the archive at {} failed",
            cluster.url_without_password(&name)
        )),
        "{stderr}"
    );
    // The server's notice of the termination, or the closed connection
    // when the client sees that first.
    assert!(
        stderr.contains("terminating connection") || stderr.contains("connection closed"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(test_fixtures::postgres::PASSWORD),
        "{stderr}"
    );

    // Every run is there whole or not at all: the first and the small
    // file's, none of the large file's, and check finds nothing wrong.
    let stored = exported_ids(&address);
    let expected: std::collections::BTreeSet<String> = std::iter::once(record(0))
        .chain(small.iter().cloned())
        .map(|run| run.id)
        .collect();
    assert_eq!(stored, expected);
    let text = check_text(&address);
    assert!(text.contains("runs: 21, damaged: 0"), "{text}");
    // What the integrity line rests on.
    assert!(
        text.contains("integrity: ok\n  checked: catalog: 10 tables, 24 indexes valid"),
        "{text}"
    );
    assert!(
        text.contains("  checked: runs: 21 rows by a sequential scan and through index"),
        "{text}"
    );

    // Importing both again adds only what is missing.
    let output = netbisect_at(&address)
        .args(["archive", "import"])
        .arg(&small_file)
        .arg(&large_file)
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).to_string();
    assert!(
        stdout.contains("20 runs (run records), 0 added, 20 already present"),
        "{stdout}"
    );
    assert!(
        stdout.contains("3000 runs (run records), 3000 added, 0 already present"),
        "{stdout}"
    );
    let text = check_text(&address);
    assert!(text.contains("runs: 3021, damaged: 0"), "{text}");
}

#[test]
fn a_server_that_cannot_be_used_is_named_with_the_cause_and_never_the_password() {
    // Each case: the address given, as it is shown, the cause named, and
    // the words of the system or the server beneath it. Nothing listens
    // on port 1 of loopback.
    let mut cases = vec![(
        "postgres://u:secret@127.0.0.1:1/x".to_string(),
        "postgres://u@127.0.0.1:1/x".to_string(),
        "connection refused",
        "Connection refused",
    )];
    if let Some(cluster) = Cluster::shared_or_skip() {
        let name = cluster.database();
        let user = test_fixtures::postgres::USER;
        cases.push((
            format!(
                "postgres://{user}:secret@127.0.0.1:{}/{name}",
                cluster.port()
            ),
            cluster.url_without_password(&name),
            "authentication failed",
            "password authentication failed for user",
        ));
    }
    for (address, shown, cause, beneath) in cases {
        let output = netbisect_at(&address)
            .args(["archive", "list"])
            .assert()
            .code(3);
        let stderr = String::from_utf8_lossy(&output.get_output().stderr).to_string();
        assert!(
            stderr.contains(&format!(
                "caused by: cannot use the archive at {shown}: {cause}\n"
            )),
            "{stderr}"
        );
        assert!(stderr.contains(beneath), "{stderr}");
        assert!(!stderr.contains("secret"), "{stderr}");
    }
}
