//! The event stream: THOUGHTBOX_EVENTS / --events to a file (appending
//! across restarts) or to stderr; never stdout; a broken destination never
//! fails a call.

use std::process::Stdio;
use std::time::Duration;

use rmcp::ServiceExt;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common::*;

fn read_events(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

#[tokio::test]
async fn every_event_type_to_a_file_that_survives_restarts() {
    let (dir, db) = temp_db();
    let path = dir.path().join("logs/events.jsonl");
    let mut cmd = command(&db);
    cmd.env("THOUGHTBOX_EVENTS", &path);
    let s = start_with((), cmd).await;
    let sid = s.ready("Eventful").await;
    let long = "x".repeat(250);
    s.thought(json!({ "thought": long, "nextThoughtNeeded": true })).await;
    s.thought(t("two")).await;
    s.thought(json!({ "thought": "alt", "nextThoughtNeeded": true, "branchId": "alt", "branchFromThought": 1 }))
        .await;
    s.thought(json!({ "thought": "fix", "nextThoughtNeeded": true, "revisesThought": 2 }))
        .await;
    s.ok(
        "session",
        json!({ "subOperation": "export", "sessionId": sid, "format": "markdown" }),
    )
    .await;
    let tree = db.with_file_name("exported-tree");
    s.ok(
        "session",
        json!({ "subOperation": "export", "sessionId": sid, "destination": tree }),
    )
    .await;
    s.thought(json!({ "thought": "done", "nextThoughtNeeded": false }))
        .await;
    s.ok("load_context", json!({ "sessionId": sid })).await;
    s.stop().await;

    let events = read_events(&path);
    for e in &events {
        assert!(e["timestamp"].is_string() && e["data"].is_object(), "{e}");
    }
    let started = of_type(&events, "session_started");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["sessionId"], sid.as_str());
    assert_eq!(started[0]["data"]["title"], "Eventful");
    assert_eq!(started[0]["data"]["sessionId"], sid.as_str());
    let stages = of_type(&events, "stage_changed");
    assert_eq!(stages.len(), 2);
    assert_eq!(
        stages[0]["data"],
        json!({ "previousStage": 0, "newStage": 1, "trigger": "start_new" })
    );
    assert_eq!(stages[1]["data"]["trigger"], "cipher");
    assert_eq!(of_type(&events, "cipher_loaded").len(), 1);
    let added = of_type(&events, "thought_added");
    assert_eq!(added.len(), 5);
    let first = added[0]["data"]["thought"].as_str().unwrap();
    assert_eq!(first.chars().count(), 100);
    assert_eq!(added[0]["data"]["thoughtNumber"], 1);
    assert_eq!(added[0]["data"]["nextThoughtNeeded"], true);
    assert_eq!(added[2]["data"]["branchId"], "alt");
    let branch = of_type(&events, "branch_created");
    assert_eq!(branch.len(), 1);
    assert_eq!(branch[0]["data"]["fromThoughtNumber"], 1);
    let revised = of_type(&events, "thought_revised");
    assert_eq!(revised.len(), 1);
    assert_eq!(revised[0]["data"]["revisesThought"], 2);
    let exported = of_type(&events, "session_exported");
    assert_eq!(exported[0]["data"]["format"], "markdown");
    assert_eq!(exported[1]["data"]["format"], "json");
    assert_eq!(
        exported[1]["data"]["destination"],
        tree.to_str().unwrap(),
        "{}",
        exported[1]
    );
    let completed = of_type(&events, "session_completed");
    assert_eq!(completed[0]["data"]["finalThoughtCount"], 5);
    assert_eq!(completed[0]["data"]["branchCount"], 1);
    assert_eq!(of_type(&events, "session_loaded")[0]["sessionId"], sid.as_str());
    let n = events.len();

    // A restart appends; the flag works like the variable.
    let mut cmd = command(&db);
    cmd.arg("serve").arg("--events").arg(&path);
    let s = start_with((), cmd).await;
    s.ok("load_context", json!({ "sessionId": sid })).await;
    s.stop().await;
    let events = read_events(&path);
    assert!(events.len() > n);
    assert_eq!(events.last().unwrap()["type"], "stage_changed");

    // disableThoughtLogging keeps thought text out of the stream.
    let set = std::process::Command::new(bin())
        .arg("--db")
        .arg(&db)
        .args(["config", "set", "disableThoughtLogging", "true"])
        .output()
        .unwrap();
    assert!(set.status.success(), "{}", String::from_utf8_lossy(&set.stderr));
    let mut cmd = command(&db);
    cmd.arg("--events").arg(&path);
    let s = start_with((), cmd).await;
    s.ok("load_context", json!({ "sessionId": sid })).await;
    s.ok("cipher", Value::Null).await;
    s.thought(json!({ "thought": "a secret step", "nextThoughtNeeded": true }))
        .await;
    s.stop().await;
    let events = read_events(&path);
    let added = of_type(&events, "thought_added");
    let last = added.last().unwrap();
    assert!(last["data"]["thoughtNumber"].is_u64(), "{last}");
    assert!(last["data"].get("thought").is_none(), "{last}");
    assert!(!std::fs::read_to_string(&path).unwrap().contains("a secret step"));
}

#[tokio::test]
async fn events_to_stderr_never_stdout() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.env("THOUGHTBOX_EVENTS", "stderr").env("RUST_LOG", "off");
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let pid = transport.id().unwrap();
    let client = ().serve(transport).await.unwrap();
    let s = Server { client, pid };
    let lines = tokio::spawn(async move {
        let mut out = Vec::new();
        let mut lines = BufReader::new(stderr.unwrap()).lines();
        while let Ok(Some(l)) = lines.next_line().await {
            out.push(l);
        }
        out
    });
    s.ready("stderr events").await;
    s.thought(t("one")).await;
    s.stop().await;
    let lines = tokio::time::timeout(Duration::from_secs(10), lines)
        .await
        .unwrap()
        .unwrap();
    let events: Vec<Value> = lines.iter().filter_map(|l| serde_json::from_str(l).ok()).collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "session_started",
            "stage_changed",
            "stage_changed",
            "cipher_loaded",
            "thought_added"
        ]
    );
}

#[tokio::test]
async fn off_by_default_and_a_broken_destination_never_fails_a_call() {
    let (dir, db) = temp_db();
    let s = start(&db).await;
    s.ready("quiet").await;
    s.thought(t("no events")).await;
    s.stop().await;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(name.starts_with("ledger.db"), "unexpected file {name}");
    }

    // A directory where the file should be: every write fails.
    let mut cmd = command(&db);
    cmd.env("THOUGHTBOX_EVENTS", dir.path());
    let s = start_with((), cmd).await;
    s.ready("still works").await;
    let r = s.thought(t("recorded anyway")).await;
    assert_eq!(r["thoughtNumber"], 1);
    s.stop().await;

    // stdout is refused outright.
    let out = std::process::Command::new(bin())
        .arg("--db")
        .arg(&db)
        .arg("serve")
        .arg("--events")
        .arg("stdout")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("stdout"));
}
