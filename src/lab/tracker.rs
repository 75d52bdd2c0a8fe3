//! A tracker's looks at its branch: fetch it (when it comes from a
//! remote), list the commits since the first tracked, read what the
//! archive holds of each (the runs under the track's config_key, the
//! track's jobs and regressions), make the plan ([`super::plan`]) and do
//! it: put the jobs in the queue, open, dismiss or mark fixed the
//! regressions; then drive, each in a thread of its own, the bisections
//! of the regressions no other tracker drives ([`super::drive`]), and
//! hand the reports that are due to their command ([`super::notify`]).
//!
//! A look keeps nothing of its own between looks but the bisections it
//! drives: everything it decides on is read from the archive, so that a
//! tracker that restarts, or two that watch the same branch, carry on
//! from what is stored.

use super::drive::{DriveOptions, Driven, drive};
use super::job::{KIND_MEASURE, TrackSpec, commit_of, result_of};
use super::notify::{self, Retry, Sent};
use super::plan::{self, Action, CommitJobs, FIX_SUFFIX, HeadState, Inputs, Plan};
use crate::exit::{self, Context};
use archive::lab::{JobFilter, JobState, NewJob, Opened, Regression, RegressionState};
use archive::{Archive, Location, RunQuery};
use bisect::head::HeadConfig;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;

/// How a tracker looks.
#[derive(Clone, Debug)]
pub struct TrackOptions {
    /// The archive.
    pub location: Location,
    /// What it watches.
    pub spec: TrackSpec,
    /// The tracker's name as a driver of bisections and a sender of
    /// reports (`HOST:PID`).
    pub name: String,
    /// How long its hold on a regression lasts.
    pub hold: Duration,
    /// How often a bisection looks at the queue.
    pub poll: Duration,
    /// How a failed report is tried again.
    pub retry: Retry,
    /// Templates overriding the built-in report's.
    pub template_dir: Option<PathBuf>,
}

/// A tracker: its options and the bisections it drives.
pub struct Tracker {
    options: TrackOptions,
    key: String,
    detection: HeadConfig,
    driving: BTreeMap<i64, JoinHandle<exit::Result<Driven>>>,
}

/// What one look found and did, for the progress.
#[derive(Clone, Debug, Default)]
pub struct Looked {
    /// Commits tracked, and those measured.
    pub n_commits: usize,
    /// Commits with samples.
    pub n_measured: usize,
    /// Where the head stands.
    pub head: Option<HeadState>,
    /// Lines to say: regressions opened, fixed, bisected, reports sent.
    pub news: Vec<String>,
    /// Jobs of the track and its bisections waiting or taken.
    pub n_open_jobs: usize,
}

impl Tracker {
    /// A tracker of `options`.
    pub fn new(options: TrackOptions) -> Tracker {
        let config = &options.spec.recipe.config;
        let detection = HeadConfig {
            confirm_repeats: config.decision.min_end_repeats,
            max_confirm_repeats: config.decision.max_repeats.min(30),
            ..HeadConfig::new(config.direction, config.decision.min_effect_pct)
        };
        Tracker {
            key: options.spec.key(),
            options,
            detection,
            driving: BTreeMap::new(),
        }
    }

    /// The track's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The bisections this tracker drives now.
    pub fn n_driving(&self) -> usize {
        self.driving.len()
    }

    /// One look, through `archive`.
    pub fn look(&mut self, archive: &mut Archive) -> exit::Result<Looked> {
        let mut looked = Looked::default();
        let commits = self.commits()?;
        looked.n_commits = commits.len();
        let jobs = archive.jobs(&JobFilter {
            owner: Some(self.key.clone()),
            states: Vec::new(),
        })?;
        if self.options.spec.config_key.is_none() {
            self.options.spec.config_key = jobs
                .iter()
                .filter_map(result_of)
                .find_map(|result| result.config_key);
        }
        archive.note_track(&self.key, &serde_json::to_string(&self.options.spec)?)?;
        let samples = match &self.options.spec.config_key {
            Some(config_key) => self.samples(archive, config_key, &commits)?,
            None => BTreeMap::new(),
        };
        looked.n_measured = samples.values().filter(|s| !s.is_empty()).count();
        let mut regressions = archive.regressions(Some(&self.key))?;
        regressions.extend(archive.regressions(Some(&format!("{}{FIX_SUFFIX}", self.key)))?);
        let plan = plan::look(&Inputs {
            commits: &commits,
            samples: &samples,
            jobs: &per_commit(&jobs),
            regressions: &regressions,
            config: &self.detection,
            capacity: self.capacity(archive)?,
        });
        self.apply(archive, &plan, &mut looked)?;
        looked.head = Some(plan.head);
        self.drive_regressions(archive, &mut looked)?;
        for sent in notify::send_due(archive, &self.options.name, self.options.retry)? {
            looked.news.push(match sent {
                Sent::Handed { regression_id, .. } => {
                    format!("the report of regression {regression_id} was handed to its command")
                }
                Sent::Failed {
                    regression_id,
                    error,
                    retry,
                } => format!(
                    "the report of regression {regression_id} was not handed over: {error}; \
                     tried again in {}",
                    crate::progress::duration_text(retry.as_secs_f64())
                ),
            });
        }
        looked.n_open_jobs = archive
            .jobs(&JobFilter {
                owner: None,
                states: vec![JobState::Queued, JobState::Leased],
            })?
            .len();
        Ok(looked)
    }

    /// The commits tracked, oldest first: the first tracked, then the
    /// branch's first parents after it up to its head (fetched first
    /// when it comes from a remote).
    fn commits(&self) -> exit::Result<Vec<String>> {
        let spec = &self.options.spec;
        let repo = bisect::range::discover(std::path::Path::new(&spec.repo))
            .map_err(|err| exit::Failure::msg(err.to_string()))?;
        let head = match &spec.remote {
            Some(remote) => bisect::fetch::fetch_branch(&repo, remote, &spec.branch)
                .map_err(|err| exit::Failure::msg(format!("{err:#}")))?,
            None => bisect::range::resolve(&repo, &spec.branch)
                .map_err(|err| exit::Failure::msg(err.to_string()))?,
        };
        let mut commits = vec![spec.since.clone()];
        commits.extend(
            bisect::range::commits_in_order(&repo, &format!("{}..{head}", spec.since), true)
                .map_err(|err| exit::Failure::msg(err.to_string()))?,
        );
        Ok(commits)
    }

    /// The samples of each of `commits` under `config_key`, oldest first.
    fn samples(
        &self,
        archive: &Archive,
        config_key: &str,
        commits: &[String],
    ) -> exit::Result<BTreeMap<String, Vec<f64>>> {
        let metric = self.options.spec.recipe.metric()?;
        let query = RunQuery {
            config_key_prefix: Some(config_key.to_string()),
            ..RunQuery::default()
        };
        let tracked: std::collections::BTreeSet<&str> =
            commits.iter().map(String::as_str).collect();
        let mut samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        let runs: Vec<archive::store::SeriesRun> =
            archive.series_runs(&query, metric)?.unwrap_or_default();
        for run in runs {
            let Some(commit) = run
                .commit
                .filter(|commit| tracked.contains(commit.as_str()))
            else {
                continue;
            };
            if run.samples.is_empty() {
                continue;
            }
            let value = run.samples.iter().sum::<f64>() / run.samples.len() as f64;
            samples.entry(commit).or_default().push(value);
        }
        Ok(samples)
    }

    /// How many first measurements may wait in the queue: one per
    /// worker of the pool seen lately, at least one.
    fn capacity(&self, archive: &Archive) -> exit::Result<usize> {
        let now = archive.clock_us()?;
        let live = archive
            .workers()?
            .iter()
            .filter(|worker| worker.pool == self.options.spec.pool)
            .filter(|worker| (now - worker.seen_us) as f64 / 1e6 < crate::views::lab::GONE_AFTER_S)
            .count();
        Ok(live.max(1))
    }

    fn apply(&self, archive: &mut Archive, plan: &Plan, looked: &mut Looked) -> exit::Result<()> {
        let mut new_jobs = Vec::new();
        for action in &plan.actions {
            match action {
                Action::Measure {
                    commit,
                    repeat,
                    priority,
                } => new_jobs.push(NewJob {
                    pool: self.options.spec.pool.clone(),
                    kind: KIND_MEASURE.to_string(),
                    owner: self.key.clone(),
                    key: format!("{}/{commit}/{repeat}", self.key),
                    payload: serde_json::to_string(&self.options.spec.payload(commit, None))?,
                    priority: *priority,
                }),
                Action::Open { good, bad, detail } => {
                    match archive.open_regression(&self.key, good, bad, detail)? {
                        Opened::New(id) => looked.news.push(format!(
                            "regression {id} confirmed between {} and {}; bisecting it",
                            short(good),
                            short(bad)
                        )),
                        Opened::Existing(_) | Opened::AnotherActive(_) => {}
                    }
                }
                Action::Suspect {
                    suffix,
                    good,
                    bad,
                    detail,
                } => {
                    let track = format!("{}{suffix}", self.key);
                    archive.note_suspicion(&track, good, bad, detail)?;
                }
                Action::Dismiss {
                    suffix,
                    good,
                    bad,
                    detail,
                } => {
                    archive.dismiss_suspicion(
                        &format!("{}{suffix}", self.key),
                        good,
                        bad,
                        detail,
                    )?;
                }
                Action::Fixed { id, commit } => {
                    let suspicion_track = format!("{}{FIX_SUFFIX}", self.key);
                    if archive.mark_regression_fixed(*id, commit, &suspicion_track)? {
                        looked
                            .news
                            .push(format!("regression {id} is fixed at {}", short(commit)));
                    }
                }
            }
        }
        if !new_jobs.is_empty() {
            archive.enqueue_jobs(&new_jobs)?;
        }
        Ok(())
    }

    /// Starts a thread driving each active regression of the track that
    /// this tracker does not drive yet, and collects those that ended.
    fn drive_regressions(&mut self, archive: &Archive, looked: &mut Looked) -> exit::Result<()> {
        let ended: Vec<i64> = self
            .driving
            .iter()
            .filter(|(_, thread)| thread.is_finished())
            .map(|(id, _)| *id)
            .collect();
        for id in ended {
            let Some(thread) = self.driving.remove(&id) else {
                continue;
            };
            let outcome = thread
                .join()
                .unwrap_or_else(|_| Err(exit::Failure::msg("the bisection's thread panicked")));
            match outcome {
                Ok(Driven::Culprit(culprit)) => looked.news.push(format!(
                    "regression {id}: the first bad commit is {}",
                    short(&culprit)
                )),
                Ok(Driven::Refused(why)) => {
                    looked
                        .news
                        .push(format!("regression {id}: not bisected: {why}"));
                }
                Ok(Driven::NotNow(_)) => {}
                Err(err) => looked.news.push(format!(
                    "regression {id}: {}",
                    &crate::lab::worker::failure_text(&err)
                )),
            }
        }
        let Some(config_key) = self.options.spec.config_key.clone() else {
            return Ok(());
        };
        let active: Vec<Regression> = archive
            .regressions(Some(&self.key))?
            .into_iter()
            .filter(|regression| regression.state.is_active())
            .collect();
        for regression in active {
            if self.driving.contains_key(&regression.id) {
                continue;
            }
            let options = DriveOptions {
                location: self.options.location.clone(),
                spec: self.options.spec.clone(),
                config_key: config_key.clone(),
                driver: self.options.name.clone(),
                hold: self.options.hold,
                poll: self.options.poll,
                template_dir: self.options.template_dir.clone(),
            };
            let id = regression.id;
            let thread = std::thread::Builder::new()
                .name(format!("bisection-{id}"))
                .spawn(move || drive(&options, &regression))
                .context("failed to start a bisection's thread")?;
            self.driving.insert(id, thread);
        }
        Ok(())
    }

    /// Waits for the bisections this tracker drives to stop (they stop
    /// at a signal, their journals written).
    pub fn stop(&mut self) {
        for (_, thread) in std::mem::take(&mut self.driving) {
            let _ = thread.join();
        }
    }
}

/// The track's point jobs by commit.
fn per_commit(jobs: &[archive::lab::Job]) -> BTreeMap<String, CommitJobs> {
    let mut per_commit: BTreeMap<String, CommitJobs> = BTreeMap::new();
    for job in jobs {
        let Some(commit) = commit_of(job) else {
            continue;
        };
        let entry = per_commit.entry(commit).or_default();
        entry.n_jobs += 1;
        if matches!(job.state, JobState::Queued | JobState::Leased) {
            entry.n_pending += 1;
        }
    }
    per_commit
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

/// Whether `state` names a regression shown in the lab's lists by
/// default (a dismissed suspicion is not one).
pub fn is_listed(state: RegressionState) -> bool {
    state != RegressionState::Dismissed
}
