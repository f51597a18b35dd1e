//! The core flow, driven as a client would: stages, sessions, thoughts,
//! branches, revisions, reads, structure, export, search, delete.

use serde_json::{Value, json};

use crate::common::*;

#[tokio::test]
async fn one_tool_with_an_operation_enum() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let tools = s.client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0].name, "thoughtbox_gateway");
    let ops = tools[0].input_schema["properties"]["operation"]["enum"]
        .as_array()
        .unwrap()
        .clone();
    for op in [
        "get_state",
        "start_new",
        "load_context",
        "list_sessions",
        "cipher",
        "session",
        "thought",
        "read_thoughts",
        "get_structure",
    ] {
        assert!(ops.contains(&json!(op)), "{op} missing");
    }
    let info = s.client.peer_info().unwrap();
    assert_eq!(info.server_info.as_ref().unwrap().name, "thoughtbox");
    s.stop().await;
}

#[tokio::test]
async fn stages_gate_operations_and_never_go_down() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    assert_eq!(s.ok("get_state", Value::Null).await["stage"], 0);
    let e = s.err("thought", t("too early"), "STAGE_REQUIREMENT_NOT_MET").await;
    assert_eq!(e["details"]["currentStage"], 0);
    assert_eq!(e["details"]["requiredStage"], 2);
    // The whole way there, not only the next step (which would only lead
    // to the next refusal).
    let suggestion = e["details"]["suggestion"].as_str().unwrap();
    assert!(
        suggestion.contains("'start_new' (or 'load_context'), then 'cipher'"),
        "{suggestion}"
    );
    // Whole: the server's own text is never cut, so a suggestion does not end
    // mid-word.
    assert!(suggestion.ends_with("reopen: false."), "{suggestion}");
    let e = s.err("cipher", Value::Null, "STAGE_REQUIREMENT_NOT_MET").await;
    assert_eq!(e["details"]["requiredStage"], 1);
    s.err(
        "session",
        json!({ "subOperation": "list" }),
        "STAGE_REQUIREMENT_NOT_MET",
    )
    .await;
    // list_sessions works at stage 0.
    assert_eq!(s.ok("list_sessions", Value::Null).await["count"], 0);

    let started = s
        .ok(
            "start_new",
            json!({ "sessionTitle": "Debug authentication flow", "tags": ["auth"] }),
        )
        .await;
    assert_eq!(started["stage"], 1);
    let e = s.err("read_thoughts", Value::Null, "STAGE_REQUIREMENT_NOT_MET").await;
    assert!(e["details"]["suggestion"].as_str().unwrap().contains("cipher"));
    let c = s.ok("cipher", Value::Null).await;
    assert_eq!(c["stage"], 2);
    assert!(c["guide"].as_str().unwrap().len() > 2000);
    // A second start_new keeps stage 2.
    assert_eq!(s.ok("start_new", Value::Null).await["stage"], 2);
    let state = s.ok("get_state", Value::Null).await;
    assert_eq!(state["stage"], 2);
    assert!(state["activeSession"]["id"].is_string());
    s.stop().await;
}

#[tokio::test]
async fn no_stages_option_opens_everything() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.arg("serve").arg("--no-stages");
    let s = start_with((), cmd).await;
    let r = s
        .ok(
            "thought",
            json!({ "thought": "straight in", "nextThoughtNeeded": true, "sessionTitle": "auto" }),
        )
        .await;
    assert_eq!(r["thoughtNumber"], 1);
    // The next step is the next thought, not the stage flow's start_new
    // (which would leave this session for a new one) or cipher.
    let state = s.ok("get_state", Value::Null).await;
    assert_eq!(state["activeSession"]["id"], r["sessionId"]);
    assert_eq!(state["nextStep"], "Call thought to record the next step.");
    let started = s.ok("start_new", Value::Null).await;
    let id = started["sessionId"].as_str().unwrap();
    assert_eq!(started["nextStep"], format!("Call thought with sessionId \"{id}\"."));
    s.stop().await;
    let mut cmd = command(&db);
    cmd.env("THOUGHTBOX_STAGES", "off");
    let s = start_with((), cmd).await;
    s.ok("read_thoughts", json!({ "sessionId": r["sessionId"] })).await;
    s.stop().await;
}

/// The core flow: a five-thought session, auto-numbered, then closed.
#[tokio::test]
async fn core_concepts_session_and_auto_numbering() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Debug authentication flow").await;
    let texts = [
        "Users report 401 errors after token refresh...",
        "Tracing the code, I see the refresh token is stored but...",
        "Found it - the old token isn't invalidated...",
        "The fix is to clear the token cache on refresh...",
    ];
    for (i, text) in texts.iter().enumerate() {
        let r = s.thought(t(text)).await;
        assert_eq!(r["thoughtNumber"], i as u64 + 1);
        assert_eq!(r["sessionId"], sid.as_str());
        assert_eq!(r["nodeId"], format!("{sid}:{}", i + 1));
        // Minimal by default.
        assert_eq!(r.as_object().unwrap().len(), 3, "{r}");
    }
    let last = s
        .thought(json!({ "thought": "Verified: no more 401 errors after the change.", "nextThoughtNeeded": false, "verbose": true }))
        .await;
    assert_eq!(last["thoughtNumber"], 5);
    assert_eq!(last["totalThoughts"], 5);
    assert_eq!(last["sessionClosed"], true);
    assert_eq!(last["closedSessionId"], sid.as_str());
    assert_eq!(last["thoughtHistoryLength"], 5);
    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
    assert!(got["session"]["completedAt"].is_string());
    assert_eq!(got["thoughts"].as_array().unwrap().len(), 5);

    // No session is active now: the next thought starts a new one.
    let fresh = s.thought(json!({ "thought": "New problem", "nextThoughtNeeded": true, "sessionTitle": "Second", "sessionTags": ["x"] })).await;
    assert_ne!(fresh["sessionId"], sid.as_str());
    assert_eq!(fresh["thoughtNumber"], 1);
    assert_eq!(fresh["sessionCreated"], true);
    assert_eq!(fresh["sessionTitle"], "Second");
    let second = s
        .ok(
            "session",
            json!({ "subOperation": "get", "sessionId": fresh["sessionId"] }),
        )
        .await;
    assert_eq!(second["session"]["title"], "Second");
    assert_eq!(second["session"]["tags"], json!(["x"]));

    // load_context reopens the closed session (at once, not only at its
    // next thought); numbering continues.
    let updated = got["session"]["updatedAt"].clone();
    let ctx = s.ok("load_context", json!({ "sessionId": sid })).await;
    assert!(ctx["session"].get("completedAt").is_none(), "{ctx}");
    assert_eq!(ctx["reopened"], true);
    assert_eq!(ctx["previouslyCompletedAt"], got["session"]["completedAt"]);
    let open = s
        .ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
    assert!(open["session"].get("completedAt").is_none(), "{open}");
    assert_eq!(open["session"]["updatedAt"], updated, "reopening adds no reasoning");
    let md = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "format": "markdown" }),
        )
        .await;
    assert!(md["content"].as_str().unwrap().contains("**Status:** active"), "{md}");
    // Loading an open session says nothing of reopening.
    let again = s
        .ok("session", json!({ "subOperation": "resume", "sessionId": sid }))
        .await;
    assert!(again.get("reopened").is_none(), "{again}");
    assert_eq!(ctx["restorationInfo"]["currentThoughtNumber"], 5);
    assert_eq!(ctx["restorationInfo"]["message"], "Next thought will be #6");
    assert_eq!(ctx["recentThoughts"].as_array().unwrap().len(), 5);
    let r = s.thought(t("Follow-up after reopening")).await;
    assert_eq!(r["thoughtNumber"], 6);
    assert!(r.get("sessionCreated").is_none(), "{r}");
    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
    assert!(got["session"].get("completedAt").is_none());
    s.stop().await;
}

/// A client that sends thoughts and session switches without waiting for
/// each answer: each thought lands in the session that was active when it was
/// sent, and the last switch sent is the active session at the end.
#[tokio::test]
async fn thoughts_and_switches_sent_together_keep_their_order() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let first = s.ready("first").await;
    let (a1, a2, second, b1, b2) = tokio::join!(
        s.call("thought", t("a1")),
        s.call("thought", t("a2")),
        s.call("start_new", json!({ "sessionTitle": "second" })),
        s.call("thought", t("b1")),
        s.call("thought", t("b2")),
    );
    let second = second.unwrap()["session"]["id"].as_str().unwrap().to_string();
    let (a1, a2, b1, b2) = (a1.unwrap(), a2.unwrap(), b1.unwrap(), b2.unwrap());
    assert_eq!(
        (a1["thoughtNumber"].as_u64(), a2["thoughtNumber"].as_u64()),
        (Some(1), Some(2))
    );
    assert_eq!(
        (b1["thoughtNumber"].as_u64(), b2["thoughtNumber"].as_u64()),
        (Some(1), Some(2))
    );
    let state = s.ok("get_state", json!({})).await;
    assert_eq!(state["activeSession"]["id"], second, "{state}");
    let count = |id: &str| {
        let db = rusqlite::Connection::open(&db).unwrap();
        db.query_row("SELECT count(*) FROM thoughts WHERE session_id = ?1", [id], |r| {
            r.get::<_, i64>(0)
        })
        .unwrap()
    };
    assert_eq!((count(&first), count(&second)), (2, 2));
    s.stop().await;
}

/// A session closed by another server while this one still has it active:
/// the next thought here reopens it and says so, as load_context would.
#[tokio::test]
async fn a_thought_into_a_session_closed_elsewhere_says_it_reopened_it() {
    let (_d, db) = temp_db();
    let here = start(&db).await;
    let sid = here.ready("shared").await;
    here.thought(t("one")).await;
    let there = start(&db).await;
    there.ok("load_context", json!({ "sessionId": sid })).await;
    there.ok("cipher", json!({})).await;
    let closed = there
        .thought(json!({ "thought": "done", "nextThoughtNeeded": false }))
        .await;
    assert_eq!(closed["sessionClosed"], true);
    let r = here.thought(t("two")).await;
    assert_eq!(r["thoughtNumber"], 3, "{r}");
    assert_eq!(r["reopened"], true, "{r}");
    assert!(r["previouslyCompletedAt"].as_str().is_some(), "{r}");
    // Once reopened, the next thought is an ordinary one.
    let r = here.thought(t("three")).await;
    assert!(r.get("reopened").is_none(), "{r}");
    here.stop().await;
    there.stop().await;
}

/// After nextThoughtNeeded: false has closed the session, a thought that
/// refers back into it (a revision, a branch) is refused saying what is
/// going on: no session is active, the thought would start a new one, and
/// load_context continues the closed one. Nothing is created.
#[tokio::test]
async fn referring_back_after_closing_says_no_session_is_active() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("closed").await;
    s.thought(t("one")).await;
    s.thought(t("two")).await;
    let closed = s
        .thought(json!({ "thought": "done", "nextThoughtNeeded": false }))
        .await;
    assert_eq!(closed["sessionClosed"], true);
    for (args, field, what) in [
        (
            json!({ "thought": "no, 2 was wrong", "nextThoughtNeeded": true, "revisesThought": 2 }),
            "revisesThought",
            "cannot revise thought 2",
        ),
        // Unnumbered, this would be thought 1 of a new session.
        (
            json!({ "thought": "no, 1 was wrong", "nextThoughtNeeded": true, "revisesThought": 1 }),
            "revisesThought",
            "cannot revise thought 1",
        ),
        (
            json!({ "thought": "no, 1 was wrong", "nextThoughtNeeded": true, "isRevision": true, "revisesThought": 1 }),
            "revisesThought",
            "cannot revise thought 1",
        ),
        (
            json!({ "thought": "alt", "nextThoughtNeeded": true, "branchFromThought": 2, "branchId": "alt" }),
            "branchFromThought",
            "cannot branch from thought 2",
        ),
        (
            json!({ "thought": "alt", "nextThoughtNeeded": true, "branchId": "alt" }),
            "branchFromThought",
            "cannot continue branch 'alt'",
        ),
    ] {
        let e = s.err("thought", args.clone(), "INVALID_PAYLOAD").await;
        let message = e["message"].as_str().unwrap();
        assert_eq!(e["details"]["field"], field, "{e}");
        assert_eq!(e["details"]["closedSessionId"], sid.as_str(), "{e}");
        assert!(message.starts_with(what), "{message}");
        assert!(message.contains("no session is active on this connection"), "{message}");
        assert!(
            message.contains(&format!("session {sid} was closed by nextThoughtNeeded: false")),
            "{message}"
        );
        assert!(
            message.contains(&format!("load_context with sessionId {sid}")),
            "{message}"
        );
    }
    // Nothing was created, and load_context lets the revision through.
    assert_eq!(s.ok("list_sessions", Value::Null).await["total"], 1);
    s.ok("load_context", json!({ "sessionId": sid })).await;
    let r = s
        .thought(json!({ "thought": "no, 2 was wrong", "nextThoughtNeeded": true, "revisesThought": 2 }))
        .await;
    assert_eq!(r["sessionId"], sid.as_str());
    assert_eq!(r["thoughtNumber"], 4);
    s.stop().await;

    // A connection that closed nothing says no session is active, without naming one.
    let mut cmd = command(&db);
    cmd.arg("serve").arg("--no-stages");
    let s = start_with((), cmd).await;
    let e = s
        .err(
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "revisesThought": 3 }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("no session is active"), "{e}");
    assert!(e["details"].get("closedSessionId").is_none(), "{e}");
    assert_eq!(e["details"]["missingThought"], 3);
    // A bad thought number in a new session is still told as it is.
    let e = s
        .err(
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 2, "revisesThought": 2 }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("cannot revise itself"), "{e}");
    s.stop().await;
}

/// Branches A and B from thought 3, revision 6 of thought 3,
/// restorationInfo with branches.
#[tokio::test]
async fn core_concepts_branches_and_revisions() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Cache choice").await;
    for n in 1..=5 {
        s.thought(json!({ "thought": format!("main {n}"), "thoughtNumber": n, "totalThoughts": 5, "nextThoughtNeeded": true })).await;
    }
    let a4 = s
        .thought(json!({ "thought": "Alternative approach: what if we use Redis instead?", "thoughtNumber": 4,
                         "branchFromThought": 3, "branchId": "redis-approach", "nextThoughtNeeded": true, "verbose": true }))
        .await;
    assert_eq!(a4["nodeId"], format!("{sid}:redis-approach:4"));
    assert_eq!(a4["branches"], json!(["redis-approach"]));
    // Later thoughts of the branch omit branchFromThought and auto-number.
    let a5 = s
        .thought(json!({ "thought": "Redis cluster costs", "branchId": "redis-approach", "nextThoughtNeeded": true }))
        .await;
    assert_eq!(a5["thoughtNumber"], 5);
    let b4 = s
        .thought(json!({ "thought": "Or memcached", "branchFromThought": 3, "branchId": "memcached", "nextThoughtNeeded": true }))
        .await;
    assert_eq!(b4["thoughtNumber"], 4);
    let rev = s
        .thought(
            json!({ "thought": "Correction: the issue isn't in the token handling, it's in the session middleware.",
                         "thoughtNumber": 6, "isRevision": true, "revisesThought": 3, "nextThoughtNeeded": true }),
        )
        .await;
    assert_eq!(rev["thoughtNumber"], 6);

    let structure = s.ok("get_structure", Value::Null).await;
    assert_eq!(structure["mainChain"]["count"], 6);
    assert_eq!(structure["mainChain"]["range"], json!({ "first": 1, "last": 6 }));
    assert_eq!(structure["mainChain"]["head"], 1);
    assert_eq!(structure["mainChain"]["tail"], 6);
    assert_eq!(
        structure["branches"],
        json!([
            { "id": "redis-approach", "fromThought": 3, "count": 2, "range": { "first": 4, "last": 5 } },
            { "id": "memcached", "fromThought": 3, "count": 1, "range": { "first": 4, "last": 4 } }
        ])
    );
    assert_eq!(structure["revisions"], json!([{ "thoughtNumber": 6, "revises": 3 }]));
    assert_eq!(
        structure["summary"],
        json!({ "totalThoughts": 9, "totalBranches": 2, "totalRevisions": 1 })
    );

    // The graph, as exported.
    let export = s
        .ok("session", json!({ "subOperation": "export", "sessionId": sid }))
        .await;
    assert_eq!(export["format"], "json");
    let content = &export["content"];
    assert_eq!(content["version"], "1.0");
    let nodes = content["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 9);
    let node = |id: String| nodes.iter().find(|n| n["id"] == id.as_str()).unwrap().clone();
    let n3 = node(format!("{sid}:3"));
    assert_eq!(
        n3["next"],
        json!([
            format!("{sid}:4"),
            format!("{sid}:redis-approach:4"),
            format!("{sid}:memcached:4")
        ])
    );
    let ra5 = node(format!("{sid}:redis-approach:5"));
    assert_eq!(ra5["prev"], format!("{sid}:redis-approach:4"));
    assert_eq!(ra5["branchOrigin"], format!("{sid}:3"));
    assert_eq!(ra5["branchId"], "redis-approach");
    let n6 = node(format!("{sid}:6"));
    assert_eq!(n6["revisesNode"], format!("{sid}:3"));
    assert_eq!(n6["prev"], format!("{sid}:5"));
    assert_eq!(n6["data"]["isRevision"], true);

    // read_thoughts modes.
    let r = s.ok("read_thoughts", json!({ "branchId": "redis-approach" })).await;
    assert_eq!(r["count"], 2);
    assert_eq!(r["query"]["mode"], "branchId");
    let r = s.ok("read_thoughts", json!({ "range": [2, 4] })).await;
    assert_eq!(
        r["thoughts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["thoughtNumber"].clone())
            .collect::<Vec<_>>(),
        [json!(2), json!(3), json!(4)]
    );
    let r = s
        .ok("read_thoughts", json!({ "range": { "start": 5, "end": 6 } }))
        .await;
    assert_eq!(r["count"], 2);
    let r = s.ok("read_thoughts", json!({ "last": 2 })).await;
    assert_eq!(r["thoughts"][1]["thoughtNumber"], 6);
    let r = s.ok("read_thoughts", json!({ "thoughtNumber": "3" })).await;
    assert_eq!(r["thoughts"][0]["thought"], "main 3");
    assert_eq!(r["thoughts"][0]["nextThoughtNeeded"], true);
    assert!(r.get("alsoOnBranches").is_none(), "{r}");
    // A number is a main-chain thought's; the branches holding the same
    // number are named, as is how to read one of theirs.
    let r = s.ok("read_thoughts", json!({ "thoughtNumber": 5 })).await;
    assert_eq!(r["thoughts"][0]["branchId"], Value::Null, "{r}");
    assert_eq!(r["alsoOnBranches"], json!(["redis-approach"]), "{r}");
    // With branchId, a number (or range, or last) is the branch's.
    let r = s
        .ok(
            "read_thoughts",
            json!({ "branchId": "redis-approach", "thoughtNumber": 5 }),
        )
        .await;
    assert_eq!(r["thoughts"][0]["nodeId"], format!("{sid}:redis-approach:5"), "{r}");
    assert_eq!(
        r["query"],
        json!({ "mode": "thoughtNumber", "thoughtNumber": 5, "branchId": "redis-approach" })
    );
    let r = s
        .ok("read_thoughts", json!({ "branchId": "redis-approach", "last": 1 }))
        .await;
    assert_eq!(r["thoughts"][0]["nodeId"], format!("{sid}:redis-approach:5"), "{r}");
    let e = s
        .err(
            "read_thoughts",
            json!({ "branchId": "redis-approach", "thoughtNumber": 9 }),
            "THOUGHT_NOT_FOUND",
        )
        .await;
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("not found on branch 'redis-approach'"), "{message}");
    let e = s
        .err(
            "read_thoughts",
            json!({ "last": 2, "thoughtNumber": 5 }),
            "INVALID_OPERATION",
        )
        .await;
    let message = e["message"].as_str().unwrap();
    assert!(message.contains("not several"), "{message}");
    let r = s.ok("read_thoughts", Value::Null).await;
    assert_eq!(r["count"], 5);
    assert_eq!(r["query"]["default"], true);

    // Restoration counts branches and all thoughts.
    let ctx = s.ok("load_context", json!({ "sessionId": sid })).await;
    assert_eq!(ctx["restorationInfo"]["branchCount"], 2);
    assert_eq!(
        ctx["restorationInfo"]["branches"],
        json!(["redis-approach", "memcached"])
    );
    assert_eq!(ctx["restorationInfo"]["thoughtCount"], 9);
    assert_eq!(ctx["restorationInfo"]["message"], "Next thought will be #7");

    // Markdown and cipher include the branches.
    let md = s
        .ok(
            "session",
            json!({ "operation": "export", "args": { "sessionId": sid, "format": "markdown" } }),
        )
        .await;
    let md = md["content"].as_str().unwrap();
    assert!(md.contains("## Branch `redis-approach` (from thought 3)"), "{md}");
    assert!(md.contains("### Thought 6/6 (revises #3)"), "{md}");
    let c = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "format": "cipher" }),
        )
        .await;
    let c = c["content"].as_str().unwrap();
    assert!(c.contains("6R(r@3)"), "{c}");
    assert!(c.contains("## memcached b@3"), "{c}");
    assert!(c.contains(&format!("id:{sid} ")), "{c}");

    // includeMetadata: false drops the header lines of Markdown and cipher;
    // JSON keeps its session (an import needs it) and says it ignored it.
    let export = |format: &str| json!({ "subOperation": "export", "sessionId": sid, "format": format, "includeMetadata": false });
    let md = s.ok("session", export("markdown")).await;
    assert!(md.get("ignoredArguments").is_none(), "{md}");
    let md = md["content"].as_str().unwrap();
    assert!(md.starts_with("# Cache choice") && !md.contains("**Created:**"), "{md}");
    assert!(md.contains("### Thought 6/6 (revises #3)"), "{md}");
    let c = s.ok("session", export("cipher")).await;
    assert!(c.get("ignoredArguments").is_none(), "{c}");
    let c = c["content"].as_str().unwrap();
    assert!(c.starts_with("# Cache choice\n") && !c.contains("id:"), "{c}");
    assert!(c.contains("6R(r@3)"), "{c}");
    let j = s.call("session", export("json")).await.unwrap();
    assert_eq!(j["ignoredArguments"], json!(["includeMetadata"]));
    assert_eq!(j["content"]["session"]["id"], sid.as_str());
    s.stop().await;
}

#[tokio::test]
async fn backward_thinking_and_total_thoughts() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("Backward").await;
    for n in (1..=5).rev() {
        s.thought(json!({ "thought": format!("step {n}"), "thoughtNumber": n, "totalThoughts": 5, "nextThoughtNeeded": true })).await;
    }
    let r = s
        .thought(json!({ "thought": "beyond the estimate", "nextThoughtNeeded": true, "verbose": true }))
        .await;
    assert_eq!(r["thoughtNumber"], 6);
    assert_eq!(r["totalThoughts"], 6);
    let r = s
        .thought(json!({ "thought": "with guide", "nextThoughtNeeded": true, "includeGuide": true }))
        .await;
    assert!(r["guide"].as_str().unwrap().len() > 2000);
    let r = s.ok("read_thoughts", json!({ "thoughtNumber": 7 })).await;
    assert_eq!(r["thoughts"][0]["includeGuide"], true);
    s.stop().await;
}

#[tokio::test]
async fn sessions_list_search_resume_delete() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let a = s
        .ok(
            "start_new",
            json!({ "sessionTitle": "Token refresh bug", "newWork": { "project": "web", "task": "auth" } }),
        )
        .await;
    let a = a["session"]["id"].as_str().unwrap().to_string();
    s.ok("session", json!({ "subOperation": "get", "sessionId": a })).await;
    s.ok("cipher", Value::Null).await;
    s.thought(t("The refresh token is never rotated; the middleware caches it"))
        .await;
    let b = s
        .ok(
            "start_new",
            json!({ "sessionTitle": "Pick a queue", "tags": ["project:web"], "description": "Kafka or SQS" }),
        )
        .await;
    let b = b["session"]["id"].as_str().unwrap().to_string();
    s.thought(t("SQS is simpler to run")).await;
    s.ok(
        "start_new",
        json!({ "sessionTitle": "Unrelated", "newWork": { "project": "ops" } }),
    )
    .await;

    let all = s.ok("session", json!({ "subOperation": "list" })).await;
    assert_eq!(all["total"], 3);
    // Newest update first: the empty "Unrelated" was created last.
    assert_eq!(all["sessions"][0]["title"], "Unrelated");
    let web = s.ok("list_sessions", json!({ "project": "web" })).await;
    assert_eq!(web["total"], 2);
    let web_auth = s
        .ok(
            "list_sessions",
            json!({ "filters": { "project": "web", "task": "auth" } }),
        )
        .await;
    assert_eq!(web_auth["total"], 1);
    assert_eq!(web_auth["sessions"][0]["id"], a.as_str());
    let page = s
        .ok(
            "session",
            json!({ "subOperation": "list", "limit": 1, "offset": 1, "sortBy": "title", "sortOrder": "asc" }),
        )
        .await;
    assert_eq!(page["sessions"][0]["title"], "Token refresh bug");
    assert_eq!(page["hasMore"], true);
    let by_text = s
        .ok("session", json!({ "subOperation": "list", "search": "kafka" }))
        .await;
    assert_eq!(by_text["sessions"][0]["id"], b.as_str());

    // Words that no one thought holds together: said why.
    let apart = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "middleware zebra" }),
        )
        .await;
    assert_eq!(apart["count"], 0, "{apart}");
    assert!(
        apart["note"].as_str().unwrap().contains("all the words in one thought"),
        "{apart}"
    );
    // Search finds thought text with numbers and snippets, and titles.
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "middleware" }))
        .await;
    assert!(found.get("note").is_none(), "{found}");
    assert_eq!(found["count"], 1);
    assert_eq!(
        (found["limit"].clone(), found["limitReached"].clone()),
        (json!(10), json!(false))
    );
    assert_eq!(found["sessions"][0]["id"], a.as_str());
    assert_eq!(found["sessions"][0]["matches"][0]["thoughtNumber"], 1);
    assert!(
        found["sessions"][0]["matches"][0]["snippet"]
            .as_str()
            .unwrap()
            .contains("[middleware]")
    );
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "queue" }))
        .await;
    assert_eq!(found["sessions"][0]["matchedSession"], true);
    // Search has no pages: an answer that stopped at the limit says so
    // (both "web" sessions match by their project tag)...
    let capped = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "web", "limit": 1 }),
        )
        .await;
    assert_eq!(capped["count"], 1);
    assert_eq!(capped["limit"], 1);
    assert_eq!(capped["limitReached"], true);
    // ...and one that did not, even at the limit, says that.
    let whole = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "middleware", "limit": 1 }),
        )
        .await;
    assert_eq!(
        (whole["count"].clone(), whole["limitReached"].clone()),
        (json!(1), json!(false))
    );

    // Reads do not change updatedAt.
    let before =
        s.ok("session", json!({ "subOperation": "get", "sessionId": a })).await["session"]["updatedAt"].clone();
    // UUIDs are case-insensitive: an id echoed in upper case names the same session.
    let resumed = s
        .ok(
            "session",
            json!({ "subOperation": "resume", "sessionId": a.to_uppercase() }),
        )
        .await;
    assert_eq!(resumed["session"]["id"], a.as_str(), "{resumed}");
    s.ok("read_thoughts", Value::Null).await;
    s.ok("get_structure", Value::Null).await;
    let after = s.ok("session", json!({ "subOperation": "get", "sessionId": a })).await["session"]["updatedAt"].clone();
    assert_eq!(before, after);
    // resume made `a` active.
    assert_eq!(s.thought(t("back on a")).await["thoughtNumber"], 2);

    let d = s
        .ok("session", json!({ "subOperation": "delete", "sessionId": a }))
        .await;
    assert_eq!(d["thoughtsDeleted"], 2);
    s.err(
        "session",
        json!({ "subOperation": "get", "sessionId": a }),
        "SESSION_NOT_FOUND",
    )
    .await;
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "middleware" }))
        .await;
    assert_eq!(found["count"], 0);
    // The deleted session was active: reads need a session again, and the
    // next thought starts a new one and says so.
    s.err("read_thoughts", Value::Null, "INVALID_PAYLOAD").await;
    let fresh = s.thought(t("after the delete")).await;
    assert_ne!(fresh["sessionId"], a.as_str());
    assert_eq!(fresh["thoughtNumber"], 1);
    assert_eq!(fresh["sessionCreated"], true);
    assert!(
        fresh["sessionTitle"]
            .as_str()
            .unwrap()
            .starts_with("Reasoning session "),
        "{fresh}"
    );
    s.stop().await;
}

#[tokio::test]
async fn critique_without_sampling_still_records_the_thought() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("crit").await;
    let r = s
        .thought(json!({ "thought": "Ship it", "nextThoughtNeeded": true, "critique": true }))
        .await;
    assert_eq!(r["thoughtNumber"], 1);
    assert!(r["critique"].is_null());
    assert_eq!(r["critiqueError"]["code"], "SAMPLING_NOT_SUPPORTED");
    let read = s
        .ok("read_thoughts", json!({ "sessionId": sid, "thoughtNumber": 1 }))
        .await;
    assert!(read["thoughts"][0].get("critique").is_none());
    s.stop().await;
}

#[tokio::test]
async fn critique_through_sampling_is_stored_and_exported() {
    let (_d, db) = temp_db();
    let s = start_with(TestClient::critic(), command(&db)).await;
    let sid = s.ready("crit").await;
    s.thought(t("The cache is the problem")).await;
    let r = s
        .thought(json!({ "thought": "So we remove the cache", "nextThoughtNeeded": true, "critique": true, "verbose": true }))
        .await;
    assert_eq!(r["critique"]["model"], "test-model-1");
    assert!(r["critique"]["text"].as_str().unwrap().starts_with("Critique:"));
    let read = s.ok("read_thoughts", json!({ "thoughtNumber": 2 })).await;
    assert_eq!(read["thoughts"][0]["critique"]["model"], "test-model-1");
    let md = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "format": "markdown" }),
        )
        .await;
    assert!(md["content"].as_str().unwrap().contains("**Critique** (test-model-1)"));
    s.stop().await;
}

/// What an agent might take for a close, or for continuing, is said in the
/// answer: `nextThoughtNeeded: false` on a branch closes nothing, and a
/// thought after a close starts a new session, naming the closed one.
#[tokio::test]
async fn answers_say_what_a_close_did_and_did_not_do() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("closing").await;
    s.thought(t("one")).await;
    let r = s
        .thought(
            json!({ "thought": "alt done", "nextThoughtNeeded": false, "branchId": "alt", "branchFromThought": 1 }),
        )
        .await;
    assert!(r.get("sessionClosed").is_none(), "{r}");
    assert!(r["note"].as_str().unwrap().contains("closes nothing"), "{r}");
    let r = s
        .thought(json!({ "thought": "done", "nextThoughtNeeded": false }))
        .await;
    assert_eq!(r["sessionClosed"], true);
    assert!(r.get("note").is_none(), "{r}");
    let r = s.thought(t("afterthought")).await;
    assert_eq!(r["sessionCreated"], true);
    assert_eq!(r["previousSessionId"], sid.as_str());
    assert!(r["note"].as_str().unwrap().contains("load_context"), "{r}");
    // The next one goes on in the new session, without the note.
    let r = s.thought(t("more")).await;
    assert!(r.get("note").is_none() && r.get("sessionCreated").is_none(), "{r}");
    s.stop().await;
}

/// A new connection looks at a finished session without changing it
/// (the reads need stage 1, and a plain load_context reopens the session):
/// `load_context` with `reopen: false` opens it to read, it stays completed
/// until a thought is recorded in it. A session id given shortened is named
/// back; `list_sessions` takes `tag` and `query`, and an empty search says
/// where thought text is searched.
#[tokio::test]
async fn a_completed_session_is_read_without_reopening_it() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Finished heron study").await;
    s.ok("session", json!({ "subOperation": "list" })).await;
    s.thought(t("herons stand still")).await;
    s.thought(json!({ "thought": "so they wait", "nextThoughtNeeded": false }))
        .await;
    let other = s
        .ok("start_new", json!({ "sessionTitle": "Other", "tags": ["birds"] }))
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    s.stop().await;

    let s = start(&db).await;
    // Shortened or upper case: named back.
    let e = s
        .err("load_context", json!({ "sessionId": &sid[..8] }), "SESSION_NOT_FOUND")
        .await;
    assert_eq!(e["details"]["didYouMean"], sid.as_str(), "{e}");
    assert!(e["message"].as_str().unwrap().contains("Finished heron study"), "{e}");
    let e = s
        .err(
            "load_context",
            json!({ "sessionId": sid[..13].to_uppercase() }),
            "SESSION_NOT_FOUND",
        )
        .await;
    assert_eq!(e["details"]["didYouMean"], sid.as_str(), "{e}");
    // Not an id and no session's title: the plain answer.
    let e = s
        .err("load_context", json!({ "sessionId": "heron" }), "SESSION_NOT_FOUND")
        .await;
    assert!(e["details"].get("didYouMean").is_none(), "{e}");
    // A session's title, in any case: named back.
    let e = s
        .err(
            "load_context",
            json!({ "sessionId": " finished HERON study" }),
            "SESSION_NOT_FOUND",
        )
        .await;
    assert_eq!(e["details"]["didYouMean"], sid.as_str(), "{e}");
    // list_sessions: `tag` and `query` filter; an empty search says more.
    let listed = s.ok("list_sessions", json!({ "tag": "birds" })).await;
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(listed["sessions"][0]["id"], other.as_str());
    let listed = s.ok("list_sessions", json!({ "query": "heron" })).await;
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(listed["sessions"][0]["id"], sid.as_str());
    // By status, not every one.
    let listed = s.ok("list_sessions", json!({ "status": "completed" })).await;
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(listed["sessions"][0]["id"], sid.as_str());
    let listed = s.ok("list_sessions", json!({ "status": "active" })).await;
    assert_eq!(listed["total"], 1, "{listed}");
    assert_eq!(listed["sessions"][0]["id"], other.as_str());
    // Nothing with this status: the answer says the other status has some.
    let listed = s
        .ok("list_sessions", json!({ "search": "heron", "status": "active" }))
        .await;
    assert_eq!(
        (listed["total"].as_u64(), listed["otherStatusTotal"].as_u64()),
        (Some(0), Some(1)),
        "{listed}"
    );
    let e = s
        .err("list_sessions", json!({ "status": "open" }), "INVALID_PAYLOAD")
        .await;
    assert_eq!(e["details"]["field"], "status", "{e}");
    let listed = s.ok("list_sessions", json!({ "search": "stand" })).await;
    assert_eq!(listed["total"], 0, "{listed}");
    assert!(
        listed["note"].as_str().unwrap().contains("subOperation search"),
        "{listed}"
    );

    // To read, nothing is written: another program holding the write lock
    // (an import, a sqlite3 shell inside a transaction) does not keep the
    // reader out.
    let accessed: String = {
        let db = rusqlite::Connection::open(&db).unwrap();
        db.query_row("SELECT last_accessed_at FROM sessions WHERE id = ?1", [&sid], |r| {
            r.get(0)
        })
        .unwrap()
    };
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let ctx = s.ok("load_context", json!({ "sessionId": sid, "reopen": false })).await;
    holder.execute_batch("COMMIT").unwrap();
    assert_eq!(ctx["session"]["lastAccessedAt"], accessed.as_str(), "{ctx}");
    assert!(ctx.get("reopened").is_none(), "{ctx}");
    let completed_at = ctx["session"]["completedAt"].clone();
    assert!(completed_at.is_string(), "{ctx}");
    assert!(ctx["note"].as_str().unwrap().contains("stays so"), "{ctx}");
    // What to do next is a read: a thought would reopen it, and get_state
    // says so too. The session had the cipher (its stage is kept with it),
    // so every read is open on this new connection.
    let read_next = |v: &Value| {
        assert_eq!(v["stage"], 2, "{v}");
        let step = v["nextStep"].as_str().unwrap().to_string();
        assert!(
            step.contains("read_thoughts, get_structure, session export") && step.contains("reopens it"),
            "{v}"
        );
    };
    read_next(&ctx);
    let state = s.ok("get_state", Value::Null).await;
    assert_eq!(state["activeSession"]["status"], "completed", "{state}");
    read_next(&state);
    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
    assert_eq!(got["session"]["completedAt"], completed_at);
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "stand" }))
        .await;
    assert!(found.to_string().contains("herons [stand] still"), "{found}");
    // A thought recorded here reopens it, and says so. (An agent that has
    // read the guide unlocks stage 2 without it.)
    let c = s.ok("cipher", json!({ "brief": true })).await;
    assert_eq!(c["stage"], 2, "{c}");
    assert!(c.get("guide").is_none(), "{c}");
    assert_eq!(c["guideResource"], "thoughtbox://cipher");
    // At stage 2, every read.
    let state = s.ok("get_state", Value::Null).await;
    let step = state["nextStep"].as_str().unwrap();
    assert!(step.contains("read_thoughts, get_structure, session export"), "{state}");
    let r = s.thought(t("and then strike")).await;
    assert_eq!(r["thoughtNumber"], 3, "{r}");
    assert_eq!(r["reopened"], true, "{r}");
    assert_eq!(r["previouslyCompletedAt"], completed_at);
    s.stop().await;
}

/// A thought read back later says it was corrected (else an agent reuses a
/// figure it had revised): `revisedBy` in read_thoughts, load_context,
/// session get and search matches, and "(revised by #n)" in the Markdown
/// export.
#[tokio::test]
async fn a_revised_thought_says_so_wherever_it_is_read() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Revised figures").await;
    s.thought(t("the cache holds 3 GB of pelican data")).await;
    s.thought(t("so one node is enough")).await;
    s.thought(
        json!({ "thought": "correction: 30 GB of pelican data", "revisesThought": 1, "nextThoughtNeeded": true }),
    )
    .await;
    s.thought(json!({ "thought": "correction again: 300 GB", "revisesThought": 3, "nextThoughtNeeded": true }))
        .await;
    s.thought(json!({ "thought": "and the node figure too", "revisesThought": 1, "nextThoughtNeeded": true }))
        .await;
    let r = s.ok("read_thoughts", json!({ "thoughtNumber": 1 })).await;
    assert_eq!(r["thoughts"][0]["revisedBy"], json!([3, 5]), "{r}");
    let r = s.ok("read_thoughts", json!({ "range": [2, 4] })).await;
    assert!(r["thoughts"][0].get("revisedBy").is_none(), "{r}");
    assert_eq!(r["thoughts"][1]["revisedBy"], json!([4]), "{r}");
    let ctx = s.ok("load_context", json!({ "sessionId": sid })).await;
    assert_eq!(ctx["recentThoughts"][0]["revisedBy"], json!([3, 5]), "{ctx}");
    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
    assert_eq!(got["thoughts"][0]["revisedBy"], json!([3, 5]), "{got}");
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "pelican" }))
        .await;
    let matches = found["sessions"][0]["matches"].as_array().unwrap();
    let first = matches.iter().find(|m| m["thoughtNumber"] == 1).unwrap();
    assert_eq!(first["revisedBy"], json!([3, 5]), "{found}");
    // The session each match is listed under names it once.
    assert!(first.get("sessionId").is_none(), "{found}");
    assert_eq!(matches.len(), 2, "{found}");
    // At most so many matches per session: its best.
    let one = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "pelican", "matchesPerSession": 1 }),
        )
        .await;
    let kept = one["sessions"][0]["matches"].as_array().unwrap();
    assert_eq!(kept.len(), 1, "{one}");
    let best = matches
        .iter()
        .max_by(|a, b| a["score"].as_f64().unwrap().total_cmp(&b["score"].as_f64().unwrap()))
        .unwrap();
    assert_eq!(kept[0]["nodeId"], best["nodeId"], "{one}");
    let md = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "format": "markdown" }),
        )
        .await;
    let md = md["content"].as_str().unwrap();
    assert!(md.contains("### Thought 1/1 (revised by #3, #5)"), "{md}");
    assert!(md.contains("### Thought 3/3 (revises #1) (revised by #4)"), "{md}");
    // Resumed after a thought on a branch: where it was, not only the main
    // chain's next number.
    assert!(ctx["restorationInfo"].get("lastRecordedOnBranch").is_none(), "{ctx}");
    s.thought(json!({ "thought": "what if smaller nodes", "branchId": "small", "branchFromThought": 2, "nextThoughtNeeded": true }))
        .await;
    let ctx = s.ok("load_context", json!({ "sessionId": sid })).await;
    assert_eq!(
        ctx["restorationInfo"]["lastRecordedOnBranch"],
        json!({ "nodeId": format!("{sid}:small:3"), "branchId": "small", "thoughtNumber": 3, "nextThoughtNumber": 4 }),
        "{ctx}"
    );
    assert_eq!(ctx["restorationInfo"]["message"], "Next thought will be #6");
    // A new branch from number 3, which branch `small` also has: the
    // answer says the fork is main-chain thought 3.
    s.ok("cipher", json!({ "brief": true })).await;
    let r = s
        .thought(
            json!({ "thought": "deeper", "branchId": "deeper", "branchFromThought": 3, "nextThoughtNeeded": true }),
        )
        .await;
    let note = r["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("forks from main-chain thought 3") && note.contains("small"),
        "{r}"
    );
    let r = s
        .thought(json!({ "thought": "plain", "branchId": "plain", "branchFromThought": 1, "nextThoughtNeeded": true }))
        .await;
    assert!(r.get("note").is_none(), "{r}");
    // Numbered by hand out of order: the branch's next number follows its
    // highest, not the thought recorded last.
    s.thought(json!({ "thought": "ten", "branchId": "plain", "thoughtNumber": 10, "nextThoughtNeeded": true }))
        .await;
    s.thought(json!({ "thought": "seven", "branchId": "plain", "thoughtNumber": 7, "nextThoughtNeeded": true }))
        .await;
    let ctx = s.ok("load_context", json!({ "sessionId": sid })).await;
    let last = &ctx["restorationInfo"]["lastRecordedOnBranch"];
    assert_eq!(
        (last["thoughtNumber"].as_u64(), last["nextThoughtNumber"].as_u64()),
        (Some(7), Some(11)),
        "{ctx}"
    );
    let r = s
        .thought(json!({ "thought": "next", "branchId": "plain", "nextThoughtNeeded": true }))
        .await;
    assert_eq!(r["thoughtNumber"], 11);
    // The same title again: a new session, and a note naming the other.
    let again = s.ok("start_new", json!({ "sessionTitle": "revised FIGURES" })).await;
    assert_ne!(again["session"]["id"], sid.as_str());
    assert_eq!(again["sameTitleSessionId"], sid.as_str(), "{again}");
    let fresh = s.ok("start_new", json!({ "sessionTitle": "Unique" })).await;
    assert!(fresh.get("note").is_none(), "{fresh}");
    s.stop().await;
}

/// After nextThoughtNeeded: false, a thought numbered above 1 is refused as
/// a revision or a branch there is (not started as a new session whose only
/// thought is #5): it names the closed session and says how to continue it or
/// start a new one. Nothing is created; a thought numbered 1 starts a new
/// session, and after load_context the numbered one goes on.
#[tokio::test]
async fn a_numbered_thought_after_closing_starts_no_session() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("closed").await;
    for text in ["one", "two", "three"] {
        s.thought(t(text)).await;
    }
    let closed = s
        .thought(json!({ "thought": "done", "nextThoughtNeeded": false }))
        .await;
    assert_eq!(closed["sessionClosed"], true);
    // get_state points to start_new with a title rather than to a thought
    // that would start a session with a generated one.
    let state = s.ok("get_state", Value::Null).await;
    let next = state["nextStep"].as_str().unwrap();
    assert!(
        next.contains("start_new with a sessionTitle") && next.contains("load_context"),
        "{next}"
    );
    // Reads of "the session" right after the close name the one closed
    // (not only that no session is active).
    for (op, args) in [
        ("read_thoughts", json!({})),
        ("get_structure", json!({})),
        ("deep_analysis", json!({})),
        ("session", json!({ "subOperation": "export" })),
        ("session", json!({ "subOperation": "analyze" })),
    ] {
        let e = s.err(op, args, "INVALID_PAYLOAD").await;
        assert_eq!(e["details"]["field"], "sessionId", "{op}: {e}");
        assert_eq!(e["details"]["closedSessionId"], sid.as_str(), "{op}: {e}");
        let message = e["message"].as_str().unwrap();
        assert!(message.contains(&format!("pass sessionId {sid}")), "{op}: {message}");
    }
    for n in [json!(5), json!("2")] {
        let e = s
            .err(
                "thought",
                json!({ "thought": "five", "nextThoughtNeeded": false, "thoughtNumber": n }),
                "INVALID_PAYLOAD",
            )
            .await;
        assert_eq!(e["details"]["field"], "thoughtNumber", "{e}");
        assert_eq!(e["details"]["closedSessionId"], sid.as_str(), "{e}");
        assert_eq!(e["details"]["wouldCreateSession"], true, "{e}");
        let message = e["message"].as_str().unwrap();
        assert!(message.contains("no session is active on this connection"), "{message}");
        assert!(
            message.contains(&format!("load_context with sessionId {sid}")),
            "{message}"
        );
        assert!(message.contains("start_new"), "{message}");
    }
    // Nothing was created, and the closed session is as it was.
    assert_eq!(s.ok("list_sessions", Value::Null).await["total"], 1);
    let got = s
        .ok(
            "session",
            json!({ "subOperation": "get", "sessionId": sid, "includeThoughts": false }),
        )
        .await;
    assert_eq!(got["session"]["thoughtCount"], 4);
    assert!(got["session"]["completedAt"].is_string(), "{got}");
    // Numbered 1, it starts a new session as an unnumbered one does.
    let fresh = s
        .thought(json!({ "thought": "new problem", "nextThoughtNeeded": false, "thoughtNumber": 1 }))
        .await;
    assert_eq!(fresh["sessionCreated"], true);
    assert_eq!(fresh["thoughtNumber"], 1);
    // Continued with load_context, the numbered thought goes in.
    s.ok("load_context", json!({ "sessionId": sid })).await;
    let r = s
        .thought(json!({ "thought": "five", "nextThoughtNeeded": true, "thoughtNumber": 5 }))
        .await;
    assert_eq!(r["sessionId"], sid.as_str());
    assert_eq!(r["thoughtNumber"], 5);
    s.stop().await;
}

/// A session with 120 matches beside one with 3. Cut from a pool shared by
/// all sessions, the matches were 5 shown with "42 more" by default, and 47
/// shown with nothing said of the other 73 when 100 were asked for; each
/// session brings its own best and counts the rest.
#[tokio::test]
async fn session_search_counts_every_match_a_session_leaves_out() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let big = s.ready("big").await;
    for i in 0..120 {
        s.thought(t(&format!("walrus sighting {i} on the ice"))).await;
    }
    let small = s.ready("small").await;
    for i in 0..3 {
        s.thought(t(&format!("one walrus, far away ({i})"))).await;
    }
    let search = |limit: u32, per_session: Option<u32>| {
        let mut args = json!({ "subOperation": "search", "query": "walrus", "limit": limit });
        if let Some(n) = per_session {
            args["matchesPerSession"] = json!(n);
        }
        let s = &s;
        async move { s.ok("session", args).await }
    };
    let of = |found: &Value, id: &str| -> Value {
        found["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} missing: {found}"))
    };
    let found = search(10, None).await;
    assert_eq!(found["limitReached"], false, "{found}");
    let b = of(&found, &big);
    assert_eq!(b["matches"].as_array().unwrap().len(), 5, "{found}");
    assert_eq!(b["moreMatches"], 115, "{found}");
    assert!(b.get("moreMatchesAtLeast").is_none(), "{found}");
    let sm = of(&found, &small);
    assert_eq!(sm["matches"].as_array().unwrap().len(), 3, "{found}");
    assert!(sm.get("moreMatches").is_none(), "{found}");
    for limit in [10, 2] {
        let found = search(limit, Some(100)).await;
        assert_eq!(found["limitReached"], false, "{found}");
        let b = of(&found, &big);
        assert_eq!(b["matches"].as_array().unwrap().len(), 100, "{found}");
        assert_eq!(b["moreMatches"], 20, "{found}");
        assert_eq!(of(&found, &small)["matches"].as_array().unwrap().len(), 3, "{found}");
    }
    // One session answered: the other is left out, and that is said.
    let found = search(1, Some(5)).await;
    assert_eq!(
        (found["count"].clone(), found["limitReached"].clone()),
        (json!(1), json!(true))
    );
    s.stop().await;
}

/// An empty session search beside a matching note does not say "nothing
/// matched every word": it speaks of sessions only, and a one-word search
/// that finds no session says what was searched.
#[tokio::test]
async fn an_empty_session_search_says_what_it_searched() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ok(
        "start_new",
        json!({ "sessionTitle": "Orders cache", "domain": "backend" }),
    )
    .await;
    s.ok("cipher", Value::Null).await;
    s.ok(
        "knowledge",
        json!({ "subOperation": "write_scratchpad", "topic": "open questions",
                "content": "Do we need cache warming? Also TTL jitter." }),
    )
    .await;
    let found = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "cache warming", "include": ["patterns", "notes"] }),
        )
        .await;
    assert_eq!(found["count"], 0, "{found}");
    assert_eq!(found["notes"].as_array().unwrap().len(), 1, "{found}");
    let note = found["note"].as_str().unwrap();
    assert!(note.starts_with("no session matched every word"), "{found}");
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "backend" }))
        .await;
    assert_eq!(found["count"], 0, "{found}");
    let note = found["note"].as_str().unwrap();
    assert!(
        note.starts_with("no session matched") && note.contains("not their domain"),
        "{found}"
    );
    s.stop().await;
}

/// A session with many matches brings its best five unless asked for more,
/// and says how many it left out (not 50 matches of one session, ~7 KB, by
/// default).
#[tokio::test]
async fn session_search_brings_five_matches_of_a_session_by_default() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("herons").await;
    for i in 0..8 {
        s.thought(t(&format!("heron sighting number {i} by the lake"))).await;
    }
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "heron" }))
        .await;
    let session = &found["sessions"][0];
    assert_eq!(session["matches"].as_array().unwrap().len(), 5, "{found}");
    assert_eq!(session["moreMatches"], 3, "{found}");
    let all = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "heron", "matchesPerSession": 8 }),
        )
        .await;
    let session = &all["sessions"][0];
    assert_eq!(session["matches"].as_array().unwrap().len(), 8, "{all}");
    assert!(session.get("moreMatches").is_none(), "{all}");
    s.stop().await;
}

/// Thoughts sent in step lines, as the cipher guide teaches, export in
/// cipher with their own step prefixes after the thought's number (no second
/// type letter) and their lines apart; prose as before (not `1O 1O dashboard:
/// ... since v2.3 2H(.1) missing index ...`).
#[tokio::test]
async fn the_cipher_export_keeps_a_thought_in_step_lines_readable() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Login latency").await;
    s.thought(t(
        "1O dashboard: p95 `/login` 120ms -> 840ms since v2.3\n2H(.1) missing index on `sessions.user_id` [+]\n3P chk query plan",
    ))
    .await;
    s.thought(
        json!({ "thought": "1R(r@1) index exists; cause is lock contention [++]\n2C(.1) => tune pool",
                      "revisesThought": 1, "nextThoughtNeeded": true }),
    )
    .await;
    s.thought(t("So the pool size is the fix.\nRaise it to 40.")).await;
    s.thought(t("1 thing left: measure again")).await;
    let c = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "format": "cipher", "includeMetadata": false }),
        )
        .await;
    let c = c["content"].as_str().unwrap();
    assert_eq!(
        c,
        "# Login latency\n\n\
         1: 1O dashboard: p95 `/login` 120ms -> 840ms since v2.3 ¦ 2H(.1) missing index on `sessions.user_id` [+] ¦ \
         3P chk query plan\n\
         2(r@1): 1R(r@1) index exists; cause is lock contention [++] ¦ 2C(.1) => tune pool\n\
         3O So the pool size is the fix. ¦ Raise it to 40.\n\
         4O 1 thing left: measure again\n",
        "{c}"
    );
    s.stop().await;
}

/// Every answer lists branches in creation order: get_structure,
/// load_context's restorationInfo, and the exports (the Markdown and cipher
/// exports had them by name).
#[tokio::test]
async fn exports_list_branches_in_creation_order() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Caching layer").await;
    s.thought(t("Cache the orders API")).await;
    for b in ["redis", "inproc"] {
        s.thought(
            json!({ "thought": format!("Try {b}"), "branchId": b, "branchFromThought": 1,
                          "nextThoughtNeeded": true }),
        )
        .await;
        // Times in milliseconds: two branches of the same one go by name.
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let structure = s.ok("get_structure", Value::Null).await;
    let ids: Vec<&str> = structure["branches"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["redis", "inproc"], "{structure}");
    let ctx = s.ok("load_context", json!({ "sessionId": sid })).await;
    assert_eq!(ctx["restorationInfo"]["branches"], json!(["redis", "inproc"]), "{ctx}");
    let export = |format: &str| json!({ "subOperation": "export", "sessionId": sid, "format": format });
    let md = s.ok("session", export("markdown")).await;
    let md = md["content"].as_str().unwrap();
    let at = |text: &str, what: &str| text.find(what).unwrap_or_else(|| panic!("no {what:?} in {text}"));
    assert!(at(md, "## Branch `redis`") < at(md, "## Branch `inproc`"), "{md}");
    let c = s.ok("session", export("cipher")).await;
    let c = c["content"].as_str().unwrap();
    assert!(at(c, "## redis b@1") < at(c, "## inproc b@1"), "{c}");
    let j = s.ok("session", export("json")).await;
    let chains: Vec<Value> = j["content"]["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["branchId"].clone())
        .collect();
    assert_eq!(chains, [Value::Null, json!("redis"), json!("inproc")], "{j}");
    s.stop().await;
}
