//! Canonical JSON bytes per RFC 8785 (JSON Canonicalization Scheme).
//!
//! A value is made a `serde_json` tree, whose members are written sorted
//! by their names' UTF-16 code units, its numbers by `serde_jcs` in
//! ECMAScript's shortest round-trip form (`tree_writer`). JCS numbers are
//! IEEE doubles, so an integer beyond +-2^53 cannot be represented
//! exactly: this module rejects such integers instead of letting them
//! lose digits, and refuses non-finite floats.

use serde::Serialize;
use serde_json::Value;

mod number_check;
mod tree_writer;
mod unique_keys;
use number_check::NumberCheck;

/// The largest integer magnitude a JCS number holds exactly (2^53).
pub const MAX_SAFE_INTEGER: u64 = 1 << 53;

/// Why a value could not be turned into canonical bytes.
#[derive(Debug, thiserror::Error)]
pub enum CanonicalError {
    /// A float was NaN or infinite; JSON has no spelling for it.
    #[error("non-finite number (NaN or infinity) at {path} cannot be written as JSON")]
    NonFinite {
        /// JSON path of the number.
        path: String,
    },
    /// An integer is outside the range a double represents exactly.
    #[error("integer {value} at {path} is beyond +-2^53 and would lose digits")]
    UnsafeInteger {
        /// JSON path of the number, such as `$.iterations[0].bytes_sent`.
        path: String,
        /// The integer as written.
        value: String,
    },
    /// Any other serialisation failure.
    #[error("cannot serialise: {0}")]
    Serialize(String),
}

/// Serialises `value` to RFC 8785 canonical bytes.
///
/// The value becomes a `serde_json::Value` tree first, which turns NaN
/// into `null` and large integers into doubles without a word, so every
/// number is checked on the typed value first.
pub fn to_canonical_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, CanonicalError> {
    value.serialize(&mut NumberCheck {
        path: String::from("$"),
    })?;
    let tree =
        serde_json::to_value(value).map_err(|err| CanonicalError::Serialize(err.to_string()))?;
    tree_to_canonical_bytes(&tree)
}

/// The canonical bytes of `tree` (as [`tree_to_canonical_bytes`] gives
/// them) and, when it is an object, those of the same object without the
/// members of its top level named in `left_out` (of any other tree, the
/// same bytes again): what a document is stored as and what its id
/// hashes, written once.
pub fn tree_to_canonical_bytes_and_without(
    tree: &Value,
    left_out: &[&str],
) -> Result<(Vec<u8>, Vec<u8>), CanonicalError> {
    let Value::Object(members) = tree else {
        let bytes = tree_to_canonical_bytes(tree)?;
        return Ok((bytes.clone(), bytes));
    };
    let mut full = Vec::with_capacity(1024);
    let mut without = Vec::with_capacity(1024);
    match tree_writer::write_object(members, left_out, &mut full, Some(&mut without)) {
        Ok(()) => Ok((full, without)),
        Err(err) => Err(with_integer_path(tree, err)),
    }
}

/// The RFC 8785 canonical bytes of a tree already built (as
/// [`to_canonical_bytes`] gives them, without building it again); an
/// integer beyond +-2^53 is refused with its path.
pub fn tree_to_canonical_bytes(tree: &Value) -> Result<Vec<u8>, CanonicalError> {
    let mut out = Vec::with_capacity(1024);
    match tree_writer::write_tree(tree, &mut out) {
        Ok(()) => Ok(out),
        Err(err) => Err(with_integer_path(tree, err)),
    }
}

/// `err`, the writer's, with the path of the integer it refused, which
/// the writer does not build for every value: found again in `tree`.
fn with_integer_path(tree: &Value, err: CanonicalError) -> CanonicalError {
    match err {
        CanonicalError::UnsafeInteger { value, .. } => check_integers(tree, &mut String::from("$"))
            .err()
            .unwrap_or(CanonicalError::UnsafeInteger {
                path: String::from("$"),
                value,
            }),
        other => other,
    }
}

/// The most structural tokens (`[`, `{`, `,` and `:` outside strings)
/// one document may hold before it is parsed into a tree: about as many
/// values and members. The largest record netbisect writes (30
/// iterations of a request/response test with every latency bucket,
/// 128 flows) holds under 300,000; a tree costs about 100 bytes a value,
/// so the ceiling keeps one document's tree near 100 MiB.
pub const MAX_JSON_TOKENS: usize = 1_000_000;

/// The deepest nesting of arrays and objects one document may have (a
/// record nests six deep).
pub const MAX_JSON_DEPTH: usize = 32;

/// Refuses JSON text with more than [`MAX_JSON_TOKENS`] structural tokens
/// or nested deeper than [`MAX_JSON_DEPTH`], reading it once without
/// building anything: the size of a tree depends on its number of
/// values, not on the length of the text.
pub fn check_json_size(text: &[u8]) -> Result<(), String> {
    let mut n_tokens = 0_usize;
    let mut depth = 0_usize;
    let mut in_string = false;
    let mut escaped = false;
    for byte in text {
        if in_string {
            match (escaped, byte) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                n_tokens += 1;
                if depth > MAX_JSON_DEPTH {
                    return Err(format!(
                        "nested more than {MAX_JSON_DEPTH} deep, deeper than any record"
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b',' | b':' => n_tokens += 1,
            _ => {}
        }
        if n_tokens > MAX_JSON_TOKENS {
            return Err(format!(
                "more than {MAX_JSON_TOKENS} values and members, more than any record holds"
            ));
        }
    }
    Ok(())
}

/// Parses JSON text into a tree, refusing an object that names a member
/// twice (RFC 8785 input is I-JSON, which forbids that; `serde_json`
/// alone would keep the last one silently) and text whose tree would be
/// too large ([`check_json_size`]).
pub fn parse_json(text: &str) -> Result<Value, serde_json::Error> {
    check_json_size(text.as_bytes()).map_err(<serde_json::Error as serde::de::Error>::custom)?;
    parse_json_of_checked_size(text)
}

/// [`parse_json`] of text whose size [`check_json_size`] has passed
/// already (a pass over the whole text, not made twice).
pub fn parse_json_of_checked_size(text: &str) -> Result<Value, serde_json::Error> {
    serde_json::from_str::<unique_keys::UniqueKeys>(text).map(|parsed| parsed.0)
}

/// Checks that every integer in `tree` is within +-2^53.
pub fn check_integers(tree: &Value, path: &mut String) -> Result<(), CanonicalError> {
    match tree {
        Value::Number(number) => {
            if tree_writer::beyond_safe_integers(number) {
                return Err(CanonicalError::UnsafeInteger {
                    path: path.clone(),
                    value: number.to_string(),
                });
            }
            Ok(())
        }
        Value::Array(items) => {
            for (item_idx, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{item_idx}]"));
                check_integers(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                path.push('.');
                path.push_str(key);
                check_integers(item, path)?;
                path.truncate(len);
            }
            Ok(())
        }
        Value::Null | Value::Bool(_) | Value::String(_) => Ok(()),
    }
}

/// The blake3 hash of `bytes`, as 64 lowercase hex digits.
pub fn hash_hex(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_keys_and_drops_whitespace() {
        let bytes = to_canonical_bytes(&json!({"b": 1, "a": [true, null, "x"]})).unwrap();
        assert_eq!(bytes, br#"{"a":[true,null,"x"],"b":1}"#);
    }

    #[test]
    fn rejects_nan_and_infinity() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
            let err = to_canonical_bytes(&vec![bad]).unwrap_err();
            assert!(matches!(err, CanonicalError::NonFinite { .. }), "{err}");
        }
    }

    #[test]
    fn rejects_integers_beyond_two_to_the_53() {
        #[derive(Serialize)]
        struct Counter {
            bytes: u64,
        }
        assert!(
            to_canonical_bytes(&Counter {
                bytes: MAX_SAFE_INTEGER
            })
            .is_ok()
        );
        let err = to_canonical_bytes(&Counter {
            bytes: MAX_SAFE_INTEGER + 1,
        })
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "integer 9007199254740993 at $.bytes is beyond +-2^53 and would lose digits"
        );
        let err = to_canonical_bytes(&[-(MAX_SAFE_INTEGER as i64) - 1]).unwrap_err();
        assert!(matches!(err, CanonicalError::UnsafeInteger { .. }));
    }
}
