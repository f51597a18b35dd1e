//! Stopping the reads of a request its client gave up on, and every read
//! of a server that is shutting down.
//!
//! An MCP client may cancel a request it no longer waits for (a long
//! export, an analysis of a huge session). The answer is then thrown away,
//! but the read would still run to its end on a blocking thread, holding a
//! pool connection and an old snapshot, which keeps checkpoints from
//! emptying the WAL. A [`Cancel`] is made per request; the code running the
//! request's reads does so inside [`Cancel::scope`]. Once [`Cancel::fire`]
//! is called, the statement running stops at its next check (every
//! [`CHECK_EVERY`] virtual-machine steps) with an "interrupted" error, and
//! so does every later statement of the scope. Writes are not run in a
//! scope: a write the client cancelled after sending it may still be
//! committed, which MCP allows.
//!
//! A server that is shutting down stops every read of its pool the same
//! way, through the pool's [`PoolStop`]. Both are checked by one SQLite
//! progress handler each pooled connection gets when it is opened. Unlike
//! `sqlite3_interrupt`, which SQLite forgets as soon as no statement is
//! running, neither can be missed: a shutdown that came while an export was
//! between two statements (building its links, writing files) used to let
//! the export's next statement run on for seconds, until a client's SIGKILL
//! left the `-wal` file behind.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, InterruptHandle};

/// Virtual-machine steps between two checks of a scope's flag: a few
/// microseconds of work, so a cancelled read stops at once, and a load of
/// one atomic each time costs nothing measurable.
const CHECK_EVERY: i32 = 1000;

/// The cancellation of one request, shared by the async side (which fires
/// it) and the blocking threads running the request's reads.
#[derive(Debug, Default)]
pub struct Cancel {
    fired: AtomicBool,
}

thread_local! {
    /// The cancellation of the request whose reads this thread runs.
    static CURRENT: RefCell<Option<Arc<Cancel>>> = const { RefCell::new(None) };
}

impl Cancel {
    pub fn new() -> Arc<Cancel> {
        Arc::new(Cancel::default())
    }

    /// Stop the scope's reads: the running statement and every later one.
    pub fn fire(&self) {
        self.fired.store(true, Ordering::Relaxed);
    }

    pub fn fired(&self) -> bool {
        self.fired.load(Ordering::Relaxed)
    }

    /// Run `f` on this thread with `self` as the cancellation of the
    /// statements it runs on pooled connections meanwhile. Scopes nest; the
    /// outer one is back when `f` returns or panics.
    pub fn scope<T>(self: &Arc<Self>, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<Arc<Cancel>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                CURRENT.with(|c| *c.borrow_mut() = previous);
            }
        }
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        let _restore = Restore(previous);
        f()
    }
}

/// The cancellation of the scope this thread runs in, if any.
pub(crate) fn current() -> Option<Arc<Cancel>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Whether the scope this thread runs in has been cancelled.
fn current_fired() -> bool {
    // `try_with`: never panic inside SQLite's callback, even on a thread
    // whose locals are being torn down.
    CURRENT
        .try_with(|c| c.try_borrow().is_ok_and(|c| c.as_ref().is_some_and(|c| c.fired())))
        .unwrap_or(false)
}

/// The shutdown switch of one connection pool: once [`PoolStop::stop`] is
/// called, every statement of the pool's connections stops at its next
/// check, and none starts again.
#[derive(Default)]
pub(crate) struct PoolStop {
    stopped: AtomicBool,
    /// To wake statements that spend long inside one virtual-machine step
    /// (a large sort) as well.
    interrupts: Mutex<Vec<InterruptHandle>>,
}

impl PoolStop {
    /// Make `conn`, a new connection of the pool, stop its statements once
    /// the pool is stopped or the request whose scope runs them is
    /// cancelled.
    pub(crate) fn attach(self: &Arc<Self>, conn: &Connection) -> rusqlite::Result<()> {
        let pool = self.clone();
        // The handler runs on the thread stepping the statement, which is
        // the thread whose scope (if any) the read belongs to.
        conn.progress_handler(CHECK_EVERY, Some(move || pool.stopped() || current_fired()))?;
        lock(&self.interrupts).push(conn.get_interrupt_handle());
        Ok(())
    }

    /// Stop every read of the pool, now and from now on.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::Relaxed);
        for h in lock(&self.interrupts).iter() {
            h.interrupt();
        }
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::{OpenOptionsStore, Store};

    /// A statement that runs for minutes unless stopped.
    const ENDLESS: &str = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000000000000)
                           SELECT count(*) FROM n";

    fn one_connection_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("temp dir");
        let opts = OpenOptionsStore {
            pool_size: Some(1),
            ..OpenOptionsStore::default()
        };
        let store = Store::open(dir.path().join("t.db"), opts).expect("open store");
        (dir, store)
    }

    fn endless(store: &Store) -> crate::error::Result<i64> {
        let conn = store.conn()?;
        Ok(conn.query_row(ENDLESS, [], |r| r.get(0))?)
    }

    #[test]
    fn a_fired_cancel_stops_the_running_statement_and_every_later_one() {
        let (_dir, store) = one_connection_store();
        let cancel = Cancel::new();
        let firing = {
            let cancel = cancel.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                cancel.fire();
            })
        };
        let (running, later) = cancel.scope(|| {
            let running = endless(&store);
            // Between statements too: the next one stops at once.
            let later = store
                .conn()
                .and_then(|c| Ok(c.query_row("SELECT 1", [], |r| r.get::<_, i64>(0))?));
            (running, later)
        });
        firing.join().expect("firing thread");
        assert!(running.is_err_and(|e| e.is_interrupted()));
        assert!(later.is_err_and(|e| e.is_interrupted()));
    }

    #[test]
    fn a_connection_back_in_the_pool_no_longer_watches_a_cancel() {
        let (_dir, store) = one_connection_store();
        let cancel = Cancel::new();
        // The pool's only connection, watched and given back.
        let n: i64 = cancel
            .scope(|| {
                store
                    .conn()
                    .and_then(|c| Ok(c.query_row("SELECT 41 + 1", [], |r| r.get(0))?))
            })
            .expect("query before the cancel");
        assert_eq!(n, 42);
        cancel.fire();
        assert!(current().is_none(), "the scope ended");
        // Outside the scope, the same connection runs a statement long
        // enough to reach the progress handler many times.
        let conn = store.conn().expect("the connection");
        let count: i64 = conn
            .query_row(
                "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200000) SELECT count(*) FROM n",
                [],
                |r| r.get(0),
            )
            .expect("not interrupted");
        assert_eq!(count, 200000);
    }

    /// A shutdown that comes while no statement runs (the read is between
    /// two of them, writing files) still stops the next one, which
    /// `sqlite3_interrupt` alone forgets; the store's clones are stopped
    /// too, the writer's dedicated store is not, and checkpoints still
    /// run.
    #[test]
    fn a_stop_between_two_statements_stops_the_next_one() {
        let (_dir, store) = one_connection_store();
        let writer = store.dedicated().expect("dedicated store");
        let conn = store.conn().expect("connection");
        let one: i64 = conn.query_row("SELECT 1", [], |r| r.get(0)).expect("before the stop");
        assert_eq!(one, 1);
        store.clone().interrupt_running();
        let next = conn.query_row(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000000) SELECT count(*) FROM n",
            [],
            |r| r.get::<_, i64>(0),
        );
        assert!(
            next.is_err_and(|e| crate::error::Error::from(e).is_interrupted()),
            "the statement ran"
        );
        drop(conn);
        assert!(store.conn().is_err_and(|e| e.is_interrupted()));
        let n: i64 = writer
            .conn()
            .and_then(|c| Ok(c.query_row("SELECT 2", [], |r| r.get(0))?))
            .expect("the writer's store is not stopped");
        assert_eq!(n, 2);
        drop(writer);
        store.checkpoint_passive().expect("an upkeep checkpoint");
        assert!(
            store
                .checkpoint_within(Duration::from_millis(100))
                .expect("last checkpoint")
        );
    }

    #[test]
    fn scopes_nest_and_unwind_after_a_panic() {
        let outer = Cancel::new();
        let inner = Cancel::new();
        outer.scope(|| {
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                inner.scope(|| {
                    assert!(current().is_some_and(|c| Arc::ptr_eq(&c, &inner)));
                    panic!("in the inner scope");
                })
            }));
            assert!(caught.is_err());
            assert!(current().is_some_and(|c| Arc::ptr_eq(&c, &outer)));
        });
        assert!(current().is_none());
    }
}
