//! `session analyze`, `session extract_learnings` and `deep_analysis`
//! through the real binary: branches count everywhere, values stay in their
//! ranges, bad input changes nothing.

use serde_json::{Value, json};

use crate::common::*;

/// Main 1, 2; branch "alt" from 2 (two thoughts); main 3 revising 1; main 4 closes.
async fn branching_session(s: &Server) -> String {
    let sid = s.ready("Cache design").await;
    s.thought(t("Two ways to cache: in process or Redis")).await;
    s.thought(t("In-process is simplest")).await;
    s.thought(json!({ "thought": "Redis survives restarts", "nextThoughtNeeded": true,
                      "branchId": "alt", "branchFromThought": 2 }))
        .await;
    s.thought(json!({ "thought": "Redis adds a network hop", "nextThoughtNeeded": true, "branchId": "alt" }))
        .await;
    s.thought(
        json!({ "thought": "Actually restarts matter: reconsider", "nextThoughtNeeded": true,
                      "revisesThought": 1 }),
    )
    .await;
    s.thought(json!({ "thought": "Stay in process, warm on start", "nextThoughtNeeded": false }))
        .await;
    sid
}

fn unit(v: &Value) {
    let x = v.as_f64().unwrap_or(-1.0);
    assert!((0.0..=1.0).contains(&x), "{v} out of [0, 1]");
}

#[tokio::test]
async fn analyze_counts_branches_and_revisions() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = branching_session(&s).await;
    // The session was closed; analyze takes it by id.
    let a = s
        .ok("session", json!({ "subOperation": "analyze", "sessionId": sid }))
        .await;
    assert_eq!(a["sessionId"], sid.as_str());
    assert_eq!(a["metadata"]["title"], "Cache design");
    assert_eq!(a["metadata"]["thoughtCount"], 6);
    assert_eq!(a["metadata"]["branchCount"], 1);
    assert_eq!(a["metadata"]["revisionCount"], 1);
    assert!(a["metadata"]["duration"].as_u64().is_some());
    // Main non-revisions 1, 2, 4 (the closing thought is #4): 3 / 6.
    assert_eq!(a["structure"]["linearityScore"], 0.5);
    assert_eq!(a["structure"]["revisionRate"], 0.17);
    assert_eq!(a["structure"]["maxDepth"], 1);
    assert!(a["structure"]["thoughtDensity"].as_f64().unwrap() >= 0.0);
    assert_eq!(a["quality"]["critiqueRequests"], 0);
    assert_eq!(a["quality"]["hasConvergence"], true);
    assert_eq!(a["quality"]["isComplete"], true);
    // The summary fields of the `session analyze` tool description.
    assert_eq!(a["linearity"], 0.5);
    assert_eq!(a["completion"], 1.0);
    assert_eq!(a["branchCount"], 1);
    // The TypeScript Thoughtbox's form of the sub-operation and nested args.
    let b = s
        .ok(
            "session",
            json!({ "operation": "analyze", "args": { "sessionId": sid } }),
        )
        .await;
    assert_eq!(a["structure"], b["structure"]);
    s.stop().await;
}

#[tokio::test]
async fn an_empty_session_is_valid_input() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let started = s.ok("start_new", json!({ "sessionTitle": "empty" })).await;
    let sid = started["session"]["id"].as_str().unwrap().to_string();
    let a = s.ok("session", json!({ "subOperation": "analyze" })).await;
    assert_eq!(a["sessionId"], sid.as_str());
    assert_eq!(a["metadata"]["thoughtCount"], 0);
    assert_eq!(a["structure"]["linearityScore"], 1.0);
    assert_eq!(a["quality"]["isComplete"], false);
    let d = s.ok("deep_analysis", json!({ "sessionId": sid })).await;
    assert_eq!(d["patterns"]["dominantPattern"], "linear");
    assert_eq!(d["metrics"]["cognitiveLoad"], 0.0);
    assert_eq!(d["timeline"]["durationEstimate"], "unknown");
    let x = s
        .ok(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid }),
        )
        .await;
    assert_eq!(x["extractedCount"], 1);
    s.stop().await;
}

#[tokio::test]
async fn extract_learnings_from_key_moments() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = branching_session(&s).await;
    // Default: one signal, nothing stored.
    let x = s
        .ok(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid }),
        )
        .await;
    assert_eq!(x["extractedCount"], 1);
    let signal = &x["learnings"][0];
    assert_eq!(signal["type"], "signal");
    let content: Value = serde_json::from_str(signal["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["outcome"], "success");
    assert_eq!(content["metrics"]["branches"], 1);
    assert_eq!(signal["metadata"]["sourceSession"], sid.as_str());
    assert!(signal["metadata"]["extractedAt"].is_string());
    // And how to get more than the signal.
    assert!(x["note"].as_str().unwrap().contains("keyMoments"), "{x}");

    let moments = json!([
        { "thoughtNumber": 2, "type": "decision", "significance": 8, "summary": "Prefer the simplest cache" },
        { "thoughtNumber": 4, "type": "branch", "branchId": "alt" },
        { "thoughtNumber": 3, "type": "revision", "summary": "Restarts were underestimated" },
    ]);
    // Key moments with the default targetTypes: the signal only, and a note
    // saying how to get learnings from them.
    let x = s
        .ok(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "keyMoments": moments, "save": true }),
        )
        .await;
    assert_eq!(x["extractedCount"], 1, "{x}");
    assert_eq!(x["savedPatterns"], json!([]), "{x}");
    assert!(x["note"].as_str().unwrap().contains("targetTypes defaults to"), "{x}");
    let x = s
        .ok(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "keyMoments": moments,
                    "targetTypes": ["pattern", "anti-pattern", "signal"] }),
        )
        .await;
    assert_eq!(x["extractedCount"], 4);
    let kinds: Vec<&str> = x["learnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["pattern", "pattern", "anti-pattern", "signal"]);
    let first = &x["learnings"][0];
    assert_eq!(first["metadata"]["sourceThoughts"], json!([2]));
    assert_eq!(first["targetPath"], "patterns/general/prefer-the-simplest-cache.md");
    for k in ["specificity", "applicability", "complexity", "maturity"] {
        let v = first["metadata"]["behaviorCharacteristics"][k].as_u64().unwrap();
        assert!((1..=10).contains(&v), "{k} = {v}");
    }
    assert_eq!(x["learnings"][1]["metadata"]["sourceBranch"], "alt");
    // The anti-pattern pairs the revised thought with its revision.
    assert_eq!(x["learnings"][2]["metadata"]["sourceThoughts"], json!([1, 3]));
    assert!(x.get("savedPatterns").is_none());
    // Nothing was written: the garden is empty.
    let listed = s.ok("knowledge", json!({ "subOperation": "list_patterns" })).await;
    assert_eq!(listed["total"], 0);

    // Asked to save: patterns and anti-patterns become knowledge patterns.
    let saved = s
        .ok(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "keyMoments": moments,
                    "targetTypes": "pattern", "save": true }),
        )
        .await;
    let ids = saved["savedPatterns"].as_array().unwrap();
    assert_eq!(ids.len(), 2);
    let p = s
        .ok("knowledge", json!({ "subOperation": "get_pattern", "id": ids[0] }))
        .await;
    assert_eq!(p["derivedFromSessions"], json!([sid]));
    assert_eq!(p["tags"], json!(["learning", "pattern"]));
    assert_eq!(saved["alreadySaved"], json!([]));
    // The same call again (an agent retrying after a timeout) saves no copies.
    let again = s
        .ok(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "keyMoments": moments,
                    "targetTypes": "pattern", "save": true }),
        )
        .await;
    assert_eq!(again["savedPatterns"], saved["savedPatterns"]);
    assert_eq!(again["alreadySaved"], saved["savedPatterns"]);
    let listed = s.ok("knowledge", json!({ "subOperation": "list_patterns" })).await;
    assert_eq!(listed["total"], 2);
    assert!(
        p["description"]
            .as_str()
            .unwrap()
            .starts_with("A pattern extracted from session"),
        "{p}"
    );
    // An anti-pattern's description reads "An anti-pattern".
    let anti = s
        .ok(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "keyMoments": moments,
                    "targetTypes": ["anti-pattern"], "save": true }),
        )
        .await;
    let id = &anti["savedPatterns"][0];
    let p = s
        .ok("knowledge", json!({ "subOperation": "get_pattern", "id": id }))
        .await;
    assert!(
        p["description"]
            .as_str()
            .unwrap()
            .starts_with("An anti-pattern extracted from session"),
        "{p}"
    );
    s.stop().await;
}

#[tokio::test]
async fn deep_analysis_full_and_by_type() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = branching_session(&s).await;
    let d = s.ok("deep_analysis", json!({ "sessionId": sid })).await;
    assert_eq!(d["sessionId"], sid.as_str());
    assert_eq!(d["analysisType"], "full");
    assert!(d["analysisTimestamp"].is_string());
    assert_eq!(d["timestamp"], d["analysisTimestamp"]);
    let patterns = &d["patterns"];
    let dominant = patterns["dominantPattern"].as_str().unwrap();
    assert!(["linear", "exploratory", "iterative", "convergent", "divergent"].contains(&dominant));
    assert_eq!(patterns["allPatterns"].as_array().unwrap().len(), 5);
    for p in patterns["allPatterns"].as_array().unwrap() {
        unit(&p["frequency"]);
    }
    // Recording order: linear 1, 2; exploratory alt 3, 4; iterative main 3; linear main 4.
    let at: Vec<u64> = patterns["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["atThought"].as_u64().unwrap())
        .collect();
    assert_eq!(at, [3, 3, 4]);
    assert_eq!(patterns["totalThoughts"], 6);
    assert_eq!(patterns["branchCount"], 1);
    assert_eq!(patterns["revisionCount"], 1);
    assert!(patterns["averageThoughtLength"].as_u64().unwrap() > 10);
    for k in ["cognitiveLoad", "linearityScore", "convergenceRate"] {
        unit(&d["metrics"][k]);
    }
    assert_eq!(d["metrics"]["explorationDepth"], 2);
    assert_eq!(d["metrics"]["convergenceRate"], 1.0);
    for i in d["insights"].as_array().unwrap() {
        unit(&i["confidence"]);
        let (numbers, nodes) = (
            i["relatedThoughts"].as_array().unwrap(),
            i["relatedNodes"].as_array().unwrap(),
        );
        assert!(
            nodes.iter().all(|n| n.as_str().unwrap().starts_with(sid.as_str())),
            "{i}"
        );
        assert!(nodes.len() >= numbers.len(), "{i}");
    }
    let c = &d["cognitiveLoad"];
    assert!(c["complexityScore"].as_u64().unwrap() <= 100);
    assert_eq!(c["breadthIndicator"], 2);
    // alt forks from 2: main 1, 2 + alt 3, 4 = 4 deep.
    assert_eq!(c["depthIndicator"], 4);
    let points = d["decisionPoints"].as_array().unwrap();
    assert_eq!(
        points[0],
        json!({ "thoughtNumber": 3, "type": "branch", "reference": 2, "branchId": "alt" })
    );
    assert_eq!(points[1]["type"], "revision");
    // The documented timeline; the thought-by-thought entries (most of a large
    // session's answer) only when asked for.
    assert!(d["timeline"].get("entries").is_none(), "{}", d["timeline"]);
    assert!(d["timeline"]["durationEstimate"].is_string());
    let e = s
        .ok(
            "deep_analysis",
            json!({ "sessionId": sid, "options": { "includeTimelineEntries": true } }),
        )
        .await;
    assert_eq!(e["timeline"]["entries"].as_array().unwrap().len(), 6);

    let p = s
        .ok(
            "deep_analysis",
            json!({ "sessionId": sid, "analysisType": "patterns", "options": { "includeTimeline": "false" } }),
        )
        .await;
    assert!(p.get("cognitiveLoad").is_none() && p.get("decisionPoints").is_none() && p.get("timeline").is_none());
    assert!(p["metrics"].is_object() && p["insights"].is_array());
    let c = s
        .ok(
            "deep_analysis",
            json!({ "sessionId": sid, "analysisType": "cognitive_load" }),
        )
        .await;
    assert!(c["cognitiveLoad"].is_object() && c.get("decisionPoints").is_none());
    let dp = s
        .ok(
            "deep_analysis",
            json!({ "sessionId": sid, "analysisType": "decision_points" }),
        )
        .await;
    assert!(dp["decisionPoints"].is_array() && dp.get("cognitiveLoad").is_none());
    s.stop().await;
}

#[tokio::test]
async fn deep_analysis_compares_sessions_side_by_side() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let a = branching_session(&s).await;
    s.ok("start_new", json!({ "sessionTitle": "Straight" })).await;
    for i in 0..5 {
        s.thought(t(&format!("step {i}"))).await;
    }
    let b = s.ok("get_state", Value::Null).await["activeSession"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let d = s
        .ok(
            "deep_analysis",
            json!({ "sessionId": a, "options": { "compareWith": [b] } }),
        )
        .await;
    let cmp = &d["comparison"][0];
    assert_eq!(cmp["sessionId"], b.as_str());
    assert_eq!(cmp["title"], "Straight");
    assert_eq!(cmp["dominantPattern"], "linear");
    assert_eq!(cmp["metrics"]["linearityScore"], 1.0);
    assert_eq!(cmp["differences"]["linearityScore"], 0.5);
    assert_eq!(cmp["differences"]["explorationDepth"], -2);
    // A session named twice is compared once; one that does not exist is
    // named and left out, and the rest answered.
    let missing = "00000000-0000-4000-8000-000000000000";
    let d = s
        .ok(
            "deep_analysis",
            json!({ "sessionId": a, "options": { "compareWith": [b, b.to_uppercase(), missing] } }),
        )
        .await;
    assert_eq!(d["comparison"].as_array().unwrap().len(), 1, "{d}");
    assert_eq!(d["compareWithNotFound"], json!([missing]), "{d}");
    s.stop().await;
}

#[tokio::test]
async fn analysis_bad_input_changes_nothing() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = branching_session(&s).await;
    let before = s
        .ok("session", json!({ "subOperation": "export", "sessionId": sid }))
        .await["content"]["nodes"]
        .clone();
    let missing = "00000000-0000-4000-8000-000000000000";
    let cases: Vec<(&str, Value, &str, Option<&str>)> = vec![
        // analyze: the session closed, so nothing is active.
        (
            "session",
            json!({ "subOperation": "analyze" }),
            "INVALID_PAYLOAD",
            Some("sessionId"),
        ),
        (
            "session",
            json!({ "subOperation": "analyze", "sessionId": missing }),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            "session",
            json!({ "subOperation": "analyze", "sessionId": 7 }),
            "INVALID_PAYLOAD",
            Some("sessionId"),
        ),
        // extract_learnings.
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "targetTypes": ["lesson"] }),
            "INVALID_PAYLOAD",
            Some("targetTypes[0]"),
        ),
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "targetTypes": [] }),
            "INVALID_PAYLOAD",
            Some("targetTypes"),
        ),
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "keyMoments": "thought 2" }),
            "INVALID_PAYLOAD",
            Some("keyMoments"),
        ),
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "keyMoments": [3] }),
            "INVALID_PAYLOAD",
            Some("keyMoments[0]"),
        ),
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid,
                    "keyMoments": [{ "thoughtNumber": 2, "type": "eureka" }] }),
            "INVALID_PAYLOAD",
            Some("keyMoments[0].type"),
        ),
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid,
                    "keyMoments": [{ "type": "insight" }] }),
            "INVALID_PAYLOAD",
            Some("keyMoments[0].thoughtNumber"),
        ),
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid,
                    "keyMoments": [{ "thoughtNumber": 1, "type": "insight", "significance": 11 }] }),
            "INVALID_PAYLOAD",
            Some("keyMoments[0].significance"),
        ),
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid,
                    "keyMoments": [{ "thoughtNumber": 9, "type": "insight" }], "targetTypes": ["pattern"], "save": true }),
            "THOUGHT_NOT_FOUND",
            None,
        ),
        (
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "save": "yes" }),
            "INVALID_PAYLOAD",
            Some("save"),
        ),
        // deep_analysis.
        ("deep_analysis", json!({}), "INVALID_PAYLOAD", Some("sessionId")),
        (
            "deep_analysis",
            json!({ "sessionId": missing }),
            "SESSION_NOT_FOUND",
            None,
        ),
        (
            "deep_analysis",
            json!({ "sessionId": sid, "analysisType": "vibes" }),
            "INVALID_PAYLOAD",
            Some("analysisType"),
        ),
        (
            "deep_analysis",
            json!({ "sessionId": sid, "options": "full" }),
            "INVALID_PAYLOAD",
            Some("options"),
        ),
        (
            "deep_analysis",
            json!({ "sessionId": sid, "options": { "includeTimeline": 2 } }),
            "INVALID_PAYLOAD",
            Some("includeTimeline"),
        ),
        (
            "deep_analysis",
            json!({ "sessionId": sid, "options": { "compareWith": [1] } }),
            "INVALID_PAYLOAD",
            Some("compareWith"),
        ),
    ];
    for (op, args, code, field) in cases {
        let e = s.err(op, args.clone(), code).await;
        if let Some(field) = field {
            assert_eq!(e["details"]["field"], field, "{op} {args}: {e}");
        }
    }
    let after = s
        .ok("session", json!({ "subOperation": "export", "sessionId": sid }))
        .await["content"]["nodes"]
        .clone();
    assert_eq!(before, after);
    assert_eq!(
        s.ok("knowledge", json!({ "subOperation": "list_patterns" })).await["total"],
        0
    );
    s.stop().await;
}

#[tokio::test]
async fn analysis_stages() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let e = s.err("deep_analysis", Value::Null, "STAGE_REQUIREMENT_NOT_MET").await;
    assert_eq!(e["details"]["requiredStage"], 1);
    // A handle that names no session says so first.
    s.err("deep_analysis", json!({ "sessionId": "x" }), "SESSION_NOT_FOUND")
        .await;
    s.ok("start_new", json!({ "sessionTitle": "s" })).await;
    // Stage 1 is enough for analysis, but saving learnings writes knowledge (stage 2).
    s.ok("deep_analysis", Value::Null).await;
    s.ok("session", json!({ "subOperation": "analyze" })).await;
    let e = s
        .err(
            "session",
            json!({ "subOperation": "extract_learnings", "save": true }),
            "STAGE_REQUIREMENT_NOT_MET",
        )
        .await;
    assert_eq!(e["details"]["requiredStage"], 2);
    s.stop().await;
}

/// A client that sends many analyses without waiting still gets its quick
/// reads answered at once (unbounded, `get_state` waited 24 s behind 300
/// analyses): heavy reads take at most six of the eight storage threads.
#[tokio::test]
async fn quick_reads_are_not_queued_behind_many_analyses() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("long").await;
    let text = "a thought long enough to make each analysis read something ".repeat(20);
    for _ in 0..2000 {
        s.thought(t(&text)).await;
    }
    let done = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let mut analyses = Vec::new();
    for _ in 0..120 {
        // On its way once this returns, so that get_state is sent after all.
        let sent = cancellable_call(&s, "session", json!({ "subOperation": "analyze", "sessionId": sid })).await;
        let done = done.clone();
        analyses.push(tokio::spawn(async move {
            let answer = serde_json::to_value(sent.await_response().await.expect("an answer")).unwrap();
            assert_ne!(answer["isError"], true, "{answer}");
            done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }));
    }
    s.ok("get_state", json!({})).await;
    let answered_before = done.load(std::sync::atomic::Ordering::SeqCst);
    for a in analyses {
        a.await.unwrap();
    }
    assert!(
        answered_before < 100,
        "get_state came after {answered_before} of 120 analyses"
    );
    s.stop().await;
}

/// Saved learnings carry their session's project, so that a project's
/// learnings can be listed by tag.
#[tokio::test]
async fn saved_learnings_carry_the_sessions_project() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s
        .ok(
            "start_new",
            json!({ "sessionTitle": "Rate limits", "newWork": { "project": "gateway", "task": "limits" } }),
        )
        .await["session"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    s.ok("cipher", json!({ "brief": true })).await;
    s.thought(t("One bucket per tenant")).await;
    s.thought(json!({ "thought": "No: one bucket per key", "revisesThought": 1, "nextThoughtNeeded": true }))
        .await;
    let saved = s
        .ok(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "save": true,
                    "keyMoments": [{ "thoughtNumber": 1, "type": "revision" }], "targetTypes": ["anti-pattern"] }),
        )
        .await;
    let ids = saved["savedPatterns"].as_array().unwrap();
    assert_eq!(ids.len(), 1, "{saved}");
    // Named by the thought revised: its revision is the correction.
    assert!(
        saved["learnings"][0]["content"]
            .as_str()
            .unwrap()
            .contains("one bucket per key"),
        "{saved}"
    );
    let listed = s
        .ok(
            "knowledge",
            json!({ "subOperation": "list_patterns", "tags": ["learning", "project:gateway"] }),
        )
        .await;
    assert_eq!(listed["total"], 1, "{listed}");
    s.stop().await;
}

/// A branch key moment without branchId: used main-chain thought #n
/// silently. Now the one branch with a thought n is used (the note says
/// so); no branch or several is refused naming the moment's branchId, and
/// nothing is saved.
#[tokio::test]
async fn a_branch_moment_without_branch_id_takes_the_only_branch_or_is_refused() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = branching_session(&s).await;
    let learn = |moments: Value| {
        json!({ "subOperation": "extract_learnings", "sessionId": sid, "keyMoments": moments,
                "targetTypes": ["pattern"], "save": true })
    };
    // Thought 4: main chain and `alt`; `alt` is the only branch with one.
    let x = s
        .ok(
            "session",
            learn(json!([{ "thoughtNumber": 4, "type": "branch", "summary": "Hops cost" }])),
        )
        .await;
    let l = &x["learnings"][0];
    assert_eq!(l["metadata"]["sourceBranch"], "alt", "{x}");
    assert!(
        l["content"].as_str().unwrap().contains("Redis adds a network hop"),
        "{x}"
    );
    assert!(
        x["note"]
            .as_str()
            .unwrap()
            .contains("branch `alt` is the only one with a thought 4"),
        "{x}"
    );
    assert_eq!(x["savedPatterns"].as_array().unwrap().len(), 1);
    // A second branch with a thought 4 (the session closed: reopened).
    s.ok("load_context", json!({ "sessionId": sid })).await;
    let b = s
        .thought(json!({ "thought": "No cache at all?", "nextThoughtNeeded": true,
                         "branchId": "dead", "branchFromThought": 3 }))
        .await;
    let before = s.ok("knowledge", json!({ "subOperation": "list_patterns" })).await;
    let n = b["thoughtNumber"].as_u64().unwrap();
    assert_eq!(n, 4, "{b}");
    for (moments, listed) in [
        (
            json!([{ "thoughtNumber": 2, "type": "insight" }, { "thoughtNumber": 4, "type": "branch" }]),
            "candidates",
        ),
        (
            json!([{ "thoughtNumber": 2, "type": "insight" }, { "thoughtNumber": 1, "type": "branch" }]),
            "branches",
        ),
    ] {
        let e = s.err("session", learn(moments.clone()), "INVALID_PAYLOAD").await;
        assert_eq!(e["details"]["field"], "keyMoments[1].branchId", "{moments}: {e}");
        assert_eq!(e["details"][listed], json!(["alt", "dead"]), "{moments}: {e}");
    }
    let after = s.ok("knowledge", json!({ "subOperation": "list_patterns" })).await;
    assert_eq!(after, before, "nothing was saved");
    s.stop().await;
}

/// An anti-pattern from a revision moment is headed "Avoid: <the belief
/// revised>", whether the moment names the revision or the thought revised;
/// naming the revision headed it with the correction, telling later agents
/// to avoid the right answer. Saving again answers the stored one; one
/// edited by hand since is left as it is.
#[tokio::test]
async fn an_anti_pattern_is_headed_with_the_belief_revised() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Orders API latency").await;
    let belief = "Step 2: the p99 is mostly DB reads, so cache them.";
    let correction = "Correction to 2: the p99 is dominated by N+1 queries, not DB reads per se.";
    s.thought(t("Step 1: p99 is 800ms on /orders")).await;
    s.thought(t(belief)).await;
    s.thought(json!({ "thought": correction, "revisesThought": 2, "nextThoughtNeeded": true }))
        .await;
    let learn = |n: u32| {
        json!({ "subOperation": "extract_learnings", "sessionId": sid, "save": true,
                "keyMoments": [{ "thoughtNumber": n, "type": "revision", "significance": 6 }],
                "targetTypes": ["pattern", "anti-pattern"] })
    };
    let x = s.ok("session", learn(3)).await;
    assert_eq!(x["extractedCount"], 1, "{x}");
    let l = &x["learnings"][0];
    assert_eq!(l["type"], "anti-pattern");
    assert_eq!(l["title"], belief, "{x}");
    let content = l["content"].as_str().unwrap();
    assert!(content.starts_with(&format!("# Avoid: {belief}\n")), "{content}");
    assert!(content.contains("## What was believed (thought 2)"), "{content}");
    assert!(
        content.contains(&format!("## The correction (thought 3)\n\n> {correction}")),
        "{content}"
    );
    // A revision moment gives no positive pattern, and the note says which do.
    assert!(x["note"].as_str().unwrap().contains("No patterns extracted"), "{x}");
    let id = x["savedPatterns"][0].as_str().unwrap().to_string();
    let p = s
        .ok("knowledge", json!({ "subOperation": "get_pattern", "id": id }))
        .await;
    assert_eq!(p["title"], belief, "{p}");
    // Named by the thought revised: the same anti-pattern, saved once
    // (before, a second pattern, its source the thought revised).
    let y = s.ok("session", learn(2)).await;
    assert_eq!(y["learnings"][0]["title"], belief, "{y}");
    assert_eq!(y["learnings"][0]["content"].as_str(), Some(content), "{y}");
    assert_eq!(
        (&y["savedPatterns"], &y["alreadySaved"]),
        (&json!([id]), &json!([id])),
        "{y}"
    );
    // Both named in one call: one learning, and a note on the other.
    let both = s
        .ok(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid, "save": true,
                    "keyMoments": [{ "thoughtNumber": 2, "type": "revision", "significance": 6 },
                                   { "thoughtNumber": 3, "type": "revision", "significance": 6 }],
                    "targetTypes": ["anti-pattern"] }),
        )
        .await;
    assert_eq!(both["extractedCount"], 1, "{both}");
    assert_eq!(both["alreadySaved"], json!([id]), "{both}");
    assert!(
        both["note"].as_str().unwrap().contains("one anti-pattern for both"),
        "{both}"
    );
    let listed = s.ok("knowledge", json!({ "subOperation": "list_patterns" })).await;
    assert_eq!(listed["total"], 1, "{listed}");
    // The same correction as an insight: a pattern headed with the correction.
    let z = s
        .ok(
            "session",
            json!({ "subOperation": "extract_learnings", "sessionId": sid,
                    "keyMoments": [{ "thoughtNumber": 3, "type": "insight" }], "targetTypes": ["pattern"] }),
        )
        .await;
    assert_eq!(z["learnings"][0]["title"], correction, "{z}");
    assert!(
        z["learnings"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with(&format!("# {correction}\n")),
        "{z}"
    );

    // Edited by hand (here into the older, inverted heading, which only
    // the upgrade to schema 17 rewrites): the edit is theirs, and saving
    // the learning again saves it anew beside it.
    let inverted = content.replacen(belief, correction, 1);
    s.ok(
        "knowledge",
        json!({ "subOperation": "update_pattern", "id": id, "title": correction, "content": inverted }),
    )
    .await;
    let before = s.ok("knowledge", json!({ "subOperation": "list_patterns" })).await["total"].clone();
    let again = s.ok("session", learn(3)).await;
    assert_eq!(again["alreadySaved"], json!([]), "{again}");
    assert!(again.get("retitled").is_none(), "{again}");
    let new_id = again["savedPatterns"][0].as_str().unwrap();
    assert_ne!(new_id, id, "{again}");
    let p = s
        .ok("knowledge", json!({ "subOperation": "get_pattern", "id": id }))
        .await;
    assert_eq!(p["title"], correction, "{p}");
    assert_eq!(p["content"].as_str(), Some(inverted.as_str()), "{p}");
    let after = s.ok("knowledge", json!({ "subOperation": "list_patterns" })).await["total"].clone();
    assert_eq!(after.as_u64(), before.as_u64().map(|n| n + 1));
    // And once more: already saved.
    let third = s.ok("session", learn(3)).await;
    assert_eq!(third["alreadySaved"], json!([new_id]), "{third}");
    s.stop().await;
}
