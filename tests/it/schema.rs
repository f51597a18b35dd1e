//! The tool as a client lists it: its input schema, generated from the
//! operations' parameter types, guarded by a snapshot.

use serde_json::{Value, json};

use crate::common::*;

/// The one tool as `tools/list` answers it.
pub(crate) async fn listed_tool() -> Value {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let tools = s.client.list_all_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let tool = serde_json::to_value(&tools[0]).unwrap();
    s.stop().await;
    tool
}

#[tokio::test]
async fn tools_list_snapshot() {
    let tool = listed_tool().await;
    let listed = json!({
        "name": tool["name"],
        "title": tool["title"],
        "description": tool["description"],
        "inputSchema": tool["inputSchema"],
    });
    insta::assert_json_snapshot!("tools_list", listed);
}

/// `thought`'s parameters as the specification and the TypeScript Thoughtbox
/// name them, and the session fields a first thought may carry.
const THOUGHT_ARGS: &[&str] = &[
    "thought",
    "nextThoughtNeeded",
    "thoughtNumber",
    "totalThoughts",
    "isRevision",
    "revisesThought",
    "branchFromThought",
    "branchId",
    "needsMoreThoughts",
    "verbose",
    "includeGuide",
    "critique",
    "sessionTitle",
    "sessionTags",
];

#[tokio::test]
async fn each_operation_lists_its_parameters_with_types_and_required_ones() {
    let tool = listed_tool().await;
    let schema = &tool["inputSchema"];
    // The form every client checked takes (docs/decisions/0001-gateway-schema.md).
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["required"], json!(["operation"]));
    assert_eq!(schema["properties"]["args"]["type"], "object");
    let text = schema.to_string();
    for refused in ["\"oneOf\"", "\"anyOf\"", "\"allOf\"", "\"$ref\"", "\"type\":["] {
        assert!(!text.contains(refused), "{refused} in the schema");
    }
    let defs = &schema["$defs"];
    let properties = |key: &str| -> Vec<String> {
        defs[key]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no $defs.{key}"))
            .keys()
            .cloned()
            .collect()
    };
    // Every operation of the enum has its entry.
    for op in schema["properties"]["operation"]["enum"].as_array().unwrap() {
        let op = op.as_str().unwrap();
        assert!(
            defs.get(op).is_some()
                || defs
                    .as_object()
                    .unwrap()
                    .keys()
                    .any(|k| k.starts_with(&format!("{op}."))),
            "{op} has no parameters entry"
        );
    }

    let thought = properties("thought");
    for name in THOUGHT_ARGS.iter().chain(&["sessionId"]) {
        assert!(
            thought.iter().any(|t| t == name),
            "thought's schema lacks {name}: {thought:?}"
        );
    }
    assert_eq!(defs["thought"]["required"], json!(["thought", "nextThoughtNeeded"]));
    assert_eq!(defs["thought"]["properties"]["nextThoughtNeeded"]["type"], "boolean");
    assert_eq!(defs["thought"]["properties"]["thoughtNumber"]["type"], "integer");
    let session_id = defs["thought"]["properties"]["sessionId"]["description"]
        .as_str()
        .unwrap();
    assert!(session_id.contains("session to write to"), "{session_id}");

    for (key, names, required) in [
        ("load_context", &["sessionId", "reopen"][..], &["sessionId"][..]),
        (
            "read_thoughts",
            &["sessionId", "thoughtNumber", "last", "range", "branchId"],
            &[],
        ),
        (
            "start_new",
            &["sessionTitle", "description", "tags", "domain", "newWork"],
            &[],
        ),
        (
            "list_sessions",
            &[
                "tags",
                "search",
                "status",
                "limit",
                "offset",
                "sortBy",
                "sortOrder",
                "allProjects",
            ],
            &[],
        ),
        (
            "session.search",
            &["subOperation", "query", "limit", "matchesPerSession", "include"],
            &["subOperation", "query"],
        ),
        (
            "session.delete",
            &["subOperation", "sessionId"],
            &["subOperation", "sessionId"],
        ),
        (
            "session.export",
            &["sessionId", "format", "destination", "includeMetadata"],
            &["subOperation"],
        ),
        (
            "knowledge.create_pattern",
            &["title", "description", "content", "tags", "derivedFromSessions"],
            &["subOperation", "title", "description", "content"],
        ),
        ("mental_models.get_model", &["modelId"], &["subOperation", "modelId"]),
        ("deep_analysis", &["sessionId", "analysisType", "options"], &[]),
    ] {
        let have = properties(key);
        for name in names {
            assert!(have.contains(&name.to_string()), "{key} lacks {name}: {have:?}");
        }
        let want: Vec<Value> = required.iter().map(|r| json!(r)).collect();
        let got = defs[key]["required"].as_array().cloned().unwrap_or_default();
        assert_eq!(got, want, "{key}'s required names");
    }
    // Every operation past stage 0 takes the handle whose stage admits it,
    // those acting on no session included; stage-0 ones need no stage.
    for key in [
        "mental_models.list_tags",
        "knowledge.search",
        "thread.list",
        "notebook.get",
        "session.list",
    ] {
        assert!(properties(key).contains(&"sessionId".to_string()), "{key}");
    }
    assert!(!properties("list_sessions").contains(&"sessionId".to_string()));
    // Ranges and enums say what is taken.
    assert_eq!(defs["list_sessions"]["properties"]["limit"]["maximum"], 100);
    assert_eq!(
        defs["session.export"]["properties"]["format"]["enum"],
        json!(["json", "markdown", "cipher"])
    );
}

#[tokio::test]
async fn the_description_says_sessions_are_handles() {
    let tool = listed_tool().await;
    let description = tool["description"].as_str().unwrap();
    for said in [
        "every answer about a session carries its sessionId",
        "pass that sessionId back",
        "Several conversations may share one server process",
        "{ \"brief\": true }",
        "$defs",
    ] {
        assert!(description.contains(said), "{said}: {description}");
    }
}
