//! `bisect status` and `bisect log`: where a bisection stands, replayed
//! from its journal without measuring; `start` prints the same status.
//!
//! `status --json` prints a `netbisect.bisect-status/1` document
//! ([`crate::views::bisect_status::StatusDoc`]).

use super::session::{Loaded, SessionSpec, load, status_of};
use crate::cli::BisectRepoArgs;
use crate::exit::{self, Code};
use crate::global_options::GlobalOptions;
use crate::output;
use crate::views::bisect_status::{STATUS_SCHEMA, StatusContext, StatusDoc};
use archive::journal::BisectSession;
use bisect::graph::{CommitGraph, CommitInfo};
use bisect::progress::Status;
use bisect::report::{BisectResult, Outcome};

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
        || {
            let context = StatusContext::new(&doc);
            output::template(global, "bisect-status", &context, "the status")
        },
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
