//! The git side of the range: open the user's repository (never bare,
//! never with uncommitted changes to tracked files), resolve the good and
//! bad revisions, and load the commits reachable from bad and not from
//! good, merges included (or first parents only), into a
//! [`CommitGraph`].
//!
//! For `history`, [`commits_in_order`] lists the commits of a range
//! oldest first, from a repository opened with [`discover`]
//! (which, unlike [`open_repository`], accepts a bare repository or
//! uncommitted changes, since nothing is checked out).
//!
//! Nothing here writes to the repository.

use crate::graph::{CommitGraph, CommitInfo, Node};
use git2::{Oid, Repository, Sort, StatusOptions};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

/// Why a range cannot be loaded.
#[derive(Debug, thiserror::Error)]
pub enum RangeError {
    /// The path is not a git repository.
    #[error("cannot open git repository {path}")]
    Open {
        /// The path given.
        path: PathBuf,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
    /// The repository has no working tree.
    #[error("{0} is a bare repository: bisect needs one with a working tree")]
    Bare(PathBuf),
    /// Tracked files have uncommitted changes.
    #[error("{path} has uncommitted changes ({files}): commit or stash them first")]
    Dirty {
        /// The repository.
        path: PathBuf,
        /// Some of the changed files.
        files: String,
    },
    /// A revision does not name a commit.
    #[error("unknown revision '{rev}'")]
    Resolve {
        /// The revision as given.
        rev: String,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
    /// A range form that is not supported.
    #[error("unsupported range '{0}': give A..B or a single revision")]
    UnsupportedRange(String),
    /// Good is not an ancestor of bad.
    #[error(
        "the good commit {good} is not an ancestor of the bad commit {bad}{}",
        match merge_base {
            Some(base) => format!("; their merge base is {base}: if it is good, use it as good"),
            None => "; they share no history".to_string(),
        }
    )]
    NotAncestor {
        /// Good commit id.
        good: String,
        /// Bad commit id.
        bad: String,
        /// Their merge base, if any.
        merge_base: Option<String>,
    },
    /// Bad is an ancestor of good: the two were given the wrong way round.
    #[error(
        "the good commit {good} comes after the bad commit {bad}: are good and bad \
         swapped? good is the older commit (the old performance), bad the newer, \
         even when the newer is the faster"
    )]
    Swapped {
        /// Good commit id.
        good: String,
        /// Bad commit id.
        bad: String,
    },
    /// Good and bad are the same commit.
    #[error("good and bad are the same commit {0}")]
    SameCommit(String),
    /// Any other libgit2 failure.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
}

/// Opens the repository at `path` (or the one containing it) and checks
/// that it has a working tree and no uncommitted changes to tracked files.
pub fn open_repository(path: &Path) -> Result<Repository, RangeError> {
    let repo = Repository::discover(path).map_err(|source| RangeError::Open {
        path: path.to_path_buf(),
        source,
    })?;
    if repo.is_bare() {
        return Err(RangeError::Bare(path.to_path_buf()));
    }
    let mut options = StatusOptions::new();
    options.include_untracked(false).include_ignored(false);
    let changed: Vec<String> = {
        let statuses = repo.statuses(Some(&mut options))?;
        statuses
            .iter()
            .filter(|entry| entry.status() != git2::Status::CURRENT)
            .filter_map(|entry| entry.path().ok().map(str::to_string))
            .collect()
    };
    if !changed.is_empty() {
        let mut files = changed
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if changed.len() > 3 {
            files.push_str(&format!(" and {} more", changed.len() - 3));
        }
        return Err(RangeError::Dirty {
            path: path.to_path_buf(),
            files,
        });
    }
    Ok(repo)
}

/// Opens the repository at `path` (or the one containing it) as it is:
/// bare or not, clean or not. For reading, and for a bisection already
/// started, whose steps never touch the user's checkout.
pub fn discover(path: &Path) -> Result<Repository, RangeError> {
    Repository::discover(path).map_err(|source| RangeError::Open {
        path: path.to_path_buf(),
        source,
    })
}

/// The commits of `range`, oldest first (parents before children), as
/// full hex ids. `range` is `A..B` (reachable from B and not from A, as
/// `git log A..B` lists them; an empty side means `HEAD`) or a single
/// revision (it and all its ancestors). With `first_parent`, only first
/// parents are followed, as `git log --first-parent` does. Symmetric
/// ranges (`A...B`) are refused.
pub fn commits_in_order(
    repo: &Repository,
    range: &str,
    first_parent: bool,
) -> Result<Vec<String>, RangeError> {
    if range.contains("...") {
        return Err(RangeError::UnsupportedRange(range.to_string()));
    }
    let mut walk = repo.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)?;
    if first_parent {
        walk.simplify_first_parent()?;
    }
    match range.split_once("..") {
        Some((from, to)) => {
            let or_head = |rev: &str| {
                if rev.is_empty() {
                    "HEAD".to_string()
                } else {
                    rev.to_string()
                }
            };
            walk.push(resolve(repo, &or_head(to))?)?;
            walk.hide(resolve(repo, &or_head(from))?)?;
        }
        None => walk.push(resolve(repo, range)?)?,
    }
    walk.map(|oid| oid.map(|oid| oid.to_string()).map_err(RangeError::from))
        .collect()
}

/// Resolves `rev` (anything `git rev-parse` takes) to a commit id.
pub fn resolve(repo: &Repository, rev: &str) -> Result<Oid, RangeError> {
    let object = repo
        .revparse_single(rev)
        .map_err(|source| RangeError::Resolve {
            rev: rev.to_string(),
            source,
        })?;
    let commit = object
        .peel_to_commit()
        .map_err(|source| RangeError::Resolve {
            rev: rev.to_string(),
            source,
        })?;
    Ok(commit.id())
}

/// What a commit is, for the report.
pub fn commit_info(repo: &Repository, oid: Oid) -> Result<CommitInfo, RangeError> {
    let commit = repo.find_commit(oid)?;
    let author = commit.author();
    let seconds = author.when().seconds();
    let time = if seconds >= 0 {
        UNIX_EPOCH + Duration::from_secs(seconds.unsigned_abs())
    } else {
        UNIX_EPOCH - Duration::from_secs(seconds.unsigned_abs())
    };
    Ok(CommitInfo {
        id: oid.to_string(),
        subject: commit.summary().ok().flatten().unwrap_or("").to_string(),
        author: format!(
            "{} <{}>",
            author.name().unwrap_or(""),
            author.email().unwrap_or("")
        ),
        date: run_record::time::rfc3339_utc(time),
    })
}

/// Loads the commits reachable from `bad` and not from `good`. Good must
/// be an ancestor of bad, as `git bisect` needs it to be; when bad is an
/// ancestor of good instead, the error asks whether they were swapped;
/// otherwise it names their merge base.
pub fn load(
    repo: &Repository,
    good: Oid,
    bad: Oid,
    first_parent: bool,
) -> Result<CommitGraph, RangeError> {
    if good == bad {
        return Err(RangeError::SameCommit(good.to_string()));
    }
    if !repo.graph_descendant_of(bad, good)? {
        if repo.graph_descendant_of(good, bad)? {
            return Err(RangeError::Swapped {
                good: good.to_string(),
                bad: bad.to_string(),
            });
        }
        return Err(RangeError::NotAncestor {
            good: good.to_string(),
            bad: bad.to_string(),
            merge_base: repo.merge_base(good, bad).ok().map(|oid| oid.to_string()),
        });
    }
    let mut walk = repo.revwalk()?;
    walk.set_sorting(Sort::TOPOLOGICAL | Sort::REVERSE)?;
    if first_parent {
        walk.simplify_first_parent()?;
    }
    walk.push(bad)?;
    walk.hide(good)?;
    let oids = walk.collect::<Result<Vec<Oid>, git2::Error>>()?;
    let position: HashMap<Oid, usize> = oids
        .iter()
        .enumerate()
        .map(|(node_idx, &oid)| (oid, node_idx))
        .collect();
    let mut nodes = Vec::with_capacity(oids.len());
    for &oid in &oids {
        let commit = repo.find_commit(oid)?;
        let parent_ids: Vec<Oid> = if first_parent {
            commit.parent_ids().take(1).collect()
        } else {
            commit.parent_ids().collect()
        };
        nodes.push(Node {
            info: commit_info(repo, oid)?,
            parents: parent_ids
                .iter()
                .filter_map(|parent| position.get(parent).copied())
                .collect(),
        });
    }
    let graph = CommitGraph {
        good: commit_info(repo, good)?,
        nodes,
        first_parent,
    };
    graph
        .validate()
        .map_err(|err| RangeError::Git(git2::Error::from_str(&err.to_string())))?;
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::*;
    use test_fixtures::git::GitRepo;

    #[test]
    fn lists_a_range_oldest_first_with_or_without_side_branches() {
        // root - a - b ------- m - c   (m merges s2 into b)
        //             \       /
        //              s1 - s2
        let dir = tempfile::tempdir().unwrap();
        let repo = GitRepo::init(dir.path());
        let root = repo.commit_files(&[], &[], "root");
        let a = repo.commit_files(&[], &[root], "a");
        let b = repo.commit_files(&[], &[a], "b");
        let s1 = repo.commit_files(&[], &[b], "s1");
        let s2 = repo.commit_files(&[], &[s1], "s2");
        let m = repo.commit_files(&[], &[b, s2], "m");
        let c = repo.commit_files(&[], &[m], "c");
        repo.set_main(c);
        repo.reference("refs/tags/start", a, true, "test").unwrap();
        let ids = |oids: &[Oid]| oids.iter().map(Oid::to_string).collect::<Vec<_>>();

        let all = commits_in_order(&repo, "start..main", false).unwrap();
        assert_eq!(all.len(), 5);
        assert_eq!(all[0], b.to_string());
        assert_eq!(all[3..], ids(&[m, c]));
        let position = |oid: Oid| all.iter().position(|id| *id == oid.to_string()).unwrap();
        assert!(position(s1) < position(s2) && position(s2) < position(m));

        assert_eq!(
            commits_in_order(&repo, "start..main", true).unwrap(),
            ids(&[b, m, c])
        );
        // An empty side is HEAD; a single revision brings all ancestors.
        assert_eq!(
            commits_in_order(&repo, &format!("{}..", &m.to_string()[..10]), false).unwrap(),
            ids(&[c])
        );
        assert_eq!(
            commits_in_order(&repo, "start", false).unwrap(),
            ids(&[root, a])
        );
        assert!(
            commits_in_order(&repo, "main..start", false)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn unknown_revisions_and_symmetric_ranges_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let repo = GitRepo::init(dir.path());
        let root = repo.commit_files(&[], &[], "root");
        repo.reference("refs/heads/main", root, true, "test")
            .unwrap();
        let err = commits_in_order(&repo, "nope..main", false).unwrap_err();
        assert_eq!(err.to_string(), "unknown revision 'nope'");
        let err = commits_in_order(&repo, "main...main", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unsupported range 'main...main': give A..B or a single revision"
        );
        assert!(matches!(
            discover(&dir.path().join("missing")),
            Err(RangeError::Open { .. })
        ));
        let bare_dir = tempfile::tempdir().unwrap();
        Repository::init_bare(bare_dir.path()).unwrap();
        assert!(discover(bare_dir.path()).is_ok());
    }
}
