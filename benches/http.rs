//! Group commit over HTTP: aggregate thoughts per second from 16 concurrent
//! HTTP clients against 1 client, in the same run, alternating A B A B:
//!
//!   cargo bench --bench http                 # --sync normal, then --sync full
//!   THOUGHTBOX_HTTP_BENCH_STRACE=1 cargo bench --bench http   # and count fsyncs
//!
//! Each run starts `thoughtbox serve --http 127.0.0.1:0` on a new database
//! (release build) and drives it with rmcp's streamable HTTP clients of
//! protocol 2026-07-28 (stateless: one POST per call, a plain JSON answer).
//! Every client opens a session of its own (`start_new`, `cipher`), then all
//! record their thoughts (~550 characters) at once, one call in flight each,
//! as agents do. The same number of thoughts in every run: 1 client writes
//! them all, or 16 clients a 16th each. Measured over the thought calls:
//! thoughts per second of wall time, and each call's latency (p50, p99).
//!
//! The clients and the server share this machine's cores, so absolute
//! figures move with the host; the ratio of one pair's runs is the figure.
//! Printed: each run, each pair's ratio (16 clients / 1), their median, and
//! whether it meets the target (2x under --sync normal, 3x under --sync
//! full). With THOUGHTBOX_HTTP_BENCH_STRACE=1, one more run of each client
//! count under --sync full, inside `strace -f -c -e trace=fsync,fdatasync`,
//! gives the disk flushes per thought (a count the host cannot move).
//!
//! Last, the server's memory (VmRSS) before and after THOUGHTBOX_HTTP_BENCH_SOCKETS
//! (1000) idle Observatory WebSockets, each subscribed to every session.
//!
//! Environment:
//!   THOUGHTBOX_HTTP_BENCH_THOUGHTS  thoughts per run (1600)
//!   THOUGHTBOX_HTTP_BENCH_PAIRS     A B pairs per sync mode (3)
//!   THOUGHTBOX_HTTP_BENCH_CLIENTS   clients of the B runs (16)
//!   THOUGHTBOX_HTTP_BENCH_SOCKETS   idle WebSockets of the memory figure (1000)
//!   THOUGHTBOX_BIN                  another build of ours to measure

#[path = "common/text.rs"]
mod thought_text;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, ProtocolVersion};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Map, Value, json};
use thought_text::text;
use tokio::io::{AsyncBufReadExt, BufReader};

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v.parse().unwrap_or_else(|_| panic!("{name}={v:?}: expected a count")),
        Err(_) => default,
    }
}

fn our_bin() -> std::ffi::OsString {
    std::env::var_os("THOUGHTBOX_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_thoughtbox").into())
}

/// A server process, started by this bench (perhaps under strace).
struct Server {
    child: tokio::process::Child,
    url: String,
    token: String,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(sync: &str, strace_to: Option<&Path>) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("bench.db");
        let mut cmd = match strace_to {
            Some(out) => {
                let mut c = tokio::process::Command::new("strace");
                c.args(["-f", "-c", "-e", "trace=fsync,fdatasync", "-o"])
                    .arg(out)
                    .arg(our_bin());
                c
            }
            None => tokio::process::Command::new(our_bin()),
        };
        cmd.arg("--db")
            .arg(&db)
            .args(["--sync", sync, "serve", "--http", "127.0.0.1:0"])
            .env_remove("THOUGHTBOX_TOKEN")
            .env_remove("THOUGHTBOX_TOKEN_FILE")
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn the server");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let mut url = None;
        while let Some(line) = lines.next_line().await.expect("stderr") {
            if let Some(rest) = line.strip_prefix("thoughtbox: serving MCP at ") {
                url = rest.split_whitespace().next().map(str::to_string);
                break;
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let token = std::fs::read_to_string(db.with_extension("token"))
            .expect("the token file")
            .trim()
            .to_string();
        Server {
            child,
            url: url.expect("the server said where it listens"),
            token,
            _dir: dir,
        }
    }

    /// Stop with SIGTERM (a clean exit, so that strace writes its counts):
    /// the server itself, which under strace is strace's child.
    async fn stop(mut self, traced: bool) {
        if let Some(mut pid) = self.child.id() {
            if traced {
                let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap_or_default();
                if let Some(server) = children.split_whitespace().next().and_then(|p| p.parse().ok()) {
                    pid = server;
                }
            }
            let _ = std::process::Command::new("kill").arg(pid.to_string()).status();
        }
        let _ = tokio::time::timeout(Duration::from_secs(20), self.child.wait()).await;
    }
}

type Client = RunningService<RoleClient, ()>;

async fn client(server: &Server) -> Client {
    let transport = StreamableHttpClientTransport::from_config(
        StreamableHttpClientTransportConfig::with_uri(server.url.as_str()).auth_header(server.token.clone()),
    );
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    ().serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("server/discover")
}

async fn call(c: &Client, operation: &str, args: Value) -> Value {
    let mut arguments = Map::new();
    arguments.insert("operation".into(), json!(operation));
    arguments.insert("args".into(), args);
    let result = c
        .call_tool(CallToolRequestParams::new("thoughtbox_gateway").with_arguments(arguments))
        .await
        .expect("tools/call");
    assert_ne!(result.is_error, Some(true), "{operation} failed: {result:?}");
    result.structured_content.expect("structured answer")
}

struct Run {
    per_second: f64,
    latencies: Vec<Duration>,
}

/// `clients` clients write `thoughts` thoughts in all, at once.
async fn run(server: &Server, clients: usize, thoughts: usize) -> Run {
    let mut ready = Vec::new();
    for c in 0..clients {
        let client = client(server).await;
        let started = call(
            &client,
            "start_new",
            json!({ "sessionTitle": format!("bench client {c}") }),
        )
        .await;
        let id = started["session"]["id"].as_str().expect("session id").to_string();
        call(&client, "cipher", json!({ "sessionId": id, "brief": true })).await;
        ready.push((client, id));
    }
    let each = thoughts / clients;
    let start = Instant::now();
    let mut tasks = Vec::new();
    for (c, (client, id)) in ready.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(each);
            for i in 0..each {
                let sent = Instant::now();
                call(
                    &client,
                    "thought",
                    json!({ "sessionId": id, "thought": text(c * each + i), "nextThoughtNeeded": true }),
                )
                .await;
                latencies.push(sent.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.expect("client task"));
    }
    let elapsed = start.elapsed();
    latencies.sort_unstable();
    Run {
        per_second: (each * clients) as f64 / elapsed.as_secs_f64(),
        latencies,
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// The number of fsync and fdatasync calls in strace's `-c` summary.
fn flushes(summary: &Path) -> u64 {
    let text = std::fs::read_to_string(summary).expect("strace summary");
    text.lines()
        .filter(|l| l.trim_end().ends_with("fsync") || l.trim_end().ends_with("fdatasync"))
        .filter_map(|l| {
            // % time, seconds, usecs/call, calls, [errors], syscall
            let cols: Vec<&str> = l.split_whitespace().collect();
            cols.get(3).and_then(|c| c.parse::<u64>().ok())
        })
        .sum()
}

/// The server's resident memory, from /proc.
fn resident_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next().and_then(|n| n.parse().ok()))
        .unwrap_or(0)
}

async fn idle_sockets(n: usize) {
    use futures_util::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    thoughtbox::limits::ensure_open_files().expect("open-file limit");
    let server = Server::start("normal", None).await;
    let pid = server.child.id().expect("pid");
    let base = server.url.trim_end_matches("/mcp").replace("http://", "ws://");
    let cookie = format!("thoughtbox_token={}", server.token);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let before = resident_kib(pid);
    let mut sockets = Vec::with_capacity(n);
    for _ in 0..n {
        let mut request = format!("{base}/ws").into_client_request().expect("request");
        request.headers_mut().insert("cookie", cookie.parse().expect("header"));
        let (mut ws, _) = tokio_tungstenite::connect_async(request).await.expect("socket");
        ws.send(Message::text(r#"{"type":"subscribe","scope":"sessions"}"#))
            .await
            .expect("subscribe");
        sockets.push(ws);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let after = resident_kib(pid);
    println!(
        "{n} idle WebSockets: server VmRSS {before} KiB before, {after} KiB with them ({:.1} KiB each)",
        (after.saturating_sub(before)) as f64 / n as f64
    );
    drop(sockets);
    server.stop(false).await;
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let thoughts = env_usize("THOUGHTBOX_HTTP_BENCH_THOUGHTS", 1600);
    let pairs = env_usize("THOUGHTBOX_HTTP_BENCH_PAIRS", 3);
    let many = env_usize("THOUGHTBOX_HTTP_BENCH_CLIENTS", 16);
    println!("http: {thoughts} thoughts per run, 1 client (A) against {many} (B), {pairs} pairs per sync mode");
    for (sync, target) in [("normal", 2.0), ("full", 3.0)] {
        if pairs == 0 {
            break;
        }
        let mut ratios = Vec::new();
        let mut b_latencies = Vec::new();
        for pair in 1..=pairs {
            let mut rates = [0.0; 2];
            for (slot, clients) in [(0, 1), (1, many)] {
                let server = Server::start(sync, None).await;
                let r = run(&server, clients, thoughts).await;
                server.stop(false).await;
                println!(
                    "  --sync {sync} pair {pair}: {clients:>2} client(s) {:>7.0} thoughts/s  p50 {}  p99 {}",
                    r.per_second,
                    ms(percentile(&r.latencies, 0.5)),
                    ms(percentile(&r.latencies, 0.99)),
                );
                rates[slot] = r.per_second;
                if slot == 1 {
                    b_latencies.extend(r.latencies);
                }
            }
            ratios.push(rates[1] / rates[0]);
            println!("  --sync {sync} pair {pair}: ratio {:.2}x", rates[1] / rates[0]);
        }
        b_latencies.sort_unstable();
        let m = median(ratios);
        println!(
            "--sync {sync}: median ratio {m:.2}x ({}; target {target}x); {many} clients p50 {} p99 {}",
            if m >= target { "met" } else { "NOT met" },
            ms(percentile(&b_latencies, 0.5)),
            ms(percentile(&b_latencies, 0.99)),
        );
    }
    idle_sockets(env_usize("THOUGHTBOX_HTTP_BENCH_SOCKETS", 1000)).await;
    if std::env::var_os("THOUGHTBOX_HTTP_BENCH_STRACE").is_some() {
        let dir = tempfile::tempdir().expect("temp dir");
        for clients in [1, many] {
            let out: PathBuf = dir.path().join(format!("strace-{clients}.txt"));
            let server = Server::start("full", Some(&out)).await;
            run(&server, clients, thoughts).await;
            server.stop(true).await;
            let n = flushes(&out);
            println!(
                "--sync full, {clients:>2} client(s): {n} fsync/fdatasync for {thoughts} thoughts = {:.3} per thought \
                 (whole process, start-up and exit included)",
                n as f64 / thoughts as f64
            );
        }
    }
}
