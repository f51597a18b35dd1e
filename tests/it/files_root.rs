//! Files an HTTP agent names on the server's disk (`session export
//! destination`, `notebook export destination`, `notebook import path`):
//! none without `--files-root`, only inside it with one. A stdio agent, the
//! local user's, names any (the other tests).

use serde_json::{Value, json};

use crate::http::HttpServer;

/// A session with a thought and a notebook, through `s`: their ids.
async fn some_work(s: &crate::common::Server) -> (String, String) {
    let started = s.ok("start_new", json!({ "sessionTitle": "files" })).await;
    let id = started["session"]["id"].as_str().expect("id").to_string();
    s.ok("cipher", json!({ "sessionId": id, "brief": true })).await;
    s.thought(json!({ "sessionId": id, "thought": "one", "nextThoughtNeeded": true }))
        .await;
    let nb = s
        .ok(
            "notebook",
            json!({ "subOperation": "create", "name": "nb", "sessionId": id }),
        )
        .await;
    let nb = nb["notebook"]["id"].as_str().expect("notebook id").to_string();
    (id, nb)
}

fn refused_on(e: &Value, field: &str) {
    assert_eq!(e["details"]["field"], field, "{e}");
}

/// `notebook import` of a file outside any files root is refused on `path`.
async fn a_file_outside_is_not_read(s: &crate::common::Server, id: &str) {
    let e = s
        .err(
            "notebook",
            json!({ "subOperation": "import", "sessionId": id, "path": "/etc/hostname" }),
            "INVALID_PAYLOAD",
        )
        .await;
    refused_on(&e, "path");
}

#[tokio::test]
async fn without_a_files_root_http_agents_name_no_files() {
    let server = HttpServer::start().await;
    let s = server.stateless().await;
    let (id, nb) = some_work(&s).await;
    let outside = tempfile::tempdir().unwrap();
    let dest = outside.path().join("made-by-an-agent");
    let e = s
        .err(
            "session",
            json!({ "subOperation": "export", "sessionId": id, "destination": dest.display().to_string() }),
            "INVALID_PAYLOAD",
        )
        .await;
    refused_on(&e, "destination");
    let e = s
        .err(
            "notebook",
            json!({ "subOperation": "export", "sessionId": id, "notebookId": nb,
                    "destination": dest.join("x.src.md").display().to_string() }),
            "INVALID_PAYLOAD",
        )
        .await;
    refused_on(&e, "destination");
    a_file_outside_is_not_read(&s, &id).await;
    assert!(!dest.exists(), "nothing was written");
    // The content itself still comes back in the answer.
    let inline = s
        .ok(
            "notebook",
            json!({ "subOperation": "export", "sessionId": id, "notebookId": nb }),
        )
        .await;
    assert!(inline["content"].as_str().is_some_and(|c| c.contains("nb")), "{inline}");
}

#[cfg(unix)]
#[tokio::test]
async fn with_a_files_root_http_agents_name_files_inside_it_only() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    let root = dir.path().join("shared");
    std::fs::create_dir(&root).unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("way-out")).unwrap();
    let server = HttpServer::start_on(&db, &["--files-root", root.to_str().unwrap()]).await;
    let s = server.stateless().await;
    let (id, nb) = some_work(&s).await;

    let export = |dest: std::path::PathBuf| json!({ "subOperation": "export", "sessionId": id, "destination": dest.display().to_string() });
    let done = s.ok("session", export(root.join("tree"))).await;
    assert!(done["filesWritten"].as_u64().unwrap() > 0, "{done}");
    let file = root.join("nb.src.md");
    s.ok(
        "notebook",
        json!({ "subOperation": "export", "sessionId": id, "notebookId": nb,
                "destination": file.display().to_string() }),
    )
    .await;
    let back = s
        .ok(
            "notebook",
            json!({ "subOperation": "import", "sessionId": id, "path": file.display().to_string() }),
        )
        .await;
    assert!(back["notebook"]["id"].is_string(), "{back}");

    for dest in [
        outside.path().join("tree"),
        root.join("..").join("escaped"),
        root.join("way-out").join("tree"),
    ] {
        let e = s.err("session", export(dest), "INVALID_PAYLOAD").await;
        refused_on(&e, "destination");
    }
    a_file_outside_is_not_read(&s, &id).await;
    assert_eq!(
        std::fs::read_dir(outside.path()).unwrap().count(),
        0,
        "nothing written outside"
    );
    assert!(!dir.path().join("escaped").exists());
}
