//! The Observatory's payload types (SessionSnapshotPayload,
//! ObservatorySession, ObservatoryThought, ObservatoryBranch and the event
//! payloads), built from the ledger's sessions and thoughts, and the
//! WebSocket frame around them (docs/observatory.md lists each frame).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::domain::{Session, Thought};
use crate::store::{CutThought, OBSERVED_CHARS};

/// ObservatorySession (`id` to `status`), with the list's counts and
/// `updatedAt` besides.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservatorySession {
    pub id: String,
    pub title: Option<String>,
    pub tags: Vec<String>,
    pub created_at: String,
    pub completed_at: Option<String>,
    /// `completed` once `completedAt` is set, else `active`.
    pub status: &'static str,
    pub updated_at: String,
    pub thought_count: u64,
    pub branch_count: u64,
}

impl From<&Session> for ObservatorySession {
    fn from(s: &Session) -> Self {
        ObservatorySession {
            id: s.id.clone(),
            title: Some(s.title.clone()),
            tags: s.tags.clone(),
            created_at: s.created_at.clone(),
            completed_at: s.completed_at.clone(),
            status: if s.completed_at.is_some() {
                "completed"
            } else {
                "active"
            },
            updated_at: s.updated_at.clone(),
            thought_count: s.thought_count,
            branch_count: s.branch_count,
        }
    }
}

/// ObservatoryThought; `id` is the thought's node id. A text cut to
/// [`OBSERVED_CHARS`] says so (`thoughtTruncated`, `thoughtChars`, as the
/// gateway's overview reads do).
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservatoryThought {
    pub id: String,
    pub thought_number: u32,
    pub total_thoughts: u32,
    pub thought: String,
    pub next_thought_needed: bool,
    pub timestamp: String,
    pub is_revision: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revises_thought: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_from_thought: Option<u32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub thought_truncated: bool,
    /// The whole text's length in characters, when cut.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thought_chars: Option<u64>,
}

impl From<&Thought> for ObservatoryThought {
    fn from(t: &Thought) -> Self {
        let d = &t.data;
        ObservatoryThought {
            id: t.node_id.clone(),
            thought_number: d.thought_number,
            total_thoughts: d.total_thoughts,
            thought: d.thought.clone(),
            next_thought_needed: d.next_thought_needed,
            timestamp: d.timestamp.clone(),
            is_revision: d.is_revision,
            revises_thought: d.revises_thought,
            branch_id: d.branch_id.clone(),
            branch_from_thought: d.branch_from_thought,
            thought_truncated: false,
            thought_chars: None,
        }
    }
}

impl ObservatoryThought {
    /// From a thought read cut, with its whole text's length.
    pub fn cut((t, chars): &CutThought) -> Self {
        let mut o = ObservatoryThought::from(t);
        if *chars > u64::from(OBSERVED_CHARS) {
            o.thought_truncated = true;
            o.thought_chars = Some(*chars);
        }
        o
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ObservatoryBranch {
    pub id: String,
    pub name: Option<String>,
    pub from_thought_number: u32,
    pub thoughts: Vec<ObservatoryThought>,
}

/// The whole session, sent on subscribe: main-chain thoughts in
/// `thoughts`, each branch's under `branches`.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSnapshotPayload {
    pub session: ObservatorySession,
    pub thoughts: Vec<ObservatoryThought>,
    pub branches: BTreeMap<String, ObservatoryBranch>,
    /// Only the session's first thoughts, in the order read: the rest would
    /// pass the answer's bound.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
}

impl SessionSnapshotPayload {
    /// From a session and its thoughts, whole (any order; numbered order here).
    pub fn of(session: &Session, thoughts: &[Thought]) -> Self {
        Self::of_observed(session, thoughts.iter().map(ObservatoryThought::from))
    }

    /// From a session and its thoughts read cut.
    pub fn cut(session: &Session, thoughts: &[CutThought]) -> Self {
        Self::of_observed(session, thoughts.iter().map(ObservatoryThought::cut))
    }

    fn of_observed(session: &Session, thoughts: impl Iterator<Item = ObservatoryThought>) -> Self {
        let mut main = Vec::new();
        let mut branches: BTreeMap<String, ObservatoryBranch> = BTreeMap::new();
        for o in thoughts {
            match o.branch_id.clone() {
                None => main.push(o),
                Some(b) => {
                    let from = o.branch_from_thought.unwrap_or(0);
                    let branch = branches.entry(b.clone()).or_insert_with(|| ObservatoryBranch {
                        id: b,
                        name: None,
                        from_thought_number: from,
                        thoughts: Vec::new(),
                    });
                    if branch.from_thought_number == 0 {
                        branch.from_thought_number = from;
                    }
                    branch.thoughts.push(o);
                }
            }
        }
        main.sort_by_key(|t| t.thought_number);
        for b in branches.values_mut() {
            b.thoughts.sort_by_key(|t| t.thought_number);
        }
        SessionSnapshotPayload {
            session: session.into(),
            thoughts: main,
            branches,
            partial: false,
        }
    }
}

/// A WebSocket frame: `{ type, sessionId?, payload }`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Frame {
    #[serde(rename = "type")]
    pub kind: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub payload: Value,
}

/// The frames a newly recorded thought makes: `thought_branched` for a
/// branch's first thought, `thought_revised` for a revision, else
/// `thought_added`; then `session_ended` when it closed its session
/// (`nextThoughtNeeded: false` on the main chain). The text is cut.
pub fn thought_frames(cut: &CutThought, thought_count: Option<u64>) -> Vec<Frame> {
    let t = &cut.0;
    let d = &t.data;
    let thought = serde_json::to_value(ObservatoryThought::cut(cut)).unwrap_or(Value::Null);
    let parent = t.prev_node.clone();
    let first_of_branch = d.branch_id.is_some() && t.branch_origin.is_some() && t.prev_node == t.branch_origin;
    let (kind, payload) = if let (true, Some(branch)) = (first_of_branch, &d.branch_id) {
        (
            "thought_branched",
            serde_json::json!({ "thought": thought, "parentId": parent, "branchId": branch,
                                "fromThoughtNumber": d.branch_from_thought }),
        )
    } else if d.is_revision {
        (
            "thought_revised",
            serde_json::json!({ "thought": thought, "parentId": parent,
                                "originalThoughtNumber": d.revises_thought }),
        )
    } else {
        (
            "thought_added",
            serde_json::json!({ "thought": thought, "parentId": parent }),
        )
    };
    let mut frames = vec![Frame {
        kind,
        session_id: Some(t.session_id.clone()),
        payload,
    }];
    if d.branch_id.is_none() && !d.next_thought_needed {
        frames.push(Frame {
            kind: "session_ended",
            session_id: Some(t.session_id.clone()),
            payload: serde_json::json!({ "sessionId": t.session_id,
                                         "finalThoughtCount": thought_count.unwrap_or(u64::from(d.thought_number)) }),
        });
    }
    frames
}

/// `session_started` for a session just created.
pub fn session_started(s: &Session) -> Frame {
    Frame {
        kind: "session_started",
        session_id: Some(s.id.clone()),
        payload: serde_json::json!({ "session": ObservatorySession::from(s) }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ThoughtData;

    fn thought(n: u32, branch: Option<&str>, prev: Option<&str>, origin: Option<&str>) -> Thought {
        Thought {
            seq: 1,
            session_id: "s".into(),
            node_id: match branch {
                Some(b) => format!("s:{b}:{n}"),
                None => format!("s:{n}"),
            },
            prev_node: prev.map(str::to_string),
            revises_node: None,
            branch_origin: origin.map(str::to_string),
            data: serde_json::from_value::<ThoughtData>(serde_json::json!({
                "thought": format!("thought {n}"), "thoughtNumber": n, "totalThoughts": n,
                "nextThoughtNeeded": true, "isRevision": false, "timestamp": "2026-12-07T07:00:00.000Z",
                "branchId": branch, "branchFromThought": origin.map(|_| 1),
            }))
            .unwrap(),
        }
    }

    #[test]
    fn a_branch_first_thought_is_branched_and_the_next_added() {
        let first = (thought(2, Some("alt"), Some("s:1"), Some("s:1")), 9);
        let frames = thought_frames(&first, None);
        assert_eq!(frames[0].kind, "thought_branched");
        assert_eq!(frames[0].payload["branchId"], "alt");
        assert_eq!(frames[0].payload["fromThoughtNumber"], 1);
        assert_eq!(frames[0].payload["parentId"], "s:1");
        assert!(frames[0].payload["thought"].get("thoughtTruncated").is_none());
        let second = (thought(3, Some("alt"), Some("s:alt:2"), Some("s:1")), 5000);
        let frames = thought_frames(&second, None);
        assert_eq!(frames[0].kind, "thought_added");
        assert_eq!(frames[0].payload["thought"]["thoughtTruncated"], true);
        assert_eq!(frames[0].payload["thought"]["thoughtChars"], 5000);
    }

    #[test]
    fn a_closing_thought_ends_the_session_and_a_revision_is_revised() {
        let mut last = thought(3, None, Some("s:2"), None);
        last.data.next_thought_needed = false;
        last.data.is_revision = true;
        last.data.revises_thought = Some(1);
        let frames = thought_frames(&(last, 9), Some(3));
        assert_eq!(frames[0].kind, "thought_revised");
        assert_eq!(frames[0].payload["originalThoughtNumber"], 1);
        assert_eq!(frames[1].kind, "session_ended");
        assert_eq!(frames[1].payload["finalThoughtCount"], 3);
    }

    #[test]
    fn a_snapshot_splits_the_main_chain_from_its_branches() {
        let main = [thought(2, None, Some("s:1"), None), thought(1, None, None, None)];
        let branch = thought(2, Some("alt"), Some("s:1"), Some("s:1"));
        let session: Session = serde_json::from_value(serde_json::json!({
            "id": "s", "title": "t", "tags": [], "thoughtCount": 3, "branchCount": 1,
            "createdAt": "2026-12-07T07:00:00.000Z", "updatedAt": "2026-12-07T07:00:00.000Z",
            "lastAccessedAt": "2026-12-07T07:00:00.000Z",
        }))
        .unwrap();
        let snap = SessionSnapshotPayload::of(&session, &[main[0].clone(), main[1].clone(), branch]);
        assert_eq!(
            snap.thoughts.iter().map(|t| t.thought_number).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(snap.branches["alt"].from_thought_number, 1);
        assert_eq!(snap.session.status, "active");
    }
}
