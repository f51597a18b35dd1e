//! Parameters of `thought` and the reads of one session.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::Deserialize;

use super::NewWork;
use crate::domain::SessionId;

/// `thought`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Thought {
    /// The text of this reasoning step (at most 1 MiB).
    pub thought: String,
    /// Whether another thought follows; false on the main chain completes the session.
    pub next_thought_needed: bool,
    /// The session to write to (the handle start_new or load_context returned); without it, the connection's current session.
    #[serde(alias = "session_id", alias = "id")]
    pub session_id: Option<SessionId>,
    /// This thought's number on its chain (default: the next one).
    #[schemars(range(min = 1))]
    pub thought_number: Option<u32>,
    /// The estimated number of thoughts (default: this thought's number).
    #[schemars(range(min = 1))]
    pub total_thoughts: Option<u32>,
    /// This thought revises an earlier one (implied by revisesThought).
    pub is_revision: Option<bool>,
    /// The number of the thought this one revises, on the same chain.
    #[schemars(range(min = 1))]
    pub revises_thought: Option<u32>,
    /// The main-chain thought a new branch forks from (needed by a branch's first thought).
    #[schemars(range(min = 1))]
    pub branch_from_thought: Option<u32>,
    /// The branch this thought is on: 1-64 of a-z, 0-9 and '-'.
    pub branch_id: Option<String>,
    /// More thoughts are needed than estimated.
    pub needs_more_thoughts: Option<bool>,
    /// Answer more: totalThoughts, nextThoughtNeeded, branches, thoughtHistoryLength.
    #[schemars(extend("default" = false))]
    pub verbose: Option<bool>,
    /// Add the reasoning-patterns guide to the answer.
    #[schemars(extend("default" = false))]
    pub include_guide: Option<bool>,
    /// Ask the client's model for a critique of this thought (MCP sampling).
    #[schemars(extend("default" = false))]
    pub critique: Option<bool>,
    /// The title of the session this thought starts, when there is none to write to.
    pub session_title: Option<String>,
    /// The tags of the session this thought starts.
    pub session_tags: Option<Vec<String>>,
    /// The description of the session this thought starts.
    pub description: Option<String>,
    /// The domain of the session this thought starts.
    pub domain: Option<String>,
    /// The work of the session this thought starts: { project, task, aspect, domain }, as start_new takes it.
    #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
    pub new_work: Option<NewWork>,
}

/// A range of thought numbers: `[start, end]` or `{ "start", "end" }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ThoughtRange {
    Pair([u32; 2]),
    Ends {
        #[serde(deserialize_with = "whole_number")]
        start: u32,
        #[serde(deserialize_with = "whole_number")]
        end: u32,
    },
}

/// An end of the object form, which the schema-driven normalisation does
/// not see (the schema describes the pair): a number or its decimal text,
/// as every integer parameter takes.
fn whole_number<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Given {
        Number(u32),
        Text(String),
    }
    match Given::deserialize(d)? {
        Given::Number(n) => Ok(n),
        Given::Text(t) => t.trim().parse().map_err(serde::de::Error::custom),
    }
}

impl ThoughtRange {
    pub fn ends(self) -> (u32, u32) {
        match self {
            ThoughtRange::Pair([start, end]) | ThoughtRange::Ends { start, end } => (start, end),
        }
    }
}

/// Described as the pair only: a type list or a union would be refused by
/// some clients, and the object form is said in the description.
impl JsonSchema for ThoughtRange {
    fn schema_name() -> Cow<'static, str> {
        "ThoughtRange".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array",
            "items": { "type": "integer", "minimum": 1 },
            "minItems": 2,
            "maxItems": 2,
        })
    }

    fn inline_schema() -> bool {
        true
    }
}

/// `read_thoughts`: one of thoughtNumber, last, range, each of the main chain or of branchId's branch, or branchId alone (default: the last 5 main-chain thoughts).
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadThoughts {
    /// The session to read (default: the connection's current session).
    #[serde(alias = "session_id", alias = "id")]
    pub session_id: Option<SessionId>,
    /// One thought, whole (of the main chain, or of branchId's branch).
    #[schemars(range(min = 1))]
    pub thought_number: Option<u32>,
    /// The last n thoughts (of the main chain, or of branchId's branch).
    #[schemars(range(min = 1))]
    pub last: Option<u32>,
    /// Thoughts start to end: [start, end] (or {"start": s, "end": e}), of the main chain or of branchId's branch.
    pub range: Option<ThoughtRange>,
    /// A branch: alone, its thoughts; with thoughtNumber, last or range, those of it.
    pub branch_id: Option<String>,
    /// true: every text whole, every thought listed. Without it, a read other than one thoughtNumber cuts each text to 4,000 characters and all of them to 40,000, newest first, lists at most 50 thoughts, and says in truncated.readRest how to read on.
    #[schemars(extend("default" = false))]
    pub full: Option<bool>,
}

/// `get_structure`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetStructure {
    /// The session (default: the connection's current session).
    #[serde(alias = "session_id", alias = "id")]
    pub session_id: Option<SessionId>,
}
