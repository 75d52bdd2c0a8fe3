//! The guest's console: its last lines kept in a file when a guest fails,
//! and what they say about why (read from its end only, since a guest
//! may fill it up to its output bound).

use super::{CONSOLE_TAIL_LINES, VmError, initramfs, io};
use std::path::{Path, PathBuf};

/// The most of the console's end read for its last lines, bytes: a
/// guest may write up to its output bound there.
const MAX_TAIL_BYTES: u64 = 1 << 20;

/// The console's last [`MAX_TAIL_BYTES`] (the first line possibly cut).
fn console_tail(path: &Path) -> Vec<u8> {
    use std::io::{Read as _, Seek as _};
    let Ok(mut file) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let length = file.metadata().map(|meta| meta.len()).unwrap_or(0);
    let start = length.saturating_sub(MAX_TAIL_BYTES);
    let mut bytes = Vec::new();
    if file.seek(std::io::SeekFrom::Start(start)).is_ok() {
        let _ = file.take(MAX_TAIL_BYTES).read_to_end(&mut bytes);
    }
    bytes
}

fn console_lines(path: &Path) -> Vec<String> {
    let bytes = console_tail(path);
    String::from_utf8_lossy(&bytes)
        .lines()
        .map(|line| {
            line.chars()
                .filter(|c| !c.is_control() || *c == '\t')
                .collect::<String>()
        })
        .filter(|line| !line.trim().is_empty())
        .collect()
}

pub(super) fn last_line(path: &Path) -> String {
    console_lines(path)
        .pop()
        .map(|line| line.trim().chars().take(160).collect())
        .unwrap_or_else(|| "no console output".to_string())
}

/// Why a guest did not reach the test, from its console: what the
/// guest's init or a kernel panic said last, else the last line.
pub(super) fn boot_failure(path: &Path) -> String {
    let lines = console_lines(path);
    let said = lines.iter().rev().find_map(|line| {
        line.find(initramfs::INIT_NAME)
            .or_else(|| line.find("Kernel panic"))
            .map(|at| line[at..].trim().chars().take(200).collect::<String>())
    });
    said.unwrap_or_else(|| last_line(path))
}

/// Saves the last lines of the console in `dir`; returns the file.
pub(super) fn keep_console(console: &Path, dir: &Path) -> Result<PathBuf, VmError> {
    let lines = console_lines(console);
    let tail = &lines[lines.len().saturating_sub(CONSOLE_TAIL_LINES)..];
    std::fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
    let file = tempfile::Builder::new()
        .prefix("netbisect-console-")
        .suffix(".log")
        .tempfile_in(dir)
        .map_err(io(format!("create a console log in {}", dir.display())))?;
    let mut text = tail.join("\n");
    text.push('\n');
    std::fs::write(file.path(), text).map_err(io("write the console log"))?;
    let (_, path) = file.keep().map_err(|err| VmError::Io {
        what: "keep the console log".to_string(),
        source: err.error,
    })?;
    Ok(path)
}
