//! The experiment a run belongs to (`netbisect ab`): the record's
//! `experiment` member (since 1.2), so that an experiment's runs are found
//! as its own after import, export and merge, whatever their labels. It
//! stays out of the config_key: the runs of two experiments of the same
//! configuration compare. Beside it, the record's `command` (since 1.4):
//! the command that made a run in a VM, which the line that makes the
//! run (or its experiment) again is printed from.
//!
//! Both are read with a check of their form ([`ExperimentTag::check`],
//! [`check_command`]), wherever a record comes from (a file, a mail, a
//! guest, a merged archive): an id is printed in command lines and names
//! files, so one that is not what `ab` makes is refused by name.

use serde::{Deserialize, Serialize};

/// Hex digits of an experiment's id, as `netbisect ab` makes it (the
/// first digits of a blake3 hash of what defines the experiment).
pub const EXPERIMENT_ID_DIGITS: usize = 16;

/// Most words of a record's `command`.
pub const MAX_COMMAND_WORDS: usize = 1024;

/// Longest word of a record's `command`, bytes.
pub const MAX_COMMAND_WORD_BYTES: usize = 4096;

/// The commands whose runs carry their `command`.
pub const COMMANDS_KEPT: [&str; 2] = ["ab", "bench"];

/// An experiment's id and the round a run was measured in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExperimentTag {
    /// The experiment's id: [`EXPERIMENT_ID_DIGITS`] lowercase hex digits.
    pub id: String,
    /// The round, from 1.
    pub round: u32,
}

impl ExperimentTag {
    /// Checks the tag's fixed form: an id of [`EXPERIMENT_ID_DIGITS`]
    /// lowercase hex digits, a round from 1. The error names the member
    /// and shows the value escaped.
    pub fn check(&self) -> Result<(), String> {
        let is_hex = self.id.len() == EXPERIMENT_ID_DIGITS
            && self
                .id
                .bytes()
                .all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'));
        if !is_hex {
            return Err(format!(
                "experiment.id {} is not an experiment id ({EXPERIMENT_ID_DIGITS} lowercase \
                 hex digits)",
                shown(&self.id)
            ));
        }
        if self.round == 0 {
            return Err("experiment.round is 0; rounds count from 1".to_string());
        }
        Ok(())
    }
}

/// Checks a record's `command`: a command whose runs carry it
/// ([`COMMANDS_KEPT`]) first, at most [`MAX_COMMAND_WORDS`] words of at
/// most [`MAX_COMMAND_WORD_BYTES`] bytes, none with a NUL byte (which no
/// argument of a program can hold).
pub fn check_command(words: &[String]) -> Result<(), String> {
    let Some(first) = words.first() else {
        return Err("command is empty; leave an absent command out".to_string());
    };
    if !COMMANDS_KEPT.contains(&first.as_str()) {
        return Err(format!(
            "command starts with {}, not with one of {}",
            shown(first),
            COMMANDS_KEPT.join(", ")
        ));
    }
    if words.len() > MAX_COMMAND_WORDS {
        return Err(format!(
            "command has {} words; at most {MAX_COMMAND_WORDS}",
            words.len()
        ));
    }
    for (word_idx, word) in words.iter().enumerate() {
        if word.len() > MAX_COMMAND_WORD_BYTES {
            return Err(format!(
                "command[{word_idx}] has {} bytes; at most {MAX_COMMAND_WORD_BYTES}",
                word.len()
            ));
        }
        if word.contains('\0') {
            return Err(format!("command[{word_idx}] holds a NUL byte"));
        }
    }
    Ok(())
}

/// `value` for an error message: quoted and escaped (no control
/// character reaches a terminal), its first 64 characters.
fn shown(value: &str) -> String {
    let head: String = value.chars().take(64).collect();
    let more = if head.len() < value.len() { "..." } else { "" };
    format!("{:?}{more}", head)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_16_lowercase_hex_digits() {
        let tag = |id: &str| ExperimentTag {
            id: id.to_string(),
            round: 1,
        };
        assert!(tag("0123456789abcdef").check().is_ok());
        for bad in [
            "e1;touch pwn;#",
            "0123456789ABCDEF",
            "0123456789abcde",
            "0123456789abcdef0",
            "",
            "$(id)",
        ] {
            let err = tag(bad).check().unwrap_err();
            assert!(err.starts_with("experiment.id \""), "{err}");
        }
        let err = tag("a\u{1b}[31m\nb").check().unwrap_err();
        assert!(!err.contains('\u{1b}') && !err.contains('\n'), "{err}");
        let zero = ExperimentTag {
            id: "0123456789abcdef".to_string(),
            round: 0,
        };
        assert!(zero.check().unwrap_err().contains("round"));
    }

    #[test]
    fn a_command_is_one_netbisect_keeps_within_its_bounds() {
        let words = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert!(check_command(&words(&["ab", "--kernel-a", "a"])).is_ok());
        assert!(check_command(&words(&["bench"])).is_ok());
        for (bad, says) in [
            (words(&[]), "empty"),
            (words(&["archive", "merge", "x"]), "not with one of"),
            (words(&["ab", "a\0b"]), "NUL"),
            (vec!["ab".to_string(); MAX_COMMAND_WORDS + 1], "words"),
            (
                vec!["ab".to_string(), "x".repeat(MAX_COMMAND_WORD_BYTES + 1)],
                "bytes",
            ),
        ] {
            let err = check_command(&bad).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
    }
}
