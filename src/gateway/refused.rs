//! A gateway call refused: the error, what the call carried, and the
//! names it may have meant.

use serde_json::{Map, Value, json};

use super::{Gateway, args, clip};
use crate::error::Error;

/// The sub-operation a call named, or the refusal that lists those of
/// `operation` (from its parameter types, so the list cannot drift).
pub(crate) fn required_sub_operation(operation: &str, name: Option<String>) -> Result<String, Error> {
    name.ok_or_else(|| {
        let valid = super::params::sub_operations(operation);
        Error::invalid_with(
            "subOperation",
            format!("{operation} needs subOperation: one of {}", valid.join(", ")),
            json!({ "subOperations": valid }),
        )
    })
}

/// A sub-operation `operation` does not have, with the one meant.
pub(crate) fn unknown_sub_operation(operation: &str, given: &str) -> Error {
    unknown_name(
        &format!("{operation} sub-operation"),
        given,
        &super::params::sub_operations(operation),
        ("subOperation", "validSubOperations"),
    )
}

/// `unknown {what} "given"`, naming the valid names under `keys.1` and,
/// when `given` misspells one of them ([`args::name_meant`]: `startNew`,
/// `readThoughts`), that one as `didYouMean` (the list alone leaves the agent
/// to find it).
pub(crate) fn unknown_name(what: &str, given: &str, valid: &[&'static str], keys: (&str, &str)) -> Error {
    let meant = args::name_meant(given, valid);
    let mut details = json!({ keys.0: given, keys.1: valid });
    let mut message = format!("unknown {what} {given:?}");
    if let Some(m) = meant {
        details["didYouMean"] = json!(m);
        message.push_str(&format!("; did you mean {m:?}? (nothing was done)"));
    }
    Error::InvalidOperation {
        message,
        details: Some(details),
    }
}

impl Gateway {
    /// A session id not found that starts some (an agent shortened it, as
    /// ids are often shown cut) or is one in other case: the answer names
    /// them (`didYouMean` when one, `candidates` up to five), rather than a
    /// bare `SESSION_NOT_FOUND`.
    pub(super) async fn name_sessions_meant(&self, given: &str, payload: &mut Value) {
        let prefix = given.to_string();
        let Ok(found) = self.blocking(move |s| s.sessions_meant(&prefix, 5)).await else {
            return;
        };
        let by_id = matches!(found, crate::store::SessionsMeant::ByIdStart(_));
        let said = match found.found() {
            [] => return,
            [(id, title)] => {
                payload["details"]["didYouMean"] = json!(id);
                format!("; did you mean {id} ({})?", json!(clip(title)))
            }
            many => {
                payload["details"]["candidates"] = json!(
                    many.iter()
                        .map(|(id, title)| json!({ "sessionId": id, "title": title }))
                        .collect::<Vec<_>>()
                );
                let at_least = if many.len() == 5 { "at least " } else { "" };
                if by_id {
                    format!(
                        "; {at_least}{} sessions have ids starting {}: give the whole id (see details.candidates)",
                        many.len(),
                        given.trim().to_ascii_lowercase()
                    )
                } else {
                    format!(
                        "; {at_least}{} sessions have this title: give the id of the one meant (see \
                         details.candidates)",
                        many.len()
                    )
                }
            }
        };
        if let Some(message) = payload["message"].as_str() {
            payload["message"] = json!(format!("{message}{said}"));
        }
    }
}

/// Names of ignored arguments an answer lists at most, and the characters
/// of each it shows: the names are the client's, and an answer that echoed
/// them whole (one name of a megabyte, or 100,000 names) would be as long.
const MAX_IGNORED_SHOWN: usize = 20;
const MAX_IGNORED_NAME: usize = 64;

/// `ignored` as an answer names it: the first [`MAX_IGNORED_SHOWN`] names,
/// each cut past [`MAX_IGNORED_NAME`] characters (ending `...`), and how
/// many more were ignored.
pub(super) fn ignored_shown(ignored: &[String]) -> (Vec<String>, usize) {
    let named = ignored
        .iter()
        .take(MAX_IGNORED_SHOWN)
        .map(|k| match k.char_indices().nth(MAX_IGNORED_NAME) {
            Some((at, _)) => format!("{}...", &k[..at]),
            None => k.clone(),
        })
        .collect();
    (named, ignored.len().saturating_sub(MAX_IGNORED_SHOWN))
}

/// A gateway call refused: the error, with the names of the arguments the
/// call carried, so that a client can see what the server received (a
/// misspelt or misplaced field is the commonest cause of an error).
#[derive(Debug)]
pub struct Refused {
    pub error: Error,
    /// Every argument given (flat and nested merged), in name order; `None`
    /// for an error that is not about the call's arguments.
    pub(super) received: Option<Vec<String>>,
}

impl From<Error> for Refused {
    fn from(error: Error) -> Refused {
        Refused { error, received: None }
    }
}

/// The names of the arguments a call carries, as [`Refused`] lists them
/// when the call is refused before they are read: those beside `operation`
/// and those in `args` (an object, or its JSON text), or `args` itself
/// when it is neither.
pub(super) fn argument_names(arguments: Option<&Map<String, Value>>) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut names = BTreeSet::new();
    for (key, value) in arguments.into_iter().flatten() {
        match key.as_str() {
            "operation" => {}
            // Only the names: this runs for every call, and `args` may hold
            // a thought of a megabyte.
            "args" => match value {
                Value::Null => {}
                Value::Object(m) => names.extend(m.keys().cloned()),
                Value::String(s) => match serde_json::from_str::<BTreeMap<String, serde::de::IgnoredAny>>(s) {
                    Ok(m) => names.extend(m.into_keys()),
                    Err(_) => {
                        names.insert(key.clone());
                    }
                },
                _ => {
                    names.insert(key.clone());
                }
            },
            _ => {
                names.insert(key.clone());
            }
        }
    }
    names.into_iter().collect()
}

impl Refused {
    /// The ErrorPayload; a payload or operation error also names the
    /// arguments received.
    pub fn payload(&self) -> Value {
        let mut payload = self.error.payload();
        let about_arguments = matches!(
            self.error,
            Error::InvalidPayload { .. } | Error::InvalidOperation { .. }
        );
        if about_arguments && let Some(received) = &self.received {
            if !payload["details"].is_object() {
                payload["details"] = json!({});
            }
            if let Some(details) = payload["details"].as_object_mut() {
                details.insert("receivedArguments".into(), json!(received));
            }
        }
        payload
    }
}
