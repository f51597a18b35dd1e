//! The answers of `session get`, `session search`, `session export` and
//! `session delete`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::domain::Session;
use crate::gateway::preview::Truncated;
use crate::knowledge::{KnowledgeHit, KnowledgeHits};
use crate::notebook::NotebookSummary;
use crate::store::SessionHits;

/// `session get`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionGetAnswer {
    pub session_id: String,
    pub session: Session,
    /// Unless `includeThoughts: false`.
    #[serde(flatten)]
    pub thoughts: Option<SessionThoughts>,
    /// The notebooks created in the session.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notebooks: Vec<NotebookSummary>,
}

/// A session's thoughts: the main chain's, and each branch's by its id.
#[derive(Debug, Serialize)]
pub(crate) struct SessionThoughts {
    pub thoughts: Vec<Value>,
    pub branches: BTreeMap<String, Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
}

/// `session search`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionSearchAnswer {
    pub query: String,
    pub count: usize,
    pub limit: u32,
    /// The answer stopped at `limit` sessions, or may have.
    pub limit_reached: bool,
    pub sessions: Vec<SessionHits>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
    /// With `include: ["patterns"]`.
    #[serde(flatten)]
    pub patterns: Option<PatternHits>,
    /// With `include: ["notes"]`.
    #[serde(flatten)]
    pub notes: Option<NoteHits>,
    /// With `include: ["notebooks"]`.
    #[serde(flatten)]
    pub notebooks: Option<super::notebook::NotebookHits>,
}

/// Patterns found beside sessions, named as `knowledge search` names them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PatternHits {
    pub patterns: Vec<KnowledgeHit>,
    pub more_patterns: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patterns_ranked_newest: Option<usize>,
}

impl From<KnowledgeHits> for PatternHits {
    fn from(found: KnowledgeHits) -> PatternHits {
        PatternHits {
            patterns: found.hits,
            more_patterns: found.more,
            patterns_ranked_newest: found.ranked_newest,
        }
    }
}

/// Notes found beside sessions, named as `knowledge search` names them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NoteHits {
    pub notes: Vec<KnowledgeHit>,
    pub more_notes: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes_ranked_newest: Option<usize>,
}

impl From<KnowledgeHits> for NoteHits {
    fn from(found: KnowledgeHits) -> NoteHits {
        NoteHits {
            notes: found.hits,
            more_notes: found.more,
            notes_ranked_newest: found.ranked_newest,
        }
    }
}

/// `session export` with a destination: the files written.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExportedToAnswer {
    pub session_id: String,
    /// Always `json`: the directory layout is made of JSON files.
    pub format: &'static str,
    pub destination: PathBuf,
    pub path: PathBuf,
    pub thoughts: u64,
    pub files_written: u64,
    pub files_unchanged: u64,
    /// The notebooks created in the session (`notebook export` exports one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notebooks: Vec<NotebookSummary>,
}

/// `session export` without a destination: the export itself.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExportAnswer {
    pub session_id: String,
    pub format: &'static str,
    /// The JSON export as an object; markdown and cipher as text.
    pub content: Value,
    /// The notebooks created in the session (`notebook export` exports one).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notebooks: Vec<NotebookSummary>,
}

/// `session delete`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeleteAnswer {
    pub session_id: String,
    pub deleted: bool,
    pub thoughts_deleted: u64,
}
