//! `netbisect bisect` and `netbisect verdict` end to end: real git
//! repositories built in temp dirs, a build step that turns a file of the
//! commit into the remote socket size of a TCP_STREAM test, and real
//! sockets over loopback that run some fifty times slower from the
//! culprit on.

use assert_cmd::Command;
use git2::{Oid, Repository};
use run_record::record::RunRecord;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use test_fixtures::git::GitRepo;

const BINARY: &str = env!("CARGO_BIN_EXE_netbisect");

/// Copies `config/socket_size` to the build output; fails where the commit
/// has a file named `broken`.
const BUILD_SCRIPT: &str =
    "mkdir -p out && test ! -f broken && cp config/socket_size out/socket_size\n";

pub struct Fixture {
    _dir: tempfile::TempDir,
    pub repo: PathBuf,
    pub archive: PathBuf,
}

pub fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let archive = dir.path().join("archive.db");
    GitRepo::init(&repo);
    Fixture {
        _dir: dir,
        repo,
        archive,
    }
}

impl Fixture {
    pub fn netbisect(&self) -> Command {
        let mut command = crate::netbisect_with(&self.archive);
        command.current_dir(&self.repo);
        command
    }

    /// Runs netbisect with `args`; returns (exit code, stdout, stderr).
    pub fn run(&self, args: &[&str]) -> (i32, String, String) {
        let output = self.netbisect().args(args).output().unwrap();
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    pub fn json(&self, args: &[&str]) -> Value {
        let (code, stdout, stderr) = self.run(args);
        assert!(code == 0 || code == 4, "{args:?}: exit {code}: {stderr}");
        serde_json::from_str(&stdout).unwrap_or_else(|err| panic!("{err}: {stdout}"))
    }

    fn start(&self, good: Oid, bad: Oid, extra: &[&str]) {
        let command = measure_command("");
        self.start_measuring(&good.to_string(), &bad.to_string(), &command, extra);
    }

    /// `bisect start` from `good` to `bad` with `sh build.sh`, `command`
    /// as the measure, at most 20 repeats, and `extra`; must succeed.
    pub fn start_measuring(&self, good: &str, bad: &str, command: &str, extra: &[&str]) {
        let mut args = vec![
            "bisect",
            "start",
            "--good",
            good,
            "--bad",
            bad,
            "--build",
            "sh build.sh",
            "--measure",
            command,
            "--max-repeats",
            "20",
        ];
        args.extend_from_slice(extra);
        let (code, _, stderr) = self.run(&args);
        assert_eq!(code, 0, "{stderr}");
    }

    /// Archived runs per commit.
    pub fn runs_per_commit(&self) -> BTreeMap<String, u32> {
        let list = self.json(&["archive", "list", "--json"]);
        let mut counts = BTreeMap::new();
        for run in list.as_array().unwrap() {
            if let Some(commit) = run["commit"].as_str() {
                *counts.entry(commit.to_string()).or_default() += 1;
            }
        }
        counts
    }
}

/// A TCP_STREAM test of a tenth of a second with the built remote socket
/// size;
/// `prefix` runs first (shell).
pub fn measure_command(prefix: &str) -> String {
    format!(
        "{prefix}'{BINARY}' bench -t TCP_STREAM -l 0.1 -S \"$(cat out/socket_size)\" --json \
         --no-archive --commit \"$NETBISECT_COMMIT\""
    )
}

/// The receive socket size asked of the far end: a 2280-byte window
/// caps loopback TCP some fifty-fold below a 1 MB one. Unlike a slow send
/// size (64-byte writes), it leaves nothing to pile up in the buffers
/// that a receiver which starts late on a loaded machine would then
/// count in a short time, reading twenty times as fast.
fn socket_size(slow: bool) -> &'static str {
    if slow { "2280\n" } else { "1048576\n" }
}

/// A line of `n` commits; from `culprit` on the remote socket is 2280
/// bytes.
/// `extra(idx)` adds files to commit `idx`.
pub fn linear(
    repo: &GitRepo,
    n: usize,
    culprit: usize,
    extra: &dyn Fn(usize) -> Vec<(&'static str, &'static str)>,
) -> Vec<Oid> {
    let ids = repo.line(
        None,
        n,
        |idx| {
            let mut files = vec![
                ("config/socket_size", socket_size(idx >= culprit)),
                ("build.sh", BUILD_SCRIPT),
                (".gitignore", "out\n"),
                ("counter", if idx % 2 == 0 { "even\n" } else { "odd\n" }),
            ];
            // Marker files (`broken`, `hang`) exist only where `extra`
            // names them.
            files.extend(extra(idx));
            files
        },
        |idx| format!("commit {idx}"),
    );
    repo.checkout_main(*ids.last().unwrap());
    ids
}

fn first_bad(report: &Value) -> &str {
    assert_eq!(report["result"]["kind"], "first_bad", "{report}");
    report["result"]["commit"]["id"].as_str().unwrap()
}

#[test]
fn a_linear_history_is_bisected_to_the_commit_that_slowed_loopback() {
    let started = Instant::now();
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 30, 19, &|_| Vec::new());
    let head_before = repo.head().unwrap().target().unwrap();
    fixture.start(ids[0], ids[29], &[]);

    // One bisection per repository at a time.
    let command = measure_command("");
    let (code, _, stderr) = fixture.run(&[
        "bisect",
        "start",
        "--good",
        "HEAD~3",
        "--bad",
        "HEAD",
        "--measure",
        &command,
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("already in progress"), "{stderr}");

    let report = fixture.json(&["bisect", "run", "--json"]);
    assert_eq!(first_bad(&report), ids[19].to_string());
    let result = &report["result"];
    assert_eq!(result["commit"]["subject"], "commit 19");
    assert_eq!(result["commit"]["author"], "Ann Tester <ann@example.org>");
    assert_eq!(result["parent"]["id"], ids[18].to_string());
    assert_eq!(result["confirmed"], true);
    assert!(
        result["regression"]["diff_pct"].as_f64().unwrap() < -50.0,
        "{result}"
    );
    assert!(
        result["confidence_pct"].as_f64().unwrap() > 90.0,
        "{result}"
    );

    // The text report, the log and the status read the journal.
    let (code, text, _) = fixture.run(&["bisect", "report"]);
    assert_eq!(code, 0);
    let id12 = &ids[19].to_string()[..12];
    assert!(text.starts_with("TCP_STREAM 10^6bits/s -"), "{text}");
    let flowing = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flowing.contains(&format!("at {id12} (\"commit 19\")")),
        "{text}"
    );
    assert!(
        text.contains(&format!("  Fixes: {id12} (\"commit 19\")")),
        "{text}"
    );
    assert!(text.contains("netbisect bisect run"), "{text}");
    assert!(
        text.lines()
            .all(|line| line.is_ascii() && !line.ends_with(' '))
    );
    let (_, log, _) = fixture.run(&["bisect", "log"]);
    assert!(log.starts_with("git bisect start\n"), "{log}");
    assert!(
        log.contains(&format!("git bisect good {}", ids[0])),
        "{log}"
    );
    assert!(
        log.contains(&format!("# first bad commit: [{}] commit 19", ids[19])),
        "{log}"
    );
    let status = fixture.json(&["bisect", "status", "--json"]);
    assert_eq!(status["state"], "first_bad");

    // The user's checkout did not move and has no changes; the worktree
    // lives under the git directory until reset.
    assert_eq!(repo.head().unwrap().target().unwrap(), head_before);
    assert!(repo.statuses(None).unwrap().is_empty());
    assert!(!fixture.repo.join("out").exists());
    let worktree = fixture.repo.join(".git/netbisect/netbisect");
    assert!(worktree.join("out/socket_size").exists());
    let n_runs: u32 = fixture.runs_per_commit().values().sum();
    assert_eq!(n_runs, report["n_measurements"].as_u64().unwrap() as u32);

    let (code, _, stderr) = fixture.run(&["bisect", "reset"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!worktree.exists());
    let (code, _, stderr) = fixture.run(&["bisect", "status"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no bisection in progress"), "{stderr}");
    // The runs stay archived, and a new bisection of the range reuses
    // them: only the first run of the good end is fresh before the steps.
    let n_after_reset: u32 = fixture.runs_per_commit().values().sum();
    assert_eq!(n_after_reset, n_runs);
    fixture.start(ids[0], ids[29], &[]);
    let status = fixture.json(&["bisect", "status", "--json"]);
    assert_eq!(status["state"], "running");
    eprintln!("linear bisection: {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn a_merge_heavy_history_is_bisected_into_a_side_branch() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let base = repo.commit_files(
        &[
            ("config/socket_size", socket_size(false)),
            ("build.sh", BUILD_SCRIPT),
            (".gitignore", "out\n"),
        ],
        &[],
        "base",
    );
    let mut main = base;
    let mut culprit = None;
    for topic in 0..4 {
        let mut side = main;
        for idx in 0..2 {
            let name = format!("topic{topic}-{idx}");
            let is_culprit = topic == 2 && idx == 1;
            let mut files = vec![(name.as_str(), "x")];
            if is_culprit {
                files.push(("config/socket_size", socket_size(true)));
            }
            side = repo.commit_files(&files, &[side], &format!("topic {topic} patch {idx}"));
            if is_culprit {
                culprit = Some(side);
            }
        }
        let main_file = format!("main{topic}");
        main = repo.commit_files(
            &[(main_file.as_str(), "y")],
            &[main],
            &format!("main work {topic}"),
        );
        let slow = culprit.is_some();
        main = repo.commit_files(
            &[("config/socket_size", socket_size(slow))],
            &[main, side],
            &format!("merge topic {topic}"),
        );
    }
    repo.checkout_main(main);
    fixture.start(base, main, &[]);
    let report = fixture.json(&["bisect", "run", "--json"]);
    assert_eq!(first_bad(&report), culprit.unwrap().to_string());
}

#[test]
fn unbuildable_commits_around_the_culprit_are_skips() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    // The culprit is 15; its parent 14 and its child 16 do not build.
    let ids = linear(&repo, 24, 15, &|idx| {
        if idx == 14 || idx == 16 {
            vec![("broken", "1\n")]
        } else {
            Vec::new()
        }
    });
    fixture.start(ids[0], ids[23], &[]);
    let report = fixture.json(&["bisect", "run", "--json"]);
    let steps = report["steps"].as_array().unwrap();
    assert!(
        steps.iter().any(|step| step["verdict"] == "skip"
            && step["skip_reason"]
                .as_str()
                .unwrap_or("")
                .starts_with("build failed")),
        "{report}"
    );
    // With the parent unbuildable, 14 or 15 may be the first bad one, as
    // git would say.
    assert_eq!(report["result"]["kind"], "range", "{report}");
    let range: Vec<&str> = report["result"]["commits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|commit| commit["id"].as_str().unwrap())
        .collect();
    assert_eq!(range, vec![ids[15].to_string(), ids[14].to_string()]);
    let (code, text, _) = fixture.run(&["bisect", "report"]);
    assert_eq!(code, 0);
    let flowing = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(flowing.contains("could not all be tested"), "{text}");
}

#[test]
fn a_hanging_measure_command_is_killed_and_made_a_skip() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    // The first commit tested (the midpoint) hangs.
    let ids = linear(&repo, 17, 5, &|idx| {
        if idx == 8 {
            vec![("hang", "1\n")]
        } else {
            Vec::new()
        }
    });
    // The hanging command leaves its process id behind, to check that it
    // was killed rather than waited for.
    let command =
        measure_command("if [ -f hang ]; then echo $$ > ../hung.pid; exec sleep 600; fi; ");
    let (good, bad) = (ids[0].to_string(), ids[16].to_string());
    let (code, _, stderr) = fixture.run(&[
        "bisect",
        "start",
        "--good",
        &good,
        "--bad",
        &bad,
        "--build",
        "sh build.sh",
        "--measure",
        &command,
        // Far beyond what a test of a tenth of a second takes to build and
        // run, however loaded the machine.
        "--timeout",
        "8",
        "--max-repeats",
        "20",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let report = fixture.json(&["bisect", "run", "--json"]);
    assert_eq!(first_bad(&report), ids[5].to_string());
    // The hung command is gone: killed at the timeout with its group.
    let pid_file = fixture.repo.join(".git/netbisect/hung.pid");
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap_or_else(|err| panic!("{}: {err}", pid_file.display()))
        .trim()
        .parse()
        .unwrap();
    // SAFETY: signal 0 only asks whether the process exists.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    assert!(!alive, "the hung measure command {pid} still runs");
    let hung = report["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["commit"]["id"] == ids[8].to_string())
        .unwrap();
    assert_eq!(hung["verdict"], "skip");
    assert!(
        hung["skip_reason"].as_str().unwrap().contains("timed out"),
        "{hung}"
    );
}

#[test]
fn a_bisection_killed_mid_way_resumes_without_measuring_again() {
    let started = Instant::now();
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 30, 21, &|_| Vec::new());
    fixture.start(ids[0], ids[29], &[]);

    let mut child = std::process::Command::new(BINARY)
        .args(["bisect", "run"])
        .env("NETBISECT_ARCHIVE", &fixture.archive)
        .current_dir(&fixture.repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let status = fixture.json(&["bisect", "status", "--json"]);
        if status["steps"].as_array().unwrap().len() >= 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no steps after a minute: {status}"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "bisect run ended early"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill on the id of a child this test started and has not
    // reaped yet.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let exit = child.wait().unwrap();
    assert!(exit.code().is_none(), "killed by a signal");

    let before = fixture.json(&["bisect", "status", "--json"]);
    assert_eq!(before["state"], "running");
    let decided: Vec<String> = before["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|step| step["commit"]["id"].as_str().unwrap().to_string())
        .collect();
    let runs_before = fixture.runs_per_commit();

    let report = fixture.json(&["bisect", "run", "--json"]);
    assert_eq!(first_bad(&report), ids[21].to_string());
    let runs_after = fixture.runs_per_commit();
    let culprit = report["result"]["commit"]["id"].as_str().unwrap();
    let parent = report["result"]["parent"]["id"].as_str().unwrap();
    for commit in &decided {
        if commit != culprit && commit != parent {
            assert_eq!(
                runs_after.get(commit),
                runs_before.get(commit),
                "{commit} measured again"
            );
        }
    }
    // The journal holds the whole bisection now: running it again
    // measures nothing and gives the same answer.
    let again = fixture.json(&["bisect", "run", "--json"]);
    assert_eq!(again, report);
    assert_eq!(fixture.runs_per_commit(), runs_after);
    eprintln!(
        "killed and resumed bisection: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn ends_that_do_not_differ_are_refused_with_the_figures() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 6, 100, &|_| Vec::new());
    let (good, bad) = (ids[0].to_string(), ids[5].to_string());
    let (code, _, stderr) = fixture.run(&[
        "bisect",
        "start",
        "--good",
        &good,
        "--bad",
        &bad,
        "--bench",
        "-t TCP_STREAM -l 0.1",
        "--max-repeats",
        "6",
        "--min-effect",
        "50",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let (code, text, stderr) = fixture.run(&["bisect", "run"]);
    assert_eq!(code, 4, "{stderr}");
    assert!(
        text.starts_with("No bisection: TCP_STREAM 10^6bits/s"),
        "{text}"
    );
    assert!(text.contains("minimum effect (50.0%)"), "{text}");
    let refusal = fixture.json(&["bisect", "report", "--json"]);
    assert_eq!(refusal["schema"], "netbisect.bisect-refusal/1");
    assert!(refusal["good"]["samples"].as_array().unwrap().len() >= 5);
    assert!(refusal["good"]["mean"].as_f64().unwrap() > 0.0);
    assert!(refusal["difference"]["diff_pct"].as_f64().unwrap().abs() < 50.0);
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 4, 2, &|_| Vec::new());
    let side = repo.commit_files(&[("other", "1")], &[ids[1]], "side");
    let (good, bad, side) = (ids[0].to_string(), ids[3].to_string(), side.to_string());
    let command = measure_command("");
    let start = |good: &str, bad: &str, build: &str, measure: &[&str]| {
        let mut args = vec![
            "bisect", "start", "--good", good, "--bad", bad, "--build", build,
        ];
        args.extend_from_slice(measure);
        fixture.run(&args)
    };
    let cases: Vec<((i32, String, String), &str)> = vec![
        (
            start("no-such-rev", &bad, "sh build.sh", &["--measure", &command]),
            "unknown revision 'no-such-rev'",
        ),
        (
            start(&side, &bad, "sh build.sh", &["--measure", &command]),
            "is not an ancestor of the bad commit",
        ),
        (
            start(
                &good,
                &bad,
                "no-such-build-tool -j2",
                &["--measure", &command],
            ),
            "command not found: 'no-such-build-tool'",
        ),
        (
            start(
                &good,
                &bad,
                "sh build.sh",
                &["--measure", "no-such-measure-tool --json"],
            ),
            "command not found: 'no-such-measure-tool'",
        ),
        (
            start(&good, &bad, "sh build.sh", &["--bench", "-t NO_SUCH_TEST"]),
            "NO_SUCH_TEST",
        ),
        (
            start(
                &good,
                &bad,
                "sh build.sh",
                &["--bench", "-t TCP_RR --commit abc"],
            ),
            "--bench takes no --commit",
        ),
    ];
    for ((code, _, stderr), expected) in cases {
        assert_eq!(code, 2, "{stderr}");
        assert!(
            stderr.contains(expected),
            "expected '{expected}' in: {stderr}"
        );
    }
    // Dirty and bare repositories.
    std::fs::write(fixture.repo.join("config/socket_size"), "1\n").unwrap();
    let (code, _, stderr) = start(&good, &bad, "sh build.sh", &["--measure", &command]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("uncommitted changes (config/socket_size)"),
        "{stderr}"
    );
    let bare = fixture.repo.parent().unwrap().join("bare.git");
    Repository::init_bare(&bare).unwrap();
    let (code, _, stderr) = fixture.run(&[
        "bisect",
        "start",
        "--repo",
        bare.to_str().unwrap(),
        "--good",
        "a",
        "--bad",
        "b",
        "--measure",
        "true",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("bare repository"), "{stderr}");
    // Nothing was recorded.
    let (code, _, stderr) = fixture.run(&["bisect", "run"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no bisection in progress"), "{stderr}");
}

#[test]
fn verdict_answers_as_git_bisect_run_expects() {
    let fixture = fixture();
    let dir = fixture.repo.parent().unwrap().to_path_buf();
    let bench = |size: &str, commit: &str| {
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
            "--json",
        ]);
        assert_eq!(code, 0, "{stderr}");
    };
    // Enough baseline runs that the fast side's noise on a loaded machine
    // still leaves the two sides apart.
    for _ in 0..8 {
        bench("65536", "aaaa1111");
        bench("64", "bbbb2222");
    }
    // The good commit has more runs of another test: the baseline is
    // still the TCP_STREAM runs, the spec being measured.
    for _ in 0..9 {
        let (code, _, stderr) = fixture.run(&[
            "bench", "-t", "TCP_RR", "-l", "0.05", "--commit", "aaaa1111", "--json",
        ]);
        assert_eq!(code, 0, "{stderr}");
    }
    // The exit codes, with baselines whose noise a loaded machine cannot
    // blur: copies of one real run of each side (its median), under
    // commits of their own, and a tree that measures as that run did.
    let steady = |source: &str, commit: &str| {
        let exported = fixture.run(&["archive", "export", "--commit", source]).1;
        let mut runs: Vec<RunRecord> = exported
            .lines()
            .map(|line| RunRecord::from_slice(line.as_bytes()).unwrap())
            .filter(|run| run.spec.test == run_record::spec::TestKind::TcpStream)
            .collect();
        assert_eq!(runs.len(), 8, "{exported}");
        runs.sort_by(|a, b| {
            a.summary
                .throughput_bps
                .mean
                .total_cmp(&b.summary.throughput_bps.mean)
        });
        let copies: Vec<RunRecord> = (0..3)
            .map(|idx| {
                let mut copy = runs[4].clone();
                copy.subject.commit = Some(commit.to_string());
                copy.subject.label = Some(format!("copy {idx}"));
                copy.seal().unwrap();
                copy
            })
            .collect();
        crate::compare::import(&fixture.archive, &copies);
        let path = dir.join(format!("{commit}.json"));
        std::fs::write(&path, copies[0].to_canonical_bytes().unwrap()).unwrap();
        path
    };
    let (good_copy, bad_copy) = (
        steady("aaaa1111", "cccc1111"),
        steady("bbbb2222", "dddd2222"),
    );
    let netbisect = |args: &[&str]| {
        fixture
            .netbisect()
            .current_dir(&dir)
            .args(args)
            .output()
            .unwrap()
    };
    let replay = |path: &std::path::Path| {
        let command = format!("cat '{}'", path.display());
        let output = netbisect(&[
            "verdict",
            "--good-run",
            "cccc1111",
            "--bad-run",
            "dddd2222",
            "--measure",
            &command,
            "--max-repeats",
            "20",
        ]);
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let verdict = |size: &str| {
        let command =
            format!("'{BINARY}' bench -t TCP_STREAM -l 0.1 -m {size} --json --no-archive");
        let output = netbisect(&[
            "verdict",
            "--good-run",
            "aaaa",
            "--bad-run",
            "bbbb2222",
            "--measure",
            &command,
            "--max-repeats",
            "20",
        ]);
        (
            output.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    let (code, stderr) = replay(&good_copy);
    assert_eq!(code, 0, "{stderr}");
    let (code, stderr) = replay(&bad_copy);
    assert_eq!(code, 1, "{stderr}");
    // A fresh measurement of the fast tree: old, or unknown when a loaded
    // machine blurs the sides, never new.
    let (code, stderr) = verdict("65536");
    assert!(code == 0 || code == 125, "{code}: {stderr}");
    let output = netbisect(&[
        "--json",
        "verdict",
        "--good-run",
        "aaaa1111",
        "--bad-run",
        "bbbb2222",
        "--bench",
        "-t TCP_STREAM -l 0.1 -m 65536",
        "--max-repeats",
        "20",
    ]);
    // The baseline is throughput (bits/s), not a transaction rate; the
    // verdict is old, or unknown when a loaded machine blurs the sides.
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code();
    assert!(code == Some(0) || code == Some(125), "{code:?}: {stderr}");
    let doc: Value =
        serde_json::from_slice(&output.stdout).unwrap_or_else(|err| panic!("{err}: {stderr}"));
    assert_eq!(doc["metric"], "throughput_bps", "{doc}");
    assert!(doc["good_mean"].as_f64().unwrap() > 1e8, "{doc}");
    // A hundredfold drop reads as a ratio: its interval stays above -100%.
    let output = netbisect(&[
        "--json",
        "verdict",
        "--good-run",
        "aaaa1111",
        "--bad-run",
        "bbbb2222",
        "--bench",
        "-t TCP_STREAM -l 0.1 -m 64",
        "--max-repeats",
        "20",
    ]);
    let code = output.status.code();
    assert!(code == Some(1) || code == Some(125), "{code:?}");
    let doc: Value = serde_json::from_slice(&output.stdout).unwrap();
    // How wide it is depends on the noise a loaded machine adds (a run of
    // 64-byte sends that coalesce can read twenty times its fellows); that
    // it holds the change and stays a ratio does not.
    let low = doc["change_low_pct"].as_f64().unwrap();
    let high = doc["change_high_pct"].as_f64().unwrap();
    let change = doc["change_pct"].as_f64().unwrap();
    assert!(low > -100.0 && low < change && change < high, "{doc}");
    // A spec neither baseline has: the same at every commit, so an
    // abort, saying what they have.
    let output = netbisect(&[
        "verdict",
        "--good-run",
        "aaaa1111",
        "--bad-run",
        "bbbb2222",
        "--bench",
        "-t UDP_STREAM -l 0.1",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(128), "{stderr}");
    assert!(stderr.contains("9 TCP_RR"), "{stderr}");
    // A failing measurement: 125, skip.
    let (code, stderr) = verdict("x");
    assert_eq!(code, 125, "{stderr}");
    assert!(stderr.contains("cannot tell"), "{stderr}");
    // Baselines that do not exist: 128, abort the whole bisection.
    let output = netbisect(&[
        "verdict",
        "--good-run",
        "cccc",
        "--bad-run",
        "bbbb",
        "--measure",
        "true",
    ]);
    assert_eq!(output.status.code(), Some(128));
    // A timeout that is no duration: a usage error, 128 as well, named.
    for timeout in ["-1", "1e300", "nan"] {
        let output = netbisect(&[
            "verdict",
            "--good-run",
            "aaaa1111",
            "--bad-run",
            "bbbb2222",
            "--measure",
            "true",
            &format!("--timeout={timeout}"),
        ]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(128), "{stderr}");
        assert!(stderr.contains("positive number of seconds"), "{stderr}");
    }
}

#[test]
fn a_latency_bisection_prints_its_status_in_microseconds() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 4, 2, &|_| Vec::new());
    let (good, bad) = (ids[0].to_string(), ids[3].to_string());
    let (code, text, stderr) = fixture.run(&[
        "bisect",
        "start",
        "--good",
        &good,
        "--bad",
        &bad,
        "--bench",
        "-t TCP_RR -l 0.1",
        "--metric",
        "latency_p99_us",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("on latency_p99_us"), "{text}");
    let (code, text, stderr) = fixture.run(&["bisect", "status"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(text.contains("Measuring the ends"), "{text}");
    crate::check_mailing_list_rules(&text);
}

#[test]
fn the_report_of_a_run_names_the_test_bisected_not_another_archived_one() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 4, 2, &|_| Vec::new());
    // The good commit also has a request/response run in the archive.
    let good = ids[0].to_string();
    let (code, _, stderr) = fixture.run(&[
        "bench", "-t", "TCP_RR", "-l", "0.1", "--commit", &good, "--json",
    ]);
    assert_eq!(code, 0, "{stderr}");
    fixture.start(ids[0], ids[3], &[]);
    let (code, text, stderr) = fixture.run(&["bisect", "run"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(text.starts_with("TCP_STREAM 10^6bits/s -"), "{text}");
    let (_, report, _) = fixture.run(&["bisect", "report"]);
    assert_eq!(text, report);
}

#[test]
fn the_rest_is_estimated_once_the_ends_are_measured() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 12, 7, &|_| Vec::new());
    fixture.start(ids[0], ids[11], &[]);
    // Before the ends are measured there is nothing to estimate from.
    let status = fixture.json(&["bisect", "status", "--json"]);
    assert_eq!(status["estimate"], Value::Null, "{status}");

    let (code, stdout, stderr) = fixture.run(&["-v", "bisect", "run", "--json"]);
    assert_eq!(code, 0, "{stderr}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(first_bad(&report), ids[7].to_string());
    // The progress says it once, after the ends and before the first
    // step.
    let lines: Vec<&str> = stderr.lines().collect();
    let said: Vec<usize> = (0..lines.len())
        .filter(|&idx| lines[idx].contains(" netbisect: the ends differ by "))
        .collect();
    assert_eq!(said.len(), 1, "{stderr}");
    let first_step = lines
        .iter()
        .position(|line| line.contains(": step 1 of"))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(said[0] < first_step, "{stderr}");
    assert!(
        lines[..said[0]]
            .iter()
            .any(|line| line.contains("measuring the ends")),
        "{stderr}"
    );
    assert!(lines[said[0]].contains("s a measurement"), "{stderr}");

    // The status keeps it, from the journal.
    let status = fixture.json(&["bisect", "status", "--json"]);
    let estimate = &status["estimate"];
    // The range: the eleven commits after the good end.
    assert_eq!(estimate["n_commits"], 11, "{status}");
    assert_eq!(estimate["n_commits"], status["n_commits"]);
    // 64-byte sends against 64 KiB ones: the ends differ by far more
    // than their noise.
    assert!(estimate["step_pct"].as_f64().unwrap() > 50.0, "{estimate}");
    assert!(
        estimate["seconds_per_run"].as_f64().unwrap() > 0.0,
        "{estimate}"
    );
    let rest = estimate["mean_after_ends"].as_f64().unwrap();
    assert!(rest > 0.0 && rest < estimate["mean_measurements"].as_f64().unwrap());
    let said_rest = format!("the rest takes ~{rest:.0} measurements");
    assert!(lines[said[0]].contains(&said_rest), "{stderr}");
    let (code, text, stderr) = fixture.run(&["bisect", "status"]);
    assert_eq!(code, 0, "{stderr}");
    let flowing = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flowing.contains("Estimate when the ends were measured"),
        "{text}"
    );
    assert!(flowing.contains(&said_rest), "{text}");
}
