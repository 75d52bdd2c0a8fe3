//! Writing a JSON tree in canonical form: the members of each object in
//! the order of their names' UTF-16 code units, no whitespace, strings
//! and numbers as `serde_jcs` writes them.
//!
//! `serde_jcs` serialises any value through a formatter that buffers every
//! member, reads each member's name back as JSON to sort it and allocates
//! a writer per token: most of the time a record spends being checked
//! and stored went there. A tree has its names as strings already, so
//! only the sort is left, and the leaves go to `serde_jcs` (numbers) or
//! to `serde_json` (strings, whose escapes `serde_jcs` takes from it).

use super::{CanonicalError, MAX_SAFE_INTEGER};
use serde_json::Value;

/// Appends the canonical bytes of `tree` to `out`.
pub(super) fn write_tree(tree: &Value, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    match tree {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(number) => {
            if beyond_safe_integers(number) {
                // The caller names where: this marks that it must look.
                return Err(CanonicalError::UnsafeInteger {
                    path: String::new(),
                    value: number.to_string(),
                });
            }
            serde_jcs::to_writer(&mut *out, number)
                .map_err(|err| CanonicalError::Serialize(err.to_string()))?;
        }
        Value::String(text) => write_string(text, out)?,
        Value::Array(items) => {
            out.push(b'[');
            for (item_idx, item) in items.iter().enumerate() {
                if item_idx > 0 {
                    out.push(b',');
                }
                write_tree(item, out)?;
            }
            out.push(b']');
        }
        Value::Object(members) => write_object(members, &[], out, None)?,
    }
    Ok(())
}

/// Appends the canonical bytes of the object of `members` to `out` and,
/// when `without` is given, those of the same object without the members
/// named in `left_out` to `without`: each member is written once, and
/// copied.
pub(super) fn write_object(
    members: &serde_json::Map<String, Value>,
    left_out: &[&str],
    out: &mut Vec<u8>,
    mut without: Option<&mut Vec<u8>>,
) -> Result<(), CanonicalError> {
    let mut sorted: Vec<(&String, &Value)> = members.iter().collect();
    // A map kept in UTF-8 order is in UTF-16 order already but for names
    // past U+FFFF, so this sort rarely moves anything.
    sorted.sort_by(|(left, _), (right, _)| left.encode_utf16().cmp(right.encode_utf16()));
    out.push(b'{');
    if let Some(without) = without.as_deref_mut() {
        without.push(b'{');
    }
    let mut n_kept = 0_usize;
    for (member_idx, (name, value)) in sorted.into_iter().enumerate() {
        if member_idx > 0 {
            out.push(b',');
        }
        let start = out.len();
        write_string(name, out)?;
        out.push(b':');
        write_tree(value, out)?;
        if let Some(without) = without.as_deref_mut()
            && !left_out.contains(&name.as_str())
        {
            if n_kept > 0 {
                without.push(b',');
            }
            without.extend_from_slice(&out[start..]);
            n_kept += 1;
        }
    }
    out.push(b'}');
    if let Some(without) = without {
        without.push(b'}');
    }
    Ok(())
}

/// Whether `number` is an integer a double does not hold exactly.
pub(super) fn beyond_safe_integers(number: &serde_json::Number) -> bool {
    if let Some(unsigned) = number.as_u64() {
        unsigned > MAX_SAFE_INTEGER
    } else if let Some(signed) = number.as_i64() {
        signed.unsigned_abs() > MAX_SAFE_INTEGER
    } else {
        false
    }
}

/// A string with `serde_json`'s escapes, which are the ones RFC 8785
/// asks for (`\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, other controls
/// as `\u00xx`, and nothing else escaped).
fn write_string(text: &str, out: &mut Vec<u8>) -> Result<(), CanonicalError> {
    serde_json::to_writer(&mut *out, text).map_err(|err| CanonicalError::Serialize(err.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn written(tree: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        write_tree(tree, &mut out).unwrap();
        out
    }

    /// Every control character, quotes, backslashes, a solidus, DEL,
    /// characters of two, three and four UTF-8 bytes, in names and values,
    /// and numbers of every kind: written as `serde_jcs` writes them.
    #[test]
    fn writes_what_serde_jcs_writes() {
        let controls: String = (0_u8..0x20).map(char::from).collect();
        let names = [
            "a",
            "b",
            "",
            "\u{20ac}",
            "\u{1f600}",
            "\u{fb33}",
            "\u{e000}",
            "\r",
            "1",
            "A",
            "aa",
            "\u{ffff}",
            "\u{10000}",
            "\u{7f}",
        ];
        let mut object = serde_json::Map::new();
        for (name_idx, name) in names.iter().enumerate() {
            object.insert(name.to_string(), json!(name_idx));
        }
        let trees = [
            json!(null),
            json!([true, false, null, [], {}, [[]], {"a": {}}]),
            json!(controls),
            json!({ controls.clone(): "\"\\/\u{7f}\u{2028}\u{1f600}é" }),
            Value::Object(object),
            json!([
                0,
                -0.0,
                1,
                -1,
                1e21,
                1e-7,
                123456789012345680000.0,
                5e-324,
                1.7976931348623157e308,
                9007199254740992_u64,
                -9007199254740992_i64,
                0.1,
                1e20,
                333333333.3333333,
                4.5,
                2e-3,
                1e300
            ]),
            json!({"z": [{"y": 1, "x": [2, {"b": 0, "a": 1}]}], "spec": {"test": "tcp_stream"}}),
        ];
        for tree in &trees {
            if let Value::Object(members) = tree {
                let (mut full, mut without) = (Vec::new(), Vec::new());
                write_object(
                    members,
                    &["a", "\u{1f600}", "z"],
                    &mut full,
                    Some(&mut without),
                )
                .unwrap();
                assert_eq!(full, written(tree));
                let mut fewer = members.clone();
                for name in ["a", "\u{1f600}", "z"] {
                    fewer.remove(name);
                }
                assert_eq!(without, written(&Value::Object(fewer)), "{tree}");
            }
            assert_eq!(
                String::from_utf8_lossy(&written(tree)),
                String::from_utf8_lossy(&serde_jcs::to_vec(tree).unwrap()),
                "{tree}"
            );
        }
    }
}
