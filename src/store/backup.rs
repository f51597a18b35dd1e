//! Consistent copies of a live database with SQLite's online backup API.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::OptionalExtension;
use rusqlite::backup::{Backup, StepResult};

use super::Store;
use crate::domain::ConfigKey;
use crate::error::{Error, Result};
use crate::files::with_suffix;

impl Store {
    /// Copy the whole database to `dest` while other connections (and other
    /// processes) keep writing.
    ///
    /// When `dest` is a directory, the copy gets a new file in it named
    /// `thoughtbox-backup-<UTC time to the millisecond>.db` (`-2`, `-3`...
    /// if that name is taken): a backup never replaces another. Otherwise
    /// the copy is written next to `dest` and renamed into place, so `dest`
    /// is either the old file or a complete new one. `dest` must not be this
    /// database or one of its files, nor a database something has open (its
    /// `-wal` or `-shm` file exists, beside it or beside the file a symlink
    /// points to): replacing it would lose every write made after.
    /// Returns the path written.
    pub fn backup_to(&self, dest: &Path) -> Result<PathBuf> {
        if dest.as_os_str().is_empty() {
            return Err(Error::invalid(
                "dest",
                "backup needs a destination: a file or a directory",
            ));
        }
        // `DIR/` names a directory: one that does not exist is said to be
        // missing, not taken for a file name.
        let names_a_directory = dest.as_os_str().as_encoded_bytes().ends_with(b"/");
        if names_a_directory && !dest.is_dir() {
            return Err(Error::invalid(
                "dest",
                format!(
                    "{} does not exist (or is not a directory): create the directory first, then back up into it",
                    dest.display()
                ),
            ));
        }
        if dest.is_dir() {
            // What interrupted backups into this directory left.
            crate::files::remove_leftovers(
                dest,
                |n| n.starts_with(".thoughtbox-backup-") && n.contains(".tmp-"),
                false,
            );
            let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
            let tmp = dest.join(format!(".thoughtbox-backup-{stamp}{}", temporary_suffix()));
            self.write_copy(&tmp)?;
            let placed = place_under_new_name(&tmp, dest, &format!("thoughtbox-backup-{stamp}"));
            let _ = std::fs::remove_file(&tmp);
            placed
        } else {
            let folder = crate::files::folder_of(dest);
            if !folder.is_dir() {
                return Err(Error::invalid(
                    "dest",
                    format!(
                        "{} does not exist (or is not a directory): create the directory first, then back up into it",
                        folder.display()
                    ),
                ));
            }
            self.check_replaceable(dest, Replacement::Backup)?;
            // Through a symlink, the file it points to gets the new copy
            // (the link stays a link).
            let target = match dest.is_symlink() {
                true => match std::fs::canonicalize(dest) {
                    Ok(target) => target,
                    // A link to a file not made yet: into its directory, if
                    // that exists (the link stays a link).
                    Err(_) => {
                        let link = std::fs::read_link(dest)
                            .map_err(|e| Error::io(format!("reading {}", dest.display()), e))?;
                        let target = crate::files::folder_of(dest).join(link);
                        if !crate::files::folder_of(&target).is_dir() {
                            return Err(Error::invalid(
                                "dest",
                                format!(
                                    "{} is a link to {}, whose directory does not exist",
                                    dest.display(),
                                    target.display()
                                ),
                            ));
                        }
                        target
                    }
                },
                false => dest.to_path_buf(),
            };
            if let Some(name) = target.file_name().and_then(|n| n.to_str()) {
                crate::files::remove_leftovers(crate::files::folder_of(&target), |n| is_temporary_of(n, name), false);
            }
            let tmp = with_suffix(&target, &temporary_suffix());
            self.write_copy(&tmp)?;
            move_into_place(&tmp, &target).inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })?;
            Ok(dest.to_path_buf())
        }
    }

    /// Refuse a file for an export (Markdown, JSON, cipher text) to replace
    /// if replacing it would lose data: this ledger's database or any of its
    /// files, any SQLite database, or a file of one.
    pub fn check_export_destination(&self, dest: &Path) -> Result<()> {
        self.check_replaceable(dest, Replacement::Export)
    }

    /// Refuse a destination file whose replacement would lose data.
    fn check_replaceable(&self, dest: &Path, what: Replacement) -> Result<()> {
        let (field, instead, itself) = match what {
            Replacement::Backup => (
                "dest",
                "name another file or a directory",
                "the database being backed up",
            ),
            Replacement::Export => ("out", "name another file", "this ledger's database"),
        };
        let refuse = |why: String| Err(Error::invalid(field, why));
        if same_file(self.path(), dest) {
            return refuse(format!("{} is {itself}; {instead}", dest.display()));
        }
        if let Ok(meta) = std::fs::metadata(dest)
            && !meta.is_file()
        {
            return refuse(format!("{} is not a regular file; {instead}", dest.display()));
        }
        // A backup may replace an earlier backup; an export never replaces
        // a database (a mistyped --out would wipe out a ledger).
        if what == Replacement::Export && is_database(dest) && std::fs::metadata(dest).is_ok_and(|m| m.len() > 0) {
            return refuse(format!(
                "{} is an SQLite database; an export would replace it. {}",
                dest.display(),
                capitalised(instead)
            ));
        }
        // `dest` as named, and the file a symlink there points to: SQLite
        // follows the link, so a database's companions sit beside the target.
        let mut places = vec![dest.to_path_buf()];
        if let Ok(real) = std::fs::canonicalize(dest)
            && real != dest
        {
            places.push(real);
        }
        for place in &places {
            // A database's companion file (this ledger's or another's):
            // replacing one corrupts or empties that database.
            for suffix in ["-wal", "-shm", "-journal", ".lock"] {
                if let Some(base) = strip_name_suffix(place, suffix)
                    && is_database(&base)
                {
                    return refuse(format!(
                        "{} is a file of the database {} (its {suffix}); {instead}",
                        dest.display(),
                        base.display()
                    ));
                }
            }
            // A database in use. Checked even when `dest` does not exist: a
            // stale WAL left there would be replayed into the new copy.
            for suffix in ["-wal", "-shm"] {
                let companion = with_suffix(place, suffix);
                if companion.exists() {
                    return refuse(format!(
                        "{} is a database in use ({} exists: a server or another program has it open, or stopped \
                         without closing it); replacing it would lose what is written to it. {}, or stop what uses it \
                         first",
                        dest.display(),
                        companion.display(),
                        capitalised(instead)
                    ));
                }
            }
        }
        // A backup replaces an earlier backup (or any ledger nothing has
        // open), never someone's document or another program's database.
        if what == Replacement::Backup && std::fs::metadata(dest).is_ok_and(|m| m.len() > 0) {
            if !is_database(dest) {
                return refuse(format!(
                    "{} exists and is not a thoughtbox ledger (a backup replaces only an earlier backup); {instead}",
                    dest.display()
                ));
            }
            // Immutable: a read-only connection to a file in WAL mode would
            // leave -wal and -shm files beside it (and the next backup would
            // take it for a database in use). No -wal exists: checked above.
            let looked = rusqlite::Connection::open_with_flags(
                immutable_uri(dest),
                rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_URI,
            )
            .map_err(Error::from)
            .and_then(|conn| {
                let found = super::inspect(&conn, dest)?;
                let install: Option<String> = match found {
                    super::Found::Other { .. } | super::Found::Fresh => None,
                    _ => conn
                        .query_row(
                            "SELECT value FROM config WHERE key = ?1",
                            [ConfigKey::InstallId.name()],
                            |r| r.get(0),
                        )
                        .optional()?,
                };
                Ok((found, install))
            });
            match looked {
                Ok((super::Found::Other { tables, .. }, _)) => {
                    return refuse(format!(
                        "{} is an SQLite database of another program (tables: {}), not an earlier backup; {instead}",
                        dest.display(),
                        tables.join(", ")
                    ));
                }
                // A ledger: its installId says whether it is a backup of
                // this one. A missing or blank one (deleted by hand before
                // version 12 refused that) tells it from no other ledger,
                // so it matches nothing, not even another missing one.
                Ok((super::Found::Current | super::Found::Behind(_) | super::Found::Unset, theirs)) => {
                    let ours = self
                        .config_value(ConfigKey::InstallId)?
                        .filter(|id| !id.trim().is_empty());
                    match (theirs.filter(|id| !id.trim().is_empty()), ours) {
                        (None, _) => {
                            return refuse(format!(
                                "{} is a ledger without an installId (deleted or blanked by hand), so it cannot be \
                                 told to be an earlier backup of this one; {instead}, or give it its installId back \
                                 if it is one",
                                dest.display()
                            ));
                        }
                        (Some(_), None) => {
                            return refuse(format!(
                                "{} is a ledger, and this ledger has no installId (deleted or blanked by hand), so \
                                 that one cannot be told to be an earlier backup of this one; {instead} (any \
                                 command that writes, such as `thoughtbox repair`, gives this ledger a new \
                                 installId)",
                                dest.display()
                            ));
                        }
                        (Some(theirs), Some(ours)) if theirs != ours => {
                            return refuse(format!(
                                "{} is another ledger (installId {theirs}), not an earlier backup of this one; {instead}",
                                dest.display()
                            ));
                        }
                        (Some(_), Some(_)) => {}
                    }
                }
                Err(e) => {
                    return refuse(format!(
                        "{} cannot be read as a ledger ({e}); {instead}",
                        dest.display()
                    ));
                }
                Ok(_) => {}
            }
        }
        Ok(())
    }

    /// Write a consistent, self-contained copy of the database to `tmp`
    /// (mode 0600 from the start). On error nothing is left at `tmp`.
    fn write_copy(&self, tmp: &Path) -> Result<()> {
        let result = (|| -> Result<()> {
            // A stale copy of an earlier run (or anything planted there,
            // a symlink included) is removed, not written through.
            let _ = std::fs::remove_file(tmp);
            let mut opts = crate::private::file_options();
            opts.write(true).create_new(true);
            opts.open(tmp)
                .map_err(|e| Error::io(format!("creating {}", tmp.display()), e))?;
            let src = self.conn()?;
            {
                let mut out = super::open_file(tmp)?;
                {
                    let backup = Backup::new(&src, &mut out)?;
                    // Copy every page in one step: one read transaction, one
                    // consistent snapshot, whatever other writers do meanwhile.
                    loop {
                        match backup.step(-1)? {
                            StepResult::Done => break,
                            _ => std::thread::sleep(Duration::from_millis(20)),
                        }
                    }
                }
                // The copy is a single self-contained file.
                out.pragma_update(None, "journal_mode", "DELETE")?;
            }
            // On disk before it is renamed into place, whatever the copy's
            // connection synced. Opened for writing: Windows flushes only
            // through a handle that may write (else "Access denied").
            std::fs::OpenOptions::new()
                .write(true)
                .open(tmp)
                .and_then(|f| f.sync_all())
                .map_err(|e| Error::io(format!("flushing {}", tmp.display()), e))?;
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(tmp, std::fs::Permissions::from_mode(crate::private::FILE))
                    .map_err(|e| Error::io(format!("setting permissions on {}", tmp.display()), e))?;
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(tmp);
            let mut journal = tmp.as_os_str().to_owned();
            journal.push("-journal");
            let _ = std::fs::remove_file(journal);
        }
        // A full disk is the copy's: say so, since it says nothing about
        // the ledger.
        result.map_err(|e| match e {
            Error::Database(ref d) if d.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) => Error::io(
                format!("writing the backup copy {}", tmp.display()),
                std::io::Error::other("no space left on its file system"),
            ),
            other => other,
        })
    }
}

/// The suffix of a copy's temporary name, `.tmp-{pid}-{n}`: `n` is 16
/// random hex digits, so that no one can plant a link at the name, or at
/// the `-journal` name SQLite creates beside it, before the copy is made.
fn temporary_suffix() -> String {
    let n = uuid::Uuid::new_v4().as_u64_pair().0;
    format!(".tmp-{}-{n:016x}", std::process::id())
}

/// Whether `name` is the temporary copy (or its journal) of a backup to
/// `base`: `{base}.tmp-{pid}-{16 hex digits}[-journal]`, or the random
/// part as the version before wrote it (15 to 20 decimal digits), and
/// nothing looser, since leftovers are deleted and a person may keep
/// `nightly.db.tmp-2024-06`.
fn is_temporary_of(name: &str, base: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    name.strip_prefix(base)
        .and_then(|rest| rest.strip_prefix(".tmp-"))
        .map(|rest| rest.strip_suffix("-journal").unwrap_or(rest))
        .and_then(|tag| tag.split_once('-'))
        .is_some_and(|(pid, n)| {
            digits(pid)
                && ((n.len() == 16 && n.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
                    || ((15..=20).contains(&n.len()) && digits(n)))
        })
}

/// What a file is replaced with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Replacement {
    /// A copy of the database.
    Backup,
    /// An export's text.
    Export,
}

fn capitalised(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// `path` without `suffix` at the end of its name, compared byte for byte
/// (a path need not be UTF-8).
fn strip_name_suffix(path: &Path, suffix: &str) -> Option<PathBuf> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::{OsStrExt, OsStringExt};
        let base = path.as_os_str().as_bytes().strip_suffix(suffix.as_bytes())?;
        (!base.is_empty()).then(|| PathBuf::from(std::ffi::OsString::from_vec(base.to_vec())))
    }
    #[cfg(not(unix))]
    {
        let name = path.as_os_str().to_str()?;
        let base = name.strip_suffix(suffix)?;
        (!base.is_empty()).then(|| PathBuf::from(base))
    }
}

/// `path` as an SQLite URI that opens it read-only and immutable.
fn immutable_uri(path: &Path) -> String {
    super::file_uri(path, "mode=ro&immutable=1")
}

/// Whether `path` is an SQLite database (by its header), or the empty file
/// a new database starts as; false when it cannot be read.
fn is_database(path: &Path) -> bool {
    super::may_be_database(path).unwrap_or(false)
}

/// The names a backup may take in its directory: `<stem>.db`, then
/// `<stem>-2.db`, `<stem>-3.db`...
fn candidate_names(dir: &Path, stem: &str) -> impl Iterator<Item = PathBuf> {
    (1..=1000u32).map(move |n| {
        dir.join(if n == 1 {
            format!("{stem}.db")
        } else {
            format!("{stem}-{n}.db")
        })
    })
}

/// Give the finished copy `tmp` the first free name in `dir`, never
/// replacing a file. A hard link claims the name and the content at once;
/// where the file system has no hard links, the name is claimed with an
/// empty file first and the copy renamed over it. `tmp` is left for the
/// caller to remove.
fn place_under_new_name(tmp: &Path, dir: &Path, stem: &str) -> Result<PathBuf> {
    for name in candidate_names(dir, stem) {
        match std::fs::hard_link(tmp, &name) {
            Ok(()) => return Ok(name),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => {}
        }
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&name) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(format!("creating {}", name.display()), e)),
        }
        return move_into_place(tmp, &name).map(|()| name.clone()).inspect_err(|_| {
            let _ = std::fs::remove_file(&name);
        });
    }
    Err(Error::invalid(
        "dest",
        format!("{} already holds 1,000 backups named {stem}*.db", dir.display()),
    ))
}

fn move_into_place(tmp: &Path, dest: &Path) -> Result<()> {
    std::fs::rename(tmp, dest).map_err(|e| Error::io(format!("moving backup into place at {}", dest.display()), e))?;
    // The rename itself reaches the disk before the backup is reported made.
    crate::files::sync_dir(crate::files::folder_of(dest))
}

/// Whether two paths name the same file (following symlinks). False when
/// either does not exist.
#[cfg(unix)]
fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::{ConfigKey, NewSession};
    use crate::store::test_support::temp_store;
    use crate::store::{OpenOptionsStore, Store};

    #[test]
    fn backup_is_a_complete_standalone_copy() {
        let (dir, store) = temp_store();
        store.create_session(NewSession::titled("kept")).unwrap();
        let dest = dir.path().join("copy.db");
        store.backup_to(&dest).unwrap();
        let copy = Store::open(&dest, OpenOptionsStore::default()).unwrap();
        assert_eq!(copy.counts().unwrap().0, 1);
        let err = store.backup_to(&dir.path().join("missing-dir/x.db")).unwrap_err();
        assert_eq!(err.code(), "INVALID_PAYLOAD");
        assert!(err.to_string().contains("missing-dir does not exist"), "{err}");
        let mut slash = dir.path().join("missing-dir").into_os_string();
        slash.push("/");
        let err = store.backup_to(std::path::Path::new(&slash)).unwrap_err();
        assert!(err.to_string().contains("missing-dir/ does not exist"), "{err}");
        assert!(store.backup_to(std::path::Path::new("")).is_err());
        // A link to a file not made yet gets the copy; the link stays a link.
        #[cfg(unix)]
        {
            let link = dir.path().join("link.db");
            std::os::unix::fs::symlink(dir.path().join("target.db"), &link).unwrap();
            store.backup_to(&link).unwrap();
            assert!(link.is_symlink() && dir.path().join("target.db").is_file());
            let dangling = dir.path().join("dangling.db");
            std::os::unix::fs::symlink(dir.path().join("nowhere/t.db"), &dangling).unwrap();
            let err = store.backup_to(&dangling).unwrap_err();
            assert!(err.to_string().contains("whose directory does not exist"), "{err}");
            assert!(dangling.is_symlink());
        }
    }

    /// A backup file replaces an earlier backup, never a document or
    /// another program's database; both are left as they were.
    #[test]
    fn a_backup_replaces_only_an_earlier_backup() {
        let (dir, store) = temp_store();
        store.create_session(NewSession::titled("kept")).unwrap();
        let earlier = dir.path().join("nightly.db");
        store.backup_to(&earlier).unwrap();
        store.create_session(NewSession::titled("later")).unwrap();
        store.backup_to(&earlier).unwrap();
        let copy = Store::open(&earlier, OpenOptionsStore::default()).unwrap();
        assert_eq!(copy.counts().unwrap().0, 2);
        drop(copy);
        let notes = dir.path().join("notes.txt");
        std::fs::write(&notes, "my notes\n").unwrap();
        let other = dir.path().join("other.db");
        rusqlite::Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE foo (x); INSERT INTO foo VALUES (1);")
            .unwrap();
        for (dest, says) in [
            (&notes, "not a thoughtbox ledger"),
            (&other, "another program (tables: foo)"),
        ] {
            let before = std::fs::read(dest).unwrap();
            let err = store.backup_to(dest).unwrap_err();
            assert!(err.to_string().contains(says), "{err}");
            assert_eq!(std::fs::read(dest).unwrap(), before);
        }
        // An empty file is a fine destination.
        let empty = dir.path().join("empty.db");
        std::fs::write(&empty, "").unwrap();
        store.backup_to(&empty).unwrap();
        // Another ledger is not an earlier backup of this one.
        let (_other_dir, other_store) = temp_store();
        let theirs = dir.path().join("theirs.db");
        other_store.backup_to(&theirs).unwrap();
        let err = store.backup_to(&theirs).unwrap_err();
        assert!(err.to_string().contains("another ledger (installId"), "{err}");
    }

    /// Version 12 refuses deleting or blanking the installId; a ledger
    /// from before may lack one. Two ledgers without one are not the same
    /// ledger (else a backup of one replaces the other's sessions), nor is
    /// one without it a backup of one with it, or the other way round.
    #[test]
    fn a_missing_install_id_matches_nothing() {
        let (dir, store) = temp_store();
        store.create_session(NewSession::titled("ours")).unwrap();
        let sh = rusqlite::Connection::open(store.path()).unwrap();
        for sql in [
            "DELETE FROM config WHERE key = 'installId'",
            "UPDATE config SET value = ' ' WHERE key = 'installId'",
            "UPDATE config SET key = 'installed' WHERE key = 'installId'",
        ] {
            let err = sh.execute_batch(sql).expect_err(sql).to_string();
            assert!(err.contains("installId cannot be"), "{sql}: {err}");
        }
        // Another ledger with sessions, whose installId went before version 12.
        let (_other_dir, other) = temp_store();
        for i in 0..4 {
            other.create_session(NewSession::titled(format!("theirs {i}"))).unwrap();
        }
        let theirs = dir.path().join("theirs.db");
        other.backup_to(&theirs).unwrap();
        let forget = |path: &std::path::Path, how: &str| {
            let c = rusqlite::Connection::open(path).unwrap();
            c.execute_batch(&format!(
                "DROP TRIGGER config_install_id_kept; DROP TRIGGER config_install_id_checked_update; {how}"
            ))
            .unwrap();
        };
        forget(&theirs, "DELETE FROM config WHERE key = 'installId'");
        let before = std::fs::read(&theirs).unwrap();
        let err = store.backup_to(&theirs).unwrap_err().to_string();
        assert!(err.contains("is a ledger without an installId"), "{err}");
        assert_eq!(std::fs::read(&theirs).unwrap(), before, "left as it was");
        // Ours blank (and theirs missing, or theirs present): refused too.
        drop(sh);
        forget(store.path(), "UPDATE config SET value = '' WHERE key = 'installId'");
        let err = store.backup_to(&theirs).unwrap_err().to_string();
        assert!(err.contains("is a ledger without an installId"), "{err}");
        let present = dir.path().join("present.db");
        other.backup_to(&present).unwrap();
        let err = store.backup_to(&present).unwrap_err().to_string();
        assert!(err.contains("this ledger has no installId"), "{err}");
        // `repair` gives ours a new one; then a new file is a fine backup
        // and the next backup replaces it.
        assert!(store.repair().unwrap().install_id_set);
        let id = store.config_value(ConfigKey::InstallId).unwrap().unwrap();
        assert_eq!(id.len(), 36, "{id}");
        let fresh = dir.path().join("fresh.db");
        store.backup_to(&fresh).unwrap();
        store.backup_to(&fresh).unwrap();
        assert!(store.backup_to(&theirs).is_err());
    }

    /// An earlier backup in WAL mode (a copy of a live ledger's file) is
    /// replaced, and looking at it leaves no -wal or -shm beside it that
    /// would make the next backup refuse it as a database in use. Through a
    /// symlink, the file it points to is replaced and the link stays.
    #[test]
    fn a_backup_over_a_wal_mode_copy_and_through_a_symlink() {
        let (dir, store) = temp_store();
        store.create_session(NewSession::titled("kept")).unwrap();
        store.checkpoint().unwrap();
        let copy = dir.path().join("copy.db");
        std::fs::copy(store.path(), &copy).unwrap();
        for _ in 0..2 {
            store.backup_to(&copy).unwrap();
            for suffix in ["-wal", "-shm"] {
                assert!(
                    !crate::files::with_suffix(&copy, suffix).exists(),
                    "{suffix} left beside the backup"
                );
            }
        }
        // Creating a symlink needs a privilege on Windows.
        #[cfg(unix)]
        {
            let real = dir.path().join("real.db");
            store.backup_to(&real).unwrap();
            let link = dir.path().join("link.db");
            std::os::unix::fs::symlink(&real, &link).unwrap();
            store.create_session(NewSession::titled("later")).unwrap();
            store.backup_to(&link).unwrap();
            assert!(link.is_symlink());
            let backed = Store::open(&real, OpenOptionsStore::default()).unwrap();
            assert_eq!(backed.counts().unwrap().0, 2);
        }
    }

    #[test]
    fn backups_into_a_directory_never_replace_each_other() {
        let (dir, store) = temp_store();
        store.create_session(NewSession::titled("kept")).unwrap();
        let out = dir.path().join("backups");
        std::fs::create_dir(&out).unwrap();
        let written: Vec<_> = (0..3).map(|_| store.backup_to(&out).unwrap()).collect();
        let mut files: Vec<_> = std::fs::read_dir(&out).unwrap().map(|e| e.unwrap().path()).collect();
        files.sort();
        let mut expected = written.clone();
        expected.sort();
        expected.dedup();
        assert_eq!(files, expected, "three distinct backups and nothing else");
        for f in files {
            assert_eq!(
                Store::open(&f, OpenOptionsStore::default())
                    .unwrap()
                    .counts()
                    .unwrap()
                    .0,
                1
            );
        }
    }

    #[test]
    fn temporary_names_cannot_be_foreseen_and_are_known_as_leftovers() {
        let (a, b) = (super::temporary_suffix(), super::temporary_suffix());
        assert_ne!(a, b, "a random part, unknown before the backup starts");
        assert!(a.starts_with(&format!(".tmp-{}-", std::process::id())), "{a}");
        for left in [
            format!("nightly.db{a}"),
            format!("nightly.db{a}-journal"),
            "nightly.db.tmp-42-13835058055282163712".into(),
        ] {
            assert!(super::is_temporary_of(&left, "nightly.db"), "{left}");
        }
        for kept in [
            "nightly.db",
            "nightly.db.tmp-",
            "nightly.db.tmp-4x",
            "nightly.db.tmp-42-",
            "nightly.db.tmp-42",
            "nightly.db.tmp-2024-06",
            "nightly.db.tmp-20240601-1",
            "nightly.db.tmp-1-0123456789abcdeg",
            "nightly.db.tmp-1-12345678901234",
            "other.db.tmp-1-0123456789abcdef",
        ] {
            assert!(!super::is_temporary_of(kept, "nightly.db"), "{kept}");
        }
    }

    #[test]
    fn a_taken_name_gets_the_next_number() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = dir.path().join("copy.tmp");
        std::fs::write(&tmp, b"new").unwrap();
        std::fs::write(dir.path().join("b.db"), b"old").unwrap();
        let placed = super::place_under_new_name(&tmp, dir.path(), "b").unwrap();
        assert_eq!(placed, dir.path().join("b-2.db"));
        assert_eq!(std::fs::read(&placed).unwrap(), b"new");
        assert_eq!(std::fs::read(dir.path().join("b.db")).unwrap(), b"old");
    }

    #[test]
    fn an_export_never_replaces_a_database_or_its_files() {
        let (dir, store) = temp_store();
        let refused = |dest: &std::path::Path, why: &str| {
            let err = store.check_export_destination(dest).unwrap_err();
            assert!(err.to_string().contains(why), "{}: {err}", dest.display());
        };
        refused(store.path(), "this ledger's database");
        for suffix in ["-wal", "-shm", ".lock"] {
            refused(
                &crate::files::with_suffix(store.path(), suffix),
                "a file of the database",
            );
        }
        // Any other database, open or not.
        let other = dir.path().join("other.db");
        Store::open(&other, OpenOptionsStore::default()).unwrap();
        refused(&other, "is an SQLite database");
        let copy = dir.path().join("copy.db");
        store.backup_to(&copy).unwrap();
        refused(&copy, "is an SQLite database");
        #[cfg(unix)]
        refused(std::path::Path::new("/dev/null"), "not a regular file");
        // Text files, empty files and new names are fine.
        let text = dir.path().join("session.md");
        std::fs::write(&text, "# old export\n").unwrap();
        store.check_export_destination(&text).unwrap();
        let empty = dir.path().join("empty.json");
        std::fs::write(&empty, "").unwrap();
        store.check_export_destination(&empty).unwrap();
        store.check_export_destination(&dir.path().join("new.json")).unwrap();
    }

    #[test]
    fn a_live_database_is_never_replaced() {
        let (dir, store) = temp_store();
        store.create_session(NewSession::titled("kept")).unwrap();
        // The database itself, by its own path or another one.
        let err = store.backup_to(store.path()).unwrap_err();
        assert!(err.to_string().contains("the database being backed up"), "{err}");
        let link = dir.path().join("link.db");
        std::fs::hard_link(store.path(), &link).unwrap();
        assert!(store.backup_to(&link).is_err());
        // Another ledger that is open (it has a -wal file).
        let other_path = dir.path().join("other.db");
        let other = Store::open(&other_path, OpenOptionsStore::default()).unwrap();
        other.create_session(NewSession::titled("other")).unwrap();
        let err = store.backup_to(&other_path).unwrap_err();
        assert!(err.to_string().contains("in use"), "{err}");
        assert_eq!(other.counts().unwrap().0, 1);
        assert_eq!(store.counts().unwrap().0, 1);
        // The database's own files, and another database's.
        for suffix in ["-wal", "-shm", ".lock"] {
            let err = store
                .backup_to(&crate::files::with_suffix(store.path(), suffix))
                .unwrap_err();
            assert!(err.to_string().contains("a file of the database"), "{suffix}: {err}");
            let err = store
                .backup_to(&crate::files::with_suffix(&other_path, suffix))
                .unwrap_err();
            assert!(err.to_string().contains("file of the database"), "{suffix}: {err}");
        }
        assert_eq!(other.counts().unwrap().0, 1);
        // A file named like a companion of something that is not a database is fine.
        std::fs::write(dir.path().join("notes"), b"plain text").unwrap();
        store.backup_to(&dir.path().join("notes.lock")).unwrap();
        #[cfg(unix)]
        {
            // A database whose path is not UTF-8 is recognised too.
            use std::os::unix::ffi::OsStrExt;
            let odd = dir.path().join(std::ffi::OsStr::from_bytes(b"l\xff.db"));
            let odd_store = Store::open(&odd, OpenOptionsStore::default()).unwrap();
            odd_store.create_session(NewSession::titled("odd")).unwrap();
            let err = store.backup_to(&crate::files::with_suffix(&odd, "-wal")).unwrap_err();
            assert!(err.to_string().contains("file of the database"), "{err}");
            assert_eq!(odd_store.counts().unwrap().0, 1);
        }
        #[cfg(unix)]
        {
            // A symlink to a ledger in use: its -wal is beside the target.
            let link = dir.path().join("symlink.db");
            std::os::unix::fs::symlink(&other_path, &link).unwrap();
            let err = store.backup_to(&link).unwrap_err();
            assert!(err.to_string().contains("in use"), "{err}");
            assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
            // Not a regular file.
            let err = store.backup_to(std::path::Path::new("/dev/null")).unwrap_err();
            assert!(err.to_string().contains("not a regular file"), "{err}");
        }
        // An ordinary file, such as an earlier backup, is replaced.
        let plain = dir.path().join("nightly.db");
        store.backup_to(&plain).unwrap();
        store.create_session(NewSession::titled("later")).unwrap();
        store.backup_to(&plain).unwrap();
        let copy = Store::open(&plain, OpenOptionsStore::default()).unwrap();
        assert_eq!(copy.counts().unwrap().0, 2);
    }
}
