//! A deserializer over a `serde_json::Value` whose error says *what* went
//! wrong as data: a field given twice, a field missing, or anything else.
//! serde_json's own error says it only in its message, whose wording is no
//! API; asking a parameter type through this one finds out which of its
//! names are two names of one parameter without reading any text.

use serde::de::value::{MapDeserializer, SeqDeserializer, StrDeserializer};
use serde::de::{self, IntoDeserializer, Visitor};
use serde_json::Value;

/// Why a probe parse failed.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum ProbeError {
    /// Two of the names given are one field (this one).
    Duplicate(&'static str),
    /// A required field was not given.
    Missing(&'static str),
    Other,
}

impl std::fmt::Display for ProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

impl std::error::Error for ProbeError {}

impl de::Error for ProbeError {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        ProbeError::Other
    }

    fn duplicate_field(field: &'static str) -> Self {
        ProbeError::Duplicate(field)
    }

    fn missing_field(field: &'static str) -> Self {
        ProbeError::Missing(field)
    }
}

/// `value`, to be deserialized with [`ProbeError`] as the error.
pub(super) struct Probe<'a>(pub &'a Value);

impl<'de> IntoDeserializer<'de, ProbeError> for Probe<'de> {
    type Deserializer = Self;

    fn into_deserializer(self) -> Self {
        self
    }
}

impl<'de> de::Deserializer<'de> for Probe<'de> {
    type Error = ProbeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => visitor.visit_u64(u),
                (_, Some(i), _) => visitor.visit_i64(i),
                (_, _, Some(f)) => visitor.visit_f64(f),
                _ => Err(ProbeError::Other),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visitor.visit_seq(SeqDeserializer::new(items.iter().map(Probe))),
            Value::Object(map) => {
                visitor.visit_map(MapDeserializer::new(map.iter().map(|(k, v)| (k.as_str(), Probe(v)))))
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        match self.0 {
            Value::String(s) => {
                let variant: StrDeserializer<'de, ProbeError> = s.as_str().into_deserializer();
                variant.deserialize_enum(name, variants, visitor)
            }
            _ => self.deserialize_any(visitor),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

/// How `T` takes `value`: `Ok` or what went wrong, as data.
pub(super) fn probe<T: serde::de::DeserializeOwned>(value: &Value) -> Result<(), ProbeError> {
    T::deserialize(Probe(value)).map(|_| ())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{Cipher, Thought};
    use super::*;

    #[test]
    fn a_repeated_and_a_missing_field_are_told_apart_as_data() {
        assert_eq!(
            probe::<Cipher>(&json!({ "sessionId": "a", "session_id": "a" })),
            Err(ProbeError::Duplicate("sessionId"))
        );
        assert_eq!(
            probe::<Thought>(&json!({ "nextThoughtNeeded": true })),
            Err(ProbeError::Missing("thought"))
        );
        assert_eq!(
            probe::<Thought>(&json!({ "thought": "x", "nextThoughtNeeded": true })),
            Ok(())
        );
        assert_eq!(probe::<Thought>(&json!({ "thought": 7 })), Err(ProbeError::Other));
    }
}
