//! Consistent copies of a live database with SQLite's online backup API.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;
use rusqlite::backup::{Backup, StepResult};

use super::Store;
use crate::error::{Error, Result};

impl Store {
    /// Copy the whole database to `dest` while other connections (and other
    /// processes) keep writing. The copy is written next to `dest` and renamed
    /// into place, so `dest` is either the old file or a complete new one.
    /// When `dest` is a directory the copy is named
    /// `thoughtbox-backup-<UTC time>.db` inside it. Returns the path written.
    pub fn backup_to(&self, dest: &Path) -> Result<PathBuf> {
        let dest = if dest.is_dir() {
            dest.join(format!(
                "thoughtbox-backup-{}.db",
                chrono::Utc::now().format("%Y%m%dT%H%M%SZ")
            ))
        } else {
            dest.to_path_buf()
        };
        let mut tmp = dest.as_os_str().to_owned();
        tmp.push(format!(".tmp-{}", std::process::id()));
        let tmp = PathBuf::from(tmp);
        let result = (|| -> Result<()> {
            let src = self.conn()?;
            {
                let mut out = Connection::open(&tmp)?;
                {
                    let backup = Backup::new(&src, &mut out)?;
                    // Copy every page in one step: one read transaction, one
                    // consistent snapshot, whatever other writers do meanwhile.
                    loop {
                        match backup.step(-1)? {
                            StepResult::Done => break,
                            StepResult::More | StepResult::Busy | StepResult::Locked => {
                                std::thread::sleep(Duration::from_millis(20))
                            }
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
                std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o600))
                    .map_err(|e| Error::io(format!("setting permissions on {}", tmp.display()), e))?;
            }
            std::fs::rename(&tmp, &dest)
                .map_err(|e| Error::io(format!("moving backup into place at {}", dest.display()), e))?;
            Ok(())
        })();
        if result.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        result.map(|()| dest)
    }
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
}
