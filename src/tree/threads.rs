//! The thread registry (docs/threads.md) in a tree: an export of every session
//! writes it as `threads.json` at the root, and an import of the tree
//! applies it once the sessions are in, so that moving a ledger with
//! `export` and `import` keeps each thread's status, parent, objective,
//! references, dependencies and log.

use std::collections::BTreeSet;
use std::path::Path;

use super::bounded::{MAX_REGISTRY_BYTES, Unread, read_regular};
use crate::domain::thread::{Registry, broken_rules, parse_registry};
use crate::error::Result;
use crate::store::{RegistryImport, Store};

/// The registry's file at the root of a tree.
pub const THREADS: &str = "threads.json";

/// The registry of `store`, as the tree's `threads.json` holds it.
pub(super) fn registry_bytes(store: &Store) -> Result<Vec<u8>> {
    let registry = store.export_registry()?;
    let mut bytes =
        serde_json::to_vec_pretty(&registry).map_err(|e| crate::Error::Internal(format!("registry JSON: {e}")))?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// What applying a tree's `threads.json` came to.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadsImported {
    #[serde(flatten)]
    pub done: RegistryImport,
    /// Threads of the file left out because their session is not in the
    /// ledger (it was invalid and skipped, say): importing them would make
    /// an empty session that a corrected import of the session could no
    /// longer fill.
    pub threads_left_out: Vec<String>,
}

/// The `threads.json` at `root`, checked: `Ok(None)` when there is none.
/// `import` reads it before any session goes in, so that a file that is no
/// registry (not a regular file, too large, not JSON, breaking its rules)
/// refuses the import before anything is written.
pub fn read_registry_file(root: &Path) -> Result<Option<Registry>> {
    let path = root.join(THREADS);
    let refused = |why: String| crate::Error::invalid(THREADS, format!("{} {why}", path.display()));
    let bytes = match read_regular(&path, MAX_REGISTRY_BYTES) {
        Ok(bytes) => bytes,
        Err(Unread::Missing) => return Ok(None),
        Err(e) => return Err(refused(e.to_string())),
    };
    let text = String::from_utf8(bytes).map_err(|_| refused("is not UTF-8 text".into()))?;
    parse_registry(&text)
        .map(Some)
        .map_err(|v| refused(broken_rules(&v, "")))
}

/// Apply `registry`, read from a tree by [`read_registry_file`], to the
/// sessions the ledger holds. `Err`: why nothing of it was written (the
/// sessions imported stay).
pub(super) fn import_registry(store: &Store, registry: Registry) -> Result<ThreadsImported, String> {
    // One read of the ledger's ids, not one per thread.
    let ledger: BTreeSet<String> = store.session_ids().map_err(|e| e.to_string())?.into_iter().collect();
    let present: BTreeSet<String> = registry
        .threads
        .keys()
        .filter(|id| ledger.contains(*id))
        .cloned()
        .collect();
    let (registry, threads_left_out) = restricted(registry, &present);
    let done = store
        .import_registry(&registry)
        .map_err(|e| format!("{THREADS} was not applied: {e}"))?;
    Ok(ThreadsImported { done, threads_left_out })
}

/// `registry` without the threads not in `keep`, nor relations to them; a
/// kept thread whose parent is left out becomes a root thread. The log
/// stays whole: it is history, and names ids only in its params.
fn restricted(mut registry: Registry, keep: &BTreeSet<String>) -> (Registry, Vec<String>) {
    let left_out: Vec<String> = registry
        .threads
        .keys()
        .filter(|id| !keep.contains(*id))
        .cloned()
        .collect();
    if left_out.is_empty() {
        return (registry, left_out);
    }
    registry.threads.retain(|id, _| keep.contains(id));
    for thread in registry.threads.values_mut() {
        if thread.parent_id.as_ref().is_some_and(|p| !keep.contains(p)) {
            thread.parent_id = None;
        }
    }
    registry.relations.retain(|id, _| keep.contains(id));
    for r in registry.relations.values_mut() {
        for list in [
            &mut r.children,
            &mut r.references_to,
            &mut r.referenced_by,
            &mut r.depends_on,
        ] {
            list.retain(|id| keep.contains(id));
        }
    }
    registry.metadata.thread_count = registry.threads.len() as u64;
    (registry, left_out)
}
