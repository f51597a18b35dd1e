//! The parameters of every gateway operation and sub-operation, as types:
//! their names (the specification's names, with the TypeScript Thoughtbox's
//! and our older spellings as serde aliases), types, ranges and defaults. The
//! tool's `inputSchema` is generated from them, and so are the names the
//! misspelling check knows; debug builds check that an operation reads no
//! name its type lacks, so the two cannot drift apart.
//!
//! The schema carries no `oneOf`, `anyOf` or `allOf` anywhere, no `$ref`
//! and no type lists: see docs/decisions/0001-gateway-schema.md for the
//! clients that refuse them. Each operation's parameters are an object
//! schema under `$defs`, keyed by the operation (`thought`) or by the
//! operation and its sub-operation (`session.list`).

mod init;
mod knowledge;
mod limit;
mod notebook;
mod parse;
mod probe;
mod session;
mod thought;
mod thread;

use std::cell::Cell;
use std::collections::BTreeSet;
use std::sync::OnceLock;

use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde::de::{DeserializeOwned, Visitor};
use serde_json::{Map, Value, json};

pub use init::*;
pub use knowledge::*;
pub use limit::{Limit, MAX_LIMIT};
pub use notebook::*;
pub use parse::{normalise, parse, schema_of_op, thought_number};
pub use session::*;
pub use thought::*;
pub use thread::*;

/// One operation's (or sub-operation's) parameter type.
pub struct Params {
    pub operation: &'static str,
    pub sub_operation: Option<&'static str>,
    /// What the sub-operation does (top-level operations say it in the tool
    /// description).
    pub what: &'static str,
    schema: fn() -> Value,
    names: fn() -> &'static [&'static str],
    /// The aliases the parser finds for it, given its schema.
    aliases: fn(&Value) -> parse::Aliases,
}

impl Params {
    /// Its key in the schema's `$defs`: `thought`, `session.list`.
    pub fn key(&self) -> String {
        match self.sub_operation {
            Some(sub) => format!("{}.{sub}", self.operation),
            None => self.operation.to_string(),
        }
    }

    /// Every name it takes, aliases included.
    pub fn names(&self) -> &'static [&'static str] {
        (self.names)()
    }

    /// The names its session handle goes by: `sessionId` and the aliases
    /// its type reads as `sessionId` (`session_id`, `id`), so that the
    /// stage gate reads the handle the operation will act on.
    pub fn handle_names(&self) -> Vec<&'static str> {
        let aliases = schema_of_op(&self.key()).map(|schema| (self.aliases)(schema));
        let mut names = vec!["sessionId"];
        names.extend(
            aliases
                .iter()
                .flat_map(|a| a.iter())
                .filter(|(_, name)| name == "sessionId")
                .map(|(alias, _)| *alias),
        );
        if !names.contains(&"session_id") {
            names.push("session_id");
        }
        names
    }
}

macro_rules! params {
    ($op:literal, $ty:ty) => {
        Params {
            operation: $op,
            sub_operation: None,
            what: "",
            schema: schema_of::<$ty>,
            names: field_names::<$ty>,
            aliases: parse::aliases_of::<$ty>,
        }
    };
    ($op:literal . $sub:literal, $ty:ty, $what:literal) => {
        Params {
            operation: $op,
            sub_operation: Some($sub),
            what: $what,
            schema: schema_of::<$ty>,
            names: field_names::<$ty>,
            aliases: parse::aliases_of::<$ty>,
        }
    };
}

/// Every operation and sub-operation, in the order of the operations table.
pub const PARAMS: &[Params] = &[
    params!("get_state", GetState),
    params!("start_new", StartNew),
    params!("load_context", LoadContext),
    params!("list_sessions", ListSessions),
    params!("navigate", Navigate),
    params!("list_roots", ListRoots),
    params!("bind_root", BindRoot),
    params!("cipher", Cipher),
    params!("session"."list", ListSessions, "List sessions, as list_sessions."),
    params!("session"."get", SessionGet, "A session with all its thoughts, branches included."),
    params!(
        "session"."search",
        SessionSearch,
        "Search thought text (and session titles, descriptions, tags) in every session, best first."
    ),
    params!("session"."resume", LoadContext, "Resume a session, as load_context."),
    params!("session"."export", SessionExport, "Export a session as text, or as files into a directory."),
    params!("session"."delete", SessionDelete, "Delete a session and all its thoughts."),
    params!("session"."analyze", SessionAnalyze, "Structure, quality and completion metrics of a session."),
    params!(
        "session"."extract_learnings",
        ExtractLearnings,
        "Learnings (patterns, anti-patterns, a signal) from a session's key moments."
    ),
    params!(
        "session"."discovery",
        Discovery,
        "List, hide or show the optional operations on this connection."
    ),
    params!("deep_analysis", DeepAnalysis),
    params!("thought", Thought),
    params!("read_thoughts", ReadThoughts),
    params!("get_structure", GetStructure),
    params!("mental_models"."get_model", GetModel, "One reasoning framework, as Markdown."),
    params!("mental_models"."list_models", ListModels, "The frameworks, optionally by tag."),
    params!("mental_models"."list_tags", ListModelTags, "The frameworks' tags."),
    params!("knowledge"."create_pattern", CreatePattern, "Keep a reusable pattern."),
    params!("knowledge"."get_pattern", PatternRef, "One pattern."),
    params!("knowledge"."update_pattern", UpdatePattern, "Change a pattern (its id stays)."),
    params!("knowledge"."delete_pattern", PatternRef, "Delete a pattern."),
    params!("knowledge"."list_patterns", ListPatterns, "Patterns, filtered and paged."),
    params!("knowledge"."list_tags", ListPatternTags, "The patterns' tags."),
    params!(
        "knowledge"."write_scratchpad",
        WriteScratchpad,
        "Write the note of a topic (replaces its text)."
    ),
    params!("knowledge"."read_scratchpad", NoteRef, "One note, by id or topic."),
    params!("knowledge"."list_scratchpad", ListScratchpad, "The notes, paged."),
    params!("knowledge"."delete_scratchpad", NoteRef, "Delete a note, by id or topic."),
    params!("knowledge"."search", KnowledgeSearch, "Search patterns and notes, best first."),
    params!(
        "notebook"."create",
        CreateNotebook,
        "Create a notebook (title and package.json cells, or a template), linked to the session."
    ),
    params!("notebook"."list", ListNotebooks, "Notebooks, newest changed first, optionally of one session."),
    params!("notebook"."get", NotebookGet, "A notebook with its cells, their status and output."),
    params!("notebook"."add_cell", AddCell, "Add a title, markdown or code cell."),
    params!("notebook"."update_cell", UpdateCell, "Replace a cell's text or source."),
    params!("notebook"."delete_cell", CellRef, "Delete a cell."),
    params!("notebook"."get_cell", CellRef, "One cell, its source and its whole output."),
    params!(
        "notebook"."run_cell",
        RunCell,
        "Run a code cell with Node.js in the notebook's sandboxed directory; answers output, error, exitCode, status."
    ),
    params!(
        "notebook"."install_deps",
        InstallDeps,
        "npm install the package.json cell's dependencies (packages adds to them first)."
    ),
    params!("notebook"."export", ExportNotebook, "The notebook as Srcbook .src.md text, or written to a file."),
    params!("notebook"."import", ImportNotebook, "Create a notebook from .src.md text or a file."),
    params!("notebook"."delete", NotebookRef, "Delete a notebook, its cells, runs and directory."),
    params!(
        "thread"."spawn",
        ThreadSpawn,
        "Create a child session (a thread) under parentId, or a root thread; answers its sessionId."
    ),
    params!(
        "thread"."reference",
        ThreadReference,
        "Record that fromId cites toId (or one of its assets)."
    ),
    params!("thread"."depend", ThreadDepend, "Record that fromId's work depends on toId's."),
    params!(
        "thread"."freeze",
        ThreadRef,
        "Freeze a thread: it can be read and cited, not changed."
    ),
    params!("thread"."archive", ThreadRef, "Archive a thread (final)."),
    params!("thread"."update", ThreadUpdate, "Change an active thread's title, objective or tags."),
    params!("thread"."get", ThreadGet, "A thread with its relations."),
    params!("thread"."list", ThreadList, "Threads by status, parent and tag, paged."),
    params!("thread"."tree", ThreadGet, "A thread's descendants, nested."),
    params!("thread"."log", ThreadLog, "The registry's operations log, newest first."),
    params!("thread"."export", ThreadExport, "The thread registry as JSON (threads, operations, relations)."),
    params!(
        "thread"."import",
        ThreadImport,
        "Bring a registry JSON in: every rule checked, nothing written if one fails."
    ),
];

/// Whether `sessionId` is only the handle that admits a call of
/// `operation` (`sub_operation`) by its session's stage: the operation
/// needs a stage and its parameter type does not take the name.
pub fn admission_only_handle(operation: &str, sub_operation: Option<&str>) -> bool {
    find(operation, sub_operation).is_some_and(|p| {
        super::required_stage(operation).is_some_and(|s| s > crate::domain::Stage::Entry)
            && !p.names().contains(&"sessionId")
    })
}

/// The names of the object parameters' own fields (`newWork.project`,
/// `options.compareWith`, `keyMoments[i].type`), which the misspelling
/// check also knows.
const NESTED: &[fn() -> &'static [&'static str]] = &[
    field_names::<NewWork>,
    field_names::<SessionFilter>,
    field_names::<NavigateTarget>,
    field_names::<DeepOptions>,
    field_names::<KeyMoment>,
    field_names::<PatternFilter>,
];

/// Every name a sub-operation goes by, the documented one first; only
/// `knowledge` takes the last, the TypeScript Thoughtbox's `action`.
const SUB_OPERATION_KEYS: &[&str] = &["subOperation", "operation", "action"];

/// The names the sub-operation of `operation` goes by, in the order they
/// are read (`knowledge` also takes `action`). The one place these
/// spellings are written.
pub fn sub_operation_keys(operation: &str) -> &'static [&'static str] {
    match operation {
        "knowledge" => SUB_OPERATION_KEYS,
        _ => &SUB_OPERATION_KEYS[..2],
    }
}

/// Whether `name` names a sub-operation for some operation.
pub fn is_sub_operation_key(name: &str) -> bool {
    SUB_OPERATION_KEYS.contains(&name)
}

/// The names of the call itself, which the gateway reads for every
/// operation (parameters may sit beside `operation`).
const GATEWAY_NAMES: &[&str] = &["operation", "args"];

/// The operations that take a sub-operation.
pub fn has_sub_operations(operation: &str) -> bool {
    PARAMS
        .iter()
        .any(|p| p.operation == operation && p.sub_operation.is_some())
}

/// The sub-operations of `operation`, in the operations table's order.
pub fn sub_operations(operation: &str) -> Vec<&'static str> {
    PARAMS
        .iter()
        .filter(|p| p.operation == operation)
        .filter_map(|p| p.sub_operation)
        .collect()
}

/// The parameter type of `operation` (and `sub_operation`).
pub fn find(operation: &str, sub_operation: Option<&str>) -> Option<&'static Params> {
    PARAMS
        .iter()
        .find(|p| p.operation == operation && p.sub_operation == sub_operation)
}

/// Whether `operation` (with `sub_operation`) takes the name `name`, an
/// alias or the sub-operation's own names included; `None` when there is
/// no such operation.
pub fn takes(operation: &str, sub_operation: Option<&str>, name: &str) -> Option<bool> {
    let params = find(operation, sub_operation)?;
    Some(
        params.names().contains(&name)
            || GATEWAY_NAMES.contains(&name)
            || (sub_operation.is_some() && (name == "args" || sub_operation_keys(operation).contains(&name))),
    )
}

/// Every name some operation takes (aliases, object parameters' fields and
/// the sub-operation's names included).
pub fn is_known(name: &str) -> bool {
    known_names().contains(name)
}

fn known_names() -> &'static BTreeSet<&'static str> {
    static NAMES: OnceLock<BTreeSet<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| {
        PARAMS
            .iter()
            .flat_map(Params::names)
            .chain(NESTED.iter().flat_map(|names| names()))
            .chain(SUB_OPERATION_KEYS)
            .chain(GATEWAY_NAMES)
            .copied()
            .collect()
    })
}

/// The names a misspelling is matched against, each with its folded form
/// ([`super::args::folded`]): the generated schema's property names first
/// (the names the documentation uses), then the other names taken
/// (aliases), `camelCase` before `snake_case`.
pub fn hint_names() -> &'static [(String, String)] {
    static NAMES: OnceLock<Vec<(String, String)>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut shown = BTreeSet::new();
        collect_properties(&Value::Object(full_schema().clone()), &mut shown);
        let mut others: Vec<&str> = known_names().iter().copied().filter(|n| !shown.contains(*n)).collect();
        others.sort_by_key(|n| n.contains('_'));
        shown
            .iter()
            .map(String::as_str)
            .chain(others)
            .map(|n| (n.to_string(), super::args::folded(n)))
            .collect()
    })
}

/// Every property name in `schema`, at any depth.
fn collect_properties(schema: &Value, into: &mut BTreeSet<String>) {
    match schema {
        Value::Object(fields) => {
            for (key, value) in fields {
                if key == "properties"
                    && let Value::Object(properties) = value
                {
                    into.extend(properties.keys().cloned());
                }
                collect_properties(value, into);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_properties(v, into)),
        _ => {}
    }
}

/// The tool's input schema with every operation.
fn full_schema() -> &'static Map<String, Value> {
    static SCHEMA: OnceLock<Map<String, Value>> = OnceLock::new();
    SCHEMA.get_or_init(|| build_schema(|_| true))
}

/// The tool's input schema, listing the operations `visible` lets through:
/// `{ operation, args }`, and each operation's parameters under `$defs`.
pub fn input_schema(visible: impl Fn(&str) -> bool) -> Map<String, Value> {
    let full = full_schema();
    let mut schema = full.clone();
    if let Some(Value::Array(names)) = schema
        .get_mut("properties")
        .and_then(|p| p.get_mut("operation"))
        .and_then(|o| o.get_mut("enum"))
    {
        names.retain(|n| n.as_str().is_some_and(&visible));
    }
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        defs.retain(|key, _| visible(key.split('.').next().unwrap_or(key)));
    }
    schema
}

fn build_schema(visible: impl Fn(&str) -> bool) -> Map<String, Value> {
    let mut operations: Vec<&str> = Vec::new();
    let mut defs = Map::new();
    for p in PARAMS.iter().filter(|p| visible(p.operation)) {
        if !operations.contains(&p.operation) {
            operations.push(p.operation);
        }
        let mut schema = (p.schema)();
        if let Value::Object(fields) = &mut schema {
            // The key names it; top-level operations are described in the
            // tool description.
            fields.remove("title");
            fields.remove("description");
            if let Some(sub) = p.sub_operation {
                fields.insert("description".into(), json!(p.what));
                let properties = fields.entry("properties").or_insert_with(|| json!({}));
                properties["subOperation"] = json!({
                    "type": "string",
                    "enum": [sub],
                    "description": "The sub-operation.",
                });
                match fields.get_mut("required") {
                    Some(Value::Array(required)) => required.insert(0, json!("subOperation")),
                    _ => {
                        fields.insert("required".into(), json!(["subOperation"]));
                    }
                }
            }
        }
        admitted_by_handle(p, &mut schema);
        defs.insert(p.key(), schema);
    }
    let schema = json!({
        "type": "object",
        "properties": {
            "operation": {
                "type": "string",
                "enum": operations,
                "description": "The operation to run.",
            },
            "args": {
                "type": "object",
                "description": "The operation's parameters: for each operation, the object schema at $defs.<operation> \
                    (thought, read_thoughts ...), or under the key \"<operation>.<subOperation>\" of $defs for session, \
                    mental_models, knowledge, notebook and thread (\"session.list\", \"knowledge.search\" ...), with its types \
                    and required names.",
                "additionalProperties": true,
            },
        },
        "required": ["operation"],
        "$defs": defs,
    });
    match schema {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A staged operation that acts on no session still takes `sessionId`: a
/// request that keeps no connection state (stateless HTTP) has only the
/// session's stage to be admitted by. One whose type takes the name (as a
/// parameter of its own, or an alias: a thread's id) keeps that meaning.
fn admitted_by_handle(p: &Params, schema: &mut Value) {
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    if admission_only_handle(p.operation, p.sub_operation) {
        properties.insert(
            "sessionId".into(),
            json!({
                "type": "string",
                "description": "The session whose stage admits the call.",
            }),
        );
    }
}

/// The schema of `T`, in the plain form every client takes.
fn schema_of<T: JsonSchema>() -> Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = SchemaGenerator::new(settings).into_root_schema_for::<T>().to_value();
    plain(&mut schema);
    schema
}

/// Make a generated schema plain: an `Option<T>` is `T` (absent means
/// none; `["integer", "null"]` and `anyOf [T, null]` are refused by some
/// clients), and integers lose schemars' Rust `format`s (`uint32`), which
/// are no JSON Schema formats.
fn plain(schema: &mut Value) {
    match schema {
        Value::Object(fields) => {
            if let Some(Value::Array(names)) = fields.get_mut("enum") {
                names.retain(|n| !n.is_null());
            }
            if let Some(Value::Array(types)) = fields.get_mut("type") {
                types.retain(|t| t != "null");
                if types.len() == 1 {
                    let only = types.remove(0);
                    fields.insert("type".into(), only);
                }
            }
            for key in ["anyOf", "oneOf"] {
                if let Some(Value::Array(branches)) = fields.get(key) {
                    let kept: Vec<Value> = branches
                        .iter()
                        .filter(|b| b.get("type").is_none_or(|t| t != "null"))
                        .cloned()
                        .collect();
                    if let [Value::Object(only)] = &kept[..] {
                        fields.remove(key);
                        for (k, v) in only {
                            fields.entry(k.clone()).or_insert_with(|| v.clone());
                        }
                    }
                }
            }
            if fields.get("type").is_some_and(|t| t == "integer") {
                fields.remove("format");
            }
            // A list's items are described by the list; their type's own
            // description (of a names enum) says it again.
            if let Some(Value::Object(items)) = fields.get_mut("items") {
                items.remove("description");
            }
            fields.values_mut().for_each(plain);
        }
        Value::Array(items) => items.iter_mut().for_each(plain),
        _ => {}
    }
}

/// Every name `T` deserializes from, aliases included: serde hands them to
/// `deserialize_struct`, which a deserializer that only listens answers.
fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    struct Listen<'a>(&'a Cell<&'static [&'static str]>);
    impl<'de> serde::Deserializer<'de> for Listen<'_> {
        type Error = serde::de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("names only"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            self.0.set(fields);
            Err(serde::de::Error::custom("names only"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let names = Cell::new(&[][..]);
    let _ = T::deserialize(Listen(&names));
    names.get()
}

/// A small enum of the names a string parameter takes, with `NAMES`.
macro_rules! names_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, schemars::JsonSchema)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }
        impl $name {
            #[allow(dead_code)]
            pub const NAMES: &'static [&'static str] = &[$($text),+];
        }
    };
}
pub(crate) use names_enum;

/// A tag filter as the store takes it: each tag trimmed, blanks dropped,
/// within [`crate::domain::check_tag_filter`]'s bounds.
pub fn tag_filter(tags: Option<Vec<String>>) -> crate::error::Result<Vec<String>> {
    let tags: Vec<String> = tags
        .unwrap_or_default()
        .into_iter()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    crate::domain::check_tag_filter(&tags)?;
    Ok(tags)
}

/// Search text: blank is none (clients fill optional fields with ""), the
/// rest within [`crate::domain::check_search`]'s limits.
pub fn search_text(field: &str, text: Option<String>) -> crate::error::Result<Option<String>> {
    match text.filter(|t| !t.trim().is_empty()) {
        Some(t) => {
            crate::domain::check_search(field, &t)?;
            Ok(Some(t))
        }
        None => Ok(None),
    }
}

impl From<SortByName> for crate::domain::SortBy {
    fn from(name: SortByName) -> Self {
        match name {
            SortByName::CreatedAt => crate::domain::SortBy::CreatedAt,
            SortByName::UpdatedAt => crate::domain::SortBy::UpdatedAt,
            SortByName::Title => crate::domain::SortBy::Title,
        }
    }
}

impl From<ExportFormat> for crate::export::Format {
    fn from(name: ExportFormat) -> Self {
        match name {
            ExportFormat::Json => crate::export::Format::Json,
            ExportFormat::Markdown => crate::export::Format::Markdown,
            ExportFormat::Cipher => crate::export::Format::Cipher,
        }
    }
}

impl From<SortOrderName> for crate::domain::SortOrder {
    fn from(name: SortOrderName) -> Self {
        match name {
            SortOrderName::Asc => crate::domain::SortOrder::Asc,
            SortOrderName::Desc => crate::domain::SortOrder::Desc,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every keyword of every schema, at any depth.
    fn keywords(schema: &Value, into: &mut BTreeSet<String>) {
        match schema {
            Value::Object(fields) => {
                for (k, v) in fields {
                    into.insert(k.clone());
                    // Property names are names, not keywords.
                    if k == "properties"
                        && let Value::Object(properties) = v
                    {
                        properties.values().for_each(|p| keywords(p, into));
                    } else {
                        keywords(v, into);
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|v| keywords(v, into)),
            _ => {}
        }
    }

    /// The tool description names each operation's sub-operations by hand
    /// (some with a word on what they do): every one the schema has is
    /// named there, so that the two cannot drift apart.
    #[test]
    fn the_description_names_every_sub_operation() {
        for (operation, _, what) in crate::gateway::OPERATIONS {
            let named: BTreeSet<&str> = what.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).collect();
            for sub in sub_operations(operation) {
                assert!(named.contains(sub), "{operation}'s description lacks {sub}: {what}");
            }
        }
    }

    /// Every name an operation takes that its schema does not list is
    /// found as an alias of a listed parameter, so that it is normalised
    /// and checked against that parameter like the listed name.
    #[test]
    fn every_undocumented_name_is_found_as_an_alias() {
        let mut checked = 0;
        for p in PARAMS {
            let key = p.key();
            let schema = parse::schema_of_op(&key).expect("schema");
            let none = Map::new();
            let properties = schema.get("properties").and_then(Value::as_object).unwrap_or(&none);
            let aliases = (p.aliases)(schema);
            for name in p.names().iter().filter(|n| !properties.contains_key(**n)) {
                let found = aliases.iter().find(|(a, _)| a == name);
                let (_, of) = found.unwrap_or_else(|| panic!("{key}: {name} is not found as an alias"));
                assert!(properties.contains_key(of), "{key}: {name} stands for {of}, not listed");
                checked += 1;
            }
        }
        // `session_id`, `tag`, `q`, ... across the operations.
        assert!(checked > 20, "only {checked} aliases");
    }

    #[test]
    fn the_schema_is_plain() {
        let schema = Value::Object(full_schema().clone());
        let mut used = BTreeSet::new();
        keywords(&schema, &mut used);
        for refused in [
            "oneOf", "anyOf", "allOf", "$ref", "format", "nullable", "const", "$schema",
        ] {
            assert!(!used.contains(refused), "{refused} in the schema");
        }
        // No type lists (["integer", "null"]) anywhere.
        let text = schema.to_string();
        assert!(!text.contains("\"type\":["), "a type list in the schema");
        assert!(!text.contains("\"null\""), "null in the schema");
        assert_eq!(schema["type"], "object");
    }

    #[test]
    fn every_operation_and_sub_operation_has_its_entry() {
        let schema = full_schema();
        let defs = schema["$defs"].as_object().unwrap();
        assert_eq!(defs.len(), PARAMS.len());
        for p in PARAMS {
            let def = &defs[&p.key()];
            assert_eq!(def["type"], "object", "{}", p.key());
            if let Some(sub) = p.sub_operation {
                assert_eq!(def["properties"]["subOperation"]["enum"], json!([sub]));
                assert_eq!(def["required"][0], "subOperation");
            }
            // Every property says what it is.
            for (name, property) in def["properties"].as_object().into_iter().flatten() {
                assert!(
                    property["description"].as_str().is_some_and(|d| !d.is_empty()),
                    "{} {name} has no description",
                    p.key()
                );
            }
        }
        let thought = &defs["thought"];
        assert_eq!(thought["required"], json!(["thought", "nextThoughtNeeded"]));
        assert_eq!(thought["properties"]["thoughtNumber"]["type"], "integer");
        assert_eq!(thought["properties"]["thoughtNumber"]["minimum"], 1);
    }

    #[test]
    fn hiding_an_operation_removes_its_entries() {
        let schema = input_schema(|op| op != "knowledge");
        let names = schema["properties"]["operation"]["enum"].as_array().unwrap();
        assert!(!names.contains(&json!("knowledge")) && names.contains(&json!("thought")));
        let defs = schema["$defs"].as_object().unwrap();
        assert!(defs.keys().all(|k| !k.starts_with("knowledge")));
        assert!(defs.contains_key("thought") && defs.contains_key("mental_models.get_model"));
    }

    #[test]
    fn names_include_aliases() {
        let thought = find("thought", None).unwrap();
        for name in ["thought", "nextThoughtNeeded", "sessionId", "session_id", "id"] {
            assert!(thought.names().contains(&name), "{name}");
        }
        assert_eq!(takes("session", Some("get"), "subOperation"), Some(true));
        assert_eq!(takes("session", Some("get"), "includeThoughts"), Some(true));
        assert_eq!(takes("session", Some("get"), "destination"), Some(false));
        assert_eq!(takes("cipher", None, "operation"), Some(true));
        assert_eq!(takes("cipher", None, "subOperation"), Some(false));
        assert_eq!(takes("nope", None, "x"), None);
        for name in [
            "session_id",
            "q",
            "persist",
            "newWork",
            "significance",
            "compareWith",
            "action",
            "args",
        ] {
            assert!(is_known(name), "{name}");
        }
        assert!(!is_known("sessionID"));
    }

    #[test]
    fn hints_name_the_documented_spelling_first() {
        let names = hint_names();
        let first = |folded: &str| names.iter().find(|(_, f)| f == folded).map(|(n, _)| n.as_str());
        assert_eq!(first("sessionid"), Some("sessionId"));
        assert_eq!(first("branchid"), Some("branchId"));
    }

    #[test]
    fn value_names_match_the_domain() {
        use crate::analysis::{AnalysisType as A, LearningType as L, MomentKind as M};
        use crate::domain::{SessionStatus as St, SortBy as B, SortOrder as O};
        assert_eq!(SortByName::NAMES, B::NAMES);
        assert_eq!(SortOrderName::NAMES, O::NAMES);
        assert_eq!(StatusName::NAMES, St::NAMES);
        assert_eq!(AnalysisTypeName::NAMES, A::NAMES);
        assert_eq!(MomentKindName::NAMES, M::NAMES);
        assert_eq!(LearningTypeName::NAMES, L::NAMES);
        assert_eq!(LanguageName::NAMES, crate::notebook::Language::NAMES);
        assert_eq!(TemplateName::NAMES, crate::notebook::Template::NAMES);
        assert_eq!(ExportFormat::NAMES, crate::export::Format::NAMES);
        assert_eq!(ThreadStatusName::NAMES, crate::domain::thread::ThreadStatus::NAMES);
    }

    #[test]
    fn the_types_read_what_clients_send() {
        let t: Thought = serde_json::from_value(json!({
            "thought": "x", "nextThoughtNeeded": true, "session_id": "s", "branchId": "b", "thoughtNumber": 2,
        }))
        .unwrap();
        assert_eq!(t.session_id.as_deref(), Some("s"));
        assert_eq!(t.thought_number, Some(2));
        let r: ReadThoughts = serde_json::from_value(json!({ "range": { "start": 1, "end": 3 } })).unwrap();
        assert_eq!(r.range.map(ThoughtRange::ends), Some((1, 3)));
        let r: ReadThoughts = serde_json::from_value(json!({ "range": [2, 4] })).unwrap();
        assert_eq!(r.range.map(ThoughtRange::ends), Some((2, 4)));
        let s: SessionSearch = serde_json::from_value(json!({ "q": "kafka" })).unwrap();
        assert_eq!(s.query, "kafka");
        let k: NoteRef = serde_json::from_value(json!({ "title": "plan" })).unwrap();
        assert_eq!(k.topic.as_deref(), Some("plan"));
        let m: GetModel = serde_json::from_value(json!({ "model": "five-whys" })).unwrap();
        assert_eq!(m.model_id, "five-whys");
    }
}
