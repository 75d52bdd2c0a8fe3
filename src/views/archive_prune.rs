//! The context of `archive-prune`: what a prune removed (or, with
//! `--dry-run`, would remove) and kept, as `archive prune --json` prints
//! it, with the removed runs summed up per testbed and label in a table
//! (`group_lines`) and the kept runs counted per kind of citation
//! (`kept_lines`).

use crate::render::table::{TableRow, lay_out};
use archive::store::{Citation, Pruned, StoredRun};
use serde::Serialize;
use std::collections::BTreeMap;

/// Widest line of the table.
const WIDTH: usize = 80;

/// Ids listed at most after a count of kept runs.
const MAX_IDS_LISTED: usize = 5;

/// What the `archive-prune` template is given.
#[derive(Debug, Serialize)]
pub struct ArchivePruneContext<'a> {
    /// What the prune did, or would do.
    #[serde(flatten)]
    pub pruned: &'a Pruned,
    /// Runs the selection matched, kept ones included.
    pub n_selected: usize,
    /// The removed runs per testbed and label, laid out: runs, kept runs,
    /// the oldest and newest start.
    pub group_lines: Vec<String>,
    /// One line per kind of citation that kept runs: how many, and
    /// which sessions, jobs or regressions.
    pub kept_lines: Vec<String>,
}

impl<'a> ArchivePruneContext<'a> {
    /// The context of `pruned`.
    pub fn new(pruned: &'a Pruned) -> ArchivePruneContext<'a> {
        ArchivePruneContext {
            pruned,
            n_selected: pruned.removed.len() + pruned.kept.len(),
            group_lines: group_lines(pruned),
            kept_lines: kept_lines(pruned),
        }
    }
}

/// A group of selected runs: one testbed and label.
#[derive(Default)]
struct Group {
    n_removed: usize,
    n_kept: usize,
    oldest: Option<String>,
    newest: Option<String>,
}

fn group_of(run: &StoredRun) -> String {
    match &run.label {
        Some(label) => format!("{} {label}", run.testbed),
        None => run.testbed.clone(),
    }
}

fn group_lines(pruned: &Pruned) -> Vec<String> {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for run in &pruned.removed {
        let group = groups.entry(group_of(run)).or_default();
        group.n_removed += 1;
        // The runs come oldest first.
        group.oldest.get_or_insert_with(|| run.started_at.clone());
        group.newest = Some(run.started_at.clone());
    }
    for kept in &pruned.kept {
        groups.entry(group_of(&kept.run)).or_default().n_kept += 1;
    }
    if groups.is_empty() {
        return Vec::new();
    }
    let day = |time: &Option<String>| {
        time.as_deref()
            .map_or("-".to_string(), |time| time.chars().take(10).collect())
    };
    let mut rows = vec![TableRow::of([
        "TESTBED LABEL",
        if pruned.dry_run {
            "TO REMOVE"
        } else {
            "REMOVED"
        },
        "KEPT",
        "OLDEST",
        "NEWEST",
    ])];
    for (name, group) in &groups {
        rows.push(TableRow::of([
            name.clone(),
            group.n_removed.to_string(),
            group.n_kept.to_string(),
            day(&group.oldest),
            day(&group.newest),
        ]));
    }
    lay_out(&rows, &[vec![-1, 1, 1, -1, -1]], WIDTH).unwrap_or_default()
}

/// What kind of thing keeps a run, said.
fn kind_of(citation: Citation) -> (&'static str, i64) {
    match citation {
        Citation::Bisection { session_id } => ("named by the journal of bisection", session_id),
        Citation::Job { job_id } => ("measured by a bisection's lab job", job_id),
        Citation::Regression { regression_id } => {
            ("of a commit named by lab regression", regression_id)
        }
    }
}

fn kept_lines(pruned: &Pruned) -> Vec<String> {
    let mut kinds: BTreeMap<&'static str, (usize, Vec<i64>)> = BTreeMap::new();
    for kept in &pruned.kept {
        let (kind, id) = kind_of(kept.cited_by);
        let (n_runs, ids) = kinds.entry(kind).or_default();
        *n_runs += 1;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    kinds
        .into_iter()
        .map(|(kind, (n_runs, mut ids))| {
            ids.sort_unstable();
            let mut listed: Vec<String> = ids
                .iter()
                .take(MAX_IDS_LISTED)
                .map(i64::to_string)
                .collect();
            if ids.len() > MAX_IDS_LISTED {
                listed.push(format!("{} more", ids.len() - MAX_IDS_LISTED));
            }
            let plural = if ids.len() == 1 { "" } else { "s" };
            format!("{n_runs} {kind}{plural} {}", listed.join(", "))
        })
        .collect()
}
