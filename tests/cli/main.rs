//! End-to-end tests of the `netbisect` binary, one module per area.

mod archive;
mod archive_postgres;
mod archive_postgres_bounds;
mod archive_postgres_tls;
mod archive_postgres_writers;
mod archive_prune;
mod archive_safety;
mod archive_shared;
mod archive_spool;
mod bench;
mod bisect;
mod bisect_jobs;
mod bisect_session;
mod command_lines;
mod compare;
mod crate_graph;
mod env;
mod granted;
mod help;
mod history;
mod hostile_text;
mod imports;
mod lab;
mod layout;
mod limits;
mod netns;
mod netperf_layout;
mod parity;
mod paste;
mod plan;
mod publish;
mod publish_runs;
mod record;
mod reproduce;
mod serve_crowd;
mod serve_limits;
mod signals;
mod soak;
mod sweep;
mod templates;
mod vm;

use std::path::Path;

/// The binary, pointed at `archive` and away from any template directory
/// of the user's, so that no test reads or writes what is not its own.
pub fn netbisect_with(archive: &Path) -> assert_cmd::Command {
    let mut command = assert_cmd::Command::new(env!("CARGO_BIN_EXE_netbisect"));
    command
        .env("NETBISECT_ARCHIVE", archive)
        .env_remove("NETBISECT_TEMPLATE_DIR");
    command
}

/// The binary with the shared scratch archive.
pub fn netbisect() -> assert_cmd::Command {
    netbisect_with(&scratch_archive())
}

/// Text for a mailing list: ASCII, no tabs, no trailing spaces, at most
/// 80 columns.
pub fn check_mailing_list_rules(text: &str) {
    for line in text.lines() {
        assert!(line.is_ascii() && !line.contains('\t'), "{line:?}");
        assert!(line.len() <= 80, "too wide: {line:?}");
        assert_eq!(line, line.trim_end(), "trailing space: {line:?}");
    }
}

/// What `archive show` says of a run this process stored in a file: the
/// user it runs as and its host, as the system names them (`alice from
/// lab-host`), asked of `id` and `uname`.
pub fn stored_by_this_user() -> String {
    let ask = |program: &str, arg: &str| {
        let output = std::process::Command::new(program)
            .arg(arg)
            .output()
            .unwrap();
        assert!(output.status.success(), "{program} {arg}");
        String::from_utf8(output.stdout).unwrap().trim().to_string()
    };
    format!("{} from {}", ask("id", "-un"), ask("uname", "-n"))
}

/// An archive file shared by the tests that do not care where their runs
/// go, so that no test writes to the user's archive.
pub fn scratch_archive() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap())
        .path()
        .join("scratch.db")
}

/// The netbisect binary where a user other than this one may run it: a
/// hard link (or a copy) in a directory of its own that every user may
/// enter, since the build's own directory may sit under one only its
/// owner may enter (root's home, a `mktemp -d`). Removed when dropped.
pub struct SharedBinary {
    dir: tempfile::TempDir,
}

impl SharedBinary {
    /// Places the binary; `None` after the test says it skips
    /// ([`test_fixtures::skip::skip`]) where no other user could reach
    /// it.
    pub fn new() -> Option<SharedBinary> {
        SharedBinary::place()
            .map_err(|reason| {
                test_fixtures::skip::skip(format!("another user cannot run the binary: {reason}"))
            })
            .ok()
    }

    /// Places the binary; `Err` says why no other user could reach it
    /// (a temporary directory under a private one).
    fn place() -> Result<SharedBinary, String> {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::Builder::new()
            .prefix("netbisect-bin-")
            .tempdir()
            .map_err(|err| format!("cannot make a temporary directory: {err}"))?;
        let open = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(dir.path(), open.clone()).map_err(|err| err.to_string())?;
        let binary = dir.path().join("netbisect");
        let source = env!("CARGO_BIN_EXE_netbisect");
        if std::fs::hard_link(source, &binary).is_err() {
            std::fs::copy(source, &binary).map_err(|err| format!("cannot copy {source}: {err}"))?;
            std::fs::set_permissions(&binary, open).map_err(|err| err.to_string())?;
        }
        for ancestor in dir.path().ancestors().skip(1) {
            let mode = std::fs::metadata(ancestor)
                .map_err(|err| format!("cannot read {}: {err}", ancestor.display()))?
                .permissions()
                .mode();
            if mode & 0o001 == 0 {
                return Err(format!(
                    "{} is closed to other users, so the temporary directory {} is too; \
                     set TMPDIR to a directory every user may enter",
                    ancestor.display(),
                    std::env::temp_dir().display()
                ));
            }
        }
        Ok(SharedBinary { dir })
    }

    /// The binary's path.
    pub fn path(&self) -> std::path::PathBuf {
        self.dir.path().join("netbisect")
    }
}
