//! A lab that outlives its processes: the tracker killed mid-bisection
//! and started again, a notification command that fails once, a fix
//! that lands later; on PostgreSQL a worker killed mid-measurement and
//! the server restarted mid-bisection.

use super::*;

/// Waits until `path` exists.
fn wait_for_file(lab: &Lab, path: &Path, seconds: u64) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !path.exists() {
        assert!(
            Instant::now() < deadline,
            "no {}\n{}",
            path.display(),
            lab.logs()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn on_postgresql_a_killed_worker_and_a_restarted_server_lose_nothing_and_store_nothing_twice() {
    if test_fixtures::skip::unless_slow_tests() {
        return;
    }
    let cluster = match test_fixtures::postgres::Cluster::own() {
        Ok(cluster) => cluster,
        Err(why) => {
            test_fixtures::skip::skip(why);
            return;
        }
    };
    let mut lab = Lab::new(Some(cluster.url(&cluster.database())));
    let mut pids: BTreeMap<&str, u32> = BTreeMap::new();
    for worker in WORKERS {
        pids.insert(worker, lab.start_worker(worker));
    }
    lab.start_tracker();
    lab.wait_settled(120, &lab.commits[N_FIRST - 1].to_string());
    for idx in N_FIRST..STEP_AT - 2 {
        lab.land(idx);
        lab.wait_settled(60, &lab.commits[idx].to_string());
    }

    // A worker killed mid-measurement: its job goes to the other once
    // its lease expires, and is measured and stored once.
    let slow = lab.path("pool").join("slow");
    std::fs::write(&slow, "").unwrap();
    lab.land(STEP_AT - 2);
    wait_for_file(&lab, &lab.path("pool").join("measuring"), 30);
    let taken = lab
        .archive()
        .jobs(&JobFilter {
            owner: None,
            states: vec![JobState::Leased],
        })
        .unwrap();
    let victim = taken[0].worker.clone().unwrap();
    let victim: &str = WORKERS.iter().find(|name| **name == victim).unwrap();
    crate::signals::signal(pids[victim], libc::SIGKILL);
    std::fs::remove_file(&slow).unwrap();
    let killed_job = taken[0].id;
    lab.wait_settled(60, &lab.commits[STEP_AT - 2].to_string());
    let job = lab
        .archive()
        .jobs(&JobFilter::default())
        .unwrap()
        .into_iter()
        .find(|job| job.id == killed_job)
        .unwrap();
    assert_eq!(job.state, JobState::Done);
    assert!(job.attempts >= 2, "{job:?}");
    pids.insert(victim, lab.start_worker(victim));

    // The step, confirmed; then the server restarted mid-bisection.
    lab.land(STEP_AT - 1);
    lab.wait_settled(60, &lab.commits[STEP_AT - 1].to_string());
    let mut idx = STEP_AT;
    loop {
        lab.land(idx);
        lab.wait_settled(60, &lab.commits[idx].to_string());
        let opened = lab
            .archive()
            .regressions(None)
            .unwrap()
            .iter()
            .any(|regression| regression.state.is_active());
        if opened {
            break;
        }
        idx += 1;
        assert!(idx <= STEP_AT + 1, "not confirmed by K+1\n{}", lab.logs());
    }
    // Slow measurements keep the bisection going while the server is
    // stopped and started again.
    std::fs::write(&slow, "").unwrap();
    lab.wait_for(60, "the bisection under way", |archive| {
        archive.jobs(&JobFilter::default()).is_ok_and(|jobs| {
            jobs.iter()
                .any(|job| job.kind == "slot" && job.state == JobState::Done)
        })
    });
    let bisecting = lab.archive().regressions(None).unwrap();
    assert!(
        bisecting
            .iter()
            .any(|regression| regression.state == RegressionState::Bisecting),
        "{bisecting:?}"
    );
    cluster.stop();
    std::thread::sleep(Duration::from_secs(2));
    cluster.start_again();
    std::fs::remove_file(&slow).unwrap();
    check_report(&lab);
    let tracker = std::fs::read_to_string(lab.path("tracker.log")).unwrap();
    assert!(tracker.contains("answers again"), "{tracker}");
    // Each run was kept on this machine until its job ended: none is
    // left there.
    let left = crate::archive_spool::spooled(&lab.path("state"));
    assert!(left.is_empty(), "{left:?}");
}

/// Lands the commits from `from` one by one, each once measured and the
/// queue settled, until `found` says so of the archive; returns the
/// commit that had just landed then.
fn land_until(lab: &Lab, from: usize, what: &str, found: impl Fn(&Archive) -> bool) -> usize {
    for idx in from..N_COMMITS {
        lab.land(idx);
        lab.wait_settled(60, &lab.commits[idx].to_string());
        if found(&lab.archive()) {
            return idx;
        }
    }
    panic!("{what}: not by the last commit\n{}", lab.logs());
}

#[test]
fn a_killed_tracker_carries_on_a_refused_report_is_retried_and_a_fix_is_not_reported() {
    let mut lab = Lab::with_levels(None, |idx| {
        if (STEP_AT..FIXED_AT).contains(&idx) {
            90
        } else {
            100
        }
    });
    lab.mail_server_away_once = true;
    for worker in WORKERS {
        lab.start_worker(worker);
    }
    let tracker = lab.start_tracker();
    lab.wait_settled(120, &lab.commits[N_FIRST - 1].to_string());
    for idx in N_FIRST..STEP_AT {
        lab.land(idx);
        lab.wait_settled(60, &lab.commits[idx].to_string());
    }
    // Slow measurements from the step on, so that the tracker is killed
    // while its bisection waits on a worker.
    let slow = lab.path("pool").join("slow");
    std::fs::write(&slow, "").unwrap();
    let is_open = |archive: &Archive| {
        archive
            .regressions(None)
            .is_ok_and(|found| found.iter().any(|regression| regression.state.is_active()))
    };
    let confirmed_at = land_until(&lab, STEP_AT, "a regression opened", is_open);
    assert!(
        confirmed_at <= STEP_AT + 1,
        "confirmed as commit {confirmed_at} landed\n{}",
        lab.logs()
    );
    lab.wait_for(60, "a bisection's slot taken", |archive| {
        archive.jobs(&JobFilter::default()).is_ok_and(|jobs| {
            jobs.iter()
                .any(|job| job.kind == "slot" && job.state == JobState::Leased)
        })
    });
    crate::signals::signal(tracker, libc::SIGKILL);
    std::fs::remove_file(&slow).unwrap();
    // Started again, the tracker takes the bisection over once the dead
    // one's hold expires, and resumes it from its journal.
    lab.start_tracker_logging("tracker-2.log");
    check_report(&lab);

    // The first report was refused (the mail server away): logged,
    // kept, and handed over on the next try, once.
    let log = std::fs::read_to_string(lab.path("tracker-2.log")).unwrap();
    assert!(
        log.contains("was not handed over: the notification command failed (exit 75): mail server away; tried again in"),
        "{log}"
    );
    let archive = lab.archive();
    let sent = archive.notifications().unwrap();
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0].attempts, 2, "{sent:?}");

    // The metric comes back at FIXED_AT: the regression is marked fixed
    // within a commit, and nothing is reported about it again.
    let is_fixed = |archive: &Archive| {
        archive.regressions(None).is_ok_and(|found| {
            found
                .iter()
                .any(|regression| regression.state == RegressionState::Fixed)
        })
    };
    let fixed_at = land_until(&lab, confirmed_at + 1, "the regression fixed", is_fixed);
    assert!(
        (FIXED_AT..=FIXED_AT + 1).contains(&fixed_at),
        "fixed as commit {fixed_at} landed\n{}",
        lab.logs()
    );
    for idx in fixed_at + 1..fixed_at + 3 {
        lab.land(idx);
        lab.wait_settled(60, &lab.commits[idx].to_string());
    }
    let archive = lab.archive();
    let regressions: Vec<_> = archive
        .regressions(None)
        .unwrap()
        .into_iter()
        .filter(|regression| {
            !matches!(
                regression.state,
                RegressionState::Dismissed | RegressionState::Suspected
            )
        })
        .collect();
    assert_eq!(regressions.len(), 1, "{regressions:?}");
    assert_eq!(regressions[0].state, RegressionState::Fixed);
    let fixed_by = regressions[0].fixed_by.clone().unwrap();
    assert!(
        lab.commits[FIXED_AT..=fixed_at]
            .iter()
            .any(|commit| commit.to_string() == fixed_by),
        "{regressions:?}"
    );
    assert_eq!(archive.notifications().unwrap().len(), 1);
    assert_eq!(lab.inbox().matches("First bad commit").count(), 1);
    let output = lab
        .command(&["regressions"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    let row = text
        .lines()
        .find(|line| line.contains(" fixed "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        row.contains(&fixed_by[..10]) && row.ends_with("sent"),
        "{text}"
    );
    // The suspicion that confirmed the fix is the fix now, not one under
    // way.
    assert!(!text.contains("suspected"), "{text}");
    check_one_run_per_job(&archive);
}
