//! The spool: `bench` on a PostgreSQL archive whose server is down keeps
//! its run on this machine, prints its table and exits 0; `archive sync`
//! and the next command that writes to the archive send it, once. An
//! archive refused for its credentials fails before the test. The server
//! is a cluster of the test's own (`test_fixtures::postgres`), stopped and
//! started again; where PostgreSQL is not installed these tests say so
//! and pass (and fail under `NETBISECT_SLOW_TESTS=1`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use test_fixtures::postgres::Cluster;

/// The binary pointed at the archive `address`, keeping its spool under
/// `state_home`.
fn netbisect_at(address: &str, state_home: &Path) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::new(env!("CARGO_BIN_EXE_netbisect"));
    command
        .env("NETBISECT_ARCHIVE", address)
        .env("XDG_STATE_HOME", state_home)
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE");
    command
}

/// A cluster this test may stop, or `None` where PostgreSQL is not
/// installed (the test says it skips).
fn own_cluster() -> Option<Cluster> {
    match Cluster::own() {
        Ok(cluster) => Some(cluster),
        Err(why) => {
            Cluster::shared_or_skip()?;
            panic!("PostgreSQL is installed but a cluster failed: {why}")
        }
    }
}

/// The run files in the spool under `state_home`.
pub(crate) fn spooled(state_home: &Path) -> Vec<PathBuf> {
    let root = state_home.join("netbisect").join("spool");
    let Ok(archives) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    archives
        .flat_map(|archive| std::fs::read_dir(archive.unwrap().path()).unwrap())
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
        .collect()
}

/// The ids of the runs in the archive, one per stored run.
fn archived_ids(address: &str, state_home: &Path) -> Vec<String> {
    let output = netbisect_at(address, state_home)
        .args(["archive", "export"])
        .assert()
        .success();
    String::from_utf8(output.get_output().stdout.clone())
        .unwrap()
        .lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            record["id"].as_str().unwrap().to_string()
        })
        .collect()
}

fn stderr_of(output: &assert_cmd::assert::Assert) -> String {
    String::from_utf8_lossy(&output.get_output().stderr).to_string()
}

/// `bench` with the server down, as a lab's testbed does it.
fn bench_while_down(address: &str, state_home: &Path) -> String {
    let output = netbisect_at(address, state_home)
        .args(["bench", "-t", "TCP_RR", "-l", "0.2"])
        .assert()
        .success();
    let stdout = String::from_utf8_lossy(&output.get_output().stdout).to_string();
    assert!(stdout.contains("TCP_RR TEST"), "{stdout}");
    stderr_of(&output)
}

#[test]
fn a_run_measured_while_the_server_is_down_is_kept_then_sent_once() {
    let Some(cluster) = own_cluster() else {
        return;
    };
    let name = cluster.database();
    let address = cluster.url(&name);
    let state = tempfile::tempdir().unwrap();
    // The archive exists before the server goes away (a writer makes it).
    netbisect_at(&address, state.path())
        .args(["archive", "sync"])
        .assert()
        .success();
    assert!(archived_ids(&address, state.path()).is_empty());
    cluster.stop();

    let stderr = bench_while_down(&address, state.path());
    let kept = spooled(state.path());
    assert_eq!(kept.len(), 1, "{stderr}");
    let run_id = kept[0].file_stem().unwrap().to_string_lossy().to_string();
    assert!(
        stderr.contains(&format!(
            "the archive at {} is unreachable",
            cluster.url_without_password(&name)
        )),
        "{stderr}"
    );
    assert!(stderr.contains("(connection refused)"), "{stderr}");
    assert!(stderr.contains(&run_id[..12]), "{stderr}");
    assert!(
        stderr.contains(&state.path().display().to_string()),
        "{stderr}"
    );
    assert!(stderr.contains("netbisect archive sync"), "{stderr}");
    assert!(
        !stderr.contains(test_fixtures::postgres::PASSWORD),
        "{stderr}"
    );
    let spool_dir = kept[0].parent().unwrap();
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(spool_dir).unwrap().permissions(),
    );
    assert_eq!(mode & 0o777, 0o700);
    for file in std::fs::read_dir(spool_dir).unwrap() {
        let text = std::fs::read_to_string(file.unwrap().path()).unwrap();
        assert!(!text.contains(test_fixtures::postgres::PASSWORD), "{text}");
    }

    // Still down: sync keeps the run and says so with exit code 3.
    netbisect_at(&address, state.path())
        .args(["archive", "sync"])
        .assert()
        .code(3);
    assert_eq!(spooled(state.path()).len(), 1);

    let kept_bytes = std::fs::read(&kept[0]).unwrap();
    cluster.start_again();
    let output = netbisect_at(&address, state.path())
        .args(["archive", "sync"])
        .assert()
        .success();
    assert!(stderr_of(&output).contains("sent 1 spooled runs"));
    assert!(spooled(state.path()).is_empty());
    assert_eq!(archived_ids(&address, state.path()), vec![run_id.clone()]);
    // Sending again finds nothing to send.
    netbisect_at(&address, state.path())
        .args(["archive", "sync"])
        .assert()
        .success();
    assert_eq!(archived_ids(&address, state.path()), vec![run_id.clone()]);
    // A command killed after the archive committed the run and before
    // its file was removed leaves the file: it is sent again, harmlessly,
    // and a temporary file a killed writer left is not sent.
    std::fs::write(&kept[0], &kept_bytes).unwrap();
    std::fs::write(kept[0].with_file_name(".half.tmp"), &kept_bytes[..10]).unwrap();
    netbisect_at(&address, state.path())
        .args(["archive", "sync"])
        .assert()
        .success();
    assert!(spooled(state.path()).is_empty());
    assert_eq!(archived_ids(&address, state.path()), vec![run_id.clone()]);

    // The next bench sends what was kept, then stores its own run.
    cluster.stop();
    bench_while_down(&address, state.path());
    let second_id = spooled(state.path())[0]
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .to_string();
    cluster.start_again();
    let output = netbisect_at(&address, state.path())
        .args(["bench", "-t", "TCP_RR", "-l", "0.2"])
        .assert()
        .success();
    assert!(
        stderr_of(&output).contains("sent 1 spooled runs"),
        "{}",
        stderr_of(&output)
    );
    assert!(spooled(state.path()).is_empty());
    let ids = archived_ids(&address, state.path());
    assert_eq!(ids.len(), 3, "{ids:?}");
    assert_eq!(ids.iter().filter(|id| **id == run_id).count(), 1);
    assert_eq!(ids.iter().filter(|id| **id == second_id).count(), 1);
}

#[test]
fn a_wrong_password_fails_before_the_test() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let name = cluster.database();
    let wrong = format!(
        "postgres://{}:s3cret@127.0.0.1:{}/{name}",
        test_fixtures::postgres::USER,
        cluster.port()
    );
    let state = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let output = netbisect_at(&wrong, state.path())
        .args(["bench", "-t", "TCP_RR", "-l", "30"])
        .assert()
        .code(3);
    // A 30 s test did not run.
    assert!(started.elapsed() < Duration::from_secs(20));
    let stderr = stderr_of(&output);
    assert!(stderr.contains("authentication failed"), "{stderr}");
    assert!(!stderr.contains("test over loopback"), "{stderr}");
    assert!(!stderr.contains("s3cret"), "{stderr}");
    assert!(output.get_output().stdout.is_empty());
    assert!(spooled(state.path()).is_empty());
}

/// Records of a TCP_STREAM run at 1 Gbit/s with 2% noise in `dir`, and a
/// measure command that prints the next one at each call (a tenth of it
/// from commits holding a file `slow`). Its `stop_at`-th call first
/// touches `asked` in `dir` and waits for `down` there: the test stops
/// the server meanwhile, so that the run it prints finds it gone.
fn measure_command(dir: &Path, stop_at: usize) -> String {
    crate::bisect_session::write_noisy_records(dir, 200, 7);
    format!(
        "r={r}; n=$(cat \"$r/counter\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$r/counter\"; \
         if [ \"$n\" -eq {stop_at} ]; then touch \"$r/asked\"; i=0; \
         while [ ! -e \"$r/down\" ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i + 1)); done; fi; \
         p=; if [ -f slow ]; then p=slow-; fi; cat \"$r/$p$(printf %03d \"$n\").json\"",
        r = dir.display()
    )
}

/// A bisection whose archive goes away mid-run keeps the run it had
/// measured in the spool and stops, its journal kept; run again once the
/// server is back, it sends that run first and carries on to the culprit.
#[test]
fn a_bisection_keeps_its_run_when_the_server_goes_away_and_carries_on() {
    let Some(cluster) = own_cluster() else {
        return;
    };
    let name = cluster.database();
    let address = cluster.url(&name);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let records = dir.path().join("records");
    std::fs::create_dir_all(&records).unwrap();
    let repo_dir = dir.path().join("repo");
    let repo = test_fixtures::git::GitRepo::init(&repo_dir);
    let ids = repo.line(
        None,
        8,
        |idx| {
            let mut files = vec![("counter", format!("{idx}\n"))];
            if idx >= 5 {
                files.push(("slow", "1\n".to_string()));
            }
            files
        },
        |idx| format!("commit {idx}"),
    );
    repo.checkout_main(*ids.last().unwrap());
    let bisect = |args: &[&str]| {
        netbisect_at(&address, &state)
            .current_dir(&repo_dir)
            .args(args)
            .output()
            .unwrap()
    };
    let measure = measure_command(&records, 12);
    let started = bisect(&[
        "bisect",
        "start",
        "--good",
        &ids[0].to_string(),
        "--bad",
        &ids[7].to_string(),
        "--measure",
        &measure,
    ]);
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    let stopped = std::thread::scope(|scope| {
        let stopper = scope.spawn(|| {
            let deadline = Instant::now() + Duration::from_secs(120);
            while !records.join("asked").exists() {
                assert!(
                    Instant::now() < deadline,
                    "the measure command was not called"
                );
                std::thread::sleep(Duration::from_millis(50));
            }
            cluster.stop();
            std::fs::write(records.join("down"), "").unwrap();
        });
        let output = bisect(&["bisect", "run"]);
        stopper.join().unwrap();
        output
    });
    let stderr = String::from_utf8_lossy(&stopped.stderr);
    assert_eq!(stopped.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("went away"), "{stderr}");
    assert!(stderr.contains("bisect run` carries on"), "{stderr}");
    let kept = spooled(&state);
    assert_eq!(kept.len(), 1, "{stderr}");
    let run_id = kept[0].file_stem().unwrap().to_string_lossy().to_string();
    assert!(stderr.contains(&run_id[..12]), "{stderr}");

    cluster.start_again();
    let resumed = bisect(&["bisect", "run"]);
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert!(resumed.status.success(), "{stderr}");
    assert!(stderr.contains("sent 1 spooled runs"), "{stderr}");
    assert!(spooled(&state).is_empty());
    let report = String::from_utf8_lossy(&resumed.stdout);
    assert!(
        report.contains(&ids[5].to_string()[..12]),
        "the culprit is commit 5: {report}"
    );
    let stored = archived_ids(&address, &state);
    assert_eq!(stored.iter().filter(|id| **id == run_id).count(), 1);
}
