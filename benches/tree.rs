//! The directory tree: exporting a 10,000-thought session, importing that
//! tree, and importing 1,000 sessions x 20 thoughts (throughput in thoughts/s).
//! Run with `cargo bench --bench tree`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, OnceLock};

use divan::Bencher;
use divan::counter::ItemsCount;
use thoughtbox::domain::{NewSession, ThoughtInput};
use thoughtbox::store::{OpenOptionsStore, Store, Target};
use thoughtbox::tree::importer::import_tree;
use thoughtbox::tree::writer::{ExportOptions, export_tree};

/// Everything the run writes lives here and is removed at the end. Outputs
/// of the timed samples are kept until then, so that deleting thousands of
/// files never overlaps the next sample.
static SCRATCH: OnceLock<PathBuf> = OnceLock::new();

fn scratch(name: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let root = SCRATCH.get_or_init(|| tempfile::tempdir().expect("temp dir").keep());
    root.join(format!("{name}-{}", NEXT.fetch_add(1, Ordering::Relaxed)))
}

fn main() {
    divan::main();
    if let Some(root) = SCRATCH.get() {
        let _ = std::fs::remove_dir_all(root);
    }
}

/// A ledger and its exported tree, built once per run.
struct Ledger {
    store: Store,
    tree: PathBuf,
    thoughts: usize,
}

/// `sessions` sessions of `per_session` thoughts each: mostly main chain,
/// a branch every 50 thoughts and a revision every 40, ~200 bytes of text.
fn ledger(sessions: usize, per_session: usize) -> Ledger {
    let dir = scratch("ledger");
    let store = Store::open(dir.join("bench.db"), OpenOptionsStore::default()).expect("open");
    for s in 0..sessions {
        let session = store
            .create_session(NewSession {
                title: format!("Benchmark session {s}"),
                tags: vec!["project:bench".into(), format!("batch:{}", s % 10)],
                ..Default::default()
            })
            .expect("session");
        for i in 0..per_session {
            let text = format!(
                "Step {i} of session {s}: the latency regression follows the cache change; checking the eviction \
                 policy, the hit ratio and the p99 of the read path before deciding what to revert next."
            );
            let input = match i % 50 {
                49 => ThoughtInput {
                    branch_id: Some(format!("alt-{}", i / 50)),
                    branch_from_thought: Some(1),
                    ..plain(text)
                },
                39 => ThoughtInput {
                    revises_thought: Some(1),
                    ..plain(text)
                },
                _ => plain(text),
            };
            store
                .append_thought(Target::Session(session.id.clone()), input)
                .expect("append");
        }
    }
    let tree = dir.join("tree");
    export_tree(&store, &tree, &ExportOptions::default(), &mut |_, _| {}).expect("export");
    Ledger {
        store,
        tree,
        thoughts: sessions * per_session,
    }
}

fn plain(text: String) -> ThoughtInput {
    ThoughtInput {
        thought: text,
        next_thought_needed: true,
        ..Default::default()
    }
}

static ONE_BIG: LazyLock<Ledger> = LazyLock::new(|| ledger(1, 10_000));
static MANY_SMALL: LazyLock<Ledger> = LazyLock::new(|| ledger(1_000, 20));

fn empty_store() -> Store {
    Store::open(scratch("import").join("import.db"), OpenOptionsStore::default()).expect("open")
}

/// Export a 10,000-thought session into an empty directory.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn export_10k_thought_session(bencher: Bencher) {
    let l = &*ONE_BIG;
    bencher
        .counter(ItemsCount::new(l.thoughts))
        .with_inputs(|| scratch("export"))
        .bench_local_values(|out| {
            export_tree(&l.store, &out, &ExportOptions::default(), &mut |_, _| {}).expect("export")
        });
}

/// Export it again over its own tree: every file is already right.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn re_export_10k_thought_session_unchanged(bencher: Bencher) {
    let l = &*ONE_BIG;
    bencher
        .counter(ItemsCount::new(l.thoughts))
        .bench_local(|| export_tree(&l.store, &l.tree, &ExportOptions::default(), &mut |_, _| {}).expect("export"));
}

/// Import the 10,000-thought session's tree into an empty database.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn import_10k_thought_session(bencher: Bencher) {
    let l = &*ONE_BIG;
    bencher
        .counter(ItemsCount::new(l.thoughts))
        .with_inputs(empty_store)
        .bench_local_values(|store| {
            let s = import_tree(&store, &l.tree, &mut |_, _, _| {}).expect("import");
            assert_eq!(s.thoughts_imported as usize, l.thoughts);
            store
        });
}

/// Import 1,000 sessions x 20 thoughts into an empty database.
#[divan::bench(sample_count = 5, sample_size = 1)]
fn import_1000_sessions_of_20_thoughts(bencher: Bencher) {
    let l = &*MANY_SMALL;
    bencher
        .counter(ItemsCount::new(l.thoughts))
        .with_inputs(empty_store)
        .bench_local_values(|store| {
            let s = import_tree(&store, &l.tree, &mut |_, _, _| {}).expect("import");
            assert_eq!(s.imported, 1_000);
            store
        });
}
