//! A bisection session's state: its description as `start` recorded it
//! ([`SessionSpec`], JSON in the archive, `crate::bisection`'s), the
//! session loaded with its
//! repository and range, its journal, and the state directory in the
//! repository's git directory (`.git/netbisect/`: the bisect worktree and
//! the lock of `bisect run`). The commands after `start` find their
//! session by `--repo`, else by the repository of the current directory,
//! else as the one bisection in progress in the archive's session store.

use super::input;
pub(super) use crate::bisection::{SESSION_SCHEMA, SessionSpec};
use crate::exit::{self, Context};
use crate::global_options::GlobalOptions;
use archive::Archive;
use archive::journal::BisectSession;
use bisect::engine;
use bisect::graph::CommitGraph;
use bisect::progress::Status;
use bisect::range;
use git2::Repository;
use std::path::{Path, PathBuf};

/// Name of the bisect worktree, and of its directory under the state dir.
pub(super) const WORKTREE_NAME: &str = "netbisect";

/// The canonical working tree of the repository at (or containing) `path`.
pub(super) fn repo_key(repo: &Repository, path: &Path) -> exit::Result<String> {
    let workdir = repo.workdir().ok_or_else(|| {
        input(format!(
            "{} is a bare repository: bisect needs one with a working tree",
            path.display()
        ))
    })?;
    let canonical = std::fs::canonicalize(workdir)
        .with_context(|| format!("failed to resolve {}", workdir.display()))?;
    Ok(canonical.display().to_string())
}

/// Where the bisect worktree and the lock live: `netbisect/` in the
/// repository's (common) git directory.
pub(super) fn state_dir(repo: &Repository) -> PathBuf {
    repo.commondir().join("netbisect")
}

/// An active session with its repository and range.
pub(super) struct Loaded {
    pub(super) archive: Archive,
    pub(super) session: BisectSession,
    pub(super) spec: SessionSpec,
    pub(super) repo: Repository,
    pub(super) graph: CommitGraph,
}

/// The active session of the repository at (or containing) `path`; with
/// no path, that of the repository of the current directory, else the
/// one bisection in progress, wherever its repository is.
pub(super) fn load(global: &GlobalOptions, path: Option<&Path>) -> exit::Result<Loaded> {
    // No archive holds no session: said so, and none is created.
    if let Some(archive_path) = crate::store::missing_archive(global)? {
        return Err(input(format!(
            "{} (no archive at {})",
            no_session(None),
            archive_path.display()
        )));
    }
    let archive = crate::store::open_existing_archive(global)?;
    let (repo, session) = find_session(&archive, path)?;
    let spec: SessionSpec = serde_json::from_str(&session.spec)
        .with_context(|| format!("bisection session {} is not readable", session.id))?;
    if spec.schema != SESSION_SCHEMA {
        return Err(input(format!(
            "bisection session {} was written as \"{}\", which this netbisect does not read",
            session.id, spec.schema
        )));
    }
    let good = range::resolve(&repo, &spec.good).map_err(input)?;
    let bad = range::resolve(&repo, &spec.bad).map_err(input)?;
    let graph = range::load(&repo, good, bad, spec.first_parent).map_err(input)?;
    Ok(Loaded {
        archive,
        session,
        spec,
        repo,
        graph,
    })
}

/// The repository and active session that `path` names (see [`load`]).
fn find_session(
    archive: &Archive,
    path: Option<&Path>,
) -> exit::Result<(Repository, BisectSession)> {
    if let Some(path) = path {
        let repo = range::discover(path).map_err(input)?;
        let key = repo_key(&repo, path)?;
        let session = archive
            .active_session(&key)?
            .ok_or_else(|| input(no_session(Some(&key))))?;
        return Ok((repo, session));
    }
    let here = Path::new(".");
    let current = range::discover(here)
        .ok()
        .and_then(|repo| repo_key(&repo, here).ok().map(|key| (repo, key)));
    let mut here_key = None;
    if let Some((repo, key)) = current {
        if let Some(session) = archive.active_session(&key)? {
            return Ok((repo, session));
        }
        here_key = Some(key);
    }
    let mut active: Vec<BisectSession> = archive
        .sessions()?
        .into_iter()
        .filter(BisectSession::is_active)
        .collect();
    match active.len() {
        0 => Err(input(no_session(here_key.as_deref()))),
        1 => {
            let session = active.remove(0);
            let repo = range::discover(Path::new(&session.repo)).map_err(|err| {
                input(format!(
                    "the bisection in progress is of {}, which cannot be opened ({err}): \
                     `netbisect bisect reset --repo PATH` ends it",
                    session.repo
                ))
            })?;
            Ok((repo, session))
        }
        n_active => {
            let repos: Vec<&str> = active.iter().map(|session| session.repo.as_str()).collect();
            Err(input(format!(
                "{n_active} bisections are in progress ({}): say which with --repo PATH",
                repos.join(", ")
            )))
        }
    }
}

fn no_session(key: Option<&str>) -> String {
    match key {
        Some(key) => {
            format!("no bisection in progress for {key}: start one with `netbisect bisect start`")
        }
        None => "no bisection in progress here or elsewhere: start one with \
                 `netbisect bisect start --repo PATH`"
            .to_string(),
    }
}

/// Holds the state directory's lock: one `bisect run` per repository at a
/// time. The kernel drops it when the process dies, however it dies.
pub(super) fn lock_state(dir: &Path) -> exit::Result<std::fs::File> {
    std::fs::create_dir_all(dir).with_context(|| format!("failed to create {}", dir.display()))?;
    let path = dir.join("lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("failed to open {}", path.display()))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(std::fs::TryLockError::WouldBlock) => Err(input(format!(
            "another `netbisect bisect run` is working on this repository (it holds {})",
            path.display()
        ))),
        Err(std::fs::TryLockError::Error(err)) => {
            Err(exit::Failure::from(err).context(format!("failed to lock {}", path.display())))
        }
    }
}

pub(super) fn load_events(loaded: &Loaded) -> exit::Result<Vec<bisect::JournalEvent>> {
    let texts = loaded.archive.session_events(loaded.session.id)?;
    crate::bisection::decode_events(&texts).with_context(|| {
        format!(
            "the journal of bisection session {} is damaged",
            loaded.session.id
        )
    })
}

pub(super) fn status_of(loaded: &Loaded) -> exit::Result<Status> {
    let events = load_events(loaded)?;
    engine::status(&loaded.graph, &loaded.spec.config, &events)
        .context("failed to replay the journal")
}
