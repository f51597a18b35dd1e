//! MCP resources and prompts: the guides, the mental models and the
//! knowledge garden as readable resources, and each mental model as a prompt.
//!
//! | URI | content |
//! | --- | --- |
//! | `thoughtbox://cipher` | the notation guide |
//! | `thoughtbox://patterns-guide` | the reasoning patterns guide |
//! | `thoughtbox://mental-models/{name}` | a mental model's prompt |
//! | `thoughtbox://knowledge/patterns/{id}` | a knowledge pattern |
//! | `thoughtbox://knowledge/notes/{id}` | a scratchpad note |

use rmcp::ErrorData as McpError;
use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    Prompt, PromptArgument, PromptMessage, ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role,
};
use serde_json::json;

use super::Gateway;
use crate::content;
use crate::error::Error;
use crate::knowledge::{KnowledgePattern, ScratchpadNote, is_slug, note_uri, pattern_uri};
use crate::models;

const MARKDOWN: &str = "text/markdown";
const CIPHER_URI: &str = "thoughtbox://cipher";
const GUIDE_URI: &str = "thoughtbox://patterns-guide";
const MODEL_PREFIX: &str = "thoughtbox://mental-models/";
const PATTERN_PREFIX: &str = "thoughtbox://knowledge/patterns/";
const NOTE_PREFIX: &str = "thoughtbox://knowledge/notes/";
/// Patterns and notes on one page of resources/list (newest first).
const LISTED_KNOWLEDGE: u32 = 200;

fn mcp_error(e: Error) -> McpError {
    if e.is_interrupted() {
        tracing::info!("resource read stopped by the shutdown");
    } else {
        tracing::warn!("resource read failed: {e}");
    }
    McpError::internal_error(e.message(), Some(e.payload()))
}

fn model_resource(m: &models::MentalModel) -> Resource {
    Resource::new(models::uri(&m.name), m.name.clone())
        .with_title(m.title.clone())
        .with_description(m.description.clone())
        .with_mime_type(MARKDOWN)
        .with_size(m.content.len() as u64)
}

/// resources/list, a page at a time: the first page starts with the fixed
/// resources and the mental models, then every page holds up to
/// [`LISTED_KNOWLEDGE`] patterns and notes (patterns, then notes, newest
/// created first); `nextCursor` names the last one listed.
pub async fn list_resources(gw: &Gateway, cursor: Option<&str>) -> Result<ListResourcesResult, McpError> {
    // The cursor names the last item of the previous page: `knowledge:`
    // then `p` (pattern) or `n` (note), `:` and its seq.
    let after = match cursor {
        None => None,
        Some(c) => Some(
            c.strip_prefix("knowledge:")
                .and_then(|rest| rest.split_once(':'))
                .and_then(|(kind, seq)| {
                    let note = match kind {
                        "p" => false,
                        "n" => true,
                        _ => return None,
                    };
                    let seq = seq.parse::<i64>().ok().filter(|s| *s >= 0 && !seq.starts_with('+'))?;
                    Some((note, seq))
                })
                .ok_or_else(|| {
                    McpError::invalid_params(
                        format!(
                            "unknown cursor {:?}: pass the nextCursor of the previous page",
                            super::clip(c)
                        ),
                        None,
                    )
                })?,
        ),
    };
    let mut list = Vec::new();
    if after.is_none() {
        list.push(
            Resource::new(CIPHER_URI, "cipher")
                .with_title("Thoughtbox cipher notation")
                .with_description("The compact notation guide the cipher operation returns.")
                .with_mime_type(MARKDOWN),
        );
        list.push(
            Resource::new(GUIDE_URI, "patterns-guide")
                .with_title("Reasoning patterns guide")
                .with_description(
                    "How to use thought numbers, branches and revisions for different kinds of reasoning.",
                )
                .with_mime_type(MARKDOWN),
        );
        list.extend(models::catalog().models.iter().map(model_resource));
    }
    let (items, more) = gw
        .blocking(move |s| s.knowledge_items(after, LISTED_KNOWLEDGE))
        .await
        .map_err(mcp_error)?;
    list.extend(items.iter().map(|k| {
        if k.note {
            Resource::new(note_uri(&k.id), k.id.clone())
                .with_title(k.title.clone())
                .with_description("Scratchpad note")
                .with_mime_type(MARKDOWN)
        } else {
            Resource::new(pattern_uri(&k.id), k.id.clone())
                .with_title(k.title.clone())
                .with_description(k.description.clone())
                .with_mime_type(MARKDOWN)
        }
    }));
    let mut page = ListResourcesResult::with_all_items(list);
    if more && let Some(last) = items.last() {
        page.next_cursor = Some(format!("knowledge:{}:{}", if last.note { "n" } else { "p" }, last.seq));
    }
    Ok(page)
}

pub fn list_resource_templates() -> ListResourceTemplatesResult {
    ListResourceTemplatesResult::with_all_items(vec![
        ResourceTemplate::new(format!("{MODEL_PREFIX}{{name}}"), "mental-model")
            .with_title("Mental model")
            .with_description(format!("A reasoning framework; names: {}", models::names().join(", ")))
            .with_mime_type(MARKDOWN),
        ResourceTemplate::new(format!("{PATTERN_PREFIX}{{id}}"), "knowledge-pattern")
            .with_title("Knowledge pattern")
            .with_description("A reusable reasoning pattern from the knowledge garden.")
            .with_mime_type(MARKDOWN),
        ResourceTemplate::new(format!("{NOTE_PREFIX}{{id}}"), "scratchpad-note")
            .with_title("Scratchpad note")
            .with_description("A scratchpad note from the knowledge garden.")
            .with_mime_type(MARKDOWN),
    ])
}

/// A pattern as a Markdown document: title, description, metadata, content.
pub(crate) fn pattern_markdown(p: &KnowledgePattern) -> String {
    let mut s = format!("# {}\n\n> {}\n\n", p.title, p.description);
    s.push_str(&format!("- id: `{}`\n", p.id));
    if !p.tags.is_empty() {
        s.push_str(&format!("- tags: {}\n", p.tags.join(", ")));
    }
    if !p.derived_from_sessions.is_empty() {
        s.push_str(&format!(
            "- derived from sessions: {}\n",
            p.derived_from_sessions.join(", ")
        ));
    }
    if let Some(by) = &p.created_by {
        s.push_str(&format!("- created by: {by}\n"));
    }
    s.push_str(&format!(
        "- created: {}, updated: {}\n\n{}\n",
        p.created_at, p.updated_at, p.content
    ));
    s
}

fn note_markdown(n: &ScratchpadNote) -> String {
    format!("# {}\n\n_Updated: {}_\n\n{}\n", n.title, n.updated_at, n.content)
}

fn text(uri: &str, body: impl Into<String>) -> ReadResourceResult {
    ReadResourceResult::new(vec![ResourceContents::text(body, uri).with_mime_type(MARKDOWN)])
}

fn not_found(uri: &str) -> McpError {
    let uri = super::clip(uri);
    McpError::resource_not_found(format!("no resource {uri}"), Some(json!({ "uri": uri })))
}

pub async fn read_resource(gw: &Gateway, uri: &str) -> Result<ReadResourceResult, McpError> {
    if uri == CIPHER_URI {
        return Ok(text(uri, content::CIPHER_GUIDE));
    }
    if uri == GUIDE_URI {
        return Ok(text(uri, content::PATTERNS_GUIDE));
    }
    if let Some(name) = uri.strip_prefix(MODEL_PREFIX) {
        return models::get(name)
            .map(|m| text(uri, m.content))
            .ok_or_else(|| not_found(uri));
    }
    if let Some(id) = uri.strip_prefix(PATTERN_PREFIX).filter(|id| is_slug(id)) {
        let id = id.to_string();
        return match gw.blocking(move |s| s.pattern(&id)).await {
            Ok(p) => Ok(text(uri, pattern_markdown(&p))),
            Err(Error::InvalidPayload { .. }) => Err(not_found(uri)),
            Err(e) => Err(mcp_error(e)),
        };
    }
    if let Some(id) = uri.strip_prefix(NOTE_PREFIX).filter(|id| is_slug(id)) {
        let note = crate::knowledge::NoteRef::Id(id.to_string());
        return match gw.blocking(move |s| s.note(&note)).await {
            Ok(n) => Ok(text(uri, note_markdown(&n))),
            Err(Error::InvalidPayload { .. }) => Err(not_found(uri)),
            Err(e) => Err(mcp_error(e)),
        };
    }
    Err(not_found(uri))
}

/// Every mental model as a prompt, with an optional `problem` argument.
pub fn list_prompts() -> ListPromptsResult {
    ListPromptsResult::with_all_items(
        models::catalog()
            .models
            .iter()
            .map(|m| {
                Prompt::new(
                    m.name.clone(),
                    Some(m.description.clone()),
                    Some(vec![
                        PromptArgument::new("problem")
                            .with_description("The problem or decision to apply the model to")
                            .with_required(false),
                    ]),
                )
                .with_title(m.title.clone())
            })
            .collect(),
    )
}

pub fn get_prompt(request: &GetPromptRequestParams) -> Result<GetPromptResult, McpError> {
    let Some(m) = models::get(&request.name) else {
        return Err(McpError::invalid_params(
            format!(
                "unknown prompt {:?}; prompts: {}",
                request.name,
                models::names().join(", ")
            ),
            Some(json!({ "validPrompts": models::names() })),
        ));
    };
    let problem = match request.arguments.as_ref().and_then(|a| a.get("problem")) {
        None | Some(serde_json::Value::Null) => None,
        Some(serde_json::Value::String(s)) => Some(s.trim().to_string()).filter(|s| !s.is_empty()),
        Some(_) => return Err(McpError::invalid_params("the problem argument must be a string", None)),
    };
    let mut body = m.content.to_string();
    match problem {
        Some(p) => body.push_str(&format!(
            "\n\n---\n\nApply {} to this problem, following the steps above, and record each step as a thought:\n\n{p}\n",
            m.title
        )),
        None => body.push_str(&format!(
            "\n\n---\n\nApply {} to the problem at hand, following the steps above.\n",
            m.title
        )),
    }
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, body)]).with_description(m.description.clone()))
}
