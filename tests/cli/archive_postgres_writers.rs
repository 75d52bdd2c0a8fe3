//! Who stored a run, and writers per testbed on PostgreSQL: GUIDE's
//! recipe (`docs/postgres-writers.sql`, applied here as it is) gives
//! each testbed a role that stores runs of that testbed only; the server
//! says who stored each run, and no writer can say otherwise; a write
//! the policy refuses fails with an error naming the testbed and the
//! role, is not spooled, and stores nothing. A merged or spooled run is
//! stored by the role that wrote it into the archive. The server is a
//! cluster of the test's own (its roles are the cluster's); where
//! PostgreSQL is not installed these tests say so and pass (and fail
//! under `NETBISECT_SLOW_TESTS=1`).

use std::path::{Path, PathBuf};
use test_fixtures::postgres::Cluster;
use test_fixtures::record::{RecordBuilder, json_lines};

/// The recipe GUIDE shows, as a lab applies it.
const RECIPE: &str = include_str!("../../docs/postgres-writers.sql");

/// The database the recipe's archive lives in.
const DATABASE: &str = "lab";

/// A cluster with an archive owned by `netbisect_owner` and the recipe
/// applied, each login role given a password of its own.
struct Lab {
    cluster: Cluster,
    state: tempfile::TempDir,
}

impl Lab {
    /// The lab, or `None` where PostgreSQL is not installed (the test
    /// says it skips).
    fn new() -> Option<Lab> {
        let cluster = match Cluster::own() {
            Ok(cluster) => cluster,
            Err(why) => {
                Cluster::shared_or_skip()?;
                panic!("PostgreSQL is installed but a cluster failed: {why}")
            }
        };
        cluster.admin("CREATE ROLE netbisect_owner LOGIN PASSWORD 'pw-netbisect_owner'");
        cluster.admin(&format!("CREATE DATABASE {DATABASE} OWNER netbisect_owner"));
        let lab = Lab {
            cluster,
            state: tempfile::tempdir().unwrap(),
        };
        // The owner makes the archive's tables, then the recipe runs as
        // a superuser.
        lab.as_role("netbisect_owner")
            .args(["archive", "sync"])
            .assert()
            .success();
        lab.cluster.run_in(DATABASE, RECIPE);
        for role in ["writer_lab_a", "writer_lab_b", "lab_viewer"] {
            lab.cluster
                .run_in(DATABASE, &format!("ALTER ROLE {role} PASSWORD 'pw-{role}'"));
        }
        Some(lab)
    }

    /// The archive's address as `role`, with its password.
    fn address(&self, role: &str) -> String {
        format!(
            "postgres://{role}:pw-{role}@127.0.0.1:{}/{DATABASE}",
            self.cluster.port()
        )
    }

    /// The binary on the archive as `role`, its spool under the lab's
    /// state directory.
    fn as_role(&self, role: &str) -> assert_cmd::Command {
        let mut command = assert_cmd::Command::new(env!("CARGO_BIN_EXE_netbisect"));
        command
            .env("NETBISECT_ARCHIVE", self.address(role))
            .env("XDG_STATE_HOME", self.state.path())
            .env_remove("NETBISECT_TEMPLATE_DIR")
            .env_remove("PGPASSWORD")
            .env_remove("PGPASSFILE");
        command
    }

    /// The ids of the runs in the archive, as a reader sees them.
    fn run_ids(&self) -> Vec<String> {
        let output = self
            .as_role("lab_viewer")
            .args(["archive", "list", "--json"])
            .assert()
            .success();
        let runs: serde_json::Value = serde_json::from_slice(&output.get_output().stdout).unwrap();
        runs.as_array()
            .unwrap()
            .iter()
            .map(|run| run["id"].as_str().unwrap().to_string())
            .collect()
    }

    /// The run files in the spool.
    fn spooled(&self) -> Vec<PathBuf> {
        crate::archive_spool::spooled(self.state.path())
    }

    /// The last line of `archive show ID` as `role`: who stored the run.
    fn stored_by(&self, role: &str, id: &str) -> String {
        show_stored_by(self.as_role(role), id)
    }
}

/// The last line of `archive show ID` through `command`.
fn show_stored_by(mut command: assert_cmd::Command, id: &str) -> String {
    let output = command.args(["archive", "show", id]).assert().success();
    let text = String::from_utf8(output.get_output().stdout.clone()).unwrap();
    text.lines().last().unwrap().to_string()
}

/// `bench` on loopback for `testbed` through `command`, and what it
/// printed on stdout and stderr.
fn bench(mut command: assert_cmd::Command, testbed: &str) -> assert_cmd::assert::Assert {
    command
        .args(["bench", "-t", "TCP_RR", "-l", "0.2", "--testbed", testbed])
        .assert()
}

/// The run id a bench table ends with.
fn run_id_of(output: &assert_cmd::assert::Assert) -> String {
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).to_string();
    stdout
        .lines()
        .last()
        .and_then(|line| line.rsplit_once("run "))
        .map(|(_, id)| id.to_string())
        .unwrap_or_else(|| panic!("no run id in {stdout}"))
}

fn stderr_of(output: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&output.get_output().stderr).to_string()
}

/// A file of one run record of `testbed`.
fn record_file(dir: &Path, testbed: &str) -> PathBuf {
    let record = RecordBuilder::new(run_record::spec::TestKind::TcpStream)
        .started_at("2026-12-01T10:00:00.000000Z")
        .finished_at("2026-12-01T10:00:10.000000Z")
        .commit("aaaa0000")
        .testbed(testbed)
        .samples(&[9e9, 9.1e9])
        .build();
    let path = dir.join(format!("{testbed}.jsonl"));
    std::fs::write(&path, json_lines(&[record])).unwrap();
    path
}

/// Asserts that `output` is the refusal of runs of `testbed` to `role`.
fn assert_refused(output: &assert_cmd::assert::Assert, role: &str, testbed: &str) {
    let stderr = stderr_of(output);
    assert!(
        stderr.contains(&format!(
            "refused to store runs of testbed \"{testbed}\" as role \"{role}\""
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(&format!("pw-{role}")), "{stderr}");
}

#[test]
fn a_writer_stores_runs_of_its_testbed_only_under_its_own_name() {
    let Some(lab) = Lab::new() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let stored = bench(lab.as_role("writer_lab_a"), "lab-a").success();
    let bench_id = run_id_of(&stored);
    assert_eq!(
        lab.stored_by("lab_viewer", &bench_id),
        "stored by writer_lab_a from 127.0.0.1"
    );

    // Another testbed's name: the server's policy refuses it, the test
    // ran but nothing is stored, nor kept for later.
    let refused = bench(lab.as_role("writer_lab_a"), "lab-b").code(3);
    assert_refused(&refused, "writer_lab_a", "lab-b");
    let stderr = stderr_of(&refused);
    assert!(stderr.contains("row-level security policy"), "{stderr}");
    assert!(!stderr.contains("unreachable"), "{stderr}");
    assert!(lab.spooled().is_empty());
    let ids = lab.run_ids();
    assert_eq!(ids.len(), 1);
    assert!(ids[0].starts_with(&bench_id), "{ids:?}");

    // An import likewise: writer B stores lab-b and not lab-a; a reader
    // stores nothing.
    let output = lab
        .as_role("writer_lab_b")
        .args(["archive", "import"])
        .arg(record_file(dir.path(), "lab-b"))
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).to_string();
    assert!(stdout.contains("1 added"), "{stdout}");
    let ids = lab.run_ids();
    assert_eq!(ids.len(), 2);
    let imported = ids.iter().find(|id| !id.starts_with(&bench_id)).unwrap();
    assert_eq!(
        lab.stored_by("writer_lab_a", imported),
        "stored by writer_lab_b from 127.0.0.1"
    );
    let lab_a_file = record_file(dir.path(), "lab-a");
    let refused = lab
        .as_role("writer_lab_b")
        .args(["archive", "import"])
        .arg(&lab_a_file)
        .assert()
        .code(3);
    assert_refused(&refused, "writer_lab_b", "lab-a");
    let refused = lab
        .as_role("lab_viewer")
        .args(["archive", "import"])
        .arg(&lab_a_file)
        .assert()
        .code(3);
    assert_refused(&refused, "lab_viewer", "lab-a");
    assert!(stderr_of(&refused).contains("permission denied for table runs"));
    assert_eq!(lab.run_ids().len(), 2);

    // Naming who stored a run in the insert changes nothing: the server
    // sets it; and no writer may change it after.
    let mut writer = postgres::Config::new()
        .host("127.0.0.1")
        .port(lab.cluster.port())
        .user("writer_lab_a")
        .password("pw-writer_lab_a")
        .dbname(DATABASE)
        .connect(postgres::NoTls)
        .unwrap();
    writer
        .batch_execute(
            "INSERT INTO runs (id, config_key, testbed, test, source_tool, started_at, \
             n_iterations, throughput_bps, record, stored_by, stored_from) \
             VALUES ('forged', 'k', 'lab-a', 'TCP_STREAM', 'netperf', \
             '2026-12-01T00:00:00.000000Z', 1, 1.0, '\\x00', 'writer_lab_b', '192.0.2.9')",
        )
        .unwrap();
    let row = writer
        .query_one(
            "SELECT stored_by, stored_from FROM runs WHERE id = 'forged'",
            &[],
        )
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "writer_lab_a");
    assert_eq!(row.get::<_, String>(1), "127.0.0.1");
    for sql in [
        "UPDATE runs SET stored_by = 'writer_lab_b' WHERE id = 'forged'",
        "DELETE FROM runs WHERE id = 'forged'",
    ] {
        let err = writer.batch_execute(sql).unwrap_err();
        assert_eq!(
            err.code(),
            Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE),
            "{sql}: {err}"
        );
    }
    drop(writer);
    lab.cluster
        .run_in(DATABASE, "DELETE FROM runs WHERE id = 'forged'");
}

#[test]
fn merged_and_spooled_runs_are_stored_by_the_role_that_wrote_them() {
    let Some(lab) = Lab::new() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    // A run in a file is stored by this user; merged into the database
    // by writer A, it is writer A's there.
    let file = dir.path().join("testbed.db");
    let output = bench(crate::netbisect_with(&file), "lab-a").success();
    let id = run_id_of(&output);
    let this_user = format!("stored by {}", crate::stored_by_this_user());
    assert_eq!(show_stored_by(crate::netbisect_with(&file), &id), this_user);
    lab.as_role("writer_lab_a")
        .args(["archive", "merge"])
        .arg(&file)
        .assert()
        .success();
    assert_eq!(
        lab.stored_by("lab_viewer", &id),
        "stored by writer_lab_a from 127.0.0.1"
    );
    // Back into a new file, it is this user's who merged it.
    let copy = dir.path().join("copy.db");
    crate::netbisect_with(&copy)
        .args(["archive", "merge", &lab.address("lab_viewer")])
        .assert()
        .success();
    assert_eq!(show_stored_by(crate::netbisect_with(&copy), &id), this_user);

    // A run kept while the server was down is stored by the role of the
    // command that sends it: the spool is per address, so the role that
    // measured it. One of another testbed is refused when sent, and
    // stays in the spool.
    lab.cluster.stop();
    let kept = bench(lab.as_role("writer_lab_a"), "lab-a").success();
    let kept_id = run_id_of(&kept);
    assert!(
        stderr_of(&kept).contains("unreachable"),
        "{}",
        stderr_of(&kept)
    );
    assert_eq!(lab.spooled().len(), 1);
    lab.cluster.start_again();
    lab.as_role("writer_lab_a")
        .args(["archive", "sync"])
        .assert()
        .success();
    assert!(lab.spooled().is_empty());
    assert_eq!(
        lab.stored_by("lab_viewer", &kept_id),
        "stored by writer_lab_a from 127.0.0.1"
    );
    lab.cluster.stop();
    bench(lab.as_role("writer_lab_a"), "lab-b").success();
    lab.cluster.start_again();
    let refused = lab
        .as_role("writer_lab_a")
        .args(["archive", "sync"])
        .assert()
        .code(3);
    assert_refused(&refused, "writer_lab_a", "lab-b");
    assert_eq!(lab.spooled().len(), 1);
    assert_eq!(lab.run_ids().len(), 2);
}

/// GUIDE shows the recipe's statements, in order, as the file has them:
/// the recipe a reader copies is the one these tests apply.
#[test]
fn the_guide_shows_the_recipe_the_tests_apply() {
    let guide = include_str!("../../GUIDE.md");
    let mut rest = guide;
    for line in RECIPE
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with("--"))
    {
        let shown = format!("\n    {line}\n");
        let at = rest
            .find(&shown)
            .unwrap_or_else(|| panic!("GUIDE.md does not show, in order: {line}"));
        rest = &rest[at + shown.len() - 1..];
    }
}
