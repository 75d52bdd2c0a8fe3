//! A serde serializer that writes nothing and fails on the first number
//! JSON cannot carry exactly: a non-finite float or an integer beyond
//! +-2^53. It tracks the JSON path for the error message.

use super::{CanonicalError, MAX_SAFE_INTEGER};
use serde::Serialize;
use serde::ser::{self, Impossible};
use std::fmt::Display;

impl ser::Error for CanonicalError {
    fn custom<T: Display>(message: T) -> Self {
        CanonicalError::Serialize(message.to_string())
    }
}

pub(super) struct NumberCheck {
    pub(super) path: String,
}

impl NumberCheck {
    fn integer(&self, magnitude: u128, text: String) -> Result<(), CanonicalError> {
        if magnitude > u128::from(MAX_SAFE_INTEGER) {
            return Err(CanonicalError::UnsafeInteger {
                path: self.path.clone(),
                value: text,
            });
        }
        Ok(())
    }

    fn nested<T: Serialize + ?Sized>(
        &mut self,
        segment: &str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        let len = self.path.len();
        self.path.push_str(segment);
        let outcome = value.serialize(&mut *self);
        self.path.truncate(len);
        outcome
    }
}

macro_rules! check_signed {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, value: $ty) -> Result<(), CanonicalError> {
            self.integer(i128::from(value).unsigned_abs(), value.to_string())
        }
    )*};
}

macro_rules! check_unsigned {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, value: $ty) -> Result<(), CanonicalError> {
            self.integer(u128::from(value), value.to_string())
        }
    )*};
}

impl<'a> ser::Serializer for &'a mut NumberCheck {
    type Ok = ();
    type Error = CanonicalError;
    type SerializeSeq = Compound<'a>;
    type SerializeTuple = Compound<'a>;
    type SerializeTupleStruct = Compound<'a>;
    type SerializeTupleVariant = Compound<'a>;
    type SerializeMap = Compound<'a>;
    type SerializeStruct = Compound<'a>;
    type SerializeStructVariant = Compound<'a>;

    check_signed!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64, serialize_i128: i128);
    check_unsigned!(serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64, serialize_u128: u128);

    fn serialize_f32(self, value: f32) -> Result<(), CanonicalError> {
        self.serialize_f64(f64::from(value))
    }
    fn serialize_f64(self, value: f64) -> Result<(), CanonicalError> {
        if value.is_finite() {
            Ok(())
        } else {
            Err(CanonicalError::NonFinite {
                path: self.path.clone(),
            })
        }
    }
    fn serialize_bool(self, _: bool) -> Result<(), CanonicalError> {
        Ok(())
    }
    fn serialize_char(self, _: char) -> Result<(), CanonicalError> {
        Ok(())
    }
    fn serialize_str(self, _: &str) -> Result<(), CanonicalError> {
        Ok(())
    }
    fn serialize_bytes(self, _: &[u8]) -> Result<(), CanonicalError> {
        Ok(())
    }
    fn serialize_none(self) -> Result<(), CanonicalError> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), CanonicalError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), CanonicalError> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), CanonicalError> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), CanonicalError> {
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), CanonicalError> {
        self.nested(&format!(".{variant}"), value)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Compound<'a>, CanonicalError> {
        Ok(Compound::new(self))
    }
    fn serialize_tuple(self, _: usize) -> Result<Compound<'a>, CanonicalError> {
        Ok(Compound::new(self))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, CanonicalError> {
        Ok(Compound::new(self))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, CanonicalError> {
        Ok(Compound::new(self))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Compound<'a>, CanonicalError> {
        Ok(Compound::new(self))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Compound<'a>, CanonicalError> {
        Ok(Compound::new(self))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Compound<'a>, CanonicalError> {
        Ok(Compound::new(self))
    }
}

/// Walks the members of a sequence, map or struct.
pub(super) struct Compound<'a> {
    check: &'a mut NumberCheck,
    item_idx: usize,
    key: String,
}

impl<'a> Compound<'a> {
    fn new(check: &'a mut NumberCheck) -> Self {
        Compound {
            check,
            item_idx: 0,
            key: String::new(),
        }
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonicalError> {
        let segment = format!("[{}]", self.item_idx);
        self.item_idx += 1;
        self.check.nested(&segment, value)
    }
}

macro_rules! sequence_like {
    ($($trait:ident :: $method:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = CanonicalError;
            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonicalError> {
                self.element(value)
            }
            fn end(self) -> Result<(), CanonicalError> {
                Ok(())
            }
        }
    )*};
}

sequence_like!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = CanonicalError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), CanonicalError> {
        self.key = key.serialize(KeyName)?;
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), CanonicalError> {
        let segment = format!(".{}", self.key);
        self.check.nested(&segment, value)
    }
    fn end(self) -> Result<(), CanonicalError> {
        Ok(())
    }
}

macro_rules! struct_like {
    ($($trait:ident),*) => {$(
        impl ser::$trait for Compound<'_> {
            type Ok = ();
            type Error = CanonicalError;
            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), CanonicalError> {
                self.check.nested(&format!(".{key}"), value)
            }
            fn end(self) -> Result<(), CanonicalError> {
                Ok(())
            }
        }
    )*};
}

struct_like!(SerializeStruct, SerializeStructVariant);

/// Turns a map key into text for the path; JSON keys are strings, and
/// integer keys are written as their digits.
struct KeyName;

macro_rules! key_from_display {
    ($($method:ident: $ty:ty),*) => {$(
        fn $method(self, value: $ty) -> Result<String, CanonicalError> {
            Ok(value.to_string())
        }
    )*};
}

impl ser::Serializer for KeyName {
    type Ok = String;
    type Error = CanonicalError;
    type SerializeSeq = Impossible<String, CanonicalError>;
    type SerializeTuple = Impossible<String, CanonicalError>;
    type SerializeTupleStruct = Impossible<String, CanonicalError>;
    type SerializeTupleVariant = Impossible<String, CanonicalError>;
    type SerializeMap = Impossible<String, CanonicalError>;
    type SerializeStruct = Impossible<String, CanonicalError>;
    type SerializeStructVariant = Impossible<String, CanonicalError>;

    key_from_display!(
        serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
        serialize_u64: u64, serialize_f32: f32, serialize_f64: f64, serialize_char: char,
        serialize_str: &str
    );

    fn serialize_bytes(self, _: &[u8]) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_none(self) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<String, CanonicalError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<String, CanonicalError> {
        Ok(variant.to_string())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<String, CanonicalError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, CanonicalError> {
        Err(key_error())
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, CanonicalError> {
        Err(key_error())
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, CanonicalError> {
        Err(key_error())
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, CanonicalError> {
        Err(key_error())
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, CanonicalError> {
        Err(key_error())
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, CanonicalError> {
        Err(key_error())
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, CanonicalError> {
        Err(key_error())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, CanonicalError> {
        Err(key_error())
    }
}

fn key_error() -> CanonicalError {
    CanonicalError::Serialize("a JSON object key must be a string".to_string())
}
