//! Reading one file of a tree that `import` or `validate` was given: the
//! entry itself, never what a symbolic link names, and only a regular file
//! of bounded size. So a FIFO cannot block the reader, a link to
//! `/dev/zero` cannot fill memory, and a tree cannot pull in a file from
//! outside itself.

use std::fs;
use std::io::Read;
use std::path::Path;

/// The largest thought file read: a thought and its critique of 1 MiB each
/// fit even with every byte written as an escape (`\u0001`, six bytes).
pub const MAX_THOUGHT_FILE_BYTES: u64 = 16 << 20;

/// The largest `manifest.json` read: room for about three million thought
/// file names.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 20;

/// The largest `threads.json` (the thread registry) read.
pub const MAX_REGISTRY_BYTES: u64 = 256 << 20;

/// The largest `config.json` read: its few settings take a few hundred bytes.
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Why a file of a tree was not read. Shown after the file's name
/// (`manifest.json is a symbolic link; ...`).
#[derive(Debug, thiserror::Error)]
pub enum Unread {
    #[error("is missing")]
    Missing,
    #[error("is a symbolic link, not a regular file; import and validate follow no links inside a tree")]
    Link,
    #[error("is not a regular file")]
    NotRegular,
    #[error("is {bytes} bytes; import and validate read at most {limit} bytes ({} MiB) of such a file", .limit >> 20)]
    TooLarge { bytes: u64, limit: u64 },
    #[error("cannot be read: {0}")]
    Io(std::io::Error),
}

/// The bytes of `path`, a regular file (not a link to one) of at most
/// `limit` bytes.
pub fn read_regular(path: &Path, limit: u64) -> Result<Vec<u8>, Unread> {
    let meta = fs::symlink_metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Unread::Missing,
        _ => Unread::Io(e),
    })?;
    if meta.file_type().is_symlink() {
        return Err(Unread::Link);
    }
    if !meta.is_file() {
        return Err(Unread::NotRegular);
    }
    let too_large = |bytes| Unread::TooLarge { bytes, limit };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let file = open_entry(path).map_err(Unread::Io)?;
    // Replaced since it was looked at (by a FIFO, say): what was opened is
    // checked again, and read no further than the limit.
    if !file.metadata().map_err(Unread::Io)?.is_file() {
        return Err(Unread::NotRegular);
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(limit + 1).read_to_end(&mut bytes).map_err(Unread::Io)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Open `path` for reading without following a link at its last part, and
/// without waiting for a writer should it have become a FIFO.
fn open_entry(path: &Path) -> std::io::Result<fs::File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NOFOLLOW | libc::O_NONBLOCK);
    options.open(path)
}

/// Whether `path` is a symbolic link (one to a folder included).
pub fn is_link(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_limit_are_read() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("a.json");
        fs::write(&file, b"{}").unwrap();
        assert_eq!(read_regular(&file, 2).unwrap(), b"{}");
        assert!(matches!(
            read_regular(&file, 1),
            Err(Unread::TooLarge { bytes: 2, limit: 1 })
        ));
        assert!(matches!(
            read_regular(&tmp.path().join("none"), 9),
            Err(Unread::Missing)
        ));
        assert!(matches!(read_regular(tmp.path(), 9), Err(Unread::NotRegular)));
        #[cfg(unix)]
        {
            let link = tmp.path().join("link.json");
            std::os::unix::fs::symlink(&file, &link).unwrap();
            assert!(matches!(read_regular(&link, 9), Err(Unread::Link)));
            assert!(is_link(&link) && !is_link(&file));
            let zero = tmp.path().join("zero.json");
            std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
            assert!(matches!(read_regular(&zero, 9), Err(Unread::Link)));
            assert!(matches!(
                read_regular(Path::new("/dev/zero"), 9),
                Err(Unread::NotRegular)
            ));
        }
    }
}
