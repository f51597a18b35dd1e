//! The thread registry (docs/threads.md): every session seen as a thread, with a
//! status, a parent, references and dependencies, and the log of the
//! operations that changed them. This module holds the rules (statuses and
//! their transitions, the names of commands and operators, the registry
//! JSON and its validation rules); the store holds the rows.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{Error, Result};

/// The registry version this server writes (semver; import accepts its major).
pub const REGISTRY_VERSION: &str = "1.0.0";

/// The longest thread id an imported registry may use (session ids are
/// 36-character UUIDs; others come from other tools).
pub const MAX_THREAD_ID_CHARS: usize = 128;

/// The longest asset path of a reference.
pub const MAX_ASSET_PATH_CHARS: usize = 1024;

/// A thread's status: `active -> frozen -> archived`, `active -> archived`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ThreadStatus {
    Active,
    Frozen,
    Archived,
}

impl ThreadStatus {
    pub const NAMES: &'static [&'static str] = &["active", "frozen", "archived"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "active" => Some(ThreadStatus::Active),
            "frozen" => Some(ThreadStatus::Frozen),
            "archived" => Some(ThreadStatus::Archived),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Active => "active",
            ThreadStatus::Frozen => "frozen",
            ThreadStatus::Archived => "archived",
        }
    }

    /// The statuses this one may move to.
    pub fn allowed_next(self) -> &'static [&'static str] {
        match self {
            ThreadStatus::Active => &["frozen", "archived"],
            ThreadStatus::Frozen => &["archived"],
            ThreadStatus::Archived => &[],
        }
    }

    /// Whether thoughts, updates and deletes are accepted.
    pub fn writable(self) -> bool {
        self == ThreadStatus::Active
    }

    /// Refuse a move of thread `id` from this status to `to`, naming the
    /// current status and the allowed ones.
    pub fn check_transition(self, id: &str, to: ThreadStatus) -> Result<()> {
        let allowed = self.allowed_next();
        if allowed.contains(&to.as_str()) {
            return Ok(());
        }
        let said = if allowed.is_empty() {
            "none: archived is final".to_string()
        } else {
            allowed.join(", ")
        };
        Err(Error::InvalidOperation {
            message: format!(
                "thread {id} is {} and cannot become {}; allowed from {}: {said} (nothing was changed)",
                self.as_str(),
                to.as_str(),
                self.as_str()
            ),
            details: Some(json!({
                "threadId": id,
                "status": self.as_str(),
                "requestedStatus": to.as_str(),
                "allowedStatuses": allowed,
            })),
        })
    }

    /// Refuse a change (`what`: a thought, an update, a delete) to thread
    /// `id` unless it is active.
    pub fn check_writable(self, id: &str, what: &str) -> Result<()> {
        if self.writable() {
            return Ok(());
        }
        Err(Error::InvalidOperation {
            message: format!(
                "session {id} is {} thread: it accepts no {what} (reads, exports, search and references to it \
                 still work; spawn a new thread to go on from it); nothing was written",
                match self {
                    ThreadStatus::Archived => "an archived",
                    _ => "a frozen",
                }
            ),
            details: Some(json!({ "threadId": id, "status": self.as_str() })),
        })
    }
}

/// Who made a registry change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Operator {
    User,
    System,
    Agent,
}

impl Operator {
    pub const NAMES: &'static [&'static str] = &["user", "system", "agent"];

    pub fn as_str(self) -> &'static str {
        match self {
            Operator::User => "user",
            Operator::System => "system",
            Operator::Agent => "agent",
        }
    }
}

/// The commands of the operations log. The log stores them as text (seed
/// 004 keeps the field open); what this server writes is one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Spawn,
    Reference,
    Depend,
    Freeze,
    Archive,
    Update,
}

impl Command {
    pub const ALL: [Command; 6] = [
        Command::Spawn,
        Command::Reference,
        Command::Depend,
        Command::Freeze,
        Command::Archive,
        Command::Update,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Command::Spawn => "spawn",
            Command::Reference => "reference",
            Command::Depend => "depend",
            Command::Freeze => "freeze",
            Command::Archive => "archive",
            Command::Update => "update",
        }
    }

    pub fn parse(s: &str) -> Option<Command> {
        Command::ALL.into_iter().find(|c| c.as_str() == s)
    }
}

/// One thread, as the registry JSON writes it (`threads.<id>`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Thread {
    pub id: String,
    pub title: String,
    pub objective: String,
    pub created_at: String,
    pub status: ThreadStatus,
    #[serde(default)]
    pub tags: Vec<String>,
    pub parent_id: Option<String>,
    pub storage_path: String,
}

/// One row of the operations log (`operations[]` of the registry JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Operation {
    pub id: String,
    pub timestamp: String,
    pub command: String,
    pub operator: Operator,
    pub params: Value,
}

/// A thread's relations (`relations.<id>` of the registry JSON), each list
/// sorted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Relations {
    pub children: Vec<String>,
    pub references_to: Vec<String>,
    pub referenced_by: Vec<String>,
    pub depends_on: Vec<String>,
}

/// `metadata` of the registry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    pub last_updated: String,
    pub thread_count: u64,
}

/// The registry JSON (docs/threads.md, "The registry JSON").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Registry {
    pub version: String,
    pub metadata: Metadata,
    pub threads: BTreeMap<String, Thread>,
    pub operations: Vec<Operation>,
    pub relations: BTreeMap<String, Relations>,
}

/// One broken rule of an imported registry: where, and what.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Violation {
    pub path: String,
    pub message: String,
}

/// `[A-Za-z0-9_-]`, 1 to [`MAX_THREAD_ID_CHARS`] characters.
pub fn is_thread_id(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_THREAD_ID_CHARS
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Semantic Versioning 2.0.0: `MAJOR.MINOR.PATCH`, numbers without leading
/// zeros, optional `-prerelease` and `+build`.
pub fn is_semver(s: &str) -> bool {
    let (rest, build) = match s.split_once('+') {
        Some((r, b)) => (r, Some(b)),
        None => (s, None),
    };
    let (core, pre) = match rest.split_once('-') {
        Some((c, p)) => (c, Some(p)),
        None => (rest, None),
    };
    let number = |n: &str| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
    let ident = |i: &str| !i.is_empty() && i.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| number(p))
        && pre.is_none_or(|p| {
            p.split('.')
                .all(|i| ident(i) && (!i.bytes().all(|b| b.is_ascii_digit()) || number(i)))
        })
        && build.is_none_or(|b| b.split('.').all(ident))
}

/// An ISO 8601 date and time with its offset (the RFC 3339 profile,
/// `2026-12-07T07:08:38.023Z`, which is what the ledger writes).
pub fn is_iso8601(s: &str) -> bool {
    chrono::DateTime::parse_from_rfc3339(s).is_ok()
}

/// The major version of a semver string.
fn major(version: &str) -> Option<&str> {
    version.split('.').next()
}

/// Check an asset path of a reference: relative, no `..`, no NUL, not too long.
pub fn check_asset_path(path: &str) -> Result<()> {
    let bad = |why: &str| {
        Err(Error::invalid(
            "assetPath",
            format!("assetPath {why} (nothing was recorded)"),
        ))
    };
    if path.trim().is_empty() {
        return bad("is empty: leave it out to reference the whole thread");
    }
    if path.chars().count() > MAX_ASSET_PATH_CHARS {
        return bad(&format!("is longer than {MAX_ASSET_PATH_CHARS} characters"));
    }
    if path.starts_with('/') || path.starts_with('\\') || path.split(['/', '\\']).any(|s| s == "..") {
        return bad("must be a node id, a notebook id or a relative path in the export layout, without '..'");
    }
    if path.chars().any(char::is_control) {
        return bad("must not contain control characters");
    }
    Ok(())
}

/// Every validation rule of the registry format (docs/threads.md lists them)
/// and those its own shape implies (relations naming threads, no dependency
/// cycle) that `registry` breaks, each with its path. `duplicate` is a key
/// the JSON text gives twice (`threads.x`), which a parsed value no longer
/// shows.
pub fn validate(registry: &Value, duplicate: Option<&str>) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut bad = |path: String, message: String| out.push(Violation { path, message });
    if let Some(key) = duplicate {
        let key = key.trim_start_matches('.');
        let message = if key.starts_with("threads.") {
            "thread ids must be unique within threads: this id is given twice".to_string()
        } else {
            "this key is given twice".to_string()
        };
        bad(key.to_string(), message);
    }
    let Some(root) = registry.as_object() else {
        bad(String::new(), "the registry must be a JSON object".into());
        return out;
    };
    // Version (semver, a major this server reads).
    match root.get("version") {
        Some(Value::String(v)) if !is_semver(v) => bad(
            "version".into(),
            format!("{v:?} is not a semver version (MAJOR.MINOR.PATCH)"),
        ),
        Some(Value::String(v)) if major(v) != major(REGISTRY_VERSION) => bad(
            "version".into(),
            format!("version {v} has another major version than {REGISTRY_VERSION}: it needs a migration first"),
        ),
        Some(Value::String(_)) => {}
        _ => bad("version".into(), "version is required: a semver string".into()),
    }
    let threads = root.get("threads").and_then(Value::as_object);
    if threads.is_none() {
        bad(
            "threads".into(),
            "threads is required: an object keyed by thread id".into(),
        );
    }
    let empty = serde_json::Map::new();
    let threads = threads.unwrap_or(&empty);
    // Metadata.
    match root.get("metadata").and_then(Value::as_object) {
        None => bad(
            "metadata".into(),
            "metadata is required: { last_updated, thread_count }".into(),
        ),
        Some(m) => {
            check_time(&mut bad, "metadata.last_updated", m.get("last_updated"));
            match m.get("thread_count").and_then(Value::as_u64) {
                Some(n) if n == threads.len() as u64 => {}
                Some(n) => bad(
                    "metadata.thread_count".into(),
                    format!("thread_count is {n}, but threads holds {}", threads.len()),
                ),
                None => bad(
                    "metadata.thread_count".into(),
                    "thread_count is required: a whole number".into(),
                ),
            }
        }
    }
    // Threads.
    let mut parents: HashMap<&str, &str> = HashMap::new();
    for (key, t) in threads {
        let at = format!("threads.{key}");
        if !is_thread_id(key) {
            bad(
                at.clone(),
                format!("thread id {key:?} must be 1-{MAX_THREAD_ID_CHARS} letters, digits, '-' or '_'"),
            );
        }
        let Some(t) = t.as_object() else {
            bad(at, "a thread must be an object".into());
            continue;
        };
        match t.get("id") {
            Some(Value::String(id)) if id == key => {}
            Some(Value::String(id)) => bad(format!("{at}.id"), format!("id {id:?} differs from its key {key:?}")),
            _ => bad(format!("{at}.id"), "id is required: the thread's key".into()),
        }
        for field in ["title", "objective", "storage_path"] {
            match t.get(field) {
                Some(Value::String(s)) if field != "title" || !crate::domain::is_blank(s) => {
                    if field == "title" && s.trim().chars().count() > crate::domain::MAX_TITLE_CHARS {
                        bad(
                            format!("{at}.title"),
                            format!("a title is at most {} characters", crate::domain::MAX_TITLE_CHARS),
                        );
                    }
                }
                Some(Value::String(_)) => bad(format!("{at}.title"), "title must not be empty".into()),
                _ => bad(format!("{at}.{field}"), format!("{field} is required: a string")),
            }
        }
        check_time(&mut bad, &format!("{at}.created_at"), t.get("created_at"));
        match t.get("status") {
            Some(Value::String(s)) if ThreadStatus::parse(s).is_some() => {}
            other => bad(
                format!("{at}.status"),
                format!(
                    "status must be one of {}, got {}",
                    ThreadStatus::NAMES.join(", "),
                    other.map_or("nothing".into(), Value::to_string)
                ),
            ),
        }
        match t.get("tags") {
            None => {}
            Some(Value::Array(tags)) if tags.len() > crate::domain::MAX_TAGS => bad(
                format!("{at}.tags"),
                format!("a thread has at most {} tags", crate::domain::MAX_TAGS),
            ),
            Some(Value::Array(tags)) if tags.iter().all(|t| t.as_str().is_some_and(|s| !s.trim().is_empty())) => {}
            Some(_) => bad(format!("{at}.tags"), "tags must be a list of non-empty strings".into()),
        }
        match t.get("parent_id") {
            Some(Value::Null) => {}
            Some(Value::String(p)) if p == key => {
                bad(format!("{at}.parent_id"), "a thread cannot be its own parent".into())
            }
            Some(Value::String(p)) if threads.contains_key(p) => {
                parents.insert(key.as_str(), p.as_str());
            }
            Some(Value::String(p)) => bad(format!("{at}.parent_id"), format!("parent {p:?} is not in threads")),
            _ => bad(
                format!("{at}.parent_id"),
                "parent_id is required: a thread id, or null for a root thread".into(),
            ),
        }
    }
    for start in parents.keys() {
        let mut seen = BTreeSet::new();
        let mut at = *start;
        while let Some(p) = parents.get(at) {
            if !seen.insert(at) {
                bad(
                    format!("threads.{start}.parent_id"),
                    "the parents form a cycle: a thread cannot descend from itself".into(),
                );
                break;
            }
            at = p;
        }
    }
    // Operations.
    match root.get("operations").and_then(Value::as_array) {
        None => bad("operations".into(), "operations is required: a list".into()),
        Some(ops) => {
            let mut ids = BTreeSet::new();
            for (i, op) in ops.iter().enumerate() {
                let at = format!("operations[{i}]");
                let Some(op) = op.as_object() else {
                    bad(at, "an operation must be an object".into());
                    continue;
                };
                match op.get("id") {
                    Some(Value::String(id)) if !id.trim().is_empty() => {
                        if !ids.insert(id.as_str()) {
                            bad(format!("{at}.id"), format!("operation id {id:?} is given twice"));
                        }
                    }
                    _ => bad(format!("{at}.id"), "id is required: a non-empty string".into()),
                }
                check_time(&mut bad, &format!("{at}.timestamp"), op.get("timestamp"));
                match op.get("command") {
                    Some(Value::String(c)) if Command::parse(c).is_some() => {}
                    other => bad(
                        format!("{at}.command"),
                        format!(
                            "command must be one of {}, got {}",
                            Command::ALL.map(Command::as_str).join(", "),
                            other.map_or("nothing".into(), Value::to_string)
                        ),
                    ),
                }
                match op.get("operator") {
                    Some(Value::String(o)) if Operator::NAMES.contains(&o.as_str()) => {}
                    other => bad(
                        format!("{at}.operator"),
                        format!(
                            "operator must be one of {}, got {}",
                            Operator::NAMES.join(", "),
                            other.map_or("nothing".into(), Value::to_string)
                        ),
                    ),
                }
                if !op.get("params").is_some_and(Value::is_object) {
                    bad(format!("{at}.params"), "params is required: an object".into());
                }
            }
        }
    }
    // Relations.
    let Some(relations) = root.get("relations").and_then(Value::as_object) else {
        bad(
            "relations".into(),
            "relations is required: an object keyed by thread id".into(),
        );
        return out;
    };
    let mut lists: HashMap<(&str, &str), BTreeSet<&str>> = HashMap::new();
    for (key, r) in relations {
        let at = format!("relations.{key}");
        if !threads.contains_key(key) {
            bad(at.clone(), format!("{key:?} is not in threads"));
        }
        let Some(r) = r.as_object() else {
            bad(at, "a relations entry must be an object".into());
            continue;
        };
        for field in ["children", "references_to", "referenced_by", "depends_on"] {
            let Some(items) = r.get(field).and_then(Value::as_array) else {
                bad(
                    format!("{at}.{field}"),
                    format!("{field} is required: a list of thread ids"),
                );
                continue;
            };
            let set = lists.entry((key.as_str(), field)).or_default();
            for (i, item) in items.iter().enumerate() {
                let path = format!("{at}.{field}[{i}]");
                match item.as_str() {
                    Some(id) if id == key => bad(path, format!("a thread cannot name itself in {field}")),
                    Some(id) if threads.contains_key(id) => {
                        set.insert(id);
                    }
                    Some(id) => bad(path, format!("{id:?} is not in threads")),
                    None => bad(path, "a thread id must be a string".into()),
                }
            }
        }
    }
    let listed = |a: &str, field: &str, b: &str| lists.get(&(a, field)).is_some_and(|s| s.contains(b));
    let mut keys: Vec<(&str, &str)> = lists.keys().copied().collect();
    keys.sort_unstable();
    for (a, field) in keys {
        for b in &lists[&(a, field)] {
            let b = *b;
            match field {
                "children" if parents.get(b) != Some(&a) => bad(
                    format!("relations.{a}.children"),
                    format!("lists {b} as a child, but {b}'s parent_id is not {a}"),
                ),
                "references_to" if !listed(b, "referenced_by", a) => bad(
                    format!("relations.{b}.referenced_by"),
                    format!("{a} lists {b} in references_to, but {b} does not list {a} in referenced_by"),
                ),
                "referenced_by" if !listed(b, "references_to", a) => bad(
                    format!("relations.{b}.references_to"),
                    format!("{a} lists {b} in referenced_by, but {b} does not list {a} in references_to"),
                ),
                _ => {}
            }
        }
    }
    let mut children: Vec<(&str, &str)> = parents.iter().map(|(c, p)| (*c, *p)).collect();
    children.sort_unstable();
    for (child, parent) in children {
        if !listed(parent, "children", child) {
            bad(
                format!("relations.{parent}.children"),
                format!("{child} has {parent} as parent_id, but {parent} does not list it in children"),
            );
        }
    }
    if let Some(at) = dependency_cycle(&lists) {
        bad(
            format!("relations.{at}.depends_on"),
            "depends_on forms a cycle: a thread cannot depend on itself through others".into(),
        );
    }
    out
}

/// A thread on a cycle of `depends_on`, if there is one.
fn dependency_cycle<'a>(lists: &HashMap<(&'a str, &'a str), BTreeSet<&'a str>>) -> Option<&'a str> {
    let edges: BTreeMap<&str, &BTreeSet<&str>> = lists
        .iter()
        .filter(|((_, f), _)| *f == "depends_on")
        .map(|((a, _), s)| (*a, s))
        .collect();
    // 0 unseen, 1 on the current path, 2 done.
    let mut state: HashMap<&str, u8> = HashMap::new();
    for start in edges.keys() {
        if state.get(start).copied().unwrap_or(0) != 0 {
            continue;
        }
        let mut stack: Vec<(&str, Vec<&str>)> = vec![(start, edges[start].iter().copied().collect())];
        state.insert(start, 1);
        while let Some((node, rest)) = stack.last_mut() {
            match rest.pop() {
                Some(next) => match state.get(next).copied().unwrap_or(0) {
                    1 => return Some(next),
                    0 => {
                        state.insert(next, 1);
                        let more = edges.get(next).map(|s| s.iter().copied().collect()).unwrap_or_default();
                        stack.push((next, more));
                    }
                    _ => {}
                },
                None => {
                    state.insert(node, 2);
                    stack.pop();
                }
            }
        }
    }
    None
}

/// Read registry JSON text: the registry when every rule holds, else every
/// violation.
pub fn parse_registry(text: &str) -> std::result::Result<Registry, Vec<Violation>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value: Value = serde_json::from_str(text).map_err(|e| {
        vec![Violation {
            path: String::new(),
            message: format!("not JSON: {e}"),
        }]
    })?;
    let duplicate = crate::json_text::first_duplicate_key(text);
    let violations = validate(&value, duplicate.as_deref());
    if !violations.is_empty() {
        return Err(violations);
    }
    serde_json::from_value(value).map_err(|e| {
        vec![Violation {
            path: String::new(),
            message: format!("the registry JSON does not have the registry's shape (version, metadata, threads, operations, relations): {e}"),
        }]
    })
}

/// The error an import answers for `violations`: INVALID_PAYLOAD on the
/// first one's path, with every one in `details.violations`.
pub fn violations_error(violations: &[Violation]) -> Error {
    let first = violations.first().map(|v| v.path.clone()).unwrap_or_default();
    Error::invalid_with(
        if first.is_empty() {
            "registry".to_string()
        } else {
            format!("registry.{first}")
        },
        format!("the registry {}", broken_rules(violations, "; nothing was imported")),
        json!({ "violations": violations }),
    )
}

/// "breaks N rule(s) of the registry format (docs/threads.md){then}: " and
/// the first five violations.
pub fn broken_rules(violations: &[Violation], then: &str) -> String {
    let shown: Vec<String> = violations
        .iter()
        .take(5)
        .map(|v| {
            if v.path.is_empty() {
                v.message.clone()
            } else {
                format!("{}: {}", v.path, v.message)
            }
        })
        .collect();
    format!(
        "breaks {} rule(s) of the registry format (docs/threads.md){then}: {}{}",
        violations.len(),
        shown.join("; "),
        if violations.len() > shown.len() { "; ..." } else { "" }
    )
}

/// Record a time check: `value` must be an ISO 8601 string.
fn check_time(bad: &mut impl FnMut(String, String), path: &str, value: Option<&Value>) {
    match value {
        Some(Value::String(s)) if is_iso8601(s) => {}
        Some(Value::String(s)) => bad(
            path.to_string(),
            format!("{s:?} is not an ISO 8601 date and time (2026-02-08T16:00:00Z)"),
        ),
        _ => bad(path.to_string(), "an ISO 8601 date and time is required".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each enum's names are written in its serde attribute and in its
    /// tables: they must say the same, each name once.
    #[test]
    fn the_name_tables_agree_with_serde() {
        for name in ThreadStatus::NAMES {
            let status: ThreadStatus = serde_json::from_value(json!(name)).unwrap();
            assert_eq!((status.as_str(), ThreadStatus::parse(name)), (*name, Some(status)));
        }
        for name in Operator::NAMES {
            let operator: Operator = serde_json::from_value(json!(name)).unwrap();
            assert_eq!(operator.as_str(), *name);
        }
        for command in Command::ALL {
            assert_eq!(Command::parse(command.as_str()), Some(command));
        }
        let mut names = Command::ALL.map(Command::as_str).to_vec();
        names.dedup();
        assert_eq!(names.len(), Command::ALL.len());
    }

    fn registry() -> Value {
        json!({
            "version": "1.0.0",
            "metadata": { "last_updated": "2026-02-08T16:00:00Z", "thread_count": 3 },
            "threads": {
                "a": { "id": "a", "title": "A", "objective": "root", "created_at": "2026-02-08T10:00:00Z",
                       "status": "active", "tags": [], "parent_id": null, "storage_path": "projects/_default/sessions/a" },
                "b": { "id": "b", "title": "B", "objective": "child", "created_at": "2026-02-08T11:00:00.123Z",
                       "status": "frozen", "parent_id": "a", "storage_path": "projects/_default/sessions/b" },
                "c": { "id": "c", "title": "C", "objective": "other", "created_at": "2026-02-08T12:00:00+01:00",
                       "status": "archived", "parent_id": null, "storage_path": "projects/_default/sessions/c" }
            },
            "operations": [
                { "id": "op1", "timestamp": "2026-02-08T11:00:00Z", "command": "spawn", "operator": "agent",
                  "params": { "parent_id": "a", "child_id": "b", "objective": "child" } }
            ],
            "relations": {
                "a": { "children": ["b"], "references_to": ["c"], "referenced_by": [], "depends_on": ["c"] },
                "b": { "children": [], "references_to": [], "referenced_by": [], "depends_on": [] },
                "c": { "children": [], "references_to": [], "referenced_by": ["a"], "depends_on": [] }
            }
        })
    }

    fn paths(v: &Value) -> Vec<String> {
        validate(v, None).into_iter().map(|v| v.path).collect()
    }

    #[test]
    fn a_good_registry_breaks_no_rule_and_parses() {
        assert_eq!(validate(&registry(), None), vec![]);
        let r = parse_registry(&registry().to_string()).unwrap();
        assert_eq!(r.threads["b"].status, ThreadStatus::Frozen);
        assert_eq!(r.threads["b"].tags, Vec::<String>::new());
    }

    #[test]
    fn each_rule_broken_once_is_named_by_its_path() {
        type Break = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(&str, Break, &str)> = vec![
            ("version", Box::new(|v| v["version"] = json!("1.0")), "version"),
            ("major", Box::new(|v| v["version"] = json!("2.0.0")), "version"),
            (
                "timestamp",
                Box::new(|v| v["metadata"]["last_updated"] = json!("yesterday")),
                "metadata.last_updated",
            ),
            (
                "created_at",
                Box::new(|v| v["threads"]["a"]["created_at"] = json!("2026-13-01")),
                "threads.a.created_at",
            ),
            (
                "op time",
                Box::new(|v| v["operations"][0]["timestamp"] = json!(5)),
                "operations[0].timestamp",
            ),
            ("id format", Box::new(rename_a_to("a b")), "threads.a b"),
            (
                "id field",
                Box::new(|v| v["threads"]["c"]["id"] = json!("x")),
                "threads.c.id",
            ),
            (
                "status",
                Box::new(|v| v["threads"]["a"]["status"] = json!("paused")),
                "threads.a.status",
            ),
            (
                "operator",
                Box::new(|v| v["operations"][0]["operator"] = json!("robot")),
                "operations[0].operator",
            ),
            (
                "parent-child",
                Box::new(|v| v["threads"]["b"]["parent_id"] = json!("c")),
                "relations.a.children",
            ),
            (
                "reference",
                Box::new(|v| v["relations"]["c"]["referenced_by"] = json!([])),
                "relations.c.referenced_by",
            ),
            (
                "count",
                Box::new(|v| v["metadata"]["thread_count"] = json!(2)),
                "metadata.thread_count",
            ),
            (
                "cycle",
                Box::new(|v| v["relations"]["c"]["depends_on"] = json!(["a"])),
                "relations.a.depends_on",
            ),
        ];
        for (name, break_it, path) in cases {
            let mut v = registry();
            break_it(&mut v);
            let found = paths(&v);
            assert!(found.iter().any(|p| p == path), "{name}: {found:?}");
        }
        let v = validate(&registry(), Some(".threads.a"));
        assert_eq!(v[0].path, "threads.a");
        assert!(v[0].message.contains("unique"), "{v:?}");
    }

    fn rename_a_to(new: &'static str) -> impl Fn(&mut Value) {
        move |v| {
            let t = v["threads"].as_object_mut().unwrap();
            let mut a = t.remove("c").unwrap();
            a["id"] = json!(new);
            t.insert(new.to_string(), a);
            let r = v["relations"].as_object_mut().unwrap();
            let rc = r.remove("c").unwrap();
            r.insert(new.to_string(), rc);
            v["relations"]["a"]["references_to"] = json!([new]);
            v["relations"]["a"]["depends_on"] = json!([new]);
        }
    }

    #[test]
    fn semver_and_times() {
        for good in ["1.0.0", "1.2.3-rc.1", "1.0.0+build.5", "10.20.30"] {
            assert!(is_semver(good), "{good}");
        }
        for bad in ["1.0", "01.0.0", "1.0.0-", "v1.0.0", "1.0.0-01", ""] {
            assert!(!is_semver(bad), "{bad}");
        }
        assert!(is_iso8601("2026-02-08T16:00:00Z") && is_iso8601("2026-02-08T16:00:00.123+02:00"));
        assert!(!is_iso8601("2026-02-08") && !is_iso8601("now"));
    }

    #[test]
    fn transitions_name_current_and_allowed() {
        use ThreadStatus::*;
        assert!(Active.check_transition("t", Frozen).is_ok());
        assert!(Active.check_transition("t", Archived).is_ok());
        assert!(Frozen.check_transition("t", Archived).is_ok());
        let e = Frozen.check_transition("t", Frozen).unwrap_err();
        assert!(
            e.to_string().contains("frozen") && e.to_string().contains("archived"),
            "{e}"
        );
        let e = Archived.check_transition("t", Frozen).unwrap_err();
        assert_eq!(e.details().unwrap()["allowedStatuses"], json!([]));
        assert!(Frozen.check_writable("t", "thought").is_err() && Active.check_writable("t", "thought").is_ok());
    }

    #[test]
    fn asset_paths() {
        assert!(check_asset_path("projects/p/sessions/2026-11/x/001.json").is_ok());
        assert!(check_asset_path("abc:3").is_ok());
        for bad in ["", "/etc/passwd", "a/../b", "a\nb"] {
            assert!(check_asset_path(bad).is_err(), "{bad:?}");
        }
    }
}
