//! One runner per experiment on a machine: while `ab` measures an
//! experiment it holds a lock named by the experiment's id, in the user's
//! state directory (`$XDG_STATE_HOME/netbisect/experiments`, else
//! `~/.local/state/netbisect/experiments`), so that a second `ab` of the
//! same experiment says so and stops, or waits for it with `--wait` and
//! then measures only what the first left, instead of measuring
//! everything a second time. The kernel drops the lock when the process
//! dies, however it dies, so a killed run leaves nothing to clean up.

use crate::exit::{self, Context, InputError};
use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a waiting `ab` looks at the lock again (and at Ctrl-C).
const POLL: Duration = Duration::from_millis(250);

/// A held experiment lock; dropping it lets the next runner in.
#[derive(Debug)]
pub struct ExperimentLock {
    _file: File,
}

/// Where experiment locks live, or `None` when neither `XDG_STATE_HOME`
/// nor `HOME` names an absolute directory.
fn lock_dir() -> Option<PathBuf> {
    Some(crate::global_options::state_dir()?.join("experiments"))
}

/// Takes the lock of experiment `id`. When another process holds it:
/// an error naming it, or with `wait`, `waiting` is called once with what
/// to tell the user and the lock is taken when it is free.
pub fn hold(id: &str, wait: bool, waiting: impl FnOnce(&str)) -> exit::Result<ExperimentLock> {
    // Ids are checked hex by the experiment; a path is never built from
    // anything else.
    if id.is_empty() || !id.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Err(InputError(format!("invalid experiment id {id:?}")).into());
    }
    let Some(dir) = lock_dir() else {
        return Err(InputError(
            "neither XDG_STATE_HOME nor HOME names a directory where the experiment's \
             lock can be kept"
                .to_string(),
        )
        .into());
    };
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("failed to create {}", dir.display()))?;
    hold_in(&dir, id, wait, waiting)
}

fn hold_in(
    dir: &Path,
    id: &str,
    wait: bool,
    waiting: impl FnOnce(&str),
) -> exit::Result<ExperimentLock> {
    let path = dir.join(format!("{id}.lock"));
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .mode(0o600)
        .open(&path)
        .with_context(|| format!("failed to open {}", path.display()))?;
    let mut waiting = Some(waiting);
    loop {
        match file.try_lock() {
            Ok(()) => break,
            Err(TryLockError::WouldBlock) => {
                let holder = holder(&mut file);
                let text =
                    format!("experiment {id} is being measured by another netbisect ab{holder}");
                if !wait {
                    return Err(InputError(format!(
                        "{text}: it stores what it measures; run this again when it ends, \
                         or give --wait to wait for it and measure only what it leaves"
                    ))
                    .into());
                }
                if let Some(waiting) = waiting.take() {
                    waiting(&format!("{text}; waiting for it to end"));
                }
                child_process::interrupt::check()?;
                std::thread::sleep(POLL);
            }
            Err(TryLockError::Error(err)) => {
                return Err(
                    exit::Failure::from(err).context(format!("failed to lock {}", path.display()))
                );
            }
        }
    }
    // The holder's pid, for the message a second runner prints.
    let written = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| writeln!(file, "{}", std::process::id()));
    written.with_context(|| format!("failed to write {}", path.display()))?;
    Ok(ExperimentLock { _file: file })
}

/// ` (pid N)` from the lock file, or nothing when it does not say.
fn holder(file: &mut File) -> String {
    let mut text = String::new();
    let read = file
        .rewind()
        .and_then(|()| file.take(32).read_to_string(&mut text));
    match read.ok().and(text.trim().parse::<u32>().ok()) {
        Some(pid) => format!(" (pid {pid})"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_naming_the_first_and_a_waiter_gets_it_after() {
        let dir = tempfile::tempdir().unwrap();
        let first = hold_in(dir.path(), "0123abcd", false, |_| {}).unwrap();
        let refused = hold_in(dir.path(), "0123abcd", false, |_| {}).unwrap_err();
        let text = format!("{refused:#}");
        assert!(
            text.contains("experiment 0123abcd is being measured"),
            "{text}"
        );
        assert!(
            text.contains(&format!("(pid {})", std::process::id())),
            "{text}"
        );
        assert!(text.contains("--wait"), "{text}");
        // Another experiment is not held up.
        let other = hold_in(dir.path(), "0123abce", false, |_| {}).unwrap();
        drop(other);
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(600));
            drop(first);
        });
        let mut said = Vec::new();
        let second = hold_in(dir.path(), "0123abcd", true, |text| {
            said.push(text.to_string())
        });
        releaser.join().unwrap();
        assert!(second.is_ok());
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("waiting for it to end"), "{said:?}");
    }

    #[test]
    fn an_id_that_is_not_hex_never_becomes_a_path() {
        for id in ["", "../x", "ab/cd", "e1;touch"] {
            assert!(hold(id, false, |_| {}).is_err(), "{id}");
        }
    }
}
