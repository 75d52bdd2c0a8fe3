//! `netbisect history` end to end: runs imported into a temp-dir archive,
//! commit order from a git repository built with git2 in a temp dir.

use crate::compare::{RunOf, around, import, netbisect, stderr_of_failure, stdout_of};
use git2::Oid;
use run_record::spec::TestKind;
use serde::Deserialize;
use std::path::Path;
use test_fixtures::git::GitRepo;

/// A line of `n` commits in a new repository at `dir`, with a fixed
/// author and time so the ids are the same on every run; tag `A` on the
/// first and `E` on the last. Returns the ids, oldest first.
fn linear_repository(dir: &Path, n_commits: usize) -> Vec<String> {
    let repo = GitRepo::init(dir);
    let ids = repo.line(
        None,
        n_commits,
        |commit_idx| vec![("counter", format!("{commit_idx}\n"))],
        |commit_idx| format!("commit {commit_idx}"),
    );
    repo.tag_commit("A", ids[0]);
    repo.tag_commit("E", ids[n_commits - 1]);
    repo.set_main(ids[n_commits - 1]);
    ids.iter().map(Oid::to_string).collect()
}

/// The parts of `history --json` these tests read.
#[derive(Debug, Deserialize)]
struct History {
    metric: String,
    order: String,
    tests: Vec<String>,
    n_change_points: usize,
    points: Vec<Point>,
}

#[derive(Debug, Deserialize)]
struct Point {
    label: String,
    n_runs: usize,
    change: Option<Change>,
}

#[derive(Debug, Deserialize)]
struct Change {
    change_pct: Option<f64>,
    direction: Option<String>,
}

/// Start times in shuffled order: the run of commit `idx` starts at
/// hour `SHUFFLED_HOURS[idx]`, so time order is not git order.
const SHUFFLED_HOURS: [u32; 10] = [9, 4, 7, 0, 8, 2, 5, 1, 6, 3];

/// A repository of 10 commits and an archive with one run of three
/// iterations per commit, 10% less throughput from commit 6 on.
fn step_fixture(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf, Vec<String>) {
    let repo_dir = dir.join("repo");
    std::fs::create_dir(&repo_dir).unwrap();
    let commits = linear_repository(&repo_dir, 10);
    let db = dir.join("archive.db");
    let times: Vec<String> = SHUFFLED_HOURS
        .iter()
        .map(|hour| format!("2026-04-01T{hour:02}:00:00Z"))
        .collect();
    let samples: Vec<Vec<f64>> = (0..10)
        .map(|commit_idx| {
            let level = if commit_idx < 6 { 9.4e9 } else { 9.4e9 * 0.9 };
            around(level, 0.003, 3, 100 + commit_idx as u64)
        })
        .collect();
    let records: Vec<_> = (0..10)
        .map(|commit_idx| {
            RunOf::stream(
                &commits[commit_idx],
                &times[commit_idx],
                &samples[commit_idx],
            )
            .record()
        })
        .collect();
    import(&db, &records);
    (db, repo_dir, commits)
}

fn history_json(db: &Path, args: &[&str]) -> History {
    let text = stdout_of(
        netbisect(db)
            .args(["history", "--metric", "throughput_bps", "--json"])
            .args(args),
    );
    serde_json::from_str(&text).unwrap()
}

#[test]
fn commits_come_in_git_order_with_the_step_marked() {
    let dir = tempfile::tempdir().unwrap();
    let (db, repo_dir, commits) = step_fixture(dir.path());
    let repo = repo_dir.to_str().unwrap();

    // A..E leaves A out, as git log A..E does.
    let history = history_json(&db, &["--repo", repo, "--range", "A..E"]);
    assert_eq!(history.metric, "throughput_bps");
    assert_eq!(history.order, "git");
    assert_eq!(history.tests, ["TCP_STREAM"]);
    let labels: Vec<&str> = history.points.iter().map(|p| p.label.as_str()).collect();
    let expected: Vec<&str> = commits[1..].iter().map(|id| &id[..12]).collect();
    assert_eq!(labels, expected);
    assert!(history.points.iter().all(|point| point.n_runs == 1));
    assert_eq!(history.n_change_points, 1);
    let marked: Vec<&str> = history
        .points
        .iter()
        .filter(|point| point.change.is_some())
        .map(|point| point.label.as_str())
        .collect();
    assert_eq!(marked, [&commits[6][..12]]);
    let change = history.points[5].change.as_ref().unwrap();
    assert!(change.change_pct.unwrap() < -9.0, "{change:?}");
    assert_eq!(change.direction.as_deref(), Some("regression"));

    // Without --range, HEAD and all its ancestors.
    let history = history_json(&db, &["--repo", repo]);
    assert_eq!(history.points.len(), 10);
    assert_eq!(history.points[0].label, commits[0][..12]);

    let text = stdout_of(netbisect(&db).args([
        "history",
        "--metric",
        "throughput_bps",
        "--repo",
        repo,
        "--range",
        "A..E",
    ]));
    insta::assert_snapshot!("history_git_order_step", text);
}

#[test]
fn without_a_repository_runs_come_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let (db, _, _) = step_fixture(dir.path());
    let history = history_json(&db, &[]);
    assert_eq!(history.order, "time");
    let labels: Vec<&str> = history.points.iter().map(|p| p.label.as_str()).collect();
    let expected: Vec<String> = (0..10)
        .map(|hour| format!("2026-04-01T{hour:02}:00:00.000000Z"))
        .collect();
    assert_eq!(labels, expected);
    // In time order the levels are mixed, so no step is found.
    assert_eq!(history.n_change_points, 0);
    let text = stdout_of(netbisect(&db).args(["history", "--metric", "throughput_bps"]));
    assert!(text.contains("TCP_STREAM, runs in time order:"), "{text}");
}

#[test]
fn several_configurations_must_be_narrowed_to_one() {
    let dir = tempfile::tempdir().unwrap();
    let (db, repo_dir, commits) = step_fixture(dir.path());
    let samples = around(50_000.0, 0.01, 3, 9);
    let rr = RunOf {
        test: TestKind::TcpRr,
        ..RunOf::stream(&commits[3], "2026-04-02T00:00:00Z", &samples)
    }
    .record();
    import(&db, std::slice::from_ref(&rr));
    let stderr = stderr_of_failure(
        netbisect(&db).args(["history", "--metric", "throughput_bps"]),
        2,
    );
    assert!(
        stderr.contains("the selected runs span 2 test configurations"),
        "{stderr}"
    );
    let rr_key = rr.compute_spec_key().unwrap();
    assert!(
        stderr.contains(&format!(
            "  {}      1  TCP_RR -l 10 (testbed lab)",
            &rr_key[..12]
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("     10  TCP_STREAM -l 10 (testbed lab)"),
        "{stderr}"
    );
    for line in stderr.lines() {
        assert!(line.len() <= 80, "{line:?}");
    }

    let history = history_json(&db, &["--test", "TCP_STREAM"]);
    assert_eq!(history.points.len(), 10);
    let history = history_json(&db, &["--spec-key", &rr_key[..8]]);
    assert_eq!(history.tests, ["TCP_RR"]);
    assert_eq!(history.points.len(), 1);
    let stderr = stderr_of_failure(
        netbisect(&db).args([
            "history",
            "--metric",
            "latency_p99_us",
            "--test",
            "TCP_STREAM",
        ]),
        2,
    );
    assert!(
        stderr.contains("none of the 10 selected runs has values of latency_p99_us"),
        "{stderr}"
    );

    // The extra configuration is outside the range: no error there.
    let repo = repo_dir.to_str().unwrap();
    let range = format!("{}..E", &commits[3][..10]);
    let history = history_json(&db, &["--repo", repo, "--range", &range]);
    assert_eq!(history.points.len(), 6);
}

#[test]
fn bad_repositories_ranges_and_filters_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let (db, repo_dir, _) = step_fixture(dir.path());
    let repo = repo_dir.to_str().unwrap();
    let run = |args: &[&str]| {
        stderr_of_failure(
            netbisect(&db)
                .args(["history", "--metric", "throughput_bps"])
                .args(args),
            2,
        )
    };
    let stderr = run(&["--repo", repo, "--range", "A..nope"]);
    assert!(stderr.contains("unknown revision 'nope'"), "{stderr}");
    let not_a_repo = dir.path().join("empty");
    std::fs::create_dir(&not_a_repo).unwrap();
    let stderr = run(&["--repo", not_a_repo.to_str().unwrap()]);
    assert!(stderr.contains("cannot open git repository"), "{stderr}");
    let stderr = run(&["--repo", repo, "--range", "E..A"]);
    assert!(
        stderr.contains("none of the 10 selected runs is of a commit of E..A (0 commits)"),
        "{stderr}"
    );
    let stderr = run(&["--label", "nobody"]);
    assert!(
        stderr.contains("no archived run matches the filters"),
        "{stderr}"
    );
    let stderr = run(&["--alpha", "0"]);
    assert!(stderr.contains("alpha must be in (0, 1)"), "{stderr}");
    let output = netbisect(&db)
        .args(["history", "--metric", "speed"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
}

/// `history --check` with `args`: its exit code, stdout and stderr.
fn history_check(db: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = netbisect(db)
        .args(["history", "--metric", "throughput_bps", "--check"])
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn check_fails_while_the_newest_level_is_a_change_for_the_worse() {
    let dir = tempfile::tempdir().unwrap();
    let (db, repo_dir, commits) = step_fixture(dir.path());
    let repo = repo_dir.to_str().unwrap();

    // The last four commits are 10% down from the six before: exit 1,
    // the history printed as without --check, stderr saying why.
    let (code, stdout, stderr) = history_check(&db, &["--repo", repo]);
    assert_eq!(code, Some(1), "{stderr}");
    let plain =
        stdout_of(netbisect(&db).args(["history", "--metric", "throughput_bps", "--repo", repo]));
    assert_eq!(stdout, plain);
    assert!(
        stderr.contains("throughput_bps is worse since")
            && stderr.contains(&commits[6][..12])
            && stderr.contains("-9.9%"),
        "{stderr}"
    );
    // The same with --json: a script reads both the data and the code.
    let (code, stdout, _) = history_check(&db, &["--repo", repo, "--json"]);
    assert_eq!(code, Some(1));
    let history: History = serde_json::from_str(&stdout).unwrap();
    assert_eq!(history.n_change_points, 1);

    // Before the drop the series has no change: exit 0. A window that
    // holds the drop but not three points after it cannot confirm it.
    for range in [
        &format!("{}..{}", commits[0], commits[5]),
        &format!("{}..{}", commits[0], commits[7]),
    ] {
        let (code, _, stderr) = history_check(&db, &["--repo", repo, "--range", range]);
        assert_eq!(code, Some(0), "{range}: {stderr}");
        assert!(stderr.is_empty(), "{stderr}");
    }

    // Recovered: six more commits back at the old level make the
    // newest change one for the better, and the check passes again.
    let repo_handle = GitRepo::open(&repo_dir);
    let tip = Oid::from_str(&commits[9]).unwrap();
    let more = repo_handle.line(
        Some(tip),
        6,
        |commit_idx| vec![("counter", format!("back {commit_idx}\n"))],
        |commit_idx| format!("revert {commit_idx}"),
    );
    let records: Vec<_> = more
        .iter()
        .enumerate()
        .map(|(idx, id)| {
            let samples = around(9.4e9, 0.003, 3, 200 + idx as u64);
            RunOf::stream(
                &id.to_string(),
                &format!("2026-04-02T0{idx}:00:00Z"),
                &samples,
            )
            .record()
        })
        .collect();
    import(&db, &records);
    // From the drop on, the newest change is the recovery: for the
    // better, so the check passes.
    let range = format!("{}..{}", commits[5], more[5]);
    let (code, _, stderr) = history_check(&db, &["--repo", repo, "--range", &range]);
    assert_eq!(code, Some(0), "{stderr}");
    let history = history_json(&db, &["--repo", repo, "--range", &range]);
    assert_eq!(history.n_change_points, 1, "{history:?}");
    let change = history.points[4].change.as_ref().unwrap();
    assert_eq!(change.direction.as_deref(), Some("improvement"));

    // A usage error is still 2, whatever --check would have said.
    let stderr = stderr_of_failure(
        netbisect(&db).args([
            "history",
            "--metric",
            "throughput_bps",
            "--check",
            "--alpha",
            "2",
        ]),
        2,
    );
    assert!(stderr.contains("alpha"), "{stderr}");
}
