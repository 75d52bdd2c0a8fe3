//! Bisections of real git repositories built in temp dirs with git2, with
//! build and measure commands run through `sh`.

use bisect::config::BisectConfig;
use bisect::decision::{DecisionConfig, Method, Verdict};
use bisect::engine;
use bisect::error::EngineError;
use bisect::journal::{BoxError, Journal, JournalEvent, MemoryJournal};
use bisect::measure::{CommandMeasurer, CommandStep};
use bisect::range::{self, RangeError};
use bisect::report::{BisectResult, Outcome};
use bisect::worktree::BisectWorktree;
use bisect::{Measurement, Measurer};
use git2::{Oid, Repository};
use run_record::record::Direction;
use run_record::record::{Metric, Summary};
use run_record::spec::TestKind;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use test_fixtures::git::GitRepo;
use test_fixtures::record::RecordBuilder;

struct Fixture {
    _dir: tempfile::TempDir,
    repo_path: PathBuf,
    state_dir: PathBuf,
    records_dir: PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo_path = dir.path().join("repo");
    let state_dir = dir.path().join("state");
    let records_dir = dir.path().join("records");
    std::fs::create_dir_all(&records_dir).unwrap();
    GitRepo::init(&repo_path);
    write_records(&records_dir);
    Fixture {
        _dir: dir,
        repo_path,
        state_dir,
        records_dir,
    }
}

/// Sealed run records: four variants per level, so repeats differ.
fn write_records(dir: &Path) {
    for (level, base) in [("old", 1.0e9), ("new", 0.9e9)] {
        for (variant, wobble) in [0.0, 0.004, -0.003, 0.002].iter().enumerate() {
            let value = base * (1.0 + wobble);
            let record = RecordBuilder::new(TestKind::TcpStream)
                .started_at("2025-01-01T00:00:00Z")
                .finished_at("2025-01-01T00:00:01Z")
                .testbed("test")
                .throughput(1.0, value)
                .summary(Summary::default())
                .build();
            let bytes = record.to_canonical_bytes().unwrap();
            std::fs::write(dir.join(format!("{level}-{variant}.json")), bytes).unwrap();
        }
    }
}

/// A line of `n` commits; commits from `culprit` on are `new`. Returns
/// the ids, oldest first; extra files per commit from `extra`.
fn linear(
    repo: &GitRepo,
    n: usize,
    culprit: usize,
    extra: &dyn Fn(usize) -> Vec<(&'static str, &'static str)>,
) -> Vec<Oid> {
    let ids = repo.line(
        None,
        n,
        |idx| {
            let level = if idx >= culprit { "new" } else { "old" };
            let mut files = vec![("level", level), ("build.sh", "test ! -f broken\n")];
            files.extend(extra(idx));
            files
        },
        |idx| format!("commit {idx}"),
    );
    repo.checkout_main(*ids.last().unwrap());
    ids
}

fn measure_command(records: &Path) -> String {
    // Cycle through the variants of the commit's level with a counter kept
    // outside the worktree.
    format!(
        "c={r}/counter; n=$(cat \"$c\" 2>/dev/null || echo 0); echo $((n + 1)) > \"$c\"; \
         if [ -f hang ]; then sleep 30; fi; cat \"{r}/$(cat level)-$((n % 4)).json\"",
        r = records.display()
    )
}

fn config() -> BisectConfig {
    config_with(DecisionConfig::default().method)
}

fn config_with(method: Method) -> BisectConfig {
    BisectConfig {
        metric: "throughput_bps".into(),
        direction: Direction::HigherIsBetter,
        decision: DecisionConfig {
            confirm_repeats: 2,
            method,
            ..DecisionConfig::default()
        },
    }
}

fn bisect_with(
    fixture: &Fixture,
    good: Oid,
    bad: Oid,
    first_parent: bool,
    step: CommandStep,
    journal: &mut dyn Journal,
) -> Result<Outcome, EngineError> {
    let repo = range::open_repository(&fixture.repo_path).unwrap();
    let graph = range::load(&repo, good, bad, first_parent).unwrap();
    let worktree =
        BisectWorktree::open_or_create(&repo, &fixture.state_dir, "bisect", bad).unwrap();
    let mut measurer = CommandMeasurer::new(&worktree, step);
    engine::run(&graph, &config(), &mut measurer, journal, &mut |_| {})
}

fn step(fixture: &Fixture) -> CommandStep {
    CommandStep {
        build: Some("sh build.sh".into()),
        measure: measure_command(&fixture.records_dir),
        timeout: Some(Duration::from_secs(20)),
        metric: Metric::ThroughputBps,
    }
}

fn first_bad(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Finished(report) => match &report.result {
            BisectResult::FirstBad { commit, .. } => commit.id.clone(),
            other => panic!("not a single commit: {other:?}"),
        },
        Outcome::Refused(refusal) => panic!("refused: {refusal:?}"),
    }
}

#[test]
fn linear_history_finds_the_culprit_and_leaves_the_checkout_alone() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo_path);
    let ids = linear(&repo, 24, 15, &|_| Vec::new());
    let head_before = repo.head().unwrap().target().unwrap();
    let mut journal = MemoryJournal::default();
    let outcome = bisect_with(
        &fixture,
        ids[0],
        ids[23],
        false,
        step(&fixture),
        &mut journal,
    )
    .unwrap();
    assert_eq!(first_bad(&outcome), ids[15].to_string());
    let Outcome::Finished(report) = &outcome else {
        unreachable!()
    };
    let BisectResult::FirstBad {
        commit,
        parent,
        regression,
        confirmed,
        ..
    } = &report.result
    else {
        unreachable!()
    };
    assert_eq!(commit.subject, "commit 15");
    assert_eq!(commit.author, "Ann Tester <ann@example.org>");
    assert_eq!(commit.date, "2023-11-14T22:13:20.000000Z");
    assert_eq!(parent.id, ids[14].to_string());
    assert!(confirmed);
    let regression = regression.as_ref().unwrap();
    assert!(
        regression.ci_low_pct < -9.0 && regression.ci_high_pct > -11.0,
        "{regression:?}"
    );
    assert!(
        report
            .log
            .iter()
            .any(|line| line == &format!("# first bad commit: [{}] commit 15", ids[15]))
    );
    // The user's checkout did not move and has no changes.
    assert_eq!(repo.head().unwrap().target().unwrap(), head_before);
    assert_eq!(
        std::fs::read_to_string(fixture.repo_path.join("level")).unwrap(),
        "new"
    );
    assert!(repo.statuses(None).unwrap().is_empty());
    // The worktree is reused, not re-added.
    let again = bisect_with(
        &fixture,
        ids[0],
        ids[23],
        false,
        step(&fixture),
        &mut MemoryJournal::default(),
    )
    .unwrap();
    assert_eq!(first_bad(&again), ids[15].to_string());
    let wt = BisectWorktree::open_or_create(&repo, &fixture.state_dir, "bisect", ids[23]).unwrap();
    // A run killed mid-checkout leaves git's lock files behind; opened
    // again, the worktree checks out as before.
    let git_dir = fixture.repo_path.join(".git/worktrees/bisect");
    for name in ["HEAD.lock", "index.lock"] {
        std::fs::write(git_dir.join(name), "").unwrap();
    }
    assert!(wt.checkout(ids[3]).is_err(), "the locks are in force");
    let wt = BisectWorktree::open_or_create(&repo, &fixture.state_dir, "bisect", ids[23]).unwrap();
    wt.checkout(ids[3]).unwrap();
    assert_eq!(wt.head().unwrap(), ids[3]);
    BisectWorktree::remove(&repo, "bisect").unwrap();
    assert!(!wt.path().exists());
    assert!(
        repo.branches(None).unwrap().count() == 1,
        "no branch left behind"
    );
}

#[test]
fn merge_heavy_history_finds_a_culprit_on_a_side_branch() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo_path);
    let base = repo.commit_files(&[("level", "old"), ("build.sh", "true\n")], &[], "base");
    let mut main = base;
    let mut culprit = None;
    for topic in 0..6 {
        let mut side = main;
        for idx in 0..3 {
            let name = format!("f{topic}{idx}");
            let level = if culprit.is_some() || (topic == 3 && idx == 1) {
                "new"
            } else {
                "old"
            };
            side = repo.commit_files(
                &[(name.as_str(), "x"), ("level", level)],
                &[side],
                &format!("topic {topic} patch {idx}"),
            );
            if topic == 3 && idx == 1 {
                culprit = Some(side);
            }
        }
        main = repo.commit_files(
            &[(format!("m{topic}").as_str(), "y")],
            &[main],
            &format!("main work {topic}"),
        );
        let side_level = if culprit.is_some() { "new" } else { "old" };
        main = repo.commit_files(
            &[("level", side_level)],
            &[main, side],
            &format!("merge topic {topic}"),
        );
    }
    repo.checkout_main(main);
    let outcome = bisect_with(
        &fixture,
        base,
        main,
        false,
        step(&fixture),
        &mut MemoryJournal::default(),
    )
    .unwrap();
    assert_eq!(first_bad(&outcome), culprit.unwrap().to_string());
    // With --first-parent the answer is the merge that brought it in.
    let outcome = bisect_with(
        &fixture,
        base,
        main,
        true,
        step(&fixture),
        &mut MemoryJournal::default(),
    )
    .unwrap();
    let Outcome::Finished(report) = &outcome else {
        panic!()
    };
    let BisectResult::FirstBad { commit, .. } = &report.result else {
        panic!()
    };
    assert_eq!(commit.subject, "merge topic 3");
}

#[test]
fn unbuildable_commits_are_skips_and_can_hide_the_culprit() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo_path);
    // Commits 13 and 14 do not build; the culprit is 15.
    let ids = linear(&repo, 24, 15, &|idx| {
        if idx == 13 || idx == 14 {
            vec![("broken", "1")]
        } else {
            Vec::new()
        }
    });
    let outcome = bisect_with(
        &fixture,
        ids[0],
        ids[23],
        false,
        step(&fixture),
        &mut MemoryJournal::default(),
    )
    .unwrap();
    let Outcome::Finished(report) = &outcome else {
        panic!()
    };
    assert!(report.steps.iter().any(|s| {
        s.verdict == Verdict::Skip
            && s.skip_reason
                .as_deref()
                .unwrap_or("")
                .starts_with("build failed")
    }));
    // 14 unbuildable: 14 or 15 may be the first bad one, as git says.
    let BisectResult::Range { commits } = &report.result else {
        panic!("{:?}", report.result)
    };
    let range: Vec<&str> = commits.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        range,
        vec![
            ids[15].to_string(),
            ids[14].to_string(),
            ids[13].to_string()
        ]
    );
    assert!(
        report
            .log
            .iter()
            .any(|l| l == "# only skipped commits left to test")
    );

    // Unbuildable commits after the culprit do not hide it.
    let fixture = self::fixture();
    let repo = GitRepo::open(&fixture.repo_path);
    let ids = linear(&repo, 24, 9, &|idx| {
        if idx == 11 || idx == 12 {
            vec![("broken", "1")]
        } else {
            Vec::new()
        }
    });
    let outcome = bisect_with(
        &fixture,
        ids[0],
        ids[23],
        false,
        step(&fixture),
        &mut MemoryJournal::default(),
    )
    .unwrap();
    assert_eq!(first_bad(&outcome), ids[9].to_string());
}

#[test]
fn a_hanging_measurement_is_killed_and_made_a_skip() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo_path);
    // The first commit tested (the midpoint) hangs.
    let ids = linear(&repo, 17, 5, &|idx| {
        if idx == 8 {
            vec![("hang", "1")]
        } else {
            Vec::new()
        }
    });
    let mut step = step(&fixture);
    step.timeout = Some(Duration::from_millis(500));
    let started = Instant::now();
    let outcome = bisect_with(
        &fixture,
        ids[0],
        ids[16],
        false,
        step,
        &mut MemoryJournal::default(),
    )
    .unwrap();
    assert!(started.elapsed() < Duration::from_secs(25));
    assert_eq!(first_bad(&outcome), ids[5].to_string());
    let Outcome::Finished(report) = &outcome else {
        panic!()
    };
    let skipped = report
        .steps
        .iter()
        .find(|s| s.commit.id == ids[8].to_string())
        .unwrap();
    assert_eq!(skipped.verdict, Verdict::Skip);
    assert!(
        skipped
            .skip_reason
            .as_deref()
            .unwrap()
            .contains("timed out")
    );
}

/// A journal that fails (as a crash would stop the process) after
/// `limit` appends.
struct CrashingJournal {
    inner: MemoryJournal,
    limit: usize,
}

impl Journal for CrashingJournal {
    fn load(&mut self) -> Result<Vec<JournalEvent>, BoxError> {
        self.inner.load()
    }
    fn append(&mut self, event: &JournalEvent) -> Result<(), BoxError> {
        if self.inner.events.len() >= self.limit {
            return Err("simulated crash".into());
        }
        self.inner.append(event)
    }
}

/// Counts measurements per commit.
struct Counting<'a, M: Measurer> {
    inner: M,
    counts: &'a mut BTreeMap<String, u32>,
}

impl<M: Measurer> Measurer for Counting<'_, M> {
    fn measure(&mut self, commit: &bisect::graph::CommitInfo) -> Result<Measurement, BoxError> {
        *self.counts.entry(commit.id.clone()).or_default() += 1;
        self.inner.measure(commit)
    }
}

#[test]
fn an_interrupted_bisection_resumes_without_measuring_again() {
    interrupted_bisection_resumes(Method::Sequential);
    interrupted_bisection_resumes(Method::Posterior);
}

fn interrupted_bisection_resumes(method: Method) {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo_path);
    let ids = linear(&repo, 40, 27, &|_| Vec::new());
    let graph = range::load(&repo, ids[0], ids[39], false).unwrap();
    let worktree =
        BisectWorktree::open_or_create(&repo, &fixture.state_dir, "bisect", ids[39]).unwrap();

    let mut crashing = CrashingJournal {
        inner: MemoryJournal::default(),
        limit: 30,
    };
    let mut first_counts = BTreeMap::new();
    let mut measurer = Counting {
        inner: CommandMeasurer::new(&worktree, step(&fixture)),
        counts: &mut first_counts,
    };
    let err = engine::run(
        &graph,
        &config_with(method),
        &mut measurer,
        &mut crashing,
        &mut |_| {},
    )
    .unwrap_err();
    assert!(matches!(err, EngineError::Journal(_)), "{err}");
    let journal_events = crashing.inner.events.clone();
    let decided: Vec<String> = journal_events
        .iter()
        .filter_map(|e| match e {
            JournalEvent::Verdict { commit, .. } => Some(commit.clone()),
            _ => None,
        })
        .collect();
    let sampled: BTreeSet<String> = journal_events
        .iter()
        .filter_map(|e| match e {
            JournalEvent::Sample { commit, .. } => Some(commit.clone()),
            _ => None,
        })
        .collect();
    if method == Method::Sequential {
        assert!(!decided.is_empty(), "the crash came after some verdicts");
    } else {
        assert!(sampled.len() > 2, "the crash came after some steps");
    }

    // Status from the journal alone measures nothing.
    let status = engine::status(&graph, &config_with(method), &journal_events).unwrap();
    assert!(status.outcome.is_none());
    if method == Method::Sequential {
        assert_eq!(status.steps.len(), decided.len());
    } else {
        // The probabilistic method's verdicts all follow from the samples
        // at once; the journal may hold only the first of them.
        assert!(status.steps.len() >= decided.len());
    }

    // Resume in a fresh worktree object, as after a reboot.
    drop(worktree);
    let worktree =
        BisectWorktree::open_or_create(&repo, &fixture.state_dir, "bisect", ids[39]).unwrap();
    let mut journal = MemoryJournal {
        events: journal_events.clone(),
    };
    let mut counts = BTreeMap::new();
    let mut measurer = Counting {
        inner: CommandMeasurer::new(&worktree, step(&fixture)),
        counts: &mut counts,
    };
    let outcome = engine::run(
        &graph,
        &config_with(method),
        &mut measurer,
        &mut journal,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(first_bad(&outcome), ids[27].to_string());
    // Every journaled sample is reused: the finished journal holds those
    // and exactly the samples measured after the resume.
    assert!(journal.events.starts_with(&journal_events));
    let n_samples = |events: &[JournalEvent]| {
        events
            .iter()
            .filter(|e| matches!(e, JournalEvent::Sample { .. }))
            .count()
    };
    assert_eq!(
        n_samples(&journal.events),
        n_samples(&journal_events) + counts.values().sum::<u32>() as usize
    );
    for commit in &decided {
        // Only the confirmation pass may come back to a decided commit.
        let Outcome::Finished(report) = &outcome else {
            panic!()
        };
        let BisectResult::FirstBad {
            commit: culprit,
            parent,
            ..
        } = &report.result
        else {
            panic!()
        };
        if commit != &culprit.id && commit != &parent.id {
            assert_eq!(counts.get(commit), None, "{commit} measured again");
        }
    }
    // The journal now holds the whole bisection: replaying it gives the
    // same answer without measuring anything.
    let status = engine::status(&graph, &config_with(method), &journal.events).unwrap();
    assert_eq!(
        first_bad(status.outcome.as_ref().unwrap()),
        ids[27].to_string()
    );
    let mut again = MemoryJournal {
        events: journal.events.clone(),
    };
    let mut never = Counting {
        inner: CommandMeasurer::new(&worktree, step(&fixture)),
        counts: &mut BTreeMap::new(),
    };
    let outcome = engine::run(
        &graph,
        &config_with(method),
        &mut never,
        &mut again,
        &mut |_| {},
    )
    .unwrap();
    assert_eq!(first_bad(&outcome), ids[27].to_string());
    assert!(never.counts.is_empty());
    assert_eq!(again.events.len(), journal.events.len());
}

#[test]
fn ends_that_do_not_differ_are_refused_with_figures() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo_path);
    let ids = linear(&repo, 8, 100, &|_| Vec::new());
    let outcome = bisect_with(
        &fixture,
        ids[0],
        ids[7],
        false,
        step(&fixture),
        &mut MemoryJournal::default(),
    )
    .unwrap();
    let Outcome::Refused(refusal) = outcome else {
        panic!("bisected")
    };
    assert!(refusal.good.samples.len() >= 5 && refusal.bad.samples.len() >= 5);
    assert!((refusal.good.mean - 1.0e9).abs() < 5e6);
    let difference = refusal.difference.unwrap();
    // The repeats cycle through the variants in step with the alternation of
    // the ends, so a tiny difference is real here: below the minimum effect.
    assert!(
        difference.diff_pct.abs() < refusal.min_effect_pct,
        "{difference:?}"
    );
}

#[test]
fn bad_input_is_refused_before_anything_runs() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo_path);
    let ids = linear(&repo, 4, 2, &|_| Vec::new());
    let err = range::resolve(&repo, "no-such-rev").unwrap_err();
    assert_eq!(err.to_string(), "unknown revision 'no-such-rev'");
    // Good on a side branch: not an ancestor of bad.
    let side = repo.commit_files(&[("other", "1")], &[ids[1]], "side");
    let err = range::load(&repo, side, ids[3], false).unwrap_err();
    assert!(matches!(err, RangeError::NotAncestor { .. }));
    assert!(
        err.to_string()
            .contains(&format!("their merge base is {}", ids[1])),
        "{err}"
    );
    // Good and bad the wrong way round: named as such.
    let err = range::load(&repo, ids[3], ids[0], false).unwrap_err();
    assert!(matches!(err, RangeError::Swapped { .. }), "{err}");
    assert!(
        err.to_string().contains("are good and bad swapped?"),
        "{err}"
    );
    assert!(!err.to_string().contains("merge base"), "{err}");
    assert!(matches!(
        range::load(&repo, ids[3], ids[3], false),
        Err(RangeError::SameCommit(_))
    ));
    // Dirty repository.
    std::fs::write(fixture.repo_path.join("level"), "changed").unwrap();
    let Err(err) = range::open_repository(&fixture.repo_path) else {
        panic!("dirty accepted")
    };
    assert!(
        err.to_string().contains("uncommitted changes (level)"),
        "{err}"
    );
    // Bare repository.
    let bare_path = fixture.state_dir.join("bare.git");
    Repository::init_bare(&bare_path).unwrap();
    let Err(err) = range::open_repository(&bare_path) else {
        panic!("bare accepted")
    };
    assert!(matches!(err, RangeError::Bare(_)), "{err}");
    // Missing build command.
    let err = child_process::runner::check_command("no-such-build-tool -j2", &fixture.repo_path)
        .unwrap_err();
    assert!(
        err.to_string()
            .starts_with("command not found: 'no-such-build-tool'")
    );
}
