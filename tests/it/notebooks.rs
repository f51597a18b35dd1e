//! Notebooks through the real binary: every sub-operation, cells run with
//! Node.js in the sandbox (what a cell must not reach), limits, a server
//! killed mid-run, `.src.md` round trips, the command line, and bad input.
//! Node.js must be installed (CI installs Debian's `nodejs`).

use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;

fn nb(sub: &str, args: Value) -> Value {
    let mut a = args;
    a["subOperation"] = json!(sub);
    a
}

/// A server with a session at stage 2, and a notebook of `language` in it.
async fn with_notebook(db: &std::path::Path, language: &str) -> (Server, String, Value) {
    let s = start(db).await;
    s.ready("Notebook work").await;
    let created = s
        .ok(
            "notebook",
            nb("create", json!({ "name": "Probe", "language": language })),
        )
        .await;
    let id = created["notebookId"].as_str().expect("notebookId").to_string();
    (s, id, created)
}

async fn add_code(s: &Server, id: &str, filename: &str, source: &str) -> String {
    let c = s
        .ok(
            "notebook",
            nb(
                "add_cell",
                json!({ "notebookId": id, "type": "code", "content": source, "filename": filename }),
            ),
        )
        .await;
    c["cell"]["id"].as_str().expect("cell id").to_string()
}

async fn run(s: &Server, id: &str, cell: &str, extra: Value) -> Value {
    let mut args = json!({ "notebookId": id, "cellId": cell });
    if let Value::Object(more) = extra {
        args.as_object_mut().unwrap().extend(more);
    }
    s.ok("notebook", nb("run_cell", args)).await
}

/// A server whose operator lets notebooks start child processes.
fn child_processes_on(db: &std::path::Path) -> tokio::process::Command {
    let mut cmd = command(db);
    cmd.env("THOUGHTBOX_NOTEBOOK_CHILD_PROCESSES", "on");
    cmd
}

#[tokio::test]
async fn notebooks_live_in_the_ledger_linked_to_their_session() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    let sid = s.ready("Checking an idea with code").await;
    let created = s
        .ok(
            "notebook",
            nb(
                "create",
                json!({ "title": "Ownership", "template": "sequential-feynman" }),
            ),
        )
        .await;
    let id = created["notebookId"].as_str().unwrap().to_string();
    let notebook = &created["notebook"];
    assert_eq!(notebook["sessionId"], sid.as_str(), "linked to the current session");
    assert_eq!(notebook["language"], "javascript");
    assert_eq!(
        notebook["cells"][0],
        json!({ "id": notebook["cells"][0]["id"], "type": "title", "text": "Feynman: Ownership" })
    );
    assert_eq!(notebook["cells"][1]["type"], "package.json");
    assert_eq!(notebook["cells"][1]["status"], "idle");
    let text = notebook.to_string();
    assert!(text.contains("**Ownership**") && !text.contains("{name}") && !text.contains("{date}"));
    let cells = notebook["cells"].as_array().unwrap().len();

    // add after the title, update, delete: the order is kept.
    let title_id = notebook["cells"][0]["id"].as_str().unwrap().to_string();
    let md = s
        .ok(
            "notebook",
            nb(
                "add_cell",
                json!({ "notebookId": id, "cellType": "markdown", "content": "I expect 42.", "afterCellId": title_id }),
            ),
        )
        .await;
    let md_id = md["cell"]["id"].as_str().unwrap().to_string();
    let code_id = add_code(&s, &id, "answer.js", "console.log(6 * 7)").await;
    let upd = s
        .ok(
            "notebook",
            nb(
                "update_cell",
                json!({ "notebookId": id, "cellId": md_id, "content": "I expect the answer 42." }),
            ),
        )
        .await;
    assert_eq!(upd["cell"]["text"], "I expect the answer 42.");
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    let order: Vec<&str> = got["notebook"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(order.len(), cells + 2);
    assert_eq!(order[1], md_id);
    assert_eq!(*order.last().unwrap(), code_id);
    let code = &got["notebook"]["cells"][cells + 1];
    assert_eq!(code["language"], "javascript");
    assert_eq!(code["filename"], "answer.js");
    assert_eq!(code["source"], "console.log(6 * 7)");

    // The session mentions its notebook; search finds cell text.
    let session = s
        .ok(
            "session",
            json!({ "subOperation": "get", "sessionId": sid, "includeThoughts": false }),
        )
        .await;
    assert_eq!(session["notebooks"][0]["id"], id.as_str());
    let exported = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": sid, "format": "markdown" }),
        )
        .await;
    assert_eq!(exported["notebooks"][0]["id"], id.as_str());
    let found = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "answer 42", "include": ["notebooks"] }),
        )
        .await;
    assert_eq!(found["notebooks"][0]["cellId"], md_id.as_str(), "{found}");
    assert_eq!(found["notebooks"][0]["notebookId"], id.as_str());

    let listed = s.ok("notebook", nb("list", json!({ "sessionId": sid }))).await;
    assert_eq!(listed["total"], 1);
    let unknown = json!({ "sessionId": "00000000-0000-4000-8000-000000000000" });
    s.err("notebook", nb("list", unknown), "SESSION_NOT_FOUND").await;
    assert_eq!(listed["notebooks"][0]["cellCount"], cells + 2);
    let gone = s
        .ok(
            "notebook",
            nb("delete_cell", json!({ "notebookId": id, "cellId": md_id })),
        )
        .await;
    assert_eq!(gone["deleted"], true);
    // The TypeScript Thoughtbox's names: get_cell, list_cells (and load, for
    // import).
    let one = s
        .ok(
            "notebook",
            nb("get_cell", json!({ "notebookId": id, "cellId": code_id })),
        )
        .await;
    assert_eq!(one["cell"]["source"], "console.log(6 * 7)");
    let all = s.ok("notebook", nb("list_cells", json!({ "notebookId": id }))).await;
    assert_eq!(all["count"], cells + 1);
    assert_eq!(got["notebook"]["cells"][2]["type"], "package.json");
    let package = got["notebook"]["cells"][2]["id"].as_str().unwrap();
    s.err(
        "notebook",
        nb("delete_cell", json!({ "notebookId": id, "cellId": package })),
        "INVALID_OPERATION",
    )
    .await;
    s.stop().await;

    // A restart (and the command line) sees the same notebook.
    let s = start(&db).await;
    s.ok("load_context", json!({ "sessionId": sid })).await;
    s.ok("cipher", json!({ "brief": true })).await;
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    assert_eq!(got["notebook"]["cells"].as_array().unwrap().len(), cells + 1);
    let shown = crate::cli::ok(&db, &["notebooks", "show", &id]);
    assert!(shown.contains("console.log(6 * 7)"), "{shown}");
    let deleted = s.ok("notebook", nb("delete", json!({ "notebookId": id }))).await;
    assert_eq!(deleted["cellsDeleted"], cells + 1);
    s.err("notebook", nb("get", json!({ "notebookId": id })), "INVALID_PAYLOAD")
        .await;
    s.stop().await;
}

#[tokio::test]
async fn code_cells_run_and_their_failures_are_statuses() {
    let (_d, db) = temp_db();
    let (s, id, created) = with_notebook(&db, "javascript").await;
    let ok = add_code(&s, &id, "ok.js", "console.log(6 * 7); console.error('to stderr');").await;
    let r = run(&s, &id, &ok, Value::Null).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["exitCode"], 0);
    assert!(r["output"].as_str().unwrap().contains("42\n"));
    assert!(r["output"].as_str().unwrap().contains("to stderr"));
    assert_eq!(r["error"], Value::Null);
    assert_eq!(r["sandbox"], "node-permission");
    assert!(r["durationMs"].as_u64().is_some());
    // The cells' sources and outputs are as private as the ledger.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let notebooks = db.parent().unwrap().join("notebooks");
        assert_eq!(
            std::fs::metadata(notebooks).unwrap().permissions().mode() & 0o777,
            0o700
        );
    }

    let throws = add_code(&s, &id, "throws.js", "throw new Error('the claim does not hold');").await;
    let r = run(&s, &id, &throws, Value::Null).await;
    assert_eq!(r["status"], "failed");
    assert_eq!(r["exitCode"], 1);
    assert!(r["error"].as_str().unwrap().contains("the claim does not hold"), "{r}");

    let signal = add_code(&s, &id, "signal.js", "process.kill(process.pid, 'SIGKILL');").await;
    let r = run(&s, &id, &signal, Value::Null).await;
    assert_eq!(r["status"], "failed");
    assert_eq!(r["exitCode"], Value::Null);
    assert!(r["error"].as_str().unwrap().contains("signal 9"), "{r}");

    // 100 MB printed: cut at 1 MiB with a note, the server unharmed.
    let loud = add_code(
        &s,
        &id,
        "loud.js",
        "const line = 'x'.repeat(1023) + '\\n'; for (let i = 0; i < 100 * 1024; i++) process.stdout.write(line);",
    )
    .await;
    let r = run(&s, &id, &loud, Value::Null).await;
    let out = r["output"].as_str().unwrap();
    assert!(out.len() < (1 << 20) + 200, "{}", out.len());
    assert!(
        out.ends_with("bytes: the run printed 104857600 bytes]"),
        "{}",
        &out[out.len() - 100..]
    );

    // Cells import each other: each is a file of the notebook's directory.
    add_code(&s, &id, "lib.js", "export const answer = 42;").await;
    let uses = add_code(
        &s,
        &id,
        "uses.js",
        "import { answer } from './lib.js'; console.log(answer);",
    )
    .await;
    assert_eq!(run(&s, &id, &uses, Value::Null).await["output"], "42\n");

    // The cell keeps its status and output; runs are searchable by output.
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    let cell = got["notebook"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == ok.as_str())
        .unwrap()
        .clone();
    assert_eq!(cell["status"], "completed");
    assert!(cell["output"].as_str().unwrap().contains("42"));
    let found = s
        .ok(
            "session",
            json!({ "subOperation": "search", "query": "claim does not hold", "include": ["notebooks"] }),
        )
        .await;
    assert_eq!(found["notebooks"][0]["cellId"], throws.as_str(), "{found}");

    // Calls that cannot run at all are tool errors.
    let md = created["notebook"]["cells"][0]["id"].as_str().unwrap();
    let e = s
        .err(
            "notebook",
            nb("run_cell", json!({ "notebookId": id, "cellId": md })),
            "INVALID_OPERATION",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("only code cells run"), "{e}");
    let e = s
        .err(
            "notebook",
            nb("run_cell", json!({ "notebookId": "nope", "cellId": ok })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["notebookId"], "nope");
    let e = s
        .err(
            "notebook",
            nb("run_cell", json!({ "notebookId": id, "cellId": "nope" })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["cellId"], "nope");
    s.stop().await;
}

#[tokio::test]
async fn the_sandbox_keeps_a_cell_in_its_directory() {
    let (dir, db) = temp_db();
    let outside = dir.path().join("outside.txt");
    std::fs::write(&outside, "outside secret").unwrap();
    let mut cmd = command(&db);
    cmd.env("MY_SERVICE_TOKEN", "tok-5up3r-s3cr3t");
    // Extra certificate authorities (a proxy that re-signs TLS) reach the
    // cell. Node loads them at start, and warns first if the file holds
    // none (then only the probe's last line is its answer).
    let ca = std::env::var("NODE_EXTRA_CA_CERTS")
        .ok()
        .filter(|p| std::path::Path::new(p).is_file())
        .unwrap_or_else(|| {
            let empty = dir.path().join("extra-ca.pem");
            std::fs::write(&empty, "").unwrap();
            empty.display().to_string()
        });
    cmd.env("NODE_EXTRA_CA_CERTS", &ca);
    let s = start_with((), cmd).await;
    s.ready("Sandbox").await;
    let a = s.ok("notebook", nb("create", json!({ "name": "A" }))).await;
    let b = s.ok("notebook", nb("create", json!({ "name": "B" }))).await;
    let (id, other_dir) = (a["notebookId"].as_str().unwrap(), b["directory"].as_str().unwrap());
    // The other notebook's directory exists once it has run something.
    std::fs::create_dir_all(other_dir).unwrap();
    std::fs::write(std::path::Path::new(other_dir).join("mine.txt"), "other notebook").unwrap();
    let probe = format!(
        r#"import fs from 'node:fs';
import cp from 'node:child_process';
const tries = {{}};
const attempt = (name, f) => {{ try {{ tries[name] = String(f()).slice(0, 40); }} catch (e) {{ tries[name] = 'refused ' + (e.code || e.message); }} }};
attempt('database', () => fs.readFileSync({db:?}));
attempt('outside', () => fs.readFileSync({outside:?}, 'utf8'));
attempt('otherNotebook', () => fs.readFileSync({other:?}, 'utf8'));
attempt('writeOutside', () => {{ fs.writeFileSync({written:?}, 'x'); return 'written'; }});
attempt('child', () => cp.execSync('id'));
attempt('env', () => JSON.stringify(process.env));
attempt('ca', () => process.env.NODE_EXTRA_CA_CERTS === {ca:?});
attempt('own', () => {{ fs.writeFileSync('note.txt', 'mine'); return fs.readFileSync('note.txt', 'utf8'); }});
console.log(JSON.stringify(tries));
"#,
        db = db.display().to_string(),
        outside = outside.display().to_string(),
        other = format!("{other_dir}/mine.txt"),
        written = dir.path().join("written.txt").display().to_string(),
    );
    let cell = add_code(&s, id, "probe.js", &probe).await;
    let r = run(&s, id, &cell, Value::Null).await;
    assert_eq!(r["status"], "completed", "{r}");
    let answer = r["output"].as_str().unwrap().trim().lines().last().unwrap_or_default();
    let tries: Value = serde_json::from_str(answer).expect("the probe's JSON");
    for refused in ["database", "outside", "otherNotebook", "writeOutside", "child"] {
        let said = tries[refused].as_str().unwrap();
        assert!(said.starts_with("refused ERR_ACCESS_DENIED"), "{refused}: {said}");
    }
    assert!(!dir.path().join("written.txt").exists());
    let env = tries["env"].as_str().unwrap();
    assert!(
        !env.contains("MY_SERVICE_TOKEN") && !env.contains("THOUGHTBOX") && !env.contains("s3cr3t"),
        "{env}"
    );
    assert_eq!(tries["ca"], "true", "the extra certificate authorities");
    assert_eq!(tries["own"], "mine", "its own directory is its to use");
    // Its directory and files are the user's alone.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let here = std::path::Path::new(a["directory"].as_str().unwrap());
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        for (path, want) in [
            (here.to_path_buf(), 0o700),
            (here.join("src"), 0o700),
            (here.join("package.json"), 0o600),
            (here.join("src/probe.js"), 0o600),
        ] {
            assert_eq!(mode(&path), want, "{}", path.display());
        }
    }
    s.stop().await;
}

/// A cell that starts a process in the background and exits: the run
/// ends with nothing of its process group left running.
#[tokio::test]
async fn a_cells_background_process_ends_with_the_run() {
    let (_d, db) = temp_db();
    let s = start_with((), child_processes_on(&db)).await;
    s.ready("Background work").await;
    let open = s
        .ok(
            "notebook",
            nb("create", json!({ "name": "Spawner", "allowChildProcesses": true })),
        )
        .await;
    let id = open["notebookId"].as_str().unwrap();
    let cell = add_code(
        &s,
        id,
        "spawn.js",
        "import cp from 'node:child_process';\n\
         const c = cp.spawn('sleep', ['30'], { detached: false, stdio: 'ignore' });\n\
         c.unref();\n\
         console.log(c.pid);",
    )
    .await;
    let r = run(&s, id, &cell, Value::Null).await;
    assert_eq!(r["status"], "completed", "{r}");
    let pid: u32 = r["output"].as_str().unwrap().trim().parse().expect("the sleep's pid");
    wait_exit(pid).await;
    s.stop().await;
}

#[tokio::test]
async fn a_runaway_cell_is_stopped_while_the_server_keeps_answering() {
    let (_d, db) = temp_db();
    let (s, id, _) = with_notebook(&db, "javascript").await;
    let spin = add_code(&s, &id, "spin.js", "console.log('started'); while (true) {}").await;
    let client = s.client.peer().clone();
    let (nid, cid) = (id.clone(), spin.clone());
    let running = tokio::spawn(async move {
        let args = json!({ "operation": "notebook", "args": nb("run_cell", json!({ "notebookId": nid, "cellId": cid, "timeoutSecs": 2 })) });
        client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("thoughtbox_gateway")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await
            .expect("run_cell")
    });
    // Meanwhile: the cell says running, and a thought is recorded.
    let mut seen_running = false;
    for _ in 0..100 {
        let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
        let cell = got["notebook"]["cells"].as_array().unwrap().last().unwrap().clone();
        if cell["status"] == "running" {
            seen_running = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(seen_running, "the cell was never seen running");
    s.thought(t("recorded while the cell runs")).await;
    let result = running.await.unwrap();
    let text = &result.content[0].as_text().unwrap().text;
    let r: Value = serde_json::from_str(text).unwrap();
    assert_eq!(r["status"], "failed", "{r}");
    assert!(r["error"].as_str().unwrap().contains("time limit of 2 s"), "{r}");
    assert!(r["output"].as_str().unwrap().contains("started"));
    // Stopped within the limit plus a second.
    assert!(r["durationMs"].as_u64().unwrap() < 3000, "{r}");
    assert_eq!(r["exitCode"], Value::Null);
    s.stop().await;
}

#[tokio::test]
async fn a_server_killed_mid_run_leaves_the_cell_failed() {
    let (_d, db) = temp_db();
    let (s, id, created) = with_notebook(&db, "javascript").await;
    let spin = add_code(&s, &id, "spin.js", "setInterval(() => {}, 1000);").await;
    let client = s.client.peer().clone();
    let (nid, cid) = (id.clone(), spin.clone());
    let _running = tokio::spawn(async move {
        let args = json!({ "operation": "notebook", "args": nb("run_cell", json!({ "notebookId": nid, "cellId": cid, "timeoutSecs": 60 })) });
        let _ = client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("thoughtbox_gateway")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await;
    });
    let mut running = false;
    for _ in 0..100 {
        let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
        if got["notebook"]["cells"].as_array().unwrap().last().unwrap()["status"] == "running" {
            running = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(running);
    kill(s.pid, "KILL");
    wait_exit(s.pid).await;
    drop(s);
    let s = start(&db).await;
    s.ready("After the kill").await;
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    let cell = got["notebook"]["cells"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(cell["status"], "failed", "{cell}");
    assert!(
        cell["error"]
            .as_str()
            .unwrap()
            .contains("server running this cell stopped"),
        "{cell}"
    );
    // The cell's process went with its server.
    let dir = created["directory"].as_str().unwrap();
    let left = std::process::Command::new("pgrep")
        .args(["-f", &format!("{dir}/")])
        .output()
        .unwrap();
    assert!(left.stdout.is_empty(), "a cell process outlived its server");
    // And it runs again.
    s.ok(
        "notebook",
        nb(
            "update_cell",
            json!({ "notebookId": id, "cellId": spin, "content": "console.log(1)" }),
        ),
    )
    .await;
    assert_eq!(run(&s, &id, &spin, Value::Null).await["status"], "completed");
    s.stop().await;
}

/// The cell's row, read with SQL (what the gateway does not answer).
fn cell_runner(db: &std::path::Path, cell: &str) -> Option<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    c.busy_timeout(Duration::from_secs(10)).unwrap();
    c.query_row("SELECT runner FROM notebook_cells WHERE id = ?1", [cell], |r| r.get(0))
        .unwrap()
}

fn set_runner(db: &std::path::Path, cell: &str, runner: Option<&str>) {
    let c = rusqlite::Connection::open(db).unwrap();
    c.busy_timeout(Duration::from_secs(10)).unwrap();
    c.execute("UPDATE notebook_cells SET runner = ?2 WHERE id = ?1", (cell, runner))
        .unwrap();
}

#[tokio::test]
async fn a_second_server_neither_takes_over_nor_deletes_a_running_cell() {
    let (_d, db) = temp_db();
    let (first, id, created) = with_notebook(&db, "javascript").await;
    let dir = std::path::PathBuf::from(created["directory"].as_str().unwrap());
    // It runs until the test puts a file `go` in its directory.
    let cell = add_code(
        &first,
        &id,
        "wait.js",
        "import fs from 'node:fs';\nawait new Promise((done) => { const t = setInterval(() => { if (fs.existsSync('go')) { clearInterval(t); done(); } }, 20); });\nconsole.log('the first server ran this');\n",
    )
    .await;
    let client = first.client.peer().clone();
    let (nid, cid) = (id.clone(), cell.clone());
    let first_run = tokio::spawn(async move {
        let args = json!({ "operation": "notebook", "args": nb("run_cell", json!({ "notebookId": nid, "cellId": cid, "timeoutSecs": 120 })) });
        client
            .call_tool(
                rmcp::model::CallToolRequestParams::new("thoughtbox_gateway")
                    .with_arguments(args.as_object().unwrap().clone()),
            )
            .await
            .unwrap()
    });
    let status = |got: &Value| got["notebook"]["cells"].as_array().unwrap().last().unwrap()["status"].clone();
    let mut running = false;
    for _ in 0..500 {
        let got = first.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
        if status(&got) == "running" {
            running = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(running);
    // A runner's name the second server cannot look up (a pid of another
    // container, or a system without /proc): its liveness must not hang on it.
    let runner = cell_runner(&db, &cell);
    assert!(runner.is_some());
    set_runner(&db, &cell, Some("999999999:elsewhere"));

    let second = start(&db).await;
    second.ready("Beside the first").await;
    let got = second.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    assert_eq!(status(&got), "running", "the second server's start left the run alone");
    let refused = second
        .err(
            "notebook",
            nb("run_cell", json!({ "notebookId": id, "cellId": cell })),
            "INVALID_OPERATION",
        )
        .await;
    assert!(refused["message"].as_str().unwrap().contains("is running"), "{refused}");
    second
        .err(
            "notebook",
            nb("delete", json!({ "notebookId": id })),
            "INVALID_OPERATION",
        )
        .await;
    second
        .err(
            "notebook",
            nb("delete_cell", json!({ "notebookId": id, "cellId": cell })),
            "INVALID_OPERATION",
        )
        .await;
    second
        .err(
            "notebook",
            nb(
                "update_cell",
                json!({ "notebookId": id, "cellId": cell, "content": "console.log(2)" }),
            ),
            "INVALID_OPERATION",
        )
        .await;
    // The first server's run goes on and its result is the one recorded.
    set_runner(&db, &cell, runner.as_deref());
    std::fs::write(dir.join("go"), "").unwrap();
    let answered = first_run.await.unwrap();
    assert_ne!(answered.is_error, Some(true), "{answered:?}");
    let got = second
        .ok("notebook", nb("get_cell", json!({ "notebookId": id, "cellId": cell })))
        .await;
    assert_eq!(got["cell"]["status"], "completed", "{got}");
    assert!(
        got["cell"]["output"]
            .as_str()
            .unwrap()
            .contains("the first server ran this"),
        "{got}"
    );
    // Once it has ended, the second server runs it and may delete it.
    assert_eq!(run(&second, &id, &cell, Value::Null).await["status"], "completed");
    second.ok("notebook", nb("delete", json!({ "notebookId": id }))).await;
    first.stop().await;
    second.stop().await;
}

#[tokio::test]
async fn srcbook_export_import_export_is_byte_identical() {
    let (dir, db) = temp_db();
    let (s, id, created) = with_notebook(&db, "javascript").await;
    let title = created["notebook"]["cells"][0]["id"].as_str().unwrap();
    s.ok(
        "notebook",
        nb(
            "add_cell",
            json!({ "notebookId": id, "type": "markdown", "afterCellId": title,
                    "content": "# Not a title\n###### not a file\nSome `code` and\n```\nfenced\n```" }),
        ),
    )
    .await;
    add_code(
        &s,
        &id,
        "fences.js",
        "const md = `\n```js\n# inside\n````\n`;\nconsole.log(md.length);\n",
    )
    .await;
    let first = s.ok("notebook", nb("export", json!({ "notebookId": id }))).await;
    let text = first["content"].as_str().unwrap().to_string();
    assert!(
        text.starts_with("<!-- srcbook:{\"language\":\"javascript\"} -->\n\n# Probe\n"),
        "{text}"
    );
    let imported = s.ok("notebook", nb("import", json!({ "content": text }))).await;
    let new_id = imported["notebookId"].as_str().unwrap();
    assert_ne!(new_id, id);
    assert_eq!(
        imported["notebook"]["cellCount"],
        created["notebook"]["cellCount"].as_u64().unwrap() + 2
    );
    let again = s.ok("notebook", nb("export", json!({ "notebookId": new_id }))).await;
    assert_eq!(again["content"].as_str().unwrap(), text, "byte-identical");

    // A file in a directory, and through the command line.
    let out = dir.path().join("exports");
    let written = s
        .ok(
            "notebook",
            nb(
                "export",
                json!({ "notebookId": id, "destination": out.display().to_string() }),
            ),
        )
        .await;
    let path = written["path"].as_str().unwrap();
    assert_eq!(std::fs::read_to_string(path).unwrap(), text);
    let names: Vec<_> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no temporary file is left: {names:?}");
    // The TypeScript Thoughtbox's `path`, naming the file itself.
    let named = out.join("named").join("mine.src.md");
    let written_there = s
        .ok(
            "notebook",
            nb(
                "export",
                json!({ "notebookId": id, "path": named.display().to_string() }),
            ),
        )
        .await;
    assert_eq!(written_there["path"], named.display().to_string());
    assert_eq!(std::fs::read_to_string(&named).unwrap(), text);
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!((mode(&out), mode(std::path::Path::new(path))), (0o700, 0o600));
    }
    // Never over a database: a file of that name which is one is kept.
    let guarded = dir.path().join("guarded");
    std::fs::create_dir_all(&guarded).unwrap();
    let victim = guarded.join(std::path::Path::new(path).file_name().unwrap());
    rusqlite::Connection::open(&victim)
        .unwrap()
        .execute_batch("CREATE TABLE keep (x); INSERT INTO keep VALUES (1);")
        .unwrap();
    let before = std::fs::read(&victim).unwrap();
    let e = s
        .err(
            "notebook",
            nb(
                "export",
                json!({ "notebookId": id, "destination": guarded.display().to_string() }),
            ),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "destination", "{e}");
    assert_eq!(std::fs::read(&victim).unwrap(), before);
    // Nor into a file taken for a directory: refused as bad input.
    let e = s
        .err(
            "notebook",
            nb(
                "export",
                json!({ "notebookId": id, "destination": victim.display().to_string() }),
            ),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "destination", "{e}");
    assert_eq!(std::fs::read(&victim).unwrap(), before);
    let from_file = s
        .ok("notebook", nb("load", json!({ "path": path, "name": "From a file" })))
        .await;
    // A name given renames the copy, its title cell too.
    assert_eq!(from_file["notebook"]["title"], "From a file");
    assert_eq!(from_file["notebook"]["cells"][0]["text"], "From a file", "{from_file}");
    s.stop().await;
    assert_eq!(crate::cli::ok(&db, &["notebooks", "export", &id]), text);
    let cli_id = crate::cli::ok(&db, &["notebooks", "import", path]).trim().to_string();
    assert_eq!(crate::cli::ok(&db, &["notebooks", "export", &cli_id]), text);
    let listed = crate::cli::ok_json(&db, &["notebooks", "list"]);
    assert_eq!(listed["total"], 4);
    let bad = dir.path().join("bad.src.md");
    std::fs::write(
        &bad,
        "<!-- srcbook:{\"language\":\"javascript\"} -->\n\n###### a.js\n\nno fence\n",
    )
    .unwrap();
    let said = crate::cli::fails(&db, &["notebooks", "import", bad.to_str().unwrap()]);
    assert!(said.contains("line 5"), "{said}");
    // A mistyped --db is no ledger to import into: none is made there.
    let typo = dir.path().join("typo.db");
    let said = crate::cli::fails(&typo, &["notebooks", "import", path]);
    assert!(said.contains("no database at"), "{said}");
    assert!(!typo.exists());
}

/// Whether the `node` the server finds strips TypeScript types (22.6 and later).
fn node_strips_types() -> bool {
    let out = std::process::Command::new("node")
        .arg("--version")
        .output()
        .expect("node --version");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut parts = text
        .trim()
        .trim_start_matches('v')
        .split('.')
        .map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    major > 22 || (major == 22 && minor >= 6)
}

#[tokio::test]
async fn typescript_cells_run_with_the_notebooks_compiler() {
    let (_d, db) = temp_db();
    let (s, id, created) = with_notebook(&db, "typescript").await;
    assert_eq!(
        created["notebook"]["tsconfig.json"]
            .as_str()
            .map(|t| t.contains("compilerOptions")),
        Some(true)
    );
    if node_strips_types() {
        // Node 22.6 and later strip the types themselves: no compiler needed.
        let typed = add_code(
            &s,
            &id,
            "main.ts",
            "const answer: number = 6 * 7;\nconsole.log(answer);\n",
        )
        .await;
        let r = run(&s, &id, &typed, Value::Null).await;
        assert_eq!(r["status"], "completed", "{r}");
        assert_eq!(r["output"], "42\n");
        s.stop().await;
        return;
    }
    let cell = add_code(&s, &id, "main.ts", "const answer = 6 * 7;\nconsole.log(answer);\n").await;
    // Node 20 has no type stripping: without the compiler installed, the
    // call says how to get it.
    let e = s
        .err(
            "notebook",
            nb("run_cell", json!({ "notebookId": id, "cellId": cell })),
            "INVALID_OPERATION",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("install_deps"), "{e}");
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    assert_eq!(got["notebook"]["cells"][2]["status"], "idle", "left as it was");
    // A stand-in for the typescript package (the real one needs the npm
    // registry): what the runner asks of it.
    let ts = std::path::Path::new(created["directory"].as_str().unwrap()).join("node_modules/typescript");
    std::fs::create_dir_all(&ts).unwrap();
    std::fs::write(ts.join("package.json"), r#"{"name":"typescript","main":"index.js"}"#).unwrap();
    std::fs::write(
        ts.join("index.js"),
        "exports.ModuleKind = { ESNext: 99 }; exports.ScriptTarget = { ES2022: 9 };\n\
         exports.transpileModule = (src) => ({ outputText: src + '\\nconsole.log(\"compiled\");' });\n",
    )
    .unwrap();
    let r = run(&s, &id, &cell, Value::Null).await;
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["output"], "42\ncompiled\n");
    s.stop().await;
}

#[tokio::test]
async fn install_deps_without_a_registry_fails_and_changes_nothing() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    // A registry nobody answers at.
    cmd.env("npm_config_registry", "http://127.0.0.1:9/");
    let s = start_with((), cmd).await;
    s.ready("Deps").await;
    let created = s.ok("notebook", nb("create", json!({ "name": "Deps" }))).await;
    let id = created["notebookId"].as_str().unwrap();
    let before = created["notebook"]["cells"][1]["source"].clone();
    let r = s
        .ok(
            "notebook",
            nb(
                "install_deps",
                json!({ "notebookId": id, "packages": ["left-pad@1.3.0"], "timeoutSecs": 60 }),
            ),
        )
        .await;
    assert_eq!(r["status"], "failed", "{r}");
    assert!(r["error"].as_str().is_some_and(|e| !e.is_empty()));
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    assert_eq!(got["notebook"]["cells"][1]["source"], before, "package.json unchanged");
    let e = s
        .err(
            "notebook",
            nb(
                "install_deps",
                json!({ "notebookId": id, "packages": ["x@file:../../etc"] }),
            ),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "packages");
    s.stop().await;
}

/// `allowChildProcesses` takes the server's opt-in: without it a notebook
/// asking for it is refused, and one made under it does not run; with it
/// its cells start processes, under a bound on the user's processes.
#[tokio::test]
async fn child_processes_need_the_operators_opt_in() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ready("Processes").await;
    let asked = nb("create", json!({ "name": "C", "allowChildProcesses": true }));
    let e = s.err("notebook", asked.clone(), "INVALID_PAYLOAD").await;
    assert_eq!(e["details"]["field"], "allowChildProcesses", "{e}");
    assert!(
        e["message"].as_str().unwrap().contains("--notebook-child-processes"),
        "{e}"
    );
    assert_eq!(
        s.ok("notebook", nb("list", json!({}))).await["total"],
        0,
        "nothing created"
    );
    s.stop().await;

    let s = start_with((), child_processes_on(&db)).await;
    s.ready("Processes").await;
    let open = s.ok("notebook", asked).await;
    assert_eq!(open["notebook"]["allowChildProcesses"], true);
    let id = open["notebookId"].as_str().unwrap().to_string();
    let cell = add_code(
        &s,
        &id,
        "spawn.js",
        "import cp from 'node:child_process';\n\
         console.log(String(cp.execSync('echo child')).trim());\n\
         console.log(String(cp.execSync('grep \"Max processes\" /proc/self/limits || echo none')).trim());",
    )
    .await;
    let r = run(&s, &id, &cell, Value::Null).await;
    assert_eq!(r["status"], "completed", "{r}");
    let output = r["output"].as_str().unwrap();
    assert!(output.starts_with("child\n"), "{r}");
    if cfg!(target_os = "linux") {
        // Max processes  SOFT  HARD  processes: a number, not unlimited.
        let limit: Vec<&str> = output.lines().nth(1).unwrap_or_default().split_whitespace().collect();
        assert!(
            limit.len() >= 4 && limit[2].parse::<u64>().is_ok() && limit[2] == limit[3],
            "{output}"
        );
    }
    s.stop().await;

    // The opt-in gone, the notebook is kept but its cells do not run.
    let s = start(&db).await;
    s.ready("Processes").await;
    let e = s
        .err(
            "notebook",
            nb("run_cell", json!({ "notebookId": id, "cellId": cell })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "allowChildProcesses", "{e}");
    let got = s
        .ok("notebook", nb("get_cell", json!({ "notebookId": id, "cellId": cell })))
        .await;
    assert_eq!(got["cell"]["status"], "completed", "left as it was");
    s.stop().await;
}

/// The package.json cell names registry packages only, however it
/// arrives: a `file:` dependency (npm would link the ledger's folder into
/// node_modules), git, URLs, aliases and `overrides` are refused by
/// update_cell and import, and one already stored by install_deps.
#[tokio::test]
async fn package_json_names_registry_packages_only() {
    let (_d, db) = temp_db();
    let (s, id, created) = with_notebook(&db, "javascript").await;
    let package = created["notebook"]["cells"][1].clone();
    let package_id = package["id"].as_str().unwrap();
    for bad in [
        json!({ "type": "module", "dependencies": { "x": "file:../..", "root": "file:/" } }),
        json!({ "devDependencies": { "y": "git+https://example.invalid/y.git" } }),
        json!({ "optionalDependencies": { "z": "user/repo" } }),
        json!({ "peerDependencies": { "w": "npm:other@1" } }),
        json!({ "dependencies": { "../up": "1.0.0" } }),
        json!({ "dependencies": {}, "overrides": { "a": "file:.." } }),
        json!({ "dependencies": {}, "workspaces": [".."] }),
    ] {
        let e = s
            .err(
                "notebook",
                nb(
                    "update_cell",
                    json!({ "notebookId": id, "cellId": package_id, "content": bad.to_string() }),
                ),
                "INVALID_PAYLOAD",
            )
            .await;
        assert_eq!(e["details"]["field"], "content", "{bad}: {e}");
    }
    let src = "<!-- srcbook:{\"language\":\"javascript\"} -->\n\n# Handy\n\n###### package.json\n\n```json\n\
               {\"type\":\"module\",\"dependencies\":{\"up\":\"file:../..\"}}\n```\n";
    s.err("notebook", nb("import", json!({ "content": src })), "INVALID_PAYLOAD")
        .await;
    assert_eq!(
        s.ok("notebook", nb("list", json!({}))).await["total"],
        1,
        "nothing imported"
    );
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    assert_eq!(
        got["notebook"]["cells"][1], package,
        "the package.json cell is unchanged"
    );
    // One stored before these checks is refused before npm runs.
    let stored = r#"{"dependencies":{"x":"file:../.."}}"#;
    let c = rusqlite::Connection::open(&db).unwrap();
    c.busy_timeout(Duration::from_secs(10)).unwrap();
    c.execute(
        "UPDATE notebook_cells SET content = ?2 WHERE id = ?1",
        (package_id, stored),
    )
    .unwrap();
    let e = s
        .err(
            "notebook",
            nb("install_deps", json!({ "notebookId": id })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("registry"), "{e}");
    let dir = std::path::Path::new(created["directory"].as_str().unwrap());
    assert!(!dir.join("node_modules").exists(), "nothing installed");
    s.stop().await;
}

#[tokio::test]
async fn without_node_run_cell_says_how_to_install_it() {
    let (_d, db) = temp_db();
    let mut cmd = command(&db);
    cmd.env("THOUGHTBOX_NODE", "/nonexistent/node");
    let s = start_with((), cmd).await;
    s.ready("No node").await;
    let created = s.ok("notebook", nb("create", json!({ "name": "N" }))).await;
    let id = created["notebookId"].as_str().unwrap();
    let cell = add_code(&s, id, "a.js", "1").await;
    let e = s
        .err(
            "notebook",
            nb("run_cell", json!({ "notebookId": id, "cellId": cell })),
            "INVALID_OPERATION",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("install Node.js"), "{e}");
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    assert_eq!(got["notebook"]["cells"][2]["status"], "idle");
    s.stop().await;
}

#[tokio::test]
async fn bad_notebook_input_is_refused_and_changes_nothing() {
    let (_d, db) = temp_db();
    let s = start(&db).await;
    s.ok("start_new", json!({ "sessionTitle": "Early" })).await;
    // Stage 2, as for thoughts.
    s.err("notebook", nb("list", json!({})), "STAGE_REQUIREMENT_NOT_MET")
        .await;
    s.ok("cipher", json!({ "brief": true })).await;
    let created = s.ok("notebook", nb("create", json!({ "name": "Strict" }))).await;
    let id = created["notebookId"].as_str().unwrap();
    let cells = created["notebook"]["cellCount"].as_u64().unwrap();
    let payload = [
        nb("create", json!({ "name": "x", "template": "socratic" })),
        nb("create", json!({ "name": "x", "language": "python" })),
        nb("create", json!({ "name": " " })),
        nb("create", json!({ "name": "two\nlines" })),
        nb("create", json!({})),
        nb(
            "add_cell",
            json!({ "notebookId": id, "type": "code", "content": "1", "filename": "../escape.js" }),
        ),
        nb(
            "add_cell",
            json!({ "notebookId": id, "type": "code", "content": "1", "filename": "a/b.js" }),
        ),
        nb(
            "add_cell",
            json!({ "notebookId": id, "type": "code", "content": "1", "filename": "a.py" }),
        ),
        nb(
            "add_cell",
            json!({ "notebookId": id, "type": "package.json", "content": "{}" }),
        ),
        nb(
            "add_cell",
            json!({ "notebookId": id, "type": "markdown", "content": "  " }),
        ),
        nb(
            "add_cell",
            json!({ "notebookId": id, "type": "markdown", "content": "x", "afterCellId": "nope" }),
        ),
        nb(
            "add_cell",
            json!({ "notebookId": "nope", "type": "markdown", "content": "x" }),
        ),
        nb(
            "update_cell",
            json!({ "notebookId": id, "cellId": "nope", "content": "x" }),
        ),
        nb("delete_cell", json!({ "notebookId": id, "cellId": "nope" })),
        nb("run_cell", json!({ "notebookId": id, "cellId": "x", "timeoutSecs": 0 })),
        nb("import", json!({ "content": "# no header\n" })),
        nb("import", json!({ "path": "relative.src.md" })),
        nb("export", json!({ "notebookId": id, "destination": "relative/dir" })),
        nb("get", json!({ "notebookId": "nope" })),
        nb("delete", json!({ "notebookId": "nope" })),
        nb("create", json!({ "name": "x", "sessionId": "no-such-session" })),
    ];
    for args in payload {
        let e = match s.call("notebook", args.clone()).await {
            Ok(v) => panic!("{args} was accepted: {v}"),
            Err(e) => e,
        };
        assert!(
            ["INVALID_PAYLOAD", "SESSION_NOT_FOUND"].contains(&e["code"].as_str().unwrap()),
            "{args}: {e}"
        );
    }
    let e = s
        .err(
            "notebook",
            nb("import", json!({ "content": "# no header\n" })),
            "INVALID_PAYLOAD",
        )
        .await;
    assert!(e["message"].as_str().unwrap().contains("line 1"), "{e}");
    s.err("notebook", json!({ "subOperation": "explode" }), "INVALID_OPERATION")
        .await;
    s.err("notebook", json!({}), "INVALID_PAYLOAD").await;
    s.err(
        "notebook",
        nb("import", json!({ "content": "x", "path": "/x" })),
        "INVALID_OPERATION",
    )
    .await;
    // Nothing changed, and the server still serves.
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    assert_eq!(got["notebook"]["cellCount"], cells);
    assert_eq!(s.ok("notebook", nb("list", json!({}))).await["total"], 1);
    s.thought(t("still serving")).await;
    s.stop().await;
}

/// install_deps installs from the npm registry (which CI reaches) into the
/// notebook's directory, and a cell imports what it installed; a
/// TypeScript notebook's compiler comes the same way and compiles a cell.
#[tokio::test]
async fn install_deps_installs_from_the_registry() {
    let (_d, db) = temp_db();
    let (s, id, created) = with_notebook(&db, "javascript").await;
    // npm reads no configuration a cell can write: this one would send it
    // to a registry nobody answers at.
    let writes = add_code(
        &s,
        &id,
        "npmrc.js",
        "import fs from 'node:fs'; fs.writeFileSync('.npmrc', 'registry=http://127.0.0.1:9/\\n');",
    )
    .await;
    assert_eq!(run(&s, &id, &writes, Value::Null).await["status"], "completed");
    let r = s
        .ok(
            "notebook",
            nb(
                "install_deps",
                json!({ "notebookId": id, "packages": ["is-number@7.0.0"], "timeoutSecs": 300 }),
            ),
        )
        .await;
    assert_eq!(r["status"], "completed", "{r}");
    let dir = std::path::Path::new(created["directory"].as_str().unwrap());
    assert!(dir.join("package-lock.json").is_file() && dir.join("node_modules/is-number").is_dir());
    let cell = add_code(
        &s,
        &id,
        "check.js",
        "import isNumber from 'is-number';\nconsole.log(isNumber(5), isNumber('x'));",
    )
    .await;
    let ran = run(&s, &id, &cell, Value::Null).await;
    assert_eq!(ran["status"], "completed", "{ran}");
    assert_eq!(ran["output"], "true false\n");
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    let package = got["notebook"]["cells"][1]["source"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(package.contains("is-number"), "package.json names it: {package}");
    s.stop().await;

    let (_d, db) = temp_db();
    let (s, id, _) = with_notebook(&db, "typescript").await;
    let r = s
        .ok(
            "notebook",
            nb("install_deps", json!({ "notebookId": id, "timeoutSecs": 300 })),
        )
        .await;
    assert_eq!(r["status"], "completed", "{r}");
    let cell = add_code(
        &s,
        &id,
        "typed.ts",
        "const n: number = 6 * 7;\nconsole.log(`answer ${n}`);",
    )
    .await;
    let ran = run(&s, &id, &cell, Value::Null).await;
    assert_eq!(ran["status"], "completed", "{ran}");
    assert_eq!(ran["output"], "answer 42\n");
    s.stop().await;
}

/// `get` answers each cell's output cut to 4,000 characters, saying which
/// and how long they were (a run's answer keeps the end); `full: true`
/// and `get_cell` answer it whole.
#[tokio::test]
async fn get_cuts_long_outputs_unless_asked_for_them_whole() {
    let (_d, db) = temp_db();
    let (s, id, _) = with_notebook(&db, "javascript").await;
    let cell = add_code(&s, &id, "long.js", "console.log('x'.repeat(9997) + 'END');").await;
    let ran = run(&s, &id, &cell, Value::Null).await;
    assert_eq!(ran["status"], "completed", "{ran}");
    // run_cell answers the output's end, where the result and errors are.
    let tail = ran["output"].as_str().unwrap();
    assert_eq!(tail.len(), 4_000, "{ran}");
    assert!(tail.ends_with("END\n"), "{tail}");
    assert_eq!(ran["truncated"]["outputChars"], 10_001, "{ran}");
    assert_eq!(ran["truncated"]["shownChars"], 4_000, "{ran}");
    let output_of = |answer: &Value| {
        answer["notebook"]["cells"]
            .as_array()
            .and_then(|cells| cells.iter().find(|c| c["id"] == cell.as_str()))
            .and_then(|c| c["output"].as_str())
            .map(str::len)
    };
    let got = s.ok("notebook", nb("get", json!({ "notebookId": id }))).await;
    assert_eq!(output_of(&got), Some(4_000), "{got}");
    assert_eq!(got["truncated"]["cells"][0]["cellId"], cell.as_str());
    assert_eq!(got["truncated"]["cells"][0]["outputChars"], 10_001);
    let whole = s
        .ok("notebook", nb("get", json!({ "notebookId": id, "full": true })))
        .await;
    assert_eq!(output_of(&whole), Some(10_001));
    assert!(whole.get("truncated").is_none(), "{whole}");
    let one = s
        .ok("notebook", nb("get_cell", json!({ "notebookId": id, "cellId": cell })))
        .await;
    assert_eq!(one["cell"]["output"].as_str().map(str::len), Some(10_001));
    s.stop().await;
}
