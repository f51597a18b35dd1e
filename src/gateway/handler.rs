//! The MCP server handler: what rmcp calls for each request (tools,
//! resources, prompts), with the request's cancellation and its answer's
//! length checked on the way out.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CustomRequest, CustomResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::json;

use super::message::{bounded_error, fits_one_message, message_bytes};
use super::{Gateway, Refused, TOOL_NAME, clip, mrtr, resources, tool_definition};
use crate::error::Error;
use crate::memory::LARGE_ANSWER;
use crate::shutdown::Shutdown;
use crate::store::cancel::Cancel;

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
        let hidden = self.with_client(|c| c.hidden.clone());
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
        cancellable(&context, &self.shutdown, resources::read_resource(self, &request.uri))
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
        self.note_protocol(&context);
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
            &self.shutdown,
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
                    Error::ShuttingDown => tracing::info!("gateway call refused: the server is stopping"),
                    _ if e.is_interrupted() => tracing::info!("gateway call stopped by the shutdown"),
                    Error::Database(_)
                    | Error::CommitUncertain(_)
                    | Error::RolledBack(_)
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

tokio::task_local! {
    /// The cancellation of the request running in this task: its reads
    /// ([`Gateway::blocking`]) stop once the client cancels it.
    pub(super) static REQUEST_CANCEL: Arc<Cancel>;
}

/// Whether the client has cancelled the request running in this task
/// (false outside a request).
pub(crate) fn request_cancelled() -> bool {
    REQUEST_CANCEL.try_with(|c| c.fired()).unwrap_or(false)
}

impl Gateway {
    /// Wait for `call`, a request of ours to the client (sampling, roots):
    /// `None` once the request we are handling is cancelled (by the client,
    /// or by the shutdown) or the server is stopping, since the client's
    /// answer can no longer come or be used (stdin closed: rmcp would
    /// otherwise wait up to 5 s for this request's own answer, past a
    /// client's SIGKILL).
    pub(crate) async fn ask_client<T>(
        &self,
        ctx: &RequestContext<RoleServer>,
        call: impl std::future::Future<Output = T>,
    ) -> Option<T> {
        tokio::select! {
            answer = call => Some(answer),
            () = ctx.ct.cancelled() => None,
            () = self.shutdown.wait() => None,
        }
    }
}

/// Run `work`, a request's handling, so that its reads stop when the client
/// cancels the request (`notifications/cancelled`, which fires `ct`).
async fn cancellable<T>(
    ctx: &RequestContext<RoleServer>,
    shutdown: &Shutdown,
    work: impl std::future::Future<Output = T>,
) -> T {
    let cancel = Cancel::new();
    let work = REQUEST_CANCEL.scope(cancel.clone(), work);
    tokio::pin!(work);
    tokio::select! {
        answer = &mut work => answer,
        () = ctx.ct.cancelled() => {
            // At shutdown the MCP library cancels every request; the
            // shutdown stops their reads itself, and says why.
            if shutdown.begun() {
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
}
