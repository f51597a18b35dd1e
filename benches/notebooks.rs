//! What running a notebook cell costs, through the real server:
//!
//!   cargo bench --bench notebooks     # builds the release binary, then runs
//!
//! One server on a temporary database, driven over stdio with
//! newline-delimited JSON-RPC, one request in flight, as an agent does:
//! - a trivial JavaScript cell (`console.log(6 * 7)`) run N times: the
//!   median and p90 of the server's `durationMs` (spawn to exit) and of the
//!   call's wall time;
//! - the same for a trivial TypeScript cell, after `install_deps` installs the
//!   notebook's TypeScript compiler (Node without type stripping; needs the npm
//!   registry once, else this part is skipped with the reason);
//! - the server's resident memory (VmRSS) before, and its peak while 4 cells
//!   that each wait 2 s run at once (sampled every 10 ms from /proc).
//!
//! Environment: THOUGHTBOX_NOTEBOOK_RUNS (20), THOUGHTBOX_BIN (another
//! build). Needs `node` (and `npm` for TypeScript) and Linux's /proc.

#[cfg(target_os = "linux")]
fn main() {
    linux::main();
}

#[cfg(not(target_os = "linux"))]
fn main() {
    println!("notebooks: skipped (reads the server's memory from /proc, which only Linux has)");
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io::{BufRead, BufReader, Write};
    use std::path::PathBuf;
    use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
    use std::time::{Duration, Instant};

    use serde_json::{Value, json};

    fn binary() -> PathBuf {
        if let Some(b) = std::env::var_os("THOUGHTBOX_BIN") {
            return PathBuf::from(b);
        }
        let exe = std::env::current_exe().expect("the bench's own path");
        let target = exe.ancestors().nth(3).expect("target dir").to_path_buf();
        let status = Command::new(env!("CARGO"))
            .args(["build", "--release", "--bin", "thoughtbox"])
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .expect("cargo build");
        assert!(status.success());
        target.join("release/thoughtbox")
    }

    struct Server {
        child: Child,
        input: ChildStdin,
        output: BufReader<ChildStdout>,
        next: u64,
    }

    impl Server {
        fn send(&mut self, method: &str, params: Value) -> u64 {
            self.next += 1;
            let msg = json!({ "jsonrpc": "2.0", "id": self.next, "method": method, "params": params });
            writeln!(self.input, "{msg}").expect("write");
            self.input.flush().expect("flush");
            self.next
        }

        fn read(&mut self) -> Value {
            loop {
                let mut line = String::new();
                assert!(
                    self.output.read_line(&mut line).expect("read") > 0,
                    "the server closed stdout"
                );
                let v: Value = serde_json::from_str(&line).expect("JSON line");
                if v.get("id").is_some() {
                    return v;
                }
            }
        }

        fn gateway_async(&mut self, operation: &str, args: Value) -> u64 {
            self.send(
                "tools/call",
                json!({ "name": "thoughtbox_gateway", "arguments": { "operation": operation, "args": args } }),
            )
        }

        fn answer(v: &Value) -> Value {
            let text = v["result"]["content"][0]["text"].as_str().expect("a text answer");
            serde_json::from_str(text).expect("JSON answer")
        }

        fn gateway(&mut self, operation: &str, args: Value) -> Value {
            self.gateway_async(operation, args);
            let v = self.read();
            assert_ne!(v["result"]["isError"], true, "{operation}: {v}");
            Server::answer(&v)
        }

        fn rss_kib(&self) -> u64 {
            rss_of(self.child.id())
        }

        /// The resident memory of the server's children (the cells' node processes).
        fn children_kib(&self) -> u64 {
            let me = self.child.id().to_string();
            let Ok(procs) = std::fs::read_dir("/proc") else {
                return 0;
            };
            procs
                .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
                .filter(|pid| {
                    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
                    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
                    rest.split_whitespace().nth(1) == Some(me.as_str())
                })
                .map(rss_of)
                .sum()
        }
    }

    fn rss_of(pid: u32) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }

    fn start(bin: &PathBuf, db: &std::path::Path) -> Server {
        let mut child = Command::new(bin)
            .arg("--db")
            .arg(db)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn thoughtbox");
        let input = child.stdin.take().expect("stdin");
        let output = BufReader::new(child.stdout.take().expect("stdout"));
        let mut s = Server {
            child,
            input,
            output,
            next: 0,
        };
        s.send(
            "initialize",
            json!({ "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": { "name": "bench", "version": "1" } }),
        );
        s.read();
        writeln!(
            s.input,
            "{}",
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })
        )
        .expect("write");
        s.gateway("start_new", json!({ "sessionTitle": "notebook bench" }));
        s.gateway("cipher", json!({ "brief": true }));
        s
    }

    fn quantile(v: &mut [f64], q: f64) -> f64 {
        v.sort_by(f64::total_cmp);
        v[((v.len() - 1) as f64 * q).round() as usize]
    }

    fn cell(s: &mut Server, language: &str, filename: &str, source: &str) -> (String, String) {
        let nb = s.gateway(
            "notebook",
            json!({ "subOperation": "create", "name": format!("bench {language}"), "language": language }),
        );
        let id = nb["notebookId"].as_str().expect("id").to_string();
        let c = s.gateway(
            "notebook",
            json!({ "subOperation": "add_cell", "notebookId": id, "type": "code", "content": source, "filename": filename }),
        );
        (id, c["cell"]["id"].as_str().expect("cell").to_string())
    }

    fn runs(s: &mut Server, what: &str, id: &str, cell: &str, n: usize) {
        let (mut server, mut wall) = (Vec::new(), Vec::new());
        for _ in 0..n {
            let t = Instant::now();
            let r = s.gateway(
                "notebook",
                json!({ "subOperation": "run_cell", "notebookId": id, "cellId": cell }),
            );
            wall.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(r["status"], "completed", "{r}");
            server.push(r["durationMs"].as_f64().unwrap_or(0.0));
        }
        println!(
            "{what}: {n} runs, durationMs median {:.0} p90 {:.0}; call wall time median {:.0} ms p90 {:.0} ms",
            quantile(&mut server, 0.5),
            quantile(&mut server, 0.9),
            quantile(&mut wall, 0.5),
            quantile(&mut wall, 0.9)
        );
    }

    pub fn main() {
        let n: usize = std::env::var("THOUGHTBOX_NOTEBOOK_RUNS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20);
        let bin = binary();
        let dir = tempfile::tempdir().expect("temp dir");
        let mut s = start(&bin, &dir.path().join("bench.db"));
        let node = Command::new("node")
            .arg("--version")
            .output()
            .map(|o| o.stdout)
            .unwrap_or_default();
        println!("node {}", String::from_utf8_lossy(&node).trim());

        let (js, js_cell) = cell(&mut s, "javascript", "trivial.js", "console.log(6 * 7);\n");
        runs(&mut s, "trivial JavaScript cell", &js, &js_cell, n);

        let (ts, ts_cell) = cell(
            &mut s,
            "typescript",
            "trivial.ts",
            "const x: number = 6 * 7;\nconsole.log(x);\n",
        );
        let t = Instant::now();
        let installed = s.gateway(
            "notebook",
            json!({ "subOperation": "install_deps", "notebookId": ts, "timeoutSecs": 300 }),
        );
        if installed["status"] == "completed" {
            println!("install_deps (typescript): {:.1} s", t.elapsed().as_secs_f64());
            // The first run compiles; the rest find the output up to date.
            let first = s.gateway(
                "notebook",
                json!({ "subOperation": "run_cell", "notebookId": ts, "cellId": ts_cell }),
            );
            println!(
                "TypeScript cell, first run (compiles): durationMs {}",
                first["durationMs"]
            );
            runs(
                &mut s,
                "trivial TypeScript cell (compiled output up to date)",
                &ts,
                &ts_cell,
                n,
            );
            let (mut edited, mut wall) = (Vec::new(), Vec::new());
            for i in 0..n {
                s.gateway(
                    "notebook",
                    json!({ "subOperation": "update_cell", "notebookId": ts, "cellId": ts_cell,
                            "content": format!("const x: number = {i};\nconsole.log(x);\n") }),
                );
                let t = Instant::now();
                let r = s.gateway(
                    "notebook",
                    json!({ "subOperation": "run_cell", "notebookId": ts, "cellId": ts_cell }),
                );
                wall.push(t.elapsed().as_secs_f64() * 1000.0);
                edited.push(r["durationMs"].as_f64().unwrap_or(0.0));
            }
            println!(
                "trivial TypeScript cell, edited before each run (compiles): durationMs median {:.0} p90 {:.0}; wall median {:.0} ms",
                quantile(&mut edited, 0.5),
                quantile(&mut edited, 0.9),
                quantile(&mut wall, 0.5)
            );
        } else {
            println!("TypeScript: skipped, install_deps failed: {}", installed["error"]);
        }

        std::thread::sleep(Duration::from_millis(500));
        let idle = s.rss_kib();
        let mut cells = Vec::new();
        for i in 0..4 {
            cells.push(cell(
                &mut s,
                "javascript",
                &format!("wait{i}.js"),
                "setTimeout(() => console.log('done'), 2000);\n",
            ));
        }
        for (id, c) in &cells {
            s.gateway_async(
                "notebook",
                json!({ "subOperation": "run_cell", "notebookId": id, "cellId": c }),
            );
        }
        let start = Instant::now();
        let (mut peak, mut cells_peak) = (0, 0);
        while start.elapsed() < Duration::from_millis(1800) {
            peak = peak.max(s.rss_kib());
            cells_peak = cells_peak.max(s.children_kib());
            std::thread::sleep(Duration::from_millis(10));
        }
        for _ in 0..4 {
            let v = s.read();
            assert_eq!(Server::answer(&v)["status"], "completed", "{v}");
        }
        println!(
            "server memory (VmRSS): {:.1} MiB before, {:.1} MiB peak while 4 cells ran at once; the 4 node \
             processes together: {:.1} MiB at their peak",
            idle as f64 / 1024.0,
            peak as f64 / 1024.0,
            cells_peak as f64 / 1024.0
        );
        drop(s.input);
        let _ = s.child.wait();
    }
}
