//! The files and folders an export writes, at the level of single files:
//! the tree's lock ([`EXPORT_LOCK`]), the temporary names of files being
//! written and the leftovers of killed runs, the refusal to write through
//! a link inside the tree, private modes, and atomic replacement of one
//! file ([`write_atomic`]).

use std::fs;
use std::path::Path;

use crate::error::{Error, Result};
use crate::files::{folder_of, remove_leftovers, sync_dir};
use crate::tree::{MANIFEST, io, is_session_id, thought_file_number};

/// The lock file in a tree's root (see the module documentation).
pub const EXPORT_LOCK: &str = ".thoughtbox-export.lock";

/// Hold the tree at `root` for an export: the lock file is created if
/// missing, and this waits for an export in progress to finish, saying so
/// on the log, for at most `wait` (forever with `None`). Where the file
/// system has no locks, the export goes ahead without one, with a warning;
/// `None` is returned then, and nothing a killed export left is removed.
pub(super) fn lock_for_export(root: &Path, wait: Option<std::time::Duration>) -> Result<Option<fs::File>> {
    let path = root.join(EXPORT_LOCK);
    refuse_link(&path)?;
    let unlocked = |why: String| {
        tracing::warn!(
            "exporting into {} without its lock ({why}): do not run another export into it at the same time",
            root.display()
        );
        Ok(None)
    };
    let mut opts = crate::private::file_options();
    opts.create(true).truncate(false).write(true);
    let file = match opts.open(&path) {
        Ok(file) => file,
        Err(e) => return unlocked(format!("creating {}: {e}", path.display())),
    };
    let started = std::time::Instant::now();
    let mut told = false;
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(Some(file)),
            Err(fs::TryLockError::WouldBlock) => {}
            Err(fs::TryLockError::Error(e)) => return unlocked(format!("locking {}: {e}", path.display())),
        }
        if !told {
            tracing::warn!(
                "another export into {} is running; waiting for it to finish",
                root.display()
            );
            told = true;
        }
        if wait.is_some_and(|w| started.elapsed() >= w) {
            return Err(Error::io(
                format!("exporting into {}", root.display()),
                std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    format!(
                        "another export into it is still running after {} s; try again once it has finished",
                        started.elapsed().as_secs()
                    ),
                ),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Hold the tree that `dir` is (or is inside: a session directory, a
/// project) for reading, if the tree has a lock file: waits for an export in
/// progress to finish. A tree without one (written by another program, or
/// on read-only media) is read as it is.
pub fn lock_for_reading(dir: &Path) -> Option<fs::File> {
    // A session directory is five levels below the tree's root (looked for
    // from where a symlink points, too).
    let real = fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let (root, file) = [real.as_path(), dir].into_iter().find_map(|start| {
        start
            .ancestors()
            .take(6)
            .find_map(|d| fs::File::open(d.join(EXPORT_LOCK)).ok().map(|f| (d.to_path_buf(), f)))
    })?;
    match file.try_lock_shared() {
        Ok(()) => return Some(file),
        Err(fs::TryLockError::WouldBlock) => {
            tracing::warn!("an export into {} is running; waiting for it to finish", root.display());
        }
        Err(fs::TryLockError::Error(_)) => return None,
    }
    file.lock_shared().ok()?;
    Some(file)
}

/// A name for a temporary file or directory beside `name`, unique to this
/// call: `.{name}.{pid}-{n}.tmp`, `n` random so that no one can plant a
/// link at the name before it is created (it is created exclusively too).
pub(super) fn temporary_name(name: &str) -> String {
    let n = uuid::Uuid::new_v4().as_u64_pair().0;
    format!(".{name}.{}-{n}.tmp", std::process::id())
}

/// Whether `tag` is the `{pid}` or `{pid}-{n}` of a temporary name.
pub(super) fn is_temporary_tag(tag: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    match tag.split_once('-') {
        Some((pid, n)) => digits(pid) && digits(n),
        None => digits(tag),
    }
}

/// Whether `name` is a temporary name for `base`: `.{base}.{pid}.tmp` (a
/// name of earlier versions) or `.{base}.{pid}-{n}.tmp`.
pub(super) fn is_temporary_of(name: &str, base: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.strip_prefix(base))
        .and_then(|rest| rest.strip_prefix('.'))
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .is_some_and(is_temporary_tag)
}

/// The session id in `name` if it is the name of a session's staging
/// directory: `.{sessionId}.{pid}[-{n}].tmp`.
pub(super) fn staging_session(name: &str) -> Option<&str> {
    let (id, tag) = name.strip_prefix('.')?.strip_suffix(".tmp")?.split_once('.')?;
    (is_session_id(id) && is_temporary_tag(tag)).then_some(id)
}

/// Whether `name` is a temporary name for a file of a session directory:
/// its manifest or a numbered thought file.
pub(super) fn is_temporary_session_file(name: &str) -> bool {
    name.strip_prefix('.')
        .and_then(|rest| rest.strip_suffix(".tmp"))
        .and_then(|rest| rest.rsplit_once('.'))
        .is_some_and(|(base, tag)| is_temporary_tag(tag) && (base == MANIFEST || thought_file_number(base).is_some()))
}

pub(super) fn is_link(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

/// Refuse to write through a symbolic link inside the tree: an export
/// writes, replaces and removes files only in the tree's own folders
/// (a session folder linked to a user's folder would have its files replaced
/// and removed).
pub(super) fn refuse_link(path: &Path) -> Result<()> {
    if is_link(path) {
        return Err(Error::invalid(
            "destination",
            format!(
                "{} is a symbolic link inside the export tree; an export writes only into the tree's own folders: \
                 remove the link (or export elsewhere)",
                path.display()
            ),
        ));
    }
    Ok(())
}

/// [`refuse_link`] for `path` and each folder between it and `root`.
pub(super) fn refuse_links_below(root: &Path, path: &Path) -> Result<()> {
    for a in path.ancestors().take_while(|a| *a != root && a.starts_with(root)) {
        refuse_link(a)?;
    }
    Ok(())
}

/// The mode of the files an export writes (Unix): the ledger's own, since
/// an export holds the same thoughts (under umask 022 the tree would be
/// world-readable while the database beside it is 0600).
#[cfg_attr(not(unix), allow(dead_code))]
pub(super) const PRIVATE_FILE: u32 = crate::private::FILE;

/// The mode of the folders an export creates; folders that were there
/// already (the user's) keep theirs.
#[cfg_attr(not(unix), allow(dead_code))]
pub(super) const PRIVATE_DIR: u32 = crate::private::DIR;

/// Create (or truncate) `path` with mode [`PRIVATE_FILE`], whatever the
/// umask: set on the open file too, as a umask may narrow the mode given
/// at creation.
pub(super) fn create_private(path: &Path) -> std::io::Result<fs::File> {
    let mut opts = crate::private::file_options();
    opts.write(true).create(true).truncate(true);
    let file = opts.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(PRIVATE_FILE))?;
    }
    Ok(file)
}

/// `fs::write` with mode [`PRIVATE_FILE`].
pub(super) fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write as _;
    create_private(path)?.write_all(bytes)
}

/// Create the temporary file `path` with mode [`PRIVATE_FILE`], failing
/// if anything is there: a link planted at its name is not followed.
pub(super) fn create_temporary(path: &Path) -> std::io::Result<fs::File> {
    let mut opts = crate::private::file_options();
    opts.write(true).create_new(true);
    let file = opts.open(path)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(fs::Permissions::from_mode(PRIVATE_FILE))?;
    }
    Ok(file)
}

/// Create the folder `dir` (its parent exists) with mode [`PRIVATE_DIR`],
/// whatever the umask.
pub(super) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    crate::private::dir_builder().create(dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(dir, fs::Permissions::from_mode(PRIVATE_DIR))?;
    }
    Ok(())
}

/// `fs::create_dir_all` with mode [`PRIVATE_DIR`] for each folder it
/// creates; those already there are left as they are.
pub fn create_private_dirs(dir: &Path) -> std::io::Result<()> {
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && fs::metadata(a).is_err())
        .collect();
    for folder in missing.into_iter().rev() {
        match create_private_dir(folder) {
            Ok(()) => {}
            // Made meanwhile by another exporter: not ours to change.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && folder.is_dir() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Write `bytes` to `path` atomically unless it already holds them. Returns
/// whether the file was written.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<bool> {
    if fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    // A tree's files are not flushed one by one (thousands of fsyncs): an
    // export is a copy of the ledger, and the next one rewrites any file a
    // crash left short, since it compares bytes.
    replace(path, false, |w| {
        w.write_all(bytes)
            .map_err(io(format!("writing a temporary file beside {}", path.display())))
    })?;
    Ok(true)
}

/// Write to a temporary file beside `path` (named per call, so two writers
/// never share one) and rename it over `path`, flushed to disk.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |w| {
        w.write_all(bytes)
            .map_err(io(format!("writing a temporary file beside {}", path.display())))
    })
}

/// The temporary files that interrupted [`write_atomic_with`]s to `path`
/// left beside it, once they are old enough to be nobody's (a single-file
/// export stopped with Ctrl-C leaves one as large as the export).
pub fn remove_leftovers_of(path: &Path) {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return;
    };
    remove_leftovers(folder_of(path), |n| is_temporary_of(n, name), false);
}

/// [`write_atomic`] for content written piece by piece by `fill`: `path`
/// gets all of it or keeps what it had, also through a power cut.
pub fn write_atomic_with(path: &Path, fill: impl FnOnce(&mut dyn std::io::Write) -> Result<()>) -> Result<()> {
    replace(path, true, fill)
}

/// The body of [`write_atomic_with`]; `durable`: the file's bytes reach the
/// disk before the rename (else a crash can leave `path` empty on ext4,
/// XFS or btrfs), and the rename before the answer.
fn replace(path: &Path, durable: bool, fill: impl FnOnce(&mut dyn std::io::Write) -> Result<()>) -> Result<()> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = path.with_file_name(temporary_name(&name));
    let result = create_temporary(&tmp)
        .map_err(io(format!("creating {}", tmp.display())))
        .and_then(|file| {
            let mut w = std::io::BufWriter::new(file);
            fill(&mut w)?;
            let file = w
                .into_inner()
                .map_err(|e| io(format!("writing {}", tmp.display()))(e.into_error()))?;
            if durable {
                file.sync_all().map_err(io(format!("flushing {}", tmp.display())))?;
            }
            Ok(())
        })
        .and_then(|()| fs::rename(&tmp, path).map_err(io(format!("moving {} into place", path.display()))))
        .and_then(|()| match durable {
            true => sync_dir(folder_of(path)),
            false => Ok(()),
        });
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// A link planted at a temporary file's name is neither followed nor
    /// replaced, and names are not guessable from the process id.
    #[test]
    fn a_temporary_file_is_created_exclusively_under_an_unguessable_name() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, "kept").unwrap();
        let planted = dir.path().join("planted");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        assert!(create_temporary(&planted).is_err());
        assert_eq!(fs::read_to_string(&victim).unwrap(), "kept");
        let (a, b) = (temporary_name("x.json"), temporary_name("x.json"));
        assert_ne!(a, b);
        let tag = a.trim_start_matches(".x.json.").trim_end_matches(".tmp");
        assert!(is_temporary_tag(tag), "{a}: leftovers are still recognised");
    }
}
