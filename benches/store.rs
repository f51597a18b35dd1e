//! Store-level costs, without the protocol.
//!
//!   cargo bench --bench store
//!
//! `append` appends one thought to a session that already holds N thoughts:
//! the per-thought cost must not grow with N. The list, structure and
//! indexing benches check the reads an agent makes routinely the same way.

use std::sync::OnceLock;

use thoughtbox::domain::{NewSession, SessionFilter, ThoughtInput};
use thoughtbox::store::{OpenOptionsStore, Store, SyncMode, Target};

fn main() {
    divan::main();
}

fn text(i: usize) -> String {
    let base = "we compare the cache invalidation path against the baseline and measure the refresh latency ";
    let mut s = format!("Step {i}: ");
    while s.len() < 550 {
        s.push_str(base);
    }
    s.truncate(550);
    s
}

struct Fixture {
    _dir: tempfile::TempDir,
    store: Store,
    session: String,
}

fn fixture(size: usize, sync: SyncMode) -> Fixture {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(
        dir.path().join("b.db"),
        OpenOptionsStore {
            sync,
            ..Default::default()
        },
    )
    .expect("open");
    let session = store.create_session(NewSession::titled("bench")).expect("session").id;
    let f = Fixture {
        _dir: dir,
        store,
        session,
    };
    for i in 0..size {
        append_one(&f, i);
    }
    f
}

/// One append: thought `i` into the fixture's session.
fn append_one(f: &Fixture, i: usize) -> thoughtbox::store::Appended {
    f.store
        .append_thought(
            Target::Session(f.session.clone()),
            ThoughtInput {
                thought: text(i),
                next_thought_needed: true,
                ..Default::default()
            },
        )
        .expect("append")
}

#[divan::bench(args = [0, 10_000, 100_000], sample_count = 2000, sample_size = 1)]
fn append(bencher: divan::Bencher, size: usize) {
    static CACHE: OnceLock<std::sync::Mutex<Vec<(usize, Fixture)>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut guard = cache.lock().expect("lock");
    if !guard.iter().any(|(s, _)| *s == size) {
        guard.push((size, fixture(size, SyncMode::Normal)));
    }
    let (_, f) = guard.iter().find(|(s, _)| *s == size).expect("fixture");
    let mut i = 0;
    bencher.bench_local(|| {
        i += 1;
        append_one(f, i)
    });
}

#[divan::bench(sample_count = 500, sample_size = 1)]
fn append_sync_full(bencher: divan::Bencher) {
    let f = fixture(0, SyncMode::Full);
    let mut i = 0;
    bencher.bench_local(|| {
        i += 1;
        append_one(&f, i)
    });
}

#[divan::bench(sample_count = 200, sample_size = 1)]
fn index_batch_of_128(bencher: divan::Bencher) {
    let f = fixture(0, SyncMode::Normal);
    bencher
        .with_inputs(|| {
            for i in 0..128 {
                append_one(&f, i);
            }
        })
        .bench_local_values(|()| f.store.index_pending(128).expect("index"));
}

#[divan::bench(sample_count = 500)]
fn list_sessions_page(bencher: divan::Bencher) {
    static F: OnceLock<(tempfile::TempDir, Store)> = OnceLock::new();
    let (_, store) = F.get_or_init(|| {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(dir.path().join("l.db"), OpenOptionsStore::default()).expect("open");
        for i in 0..1000 {
            store
                .create_session(NewSession::titled(format!("s{i}")))
                .expect("session");
        }
        (dir, store)
    });
    let filter = SessionFilter::default();
    bencher.bench_local(|| store.list_sessions(&filter).expect("list"));
}

/// A ledger of `n` sessions as a server with `--project p` makes them:
/// every one tagged `project:p`, one in ten also `tag3`.
fn project_ledger(n: usize) -> &'static Store {
    type Ledgers = Vec<(usize, &'static (tempfile::TempDir, Store))>;
    static LEDGERS: OnceLock<std::sync::Mutex<Ledgers>> = OnceLock::new();
    let mut ledgers = LEDGERS.get_or_init(Default::default).lock().expect("lock");
    if let Some((_, (_, store))) = ledgers.iter().find(|(size, _)| *size == n) {
        return store;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("p.db"), OpenOptionsStore::default()).expect("open");
    for i in 0..n {
        let mut tags = vec!["project:p".to_string()];
        if i % 10 == 3 {
            tags.push("tag3".into());
        }
        store
            .create_session(NewSession {
                tags,
                ..NewSession::titled(format!("s{i}"))
            })
            .expect("session");
    }
    let leaked: &'static (tempfile::TempDir, Store) = Box::leak(Box::new((dir, store)));
    ledgers.push((n, leaked));
    &leaked.1
}

/// One page of 20 sessions filtered by the project tag every session
/// carries: must not grow with the number of sessions.
#[divan::bench(args = [1_000, 20_000], sample_count = 200)]
fn list_project_page(bencher: divan::Bencher, n: usize) {
    let store = project_ledger(n);
    let filter = SessionFilter {
        tags: vec!["project:p".into()],
        limit: 20,
        ..SessionFilter::default()
    };
    bencher.bench_local(|| store.list_sessions(&filter).expect("list"));
}

/// The same with a tag one session in ten carries.
#[divan::bench(args = [1_000, 20_000], sample_count = 200)]
fn list_project_and_tag_page(bencher: divan::Bencher, n: usize) {
    let store = project_ledger(n);
    let filter = SessionFilter {
        tags: vec!["project:p".into(), "tag3".into()],
        limit: 20,
        ..SessionFilter::default()
    };
    bencher.bench_local(|| store.list_sessions(&filter).expect("list"));
}

/// `get_structure` of a session of `n` main-chain thoughts.
#[divan::bench(args = [1_000, 20_000], sample_count = 200)]
fn structure(bencher: divan::Bencher, n: usize) {
    let f = fixture(n, SyncMode::Normal);
    bencher.bench_local(|| f.store.structure(&f.session).expect("structure"));
}

/// One indexing batch after 128 thoughts of 100 KB: what an append waiting
/// behind it waits (the batch stops at 256 KiB of text).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn index_batch_of_long_thoughts(bencher: divan::Bencher) {
    let f = fixture(0, SyncMode::Normal);
    let long = text(0).repeat(100_000 / 550);
    bencher
        .with_inputs(|| {
            f.store.index_all_pending().expect("index");
            for _ in 0..128 {
                f.store
                    .append_thought(
                        Target::Session(f.session.clone()),
                        ThoughtInput {
                            thought: long.clone(),
                            next_thought_needed: true,
                            ..Default::default()
                        },
                    )
                    .expect("append");
            }
        })
        .bench_local_values(|()| f.store.index_pending(128).expect("index"));
}
