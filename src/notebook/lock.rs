//! Which runs are alive. While a server runs a cell (or an install) it
//! holds an exclusive advisory lock (`flock`) on the cell's lock file,
//! `notebooks/.locks/<notebookId>/<cellId>.lock` beside the database:
//! outside the notebook's directory, which the cell itself may write. The
//! kernel drops the lock when the server exits, however it exits, so "is
//! this run alive" is "is its lock held": the same on Linux and macOS, and
//! across PID namespaces (two containers sharing the ledger's volume),
//! where a process id names nothing. Where the lock cannot be asked about,
//! the run counts as alive: nothing is taken over or deleted under a run
//! that may still be going.

use std::fs::{File, TryLockError};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// The folder of the lock files, in the notebooks' folder.
const LOCKS: &str = ".locks";

/// The lock files of notebook `notebook`'s cells.
pub fn locks_dir(database: &Path, notebook: &str) -> PathBuf {
    super::runner::notebooks_root(database).join(LOCKS).join(notebook)
}

/// Cell `cell`'s lock file.
pub fn lock_path(database: &Path, notebook: &str, cell: &str) -> PathBuf {
    locks_dir(database, notebook).join(format!("{cell}.lock"))
}

/// A cell's lock, held by this server until dropped. Std opens files
/// close-on-exec, so the cell's processes do not inherit it: a cell
/// outliving its server does not keep its run looking alive.
#[derive(Debug)]
pub struct RunLock {
    // Closing the file releases the lock.
    _file: File,
}

impl RunLock {
    /// Take cell `cell`'s lock without waiting: `None` when another run
    /// (of this server or another) holds it. An error when the lock file
    /// cannot be made or locked: a run without its lock would look dead to
    /// every other server, which would then take its cell over.
    pub fn try_take(database: &Path, notebook: &str, cell: &str) -> Result<Option<RunLock>> {
        let path = lock_path(database, notebook, cell);
        let failed = |e: std::io::Error| {
            Error::io(
                format!(
                    "taking the run lock {} (a run holds it so that no other server runs the cell at the same time; \
                     the ledger's folder must allow files and locks)",
                    path.display()
                ),
                e,
            )
        };
        if let Some(dir) = path.parent() {
            super::runner::make_notebooks_root(database)?;
            crate::private::dir_builder()
                .recursive(true)
                .create(dir)
                .map_err(failed)?;
        }
        let mut opts = crate::private::file_options();
        opts.create(true).truncate(false).write(true);
        let file = opts.open(&path).map_err(failed)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(RunLock { _file: file })),
            Err(TryLockError::WouldBlock) => Ok(None),
            Err(TryLockError::Error(e)) => Err(failed(e)),
        }
    }
}

/// Whether a run holds cell `cell`'s lock, this server's included (each
/// run locks through a file of its own). Asked by taking the lock without
/// waiting and letting it go at once; a lock that cannot be asked about
/// counts as held.
pub fn held(database: &Path, notebook: &str, cell: &str) -> bool {
    let path = lock_path(database, notebook, cell);
    let file = match File::open(&path) {
        Ok(file) => file,
        // No run ever took it, or its notebook was deleted.
        Err(e) if e.kind() == ErrorKind::NotFound => return false,
        Err(e) => {
            tracing::warn!(
                "cannot tell whether a run holds {}: {e}; taking it as alive",
                path.display()
            );
            return true;
        }
    };
    match file.try_lock() {
        // Dropping the file lets it go.
        Ok(()) => false,
        Err(TryLockError::WouldBlock) => true,
        Err(TryLockError::Error(e)) => {
            tracing::warn!(
                "cannot tell whether a run holds {}: {e}; taking it as alive",
                path.display()
            );
            true
        }
    }
}

/// Remove the lock file of a cell deleted, or the lock files of a notebook
/// deleted (`cell` `None`): nothing can run them any more.
pub fn remove(database: &Path, notebook: &str, cell: Option<&str>) {
    let (path, removed) = match cell {
        Some(c) => {
            let path = lock_path(database, notebook, c);
            let removed = std::fs::remove_file(&path);
            (path, removed)
        }
        None => {
            let path = locks_dir(database, notebook);
            let removed = std::fs::remove_dir_all(&path);
            (path, removed)
        }
    };
    if let Err(e) = removed
        && e.kind() != ErrorKind::NotFound
    {
        tracing::warn!("could not remove {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the lock is free, or soon is: a process another test forks
    /// shares this one's open files until it execs, lock included.
    fn released(db: &Path, notebook: &str, cell: &str) -> bool {
        (0..500).any(|_| {
            let free = !held(db, notebook, cell);
            if !free {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            free
        })
    }

    /// The lock once it is free (see [`released`]).
    fn taken(db: &Path, notebook: &str, cell: &str) -> Option<RunLock> {
        (0..500).find_map(|_| {
            let lock = RunLock::try_take(db, notebook, cell).unwrap();
            if lock.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            lock
        })
    }

    #[test]
    fn a_held_lock_is_alive_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("ledger.db");
        assert!(!held(&db, "n", "c"), "no lock file: no run");
        let lock = RunLock::try_take(&db, "n", "c").unwrap().unwrap();
        // Another open file description, in this very process, sees it held.
        assert!(held(&db, "n", "c"));
        assert!(RunLock::try_take(&db, "n", "c").unwrap().is_none());
        assert!(!held(&db, "n", "other"));
        // Asking did not take it away.
        assert!(held(&db, "n", "c"));
        drop(lock);
        assert!(released(&db, "n", "c"));
        let again = taken(&db, "n", "c");
        assert!(again.is_some());
        drop(again);
        remove(&db, "n", Some("c"));
        assert!(!lock_path(&db, "n", "c").exists());
        remove(&db, "n", None);
        assert!(!locks_dir(&db, "n").exists());
    }

    #[cfg(unix)]
    #[test]
    fn a_lock_held_by_another_process_is_alive_until_it_exits() {
        use std::io::{BufRead, BufReader, Write};
        use std::process::{Command, Stdio};
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("ledger.db");
        let path = lock_path(&db, "n", "c");
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "").unwrap();
        // flock(1) holds the lock while its shell waits for a line.
        if Command::new("flock").arg("--version").output().is_err() {
            eprintln!("flock(1) is not installed: skipped");
            return;
        }
        let mut child = Command::new("flock")
            .arg("-x")
            .arg(&path)
            .args(["sh", "-c", "echo locked; read _"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line.trim(), "locked");
        assert!(held(&db, "n", "c"));
        assert!(RunLock::try_take(&db, "n", "c").unwrap().is_none());
        child.stdin.take().unwrap().write_all(b"\n").unwrap();
        child.wait().unwrap();
        assert!(released(&db, "n", "c"));
        assert!(taken(&db, "n", "c").is_some());
    }
}
