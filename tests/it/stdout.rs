//! stdout is the protocol: every line the server writes there is JSON-RPC,
//! even with debug logging and failing calls.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::common::*;

#[tokio::test]
async fn every_stdout_line_is_json_rpc() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.env("RUST_LOG", "trace")
        .env("THOUGHTBOX_EVENTS", "stderr")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let err_task = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut n = 0;
        while let Ok(Some(_)) = lines.next_line().await {
            n += 1;
        }
        n
    });
    let call = |id: u64, op: &str, args: Value| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "thoughtbox_gateway", "arguments": { "operation": op, "args": args } } })
    };
    let messages = vec![
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": { "name": "raw", "version": "0" } } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list" }),
        call(2, "get_state", json!({})),
        call(3, "thought", json!({ "thought": "early" })),
        call(4, "start_new", json!({ "sessionTitle": "stdout" })),
        call(5, "cipher", json!({})),
        call(
            6,
            "thought",
            json!({ "thought": "hello", "nextThoughtNeeded": true, "critique": true }),
        ),
        call(7, "thought", json!({ "thought": "bad", "nextThoughtNeeded": "x" })),
        call(8, "load_context", json!({ "sessionId": "missing" })),
        call(
            9,
            "session",
            json!({ "subOperation": "export", "sessionId": "missing" }),
        ),
        json!({ "jsonrpc": "2.0", "id": 10, "method": "tools/call", "params": { "name": "other_tool", "arguments": {} } }),
        json!({ "jsonrpc": "2.0", "id": 11, "method": "no/such/method" }),
        call(
            12,
            "knowledge",
            json!({ "subOperation": "create_pattern", "title": "t", "description": "d", "content": "c" }),
        ),
        call(
            13,
            "mental_models",
            json!({ "subOperation": "get_model", "modelId": "inversion" }),
        ),
        call(14, "deep_analysis", json!({})),
        json!({ "jsonrpc": "2.0", "id": 15, "method": "resources/read", "params": { "uri": "thoughtbox://mental-models/nope" } }),
        json!({ "jsonrpc": "2.0", "id": 16, "method": "prompts/get", "params": { "name": "five-whys" } }),
    ];
    for m in &messages {
        stdin.write_all(format!("{m}\n").as_bytes()).await.unwrap();
    }
    let mut lines = BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    while seen.len() < 17 {
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
            .await
            .expect("server answered")
            .unwrap()
            .expect("a line");
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
        if let Some(id) = v.get("id").and_then(Value::as_u64) {
            seen.push(id);
        }
    }
    drop(stdin);
    while let Some(line) = lines.next_line().await.unwrap() {
        let v: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"));
        assert_eq!(v["jsonrpc"], "2.0", "{line}");
    }
    assert!(child.wait().await.unwrap().success());
    assert!(err_task.await.unwrap() > 0, "logs go to stderr");
}
