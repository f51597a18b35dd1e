//! Reading an operation's arguments into its parameter type: one
//! normalisation pass driven by the operation's generated schema (the
//! leniency clients rely on), then serde, with the path of a bad field
//! (serde_path_to_error) and the names nothing took (serde_ignored).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::full_schema;
use super::probe::ProbeError;
use crate::domain::json_kind as type_name;
use crate::error::{Error, Result};

/// The schema of one operation (`read_thoughts`) or sub-operation
/// (`session.get`), as the tool lists it.
pub fn schema_of_op(key: &str) -> Option<&'static Value> {
    full_schema().get("$defs")?.get(key)
}

/// `value` with what some clients send in place of a parameter's type put
/// in that type, where `schema` (an object schema) says which: a decimal
/// string or a whole float becomes an integer, `"true"`/`"false"` a
/// boolean, JSON text of an object or list that object or list, and one
/// plain string a list of one where a list of strings goes. Nothing else
/// changes; what still does not fit is for the deserializer to refuse,
/// naming the field.
pub fn normalise(schema: &Value, value: Value) -> Value {
    let wanted = schema.get("type").and_then(Value::as_str);
    match (wanted, value) {
        (Some("integer"), Value::String(s)) => match s.trim().parse::<i64>() {
            Ok(i) => Value::from(i),
            Err(_) => Value::String(s),
        },
        (Some("integer"), Value::Number(n)) if n.as_i64().is_none() && n.as_u64().is_none() => {
            match n.as_f64().filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15) {
                Some(f) => Value::from(f as i64),
                None => Value::Number(n),
            }
        }
        (Some("boolean"), Value::String(s)) => match s.trim() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => Value::String(s),
        },
        (Some(kind @ ("object" | "array")), Value::String(s)) => {
            // JSON text naming a key twice is left as text (and so
            // refused): which of the two values a reader keeps is not defined.
            let parsed = serde_json::from_str::<Value>(&s)
                .ok()
                .filter(|_| crate::json_text::first_duplicate_key(&s).is_none());
            let looks_like_json = s.trim_start().starts_with(['[', '{']) && s.contains('"');
            match parsed {
                Some(v @ Value::Object(_)) if kind == "object" => normalise(schema, v),
                Some(v @ Value::Array(_)) if kind == "array" => normalise(schema, v),
                // One plain string where a list of strings goes is a list
                // of one (`sessionTags: "draft"`); text that looks like JSON
                // but is not a list is not guessed at.
                _ if kind == "array"
                    && schema.pointer("/items/type").is_some_and(|t| t == "string")
                    && !looks_like_json =>
                {
                    Value::Array(vec![Value::String(s)])
                }
                _ => Value::String(s),
            }
        }
        (_, Value::Object(map)) => {
            let properties = schema.get("properties").and_then(Value::as_object);
            Value::Object(
                map.into_iter()
                    .map(|(k, v)| match properties.and_then(|p| p.get(&k)) {
                        Some(property) => (k, normalise(property, v)),
                        None => (k, v),
                    })
                    .collect(),
            )
        }
        (_, Value::Array(items)) => match schema.get("items") {
            Some(item) => Value::Array(items.into_iter().map(|v| normalise(item, v)).collect()),
            None => Value::Array(items),
        },
        (_, other) => other,
    }
}

/// The arguments of operation `key` (`read_thoughts`, `session.get`) as
/// its parameter type `T`, with the names nothing took (`colour`,
/// `newWork.colour`). A field of the wrong type, or a required one
/// missing, is `INVALID_PAYLOAD` naming the field's path.
pub fn parse<T: DeserializeOwned + 'static>(key: &str, value: Value) -> Result<(T, Vec<String>)> {
    let schema = schema_of_op(key).ok_or_else(|| Error::Internal(format!("no parameter schema for {key}")))?;
    let aliases = aliases_of::<T>(schema);
    let value = documented_names(&aliases, value);
    duplicate_keys_in_json_text(schema, &value)?;
    let value = normalise(schema, value);
    no_nul("", &value)?;
    let value = one_name_each(&aliases, value)?;
    let mut ignored = Vec::new();
    let mut track = serde_path_to_error::Track::new();
    let de = serde_path_to_error::Deserializer::new(&value, &mut track);
    // serde_ignored says a step through an Option as `?` (`options.?.x`).
    let parsed = serde_ignored::deserialize(de, |path| ignored.push(field_path(&path.to_string())));
    match parsed {
        Ok(t) => Ok((t, ignored)),
        Err(e) => Err(payload_error(
            schema,
            &value,
            &track.path().to_string(),
            &e.to_string(),
            super::field_names::<T>(),
        )),
    }
}

/// A thought number or count: 1 to the largest thought number (the
/// schema says at least 1; serde takes any u32).
pub fn thought_number(field: &str, value: Option<u32>) -> Result<Option<u32>> {
    let max = crate::domain::MAX_THOUGHT_NUMBER;
    match value {
        Some(n) if n < 1 || n > max => Err(Error::invalid(
            field,
            format!("{field} must be between 1 and {max}, got {n}"),
        )),
        other => Ok(other),
    }
}

/// A string anywhere in the arguments holding U+0000: no text a client
/// means to record has one, and SQLite's text functions stop at it.
fn no_nul(at: &str, value: &Value) -> Result<()> {
    let join = |k: &str| {
        if at.is_empty() {
            k.to_string()
        } else {
            format!("{at}.{k}")
        }
    };
    match value {
        Value::String(s) if s.contains('\0') => Err(Error::invalid(
            at,
            format!("{at} must not contain NUL characters (U+0000)"),
        )),
        Value::Object(map) => map.iter().try_for_each(|(k, v)| no_nul(&join(k), v)),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| no_nul(&format!("{at}[{i}]"), v)),
        _ => Ok(()),
    }
}

/// serde_ignored's path (`keyMoments.0.?.sid`) as errors name a field
/// (`keyMoments[0].sid`): no step through an Option, list indexes in
/// brackets.
fn field_path(ignored: &str) -> String {
    let mut path = String::new();
    for step in ignored.split('.').filter(|s| *s != "?") {
        if step.parse::<usize>().is_ok() {
            path.push_str(&format!("[{step}]"));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(step);
        }
    }
    path
}

/// An object or list parameter sent as JSON text that names a key twice is
/// refused, as a request that does is: which value a reader keeps is not
/// defined.
fn duplicate_keys_in_json_text(schema: &Value, value: &Value) -> Result<()> {
    let (Value::Object(map), Some(properties)) = (value, schema.get("properties")) else {
        return Ok(());
    };
    for (k, v) in map {
        let structured = properties
            .get(k)
            .and_then(|p| p.get("type"))
            .is_some_and(|t| t == "object" || t == "array");
        if let (true, Value::String(text)) = (structured, v) {
            super::super::args::json_in_string(k, text)?;
        }
    }
    Ok(())
}

/// Undocumented names with the documented parameter each stands for.
pub(super) type Aliases = Arc<[(&'static str, String)]>;

/// Each name `T` takes that the schema does not list (a serde alias:
/// `tag`, `q`, `session_id`), with the documented parameter it stands for
/// (`tags`, `query`, `sessionId`). Which one is found by asking serde, with
/// a value of the documented parameter's type, once per type: the answer
/// depends on the type alone, and asking costs a few failed parses.
pub(super) fn aliases_of<T: DeserializeOwned + 'static>(schema: &Value) -> Aliases {
    type Cache = Mutex<HashMap<TypeId, Aliases>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let lock = || cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(known) = lock().get(&TypeId::of::<T>()) {
        return known.clone();
    }
    let properties = schema.get("properties").and_then(Value::as_object);
    let documented = |n: &str| properties.is_some_and(|p| p.contains_key(n));
    let sample = |property: &Value| -> Value {
        if let Some(first) = property.get("enum").and_then(Value::as_array).and_then(|e| e.first()) {
            return first.clone();
        }
        match property.get("type").and_then(Value::as_str) {
            Some("integer" | "number") => Value::from(1),
            Some("boolean") => Value::Bool(true),
            Some("array") => Value::Array(Vec::new()),
            Some("object") => Value::Object(Map::new()),
            _ => Value::String("x".into()),
        }
    };
    let found: Aliases = super::field_names::<T>()
        .iter()
        .filter(|alias| !documented(alias))
        .filter_map(|alias| {
            let (name, _) = properties?
                .iter()
                .find(|(name, property)| same_parameter::<T>(name, alias, &sample(property)))?;
            Some((*alias, name.clone()))
        })
        .collect();
    lock().insert(TypeId::of::<T>(), found.clone());
    found
}

/// `value` with each alias under the parameter's documented name, when
/// that name is not given too, so that the normalisation knows its type
/// (`tag: "x"` is a list of one).
fn documented_names(aliases: &[(&'static str, String)], value: Value) -> Value {
    let Value::Object(mut map) = value else {
        return value;
    };
    for (alias, name) in aliases {
        if !map.contains_key(name)
            && let Some(v) = map.remove(*alias)
        {
            map.insert(name.clone(), v);
        }
    }
    Value::Object(map)
}

/// Whether `a` and `b` are two names of one parameter of `T`: serde
/// refuses the two together as a duplicate (`v`, of the parameter's type,
/// is given under both).
fn same_parameter<T: DeserializeOwned>(a: &str, b: &str, v: &Value) -> bool {
    let both = Value::Object(Map::from_iter([(a.to_string(), v.clone()), (b.to_string(), v.clone())]));
    matches!(super::probe::probe::<T>(&both), Err(ProbeError::Duplicate(_)))
}

/// Two names of one parameter (`sessionId` and `session_id`): the same
/// value is that value, once; different values are refused, since which
/// one the caller meant is anyone's guess. (Serde would refuse both as a
/// duplicate.) The documented name is the one kept, and the one an error
/// is reported on.
fn one_name_each(aliases: &[(&'static str, String)], value: Value) -> Result<Value> {
    let Value::Object(mut map) = value else {
        return Ok(value);
    };
    for (alias, name) in aliases {
        let (Some(a), Some(b)) = (map.get(name), map.get(*alias)) else {
            continue;
        };
        if !super::super::args::same_meaning(a, b) {
            return Err(Error::invalid_with(
                name,
                format!(
                    "{name} and {alias} are two names of one parameter, given different values ({} and {}); \
                     give one (nothing was done)",
                    super::super::clip(&a.to_string()),
                    super::super::clip(&b.to_string())
                ),
                serde_json::json!({ "conflictsWith": alias }),
            ));
        }
        map.remove(*alias);
    }
    Ok(Value::Object(map))
}

/// The first of the names `schema` (an object schema) requires that
/// `value` lacks.
/// (`fields`: those of the type at that level, where the schema also
/// requires the name of the operation's sub-operation, which the gateway
/// takes out before parsing.)
fn missing_required<'a>(schema: &'a Value, value: &Value, fields: Option<&[&str]>) -> Option<&'a str> {
    let given = value.as_object()?;
    schema
        .get("required")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .filter(|name| fields.is_none_or(|f| f.contains(name)))
        .find(|name| given.get(*name).is_none_or(Value::is_null))
}

/// The deserializer's complaint as `INVALID_PAYLOAD` on the field it
/// concerns, said as the parameter's type says it where that is known.
fn payload_error(schema: &Value, value: &Value, path: &str, message: &str, fields: &[&str]) -> Error {
    let schema_at = |path: &str| {
        at_path(
            schema,
            path,
            |s, name| s.get("properties")?.get(name),
            |s| s.get("items"),
        )
    };
    // A missing field is reported at the path of the object that lacks
    // it; which one, the schema (generated from the same type) says.
    let missing = at_path(value, path, |v, name| v.get(name), |_| None)
        .zip(schema_at(path))
        .and_then(|(object, object_schema)| missing_required(object_schema, object, (path == ".").then_some(fields)));
    let field = match (path, missing) {
        (".", Some(name)) => name.to_string(),
        (_, Some(name)) => format!("{path}.{name}"),
        _ => path.to_string(),
    };
    let property = schema_at(&field);
    if missing.is_some() {
        // What the parameter is, as the schema says it.
        let what = property
            .and_then(|p| p.get("description"))
            .and_then(Value::as_str)
            .map(|d| format!(": {}", d.trim_end_matches('.')))
            .unwrap_or_default();
        return Error::invalid(field.clone(), format!("{field} is required{what}"));
    }
    let given = at_path(value, &field, |v, name| v.get(name), |_| None);
    if let (Some(Value::Array(allowed)), Some(Value::String(s))) = (property.and_then(|p| p.get("enum")), given) {
        let names: Vec<&str> = allowed.iter().filter_map(Value::as_str).collect();
        return Error::invalid_with(
            field.clone(),
            format!("{field} must be one of {}, got {s:?}", names.join(", ")),
            serde_json::json!({ "allowed": names }),
        );
    }
    let said = match (property.and_then(|p| p.get("type")).and_then(Value::as_str), given) {
        (Some("integer"), Some(v @ Value::Number(n))) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => {
            format!("{field} is out of range, got {v}")
        }
        (Some("integer"), Some(v)) => format!("{field} must be a whole number, got {}", clipped(v)),
        (Some("boolean"), Some(v)) => format!("{field} must be true or false, got {}", clipped(v)),
        (Some("string"), Some(v)) if !v.is_string() => format!("{field} must be a string, got {}", type_name(v)),
        // JSON text that does not read says why (`{"x": 1e999}`).
        (Some("object"), Some(v)) if !v.is_object() => return super::super::args::not_an_object(&field, v),
        (Some("array"), Some(v)) if !v.is_array() => format!("{field} must be a list, got {}", type_name(v)),
        _ => format!("{field}: {message}"),
    };
    Error::invalid(field, said)
}

/// What sits at `path` (`options.includeTimeline`, `tags[0]`) under
/// `root`: `field` steps into a name, `item` into a list's item.
fn at_path<'a>(
    root: &'a Value,
    path: &str,
    field: impl Fn(&'a Value, &str) -> Option<&'a Value>,
    item: impl Fn(&'a Value) -> Option<&'a Value>,
) -> Option<&'a Value> {
    path.split('.').try_fold(root, |at, step| {
        let (name, indexes) = step.split_once('[').map_or((step, ""), |(n, rest)| (n, rest));
        let mut at = if name.is_empty() { at } else { field(at, name)? };
        for index in indexes.split('[') {
            let Some(i) = index.strip_suffix(']') else { continue };
            at = match at {
                Value::Array(items) => items.get(i.parse::<usize>().ok()?)?,
                other => item(other)?,
            };
        }
        Some(at)
    })
}

fn clipped(v: &Value) -> String {
    super::super::clip(&v.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{Cipher, DeepAnalysis, ReadThoughts, Thought, ThoughtRange};
    use super::*;

    fn field(e: Error) -> (String, String) {
        match e {
            Error::InvalidPayload { field, message, .. } => (field, message),
            other => panic!("not a payload error: {other:?}"),
        }
    }

    #[test]
    fn normalise_follows_the_schema_types() {
        let schema = schema_of_op("read_thoughts").unwrap();
        let v = normalise(
            schema,
            json!({ "thoughtNumber": " 3 ", "full": "true", "range": "[1, 2]", "branchId": "7", "last": 2.0 }),
        );
        assert_eq!(
            v,
            json!({ "thoughtNumber": 3, "full": true, "range": [1, 2], "branchId": "7", "last": 2 })
        );
        // What does not fit its type is left for the deserializer to refuse.
        let v = normalise(
            schema,
            json!({ "thoughtNumber": "three", "full": "yes", "range": "{1" }),
        );
        assert_eq!(v, json!({ "thoughtNumber": "three", "full": "yes", "range": "{1" }));
        // Names the schema lacks are left alone.
        let v = normalise(schema, json!({ "colour": "1", "verbose": "true" }));
        assert_eq!(v, json!({ "colour": "1", "verbose": "true" }));
        // One string where a list of strings goes is a list of one.
        let thought = schema_of_op("thought").unwrap();
        let v = normalise(thought, json!({ "sessionTags": "draft", "sessionTitle": "[x]" }));
        assert_eq!(v, json!({ "sessionTags": ["draft"], "sessionTitle": "[x]" }));
        let v = normalise(thought, json!({ "sessionTags": "7" }));
        assert_eq!(v, json!({ "sessionTags": ["7"] }));
        let v = normalise(thought, json!({ "sessionTags": "[\"a\", \"b\"]" }));
        assert_eq!(v, json!({ "sessionTags": ["a", "b"] }));
        let v = normalise(
            thought,
            json!({ "sessionTags": "[\"a\"", "newWork": "{\"task\":\"a\",\"task\":\"b\"}" }),
        );
        assert_eq!(
            v,
            json!({ "sessionTags": "[\"a\"", "newWork": "{\"task\":\"a\",\"task\":\"b\"}" })
        );
        // A range's ends are integers too.
        let v = normalise(schema, json!({ "range": ["1", "2"] }));
        assert_eq!(v, json!({ "range": [1, 2] }));
    }

    #[test]
    fn parse_reads_the_type_and_reports_what_it_ignored() {
        let (r, ignored): (ReadThoughts, _) = parse(
            "read_thoughts",
            json!({ "range": "[2, 4]", "full": "false", "colour": "blue" }),
        )
        .unwrap();
        assert_eq!(r.range.map(ThoughtRange::ends), Some((2, 4)));
        assert_eq!(r.full, Some(false));
        assert_eq!(ignored, ["colour"]);
        let (c, ignored): (Cipher, _) = parse("cipher", json!({ "brief": "true" })).unwrap();
        assert_eq!(c.brief, Some(true));
        assert!(ignored.is_empty());
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse::<ReadThoughts>("read_thoughts", json!({ "thoughtNumber": "three" })).unwrap_err();
        assert_eq!(
            field(e),
            (
                "thoughtNumber".into(),
                "thoughtNumber must be a whole number, got \"three\"".into()
            )
        );
        let e = parse::<ReadThoughts>("read_thoughts", json!({ "full": "yes" })).unwrap_err();
        assert_eq!(field(e).0, "full");
        let e = parse::<ReadThoughts>("read_thoughts", json!({ "last": -1 })).unwrap_err();
        assert_eq!(field(e), ("last".into(), "last is out of range, got -1".into()));
        let e = parse::<ReadThoughts>("read_thoughts", json!({ "last": 1.5 })).unwrap_err();
        assert_eq!(field(e), ("last".into(), "last must be a whole number, got 1.5".into()));
        let e = parse::<Thought>("thought", json!({ "thought": "x" })).unwrap_err();
        let (name, message) = field(e);
        assert_eq!(name, "nextThoughtNeeded");
        assert!(
            message.starts_with("nextThoughtNeeded is required: Whether another thought follows"),
            "{message}"
        );
        let e = parse::<Cipher>("cipher", json!({ "sessionId": "a\u{0}b" })).unwrap_err();
        assert_eq!(field(e).0, "sessionId");
        // Inside an object parameter, said as its property's type says it.
        let e = parse::<DeepAnalysis>("deep_analysis", json!({ "options": { "includeTimeline": 2 } })).unwrap_err();
        assert_eq!(
            field(e),
            (
                "options.includeTimeline".into(),
                "options.includeTimeline must be true or false, got 2".into()
            )
        );
        let e = parse::<DeepAnalysis>("deep_analysis", json!({ "options": { "compareWith": [1] } })).unwrap_err();
        assert_eq!(
            field(e),
            (
                "options.compareWith[0]".into(),
                "options.compareWith[0] must be a string, got a number".into()
            )
        );
        let e = parse::<DeepAnalysis>("deep_analysis", json!({ "options": "full" })).unwrap_err();
        assert_eq!(
            field(e),
            (
                "options".into(),
                "options must be an object, got a string: send it as a JSON object".into()
            )
        );
        // JSON text that does not read says why.
        let e = parse::<DeepAnalysis>("deep_analysis", json!({ "options": r#"{"x": 1e999}"# })).unwrap_err();
        assert!(field(e).1.contains("does not parse"));
        // A name outside a fixed set lists the set.
        let e = parse::<DeepAnalysis>("deep_analysis", json!({ "analysisType": "vibes" })).unwrap_err();
        assert!(
            matches!(
                e,
                Error::InvalidPayload { ref field, ref message, details: Some(ref d) }
                    if field == "analysisType"
                        && message == "analysisType must be one of patterns, cognitive_load, decision_points, full, got \"vibes\""
                        && d["allowed"][0] == "patterns"
            ),
            "{e:?}"
        );
    }

    #[test]
    fn session_ids_are_read_in_the_ledger_form() {
        let given = " 0F8E2D9C-1B2A-4C3D-9E8F-A1B2C3D4E5F6 ";
        let id = "0f8e2d9c-1b2a-4c3d-9e8f-a1b2c3d4e5f6";
        for name in ["sessionId", "session_id", "id"] {
            let (r, _): (ReadThoughts, _) = parse("read_thoughts", json!({ name: given })).unwrap();
            assert_eq!(r.session_id.as_deref(), Some(id), "{name}");
        }
        let (d, _): (DeepAnalysis, _) = parse(
            "deep_analysis",
            json!({ "options": { "compareWith": [given, "Imported-1"] } }),
        )
        .unwrap();
        let compared = d.options.and_then(|o| o.compare_with).unwrap();
        assert_eq!(compared, [id, "Imported-1"]);
        // Blank is left for the operation to refuse in its own words.
        let (r, _): (ReadThoughts, _) = parse("read_thoughts", json!({ "sessionId": "  " })).unwrap();
        assert_eq!(r.session_id.as_deref(), Some(""));
        // Not a string: said as a string parameter's type says it.
        let e = parse::<ReadThoughts>("read_thoughts", json!({ "sessionId": 7 })).unwrap_err();
        assert_eq!(
            field(e),
            ("sessionId".into(), "sessionId must be a string, got a number".into())
        );
    }

    #[test]
    fn names_ignored_inside_an_optional_object_are_paths() {
        let (_, ignored): (DeepAnalysis, _) =
            parse("deep_analysis", json!({ "options": { "colour": "red" } })).unwrap();
        assert_eq!(ignored, ["options.colour"]);
    }

    #[test]
    fn two_names_of_one_parameter_must_agree() {
        let (r, _): (ReadThoughts, _) = parse("read_thoughts", json!({ "sessionId": "s", "session_id": "s" })).unwrap();
        assert_eq!(r.session_id.as_deref(), Some("s"));
        let e = parse::<ReadThoughts>("read_thoughts", json!({ "sessionId": "s", "id": "t" })).unwrap_err();
        assert!(matches!(
            e,
            Error::InvalidPayload { field, details: Some(d), .. } if field == "sessionId" && d["conflictsWith"] == "id"
        ));
    }
}
