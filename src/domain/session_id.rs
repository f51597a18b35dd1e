//! A session id as the ledger stores it, made so wherever one is read: from
//! a call's arguments (serde), a command line (clap, through `FromStr`) or a
//! URL. A path that takes a [`SessionId`] cannot forget the canonical form.

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A session id in the form the ledger stores ([`canonical_session_id`]).
/// Blank stays blank (the empty id): whether that is refused, and how, is
/// the caller's to say (`sessionId must not be empty`, or leave it out).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(String);

/// A session id as the ledger stores it. The ledger writes UUIDs in lower
/// case, and UUIDs are case-insensitive, so a hyphenated UUID given in upper
/// or mixed case (as some agents echo it) names the same session. Other ids
/// are kept as given, apart from surrounding whitespace. Private: every way
/// in goes through [`SessionId`].
fn canonical_session_id(id: &str) -> String {
    let id = id.trim();
    let b = id.as_bytes();
    let uuid = b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    if uuid { id.to_ascii_lowercase() } else { id.to_string() }
}

impl SessionId {
    /// `id` in the canonical form.
    pub fn new(id: &str) -> SessionId {
        SessionId(canonical_session_id(id))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

impl Deref for SessionId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SessionId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<SessionId> for String {
    fn from(id: SessionId) -> String {
        id.0
    }
}

impl From<&str> for SessionId {
    fn from(id: &str) -> SessionId {
        SessionId::new(id)
    }
}

impl PartialEq<str> for SessionId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<String> for SessionId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl PartialEq<&str> for SessionId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// Any text is an id (blank included, see [`SessionId`]), so the command
/// line refuses none: an unknown one is the store's to report.
impl FromStr for SessionId {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<SessionId, Self::Err> {
        Ok(SessionId::new(s))
    }
}

/// A string, canonicalised: a wrong type is refused as a string's would be
/// (`sessionId must be a string, got a number`).
impl<'de> Deserialize<'de> for SessionId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SessionId, D::Error> {
        let id = String::deserialize(d)?;
        Ok(SessionId::new(&id))
    }
}

impl Serialize for SessionId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Exactly a string's schema: the tool's input schema does not change.
impl schemars::JsonSchema for SessionId {
    fn inline_schema() -> bool {
        <String as schemars::JsonSchema>::inline_schema()
    }

    fn schema_name() -> Cow<'static, str> {
        <String as schemars::JsonSchema>::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        <String as schemars::JsonSchema>::schema_id()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <String as schemars::JsonSchema>::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const ID: &str = "0f8e2d9c-1b2a-4c3d-9e8f-a1b2c3d4e5f6";

    #[test]
    fn canonical_lowers_uuids_and_trims() {
        assert_eq!(canonical_session_id(ID), ID);
        assert_eq!(canonical_session_id(&ID.to_uppercase()), ID);
        assert_eq!(canonical_session_id(&format!("  {}\n", ID.to_uppercase())), ID);
        assert_eq!(canonical_session_id("Imported-Session"), "Imported-Session");
        // Only a hyphenated UUID is lowered.
        assert_eq!(
            canonical_session_id("0F8E2D9C1B2A4C3D9E8FA1B2C3D4E5F6"),
            "0F8E2D9C1B2A4C3D9E8FA1B2C3D4E5F6"
        );
        assert_eq!(
            canonical_session_id("G0F8E2D9-1B2A-4C3D-9E8F-A1B2C3D4E5F6"),
            "G0F8E2D9-1B2A-4C3D-9E8F-A1B2C3D4E5F6"
        );
    }

    #[test]
    fn every_way_in_canonicalises() {
        let given = format!(" {}\t", ID.to_uppercase());
        let from_json: SessionId = serde_json::from_value(json!(given)).unwrap();
        let from_cli: SessionId = given.parse().unwrap();
        assert_eq!(from_json, ID);
        assert_eq!(from_cli, ID);
        assert_eq!(SessionId::new(&given).as_str(), ID);
        assert_eq!(SessionId::from(given.as_str()).into_string(), ID);
        // A borrowed string deserializes too (as serde_json reads a &str).
        let borrowed: SessionId = serde_json::from_str(&format!("\"{}\"", ID.to_uppercase())).unwrap();
        assert_eq!(borrowed, ID);
        let kept: SessionId = serde_json::from_value(json!("Imported-Session")).unwrap();
        assert_eq!(kept.to_string(), "Imported-Session");
    }

    #[test]
    fn blank_stays_blank_for_the_caller_to_refuse() {
        let blank: SessionId = serde_json::from_value(json!("   ")).unwrap();
        assert!(blank.is_empty());
        assert!("".parse::<SessionId>().unwrap().is_empty());
    }

    #[test]
    fn only_a_string_is_an_id() {
        assert!(serde_json::from_value::<SessionId>(json!(7)).is_err());
        assert!(serde_json::from_value::<SessionId>(json!(null)).is_err());
        assert!(serde_json::from_value::<SessionId>(json!(["x"])).is_err());
    }

    #[test]
    fn serializes_and_describes_itself_as_a_string() {
        assert_eq!(serde_json::to_value(SessionId::new(ID)).unwrap(), json!(ID));
        let mut generator = schemars::SchemaGenerator::default();
        assert_eq!(
            generator.subschema_for::<SessionId>(),
            generator.subschema_for::<String>()
        );
        assert_eq!(
            schemars::schema_for!(Option<SessionId>),
            schemars::schema_for!(Option<String>)
        );
    }
}
