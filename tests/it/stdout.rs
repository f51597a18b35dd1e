//! stdout is the protocol: every line the server writes there is JSON-RPC,
//! even with debug logging and failing calls.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::common::*;

/// The server's next line on stdout, which must be a JSON-RPC message.
async fn next_message(lines: &mut Lines<BufReader<ChildStdout>>) -> Value {
    let line = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
        .await
        .expect("server answered")
        .unwrap()
        .expect("a line");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON on stdout: {line}"));
    assert_eq!(v["jsonrpc"], "2.0", "{line}");
    v
}

/// Write one line to the server.
async fn send(stdin: &mut ChildStdin, line: &str) {
    stdin.write_all(format!("{line}\n").as_bytes()).await.unwrap();
}

/// A server spawned from `cmd` with piped stdin and stdout, past
/// `initialize` and `notifications/initialized`.
async fn initialized(mut cmd: Command) -> (Child, ChildStdin, Lines<BufReader<ChildStdout>>) {
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    send(&mut stdin, r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#).await;
    assert_eq!(next_message(&mut lines).await["id"], 0);
    send(&mut stdin, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    (child, stdin, lines)
}

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
        let v = next_message(&mut lines).await;
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

/// A JavaScript client that cuts text in the middle of an emoji sends an
/// unpaired surrogate escape (`"\ud83d"`), and a client that cuts bytes sends
/// half a UTF-8 character: the server records the text with U+FFFD in its
/// place and answers, instead of dropping the request. Lines
/// that are not JSON get no answer when there is no id to answer, and a
/// parse error under their id when their top level names one (else a `NaN` or
/// a line cut short leaves the client waiting for ever); the server keeps
/// serving.
#[tokio::test]
async fn broken_text_is_replaced_and_garbage_is_skipped() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let stderr = child.stderr.take().unwrap();
    let err_task = tokio::spawn(async move {
        let mut lines = BufReader::new(stderr).lines();
        let mut all = String::new();
        while let Ok(Some(l)) = lines.next_line().await {
            all.push_str(&l);
            all.push('\n');
        }
        all
    });
    let call = |id: u64, op: &str, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"thoughtbox_gateway","arguments":{{"operation":"{op}","args":{args}}}}}}}"#
        )
    };
    // One request at a time, as the staged flow needs: send, then read its answer.
    let mut answers = Vec::new();
    for (request, garbage_before) in [
        (r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#.to_string(), false),
        (call(1, "start_new", r#"{"sessionTitle":"cut \ud83d"}"#), true),
        (call(2, "cipher", "{}"), false),
        (call(3, "thought", r#"{"thought":"half \ude00 and whole \ud83d\ude00 and half \ud83d","nextThoughtNeeded":true}"#), true),
        (call(4, "read_thoughts", r#"{"last":1}"#), false),
    ] {
        if garbage_before {
            send(&mut stdin, "this is not json").await;
            send(&mut stdin, r#"{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"#).await;
            send(&mut stdin, &call(98, "list_sessions", r#"{"limit":NaN}"#)).await;
            for id in [99, 98] {
                let v = next_message(&mut lines).await;
                assert_eq!(v["id"], id, "{v}");
                assert_eq!(v["error"]["code"], -32700, "{v}");
                assert!(v["error"]["message"].as_str().unwrap().contains("not valid JSON"), "{v}");
            }
        }
        send(&mut stdin, &request).await;
        let v = next_message(&mut lines).await;
        if answers.is_empty() {
            send(&mut stdin, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
        }
        answers.push(v);
    }
    // Bytes that are not UTF-8: a character cut in half, a Latin-1 byte.
    let cut = call(
        5,
        "thought",
        "{\"thought\":\"cut caf\u{1} latin \u{2}\",\"nextThoughtNeeded\":true}",
    );
    let mut bytes: Vec<u8> = cut
        .bytes()
        .map(|b| match b {
            1 => 0xC3,
            2 => 0xE9,
            b => b,
        })
        .collect();
    bytes.push(b'\n');
    stdin.write_all(&bytes).await.unwrap();
    answers.push(next_message(&mut lines).await);
    send(&mut stdin, &call(6, "read_thoughts", r#"{"last":1}"#)).await;
    answers.push(next_message(&mut lines).await);
    for (id, answer) in answers.iter().enumerate() {
        assert_eq!(answer["id"], id, "{answer}");
        if id > 0 {
            assert_eq!(answer["result"]["isError"], false, "{answer}");
        }
    }
    let session = &answers[1]["result"]["structuredContent"]["session"];
    assert_eq!(session["title"], "cut \u{fffd}");
    let read = &answers[4]["result"]["structuredContent"];
    assert_eq!(
        read["thoughts"][0]["thought"], "half \u{fffd} and whole \u{1F600} and half \u{fffd}",
        "{read}"
    );
    let read = &answers[6]["result"]["structuredContent"];
    assert_eq!(
        read["thoughts"][0]["thought"], "cut caf\u{fffd} latin \u{fffd}",
        "{read}"
    );
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
    let log = err_task.await.unwrap();
    assert!(log.contains("ignoring a message that is not valid JSON"), "{log}");
    assert!(log.contains("invalid UTF-8"), "{log}");
    assert!(log.contains("unpaired UTF-16 surrogate"), "{log}");
}

/// A request for an MCP method with malformed params is answered -32602
/// (invalid params, saying what was expected) under its own id, even when
/// its params is not an object at all; an unknown method -32601.
#[tokio::test]
async fn malformed_params_and_unknown_methods_get_the_right_codes() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.stderr(Stdio::null());
    let (mut child, mut stdin, mut lines) = initialized(cmd).await;
    for (request, code, says) in [
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"thoughtbox_gateway","arguments":[1]}}"#,
            -32602,
            "tools/call",
        ),
        (r#"{"jsonrpc":"2.0","id":2,"method":"tools/call"}"#, -32602, "name"),
        (
            r#"{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{}}"#,
            -32602,
            "uri",
        ),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{}}"#,
            -32602,
            "name",
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"no/such","params":{}}"#,
            -32601,
            "no/such",
        ),
        // params that is not an object: still answered under the request's id.
        (
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":[]}"#,
            -32602,
            "an array",
        ),
        (
            r#"{"jsonrpc":"2.0","id":"eight","method":"ping","params":"x"}"#,
            -32602,
            "a string",
        ),
        (
            r#"{"jsonrpc":"2.0","id":9,"method":"resources/read","params":5}"#,
            -32602,
            "resources/read",
        ),
        (
            r#"{"jsonrpc":"2.0","id":10,"method":"no/such","params":[]}"#,
            -32601,
            "no/such",
        ),
    ] {
        send(&mut stdin, request).await;
        let v = next_message(&mut lines).await;
        let sent: Value = serde_json::from_str(request).unwrap();
        assert_eq!(v["id"], sent["id"], "{v}");
        assert_eq!(v["error"]["code"], code, "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains(says), "{v}");
    }
    send(&mut stdin, r#"{"jsonrpc":"2.0","id":6,"method":"ping"}"#).await;
    assert_eq!(next_message(&mut lines).await["id"], 6);
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
}

/// A call naming one key twice (`"subOperation":"get","subOperation":"delete"`)
/// is refused under its id and runs neither way: JSON readers keep one of
/// the two values, and the server would have run whichever its reader kept.
/// A request nested past the JSON reader's limit, or holding a number past
/// the largest it reads, is answered too, not dropped while the client waits.
#[tokio::test]
async fn a_key_named_twice_or_nesting_too_deep_is_refused_and_runs_nothing() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.arg("--no-stages").stderr(Stdio::null());
    let (mut child, mut stdin, mut lines) = initialized(cmd).await;
    let call = |id: u32, arguments: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"thoughtbox_gateway","arguments":{arguments}}}}}"#
        )
    };
    send(
        &mut stdin,
        &call(1, r#"{"operation":"start_new","args":{"sessionTitle":"kept"}}"#),
    )
    .await;
    let started = next_message(&mut lines).await;
    let session = started["result"]["structuredContent"]["session"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_string();
    for (id, arguments, path) in [
        (
            2,
            format!(
                r#"{{"operation":"session","args":{{"subOperation":"get","subOperation":"delete","sessionId":"{session}"}}}}"#
            ),
            "params.arguments.args.subOperation",
        ),
        (
            3,
            format!(
                r#"{{"operation":"get_state","operation":"session","args":{{"subOperation":"delete","sessionId":"{session}"}}}}"#
            ),
            "params.arguments.operation",
        ),
    ] {
        send(&mut stdin, &call(id, &arguments)).await;
        let v = next_message(&mut lines).await;
        assert_eq!(v["id"], id, "{v}");
        assert_eq!(v["error"]["code"], -32602, "{v}");
        assert_eq!(v["error"]["data"]["duplicateKey"], path, "{v}");
        assert!(v["error"]["message"].as_str().unwrap().contains("named twice"), "{v}");
    }
    let deep = format!(
        r#"{{"operation":"get_state","args":{{"x":{}{}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    send(&mut stdin, &call(4, &deep)).await;
    let v = next_message(&mut lines).await;
    assert_eq!(v["id"], 4, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("too deeply"), "{v}");
    // A number no JSON reader can hold (valid JSON text all the same).
    send(
        &mut stdin,
        &call(
            6,
            &format!(
                r#"{{"operation":"session","args":{{"subOperation":"delete","sessionId":"{session}","x":1e400}}}}"#
            ),
        ),
    )
    .await;
    let v = next_message(&mut lines).await;
    assert_eq!(v["id"], 6, "{v}");
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("too large"), "{v}");
    // Not JSON-RPC 2.0: answered under its id (the MCP library leaves the id out).
    send(&mut stdin, r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#).await;
    let v = next_message(&mut lines).await;
    assert_eq!(v["id"], 7, "{v}");
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert!(v["error"]["message"].as_str().unwrap().contains("2.0"), "{v}");
    // Without "jsonrpc", a request is read as 2.0 and answered, and a
    // notification gets no answer (the MCP library answered both with an
    // error without an id).
    send(&mut stdin, r#"{"method":"notifications/roots/list_changed"}"#).await;
    send(&mut stdin, r#"{"id":8,"method":"ping"}"#).await;
    let v = next_message(&mut lines).await;
    assert_eq!(v["id"], 8, "{v}");
    assert!(v["result"].is_object(), "{v}");
    // The session is still there.
    send(
        &mut stdin,
        &call(
            5,
            &format!(r#"{{"operation":"session","args":{{"subOperation":"get","sessionId":"{session}"}}}}"#),
        ),
    )
    .await;
    let v = next_message(&mut lines).await;
    assert_eq!(v["id"], 5);
    assert_eq!(v["result"]["isError"], false, "{v}");
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
}

/// A message over the MCP library's 16 MiB line limit (here a thought of
/// 17 MiB) is answered -32600 under its id, saying so, instead of being
/// dropped while the client waits; nothing is written and the server serves on.
#[tokio::test]
async fn a_message_over_16_mib_is_answered_not_dropped() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.stderr(Stdio::null());
    let (mut child, mut stdin, mut lines) = initialized(cmd).await;
    let call = |id: u64, op: &str, args: Value| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "thoughtbox_gateway", "arguments": { "operation": op, "args": args } } })
        .to_string()
    };
    send(&mut stdin, &call(1, "start_new", json!({ "sessionTitle": "big" }))).await;
    assert_eq!(next_message(&mut lines).await["result"]["isError"], false);
    send(&mut stdin, &call(2, "cipher", json!({}))).await;
    assert_eq!(next_message(&mut lines).await["result"]["isError"], false);
    let huge = call(
        3,
        "thought",
        json!({ "thought": "x".repeat(17 << 20), "nextThoughtNeeded": true }),
    );
    send(&mut stdin, &huge).await;
    let v = next_message(&mut lines).await;
    assert_eq!(v["id"], 3, "{v}");
    assert_eq!(v["error"]["code"], -32600, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("16 MiB") && message.contains("tools/call"),
        "{message}"
    );
    // The TypeScript SDK writes the id last, after the params.
    let huge = format!(
        r#"{{"method":"tools/call","params":{{"name":"thoughtbox_gateway","arguments":{{"operation":"thought","args":{{"thought":"{}","nextThoughtNeeded":true}}}}}},"jsonrpc":"2.0","id":"ts-5"}}"#,
        "y".repeat(17 << 20)
    );
    send(&mut stdin, &huge).await;
    let v = next_message(&mut lines).await;
    assert_eq!(v["id"], "ts-5", "{v}");
    assert_eq!(v["error"]["code"], -32600, "{v}");
    send(&mut stdin, &call(4, "read_thoughts", json!({}))).await;
    let v = next_message(&mut lines).await;
    assert_eq!(v["id"], 4);
    assert_eq!(v["result"]["structuredContent"]["thoughts"], json!([]), "{v}");
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
}

/// A client that stops reading stdout (closes its end) but keeps stdin
/// open: the server cannot answer any more, so it stops cleanly instead of
/// carrying out requests whose answers nobody receives. Unix only: there
/// the server watches stdout (poll) while idle; on Windows it finds out at
/// its next answer, or when stdin closes, as it does when a client exits.
#[cfg(unix)]
#[tokio::test]
async fn the_server_stops_when_nobody_reads_its_answers() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.stderr(Stdio::null());
    let (mut child, stdin, lines) = initialized(cmd).await;
    // Seen at once, with no request to answer (else an idle server waits for
    // its next answer to find out, and a client's SIGKILL leaves the WAL).
    drop(lines);
    let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait())
        .await
        .expect("the server stopped")
        .unwrap();
    assert!(status.success(), "{status:?}");
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    assert!(!std::path::Path::new(&wal).exists(), "a clean exit removes the WAL");
    drop(stdin);
    // Also before initialize is answered, and before any request at all:
    // a clean end, not a failure.
    for initialize in [true, false] {
        let mut cmd = command(&db);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        drop(child.stdout.take());
        if initialize {
            send(&mut stdin, r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#).await;
        }
        let status = tokio::time::timeout(std::time::Duration::from_secs(20), child.wait())
            .await
            .expect("the server stopped")
            .unwrap();
        assert!(status.success(), "initialize sent: {initialize}: {status:?}");
        drop(stdin);
    }
}

/// SIGHUP ends the server cleanly, unless it was started with SIGHUP
/// ignored (`nohup`): then it keeps serving.
#[cfg(unix)]
#[tokio::test]
async fn sighup_is_ignored_under_nohup() {
    let (_d, db) = temp_db();
    let mut cmd = Command::new("nohup");
    cmd.arg(bin()).arg("--db").arg(&db).stderr(Stdio::null());
    let (mut child, mut stdin, mut lines) = initialized(cmd).await;
    let pid = child.id().unwrap();
    kill(pid, "HUP");
    // Left ignored, not caught: the kernel dropped the signal at once, so
    // the ping below goes to a server that had it. Elsewhere, a moment for
    // a server that caught it to act.
    #[cfg(target_os = "linux")]
    {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let mask = |field: &str| {
            let hex = status.lines().find_map(|l| l.strip_prefix(field)).unwrap();
            u64::from_str_radix(hex.trim(), 16).unwrap()
        };
        // SIGHUP is signal 1: bit 0.
        assert_eq!(
            (mask("SigIgn:") & 1, mask("SigCgt:") & 1),
            (1, 0),
            "SIGHUP is not left ignored: {status}"
        );
    }
    #[cfg(not(target_os = "linux"))]
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    send(&mut stdin, r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#).await;
    assert_eq!(
        next_message(&mut lines).await["id"],
        2,
        "the server ended on SIGHUP under nohup"
    );
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
}

/// `--events` naming stdout by a path (`/dev/stdout`) would put events
/// into the protocol stream: the server refuses to start, as for `stdout`,
/// with a message on stderr and nothing on stdout.
#[cfg(unix)]
#[tokio::test]
async fn events_never_reach_stdout_by_any_name() {
    let (_d, db) = temp_db();
    // The server with every stream piped, run to its exit.
    let run = |configure: &dyn Fn(&mut tokio::process::Command)| {
        let mut cmd = command(&db);
        configure(&mut cmd);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        async move { cmd.output().await.unwrap() }
    };
    for target in ["/dev/stdout", "/proc/self/fd/1", "stdout"] {
        let out = run(&|cmd| {
            cmd.args(["--events", target, "--no-stages"]);
        })
        .await;
        assert!(!out.status.success(), "{target}");
        assert!(
            out.stdout.is_empty(),
            "{target}: {:?}",
            String::from_utf8_lossy(&out.stdout)
        );
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(
            log.contains("stdout") && log.contains("stderr or a file"),
            "{target}: {log}"
        );
    }
    // As THOUGHTBOX_EVENTS too, while other commands are left alone.
    let out = run(&|cmd| {
        cmd.env("THOUGHTBOX_EVENTS", "/dev/stdout");
    })
    .await;
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
}

/// Once stdin has closed, a signal (a client that stopped waiting) bounds
/// what is left of the shutdown, even with a write still waiting for
/// another program's lock (else the exit takes the whole lock wait).
#[cfg(unix)] // Signals are Unix's: Windows stops a server by closing stdin or terminating it.
#[tokio::test]
async fn a_signal_after_stdin_closed_ends_a_shutdown_held_up() {
    let (_d, db) = temp_db();
    let (mut child, mut stdin, mut lines) = initialized(command(&db)).await;
    let call = |id: u32, op: &str, args: Value| {
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "thoughtbox_gateway", "arguments": { "operation": op, "args": args } } })
        .to_string()
    };
    send(&mut stdin, &call(1, "start_new", json!({ "sessionTitle": "held up" }))).await;
    assert_eq!(next_message(&mut lines).await["id"], 1);
    send(&mut stdin, &call(2, "cipher", json!({}))).await;
    assert_eq!(next_message(&mut lines).await["id"], 2);
    let lock = rusqlite::Connection::open(&db).unwrap();
    lock.execute_batch("BEGIN IMMEDIATE").unwrap();
    send(
        &mut stdin,
        &call(3, "thought", json!({ "thought": "waits", "nextThoughtNeeded": true })),
    )
    .await;
    writer_waits_for_lock(child.id().unwrap()).await;
    drop(stdin);
    // Time to read the end of stdin (nothing shows it), with room for a
    // busy machine.
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let signalled = std::time::Instant::now();
    kill(child.id().unwrap(), "TERM");
    // Before the SIGKILL an MCP client sends 3 s after SIGTERM.
    let status = tokio::time::timeout(std::time::Duration::from_secs(3), child.wait())
        .await
        .expect("the server exits soon after the signal")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(signalled.elapsed() < std::time::Duration::from_secs(3));
    lock.execute_batch("ROLLBACK").unwrap();
    let n: i64 = lock
        .query_row("SELECT count(*) FROM thoughts", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0, "the thought was never acknowledged nor written");
}

/// A request sent before `initialize` (someone trying the server by hand)
/// is told that a session starts with `initialize`: the MCP library's own
/// answer names only two `_meta` fields of the stateless protocol. The
/// session then starts as usual, and later answers pass unchanged.
#[tokio::test]
async fn a_request_before_initialize_is_told_to_initialize_first() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    send(&mut stdin, r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#).await;
    let refused = next_message(&mut lines).await;
    assert_eq!(refused["id"], 1, "{refused}");
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("send initialize first"), "{message}");
    // Notifications and replies before the session are dropped, not the
    // end of the server (a client that cancels a ping it gave up on).
    send(&mut stdin, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    send(&mut stdin, r#"{"jsonrpc":"2.0","id":7,"result":{}}"#).await;
    send(
        &mut stdin,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#,
    )
    .await;
    // A ping answered before initialize changes nothing of that.
    send(&mut stdin, r#"{"jsonrpc":"2.0","id":10,"method":"ping"}"#).await;
    let pong = next_message(&mut lines).await;
    assert_eq!(pong["id"], 10, "{pong}");
    send(&mut stdin, r#"{"jsonrpc":"2.0","id":11,"method":"tools/list"}"#).await;
    let refused = next_message(&mut lines).await;
    let message = refused["error"]["message"].as_str().unwrap();
    assert!(message.contains("send initialize first"), "{refused}");
    send(&mut stdin, r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#).await;
    let init = next_message(&mut lines).await;
    assert_eq!(init["id"], 2, "{init}");
    assert!(init["result"]["serverInfo"].is_object(), "{init}");
    send(&mut stdin, r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#).await;
    send(&mut stdin, r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#).await;
    let tools = next_message(&mut lines).await;
    assert_eq!(tools["result"]["tools"][0]["name"], "thoughtbox_gateway", "{tools}");
    drop(stdin);
    assert!(child.wait().await.unwrap().success());
}
