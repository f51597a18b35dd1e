//! One large session (100,000 thoughts of ~550 characters, a branch every
//! 1,000 thoughts): time and peak memory of the commands that read or write
//! a whole session, run as a user runs them, with the release binary.
//!
//!   cargo bench --bench large            # THOUGHTBOX_LARGE=N for another size
//!
//! Peak RSS is the process's VmHWM, read from /proc every millisecond while
//! a command runs (Linux only), and once after each call for the server.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use thoughtbox::domain::{NewSession, ThoughtInput};
use thoughtbox::store::{OpenOptionsStore, Store, Target};

fn bin() -> PathBuf {
    std::env::var_os("THOUGHTBOX_BIN")
        .unwrap_or_else(|| env!("CARGO_BIN_EXE_thoughtbox").into())
        .into()
}

/// The peak resident set of process `pid` so far, in KiB.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Run the binary with `args`; its wall time and peak RSS.
fn measure(db: &Path, args: &[&str]) -> (Duration, u64) {
    let started = Instant::now();
    let mut child = Command::new(bin())
        .arg("--db")
        .arg(db)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut peak = 0;
    loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            assert!(status.success(), "{args:?} failed");
            return (started.elapsed(), peak);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

fn report(what: &str, (took, peak): (Duration, u64)) {
    println!(
        "{what}: {:.2} s, peak RSS {:.1} MiB",
        took.as_secs_f64(),
        peak as f64 / 1024.0
    );
}

/// A session of `n` thoughts, built through the store.
fn build(db: &Path, n: usize) -> String {
    let store = Store::open(db, OpenOptionsStore::default()).expect("open");
    let id = store.create_session(NewSession::titled("large")).expect("session").id;
    let words = [
        "cache", "latency", "eviction", "replica", "quorum", "index", "backoff", "tail", "shard", "lease",
    ];
    for i in 0..n {
        let mut text = format!("Step {i}: ");
        let mut k = i;
        while text.len() < 550 {
            text.push_str(words[k % words.len()]);
            text.push(' ');
            k = k / 3 + 7 * (i % 13) + text.len();
        }
        let branch = (i % 1000 == 999).then(|| format!("b{}", i / 1000));
        let input = ThoughtInput {
            thought: text,
            next_thought_needed: true,
            branch_from_thought: branch.as_ref().map(|_| 1),
            branch_id: branch,
            ..Default::default()
        };
        store
            .append_thought(Target::Session(id.clone()), input)
            .expect("append");
    }
    store.index_all_pending().expect("index");
    store.checkpoint().expect("checkpoint");
    id
}

/// The server, driven by a bare JSON-RPC client.
struct Server {
    child: std::process::Child,
    input: std::process::ChildStdin,
    output: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Server {
    fn start(db: &Path) -> Server {
        let mut child = Command::new(bin())
            .arg("--db")
            .arg(db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let mut s = Server {
            input: child.stdin.take().expect("stdin"),
            output: BufReader::new(child.stdout.take().expect("stdout")),
            child,
            next: 0,
        };
        s.request(
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "large", "version": "1" } }),
        );
        s.input
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
            .expect("write");
        s
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let mut line = serde_json::to_vec(&json!({ "jsonrpc": "2.0", "id": self.next, "method": method,
            "params": params }))
        .expect("json");
        line.push(b'\n');
        self.input.write_all(&line).expect("write");
        let mut answer = String::new();
        self.output.read_line(&mut answer).expect("read");
        serde_json::from_str(&answer).expect("answer")
    }

    /// One gateway call: its wall time, and whether it answered an error.
    fn tool(&mut self, operation: &str, args: Value) -> (Duration, bool) {
        let started = Instant::now();
        let answer = self.request(
            "tools/call",
            json!({ "name": "thoughtbox_gateway", "arguments": { "operation": operation, "args": args } }),
        );
        (started.elapsed(), answer["result"]["isError"] == true)
    }
}

fn main() {
    let n: usize = std::env::var("THOUGHTBOX_LARGE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("large.db");
    let t = Instant::now();
    let id = build(&db, n);
    println!("built a session of {n} thoughts in {:.1} s", t.elapsed().as_secs_f64());
    let out = |name: &str| dir.path().join(name).to_string_lossy().into_owned();
    for format in ["json", "markdown", "cipher"] {
        let file = out(&format!("export.{format}"));
        report(
            &format!("export --format {format} --out FILE"),
            measure(&db, &["export", "--session", &id, "--format", format, "--out", &file]),
        );
    }
    report(
        "sessions show --json (to /dev/null)",
        measure(&db, &["sessions", "show", &id, "--json"]),
    );
    let tree = out("tree");
    report(
        "export --out DIR (the directory layout)",
        measure(&db, &["export", "--out", &tree]),
    );
    let imported = dir.path().join("imported.db");
    report("import DIR into a new database", measure(&imported, &["import", &tree]));
    report("repair", measure(&db, &["repair"]));

    let mut server = Server::start(&db);
    server.tool("load_context", json!({ "sessionId": id }));
    for format in ["json", "markdown"] {
        let (took, refused) = server.tool(
            "session",
            json!({ "subOperation": "export", "sessionId": id,
            "format": format }),
        );
        println!(
            "gateway session export ({format}, {}): {:.2} s, server peak RSS so far {:.1} MiB",
            if refused {
                "refused: too long for one message"
            } else {
                "answered"
            },
            took.as_secs_f64(),
            peak_kib(server.child.id()).unwrap_or(0) as f64 / 1024.0
        );
    }
    let (took, _) = server.tool("session", json!({ "subOperation": "delete", "sessionId": id }));
    println!("gateway session delete of {n} thoughts: {:.2} s", took.as_secs_f64());
    drop(server.input);
    let _ = server.child.wait();
}
