//! Per-thought cost against `@modelcontextprotocol/server-sequential-thinking`
//! (the reference MCP server for step-by-step thinking, which keeps its
//! thoughts in memory), in the same run, alternating A B A B:
//!
//!   cargo bench --bench versus     # builds the release binary, then runs
//!
//! Each run spawns one server (ours with a temporary database, theirs under
//! `node` with DISABLE_THOUGHT_LOGGING=true, so that printing every thought
//! in a box to stderr does not dominate its cost) and drives it with the same
//! bare client: newline-delimited JSON-RPC over the child's stdin and stdout,
//! one request in flight, as an agent does. After `initialize`, ours gets
//! `start_new` and `cipher {brief: true}`; then both get the same thoughts of
//! ~550 characters (`thought`, `thoughtNumber`, `totalThoughts`,
//! `nextThoughtNeeded`), through `thoughtbox_gateway`'s `thought` and
//! `sequentialthinking`. Measured over the thought calls only:
//!
//! - throughput, thoughts per second of wall time;
//! - the server's CPU time per thought, as the OS accounts it: utime + stime
//!   of the server process (all its threads) from /proc/PID/stat, read just
//!   before the first thought is sent and just after the last answer. Ours
//!   also indexes and checkpoints in the background; what of that is still
//!   to run after the last answer is shown apart ("with upkeep": read again
//!   1.5 s later, once the server's CPU time has stayed still for 300 ms).
//!
//! Printed: each run, each pair's ratios (ours / theirs), the medians of the
//! ratios over the pairs, and whether they meet the targets (throughput at
//! least 1.5x theirs, CPU per thought at most 0.4x). On a shared machine the
//! absolute figures move with the host; the ratios are the figure.
//!
//! Environment:
//!   THOUGHTBOX_VERSUS_THOUGHTS  thoughts per run (10000)
//!   THOUGHTBOX_VERSUS_PAIRS     A B pairs (3)
//!   THOUGHTBOX_VERSUS_VERSION   the npm version of theirs (2026.8.31)
//!   THOUGHTBOX_VERSUS_NPM_DIR   where it is installed (target/versus-npm)
//!   THOUGHTBOX_BIN              another build of ours to measure
//!   THOUGHTBOX_VERSUS_THEIR_LOGGING=1  theirs prints each thought to stderr,
//!                               as it does when installed with defaults
//!   THOUGHTBOX_VERSUS_BASELINE  a build of ours to take theirs' place (B),
//!                               to measure a change against the build
//!                               before it, A B A B in one run
//!
//! Needs `node` and `npm` on PATH (npm only the first time) and Linux's /proc.

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("versus: skipped (reads the server's CPU time from /proc, which only Linux has)");
}

#[cfg(target_os = "linux")]
#[path = "common/text.rs"]
mod thought_text;

#[cfg(target_os = "linux")]
mod linux {
    use super::thought_text::text;
    use std::io::{BufRead, BufReader, Write};
    use std::path::{Path, PathBuf};
    use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};

    const PACKAGE: &str = "@modelcontextprotocol/server-sequential-thinking";
    const VERSION: &str = "2026.8.31";
    const THROUGHPUT_TARGET: f64 = 1.5;
    const CPU_TARGET: f64 = 0.4;

    fn env_usize(name: &str, default: usize) -> usize {
        match std::env::var(name) {
            Ok(v) => v.parse().unwrap_or_else(|_| panic!("{name}={v:?}: expected a count")),
            Err(_) => default,
        }
    }

    /// The target directory this bench was built in (its executable is
    /// `<target>/release/deps/versus-<hash>`).
    fn target_dir() -> PathBuf {
        let exe = std::env::current_exe().expect("the bench's own path");
        exe.ancestors()
            .nth(3)
            .map(Path::to_path_buf)
            .expect("a target directory")
    }

    fn our_bin() -> std::ffi::OsString {
        std::env::var_os("THOUGHTBOX_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_thoughtbox").into())
    }

    /// Their server's entry point, installed with npm on first use.
    fn their_script() -> PathBuf {
        let version = std::env::var("THOUGHTBOX_VERSUS_VERSION").unwrap_or_else(|_| VERSION.into());
        let dir = std::env::var_os("THOUGHTBOX_VERSUS_NPM_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| target_dir().join("versus-npm").join(&version));
        let package = dir.join("node_modules").join(PACKAGE);
        let script = package.join("dist").join("index.js");
        if !script.is_file() {
            println!("installing {PACKAGE}@{version} into {}", dir.display());
            std::fs::create_dir_all(&dir).expect("npm directory");
            let ok = Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(&dir)
                .arg(format!("{PACKAGE}@{version}"))
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            assert!(ok && script.is_file(), "npm install {PACKAGE}@{version} failed");
        }
        let installed: Value =
            serde_json::from_slice(&std::fs::read(package.join("package.json")).expect("package.json"))
                .expect("package.json is JSON");
        println!("theirs: {PACKAGE}@{}", installed["version"].as_str().unwrap_or("?"));
        script
    }

    #[derive(Clone, Copy, PartialEq)]
    enum Server {
        Ours,
        Theirs,
        /// Another build of ours, in theirs' place.
        Baseline,
    }

    impl Server {
        fn name(self) -> &'static str {
            match self {
                Server::Ours => "thoughtbox",
                Server::Theirs => "sequential-thinking",
                Server::Baseline => "baseline build",
            }
        }

        fn is_ours(self) -> bool {
            self != Server::Theirs
        }
    }

    /// Whether theirs prints each thought to stderr, as it does by default.
    fn their_logging() -> bool {
        std::env::var_os("THOUGHTBOX_VERSUS_THEIR_LOGGING").is_some_and(|v| v == "1")
    }

    fn baseline() -> Option<std::ffi::OsString> {
        std::env::var_os("THOUGHTBOX_VERSUS_BASELINE")
    }

    /// One server and the bare client talking to it.
    struct Session {
        child: Child,
        input: ChildStdin,
        output: BufReader<ChildStdout>,
        line: String,
        next_id: u64,
    }

    impl Session {
        fn start(mut command: Command) -> Session {
            let mut child = command
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("spawn the server");
            let mut s = Session {
                input: child.stdin.take().expect("stdin"),
                output: BufReader::new(child.stdout.take().expect("stdout")),
                child,
                line: String::new(),
                next_id: 0,
            };
            s.request(
                "initialize",
                json!({ "protocolVersion": "2025-06-18", "capabilities": {},
                        "clientInfo": { "name": "versus", "version": "1" } }),
            );
            s.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
            s
        }

        fn send(&mut self, message: &Value) {
            let mut bytes = serde_json::to_vec(message).expect("json");
            bytes.push(b'\n');
            self.input.write_all(&bytes).expect("write to the server");
        }

        /// Send a request and read lines until its answer (skipping any
        /// notification); an error answer stops the bench.
        fn request(&mut self, method: &str, params: Value) {
            self.next_id += 1;
            let id = self.next_id;
            self.send(&json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }));
            loop {
                self.line.clear();
                let n = self.output.read_line(&mut self.line).expect("read from the server");
                assert!(n > 0, "the server closed stdout before answering {method}");
                let answer: Value = serde_json::from_str(&self.line).expect("an answer is JSON");
                if answer.get("id").and_then(Value::as_u64) != Some(id) {
                    continue;
                }
                let failed = answer.get("error").is_some() || answer["result"]["isError"] == json!(true);
                assert!(!failed, "{method} failed: {}", self.line);
                return;
            }
        }

        fn tool(&mut self, name: &str, arguments: Value) {
            self.request("tools/call", json!({ "name": name, "arguments": arguments }));
        }

        /// Close stdin and wait (bounded) for the server to exit.
        fn finish(mut self) {
            drop(self.input);
            let deadline = Instant::now() + Duration::from_secs(10);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = self.child.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    /// The clock ticks per second of /proc's CPU times.
    fn clock_ticks() -> f64 {
        // SAFETY: sysconf reads a constant of the system; no precondition.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        assert!(ticks > 0, "sysconf(_SC_CLK_TCK) failed");
        ticks as f64
    }

    /// utime and stime of process `pid` (every thread), in clock ticks.
    fn cpu_ticks(pid: u32) -> (u64, u64) {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/PID/stat");
        // The command name, in parentheses, may hold spaces: fields are
        // counted after its closing one (state is field 3, utime 14).
        let rest = &stat[stat.rfind(')').expect("a stat line") + 2..];
        let fields: Vec<&str> = rest.split(' ').collect();
        let field = |n: usize| -> u64 { fields[n - 3].parse().expect("a tick count") };
        (field(14), field(15))
    }

    struct Run {
        per_second: f64,
        cpu_ms: f64,
        /// The part of `cpu_ms` spent in the kernel (stime).
        sys_ms: f64,
        /// Ours: with the indexing and checkpoints still to run after the
        /// last answer.
        cpu_ms_with_upkeep: Option<f64>,
    }

    fn run(server: Server, script: &Path, thoughts: usize, ticks_per_s: f64) -> Run {
        let dir = tempfile::tempdir().expect("temporary directory");
        let mut command;
        match server {
            Server::Ours | Server::Baseline => {
                let bin = match server {
                    Server::Baseline => baseline().expect("THOUGHTBOX_VERSUS_BASELINE"),
                    _ => our_bin(),
                };
                command = Command::new(bin);
                command
                    .arg("--db")
                    .arg(dir.path().join("versus.db"))
                    .env("RUST_LOG", "warn");
            }
            Server::Theirs => {
                command = Command::new("node");
                command.arg(script);
                if !their_logging() {
                    command.env("DISABLE_THOUGHT_LOGGING", "true");
                }
            }
        }
        let mut s = Session::start(command);
        let pid = s.child.id();
        if server.is_ours() {
            s.tool(
                "thoughtbox_gateway",
                json!({ "operation": "start_new", "args": { "sessionTitle": "versus" } }),
            );
            s.tool(
                "thoughtbox_gateway",
                json!({ "operation": "cipher", "args": { "brief": true } }),
            );
        }
        let cpu_before = cpu_ticks(pid);
        let started = Instant::now();
        for i in 0..thoughts {
            let args = json!({
                "thought": text(i),
                "thoughtNumber": i + 1,
                "totalThoughts": thoughts,
                "nextThoughtNeeded": i + 1 < thoughts,
            });
            match server {
                Server::Theirs => s.tool("sequentialthinking", args),
                _ => s.tool("thoughtbox_gateway", json!({ "operation": "thought", "args": args })),
            }
        }
        let took = started.elapsed();
        let cpu_after = cpu_ticks(pid);
        let per_thought = |ticks: u64| ticks as f64 / ticks_per_s * 1e3 / thoughts as f64;
        let total = |(user, sys): (u64, u64)| user + sys;
        let cpu_ms_with_upkeep = server.is_ours().then(|| {
            // Past the server's idle checkpoint (a second without writes).
            std::thread::sleep(Duration::from_millis(1500));
            let mut last = total(cpu_ticks(pid));
            loop {
                std::thread::sleep(Duration::from_millis(300));
                let now = total(cpu_ticks(pid));
                if now == last {
                    break per_thought(now - total(cpu_before));
                }
                last = now;
            }
        });
        s.finish();
        Run {
            per_second: thoughts as f64 / took.as_secs_f64(),
            cpu_ms: per_thought(total(cpu_after) - total(cpu_before)),
            sys_ms: per_thought(cpu_after.1 - cpu_before.1),
            cpu_ms_with_upkeep,
        }
    }

    fn median(mut v: Vec<f64>) -> f64 {
        v.sort_by(f64::total_cmp);
        let n = v.len();
        if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        }
    }

    fn show(server: Server, r: &Run) {
        let upkeep = r
            .cpu_ms_with_upkeep
            .map(|ms| format!(" ({ms:.3} ms with upkeep)"))
            .unwrap_or_default();
        println!(
            "  {:<20} {:>7.0} thoughts/s, CPU {:.3} ms/thought (kernel {:.3}){upkeep}",
            server.name(),
            r.per_second,
            r.cpu_ms,
            r.sys_ms
        );
    }

    pub fn main() {
        let thoughts = env_usize("THOUGHTBOX_VERSUS_THOUGHTS", 10_000);
        let pairs = env_usize("THOUGHTBOX_VERSUS_PAIRS", 3);
        assert!(thoughts > 0 && pairs > 0, "at least one thought and one pair");
        let (b, script) = if baseline().is_some() {
            (Server::Baseline, PathBuf::new())
        } else {
            let node = Command::new("node").arg("--version").output();
            if !node.as_ref().is_ok_and(|o| o.status.success()) {
                println!("versus: skipped (`node` not found: sequential-thinking runs under Node.js)");
                return;
            }
            (Server::Theirs, their_script())
        };
        let ticks = clock_ticks();
        println!(
            "{thoughts} thoughts of ~550 characters per run, {pairs} pairs, A = thoughtbox, B = {}",
            b.name()
        );
        let (mut speed, mut cpu, mut cpu_upkeep) = (Vec::new(), Vec::new(), Vec::new());
        for pair in 1..=pairs {
            println!("pair {pair}:");
            let ours = run(Server::Ours, &script, thoughts, ticks);
            show(Server::Ours, &ours);
            let theirs = run(b, &script, thoughts, ticks);
            show(b, &theirs);
            let (s, c) = (ours.per_second / theirs.per_second, ours.cpu_ms / theirs.cpu_ms);
            let upkeep = |r: &Run| r.cpu_ms_with_upkeep.unwrap_or(r.cpu_ms);
            let u = upkeep(&ours) / upkeep(&theirs);
            println!("  ratios: throughput {s:.2}x, CPU per thought {c:.2}x ({u:.2}x with upkeep)");
            speed.push(s);
            cpu.push(c);
            cpu_upkeep.push(u);
        }
        let (s, c, u) = (median(speed), median(cpu), median(cpu_upkeep));
        println!("medians over {pairs} pairs, A / B:");
        if b == Server::Baseline {
            println!("  throughput {s:.2}x, CPU per thought {c:.2}x ({u:.2}x with upkeep)");
            return;
        }
        let verdict = |ok: bool| if ok { "met" } else { "MISSED" };
        println!(
            "  throughput {s:.2}x theirs (target >= {THROUGHPUT_TARGET}x): {}",
            verdict(s >= THROUGHPUT_TARGET)
        );
        println!(
            "  CPU per thought {c:.2}x theirs (target <= {CPU_TARGET}x): {}; {u:.2}x with upkeep",
            verdict(c <= CPU_TARGET)
        );
    }
}
