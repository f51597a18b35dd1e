//! SQLite storage: opening the database (directory, file mode, pragmas,
//! migrations serialised across processes), the connection pool, and one
//! file per table family. Everything here is synchronous rusqlite; async
//! callers run it on blocking threads.
//!
//! The machinery under every table family: `open` (inspection, migrations,
//! [`Store::open`]), `files` (the database file and its `-wal` and `-shm`
//! on disk), `pool` (pragmas and pooled connections), `tx` (read and write
//! transactions), `checkpoint` (the WAL), `config` (the `config` table).

mod analysis;
mod backup;
pub mod cancel;
mod check;
mod checkpoint;
mod config;
mod files;
mod import;
mod knowledge;
mod notebooks;
mod open;
mod pool;
mod projects;
mod reads;
mod repair;
mod search;
mod sessions;
pub mod snippet;
mod stats;
mod tag_filter;
mod thoughts;
mod threads;
mod tx;
mod watch;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use r2d2::Pool;
use r2d2_sqlite::SqliteConnectionManager;

use crate::domain::Granularity;

pub use check::CheckReport;
pub use checkpoint::{Checkpoints, WAL_RESTART_BYTES, litestream_meta_dir};
pub use config::{Config, thought_logging_disabled};
use files::{Media, Watched};
pub(crate) use files::{absolute, file_uri, may_be_database, real_path};
pub use import::ImportOutcome;
pub use knowledge::{KnowledgeItem, Saved};
pub use notebooks::{NewNotebook, NotebookHit, RunKind, running as cell_running};
use open::{Found, inspect};
use pool::LastClone;
pub(crate) use pool::open_file;
pub use pool::{leave_open, wait_until_closed};
pub use reads::{Pick, ThoughtQuery, Unread};
pub use repair::RepairReport;
pub(crate) use search::query_phrases;
pub use search::{CANDIDATES as SEARCH_CANDIDATES, SEARCH_INDEX_WAIT, SearchHit, SessionHits, ThoughtHit, fts_query};
pub use sessions::{SessionPage, SessionsMeant};
pub use stats::{FileSizes, LedgerStats};
pub use thoughts::{Appended, MAX_BRANCHES_NAMED, SessionSnapshot, Shape, Structure, Target};
pub use threads::{
    MAX_TREE_THREADS, OperationPage, RegistryImport, Spawn, ThreadFilter, ThreadPage, ThreadTree, ThreadUpdate,
};
pub(crate) use tx::Tx;
pub use watch::{CutThought, Mark, OBSERVED_CHARS};

/// How hard a commit is pushed to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SyncMode {
    /// WAL + synchronous=NORMAL: an acknowledged write survives the process
    /// being killed; the last commits may be lost on power failure.
    #[default]
    Normal,
    /// WAL + synchronous=FULL: every acknowledged write is flushed to disk.
    Full,
}

impl SyncMode {
    pub fn parse(s: &str) -> Option<Self> {
        match s.to_ascii_lowercase().as_str() {
            "normal" => Some(SyncMode::Normal),
            "full" => Some(SyncMode::Full),
            _ => None,
        }
    }
}

/// Options for [`Store::open`].
#[derive(Debug, Clone, Default)]
pub struct OpenOptionsStore {
    pub sync: SyncMode,
    /// Largest number of pooled connections (8 by default, opened as
    /// needed: with a server's 8 blocking threads, short reads still get
    /// one while several long ones run).
    pub pool_size: Option<u32>,
    /// Leave WAL checkpoints to the caller (the server's maintenance task)
    /// instead of letting the commit that crosses 1,000 WAL pages pay for one.
    pub background_checkpoints: bool,
    /// What the opener may do to the file.
    pub access: Access,
    /// Who checkpoints the WAL (see [`Checkpoints`]).
    pub checkpoints: Checkpoints,
    /// Open the file read-only in SQLite as well (`serve --read-only`): no
    /// connection can write, checkpoint or create it, and none copies the
    /// WAL into it at close. Goes with [`Access::Read`].
    pub read_only: bool,
}

/// What opening a ledger may do to its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Access {
    /// Create a new ledger in an empty (or missing) file, and upgrade an
    /// older one: the server, `import`, `config set`.
    #[default]
    Create,
    /// The ledger must be there; an older one is upgraded (`repair`).
    Existing,
    /// The ledger must be there at the current schema, and nothing in the
    /// file changes: the commands that only read.
    Read,
    /// The ledger must be there, at this schema or an older one, which is
    /// not upgraded: `backup` (a copy of the pages, whatever they hold).
    Copy,
}

impl Access {
    /// Whether an empty file is refused rather than made into a ledger.
    fn needs_ledger(self) -> bool {
        self != Access::Create
    }

    /// Whether the file may be written (a new ledger, an upgrade, the WAL mode).
    fn may_write(self) -> bool {
        matches!(self, Access::Create | Access::Existing)
    }
}

/// The ledger database. Cheap to clone; all clones share one pool.
#[derive(Clone)]
pub struct Store {
    pool: Pool<SqliteConnectionManager>,
    path: PathBuf,
    granularity: Granularity,
    opts: OpenOptionsStore,
    /// The files a server opened, checked before every write.
    watched: Option<Arc<Watched>>,
    /// Of this store's pool (a [`Store::dedicated`] one has its own).
    stop: Arc<cancel::PoolStop>,
    /// How the file is opened (see [`Media`]).
    media: Media,
    /// Counts this store's clones: the pool's connections close, and the
    /// last one to close removes the `-wal` file, only once all are gone.
    /// Declared last, so that it is dropped after `pool`: the last clone
    /// waits there until the pool's connections have closed.
    clones: LastClone,
}

impl Store {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How hard this store's commits are pushed to disk.
    pub fn sync_mode(&self) -> SyncMode {
        self.opts.sync
    }

    /// Whether this store may write to the ledger at all.
    pub fn may_write(&self) -> bool {
        self.opts.access.may_write() && !self.opts.read_only
    }

    pub fn granularity(&self) -> Granularity {
        self.granularity
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use super::*;

    pub fn temp_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path().join("t.db"), OpenOptionsStore::default()).expect("open store");
        (dir, store)
    }

    /// Whether the `config` table holds a row under `key`: tests of
    /// writes use it as scratch space, with keys that are no setting.
    pub fn has_config_row(store: &Store, key: &str) -> bool {
        store
            .read(|tx| {
                Ok(
                    tx.query_row("SELECT EXISTS (SELECT 1 FROM config WHERE key = ?1)", [key], |r| {
                        r.get::<_, bool>(0)
                    })?,
                )
            })
            .expect("read config")
    }

    /// What SQLite plans for `sql`, one line per step (parameters, if any,
    /// bound to placeholder text).
    pub fn plan(store: &Store, sql: &str) -> String {
        store
            .read(|tx| {
                let mut stmt = tx.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
                let steps = stmt
                    .query_map(
                        rusqlite::params!["s", "b", "n", "l"][..stmt.parameter_count()].as_ref(),
                        |r| r.get::<_, String>(3),
                    )?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                Ok(steps.join(" | "))
            })
            .expect("query plan")
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::temp_store;

    /// Another writer on the same file (an older thoughtbox, or sqlite3)
    /// inserts rows without moving the tails; the next append notices and
    /// links to the real newest node.
    #[test]
    fn tails_follow_rows_inserted_by_other_writers() {
        use crate::domain::{NewSession, ThoughtInput};
        use crate::store::Target;
        let (_dir, store) = temp_store();
        let sid = store.create_session(NewSession::titled("shared")).unwrap().id;
        let input = |branch: Option<&str>| ThoughtInput {
            branch_id: branch.map(String::from),
            branch_from_thought: branch.map(|_| 1),
            ..ThoughtInput::text("ours")
        };
        store.append_thought(Target::Session(sid.clone()), input(None)).unwrap();
        // Thoughts written without moving the tails (a person with sqlite3;
        // since version 12 the first thought of a branch gets its row, with
        // itself as the tail, from a trigger, and the second leaves it behind).
        store
            .conn()
            .unwrap()
            .execute_batch(&format!(
                "INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought, next_thought_needed, prev_node, created_at)
                 VALUES ('{sid}', '{sid}:2', 2, 2, 'theirs', 1, '{sid}:1', '2026-01-01T00:00:00.000Z');
                 INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought, next_thought_needed,
                     prev_node, branch_from_thought, branch_origin, created_at)
                 VALUES ('{sid}', '{sid}:b:1', 'b', 1, 2, 'their branch', 1, '{sid}:1', 1, '{sid}:1', '2026-01-01T00:00:00.000Z');
                 INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought, next_thought_needed,
                     prev_node, branch_from_thought, branch_origin, created_at)
                 VALUES ('{sid}', '{sid}:b:2', 'b', 2, 2, 'their branch 2', 1, '{sid}:b:1', 1, '{sid}:1', '2026-01-01T00:00:00.000Z');"
            ))
            .unwrap();
        let main = store.append_thought(Target::Session(sid.clone()), input(None)).unwrap();
        assert_eq!(main.thought.node_id, format!("{sid}:3"));
        assert_eq!(main.thought.prev_node.as_deref(), Some(format!("{sid}:2").as_str()));
        let branch = store
            .append_thought(Target::Session(sid.clone()), input(Some("b")))
            .unwrap();
        assert_eq!(branch.thought.node_id, format!("{sid}:b:3"));
        assert_eq!(branch.thought.prev_node.as_deref(), Some(format!("{sid}:b:2").as_str()));
    }

    /// Without AUTOINCREMENT, deleting the newest session frees its ids for
    /// the next thoughts; they must still reach the full-text index.
    #[test]
    fn ids_freed_by_a_delete_are_indexed_again() {
        use crate::domain::{NewSession, ThoughtInput};
        use crate::store::Target;
        let (_dir, store) = temp_store();
        let add = |sid: &str, text: &str| {
            let input = ThoughtInput::text(text);
            store
                .append_thought(Target::Session(sid.into()), input)
                .unwrap()
                .thought
                .seq
        };
        let a = store.create_session(NewSession::titled("a")).unwrap().id;
        let b = store.create_session(NewSession::titled("b")).unwrap().id;
        add(&a, "kept");
        let freed = add(&b, "removed");
        assert_eq!(store.search_thoughts("removed", 10).unwrap().len(), 1);
        store.delete_session(&b).unwrap();
        let c = store.create_session(NewSession::titled("c")).unwrap().id;
        assert_eq!(add(&c, "reborn"), freed, "the freed id is handed out again");
        assert_eq!(store.search_thoughts("reborn", 10).unwrap().len(), 1);
        assert!(store.search_thoughts("removed", 10).unwrap().is_empty());
    }
}
