//! Guest settings from a `--vm-settings` file: `sysctl KEY=VALUE` and
//! `append ARGS` lines, blank lines and `#` comments. With bisect the
//! file is a path in the worktree, read at each step, so that a build can
//! leave it.

use crate::exit::{self, InputError};
use std::io::Read as _;
use std::path::Path;

/// The largest settings file read, bytes: a few sysctls and appends fit
/// in far less, and a file that is not one (a FIFO, a device, a file a
/// build left growing) is not read past it.
pub const MAX_SETTINGS_BYTES: u64 = 64 << 10;

/// Guest settings from a `--vm-settings` file.
#[derive(Debug, Default, PartialEq)]
pub struct GuestSettings {
    /// `append ARGS` lines.
    pub append: Vec<String>,
    /// `sysctl KEY=VALUE` lines.
    pub sysctls: Vec<(String, String)>,
}

impl GuestSettings {
    /// Reads a settings file; a line it does not take is an input error
    /// naming the file and the line.
    pub fn read(path: &Path) -> exit::Result<GuestSettings> {
        let text = read_capped(path)?;
        let mut settings = GuestSettings::default();
        for (line_idx, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (word, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let rest = rest.trim();
            match word {
                "sysctl" => settings
                    .sysctls
                    .push(super::parse_sysctl(rest).map_err(|err| {
                        InputError(format!("{}:{}: {err}", path.display(), line_idx + 1))
                    })?),
                "append" if !rest.is_empty() => settings.append.push(rest.to_string()),
                _ => {
                    return Err(InputError(format!(
                        "{}:{}: expected \"sysctl KEY=VALUE\" or \"append ARGS\", got '{line}'",
                        path.display(),
                        line_idx + 1
                    ))
                    .into());
                }
            }
        }
        Ok(settings)
    }
}

/// The text of the settings file at `path`: a regular file (opened
/// without waiting for a FIFO's writer) of at most
/// [`MAX_SETTINGS_BYTES`].
fn read_capped(path: &Path) -> Result<String, InputError> {
    use rustix::fs::{FileType, Mode, OFlags};
    let cannot = |why: String| InputError(format!("cannot read {}: {why}", path.display()));
    let fd = rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|err| cannot(std::io::Error::from(err).to_string()))?;
    let stat =
        rustix::fs::fstat(&fd).map_err(|err| cannot(std::io::Error::from(err).to_string()))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(cannot("not a regular file".to_string()));
    }
    let mut bytes = Vec::new();
    std::fs::File::from(fd)
        .take(MAX_SETTINGS_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| cannot(err.to_string()))?;
    if bytes.len() as u64 > MAX_SETTINGS_BYTES {
        return Err(cannot(format!("over {MAX_SETTINGS_BYTES} bytes")));
    }
    String::from_utf8(bytes).map_err(|_| cannot("not UTF-8 text".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_files_take_sysctls_and_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("guest.conf");
        std::fs::write(
            &path,
            "# small buffers\nsysctl net.ipv4.tcp_rmem=4096 4096 4096\n\nappend mitigations=off\n",
        )
        .unwrap();
        let settings = GuestSettings::read(&path).unwrap();
        assert_eq!(settings.append, vec!["mitigations=off".to_string()]);
        assert_eq!(
            settings.sysctls,
            vec![(
                "net.ipv4.tcp_rmem".to_string(),
                "4096 4096 4096".to_string()
            )]
        );
        std::fs::write(&path, "reboot now\n").unwrap();
        let err = GuestSettings::read(&path).unwrap_err();
        assert!(err.to_string().contains(":1: expected"), "{err}");
    }

    #[test]
    fn devices_fifos_and_long_files_are_not_read_as_settings() {
        let err = GuestSettings::read(Path::new("/dev/zero")).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let err = GuestSettings::read(&fifo).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");
        let long = dir.path().join("long.conf");
        std::fs::write(&long, "#".repeat(MAX_SETTINGS_BYTES as usize + 1)).unwrap();
        let err = GuestSettings::read(&long).unwrap_err();
        assert!(err.to_string().contains("over 65536 bytes"), "{err}");
    }
}
