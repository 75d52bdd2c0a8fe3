//! The bisect worktree: one linked git worktree under the bisection's
//! state directory, created once and reused at every step, so that
//! incremental builds stay fast. Commits are checked out there, detached;
//! the user's own checkout is never touched.
//!
//! libgit2 adds a worktree on a branch; a temporary branch is made for
//! that and deleted as soon as the worktree's HEAD is detached, so the
//! user's repository keeps no trace but the worktree entry itself, which
//! [`BisectWorktree::remove`] prunes.

use git2::build::CheckoutBuilder;
use git2::{BranchType, Oid, Repository, WorktreeAddOptions, WorktreePruneOptions};
use std::path::{Path, PathBuf};

/// Why the worktree cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    /// The state directory cannot be made.
    #[error("cannot create {path}")]
    StateDir {
        /// The directory.
        path: PathBuf,
        /// The system error.
        #[source]
        source: std::io::Error,
    },
    /// The path exists and is not this repository's worktree.
    #[error("{0} exists and is not a bisect worktree of this repository")]
    Foreign(PathBuf),
    /// A libgit2 failure.
    #[error("git worktree: {0}")]
    Git(#[from] git2::Error),
}

/// The linked worktree a bisection builds and measures in.
pub struct BisectWorktree {
    path: PathBuf,
    repo: Repository,
}

impl std::fmt::Debug for BisectWorktree {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BisectWorktree")
            .field("path", &self.path)
            .finish()
    }
}

/// Removes the lock files git leaves in the worktree's git directory when
/// a process writing there is killed (`HEAD.lock` mid-checkout,
/// `index.lock`): they would refuse every later checkout. Whoever opens
/// the worktree holds the bisection's own lock (one run of a bisection at
/// a time, one slot per worktree), so no one else is writing there.
fn remove_stale_locks(worktree: &Repository) {
    for name in ["HEAD.lock", "index.lock"] {
        // Absent is the usual case; a lock that cannot be removed makes
        // the checkout fail with git's own words.
        let _ = std::fs::remove_file(worktree.path().join(name));
    }
}

impl BisectWorktree {
    /// Opens the worktree `name` of `repo` at `state_dir/name`, or creates
    /// it there with `start` checked out. The caller holds the
    /// bisection's lock: lock files a killed run left are removed.
    pub fn open_or_create(
        repo: &Repository,
        state_dir: &Path,
        name: &str,
        start: Oid,
    ) -> Result<BisectWorktree, WorktreeError> {
        std::fs::create_dir_all(state_dir).map_err(|source| WorktreeError::StateDir {
            path: state_dir.to_path_buf(),
            source,
        })?;
        let path = state_dir.join(name);
        if let Ok(worktree) = repo.find_worktree(name) {
            if worktree.validate().is_ok() && worktree.path() == path.as_path() {
                let wt_repo = Repository::open(&path)?;
                remove_stale_locks(&wt_repo);
                return Ok(BisectWorktree {
                    path,
                    repo: wt_repo,
                });
            }
            // A stale entry (its directory was deleted): prune it and add
            // the worktree again.
            worktree.prune(Some(
                WorktreePruneOptions::new().valid(true).working_tree(true),
            ))?;
        }
        if path.exists() {
            return Err(WorktreeError::Foreign(path));
        }
        let branch_name = format!("netbisect-worktree-{name}");
        let commit = repo.find_commit(start)?;
        let branch = repo.branch(&branch_name, &commit, true)?;
        let mut options = WorktreeAddOptions::new();
        options.reference(Some(branch.get()));
        repo.worktree(name, &path, Some(&options))?;
        let wt_repo = Repository::open(&path)?;
        wt_repo.set_head_detached(start)?;
        drop(branch);
        if let Ok(mut branch) = repo.find_branch(&branch_name, BranchType::Local) {
            branch.delete()?;
        }
        Ok(BisectWorktree {
            path,
            repo: wt_repo,
        })
    }

    /// Where the worktree is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Checks out `commit` (detached), overwriting changes to tracked
    /// files and leaving untracked ones (build products) in place.
    pub fn checkout(&self, commit: Oid) -> Result<(), WorktreeError> {
        let object = self.repo.find_object(commit, None)?;
        let mut checkout = CheckoutBuilder::new();
        checkout.force();
        self.repo.checkout_tree(&object, Some(&mut checkout))?;
        self.repo.set_head_detached(commit)?;
        Ok(())
    }

    /// The commit checked out.
    pub fn head(&self) -> Result<Oid, WorktreeError> {
        Ok(self.repo.head()?.peel_to_commit()?.id())
    }

    /// Removes the worktree `name` of `repo`: its directory and its entry.
    pub fn remove(repo: &Repository, name: &str) -> Result<(), WorktreeError> {
        if let Ok(worktree) = repo.find_worktree(name) {
            worktree.prune(Some(
                WorktreePruneOptions::new().valid(true).working_tree(true),
            ))?;
        }
        Ok(())
    }
}
