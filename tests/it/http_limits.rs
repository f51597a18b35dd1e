//! `serve --http` against clients that hold connections without using
//! them: one that sends nothing, one that sends its headers a line at a
//! time, one that keeps an idle connection, and enough of them to fill the
//! cap on connections. Debug builds take smaller bounds from
//! `THOUGHTBOX_HTTP_LIMITS`, so these tests wait for less than a second of
//! deadline, not ten.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::http::HttpServer;

impl HttpServer {
    /// `host:port` of the server.
    pub fn authority(&self) -> String {
        self.url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_string()
    }
}

/// Read `stream` until the server closes it (an end or a reset), within
/// `within`; what was read, or `None` if it was still open then.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let read = tokio::time::timeout(within, async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    read.ok().map(|()| got)
}

/// Generous for a loaded machine: the deadline in these tests is under a second.
const CLOSED_BEFORE: Duration = Duration::from_secs(15);

#[tokio::test]
async fn connections_that_send_nothing_trickle_headers_or_idle_are_closed() {
    let server = HttpServer::start_limited("header_read_ms=500").await;
    let addr = server.authority();

    let mut silent = TcpStream::connect(&addr).await.expect("connect");

    let mut trickling = TcpStream::connect(&addr).await.expect("connect");
    trickling
        .write_all(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .expect("write");
    let (mut reading, mut writing) = trickling.into_split();
    // A header line every 100 ms, never the blank line that ends them,
    // until the server hangs up.
    let trickle = tokio::spawn(async move {
        for i in 0..600 {
            tokio::time::sleep(Duration::from_millis(100)).await;
            if writing.write_all(format!("X-{i}: a\r\n").as_bytes()).await.is_err() {
                return true;
            }
        }
        false
    });

    let mut idle = TcpStream::connect(&addr).await.expect("connect");
    idle.write_all(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .expect("write");

    assert!(
        closed_within(&mut silent, CLOSED_BEFORE).await.is_some(),
        "a connection that sent nothing is closed"
    );
    let answered = closed_within(&mut idle, CLOSED_BEFORE)
        .await
        .expect("a kept-alive connection left idle after its answer is closed");
    assert!(answered.starts_with(b"HTTP/1.1 200"), "answered first");
    let mut rest = Vec::new();
    let ended = tokio::time::timeout(CLOSED_BEFORE, reading.read_to_end(&mut rest)).await;
    assert!(ended.is_ok(), "a connection trickling its headers is closed");
    assert!(
        !String::from_utf8_lossy(&rest).starts_with("HTTP/1.1 200"),
        "and never answered"
    );
    trickle.abort();

    // The server serves on.
    let s = server.legacy().await;
    s.ready("after the slow clients").await;
}

/// Long answers are not cut by the header deadline: a legacy session's
/// event stream stays open, and a client idle past the deadline makes its
/// next call on a new connection.
#[tokio::test]
async fn event_streams_and_returning_clients_outlive_the_deadline() {
    let server = HttpServer::start_limited("header_read_ms=300").await;
    let http = reqwest::Client::new();
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "1" } } });
    let r = http
        .post(&server.url)
        .header("authorization", server.bearer())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(initialize.to_string())
        .send()
        .await
        .expect("initialize");
    assert_eq!(r.status(), 200);
    let session = r.headers()["mcp-session-id"].to_str().expect("id").to_string();
    let _ = r.bytes().await;
    let r = http
        .post(&server.url)
        .header("authorization", server.bearer())
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .body(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string())
        .send()
        .await
        .expect("initialized");
    assert!(r.status().is_success(), "{}", r.status());
    let mut stream = http
        .get(&server.url)
        .header("authorization", server.bearer())
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &session)
        .header("mcp-protocol-version", "2025-06-18")
        .send()
        .await
        .expect("the event stream");
    assert_eq!(stream.status(), 200);
    let client = server.legacy().await;
    client.ready("before the pause").await;
    // Several deadlines pass with nothing sent either way.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let open = loop {
        match tokio::time::timeout(Duration::from_millis(500), stream.chunk()).await {
            // Nothing to read, and not ended: open.
            Err(_) => break true,
            // An event (a priming event or a ping): read on.
            Ok(Ok(Some(_))) => {}
            Ok(Ok(None) | Err(_)) => break false,
        }
    };
    assert!(open, "the event stream was cut");
    client
        .thought(json!({ "thought": "After a pause longer than the deadline.", "nextThoughtNeeded": true }))
        .await;
    assert_eq!(server.count("thoughts"), 1);
}

/// Connections that hold their place without a request fill the cap:
/// the client with the token waits in the queue until the deadline frees
/// places, and is served.
#[tokio::test]
async fn a_client_with_the_token_gets_through_a_full_cap() {
    let server = HttpServer::start_limited("header_read_ms=500,max_connections=8").await;
    let addr = server.authority();
    let mut silent = Vec::new();
    for _ in 0..8 {
        silent.push(TcpStream::connect(&addr).await.expect("connect"));
    }
    let s = tokio::time::timeout(Duration::from_secs(60), async {
        let s = server.legacy().await;
        s.ready("through a full cap").await;
        s.thought(json!({ "thought": "Served.", "nextThoughtNeeded": true }))
            .await;
        s
    })
    .await
    .expect("the client with the token is served");
    for stream in &mut silent {
        assert!(
            closed_within(stream, CLOSED_BEFORE).await.is_some(),
            "the silent connections were closed"
        );
    }
    s.thought(json!({ "thought": "Still served.", "nextThoughtNeeded": true }))
        .await;
    assert_eq!(server.count("thoughts"), 2);
}

/// One address holds at most its share of the places, however busy its
/// connections keep (requests for the public login page): a further one
/// is closed at once, and one given back is usable again.
#[tokio::test]
async fn one_address_holds_at_most_its_share_of_connections() {
    let server = HttpServer::start_limited("max_connections=16,per_address=3").await;
    let addr = server.authority();
    let request = format!("GET /login HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    let mut busy = Vec::new();
    for _ in 0..3 {
        let mut stream = TcpStream::connect(&addr).await.expect("connect");
        stream.write_all(request.as_bytes()).await.expect("request");
        let mut buf = [0u8; 12];
        stream.read_exact(&mut buf).await.expect("answered");
        assert_eq!(&buf, b"HTTP/1.1 200");
        busy.push(stream);
    }
    let mut fourth = TcpStream::connect(&addr).await.expect("connect");
    let _ = fourth.write_all(request.as_bytes()).await;
    let got = closed_within(&mut fourth, CLOSED_BEFORE).await;
    assert_eq!(got.as_deref(), Some(&b""[..]), "closed unanswered");
    // An operator learns why (a proxy in front gives every client its address).
    let said = server
        .logged("closed a new HTTP connection from 127.0.0.1 at once")
        .await;
    assert!(said.contains("at most 3 connections"), "{said}");
    drop(busy.pop());
    // Once the server has seen that one close, its place serves again.
    tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let mut stream = TcpStream::connect(&addr).await.expect("connect");
            let _ = stream.write_all(request.as_bytes()).await;
            let mut buf = [0u8; 12];
            if stream.read_exact(&mut buf).await.is_ok() && &buf == b"HTTP/1.1 200" {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("a place given back is usable");
}

/// A login form whose body never arrives is answered (408) or closed at
/// the deadline, not held open.
#[tokio::test]
async fn a_login_body_that_never_arrives_is_not_waited_for() {
    let server = HttpServer::start_limited("header_read_ms=500").await;
    let mut stream = TcpStream::connect(server.authority()).await.expect("connect");
    stream
        .write_all(
            b"POST /login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n\
              Content-Length: 100\r\n\r\ntoken=abc",
        )
        .await
        .expect("write");
    let answer = closed_within(&mut stream, CLOSED_BEFORE)
        .await
        .expect("the connection is closed");
    assert!(
        answer.starts_with(b"HTTP/1.1 408"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
}

/// A client that sends request after request and reads none of the
/// answers holds its connection only until the server's writes have
/// waited the stall bound.
#[tokio::test]
async fn a_client_that_reads_no_answers_is_dropped() {
    let server = HttpServer::start_limited("write_stall_ms=500").await;
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    // A small receive buffer, as a slow client over a real network has.
    socket.set_recv_buffer_size(4 << 10).expect("buffer size");
    let stream = socket
        .connect(server.authority().parse().expect("addr"))
        .await
        .expect("connect");
    let (mut reading, mut writing) = stream.into_split();
    // About 20 MB of answers (1 KB each), far more than the socket buffers hold.
    let flood = tokio::spawn(async move {
        let request = b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".repeat(20_000);
        writing.write_all(&request).await.is_ok()
    });
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mut got = Vec::new();
    let ended = tokio::time::timeout(CLOSED_BEFORE, async {
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match reading.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let answers = got.windows(12).filter(|w| w == b"HTTP/1.1 200").count();
    assert!(ended.is_ok(), "the connection is still open ({answers} answers read)");
    // Closed by the stall, not by the idle deadline once all were sent.
    assert!(answers < 20_000, "every answer was sent");
    flood.abort();
    // The server serves on.
    let s = server.legacy().await;
    s.ready("after the client that read nothing").await;
}
