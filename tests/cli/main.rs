//! End-to-end tests of the `netbisect` binary, one module per area.

mod archive;
mod archive_safety;
mod bench;
mod bisect;
mod compare;
mod env;
mod help;
mod history;
mod imports;
mod layout;
mod netns;
mod netperf_layout;
mod parity;
mod plan;
mod record;
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

/// True when the slow tests are switched on (`NETBISECT_SLOW_TESTS=1`):
/// the soak of serve and the slowest VM tests.
pub fn slow_tests() -> bool {
    std::env::var("NETBISECT_SLOW_TESTS").is_ok_and(|value| value == "1")
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

/// An archive file shared by the tests that do not care where their runs
/// go, so that no test writes to the user's archive.
pub fn scratch_archive() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap())
        .path()
        .join("scratch.db")
}
