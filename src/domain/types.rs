use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// A reasoning session (the specification's Session type).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: String,
    pub title: String,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub thought_count: u64,
    pub branch_count: u64,
    pub partition_path: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub last_accessed_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
}

/// What a caller supplies to create a session.
#[derive(Debug, Clone, Default)]
pub struct NewSession {
    pub title: String,
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub domain: Option<String>,
}

impl NewSession {
    /// A session with this title and nothing else.
    pub fn titled(title: impl Into<String>) -> NewSession {
        NewSession {
            title: title.into(),
            ..Default::default()
        }
    }

    /// [`NewSession::checked`] for a thread, whose title goes by `title`
    /// (as in the registry JSON) rather than a new session's `sessionTitle`.
    pub fn checked_as_thread(&self) -> Result<(String, Vec<String>)> {
        self.checked().map_err(|e| match e {
            Error::InvalidPayload {
                field,
                message,
                details,
            } if field == "sessionTitle" => Error::InvalidPayload {
                field: "title".into(),
                message,
                details,
            },
            e => e,
        })
    }

    /// The title and tags as stored (trimmed; tags without repeats), or
    /// the field a session cannot have. Needs no ledger: a server checks
    /// before it waits for the write lock, the store again when it writes.
    pub fn checked(&self) -> Result<(String, Vec<String>)> {
        let title = self.title.trim().to_string();
        if super::is_blank(&title) {
            return Err(Error::invalid(
                "sessionTitle",
                "a session title must be non-empty (spaces and invisible characters alone do not count)",
            ));
        }
        if title.chars().count() > super::MAX_TITLE_CHARS {
            return Err(Error::invalid(
                "sessionTitle",
                format!("a session title is at most {} characters", super::MAX_TITLE_CHARS),
            ));
        }
        // A session's fields come back in every list and search answer, so
        // one oversized description or tag would make those answers too long
        // for one MCP message, for every session listed beside it.
        let over = |field: &str, what: &str, value: &str, max: usize| {
            let chars = value.chars().count();
            (chars > max).then(|| {
                Error::invalid(
                    field,
                    format!("{what} is at most {max} characters (this one has {chars}); thoughts hold the long text"),
                )
            })
        };
        if let Some(e) = self
            .description
            .as_deref()
            .and_then(|d| over("description", "a session description", d, super::MAX_DESCRIPTION_CHARS))
        {
            return Err(e);
        }
        if let Some(e) = self
            .domain
            .as_deref()
            .and_then(|d| over("domain", "a domain", d, super::MAX_TAG_CHARS))
        {
            return Err(e);
        }
        if self.tags.len() > super::MAX_TAGS {
            return Err(Error::invalid(
                "tags",
                format!(
                    "a session has at most {} tags (these are {})",
                    super::MAX_TAGS,
                    self.tags.len()
                ),
            ));
        }
        let mut tags: Vec<String> = Vec::new();
        for t in &self.tags {
            let t = t.trim().to_string();
            if t.is_empty() {
                return Err(Error::invalid("tags", "tags must be non-empty strings"));
            }
            if let Some(e) = over("tags", "a tag", &t, super::MAX_TAG_CHARS) {
                return Err(e);
            }
            if !tags.contains(&t) {
                tags.push(t);
            }
        }
        Ok((title, tags))
    }
}

/// A critique obtained through MCP sampling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Critique {
    pub text: String,
    pub model: String,
    pub timestamp: String,
}

/// One reasoning step as stored (the ThoughtData schema).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThoughtData {
    pub thought: String,
    pub thought_number: u32,
    pub total_thoughts: u32,
    pub next_thought_needed: bool,
    pub is_revision: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revises_thought: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_from_thought: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_more_thoughts: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_guide: Option<bool>,
    pub timestamp: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critique: Option<Critique>,
    /// `true` when a critique was asked for (`critique: true`) and none was
    /// received (the client cannot sample, refused, or ran out of time);
    /// absent otherwise. Our addition to ThoughtData: it lets an export
    /// carry what the session's analysis counts as critique requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub critique_requested: Option<bool>,
}

/// A stored thought with its place in the node graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Thought {
    /// Row id: creation order across the whole ledger.
    pub seq: i64,
    pub session_id: String,
    pub node_id: String,
    pub prev_node: Option<String>,
    pub revises_node: Option<String>,
    pub branch_origin: Option<String>,
    pub data: ThoughtData,
}

/// A branch of a session.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Branch {
    pub id: String,
    pub from_thought: u32,
    pub origin_node: String,
    pub count: u64,
    pub first: Option<u32>,
    pub last: Option<u32>,
    pub created_at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    CreatedAt,
    #[default]
    UpdatedAt,
    Title,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortOrder {
    Asc,
    #[default]
    Desc,
}

impl SortBy {
    pub const NAMES: &'static [&'static str] = &["createdAt", "updatedAt", "title"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "createdAt" => Some(SortBy::CreatedAt),
            "updatedAt" => Some(SortBy::UpdatedAt),
            "title" => Some(SortBy::Title),
            _ => None,
        }
    }
}

impl SortOrder {
    pub const NAMES: &'static [&'static str] = &["asc", "desc"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "asc" => Some(SortOrder::Asc),
            "desc" => Some(SortOrder::Desc),
            _ => None,
        }
    }
}

/// A session's status in lists: open for thoughts, or closed by a thought
/// with `nextThoughtNeeded: false` (`completedAt` set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionStatus {
    Active,
    Completed,
}

impl SessionStatus {
    pub const NAMES: &'static [&'static str] = &["active", "completed"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "active" => Some(SessionStatus::Active),
            "completed" => Some(SessionStatus::Completed),
            _ => None,
        }
    }
}

/// The specification's SessionFilter: tags (AND), search over titles,
/// descriptions and tags, paging and sorting; and a status of ours.
#[derive(Debug, Clone)]
pub struct SessionFilter {
    pub tags: Vec<String>,
    pub search: Option<String>,
    pub status: Option<SessionStatus>,
    pub limit: u32,
    pub offset: u32,
    pub sort_by: SortBy,
    pub sort_order: SortOrder,
}

impl Default for SessionFilter {
    fn default() -> Self {
        SessionFilter {
            tags: Vec::new(),
            search: None,
            status: None,
            limit: 20,
            offset: 0,
            sort_by: SortBy::default(),
            sort_order: SortOrder::default(),
        }
    }
}
