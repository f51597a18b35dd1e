//! Opening a ledger: what [`Store::open`] finds in the file before it
//! writes anything (nothing yet, a ledger at this or an older schema,
//! another program's tables), the migrations it then runs under a lock
//! shared by every process on the file, and the default settings it fills
//! in. The file-system checks it makes first are in `files`, the pool it
//! ends with in `pool`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::Connection;

use super::files::{check_header, check_writable, create_file, private_mode};
use super::pool::{BUSY_TIMEOUT, configure, pool};
use super::{Access, LastClone, Media, OpenOptionsStore, Store, absolute, open_file, real_path};
use crate::domain::{self, ConfigDefault, ConfigKey, Granularity};
use crate::error::{Error, Result};
use crate::files::with_suffix;

mod embedded {
    refinery::embed_migrations!("migrations");
}

/// Hold an exclusive lock on `<db>.lock` while migrating, so that several
/// servers starting at once on a new file do not race to create tables.
/// Beside the file a symlink points to: a server opening the ledger through
/// the link and one opening it by its own name take the same lock.
fn migration_lock(path: &Path) -> Result<File> {
    let path = real_path(path);
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let mut opts = crate::private::file_options();
    opts.read(true).write(true).create(true).truncate(false);
    let file = opts
        .open(&lock_path)
        .map_err(|e| Error::io(format!("opening lock file {}", lock_path.display()), e))?;
    file.lock()
        .map_err(|e| Error::io(format!("locking {}", lock_path.display()), e))?;
    Ok(file)
}

/// What a file at the database path holds, seen before thoughtbox changes
/// anything in it.
#[derive(Debug, PartialEq)]
pub(super) enum Found {
    /// Nothing yet: an empty file, or an SQLite database without tables.
    Fresh,
    /// A ledger at this schema version, whose settings are all there.
    Current,
    /// A ledger at this older schema version.
    Behind(i64),
    /// A ledger at this schema version with some settings missing.
    Unset,
    /// Tables of another program (the first few of them). `history`: it has
    /// a migration history table, as another process beginning a ledger
    /// would; looked at again under the migration lock to be sure.
    Other { tables: Vec<String>, history: bool },
}

/// Look at the database through `conn` without writing to it, in one read
/// transaction (one consistent view of a ledger another process is
/// creating or upgrading).
pub(super) fn inspect(conn: &Connection, path: &Path) -> Result<Found> {
    let tx = conn.unchecked_transaction()?;
    let found = inspect_in(&tx, path)?;
    tx.commit()?;
    Ok(found)
}

fn inspect_in(conn: &Connection, path: &Path) -> Result<Found> {
    let unreadable = |e: rusqlite::Error| {
        // The file system failing (a full disk where the -shm cannot be
        // made, no free inodes, a read-only mount) is not a damaged file:
        // say what the system said, since the file needs no repair.
        if matches!(
            e.sqlite_error_code(),
            Some(
                rusqlite::ErrorCode::SystemIoFailure | rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::DiskFull
            )
        ) {
            return Error::invalid(
                "db",
                format!(
                    "{} could not be opened: {e}. The file itself may well be fine: the file system refused (a full \
                     disk, no free inodes, a read-only mount); SQLite needs room for the -wal and -shm files beside \
                     it, so free some space and start again",
                    path.display()
                ),
            );
        }
        Error::invalid(
            "db",
            format!("{} cannot be read as an SQLite database: {e}", path.display()),
        )
    };
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut stmt| stmt.query_map([], |r| r.get(0))?.collect())
        .map_err(unreadable)?;
    if tables.is_empty() {
        return Ok(Found::Fresh);
    }
    let has_history = tables.iter().any(|t| t == "refinery_schema_history");
    let ours = has_history
        && tables.iter().any(|t| t == "thoughts")
        && conn
            .query_row(
                "SELECT EXISTS (SELECT 1 FROM refinery_schema_history WHERE version = 1 AND name = 'initial')",
                [],
                |r| r.get::<_, bool>(0),
            )
            .unwrap_or(false);
    if !ours {
        // The migration runner creates its history table in a transaction
        // of its own before the first migration: a ledger being created (or
        // whose creation was killed at that point) has that table, empty.
        let bare_history = has_history
            && tables
                .iter()
                .all(|t| t == "refinery_schema_history" || t == "sqlite_sequence")
            && conn
                .query_row("SELECT NOT EXISTS (SELECT 1 FROM refinery_schema_history)", [], |r| {
                    r.get::<_, bool>(0)
                })
                .unwrap_or(false);
        if bare_history {
            return Ok(Found::Fresh);
        }
        let mut shown: Vec<String> = tables.into_iter().take(6).collect();
        if shown.len() > 5 {
            shown[5] = "...".into();
        }
        return Ok(Found::Other {
            tables: shown,
            history: has_history,
        });
    }
    let found: i64 = conn
        .query_row(
            "SELECT coalesce(max(version), 0) FROM refinery_schema_history",
            [],
            |r| r.get(0),
        )
        .map_err(unreadable)?;
    let known = latest_known_version();
    if found > known {
        return Err(Error::SchemaTooNew {
            path: path.display().to_string(),
            found,
            known,
        });
    }
    // A setting missing (a key added since, or a creation cut short) is
    // written by `ensure_config` when the ledger is opened for writing.
    let settings: i64 = conn
        .query_row(
            &format!(
                "SELECT count(*) FROM config WHERE key IN ({})",
                ["?"; ConfigKey::ALL.len()].join(", ")
            ),
            rusqlite::params_from_iter(ConfigKey::ALL.map(ConfigKey::name)),
            |r| r.get(0),
        )
        .unwrap_or(0);
    Ok(if found < known {
        Found::Behind(found)
    } else if settings < ConfigKey::ALL.len() as i64 {
        Found::Unset
    } else {
        Found::Current
    })
}

fn latest_known_version() -> i64 {
    embedded::migrations::runner()
        .get_migrations()
        .iter()
        .map(|m| i64::from(m.version()))
        .max()
        .unwrap_or(0)
}

/// The schema version before migration V17, which records that the
/// anti-patterns saved in an older wording were rewritten.
const BEFORE_CURRENT_WORDING: i32 = 16;

fn migrate(conn: &mut Connection) -> Result<()> {
    // Up to version 16, then the rewrite that needs Rust (a title cut from a
    // quoted line, a slug), then the rest: run once, when V17 is next. Cut
    // short between the two, it runs again on the next open, and leaves
    // what it rewrote as it is.
    embedded::migrations::runner()
        .set_target(refinery::Target::Version(BEFORE_CURRENT_WORDING))
        .run(conn)?;
    let at: i64 = conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM refinery_schema_history",
        [],
        |r| r.get(0),
    )?;
    if at == i64::from(BEFORE_CURRENT_WORDING) {
        super::knowledge::legacy::rewrite_older_anti_patterns(conn)?;
    }
    embedded::migrations::runner().run(conn)?;
    Ok(())
}

/// A new ledger at `path` at schema `version`, as an older thoughtbox left it.
#[cfg(test)]
pub(super) fn ledger_at(path: &Path, version: i32) -> Connection {
    let mut conn = Connection::open(path).expect("open the ledger");
    embedded::migrations::runner()
        .set_target(refinery::Target::Version(version))
        .run(&mut conn)
        .expect("migrate");
    conn
}

fn ensure_config(conn: &Connection) -> Result<()> {
    let mut stmt = conn.prepare("INSERT OR IGNORE INTO config (key, value) VALUES (?1, ?2)")?;
    for key in ConfigKey::ALL {
        let value = match key.default_value() {
            ConfigDefault::Fixed(v) => v.to_string(),
            ConfigDefault::NewUuid => uuid::Uuid::new_v4().to_string(),
            ConfigDefault::Now => domain::now(),
        };
        stmt.execute((key.name(), value))?;
    }
    Ok(())
}

impl Store {
    /// Open (creating if needed) the ledger at `path`.
    pub fn open(path: impl AsRef<Path>, opts: OpenOptionsStore) -> Result<Store> {
        let path = absolute(path.as_ref())?;
        if opts.read_only {
            if !path.is_file() {
                return Err(Error::invalid(
                    "db",
                    format!("no database at {} to open read-only", path.display()),
                ));
            }
        } else {
            create_file(&path)?;
        }
        let media = match Media::of(&path, opts.access)? {
            // Read-only in SQLite too (`mode=ro`): it reads the WAL through
            // the -shm as any reader does, and can write nothing.
            Media::Writable if opts.read_only => Media::ReadOnlyWal,
            media => media,
        };
        if media == Media::Writable {
            check_writable(&path, opts.access)?;
        }
        check_header(&path)?;
        {
            // Looked at before anything is written: another program's
            // database is left as it was, and a ledger already up to date
            // is opened without writing (a command that only reads then
            // never waits for another program's write lock).
            let mut conn = match media {
                Media::Writable => open_file(&path)?,
                _ => {
                    let (name, flags) = media.open_as(&path);
                    Connection::open_with_flags(name, flags)?
                }
            };
            conn.busy_timeout(BUSY_TIMEOUT)?;
            let first = inspect(&conn, &path)?;
            let foreign_tables = |tables: Vec<String>| {
                Error::invalid(
                    "db",
                    format!(
                        "{} is an SQLite database of another program (tables: {}), not a thoughtbox ledger; \
                         thoughtbox keeps its ledger in a file of its own: name another path",
                        path.display(),
                        tables.join(", ")
                    ),
                )
            };
            let holds_no_ledger = || {
                Error::invalid(
                    "db",
                    format!(
                        "{} holds no ledger (it is empty); the server, `import` and `config set` create one",
                        path.display()
                    ),
                )
            };
            let older = |found: i64| {
                // Nothing can upgrade it where it cannot be written.
                let how = match media {
                    Media::Writable => {
                        "stop the servers of the older version, then start this one (or run `import`, `config set` \
                         or `repair`), which upgrades it; `backup` copies it as it is"
                    }
                    _ => {
                        "it is on a read-only file system, where it cannot be upgraded: `thoughtbox backup` copies it \
                         as it is to a writable place, where this thoughtbox upgrades the copy when it opens it"
                    }
                };
                Error::invalid(
                    "db",
                    format!(
                        "{} is a ledger of schema version {found}, and this thoughtbox uses version {}: {how}",
                        path.display(),
                        latest_known_version()
                    ),
                )
            };
            let access = opts.access;
            let began_here = matches!(first, Found::Fresh);
            let settled = match first {
                Found::Current => true,
                // Without the history table no thoughtbox ever began on this
                // file: no need to wait for one.
                Found::Other { tables, history: false } => return Err(foreign_tables(tables)),
                // Nothing to read yet, unless a thoughtbox has used the file
                // (its lock file is there) and may be creating the ledger
                // right now: then look again under the lock (else a `stats`
                // started with a new server says "empty").
                Found::Fresh if access.needs_ledger() && !with_suffix(&real_path(&path), ".lock").exists() => {
                    return Err(holds_no_ledger());
                }
                // Settings are filled in with their defaults by a command that writes.
                Found::Unset if !access.may_write() => true,
                Found::Behind(_) if access == Access::Copy => true,
                _ => false,
            };
            if !settled {
                // Under the lock, another process that was creating or
                // migrating the ledger has finished: look again.
                // On a read-only mount nothing can be creating the ledger:
                // no lock (it could not be made there), the first look stands.
                let _lock = match media {
                    Media::Writable => Some(migration_lock(&path)?),
                    _ => None,
                };
                match inspect(&conn, &path)? {
                    Found::Current => {}
                    Found::Other { tables, .. } => return Err(foreign_tables(tables)),
                    Found::Fresh if access.needs_ledger() => return Err(holds_no_ledger()),
                    Found::Unset | Found::Behind(_) if access == Access::Copy => {}
                    Found::Unset if access == Access::Read => {}
                    // A command that only reads does not upgrade the ledger: a
                    // server of the older version may be running on it, and it
                    // would go on writing as the old schema wants.
                    Found::Behind(found) if access == Access::Read => return Err(older(found)),
                    Found::Fresh | Found::Behind(_) | Found::Unset => {
                        if began_here {
                            private_mode(&path);
                        }
                        configure(
                            &conn,
                            &Arc::default(),
                            opts.sync,
                            false,
                            access,
                            opts.checkpoints.litestream_at(&path),
                        )?;
                        migrate(&mut conn)?;
                        ensure_config(&conn)?;
                    }
                }
            }
        }
        let stop = Arc::default();
        let clones = LastClone::default();
        let pool = pool(
            &path,
            &opts,
            media,
            opts.pool_size.unwrap_or(crate::limits::BLOCKING_THREADS as u32),
            &stop,
            &clones.open,
        )?;
        let store = Store {
            pool,
            stop,
            clones,
            media,
            path,
            granularity: Granularity::Monthly,
            opts,
            watched: None,
        };
        let granularity = match store.config_value(ConfigKey::SessionPartitionGranularity)? {
            None => Granularity::default(),
            Some(g) => Granularity::parse(&g).unwrap_or_else(|| {
                // Set by hand to something else: said, not followed silently.
                tracing::warn!(
                    "the ledger's sessionPartitionGranularity is {g:?}, not monthly, weekly, daily or none: \
                     exports use monthly (set it with `thoughtbox config set sessionPartitionGranularity ...`)"
                );
                Granularity::default()
            }),
        };
        Ok(Store { granularity, ..store })
    }

    /// The schema version recorded by the migrations.
    pub fn schema_version(&self) -> Result<i64> {
        let conn = self.conn()?;
        Ok(conn.query_row(
            "SELECT COALESCE(MAX(version), 0) FROM refinery_schema_history",
            [],
            |r| r.get(0),
        )?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::temp_store;
    use std::time::Duration;

    #[test]
    fn opening_creates_private_file_and_config() {
        let (dir, store) = temp_store();
        let cfg = store.config().unwrap();
        assert_eq!(cfg.session_partition_granularity, "monthly");
        assert_eq!(cfg.install_id.len(), 36);
        assert_eq!(store.schema_version().unwrap(), latest_known_version());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("t.db")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        // Reopening keeps the install id.
        let again = Store::open(dir.path().join("t.db"), OpenOptionsStore::default()).unwrap();
        assert_eq!(again.config().unwrap().install_id, cfg.install_id);
    }

    /// A setting missing (deleted by hand, or one added since the ledger
    /// was made) is written with its default when the ledger is opened to
    /// write; the others are kept.
    #[test]
    fn a_missing_setting_is_written_on_opening() {
        let (dir, store) = temp_store();
        let before = store.config().unwrap();
        store
            .conn()
            .unwrap()
            .execute(
                "DELETE FROM config WHERE key IN (?1, ?2)",
                [ConfigKey::CreatedAt.name(), ConfigKey::DisableThoughtLogging.name()],
            )
            .unwrap();
        drop(store);
        let again = Store::open(dir.path().join("t.db"), OpenOptionsStore::default()).unwrap();
        for key in ConfigKey::ALL {
            let value = again.config_value(key).unwrap().unwrap_or_default();
            assert!(key.accepts(&value), "{key:?} = {value:?}");
        }
        let after = again.config().unwrap();
        assert_eq!(after.install_id, before.install_id);
        assert!(!after.disable_thought_logging);
    }

    /// An empty file that was there already (`touch`) becomes a private
    /// ledger too; a command that only reads leaves it as it was.
    #[cfg(unix)]
    #[test]
    fn a_ledger_begun_in_an_existing_empty_file_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("touched.db");
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let mode = || std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        let read = OpenOptionsStore {
            access: Access::Read,
            ..Default::default()
        };
        assert!(Store::open(&path, read).is_err(), "no ledger to read");
        assert_eq!(mode(), 0o644);
        Store::open(&path, OpenOptionsStore::default()).unwrap();
        assert_eq!(mode(), 0o600);
    }

    /// A command that only reads, started while a server is creating the
    /// ledger in the file (an empty file, the lock held), waits for it
    /// instead of saying the file is empty; on an empty file no thoughtbox
    /// ever used (no lock file), it says so at once.
    #[test]
    fn a_read_waits_for_a_ledger_being_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.db");
        std::fs::write(&path, "").unwrap();
        let read = || {
            Store::open(
                &path,
                OpenOptionsStore {
                    access: Access::Read,
                    ..Default::default()
                },
            )
        };
        let e = read().err().unwrap();
        assert!(e.to_string().contains("holds no ledger"), "{e}");
        assert!(!with_suffix(&path, ".lock").exists(), "a read leaves no lock file");
        let lock = migration_lock(&path).unwrap();
        let creator = {
            let path = path.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                let mut conn = Connection::open(&path).unwrap();
                migrate(&mut conn).unwrap();
                ensure_config(&conn).unwrap();
                drop(lock);
            })
        };
        let store = read().unwrap();
        assert_eq!(store.counts().unwrap(), (0, 0));
        creator.join().unwrap();
    }

    /// Every session of a ledger from before threads (version 14) is an
    /// active root thread after the upgrade, with nothing done by the user;
    /// its objective is its description, else its title.
    #[test]
    fn sessions_before_threads_become_active_root_threads() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v14.db");
        let (a, b) = (
            "6f1c0a52-5d2e-4a57-9d43-3e4c6b1f2a10",
            "7f1c0a52-5d2e-4a57-9d43-3e4c6b1f2a10",
        );
        {
            let mut conn = Connection::open(&path).unwrap();
            embedded::migrations::runner()
                .set_target(refinery::Target::Version(14))
                .run(&mut conn)
                .unwrap();
            let at = "2026-01-01T00:00:00.000Z";
            conn.execute(
                "INSERT INTO sessions (id, title, description, created_at, updated_at, last_accessed_at)
                 VALUES (?1, 'old', 'what for', ?3, ?3, ?3), (?2, 'older', NULL, ?3, ?3, ?3)",
                (a, b, at),
            )
            .unwrap();
        }
        let store = Store::open(&path, OpenOptionsStore::default()).unwrap();
        assert_eq!(store.schema_version().unwrap(), latest_known_version());
        for (id, objective) in [(a, "what for"), (b, "older")] {
            let (t, r) = store.thread(id).unwrap();
            assert_eq!(t.status, crate::domain::thread::ThreadStatus::Active);
            assert_eq!((t.parent_id, t.objective.as_str()), (None, objective));
            assert!(r.children.is_empty() && r.depends_on.is_empty());
        }
        assert_eq!(store.export_registry().unwrap().metadata.thread_count, 2);
    }

    /// A ledger written by schema version 2 (AUTOINCREMENT ids, the
    /// chain-order index, no tails) opens, migrates and keeps linking.
    #[test]
    fn version_2_ledgers_migrate_and_keep_their_links() {
        use crate::domain::ThoughtInput;
        use crate::store::Target;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v2.db");
        let sid = "6f1c0a52-5d2e-4a57-9d43-3e4c6b1f2a10";
        {
            let mut conn = Connection::open(&path).unwrap();
            embedded::migrations::runner()
                .set_target(refinery::Target::Version(2))
                .run(&mut conn)
                .unwrap();
            conn.execute_batch(&format!(
                "INSERT INTO sessions (id, title, thought_count, branch_count, created_at, updated_at, last_accessed_at)
                 VALUES ('{sid}', 'old', 4, 1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z');
                 INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought,
                     next_thought_needed, prev_node, branch_from_thought, branch_origin, created_at) VALUES
                   ('{sid}', '{sid}:1', NULL, 1, 3, 'alpha', 1, NULL, NULL, NULL, '2026-01-01T00:00:01.000Z'),
                   ('{sid}', '{sid}:2', NULL, 2, 3, 'beta', 1, '{sid}:1', NULL, NULL, '2026-01-01T00:00:02.000Z'),
                   ('{sid}', '{sid}:alt:1', 'alt', 1, 3, 'gamma', 1, '{sid}:1', 1, '{sid}:1', '2026-01-01T00:00:03.000Z'),
                   ('{sid}', '{sid}:3', NULL, 3, 3, 'delta', 1, '{sid}:2', NULL, NULL, '2026-01-01T00:00:04.000Z');
                 INSERT INTO branches (session_id, branch_id, from_thought, origin_node, created_at)
                 VALUES ('{sid}', 'alt', 1, '{sid}:1', '2026-01-01T00:00:03.000Z');
                 -- A newer session, indexed, then deleted the way version 2 did it:
                 -- the watermark stays above the freed id.
                 INSERT INTO sessions (id, title, thought_count, created_at, updated_at, last_accessed_at)
                 VALUES ('gone', 'gone', 1, '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z', '2026-01-02T00:00:00.000Z');
                 INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought, next_thought_needed, created_at)
                 VALUES ('gone', 'gone:1', 1, 1, 'epsilon', 1, '2026-01-02T00:00:01.000Z');
                 INSERT INTO thoughts_fts (rowid, thought) SELECT id, thought FROM thoughts;
                 UPDATE thoughts_fts_state SET indexed_through = (SELECT max(id) FROM thoughts);
                 INSERT INTO thoughts_fts (thoughts_fts, rowid, thought)
                 SELECT 'delete', id, thought FROM thoughts WHERE session_id = 'gone';
                 DELETE FROM thoughts WHERE session_id = 'gone';
                 DELETE FROM sessions WHERE id = 'gone';"
            ))
            .unwrap();
        }
        let store = Store::open(&path, OpenOptionsStore::default()).unwrap();
        assert_eq!(store.schema_version().unwrap(), latest_known_version());
        let conn = store.conn().unwrap();
        let tails: (Option<String>, Option<String>, i64) = conn
            .query_row(
                "SELECT s.tail_node, b.tail_node, (SELECT count(*) FROM sqlite_sequence WHERE name = 'thoughts')
                 FROM sessions s JOIN branches b ON b.session_id = s.id",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(tails, (Some(format!("{sid}:3")), Some(format!("{sid}:alt:1")), 0));
        drop(conn);
        let input = |branch: Option<&str>| ThoughtInput {
            branch_id: branch.map(String::from),
            branch_from_thought: branch.map(|_| 1),
            ..ThoughtInput::text("after the upgrade")
        };
        let main = store.append_thought(Target::Session(sid.into()), input(None)).unwrap();
        assert_eq!(main.thought.node_id, format!("{sid}:4"));
        assert_eq!(main.thought.prev_node.as_deref(), Some(format!("{sid}:3").as_str()));
        assert_eq!(main.thought.seq, 5, "ids continue after the highest");
        let alt = store
            .append_thought(Target::Session(sid.into()), input(Some("alt")))
            .unwrap();
        assert_eq!(alt.thought.prev_node.as_deref(), Some(format!("{sid}:alt:1").as_str()));
        // The views were rebuilt and the old rows are searchable.
        let next: String = store
            .conn()
            .unwrap()
            .query_row(
                "SELECT next FROM thought_next WHERE node_id = ?1",
                [format!("{sid}:1")],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(next, format!("[\"{sid}:2\",\"{sid}:alt:1\"]"));
        assert_eq!(store.search_thoughts("gamma", 10).unwrap().len(), 1);
        // Id 5 was handed out again and still reached the index.
        assert_eq!(store.search_thoughts("upgrade", 10).unwrap().len(), 2);
        assert!(store.search_thoughts("epsilon", 10).unwrap().is_empty());
    }

    #[test]
    fn newer_schema_is_refused_and_untouched() {
        let (dir, store) = temp_store();
        let path = dir.path().join("t.db");
        store
            .conn()
            .unwrap()
            .execute(
                "INSERT INTO refinery_schema_history (version, name, applied_on, checksum) VALUES (999, 'future', 'x', '0')",
                [],
            )
            .unwrap();
        drop(store);
        let err = Store::open(&path, OpenOptionsStore::default()).err().unwrap();
        assert!(matches!(err, Error::SchemaTooNew { found: 999, .. }), "{err}");
    }

    /// Several processes creating the ledger on one new path at once: the
    /// ones that look while another is between creating the migration
    /// history and the first tables wait for it instead of taking the file
    /// for another program's. Also a file left in that state by a creation
    /// that was killed.
    #[test]
    fn a_ledger_being_created_is_not_taken_for_a_foreign_database() {
        for round in 0..10 {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("new.db");
            let opened: Vec<Result<Store>> = std::thread::scope(|scope| {
                let starts: Vec<_> = (0..8)
                    .map(|_| scope.spawn(|| Store::open(&path, OpenOptionsStore::default())))
                    .collect();
                starts.into_iter().map(|s| s.join().unwrap()).collect()
            });
            for o in opened {
                assert!(o.is_ok(), "round {round}: {}", o.err().unwrap());
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("killed.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch(
                "CREATE TABLE refinery_schema_history (version INT4 PRIMARY KEY, name VARCHAR(255),
                     applied_on VARCHAR(255), checksum VARCHAR(255));",
            )
            .unwrap();
        let store = Store::open(&path, OpenOptionsStore::default()).unwrap();
        assert_eq!(store.schema_version().unwrap(), latest_known_version());
    }

    /// An error saying the file is damaged names the command that mends
    /// what hand edits can break.
    #[test]
    fn a_corruption_error_points_to_repair() {
        let e = Error::from(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CORRUPT_VTAB),
            Some("database disk image is malformed".into()),
        ));
        assert!(e.to_string().contains("thoughtbox repair"), "{e}");
        let e = Error::from(rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        ));
        // A lock is no damage: nothing to repair (it may name a repair
        // that is running as the lock's holder).
        assert!(!e.to_string().contains("run `thoughtbox repair`"), "{e}");
    }

    /// A command that only reads does not upgrade a ledger of an older
    /// schema (a server of that version may be writing to it): it says so
    /// and leaves the file as it was.
    #[test]
    fn reading_commands_leave_an_older_schema_alone() {
        let (dir, store) = temp_store();
        // A copy not in WAL mode: what is written to it is in the file.
        let path = dir.path().join("older.db");
        store.backup_to(&path).unwrap();
        let latest = latest_known_version();
        let conn = Connection::open(&path).unwrap();
        conn.execute("DELETE FROM refinery_schema_history WHERE version = ?1", [latest])
            .unwrap();
        // The version before it (numbers may have gaps).
        let previous: i64 = conn
            .query_row("SELECT max(version) FROM refinery_schema_history", [], |r| r.get(0))
            .unwrap();
        drop(conn);
        let before = std::fs::read(&path).unwrap();
        let opts = OpenOptionsStore {
            access: Access::Read,
            ..Default::default()
        };
        let err = Store::open(&path, opts).err().unwrap().to_string();
        assert!(err.contains(&format!("schema version {previous}")), "{err}");
        assert!(err.contains("stop the servers of the older version"), "{err}");
        assert_eq!(std::fs::read(&path).unwrap(), before);
        // `backup` copies it as it is.
        let copy = Store::open(
            &path,
            OpenOptionsStore {
                access: Access::Copy,
                ..Default::default()
            },
        )
        .unwrap();
        let saved = dir.path().join("saved.db");
        copy.backup_to(&saved).unwrap();
        drop(copy);
        assert_eq!(
            std::fs::read(&path).unwrap(),
            before,
            "the file a backup copies stays as it was"
        );
        let n: i64 = Connection::open(&saved)
            .unwrap()
            .query_row("SELECT max(version) FROM refinery_schema_history", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, previous);
    }
}
