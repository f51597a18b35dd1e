//! Critique through MCP sampling, beyond core_flow: the timeout (flag and
//! environment variable) with a client that never answers, critique
//! requests counted by the analysis, and the multi round-trip request that
//! asks a 2026-07-28 client instead.
#![allow(deprecated)] // sampling types, sent by hand in a multi round-trip request

use std::time::{Duration, Instant};

use rmcp::ClientHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CreateMessageResult, InputRequiredResult, InputResponses, ProtocolVersion,
};
use serde_json::{Value, json};

use crate::common::*;

/// A client that declares sampling and never answers a sampling request.
fn silent_critic() -> TestClient {
    TestClient::default().sampling(Sampling::Never)
}

#[tokio::test]
async fn a_client_that_never_answers_hits_the_timeout() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.arg("serve").arg("--critique-timeout").arg("1");
    let s = start_with(silent_critic(), cmd).await;
    let sid = s.ready("slow critic").await;
    let t0 = Instant::now();
    let r = s
        .thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true, "verbose": true }))
        .await;
    let took = t0.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert_eq!(r["thoughtNumber"], 1);
    assert!(r["critique"].is_null());
    assert_eq!(r["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED");
    assert!(r["critiqueError"]["message"].as_str().unwrap().contains("within 1 s"));
    // Recorded without a critique, and counted as a request.
    let read = s.ok("read_thoughts", json!({ "thoughtNumber": 1 })).await;
    assert!(read["thoughts"][0].get("critique").is_none());
    let a = s
        .ok("session", json!({ "subOperation": "analyze", "sessionId": sid }))
        .await;
    assert_eq!(a["quality"]["critiqueRequests"], 1);
    s.stop().await;
}

#[tokio::test]
async fn the_timeout_also_comes_from_the_environment() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.env("THOUGHTBOX_CRITIQUE_TIMEOUT_SECS", "1");
    let s = start_with(silent_critic(), cmd).await;
    s.ready("env").await;
    let t0 = Instant::now();
    let r = s
        .thought(json!({ "thought": "x", "nextThoughtNeeded": true, "critique": true }))
        .await;
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(r["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED");
    s.stop().await;
}

#[tokio::test]
async fn answered_and_unanswered_critiques_both_count() {
    let (_d, db) = temp_db();
    let s = start_with(TestClient::critic(), command(&db)).await;
    let sid = s.ready("critics").await;
    s.thought(json!({ "thought": "a", "nextThoughtNeeded": true, "critique": true }))
        .await;
    s.thought(t("b")).await;
    s.thought(json!({ "thought": "c", "nextThoughtNeeded": true, "critique": "true" }))
        .await;
    let a = s
        .ok("session", json!({ "subOperation": "analyze", "sessionId": sid }))
        .await;
    assert_eq!(a["quality"]["critiqueRequests"], 2);
    s.stop().await;

    let s = start(&db).await;
    s.ok("load_context", json!({ "sessionId": sid })).await;
    s.ok("cipher", serde_json::Value::Null).await;
    let r = s
        .thought(json!({ "thought": "d", "nextThoughtNeeded": true, "critique": true }))
        .await;
    assert_eq!(r["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED");
    let a = s
        .ok("session", json!({ "subOperation": "analyze", "sessionId": sid }))
        .await;
    assert_eq!(a["quality"]["critiqueRequests"], 3);
    s.stop().await;
    // In the table too: every thought recorded with `critique: true`, its
    // critique answered or not, says so in `critique_requested`.
    let flags: Vec<(String, i64, bool)> = rusqlite::Connection::open(&db)
        .unwrap()
        .prepare("SELECT thought, critique_requested, critique IS NOT NULL FROM thoughts ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let expected = [("a", 1, true), ("b", 0, false), ("c", 1, true), ("d", 1, false)];
    let expected: Vec<(String, i64, bool)> = expected.iter().map(|(t, f, c)| (t.to_string(), *f, *c)).collect();
    assert_eq!(flags, expected);
}

/// A critique that arrives for a thought deleted meanwhile is not shown as
/// stored: the answer says why there is none.
#[tokio::test]
async fn a_critique_for_a_thought_deleted_meanwhile_is_not_stored() {
    let (_d, db) = temp_db();
    let path = db.clone();
    let deleting = TestClient::critic().meanwhile(move || {
        use thoughtbox::store::{OpenOptionsStore, Store};
        let store = Store::open(&path, OpenOptionsStore::default()).expect("open");
        for id in store.session_ids().expect("ids") {
            store.delete_session(&id).expect("delete");
        }
    });
    let s = start_with(deleting, command(&db)).await;
    s.ready("deleted while critiqued").await;
    let r = s
        .thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true, "verbose": true }))
        .await;
    assert!(r["critique"].is_null(), "{r}");
    assert_eq!(r["critiqueError"]["code"], "THOUGHT_NOT_FOUND", "{r}");
    assert!(r["critiqueError"]["message"].as_str().unwrap().contains("not stored"));
    s.stop().await;
}

/// The thought is recorded before its critique is asked for: when the
/// critique then cannot be stored, the call still answers the thought (with
/// `critiqueError`) instead of an error, so that a client does not send it
/// again and record it twice.
/// Unix only: Windows does not let a database in use be moved.
#[cfg(unix)]
#[tokio::test]
async fn a_critique_that_cannot_be_stored_still_answers_the_recorded_thought() {
    let (_d, db) = temp_db();
    let path = db.clone();
    // With its WAL, which holds the thought.
    let moving = TestClient::critic().meanwhile(move || {
        for suffix in ["", "-wal", "-shm"] {
            let from = format!("{}{suffix}", path.display());
            let to = format!("{}{suffix}", path.with_extension("moved").display());
            if std::path::Path::new(&from).exists() {
                std::fs::rename(from, to).expect("move the database");
            }
        }
    });
    let s = start_with(moving, command(&db)).await;
    s.ready("moved while critiqued").await;
    let r = s
        .thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true, "verbose": true }))
        .await;
    assert_eq!(r["thoughtNumber"], 1, "{r}");
    assert!(r["critique"].is_null(), "{r}");
    assert_eq!(r["critiqueError"]["code"], "STORAGE_ERROR", "{r}");
    let message = r["critiqueError"]["message"].as_str().unwrap();
    assert!(message.starts_with("the thought was recorded"), "{message}");
    s.stop().await;
    let moved = rusqlite::Connection::open(db.with_extension("moved")).unwrap();
    let rows: Vec<(String, i64)> = moved
        .prepare("SELECT thought, critique_requested FROM thoughts")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(rows, [("Ship it".to_string(), 1)]);
}

/// A critique of megabytes (the prompt asks for 1,000 tokens, but a client
/// may send anything) is kept cut to the thought text's limit, with a note,
/// so that the thought and its critique can always be read back whole.
#[tokio::test]
async fn a_critique_of_megabytes_is_cut_and_reads_back_whole() {
    let (_d, db) = temp_db();
    let s = start_with(
        // A model that writes a critique of megabytes.
        TestClient::default().sampling(Sampling::Text("\"".repeat(6 << 20), "verbose-model")),
        command(&db),
    )
    .await;
    s.ready("long critique").await;
    let r = s
        .thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true, "verbose": true }))
        .await;
    assert_eq!(r["thoughtNumber"], 1);
    assert!(r.get("answerShortened").is_none(), "{}", r["answerShortened"]);
    let note = format!(
        "[critique cut here: the model sent {} bytes; thoughtbox keeps at most {}]",
        6 << 20,
        1 << 20
    );
    let answered = r["critique"]["text"].as_str().unwrap();
    assert!(
        answered.len() <= 1 << 20 && answered.ends_with(&note),
        "{}",
        answered.len()
    );
    let read = s.ok("read_thoughts", json!({ "thoughtNumber": 1 })).await;
    assert_eq!(read["thoughts"][0]["critique"]["text"], answered);
    assert_eq!(read["thoughts"][0]["critique"]["model"], "verbose-model");
    s.stop().await;
}

/// A critique that was made is in the answer of the thought that asked for
/// it, minimal or verbose, as a failed one is; a thought that did not ask
/// answers no critique field.
#[tokio::test]
async fn a_critique_is_answered_without_verbose() {
    let (_d, db) = temp_db();
    let s = start_with(TestClient::critic(), command(&db)).await;
    s.ready("minimal critique").await;
    let r = s
        .thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true }))
        .await;
    assert_eq!(r["critique"]["model"], "test-model-1", "{r}");
    assert!(r["critique"]["text"].as_str().unwrap().starts_with("Critique:"));
    assert!(r.get("critiqueError").is_none(), "{r}");
    assert!(r.get("totalThoughts").is_none(), "still minimal: {r}");
    let plain = s.thought(t("no critique asked")).await;
    assert!(plain.get("critique").is_none(), "{plain}");
    s.stop().await;
}

/// The context lines ("Thought n: text") of the prompt a critique echoed.
fn context_of(answer: &serde_json::Value) -> Vec<String> {
    let prompt = answer["critique"]["text"].as_str().expect("a critique");
    let earlier = prompt.split("\n\n").next().unwrap_or_default();
    earlier.lines().skip(1).map(str::to_string).collect()
}

/// A critique's prompt cuts long thoughts as overview reads do: megabytes
/// of prompt would fail with any model.
#[tokio::test]
async fn a_critique_prompt_cuts_long_thoughts() {
    let (_d, db) = temp_db();
    let s = start_with(TestClient::default().sampling(Sampling::Echo), command(&db)).await;
    s.ready("long").await;
    s.thought(t(&"e".repeat(10_000))).await;
    let r = s
        .thought(json!({ "thought": "r".repeat(100_000), "nextThoughtNeeded": true, "critique": true }))
        .await;
    let context = context_of(&r);
    assert_eq!(
        context,
        [format!("Thought 1: {} [... 6000 more characters]", "e".repeat(4_000))]
    );
    let prompt = r["critique"]["text"].as_str().unwrap();
    assert!(
        prompt.contains(&format!(
            "to review:\n{} [... 60000 more characters]\n",
            "r".repeat(40_000)
        )),
        "{}",
        prompt.len()
    );
    s.stop().await;
}

/// The context of a critique is the five thoughts before the new one on its
/// path, oldest first: the main chain before it in the order written (also
/// when numbered backwards), and for a branch the branch so far and then the
/// main chain back from the fork point.
#[tokio::test]
async fn a_critique_sees_the_thoughts_before_it_on_its_path() {
    let (_d, db) = temp_db();
    let s = start_with(TestClient::default().sampling(Sampling::Echo), command(&db)).await;
    s.ready("paths").await;
    let critiqued = |extra: serde_json::Value| {
        let mut args = json!({ "nextThoughtNeeded": true, "critique": true });
        for (k, v) in extra.as_object().unwrap() {
            args[k] = v.clone();
        }
        args
    };
    let r = s.thought(critiqued(json!({ "thought": "m1" }))).await;
    assert_eq!(context_of(&r), Vec::<String>::new());
    assert!(
        r["critique"]["text"]
            .as_str()
            .unwrap()
            .starts_with("No earlier thoughts")
    );
    for i in 2..=7 {
        s.thought(t(&format!("m{i}"))).await;
    }
    // A branch's first thought: the main chain up to its fork point.
    let r = s
        .thought(critiqued(
            json!({ "thought": "b3", "branchId": "alt", "branchFromThought": 2 }),
        ))
        .await;
    assert_eq!(context_of(&r), ["Thought 1: m1", "Thought 2: m2"]);
    // Its next thought: the branch so far, after the fork point's ancestry.
    let r = s
        .thought(critiqued(json!({ "thought": "b4", "branchId": "alt" })))
        .await;
    assert_eq!(
        context_of(&r),
        ["Thought 1: m1", "Thought 2: m2", "Thought 3 (branch alt): b3"]
    );
    assert!(
        r["critique"]["text"]
            .as_str()
            .unwrap()
            .contains("Thought 4 (branch alt) to review:\nb4")
    );
    // The main chain: the five before it, no branch thoughts.
    let r = s.thought(critiqued(json!({ "thought": "m8" }))).await;
    assert_eq!(
        context_of(&r),
        [
            "Thought 3: m3",
            "Thought 4: m4",
            "Thought 5: m5",
            "Thought 6: m6",
            "Thought 7: m7"
        ]
    );

    // Backward numbering: the thoughts written before, not lower numbers.
    s.ok("start_new", json!({ "sessionTitle": "backwards" })).await;
    for n in [5, 4] {
        s.thought(json!({ "thought": format!("n{n}"), "nextThoughtNeeded": true, "thoughtNumber": n }))
            .await;
    }
    let r = s
        .thought(critiqued(json!({ "thought": "n3", "thoughtNumber": 3 })))
        .await;
    assert_eq!(context_of(&r), ["Thought 5: n5", "Thought 4: n4"]);
    s.stop().await;
}

/// The "critique requested" flag is written when the client's time runs
/// out, seconds after the append; an idle server still empties the WAL
/// after it, so a copy of the database file alone holds the flag.
#[tokio::test]
async fn a_timed_out_critique_request_reaches_the_file_of_an_idle_server() {
    let (dir, db) = temp_db();
    let mut cmd = command(&db);
    // Longer than the quiet second after which the append is checkpointed.
    cmd.arg("serve").arg("--critique-timeout").arg("3");
    let s = start_with(silent_critic(), cmd).await;
    s.ready("idle critic").await;
    let r = s
        .thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true }))
        .await;
    assert_eq!(r["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED");
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    let deadline = Instant::now() + Duration::from_secs(20);
    while std::fs::metadata(&wal).is_ok_and(|m| m.len() > 0) {
        assert!(Instant::now() < deadline, "the idle server never emptied the WAL");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let copy = dir.path().join("copy.db");
    std::fs::copy(&db, &copy).unwrap();
    let flag: i64 = rusqlite::Connection::open(&copy)
        .unwrap()
        .query_row("SELECT critique_requested FROM thoughts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(flag, 1);
    s.stop().await;
}

/// The request is recorded with the thought itself: while the client
/// writes the critique (or never does), the row already says so, and a
/// server killed meanwhile leaves it said.
#[tokio::test]
async fn the_critique_request_is_in_the_ledger_while_the_client_writes_it() {
    let (_dir, db) = temp_db();
    let mut cmd = command(&db);
    cmd.arg("serve").arg("--critique-timeout").arg("3");
    let s = start_with(silent_critic(), cmd).await;
    s.ready("pending critic").await;
    let flag_seen = async {
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            let flag: Option<i64> = rusqlite::Connection::open(&db).ok().and_then(|c| {
                c.query_row("SELECT critique_requested FROM thoughts", [], |r| r.get(0))
                    .ok()
            });
            if flag == Some(1) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        false
    };
    let (answer, seen) = tokio::join!(
        s.thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true })),
        flag_seen
    );
    assert!(seen, "the flag was not in the ledger while the critique was pending");
    assert_eq!(answer["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED");
    s.stop().await;
}

/// A critique asked for and never received is part of the thought
/// (`critiqueRequested: true`), so exports carry it and an import keeps
/// what the analysis counts; an answered critique needs no flag.
#[tokio::test]
async fn an_unanswered_critique_request_survives_export_and_import() {
    use crate::cli::{ok, ok_json};
    let (dir, db) = temp_db();
    let mut cmd = command(&db);
    cmd.arg("serve").arg("--critique-timeout").arg("1");
    let s = start_with(silent_critic(), cmd).await;
    let sid = s.ready("unanswered").await;
    s.thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true }))
        .await;
    s.thought(json!({ "thought": "Then test it", "nextThoughtNeeded": true }))
        .await;
    let read = s.ok("read_thoughts", json!({ "range": [1, 2] })).await;
    assert_eq!(read["thoughts"][0]["critiqueRequested"], true);
    assert!(read["thoughts"][1].get("critiqueRequested").is_none());
    let export = s
        .ok("session", json!({ "subOperation": "export", "sessionId": sid }))
        .await;
    let exported = export["content"].as_str().map_or(export.to_string(), str::to_string);
    assert!(exported.contains("critiqueRequested"), "{exported}");
    s.stop().await;

    let tree = dir.path().join("tree");
    ok(&db, &["export", "--out", tree.to_str().unwrap()]);
    let other = dir.path().join("other.db");
    ok(&other, &["import", tree.to_str().unwrap()]);
    let shown = ok_json(&other, &["sessions", "show", &sid]);
    let data: Vec<&serde_json::Value> = shown["nodes"].as_array().unwrap().iter().map(|n| &n["data"]).collect();
    assert_eq!(data[0]["critiqueRequested"], true);
    assert!(data[1].get("critiqueRequested").is_none());
    let s = start(&other).await;
    s.ok("start_new", json!({ "sessionTitle": "stage" })).await;
    let a = s
        .ok("session", json!({ "subOperation": "analyze", "sessionId": sid }))
        .await;
    assert_eq!(a["quality"]["critiqueRequests"], 1);
    s.stop().await;
}

/// stdin closing while the server waits for a critique, which can no longer
/// come, ends that wait: the thought's answer (recorded, critique refused)
/// is still written, and the server exits before the MCP library's 5 s
/// wait for answers in flight has run out. Else the wait runs to the end, the
/// answer is dropped, and an rmcp client sends SIGTERM 3 s after closing
/// stdin.
#[tokio::test]
async fn a_critique_still_awaited_when_stdin_closes_is_given_up_and_answered() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.arg("serve").arg("--critique-timeout").arg("60");
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let call = |id: u32, operation: &str, args: serde_json::Value| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "thoughtbox_gateway", "arguments": { "operation": operation, "args": args } } })
        .to_string()
    };
    let requests = [
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": { "protocolVersion": "2025-06-18",
                "capabilities": { "sampling": {} }, "clientInfo": { "name": "raw", "version": "0" } } })
        .to_string(),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string(),
        call(1, "start_new", json!({ "sessionTitle": "critic gone" })),
        call(2, "cipher", json!({})),
        call(
            3,
            "thought",
            json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true }),
        ),
    ];
    let mut answers = Vec::new();
    for request in requests {
        stdin.write_all(format!("{request}\n").as_bytes()).await.expect("write");
        if request.contains("\"id\":") && !request.contains("notifications/") {
            let line = lines.next_line().await.expect("read").expect("an answer");
            answers.push(serde_json::from_str::<serde_json::Value>(&line).expect("JSON"));
        }
    }
    // The last line read is the server's sampling request, not an answer.
    assert_eq!(answers[3]["method"], "sampling/createMessage", "{:?}", answers[3]);
    drop(stdin);
    let t0 = Instant::now();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("an answer within 20 s")
        .expect("read")
        .expect("the thought's answer before stdout closes");
    let answer: serde_json::Value = serde_json::from_str(&line).expect("JSON");
    assert_eq!(answer["id"], 3, "{answer}");
    let result: serde_json::Value =
        serde_json::from_str(answer["result"]["content"][0]["text"].as_str().expect("text")).expect("JSON text");
    assert_eq!(result["thoughtNumber"], 1, "{result}");
    assert_eq!(result["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED", "{result}");
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .expect("exited")
        .expect("status");
    assert!(status.success());
    // Given up at once, not after the library's 5 s.
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    let conn = rusqlite::Connection::open(&db).expect("open");
    let flagged: i64 = conn
        .query_row("SELECT critique_requested FROM thoughts", [], |r| r.get(0))
        .expect("the thought");
    assert_eq!(flagged, 1);
}

/// Start the server and talk to it as a client of protocol 2026-07-28 does:
/// `server/discover` instead of `initialize`, then its version and
/// capabilities in `_meta` on every request. rmcp's `call_tool` answers an
/// `InputRequiredResult` through `handler` and sends the call again.
pub async fn start_2026<H: ClientHandler>(handler: H, mut cmd: tokio::process::Command) -> Server<H> {
    use rmcp::service::{ClientLifecycleMode, ClientServiceExt};
    cmd.stderr(std::process::Stdio::null());
    let (transport, _stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn thoughtbox");
    let pid = transport.id().expect("child pid");
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    let client = handler
        .serve_with_lifecycle(transport, lifecycle)
        .await
        .expect("server/discover");
    Server { client, pid }
}

/// One round of a gateway call, as sent: its answer, or the
/// `InputRequiredResult` asking for more.
pub async fn call_once<H: ClientHandler>(
    s: &Server<H>,
    operation: &str,
    args: Value,
    request_state: Option<String>,
    input_responses: Option<InputResponses>,
) -> Result<Result<Value, Value>, InputRequiredResult> {
    let mut arguments = serde_json::Map::new();
    arguments.insert("operation".into(), json!(operation));
    if !args.is_null() {
        arguments.insert("args".into(), args);
    }
    let mut params = CallToolRequestParams::new("thoughtbox_gateway").with_arguments(arguments);
    params.request_state = request_state;
    params.input_responses = input_responses;
    match s.client.call_tool_once(params).await.expect("tools/call transport") {
        CallToolResponse::Complete(result) => {
            let text = &result.content[0].as_text().expect("a text block").text;
            let value: Value = serde_json::from_str(text).expect("JSON text");
            Ok(if result.is_error == Some(true) {
                Err(value)
            } else {
                Ok(value)
            })
        }
        CallToolResponse::InputRequired(asked) => Err(asked),
        other => panic!("unexpected answer {other:?}"),
    }
}

/// The thoughts of a session as stored: (text, critique text).
fn stored_thoughts(db: &std::path::Path) -> Vec<(String, Option<String>)> {
    rusqlite::Connection::open(db)
        .unwrap()
        .prepare("SELECT thought, json_extract(critique, '$.text') FROM thoughts ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// A 2026-07-28 client cannot be sent a sampling request: it is asked in an
/// `InputRequiredResult`, and its retry gets the critique. The thought is
/// recorded once, with the critique attached.
#[tokio::test]
async fn a_2026_client_gets_its_critique_by_retrying_and_the_thought_is_recorded_once() {
    let (_d, db) = temp_db();
    let s = start_2026(TestClient::critic(), command(&db)).await;
    let sid = s.ready("modern critic").await;
    s.thought(t("Measure first")).await;
    let r = s
        .thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true, "verbose": true }))
        .await;
    assert_eq!(r["thoughtNumber"], 2, "{r}");
    assert_eq!(r["sessionId"], sid.as_str());
    assert_eq!(
        r["thoughtHistoryLength"], 2,
        "the verbose answer of the first round: {r}"
    );
    assert_eq!(r["critique"]["model"], "test-model-1", "{r}");
    let text = r["critique"]["text"].as_str().unwrap();
    assert!(text.starts_with("Critique: consider the edge cases."), "{text}");
    assert!(r.get("critiqueError").is_none(), "{r}");

    let read = s.ok("read_thoughts", json!({ "sessionId": sid })).await;
    let thoughts = read["thoughts"].as_array().unwrap();
    assert_eq!(thoughts.len(), 2, "{read}");
    assert_eq!(thoughts[1]["thought"], "Ship it");
    assert_eq!(thoughts[1]["critique"], r["critique"]);
    assert!(thoughts[1].get("critiqueRequested").is_none(), "answered: {read}");
    let a = s
        .ok("session", json!({ "subOperation": "analyze", "sessionId": sid }))
        .await;
    assert_eq!(a["quality"]["critiqueRequests"], 1);
    s.stop().await;
    assert_eq!(
        stored_thoughts(&db),
        [
            ("Measure first".to_string(), None),
            ("Ship it".to_string(), Some(text.to_string()))
        ]
    );
}

/// The first round by hand: the thought is recorded and the answer asks for
/// a sampling request (the prompt the older protocol's request carries),
/// with a sealed `requestState`. A forged or altered state is refused and
/// changes nothing; the retry attaches the critique; the retry sent again
/// writes nothing and answers the same critique.
#[tokio::test]
async fn the_critique_round_trip_by_hand_refuses_forged_state_and_never_writes_twice() {
    let (_d, db) = temp_db();
    let s = start_2026(TestClient::critic(), command(&db)).await;
    let sid = s.ready("by hand").await;
    let args = json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true });
    let asked = call_once(&s, "thought", args.clone(), None, None)
        .await
        .expect_err("an InputRequiredResult");
    let wire = serde_json::to_value(&asked).unwrap();
    assert_eq!(wire["resultType"], "input_required");
    let request = &wire["inputRequests"]["critique"];
    assert_eq!(request["method"], "sampling/createMessage", "{wire}");
    assert_eq!(request["params"]["maxTokens"], 1000);
    assert_eq!(request["params"]["messages"][0]["role"], "user");
    assert_eq!(
        request["params"]["messages"][0]["content"]["text"],
        "No earlier thoughts: this is the first step.\n\nThought 1 to review:\nShip it\n\nGive a critical analysis of \
         this thought."
    );
    assert!(
        request["params"]["systemPrompt"]
            .as_str()
            .unwrap()
            .starts_with("You review one step")
    );
    let state = asked.request_state.clone().expect("a requestState");
    assert!(state.starts_with("rs1."), "{state}");

    // Recorded already, its critique still asked for.
    let read = s.ok("read_thoughts", json!({ "sessionId": sid })).await;
    assert_eq!(read["thoughts"].as_array().unwrap().len(), 1);
    assert_eq!(read["thoughts"][0]["critiqueRequested"], true);

    let sampled = |text: &str, model: &str| {
        let result = CreateMessageResult::new(rmcp::model::SamplingMessage::assistant_text(text), model.into());
        Some(InputResponses::from([(
            "critique".to_string(),
            serde_json::to_value(result).unwrap(),
        )]))
    };
    // Forged: altered by one character, then made up.
    let mut altered = state.clone().into_bytes();
    let i = state.find('.').unwrap() + 5;
    altered[i] = if altered[i] == b'A' { b'B' } else { b'A' };
    let altered = String::from_utf8(altered).unwrap();
    for forged in [altered, "rs1.e30.AAAA".to_string(), "not a state".to_string()] {
        let e = call_once(&s, "thought", args.clone(), Some(forged), sampled("forged", "forger"))
            .await
            .expect("an answer")
            .expect_err("refused");
        assert_eq!(e["code"], "INVALID_PAYLOAD", "{e}");
        assert_eq!(e["details"]["field"], "requestState", "{e}");
        assert!(e["message"].as_str().unwrap().contains("nothing was done"), "{e}");
    }
    assert_eq!(stored_thoughts(&db), [("Ship it".to_string(), None)]);
    // The retry's fields among the tool's arguments, in any spelling, flat
    // or in a nested args: refused, rather than run as a new call that
    // records the thought again.
    let responses = serde_json::to_value(sampled("misplaced", "m")).unwrap();
    for (name, value) in [
        ("requestState", json!(state)),
        ("inputResponses", responses),
        ("request_state", json!(state)),
    ] {
        let mut misplaced = args.clone();
        misplaced[name] = value;
        let e = call_once(&s, "thought", misplaced, None, None)
            .await
            .expect("an answer")
            .expect_err("refused");
        assert_eq!(e["details"]["field"], name, "{e}");
    }
    let e = call_once(&s, "thought", json!({ "args": { "requestState": state } }), None, None)
        .await
        .expect("an answer")
        .expect_err("refused");
    assert_eq!(e["details"]["field"], "args.requestState", "{e}");
    assert_eq!(stored_thoughts(&db), [("Ship it".to_string(), None)]);
    // A true state sent with another call (here a delete) answers neither
    // call with the first one's result: it is refused, nothing is done.
    let e = call_once(
        &s,
        "session",
        json!({ "subOperation": "delete", "sessionId": sid }),
        Some(state.clone()),
        sampled("wrong call", "m-0"),
    )
    .await
    .expect("an answer")
    .expect_err("refused");
    assert_eq!(e["details"]["field"], "requestState", "{e}");
    assert!(e["message"].as_str().unwrap().contains("another call"), "{e}");
    assert_eq!(stored_thoughts(&db), [("Ship it".to_string(), None)]);

    let r = call_once(
        &s,
        "thought",
        args.clone(),
        Some(state.clone()),
        sampled("Check the rollback.", "m-1"),
    )
    .await
    .expect("an answer")
    .expect("the thought's answer");
    assert_eq!(r["thoughtNumber"], 1, "{r}");
    assert_eq!(r["sessionId"], sid.as_str());
    assert_eq!(r["critique"]["text"], "Check the rollback.");
    assert_eq!(r["critique"]["model"], "m-1");
    // Sent again (its answer lost, say), with another answer: the critique
    // stored the first time, nothing written.
    let again = call_once(&s, "thought", args, Some(state), sampled("Something else.", "m-2"))
        .await
        .expect("an answer")
        .expect("the thought's answer");
    assert_eq!(again, r);
    assert_eq!(
        stored_thoughts(&db),
        [("Ship it".to_string(), Some("Check the rollback.".to_string()))]
    );
    // And the server keeps serving.
    let next = s.thought(t("Then test it")).await;
    assert_eq!(next["thoughtNumber"], 2);
    s.stop().await;
}

/// A retry without the client's sampling answer leaves the thought
/// recorded without a critique, and says so.
#[tokio::test]
async fn a_retry_without_the_sampling_answer_answers_the_thought_with_critique_error() {
    let (_d, db) = temp_db();
    let s = start_2026(TestClient::critic(), command(&db)).await;
    s.ready("no answer").await;
    let args = json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true });
    let asked = call_once(&s, "thought", args.clone(), None, None)
        .await
        .expect_err("an InputRequiredResult");
    let r = call_once(&s, "thought", args, asked.request_state, None)
        .await
        .expect("an answer")
        .expect("the thought's answer");
    assert_eq!(r["thoughtNumber"], 1, "{r}");
    assert!(r["critique"].is_null(), "{r}");
    assert_eq!(r["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED", "{r}");
    assert!(
        r["critiqueError"]["message"]
            .as_str()
            .unwrap()
            .contains("inputResponses.critique")
    );
    s.stop().await;
    assert_eq!(stored_thoughts(&db), [("Ship it".to_string(), None)]);
}

/// The first round of `args` (asked for its critique, never answered),
/// then the same call again: answered, said not recorded again.
async fn declined_then_resent<H: ClientHandler>(s: &Server<H>, args: &Value) -> Value {
    call_once(s, "thought", args.clone(), None, None)
        .await
        .expect_err("an InputRequiredResult");
    let again = call_once(s, "thought", args.clone(), None, None)
        .await
        .expect("an answer")
        .expect("the thought's answer");
    let note = again["note"].as_str().unwrap_or_default();
    assert!(note.contains("not recorded again"), "{again}");
    again
}

/// A client whose sampling was declined or failed cannot answer the
/// round (its SDK ends the call with an error), and its agent sends the
/// thought again: that call answers the thought recorded in the first
/// round, with the critique's error, and does not record it twice. The
/// same call after another thought, or in another session, is a new one.
#[tokio::test]
async fn a_thought_resent_after_a_declined_critique_is_recorded_once() {
    let (_d, db) = temp_db();
    let s = start_2026(TestClient::critic(), command(&db)).await;
    s.ready("declined").await;
    let args = json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true });
    let again = declined_then_resent(&s, &args).await;
    assert_eq!(again["thoughtNumber"], 1, "{again}");
    assert!(again["critique"].is_null(), "{again}");
    assert_eq!(again["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED", "{again}");
    assert_eq!(stored_thoughts(&db), [("Ship it".to_string(), None)]);
    // Once more: a new thought, asked for its critique in turn.
    call_once(&s, "thought", args.clone(), None, None)
        .await
        .expect_err("an InputRequiredResult");
    // A thought recorded since makes the same call a new thought.
    s.thought(json!({ "thought": "Between", "nextThoughtNeeded": true }))
        .await;
    call_once(&s, "thought", args.clone(), None, None)
        .await
        .expect_err("a new thought, asked for its critique");
    // So does another session (another conversation on the process).
    s.ok("start_new", json!({ "sessionTitle": "another" })).await;
    call_once(&s, "thought", args, None, None)
        .await
        .expect_err("a new thought, asked for its critique");
    s.stop().await;
    assert_eq!(stored_thoughts(&db).len(), 5);
}

/// A resend is found whatever the call left the connection with: a final
/// thought closed its session, and a blank sessionId names none.
#[tokio::test]
async fn a_final_thought_resent_after_a_declined_critique_is_recorded_once() {
    let (_d, db) = temp_db();
    let s = start_2026(TestClient::critic(), command(&db)).await;
    s.ready("final").await;
    for args in [
        json!({ "thought": "Done", "nextThoughtNeeded": false, "critique": true }),
        json!({ "thought": "Blank", "nextThoughtNeeded": true, "critique": true, "sessionId": "" }),
    ] {
        if args["sessionId"] == "" {
            s.ok("start_new", json!({ "sessionTitle": "blank" })).await;
        }
        declined_then_resent(&s, &args).await;
    }
    s.stop().await;
    assert_eq!(
        stored_thoughts(&db),
        [("Done".to_string(), None), ("Blank".to_string(), None)]
    );
}

/// A state sealed by an earlier server process is stale: each process seals
/// with its own key, so the retry after a restart is refused, not run.
#[tokio::test]
async fn a_state_from_an_earlier_server_process_is_refused() {
    let (_d, db) = temp_db();
    let s = start_2026(TestClient::critic(), command(&db)).await;
    let sid = s.ready("restarted").await;
    let args = json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true, "sessionId": sid });
    let asked = call_once(&s, "thought", args.clone(), None, None)
        .await
        .expect_err("an InputRequiredResult");
    s.stop().await;
    let s = start_2026(TestClient::critic(), command(&db)).await;
    let response = InputResponses::from([(
        "critique".to_string(),
        serde_json::to_value(CreateMessageResult::new(
            rmcp::model::SamplingMessage::assistant_text("late"),
            "m".into(),
        ))
        .unwrap(),
    )]);
    let e = call_once(&s, "thought", args, asked.request_state, Some(response))
        .await
        .expect("an answer")
        .expect_err("refused");
    assert_eq!(e["code"], "INVALID_PAYLOAD", "{e}");
    assert!(e["message"].as_str().unwrap().contains("stopped"), "{e}");
    s.stop().await;
    assert_eq!(stored_thoughts(&db), [("Ship it".to_string(), None)]);
}

/// A 2026-07-28 client that declares no sampling gets its thought recorded
/// and `SAMPLING_NOT_SUPPORTED`, as an older client does.
#[tokio::test]
async fn a_2026_client_without_sampling_gets_sampling_not_supported() {
    let (_d, db) = temp_db();
    let s = start_2026((), command(&db)).await;
    s.ready("no sampling").await;
    let r = s
        .thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true }))
        .await;
    assert_eq!(r["thoughtNumber"], 1);
    assert!(r["critique"].is_null(), "{r}");
    assert_eq!(r["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED", "{r}");
    s.stop().await;
}
