//! Selectors: which archived runs a word on the command line names, as
//! `compare A B` reads its sides.
//!
//! A selector is tried as each kind in turn, and the first kind that
//! matches wins:
//!
//! 1. a run id prefix of at least [`MIN_RUN_PREFIX`] hex digits matching
//!    exactly one run: that run;
//! 2. a commit id or a prefix of it: all runs of that commit; a prefix
//!    matching runs of several commits is an error naming them;
//! 3. a label: all runs with that label.
//!
//! When a later kind matches too, the selection says so, and the caller
//! warns; `run:X`, `commit:X` and `label:X` force the kind. The filters
//! given (test, testbed) apply to every kind. A selector that matches
//! nothing is an input error that names it.

use crate::exit::{self, Context, InputError};
use crate::render::text::plain;
use archive::{Archive, RunQuery, StoredRun};
use run_record::record::RunRecord;
use std::collections::BTreeSet;

/// Fewest hex digits a bare selector needs to be taken as a run id.
pub const MIN_RUN_PREFIX: usize = 6;

/// Commits listed at most in the error for an ambiguous prefix.
const MAX_COMMITS_LISTED: usize = 5;

/// What a selector names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SelectorKind {
    /// One run, by id prefix.
    Run,
    /// The runs of one commit, by commit id prefix.
    Commit,
    /// The runs with one label.
    Label,
}

impl SelectorKind {
    /// The order bare selectors are tried in.
    const ORDER: [SelectorKind; 3] = [SelectorKind::Run, SelectorKind::Commit, SelectorKind::Label];

    fn name(self) -> &'static str {
        match self {
            SelectorKind::Run => "run",
            SelectorKind::Commit => "commit",
            SelectorKind::Label => "label",
        }
    }
}

/// A selector as given on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Selector {
    /// The text as given, `commit:` and the like included.
    pub given: String,
    /// The kind forced by a `run:`, `commit:` or `label:` prefix.
    pub forced: Option<SelectorKind>,
    /// The text without that prefix.
    pub value: String,
}

impl Selector {
    /// Reads a selector; an empty one is an input error.
    pub fn parse(given: &str) -> Result<Selector, InputError> {
        let (forced, value) = SelectorKind::ORDER
            .iter()
            .find_map(|kind| {
                given
                    .strip_prefix(kind.name())
                    .and_then(|rest| rest.strip_prefix(':'))
                    .map(|rest| (Some(*kind), rest))
            })
            .unwrap_or((None, given));
        if value.is_empty() {
            return Err(InputError(format!("empty selector '{given}'")));
        }
        Ok(Selector {
            given: given.to_string(),
            forced,
            value: value.to_string(),
        })
    }
}

/// The runs a selector names.
#[derive(Debug)]
pub struct Selection {
    /// The selector and what it resolved to, for a table's header.
    pub description: String,
    /// The runs, oldest first.
    pub records: Vec<RunRecord>,
    /// A warning when other kinds match too.
    pub ambiguity: Option<String>,
}

/// What one kind of a selector matched.
struct Match {
    kind: SelectorKind,
    /// The query that selects exactly these runs.
    query: RunQuery,
    /// Their indexed columns, oldest first.
    runs: Vec<StoredRun>,
}

/// Resolves `selector` against `archive`, with `filters` (test, testbed)
/// applied to every kind.
pub fn resolve(
    archive: &Archive,
    selector: &Selector,
    filters: &RunQuery,
) -> exit::Result<Selection> {
    let kinds: &[SelectorKind] = match &selector.forced {
        Some(kind) => std::slice::from_ref(kind),
        None => &SelectorKind::ORDER,
    };
    let mut matches = Vec::new();
    for &kind in kinds {
        if let Some(found) = match_kind(archive, selector, kind, filters)? {
            matches.push(found);
        }
    }
    let mut matches = matches.into_iter();
    let Some(chosen) = matches.next() else {
        return Err(no_match(selector, filters).into());
    };
    let others: Vec<Match> = matches.collect();
    let ambiguity = (!others.is_empty()).then(|| {
        let also: Vec<String> = others
            .iter()
            .map(|other| format!("a {} ({})", other.kind.name(), runs_text(other.runs.len())))
            .collect();
        let forms: Vec<String> = others
            .iter()
            .map(|other| format!("{}:{}", other.kind.name(), selector.value))
            .collect();
        format!(
            "'{}' is taken as a {}, but also matches {}; write {} for that",
            selector.given,
            chosen.kind.name(),
            also.join(" and "),
            forms.join(" or ")
        )
    });
    let records = archive
        .records(&chosen.query)
        .with_context(|| format!("failed to read the runs of '{}'", selector.given))?;
    Ok(Selection {
        description: describe(selector, &chosen, &records),
        records,
        ambiguity,
    })
}

/// The runs `selector` matches as `kind`, if any.
fn match_kind(
    archive: &Archive,
    selector: &Selector,
    kind: SelectorKind,
    filters: &RunQuery,
) -> exit::Result<Option<Match>> {
    let value = &selector.value;
    let forced = selector.forced.is_some();
    let read = |query: &RunQuery| {
        archive
            .runs(query)
            .with_context(|| format!("failed to look up '{}'", selector.given))
    };
    match kind {
        SelectorKind::Run => {
            let is_hex = value.bytes().all(|byte| byte.is_ascii_hexdigit());
            if !forced && (value.len() < MIN_RUN_PREFIX || !is_hex) {
                return Ok(None);
            }
            let query = RunQuery {
                id_prefix: Some(value.to_ascii_lowercase()),
                limit: Some(2),
                ..filters.clone()
            };
            let runs = read(&query)?;
            if runs.len() > 1 && forced {
                return Err(InputError(format!(
                    "run id prefix '{value}' matches several runs; give more digits"
                ))
                .into());
            }
            Ok((runs.len() == 1).then(|| Match {
                kind,
                query: RunQuery {
                    id_prefix: Some(runs[0].id.clone()),
                    limit: None,
                    ..filters.clone()
                },
                runs,
            }))
        }
        SelectorKind::Commit => {
            let query = RunQuery {
                commit_prefix: Some(value.clone()),
                ..filters.clone()
            };
            let runs = read(&query)?;
            let commits: BTreeSet<&str> = runs
                .iter()
                .filter_map(|run| run.commit.as_deref())
                .collect();
            if commits.len() > 1 {
                let mut listed: Vec<String> = commits
                    .iter()
                    .take(MAX_COMMITS_LISTED)
                    .map(|commit| plain(commit).into_owned())
                    .collect();
                if commits.len() > MAX_COMMITS_LISTED {
                    listed.push("...".to_string());
                }
                return Err(InputError(format!(
                    "commit prefix '{value}' matches runs of {} commits ({}); give more digits",
                    commits.len(),
                    listed.join(", ")
                ))
                .into());
            }
            let Some(commit) = commits.first() else {
                return Ok(None);
            };
            let exact = RunQuery {
                commit_prefix: Some((*commit).to_string()),
                ..filters.clone()
            };
            Ok(Some(Match {
                kind,
                query: exact,
                runs,
            }))
        }
        SelectorKind::Label => {
            let query = RunQuery {
                label: Some(value.clone()),
                ..filters.clone()
            };
            let runs = read(&query)?;
            Ok((!runs.is_empty()).then_some(Match { kind, query, runs }))
        }
    }
}

fn runs_text(n_runs: usize) -> String {
    format!("{n_runs} run{}", if n_runs == 1 { "" } else { "s" })
}

/// The error for a selector that matches nothing.
fn no_match(selector: &Selector, filters: &RunQuery) -> InputError {
    let kinds = match selector.forced {
        Some(kind) => format!("as a {}", kind.name()),
        None => "as a run id, commit or label".to_string(),
    };
    let mut filtered = Vec::new();
    if let Some(test) = filters.test {
        filtered.push(format!("--test {}", test.name()));
    }
    if let Some(testbed) = &filters.testbed {
        filtered.push(format!("--testbed {testbed}"));
    }
    let filtered = if filtered.is_empty() {
        String::new()
    } else {
        format!(" with {}", filtered.join(" "))
    };
    InputError(format!(
        "'{}' matches no archived run {kinds}{filtered}",
        selector.given
    ))
}

/// First 12 characters of an id, as tables print them.
fn short(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// ", kernel R" when `records` ran on one kernel release, ", N kernels"
/// on several, nothing when none is known: the end of a side's header.
pub fn kernels_of(records: &[RunRecord]) -> String {
    let kernels: BTreeSet<&str> = records
        .iter()
        .filter_map(|record| {
            record
                .subject
                .kernel_release
                .as_deref()
                .or(record.env.local.kernel_release.as_deref())
        })
        .collect();
    match kernels.len() {
        0 => String::new(),
        1 => format!(", kernel {}", kernels.first().copied().unwrap_or_default()),
        n_kernels => format!(", {n_kernels} kernels"),
    }
}

/// The header text of a side: the selector, then what it resolved to,
/// with the number of runs, commits and kernels it holds (or the one).
fn describe(selector: &Selector, found: &Match, records: &[RunRecord]) -> String {
    let runs = &found.runs;
    let commits: BTreeSet<&str> = runs
        .iter()
        .filter_map(|run| run.commit.as_deref())
        .collect();
    let what = match found.kind {
        SelectorKind::Run => {
            let run = &runs[0];
            match &run.commit {
                Some(commit) => format!("run {} of commit {}", short(&run.id), short(commit)),
                None => format!("run {}", short(&run.id)),
            }
        }
        SelectorKind::Commit => {
            let commit = commits.first().copied().unwrap_or_default();
            let describe = runs.iter().find_map(|run| run.describe.as_deref());
            match describe {
                Some(describe) => format!(
                    "commit {} {describe}, {}",
                    short(commit),
                    runs_text(runs.len())
                ),
                None => format!("commit {}, {}", short(commit), runs_text(runs.len())),
            }
        }
        SelectorKind::Label => match commits.len() {
            0 => format!("label, {}", runs_text(runs.len())),
            1 => format!(
                "label, {} of commit {}",
                runs_text(runs.len()),
                short(commits.first().copied().unwrap_or_default())
            ),
            n_commits => format!("label, {} of {n_commits} commits", runs_text(runs.len())),
        },
    };
    let on = kernels_of(records);
    format!("{} ({what}{on})", selector.given)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forced_kinds_are_read_from_the_prefix() {
        let parsed = Selector::parse("label:base").unwrap();
        assert_eq!(parsed.forced, Some(SelectorKind::Label));
        assert_eq!(parsed.value, "base");
        let parsed = Selector::parse("commit:abc").unwrap();
        assert_eq!(parsed.forced, Some(SelectorKind::Commit));
        let parsed = Selector::parse("run:0a1b2c").unwrap();
        assert_eq!(parsed.forced, Some(SelectorKind::Run));
        let parsed = Selector::parse("v6.8:patched").unwrap();
        assert_eq!(parsed.forced, None);
        assert_eq!(parsed.value, "v6.8:patched");
        assert!(Selector::parse("label:").is_err());
        assert!(Selector::parse("").is_err());
    }
}
