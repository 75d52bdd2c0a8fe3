//! A lab whose scheduler starts the work: `worker --once` and `track
//! --once`, one job or one look at a time; commits that land faster than
//! they are measured, measured newest first, then their gaps.

use super::*;

#[test]
fn a_worker_started_by_a_scheduler_does_one_job_or_none() {
    let lab = Lab::new(None);
    let clone = lab.path("clone").display().to_string();
    let head = lab.commits[N_FIRST - 1].to_string();
    let run = |args: &[&str]| {
        let output = lab
            .command(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    };
    // One look: the head asked for.
    let (code, stderr) = run(&[
        "track",
        "--repo",
        &clone,
        "--branch",
        "main",
        "--since",
        &head,
        "--testbed",
        "lab-a1",
        "--measure",
        "sh measure.sh",
        "--once",
    ]);
    assert_eq!(code, Some(0), "{stderr}");
    let dir = lab.path("state").display().to_string();
    let once = ["worker", "--testbed", "lab-a1", "--once", "--dir", &dir];
    let (code, stderr) = run(&once);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(
        stderr.contains("run ") && stderr.contains(" stored"),
        "{stderr}"
    );
    let (code, stderr) = run(&once);
    assert_eq!(code, Some(0), "{stderr}");
    assert!(stderr.contains("no job of lab-a1 waits"), "{stderr}");
    let archive = lab.archive();
    let jobs = archive.jobs(&JobFilter::default()).unwrap();
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0].state, JobState::Done);
    assert_eq!(archive.count().unwrap(), 1);
    check_one_run_per_job(&archive);
}

#[test]
fn commits_that_land_faster_than_measured_are_measured_newest_first_then_their_gaps() {
    let lab = Lab::new(None);
    let clone = lab.path("clone").display().to_string();
    let upstream = lab.path("upstream").display().to_string();
    let since = lab.commits[0].to_string();
    let dir = lab.path("state").display().to_string();
    let run = |args: &[&str]| {
        let output = lab.command(args).stderr(Stdio::piped()).output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {stderr}");
    };
    // A lab whose scheduler starts a look of the tracker, then one job
    // of its one worker: a look asks for one first measurement at a time.
    let look = || {
        run(&[
            "track",
            "--repo",
            &clone,
            "--remote",
            &upstream,
            "--branch",
            "main",
            "--since",
            &since,
            "--testbed",
            "lab-a1",
            "--measure",
            "sh measure.sh",
            "--once",
        ]);
    };
    let look_and_work = || {
        look();
        run(&["worker", "--testbed", "lab-a1", "--once", "--dir", &dir]);
    };
    let status = || {
        let output = lab
            .command(&["track", "status"])
            .stdout(Stdio::piped())
            .output()
            .unwrap();
        String::from_utf8(output.stdout).unwrap()
    };
    // The commits in the order of their first measurement.
    let measured = || -> Vec<usize> {
        let jobs = lab.archive().jobs(&JobFilter::default()).unwrap();
        let mut firsts: Vec<_> = jobs
            .iter()
            .filter(|job| job.kind == "measure" && job.key.ends_with("/1"))
            .map(|job| (job.id, job.key.clone()))
            .collect();
        firsts.sort();
        firsts
            .iter()
            .map(|(_, key)| {
                lab.commits
                    .iter()
                    .position(|commit| key.contains(&commit.to_string()))
                    .unwrap()
            })
            .collect()
    };
    let measure_all = |n_commits: usize| {
        for _ in 0..3 * n_commits {
            look_and_work();
            if measured().len() == n_commits {
                return;
            }
        }
        panic!("not all {n_commits} commits measured: {:?}", measured());
    };

    // Twelve commits at once: the head, then the middle of the gap, then
    // the middles of the gaps left, until every commit is measured once.
    look();
    let text = status();
    assert!(
        text.contains("next answer: the newest commit's point, once a worker takes its jobs"),
        "{text}"
    );
    measure_all(N_FIRST);
    let order = measured();
    assert_eq!(order[..2], [N_FIRST - 1, (N_FIRST - 1) / 2], "{order:?}");
    let distinct: BTreeSet<usize> = order.iter().copied().collect();
    assert_eq!(distinct, (0..N_FIRST).collect(), "{order:?}");

    // Four more land at once: the newest first again, then its gap; the
    // lab says when it is measured, at the time a job took.
    lab.land(N_FIRST + 3);
    look();
    let text = status();
    assert!(
        text.contains("next answer: the newest commit's point, in about "),
        "{text}"
    );
    measure_all(N_FIRST + 4);
    let order = measured();
    assert_eq!(
        order[N_FIRST..N_FIRST + 2],
        [N_FIRST + 3, N_FIRST + 1],
        "{order:?}"
    );
    let archive = lab.archive();
    assert_eq!(
        archive
            .jobs(&JobFilter::default())
            .unwrap()
            .iter()
            .filter(|job| job.state == JobState::Done)
            .count() as u64,
        archive.count().unwrap()
    );
    check_one_run_per_job(&archive);
}
