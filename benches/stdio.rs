//! End-to-end figures through the real stdio protocol: the release binary,
//! driven by an rmcp client, one request in flight.
//!
//!   cargo bench --bench stdio            # all figures
//!   cargo bench --bench stdio -- append  # only the 10,000-thought runs
//!   THOUGHTBOX_BIN=/other/build/thoughtbox cargo bench --bench stdio -- append-normal
//!   cargo bench --bench stdio -- raw     # the same server, a bare JSON-RPC client
//!   cargo bench --bench stdio -- drift   # does a call's cost grow over a run? (10 runs)
//!   cargo bench --bench stdio -- stall   # a short read while long ones run
//!   cargo bench --bench stdio -- instructions  # work per thought, counted by callgrind
//!   THOUGHTBOX_BENCH_PIN=0:0:0 cargo bench --bench stdio -- raw drift   # threads placed by hand
//!
//! THOUGHTBOX_BENCH_PIN=B:S:W (Linux, needs `taskset`) places the bench on
//! CPU B and starts each server the bare client starts on CPU S, then moves
//! its ledger writer thread to CPU W (`S:W` puts the bench with the server).
//! Held for the whole run, a placement takes the kernel's
//! changes of placement out of the figures.
//!
//! Prints throughput, latency percentiles, first-vs-last-1000 medians, peak
//! RSS of the server, and start-up time to `initialize` answered.

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use thoughtbox::domain::NewSession;
use thoughtbox::store::{OpenOptionsStore, Store};

#[path = "common/text.rs"]
mod thought_text;
use thought_text::text;

type Client = RunningService<RoleClient, ()>;

const THOUGHTS: usize = 10_000;

/// The server binary: this build, or THOUGHTBOX_BIN to compare another
/// build in the same minutes on a noisy machine.
fn server_bin() -> std::ffi::OsString {
    std::env::var_os("THOUGHTBOX_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_thoughtbox").into())
}

fn command(db: &Path, extra: &[&str]) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(server_bin());
    cmd.arg("--db")
        .arg(db)
        .args(extra)
        .env("RUST_LOG", "warn")
        .stderr(Stdio::null());
    cmd
}

async fn spawn(db: &Path, extra: &[&str]) -> (Client, u32) {
    let (transport, _) = TokioChildProcess::builder(command(db, extra))
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let pid = transport.id().expect("pid");
    (().serve(transport).await.expect("initialize"), pid)
}

async fn call(client: &Client, operation: &str, args: Value) -> Value {
    let mut m = Map::new();
    m.insert("operation".into(), json!(operation));
    m.insert("args".into(), args);
    let r = client
        .call_tool(CallToolRequestParams::new("thoughtbox_gateway").with_arguments(m))
        .await
        .expect("call");
    assert_ne!(r.is_error, Some(true), "{operation} failed: {:?}", r.content);
    r.structured_content.unwrap_or(Value::Null)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn median(v: &[Duration]) -> Duration {
    let mut s = v.to_vec();
    s.sort();
    percentile(&s, 0.5)
}

fn us(d: Duration) -> String {
    format!("{:.0} us", d.as_secs_f64() * 1e6)
}

fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Throughput, latency percentiles and first-vs-last-1,000 medians of a run.
fn run_summary(lat: &[Duration], total: Duration) -> String {
    let f = figures(lat, total);
    let mut sorted = lat.to_vec();
    sorted.sort();
    format!(
        "{} thoughts in {:.2} s = {:.0} thoughts/s | p50 {} p99 {} p99.9 {} max {} | median first 1000 {} last 1000 {} ({:+.1} %)",
        lat.len(),
        total.as_secs_f64(),
        f.per_second,
        us(percentile(&sorted, 0.5)),
        us(f.p99),
        us(percentile(&sorted, 0.999)),
        us(*sorted.last().expect("samples")),
        us(median(&lat[..1000])),
        us(median(&lat[lat.len() - 1000..])),
        f.drift,
    )
}

fn block_medians(lat: &[Duration]) -> String {
    let blocks: Vec<String> = lat
        .chunks(1000)
        .map(|c| format!("{:.0}", median(c).as_secs_f64() * 1e6))
        .collect();
    blocks.join(" ")
}

/// The three figures of the append target for one run: thoughts/s, p99
/// (under 1 ms) and the last 1,000 calls' median against the first 1,000's
/// (per cent, within 10 %).
#[derive(Clone, Copy)]
struct RunFigures {
    per_second: f64,
    p99: Duration,
    drift: f64,
}

fn figures(lat: &[Duration], total: Duration) -> RunFigures {
    let mut sorted = lat.to_vec();
    sorted.sort();
    let (first, last) = (median(&lat[..1000]), median(&lat[lat.len() - 1000..]));
    RunFigures {
        per_second: lat.len() as f64 / total.as_secs_f64(),
        p99: percentile(&sorted, 0.99),
        drift: (last.as_secs_f64() / first.as_secs_f64() - 1.0) * 100.0,
    }
}

/// After several runs of one configuration: each figure's median over the
/// runs (the machine moves single runs by ±20 % either way from minute to
/// minute, so one run says as much about the host as about the server), and
/// in how many runs each part of the target held.
fn runs_summary(label: &str, runs: &[RunFigures], min_per_second: f64) {
    let mid = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n.is_multiple_of(2) {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        } else {
            v[n / 2]
        }
    };
    let per_second = mid(runs.iter().map(|r| r.per_second).collect());
    let p99 = mid(runs.iter().map(|r| r.p99.as_secs_f64() * 1e6).collect());
    let drift = mid(runs.iter().map(|r| r.drift).collect());
    let held = |f: &dyn Fn(&RunFigures) -> bool| runs.iter().filter(|r| f(r)).count();
    println!(
        "{label}, median of {} runs: {per_second:.0} thoughts/s, p99 {p99:.0} us, last vs first 1,000 {drift:+.1} % | runs holding >= {min_per_second:.0}/s: {}, p99 < 1 ms: {}, within 10 %: {}",
        runs.len(),
        held(&|r| r.per_second >= min_per_second),
        held(&|r| r.p99 < Duration::from_millis(1)),
        held(&|r| r.drift.abs() <= 10.0),
    );
}

async fn append_run(label: &str, extra: &[&str]) -> RunFigures {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("bench.db");
    let (client, pid) = spawn(&db, extra).await;
    call(&client, "start_new", json!({ "sessionTitle": "bench" })).await;
    call(&client, "cipher", json!({})).await;
    let mut lat = Vec::with_capacity(THOUGHTS);
    let start = Instant::now();
    for i in 0..THOUGHTS {
        let args = json!({ "thought": text(i), "nextThoughtNeeded": true });
        let t0 = Instant::now();
        call(&client, "thought", args).await;
        lat.push(t0.elapsed());
    }
    let total = start.elapsed();
    let rss = peak_rss_kib(pid);
    let wal = std::fs::metadata(dir.path().join("bench.db-wal"))
        .map(|m| m.len())
        .unwrap_or(0);
    println!(
        "{label}: {} | server peak RSS {} | WAL at end {:.1} MiB",
        run_summary(&lat, total),
        rss.map(|k| format!("{:.1} MiB", k as f64 / 1024.0))
            .unwrap_or_else(|| "n/a".into()),
        wal as f64 / (1024.0 * 1024.0),
    );
    println!("  median of each 1,000 calls (us): {}", block_medians(&lat));
    client.cancel().await.ok();
    figures(&lat, total)
}

/// A round trip that touches no database: the protocol's own cost.
async fn roundtrip_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (client, _) = spawn(&dir.path().join("rt.db"), &[]).await;
    let mut lat = Vec::new();
    for _ in 0..5000 {
        let t0 = Instant::now();
        call(&client, "get_state", json!({})).await;
        lat.push(t0.elapsed());
    }
    lat.sort();
    println!(
        "roundtrip (get_state, no database work): p50 {} p99 {}",
        us(percentile(&lat, 0.5)),
        us(percentile(&lat, 0.99))
    );
    client.cancel().await.ok();
}

/// The same server driven by a bare JSON-RPC client: requests written as
/// ready-made lines, answers read as lines, blocking I/O, no MCP library. Set
/// beside the rmcp-client figures, it tells the server's share of a round trip
/// from the client's.
struct RawClient {
    input: std::process::ChildStdin,
    output: std::io::BufReader<std::process::ChildStdout>,
    line: String,
}

impl RawClient {
    /// Write one request line and read the answer's line.
    fn round_trip(&mut self, request: &Value) -> Duration {
        use std::io::{BufRead, Write};
        let mut bytes = serde_json::to_vec(request).expect("json");
        bytes.push(b'\n');
        self.line.clear();
        let t0 = Instant::now();
        self.input.write_all(&bytes).expect("write");
        self.output.read_line(&mut self.line).expect("read");
        let took = t0.elapsed();
        assert!(!self.line.contains("\"isError\":true"), "{}", self.line);
        took
    }
}

/// A server started for a bare client, initialized and ready for tools.
fn raw_server(db: &Path) -> (std::process::Child, RawClient) {
    raw_server_with(db, &[])
}

/// [`raw_server`] with more arguments.
fn raw_server_with(db: &Path, extra: &[&str]) -> (std::process::Child, RawClient) {
    let mut command = server_command();
    command.arg("--db").arg(db).args(extra);
    raw_server_from(command)
}

/// A server started by `command` (the binary and its arguments), initialized
/// for a bare client.
fn raw_server_from(mut command: std::process::Command) -> (std::process::Child, RawClient) {
    use std::io::{BufReader, Write};
    let mut child = command
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut raw = RawClient {
        input: child.stdin.take().expect("stdin"),
        output: BufReader::new(child.stdout.take().expect("stdout")),
        line: String::new(),
    };
    place_writer(child.id());
    raw.round_trip(&json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "raw", "version": "1" } } }));
    raw.input
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .expect("write");
    (child, raw)
}

/// THOUGHTBOX_BENCH_PIN=B:S:W (or S:W, the bench with the server) as
/// (bench, server, writer) CPUs; `None` when unset. A malformed value stops
/// the bench rather than measuring some other placement.
fn pinning() -> Option<(String, String, String)> {
    let pin = std::env::var("THOUGHTBOX_BENCH_PIN").ok()?;
    let cpus: Vec<&str> = pin.split(':').collect();
    match cpus[..] {
        [bench, server, writer] => Some((bench.into(), server.into(), writer.into())),
        [server, writer] => Some((server.into(), server.into(), writer.into())),
        _ => panic!("THOUGHTBOX_BENCH_PIN={pin:?}: expected BENCH:SERVER:WRITER or SERVER:WRITER CPUs"),
    }
}

fn taskset(args: &[&str]) {
    let ok = std::process::Command::new("taskset")
        .args(args)
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(ok, "taskset {args:?} failed");
}

/// The command that starts a server: with THOUGHTBOX_BENCH_PIN set, the
/// bench is placed on its CPU first and the server starts on its own (so it
/// sees one CPU from its first instruction).
fn server_command() -> std::process::Command {
    match pinning() {
        None => std::process::Command::new(server_bin()),
        Some((bench, server, _)) => {
            taskset(&["-a", "-p", "-c", &bench, &std::process::id().to_string()]);
            let mut cmd = std::process::Command::new("taskset");
            cmd.arg("-c").arg(server).arg(server_bin());
            cmd
        }
    }
}

/// With THOUGHTBOX_BENCH_PIN=B:S:W set: the ledger writer thread of the
/// server `pid` moved to CPU W (it starts before the server reads its
/// first request).
fn place_writer(pid: u32) {
    let Some((_, server, writer)) = pinning() else {
        return;
    };
    if writer == server {
        return;
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let found = std::fs::read_dir(format!("/proc/{pid}/task"))
            .expect("/proc")
            .filter_map(|t| t.ok())
            .find(|t| std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim() == "ledger-writer"));
        if let Some(task) = found {
            taskset(&["-p", "-c", &writer, &task.file_name().to_string_lossy()]);
            return;
        }
        assert!(Instant::now() < deadline, "no ledger-writer thread in server {pid}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn tool(id: usize, operation: &str, args: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "thoughtbox_gateway", "arguments": { "operation": operation, "args": args } } })
}

/// `count` calls of `get_state` before any session exists: a full tool round
/// trip with no database work.
fn raw_get_states(raw: &mut RawClient, count: usize) -> Vec<Duration> {
    (0..count)
        .map(|i| raw.round_trip(&tool(100_000 + i, "get_state", json!({}))))
        .collect()
}

/// Start a session and record [`THOUGHTS`] thoughts in it, one at a time.
fn raw_thoughts(raw: &mut RawClient) -> (Vec<Duration>, Duration) {
    raw.round_trip(&tool(1, "start_new", json!({ "sessionTitle": "raw" })));
    raw.round_trip(&tool(2, "cipher", json!({})));
    let start = Instant::now();
    let lat = (0..THOUGHTS)
        .map(|i| {
            raw.round_trip(&tool(
                200_000 + i,
                "thought",
                json!({ "thought": text(i), "nextThoughtNeeded": true }),
            ))
        })
        .collect();
    (lat, start.elapsed())
}

fn raw_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut child, mut raw) = raw_server(&dir.path().join("raw.db"));
    let summary = |lat: &mut Vec<Duration>| {
        lat.sort();
        format!("p50 {} p99 {}", us(percentile(lat, 0.5)), us(percentile(lat, 0.99)))
    };
    let mut ping: Vec<Duration> = (0..5000)
        .map(|i| raw.round_trip(&json!({ "jsonrpc": "2.0", "id": 10 + i, "method": "ping" })))
        .collect();
    println!("raw ping (no tool, no database): {}", summary(&mut ping));
    let mut state = raw_get_states(&mut raw, 5000);
    println!(
        "raw get_state (no session yet: no database work): {}",
        summary(&mut state)
    );
    let (lat, total) = raw_thoughts(&mut raw);
    println!("raw thought: {}", run_summary(&lat, total));
    println!("  median of each 1,000 calls (us): {}", block_medians(&lat));
    // Reads of the 10,000-thought session just written: each runs on the
    // blocking pool under the request's cancellation.
    let mut reads: Vec<Duration> = (0..5000)
        .map(|i| raw.round_trip(&tool(300_000 + i, "read_thoughts", json!({ "last": 5 }))))
        .collect();
    println!("raw read_thoughts (last 5): {}", summary(&mut reads));
    let mut searches: Vec<Duration> = (0..2000)
        .map(|i| {
            raw.round_trip(&tool(
                400_000 + i,
                "session",
                json!({ "subOperation": "search", "query": "step", "limit": 10 }),
            ))
        })
        .collect();
    println!(
        "raw session search (a term in every thought, 10 hits): {}",
        summary(&mut searches)
    );
    drop(raw);
    child.wait().expect("exit");
}

/// How long a one-thought read waits while N long reads (`deep_analysis`
/// of a 200,000-thought session, sent at once) run: each long read holds a
/// blocking thread and a pool connection for about a second.
fn stall_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("stall.db");
    // Made by the server under test, so that another build (THOUGHTBOX_BIN)
    // opens a ledger of its own schema.
    let session = {
        let (mut child, mut raw) = raw_server(&db);
        raw.round_trip(&tool(1, "start_new", json!({ "sessionTitle": "long" })));
        let answer: Value = serde_json::from_str(&raw.line).expect("json");
        drop(raw);
        child.wait().expect("exit");
        answer["result"]["structuredContent"]["session"]["id"]
            .as_str()
            .expect("session id")
            .to_string()
    };
    let conn = rusqlite::Connection::open(&db).expect("open");
    conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
         INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought,
                               next_thought_needed, prev_node, created_at)
         SELECT ?1, ?1 || ':' || i, i, i, 'thought ' || i || ' of a long session about caches and queues', 1,
                CASE WHEN i > 1 THEN ?1 || ':' || (i - 1) END, '2026-01-01T00:00:00.000Z' FROM n",
        [&session],
    )
    .expect("thoughts");
    drop(conn);
    for long in [0, 4, 6] {
        let mut waits = Vec::new();
        for round in 0..3 {
            use std::io::{BufRead, Write};
            let (mut child, mut raw) = raw_server_with(&db, &["--no-stages"]);
            for i in 0..long {
                let request = tool(1_000 + i, "deep_analysis", json!({ "sessionId": session }));
                let mut bytes = serde_json::to_vec(&request).expect("json");
                bytes.push(b'\n');
                raw.input.write_all(&bytes).expect("write");
            }
            std::thread::sleep(Duration::from_millis(200));
            let id = 5_000 + round;
            let request = tool(id, "read_thoughts", json!({ "sessionId": session, "last": 1 }));
            let mut bytes = serde_json::to_vec(&request).expect("json");
            bytes.push(b'\n');
            let t0 = Instant::now();
            raw.input.write_all(&bytes).expect("write");
            loop {
                raw.line.clear();
                raw.output.read_line(&mut raw.line).expect("read");
                let answer: Value = serde_json::from_str(&raw.line).expect("json");
                // (An older build refuses the analysis as too long, after doing it.)
                assert!(!raw.line.contains("STAGE_REQUIREMENT_NOT_MET"), "{}", raw.line);
                if answer["id"] == json!(id) {
                    break;
                }
            }
            waits.push(t0.elapsed());
            drop(raw);
            child.wait().expect("exit");
        }
        waits.sort();
        println!(
            "stall: read_thoughts (last 1) beside {long} deep_analysis of 200,000 thoughts: {} / {} / {}",
            us(waits[0]),
            us(waits[1]),
            us(waits[2])
        );
    }
}

/// Medians of each block of 1,000 calls, in microseconds.
fn block_values(lat: &[Duration]) -> Vec<f64> {
    lat.chunks(1000).map(|c| median(c).as_secs_f64() * 1e6).collect()
}

/// A fixed piece of memory-bound work in the bench process itself: a
/// dependent walk of `steps` reads over a shuffled 8 MiB table (larger than
/// the caches a process gets here). Nothing about it can grow or warm up
/// over a run, and it touches neither the server nor a pipe.
struct FixedWork {
    next: Vec<u32>,
    at: u32,
}

impl FixedWork {
    fn new() -> Self {
        let len = (8 << 20) / 4;
        // One cycle through every slot in a scrambled order (Sattolo's
        // shuffle with a fixed linear congruential generator).
        let mut order: Vec<u32> = (0..len as u32).collect();
        let mut state: u64 = 0x2545_F491_4F6C_DD1D;
        for i in (1..len).rev() {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let j = (state >> 33) as usize % i;
            order.swap(i, j);
        }
        let mut next = vec![0u32; len];
        for w in 0..len {
            next[order[w] as usize] = order[(w + 1) % len];
        }
        FixedWork { next, at: 0 }
    }

    fn time(&mut self, steps: usize) -> Duration {
        let start = Instant::now();
        for _ in 0..steps {
            self.at = self.next[self.at as usize];
        }
        std::hint::black_box(self.at);
        start.elapsed()
    }
}

/// Whether the cost of a call grows over a 10,000-thought run, told apart
/// from the machine's own drift. Each of THOUGHTBOX_DRIFT_RUNS runs (10 by
/// default; a fresh server and database each) records 10,000 thoughts
/// through the bare client, each followed by a `ping`: a round trip with no
/// tool and no database, the control. Both are timed in the same moments,
/// so whatever moves the pings' 1,000-call medians is the machine. A second
/// control, [`FixedWork`] after each ping, involves no server at all. Prints
/// every run's last-vs-first change for each and how closely the thought and
/// ping block medians move together (correlation), then the block profile
/// averaged over the runs, each run normalised to its own mean, and the
/// same for the first 2,000 thoughts in blocks of 100, beside the thought
/// after which the WAL file stopped growing. THOUGHTBOX_DRIFT_WARMUP=N first
/// records N thoughts in another session of the same server (0 by default),
/// and with THOUGHTBOX_DRIFT_RESTART set the server is then restarted on
/// that database, so that the measured session starts in a fresh process on
/// a database that has grown.
fn drift_run() {
    let runs: usize = std::env::var("THOUGHTBOX_DRIFT_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10)
        .max(1);
    let change = |b: &[f64]| (b[b.len() - 1] / b[0] - 1.0) * 100.0;
    let mean = |b: &[f64]| b.iter().sum::<f64>() / b.len() as f64;
    let normalised = |b: &[f64]| b.iter().map(|x| x / mean(b)).collect::<Vec<f64>>();
    let correlation = |a: &[f64], b: &[f64]| {
        let (ma, mb) = (mean(a), mean(b));
        let cov: f64 = a.iter().zip(b).map(|(x, y)| (x - ma) * (y - mb)).sum();
        let va: f64 = a.iter().map(|x| (x - ma).powi(2)).sum();
        let vb: f64 = b.iter().map(|y| (y - mb).powi(2)).sum();
        cov / (va * vb).sqrt()
    };
    let (mut control_profiles, mut thought_profiles, mut work_profiles) = (Vec::new(), Vec::new(), Vec::new());
    let (mut control_changes, mut thought_changes, mut work_changes, mut correlations) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut work = FixedWork::new();
    let (mut fine_profiles, mut wal_full) = (Vec::new(), Vec::new());
    let warmup: usize = std::env::var("THOUGHTBOX_DRIFT_WARMUP")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    for run in 1..=runs {
        let dir = tempfile::tempdir().expect("tempdir");
        let (mut child, mut raw) = raw_server(&dir.path().join("drift.db"));
        raw.round_trip(&tool(1, "start_new", json!({ "sessionTitle": "warm-up" })));
        raw.round_trip(&tool(2, "cipher", json!({})));
        for i in 0..warmup {
            raw.round_trip(&tool(
                1_000_000 + i,
                "thought",
                json!({ "thought": text(i), "nextThoughtNeeded": true }),
            ));
        }
        if warmup > 0 && std::env::var_os("THOUGHTBOX_DRIFT_RESTART").is_some() {
            drop(raw);
            child.wait().expect("exit");
            (child, raw) = raw_server(&dir.path().join("drift.db"));
            raw.round_trip(&tool(1, "start_new", json!({ "sessionTitle": "after restart" })));
            raw.round_trip(&tool(2, "cipher", json!({})));
        }
        raw.round_trip(&tool(3, "start_new", json!({ "sessionTitle": "drift" })));
        let wal = dir.path().join("drift.db-wal");
        let wal_size = || std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
        let (mut wal_seen, mut wal_full_at) = (wal_size(), None);
        let (mut lat, mut pings, mut works) = (
            Vec::with_capacity(THOUGHTS),
            Vec::with_capacity(THOUGHTS),
            Vec::with_capacity(THOUGHTS),
        );
        for i in 0..THOUGHTS {
            lat.push(raw.round_trip(&tool(
                10 + 2 * i,
                "thought",
                json!({ "thought": text(i), "nextThoughtNeeded": true }),
            )));
            pings.push(raw.round_trip(&json!({ "jsonrpc": "2.0", "id": 11 + 2 * i, "method": "ping" })));
            works.push(work.time(400));
            // The thought after which the WAL file first stopped growing
            // (the WAL started over, and appends overwrite its blocks).
            if wal_full_at.is_none() && (i + 1) % 50 == 0 {
                let now = wal_size();
                if now == wal_seen && now > 0 {
                    wal_full_at = Some(i + 1);
                }
                wal_seen = now;
            }
        }
        wal_full.push(wal_full_at.map_or(f64::NAN, |n| n as f64));
        drop(raw);
        child.wait().expect("exit");
        let (thoughts, control, fixed) = (block_values(&lat), block_values(&pings), block_values(&works));
        let busy: Duration = lat.iter().sum();
        println!(
            "drift run {run}: thoughts {:.0}/s, last vs first {:+.1} % | ping {:+.1} % | fixed work {:+.1} % | correlation of thought and ping blocks {:+.2} | thought blocks (us): {}",
            THOUGHTS as f64 / busy.as_secs_f64(),
            change(&thoughts),
            change(&control),
            change(&fixed),
            correlation(&thoughts, &control),
            block_medians(&lat),
        );
        let run_mean = mean(&thoughts);
        fine_profiles.push(
            lat[..2000]
                .chunks(100)
                .map(|c| median(c).as_secs_f64() * 1e6 / run_mean)
                .collect::<Vec<f64>>(),
        );
        control_changes.push(change(&control));
        thought_changes.push(change(&thoughts));
        work_changes.push(change(&fixed));
        correlations.push(correlation(&thoughts, &control));
        control_profiles.push(normalised(&control));
        thought_profiles.push(normalised(&thoughts));
        work_profiles.push(normalised(&fixed));
    }
    let mean_profile = |profiles: &[Vec<f64>]| -> Vec<f64> {
        (0..profiles[0].len())
            .map(|i| profiles.iter().map(|p| p[i]).sum::<f64>() / profiles.len() as f64)
            .collect()
    };
    let spread = |changes: &[f64]| {
        let within = changes.iter().filter(|c| c.abs() <= 10.0).count();
        let largest = changes.iter().fold(0.0_f64, |m, c| m.max(c.abs()));
        format!(
            "within 10 % in {within} of {} runs, largest swing {largest:.1} %",
            changes.len()
        )
    };
    for (name, profiles, changes) in [
        (
            "ping (control: no tool, no database)",
            &control_profiles,
            &control_changes,
        ),
        (
            "fixed work (control: 400 reads over 8 MiB in the bench process)",
            &work_profiles,
            &work_changes,
        ),
        ("thought", &thought_profiles, &thought_changes),
    ] {
        let profile = mean_profile(profiles);
        println!(
            "drift, {name}: mean block profile over {runs} runs {} | mean last vs first {:+.1} % | single runs {}",
            profile.iter().map(|x| format!("{x:.3}")).collect::<Vec<_>>().join(" "),
            change(&profile),
            spread(changes),
        );
    }
    println!(
        "drift, thought, first 2,000 in blocks of 100 against the run's mean block of 1,000: {} | the WAL file stopped growing after thought {}",
        mean_profile(&fine_profiles)
            .iter()
            .map(|x| format!("{x:.3}"))
            .collect::<Vec<_>>()
            .join(" "),
        wal_full.iter().map(|n| format!("{n}")).collect::<Vec<_>>().join(" / "),
    );
    println!(
        "drift: correlation of thought and ping block medians within a run, mean over {runs} runs {:+.2}",
        mean(&correlations)
    );
}

/// Whether `program` can be started (callgrind_annotate answers
/// `--version` with exit status 255, so only starting it counts).
fn available(program: &str) -> bool {
    std::process::Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
}

/// The work the server does per thought, counted rather than timed: the
/// release binary runs under valgrind's callgrind (instructions executed by
/// every thread of the server, whatever the machine is doing meanwhile),
/// driven by the bare client through 10,000 thoughts in one session, with
/// the counters dumped after each 1,000 (`callgrind_control --dump`).
///
/// Each block's count is split in two with `callgrind_annotate`: the
/// background upkeep (full-text indexing and WAL checkpoints, which run on
/// timers and so fall into the blocks unevenly: under valgrind a thought
/// takes ~50 times longer, so indexing runs every few hundred thoughts where
/// a real run indexes after its last), and the rest, which is the request
/// path of each call (reading and parsing the request, the checks, the
/// append, the answer). The server runs under `taskset -c 0`, as builds
/// that polled for the writer's answer did not poll on one CPU (their
/// spinning would have counted waiting as work). With
/// THOUGHTBOX_KEEP_CALLGRIND set, the dumps are kept for `callgrind_annotate`.
fn instructions_run() {
    for program in ["valgrind", "callgrind_control", "callgrind_annotate", "taskset"] {
        if !available(program) {
            println!("instructions: skipped ({program} not found; needs valgrind's callgrind tools and taskset)");
            return;
        }
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("callgrind.out");
    let mut command = std::process::Command::new("taskset");
    command
        .args(["-c", "0", "valgrind", "--tool=callgrind", "--dump-line=no"])
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(server_bin())
        .arg("--db")
        .arg(dir.path().join("counted.db"));
    let (mut child, mut raw) = raw_server_from(command);
    // taskset and valgrind exec in place: the child's pid is the server's.
    let pid = child.id().to_string();
    let control = |args: &[&str]| {
        let ok = std::process::Command::new("callgrind_control")
            .args(args)
            .arg(&pid)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "callgrind_control {args:?} failed");
    };
    raw.round_trip(&tool(1, "start_new", json!({ "sessionTitle": "counted" })));
    raw.round_trip(&tool(2, "cipher", json!({})));
    control(&["--zero"]);
    let started = Instant::now();
    for i in 0..THOUGHTS {
        raw.round_trip(&tool(
            10 + i,
            "thought",
            json!({ "thought": text(i), "nextThoughtNeeded": true }),
        ));
        if (i + 1) % 1000 == 0 {
            control(&[&format!("--dump=after thought {}", i + 1)]);
        }
    }
    let took = started.elapsed();
    drop(raw);
    child.wait().expect("exit");
    if std::env::var_os("THOUGHTBOX_KEEP_CALLGRIND").is_some() {
        println!("instructions: the dumps are kept in {}", dir.path().display());
    }
    let (mut request_path, mut background) = (Vec::new(), Vec::new());
    for block in 1..=THOUGHTS / 1000 {
        let (total, upkeep) = counted(&dir.path().join(format!("callgrind.out.{block}")));
        request_path.push((total - upkeep) as f64 / 1000.0);
        background.push(upkeep as f64 / 1000.0);
    }
    let change = |b: &[f64]| (b[b.len() - 1] / b[0] - 1.0) * 100.0;
    let thousands = |b: &[f64]| {
        b.iter()
            .map(|x| format!("{:.0}", x / 1e3))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let totals: Vec<f64> = request_path.iter().zip(&background).map(|(a, b)| a + b).collect();
    if std::env::var_os("THOUGHTBOX_KEEP_CALLGRIND").is_some() {
        let _ = dir.keep();
    }
    println!(
        "instructions per thought (thousands, blocks of 1,000; {:.0} s under callgrind): request path {} (last vs first {:+.1} %) | background upkeep {} | both {} (last vs first {:+.1} %)",
        took.as_secs_f64(),
        thousands(&request_path),
        change(&request_path),
        thousands(&background),
        thousands(&totals),
        change(&totals),
    );
}

/// A callgrind dump's instructions: the total, and the part spent in the
/// background upkeep (inclusive costs of the store's indexing and
/// checkpoint functions, as `callgrind_annotate` lists them).
fn counted(dump: &Path) -> (u64, u64) {
    // Run where no source is: from the source tree, callgrind_annotate
    // would name its files by relative paths, and list some twice.
    let output = std::process::Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=100"])
        .arg(dump)
        .current_dir(dump.parent().expect("the dump's folder"))
        .output()
        .expect("callgrind_annotate");
    let text = String::from_utf8_lossy(&output.stdout);
    let number = |line: &str| -> Option<u64> { line.split_whitespace().next()?.replace(',', "").parse().ok() };
    let mut total = None;
    let mut upkeep = 0;
    for line in text.lines() {
        if line.contains("PROGRAM TOTALS") {
            total = number(line);
        }
        // The entry of each function in its own source file (an inlined
        // part is listed again under the file it came from).
        let upkeep_fn = [
            ("search.rs", "index_pending_for_search"),
            ("mod.rs", "checkpoint_passive"),
            ("mod.rs", "checkpoint_within"),
        ]
        .iter()
        .any(|(file, f)| line.contains(&format!("/src/store/{file}:")) && line.contains(&format!("::{f} [")));
        if upkeep_fn {
            upkeep += number(line).unwrap_or(0);
        }
    }
    (total.expect("a PROGRAM TOTALS line"), upkeep)
}

async fn startup_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("startup.db");
    {
        let store = Store::open(&db, OpenOptionsStore::default()).expect("open");
        for i in 0..1000 {
            store
                .create_session(NewSession {
                    title: format!("session {i}"),
                    tags: vec!["project:bench".into()],
                    ..Default::default()
                })
                .expect("session");
        }
        store.checkpoint().expect("checkpoint");
    }
    let mut times = Vec::new();
    for _ in 0..30 {
        let t0 = Instant::now();
        let (client, _) = spawn(&db, &[]).await;
        times.push(t0.elapsed());
        client.cancel().await.ok();
    }
    times.sort();
    println!(
        "startup: spawn to `initialize` answered, existing database of 1,000 sessions, 30 runs: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        percentile(&times, 0.5).as_secs_f64() * 1e3,
        percentile(&times, 0.95).as_secs_f64() * 1e3,
        times.last().expect("runs").as_secs_f64() * 1e3,
    );
}

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with('-')).collect();
    let wanted = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    // The client runs on one thread, like the server, so that the figures
    // measure the server and the protocol rather than thread hand-offs
    // inside the load generator.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if wanted("raw") {
        raw_run();
    }
    // Only on request: it takes a minute.
    if filter.iter().any(|f| f == "drift") {
        drift_run();
    }
    if filter.iter().any(|f| f == "stall") {
        stall_run();
    }
    // Only on request: about three minutes under valgrind.
    if filter.iter().any(|f| f == "instructions") {
        instructions_run();
    }
    runtime.block_on(async {
        // THOUGHTBOX_APPEND_RUNS=N repeats each append run N times (a fresh
        // server and database each) and adds the medians over the runs.
        let repeats: usize = std::env::var("THOUGHTBOX_APPEND_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1)
            .max(1);
        for (name, label, extra, min_per_second) in [
            (
                "append-normal",
                "append-normal (default: WAL, synchronous=NORMAL)",
                &[][..],
                6000.0,
            ),
            (
                "append-full",
                "append-full (--sync full)",
                &["--sync", "full"][..],
                2000.0,
            ),
        ] {
            if !wanted(name) {
                continue;
            }
            let mut runs = Vec::with_capacity(repeats);
            for _ in 0..repeats {
                runs.push(append_run(label, extra).await);
            }
            if repeats > 1 {
                runs_summary(name, &runs, min_per_second);
            }
        }
        if wanted("roundtrip") {
            roundtrip_run().await;
        }
        if wanted("startup") {
            startup_run().await;
        }
    });
}
