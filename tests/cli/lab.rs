//! A lab that runs itself, end to end: a branch whose `--measure` script
//! steps down at commit K, its commits pushed one by one to the remote a
//! tracker follows; two workers (two processes) and the tracker on one
//! archive, and nothing typed after they start. The regression is
//! confirmed as K or K+1 lands, bisected with `--jobs 2` on the workers,
//! and its report, naming K, handed to the notification command once.
//! This module holds that test and the lab its tests share; `restarts`
//! kills the processes (and on PostgreSQL restarts the server) in the
//! middle of the work, `scheduled` starts them one job or look at a
//! time, as a lab's own scheduler does; `published` publishes the
//! archive of a bisected regression as a site.
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

mod published;
mod restarts;
mod scheduled;

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
            // The spool of a shared archive, the lab's own.
            .env("XDG_STATE_HOME", self.path("state"))
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

/// Checks that the bisection of session `session_id` took the runs the
/// tracker's jobs had stored of its ends (the head's point and the
/// repeats that confirmed the change) before measuring anything more.
fn check_archived_runs_reused(archive: &Archive, session_id: i64) {
    let by_trackers: BTreeSet<String> = archive
        .jobs(&JobFilter::default())
        .unwrap()
        .iter()
        .filter(|job| job.kind == "measure" && job.state == JobState::Done)
        .filter_map(|job| {
            let result: serde_json::Value = serde_json::from_str(job.result.as_deref()?).ok()?;
            Some(result["run_id"].as_str()?.to_string())
        })
        .collect();
    let events = archive.session_events(session_id).unwrap();
    let reused: Vec<String> = events
        .iter()
        .map(|event| serde_json::from_str::<serde_json::Value>(event).unwrap())
        .filter(|event| event["event"] == "archived")
        .flat_map(|event| {
            event["samples"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .filter_map(|sample| Some(sample["run_id"].as_str()?.to_string()))
        })
        .collect();
    // Each end holds at least the confirmation's five repeats.
    assert!(reused.len() >= 10, "{events:?}");
    assert!(
        reused.iter().all(|run_id| by_trackers.contains(run_id)),
        "{reused:?} {by_trackers:?}"
    );
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
    check_archived_runs_reused(&archive, regressions[0].session_id.unwrap());
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
