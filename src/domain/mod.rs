//! The ledger's rules and types: sessions, thoughts, numbering and linking,
//! stages, partitions. No SQL and no MCP here; the store supplies facts about
//! existing chains through [`ChainFacts`] and persists what [`plan_thought`]
//! decides.

pub mod anchors;
mod config_key;
mod connection;
pub mod layout;
mod partition;
mod session_id;
mod stage;
mod thought;
pub mod thread;
mod types;

pub use config_key::{ConfigDefault, ConfigKey};
pub use connection::{ConnectionState, Current};
pub use partition::{Granularity, partition_path};
pub use session_id::SessionId;
pub use stage::Stage;
pub use thought::{
    ChainFacts, PlannedThought, ThoughtInput, chain_full, check_thought_input, is_blank, node_id, plan_thought,
    validate_branch_id,
};
pub use types::{
    Branch, Critique, NewSession, Session, SessionFilter, SessionStatus, SortBy, SortOrder, Thought, ThoughtData,
};

/// The current time as the ledger writes it: ISO 8601 UTC with milliseconds.
pub fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// The longest search text, in characters and in words. People and agents
/// search with a few words; a query of thousands is refused instead (100,000
/// words kept the server busy for minutes, and ~1,000 words of Chinese made
/// SQLite refuse the statement).
pub const MAX_SEARCH_CHARS: usize = 1_000;
pub const MAX_SEARCH_WORDS: usize = 64;

/// Refuse a search text over [`MAX_SEARCH_CHARS`] or [`MAX_SEARCH_WORDS`]
/// (words counted as the index splits them: runs of letters and digits, so
/// `a:b:c` is three).
pub fn check_search(field: &str, text: &str) -> crate::error::Result<()> {
    let chars = text.chars().count();
    let words = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .count();
    if chars > MAX_SEARCH_CHARS || words > MAX_SEARCH_WORDS {
        return Err(crate::Error::invalid(
            field,
            format!(
                "{field} has {chars} characters and {words} words; a search takes at most {MAX_SEARCH_CHARS} \
                 characters and {MAX_SEARCH_WORDS} words"
            ),
        ));
    }
    Ok(())
}

/// Refuse a tag filter of more than [`MAX_TAGS`] tags: a session or a
/// pattern has no more, so it could match nothing (and 100,000 tags would
/// overflow SQLite's variables).
pub fn check_tag_filter(tags: &[String]) -> crate::error::Result<()> {
    if tags.len() > MAX_TAGS {
        return Err(crate::Error::invalid(
            "tags",
            format!(
                "the filter names {} tags; a filter takes at most {MAX_TAGS}",
                tags.len()
            ),
        ));
    }
    Ok(())
}

/// Longest project name: its tag `project:NAME` is a tag like any other.
pub const MAX_PROJECT_CHARS: usize = MAX_TAG_CHARS - "project:".len();

/// Why `name` cannot be a project (the tag `project:NAME` of every new
/// session), if it cannot: a NUL (refused in every tag) or too long.
pub fn project_problem(name: &str) -> Option<String> {
    if name.contains('\0') {
        return Some("it holds a NUL character (U+0000)".into());
    }
    let chars = name.chars().count();
    (chars > MAX_PROJECT_CHARS)
        .then(|| format!("it has {chars} characters; a project name has at most {MAX_PROJECT_CHARS}"))
}

/// Largest thought number (and totalThoughts) the ledger accepts.
pub const MAX_THOUGHT_NUMBER: u32 = i32::MAX as u32;

/// Largest thought text accepted, in bytes (1 MiB).
pub const MAX_THOUGHT_BYTES: usize = 1 << 20;

/// Largest critique text kept, in bytes: the thought text's limit, so that
/// a thought and its critique always fit in one answer together.
pub const MAX_CRITIQUE_BYTES: usize = MAX_THOUGHT_BYTES;

/// Longest model name kept with a critique, in characters: names such as
/// `claude-sonnet-4-20250514` take a few dozen.
pub const MAX_CRITIQUE_MODEL_CHARS: usize = 200;

/// Longest session title, in characters (Session schema).
pub const MAX_TITLE_CHARS: usize = 200;

/// Longest session description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 10_000;

/// Most tags on one session, and the longest tag (and domain), in characters.
pub const MAX_TAGS: usize = 100;
pub const MAX_TAG_CHARS: usize = 200;

/// What a JSON value is, for messages ("got a number"): the gateway's
/// argument checks and the readers of exported files say it alike.
pub fn json_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
