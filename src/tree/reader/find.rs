//! Finding a tree's session directories: the layout this exporter writes
//! (`projects/{project}/sessions/{partition}/{sessionId}/`), the TypeScript
//! Thoughtbox's, a single session directory, and a folder holding trees,
//! which is named rather than read as empty.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::tree::bounded::{MAX_CONFIG_BYTES, read_regular};
use crate::tree::{MANIFEST, REFERENCE_BRANCH_DIR, io, is_session_id, thought_file_number};

/// Whether `dir` holds a numbered thought file: itself, in a branch folder
/// (`{branchId}/`), or in the TypeScript Thoughtbox's `branches/{branchId}/`.
pub(super) fn holds_thought_files(dir: &Path) -> bool {
    let numbered = |d: &Path| {
        fs::read_dir(d).is_ok_and(|entries| {
            entries
                .flatten()
                .any(|e| e.file_name().to_str().is_some_and(|n| thought_file_number(n).is_some()))
        })
    };
    let in_subdirs = |d: &Path| subdirs(d).is_ok_and(|subs| subs.iter().any(|s| numbered(s)));
    numbered(dir) || in_subdirs(dir) || in_subdirs(&dir.join(REFERENCE_BRANCH_DIR))
}

/// The session directories under `root`, in path order. `root` may be a tree
/// (`projects/*/sessions/`, or the TypeScript Thoughtbox's older
/// `sessions/`), a sessions directory, or one session directory. Sessions
/// may sit directly in a sessions directory (flat, partition `none`) or one
/// partition level below.
/// A directory counts as a session when it holds `manifest.json` or is named
/// like a session id (so a session that lost its manifest is still reported).
/// Symbolic links are not followed. A folder named like a session that holds
/// neither a manifest nor any thought file (what an export leaves behind
/// when it moves a session whose folder also held a file of the user's) is
/// no session.
pub fn find_session_dirs(root: &Path) -> Result<Vec<PathBuf>> {
    let meta = fs::metadata(root).map_err(io(format!("reading {}", root.display())))?;
    if !meta.is_dir() {
        // `import` and `validate` read a SessionExport file with
        // [`load_export_file`] before they get here.
        return Err(Error::io(
            format!(
                "{} is not a directory: the directory layout, which `thoughtbox export --out DIR` writes, is read \
                 from a directory",
                root.display()
            ),
            std::io::Error::from(std::io::ErrorKind::NotADirectory),
        ));
    }
    // One session directory, whole or without its manifest (to be reported).
    // By its real name: `validate .` from inside the folder names it `.`.
    let real = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let named_like_a_session = real.file_name().and_then(|n| n.to_str()).is_some_and(is_session_id);
    if root.join(MANIFEST).is_file() || (named_like_a_session && holds_thought_files(root)) {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut roots = Vec::new();
    for project in subdirs(&root.join("projects"))? {
        let s = project.join("sessions");
        if s.is_dir() {
            roots.push(s);
        }
    }
    if root.join("sessions").is_dir() {
        roots.push(root.join("sessions"));
    }
    if roots.is_empty() {
        roots.push(root.to_path_buf());
    }
    let is_session = |d: &Path| {
        d.join(MANIFEST).is_file()
            || (d.file_name().and_then(|n| n.to_str()).is_some_and(is_session_id) && holds_thought_files(d))
    };
    let mut found = Vec::new();
    for sessions in roots {
        for child in subdirs(&sessions)? {
            if is_session(&child) {
                found.push(child);
            } else {
                found.extend(subdirs(&child)?.into_iter().filter(|d| is_session(d)));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// Whether `dir` is laid out as a tree: a Thoughtbox `config.json` (not a
/// project folder's own), `projects/` or `sessions/` (an export of an empty
/// ledger has sessions in none of them).
pub(super) fn looks_like_tree(dir: &Path) -> bool {
    read_regular(&dir.join(crate::tree::CONFIG), MAX_CONFIG_BYTES).is_ok_and(|b| crate::tree::is_our_config(&b))
        || dir.join("projects").is_dir()
        || dir.join("sessions").is_dir()
}

/// [`find_session_dirs`] for a command that reads a tree (`import`,
/// `validate`): a directory that holds no session and is not laid out as a
/// tree at all is refused, naming the subdirectories that are, rather than
/// read as an empty tree (a wrong path would otherwise "succeed" for ever).
pub fn session_dirs_to_read(root: &Path) -> Result<Vec<PathBuf>> {
    let found = find_session_dirs(root)?;
    if !found.is_empty() || looks_like_tree(root) {
        return Ok(found);
    }
    let inside: Vec<String> = subdirs(root)?
        .iter()
        .filter(|d| looks_like_tree(d) || !find_session_dirs(d).unwrap_or_default().is_empty())
        .map(|d| d.display().to_string())
        .collect();
    let hint = match inside.as_slice() {
        [] => String::new(),
        [one] => format!("; did you mean {one}?"),
        many => format!("; trees below it: {}", many.join(", ")),
    };
    Err(Error::invalid(
        "dir",
        format!(
            "{} is not a Thoughtbox tree: it holds no Thoughtbox config.json, projects/, sessions/ or session directory{hint}",
            root.display()
        ),
    ))
}

/// Real subdirectories of `dir` (none when it does not exist), hidden ones
/// left out: an exporter stages new sessions in `.{id}.{pid}.tmp`.
pub(super) fn subdirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(format!("listing {}", dir.display()), e)),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(io(format!("listing {}", dir.display())))?;
        let hidden = entry.file_name().as_encoded_bytes().starts_with(b".");
        if !hidden && entry.file_type().is_ok_and(|t| t.is_dir()) {
            out.push(entry.path());
        }
    }
    out.sort();
    Ok(out)
}
