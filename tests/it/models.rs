//! Mental models: the gateway operation, MCP resources and MCP prompts.

use rmcp::model::{GetPromptRequestParams, ReadResourceRequestParams};
use serde_json::{Map, Value, json};

use crate::common::*;

fn mm(sub: &str, args: Value) -> Value {
    let mut a = args;
    a["subOperation"] = json!(sub);
    a
}

#[tokio::test]
async fn get_list_and_tags() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ok("start_new", Value::Null).await;
    let e = s
        .err("mental_models", mm("list_tags", json!({})), "STAGE_REQUIREMENT_NOT_MET")
        .await;
    assert_eq!(e["details"]["requiredStage"], 2);
    s.ok("cipher", Value::Null).await;

    let m = s
        .ok("mental_models", mm("get_model", json!({ "modelId": "five-whys" })))
        .await;
    assert_eq!(m["name"], "five-whys");
    assert_eq!(m["title"], "Five Whys");
    assert!(m["tags"].as_array().unwrap().contains(&json!("debugging")));
    let content = m["content"].as_str().unwrap();
    assert!(content.len() > 1500 && content.contains("## Pitfalls"));
    // Stage 3 once a model is applied.
    assert_eq!(s.ok("get_state", Value::Null).await["stage"], 3);
    // The TypeScript Thoughtbox's spelling: operation + nested args + `model`.
    let m2 = s
        .ok(
            "mental_models",
            json!({ "operation": "get_model", "args": { "model": "five-whys" } }),
        )
        .await;
    assert_eq!(m2["content"], m["content"]);

    let all = s.ok("mental_models", mm("list_models", json!({}))).await;
    assert_eq!(all["count"], 15);
    assert!(all["filter"].is_null());
    assert!(all["models"][0].get("content").is_none());
    let debugging = s
        .ok("mental_models", mm("list_models", json!({ "tag": "debugging" })))
        .await;
    assert_eq!(debugging["filter"], "debugging");
    assert!(debugging["count"].as_u64().unwrap() >= 2);
    for model in debugging["models"].as_array().unwrap() {
        assert!(model["tags"].as_array().unwrap().contains(&json!("debugging")));
    }
    let both = s
        .ok(
            "mental_models",
            mm("list_models", json!({ "tags": ["decision-making", "analysis"] })),
        )
        .await;
    assert_eq!(both["filter"], "decision-making,analysis");
    for model in both["models"].as_array().unwrap() {
        let tags = model["tags"].as_array().unwrap();
        assert!(tags.contains(&json!("decision-making")) && tags.contains(&json!("analysis")));
    }
    assert!(both["count"].as_u64().unwrap() >= 1);

    let tags = s.ok("mental_models", mm("list_tags", json!({}))).await;
    let names: Vec<&str> = tags["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for t in [
        "debugging",
        "planning",
        "decision-making",
        "risk-management",
        "problem-solving",
        "analysis",
    ] {
        assert!(names.contains(&t), "{t}");
    }
    assert_eq!(tags["count"], names.len());
    for t in tags["tags"].as_array().unwrap() {
        assert!(!t["description"].as_str().unwrap().is_empty());
        assert!(t["modelCount"].as_u64().unwrap() >= 2);
    }
    s.stop().await;
}

#[tokio::test]
async fn unknown_ids_list_the_valid_ones() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.arg("serve").arg("--no-stages");
    let s = start_with((), cmd).await;
    let e = s
        .err(
            "mental_models",
            mm("get_model", json!({ "modelId": "six-whys" })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "modelId");
    assert_eq!(e["details"]["validModels"].as_array().unwrap().len(), 15);
    let e = s
        .err("mental_models", mm("get_model", json!({})), "INVALID_PAYLOAD")
        .await;
    assert_eq!(e["details"]["validModels"].as_array().unwrap().len(), 15);
    let e = s
        .err(
            "mental_models",
            mm("get_model", json!({ "model": "nope" })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "model");
    let e = s
        .err(
            "mental_models",
            mm("list_models", json!({ "tag": "astrology" })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "tag");
    assert!(
        e["details"]["validTags"]
            .as_array()
            .unwrap()
            .contains(&json!("planning"))
    );
    let e = s
        .err(
            "mental_models",
            mm("list_models", json!({ "tags": ["planning", "astrology"] })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "tags");
    s.err(
        "mental_models",
        mm("list_models", json!({ "tags": 3 })),
        "INVALID_PAYLOAD",
    )
    .await;
    s.err(
        "mental_models",
        mm("get_model", json!({ "modelId": ["five-whys"] })),
        "INVALID_PAYLOAD",
    )
    .await;
    s.err("mental_models", mm("summon", json!({})), "INVALID_OPERATION")
        .await;
    let e = s.err("mental_models", json!({}), "INVALID_PAYLOAD").await;
    assert_eq!(e["details"]["field"], "subOperation");
    s.stop().await;
}

#[tokio::test]
async fn models_as_resources_and_prompts() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let info = s.client.peer_info().unwrap();
    assert!(info.capabilities.resources.is_some());
    assert!(info.capabilities.prompts.is_some());

    let resources = s.client.list_all_resources().await.unwrap();
    let models: Vec<_> = resources
        .iter()
        .filter(|r| r.uri.starts_with("thoughtbox://mental-models/"))
        .collect();
    assert_eq!(models.len(), 15);
    assert!(resources.iter().any(|r| r.uri == "thoughtbox://cipher"));
    let r = s
        .client
        .read_resource(ReadResourceRequestParams::new("thoughtbox://mental-models/pre-mortem"))
        .await
        .unwrap();
    match &r.contents[0] {
        rmcp::model::ResourceContents::TextResourceContents { text, mime_type, .. } => {
            assert!(text.starts_with("# Pre-mortem"));
            assert_eq!(mime_type.as_deref(), Some("text/markdown"));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        s.client
            .read_resource(ReadResourceRequestParams::new("thoughtbox://mental-models/nope"))
            .await
            .is_err()
    );
    let templates = s.client.list_all_resource_templates().await.unwrap();
    assert!(
        templates
            .iter()
            .any(|t| t.uri_template == "thoughtbox://mental-models/{name}")
    );

    let prompts = s.client.list_all_prompts().await.unwrap();
    assert_eq!(prompts.len(), 15);
    let inversion = prompts.iter().find(|p| p.name == "inversion").unwrap();
    assert_eq!(inversion.title.as_deref(), Some("Inversion"));
    assert_eq!(inversion.arguments.as_ref().unwrap()[0].name, "problem");
    let mut args = Map::new();
    args.insert("problem".into(), json!("Our releases keep slipping"));
    let p = s
        .client
        .get_prompt(GetPromptRequestParams::new("inversion").with_arguments(args))
        .await
        .unwrap();
    let text = p.messages[0].content.as_text().unwrap().text.clone();
    assert!(text.starts_with("# Inversion"));
    assert!(text.contains("Our releases keep slipping"));
    assert!(
        s.client
            .get_prompt(GetPromptRequestParams::new("no-such-model"))
            .await
            .is_err()
    );
    // Still serving after protocol errors.
    assert_eq!(s.ok("get_state", Value::Null).await["stage"], 0);
    s.stop().await;
}
