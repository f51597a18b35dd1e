//! Consistent copies of a live database with SQLite's online backup API.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;
use rusqlite::backup::{Backup, StepResult};

use super::Store;
use crate::error::{Error, Result};

impl Store {
    /// Copy the whole database to `dest` while other connections (and other
    /// processes) keep writing.
    ///
    /// When `dest` is a directory, the copy gets a new file in it named
    /// `thoughtbox-backup-<UTC time to the millisecond>.db` (`-2`, `-3`...
    /// if that name is taken): a backup never replaces another. Otherwise
    /// the copy is written next to `dest` and renamed into place, so `dest`
    /// is either the old file or a complete new one; `dest` must not be this
    /// database, nor a database something has open (its `-wal` or `-shm`
    /// file exists): replacing it would lose every write made after.
    /// Returns the path written.
    pub fn backup_to(&self, dest: &Path) -> Result<PathBuf> {
        if dest.is_dir() {
            let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
            let tmp = dest.join(format!(".thoughtbox-backup-{stamp}.tmp-{}", std::process::id()));
            self.write_copy(&tmp)?;
            let placed = reserve_name(dest, &format!("thoughtbox-backup-{stamp}"))
                .and_then(|name| move_into_place(&tmp, &name).map(|()| name));
            if placed.is_err() {
                let _ = std::fs::remove_file(&tmp);
            }
            placed
        } else {
            self.check_replaceable(dest)?;
            let mut tmp = dest.as_os_str().to_owned();
            tmp.push(format!(".tmp-{}", std::process::id()));
            let tmp = PathBuf::from(tmp);
            self.write_copy(&tmp)?;
            move_into_place(&tmp, dest).inspect_err(|_| {
                let _ = std::fs::remove_file(&tmp);
            })?;
            Ok(dest.to_path_buf())
        }
    }

    /// Refuse a destination file whose replacement would lose data.
    fn check_replaceable(&self, dest: &Path) -> Result<()> {
        if let (Ok(ours), Ok(theirs)) = (std::fs::metadata(self.path()), std::fs::metadata(dest))
            && same_file(&ours, &theirs)
        {
            return Err(Error::invalid(
                "dest",
                format!(
                    "{} is the database being backed up; name another file or a directory",
                    dest.display()
                ),
            ));
        }
        for suffix in ["-wal", "-shm"] {
            let mut companion = dest.as_os_str().to_owned();
            companion.push(suffix);
            if Path::new(&companion).exists() {
                return Err(Error::invalid(
                    "dest",
                    format!(
                        "{} is a database in use ({} exists: a server or another program has it open, or stopped without \
                         closing it); replacing it would lose what is written to it. Name another file or a directory, \
                         or stop what uses it first",
                        dest.display(),
                        Path::new(&companion).display()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Write a consistent, self-contained copy of the database to `tmp`
    /// (mode 0600). On error nothing is left at `tmp`.
    fn write_copy(&self, tmp: &Path) -> Result<()> {
        let result = (|| -> Result<()> {
            let src = self.conn()?;
            {
                let mut out = Connection::open(tmp)?;
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
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(tmp, std::fs::Permissions::from_mode(0o600))
                    .map_err(|e| Error::io(format!("setting permissions on {}", tmp.display()), e))?;
            }
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(tmp);
        }
        result
    }
}

/// Create an empty file named `<stem>.db` in `dir` (or `<stem>-2.db`, ...,
/// whichever is free first), so that no other backup can take the name.
fn reserve_name(dir: &Path, stem: &str) -> Result<PathBuf> {
    for n in 1..=1000 {
        let name = if n == 1 {
            format!("{stem}.db")
        } else {
            format!("{stem}-{n}.db")
        };
        let path = dir.join(name);
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(_) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io(format!("creating {}", path.display()), e)),
        }
    }
    Err(Error::invalid(
        "dest",
        format!("{} already holds 1,000 backups named {stem}*.db", dir.display()),
    ))
}

fn move_into_place(tmp: &Path, dest: &Path) -> Result<()> {
    std::fs::rename(tmp, dest).map_err(|e| Error::io(format!("moving backup into place at {}", dest.display()), e))
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_: &std::fs::Metadata, _: &std::fs::Metadata) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use crate::domain::NewSession;
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
        assert_eq!(err.code(), "STORAGE_ERROR");
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
        // An ordinary file, such as an earlier backup, is replaced.
        let plain = dir.path().join("nightly.db");
        store.backup_to(&plain).unwrap();
        store.create_session(NewSession::titled("later")).unwrap();
        store.backup_to(&plain).unwrap();
        let copy = Store::open(&plain, OpenOptionsStore::default()).unwrap();
        assert_eq!(copy.counts().unwrap().0, 2);
    }
}
