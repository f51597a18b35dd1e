//! A call's arguments before their typed parse: `Args` merges flat and
//! nested `args` (two names of one parameter must agree), splits off the
//! sub-operation, checks spelling against the schema's names (hints from
//! `name_meant`), refuses JSON text where an object goes when it is not
//! an object, and caps the number of names. The typed parse, with the
//! schema's normalisation (`"3"` to `3`), is `params::parse`.
//!
//! `Args` also notes which of its fields an operation looked at, so that the
//! gateway can tell the caller about the ones it ignored (a misspelt
//! `thougthNumber`, or a `sessionId` given to an operation without one).

use std::borrow::Cow;
use std::collections::{BTreeSet, HashSet};
use std::sync::{Arc, Mutex};

use serde_json::{Map, Value};

use crate::domain::{SessionId, json_kind as type_name};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Default)]
pub struct Args {
    map: Map<String, Value>,
    /// Which fields were given and which were read; shared by clones and
    /// by [`Args::usage`] handles.
    tracking: Arc<Mutex<Tracking>>,
}

#[derive(Debug, Default)]
struct Tracking {
    /// A set: a nested `args` of 100,000 names is merged in one by one.
    given: BTreeSet<String>,
    /// A set too: every name of a call can be read, and a call may name
    /// up to [`MAX_ARGUMENTS`].
    read: BTreeSet<String>,
    /// Every field an operation looked for, given or not.
    asked: Vec<String>,
    /// Object parameters read as arguments of their own (`options`,
    /// `newWork`): their unread fields are reported as `options.x`.
    /// With the object as given, for [`Args::stray_session_id`].
    nested: Vec<Nested>,
    /// Names inside object parameters that a parameter type did not take
    /// (`newWork.colour`), from [`Args::parse`].
    ignored_nested: Vec<String>,
}

/// An object parameter read as arguments of its own: its name (`options`,
/// `keyMoments[0]`), what was read of it, and the object as given.
type Nested = (String, Arc<Mutex<Tracking>>, Arc<Map<String, Value>>);

impl Tracking {
    fn unread(&self) -> Vec<String> {
        let mut unread: Vec<String> = self.given.difference(&self.read).cloned().collect();
        for (key, child, _) in &self.nested {
            if let Ok(child) = child.lock() {
                unread.extend(child.unread().into_iter().map(|k| format!("{key}.{k}")));
            }
        }
        unread.extend(self.ignored_nested.iter().cloned());
        unread
    }
}

/// See [`Args::usage`].
pub struct ArgsUsage(Arc<Mutex<Tracking>>);

impl ArgsUsage {
    /// Every field given (nested `args` merged in), in name order.
    pub fn given(&self) -> Vec<String> {
        let Ok(t) = self.0.lock() else {
            return Vec::new();
        };
        t.given.iter().cloned().collect()
    }

    /// Every field looked for, given or not.
    pub fn asked(&self) -> Vec<String> {
        self.0.lock().map(|t| t.asked.clone()).unwrap_or_default()
    }

    pub fn unread(&self) -> Vec<String> {
        let Ok(t) = self.0.lock() else {
            return Vec::new();
        };
        let mut unread = t.unread();
        unread.sort();
        unread.dedup();
        unread
    }
}

impl Tracking {
    fn note(list: &mut Vec<String>, key: &str) {
        if !list.iter().any(|k| k == key) {
            list.push(key.to_string());
        }
    }
}

/// A name as it is compared for misspellings: lower case, without `_`, `-`
/// or spaces.
pub(super) fn folded(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .flat_map(char::to_lowercase)
        .collect()
}

/// Whether `a` and `b` are one letter added, dropped, changed or swapped
/// apart (optimal string alignment distance 1).
fn one_edit(a: &str, b: &str) -> bool {
    a.chars().count().abs_diff(b.chars().count()) < 2 && strsim::osa_distance(a, b) == 1
}

/// Edits (insert, delete, substitute, swap two neighbours) from `a` to `b`.
pub(super) fn edits(a: &[char], b: &[char]) -> usize {
    strsim::osa_distance(&a.iter().collect::<String>(), &b.iter().collect::<String>())
}

/// The name of `names` that `given` misspells, if it is none of them: the
/// same letters in another case or with `_`, `-` or spaces (`startNew`,
/// `Read-Thoughts`), or, for names of six letters or more, one letter
/// added, dropped, changed or swapped (`get_stat`, `extract_learning`).
pub(crate) fn name_meant(given: &str, names: &[&'static str]) -> Option<&'static str> {
    if names.contains(&given) {
        return None;
    }
    let g = folded(given);
    let folded_names: Vec<(&'static str, String)> = names.iter().map(|n| (*n, folded(n))).collect();
    folded_names
        .iter()
        .find(|(_, n)| *n == g)
        .or_else(|| {
            folded_names
                .iter()
                .find(|(_, n)| n.chars().count().max(g.chars().count()) >= 6 && one_edit(&g, n))
        })
        .map(|(name, _)| *name)
}

/// The parameters that say where a write goes: a name an agent shortens or
/// lengthens from one of these (`session`, `thoughtNum`, `revisesThoughtNumber`,
/// `currentSessionId`) is refused, since ignored it would file a thought on
/// the wrong chain or in the wrong session for good. Other unknown names
/// (`metadata`, `confidence`) are only named in `ignoredArguments`.
const PLACEMENT_NAMES: &[&str] = &[
    "sessionId",
    "branchId",
    "branchFromThought",
    "thoughtNumber",
    "totalThoughts",
    "revisesThought",
    "isRevision",
    "nextThoughtNeeded",
];

/// The parameter `key` misspells, if it is not a parameter itself: the same
/// letters in another case or with `_`/`-` (`branch_id`, `SessionID`); for
/// names of eight letters or more, one letter added, dropped, changed or
/// swapped (`thougthNumber`, `totalThought`); or, for five letters or more,
/// with `placement` (a `thought`), part of one of the [`PLACEMENT_NAMES`]
/// (`session`, `revision`, `thoughtNum`), or one of them with more around it
/// (`currentSessionId`, `revisesThoughtNumber`). The names are those of the
/// generated schema ([`super::params::hint_names`]).
pub fn misspelling_of(key: &str, placement: bool) -> Option<&'static str> {
    if super::params::is_known(key) {
        return None;
    }
    let given = folded(key);
    let names = super::params::hint_names();
    let find = |hit: &dyn Fn(&str) -> bool| names.iter().find(|(_, n)| hit(n)).map(|(name, _)| name.as_str());
    find(&|n| n == given)
        .or_else(|| find(&|n| n.chars().count().max(given.chars().count()) >= 8 && one_edit(&given, n)))
        .or_else(|| {
            if !placement {
                return None;
            }
            PLACEMENT_NAMES
                .iter()
                .map(|name| (*name, folded(name)))
                .filter(|(_, n)| (given.chars().count() >= 5 && n.contains(&given)) || given.contains(n.as_str()))
                .min_by_key(|(_, n)| {
                    // The name it starts (the shortest), else the name it
                    // starts with, else one it holds or is held in (the
                    // longest): `revisesThoughtNumber` is `revisesThought`.
                    if n.starts_with(&given) {
                        (0, n.len())
                    } else if given.starts_with(n.as_str()) {
                        (1, usize::MAX - n.len())
                    } else {
                        (2, usize::MAX - n.len())
                    }
                })
                .map(|(name, _)| name)
        })
}

/// What sits at `path` (`keyMoments[0].sid`) in `map`, looking into an
/// object or list sent as JSON text as the typed parse did.
fn value_at(map: &Map<String, Value>, path: &str) -> Option<Value> {
    // Borrowed as far as it goes: a copy of the map per path made the check
    // of a call's ignored names quadratic in their number.
    fn inside(v: Cow<'_, Value>) -> Option<Cow<'_, Value>> {
        if let Value::String(s) = &*v {
            return serde_json::from_str::<Value>(s).ok().map(Cow::Owned);
        }
        Some(v)
    }
    fn child<'a>(v: Cow<'a, Value>, get: impl Fn(&Value) -> Option<&Value>) -> Option<Cow<'a, Value>> {
        match v {
            Cow::Borrowed(b) => get(b).map(Cow::Borrowed),
            Cow::Owned(o) => get(&o).cloned().map(Cow::Owned),
        }
    }
    let steps: Vec<&str> = path.split('.').collect();
    let mut at: Option<Cow<'_, Value>> = None;
    for (i, step) in steps.iter().enumerate() {
        let (name, indexes) = step.split_once('[').unwrap_or((step, ""));
        let mut here = match at {
            None => Cow::Borrowed(map.get(name)?),
            Some(v) => child(v, |v| v.get(name))?,
        };
        for index in indexes.split('[').filter_map(|i| i.strip_suffix(']')) {
            let n = index.parse::<usize>().ok()?;
            here = child(inside(here)?, |v| v.get(n))?;
        }
        if i + 1 < steps.len() {
            here = inside(here)?;
        }
        at = Some(here);
    }
    at.map(Cow::into_owned)
}

/// Refuse the first of `map`'s names that misspells a parameter (shown
/// after `at`, as `newWork.` or `args.`).
fn check_names(map: &Map<String, Value>, at: &str, placement: bool) -> Result<()> {
    for key in map.keys() {
        if let Some(name) = misspelling_of(key, placement) {
            let field = format!("{at}{key}");
            return Err(Error::invalid_with(
                field.clone(),
                format!("{field} is not a parameter; did you mean {at}{name}? (nothing was done)"),
                serde_json::json!({ "didYouMean": format!("{at}{name}") }),
            ));
        }
    }
    Ok(())
}

/// A string argument, refused if it holds U+0000: no text a client means to
/// record has one, and SQLite's text functions stop at it.
fn no_nul(key: &str, s: &str) -> Result<String> {
    if s.contains('\0') {
        return Err(Error::invalid(
            key,
            format!("{key} must not contain NUL characters (U+0000)"),
        ));
    }
    Ok(s.to_string())
}

/// Whether two spellings of one field say the same thing, as the lenient
/// readers below take them (`7` and `"7"`, `true` and `"true"`).
pub(super) fn same_meaning(a: &Value, b: &Value) -> bool {
    // A list of one is that one (`tag: "a"` beside `tags: ["a"]`). Case
    // counts: tags, titles and URIs are kept as given; a session id is read
    // in either case, so two spellings of one agree.
    let text = |s: &str| {
        let id = SessionId::new(s);
        if crate::tree::is_session_id(&id) {
            id.into_string()
        } else {
            s.trim().to_string()
        }
    };
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(text(s)),
        Value::Number(_) | Value::Bool(_) => Some(v.to_string()),
        Value::Array(items) if items.len() == 1 && !items[0].is_array() => match &items[0] {
            Value::String(s) => Some(text(s)),
            Value::Number(_) | Value::Bool(_) => Some(items[0].to_string()),
            _ => None,
        },
        _ => None,
    };
    a == b || matches!((scalar(a), scalar(b)), (Some(x), Some(y)) if x == y)
}

/// The JSON object or array a string holds, if it holds exactly one: how
/// some clients send an object or list parameter. JSON text that names a
/// key twice in an object is refused, as it is in the request itself: JSON
/// readers keep one of the two values, and which one is not defined, so
/// `"{\"subOperation\":\"get\",\"subOperation\":\"delete\"}"` must not run.
pub(super) fn json_in_string(field: &str, s: &str) -> Result<Option<Value>> {
    let t = s.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return Ok(None);
    }
    let Some(value) = serde_json::from_str::<Value>(s)
        .ok()
        .filter(|v| v.is_object() || v.is_array())
    else {
        return Ok(None);
    };
    if let Some(path) = crate::json_text::first_duplicate_key(s) {
        return Err(Error::invalid_with(
            field,
            format!(
                "{field} is JSON text that names {field}{path} twice; JSON readers keep one of the two values, \
                 and which one is not defined: give it once (nothing was done)"
            ),
            serde_json::json!({ "duplicateKey": format!("{field}{path}") }),
        ));
    }
    Ok(Some(value))
}

/// What a parameter that must be an object holds instead, for the message:
/// JSON text that does not parse says why.
pub(super) fn not_an_object(field: &str, v: &Value) -> Error {
    if let Value::String(s) = v
        && s.trim_start().starts_with(['{', '['])
        // Read whole: skipped over, a number too large to read (`1e999`) passes.
        && let Err(e) = serde_json::from_str::<Value>(s)
    {
        return Error::invalid(
            field,
            format!("{field} is a string of JSON text that does not parse ({e}); send it as a JSON object"),
        );
    }
    let beside = if field == "args" {
        ", or put the parameters beside operation"
    } else {
        ""
    };
    Error::invalid(
        field,
        format!(
            "{field} must be an object, got {}: send it as a JSON object{beside}",
            type_name(v)
        ),
    )
}

/// The most names a call's arguments (or its nested `args`) may hold: no
/// operation takes a hundred, and each name costs ~10 µs of checks (unread,
/// misspelt) on the thread that reads every request, so 10,000 hold it
/// for a tenth of a second.
pub const MAX_ARGUMENTS: usize = 10_000;

/// Refuse `map`, given as `field`, when it names more than [`MAX_ARGUMENTS`].
pub fn check_argument_count(field: &str, map: &Map<String, Value>) -> Result<()> {
    within_argument_limit(field, map.len(), "names")
}

/// Refuse `count` names of `field` past [`MAX_ARGUMENTS`]; `what` says
/// which names they are.
fn within_argument_limit(field: &str, count: usize, what: &str) -> Result<()> {
    if count <= MAX_ARGUMENTS {
        return Ok(());
    }
    Err(Error::invalid_with(
        field,
        format!("{field} holds {count} {what}, more than the {MAX_ARGUMENTS} a call may give (nothing was done)"),
        serde_json::json!({ "names": count, "maxNames": MAX_ARGUMENTS }),
    ))
}

impl Args {
    pub fn new(map: Map<String, Value>) -> Args {
        let tracking = Tracking {
            given: map.keys().cloned().collect(),
            ..Tracking::default()
        };
        Args {
            map,
            tracking: Arc::new(Mutex::new(tracking)),
        }
    }

    /// `args` of a gateway call: absent or null is empty; an object, or a
    /// string holding one in JSON (some clients send object parameters
    /// that way), is the arguments; anything else is an error.
    pub fn from_value(field: &str, v: Option<&Value>) -> Result<Args> {
        match v {
            None | Some(Value::Null) => Ok(Args::default()),
            Some(Value::Object(m)) => {
                check_argument_count(field, m)?;
                Ok(Args::new(m.clone()))
            }
            Some(v @ Value::String(s)) => match json_in_string(field, s)? {
                Some(Value::Object(m)) => {
                    check_argument_count(field, &m)?;
                    Ok(Args::new(m))
                }
                _ => Err(not_an_object(field, v)),
            },
            Some(other) => Err(not_an_object(field, other)),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        if let Ok(mut t) = self.tracking.lock() {
            Tracking::note(&mut t.asked, key);
        }
        let (key, value) = self.map.get_key_value(key)?;
        self.mark_read(key);
        Some(value).filter(|v| !v.is_null())
    }

    fn mark_read(&self, key: &str) {
        if let Ok(mut t) = self.tracking.lock() {
            t.read.insert(key.to_string());
        }
    }

    /// Refuse a call that gives a misspelt parameter name (see
    /// [`misspelling_of`]) before the operation does anything; with
    /// `nested_args` (operations with sub-operations, which read `args.args`
    /// too), in a nested `args` object or its JSON text as well.
    pub fn check_spelling(&self, nested_args: bool, placement: bool) -> Result<()> {
        check_names(&self.map, "", placement)?;
        match self.map.get("args") {
            Some(Value::Object(m)) if nested_args => {
                check_argument_count("args", m)?;
                check_names(m, "args.", placement)
            }
            Some(Value::String(s)) if nested_args => match json_in_string("args", s)? {
                Some(Value::Object(m)) => {
                    check_argument_count("args", &m)?;
                    check_names(&m, "args.", placement)
                }
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// The first name given, flat or in a nested `args` (an object or its
    /// JSON text), for which `test` holds, with its path (`args.x`).
    pub fn name_where(&self, test: impl Fn(&str) -> bool) -> Option<String> {
        if let Some(name) = self.map.keys().find(|k| test(k)) {
            return Some(name.clone());
        }
        let nested = match self.map.get("args")? {
            Value::Object(m) => Cow::Borrowed(m),
            Value::String(s) => match serde_json::from_str::<Value>(s).ok()? {
                Value::Object(m) => Cow::Owned(m),
                _ => return None,
            },
            _ => return None,
        };
        nested.keys().find(|k| test(k)).map(|k| format!("args.{k}"))
    }

    /// A name given that no operation takes and that holds `fragment` once
    /// folded (`sessionUUID` for "session").
    pub fn unknown_like(&self, fragment: &str) -> Option<String> {
        self.unknown_find(|k, _| k.contains(fragment).then_some(()))
            .map(|(k, ())| k)
    }

    /// The first name given that no operation takes for which `test`
    /// (given the folded name and the value) finds something, with it.
    pub fn unknown_find<T>(&self, test: impl Fn(&str, &Value) -> Option<T>) -> Option<(String, T)> {
        self.map
            .iter()
            .filter(|(k, _)| !super::params::is_known(k))
            .find_map(|(k, v)| test(&folded(k), v).map(|t| (k.clone(), t)))
    }

    /// The first argument given that nothing has read (flat or from a
    /// nested `args`), in name order, whose value is a session id (in any
    /// case, spaces around it) other than `using`, with that id: a session
    /// named under a name the operation does not take (`sid`, `target`),
    /// which it would otherwise ignore and act on another session. Called
    /// once an operation has read all its parameters.
    ///
    /// Object parameters read as arguments of their own (`options`) are
    /// looked into too, and such an id is named by its path
    /// (`options.sid`): `deep_analysis {options: {sid}}` would otherwise
    /// analyse the active session.
    pub fn stray_session_id(&self, using: Option<&str>) -> Option<(String, String)> {
        let t = self.tracking.lock().ok()?;
        // Every key of the map was given (`new`, `insert`); one taken out
        // (`remove`) counts as read.
        let stray = |map: &Map<String, Value>, read: &BTreeSet<String>| {
            map.iter().find_map(|(k, v)| {
                let id = SessionId::new(v.as_str()?);
                (crate::tree::is_session_id(&id) && Some(id.as_str()) != using && !read.contains(k))
                    .then(|| (k.clone(), id.into_string()))
            })
        };
        if let Some(found) = stray(&self.map, &t.read) {
            return Some(found);
        }
        t.nested
            .iter()
            .find_map(|(key, child, map)| {
                let child = child.lock().ok()?;
                let (k, id) = stray(map, &child.read)?;
                Some((format!("{key}.{k}"), id))
            })
            .or_else(|| {
                // Inside an object parameter a typed struct took
                // (`keyMoments[0].sid`).
                t.ignored_nested.iter().find_map(|path| {
                    let id = SessionId::new(value_at(&self.map, path)?.as_str()?);
                    (crate::tree::is_session_id(&id) && Some(id.as_str()) != using)
                        .then(|| (path.clone(), id.into_string()))
                })
            })
    }

    /// A handle that can tell, after an operation has consumed these args,
    /// which fields it never read ([`ArgsUsage::unread`]); it shares the
    /// tracking only, not the values.
    pub fn usage(&self) -> ArgsUsage {
        ArgsUsage(self.tracking.clone())
    }

    /// The fields given (including those merged in later, as a nested
    /// `args`) that nothing has read or taken, in name order.
    pub fn unread(&self) -> Vec<String> {
        self.usage().unread()
    }

    /// The arguments as operation `key`'s parameter type (see
    /// [`super::params::parse`]): what the type took counts as read, and
    /// what it ignored is reported as unread.
    pub fn parse<T: serde::de::DeserializeOwned + 'static>(&self, key: &str) -> Result<T> {
        self.parse_leaving(key, &[])
    }

    /// Count `name` as not read after all: a parameter the typed struct took
    /// that this call does not use (`includeMetadata` on a JSON export), so
    /// that the answer names it among the ignored ones.
    pub fn mark_unread(&self, name: &str) {
        if let Ok(mut t) = self.tracking.lock() {
            t.read.remove(name);
        }
    }

    /// Count `names` as read: parameters an operation took from its typed
    /// struct after [`Args::parse_leaving`] left them.
    pub fn mark_all_read(&self, names: &[&str]) {
        for name in names.iter().filter(|n| self.map.contains_key(**n)) {
            self.mark_read(name);
        }
    }

    /// [`Args::parse`], but the parameters `left` (and what is inside them)
    /// count as read only when the operation reads them through these
    /// args: those it uses in some calls only (a thought's session title,
    /// used when the thought starts a session).
    pub fn parse_leaving<T: serde::de::DeserializeOwned + 'static>(&self, key: &str, left: &[&str]) -> Result<T> {
        let (parsed, ignored) = super::params::parse::<T>(key, Value::Object(self.map.clone()))?;
        // Names inside object parameters escape the count of a call's own:
        // each ignored one costs the checks below.
        within_argument_limit("arguments", ignored.len(), "names no parameter takes")?;
        let ignored_here: HashSet<&str> = ignored.iter().map(String::as_str).collect();
        // A misspelt name inside an object parameter (`newWork.Project`) is
        // refused as a flat one is, rather than dropped.
        for path in ignored.iter().filter(|p| p.contains('.')) {
            let (at, name) = path.rsplit_once('.').unwrap_or(("", path));
            if let Some(meant) = misspelling_of(name, false) {
                return Err(Error::invalid_with(
                    path.clone(),
                    format!("{path} is not a parameter; did you mean {at}.{meant}? (nothing was done)"),
                    serde_json::json!({ "didYouMean": format!("{at}.{meant}") }),
                ));
            }
        }
        let under_left = |path: &str| {
            left.iter().any(|l| {
                path.strip_prefix(l)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
            })
        };
        if let Ok(mut t) = self.tracking.lock() {
            for name in self.map.keys() {
                if !ignored_here.contains(name.as_str()) && !under_left(name) {
                    t.read.insert(name.clone());
                }
            }
            t.ignored_nested.extend(
                ignored
                    .into_iter()
                    .filter(|i| !self.map.contains_key(i) && !under_left(i)),
            );
        }
        Ok(parsed)
    }

    /// The sub-operation a call names under one of `keys`, flat or in a
    /// nested `args` (an object or its JSON text), without counting
    /// anything as read or asked.
    pub fn peek_sub_operation(&self, keys: &[&str]) -> Option<String> {
        let named = |map: &Map<String, Value>| {
            keys.iter()
                .find_map(|k| map.get(*k).and_then(Value::as_str).map(str::to_string))
        };
        named(&self.map).or_else(|| match self.map.get("args")? {
            Value::Object(nested) => named(nested),
            Value::String(s) => named(&serde_json::from_str::<Map<String, Value>>(s).ok()?),
            _ => None,
        })
    }

    /// The value given for `key`, without counting it as read.
    pub fn peek(&self, key: &str) -> Option<&Value> {
        self.map.get(key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Take a field out (it counts as read).
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let value = self.map.remove(key);
        if value.is_some() {
            self.mark_read(key);
        }
        value
    }

    pub fn insert(&mut self, key: String, value: Value) {
        if let Ok(mut t) = self.tracking.lock() {
            t.given.insert(key.clone());
        }
        self.map.insert(key, value);
    }

    /// The first of `keys` that is present (a field and its aliases).
    fn pick<'a>(&self, keys: &[&'a str]) -> Result<Option<(&'a str, &Value)>> {
        let mut found: Option<(&'a str, &Value)> = None;
        for k in keys {
            let Some(v) = self.get(k) else { continue };
            match found {
                None => found = Some((k, v)),
                // Two spellings that say different things: which one the
                // caller meant is anyone's guess (`sessionId` beside
                // `session_id` on a delete), so neither is used.
                Some((first, fv)) if !same_meaning(fv, v) => {
                    return Err(Error::invalid_with(
                        first,
                        format!(
                            "{first} and {k} are two names of one parameter, given different values ({} and {}); \
                             give one (nothing was done)",
                            super::clip(&fv.to_string()),
                            super::clip(&v.to_string())
                        ),
                        serde_json::json!({ "conflictsWith": k }),
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(found)
    }

    pub fn str_opt(&self, keys: &[&str]) -> Result<Option<String>> {
        match self.pick(keys)? {
            None => Ok(None),
            Some((k, Value::String(s))) => no_nul(k, s).map(Some),
            Some((k, v)) => Err(Error::invalid(k, format!("{k} must be a string, got {}", type_name(v)))),
        }
    }

    #[cfg(test)]
    pub fn str_req(&self, keys: &[&str]) -> Result<String> {
        match self.str_opt(keys)? {
            Some(s) if !s.trim().is_empty() => Ok(s),
            Some(_) => Err(Error::invalid(keys[0], format!("{} must not be empty", keys[0]))),
            None => Err(Error::invalid(keys[0], format!("{} is required", keys[0]))),
        }
    }

    #[cfg(test)]
    pub fn bool_opt(&self, keys: &[&str]) -> Result<Option<bool>> {
        match self.pick(keys)? {
            None => Ok(None),
            Some((_, Value::Bool(b))) => Ok(Some(*b)),
            Some((k, Value::String(s))) => match s.trim() {
                "true" => Ok(Some(true)),
                "false" => Ok(Some(false)),
                _ => Err(Error::invalid(k, format!("{k} must be true or false, got {s:?}"))),
            },
            Some((k, v)) => Err(Error::invalid(
                k,
                format!("{k} must be true or false, got {}", type_name(v)),
            )),
        }
    }

    /// Split a call to `operation` with a sub-operation: the name comes from
    /// one of [`params::sub_operation_keys`](super::params::sub_operation_keys)
    /// (`subOperation`, `operation`), flat in `args` or in a nested `args`
    /// object; its parameters are `args` itself plus the nested `args`.
    pub fn sub_operation(self, operation: &str) -> Result<(Option<String>, Args)> {
        self.sub_operation_named(super::params::sub_operation_keys(operation))
    }

    /// [`Args::sub_operation`] with the name's spellings given (`knowledge`
    /// also takes the TypeScript Thoughtbox's `action`). A call that says two
    /// different things is refused rather than settled by a precedence the
    /// caller cannot see (`subOperation: "delete"` beside `operation: "get"`
    /// must not delete): two different names are `INVALID_OPERATION`, and one
    /// parameter given flat and nested with different values is
    /// `INVALID_PAYLOAD` naming it. The same value twice is fine.
    pub fn sub_operation_named(mut self, name_keys: &[&str]) -> Result<(Option<String>, Args)> {
        let mut nested = match self.remove("args") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m,
            Some(v @ Value::String(_)) => match v.as_str().map(|s| json_in_string("args", s)).transpose()? {
                Some(Some(Value::Object(m))) => m,
                _ => return Err(not_an_object("args", &v)),
            },
            Some(other) => return Err(not_an_object("args", &other)),
        };
        // Every spelling given, with where it was given.
        let mut names: Vec<(String, String)> = Vec::new();
        for key in name_keys {
            if let Some(name) = self.str_opt(&[key])? {
                names.push((key.to_string(), name));
            }
            self.remove(key);
        }
        for key in name_keys {
            let place = format!("args.{key}");
            match nested.remove(*key) {
                None | Some(Value::Null) => {}
                Some(Value::String(name)) => names.push((place.clone(), no_nul(&place, &name)?)),
                Some(other) => {
                    return Err(Error::invalid(
                        place.clone(),
                        format!("{place} must be a string, got {}", type_name(&other)),
                    ));
                }
            }
        }
        if let Some((first_at, first)) = names.first()
            && let Some((other_at, other)) = names.iter().find(|(_, n)| n != first)
        {
            return Err(Error::InvalidOperation {
                message: format!(
                    "two different sub-operations given: {first_at} {first:?} and {other_at} {other:?}; give one \
                     (nothing was done)"
                ),
                details: Some(serde_json::json!({
                    "subOperations": names
                        .iter()
                        .map(|(at, n)| serde_json::json!({ "field": at, "subOperation": n }))
                        .collect::<Vec<_>>(),
                })),
            });
        }
        // Parameters: flat and nested together; a field given both ways must
        // say the same thing (null counts as absent).
        for (key, value) in nested {
            if value.is_null() {
                // Still a field the caller gave: reported if nothing reads it.
                if !self.map.contains_key(&key) {
                    self.insert(key, value);
                }
                continue;
            }
            match self.map.get(&key) {
                Some(flat) if !flat.is_null() => {
                    if !same_meaning(flat, &value) {
                        return Err(Error::invalid_with(
                            key.clone(),
                            format!(
                                "{key} is given twice with different values, in args and in args.args; give it once"
                            ),
                            serde_json::json!({ "givenIn": ["args", "args.args"] }),
                        ));
                    }
                }
                _ => self.insert(key, value),
            }
        }
        Ok((names.into_iter().next().map(|(_, n)| n), self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(v: Value) -> Args {
        Args::from_value("args", Some(&v)).unwrap()
    }

    /// The placement names are written here by hand: each must stay a
    /// parameter of `thought`, or a misspelling of it would slip through.
    #[test]
    fn placement_names_are_thought_parameters() {
        let schema = super::super::params::schema_of_op("thought").unwrap();
        for name in PLACEMENT_NAMES {
            assert!(schema["properties"].get(*name).is_some(), "{name}");
        }
    }

    #[test]
    fn misspellings_name_the_parameter_meant() {
        for (given, meant) in [
            ("branch_id", Some("branchId")),
            ("SessionID", Some("sessionId")),
            ("session-id", Some("sessionId")),
            ("thougthNumber", Some("thoughtNumber")),
            ("totalThought", Some("totalThoughts")),
            ("nextThoughtsNeeded", Some("nextThoughtNeeded")),
            ("IS_REVISION", Some("isRevision")),
            // Names in the list are themselves, aliases included.
            ("session_id", None),
            ("sessionId", None),
            ("tag", None),
            // Short names need the same letters: `tgs` and `limt` are no guess.
            ("tgs", None),
            ("limt", None),
            ("confidence", None),
            ("_meta", None),
            // Part of a name, five letters or more.
            ("branchFrom", Some("branchFromThought")),
            ("session", Some("sessionId")),
            ("revision", Some("isRevision")),
            ("thoughts", Some("thought")),
            ("sessionIds", Some("sessionId")),
            // Or one of them with more around it.
            ("revisesThoughtNumber", Some("revisesThought")),
            ("currentSessionId", Some("sessionId")),
            // Other names are only reported unused.
            ("metadata", None),
            ("types", None),
            ("created", None),
            ("pattern", None),
        ] {
            assert_eq!(misspelling_of(given, true), meant, "{given}");
        }
        // The placement rule is for `thought` only (`total` on list_sessions
        // is no misspelt totalThoughts).
        for (given, meant) in [
            ("total", None),
            ("derivedFromSessionIds", None),
            ("thought_number", Some("thoughtNumber")),
            ("thougthNumber", Some("thoughtNumber")),
        ] {
            assert_eq!(misspelling_of(given, false), meant, "{given}");
        }
        let e = args(json!({ "thought": "x", "args": { "branch_id": "b" } }))
            .check_spelling(true, false)
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidPayload { field, .. } if field == "args.branch_id"),
            "{e}"
        );
    }

    #[test]
    fn two_names_of_one_parameter_must_agree() {
        let a = args(json!({ "sessionId": "a", "session_id": "a", "id": " a " }));
        assert_eq!(
            a.str_opt(&["sessionId", "session_id", "id"]).unwrap().as_deref(),
            Some("a")
        );
        assert!(a.unread().is_empty());
        let e = args(json!({ "sessionId": "a", "id": "b" }))
            .str_opt(&["sessionId", "session_id", "id"])
            .unwrap_err();
        assert!(
            matches!(&e, Error::InvalidPayload { field, .. } if field == "sessionId"),
            "{e}"
        );
    }

    #[test]
    fn fields_nobody_read_are_reported() {
        let a =
            args(json!({ "subOperation": "get", "flat": 1, "nul": null, "args": { "sessionId": "s", "extra": true } }));
        let kept = a.usage();
        let (name, rest) = a.sub_operation("session").unwrap();
        assert_eq!(name.as_deref(), Some("get"));
        assert_eq!(rest.str_req(&["sessionId"]).unwrap(), "s");
        assert_eq!(rest.get("missing"), None);
        assert_eq!(rest.get("nul"), None);
        // The handle taken before answers for everything done since.
        assert_eq!(kept.unread(), ["extra", "flat"]);
    }

    #[test]
    fn a_typed_parse_reports_what_its_type_ignored() {
        use crate::gateway::params::{ReadThoughts, Thought};
        let a = args(json!({ "thoughtNumber": "2", "colour": "blue", "sessionId": "s" }));
        let p: ReadThoughts = a.parse("read_thoughts").unwrap();
        assert_eq!(p.thought_number, Some(2));
        assert_eq!(a.unread(), ["colour"]);
        // Parameters left to be read later count only once read.
        let a = args(json!({
            "thought": "x", "nextThoughtNeeded": "true", "sessionTitle": "t", "newWork": { "colour": 1 },
        }));
        let p: Thought = a.parse_leaving("thought", &["sessionTitle", "newWork"]).unwrap();
        assert!(p.next_thought_needed);
        assert_eq!(a.unread(), ["newWork", "sessionTitle"]);
        let _ = a.get("sessionTitle");
        assert_eq!(a.unread(), ["newWork"]);
    }

    #[test]
    fn a_misspelt_operation_name_is_told_apart_from_a_different_one() {
        const OPS: &[&str] = &[
            "start_new",
            "get_state",
            "read_thoughts",
            "thought",
            "cipher",
            "session",
        ];
        for (given, meant) in [
            ("startNew", Some("start_new")),
            ("Read-Thoughts", Some("read_thoughts")),
            ("get_stat", Some("get_state")),
            ("sesion", Some("session")),
            ("thought", None),
            ("though", Some("thought")),
            ("sesh", None),
            ("list_roots_of_evil", None),
        ] {
            assert_eq!(name_meant(given, OPS), meant, "{given}");
        }
    }

    #[test]
    fn sub_operations_in_all_four_spellings() {
        for v in [
            json!({ "subOperation": "get", "sessionId": "x" }),
            json!({ "operation": "get", "sessionId": "x" }),
            json!({ "subOperation": "get", "args": { "sessionId": "x" } }),
            json!({ "operation": "get", "args": { "sessionId": "x" } }),
        ] {
            let (name, rest) = args(v).sub_operation("session").unwrap();
            assert_eq!(name.as_deref(), Some("get"));
            assert_eq!(rest.str_req(&["sessionId"]).unwrap(), "x");
        }
        assert!(
            args(json!({ "operation": "get", "args": 3 }))
                .sub_operation("session")
                .is_err()
        );
    }

    #[test]
    fn two_different_sub_operation_names_are_refused() {
        for v in [
            json!({ "subOperation": "delete", "operation": "get" }),
            json!({ "subOperation": "delete", "args": { "operation": "get" } }),
            json!({ "operation": "delete", "args": { "subOperation": "get" } }),
            json!({ "args": { "subOperation": "delete", "operation": "get" } }),
        ] {
            let e = args(v.clone()).sub_operation("session").unwrap_err();
            assert_eq!(e.code(), "INVALID_OPERATION", "{v}");
            let message = e.to_string();
            assert!(
                message.contains("\"delete\"") && message.contains("\"get\""),
                "{message}"
            );
            assert_eq!(e.details().unwrap()["subOperations"].as_array().unwrap().len(), 2);
        }
        // The same name twice, or only nested, is one name.
        for v in [
            json!({ "subOperation": "get", "operation": "get" }),
            json!({ "subOperation": "get", "args": { "subOperation": "get" } }),
            json!({ "args": { "operation": "get" } }),
        ] {
            let (name, rest) = args(v).sub_operation("session").unwrap();
            assert_eq!(name.as_deref(), Some("get"));
            assert!(rest.unread().is_empty(), "{:?}", rest.unread());
        }
        let e = args(json!({ "args": { "subOperation": 3 } }))
            .sub_operation("session")
            .unwrap_err();
        assert_eq!(e.details().unwrap()["field"], "args.subOperation");
    }

    #[test]
    fn a_parameter_given_flat_and_nested_must_agree() {
        let e = args(json!({ "subOperation": "get", "sessionId": "a", "args": { "sessionId": "b" } }))
            .sub_operation("session")
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_PAYLOAD");
        assert_eq!(e.details().unwrap()["field"], "sessionId");
        // The same value (as the lenient readers take it) twice is fine, and
        // a null on one side counts as absent.
        let (_, rest) = args(json!({
            "subOperation": "get", "sessionId": "a", "limit": 7, "flag": "true", "gone": "kept",
            "args": { "sessionId": "a", "limit": "7", "flag": true, "gone": null, "nested": null },
        }))
        .sub_operation("session")
        .unwrap();
        assert_eq!(rest.str_req(&["sessionId"]).unwrap(), "a");
        assert_eq!(rest.get("limit"), Some(&json!(7)));
        assert_eq!(rest.bool_opt(&["flag"]).unwrap(), Some(true));
        assert_eq!(rest.str_opt(&["gone"]).unwrap().as_deref(), Some("kept"));
        assert_eq!(rest.unread(), ["nested"]);
    }

    #[test]
    fn non_object_args_are_rejected() {
        for v in [json!(3), json!("x"), json!([1])] {
            assert_eq!(
                Args::from_value("args", Some(&v)).unwrap_err().code(),
                "INVALID_PAYLOAD"
            );
        }
        // JSON text of an object that does not read says why, a number too
        // large for any reader included.
        for text in [r#"{"x": 1e999}"#, r#"{"x": }"#] {
            let e = Args::from_value("args", Some(&json!(text))).unwrap_err();
            assert!(e.to_string().contains("does not parse"), "{text}: {e}");
        }
    }
}
