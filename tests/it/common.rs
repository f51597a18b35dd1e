#![allow(deprecated)] // sampling and roots types, used by the test client

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestMethod, CreateMessageRequestParams,
    CreateMessageResult, Implementation, ListRootsResult, Root, RootsCapabilities, SamplingCapability, SamplingMessage,
};
use rmcp::service::{RequestContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Map, Value, json};
use thoughtbox::domain::ThoughtInput;
use tokio::process::Command;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_thoughtbox")
}

/// Every variable the binary reads, removed from the environment of the
/// binary a test runs, so that a developer's own settings (a ledger, a
/// stage gate, an event file) never reach a test.
pub const SCRUBBED_ENV: &[&str] = &[
    "THOUGHTBOX_DB",
    "THOUGHTBOX_DATA_DIR",
    "THOUGHTBOX_SYNC",
    "THOUGHTBOX_STAGES",
    "THOUGHTBOX_EVENTS",
    "THOUGHTBOX_PROJECT",
    "THOUGHTBOX_CRITIQUE_TIMEOUT_SECS",
    "THOUGHTBOX_ROOTS_TIMEOUT_SECS",
    "THOUGHTBOX_NODE",
    "THOUGHTBOX_NOTEBOOK_TIMEOUT_SECS",
    "THOUGHTBOX_NOTEBOOK_CHILD_PROCESSES",
    "THOUGHTBOX_CHECKPOINTS",
    "THOUGHTBOX_HTTP",
    "THOUGHTBOX_TOKEN",
    "THOUGHTBOX_TOKEN_FILE",
    "THOUGHTBOX_ALLOWED_HOSTS",
    "THOUGHTBOX_HTTP_LIMITS",
];

/// A command for the binary with a scrubbed environment.
pub fn command(db: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.arg("--db").arg(db);
    for var in SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    cmd.env("RUST_LOG", "warn");
    cmd
}

/// How a [`TestClient`] answers a sampling request.
#[derive(Clone)]
pub enum Sampling {
    /// A short critique ("Critique: consider the edge cases. (saw N
    /// chars)") by `test-model-1`.
    Critique,
    /// The prompt it was sent, by `echo`, so that a test can see the
    /// context the server gave it.
    Echo,
    /// This text, by this model.
    Text(String, &'static str),
    /// Never (the request stays unanswered).
    Never,
}

/// How a [`TestClient`] answers `roots/list`.
#[derive(Clone)]
pub enum Roots {
    /// With these roots.
    Listed(Vec<Root>),
    /// Never (the request stays unanswered).
    Never,
}

/// Something a client does to the ledger while its model writes a
/// critique, as another process would (deletes sessions, moves the file).
pub type Meanwhile = std::sync::Arc<dyn Fn() + Send + Sync>;

/// The test client: declares sampling and roots when it answers them,
/// and answers as it is told. `TestClient::default()` declares neither.
#[derive(Clone, Default)]
pub struct TestClient {
    sampling: Option<Sampling>,
    roots: Option<Roots>,
    meanwhile: Option<Meanwhile>,
}

impl TestClient {
    /// A client that answers sampling requests with a short critique.
    pub fn critic() -> TestClient {
        TestClient::default().sampling(Sampling::Critique)
    }

    pub fn sampling(mut self, how: Sampling) -> TestClient {
        self.sampling = Some(how);
        self
    }

    /// Lists these roots, in this order: `(uri, name)`, with the name the
    /// client gives the root, if any.
    pub fn roots<'a>(mut self, roots: impl IntoIterator<Item = (&'a str, Option<&'a str>)>) -> TestClient {
        let listed = roots
            .into_iter()
            .map(|(uri, name)| {
                let mut root = Root::new(uri);
                root.name = name.map(str::to_string);
                root
            })
            .collect();
        self.roots = Some(Roots::Listed(listed));
        self
    }

    /// Declares roots and never answers `roots/list`.
    pub fn silent_roots(mut self) -> TestClient {
        self.roots = Some(Roots::Never);
        self
    }

    /// Runs `meanwhile` before it answers each sampling request.
    pub fn meanwhile(mut self, meanwhile: impl Fn() + Send + Sync + 'static) -> TestClient {
        self.meanwhile = Some(std::sync::Arc::new(meanwhile));
        self
    }
}

impl ClientHandler for TestClient {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.sampling.is_some() {
            capabilities.sampling = Some(SamplingCapability::default());
        }
        if self.roots.is_some() {
            capabilities.roots = Some(RootsCapabilities::default());
        }
        ClientConfig::new(capabilities, Implementation::new("thoughtbox-test-client", "1.0.0"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        if let Some(meanwhile) = &self.meanwhile {
            meanwhile();
        }
        let (text, model) = match &self.sampling {
            None => return Err(ErrorData::method_not_found::<CreateMessageRequestMethod>()),
            Some(Sampling::Never) => std::future::pending().await,
            Some(Sampling::Critique) => (
                format!(
                    "Critique: consider the edge cases. (saw {} chars)",
                    prompt_text(&params).len()
                ),
                "test-model-1",
            ),
            Some(Sampling::Echo) => (prompt_text(&params), "echo"),
            Some(Sampling::Text(text, model)) => (text.clone(), *model),
        };
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text(text),
            model.into(),
        ))
    }

    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, ErrorData> {
        match &self.roots {
            None => Ok(ListRootsResult::default()),
            Some(Roots::Never) => std::future::pending().await,
            Some(Roots::Listed(roots)) => Ok(ListRootsResult::new(roots.clone())),
        }
    }
}

pub struct Server<H: ClientHandler = ()> {
    pub client: RunningService<RoleClient, H>,
    pub pid: u32,
}

pub async fn start_with<H: ClientHandler>(handler: H, mut cmd: Command) -> Server<H> {
    cmd.stderr(Stdio::null());
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn thoughtbox");
    let pid = transport.id().expect("child pid");
    let client = handler.serve(transport).await.expect("MCP initialize");
    Server { client, pid }
}

pub async fn start(db: &Path) -> Server {
    start_with((), command(db)).await
}

/// [`start`], with the server's log (`RUST_LOG=thoughtbox=info`) in `log`.
pub async fn start_logging(db: &Path, log: &Path) -> Server {
    start_logging_with(db, log, &[]).await
}

/// [`start_logging`] with these environment variables set.
pub async fn start_logging_with(db: &Path, log: &Path, env: &[(&str, &str)]) -> Server {
    let mut cmd = command(db);
    cmd.env("RUST_LOG", "thoughtbox=info").envs(env.iter().copied());
    let file = std::fs::File::create(log).expect("log file");
    let (transport, _stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::from(file))
        .spawn()
        .expect("spawn thoughtbox");
    let pid = transport.id().expect("child pid");
    let client = ().serve(transport).await.expect("MCP initialize");
    Server { client, pid }
}

impl<H: ClientHandler> Server<H> {
    /// Call the gateway: `Ok(response)` or `Err(ErrorPayload)`.
    pub async fn call(&self, operation: &str, args: Value) -> Result<Value, Value> {
        let mut arguments = Map::new();
        arguments.insert("operation".into(), json!(operation));
        if !args.is_null() {
            arguments.insert("args".into(), args);
        }
        self.call_raw(arguments).await
    }

    pub async fn call_raw(&self, arguments: Map<String, Value>) -> Result<Value, Value> {
        let result = self
            .client
            .call_tool(CallToolRequestParams::new("thoughtbox_gateway").with_arguments(arguments))
            .await
            .expect("tools/call transport");
        let text = result
            .content
            .first()
            .and_then(|c| c.as_text())
            .expect("a text block")
            .text
            .clone();
        let value: Value = serde_json::from_str(&text).expect("the text block is JSON");
        assert_eq!(
            result.structured_content.as_ref(),
            Some(&value),
            "structuredContent mirrors the text"
        );
        if result.is_error == Some(true) {
            Err(value)
        } else {
            Ok(value)
        }
    }

    /// Call and expect success, with every argument used (the tests pass
    /// only documented parameters, so an `ignoredArguments` here means an
    /// operation fails to read one of its own).
    pub async fn ok(&self, operation: &str, args: Value) -> Value {
        match self.call(operation, args.clone()).await {
            Ok(v) => {
                assert!(
                    v.get("ignoredArguments").is_none(),
                    "{operation} {args} ignored some arguments: {v}"
                );
                v
            }
            Err(e) => panic!("{operation} {args} failed: {e}"),
        }
    }

    /// Call and expect an error with `code`; returns the ErrorPayload.
    pub async fn err(&self, operation: &str, args: Value, code: &str) -> Value {
        match self.call(operation, args.clone()).await {
            Ok(v) => panic!("{operation} {args} should fail with {code}, answered {v}"),
            Err(e) => {
                assert_eq!(e["code"], code, "{operation} {args}: {e}");
                assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()));
                e
            }
        }
    }

    /// start_new + cipher: a session is active and thoughts are allowed.
    pub async fn ready(&self, title: &str) -> String {
        let s = self.ok("start_new", json!({ "sessionTitle": title })).await;
        self.ok("cipher", Value::Null).await;
        s["session"]["id"].as_str().expect("session id").to_string()
    }

    pub async fn thought(&self, args: Value) -> Value {
        self.ok("thought", args).await
    }

    /// Close stdin and wait for the server to exit cleanly.
    pub async fn stop(self) {
        let _ = self.client.cancel().await;
        wait_exit(self.pid).await;
    }
}

/// Whether this test process ignores SIGHUP (it runs under `nohup`): the
/// servers it starts inherit that, and then keep serving on SIGHUP by
/// design, so a test of a clean stop on SIGHUP has nothing to test.
/// The server's own check, asked of this process.
pub fn sighup_ignored() -> bool {
    #[cfg(unix)]
    return thoughtbox::serve::hangup_ignored();
    #[cfg(not(unix))]
    false
}

/// Whether a thread of process `pid` (of that name, when given) sleeps in
/// a kernel function whose name contains `wchan`: SQLite's busy handler
/// waits in `nanosleep`. `None` where the kernel does not show where
/// threads sleep (another system, or a kernel that hides it). Fails the
/// test if `pid` has ended: it can then never be seen sleeping.
pub fn thread_sleeps_in(pid: u32, thread: Option<&str>, wchan: &str) -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        if !wchan_shown() {
            return None;
        }
        let of = |tid: &str| std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/wchan")).unwrap_or_default();
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"));
        let Ok(tasks) = tasks else {
            panic!("process {pid} has ended")
        };
        Some(tasks.flatten().any(|task| {
            let tid = task.file_name().to_string_lossy().into_owned();
            let name = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            thread.is_none_or(|t| name.trim() == t) && of(&tid).contains(wchan)
        }))
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (pid, thread, wchan);
        None
    }
}

/// Whether this kernel shows where a thread sleeps: asked once, of a
/// thread of this process that is known to sleep (a running thread and a
/// hidden one both read `0`, so a thread of the server cannot tell).
#[cfg(target_os = "linux")]
fn wchan_shown() -> bool {
    static SHOWN: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SHOWN.get_or_init(|| {
        let (wake, wait) = std::sync::mpsc::channel::<()>();
        let (said, tid) = std::sync::mpsc::channel();
        let sleeper = std::thread::spawn(move || {
            let _ = said.send(std::fs::read_link("/proc/thread-self").ok());
            let _ = wait.recv();
        });
        let wchan = tid.recv().ok().flatten().map(|task| task.join("wchan"));
        let shown = wchan.is_some_and(|wchan| {
            (0..200).any(|_| {
                let now = std::fs::read_to_string(&wchan).unwrap_or_default();
                let asleep = !matches!(now.trim(), "" | "0");
                if !asleep {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                asleep
            })
        });
        drop(wake);
        let _ = sleeper.join();
        shown
    })
}

/// Wait (at most about ten seconds, then fail saying `what` never
/// happened) until [`thread_sleeps_in`] holds; where that is not shown,
/// wait a fixed moment instead, longer than the waits the tests look for
/// take to begin (the idle checkpoint's first try is 1 s after a write).
pub async fn until_thread_sleeps_in(pid: u32, thread: Option<&str>, wchan: &str, what: &str) {
    for _ in 0..1000 {
        match thread_sleeps_in(pid, thread, wchan) {
            Some(true) => return,
            Some(false) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            None => {
                tokio::time::sleep(std::time::Duration::from_millis(1600)).await;
                return;
            }
        }
    }
    panic!("{what}");
}

/// Wait until server `pid`'s ledger writer sleeps in SQLite's busy
/// handler, waiting for a lock another connection holds, so that a test
/// acts while a write is held up rather than after a guessed delay.
#[cfg(unix)]
pub async fn writer_waits_for_lock(pid: u32) {
    until_thread_sleeps_in(
        pid,
        Some("ledger-writer"),
        "nanosleep",
        "the server's writer never waited for the lock",
    )
    .await;
}

/// Wait (at most a minute) until the server's log holds `line`; answers
/// the log.
pub async fn logged(log: &Path, line: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        if text.contains(line) {
            return text;
        }
        assert!(std::time::Instant::now() < deadline, "no {line:?} in the log:\n{text}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Send `operation` with `args` as a request the client can cancel:
/// returned once the request is on its way, after every request sent
/// before it.
pub async fn cancellable_call<H: ClientHandler>(
    s: &Server<H>,
    operation: &str,
    args: Value,
) -> rmcp::service::RequestHandle<RoleClient> {
    use rmcp::model::{CallToolRequest, ClientRequest};
    use rmcp::service::PeerRequestOptions;
    let Value::Object(arguments) = json!({ "operation": operation, "args": args }) else {
        unreachable!()
    };
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(
        CallToolRequestParams::new("thoughtbox_gateway").with_arguments(arguments),
    ));
    s.client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("request sent")
}

/// Wait (at most a minute, then fail saying `what` did not happen) until
/// the server listening on loopback port `server` has closed its end of
/// the connection from each local port of `clients`, as the kernel's
/// table of TCP connections shows it: none of its ends left ESTABLISHED,
/// or in CLOSE_WAIT (the client closed, the server not yet). Linux; where
/// the table cannot be read, wait `otherwise` instead.
pub async fn until_server_closed(server: u16, clients: &[u16], what: &str, otherwise: std::time::Duration) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let Ok(table) = std::fs::read_to_string("/proc/net/tcp") else {
            tokio::time::sleep(otherwise).await;
            return;
        };
        // Lines of `sl local rem st ...`, addresses as hexadecimal
        // `IP:PORT`; states 01 ESTABLISHED, 08 CLOSE_WAIT.
        let port = |address: &str| {
            address
                .rsplit_once(':')
                .and_then(|(_, p)| u16::from_str_radix(p, 16).ok())
        };
        let open = table.lines().skip(1).any(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            fields.len() > 3
                && port(fields[1]) == Some(server)
                && port(fields[2]).is_some_and(|p| clients.contains(&p))
                && matches!(fields[3], "01" | "08")
        });
        if !open {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{what}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Wait until a process has exited (polls /proc; bounded).
#[cfg(target_os = "linux")]
pub async fn wait_exit(pid: u32) {
    for _ in 0..500 {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // Gone, or a zombie waiting to be reaped.
        if stat.is_empty() || stat.split_whitespace().nth(2) == Some("Z") {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("process {pid} did not exit");
}

/// Wait until a process has exited (polls `ps`, as there is no /proc;
/// bounded).
#[cfg(all(unix, not(target_os = "linux")))]
pub async fn wait_exit(pid: u32) {
    for _ in 0..500 {
        let out = std::process::Command::new("ps")
            .args(["-o", "stat=", "-p", &pid.to_string()])
            .output()
            .expect("run ps");
        let stat = String::from_utf8_lossy(&out.stdout);
        // Gone, or a zombie waiting to be reaped.
        if stat.trim().is_empty() || stat.trim_start().starts_with('Z') {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("process {pid} did not exit");
}

/// Wait until a process has exited (polls its handle; bounded).
#[cfg(windows)]
pub async fn wait_exit(pid: u32) {
    use windows_sys::Win32::Foundation::{CloseHandle, WAIT_FAILED, WAIT_OBJECT_0};
    use windows_sys::Win32::System::Threading::{OpenProcess, PROCESS_SYNCHRONIZE, WaitForSingleObject};
    // SAFETY: OpenProcess takes no pointers; a null handle means the
    // process is gone (or was never there).
    let handle = unsafe { OpenProcess(PROCESS_SYNCHRONIZE, 0, pid) };
    if handle.is_null() {
        return;
    }
    // Held as a number across the awaits below (a raw pointer would make
    // this future unsendable).
    let raw = handle as usize;
    let mut exited = false;
    for _ in 0..500 {
        // SAFETY: the handle is open until CloseHandle below.
        match unsafe { WaitForSingleObject(raw as windows_sys::Win32::Foundation::HANDLE, 0) } {
            WAIT_OBJECT_0 => {
                exited = true;
                break;
            }
            WAIT_FAILED => panic!("waiting for process {pid}: {}", std::io::Error::last_os_error()),
            _ => {}
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    // SAFETY: closed once, not used after.
    unsafe { CloseHandle(raw as windows_sys::Win32::Foundation::HANDLE) };
    assert!(exited, "process {pid} did not exit");
}

/// Send `signal` (`KILL`, `TERM`...) to process `pid`. On Windows only
/// `KILL` exists: the process is terminated at once (TerminateProcess), as
/// `kill -9` does on Unix.
pub fn kill(pid: u32, signal: &str) {
    #[cfg(unix)]
    let status = std::process::Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .expect("run kill");
    #[cfg(not(unix))]
    let status = {
        assert_eq!(signal, "KILL", "only KILL can be sent on this system");
        std::process::Command::new("taskkill")
            .args(["/F", "/PID", &pid.to_string()])
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run taskkill")
    };
    assert!(status.success());
}

pub fn temp_db() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("ledger.db");
    (dir, db)
}

/// A thought of `text` that wants a next one, as the gateway's JSON.
pub fn t(text: &str) -> Value {
    json!({ "thought": text, "nextThoughtNeeded": true })
}

/// The same thought as the library's input, for tests that seed a ledger
/// through `Store` (`ThoughtInput { branch_id, ..input("x") }`).
pub fn input(text: &str) -> ThoughtInput {
    ThoughtInput {
        thought: text.into(),
        next_thought_needed: true,
        ..Default::default()
    }
}

/// The text of every message of a sampling request, one per line.
pub fn prompt_text(params: &CreateMessageRequestParams) -> String {
    params
        .messages
        .iter()
        .flat_map(|m| m.content.clone().into_vec())
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A tmpfs of `size` mounted on a new directory, unmounted when dropped;
/// `None` where mounting is not allowed (not root, no CAP_SYS_ADMIN).
pub struct SmallDisk {
    _dir: tempfile::TempDir,
    pub path: std::path::PathBuf,
}

impl SmallDisk {
    pub fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("disk");
        std::fs::create_dir(&path).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(SmallDisk { _dir: dir, path })
    }

    /// Write a filler file until the disk is full.
    pub fn fill(&self) -> std::path::PathBuf {
        use std::io::Write;
        let filler = self.path.join("filler");
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 4096];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
        filler
    }

    /// Mount it again read-only (`true`) or writable. Tried again for a
    /// while when the mount is busy: a child that another test forks holds
    /// copies of this process's open files until it execs.
    pub fn remount(&self, read_only: bool) {
        let how = if read_only { "remount,ro" } else { "remount,rw" };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let out = std::process::Command::new("mount")
                .args(["-o", how])
                .arg(&self.path)
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "mount -o {how}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg("-l").arg(&self.path).status();
    }
}
