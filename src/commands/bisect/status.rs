//! `bisect status` and `bisect log`: where a bisection stands, replayed
//! from its journal without measuring; `start` prints the same status.
//!
//! `status --json` prints a `netbisect.bisect-status/1` document
//! ([`StatusDoc`]).

use super::session::{Loaded, SessionSpec, load, status_of};
use crate::cli::BisectRepoArgs;
use crate::exit::{self, Code};
use crate::global_options::GlobalOptions;
use crate::output;
use archive::journal::BisectSession;
use bisect::estimate::Estimate;
use bisect::graph::{CommitGraph, CommitInfo};
use bisect::progress::{Phase, Status};
use bisect::report::Outcome;
use bisect::report::{BisectResult, StepReport};
use serde::Serialize;

/// Schema of [`StatusDoc`].
const STATUS_SCHEMA: &str = "netbisect.bisect-status/1";
/// Where a bisection stands, for `status --json`.
#[derive(Debug, Serialize)]
pub struct StatusDoc {
    /// Always [`STATUS_SCHEMA`].
    pub schema: &'static str,
    /// Session id.
    pub session: i64,
    /// The repository.
    pub repo: String,
    /// Good end.
    pub good: CommitInfo,
    /// Bad end.
    pub bad: CommitInfo,
    /// Commits in the range.
    pub n_commits: u32,
    /// Metric bisected on.
    pub metric: String,
    /// Where the bisection is.
    pub phase: Phase,
    /// `running`, `first_bad`, `range` or `refused`.
    pub state: &'static str,
    /// The commit measured next.
    pub next_commit: Option<CommitInfo>,
    /// Its samples so far.
    pub next_n_samples: u32,
    /// Commits that may still be the culprit.
    pub candidates_left: u32,
    /// Estimated steps left.
    pub est_steps_left: u32,
    /// Samples taken so far, archived ones included.
    pub n_measurements: u32,
    /// Events in the journal.
    pub n_events: u64,
    /// Steps classified so far.
    pub steps: Vec<StepReport>,
    /// What the rest was estimated to take once the ends were measured
    /// (`null` before, or when the ends gave no usable step).
    pub estimate: Option<Estimate>,
}

pub(super) fn status(global: &GlobalOptions, args: &BisectRepoArgs) -> exit::Result<Code> {
    let loaded = load(global, args.repo.as_deref())?;
    let status = status_of(&loaded)?;
    print_status(
        global,
        &loaded.session,
        &loaded.spec,
        &loaded.graph,
        &status,
    )?;
    Ok(Code::Ok)
}

fn state_name(status: &Status) -> &'static str {
    match &status.outcome {
        None => "running",
        Some(Outcome::Refused(_)) => "refused",
        Some(Outcome::Finished(report)) => match report.result {
            BisectResult::FirstBad { .. } => "first_bad",
            BisectResult::Range { .. } => "range",
        },
    }
}

pub(super) fn print_status(
    global: &GlobalOptions,
    session: &BisectSession,
    spec: &SessionSpec,
    graph: &CommitGraph,
    status: &Status,
) -> exit::Result<()> {
    let doc = StatusDoc {
        schema: STATUS_SCHEMA,
        session: session.id,
        repo: spec.repo.clone(),
        good: graph.good.clone(),
        bad: graph.nodes[graph.bad_idx()].info.clone(),
        n_commits: graph.nodes.len() as u32,
        metric: spec.config.metric.clone(),
        phase: status.phase,
        state: state_name(status),
        next_commit: status.next_commit.clone(),
        next_n_samples: status.next_n_samples,
        candidates_left: status.candidates_left,
        est_steps_left: status.est_steps_left,
        n_measurements: status.n_measurements,
        n_events: session.n_events,
        steps: status.steps.clone(),
        estimate: status.estimate.clone(),
    };
    output::emit(
        global,
        || output::line(&doc, "the status"),
        || output::template(global, "bisect-status", &doc, "the status"),
    )
}

/// `git bisect log` lines of the bisection so far.
fn log_lines(loaded: &Loaded, status: &Status) -> Vec<String> {
    if let Some(Outcome::Finished(report)) = &status.outcome {
        return report.log.clone();
    }
    let graph = &loaded.graph;
    let comment =
        |term: &str, commit: &CommitInfo| format!("# {term}: [{}] {}", commit.id, commit.subject);
    let mut lines = vec![if graph.first_parent {
        "git bisect start '--first-parent'".to_string()
    } else {
        "git bisect start".to_string()
    }];
    let bad = &graph.nodes[graph.bad_idx()].info;
    for (term, commit) in [("bad", bad), ("good", &graph.good)] {
        lines.push(comment(term, commit));
        lines.push(format!("git bisect {term} {}", commit.id));
    }
    for step in &status.steps {
        let term = step.verdict.git_term();
        lines.push(comment(term, &step.commit));
        lines.push(format!("git bisect {term} {}", step.commit.id));
    }
    if let Some(Outcome::Refused(_)) = &status.outcome {
        lines.push(
            "# refused: the ends do not differ by more than the noise and the minimum effect"
                .to_string(),
        );
    }
    lines
}

pub(super) fn log(global: &GlobalOptions, args: &BisectRepoArgs) -> exit::Result<Code> {
    let loaded = load(global, args.repo.as_deref())?;
    let status = status_of(&loaded)?;
    let lines = log_lines(&loaded, &status);
    output::emit(
        global,
        || output::line(&lines, "the log"),
        || Ok(format!("{}\n", lines.join("\n"))),
    )?;
    Ok(Code::Ok)
}
