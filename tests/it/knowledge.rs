//! The knowledge garden through the real binary: patterns, scratchpad notes,
//! full-text search, `session search` including them, resources, restarts.

use rmcp::model::ReadResourceRequestParams;
use serde_json::{Value, json};

use crate::common::*;

fn k(sub: &str, args: Value) -> Value {
    let mut a = args;
    a["subOperation"] = json!(sub);
    a
}

fn resource_text(r: &rmcp::model::ReadResourceResult) -> String {
    match &r.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, .. } => text.clone(),
        other => panic!("not text: {other:?}"),
    }
}

#[tokio::test]
async fn patterns_crud_with_slugs_tags_and_search() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Where patterns come from").await;
    // Knowledge needs stage 2; get_state reports stage 3 after use.
    let p = s
        .ok(
            "knowledge",
            k(
                "create_pattern",
                json!({ "title": "Debugging Race Conditions", "description": "Find shared mutable state first",
                        "content": "# Steps\n1. List every shared variable.\n2. Add a lock or make it owned.",
                        "tags": ["debugging", "concurrency"], "derivedFromSessions": [sid.to_uppercase()], "createdBy": "agent-7" }),
            ),
        )
        .await;
    assert_eq!(p["id"], "debugging-race-conditions");
    assert_eq!(p["derivedFromSessions"], json!([sid]), "stored as the ledger spells it");
    assert_eq!(p["uri"], "thoughtbox://knowledge/patterns/debugging-race-conditions");
    for f in [
        "title",
        "description",
        "tags",
        "content",
        "createdAt",
        "updatedAt",
        "derivedFromSessions",
    ] {
        assert!(p.get(f).is_some(), "{f} missing");
    }
    assert_eq!(p["createdBy"], "agent-7");
    assert_eq!(s.ok("get_state", Value::Null).await["stage"], 3);
    // Same title: the slug gets -2, then -3.
    let p2 = s
        .ok(
            "knowledge",
            k(
                "create_pattern",
                json!({ "title": "debugging race-conditions!", "description": "d", "content": "Use a mutex.", "tags": "debugging" }),
            ),
        )
        .await;
    assert_eq!(p2["id"], "debugging-race-conditions-2");
    let p3 = s
        .ok(
            "knowledge",
            json!({ "action": "create_pattern", "title": "Debugging race conditions", "description": "d", "content": "c" }),
        )
        .await;
    assert_eq!(p3["id"], "debugging-race-conditions-3");

    // Filters: tags must all match.
    let l = s
        .ok(
            "knowledge",
            k("list_patterns", json!({ "tags": ["debugging", "concurrency"] })),
        )
        .await;
    assert_eq!(l["total"], 1);
    let l = s
        .ok(
            "knowledge",
            k(
                "list_patterns",
                json!({ "tags": ["debugging"], "sortBy": "title", "sortOrder": "asc", "limit": 1 }),
            ),
        )
        .await;
    assert_eq!(l["count"], 1);
    assert_eq!(l["total"], 2);
    assert_eq!(l["hasMore"], true);
    assert!(l["patterns"][0]["content"].is_string(), "{l}");
    // A page without the patterns' text.
    let l = s
        .ok(
            "knowledge",
            k(
                "list_patterns",
                json!({ "tags": ["debugging"], "includeContent": false }),
            ),
        )
        .await;
    assert_eq!(l["total"], 2);
    assert!(l["patterns"][0].get("content").is_none(), "{l}");
    assert!(l["patterns"][0]["title"].is_string(), "{l}");
    // Full-text search, ranked, with a snippet.
    let l = s
        .ok("knowledge", k("list_patterns", json!({ "search": "mutex" })))
        .await;
    assert_eq!(l["total"], 1);
    assert_eq!(l["patterns"][0]["id"], "debugging-race-conditions-2");
    assert!(l["patterns"][0]["snippet"].as_str().unwrap().contains("[mutex]"));
    let tags = s.ok("knowledge", k("list_tags", json!({}))).await;
    assert_eq!(tags["tags"][0], json!({ "name": "debugging", "count": 2 }));

    // Update keeps the id; delete removes it.
    let u = s
        .ok(
            "knowledge",
            k(
                "update_pattern",
                json!({ "id": "debugging-race-conditions", "title": "Data races", "tags": ["threads"] }),
            ),
        )
        .await;
    assert_eq!(u["id"], "debugging-race-conditions");
    assert_eq!(u["title"], "Data races");
    assert_eq!(u["content"], p["content"]);
    assert_eq!(u["createdAt"], p["createdAt"]);
    let d = s
        .ok(
            "knowledge",
            k("delete_pattern", json!({ "id": "debugging-race-conditions-3" })),
        )
        .await;
    assert_eq!(d["deleted"], true);
    s.err(
        "knowledge",
        k("get_pattern", json!({ "id": "debugging-race-conditions-3" })),
        "INVALID_PAYLOAD",
    )
    .await;

    // Readable as an MCP resource.
    let r = s
        .client
        .read_resource(ReadResourceRequestParams::new(
            "thoughtbox://knowledge/patterns/debugging-race-conditions",
        ))
        .await
        .unwrap();
    let text = resource_text(&r);
    assert!(text.starts_with("# Data races"));
    assert!(text.contains("List every shared variable"));
    let templates = s.client.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "thoughtbox://knowledge/patterns/{id}")
    );
    let listed = s.client.list_all_resources().await.unwrap();
    assert!(listed.iter().any(|r| r.uri.ends_with("/debugging-race-conditions-2")));
    assert!(
        s.client
            .read_resource(ReadResourceRequestParams::new("thoughtbox://knowledge/patterns/nope"))
            .await
            .is_err()
    );
    s.stop().await;
}

#[tokio::test]
async fn scratchpad_notes_overwrite_by_topic() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("notes").await;
    let n = s
        .ok(
            "knowledge",
            k(
                "write_scratchpad",
                json!({ "topic": "API Design Ideas", "content": "cursor pagination" }),
            ),
        )
        .await;
    assert_eq!(n["id"], "api-design-ideas");
    assert_eq!(n["created"], true);
    let m = s
        .ok(
            "knowledge",
            k(
                "write_scratchpad",
                json!({ "topic": "api design ideas", "content": "offset pagination is simpler" }),
            ),
        )
        .await;
    assert_eq!(m["created"], false);
    assert_eq!(m["createdAt"], n["createdAt"]);
    let r = s
        .ok("knowledge", k("read_scratchpad", json!({ "id": "api-design-ideas" })))
        .await;
    assert_eq!(r["content"], "offset pagination is simpler");
    let r2 = s
        .ok(
            "knowledge",
            k("read_scratchpad", json!({ "topic": "API design ideas" })),
        )
        .await;
    assert_eq!(r2["id"], "api-design-ideas");
    s.ok(
        "knowledge",
        k("write_scratchpad", json!({ "topic": "日本語のメモ", "content": "" })),
    )
    .await;
    let l = s.ok("knowledge", k("list_scratchpad", json!({}))).await;
    assert_eq!(l["total"], 2);
    let l = s
        .ok("knowledge", k("list_scratchpad", json!({ "includeContent": false })))
        .await;
    assert!(
        l["notes"][0].get("content").is_none() && l["notes"][0]["title"].is_string(),
        "{l}"
    );
    let found = s.ok("knowledge", k("search", json!({ "query": "simpler" }))).await;
    assert_eq!(found["notes"][0]["id"], "api-design-ideas");
    assert!(found["notes"][0]["snippet"].as_str().unwrap().contains("[simpler]"));
    // An id and a topic that name different notes: refused, nothing deleted.
    let e = s
        .err(
            "knowledge",
            k(
                "delete_scratchpad",
                json!({ "id": "api-design-ideas", "topic": "日本語のメモ" }),
            ),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "topic", "{e}");
    assert_eq!(s.ok("knowledge", k("list_scratchpad", json!({}))).await["total"], 2);
    // Both naming the same note is fine.
    s.ok(
        "knowledge",
        k(
            "delete_scratchpad",
            json!({ "id": "api-design-ideas", "topic": "API design ideas" }),
        ),
    )
    .await;
    s.err(
        "knowledge",
        k("read_scratchpad", json!({ "id": "api-design-ideas" })),
        "INVALID_PAYLOAD",
    )
    .await;
    // Named by its topic, a missing note is refused on topic.
    let e = s
        .err(
            "knowledge",
            k("read_scratchpad", json!({ "topic": "API design ideas" })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "topic", "{e}");
    // Long topics that differ only past 64 slug characters are two notes.
    let topic =
        |part: u32| format!("Meeting notes for the quarterly planning review of the infrastructure team - part {part}");
    let mut ids = Vec::new();
    for (part, content) in [(1, "PART ONE: the migration"), (2, "PART TWO: staffing")] {
        let w = s
            .ok(
                "knowledge",
                k("write_scratchpad", json!({ "topic": topic(part), "content": content })),
            )
            .await;
        assert_eq!(w["created"], true, "{w}");
        ids.push(w["id"].as_str().unwrap().to_string());
    }
    assert_ne!(ids[0], ids[1]);
    let r = s
        .ok("knowledge", k("read_scratchpad", json!({ "topic": topic(1) })))
        .await;
    assert_eq!(r["content"], "PART ONE: the migration");
    let r = s.ok("knowledge", k("read_scratchpad", json!({ "id": ids[1] }))).await;
    assert_eq!(r["content"], "PART TWO: staffing");
    s.stop().await;
}

#[tokio::test]
async fn session_search_includes_patterns_and_notes_and_everything_survives_a_restart() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("Tuning the connection pool").await;
    s.thought(t("The pool starves under burst load")).await;
    s.ok(
        "knowledge",
        k(
            "create_pattern",
            json!({ "title": "Size pools from measurements", "description": "Measure burst load", "content": "Pool size = peak concurrency." }),
        ),
    )
    .await;
    s.ok(
        "knowledge",
        k(
            "write_scratchpad",
            json!({ "topic": "pool", "content": "burst load at 9am" }),
        ),
    )
    .await;
    let plain = s
        .ok("session", json!({ "subOperation": "search", "query": "burst load" }))
        .await;
    assert_eq!(plain["count"], 1);
    assert!(plain.get("patterns").is_none());
    let all = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "burst load", "include": ["patterns", "notes"] }),
        )
        .await;
    assert_eq!(all["sessions"][0]["matches"][0]["thoughtNumber"], 1);
    assert_eq!(all["patterns"][0]["id"], "size-pools-from-measurements");
    assert!(all["patterns"][0]["snippet"].as_str().unwrap().contains('['));
    assert_eq!(all["notes"][0]["id"], "pool");
    s.err(
        "session",
        json!({ "subOperation": "search", "query": "x", "include": ["thoughts"] }),
        "INVALID_PAYLOAD",
    )
    .await;
    s.stop().await;

    let s = start(&db).await;
    s.ready("again").await;
    let p = s
        .ok(
            "knowledge",
            k("get_pattern", json!({ "id": "size-pools-from-measurements" })),
        )
        .await;
    assert_eq!(p["content"], "Pool size = peak concurrency.");
    let n = s.ok("knowledge", k("read_scratchpad", json!({ "id": "pool" }))).await;
    assert_eq!(n["content"], "burst load at 9am");
    s.stop().await;
}

#[tokio::test]
async fn knowledge_bad_input_changes_nothing() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ok("start_new", json!({ "sessionTitle": "k" })).await;
    s.err("knowledge", k("list_patterns", json!({})), "STAGE_REQUIREMENT_NOT_MET")
        .await;
    s.ok("cipher", Value::Null).await;
    s.ok(
        "knowledge",
        k(
            "create_pattern",
            json!({ "title": "Keep", "description": "d", "content": "c" }),
        ),
    )
    .await;
    s.ok(
        "knowledge",
        k("write_scratchpad", json!({ "topic": "keep", "content": "c" })),
    )
    .await;
    let snapshot = || async {
        (
            s.ok("knowledge", k("list_patterns", json!({}))).await["patterns"].clone(),
            s.ok("knowledge", k("list_scratchpad", json!({}))).await["notes"].clone(),
        )
    };
    let before = snapshot().await;
    let big = "x".repeat((1 << 20) + 1);
    let missing = "00000000-0000-4000-8000-000000000000";
    let cases: Vec<(Value, &str, Option<&str>)> = vec![
        (json!({}), "INVALID_PAYLOAD", Some("subOperation")),
        (k("plant_tree", json!({})), "INVALID_OPERATION", None),
        (
            k("create_pattern", json!({ "description": "d", "content": "c" })),
            "INVALID_PAYLOAD",
            Some("title"),
        ),
        (
            k("create_pattern", json!({ "title": "t", "content": "c" })),
            "INVALID_PAYLOAD",
            Some("description"),
        ),
        (
            k("create_pattern", json!({ "title": "t", "description": "d" })),
            "INVALID_PAYLOAD",
            Some("content"),
        ),
        (
            k(
                "create_pattern",
                json!({ "title": "x".repeat(201), "description": "d", "content": "c" }),
            ),
            "INVALID_PAYLOAD",
            Some("title"),
        ),
        (
            k(
                "create_pattern",
                json!({ "title": "t", "description": "d", "content": big }),
            ),
            "INVALID_PAYLOAD",
            Some("content"),
        ),
        (
            k(
                "create_pattern",
                json!({ "title": "t", "description": "d", "content": "c", "tags": [1] }),
            ),
            "INVALID_PAYLOAD",
            Some("tags[0]"),
        ),
        (
            k(
                "create_pattern",
                json!({ "title": "t", "description": "d", "content": "c", "tags": [" "] }),
            ),
            "INVALID_PAYLOAD",
            Some("tags"),
        ),
        (
            k(
                "create_pattern",
                json!({ "title": "t", "description": "d", "content": "c", "derivedFromSessions": [missing] }),
            ),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            k(
                "create_pattern",
                json!({ "title": "t", "description": "d", "content": "c", "derivedFromSessions": 5 }),
            ),
            "INVALID_PAYLOAD",
            Some("derivedFromSessions"),
        ),
        (k("get_pattern", json!({})), "INVALID_PAYLOAD", Some("id")),
        (
            k("get_pattern", json!({ "id": "../etc/passwd" })),
            "INVALID_PAYLOAD",
            Some("id"),
        ),
        (k("get_pattern", json!({ "id": "nope" })), "INVALID_PAYLOAD", Some("id")),
        (k("update_pattern", json!({ "id": "keep" })), "INVALID_PAYLOAD", None),
        (
            k("update_pattern", json!({ "id": "nope", "title": "x" })),
            "INVALID_PAYLOAD",
            Some("id"),
        ),
        (
            k("update_pattern", json!({ "id": "keep", "title": "" })),
            "INVALID_PAYLOAD",
            Some("title"),
        ),
        (
            k(
                "update_pattern",
                json!({ "id": "keep", "derivedFromSessions": [missing] }),
            ),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            k("delete_pattern", json!({ "id": "nope" })),
            "INVALID_PAYLOAD",
            Some("id"),
        ),
        (
            k("list_patterns", json!({ "limit": 0 })),
            "INVALID_PAYLOAD",
            Some("limit"),
        ),
        (
            k("list_patterns", json!({ "limit": 101 })),
            "INVALID_PAYLOAD",
            Some("limit"),
        ),
        (
            k("list_patterns", json!({ "offset": -1 })),
            "INVALID_PAYLOAD",
            Some("offset"),
        ),
        (
            k("list_patterns", json!({ "sortBy": "size" })),
            "INVALID_PAYLOAD",
            Some("sortBy"),
        ),
        (
            k("list_patterns", json!({ "sortOrder": "up" })),
            "INVALID_PAYLOAD",
            Some("sortOrder"),
        ),
        (
            k("list_patterns", json!({ "tags": { "a": 1 } })),
            "INVALID_PAYLOAD",
            Some("tags"),
        ),
        (
            k("write_scratchpad", json!({ "content": "c" })),
            "INVALID_PAYLOAD",
            Some("topic"),
        ),
        (
            k("write_scratchpad", json!({ "topic": "keep" })),
            "INVALID_PAYLOAD",
            Some("content"),
        ),
        (
            k("write_scratchpad", json!({ "topic": "keep", "content": 3 })),
            "INVALID_PAYLOAD",
            Some("content"),
        ),
        (
            k("write_scratchpad", json!({ "topic": "x".repeat(201), "content": "c" })),
            "INVALID_PAYLOAD",
            Some("topic"),
        ),
        (
            k("write_scratchpad", json!({ "topic": "keep", "content": "\u{0}c" })),
            "INVALID_PAYLOAD",
            Some("content"),
        ),
        (
            k(
                "write_scratchpad",
                json!({ "topic": "\u{200B}\u{202E}", "content": "c" }),
            ),
            "INVALID_PAYLOAD",
            Some("topic"),
        ),
        (k("read_scratchpad", json!({})), "INVALID_PAYLOAD", Some("id")),
        (
            k("read_scratchpad", json!({ "id": "Not A Slug" })),
            "INVALID_PAYLOAD",
            Some("id"),
        ),
        (
            k("delete_scratchpad", json!({ "id": "nope" })),
            "INVALID_PAYLOAD",
            Some("id"),
        ),
        (
            k("list_scratchpad", json!({ "limit": "many" })),
            "INVALID_PAYLOAD",
            Some("limit"),
        ),
        (k("search", json!({})), "INVALID_PAYLOAD", Some("query")),
        (
            k("search", json!({ "query": "x", "include": ["sessions"] })),
            "INVALID_PAYLOAD",
            Some("include[0]"),
        ),
    ];
    for (args, code, field) in cases {
        let e = s.err("knowledge", args.clone(), code).await;
        if let Some(field) = field {
            assert_eq!(e["details"]["field"], field, "{args}: {e}");
        }
    }
    // FTS syntax in searches is just words.
    for q in ["\"", "*", "NEAR(", "a OR", "title:x", "(((("] {
        let found = s.ok("knowledge", k("search", json!({ "query": q }))).await;
        let listed = s.ok("knowledge", k("list_patterns", json!({ "search": q }))).await;
        // A text with no word in it says why it found nothing, as session search does.
        let wordless = !q.chars().any(char::is_alphanumeric);
        assert_eq!(found["note"].is_string(), wordless, "{q}: {found}");
        assert_eq!(listed["note"].is_string(), wordless, "{q}: {listed}");
    }
    assert_eq!(snapshot().await, before, "bad input changed the garden");
    s.stop().await;
}

/// resources/list pages through every pattern and note (200 to a page,
/// `nextCursor` between pages); a cursor it never gave is an error.
#[tokio::test]
async fn every_pattern_and_note_is_listed_page_by_page() {
    use thoughtbox::knowledge::NewPattern;
    use thoughtbox::store::{OpenOptionsStore, Store};
    let (_d, db) = temp_db();
    {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        let new: Vec<NewPattern> = (0..230)
            .map(|i| NewPattern {
                title: format!("Pattern {i}"),
                description: "d".into(),
                content: "c".into(),
                ..Default::default()
            })
            .collect();
        store.create_patterns_once(&new).unwrap();
        for i in 0..190 {
            store.write_note(&format!("note {i}"), "x").unwrap();
        }
    }
    let s = start(&db).await;
    let first = s.client.list_resources(None).await.unwrap();
    assert!(first.next_cursor.is_some());
    let all = s.client.list_all_resources().await.unwrap();
    let count = |prefix: &str| all.iter().filter(|r| r.uri.starts_with(prefix)).count();
    assert_eq!(count("thoughtbox://knowledge/patterns/"), 230);
    assert_eq!(count("thoughtbox://knowledge/notes/"), 190);
    assert!(all.iter().any(|r| r.uri == "thoughtbox://cipher"));
    let mut uris: Vec<&str> = all.iter().map(|r| r.uri.as_str()).collect();
    let n = uris.len();
    uris.sort_unstable();
    uris.dedup();
    assert_eq!(uris.len(), n, "no resource listed twice");
    for cursor in ["x", "knowledge:5", "knowledge:p:-1", "knowledge:q:5", "knowledge:p:+5"] {
        let bad = s
            .client
            .list_resources(Some(
                rmcp::model::PaginatedRequestParams::default().with_cursor(Some(cursor.into())),
            ))
            .await;
        assert!(bad.is_err(), "{cursor}");
    }

    // Changes between pages neither hide nor repeat what was there before.
    let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
    let first = s.client.list_resources(None).await.unwrap();
    let on_first: Vec<String> = first.resources.iter().map(|r| r.uri.clone()).collect();
    let id_of = |uri: &str| uri.rsplit('/').next().unwrap().to_string();
    let gone: Vec<String> = on_first
        .iter()
        .filter(|u| u.contains("/patterns/"))
        .take(3)
        .map(|u| id_of(u))
        .collect();
    for id in &gone {
        store.delete_pattern(id).unwrap();
    }
    store
        .create_pattern(NewPattern {
            title: "Made between pages".into(),
            description: "d".into(),
            content: "c".into(),
            ..Default::default()
        })
        .unwrap();
    let mut seen = on_first.clone();
    let mut cursor = first.next_cursor.clone();
    while let Some(c) = cursor {
        let page = s
            .client
            .list_resources(Some(
                rmcp::model::PaginatedRequestParams::default().with_cursor(Some(c)),
            ))
            .await
            .unwrap();
        seen.extend(page.resources.iter().map(|r| r.uri.clone()));
        cursor = page.next_cursor;
    }
    let n = seen.len();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), n, "listed twice");
    let patterns = seen.iter().filter(|u| u.contains("/patterns/")).count();
    let notes = seen.iter().filter(|u| u.contains("/notes/")).count();
    assert_eq!((patterns, notes), (230, 190), "what existed throughout is listed once");
    s.stop().await;
}

/// What an agent needs to get a call right the first time: every missing
/// required field at once, and whether a note was replaced.
#[tokio::test]
async fn answers_name_every_missing_field_and_a_replaced_note() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    // Before any session: finding one is list_sessions' job.
    let e = s
        .err(
            "session",
            json!({ "subOperation": "search", "query": "x" }),
            "STAGE_REQUIREMENT_NOT_MET",
        )
        .await;
    assert!(
        e["details"]["suggestion"].as_str().unwrap().contains("list_sessions"),
        "{e}"
    );
    s.ready("garden").await;
    let e = s
        .err(
            "knowledge",
            json!({ "subOperation": "create_pattern", "tags": ["x"] }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(
        e["details"]["missing"],
        json!(["title", "description", "content"]),
        "{e}"
    );
    let write = |content: &str| json!({ "subOperation": "write_scratchpad", "topic": "todo", "content": content });
    let first = s.ok("knowledge", write("one")).await;
    assert_eq!(
        (first["created"].clone(), first["replaced"].clone()),
        (json!(true), json!(false))
    );
    let again = s.ok("knowledge", write("two")).await;
    assert_eq!(
        (again["created"].clone(), again["replaced"].clone()),
        (json!(false), json!(true))
    );
    s.stop().await;
}

#[tokio::test]
async fn a_pattern_given_a_session_id_is_linked_to_that_session() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let first = s.ready("where it was learnt").await;
    let second = s.ready("where it was used again").await;
    // An agent names the session it works in, as it does for a thought.
    let p = s
        .ok(
            "knowledge",
            k(
                "create_pattern",
                json!({ "title": "Retry with backoff", "description": "d", "content": "c", "sessionId": first.to_uppercase() }),
            ),
        )
        .await;
    assert_eq!(p["derivedFromSessions"], json!([first]), "{p}");
    assert!(p.get("ignoredArguments").is_none(), "{p}");
    // Given beside the list, it is added once.
    let both = s
        .ok(
            "knowledge",
            k(
                "create_pattern",
                json!({ "title": "Both", "description": "d", "content": "c",
                        "derivedFromSessions": [first], "session_id": second }),
            ),
        )
        .await;
    assert_eq!(both["derivedFromSessions"], json!([first, second]), "{both}");
    // On an update it adds to the sessions the pattern has.
    let up = s
        .ok(
            "knowledge",
            k(
                "update_pattern",
                json!({ "id": "retry-with-backoff", "sessionId": second }),
            ),
        )
        .await;
    assert_eq!(up["derivedFromSessions"], json!([first, second]), "{up}");
    // An unknown session is refused, and nothing changes.
    let missing = "00000000-0000-4000-8000-000000000000";
    s.err(
        "knowledge",
        k(
            "update_pattern",
            json!({ "id": "retry-with-backoff", "sessionId": missing }),
        ),
        "SESSION_NOT_FOUND",
    )
    .await;
    s.err(
        "knowledge",
        k(
            "create_pattern",
            json!({ "title": "Nowhere", "description": "d", "content": "c", "sessionId": missing }),
        ),
        "SESSION_NOT_FOUND",
    )
    .await;
    for blank in ["", "  "] {
        let e = s
            .err(
                "knowledge",
                k(
                    "update_pattern",
                    json!({ "id": "retry-with-backoff", "sessionId": blank }),
                ),
                "INVALID_PAYLOAD",
            )
            .await;
        assert_eq!(e["details"]["field"], "sessionId", "{e}");
    }
    let got = s
        .ok("knowledge", k("get_pattern", json!({ "id": "retry-with-backoff" })))
        .await;
    assert_eq!(got["derivedFromSessions"], json!([first, second]), "{got}");
    s.err(
        "knowledge",
        k("get_pattern", json!({ "id": "nowhere" })),
        "INVALID_PAYLOAD",
    )
    .await;
    s.stop().await;
}

/// list_patterns' search scores a pattern as `search` does (it answered
/// FTS5's bm25, ~3e-6 beside search's ~0.4): the same pattern, the same
/// query, the same score, whatever the page or tags; the page ordered by it.
#[tokio::test]
async fn list_patterns_scores_as_knowledge_search_does() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("scores").await;
    s.ok("cipher", Value::Null).await;
    let patterns = [
        (
            "Cache stampede causes p99",
            "cache stampede",
            "Many misses at once.",
            vec!["ops"],
        ),
        (
            "Cache stampede on deploy",
            "d",
            "Use request coalescing and jitter after a deploy.",
            vec!["ops", "deploy"],
        ),
        (
            "Revising the pool",
            "d",
            "The db pool was fine, it was the cache stampede all along, said the postmortem at length.",
            vec!["ops"],
        ),
        ("Unrelated", "d", "Nothing about it.", vec!["ops"]),
    ];
    for (title, description, content, tags) in patterns {
        s.ok(
            "knowledge",
            k(
                "create_pattern",
                json!({ "title": title, "description": description, "content": content, "tags": tags }),
            ),
        )
        .await;
    }
    let scores = |v: &Value, key: &str| -> Vec<(String, f64)> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| (p["id"].as_str().unwrap().to_string(), p["score"].as_f64().unwrap()))
            .collect()
    };
    for q in ["cache stampede", "cache", "coalescing"] {
        let found = scores(&s.ok("knowledge", k("search", json!({ "query": q }))).await, "patterns");
        let listed = scores(
            &s.ok(
                "knowledge",
                k("list_patterns", json!({ "search": q, "includeContent": false })),
            )
            .await,
            "patterns",
        );
        assert!(!found.is_empty());
        assert_eq!(listed, found, "{q}");
        assert!(found.iter().all(|(_, score)| *score > 0.01), "{found:?}");
        assert!(listed.windows(2).all(|w| w[0].1 >= w[1].1), "best first: {listed:?}");
        // One to a page, a tag filter, another sort: the same scores.
        for (i, (id, score)) in found.iter().enumerate() {
            let page = s
                .ok(
                    "knowledge",
                    k("list_patterns", json!({ "search": q, "limit": 1, "offset": i })),
                )
                .await;
            assert_eq!(scores(&page, "patterns"), [(id.clone(), *score)], "{q} page {i}");
            assert_eq!(page["total"], found.len());
        }
        let tagged = scores(
            &s.ok(
                "knowledge",
                k("list_patterns", json!({ "search": q, "tags": ["deploy"] })),
            )
            .await,
            "patterns",
        );
        let deploy: Vec<(String, f64)> = found
            .iter()
            .filter(|(id, _)| id == "cache-stampede-on-deploy")
            .cloned()
            .collect();
        assert_eq!(tagged, deploy, "{q}");
        let mut by_title = scores(
            &s.ok(
                "knowledge",
                k(
                    "list_patterns",
                    json!({ "search": q, "sortBy": "title", "sortOrder": "asc" }),
                ),
            )
            .await,
            "patterns",
        );
        by_title.sort_by(|a, b| b.1.total_cmp(&a.1));
        assert_eq!(by_title, found, "{q}");
        // A limited search scores as the whole one does.
        let one = scores(
            &s.ok("knowledge", k("search", json!({ "query": q, "limit": 1 }))).await,
            "patterns",
        );
        assert_eq!(one, found[..1], "{q}");
    }
}

/// update_pattern given only a name it does not take (`body`) refuses that
/// name, with the field meant, instead of "needs at least one of title..."
/// naming `title`; the pattern is left as it was.
#[tokio::test]
async fn update_pattern_names_an_unknown_field_and_the_one_meant() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("updates").await;
    s.ok("cipher", Value::Null).await;
    let before = s
        .ok(
            "knowledge",
            k(
                "create_pattern",
                json!({ "title": "Retry with jitter", "description": "d", "content": "c" }),
            ),
        )
        .await;
    let id = before["id"].as_str().unwrap();
    let cases = [
        (json!({ "body": "x" }), "body", Some("content")),
        (json!({ "contnet": "x" }), "contnet", Some("content")),
        (json!({ "author": "me" }), "author", Some("createdBy")),
        (json!({ "zzz": 1, "summary": "s" }), "summary", Some("description")),
        (json!({ "zzz": 1 }), "zzz", None),
    ];
    for (fields, field, meant) in cases {
        let mut args = fields.clone();
        args["id"] = json!(id);
        let e = s.err("knowledge", k("update_pattern", args), "INVALID_PAYLOAD").await;
        assert_eq!(e["details"]["field"], field, "{fields}: {e}");
        assert_eq!(e["details"]["didYouMean"].as_str(), meant, "{fields}: {e}");
        assert!(e["message"].as_str().unwrap().contains("not a parameter"), "{e}");
    }
    // Nothing given at all: still the list of fields it changes.
    let e = s
        .err("knowledge", k("update_pattern", json!({ "id": id })), "INVALID_PAYLOAD")
        .await;
    assert!(e["message"].as_str().unwrap().contains("at least one of"), "{e}");
    let after = s.ok("knowledge", k("get_pattern", json!({ "id": id }))).await;
    assert_eq!(after, before, "nothing was written");
}

/// `search` said nothing when it stopped short: neither that more patterns
/// matched than its `limit`, nor that over 1,000 matched, when it answers the
/// best of the newest 1,000 (an older pattern may score higher).
#[tokio::test]
async fn knowledge_search_says_when_it_stopped_short() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("Queues").await;
    for i in 0..3 {
        s.ok(
            "knowledge",
            k(
                "create_pattern",
                json!({ "title": format!("Queue pattern {i}"), "description": "bounded queue", "content": "Back-pressure." }),
            ),
        )
        .await;
    }
    s.ok(
        "knowledge",
        k(
            "write_scratchpad",
            json!({ "topic": "queue", "content": "queue depth" }),
        ),
    )
    .await;
    let short = s
        .ok("knowledge", k("search", json!({ "query": "queue", "limit": 2 })))
        .await;
    assert_eq!(short["patterns"].as_array().unwrap().len(), 2, "{short}");
    assert_eq!(
        (
            &short["morePatterns"],
            &short["moreNotes"],
            &short["limitReached"],
            &short["limit"]
        ),
        (&json!(true), &json!(false), &json!(true), &json!(2)),
        "{short}"
    );
    assert!(
        short.get("patternsRankedNewest").is_none() && short.get("note").is_none(),
        "{short}"
    );
    let all = s.ok("knowledge", k("search", json!({ "query": "queue" }))).await;
    assert_eq!(
        (all["count"].as_u64(), &all["limitReached"]),
        (Some(4), &json!(false)),
        "{all}"
    );
    let notes_only = s
        .ok(
            "knowledge",
            k("search", json!({ "query": "queue", "limit": 1, "include": ["notes"] })),
        )
        .await;
    assert!(notes_only.get("morePatterns").is_none(), "{notes_only}");
    assert_eq!(notes_only["limitReached"], false, "{notes_only}");
    // session search with the garden says the same of it.
    let with = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "queue", "limit": 2, "include": ["patterns", "notes"] }),
        )
        .await;
    assert_eq!(
        (&with["morePatterns"], &with["moreNotes"]),
        (&json!(true), &json!(false)),
        "{with}"
    );
    // Past the 1,000 newest matches, which are all that is ranked.
    for i in 3..1001 {
        s.ok(
            "knowledge",
            k(
                "create_pattern",
                json!({ "title": format!("Queue pattern {i}"), "description": "queue", "content": "x" }),
            ),
        )
        .await;
    }
    let many = s.ok("knowledge", k("search", json!({ "query": "queue" }))).await;
    assert_eq!(
        (
            &many["morePatterns"],
            &many["patternsRankedNewest"],
            &many["limitReached"]
        ),
        (&json!(true), &json!(1000), &json!(true)),
        "{many}"
    );
    assert!(many["note"].as_str().unwrap().contains("newest 1000"), "{many}");
    assert!(many.get("notesRankedNewest").is_none(), "{many}");
    s.stop().await;
}

/// Tags match exactly: a filter in other capitals than the tag carried
/// finds nothing, and says which spelling is carried.
#[tokio::test]
async fn a_tag_filter_in_other_letter_case_names_the_tag_carried() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ok(
        "start_new",
        json!({ "title": "Migration plan", "tags": ["q3 plan", "Äpfel"], "newWork": { "project": "billing" } }),
    )
    .await;
    s.ok("cipher", json!({})).await;
    for (filter, tag, other) in [
        (json!({ "tags": ["Q3 Plan"] }), "Q3 Plan", json!(["q3 plan"])),
        (json!({ "tag": "äpfel" }), "äpfel", json!(["Äpfel"])),
        (
            json!({ "project": "Billing" }),
            "project:Billing",
            json!(["project:billing"]),
        ),
    ] {
        let l = s.ok("list_sessions", filter.clone()).await;
        assert_eq!(l["total"], 0, "{filter}: {l}");
        assert_eq!(l["otherSpellings"][tag], other, "{filter}: {l}");
        assert!(l["note"].as_str().unwrap().contains("letter case"), "{l}");
    }
    // A tag nobody carries in any case: no such note.
    let l = s.ok("list_sessions", json!({ "tags": ["nope"] })).await;
    assert!(l.get("otherSpellings").is_none(), "{l}");
    let l = s.ok("list_sessions", json!({ "tags": ["q3 plan"] })).await;
    assert_eq!(l["total"], 1, "{l}");
    s.ok(
        "knowledge",
        k(
            "create_pattern",
            json!({ "title": "T", "description": "d", "content": "c", "tags": ["Caching"] }),
        ),
    )
    .await;
    let l = s
        .ok("knowledge", k("list_patterns", json!({ "tags": ["caching"] })))
        .await;
    assert_eq!(
        (&l["total"], &l["otherSpellings"]["caching"]),
        (&json!(0), &json!(["Caching"])),
        "{l}"
    );
    s.stop().await;
}

/// A page of patterns or notes cuts each content for a model, saying its
/// length; reading one answers it whole.
#[tokio::test]
async fn pages_cut_long_contents_and_one_read_is_whole() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("long knowledge").await;
    let long = "é".repeat(10_000);
    s.ok(
        "knowledge",
        k(
            "create_pattern",
            json!({ "title": "Long", "description": "d", "content": long, "tags": [] }),
        ),
    )
    .await;
    s.ok(
        "knowledge",
        k("write_scratchpad", json!({ "topic": "Long", "content": long })),
    )
    .await;
    s.ok(
        "knowledge",
        k("write_scratchpad", json!({ "topic": "Short", "content": "brief" })),
    )
    .await;
    let page = s.ok("knowledge", k("list_patterns", json!({}))).await;
    assert_eq!(page["patterns"][0]["content"].as_str().unwrap().chars().count(), 4_000);
    assert_eq!(page["patterns"][0]["contentChars"], 10_000);
    let whole = s.ok("knowledge", k("get_pattern", json!({ "id": "long" }))).await;
    assert_eq!(whole["content"].as_str().unwrap(), long);
    assert!(whole.get("contentChars").is_none(), "{}", whole["contentChars"]);
    let notes = s.ok("knowledge", k("list_scratchpad", json!({}))).await;
    let note = |id: &str| {
        notes["notes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|n| n["id"] == id)
            .unwrap()
            .clone()
    };
    assert_eq!(note("long")["contentChars"], 10_000);
    assert_eq!(note("short")["content"], "brief");
    assert!(note("short").get("contentChars").is_none());
    let one = s
        .ok("knowledge", k("read_scratchpad", json!({ "topic": "Long" })))
        .await;
    assert_eq!(one["content"].as_str().unwrap(), long);
    s.stop().await;
}
