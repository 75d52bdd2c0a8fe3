//! Reading a record back from bytes: encoding, schema revision, numbers,
//! members the schema does not define, names (`names.rs`), times, the
//! fixed form of the experiment's id and of the command, the limits of
//! its figures and parts (`limits.rs`), `config_key` and `id`, each
//! refused with the [`RecordError`] that says what is wrong.

use super::{
    RecordError, RunRecord, SCHEMA_MAJOR, SCHEMA_MINOR, SCHEMA_PREFIX, id_and_canonical_bytes,
};
use crate::canonical;
use serde::Deserialize;
use serde_json::Value;

impl RunRecord {
    /// Reads a record, checking encoding, schema version, numbers, fields,
    /// the limits of its figures ([`RunRecord::check_limits`]), `id` and
    /// `config_key`.
    pub fn from_slice(bytes: &[u8]) -> Result<RunRecord, RecordError> {
        Ok(RunRecord::read_canonical(bytes)?.0)
    }

    /// Reads a record as [`RunRecord::from_slice`] does, and gives the
    /// canonical bytes of the document as written (members a newer minor
    /// revision added kept), which checking its id writes anyway.
    pub fn read_canonical(bytes: &[u8]) -> Result<(RunRecord, Vec<u8>), RecordError> {
        let text = std::str::from_utf8(bytes).map_err(|err| RecordError::NotUtf8 {
            offset: err.valid_up_to(),
        })?;
        canonical::check_json_size(bytes).map_err(RecordError::Invalid)?;
        let tree: Value = canonical::parse_json_of_checked_size(text).map_err(json_error)?;
        let Value::Object(members) = &tree else {
            return Err(RecordError::Invalid(
                "a run record is a JSON object".to_string(),
            ));
        };
        let minor = match members.get("schema") {
            None => return Err(RecordError::MissingSchema),
            Some(Value::String(schema)) => check_schema(schema)?,
            Some(other) => {
                return Err(RecordError::UnsupportedSchema {
                    found: other.to_string(),
                });
            }
        };
        canonical::check_integers(&tree, &mut String::from("$"))?;
        let record =
            RunRecord::deserialize(&tree).map_err(|err| RecordError::Invalid(err.to_string()))?;
        record.check_names()?;
        for (name, time) in [
            ("started_at", &record.started_at),
            ("finished_at", &record.finished_at),
        ] {
            if !crate::time::is_rfc3339_utc(time) {
                return Err(RecordError::Invalid(format!(
                    "{name} \"{time}\" is not an RFC 3339 UTC time \
                     (YYYY-MM-DDTHH:MM:SS[.frac]Z)"
                )));
            }
        }
        // Members a command line prints, or a file is named after, have a
        // fixed form.
        if let Some(tag) = &record.experiment {
            tag.check().map_err(RecordError::Invalid)?;
        }
        if let Some(words) = &record.command {
            if minor < 4 {
                return Err(RecordError::Invalid(format!(
                    "command is a member of netbisect.run/1.4, and this record is of 1.{minor}"
                )));
            }
            super::check_command(words).map_err(RecordError::Invalid)?;
        }
        // A record of a revision this crate knows must be what the typed
        // record writes back, or storing `to_canonical_bytes` of what was
        // read would change its id. Newer minor revisions may add members,
        // to the spec too, so their config_key is checked over the spec as
        // written.
        let computed = if minor <= SCHEMA_MINOR {
            let written = serde_json::to_value(&record)
                .map_err(|err| RecordError::Invalid(err.to_string()))?;
            if let Some(problem) = first_difference(&tree, &written, &mut String::from("$")) {
                return Err(RecordError::Invalid(problem));
            }
            record.compute_config_key()?
        } else {
            let spec = tree.get("spec").unwrap_or(&Value::Null);
            record.config_key_over(spec)?
        };
        if computed != record.config_key {
            return Err(RecordError::ConfigKeyMismatch {
                stated: record.config_key,
                computed,
            });
        }
        record.check_limits()?;
        // The id covers the document as written, including members a newer
        // minor revision may have added, so hash the tree, not the struct.
        let (computed, canonical_bytes) = id_and_canonical_bytes(&tree)?;
        if computed != record.id {
            return Err(RecordError::IdMismatch {
                stated: record.id,
                computed,
            });
        }
        Ok((record, canonical_bytes))
    }
}

/// Where `read` (the document) has something `written` (the typed record
/// serialised again) has not: a member this schema does not define, or a
/// null or empty value where an absent one is left out.
fn first_difference(read: &Value, written: &Value, path: &mut String) -> Option<String> {
    match (read, written) {
        (Value::Object(read), Value::Object(written)) => {
            for (name, value) in read {
                let len = path.len();
                path.push('.');
                path.push_str(name);
                let problem = match written.get(name) {
                    Some(expected) => first_difference(value, expected, path),
                    None if is_null_or_empty(value) => Some(format!(
                        "{path} is null or empty; leave an absent value out"
                    )),
                    None => Some(format!("unknown member {path}")),
                };
                if problem.is_some() {
                    return problem;
                }
                path.truncate(len);
            }
            None
        }
        (Value::Array(read), Value::Array(written)) => {
            for (item_idx, (value, expected)) in read.iter().zip(written).enumerate() {
                let len = path.len();
                path.push_str(&format!("[{item_idx}]"));
                if let Some(problem) = first_difference(value, expected, path) {
                    return Some(problem);
                }
                path.truncate(len);
            }
            None
        }
        // `10` and `10.0` are the same JSON number.
        (Value::Number(read), Value::Number(written)) if read.as_f64() == written.as_f64() => None,
        (read, written) if read == written => None,
        _ => Some(format!("{path} does not read back as written")),
    }
}

fn is_null_or_empty(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Object(members) => members.is_empty(),
        Value::Array(items) => items.is_empty(),
        _ => false,
    }
}

/// Checks the schema and returns its minor revision (0 for
/// `netbisect.run/1`).
fn check_schema(schema: &str) -> Result<u32, RecordError> {
    let unsupported = || RecordError::UnsupportedSchema {
        found: schema.to_string(),
    };
    let version = schema.strip_prefix(SCHEMA_PREFIX).ok_or_else(unsupported)?;
    let (major, minor) = match version.split_once('.') {
        Some((major, minor)) => (major, Some(minor)),
        None => (version, None),
    };
    // Plain digits only: `+1` or `01` would parse as 1 but are not what
    // any writer of this schema produces.
    let is_digits = |text: &str| !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
    if major != SCHEMA_MAJOR.to_string() || !minor.is_none_or(is_digits) {
        return Err(unsupported());
    }
    // Digits beyond u32 still name a revision newer than this crate's.
    Ok(minor.map_or(0, |minor| minor.parse().unwrap_or(u32::MAX)))
}

fn json_error(err: serde_json::Error) -> RecordError {
    if err.is_eof() {
        RecordError::Truncated {
            line: err.line(),
            column: err.column(),
        }
    } else {
        let message = err.to_string();
        // serde_json appends " at line L column C"; the variant says that.
        let message = match message.rfind(" at line ") {
            Some(cut) => message[..cut].to_string(),
            None => message,
        };
        RecordError::Malformed {
            line: err.line(),
            column: err.column(),
            message,
        }
    }
}
