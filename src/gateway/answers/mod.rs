//! The answers of the session operations (`get_state`, `start_new`,
//! `load_context`, `list_sessions`, `cipher`, `thought`, `read_thoughts`,
//! `get_structure`, `session list`, `session resume`), one type each, and
//! those of the other `session` sub-operations (in `session.rs`, re-exported
//! here): a client's fields are read here, in one place, rather than across
//! `json!` blocks. An answer about one session names it in a top-level
//! `sessionId`, the handle an agent passes on its next call.
//!
//! Thoughts are carried as `thought_json` answers them (their ThoughtData
//! fields plus `nodeId`), since [`Preview`](crate::gateway::preview::Preview)
//! cuts their text in place.
//!
//! The answers of the other operations are in the files beside this one,
//! one per family of operations, named by their module.

pub(crate) mod analysis;
pub(crate) mod init;
pub(crate) mod knowledge;
pub(crate) mod models;
pub(crate) mod notebook;
mod session;
pub(crate) mod thread;

pub(crate) use session::{
    DeleteAnswer, ExportAnswer, ExportedToAnswer, NoteHits, PatternHits, SessionGetAnswer, SessionSearchAnswer,
    SessionThoughts,
};

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::domain::{Critique, Session};
use crate::error::{Error, Result};
use crate::gateway::critique::Outcome;
use crate::gateway::preview::Truncated;
use crate::store::{Pick, SessionPage, ThoughtQuery};

/// `answer` as the gateway's call path takes it: every answer is
/// serialized here.
pub(crate) fn to_value(answer: &impl Serialize) -> Result<Value> {
    serde_json::to_value(answer).map_err(|e| Error::Internal(format!("serializing an answer: {e}")))
}

pub(crate) use super::add_note;

/// `get_state`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StateAnswer {
    pub stage: u8,
    pub stage_name: &'static str,
    pub stages_enforced: bool,
    #[serde(flatten)]
    pub active: Active,
    pub available_operations: Vec<&'static str>,
    pub hidden_operations: std::collections::BTreeSet<String>,
    /// `null` when the connection has none.
    pub project: Option<init::ProjectInfo>,
    pub next_step: &'static str,
    pub server: ServerInfo,
    pub database: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_session_cleared: Option<SessionCleared>,
}

/// `get_state`'s `activeSession` (`null` when no session is active), and
/// its id as `sessionId`, the name every answer about a session gives it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Active {
    #[serde(skip_serializing_if = "Option::is_none")]
    session_id: Option<String>,
    active_session: Option<ActiveSession>,
}

impl From<Option<ActiveSession>> for Active {
    fn from(active_session: Option<ActiveSession>) -> Active {
        Active {
            session_id: active_session.as_ref().map(|a| a.id.clone()),
            active_session,
        }
    }
}

/// `get_state`'s `activeSession`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ActiveSession {
    pub id: String,
    pub title: String,
    pub thought_count: u64,
    pub branch_count: u64,
    /// `active` or `completed`.
    pub status: &'static str,
}

#[derive(Debug, Serialize)]
pub(crate) struct ServerInfo {
    pub name: &'static str,
    pub version: &'static str,
}

impl ServerInfo {
    pub(crate) const THIS: ServerInfo = ServerInfo {
        name: env!("CARGO_PKG_NAME"),
        version: env!("CARGO_PKG_VERSION"),
    };
}

/// The session a connection had active and that no longer exists.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionCleared {
    pub session_id: String,
    pub reason: &'static str,
}

/// `start_new`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StartNewAnswer {
    pub session_id: String,
    pub session: Session,
    pub stage: u8,
    pub message: String,
    pub next_step: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Another session of the same title, which the agent may have meant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub same_title_session_id: Option<String>,
}

/// `load_context` and `session resume`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OpenAnswer {
    pub session_id: String,
    pub session: Session,
    pub recent_thoughts: Vec<Value>,
    pub restoration_info: RestorationInfo,
    pub stage: u8,
    pub next_step: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
    /// The session was completed, and opening it reopened it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reopened: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previously_completed_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// Where an opened session's work stands.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RestorationInfo {
    pub thought_count: u64,
    /// The highest main-chain number (0 when there is none).
    pub current_thought_number: u32,
    pub branch_count: u64,
    /// The branch ids, so that an agent can go on with one at once.
    pub branches: Vec<String>,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_recorded_on_branch: Option<LastOnBranch>,
}

/// The thought recorded last, when it is on a branch.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LastOnBranch {
    pub node_id: String,
    pub branch_id: String,
    pub thought_number: u32,
    /// `null` once the branch is full.
    pub next_thought_number: Option<u32>,
}

/// `list_sessions` and `session list`: a page of sessions.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SessionListAnswer {
    #[serde(flatten)]
    pub page: SessionPage,
    /// The project the list is scoped to, `null` for none.
    pub project: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_projects_total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_status_total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_spellings: Option<BTreeMap<String, Vec<String>>>,
}

/// For a list that matched nothing: the filter's tags that no session or
/// pattern carries in the letter case given, and the spellings they are
/// carried in.
#[derive(Debug, PartialEq)]
pub(crate) struct TagSpellings {
    pub note: String,
    pub other_spellings: BTreeMap<String, Vec<String>>,
}

impl TagSpellings {
    /// `None` when `spelled` holds nothing; `kind` is `session` or `pattern`.
    pub(crate) fn of(kind: &str, spelled: &[(String, Vec<String>)]) -> Option<TagSpellings> {
        if spelled.is_empty() {
            return None;
        }
        let said: Vec<String> = spelled
            .iter()
            .map(|(tag, other)| {
                let other: Vec<String> = other.iter().map(|o| format!("{o:?}")).collect();
                format!("not {tag:?} but {}", other.join(" or "))
            })
            .collect();
        Some(TagSpellings {
            note: format!(
                "no {kind} matches; tags match exactly, letter case too, and {kind}s carry {}: list with that \
                 spelling",
                said.join("; ")
            ),
            other_spellings: spelled.iter().cloned().collect(),
        })
    }
}

/// `cipher`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CipherAnswer {
    pub stage: u8,
    /// The whole guide, unless `brief: true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guide: Option<&'static str>,
    /// Where the guide is read with `brief: true`, and its length.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guide_resource: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guide_bytes: Option<usize>,
    pub next_step: String,
    /// The session that keeps the stage, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// `thought`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThoughtAnswer {
    pub session_id: String,
    pub thought_number: u32,
    pub node_id: String,
    /// With `verbose: true`.
    #[serde(flatten)]
    pub progress: Option<ThoughtProgress>,
    /// With `critique: true`, unless the client is asked by a retry.
    #[serde(flatten)]
    pub critique: Option<CritiqueAnswer>,
    /// No session was active: this thought started one.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub session_created: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_title: Option<String>,
    /// The session this connection closed or lost before the one created.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_session_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub session_closed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub closed_session_id: Option<String>,
    /// The session had been completed elsewhere, and this thought reopened it.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub reopened: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previously_completed_at: Option<String>,
    /// The patterns guide, with `includeGuide: true`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guide: Option<&'static str>,
}

impl ThoughtAnswer {
    /// The answer of the thought `node_id`, numbered `thought_number` in
    /// `session_id`, before anything else is said of it.
    pub(crate) fn new(session_id: String, thought_number: u32, node_id: String) -> ThoughtAnswer {
        ThoughtAnswer {
            session_id,
            thought_number,
            node_id,
            progress: None,
            critique: None,
            session_created: false,
            session_title: None,
            previous_session_id: None,
            note: None,
            session_closed: false,
            closed_session_id: None,
            reopened: false,
            previously_completed_at: None,
            guide: None,
        }
    }
}

/// A thought's answer with `verbose: true`: the fields the TypeScript
/// Thoughtbox answers a verbose thought with, plus `autoNumbered`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThoughtProgress {
    pub total_thoughts: u32,
    pub next_thought_needed: bool,
    pub branches: Vec<String>,
    pub thought_history_length: u64,
    pub auto_numbered: bool,
}

/// What a thought's answer says of its critique.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CritiqueAnswer {
    /// `null` when none was made.
    pub critique: Option<Critique>,
    /// Why none was made, as an ErrorPayload.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub critique_error: Option<Value>,
}

impl CritiqueAnswer {
    /// Nothing when the critique is asked of the client, whose retry of the
    /// call answers it.
    pub(crate) fn of(outcome: Outcome) -> Option<CritiqueAnswer> {
        match outcome {
            Outcome::Made(c) => Some(CritiqueAnswer {
                critique: Some(c),
                critique_error: None,
            }),
            Outcome::Failed(error) => Some(CritiqueAnswer {
                critique: None,
                critique_error: Some(error),
            }),
            Outcome::Asked => None,
        }
    }
}

/// `read_thoughts`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadThoughtsAnswer {
    pub session_id: String,
    pub query: QueryEcho,
    pub count: usize,
    pub thoughts: Vec<Value>,
    /// Branches holding a thought of the number read, which the agent may
    /// have meant.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub also_on_branches: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
}

/// The query `read_thoughts` answered, as the client would have sent it.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "mode", rename_all = "camelCase", rename_all_fields = "camelCase")]
pub(crate) enum QueryEcho {
    ThoughtNumber {
        thought_number: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        branch_id: Option<String>,
    },
    Last {
        last: u32,
        /// Nothing was asked: the last five.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        default: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        branch_id: Option<String>,
    },
    Range {
        range: Span,
        #[serde(skip_serializing_if = "Option::is_none")]
        branch_id: Option<String>,
    },
    /// A whole branch.
    BranchId { branch_id: String },
    /// The whole main chain (the store's; no gateway call asks for it).
    All {},
}

impl QueryEcho {
    /// `query`, asked for (`defaulted` false) or read when nothing was.
    pub(crate) fn of(query: &ThoughtQuery, defaulted: bool) -> QueryEcho {
        let branch_id = query.branch.clone();
        match (query.pick, branch_id) {
            (Pick::Number(n), branch_id) => QueryEcho::ThoughtNumber {
                thought_number: n,
                branch_id,
            },
            (Pick::Last(n), branch_id) => QueryEcho::Last {
                last: n,
                default: defaulted,
                branch_id,
            },
            (Pick::Range(start, end), branch_id) => QueryEcho::Range {
                range: Span { start, end },
                branch_id,
            },
            (Pick::All, Some(branch_id)) => QueryEcho::BranchId { branch_id },
            (Pick::All, None) => QueryEcho::All {},
        }
    }
}

#[derive(Debug, PartialEq, Serialize)]
pub(crate) struct Span {
    pub start: u32,
    pub end: u32,
}

/// The first and last thought numbers of a chain, `null` when it is empty.
#[derive(Debug, Serialize)]
pub(crate) struct Ends {
    pub first: Option<u32>,
    pub last: Option<u32>,
}

/// `get_structure`: the GetStructureResponse shape, plus the specification's
/// other names for the same facts (`totalThoughts`, `branchCount`,
/// `revisionCount`, `mainChain.length/head/tail`), none of which collides.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StructureAnswer {
    pub session_id: String,
    pub main_chain: MainChain,
    pub branches: Vec<BranchShape>,
    pub revisions: Vec<RevisionShape>,
    pub summary: StructureSummary,
    pub total_thoughts: u64,
    pub branch_count: usize,
    pub revision_count: usize,
}

#[derive(Debug, Serialize)]
pub(crate) struct MainChain {
    pub count: u64,
    pub range: Ends,
    /// `count` and the range's ends again, under their other documented
    /// names (docs/gateway.md, `get_structure`).
    pub length: u64,
    pub head: Option<u32>,
    pub tail: Option<u32>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BranchShape {
    pub id: String,
    pub from_thought: u32,
    pub count: u64,
    pub range: Ends,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RevisionShape {
    pub thought_number: u32,
    pub revises: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StructureSummary {
    pub total_thoughts: u64,
    pub total_branches: usize,
    pub total_revisions: usize,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn notes_join_after_what_is_said() {
        for (first, joined) in [("one.", "one. two"), ("one", "one; two")] {
            let mut note = Some(first.to_string());
            add_note(&mut note, "two");
            assert_eq!(note.as_deref(), Some(joined));
        }
        let mut none = None;
        add_note(&mut none, "alone");
        assert_eq!(none.as_deref(), Some("alone"));
    }

    #[test]
    fn the_active_session_is_named_by_its_session_id_too() {
        let active = Active::from(Some(ActiveSession {
            id: "s".into(),
            title: "t".into(),
            thought_count: 2,
            branch_count: 0,
            status: "active",
        }));
        let v = to_value(&active).unwrap();
        assert_eq!(v["sessionId"], "s");
        assert_eq!(v["activeSession"]["id"], "s");
        assert_eq!(to_value(&Active::from(None)).unwrap(), json!({ "activeSession": null }));
    }

    #[test]
    fn a_query_is_echoed_in_the_clients_names() {
        let echo = |q: ThoughtQuery, d: bool| to_value(&QueryEcho::of(&q, d)).unwrap();
        assert_eq!(
            echo(ThoughtQuery::main(Pick::Number(3)), false),
            json!({ "mode": "thoughtNumber", "thoughtNumber": 3 })
        );
        assert_eq!(
            echo(ThoughtQuery::main(Pick::Last(2)), false),
            json!({ "mode": "last", "last": 2 })
        );
        assert_eq!(
            echo(ThoughtQuery::main(Pick::Last(5)), true),
            json!({ "mode": "last", "last": 5, "default": true })
        );
        assert_eq!(
            echo(ThoughtQuery::main(Pick::Range(2, 4)), false),
            json!({ "mode": "range", "range": { "start": 2, "end": 4 } })
        );
        assert_eq!(
            echo(ThoughtQuery::on(Some("alt".into()), Pick::All), false),
            json!({ "mode": "branchId", "branchId": "alt" })
        );
        assert_eq!(
            echo(ThoughtQuery::on(Some("alt".into()), Pick::Range(2, 4)), false),
            json!({ "mode": "range", "range": { "start": 2, "end": 4 }, "branchId": "alt" })
        );
    }

    #[test]
    fn a_thought_answer_says_only_what_happened() {
        let answer = ThoughtAnswer::new("s".into(), 2, "n".into());
        assert_eq!(
            to_value(&answer).unwrap(),
            json!({ "sessionId": "s", "thoughtNumber": 2, "nodeId": "n" })
        );
    }

    #[test]
    fn a_failed_critique_is_null_beside_its_error() {
        let mut answer = ThoughtAnswer::new("s".into(), 1, "n".into());
        answer.critique = CritiqueAnswer::of(Outcome::Failed(json!({ "code": "SAMPLING_NOT_SUPPORTED" })));
        let v = to_value(&answer).unwrap();
        assert_eq!(v["critique"], Value::Null);
        assert_eq!(v["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED");
        assert!(CritiqueAnswer::of(Outcome::Asked).is_none());
    }

    #[test]
    fn tag_spellings_name_each_tag_and_its_other_spellings() {
        assert_eq!(TagSpellings::of("session", &[]), None);
        let said = TagSpellings::of("pattern", &[("Q3".into(), vec!["q3".into()])]).unwrap();
        assert!(said.note.starts_with("no pattern matches;"), "{}", said.note);
        assert!(said.note.contains(r#"not "Q3" but "q3""#), "{}", said.note);
        assert_eq!(said.other_spellings["Q3"], vec!["q3".to_string()]);
    }
}
