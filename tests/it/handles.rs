//! Session ids are handles (decision 0002): a call that names a session
//! acts on it whatever its connection did before, the stage travels with
//! the session, and a client of the stateless protocol (2026-07-28: no
//! `initialize`, `_meta` on every request) can interleave two conversations
//! on one stdio process.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::common::*;

/// A client of protocol 2026-07-28 over the server's stdio, written by hand:
/// it never sends `initialize`, and every request carries the protocol
/// version and capabilities in `_meta`.
struct Stateless {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

impl Stateless {
    fn spawn(db: &std::path::Path) -> Stateless {
        let mut cmd = command(db);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take().unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        Stateless {
            _child: child,
            stdin,
            lines,
            next_id: 1,
        }
    }

    /// One `tools/call` of the gateway: `Ok(answer)` or `Err(ErrorPayload)`.
    async fn call(&mut self, operation: &str, args: Value) -> Result<Value, Value> {
        let id = self.next_id;
        self.next_id += 1;
        let request = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {
                "name": "thoughtbox_gateway",
                "arguments": { "operation": operation, "args": args },
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": { "name": "stateless-test", "version": "1" },
                },
            },
        });
        self.stdin.write_all(format!("{request}\n").as_bytes()).await.unwrap();
        loop {
            let line = tokio::time::timeout(std::time::Duration::from_secs(20), self.lines.next_line())
                .await
                .expect("the server answered")
                .unwrap()
                .expect("a line");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] != id {
                continue; // a notification
            }
            let result = &message["result"];
            assert!(result.is_object(), "a result, not a protocol error: {message}");
            let answer: Value = serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap();
            return if result["isError"] == true {
                Err(answer)
            } else {
                Ok(answer)
            };
        }
    }

    async fn ok(&mut self, operation: &str, args: Value) -> Value {
        match self.call(operation, args.clone()).await {
            Ok(v) => v,
            Err(e) => panic!("{operation} {args} failed: {e}"),
        }
    }
}

/// Two conversations on one process, each passing the handle it was given,
/// their calls interleaved: numbering, stages and reads never mix.
#[tokio::test]
async fn a_stateless_client_interleaves_two_sessions_on_one_process() {
    let (_d, db) = temp_db();
    let mut c = Stateless::spawn(&db);
    let a = c.ok("start_new", json!({ "sessionTitle": "Conversation A" })).await;
    let a = a["sessionId"].as_str().unwrap().to_string();
    let b = c.ok("start_new", json!({ "sessionTitle": "Conversation B" })).await;
    let b = b["sessionId"].as_str().unwrap().to_string();
    c.ok("cipher", json!({ "sessionId": a, "brief": true })).await;
    c.ok("cipher", json!({ "sessionId": b, "brief": true })).await;
    for (session, text) in [(&a, "a1"), (&b, "b1"), (&a, "a2"), (&b, "b2"), (&a, "a3")] {
        let got = c
            .ok(
                "thought",
                json!({ "sessionId": session, "thought": text, "nextThoughtNeeded": true }),
            )
            .await;
        assert_eq!(got["sessionId"], session.as_str(), "{got}");
        let n: u32 = text[1..].parse().unwrap();
        assert_eq!(
            got["thoughtNumber"], n,
            "{text} is number {n} of its own session: {got}"
        );
    }
    for (session, texts) in [(&a, vec!["a1", "a2", "a3"]), (&b, vec!["b1", "b2"])] {
        let read = c.ok("read_thoughts", json!({ "sessionId": session, "last": 10 })).await;
        assert_eq!(read["sessionId"], session.as_str());
        let got: Vec<&str> = read["thoughts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["thought"].as_str().unwrap())
            .collect();
        assert_eq!(got, texts);
        let structure = c.ok("get_structure", json!({ "sessionId": session })).await;
        assert_eq!(structure["mainChain"]["count"], texts.len());
    }
    // Closing one leaves the other as it was.
    let closed = c
        .ok(
            "thought",
            json!({ "sessionId": b, "thought": "b3", "nextThoughtNeeded": false }),
        )
        .await;
    assert_eq!(closed["sessionClosed"], true);
    let next = c
        .ok(
            "thought",
            json!({ "sessionId": a, "thought": "a4", "nextThoughtNeeded": true }),
        )
        .await;
    assert_eq!(next["thoughtNumber"], 4);
}

/// A `thought` naming a session other than the connection's current one
/// is recorded in the session named, which becomes current.
#[tokio::test]
async fn a_thought_goes_to_the_session_it_names() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let a = s.ready("A").await;
    s.thought(t("a1")).await;
    let b = s.ok("start_new", json!({ "sessionTitle": "B" })).await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let got = s
        .thought(json!({ "thought": "meant for A", "nextThoughtNeeded": true, "sessionId": a }))
        .await;
    assert_eq!(got["sessionId"], a.as_str());
    assert_eq!(got["thoughtNumber"], 2);
    for (id, count) in [(&a, 2), (&b, 0)] {
        let got = s.ok("session", json!({ "subOperation": "get", "sessionId": id })).await;
        assert_eq!(got["session"]["thoughtCount"], count, "{id}");
        assert_eq!(got["sessionId"], id.as_str());
    }
    // A is now current: a thought without sessionId goes there too.
    assert_eq!(s.thought(t("a3")).await["sessionId"], a.as_str());
    // The aliases the reads take for sessionId name the session too.
    for key in ["session_id", "id"] {
        let got = s
            .thought(json!({ "thought": "by alias", "nextThoughtNeeded": true, key: b }))
            .await;
        assert_eq!(got["sessionId"], b.as_str(), "{key}");
    }
    let got = s.ok("session", json!({ "subOperation": "get", "sessionId": b })).await;
    assert_eq!(got["session"]["thoughtCount"], 2);
    // An id of no session is refused and starts nothing.
    let sessions = s.ok("list_sessions", Value::Null).await["total"].clone();
    let e = s
        .err(
            "thought",
            json!({ "thought": "nowhere", "nextThoughtNeeded": true,
                    "sessionId": "0b6f2c1e-8d4a-4c5e-9f3b-2a7d1e6c8b90" }),
            "SESSION_NOT_FOUND",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("0b6f2c1e"), "{e}");
    assert_eq!(s.ok("list_sessions", Value::Null).await["total"], sessions);
    // A completed session named is reopened by the thought, and says so.
    s.thought(json!({ "thought": "done", "nextThoughtNeeded": false, "sessionId": b }))
        .await;
    let reopened = s
        .thought(json!({ "thought": "one more", "nextThoughtNeeded": true, "sessionId": b }))
        .await;
    assert_eq!(reopened["reopened"], true, "{reopened}");
    s.stop().await;
}

/// The stage is kept on the session: a new connection that comes back with
/// the handle of a session that had the cipher writes at once; one whose
/// session never had it is told to call cipher.
#[tokio::test]
async fn the_stage_travels_with_the_session() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let ciphered = s.ready("had the cipher").await;
    let fresh = s.ok("start_new", json!({ "sessionTitle": "fresh" })).await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    // start_new on a connection at stage 2 puts its session at stage 2.
    assert_eq!(s.ok("get_state", Value::Null).await["stage"], 2);
    s.stop().await;

    // A session whose only stage is 1: from the old ledger's point of view
    // (a connection that only started it).
    let s = start(&db).await;
    let only_started = s.ok("start_new", json!({ "sessionTitle": "only started" })).await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    s.stop().await;

    let s = start(&db).await;
    assert_eq!(s.ok("get_state", Value::Null).await["stage"], 0);
    // The gate reads the handle under every name the thought takes for it.
    for (name, id) in [("sessionId", &ciphered), ("id", &fresh), ("session_id", &ciphered)] {
        let got = s
            .thought(json!({ "thought": "back again", "nextThoughtNeeded": true, name: id }))
            .await;
        assert_eq!(got["sessionId"], id.as_str(), "{name}");
    }
    let e = s
        .err(
            "thought",
            json!({ "thought": "too early", "nextThoughtNeeded": true, "sessionId": only_started }),
            "STAGE_REQUIREMENT_NOT_MET",
        )
        .await;
    assert_eq!(e["details"]["currentStage"], 1, "{e}");
    assert_eq!(e["details"]["requiredStage"], 2, "{e}");
    // load_context answers the session's stage, and what to call next.
    let loaded = s.ok("load_context", json!({ "sessionId": ciphered })).await;
    assert_eq!(loaded["stage"], 2);
    assert_eq!(loaded["sessionId"], ciphered.as_str());
    assert_eq!(
        loaded["nextStep"],
        format!("Call thought with sessionId \"{ciphered}\".")
    );
    // The connection takes the session's stage, as answered: get_state agrees.
    assert_eq!(s.ok("get_state", Value::Null).await["stage"], 2);
    // A cipher for a session unknown is refused; nothing is raised.
    s.err(
        "cipher",
        json!({ "sessionId": "0b6f2c1e-8d4a-4c5e-9f3b-2a7d1e6c8b90" }),
        "SESSION_NOT_FOUND",
    )
    .await;
    s.stop().await;
}

/// An overview lists at most 50 thoughts, however short, and says which
/// call reads on: on the main chain and on a branch alike.
#[tokio::test]
async fn overview_reads_list_a_page_and_say_how_to_read_on() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("many").await;
    for _ in 0..60 {
        s.thought(json!({ "thought": "short", "nextThoughtNeeded": true }))
            .await;
    }
    for i in 0..55 {
        let mut t = json!({ "thought": "aside", "branchId": "aside", "nextThoughtNeeded": true });
        if i == 0 {
            t["branchFromThought"] = json!(2);
        }
        s.thought(t).await;
    }
    let numbers = |r: &Value| -> Vec<u64> {
        r["thoughts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["thoughtNumber"].as_u64().unwrap())
            .collect()
    };
    let page = s
        .ok("read_thoughts", json!({ "sessionId": sid, "range": [1, 60] }))
        .await;
    assert_eq!(numbers(&page), (1..=50).collect::<Vec<_>>());
    assert_eq!(page["truncated"]["leftOut"], 10);
    assert_eq!(page["truncated"]["thoughts"], 0, "no text was cut");
    let rest = page["truncated"]["readRest"].clone();
    assert_eq!(rest, json!({ "sessionId": sid, "range": [51, 60] }));
    assert_eq!(
        numbers(&s.ok("read_thoughts", rest).await),
        (51..=60).collect::<Vec<_>>()
    );

    let branch = s
        .ok("read_thoughts", json!({ "sessionId": sid, "branchId": "aside" }))
        .await;
    assert_eq!(branch["count"], 50);
    let rest = branch["truncated"]["readRest"].clone();
    assert_eq!(
        rest,
        json!({ "sessionId": sid, "range": [53, 57], "branchId": "aside" })
    );
    let on = s.ok("read_thoughts", rest).await;
    assert_eq!(numbers(&on), (53..=57).collect::<Vec<_>>());
    assert!(on.get("truncated").is_none(), "{on}");
    let one = s
        .ok(
            "read_thoughts",
            json!({ "sessionId": sid, "branchId": "aside", "thoughtNumber": 57 }),
        )
        .await;
    assert_eq!(one["thoughts"][0]["nodeId"], format!("{sid}:aside:57"));

    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
    assert_eq!(got["thoughts"].as_array().unwrap().len(), 50);
    assert_eq!(got["truncated"]["leftOut"], 65, "{}", got["truncated"]);
    s.stop().await;
}

/// Overview reads cut each thought's text and the whole answer for a
/// model; one thought asked for by number, or `full: true`, is whole.
#[tokio::test]
async fn overview_reads_cut_long_thoughts_and_say_how_to_read_them_whole() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("long").await;
    let long = "x".repeat(100_000);
    for _ in 0..12 {
        s.thought(json!({ "thought": long, "nextThoughtNeeded": true })).await;
    }
    let size = |v: &Value| v.to_string().len();

    let loaded = s.ok("load_context", json!({ "sessionId": sid })).await;
    let recent = loaded["recentThoughts"].as_array().unwrap();
    assert_eq!(recent.len(), 5);
    for t in recent {
        assert_eq!(t["thought"].as_str().unwrap().len(), 4_000);
        assert_eq!(t["thoughtTruncated"], true);
        assert_eq!(t["thoughtChars"], 100_000);
    }
    assert_eq!(loaded["truncated"]["thoughts"], 5);
    assert!(
        loaded["truncated"]["readWhole"]
            .as_str()
            .unwrap()
            .contains("thoughtNumber")
    );
    assert!(size(&loaded) < 60_000, "{}", size(&loaded));

    let read = s.ok("read_thoughts", json!({ "sessionId": sid, "last": 12 })).await;
    assert!(size(&read) < 60_000, "{}", size(&read));
    let numbers: Vec<u64> = read["thoughts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["thoughtNumber"].as_u64().unwrap())
        .collect();
    // The budget (40,000 characters) goes to the newest first; the oldest
    // are left out, and the answer says how to read them.
    assert_eq!(numbers, (3..=12).collect::<Vec<_>>());
    assert_eq!(read["truncated"]["leftOut"], 2, "{read}");
    let rest = read["truncated"]["readRest"].clone();
    assert_eq!(rest, json!({ "sessionId": sid, "range": [1, 2] }));
    let older = s.ok("read_thoughts", rest).await;
    assert_eq!(older["count"], 2);
    assert!(older["truncated"].get("leftOut").is_none(), "{older}");

    let one = s
        .ok("read_thoughts", json!({ "sessionId": sid, "thoughtNumber": 3 }))
        .await;
    assert_eq!(one["thoughts"][0]["thought"].as_str().unwrap().len(), 100_000);
    assert!(one.get("truncated").is_none());
    let full = s
        .ok(
            "read_thoughts",
            json!({ "sessionId": sid, "range": [1, 2], "full": true }),
        )
        .await;
    assert_eq!(full["thoughts"][1]["thought"].as_str().unwrap().len(), 100_000);

    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
    assert!(size(&got) < 60_000, "{}", size(&got));
    assert_eq!(got["truncated"]["thoughts"], 10);
    assert_eq!(got["truncated"]["leftOut"], 2);
    let got = s
        .ok(
            "session",
            json!({ "subOperation": "get", "sessionId": sid, "full": true }),
        )
        .await;
    assert!(got.get("truncated").is_none());
    s.stop().await;
}

/// The new parameters refuse what they cannot read, change nothing, and
/// the server keeps serving.
#[tokio::test]
async fn bad_handles_and_flags_are_refused_and_change_nothing() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("flags").await;
    s.thought(t("one")).await;
    for (operation, args, field) in [
        ("read_thoughts", json!({ "sessionId": sid, "full": "maybe" }), "full"),
        (
            "session",
            json!({ "subOperation": "get", "sessionId": sid, "full": 3 }),
            "full",
        ),
        ("cipher", json!({ "sessionId": "  " }), "sessionId"),
    ] {
        let e = s.err(operation, args, "INVALID_PAYLOAD").await;
        assert_eq!(e["details"]["field"], field, "{e}");
    }
    let read = s.ok("read_thoughts", json!({ "sessionId": sid })).await;
    assert_eq!(read["count"], 1);
    // The range's lenient forms still read: decimal text in either form.
    for range in [json!(["1", "1"]), json!({ "start": "1", "end": 1 })] {
        let read = s.ok("read_thoughts", json!({ "sessionId": sid, "range": range })).await;
        assert_eq!(read["count"], 1, "{range}");
    }
    assert_eq!(s.ok("get_state", Value::Null).await["stage"], 2);
    s.stop().await;
}
