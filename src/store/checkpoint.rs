//! WAL checkpoints: copying the write-ahead log into the database file,
//! passively while a server runs, fully (and truncating the log) when a
//! command or a stopping server wants the file alone to hold everything,
//! and the sizes at which the log starts over.

use std::time::Duration;

use rusqlite::Connection;

use super::Store;
use super::tx::ShortWait;
use crate::error::Result;

/// WAL content past which the server makes the WAL start over from its
/// beginning instead of growing (see [`Store::checkpoint_passive`]).
pub const WAL_RESTART_BYTES: u64 = 8 << 20;

/// The WAL file is cut back to this size when it starts over. Larger than
/// the WAL grows in a burst ([`WAL_RESTART_BYTES`] plus what arrives before
/// the next check, ~20 MiB in all) so that a busy server reuses the file's blocks
/// instead of truncating and re-extending it at every restart, which costs
/// tens of milliseconds on ext4. An idle server truncates it to nothing.
pub(super) const WAL_FILE_LIMIT: u64 = 32 << 20;

/// One PASSIVE checkpoint: (frames in the WAL, frames copied into the
/// database), both -1 when the database is not in WAL mode.
fn passive_pass(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(1)?, r.get(2)?)))
}

impl Store {
    /// Copy as much of the WAL into the database file as possible without
    /// waiting for readers or writers (a PASSIVE checkpoint), and answer how
    /// many bytes of frames the WAL holds. The WAL starts over from its
    /// beginning at the first write after a checkpoint that copied all of
    /// it; under a steady stream of writes from another thread that never
    /// happens, so the server runs one more on its writer thread, between
    /// two writes, once the WAL is past [`WAL_RESTART_BYTES`].
    pub fn checkpoint_passive(&self) -> Result<u64> {
        self.check_files()?;
        let conn = self.upkeep_conn()?;
        let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        let (frames, _) = passive_pass(&conn)?;
        let frame_bytes = u64::try_from(page_size).unwrap_or(0) + 24;
        Ok(u64::try_from(frames).unwrap_or(0) * frame_bytes)
    }

    /// Copy the whole WAL into the database file without waiting for other
    /// writers, so that the file alone holds what this process wrote (for
    /// the command line's writes). A PASSIVE checkpoint stops at the oldest
    /// snapshot still being read, and a connection being opened in the
    /// background (the pool keeping one idle) reads one for a moment, so
    /// this retries for up to `patience`. Answers whether everything was
    /// copied; while a server keeps writing it may not be, and the server's
    /// own checkpoints finish the job.
    pub fn checkpoint_settled(&self, patience: Duration) -> Result<bool> {
        self.check_files()?;
        let deadline = std::time::Instant::now() + patience;
        let conn = self.upkeep_conn()?;
        loop {
            let (log, copied) = passive_pass(&conn)?;
            if copied >= log {
                return Ok(true);
            }
            if std::time::Instant::now() >= deadline {
                return Ok(false);
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Copy the WAL into the database file and truncate the WAL, so the
    /// database file alone holds every committed write.
    pub fn checkpoint(&self) -> Result<()> {
        self.check_files()?;
        let conn = self.conn()?;
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        Ok(())
    }

    /// [`Store::checkpoint`], waiting at most `wait` for other connections.
    /// Answers whether the WAL is now empty.
    ///
    /// A TRUNCATE checkpoint holds the write lock while it waits for every
    /// reader of an older snapshot to finish, so one read transaction left
    /// open elsewhere (a `sqlite3` shell inside `BEGIN`) would make every
    /// writer of every process wait out the whole busy timeout behind it.
    /// With a short wait the checkpoint gives up instead, for a later try.
    pub fn checkpoint_within(&self, wait: Duration) -> Result<bool> {
        self.check_files()?;
        let conn = self.upkeep_conn()?;
        let outcome = {
            let _restore = ShortWait::set(&conn, wait)?;
            conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0))
        };
        match outcome {
            Ok(busy) => Ok(busy == 0),
            Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == rusqlite::ErrorCode::DatabaseBusy => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::temp_store;

    #[test]
    fn a_checkpoint_gives_up_on_a_reader_instead_of_holding_the_lock() {
        let (_dir, store) = temp_store();
        store.create_session(crate::domain::NewSession::titled("one")).unwrap();
        let reader = Connection::open(store.path()).unwrap();
        reader.execute_batch("BEGIN; SELECT count(*) FROM sessions;").unwrap();
        store.create_session(crate::domain::NewSession::titled("two")).unwrap();
        assert!(!store.checkpoint_within(Duration::from_millis(20)).unwrap());
        // Writers are not held up once it has given up.
        store
            .create_session(crate::domain::NewSession::titled("three"))
            .unwrap();
        reader.execute_batch("COMMIT").unwrap();
        assert!(store.checkpoint_within(Duration::from_millis(20)).unwrap());
        assert_eq!(store.file_sizes().wal, 0);
    }
}
