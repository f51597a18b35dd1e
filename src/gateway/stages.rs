//! The staged flow: which operation needs which stage (`OPERATIONS`), and
//! the gate that compares it with the connection's stage and the stage of
//! the session a call acts on (CONTRACT section 2, decision 0002).

use serde_json::{Value, json};

use super::{Args, Gateway, params};
use crate::domain::{SessionId, Stage};
use crate::error::{Error, Result};
use crate::events::{self, EventType};

/// Every operation, the stage it needs, and what it does. Their parameters
/// are the types of [`params`], from which the tool's input schema is made.
pub const OPERATIONS: &[(&str, Stage, &str)] = &[
    (
        "get_state",
        Stage::Entry,
        "Where this connection stands, or the session sessionId names: stage, session, what to call next.",
    ),
    (
        "start_new",
        Stage::Entry,
        "Create a session and make it current; answers its sessionId.",
    ),
    (
        "load_context",
        Stage::Entry,
        "Resume a session by sessionId: the session, its last 5 thoughts and where numbering goes on.",
    ),
    (
        "list_sessions",
        Stage::Entry,
        "List sessions, filtered and paged (find an earlier session's id here).",
    ),
    ("navigate", Stage::Entry, "A project's sessions, tasks and aspects."),
    (
        "list_roots",
        Stage::Entry,
        "The client's roots (workspace folders); needs a client with the roots capability.",
    ),
    (
        "bind_root",
        Stage::Entry,
        "Bind one of the client's roots as this connection's project (new sessions get the tag project:<name>).",
    ),
    (
        "cipher",
        Stage::InitComplete,
        "The compact notation guide (~9 KB); unlocks thought, read_thoughts, get_structure, mental_models, \
         knowledge and notebook.",
    ),
    (
        "session",
        Stage::InitComplete,
        "Sessions by subOperation: list, get, search (thought text), resume, export, delete, analyze, \
         extract_learnings, discovery.",
    ),
    (
        "deep_analysis",
        Stage::InitComplete,
        "Reasoning patterns, metrics, insights, cognitive load, decision points and timeline of a session.",
    ),
    (
        "thought",
        Stage::CipherLoaded,
        "Record one reasoning step; nextThoughtNeeded: false on the main chain completes the session.",
    ),
    (
        "read_thoughts",
        Stage::CipherLoaded,
        "Read thoughts back: one, the last n, a range or a branch (default the last 5).",
    ),
    (
        "get_structure",
        Stage::CipherLoaded,
        "A session's shape without text: main chain, branches, revisions.",
    ),
    (
        "mental_models",
        Stage::CipherLoaded,
        "Structured reasoning frameworks by subOperation: get_model, list_models, list_tags.",
    ),
    (
        "knowledge",
        Stage::CipherLoaded,
        "Reusable patterns and scratchpad notes by subOperation: create_pattern, get_pattern, update_pattern, \
         delete_pattern, list_patterns, list_tags, write_scratchpad, read_scratchpad, list_scratchpad, \
         delete_scratchpad, search.",
    ),
    (
        "notebook",
        Stage::CipherLoaded,
        "JavaScript/TypeScript notebooks kept in the ledger, cells run with Node.js in a sandbox, by subOperation: \
         create, list, get, add_cell, update_cell, delete_cell, get_cell, run_cell, install_deps, export, import, delete.",
    ),
    (
        "thread",
        Stage::InitComplete,
        "Sessions as threads of a larger effort by subOperation: spawn (a child session), reference, depend, \
         freeze, archive, update, get, list, tree, log, export, import (the registry JSON).",
    ),
];

pub(super) fn required_stage(operation: &str) -> Option<Stage> {
    OPERATIONS
        .iter()
        .find(|(name, _, _)| *name == operation)
        .map(|(_, s, _)| *s)
}

/// A call without `operation`: the operations, and the name the caller
/// put it under when one of its arguments holds an operation's name
/// (`{"op": "get_state"}`).
pub(super) fn no_operation(arguments: &Args) -> Error {
    let valid: Vec<&str> = OPERATIONS.iter().map(|(n, _, _)| *n).collect();
    let misplaced =
        arguments.unknown_find(|_, v| v.as_str().filter(|op| required_stage(op).is_some()).map(str::to_string));
    let mut details = json!({ "validOperations": valid });
    let mut message = format!("operation is required: one of {}", valid.join(", "));
    if let Some((name, op)) = misplaced {
        message = format!("operation is required; {name:?} holds {op:?}: send it as \"operation\": {op:?}");
        details["didYouMean"] = json!({ "operation": op });
    }
    Error::invalid_with("operation", message, details)
}

impl Gateway {
    pub(crate) fn stage(&self) -> Stage {
        self.with_client(|c| c.state.stage())
    }

    /// Raise the connection's stage (it never goes down); `trigger` is the
    /// operation that caused it, for the `stage_changed` event.
    pub(crate) fn advance(&self, to: Stage, trigger: &str) -> Stage {
        let (rose, now) = self.with_client(|c| (c.state.advance(to), c.state.stage()));
        if let Some((before, now)) = rose {
            tracing::debug!(from = before.number(), to = now.number(), "stage advanced");
            self.emit(EventType::StageChanged, self.active_session().as_deref(), || {
                events::stage_changed(before.number(), now.number(), trigger)
            });
        }
        now
    }

    /// A call passes when its connection or the session it acts on (its
    /// `sessionId`, else the connection's current session) has reached
    /// `required`: an agent returning with its handle on a new connection
    /// does not walk the staged flow again. The session is read when the
    /// connection falls short, or when the handle only admits the call.
    pub(super) async fn check_stage(
        &self,
        operation: &str,
        sub_operation: Option<&str>,
        required: Stage,
        args: &Args,
    ) -> Result<()> {
        let handles = params::find(operation, sub_operation)
            .map_or_else(|| vec!["sessionId", "session_id"], params::Params::handle_names);
        let given = handles.iter().find_map(|k| match args.peek(k) {
            Some(Value::String(id)) if !id.trim().is_empty() => Some(SessionId::new(id)),
            _ => None,
        });
        // As the operations that take a session check their sessionId's type.
        if given.is_none()
            && let Some(v) = handles.iter().find_map(|k| args.peek(k))
            && !v.is_string()
            && params::admission_only_handle(operation, sub_operation)
        {
            return Err(Error::invalid(
                "sessionId",
                format!(
                    "sessionId must be a session's id (a string), got {}; nothing was done",
                    crate::domain::json_kind(v)
                ),
            ));
        }
        // The handle is a parameter of every staged operation (the schema
        // lists it), so it is never reported ignored, whoever admits the call.
        if given.is_some() && required > Stage::Entry {
            args.mark_all_read(&handles);
        }
        let connection = self.stage();
        if !self.options.stages || connection >= required {
            // A handle that only admits the call names a session all the
            // same, whoever admits it: one that names none is refused alike.
            if let Some(id) = given.filter(|_| params::admission_only_handle(operation, sub_operation)) {
                let id = id.into_string();
                let sid = id.clone();
                if self.blocking(move |s| s.session_stage(&sid)).await?.is_none() {
                    return Err(Error::session_not_found(id));
                }
            }
            return Ok(());
        }
        let named = given.map(SessionId::into_string);
        // A stateless request has no connection to walk the staged flow,
        // and an operation on no session (models, knowledge, lists) no
        // session whose stage to read: it passes, as it would once any
        // session of the agent's had the guide.
        if named.is_none() && self.stateless() && params::admission_only_handle(operation, sub_operation) {
            return Ok(());
        }
        if named.is_none() && self.stateless() {
            // The stage is the session's, and only a handle names one.
            return Err(Error::invalid_with(
                "sessionId",
                format!(
                    "this request is stateless (MCP 2026-07-28 over HTTP): there is no current session, and \
                     '{operation}' needs stage {required}, which a session reaches, not a request: pass sessionId, \
                     the handle that start_new returned, of a session at stage {required} (cipher with that \
                     sessionId raises it); nothing was done",
                    required = required.number(),
                ),
                json!({ "requiredStage": required.number(), "currentStage": connection.number() }),
            ));
        }
        let mut current = connection;
        let named_here = named.is_some();
        if let Some(id) = named.or_else(|| self.active_session()) {
            let sid = id.clone();
            match self.blocking(move |s| s.session_stage(&sid)).await {
                Ok(Some(session)) if session >= required => return Ok(()),
                Ok(Some(session)) => current = current.max(session),
                // A handle naming no session is that, not a stage to reach
                // (the edge adds the sessions it may mean).
                Ok(None) if named_here => return Err(Error::session_not_found(id)),
                _ => {}
            }
        }
        Err(Error::StageRequirementNotMet {
            operation: operation.to_string(),
            current: current.number(),
            required: required.number(),
            suggestion: current.path_to(required),
        })
    }

    /// The stage of session `id` just opened on this connection (by
    /// `start_new`, `load_context`, `session resume`, named `trigger`):
    /// the session is raised to the connection's stage when `write` (a
    /// read-only open writes nothing), the connection to the session's,
    /// and the higher of the two is answered, so that the answer and
    /// `get_state` agree once the session is closed.
    pub(crate) async fn settle_session_stage(&self, id: &str, write: bool, trigger: &str) -> Stage {
        let connection = self.stage();
        let sid = id.to_string();
        let session = match self.blocking(move |s| s.session_stage(&sid)).await {
            Ok(Some(stage)) => stage,
            _ => return connection,
        };
        if session > connection {
            self.advance(session, trigger);
        }
        if write && session < connection && !self.read_only() {
            let sid = id.to_string();
            // The stage only spares a later connection the guide: a ledger
            // that cannot be written now costs the agent a cipher call, not
            // this answer.
            match self.write(move |s| s.raise_session_stage(&sid, connection)).await {
                Ok(_) => self.wrote(),
                Err(e) => tracing::warn!("could not record session {id}'s stage: {e}"),
            }
        }
        session.max(connection)
    }
}
