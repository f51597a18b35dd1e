//! Project scope: roots through test clients that implement roots, do not,
//! or never answer; bind_root, project tags, scoped lists, navigate, the
//! default project, and session discovery; and roots asked of a 2026-07-28
//! client by a multi round-trip request.
#![allow(deprecated)] // roots types, sent by hand in a multi round-trip request

use std::time::{Duration, Instant};

use rmcp::model::{InputResponses, ListRootsResult, Root};
use serde_json::{Value, json};

use crate::common::*;
use crate::critique::{call_once, start_2026};

const ENGINE: &str = "file:///home/ada/engine";
const SITE: &str = "file:///home/ada/web%20site/";

/// A client with two roots, one named by the client, one not.
fn two_roots() -> TestClient {
    TestClient::default().roots([(ENGINE, Some("Engine")), (SITE, None)])
}

fn tags(session: &Value) -> Vec<String> {
    session["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn list_and_bind_roots_then_sessions_carry_the_project() {
    let (_d, db) = temp_db();
    let s = start_with(two_roots(), command(&db)).await;
    let r = s.ok("list_roots", Value::Null).await;
    assert_eq!(r["count"], 2);
    assert_eq!(
        r["roots"][0],
        json!({ "uri": ENGINE, "name": "Engine", "bound": false })
    );
    assert_eq!(r["roots"][1]["name"], "web site");
    assert!(r["boundRoot"].is_null());

    // A session before binding has no project.
    let before = s.ok("start_new", json!({ "sessionTitle": "unscoped" })).await;
    assert!(tags(&before["session"]).is_empty());

    let e = s
        .err(
            "bind_root",
            json!({ "rootUri": "file:///elsewhere" }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "rootUri");
    assert_eq!(e["details"]["availableRoots"], json!([ENGINE, SITE]));
    s.err("bind_root", json!({}), "INVALID_PAYLOAD").await;
    let e = s.err("bind_root", json!({ "rootUri": 5 }), "INVALID_PAYLOAD").await;
    assert_eq!(e["details"]["field"], "rootUri");
    s.err("bind_root", json!({ "rootUri": " " }), "INVALID_PAYLOAD").await;
    s.err("bind_root", json!({ "name": "Nobody" }), "INVALID_PAYLOAD").await;
    // Failed binds change nothing.
    assert_eq!(s.ok("get_state", Value::Null).await["project"], Value::Null);
    let b = s.ok("bind_root", json!({ "rootUri": SITE })).await;
    assert_eq!(b["project"], "web site");
    assert_eq!(b["boundRoot"]["uri"], SITE);
    let state = s.ok("get_state", Value::Null).await;
    assert_eq!(
        state["project"],
        json!({ "name": "web site", "source": "root", "rootUri": SITE })
    );
    let listed = s.ok("list_roots", Value::Null).await;
    assert_eq!(listed["roots"][1]["bound"], true);

    let scoped = s.ok("start_new", json!({ "sessionTitle": "scoped" })).await;
    assert_eq!(tags(&scoped["session"]), ["project:web site"]);
    // An explicit project wins over the bound root.
    let explicit = s
        .ok(
            "start_new",
            json!({ "sessionTitle": "explicit", "newWork": { "project": "other", "task": "t" } }),
        )
        .await;
    assert_eq!(tags(&explicit["session"]), ["project:other", "task:t"]);
    // A thought that creates its session is scoped too.
    s.ok("cipher", Value::Null).await;
    s.ok("session", json!({ "subOperation": "list" })).await;
    let closed = s
        .thought(json!({ "thought": "done", "nextThoughtNeeded": false }))
        .await;
    assert_eq!(closed["sessionClosed"], true);
    let auto = s
        .thought(json!({ "thought": "new", "nextThoughtNeeded": true, "sessionTitle": "auto" }))
        .await;
    let got = s
        .ok(
            "session",
            json!({ "subOperation": "get", "sessionId": auto["sessionId"] }),
        )
        .await;
    assert_eq!(tags(&got["session"]), ["project:web site"]);

    // Lists default to the connection's project; allProjects lifts it.
    let l = s.ok("list_sessions", Value::Null).await;
    assert_eq!(l["project"], "web site");
    assert_eq!(l["total"], 2);
    let l = s.ok("session", json!({ "subOperation": "list" })).await;
    assert_eq!(l["total"], 2);
    let l = s.ok("list_sessions", json!({ "allProjects": true })).await;
    assert_eq!(l["total"], 4);
    let l = s.ok("list_sessions", json!({ "project": "other" })).await;
    assert_eq!(l["total"], 1);

    // Binding by name works too.
    let b = s.ok("bind_root", json!({ "name": "Engine" })).await;
    assert_eq!(b["previousRoot"]["name"], "web site");
    let l = s.ok("list_sessions", Value::Null).await;
    assert_eq!(l["total"], 0);
    // An empty list in the bound project says the others have sessions
    // (else an agent concludes there is no history).
    assert_eq!(l["otherProjectsTotal"], 4, "{l}");
    assert!(l["note"].as_str().unwrap().contains("allProjects"), "{l}");
    // A search finding nothing names what it searched, not other projects.
    let l = s.ok("list_sessions", json!({ "search": "nothing-like-this" })).await;
    assert!(l.get("otherProjectsTotal").is_none(), "{l}");
    assert!(l["note"].as_str().unwrap().contains("subOperation search"), "{l}");
    s.stop().await;
}

#[tokio::test]
async fn clients_without_roots_get_a_clear_error() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    for (op, args) in [("list_roots", Value::Null), ("bind_root", json!({ "rootUri": ENGINE }))] {
        let e = s.err(op, args, "INVALID_OPERATION").await;
        assert_eq!(e["details"]["reason"], "ROOTS_NOT_SUPPORTED");
        assert!(e["message"].as_str().unwrap().contains("roots"));
        assert!(e["details"]["suggestion"].as_str().unwrap().contains("--project"));
    }
    assert_eq!(s.ok("get_state", Value::Null).await["project"], Value::Null);
    s.stop().await;
}

#[tokio::test]
async fn a_client_that_never_answers_times_out() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.arg("serve").arg("--roots-timeout").arg("1");
    let s = start_with(TestClient::default().silent_roots(), cmd).await;
    let t0 = Instant::now();
    let e = s.err("list_roots", Value::Null, "INVALID_OPERATION").await;
    assert_eq!(e["details"]["reason"], "ROOTS_TIMEOUT");
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    // Still serving.
    s.ok("list_sessions", Value::Null).await;
    s.stop().await;
}

#[tokio::test]
async fn default_project_from_flag_and_environment() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    // As the README's Cursor config passes it: no `serve`.
    cmd.arg("--project").arg("flagged");
    let s = start_with((), cmd).await;
    let made = s.ok("start_new", json!({ "sessionTitle": "a" })).await;
    assert_eq!(tags(&made["session"]), ["project:flagged"]);
    assert_eq!(
        s.ok("get_state", Value::Null).await["project"],
        json!({ "name": "flagged", "source": "default", "rootUri": null })
    );
    s.stop().await;

    let mut cmd = command(&db);
    cmd.env("THOUGHTBOX_PROJECT", "from-env");
    let s = start_with((), cmd).await;
    let made = s.ok("start_new", json!({ "sessionTitle": "b" })).await;
    assert_eq!(tags(&made["session"]), ["project:from-env"]);
    let l = s.ok("list_sessions", Value::Null).await;
    assert_eq!(l["total"], 1);
    assert_eq!(
        s.ok("list_sessions", json!({ "allProjects": "true" })).await["total"],
        2
    );
    s.stop().await;
}

#[tokio::test]
async fn navigate_filters_with_and_semantics() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    for (title, p, t, a) in [
        ("a", "p", "t1", Some("perf")),
        ("b", "p", "t2", None),
        ("c", "q", "t1", None),
        ("d", "p", "t1", None),
    ] {
        let mut work = json!({ "project": p, "task": t });
        if let Some(a) = a {
            work["aspect"] = json!(a);
        }
        s.ok("start_new", json!({ "sessionTitle": title, "newWork": work }))
            .await;
    }
    let n = s
        .ok("navigate", json!({ "target": { "project": "p", "task": "t1" } }))
        .await;
    assert_eq!(n["total"], 2);
    assert_eq!(n["path"], "p/t1");
    let titles: Vec<&str> = n["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["title"].as_str().unwrap())
        .collect();
    assert!(titles.contains(&"a") && titles.contains(&"d"));
    assert_eq!(
        n["tasks"],
        json!([{ "name": "t1", "sessions": 2 }, { "name": "t2", "sessions": 1 }])
    );
    assert_eq!(n["aspects"], json!([{ "name": "perf", "sessions": 1 }]));
    let n = s
        .ok("navigate", json!({ "project": "p", "task": "t1", "aspect": "perf" }))
        .await;
    assert_eq!(n["total"], 1);
    assert_eq!(n["sessions"][0]["title"], "a");
    // The same filters on list_sessions and session list.
    let l = s.ok("list_sessions", json!({ "project": "p", "task": "t1" })).await;
    assert_eq!(l["total"], 2);
    let l = s
        .ok(
            "session",
            json!({ "subOperation": "list", "project": "q", "task": "t1" }),
        )
        .await;
    assert_eq!(l["total"], 1);
    // A project no session has, or none at all: the projects there are, to
    // choose from.
    let listed = json!([{ "name": "p", "sessions": 3 }, { "name": "q", "sessions": 1 }]);
    let n = s.ok("navigate", json!({ "target": { "project": "none" } })).await;
    assert_eq!(n["total"], 0);
    assert_eq!(n["projects"], listed, "{n}");
    let n = s.ok("navigate", json!({})).await;
    assert_eq!(n["projects"], listed, "{n}");
    assert!(n["message"].as_str().unwrap().contains("2 project(s)"), "{n}");
    let e = s.err("navigate", json!({ "task": "t1" }), "INVALID_PAYLOAD").await;
    assert_eq!(e["details"]["field"], "target");
    let e = s
        .err("navigate", json!({ "target": { "project": 5 } }), "INVALID_PAYLOAD")
        .await;
    assert_eq!(e["details"]["field"], "target.project");
    let e = s.err("navigate", json!({ "target": "p" }), "INVALID_PAYLOAD").await;
    assert_eq!(e["details"]["field"], "target");
    s.err("navigate", json!({ "target": { "project": " " } }), "INVALID_PAYLOAD")
        .await;
    s.err("navigate", json!({ "project": "p", "limit": 0 }), "INVALID_PAYLOAD")
        .await;
    s.stop().await;
}

#[tokio::test]
async fn discovery_hides_and_shows_optional_operations() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("d").await;
    let l = s
        .ok("session", json!({ "subOperation": "discovery", "action": "list" }))
        .await;
    let names: Vec<&str> = l["optionalOperations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"deep_analysis") && names.contains(&"knowledge"));
    assert!(!names.contains(&"thought"));

    let h = s
        .ok(
            "session",
            json!({ "subOperation": "discovery", "action": "hide", "toolName": "deep_analysis" }),
        )
        .await;
    assert_eq!(h["changed"], true);
    assert_eq!(h["hidden"], json!(["deep_analysis"]));
    assert!(h.get("optionalOperations").is_none(), "{h}");
    let e = s
        .err("deep_analysis", json!({ "sessionId": sid }), "INVALID_OPERATION")
        .await;
    assert_eq!(e["details"]["hidden"], true);
    let state = s.ok("get_state", Value::Null).await;
    assert!(
        !state["availableOperations"]
            .as_array()
            .unwrap()
            .contains(&json!("deep_analysis"))
    );
    let tools = s.client.list_all_tools().await.unwrap();
    let ops = tools[0].input_schema["properties"]["operation"]["enum"]
        .as_array()
        .unwrap();
    assert!(!ops.contains(&json!("deep_analysis")) && ops.contains(&json!("thought")));

    let again = s
        .ok(
            "session",
            json!({ "subOperation": "discovery", "action": "hide", "toolName": "deep_analysis" }),
        )
        .await;
    assert_eq!(again["changed"], false);
    s.ok(
        "session",
        json!({ "operation": "discovery", "args": { "action": "show", "toolName": "deep_analysis" } }),
    )
    .await;
    s.ok("deep_analysis", json!({ "sessionId": sid })).await;

    for (args, field) in [
        (json!({}), "action"),
        (json!({ "action": "toggle" }), "action"),
        (json!({ "action": "hide" }), "toolName"),
        (json!({ "action": "hide", "toolName": "thought" }), "toolName"),
        (json!({ "action": "show", "toolName": 3 }), "toolName"),
    ] {
        let mut a = args;
        a["subOperation"] = json!("discovery");
        let e = s.err("session", a.clone(), "INVALID_PAYLOAD").await;
        assert_eq!(e["details"]["field"], field, "{a}");
    }
    assert_eq!(s.ok("get_state", Value::Null).await["hiddenOperations"], json!([]));
    // The cipher's answer names only what is not hidden.
    s.ok(
        "session",
        json!({ "subOperation": "discovery", "action": "hide", "toolName": "knowledge" }),
    )
    .await;
    let c = s.ok("cipher", json!({ "brief": true })).await;
    let next = c["nextStep"].as_str().unwrap();
    assert!(next.contains("mental_models") && !next.contains("knowledge"), "{c}");
    s.stop().await;
}

/// Binding by a name two roots share is refused, naming both; binding by
/// URI picks one.
#[tokio::test]
async fn a_name_two_roots_share_is_not_a_guess() {
    let (_d, db) = temp_db();
    // Two roots that share a name (`/a/app`, `/b/app`).
    let s = start_with(
        TestClient::default().roots([("file:///a/app", None), ("file:///b/app", None)]),
        command(&db),
    )
    .await;
    let e = s.err("bind_root", json!({ "name": "app" }), "INVALID_PAYLOAD").await;
    assert_eq!(e["details"]["matchingRoots"], json!(["file:///a/app", "file:///b/app"]));
    assert!(e["message"].as_str().unwrap().contains("pass rootUri"), "{e}");
    assert_eq!(s.ok("get_state", Value::Null).await["project"], Value::Null);
    let b = s.ok("bind_root", json!({ "rootUri": "file:///b/app" })).await;
    assert_eq!(b["boundRoot"]["uri"], "file:///b/app");
    s.stop().await;
}

/// One root listed twice is one root: binding it by name works.
#[tokio::test]
async fn a_root_listed_twice_is_one_root() {
    let (_d, db) = temp_db();
    let s = start_with(
        TestClient::default().roots([("file:///a/app", None), ("file:///a/app", None)]),
        command(&db),
    )
    .await;
    let b = s.ok("bind_root", json!({ "name": "app" })).await;
    assert_eq!(b["boundRoot"]["uri"], "file:///a/app");
    s.stop().await;
}

/// A 2026-07-28 client cannot be sent `roots/list`: `list_roots` and
/// `bind_root` ask for the roots in an `InputRequiredResult`, and the
/// client's retry (rmcp's `call_tool`, through its `list_roots` handler)
/// lists and binds them as an older client's answer does.
#[tokio::test]
async fn a_2026_client_lists_and_binds_roots_by_retrying() {
    let (_d, db) = temp_db();
    let s = start_2026(two_roots(), command(&db)).await;
    let r = s.ok("list_roots", Value::Null).await;
    assert_eq!(r["count"], 2, "{r}");
    assert_eq!(
        r["roots"][0],
        json!({ "uri": ENGINE, "name": "Engine", "bound": false })
    );
    let b = s.ok("bind_root", json!({ "rootUri": ENGINE })).await;
    assert_eq!(b["project"], "Engine", "{b}");
    let made = s.ok("start_new", json!({ "sessionTitle": "scoped" })).await;
    assert_eq!(tags(&made["session"]), ["project:Engine"]);
    let r = s.ok("list_roots", Value::Null).await;
    assert_eq!(r["roots"][0]["bound"], true, "{r}");
    s.stop().await;
}

/// The round trip by hand: the answer asks for `roots/list` with a sealed
/// state; a forged state is refused and binds nothing; a retry without the
/// roots says so; the retry with them binds.
#[tokio::test]
async fn the_roots_round_trip_by_hand_refuses_forged_state() {
    let (_d, db) = temp_db();
    let s = start_2026(two_roots(), command(&db)).await;
    let args = json!({ "rootUri": SITE });
    let asked = call_once(&s, "bind_root", args.clone(), None, None)
        .await
        .expect_err("an InputRequiredResult");
    let wire = serde_json::to_value(&asked).unwrap();
    assert_eq!(wire["resultType"], "input_required");
    assert_eq!(
        wire["inputRequests"],
        json!({ "roots": { "method": "roots/list" } }),
        "{wire}"
    );
    let state = asked.request_state.expect("a requestState");
    let roots = || {
        let listed = ListRootsResult::new(vec![Root::new(ENGINE), Root::new(SITE)]);
        Some(InputResponses::from([(
            "roots".to_string(),
            serde_json::to_value(listed).unwrap(),
        )]))
    };
    // One character of its tag changed.
    let mut forged = state.clone().into_bytes();
    let i = forged.len() - 5;
    forged[i] = if forged[i] == b'A' { b'B' } else { b'A' };
    let forged = String::from_utf8(forged).unwrap();
    let e = call_once(&s, "bind_root", args.clone(), Some(forged), roots())
        .await
        .expect("an answer")
        .expect_err("refused");
    assert_eq!(e["code"], "INVALID_PAYLOAD", "{e}");
    assert_eq!(e["details"]["field"], "requestState", "{e}");
    assert_eq!(s.ok("get_state", Value::Null).await["project"], Value::Null);

    let e = call_once(&s, "bind_root", args.clone(), Some(state.clone()), None)
        .await
        .expect("an answer")
        .expect_err("no roots sent");
    assert_eq!(e["details"]["reason"], "ROOTS_FAILED", "{e}");
    assert!(e["message"].as_str().unwrap().contains("inputResponses.roots"), "{e}");

    let b = call_once(&s, "bind_root", args, Some(state), roots())
        .await
        .expect("an answer")
        .expect("bound");
    assert_eq!(b["boundRoot"]["uri"], SITE, "{b}");
    assert_eq!(s.ok("get_state", Value::Null).await["project"]["name"], "web site");
    s.stop().await;
}

/// A 2026-07-28 client that declares no roots is told so, as an older one.
#[tokio::test]
async fn a_2026_client_without_roots_gets_a_clear_error() {
    let (_d, db) = temp_db();
    let s = start_2026((), command(&db)).await;
    let e = s.err("list_roots", Value::Null, "INVALID_OPERATION").await;
    assert_eq!(e["details"]["reason"], "ROOTS_NOT_SUPPORTED", "{e}");
    s.stop().await;
}
