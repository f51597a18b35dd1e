//! File-system steps the store and the directory tree share: the folder
//! a path is in, a companion file's name (`-wal`), flushing a folder's
//! entries after a rename, and removing what a killed export or backup
//! left behind. Owner-only creation is [`crate::private`].

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::Result;

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

/// Flush directory `dir`'s entries (a rename into it) to disk. Where a
/// directory cannot be opened as a file (Windows), there is nothing to do.
pub fn sync_dir(dir: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| crate::error::Error::io(format!("flushing the directory {}", dir.display()), e))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// How old what an export left must be before another export removes it
/// (an export of an older version, which takes no lock, may be running).
const LEFTOVER_AGE: Duration = Duration::from_secs(600);

/// Remove what a killed export (or backup) left in `dir`: the entries whose
/// names `ours` recognises, unchanged for [`LEFTOVER_AGE`]; directories only
/// when `dirs` (a session's staging directory, whose name holds the session
/// id). A run still writing one changes it far more often than that.
pub(crate) fn remove_leftovers(dir: &Path, ours: impl Fn(&str) -> bool, dirs: bool) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if !entry.file_name().to_str().is_some_and(&ours) {
            continue;
        }
        let Ok(meta) = entry.metadata() else { continue };
        if meta
            .modified()
            .ok()
            .and_then(|m| m.elapsed().ok())
            .is_none_or(|age| age < LEFTOVER_AGE)
        {
            continue;
        }
        let removed = if meta.is_dir() {
            if !dirs {
                continue;
            }
            fs::remove_dir_all(entry.path())
        } else {
            fs::remove_file(entry.path())
        };
        if removed.is_ok() {
            tracing::info!(
                "removed {}, left by an earlier run that did not finish",
                entry.path().display()
            );
        }
    }
}
