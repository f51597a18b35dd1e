//! The directory tree: export, import, validate, round trips, the TypeScript
//! Thoughtbox's layout and its bugs, partitions, destinations, and the
//! `session export` destination of the gateway.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use serde_json::{Value, json};
use thoughtbox::domain::{Critique, NewSession, ThoughtInput};
use thoughtbox::store::{OpenOptionsStore, Store, Target};

use crate::cli::{fails, ok, ok_json, run};
use crate::common::*;

/// Every file under `root` (relative path -> bytes), config.json left out.
fn files(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                out.insert(p.strip_prefix(root).unwrap().to_path_buf(), fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out.remove(Path::new("config.json"));
    out
}

fn path_str(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// export -> import into an empty database -> export, and compare the trees.
fn round_trip(db: &Path, work: &Path, partition: &str) {
    let a = work.join("a");
    let b = work.join("b");
    let db2 = work.join("second.db");
    ok(db, &["export", "--out", path_str(&a), "--partition", partition]);
    let imported = run(&db2, &["import", path_str(&a), "--json"]);
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stdout)
    );
    let summary: Value = serde_json::from_slice(&imported.stdout).unwrap();
    assert_eq!(summary["invalid"], 0, "{summary}");
    ok(&db2, &["export", "--out", path_str(&b), "--partition", partition]);
    let (fa, fb) = (files(&a), files(&b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (k, v) in &fa {
        assert!(
            *v == fb[k],
            "{} differs:\n{}\n---\n{}",
            k.display(),
            String::from_utf8_lossy(v),
            String::from_utf8_lossy(&fb[k])
        );
    }
    // The second ledger holds the same counts.
    let (s1, s2) = (ok_json(db, &["stats"]), ok_json(&db2, &["stats"]));
    for k in [
        "sessions",
        "completedSessions",
        "thoughts",
        "branches",
        "revisions",
        "critiques",
    ] {
        assert_eq!(s1[k], s2[k], "{k}");
    }
}

#[derive(Debug, Clone)]
enum Step {
    Main(Option<u32>),
    Branch(u8, Option<u32>, Option<u32>),
    Revise(Option<u8>, u32),
    Close,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        5 => proptest::option::weighted(0.4, 1u32..30).prop_map(Step::Main),
        2 => (0u8..3, proptest::option::of(1u32..10), proptest::option::weighted(0.2, 1u32..30))
            .prop_map(|(b, f, n)| Step::Branch(b, f, n)),
        1 => (proptest::option::of(0u8..3), 1u32..20).prop_map(|(b, r)| Step::Revise(b, r)),
        1 => Just(Step::Close),
    ]
}

const TEXTS: &[&str] = &[
    "plain words",
    "ünïcödé — ✓ 漢字 🙂",
    "line one\nline \"two\"\t\\ end",
    "  padded  ",
    "RTL \u{202e} mark and zero\u{200b}width",
];

/// Apply generated steps to a new session; steps the ledger refuses are skipped.
fn play(store: &Store, title: &str, tags: Vec<String>, steps: &[Step], critique_every: usize) {
    let s = store
        .create_session(NewSession {
            title: title.into(),
            description: tags
                .len()
                .is_multiple_of(2)
                .then(|| "a description\nover two lines".into()),
            tags,
            ..Default::default()
        })
        .unwrap();
    for (i, st) in steps.iter().enumerate() {
        let text = format!("{} #{i}", TEXTS[i % TEXTS.len()]);
        let thought = match st {
            Step::Main(n) => ThoughtInput {
                thought_number: *n,
                total_thoughts: n.map(|n| n + 3),
                ..input(&text)
            },
            Step::Branch(b, from, n) => ThoughtInput {
                branch_id: Some(format!("b-{b}")),
                branch_from_thought: *from,
                thought_number: *n,
                ..input(&text)
            },
            Step::Revise(b, r) => ThoughtInput {
                branch_id: b.map(|b| format!("b-{b}")),
                revises_thought: Some(*r),
                ..input(&text)
            },
            Step::Close => ThoughtInput {
                next_thought_needed: false,
                needs_more_thoughts: Some(false),
                ..input(&text)
            },
        };
        if let Ok(a) = store.append_thought(Target::Session(s.id.clone()), thought)
            && i % critique_every == 0
        {
            let c = Critique {
                text: format!("critique of {i}: ✓ consider edge cases"),
                model: "test-model".into(),
                timestamp: "2026-01-02T03:04:05.678Z".into(),
            };
            assert!(store.set_critique(&a.thought.node_id, &c).unwrap());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]
    #[test]
    fn export_import_export_is_byte_identical(
        sessions in proptest::collection::vec(proptest::collection::vec(step(), 1..40), 1..4),
        partition in prop_oneof![Just("monthly"), Just("weekly"), Just("daily"), Just("none")],
    ) {
        let (dir, db) = temp_db();
        {
            let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
            for (i, steps) in sessions.iter().enumerate() {
                let tags = match i {
                    0 => vec!["project:alpha".to_string(), "x".into()],
                    1 => vec!["project:my app".to_string()],
                    _ => vec![],
                };
                play(&store, &format!("Session {i} — ✓"), tags, steps, 3);
            }
            store.checkpoint().unwrap();
        }
        round_trip(&db, dir.path(), partition);
    }
}

#[test]
fn thousands_of_thoughts_round_trip_with_wide_file_names() {
    let (dir, db) = temp_db();
    let id = {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        let mut steps: Vec<Step> = Vec::new();
        // Backward numbering first, then forward past 999, with branches and revisions.
        steps.extend((1..=20).rev().map(|n| Step::Main(Some(n))));
        for i in 0..2980u32 {
            steps.push(match i % 97 {
                0 => Step::Branch((i % 3) as u8, Some(5 + i % 11), None),
                13 => Step::Revise(None, 1 + i % 19),
                50 => Step::Branch((i % 3) as u8, None, None),
                _ => Step::Main(None),
            });
        }
        play(&store, "Long session", vec!["project:big".into()], &steps, 250);
        store.checkpoint().unwrap();
        store.session_ids().unwrap().remove(0)
    };
    round_trip(&db, dir.path(), "monthly");
    let export = ok_json(&db, &["sessions", "show", &id]);
    let count = export["session"]["thoughtCount"].as_u64().unwrap();
    assert!(count > 2800, "{count}");
    let session_dir = fs::read_dir(dir.path().join("a/projects/big/sessions"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join(&id);
    assert!(session_dir.join("1000.json").is_file());
    let manifest: Value = serde_json::from_slice(&fs::read(session_dir.join("manifest.json")).unwrap()).unwrap();
    let files: Vec<&str> = manifest["thoughtFiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let at = files.iter().position(|f| *f == "999.json").unwrap();
    assert_eq!(files[at + 1], "1000.json");
    assert_eq!(files[0], "001.json");
    assert!(manifest["branchFiles"]["b-0"].as_array().unwrap().len() > 5);
}

/// Write `value` as JSON at `path`, creating directories.
fn put(path: &Path, value: &Value) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

fn node(sid: &str, branch: Option<&str>, n: u32, prev: Option<String>, extra: Value) -> Value {
    let id = match branch {
        Some(b) => format!("{sid}:{b}:{n}"),
        None => format!("{sid}:{n}"),
    };
    let mut data = json!({
        "thought": format!("thought {n} {}", branch.unwrap_or("main")),
        "thoughtNumber": n,
        "totalThoughts": 5,
        "nextThoughtNeeded": true,
        "timestamp": format!("2025-01-15T10:00:{:02}.000Z", n * 2 + u32::from(branch.is_some())),
    });
    if let Value::Object(e) = extra {
        for (k, v) in e {
            data[k] = v;
        }
    }
    json!({
        "id": id, "data": data, "prev": prev, "next": [],
        "revisesNode": null, "branchOrigin": null, "branchId": branch,
    })
}

fn manifest(sid: &str, files: &[&str], branches: Value) -> Value {
    json!({
        "id": sid, "version": "1.0.0", "thoughtFiles": files, "branchFiles": branches,
        "metadata": { "title": "Reference session", "tags": ["project:legacy"],
                      "createdAt": "2025-01-15T10:00:00.000Z", "updatedAt": "2025-01-15T10:05:00.000Z" }
    })
}

const GOOD: &str = "1b9d6bcd-bbfd-4b2d-9b5d-ab8dfbbd4bed";
const FLAT: &str = "2c8e7ace-ccfe-4c3e-8c6e-bc9efccd5cfe";
const MISSING: &str = "3d7f8bdf-ddff-4d4f-9d7f-cdaf0dde6d0f";
const CORRUPT: &str = "4e6a9cea-eeaa-4e5a-8e8a-debaaeef7e1a";
const ESCAPE: &str = "5f5bad0b-ffbb-4f6b-9f9b-efcbbff08f2b";

/// A tree as Thoughtbox 1.2.x writes it: monthly partitions, branches under
/// `branches/{branchId}/`, star-shaped branch links, stale `next`, plus a
/// flat session and three broken ones.
fn reference_tree(root: &Path) {
    put(
        &root.join("config.json"),
        &json!({ "installId": "0f0e0d0c-0b0a-4909-8807-060504030201", "dataDir": "/home/u/.thoughtbox",
                 "disableThoughtLogging": false, "sessionPartitionGranularity": "monthly",
                 "createdAt": "2025-01-01T00:00:00.000Z" }),
    );
    let sessions = root.join("projects/_default/sessions");
    let g = sessions.join("2025-01").join(GOOD);
    put(
        &g.join("manifest.json"),
        &manifest(
            GOOD,
            &["001.json", "002.json", "003.json"],
            json!({ "alt": ["004.json", "005.json"] }),
        ),
    );
    put(&g.join("001.json"), &node(GOOD, None, 1, None, json!({})));
    put(
        &g.join("002.json"),
        &node(
            GOOD,
            None,
            2,
            Some(format!("{GOOD}:1")),
            json!({
                "critique": { "text": "Check the cache", "model": "claude-x", "timestamp": "2025-01-15T10:00:05.000Z" }
            }),
        ),
    );
    let mut n3 = node(
        GOOD,
        None,
        3,
        Some(format!("{GOOD}:2")),
        json!({ "isRevision": true, "revisesThought": 1 }),
    );
    n3["revisesNode"] = json!(format!("{GOOD}:1"));
    n3["revisionMetadata"] = json!({ "isOriginal": false });
    put(&g.join("003.json"), &n3);
    for n in [4, 5] {
        // Both branch thoughts point at the fork point: the TypeScript
        // Thoughtbox's star.
        let mut b = node(
            GOOD,
            Some("alt"),
            n,
            Some(format!("{GOOD}:2")),
            json!({ "branchFromThought": 2, "branchId": "alt" }),
        );
        b["branchOrigin"] = json!(format!("{GOOD}:2"));
        put(&g.join("branches/alt").join(format!("{n:03}.json")), &b);
    }
    // A stray numbered file the manifest does not list.
    put(&g.join("009.json"), &node(GOOD, None, 9, None, json!({})));

    let f = sessions.join(FLAT);
    put(&f.join("manifest.json"), &manifest(FLAT, &["001.json"], json!({})));
    put(
        &f.join("001.json"),
        &node(FLAT, None, 1, None, json!({ "nextThoughtNeeded": false })),
    );

    let m = sessions.join("2025-01").join(MISSING);
    put(
        &m.join("manifest.json"),
        &manifest(MISSING, &["001.json", "002.json"], json!({})),
    );
    put(&m.join("001.json"), &node(MISSING, None, 1, None, json!({})));

    let c = sessions.join("2025-01").join(CORRUPT);
    put(&c.join("manifest.json"), &manifest(CORRUPT, &["001.json"], json!({})));
    fs::write(c.join("001.json"), b"{ \"id\": \"truncated").unwrap();

    let e = sessions.join("2025-02").join(ESCAPE);
    put(
        &e.join("manifest.json"),
        &manifest(ESCAPE, &["001.json"], json!({ "../../x": ["001.json"] })),
    );
    put(&e.join("001.json"), &node(ESCAPE, None, 1, None, json!({})));
    put(
        &e.join("branches/x/001.json"),
        &node(ESCAPE, Some("x"), 1, None, json!({})),
    );
}

/// Every path under `dir` with its size, to see what a command changed.
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, u64> {
    fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, u64>) {
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                walk(&e.path(), out);
            }
            out.insert(e.path(), if meta.is_dir() { 0 } else { meta.len() });
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, &mut out);
    out
}

#[test]
fn importing_the_reference_layout() {
    let (dir, db) = temp_db();
    let root = dir.path().join("legacy");
    reference_tree(&root);
    let before = snapshot(dir.path());

    let out = run(&db, &["import", path_str(&root), "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "invalid sessions make the exit code non-zero"
    );
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["sessionsFound"], 5);
    assert_eq!(summary["imported"], 2, "{summary:#}");
    assert_eq!(summary["invalid"], 3);
    assert_eq!(summary["thoughtsImported"], 6);
    let by_id = |id: &str| -> Value {
        summary["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["report"]["sessionId"] == id)
            .unwrap()
            .clone()
    };
    let good = by_id(GOOD);
    assert_eq!(good["status"], "imported");
    assert_eq!(good["report"]["valid"], true);
    let warnings = good["report"]["warnings"].to_string();
    assert!(
        warnings.contains("branch \\\"alt\\\"") && warnings.contains("relinked"),
        "{warnings}"
    );
    assert!(warnings.contains("009.json"), "{warnings}");
    let missing = by_id(MISSING);
    assert_eq!(missing["status"], "invalid");
    assert_eq!(missing["report"]["missingThoughtFiles"], json!(["002.json"]));
    assert_eq!(missing["report"]["manifestValid"], true);
    let corrupt = by_id(CORRUPT);
    assert!(
        corrupt["report"]["errors"][0].as_str().unwrap().contains("001.json"),
        "{corrupt}"
    );
    let escape = by_id(ESCAPE);
    assert!(escape["report"]["errors"].to_string().contains("../../x"), "{escape}");
    assert_eq!(by_id(FLAT)["status"], "imported");

    // Nothing was written but the database.
    let after = snapshot(dir.path());
    let added: Vec<_> = after.keys().filter(|p| !before.contains_key(*p)).collect();
    assert!(
        added
            .iter()
            .all(|p| p.file_name().unwrap().to_str().unwrap().starts_with("ledger.db")),
        "{added:?}"
    );
    for (p, size) in &before {
        assert_eq!(after.get(p), Some(size), "{} changed", p.display());
    }
    assert!(!dir.path().join("x").exists() && !root.join("projects/_default/x").exists());

    // What went in: ids, timestamps, critique; the star relinked into a chain;
    // next rebuilt from prev.
    let export = ok_json(&db, &["sessions", "show", GOOD]);
    assert_eq!(export["session"]["title"], "Reference session");
    assert_eq!(export["session"]["createdAt"], "2025-01-15T10:00:00.000Z");
    assert_eq!(export["session"]["thoughtCount"], 5);
    assert_eq!(export["session"]["branchCount"], 1);
    let nodes: BTreeMap<String, Value> = export["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| (n["id"].as_str().unwrap().to_string(), n.clone()))
        .collect();
    let id = |s: &str| format!("{GOOD}:{s}");
    assert_eq!(nodes[&id("alt:4")]["prev"], id("2"));
    assert_eq!(nodes[&id("alt:5")]["prev"], id("alt:4"));
    assert_eq!(nodes[&id("alt:5")]["branchOrigin"], id("2"));
    assert_eq!(nodes[&id("2")]["next"], json!([id("3"), id("alt:4")]));
    assert_eq!(nodes[&id("1")]["next"], json!([id("2")]));
    assert_eq!(nodes[&id("3")]["revisesNode"], id("1"));
    assert_eq!(nodes[&id("2")]["data"]["critique"]["model"], "claude-x");
    assert_eq!(nodes[&id("2")]["data"]["timestamp"], "2025-01-15T10:00:04.000Z");
    let flat = ok_json(&db, &["sessions", "show", FLAT]);
    assert_eq!(flat["session"]["thoughtCount"], 1);

    // Importing again adds nothing.
    let again = run(&db, &["import", path_str(&root), "--json"]);
    let summary: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(
        (summary["imported"].clone(), summary["alreadyPresent"].clone()),
        (json!(0), json!(2))
    );
    assert_eq!(ok_json(&db, &["stats"])["thoughts"], 6);
    // Plain output: a summary line and the reports of the broken sessions.
    let plain = run(&db, &["import", path_str(&root)]);
    let text = String::from_utf8(plain.stdout).unwrap();
    assert!(
        text.contains("5 session directories") && text.contains("2 already present"),
        "{text}"
    );
    // Progress, off a terminal: one plain line per session on stderr.
    let progress = String::from_utf8(plain.stderr).unwrap();
    assert_eq!(progress.lines().filter(|l| l.starts_with('[')).count(), 5, "{progress}");
    assert!(progress.contains(&format!("[4/5] {ESCAPE} INVALID")), "{progress}");
    assert!(text.contains("missing thought files: 002.json"), "{text}");

    // Exporting over the TypeScript Thoughtbox's tree moves the imported
    // sessions into this layout (project from their tag) and leaves the
    // broken ones alone.
    ok(&db, &["export", "--out", path_str(&root)]);
    let old = root.join("projects/_default/sessions");
    // Every file the old copies held was a thought of theirs (the stray
    // 009.json too, which the manifest did not list): all gone.
    assert!(!old.join("2025-01").join(GOOD).exists() && !old.join(FLAT).exists());
    assert!(old.join("2025-01").join(MISSING).join("001.json").is_file());
    let moved = root.join("projects/legacy/sessions/2025-01").join(GOOD);
    assert!(moved.join("alt/005.json").is_file() && !moved.join("branches").exists());
    let out = run(&db, &["validate", path_str(&root), "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["sessionsChecked"].clone(), v["invalid"].clone()),
        (json!(5), json!(3))
    );
}

#[test]
fn validate_reports_each_session() {
    let (dir, db) = temp_db();
    let root = dir.path().join("legacy");
    reference_tree(&root);
    let out = run(&db, &["validate", path_str(&root), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["valid"], false);
    assert_eq!(v["sessionsChecked"], 5);
    assert_eq!(v["invalid"], 3);
    for r in v["sessions"].as_array().unwrap() {
        for key in [
            "valid",
            "sessionExists",
            "manifestExists",
            "manifestValid",
            "missingThoughtFiles",
            "missingBranchFiles",
            "errors",
        ] {
            assert!(r.get(key).is_some(), "{key} missing in {r}");
        }
    }
    let one = ok_json(&db, &["validate", path_str(&root), "--session", GOOD]);
    assert_eq!(one["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(one["valid"], true);
    let text = String::from_utf8(run(&db, &["validate", path_str(&root)]).stdout).unwrap();
    assert!(
        text.contains("INVALID 3d7f8bdf") && text.contains("3 invalid"),
        "{text}"
    );
    fails(&db, &["validate", path_str(&root), "--session", "../../x"]);
    fails(&db, &["validate", path_str(&dir.path().join("nowhere"))]);
    // validate reads only: no database was created.
    assert!(!db.exists());
    // A missing branch file is reported under its branch.
    fs::remove_file(
        root.join("projects/_default/sessions/2025-01")
            .join(GOOD)
            .join("branches/alt/005.json"),
    )
    .unwrap();
    let out = run(&db, &["validate", path_str(&root), "--session", GOOD, "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["sessions"][0]["missingBranchFiles"], json!({ "alt": ["005.json"] }));
}

#[test]
fn partitions_projects_and_moves() {
    let (dir, db) = temp_db();
    // A session created on 2024-12-30 (ISO week 1 of 2025), brought in from a tree.
    let src = dir.path().join("src");
    let sid = "6a4c1e0f-0a1b-4c2d-8e3f-a0b1c2d3e4f5";
    let mut m = manifest(sid, &["001.json"], json!({}));
    m["metadata"]["createdAt"] = json!("2024-12-30T10:00:00.000Z");
    m["metadata"]["tags"] = json!(["project:web app"]);
    put(&src.join(sid).join("manifest.json"), &m);
    put(&src.join(sid).join("001.json"), &node(sid, None, 1, None, json!({})));
    ok(&db, &["import", path_str(&src)]);

    let out = dir.path().join("out");
    for (partition, expected) in [
        ("weekly", "projects/web-app/sessions/2025-W01"),
        ("monthly", "projects/web-app/sessions/2024-12"),
        ("daily", "projects/web-app/sessions/2024-12-30"),
        ("none", "projects/web-app/sessions"),
    ] {
        let summary = ok_json(&db, &["export", "--out", path_str(&out), "--partition", partition]);
        let path = expected.split('/').fold(out.clone(), |p, part| p.join(part)).join(sid);
        assert_eq!(summary["sessions"][0]["path"], path_str(&path));
        assert!(path.join("manifest.json").is_file(), "{partition}");
        // Re-exporting with another partition moved the session: one copy only.
        let copies = files(&out).keys().filter(|p| p.ends_with("manifest.json")).count();
        assert_eq!(copies, 1, "{partition}");
        // ...and left no empty partition folders behind.
        let sessions = out.join("projects/web-app/sessions");
        for entry in fs::read_dir(&sessions).unwrap() {
            let entry = entry.unwrap().path();
            assert!(
                entry.ends_with(sid) || fs::read_dir(&entry).unwrap().next().is_some(),
                "{partition}: empty {}",
                entry.display()
            );
        }
    }
    // The database's setting is the default; --project overrides the tag.
    ok(&db, &["config", "set", "sessionPartitionGranularity", "weekly"]);
    ok(&db, &["export", "--out", path_str(&out), "--project", "other"]);
    assert!(
        out.join("projects/other/sessions/2025-W01")
            .join(sid)
            .join("001.json")
            .is_file()
    );
    // The session moved to another project: its old project folder is gone.
    assert!(!out.join("projects/web-app").exists());
    let config: Value = serde_json::from_slice(&fs::read(out.join("config.json")).unwrap()).unwrap();
    assert_eq!(config["sessionPartitionGranularity"], "weekly");
    for key in ["installId", "dataDir", "disableThoughtLogging", "createdAt"] {
        assert!(config.get(key).is_some(), "{key}");
    }
}

#[test]
fn re_export_updates_in_place() {
    let (dir, db) = temp_db();
    {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        play(
            &store,
            "s",
            vec![],
            &[Step::Main(None), Step::Main(None), Step::Branch(1, Some(1), None)],
            99,
        );
    }
    let out = dir.path().join("out");
    let first = ok_json(&db, &["export", "--out", path_str(&out)]);
    let session_dir = PathBuf::from(first["sessions"][0]["path"].as_str().unwrap());
    // Files of the user's, numbered like thought files or not: an export
    // removes only what an export wrote, and a stale thought file of this
    // session's that its manifest does not list.
    let stale = fs::read_to_string(session_dir.join("001.json")).unwrap();
    fs::write(session_dir.join("098.json"), &stale).unwrap();
    fs::write(session_dir.join("099.json"), "{}").unwrap();
    fs::create_dir_all(session_dir.join("gone")).unwrap();
    fs::write(session_dir.join("gone/001.json"), "{}").unwrap();
    fs::write(session_dir.join("notes.txt"), "mine").unwrap();
    let second = ok_json(&db, &["export", "--out", path_str(&out)]);
    assert_eq!(second["filesRemoved"], 1);
    assert!(!session_dir.join("098.json").exists());
    assert_eq!(second["filesWritten"], 0, "{second}");
    for mine in ["099.json", "gone/001.json", "notes.txt"] {
        assert!(session_dir.join(mine).is_file(), "{mine}");
    }
    // The branch's thought deleted by hand: its file goes, and its folder.
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute("DELETE FROM thoughts WHERE branch_id IS NOT NULL", [])
        .unwrap();
    let third = ok_json(&db, &["export", "--out", path_str(&out)]);
    assert_eq!(third["filesRemoved"], 1, "{third}");
    assert!(!session_dir.join("b-1").exists());
    assert!(session_dir.join("099.json").is_file() && session_dir.join("001.json").is_file());
    // No temporary files are left behind.
    assert!(files(&out).keys().all(|p| !p.to_str().unwrap().ends_with(".tmp")));
}

/// Every file and folder under `root`, `root` included, with its mode.
#[cfg(unix)]
fn modes(root: &Path) -> Vec<(PathBuf, u32)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = vec![(
        root.to_path_buf(),
        fs::metadata(root).unwrap().permissions().mode() & 0o777,
    )];
    for e in fs::read_dir(root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(modes(&p));
        } else {
            out.push((p.clone(), fs::metadata(&p).unwrap().permissions().mode() & 0o777));
        }
    }
    out
}

/// Run `thoughtbox --db DB ARGS` under `umask`, expecting success.
#[cfg(unix)]
fn ok_under_umask(umask: &str, db: &Path, args: &[&str]) {
    let mut cmd = std::process::Command::new("sh");
    for var in SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    let out = cmd
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" \"$@\""))
        .arg(bin())
        .arg("--db")
        .arg(db)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An export is as private as the ledger (0600 files in 0700 folders,
/// as the database, its backups and event files are), whatever the umask:
/// under umask 022 the tree was 0644 files in 0755 folders, under 000
/// 0666 and 0777, and `--out FILE` 0644. Folders that were there already
/// keep their modes.
#[cfg(unix)]
#[test]
fn exports_are_as_private_as_the_ledger() {
    use std::os::unix::fs::PermissionsExt;
    let (dir, db) = temp_db();
    let id = {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        play(
            &store,
            "s",
            vec![],
            &[Step::Main(None), Step::Main(None), Step::Branch(1, Some(1), None)],
            99,
        );
        store.session_ids().unwrap().remove(0)
    };
    for umask in ["000", "022"] {
        let mine = dir.path().join(format!("mine-{umask}"));
        fs::create_dir(&mine).unwrap();
        fs::set_permissions(&mine, fs::Permissions::from_mode(0o755)).unwrap();
        let tree = mine.join("new/tree");
        ok_under_umask(umask, &db, &["export", "--out", path_str(&tree)]);
        let private = |root: &Path| {
            for (path, mode) in modes(root) {
                let want = if path.is_dir() { 0o700 } else { 0o600 };
                assert_eq!(mode, want, "umask {umask}: {} is {mode:o}", path.display());
            }
        };
        private(&mine.join("new"));
        assert_eq!(fs::metadata(&mine).unwrap().permissions().mode() & 0o777, 0o755);
        // A re-export that changes files (staged and renamed into place),
        // and one into a folder of the user's: the same.
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        store
            .append_thought(Target::Session(id.clone()), input(&format!("more under {umask}")))
            .unwrap();
        drop(store);
        ok_under_umask(umask, &db, &["export", "--out", path_str(&tree)]);
        private(&mine.join("new"));
        ok_under_umask(umask, &db, &["export", "--out", path_str(&mine)]);
        assert_eq!(fs::metadata(&mine).unwrap().permissions().mode() & 0o777, 0o755);
        for (path, mode) in modes(&mine).into_iter().filter(|(p, _)| *p != mine) {
            let want = if path.is_dir() { 0o700 } else { 0o600 };
            assert_eq!(mode, want, "umask {umask}: {} is {mode:o}", path.display());
        }
        // One session as a file, new or replacing a file of the user's.
        let file = dir.path().join(format!("s-{umask}.md"));
        ok_under_umask(
            umask,
            &db,
            &[
                "export",
                "--session",
                &id,
                "--format",
                "markdown",
                "--out",
                path_str(&file),
            ],
        );
        assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
        fs::set_permissions(&file, fs::Permissions::from_mode(0o644)).unwrap();
        ok_under_umask(
            umask,
            &db,
            &["export", "--session", &id, "--format", "json", "--out", path_str(&file)],
        );
        assert_eq!(fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    }
}

#[test]
fn export_destinations_and_bad_names() {
    let (dir, db) = temp_db();
    let id = {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        play(&store, "s", vec![], &[Step::Main(None), Step::Close], 99);
        store.session_ids().unwrap().remove(0)
    };
    // A file where the tree should go: refused, file untouched.
    let file = dir.path().join("file");
    fs::write(&file, "keep").unwrap();
    let err = fails(&db, &["export", "--out", path_str(&file)]);
    assert!(err.contains("not a directory"), "{err}");
    assert_eq!(fs::read(&file).unwrap(), b"keep");
    let err = fails(&db, &["export", "--out", path_str(&file.join("below"))]);
    assert!(err.contains("cannot create the export destination"), "{err}");
    // A missing destination is created, nested.
    let nested = dir.path().join("a/b/c");
    ok(&db, &["export", "--out", path_str(&nested)]);
    assert!(nested.join("config.json").is_file());
    // Not writable (root may write anyway, then there is nothing to check).
    let ro = dir.path().join("ro");
    fs::create_dir(&ro).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&ro, fs::Permissions::from_mode(0o555)).unwrap();
        if fs::write(ro.join("probe"), "x").is_err() {
            let err = fails(&db, &["export", "--out", path_str(&ro)]);
            assert!(err.contains("Permission denied") || err.contains("permission"), "{err}");
            assert_eq!(fs::read_dir(&ro).unwrap().count(), 0);
        } else {
            fs::remove_file(ro.join("probe")).unwrap();
        }
    }
    // Names that could escape the tree are refused before anything is written.
    let fresh = dir.path().join("fresh");
    for args in [
        &["export", "--out", path_str(&fresh), "--session", "../../x"][..],
        &["export", "--out", path_str(&fresh), "--project", ".."],
        &[
            "export",
            "--out",
            path_str(&fresh),
            "--session",
            "7d4b7a4e-0000-4000-8000-000000000000",
        ],
    ] {
        fails(&db, args);
        assert!(!fresh.exists());
    }
    // --project names the folder a `project:` tag would: what cannot be in
    // a folder name becomes '-', so the tree stays inside DIR.
    for (project, folder) in [("my app/v2", "my-app-v2"), ("../x", "..-x")] {
        let tree = dir.path().join(format!("by-project-{folder}"));
        ok(&db, &["export", "--out", path_str(&tree), "--project", project]);
        assert!(
            tree.join("projects").join(folder).join("sessions").is_dir(),
            "{project}"
        );
        assert_eq!(fs::read_dir(tree.join("projects")).unwrap().count(), 1, "{project}");
    }
    // One session as a file, or on stdout.
    let md = dir.path().join("s.md");
    ok(
        &db,
        &[
            "export",
            "--session",
            &id,
            "--format",
            "markdown",
            "--out",
            path_str(&md),
        ],
    );
    assert!(fs::read_to_string(&md).unwrap().starts_with("# s"));
    let json: Value = serde_json::from_str(&ok(&db, &["export", "--session", &id, "--format", "json"])).unwrap();
    assert_eq!(json["version"], "1.0");
    assert_eq!(json["nodes"].as_array().unwrap().len(), 2);
    assert!(ok(&db, &["export", "--session", &id, "--format", "cipher"]).contains("1O"));
    fails(&db, &["export", "--format", "json"]);
    fails(
        &db,
        &[
            "export",
            "--session",
            &id,
            "--format",
            "json",
            "--out",
            path_str(dir.path()),
        ],
    );
    fails(&db, &["export"]);
    // --out never replaces a database: this one (by any name), its files,
    // or another ledger. The ledger is intact afterwards.
    let other = dir.path().join("other.db");
    fs::copy(&db, &other).unwrap();
    let wal = format!("{}-wal", db.display());
    for (dest, why) in [
        (path_str(&db), "this ledger's database"),
        (wal.as_str(), "a file of the database"),
        (path_str(&other), "is an SQLite database"),
    ] {
        let err = fails(
            &db,
            &["export", "--session", &id, "--format", "markdown", "--out", dest],
        );
        assert!(err.contains(why), "{dest}: {err}");
    }
    assert!(ok(&db, &["sessions", "show", &id]).contains("s"));
    assert_eq!(fs::read(&other).unwrap()[..16], *b"SQLite format 3\0");
}

#[tokio::test]
async fn gateway_export_to_a_destination() {
    let (dir, db) = temp_db();
    let s = start(&db).await;
    let id = s.ready("Exported by an agent").await;
    s.thought(t("first")).await;
    s.thought(t("second")).await;
    s.thought(json!({ "thought": "alt", "nextThoughtNeeded": true, "branchId": "alt", "branchFromThought": 1 }))
        .await;
    let dest = dir.path().join("exports");
    let r = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": id, "destination": path_str(&dest) }),
        )
        .await;
    let path = PathBuf::from(r["path"].as_str().unwrap());
    assert!(path.starts_with(&dest) && path.ends_with(&id), "{r}");
    assert_eq!(r["thoughts"], 3);
    let manifest: Value = serde_json::from_slice(&fs::read(path.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["thoughtFiles"], json!(["001.json", "002.json"]));
    assert_eq!(manifest["branchFiles"], json!({ "alt": ["002.json"] }));
    let first: Value = serde_json::from_slice(&fs::read(path.join("001.json")).unwrap()).unwrap();
    assert_eq!(first["next"], json!([format!("{id}:2"), format!("{id}:alt:2")]));
    assert!(dest.join("config.json").is_file());
    // As private as the ledger, as the command line's export is.
    #[cfg(unix)]
    for (p, mode) in modes(&dest) {
        assert_eq!(mode, if p.is_dir() { 0o700 } else { 0o600 }, "{}", p.display());
    }
    // format keeps working without a destination; with one it must be json.
    let md = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": id, "format": "markdown" }),
        )
        .await;
    assert!(md["content"].as_str().unwrap().contains("## Branch `alt`"));
    s.err(
        "session",
        json!({ "subOperation": "export", "sessionId": id, "format": "cipher", "destination": path_str(&dest) }),
        "INVALID_PAYLOAD",
    )
    .await;
    s.err(
        "session",
        json!({ "subOperation": "export", "sessionId": "../../x", "destination": path_str(&dest) }),
        "INVALID_PAYLOAD",
    )
    .await;
    // A relative destination would be read from the server's working
    // directory, which the agent cannot see: refused, naming that directory.
    let e = s
        .err(
            "session",
            json!({ "subOperation": "export", "sessionId": id, "destination": "../x" }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "destination", "{e}");
    assert!(e["message"].as_str().unwrap().contains("absolute"), "{e}");
    assert!(e["details"]["workingDirectory"].is_string(), "{e}");
    // A destination that is a file is the caller's mistake, not storage's.
    let file = dir.path().join("a-file.db");
    std::fs::write(&file, "mine").unwrap();
    let e = s
        .err(
            "session",
            json!({ "subOperation": "export", "sessionId": id, "destination": path_str(&file) }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "destination", "{e}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "mine");
    // So is one that cannot be made a directory (not a STORAGE_ERROR).
    let under_file = file.join("sub");
    let e = s
        .err(
            "session",
            json!({ "subOperation": "export", "sessionId": id, "destination": path_str(&under_file) }),
            "INVALID_PAYLOAD",
        )
        .await;
    assert_eq!(e["details"]["field"], "destination", "{e}");
    // A first export that fails leaves nothing: no lock file, and not the
    // destination it made. (A plain file where the tree's projects/ goes.)
    let blocked = dir.path().join("blocked");
    std::fs::create_dir(&blocked).unwrap();
    std::fs::write(blocked.join("projects"), "in the way").unwrap();
    s.err(
        "session",
        json!({ "subOperation": "export", "sessionId": id, "destination": path_str(&blocked) }),
        "STORAGE_ERROR",
    )
    .await;
    let left: Vec<String> = std::fs::read_dir(&blocked)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["projects".to_string()]);
    s.stop().await;
    // The agent's tree imports into another ledger.
    let db2 = dir.path().join("other.db");
    let summary = ok_json(&db2, &["import", path_str(&dest)]);
    assert_eq!(summary["imported"], 1);
    assert_eq!(summary["thoughtsImported"], 3);
}

/// A tree written by another tool may give times with an offset or another
/// precision; they are stored as UTC with milliseconds, the form the ledger
/// sorts by as text, and the import says so.
#[test]
fn imported_times_are_stored_in_utc_with_milliseconds() {
    let (dir, db) = temp_db();
    let root = dir.path().join("other-tool");
    let sessions = root.join("projects/_default/sessions");
    // 05:00 UTC, written with an offset, and without milliseconds.
    let offset = sessions.join(GOOD);
    let mut m = manifest(GOOD, &["001.json"], json!({}));
    m["metadata"]["title"] = json!("offset session");
    m["metadata"]["createdAt"] = json!("2026-10-01T10:00:00+05:00");
    m["metadata"]["updatedAt"] = json!("2026-10-01T10:00:01+05:00");
    put(&offset.join("manifest.json"), &m);
    let mut first = node(GOOD, None, 1, None, json!({ "timestamp": "2026-10-01T10:00:01+05:00" }));
    first["data"]["critique"] = json!({ "text": "ok", "model": "m", "timestamp": "2026-10-01T05:00:02Z" });
    put(&offset.join("001.json"), &first);
    // 05:30 UTC, in the ledger's own form already.
    let utc = sessions.join(FLAT);
    let mut m = manifest(FLAT, &["001.json"], json!({}));
    m["metadata"]["title"] = json!("utc session");
    m["metadata"]["createdAt"] = json!("2026-10-01T05:30:00.000Z");
    m["metadata"]["updatedAt"] = json!("2026-10-01T05:30:00.000Z");
    put(&utc.join("manifest.json"), &m);
    put(
        &utc.join("001.json"),
        &node(FLAT, None, 1, None, json!({ "timestamp": "2026-10-01T05:30:00.000Z" })),
    );

    let summary = ok_json(&db, &["import", path_str(&root)]);
    assert_eq!(summary["imported"], 2, "{summary:#}");
    // Indexed by the import: searchable by commands that only read.
    assert_eq!(ok_json(&db, &["stats"])["unindexedThoughts"], 0);
    let warnings: Vec<String> = summary["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["report"]["warnings"].to_string())
        .collect();
    assert_eq!(
        warnings.iter().filter(|w| w.contains("converted to UTC")).count(),
        1,
        "{warnings:?}"
    );
    // The example it gives is the session's own first time, as given and as stored.
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("2026-10-01T10:00:00+05:00 became 2026-10-01T05:00:00.000Z")),
        "{warnings:?}"
    );
    let listed = ok_json(&db, &["sessions", "list", "--sort", "created", "--asc"]);
    let titles: Vec<&str> = listed["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["offset session", "utc session"]);
    let shown = ok_json(&db, &["sessions", "show", GOOD]);
    assert_eq!(shown["session"]["createdAt"], "2026-10-01T05:00:00.000Z");
    assert_eq!(shown["session"]["updatedAt"], "2026-10-01T05:00:01.000Z");
    let thought = &shown["nodes"][0]["data"];
    assert_eq!(thought["timestamp"], "2026-10-01T05:00:01.000Z");
    assert_eq!(thought["critique"]["timestamp"], "2026-10-01T05:00:02.000Z");
}

/// `import` and `validate` pointed at a directory that is no tree (the
/// folder above an export, an empty folder) fail, naming the tree inside
/// when there is one, and `import` creates no database.
#[test]
fn a_directory_that_is_no_tree_is_refused() {
    let (dir, db) = temp_db();
    let wrap = dir.path().join("wrap");
    reference_tree(&wrap.join("legacy"));
    fs::create_dir_all(dir.path().join("empty")).unwrap();
    // A project folder with a config.json of its own.
    put(
        &dir.path().join("app/config.json"),
        &json!({ "name": "web-app", "port": 8080 }),
    );
    for (target, hint) in [("wrap", Some("did you mean")), ("empty", None), ("app", None)] {
        let root = dir.path().join(target);
        for args in [vec!["import", path_str(&root)], vec!["validate", path_str(&root)]] {
            let out = run(&db, &args);
            assert_eq!(out.status.code(), Some(1), "{args:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("is not a Thoughtbox tree"), "{err}");
            if let Some(hint) = hint {
                assert!(err.contains(hint) && err.contains("legacy"), "{err}");
            }
        }
    }
    assert!(!db.exists());
    // An export of an empty ledger is a tree with no sessions: fine.
    let empty_tree = dir.path().join("empty-tree");
    put(
        &empty_tree.join("config.json"),
        &json!({ "installId": "0f0e0d0c-0b0a-4909-8807-060504030201" }),
    );
    let v = ok_json(&db, &["validate", path_str(&empty_tree)]);
    assert_eq!(v["sessionsChecked"], 0);
}

/// A thought whose time leaves the years 0000-9999 once in UTC makes its
/// session invalid, with an error naming the file, rather than vanishing.
#[test]
fn a_thought_time_out_of_range_is_reported() {
    let (dir, db) = temp_db();
    let root = dir.path().join("far");
    let s = root.join("projects/_default/sessions").join(GOOD);
    put(
        &s.join("manifest.json"),
        &manifest(GOOD, &["001.json", "002.json"], json!({})),
    );
    put(&s.join("001.json"), &node(GOOD, None, 1, None, json!({})));
    put(
        &s.join("002.json"),
        &node(
            GOOD,
            None,
            2,
            Some(format!("{GOOD}:1")),
            json!({ "timestamp": "9999-12-31T23:30:00-01:00" }),
        ),
    );
    let out = run(&db, &["import", path_str(&root), "--json"]);
    assert_eq!(out.status.code(), Some(1));
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(summary["invalid"], 1, "{summary:#}");
    let errors = summary["sessions"][0]["report"]["errors"].to_string();
    assert!(errors.contains("002.json") && errors.contains("0000-9999"), "{errors}");
}

/// A session exported as one SessionExport JSON file (by the command line,
/// or the content of an agent's export), deleted through the gateway, and
/// imported from the file comes back as it was: ids, numbers, links, tags,
/// title, times, searchable at once. Importing the file again changes nothing.
#[tokio::test]
async fn a_session_export_file_puts_a_deleted_session_back() {
    let (dir, db) = temp_db();
    let s = start(&db).await;
    let created = s
        .ok(
            "start_new",
            json!({ "sessionTitle": "Cache design", "tags": ["perf", "project:api"] }),
        )
        .await;
    let id = created["session"]["id"].as_str().unwrap().to_string();
    s.ok("cipher", Value::Null).await;
    s.thought(t("redis would work")).await;
    s.thought(t("memcached is simpler")).await;
    s.thought(json!({ "thought": "redis cluster costs more", "nextThoughtNeeded": true, "revisesThought": 1 }))
        .await;
    s.thought(json!({ "thought": "or no cache at all", "nextThoughtNeeded": true, "branchId": "alt", "branchFromThought": 2 }))
        .await;
    s.thought(json!({ "thought": "measured without", "nextThoughtNeeded": true, "branchId": "alt" }))
        .await;
    s.thought(json!({ "thought": "redis it is", "nextThoughtNeeded": false }))
        .await;
    let file = dir.path().join("cache.json");
    ok(
        &db,
        &["export", "--session", &id, "--format", "json", "--out", path_str(&file)],
    );
    let agents = s
        .ok(
            "session",
            json!({ "subOperation": "export", "sessionId": id, "format": "json" }),
        )
        .await;
    let agents_file = dir.path().join("agent.json");
    fs::write(&agents_file, serde_json::to_vec(&agents["content"]).unwrap()).unwrap();
    let before = ok_json(&db, &["sessions", "show", &id]);
    assert_eq!(before["session"]["branchCount"], 1, "{before}");
    assert!(before["session"]["completedAt"].is_string(), "{before}");
    s.ok("session", json!({ "subOperation": "delete", "sessionId": id }))
        .await;
    s.stop().await;
    fails(&db, &["sessions", "show", &id]);

    // validate reads the file and writes nothing.
    let v = ok_json(&db, &["validate", path_str(&file)]);
    assert_eq!(
        (v["valid"].clone(), v["sessionsChecked"].clone()),
        (json!(true), json!(1))
    );
    assert_eq!(v["sessions"][0]["sessionId"], id.as_str());
    fails(&db, &["sessions", "show", &id]);

    let summary = ok_json(&db, &["import", path_str(&file)]);
    assert_eq!(summary["sessionsFound"], 1, "{summary:#}");
    assert_eq!(summary["imported"], 1, "{summary:#}");
    assert_eq!(summary["thoughtsImported"], 6);
    assert_eq!(summary["sessions"][0]["status"], "imported");
    assert_eq!(summary["sessions"][0]["report"]["warnings"], json!([]));
    let after = ok_json(&db, &["sessions", "show", &id]);
    assert_eq!(after["session"], before["session"]);
    assert_eq!(after["nodes"], before["nodes"]);
    let alt = after["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == format!("{id}:alt:3"))
        .unwrap();
    assert_eq!(alt["branchOrigin"], format!("{id}:2"));
    assert_eq!(alt["prev"], format!("{id}:2"));
    let hits = ok_json(&db, &["sessions", "search", "memcached"]);
    assert_eq!(hits[0]["id"], id.as_str(), "{hits}");

    // Again: already present, nothing changed; the plain summary counts sessions.
    let out = run(&db, &["import", path_str(&file)]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.starts_with(&format!("1 session in {}: 0 imported", file.display())) && text.contains("1 already present"),
        "{text}"
    );
    assert_eq!(ok_json(&db, &["sessions", "show", &id])["nodes"], before["nodes"]);
    assert_eq!(ok_json(&db, &["stats"])["thoughts"], 6);

    // The content of an agent's export goes into another ledger the same way.
    let db2 = dir.path().join("other.db");
    let summary = ok_json(&db2, &["import", path_str(&agents_file)]);
    assert_eq!(summary["imported"], 1, "{summary:#}");
    assert_eq!(ok_json(&db2, &["sessions", "show", &id])["nodes"], before["nodes"]);
}

/// What is not a SessionExport is refused, naming the file and what was
/// expected, without creating a database; a SessionExport that fails the
/// checks (a dangling link) is invalid, reported, and not written.
#[test]
fn session_export_files_that_cannot_be_imported() {
    let (dir, db) = temp_db();
    let id = {
        let store = Store::open(&db, OpenOptionsStore::default()).unwrap();
        play(
            &store,
            "s",
            vec!["t".into()],
            &[Step::Main(None), Step::Main(None), Step::Close],
            99,
        );
        store.session_ids().unwrap().remove(0)
    };
    let good = dir.path().join("good.json");
    ok(
        &db,
        &["export", "--session", &id, "--format", "json", "--out", path_str(&good)],
    );
    let markdown = dir.path().join("s.md");
    ok(
        &db,
        &[
            "export",
            "--session",
            &id,
            "--format",
            "markdown",
            "--out",
            path_str(&markdown),
        ],
    );
    let other = dir.path().join("package.json");
    put(&other, &json!({ "name": "web-app", "version": "1.0.0" }));
    let mut doc: Value = serde_json::from_slice(&fs::read(&good).unwrap()).unwrap();
    doc["version"] = json!("2.0");
    let newer = dir.path().join("newer.json");
    put(&newer, &doc);
    // The version as a number: said so (it read "of version 1.0; this
    // thoughtbox reads version 1.0").
    doc["version"] = json!(1.0);
    let number = dir.path().join("r4.json");
    put(&number, &doc);

    let fresh = dir.path().join("fresh.db");
    for (file, says) in [
        (
            &other,
            "is not a SessionExport: expected a JSON object with version, session and nodes",
        ),
        (&markdown, "only the JSON export (a SessionExport) can be imported"),
        (&newer, "version \"2.0\"; this thoughtbox reads version \"1.0\""),
        (
            &number,
            "r4.json: its version is the number 1.0; a SessionExport's version is a string, \"1.0\" (in quotes)",
        ),
    ] {
        for command in ["import", "validate"] {
            let err = fails(&fresh, &[command, path_str(file)]);
            assert!(
                err.contains(&file.display().to_string()) && err.contains(says),
                "{command}: {err}"
            );
        }
    }
    assert!(!fresh.exists());

    // A session the ledger does not have, with a prev link to a thought
    // the session does not have.
    let text = fs::read_to_string(&good).unwrap().replace(&id, GOOD);
    let mut doc: Value = serde_json::from_str(&text).unwrap();
    doc["nodes"][1]["prev"] = json!(format!("{GOOD}:7"));
    let dangling = dir.path().join("dangling.json");
    put(&dangling, &doc);
    let stats = ok_json(&db, &["stats"]);
    for command in ["import", "validate"] {
        let out = run(&db, &[command, path_str(&dangling), "--json"]);
        assert_eq!(out.status.code(), Some(1), "{command}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let report = if command == "import" {
            assert_eq!(
                (v["invalid"].clone(), v["imported"].clone()),
                (json!(1), json!(0)),
                "{v:#}"
            );
            v["sessions"][0]["report"].clone()
        } else {
            v["sessions"][0].clone()
        };
        assert_eq!(report["valid"], false, "{v:#}");
        assert!(
            report["errors"].to_string().contains(&format!(
                "nodes[1]: prev names {GOOD}:7, which is not a node of this session"
            )),
            "{v:#}"
        );
    }
    let text = String::from_utf8(run(&db, &["import", path_str(&dangling)]).stdout).unwrap();
    assert!(
        text.contains("1 invalid and skipped") && text.contains("INVALID"),
        "{text}"
    );
    fails(&db, &["sessions", "show", GOOD]);
    assert_eq!(ok_json(&db, &["stats"]), stats);
}

/// A thought whose revisesThought and revisesNode name different thoughts
/// (thought 3 revises 1 by its number, 2 by its node): `validate` and
/// `import` name the file, both values and what they would have to be, and
/// nothing is imported; once they agree, the session imports.
#[test]
fn revision_links_that_disagree_are_not_imported() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join(GOOD);
    put(
        &session.join("manifest.json"),
        &manifest(GOOD, &["001.json", "002.json", "003.json"], json!({})),
    );
    put(&session.join("001.json"), &node(GOOD, None, 1, None, json!({})));
    put(
        &session.join("002.json"),
        &node(GOOD, None, 2, Some(format!("{GOOD}:1")), json!({})),
    );
    let mut three = node(
        GOOD,
        None,
        3,
        Some(format!("{GOOD}:2")),
        json!({ "isRevision": true, "revisesThought": 1 }),
    );
    three["revisesNode"] = json!(format!("{GOOD}:2"));
    put(&session.join("003.json"), &three);

    let db = dir.path().join("ledger.db");
    let says = format!(
        "003.json: revisesThought 1 and revisesNode {GOOD}:2 (thought 2) disagree: they must name one thought, \
         either revisesThought 1 with revisesNode {GOOD}:1 or revisesThought 2 with revisesNode {GOOD}:2"
    );
    for command in ["validate", "import"] {
        let out = run(&db, &[command, path_str(&session), "--json"]);
        assert_eq!(out.status.code(), Some(1), "{command}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let report = if command == "import" {
            assert_eq!((&v["invalid"], &v["imported"]), (&json!(1), &json!(0)), "{v:#}");
            &v["sessions"][0]["report"]
        } else {
            &v["sessions"][0]
        };
        assert_eq!(report["valid"], false, "{v:#}");
        assert_eq!(report["errors"], json!([says]), "{command}: {v:#}");
    }
    assert_eq!(ok_json(&db, &["stats"])["thoughts"], 0);
    fails(&db, &["sessions", "show", GOOD]);

    three["revisesNode"] = json!(format!("{GOOD}:1"));
    put(&session.join("003.json"), &three);
    ok(&db, &["validate", path_str(&session)]);
    ok(&db, &["import", path_str(&session)]);
    let shown = ok_json(&db, &["sessions", "show", GOOD]);
    let n3 = shown["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["id"] == format!("{GOOD}:3"))
        .unwrap();
    assert_eq!(
        (&n3["data"]["revisesThought"], &n3["revisesNode"]),
        (&json!(1), &json!(format!("{GOOD}:1")))
    );
}

/// A session directory of `sid`: main thoughts 1-3, branch `alt` (in
/// `alt/`) of thought 3 forking from 2.
fn forked_session(dir: &Path, sid: &str) {
    put(
        &dir.join("manifest.json"),
        &manifest(
            sid,
            &["001.json", "002.json", "003.json"],
            json!({ "alt": ["003.json"] }),
        ),
    );
    put(&dir.join("001.json"), &node(sid, None, 1, None, json!({})));
    for n in [2, 3] {
        let prev = Some(format!("{sid}:{}", n - 1));
        put(&dir.join(format!("{n:03}.json")), &node(sid, None, n, prev, json!({})));
    }
    let mut alt = node(
        sid,
        Some("alt"),
        3,
        Some(format!("{sid}:2")),
        json!({ "branchFromThought": 2, "branchId": "alt" }),
    );
    alt["branchOrigin"] = json!(format!("{sid}:2"));
    put(&dir.join("alt/003.json"), &alt);
}

/// `import` or `validate` run with a guard: what would read `/dev/zero`
/// or wait on a FIFO for ever fails the test (out of address space, or
/// stopped after two minutes) rather than taking the machine with it.
#[cfg(target_os = "linux")]
fn run_guarded(db: &Path, args: &[&str]) -> std::process::Output {
    let mut cmd = std::process::Command::new("timeout");
    cmd.args([
        "120",
        "sh",
        "-c",
        "ulimit -v 4194304 && exec \"$0\" \"$@\"",
        bin(),
        "--db",
    ])
    .arg(db)
    .args(args)
    .stdin(std::process::Stdio::null())
    .env("RUST_LOG", "warn");
    for var in SCRUBBED_ENV {
        cmd.env_remove(var);
    }
    let out = cmd.output().unwrap();
    assert_ne!(out.status.code(), Some(124), "{args:?} hung");
    out
}

/// A session's manifest.json, a branch folder or the tree's threads.json
/// that is a FIFO, a link (to `/dev/zero`, or to a file or folder outside
/// the session) or too large is refused as a thought file is: `validate`
/// and `import` say which file and why, promptly, and nothing is imported.
#[cfg(target_os = "linux")]
#[test]
fn special_and_linked_files_of_a_tree_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    forked_session(&outside, GOOD);
    let mkfifo = |path: &Path| {
        let _ = fs::remove_file(path);
        let made = std::process::Command::new("mkfifo").arg(path).status().unwrap();
        assert!(made.success());
    };
    let link = |target: &Path, path: &Path| {
        if path.is_dir() && !path.is_symlink() {
            fs::remove_dir_all(path).unwrap();
        } else {
            let _ = fs::remove_file(path);
        }
        std::os::unix::fs::symlink(target, path).unwrap();
    };
    let db = dir.path().join("ledger.db");
    drop(Store::open(&db, OpenOptionsStore::default()).unwrap());
    let session = dir.path().join("tree").join(GOOD);
    let manifest_json = session.join("manifest.json");
    type Spoil<'a> = Box<dyn Fn() + 'a>;
    let cases: Vec<(&str, Spoil, &str)> = vec![
        (
            "FIFO manifest",
            Box::new(|| mkfifo(&manifest_json)),
            "manifest.json is not a regular file",
        ),
        (
            "manifest linked to /dev/zero",
            Box::new(|| link(Path::new("/dev/zero"), &manifest_json)),
            "manifest.json is a symbolic link, not a regular file; import and validate follow no links inside a tree",
        ),
        (
            "manifest linked outside",
            Box::new(|| link(&outside.join("manifest.json"), &manifest_json)),
            "manifest.json is a symbolic link",
        ),
        (
            "manifest over 64 MiB",
            Box::new(|| {
                let f = fs::OpenOptions::new().write(true).open(&manifest_json).unwrap();
                f.set_len((64 << 20) + 1).unwrap();
            }),
            "manifest.json is 67108865 bytes; import and validate read at most 67108864 bytes (64 MiB) of such a file",
        ),
        (
            "branch folder linked outside",
            Box::new(|| link(&outside.join("alt"), &session.join("alt"))),
            "the branch folder alt is a symbolic link; import and validate follow no links inside a tree, so branch \
             \"alt\" was not read",
        ),
        (
            "FIFO thought file",
            Box::new(|| mkfifo(&session.join("002.json"))),
            "002.json is not a regular file",
        ),
    ];
    for (case, spoil, says) in cases {
        let _ = fs::remove_dir_all(&session);
        forked_session(&session, GOOD);
        // As it is, the session is valid.
        ok(&db, &["validate", path_str(&session)]);
        spoil();
        for command in ["validate", "import"] {
            let out = run_guarded(&db, &[command, path_str(&session), "--json"]);
            assert_eq!(out.status.code(), Some(1), "{case}: {command}");
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            let report = match command {
                "import" => &v["sessions"][0]["report"],
                _ => &v["sessions"][0],
            };
            assert_eq!(report["valid"], false, "{case}: {v:#}");
            let errors = report["errors"].as_array().unwrap();
            assert!(
                errors.iter().any(|e| e.as_str().unwrap().contains(says)),
                "{case}: {command}: {v:#}"
            );
        }
        assert_eq!(ok_json(&db, &["stats"])["sessions"], 0, "{case}");
    }

    // The tree's thread registry is checked before any session goes in.
    let tree = dir.path().join("tree");
    let _ = fs::remove_dir_all(&session);
    forked_session(&session, GOOD);
    let threads = tree.join("threads.json");
    let fresh = dir.path().join("fresh.db");
    type Registry<'a> = Box<dyn Fn() + 'a>;
    let registries: Vec<(Registry, &str)> = vec![
        (Box::new(|| mkfifo(&threads)), "threads.json is not a regular file"),
        (
            Box::new(|| link(Path::new("/dev/zero"), &threads)),
            "threads.json is a symbolic link",
        ),
        (
            Box::new(|| {
                fs::remove_file(&threads).unwrap();
                fs::write(&threads, "{\"version\": ").unwrap();
            }),
            "threads.json breaks 1 rule(s) of the registry format",
        ),
    ];
    for (spoil, says) in registries {
        spoil();
        let out = run_guarded(&fresh, &["import", path_str(&tree)]);
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says) && err.contains("nothing was imported"), "{err}");
        assert!(!fresh.exists(), "no database is made for a tree refused");
        let out = run_guarded(&db, &["import", path_str(&tree)]);
        assert_eq!(out.status.code(), Some(1));
        assert_eq!(ok_json(&db, &["stats"])["sessions"], 0);
        let out = run_guarded(&db, &["validate", path_str(&tree), "--json"]);
        assert_eq!(out.status.code(), Some(1));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["valid"], false, "{v:#}");
        assert_eq!(v["invalid"], 0, "{v:#}");
        assert!(v["threadsError"].as_str().unwrap().contains(says), "{v:#}");
    }
    fs::remove_file(&threads).unwrap();
    ok(&db, &["import", path_str(&tree)]);
    assert_eq!(ok_json(&db, &["stats"])["sessions"], 1);
}

/// `forked_session` imported into `db`, then written back as a
/// SessionExport: the JSON every test below edits.
fn forked_export(dir: &Path, db: &Path) -> Value {
    let session = dir.join("source").join(GOOD);
    forked_session(&session, GOOD);
    ok(db, &["import", path_str(&session)]);
    let file = dir.join("forked.json");
    ok(
        db,
        &[
            "export",
            "--session",
            GOOD,
            "--format",
            "json",
            "--out",
            path_str(&file),
        ],
    );
    serde_json::from_slice(&fs::read(file).unwrap()).unwrap()
}

/// `validate` and `import` of `doc` into the empty ledger `db`: both
/// refuse it with an error containing `says`, and nothing is imported.
fn refused_export(dir: &Path, db: &Path, doc: &Value, says: &str) {
    let file = dir.join("edited.json");
    put(&file, doc);
    for command in ["validate", "import"] {
        let out = run(db, &[command, path_str(&file), "--json"]);
        assert_eq!(out.status.code(), Some(1), "{command}: {says}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        let report = match command {
            "import" => &v["sessions"][0]["report"],
            _ => &v["sessions"][0],
        };
        let errors = report["errors"].as_array().unwrap();
        assert!(
            errors.iter().any(|e| e.as_str().unwrap().contains(says)),
            "{command}: {says}: {v:#}"
        );
    }
    assert_eq!(ok_json(db, &["stats"])["sessions"], 0, "{says}");
}

/// A critique is held to what the server keeps of a client's (1 MiB of
/// text, a model name of 200 characters): longer text is refused, naming
/// the thought; a longer model name (earlier versions kept it uncut) is
/// cut, with a warning; at the limits it imports as it is.
#[test]
fn an_imported_critique_is_held_to_the_servers_limits() {
    let dir = tempfile::tempdir().unwrap();
    let doc = forked_export(dir.path(), &dir.path().join("source.db"));
    let db = dir.path().join("ledger.db");
    drop(Store::open(&db, OpenOptionsStore::default()).unwrap());
    let with_critique = |text: String, model: String| {
        let mut doc = doc.clone();
        doc["nodes"][1]["data"]["critique"] =
            json!({ "text": text, "model": model, "timestamp": "2025-01-15T10:00:05.000Z" });
        doc
    };
    let limit = 1 << 20;
    refused_export(
        dir.path(),
        &db,
        &with_critique("x".repeat(9_000_000), "m".into()),
        "nodes[1]: the critique text is 9000000 bytes; the limit is 1048576",
    );
    refused_export(
        dir.path(),
        &db,
        &with_critique("x".repeat(limit + 1), "m".into()),
        "nodes[1]: the critique text is 1048577 bytes; the limit is 1048576",
    );
    let file = dir.path().join("long-model.json");
    put(&file, &with_critique("fine".into(), "é".repeat(300)));
    let other = dir.path().join("other.db");
    let imported = ok_json(&other, &["import", path_str(&file)]);
    assert!(
        imported
            .to_string()
            .contains("model name (300 characters) cut to its first 200"),
        "{imported}"
    );
    let shown = ok_json(&other, &["sessions", "show", GOOD]);
    assert_eq!(shown["nodes"][1]["data"]["critique"]["model"], "é".repeat(200));
    let file = dir.path().join("at-limits.json");
    put(&file, &with_critique("x".repeat(limit), "é".repeat(200)));
    ok(&db, &["import", path_str(&file)]);
    let shown = ok_json(&db, &["sessions", "show", GOOD]);
    let critique = &shown["nodes"][1]["data"]["critique"];
    assert_eq!(critique["text"].as_str().unwrap().len(), limit);
    assert_eq!(critique["model"], "é".repeat(200));
}

/// A branch thought whose `branchFromThought` and `branchOrigin` name
/// different thoughts is refused as a revision whose number and node
/// disagree is, rather than stored with one of them silently rewritten.
#[test]
fn a_fork_whose_number_and_node_disagree_is_not_imported() {
    let dir = tempfile::tempdir().unwrap();
    let doc = forked_export(dir.path(), &dir.path().join("source.db"));
    let db = dir.path().join("ledger.db");
    drop(Store::open(&db, OpenOptionsStore::default()).unwrap());
    let alt = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .position(|n| n["id"] == format!("{GOOD}:alt:3"))
        .unwrap();
    for (from, says) in [
        (
            99,
            format!(
                "nodes[{alt}]: branchFromThought 99 and branchOrigin {GOOD}:2 (thought 2) disagree: they must name \
                 one thought, either branchFromThought 99 with branchOrigin {GOOD}:99 or branchFromThought 2 with \
                 branchOrigin {GOOD}:2"
            ),
        ),
        (
            1,
            format!("nodes[{alt}]: branchFromThought 1 and branchOrigin {GOOD}:2 (thought 2) disagree"),
        ),
    ] {
        let mut edited = doc.clone();
        edited["nodes"][alt]["data"]["branchFromThought"] = json!(from);
        refused_export(dir.path(), &db, &edited, &says);
    }
    // Either alone names the fork.
    let mut edited = doc.clone();
    edited["nodes"][alt]["data"]
        .as_object_mut()
        .unwrap()
        .remove("branchFromThought");
    let file = dir.path().join("origin-only.json");
    put(&file, &edited);
    let v = ok_json(&db, &["import", path_str(&file)]);
    assert_eq!(v["imported"], 1, "{v:#}");
    let shown = ok_json(&db, &["sessions", "show", GOOD]);
    assert_eq!(shown["nodes"][alt]["data"]["branchFromThought"], 2);
}

/// A session id in upper case names the session the ledger keeps in lower
/// case, as everywhere else: a SessionExport or a session directory
/// written so imports under the lower-case id, node ids with it.
#[test]
fn an_upper_case_session_id_imports_in_lower_case() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("source.db");
    let doc = forked_export(dir.path(), &source);
    let original = ok_json(&source, &["sessions", "show", GOOD]);
    let upper = GOOD.to_ascii_uppercase();
    // Every id upper-cased, or only the session's.
    let everywhere: Value = serde_json::from_str(&doc.to_string().replace(GOOD, &upper)).unwrap();
    let mut session_only = doc.clone();
    session_only["session"]["id"] = json!(upper);
    for (case, edited) in [("everywhere", everywhere), ("session only", session_only)] {
        let file = dir.path().join("upper.json");
        put(&file, &edited);
        let v = ok_json(&source, &["validate", path_str(&file)]);
        assert_eq!(v["sessions"][0]["sessionId"], GOOD, "{case}: {v:#}");
        let db = dir.path().join(format!("{}.db", case.replace(' ', "-")));
        let v = ok_json(&db, &["import", path_str(&file)]);
        assert_eq!((&v["imported"], &v["invalid"]), (&json!(1), &json!(0)), "{case}: {v:#}");
        let shown = ok_json(&db, &["sessions", "show", &upper]);
        assert_eq!(shown["session"]["id"], GOOD, "{case}");
        assert_eq!(shown["nodes"], original["nodes"], "{case}");
    }

    // A session directory, its folder and manifest id upper-cased.
    let session = dir.path().join("tree").join(&upper);
    forked_session(&session, &upper);
    let db = dir.path().join("from-tree.db");
    ok(&db, &["validate", path_str(&session)]);
    ok(&db, &["import", path_str(&session)]);
    let shown = ok_json(&db, &["sessions", "show", GOOD]);
    assert_eq!(shown["nodes"], original["nodes"]);
}
