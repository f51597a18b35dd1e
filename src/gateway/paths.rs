//! Files an agent names on the server's disk: export destinations and
//! notebook import paths. A stdio agent acts for the local user who started
//! the server, and may name any. An HTTP agent may be anywhere the token
//! reached: it may name only files under the operator's `--files-root`,
//! and none without one (its answers carry the content instead).

use std::path::{Component, Path, PathBuf};

use super::Gateway;
use crate::error::{Error, Result};

/// `path` (absolute), if the caller may name it: as is over stdio; over
/// HTTP, resolved, when it stays inside the files root.
pub(crate) fn agent_path(gw: &Gateway, field: &str, path: PathBuf) -> Result<PathBuf> {
    if !gw.over_http {
        return Ok(path);
    }
    let Some(root) = &gw.options.files_root else {
        return Err(Error::invalid(
            field,
            format!(
                "{field} names a file on the server's disk, which agents over HTTP may not do on this server; \
                 leave {field} out to have the content in the answer (the server's operator can allow one folder \
                 with --files-root); nothing was read or written"
            ),
        ));
    };
    within(root, &path).ok_or_else(|| {
        Error::invalid(
            field,
            format!(
                "{field} must be a path inside {}, the folder this server lets HTTP agents use; nothing was read \
                 or written",
                root.display()
            ),
        )
    })
}

/// `path` with its symlinks resolved, when it stays inside `root` (itself
/// canonical): no `..` in it, and its deepest existing part inside `root`
/// once resolved, so a link in the root cannot lead out of it.
fn within(root: &Path, path: &Path) -> Option<PathBuf> {
    if path.components().any(|c| matches!(c, Component::ParentDir)) {
        return None;
    }
    let mut existing = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let rest = path.strip_prefix(existing).ok()?;
            // Joining an empty rest would add a trailing slash.
            let whole = if rest.as_os_str().is_empty() {
                real
            } else {
                real.join(rest)
            };
            return whole.starts_with(root).then_some(whole);
        }
        existing = existing.parent()?;
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn a_path_must_stay_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join("root");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(root.join("made")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();

        assert_eq!(
            within(&root, &root.join("made/new/x.json")),
            Some(root.join("made/new/x.json"))
        );
        assert_eq!(within(&root, &root), Some(root.clone()));
        assert_eq!(within(&root, &root.join("made")), Some(root.join("made")));
        assert_eq!(within(&root, &root.join("made/../../etc")), None);
        assert_eq!(within(&root, Path::new("/etc/passwd")), None);
        assert_eq!(
            within(&root, &root.join("link/x.src.md")),
            None,
            "a link out of the root"
        );
    }
}
