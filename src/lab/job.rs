//! The documents a lab keeps beside its queue, each a JSON document with
//! a schema: what a tracker watches ([`TrackSpec`], in the archive's
//! `lab_tracks`, its key the identity of the branch watched that way),
//! what a job asks of a worker ([`JobPayload`]: measure this commit once
//! with this recipe) and what the worker says it gave ([`JobResult`]).

use crate::bisection::Recipe;
use serde::{Deserialize, Serialize};

/// Schema of [`TrackSpec`].
pub const TRACK_SCHEMA: &str = "netbisect.track/1";
/// Schema of [`JobPayload`].
pub const JOB_SCHEMA: &str = "netbisect.lab-job/1";
/// Schema of [`JobResult`].
pub const RESULT_SCHEMA: &str = "netbisect.lab-result/1";

/// The kind of a job that measures a tracked commit.
pub const KIND_MEASURE: &str = "measure";
/// The kind of a job that is a bisection's slot.
pub const KIND_SLOT: &str = "slot";

/// What a tracker watches, and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrackSpec {
    /// Always [`TRACK_SCHEMA`].
    pub schema: String,
    /// The tracker's repository (its working tree, canonical).
    pub repo: String,
    /// The branch followed.
    pub branch: String,
    /// Where the branch is fetched from before each look, if anywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The oldest commit tracked.
    pub since: String,
    /// The kind of testbed the jobs go to: the pool of the workers that
    /// take them.
    pub pool: String,
    /// How each commit is built, measured and decided.
    pub recipe: Recipe,
    /// Slots of a regression's bisection.
    pub jobs: u32,
    /// The command each report is handed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<String>,
    /// The config_key the track's runs are compared under, once a first
    /// run told it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_key: Option<String>,
}

/// What the key of a track covers: the same branch of the same source,
/// measured the same way on the same kind of testbed, is one track,
/// whichever tracker watches it and from where.
#[derive(Serialize)]
struct KeyInput<'a> {
    source: &'a str,
    branch: &'a str,
    pool: &'a str,
    recipe: &'a Recipe,
}

impl TrackSpec {
    /// The track's key: 64 hex digits of the hash of what it covers.
    pub fn key(&self) -> String {
        let input = KeyInput {
            source: self.remote.as_deref().unwrap_or(&self.repo),
            branch: &self.branch,
            pool: &self.pool,
            recipe: &self.recipe,
        };
        // A recipe is plain text and finite figures: it always
        // serialises, and the hash of its canonical bytes names it.
        let bytes = run_record::canonical::to_canonical_bytes(&input).unwrap_or_default();
        run_record::canonical::hash_hex(&bytes)
    }

    /// The job that measures `commit` once with the track's recipe.
    pub fn payload(&self, commit: &str, slot: Option<SlotOf>) -> JobPayload {
        JobPayload {
            schema: JOB_SCHEMA.to_string(),
            commit: commit.to_string(),
            repo: self.repo.clone(),
            remote: self.remote.clone(),
            branch: self.branch.clone(),
            recipe: self.recipe.clone(),
            slot,
        }
    }
}

/// A bisection's slot, as its commands see it (`NETBISECT_SLOT`,
/// `NETBISECT_JOBS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlotOf {
    /// The slot, from 0.
    pub slot: u32,
    /// The bisection's slots.
    pub jobs: u32,
}

/// What a job asks: measure `commit` once with `recipe`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobPayload {
    /// Always [`JOB_SCHEMA`].
    pub schema: String,
    /// The commit.
    pub commit: String,
    /// The tracker's repository, where a worker on the same machine
    /// finds the commit.
    pub repo: String,
    /// Where the commit can be fetched from, by a worker whose repository
    /// lacks it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// The branch that holds the commit.
    pub branch: String,
    /// How to build and measure it.
    pub recipe: Recipe,
    /// The bisection's slot, for a slot's job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<SlotOf>,
}

/// What a job gave: a run (stored with the job's end) and its sample, or
/// why the commit gave none.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JobResult {
    /// Always [`RESULT_SCHEMA`].
    pub schema: String,
    /// The run stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Its sample of the recipe's metric.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<f64>,
    /// Its config_key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_key: Option<String>,
    /// Why the commit gave no run (a failed build, exit 125, a timeout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skip: Option<String>,
    /// The worker that did it.
    pub worker: String,
    /// Seconds from taking the job to its result.
    pub seconds: f64,
}

/// The result of a job, as the archive holds it: `None` for a job not
/// done, or given up (whose result says why, in `given_up`).
pub fn result_of(job: &archive::lab::Job) -> Option<JobResult> {
    serde_json::from_str(job.result.as_deref()?).ok()
}

/// Why a job was given up, from its result.
pub fn given_up_reason(job: &archive::lab::Job) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(job.result.as_deref()?).ok()?;
    value["given_up"].as_str().map(str::to_string)
}

/// The commit a job's payload names.
pub fn commit_of(job: &archive::lab::Job) -> Option<String> {
    let payload: JobPayload = serde_json::from_str(&job.payload).ok()?;
    Some(payload.commit)
}
