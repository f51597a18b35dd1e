//! The `thoughtbox_gateway` MCP tool: one tool, `{ operation, args }`,
//! routed to the operations below after the connection's stage is checked.
//! Successes answer the response JSON (as text and as structuredContent);
//! failures answer `isError: true` with an ErrorPayload. Protocol types stay
//! in this module; everything below it works with the domain and the store.

mod analysis_ops;
mod answers;
mod args;
mod critique;
mod handler;
mod init_ops;
mod knowledge_ops;
mod message;
mod models_ops;
mod mrtr;
mod notebook_ops;
mod ops;
mod options;
pub mod params;
mod paths;
mod preview;
mod read_ops;
mod refused;
mod resources;
mod session_ops;
mod stages;
mod thought_ops;
mod thread_ops;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{Tool, ToolAnnotations};
use rmcp::service::RequestContext;
use serde_json::{Map, Value, json};

pub use args::Args;
use handler::REQUEST_CANCEL;
pub(crate) use handler::{changed_something, request_cancelled};
pub(crate) use message::{AnswerBuffer, TextBudget, add_note, answer_too_long, clip};
pub use options::ServeOptions;
pub use refused::Refused;
pub(crate) use refused::unknown_name;
use refused::{argument_names, ignored_shown};
pub use stages::OPERATIONS;
use stages::{no_operation, required_stage};

use crate::domain::{ConfigKey, ConnectionState, Stage};
use crate::error::{Error, Result};
use crate::events::{EventType, Events};
use crate::maintenance::WriteSignal;
use crate::memory::Release;
use crate::shutdown::Shutdown;
use crate::store::Store;
use crate::store::cancel::Cancel;
use crate::writer::Writer;

/// The one tool's name.
pub const TOOL_NAME: &str = "thoughtbox_gateway";

/// A client root bound as the connection's project.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BoundRoot {
    pub uri: String,
    pub name: String,
}

/// One MCP client's state on its connection: the stage and current
/// session (see [`ConnectionState`]), and what this protocol layer adds to
/// them. Not a database connection (the store pools those as `Conn`).
#[derive(Debug, Default)]
pub(crate) struct ClientState {
    pub state: ConnectionState,
    pub root: Option<BoundRoot>,
    /// Optional operations hidden with `session discovery`.
    pub hidden: BTreeSet<String>,
    /// A request of the stateless protocol over HTTP: no MCP session, so no
    /// current session either; a call about a session must name it.
    pub stateless: bool,
}

/// The MCP server handler. One per connection (stdio: one per process).
#[derive(Clone)]
pub struct Gateway {
    pub(crate) store: Store,
    pub(crate) options: ServeOptions,
    pub(crate) client: Arc<Mutex<ClientState>>,
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
    /// The server's stopping: requests cancelled then are not the client's
    /// doing, and waits for the client end.
    pub(crate) shutdown: Arc<Shutdown>,
    /// Serving an HTTP connection: a request of protocol 2026-07-28 there
    /// is stateless (see [`ClientState::stateless`]).
    over_http: bool,
}

/// How many heavy reads run at once: two of the blocking pool's threads
/// stay for everything else.
const HEAVY_READS: usize = crate::limits::BLOCKING_THREADS - 2;

/// The tool, listing the operations not in `hidden`: the description says
/// how to use it, the input schema gives each operation's parameters.
fn tool_definition(hidden: &BTreeSet<String>) -> Tool {
    let mut description = String::from(
        "Thoughtbox: a durable reasoning ledger. Every thought you record is stored, linked to the thoughts before it, \
         searchable and exportable. Call with { \"operation\": <name>, \"args\": { ... } }; each operation's args \
         (types, required ones) are in the input schema at $defs.<operation>, or under the key \"<operation>.<subOperation>\" of $defs.\n\
         Flow: start_new (new session) or load_context (resume) -> cipher -> thought ... with nextThoughtNeeded: false \
         to finish. An agent that has read the cipher guide before calls cipher with { \"brief\": true }, which \
         unlocks the same without it.\n\
         Sessions are handles: every answer about a session carries its sessionId; pass that sessionId back on later \
         calls about the session (thought, read_thoughts, session ...). Several conversations may share one server \
         process, so do not rely on the connection's current session. A call that keeps no connection state \
         (stateless HTTP) passes its sessionId to any operation that needs a stage: the session's stage admits it.\n\
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
        shutdown: Arc<Shutdown>,
    ) -> Gateway {
        // The ledger's `disableThoughtLogging` keeps thought text out of the event stream.
        let quiet_text = crate::store::thought_logging_disabled(store.config_value(ConfigKey::DisableThoughtLogging));
        Gateway {
            writer,
            store,
            events: Arc::new(Events::new(options.events.clone()).without_thought_text(quiet_text)),
            options,
            client: Arc::new(Mutex::new(ClientState::default())),
            writes,
            tool: Arc::new(tool_definition(&BTreeSet::new())),
            session_order: Arc::default(),
            heavy: Arc::new(tokio::sync::Semaphore::new(HEAVY_READS)),
            release,
            shutdown,
            over_http: false,
        }
    }

    /// The handler of a new HTTP connection (a legacy MCP session, or one
    /// stateless request): the server's store, writer and settings, with a
    /// connection state of its own.
    pub fn for_http_connection(&self) -> Gateway {
        Gateway {
            client: Arc::new(Mutex::new(ClientState::default())),
            session_order: Arc::default(),
            over_http: true,
            ..self.clone()
        }
    }

    /// Note a request of the stateless protocol when this handler serves
    /// HTTP (each such request gets a handler of its own).
    pub(crate) fn note_protocol(&self, ctx: &RequestContext<RoleServer>) {
        if self.over_http && mrtr::modern(ctx) {
            self.with_client(|c| c.stateless = true);
        }
    }

    /// Whether this request is stateless: it has no current session.
    pub(crate) fn stateless(&self) -> bool {
        self.with_client(|c| c.stateless)
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
    /// ones without waiting (without the bound, `get_state` waited 24 s
    /// behind 300 analyses).
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
    /// stopping would leave the files half-updated; and like a write, the
    /// call's answer is never refused for its length ([`changed_something`]).
    pub(crate) async fn blocking_to_end<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        changed_something();
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
    /// ledger writer thread, off the async runtime, committed together with
    /// the other connections' writes waiting then (group commit, see
    /// [`crate::writer`]); answered once committed.
    pub(crate) async fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.writable()?;
        self.writer.write(f).await
    }

    /// Refuses writes on a read-only server, and notes one is coming.
    fn writable(&self) -> Result<()> {
        if self.options.read_only {
            // Named by the gateway's edge, which knows the operation.
            return Err(Error::ReadOnly {
                operation: String::new(),
            });
        }
        changed_something();
        Ok(())
    }

    /// [`Gateway::write`] for a thought's append, which is short: it may
    /// run on the protocol thread ([`crate::writer::Writer::write_short`]).
    pub(crate) async fn append<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        self.writable()?;
        self.writer.write_short(f).await
    }

    /// Whether this server refuses writes (`serve --read-only`).
    pub(crate) fn read_only(&self) -> bool {
        self.options.read_only
    }

    /// Tell the maintenance task that something was written.
    pub(crate) fn wrote(&self) {
        self.writes.wrote();
    }

    pub(crate) fn with_client<T>(&self, f: impl FnOnce(&mut ClientState) -> T) -> T {
        let mut guard = match self.client.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// The connection's current session (see [`ConnectionState::current`]).
    pub(crate) fn active_session(&self) -> Option<String> {
        self.with_client(|c| c.state.current().map(str::to_string))
    }

    /// `id` was started, loaded, resumed or written to.
    pub(crate) fn set_active_session(&self, id: String) {
        self.with_client(|c| c.state.open(id));
    }

    /// The session `id` was closed by `nextThoughtNeeded: false`.
    pub(crate) fn close_active_session(&self, id: &str) {
        self.with_client(|c| c.state.close(id.to_string()));
    }

    /// The session closed on this connection, if none has been opened since.
    pub(crate) fn closed_session(&self) -> Option<String> {
        self.with_client(|c| c.state.closed().map(str::to_string))
    }

    /// `id` was deleted through this connection.
    pub(crate) fn session_deleted_here(&self, id: &str) {
        self.with_client(|c| c.state.deleted_here(id));
    }

    /// The current session, if still `id`, was found deleted elsewhere.
    pub(crate) fn clear_active_session_if(&self, id: &str) {
        self.with_client(|c| c.state.found_deleted(id));
    }

    /// The current session found deleted, if none has been opened since.
    pub(crate) fn deleted_session(&self) -> Option<String> {
        self.with_client(|c| c.state.deleted().map(str::to_string))
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
        // Also names a write a read-only server refuses.
        let sub_operation = params::has_sub_operations(&operation)
            .then(|| args.peek_sub_operation(params::sub_operation_keys(&operation)))
            .flatten();
        let run = async {
            if self.with_client(|c| c.hidden.contains(&operation)) {
                return Err(Error::InvalidOperation {
                    message: format!(
                        "operation {operation:?} is hidden on this connection; session discovery with action \"show\" brings it back"
                    ),
                    details: Some(json!({ "operation": operation, "hidden": true })),
                });
            }
            self.check_stage(&operation, sub_operation.as_deref(), required, &args)
                .await?;
            self.dispatch(&operation, args, ctx).await.map_err(|e| match e {
                Error::ReadOnly { .. } => Error::ReadOnly {
                    operation: match &sub_operation {
                        Some(sub) => format!("{operation} {sub}"),
                        None => operation.clone(),
                    },
                },
                e => e,
            })
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
        let arguments = arguments.unwrap_or_default();
        args::check_argument_count("arguments", &arguments)?;
        let mut arguments = Args::new(arguments);
        let operation = match arguments.get("operation") {
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(Error::invalid(
                    "operation",
                    format!("operation must be a string, got {other}"),
                ));
            }
            None => return Err(no_operation(&arguments)),
        };
        let Some(required) = required_stage(&operation) else {
            let valid: Vec<&str> = OPERATIONS.iter().map(|(n, _, _)| *n).collect();
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
        // (the specification writes `{ operation, subOperation, args }`). A
        // parameter given in both places with the same value is that value;
        // with two values the call contradicts itself and is refused, as one
        // given flat and nested is (`subOperation: "get"` beside `args:
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
                            return Err(if params::is_sub_operation_key(&key) {
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
        // A retry's fields put among the arguments, in any spelling, would
        // run the call anew (a critique's thought recorded again each round).
        if let Some(field) = args.name_where(|k| matches!(args::folded(k).as_str(), "requeststate" | "inputresponses"))
        {
            return Err(Error::invalid(
                field.clone(),
                format!(
                    "{field} goes in the request's params, beside name and arguments, not among the tool's \
                     arguments (nothing was done)"
                ),
            ));
        }
        args.check_spelling(params::has_sub_operations(&operation), operation == "thought")?;
        Ok((operation, required, args))
    }

    /// Each operation's future is boxed: a call's future is as large as the
    /// largest operation's, and every request's task moves it several times
    /// (rmcp spawns one per request), so inline it cost every thought
    /// kilobytes of copying.
    async fn dispatch(&self, operation: &str, args: Args, ctx: Option<&RequestContext<RoleServer>>) -> Result<Value> {
        let run: Operation<'_> = match operation {
            "get_state" => Box::pin(ops::get_state(self, args)),
            "start_new" => Box::pin(ops::start_new(self, args)),
            "load_context" => Box::pin(ops::load_context(self, args)),
            "list_sessions" => Box::pin(ops::list_sessions(self, args)),
            "navigate" => Box::pin(init_ops::navigate(self, args)),
            "list_roots" => Box::pin(init_ops::list_roots(self, ctx)),
            "bind_root" => Box::pin(init_ops::bind_root(self, args, ctx)),
            "cipher" => Box::pin(ops::cipher(self, args)),
            "session" => Box::pin(session_ops::session(self, args, ctx)),
            "deep_analysis" => Box::pin(analysis_ops::deep_analysis(self, args)),
            "thought" => Box::pin(thought_ops::thought(self, args, ctx)),
            "read_thoughts" => Box::pin(read_ops::read_thoughts(self, args)),
            "get_structure" => Box::pin(read_ops::get_structure(self, args)),
            "mental_models" => Box::pin(models_ops::mental_models(self, args)),
            "knowledge" => Box::pin(knowledge_ops::knowledge(self, args)),
            "notebook" => Box::pin(notebook_ops::notebook(self, args)),
            "thread" => Box::pin(thread_ops::thread(self, args)),
            other => return Err(Error::operation(format!("unknown operation {other:?}"))),
        };
        run.await
    }
}

/// One operation's run, boxed (see [`Gateway::dispatch`]).
type Operation<'a> = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value>> + Send + 'a>>;
