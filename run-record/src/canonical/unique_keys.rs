//! A JSON reader that refuses duplicate member names.
//!
//! RFC 8785 canonicalises I-JSON (RFC 7493), which forbids an object from
//! naming a member twice. `serde_json::Value` keeps the last of duplicate
//! members without a word, so a document could say two things while
//! hashing as one; this reader builds the same tree and fails instead.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use std::fmt;

/// A JSON tree in which no object names a member twice.
pub(super) struct UniqueKeys(pub(super) Value);

impl<'de> Deserialize<'de> for UniqueKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(TreeVisitor).map(UniqueKeys)
    }
}

struct TreeVisitor;

impl<'de> Visitor<'de> for TreeVisitor {
    type Value = Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::Number(value.into()))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Number::from_f64(value)
            .map(Value::Number)
            .ok_or_else(|| E::custom("non-finite number"))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_string()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut items: A) -> Result<Value, A::Error> {
        let mut array = Vec::new();
        while let Some(UniqueKeys(item)) = items.next_element()? {
            array.push(item);
        }
        Ok(Value::Array(array))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut members: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(name) = members.next_key::<String>()? {
            if object.contains_key(&name) {
                return Err(de::Error::custom(format_args!(
                    "duplicate member \"{name}\""
                )));
            }
            let UniqueKeys(value) = members.next_value()?;
            object.insert(name, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Value, serde_json::Error> {
        serde_json::from_str::<UniqueKeys>(text).map(|UniqueKeys(value)| value)
    }

    #[test]
    fn builds_the_same_tree_as_serde_json() {
        let text = r#"{"a": [1, -2, 3.5, 1e300, 18446744073709551615, "x", null, true],
                       "b": {"c": {}, "d": []}}"#;
        assert_eq!(
            parse(text).unwrap(),
            serde_json::from_str::<Value>(text).unwrap()
        );
    }

    #[test]
    fn refuses_duplicate_members_with_their_place() {
        let err = parse("{\"a\": 1,\n \"b\": {\"c\": 1, \"c\": 2}}").unwrap_err();
        assert_eq!(
            err.to_string(),
            "duplicate member \"c\" at line 2 column 18"
        );
        // The same name in different objects is fine.
        assert!(parse(r#"{"a": {"x": 1}, "b": {"x": 1}}"#).is_ok());
    }
}
