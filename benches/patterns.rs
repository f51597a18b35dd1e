//! Knowledge pattern search at 1,000, 10,000 and 50,000 patterns: the
//! `knowledge` operation's `search` (patterns only) and `list_patterns` with
//! a `search` text, for a rare word (10 patterns at every size) and a word in
//! every pattern. A garden grows this big over months of an agent's
//! learnings. The ledgers are built once and kept in target/bench-data/
//! (delete them to rebuild).
//!
//!   cargo bench --bench patterns                  (all three sizes)
//!   cargo bench --bench patterns -- 10000 title   (one size, the cases
//!                                                  whose name holds "title")
//!
//! Ranking under test: see `ranked_tx` in src/store/knowledge.rs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use thoughtbox::domain::{SortBy, SortOrder};
use thoughtbox::knowledge::{NewPattern, PatternFilter};
use thoughtbox::store::{OpenOptionsStore, Store};

const SIZES: [usize; 3] = [1_000, 10_000, 50_000];

/// In every pattern's content.
const COMMON: &str = "service";
/// In 10 patterns at every size.
const RARE: &str = "quasar";

/// Deterministic pseudo-random numbers (xorshift), so every build is the same.
mod common;
use common::{Rng, stats};

/// One of `from`, uniformly.
fn pick<'a>(rng: &mut Rng, from: &[&'a str]) -> &'a str {
    from[(rng.next() % from.len() as u64) as usize]
}

/// Words of an engineering learning; picks are skewed towards the first
/// ones, so that some are common and most are not, as in real text.
const WORDS: &[&str] = &[
    "the",
    "a",
    "cache",
    "request",
    "retry",
    "deploy",
    "timeout",
    "database",
    "query",
    "index",
    "lock",
    "thread",
    "queue",
    "latency",
    "error",
    "budget",
    "rollback",
    "schema",
    "migration",
    "token",
    "session",
    "client",
    "server",
    "pool",
    "connection",
    "backoff",
    "jitter",
    "partition",
    "replica",
    "leader",
    "election",
    "snapshot",
    "compaction",
    "throughput",
    "metric",
    "alert",
    "dashboard",
    "incident",
    "postmortem",
    "feature",
    "flag",
    "canary",
    "release",
    "config",
    "secret",
    "rotation",
    "certificate",
    "handshake",
    "payload",
    "serializer",
    "parser",
    "buffer",
    "stream",
    "batch",
    "window",
    "watermark",
    "checkpoint",
    "idempotent",
    "consumer",
    "producer",
    "offset",
    "shard",
    "tenant",
    "quota",
    "limit",
    "throttle",
    "circuit",
    "breaker",
    "fallback",
    "degraded",
    "health",
    "probe",
    "readiness",
    "liveness",
    "container",
    "image",
    "layer",
    "registry",
    "build",
    "pipeline",
    "test",
    "flaky",
    "fixture",
    "mock",
    "contract",
    "version",
    "compatibility",
    "deprecation",
    "endpoint",
    "gateway",
    "proxy",
    "header",
    "cookie",
    "redirect",
    "encoding",
    "unicode",
    "locale",
    "timezone",
    "clock",
    "skew",
    "drift",
    "ordering",
    "causality",
];
const TAGS: &[&str] = &[
    "ops",
    "debugging",
    "performance",
    "architecture",
    "testing",
    "security",
    "data",
    "deploy",
    "frontend",
    "api",
    "learning",
    "anti-pattern",
    "concurrency",
    "storage",
    "networking",
];

fn words(rng: &mut Rng, chars: usize) -> String {
    let mut s = String::new();
    while s.len() < chars {
        // Square a uniform draw in [0, 1) to skew towards low indexes.
        let r = rng.next() % 1_000_000;
        let idx = ((r * r / 1_000_000) * WORDS.len() as u64 / 1_000_000) as usize;
        s.push_str(WORDS[idx]);
        s.push(' ');
    }
    s.trim_end().to_string()
}

/// A pattern as an agent writes one: a title, a sentence of description,
/// a few hundred characters of content, two or three tags.
fn pattern(rng: &mut Rng, i: usize, n: usize) -> NewPattern {
    let topic = words(rng, 25);
    let mut content = format!("When the {COMMON} {}. ", words(rng, 120));
    if i % (n / 10) == 42 {
        content.push_str(&format!("The {RARE} case: "));
    }
    content.push_str(&words(rng, 280));
    content.push('.');
    let mut tags = vec![pick(rng, TAGS).to_string(), pick(rng, TAGS).to_string()];
    if rng.next().is_multiple_of(2) {
        tags.push(pick(rng, TAGS).to_string());
    }
    tags.sort();
    tags.dedup();
    NewPattern {
        title: format!("{} {i}", topic),
        description: format!("A learning about {}.", words(rng, 60)),
        tags,
        content,
        ..Default::default()
    }
}

fn build(path: &Path, n: usize) {
    let t0 = Instant::now();
    let store = Store::open(path, OpenOptionsStore::default()).expect("open");
    let mut rng = Rng(42);
    let all: Vec<NewPattern> = (0..n).map(|i| pattern(&mut rng, i, n)).collect();
    for batch in all.chunks(1000) {
        store.create_patterns_once(batch).expect("patterns");
    }
    drop(store);
    let conn = rusqlite::Connection::open(path).expect("conn");
    conn.execute(
        "INSERT INTO knowledge_patterns_fts (knowledge_patterns_fts) VALUES ('optimize')",
        [],
    )
    .expect("optimize");
    conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .expect("checkpoint");
    eprintln!("built {} in {:.0} s", path.display(), t0.elapsed().as_secs_f64());
}

/// Up to `runs` runs, fewer when they pass `budget` (a slow case at 50,000
/// patterns would otherwise take minutes), at least 20.
fn time(runs: usize, budget: Duration, f: &dyn Fn()) -> Vec<Duration> {
    let start = Instant::now();
    let mut samples = Vec::with_capacity(runs);
    while samples.len() < runs && (samples.len() < 20 || start.elapsed() < budget) {
        let t = Instant::now();
        f();
        samples.push(t.elapsed());
    }
    samples
}

fn main() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/bench-data");
    std::fs::create_dir_all(&dir).expect("bench dir");
    // Sizes named on the command line, and words of the cases to run
    // (cargo passes `--bench` too).
    let args: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let asked: Vec<usize> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let only: Vec<&String> = args.iter().filter(|a| a.parse::<usize>().is_err()).collect();
    let budget = Duration::from_secs(10);
    for n in SIZES.into_iter().filter(|n| asked.is_empty() || asked.contains(n)) {
        let path = dir.join(format!("patterns-{n}.db"));
        let complete = Store::open(&path, OpenOptionsStore::default())
            .and_then(|s| s.list_patterns(&PatternFilter::default()))
            .is_ok_and(|page| page.total == n as u64);
        if !complete {
            let _ = std::fs::remove_file(&path);
            build(&path, n);
        }
        let store = Store::open(&path, OpenOptionsStore::default()).expect("open");
        println!("garden: {n} patterns");
        let search = |q: &str| PatternFilter {
            search: Some(q.into()),
            ..Default::default()
        };
        // Warm the page cache as a running server would be.
        store.search_patterns(COMMON, 10).expect("warm");
        assert_eq!(store.search_patterns(RARE, 20).expect("rare").hits.len(), 10);
        let listed = store.list_patterns(&search(COMMON)).expect("list");
        assert_eq!(listed.total, n as u64);
        let run = |label: &str, f: &dyn Fn()| {
            if only.is_empty() || only.iter().any(|w| label.contains(w.as_str())) {
                stats(&format!("  {label}"), time(300, budget, f));
            }
        };
        for (label, q) in [("rare term (10 match)", RARE), ("term in every pattern", COMMON)] {
            run(&format!("knowledge search, {label}, limit 10"), &|| {
                std::hint::black_box(store.search_patterns(q, 10).expect("search"));
            });
            run(&format!("list_patterns search, {label}, first page of 20"), &|| {
                std::hint::black_box(store.list_patterns(&search(q)).expect("list"));
            });
        }
        let deep = PatternFilter {
            offset: 500,
            ..search(COMMON)
        };
        run(
            "list_patterns search, term in every pattern, page at offset 500",
            &|| {
                std::hint::black_box(store.list_patterns(&deep).expect("list"));
            },
        );
        let tagged = PatternFilter {
            tags: vec!["ops".into()],
            ..search(COMMON)
        };
        run("list_patterns search, term in every pattern, tag 'ops'", &|| {
            std::hint::black_box(store.list_patterns(&tagged).expect("list"));
        });
        let by_title = PatternFilter {
            sort_by: Some(SortBy::Title),
            sort_order: SortOrder::Asc,
            ..search(COMMON)
        };
        run("list_patterns search, term in every pattern, sorted by title", &|| {
            std::hint::black_box(store.list_patterns(&by_title).expect("list"));
        });
        run("knowledge search, 'service cache' (common + frequent word)", &|| {
            std::hint::black_box(store.search_patterns("service cache", 10).expect("search"));
        });
    }
}
