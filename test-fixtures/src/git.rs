//! Git repositories for tests, made with git2: commits of files with a
//! fixed author and time, so that a history has the same ids on every
//! run, in lines or with merges.
//!
//! File names may hold `/`: the directories are made as needed.

use git2::{Oid, Repository, Signature, Tree};
use std::collections::BTreeMap;
use std::path::Path;

/// The author and committer of every commit: `Ann Tester
/// <ann@example.org>`, at 1_700_000_000 (2023-11-14T22:13:20Z).
pub fn signature() -> Signature<'static> {
    Signature::new(
        "Ann Tester",
        "ann@example.org",
        &git2::Time::new(1_700_000_000, 0),
    )
    .expect("a valid signature")
}

/// A repository with a working tree, made for a test.
///
/// It dereferences to the git2 [`Repository`] for everything else; its
/// own methods have names git2's do not use, so none is hidden.
pub struct GitRepo {
    repo: Repository,
}

impl std::ops::Deref for GitRepo {
    type Target = Repository;

    fn deref(&self) -> &Repository {
        &self.repo
    }
}

impl GitRepo {
    /// A new, empty repository at `path` (made if missing).
    pub fn init(path: &Path) -> GitRepo {
        GitRepo {
            repo: Repository::init(path)
                .unwrap_or_else(|err| panic!("cannot init {}: {err}", path.display())),
        }
    }

    /// The repository at `path`, as made before.
    pub fn open(path: &Path) -> GitRepo {
        GitRepo {
            repo: Repository::open(path)
                .unwrap_or_else(|err| panic!("cannot open {}: {err}", path.display())),
        }
    }

    /// Commits `files` (name, content) over the first parent's tree (a
    /// file not named keeps its content there) on top of `parents`, the
    /// first parent first; returns the commit's id. No branch moves.
    pub fn commit_files(&self, files: &[(&str, &str)], parents: &[Oid], message: &str) -> Oid {
        let base = parents.first().map(|&parent| self.tree_of(parent));
        self.commit_over(base.as_ref(), files, parents, message)
    }

    /// Commits a tree of exactly `files`, whatever the parents held; as
    /// [`commit_files`](Self::commit_files) otherwise.
    pub fn commit_only_files(&self, files: &[(&str, &str)], parents: &[Oid], message: &str) -> Oid {
        self.commit_over(None, files, parents, message)
    }

    /// A line of `n_commits` commits after `parent` (or from a root), the
    /// tree of commit `idx` holding exactly `files_of(idx)`, its message
    /// `message_of(idx)`. Returns the ids, oldest first; no branch moves.
    pub fn line<'a, Content: AsRef<str>>(
        &self,
        parent: Option<Oid>,
        n_commits: usize,
        files_of: impl Fn(usize) -> Vec<(&'a str, Content)>,
        message_of: impl Fn(usize) -> String,
    ) -> Vec<Oid> {
        let mut ids: Vec<Oid> = Vec::with_capacity(n_commits);
        for idx in 0..n_commits {
            let parents: Vec<Oid> = ids.last().copied().or(parent).into_iter().collect();
            let files = files_of(idx);
            let files: Vec<(&str, &str)> = files
                .iter()
                .map(|(name, content)| (*name, content.as_ref()))
                .collect();
            ids.push(self.commit_only_files(&files, &parents, &message_of(idx)));
        }
        ids
    }

    /// Points `main` at `oid`, makes it HEAD and checks it out, discarding
    /// whatever the working tree held.
    pub fn checkout_main(&self, oid: Oid) {
        self.set_main(oid);
        self.repo
            .checkout_head(Some(git2::build::CheckoutBuilder::new().force()))
            .expect("checkout of HEAD");
    }

    /// Points `main` at `oid` and makes it HEAD, leaving the working tree
    /// alone.
    pub fn set_main(&self, oid: Oid) {
        self.repo
            .reference("refs/heads/main", oid, true, "test")
            .expect("refs/heads/main");
        self.repo.set_head("refs/heads/main").expect("HEAD to main");
    }

    /// Puts the lightweight tag `name` on `oid`.
    pub fn tag_commit(&self, name: &str, oid: Oid) {
        let object = self.repo.find_object(oid, None).expect("a commit to tag");
        self.repo
            .tag_lightweight(name, &object, false)
            .unwrap_or_else(|err| panic!("cannot tag {name}: {err}"));
    }

    fn tree_of(&self, commit: Oid) -> Tree<'_> {
        self.repo
            .find_commit(commit)
            .and_then(|commit| commit.tree())
            .unwrap_or_else(|err| panic!("no tree for commit {commit}: {err}"))
    }

    fn commit_over(
        &self,
        base: Option<&Tree<'_>>,
        files: &[(&str, &str)],
        parents: &[Oid],
        message: &str,
    ) -> Oid {
        let tree_id = self.write_tree(base, files);
        let tree = self.repo.find_tree(tree_id).expect("the tree just written");
        let parents: Vec<git2::Commit> = parents
            .iter()
            .map(|&parent| self.repo.find_commit(parent).expect("a parent commit"))
            .collect();
        let parent_refs: Vec<&git2::Commit> = parents.iter().collect();
        let signature = signature();
        self.repo
            .commit(None, &signature, &signature, message, &tree, &parent_refs)
            .expect("a commit")
    }

    /// Writes `base` (or an empty tree) with `files` put in, directories
    /// made or extended as their names say; returns the tree's id.
    fn write_tree(&self, base: Option<&Tree<'_>>, files: &[(&str, &str)]) -> Oid {
        let mut builder = self.repo.treebuilder(base).expect("a tree builder");
        let mut in_dirs: BTreeMap<&str, Vec<(&str, &str)>> = BTreeMap::new();
        for &(name, content) in files {
            match name.split_once('/') {
                Some((dir, rest)) => in_dirs.entry(dir).or_default().push((rest, content)),
                None => {
                    let blob = self.repo.blob(content.as_bytes()).expect("a blob");
                    builder.insert(name, blob, 0o100644).expect("a file entry");
                }
            }
        }
        for (dir, dir_files) in in_dirs {
            let existing = builder
                .get(dir)
                .expect("a tree lookup")
                .map(|entry| entry.id());
            let subtree = existing.map(|id| self.repo.find_tree(id).expect("a subtree"));
            let id = self.write_tree(subtree.as_ref(), &dir_files);
            builder
                .insert(dir, id, 0o040000)
                .expect("a directory entry");
        }
        builder.write().expect("a tree")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commits_inherit_or_replace_their_first_parents_files() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        let repo = GitRepo::init(dir);
        let first = repo.commit_files(&[("a", "1"), ("config/x", "2")], &[], "first");
        let second = repo.commit_files(&[("config/y", "3")], &[first], "second");
        let tree = repo.tree_of(second);
        assert!(tree.get_path(Path::new("a")).is_ok());
        assert!(tree.get_path(Path::new("config/x")).is_ok());
        assert!(tree.get_path(Path::new("config/y")).is_ok());
        let third = repo.commit_only_files(&[("b", "4")], &[second], "third");
        assert_eq!(repo.tree_of(third).len(), 1);
        let merge = repo.commit_files(&[], &[first, third], "merge");
        assert_eq!(repo.find_commit(merge).unwrap().parent_count(), 2);
        let ids = repo.line(
            Some(merge),
            3,
            |_| vec![("c", "5")],
            |idx| format!("commit {idx}"),
        );
        assert_eq!(
            repo.find_commit(ids[0]).unwrap().parent_id(0).unwrap(),
            merge
        );
        repo.checkout_main(ids[2]);
        assert_eq!(std::fs::read_to_string(dir.join("c")).unwrap(), "5");
        repo.tag_commit("E", ids[2]);
        assert_eq!(repo.revparse_single("E").unwrap().id(), ids[2]);
    }
}
