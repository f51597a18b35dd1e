//! Data safety: kill -9, restarts, several processes on one file, clean
//! shutdown leaving one self-contained file, and live backups.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use serde_json::{Value, json};

use crate::common::*;

fn wal(db: &Path) -> std::path::PathBuf {
    let mut p = db.as_os_str().to_owned();
    p.push("-wal");
    p.into()
}

/// Kill -9 right after an acknowledgement, at several points: every
/// acknowledged thought is there after a restart.
#[tokio::test]
async fn kill_nine_loses_nothing_acknowledged() {
    let (_d, db) = temp_db();
    let mut acknowledged: Vec<(String, u64, String)> = Vec::new();
    let mut session: Option<String> = None;
    for (round, burst) in [1usize, 7, 40, 3].into_iter().enumerate() {
        let s = start(&db).await;
        match &session {
            None => session = Some(s.ready("crash test").await),
            Some(id) => {
                s.ok("load_context", json!({ "sessionId": id })).await;
                s.ok("cipher", Value::Null).await;
            }
        }
        for i in 0..burst {
            let text = format!("round {round} thought {i}");
            let r = s.thought(t(&text)).await;
            acknowledged.push((
                r["sessionId"].as_str().unwrap().to_string(),
                r["thoughtNumber"].as_u64().unwrap(),
                text,
            ));
        }
        kill(s.pid, "KILL");
        wait_exit(s.pid).await;
        drop(s);
    }
    let s = start(&db).await;
    let sid = session.unwrap();
    s.ok("load_context", json!({ "sessionId": sid })).await;
    s.ok("cipher", Value::Null).await;
    let all = s.ok("read_thoughts", json!({ "range": [1, 1000], "full": true })).await;
    let stored: Vec<(u64, String)> = all["thoughts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["thoughtNumber"].as_u64().unwrap(),
                t["thought"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for (session_id, n, text) in &acknowledged {
        assert_eq!(session_id, &sid);
        assert!(stored.contains(&(*n, text.clone())), "acknowledged thought {n} lost");
    }
    assert_eq!(stored.len(), acknowledged.len());
    // Search sees them too, though the server never indexed before dying.
    let found = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "round thought", "limit": 5 }),
        )
        .await;
    assert_eq!(found["sessions"][0]["id"], sid.as_str());
    s.stop().await;
}

#[tokio::test]
async fn graph_and_counts_survive_a_restart() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("restart").await;
    for n in [3, 1, 2] {
        s.thought(json!({ "thought": format!("t{n}"), "thoughtNumber": n, "nextThoughtNeeded": true }))
            .await;
    }
    s.thought(json!({ "thought": "b", "branchId": "b", "branchFromThought": 2, "nextThoughtNeeded": true }))
        .await;
    s.thought(json!({ "thought": "b2", "branchId": "b", "nextThoughtNeeded": true }))
        .await;
    s.thought(json!({ "thought": "rb", "branchId": "b", "revisesThought": 3, "nextThoughtNeeded": true }))
        .await;
    s.thought(json!({ "thought": "r1", "revisesThought": 1, "nextThoughtNeeded": true }))
        .await;
    let export = |v: Value| {
        let mut c = v["content"].clone();
        c.as_object_mut().unwrap().remove("exportedAt");
        c
    };
    let before = export(
        s.ok("session", json!({ "subOperation": "export", "sessionId": sid }))
            .await,
    );
    let structure_before = s.ok("get_structure", Value::Null).await;
    s.stop().await;
    assert!(!wal(&db).exists() || std::fs::metadata(wal(&db)).unwrap().len() == 0);

    let s = start(&db).await;
    s.ok("load_context", json!({ "sessionId": sid })).await;
    s.ok("cipher", Value::Null).await;
    let mut after = export(
        s.ok("session", json!({ "subOperation": "export", "sessionId": sid }))
            .await,
    );
    // load_context bumps lastAccessedAt; everything else is identical.
    after["session"]["lastAccessedAt"] = before["session"]["lastAccessedAt"].clone();
    assert_eq!(before, after);
    assert_eq!(structure_before, s.ok("get_structure", Value::Null).await);
    let nodes = before["nodes"].as_array().unwrap();
    let n2 = nodes.iter().find(|n| n["id"] == format!("{sid}:2")).unwrap();
    assert_eq!(n2["next"], json!([format!("{sid}:b:3"), format!("{sid}:4")]));
    s.stop().await;
}

/// Four servers on one file append to their own sessions and to a shared one
/// at once: no "database is locked", no lost or duplicated numbers.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn four_processes_share_one_database() {
    let (_d, db) = temp_db();
    let setup = start(&db).await;
    let shared = setup.ready("shared").await;
    setup.stop().await;

    let per_process = 30;
    let mut tasks = Vec::new();
    for p in 0..4 {
        let db = db.clone();
        let shared = shared.clone();
        tasks.push(tokio::spawn(async move {
            let s = start(&db).await;
            let own = s.ready(&format!("own {p}")).await;
            for i in 0..per_process {
                // Alternate between the shared session and this process's own.
                let target = if i % 2 == 0 { &shared } else { &own };
                s.ok("load_context", json!({ "sessionId": target })).await;
                let r = s.thought(t(&format!("p{p} i{i}"))).await;
                assert_eq!(r["sessionId"], target.as_str());
            }
            s.stop().await;
            own
        }));
    }
    let mut owns = Vec::new();
    for task in tasks {
        owns.push(task.await.expect("worker"));
    }
    let s = start(&db).await;
    s.ok("load_context", json!({ "sessionId": shared })).await;
    s.ok("cipher", Value::Null).await;
    let all = s
        .ok("read_thoughts", json!({ "range": [1, 10000], "full": true }))
        .await;
    let numbers: Vec<u64> = all["thoughts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["thoughtNumber"].as_u64().unwrap())
        .collect();
    let expected: Vec<u64> = (1..=4 * per_process as u64 / 2).collect();
    assert_eq!(numbers, expected);
    for own in owns {
        let r = s
            .ok(
                "read_thoughts",
                json!({ "sessionId": own, "range": [1, 1000], "full": true }),
            )
            .await;
        assert_eq!(r["count"], per_process / 2);
        let got = s
            .ok("session", json!({ "subOperation": "get", "sessionId": own }))
            .await;
        assert_eq!(got["session"]["thoughtCount"], per_process / 2);
    }
    s.stop().await;
}

/// A shutdown held up (here the writer waits for another program's lock
/// with a thought) ends at a second signal, as a client that gave up
/// waiting sends one (signals must act once the shutdown has begun). Nothing
/// acknowledged is lost: the unanswered thought was never acknowledged.
#[cfg(unix)] // Signals are Unix's: Windows stops a server by closing stdin or terminating it.
#[tokio::test]
async fn a_second_signal_ends_a_shutdown_held_up() {
    let (_dir, db) = temp_db();
    let s = start(&db).await;
    s.ready("held up").await;
    s.thought(t("acknowledged")).await;
    let lock = rusqlite::Connection::open(&db).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    let pid = s.pid;
    let pending = tokio::spawn(async move {
        let _ = s.call("thought", t("waits for the lock")).await;
        s
    });
    writer_waits_for_lock(pid).await;
    kill(pid, "TERM");
    // Past the window in which a second signal is taken for an echo of
    // the first (300 ms), with room for a busy machine.
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let second = std::time::Instant::now();
    kill(pid, "TERM");
    wait_exit(pid).await;
    let took = second.elapsed();
    assert!(
        took < std::time::Duration::from_secs(3),
        "exit took {took:?} after the second signal"
    );
    lock.execute_batch("ROLLBACK").unwrap();
    drop(pending);
    let thoughts: Vec<String> = lock
        .prepare("SELECT thought FROM thoughts")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(thoughts, ["acknowledged"]);
}

/// The same signal twice within a moment (a closing terminal's SIGHUP and
/// the shell's, a forwarded Ctrl-C) is one request to stop: the exit is
/// clean (the echo must not skip the final checkpoint).
#[cfg(unix)] // Signals are Unix's: Windows stops a server by closing stdin or terminating it.
#[tokio::test]
async fn a_signal_echoed_at_once_is_one_clean_stop() {
    for how in ["HUP", "TERM"] {
        if how == "HUP" && sighup_ignored() {
            eprintln!("SIGHUP is ignored here (nohup): its case is skipped");
            continue;
        }
        let (_dir, db) = temp_db();
        let s = start(&db).await;
        s.ready("echo").await;
        for i in 0..5 {
            s.thought(t(&format!("thought {i}"))).await;
        }
        std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("kill -{how} {pid}; kill -{how} {pid}", pid = s.pid))
            .status()
            .unwrap();
        wait_exit(s.pid).await;
        assert!(!wal(&db).exists(), "{how}: the -wal file is still there");
    }
}

/// On a clean shutdown (stdin EOF or SIGTERM) the WAL is checkpointed and
/// removed: copying the database file alone gives the whole ledger.
#[tokio::test]
async fn clean_shutdown_leaves_one_complete_file() {
    // Signals are Unix's: on Windows a client stops the server by closing stdin.
    let ways: &[&str] = if cfg!(unix) {
        &["eof", "TERM", "INT", "HUP"]
    } else {
        &["eof"]
    };
    for &how in ways {
        if how == "HUP" && sighup_ignored() {
            eprintln!("SIGHUP is ignored here (nohup): its case is skipped");
            continue;
        }
        let (dir, db) = temp_db();
        let log = dir.path().join("server.log");
        let s = start_logging(&db, &log).await;
        let sid = s.ready("copy me").await;
        for i in 0..20 {
            s.thought(t(&format!("thought {i}"))).await;
        }
        if how == "eof" {
            s.stop().await;
        } else {
            kill(s.pid, how);
            wait_exit(s.pid).await;
        }
        assert!(!wal(&db).exists(), "{how}: the -wal file is still there");
        // Nothing was left running to wait for (the shutdown waits for
        // every user of the store, and warns when one does not let go).
        let said = std::fs::read_to_string(&log).unwrap();
        assert!(!said.contains(" WARN "), "{how}: {said}");
        let copy = dir.path().join("copy.db");
        std::fs::copy(&db, &copy).unwrap();
        let s = start(&copy).await;
        s.ok("load_context", json!({ "sessionId": sid })).await;
        s.ok("cipher", Value::Null).await;
        assert_eq!(
            s.ok("read_thoughts", json!({ "range": [1, 100] })).await["count"],
            20,
            "{how}"
        );
        s.stop().await;
    }
}

/// A read transaction left open by another program (a `sqlite3` shell
/// inside `BEGIN`, a database browser) keeps the server from emptying the
/// WAL, but stalls none of its writes; once the reader is gone, the idle
/// server empties the WAL and a copy of the file holds every thought.
#[tokio::test]
async fn a_reader_left_open_elsewhere_stalls_no_write() {
    let (dir, db) = temp_db();
    let log = dir.path().join("server.log");
    let s = start_logging(&db, &log).await;
    s.ready("beside a reader").await;
    s.thought(t("before the reader")).await;
    let reader = rusqlite::Connection::open(&db).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let seen: i64 = reader
        .query_row("SELECT count(*) FROM thoughts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(seen, 1);
    s.thought(t("while it reads")).await;
    // The idle checkpoint holds the write lock while it waits for the
    // reader (in SQLite's busy handler, the only sleep of an idle server):
    // the next thought is sent meanwhile.
    until_thread_sleeps_in(
        s.pid,
        None,
        "nanosleep",
        "the idle checkpoint never waited for the reader",
    )
    .await;
    let started = std::time::Instant::now();
    s.thought(t("after the idle checkpoint")).await;
    // Not the 10 s busy timeout the checkpoint used to hold the lock for.
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    // It gave up while the reader stayed, and said so.
    logged(&log, "could not empty the WAL").await;
    reader.execute_batch("COMMIT").unwrap();
    drop(reader);
    let deadline = std::time::Instant::now() + Duration::from_secs(40);
    while std::fs::metadata(wal(&db)).is_ok_and(|m| m.len() > 0) {
        assert!(std::time::Instant::now() < deadline, "the WAL was never emptied");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let copy = dir.path().join("copy.db");
    std::fs::copy(&db, &copy).unwrap();
    let copied = rusqlite::Connection::open(&copy).unwrap();
    let count: i64 = copied
        .query_row("SELECT count(*) FROM thoughts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 3);
    s.stop().await;
}

/// A session another process deletes under an agent: the agent's next
/// thought is SESSION_NOT_FOUND saying the session is no longer active and
/// what the next thought does; that next thought starts a new session.
#[tokio::test]
async fn a_session_deleted_by_another_process() {
    let (_dir, db) = temp_db();
    let (a, b) = (start(&db).await, start(&db).await);
    let sid = a.ready("doomed").await;
    a.thought(t("first")).await;
    b.ready("another").await;
    b.ok("session", json!({ "subOperation": "delete", "sessionId": sid }))
        .await;
    let e = a.err("thought", t("second"), "SESSION_NOT_FOUND").await;
    assert_eq!(e["details"]["sessionId"], sid.as_str());
    assert_eq!(e["details"]["activeSessionCleared"], true);
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("next thought starts a new session"), "{message}");
    let fresh = a.thought(t("third")).await;
    assert_eq!(fresh["sessionCreated"], true, "{fresh}");
    assert_ne!(fresh["sessionId"], sid.as_str());
    assert_eq!(fresh["thoughtNumber"], 1);
    // It says why it started a new session.
    assert_eq!(fresh["previousSessionId"], sid.as_str(), "{fresh}");
    assert!(fresh["note"].as_str().unwrap().contains("was deleted"), "{fresh}");
    // The thought after it is an ordinary one.
    let next = a.thought(t("fourth")).await;
    assert!(next.get("previousSessionId").is_none(), "{next}");
    // get_state says so too, when the agent asks first.
    let fresh_id = fresh["sessionId"].as_str().unwrap().to_string();
    b.ok("session", json!({ "subOperation": "delete", "sessionId": fresh_id }))
        .await;
    let state = a.ok("get_state", Value::Null).await;
    assert_eq!(state["activeSession"], Value::Null);
    assert_eq!(state["activeSessionCleared"]["sessionId"], fresh_id.as_str(), "{state}");
    assert!(state["nextStep"].as_str().unwrap().contains("deleted"), "{state}");
    let fresher = a.thought(t("fifth")).await;
    assert_eq!(fresher["previousSessionId"], fresh_id.as_str(), "{fresher}");
    a.stop().await;
    b.stop().await;
}

/// A client that closes stdin before initializing (or sends only junk) is
/// not an error: the server exits 0 and leaves no -wal file.
#[tokio::test]
async fn stdin_closed_before_initialize_is_a_clean_exit() {
    for input in [&b""[..], b"not json\n"] {
        let (_d, db) = temp_db();
        let mut cmd = command(&db);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).await.unwrap();
        drop(stdin);
        let out = tokio::time::timeout(Duration::from_secs(20), child.wait_with_output())
            .await
            .expect("the server exits")
            .unwrap();
        assert!(out.status.success(), "{:?}", out.status);
        assert!(out.stdout.is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
        assert!(!wal(&db).exists());
    }
}

/// `thoughtbox backup` while another process writes gives a complete,
/// consistent copy.
#[tokio::test]
async fn backup_while_writing() {
    let (dir, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("backed up").await;
    for i in 0..10 {
        s.thought(t(&format!("before {i}"))).await;
    }
    let writer = tokio::spawn(async move {
        for i in 0..100 {
            s.thought(t(&format!("during {i}"))).await;
        }
        s
    });
    let dest = dir.path().join("backup.db");
    let out = tokio::process::Command::new(bin())
        .arg("backup")
        .arg(&dest)
        .arg("--db")
        .arg(&db)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Only the file written (README: it prints the file).
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), dest.to_str().unwrap());
    let s = writer.await.unwrap();
    s.stop().await;
    let b = start(&dest).await;
    b.ok("load_context", json!({ "sessionId": sid })).await;
    b.ok("cipher", Value::Null).await;
    let r = b.ok("read_thoughts", json!({ "range": [1, 1000], "full": true })).await;
    let n = r["count"].as_u64().unwrap();
    assert!((10..=110).contains(&n));
    // Consistent: the session's counter matches its rows.
    let got = b
        .ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
    assert_eq!(got["session"]["thoughtCount"], n);
    b.stop().await;
    // Backing up into a missing directory fails clearly.
    let out = std::process::Command::new(bin())
        .args(["backup", "/nonexistent-dir/x.db", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("thoughtbox:"));
}

/// `thoughtbox backup` never replaces a ledger in use: not the one it
/// copies, not another one a server has open. Thoughts acknowledged after
/// the refused backup are all there after a restart.
#[tokio::test]
async fn backup_never_replaces_a_live_ledger() {
    let (dir, db) = temp_db();
    let other = dir.path().join("other.db");
    let a = start(&db).await;
    a.ready("source").await;
    let b = start(&other).await;
    let b_session = b.ready("other ledger").await;
    let backup = |dest: &std::path::Path| {
        std::process::Command::new(bin())
            .arg("backup")
            .arg(dest)
            .arg("--db")
            .arg(&db)
            .output()
            .unwrap()
    };
    for (dest, why) in [(&db, "the database being backed up"), (&other, "in use")] {
        let out = backup(dest);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{err}");
    }
    for i in 0..5 {
        a.thought(t(&format!("after the refused backup {i}"))).await;
        b.thought(t(&format!("still mine {i}"))).await;
    }
    a.stop().await;
    b.stop().await;
    let b = start(&other).await;
    b.ok("load_context", json!({ "sessionId": b_session })).await;
    b.ok("cipher", Value::Null).await;
    let r = b.ok("read_thoughts", json!({ "range": [1, 100] })).await;
    assert_eq!(r["count"], 5, "{r}");
    b.stop().await;
}

#[tokio::test]
async fn newer_schema_is_refused() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.stop().await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute(
        "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (99, 'future', 'x', '0')",
        [],
    )
    .unwrap();
    drop(conn);
    let out = std::process::Command::new(bin())
        .arg("--db")
        .arg(&db)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("newer thoughtbox"), "{err}");
    assert!(out.stdout.is_empty());
}

/// A search while another program holds the write lock (a `sqlite3` shell
/// inside `BEGIN IMMEDIATE`) finds every acknowledged thought; those the
/// server could not index yet are read directly (the store's unit test
/// `search_reads_pending_thoughts_when_it_cannot_index_them` pins that case).
#[tokio::test]
async fn a_search_finds_pending_thoughts_behind_a_held_write_lock() {
    let (_dir, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("locked out").await;
    s.thought(t("the quokka was indexed")).await;
    s.ok("session", json!({ "subOperation": "search", "query": "quokka" }))
        .await;
    let shell = rusqlite::Connection::open(&db).unwrap();
    shell.execute_batch("BEGIN IMMEDIATE").unwrap();
    // Appends wait for the lock too; this one was acknowledged just before.
    shell.execute_batch("ROLLBACK").unwrap();
    s.thought(t("a second quokka, not indexed yet")).await;
    shell.execute_batch("BEGIN IMMEDIATE").unwrap();
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "quokka" }))
        .await;
    assert_eq!(found["sessions"][0]["id"], sid.as_str());
    assert_eq!(found["sessions"][0]["matches"].as_array().unwrap().len(), 2, "{found}");
    shell.execute_batch("ROLLBACK").unwrap();
    s.stop().await;
}

/// The database file, or its -shm, deleted, moved or replaced under a
/// running server: its writes would go to a file nobody reads again, or
/// corrupt the ledger once another process opens the path. The next write
/// is refused with STORAGE_ERROR naming the file, and the server keeps
/// answering; a new server on the path works. Unix only: Windows does not
/// let an open file be deleted or replaced.
#[cfg(unix)]
#[tokio::test]
async fn a_database_file_removed_under_the_server_refuses_writes() {
    let side = |db: &Path, suffix: &str| {
        let mut p = db.as_os_str().to_owned();
        p.push(suffix);
        std::path::PathBuf::from(p)
    };
    let shm = |db: &Path| side(db, "-shm");
    for change in [
        "delete",
        "replace",
        "delete -shm",
        "delete -wal",
        "delete -shm behind a symlink",
    ] {
        let (dir, real) = temp_db();
        // SQLite keeps the -wal and -shm beside the file a symlink names.
        let db = if change.ends_with("symlink") {
            let link = dir.path().join("link.db");
            std::os::unix::fs::symlink(&real, &link).unwrap();
            link
        } else {
            real.clone()
        };
        let s = start(&db).await;
        s.ready(change).await;
        s.thought(t("before")).await;
        let (file, how) = match change {
            "delete" => {
                std::fs::remove_file(&db).unwrap();
                (db.clone(), "deleted or moved away")
            }
            "replace" => {
                let aside = dir.path().join("aside.db");
                std::fs::rename(&db, &aside).unwrap();
                std::fs::copy(&aside, &db).unwrap();
                (db.clone(), "replaced by another file")
            }
            "delete -wal" => {
                std::fs::remove_file(side(&db, "-wal")).unwrap();
                (side(&db, "-wal"), "deleted or moved away")
            }
            _ => {
                std::fs::remove_file(shm(&real)).unwrap();
                (shm(&real), "deleted or moved away")
            }
        };
        let e = s.err("thought", t("after"), "STORAGE_ERROR").await;
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains(&file.display().to_string()) && message.contains(how),
            "{change}: {message}"
        );
        assert!(message.contains("nothing was written"), "{message}");
        // Still serving, and searching what it can read; writes stay refused.
        s.ok("get_state", Value::Null).await;
        s.ok("session", json!({ "subOperation": "search", "query": "before" }))
            .await;
        s.err("thought", t("again"), "STORAGE_ERROR").await;
        s.stop().await;
        if change == "delete" {
            assert!(!db.exists());
            continue;
        }
        // A new server on the path works, and never saw a refused thought.
        // (A deleted -wal took with it what was not yet in the database
        // file: the deletion loses that, not the server.)
        let s = start(&db).await;
        s.ok("start_new", json!({ "sessionTitle": "next" })).await;
        let listed = s.ok("list_sessions", Value::Null).await;
        let kept = change != "delete -wal";
        assert!(!kept || listed.to_string().contains(change), "{listed}");
        s.stop().await;
        let conn = rusqlite::Connection::open(&db).unwrap();
        let texts: Vec<String> = conn
            .prepare("SELECT thought FROM thoughts")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(texts.iter().all(|t| t == "before"), "{change}: {texts:?}");
        assert!(!kept || texts.len() == 1, "{change}: {texts:?}");
        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok");
    }
}

/// A session of 60,000 thoughts, long enough for its export to run for
/// seconds; made in one statement, as a shell would, since that is fast.
fn long_session(db: &Path) -> String {
    session_of(db, 60_000)
}

/// A session of `n` thoughts (see [`long_session`]).
fn session_of(db: &Path, n: u32) -> String {
    session_padded(db, n, 0)
}

/// A session of `n` thoughts, each with `pad` more characters of text.
fn session_padded(db: &Path, n: u32, pad: u32) -> String {
    use thoughtbox::domain::NewSession;
    use thoughtbox::store::{OpenOptionsStore, Store, Target};
    let store = Store::open(db, OpenOptionsStore::default()).unwrap();
    let session = store.create_session(NewSession::titled("big")).unwrap();
    let input = input("thought 1 of a long session");
    store
        .append_thought(Target::Session(session.id.clone()), input)
        .unwrap();
    drop(store);
    // The rest in one statement, as a shell would: fast to make.
    let conn = rusqlite::Connection::open(db).unwrap();
    conn.execute(
        "WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < ?2)
             INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought,
                                   next_thought_needed, prev_node, created_at)
             SELECT ?1, ?1 || ':' || i, i, i, 'thought ' || i || ' of a long session' || printf('%.*c', ?3, 'x'), 1,
                    ?1 || ':' || (i - 1), '2026-01-01T00:00:00.000Z' FROM n",
        rusqlite::params![session.id, n, pad],
    )
    .unwrap();
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    session.id
}

/// A clean shutdown while the server still runs a long read of its own (an
/// export of a large session into a directory) stops that read, so the
/// final checkpoint empties the WAL: a copy of the file alone holds the
/// thoughts acknowledged meanwhile, and the exit is prompt.
/// Ignored on Windows, where it has only run under Wine: there an export of
/// 60,000 files takes minutes, and outlasts the test client's wait for the
/// server to exit after stdin closes (it then terminates it, which leaves
/// the WAL: nothing is lost). `cargo test -- --ignored` runs it.
#[cfg_attr(windows, ignore = "an export of 60,000 files takes minutes under Wine")]
#[tokio::test]
async fn a_shutdown_during_a_long_export_still_leaves_one_complete_file() {
    use rmcp::model::CallToolRequestParams;
    let ways: &[&str] = if cfg!(unix) { &["TERM", "eof"] } else { &["eof"] };
    for &how in ways {
        let (dir, db) = temp_db();
        let big = long_session(&db);
        let s = start(&db).await;
        s.ready("meanwhile").await;
        let peer = s.client.peer().clone();
        let dest = dir.path().join("tree");
        let export = tokio::spawn(async move {
            let args = json!({ "operation": "session", "args": { "subOperation": "export", "sessionId": big,
                                                                "destination": dest.to_str().unwrap() } });
            let serde_json::Value::Object(arguments) = args else {
                unreachable!()
            };
            peer.call_tool(CallToolRequestParams::new("thoughtbox_gateway").with_arguments(arguments))
                .await
        });
        // Under way (its first files are there) before the thoughts.
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while walk(&dir.path().join("tree")).is_empty() {
            assert!(std::time::Instant::now() < deadline, "{how}: the export never started");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for i in 0..3 {
            s.thought(t(&format!("acknowledged {i}"))).await;
        }
        // Its tree's config.json is written last.
        assert!(
            !dir.path().join("tree").join("config.json").exists(),
            "{how}: the export ended before the shutdown began"
        );
        let started = std::time::Instant::now();
        if how == "eof" {
            s.stop().await;
        } else {
            kill(s.pid, how);
            wait_exit(s.pid).await;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{how}: {:?}",
            started.elapsed()
        );
        export.abort();
        assert!(!wal(&db).exists(), "{how}: the -wal file is still there");
        let copy = dir.path().join("copy.db");
        std::fs::copy(&db, &copy).unwrap();
        let count: i64 = rusqlite::Connection::open(&copy)
            .unwrap()
            .query_row(
                "SELECT count(*) FROM thoughts WHERE thought LIKE 'acknowledged %'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(count, 3, "{how}");
    }
}

/// Send `operation` with `args`, and cancel it 300 ms later, as a client
/// whose user stopped the call would.
async fn call_then_cancel(s: &Server, operation: &str, args: Value) {
    let handle = cancellable_call(s, operation, args).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    handle
        .cancel(Some("the user stopped it".into()))
        .await
        .expect("cancel sent");
}

/// A client that cancels a long read (`notifications/cancelled`, as clients
/// send when a call times out or the user stops it) stops it, and the
/// server serves on.
#[tokio::test]
async fn a_cancelled_long_read_stops() {
    let (dir, db) = temp_db();
    let big = session_of(&db, 200_000);
    let log = dir.path().join("server.log");
    let s = start_logging(&db, &log).await;
    s.ready("meanwhile").await;
    call_then_cancel(
        &s,
        "session",
        json!({ "subOperation": "export", "sessionId": big, "format": "markdown" }),
    )
    .await;
    // Logged once the read has stopped.
    logged(&log, "gateway call cancelled by the client").await;
    let got = s.ok("read_thoughts", json!({ "sessionId": big, "last": 1 })).await;
    assert!(got.to_string().contains("thought 200000 of a long session"), "{got}");
    s.thought(t("after the cancel")).await;
    s.stop().await;
}

/// An export into a directory writes files, so a cancel does not stop it
/// half-way (which would leave an existing session folder half-updated):
/// like a write, it is finished.
#[cfg_attr(windows, ignore = "an export of 60,000 files takes minutes under Wine")]
#[tokio::test]
async fn a_cancelled_export_into_a_directory_is_finished() {
    let (dir, db) = temp_db();
    let big = long_session(&db);
    let log = dir.path().join("server.log");
    let s = start_logging(&db, &log).await;
    s.ready("meanwhile").await;
    let dest = dir.path().join("tree");
    let handle = cancellable_call(
        &s,
        "session",
        json!({ "subOperation": "export", "sessionId": big, "destination": dest.to_str().unwrap() }),
    )
    .await;
    // Cancelled once under way (its first files are there), before its
    // end (its config.json is written last).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while walk(&dest).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the export never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!dest.join("config.json").exists(), "the export ended before the cancel");
    handle
        .cancel(Some("the user stopped it".into()))
        .await
        .expect("cancel sent");
    // The tree is finished.
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !dest.join("config.json").exists() {
        assert!(std::time::Instant::now() < deadline, "the export did not finish");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let files = walk(&dest);
    assert!(
        files
            .iter()
            .any(|p| p.ends_with("manifest.json") && p.to_string_lossy().contains(big.as_str())),
        "{} files",
        files.len()
    );
    assert!(!files.iter().any(|p| p.to_string_lossy().ends_with(".tmp")));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!text.contains("cancelled by the client"), "{text}");
    s.thought(t("after the cancel")).await;
    s.stop().await;
}

/// Every file and folder under `dir` (none if it does not exist).
fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p.clone());
            }
            found.push(p);
        }
    }
    found
}

/// While another program holds a read transaction (a database browser left
/// open), the idle checkpoint cannot empty the WAL. The log says so once,
/// not once per burst of writes (~1,200 lines an hour), and says when the WAL
/// is empty again.
#[tokio::test]
async fn a_reader_left_open_is_logged_once_and_its_end_too() {
    let (dir, db) = temp_db();
    let log = dir.path().join("server.log");
    let s = start_logging(&db, &log).await;
    s.ready("beside a browser").await;
    s.thought(t("before")).await;
    let reader = rusqlite::Connection::open(&db).unwrap();
    reader.execute_batch("BEGIN; SELECT count(*) FROM thoughts;").unwrap();
    let told = "could not empty the WAL";
    s.thought(t("burst 0")).await;
    logged(&log, told).await;
    for i in 1..3 {
        s.thought(t(&format!("burst {i}"))).await;
        idle_checkpoint_tried(s.pid).await;
    }
    // Past 64 MiB the log warns, once per doubling (one info line is easily
    // missed while the WAL grows to 85 MB).
    let big = "x".repeat(900_000);
    for _ in 0..80 {
        s.thought(t(&big)).await;
    }
    let grown = "the WAL has grown to";
    logged(&log, grown).await;
    reader.execute_batch("COMMIT").unwrap();
    logged(&log, "the WAL is empty again").await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches(told).count(), 1, "{text}");
    assert_eq!(text.matches(grown).count(), 1, "{text}");
    assert!(text.lines().any(|l| l.contains(grown) && l.contains("WARN")), "{text}");
    s.stop().await;
}

/// Wait until the idle checkpoint has tried to empty the WAL beside a
/// reader: seen waiting for it (in SQLite's busy handler, the only sleep of
/// an idle server), then done. Where that is not shown, until past its
/// first try (1 s after the last write).
async fn idle_checkpoint_tried(pid: u32) {
    if thread_sleeps_in(pid, None, "nanosleep").is_none() {
        tokio::time::sleep(Duration::from_millis(1600)).await;
        return;
    }
    until_thread_sleeps_in(
        pid,
        None,
        "nanosleep",
        "the idle checkpoint never waited for the reader",
    )
    .await;
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while thread_sleeps_in(pid, None, "nanosleep") == Some(true) {
        assert!(
            std::time::Instant::now() < deadline,
            "the idle checkpoint kept waiting for the reader"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Where checkpoints are left to Litestream and it does not copy the WAL
/// (not running, or its disk full), the log warns once what it has not
/// copied passes 64 MiB, and says when it has been copied again.
#[tokio::test]
async fn a_wal_litestream_does_not_copy_is_logged_and_its_copy_too() {
    let (dir, db) = temp_db();
    let log = dir.path().join("server.log");
    let s = start_logging_with(&db, &log, &[("THOUGHTBOX_CHECKPOINTS", "litestream")]).await;
    s.ready("left to Litestream").await;
    let big = "x".repeat(900_000);
    for _ in 0..80 {
        s.thought(t(&big)).await;
    }
    let behind = "of the WAL are not yet copied into the database";
    logged(&log, behind).await;
    // What Litestream does once it has replicated the frames.
    let copier = rusqlite::Connection::open(&db).unwrap();
    copier.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
    s.thought(t("after the copy")).await;
    logged(&log, "Litestream has copied the WAL again").await;
    let text = std::fs::read_to_string(&log).unwrap();
    assert_eq!(text.matches(behind).count(), 1, "{text}");
    s.stop().await;
}

/// A full disk: writes are refused saying so and change nothing; a client
/// that connects meanwhile can still open a session and read and search it
/// (opening it could not be recorded, and left every read behind a stage it
/// could not reach); once space is freed the same servers write again, and
/// every acknowledged thought is there once.
#[tokio::test]
async fn a_full_disk_refuses_writes_keeps_reads_and_recovers() {
    let Some(disk) = SmallDisk::mount("4m") else {
        eprintln!("skipped: mounting a tmpfs is not allowed here (needs root)");
        return;
    };
    let db = disk.path.join("ledger.db");
    let s = start(&db).await;
    let sid = s.ready("full disk").await;
    for i in 1..=5 {
        s.thought(t(&format!("giraffe {i}"))).await;
    }
    // Settled before the disk fills: indexed, and the WAL emptied once idle.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(wal(&db)).is_ok_and(|m| m.len() > 0) {
        assert!(
            std::time::Instant::now() < deadline,
            "the idle server never emptied the WAL"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let filler = disk.fill();
    let mut acknowledged = 5;
    let mut refused = None;
    for i in 0..200 {
        let text = format!("slack{i} {}", "z".repeat(3000));
        match s
            .call("thought", json!({ "thought": text, "nextThoughtNeeded": true }))
            .await
        {
            Ok(_) => acknowledged += 1,
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let e = refused.expect("the disk never filled");
    assert_eq!(e["code"], "STORAGE_ERROR", "{e}");
    assert!(e["details"]["outcomeUnknown"].is_null(), "{e}");
    assert!(e["message"].as_str().unwrap().contains("full"), "{e}");
    // A client that connects now.
    let late = start(&db).await;
    let opened = late.ok("load_context", json!({ "sessionId": sid })).await;
    assert!(
        opened["warning"].as_str().unwrap().contains("could not record"),
        "{opened}"
    );
    late.ok("cipher", json!({})).await;
    let read = late.ok("read_thoughts", json!({ "last": 1 })).await;
    assert_eq!(read["thoughts"][0]["thoughtNumber"], acknowledged, "{read}");
    let found = late
        .ok("session", json!({ "subOperation": "search", "query": "giraffe" }))
        .await;
    assert_eq!(found["count"], 1, "{found}");
    // Space again: both servers write on, numbering without a gap.
    std::fs::remove_file(filler).unwrap();
    let r = late.thought(t("after")).await;
    assert_eq!(r["thoughtNumber"], acknowledged + 1);
    let r = s.thought(t("after, first server")).await;
    assert_eq!(r["thoughtNumber"], acknowledged + 2);
    late.stop().await;
    s.stop().await;
    let conn = rusqlite::Connection::open(&db).unwrap();
    let (count, distinct): (i64, i64) = conn
        .query_row(
            "SELECT count(*), count(DISTINCT thought_number) FROM thoughts WHERE session_id = ?1",
            [&sid],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((count, distinct), (acknowledged + 2, acknowledged + 2));
    drop(conn);
    // Stopped cleanly (no -wal, no -shm) and the disk full again: the
    // ledger cannot be opened, and the message says the file may be fine
    // rather than that it is no SQLite database.
    let filler = disk.fill();
    let err = crate::cli::fails(&db, &["stats"]);
    assert!(
        err.contains("could not be opened") && err.contains("may well be fine"),
        "{err}"
    );
    std::fs::remove_file(filler).unwrap();
    assert!(crate::cli::ok(&db, &["stats"]).contains("thoughts"));
}

/// The anonymous memory a process holds, in KiB (Linux).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn anonymous_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("RssAnon:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// What heavy reads freed goes back to the system once they stop: an idle
/// server is not left holding the peak of the largest analysis or read it
/// ever made (267 MiB, idle, after analyses of a session of 39,000 thoughts
/// driven by `benches/soak`; 20 MiB once trimmed).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[tokio::test]
async fn memory_freed_by_heavy_reads_goes_back_to_the_system() {
    let (_d, db) = temp_db();
    let sid = session_padded(&db, 30_000, 600);
    let s = start(&db).await;
    s.ok("load_context", json!({ "sessionId": sid, "reopen": false })).await;
    s.ok("cipher", json!({ "brief": true })).await;
    let idle = anonymous_kib(s.pid);
    for _ in 0..3 {
        let d = s
            .ok("deep_analysis", json!({ "sessionId": sid, "analysisType": "full" }))
            .await;
        assert_eq!(d["sessionId"], sid.as_str(), "{d}");
        let r = s.ok("read_thoughts", json!({ "range": [1, 5000], "full": true })).await;
        assert_eq!(r["thoughts"].as_array().map(Vec::len), Some(5000));
    }
    // Given back a moment after the last one (at most 20 s here, for a
    // slow machine): at least half of what the reads added. What stays is
    // each connection's page cache (2 MiB each, SQLite's default, filled
    // by the reads), the allocator's fragments and the like.
    let peak = anonymous_kib(s.pid);
    let kept = idle + (peak - idle) / 2;
    let mut now = peak;
    for _ in 0..200 {
        if now < kept {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        now = anonymous_kib(s.pid);
    }
    assert!(
        now < kept,
        "anonymous memory: {idle} KiB idle, {peak} KiB after the reads, {now} KiB a while later"
    );
    s.stop().await;
}
