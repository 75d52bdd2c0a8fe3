//! Removing runs (`archive prune`): what a prune selects
//! ([`PruneSelection`]), what cites a run so that no prune removes it
//! ([`Citation`]), and what a prune removed, or would remove
//! ([`Pruned`]). Each backend runs one prune in one transaction
//! (`sqlite/prune.rs`, `postgres/prune.rs`): it reads what cites runs
//! with [`CITING_EVENTS`], [`CITING_JOBS`] and [`CITING_REGRESSIONS`]
//! into [`Citations`], selects the runs, sets the cited ones apart
//! ([`Citations::split`]) and deletes the others with their history rows.
//!
//! What cites a run, and why:
//!
//! - a bisection session's journal (any session, running or ended: its
//!   report and the site's page of it are replayed from the journal, and
//!   name the runs each sample came from) cites every run whose id one of
//!   its events names: the samples it measured and those it found in the
//!   archive;
//! - a lab job of a bisection (a payload with a `slot`) cites the run its
//!   result names: a running bisection may not have written that sample
//!   to its journal yet;
//! - a lab regression that is not a dismissed suspicion (suspected,
//!   open, bisecting, bisected, refused or fixed) cites every run of the
//!   commits it names (its good and bad ends, its culprit and the commit
//!   that fixed it): the tracker compares those commits' samples to
//!   confirm the change, to find a fix and to show it, whatever job
//!   measured them.
//!
//! A job of a tracker's own points, a dismissed suspicion and a session's
//! description cite nothing.

use super::query::{RunQuery, StoredRun};
use crate::ArchiveError;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Which runs a prune removes: those `query` selects (its limit unset)
/// and, when `commits` is given, of one of those commits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PruneSelection {
    /// The filters of a selection of runs.
    pub query: RunQuery,
    /// Only runs of these commits (full ids), as a range of git gives
    /// them; `None` for runs of any commit, or of none.
    pub commits: Option<BTreeSet<String>>,
}

impl PruneSelection {
    /// Whether the selection selects anything less than every run: a
    /// prune of the whole archive is refused unless asked for whole.
    pub fn is_narrowed(&self) -> bool {
        let query = &self.query;
        self.commits.is_some()
            || query.commit_prefix.is_some()
            || query.label.is_some()
            || query.id_prefix.is_some()
            || query.config_key_prefix.is_some()
            || query.test.is_some()
            || query.testbed.is_some()
            || query.source_tool.is_some()
            || query.started_before.is_some()
    }
}

/// What keeps a run a prune selected.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Citation {
    /// An event of this bisection session's journal names the run.
    Bisection {
        /// The session's id.
        session_id: i64,
    },
    /// The result of this lab job of a bisection names the run.
    Job {
        /// The job's id.
        job_id: i64,
    },
    /// This lab regression names the run's commit.
    Regression {
        /// The regression's id.
        regression_id: i64,
    },
}

/// A run a prune selected and kept.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct KeptRun {
    /// The run.
    pub run: StoredRun,
    /// The first of what cites it.
    pub cited_by: Citation,
}

/// What one prune did, or would do.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Pruned {
    /// The runs removed (with a dry run: that would be), oldest first.
    pub removed: Vec<StoredRun>,
    /// The runs selected but kept, each with what cites it, oldest first.
    pub kept: Vec<KeptRun>,
    /// Whether nothing was changed (a dry run).
    pub dry_run: bool,
}

/// The journal events that may name a run, with their session: the
/// text of an event that names one has `run_id` in it.
pub(crate) const CITING_EVENTS: &str =
    "SELECT session_id, event FROM bisect_events WHERE event LIKE '%run_id%'";

/// The lab jobs that may name a run: those with a result.
pub(crate) const CITING_JOBS: &str =
    "SELECT id, payload, result FROM lab_jobs WHERE result IS NOT NULL";

/// The lab regressions that cite the runs of their commits.
pub(crate) const CITING_REGRESSIONS: &str = "SELECT id, good, bad, culprit, fixed_by \
     FROM lab_regressions WHERE state <> 'dismissed'";

/// What cites runs, by run id and by commit, as a prune's transaction
/// read it.
#[derive(Debug, Default)]
pub(crate) struct Citations {
    runs: BTreeMap<String, Citation>,
    commits: BTreeMap<String, Citation>,
}

impl Citations {
    /// Notes the runs the journal event `event` of session `session_id`
    /// names.
    pub(crate) fn note_event(&mut self, session_id: i64, event: &str) -> Result<(), ArchiveError> {
        let value = parse(event, || format!("event of bisection session {session_id}"))?;
        let mut run_ids = Vec::new();
        collect_run_ids(&value, &mut run_ids);
        for run_id in run_ids {
            self.runs
                .entry(run_id)
                .or_insert(Citation::Bisection { session_id });
        }
        Ok(())
    }

    /// Notes the run the result of job `job_id` names, when the job is a
    /// bisection's (its payload has a slot).
    pub(crate) fn note_job(
        &mut self,
        job_id: i64,
        payload: &str,
        result: &str,
    ) -> Result<(), ArchiveError> {
        let payload = parse(payload, || format!("payload of lab job {job_id}"))?;
        if payload.get("slot").is_none_or(Value::is_null) {
            return Ok(());
        }
        let result = parse(result, || format!("result of lab job {job_id}"))?;
        if let Some(run_id) = result.get("run_id").and_then(Value::as_str) {
            self.runs
                .entry(run_id.to_string())
                .or_insert(Citation::Job { job_id });
        }
        Ok(())
    }

    /// Notes the commits regression `regression_id` names.
    pub(crate) fn note_regression(
        &mut self,
        regression_id: i64,
        commits: impl IntoIterator<Item = Option<String>>,
    ) {
        for commit in commits.into_iter().flatten() {
            self.commits
                .entry(commit)
                .or_insert(Citation::Regression { regression_id });
        }
    }

    /// What cites `run`, if anything.
    fn citation_of(&self, run: &StoredRun) -> Option<Citation> {
        self.runs.get(&run.id).copied().or_else(|| {
            run.commit
                .as_ref()
                .and_then(|commit| self.commits.get(commit).copied())
        })
    }

    /// `selected` (oldest first) narrowed to `commits`, when given, and
    /// split into the runs to remove and those cited.
    pub(crate) fn split(
        &self,
        selected: Vec<StoredRun>,
        commits: Option<&BTreeSet<String>>,
        dry_run: bool,
    ) -> Pruned {
        let mut pruned = Pruned {
            dry_run,
            ..Pruned::default()
        };
        let in_commits = |run: &StoredRun| match (commits, &run.commit) {
            (None, _) => true,
            (Some(commits), Some(commit)) => commits.contains(commit),
            (Some(_), None) => false,
        };
        for run in selected.into_iter().filter(in_commits) {
            match self.citation_of(&run) {
                Some(cited_by) => pruned.kept.push(KeptRun { run, cited_by }),
                None => pruned.removed.push(run),
            }
        }
        pruned
    }
}

/// `text` read as JSON; text that does not read is
/// [`ArchiveError::UnreadableCitation`], and the prune removes nothing.
fn parse(text: &str, what: impl FnOnce() -> String) -> Result<Value, ArchiveError> {
    serde_json::from_str(text).map_err(|err| ArchiveError::UnreadableCitation {
        what: what(),
        detail: err.to_string(),
    })
}

/// Every string value of a `run_id` member anywhere in `value`: the
/// journal's samples keep their run there, at whatever depth the event
/// nests them (one sample, or a list of them).
fn collect_run_ids(value: &Value, run_ids: &mut Vec<String>) {
    match value {
        Value::Object(members) => {
            for (name, member) in members {
                match (name.as_str(), member) {
                    ("run_id", Value::String(run_id)) => run_ids.push(run_id.clone()),
                    _ => collect_run_ids(member, run_ids),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_run_ids(item, run_ids)),
        _ => {}
    }
}

/// The selection of a prune as [`RunQuery`] selects runs: every filter
/// but the limit, which a prune does not take.
pub(crate) fn checked_query(selection: &PruneSelection) -> Result<RunQuery, ArchiveError> {
    if selection.query.limit.is_some() {
        return Err(ArchiveError::InvalidQuery(
            "a prune removes every run it selects and takes no limit".to_string(),
        ));
    }
    Ok(selection.query.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_are_found_at_any_depth() {
        let mut citations = Citations::default();
        citations
            .note_event(
                3,
                r#"{"event":"archived","commit":"c","samples":[{"value":1.0,"run_id":"aa"},{"value":2.0}]}"#,
            )
            .unwrap();
        citations
            .note_event(
                4,
                r#"{"event":"sample","commit":"c","sample":{"value":1.0,"run_id":"bb"}}"#,
            )
            .unwrap();
        assert_eq!(
            citations.runs.get("aa"),
            Some(&Citation::Bisection { session_id: 3 })
        );
        assert_eq!(
            citations.runs.get("bb"),
            Some(&Citation::Bisection { session_id: 4 })
        );
    }

    #[test]
    fn only_a_bisection_job_cites_its_run() {
        let mut citations = Citations::default();
        let result = r#"{"schema":"x","run_id":"cc","worker":"w","seconds":1.0}"#;
        citations.note_job(1, r#"{"commit":"c"}"#, result).unwrap();
        assert!(citations.runs.is_empty());
        citations
            .note_job(2, r#"{"commit":"c","slot":{"session_id":1}}"#, result)
            .unwrap();
        assert_eq!(citations.runs.get("cc"), Some(&Citation::Job { job_id: 2 }));
    }

    #[test]
    fn text_that_is_not_json_stops_the_prune() {
        let err = Citations::default().note_event(1, "{").unwrap_err();
        assert!(matches!(err, ArchiveError::UnreadableCitation { .. }));
    }
}
