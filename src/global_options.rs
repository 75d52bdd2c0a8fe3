//! The options every command takes (`--archive`, `--json`, `-v` and `-q`,
//! `--progress`, `--template-dir`), as one plain value that `main` builds
//! from the command line before any work and hands to the command: the
//! commands and the modules beside them read these, never clap's types.
//!
//! The archive's location is the one option that can be wrong in a way
//! only its use tells: an address that does not parse, or no `HOME` to
//! put the default file under. It is therefore read when a command first
//! asks for it ([`ArchiveChoice::location`]) and kept from then on, so
//! that a command which never touches the archive (`env`, `record`)
//! never fails because of it, and one that does fails at the moment it
//! did when every use read the option anew.

use crate::exit::{self, InputError};
use archive::Location;
use std::path::PathBuf;
use std::sync::OnceLock;

/// The options every command takes.
#[derive(Debug)]
pub struct GlobalOptions {
    /// The archive `--archive` names, or the default one.
    pub archive: ArchiveChoice,
    /// What a command prints on stdout.
    pub output: OutputMode,
    /// How much a command says on stderr.
    pub verbosity: Verbosity,
    /// Whether long work shows its progress.
    pub progress: ProgressMode,
    /// `--template-dir`: templates overriding the built-in ones.
    pub template_dir: Option<PathBuf>,
}

impl GlobalOptions {
    /// True with `--json`.
    pub fn json(&self) -> bool {
        self.output == OutputMode::Json
    }

    /// True with `-q`: only errors on stderr.
    pub fn quiet(&self) -> bool {
        self.verbosity == Verbosity::Quiet
    }

    /// True with `-v` (once or more): more detail on stderr.
    pub fn verbose(&self) -> bool {
        self.verbosity == Verbosity::Verbose
    }

    /// True when long work shows its progress: `--progress always`, or
    /// `auto` (the default) without `-q`.
    pub fn shows_progress(&self) -> bool {
        match self.progress {
            ProgressMode::Never => false,
            ProgressMode::Always => true,
            ProgressMode::Auto => !self.quiet(),
        }
    }
}

/// What a command prints on stdout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputMode {
    /// Text for people, most often a template's.
    Text,
    /// The command's JSON document (`--json`).
    Json,
}

/// How much a command says on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verbosity {
    /// Only errors (`-q`).
    Quiet,
    /// Warnings and notices too.
    Normal,
    /// More detail (`-v`).
    Verbose,
}

/// `--progress`: whether long work shows where it stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProgressMode {
    /// Unless `-q`.
    Auto,
    /// Even with `-q`.
    Always,
    /// Never.
    Never,
}

/// The archive of the command line: `--archive` / `NETBISECT_ARCHIVE` as
/// given, read into a [`Location`] at its first use.
#[derive(Debug)]
pub struct ArchiveChoice {
    given: Option<PathBuf>,
    location: OnceLock<Location>,
}

impl ArchiveChoice {
    /// The archive `given` names (`None`: the default one).
    pub fn new(given: Option<PathBuf>) -> ArchiveChoice {
        ArchiveChoice {
            given,
            location: OnceLock::new(),
        }
    }

    /// Where the archive is: the file or `postgres://` (or
    /// `postgresql://`) address given, else
    /// `$XDG_DATA_HOME/netbisect/archive.db`, else
    /// `$HOME/.local/share/netbisect/archive.db`. Read at the first call
    /// and kept; an error is not kept, since it ends the command that
    /// asked (a second call would read the same error again).
    pub fn location(&self) -> exit::Result<&Location> {
        if let Some(location) = self.location.get() {
            return Ok(location);
        }
        let location = match &self.given {
            Some(given) => Location::parse(given.as_os_str())?,
            None => Location::File(default_archive_path()?),
        };
        Ok(self.location.get_or_init(|| location))
    }
}

/// The directory an environment variable names, when it names an
/// absolute one (the XDG base directory rules ignore a relative path).
fn absolute_env(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .map(PathBuf::from)
        .filter(|path| path.is_absolute())
}

/// netbisect's state on this machine (the spool, experiment locks,
/// workers' directories): `$XDG_STATE_HOME/netbisect`, else
/// `$HOME/.local/state/netbisect`; `None` when neither names an absolute
/// directory.
pub fn state_dir() -> Option<PathBuf> {
    let state_home = absolute_env("XDG_STATE_HOME")
        .or_else(|| absolute_env("HOME").map(|home| home.join(".local").join("state")))?;
    Some(state_home.join("netbisect"))
}

fn default_archive_path() -> exit::Result<PathBuf> {
    let data_home = absolute_env("XDG_DATA_HOME")
        .or_else(|| absolute_env("HOME").map(|home| home.join(".local").join("share")))
        .ok_or_else(|| {
            InputError(
                "cannot tell where the archive lives: HOME is not set; \
                 give --archive PATH or set NETBISECT_ARCHIVE"
                    .to_string(),
            )
        })?;
    Ok(data_home.join("netbisect").join("archive.db"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_is_read_once_and_kept() {
        let choice = ArchiveChoice::new(Some(PathBuf::from("/tmp/runs.db")));
        let first: *const Location = choice.location().unwrap();
        let second: *const Location = choice.location().unwrap();
        assert_eq!(first, second);
        assert_eq!(choice.location().unwrap().to_string(), "/tmp/runs.db");
    }

    #[test]
    fn a_bad_address_fails_at_each_use_the_same_way() {
        let choice = ArchiveChoice::new(Some(PathBuf::from("postgres://u@h/db?sslmode=allow")));
        let first = choice.location().unwrap_err().to_string();
        let second = choice.location().unwrap_err().to_string();
        assert_eq!(first, second);
        assert!(first.starts_with("invalid archive address"), "{first}");
    }
}
