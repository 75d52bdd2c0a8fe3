//! The spool: finished runs kept on this machine while the shared
//! archive (a PostgreSQL server) cannot be reached, until it can.
//!
//! It lives in `$XDG_STATE_HOME/netbisect/spool`, else
//! `~/.local/state/netbisect/spool`, made 0700. Each archive has its own
//! directory there, named by a hash of its address as it is shown (never
//! with its password), holding a file `archive` with that address and
//! one file per run, `RUN_ID.json`, the run's canonical record. A run's
//! file is written whole or not at all (a temporary file, synced, then
//! renamed), and removed only after the archive committed the run: a
//! process killed at any point leaves either nothing, a temporary file
//! that is ignored (and removed once it is an hour old), or a run that
//! is stored again, which the archive takes as a no-op.

use crate::exit::{self, Context, InputError};
use run_record::record::RunRecord;
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How old a temporary file must be before it is taken for one a killed
/// process left behind: younger, another process may still be writing it.
const LEFTOVER_AGE: Duration = Duration::from_secs(3600);

/// The spool directory of one archive.
#[derive(Clone, Debug)]
pub struct Spool {
    dir: PathBuf,
}

impl Spool {
    /// The spool of the archive at `address` (as shown, without a
    /// password) under the user's state directory; an error when neither
    /// `XDG_STATE_HOME` nor `HOME` names one.
    pub fn of_archive(address: &str) -> exit::Result<Spool> {
        let root = spool_root().ok_or_else(|| {
            InputError(
                "no directory to keep runs in: neither XDG_STATE_HOME nor HOME is set".to_string(),
            )
        })?;
        Ok(Spool::under(&root, address))
    }

    /// The spool of the archive at `address` under `root`.
    pub fn under(root: &Path, address: &str) -> Spool {
        let hash = blake3::hash(address.as_bytes()).to_hex();
        Spool {
            dir: root.join(&hash.as_str()[..16]),
        }
    }

    /// The directory of this archive's runs.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Keeps `record` (sealed) for the archive at `address`, durably:
    /// when this returns, the run survives a crash. Returns its file.
    pub fn keep(&self, address: &str, record: &RunRecord) -> exit::Result<PathBuf> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .with_context(|| format!("failed to create directory {}", self.dir.display()))?;
        let bytes = record
            .to_canonical_bytes()
            .context("failed to write the run's record")?;
        let address_file = self.dir.join("archive");
        if !address_file.exists() {
            self.write_atomically(&address_file, format!("{address}\n").as_bytes())?;
        }
        let path = self.dir.join(format!("{}.json", record.id));
        self.write_atomically(&path, &bytes)?;
        Ok(path)
    }

    /// Writes `bytes` to `path` through a temporary file beside it,
    /// synced before the rename and the directory synced after, so that
    /// `path` holds either all of them or what it held before.
    fn write_atomically(&self, path: &Path, bytes: &[u8]) -> exit::Result<()> {
        let failed = || format!("failed to write {}", path.display());
        let mut temporary = tempfile::Builder::new()
            .prefix(".")
            .suffix(".tmp")
            .tempfile_in(&self.dir)
            .with_context(failed)?;
        temporary.write_all(bytes).with_context(failed)?;
        temporary.as_file().sync_all().with_context(failed)?;
        temporary.persist(path).with_context(failed)?;
        std::fs::File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .with_context(failed)?;
        Ok(())
    }

    /// The files of the runs kept, oldest name first; none when the
    /// directory does not exist. Temporary files are skipped, and those
    /// old enough to be leftovers of a killed process are removed.
    pub fn pending(&self) -> exit::Result<Vec<PathBuf>> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => {
                return Err(exit::Failure::from(err)
                    .context(format!("failed to read directory {}", self.dir.display())));
            }
        };
        let mut runs = Vec::new();
        for entry in entries {
            let entry = entry
                .with_context(|| format!("failed to read directory {}", self.dir.display()))?;
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                remove_if_leftover(&entry.path());
            } else if name.ends_with(".json") {
                runs.push(entry.path());
            }
        }
        runs.sort();
        Ok(runs)
    }
}

/// The run kept in `path`, checked as any record read is; `None` when
/// the file is gone (another command sent it meanwhile).
pub fn read_kept(path: &Path) -> exit::Result<Option<RunRecord>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => {
            return Err(
                exit::Failure::from(err).context(format!("failed to read {}", path.display()))
            );
        }
    };
    RunRecord::from_slice(&bytes)
        .map(Some)
        .with_context(|| format!("failed to read {}", path.display()))
}

/// Removes the file of a run the archive has committed; one already
/// gone was removed by another command that sent it too.
pub fn forget(path: &Path) -> exit::Result<()> {
    match std::fs::remove_file(path) {
        Err(err) if err.kind() != std::io::ErrorKind::NotFound => {
            Err(exit::Failure::from(err).context(format!("failed to remove {}", path.display())))
        }
        _ => Ok(()),
    }
}

/// Removes the temporary file `path` when it is older than
/// [`LEFTOVER_AGE`]; a file that cannot be looked at is left alone.
fn remove_if_leftover(path: &Path) {
    let age = std::fs::metadata(path)
        .and_then(|metadata| metadata.modified())
        .ok()
        .and_then(|modified| modified.elapsed().ok());
    if age.is_some_and(|age| age > LEFTOVER_AGE) {
        let _ = std::fs::remove_file(path);
    }
}

/// `$XDG_STATE_HOME/netbisect/spool` (an absolute `XDG_STATE_HOME`, as
/// the XDG base directory specification asks), else
/// `$HOME/.local/state/netbisect/spool`.
pub fn spool_root() -> Option<PathBuf> {
    Some(crate::global_options::state_dir()?.join("spool"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use run_record::spec::TestKind;
    use std::os::unix::fs::PermissionsExt;
    use test_fixtures::record::RecordBuilder;

    fn sealed_record() -> RunRecord {
        RecordBuilder::new(TestKind::TcpStream).build()
    }

    #[test]
    fn a_kept_run_is_one_file_named_by_its_id_in_a_private_directory() {
        let root = tempfile::tempdir().expect("tempdir");
        let spool = Spool::under(root.path(), "postgres://lab@db/runs");
        let record = sealed_record();
        let path = spool.keep("postgres://lab@db/runs", &record).expect("keep");
        assert_eq!(path, spool.dir().join(format!("{}.json", record.id)));
        assert_eq!(read_kept(&path).expect("read"), Some(record.clone()));
        let mode = std::fs::metadata(spool.dir())
            .expect("dir")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        let address = std::fs::read_to_string(spool.dir().join("archive")).expect("archive");
        assert_eq!(address, "postgres://lab@db/runs\n");
        assert_eq!(spool.pending().expect("pending"), vec![path.clone()]);
        // Keeping it again (a run stored twice) changes nothing.
        spool
            .keep("postgres://lab@db/runs", &record)
            .expect("again");
        assert_eq!(spool.pending().expect("pending"), vec![path.clone()]);
        // Sent by two commands at once: the second finds it gone.
        forget(&path).expect("forget");
        forget(&path).expect("forget again");
        assert_eq!(read_kept(&path).expect("read"), None);
        let names: Vec<_> = std::fs::read_dir(spool.dir())
            .expect("dir")
            .map(|entry| entry.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 1, "only the address stays: {names:?}");
    }

    #[test]
    fn each_archive_has_its_own_directory() {
        let root = tempfile::tempdir().expect("tempdir");
        let one = Spool::under(root.path(), "postgres://lab@db/runs");
        let other = Spool::under(root.path(), "postgres://lab@db/other");
        assert_ne!(one.dir(), other.dir());
        one.keep("postgres://lab@db/runs", &sealed_record())
            .expect("keep");
        assert!(other.pending().expect("pending").is_empty());
    }

    #[test]
    fn temporary_files_are_skipped_and_old_ones_removed() {
        let root = tempfile::tempdir().expect("tempdir");
        let spool = Spool::under(root.path(), "postgres://lab@db/runs");
        let kept = spool
            .keep("postgres://lab@db/runs", &sealed_record())
            .expect("keep");
        let fresh = spool.dir().join(".fresh.tmp");
        let old = spool.dir().join(".old.tmp");
        std::fs::write(&fresh, b"{\"half").expect("fresh");
        let old_file = std::fs::File::create(&old).expect("old");
        old_file
            .set_modified(std::time::SystemTime::now() - 2 * LEFTOVER_AGE)
            .expect("mtime");
        drop(old_file);
        assert_eq!(spool.pending().expect("pending"), vec![kept]);
        assert!(
            fresh.exists(),
            "a file another process may be writing stays"
        );
        assert!(!old.exists(), "a leftover of a killed process goes");
    }

    #[test]
    fn no_spool_without_a_directory() {
        assert!(
            Spool::under(Path::new("/nonexistent-root"), "x")
                .pending()
                .expect("pending")
                .is_empty()
        );
    }
}
