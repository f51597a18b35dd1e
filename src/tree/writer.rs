//! Writing the tree from the database.
//!
//! Nothing is ever seen half-written. A session new to the tree is written
//! into a temporary directory beside its place and renamed into place whole.
//! In a session already there, each changed file is written to a temporary
//! name and renamed over the old one; a file whose content is already right
//! is left untouched, so re-exporting an unchanged ledger rewrites nothing,
//! and thought files are written before the manifest, which therefore never
//! lists a file not yet there.
//! Re-exporting removes the numbered files of thoughts a session no longer
//! has (including the TypeScript Thoughtbox's `branches/{branchId}/`
//! copies), the files of a session exported before under another project or
//! partition, and the temporary files and directories of an export that was
//! killed; it never removes anything else.
//!
//! One export at a time writes into a tree: each holds an exclusive lock on
//! [`EXPORT_LOCK`] in its root for its whole run (whether the exporters are
//! processes or requests of one server), since two exporters interleaving
//! would leave one's manifest listing files the other removed. Import and
//! validation take the same lock shared, when the tree has one, so they
//! never read a tree halfway through an export. Where the file system has no
//! locks, an export goes ahead without one (with a warning) and removes no
//! leftovers; a leftover is removed only once it is ten minutes old,
//! since an export of an earlier version takes no lock.

mod files;
mod replace;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::reader::find_session_dirs;
use super::{
    CONFIG, MANIFEST, MANIFEST_VERSION, ManifestMetadata, SessionManifest, check_project, check_session_id, io,
    project_from_tags, session_dir, thought_file,
};
use crate::domain::{ConfigKey, Granularity, partition_path, validate_branch_id};
use crate::error::{Error, Result};
use crate::export::{ImportFitness, NextLinks, SessionSource};
use crate::store::Store;

use crate::files::remove_leftovers;
pub use files::{
    EXPORT_LOCK, create_private_dirs, lock_for_reading, remove_leftovers_of, write_atomic, write_atomic_with,
    write_file,
};
use files::{
    create_private_dir, is_temporary_of, is_temporary_session_file, lock_for_export, refuse_link, refuse_links_below,
    staging_session, temporary_name, write_private,
};
use replace::{Listed, Staged, remove_empty_folders, remove_session_files};

/// What to export and where each session goes.
#[derive(Debug, Clone, Default)]
pub struct ExportOptions {
    /// Sessions to export; every session when empty.
    pub sessions: Vec<String>,
    /// Project directory for every session; else each session's
    /// `project:<p>` tag, else `_default`.
    pub project: Option<String>,
    /// Partition granularity; else the database's `sessionPartitionGranularity`.
    pub granularity: Option<Granularity>,
    /// How long to wait for another export into the same tree to finish
    /// (forever when `None`).
    pub lock_wait: Option<std::time::Duration>,
}

/// One exported session.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportedSession {
    pub session_id: String,
    pub path: PathBuf,
    pub thoughts: u64,
}

/// What an export did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportSummary {
    pub destination: PathBuf,
    pub granularity: String,
    pub sessions: Vec<ExportedSession>,
    pub thoughts: u64,
    pub files_written: u64,
    pub files_unchanged: u64,
    pub files_removed: u64,
    /// Sessions deleted (by an agent or another process) after the export
    /// listed them: there was nothing left to export.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sessions_gone: Vec<String>,
    /// Sessions an export of every session could not write, each with why:
    /// rows edited by hand into what the layout cannot name (an id that is
    /// no UUID, a branch id that is no folder name). The others are written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub sessions_skipped: Vec<SkippedSession>,
    /// Staging directories of sessions that failed, removed once the
    /// session's read has ended (removing thousands of files takes
    /// seconds, which the read's snapshot must not be held for).
    #[serde(skip)]
    discard: Vec<PathBuf>,
}

/// A session left out of an export, and why.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedSession {
    pub session_id: String,
    pub reason: String,
}

/// Export sessions from `store` into the tree at `dest`, creating it if
/// missing. Names and the destination are checked before anything is written.
/// `progress(done, total)` is called after each session.
pub fn export_tree(
    store: &Store,
    dest: &Path,
    opts: &ExportOptions,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<ExportSummary> {
    if let Some(p) = &opts.project {
        check_project(p)?;
    }
    // Named sessions are checked now; every session is listed once the
    // tree is ours, so that one created while waiting is in.
    let named = if opts.sessions.is_empty() {
        None
    } else {
        let mut ids: Vec<String> = Vec::with_capacity(opts.sessions.len());
        for id in &opts.sessions {
            check_session_id(id)?;
            store.session(id)?;
            // A session named twice is exported once.
            if !ids.contains(id) {
                ids.push(id.clone());
            }
        }
        Some(ids)
    };
    prepare_destination(dest)?;
    check_config_is_ours(dest)?;
    let lock = lock_for_export(dest, opts.lock_wait)?;
    let exported = export_locked(store, dest, opts, named, lock.is_some(), progress);
    // A first export that failed leaves no tree, so not the lock file it
    // made either (a tree has its config.json, written last).
    if exported.is_err() && lock.is_some() && !dest.join(CONFIG).exists() {
        let _ = fs::remove_file(dest.join(EXPORT_LOCK));
    }
    exported
}

/// [`export_tree`] once the tree is held (`tidy`: with its lock, so that
/// what a killed export left may be removed).
fn export_locked(
    store: &Store,
    dest: &Path,
    opts: &ExportOptions,
    named: Option<Vec<String>>,
    tidy: bool,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<ExportSummary> {
    let named_only = named.is_some();
    let ids = match named {
        Some(ids) => ids,
        None => store.session_ids()?,
    };
    if tidy {
        remove_leftovers(dest, |n| is_temporary_of(n, CONFIG), false);
    }
    let granularity = opts.granularity.unwrap_or(store.granularity());
    // Where sessions already are in this tree, to move rather than duplicate them.
    let mut existing: HashMap<String, Vec<PathBuf>> = HashMap::new();
    if dest.join("projects").is_dir() {
        for dir in find_session_dirs(dest)? {
            if let Some(name) = dir.file_name().and_then(|n| n.to_str()) {
                existing.entry(name.to_string()).or_default().push(dir);
            }
        }
    }
    let mut summary = ExportSummary {
        destination: dest.to_path_buf(),
        granularity: granularity.as_str().to_string(),
        ..Default::default()
    };
    let total = ids.len();
    // Staging directories of a killed export of these sessions are looked
    // for once per partition folder, not once per session (a folder may hold
    // thousands of them).
    let exported: HashSet<&str> = ids.iter().map(String::as_str).collect();
    let mut tidied: HashSet<PathBuf> = HashSet::new();
    for (done, id) in ids.iter().enumerate() {
        // One read transaction per session, its thoughts streamed from it:
        // a session of any size is written without being held in memory.
        let written = store.with_session(id, |snapshot| {
            let session = &snapshot.session;
            check_session_id(&session.id)?;
            let project = opts.project.clone().unwrap_or_else(|| project_from_tags(&session.tags));
            let partition = partition_path(granularity, &session.created_at);
            let dir = session_dir(dest, &project, partition.as_deref(), &session.id);
            refuse_links_below(dest, &dir)?;
            if let Some(parent) = dir.parent()
                && tidy
                && tidied.insert(parent.to_path_buf())
            {
                let staging_of_ours = |name: &str| staging_session(name).is_some_and(|id| exported.contains(id));
                remove_leftovers(parent, staging_of_ours, true);
            }
            let thoughts = write_session(&dir, snapshot, tidy, &mut summary)?;
            Ok((session.id.clone(), dir, thoughts))
        });
        discard_staging(store, &mut summary);
        let (session_id, dir, thoughts) = match written {
            Ok(done) => done,
            Err(Error::SessionNotFound { .. }) => {
                summary.sessions_gone.push(id.clone());
                progress(done + 1, total);
                continue;
            }
            // Exporting every session: one whose rows the layout cannot
            // name does not keep the others out.
            Err(e @ Error::InvalidPayload { .. }) if !named_only => {
                tracing::warn!("session {id} left out of the export: {e}");
                summary.sessions_skipped.push(SkippedSession {
                    session_id: id.clone(),
                    reason: e.to_string(),
                });
                progress(done + 1, total);
                continue;
            }
            Err(e) => return Err(e),
        };
        for old in existing.remove(&session_id).unwrap_or_default() {
            if old == dir {
                continue;
            }
            match refuse_links_below(dest, &old) {
                Ok(()) => remove_session_files(&old, &dest.join("projects"), &mut summary)?,
                Err(e) => tracing::warn!("left the session's earlier copy in place: {e}"),
            }
        }
        summary.thoughts += thoughts;
        summary.sessions.push(ExportedSession {
            session_id,
            path: dir,
            thoughts,
        });
        progress(done + 1, total);
    }
    // The registry relates sessions to each other: only a tree of every
    // session holds all it names.
    if !named_only {
        let registry = super::threads::registry_bytes(store)?;
        count(
            &mut summary,
            write_file(&dest.join(super::threads::THREADS), &registry)?,
        );
    }
    let mut config = store.config()?;
    config.session_partition_granularity = granularity.as_str().to_string();
    count(&mut summary, write_file(&dest.join(CONFIG), &pretty(&config)?)?);
    Ok(summary)
}

/// An export writes `config.json` in the tree's root: refuse a destination
/// whose `config.json` is not a Thoughtbox tree's (a project folder's own),
/// rather than replace it (docs/decisions/0051).
fn check_config_is_ours(dest: &Path) -> Result<()> {
    let path = dest.join(CONFIG);
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
    };
    // Only a config.json of our own says the directory is a tree: session
    // folders beside another program's config.json prove nothing, since an
    // export into the parent directory can put them there (exporting into ~
    // would make ~/projects/app look like a tree, and the next export replace
    // the app's config.json). Ours only when it has the shape of a tree's
    // config.json: an installId and a known partition granularity side by
    // side (a key or a word named `installId` alone is found in other
    // programs' files too). A tree whose own config.json was damaged is
    // refused; the message says to delete that file.
    if is_tree_config(&bytes) {
        return Ok(());
    }
    Err(Error::invalid(
        "destination",
        format!(
            "{} holds a config.json that is not a Thoughtbox tree's; an export would replace it. Export into an \
             empty directory or an existing Thoughtbox tree (a tree whose own config.json is damaged: delete that \
             file first)",
            dest.display()
        ),
    ))
}

/// Whether `bytes` are the config.json a tree of ours (or the TypeScript
/// server's) holds: a JSON object (a byte-order mark allowed) with a
/// string `installId` and a `sessionPartitionGranularity` the layout knows.
fn is_tree_config(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(bytes).is_ok_and(|m| {
        m.get(ConfigKey::InstallId.name())
            .is_some_and(serde_json::Value::is_string)
            && m.get(ConfigKey::SessionPartitionGranularity.name())
                .and_then(serde_json::Value::as_str)
                .is_some_and(|g| Granularity::parse(g).is_some())
    })
}

/// The destination must be a directory (created when missing).
fn prepare_destination(dest: &Path) -> Result<()> {
    match fs::metadata(dest) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::invalid(
            "destination",
            format!(
                "export destination {} exists and is not a directory; name a directory (it is created when missing)",
                dest.display()
            ),
        )),
        // A path that cannot be a directory (under /proc, too long, no
        // permission, a read-only file system) is a bad destination, as a
        // file there is; a full disk is the storage failing.
        // (EIO, a quota, a full disk: the storage failing.)
        Err(_) => create_private_dirs(dest).map_err(|e| match e.kind() {
            std::io::ErrorKind::PermissionDenied
            | std::io::ErrorKind::NotFound
            | std::io::ErrorKind::NotADirectory
            | std::io::ErrorKind::ReadOnlyFilesystem
            | std::io::ErrorKind::InvalidFilename
            | std::io::ErrorKind::InvalidInput
            | std::io::ErrorKind::AlreadyExists => Error::invalid(
                "destination",
                format!(
                    "cannot create the export destination {}: {e}; name a directory this server can write",
                    dest.display()
                ),
            ),
            _ => Error::io(format!("cannot create export destination {}", dest.display()), e),
        }),
    }
}

/// A thought file: the ThoughtNode, and where the thought stands in its
/// session's creation order (1 for the first recorded).
/// Timestamps keep milliseconds, so thoughts on different chains recorded in
/// one millisecond would otherwise come back from an import in another order.
#[derive(Serialize)]
struct TreeNode<'a> {
    #[serde(flatten)]
    node: &'a crate::export::ThoughtNode,
    seq: i64,
}

fn pretty(value: &impl Serialize) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).map_err(|e| Error::Internal(e.to_string()))?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn count(summary: &mut ExportSummary, written: bool) {
    if written {
        summary.files_written += 1;
    } else {
        summary.files_unchanged += 1;
    }
}

/// Remove the staging folders of sessions that failed, then the partition
/// and project folders made for them, if they hold nothing else (a full
/// disk would leave them bare).
///
/// Not once the server's shutdown has stopped the store's reads (which is
/// how this export failed): removing the tens of thousands of files of a
/// large session's staging folder can take seconds on a busy disk, and an
/// MCP client sends SIGKILL a few seconds after SIGTERM, which would leave
/// the `-wal` file beside the database. A later export removes the folder
/// once it is ten minutes old.
fn discard_staging(store: &Store, summary: &mut ExportSummary) {
    if store.reads_stopped() {
        for staging in summary.discard.drain(..) {
            tracing::info!(
                "the server is stopping: left {} for a later export to remove",
                staging.display()
            );
        }
        return;
    }
    for staging in summary.discard.drain(..) {
        let _ = fs::remove_dir_all(&staging);
        if let Some(parent) = staging.parent()
            && let Some(projects) = parent
                .ancestors()
                .find(|a| a.file_name().is_some_and(|n| n == "projects"))
        {
            remove_empty_folders(parent, projects);
        }
    }
}

/// Write one session directory. A session new to the tree is written whole
/// into a temporary sibling directory and renamed into place, so it appears
/// complete or not at all (and costs one rename rather than one per file);
/// an existing one is updated file by file.
/// `tidy`: remove the temporary files a killed export left in the session's
/// folder.
/// Returns the number of thoughts written.
fn write_session(dir: &Path, source: &dyn SessionSource, tidy: bool, summary: &mut ExportSummary) -> Result<u64> {
    let session = source.session();
    let parent = dir.parent().unwrap_or(dir);
    if dir.exists() {
        return write_session_files(dir, source, false, tidy, summary);
    }
    create_private_dirs(parent).map_err(io(format!("creating {}", parent.display())))?;
    let staging = dir.with_file_name(temporary_name(&session.id));
    let written = (|| {
        create_private_dir(&staging).map_err(io(format!("creating {}", staging.display())))?;
        let mut counts = ExportSummary::default();
        let thoughts = write_session_files(&staging, source, true, false, &mut counts)?;
        fs::rename(&staging, dir).map_err(io(format!("moving {} into place", dir.display())))?;
        Ok((counts, thoughts))
    })();
    match written {
        Ok((counts, thoughts)) => {
            summary.files_written += counts.files_written;
            Ok(thoughts)
        }
        Err(e) => {
            summary.discard.push(staging);
            // Another exporter put the session there meanwhile: update it instead.
            if dir.is_dir() {
                write_session_files(dir, source, false, tidy, summary)
            } else {
                Err(e)
            }
        }
    }
}

/// Write the thought files, branch folders and manifest into `dir`, then
/// remove numbered files of thoughts the session no longer has. `fresh`: the
/// directory is new and private, so files are written directly. `tidy`:
/// remove the temporary files a killed export left. Returns the number of
/// thoughts written.
fn write_session_files(
    dir: &Path,
    source: &dyn SessionSource,
    fresh: bool,
    tidy: bool,
    summary: &mut ExportSummary,
) -> Result<u64> {
    let session = source.session();
    if tidy {
        remove_leftovers(dir, is_temporary_session_file, false);
    }
    // What the export before this one wrote here: the files it is the only
    // one to remove when the session no longer has them.
    let before = if fresh { Listed::default() } else { Listed::of(dir) };
    // A folder an earlier export wrote is updated all at once: each changed
    // file is first written beside its own, and only once all of them are
    // are they renamed into place, the manifest last. A full disk or any
    // other failure half-way leaves the folder as the last export wrote it,
    // not some thoughts new and the manifest old.
    let mut staged = Staged::default();
    let put = |path: &Path, bytes: &[u8], summary: &mut ExportSummary, staged: &mut Staged| -> Result<()> {
        if fresh {
            write_private(path, bytes).map_err(io(format!("writing {}", path.display())))?;
            summary.files_written += 1;
        } else if fs::read(path).is_ok_and(|old| old == bytes) {
            count(summary, false);
        } else {
            staged.stage(path, bytes)?;
        }
        Ok(())
    };
    let mut thought_files = Vec::new();
    let mut branch_files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let next = NextLinks::of(source)?;
    let order = source.creation_order()?;
    let mut thoughts = 0u64;
    // Rows a ledger may hold from before the schema's checks, edited by
    // hand into what an import refuses: the session is left out and named,
    // rather than written as a tree that `validate` and `import` refuse, or
    // with one thought written over another.
    let mut fitness = ImportFitness::new(session)?;
    source.each_thought(&mut |t| {
        thoughts += 1;
        fitness.thought(&t)?;
        // 1 for the session's first thought, so that a tree imported into
        // another ledger exports again byte for byte.
        let seq = order.binary_search(&t.seq).map_or(0, |i| i as i64 + 1);
        let node = next.node(t);
        let name = thought_file(node.data.thought_number);
        let path = match node.branch_id.as_deref() {
            None => {
                thought_files.push(name.clone());
                dir.join(&name)
            }
            Some(b) => {
                // Stored branch ids are checked on the way in; checked again
                // here because this one becomes a directory name.
                validate_branch_id("branchId", b)?;
                let files = branch_files.entry(b.to_string()).or_default();
                if files.is_empty() {
                    let bdir = dir.join(b);
                    refuse_link(&bdir)?;
                    if !fresh && !bdir.exists() {
                        staged.made_dirs.push(bdir.clone());
                    }
                    create_private_dirs(&bdir).map_err(io(format!("creating {}", bdir.display())))?;
                    if tidy {
                        remove_leftovers(&bdir, is_temporary_session_file, false);
                    }
                }
                files.push(name.clone());
                dir.join(b).join(&name)
            }
        };
        put(&path, &pretty(&TreeNode { node: &node, seq })?, summary, &mut staged)
    })?;
    fitness.finish(next.prevs())?;
    let manifest = SessionManifest {
        id: session.id.clone(),
        version: MANIFEST_VERSION.to_string(),
        thought_files,
        branch_files,
        metadata: ManifestMetadata {
            title: session.title.clone(),
            description: session.description.clone(),
            tags: session.tags.clone(),
            created_at: session.created_at.clone(),
            updated_at: session.updated_at.clone(),
            completed_at: session.completed_at.clone(),
            domain: session.domain.clone(),
        },
    };
    put(&dir.join(MANIFEST), &pretty(&manifest)?, summary, &mut staged)?;
    staged.place(summary)?;
    if !fresh {
        before.remove_stale(dir, &manifest.thought_files, &manifest.branch_files, summary)?;
    }
    Ok(thoughts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{NewSession, Session, Thought, ThoughtInput};
    use crate::store::Target;
    use crate::store::test_support::temp_store;
    #[cfg(unix)]
    use crate::tree::REFERENCE_BRANCH_DIR;
    use crate::tree::reader::load_session;

    /// A session whose export fails before it is in place (a full disk, a
    /// read error) leaves neither its staging folder nor the partition and
    /// project folders made for it.
    #[test]
    fn a_failed_session_leaves_no_empty_folders() {
        struct Failing(Session);
        impl SessionSource for Failing {
            fn session(&self) -> &Session {
                &self.0
            }
            fn links(&self) -> Result<Vec<(String, String)>> {
                Ok(Vec::new())
            }
            fn creation_order(&self) -> Result<Vec<i64>> {
                Ok(Vec::new())
            }
            fn each_thought(&self, _f: &mut dyn FnMut(Thought) -> Result<()>) -> Result<()> {
                Err(Error::Internal("read failed".into()))
            }
        }
        let (dir, store) = temp_store();
        let session = store.create_session(NewSession::titled("fails")).unwrap();
        let dest = dir.path().join("out");
        let projects = dest.join("projects");
        fs::create_dir_all(projects.join("other")).unwrap();
        let target = session_dir(&dest, "p", Some("2026-11"), &session.id);
        let mut summary = ExportSummary::default();
        assert!(write_session(&target, &Failing(session), false, &mut summary).is_err());
        // Removed once the session's read has ended.
        assert_eq!(summary.discard.len(), 1);
        discard_staging(&store, &mut summary);
        assert!(!projects.join("p").exists());
        assert!(projects.join("other").is_dir());

        // Failed because the server's shutdown stopped its read: left for a
        // later export, so that the exit is not held up.
        let mut summary = ExportSummary::default();
        let session = store.create_session(NewSession::titled("stopped")).unwrap();
        let target = session_dir(&dest, "p", Some("2026-11"), &session.id);
        assert!(write_session(&target, &Failing(session), false, &mut summary).is_err());
        let staging = summary.discard[0].clone();
        store.interrupt_running();
        discard_staging(&store, &mut summary);
        assert!(summary.discard.is_empty());
        assert!(staging.is_dir(), "{} removed", staging.display());
    }

    #[test]
    fn what_is_written_reads_back_the_same() {
        let (dir, store) = temp_store();
        let s = store
            .create_session(NewSession {
                title: "t".into(),
                tags: vec!["project:p".into()],
                ..Default::default()
            })
            .unwrap();
        for (n, branch) in [(Some(3), None), (Some(1), None), (None, Some("b")), (None, None)] {
            store
                .append_thought(
                    Target::Session(s.id.clone()),
                    ThoughtInput {
                        thought_number: n,
                        branch_id: branch.map(str::to_string),
                        branch_from_thought: branch.map(|_| 1),
                        ..ThoughtInput::text("x")
                    },
                )
                .unwrap();
        }
        let out = dir.path().join("out");
        let summary = export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
        assert_eq!(
            summary.files_written, 7,
            "4 thoughts, the manifest, threads.json, config.json"
        );
        // Naming the session twice exports it once.
        let twice = ExportOptions {
            sessions: vec![s.id.clone(), s.id.clone()],
            ..Default::default()
        };
        let again = export_tree(&store, &out, &twice, &mut |_, _| {}).unwrap();
        assert_eq!(again.sessions.len(), 1);
        assert_eq!(again.files_written, 0);
        let path = &summary.sessions[0].path;
        assert!(path.starts_with(out.join("projects/p/sessions")));
        // Each file says where its thought stands in the creation order.
        let seqs: Vec<i64> = ["003.json", "001.json", "b/002.json"]
            .iter()
            .map(|f| {
                let v: serde_json::Value = serde_json::from_slice(&fs::read(path.join(f)).unwrap()).unwrap();
                v["seq"].as_i64().unwrap()
            })
            .collect();
        assert_eq!(seqs, [1, 2, 3]);
        let (report, loaded) = load_session(path);
        assert!(report.result.valid && report.warnings.is_empty(), "{report:?}");
        let (_, mut stored) = store.session_thoughts(&s.id).unwrap();
        stored.sort_by_key(|t| t.seq);
        let key = |t: &Thought| (t.node_id.clone(), t.prev_node.clone(), t.data.clone());
        assert_eq!(
            loaded.unwrap().thoughts.iter().map(key).collect::<Vec<_>>(),
            stored.iter().map(key).collect::<Vec<_>>()
        );
        let again = export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
        assert_eq!((again.files_written, again.files_unchanged), (0, 7));
    }

    #[test]
    fn exports_into_one_tree_at_once_leave_it_whole() {
        let (dir, store) = temp_store();
        let s = store.create_session(NewSession::titled("growing")).unwrap();
        let out = dir.path().join("out");
        let target = Target::Session(s.id.clone());
        std::thread::scope(|scope| {
            for _ in 0..3 {
                scope.spawn(|| {
                    for _ in 0..15 {
                        export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
                    }
                });
            }
            for i in 0..300 {
                store
                    .append_thought(target.clone(), ThoughtInput::text(i.to_string()))
                    .unwrap();
            }
        });
        let dirs = find_session_dirs(&out).unwrap();
        assert_eq!(dirs.len(), 1);
        let (report, _) = load_session(&dirs[0]);
        assert!(report.result.valid, "{report:?}");
        // Nothing temporary is left beside it.
        let leftovers = |d: &Path| {
            fs::read_dir(d)
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
                .count()
        };
        assert_eq!(
            leftovers(&dirs[0]) + leftovers(dirs[0].parent().unwrap()) + leftovers(&out),
            0
        );
    }

    /// A ledger of one session of one thought, exported to `out`: the
    /// ledger's directory, the store, the session, `out`, and the session's
    /// directory in the tree.
    fn one_session_exported() -> (tempfile::TempDir, Store, Session, PathBuf, PathBuf) {
        let (dir, store) = temp_store();
        let a = store.create_session(NewSession::titled("a")).unwrap();
        store
            .append_thought(Target::Session(a.id.clone()), ThoughtInput::text("one"))
            .unwrap();
        let out = dir.path().join("out");
        let summary = export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
        let session_dir = summary.sessions[0].path.clone();
        (dir, store, a, out, session_dir)
    }

    #[test]
    fn what_a_killed_export_left_is_removed_by_the_next() {
        let (_dir, store, a, out, session_dir) = one_session_exported();
        let partition = session_dir.parent().unwrap().to_path_buf();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let age = |path: &Path| {
            let mut opts = fs::OpenOptions::new();
            // Windows sets times through a handle with FILE_WRITE_ATTRIBUTES,
            // and opens a folder only with FILE_FLAG_BACKUP_SEMANTICS.
            #[cfg(windows)]
            std::os::windows::fs::OpenOptionsExt::custom_flags(
                std::os::windows::fs::OpenOptionsExt::access_mode(&mut opts, 0x0100),
                0x0200_0000,
            );
            #[cfg(not(windows))]
            opts.read(true);
            opts.open(path).unwrap().set_modified(hour_ago).unwrap()
        };
        // What an export killed an hour ago left: a staging directory of
        // this session, temporary files (names of this version and of
        // earlier ones).
        let staging = partition.join(format!(".{}.4242.tmp", a.id));
        fs::create_dir(&staging).unwrap();
        fs::write(staging.join("001.json"), "{").unwrap();
        let left = [
            partition.join(format!(".{}.4242-3.tmp", a.id)),
            session_dir.join(".001.json.4242.tmp"),
            session_dir.join(".manifest.json.4242-7.tmp"),
            out.join(".config.json.4242-0.tmp"),
        ];
        for path in &left {
            fs::write(path, "{").unwrap();
            age(path);
        }
        age(&staging);
        // What stays: the same names written a moment ago (an export of an
        // older version, which takes no lock, may be running), another
        // session's staging directory, and the user's own hidden files.
        let recent = session_dir.join(".002.json.4343-1.tmp");
        fs::write(&recent, "{").unwrap();
        let other = partition.join(".0b8f8f7e-1111-4222-8333-944445555666.4242.tmp");
        fs::create_dir(&other).unwrap();
        let mine = [
            partition.join(".keep"),
            session_dir.join(".notes.tmp"),
            session_dir.join(".001.json.backup.tmp"),
            out.join(".config.json.tmp"),
        ];
        let scratch = session_dir.join(".scratch.tmp");
        fs::create_dir(&scratch).unwrap();
        fs::write(scratch.join("important"), "keep me").unwrap();
        for path in mine.iter().chain([&other, &scratch]) {
            if path.is_file() || !path.exists() {
                fs::write(path, "mine").unwrap();
            }
            age(path);
        }
        export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
        assert!(!staging.exists());
        for path in &left {
            assert!(!path.exists(), "{} is still there", path.display());
        }
        for path in mine.iter().chain([&recent, &other, &scratch.join("important")]) {
            assert!(path.exists(), "{} was removed", path.display());
        }
    }

    /// A session moved to another partition leaves no folder behind that
    /// holds only what a killed export left.
    #[test]
    fn a_session_that_moves_takes_the_leftovers_of_its_old_folder() {
        let (_dir, store, _a, out, session_dir) = one_session_exported();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let branch = session_dir.join("alt");
        fs::create_dir_all(&branch).unwrap();
        let left = [
            session_dir.join(".001.json.4242-1.tmp"),
            session_dir.join(".manifest.json.4242-2.tmp"),
            branch.join(".001.json.4242-3.tmp"),
        ];
        for path in &left {
            fs::write(path, "{").unwrap();
            fs::File::open(path).unwrap().set_modified(hour_ago).unwrap();
        }
        let daily = ExportOptions {
            granularity: Some(crate::domain::Granularity::Daily),
            ..Default::default()
        };
        let moved = export_tree(&store, &out, &daily, &mut |_, _| {}).unwrap();
        assert_ne!(moved.sessions[0].path, session_dir);
        assert!(!session_dir.exists(), "the old folder is gone");
    }

    #[test]
    fn a_session_deleted_during_an_export_is_skipped() {
        let (dir, store) = temp_store();
        let ids: Vec<String> = (0..3)
            .map(|i| {
                let s = store.create_session(NewSession::titled(format!("s{i}"))).unwrap();
                store
                    .append_thought(Target::Session(s.id.clone()), ThoughtInput::text("x"))
                    .unwrap();
                s.id
            })
            .collect();
        let out = dir.path().join("out");
        // Delete whichever session comes next while the first is exported.
        let order = store.session_ids().unwrap();
        let mut deleted = None;
        let summary = export_tree(&store, &out, &ExportOptions::default(), &mut |done, _| {
            if done == 1 {
                store.delete_session(&order[1]).unwrap();
                deleted = Some(order[1].clone());
            }
        })
        .unwrap();
        let deleted = deleted.unwrap();
        assert!(ids.contains(&deleted));
        assert_eq!(summary.sessions_gone, vec![deleted.clone()]);
        assert_eq!(summary.sessions.len(), 2);
        assert!(summary.sessions.iter().all(|s| s.session_id != deleted));
        assert!(out.join(CONFIG).is_file(), "the export ran to its end");
    }

    #[test]
    fn a_busy_tree_makes_an_export_wait_and_readers_too() {
        let (_dir, store, _, out, session_dir) = one_session_exported();
        // Another export holds the tree.
        let held = fs::File::open(out.join(EXPORT_LOCK)).unwrap();
        held.lock().unwrap();
        let impatient = ExportOptions {
            lock_wait: Some(std::time::Duration::from_millis(100)),
            ..Default::default()
        };
        let err = export_tree(&store, &out, &impatient, &mut |_, _| {}).unwrap_err();
        assert!(err.to_string().contains("another export into"), "{err}");
        // A reader of one session directory finds the tree's lock and waits.
        let read = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _lock = lock_for_reading(&session_dir).expect("the tree's lock");
                read.store(true, std::sync::atomic::Ordering::SeqCst);
            });
            std::thread::sleep(std::time::Duration::from_millis(100));
            assert!(!read.load(std::sync::atomic::Ordering::SeqCst), "read during an export");
            // Closed, as an export's lock is when it ends.
            drop(held);
        });
        assert!(read.load(std::sync::atomic::Ordering::SeqCst));
        export_tree(&store, &out, &impatient, &mut |_, _| {}).unwrap();
    }

    /// A symbolic link planted inside a tree (a session folder, a branch
    /// folder, the lock file) must not make a re-export replace and remove
    /// files outside it: the export refuses, naming the link, and the files
    /// it points to are left as they were.
    #[cfg(unix)]
    #[test]
    fn an_export_never_writes_through_a_link_inside_its_tree() {
        use std::os::unix::fs::symlink;
        let (dir, store) = temp_store();
        let s = store.create_session(NewSession::titled("a")).unwrap();
        for text in ["one", "two"] {
            store
                .append_thought(
                    crate::store::Target::Session(s.id.clone()),
                    crate::domain::ThoughtInput::text(text),
                )
                .unwrap();
        }
        let victim = dir.path().join("victim");
        fs::create_dir(&victim).unwrap();
        for name in ["001.json", "002.json", "manifest.json"] {
            fs::write(victim.join(name), "mine").unwrap();
        }
        let untouched = || {
            for name in ["001.json", "002.json", "manifest.json"] {
                assert_eq!(fs::read_to_string(victim.join(name)).unwrap(), "mine", "{name}");
            }
            assert_eq!(fs::read_dir(&victim).unwrap().count(), 3);
        };
        let out = dir.path().join("out");
        let first = export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
        let session_dir = first.sessions[0].path.clone();
        // The session folder replaced by a link to the victim.
        fs::remove_dir_all(&session_dir).unwrap();
        symlink(&victim, &session_dir).unwrap();
        let named = ExportOptions {
            sessions: vec![s.id.clone()],
            ..Default::default()
        };
        let err = export_tree(&store, &out, &named, &mut |_, _| {}).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");
        untouched();
        // Exporting every session: that one is skipped and named.
        let all = export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
        assert_eq!(all.sessions_skipped.len(), 1);
        untouched();
        // A branch folder that is a link.
        fs::remove_file(&session_dir).unwrap();
        export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
        store
            .append_thought(
                crate::store::Target::Session(s.id.clone()),
                crate::domain::ThoughtInput {
                    branch_id: Some("alt".into()),
                    branch_from_thought: Some(1),
                    ..crate::domain::ThoughtInput::text("branch")
                },
            )
            .unwrap();
        symlink(&victim, session_dir.join("alt")).unwrap();
        assert!(export_tree(&store, &out, &named, &mut |_, _| {}).is_err());
        untouched();
        // Also `branches` (the TypeScript Thoughtbox's branch folder) as a
        // link to a folder holding branch-named folders of the user's.
        fs::remove_file(session_dir.join("alt")).unwrap();
        export_tree(&store, &out, &named, &mut |_, _| {}).unwrap();
        let theirs = dir.path().join("theirs");
        fs::create_dir_all(theirs.join("alt")).unwrap();
        let node = format!(r#"{{"id":"{}:2"}}"#, s.id);
        for name in ["001.json", "002.json"] {
            fs::write(theirs.join("alt").join(name), &node).unwrap();
        }
        symlink(&theirs, session_dir.join(REFERENCE_BRANCH_DIR)).unwrap();
        export_tree(&store, &out, &named, &mut |_, _| {}).unwrap();
        assert_eq!(fs::read_dir(theirs.join("alt")).unwrap().count(), 2);
        fs::remove_file(session_dir.join(REFERENCE_BRANCH_DIR)).unwrap();
        // The lock file as a link: nothing is created where it points.
        fs::remove_file(out.join(EXPORT_LOCK)).unwrap();
        symlink(dir.path().join("created-by-lock"), out.join(EXPORT_LOCK)).unwrap();
        assert!(export_tree(&store, &out, &named, &mut |_, _| {}).is_err());
        assert!(!dir.path().join("created-by-lock").exists());
    }

    #[test]
    fn a_config_json_of_someone_else_is_never_replaced() {
        let (dir, store) = temp_store();
        store.create_session(NewSession::titled("a")).unwrap();
        let project = dir.path().join("my-app");
        fs::create_dir(&project).unwrap();
        fs::write(project.join(CONFIG), r#"{"name":"my-app","secret":"keep me"}"#).unwrap();
        let err = export_tree(&store, &project, &ExportOptions::default(), &mut |_, _| {}).unwrap_err();
        assert!(err.to_string().contains("not a Thoughtbox tree's"), "{err}");
        assert_eq!(
            fs::read_to_string(project.join(CONFIG)).unwrap(),
            r#"{"name":"my-app","secret":"keep me"}"#
        );
        assert!(!project.join("projects").exists(), "nothing was written");
        assert!(!project.join(EXPORT_LOCK).exists(), "nothing was written");
        // A manifest.json of its own (a web app's) does not make it a tree.
        fs::write(project.join("manifest.json"), "{}").unwrap();
        fs::create_dir_all(project.join("public")).unwrap();
        fs::write(project.join("public/manifest.json"), "{}").unwrap();
        let err = export_tree(&store, &project, &ExportOptions::default(), &mut |_, _| {}).unwrap_err();
        assert!(err.to_string().contains("not a Thoughtbox tree's"), "{err}");
        // A tree of ours (or of the TypeScript server's) is updated, also
        // with its config.json behind a byte-order mark; one cut short is
        // refused (delete it to go on).
        let out = dir.path().join("out");
        export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
        fs::write(
            out.join(CONFIG),
            "\u{feff}{\"installId\":\"x\",\"dataDir\":\"/home/u/.thoughtbox\",\"sessionPartitionGranularity\":\"monthly\"}",
        )
        .unwrap();
        export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
        fs::write(out.join(CONFIG), "{\"installId\":").unwrap();
        let err = export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap_err();
        assert!(err.to_string().contains("delete that file first"), "{err}");
        fs::remove_file(out.join(CONFIG)).unwrap();
        export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}).unwrap();
        // A session folder of the TypeScript Thoughtbox's layout that lost
        // its manifest and keeps thoughts only under branches/{id}/ is still
        // found (and reported), unlike a folder a moved session left to the
        // user.
        let lost = out.join("projects/ts/sessions/2026-11/0b8f8f7e-1111-4222-8333-944445555666");
        fs::create_dir_all(lost.join("branches/alt")).unwrap();
        fs::write(lost.join("branches/alt/002.json"), "{}").unwrap();
        assert!(find_session_dirs(&out).unwrap().contains(&lost));
        // Also when that folder is named on its own (validate DIR/...).
        assert_eq!(find_session_dirs(&lost).unwrap(), vec![lost.clone()]);
        // Session folders beside another program's config.json (which an
        // export into the parent directory puts there) do not make it a tree.
        let home = dir.path().join("home");
        let app = home.join("projects/app");
        fs::create_dir_all(&app).unwrap();
        fs::write(app.join(CONFIG), r#"{"name":"app","dbPassword":"hunter2"}"#).unwrap();
        let tagged = store
            .create_session(NewSession {
                tags: vec!["project:app".into()],
                ..NewSession::titled("b")
            })
            .unwrap();
        let only = ExportOptions {
            sessions: vec![tagged.id.clone()],
            ..Default::default()
        };
        export_tree(&store, &home, &only, &mut |_, _| {}).unwrap();
        assert!(app.join("sessions").is_dir());
        let err = export_tree(&store, &app, &only, &mut |_, _| {}).unwrap_err();
        assert!(err.to_string().contains("not a Thoughtbox tree's"), "{err}");
        assert_eq!(
            fs::read_to_string(app.join(CONFIG)).unwrap(),
            r#"{"name":"app","dbPassword":"hunter2"}"#
        );
        // Naming `installId` (a key, a value, a comment) does not make a file
        // ours; the shape of a tree's config.json does.
        for theirs in [
            r#"{"name":"app","installId":"abc-123","apiKey":"sk-SECRET"}"#,
            r#"{"name":"app","telemetry":{"installId":"abc"},"sessionPartitionGranularity":"monthly"}"#,
            r#"{"redact":["installId","sessionPartitionGranularity"]}"#,
            "// \"installId\" \"sessionPartitionGranularity\"\n{}",
            r#"{"installId":"x","sessionPartitionGranularity":"hourly"}"#,
        ] {
            fs::write(app.join(CONFIG), theirs).unwrap();
            assert!(export_tree(&store, &app, &only, &mut |_, _| {}).is_err(), "{theirs}");
            assert_eq!(fs::read_to_string(app.join(CONFIG)).unwrap(), theirs);
        }
    }

    #[test]
    fn moving_a_session_past_a_file_of_the_users_leaves_a_valid_tree() {
        let (_dir, store, a, out, session_dir) = one_session_exported();
        fs::write(session_dir.join("my-notes.txt"), "mine").unwrap();
        let elsewhere = ExportOptions {
            project: Some("other".into()),
            ..Default::default()
        };
        export_tree(&store, &out, &elsewhere, &mut |_, _| {}).unwrap();
        // The user's file stays where it was; the session is in one place.
        assert!(session_dir.join("my-notes.txt").is_file());
        let dirs = find_session_dirs(&out).unwrap();
        assert_eq!(dirs.len(), 1, "{dirs:?}");
        assert!(dirs[0].starts_with(out.join("projects/other")));
        let (report, loaded) = load_session(&dirs[0]);
        assert!(report.result.valid, "{report:?}");
        assert_eq!(loaded.unwrap().session.id, a.id);
    }

    #[test]
    fn an_export_that_waited_lists_the_sessions_of_when_it_got_the_tree() {
        let (_dir, store, _, out, _) = one_session_exported();
        let held = fs::File::open(out.join(EXPORT_LOCK)).unwrap();
        held.lock().unwrap();
        let summary = std::thread::scope(|scope| {
            let export = scope.spawn(|| export_tree(&store, &out, &ExportOptions::default(), &mut |_, _| {}));
            std::thread::sleep(std::time::Duration::from_millis(100));
            store
                .create_session(NewSession::titled("created while it waited"))
                .unwrap();
            // Closed, as an export's lock is when it ends.
            drop(held);
            export.join().unwrap().unwrap()
        });
        assert_eq!(summary.sessions.len(), 2);
    }
}
