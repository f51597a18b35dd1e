//! Importing a tree, or a SessionExport JSON file, into the database, one
//! transaction per session.
//!
//! Loading (file reads, JSON parsing, checks) runs on a second thread while
//! the first inserts the sessions already loaded, so the two costs overlap.
//! A session that fails its checks is reported and skipped; one already in
//! the ledger is left as it is. Nothing is written outside the database.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use serde::Serialize;

use super::CONFIG;
use super::bounded::{MAX_CONFIG_BYTES, Unread, read_regular};
use super::integrity::SessionReport;
use super::reader::{LoadedSession, is_export_file, load_export_file, load_session, session_dirs_to_read};
use super::threads::{ThreadsImported, import_registry, read_registry_file};
use crate::error::{Error, Result};
use crate::store::{ImportOutcome, Store};

/// What became of one session (directory, or SessionExport of a file).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Status {
    Imported,
    AlreadyPresent,
    Invalid,
}

/// One session's outcome, with its integrity report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionResult {
    pub status: Status,
    /// Thoughts inserted (0 unless imported).
    pub thoughts: u64,
    pub report: SessionReport,
}

/// What an import did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportSummary {
    pub source: PathBuf,
    pub sessions_found: usize,
    pub imported: usize,
    pub already_present: usize,
    pub invalid: usize,
    pub thoughts_imported: u64,
    /// About the tree as a whole (an unreadable config.json).
    pub warnings: Vec<String>,
    /// What the tree's thread registry (`threads.json`) changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads: Option<ThreadsImported>,
    /// Why the tree's thread registry was not applied (nothing of it was).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub threads_error: Option<String>,
    pub sessions: Vec<SessionResult>,
}

/// Import every session found under `root`, a tree (or a sessions
/// directory, or one session directory) or a SessionExport JSON file.
/// `progress(done, total, result)` is called after each session.
pub fn import_tree(
    store: &Store,
    root: &Path,
    progress: &mut dyn FnMut(usize, usize, &SessionResult),
) -> Result<ImportSummary> {
    if is_export_file(root) {
        let sessions = load_export_file(root)?;
        return import_loaded(store, root, sessions, progress);
    }
    // Not while an export is writing into the tree.
    let _lock = super::writer::lock_for_reading(root);
    let dirs = session_dirs_to_read(root)?;
    // Checked before any session goes in: a bad registry changes nothing.
    let registry = read_registry_file(root).map_err(nothing_imported)?;
    let mut summary = ImportSummary {
        source: root.to_path_buf(),
        sessions_found: dirs.len(),
        ..Default::default()
    };
    // config.json is optional and describes the exporting installation; the
    // ledger keeps its own settings, so it is only checked.
    let config = match read_regular(&root.join(CONFIG), MAX_CONFIG_BYTES) {
        Err(Unread::Missing) => None,
        Err(e) => Some(format!("it {e}")),
        Ok(b) => serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&b)
            .err()
            .map(|e| e.to_string()),
    };
    if let Some(why) = config {
        summary
            .warnings
            .push(format!("config.json is not a readable JSON object ({why}); ignored"));
    }
    let total = dirs.len();
    std::thread::scope(|scope| -> Result<()> {
        let (send, receive) = mpsc::sync_channel(32);
        scope.spawn(move || {
            for dir in dirs {
                if send.send(load_session(&dir)).is_err() {
                    return;
                }
            }
        });
        for (done, (report, loaded)) in receive.into_iter().enumerate() {
            summary.add(insert(store, report, loaded)?, done + 1, total, progress);
        }
        Ok(())
    })?;
    // Once the sessions are in, which the registry's threads are.
    if let Some(registry) = registry {
        match import_registry(store, registry) {
            Ok(threads) => summary.threads = Some(threads),
            Err(e) => summary.threads_error = Some(e),
        }
    }
    summary.index(store)?;
    Ok(summary)
}

/// `e`, a refusal of the tree's thread registry, saying what it cost.
pub fn nothing_imported(e: Error) -> Error {
    match e {
        Error::InvalidPayload { field, message, .. } => {
            Error::invalid(field, format!("{message}; nothing was imported"))
        }
        other => other,
    }
}

/// Import sessions already read and checked (those of a SessionExport file,
/// from [`load_export_file`]), as [`import_tree`] imports a tree's.
pub fn import_loaded(
    store: &Store,
    source: &Path,
    sessions: Vec<(SessionReport, Option<LoadedSession>)>,
    progress: &mut dyn FnMut(usize, usize, &SessionResult),
) -> Result<ImportSummary> {
    let total = sessions.len();
    let mut summary = ImportSummary {
        source: source.to_path_buf(),
        sessions_found: total,
        ..Default::default()
    };
    for (done, (report, loaded)) in sessions.into_iter().enumerate() {
        summary.add(insert(store, report, loaded)?, done + 1, total, progress);
    }
    summary.index(store)?;
    Ok(summary)
}

/// Insert one session read from the source, unless it is invalid or
/// already in the ledger.
fn insert(store: &Store, mut report: SessionReport, loaded: Option<LoadedSession>) -> Result<SessionResult> {
    let (status, thoughts) = match loaded {
        None => (Status::Invalid, 0),
        Some(l) => match store.import_session(&l.session, &l.thoughts) {
            Ok(ImportOutcome::Imported(n)) => (Status::Imported, n),
            Ok(ImportOutcome::AlreadyPresent(n)) => {
                if n != l.thoughts.len() as u64 {
                    report.warnings.push(format!(
                        "already in the ledger with {n} thoughts (the source has {}); left unchanged",
                        l.thoughts.len()
                    ));
                }
                (Status::AlreadyPresent, 0)
            }
            // A row the schema refuses fails this session only.
            Err(e) if e.is_constraint_violation() => {
                report
                    .result
                    .errors
                    .push(format!("the database refused the session: {e}"));
                report.result.settle();
                (Status::Invalid, 0)
            }
            Err(e) => return Err(e),
        },
    };
    Ok(SessionResult {
        status,
        thoughts,
        report,
    })
}

impl ImportSummary {
    /// Count `result` in, and tell `progress`.
    fn add(
        &mut self,
        result: SessionResult,
        done: usize,
        total: usize,
        progress: &mut dyn FnMut(usize, usize, &SessionResult),
    ) {
        match result.status {
            Status::Imported => self.imported += 1,
            Status::AlreadyPresent => self.already_present += 1,
            Status::Invalid => self.invalid += 1,
        }
        self.thoughts_imported += result.thoughts;
        progress(done, total, &result);
        self.sessions.push(result);
    }

    /// Make what was imported searchable at once, by a server or by
    /// `sessions search`, which only reads and so indexes nothing itself.
    fn index(&self, store: &Store) -> Result<()> {
        if self.imported > 0 {
            store.index_all_pending()?;
            store.checkpoint_settled(std::time::Duration::from_millis(500))?;
        }
        Ok(())
    }
}
