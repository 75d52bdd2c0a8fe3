//! `bisect run --jobs K`: a real repository bisected with three
//! measurements at once, each slot in a worktree of its own, killed with
//! `kill -9` mid-way and resumed (the archive and the journal agree, no
//! run taken twice); Ctrl-C stops every slot; bad `--jobs` are usage
//! errors.

use crate::bisect::{Fixture, fixture, linear, measure_command};
use crate::signals::{journal_events, signal, spawn, wait_dead, wait_exit};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};
use test_fixtures::git::GitRepo;

/// The run ids the journal holds, archived or fresh, with their count.
fn journaled_runs(fixture: &Fixture) -> BTreeMap<String, u32> {
    let mut runs = BTreeMap::new();
    for event in journal_events(fixture) {
        let samples: Vec<&Value> = match event["event"].as_str() {
            Some("sample") => vec![&event["sample"]],
            _ => Vec::new(),
        };
        for sample in samples {
            if let Some(run_id) = sample["run_id"].as_str() {
                *runs.entry(run_id.to_string()).or_default() += 1;
            }
        }
    }
    runs
}

fn archived_run_ids(fixture: &Fixture) -> BTreeSet<String> {
    let list = fixture.json(&["archive", "list", "--json"]);
    list.as_array()
        .unwrap()
        .iter()
        .map(|run| run["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn three_jobs_bisect_a_real_range_and_resume_after_kill_9() {
    let started = Instant::now();
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 30, 19, &|_| Vec::new());
    let state = fixture.repo.parent().unwrap().to_path_buf();
    let slots_log = state.join("slots.log");
    // Every run notes its slot, the jobs and its worktree.
    let command = measure_command(&format!(
        "echo \"$NETBISECT_SLOT $NETBISECT_JOBS $PWD\" >> '{}'; ",
        slots_log.display()
    ));
    let (good, bad) = (ids[0].to_string(), ids[29].to_string());
    fixture.start_measuring(&good, &bad, &command, &[]);

    // Bad input first: no job, more jobs than commits.
    for (jobs, says) in [("0", "at least 1"), ("40", "more than the 30 commits")] {
        let (code, _, stderr) = fixture.run(&["bisect", "run", "--jobs", jobs]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains(says), "{stderr}");
    }

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_netbisect"))
        .args(["bisect", "run", "--jobs", "3"])
        .env("NETBISECT_ARCHIVE", &fixture.archive)
        .current_dir(&fixture.repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Past the ends, into the steps.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let status = fixture.json(&["bisect", "status", "--json"]);
        if status["n_measurements"].as_u64().unwrap() >= 16 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no steps after two minutes: {status}"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "bisect run ended early"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    signal(child.id(), libc::SIGKILL);
    assert!(child.wait().unwrap().code().is_none(), "killed by a signal");
    let before = fixture.json(&["bisect", "status", "--json"]);
    assert_eq!(before["state"], "running", "{before}");
    let runs_before = journaled_runs(&fixture);

    // Another number of jobs than the bisection's is refused.
    let (code, _, stderr) = fixture.run(&["bisect", "run", "--jobs", "2"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("started with --jobs 3"), "{stderr}");

    // Resumed without --jobs: the bisection's three.
    let (code, stdout, live) = fixture.run(&["bisect", "run", "--json"]);
    assert_eq!(code, 0, "{live}");
    let report: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(report["result"]["kind"], "first_bad", "{report}");
    assert_eq!(report["result"]["commit"]["id"], ids[19].to_string());
    assert_eq!(report["result"]["confirmed"], true);

    // Nothing journaled was measured again, no run was taken twice, and
    // every run of the archive is the journal's.
    let runs_after = journaled_runs(&fixture);
    for (run_id, count) in &runs_after {
        assert_eq!(*count, 1, "run {run_id} journaled {count} times");
    }
    for run_id in runs_before.keys() {
        assert!(runs_after.contains_key(run_id), "{run_id} lost");
    }
    let archived = archived_run_ids(&fixture);
    let journaled: BTreeSet<String> = runs_after.keys().cloned().collect();
    // The first run of the good end, which teaches the configuration, is
    // taken before the journal starts and reaches it as archived.
    let only_archived: Vec<_> = archived.difference(&journaled).collect();
    assert!(
        only_archived.len() <= 1,
        "runs beside the journal: {only_archived:?}"
    );
    assert!(journaled.is_subset(&archived));

    // Three slots, each in a worktree of its own, all told of the three.
    let log = std::fs::read_to_string(&slots_log).unwrap();
    let mut worktree_of: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for line in log.lines() {
        let mut fields = line.splitn(3, ' ');
        let (slot, jobs, dir) = (
            fields.next().unwrap(),
            fields.next().unwrap(),
            fields.next().unwrap(),
        );
        // The first run of the good end, before the slots, runs as slot
        // 0 too.
        assert_eq!(jobs, "3", "{line}");
        worktree_of
            .entry(slot.to_string())
            .or_default()
            .insert(dir.to_string());
    }
    assert_eq!(
        worktree_of.keys().cloned().collect::<Vec<_>>(),
        ["0", "1", "2"],
        "{log}"
    );
    let dirs: BTreeSet<&String> = worktree_of.values().flatten().collect();
    assert_eq!(dirs.len(), 3, "{worktree_of:?}");

    // Run again: the journal holds it all, nothing is measured.
    let again = fixture.json(&["bisect", "run", "--json"]);
    assert_eq!(again, report);
    assert_eq!(journaled_runs(&fixture), runs_after);
    // The report's reproduce lines, pasted into a shell with `netbisect`
    // a function that records its arguments, give the bisection's own
    // words back (the measure command's quotes and `$` whole, though its
    // line is cut), the jobs included, and run nothing else.
    let (code, text, stderr) = fixture.run(&["bisect", "report"]);
    assert_eq!(code, 0, "{stderr}");
    let script = text
        .lines()
        .skip_while(|line| *line != "Reproduce:")
        .skip(2)
        .take_while(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    let scratch = tempfile::tempdir().unwrap();
    let calls = crate::command_lines::recorded_calls("sh", scratch.path(), &script);
    crate::command_lines::nothing_ran(scratch.path(), &script);
    assert_eq!(calls.len(), 2, "{script}");
    let start: Vec<String> = calls[0]
        .iter()
        .map(|word| String::from_utf8(word.clone()).unwrap())
        .collect();
    assert_eq!(start[..2], ["bisect", "start"], "{script}");
    for (flag, value) in [
        ("--good", good.as_str()),
        ("--bad", bad.as_str()),
        ("--build", "sh build.sh"),
        ("--measure", command.as_str()),
        ("--max-repeats", "20"),
    ] {
        let at = start.iter().position(|word| word == flag);
        assert_eq!(
            at.and_then(|at| start.get(at + 1)).map(String::as_str),
            Some(value),
            "{flag} in {script}"
        );
    }
    assert_eq!(
        calls[1],
        ["bisect", "run", "--jobs", "3"].map(|word| word.as_bytes().to_vec()),
        "{script}"
    );

    // The report names the jobs, the rounds and the wall-clock, and its
    // reproduce line asks for the three jobs again.
    let (code, text, stderr) = fixture.run(&["bisect", "report"]);
    assert_eq!(code, 0, "{stderr}");
    let paragraph = text.replace('\n', " ");
    let n_measurements = report["n_measurements"].as_u64().unwrap();
    let steps = format!("Steps ({n_measurements} measurements in all, 3 at once in ");
    let after = paragraph
        .split_once(&steps)
        .unwrap_or_else(|| panic!("{text}"))
        .1;
    let rounds: u64 = after.split(' ').next().unwrap().parse().unwrap();
    // Three at once take at least a third of the measurements' rounds.
    assert!(
        rounds * 3 >= n_measurements && rounds < n_measurements,
        "{rounds} rounds: {text}"
    );
    assert!(after.contains(" of wall-clock):"), "{text}");
    assert!(
        text.lines()
            .any(|line| line == "netbisect bisect run --jobs 3"),
        "{text}"
    );
    // The status estimates the rest as the live line did, with the jobs
    // it runs.
    let rest = |text: &str| -> String {
        let joined = text.replace('\n', " ");
        let tail = joined
            .split_once("the rest takes ~")
            .map(|(_, tail)| tail.to_string());
        let tail = tail.unwrap_or_else(|| panic!("no estimate in {text}"));
        tail.split(" at once").next().unwrap().to_string()
    };
    let live_rest = rest(&live);
    assert!(live_rest.ends_with(", 3"), "{live}");
    let status = fixture.run(&["bisect", "status"]).1;
    assert_eq!(rest(&status), live_rest, "{status}\n{live}");
    // Reset removes every slot's worktree.
    let (code, _, stderr) = fixture.run(&["bisect", "reset"]);
    assert_eq!(code, 0, "{stderr}");
    let netbisect_dir = fixture.repo.join(".git/netbisect");
    assert!(!netbisect_dir.join("netbisect-slot1").exists());
    assert!(!netbisect_dir.join("netbisect-slot2").exists());
    eprintln!(
        "three jobs, killed and resumed: {:.1} s",
        started.elapsed().as_secs_f64()
    );
}

#[test]
fn ctrl_c_stops_every_slot_and_a_failing_slot_does_not_stop_the_others() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 30, 17, &|_| Vec::new());
    let state = fixture.repo.parent().unwrap().to_path_buf();
    // Slot 2 fails once, on a commit that is not an end (a skip of that
    // commit; an end that cannot be measured stops a bisection); every
    // slot measures, and once the walk is past the ends, hangs, leaving
    // its pid behind.
    let pids = state.join("pids");
    std::fs::create_dir(&pids).unwrap();
    let count = state.join("count");
    let (good, bad) = (ids[0].to_string(), ids[29].to_string());
    let command = measure_command(&format!(
        "case \"$NETBISECT_SLOT $NETBISECT_COMMIT\" in \
         \"2 {good}\"|\"2 {bad}\") ;; \
         2*) if [ ! -f '{failed}' ]; then touch '{failed}'; exit 1; fi ;; esac; \
         n=$(cat '{count}' 2>/dev/null || echo 0); echo $((n + 1)) > '{count}'; \
         if [ -f '{failed}' ] && [ \"$n\" -ge 16 ]; then echo $$ > '{pids}/'$NETBISECT_SLOT; exec sleep 60; fi; ",
        count = count.display(),
        pids = pids.display(),
        failed = state.join("failed").display()
    ));
    fixture.start_measuring(&good, &bad, &command, &[]);
    let mut child = spawn(&fixture, &fixture.repo, &["bisect", "run", "--jobs", "3"]);
    let deadline = Instant::now() + Duration::from_secs(120);
    let hung: Vec<i32> = loop {
        let found: Vec<i32> = ["0", "1"]
            .iter()
            .filter_map(|slot| std::fs::read_to_string(pids.join(slot)).ok())
            .filter_map(|text| text.trim().parse().ok())
            .collect();
        if found.len() == 2 {
            break found;
        }
        if child.try_wait().unwrap().is_some() {
            let (code, stderr) = wait_exit(&mut child);
            panic!("netbisect ended ({code:?}) before two slots hung:\n{stderr}");
        }
        assert!(Instant::now() < deadline, "two slots never hung");
        std::thread::sleep(Duration::from_millis(50));
    };
    signal(child.id(), libc::SIGINT);
    let (code, stderr) = wait_exit(&mut child);
    assert_eq!(code, Some(130), "{stderr}");
    for pid in &hung {
        assert!(wait_dead(*pid), "the measure command {pid} survived");
    }
    let events = journal_events(&fixture);
    let interrupted = events
        .iter()
        .filter(|event| event["event"] == "interrupted")
        .count();
    assert!(interrupted >= 2, "{stderr}");
    // Slot 2's failures were skips of their commits; the others went on.
    let skips_of_slot_2 = events
        .iter()
        .filter(|event| event["event"] == "skip" && event["slot"] == 2)
        .count();
    assert_eq!(skips_of_slot_2, 1, "{events:?}");
    assert!(
        events
            .iter()
            .any(|event| event["event"] == "sample" && event["slot"] == 0),
        "{events:?}"
    );
}

#[test]
fn jobs_need_the_posterior_method() {
    let fixture = fixture();
    let repo = GitRepo::open(&fixture.repo);
    let ids = linear(&repo, 6, 3, &|_| Vec::new());
    let command = measure_command("");
    let (good, bad) = (ids[0].to_string(), ids[5].to_string());
    fixture.start_measuring(&good, &bad, &command, &["--method", "sequential"]);
    let (code, _, stderr) = fixture.run(&["bisect", "run", "--jobs", "2"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("--method posterior"), "{stderr}");
}
