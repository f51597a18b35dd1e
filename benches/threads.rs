//! What a registry change costs beside the plain write it describes, A B A B
//! in one run on one ledger:
//!
//!   cargo bench --bench threads
//!
//! A: `create_session` (what `start_new` writes). B: `spawn_thread` under a
//! root (the same session plus its parent, objective and operation row, in
//! one transaction). C: `depend_thread` from a new thread onto the last one
//! of a chain that grows as the run goes (the cycle check walks it).

use std::time::{Duration, Instant};

use thoughtbox::domain::NewSession;
use thoughtbox::domain::thread::Operator;
use thoughtbox::store::{OpenOptionsStore, Spawn, Store};

const ROUNDS: usize = 8;
const PER_ROUND: usize = 200;

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = Store::open(dir.path().join("b.db"), OpenOptionsStore::default()).expect("open");
    let root = store.create_session(NewSession::titled("root")).expect("root").id;
    let spawn = |parent: Option<&str>, i: usize| {
        store
            .spawn_thread(
                Spawn {
                    parent_id: parent.map(str::to_string),
                    session: NewSession::titled(format!("t{i}")),
                    objective: format!("objective {i}"),
                },
                Operator::Agent,
            )
            .expect("spawn")
            .0
            .id
    };
    let mut chain = vec![spawn(None, 0)];
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    let per_op = |d: Duration| d.as_secs_f64() * 1e6 / PER_ROUND as f64;
    for round in 0..ROUNDS {
        let t = Instant::now();
        for i in 0..PER_ROUND {
            store
                .create_session(NewSession::titled(format!("s{round}-{i}")))
                .expect("create");
        }
        a.push(per_op(t.elapsed()));
        let t = Instant::now();
        for i in 0..PER_ROUND {
            spawn(Some(&root), i);
        }
        b.push(per_op(t.elapsed()));
        // The new threads are made outside the timing; only the links count.
        let fresh: Vec<String> = (0..PER_ROUND).map(|i| spawn(None, i)).collect();
        let t = Instant::now();
        for id in fresh {
            let last = chain.last().expect("chain").clone();
            store.depend_thread(&id, &last, Operator::Agent).expect("depend");
            chain.push(id);
        }
        c.push(per_op(t.elapsed()));
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (ma, mb, mc) = (median(&mut a), median(&mut b), median(&mut c));
    println!("create_session         {ma:8.1} us/op (median of {ROUNDS} rounds of {PER_ROUND})");
    println!(
        "spawn_thread           {mb:8.1} us/op  ({:.2}x create_session)",
        mb / ma
    );
    println!(
        "depend_thread (chain)  {mc:8.1} us/op  ({:.2}x create_session; chain reached {})",
        mc / ma,
        chain.len()
    );
}
