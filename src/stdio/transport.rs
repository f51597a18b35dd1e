//! The server's side of MCP over stdio: rmcp's [`Transport`] on the
//! repaired lines of stdin ([`Lines`]) and on stdout. Every protocol
//! workaround lives here, on the way in: a request that must be refused
//! before it is read (a key named twice, params that is not an object, a
//! line over 16 MiB, text that is not JSON) is answered under its own id
//! with a JSON-RPC error, and never reaches the MCP library. Outgoing
//! messages are written as rmcp made them, one a line.

use std::borrow::Cow;
use std::io;
use std::sync::Arc;

use rmcp::model::{ClientRequest, ErrorCode, ErrorData, GetMeta, JsonRpcMessage, ProtocolVersion};
use rmcp::service::{RoleServer, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use serde::Deserialize;
use serde_json::error::Category;
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;

use super::envelope::{self, Problem};
use super::lines::{Incoming, Lines};
use crate::memory::{LARGE_ANSWER, Release};

/// MCP over a pair of byte streams (stdin and stdout when serving).
pub struct StdioTransport<R, W> {
    lines: Lines<R>,
    out: Arc<Mutex<W>>,
    /// Whether a client has introduced itself, with `initialize` or with a
    /// request of the stateless protocol (2026-07-28) carrying its version
    /// in `_meta`. Until then a request without either is answered here,
    /// saying how a session starts: someone trying the server by hand
    /// (`echo '{...tools/list}' | thoughtbox`) learns to send `initialize`.
    introduced: bool,
    /// Whether the MCP library has started the session: until then it
    /// ends the whole connection on a notification or a reply, so those
    /// are dropped here. Set by the request that starts it, as the
    /// library decides that: `initialize`, or a request of the stateless
    /// protocol with the whole `_meta` and a version in `supported`.
    started: bool,
    /// The protocol versions the server speaks (its handler's list).
    supported: Cow<'static, [ProtocolVersion]>,
    /// Told when a large message has been written and freed, so that its
    /// memory goes back to the system after it rather than before.
    release: Option<Arc<Release>>,
}

impl<R: AsyncRead + Unpin, W> StdioTransport<R, W> {
    pub fn new(input: R, output: W) -> Self {
        StdioTransport {
            lines: Lines::new(input),
            out: Arc::new(Mutex::new(output)),
            introduced: false,
            started: false,
            supported: Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
            release: None,
        }
    }

    /// The versions the handler speaks, when not every one rmcp knows.
    pub fn supporting(mut self, versions: Cow<'static, [ProtocolVersion]>) -> Self {
        self.supported = versions;
        self
    }

    /// Note every message of [`LARGE_ANSWER`] bytes or more as heavy work
    /// once it is written (see [`crate::memory`]).
    pub fn releasing(mut self, release: Arc<Release>) -> Self {
        self.release = Some(release);
        self
    }
}

impl<R, W> StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    /// A request that comes before the client has introduced itself, and
    /// does not introduce it: what to answer instead of running it.
    fn before_introduction(&mut self, message: &[u8]) -> Option<(Value, ErrorData)> {
        #[derive(Deserialize)]
        struct Peek {
            id: Option<Value>,
            method: Option<String>,
            #[serde(default)]
            params: Option<PeekParams>,
        }
        #[derive(Deserialize)]
        struct PeekParams {
            #[serde(rename = "_meta")]
            meta: Option<serde_json::Map<String, Value>>,
        }
        let peek: Peek = serde_json::from_slice(message).ok()?;
        let (Some(id), Some(method)) = (peek.id, peek.method) else {
            return None; // a notification or a reply
        };
        let stateless = peek
            .params
            .and_then(|p| p.meta)
            .is_some_and(|m| m.contains_key(PROTOCOL_VERSION_META));
        match method.as_str() {
            // One rmcp cannot read would be told that the stateless
            // protocol's `_meta` is missing: say what initialize takes.
            "initialize" => match serde_json::from_slice::<Initialize>(message) {
                Ok(_) => self.introduced = true,
                Err(e) => {
                    let message = format!(
                        "initialize: its params are {{ protocolVersion: string, capabilities: object, clientInfo: \
                         {{ name, version }} }} ({e})"
                    );
                    return Some((
                        id,
                        ErrorData::invalid_params(message, Some(json!({ "method": "initialize" }))),
                    ));
                }
            },
            "ping" => {}
            _ if stateless => self.introduced = true,
            _ => {
                return Some((
                    id,
                    ErrorData::new(
                        ErrorCode::INVALID_REQUEST,
                        format!(
                            "{}: no session yet. An MCP session starts with an initialize request, then the \
                             notifications/initialized notification; send initialize first. A client of the \
                             stateless protocol, 2026-07-28, sends {PROTOCOL_VERSION_META} and \
                             io.modelcontextprotocol/clientCapabilities in every request's _meta instead",
                            clip(&method)
                        ),
                        Some(json!({ "method": clip(&method) })),
                    ),
                ));
            }
        }
        None
    }
}

/// Whether the MCP library starts the session on `request` (rmcp's
/// `serve_server`): on `initialize`; on a request of the stateless protocol
/// with every field its `_meta` needs and a version the server speaks,
/// other than `ping` and `server/discover`, which it answers and waits on.
fn starts_session(request: &ClientRequest, supported: &[ProtocolVersion]) -> bool {
    match request {
        ClientRequest::InitializeRequest(_) => true,
        ClientRequest::PingRequest(_) | ClientRequest::DiscoverRequest(_) => false,
        other => {
            let meta = other.get_meta();
            meta.missing_required_keys(&ProtocolVersion::V_2026_07_28).is_empty()
                && meta.protocol_version().is_some_and(|v| supported.contains(&v))
        }
    }
}

/// An `initialize` request as rmcp reads it.
#[derive(Deserialize)]
struct Initialize {
    #[serde(rename = "params")]
    _params: rmcp::model::InitializeRequestParams,
}

/// Where a request of the stateless protocol names its version.
const PROTOCOL_VERSION_META: &str = "io.modelcontextprotocol/protocolVersion";

impl<R, W> Transport<RoleServer> for StdioTransport<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        let release = self.release.clone();
        async move {
            let bytes = serde_json::to_vec(&item).map_err(io::Error::other)?;
            drop(item);
            let large = bytes.len() >= LARGE_ANSWER;
            let written = write_line(&out, bytes).await;
            if large && let Some(release) = release {
                release.heavy_work_done();
            }
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let incoming = match self.lines.next().await {
                Ok(Some(incoming)) => incoming,
                Ok(None) => return None,
                Err(e) => {
                    tracing::warn!("reading stdin failed: {e}");
                    return None;
                }
            };
            let message = match incoming {
                Incoming::Refused { id, method, problem } => {
                    refuse(&self.out, id, refusal(&method, &problem));
                    continue;
                }
                Incoming::Message(message) => message,
            };
            if !self.introduced
                && let Some((id, error)) = self.before_introduction(&message)
            {
                refuse(&self.out, id, error);
                continue;
            }
            match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&message) {
                Ok(message) if self.started => return Some(message),
                Ok(JsonRpcMessage::Request(request)) => {
                    self.started = starts_session(&request.request, &self.supported);
                    return Some(JsonRpcMessage::Request(request));
                }
                Ok(_) => {
                    tracing::debug!("dropped a notification or reply sent before the session started");
                }
                Err(e) => {
                    // JSON (the lines were checked), of a shape no MCP
                    // message has: a request among them is answered.
                    tracing::warn!(
                        "a message of {} bytes is no MCP message ({:?}: {e})",
                        message.len(),
                        e.classify()
                    );
                    if let Some((id, method)) = envelope::request_of(&message) {
                        let code = match e.classify() {
                            Category::Syntax | Category::Eof => ErrorCode::PARSE_ERROR,
                            Category::Data | Category::Io => ErrorCode::INVALID_REQUEST,
                        };
                        let error = ErrorData::new(
                            code,
                            format!("{}: not an MCP request ({e}), so it was not run", clip(&method)),
                            Some(json!({ "method": clip(&method) })),
                        );
                        refuse(&self.out, id, error);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.out.lock().await.flush().await
    }
}

/// Answer request `id` with `error`, directly. Written by a task of its
/// own: the MCP library may drop a `receive` half-way, and a message cut
/// off mid-line would corrupt the stream.
fn refuse<W: AsyncWrite + Unpin + Send + 'static>(out: &Arc<Mutex<W>>, id: Value, error: ErrorData) {
    let message = json!({ "jsonrpc": "2.0", "id": id, "error": error });
    let out = out.clone();
    tokio::spawn(async move {
        if let Err(e) = write_line(&out, message.to_string().into_bytes()).await {
            tracing::debug!("could not write a refusal to stdout: {e}");
        }
    });
}

/// Write one message and its newline, and flush it.
async fn write_line<W: AsyncWrite + Unpin>(out: &Mutex<W>, mut bytes: Vec<u8>) -> io::Result<()> {
    bytes.push(b'\n');
    let mut out = out.lock().await;
    out.write_all(&bytes).await?;
    out.flush().await
}

/// The answer to `message` (one JSON-RPC message, as an HTTP body holds
/// it) when it is a request refused before it is read, as stdio refuses
/// it: a key named twice, `params` that are no object, nesting or a
/// number past what a reader holds, text that is not JSON.
pub(crate) fn refused_answer(message: &[u8]) -> Option<Value> {
    match envelope::inspect(message) {
        envelope::Verdict::Refuse { id, method, problem } => {
            Some(json!({ "jsonrpc": "2.0", "id": id, "error": refusal(&method, &problem) }))
        }
        _ => None,
    }
}

/// The JSON-RPC error for a request refused before it was read.
pub(super) fn refusal(method: &str, problem: &Problem) -> ErrorData {
    let original = clip(method);
    let data = Some(json!({ "method": original }));
    let request = |reason: String| {
        ErrorData::new(
            ErrorCode::INVALID_REQUEST,
            format!("{original}: {reason}"),
            data.clone(),
        )
    };
    match problem {
        Problem::DuplicateKey(path) => {
            let message = format!(
                "{original}: the key {path} is named twice; JSON keys must be unique, and which value counts is \
                 not defined, so the request was not run"
            );
            let data = Some(json!({ "method": original, "duplicateKey": path }));
            if path.starts_with("params") {
                ErrorData::invalid_params(message, data)
            } else {
                ErrorData::new(ErrorCode::INVALID_REQUEST, message, data)
            }
        }
        Problem::NotJson(e) => ErrorData::parse_error(
            format!("{original}: the message is not valid JSON ({e}), so the request was not run"),
            data,
        ),
        Problem::ParamsNot(got) => match expected_params(method) {
            None => ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("method not found: {original}"),
                data,
            ),
            Some(_) => ErrorData::invalid_params(format!("params of {original} must be an object, got {got}"), data),
        },
        Problem::NotVersion2 => request("a JSON-RPC 2.0 request needs \"jsonrpc\": \"2.0\"".into()),
        Problem::NumberTooLarge => {
            request("the message holds a number too large to read (the largest is about 1.8e308)".into())
        }
        Problem::TooDeep => {
            request("the message nests objects and arrays too deeply (the limit is 128 levels in all)".into())
        }
        Problem::TooLong(bytes) => request(format!("the message is {bytes} bytes, over the 16 MiB limit")),
        Problem::TooLongRepaired => request("the message is over 16 MiB once its invalid UTF-8 is replaced".into()),
        Problem::BadId => request("a request id must be a string or a whole number that fits in 64 bits".into()),
        Problem::MethodNotString => request("the method must be a string".into()),
        Problem::Batch => request("batches are not part of MCP: send one message per line".into()),
    }
}

/// What the params of a request must hold, for the MCP methods this server
/// answers (the MCP library answers a malformed `initialize` itself);
/// `None` for a method it does not serve.
pub(crate) fn expected_params(method: &str) -> Option<&'static str> {
    Some(match method {
        "tools/call" => "{ name: string, arguments?: object }",
        "resources/read" => "{ uri: string }",
        "prompts/get" => "{ name: string, arguments?: object of strings }",
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            "{ cursor?: string } or no params"
        }
        "ping" => "no params",
        _ => return None,
    })
}

/// A name the client sent, as an error message may repeat it: cut to 200
/// characters.
fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The transport over `input`, and what it wrote.
    async fn run(input: &str) -> (Vec<Value>, Vec<Value>) {
        let (out_tx, mut out_rx) = tokio::io::duplex(1 << 20);
        let mut transport = StdioTransport::new(input.as_bytes(), out_tx);
        let mut received = Vec::new();
        while let Some(m) = transport.receive().await {
            received.push(serde_json::to_value(&m).unwrap());
        }
        drop(transport);
        let mut written = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out_rx, &mut written)
            .await
            .unwrap();
        let written = written.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        (received, written)
    }

    #[tokio::test]
    async fn refused_requests_are_answered_under_their_id_and_never_handed_on() {
        let (received, written) = run(concat!(
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":[]}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":"two","method":"no/such","params":5}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":1,"a":2}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"n":NaN}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":5,"method":"ping","params":{"n":1e400}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#,
            "\n",
        ))
        .await;
        let ids: Vec<&Value> = received.iter().map(|m| &m["id"]).collect();
        assert_eq!(ids, [&json!(0), &json!(6)]);
        let codes: Vec<(Value, Value)> = written
            .iter()
            .map(|m| (m["id"].clone(), m["error"]["code"].clone()))
            .collect();
        assert_eq!(
            codes,
            [
                (json!(1), json!(-32602)),
                (json!("two"), json!(-32601)),
                (json!(3), json!(-32602)),
                (json!(4), json!(-32700)),
                (json!(5), json!(-32600)),
            ]
        );
        assert!(
            written[2]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("params.a is named twice")
        );
        assert!(written[4]["error"]["message"].as_str().unwrap().contains("too large"));
    }

    /// An initialize rmcp cannot read is told what initialize takes, and
    /// the session still starts with a good one.
    #[tokio::test]
    async fn a_malformed_initialize_is_told_what_it_takes() {
        let (received, written) = run(concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"initialize"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#,
            "\n",
        ))
        .await;
        let refused: Vec<(&Value, &Value)> = written.iter().map(|m| (&m["id"], &m["error"]["code"])).collect();
        assert_eq!(refused, [(&json!(1), &json!(-32602)), (&json!(2), &json!(-32602))]);
        assert!(written[0]["error"]["message"].as_str().unwrap().contains("clientInfo"));
        let ids: Vec<&Value> = received.iter().map(|m| &m["id"]).collect();
        assert_eq!(ids, [&json!(3)]);
    }

    #[tokio::test]
    async fn a_request_before_initialize_is_told_how_a_session_starts() {
        let (received, written) = run(concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/list"}"#,
            "\n",
        ))
        .await;
        assert_eq!(written.len(), 1, "{written:?}");
        assert_eq!(written[0]["id"], 1);
        assert!(
            written[0]["error"]["message"]
                .as_str()
                .unwrap()
                .contains("send initialize first")
        );
        // A ping, a request of the stateless protocol, and everything after it pass.
        let ids: Vec<&Value> = received.iter().map(|m| &m["id"]).collect();
        assert_eq!(ids, [&json!(2), &json!(3), &json!(4)]);
    }

    /// rmcp ends the connection on a notification or a reply before the
    /// session starts: they are dropped until a request starts it.
    #[tokio::test]
    async fn notifications_and_replies_before_the_session_are_dropped() {
        let meta = |version: &str| json!({ "io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {} });
        let lines = [
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            json!({ "jsonrpc": "2.0", "id": 5, "result": {} }),
            json!({ "jsonrpc": "2.0", "id": 1, "method": "ping", "params": { "_meta": meta("2026-07-28") } }),
            json!({ "jsonrpc": "2.0", "method": "notifications/cancelled", "params": { "requestId": 1 } }),
            // A version the server does not speak: refused, and no session.
            json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": { "_meta": meta("1999-01-01") } }),
            json!({ "jsonrpc": "2.0", "method": "notifications/roots/list_changed" }),
            json!({ "jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "t", "version": "0" } } }),
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            json!({ "jsonrpc": "2.0", "id": 6, "result": {} }),
        ];
        let input: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let (received, written) = run(&input).await;
        assert!(written.is_empty(), "{written:?}");
        let seen: Vec<(&Value, &Value)> = received.iter().map(|m| (&m["id"], &m["method"])).collect();
        assert_eq!(
            seen,
            [
                (&json!(1), &json!("ping")),
                (&json!(2), &json!("tools/list")),
                (&json!(3), &json!("initialize")),
                (&Value::Null, &json!("notifications/initialized")),
                (&json!(6), &Value::Null),
            ]
        );
    }

    #[tokio::test]
    async fn messages_go_out_one_a_line_as_made() {
        let (out_tx, mut out_rx) = tokio::io::duplex(1 << 16);
        let mut transport = StdioTransport::new(&b""[..], out_tx);
        for id in 0..3 {
            let message: TxJsonRpcMessage<RoleServer> =
                serde_json::from_value(json!({ "jsonrpc": "2.0", "id": id, "result": {} })).unwrap();
            transport.send(message).await.unwrap();
        }
        drop(transport);
        let mut written = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut out_rx, &mut written)
            .await
            .unwrap();
        let ids: Vec<Value> = written
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["id"].clone())
            .collect();
        assert_eq!(ids, [json!(0), json!(1), json!(2)]);
    }
}
