//! Replacing the files of a session folder already in the tree: the
//! changed files are staged beside the ones they replace and renamed into
//! place together ([`Staged`]), and the files an earlier export wrote that
//! the session no longer has are removed, never anything else ([`Listed`]),
//! as is the whole folder of a session that moved elsewhere.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use super::ExportSummary;
use super::files::{create_temporary, is_link, is_temporary_session_file, temporary_name};
use crate::domain::validate_branch_id;
use crate::error::{Error, Result};
use crate::files::remove_leftovers;
use crate::tree::{MANIFEST, REFERENCE_BRANCH_DIR, io, thought_file_number};

/// The changed files of a session folder, written beside the files they
/// replace (`.{name}.{pid}-{n}.tmp`, which a later export removes if this
/// one is killed) until [`Staged::place`] renames them all into place.
/// Dropped before that, it removes them, and the branch folders it made.
#[derive(Default)]
pub(super) struct Staged {
    /// (temporary file, the file it replaces), in the order written.
    files: Vec<(PathBuf, PathBuf)>,
    pub(super) made_dirs: Vec<PathBuf>,
}

impl Staged {
    pub(super) fn stage(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = path.with_file_name(temporary_name(&name));
        // Listed first: a write cut short by a full disk is removed too.
        self.files.push((tmp.clone(), path.to_path_buf()));
        create_temporary(&tmp)
            .and_then(|mut f| std::io::Write::write_all(&mut f, bytes))
            .map_err(io(format!("writing {}", tmp.display())))
    }

    /// Rename every staged file into place, in the order staged.
    pub(super) fn place(&mut self, summary: &mut ExportSummary) -> Result<()> {
        let files = std::mem::take(&mut self.files);
        let mut files = files.into_iter();
        while let Some((tmp, path)) = files.next() {
            if let Err(e) = fs::rename(&tmp, &path) {
                self.files = std::iter::once((tmp, path.clone())).chain(files).collect();
                return Err(Error::io(format!("moving {} into place", path.display()), e));
            }
            summary.files_written += 1;
        }
        self.made_dirs.clear();
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        for (tmp, _) in self.files.drain(..) {
            let _ = fs::remove_file(&tmp);
        }
        // Only succeeds when nothing else is in them.
        for dir in self.made_dirs.drain(..).rev() {
            let _ = fs::remove_dir(&dir);
        }
    }
}

/// The files an export wrote in a session folder: those its manifest.json
/// lists, and numbered files that hold a thought of this session (a stray
/// one the manifest missed). Only these are ever removed from it (numbered
/// files and folders a user put in a session folder are the user's). Names
/// that are not thought files or branch ids are left out: a manifest is just
/// a file in the tree, and names such as `../x` must not reach a path.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct Listed {
    #[serde(default)]
    thought_files: Vec<String>,
    #[serde(default)]
    branch_files: BTreeMap<String, Vec<String>>,
}

impl Listed {
    pub(super) fn of(dir: &Path) -> Listed {
        let Ok(bytes) = fs::read(dir.join(MANIFEST)) else {
            return Listed::default();
        };
        let mut listed: Listed = serde_json::from_slice(&bytes).unwrap_or_default();
        listed.thought_files.retain(|f| thought_file_number(f).is_some());
        listed
            .branch_files
            .retain(|b, _| validate_branch_id("branchId", b).is_ok());
        for files in listed.branch_files.values_mut() {
            files.retain(|f| thought_file_number(f).is_some());
        }
        // Numbered files not listed that hold one of this session's nodes.
        let Some(session) = dir.file_name().and_then(|n| n.to_str()) else {
            return listed;
        };
        let of_session = |path: &Path| {
            #[derive(serde::Deserialize)]
            struct Node {
                id: String,
            }
            fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
                && fs::read(path)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<Node>(&b).ok())
                    .is_some_and(|n| n.id.strip_prefix(session).is_some_and(|rest| rest.starts_with(':')))
        };
        // The numbered files in `folder` that `known` does not list and
        // that hold a node of this session: only those are read (a large
        // session's folder holds its whole manifest's worth of files).
        let unlisted = |folder: &Path, known: &HashSet<&String>| -> Vec<String> {
            if folder.ancestors().take_while(|a| *a != dir).any(is_link) {
                return Vec::new();
            }
            let mut names: Vec<String> = fs::read_dir(folder)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| thought_file_number(n).is_some() && !known.contains(n) && of_session(&folder.join(n)))
                .collect();
            names.sort();
            names
        };
        let found = unlisted(dir, &listed.thought_files.iter().collect());
        listed.thought_files.extend(found);
        let branch_folders = |folder: &Path| -> Vec<String> {
            if is_link(folder) {
                return Vec::new();
            }
            fs::read_dir(folder)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| validate_branch_id("branchId", n).is_ok())
                .collect()
        };
        let mut branches = branch_folders(dir);
        branches.extend(branch_folders(&dir.join(REFERENCE_BRANCH_DIR)));
        for b in branches {
            let files = listed.branch_files.entry(b.clone()).or_default();
            let mut found = {
                let known: HashSet<&String> = files.iter().collect();
                let mut found = unlisted(&dir.join(&b), &known);
                found.extend(unlisted(&dir.join(REFERENCE_BRANCH_DIR).join(&b), &known));
                found
            };
            found.sort();
            found.dedup();
            files.extend(found);
        }
        listed.branch_files.retain(|_, files| !files.is_empty());
        listed
    }

    /// Remove the files listed here that `thought_files` / `branch_files`
    /// (what was just written) no longer have, in the session folder, in its
    /// branch folders and in the TypeScript Thoughtbox's `branches/{id}/`
    /// copies (this layout keeps branches in `{id}/`, so those are stale),
    /// then the branch folders left empty.
    pub(super) fn remove_stale(
        &self,
        dir: &Path,
        thought_files: &[String],
        branch_files: &BTreeMap<String, Vec<String>>,
        summary: &mut ExportSummary,
    ) -> Result<()> {
        // Sets: a session's folder may list a hundred thousand files.
        let kept: HashSet<&String> = thought_files.iter().collect();
        for f in self.thought_files.iter().filter(|f| !kept.contains(f)) {
            remove_written(dir, &dir.join(f), summary)?;
        }
        for (b, files) in &self.branch_files {
            let now: Option<HashSet<&String>> = branch_files.get(b).map(|n| n.iter().collect());
            for f in files {
                if now.as_ref().is_none_or(|n| !n.contains(f)) {
                    remove_written(dir, &dir.join(b).join(f), summary)?;
                }
                remove_written(dir, &dir.join(REFERENCE_BRANCH_DIR).join(b).join(f), summary)?;
            }
            if now.is_none() && !is_link(&dir.join(b)) {
                // Only succeeds when nothing else is left in it.
                let _ = fs::remove_dir(dir.join(b));
            }
            if !is_link(&dir.join(REFERENCE_BRANCH_DIR)) {
                let _ = fs::remove_dir(dir.join(REFERENCE_BRANCH_DIR).join(b));
            }
        }
        let _ = fs::remove_dir(dir.join(REFERENCE_BRANCH_DIR));
        Ok(())
    }
}

/// Remove a file an export wrote in session folder `dir`, if it is still
/// a plain file (a link or a folder put in its place is left alone) and no
/// folder between `dir` and it is a link (a `branches` link would lead the
/// removal out of the tree).
pub(super) fn remove_written(dir: &Path, path: &Path, summary: &mut ExportSummary) -> Result<()> {
    let through_link = path
        .ancestors()
        .skip(1)
        .take_while(|a| *a != dir && a.starts_with(dir))
        .any(is_link);
    if through_link || is_link(dir) {
        return Ok(());
    }
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => {
            fs::remove_file(path).map_err(io(format!("removing {}", path.display())))?;
            summary.files_removed += 1;
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Remove a session exported earlier to another place: its manifest and
/// numbered files, then its folder and the partition and project folders
/// above it (up to `projects`) that nothing else is in.
pub(super) fn remove_session_files(dir: &Path, projects: &Path, summary: &mut ExportSummary) -> Result<()> {
    // What killed exports left here goes too (once old enough to be
    // nobody's), or the folder would stay for good holding only that: no
    // export comes back to a folder its session left.
    if !is_link(dir) {
        remove_leftovers(dir, is_temporary_session_file, false);
        let branch_folders = fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| validate_branch_id("branchId", n).is_ok())
            });
        for folder in branch_folders {
            remove_leftovers(&folder.path(), is_temporary_session_file, false);
            // Only succeeds when nothing else is in it.
            let _ = fs::remove_dir(folder.path());
        }
    }
    Listed::of(dir).remove_stale(dir, &[], &BTreeMap::new(), summary)?;
    let manifest = dir.join(MANIFEST);
    if fs::symlink_metadata(&manifest).is_ok_and(|m| m.is_file()) {
        fs::remove_file(&manifest).map_err(io(format!("removing {}", manifest.display())))?;
        summary.files_removed += 1;
    }
    remove_empty_folders(dir, projects);
    Ok(())
}

/// Remove `dir` and the folders above it, up to `projects` (kept), while
/// they are empty: `remove_dir` fails on one that is not, ending the climb.
pub(super) fn remove_empty_folders(dir: &Path, projects: &Path) {
    let mut folder = Some(dir);
    while let Some(f) = folder.filter(|f| f.starts_with(projects) && *f != projects) {
        if fs::remove_dir(f).is_err() {
            break;
        }
        folder = f.parent();
    }
}
