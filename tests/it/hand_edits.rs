//! Tests of the ledger edited by hand, the way a person does it with the
//! `sqlite3` shell: a connection of its own, foreign keys off (the shell's
//! default), plain SQL. The triggers of migrations/V4 keep the derived data
//! (search index, counters, chain tails, tag rows) right. The ledger is
//! read back through the library's public `Store`, and checked through a
//! shell connection as a person would.

use rusqlite::Connection;
use thoughtbox::domain::{NewSession, SessionFilter, ThoughtInput};
use thoughtbox::knowledge::{NewPattern, PatternFilter};
use thoughtbox::store::{OpenOptionsStore, Store, Target};

use crate::common::input;

fn temp_store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = Store::open(dir.path().join("t.db"), OpenOptionsStore::default()).expect("open store");
    (dir, store)
}

/// A `sqlite3` shell on the store's file.
fn shell(store: &Store) -> Connection {
    let conn = Connection::open(store.path()).expect("open");
    conn.execute_batch("PRAGMA foreign_keys = OFF").expect("pragma");
    conn
}

fn add(store: &Store, session: &str, text: &str, branch: Option<(&str, u32)>) -> String {
    let new = ThoughtInput {
        branch_id: branch.map(|(b, _)| b.to_string()),
        branch_from_thought: branch.map(|(_, from)| from),
        ..input(text)
    };
    store
        .append_thought(Target::Session(session.to_string()), new)
        .expect("append")
        .thought
        .node_id
}

/// The full-text index agrees with the table it indexes.
fn index_is_sound(store: &Store) {
    store.index_all_pending().expect("index");
    let conn = shell(store);
    conn.execute(
        "INSERT INTO thoughts_fts (thoughts_fts, rank) VALUES ('integrity-check', 1)",
        [],
    )
    .expect("the thought index matches the thoughts table");
}

fn found(store: &Store, word: &str) -> Vec<String> {
    store
        .search_thoughts(word, 10)
        .expect("search")
        .into_iter()
        .map(|h| h.node_id)
        .collect()
}

fn counts(store: &Store, session: &str) -> (i64, i64, Option<String>) {
    shell(store)
        .query_row(
            "SELECT thought_count, branch_count, tail_node FROM sessions WHERE id = ?1",
            [session],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .expect("session row")
}

/// Deleting the newest thought: its id is handed out again, yet searches
/// never find the deleted text under it, and the next thought links to the
/// thought before, not to itself.
#[test]
fn deleting_the_newest_thought() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("plan")).unwrap().id;
    let first = add(&store, &s, "Step one quokka", None);
    let second = add(&store, &s, "Step two platypus", None);
    index_is_sound(&store);
    shell(&store)
        .execute("DELETE FROM thoughts WHERE node_id = ?1", [&second])
        .unwrap();
    assert!(found(&store, "platypus").is_empty());
    assert_eq!(counts(&store, &s), (1, 0, Some(first.clone())));
    let again = add(&store, &s, "Replacement wombat", None);
    assert_eq!(again, second, "the number is free again");
    let prev: Option<String> = shell(&store)
        .query_row("SELECT prev_node FROM thoughts WHERE node_id = ?1", [&again], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(prev, Some(first.clone()));
    assert_eq!(found(&store, "wombat"), vec![again.clone()]);
    assert!(found(&store, "platypus").is_empty());
    assert_eq!(found(&store, "quokka"), vec![first]);
    assert_eq!(counts(&store, &s).0, 2);
    index_is_sound(&store);
}

/// Rewriting a thought's text (a typo, a secret redacted): searches see the
/// new text only.
#[test]
fn rewriting_a_thought() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("plan")).unwrap().id;
    let node = add(&store, &s, "The password is hunter2", None);
    store.index_all_pending().unwrap();
    let pending = add(&store, &s, "Not indexed yet: swordfish", None);
    let sh = shell(&store);
    sh.execute(
        "UPDATE thoughts SET thought = 'The password is [redacted]' WHERE node_id = ?1",
        [&node],
    )
    .unwrap();
    sh.execute(
        "UPDATE thoughts SET thought = 'Not indexed yet: marlin' WHERE node_id = ?1",
        [&pending],
    )
    .unwrap();
    assert!(found(&store, "hunter2").is_empty());
    assert_eq!(found(&store, "redacted"), vec![node]);
    assert!(found(&store, "swordfish").is_empty());
    assert_eq!(found(&store, "marlin"), vec![pending.clone()]);
    index_is_sound(&store);
    let e = sh
        .execute("UPDATE thoughts SET node_id = 'x' WHERE node_id = ?1", [&pending])
        .unwrap_err();
    assert!(e.to_string().contains("cannot change"), "{e}");
}

/// Deleting a session with foreign keys off takes its thoughts, branches
/// and tags with it, and their search entries.
#[test]
fn deleting_a_session_with_foreign_keys_off() {
    let (_d, store) = temp_store();
    let keep = store.create_session(NewSession::titled("keep")).unwrap().id;
    add(&store, &keep, "kept thought about caching", None);
    let gone = store
        .create_session(NewSession {
            tags: vec!["db".into()],
            ..NewSession::titled("gone")
        })
        .unwrap()
        .id;
    add(&store, &gone, "caching idea", None);
    add(&store, &gone, "caching on a branch", Some(("alt", 1)));
    index_is_sound(&store);
    shell(&store)
        .execute("DELETE FROM sessions WHERE id = ?1", [&gone])
        .unwrap();
    let conn = shell(&store);
    for table in ["thoughts", "branches", "session_tags"] {
        let left: i64 = conn
            .query_row(
                &format!("SELECT count(*) FROM {table} WHERE session_id = ?1"),
                [&gone],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(left, 0, "{table}");
    }
    let orphans: i64 = conn
        .query_row("SELECT count(*) FROM pragma_foreign_key_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(orphans, 0);
    assert_eq!(found(&store, "caching").len(), 1);
    let page = store
        .list_sessions(&SessionFilter {
            tags: vec!["db".into()],
            ..Default::default()
        })
        .unwrap();
    assert_eq!(page.total, 0);
    index_is_sound(&store);
}

/// Deleting a branch's thoughts: the branch goes when its last thought does.
#[test]
fn deleting_a_branch() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("b")).unwrap().id;
    add(&store, &s, "root", None);
    let b1 = add(&store, &s, "on the branch", Some(("alt", 1)));
    let b2 = add(&store, &s, "further on the branch", Some(("alt", 1)));
    assert_eq!(counts(&store, &s).1, 1);
    let sh = shell(&store);
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&b2]).unwrap();
    let tail: String = sh
        .query_row("SELECT tail_node FROM branches WHERE session_id = ?1", [&s], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(tail, b1);
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&b1]).unwrap();
    assert_eq!(counts(&store, &s).0, 1);
    assert_eq!(counts(&store, &s).1, 0);
    assert!(store.branches(&s).unwrap().is_empty());
    // The branch can be started afresh.
    add(&store, &s, "a new start", Some(("alt", 1)));
    assert_eq!(counts(&store, &s).1, 1);
}

/// Tags are edited in the `tags` JSON; the tag rows follow it, and
/// anything but strings is refused.
#[test]
fn editing_tags() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("t")).unwrap().id;
    let sh = shell(&store);
    sh.execute(
        "UPDATE sessions SET tags = json_insert(tags, '$[#]', 'flagged') WHERE id = ?1",
        [&s],
    )
    .unwrap();
    let tagged = |tag: &str| {
        store
            .list_sessions(&SessionFilter {
                tags: vec![tag.into()],
                ..Default::default()
            })
            .unwrap()
            .total
    };
    assert_eq!(tagged("flagged"), 1);
    assert_eq!(store.search("flagged", 10, 5).unwrap().0.len(), 1);
    sh.execute("UPDATE sessions SET tags = '[\"other\"]' WHERE id = ?1", [&s])
        .unwrap();
    assert_eq!(tagged("flagged"), 0);
    assert_eq!(tagged("other"), 1);
    let e = sh
        .execute("UPDATE sessions SET tags = '[1, 2]' WHERE id = ?1", [&s])
        .unwrap_err();
    assert!(e.to_string().contains("JSON array of strings"), "{e}");

    let p = store
        .create_pattern(NewPattern {
            title: "Retry with backoff".into(),
            description: "d".into(),
            tags: vec!["net".into()],
            content: "c".into(),
            ..Default::default()
        })
        .unwrap();
    let patterns = |tag: &str| {
        store
            .list_patterns(&PatternFilter {
                tags: vec![tag.into()],
                ..Default::default()
            })
            .unwrap()
            .total
    };
    assert_eq!(patterns("net"), 1);
    sh.execute("UPDATE knowledge_patterns SET tags = '[\"io\"]' WHERE id = ?1", [&p.id])
        .unwrap();
    assert_eq!(patterns("net"), 0);
    assert_eq!(patterns("io"), 1);
    sh.execute("DELETE FROM knowledge_patterns WHERE id = ?1", [&p.id])
        .unwrap();
    let left: i64 = sh
        .query_row("SELECT count(*) FROM knowledge_pattern_tags", [], |r| r.get(0))
        .unwrap();
    assert_eq!(left, 0);
}

/// A ledger edited by hand before the schema kept derived data right (the
/// triggers are taken away for the edits, as before version 4): `repair`
/// mends the search index, counts, tails and orphans it left.
#[test]
fn repair_mends_what_older_hand_edits_broke() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("plan")).unwrap().id;
    let first = add(&store, &s, "Step one quokka", None);
    let second = add(&store, &s, "Step two platypus", None);
    let b = add(&store, &s, "branching echidna", Some(("alt", 1)));
    let gone = store.create_session(NewSession::titled("gone")).unwrap().id;
    add(&store, &gone, "orphaned numbat", None);
    store.index_all_pending().unwrap();
    let sh = shell(&store);
    let triggers: Vec<String> = sh
        .prepare(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger'
             AND name IN ('thoughts_deleted', 'thoughts_text_changed', 'sessions_deleted', 'branches_deleted')",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(triggers.len(), 4);
    sh.execute_batch(
        "DROP TRIGGER thoughts_deleted; DROP TRIGGER thoughts_text_changed;
         DROP TRIGGER sessions_deleted; DROP TRIGGER branches_deleted;",
    )
    .unwrap();
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&second])
        .unwrap();
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&b]).unwrap();
    sh.execute(
        "UPDATE thoughts SET thought = 'Step one wombat' WHERE node_id = ?1",
        [&first],
    )
    .unwrap();
    sh.execute("DELETE FROM sessions WHERE id = ?1", [&gone]).unwrap();
    // A critique stored by an earlier server, which left the flag at 0.
    sh.execute(
        r#"UPDATE thoughts SET critique = '{"text":"ok","model":"m","timestamp":"2026-01-01T00:00:00.000Z"}',
                               critique_requested = 0 WHERE node_id = ?1"#,
        [&first],
    )
    .unwrap();
    for sql in &triggers {
        sh.execute_batch(sql).unwrap();
    }
    // Broken as edits with the triggers dropped leave it: old words still
    // match.
    assert_eq!(found(&store, "quokka"), vec![first.clone()]);

    let report = store.repair().unwrap();
    assert_eq!(report.integrity, vec!["ok".to_string()]);
    assert_eq!(report.orphans_removed, 1, "{report:?}");
    assert_eq!(report.empty_branches_removed, 1, "{report:?}");
    assert_eq!(report.sessions_fixed, 1, "{report:?}");
    assert_eq!(report.thoughts_indexed, 1);
    assert_eq!(report.critique_flags_set, 1, "{report:?}");
    index_is_sound(&store);
    assert!(found(&store, "quokka").is_empty());
    assert_eq!(found(&store, "wombat"), vec![first.clone()]);
    for word in ["platypus", "echidna", "numbat"] {
        assert!(found(&store, word).is_empty(), "{word}");
    }
    assert_eq!(counts(&store, &s), (1, 0, Some(first.clone())));
    let next = add(&store, &s, "after the repair", None);
    assert_eq!(next, second);
    // A second repair finds nothing to do.
    let again = store.repair().unwrap();
    assert_eq!(
        (
            again.orphans_removed,
            again.empty_branches_removed,
            again.tag_rows_fixed,
            again.sessions_fixed,
            again.critique_flags_set
        ),
        (0, 0, 0, 0, 0)
    );
}

/// A thought deleted by hand and put back under its old id (from a
/// backup) is searchable again, and can be deleted again; its chain
/// position cannot be edited.
#[test]
fn putting_a_thought_back_under_its_old_id() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("p")).unwrap().id;
    add(&store, &s, "first", None);
    let middle = add(&store, &s, "middle kiwi", None);
    add(&store, &s, "last", None);
    store.index_all_pending().unwrap();
    let sh = shell(&store);
    sh.execute_batch("CREATE TEMP TABLE saved AS SELECT * FROM thoughts")
        .unwrap();
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&middle])
        .unwrap();
    assert!(found(&store, "kiwi").is_empty());
    sh.execute(
        "INSERT INTO thoughts SELECT * FROM temp.saved WHERE node_id = ?1",
        [&middle],
    )
    .unwrap();
    assert_eq!(found(&store, "kiwi"), vec![middle.clone()]);
    index_is_sound(&store);
    // Back in its place in the chain (not a dead end, leaving the thought
    // before it with two next thoughts).
    let nexts = |node: &str| -> Vec<String> {
        sh.prepare("SELECT node_id FROM thoughts WHERE prev_node = ?1")
            .unwrap()
            .query_map([node], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let first = format!("{s}:1");
    assert_eq!(nexts(&first), vec![middle.clone()]);
    assert_eq!(nexts(&middle), vec![format!("{s}:3")]);
    // The first thought, too.
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&first]).unwrap();
    sh.execute(
        "INSERT INTO thoughts SELECT * FROM temp.saved WHERE node_id = ?1",
        [&first],
    )
    .unwrap();
    assert_eq!(nexts(&first), vec![middle.clone()]);
    let heads: i64 = sh
        .query_row(
            "SELECT count(*) FROM thoughts WHERE session_id = ?1 AND prev_node IS NULL",
            [&s],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(heads, 1);
    for edit in [
        "UPDATE thoughts SET branch_id = 'x' WHERE node_id = ?1",
        "UPDATE thoughts SET thought_number = 9 WHERE node_id = ?1",
    ] {
        let e = sh.execute(edit, [&middle]).unwrap_err();
        assert!(e.to_string().contains("cannot change"), "{edit}: {e}");
    }
    store.delete_session(&s).unwrap();
    index_is_sound(&store);
}

/// An older thoughtbox still running on the file inserts tag rows itself
/// after the trigger has: that is not an error.
#[test]
fn tag_rows_written_twice_are_one() {
    let (_d, store) = temp_store();
    let s = store
        .create_session(NewSession {
            tags: vec!["a".into()],
            ..NewSession::titled("t")
        })
        .unwrap()
        .id;
    let sh = shell(&store);
    sh.execute("INSERT INTO session_tags (session_id, tag) VALUES (?1, 'a')", [&s])
        .unwrap();
    let n: i64 = sh
        .query_row("SELECT count(*) FROM session_tags WHERE session_id = ?1", [&s], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(n, 1);
}

/// Deleting a thought from the middle of a chain (a fork point among
/// them): the chain skips it, and the session still exports to a tree that
/// imports whole.
#[test]
fn deleting_a_middle_thought_keeps_the_chain_whole() {
    use thoughtbox::tree::importer::import_tree;
    use thoughtbox::tree::writer::{ExportOptions, export_tree};
    let (dir, store) = temp_store();
    let s = store.create_session(NewSession::titled("m")).unwrap().id;
    let one = add(&store, &s, "one", None);
    let two = add(&store, &s, "two", None);
    let three = add(&store, &s, "three", None);
    let b = add(&store, &s, "fork from two", Some(("alt", 2)));
    let b2 = add(&store, &s, "further on", Some(("alt", 2)));
    let revision = store
        .append_thought(
            Target::Session(s.clone()),
            ThoughtInput {
                revises_thought: Some(3),
                ..input("three, revised")
            },
        )
        .unwrap()
        .thought
        .node_id;
    let sh = shell(&store);
    let refused = |node: &str| {
        let e = sh
            .execute("DELETE FROM thoughts WHERE node_id = ?1", [node])
            .unwrap_err();
        assert!(e.to_string().contains("delete those first"), "{e}");
    };
    refused(&two);
    refused(&three);
    let e = sh
        .execute("DELETE FROM branches WHERE session_id = ?1", [&s])
        .unwrap_err();
    assert!(e.to_string().contains("goes with its last thought"), "{e}");
    let e = sh
        .execute("UPDATE branches SET branch_id = 'renamed' WHERE session_id = ?1", [&s])
        .unwrap_err();
    assert!(e.to_string().contains("cannot change"), "{e}");
    // The branch's first thought, from the middle of its chain.
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&b]).unwrap();
    let prev = |node: &str| -> Option<String> {
        sh.query_row("SELECT prev_node FROM thoughts WHERE node_id = ?1", [node], |r| {
            r.get(0)
        })
        .unwrap()
    };
    assert_eq!(prev(&b2), Some(two.clone()), "the fork point");
    sh.execute("DELETE FROM thoughts WHERE node_id IN (?1, ?2)", [&b2, &revision])
        .unwrap();
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&two]).unwrap();
    assert_eq!(prev(&three), Some(one));
    assert_eq!(counts(&store, &s).1, 0);

    let tree = dir.path().join("tree");
    export_tree(&store, &tree, &ExportOptions::default(), &mut |_, _| {}).unwrap();
    let (_d2, fresh) = temp_store();
    let summary = import_tree(&fresh, &tree, &mut |_, _, _| {}).unwrap();
    assert_eq!((summary.imported, summary.invalid), (1, 0), "{:?}", summary.sessions);
    assert_eq!(summary.thoughts_imported, 2);
}

/// `repair` puts back a branch row deleted on its own (before version 4
/// refused that) and relinks a thought that links to itself (an older
/// version's doing after a hand delete of the newest thought).
#[test]
fn repair_restores_branch_rows_and_relinks() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("r")).unwrap().id;
    let one = add(&store, &s, "one", None);
    let two = add(&store, &s, "two", None);
    add(&store, &s, "on the branch", Some(("alt", 1)));
    let sh = shell(&store);
    sh.execute_batch("DROP TRIGGER branches_kept_while_used").unwrap();
    sh.execute("DELETE FROM branches WHERE session_id = ?1", [&s]).unwrap();
    sh.execute("UPDATE thoughts SET prev_node = node_id WHERE node_id = ?1", [&two])
        .unwrap();
    let report = store.repair().unwrap();
    assert_eq!((report.branches_restored, report.links_fixed), (1, 1), "{report:?}");
    assert_eq!(report.failed, None);
    let branches = store.branches(&s).unwrap();
    assert_eq!((branches.len(), branches[0].from_thought, branches[0].count), (1, 1, 1));
    let prev: Option<String> = sh
        .query_row("SELECT prev_node FROM thoughts WHERE node_id = ?1", [&two], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(prev, Some(one));
    assert_eq!(counts(&store, &s), (3, 1, Some(two)));
}

/// INSERT OR REPLACE of an existing session deletes the old row first, and
/// with foreign keys on the delete takes every thought with it: it is
/// refused, foreign keys on or off, and nothing changes; a new session
/// inserted by hand is still fine.
#[test]
fn replacing_a_session_by_insert_is_refused_and_loses_nothing() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("kept")).expect("session");
    for i in 0..3 {
        add(&store, &s.id, &format!("thought {i}"), None);
    }
    for foreign_keys in ["ON", "OFF"] {
        let sh = shell(&store);
        sh.execute_batch(&format!("PRAGMA foreign_keys = {foreign_keys}"))
            .expect("pragma");
        let replaced = sh.execute(
            "INSERT OR REPLACE INTO sessions (seq, id, title, tags, created_at, updated_at, last_accessed_at)
             SELECT seq, id, 'Renamed', tags, created_at, updated_at, last_accessed_at FROM sessions WHERE id = ?1",
            [&s.id],
        );
        let e = replaced.expect_err("refused").to_string();
        assert!(e.contains("change it with UPDATE"), "{e}");
        // By seq alone, under a new id, too.
        let by_seq = sh.execute(
            "INSERT OR REPLACE INTO sessions (seq, id, title, created_at, updated_at, last_accessed_at)
             SELECT seq, '00000000-0000-4000-8000-000000000000', 'x', created_at, updated_at, last_accessed_at
             FROM sessions WHERE id = ?1",
            [&s.id],
        );
        assert!(by_seq.is_err());
        assert_eq!(counts(&store, &s.id).0, 3, "foreign keys {foreign_keys}");
        let thoughts: i64 = sh
            .query_row("SELECT count(*) FROM thoughts WHERE session_id = ?1", [&s.id], |r| {
                r.get(0)
            })
            .expect("count");
        assert_eq!(thoughts, 3, "foreign keys {foreign_keys}");
        assert_eq!(store.session(&s.id).expect("session").title, "kept");
    }
    // The edit the message points to works, and so does a new session by hand.
    let sh = shell(&store);
    sh.execute("UPDATE sessions SET title = 'Renamed' WHERE id = ?1", [&s.id])
        .expect("update");
    sh.execute(
        "INSERT INTO sessions (id, title, created_at, updated_at, last_accessed_at)
         VALUES ('00000000-0000-4000-8000-000000000001', 'by hand', '2026-01-01T00:00:00.000Z',
                 '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
        [],
    )
    .expect("a new session");
    assert_eq!(store.session(&s.id).expect("session").title, "Renamed");
}

/// A thought number set out of range by hand made every read of its session
/// fail; such an update is refused.
#[test]
fn thought_numbers_set_out_of_range_are_refused() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("numbers")).expect("session");
    let node = add(&store, &s.id, "one", None);
    add(&store, &s.id, "two", None);
    let sh = shell(&store);
    for set in [
        "total_thoughts = 5000000000",
        "total_thoughts = 0",
        "revises_thought = -1",
        "branch_from_thought = 2147483648",
    ] {
        let e = sh
            .execute(&format!("UPDATE thoughts SET {set} WHERE node_id = ?1"), [&node])
            .expect_err(set)
            .to_string();
        assert!(e.contains("whole numbers from 1"), "{set}: {e}");
    }
    sh.execute(
        "UPDATE thoughts SET total_thoughts = 7, revises_thought = NULL WHERE node_id = ?1",
        [&node],
    )
    .expect("in range");
    let read = store
        .read_thoughts(
            &s.id,
            &thoughtbox::store::ThoughtQuery::main(thoughtbox::store::Pick::Last(2)),
        )
        .expect("the session reads");
    assert_eq!(read[0].data.total_thoughts, 7);
}

/// Several thoughts put back at once take their places when they go back
/// in the order they were written (`ORDER BY id`), as a restore from a
/// backup table does. In the reverse order the later one is put back while
/// the one it follows is missing, and the chain forks: `repair` mends that.
#[test]
fn several_thoughts_put_back_oldest_first() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("several")).unwrap().id;
    let nodes: Vec<String> = (1..=5)
        .map(|i| add(&store, &s, &format!("thought {i}"), None))
        .collect();
    let sh = shell(&store);
    sh.execute_batch("CREATE TEMP TABLE saved AS SELECT * FROM thoughts")
        .unwrap();
    for gone in [&nodes[1], &nodes[2], &nodes[3]] {
        sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [gone]).unwrap();
    }
    sh.execute(
        "INSERT INTO thoughts SELECT * FROM temp.saved WHERE node_id IN (?1, ?2, ?3) ORDER BY id",
        [&nodes[1], &nodes[2], &nodes[3]],
    )
    .unwrap();
    let prev = |node: &str| -> Option<String> {
        sh.query_row("SELECT prev_node FROM thoughts WHERE node_id = ?1", [node], |r| {
            r.get(0)
        })
        .unwrap()
    };
    let chain_is_whole = || {
        for i in 1..5 {
            assert_eq!(
                prev(&nodes[i]).as_deref(),
                Some(nodes[i - 1].as_str()),
                "thought {}",
                i + 1
            );
        }
    };
    chain_is_whole();
    // Newest first: forked, until repair.
    for gone in [&nodes[1], &nodes[2]] {
        sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [gone]).unwrap();
    }
    sh.execute(
        "INSERT INTO thoughts SELECT * FROM temp.saved WHERE node_id IN (?1, ?2) ORDER BY id DESC",
        [&nodes[1], &nodes[2]],
    )
    .unwrap();
    assert_eq!(prev(&nodes[3]).as_deref(), Some(nodes[1].as_str()), "forked");
    let report = store.repair().unwrap();
    assert_eq!(report.links_fixed, 1, "{report:?}");
    chain_is_whole();
    // A sound ledger: nothing to fix.
    assert_eq!(store.repair().unwrap().links_fixed, 0);
}

/// What a hand insert could get wrong before version 8's triggers refused
/// it, and a ledger may still hold: a second thought that follows nothing,
/// a number used twice on one chain, numbers out of range. `repair` names
/// each, with the statement that mends it, and says the ledger is not sound
/// until they are mended. It does not guess: a first thought put back under a
/// new id (newer, yet first) would be linked after the last one, a loop.
#[test]
fn repair_names_what_it_leaves_to_you() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("hand inserts")).unwrap().id;
    let nodes: Vec<String> = (1..=3)
        .map(|i| add(&store, &s, &format!("thought {i}"), None))
        .collect();
    add(&store, &s, "on a branch", Some(("alt", 2)));
    let sh = shell(&store);
    // Rows as a ledger older than version 8 may hold them.
    sh.execute_batch("DROP TRIGGER thoughts_checked_insert; DROP TRIGGER thoughts_node_id_checked;")
        .unwrap();
    // (A branch thought with its branch's fork point, as version 12 requires.)
    let insert = |node: &str, branch: Option<&str>, number: i64, total: i64, prev: Option<&str>| {
        sh.execute(
            "INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought,
                                   next_thought_needed, prev_node, created_at, branch_from_thought, branch_origin)
             VALUES (?1, ?2, ?3, ?4, ?5, 'by hand', 1, ?6, '2026-11-22T19:05:00.000Z',
                     CASE WHEN ?3 IS NOT NULL THEN 2 END, CASE WHEN ?3 IS NOT NULL THEN ?1 || ':2' END)",
            rusqlite::params![s, node, branch, number, total, prev],
        )
        .unwrap();
    };
    let prev = |node: &str| -> Option<String> {
        sh.query_row("SELECT prev_node FROM thoughts WHERE node_id = ?1", [node], |r| {
            r.get(0)
        })
        .unwrap()
    };
    // The first thought deleted and put back under a new id, as it was:
    // sound, and left as it is.
    sh.execute_batch("CREATE TEMP TABLE saved AS SELECT * FROM thoughts")
        .unwrap();
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&nodes[0]])
        .unwrap();
    sh.execute(
        "INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought,
                               next_thought_needed, prev_node, created_at)
         SELECT session_id, node_id, branch_id, thought_number, total_thoughts, thought, next_thought_needed,
                prev_node, created_at FROM temp.saved WHERE node_id = ?1",
        [&nodes[0]],
    )
    .unwrap();
    sh.execute(
        "UPDATE thoughts SET prev_node = ?1 WHERE node_id = ?2",
        [&nodes[0], &nodes[1]],
    )
    .unwrap();
    let report = store.repair().unwrap();
    assert_eq!(report.links_fixed, 0, "{report:?}");
    assert!(report.left_for_you.is_empty(), "{report:?}");
    assert_eq!(prev(&nodes[0]), None, "the first thought follows nothing");
    assert_eq!(prev(&nodes[1]).as_deref(), Some(nodes[0].as_str()));

    // A second thought that follows nothing, a number twice, and a number
    // out of range.
    let fourth = format!("{s}:4");
    insert(&fourth, None, 4, 4, None);
    let on_branch = format!("{s}:alt:4");
    insert(&on_branch, Some("alt"), 4, 4, None);
    let twice = format!("{s}:x3");
    insert(&twice, None, 3, 4, Some(&fourth));
    let huge = format!("{s}:5");
    insert(&huge, None, 5, 99_999_999_999, Some(&twice));
    let err = store
        .read_thoughts(
            &s,
            &thoughtbox::store::ThoughtQuery::main(thoughtbox::store::Pick::Last(10)),
        )
        .expect_err("the session no longer reads");
    assert!(err.to_string().contains("`thoughtbox repair` names the rows"), "{err}");
    let report = store.repair().unwrap();
    assert_eq!(report.links_fixed, 0, "{report:?}");
    let left = report.left_for_you.join("\n");
    assert_eq!(report.left_for_you.len(), 5, "{left}");
    assert!(
        left.contains(&format!("thought {twice}: its node id should be {s}:3")),
        "{left}"
    );
    assert!(left.contains(&format!("{huge}: total_thoughts 99999999999")), "{left}");
    assert!(
        left.contains(&format!("thought 3 more than once ({}, {twice})", nodes[2])),
        "{left}"
    );
    assert!(
        left.contains(&format!("on the main chain, {}, {fourth} follow no thought", nodes[0])),
        "{left}"
    );
    assert!(
        left.contains(&format!(
            "on branch alt, {on_branch} follows no thought; a branch's first thought follows its fork point {s}:2 \
             and each other one the thought before it on the branch"
        )),
        "{left}"
    );
    // Mended as the lines say, the ledger is sound again.
    sh.execute("UPDATE thoughts SET total_thoughts = 5 WHERE node_id = ?1", [&huge])
        .unwrap();
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&twice]).unwrap();
    sh.execute(
        "UPDATE thoughts SET prev_node = ?1 WHERE node_id = ?2",
        [&nodes[2], &fourth],
    )
    .unwrap();
    sh.execute(
        "UPDATE thoughts SET prev_node = ?1 WHERE node_id = ?2",
        [format!("{s}:alt:3"), on_branch.clone()],
    )
    .unwrap();
    let report = store.repair().unwrap();
    assert!(report.left_for_you.is_empty(), "{report:?}");
    let read = store
        .read_thoughts(
            &s,
            &thoughtbox::store::ThoughtQuery::main(thoughtbox::store::Pick::Last(10)),
        )
        .unwrap();
    assert_eq!(read.iter().filter(|t| t.data.branch_id.is_none()).count(), 5);
}

/// Version 8: rows written by hand that readers, exports and imports could
/// not rely on are refused, each with a message saying what the form is: a
/// second thought with a number its chain has, INSERT OR REPLACE of a
/// thought, a node id that does not match the row, a thought of no session,
/// timestamps in another form, an upper-case session id, settings the server
/// does not understand. Rows in the server's form go in.
#[test]
fn rows_not_in_the_servers_form_are_refused() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("checked")).unwrap().id;
    let nodes: Vec<String> = (1..=3)
        .map(|i| add(&store, &s, &format!("kestrel {i}"), None))
        .collect();
    let sh = shell(&store);
    // (A branch thought forking from thought 1, as version 12 requires.)
    let insert = |node: &str, branch: Option<&str>, number: i64, session: &str, at: &str| {
        sh.execute(
            "INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought,
                                   next_thought_needed, prev_node, created_at, branch_from_thought, branch_origin)
             VALUES (?1, ?2, ?3, ?4, 9, 'by hand', 1, NULL, ?5,
                     CASE WHEN ?3 IS NOT NULL THEN 1 END, CASE WHEN ?3 IS NOT NULL THEN ?1 || ':1' END)",
            rusqlite::params![session, node, branch, number, at],
        )
    };
    let now = "2026-11-23T08:42:10.000Z";
    let refused = |r: rusqlite::Result<usize>, says: &str| {
        let e = r.expect_err("refused").to_string();
        assert!(e.contains(says), "{e}");
    };
    refused(
        insert(&format!("{s}:2"), None, 2, &s, now),
        "has a thought with this number",
    );
    refused(insert(&format!("{s}:2b"), None, 2, &s, now), "thought");
    refused(
        insert(&format!("{s}:7"), None, 8, &s, now),
        "node_id is session_id:thought_number",
    );
    refused(
        insert(&format!("{s}:Alt:1"), Some("Alt"), 1, &s, now),
        "branch_id is 1 to 64",
    );
    let nowhere = "0b6f2c1e-8d4a-4c5e-9f3b-2a7d1e6c8b90";
    refused(
        insert(&format!("{nowhere}:1"), None, 1, nowhere, now),
        "existing session",
    );
    for at in ["2026-11-23 08:42:10", "tomorrow", "1732350000", "2026-11-23T08:42:10Z"] {
        refused(insert(&format!("{s}:9"), None, 9, &s, at), "UTC with milliseconds");
    }
    // INSERT OR REPLACE would delete the row behind the search index's back.
    refused(
        sh.execute(
            "INSERT OR REPLACE INTO thoughts (id, session_id, node_id, thought_number, total_thoughts, thought,
                                              next_thought_needed, created_at)
             SELECT id, session_id, node_id, thought_number, total_thoughts, 'pelicans', 1, created_at
             FROM thoughts WHERE node_id = ?1",
            [&nodes[2]],
        ),
        "never replaced",
    );
    assert_eq!(found(&store, "kestrel").len(), 3);
    assert!(found(&store, "pelicans").is_empty());
    refused(
        sh.execute(
            "UPDATE thoughts SET created_at = datetime('now') WHERE node_id = ?1",
            [&nodes[0]],
        ),
        "UTC with milliseconds",
    );
    refused(
        sh.execute("UPDATE sessions SET updated_at = 'tomorrow' WHERE id = ?1", [&s]),
        "UTC with milliseconds",
    );
    refused(
        sh.execute(
            "INSERT INTO sessions (id, title, created_at, updated_at, last_accessed_at)
             VALUES ('AAAAAAAA-8D4A-4C5E-9F3B-2A7D1E6C8B90', 'upper', ?1, ?1, ?1)",
            [now],
        ),
        "lower-case UUID",
    );
    for (key, value) in [
        ("disableThoughtLogging", "1"),
        ("disableThoughtLogging", "TRUE"),
        ("sessionPartitionGranularity", "hourly"),
        ("createdAt", "yesterday"),
    ] {
        refused(
            sh.execute("UPDATE config SET value = ?2 WHERE key = ?1", [key, value]),
            "disableThoughtLogging is true or false",
        );
    }
    // The server's own form goes in, by hand too.
    sh.execute(
        "UPDATE sessions SET updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now') WHERE id = ?1",
        [&s],
    )
    .unwrap();
    sh.execute(
        "UPDATE config SET value = 'true' WHERE key = 'disableThoughtLogging'",
        [],
    )
    .unwrap();
    insert(&format!("{s}:alt:1"), Some("alt"), 1, &s, now).unwrap();
    sh.execute(
        "INSERT INTO sessions (id, title, created_at, updated_at, last_accessed_at)
         VALUES ('aaaaaaaa-8d4a-4c5e-9f3b-2a7d1e6c8b90', 'by hand', ?1, ?1, ?1)",
        [now],
    )
    .unwrap();
    assert!(store.config().unwrap().disable_thought_logging);
    index_is_sound(&store);
}

/// Links set by hand into a loop (`repair` must not say it fixed a link every
/// run while changing nothing): `repair` counts only links it changes, and
/// names the loop for a person to break. A chain tail set by hand to a node
/// that does not exist: the next thought follows the chain's newest thought,
/// not the name given.
#[test]
fn loops_are_named_and_a_made_up_tail_is_not_followed() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("loop")).unwrap().id;
    let nodes: Vec<String> = (1..=5)
        .map(|i| add(&store, &s, &format!("thought {i}"), None))
        .collect();
    let sh = shell(&store);
    // 2 follows 4: 2 -> 4 -> 3 -> 2 go round, and 4 has two next thoughts.
    sh.execute(
        "UPDATE thoughts SET prev_node = ?1 WHERE node_id = ?2",
        [&nodes[3], &nodes[1]],
    )
    .unwrap();
    for _ in 0..2 {
        let report = store.repair().unwrap();
        assert_eq!(report.links_fixed, 0, "{report:?}");
        let left = report.left_for_you.join("\n");
        assert!(left.contains("in a loop"), "{left}");
        for n in &nodes[1..4] {
            assert!(left.contains(n.as_str()), "{n} named: {left}");
        }
    }
    sh.execute(
        "UPDATE thoughts SET prev_node = ?1 WHERE node_id = ?2",
        [&nodes[0], &nodes[1]],
    )
    .unwrap();
    assert!(store.repair().unwrap().left_for_you.is_empty());

    sh.execute("UPDATE sessions SET tail_node = 'garbage' WHERE id = ?1", [&s])
        .unwrap();
    let sixth = add(&store, &s, "thought 6", None);
    let prev: Option<String> = sh
        .query_row("SELECT prev_node FROM thoughts WHERE node_id = ?1", [&sixth], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(prev.as_deref(), Some(nodes[4].as_str()));
}

/// Rows a ledger may hold from before version 8 in the forms it refuses
/// now (of which `repair` said nothing): an upper-case session id, a time
/// that is no timestamp, a node id that does not match its row. `repair`
/// names each with what to do, and leaves them as they are.
#[test]
fn repair_names_rows_of_another_form_from_before_version_8() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("old rows")).unwrap().id;
    add(&store, &s, "one", None);
    let sh = shell(&store);
    sh.execute_batch(
        "DROP TRIGGER sessions_checked_insert; DROP TRIGGER sessions_times_checked_update;
         DROP TRIGGER thoughts_node_id_checked;",
    )
    .unwrap();
    let upper = "AAAAAAAA-8D4A-4C5E-9F3B-2A7D1E6C8B90";
    sh.execute(
        "INSERT INTO sessions (id, title, created_at, updated_at, last_accessed_at)
         VALUES (?1, 'upper', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
        [upper],
    )
    .unwrap();
    sh.execute("UPDATE sessions SET updated_at = 'tomorrow' WHERE id = ?1", [&s])
        .unwrap();
    sh.execute(
        "INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought, next_thought_needed,
                               prev_node, created_at)
         VALUES (?1, ?1 || ':tw''o', 2, 2, 'two', 1, ?1 || ':1', '2026-01-01T00:00:00.000Z')",
        [&s],
    )
    .unwrap();
    let report = store.repair().unwrap();
    let left = report.left_for_you.join("\n");
    assert_eq!(report.left_for_you.len(), 3, "{left}");
    assert!(
        left.contains(&format!("session {upper}: its id is not a lower-case UUID")),
        "{left}"
    );
    assert!(
        left.contains(&format!("sessions {s}: updated_at \"tomorrow\"")),
        "{left}"
    );
    // The id holds a quote: the SQL suggested for it doubles it, so that
    // pasted into sqlite3 it deletes that thought and nothing else.
    assert!(
        left.contains(&format!("thought {s}:tw''o: its node id should be {s}:2"))
            && left.contains(&format!("(DELETE FROM thoughts WHERE node_id = '{s}:tw''o')")),
        "{left}"
    );
}

/// Thought text over the server's 1 MiB limit is refused by hand too
/// (version 9): its session's export would be one no import takes back.
#[test]
fn thought_text_over_the_limit_is_refused() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("long")).unwrap().id;
    let node = add(&store, &s, "short heron", None);
    let sh = shell(&store);
    let limit = thoughtbox::domain::MAX_THOUGHT_BYTES;
    // Counted in bytes: 'é' is two of them.
    let over = "é".repeat(limit / 2) + "x";
    let e = sh
        .execute("UPDATE thoughts SET thought = ?2 WHERE node_id = ?1", [&node, &over])
        .expect_err("refused")
        .to_string();
    assert!(e.contains("at most 1 MiB"), "{e}");
    let e = sh
        .execute(
            "INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought,
                                   next_thought_needed, created_at)
             VALUES (?1, ?1 || ':2', 2, 2, ?2, 1, '2026-11-23T08:42:10.000Z')",
            [&s, &over],
        )
        .expect_err("refused")
        .to_string();
    assert!(e.contains("at most 1 MiB"), "{e}");
    let exact = "é".repeat(limit / 2);
    sh.execute("UPDATE thoughts SET thought = ?2 WHERE node_id = ?1", [&node, &exact])
        .unwrap();
    let read = store
        .read_thoughts(
            &s,
            &thoughtbox::store::ThoughtQuery::main(thoughtbox::store::Pick::Number(1)),
        )
        .unwrap();
    assert_eq!(read[0].data.thought, exact);
    // Such text from before version 9: repair names it.
    sh.execute_batch("DROP TRIGGER thoughts_text_checked_update").unwrap();
    sh.execute("UPDATE thoughts SET thought = ?2 WHERE node_id = ?1", [&node, &over])
        .unwrap();
    let report = store.repair().unwrap();
    let left = report.left_for_you.join("\n");
    assert_eq!(report.left_for_you.len(), 1, "{left}");
    assert!(
        left.contains(&format!("thought {node}: its text is {} bytes", limit + 1)),
        "{left}"
    );
}

/// `thought_latest_view` gives each thought the newest text recorded for it,
/// following revisions of revisions, per chain.
#[test]
fn the_latest_view_follows_revisions_of_revisions() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("revised")).unwrap().id;
    add(&store, &s, "first plan", None);
    add(&store, &s, "second step", None);
    let revise = |of: u32, text: &str, branch: Option<&str>| {
        store
            .append_thought(
                Target::Session(s.clone()),
                ThoughtInput {
                    revises_thought: Some(of),
                    branch_id: branch.map(str::to_string),
                    ..input(text)
                },
            )
            .expect("revision")
            .thought
            .data
            .thought_number
    };
    let r3 = revise(1, "first plan, better", None);
    revise(r3, "first plan, best", None);
    add(&store, &s, "alt start", Some(("alt", 2)));
    revise(3, "alt start, revised", Some("alt"));
    let rows: Vec<(String, i64, String, String, i64)> = shell(&store)
        .prepare(
            "SELECT chain, thought_number, original_thought, latest_thought, revisions
             FROM thought_latest_view WHERE session_id = ?1 ORDER BY id",
        )
        .unwrap()
        .query_map([&s], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let row = |c: &str, n: i64, o: &str, l: &str, k: i64| (c.to_string(), n, o.to_string(), l.to_string(), k);
    assert_eq!(
        rows,
        vec![
            row("main", 1, "first plan", "first plan, best", 2),
            row("main", 2, "second step", "second step", 0),
            row("branch:alt", 3, "alt start", "alt start, revised", 1),
        ]
    );
    // Revision links written by hand into a loop: those thoughts have no
    // original left to be the latest text of, and the view still answers.
    let sh = shell(&store);
    sh.execute(
        "UPDATE thoughts SET revises_node = ?1 || ':4', revises_thought = 4 WHERE node_id = ?1 || ':3'",
        [&s],
    )
    .unwrap();
    let n: i64 = sh
        .query_row(
            "SELECT count(*) FROM thought_latest_view WHERE session_id = ?1",
            [&s],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 3);
    // A revision of a thought that is gone is an original of its own
    // (version 10), and a link set to another session's thought does not
    // bring that session's text in.
    sh.execute(
        "UPDATE thoughts SET revises_node = ?1 || ':99', revises_thought = 99 WHERE node_id = ?1 || ':3'",
        [&s],
    )
    .unwrap();
    let other = store.create_session(NewSession::titled("other")).unwrap().id;
    add(&store, &other, "someone else's text", None);
    // Refused since version 11; a ledger from before may hold it.
    sh.execute_batch("DROP TRIGGER thoughts_revision_checked_update")
        .unwrap();
    sh.execute(
        "UPDATE thoughts SET revises_node = ?2 || ':2', revises_thought = 2 WHERE node_id = ?1 || ':1'",
        [&other, &s],
    )
    .unwrap();
    // Nor is it one of the revisions reads name.
    let node = format!("{s}:2");
    assert!(store.revised_by_nodes(&s, [node.as_str()]).unwrap().is_empty());
    let whole = store.with_session(&s, |snapshot| snapshot.revised_by()).unwrap();
    assert!(!whole.contains_key(&node));
    let rows: Vec<(i64, String, i64)> = sh
        .prepare(
            "SELECT thought_number, latest_thought, revisions FROM thought_latest_view
             WHERE session_id = ?1 ORDER BY id",
        )
        .unwrap()
        .query_map([&s], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(
        rows,
        vec![
            (1, "first plan".to_string(), 0),
            (2, "second step".to_string(), 0),
            (3, "first plan, best".to_string(), 1),
            (3, "alt start, revised".to_string(), 1),
        ]
    );
    let other_rows: i64 = sh
        .query_row(
            "SELECT count(*) FROM thought_latest_view WHERE session_id = ?1",
            [&other],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(other_rows, 1);
}

/// Version 11: `revises_thought` and `revises_node` name one thought of the
/// row's own chain (reads show the one and follow the other), and no thought
/// revises itself. A hand edit or insert that breaks that is refused; one
/// that changes both together goes in. Such rows from before version 11 can
/// still have their other columns edited, and `repair` names them with the
/// statement that mends them.
#[test]
fn revision_links_that_disagree_are_refused() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("revised")).unwrap().id;
    add(&store, &s, "first plan", None);
    add(&store, &s, "second step", None);
    let revise = |of: u32, branch: Option<&str>| {
        store
            .append_thought(
                Target::Session(s.clone()),
                ThoughtInput {
                    revises_thought: Some(of),
                    branch_id: branch.map(str::to_string),
                    ..input(&format!("revising {of}"))
                },
            )
            .expect("revision")
            .thought
            .node_id
    };
    let three = revise(1, None);
    assert_eq!(three, format!("{s}:3"));
    add(&store, &s, "alt start", Some(("alt", 2)));
    let alt4 = revise(3, Some("alt"));
    assert_eq!(alt4, format!("{s}:alt:4"));
    let other = store.create_session(NewSession::titled("other")).unwrap().id;
    add(&store, &other, "someone else's", None);
    let sh = shell(&store);
    let says = "revises_node names the thought revises_thought names";
    let refused = |r: rusqlite::Result<usize>, what: &str| {
        let e = r.expect_err(what).to_string();
        assert!(e.contains(says) && e.contains("cannot revise itself"), "{what}: {e}");
    };
    for (node, set) in [
        (&three, "revises_thought = 2".to_string()),
        (&three, format!("revises_node = '{s}:2'")),
        (&three, "revises_thought = NULL".to_string()),
        (&three, "revises_node = NULL".to_string()),
        (&three, format!("revises_node = '{other}:1'")),
        (&three, format!("revises_thought = 3, revises_node = '{s}:3'")),
        // The main chain's thought 3 from the branch.
        (&alt4, format!("revises_node = '{s}:3'")),
        (&format!("{s}:2"), format!("revises_node = '{s}:1'")),
    ] {
        refused(
            sh.execute(&format!("UPDATE thoughts SET {set} WHERE node_id = ?1"), [node]),
            &set,
        );
    }
    let insert = |n: u32, revises: Option<u32>, node: Option<String>| {
        sh.execute(
            "INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought, next_thought_needed,
                                   is_revision, revises_thought, revises_node, prev_node, created_at)
             VALUES (?1, ?1 || ':' || ?2, ?2, ?2, 'by hand', 1, ?3 IS NOT NULL, ?3, ?4, ?1 || ':3',
                     '2026-11-23T08:42:10.000Z')",
            rusqlite::params![s, n, revises, node],
        )
    };
    refused(insert(4, Some(1), Some(format!("{s}:2"))), "insert, another thought");
    refused(insert(4, Some(1), None), "insert, no node");
    refused(insert(4, None, Some(format!("{s}:1"))), "insert, no number");
    refused(insert(4, Some(4), Some(format!("{s}:4"))), "insert, itself");

    // Both together: reads and the view follow the new link.
    sh.execute(
        "UPDATE thoughts SET revises_thought = 2, revises_node = ?1 || ':2' WHERE node_id = ?1 || ':3'",
        [&s],
    )
    .unwrap();
    let read = store
        .read_thoughts(
            &s,
            &thoughtbox::store::ThoughtQuery::main(thoughtbox::store::Pick::Number(3)),
        )
        .unwrap();
    assert_eq!(read[0].data.revises_thought, Some(2));
    let latest: String = sh
        .query_row(
            "SELECT latest_thought FROM thought_latest_view WHERE node_id = ?1 || ':2'",
            [&s],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(latest, "revising 1");
    insert(4, Some(1), Some(format!("{s}:1"))).expect("agreeing links go in");

    // Rows from before version 11.
    let sql: String = sh
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'thoughts_revision_checked_update'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    sh.execute_batch("DROP TRIGGER thoughts_revision_checked_update")
        .unwrap();
    let mid = format!("{s}:2");
    for (node, set) in [
        (&three, format!("revises_node = '{s}:1'")),
        (&alt4, "revises_thought = NULL".to_string()),
        (&mid, format!("revises_thought = 2, revises_node = '{s}:2'")),
    ] {
        sh.execute(&format!("UPDATE thoughts SET {set} WHERE node_id = ?1"), [node])
            .unwrap();
    }
    sh.execute_batch(&sql).unwrap();
    sh.execute(
        "UPDATE thoughts SET thought = 'edited as ever' WHERE node_id = ?1",
        [&three],
    )
    .expect("their other columns can change");
    let report = store.repair().unwrap();
    let left = report.left_for_you.join("\n");
    assert_eq!(report.left_for_you.len(), 3, "{left}");
    for line in [
        format!(
            "thought {three}: revises_thought 2 and revises_node {s}:1 name different thoughts (answers show the \
             one, structure and thought_latest_view follow the other), so its session's export cannot be imported; \
             UPDATE thoughts SET revises_node = '{s}:2' WHERE node_id = '{three}' if it revises thought 2"
        ),
        format!("thought {alt4}: revises_node {s}:alt:3 is set without revises_thought"),
        format!("thought {mid} revises itself"),
    ] {
        assert!(left.contains(&line), "{line}\n{left}");
    }
    // Mended as the lines say.
    sh.execute(
        "UPDATE thoughts SET revises_node = ?1 || ':2' WHERE node_id = ?2",
        [&s, &three],
    )
    .unwrap();
    sh.execute("UPDATE thoughts SET revises_thought = 3 WHERE node_id = ?1", [&alt4])
        .unwrap();
    sh.execute(
        "UPDATE thoughts SET revises_thought = NULL, revises_node = NULL WHERE node_id = ?1",
        [&mid],
    )
    .unwrap();
    assert!(store.repair().unwrap().left_for_you.is_empty());
}

/// A branch whose row was deleted on its own (before version 4 refused
/// that), not repaired yet: a read of the whole session still gives its
/// thoughts, after the branches that have rows, which come in creation order.
#[test]
fn a_branch_without_its_row_is_still_read_after_the_others() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("r")).unwrap().id;
    add(&store, &s, "one", None);
    for b in ["zeta", "lost", "alpha"] {
        add(&store, &s, &format!("on {b}"), Some((b, 1)));
        // Times in milliseconds: in the same one, by id.
        std::thread::sleep(std::time::Duration::from_millis(3));
    }
    let sh = shell(&store);
    sh.execute_batch("DROP TRIGGER branches_kept_while_used").unwrap();
    sh.execute(
        "DELETE FROM branches WHERE session_id = ?1 AND branch_id = 'lost'",
        [&s],
    )
    .unwrap();
    let mut read = Vec::new();
    store
        .with_session(&s, |snapshot| {
            snapshot.each_thought(&mut |t| {
                read.push(t.data.thought);
                Ok(())
            })
        })
        .unwrap();
    assert_eq!(read, ["one", "on zeta", "on alpha", "on lost"]);
}

/// The names of the triggers version 12 added to `thoughts` for fork points
/// and critiques, with their SQL, dropped to write rows as a ledger from
/// before may hold them and put back after.
fn without_v12_checks(sh: &Connection, f: impl FnOnce()) {
    let saved: Vec<String> = sh
        .prepare(
            "SELECT sql FROM sqlite_master WHERE type = 'trigger'
               AND (name LIKE 'thoughts_fork_%' OR name LIKE 'thoughts_critique_%')",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    assert_eq!(saved.len(), 3, "{saved:?}");
    sh.execute_batch(
        "DROP TRIGGER thoughts_fork_checked_insert; DROP TRIGGER thoughts_fork_checked_update;
         DROP TRIGGER thoughts_critique_checked_update;",
    )
    .unwrap();
    f();
    for sql in saved {
        sh.execute_batch(&sql).unwrap();
    }
}

/// Version 12: a fork point written by hand that an import would refuse is
/// refused: one on a main-chain thought, one that differs from its branch's,
/// one naming no main-chain thought, a branch thought with none. Each gets
/// the message saying what is wrong; rows in the server's form go in.
#[test]
fn fork_points_written_by_hand_are_refused() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("forks")).unwrap().id;
    for i in 1..=3 {
        add(&store, &s, &format!("main {i}"), None);
    }
    let alt3 = add(&store, &s, "alt start", Some(("alt", 2)));
    assert_eq!(alt3, format!("{s}:alt:3"));
    let sh = shell(&store);
    let main = "a main-chain thought forks from nothing";
    let form = "names the main-chain thought its branch forks from twice";
    let agree = "a branch has one fork point";
    let exists = "branch_origin (session_id:branch_from_thought) names no such thought";
    let refused = |r: rusqlite::Result<usize>, says: &str, what: &str| {
        let e = r.expect_err(what).to_string();
        assert!(e.contains(says), "{what}: {e}");
    };
    for (node, set, says) in [
        // The branch's origin moved to a thought that does not exist.
        (&alt3, format!("branch_origin = '{s}:9'"), form),
        (&alt3, "branch_from_thought = 9".to_string(), form),
        (&alt3, "branch_origin = NULL".to_string(), form),
        (
            &alt3,
            format!("branch_from_thought = 1, branch_origin = '{s}:1'"),
            agree,
        ),
        (
            &alt3,
            format!("branch_from_thought = 9, branch_origin = '{s}:9'"),
            agree,
        ),
        (&format!("{s}:2"), format!("branch_origin = '{s}:1'"), main),
        (&format!("{s}:2"), "branch_from_thought = 1".to_string(), main),
    ] {
        refused(
            sh.execute(&format!("UPDATE thoughts SET {set} WHERE node_id = ?1"), [node]),
            says,
            &set,
        );
    }
    let insert = |branch: Option<&str>, n: u32, from: Option<u32>, origin: Option<String>, prev: Option<String>| {
        sh.execute(
            "INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought,
                                   next_thought_needed, branch_from_thought, branch_origin, prev_node, created_at)
             VALUES (?1, ?1 || ':' || coalesce(?2 || ':', '') || ?3, ?2, ?3, ?3, 'by hand', 1, ?4, ?5, ?6,
                     '2026-11-23T08:42:10.000Z')",
            rusqlite::params![s, branch, n, from, origin, prev],
        )
    };
    let o = |n: u32| Some(format!("{s}:{n}"));
    // A branch thought with neither prev_node nor a fork point.
    refused(insert(Some("alt"), 4, None, None, None), form, "no fork point");
    refused(
        insert(Some("solo"), 3, None, None, None),
        form,
        "a new branch, no fork point",
    );
    refused(
        insert(Some("alt"), 4, Some(1), o(1), Some(alt3.clone())),
        agree,
        "another fork",
    );
    refused(
        insert(Some("nb"), 10, Some(9), o(9), o(9)),
        exists,
        "a fork that is no thought",
    );
    refused(
        insert(Some("nb"), 10, Some(2), Some(alt3.clone()), o(2)),
        form,
        "a branch thought as the fork",
    );
    refused(
        insert(None, 4, Some(2), None, o(3)),
        main,
        "a main-chain thought with a fork",
    );
    refused(
        insert(None, 4, None, o(2), o(3)),
        main,
        "a main-chain thought with an origin",
    );
    refused(
        sh.execute(
            "INSERT INTO branches (session_id, branch_id, from_thought, origin_node, created_at)
             VALUES (?1, 'rowonly', 9, ?1 || ':9', '2026-11-23T08:42:10.000Z')",
            [&s],
        ),
        "a branch forks from a thought of its session's main chain",
        "a branch row forking from nothing",
    );
    // In the server's form they go in; the session reads and exports whole.
    insert(Some("alt"), 4, Some(2), o(2), Some(alt3.clone())).expect("a branch thought as the server writes it");
    insert(None, 4, None, None, o(3)).expect("a main-chain thought");
    assert_eq!(
        store
            .read_thoughts(
                &s,
                &thoughtbox::store::ThoughtQuery::main(thoughtbox::store::Pick::Last(10))
            )
            .unwrap()
            .len(),
        4
    );
    assert_eq!(store.structure(&s).unwrap().thoughts, 6);
    assert!(store.repair().unwrap().left_for_you.is_empty());
}

/// A branch thought inserted by hand, fully linked, gets its branch row
/// from `repair` (the server sees no branch until then, and the next thought
/// on it is asked for branchFromThought; a trigger giving it the row would
/// cost every append, see migration V12). The session counts the branch then;
/// deleting its thought uncounts it.
#[test]
fn a_branch_thought_inserted_by_hand_gets_its_branch_from_repair() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("hand branch")).unwrap().id;
    add(&store, &s, "one", None);
    let two = add(&store, &s, "two", None);
    add(&store, &s, "on alt", Some(("alt", 1)));
    assert_eq!(counts(&store, &s).1, 1);
    let sh = shell(&store);
    sh.execute(
        "INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought,
                               next_thought_needed, branch_from_thought, branch_origin, prev_node, created_at)
         VALUES (?1, ?1 || ':hb:3', 'hb', 3, 3, 'by hand', 1, 2, ?2, ?2, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
        [&s, &two],
    )
    .unwrap();
    assert!(store.branches(&s).unwrap().iter().all(|b| b.id != "hb"));
    let report = store.repair().unwrap();
    assert_eq!(report.branches_restored, 1, "{report:?}");
    let branches = store.branches(&s).unwrap();
    let hb = branches.iter().find(|b| b.id == "hb").expect("the branch is there");
    assert_eq!(
        (hb.from_thought, hb.origin_node.as_str(), hb.count),
        (2, two.as_str(), 1)
    );
    assert_eq!(counts(&store, &s).1, 2, "the session counts it");
    // The next thought on it needs no fork point, follows the one by hand.
    let next = store
        .append_thought(
            Target::Session(s.clone()),
            ThoughtInput {
                branch_id: Some("hb".into()),
                ..input("continued")
            },
        )
        .expect("the branch continues");
    assert_eq!(next.thought.node_id, format!("{s}:hb:4"));
    assert_eq!(next.thought.prev_node, Some(format!("{s}:hb:3")));
    assert!(!next.new_branch);
    assert_eq!(counts(&store, &s).1, 2, "counted once");
    // A branch the server begins is counted once too, its row written by it.
    let new = add(&store, &s, "on new", Some(("new", 2)));
    assert_eq!(counts(&store, &s).1, 3);
    assert_eq!(
        store
            .branches(&s)
            .unwrap()
            .iter()
            .find(|b| b.id == "new")
            .map(|b| b.count),
        Some(1)
    );
    sh.execute("DELETE FROM thoughts WHERE node_id = ?1", [&new]).unwrap();
    assert_eq!(counts(&store, &s).1, 2);
    let report = store.repair().unwrap();
    assert!(report.left_for_you.is_empty(), "{report:?}");
    assert_eq!(report.branches_restored, 0, "{report:?}");
}

/// Version 12: a critique written by hand has the shape the server stores,
/// or reads and exports would leave it out.
#[test]
fn critiques_of_another_shape_are_refused() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("critiqued")).unwrap().id;
    let node = add(&store, &s, "one", None);
    let sh = shell(&store);
    for bad in [
        r#"{"text":1}"#,
        r#"{"text":"t","model":"m"}"#,
        r#"{"text":"t","model":"m","timestamp":"yesterday"}"#,
        r#"{"text":"t","model":null,"timestamp":"2026-11-23T08:42:10.000Z"}"#,
        r#"["t","m","2026-11-23T08:42:10.000Z"]"#,
        r#""just text""#,
    ] {
        let e = sh
            .execute("UPDATE thoughts SET critique = ?2 WHERE node_id = ?1", [&node, bad])
            .expect_err(bad)
            .to_string();
        assert!(e.contains("a critique is a JSON object"), "{bad}: {e}");
    }
    let e = sh
        .execute(
            "INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought, next_thought_needed,
                                   prev_node, critique, created_at)
             VALUES (?1, ?1 || ':2', 2, 2, 'by hand', 1, ?2, '{\"text\":1}', '2026-11-23T08:42:10.000Z')",
            [&s, &node],
        )
        .expect_err("insert")
        .to_string();
    assert!(e.contains("a critique is a JSON object"), "{e}");
    let good = r#"{"text":"fine","model":"m","timestamp":"2026-11-23T08:42:10.000Z","extra":true}"#;
    sh.execute("UPDATE thoughts SET critique = ?2 WHERE node_id = ?1", [&node, good])
        .unwrap();
    let read = store
        .read_thoughts(
            &s,
            &thoughtbox::store::ThoughtQuery::main(thoughtbox::store::Pick::Number(1)),
        )
        .unwrap();
    assert_eq!(read[0].data.critique.as_ref().map(|c| c.text.as_str()), Some("fine"));
    sh.execute("UPDATE thoughts SET critique = NULL WHERE node_id = ?1", [&node])
        .unwrap();
}

/// Fork points and critiques written by hand before version 12: `repair`
/// names each with the statement that mends it, links a branch's only
/// thought that follows nothing to the fork point itself, no longer makes
/// up a fork point for a branch that names none, and once the lines are
/// followed the ledger is sound.
#[test]
fn repair_names_fork_points_and_critiques_from_before_version_12() {
    let (_d, store) = temp_store();
    let s = store.create_session(NewSession::titled("old rows")).unwrap().id;
    for i in 1..=3 {
        add(&store, &s, &format!("main {i}"), None);
    }
    let alt3 = add(&store, &s, "alt start", Some(("alt", 2)));
    let two = format!("{s}:2");
    let sh = shell(&store);
    let insert = |branch: &str, n: u32, from: Option<u32>, origin: Option<&str>| {
        sh.execute(
            "INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought,
                                   next_thought_needed, branch_from_thought, branch_origin, created_at)
             VALUES (?1, ?1 || ':' || ?2 || ':' || ?3, ?2, ?3, ?3, 'by hand', 1, ?4, ?5,
                     '2026-11-23T08:42:10.000Z')",
            rusqlite::params![s, branch, n, from, origin],
        )
        .unwrap();
    };
    without_v12_checks(&sh, || {
        sh.execute(
            "UPDATE thoughts SET branch_origin = ?2 || ':9' WHERE node_id = ?1",
            [&alt3, &s],
        )
        .unwrap();
        sh.execute(
            "UPDATE thoughts SET branch_origin = ?2 || ':1' WHERE node_id = ?1",
            [&two, &s],
        )
        .unwrap();
        // One thought of a branch, no prev_node and no fork point.
        insert("solo", 3, None, None);
        // One thought of a branch with its fork point but no prev_node.
        insert("head", 3, Some(1), Some(&format!("{s}:1")));
        sh.execute(
            "UPDATE thoughts SET critique = '{\"text\":1}' WHERE node_id = ?1 || ':3'",
            [&s],
        )
        .unwrap();
    });
    let report = store.repair().unwrap();
    let left = report.left_for_you.join("\n");
    // `head` got its row back and follows its fork point; `solo` got none.
    assert_eq!(report.branches_restored, 1, "{report:?}");
    assert_eq!(report.links_fixed, 1, "{report:?}");
    let branches = store.branches(&s).unwrap();
    let mut ids: Vec<&str> = branches.iter().map(|b| b.id.as_str()).collect();
    ids.sort_unstable();
    assert_eq!(ids, ["alt", "head"], "{branches:?}");
    for line in [
        format!(
            "thought {alt3}: branch alt forks from {two}, but this thought names branch_origin {s}:9 and \
             branch_from_thought 2; a branch has one fork point, so its session's export cannot be imported; \
             UPDATE thoughts SET branch_from_thought = 2, branch_origin = '{two}' WHERE node_id = '{alt3}'"
        ),
        format!(
            "thought {two} is on the main chain but names a fork point (branch_origin {s}:1, branch_from_thought \
             NULL), so its session's export cannot be imported; UPDATE thoughts SET branch_origin = NULL, \
             branch_from_thought = NULL WHERE node_id = '{two}'"
        ),
        format!("session {s}: branch solo ({s}:solo:3) names no fork point that is a thought of the main chain"),
        format!(
            "session {s}: on branch solo, {s}:solo:3 follows no thought; a branch's first thought follows its fork \
             point (the branch names none yet"
        ),
        format!("thought {s}:3: its critique is not an object of three strings"),
    ] {
        assert!(left.contains(&line), "{line}\n---\n{left}");
    }
    assert_eq!(report.left_for_you.len(), 5, "{left}");
    assert!(!left.contains("set the prev_node of each but the first"), "{left}");
    // Mended as the lines say (the branch's fork point given in one
    // statement, which gives it its row), the ledger is sound.
    sh.execute(
        "UPDATE thoughts SET branch_from_thought = 2, branch_origin = ?2 WHERE node_id = ?1",
        [&alt3, &two],
    )
    .unwrap();
    sh.execute(
        "UPDATE thoughts SET branch_origin = NULL, branch_from_thought = NULL WHERE node_id = ?1",
        [&two],
    )
    .unwrap();
    sh.execute(
        "UPDATE thoughts SET branch_from_thought = 1, branch_origin = ?1 || ':' || 1
         WHERE session_id = ?1 AND branch_id = 'solo'",
        [&s],
    )
    .unwrap();
    assert!(
        store.branches(&s).unwrap().iter().any(|b| b.id == "solo"),
        "given its row"
    );
    sh.execute("UPDATE thoughts SET critique = NULL WHERE node_id = ?1 || ':3'", [&s])
        .unwrap();
    let report = store.repair().unwrap();
    assert!(report.left_for_you.is_empty(), "{report:?}");
    let prev: Option<String> = sh
        .query_row(
            "SELECT prev_node FROM thoughts WHERE node_id = ?1 || ':solo:3'",
            [&s],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(prev, Some(format!("{s}:1")), "linked to its fork point by the repair");
}
