//! `serve --http`: MCP over Streamable HTTP at `/mcp` (rmcp's service,
//! mounted in axum), and the Observatory (`/`, `/api/...`, `/ws`), on one
//! listener behind one bearer token ([`auth`]).
//!
//! Clients of protocol 2026-07-28 are served statelessly: each request gets
//! a handler of its own and acts on the session its `sessionId` names.
//! Older clients get a legacy MCP session, a handler kept for it, with its
//! own stage and current session, as a stdio connection has.

mod auth;
mod conn;
mod drain;
mod observatory;
mod throttle;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

pub use auth::{Guard, Token, TokenSource, resolve_token, token_path};

use crate::error::{Error, Result};
use crate::gateway::Gateway;
use crate::shutdown::Shutdown;

/// The default address of `serve --http`.
pub const DEFAULT_ADDR: &str = "127.0.0.1:1731";

/// How long a legacy MCP session may stay idle before it is dropped: an
/// agent may think for a long time between two calls, and a dropped session
/// loses its current session and stage.
const SESSION_IDLE: Duration = Duration::from_secs(3600);

/// A bound listener and what guards it, ready to serve once the runtime
/// runs. Bound before the server starts, so that a taken port is said at once.
pub struct Listening {
    listener: std::net::TcpListener,
    addr: SocketAddr,
    guard: Arc<Guard>,
    /// Where the token is, to say once the server can be stopped cleanly
    /// (see [`Listening::announce`]); `None`: nothing to say.
    token_source: Option<TokenSource>,
}

impl Listening {
    /// Bind `addr` (port 0: any free port) for the server guarded by `guard`.
    pub fn bind(addr: SocketAddr, guard: Guard) -> Result<Listening> {
        let listener =
            std::net::TcpListener::bind(addr).map_err(|e| Error::io(format!("listening on {addr} for --http"), e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("setting the listener non-blocking", e))?;
        let addr = listener
            .local_addr()
            .map_err(|e| Error::io("reading the listener's address", e))?;
        Ok(Listening {
            listener,
            addr,
            guard: Arc::new(guard),
            token_source: None,
        })
    }

    /// Say where the server listens and where its token is from `source`,
    /// once [`Listening::announce`] is called.
    pub fn announcing(mut self, source: TokenSource) -> Listening {
        self.token_source = Some(source);
        self
    }

    /// Say where it listens, if asked to: after the signal handlers are in
    /// place, since whoever reads the line may stop the server at once.
    pub fn announce(&self) {
        if let Some(source) = &self.token_source {
            announce(self.addr, source);
        }
    }

    /// The address bound (the port chosen when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Serve until `shutdown` begins; then stop taking connections and end
    /// the MCP sessions and WebSockets.
    pub async fn serve(self, gateway: Gateway, shutdown: Arc<Shutdown>) -> Result<()> {
        let listener = tokio::net::TcpListener::from_std(self.listener)
            .map_err(|e| Error::io("handing the listener to the runtime", e))?;
        let stop = CancellationToken::new();
        let drain = Arc::new(drain::Drain::default());
        let app = router(&gateway, self.guard, stop.clone(), shutdown.clone(), drain.clone());
        // The calls in flight are answered before the MCP sessions end
        // (see drain.rs); ending them also ends their open streams, which
        // the graceful shutdown waits for.
        let ending = tokio::spawn({
            let shutdown = shutdown.clone();
            async move {
                shutdown.wait().await;
                drain.close().await;
                stop.cancel();
            }
        });
        conn::serve(
            listener,
            app,
            conn::Limits::for_open_files(crate::limits::open_files()),
            shutdown,
        )
        .await;
        ending.abort();
        Ok(())
    }
}

/// Every route, behind the guard.
fn router(
    gateway: &Gateway,
    guard: Arc<Guard>,
    stop: CancellationToken,
    shutdown: Arc<Shutdown>,
    drain: Arc<drain::Drain>,
) -> Router {
    let config = StreamableHttpServerConfig::default()
        .with_cancellation_token(stop)
        // Checked by the guard in front, which also knows --allowed-host.
        .disable_allowed_hosts()
        .disable_allowed_origins()
        // The same bound on a message as on stdio.
        .with_max_request_body_bytes(crate::stdio::MAX_MESSAGE)
        // A stateless request's answer as plain JSON when nothing else is
        // sent before it.
        .with_json_response(true);
    let mut sessions = LocalSessionManager::default();
    sessions.session_config.keep_alive = Some(SESSION_IDLE);
    let base = gateway.clone();
    let mcp = StreamableHttpService::new(move || Ok(base.for_http_connection()), Arc::new(sessions), config);
    let mcp = Router::new()
        .nest_service("/mcp", mcp)
        .layer(axum::middleware::from_fn(parse_errors))
        .layer(axum::middleware::from_fn(session_closed))
        .layer(axum::middleware::from_fn_with_state(drain, drain::count));
    Router::new()
        .merge(mcp)
        .merge(observatory::routes(gateway, shutdown))
        .layer(axum::middleware::from_fn_with_state(guard.clone(), auth::check))
        .layer(axum::Extension(guard))
        .layer(axum::middleware::map_response(hardened))
}

/// What a browser may do with any answer of this server (refusals and
/// `/mcp` included, so that none is missed): the Observatory's page loads
/// its script, style, API and WebSocket from this origin only, runs no
/// inline script or style and is framed by no page; nothing is sniffed as
/// another type; and no URL of it is sent to another site as a referrer.
/// `same-origin` rather than `no-referrer`: under `no-referrer` a browser
/// sends `Origin: null` with the login form's POST, which the Origin check
/// refuses.
async fn hardened(mut response: axum::response::Response) -> axum::response::Response {
    use axum::http::{HeaderName, HeaderValue, header};
    const HEADERS: [(HeaderName, &str); 3] = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
    ];
    let headers = response.headers_mut();
    for (name, value) in HEADERS {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

/// A legacy session closed by `DELETE /mcp` is answered 204, not rmcp's
/// 202: the MCP Python SDK takes only 200 or 204 as closed, and logs
/// "Session termination failed" on every exit otherwise.
async fn session_closed(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::http::{Method, StatusCode};
    let delete = request.method() == Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
        *response.body_mut() = axum::body::Body::empty();
    }
    response
}

/// What rmcp would answer wrongly or not at all, answered here before it
/// reads the body, as stdio does it (one module decides both: see
/// [`crate::stdio::refused_answer`]). A request naming a key twice is
/// refused under its id: `{"subOperation":"get","subOperation":"delete"}`
/// must not run as whichever value a reader keeps. A JSON body that is no
/// JSON-RPC message, which rmcp answers 415 as it does a wrong content
/// type, is JSON-RPC's parse error (-32700), with serde's reason.
async fn parse_errors(request: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    use axum::http::{Method, StatusCode, header};
    use axum::response::IntoResponse;
    let json = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"));
    if !json || request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // Past the bound, rmcp's own limit answers (413) as before.
    let bytes = match axum::body::to_bytes(body, crate::stdio::MAX_MESSAGE).await {
        Ok(bytes) => bytes,
        Err(_) => {
            let error = serde_json::json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": { "code": -32600, "message": "the body is over the 16 MiB a message may have, or was cut off" },
            });
            return (StatusCode::PAYLOAD_TOO_LARGE, axum::Json(error)).into_response();
        }
    };
    if let Some(answer) = crate::stdio::refused_answer(&bytes) {
        return (StatusCode::OK, axum::Json(answer)).into_response();
    }
    let reason = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(&bytes).err();
    let response = next
        .run(axum::extract::Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await;
    match reason {
        Some(reason) if response.status() == StatusCode::UNSUPPORTED_MEDIA_TYPE => {
            let error = serde_json::json!({
                "jsonrpc": "2.0",
                "id": null,
                "error": { "code": -32700, "message": format!("Parse error: the body is not a JSON-RPC message ({reason})") },
            });
            (StatusCode::BAD_REQUEST, axum::Json(error)).into_response()
        }
        _ => response,
    }
}

/// Who may read a token file the server creates. Windows has no file
/// mode: the file takes its folder's access rules (a profile's folders are
/// the user's own).
const CREATED_TOKEN_ACCESS: &str = if cfg!(unix) {
    "mode 0600"
} else {
    "readable by whoever may read its folder"
};

/// Say where the server listens and where its token is (never the token).
fn announce(addr: SocketAddr, source: &TokenSource) {
    let host = if addr.ip().is_unspecified() {
        format!("<this machine>:{}", addr.port())
    } else {
        addr.to_string()
    };
    let said = match source {
        TokenSource::Environment => "bearer token from THOUGHTBOX_TOKEN".to_string(),
        TokenSource::File(path) => format!("bearer token in {}", shown(path)),
        TokenSource::Created(path) => format!("created a bearer token in {} ({CREATED_TOKEN_ACCESS})", shown(path)),
    };
    // Written, not `eprintln!`ed: a server started without a stderr to
    // write to serves all the same.
    let _ = write!(
        std::io::stderr(),
        "thoughtbox: serving MCP at http://{host}/mcp and the Observatory at http://{host}/\nthoughtbox: {said}\n"
    );
}

fn shown(path: &Path) -> String {
    path.display().to_string()
}
