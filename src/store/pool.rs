//! The connection pool: the pragmas every connection is configured with,
//! the pooled [`Conn`] (stopped by a cancellation or a server's shutdown),
//! and the count of connections still open, which lets a process wait for
//! SQLite to close the database (and remove its `-wal` and `-shm` files)
//! before it exits.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use r2d2::{Pool, PooledConnection};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::functions::FunctionFlags;
use rusqlite::{Connection, OpenFlags};

use super::checkpoint::WAL_FILE_LIMIT;
use super::{Access, Media, OpenOptionsStore, Store, SyncMode, absolute, cancel};
use crate::error::{Error, Result};

/// Counts a store's clones, and the connections of its pool still open.
/// Dropping the last clone waits (briefly) for those connections to close:
/// r2d2 may hold the pool on a worker thread for a moment after the last
/// handle is gone (opening the connection it keeps idle), and a connection
/// closing then would copy the WAL into the file behind the back of a
/// caller who took the store for closed, and leave `-wal` and `-shm` files
/// beside it until then.
#[derive(Clone, Default)]
pub(super) struct LastClone {
    clones: Arc<()>,
    pub(super) open: Arc<AtomicUsize>,
}

/// How long the last clone of a store waits for its pool's connections to
/// close. r2d2's worker needs well under a millisecond; a connection still
/// checked out elsewhere (a leak) is not waited for beyond this.
const CLOSE_PATIENCE: Duration = Duration::from_secs(2);

impl Drop for LastClone {
    fn drop(&mut self) {
        if Arc::strong_count(&self.clones) == 1 && !wait_until_none_open(&self.open, CLOSE_PATIENCE) {
            tracing::debug!("a connection of a dropped store is still open");
        }
    }
}

/// A pooled connection. Its statements stop once the request whose
/// [`cancel::Cancel::scope`] runs them is cancelled, or the pool is stopped
/// ([`Store::interrupt_running`]).
pub(crate) struct Conn {
    inner: PooledConnection<SqliteConnectionManager>,
}

impl std::ops::Deref for Conn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        &self.inner
    }
}

pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Page size of new databases. A commit writes every page it touched to the
/// WAL in full, and an append touches about eight pages (the row, four
/// indexes, the session row and its updatedAt index); 2 KiB pages halve the
/// bytes written and checkpointed per thought against 4 KiB, for ~16 % more
/// file (two ~700-byte thought rows per page instead of five). Measured in
/// BENCHMARKS.md.
const PAGE_SIZE: i64 = 2048;

/// The error of a statement stopped by an interrupt or a cancellation.
fn interrupted() -> Error {
    Error::Database(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT),
        Some("interrupted".into()),
    ))
}

pub(super) fn configure(
    conn: &Connection,
    open: &Arc<AtomicUsize>,
    sync: SyncMode,
    background_checkpoints: bool,
    access: Access,
    litestream: bool,
) -> rusqlite::Result<()> {
    track(conn, open)?;
    // busy_timeout first: switching to WAL can itself meet a lock.
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // A reader leaves a file (a backup, say) in the journal mode it has:
    // switching rewrites the header. Ledgers in use are in WAL mode already.
    if access.may_write() {
        // Only a new, empty database takes it; an existing file keeps its own.
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
        // SQLite answers the mode it kept rather than fail: another
        // connection in exclusive locking mode, say. Readers beside the
        // writer, the checkpoints and Litestream all need WAL.
        let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(rusqlite::Error::SqliteFailure(
                rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ERROR),
                Some(format!(
                    "the database stayed in journal mode {mode} and could not switch to WAL, which thoughtbox \
                     needs (is another program holding it in exclusive locking mode?)"
                )),
            ));
        }
    }
    conn.pragma_update(
        None,
        "synchronous",
        match sync {
            SyncMode::Normal => "NORMAL",
            SyncMode::Full => "FULL",
        },
    )?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    if background_checkpoints || litestream {
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    }
    if litestream {
        // The last connection to close would otherwise copy the WAL into
        // the file and remove it: frames Litestream, if stopped, never read.
        conn.set_db_config(rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    }
    conn.pragma_update(None, "journal_size_limit", WAL_FILE_LIMIT as i64)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// Ledger connections of this process not yet closed.
static OPEN_CONNECTIONS: AtomicUsize = AtomicUsize::new(0);

/// Counts a connection in [`OPEN_CONNECTIONS`], and in its store's own
/// count, until SQLite has closed it.
struct ConnectionToken(Arc<AtomicUsize>);

impl Drop for ConnectionToken {
    fn drop(&mut self) {
        OPEN_CONNECTIONS.fetch_sub(1, Ordering::SeqCst);
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Tie a [`ConnectionToken`] to `conn`: SQLite drops it with the
/// connection's functions, after it has closed the database file (and,
/// for the last connection, removed the `-wal` and `-shm` files).
fn track(conn: &Connection, open: &Arc<AtomicUsize>) -> rusqlite::Result<()> {
    OPEN_CONNECTIONS.fetch_add(1, Ordering::SeqCst);
    open.fetch_add(1, Ordering::SeqCst);
    let token = ConnectionToken(open.clone());
    conn.create_scalar_function(
        "thoughtbox_connection_open",
        0,
        FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC,
        move |_| {
            let _alive = &token;
            Ok(1)
        },
    )
}

/// Set by [`leave_open`].
static LEFT_OPEN: AtomicBool = AtomicBool::new(false);

/// The process exits with a connection still busy (a server told to hurry
/// while its writer waits for another program's lock): waiting for it to
/// close would only delay the exit.
pub fn leave_open() {
    LEFT_OPEN.store(true, Ordering::SeqCst);
}

/// Wait (at most `patience`) until every ledger connection of this process
/// has closed, once every `Store` is dropped. A pool closes its connections
/// only when every handle on it is gone, and r2d2 may still hold one on a
/// worker thread for a moment; a process that exits before then leaves the
/// database's `-wal` and `-shm` files behind. Answers whether all closed.
pub fn wait_until_closed(patience: Duration) -> bool {
    wait_until_none_open(&OPEN_CONNECTIONS, patience)
}

/// Wait (at most `patience`, and not at all once [`leave_open`] was
/// called) until `open` counts no connection. Answers whether none is.
fn wait_until_none_open(open: &AtomicUsize, patience: Duration) -> bool {
    let deadline = std::time::Instant::now() + patience;
    while open.load(Ordering::SeqCst) > 0 {
        if LEFT_OPEN.load(Ordering::SeqCst) || std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    true
}

pub(super) fn pool(
    path: &Path,
    opts: &OpenOptionsStore,
    media: Media,
    size: u32,
    stop: &Arc<cancel::PoolStop>,
    open: &Arc<AtomicUsize>,
) -> Result<Pool<SqliteConnectionManager>> {
    let open = open.clone();
    let sync = opts.sync;
    let background = opts.background_checkpoints;
    let access = opts.access;
    // Decided once per pool: a connection opened later is configured alike.
    let litestream = opts.checkpoints.litestream_at(path);
    let stop = stop.clone();
    let (name, flags) = media.open_as(path);
    let manager = SqliteConnectionManager::file(name)
        .with_flags(flags)
        .with_init(move |c| {
            configure(c, &open, sync, background, access, litestream)?;
            stop.attach(c)
        });
    Ok(Pool::builder()
        .max_size(size)
        .min_idle(Some(1))
        // Never closed behind the server's back: while one connection
        // stays open, this process keeps the -shm it opened (see Watched).
        .idle_timeout(None)
        .max_lifetime(None)
        // An SQLite connection does not go stale like a network one.
        .test_on_check_out(false)
        .connection_timeout(Duration::from_secs(30))
        .build(manager)?)
}

/// Open the database file at `path` (made [`absolute`]) as a file name.
pub(crate) fn open_file(path: &Path) -> Result<Connection> {
    Ok(Connection::open_with_flags(
        absolute(path)?,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?)
}

impl Store {
    /// Another handle on the same ledger with one connection of its own,
    /// for the thread that does a server's writes: it never waits for a
    /// pooled connection held by long reads (exports, analyses), and its
    /// page cache stays warm from one write to the next.
    pub fn dedicated(&self) -> Result<Store> {
        let stop = Arc::default();
        let clones = LastClone::default();
        Ok(Store {
            pool: pool(&self.path, &self.opts, self.media, 1, &stop, &clones.open)?,
            stop,
            clones,
            media: self.media,
            path: self.path.clone(),
            granularity: self.granularity,
            opts: self.opts.clone(),
            watched: self.watched.clone(),
        })
    }

    /// Stop the reads of a server that is shutting down: the statements
    /// this store's connections are running (an export, an analysis, which
    /// would keep the final checkpoint from emptying the WAL) end with an
    /// "interrupted" error, and so does every later read of this store and
    /// its clones, so that none is missed between two statements.
    /// Checkpoints still run. A [`Store::dedicated`]
    /// store (the writer's) has a pool of its own and is not stopped.
    pub fn interrupt_running(&self) {
        self.stop.stop();
    }

    /// How many other clones of this store are alive (work still running
    /// elsewhere, holding the pool open).
    pub fn other_clones(&self) -> usize {
        Arc::strong_count(&self.clones.clones) - 1
    }

    /// Whether [`Store::interrupt_running`] has stopped this store's reads.
    pub fn reads_stopped(&self) -> bool {
        self.stop.stopped()
    }

    /// Connections of this store's pool handed out and not yet back.
    pub fn connections_in_use(&self) -> u32 {
        let state = self.pool.state();
        state.connections.saturating_sub(state.idle_connections)
    }

    pub(crate) fn conn(&self) -> Result<Conn> {
        if self.stop.stopped() || cancel::current().is_some_and(|c| c.fired()) {
            return Err(interrupted());
        }
        Ok(Conn {
            inner: self.pool.get()?,
        })
    }

    /// A connection for a checkpoint, also once the pool is stopped: a
    /// server's last checkpoint runs then, and one of the upkeep task's
    /// may still be on its way (a checkpoint PRAGMA runs far fewer steps
    /// than the stop's check interval, so it is never cut short).
    pub(super) fn upkeep_conn(&self) -> Result<Conn> {
        Ok(Conn {
            inner: self.pool.get()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::files::with_suffix;
    use crate::store::test_support::temp_store;

    /// A database that will not take WAL (here one in memory, whose mode
    /// stays `memory`) is refused, not served in another journal mode.
    #[test]
    fn a_database_that_keeps_another_journal_mode_is_refused() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let open = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let e = super::configure(
            &conn,
            &open,
            super::SyncMode::Normal,
            true,
            super::Access::Create,
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("journal mode memory") && e.contains("WAL"), "{e}");
    }

    /// The last handle on a store closes it: once dropped, the database
    /// file holds everything and its -wal and -shm are gone, though r2d2
    /// may have been opening the connection the pool keeps idle on a worker
    /// thread (CI once saw that connection close, and copy the WAL into the
    /// file, after a test had read the file's bytes).
    #[test]
    fn dropping_the_last_store_closes_the_database() {
        for round in 0..5 {
            let (_dir, store) = temp_store();
            let path = store.path().to_path_buf();
            let copy = store.clone();
            // Each checkout below the pool's idle minimum sets r2d2's worker
            // opening another connection.
            let held = (store.conn().unwrap(), store.conn().unwrap());
            drop(held);
            store
                .create_session(crate::domain::NewSession::titled("closing"))
                .unwrap();
            drop(store);
            assert!(with_suffix(&path, "-wal").exists(), "a clone keeps the database open");
            drop(copy);
            for suffix in ["-wal", "-shm"] {
                assert!(
                    !with_suffix(&path, suffix).exists(),
                    "round {round}: {suffix} left after the last drop"
                );
            }
        }
    }
}
