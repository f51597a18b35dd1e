//! Running a cell: Node.js in the notebook's own directory, as a child
//! process in a process group of its own, with a clean environment (no
//! variable of the server's), a time limit and an output limit, killed
//! with its whole group when a limit passes, and, where Node has its
//! permission model, allowed to read and write only its directory, with
//! no child processes and no worker threads. `npm install` for
//! `install_deps` runs under the same limits ([`super::install`]). What
//! the sandbox does not stop is listed in docs/notebooks.md.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::AsyncReadExt;
use tokio::process::Command;

use super::{Cell, CellStatus, Language, Notebook, Outcome};
use crate::error::{Error, Result};

/// The TypeScript compiler a TypeScript notebook's package.json lists, for
/// a Node without type stripping (5.x: the 7.x line has no JavaScript API).
pub const TYPESCRIPT_VERSION: &str = "~5.9.3";
/// A cell's time limit unless the call or the server says otherwise.
pub const DEFAULT_TIME_LIMIT: Duration = Duration::from_secs(30);
/// The longest time limit a call may ask for.
pub const MAX_TIME_LIMIT: Duration = Duration::from_secs(600);
/// The output kept of one run; the rest is cut with a note.
pub const DEFAULT_OUTPUT_LIMIT: usize = 1 << 20;
/// The end of standard error kept for a failed run's `error`.
const ERROR_TAIL: usize = 4096;
/// The only PATH a cell sees.
pub(super) const CELL_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// Where the TypeScript runner and its output live in a notebook's directory.
const TS_DIR: &str = ".thoughtbox";

/// The limits of one run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub time: Duration,
    pub output: usize,
    /// At most this many processes of the server's user (threads, as Linux
    /// counts them) while the run lasts, where set: a cell that may start
    /// processes cannot fork the machine to a halt.
    pub processes: Option<u64>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            time: DEFAULT_TIME_LIMIT,
            output: DEFAULT_OUTPUT_LIMIT,
            processes: None,
        }
    }
}

/// A Node.js version: major, minor, patch.
pub type Version = (u32, u32, u32);

/// The Node.js this server runs cells with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub path: PathBuf,
    pub version: Version,
}

fn install_hint() -> &'static str {
    "install Node.js (Debian/Ubuntu: apt-get install nodejs; macOS: brew install node; or from nodejs.org) and put \
     node on the server's PATH, or set THOUGHTBOX_NODE to its path; then call run_cell again"
}

impl Node {
    /// `THOUGHTBOX_NODE`, else `node` on the server's PATH; asked its
    /// version once per executable, known by its path, the file it resolves
    /// to, and that file's size and modification time (a Node upgraded or
    /// switched while the server runs is asked again).
    pub async fn find() -> Result<Node> {
        let path = match std::env::var_os("THOUGHTBOX_NODE").filter(|v| !v.is_empty()) {
            Some(p) => PathBuf::from(p),
            None => on_path("node").ok_or_else(|| Error::InvalidOperation {
                message: format!("Node.js was not found, and code cells run with it: {}", install_hint()),
                details: Some(json!({ "node": null, "install": install_hint() })),
            })?,
        };
        Node::at(path).await
    }

    /// The Node.js at `path`, asked its version unless known (see [`Node::find`]).
    async fn at(path: PathBuf) -> Result<Node> {
        type Executable = (PathBuf, Option<PathBuf>, Option<(u64, std::time::SystemTime)>);
        static VERSIONS: OnceLock<Mutex<Vec<(Executable, Version)>>> = OnceLock::new();
        let known = VERSIONS.get_or_init(Mutex::default);
        // The file a link resolves to as well: an upgrade may replace that
        // file, or switch the link to another with the same time (Nix gives
        // every file in its store the time 1).
        let executable = (
            path.clone(),
            std::fs::canonicalize(&path).ok(),
            std::fs::metadata(&path).and_then(|m| Ok((m.len(), m.modified()?))).ok(),
        );
        if let Some((_, v)) = known
            .lock()
            .ok()
            .and_then(|k| k.iter().find(|(e, _)| *e == executable).cloned())
        {
            return Ok(Node { path, version: v });
        }
        let failed = |why: String| Error::InvalidOperation {
            message: format!(
                "Node.js at {} could not be run ({why}): {}",
                path.display(),
                install_hint()
            ),
            details: Some(json!({ "node": path.display().to_string() })),
        };
        let out = tokio::time::timeout(
            Duration::from_secs(10),
            Command::new(&path)
                .arg("--version")
                .env_clear()
                .env("PATH", CELL_PATH)
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .map_err(|_| failed("`node --version` took over 10 s".into()))?
        .map_err(|e| failed(e.to_string()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let version = parse_version(&text).ok_or_else(|| failed(format!("`node --version` said {:?}", text.trim())))?;
        if let Ok(mut k) = known.lock() {
            k.retain(|((p, _, _), _)| *p != path);
            k.push((executable, version));
        }
        Ok(Node { path, version })
    }

    pub fn version_text(&self) -> String {
        let (a, b, c) = self.version;
        format!("v{a}.{b}.{c}")
    }

    /// The flag of Node's permission model: `--permission` from 22.13 and
    /// 23.5, `--experimental-permission` from 20.0, none before.
    fn permission_flag(&self) -> Option<&'static str> {
        match self.version {
            (major, minor, _) if major > 23 || (major == 23 && minor >= 5) || (major == 22 && minor >= 13) => {
                Some("--permission")
            }
            (major, _, _) if major >= 20 => Some("--experimental-permission"),
            _ => None,
        }
    }

    /// Whether Node strips TypeScript types itself (22.6 and later; by
    /// default from 23.6, behind a flag before).
    fn type_stripping(&self) -> Option<Option<&'static str>> {
        match self.version {
            (major, minor, _) if major > 23 || (major == 23 && minor >= 6) => Some(None),
            (major, minor, _) if major >= 23 || (major == 22 && minor >= 6) => Some(Some("--experimental-strip-types")),
            _ => None,
        }
    }

    /// npm beside this node, else on the server's PATH.
    pub fn npm(&self) -> Result<PathBuf> {
        let beside = self.path.parent().map(|d| d.join("npm")).filter(|p| p.is_file());
        beside
            .or_else(|| on_path("npm"))
            .ok_or_else(|| Error::InvalidOperation {
                message: "npm was not found beside node or on the server's PATH, and install_deps runs npm install: \
                      install npm (Debian/Ubuntu: apt-get install npm) and call install_deps again (nothing was \
                      changed)"
                    .into(),
                details: Some(json!({ "npm": null })),
            })
    }
}

/// `vMAJOR.MINOR.PATCH`.
fn parse_version(text: &str) -> Option<Version> {
    let mut parts = text.trim().strip_prefix('v')?.splitn(3, '.');
    let mut next = || parts.next()?.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok();
    Some((next()?, next()?, next()?))
}

/// The first file named `name` in the server's PATH.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(name)).find(|p| p.is_file())
}

/// The notebooks' folder, beside the database.
pub fn notebooks_root(database: &Path) -> PathBuf {
    let base = database.parent().map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    base.join("notebooks")
}

/// Create [`notebooks_root`] if missing, mode 0700 whatever the umask: the
/// cells' sources and outputs under it are as private as the ledger, and
/// the folders below it are reached only through it.
pub fn make_notebooks_root(database: &Path) -> Result<()> {
    let root = notebooks_root(database);
    crate::tree::writer::create_private_dirs(&root).map_err(|e| Error::io(format!("creating {}", root.display()), e))
}

/// A notebook's working directory: `notebooks/<id>` beside the database.
pub fn notebook_dir(database: &Path, id: &str) -> PathBuf {
    notebooks_root(database).join(id)
}

/// Write `bytes` to `path` unless it holds them already (an unchanged file
/// keeps its time, so the TypeScript runner does not compile it again).
fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(());
    }
    crate::private::file_options()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes))
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// Create `dir` and its missing parents, mode 0700 (see [`crate::private`]).
pub(super) fn create_private_dir(dir: &Path) -> Result<()> {
    crate::private::dir_builder()
        .recursive(true)
        .create(dir)
        .map_err(|e| Error::io(format!("creating {}", dir.display()), e))
}

/// Make a notebook's directory 0700 when an earlier version made it 0755:
/// what is below it then is private whatever its own mode.
fn make_private(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir)
            .map_err(|e| Error::io(format!("reading {}", dir.display()), e))?
            .permissions()
            .mode();
        if mode & 0o777 != crate::private::DIR {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(crate::private::DIR))
                .map_err(|e| Error::io(format!("making {} private", dir.display()), e))?;
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Make the notebook's directory hold its cells: `package.json`,
/// `tsconfig.json` (TypeScript), `src/<filename>` per code cell, and the
/// TypeScript runner. Answers the directory, absolute.
pub fn prepare(database: &Path, notebook: &Notebook) -> Result<PathBuf> {
    let dir = notebook_dir(database, &notebook.id);
    let src = dir.join("src");
    make_notebooks_root(database)?;
    create_private_dir(&src)?;
    let dir = std::fs::canonicalize(&dir).map_err(|e| Error::io(format!("resolving {}", dir.display()), e))?;
    make_private(&dir)?;
    // Node's permission flags take a comma-separated list and `*` as a
    // wildcard: a directory holding either would be allowed wrongly.
    if dir.to_string_lossy().contains([',', '*']) {
        return Err(Error::InvalidOperation {
            message: format!(
                "the notebook directory {} holds ',' or '*', which Node's permission flags would misread: move the \
                 database to a directory without them",
                dir.display()
            ),
            details: None,
        });
    }
    if let Some(p) = notebook.package_json() {
        write_if_changed(&dir.join("package.json"), p.content.as_bytes())?;
    }
    if let Some(ts) = &notebook.tsconfig {
        write_if_changed(&dir.join("tsconfig.json"), ts.as_bytes())?;
    }
    for cell in notebook.cells.iter().filter(|c| c.kind == super::CellKind::Code) {
        if let Some(name) = &cell.filename {
            write_if_changed(&dir.join("src").join(name), cell.content.as_bytes())?;
        }
    }
    let ts_dir = dir.join(TS_DIR);
    create_private_dir(&ts_dir)?;
    write_if_changed(&ts_dir.join("ts-run.mjs"), TS_RUNNER.as_bytes())?;
    Ok(dir)
}

/// Compiles the notebook's TypeScript cells whose output is older than
/// them into `.thoughtbox/build` with the `typescript` package of the
/// notebook's node_modules, then imports the cell's output. It runs inside
/// the sandbox like any cell.
const TS_RUNNER: &str = r#"import { createRequire } from 'node:module';
import { readFileSync, writeFileSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { pathToFileURL, fileURLToPath } from 'node:url';
import path from 'node:path';
const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.dirname(here);
const out = path.join(here, 'build');
mkdirSync(out, { recursive: true });
const js = (f) => f.replace(/\.(m|c)?ts$/, (_, p) => '.' + (p || '') + 'js');
const mtime = (f) => { try { return statSync(f).mtimeMs; } catch { return -1; } };
let ts;
for (const f of readdirSync(path.join(root, 'src'))) {
  if (!/\.(m|c)?ts$/.test(f)) continue;
  const from = path.join(root, 'src', f), to = path.join(out, js(f));
  if (mtime(to) >= mtime(from)) continue;
  ts ??= createRequire(path.join(root, 'package.json'))('typescript');
  const r = ts.transpileModule(readFileSync(from, 'utf8'), { fileName: f,
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 } });
  writeFileSync(to, r.outputText);
}
await import(pathToFileURL(path.join(out, js(process.argv[2]))).href);
"#;

/// A name for one run of this server, kept in the cell's row while it
/// runs: its process id, for the log, and a part of its own, so that a run
/// taken over (its server gone) never records its end over the run that
/// took its cell. Whether the run is alive is its lock's to say
/// ([`super::lock`]), not this name's.
pub fn runner_id() -> String {
    format!("{}:{}", std::process::id(), uuid::Uuid::new_v4().simple())
}

/// At most this many cells and installs run at once in one server.
const PARALLEL_RUNS: usize = 8;

fn run_slots() -> &'static tokio::sync::Semaphore {
    static SLOTS: OnceLock<tokio::sync::Semaphore> = OnceLock::new();
    SLOTS.get_or_init(|| tokio::sync::Semaphore::new(PARALLEL_RUNS))
}

/// Run code cell `cell` of the notebook whose directory `dir` is
/// ([`prepare`] wrote its files); `children`: the notebook opted in to
/// child processes.
pub async fn run_cell(node: &Node, dir: &Path, cell: &Cell, limits: Limits, children: bool) -> Result<Outcome> {
    let mut limits = limits;
    if children {
        limits.processes = tokio::task::spawn_blocking(processes_bound)
            .await
            .map_err(|e| Error::Internal(format!("counting processes: {e}")))?;
    }
    let filename = cell.filename.as_deref().unwrap_or_default();
    let mut args: Vec<String> = Vec::new();
    let sandbox = match node.permission_flag() {
        Some(flag) => {
            let d = dir.display();
            args.extend([
                flag.to_string(),
                format!("--allow-fs-read={d}/"),
                format!("--allow-fs-write={d}/"),
            ]);
            if children {
                args.push("--allow-child-process".into());
            }
            "node-permission"
        }
        None => "process",
    };
    if node.version >= (20, 11, 0) {
        args.push("--disable-warning=ExperimentalWarning".into());
        // Its warning that child processes escape the model is in the
        // documentation of the opt-in, not in every output.
        if children {
            args.push("--disable-warning=SecurityWarning".into());
        }
    }
    let language = cell.language.or_else(|| Language::of_filename(filename));
    if language == Some(Language::TypeScript) {
        match node.type_stripping() {
            Some(flag) => {
                args.extend(flag.map(String::from));
                args.push(format!("src/{filename}"));
            }
            None => {
                if !dir.join("node_modules/typescript/package.json").is_file() {
                    return Err(Error::InvalidOperation {
                        message: format!(
                            "Node {} has no TypeScript type stripping (it came in 22.6), so TypeScript cells are \
                             compiled with the notebook's own typescript package, which is not installed: call \
                             notebook install_deps once (the package.json cell lists typescript {TYPESCRIPT_VERSION}; \
                             this needs the npm registry), or run the server with Node 22.6 or later",
                            node.version_text()
                        ),
                        details: Some(json!({ "node": node.version_text(), "needs": "install_deps" })),
                    });
                }
                args.push(format!("{TS_DIR}/ts-run.mjs"));
                args.push(filename.to_string());
            }
        }
    } else {
        args.push(format!("src/{filename}"));
    }
    let mut cmd = Command::new(&node.path);
    cmd.args(&args);
    run(cmd, dir, limits, sandbox, &extra_ca_certs()).await
}

/// Node's variable for certificate authorities to trust besides its own;
/// cells get it too (their network is open, and `fetch` behind such a
/// proxy needs it).
pub(super) const NODE_EXTRA_CA_CERTS: &str = "NODE_EXTRA_CA_CERTS";

/// What of the server's environment every run keeps: the extra
/// certificate authorities, when set.
fn extra_ca_certs() -> Vec<(String, String)> {
    std::env::var(NODE_EXTRA_CA_CERTS)
        .ok()
        .map(|v| (NODE_EXTRA_CA_CERTS.to_string(), v))
        .into_iter()
        .collect()
}

/// Kills the process group it names when dropped, unless [`GroupKill::now`]
/// did already: a run abandoned (a server stopping, the call dropped) leaves
/// nothing behind.
struct GroupKill(Option<u32>);

impl GroupKill {
    /// Kill the group now, and not again when dropped (its id may be
    /// another group's by then).
    fn now(&mut self) {
        let pgid = self.0.take();
        // The group may be gone already: nothing to do then.
        #[cfg(unix)]
        if let Some(pgid) = pgid.and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
            let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
        }
        // Windows has no process groups to kill: `settle` kills the cell.
        #[cfg(not(unix))]
        let _ = pgid;
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.now();
    }
}

#[cfg(unix)]
/// Wait until the child `pid` has exited, without reaping it: while it is a
/// zombie its pid, and so its process group's id, cannot be given to
/// another process, and the group can be killed safely. (tokio's
/// `Child::wait` reaps.) Woken by SIGCHLD, and looks once before the first.
async fn exited_unreaped(pid: rustix::process::Pid) -> std::io::Result<()> {
    use rustix::process::{WaitId, WaitIdOptions, waitid};
    let mut sigchld = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::child())?;
    loop {
        match waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG,
        ) {
            Ok(Some(_)) => return Ok(()),
            Ok(None) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        if sigchld.recv().await.is_none() {
            return Err(std::io::Error::other("SIGCHLD is no longer delivered"));
        }
    }
}

/// Let the child run until it exits or `limit` passes, then `kill` its
/// group, and only then reap it: killed after the reap, a group with no
/// process left could be another's by the same id. `None`: the limit passed.
#[cfg(unix)]
async fn settle(
    child: &mut tokio::process::Child,
    limit: Duration,
    kill: impl FnOnce(),
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let pid = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32))
        .ok_or_else(|| std::io::Error::other("the cell's process was reaped before its end was seen"))?;
    let exited = tokio::time::timeout(limit, exited_unreaped(pid)).await;
    // Whatever it left running goes with it, the leader still a zombie (or
    // still running, when the limit passed).
    kill();
    // The leader too, should it have left its group: it is not reaped yet,
    // so its pid is still its own, and the reap below cannot hang on it.
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
    let status = child.wait().await?;
    match exited {
        Ok(Ok(())) => Ok(Some(status)),
        Ok(Err(e)) => Err(e),
        Err(_) => Ok(None),
    }
}

/// [`settle`] where there are no process groups (Windows): the cell is
/// killed at the limit; what it started itself may outlive it.
#[cfg(not(unix))]
async fn settle(
    child: &mut tokio::process::Child,
    limit: Duration,
    kill: impl FnOnce(),
) -> std::io::Result<Option<std::process::ExitStatus>> {
    let waited = tokio::time::timeout(limit, child.wait()).await;
    kill();
    match waited {
        Ok(status) => status.map(Some),
        Err(_) => child.kill().await.map(|()| None),
    }
}

/// The signal that ended a process, where there are signals.
fn signal_of(status: &std::process::ExitStatus) -> Option<i32> {
    #[cfg(unix)]
    return std::os::unix::process::ExitStatusExt::signal(status);
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// What a run printed: standard output and error together in the order
/// they came, up to the limit, and the end of standard error.
#[derive(Default)]
struct Capture {
    combined: Vec<u8>,
    printed: u64,
    stderr_tail: Vec<u8>,
}

async fn read_into(mut from: impl tokio::io::AsyncRead + Unpin, into: Arc<Mutex<Capture>>, limit: usize, err: bool) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        let Ok(mut c) = into.lock() else { return };
        c.printed += n as u64;
        let room = limit.saturating_sub(c.combined.len());
        c.combined.extend_from_slice(&buf[..n.min(room)]);
        if err {
            c.stderr_tail.extend_from_slice(&buf[..n]);
            let excess = c.stderr_tail.len().saturating_sub(ERROR_TAIL);
            c.stderr_tail.drain(..excess);
        }
    }
}

/// Text of `bytes`, cut back to a character boundary.
fn text_of(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

pub(super) async fn run(
    mut cmd: Command,
    dir: &Path,
    limits: Limits,
    sandbox: &'static str,
    env: &[(String, String)],
) -> Result<Outcome> {
    let _slot = run_slots()
        .acquire()
        .await
        .map_err(|e| Error::Internal(format!("run slots: {e}")))?;
    cmd.current_dir(dir)
        .env_clear()
        .env("PATH", CELL_PATH)
        .env("HOME", dir)
        .env("LANG", "C.UTF-8")
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    isolate(&mut cmd, limits.processes);
    let started_at = crate::domain::now();
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::io(format!("starting {:?}", cmd.as_std().get_program()), e))?;
    let mut group = GroupKill(child.id());
    let capture = Arc::new(Mutex::new(Capture::default()));
    let mut readers = Vec::new();
    if let Some(out) = child.stdout.take() {
        readers.push(tokio::spawn(read_into(out, capture.clone(), limits.output, false)));
    }
    if let Some(err) = child.stderr.take() {
        readers.push(tokio::spawn(read_into(err, capture.clone(), limits.output, true)));
    }
    let status = settle(&mut child, limits.time, || group.now())
        .await
        .map_err(|e| Error::io("waiting for the cell", e))?;
    let duration_ms = start.elapsed().as_millis() as u64;
    for r in readers {
        let _ = tokio::time::timeout(Duration::from_secs(1), r).await;
    }
    let (mut output, printed, tail) = match capture.lock() {
        Ok(c) => (text_of(&c.combined), c.printed, text_of(&c.stderr_tail)),
        Err(_) => (String::new(), 0, String::new()),
    };
    if printed > limits.output as u64 {
        output.push_str(&format!(
            "\n[output cut at {} bytes: the run printed {printed} bytes]",
            limits.output
        ));
    }
    let with_tail = |why: String| {
        if tail.trim().is_empty() {
            why
        } else {
            format!("{why}\n{}", tail.trim_end())
        }
    };
    let (status, error, exit_code) = match status {
        None => (
            CellStatus::Failed,
            Some(with_tail(format!(
                "stopped: the time limit of {} passed, and the run was killed with its processes",
                said_duration(limits.time)
            ))),
            None,
        ),
        Some(s) => match (s.code(), signal_of(&s)) {
            (Some(0), _) => (CellStatus::Completed, None, Some(0)),
            (Some(code), _) => (
                CellStatus::Failed,
                Some(if tail.trim().is_empty() {
                    format!("exited with code {code}")
                } else {
                    tail.trim_end().to_string()
                }),
                Some(code),
            ),
            (None, signal) => (
                CellStatus::Failed,
                Some(with_tail(format!("ended by signal {}", signal.unwrap_or_default()))),
                None,
            ),
        },
    };
    Ok(Outcome {
        status,
        output,
        error,
        exit_code,
        duration_ms,
        started_at,
        sandbox,
    })
}

/// Start a cell's process in a group of its own (killed whole when the run
/// ends), dying with the server where the system allows, without core files.
#[cfg(unix)]
fn isolate(cmd: &mut tokio::process::Command, processes: Option<u64>) {
    cmd.process_group(0);
    let parent = std::process::id();
    // SAFETY: between fork and exec this only makes raw system calls
    // (prctl, setrlimit, getppid), which allocate nothing and take no lock.
    unsafe {
        cmd.pre_exec(move || {
            // The cell dies with the server, even a server killed outright
            // (Linux and FreeBSD: macOS has no such signal, and there a
            // server killed with SIGKILL leaves its cell running).
            #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            if rustix::process::getppid().map(|p| p.as_raw_pid() as u32) != Some(parent) {
                return Err(std::io::Error::other("the server exited"));
            }
            // No core files of a crashing cell in its directory.
            let none = rustix::process::Rlimit {
                current: Some(0),
                maximum: Some(0),
            };
            let _ = rustix::process::setrlimit(rustix::process::Resource::Core, none);
            #[cfg(target_os = "linux")]
            if let Some(n) = processes {
                let bound = rustix::process::Rlimit {
                    current: Some(n),
                    maximum: Some(n),
                };
                rustix::process::setrlimit(rustix::process::Resource::Nproc, bound)?;
            }
            #[cfg(not(target_os = "linux"))]
            let _ = processes;
            Ok(())
        });
    }
}

/// How many more processes (threads, as Linux counts them) the server's
/// user may start while a cell that may start processes runs: room for
/// Node's own threads and a busy cell's, not for a fork bomb.
#[cfg(target_os = "linux")]
const PROCESS_ROOM: u64 = 512;

/// The user's processes now (threads, which `RLIMIT_NPROC` counts, of the
/// processes whose real user is the server's) plus [`PROCESS_ROOM`], or
/// the hard limit if lower. The limit counts the user's processes
/// everywhere, so it cannot be a number of the cell's own. `None` where
/// there is no `/proc` to count them with.
#[cfg(target_os = "linux")]
fn processes_bound() -> Option<u64> {
    let uid = rustix::process::getuid().as_raw();
    let mut threads = 0u64;
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        if !entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        // A process gone meanwhile has nothing to count.
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let (mut real, mut count) = (None, None);
        for line in status.lines() {
            if let Some(ids) = line.strip_prefix("Uid:") {
                real = ids.split_whitespace().next().and_then(|u| u.parse::<u32>().ok());
            } else if let Some(n) = line.strip_prefix("Threads:") {
                count = n.trim().parse::<u64>().ok();
            }
        }
        if real == Some(uid) {
            threads += count.unwrap_or(1);
        }
    }
    let bound = threads + PROCESS_ROOM;
    let hard = rustix::process::getrlimit(rustix::process::Resource::Nproc).maximum;
    Some(hard.map_or(bound, |h| h.min(bound)))
}

#[cfg(not(target_os = "linux"))]
fn processes_bound() -> Option<u64> {
    None
}

fn said_duration(d: Duration) -> String {
    if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{} ms", d.as_millis())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[tokio::test]
    async fn a_node_replaced_while_the_server_runs_is_asked_its_version_again() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let node = dir.path().join("node");
        // A fake `node` at `path` answering `version`, its file of time `modified`.
        let fake = |path: &std::path::Path, version: &str, modified: std::time::SystemTime| {
            std::fs::write(path, format!("#!/bin/sh\necho {version}\n")).unwrap();
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
            std::fs::File::options()
                .write(true)
                .open(path)
                .unwrap()
                .set_modified(modified)
                .unwrap();
        };
        let install = |version: &str, modified: std::time::SystemTime| {
            // Written beside and renamed over, as a package manager does
            // (writing into a file being run fails with ETXTBSY).
            let new = dir.path().join("node.new");
            fake(&new, version, modified);
            std::fs::rename(&new, &node).unwrap();
        };
        let then = std::time::SystemTime::now() - Duration::from_secs(3600);
        install("v20.1.0", then);
        assert_eq!(Node::at(node.clone()).await.unwrap().version, (20, 1, 0));
        assert_eq!(Node::at(node.clone()).await.unwrap().version, (20, 1, 0), "known");
        install("v22.13.0", std::time::SystemTime::now());
        let upgraded = Node::at(node.clone()).await.unwrap();
        assert_eq!(upgraded.version, (22, 13, 0));
        assert_eq!(upgraded.permission_flag(), Some("--permission"));

        // A link switched to another Node whose file has the same time and
        // size, as Nix switches a profile.
        let store = |version: &str| {
            let file = dir.path().join(format!("node-{version}"));
            fake(&file, version, then);
            file
        };
        let link = dir.path().join("profile-node");
        std::os::unix::fs::symlink(store("v20.19.0"), &link).unwrap();
        assert_eq!(Node::at(link.clone()).await.unwrap().version, (20, 19, 0));
        let switched = dir.path().join("profile-node.new");
        std::os::unix::fs::symlink(store("v21.10.0"), &switched).unwrap();
        std::fs::rename(&switched, &link).unwrap();
        assert_eq!(Node::at(link).await.unwrap().version, (21, 10, 0));
    }

    /// Whether process `pid` has ended: gone, or a zombie no one reaped
    /// (a killed grandchild is reparented, and whoever adopts it may not
    /// reap it at once). Asked until it says so, for up to ten seconds.
    #[cfg(target_os = "linux")]
    async fn ends(pid: u32) -> bool {
        for _ in 0..200 {
            let ended = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => true,
                Ok(stat) => stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|rest| rest.trim_start().starts_with('Z')),
            };
            if ended {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    }

    /// A shell in a group of its own that starts `sleep 30` in the
    /// background, says its pid, then runs `then`.
    #[cfg(unix)]
    async fn leader_with_grandchild(then: &str) -> (tokio::process::Child, u32) {
        use tokio::io::AsyncBufReadExt;
        let mut child = Command::new("/bin/sh")
            .args(["-c", &format!("sleep 30 & echo $!; {then}")])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        tokio::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .await
            .unwrap();
        (child, line.trim().parse().unwrap())
    }

    /// Whether `pid`, a child of this process, has exited and is not reaped.
    #[cfg(unix)]
    fn unreaped_exit(pid: u32) -> bool {
        use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
        let pid = Pid::from_raw(pid as i32).unwrap();
        let how = WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG;
        waitid(WaitId::Pid(pid), how).unwrap().is_some()
    }

    /// A leader that exits leaving a process in its group: the group is
    /// killed while the leader is a zombie, not yet reaped (its id cannot
    /// be another group's then), and reaped after, with its exit code.
    #[cfg(unix)]
    #[tokio::test]
    async fn the_group_is_killed_before_its_leader_is_reaped() {
        let (mut child, grandchild) = leader_with_grandchild("exit 3").await;
        let leader = child.id().unwrap();
        let mut group = GroupKill(Some(leader));
        let mut seen = None;
        let status = settle(&mut child, MAX_TIME_LIMIT, || {
            seen = Some(unreaped_exit(leader));
            group.now();
        })
        .await
        .unwrap();
        assert_eq!(
            seen,
            Some(true),
            "the group was killed after the leader was reaped, or before it exited"
        );
        assert_eq!(status.and_then(|s| s.code()), Some(3));
        assert_eq!(child.id(), None, "the leader is reaped");
        assert_eq!(group.0, None, "killed once, not again when dropped");
        #[cfg(target_os = "linux")]
        assert!(ends(grandchild).await, "the background process outlived its group");
        let _ = grandchild;
    }

    /// Past the time limit the group is killed with the leader still
    /// running, then the leader is reaped.
    #[cfg(unix)]
    #[tokio::test]
    async fn past_the_limit_the_group_is_killed_then_reaped() {
        let (mut child, grandchild) = leader_with_grandchild("sleep 30").await;
        let leader = child.id().unwrap();
        let mut group = GroupKill(Some(leader));
        let mut seen = None;
        let status = settle(&mut child, Duration::from_millis(100), || {
            seen = Some(unreaped_exit(leader));
            group.now();
        })
        .await
        .unwrap();
        assert_eq!(seen, Some(false), "the leader was still running at the limit");
        assert_eq!(status, None);
        assert_eq!(child.id(), None, "the leader is reaped");
        #[cfg(target_os = "linux")]
        assert!(ends(grandchild).await, "the background process outlived its group");
        let _ = grandchild;
    }

    /// A run whose process exits with a process of its group still running
    /// ends with nothing of the group left.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn a_run_leaves_no_process_of_its_group() {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = Command::new("/bin/sh");
        cmd.args(["-c", "sleep 30 & echo $!"]);
        let outcome = run(cmd, dir.path(), Limits::default(), "process", &[]).await.unwrap();
        assert_eq!(outcome.status, CellStatus::Completed, "{outcome:?}");
        let grandchild: u32 = outcome.output.trim().parse().unwrap();
        assert!(ends(grandchild).await, "the background process outlived the run");
    }

    #[test]
    fn versions_choose_the_flags() {
        let node = |v| Node {
            path: "/n".into(),
            version: v,
        };
        assert_eq!(parse_version("v20.20.2\n"), Some((20, 20, 2)));
        assert_eq!(parse_version("v23.0.0-pre"), Some((23, 0, 0)));
        assert_eq!(parse_version("20"), None);
        assert_eq!(node((20, 20, 2)).permission_flag(), Some("--experimental-permission"));
        assert_eq!(node((22, 13, 0)).permission_flag(), Some("--permission"));
        assert_eq!(node((18, 0, 0)).permission_flag(), None);
        assert_eq!(node((20, 20, 2)).type_stripping(), None);
        assert_eq!(
            node((22, 6, 0)).type_stripping(),
            Some(Some("--experimental-strip-types"))
        );
        assert_eq!(node((24, 0, 0)).type_stripping(), Some(None));
    }
}
