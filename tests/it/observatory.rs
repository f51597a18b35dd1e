//! The Observatory: its JSON API and WebSocket behind the login cookie,
//! live updates whichever process records the thought, and the page itself
//! in headless Chromium (Debian's `chromium` and `chromium-driver`, which
//! `.ci/run` installs), driven through chromedriver's WebDriver API.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

use crate::common::{Server, until_server_closed};
use crate::http::HttpServer;

impl HttpServer {
    pub fn base(&self) -> String {
        self.url.trim_end_matches("/mcp").to_string()
    }

    /// The cookie the login form sets.
    async fn login(&self) -> String {
        let r = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client")
            .post(format!("{}/login", self.base()))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={}", self.token))
            .send()
            .await
            .expect("login");
        assert_eq!(r.status(), 303);
        let cookie = r.headers()["set-cookie"].to_str().expect("cookie").to_string();
        for attribute in ["HttpOnly", "SameSite=Strict"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        let cookie = cookie.split(';').next().expect("name=value").to_string();
        // A browser sends the cookie to every port of the host: it must
        // not carry the token that /mcp takes.
        assert!(!cookie.contains(&self.token), "{cookie}");
        cookie
    }

    async fn api(&self, cookie: &str, path: &str) -> reqwest::Response {
        reqwest::Client::new()
            .get(format!("{}{path}", self.base()))
            .header("cookie", cookie)
            .send()
            .await
            .expect("request")
    }
}

/// A session with a main chain, a branch and a revision; its id.
async fn reasoned(s: &Server, title: &str) -> String {
    let id = s.ready(title).await;
    for text in ["Frame the problem.", "Measure before guessing."] {
        s.thought(json!({ "thought": text, "nextThoughtNeeded": true })).await;
    }
    s.thought(
        json!({ "thought": "Try another angle.", "branchId": "alt", "branchFromThought": 1,
        "nextThoughtNeeded": true }),
    )
    .await;
    s.thought(
        json!({ "thought": "Framed better.", "isRevision": true, "revisesThought": 1,
        "nextThoughtNeeded": true }),
    )
    .await;
    id
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn socket(server: &HttpServer, cookie: Option<&str>) -> Result<Socket, tokio_tungstenite::tungstenite::Error> {
    let mut request = format!("{}/ws", server.base().replace("http://", "ws://"))
        .into_client_request()
        .expect("request");
    if let Some(c) = cookie {
        request.headers_mut().insert("cookie", c.parse().expect("header"));
    }
    tokio_tungstenite::connect_async(request).await.map(|(s, _)| s)
}

/// Subscribe the socket to session `id`.
async fn subscribe(ws: &mut Socket, id: &str) {
    ws.send(Message::text(
        json!({ "type": "subscribe", "sessionId": id }).to_string(),
    ))
    .await
    .expect("send");
}

/// The next frame of `kind` (others skipped), waiting at most a minute.
async fn next_frame(ws: &mut Socket, kind: &str) -> Value {
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let message = ws.next().await.expect("open").expect("frame");
            if let Message::Text(text) = message {
                let frame: Value = serde_json::from_str(&text).expect("JSON frame");
                if frame["type"] == kind {
                    return frame;
                }
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no {kind} frame"))
}

#[tokio::test]
async fn the_api_serves_lists_snapshots_exports_and_analysis_behind_the_cookie() {
    let server = HttpServer::start().await;
    let s = server.legacy().await;
    let id = reasoned(&s, "Observed session").await;
    let another = s
        .ok(
            "start_new",
            json!({ "sessionTitle": "Another", "tags": ["caching"], "newWork": { "project": "web" } }),
        )
        .await["session"]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let cookie = server.login().await;
    let list: Value = server.api(&cookie, "/api/sessions").await.json().await.expect("JSON");
    assert_eq!(list["sessions"].as_array().expect("sessions").len(), 2);
    assert_eq!(list["sessions"][0]["title"], "Another", "newest first");
    let web: Value = server
        .api(&cookie, "/api/sessions?project=web")
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(web["sessions"].as_array().expect("sessions").len(), 1);
    let found: Value = server
        .api(&cookie, "/api/sessions?search=measure")
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(found["sessions"][0]["id"], id.as_str());
    assert_eq!(found["sessions"][0]["matches"][0]["thoughtNumber"], 2);
    // Search pages by offset, and a project filter sees every match.
    for title in ["Caching plan A", "Caching plan B"] {
        s.ok("start_new", json!({ "sessionTitle": title })).await;
    }
    let page = |q: &'static str| {
        let server = &server;
        let cookie = cookie.clone();
        async move { server.api(&cookie, q).await.json::<Value>().await.expect("JSON") }
    };
    let first = page("/api/sessions?search=caching&limit=2").await;
    assert_eq!(
        (first["sessions"].as_array().map(Vec::len), &first["hasMore"]),
        (Some(2), &json!(true)),
        "{first}"
    );
    let rest = page("/api/sessions?search=caching&limit=2&offset=2").await;
    assert_eq!(
        (rest["sessions"].as_array().map(Vec::len), &rest["hasMore"]),
        (Some(1), &json!(false)),
        "{rest}"
    );
    assert_eq!(rest["total"], 3, "{rest}");
    let ids = |v: &Value| -> Vec<Value> {
        v["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x["id"].clone())
            .collect()
    };
    assert!(ids(&rest).iter().all(|id| !ids(&first).contains(id)), "{first} {rest}");
    let in_web = page("/api/sessions?search=caching&project=web").await;
    assert_eq!(
        (in_web["total"].as_u64(), in_web["sessions"][0]["title"].as_str()),
        (Some(1), Some("Another")),
        "{in_web}"
    );
    // A word only in a thought's text is found with a project or tag as
    // without, with the matching thought, and only in those sessions.
    s.thought(json!({ "sessionId": another, "thought": "Evict the oldest entries first.", "nextThoughtNeeded": true }))
        .await;
    for q in [
        "/api/sessions?search=oldest",
        "/api/sessions?search=oldest&project=web",
        "/api/sessions?search=oldest&tag=caching",
        "/api/sessions?search=oldest&project=web&tag=caching",
    ] {
        let found = page(q).await;
        assert_eq!(
            (found["total"].as_u64(), found["sessions"][0]["id"].as_str()),
            (Some(1), Some(another.as_str())),
            "{q}: {found}"
        );
        assert_eq!(found["sessions"][0]["matches"][0]["thoughtNumber"], 1, "{q}: {found}");
    }
    for q in [
        "/api/sessions?search=oldest&project=nowhere",
        "/api/sessions?search=measure&project=web",
    ] {
        let none = page(q).await;
        assert_eq!(
            (none["total"].as_u64(), &none["sessions"]),
            (Some(0), &json!([])),
            "{q}: {none}"
        );
    }
    let tags: Value = server.api(&cookie, "/api/tags").await.json().await.expect("JSON");
    assert_eq!(tags["projects"][0]["name"], "web");
    let snap: Value = server
        .api(&cookie, &format!("/api/sessions/{id}"))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(snap["session"]["status"], "active");
    assert_eq!(snap["thoughts"].as_array().expect("main").len(), 3);
    assert_eq!(snap["branches"]["alt"]["fromThoughtNumber"], 1);
    assert_eq!(snap["thoughts"][2]["revisesThought"], 1);
    let md = server
        .api(&cookie, &format!("/api/sessions/{id}/export?format=markdown"))
        .await;
    assert!(
        md.headers()["content-disposition"]
            .to_str()
            .expect("header")
            .contains(".md")
    );
    assert!(md.text().await.expect("text").contains("Measure before guessing."));
    let json_export: Value = server
        .api(&cookie, &format!("/api/sessions/{id}/export"))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(json_export["session"]["id"], id.as_str());
    let analysis: Value = server
        .api(&cookie, &format!("/api/sessions/{id}/analysis"))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(analysis["sessionId"], id.as_str(), "{analysis}");
    let missing = server.api(&cookie, "/api/sessions/no-such-session").await;
    assert_eq!(missing.status(), 404);
    let bad = server
        .api(&cookie, &format!("/api/sessions/{id}/export?format=pdf"))
        .await;
    assert_eq!(bad.status(), 400);
    // The cookie opens the Observatory, not /mcp.
    let mcp = server
        .post(
            &[
                ("cookie", &cookie),
                ("content-type", "application/json"),
                ("accept", "application/json, text/event-stream"),
            ],
            "{}",
        )
        .await;
    assert_eq!(mcp.status(), 401);
    assert_eq!(
        server.api("thoughtbox_token=wrong", "/api/sessions").await.status(),
        401
    );
}

/// Subscribed, a socket gets the session's snapshot, then each thought as
/// it is recorded: through this server, or by another process on the file.
#[tokio::test]
async fn the_websocket_sends_a_snapshot_then_every_thought_whoever_records_it() {
    let server = HttpServer::start().await;
    assert!(socket(&server, None).await.is_err(), "no cookie, no socket");
    let cookie = server.login().await;
    let mut ws = socket(&server, Some(&cookie)).await.expect("socket");
    ws.send(Message::text(
        json!({ "type": "subscribe", "scope": "sessions" }).to_string(),
    ))
    .await
    .expect("send");
    let s = server.legacy().await;
    let id = s.ready("watched").await;
    let started = next_frame(&mut ws, "session_started").await;
    assert_eq!(started["payload"]["session"]["id"], id.as_str());
    subscribe(&mut ws, &id).await;
    let snap = next_frame(&mut ws, "session_snapshot").await;
    assert_eq!(snap["sessionId"], id.as_str());
    assert_eq!(snap["payload"]["thoughts"], json!([]));
    s.thought(json!({ "thought": "Recorded over HTTP.", "nextThoughtNeeded": true }))
        .await;
    let added = next_frame(&mut ws, "thought_added").await;
    assert_eq!(added["payload"]["thought"]["thought"], "Recorded over HTTP.");
    assert!(added["payload"]["parentId"].is_null());
    // Another process: a stdio server on the same database.
    let other = crate::common::start(&server.db).await;
    let recorded = Instant::now();
    other.ok("cipher", json!({ "sessionId": id, "brief": true })).await;
    other
        .thought(
            json!({ "sessionId": id, "thought": "Recorded elsewhere.", "branchId": "side",
            "branchFromThought": 1, "nextThoughtNeeded": true }),
        )
        .await;
    let branched = next_frame(&mut ws, "thought_branched").await;
    eprintln!(
        "a thought of another process reached the socket in {:?}",
        recorded.elapsed()
    );
    assert_eq!(branched["payload"]["branchId"], "side");
    assert_eq!(branched["payload"]["fromThoughtNumber"], 1);
    other
        .thought(json!({ "sessionId": id, "thought": "Done.", "nextThoughtNeeded": false }))
        .await;
    let ended = next_frame(&mut ws, "session_ended").await;
    assert_eq!(ended["payload"]["finalThoughtCount"], 3);
    other.stop().await;
    // Nonsense gets an error frame, and the socket stays.
    ws.send(Message::text("{\"type\":\"dance\"}")).await.expect("send");
    let error = next_frame(&mut ws, "error").await;
    assert!(error["payload"]["message"].as_str().is_some());
}

/// A socket that never reads holds nothing up: the writes it watches are
/// all recorded, other sockets go on getting their frames, and it is
/// dropped once a frame has waited 5 s to go out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_that_never_reads_holds_nothing_up() {
    // A frame may take half a second to go out (5 s in a release build).
    let server = HttpServer::start_limited("send_wait_ms=500").await;
    let cookie = server.login().await;
    // A small receive buffer, as a slow client over a real network has:
    // loopback's own grows to 32 MiB, which would take the whole flood.
    let addr = server.base().trim_start_matches("http://").to_string();
    let tcp = tokio::net::TcpSocket::new_v4().expect("socket");
    tcp.set_recv_buffer_size(16 << 10).expect("buffer size");
    let tcp = tcp.connect(addr.parse().expect("addr")).await.expect("connect");
    let ours = tcp.local_addr().expect("local address").port();
    let mut request = format!("ws://{addr}/ws").into_client_request().expect("request");
    request.headers_mut().insert("cookie", cookie.parse().expect("header"));
    let (mut stuck, _) = tokio_tungstenite::client_async(request, tcp).await.expect("socket");
    stuck
        .send(Message::text(
            json!({ "type": "subscribe", "scope": "sessions" }).to_string(),
        ))
        .await
        .expect("send");
    let s = server.legacy().await;
    s.ready("flooded").await;
    // Frames far beyond what the socket buffers hold (~16 MiB: a frame
    // carries 4,000 characters of a thought, here of 4 bytes each).
    let big = "🦀".repeat(4000);
    for i in 0..1000 {
        s.thought(json!({ "thought": format!("{i} {big}"), "nextThoughtNeeded": true }))
            .await;
    }
    assert_eq!(server.count("thoughts"), 1000);
    let mut fresh = socket(&server, Some(&cookie)).await.expect("a new socket");
    fresh
        .send(Message::text(
            json!({ "type": "subscribe", "scope": "sessions" }).to_string(),
        ))
        .await
        .expect("send");
    let after = s.ok("start_new", json!({ "sessionTitle": "after the flood" })).await;
    let started = next_frame(&mut fresh, "session_started").await;
    assert_eq!(started["payload"]["session"]["id"], after["session"]["id"]);
    // Past the time a frame may take to go out, the stuck socket is
    // dropped (the frames it did not read keep that from reaching it):
    // reading it then gives what the buffers held, then its end.
    let port = addr.parse::<std::net::SocketAddr>().expect("addr").port();
    until_server_closed(
        port,
        &[ours],
        "the server kept the socket that never read",
        Duration::from_secs(3),
    )
    .await;
    let mut got = 0;
    let ended = loop {
        match tokio::time::timeout(Duration::from_secs(10), stuck.next()).await {
            Ok(Some(Ok(Message::Close(_))) | None | Some(Err(_))) => break true,
            Ok(Some(Ok(_))) => got += 1,
            Err(_) => break false,
        }
    };
    assert!(ended, "the socket that never read was dropped (it had {got} frames)");
    assert!(got < 1000, "dropped before it took every frame: {got}");
}

/// A session of ten thoughts of 0.9 MiB each: its snapshot (9 MB whole, over
/// what may wait to go out to a socket) comes with each text cut, the socket
/// stays open and later thoughts arrive, cut too; a thought is read whole
/// over the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_of_huge_thoughts_is_watched_with_its_texts_cut() {
    let server = HttpServer::start().await;
    let s = server.legacy().await;
    let id = s.ready("huge thoughts").await;
    let huge = |i: usize| format!("{i} {}", "é".repeat(450 << 10));
    for i in 0..10 {
        s.thought(json!({ "thought": huge(i), "nextThoughtNeeded": true }))
            .await;
    }
    let cookie = server.login().await;
    let mut ws = socket(&server, Some(&cookie)).await.expect("socket");
    subscribe(&mut ws, &id).await;
    let snap = next_frame(&mut ws, "session_snapshot").await;
    let thoughts = snap["payload"]["thoughts"].as_array().expect("thoughts");
    assert_eq!(thoughts.len(), 10);
    let whole_chars = huge(0).chars().count() as u64;
    for t in thoughts {
        assert_eq!(t["thoughtTruncated"], true, "{}", t["id"]);
        assert_eq!(t["thoughtChars"], whole_chars);
        assert_eq!(t["thought"].as_str().expect("text").chars().count(), 4000);
    }
    // Still open: a later thought arrives, cut, and a short one whole.
    s.thought(json!({ "thought": huge(10), "nextThoughtNeeded": true }))
        .await;
    // Frames of the thoughts recorded just before subscribing may come first.
    let added = loop {
        let added = next_frame(&mut ws, "thought_added").await;
        if added["payload"]["thought"]["thoughtNumber"] == 11 {
            break added;
        }
    };
    assert_eq!(added["payload"]["thought"]["thoughtTruncated"], true);
    s.thought(json!({ "thought": "A short one.", "nextThoughtNeeded": true }))
        .await;
    let short = next_frame(&mut ws, "thought_added").await;
    assert_eq!(short["payload"]["thought"]["thought"], "A short one.");
    assert!(short["payload"]["thought"].get("thoughtTruncated").is_none(), "{short}");
    // The API cuts the same way, reads one thought whole, and the whole
    // session when asked.
    let node = thoughts[3]["id"].as_str().expect("node id").to_string();
    let rest: Value = server
        .api(&cookie, &format!("/api/sessions/{id}"))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(rest["thoughts"][3]["thoughtTruncated"], true);
    let one = server
        .api(
            &cookie,
            &format!("/api/sessions/{id}/thoughts/{}", node.replace(':', "%3A")),
        )
        .await;
    assert_eq!(one.status(), 200);
    let one: Value = one.json().await.expect("JSON");
    assert_eq!(one["thought"].as_str(), Some(huge(3).as_str()));
    assert!(one.get("thoughtTruncated").is_none());
    let full: Value = server
        .api(&cookie, &format!("/api/sessions/{id}?full=true"))
        .await
        .json()
        .await
        .expect("JSON");
    assert_eq!(full["thoughts"][0]["thought"].as_str(), Some(huge(0).as_str()));
    for bad in [
        format!("/api/sessions/{id}/thoughts/nope"),
        format!("/api/sessions/nope/thoughts/{node}"),
    ] {
        assert_eq!(server.api(&cookie, &bad).await.status(), 404, "{bad}");
    }
}

/// A session too large for a snapshot even with its texts cut (here 400
/// thoughts of 4,000 four-byte characters, 6.4 MB cut): an error frame
/// names it instead, the socket stays open and its new thoughts arrive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_too_large_for_a_snapshot_is_still_watched() {
    let server = HttpServer::start().await;
    let s = server.legacy().await;
    let id = s.ready("too large").await;
    let big = "🦀".repeat(4000);
    for i in 0..400 {
        s.thought(json!({ "thought": format!("{i} {big}"), "nextThoughtNeeded": true }))
            .await;
    }
    let cookie = server.login().await;
    let mut ws = socket(&server, Some(&cookie)).await.expect("socket");
    subscribe(&mut ws, &id).await;
    let error = next_frame(&mut ws, "error").await;
    assert_eq!(error["sessionId"], id.as_str(), "{error}");
    let message = error["payload"]["message"].as_str().expect("message");
    assert!(
        message.contains("too large") && message.contains("400 thoughts"),
        "{message}"
    );
    s.thought(json!({ "thought": "Still watched.", "nextThoughtNeeded": true }))
        .await;
    let added = loop {
        let added = next_frame(&mut ws, "thought_added").await;
        if added["payload"]["thought"]["thoughtNumber"] == 401 {
            break added;
        }
    };
    assert_eq!(added["payload"]["thought"]["thought"], "Still watched.");
}

/// What a browser must not do with the server's answers, on every kind of
/// answer: the page, its assets, the API, the login form and a refusal.
#[tokio::test]
async fn every_answer_says_what_a_browser_may_do_with_it() {
    let server = HttpServer::start().await;
    let cookie = server.login().await;
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let base = server.base();
    let answers = [
        http.get(format!("{base}/login")).send().await.expect("login"),
        http.get(format!("{base}/login.css")).send().await.expect("login.css"),
        server.api(&cookie, "/").await,
        server.api(&cookie, "/observatory.js").await,
        server.api(&cookie, "/api/sessions").await,
        http.get(format!("{base}/api/sessions"))
            .send()
            .await
            .expect("no cookie"),
        http.get(format!("{base}/")).send().await.expect("no cookie"),
    ];
    let statuses: Vec<u16> = answers.iter().map(|r| r.status().as_u16()).collect();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 401, 303]);
    for r in &answers {
        let csp = r.headers()["content-security-policy"].to_str().expect("text");
        assert!(
            csp.contains("default-src 'self'") && csp.contains("frame-ancestors 'none'"),
            "{csp}"
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
        assert_eq!(r.headers()["referrer-policy"], "same-origin");
        // How long an idle connection is kept, for clients that close theirs first.
        assert_eq!(r.headers()["keep-alive"], "timeout=120");
    }
    // The login form's style is a file the policy allows, served without the token.
    assert!(
        answers[1].headers()["content-type"]
            .to_str()
            .expect("type")
            .starts_with("text/css")
    );
    let form = http
        .get(format!("{base}/login"))
        .send()
        .await
        .expect("login")
        .text()
        .await
        .expect("body");
    assert!(!form.contains("<style") && form.contains("/login.css"), "{form}");
}

/// Wrong tokens typed into the login form: each failure slows the next
/// attempt from that address, many at once are refused past a few, an
/// attempt from another address is not slowed, and the right token still
/// signs in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_logins_slow_down_their_address_only() {
    let server = HttpServer::start().await;
    let login = |from: &str, token: &str| {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .local_address(Some(from.parse().expect("address")))
            .build()
            .expect("client");
        client
            .post(format!("{}/login", server.base()))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
    };
    let wrong = "0123456789abcdef-wrong";
    let started = Instant::now();
    for _ in 0..6 {
        let r = login("127.0.0.1", wrong).await.expect("login");
        assert_eq!(r.status(), 401);
    }
    // 50, 100, 200, 400, 800 and 1,000 ms of delay, at least.
    assert!(
        started.elapsed() >= Duration::from_millis(2550),
        "{:?}",
        started.elapsed()
    );

    // A burst from the slowed address: past a few waiting, refused unchecked.
    let burst: Vec<_> = (0..12).map(|_| tokio::spawn(login("127.0.0.1", wrong))).collect();
    // Meanwhile another address signs in at once.
    let other = login("127.0.0.2", &server.token).await.expect("login");
    assert_eq!(other.status(), 303);
    let mut refused = 0;
    for attempt in burst {
        let r = attempt.await.expect("join").expect("login");
        match r.status().as_u16() {
            401 => {}
            429 => {
                refused += 1;
                assert!(r.headers().contains_key("retry-after"));
            }
            other => panic!("status {other}"),
        }
    }
    assert!(refused > 0, "a burst of 12 was all checked");
    // The right token from the slowed address signs in, after its turn.
    let r = tokio::time::timeout(Duration::from_secs(30), login("127.0.0.1", &server.token))
        .await
        .expect("answered")
        .expect("login");
    assert_eq!(r.status(), 303);
}

/// The bounds on connections leave the Observatory's sockets alone: a
/// socket idle past the header deadline still answers, and open sockets
/// count against the cap, so a connection past it waits until one closes.
#[tokio::test]
async fn sockets_outlive_the_deadline_and_count_against_the_cap() {
    let server = HttpServer::start_limited("header_read_ms=300,max_connections=2").await;
    let cookie = server.login().await;
    let mut first = socket(&server, Some(&cookie)).await.expect("a socket");
    let mut second = socket(&server, Some(&cookie)).await.expect("a socket");
    tokio::time::sleep(Duration::from_secs(2)).await;
    for ws in [&mut first, &mut second] {
        ws.send(Message::Ping(b"still there?".to_vec().into()))
            .await
            .expect("ping");
        let pong = tokio::time::timeout(Duration::from_secs(30), async {
            loop {
                match ws.next().await {
                    Some(Ok(Message::Pong(p))) => return Some(p),
                    Some(Ok(_)) => {}
                    _ => return None,
                }
            }
        })
        .await
        .expect("answered");
        assert_eq!(pong.as_deref(), Some(&b"still there?"[..]), "the socket was cut");
    }
    let mut third = tokio::net::TcpStream::connect(server.authority())
        .await
        .expect("connect: the kernel queues it");
    third
        .write_all(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let mut answer = Vec::new();
    let early = tokio::time::timeout(Duration::from_millis(700), third.read_to_end(&mut answer)).await;
    assert!(early.is_err() && answer.is_empty(), "answered past the cap");
    first.close(None).await.expect("close");
    drop(first);
    tokio::time::timeout(Duration::from_secs(15), third.read_to_end(&mut answer))
        .await
        .expect("answered once a socket closed")
        .expect("read");
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
}
