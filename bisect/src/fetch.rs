//! Fetching a tracked branch: `git fetch REMOTE +refs/heads/BRANCH` into
//! a ref of netbisect's own (`refs/netbisect/fetched/BRANCH`), so that a
//! tracker follows a branch that moves elsewhere (a maintainer's tree, a
//! CI mirror) without touching the repository's own branches or its
//! checkout. The only write to a repository in this crate besides the
//! bisect worktrees.

use git2::{Oid, Repository};

/// Why a branch could not be fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The branch name cannot be part of a ref.
    #[error("'{0}' is not a branch name git takes")]
    BadBranch(String),
    /// git could not fetch it.
    #[error("cannot fetch {branch} from {remote}")]
    Fetch {
        /// The remote, a name or a URL.
        remote: String,
        /// The branch.
        branch: String,
        /// What libgit2 said.
        #[source]
        source: git2::Error,
    },
}

/// The ref a fetched `branch` is kept under.
pub fn fetched_ref(branch: &str) -> String {
    format!("refs/netbisect/fetched/{branch}")
}

/// Fetches `branch` from `remote` (a remote's name in `repo`, or a URL or
/// path) into [`fetched_ref`] and returns the commit it names.
pub fn fetch_branch(repo: &Repository, remote: &str, branch: &str) -> Result<Oid, FetchError> {
    let target = fetched_ref(branch);
    if !git2::Reference::is_valid_name(&target) || branch.starts_with('-') {
        return Err(FetchError::BadBranch(branch.to_string()));
    }
    let failed = |source: git2::Error| FetchError::Fetch {
        remote: remote.to_string(),
        branch: branch.to_string(),
        source,
    };
    let mut found = match repo.find_remote(remote) {
        Ok(named) => named,
        Err(_) => repo.remote_anonymous(remote).map_err(failed)?,
    };
    let refspec = format!("+refs/heads/{branch}:{target}");
    found
        .fetch(&[refspec.as_str()], None, None)
        .map_err(failed)?;
    let fetched = repo.refname_to_id(&target).map_err(failed)?;
    Ok(fetched)
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::Signature;

    fn commit(repo: &Repository, message: &str) -> Oid {
        let signature = Signature::now("t", "t@example.org").unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let parents: Vec<git2::Commit<'_>> = repo
            .head()
            .ok()
            .and_then(|head| head.peel_to_commit().ok())
            .into_iter()
            .collect();
        let parents: Vec<&git2::Commit<'_>> = parents.iter().collect();
        repo.commit(
            Some("HEAD"),
            &signature,
            &signature,
            message,
            &tree,
            &parents,
        )
        .unwrap()
    }

    #[test]
    fn a_branch_is_fetched_into_a_ref_of_its_own_as_it_moves() {
        let dir = tempfile::tempdir().unwrap();
        let upstream = Repository::init(dir.path().join("upstream")).unwrap();
        let first = commit(&upstream, "one");
        let branch = upstream.head().unwrap().shorthand().unwrap().to_string();
        let local = Repository::init(dir.path().join("local")).unwrap();
        let url = dir.path().join("upstream").display().to_string();
        assert_eq!(fetch_branch(&local, &url, &branch).unwrap(), first);
        let second = commit(&upstream, "two");
        assert_eq!(fetch_branch(&local, &url, &branch).unwrap(), second);
        assert!(local.find_commit(second).is_ok());
        assert!(matches!(
            fetch_branch(&local, &url, "no such branch"),
            Err(FetchError::BadBranch(_))
        ));
        assert!(fetch_branch(&local, &url, "missing").is_err());
    }
}
