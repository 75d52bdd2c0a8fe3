//! What a bisection's journal says, read for its page: how it started,
//! each commit's samples, verdict and skip in the order the journal
//! first names them, and how it finished.

use crate::exit::{self, Context};
use archive::Archive;
use archive::journal::BisectSession;
use bisect::JournalEvent;
use bisect::config::BisectConfig;
use bisect::decision::Verdict;
use std::collections::BTreeMap;

/// What the journal says of one commit.
#[derive(Default)]
pub(super) struct CommitLog {
    pub(super) samples: Vec<f64>,
    /// The verdict, the step it was given at (from 1), its samples and
    /// log-likelihood ratio.
    pub(super) verdict: Option<(Verdict, u32, u32, f64)>,
    pub(super) skip: Option<String>,
    pub(super) first_seen: usize,
}

/// The log of `commit`, made when the journal first names it.
fn log_of<'a>(
    commits: &'a mut BTreeMap<String, CommitLog>,
    commit: &str,
    n_seen: &mut usize,
) -> &'a mut CommitLog {
    let first_seen = *n_seen;
    *n_seen += 1;
    commits
        .entry(commit.to_string())
        .or_insert_with(|| CommitLog {
            first_seen,
            ..CommitLog::default()
        })
}

/// The journal's events of `session`, decoded.
pub(super) fn session_events(
    archive: &Archive,
    session: &BisectSession,
) -> exit::Result<Vec<JournalEvent>> {
    let texts = archive
        .session_events(session.id)
        .context("failed to read the archive")?;
    texts
        .iter()
        .map(|text| serde_json::from_str(text))
        .collect::<Result<_, _>>()
        .with_context(|| format!("the journal of bisection session {} is damaged", session.id))
}

/// How a bisection started, as its journal says.
pub(super) struct Start {
    pub(super) good: String,
    pub(super) bad: String,
    pub(super) first_parent: bool,
    pub(super) config: BisectConfig,
}

/// What the journal says: how the bisection started, each commit's log,
/// and how it finished.
pub(super) struct JournalSummary {
    pub(super) start: Option<Start>,
    pub(super) commits: BTreeMap<String, CommitLog>,
    /// The result and the commit of the `finished` event.
    pub(super) finished: Option<(String, Option<String>)>,
}

/// What `events` say, in the order they were journaled.
pub(super) fn summarize(events: &[JournalEvent]) -> JournalSummary {
    let mut summary = JournalSummary {
        start: None,
        commits: BTreeMap::new(),
        finished: None,
    };
    let commits = &mut summary.commits;
    let mut n_seen = 0;
    let mut n_steps = 0;
    for event in events {
        match event {
            JournalEvent::Start {
                good,
                bad,
                first_parent,
                config,
                ..
            } => {
                summary.start = Some(Start {
                    good: good.clone(),
                    bad: bad.clone(),
                    first_parent: *first_parent,
                    config: config.clone(),
                });
            }
            JournalEvent::Archived { commit, samples } => {
                log_of(commits, commit, &mut n_seen)
                    .samples
                    .extend(samples.iter().map(|sample| sample.value));
            }
            JournalEvent::Sample { commit, sample, .. } => {
                log_of(commits, commit, &mut n_seen)
                    .samples
                    .push(sample.value);
            }
            JournalEvent::Skip { commit, reason, .. } => {
                log_of(commits, commit, &mut n_seen).skip = Some(reason.clone());
            }
            JournalEvent::Verdict {
                commit,
                verdict,
                n_samples,
                llr,
            } => {
                n_steps += 1;
                log_of(commits, commit, &mut n_seen).verdict =
                    Some((*verdict, n_steps, *n_samples, *llr));
            }
            JournalEvent::Finished { result, commit } => {
                summary.finished = Some((result.clone(), commit.clone()));
            }
            JournalEvent::Estimate { .. }
            | JournalEvent::Interrupted { .. }
            | JournalEvent::Started { .. } => {}
        }
    }
    summary
}
