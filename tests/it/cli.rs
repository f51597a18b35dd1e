//! The command line around the database: sessions, stats, info, config, and
//! every command while a server is using the same database.

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use thoughtbox::domain::{NewSession, ThoughtInput};
use thoughtbox::store::{OpenOptionsStore, Store, Target};

use crate::common::*;

/// The binary with none of the variables it reads ([`SCRUBBED_ENV`]), and
/// no stdin.
fn scrubbed() -> std::process::Command {
    let mut cmd = std::process::Command::new(bin());
    cmd.stdin(std::process::Stdio::null());
    for var in SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    cmd
}

/// Run the binary on `db` with `args` (scrubbed environment, no stdin).
pub fn run(db: &Path, args: &[&str]) -> Output {
    let mut cmd = scrubbed();
    cmd.arg("--db").arg(db).args(args);
    cmd.env("RUST_LOG", "warn").output().expect("run thoughtbox")
}

/// Run and expect success; returns stdout.
pub fn ok(db: &Path, args: &[&str]) -> String {
    let out = run(db, args);
    assert!(
        out.status.success(),
        "{args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8(out.stdout).expect("utf-8 stdout")
}

/// Run with `--json` appended and parse stdout.
pub fn ok_json(db: &Path, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let text = ok(db, &args);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {text}"))
}

/// `--db file:NAME` is the file of that name, not an SQLite URI for NAME
/// (read as a URI, the thoughts would go into a world-readable `odd.db` while
/// the server locked, watched and reported an empty `file:odd.db`).
#[test]
fn a_database_name_that_looks_like_a_uri_is_a_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let run_in = |args: &[&str]| {
        let out = scrubbed()
            .current_dir(dir.path())
            .args(["--db", "file:odd.db"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    run_in(&["config", "set", "sessionPartitionGranularity", "weekly"]);
    assert!(run_in(&["config", "get", "sessionPartitionGranularity"]).contains("weekly"));
    let file = dir.path().join("file:odd.db");
    assert!(std::fs::metadata(&file).unwrap().len() > 0);
    assert!(!dir.path().join("odd.db").exists());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
}

/// Run and expect failure; returns stderr.
pub fn fails(db: &Path, args: &[&str]) -> String {
    let out = run(db, args);
    assert!(
        !out.status.success(),
        "{args:?} should fail; stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8(out.stderr).expect("utf-8 stderr");
    assert!(err.contains("thoughtbox: "), "no error message on stderr: {err}");
    err
}

/// A database with two sessions, one with a branch and a revision.
fn small_ledger(db: &Path) -> (String, String) {
    let store = Store::open(db, OpenOptionsStore::default()).unwrap();
    let a = store
        .create_session(NewSession {
            title: "Cache design".into(),
            tags: vec!["project:api".into(), "perf".into()],
            ..Default::default()
        })
        .unwrap();
    let b = store
        .create_session(NewSession {
            title: "Débogage du flux".into(),
            ..Default::default()
        })
        .unwrap();
    let add = |id: &str, i: ThoughtInput| store.append_thought(Target::Session(id.into()), i).unwrap();
    add(&a.id, input("redis would work"));
    add(&a.id, input("memcached is simpler"));
    add(
        &a.id,
        ThoughtInput {
            revises_thought: Some(1),
            ..input("redis cluster costs more")
        },
    );
    add(
        &a.id,
        ThoughtInput {
            branch_id: Some("alt".into()),
            branch_from_thought: Some(2),
            ..input("or no cache at all")
        },
    );
    add(
        &b.id,
        ThoughtInput {
            next_thought_needed: false,
            ..input("fini ✓")
        },
    );
    store.checkpoint().unwrap();
    (a.id, b.id)
}

#[test]
fn sessions_list_show_and_search() {
    let (_d, db) = temp_db();
    let (a, b) = small_ledger(&db);
    let text = ok(&db, &["sessions", "list"]);
    assert!(text.starts_with("ID"), "{text}");
    assert!(text.contains(&a) && text.contains("Cache design") && text.contains("Débogage du flux"));
    assert!(
        text.contains("completed") && text.contains("sessions 1-2 of 2"),
        "{text}"
    );
    let page = ok_json(&db, &["sessions", "list", "--tag", "perf"]);
    assert_eq!(page["total"], 1);
    // Tags match exactly; another letter case is named on stderr.
    let out = run(&db, &["sessions", "list", "--tag", "PERF"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(r#"no session has the tag "PERF""#) && err.contains(r#"sessions have "perf""#),
        "{err}"
    );
    assert_eq!(page["sessions"][0]["id"], a.as_str());
    assert_eq!(page["sessions"][0]["thoughtCount"], 4);
    // At most 100 tags, as over MCP (rather than "no sessions" for 103).
    let tags: Vec<String> = (0..101).map(|i| format!("t{i}")).collect();
    let mut args = vec!["sessions", "list"];
    for t in &tags {
        args.extend(["--tag", t.as_str()]);
    }
    let err = fails(&db, &args);
    assert!(
        err.contains("the filter names 101 tags; a filter takes at most 100"),
        "{err}"
    );
    let page = ok_json(&db, &["sessions", "list", "--sort", "title", "--asc", "--limit", "1"]);
    assert_eq!(page["sessions"][0]["title"], "Cache design");
    assert_eq!(page["hasMore"], true);
    let page = ok_json(&db, &["sessions", "list", "--status", "completed"]);
    assert_eq!(page["total"], 1, "{page}");
    assert_eq!(page["sessions"][0]["id"], b.as_str());
    let page = ok_json(&db, &["sessions", "list", "--status", "active"]);
    assert_eq!(page["sessions"][0]["id"], a.as_str());
    // A shortened id is named back.
    let err = fails(&db, &["sessions", "show", &a[..8]]);
    assert!(err.contains(&format!("did you mean {a}")), "{err}");
    let err = fails(&db, &["export", "--session", &a[..8], "--format", "json"]);
    assert!(err.contains(&format!("did you mean {a}")), "{err}");
    let tree = db.with_extension("tree");
    let err = fails(&db, &["export", "--session", &a[..8], "--out", tree.to_str().unwrap()]);
    assert!(err.contains(&format!("did you mean {a}")), "{err}");
    assert!(!tree.exists(), "nothing written");
    // What sessions show --json prints is a SessionExport, which import
    // takes: this one is already in the ledger.
    let file = db.with_extension("export.json");
    std::fs::write(&file, ok(&db, &["sessions", "show", &a, "--json"])).unwrap();
    let summary = ok_json(&db, &["import", file.to_str().unwrap()]);
    assert_eq!(summary["alreadyPresent"], 1, "{summary}");

    let shown = ok(&db, &["sessions", "show", &a]);
    assert!(
        shown.contains("## Main chain") && shown.contains("## Branch `alt` (from thought 2)"),
        "{shown}"
    );
    let export = ok_json(&db, &["sessions", "show", &a.to_uppercase()]);
    assert_eq!(export["version"], "1.0");
    assert_eq!(export["session"]["id"], a.as_str());
    assert_eq!(export["nodes"].as_array().unwrap().len(), 4);

    let hits = ok_json(&db, &["sessions", "search", "redis"]);
    assert_eq!(hits[0]["id"], a.as_str());
    assert_eq!(hits[0]["matches"].as_array().unwrap().len(), 2);
    let text = ok(&db, &["sessions", "search", "redis"]);
    assert!(text.contains("#1") && text.contains("[redis]"), "{text}");
    assert!(ok(&db, &["sessions", "search", "nowhere"]).contains("nothing matches"));
    // Blank text searches for nothing: refused, as the gateway refuses it.
    let blank = run(&db, &["sessions", "search", " "]);
    assert!(!blank.status.success());
    assert!(String::from_utf8_lossy(&blank.stderr).contains("give the words to search for"));

    let err = fails(&db, &["sessions", "show", "7d4b7a4e-0000-4000-8000-000000000000"]);
    assert!(err.contains("session not found"), "{err}");
    assert!(!ok(&db, &["sessions", "show", &b]).is_empty());
}

/// `sessions search zebra --json` must say the rest of a session's 300
/// matches exist: it prints a session's best five (`--matches-per-session` up
/// to 100) and counts the others, in JSON and in text; and it searches
/// thoughts not yet indexed without indexing them (it opens the ledger only
/// to read).
#[test]
fn sessions_search_counts_the_matches_it_leaves_out() {
    let (_d, db) = temp_db();
    let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
    let zebras = store.create_session(NewSession::titled("Zebras")).unwrap();
    for i in 0..300 {
        store
            .append_thought(Target::Session(zebras.id.clone()), input(&format!("zebra number {i}")))
            .unwrap();
    }
    let other = store.create_session(NewSession::titled("Other")).unwrap();
    for text in ["a zebra crossing", "another zebra crossing"] {
        store
            .append_thought(Target::Session(other.id.clone()), input(text))
            .unwrap();
    }
    drop(store);
    let hits = ok_json(&db, &["sessions", "search", "zebra"]);
    let of = |hits: &Value, id: &str| -> Value {
        hits.as_array()
            .unwrap()
            .iter()
            .find(|h| h["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("{id} missing: {hits}"))
    };
    let z = of(&hits, &zebras.id);
    assert_eq!(z["matches"].as_array().unwrap().len(), 5, "{hits}");
    assert_eq!(z["moreMatches"], 295, "{hits}");
    assert!(of(&hits, &other.id).get("moreMatches").is_none(), "{hits}");
    let hits = ok_json(&db, &["sessions", "search", "zebra", "--matches-per-session", "100"]);
    let z = of(&hits, &zebras.id);
    assert_eq!(z["matches"].as_array().unwrap().len(), 100, "{hits}");
    assert_eq!(z["moreMatches"], 200, "{hits}");
    let text = ok(&db, &["sessions", "search", "zebra"]);
    assert!(text.contains("... 295 more matches"), "{text}");
    assert!(!text.contains("more sessions may match"), "{text}");
    // One session answered: the other may match too, and that is said.
    let text = ok(&db, &["sessions", "search", "zebra", "--limit", "1"]);
    assert!(text.contains("more sessions may match"), "{text}");
    let out = run(&db, &["sessions", "search", "zebra", "--limit", "1", "--json"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("more sessions may match"));
    let hits: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(hits.as_array().map(Vec::len), Some(1), "{hits}");
    // Found without being indexed: the ledger was opened only to read.
    assert_eq!(ok_json(&db, &["stats"])["unindexedThoughts"], 302);
}

#[test]
fn stats_info_and_config() {
    let (_d, db) = temp_db();
    small_ledger(&db);
    Store::open(&db, OpenOptionsStore::default())
        .unwrap()
        .write_note("todo", "check the eviction policy")
        .unwrap();
    let st = ok_json(&db, &["stats"]);
    assert_eq!((st["patterns"].as_u64(), st["notes"].as_u64()), (Some(0), Some(1)));
    assert_eq!(st["sessions"], 2);
    assert_eq!(st["completedSessions"], 1);
    assert_eq!(st["thoughts"], 5);
    assert_eq!(st["branchThoughts"], 1);
    assert_eq!(st["revisions"], 1);
    assert_eq!(st["topTags"][0], json!(["perf", 1]));
    let text = ok(&db, &["stats"]);
    assert!(text.contains("thoughts") && text.contains("project:api"), "{text}");

    let info = ok_json(&db, &["info"]);
    assert_eq!(
        info["database"],
        std::path::absolute(&db).unwrap().display().to_string()
    );
    // The highest migration's number (numbers may have gaps while parallel
    // branches each add one).
    let latest = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations"))
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_prefix('V')?.split("__").next()?.parse::<u64>().ok()
        })
        .max()
        .unwrap();
    assert_eq!(info["schemaVersion"], latest);
    assert_eq!(info["counts"], json!({ "sessions": 2, "thoughts": 5, "branches": 1 }));
    assert!(info["sizes"]["database"].as_u64().unwrap() > 0);
    // A stopped ledger has no -wal or -shm: info's own connection is not counted.
    assert_eq!(
        (info["sizes"]["wal"].as_u64(), info["sizes"]["shm"].as_u64()),
        (Some(0), Some(0)),
        "{info}"
    );
    assert_eq!(info["config"]["sessionPartitionGranularity"], "monthly");
    let text = ok(&db, &["info"]);
    assert!(
        text.contains(&db.display().to_string()) && text.contains("schema version"),
        "{text}"
    );
    assert!(
        text.contains("thought text in events") && text.contains("kept"),
        "{text}"
    );

    assert_eq!(ok(&db, &["config", "get", "sessionPartitionGranularity"]), "monthly\n");
    ok(&db, &["config", "set", "sessionPartitionGranularity", "weekly"]);
    assert_eq!(ok(&db, &["config", "get", "sessionPartitionGranularity"]), "weekly\n");
    let all = ok_json(&db, &["config", "get"]);
    assert_eq!(all["sessionPartitionGranularity"], "weekly");
    assert_eq!(all["installId"].as_str().unwrap().len(), 36);
    assert!(ok(&db, &["config", "get"]).contains("disableThoughtLogging"));
    for bad in [
        &["config", "set", "sessionPartitionGranularity", "yearly"][..],
        &["config", "set", "installId", "x"],
        &["config", "set", "colour", "blue"],
        &["config", "get", "colour"],
    ] {
        let err = fails(&db, bad);
        assert!(
            err.contains("sessionPartitionGranularity") || err.contains("installId"),
            "{err}"
        );
    }
    assert_eq!(ok(&db, &["config", "get", "sessionPartitionGranularity"]), "weekly\n");

    // The change is in the database file itself: a copy of that one file has it.
    ok(&db, &["config", "set", "sessionPartitionGranularity", "daily"]);
    let copy = db.with_file_name("copy.db");
    std::fs::copy(&db, &copy).unwrap();
    assert_eq!(ok(&copy, &["config", "get", "sessionPartitionGranularity"]), "daily\n");
}

/// Commands that only read (and `backup`) refuse a database path that does
/// not exist, instead of creating an empty ledger there and reporting on it.
#[test]
fn reading_commands_need_an_existing_database() {
    let (dir, _) = temp_db();
    let missing = dir.path().join("typo.db");
    let backup = dir.path().join("backup.db");
    for args in [
        &["backup", backup.to_str().unwrap()][..],
        &["stats"],
        &["info"],
        &["sessions", "list"],
        &["config", "get"],
        &["export", "--out", dir.path().join("tree").to_str().unwrap()],
    ] {
        let err = fails(&missing, args);
        assert!(
            err.contains("no database at") && err.contains("typo.db"),
            "{args:?}: {err}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "created {left:?}");
    // Writing commands still create it.
    ok(&missing, &["config", "set", "sessionPartitionGranularity", "weekly"]);
    assert!(missing.exists());
}

#[tokio::test]
async fn commands_work_while_a_server_writes() {
    let (dir, db) = temp_db();
    let s = start(&db).await;
    let id = s.ready("Live").await;
    for i in 0..5 {
        s.thought(t(&format!("live thought {i}"))).await;
    }
    let db2 = db.clone();
    let out = dir.path().join("tree");
    let out2 = out.clone();
    let (page, st, exported) = tokio::task::spawn_blocking(move || {
        let page = ok_json(&db2, &["sessions", "list"]);
        let st = ok_json(&db2, &["stats"]);
        let exported = ok_json(&db2, &["export", "--out", out2.to_str().unwrap()]);
        // The session is already in the ledger: importing adds nothing.
        let imported = run(&db2, &["import", out2.to_str().unwrap(), "--json"]);
        assert!(imported.status.success());
        let summary: Value = serde_json::from_slice(&imported.stdout).unwrap();
        assert_eq!(summary["alreadyPresent"], 1);
        assert_eq!(summary["imported"], 0);
        (page, st, exported)
    })
    .await
    .unwrap();
    assert_eq!(page["sessions"][0]["id"], id.as_str());
    assert_eq!(st["thoughts"], 5);
    assert_eq!(exported["thoughts"], 5);
    // The server keeps working after all that.
    let r = s.thought(t("after the export")).await;
    assert_eq!(r["thoughtNumber"], 6);
    s.stop().await;
    assert_eq!(ok_json(&db, &["stats"])["thoughts"], 6);
}

/// A command run on an idle database leaves it as one file: no `-wal` or
/// `-shm` behind (they would make `backup` take it for a database in use),
/// and a backup may then replace it.
#[test]
fn commands_leave_the_database_as_one_file() {
    let (dir, db) = temp_db();
    ok(&db, &["config", "set", "sessionPartitionGranularity", "weekly"]);
    let out = dir.path().join("tree");
    for args in [
        &["stats"][..],
        &["info"],
        &["sessions", "list"],
        &["sessions", "search", "anything"],
        &["config", "get"],
        &["export", "--out", out.to_str().unwrap()],
    ] {
        for _ in 0..3 {
            ok(&db, args);
            for suffix in ["-wal", "-shm"] {
                let mut companion = db.as_os_str().to_owned();
                companion.push(suffix);
                assert!(!Path::new(&companion).exists(), "{args:?} left {suffix}");
            }
        }
    }
    // A backup restored over the ledger's own path (nothing using it).
    let other = dir.path().join("other.db");
    // stdout names the file written, for a script.
    assert_eq!(
        ok(&db, &["backup", other.to_str().unwrap()]).trim(),
        other.to_str().unwrap()
    );
    let into_dir = ok(&db, &["backup", dir.path().to_str().unwrap()]);
    let named = Path::new(into_dir.trim());
    assert!(named.starts_with(dir.path()) && named.is_file(), "{into_dir}");
    std::fs::remove_file(named).unwrap();
    ok(&other, &["config", "set", "sessionPartitionGranularity", "daily"]);
    ok(&other, &["backup", db.to_str().unwrap()]);
    assert_eq!(ok(&db, &["config", "get", "sessionPartitionGranularity"]), "daily\n");
    // Another installation's ledger is not replaced.
    let stranger = dir.path().join("stranger.db");
    ok(&stranger, &["config", "set", "sessionPartitionGranularity", "daily"]);
    let err = fails(&db, &["backup", stranger.to_str().unwrap()]);
    assert!(err.contains("another ledger (installId"), "{err}");
    // Into a directory that does not exist: said so, naming it.
    let missing = dir.path().join("no-such-dir");
    let err = fails(&db, &["backup", missing.join("copy.db").to_str().unwrap()]);
    assert!(err.contains("no-such-dir does not exist"), "{err}");
    assert!(!missing.exists());
}

/// Where the database is, as the environment and flags say: empty variables
/// (an unset `${VAR}` in a compose file) count as unset, a leading `~` is
/// the home directory (client configs pass values without a shell), and a
/// flag beats a variable.
#[test]
fn database_location_from_flags_and_variables() {
    let (dir, _) = temp_db();
    let home = dir.path().join("home");
    let info = |args: &[&str], env: &[(&str, &str)]| -> Value {
        let mut cmd = scrubbed();
        cmd.args(args).args(["info", "--json"]);
        cmd.env("HOME", &home).envs(env.iter().copied());
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{args:?} {env:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let flag_db = dir.path().join("flag.db");
    let flag_dir = dir.path().join("flagdir");
    let env_db = dir.path().join("env.db");
    for path in [&flag_db, &env_db, &flag_dir.join("thoughtbox.db")] {
        ok(path, &["config", "set", "sessionPartitionGranularity", "weekly"]);
    }
    let db_of = |v: Value| PathBuf::from(v["database"].as_str().unwrap());
    // Empty variables are unset; --db decides.
    let empty = [
        ("THOUGHTBOX_DB", ""),
        ("THOUGHTBOX_DATA_DIR", ""),
        ("THOUGHTBOX_SYNC", ""),
        ("THOUGHTBOX_CRITIQUE_TIMEOUT_SECS", ""),
        ("THOUGHTBOX_ROOTS_TIMEOUT_SECS", ""),
    ];
    assert_eq!(db_of(info(&["--db", flag_db.to_str().unwrap()], &empty)), flag_db);
    // --data-dir on the command line beats THOUGHTBOX_DB.
    let env = [("THOUGHTBOX_DB", env_db.to_str().unwrap())];
    assert_eq!(
        db_of(info(&["--data-dir", flag_dir.to_str().unwrap()], &env)),
        flag_dir.join("thoughtbox.db")
    );
    assert_eq!(db_of(info(&[], &env)), env_db);
    // A leading ~ is $HOME (on Unix: on Windows the home folder is the
    // profile folder, which a test cannot move).
    if cfg!(unix) {
        ok(
            &home.join("t/x.db"),
            &["config", "set", "sessionPartitionGranularity", "weekly"],
        );
        assert_eq!(db_of(info(&[], &[("THOUGHTBOX_DB", "~/t/x.db")])), home.join("t/x.db"));
    }
}

/// `--db "$X"` with X unset in a client config passes `--db ''`: refused
/// with a usage error naming the flag (exit code 2), for the server and
/// every command, rather than falling back to THOUGHTBOX_DB or the default
/// ledger, which the server would have created. An empty variable still
/// counts as unset.
#[test]
fn an_empty_database_flag_is_refused_not_read_as_the_default() {
    let (dir, db) = temp_db();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    ok(&db, &["config", "set", "sessionPartitionGranularity", "weekly"]);
    let run_with = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = scrubbed();
        cmd.env("HOME", &home).envs(env.iter().copied()).args(args);
        cmd.output().unwrap()
    };
    let env_db = [("THOUGHTBOX_DB", db.to_str().unwrap())];
    for (args, env) in [
        (&["--db", ""][..], &[][..]),
        (&["--db", ""], &env_db[..]),
        (&["serve", "--db", "  "], &env_db),
        (&["--db", "", "stats"], &env_db),
        (&["sessions", "list", "--db="], &[]),
        (&["--data-dir", "", "info"], &env_db),
        (&["--data-dir", " ", "backup", "/tmp/never.db"], &[]),
    ] {
        let out = run_with(args, env);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?} {env:?}: {err}");
        let flag = if args.contains(&"--data-dir") {
            "--data-dir"
        } else {
            "--db"
        };
        assert!(err.contains(&format!("{flag} is empty")), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    assert!(!home.join(".thoughtbox").exists(), "the default ledger was made");
    // An empty variable is unset: THOUGHTBOX_DB decides when THOUGHTBOX_DATA_DIR is empty.
    let out = run_with(
        &["stats", "--json"],
        &[("THOUGHTBOX_DB", db.to_str().unwrap()), ("THOUGHTBOX_DATA_DIR", "")],
    );
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The paths commands take (`backup DEST`, `export --out`, `import DIR`,
/// `validate DIR`) read a leading `~` as the home directory too, as a
/// line run without a shell (a systemd unit) passes it: no directory
/// named `~` appears where the command runs.
/// Unix only: on Windows the home folder is the user's profile folder
/// (the Known Folder API, not HOME), which a test cannot move.
#[cfg(unix)]
#[test]
fn command_paths_starting_with_a_tilde_are_in_the_home_directory() {
    let (dir, db) = temp_db();
    let home = dir.path().join("home");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&work).unwrap();
    ok(&db, &["config", "set", "sessionPartitionGranularity", "weekly"]);
    let run_in_home = |args: &[&str]| {
        let mut cmd = scrubbed();
        cmd.current_dir(&work)
            .env("HOME", &home)
            .arg("--db")
            .arg(&db)
            .args(args);
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run_in_home(&["backup", "~/copy.db"]);
    assert!(home.join("copy.db").is_file());
    run_in_home(&["export", "--out", "~/tree"]);
    assert!(home.join("tree/config.json").is_file());
    run_in_home(&["validate", "~/tree"]);
    run_in_home(&["import", "~/tree"]);
    assert!(!work.join("~").exists(), "a directory named ~ was made");
}

/// A bad value in a variable only the server reads stops the server with
/// a message naming it, and leaves the other commands alone.
#[test]
fn server_variables_do_not_stop_other_commands() {
    let (_dir, db) = temp_db();
    ok(&db, &["config", "set", "sessionPartitionGranularity", "weekly"]);
    for (var, value) in [
        ("THOUGHTBOX_CRITIQUE_TIMEOUT_SECS", "abc"),
        ("THOUGHTBOX_ROOTS_TIMEOUT_SECS", "-1"),
        ("THOUGHTBOX_EVENTS", "stdout"),
    ] {
        for args in [&["info"][..], &["stats"], &["sessions", "list"]] {
            let mut cmd = scrubbed();
            let out = cmd.env(var, value).arg("--db").arg(&db).args(args).output().unwrap();
            assert!(
                out.status.success(),
                "{var}={value} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let mut cmd = scrubbed();
        let out = cmd.env(var, value).arg("--db").arg(&db).arg("serve").output().unwrap();
        assert!(!out.status.success(), "{var}={value} serve");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(var), "{var}={value}: {err}");
    }
    // Given as a flag, the same value is refused too.
    let err = fails(&db, &["serve", "--critique-timeout", "abc"]);
    assert!(err.contains("not a whole number of seconds"), "{err}");
}

/// Every command, the server included, leaves a file that is not a
/// thoughtbox ledger exactly as it was: another program's SQLite database,
/// a text file, and (for the commands that only read) an empty file. Each
/// says what the file is, naming it, and no lock file appears beside it.
#[test]
fn files_that_are_not_ledgers_are_left_alone() {
    let (dir, _db) = temp_db();
    let other = dir.path().join("notes.db");
    {
        let c = rusqlite::Connection::open(&other).unwrap();
        c.execute_batch(
            "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('mine');",
        )
        .unwrap();
    }
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a database\n").unwrap();
    let empty = dir.path().join("empty.db");
    std::fs::write(&empty, "").unwrap();
    let cases: [(&Path, &str, &[&[&str]]); 3] = [
        (
            &other,
            "SQLite database of another program (tables: notes)",
            &[
                &["stats"],
                &["info"],
                &["sessions", "list"],
                &["config", "set", "disableThoughtLogging", "true"],
                &["serve"],
            ],
        ),
        (
            &text,
            "is not an SQLite database",
            &[&["stats"], &["backup", "copy.db"], &["serve"]],
        ),
        (
            &empty,
            "holds no ledger (it is empty)",
            &[&["stats"], &["info"], &["export", "--out", "tree"]],
        ),
    ];
    for (path, says, commands) in cases {
        let before = std::fs::read(path).unwrap();
        for args in commands {
            let err = fails(path, args);
            assert!(err.contains(says), "{args:?} on {}: {err}", path.display());
            assert!(err.contains(&path.display().to_string()), "{args:?}: {err}");
            assert_eq!(
                std::fs::read(path).unwrap(),
                before,
                "{args:?} changed {}",
                path.display()
            );
        }
    }
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.ends_with(".lock") || n.ends_with("-wal")),
        "{names:?}"
    );
    // The server makes an empty file into a new ledger (`touch` then serve).
    ok(&empty, &["config", "set", "disableThoughtLogging", "false"]);
    assert!(ok_json(&empty, &["stats"])["sessions"].is_number());
}

/// A command that only reads does not wait for another program's write
/// transaction: it reads the last committed state.
#[test]
fn reading_commands_do_not_wait_for_a_writer() {
    let (_dir, db) = temp_db();
    ok(&db, &["config", "set", "disableThoughtLogging", "false"]);
    let writer = rusqlite::Connection::open(&db).unwrap();
    writer
        .execute_batch("BEGIN IMMEDIATE; UPDATE config SET value = 'true' WHERE key = 'disableThoughtLogging';")
        .unwrap();
    for args in [
        &["stats"][..],
        &["info"],
        &["sessions", "list"],
        &["config", "get", "disableThoughtLogging"],
    ] {
        let out = run(&db, args);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(ok(&db, &["config", "get", "disableThoughtLogging"]).contains("false"));
    writer.execute_batch("ROLLBACK").unwrap();
}

/// `repair` on a sound ledger changes nothing and says the file is sound;
/// the ledger works as before afterwards.
#[test]
fn repair_on_a_sound_ledger() {
    let (_dir, db) = temp_db();
    {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        let s = store.create_session(NewSession::titled("sound")).unwrap();
        store
            .append_thought(Target::Session(s.id.clone()), input("nothing to mend here"))
            .unwrap();
    }
    let report = ok_json(&db, &["repair"]);
    assert_eq!(report["integrity"], json!(["ok"]));
    assert_eq!(report["orphansRemoved"], 0);
    assert_eq!(report["sessionsFixed"], 0);
    assert_eq!(report["thoughtsIndexed"], 1);
    let text = ok(&db, &["repair"]);
    assert!(text.contains("integrity check") && text.contains("ok"), "{text}");
    let hits = ok_json(&db, &["sessions", "search", "mend"]);
    assert_eq!(hits.as_array().map(Vec::len), Some(1), "{hits}");
}

/// The commands that only read leave a ledger's file byte for byte as it
/// was: a backup stays in the journal mode it was written in.
#[test]
fn reading_a_backup_leaves_it_as_it_was() {
    let (dir, db) = temp_db();
    ok(&db, &["config", "set", "sessionPartitionGranularity", "weekly"]);
    let copy = dir.path().join("copy.db");
    ok(&db, &["backup", copy.to_str().unwrap()]);
    let before = std::fs::read(&copy).unwrap();
    for args in [&["stats"][..], &["info"], &["sessions", "list"], &["config", "get"]] {
        ok(&copy, args);
        assert_eq!(std::fs::read(&copy).unwrap(), before, "{args:?} changed the file");
    }
}

/// A ledger on a read-only mount (a file-system snapshot, a backup disk):
/// the commands that only read, `backup` first of all, work where it is,
/// also with the writes a killed server left in its WAL; a command that
/// changes the ledger says the file system is read-only; and nothing is
/// written there. Each of these refused with "not writable" before.
#[tokio::test]
async fn a_ledger_on_a_read_only_mount_can_be_read_and_backed_up() {
    let Some(disk) = SmallDisk::mount("16m") else {
        eprintln!("skipped: mounting a tmpfs is not allowed here (needs root)");
        return;
    };
    let out = tempfile::tempdir().unwrap();
    let db = disk.path.join("ledger.db");
    let (a, _) = small_ledger(&db);
    let files = || {
        let mut names: Vec<String> = std::fs::read_dir(&disk.path)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    };
    let thoughts = |copy: &Path| {
        let store = Store::open(copy, OpenOptionsStore::default()).unwrap();
        store.stats(0).unwrap().thoughts
    };
    disk.remount(true);
    let before = files();
    assert!(ok(&db, &["sessions", "list"]).contains("Cache design"));
    assert_eq!(
        ok_json(&db, &["sessions", "show", &a])["nodes"]
            .as_array()
            .map(Vec::len),
        Some(4)
    );
    assert!(ok(&db, &["sessions", "search", "redis"]).contains("Cache design"));
    ok(&db, &["stats"]);
    ok(&db, &["info"]);
    ok(&db, &["export", "--out", out.path().join("tree").to_str().unwrap()]);
    let copy = out.path().join("copy.db");
    ok(&db, &["backup", copy.to_str().unwrap()]);
    assert_eq!(thoughts(&copy), 5);
    let refused = fails(&db, &["repair"]);
    assert!(refused.contains("read-only file system"), "{refused}");
    assert!(refused.contains("backup"), "names what works there: {refused}");
    assert_eq!(files(), before, "nothing written on the read-only mount");

    // A server killed with writes still in its WAL, then the disk made read-only.
    disk.remount(false);
    let s = start(&db).await;
    s.ready("left in the WAL").await;
    for i in 1..=3 {
        s.thought(t(&format!("unsaved {i}"))).await;
    }
    kill(s.pid, "KILL");
    wait_exit(s.pid).await;
    drop(s);
    let wal = std::fs::metadata(disk.path.join("ledger.db-wal"))
        .map(|m| m.len())
        .unwrap_or(0);
    assert!(wal > 0, "the killed server left its WAL");
    disk.remount(true);
    assert!(ok(&db, &["sessions", "list"]).contains("left in the WAL"));
    // Not yet in the full-text index, and the index cannot be written there.
    let hits = ok_json(&db, &["sessions", "search", "unsaved"]);
    assert_eq!(hits[0]["matches"].as_array().map(Vec::len), Some(3), "{hits}");
    let copy = out.path().join("with-wal.db");
    ok(&db, &["backup", copy.to_str().unwrap()]);
    assert_eq!(thoughts(&copy), 8, "the backup holds the writes in the WAL");

    // A WAL without its -shm cannot be read there: said so, not read as if empty.
    disk.remount(false);
    std::fs::remove_file(disk.path.join("ledger.db-shm")).unwrap();
    disk.remount(true);
    let refused = fails(&db, &["stats"]);
    assert!(refused.contains("-wal") && refused.contains("copy"), "{refused}");
    disk.remount(false);

    // A read-only bind mount of a file system that is writable elsewhere
    // (an immutable read there gives damaged backups while a server writes
    // through the other mount): refused while no server has the file open,
    // read through the server's -wal and -shm while one does.
    std::fs::remove_file(disk.path.join("ledger.db-wal")).unwrap();
    let bind = out.path().join("bind");
    std::fs::create_dir(&bind).unwrap();
    let mounted = std::process::Command::new("mount")
        .arg("--bind")
        .arg(&disk.path)
        .arg(&bind)
        .status()
        .unwrap()
        .success();
    assert!(mounted);
    let unmount = || {
        let _ = std::process::Command::new("umount").arg("-l").arg(&bind).status();
    };
    let ro = std::process::Command::new("mount")
        .args(["-o", "remount,bind,ro"])
        .arg(&bind)
        .status()
        .unwrap()
        .success();
    if !ro {
        unmount();
        panic!("remount,bind,ro failed");
    }
    let through = bind.join("ledger.db");
    let refused = run(&through, &["stats"]);
    let s = start(&db).await;
    s.ready("through the bind mount").await;
    let listed = run(&through, &["sessions", "list"]);
    s.stop().await;
    unmount();
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("read-only bind mount"),
        "{err}"
    );
    assert!(
        listed.status.success() && String::from_utf8_lossy(&listed.stdout).contains("through the bind mount"),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
}

/// A re-export that runs out of space half-way leaves the session's folder
/// as the last export wrote it: no thought files newer than its manifest,
/// no temporary files; once there is room again the next one completes it
/// (not half updated).
#[test]
fn a_re_export_that_runs_out_of_space_changes_nothing() {
    let Some(disk) = SmallDisk::mount("2m") else {
        eprintln!("skipped: mounting a tmpfs is not allowed here (needs root)");
        return;
    };
    let (_dir, db) = temp_db();
    let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
    let session = store.create_session(NewSession::titled("grows")).unwrap();
    let add = |from: usize, to: usize| {
        for i in from..to {
            let text = format!("thought {i}: {}", "words that take room ".repeat(40));
            store
                .append_thought(Target::Session(session.id.clone()), input(&text))
                .unwrap();
        }
        store.checkpoint().unwrap();
    };
    add(0, 20);
    let tree = disk.path.join("tree");
    let tree_arg = tree.to_str().unwrap();
    ok(&db, &["export", "--out", tree_arg]);
    let snapshot = || {
        let mut files: Vec<(PathBuf, Vec<u8>)> = Vec::new();
        let mut dirs = vec![tree.clone()];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.file_name().is_some_and(|n| n != ".export.lock") {
                    files.push((p.clone(), std::fs::read(&p).unwrap()));
                }
            }
        }
        files.sort();
        files
    };
    let before = snapshot();
    // 400 more thoughts (~1 MiB of files) and a disk with little room left.
    add(20, 420);
    let filler = disk.fill();
    let room = std::fs::read(&filler).unwrap().len();
    std::fs::write(&filler, vec![0u8; room.saturating_sub(200 << 10)]).unwrap();
    let err = fails(&db, &["export", "--out", tree_arg]);
    assert!(err.to_lowercase().contains("space") || err.contains("full"), "{err}");
    assert!(snapshot() == before, "the folder changed: {:?}", snapshot().len());
    std::fs::remove_file(&filler).unwrap();
    ok(&db, &["export", "--out", tree_arg]);
    let report = ok_json(&db, &["validate", tree_arg]);
    assert_eq!(report["valid"], true, "{report}");
    let exported = snapshot();
    assert_eq!(
        exported
            .iter()
            .filter(|(p, _)| p.extension().is_some_and(|e| e == "tmp"))
            .count(),
        0
    );
    let manifest = exported
        .iter()
        .find(|(p, _)| p.file_name().is_some_and(|n| n == "manifest.json"))
        .unwrap();
    let manifest: Value = serde_json::from_slice(&manifest.1).unwrap();
    assert_eq!(manifest["thoughtFiles"].as_array().map(Vec::len), Some(420));
}

/// A low open-file limit (`ulimit -n`): a soft one is raised, so the
/// server and the commands work; a hard one too low to run with is refused
/// at once, saying so (else the pool retries "unable to open database file"
/// for 30 s, and under 16 files the runtime panics).
#[cfg(unix)] // ulimit is Unix's; Windows has no per-process limit of this kind.
#[test]
fn a_low_open_file_limit_is_raised_or_refused_at_once() {
    let (_dir, db) = temp_db();
    small_ledger(&db);
    let limited = |limit: &str, args: &[&str]| {
        let started = std::time::Instant::now();
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!("ulimit {limit} && exec \"$0\" \"$@\""))
            .arg(bin())
            .arg("--db")
            .arg(&db)
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        (out, started.elapsed())
    };
    let (out, took) = limited("-n 16", &["info"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("may open only 16 files") && err.contains("ulimit -n"),
        "{err}"
    );
    assert!(
        took < std::time::Duration::from_secs(10),
        "refused at once, not after retries: {took:?}"
    );
    // The server too, before it reads a request.
    let (out, _) = limited("-n 16", &[]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("may open only 16 files"));
    assert!(out.stdout.is_empty());
    // Only the soft limit low: raised, and everything works.
    let hard = String::from_utf8(
        std::process::Command::new("bash")
            .args(["-c", "ulimit -Hn"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    if hard.trim() == "unlimited" || hard.trim().parse::<u64>().is_ok_and(|h| h >= 64) {
        let (out, _) = limited("-Sn 16", &["sessions", "list"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("Cache design"));
    }
}

/// What an interrupted single-file export or backup left beside its
/// destination (Ctrl-C leaves a temporary file as large as the output) is
/// removed by the next run to the same place, once it is old enough to be
/// nobody's; a recent one may be another run's and stays.
#[test]
fn leftovers_of_interrupted_exports_and_backups_are_swept() {
    let (dir, db) = temp_db();
    let (a, _) = small_ledger(&db);
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let plant = |name: &str, old: bool| {
        let path = dir.path().join(name);
        std::fs::write(&path, b"partial").unwrap();
        if old {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(hour_ago)
                .unwrap();
        }
        path
    };
    let old_export = plant(".one.json.999999-0.tmp", true);
    let new_export = plant(".one.json.999998-0.tmp", false);
    let other = plant(".notes.json.999999-0.tmp", true);
    let one = dir.path().join("one.json");
    ok(
        &db,
        &[
            "export",
            "--session",
            &a,
            "--format",
            "json",
            "--out",
            one.to_str().unwrap(),
        ],
    );
    assert!(one.exists() && !old_export.exists());
    assert!(new_export.exists() && other.exists());

    let old_copy = plant("copy.db.tmp-999999-00000000000000ff", true);
    let old_journal = plant("copy.db.tmp-999999-00000000000000ff-journal", true);
    // A name a person gave is theirs, however old.
    let kept = plant("copy.db.tmp-2024-06", true);
    let copy = dir.path().join("copy.db");
    ok(&db, &["backup", copy.to_str().unwrap()]);
    assert!(copy.exists() && !old_copy.exists() && !old_journal.exists());
    assert!(kept.exists());

    let backups = dir.path().join("backups");
    std::fs::create_dir(&backups).unwrap();
    let old_stamped = plant("backups/.thoughtbox-backup-20260101T000000.000Z.tmp-999999", true);
    ok(&db, &["backup", backups.to_str().unwrap()]);
    assert!(!old_stamped.exists());
    assert_eq!(std::fs::read_dir(&backups).unwrap().count(), 1);
}

/// Rows a ledger may hold from before version 8, edited by hand into what
/// the layout cannot hold: a second thought 2 (whose file the first one's
/// would have been written over), a thought following no thought of its
/// session, a time that is no date, text over 1 MiB (refused since version 9;
/// no import would take it back). The export leaves each of those sessions
/// out, names it, and exits 1; the tree it writes is valid.
#[test]
fn sessions_with_rows_the_layout_cannot_hold_are_left_out_and_named() {
    let (dir, db) = temp_db();
    let (a, _) = small_ledger(&db);
    let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
    let mut broken = Vec::new();
    for title in ["twice", "dangling", "tomorrow", "long"] {
        let id = store.create_session(NewSession::titled(title)).unwrap().id;
        for i in 1..=3 {
            store
                .append_thought(Target::Session(id.clone()), input(&format!("{title} {i}")))
                .unwrap();
        }
        broken.push(id);
    }
    drop(store);
    let shell = rusqlite::Connection::open(&db).unwrap();
    shell
        .execute_batch(
            "DROP TRIGGER thoughts_checked_insert; DROP TRIGGER thoughts_node_id_checked;
             DROP TRIGGER thoughts_times_checked_update; DROP TRIGGER thoughts_text_checked_update;",
        )
        .unwrap();
    shell
        .execute(
            "UPDATE thoughts SET thought = ?2 WHERE node_id = ?1 || ':1'",
            [broken[3].clone(), "long ".repeat(300_000)],
        )
        .unwrap();
    shell
        .execute(
            "INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought,
                                   next_thought_needed, created_at)
             VALUES (?1, ?1 || ':2b', 2, 3, 'the other thought 2', 1, '2026-01-01T00:00:00.000Z')",
            [&broken[0]],
        )
        .unwrap();
    shell
        .execute(
            "UPDATE thoughts SET prev_node = 'nowhere' WHERE node_id = ?1 || ':3'",
            [&broken[1]],
        )
        .unwrap();
    shell
        .execute(
            "UPDATE thoughts SET created_at = 'tomorrow' WHERE node_id = ?1 || ':2'",
            [&broken[2]],
        )
        .unwrap();
    drop(shell);
    let tree = dir.path().join("tree");
    let out = run(&db, &["export", "--out", tree.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for id in &broken {
        assert!(stderr.contains(id.as_str()), "{id} named: {stderr}");
    }
    assert!(
        stderr.contains(":2b")
            && stderr.contains("nowhere")
            && stderr.contains("tomorrow")
            && stderr.contains("1500000 bytes of text"),
        "{stderr}"
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        summary["sessionsSkipped"].as_array().map(Vec::len),
        Some(4),
        "{summary}"
    );
    assert!(
        summary["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sessionId"] == a.as_str())
    );
    let report = ok_json(&db, &["validate", tree.to_str().unwrap()]);
    assert_eq!(report["valid"], true, "{report}");
}

/// A row edited by hand into what the layout cannot name (a session id that
/// is no UUID, a branch id that is no folder name) keeps only that session
/// out of `export --out`: it is left out, named on stderr, and the exit code
/// says the tree is not the whole ledger.
#[test]
fn one_session_the_layout_cannot_name_does_not_keep_the_others_out() {
    let (dir, db) = temp_db();
    let (a, b) = small_ledger(&db);
    let shell = rusqlite::Connection::open(&db).unwrap();
    // Since version 8 the schema refuses both rows; a ledger may hold them
    // from before.
    let refused = shell
        .execute(
            "INSERT INTO sessions (id, title, created_at, updated_at, last_accessed_at)
             VALUES ('my-session', 'by hand', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z',
                     '2026-01-01T00:00:00.000Z')",
            [],
        )
        .unwrap_err();
    assert!(refused.to_string().contains("lower-case UUID"), "{refused}");
    shell
        .execute_batch(
            "DROP TRIGGER sessions_checked_insert; DROP TRIGGER thoughts_node_id_checked;
             DROP TRIGGER thoughts_fork_checked_insert;",
        )
        .unwrap();
    shell
        .execute(
            "INSERT INTO sessions (id, title, created_at, updated_at, last_accessed_at)
             VALUES ('my-session', 'by hand', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z',
                     '2026-01-01T00:00:00.000Z')",
            [],
        )
        .unwrap();
    shell
        .execute(
            "INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought,
                                   next_thought_needed, created_at)
             VALUES (?1, ?1 || ':../../x:1', '../../x', 1, 1, 'escaped', 1, '2026-01-01T00:00:00.000Z')",
            [&b],
        )
        .unwrap();
    drop(shell);
    let tree = dir.path().join("tree");
    let out = run(&db, &["export", "--out", tree.to_str().unwrap(), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("my-session") && stderr.contains(&b), "{stderr}");
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["sessions"].as_array().unwrap().len(), 1, "{summary}");
    assert_eq!(summary["sessions"][0]["sessionId"], a.as_str());
    assert_eq!(summary["sessionsSkipped"].as_array().unwrap().len(), 2, "{summary}");
    assert!(tree.join("config.json").exists());
    // Nothing was written outside the tree.
    assert!(!dir.path().join("x").exists());
    // Named explicitly, a session that cannot be written is an error.
    let err = fails(
        &db,
        &["export", "--out", tree.to_str().unwrap(), "--session", "my-session"],
    );
    assert!(err.contains("not a lower-case UUID"), "{err}");
}

/// The cipher export's `…[+N chars]` counts the characters of the thought
/// left out, whitespace included (a 156,000-character thought ending in a
/// space said 155,799, counting its one-line form).
#[test]
fn the_cipher_cut_counts_what_was_left_out() {
    let (_dir, db) = temp_db();
    let id = {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        let s = store
            .create_session(NewSession {
                title: "long".into(),
                ..Default::default()
            })
            .unwrap();
        let long = format!("{} ", "x".repeat(155_999));
        store
            .append_thought(Target::Session(s.id.clone()), input(&long))
            .unwrap();
        let spaced = format!("{}  \n\n  {}", "y".repeat(199), "z".repeat(10));
        store
            .append_thought(Target::Session(s.id.clone()), input(&spaced))
            .unwrap();
        s.id
    };
    let cipher = ok(&db, &["export", "--session", &id, "--format", "cipher"]);
    let lines: Vec<&str> = cipher.lines().filter(|l| l.starts_with(['1', '2'])).collect();
    assert_eq!(
        lines,
        [
            format!("1O {} …[+155800 chars]", "x".repeat(200)),
            format!("2O {} …[+16 chars]", "y".repeat(199)),
        ],
        "{cipher}"
    );
}

/// Markdown lists each tag as a code span: tags "a b", "c,d" and "<x>"
/// were written `a b, c,d, &lt;x>`, which reads as four tags.
#[test]
fn markdown_tags_are_one_code_span_each() {
    let (_dir, db) = temp_db();
    let id = {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        let s = store
            .create_session(NewSession {
                title: "tagged".into(),
                tags: vec!["a b".into(), "c,d".into(), "<x>".into()],
                ..Default::default()
            })
            .unwrap();
        store
            .append_thought(Target::Session(s.id.clone()), input("one"))
            .unwrap();
        s.id
    };
    for args in [
        &["export", "--session", id.as_str(), "--format", "markdown"][..],
        &["sessions", "show", id.as_str()],
    ] {
        let md = ok(&db, args);
        assert!(md.contains("\n- **Tags:** `a b`, `c,d`, `<x>`\n"), "{args:?}: {md}");
    }
}

/// `sessions list` and `stats` line their columns up on a terminal: cells
/// are padded (and titles clipped) by terminal columns, two for CJK and
/// most emoji, so a wide title or tag no longer shifts the columns after it.
#[test]
fn tables_line_up_with_wide_characters() {
    use unicode_width::UnicodeWidthStr;
    let (_dir, db) = temp_db();
    let titles = ["plain title", "漢字のタイトル", "🙂 emoji 🙂", &"長".repeat(40)];
    {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        for (i, title) in titles.iter().enumerate() {
            let s = store
                .create_session(NewSession {
                    title: title.to_string(),
                    tags: vec![["ascii", "タグ", "🙂", "mixed漢x"][i].into()],
                    ..Default::default()
                })
                .unwrap();
            store
                .append_thought(Target::Session(s.id.clone()), input("one"))
                .unwrap();
        }
    }
    // The terminal column where each line's cells start: runs of two or
    // more spaces part the cells (titles here hold single spaces only).
    let starts = |line: &str| -> Vec<usize> {
        let mut cols = vec![0];
        let mut rest = line;
        while let Some(gap) = rest.find("  ") {
            let after = rest[gap..].trim_start_matches(' ');
            let at = line.len() - after.len();
            cols.push(line[..at].width());
            rest = after;
        }
        cols
    };
    let list = ok(&db, &["sessions", "list"]);
    let lines: Vec<&str> = list.lines().take(1 + titles.len()).collect();
    let header = starts(lines[0]);
    assert_eq!(header.len(), 6, "{list}");
    for line in &lines[1..] {
        assert_eq!(starts(line), header, "{list}");
        // Titles are clipped to 48 columns.
        assert!(line.width() <= header[5] + 16, "{line}");
    }
    assert!(list.contains(&format!("{}…", "長".repeat(23))), "{list}");
    let stats = ok(&db, &["stats"]);
    let tags: Vec<&str> = stats.lines().skip_while(|l| !l.starts_with("TAG")).collect();
    assert_eq!(tags.len(), 5, "{stats}");
    for line in &tags[1..] {
        assert_eq!(starts(line), starts(tags[0]), "{stats}");
    }
}

/// A fork point edited by hand into what `import` refuses (moved to a thought
/// that does not exist, set on a main-chain thought, left out of a branch
/// thought inserted by hand) is refused by the schema, so `repair` passes the
/// ledger and its export imports. The same rows in a ledger from before
/// version 12: `export` leaves the session out and names it (exit 1) instead
/// of writing what `import` refuses, `repair` names the rows with the
/// statements that mend them, and once mended the session exports and
/// imports.
#[test]
fn a_fork_point_edited_by_hand_never_makes_an_export_that_import_refuses() {
    let (dir, db) = temp_db();
    let (a, _) = small_ledger(&db);
    let branch_thought = format!("{a}:alt:3");
    let shell = rusqlite::Connection::open(&db).unwrap();
    for (sql, says) in [
        (
            format!("UPDATE thoughts SET branch_origin = '{a}:9' WHERE node_id = '{branch_thought}'"),
            "names the main-chain thought its branch forks from twice",
        ),
        (
            format!("UPDATE thoughts SET branch_origin = '{a}:1' WHERE node_id = '{a}:2'"),
            "a main-chain thought forks from nothing",
        ),
        (
            format!(
                "INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought,
                                       next_thought_needed, created_at)
                 VALUES ('{a}', '{a}:hb:3', 'hb', 3, 3, 'by hand', 1, '2026-01-01T00:00:00.000Z')"
            ),
            "names the main-chain thought its branch forks from twice",
        ),
    ] {
        let err = shell.execute_batch(&sql).expect_err(&sql).to_string();
        assert!(err.contains(says), "{sql}: {err}");
    }
    let report = ok_json(&db, &["repair"]);
    assert_eq!(report["leftForYou"], json!([]), "{report}");
    let export_imports = |tree: &Path| {
        let other = dir
            .path()
            .join(format!("{}.db", tree.file_name().unwrap().to_str().unwrap()));
        let summary = ok_json(&other, &["import", tree.to_str().unwrap()]);
        assert_eq!(
            (summary["imported"].as_u64(), summary["invalid"].as_u64()),
            (Some(2), Some(0)),
            "{summary}"
        );
        let copy = Store::open(&other, OpenOptionsStore::default()).unwrap();
        let branches = copy.branches(&a).unwrap();
        assert_eq!((branches.len(), branches[0].from_thought), (1, 2), "{branches:?}");
    };
    let tree = dir.path().join("tree");
    ok(&db, &["export", "--out", tree.to_str().unwrap()]);
    export_imports(&tree);

    // As a ledger from before version 12 may hold them.
    shell
        .execute_batch(&format!(
            "DROP TRIGGER thoughts_fork_checked_update;
             UPDATE thoughts SET branch_origin = '{a}:9' WHERE node_id = '{branch_thought}';"
        ))
        .unwrap();
    let stale = dir.path().join("stale");
    let out = run(&db, &["export", "--out", stale.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&a) && stderr.contains(&format!("branch \"alt\" forks from {a}:9")),
        "{stderr}"
    );
    // One SessionExport file is refused too (it went on to import's
    // refusal), whether to a file or to stdout; text formats, which are not
    // imported, are still written.
    let single = dir.path().join("single.json");
    let single_path = single.to_str().unwrap();
    for args in [
        vec![
            "export",
            "--session",
            a.as_str(),
            "--format",
            "json",
            "--out",
            single_path,
        ],
        vec!["export", "--session", a.as_str(), "--format", "json"],
        vec!["sessions", "show", a.as_str(), "--json"],
    ] {
        let out = run(&db, &args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        assert!(
            out.stdout.is_empty(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("branch \"alt\" forks from {a}:9")) && stderr.contains("thoughtbox repair"),
            "{stderr}"
        );
    }
    assert!(!single.exists(), "no file written");
    let text = ok(&db, &["export", "--session", a.as_str(), "--format", "markdown"]);
    assert!(
        text.contains("Cache design") && text.contains("or no cache at all"),
        "{text}"
    );
    let out = run(&db, &["repair"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let fix = format!(
        "UPDATE thoughts SET branch_from_thought = 2, branch_origin = '{a}:2' WHERE node_id = '{branch_thought}'"
    );
    assert!(stderr.contains(&fix), "{stderr}");
    shell.execute_batch(&fix).unwrap();
    assert_eq!(ok_json(&db, &["repair"])["leftForYou"], json!([]));
    let mended = dir.path().join("mended");
    ok(&db, &["export", "--out", mended.to_str().unwrap()]);
    export_imports(&mended);
}

/// Two ledgers whose installId was deleted by hand must not be taken for the
/// same ledger, or `backup` replaces the other one's sessions. Version 12
/// refuses the delete; a ledger from before that lacks one is never replaced
/// by a backup, and says why.
#[test]
fn backup_never_replaces_a_ledger_without_an_install_id() {
    let (dir, db) = temp_db();
    small_ledger(&db);
    let other = dir.path().join("b.db");
    {
        let store = Store::open(&other, OpenOptionsStore::default()).unwrap();
        for i in 0..4 {
            store.create_session(NewSession::titled(format!("theirs {i}"))).unwrap();
        }
    }
    let err = rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("DELETE FROM config WHERE key = 'installId'")
        .unwrap_err()
        .to_string();
    assert!(err.contains("installId cannot be deleted"), "{err}");
    for path in [&db, &other] {
        rusqlite::Connection::open(path)
            .unwrap()
            .execute_batch("DROP TRIGGER config_install_id_kept; DELETE FROM config WHERE key = 'installId';")
            .unwrap();
    }
    let before = std::fs::read(&other).unwrap();
    let err = fails(&db, &["backup", other.to_str().unwrap()]);
    assert!(
        err.contains("is a ledger without an installId") && err.contains("cannot be told to be an earlier backup"),
        "{err}"
    );
    assert_eq!(std::fs::read(&other).unwrap(), before, "b.db left as it was");
    let sessions = ok_json(&other, &["sessions", "list"]);
    assert_eq!(sessions["count"], 4, "{sessions}");
}
