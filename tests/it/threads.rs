//! The thread registry (docs/threads.md) through the real binary: every
//! sub-operation of `thread`, the status rules on thoughts, updates and
//! deletes, the registry export and import, two processes changing the
//! registry at once, and the `thoughtbox threads` commands.

use serde_json::{Value, json};
use thoughtbox::domain::thread::validate;

use crate::cli::{fails, ok, ok_json, run};
use crate::common::*;

fn th(sub: &str, args: Value) -> Value {
    let mut a = args;
    a["subOperation"] = json!(sub);
    a
}

/// The registry export must keep every validation rule of the format.
fn assert_valid(registry: &Value) {
    assert_eq!(validate(registry, None), vec![], "{registry:#}");
}

async fn spawn(s: &Server, parent: Option<&str>, title: &str) -> String {
    let mut args = json!({ "title": title, "objective": format!("find out {title}") });
    if let Some(p) = parent {
        args["parentId"] = json!(p);
    }
    let a = s.ok("thread", th("spawn", args)).await;
    a["threadId"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn every_sub_operation_and_status_rule() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    // An existing session is an active root thread, with no step by the user.
    let root = s.ready("Plan the migration").await;
    s.thought(json!({ "sessionId": root, "thought": "first step", "nextThoughtNeeded": true }))
        .await;
    let g = s.ok("thread", th("get", json!({ "threadId": root }))).await;
    assert_eq!(g["sessionId"], json!(root));
    assert_eq!(g["thread"]["status"], "active");
    assert_eq!(g["thread"]["parent_id"], Value::Null);
    assert_eq!(g["thread"]["objective"], "Plan the migration");
    assert!(
        g["thread"]["storage_path"]
            .as_str()
            .unwrap()
            .starts_with("projects/_default/sessions/")
    );
    assert!(g["thread"]["storage_path"].as_str().unwrap().ends_with(&root));
    assert_eq!(
        g["relations"],
        json!({ "children": [], "references_to": [], "referenced_by": [], "depends_on": [] })
    );

    // spawn: a child session, logged as the agent's.
    let a = s
        .ok(
            "thread",
            th(
                "spawn",
                json!({ "parentId": root, "title": "Schema", "objective": "the new schema", "tags": ["db"] }),
            ),
        )
        .await;
    let child = a["sessionId"].as_str().unwrap().to_string();
    assert_eq!(a["threadId"], json!(child));
    assert_eq!(a["thread"]["parent_id"], json!(root));
    assert_eq!(a["operation"]["command"], "spawn");
    assert_eq!(a["operation"]["operator"], "agent");
    assert_eq!(a["operation"]["params"]["parent_id"], json!(root));
    assert_eq!(a["operation"]["params"]["child_id"], json!(child));
    assert_eq!(a["operation"]["params"]["objective"], "the new schema");
    // The child is a session like any other: thoughts go to it by its id.
    s.thought(json!({ "sessionId": child, "thought": "tables first", "nextThoughtNeeded": true }))
        .await;
    let other = spawn(&s, None, "Rollout").await;

    // reference (with a thought node as asset) and depend.
    let r = s
        .ok(
            "thread",
            th(
                "reference",
                json!({ "fromId": child, "toId": root, "assetPath": format!("{root}:1"), "operator": "system" }),
            ),
        )
        .await;
    assert_eq!(r["recorded"], true);
    assert_eq!(r["operation"]["operator"], "system");
    assert_eq!(r["operation"]["params"]["asset_path"], json!(format!("{root}:1")));
    assert_eq!(r["relations"]["references_to"], json!([root]));
    let again = s
        .ok(
            "thread",
            th(
                "reference",
                json!({ "fromId": child, "toId": root, "assetPath": format!("{root}:1") }),
            ),
        )
        .await;
    assert_eq!(again["recorded"], false, "recorded once");
    assert_eq!(again["operation"], Value::Null);
    let d = s
        .ok("thread", th("depend", json!({ "fromId": other, "toId": child })))
        .await;
    assert_eq!(d["relations"]["depends_on"], json!([child]));

    // update.
    let u = s
        .ok(
            "thread",
            th(
                "update",
                json!({ "threadId": child, "title": "Schema v2", "tags": ["db", "v2"] }),
            ),
        )
        .await;
    assert_eq!(u["thread"]["title"], "Schema v2");
    assert_eq!(
        u["operation"]["params"],
        json!({ "thread_id": child, "title": "Schema v2", "tags": ["db", "v2"] })
    );

    // get, list, tree.
    let g = s.ok("thread", th("get", json!({ "threadId": root }))).await;
    assert_eq!(g["relations"]["children"], json!([child]));
    assert_eq!(g["relations"]["referenced_by"], json!([child]));
    let l = s.ok("thread", th("list", json!({ "parentId": root }))).await;
    assert_eq!(l["total"], 1);
    assert_eq!(l["threads"][0]["id"], json!(child));
    let l = s.ok("thread", th("list", json!({ "tag": "v2" }))).await;
    assert_eq!(l["count"], 1);
    let l = s.ok("thread", th("list", json!({ "limit": 2 }))).await;
    assert_eq!((l["total"].as_u64(), l["hasMore"].as_bool()), (Some(3), Some(true)));
    let grandchild = spawn(&s, Some(&child), "Indexes").await;
    let t = s.ok("thread", th("tree", json!({ "threadId": root }))).await;
    assert_eq!(t["count"], 2);
    assert_eq!(t["children"][0]["id"], json!(child));
    assert_eq!(t["children"][0]["children"][0]["id"], json!(grandchild));
    assert_eq!(t["children"][0]["children"][0]["depth"], 2);

    // freeze: reads, exports, search and references still work; thoughts,
    // revisions, branches, updates and deletes are refused, nothing written.
    let f = s.ok("thread", th("freeze", json!({ "threadId": child }))).await;
    assert_eq!(f["thread"]["status"], "frozen");
    for args in [
        json!({ "sessionId": child, "thought": "more", "nextThoughtNeeded": true }),
        json!({ "sessionId": child, "thought": "fix", "nextThoughtNeeded": true, "isRevision": true, "revisesThought": 1 }),
        json!({ "sessionId": child, "thought": "alt", "nextThoughtNeeded": true, "branchId": "alt", "branchFromThought": 1 }),
    ] {
        let e = s.err("thought", args, "INVALID_OPERATION").await;
        assert_eq!(e["details"]["threadId"], json!(child));
        assert_eq!(e["details"]["status"], "frozen");
    }
    let e = s
        .err(
            "thread",
            th("update", json!({ "threadId": child, "objective": "x" })),
            "INVALID_OPERATION",
        )
        .await;
    assert_eq!(e["details"]["status"], "frozen");
    s.err(
        "session",
        json!({ "subOperation": "delete", "sessionId": child }),
        "INVALID_OPERATION",
    )
    .await;
    let got = s
        .ok("session", json!({ "subOperation": "get", "sessionId": child }))
        .await;
    assert_eq!(got["session"]["thoughtCount"], 1, "nothing was written");
    s.ok("session", json!({ "subOperation": "export", "sessionId": child }))
        .await;
    let found = s
        .ok("session", json!({ "subOperation": "search", "query": "tables" }))
        .await;
    assert_eq!(found["count"], 1);
    s.ok("read_thoughts", json!({ "sessionId": child })).await;
    let r = s
        .ok("thread", th("reference", json!({ "fromId": other, "toId": child })))
        .await;
    assert_eq!(r["recorded"], true, "a frozen thread can be cited");
    // load_context opens it to read, says so, and does not reopen it.
    s.thought(json!({ "sessionId": root, "thought": "done", "nextThoughtNeeded": false }))
        .await;
    s.ok("thread", th("freeze", json!({ "threadId": root }))).await;
    let opened = s.ok("load_context", json!({ "sessionId": root })).await;
    assert!(opened["note"].as_str().unwrap().contains("frozen thread"), "{opened}");
    assert!(opened.get("reopened").is_none(), "{opened}");
    assert!(
        opened["session"]["completedAt"].is_string(),
        "still completed: {opened}"
    );
    // Its children are not frozen.
    s.thought(json!({ "sessionId": grandchild, "thought": "still open", "nextThoughtNeeded": true }))
        .await;
    // Status rules: frozen -> frozen is refused naming both statuses.
    let e = s
        .err(
            "thread",
            th("freeze", json!({ "threadId": child })),
            "INVALID_OPERATION",
        )
        .await;
    assert_eq!(e["details"]["status"], "frozen");
    assert_eq!(e["details"]["allowedStatuses"], json!(["archived"]));
    s.ok("thread", th("archive", json!({ "threadId": child }))).await;
    let e = s
        .err(
            "thread",
            th("archive", json!({ "threadId": child })),
            "INVALID_OPERATION",
        )
        .await;
    assert_eq!(e["details"]["allowedStatuses"], json!([]));
    let e = s
        .err(
            "thread",
            th("spawn", json!({ "parentId": child, "title": "t", "objective": "o" })),
            "INVALID_OPERATION",
        )
        .await;
    assert_eq!(e["details"]["status"], "archived");
    // active -> archived directly.
    s.ok("thread", th("archive", json!({ "threadId": other }))).await;
    let l = s.ok("thread", th("list", json!({ "status": "archived" }))).await;
    assert_eq!(l["total"], 2);

    // log: newest first, filtered by thread.
    let log = s.ok("thread", th("log", json!({ "threadId": child }))).await;
    let commands: Vec<&str> = log["operations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        commands,
        [
            "archive",
            "reference",
            "freeze",
            "spawn",
            "update",
            "depend",
            "reference",
            "spawn"
        ]
    );
    let all = s.ok("thread", th("log", json!({ "limit": 1 }))).await;
    assert_eq!(all["total"], 11);
    assert_eq!(all["operations"][0]["command"], "archive");

    // export, then import into an empty ledger: the same registry.
    let registry = s.ok("thread", th("export", json!({}))).await;
    assert_valid(&registry);
    assert_eq!(registry["version"], "1.0.0");
    assert_eq!(registry["metadata"]["thread_count"], 4);
    assert_eq!(registry["operations"].as_array().unwrap().len(), 11);
    for key in registry.as_object().unwrap().keys() {
        assert!(["version", "metadata", "threads", "operations", "relations"].contains(&key.as_str()));
    }
    s.stop().await;
    let (_d2, db2) = temp_db();
    let s2 = start(&db2).await;
    s2.ok("start_new", json!({ "sessionTitle": "only to reach stage 1" }))
        .await;
    // The stage's session is a thread too: import into a ledger holding it,
    // and compare without it.
    let imported = s2.ok("thread", th("import", json!({ "registry": registry }))).await;
    assert_eq!(imported["threadsCreated"], 4);
    assert_eq!(imported["operationsAdded"], 11);
    let mut back = s2.ok("thread", th("export", json!({}))).await;
    let extra: Vec<String> = back["threads"]
        .as_object()
        .unwrap()
        .keys()
        .filter(|k| registry["threads"].get(k.as_str()).is_none())
        .cloned()
        .collect();
    assert_eq!(extra.len(), 1);
    back["threads"].as_object_mut().unwrap().remove(&extra[0]);
    back["relations"].as_object_mut().unwrap().remove(&extra[0]);
    back["metadata"]["thread_count"] = json!(4);
    back["metadata"]["last_updated"] = registry["metadata"]["last_updated"].clone();
    assert_eq!(back, registry);
    // The imported frozen-then-archived thread refuses thoughts there too.
    s2.ok("cipher", Value::Null).await;
    s2.err(
        "thought",
        json!({ "sessionId": child, "thought": "x", "nextThoughtNeeded": true }),
        "INVALID_OPERATION",
    )
    .await;
    s2.stop().await;
}

/// The handle a stateless client passes to be admitted is the parent when
/// parentId is not given; with neither, the thread is a root. An update's
/// tags keep the project tag.
#[tokio::test]
async fn a_spawn_naming_its_session_is_a_child_and_updates_keep_the_project() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let root = s.ready("Plan the migration").await;
    let a = s
        .ok(
            "thread",
            th(
                "spawn",
                json!({ "sessionId": root, "title": "Data", "objective": "copy the data" }),
            ),
        )
        .await;
    assert_eq!(a["thread"]["parent_id"], json!(root), "{a}");
    // The child cites one of its parent's notebooks.
    let notebook = s
        .ok(
            "notebook",
            json!({ "subOperation": "create", "name": "Plan", "sessionId": root }),
        )
        .await["notebookId"]
        .clone();
    let cited = s
        .ok(
            "thread",
            th(
                "reference",
                json!({ "fromId": a["threadId"], "toId": root, "assetPath": notebook }),
            ),
        )
        .await;
    assert_eq!(cited["recorded"], true, "{cited}");
    let b = s
        .ok("thread", th("spawn", json!({ "title": "Alone", "objective": "o" })))
        .await;
    assert_eq!(b["thread"]["parent_id"], Value::Null, "{b}");
    // A client that must name its session to be admitted asks for a root.
    let r = s
        .ok(
            "thread",
            th(
                "spawn",
                json!({ "sessionId": root, "root": true, "title": "Own", "objective": "o" }),
            ),
        )
        .await;
    assert_eq!(r["thread"]["parent_id"], Value::Null, "{r}");
    s.err(
        "thread",
        th(
            "spawn",
            json!({ "parentId": root, "root": true, "title": "Both", "objective": "o" }),
        ),
        "INVALID_PAYLOAD",
    )
    .await;
    // New tags keep the project, which files the thread, unless one is given.
    let c = s
        .ok(
            "thread",
            th(
                "spawn",
                json!({ "title": "Billing", "objective": "o", "tags": ["project:billing"] }),
            ),
        )
        .await;
    let (id, path) = (c["threadId"].clone(), c["thread"]["storage_path"].clone());
    let u = s
        .ok("thread", th("update", json!({ "threadId": id, "tags": ["reviewed"] })))
        .await;
    assert_eq!(u["thread"]["tags"], json!(["reviewed", "project:billing"]), "{u}");
    assert_eq!(u["thread"]["storage_path"], path);
    let u = s
        .ok(
            "thread",
            th("update", json!({ "threadId": id, "tags": ["project:web"] })),
        )
        .await;
    assert_eq!(u["thread"]["tags"], json!(["project:web"]), "{u}");
    s.stop().await;
}

#[tokio::test]
async fn bad_input_is_refused_and_changes_nothing() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    // Stage 1 first.
    s.err("thread", th("list", json!({})), "STAGE_REQUIREMENT_NOT_MET")
        .await;
    let a = s.ready("A").await;
    let b = spawn(&s, Some(&a), "B").await;
    let c = spawn(&s, None, "C").await;
    s.ok("thread", th("depend", json!({ "fromId": a, "toId": b }))).await;
    s.ok("thread", th("depend", json!({ "fromId": b, "toId": c }))).await;
    let before = s.ok("thread", th("export", json!({}))).await;
    let unknown = "00000000-0000-4000-8000-000000000000";

    let field = |e: &Value| e["details"]["field"].as_str().unwrap_or_default().to_string();
    for (sub, args) in [
        ("get", json!({ "threadId": unknown })),
        ("tree", json!({ "threadId": unknown })),
        ("freeze", json!({ "threadId": unknown })),
        ("archive", json!({ "threadId": unknown })),
        ("update", json!({ "threadId": unknown, "title": "t" })),
        ("reference", json!({ "fromId": unknown, "toId": a })),
        ("reference", json!({ "fromId": a, "toId": unknown })),
        ("depend", json!({ "fromId": a, "toId": unknown })),
        ("list", json!({ "parentId": unknown })),
        ("log", json!({ "threadId": unknown })),
    ] {
        let e = s.err("thread", th(sub, args.clone()), "SESSION_NOT_FOUND").await;
        assert_eq!(e["details"]["sessionId"], unknown, "{sub} {args}");
    }
    let e = s
        .err(
            "thread",
            th("spawn", json!({ "parentId": unknown, "title": "t", "objective": "o" })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(field(&e), "parentId");
    s.err(
        "thread",
        th("spawn", json!({ "sessionId": unknown, "title": "t", "objective": "o" })),
        "SESSION_NOT_FOUND",
    )
    .await;
    let e = s
        .err(
            "thread",
            th("reference", json!({ "fromId": a, "toId": a })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(field(&e), "toId");
    assert!(e["message"].as_str().unwrap().contains("itself"), "{e}");
    let e = s
        .err(
            "thread",
            th("depend", json!({ "fromId": b, "toId": b })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(field(&e), "toId");
    let e = s
        .err(
            "thread",
            th("depend", json!({ "fromId": c, "toId": a })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["cycle"], json!([a, b, c]));
    let e = s
        .err("thread", th("list", json!({ "status": "paused" })), "INVALID_PAYLOAD")
        .await;
    assert_eq!(field(&e), "status");
    let e = s
        .err(
            "thread",
            th("freeze", json!({ "threadId": a, "operator": "robot" })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(field(&e), "operator");
    let e = s
        .err("thread", th("spawn", json!({ "title": "t" })), "INVALID_PAYLOAD")
        .await;
    assert_eq!(field(&e), "objective");
    let e = s
        .err(
            "thread",
            th("spawn", json!({ "title": "  ", "objective": "o" })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(field(&e), "title");
    let e = s
        .err("thread", th("update", json!({ "threadId": a })), "INVALID_PAYLOAD")
        .await;
    assert!(e["message"].as_str().unwrap().contains("at least one"), "{e}");
    let e = s
        .err(
            "thread",
            th("reference", json!({ "fromId": a, "toId": b, "assetPath": "../etc" })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(field(&e), "assetPath");
    s.err(
        "thread",
        th(
            "reference",
            json!({ "fromId": b, "toId": a, "assetPath": format!("{a}:9") }),
        ),
        "THOUGHT_NOT_FOUND",
    )
    .await;
    // A notebook id must name one of the cited thread's notebooks.
    let of_b = s
        .ok(
            "notebook",
            json!({ "subOperation": "create", "name": "B's", "sessionId": b }),
        )
        .await["notebookId"]
        .as_str()
        .unwrap()
        .to_string();
    for asset in [of_b, "0b6f2c1e-8d4a-4c5e-9f3b-2a7d1e6c8b90".to_string()] {
        let e = s
            .err(
                "thread",
                th("reference", json!({ "fromId": b, "toId": a, "assetPath": asset })),
                "INVALID_PAYLOAD",
            )
            .await;
        assert_eq!(field(&e), "assetPath", "{e}");
    }
    let e = s.err("thread", th("fork", json!({})), "INVALID_OPERATION").await;
    assert!(e["message"].as_str().unwrap().contains("fork"), "{e}");
    s.err("thread", json!({}), "INVALID_PAYLOAD").await;

    // Each validation rule of the format broken once: named by its path,
    // nothing imported.
    let mut good = before.clone();
    good["threads"].as_object_mut().unwrap().clear();
    good["relations"].as_object_mut().unwrap().clear();
    good["operations"] = json!([]);
    good["metadata"]["thread_count"] = json!(0);
    const X: &str = "11111111-1111-4111-8111-111111111111";
    const Y: &str = "22222222-2222-4222-8222-222222222222";
    let t = json!({ "id": X, "title": "X", "objective": "o", "created_at": "2026-02-08T16:00:00Z", "status": "active",
                    "tags": [], "parent_id": null, "storage_path": format!("projects/_default/sessions/2026-02/{X}") });
    let with_two = |mut r: Value| {
        let mut y = t.clone();
        y["id"] = json!(Y);
        y["parent_id"] = json!(X);
        r["threads"] = json!({ X: t, Y: y });
        r["relations"] = json!({
            X: { "children": [Y], "references_to": [Y], "referenced_by": [], "depends_on": [] },
            Y: { "children": [], "references_to": [], "referenced_by": [X], "depends_on": [] },
        });
        r["metadata"]["thread_count"] = json!(2);
        r
    };
    let base = with_two(good.clone());
    type Break = Box<dyn Fn(&mut Value)>;
    let at = |p: &str| p.replace("{X}", X).replace("{Y}", Y);
    let cases: Vec<(String, Break)> = vec![
        (at("version"), Box::new(|r| r["version"] = json!("one"))),
        (
            at("metadata.last_updated"),
            Box::new(|r| r["metadata"]["last_updated"] = json!("2026-02-30T00:00:00Z")),
        ),
        (
            at("threads.{X}.status"),
            Box::new(|r| r["threads"][X]["status"] = json!("paused")),
        ),
        (at("threads.{Y}.id"), Box::new(|r| r["threads"][Y]["id"] = json!(X))),
        (
            at("threads.{X}!"),
            Box::new(|r| {
                let mut bad = r["threads"][X].clone();
                bad["id"] = json!(format!("{X}!"));
                r["threads"][format!("{X}!")] = bad;
                r["metadata"]["thread_count"] = json!(3);
            }),
        ),
        (
            at("relations.{X}.children"),
            Box::new(|r| r["threads"][Y]["parent_id"] = json!(null)),
        ),
        (
            at("relations.{Y}.referenced_by"),
            Box::new(|r| r["relations"][Y]["referenced_by"] = json!([])),
        ),
        (
            at("relations.{X}.depends_on"),
            Box::new(|r| {
                r["relations"][X]["depends_on"] = json!([Y]);
                r["relations"][Y]["depends_on"] = json!([X]);
            }),
        ),
        (
            at("operations[0].operator"),
            Box::new(|r| {
                r["operations"] = json!([{ "id": "o1", "timestamp": "2026-02-08T16:00:00Z", "command": "freeze",
                                           "operator": "robot", "params": { "thread_id": X } }])
            }),
        ),
        (
            at("operations[0].timestamp"),
            Box::new(|r| {
                r["operations"] = json!([{ "id": "o1", "timestamp": "Feb 8", "command": "freeze",
                                           "operator": "user", "params": { "thread_id": X } }])
            }),
        ),
        // Valid by the format's rules, but not a session id this ledger can
        // hold.
        (
            at("threads.plan_b"),
            Box::new(|r| {
                let mut other = r["threads"][X].clone();
                other["id"] = json!("plan_b");
                r["threads"]["plan_b"] = other;
                r["relations"]["plan_b"] =
                    json!({ "children": [], "references_to": [], "referenced_by": [], "depends_on": [] });
                r["metadata"]["thread_count"] = json!(3);
            }),
        ),
    ];
    let log_before = s.ok("thread", th("log", json!({}))).await["total"].clone();
    for (path, break_it) in cases {
        let mut r = base.clone();
        break_it(&mut r);
        let e = s
            .err("thread", th("import", json!({ "registry": r })), "INVALID_PAYLOAD")
            .await;
        let paths: Vec<&str> = e["details"]["violations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["path"].as_str().unwrap())
            .collect();
        assert!(paths.contains(&path.as_str()), "{path}: {paths:?}");
        s.err("thread", th("get", json!({ "threadId": X })), "SESSION_NOT_FOUND")
            .await;
    }
    assert_eq!(s.ok("thread", th("log", json!({}))).await["total"], log_before);
    // The base itself imports; the ledger then refuses a status going back.
    let done = s.ok("thread", th("import", json!({ "registry": base }))).await;
    assert_eq!(done["threadsCreated"], 2);
    assert_eq!(
        s.ok("thread", th("get", json!({ "threadId": X }))).await["relations"]["children"],
        json!([Y])
    );
    s.ok("thread", th("freeze", json!({ "threadId": X }))).await;
    // Imported again, the older registry leaves the frozen thread be.
    let done = s.ok("thread", th("import", json!({ "registry": base }))).await;
    assert_eq!(done["threadsKept"], 1, "{done}");
    // One that changed the thread later elsewhere cannot make it active.
    let mut newer = base.clone();
    newer["operations"] = json!([{
        "id": "9f0c1d2e-3a4b-4c5d-8e6f-7a8b9c0d1e2f", "timestamp": "2999-01-01T00:00:00.000Z",
        "command": "update", "operator": "agent", "params": { "thread_id": X, "title": "X" },
    }]);
    let e = s
        .err("thread", th("import", json!({ "registry": newer })), "INVALID_PAYLOAD")
        .await;
    assert_eq!(e["details"]["violations"][0]["path"], at("threads.{X}.status"));
    // Nothing else changed, and the server still serves.
    let after = s.ok("thread", th("log", json!({ "limit": 100 }))).await;
    assert_eq!(
        after["total"], 5,
        "two spawns, two dependencies and the freeze: {after}"
    );
    s.ok("get_state", Value::Null).await;
    s.stop().await;
}

const EACH: usize = 12;

/// Spawn [`EACH`] children of `root`, each referencing it and depending on
/// the one before.
async fn work(s: &Server, tag: &str, root: &str) -> Vec<String> {
    let mut mine: Vec<String> = Vec::new();
    for i in 0..EACH {
        let id = spawn(s, Some(root), &format!("{tag}{i}")).await;
        s.ok("thread", th("reference", json!({ "fromId": id, "toId": root })))
            .await;
        if let Some(prev) = mine.last() {
            s.ok("thread", th("depend", json!({ "fromId": id, "toId": prev })))
                .await;
        }
        mine.push(id);
    }
    mine
}

#[tokio::test]
async fn two_processes_change_the_registry_at_once() {
    let (_d, db) = temp_db();
    let a = start(&db).await;
    let b = start(&db).await;
    let root = a.ready("Shared root").await;
    b.ok("start_new", json!({ "sessionTitle": "b's own" })).await;
    let (from_a, from_b) = tokio::join!(work(&a, "a", &root), work(&b, "b", &root));
    let registry = a.ok("thread", th("export", json!({}))).await;
    assert_valid(&registry);
    // Every change logged once: 2 x (12 spawns + 12 references + 11 dependencies).
    assert_eq!(registry["operations"].as_array().unwrap().len(), 2 * (3 * EACH - 1));
    let children = registry["relations"][&root]["children"].as_array().unwrap();
    assert_eq!(children.len(), 2 * EACH);
    assert_eq!(
        registry["relations"][&root]["referenced_by"].as_array().unwrap().len(),
        2 * EACH
    );
    for id in from_a.iter().chain(&from_b) {
        assert!(children.contains(&json!(id)));
    }
    a.stop().await;
    b.stop().await;
}

#[tokio::test]
async fn the_threads_commands() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let root = s.ready("Command line root").await;
    let child = spawn(&s, Some(&root), "Child").await;
    s.ok("thread", th("depend", json!({ "fromId": root, "toId": child })))
        .await;
    s.stop().await;

    let list = ok_json(&db, &["threads", "list"]);
    assert_eq!(list["total"], 2);
    let list = ok_json(&db, &["threads", "list", "--parent", &root]);
    assert_eq!(list["threads"][0]["id"], json!(child));
    let text = ok(&db, &["threads", "list"]);
    assert!(text.contains("Command line root") && text.contains("active"), "{text}");
    let show = ok_json(&db, &["threads", "show", &root]);
    assert_eq!(show["relations"]["children"], json!([child]));
    assert!(ok(&db, &["threads", "show", &child]).contains(&format!("parent:        {root}")));
    let tree = ok(&db, &["threads", "tree", &root]);
    assert!(tree.contains("└─ Child"), "{tree}");
    assert_eq!(ok_json(&db, &["threads", "tree", &root])["descendants"][0]["depth"], 1);
    assert!(ok(&db, &["threads", "freeze", &child]).contains("frozen"));
    let e = fails(&db, &["threads", "freeze", &child]);
    assert!(e.contains("frozen") && e.contains("archived"), "{e}");
    ok(&db, &["threads", "archive", &child]);
    let log = ok_json(&db, &["threads", "log", &child]);
    assert_eq!(log["operations"][0]["command"], "archive");
    assert_eq!(log["operations"][0]["operator"], "user");
    assert_eq!(log["operations"][1]["operator"], "user");
    assert_eq!(log["operations"][2]["operator"], "agent");
    fails(&db, &["threads", "show", "nope"]);

    // export -> import into an empty ledger -> export: identical text.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registry.json");
    ok(&db, &["threads", "export", "--out", file.to_str().unwrap()]);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let first = ok(&db, &["threads", "export"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), first);
    let empty = dir.path().join("empty.db");
    // A mistyped --db is no ledger to import into: none is made there.
    let e = fails(&empty, &["threads", "import", file.to_str().unwrap()]);
    assert!(e.contains("no database at"), "{e}");
    assert!(!empty.exists());
    ok(&empty, &["config", "set", "sessionPartitionGranularity", "monthly"]);
    let done = ok_json(&empty, &["threads", "import", file.to_str().unwrap()]);
    assert_eq!(done["threadsCreated"], 2);
    assert_eq!(ok(&empty, &["threads", "export"]), first);

    // A broken file: every violation on stderr with its path, nothing written.
    let mut bad: Value = serde_json::from_str(&first).unwrap();
    bad["version"] = json!("1.0");
    bad["threads"][&root]["status"] = json!("done");
    std::fs::write(&file, bad.to_string()).unwrap();
    let other = dir.path().join("other.db");
    ok(&other, &["config", "set", "sessionPartitionGranularity", "monthly"]);
    let e = fails(&other, &["threads", "import", file.to_str().unwrap()]);
    assert!(e.contains("version: \"1.0\" is not a semver version"), "{e}");
    assert!(
        e.contains(&format!("threads.{root}.status: status must be one of")),
        "{e}"
    );
    assert_eq!(ok_json(&other, &["threads", "list"])["total"], 0, "nothing was written");
    std::fs::write(&file, "{ not json").unwrap();
    assert!(fails(&other, &["threads", "import", file.to_str().unwrap()]).contains("not JSON"));
    let out = run(&other, &["threads", "import", "/nonexistent/registry.json"]);
    assert!(!out.status.success());
}

/// A registry written before a thread's last change (an older export,
/// imported again) leaves that thread as the ledger has it, through the
/// gateway and through `thoughtbox import` of a tree; one written after
/// the ledger's last change is applied.
#[tokio::test]
async fn an_older_registry_does_not_undo_later_changes() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let root = s.ready("Original title").await;
    let child = spawn(&s, Some(&root), "Child").await;
    let old = s.ok("thread", th("export", json!({}))).await;
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    ok(&db, &["export", "--out", tree.to_str().unwrap()]);
    s.ok(
        "thread",
        th(
            "update",
            json!({ "threadId": root, "title": "Renamed", "tags": ["kept"] }),
        ),
    )
    .await;
    s.ok("thread", th("freeze", json!({ "threadId": child }))).await;
    let new = s.ok("thread", th("export", json!({}))).await;
    let logged = s.ok("thread", th("log", json!({}))).await["total"].clone();

    let done = s.ok("thread", th("import", json!({ "registry": old }))).await;
    assert_eq!(done["threadsKept"], 2, "{done}");
    assert_eq!(done["threadsUpdated"], 0, "{done}");
    s.stop().await;
    let text = ok(&db, &["import", tree.to_str().unwrap()]);
    assert!(text.contains("2 threads kept as the ledger has them"), "{text}");
    let s = start(&db).await;
    s.ok("load_context", json!({ "sessionId": root })).await;
    let g = s.ok("thread", th("get", json!({ "threadId": root }))).await;
    assert_eq!(g["thread"]["title"], "Renamed");
    assert_eq!(g["thread"]["tags"], json!(["kept"]));
    let g = s.ok("thread", th("get", json!({ "threadId": child }))).await;
    assert_eq!(g["thread"]["status"], "frozen");
    assert_eq!(s.ok("thread", th("log", json!({}))).await["total"], logged);
    s.stop().await;

    // Elsewhere: the old registry, then the newer one, which wins.
    let (_d2, db2) = temp_db();
    let s2 = start(&db2).await;
    s2.ok("start_new", json!({ "sessionTitle": "to reach stage 1" })).await;
    s2.ok("thread", th("import", json!({ "registry": old }))).await;
    let done = s2.ok("thread", th("import", json!({ "registry": new }))).await;
    assert_eq!(done["threadsUpdated"], 2, "{done}");
    assert_eq!(done["threadsKept"], 0, "{done}");
    let g = s2.ok("thread", th("get", json!({ "threadId": root }))).await;
    assert_eq!(g["thread"]["title"], "Renamed");
    let g = s2.ok("thread", th("get", json!({ "threadId": child }))).await;
    assert_eq!(g["thread"]["status"], "frozen");
    s2.stop().await;
}

/// Moving a ledger with `export` and `import` keeps its threads (status,
/// parent, objective, relations, log) and each session's stage: an agent
/// returning with its handle writes at once, and an archived thread stays
/// settled.
#[tokio::test]
async fn export_then_import_keeps_threads_and_stages() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let root = s.ready("Moved root").await;
    s.thought(json!({ "thought": "first", "nextThoughtNeeded": true, "sessionId": root }))
        .await;
    let child = spawn(&s, Some(&root), "Moved child").await;
    s.ok("thread", th("reference", json!({ "fromId": child, "toId": root })))
        .await;
    s.ok("thread", th("depend", json!({ "fromId": root, "toId": child })))
        .await;
    s.ok("thread", th("archive", json!({ "threadId": child }))).await;
    s.stop().await;
    let before = ok(&db, &["threads", "export"]);

    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    ok(&db, &["export", "--out", tree.to_str().unwrap()]);
    assert!(tree.join("threads.json").is_file());
    let moved = dir.path().join("moved.db");
    let done = ok_json(&moved, &["import", tree.to_str().unwrap()]);
    assert_eq!(done["imported"], 2, "{done}");
    // The child's parent and status; the root is as import made it.
    assert_eq!(done["threads"]["threadsUpdated"], 1, "{done}");
    assert_eq!(ok(&moved, &["threads", "export"]), before);
    // Imported again: nothing changes, and the text says what it did.
    let again = ok(&moved, &["import", tree.to_str().unwrap()]);
    assert!(again.contains("thread registry: 0 created, 0 updated"), "{again}");

    let s = start(&moved).await;
    // The root has a thought, so it is past the cipher.
    let t = s
        .thought(json!({ "thought": "back on a new machine", "nextThoughtNeeded": true, "sessionId": root }))
        .await;
    assert_eq!(t["sessionId"], root.as_str());
    s.ok("cipher", json!({ "sessionId": child })).await;
    let e = s
        .err(
            "thought",
            json!({ "thought": "settled", "nextThoughtNeeded": true, "sessionId": child }),
            "INVALID_OPERATION",
        )
        .await;
    assert_eq!(e["details"]["status"], "archived", "{e}");
    s.stop().await;

    // A tree whose registry breaks the registry's rules: refused before
    // any session goes in, saying why.
    let other = dir.path().join("other.db");
    let s = start(&other).await;
    s.ready("the other ledger's own").await;
    s.stop().await;
    let mut registry: Value =
        serde_json::from_str(&std::fs::read_to_string(tree.join("threads.json")).unwrap()).unwrap();
    registry["threads"][&child]["status"] = json!("bogus");
    std::fs::write(tree.join("threads.json"), registry.to_string()).unwrap();
    let out = run(&other, &["import", tree.to_str().unwrap()]);
    assert!(!out.status.success());
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        text.contains("threads.json breaks 1 rule(s)")
            && text.contains(&format!("threads.{child}.status"))
            && text.contains("nothing was imported"),
        "{text}"
    );
    assert_eq!(ok_json(&other, &["sessions", "list"])["total"], 1);
}

/// Deleting a session changes the threads related to it (children become
/// roots, references and dependencies to it go), settled ones included:
/// each change is in the log, as the server's own.
#[tokio::test]
async fn a_deletion_logs_what_it_changes_in_other_threads() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let root = s.ready("Deleted root").await;
    let child = spawn(&s, Some(&root), "Archived child").await;
    let other = spawn(&s, None, "Citing").await;
    s.ok("thread", th("reference", json!({ "fromId": other, "toId": root })))
        .await;
    s.ok("thread", th("depend", json!({ "fromId": other, "toId": root })))
        .await;
    s.ok("thread", th("archive", json!({ "threadId": child }))).await;
    s.ok("session", json!({ "subOperation": "delete", "sessionId": root }))
        .await;

    let log = s.ok("thread", th("log", json!({ "threadId": child }))).await;
    let last = &log["operations"][0];
    assert_eq!(
        (last["command"].as_str(), last["operator"].as_str()),
        (Some("update"), Some("system")),
        "{log}"
    );
    assert_eq!(last["params"]["parent_id"], Value::Null, "{log}");
    assert_eq!(last["params"]["deleted_id"], root.as_str(), "{log}");
    let log = s.ok("thread", th("log", json!({ "threadId": other }))).await;
    let last = &log["operations"][0]["params"];
    assert_eq!(last["reference_removed"], root.as_str(), "{log}");
    assert_eq!(last["dependency_removed"], root.as_str(), "{log}");
    // The archived child is still archived, now a root thread.
    let got = s.ok("thread", th("get", json!({ "threadId": child }))).await;
    assert_eq!(got["thread"]["status"], "archived");
    assert_eq!(got["thread"]["parent_id"], Value::Null);
    // The registry with those rows still keeps the format's rules, and
    // imports elsewhere.
    let registry = s.ok("thread", th("export", json!({}))).await;
    assert_valid(&registry);
    s.stop().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("registry.json");
    std::fs::write(&file, registry.to_string()).unwrap();
    let elsewhere = dir.path().join("elsewhere.db");
    ok(&elsewhere, &["config", "set", "sessionPartitionGranularity", "monthly"]);
    ok(&elsewhere, &["threads", "import", file.to_str().unwrap()]);
}
