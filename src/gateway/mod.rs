//! The `thoughtbox_gateway` MCP tool: one tool, `{ operation, args }`,
//! routed to the operations below after the connection's stage is checked.
//! Successes answer the response JSON (as text and as structuredContent);
//! failures answer `isError: true` with an ErrorPayload. Protocol types stay
//! in this module; everything below it works with the domain and the store.

mod analysis_ops;
mod args;
mod critique;
mod init_ops;
mod knowledge_ops;
mod models_ops;
mod mrtr;
mod ops;
pub mod params;
mod preview;
mod resources;
mod session_ops;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

pub use args::Args;

use crate::domain::{ConnectionState, Stage};
use crate::error::{Error, Result};
use crate::events::{self, EventType, Events};
use crate::memory::{LARGE_ANSWER, Release};
use crate::serve::{ServeOptions, WriteSignal};
use crate::store::Store;
use crate::store::cancel::Cancel;
use crate::writer::Writer;

/// The one tool's name.
pub const TOOL_NAME: &str = "thoughtbox_gateway";

/// Every operation, the stage it needs, and what it does. Their parameters
/// are the types of [`params`], from which the tool's input schema is made.
pub const OPERATIONS: &[(&str, Stage, &str)] = &[
    (
        "get_state",
        Stage::Entry,
        "Where this connection stands: stage, current session, what to call next.",
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
        "The compact notation guide (~9 KB); unlocks thought, read_thoughts, get_structure, mental_models and \
         knowledge.",
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
];

fn required_stage(operation: &str) -> Option<Stage> {
    OPERATIONS
        .iter()
        .find(|(name, _, _)| *name == operation)
        .map(|(_, s, _)| *s)
}

/// A client root bound as the connection's project.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BoundRoot {
    pub uri: String,
    pub name: String,
}

/// One MCP connection's state: the stage and current session (see
/// [`ConnectionState`]), and what this protocol layer adds to them.
#[derive(Debug, Default)]
pub(crate) struct Connection {
    pub state: ConnectionState,
    pub root: Option<BoundRoot>,
    /// Optional operations hidden with `session discovery`.
    pub hidden: BTreeSet<String>,
}

/// The MCP server handler. One per connection (stdio: one per process).
#[derive(Clone)]
pub struct Gateway {
    pub(crate) store: Store,
    pub(crate) options: ServeOptions,
    pub(crate) conn: Arc<Mutex<Connection>>,
    pub(crate) events: Arc<Events>,
    writes: Arc<WriteSignal>,
    writer: Writer,
    tool: Arc<Tool>,
    /// Held by the operations that read and then set the active session
    /// (`thought`, `start_new`, `load_context`, `session resume`) from the
    /// moment they read it until they have set it: a client that sends
    /// them without waiting for each answer gets them in the order sent.
    session_order: Arc<tokio::sync::Mutex<()>>,
    /// See [`Gateway::heavy`].
    heavy: Arc<tokio::sync::Semaphore>,
    /// Told when heavy work ends (see [`crate::memory`]).
    release: Arc<Release>,
}

/// How many heavy reads run at once: two of the blocking pool's eight
/// threads stay for everything else.
const HEAVY_READS: usize = 6;

/// The tool, listing the operations not in `hidden`: the description says
/// how to use it, the input schema gives each operation's parameters.
fn tool_definition(hidden: &BTreeSet<String>) -> Tool {
    let mut description = String::from(
        "Thoughtbox: a durable reasoning ledger. Every thought you record is stored, linked to the thoughts before it, \
         searchable and exportable. Call with { \"operation\": <name>, \"args\": { ... } }; each operation's args \
         (types, required ones) are in the input schema at $defs.<operation>, or $defs.<operation>.<subOperation>.\n\
         Flow: start_new (new session) or load_context (resume) -> cipher -> thought ... with nextThoughtNeeded: false \
         to finish. An agent that has read the cipher guide before calls cipher with { \"brief\": true }, which \
         unlocks the same without it.\n\
         Sessions are handles: every answer about a session carries its sessionId; pass that sessionId back on later \
         calls about the session (thought, read_thoughts, session ...). Several conversations may share one server \
         process, so do not rely on the connection's current session.\n\
         Operations (minimum stage in brackets):\n",
    );
    for (name, stage, what) in OPERATIONS.iter().filter(|(n, _, _)| !hidden.contains(*n)) {
        description.push_str(&format!("- {name} [{}]: {what}\n", stage.number()));
    }
    let schema = params::input_schema(|operation| !hidden.contains(operation));
    Tool::new(TOOL_NAME, description, Arc::new(schema))
        .with_title("Thoughtbox reasoning ledger")
        .annotate(
            ToolAnnotations::new()
                .read_only(false)
                .destructive(true)
                .idempotent(false)
                .open_world(false),
        )
}

impl Gateway {
    pub fn new(
        store: Store,
        writer: Writer,
        options: ServeOptions,
        writes: Arc<WriteSignal>,
        release: Arc<Release>,
    ) -> Gateway {
        // The ledger's `disableThoughtLogging` keeps thought text out of the event stream.
        let quiet_text = crate::store::thought_logging_disabled(store.config_value("disableThoughtLogging"));
        Gateway {
            writer,
            store,
            events: Arc::new(Events::new(options.events.clone()).without_thought_text(quiet_text)),
            options,
            conn: Arc::new(Mutex::new(Connection::default())),
            writes,
            tool: Arc::new(tool_definition(&BTreeSet::new())),
            session_order: Arc::default(),
            heavy: Arc::new(tokio::sync::Semaphore::new(HEAVY_READS)),
            release,
        }
    }

    /// Wait for the operations before this one that read and set the
    /// active session (see `session_order`), and hold them off until the
    /// guard is dropped.
    pub(crate) async fn session_order(&self) -> tokio::sync::OwnedMutexGuard<()> {
        self.session_order.clone().lock_owned().await
    }

    /// Write an event to the event stream (when one is configured).
    pub(crate) fn emit(&self, kind: EventType, session_id: Option<&str>, data: impl FnOnce() -> Value) {
        self.events.emit(kind, session_id, data);
    }

    /// Run a read (which may take long: whole sessions, exports, analyses)
    /// off the async runtime, on the blocking thread pool, so that it never
    /// stalls this connection's other requests, pings or cancellations.
    /// Writes go through [`Gateway::write`].
    pub(crate) async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.on_blocking_pool(REQUEST_CANCEL.try_with(Arc::clone).ok(), f).await
    }

    /// [`Gateway::blocking`] for a read whose cost grows with a whole
    /// session or the whole ledger (analyses, exports, a session read whole,
    /// searches): at most [`HEAVY_READS`] run at once, so that the blocking
    /// pool always has threads for the quick reads (`get_state`, one page of
    /// a list, the last thoughts) of a client that sent hundreds of heavy
    /// ones without waiting (review 13-d: `get_state` waited 24 s behind
    /// 300 analyses).
    pub(crate) async fn heavy<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let _permit = self.heavy_permit().await?;
        let _heavy = self.release.heavy_work();
        self.blocking(f).await
    }

    /// One of the [`HEAVY_READS`] places, for as long as it is held.
    async fn heavy_permit(&self) -> Result<tokio::sync::SemaphorePermit<'_>> {
        self.heavy
            .acquire()
            .await
            .map_err(|e| Error::Internal(format!("heavy reads: {e}")))
    }

    /// [`Gateway::blocking`] for work that writes files (an export into a
    /// directory): like a write, a client's cancel does not stop it, since
    /// stopping would leave the files half-updated.
    pub(crate) async fn blocking_to_end<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let _permit = self.heavy_permit().await?;
        let _heavy = self.release.heavy_work();
        self.on_blocking_pool(None, f).await
    }

    /// Run `f` on the blocking pool, its reads stopped when `cancel` fires.
    async fn on_blocking_pool<T: Send + 'static>(
        &self,
        cancel: Option<Arc<Cancel>>,
        f: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let store = self.store.clone();
        let scope = cancel.clone();
        let answer = tokio::task::spawn_blocking(move || match scope {
            Some(scope) => scope.scope(|| f(&store)),
            None => f(&store),
        })
        .await
        .map_err(|e| Error::Internal(format!("storage task failed: {e}")))?;
        match answer {
            Err(e) if e.is_interrupted() && cancel.is_some_and(|c| c.fired()) => {
                // The snapshot it held may have kept the idle checkpoint
                // from emptying the WAL: let it try again soon.
                self.wrote();
                Err(Error::Cancelled)
            }
            answer => answer,
        }
    }

    /// Run a write (a thought append, a session or knowledge change) on the
    /// ledger writer thread, off the async runtime. Unlike the blocking pool
    /// it hands work over without putting either thread to sleep during a
    /// burst (see [`crate::writer`]): the pool's two wake-ups per call cost more
    /// than the append itself (3,900 against 6,450 thoughts/s measured).
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        changed_something();
        self.writer.run(f).await
    }

    /// Tell the maintenance task that something was written.
    pub(crate) fn wrote(&self) {
        self.writes.wrote();
    }

    pub(crate) fn with_conn<T>(&self, f: impl FnOnce(&mut Connection) -> T) -> T {
        let mut guard = match self.conn.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    pub(crate) fn stage(&self) -> Stage {
        self.with_conn(|c| c.state.stage())
    }

    /// Raise the connection's stage (it never goes down); `trigger` is the
    /// operation that caused it, for the `stage_changed` event.
    pub(crate) fn advance(&self, to: Stage, trigger: &str) -> Stage {
        let (rose, now) = self.with_conn(|c| (c.state.advance(to), c.state.stage()));
        if let Some((before, now)) = rose {
            tracing::debug!(from = before.number(), to = now.number(), "stage advanced");
            self.emit(EventType::StageChanged, self.active_session().as_deref(), || {
                events::stage_changed(before.number(), now.number(), trigger)
            });
        }
        now
    }

    /// The connection's current session (see [`ConnectionState::current`]).
    pub(crate) fn active_session(&self) -> Option<String> {
        self.with_conn(|c| c.state.current().map(str::to_string))
    }

    /// `id` was started, loaded, resumed or written to.
    pub(crate) fn set_active_session(&self, id: String) {
        self.with_conn(|c| c.state.open(id));
    }

    /// The session `id` was closed by `nextThoughtNeeded: false`.
    pub(crate) fn close_active_session(&self, id: &str) {
        self.with_conn(|c| c.state.close(id.to_string()));
    }

    /// The session closed on this connection, if none has been opened since.
    pub(crate) fn closed_session(&self) -> Option<String> {
        self.with_conn(|c| c.state.closed().map(str::to_string))
    }

    /// `id` was deleted through this connection.
    pub(crate) fn session_deleted_here(&self, id: &str) {
        self.with_conn(|c| c.state.deleted_here(id));
    }

    /// The current session, if still `id`, was found deleted elsewhere.
    pub(crate) fn clear_active_session_if(&self, id: &str) {
        self.with_conn(|c| c.state.found_deleted(id));
    }

    /// The current session found deleted, if none has been opened since.
    pub(crate) fn deleted_session(&self) -> Option<String> {
        self.with_conn(|c| c.state.deleted().map(str::to_string))
    }

    /// A call passes when its connection or the session it acts on (its
    /// `sessionId`, else the connection's current session) has reached
    /// `required`: an agent returning with its handle on a new connection
    /// does not walk the staged flow again. The session is read only when
    /// the connection falls short.
    async fn check_stage(&self, operation: &str, required: Stage, args: &Args) -> Result<()> {
        let connection = self.stage();
        if !self.options.stages || connection >= required {
            return Ok(());
        }
        let named = ["sessionId", "session_id"].iter().find_map(|k| match args.peek(k) {
            Some(Value::String(id)) if !id.trim().is_empty() => Some(crate::domain::canonical_session_id(id)),
            _ => None,
        });
        let mut current = connection;
        if let Some(id) = named.or_else(|| self.active_session())
            && let Ok(Some(session)) = self.blocking(move |s| s.session_stage(&id)).await
        {
            if session >= required {
                return Ok(());
            }
            current = current.max(session);
        }
        Err(Error::StageRequirementNotMet {
            operation: operation.to_string(),
            current: current.number(),
            required: required.number(),
            suggestion: current.path_to(required),
        })
    }

    /// The stage of session `id` just opened on this connection (by
    /// `start_new`, `load_context`, `session resume`): the session is
    /// raised to the connection's stage when `write` (a read-only open
    /// writes nothing), and the higher of the two is answered.
    pub(crate) async fn settle_session_stage(&self, id: &str, write: bool) -> Stage {
        let connection = self.stage();
        let sid = id.to_string();
        let session = match self.blocking(move |s| s.session_stage(&sid)).await {
            Ok(Some(stage)) => stage,
            _ => return connection,
        };
        if write && session < connection {
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

    /// Parse, gate and run one gateway call.
    pub async fn call(
        &self,
        arguments: Option<Map<String, Value>>,
        ctx: Option<&RequestContext<RoleServer>>,
    ) -> std::result::Result<Value, Refused> {
        let names = argument_names(arguments.as_ref());
        let (operation, required, args) = self.parse_call(arguments).map_err(|error| Refused {
            error,
            received: Some(names),
        })?;
        let usage = args.usage();
        #[cfg(debug_assertions)]
        let sub_operation = params::has_sub_operations(&operation)
            .then(|| {
                let keys: &[&str] = if operation == "knowledge" {
                    &["subOperation", "operation", "action"]
                } else {
                    &["subOperation", "operation"]
                };
                args.peek_sub_operation(keys)
            })
            .flatten();
        let run = async {
            if self.with_conn(|c| c.hidden.contains(&operation)) {
                return Err(Error::InvalidOperation {
                    message: format!(
                        "operation {operation:?} is hidden on this connection; session discovery with action \"show\" brings it back"
                    ),
                    details: Some(json!({ "operation": operation, "hidden": true })),
                });
            }
            self.check_stage(&operation, required, &args).await?;
            self.dispatch(&operation, args, ctx).await
        };
        let mut answer = match run.await {
            Ok(answer) => answer,
            Err(error) => {
                return Err(Refused {
                    error,
                    received: Some(usage.given()),
                });
            }
        };
        // Debug builds (the tests, which run every operation) check that the
        // operation reads no name its parameter type lacks: the schema and
        // the misspelling check come from those types.
        #[cfg(debug_assertions)]
        if let Some(k) = usage
            .asked()
            .into_iter()
            .find(|k| params::takes(&operation, sub_operation.as_deref(), k) == Some(false))
        {
            let at = sub_operation.as_deref().map(|s| format!(" {s}")).unwrap_or_default();
            return Err(Refused {
                error: Error::Internal(format!(
                    "{operation}{at} reads {k:?}, which its parameter type in gateway::params lacks"
                )),
                received: None,
            });
        }
        let ignored: Vec<String> = usage.unread();
        if !ignored.is_empty()
            && let Value::Object(fields) = &mut answer
        {
            let (named, more) = ignored_shown(&ignored);
            tracing::debug!(operation, ignored = ?named, more, "arguments ignored");
            fields.insert("ignoredArguments".into(), json!(named));
            if more > 0 {
                fields.insert("ignoredArgumentsMore".into(), json!(more));
            }
        }
        Ok(answer)
    }

    /// The operation of a gateway call, the stage it needs, its arguments,
    /// and those of its arguments given twice (taken from `args`).
    fn parse_call(&self, arguments: Option<Map<String, Value>>) -> Result<(String, Stage, Args)> {
        let mut arguments = Args::new(arguments.unwrap_or_default());
        let operation = match arguments.get("operation") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(Error::invalid(
                    "operation",
                    format!("operation must be a string, got {other}"),
                ));
            }
            None => return Err(Error::invalid("operation", "operation is required")),
        };
        let Some(required) = required_stage(&operation) else {
            let valid: Vec<&str> = OPERATIONS.iter().map(|(n, _, _)| *n).collect();
            // In TOOL-INTERFACES, but not built yet: say so, rather than
            // "unknown", so that a client following the seed knows why.
            if operation == "notebook" {
                return Err(Error::InvalidOperation {
                    message: "notebooks are not available in this version of thoughtbox yet (they are planned)".into(),
                    details: Some(json!({ "operation": operation, "available": false, "validOperations": valid })),
                });
            }
            return Err(unknown_name(
                "operation",
                &operation,
                &valid,
                ("operation", "validOperations"),
            ));
        };
        arguments.remove("operation");
        // `args` holds the parameters; clients that put them beside
        // `operation` instead are understood too, and so are both at once
        // (seed 003 writes `{ operation, subOperation, args }`). A parameter
        // given in both places with the same value is that value; with two
        // values the call contradicts itself and is refused, as one given
        // flat and nested is (`subOperation: "get"` beside `args:
        // { subOperation: "delete" }` must not delete).
        let args = match arguments.remove("args") {
            Some(v) => {
                let mut args = Args::from_value("args", Some(&v))?;
                for key in arguments.unread() {
                    let Some(value) = arguments.remove(&key) else {
                        continue;
                    };
                    match args.peek(&key) {
                        None => args.insert(key, value),
                        Some(same) if *same == value => {}
                        Some(other) => {
                            let message = format!(
                                "{key} is given twice with different values, beside operation ({}) and in args ({}): \
                                 give it once",
                                clip(&value.to_string()),
                                clip(&other.to_string())
                            );
                            return Err(if matches!(key.as_str(), "subOperation" | "operation" | "action") {
                                Error::InvalidOperation {
                                    message,
                                    details: Some(json!({ "field": key })),
                                }
                            } else {
                                Error::invalid(key, message)
                            });
                        }
                    }
                }
                args
            }
            None => arguments,
        };
        args.check_spelling(
            matches!(operation.as_str(), "session" | "knowledge" | "mental_models"),
            operation == "thought",
        )?;
        Ok((operation, required, args))
    }

    async fn dispatch(&self, operation: &str, args: Args, ctx: Option<&RequestContext<RoleServer>>) -> Result<Value> {
        match operation {
            "get_state" => ops::get_state(self).await,
            "start_new" => ops::start_new(self, args).await,
            "load_context" => ops::load_context(self, args).await,
            "list_sessions" => ops::list_sessions(self, args).await,
            "navigate" => init_ops::navigate(self, args).await,
            "list_roots" => init_ops::list_roots(self, ctx).await,
            "bind_root" => init_ops::bind_root(self, args, ctx).await,
            "cipher" => ops::cipher(self, args).await,
            "session" => session_ops::session(self, args, ctx).await,
            "deep_analysis" => analysis_ops::deep_analysis(self, args).await,
            "thought" => ops::thought(self, args, ctx).await,
            "read_thoughts" => ops::read_thoughts(self, args).await,
            "get_structure" => ops::get_structure(self, args).await,
            "mental_models" => models_ops::mental_models(self, args).await,
            "knowledge" => knowledge_ops::knowledge(self, args).await,
            other => Err(Error::operation(format!("unknown operation {other:?}"))),
        }
    }
}

/// `unknown {what} "given"`, naming the valid names under `keys.1` and,
/// when `given` misspells one of them ([`args::name_meant`]: `startNew`,
/// `readThoughts`), that one as `didYouMean` (review 19-a: only the list
/// was given).
pub(crate) fn unknown_name(what: &str, given: &str, valid: &[&'static str], keys: (&str, &str)) -> Error {
    let meant = args::name_meant(given, valid);
    let mut details = json!({ keys.0: given, keys.1: valid });
    let mut message = format!("unknown {what} {given:?}");
    if let Some(m) = meant {
        details["didYouMean"] = json!(m);
        message.push_str(&format!("; did you mean {m:?}? (nothing was done)"));
    }
    Error::InvalidOperation {
        message,
        details: Some(details),
    }
}

impl Gateway {
    /// A session id not found that starts some (an agent shortened it, as
    /// ids are often shown cut) or is one in other case: the answer names
    /// them (`didYouMean` when one, `candidates` up to five), rather than a
    /// bare `SESSION_NOT_FOUND` (review 16-a).
    async fn name_sessions_meant(&self, given: &str, payload: &mut Value) {
        let prefix = given.to_string();
        let Ok(found) = self.blocking(move |s| s.sessions_meant(&prefix, 5)).await else {
            return;
        };
        let by_id = matches!(found, crate::store::SessionsMeant::ByIdStart(_));
        let said = match found.found() {
            [] => return,
            [(id, title)] => {
                payload["details"]["didYouMean"] = json!(id);
                format!("; did you mean {id} ({})?", json!(clip(title)))
            }
            many => {
                payload["details"]["candidates"] = json!(
                    many.iter()
                        .map(|(id, title)| json!({ "sessionId": id, "title": title }))
                        .collect::<Vec<_>>()
                );
                let at_least = if many.len() == 5 { "at least " } else { "" };
                if by_id {
                    format!(
                        "; {at_least}{} sessions have ids starting {}: give the whole id (see details.candidates)",
                        many.len(),
                        given.trim().to_ascii_lowercase()
                    )
                } else {
                    format!(
                        "; {at_least}{} sessions have this title: give the id of the one meant (see \
                         details.candidates)",
                        many.len()
                    )
                }
            }
        };
        if let Some(message) = payload["message"].as_str() {
            payload["message"] = json!(format!("{message}{said}"));
        }
    }
}

/// Names of ignored arguments an answer lists at most, and the characters
/// of each it shows: the names are the client's, and an answer that echoed
/// them whole (one name of a megabyte, or 100,000 names) would be as long
/// (review 17-a).
const MAX_IGNORED_SHOWN: usize = 20;
const MAX_IGNORED_NAME: usize = 64;

/// `ignored` as an answer names it: the first [`MAX_IGNORED_SHOWN`] names,
/// each cut past [`MAX_IGNORED_NAME`] characters (ending `...`), and how
/// many more were ignored.
fn ignored_shown(ignored: &[String]) -> (Vec<String>, usize) {
    let named = ignored
        .iter()
        .take(MAX_IGNORED_SHOWN)
        .map(|k| match k.char_indices().nth(MAX_IGNORED_NAME) {
            Some((at, _)) => format!("{}...", &k[..at]),
            None => k.clone(),
        })
        .collect();
    (named, ignored.len().saturating_sub(MAX_IGNORED_SHOWN))
}

/// A gateway call refused: the error, with the names of the arguments the
/// call carried, so that a client can see what the server received (a
/// misspelt or misplaced field is the commonest cause of an error).
#[derive(Debug)]
pub struct Refused {
    pub error: Error,
    /// Every argument given (flat and nested merged), in name order; `None`
    /// for an error that is not about the call's arguments.
    received: Option<Vec<String>>,
}

impl From<Error> for Refused {
    fn from(error: Error) -> Refused {
        Refused { error, received: None }
    }
}

/// The names of the arguments a call carries, as [`Refused`] lists them
/// when the call is refused before they are read: those beside `operation`
/// and those in `args` (an object, or its JSON text), or `args` itself
/// when it is neither.
fn argument_names(arguments: Option<&Map<String, Value>>) -> Vec<String> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut names = BTreeSet::new();
    for (key, value) in arguments.into_iter().flatten() {
        match key.as_str() {
            "operation" => {}
            // Only the names: this runs for every call, and `args` may hold
            // a thought of a megabyte.
            "args" => match value {
                Value::Null => {}
                Value::Object(m) => names.extend(m.keys().cloned()),
                Value::String(s) => match serde_json::from_str::<BTreeMap<String, serde::de::IgnoredAny>>(s) {
                    Ok(m) => names.extend(m.into_keys()),
                    Err(_) => {
                        names.insert(key.clone());
                    }
                },
                _ => {
                    names.insert(key.clone());
                }
            },
            _ => {
                names.insert(key.clone());
            }
        }
    }
    names.into_iter().collect()
}

impl Refused {
    /// The ErrorPayload; a payload or operation error also names the
    /// arguments received.
    pub fn payload(&self) -> Value {
        let mut payload = self.error.payload();
        let about_arguments = matches!(
            self.error,
            Error::InvalidPayload { .. } | Error::InvalidOperation { .. }
        );
        if about_arguments && let Some(received) = &self.received {
            if !payload["details"].is_object() {
                payload["details"] = json!({});
            }
            if let Some(details) = payload["details"].as_object_mut() {
                details.insert("receivedArguments".into(), json!(received));
            }
        }
        payload
    }
}

impl ServerHandler for Gateway {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
            .with_server_info(
                Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
                    .with_title("Thoughtbox reasoning ledger"),
            )
            .with_instructions(
                "Thoughtbox records your reasoning as a durable ledger. Use the thoughtbox_gateway tool: \
                 get_state to orient; start_new to begin a session (or list_sessions + load_context to resume one); \
                 cipher to load the notation guide; then thought for each reasoning step, with nextThoughtNeeded: false \
                 on the last. read_thoughts and get_structure re-orient you mid-session; session search finds past reasoning; \
                 session analyze and deep_analysis describe how a session went; mental_models offers reasoning frameworks \
                 (also as prompts and resources); knowledge keeps reusable patterns and scratchpad notes.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListToolsResult, McpError> {
        let hidden = self.with_conn(|c| c.hidden.clone());
        let tool = if hidden.is_empty() {
            (*self.tool).clone()
        } else {
            tool_definition(&hidden)
        };
        Ok(ListToolsResult::with_all_items(vec![tool]))
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourcesResult, McpError> {
        let cursor = request.and_then(|r| r.cursor);
        resources::list_resources(self, cursor.as_deref()).await
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListResourceTemplatesResult, McpError> {
        Ok(resources::list_resource_templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<ReadResourceResponse, McpError> {
        cancellable(&context, resources::read_resource(self, &request.uri))
            .await
            .map(Into::into)
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<ListPromptsResult, McpError> {
        Ok(resources::list_prompts())
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<GetPromptResponse, McpError> {
        resources::get_prompt(&request).map(Into::into)
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        (name == TOOL_NAME).then(|| (*self.tool).clone())
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> std::result::Result<CallToolResponse, McpError> {
        if request.name != TOOL_NAME {
            return Err(McpError::invalid_params(
                format!(
                    "unknown tool {:?}; this server has one tool, {TOOL_NAME}",
                    clip(&request.name)
                ),
                None,
            ));
        }
        let (answer, changed) = cancellable(
            &context,
            CHANGED.scope(std::cell::Cell::new(false), async {
                let answer = mrtr::call(self, request, &context).await;
                (answer, CHANGED.with(std::cell::Cell::get))
            }),
        )
        .await;
        let answer = match answer {
            Ok(mrtr::Called::InputRequired(asked)) => return Ok(asked.into()),
            Ok(mrtr::Called::Answer(value)) => Ok(value),
            Err(refused) => Err(refused),
        };
        let result = match answer.and_then(|value| {
            let bytes = message_bytes(&value);
            // Refused for its length or not, it was built.
            if bytes >= LARGE_ANSWER {
                self.release.heavy_work_done();
            }
            fits_one_message(value, bytes, !changed).map_err(Refused::from)
        }) {
            Ok(value) => CallToolResult::structured(value),
            Err(refused) => {
                let e = &refused.error;
                match &e {
                    Error::Cancelled => tracing::info!("gateway call cancelled by the client"),
                    _ if e.is_interrupted() => tracing::info!("gateway call stopped by the shutdown"),
                    Error::Database(_)
                    | Error::CommitUncertain(_)
                    | Error::Pool(_)
                    | Error::Io { .. }
                    | Error::Internal(_) => {
                        tracing::error!("gateway call failed: {e}")
                    }
                    _ => tracing::debug!("gateway call rejected: {e}"),
                }
                let mut payload = refused.payload();
                if let Error::SessionNotFound { session_id } = e {
                    self.name_sessions_meant(session_id, &mut payload).await;
                }
                CallToolResult::structured_error(bounded_error(payload))
            }
        };
        Ok(result.into())
    }

    /// Requests the MCP library could not read as one it knows. For an MCP
    /// method that is a malformed request (JSON-RPC -32602, naming what was
    /// expected), not an unknown method (-32601), which the library would
    /// answer with nothing but the method's name.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> std::result::Result<CustomResult, McpError> {
        let method = request.method;
        let method = clip(&method);
        match crate::stdio::expected_params(&method) {
            Some(expected) => Err(McpError::invalid_params(
                format!("invalid params for {method}: expected {expected}"),
                Some(json!({ "method": method })),
            )),
            None => Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
                Some(json!({ "method": method })),
            )),
        }
    }
}

/// The longest message a tool answer may make. The answer goes out twice
/// in one message, as JSON and as that JSON in a text string (where every
/// `"` and `\\` takes one byte more), and MCP libraries (the Rust one among
/// them) drop a message over 16 MiB without a word, which leaves the agent
/// waiting. A little is left for the envelope.
pub(crate) const MAX_MESSAGE: usize = (16 << 20) - (64 << 10);

/// How many bytes `value` takes in an answer's message, counted up to a
/// little past [`MAX_MESSAGE`] (the count stops there).
fn message_bytes(value: &Value) -> usize {
    /// Counts bytes and the ones escaped again in the text copy, and stops
    /// the serializer once past the limit.
    struct Count {
        bytes: usize,
        escaped: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes += buf.len();
            self.escaped += buf.iter().filter(|&&b| b == b'"' || b == b'\\').count();
            if 2 * self.bytes + self.escaped > MAX_MESSAGE {
                return Err(std::io::Error::other("too long"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { bytes: 0, escaped: 0 };
    let _ = serde_json::to_writer(&mut count, value);
    2 * count.bytes + count.escaped
}

/// Holds the content of an answer while it is rendered, and refuses to grow
/// past what one MCP message could carry: a whole session that is far too
/// long is refused after a few MiB, not after being rendered in full.
#[derive(Default)]
pub(crate) struct AnswerBuffer {
    pub bytes: Vec<u8>,
    pub overflowed: bool,
}

impl std::io::Write for AnswerBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The content goes out at least twice (as text and as structured content).
        if 2 * (self.bytes.len() + buf.len()) > MAX_MESSAGE {
            self.overflowed = true;
            return Err(std::io::Error::other("the answer is too long for one MCP message"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The thought text an answer has read so far, to give up on one that can
/// no longer fit in a message before the rest of its rows are loaded.
#[derive(Default)]
pub(crate) struct TextBudget {
    bytes: usize,
}

impl TextBudget {
    /// Count `t`'s text and critique: [`answer_too_long`] once they alone
    /// (each at least doubled in the answer: text block and structured
    /// content) could not fit.
    pub(crate) fn add(&mut self, t: &crate::domain::Thought) -> Result<()> {
        self.bytes += t.data.thought.len() + t.data.critique.as_ref().map_or(0, |c| c.text.len());
        self.check()
    }

    /// [`TextBudget::add`] for a thought as answered (its text perhaps cut
    /// by a [`preview::Preview`]).
    pub(crate) fn add_answered(&mut self, thought: &Value) -> Result<()> {
        let text = |v: &Value| v.as_str().map_or(0, str::len);
        self.bytes += text(&thought["thought"]) + text(&thought["critique"]["text"]);
        self.check()
    }

    fn check(&self) -> Result<()> {
        if 2 * self.bytes > MAX_MESSAGE {
            return Err(answer_too_long());
        }
        Ok(())
    }
}

/// The refusal of an answer too long for one MCP message.
pub(crate) fn answer_too_long() -> Error {
    Error::InvalidOperation {
        message: "the answer is longer than one MCP message can carry (16 MiB); ask for less: a smaller limit \
                  (with offset for the rest) for a list, read_thoughts with a smaller range or one thoughtNumber, \
                  or session export with a destination directory to write the whole session to files"
            .into(),
        details: Some(json!({ "maxMessageBytes": MAX_MESSAGE })),
    }
}

/// Add `say` to an answer's `note`, after what it already says: two
/// notes of one answer both reach the agent.
pub(crate) fn add_note(out: &mut Value, say: &str) {
    out["note"] = json!(match out["note"].as_str() {
        Some(n) if n.ends_with('.') => format!("{n} {say}"),
        Some(n) => format!("{n}; {say}"),
        None => say.to_string(),
    });
}

/// `text` (a name the client sent) as an error message may repeat it: cut
/// to 200 characters, since a message over 16 MiB would never arrive.
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

tokio::task_local! {
    /// The cancellation of the request running in this task: its reads
    /// ([`Gateway::blocking`]) stop once the client cancels it.
    static REQUEST_CANCEL: Arc<Cancel>;
}

/// Whether the client has cancelled the request running in this task
/// (false outside a request).
pub(crate) fn request_cancelled() -> bool {
    REQUEST_CANCEL.try_with(|c| c.fired()).unwrap_or(false)
}

/// Wait for `call`, a request of ours to the client (sampling, roots):
/// `None` once the request we are handling is cancelled (by the client,
/// or by the shutdown) or the server is stopping, since the client's
/// answer can no longer come or be used (stdin closed: rmcp would otherwise
/// wait up to 5 s for this request's own answer, past a client's SIGKILL).
pub(crate) async fn from_client<T>(
    ctx: &RequestContext<RoleServer>,
    call: impl std::future::Future<Output = T>,
) -> Option<T> {
    tokio::select! {
        answer = call => Some(answer),
        () = ctx.ct.cancelled() => None,
        () = crate::store::cancel::shutdown_begun() => None,
    }
}

/// Run `work`, a request's handling, so that its reads stop when the client
/// cancels the request (`notifications/cancelled`, which fires `ct`).
async fn cancellable<T>(ctx: &RequestContext<RoleServer>, work: impl std::future::Future<Output = T>) -> T {
    let cancel = Cancel::new();
    let work = REQUEST_CANCEL.scope(cancel.clone(), work);
    tokio::pin!(work);
    tokio::select! {
        answer = &mut work => answer,
        () = ctx.ct.cancelled() => {
            // At shutdown the MCP library cancels every request; the
            // shutdown stops their reads itself, and says why.
            if crate::store::cancel::shutting_down() {
                return work.await;
            }
            tracing::info!(id = %ctx.id, "the client cancelled its request: stopping its reads");
            cancel.fire();
            // Reads end at once; a write already handed over is finished
            // (MCP lets a cancelled request complete).
            work.await
        }
    }
}

tokio::task_local! {
    /// Whether the tool call running in this task has changed something
    /// (written to the ledger, or written files): its answer is then never
    /// refused for its length, since a retry would do it again.
    static CHANGED: std::cell::Cell<bool>;
}

/// Note that the tool call running in this task changes something (a no-op
/// outside a tool call).
pub(crate) fn changed_something() {
    let _ = CHANGED.try_with(|changed| changed.set(true));
}

/// Make sure an answer fits in one MCP message. (`load_context` and
/// `session resume` always fit: their recent thoughts are cut by
/// [`preview::Preview`].)
/// - A call that changed something (`read_only` false) keeps its
///   short top-level fields and names the ones left out.
/// - A call that only read is refused, saying how to ask for less.
///
/// `bytes`: the answer's [`message_bytes`].
fn fits_one_message(mut value: Value, bytes: usize, read_only: bool) -> Result<Value> {
    if bytes <= MAX_MESSAGE {
        return Ok(value);
    }
    if !read_only && let Value::Object(fields) = &mut value {
        let long: Vec<String> = fields
            .iter()
            .filter(|(_, v)| message_bytes(v) > 64 << 10)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &long {
            fields.remove(key);
        }
        let note = json!({
            "omittedFields": long,
            "reason": "the whole answer is too long for one MCP message; what was asked was done: read it back in parts",
        });
        fields.insert("answerShortened".into(), note.clone());
        if message_bytes(&value) > MAX_MESSAGE {
            // Many fields, each short: keep only the note.
            return Ok(json!({ "answerShortened": note }));
        }
        return Ok(value);
    }
    Err(answer_too_long())
}

/// An error's payload, kept short: a message that repeats a long input (an
/// unknown operation name of megabytes, a session id of thousands of
/// characters) is cut past [`MAX_ERROR_MESSAGE`] characters, and strings in
/// its details past [`MAX_DETAIL`]; the details themselves (`field`, the
/// stage a call needs) stay.
fn bounded_error(mut payload: Value) -> Value {
    if let Some(message) = payload["message"].as_str()
        && message.chars().nth(MAX_ERROR_MESSAGE).is_some()
    {
        let cut: String = message.chars().take(MAX_ERROR_MESSAGE).collect();
        payload["message"] = json!(format!("{cut}... (cut: the message repeated a long input)"));
    }
    if let Some(details) = payload.get_mut("details") {
        clip_strings(details);
    }
    // Details of many entries, each short: a last resort.
    if message_bytes(&payload) > 64 << 10
        && let Value::Object(fields) = &mut payload
        && let Some(Value::Object(details)) = fields.get_mut("details")
    {
        details.retain(|k, _| k == "field");
    }
    payload
}

/// Characters of an error message kept (our own messages are far shorter).
const MAX_ERROR_MESSAGE: usize = 1000;
/// Characters of each string in an error's details kept.
const MAX_DETAIL: usize = 200;

/// Details that are the server's own text, never a repeated input: kept
/// whole (a stage error's suggestion was cut mid-word, review 16-a).
const OWN_DETAILS: &[&str] = &["suggestion"];

fn clip_strings(value: &mut Value) {
    match value {
        Value::String(s) if s.chars().nth(MAX_DETAIL).is_some() => *s = clip(s),
        Value::Array(items) => items.iter_mut().for_each(clip_strings),
        Value::Object(fields) => fields
            .iter_mut()
            .filter(|(k, _)| !OWN_DETAILS.contains(&k.as_str()))
            .for_each(|(_, v)| clip_strings(v)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_call_that_writes_is_marked_and_nothing_else_is() {
        // Outside a tool call it does nothing (and does not panic).
        changed_something();
        let marked = |write: bool| {
            CHANGED.scope(std::cell::Cell::new(false), async move {
                tokio::task::yield_now().await;
                if write {
                    changed_something();
                }
                tokio::task::yield_now().await;
                CHANGED.with(std::cell::Cell::get)
            })
        };
        assert!(marked(true).await);
        assert!(!marked(false).await);
    }

    #[test]
    fn an_answer_of_many_short_fields_still_fits() {
        let mut fields = serde_json::Map::new();
        for i in 0..400 {
            fields.insert(format!("f{i}"), json!("\"".repeat(40 << 10)));
        }
        let fields = Value::Object(fields);
        let answer = fits_one_message(fields.clone(), message_bytes(&fields), false).unwrap();
        assert!(message_bytes(&answer) <= MAX_MESSAGE);
        assert!(answer.get("answerShortened").is_some());
    }

    #[test]
    fn only_calls_that_read_are_refused_for_a_long_answer() {
        let long = "\"".repeat(6 << 20);
        // A thought with a huge critique: it was recorded, so it answers
        // without the long field, and says so.
        let answer = json!({ "sessionId": "s", "thoughtNumber": 3, "critique": { "text": long } });
        let shortened = fits_one_message(answer.clone(), message_bytes(&answer), false).unwrap();
        assert_eq!(shortened["thoughtNumber"], 3);
        assert!(shortened.get("critique").is_none());
        assert_eq!(shortened["answerShortened"]["omittedFields"], json!(["critique"]));
        // A read of the same size is refused, saying how to ask for less.
        let err = fits_one_message(answer.clone(), message_bytes(&answer), true).unwrap_err();
        assert_eq!(err.code(), "INVALID_OPERATION");
        assert!(err.to_string().contains("read_thoughts"));
        // Short answers pass untouched either way.
        let small = json!({ "thoughtNumber": 1 });
        assert_eq!(
            fits_one_message(small.clone(), message_bytes(&small), true).unwrap(),
            small
        );
        assert_eq!(clip(&"x".repeat(1 << 20)).len(), 203);
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn an_error_that_repeats_a_long_input_is_cut() {
        let e = Error::operation(format!("unknown operation {:?}", "\"".repeat(1 << 20)));
        let payload = bounded_error(e.payload());
        assert_eq!(payload["code"], "INVALID_OPERATION");
        assert!(payload["message"].as_str().unwrap().len() < 1200);
        assert!(payload.get("details").is_none());
        // Review 9-a: 30,000 characters were repeated whole, and past 64 KiB
        // the details (with `field`) went.
        for long in [30_000, 40_000] {
            let e = Error::invalid_with(
                "last",
                format!("last must be a whole number, got {:?}", "z".repeat(long)),
                json!({ "got": "z".repeat(long), "valid": ["a", "b"] }),
            );
            let payload = bounded_error(e.payload());
            assert!(payload["message"].as_str().unwrap().len() < 1100, "{long}");
            assert_eq!(payload["details"]["field"], "last");
            assert_eq!(payload["details"]["valid"], json!(["a", "b"]));
            assert!(payload["details"]["got"].as_str().unwrap().len() < 210);
        }
        let gone = bounded_error(Error::session_not_found("x".repeat(10_000)).payload());
        assert!(gone.to_string().len() < 1500, "{gone}");
        assert_eq!(gone["code"], "SESSION_NOT_FOUND");
        let short = Error::operation("unknown operation \"x\"").payload();
        assert_eq!(bounded_error(short.clone()), short);
    }
}
