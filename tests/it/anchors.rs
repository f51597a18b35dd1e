//! Cross-session anchors (`@keyword:S3`) in a JSON `session export`:
//! resolved to the sessions they name, by tag or title.

use serde_json::json;

use crate::common::*;

/// `start_new` with `args`: the new session's id.
async fn started(s: &Server, args: serde_json::Value) -> String {
    let r = s.ok("start_new", args).await;
    r["sessionId"].as_str().expect("sessionId").to_string()
}

#[tokio::test]
async fn a_json_export_resolves_the_anchors_in_its_thoughts() {
    let (_dir, db) = temp_db();
    let s = start(&db).await;
    let tagged = started(&s, json!({ "sessionTitle": "Login flow", "tags": ["auth-design"] })).await;
    s.ok("cipher", json!({ "brief": true })).await;
    s.thought(t("Tokens expire after an hour")).await;
    let titled = started(&s, json!({ "sessionTitle": "Caching plan" })).await;
    s.thought(t("Cache in process")).await;
    let sid = started(&s, json!({ "sessionTitle": "Release notes" })).await;
    s.thought(t("No anchors here")).await;
    s.thought(t(
        "Builds on @auth-design:S1 and @caching-plan:S2-S3; @nowhere:S1 is unknown.",
    ))
    .await;
    s.thought(
        json!({ "thought": "Mail ann@auth-design:S1 is no anchor", "nextThoughtNeeded": true,
                      "branchId": "alt", "branchFromThought": 1 }),
    )
    .await;

    let r = s
        .ok("session", json!({ "subOperation": "export", "sessionId": sid }))
        .await;
    let refs = &r["content"]["crossReferences"];
    assert_eq!(refs["anchorsFound"], 1, "{refs}");
    assert_eq!(
        (refs["resolved"].as_u64(), refs["unresolved"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(refs["details"][0]["thoughtNumber"], 2);
    let anchors = &refs["details"][0]["anchors"];
    assert_eq!(anchors[0]["anchor"]["raw"], "@auth-design:S1");
    assert_eq!(anchors[0]["status"], "resolved");
    assert_eq!(anchors[0]["candidates"][0]["matchReason"], "tag");
    assert_eq!(anchors[0]["selected"], json!({ "sessionId": tagged, "thoughts": [1] }));
    assert_eq!(anchors[1]["anchor"]["thoughtNumbers"], json!([2, 3]));
    assert_eq!(anchors[1]["candidates"][0]["sessionId"], titled.as_str());
    assert_eq!(anchors[1]["candidates"][0]["matchReason"], "title");
    assert_eq!(anchors[2]["status"], "unresolved");
    assert_eq!(anchors[2]["candidates"], json!([]));

    // Off on request; absent from an export with no anchor; not resolved
    // into markdown, which says it did not use the argument.
    let r = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "resolveAnchors": false }),
        )
        .await;
    assert!(r["content"].get("crossReferences").is_none());
    assert!(r["content"]["nodes"].is_array());
    let r = s
        .ok("session", json!({ "subOperation": "export", "sessionId": titled }))
        .await;
    assert!(r["content"].get("crossReferences").is_none());
    let r = s
        .call(
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "format": "markdown", "resolveAnchors": true }),
        )
        .await
        .unwrap();
    assert_eq!(r["ignoredArguments"], json!(["resolveAnchors"]));

    // What one export resolves is bounded; the rest is counted.
    let many = "@login-flow:S1 ".repeat(1_100);
    s.thought(json!({ "sessionId": sid, "thought": many, "nextThoughtNeeded": true }))
        .await;
    let r = s
        .ok("session", json!({ "subOperation": "export", "sessionId": sid }))
        .await;
    let refs = &r["content"]["crossReferences"];
    assert_eq!(refs["anchorsOmitted"], 103, "{}", refs["anchorsFound"]);
    assert_eq!(
        refs["details"][1]["anchors"][0]["candidates"][0]["sessionId"],
        tagged.as_str()
    );

    // Bad input: refused, and the server goes on.
    let e = s
        .err(
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "resolveAnchors": "maybe" }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "resolveAnchors");
    s.ok("get_state", json!({})).await;
    s.stop().await;
}
