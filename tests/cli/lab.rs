//! A lab that runs itself, end to end: a branch whose `--measure` script
//! steps down at commit K, its commits pushed one by one to the remote a
//! tracker follows; two workers (two processes) and the tracker on one
//! archive, and nothing typed after they start. The regression is
//! confirmed as K or K+1 lands, bisected with `--jobs 2` on the workers,
//! and its report, naming K, handed to the notification command once.
//! On PostgreSQL too, with a worker killed (`kill -9`) mid-measurement
//! and the database server restarted mid-bisection: the report still
//! arrives, once, and no job's run is stored twice.
//!
//! The measure script takes milliseconds: it prints the next of the run
//! records this test wrote for its worker and the commit's level (2%
//! noise, the step 10%), and the leases, polls and looks are a fraction
//! of a second.

use archive::lab::{JobFilter, JobState, RegressionState};
use archive::{Archive, Location, RunQuery};
use git2::Oid;
use run_record::spec::TestKind;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use test_fixtures::git::GitRepo;
use test_fixtures::record::RecordBuilder;

const BINARY: &str = env!("CARGO_BIN_EXE_netbisect");

/// Commits of the branch, and the first on the lower level.
const N_COMMITS: usize = 40;
const STEP_AT: usize = 25;
/// The first commit back on the higher level, on the branch of the
/// test of a fix.
const FIXED_AT: usize = 32;
/// Commits on the branch when the tracker starts.
const N_FIRST: usize = 12;
/// Records written per worker and level.
const POOL_SIZE: usize = 300;
/// The workers.
const WORKERS: [&str; 2] = ["lab-a1", "lab-a2"];

/// Prints the next record of this worker's pool for the commit's level;
/// slow (a second) while the file `slow` is in the pool.
const MEASURE: &str = r#"#!/bin/sh
dir="$LAB_POOL/$NETBISECT_TESTBED/$(cat level)"
n=$(cat "$dir/next" 2>/dev/null || echo 0)
echo $((n + 1)) > "$dir/next"
if [ -e "$LAB_POOL/slow" ]; then touch "$LAB_POOL/measuring"; sleep 1; fi
cat "$dir/$n.json"
"#;

/// A small generator of the pools' noise (splitmix64, then Box-Muller).
struct Noise(u64);

impl Noise {
    fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
    }

    fn normal(&mut self) -> f64 {
        let (u1, u2) = (self.uniform().max(1e-12), self.uniform());
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
}

/// Writes each worker's pool of records, for levels 100 and 90.
fn write_pools(pool: &Path) {
    let mut noise = Noise(7);
    for (worker_idx, worker) in WORKERS.iter().enumerate() {
        for level in [100, 90] {
            let dir = pool.join(worker).join(level.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            for idx in 0..POOL_SIZE {
                let value = f64::from(level) * 1e7 * (1.0 + 0.02 * noise.normal());
                let minute = worker_idx * 2 + usize::from(level == 90);
                let record = RecordBuilder::new(TestKind::TcpStream)
                    .testbed("lab")
                    .started_at(&format!(
                        "2026-12-04T10:{minute:02}:{:02}.{:06}Z",
                        idx / 1000,
                        idx % 1000
                    ))
                    .samples(&[value])
                    .build();
                std::fs::write(
                    dir.join(format!("{idx}.json")),
                    serde_json::to_string(&record).unwrap(),
                )
                .unwrap();
            }
        }
    }
}

/// The lab of one test: the upstream repository commits land in, the
/// tracker's clone, the pools, the archive, the inbox of the reports.
struct Lab {
    dir: tempfile::TempDir,
    archive: String,
    upstream: GitRepo,
    commits: Vec<Oid>,
    children: Vec<Child>,
    /// Whether the notification command fails the first time, as a
    /// mail server that is away.
    mail_server_away_once: bool,
}

/// The level of commit `idx` of a branch that steps down at K.
fn stepped(idx: usize) -> u32 {
    if idx >= STEP_AT { 90 } else { 100 }
}

impl Lab {
    fn new(archive: Option<String>) -> Lab {
        Lab::with_levels(archive, stepped)
    }

    /// A lab whose commit `idx` measures at `level_of(idx)`, 100 or 90.
    fn with_levels(archive: Option<String>, level_of: fn(usize) -> u32) -> Lab {
        let dir = tempfile::tempdir().unwrap();
        let archive =
            archive.unwrap_or_else(|| dir.path().join("archive.db").display().to_string());
        write_pools(&dir.path().join("pool"));
        let upstream = GitRepo::init(&dir.path().join("upstream"));
        let commits = upstream.line(
            None,
            N_COMMITS,
            |idx| {
                vec![
                    ("level", level_of(idx).to_string()),
                    ("measure.sh", MEASURE.to_string()),
                    ("version", idx.to_string()),
                ]
            },
            |idx| format!("commit {idx}"),
        );
        upstream.set_main(commits[N_FIRST - 1]);
        git2::Repository::clone(
            &dir.path().join("upstream").display().to_string(),
            dir.path().join("clone"),
        )
        .unwrap();
        Lab {
            dir,
            archive,
            upstream,
            commits,
            children: Vec::new(),
            mail_server_away_once: false,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn location(&self) -> Location {
        Location::parse(std::ffi::OsStr::new(&self.archive)).unwrap()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(BINARY);
        command
            .args(args)
            .env("NETBISECT_ARCHIVE", &self.archive)
            .env("LAB_POOL", self.path("pool"))
            .env_remove("NETBISECT_TEMPLATE_DIR")
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        command
    }

    /// Starts `args` in the background, its stderr in `log`.
    fn start(&mut self, args: &[&str], log: &str) -> u32 {
        let log = std::fs::File::create(self.path(log)).unwrap();
        let child = self.command(args).stderr(log).spawn().unwrap();
        let pid = child.id();
        self.children.push(child);
        pid
    }

    fn start_worker(&mut self, name: &str) -> u32 {
        let dir = self.path(&format!("state-{name}"));
        let dir = dir.display().to_string();
        self.start(
            &[
                "worker",
                "--testbed",
                name,
                "--kind",
                "lab-a",
                "--lease",
                "2",
                "--poll",
                "0.05",
                "--dir",
                &dir,
            ],
            &format!("{name}.log"),
        )
    }

    fn start_tracker(&mut self) -> u32 {
        self.start_tracker_logging("tracker.log")
    }

    fn start_tracker_logging(&mut self, log: &str) -> u32 {
        let clone = self.path("clone").display().to_string();
        let upstream = self.path("upstream").display().to_string();
        let inbox = self.path("inbox").display().to_string();
        let since = self.commits[0].to_string();
        // The guide's recipe, with the mail filed where `sendmail -t`
        // would send it.
        let mut notify = format!(
            "{{ printf 'To: lab@example.org\\nSubject: [netbisect] %s\\n\\n' \"$NETBISECT_SUBJECT\"; \
             cat; }} >> '{inbox}'"
        );
        if self.mail_server_away_once {
            let away = self.path("away").display().to_string();
            notify = format!(
                "if [ ! -e '{away}' ]; then touch '{away}'; echo 'mail server away' >&2; exit 75; fi; \
                 {notify}"
            );
        }
        self.start(
            &[
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
                "lab-a",
                "--jobs",
                "2",
                "--measure",
                "sh measure.sh",
                "--notify",
                &notify,
                "--interval",
                "0.1",
                "--hold",
                "3",
                "--retry",
                "0.2",
            ],
            log,
        )
    }

    /// Moves the upstream branch to commit `idx`: it lands.
    fn land(&self, idx: usize) {
        self.upstream.set_main(self.commits[idx]);
    }

    fn archive(&self) -> Archive {
        Archive::open_location_read_only(&self.location()).unwrap()
    }

    /// Waits until `done` says so of the archive, or fails after
    /// `seconds`, showing the logs.
    fn wait_for(&self, seconds: u64, what: &str, done: impl Fn(&Archive) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        loop {
            if let Ok(archive) = Archive::open_location_read_only(&self.location())
                && done(&archive)
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not after {seconds} s\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits until every job is done and `commit` measured, and stays so
    /// for half a second (five of the tracker's looks: a suspicion's
    /// repeats asked and measured meanwhile), or a regression opens.
    fn wait_settled(&self, seconds: u64, commit: &str) {
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let mut settled_since: Option<Instant> = None;
        loop {
            // The archive is there once the first process opened it.
            let archive = Archive::open_location_read_only(&self.location()).ok();
            let opened = archive.as_ref().is_some_and(|archive| {
                archive
                    .regressions(None)
                    .is_ok_and(|found| found.iter().any(|regression| regression.state.is_active()))
            });
            if opened {
                return;
            }
            if archive
                .as_ref()
                .is_some_and(|archive| settled_with(archive, commit))
            {
                let since = *settled_since.get_or_insert_with(Instant::now);
                if since.elapsed() >= Duration::from_millis(500) {
                    return;
                }
            } else {
                settled_since = None;
            }
            assert!(
                Instant::now() < deadline,
                "{commit} not measured after {seconds} s\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn logs(&self) -> String {
        ["tracker.log", "tracker-2.log", "lab-a1.log", "lab-a2.log"]
            .iter()
            .map(|log| {
                let text = std::fs::read_to_string(self.path(log)).unwrap_or_default();
                let tail: Vec<&str> = text.lines().rev().take(30).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                format!("--- {log}\n{}", tail.join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The reports the notification command received.
    fn inbox(&self) -> String {
        std::fs::read_to_string(self.path("inbox")).unwrap_or_default()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Whether every job of the archive is done or given up, `commit` has a
/// done job, and no suspicion is under confirmation (a tracker slower
/// than the workers may be between two of its repeats).
fn settled_with(archive: &Archive, commit: &str) -> bool {
    let Ok(jobs) = archive.jobs(&JobFilter::default()) else {
        return false;
    };
    let confirming = archive.regressions(None).map_or(true, |found| {
        found
            .iter()
            .any(|regression| regression.state == RegressionState::Suspected)
    });
    !confirming
        && jobs
            .iter()
            .all(|job| matches!(job.state, JobState::Done | JobState::Failed))
        && jobs.iter().any(|job| {
            job.state == JobState::Done && job.payload.contains(&format!("\"commit\":\"{commit}\""))
        })
}

/// The runs each done job stored, and the runs of the archive: one each,
/// and every stored run a job's (no job's run stored twice).
fn check_one_run_per_job(archive: &Archive) {
    let jobs = archive.jobs(&JobFilter::default()).unwrap();
    let mut stored_by_jobs = BTreeMap::new();
    for job in jobs.iter().filter(|job| job.state == JobState::Done) {
        let result: serde_json::Value =
            serde_json::from_str(job.result.as_deref().unwrap()).unwrap();
        if let Some(run_id) = result["run_id"].as_str() {
            let earlier = stored_by_jobs.insert(run_id.to_string(), job.key.clone());
            assert!(
                earlier.is_none(),
                "run {run_id} of two jobs: {earlier:?}, {}",
                job.key
            );
        }
    }
    let runs: BTreeSet<String> = archive
        .runs(&RunQuery::default())
        .unwrap()
        .into_iter()
        .map(|run| run.id)
        .collect();
    let by_jobs: BTreeSet<String> = stored_by_jobs.into_keys().collect();
    assert_eq!(runs, by_jobs, "runs stored besides their jobs'");
}

/// Lands the commits after the first ones one by one, each once the
/// tracker has measured the one before and the queue is empty; returns
/// the commit that had just landed when the regression was opened.
fn land_until_confirmed(lab: &Lab) -> usize {
    lab.wait_settled(120, &lab.commits[N_FIRST - 1].to_string());
    for idx in N_FIRST..N_COMMITS {
        lab.land(idx);
        lab.wait_settled(60, &lab.commits[idx].to_string());
        let archive = lab.archive();
        let active: Vec<_> = archive
            .regressions(None)
            .unwrap()
            .into_iter()
            .filter(|regression| regression.state.is_active())
            .collect();
        if let Some(regression) = active.first() {
            assert_eq!(
                regression.good,
                lab.commits[STEP_AT - 1].to_string(),
                "{active:?}"
            );
            return idx;
        }
    }
    panic!("no regression confirmed\n{}", lab.logs());
}

/// Waits for the report, then checks it names commit K, came once, and
/// that the archive holds one run per job.
fn check_report(lab: &Lab) {
    lab.wait_for(240, "the report handed over", |archive| {
        archive
            .notifications()
            .is_ok_and(|sent| sent.iter().any(|report| report.sent_us.is_some()))
    });
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
    let culprit = lab.commits[STEP_AT].to_string();
    assert_eq!(regressions[0].state, RegressionState::Bisected);
    assert_eq!(regressions[0].culprit.as_deref(), Some(culprit.as_str()));
    // The bisection ran slots on both workers at once.
    let slots = archive
        .jobs(&JobFilter {
            owner: Some(format!("bisection {}", regressions[0].session_id.unwrap())),
            states: Vec::new(),
        })
        .unwrap();
    let workers: BTreeSet<_> = slots.iter().filter_map(|job| job.worker.clone()).collect();
    assert_eq!(workers.len(), 2, "{slots:?}");
    let inbox = lab.inbox();
    assert_eq!(inbox.matches("First bad commit").count(), 1, "{inbox}");
    assert!(inbox.contains(&format!("commit {culprit}")), "{inbox}");
    assert!(inbox.contains("Fixes: "), "{inbox}");
    assert!(
        inbox.starts_with("To: lab@example.org\nSubject: [netbisect] TCP_STREAM 10^6bits/s -"),
        "{inbox}"
    );
    check_one_run_per_job(&archive);
}

#[test]
fn a_step_is_tracked_confirmed_bisected_and_reported_with_nobody_at_the_keyboard() {
    let started = Instant::now();
    let mut lab = Lab::new(None);
    for worker in WORKERS {
        lab.start_worker(worker);
    }
    // Two trackers watch the branch: one regression, one bisection, one
    // report all the same.
    lab.start_tracker();
    lab.start_tracker_logging("tracker-2.log");
    let confirmed_at = land_until_confirmed(&lab);
    assert!(
        confirmed_at == STEP_AT || confirmed_at == STEP_AT + 1,
        "confirmed as commit {confirmed_at} landed\n{}",
        lab.logs()
    );
    check_report(&lab);
    // Still reported once after more looks.
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(lab.inbox().matches("First bad commit").count(), 1);
    // What the lab says of itself.
    let output = lab
        .command(&["regressions"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("bisected"), "{text}");
    assert!(
        text.contains(&lab.commits[STEP_AT].to_string()[..10]),
        "{text}"
    );
    crate::check_mailing_list_rules(&text);
    let output = lab
        .command(&["track", "status"])
        .stdout(Stdio::piped())
        .output()
        .unwrap();
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("lab-a1") && text.contains("lab-a2"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(240));
}

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
}

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
