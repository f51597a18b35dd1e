//! Every operation answers bad input with an ErrorPayload carrying the
//! documented code (and the field, for INVALID_PAYLOAD), writes nothing, and the
//! server keeps serving.

use serde_json::{Map, Value, json};

use crate::common::*;

/// A gateway call's arguments written as one JSON object.
fn object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("not an object: {other}"),
    }
}

/// (operation, args, expected code, expected details.field)
fn cases(sid: &str) -> Vec<(&'static str, Value, &'static str, Option<&'static str>)> {
    let big = "x".repeat((1 << 20) + 1);
    vec![
        // Gateway shape.
        ("nope", json!({}), "INVALID_OPERATION", None),
        ("thought", json!(3), "INVALID_PAYLOAD", Some("args")),
        ("thought", json!("text"), "INVALID_PAYLOAD", Some("args")),
        ("thought", json!([1, 2]), "INVALID_PAYLOAD", Some("args")),
        // thought: types and ranges.
        (
            "thought",
            json!({ "nextThoughtNeeded": true }),
            "INVALID_PAYLOAD",
            Some("thought"),
        ),
        (
            "thought",
            json!({ "thought": "", "nextThoughtNeeded": true }),
            "INVALID_PAYLOAD",
            Some("thought"),
        ),
        (
            "thought",
            json!({ "thought": "\u{200B} \u{FEFF}", "nextThoughtNeeded": true }),
            "INVALID_PAYLOAD",
            Some("thought"),
        ),
        (
            "thought",
            json!({ "thought": "\u{0}hello", "nextThoughtNeeded": true }),
            "INVALID_PAYLOAD",
            Some("thought"),
        ),
        (
            "start_new",
            json!({ "sessionTitle": "\u{0}title" }),
            "INVALID_PAYLOAD",
            Some("sessionTitle"),
        ),
        (
            "start_new",
            json!({ "sessionTitle": "\u{200B}\u{FEFF}" }),
            "INVALID_PAYLOAD",
            Some("sessionTitle"),
        ),
        (
            "thought",
            json!({ "thought": 5, "nextThoughtNeeded": true }),
            "INVALID_PAYLOAD",
            Some("thought"),
        ),
        (
            "thought",
            json!({ "thought": "x" }),
            "INVALID_PAYLOAD",
            Some("nextThoughtNeeded"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": "maybe" }),
            "INVALID_PAYLOAD",
            Some("nextThoughtNeeded"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": 1 }),
            "INVALID_PAYLOAD",
            Some("nextThoughtNeeded"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "thoughtNumber": "seven" }),
            "INVALID_PAYLOAD",
            Some("thoughtNumber"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 0 }),
            "INVALID_PAYLOAD",
            Some("thoughtNumber"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "thoughtNumber": -2 }),
            "INVALID_PAYLOAD",
            Some("thoughtNumber"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 1.5 }),
            "INVALID_PAYLOAD",
            Some("thoughtNumber"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "thoughtNumber": [1] }),
            "INVALID_PAYLOAD",
            Some("thoughtNumber"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "totalThoughts": 0 }),
            "INVALID_PAYLOAD",
            Some("totalThoughts"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 1 }),
            "INVALID_PAYLOAD",
            Some("thoughtNumber"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "revisesThought": 99 }),
            "INVALID_PAYLOAD",
            Some("revisesThought"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "isRevision": true }),
            "INVALID_PAYLOAD",
            Some("revisesThought"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 4, "revisesThought": 4 }),
            "INVALID_PAYLOAD",
            Some("revisesThought"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "branchId": "alt" }),
            "INVALID_PAYLOAD",
            Some("branchFromThought"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "branchId": "alt", "branchFromThought": 42 }),
            "INVALID_PAYLOAD",
            Some("branchFromThought"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "branchId": "../../x", "branchFromThought": 1 }),
            "INVALID_PAYLOAD",
            Some("branchId"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "branchId": "A B", "branchFromThought": 1 }),
            "INVALID_PAYLOAD",
            Some("branchId"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "branchId": "x".repeat(65), "branchFromThought": 1 }),
            "INVALID_PAYLOAD",
            Some("branchId"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "branchFromThought": 1 }),
            "INVALID_PAYLOAD",
            Some("branchId"),
        ),
        (
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "verbose": "loud" }),
            "INVALID_PAYLOAD",
            Some("verbose"),
        ),
        (
            "thought",
            json!({ "thought": big, "nextThoughtNeeded": true }),
            "INVALID_PAYLOAD",
            Some("thought"),
        ),
        // read_thoughts.
        (
            "read_thoughts",
            json!({ "thoughtNumber": 99 }),
            "THOUGHT_NOT_FOUND",
            None,
        ),
        (
            "read_thoughts",
            json!({ "branchId": "nope" }),
            "THOUGHT_NOT_FOUND",
            None,
        ),
        (
            "read_thoughts",
            json!({ "branchId": "../x" }),
            "INVALID_PAYLOAD",
            Some("branchId"),
        ),
        (
            "read_thoughts",
            json!({ "last": 2, "thoughtNumber": 1 }),
            "INVALID_OPERATION",
            None,
        ),
        (
            "read_thoughts",
            json!({ "range": [3, 1] }),
            "INVALID_PAYLOAD",
            Some("range"),
        ),
        (
            "read_thoughts",
            json!({ "range": "1-3" }),
            "INVALID_PAYLOAD",
            Some("range"),
        ),
        (
            "read_thoughts",
            json!({ "range": [0, 3] }),
            "INVALID_PAYLOAD",
            Some("range"),
        ),
        (
            "read_thoughts",
            json!({ "range": [1, -1] }),
            "INVALID_PAYLOAD",
            Some("range"),
        ),
        (
            "read_thoughts",
            json!({ "range": { "start": 1, "end": "two" } }),
            "INVALID_PAYLOAD",
            Some("range"),
        ),
        (
            "read_thoughts",
            json!({ "last": "all" }),
            "INVALID_PAYLOAD",
            Some("last"),
        ),
        (
            "read_thoughts",
            json!({ "sessionId": "no-such-session" }),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            "get_structure",
            json!({ "sessionId": "no-such-session" }),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            "get_structure",
            json!({ "sessionId": 12 }),
            "INVALID_PAYLOAD",
            Some("sessionId"),
        ),
        // init operations.
        ("load_context", json!({}), "INVALID_PAYLOAD", Some("sessionId")),
        (
            "load_context",
            json!({ "sessionId": "no-such-session" }),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            "start_new",
            json!({ "sessionTitle": "x".repeat(201) }),
            "INVALID_PAYLOAD",
            Some("sessionTitle"),
        ),
        (
            "start_new",
            json!({ "tags": [1, 2] }),
            "INVALID_PAYLOAD",
            Some("tags[0]"),
        ),
        (
            "start_new",
            json!({ "newWork": "web" }),
            "INVALID_PAYLOAD",
            Some("newWork"),
        ),
        (
            "start_new",
            json!({ "newWork": { "project": " " } }),
            "INVALID_PAYLOAD",
            Some("newWork.project"),
        ),
        (
            "start_new",
            json!({ "domain": "\t\n" }),
            "INVALID_PAYLOAD",
            Some("domain"),
        ),
        ("list_sessions", json!({ "limit": 0 }), "INVALID_PAYLOAD", Some("limit")),
        (
            "list_sessions",
            json!({ "limit": 101 }),
            "INVALID_PAYLOAD",
            Some("limit"),
        ),
        (
            "list_sessions",
            json!({ "offset": -1 }),
            "INVALID_PAYLOAD",
            Some("offset"),
        ),
        (
            "list_sessions",
            json!({ "sortBy": "size" }),
            "INVALID_PAYLOAD",
            Some("sortBy"),
        ),
        (
            "list_sessions",
            json!({ "sortOrder": "up" }),
            "INVALID_PAYLOAD",
            Some("sortOrder"),
        ),
        // session sub-operations.
        ("session", json!({}), "INVALID_PAYLOAD", Some("subOperation")),
        (
            "session",
            json!({ "subOperation": "explode" }),
            "INVALID_OPERATION",
            None,
        ),
        (
            "session",
            json!({ "subOperation": "resume" }),
            "INVALID_PAYLOAD",
            Some("sessionId"),
        ),
        (
            "session",
            json!({ "subOperation": "get", "sessionId": "no-such-session" }),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            "session",
            json!({ "operation": "get", "args": 7 }),
            "INVALID_PAYLOAD",
            Some("args"),
        ),
        (
            "session",
            json!({ "subOperation": "search" }),
            "INVALID_PAYLOAD",
            Some("query"),
        ),
        (
            "session",
            json!({ "subOperation": "search", "query": 5 }),
            "INVALID_PAYLOAD",
            Some("query"),
        ),
        (
            "session",
            json!({ "subOperation": "resume", "sessionId": "no-such-session" }),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "format": "pdf" }),
            "INVALID_PAYLOAD",
            Some("format"),
        ),
        (
            "session",
            json!({ "subOperation": "export", "sessionId": "no-such-session" }),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            "session",
            json!({ "subOperation": "delete", "sessionId": "no-such-session" }),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            "session",
            json!({ "subOperation": "list", "tags": { "a": 1 } }),
            "INVALID_PAYLOAD",
            Some("tags"),
        ),
    ]
}

#[tokio::test]
async fn bad_input_gets_a_clear_error_and_changes_nothing() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("target").await;
    s.thought(t("first")).await;
    s.thought(t("second")).await;
    let before = s
        .ok("session", json!({ "subOperation": "export", "sessionId": sid }))
        .await["content"]["nodes"]
        .clone();
    let sessions_before = s.ok("list_sessions", Value::Null).await["total"].clone();

    for (op, args, code, field) in cases(&sid) {
        let e = s.err(op, args.clone(), code).await;
        if let Some(field) = field {
            assert_eq!(e["details"]["field"], field, "{op} {args}: {e}");
        }
        // Still serving, still on the same session.
        assert_eq!(
            s.ok("get_state", Value::Null).await["activeSession"]["id"],
            sid.as_str()
        );
    }

    let after = s
        .ok("session", json!({ "subOperation": "export", "sessionId": sid }))
        .await["content"]["nodes"]
        .clone();
    assert_eq!(before, after, "bad input changed the ledger");
    assert_eq!(s.ok("list_sessions", Value::Null).await["total"], sessions_before);
    // The duplicate error says which number is next.
    let e = s
        .err(
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "thoughtNumber": 2 }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["nextThoughtNumber"], 3);
    s.stop().await;
}

#[tokio::test]
async fn gateway_shape_errors() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let e = s.call_raw(Map::new()).await.unwrap_err();
    assert_eq!(e["code"], "INVALID_PAYLOAD");
    assert_eq!(e["details"]["field"], "operation");
    assert!(e["details"]["validOperations"].as_array().unwrap().len() > 10, "{e}");
    let m = object(json!({ "operation": 7 }));
    assert_eq!(s.call_raw(m).await.unwrap_err()["details"]["field"], "operation");
    // An operation's name under another key is pointed out.
    let e = s.call_raw(object(json!({ "op": "get_state" }))).await.unwrap_err();
    assert_eq!(e["details"]["didYouMean"], json!({ "operation": "get_state" }), "{e}");
    // notebook needs stage 2, as thoughts do.
    let e = s
        .err(
            "notebook",
            json!({ "subOperation": "create", "name": "n" }),
            "STAGE_REQUIREMENT_NOT_MET",
        )
        .await;
    assert_eq!(e["details"]["requiredStage"], 2);
    let e = s.err("list_roots_of_evil", Value::Null, "INVALID_OPERATION").await;
    assert!(
        e["details"]["validOperations"]
            .as_array()
            .unwrap()
            .contains(&json!("thought"))
    );
    assert!(
        e.get("didYouMean").is_none() && e["details"].get("didYouMean").is_none(),
        "{e}"
    );
    // A misspelt name is named back, at each level, and nothing is done.
    let e = s.err("startNew", json!({ "title": "x" }), "INVALID_OPERATION").await;
    assert_eq!(e["details"]["didYouMean"], "start_new", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("did you mean \"start_new\""),
        "{e}"
    );
    s.ready("misspelt names").await;
    for (op, sub, meant) in [
        ("session", "extractLearnings", "extract_learnings"),
        ("knowledge", "list-patterns", "list_patterns"),
        ("mental_models", "get_modle", "get_model"),
    ] {
        let e = s.err(op, json!({ "subOperation": sub }), "INVALID_OPERATION").await;
        assert_eq!(e["details"]["didYouMean"], meant, "{e}");
        assert!(e["details"]["validSubOperations"].is_array(), "{e}");
    }
    // Parameters beside `operation` (no `args`) are understood too.
    let m = object(json!({ "operation": "start_new", "sessionTitle": "flat" }));
    assert_eq!(s.call_raw(m).await.unwrap()["session"]["title"], "flat");
    // A thought with no active session and a bad field creates no session.
    let (_d2, db2) = temp_db();
    let mut cmd = command(&db2);
    cmd.arg("serve").arg("--no-stages");
    let s2 = start_with((), cmd).await;
    s2.err(
        "thought",
        json!({ "thought": "x", "nextThoughtNeeded": true, "branchId": "b" }),
        "INVALID_PAYLOAD",
    )
    .await;
    assert_eq!(s2.ok("list_sessions", Value::Null).await["total"], 0);
    s2.stop().await;
    s.stop().await;
}

#[tokio::test]
async fn search_text_is_never_fts_syntax() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("Search me").await;
    s.thought(t("the quick brown fox")).await;
    for q in [
        "\"",
        "*",
        "NEAR(",
        ")",
        "fox\" OR \"",
        "AND",
        "-",
        "fox*",
        "(((",
        "title:fox",
        "^fox",
    ] {
        s.ok("session", json!({ "subOperation": "search", "query": q })).await;
        s.ok("list_sessions", json!({ "search": q })).await;
    }
    let r = s
        .ok("session", json!({ "subOperation": "search", "query": "(fox)" }))
        .await;
    assert_eq!(r["count"], 1);
    assert!(r.get("note").is_none(), "{r}");
    // Nothing searchable (an emoji, punctuation): no results, and a note
    // saying why, from session search and list_sessions alike.
    for q in ["\u{1F600}", "*** )", "*"] {
        let r = s.ok("session", json!({ "subOperation": "search", "query": q })).await;
        assert_eq!(r["count"], 0);
        assert!(r["note"].as_str().unwrap().contains("no letters or digits"), "{r}");
        for (op, args) in [
            ("list_sessions", json!({ "search": q })),
            ("session", json!({ "subOperation": "list", "search": q })),
        ] {
            let r = s.ok(op, args).await;
            assert_eq!(r["total"], 0);
            assert!(r["note"].as_str().unwrap().contains("no letters or digits"), "{r}");
        }
    }
    // A searchable text that finds nothing says what it searched instead.
    let r = s.ok("list_sessions", json!({ "search": "fox" })).await;
    let note = r["note"].as_str().unwrap();
    assert!(!note.contains("no letters or digits") && note.contains("titles"), "{r}");
    s.stop().await;
}

/// A misspelt parameter name is refused before anything is done, naming the
/// parameter meant: ignored, `branch_id` or `sessionID` on a `thought` filed
/// it for good on the main chain or in the active session.
#[tokio::test]
async fn misspelt_parameters_are_refused_and_change_nothing() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Misspelt").await;
    s.thought(t("one")).await;
    let other = s.ok("start_new", json!({ "sessionTitle": "other" })).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    s.ok("load_context", json!({ "sessionId": sid })).await;
    for (args, field, meant) in [
        (
            json!({ "thought": "x", "nextThoughtNeeded": true, "branch_id": "alt", "branchFromThought": 1 }),
            "branch_id",
            "branchId",
        ),
        (
            json!({ "thought": "x", "nextThoughtNeeded": false, "sessionID": other }),
            "sessionID",
            "sessionId",
        ),
        (
            json!({ "thought": "x", "nextThoughtNeeded": true, "revises_thought": 1 }),
            "revises_thought",
            "revisesThought",
        ),
        (
            json!({ "thought": "x", "nextThoughtNeeded": true, "thougthNumber": 7 }),
            "thougthNumber",
            "thoughtNumber",
        ),
        // Part of a name, as agents shorten them.
        (
            json!({ "thought": "x", "nextThoughtNeeded": true, "session": other }),
            "session",
            "sessionId",
        ),
        (
            json!({ "thought": "x", "nextThoughtNeeded": true, "thoughtNum": 9 }),
            "thoughtNum",
            "thoughtNumber",
        ),
        (
            json!({ "thoughts": "x", "nextThoughtNeeded": true }),
            "thoughts",
            "thought",
        ),
    ] {
        let e = s.err("thought", args, "INVALID_PAYLOAD").await;
        assert_eq!(e["details"]["field"], field, "{e}");
        assert_eq!(e["details"]["didYouMean"], meant, "{e}");
        assert!(e["message"].as_str().unwrap().contains("nothing was done"), "{e}");
    }
    // In a nested `args`, where the operation reads one (sub-operations).
    let e = s
        .err(
            "session",
            json!({ "subOperation": "get", "args": { "SessionID": other } }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["didYouMean"], "args.sessionId", "{e}");
    let e = s
        .err(
            "session",
            json!({ "subOperation": "export", "args": format!(r#"{{"session_ID":"{other}"}}"#) }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["didYouMean"], "args.sessionId", "{e}");
    // Reads too: thought_number would otherwise answer the default last five.
    let e = s
        .err("read_thoughts", json!({ "thought_number": 1 }), "INVALID_PAYLOAD")
        .await;
    assert_eq!(e["details"]["didYouMean"], "thoughtNumber");
    // Two names of one parameter with different values: neither is used.
    let e = s
        .err(
            "session",
            json!({ "subOperation": "delete", "sessionId": other, "session_id": sid }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["conflictsWith"], "session_id", "{e}");
    let e = s
        .err(
            "start_new",
            json!({ "sessionTitle": "one", "title": "two" }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "sessionTitle", "{e}");
    // The same value under both names is that value.
    let r = s
        .ok("read_thoughts", json!({ "sessionId": sid, "session_id": sid }))
        .await;
    assert!(r.get("ignoredArguments").is_none(), "{r}");
    // Filter tags are read as sessions keep them: trimmed, blanks left out
    // (so `tags: ""` matches every session, not none).
    s.ok("start_new", json!({ "sessionTitle": "tagged", "tags": ["a"] }))
        .await;
    s.ok("load_context", json!({ "sessionId": sid })).await;
    for tags in [json!(""), json!("  "), json!([""])] {
        let r = s.ok("list_sessions", json!({ "tags": tags })).await;
        assert_eq!(r["total"], 3, "{tags}: {r}");
    }
    let r = s.ok("list_sessions", json!({ "tags": [" a ", ""] })).await;
    assert_eq!(r["total"], 1, "{r}");
    // ... but not when the session was named under a name not understood.
    let e = s
        .err(
            "session",
            json!({ "subOperation": "export", "sessionUUID": other, "format": "markdown" }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "sessionUUID", "{e}");
    // `session get` and `export` default to the active session, as reads do.
    let got = s
        .ok("session", json!({ "subOperation": "get", "includeThoughts": false }))
        .await;
    assert_eq!(got["session"]["id"], sid.as_str());
    // Nothing was recorded, the session is still open and still active.
    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
    assert_eq!(got["session"]["thoughtCount"], 1);
    assert!(got["session"]["completedAt"].is_null(), "{got}");
    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": other }))
        .await;
    assert_eq!(got["session"]["thoughtCount"], 0);
    assert_eq!(s.ok("get_state", json!({})).await["activeSession"]["id"], sid.as_str());
    // A session under another name, a misspelt field in an object parameter
    // or a key moment, are refused too.
    let e = s
        .err(
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "sessionUUID": other }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "sessionUUID", "{e}");
    let e = s
        .err("start_new", json!({ "newWork": { "Project": "p" } }), "INVALID_PAYLOAD")
        .await;
    assert_eq!(e["details"]["didYouMean"], "newWork.project", "{e}");
    let e = s
        .err(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "save": true, "targetTypes": ["pattern"],
                    "keyMoments": [{ "thoughtNumber": 1, "type": "insight", "branch_id": "alt" }] }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["didYouMean"], "keyMoments[0].branchId", "{e}");
    // A branch under another name is refused; a name that only mentions the
    // session is reported unused; `total` on a list is no misspelling of a
    // thought's totalThoughts.
    let e = s
        .err(
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "branchName": "alt" }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["didYouMean"], "branchId", "{e}");
    let e = s
        .err(
            "thought",
            json!({ "thought": "x", "nextThoughtNeeded": true, "revisionOf": 1 }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["didYouMean"], "revisesThought", "{e}");
    let r = s
        .call("list_sessions", json!({ "limit": 5, "total": 12 }))
        .await
        .unwrap();
    assert_eq!(r["ignoredArguments"], json!(["total"]), "{r}");
    // A too-long task names task, not tags.
    let e = s
        .err("start_new", json!({ "task": "t".repeat(300) }), "INVALID_PAYLOAD")
        .await;
    assert_eq!(e["details"]["field"], "task", "{e}");
    // The same id in two cases is one value.
    s.ok(
        "load_context",
        json!({ "sessionId": sid.to_uppercase(), "session_id": sid }),
    )
    .await;
    // A flat project names the new session's project, as lists take it.
    let r = s
        .ok("start_new", json!({ "sessionTitle": "flat", "project": "myapp" }))
        .await;
    assert_eq!(r["session"]["tags"], json!(["project:myapp"]), "{r}");
    s.ok("load_context", json!({ "sessionId": sid })).await;
    // A name that misspells nothing is still only named in the answer.
    let r = s
        .call(
            "thought",
            json!({ "thought": "two", "nextThoughtNeeded": true, "confidence": 0.8, "metadata": { "a": 1 },
                    "sessionSummary": "so far" }),
        )
        .await
        .unwrap();
    assert_eq!(r["thoughtNumber"], 2);
    assert_eq!(
        r["ignoredArguments"],
        json!(["confidence", "metadata", "sessionSummary"])
    );
    // Inside an object parameter too, or nothing would say so.
    let r = s
        .call("deep_analysis", json!({ "options": { "includeTimelineEntrys": true } }))
        .await
        .unwrap();
    assert_eq!(r["ignoredArguments"], json!(["options.includeTimelineEntrys"]), "{r}");
    let r = s
        .call("list_sessions", json!({ "filters": { "limit": 1, "colour": "red" } }))
        .await
        .unwrap();
    assert_eq!(r["ignoredArguments"], json!(["filters.colour"]), "{r}");
    s.stop().await;
}

/// Arguments an operation did not use are named in the answer, so that a
/// parameter the operation does not take is noticed instead of silently
/// changing what happens.
#[tokio::test]
async fn ignored_arguments_are_named_in_the_answer() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Ignored").await;
    s.thought(t("one")).await;
    s.thought(t("two")).await;
    // A session title given while a session is active is not used either.
    let r = s
        .call(
            "thought",
            json!({ "thought": "three", "nextThoughtNeeded": true, "sessionTitle": "x" }),
        )
        .await
        .unwrap();
    assert_eq!(r["ignoredArguments"], json!(["sessionTitle"]));
    // Sub-operations: flat and nested parameters are both accounted for.
    let r = s
        .call(
            "session",
            json!({ "subOperation": "get", "colour": "blue", "args": { "sessionId": sid, "limit": 3 } }),
        )
        .await
        .unwrap();
    assert_eq!(r["session"]["id"], sid.as_str());
    assert_eq!(r["ignoredArguments"], json!(["colour", "limit"]));
    // A parameter both beside `operation` and in `args`: the same value is
    // that value; two values contradict each other and are refused.
    let m = object(json!({ "operation": "read_thoughts", "thoughtNumber": 1, "args": { "thoughtNumber": 1 } }));
    let r = s.call_raw(m).await.unwrap();
    assert_eq!(r["thoughts"][0]["thoughtNumber"], 1);
    assert!(r.get("ignoredArguments").is_none(), "{r}");
    let m = object(json!({ "operation": "read_thoughts", "thoughtNumber": 2, "args": { "thoughtNumber": 1 } }));
    let e = s.call_raw(m).await.unwrap_err();
    assert_eq!(e["code"], "INVALID_PAYLOAD");
    assert_eq!(e["details"]["field"], "thoughtNumber");
    // `subOperation: "get"` beside, `delete` in args: refused, nothing deleted.
    let m = object(
        json!({ "operation": "session", "subOperation": "get", "args": { "subOperation": "delete", "sessionId": sid } }),
    );
    let e = s.call_raw(m).await.unwrap_err();
    assert_eq!(e["code"], "INVALID_OPERATION", "{e}");
    // The specification's own form, `{ operation, subOperation, args }`: the
    // parameters beside `operation` that `args` lacks are used.
    let m = object(json!({ "operation": "session", "subOperation": "get", "args": { "sessionId": sid } }));
    let r = s.call_raw(m).await.unwrap();
    assert_eq!(r["session"]["id"], sid.as_str());
    assert!(r.get("ignoredArguments").is_none(), "{r}");
    assert_eq!(r["thoughts"].as_array().map(Vec::len), Some(3));
    // The session without its thoughts, when that is all a client wants.
    let r = s
        .ok(
            "session",
            json!({ "subOperation": "get", "sessionId": sid, "includeThoughts": "false" }),
        )
        .await;
    assert_eq!(r, json!({ "sessionId": sid, "session": r["session"].clone() }));
    assert_eq!(r["session"]["thoughtCount"], 3);
    // A staged operation that acts on no session takes the handle that
    // admits it (its schema lists sessionId), so it is not ignored.
    let r = s
        .call(
            "knowledge",
            json!({ "action": "list_tags", "sessionId": sid, "colour": 1 }),
        )
        .await
        .unwrap();
    assert_eq!(r["ignoredArguments"], json!(["colour"]), "{r}");
    // It names a session all the same: one naming none is refused, whether
    // or not this connection's stage would have admitted the call.
    let e = s
        .err(
            "knowledge",
            json!({ "action": "list_tags", "sessionId": "no-such-session" }),
            "SESSION_NOT_FOUND",
        )
        .await;
    assert_eq!(e["details"]["sessionId"], "no-such-session", "{e}");
    let e = s
        .err(
            "knowledge",
            json!({ "action": "list_tags", "sessionId": 5 }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "sessionId", "{e}");
    // A thread's id takes sessionId as its other name: both at once name
    // one parameter, which may not hold two values.
    let r = s
        .ok(
            "thread",
            json!({ "subOperation": "get", "threadId": sid, "sessionId": sid }),
        )
        .await;
    assert_eq!(r["threadId"], sid.as_str());
    let e = s
        .err(
            "thread",
            json!({ "subOperation": "get", "threadId": sid, "sessionId": "other" }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "threadId", "{e}");
    // Operations that take nothing name whatever they were given.
    let r = s.call("get_state", json!({ "verbose": true })).await.unwrap();
    assert_eq!(r["ignoredArguments"], json!(["verbose"]));
    s.stop().await;
}

/// A call that names two different sub-operations, or gives one parameter
/// two values (flat in `args` and nested in `args.args`), is refused and
/// changes nothing: before, `subOperation: "delete"` beside `operation:
/// "get"` deleted the session.
#[tokio::test]
async fn contradictory_sub_operations_and_parameters_are_refused() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let a = s.ready("A").await;
    s.thought(t("kept")).await;
    let b = s.ok("start_new", json!({ "sessionTitle": "B" })).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for args in [
        json!({ "subOperation": "delete", "operation": "get", "sessionId": a }),
        json!({ "operation": "get", "args": { "subOperation": "delete", "sessionId": a } }),
        json!({ "subOperation": "delete", "args": { "operation": "get", "sessionId": a } }),
        json!({ "subOperation": "get", "args": { "operation": "delete", "sessionId": a } }),
    ] {
        let e = s.err("session", args.clone(), "INVALID_OPERATION").await;
        let message = e["message"].as_str().unwrap();
        assert!(
            message.contains("\"delete\"") && message.contains("\"get\""),
            "{args}: {e}"
        );
    }
    assert_eq!(
        s.ok("session", json!({ "subOperation": "get", "sessionId": a })).await["thoughts"][0]["thought"],
        "kept"
    );
    // The same name twice is one name.
    let r = s
        .ok(
            "session",
            json!({ "subOperation": "get", "operation": "get", "args": { "sessionId": a } }),
        )
        .await;
    assert_eq!(r["session"]["id"], a.as_str());
    // One parameter, two values: refused, naming it; the same value twice is fine.
    let e = s
        .err(
            "session",
            json!({ "subOperation": "delete", "sessionId": a, "args": { "sessionId": b } }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "sessionId");
    let e = s
        .err(
            "mental_models",
            json!({ "operation": "get_model", "modelId": "five-whys", "args": { "modelId": "rubber-duck" } }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "modelId");
    let r = s
        .ok(
            "mental_models",
            json!({ "operation": "get_model", "modelId": "five-whys", "args": { "modelId": "five-whys" } }),
        )
        .await;
    assert_eq!(r["name"], "five-whys", "{r}");
    // knowledge's TypeScript Thoughtbox spelling `action` counts as a name too.
    s.err(
        "knowledge",
        json!({ "subOperation": "list_patterns", "action": "delete_pattern", "id": "x" }),
        "INVALID_OPERATION",
    )
    .await;
    // Both sessions are still there, untouched.
    for id in [&a, &b] {
        s.ok("session", json!({ "subOperation": "get", "sessionId": id })).await;
    }
    assert_eq!(s.ok("list_sessions", Value::Null).await["total"], 2);
    s.stop().await;
}

/// An answer too long for one MCP message (which MCP libraries drop at
/// 16 MiB, leaving the agent waiting) is refused, saying how to ask for
/// less; smaller reads of the same session work. `load_context`, which has
/// already opened the session, answers without its recent thoughts instead.
#[tokio::test]
async fn an_answer_too_long_for_one_message_is_refused() {
    use thoughtbox::domain::NewSession;
    use thoughtbox::store::{OpenOptionsStore, Store, Target};
    let (dir, db) = temp_db();
    let sid = {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        let session = store.create_session(NewSession::titled("long")).unwrap();
        // A quote takes two bytes in JSON and four more in the answer's text
        // copy: ~6 MB of message per thought.
        for i in 0..9 {
            let input = input(&format!("{i} {}", "\"".repeat(1_000_000)));
            store
                .append_thought(Target::Session(session.id.clone()), input)
                .unwrap();
        }
        store.checkpoint().unwrap();
        session.id
    };
    let s = start(&db).await;
    // Overview reads cut the texts for a model, so they fit.
    let loaded = s.ok("load_context", json!({ "sessionId": sid })).await;
    assert_eq!(loaded["recentThoughts"].as_array().map(Vec::len), Some(5));
    assert_eq!(loaded["truncated"]["thoughts"], 5);
    assert_eq!(loaded["restorationInfo"]["thoughtCount"], 9);
    s.ok("cipher", Value::Null).await;
    assert_eq!(s.ok("read_thoughts", json!({ "last": 5 })).await["count"], 5);
    // Counted as answered, cut: nine uncut texts would not fit.
    assert_eq!(s.ok("read_thoughts", json!({ "range": [1, 9] })).await["count"], 9);
    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": sid }))
        .await;
    assert_eq!(got["truncated"]["thoughts"], 9);
    // Asked for whole, they do not.
    let e = s
        .err("read_thoughts", json!({ "last": 5, "full": true }), "INVALID_OPERATION")
        .await;
    assert!(e["message"].as_str().unwrap().contains("thoughtNumber"), "{e}");
    assert_eq!(s.ok("read_thoughts", json!({ "thoughtNumber": 9 })).await["count"], 1);
    let e = s
        .err(
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "format": "markdown" }),
            "INVALID_OPERATION",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("destination"), "{e}");
    s.err(
        "session",
        json!({ "subOperation": "get", "sessionId": sid, "full": true }),
        "INVALID_OPERATION",
    )
    .await;
    let dest = dir.path().join("tree");
    s.ok(
        "session",
        json!({ "subOperation": "export", "sessionId": sid, "destination": dest.to_str().unwrap() }),
    )
    .await;
    s.stop().await;
}

/// Some clients send object and list parameters as their JSON text: they
/// are read as the object or list they hold. An error names the arguments
/// the server received.
#[tokio::test]
async fn parameters_sent_as_json_text_are_understood() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let args = r#"{"sessionTitle": "As text", "tags": "[\"alpha\", \"beta\"]"}"#;
    let m = object(json!({ "operation": "start_new", "args": args }));
    let r = s.call_raw(m).await.unwrap();
    assert_eq!(r["session"]["title"], "As text");
    assert_eq!(r["session"]["tags"], json!(["alpha", "beta"]));
    // A string that is not JSON is still refused, saying how to send it.
    let m = object(json!({ "operation": "get_state", "args": "sessionId=1" }));
    let e = s.call_raw(m).await.unwrap_err();
    assert_eq!(e["details"]["field"], "args");
    assert!(e["message"].as_str().unwrap().contains("beside operation"), "{e}");
    // JSON text that does not parse says so.
    let m = object(json!({ "operation": "get_state", "args": "{\"limit\": NaN}" }));
    let e = s.call_raw(m).await.unwrap_err();
    assert!(e["message"].as_str().unwrap().contains("does not parse"), "{e}");
    // JSON text naming a key twice is refused as the request would be
    // (else the last value wins, and `get` then `delete` deletes).
    let victim = s.ok("start_new", json!({ "sessionTitle": "Victim" })).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let texts = [
        format!(r#"{{"subOperation":"get","subOperation":"delete","sessionId":"{victim}"}}"#),
        format!(r#"{{"subOperation":"delete","args":"{{\"sessionId\":\"{victim}\",\"sessionId\":\"x\"}}"}}"#),
    ];
    for text in texts {
        let m = object(json!({ "operation": "session", "args": text }));
        let e = s.call_raw(m).await.unwrap_err();
        assert_eq!(e["code"], "INVALID_PAYLOAD", "{e}");
        assert!(e["details"]["duplicateKey"].is_string(), "{e}");
    }
    let m = object(json!({ "operation": "start_new", "args": { "newWork": r#"{"project":"a","project":"b"}"# } }));
    let e = s.call_raw(m).await.unwrap_err();
    assert_eq!(e["details"]["duplicateKey"], "newWork.project", "{e}");
    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": victim }))
        .await;
    assert_eq!(got["session"]["id"], victim.as_str());
    // `range` as its JSON text; an empty sessionId on a thought is no id.
    let sid = s.ready("Text").await;
    for i in 1..=3 {
        s.thought(t(&format!("t{i}"))).await;
    }
    let r = s.ok("read_thoughts", json!({ "range": "[2, 3]" })).await;
    assert_eq!(r["count"], 2, "{r}");
    let r = s
        .ok(
            "thought",
            json!({ "thought": "t4", "nextThoughtNeeded": true, "sessionId": "" }),
        )
        .await;
    assert_eq!(r["sessionId"], sid.as_str());
    let r = s
        .ok(
            "thought",
            json!({ "thought": "t5", "nextThoughtNeeded": true, "sessionId": format!(" {} ", sid.to_uppercase()) }),
        )
        .await;
    assert_eq!(r["thoughtNumber"], 5);
    // The error names what was received: here `sid`, not `sessionId`.
    let e = s.err("load_context", json!({ "sid": "x" }), "INVALID_PAYLOAD").await;
    assert_eq!(e["details"]["field"], "sessionId");
    assert_eq!(e["details"]["receivedArguments"], json!(["sid"]));
    // Search texts and tag filters past their limits (a query of 100,000
    // words would keep the server busy for minutes). Words as the index
    // splits them: `a:b:c` is three.
    let words = vec!["word"; 65].join(":");
    let long = "x".repeat(1_001);
    for (op, args) in [
        ("session", json!({ "subOperation": "search", "query": words })),
        ("session", json!({ "subOperation": "search", "query": long })),
        ("list_sessions", json!({ "search": words })),
        ("session", json!({ "subOperation": "list", "search": long })),
        ("knowledge", json!({ "subOperation": "search", "query": words })),
        ("knowledge", json!({ "subOperation": "list_patterns", "search": long })),
    ] {
        let e = s.err(op, args.clone(), "INVALID_PAYLOAD").await;
        assert!(
            e["message"]
                .as_str()
                .unwrap()
                .contains("at most 1000 characters and 64 words"),
            "{args}: {e}"
        );
    }
    let tags: Vec<String> = (0..101).map(|i| format!("t{i}")).collect();
    for (op, args) in [
        ("list_sessions", json!({ "tags": tags })),
        ("knowledge", json!({ "subOperation": "list_patterns", "tags": tags })),
    ] {
        let e = s.err(op, args, "INVALID_PAYLOAD").await;
        assert_eq!(e["details"]["field"], "tags", "{e}");
    }
    // At the limit, the search runs.
    let at_limit = vec!["word"; 64].join(" ");
    let ok = s
        .ok("session", json!({ "subOperation": "search", "query": at_limit }))
        .await;
    assert_eq!(
        (ok["query"].as_str(), ok["count"].as_u64()),
        (Some(at_limit.as_str()), Some(0)),
        "{ok}"
    );
    // Also when the call is refused before its operation runs.
    for (arguments, code, received) in [
        (
            json!({ "operation": "nope", "sessionTitle": "x" }),
            "INVALID_OPERATION",
            json!(["sessionTitle"]),
        ),
        (json!({}), "INVALID_PAYLOAD", json!([])),
        (
            json!({ "operation": "start_new", "args": "{not json" }),
            "INVALID_PAYLOAD",
            json!(["args"]),
        ),
        (
            json!({ "operation": "start_new", "sessionTitle": "a", "args": { "sessionTitle": "b", "tags": [] } }),
            "INVALID_PAYLOAD",
            json!(["sessionTitle", "tags"]),
        ),
    ] {
        let map = arguments.as_object().cloned().unwrap_or_default();
        let e = s.call_raw(map).await.expect_err("refused");
        assert_eq!(e["code"], code, "{arguments}: {e}");
        assert_eq!(e["details"]["receivedArguments"], received, "{arguments}: {e}");
    }
    s.stop().await;
}

/// A session id given under a name the operation does not read (`sid`,
/// `target`, in another case, nested in a sub-operation's `args`) is
/// refused, naming the argument and `sessionId`, when it is not the session
/// the call uses: it was ignored, and the thought filed in the active
/// session, the read answered for it. Nothing is written. The session in use
/// named once more is only an ignored argument.
#[tokio::test]
async fn a_session_id_under_another_name_is_refused_and_changes_nothing() {
    let (dir, db) = temp_db();
    let s = start(&db).await;
    let a = s.ready("A").await;
    s.thought(t("a1")).await;
    let b = s.ok("start_new", json!({ "sessionTitle": "B" })).await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    // The thoughts of A and of B, and the number of sessions.
    async fn counts(s: &Server, a: &str, b: &str) -> Vec<u64> {
        let mut out = Vec::new();
        for id in [a, b] {
            let got = s
                .ok(
                    "session",
                    json!({ "subOperation": "get", "sessionId": id, "includeThoughts": false }),
                )
                .await;
            out.push(got["session"]["thoughtCount"].as_u64().unwrap());
        }
        out.push(s.ok("list_sessions", Value::Null).await["total"].as_u64().unwrap());
        out
    }
    let before = counts(&s, &a, &b).await;
    assert_eq!(before, vec![1, 0, 2]);
    let shouting = format!("  {}\n", a.to_uppercase());
    let out = dir.path().join("out");
    for (op, args, field) in [
        (
            "thought",
            json!({ "thought": "t", "nextThoughtNeeded": true, "sid": a }),
            "sid",
        ),
        (
            "thought",
            json!({ "thought": "t", "nextThoughtNeeded": true, "target": shouting }),
            "target",
        ),
        ("read_thoughts", json!({ "sid": a }), "sid"),
        ("get_structure", json!({ "target": a }), "target"),
        ("deep_analysis", json!({ "sid": a }), "sid"),
        // Inside an object parameter, as an object or as JSON text, or a
        // key moment.
        ("deep_analysis", json!({ "options": { "sid": a } }), "options.sid"),
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": a,
                    "keyMoments": [{ "thoughtNumber": 1, "type": "insight", "sid": b }] }),
            "keyMoments[0].sid",
        ),
        (
            "deep_analysis",
            json!({ "options": json!({ "includeTimeline": false, "target": a }).to_string() }),
            "options.target",
        ),
        ("session", json!({ "subOperation": "get", "sid": a }), "sid"),
        ("session", json!({ "subOperation": "export", "sid": a }), "sid"),
        ("session", json!({ "subOperation": "analyze", "ref": a }), "ref"),
        ("session", json!({ "subOperation": "get", "args": { "sid": a } }), "sid"),
        (
            "session",
            json!({ "subOperation": "export", "sid": a, "destination": out.to_str().unwrap() }),
            "sid",
        ),
        // Two sessions named: the one in sessionId is used, the other refused.
        (
            "session",
            json!({ "subOperation": "get", "sessionId": b, "sid": a }),
            "sid",
        ),
        (
            "session",
            json!({ "subOperation": "delete", "sessionId": b, "sid": a }),
            "sid",
        ),
        ("load_context", json!({ "sessionId": a, "sid": b }), "sid"),
    ] {
        let e = s.err(op, args.clone(), "INVALID_PAYLOAD").await;
        assert_eq!(e["details"]["field"], field, "{op} {args}: {e}");
        assert_eq!(e["details"]["didYouMean"], "sessionId", "{op} {args}: {e}");
        let message = e["message"].as_str().unwrap();
        assert!(message.starts_with(field) && message.contains("sessionId"), "{message}");
    }
    // Nothing written: no thought, no session deleted or switched, no files.
    assert_eq!(counts(&s, &a, &b).await, before);
    assert!(!out.exists(), "an export refused wrote {}", out.display());
    assert_eq!(s.ok("get_state", Value::Null).await["activeSession"]["id"], b.as_str());
    // The session the call uses, named again: only an ignored argument.
    let r = s
        .call(
            "thought",
            json!({ "thought": "b1", "nextThoughtNeeded": true, "sid": b }),
        )
        .await
        .unwrap();
    assert_eq!(r["sessionId"], b.as_str());
    assert_eq!(r["ignoredArguments"], json!(["sid"]));
    let r = s
        .call("read_thoughts", json!({ "sessionId": a, "target": a.to_uppercase() }))
        .await
        .unwrap();
    assert_eq!(r["sessionId"], a.as_str());
    assert_eq!(r["ignoredArguments"], json!(["target"]));
    // With no session active, a thought naming one that way starts nothing.
    s.thought(json!({ "thought": "b2", "nextThoughtNeeded": false })).await;
    let e = s
        .err(
            "thought",
            json!({ "thought": "meant for A", "nextThoughtNeeded": true, "sid": a }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "sid");
    assert!(e["details"]["activeSessionId"].is_null(), "{e}");
    assert_eq!(counts(&s, &a, &b).await, vec![1, 2, 2]);
    s.stop().await;
}

/// `ignoredArguments` stays short whatever was sent (one name of a megabyte,
/// or 100,000 names, are not echoed whole): each name is cut, and past twenty
/// the answer counts the rest in `ignoredArgumentsMore`.
#[tokio::test]
async fn ignored_arguments_are_named_briefly() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let long = "q".repeat(1_000_000);
    let r = s.call("get_state", json!({ long.clone(): 1 })).await.unwrap();
    let named = r["ignoredArguments"].as_array().unwrap();
    assert_eq!(named.len(), 1, "{r}");
    let name = named[0].as_str().unwrap();
    assert!(
        name.starts_with("qqqq") && name.ends_with("...") && name.len() <= 70,
        "{name}"
    );
    assert!(r.get("ignoredArgumentsMore").is_none(), "{r}");
    assert!(r.to_string().len() < 4096, "{} bytes", r.to_string().len());
    let many: Map<String, Value> = (0..5000).map(|i| (format!("k{i:05}"), json!(1))).collect();
    let r = s.call("get_state", Value::Object(many.clone())).await.unwrap();
    assert_eq!(r["ignoredArguments"].as_array().unwrap().len(), 20, "{r}");
    assert_eq!(r["ignoredArguments"][0], "k00000");
    assert_eq!(r["ignoredArgumentsMore"], 4980);
    assert!(r.to_string().len() < 4096, "{} bytes", r.to_string().len());
    // Nested in a sub-operation's args too; nothing was created.
    let sid = s.ready("Brief").await;
    let r = s
        .call(
            "session",
            json!({ "subOperation": "get", "sessionId": sid, "args": many }),
        )
        .await
        .unwrap();
    assert_eq!(r["session"]["id"], sid.as_str());
    assert_eq!(r["ignoredArgumentsMore"], 4980);
    assert_eq!(s.ok("list_sessions", Value::Null).await["total"], 1);
    // A few, short: named as they are.
    let r = s.call("get_state", json!({ "b": 1, "a": 2 })).await.unwrap();
    assert_eq!(r["ignoredArguments"], json!(["a", "b"]));
    // Past 10,000 names, flat or nested, the call is refused before any
    // check (each name costs time on the thread that reads requests).
    let thought = |extra: Map<String, Value>| {
        let mut a = extra;
        a.insert("sessionId".into(), json!(sid));
        a.insert("thought".into(), json!("crowded"));
        a.insert("nextThoughtNeeded".into(), json!(true));
        Value::Object(a)
    };
    let crowd: Map<String, Value> = (0..10_001).map(|i| (format!("k{i:05}"), json!(1))).collect();
    let e = s.err("thought", thought(crowd.clone()), "INVALID_PAYLOAD").await;
    assert_eq!(e["details"]["maxNames"], 10_000, "{e}");
    let e = s
        .err(
            "session",
            json!({ "subOperation": "get", "args": crowd.clone() }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "args", "{e}");
    // Names inside an object parameter count too, once no parameter takes them.
    let e = s
        .err(
            "deep_analysis",
            json!({ "sessionId": sid, "analysisType": "patterns", "options": crowd.clone() }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["maxNames"], 10_000, "{e}");
    let mut fewer = crowd;
    fewer.retain(|k, _| k.as_str() >= "k00004");
    let r = s.call("thought", thought(fewer)).await.unwrap();
    assert_eq!(r["ignoredArgumentsMore"], 9_977, "{r}");
    assert_eq!(
        s.ok("read_thoughts", json!({ "sessionId": sid })).await["thoughts"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
    s.stop().await;
}

/// What can be refused without reading the ledger, or by reading it only,
/// is refused at once while another program holds the write lock (else a
/// blank or oversized thought waits for the busy timeout, then gets "database
/// is locked" instead of the field at fault; an unknown session id waits the
/// same before SESSION_NOT_FOUND). The refusals write nothing, and the server
/// goes on once the lock is let go.
#[tokio::test]
async fn refusals_do_not_wait_for_another_programs_write_lock() {
    let (d, db) = temp_db();
    let log = d.path().join("server.log");
    let s = start_logging(&db, &log).await;
    s.ready("Held lock").await;
    s.thought(t("one")).await;
    s.thought(t("two")).await;
    let unknown = "00000000-0000-4000-8000-000000000000";
    let kept = s
        .ok(
            "knowledge",
            json!({ "subOperation": "create_pattern", "title": "Kept", "description": "D", "content": "C" }),
        )
        .await;
    assert_eq!(kept["id"], "kept", "{kept}");

    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    let big = "x".repeat((1 << 20) + 1);
    let thoughts = [
        (json!({ "thought": " \u{200B} ", "nextThoughtNeeded": true }), "thought"),
        (json!({ "thought": big, "nextThoughtNeeded": true }), "thought"),
        (json!({ "thought": "a\u{0}b", "nextThoughtNeeded": true }), "thought"),
        (
            json!({ "thought": "x", "nextThoughtNeeded": true, "branchFromThought": 1, "branchId": "../../x" }),
            "branchId",
        ),
        (
            json!({ "thought": "x", "nextThoughtNeeded": true, "branchFromThought": 1 }),
            "branchId",
        ),
        (
            json!({ "thought": "x", "nextThoughtNeeded": true, "isRevision": true }),
            "revisesThought",
        ),
        (
            json!({ "thought": "x", "nextThoughtNeeded": true, "isRevision": false, "revisesThought": 1 }),
            "isRevision",
        ),
    ];
    for (args, field) in thoughts {
        let e = s.err("thought", args.clone(), "INVALID_PAYLOAD").await;
        assert_eq!(e["details"]["field"], field, "{e}");
    }
    for (op, args, code) in [
        (
            "start_new",
            json!({ "sessionTitle": "x".repeat(201) }),
            "INVALID_PAYLOAD",
        ),
        (
            "start_new",
            json!({ "sessionTitle": "ok", "description": "d".repeat(10_001) }),
            "INVALID_PAYLOAD",
        ),
        (
            "start_new",
            json!({ "sessionTitle": "ok", "tags": [" "] }),
            "INVALID_PAYLOAD",
        ),
        ("load_context", json!({ "sessionId": unknown }), "SESSION_NOT_FOUND"),
        (
            "session",
            json!({ "subOperation": "resume", "sessionId": unknown }),
            "SESSION_NOT_FOUND",
        ),
        (
            "session",
            json!({ "subOperation": "delete", "sessionId": unknown }),
            "SESSION_NOT_FOUND",
        ),
        (
            "knowledge",
            json!({ "subOperation": "delete_pattern", "id": "nope" }),
            "INVALID_PAYLOAD",
        ),
        (
            "knowledge",
            json!({ "subOperation": "update_pattern", "id": "nope", "title": "Renamed" }),
            "INVALID_PAYLOAD",
        ),
        (
            "knowledge",
            json!({ "subOperation": "delete_scratchpad", "id": "nope" }),
            "INVALID_PAYLOAD",
        ),
        (
            "knowledge",
            json!({ "subOperation": "create_pattern", "title": "T", "description": "D", "content": "C",
                    "derivedFromSessions": [unknown] }),
            "SESSION_NOT_FOUND",
        ),
        (
            "knowledge",
            json!({ "subOperation": "update_pattern", "id": "kept", "sessionId": unknown }),
            "SESSION_NOT_FOUND",
        ),
    ] {
        s.err(op, args, code).await;
    }
    // Reads go on beside the lock.
    let read = s.ok("read_thoughts", json!({ "last": 5 })).await;
    assert_eq!(read["thoughts"].as_array().map(Vec::len), Some(2), "{read}");
    holder.execute_batch("COMMIT").unwrap();

    // Nothing was written, and the next thought goes where it should.
    let r = s.thought(t("three")).await;
    assert_eq!(r["thoughtNumber"], 3, "{r}");
    s.stop().await;
    // Not one of them reached the write lock: the one that falls back to
    // reading after a refused write (load_context) logs that it did.
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(!logged.contains("could not record the access"), "{logged}");
    assert!(!logged.contains("locked"), "{logged}");
}

/// The typed operations take what clients send in place of a parameter's
/// type (decimal strings, "true", JSON text of a list), refuse what does not
/// fit naming the field, and name what their type did not take.
#[tokio::test]
async fn typed_operations_take_lenient_forms_and_name_bad_fields() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Typed").await;
    for text in ["one", "two", "three"] {
        s.thought(t(text)).await;
    }
    let r = s
        .ok(
            "read_thoughts",
            json!({ "range": "[2, 3]", "full": "true", "sessionId": sid, "session_id": sid }),
        )
        .await;
    assert_eq!(r["count"], 2, "{r}");
    assert!(r.get("ignoredArguments").is_none(), "{r}");
    let r = s
        .call("read_thoughts", json!({ "thoughtNumber": "2", "colour": "blue" }))
        .await
        .unwrap();
    assert_eq!(r["thoughts"][0]["thoughtNumber"], 2, "{r}");
    assert_eq!(r["ignoredArguments"], json!(["colour"]), "{r}");
    let e = s
        .err("read_thoughts", json!({ "last": "some" }), "INVALID_PAYLOAD")
        .await;
    assert_eq!(e["details"]["field"], "last", "{e}");
    let e = s
        .err("read_thoughts", json!({ "range": { "start": 1 } }), "INVALID_PAYLOAD")
        .await;
    assert_eq!(e["details"]["field"], "range", "{e}");
    let e = s
        .err("get_structure", json!({ "sessionId": 7 }), "INVALID_PAYLOAD")
        .await;
    assert_eq!(e["details"]["field"], "sessionId", "{e}");
    let r = s.ok("cipher", json!({ "brief": "true" })).await;
    assert!(r.get("guide").is_none(), "{r}");
    let r = s
        .ok(
            "thought",
            json!({ "thought": "four", "nextThoughtNeeded": "true", "thoughtNumber": "4" }),
        )
        .await;
    assert_eq!(r["thoughtNumber"], 4, "{r}");
    let e = s
        .err(
            "thought",
            json!({ "thought": "five", "nextThoughtNeeded": "perhaps" }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "nextThoughtNeeded", "{e}");
    s.stop().await;
}
