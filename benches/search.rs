//! Search and listing over a large ledger: 1,000,000 thoughts of ~550
//! characters in 10,000 sessions. The database is built once and kept in
//! target/bench-data/ (delete it to rebuild).
//!
//!   cargo bench --bench search
//!
//! Ranking under test: BM25 over the newest 1,000 matches (see src/store/search.rs).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::params;
use thoughtbox::domain::{NewSession, SessionFilter};
use thoughtbox::store::{OpenOptionsStore, Store};

const SESSIONS: usize = 10_000;
const PER_SESSION: usize = 100;

/// Deterministic pseudo-random numbers (xorshift), so every build is the same.
mod common;
use common::{Rng, stats};

/// A vocabulary of 5,000 made-up words; picks are skewed so that some
/// words are common and most are rare, as in real text.
fn vocabulary() -> Vec<String> {
    let syllables = [
        "ka", "lo", "mi", "ren", "tu", "sa", "vel", "dor", "pi", "qua", "zen", "mo", "ra", "li", "ten", "go",
    ];
    let mut rng = Rng(7);
    (0..5000)
        .map(|_| {
            let n = 2 + (rng.next() % 3) as usize;
            (0..n)
                .map(|_| syllables[(rng.next() % syllables.len() as u64) as usize])
                .collect::<String>()
        })
        .collect()
}

fn thought_text(rng: &mut Rng, vocab: &[String], i: usize) -> String {
    // "ledger" is in every thought; "quasar" in one thought of 100,000.
    let mut s = String::from("ledger ");
    if i % 100_000 == 4_242 {
        s.push_str("quasar ");
    }
    while s.len() < 550 {
        // Square a uniform draw in [0, 1) to skew towards low indexes:
        // a few words are common, most are rare.
        let r = rng.next() % 1_000_000;
        let idx = ((r * r / 1_000_000) * vocab.len() as u64 / 1_000_000) as usize;
        s.push_str(&vocab[idx]);
        s.push(' ');
    }
    s
}

fn build(path: &Path) {
    let t0 = Instant::now();
    let store = Store::open(path, OpenOptionsStore::default()).expect("open");
    let mut ids = Vec::with_capacity(SESSIONS);
    for i in 0..SESSIONS {
        ids.push(
            store
                .create_session(NewSession {
                    title: format!("Session {i} about topic {}", i % 97),
                    tags: vec![format!("project:p{}", i % 10)],
                    ..Default::default()
                })
                .expect("session")
                .id,
        );
    }
    drop(store);
    let mut conn = rusqlite::Connection::open(path).expect("conn");
    conn.pragma_update(None, "synchronous", "OFF").expect("pragma");
    let vocab = vocabulary();
    let mut rng = Rng(42);
    let mut i = 0usize;
    // Interleave sessions so rowid order is not session order.
    for round in 0..PER_SESSION / 10 {
        let tx = conn.transaction().expect("tx");
        {
            let mut insert = tx
                .prepare(
                    "INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought, next_thought_needed, prev_node, created_at)
                     VALUES (?1, ?2, ?3, ?3, ?4, 1, ?5, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                )
                .expect("prepare");
            for sid in &ids {
                for k in 0..10 {
                    let n = round * 10 + k + 1;
                    let prev = (n > 1).then(|| format!("{sid}:{}", n - 1));
                    insert
                        .execute(params![
                            sid,
                            format!("{sid}:{n}"),
                            n as i64,
                            thought_text(&mut rng, &vocab, i),
                            prev
                        ])
                        .expect("insert");
                    i += 1;
                }
            }
        }
        tx.execute("UPDATE sessions SET thought_count = thought_count + 10, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')", []).expect("update");
        tx.commit().expect("commit");
    }
    eprintln!(
        "inserted {i} thoughts in {:.0} s; building the full-text index...",
        t0.elapsed().as_secs_f64()
    );
    conn.execute("INSERT INTO thoughts_fts (thoughts_fts) VALUES ('rebuild')", [])
        .expect("rebuild");
    conn.execute(
        "UPDATE thoughts_fts_state SET indexed_through = (SELECT MAX(id) FROM thoughts)",
        [],
    )
    .expect("watermark");
    conn.execute("INSERT INTO thoughts_fts (thoughts_fts) VALUES ('optimize')", [])
        .expect("optimize");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    eprintln!("built {} in {:.0} s", path.display(), t0.elapsed().as_secs_f64());
}

fn time<T>(runs: usize, mut f: impl FnMut() -> T) -> Vec<Duration> {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(f());
            t.elapsed()
        })
        .collect()
}

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).expect("bench dir");
    let path = dir.join("search-1m.db");
    let complete = Store::open(&path, OpenOptionsStore::default())
        .and_then(|s| s.counts())
        .map(|(s, t)| s == SESSIONS as u64 && t == (SESSIONS * PER_SESSION) as u64)
        .unwrap_or(false);
    if !complete {
        let _ = std::fs::remove_file(&path);
        build(&path);
    }
    let store = Store::open(&path, OpenOptionsStore::default()).expect("open");
    let (sessions, thoughts) = store.counts().expect("counts");
    println!("ledger: {sessions} sessions, {thoughts} thoughts");

    // Warm the page cache as a running server would be.
    store.search_thoughts("ledger", 20).expect("warm");
    let rare = store.search_thoughts("quasar", 20).expect("rare");
    assert_eq!(rare.len(), 10);
    stats(
        "search thoughts, rare term (10 matches)",
        time(300, || store.search_thoughts("quasar", 20).expect("search")),
    );
    stats(
        "search thoughts, term in every thought",
        time(300, || store.search_thoughts("ledger", 20).expect("search")),
    );
    assert_eq!(store.search_thoughts("ledger quasar", 20).expect("mixed").len(), 10);
    stats(
        "search thoughts, a common and a rare word",
        time(300, || store.search_thoughts("ledger quasar", 20).expect("search")),
    );
    stats(
        "session search (sessions + thoughts), rare term",
        time(300, || store.search("quasar", 10, 5).expect("search")),
    );
    stats(
        "session search (sessions + thoughts), term in every thought",
        time(300, || store.search("ledger", 10, 5).expect("search")),
    );
    let filter = SessionFilter::default();
    stats(
        "session list, 20 newest by updatedAt",
        time(1000, || store.list_sessions(&filter).expect("list")),
    );
    let filter = SessionFilter {
        tags: vec!["project:p3".into()],
        ..Default::default()
    };
    stats(
        "session list, tag filter (1,000 of 10,000 match)",
        time(1000, || store.list_sessions(&filter).expect("list")),
    );

    let conn = rusqlite::Connection::open(&path).expect("conn");
    let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).expect("page size");
    let pages: i64 = conn.query_row("PRAGMA page_count", [], |r| r.get(0)).expect("pages");
    let text: i64 = conn
        .query_row("SELECT sum(length(CAST(thought AS BLOB))) FROM thoughts", [], |r| {
            r.get(0)
        })
        .expect("text");
    let fts: i64 = conn
        .query_row("SELECT sum(length(block)) FROM thoughts_fts_data", [], |r| r.get(0))
        .expect("fts");
    let total = page_size * pages;
    let per_k = |bytes: i64| bytes as f64 / (thoughts as f64 / 1000.0) / 1024.0;
    println!(
        "size: {:.0} MiB in all = {:.0} KiB per 1,000 thoughts (thought text {:.0} KiB, FTS index {:.0} KiB, ids, links and indexes the rest)",
        total as f64 / (1024.0 * 1024.0),
        per_k(total),
        per_k(text),
        per_k(fts)
    );
}
