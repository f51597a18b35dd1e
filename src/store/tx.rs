//! Transactions: [`Store::write`] (`BEGIN IMMEDIATE`, after checking the
//! ledger's files are still the ones open) and [`Store::read`], both
//! rolled back by [`Tx`]'s drop on an error or a panic, and the shorter
//! busy timeout ([`ShortWait`]) a caller that must not wait long sets for
//! one operation.

use std::time::Duration;

use rusqlite::Connection;

use super::Store;
use super::pool::BUSY_TIMEOUT;
use crate::error::{Error, Result};

/// A shorter busy timeout on a pooled connection for one operation, put
/// back to [`BUSY_TIMEOUT`] when dropped, also on an error or a panic: a
/// connection returned to the pool with the short wait would make later
/// writes give up early.
pub(super) struct ShortWait<'c>(&'c Connection);

impl<'c> ShortWait<'c> {
    pub(super) fn set(conn: &'c Connection, wait: Duration) -> Result<ShortWait<'c>> {
        conn.busy_timeout(wait)?;
        Ok(ShortWait(conn))
    }
}

impl Drop for ShortWait<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.0.busy_timeout(BUSY_TIMEOUT) {
            tracing::warn!("could not restore the busy timeout: {e}");
        }
    }
}

/// A connection inside a transaction opened by [`Store::write`] or
/// [`Store::read`]; it derefs to the connection.
///
/// Unlike `rusqlite::Transaction`, which parses `BEGIN` and `COMMIT` afresh
/// every time, this runs them as cached statements: an append is a handful
/// of cached statements, and parsing the two took a few percent of it.
pub(crate) struct Tx<'c> {
    conn: &'c Connection,
    /// Inside a group's transaction (see [`Store::begin_group`]): this is a
    /// savepoint, released or rolled back to on its own.
    nested: bool,
    /// The savepoint was released or rolled back to.
    ended: std::cell::Cell<bool>,
}

impl std::ops::Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Tx<'_> {
    /// Rolls back whatever did not commit: an error, a failed commit, a panic.
    fn drop(&mut self) {
        if self.nested {
            // Only this write's savepoint: the group's other writes stay.
            // Unless SQLite rolled the whole transaction back itself (a full
            // disk, an I/O error), which the group sees and answers.
            if !self.ended.get()
                && !self.conn.is_autocommit()
                && let Err(e) = self.conn.execute_batch("ROLLBACK TO grouped; RELEASE grouped")
            {
                tracing::warn!("rolling back a grouped write failed: {e}");
            }
            return;
        }
        if !self.conn.is_autocommit()
            && let Err(e) = self.conn.execute_batch("ROLLBACK")
        {
            tracing::warn!("rolling back a transaction failed: {e}");
        }
    }
}

impl<'c> Tx<'c> {
    fn run<T>(conn: &'c Connection, begin: &str, commit: &str, f: impl FnOnce(&Tx<'c>) -> Result<T>) -> Result<T> {
        if !conn.is_autocommit() {
            return Tx::savepoint(conn, f);
        }
        conn.prepare_cached(begin)?.execute([])?;
        let tx = Tx {
            conn,
            nested: false,
            ended: Default::default(),
        };
        let value = f(&tx)?;
        match conn.prepare_cached(commit)?.execute([]) {
            Ok(_) => Ok(value),
            // A write's COMMIT that fails with an I/O error may have put the
            // whole transaction in the WAL first (a full disk where the
            // `-shm` cannot grow): say so rather than "nothing was written".
            Err(e)
                if begin == "BEGIN IMMEDIATE"
                    && e.sqlite_error_code() == Some(rusqlite::ErrorCode::SystemIoFailure) =>
            {
                Err(Error::CommitUncertain(e))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// A write or read inside a transaction already open on `conn` (a
    /// group's, on the writer thread): a savepoint, so that a failed write
    /// takes back only what it did. Nothing is durable until the group
    /// commits.
    fn savepoint<T>(conn: &'c Connection, f: impl FnOnce(&Tx<'c>) -> Result<T>) -> Result<T> {
        conn.prepare_cached("SAVEPOINT grouped")?.execute([])?;
        let tx = Tx {
            conn,
            nested: true,
            ended: Default::default(),
        };
        let value = f(&tx)?;
        conn.prepare_cached("RELEASE grouped")?.execute([])?;
        tx.ended.set(true);
        Ok(value)
    }
}

impl Store {
    /// Run `f` in a `BEGIN IMMEDIATE` transaction and commit it; an error
    /// (or a panic) in `f` rolls it back. On the writer's connection inside
    /// a group it is a savepoint instead: committed by `commit_group` (which
    /// may still fail), so nothing outside the database may act on it as
    /// durable before the writer answers.
    pub(crate) fn write<T>(&self, f: impl FnOnce(&Tx<'_>) -> Result<T>) -> Result<T> {
        let conn = self.conn()?;
        // Checked once the write lock is held: a file removed while this
        // waited for it is seen.
        Tx::run(&conn, "BEGIN IMMEDIATE", "COMMIT", |tx| {
            self.check_files()?;
            f(tx)
        })
    }

    /// [`Store::write`], waiting at most `wait` for another connection's
    /// write lock instead of the whole busy timeout.
    pub(crate) fn write_within<T>(&self, wait: Duration, f: impl FnOnce(&Tx<'_>) -> Result<T>) -> Result<T> {
        let conn = self.conn()?;
        let _restore = ShortWait::set(&conn, wait)?;
        Tx::run(&conn, "BEGIN IMMEDIATE", "COMMIT", |tx| {
            self.check_files()?;
            f(tx)
        })
    }

    /// Run `f` in a read transaction (one consistent snapshot).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Tx<'_>) -> Result<T>) -> Result<T> {
        let conn = self.conn()?;
        Tx::run(&conn, "BEGIN DEFERRED", "COMMIT", f)
    }

    /// Open a group's transaction (group commit, see [`crate::writer`]):
    /// until [`Store::commit_group`], every [`Store::write`] on this store's
    /// one connection is a savepoint inside it. Only for a
    /// [`Store::dedicated`] store (one connection, so every write of the
    /// group lands on the connection that holds the transaction).
    pub(crate) fn begin_group(&self) -> Result<()> {
        self.begin_group_waiting(None)
    }

    /// [`Store::begin_group`] only if the write lock is free now: it never
    /// waits for another connection's write (the caller has other work
    /// to do, and hands the write to the writer thread instead).
    pub(crate) fn begin_group_now(&self) -> Result<()> {
        self.begin_group_waiting(Some(Duration::ZERO))
    }

    /// Open a group's transaction, waiting `wait` for the write lock
    /// (`None`: the whole busy timeout).
    fn begin_group_waiting(&self, wait: Option<Duration>) -> Result<()> {
        let conn = self.conn()?;
        let _short = wait.map(|w| ShortWait::set(&conn, w)).transpose()?;
        conn.prepare_cached("BEGIN IMMEDIATE")?.execute([])?;
        if let Err(e) = self.check_files() {
            conn.execute_batch("ROLLBACK")?;
            return Err(e);
        }
        Ok(())
    }

    /// Whether the group's transaction is still open: SQLite rolls a whole
    /// transaction back itself on some errors (a full disk, an I/O error),
    /// and then the writes before in the group are gone with it.
    pub(crate) fn group_open(&self) -> Result<bool> {
        Ok(!self.conn()?.is_autocommit())
    }

    /// Commit the group's transaction: one disk flush under `--sync full`
    /// for every write in it. A failed commit rolls back; one that failed
    /// with an I/O error may have reached the WAL ([`Error::CommitUncertain`]).
    pub(crate) fn commit_group(&self) -> Result<()> {
        let conn = self.conn()?;
        match conn.prepare_cached("COMMIT").and_then(|mut c| c.execute([])) {
            Ok(_) => Ok(()),
            Err(e) => {
                if !conn.is_autocommit()
                    && let Err(r) = conn.execute_batch("ROLLBACK")
                {
                    tracing::warn!("rolling back a group after its failed commit failed: {r}");
                }
                Err(if e.sqlite_error_code() == Some(rusqlite::ErrorCode::SystemIoFailure) {
                    Error::CommitUncertain(e)
                } else {
                    e.into()
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ConfigKey;
    use crate::store::OpenOptionsStore;
    use crate::store::test_support::{has_config_row, temp_store};

    #[test]
    fn a_failed_or_panicking_write_leaves_nothing_and_the_connection_usable() {
        let (_dir, shared) = temp_store();
        // One connection, so every write below runs on the same one.
        let store = shared.dedicated().unwrap();
        let insert = |tx: &Tx<'_>, key: &str| -> Result<()> {
            tx.prepare_cached("INSERT INTO config (key, value) VALUES (?1, 'x')")?
                .execute([key])?;
            Ok(())
        };
        let failed = store.write(|tx| {
            insert(tx, "failed")?;
            Err::<(), _>(Error::Internal("refused".into()))
        });
        assert!(matches!(failed, Err(Error::Internal(_))));
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            store.write(|tx| -> Result<()> {
                insert(tx, "panicked")?;
                panic!("a bug in a write");
            })
        }));
        assert!(panicked.is_err());
        // A duplicate key fails inside SQLite; the transaction still ends.
        assert!(store.write(|tx| insert(tx, ConfigKey::InstallId.name())).is_err());
        store.write(|tx| insert(tx, "kept")).expect("the next write works");
        for (key, present) in [("failed", false), ("panicked", false), ("kept", true)] {
            assert_eq!(has_config_row(&shared, key), present, "{key}");
        }
        let reads = store.read(|tx| Ok(tx.query_row("SELECT count(*) FROM config", [], |r| r.get::<_, i64>(0))?));
        assert!(reads.unwrap() >= 5);
    }

    /// A short wait for the write lock is undone whatever happens inside it:
    /// a pooled connection never goes back with it.
    #[test]
    fn a_short_wait_is_undone_after_errors_and_panics() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            dir.path().join("t.db"),
            OpenOptionsStore {
                pool_size: Some(1),
                ..Default::default()
            },
        )
        .unwrap();
        let timeout = |store: &Store| -> i64 {
            store
                .conn()
                .unwrap()
                .query_row("PRAGMA busy_timeout", [], |r| r.get(0))
                .unwrap()
        };
        assert_eq!(timeout(&store), BUSY_TIMEOUT.as_millis() as i64);
        let failed: Result<()> = store.write_within(Duration::from_millis(5), |_| Err(Error::Internal("no".into())));
        assert!(failed.is_err());
        assert_eq!(timeout(&store), BUSY_TIMEOUT.as_millis() as i64);
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _: Result<()> = store.write_within(Duration::from_millis(5), |_| panic!("inside"));
        }));
        assert!(panicked.is_err());
        assert_eq!(timeout(&store), BUSY_TIMEOUT.as_millis() as i64);
        // Held elsewhere: the short wait gives up with a busy error.
        let shell = Connection::open(dir.path().join("t.db")).unwrap();
        shell.execute_batch("BEGIN IMMEDIATE").unwrap();
        let busy = store.write_within(Duration::from_millis(20), |_| Ok(())).unwrap_err();
        assert!(busy.is_busy(), "{busy}");
        shell.execute_batch("ROLLBACK").unwrap();
        assert_eq!(timeout(&store), BUSY_TIMEOUT.as_millis() as i64);
    }
}
