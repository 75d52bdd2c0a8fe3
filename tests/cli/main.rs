//! End-to-end tests of the `netbisect` binary, one module per area.

mod archive;
mod bench;
mod bisect;
mod compare;
mod env;
mod help;
mod history;
mod record;
mod sweep;
mod templates;

/// An archive file shared by the tests that do not care where their runs
/// go, so that no test writes to the user's archive.
pub fn scratch_archive() -> std::path::PathBuf {
    static DIR: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap())
        .path()
        .join("scratch.db")
}
