//! Signals and exit codes for unattended use: SIGINT and SIGTERM on
//! `bisect run`, `verdict` and `bench` kill the running command's process
//! group, are journaled and exit 130; a resume never starts a measurement
//! while one from a killed netbisect is alive; `verdict` exits 128 (abort
//! `git bisect run`) on usage and configuration errors.

use crate::bisect::{Fixture, fixture, linear, measure_command};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};
use test_fixtures::git::GitRepo;

const BINARY: &str = env!("CARGO_BIN_EXE_netbisect");

/// Starts netbisect with `args` in `dir`, with SIGINT's default disposition
/// restored: a test harness may run us as a background job of a
/// non-interactive shell, where SIGINT is ignored and stays ignored.
pub fn spawn(fixture: &Fixture, dir: &Path, args: &[&str]) -> Child {
    let mut command = std::process::Command::new(BINARY);
    command
        .args(args)
        .env("NETBISECT_ARCHIVE", &fixture.archive)
        .env_remove("NETBISECT_TEMPLATE_DIR")
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: signal() is async-signal-safe, as pre_exec requires.
    unsafe {
        command.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    command.spawn().unwrap()
}

/// Waits (bounded) until `path` holds a process id; returns it.
fn wait_for_pid(path: &Path, child: &mut Child) -> i32 {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(pid) = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok())
        {
            return pid;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "netbisect ended before the measure command started"
        );
        assert!(Instant::now() < deadline, "no pid in {}", path.display());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits (bounded) for `child` to end; returns its exit code and stderr.
pub fn wait_exit(child: &mut Child) -> (Option<i32>, String) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            if let Some(mut pipe) = child.stderr.take() {
                std::io::Read::read_to_string(&mut pipe, &mut stderr).unwrap();
            }
            return (status.code(), stderr);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            panic!("netbisect did not end within 30 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// True while `pid` is a live process (a zombie counts as ended).
pub fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

pub fn wait_dead(pid: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while alive(pid) {
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

pub fn signal(pid: u32, signal: i32) {
    let pid = i32::try_from(pid).unwrap();
    // SAFETY: kill on a child this test started and has not reaped yet.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
}

/// A bisection whose measure command measures once, then from its second
/// run on writes its pid to `pid_file` and sleeps.
fn hanging_bisection(fixture: &Fixture) -> std::path::PathBuf {
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 6, 3, &|_| Vec::new());
    let state = fixture.repo.parent().unwrap();
    let count = state.join("count");
    let pid_file = state.join("measure.pid");
    let prefix = format!(
        "n=$(cat '{count}' 2>/dev/null || echo 0); echo $((n + 1)) > '{count}'; \
         if [ \"$n\" -ge 1 ]; then echo $$ > '{pid}'; exec sleep 60; fi; ",
        count = count.display(),
        pid = pid_file.display()
    );
    let command = measure_command(&prefix);
    let (good, bad) = (ids[0].to_string(), ids[5].to_string());
    fixture.start_measuring(&good, &bad, &command, &[]);
    pid_file
}

pub fn journal_events(fixture: &Fixture) -> Vec<serde_json::Value> {
    let archive = archive::Archive::open(&fixture.archive).unwrap();
    let session = archive.sessions().unwrap().last().unwrap().id;
    archive
        .session_events(session)
        .unwrap()
        .iter()
        .map(|text| serde_json::from_str(text).unwrap())
        .collect()
}

#[test]
fn sigint_and_sigterm_on_bisect_run_kill_the_measure_and_are_journaled() {
    let fixture = fixture();
    let pid_file = hanging_bisection(&fixture);
    for (round, sig) in [libc::SIGINT, libc::SIGTERM].into_iter().enumerate() {
        let _ = std::fs::remove_file(&pid_file);
        let mut child = spawn(&fixture, &fixture.repo, &["bisect", "run"]);
        let measure = wait_for_pid(&pid_file, &mut child);
        signal(child.id(), sig);
        let (code, stderr) = wait_exit(&mut child);
        assert_eq!(code, Some(130), "{stderr}");
        assert!(stderr.contains("interrupted by SIG"), "{stderr}");
        assert!(wait_dead(measure), "the measure command {measure} survived");
        let interrupted: Vec<_> = journal_events(&fixture)
            .into_iter()
            .filter(|event| event["event"] == "interrupted")
            .collect();
        assert_eq!(interrupted.len(), round + 1, "{interrupted:?}");
        let name = if sig == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        assert_eq!(interrupted[round]["signal"], name);
    }
}

#[test]
fn a_resume_never_measures_beside_a_measure_still_running() {
    let fixture = fixture();
    let pid_file = hanging_bisection(&fixture);
    let mut child = spawn(&fixture, &fixture.repo, &["bisect", "run"]);
    let measure = wait_for_pid(&pid_file, &mut child);
    // kill -9 cannot be caught: the measure command, in a group of its
    // own, outlives netbisect.
    signal(child.id(), libc::SIGKILL);
    child.wait().unwrap();
    assert!(alive(measure));
    let count = fixture.repo.parent().unwrap().join("count");
    let started = std::fs::read_to_string(&count).unwrap();

    let (code, _, stderr) = fixture.run(&["bisect", "run"]);
    // SAFETY: the group of the measure command this test caused.
    unsafe {
        libc::kill(-measure, libc::SIGKILL);
    }
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("still running"), "{stderr}");
    assert!(stderr.contains(&format!("kill -- -{measure}")), "{stderr}");
    assert_eq!(std::fs::read_to_string(&count).unwrap(), started);
    assert!(wait_dead(measure));
}

#[test]
fn sigint_on_verdict_kills_the_measure_and_exits_130() {
    let fixture = fixture();
    let dir = fixture.repo.parent().unwrap().to_path_buf();
    for (size, commit) in [("65536", "aaaa1111"), ("64", "bbbb2222")] {
        for _ in 0..3 {
            let (code, _, stderr) = fixture.run(&[
                "bench",
                "-t",
                "TCP_STREAM",
                "-l",
                "0.1",
                "-m",
                size,
                "--commit",
                commit,
            ]);
            assert_eq!(code, 0, "{stderr}");
        }
    }
    let pid_file = dir.join("verdict.pid");
    let command = format!("echo $$ > '{}'; exec sleep 60", pid_file.display());
    let args = [
        "verdict",
        "--good-run",
        "aaaa1111",
        "--bad-run",
        "bbbb2222",
        "--measure",
        &command,
    ];
    let mut child = spawn(&fixture, &dir, &args);
    let measure = wait_for_pid(&pid_file, &mut child);
    signal(child.id(), libc::SIGINT);
    let (code, stderr) = wait_exit(&mut child);
    assert_eq!(code, Some(130), "{stderr}");
    assert!(wait_dead(measure), "the measure command {measure} survived");
}

#[test]
fn sigterm_on_bench_exits_130() {
    let fixture = fixture();
    let dir = fixture.repo.parent().unwrap().to_path_buf();
    let mut child = spawn(
        &fixture,
        &dir,
        &["bench", "-t", "TCP_STREAM", "-l", "30", "--no-archive"],
    );
    std::thread::sleep(Duration::from_millis(500));
    signal(child.id(), libc::SIGTERM);
    let (code, stderr) = wait_exit(&mut child);
    assert_eq!(code, Some(130), "{stderr}");
}

#[test]
fn verdict_aborts_git_bisect_run_on_configuration_errors() {
    let fixture = fixture();
    let dir = fixture.repo.parent().unwrap().to_path_buf();
    for _ in 0..3 {
        for (size, commit) in [("65536", "aaaa1111"), ("64", "bbbb2222")] {
            let (code, _, stderr) = fixture.run(&[
                "bench",
                "-t",
                "TCP_STREAM",
                "-l",
                "0.1",
                "-m",
                size,
                "--commit",
                commit,
            ]);
            assert_eq!(code, 0, "{stderr}");
        }
    }
    let verdict = |args: &[&str]| {
        let output = fixture
            .netbisect()
            .current_dir(&dir)
            .arg("verdict")
            .args(args)
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let good = ["--good-run", "aaaa1111", "--bad-run", "bbbb2222"];
    let with = |extra: &[&'static str]| {
        let mut args: Vec<&str> = good.to_vec();
        args.extend_from_slice(extra);
        args
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        // A misspelled baseline.
        (
            vec![
                "--good-run",
                "cccc",
                "--bad-run",
                "bbbb2222",
                "--measure",
                "true",
            ],
            "cccc",
        ),
        // Options clap refuses.
        (
            with(&["--measure", "true", "--no-such-option"]),
            "--no-such-option",
        ),
        (
            with(&["--measure", "true", "--max-repeats", "x"]),
            "--max-repeats",
        ),
        (vec!["--measure", "true"], "--good-run"),
        // Neither --bench nor --measure; a bad --bench; a missing program.
        (with(&[]), "--measure"),
        (with(&["--bench", "-t NO_SUCH_TEST"]), "NO_SUCH_TEST"),
        (
            with(&["--measure", "no-such-measure-tool"]),
            "no-such-measure-tool",
        ),
        (
            with(&["--measure", "true", "--metric", "no_such_metric"]),
            "no_such_metric",
        ),
    ];
    for (args, expected) in cases {
        let (code, stderr) = verdict(&args);
        assert_eq!(code, Some(128), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
    // A commit that cannot be measured is still a skip.
    let (code, stderr) = verdict(&with(&["--measure", "exit 3"]));
    assert_eq!(code, Some(125), "{stderr}");
    // Other commands keep 2 for usage errors.
    let output = fixture
        .netbisect()
        .args(["compare", "--no-such-option"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}
