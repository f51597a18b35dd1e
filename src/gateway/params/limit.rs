//! A page size or result count: the one parameter type whose bounds the
//! schema states and the gateway checks, made from the same two numbers.

use std::borrow::Cow;

use schemars::generate::SchemaGenerator;
use schemars::{JsonSchema, Schema, json_schema};
use serde::{Deserialize, Deserializer};

use crate::error::{Error, Result};

/// The most items one page or one search answers.
pub const MAX_LIMIT: u32 = 100;

/// A `limit` parameter: 1 to [`MAX_LIMIT`], `DEFAULT` when not given.
/// Serde takes any u32 so that [`Limit::get`] can name the field in its
/// refusal.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limit<const DEFAULT: u32>(Option<u32>);

impl<const DEFAULT: u32> Limit<DEFAULT> {
    /// The limit given, or `DEFAULT`; a number out of range is refused
    /// under `field`.
    pub fn get(self, field: &str) -> Result<u32> {
        match self.0 {
            None => Ok(DEFAULT),
            Some(n) if (1..=MAX_LIMIT).contains(&n) => Ok(n),
            Some(n) => Err(Error::invalid(
                field,
                format!("{field} must be between 1 and {MAX_LIMIT}, got {n}"),
            )),
        }
    }

    /// What the caller gave, before any default.
    pub fn given(self) -> Option<u32> {
        self.0
    }
}

impl<'de, const DEFAULT: u32> Deserialize<'de> for Limit<DEFAULT> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Option::<u32>::deserialize(d).map(Limit)
    }
}

impl<const DEFAULT: u32> JsonSchema for Limit<DEFAULT> {
    fn schema_name() -> Cow<'static, str> {
        format!("Limit{DEFAULT}").into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_LIMIT,
            "default": DEFAULT,
        })
    }

    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn absent_is_the_default_and_the_bounds_are_checked() {
        let absent: Limit<20> = Limit::default();
        assert_eq!(absent.get("limit").ok(), Some(20));
        let given: Limit<20> = serde_json::from_value(json!(100)).unwrap();
        assert_eq!(given.get("limit").ok(), Some(100));
        let null: Limit<10> = serde_json::from_value(json!(null)).unwrap();
        assert_eq!(null.get("limit").ok(), Some(10));
        for n in [0, 101] {
            let l: Limit<20> = serde_json::from_value(json!(n)).unwrap();
            let refused = l.get("limit");
            assert!(
                matches!(&refused, Err(Error::InvalidPayload { field, .. }) if field == "limit"),
                "{refused:?}"
            );
        }
    }

    #[test]
    fn the_schema_states_the_same_bounds() {
        let schema = schemars::schema_for!(Limit<10>);
        assert_eq!(schema.get("minimum"), Some(&json!(1)));
        assert_eq!(schema.get("maximum"), Some(&json!(MAX_LIMIT)));
        assert_eq!(schema.get("default"), Some(&json!(10)));
    }
}
