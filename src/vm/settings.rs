//! Guest settings from a `--vm-settings` file: `sysctl KEY=VALUE` and
//! `append ARGS` lines, blank lines and `#` comments. With bisect the
//! file is a path in the worktree, read at each step, so that a build can
//! leave it.

use crate::exit::InputError;
use std::path::Path;

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
    pub fn read(path: &Path) -> anyhow::Result<GuestSettings> {
        let text = std::fs::read_to_string(path)
            .map_err(|err| InputError(format!("cannot read {}: {err}", path.display())))?;
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
}
