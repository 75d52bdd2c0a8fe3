//! A bisection session as a new user meets it, end to end against real
//! git repositories: ends that do not differ, refused after a few repeats
//! with progress lines that say why more were taken and a refusal that
//! says what would help; the session found from outside the repository;
//! good and bad given the wrong way round.
//!
//! The measure command prints run records made here, with figures drawn
//! once from a seeded generator, so that the noise (2%) and what the
//! engine decides on it are the same on every machine.

use crate::bisect::{Fixture, fixture};
use bisect::sim::Rng;
use git2::Oid;
use run_record::record::Summary;
use run_record::spec::TestKind;
use serde_json::Value;
use std::path::Path;
use test_fixtures::git::GitRepo;
use test_fixtures::record::RecordBuilder;

/// Records of a TCP_STREAM run at 1 Gbit/s with 2% noise, one per file
/// `NNN.json` in `dir`, and a measure command that prints the next one at
/// each call (a counter outside the worktree) and, from commits holding a
/// file `slow`, a tenth of it from the files `slow-NNN.json`.
pub(crate) fn noisy_records(dir: &Path, n_records: usize) -> String {
    write_noisy_records(dir, n_records, 41);
    format!(
        "c={r}/counter; n=$(cat \"$c\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$c\"; \
         p=; if [ -f slow ]; then p=slow-; fi; cat \"{r}/$p$(printf %03d \"$n\").json\"",
        r = dir.display()
    )
}

/// The records of [`noisy_records`], drawn from `seed`: `NNN.json` and
/// `slow-NNN.json` (a tenth of it) in `dir`.
pub(crate) fn write_noisy_records(dir: &Path, n_records: usize, seed: u64) {
    let mut rng = Rng::new(seed);
    for record_idx in 0..n_records {
        let value = 1e9 * (1.0 + 0.02 * rng.normal());
        for (prefix, scale) in [("", 1.0), ("slow-", 0.1)] {
            let record = RecordBuilder::new(TestKind::TcpStream)
                .started_at("2025-01-01T00:00:00Z")
                .finished_at("2025-01-01T00:00:01Z")
                .testbed("test")
                .throughput(1.0, value * scale)
                .summary(Summary::default())
                .build();
            let path = dir.join(format!("{prefix}{record_idx:03}.json"));
            std::fs::write(path, record.to_canonical_bytes().unwrap()).unwrap();
        }
    }
}

/// A line of `n` commits; from `slow_from` on they hold a file `slow`.
pub(crate) fn line(fixture: &Fixture, n: usize, slow_from: usize) -> Vec<Oid> {
    let repo = GitRepo::open(&fixture.repo);
    let ids = repo.line(
        None,
        n,
        |idx| {
            let mut files = vec![("counter", if idx % 2 == 0 { "even\n" } else { "odd\n" })];
            if idx >= slow_from {
                files.push(("slow", "1\n"));
            }
            files
        },
        |idx| format!("commit {idx}"),
    );
    repo.checkout_main(*ids.last().unwrap());
    ids
}

pub(crate) fn records_dir(fixture: &Fixture) -> std::path::PathBuf {
    let dir = fixture.repo.parent().unwrap().join("records");
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn ends_equal_within_noise_are_refused_after_a_few_repeats() {
    let fixture = fixture();
    let ids = line(&fixture, 8, usize::MAX);
    let measure = noisy_records(&records_dir(&fixture), 200);
    let (good, bad) = (ids[0].to_string(), ids[7].to_string());
    let (code, _, stderr) = fixture.run(&[
        "bisect",
        "start",
        "--good",
        &good,
        "--bad",
        &bad,
        "--measure",
        &measure,
    ]);
    assert_eq!(code, 0, "{stderr}");
    let (code, text, stderr) = fixture.run(&["-v", "bisect", "run"]);
    assert_eq!(code, 4, "{stderr}");
    // The first five repeats of each end leave the difference unclear:
    // the progress says so, and how many more it may take at most.
    assert!(
        stderr.contains("after 5 repeats of each end their difference is unclear"),
        "{stderr}"
    );
    assert!(
        stderr.contains(": at most 95 more repeats of each"),
        "{stderr}"
    );
    // In a log each progress line starts with its time; what follows it
    // keeps to 80 columns.
    for line in stderr.lines().filter(|line| !line.contains(": sample ")) {
        let text = line
            .split_once(" netbisect: ")
            .map_or(line, |(_, text)| text);
        assert!(text.len() <= 80, "{line:?}");
    }
    // The refusal says what would help, not what was just done.
    let flowing = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flowing.contains("The evidence says they do not differ by"),
        "{text}"
    );
    assert!(
        flowing.contains("a longer test (-l), CPUs pinned (-T)"),
        "{text}"
    );
    assert!(!flowing.contains("--max-repeats"), "{text}");
    crate::check_mailing_list_rules(&text);
    let (_, json, _) = fixture.run(&["bisect", "report", "--json"]);
    let refusal: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(refusal["reason"], "futile", "{refusal}");
    assert_eq!(refusal["max_end_repeats"], 100);
    // A few repeats of each end, not the hundred of the cap.
    for end in ["good", "bad"] {
        let n_samples = refusal[end]["samples"].as_array().unwrap().len();
        assert!((5..=20).contains(&n_samples), "{end}: {refusal}");
    }
    let noise = refusal["noise_pct"].as_f64().unwrap();
    assert!(noise > 0.5 && noise < 5.0, "{refusal}");
}

/// Runs netbisect from `dir` with `args`: (exit code, stdout, stderr).
fn run_in(fixture: &Fixture, dir: &Path, args: &[&str]) -> (i32, String, String) {
    let output = fixture
        .netbisect()
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn the_session_is_found_from_outside_the_repository() {
    let fixture = fixture();
    let ids = line(&fixture, 8, 5);
    let measure = noisy_records(&records_dir(&fixture), 300);
    let outside = fixture.repo.parent().unwrap().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    let repo = fixture.repo.to_str().unwrap();
    let (good, bad) = (ids[0].to_string(), ids[7].to_string());
    let (code, _, stderr) = run_in(
        &fixture,
        &outside,
        &[
            "bisect",
            "start",
            "--repo",
            repo,
            "--good",
            &good,
            "--bad",
            &bad,
            "--measure",
            &measure,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    // The README's order: start with --repo, then a bare `bisect run`.
    let (code, stdout, stderr) = run_in(&fixture, &outside, &["bisect", "run", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(
        report["result"]["commit"]["id"],
        ids[5].to_string(),
        "{report}"
    );
    for args in [
        &["bisect", "status", "--json"][..],
        &["bisect", "log"],
        &["bisect", "report", "--json"],
    ] {
        let (code, stdout, stderr) = run_in(&fixture, &outside, args);
        assert_eq!(code, 0, "{args:?}: {stderr}");
        assert!(stdout.contains(&ids[5].to_string()), "{args:?}: {stdout}");
    }
    // A second bisection elsewhere: a bare command no longer knows which,
    // and says to name it with --repo.
    let second = fixture.repo.parent().unwrap().join("second");
    GitRepo::init(&second);
    let second_ids = GitRepo::open(&second).line(
        None,
        3,
        |idx| vec![("n", if idx == 0 { "0\n" } else { "1\n" })],
        |idx| format!("second {idx}"),
    );
    let (first, last) = (second_ids[0].to_string(), second_ids[2].to_string());
    let second_path = second.to_str().unwrap();
    let (code, _, stderr) = run_in(
        &fixture,
        &outside,
        &[
            "bisect",
            "start",
            "--repo",
            second_path,
            "--good",
            &first,
            "--bad",
            &last,
            "--measure",
            &measure,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run_in(&fixture, &outside, &["bisect", "status"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("2 bisections are in progress"), "{stderr}");
    assert!(stderr.contains("--repo"), "{stderr}");
    // Inside a repository, its own session is the one.
    let (code, stdout, stderr) = run_in(&fixture, &second, &["bisect", "status", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let status: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(status["bad"]["id"], last.as_str(), "{status}");
    // Reset by name, then the one left is found from outside again.
    let (code, _, stderr) = run_in(
        &fixture,
        &outside,
        &["bisect", "reset", "--repo", second_path],
    );
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run_in(&fixture, &outside, &["bisect", "reset"]);
    assert_eq!(code, 0, "{stderr}");
    let (code, _, stderr) = run_in(&fixture, &outside, &["bisect", "status"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no bisection in progress"), "{stderr}");
}

#[test]
fn good_and_bad_swapped_are_named_as_such() {
    let fixture = fixture();
    let ids = line(&fixture, 4, 2);
    let (newer, older) = (ids[3].to_string(), ids[0].to_string());
    let (code, _, stderr) = fixture.run(&[
        "bisect",
        "start",
        "--good",
        &newer,
        "--bad",
        &older,
        "--measure",
        "true",
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("are good and bad swapped?"), "{stderr}");
    assert!(!stderr.contains("merge base"), "{stderr}");
}

#[test]
fn verdict_speaks_in_the_units_of_the_tool_and_says_why() {
    let fixture = fixture();
    let records = records_dir(&fixture);
    let measure = noisy_records(&records, 20);
    // Baselines: eight runs of each side, the good at 1 Gbit/s, the bad a
    // tenth of it.
    let mut baselines = Vec::new();
    for record_idx in 10..18 {
        for (prefix, commit) in [("", "aaaa1111"), ("slow-", "bbbb2222")] {
            let path = records.join(format!("{prefix}{record_idx:03}.json"));
            let mut record =
                run_record::record::RunRecord::from_slice(&std::fs::read(path).unwrap()).unwrap();
            record.subject.commit = Some(commit.to_string());
            record.seal().unwrap();
            baselines.push(record);
        }
    }
    crate::compare::import(&fixture.archive, &baselines);
    let (code, text, stderr) = run_in(
        &fixture,
        &records,
        &[
            "verdict",
            "--good-run",
            "aaaa1111",
            "--bad-run",
            "bbbb2222",
            "--measure",
            &measure,
        ],
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(
        text.starts_with("verdict: old (like the good side)\n"),
        "{text}"
    );
    assert!(text.contains(" 10^6bits/s over "), "{text}");
    assert!(!text.contains("e+") && !text.contains("e9"), "{text}");
    let flowing = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flowing.contains("are like the good side"), "{text}");
    assert!(flowing.contains("log-likelihood ratio"), "{text}");
    for line in text.lines() {
        assert!(line.len() <= 80, "{line:?}");
    }
}

#[test]
fn commands_that_read_never_create_the_default_archive() {
    let home = tempfile::tempdir().unwrap();
    let default = home.path().join(".local/share/netbisect/archive.db");
    let repo_dir = home.path().join("repo");
    let repo = GitRepo::init(&repo_dir);
    repo.commit_files(&[("a", "1")], &[], "first");
    let run = |args: &[&str]| {
        let output = assert_cmd::Command::new(env!("CARGO_BIN_EXE_netbisect"))
            .args(args)
            .current_dir(&repo_dir)
            .env("HOME", home.path())
            .env_remove("XDG_DATA_HOME")
            .env_remove("NETBISECT_ARCHIVE")
            .env_remove("NETBISECT_TEMPLATE_DIR")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        (output.status.code(), stderr)
    };
    let missing = format!("no archive at {}", default.display());
    for args in [
        &["bisect", "status"][..],
        &["bisect", "log"],
        &["bisect", "report"],
        &[
            "verdict",
            "--good-run",
            "cccc1111",
            "--bad-run",
            "dddd2222",
            "--measure",
            "true",
        ],
    ] {
        let (code, stderr) = run(args);
        // verdict, made for `git bisect run`, aborts it on a usage error.
        let usage = if args[0] == "verdict" { 128 } else { 2 };
        assert_eq!(code, Some(usage), "{args:?}: {stderr}");
        assert!(stderr.contains(&missing), "{args:?}: {stderr}");
        assert!(!default.exists(), "{args:?} created {}", default.display());
    }
    // plan learns nothing from an archive that is not there and goes on
    // with the figures it is given.
    let (code, stderr) = run(&[
        "plan",
        "--test",
        "-t TCP_RR",
        "--effect",
        "5",
        "--cv",
        "2",
        "--seconds",
        "10",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let (code, stderr) = run(&["plan", "--test", "-t TCP_RR", "--effect", "5"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--cv"), "{stderr}");
    assert!(!home.path().join(".local").exists());
}
