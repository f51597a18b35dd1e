//! Stopping the reads of a request its client gave up on.
//!
//! An MCP client may cancel a request it no longer waits for (a long
//! export, an analysis of a huge session). The answer is then thrown away,
//! but the read would still run to its end on a blocking thread, holding a
//! pool connection and an old snapshot, which keeps checkpoints from
//! emptying the WAL. A [`Cancel`] is made per request; the code running the
//! request's reads does so inside [`Cancel::scope`], and every connection
//! [`crate::store::Store`] hands out in that scope watches it through an
//! SQLite progress handler. Once [`Cancel::fire`] is called, the statement
//! running stops at its next check (every [`CHECK_EVERY`] virtual-machine
//! steps) with an "interrupted" error, and so does every later statement of
//! the scope: there is no moment in which a cancellation is missed, as
//! there is with `sqlite3_interrupt`, which does nothing between two
//! statements. Writes are not run in a scope: a write the client cancelled
//! after sending it may still be committed, which MCP allows.

use std::cell::RefCell;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rusqlite::Connection;

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
    /// connections the store hands out meanwhile. Scopes nest; the outer
    /// one is back when `f` returns or panics.
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

/// Set once the server is stopping (a signal, stdin closing): the MCP
/// library then cancels every request in flight, which is the shutdown's
/// doing, not a client's, and is handled as such (see
/// [`crate::store::Store::interrupt_running`]).
static SHUTTING_DOWN: AtomicBool = AtomicBool::new(false);

/// Note that the server is stopping.
pub fn begin_shutdown() {
    SHUTTING_DOWN.store(true, Ordering::Relaxed);
}

/// Whether the server is stopping.
pub fn shutting_down() -> bool {
    SHUTTING_DOWN.load(Ordering::Relaxed)
}

/// The cancellation of the scope this thread runs in, if any.
pub(crate) fn current() -> Option<Arc<Cancel>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Make `conn` stop its statements once `cancel` fires; [`unwatch`] ends it.
pub(crate) fn watch(conn: &Connection, cancel: &Arc<Cancel>) -> rusqlite::Result<()> {
    let cancel = cancel.clone();
    conn.progress_handler(CHECK_EVERY, Some(move || cancel.fired()))
}

/// Undo [`watch`] before the connection goes back to the pool.
pub(crate) fn unwatch(conn: &Connection) {
    // Fails only on a connection rusqlite does not own, which a pooled one
    // never is; nothing to do about it here anyway.
    let _ = conn.progress_handler(0, None::<fn() -> bool>);
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
