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

/// `path` with its symlinks resolved (`fs::canonicalize`). On Windows
/// without the `\\?\` that canonicalizing puts in front, when the path
/// reads the same without it: messages show it ("\\?\C:\..." confuses).
pub(crate) fn canonical(path: &Path) -> std::io::Result<PathBuf> {
    let real = fs::canonicalize(path)?;
    #[cfg(windows)]
    if let Some(plain) = real.to_str().and_then(without_verbatim_prefix) {
        return Ok(PathBuf::from(plain));
    }
    Ok(real)
}

/// `\\?\C:\a\b` as `C:\a\b` and `\\?\UNC\host\share\a` as
/// `\\host\share\a`; None for any other path, and for one that Windows
/// would read differently without the prefix (longer than MAX_PATH, a
/// name ending in `.` or a space, a device name such as `NUL` or `COM1`,
/// a `/`).
#[cfg_attr(not(windows), allow(dead_code))]
fn without_verbatim_prefix(path: &str) -> Option<String> {
    let rest = path.strip_prefix(r"\\?\")?;
    let (plain, names) = if let Some(unc) = rest.strip_prefix(r"UNC\") {
        (format!(r"\\{unc}"), unc)
    } else {
        let drive = rest.as_bytes();
        if drive.len() < 3 || !drive[0].is_ascii_alphabetic() || &drive[1..3] != br":\" {
            return None;
        }
        (rest.to_string(), &rest[3..])
    };
    const MAX_PATH: usize = 260;
    let device = |name: &str| {
        let stem = name.split('.').next().unwrap_or(name).trim_end().to_ascii_uppercase();
        matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$")
            || (stem.len() == 4
                && (stem.starts_with("COM") || stem.starts_with("LPT"))
                && stem.as_bytes()[3].is_ascii_digit())
    };
    let ordinary = plain.encode_utf16().count() < MAX_PATH
        && !rest.contains('/')
        && names
            .split('\\')
            .filter(|name| !name.is_empty())
            .all(|name| !name.ends_with(['.', ' ']) && !device(name));
    ordinary.then_some(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verbatim_prefix_is_dropped_only_where_it_changes_nothing() {
        assert_eq!(
            without_verbatim_prefix(r"\\?\C:\Users\Ada\.thoughtbox\t.db").as_deref(),
            Some(r"C:\Users\Ada\.thoughtbox\t.db")
        );
        assert_eq!(
            without_verbatim_prefix(r"\\?\UNC\host\share\t.db").as_deref(),
            Some(r"\\host\share\t.db")
        );
        assert_eq!(without_verbatim_prefix(r"\\?\d:\").as_deref(), Some(r"d:\"));
        let long = format!(r"\\?\C:\{}", "a".repeat(300));
        for kept in [
            r"C:\plain",
            "/tmp/x",
            r"\\?\Volume{0b1c}\x",
            r"\\?\C:\dir.\t.db",
            r"\\?\C:\dir \t.db",
            r"\\?\C:\NUL",
            r"\\?\C:\x\com1.txt",
            r"\\?\C:\a/b",
            &long,
        ] {
            assert_eq!(without_verbatim_prefix(kept), None, "{kept}");
        }
        // A name that only starts like a device is a name.
        assert!(without_verbatim_prefix(r"\\?\C:\console\COM10\nulls").is_some());
    }
}
