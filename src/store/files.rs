//! The ledger's files on disk, apart from what SQLite does with them:
//! creating the database file and its folder privately, refusing a path
//! that cannot work (a directory, a read-only file, another format) before
//! SQLite gives a vaguer error, how a file on a read-only mount is opened
//! ([`Media`]), the names of the `-wal` and `-shm` files beside it, and the
//! server's watch on those files ([`Watched`]).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rusqlite::OpenFlags;

use super::{Access, Store};
use crate::error::{Error, Result};
use crate::files::with_suffix;

/// How a database file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Media {
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
    pub(super) fn of(path: &Path, access: Access) -> Result<Media> {
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
            // damaged backup or export while saying it succeeded, and without
            // a -shm there are no locks to share.
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
    pub(super) fn open_as(self, path: &Path) -> (PathBuf, OpenFlags) {
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
    // authority `tmp`.
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
pub(super) struct Watched {
    /// The database (through a symlink, the file it points to), then the
    /// `-wal` and `-shm` where SQLite keeps them: beside that file.
    files: Vec<(PathBuf, FileId)>,
    /// Logged once.
    reported: std::sync::atomic::AtomicBool,
}

/// `path` with symbolic links resolved, as SQLite resolves them to name the
/// `-wal` and `-shm` files (beside the file a link points to).
pub(crate) fn real_path(path: &Path) -> PathBuf {
    crate::files::canonical(path).unwrap_or_else(|_| path.to_path_buf())
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

/// Create the database file (mode 0600) and its directory (0700) if missing.
pub(super) fn create_file(path: &Path) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        let mut builder = crate::private::dir_builder();
        builder.recursive(true);
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
    let mut opts = crate::private::file_options();
    // A symlink to a file not made yet (a link set up ahead, into a synced
    // folder, say) gets its file: create_new alone would stop at the link.
    let dangling = path.is_symlink() && !path.exists();
    opts.write(true);
    if dangling {
        opts.create(true);
    } else {
        opts.create_new(true);
    }
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
pub(super) fn private_mode(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let real = real_path(path);
        if let Ok(meta) = std::fs::metadata(&real)
            && meta.is_file()
            && meta.permissions().mode() & 0o077 != 0
            && let Err(e) = std::fs::set_permissions(&real, std::fs::Permissions::from_mode(crate::private::FILE))
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
pub(super) fn check_writable(path: &Path, access: Access) -> Result<()> {
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
        let dir = crate::files::folder_of(&real);
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

/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Refuse a file that is not an SQLite database before SQLite opens it (it
/// would say only "file is not a database", without naming the file).
pub(super) fn check_header(path: &Path) -> Result<()> {
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

/// `path` made absolute (without resolving links). SQLite reads a name that
/// starts with `file:` as a URI, whatever flags it is opened with, so
/// `--db file:x.db` would open `x.db`, while the server creates, locks and
/// watches the file named `file:x.db`; an absolute path never starts so.
pub(crate) fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| Error::io(format!("resolving the path {}", path.display()), e))
}

impl Store {
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
    pub(super) fn check_files(&self) -> Result<()> {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    #[cfg(unix)]
    use crate::domain::ConfigKey;
    use crate::store::OpenOptionsStore;
    use crate::store::test_support::temp_store;
    use rusqlite::Connection;

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
        store
            .set_config_value(ConfigKey::DisableThoughtLogging, "true")
            .unwrap();
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
}
