//! `serve --http`: MCP over Streamable HTTP through rmcp's own client, for
//! clients of protocol 2026-07-28 (stateless, with handles) and older ones
//! (legacy sessions, each with its own stage and current session); the
//! bearer token; and what an MCP client never sends (no token, bad JSON, a
//! wrong content type, an oversized body).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::model::ProtocolVersion;
use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::{Server, command, until_server_closed};

/// A `thoughtbox serve --http` process on a free loopback port.
pub struct HttpServer {
    child: tokio::process::Child,
    pub url: String,
    pub token: String,
    pub db: PathBuf,
    /// Its log after the line that said where it listens.
    log: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    _dir: Option<tempfile::TempDir>,
}

/// Spawn `cmd` (a server over HTTP) with its stderr piped, and read that
/// until it says where it listens: the child, the rest of its stderr, and
/// the URL of `/mcp`.
async fn announced(
    mut cmd: tokio::process::Command,
) -> (
    tokio::process::Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
    String,
) {
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::piped());
    cmd.kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn thoughtbox --http");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("stderr line") {
            if let Some(rest) = line.strip_prefix("thoughtbox: serving MCP at ") {
                return rest.split_whitespace().next().expect("url").to_string();
            }
        }
        panic!("the server exited before listening");
    })
    .await
    .expect("the server said where it listens");
    (child, lines, url)
}

/// SIGTERM `child`, and check it ends by its clean exit (status 0), not
/// by the signal.
#[cfg(unix)]
async fn stops_cleanly_on_sigterm(mut child: tokio::process::Child) {
    crate::common::kill(child.id().expect("pid"), "TERM");
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("the server exits after SIGTERM")
        .expect("wait");
    assert!(
        status.success(),
        "ended by the signal, not by its clean exit: {status:?}"
    );
}

impl HttpServer {
    /// Start on a new database in a temporary directory.
    pub async fn start() -> HttpServer {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("t.db");
        let mut s = HttpServer::start_on(&db, &[]).await;
        s._dir = Some(dir);
        s
    }

    /// Start on `db` with `extra` arguments after `serve --http 127.0.0.1:0`.
    pub async fn start_on(db: &Path, extra: &[&str]) -> HttpServer {
        HttpServer::start_with(db, extra, &[]).await
    }

    /// Start on a new database with the connection bounds `limits` (as
    /// `THOUGHTBOX_HTTP_LIMITS`, which debug builds read).
    pub async fn start_limited(limits: &str) -> HttpServer {
        let dir = tempfile::tempdir().expect("dir");
        let db = dir.path().join("t.db");
        let mut s = HttpServer::start_with(&db, &[], &[("THOUGHTBOX_HTTP_LIMITS", limits)]).await;
        s._dir = Some(dir);
        s
    }

    /// Start on `db` with `extra` arguments and `env` variables.
    pub async fn start_with(db: &Path, extra: &[&str], env: &[(&str, &str)]) -> HttpServer {
        let mut cmd = command(db);
        cmd.args(["serve", "--http", "127.0.0.1:0"]).args(extra);
        cmd.envs(env.iter().copied());
        let (child, mut lines, url) = announced(cmd).await;
        // Keep reading its log, so that it never blocks on a full pipe.
        let log = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let kept = log.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                kept.lock().unwrap().push(line);
            }
        });
        let token = std::fs::read_to_string(db.with_extension("token"))
            .expect("the token file beside the database")
            .trim()
            .to_string();
        HttpServer {
            child,
            url,
            token,
            db: db.to_path_buf(),
            log,
            _dir: None,
        }
    }

    /// Wait (at most ten seconds) for a line of its log that contains `text`.
    pub async fn logged(&self, text: &str) -> String {
        for _ in 0..1000 {
            if let Some(line) = self.log.lock().unwrap().iter().find(|l| l.contains(text)) {
                return line.clone();
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the server never logged {text:?}: {:?}", self.log.lock().unwrap());
    }

    fn transport(&self) -> StreamableHttpClientTransport<reqwest::Client> {
        StreamableHttpClientTransport::from_config(
            StreamableHttpClientTransportConfig::with_uri(self.url.as_str()).auth_header(self.token.clone()),
        )
    }

    /// A client of an older protocol: a legacy MCP session.
    pub async fn legacy(&self) -> Server {
        let client = ().serve(self.transport()).await.expect("initialize over HTTP");
        Server {
            client,
            pid: self.child.id().expect("pid"),
        }
    }

    /// A client of protocol 2026-07-28: no MCP session, `_meta` on every request.
    pub async fn stateless(&self) -> Server {
        let lifecycle = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let client = ().serve_with_lifecycle(self.transport(), lifecycle).await.expect("server/discover over HTTP");
        Server {
            client,
            pid: self.child.id().expect("pid"),
        }
    }

    /// A raw POST to `/mcp` with these headers and body.
    pub async fn post(&self, headers: &[(&str, &str)], body: impl Into<reqwest::Body>) -> reqwest::Response {
        let mut request = reqwest::Client::new().post(&self.url).body(body);
        for (k, v) in headers {
            request = request.header(*k, *v);
        }
        request.send().await.expect("HTTP request")
    }

    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.token)
    }

    /// Rows of `table` in the database, read by another connection.
    pub fn count(&self, table: &str) -> i64 {
        let conn = rusqlite::Connection::open(&self.db).expect("open");
        conn.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0))
            .expect("count")
    }
}

const JSON_AND_SSE: (&str, &str) = ("accept", "application/json, text/event-stream");
const JSON: (&str, &str) = ("content-type", "application/json");

fn initialize() -> String {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "1" } } })
    .to_string()
}

#[tokio::test]
async fn the_core_flow_runs_over_http() {
    let server = HttpServer::start().await;
    let s = server.legacy().await;
    let id = s.ready("over http").await;
    let first = s
        .thought(json!({ "thought": "HTTP carries the ledger.", "nextThoughtNeeded": true }))
        .await;
    assert_eq!(first["sessionId"], id.as_str());
    assert_eq!(first["thoughtNumber"], 1);
    s.thought(json!({ "thought": "A second step.", "nextThoughtNeeded": true }))
        .await;
    s.thought(
        json!({ "thought": "Another way.", "branchId": "alt", "branchFromThought": 1, "nextThoughtNeeded": true }),
    )
    .await;
    s.thought(
        json!({ "thought": "The first, better put.", "isRevision": true, "revisesThought": 1,
        "nextThoughtNeeded": true }),
    )
    .await;
    let read = s.ok("read_thoughts", json!({ "sessionId": id, "range": [1, 3] })).await;
    assert_eq!(read["thoughts"].as_array().expect("thoughts").len(), 3);
    let shape = s.ok("get_structure", json!({ "sessionId": id })).await;
    assert_eq!(shape["branches"][0]["id"], "alt");
    assert_eq!(shape["revisions"][0]["revises"], 1);
    let closed = s
        .thought(json!({ "thought": "Done.", "nextThoughtNeeded": false }))
        .await;
    assert_eq!(closed["sessionClosed"], true);
    let export = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": id, "format": "markdown" }),
        )
        .await;
    assert!(export.to_string().contains("HTTP carries the ledger."));
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "ledger" }))
        .await;
    assert_eq!(found["sessions"][0]["id"], id.as_str());
    assert_eq!(server.count("thoughts"), 5);
}

/// A 2026-07-28 client keeps no state on the server: every call names its
/// session by the handle `start_new` returned, and one without it is told so.
#[tokio::test]
async fn a_stateless_client_works_by_handles() {
    let server = HttpServer::start().await;
    let s = server.stateless().await;
    let started = s.ok("start_new", json!({ "sessionTitle": "stateless" })).await;
    let id = started["session"]["id"].as_str().expect("id").to_string();
    s.ok("cipher", json!({ "sessionId": id, "brief": true })).await;
    for n in 1..=3 {
        let t = s
            .thought(json!({ "sessionId": id, "thought": format!("step {n}"), "nextThoughtNeeded": true }))
            .await;
        assert_eq!(t["thoughtNumber"], n);
    }
    let e = s
        .err(
            "thought",
            json!({ "thought": "no handle", "nextThoughtNeeded": true }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "sessionId", "{e}");
    assert!(e["message"].as_str().expect("message").contains("stateless"), "{e}");
    // Nor does a request reach a stage: the session does.
    let e = s.err("read_thoughts", json!({}), "INVALID_PAYLOAD").await;
    assert_eq!(e["details"]["field"], "sessionId", "{e}");
    assert_eq!(e["details"]["requiredStage"], 2, "{e}");
    assert!(!e["message"].as_str().expect("message").contains("  "), "{e}");
    let read = s.ok("read_thoughts", json!({ "sessionId": id })).await;
    assert_eq!(read["thoughts"].as_array().expect("thoughts").len(), 3);
    // An operation on no session is admitted by the handle's stage, which
    // is then no ignored argument.
    let models = s
        .ok(
            "mental_models",
            json!({ "subOperation": "list_models", "sessionId": id }),
        )
        .await;
    assert!(models.get("ignoredArguments").is_none(), "{models}");
    // Without one it passes too: it acts on no session, and a stateless
    // request has no staged flow of its own.
    for (operation, args) in [
        (
            "mental_models",
            json!({ "subOperation": "get_model", "modelId": "five-whys" }),
        ),
        ("knowledge", json!({ "subOperation": "list_patterns" })),
        ("session", json!({ "subOperation": "list" })),
    ] {
        s.ok(operation, args).await;
    }
    // A handle that names no session says so, not that a stage is missing.
    s.err(
        "read_thoughts",
        json!({ "sessionId": "0b6f2c1e-8d4a-4c5e-9f3b-2a7d1e6c8b90" }),
        "SESSION_NOT_FOUND",
    )
    .await;
    let state = s.ok("get_state", json!({ "sessionId": id })).await;
    assert_eq!(
        (state["stage"].as_u64(), state["sessionId"].as_str()),
        (Some(2), Some(id.as_str())),
        "{state}"
    );
    // Nothing was recorded by the refused call, and no session was made for it.
    assert_eq!(server.count("thoughts"), 3);
    assert_eq!(server.count("sessions"), 1);
    // A later conversation finds an earlier one's notebook: its own
    // sessionId admits the call, allSessions widens the list.
    let notebook = json!({ "subOperation": "create", "name": "kept", "sessionId": id });
    s.ok("notebook", notebook).await;
    let later = s.ok("start_new", json!({ "sessionTitle": "later" })).await;
    let later = later["session"]["id"].as_str().expect("id").to_string();
    s.ok("cipher", json!({ "sessionId": later, "brief": true })).await;
    let list = |all: Value| json!({ "subOperation": "list", "sessionId": later, "allSessions": all });
    assert_eq!(s.ok("notebook", list(json!(false))).await["total"], 0);
    let every = s.ok("notebook", list(json!("true"))).await;
    assert_eq!(every["notebooks"][0]["sessionId"], id.as_str(), "{every}");
}

/// Two legacy sessions on one server: each has its own stage and current session.
#[tokio::test]
async fn legacy_sessions_keep_their_own_stage_and_session() {
    let server = HttpServer::start().await;
    let a = server.legacy().await;
    let b = server.legacy().await;
    let a_id = a.ready("A").await;
    a.thought(json!({ "thought": "A's first", "nextThoughtNeeded": true }))
        .await;
    // B has reached no stage: A's cipher is not B's.
    let e = b
        .err(
            "thought",
            json!({ "thought": "B too early", "nextThoughtNeeded": true }),
            "STAGE_REQUIREMENT_NOT_MET",
        )
        .await;
    assert_eq!(e["details"]["currentStage"], 0, "{e}");
    let state = b.ok("get_state", json!({})).await;
    assert!(state["activeSession"].is_null(), "{state}");
    let b_id = b.ready("B").await;
    assert_ne!(a_id, b_id);
    let bt = b
        .thought(json!({ "thought": "B's first", "nextThoughtNeeded": true }))
        .await;
    assert_eq!(bt["sessionId"], b_id.as_str());
    let at = a
        .thought(json!({ "thought": "A's second", "nextThoughtNeeded": true }))
        .await;
    assert_eq!(at["sessionId"], a_id.as_str());
    assert_eq!(at["thoughtNumber"], 2);

    // Closing a legacy session answers 204 (the Python SDK takes 200 or
    // 204 as closed); the session is gone after it.
    let bearer = server.bearer();
    let auth = ("authorization", bearer.as_str());
    let r = server.post(&[JSON, JSON_AND_SSE, auth], initialize()).await;
    let session = r.headers()["mcp-session-id"].to_str().unwrap().to_string();
    let closed = reqwest::Client::new()
        .delete(&server.url)
        .header("authorization", bearer.as_str())
        .header("mcp-session-id", session.as_str())
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), 204);
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    let after = server
        .post(&[JSON, JSON_AND_SSE, auth, ("mcp-session-id", session.as_str())], list)
        .await;
    assert_eq!(after.status(), 404);
}

/// Without the right token nothing is reached: 401, and the database is untouched.
#[tokio::test]
async fn requests_without_the_token_get_401_and_change_nothing() {
    let server = HttpServer::start().await;
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": { "name": "thoughtbox_gateway",
        "arguments": { "operation": "start_new", "args": { "sessionTitle": "intruder" } } } })
    .to_string();
    for auth in [
        None,
        Some("Bearer wrong-token-of-some-length"),
        Some("Basic dXNlcjpwYXNz"),
    ] {
        let mut headers = vec![JSON, JSON_AND_SSE];
        if let Some(a) = auth {
            headers.push(("authorization", a));
        }
        for body in [initialize(), call.clone()] {
            let r = server.post(&headers, body).await;
            assert_eq!(r.status(), 401, "{auth:?}");
            assert!(r.headers().contains_key("www-authenticate"));
            let text = r.text().await.expect("body");
            assert!(!text.contains(&server.token), "the token is never shown");
        }
    }
    // Not in the URL either.
    let r = reqwest::Client::new()
        .post(format!("{}?token={}", server.url, server.token))
        .header(JSON.0, JSON.1)
        .header(JSON_AND_SSE.0, JSON_AND_SSE.1)
        .body(initialize())
        .send()
        .await
        .expect("request");
    assert_eq!(r.status(), 401);
    assert_eq!(server.count("sessions"), 0);
    // The Observatory's API too, and its page sends a browser to log in.
    let api = reqwest::Client::new()
        .get(server.url.replace("/mcp", "/api/sessions"))
        .send()
        .await
        .expect("request");
    assert_eq!(api.status(), 401);
    // With the token the same server answers.
    let s = server.legacy().await;
    s.ok("get_state", json!({})).await;
}

/// A page of another site, or a name that rebinds to this machine, is refused.
#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let server = HttpServer::start().await;
    let bearer = server.bearer();
    for (name, value) in [("host", "evil.example"), ("origin", "http://evil.example")] {
        let r = server
            .post(
                &[JSON, JSON_AND_SSE, ("authorization", &bearer), (name, value)],
                initialize(),
            )
            .await;
        assert_eq!(r.status(), 403, "{name}: {value}");
    }
    assert_eq!(server.count("sessions"), 0);
}

#[tokio::test]
async fn a_non_loopback_address_without_a_token_refuses_to_start() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("t.db");
    let out = command(&db)
        .args(["serve", "--http", "0.0.0.0:0"])
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("without a token") && said.contains("THOUGHTBOX_TOKEN"),
        "{said}"
    );
    assert!(!db.with_extension("token").exists(), "no token file is made for it");
    // With a token given it starts, and that token is the one to send.
    let token = "a-token-given-explicitly-0123456789";
    let mut cmd = command(&db);
    cmd.args(["serve", "--http", "0.0.0.0:0"])
        .env("THOUGHTBOX_TOKEN", token)
        .stdin(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let first = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("started")
        .expect("line")
        .expect("a line");
    assert!(first.contains("serving MCP at"), "{first}");
    let said = lines.next_line().await.expect("line").expect("a line");
    assert!(said.contains("THOUGHTBOX_TOKEN") && !said.contains(token), "{said}");
}

/// What an MCP client never sends gets a clear error, and the server goes on.
#[tokio::test]
async fn bad_bodies_get_clear_errors_and_the_server_keeps_serving() {
    let server = HttpServer::start().await;
    let bearer = server.bearer();
    let auth = ("authorization", bearer.as_str());
    let r = server.post(&[JSON, JSON_AND_SSE, auth], "{not json").await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.expect("JSON");
    assert_eq!(body["error"]["code"], -32700, "{body}");
    let r = server
        .post(&[("content-type", "text/plain"), JSON_AND_SSE, auth], initialize())
        .await;
    assert_eq!(r.status(), 415);
    // Over the 16 MiB a message may have, as on stdio.
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(17 << 20)
    );
    let r = server.post(&[JSON, JSON_AND_SSE, auth], huge).await;
    assert_eq!(r.status(), 413);
    let s = server.legacy().await;
    let sid = s.ready("still serving").await;
    assert_eq!(server.count("sessions"), 1);
    // A key named twice is refused under the request's id before anything
    // reads it, as on stdio: this call must not run as a delete.
    let twice = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"thoughtbox_gateway","arguments":{{"operation":"session","args":{{"subOperation":"get","subOperation":"delete","sessionId":"{sid}"}}}}}}}}"#
    );
    let r = server.post(&[JSON, JSON_AND_SSE, auth], twice).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.expect("JSON");
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["error"]["code"], -32602, "{body}");
    assert_eq!(
        body["error"]["data"]["duplicateKey"], "params.arguments.args.subOperation",
        "{body}"
    );
    assert_eq!(server.count("sessions"), 1);
    s.ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
}

/// Sixteen clients writing to one session at once: every thought recorded
/// once, numbered 1..=n without gaps or duplicates.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_clients_at_once_number_one_chain_without_gaps() {
    let server = HttpServer::start().await;
    let first = server.stateless().await;
    let id = first.ok("start_new", json!({ "sessionTitle": "shared" })).await["session"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    first.ok("cipher", json!({ "sessionId": id, "brief": true })).await;
    const CLIENTS: usize = 16;
    const EACH: usize = 12;
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let client = server.stateless().await;
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            let mut numbers = Vec::new();
            for i in 0..EACH {
                let t = client
                    .thought(json!({ "sessionId": id, "thought": format!("client {c} step {i}"),
                        "nextThoughtNeeded": true }))
                    .await;
                numbers.push(t["thoughtNumber"].as_i64().expect("number"));
            }
            numbers
        }));
    }
    let mut numbers = Vec::new();
    for t in tasks {
        numbers.extend(t.await.expect("client"));
    }
    numbers.sort_unstable();
    let expected: Vec<i64> = (1..=(CLIENTS * EACH) as i64).collect();
    assert_eq!(numbers, expected, "every number once");
    let conn = rusqlite::Connection::open(&server.db).expect("open");
    let (rows, distinct_texts, distinct_numbers): (i64, i64, i64) = conn
        .query_row(
            "SELECT count(*), count(DISTINCT thought), count(DISTINCT thought_number) FROM thoughts",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("counts");
    assert_eq!((rows, distinct_texts, distinct_numbers), (192, 192, 192));
}

/// `--http --stdio`: one process serves both, on one ledger, and stops
/// when the stdio client goes.
#[tokio::test]
async fn http_beside_stdio_shares_the_ledger_and_stops_with_stdio() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("t.db");
    let mut cmd = command(&db);
    cmd.args(["serve", "--http", "127.0.0.1:0", "--stdio"]);
    let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = transport.id().expect("pid");
    let mut lines = BufReader::new(stderr.expect("stderr")).lines();
    let url = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next_line().await.expect("line") {
            if let Some(rest) = line.strip_prefix("thoughtbox: serving MCP at ") {
                return rest.split_whitespace().next().expect("url").to_string();
            }
        }
        panic!("no address");
    })
    .await
    .expect("listening");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let stdio = Server {
        client: ().serve(transport).await.expect("initialize on stdio"),
        pid,
    };
    let id = stdio.ready("both ways").await;
    stdio
        .thought(json!({ "thought": "Written on stdio.", "nextThoughtNeeded": true }))
        .await;
    let token = std::fs::read_to_string(db.with_extension("token")).expect("token");
    let http = Server {
        client: ()
            .serve(StreamableHttpClientTransport::from_config(
                StreamableHttpClientTransportConfig::with_uri(url.as_str()).auth_header(token.trim().to_string()),
            ))
            .await
            .expect("initialize over HTTP"),
        pid,
    };
    let read = http.ok("read_thoughts", json!({ "sessionId": id })).await;
    assert_eq!(read["thoughts"][0]["thought"], "Written on stdio.");
    stdio.stop().await;
    assert!(reqwest::get(&url).await.is_err(), "the HTTP side stopped with stdio");
}

/// A thousand idle connections take nothing from the clients that talk.
#[tokio::test]
async fn a_thousand_idle_connections_do_not_stop_the_others() {
    // This test process holds the connections too: lift its own limit as the server does.
    thoughtbox::limits::ensure_open_files().expect("open-file limit");
    let server = HttpServer::start().await;
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let mut idle = Vec::new();
    for _ in 0..1000 {
        idle.push(tokio::net::TcpStream::connect(&addr).await.expect("connect"));
    }
    let s = server.legacy().await;
    s.ready("among idle connections").await;
    s.thought(json!({ "thought": "Still answered.", "nextThoughtNeeded": true }))
        .await;
    drop(idle);
    assert_eq!(server.count("thoughts"), 1);
}

/// Clients that hang up in the middle of their requests (a timeout, a
/// closed laptop): each thought is recorded whole or not at all, the chain
/// stays numbered without gaps, and the server serves the next client.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_disconnect_mid_request_leave_whole_thoughts() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("t.db");
    let server = HttpServer::start_on(&db, &["--no-stages"]).await;
    let s = server.legacy().await;
    let sid = s.ok("start_new", json!({ "sessionTitle": "cut off" })).await["sessionId"]
        .as_str()
        .expect("sessionId")
        .to_string();
    let bearer = server.bearer();
    let auth = ("authorization", bearer.as_str());
    let r = server.post(&[JSON, JSON_AND_SSE, auth], initialize()).await;
    let session = r
        .headers()
        .get("mcp-session-id")
        .expect("a legacy session")
        .to_str()
        .expect("ASCII")
        .to_string();
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string();
    server
        .post(
            &[JSON, JSON_AND_SSE, auth, ("mcp-session-id", session.as_str())],
            initialized,
        )
        .await;
    let addr = server
        .url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_string();
    let mut cut_off = Vec::new();
    for i in 0..24u64 {
        let call = json!({ "jsonrpc": "2.0", "id": 100 + i, "method": "tools/call", "params": {
            "name": "thoughtbox_gateway", "arguments": { "operation": "thought", "args": {
                "sessionId": sid, "thought": format!("cut off {i}"), "nextThoughtNeeded": true } } } })
        .to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nauthorization: {bearer}\r\n\
             mcp-session-id: {session}\r\ncontent-length: {}\r\n\r\n",
            call.len()
        );
        let mut tcp = tokio::net::TcpStream::connect(&addr).await.expect("connect");
        cut_off.push(tcp.local_addr().expect("local address").port());
        tcp.write_all(head.as_bytes()).await.expect("head");
        // Odd ones hang up half-way through the body: never run. Even ones
        // send it whole and hang up before the answer.
        let sent = if i % 2 == 1 { call.len() / 2 } else { call.len() };
        tcp.write_all(&call.as_bytes()[..sent]).await.expect("body");
        drop(tcp);
    }
    // Checked once the server is done with every one of them.
    let port = addr.parse::<std::net::SocketAddr>().expect("addr").port();
    until_server_closed(
        port,
        &cut_off,
        "the server kept connections whose clients hung up",
        Duration::from_millis(200),
    )
    .await;
    // The server goes on serving this session.
    s.ok(
        "thought",
        json!({ "sessionId": sid, "thought": "after", "nextThoughtNeeded": true }),
    )
    .await;
    // What was committed is whole: each text once, numbers 1..=n, and only
    // requests sent whole among them.
    let conn = rusqlite::Connection::open(&db).expect("open");
    let rows: Vec<(u32, String)> = conn
        .prepare("SELECT thought_number, thought FROM thoughts WHERE session_id = ?1 ORDER BY thought_number")
        .expect("prepare")
        .query_map([&sid], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("rows");
    let numbers: Vec<u32> = rows.iter().map(|(n, _)| *n).collect();
    assert_eq!(numbers, (1..=rows.len() as u32).collect::<Vec<_>>(), "{rows:?}");
    let mut texts: Vec<&str> = rows.iter().map(|(_, t)| t.as_str()).collect();
    texts.sort_unstable();
    texts.dedup();
    assert_eq!(texts.len(), rows.len(), "no thought twice: {rows:?}");
    let whole = |t: &str| {
        t.strip_prefix("cut off ")
            .and_then(|n| n.parse::<u32>().ok())
            .is_some_and(|n| n % 2 == 0)
    };
    assert!(
        texts.iter().all(|t| *t == "after" || whole(t)),
        "only requests sent whole were run: {rows:?}"
    );
    assert!(texts.contains(&"after"), "{rows:?}");
}

/// A server whose stderr has gone (its terminal closed, a log pipe ended)
/// still stops on SIGTERM: logging the signal must not be what fails.
#[cfg(unix)]
#[tokio::test]
async fn a_server_without_a_stderr_still_stops_on_a_signal() {
    let dir = tempfile::tempdir().expect("dir");
    let mut cmd = command(&dir.path().join("t.db"));
    // The default level, at which the signal is logged.
    cmd.args(["serve", "--http", "127.0.0.1:0"])
        .env("RUST_LOG", "thoughtbox=info");
    let (child, lines, url) = announced(cmd).await;
    // Nobody reads the server's stderr from here on: its writes fail.
    drop(lines);
    let status = reqwest::get(url).await.expect("GET /mcp").status();
    assert_eq!(status, 401, "the server answers");
    stops_cleanly_on_sigterm(child).await;
}

/// THOUGHTBOX_HTTP, exported for a shared server, is read by `serve` only:
/// a client that starts the bare binary (passing its environment on) still
/// gets a stdio server.
#[tokio::test]
async fn the_http_variable_is_read_by_serve_only() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("t.db");
    let mut cmd = command(&db);
    cmd.env("THOUGHTBOX_HTTP", "127.0.0.1:0");
    let server = crate::common::start_with((), cmd).await;
    let started = server.call("start_new", json!({ "sessionTitle": "over stdio" })).await;
    assert!(started.is_ok(), "{started:?}");

    let mut cmd = command(&db);
    cmd.arg("serve").env("THOUGHTBOX_HTTP", "127.0.0.1:0");
    let (_child, _lines, url) = announced(cmd).await;
    assert!(url.ends_with("/mcp"), "{url}");
}

/// The server says where it listens only once a signal would stop it
/// cleanly: whoever reads that line may stop it at once.
#[cfg(unix)]
#[tokio::test]
async fn a_signal_right_after_the_announcement_is_a_clean_stop() {
    let dir = tempfile::tempdir().expect("dir");
    let mut cmd = command(&dir.path().join("t.db"));
    cmd.args(["serve", "--http", "127.0.0.1:0"]);
    let (child, mut lines, _url) = announced(cmd).await;
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    stops_cleanly_on_sigterm(child).await;
}

/// A SIGTERM while clients of both generations write: each write is
/// answered, or refused before it is done. None is committed while its
/// client is told nothing, since that client would send it again. Three
/// rounds on one ledger, as the signal lands at another moment each time.
#[cfg(unix)]
#[tokio::test]
async fn a_sigterm_answers_the_writes_in_flight() {
    let dir = tempfile::tempdir().expect("dir");
    let db = dir.path().join("t.db");
    for round in 0..3 {
        let server = HttpServer::start_on(&db, &[]).await;
        let mut writers = Vec::new();
        for c in 0..6 {
            let s = if c % 2 == 0 {
                server.stateless().await
            } else {
                server.legacy().await
            };
            writers.push(tokio::spawn(write_until_stopped(
                s,
                format!("round {round} writer {c}"),
            )));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        stops_cleanly_on_sigterm(server.child).await;
        let conn = rusqlite::Connection::open(&db).expect("open");
        let stored: std::collections::HashSet<String> = conn
            .prepare("SELECT thought FROM thoughts")
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<Result<_, _>>()
            .expect("rows");
        let mut answered = 0;
        for writer in writers {
            for (text, outcome) in writer.await.expect("writer") {
                match outcome {
                    Some(true) => {
                        answered += 1;
                        assert!(stored.contains(&text), "acknowledged, then lost: {text}");
                    }
                    Some(false) => assert!(!stored.contains(&text), "refused, yet written: {text}"),
                    None => assert!(
                        !stored.contains(&text),
                        "written, while its client was told nothing: {text}"
                    ),
                }
            }
        }
        assert!(answered > 0, "the writers wrote before the signal");
    }
}

/// Write thoughts into a new session of `name` until the server stops:
/// each thought's text, and whether it was answered as done (`None`: no
/// answer at all).
#[cfg(unix)]
async fn write_until_stopped(s: Server, name: String) -> Vec<(String, Option<bool>)> {
    use rmcp::model::CallToolRequestParams;
    let started = s.ok("start_new", json!({ "sessionTitle": name })).await;
    let sid = started["session"]["id"].as_str().expect("id").to_string();
    s.ok("cipher", json!({ "sessionId": sid, "brief": true })).await;
    let mut sent = Vec::new();
    for n in 1.. {
        let text = format!("{name} thought {n}");
        let args = json!({ "sessionId": sid, "thought": text, "nextThoughtNeeded": true });
        let Value::Object(arguments) = json!({ "operation": "thought", "args": args }) else {
            unreachable!("an object")
        };
        let call = s
            .client
            .call_tool(CallToolRequestParams::new("thoughtbox_gateway").with_arguments(arguments));
        // rmcp's client of a legacy session may wait on a stream the
        // stopped server will never resume: no answer, as with an error.
        match tokio::time::timeout(Duration::from_secs(5), call).await {
            Ok(Ok(result)) => sent.push((text, Some(result.is_error != Some(true)))),
            _ => {
                sent.push((text, None));
                break;
            }
        }
    }
    sent
}
