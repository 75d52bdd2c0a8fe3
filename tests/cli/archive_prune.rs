//! `netbisect archive prune` end to end: an archive holding the runs of a
//! real bisection over a small git repository (a 2025 testbed's) and
//! imported runs of two testbeds, two labels and several ages, pruned by
//! each selection in turn. A dry run changes nothing; no selection is
//! refused; the runs the bisection's journal names survive every prune,
//! and the bisection still reports after them; the archive checks clean.
//! The same on a PostgreSQL archive of the tests' own cluster (where
//! PostgreSQL is not installed it says so and passes, and fails under
//! `NETBISECT_SLOW_TESTS=1`).

use crate::bisect::{Fixture, fixture};
use crate::bisect_session::{line, noisy_records, records_dir};
use crate::check_mailing_list_rules;
use archive::{Archive, Location};
use run_record::record::RunRecord;
use run_record::spec::TestKind;
use serde_json::Value;
use std::collections::BTreeSet;
use test_fixtures::postgres::Cluster;
use test_fixtures::record::{RecordBuilder, json_lines};

/// Runs netbisect in the fixture's repository on `archive` (a file or an
/// address): (exit code, stdout, stderr).
fn run(fixture: &Fixture, archive: &str, args: &[&str]) -> (i32, String, String) {
    let output = fixture
        .netbisect()
        .env("NETBISECT_ARCHIVE", archive)
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// `args` must succeed; their stdout as JSON.
fn json(fixture: &Fixture, archive: &str, args: &[&str]) -> Value {
    let (code, stdout, stderr) = run(fixture, archive, args);
    assert_eq!(code, 0, "{args:?}: {stderr}");
    serde_json::from_str(&stdout).unwrap_or_else(|err| panic!("{err}: {stdout}"))
}

/// The ids of the runs the archive holds.
fn stored_ids(fixture: &Fixture, archive: &str) -> BTreeSet<String> {
    let runs = json(fixture, archive, &["archive", "list", "--json"]);
    ids_of(&runs)
}

/// The `id` of each object of `runs` (a list of runs, or of kept runs).
fn ids_of(runs: &Value) -> BTreeSet<String> {
    runs.as_array()
        .unwrap()
        .iter()
        .map(|run| {
            run.get("run")
                .unwrap_or(run)
                .get("id")
                .and_then(Value::as_str)
                .unwrap()
                .to_string()
        })
        .collect()
}

/// Every run id the journals of the archive's bisections name, read
/// here from the events as stored.
fn journaled_ids(archive: &str) -> BTreeSet<String> {
    let location = Location::parse(std::ffi::OsStr::new(archive)).unwrap();
    let archive = Archive::open_location_read_only(&location).unwrap();
    let mut ids = BTreeSet::new();
    for session in archive.sessions().unwrap() {
        for event in archive.session_events(session.id).unwrap() {
            let event: Value = serde_json::from_str(&event).unwrap();
            let samples = match event["event"].as_str() {
                Some("sample") => vec![event["sample"].clone()],
                Some("archived") => event["samples"].as_array().unwrap().clone(),
                _ => Vec::new(),
            };
            ids.extend(
                samples
                    .iter()
                    .filter_map(|sample| sample["run_id"].as_str().map(str::to_string)),
            );
        }
    }
    ids
}

/// A run of `commit` on `testbed` with `label`, started at `started_at`.
fn imported(commit: &str, testbed: &str, label: &str, started_at: &str) -> RunRecord {
    RecordBuilder::new(TestKind::TcpStream)
        .commit(commit)
        .testbed(testbed)
        .label(label)
        .started_at(started_at)
        .finished_at(started_at)
        .samples(&[9.4e9, 9.41e9])
        .build()
}

/// A time `days` days before now, as records keep it.
fn days_ago(days: u64) -> String {
    let then = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    run_record::time::rfc3339_utc(then)
}

/// The prune of `selection` must succeed and remove exactly `expected`;
/// returns its text.
fn prune_removes(
    fixture: &Fixture,
    archive: &str,
    selection: &[&str],
    expected: &[&RunRecord],
) -> String {
    let before = stored_ids(fixture, archive);
    let mut args = vec!["archive", "prune"];
    args.extend(selection);
    let (code, text, stderr) = run(fixture, archive, &args);
    assert_eq!(code, 0, "{selection:?}: {stderr}");
    check_mailing_list_rules(&text);
    let after = stored_ids(fixture, archive);
    let gone: BTreeSet<String> = before.difference(&after).cloned().collect();
    let expected: BTreeSet<String> = expected.iter().map(|run| run.id.clone()).collect();
    assert_eq!(gone, expected, "{selection:?}: {text}");
    assert!(
        text.contains(&format!("removed {} of ", expected.len())),
        "{text}"
    );
    text
}

/// The whole story on the archive at `archive`.
fn prune_story(fixture: &Fixture, archive: &str) {
    let ids = line(fixture, 8, 5);
    let measure = noisy_records(&records_dir(fixture), 300);
    let (good, bad) = (ids[0].to_string(), ids[7].to_string());
    let start = [
        "bisect",
        "start",
        "--good",
        &good,
        "--bad",
        &bad,
        "--measure",
        &measure,
    ];
    let (code, _, stderr) = run(fixture, archive, &start);
    assert_eq!(code, 0, "{stderr}");
    let report = json(fixture, archive, &["bisect", "run", "--json"]);
    assert_eq!(report["result"]["commit"]["id"], ids[5].to_string());
    let cited = journaled_ids(archive);
    let bisection_runs = stored_ids(fixture, archive);
    assert!(!cited.is_empty() && cited.is_subset(&bisection_runs));

    let commit = |idx: usize| ids[idx].to_string();
    let old_a = imported(&commit(1), "lab-a", "base", "2025-03-01T00:00:00Z");
    let old_b = imported(&commit(2), "lab-b", "patched", "2025-03-02T00:00:00Z");
    let new_a = imported(&commit(6), "lab-a", "patched", &days_ago(1));
    let new_b = imported(&commit(7), "lab-b", "base", &days_ago(2));
    let elsewhere = imported("feedface", "lab-a", "base", "2025-04-01T00:00:00Z");
    let records = [&old_a, &old_b, &new_a, &new_b, &elsewhere];
    let file = fixture.repo.parent().unwrap().join("imported.jsonl");
    std::fs::write(&file, json_lines(&records.map(|run| run.clone()))).unwrap();
    let (code, _, stderr) = run(
        fixture,
        archive,
        &["archive", "import", file.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    let n_stored = bisection_runs.len() + records.len();

    // No selection is refused, as is a cutoff that does not read.
    let (code, _, stderr) = run(fixture, archive, &["archive", "prune"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("none was given"), "{stderr}");
    let (code, _, stderr) = run(
        fixture,
        archive,
        &["archive", "prune", "--older-than", "2026-02-30"],
    );
    assert_eq!(code, 2, "{stderr}");

    // A dry run of everything older than 90 days says what would go and
    // what is kept, and why, and changes nothing.
    let dry = json(
        fixture,
        archive,
        &[
            "archive",
            "prune",
            "--older-than",
            "90d",
            "--dry-run",
            "--json",
        ],
    );
    let would_go: BTreeSet<String> = [&old_a, &old_b, &elsewhere]
        .iter()
        .map(|run| run.id.clone())
        .collect();
    assert_eq!(ids_of(&dry["removed"]), would_go);
    assert!(ids_of(&dry["kept"]).is_superset(&cited));
    for kept in dry["kept"].as_array().unwrap() {
        assert_eq!(kept["cited_by"]["by"], "bisection", "{kept}");
    }
    let (code, text, stderr) = run(
        fixture,
        archive,
        &["archive", "prune", "--older-than", "90d", "--dry-run"],
    );
    assert_eq!(code, 0, "{stderr}");
    check_mailing_list_rules(&text);
    let n_selected = 3 + dry["kept"].as_array().unwrap().len();
    assert!(
        text.contains(&format!(
            "would remove 3 of {n_selected} runs selected; nothing was changed"
        )),
        "{text}"
    );
    assert!(
        text.contains("named by the journal of bisection 1"),
        "{text}"
    );
    assert_eq!(stored_ids(fixture, archive).len(), n_stored);

    // Each selection in turn, every prune keeping the bisection's runs.
    prune_removes(fixture, archive, &["--testbed", "lab-b"], &[&old_b, &new_b]);
    prune_removes(fixture, archive, &["--label", "patched"], &[&new_a]);
    let range = format!("{}..{}", commit(0), commit(7));
    let text = prune_removes(fixture, archive, &["--commits", &range], &[&old_a]);
    assert!(
        text.contains("that a bisection or a regression cites"),
        "{text}"
    );
    prune_removes(
        fixture,
        archive,
        &["--older-than", "2026-01-01", "--testbed", "lab-a"],
        &[&elsewhere],
    );
    prune_removes(fixture, archive, &["--older-than", "1h"], &[]);
    let left = stored_ids(fixture, archive);
    assert!(left.is_superset(&cited), "a cited run was removed");

    let (code, stdout, stderr) = run(fixture, archive, &["archive", "check"]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let (code, stdout, stderr) = run(fixture, archive, &["bisect", "report"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains(&commit(5)[..12]), "{stdout}");
}

#[test]
fn prune_by_each_selection_keeps_the_runs_a_bisection_cites() {
    let fixture = fixture();
    let archive = fixture.archive.to_str().unwrap().to_string();
    prune_story(&fixture, &archive);
    // The file keeps the space until asked to give it back.
    let (code, _, stderr) = run(
        &fixture,
        &archive,
        &["archive", "prune", "--older-than", "1h", "--vacuum"],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("the archive file went from"), "{stderr}");
}

#[test]
fn prune_on_postgresql_keeps_the_runs_a_bisection_cites() {
    let Some(cluster) = Cluster::shared_or_skip() else {
        return;
    };
    let fixture = fixture();
    let address = cluster.url(&cluster.database());
    prune_story(&fixture, &address);
    // A database's space is the server's: --vacuum is for a file.
    let (code, _, stderr) = run(
        &fixture,
        &address,
        &["archive", "prune", "--older-than", "1h", "--vacuum"],
    );
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("autovacuum"), "{stderr}");
}

#[test]
fn a_regression_keeps_the_runs_of_its_commits_and_a_dismissed_one_does_not() {
    let fixture = fixture();
    let archive = fixture.archive.to_str().unwrap().to_string();
    let runs = ["c0001", "c0002", "c0003"]
        .map(|commit| imported(commit, "lab-a", "base", "2025-03-01T00:00:00Z"));
    let file = fixture.repo.parent().unwrap().join("imported.jsonl");
    std::fs::write(&file, json_lines(&runs)).unwrap();
    let (code, _, stderr) = run(
        &fixture,
        &archive,
        &["archive", "import", file.to_str().unwrap()],
    );
    assert_eq!(code, 0, "{stderr}");
    // What a tracker writes: a regression it confirmed, and a suspicion
    // that measuring again did not confirm.
    let mut lab = Archive::open(&fixture.archive).unwrap();
    lab.open_regression("track", "c0001", "c0002", "{}")
        .unwrap();
    assert!(
        lab.dismiss_suspicion("track", "c0003", "c0004", "{}")
            .unwrap()
    );
    drop(lab);

    let text = prune_removes(&fixture, &archive, &["--older-than", "90d"], &[&runs[2]]);
    assert!(
        text.contains("2 of a commit named by lab regression 1"),
        "{text}"
    );
    assert_eq!(stored_ids(&fixture, &archive).len(), 2);
}
