//! SQLite storage: opening the database (directory, file mode, pragmas,
//! migrations serialised across processes), the connection pool, and one
//! file per table family. Everything here is synchronous rusqlite; async
//! callers run it on blocking threads.

mod analysis;
mod backup;
pub mod cancel;
#[cfg(test)]
mod hand_edits;
mod import;
mod knowledge;
mod projects;
mod repair;
mod search;
mod sessions;
pub mod snippet;
mod stats;
mod tag_filter;
mod thoughts;

use std::fs::{DirBuilder, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use r2d2::{Pool, PooledConnection};
use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::functions::FunctionFlags;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

use crate::domain::{self, Granularity};
use crate::error::{Error, Result};

pub use import::ImportOutcome;
pub use knowledge::{KnowledgeItem, Saved};
pub use repair::RepairReport;
pub(crate) use search::query_phrases;
pub use search::{CANDIDATES as SEARCH_CANDIDATES, SEARCH_INDEX_WAIT, SearchHit, SessionHits, ThoughtHit, fts_query};
pub use sessions::{SessionPage, SessionsMeant};
pub use stats::{FileSizes, LedgerStats};
pub use thoughts::{Appended, MAX_BRANCHES_NAMED, SessionSnapshot, Shape, Structure, Target, ThoughtQuery};

mod embedded {
    refinery::embed_migrations!("migrations");
}

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

/// Installation-wide settings kept in the `config` table.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Config {
    pub install_id: String,
    pub data_dir: String,
    pub disable_thought_logging: bool,
    pub session_partition_granularity: String,
    pub created_at: String,
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

/// Counts a store's clones, and the connections of its pool still open.
/// Dropping the last clone waits (briefly) for those connections to close:
/// r2d2 may hold the pool on a worker thread for a moment after the last
/// handle is gone (opening the connection it keeps idle), and a connection
/// closing then would copy the WAL into the file behind the back of a
/// caller who took the store for closed, and leave `-wal` and `-shm` files
/// beside it until then.
#[derive(Clone, Default)]
struct LastClone {
    clones: Arc<()>,
    open: Arc<AtomicUsize>,
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

/// Whether the ledger's `disableThoughtLogging` setting (as read, or the
/// error reading it) keeps thought text out of the event stream. A privacy
/// setting fails closed: only `false` (or no setting at all) lets the text
/// through; `true`, and anything else set by hand (`1`, `yes`, `TRUE`), or a
/// setting that cannot be read, keeps it out.
pub fn thought_logging_disabled(setting: Result<Option<String>>) -> bool {
    match setting {
        Ok(None) => false,
        Ok(Some(v)) => match v.trim().to_ascii_lowercase().as_str() {
            "false" => false,
            "true" => true,
            other => {
                tracing::warn!(
                    "the ledger's disableThoughtLogging is {other:?}, not true or false: thought text is kept out \
                     of events (set it with `thoughtbox config set disableThoughtLogging true|false`)"
                );
                true
            }
        },
        Err(e) => {
            tracing::warn!("reading disableThoughtLogging: {e}; thought text is kept out of events");
            true
        }
    }
}

/// How a database file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Media {
    /// As a file that may be written: locks, `-wal` and `-shm` beside it.
    Writable,
    /// On a file system that is read-only everywhere (a snapshot, a backup
    /// disk, read-only media), by a command that only reads, with no WAL
    /// content beside it: nothing can change the file, so it is opened
    /// immutable, without locks or a `-shm` (which could not be made there).
    Frozen,
    /// On a read-only mount with a `-wal` and `-shm` beside it: left by a
    /// server that did not stop cleanly, or kept by one that writes the
    /// file through another mount (a read-only bind mount into a
    /// container). Opened read-only, so that SQLite reads the WAL through
    /// the `-shm` and takes its read locks as with any writer.
    ReadOnlyWal,
}

impl Media {
    /// How a command with `access` opens the file at `path`.
    fn of(path: &Path, access: Access) -> Result<Media> {
        if access.may_write() || !on_read_only_mount(path) {
            return Ok(Media::Writable);
        }
        let real = real_path(path);
        let (wal, shm) = (with_suffix(&real, "-wal"), with_suffix(&real, "-shm"));
        let wal_bytes = std::fs::metadata(&wal).map(|m| m.len()).ok();
        match (wal_bytes, shm.exists()) {
            (Some(_), true) => Ok(Media::ReadOnlyWal),
            (None | Some(0), _) if file_system_read_only(&real) => Ok(Media::Frozen),
            (Some(bytes), false) if bytes > 0 => Err(Error::invalid(
                "db",
                format!(
                    "{} is on a read-only file system, and its {} ({bytes} bytes) may hold writes not yet in \
                     the file, which SQLite can only read through a -shm file beside it: copy the database and its \
                     -wal together to a writable place and work on the copy",
                    path.display(),
                    wal.display()
                ),
            )),
            // A read-only mount of a file system another mount can write
            // (a bind mount): a server starting there meanwhile would
            // change pages under an immutable read, which then gives a
            // damaged backup or export while saying it succeeded (review
            // 15-a), and without a -shm there are no locks to share.
            _ => Err(Error::invalid(
                "db",
                format!(
                    "{} is on a read-only mount of a file system that can be written through another mount (a \
                     read-only bind mount), and no server has it open: reading it from here could not see a \
                     server that starts writing it meanwhile. Run the command where the file is writable, or on a \
                     copy",
                    path.display()
                ),
            )),
        }
    }

    /// The name and flags a connection opens `path` with.
    /// (A path that is not UTF-8 stays as it is: only the URIs are text.)
    fn open_as(self, path: &Path) -> (PathBuf, OpenFlags) {
        let read_only = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        match self {
            Media::Writable => (
                path.to_path_buf(),
                OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            ),
            Media::Frozen => (file_uri(path, "mode=ro&immutable=1").into(), read_only),
            Media::ReadOnlyWal => (file_uri(path, "mode=ro").into(), read_only),
        }
    }
}

/// Whether the file system holding the file at `path` is read-only as a
/// whole, not only through the mount `path` is on: on Linux, its
/// superblock's options (`/proc/self/mountinfo`) say `ro`. A bind mount made
/// read-only is not: the same file may be written through another mount.
/// Elsewhere the mount's own flag is all there is to go by.
fn file_system_read_only(path: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(path) else {
            return false;
        };
        let device = format!("{}:{}", rustix::fs::major(meta.dev()), rustix::fs::minor(meta.dev()));
        let Ok(info) = std::fs::read_to_string("/proc/self/mountinfo") else {
            return false;
        };
        // `36 35 98:0 /root /mnt rw,noatime master:1 - ext4 /dev/sda1 ro,errors=continue`
        let mut mounts = info
            .lines()
            .filter(|line| line.split(' ').nth(2) == Some(device.as_str()))
            .peekable();
        mounts.peek().is_some()
            && mounts.all(|line| {
                line.split_once(" - ")
                    .and_then(|(_, tail)| tail.split(' ').nth(2))
                    .is_some_and(|options| options.split(',').any(|o| o == "ro"))
            })
    }
    #[cfg(not(target_os = "linux"))]
    {
        on_read_only_mount(path)
    }
}

/// Whether `path` is on a file system mounted read-only.
fn on_read_only_mount(path: &Path) -> bool {
    #[cfg(unix)]
    {
        rustix::fs::statvfs(real_path(path)).is_ok_and(|s| s.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        false
    }
}

/// `path` as an SQLite URI with `query` (`mode=ro&immutable=1`): every
/// byte but a few safe ones percent-encoded, so that no name can carry a
/// parameter of its own.
pub(crate) fn file_uri(path: &Path, query: &str) -> String {
    // `file://` and an empty authority before an absolute path: after a
    // bare `file:`, a path starting `//` (`//tmp/x`) would be read as the
    // authority `tmp` (review 15-a).
    let absolute = path.as_os_str().as_encoded_bytes().starts_with(b"/");
    let mut uri = String::from(if absolute { "file://" } else { "file:" });
    for &b in path.as_os_str().as_encoded_bytes() {
        if b.is_ascii_alphanumeric() || b"/-_.~".contains(&b) {
            uri.push(char::from(b));
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(query);
    uri
}

/// The database file and its `-shm` as a server opened them, by device and
/// inode. SQLite keeps working on the files it has open: if either is
/// deleted, moved or replaced under a running server, its writes go to a
/// file nobody will read again, or (when another process then opens the
/// path and makes a new `-shm`) two processes write one database without
/// seeing each other's locks, which corrupts it. So the server checks the
/// path before each write and checkpoint, and refuses once they differ.
#[derive(Debug)]
struct Watched {
    /// The database (through a symlink, the file it points to), then the
    /// `-wal` and `-shm` where SQLite keeps them: beside that file.
    files: Vec<(PathBuf, FileId)>,
    /// Logged once.
    reported: std::sync::atomic::AtomicBool,
}

/// `path` with symbolic links resolved, as SQLite resolves them to name the
/// `-wal` and `-shm` files (beside the file a link points to).
pub(crate) fn real_path(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// (device, inode); `None` where the platform has none to give.
type FileId = Option<(u64, u64)>;

fn file_id(path: &Path) -> std::io::Result<FileId> {
    let meta = std::fs::metadata(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Ok(Some((meta.dev(), meta.ino())))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Ok(None)
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

const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// Page size of new databases. A commit writes every page it touched to the
/// WAL in full, and an append touches about eight pages (the row, four
/// indexes, the session row and its updatedAt index); 2 KiB pages halve the
/// bytes written and checkpointed per thought against 4 KiB, for ~16 % more
/// file (two ~700-byte thought rows per page instead of five). Measured in
/// BENCHMARKS.md.
const PAGE_SIZE: i64 = 2048;

/// WAL content past which the server makes the WAL start over from its
/// beginning instead of growing (see [`Store::checkpoint_passive`]).
pub const WAL_RESTART_BYTES: u64 = 8 << 20;
/// The WAL file is cut back to this size when it starts over. Larger than
/// the WAL grows in a burst ([`WAL_RESTART_BYTES`] plus what arrives before
/// the next check, ~20 MiB in all) so that a busy server reuses the file's blocks
/// instead of truncating and re-extending it at every restart, which costs
/// tens of milliseconds on ext4. An idle server truncates it to nothing.
const WAL_FILE_LIMIT: u64 = 32 << 20;

/// The error of a statement stopped by an interrupt or a cancellation.
fn interrupted() -> Error {
    Error::Database(rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_INTERRUPT),
        Some("interrupted".into()),
    ))
}

/// One PASSIVE checkpoint: (frames in the WAL, frames copied into the
/// database), both -1 when the database is not in WAL mode.
fn passive_pass(conn: &Connection) -> rusqlite::Result<(i64, i64)> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(1)?, r.get(2)?)))
}

fn configure(
    conn: &Connection,
    open: &Arc<AtomicUsize>,
    sync: SyncMode,
    background_checkpoints: bool,
    access: Access,
) -> rusqlite::Result<()> {
    track(conn, open)?;
    // busy_timeout first: switching to WAL can itself meet a lock.
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // A reader leaves a file (a backup, say) in the journal mode it has:
    // switching rewrites the header. Ledgers in use are in WAL mode already.
    if access.may_write() {
        // Only a new, empty database takes it; an existing file keeps its own.
        conn.pragma_update(None, "page_size", PAGE_SIZE)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
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
    if background_checkpoints {
        conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    }
    conn.pragma_update(None, "journal_size_limit", WAL_FILE_LIMIT as i64)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(())
}

/// Create the database file (mode 0600) and its directory (0700) if missing.
fn create_file(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = DirBuilder::new();
        builder.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        if dir.exists() && !dir.is_dir() {
            return Err(Error::invalid(
                "db",
                format!(
                    "{} is not a directory, so it cannot hold the database {} (check --db, --data-dir, THOUGHTBOX_DB \
                     and THOUGHTBOX_DATA_DIR)",
                    dir.display(),
                    path.display()
                ),
            ));
        }
        builder
            .create(dir)
            .map_err(|e| Error::io(format!("creating directory {}", dir.display()), e))?;
    }
    let mut opts = OpenOptions::new();
    // A symlink to a file not made yet (a link set up ahead, into a synced
    // folder, say) gets its file: create_new alone would stop at the link.
    let dangling = path.is_symlink() && !path.exists();
    opts.write(true);
    if dangling {
        opts.create(true);
    } else {
        opts.create_new(true);
    }
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    match opts.open(path) {
        Ok(_) => Ok(()),
        Err(_) if path.is_dir() => Err(Error::invalid(
            "db",
            format!(
                "{} is a directory; the database is a file (for example {})",
                path.display(),
                path.join("thoughtbox.db").display()
            ),
        )),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::io(format!("creating database {}", path.display()), e)),
    }
}

/// A ledger begun in a file that was there already (empty: made by
/// `touch`, or by a tool that creates what it is told to open) is made
/// private like one the server creates (mode 0600): it will hold every
/// thought written. Left as it is if that fails (a file of another user).
fn private_mode(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let real = real_path(path);
        if let Ok(meta) = std::fs::metadata(&real)
            && meta.is_file()
            && meta.permissions().mode() & 0o077 != 0
            && let Err(e) = std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o600))
        {
            tracing::warn!("could not make {} private (mode 0600): {e}", real.display());
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Refuse a database whose files are read-only (marked so, or not
/// writable by this user) before SQLite touches them: thoughtbox writes to
/// its database even to read it (the write-ahead log), and SQLite would
/// fail with a bare "attempt to write a readonly database", after creating
/// read-only `-wal` and `-shm` files that keep failing once the database
/// itself is fixed.
fn check_writable(path: &Path, access: Access) -> Result<()> {
    // SQLite keeps the -wal and -shm beside the file a symlink points to.
    let real = real_path(path);
    for file in [real.clone(), with_suffix(&real, "-wal"), with_suffix(&real, "-shm")] {
        let Ok(meta) = std::fs::metadata(&file) else {
            continue;
        };
        let denied = if meta.permissions().readonly() {
            Some("it is marked read-only".to_string())
        } else {
            match OpenOptions::new().read(true).write(true).open(&file) {
                Ok(_) => None,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::PermissionDenied | std::io::ErrorKind::ReadOnlyFilesystem
                    ) =>
                {
                    Some(e.to_string())
                }
                Err(e) => return Err(Error::io(format!("opening {}", file.display()), e)),
            }
        };
        if let Some(why) = denied {
            // Only a command that changes the ledger gets here on a
            // read-only mount: the ones that only read open it there.
            if on_read_only_mount(&real) {
                return Err(Error::invalid(
                    "db",
                    format!(
                        "{} is on a read-only file system, and this changes the ledger: work on a copy in a \
                         writable place (the commands that only read it, such as stats, info, sessions, export \
                         and backup, work where it is)",
                        file.display()
                    ),
                ));
            }
            return Err(Error::invalid(
                "db",
                format!(
                    "{} is not writable ({why}); thoughtbox writes to its database even to read it. Make it writable, or work on a copy",
                    file.display()
                ),
            ));
        }
    }
    // The -wal and -shm are made beside the database: SQLite would say only
    // "unable to open database file" or "attempt to write a readonly database".
    // (A copy in rollback mode, as backups are, is read without them.)
    #[cfg(not(unix))]
    let _ = access;
    #[cfg(unix)]
    if (access.may_write() || in_wal_mode(&real))
        && (!with_suffix(&real, "-wal").exists() || !with_suffix(&real, "-shm").exists())
    {
        let dir = folder_of(&real);
        if let Err(e) = rustix::fs::access(dir, rustix::fs::Access::WRITE_OK | rustix::fs::Access::EXEC_OK) {
            return Err(Error::invalid(
                "db",
                format!(
                    "the directory {} is not writable ({}): SQLite makes the database's -wal and -shm files there, \
                     even to read it. Make it writable, or work on a copy elsewhere",
                    dir.display(),
                    std::io::Error::from(e)
                ),
            ));
        }
    }
    Ok(())
}

/// Whether the database file's header says WAL mode (its read and write
/// versions are 2).
#[cfg(unix)]
fn in_wal_mode(path: &Path) -> bool {
    use std::io::Read;
    let mut header = [0u8; 20];
    File::open(path).and_then(|mut f| f.read_exact(&mut header)).is_ok() && header[18] == 2 && header[19] == 2
}

/// The folder `path` is in (`.` for a bare file name).
pub(crate) fn folder_of(path: &Path) -> &Path {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// `path` with `suffix` appended to its file name (`a.db` + `-wal`).
pub(crate) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
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
    let mut opts = OpenOptions::new();
    opts.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let file = opts
        .open(&lock_path)
        .map_err(|e| Error::io(format!("opening lock file {}", lock_path.display()), e))?;
    file.lock()
        .map_err(|e| Error::io(format!("locking {}", lock_path.display()), e))?;
    Ok(file)
}

/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// What a file at the database path holds, seen before thoughtbox changes
/// anything in it.
#[derive(Debug, PartialEq)]
enum Found {
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

/// Refuse a file that is not an SQLite database before SQLite opens it (it
/// would say only "file is not a database", without naming the file).
fn check_header(path: &Path) -> Result<()> {
    match may_be_database(path) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::invalid(
            "db",
            format!(
                "{} is not an SQLite database, so not a thoughtbox ledger; name the ledger's file, or a new path to create one",
                path.display()
            ),
        )),
        Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
    }
}

/// Whether the regular file at `path` starts with the SQLite header, or is
/// empty (as a new database starts). False for anything but a regular file.
pub(crate) fn may_be_database(path: &Path) -> std::io::Result<bool> {
    use std::io::Read;
    let mut file = File::open(path)?;
    if !file.metadata()?.is_file() {
        return Ok(false);
    }
    let mut head = Vec::with_capacity(16);
    file.by_ref().take(16).read_to_end(&mut head)?;
    Ok(head.is_empty() || head == SQLITE_HEADER)
}

/// Look at the database through `conn` without writing to it, in one read
/// transaction (one consistent view of a ledger another process is
/// creating or upgrading).
fn inspect(conn: &Connection, path: &Path) -> Result<Found> {
    let tx = conn.unchecked_transaction()?;
    let found = inspect_in(&tx, path)?;
    tx.commit()?;
    Ok(found)
}

fn inspect_in(conn: &Connection, path: &Path) -> Result<Found> {
    let unreadable = |e: rusqlite::Error| {
        // The file system failing (a full disk where the -shm cannot be
        // made, no free inodes, a read-only mount) is not a damaged file:
        // say what the system said (review 14-a).
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
    let settings: i64 = conn
        .query_row(
            "SELECT count(*) FROM config WHERE key IN ('installId', 'createdAt', 'sessionPartitionGranularity', 'disableThoughtLogging')",
            [],
            |r| r.get(0),
        )
        .unwrap_or(0);
    Ok(if found < known {
        Found::Behind(found)
    } else if settings < 4 {
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

fn migrate(conn: &mut Connection) -> Result<()> {
    embedded::migrations::runner().run(conn)?;
    Ok(())
}

fn ensure_config(conn: &Connection) -> Result<()> {
    let now = domain::now();
    let install_id = uuid::Uuid::new_v4().to_string();
    let mut stmt = conn.prepare("INSERT OR IGNORE INTO config (key, value) VALUES (?1, ?2)")?;
    for (k, v) in [
        ("installId", install_id.as_str()),
        ("createdAt", now.as_str()),
        ("sessionPartitionGranularity", "monthly"),
        ("disableThoughtLogging", "false"),
    ] {
        stmt.execute((k, v))?;
    }
    Ok(())
}

/// A shorter busy timeout on a pooled connection for one operation, put
/// back to [`BUSY_TIMEOUT`] when dropped, also on an error or a panic: a
/// connection returned to the pool with the short wait would make later
/// writes give up early.
struct ShortWait<'c>(&'c Connection);

impl<'c> ShortWait<'c> {
    fn set(conn: &'c Connection, wait: Duration) -> Result<ShortWait<'c>> {
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

fn pool(
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
    let stop = stop.clone();
    let (name, flags) = media.open_as(path);
    let manager = SqliteConnectionManager::file(name)
        .with_flags(flags)
        .with_init(move |c| {
            configure(c, &open, sync, background, access)?;
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

/// A connection inside a transaction opened by [`Store::write`] or
/// [`Store::read`]; it derefs to the connection.
///
/// Unlike `rusqlite::Transaction`, which parses `BEGIN` and `COMMIT` afresh
/// every time, this runs them as cached statements: an append is a handful
/// of cached statements, and parsing the two took a few percent of it.
pub(crate) struct Tx<'c> {
    conn: &'c Connection,
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
        if !self.conn.is_autocommit()
            && let Err(e) = self.conn.execute_batch("ROLLBACK")
        {
            tracing::warn!("rolling back a transaction failed: {e}");
        }
    }
}

/// `path` made absolute (without resolving links). SQLite reads a name that
/// starts with `file:` as a URI, whatever flags it is opened with, so
/// `--db file:x.db` would open `x.db`, while the server creates, locks and
/// watches the file named `file:x.db`; an absolute path never starts so.
pub(crate) fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| Error::io(format!("resolving the path {}", path.display()), e))
}

/// Open the database file at `path` (made [`absolute`]) as a file name.
pub(crate) fn open_file(path: &Path) -> Result<Connection> {
    Ok(Connection::open_with_flags(
        absolute(path)?,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?)
}

impl<'c> Tx<'c> {
    fn run<T>(conn: &'c Connection, begin: &str, commit: &str, f: impl FnOnce(&Tx<'c>) -> Result<T>) -> Result<T> {
        conn.prepare_cached(begin)?.execute([])?;
        let tx = Tx { conn };
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
}

impl Store {
    /// Open (creating if needed) the ledger at `path`.
    pub fn open(path: impl AsRef<Path>, opts: OpenOptionsStore) -> Result<Store> {
        let path = absolute(path.as_ref())?;
        create_file(&path)?;
        let media = Media::of(&path, opts.access)?;
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
                // right now: then look again under the lock (review 13-a: a
                // `stats` started with a new server said "empty").
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
                        configure(&conn, &Arc::default(), opts.sync, false, access)?;
                        migrate(&mut conn)?;
                        ensure_config(&conn)?;
                    }
                }
            }
        }
        let stop = Arc::default();
        let clones = LastClone::default();
        let pool = pool(&path, &opts, media, opts.pool_size.unwrap_or(8), &stop, &clones.open)?;
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
        let granularity = match store.config_value("sessionPartitionGranularity")? {
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

    /// This store (and the stores [`Store::dedicated`] makes from it) with
    /// every write and checkpoint first checking that the database file and
    /// its `-shm` at the ledger's path are still the ones open now (see
    /// [`Watched`]). For a server, which keeps its writer's connection, and
    /// with it this process's hold on the `-shm`, open until it stops.
    pub fn watching_files(mut self) -> Result<Store> {
        // A read makes SQLite open the -wal and -shm of a database in WAL mode.
        self.read(|tx| Ok(tx.query_row("SELECT count(*) FROM sqlite_schema", [], |_| Ok(()))?))?;
        let mut files = vec![(self.path.clone(), file_id(&self.path))];
        let real = real_path(&self.path);
        for suffix in ["-wal", "-shm"] {
            let side = with_suffix(&real, suffix);
            // Not in WAL mode (then there is nothing to watch).
            if side.exists() {
                let id = file_id(&side);
                files.push((side, id));
            }
        }
        let files = files
            .into_iter()
            .map(|(p, id)| {
                id.map(|id| (p.clone(), id))
                    .map_err(|e| Error::io(format!("reading {}", p.display()), e))
            })
            .collect::<Result<_>>()?;
        self.watched = Some(Arc::new(Watched {
            files,
            reported: std::sync::atomic::AtomicBool::new(false),
        }));
        Ok(self)
    }

    /// Whether the files at the ledger's path are still the ones this
    /// store's server opened: an error naming what changed otherwise.
    fn check_files(&self) -> Result<()> {
        let Some(w) = &self.watched else {
            return Ok(());
        };
        let changed = |path: &Path, expected: FileId| match file_id(path) {
            Ok(now) => (now != expected).then_some("replaced by another file"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some("deleted or moved away"),
            // Unreadable for a moment: SQLite reports what matters.
            Err(_) => None,
        };
        let problem = w
            .files
            .iter()
            .find_map(|(path, expected)| changed(path, *expected).map(|how| (path, how)));
        let Some((file, how)) = problem else {
            return Ok(());
        };
        let error = Error::FilesChanged {
            file: file.display().to_string(),
            how: how.to_string(),
        };
        if !w.reported.swap(true, std::sync::atomic::Ordering::Relaxed) {
            tracing::error!("{error}");
        }
        Err(error)
    }

    pub fn path(&self) -> &Path {
        &self.path
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

    pub fn granularity(&self) -> Granularity {
        self.granularity
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
    fn upkeep_conn(&self) -> Result<Conn> {
        Ok(Conn {
            inner: self.pool.get()?,
        })
    }

    /// Run `f` in a `BEGIN IMMEDIATE` transaction and commit it; an error
    /// (or a panic) in `f` rolls it back.
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

    pub fn config_value(&self, key: &str) -> Result<Option<String>> {
        let conn = self.conn()?;
        Ok(conn
            .query_row("SELECT value FROM config WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    pub fn set_config_value(&self, key: &str, value: &str) -> Result<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO config (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, value),
            )?;
            Ok(())
        })
    }

    /// The Config model: settings from the `config` table plus the data directory.
    pub fn config(&self) -> Result<Config> {
        let get = |k: &str| -> Result<String> { Ok(self.config_value(k)?.unwrap_or_default()) };
        Ok(Config {
            install_id: get("installId")?,
            data_dir: std::path::absolute(&self.path)
                .ok()
                .as_deref()
                .and_then(Path::parent)
                .map(|p| p.display().to_string())
                .unwrap_or_default(),
            disable_thought_logging: thought_logging_disabled(self.config_value("disableThoughtLogging")),
            session_partition_granularity: get("sessionPartitionGranularity")?,
            created_at: get("createdAt")?,
        })
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
pub(crate) mod test_support {
    use super::*;

    pub fn temp_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path().join("t.db"), OpenOptionsStore::default()).expect("open store");
        (dir, store)
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
    use super::*;

    #[test]
    fn file_uris_name_the_file_whatever_its_path() {
        assert_eq!(
            file_uri(Path::new("/tmp/a b?.db"), "mode=ro"),
            "file:///tmp/a%20b%3F.db?mode=ro"
        );
        let (_dir, store) = temp_store();
        store.create_session(crate::domain::NewSession::titled("uri")).unwrap();
        // `//tmp/...` is the same file; a bare `file:` made `tmp` an authority.
        let doubled = PathBuf::from(format!("/{}", store.path().display()));
        let conn = Connection::open_with_flags(
            file_uri(&doubled, "mode=ro"),
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
        )
        .unwrap();
        let n: i64 = conn
            .query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn thought_logging_is_disabled_unless_plainly_allowed() {
        let setting = |v: Option<&str>| thought_logging_disabled(Ok(v.map(str::to_string)));
        assert!(!setting(None));
        assert!(!setting(Some("false")));
        assert!(!setting(Some(" FALSE ")));
        for on in ["true", "TRUE", "1", "yes", "on", "", "0"] {
            assert!(setting(Some(on)), "{on:?} lets thought text through");
        }
        assert!(thought_logging_disabled(Err(Error::Internal("unreadable".into()))));
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

    #[test]
    fn a_read_only_database_is_refused_before_sqlite_touches_it() {
        let (dir, store) = temp_store();
        let path = store.path().to_path_buf();
        drop(store);
        let mut perms = std::fs::metadata(&path).unwrap().permissions();
        perms.set_readonly(true);
        std::fs::set_permissions(&path, perms).unwrap();
        let Err(err) = Store::open(&path, OpenOptionsStore::default()) else {
            panic!("a read-only database opened");
        };
        assert!(err.to_string().contains("is not writable"), "{err}");
        for suffix in ["-wal", "-shm"] {
            assert!(!with_suffix(&path, suffix).exists(), "{suffix} created");
        }
        drop(dir);
    }

    /// A ledger in a directory where its -wal and -shm cannot be made is
    /// refused naming the directory (SQLite would say "unable to open
    /// database file", which sounds like the file is not a database). A copy
    /// in rollback mode, as backups are, is still read there.
    #[cfg(unix)]
    #[test]
    fn a_directory_without_room_for_the_wal_is_named() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("ro");
        std::fs::create_dir(&folder).unwrap();
        let ledger = folder.join("t.db");
        let backup = folder.join("backup.db");
        {
            let store = Store::open(&ledger, OpenOptionsStore::default()).unwrap();
            store.backup_to(&backup).unwrap();
            store.checkpoint().unwrap();
        }
        // A link there to a ledger elsewhere: SQLite keeps its -wal and -shm
        // beside the file linked to, so the folder of the link does not matter.
        let elsewhere = dir.path().join("elsewhere.db");
        drop(Store::open(&elsewhere, OpenOptionsStore::default()).unwrap());
        let link = folder.join("link.db");
        std::os::unix::fs::symlink(&elsewhere, &link).unwrap();
        // Not writable: by its mode for a user, made immutable for root.
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
        let writable = || rustix::fs::access(&folder, rustix::fs::Access::WRITE_OK).is_ok();
        let immutable = writable()
            && std::process::Command::new("chattr")
                .arg("+i")
                .arg(&folder)
                .status()
                .is_ok_and(|s| s.success());
        if writable() {
            eprintln!("skipped: cannot make a directory unwritable here (root without chattr)");
            return;
        }
        let read = OpenOptionsStore {
            access: Access::Read,
            ..Default::default()
        };
        let err = Store::open(&ledger, read.clone()).err().map(|e| e.to_string());
        let copy = Store::open(&backup, read).map(|s| s.stats(1).map(|st| st.sessions));
        let linked = Store::open(&link, OpenOptionsStore::default()).map(|s| s.stats(1).map(|st| st.sessions));
        if immutable {
            let _ = std::process::Command::new("chattr").arg("-i").arg(&folder).status();
        }
        std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = err.expect("a ledger whose -wal cannot be made opened");
        assert!(
            err.contains(&format!("the directory {} is not writable", folder.display())),
            "{err}"
        );
        assert_eq!(copy.unwrap().unwrap(), 0);
        assert_eq!(linked.unwrap().unwrap(), 0);
    }

    /// Through a symlink, the ledger's side files are the linked file's: its
    /// migration lock (so that a server opening the link and one opening
    /// the file itself exclude each other) and its -wal and -shm (which
    /// `info` sizes).
    #[cfg(unix)]
    #[test]
    fn a_symlinked_ledger_uses_the_side_files_of_the_file_it_names() {
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("data").join("t.db");
        std::fs::create_dir_all(real.parent().unwrap()).unwrap();
        let links = dir.path().join("links");
        std::fs::create_dir(&links).unwrap();
        let link = links.join("link.db");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let store = Store::open(&link, OpenOptionsStore::default()).unwrap();
        assert!(with_suffix(&real, ".lock").exists());
        assert!(!with_suffix(&link, ".lock").exists());
        store.set_config_value("note", "x").unwrap();
        let sizes = store.file_sizes();
        assert!(sizes.wal > 0 && sizes.shm > 0, "{sizes:?}");
    }

    #[test]
    fn a_directory_is_not_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let Err(err) = Store::open(dir.path(), OpenOptionsStore::default()) else {
            panic!("a directory opened as a database");
        };
        assert!(err.to_string().contains("is a directory"), "{err}");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "nothing created");
        // The other way round: a data directory that is a file.
        let file = dir.path().join("notes.txt");
        std::fs::write(&file, "mine").unwrap();
        let Err(err) = Store::open(file.join("thoughtbox.db"), OpenOptionsStore::default()) else {
            panic!("a database opened inside a file");
        };
        assert!(
            err.to_string()
                .contains(&format!("{} is not a directory", file.display())),
            "{err}"
        );
        assert_eq!(std::fs::read(&file).unwrap(), b"mine");
        std::fs::remove_file(&file).unwrap();
        let mut lock = dir.path().as_os_str().to_owned();
        lock.push(".lock");
        assert!(!Path::new(&lock).exists());
    }

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
        assert!(store.write(|tx| insert(tx, "installId")).is_err());
        store.write(|tx| insert(tx, "kept")).expect("the next write works");
        for (key, present) in [("failed", false), ("panicked", false), ("kept", true)] {
            assert_eq!(shared.config_value(key).unwrap().is_some(), present, "{key}");
        }
        let reads = store.read(|tx| Ok(tx.query_row("SELECT count(*) FROM config", [], |r| r.get::<_, i64>(0))?));
        assert!(reads.unwrap() >= 5);
    }

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
            thought: "after the upgrade".into(),
            next_thought_needed: true,
            branch_id: branch.map(String::from),
            branch_from_thought: branch.map(|_| 1),
            ..Default::default()
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
            thought: "ours".into(),
            next_thought_needed: true,
            branch_id: branch.map(String::from),
            branch_from_thought: branch.map(|_| 1),
            ..Default::default()
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
            let input = ThoughtInput {
                thought: text.into(),
                next_thought_needed: true,
                ..Default::default()
            };
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
        Connection::open(&path)
            .unwrap()
            .execute("DELETE FROM refinery_schema_history WHERE version = ?1", [latest])
            .unwrap();
        let before = std::fs::read(&path).unwrap();
        let opts = OpenOptionsStore {
            access: Access::Read,
            ..Default::default()
        };
        let err = Store::open(&path, opts).err().unwrap().to_string();
        assert!(err.contains(&format!("schema version {}", latest - 1)), "{err}");
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
        assert_eq!(n, latest - 1);
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
