//! The names a record gives its run (commit, describe, label, testbed,
//! the source tool, the experiment's id), held to what every archive
//! stores: each is a column of its own, most of them indexed, and what a
//! SQLite file accepts a PostgreSQL database must store too.
//!
//! PostgreSQL's text cannot hold a NUL character, and one entry of a
//! btree index holds at most 2704 bytes (a third of an 8 KiB page, less
//! its headers). The widest index of the archive holds the label and the
//! commit beside the config key, the start time, the test and the run's
//! id (about 180 bytes): with each name at most [`MAX_NAME_BYTES`], an
//! entry stays under 2300 bytes. Names in use are far shorter (commit
//! ids, `git describe`, labels of a few words, side names of a mail).
//!
//! [`RunRecord::check_names`] is part of reading a record
//! ([`RunRecord::from_slice`]), so a record is held to it wherever it
//! comes from (an import, a guest, another archive); a caller that makes
//! a record from a command line checks its names first ([`check_name`]).

use super::{RecordError, RunRecord};

/// The longest name a record may give, in bytes of UTF-8.
pub const MAX_NAME_BYTES: usize = 1024;

impl RunRecord {
    /// Checks every name of the record: at most [`MAX_NAME_BYTES`], no
    /// NUL character. The error names the first field beyond them.
    pub fn check_names(&self) -> Result<(), RecordError> {
        let names = [
            ("subject.commit", self.subject.commit.as_deref()),
            ("subject.describe", self.subject.describe.as_deref()),
            ("subject.label", self.subject.label.as_deref()),
            ("testbed", Some(self.testbed.as_str())),
            ("source.tool", Some(self.source.tool.as_str())),
            (
                "experiment.id",
                self.experiment.as_ref().map(|tag| tag.id.as_str()),
            ),
        ];
        for (field, name) in names {
            if let Some(name) = name {
                check_name(field, name)?;
            }
        }
        Ok(())
    }
}

/// Checks one name, given as `field` (a record's member, or the option
/// that gives it): at most [`MAX_NAME_BYTES`], no NUL character.
pub fn check_name(field: &'static str, name: &str) -> Result<(), RecordError> {
    if name.len() > MAX_NAME_BYTES {
        return Err(RecordError::NameTooLong {
            field,
            length: name.len(),
            limit: MAX_NAME_BYTES,
        });
    }
    if let Some(offset) = name.find('\0') {
        return Err(RecordError::NulInName { field, offset });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_refused_past_the_limit_or_with_a_nul() {
        assert!(check_name("subject.label", &"x".repeat(MAX_NAME_BYTES)).is_ok());
        let long = "é".repeat(MAX_NAME_BYTES / 2 + 1);
        let err = check_name("subject.label", &long).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "subject.label is {} bytes long, over the limit of {MAX_NAME_BYTES} bytes",
                MAX_NAME_BYTES + 2
            )
        );
        let err = check_name("testbed", "lab\0a").unwrap_err();
        assert_eq!(
            err.to_string(),
            "testbed holds a NUL character (at byte 3), which no archive stores"
        );
    }
}
