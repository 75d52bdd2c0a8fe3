//! `netbisect compare` end to end, on archives built in temp dirs from
//! generated run records with chosen samples.

use assert_cmd::Command;
use run_record::record::RunRecord;
use run_record::spec::TestKind;
use serde::Deserialize;
use std::path::Path;
use test_fixtures::record::{RecordBuilder, json_lines};

pub const BASE_COMMIT: &str = "1a2b3c4d5e6f708192a3b4c5d6e7f80912345678";
pub const PATCHED_COMMIT: &str = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432";

pub use crate::netbisect_with as netbisect;

/// Deterministic noise: `n` values around `level`, within `+-rel`
/// (splitmix64, so that nearby seeds give unrelated values).
pub fn around(level: f64, rel: f64, n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed;
    (0..n)
        .map(|_| {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut mixed = state;
            mixed = (mixed ^ (mixed >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            mixed = (mixed ^ (mixed >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            mixed ^= mixed >> 31;
            let unit = (mixed >> 11) as f64 / (1u64 << 53) as f64;
            level * (1.0 + rel * (2.0 * unit - 1.0))
        })
        .collect()
}

/// What a generated run is made of.
pub struct RunOf<'a> {
    pub test: TestKind,
    pub commit: &'a str,
    pub label: Option<&'a str>,
    pub started_at: &'a str,
    /// Throughput (stream tests) or transaction rate, one per iteration.
    pub samples: &'a [f64],
    /// Value of net.ipv4.tcp_rmem on the local end.
    pub tcp_rmem: &'a str,
}

impl<'a> RunOf<'a> {
    pub fn stream(commit: &'a str, started_at: &'a str, samples: &'a [f64]) -> RunOf<'a> {
        RunOf {
            test: TestKind::TcpStream,
            commit,
            label: None,
            started_at,
            samples,
            tcp_rmem: "4096 131072 6291456",
        }
    }

    /// A sealed record.
    pub fn record(&self) -> RunRecord {
        let mut builder = RecordBuilder::new(self.test)
            .started_at(self.started_at)
            .finished_at(self.started_at)
            .commit(self.commit)
            .local_sysctl("net.ipv4.tcp_rmem", self.tcp_rmem)
            .samples(self.samples);
        if let Some(label) = self.label {
            builder = builder.label(label);
        }
        builder.build()
    }
}

/// Imports `records` into `archive` with `netbisect archive import`.
pub fn import(archive: &Path, records: &[RunRecord]) {
    let file = archive.with_extension(format!("import-{}.jsonl", records.len()));
    std::fs::write(&file, json_lines(records)).unwrap();
    stdout_of(netbisect(archive).args(["archive", "import"]).arg(&file));
}

pub fn stdout_of(command: &mut Command) -> String {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Runs a command expected to fail with `code`; returns its stderr.
pub fn stderr_of_failure(command: &mut Command, code: i32) -> String {
    let output = command.output().unwrap();
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    assert!(output.stdout.is_empty());
    stderr
}

/// The parts of `compare --json` these tests read, declared here so that
/// a change of the format breaks them.
#[derive(Debug, Deserialize)]
struct Comparison {
    first_label: String,
    second_label: String,
    min_samples: usize,
    groups: Vec<Group>,
}

#[derive(Debug, Deserialize)]
struct Group {
    n_runs_first: usize,
    n_runs_second: usize,
    env_differences: Vec<EnvChange>,
    rows: Vec<Row>,
}

#[derive(Debug, Deserialize)]
struct EnvChange {
    key: String,
    first: Option<String>,
    second: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Row {
    metric: String,
    first: Option<Side>,
    second: Option<Side>,
    change_pct: Option<f64>,
    verdict: String,
    samples_to_decide: Option<usize>,
    more_runs_per_side: Option<usize>,
    direction: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Side {
    n_samples: usize,
}

fn compare_json(archive: &Path, args: &[&str]) -> Comparison {
    let text = stdout_of(netbisect(archive).arg("compare").args(args).arg("--json"));
    serde_json::from_str(&text).unwrap()
}

/// A base commit with one run of 8 iterations and a patched commit with
/// two runs of 4, throughput 10% higher.
fn shifted_archive(dir: &Path) -> std::path::PathBuf {
    let db = dir.join("archive.db");
    let base = around(9.4e9, 0.005, 8, 1);
    let patched = around(9.4e9 * 1.1, 0.005, 8, 2);
    let mut records = vec![
        RunOf {
            label: Some("base"),
            ..RunOf::stream(BASE_COMMIT, "2026-03-01T09:00:00Z", &base)
        }
        .record(),
    ];
    for (half, started_at) in [(0, "2026-03-02T09:00:00Z"), (4, "2026-03-02T10:00:00Z")] {
        records.push(
            RunOf {
                label: Some("patched"),
                ..RunOf::stream(PATCHED_COMMIT, started_at, &patched[half..half + 4])
            }
            .record(),
        );
    }
    import(&db, &records);
    db
}

#[test]
fn a_ten_percent_shift_is_significant_with_its_sign() {
    let dir = tempfile::tempdir().unwrap();
    let db = shifted_archive(dir.path());

    let text =
        stdout_of(netbisect(&db).args(["compare", "1a2b3c4d", "patched", "--layout", "stats"]));
    insta::assert_snapshot!("compare_ten_percent_gain", text);

    let comparison = compare_json(&db, &["1a2b3c4d", "patched"]);
    assert_eq!(comparison.groups.len(), 1);
    let group = &comparison.groups[0];
    assert_eq!((group.n_runs_first, group.n_runs_second), (1, 2));
    let row = &group.rows[0];
    assert_eq!(row.metric, "throughput_bps");
    assert_eq!(row.verdict, "significant");
    assert_eq!(row.direction.as_deref(), Some("improvement"));
    let change_pct = row.change_pct.unwrap();
    assert!((9.0..11.0).contains(&change_pct), "{change_pct}");
    assert_eq!(row.first.as_ref().unwrap().n_samples, 8);
    assert_eq!(row.second.as_ref().unwrap().n_samples, 8);

    // The other way round it is a regression, marked "!".
    let comparison = compare_json(&db, &["patched", "1a2b3c4d"]);
    let row = &comparison.groups[0].rows[0];
    assert_eq!(row.verdict, "significant");
    assert_eq!(row.direction.as_deref(), Some("regression"));
    assert!(row.change_pct.unwrap() < -8.0);
    let text =
        stdout_of(netbisect(&db).args(["compare", "patched", "1a2b3c4d", "--layout", "stats"]));
    let row_line = text
        .lines()
        .find(|line| line.starts_with("throughput"))
        .unwrap();
    assert!(
        row_line.contains("-9.") && row_line.contains(" ! "),
        "{text}"
    );
}

#[test]
fn the_same_distribution_is_within_noise() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let first = around(9.4e9, 0.01, 8, 3);
    let second = around(9.4e9, 0.01, 8, 4);
    import(
        &db,
        &[
            RunOf::stream(BASE_COMMIT, "2026-03-01T09:00:00Z", &first).record(),
            RunOf::stream(PATCHED_COMMIT, "2026-03-02T09:00:00Z", &second).record(),
        ],
    );
    let comparison = compare_json(&db, &[&BASE_COMMIT[..7], &PATCHED_COMMIT[..7]]);
    assert_eq!(comparison.groups[0].rows[0].verdict, "not_significant");
    let text = stdout_of(netbisect(&db).args([
        "compare",
        &BASE_COMMIT[..7],
        &PATCHED_COMMIT[..7],
        "--layout",
        "stats",
    ]));
    let row_line = text
        .lines()
        .find(|line| line.starts_with("throughput"))
        .unwrap();
    assert!(row_line.contains("% ~ "), "{text}");
    assert!(!text.contains("Warning"), "{text}");
}

#[test]
fn two_samples_a_side_are_too_few_and_it_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let first = [9.4e9, 9.41e9];
    let second = [10.4e9, 10.41e9];
    import(
        &db,
        &[
            RunOf::stream(BASE_COMMIT, "2026-03-01T09:00:00Z", &first).record(),
            RunOf::stream(PATCHED_COMMIT, "2026-03-02T09:00:00Z", &second).record(),
        ],
    );
    let comparison = compare_json(&db, &[BASE_COMMIT, PATCHED_COMMIT]);
    assert_eq!(comparison.min_samples, 4);
    assert_eq!(comparison.groups[0].rows[0].verdict, "need_samples");
    let text = stdout_of(netbisect(&db).args([
        "compare",
        BASE_COMMIT,
        PATCHED_COMMIT,
        "--layout",
        "stats",
    ]));
    assert!(
        text.contains("too few samples for any verdict: need >= 4 samples per side"),
        "{text}"
    );
    // A stricter alpha needs more samples.
    let comparison = compare_json(&db, &[BASE_COMMIT, PATCHED_COMMIT, "--alpha", "0.01"]);
    assert_eq!(comparison.min_samples, 5);
}

#[test]
fn too_few_samples_says_how_many_more_runs_would_decide() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    // One run of two iterations a side, 1.5% apart at about 1.5% noise.
    import(
        &db,
        &[
            RunOf::stream(BASE_COMMIT, "2026-03-01T09:00:00Z", &[9.3e9, 9.5e9]).record(),
            RunOf::stream(PATCHED_COMMIT, "2026-03-02T09:00:00Z", &[9.4e9, 9.6e9]).record(),
        ],
    );
    let args = [BASE_COMMIT, PATCHED_COMMIT, "--min-effect", "1"];
    let comparison = compare_json(&db, &args);
    let row = &comparison.groups[0].rows[0];
    assert_eq!(row.verdict, "need_samples");
    // 1% of 9.4e9 over the pooled 1.414e8 is d = 0.6647; statsmodels'
    // NormalIndPower().solve_power(0.6647, alpha=0.05, power=0.8) is
    // 35.53, plus 1.96^2/4 is 36.49 for the t test, over 3/pi is 38.2:
    // 39 samples a side, 37 more, 19 runs of two.
    assert_eq!(row.samples_to_decide, Some(39));
    assert_eq!(row.more_runs_per_side, Some(19));
    let mut text_args = vec!["compare", "--layout", "stats"];
    text_args.extend(args);
    let text = stdout_of(netbisect(&db).args(&text_args));
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        joined.contains(
            "? too few samples for any verdict: need >= 4 samples per side \
             at the noise seen, 19 more runs a side would call a change of 1.0% at \
             alpha 0.05 (with 80% power)"
        ),
        "{text}"
    );
}

#[test]
fn a_sysctl_that_differs_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let first = around(9.4e9, 0.01, 5, 5);
    let second = around(9.4e9, 0.01, 5, 6);
    import(
        &db,
        &[
            RunOf::stream(BASE_COMMIT, "2026-03-01T09:00:00Z", &first).record(),
            RunOf {
                tcp_rmem: "4096 87380 6291456",
                ..RunOf::stream(PATCHED_COMMIT, "2026-03-02T09:00:00Z", &second)
            }
            .record(),
        ],
    );
    let text = stdout_of(netbisect(&db).args([
        "compare",
        BASE_COMMIT,
        PATCHED_COMMIT,
        "--layout",
        "stats",
    ]));
    let warning = text
        .split_once("Warning: the environments differ (base -> patched):\n")
        .map(|(_, rest)| rest.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_default();
    assert!(
        warning.starts_with(
            "local sysctl.net.ipv4.tcp_rmem: 4096 131072 6291456 -> 4096 87380 6291456 "
        ),
        "{text}"
    );
    let output = netbisect(&db)
        .args(["compare", BASE_COMMIT, PATCHED_COMMIT, "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains("warning: the environments of the sides differ in 1 group"),
        "{stderr}"
    );
    let comparison: Comparison = serde_json::from_slice(&output.stdout).unwrap();
    let difference = &comparison.groups[0].env_differences[0];
    assert_eq!(difference.key, "sysctl.net.ipv4.tcp_rmem");
    assert_eq!(difference.first.as_deref(), Some("4096 131072 6291456"));
    assert_eq!(difference.second.as_deref(), Some("4096 87380 6291456"));
}

#[test]
fn selectors_name_runs_commits_and_labels() {
    let dir = tempfile::tempdir().unwrap();
    let db = shifted_archive(dir.path());
    // A label that is also a prefix of the patched commit.
    let other = around(9.0e9, 0.005, 4, 7);
    let ambiguous = RunOf {
        label: Some("9f8e7d"),
        ..RunOf::stream("0000000000aa", "2026-03-03T09:00:00Z", &other)
    }
    .record();
    let rr = RunOf {
        test: TestKind::TcpRr,
        ..RunOf::stream(BASE_COMMIT, "2026-03-03T10:00:00Z", &other)
    }
    .record();
    import(&db, &[ambiguous.clone(), rr]);
    let ids: Vec<String> =
        stdout_of(netbisect(&db).args(["archive", "export", "--label", "patched"]))
            .lines()
            .map(|line| RunRecord::from_slice(line.as_bytes()).unwrap().id)
            .collect();

    let sides = |args: &[&str]| {
        let comparison = compare_json(&db, args);
        let runs = comparison
            .groups
            .iter()
            .map(|group| (group.n_runs_first, group.n_runs_second))
            .collect::<Vec<_>>();
        (comparison.first_label, comparison.second_label, runs)
    };
    // A run id prefix names one run; a commit prefix all of its runs (one
    // TCP_STREAM, one TCP_RR); a label all runs with it.
    let (first, second, runs) = sides(&[&ids[1][..8], "1a2b3c4"]);
    assert_eq!(
        first,
        format!(
            "{} (run {} of commit 9f8e7d6c5b4a)",
            &ids[1][..8],
            &ids[1][..12]
        )
    );
    assert_eq!(second, "1a2b3c4 (commit 1a2b3c4d5e6f, 2 runs)");
    assert_eq!(runs, [(1, 1)]);
    let (first, _, runs) = sides(&["patched", "base"]);
    assert_eq!(first, "patched (label, 2 runs of commit 9f8e7d6c5b4a)");
    assert_eq!(runs, [(2, 1)]);

    // "9f8e7d" is a commit prefix first, and a label too: a warning says
    // so, and the forced forms choose.
    let output = netbisect(&db)
        .args(["compare", "9f8e7d", "base", "--json"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.contains(
            "warning: '9f8e7d' is taken as a commit, but also matches a label (1 run); \
             write label:9f8e7d for that"
        ),
        "{stderr}"
    );
    let (first, _, runs) = sides(&["commit:9f8e7d", "base"]);
    assert_eq!(first, "commit:9f8e7d (commit 9f8e7d6c5b4a, 2 runs)");
    assert_eq!(runs, [(2, 1)]);
    let (first, _, runs) = sides(&["label:9f8e7d", "base"]);
    assert_eq!(first, "label:9f8e7d (label, 1 run of commit 0000000000aa)");
    assert_eq!(runs, [(1, 1)]);
    let (first, _, runs) = sides(&[&format!("run:{}", &ambiguous.id[..4]), "base"]);
    assert_eq!(
        first,
        format!(
            "run:{} (run {} of commit 0000000000aa)",
            &ambiguous.id[..4],
            &ambiguous.id[..12]
        )
    );
    assert_eq!(runs, [(1, 1)]);

    // Filters apply to both sides.
    let (_, second, runs) = sides(&["patched", BASE_COMMIT, "--test", "TCP_STREAM"]);
    assert_eq!(
        second,
        format!("{BASE_COMMIT} (commit 1a2b3c4d5e6f, 1 run)")
    );
    assert_eq!(runs, [(2, 1)]);
}

#[test]
fn a_selector_that_matches_nothing_exits_2_and_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = shifted_archive(dir.path());
    let stderr = stderr_of_failure(netbisect(&db).args(["compare", "base", "v6.9"]), 2);
    assert!(
        stderr.contains("'v6.9' matches no archived run as a run id, commit or label"),
        "{stderr}"
    );
    let stderr = stderr_of_failure(netbisect(&db).args(["compare", "run:1a2b3c4d", "base"]), 2);
    assert!(
        stderr.contains("'run:1a2b3c4d' matches no archived run as a run"),
        "{stderr}"
    );
    let stderr = stderr_of_failure(
        netbisect(&db).args(["compare", "base", "patched", "--test", "UDP_RR"]),
        2,
    );
    assert!(
        stderr.contains(
            "'base' matches no archived run as a run id, commit or label with --test UDP_RR"
        ),
        "{stderr}"
    );
    let stderr = stderr_of_failure(
        netbisect(&db).args(["compare", "base", "patched", "--alpha", "1.5"]),
        2,
    );
    assert!(stderr.contains("alpha must be in (0, 1)"), "{stderr}");
    let stderr = stderr_of_failure(netbisect(&db).args(["compare", "label:", "patched"]), 2);
    assert!(stderr.contains("empty selector 'label:'"), "{stderr}");
}

#[test]
fn a_prefix_of_several_commits_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("archive.db");
    let samples = around(9.4e9, 0.01, 4, 8);
    import(
        &db,
        &[
            RunOf::stream("abc1230000", "2026-03-01T09:00:00Z", &samples).record(),
            RunOf::stream("abc4560000", "2026-03-02T09:00:00Z", &samples).record(),
        ],
    );
    let stderr = stderr_of_failure(netbisect(&db).args(["compare", "abc", "abc123"]), 2);
    assert!(
        stderr.contains(
            "commit prefix 'abc' matches runs of 2 commits (abc1230000, abc4560000); \
             give more digits"
        ),
        "{stderr}"
    );
}

#[test]
fn help_documents_selectors_and_the_exit_code_in_80_columns() {
    for command in ["compare", "history"] {
        let output = Command::cargo_bin("netbisect")
            .unwrap()
            .args([command, "--help"])
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(0));
        let help = String::from_utf8(output.stdout).unwrap();
        for line in help.lines() {
            assert!(line.len() <= 80 && line.is_ascii(), "{line:?}");
        }
        let expected = if command == "compare" {
            "it exits with 0 whatever it finds"
        } else {
            "narrow the selection with --spec-key"
        };
        assert!(help.contains(expected), "{help}");
        // --check and the code it exits with, for scripts and CI.
        assert!(
            help.contains("--check") && help.contains("exits with 1"),
            "{help}"
        );
    }
}

/// `compare` with `args`: its exit code, stdout and stderr.
fn compare_output(archive: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = netbisect(archive)
        .arg("compare")
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
fn check_exits_1_when_b_is_significantly_worse_by_the_effect() {
    let dir = tempfile::tempdir().unwrap();
    let db = shifted_archive(dir.path());

    // B 10% better than A: nothing worse, exit 0.
    let (code, stdout, stderr) = compare_output(&db, &["--check", "1a2b3c4d", "patched"]);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
    let plain = stdout_of(netbisect(&db).args(["compare", "1a2b3c4d", "patched"]));
    assert_eq!(stdout, plain);

    // B 9% worse than A: exit 1, the table as without --check, and
    // stderr naming the metric and its group.
    let (code, stdout, stderr) = compare_output(&db, &["--check", "patched", "1a2b3c4d"]);
    assert_eq!(code, Some(1), "{stderr}");
    let plain = stdout_of(netbisect(&db).args(["compare", "patched", "1a2b3c4d"]));
    assert_eq!(stdout, plain);
    assert!(
        stderr.contains("compare --check: 1a2b3c4d is worse than patched in 1 metric:")
            && stderr.contains("throughput_bps -9.")
            && stderr.contains("TCP_STREAM"),
        "{stderr}"
    );
    // Without --check compare still reports and does not judge.
    let (code, _, _) = compare_output(&db, &["patched", "1a2b3c4d"]);
    assert_eq!(code, Some(0));

    // An effect the change does not reach passes; one it reaches fails,
    // under either name of the option; --json keeps its document.
    for (effect, expected) in [("15", 0), ("5", 1)] {
        for option in ["--min-effect", "--effect"] {
            let (code, stdout, stderr) = compare_output(
                &db,
                &["--check", option, effect, "--json", "patched", "1a2b3c4d"],
            );
            assert_eq!(code, Some(expected), "{option} {effect}: {stderr}");
            let comparison: Comparison = serde_json::from_str(&stdout).unwrap();
            let verdict = &comparison.groups[0].rows[0].verdict;
            let significant = verdict == "significant";
            assert_eq!(significant, expected == 1, "{option} {effect}: {verdict}");
        }
    }

    // A usage error is still 2, not a verdict.
    stderr_of_failure(
        netbisect(&db).args(["compare", "--check", "patched", "nothing-like-this"]),
        2,
    );
}
