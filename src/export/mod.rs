//! Rendering sessions: SessionExport v1.0 JSON (with ThoughtNodes), Markdown,
//! and the compact cipher form.

use std::collections::HashMap;

use serde::Serialize;
use serde_json::Value;

use crate::domain::{Session, Thought, ThoughtData};
use crate::error::{Error, Result};

/// Export formats of `session export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Json,
    Markdown,
    Cipher,
}

impl Format {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "json" => Some(Format::Json),
            "markdown" | "md" => Some(Format::Markdown),
            "cipher" => Some(Format::Cipher),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Markdown => "markdown",
            Format::Cipher => "cipher",
        }
    }
}

/// ThoughtNode of DATA-MODELS: a thought with its links.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThoughtNode {
    pub id: String,
    pub data: ThoughtData,
    pub prev: Option<String>,
    pub next: Vec<String>,
    pub revises_node: Option<String>,
    pub branch_origin: Option<String>,
    pub branch_id: Option<String>,
}

/// SessionExport v1.0.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionExport {
    pub version: String,
    pub session: Session,
    pub nodes: Vec<ThoughtNode>,
    pub exported_at: String,
}

/// Build the nodes of a session. `next` lists every node whose `prev` is the
/// node, in creation order. Nodes keep the order of `thoughts`.
pub fn nodes(thoughts: &[Thought]) -> Vec<ThoughtNode> {
    let mut by_seq: Vec<&Thought> = thoughts.iter().collect();
    by_seq.sort_by_key(|t| t.seq);
    let mut next: HashMap<&str, Vec<String>> = HashMap::new();
    for t in by_seq {
        if let Some(p) = t.prev_node.as_deref() {
            next.entry(p).or_default().push(t.node_id.clone());
        }
    }
    thoughts
        .iter()
        .map(|t| ThoughtNode {
            id: t.node_id.clone(),
            data: t.data.clone(),
            prev: t.prev_node.clone(),
            next: next.get(t.node_id.as_str()).cloned().unwrap_or_default(),
            revises_node: t.revises_node.clone(),
            branch_origin: t.branch_origin.clone(),
            branch_id: t.data.branch_id.clone(),
        })
        .collect()
}

pub fn session_export(session: &Session, thoughts: &[Thought], exported_at: String) -> SessionExport {
    SessionExport {
        version: "1.0".into(),
        session: session.clone(),
        nodes: nodes(thoughts),
        exported_at,
    }
}

/// Render a session in `format`: JSON as a value, the others as text.
pub fn render(format: Format, session: &Session, thoughts: &[Thought], include_metadata: bool) -> Result<Value> {
    Ok(match format {
        Format::Json => serde_json::to_value(session_export(session, thoughts, crate::domain::now()))
            .map_err(|e| Error::Internal(e.to_string()))?,
        Format::Markdown => Value::String(markdown(session, thoughts, include_metadata)),
        Format::Cipher => Value::String(cipher(session, thoughts)),
    })
}

fn chains(thoughts: &[Thought]) -> Vec<(Option<&str>, Vec<&Thought>)> {
    let mut out: Vec<(Option<&str>, Vec<&Thought>)> = Vec::new();
    for t in thoughts {
        let b = t.data.branch_id.as_deref();
        match out.iter_mut().find(|(k, _)| *k == b) {
            Some((_, v)) => v.push(t),
            None => out.push((b, vec![t])),
        }
    }
    for (_, v) in &mut out {
        v.sort_by_key(|t| t.data.thought_number);
    }
    out.sort_by_key(|(k, _)| k.is_some());
    out
}

/// A readable Markdown document with every chain.
pub fn markdown(session: &Session, thoughts: &[Thought], include_metadata: bool) -> String {
    let mut s = format!("# {}\n\n", session.title);
    if include_metadata {
        s.push_str(&format!("- **Session:** {}\n", session.id));
        if !session.tags.is_empty() {
            s.push_str(&format!("- **Tags:** {}\n", session.tags.join(", ")));
        }
        s.push_str(&format!("- **Created:** {}\n", session.created_at));
        s.push_str(&format!("- **Updated:** {}\n", session.updated_at));
        s.push_str(&format!(
            "- **Thoughts:** {} ({} branches)\n",
            session.thought_count, session.branch_count
        ));
        s.push_str(&format!(
            "- **Status:** {}\n",
            if session.completed_at.is_some() {
                "completed"
            } else {
                "active"
            }
        ));
        if let Some(d) = session.description.as_deref().filter(|d| !d.is_empty()) {
            s.push_str(&format!("\n> {}\n", d.replace('\n', "\n> ")));
        }
        s.push('\n');
    }
    for (branch, list) in chains(thoughts) {
        match branch {
            None => s.push_str("## Main chain\n\n"),
            Some(b) => {
                let from = list.first().and_then(|t| t.data.branch_from_thought).unwrap_or(0);
                s.push_str(&format!("## Branch `{b}` (from thought {from})\n\n"));
            }
        }
        for t in list {
            let d = &t.data;
            s.push_str(&format!("### Thought {}/{}", d.thought_number, d.total_thoughts));
            if let Some(r) = d.revises_thought {
                s.push_str(&format!(" (revises #{r})"));
            }
            s.push_str("\n\n");
            s.push_str(d.thought.trim_end());
            s.push_str("\n\n");
            if let Some(c) = &d.critique {
                s.push_str(&format!(
                    "> **Critique** ({}): {}\n\n",
                    c.model,
                    c.text.replace('\n', "\n> ")
                ));
            }
        }
    }
    s
}

/// The step-type letter of the cipher notation for a thought: `R` for a
/// revision, the thought's own letter when it is already written in cipher,
/// else a guess from its wording (`O` when nothing fits).
fn step_type(d: &ThoughtData) -> char {
    if d.is_revision {
        return 'R';
    }
    let text = d.thought.trim_start();
    let mut chars = text.chars().skip_while(|c| c.is_ascii_digit());
    if text.starts_with(|c: char| c.is_ascii_digit())
        && let Some(c) = chars.next()
        && "HEOAQPRXC".contains(c)
        && matches!(chars.next(), Some('(' | ' '))
    {
        return c;
    }
    let lower = text.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&["therefore", "conclusion", "conclude", "so the answer"]) {
        'C'
    } else if has(&["hypothes", "maybe", "might be", "suspect"]) {
        'H'
    } else if has(&["assume", "assuming"]) {
        'A'
    } else if has(&["plan", "next step", "i will", "let's"]) {
        'P'
    } else if has(&["evidence", "found", "measured", "shows"]) {
        'E'
    } else if text.trim_end().ends_with('?') {
        'Q'
    } else {
        'O'
    }
}

fn squash(text: &str, max: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut} ..")
    }
}

/// The session in cipher notation: one step line per thought,
/// `<n><T>(<refs>) <text>`, with `r@k` for a revision of thought k and
/// `b@f` for a branch's fork point.
pub fn cipher(session: &Session, thoughts: &[Thought]) -> String {
    let mut s = format!("# {}\n", session.title);
    s.push_str(&format!(
        "id:{} tags:{} n:{} b:{} {}\n",
        session.id,
        session.tags.join(","),
        session.thought_count,
        session.branch_count,
        if session.completed_at.is_some() { "done" } else { "open" }
    ));
    for (branch, list) in chains(thoughts) {
        if let Some(b) = branch {
            let from = list.first().and_then(|t| t.data.branch_from_thought).unwrap_or(0);
            s.push_str(&format!("\n## {b} b@{from}\n"));
        } else {
            s.push('\n');
        }
        for t in list {
            let d = &t.data;
            let mut refs = Vec::new();
            if let Some(r) = d.revises_thought {
                refs.push(format!("r@{r}"));
            }
            let refs = if refs.is_empty() {
                String::new()
            } else {
                format!("({})", refs.join(","))
            };
            s.push_str(&format!(
                "{}{}{} {}\n",
                d.thought_number,
                step_type(d),
                refs,
                squash(&d.thought, 200)
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thought(seq: i64, n: u32, branch: Option<&str>, prev: Option<&str>, text: &str) -> Thought {
        Thought {
            seq,
            session_id: "s".into(),
            node_id: crate::domain::node_id("s", branch, n),
            prev_node: prev.map(str::to_string),
            revises_node: None,
            branch_origin: None,
            data: ThoughtData {
                thought: text.into(),
                thought_number: n,
                total_thoughts: n,
                next_thought_needed: true,
                is_revision: false,
                revises_thought: None,
                branch_from_thought: branch.map(|_| 1),
                branch_id: branch.map(str::to_string),
                needs_more_thoughts: None,
                include_guide: None,
                timestamp: "2025-01-01T00:00:00.000Z".into(),
                critique: None,
            },
        }
    }

    fn session() -> Session {
        Session {
            id: "s".into(),
            title: "T".into(),
            description: None,
            tags: vec!["a".into()],
            thought_count: 3,
            branch_count: 1,
            partition_path: None,
            created_at: "2025-01-01T00:00:00.000Z".into(),
            updated_at: "2025-01-01T00:00:00.000Z".into(),
            last_accessed_at: "2025-01-01T00:00:00.000Z".into(),
            completed_at: None,
            domain: None,
        }
    }

    #[test]
    fn next_lists_children_in_creation_order() {
        let ts = vec![
            thought(1, 1, None, None, "a"),
            thought(3, 2, None, Some("s:1"), "b"),
            thought(2, 2, Some("x"), Some("s:1"), "c"),
        ];
        let nodes = nodes(&ts);
        assert_eq!(nodes[0].next, vec!["s:x:2".to_string(), "s:2".to_string()]);
        assert!(nodes[1].next.is_empty());
    }

    #[test]
    fn markdown_and_cipher_include_branches() {
        let ts = vec![
            thought(1, 1, None, None, "We found the bug"),
            thought(2, 2, Some("x"), Some("s:1"), "Maybe it is the cache?"),
        ];
        let md = markdown(&session(), &ts, true);
        assert!(md.contains("## Branch `x` (from thought 1)"));
        let c = cipher(&session(), &ts);
        assert!(c.contains("1E We found the bug"), "{c}");
        assert!(c.contains("## x b@1\n2H Maybe"), "{c}");
    }
}
