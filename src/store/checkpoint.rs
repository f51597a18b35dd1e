//! WAL checkpoints: copying the write-ahead log into the database file,
//! passively while a server runs, fully (and truncating the log) when a
//! command or a stopping server wants the file alone to hold everything,
//! and the sizes at which the log starts over.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

use super::tx::ShortWait;
use super::{Store, real_path};
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

/// Who copies the WAL into the database file and starts it over.
///
/// Litestream replicates a ledger by reading its WAL, and holds a read
/// transaction so that nobody else restarts the WAL before it has copied
/// the frames; it runs its own checkpoints between two copies. A
/// checkpoint of ours while it is stopped (a background one, the one at a
/// clean exit, or SQLite's when the last connection closes) copies frames
/// it never saw into the file and restarts the WAL, and its next start
/// then has to upload the whole database again instead of going on; one
/// while it runs cannot finish and only holds up writers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Checkpoints {
    /// Litestream's whenever its metadata directory (`.NAME-litestream`) is
    /// beside the database, looked at each time, so a Litestream started
    /// after the server is seen; else thoughtbox's.
    #[default]
    Auto,
    /// thoughtbox checkpoints (in the background, at exit) and lets SQLite
    /// remove the WAL when the last connection closes.
    Thoughtbox,
    /// thoughtbox never checkpoints and leaves the WAL in place at exit:
    /// Litestream does both.
    Litestream,
}

impl Checkpoints {
    pub fn parse(s: &str) -> Option<Checkpoints> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Some(Checkpoints::Auto),
            "thoughtbox" => Some(Checkpoints::Thoughtbox),
            "litestream" => Some(Checkpoints::Litestream),
            _ => None,
        }
    }

    /// Whether Litestream checkpoints the ledger at `path` now.
    pub fn litestream_at(self, path: &Path) -> bool {
        match self {
            Checkpoints::Auto => litestream_meta_dir(path).is_dir(),
            Checkpoints::Thoughtbox => false,
            Checkpoints::Litestream => true,
        }
    }
}

/// Where Litestream (0.5, default `meta-path`) keeps its state for the
/// database at `path`: `.NAME-litestream` beside the file it points to.
pub fn litestream_meta_dir(path: &Path) -> PathBuf {
    let real = real_path(path);
    let mut name = std::ffi::OsString::from(".");
    name.push(real.file_name().unwrap_or_default());
    name.push("-litestream");
    real.with_file_name(name)
}

/// One PASSIVE checkpoint: (frames in the WAL, frames copied into the
/// database), both -1 when the database is not in WAL mode.
fn passive_pass(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(1)?, r.get(2)?)))
}

impl Store {
    /// Whether checkpoints are Litestream's now (see [`Checkpoints`]): then
    /// this process copies nothing from the WAL and never restarts it.
    pub fn checkpoints_left_to_litestream(&self) -> bool {
        self.opts.checkpoints.litestream_at(&self.path)
    }

    /// Whether this process checkpoints at all: not where Litestream does,
    /// nor on a store opened read-only.
    fn checkpoints_here(&self) -> bool {
        !self.opts.read_only && !self.checkpoints_left_to_litestream()
    }

    /// Copy as much of the WAL into the database file as possible without
    /// waiting for readers or writers (a PASSIVE checkpoint), and answer how
    /// many bytes of frames the WAL holds. The WAL starts over from its
    /// beginning at the first write after a checkpoint that copied all of
    /// it; under a steady stream of writes from another thread that never
    /// happens, so the server runs one more on its writer thread, between
    /// two writes, once the WAL is past [`WAL_RESTART_BYTES`].
    pub fn checkpoint_passive(&self) -> Result<u64> {
        self.check_files()?;
        if !self.checkpoints_here() {
            return Ok(0);
        }
        let conn = self.upkeep_conn()?;
        let page_size: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0))?;
        let (frames, _) = passive_pass(&conn)?;
        let frame_bytes = u64::try_from(page_size).unwrap_or(0) + 24;
        Ok(u64::try_from(frames).unwrap_or(0) * frame_bytes)
    }

    /// Bytes of WAL frames not yet copied into the database file, read
    /// from the `-shm` file's WAL-index header (SQLite's documented file
    /// format: `mxFrame` at byte 16, the page size at 14, `nBackfill` at
    /// 96, in the machine's byte order), so that no checkpoint runs to
    /// learn it: where Litestream checkpoints, what it has not copied yet.
    /// 0 without a `-shm` file (no connection has the WAL open).
    pub fn wal_backlog(&self) -> u64 {
        wal_backlog_at(&real_path(self.path()))
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
        if !self.checkpoints_here() {
            // Litestream copies the WAL into the file itself, after reading it.
            return Ok(false);
        }
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
        if self.opts.read_only {
            return Ok(false);
        }
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

/// [`Store::wal_backlog`] of the database at `db`.
fn wal_backlog_at(db: &Path) -> u64 {
    use std::io::Read;
    let mut header = [0u8; 100];
    let shm = crate::files::with_suffix(db, "-shm");
    if std::fs::File::open(shm)
        .and_then(|mut f| f.read_exact(&mut header))
        .is_err()
    {
        return 0;
    }
    wal_backlog_of(&header)
}

/// [`Store::wal_backlog`] from the first 100 bytes of a `-shm` file.
fn wal_backlog_of(header: &[u8; 100]) -> u64 {
    let u32_at = |at: usize| u32::from_ne_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]);
    let page_size = match u16::from_ne_bytes([header[14], header[15]]) {
        1 => 65_536,
        n => u64::from(n),
    };
    let (frames, copied) = (u32_at(16), u32_at(96));
    u64::from(frames.saturating_sub(copied)) * (page_size + 24)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backlog read from the `-shm` file is what a checkpoint then
    /// copies, and nothing once it has.
    #[test]
    fn the_wal_backlog_is_read_without_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("b.db");
        let conn = Connection::open(&db).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200)
             INSERT INTO t SELECT randomblob(1000) FROM n;",
        )
        .unwrap();
        let before = wal_backlog_at(&db);
        let page: i64 = conn.query_row("PRAGMA page_size", [], |r| r.get(0)).unwrap();
        let (log, copied): (i64, i64) = conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(1)?, r.get(2)?)))
            .unwrap();
        assert!(log > 50 && copied == log, "{log} {copied}");
        assert_eq!(before, u64::try_from(log * (page + 24)).unwrap());
        assert_eq!(wal_backlog_at(&db), 0);
        assert_eq!(wal_backlog_at(&dir.path().join("none.db")), 0);
    }
    use crate::files::with_suffix;
    use crate::store::OpenOptionsStore;
    use crate::store::test_support::temp_store;

    #[test]
    fn the_mode_is_read_and_auto_follows_litestreams_directory() {
        assert_eq!(Checkpoints::parse(" Litestream "), Some(Checkpoints::Litestream));
        assert_eq!(Checkpoints::parse(""), Some(Checkpoints::Auto));
        assert_eq!(Checkpoints::parse("never"), None);
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("t.db");
        assert_eq!(litestream_meta_dir(&db), dir.path().join(".t.db-litestream"));
        assert!(!Checkpoints::Auto.litestream_at(&db));
        std::fs::create_dir(litestream_meta_dir(&db)).unwrap();
        assert!(Checkpoints::Auto.litestream_at(&db));
        assert!(!Checkpoints::Thoughtbox.litestream_at(&db));
    }

    /// Where Litestream checkpoints, the last connection to close leaves
    /// the WAL as it is (SQLite would copy it into the file and remove it),
    /// and no checkpoint of thoughtbox's copies a frame.
    #[test]
    fn in_litestream_mode_no_checkpoint_touches_the_wal() {
        for (mode, kept) in [(Checkpoints::Litestream, true), (Checkpoints::Thoughtbox, false)] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.db");
            let opts = OpenOptionsStore {
                checkpoints: mode,
                ..Default::default()
            };
            let store = Store::open(&path, opts).unwrap();
            store.create_session(crate::domain::NewSession::titled("kept")).unwrap();
            let wal = store.file_sizes().wal;
            assert!(wal > 0);
            store.checkpoint_passive().unwrap();
            assert!(!store.checkpoint_settled(Duration::from_millis(10)).unwrap() || !kept);
            drop(store);
            assert_eq!(with_suffix(&path, "-wal").exists(), kept, "{mode:?}");
            if kept {
                assert_eq!(std::fs::metadata(with_suffix(&path, "-wal")).unwrap().len(), wal);
                // Opened again (as after a restart), it reads every write.
                let store = Store::open(&path, OpenOptionsStore::default()).unwrap();
                assert_eq!(store.counts().unwrap().0, 1);
            }
        }
    }

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
