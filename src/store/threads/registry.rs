//! The registry JSON (docs/threads.md) out of the ledger and back in: export
//! reads every thread, the whole log and the relations the rows give;
//! import writes what a registry says in one transaction, or nothing.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::{THREAD_COLUMNS, dependency_path, operation_from_row, relations_tx, thread_from_row};
use crate::domain::thread::{Command, Metadata, REGISTRY_VERSION, Registry, ThreadStatus, Violation, violations_error};
use crate::error::Result;
use crate::store::Store;

/// `last_updated` of a registry with no thread and no operation.
const NEVER: &str = "1970-01-01T00:00:00.000Z";

/// What an import wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RegistryImport {
    pub threads_created: u64,
    pub threads_updated: u64,
    /// Threads the ledger changed after the registry was written: left as
    /// the ledger has them.
    pub threads_kept: u64,
    pub operations_added: u64,
    pub references_added: u64,
    pub dependencies_added: u64,
}

/// The later of two ISO 8601 times (as instants; text as a tie-break).
fn later<'a>(a: &'a str, b: &'a str) -> &'a str {
    let t = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok();
    match (t(a), t(b)) {
        (Some(x), Some(y)) if x != y => {
            if x > y {
                a
            } else {
                b
            }
        }
        _ => a.max(b),
    }
}

/// When an operation was logged, as an instant (text as a tie-break), and
/// its id: the order of a thread's changes.
type Stamp = (Option<chrono::DateTime<chrono::FixedOffset>>, String, String);

fn stamp(timestamp: &str, id: &str) -> Stamp {
    (
        chrono::DateTime::parse_from_rfc3339(timestamp).ok(),
        timestamp.to_string(),
        id.to_string(),
    )
}

/// The thread whose own fields (title, objective, tags, status) an
/// operation set: `update`, `freeze` and `archive` name it `thread_id`,
/// `spawn` `child_id`.
fn thread_changed_by<'a>(command: &str, params: &'a serde_json::Value) -> Option<&'a str> {
    let key = match Command::parse(command)? {
        Command::Update | Command::Freeze | Command::Archive => "thread_id",
        Command::Spawn => "child_id",
        Command::Reference | Command::Depend => return None,
    };
    params.get(key)?.as_str()
}

/// The newest change of each thread among `ops`.
fn newest_changes<'a>(
    ops: impl Iterator<Item = (&'a str, &'a str, &'a str, &'a serde_json::Value)>,
) -> BTreeMap<String, Stamp> {
    let mut newest: BTreeMap<String, Stamp> = BTreeMap::new();
    for (id, timestamp, command, params) in ops {
        if let Some(thread) = thread_changed_by(command, params) {
            let at = stamp(timestamp, id);
            match newest.get_mut(thread) {
                Some(seen) if *seen >= at => {}
                Some(seen) => *seen = at,
                None => {
                    newest.insert(thread.to_string(), at);
                }
            }
        }
    }
    newest
}

impl Store {
    /// The whole registry: every thread, the log in order, the relations.
    /// `last_updated` is the latest thread creation or operation, so that
    /// the same ledger always exports the same text.
    pub fn export_registry(&self) -> Result<Registry> {
        let granularity = self.granularity;
        self.read(|tx| {
            let mut stmt = tx.prepare_cached(&format!("SELECT {THREAD_COLUMNS} FROM sessions ORDER BY id"))?;
            let threads: BTreeMap<_, _> = stmt
                .query_map([], |r| thread_from_row(r, granularity))?
                .map(|t| t.map(|t| (t.id.clone(), t)))
                .collect::<rusqlite::Result<_>>()?;
            let mut stmt = tx.prepare_cached(
                "SELECT id, timestamp, command, operator, params FROM thread_operations ORDER BY seq",
            )?;
            let operations: Vec<_> = stmt
                .query_map([], operation_from_row)?
                .collect::<rusqlite::Result<_>>()?;
            let mut relations = BTreeMap::new();
            for id in threads.keys() {
                relations.insert(id.clone(), relations_tx(tx, id)?);
            }
            let mut last = NEVER;
            for time in threads
                .values()
                .map(|t| t.created_at.as_str())
                .chain(operations.iter().map(|o| o.timestamp.as_str()))
            {
                last = later(last, time);
            }
            Ok(Registry {
                version: REGISTRY_VERSION.to_string(),
                metadata: Metadata {
                    last_updated: last.to_string(),
                    thread_count: threads.len() as u64,
                },
                threads,
                operations,
                relations,
            })
        })
    }

    /// Write a registry that [`crate::domain::thread::parse_registry`]
    /// accepted: threads missing from the ledger become sessions without
    /// thoughts, threads present take the registry's fields, the
    /// operations are appended (one already logged is skipped), the
    /// references and dependencies are added. Everything in one
    /// transaction; a conflict with what the ledger holds (a status going
    /// back, a settled thread changed, a dependency cycle, an operation id
    /// logged with other content) is reported with its path and nothing
    /// is written.
    pub fn import_registry(&self, registry: &Registry) -> Result<RegistryImport> {
        let granularity = self.granularity;
        let in_registry = newest_changes(
            registry
                .operations
                .iter()
                .map(|o| (o.id.as_str(), o.timestamp.as_str(), o.command.as_str(), &o.params)),
        );
        self.write(|tx| {
            let mut done = RegistryImport::default();
            let mut violations = Vec::new();
            let mut bad = |path: String, message: String| violations.push(Violation { path, message });
            // A registry written before the ledger's last change to a thread
            // (an older export imported again) must not put its old title,
            // tags or status back: that thread is left as the ledger has it.
            let logged: Vec<(String, String, String, serde_json::Value)> = tx
                .prepare_cached("SELECT id, timestamp, command, params FROM thread_operations")?
                .query_map([], |r| {
                    let params: String = r.get(3)?;
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, serde_json::from_str(&params).unwrap_or_default()))
                })?
                .collect::<rusqlite::Result<_>>()?;
            let in_ledger = newest_changes(logged.iter().map(|(i, t, c, p)| (i.as_str(), t.as_str(), c.as_str(), p)));
            let stale: BTreeSet<&str> = registry
                .threads
                .keys()
                .map(String::as_str)
                .filter(|id| in_ledger.get(*id).is_some_and(|ours| in_registry.get(*id).is_none_or(|theirs| ours > theirs)))
                .collect();
            for (id, t) in &registry.threads {
                if stale.contains(id.as_str()) {
                    done.threads_kept += 1;
                    continue;
                }
                let at = format!("threads.{id}");
                let tags = serde_json::to_string(&t.tags).map_err(|e| crate::Error::Internal(e.to_string()))?;
                let existing = tx
                    .prepare_cached(&format!("SELECT {THREAD_COLUMNS} FROM sessions WHERE id = ?1"))?
                    .query_row([id], |r| thread_from_row(r, granularity))
                    .optional()?;
                match existing {
                    // Threads are sessions here, whose ids are lower-case
                    // UUIDs (the ledger's paths and triggers rely on it).
                    None if !crate::domain::layout::is_session_id(id) => bad(
                        at,
                        format!(
                            "{id:?} is a valid registry id, but this ledger's threads are sessions, whose ids are \
                             lower-case UUIDs (such as 0b6f2c1e-8d4a-4c5e-9f3b-2a7d1e6c8b90)"
                        ),
                    ),
                    None => {
                        // The ledger writes its times in one form (UTC,
                        // milliseconds), which its lists sort as text.
                        let created = chrono::DateTime::parse_from_rfc3339(&t.created_at)
                            .map(|c| {
                                c.with_timezone(&chrono::Utc)
                                    .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
                            })
                            .unwrap_or_else(|_| t.created_at.clone());
                        tx.prepare_cached(
                            "INSERT INTO sessions (id, title, tags, objective, status, created_at, updated_at,
                                 last_accessed_at)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?6)",
                        )?
                        .execute(params![id, t.title, tags, t.objective, t.status.as_str(), created])?;
                        done.threads_created += 1;
                    }
                    Some(old) => {
                        if old.status != t.status && old.status.check_transition(id, t.status).is_err() {
                            bad(
                                format!("{at}.status"),
                                format!(
                                    "the ledger has this thread {}; it cannot become {} (allowed: {})",
                                    old.status.as_str(),
                                    t.status.as_str(),
                                    old.status.allowed_next().join(", ")
                                ),
                            );
                            continue;
                        }
                        let changes_content =
                            old.title != t.title || old.objective != t.objective || old.tags != t.tags;
                        if old.status != ThreadStatus::Active && changes_content {
                            bad(
                                at,
                                format!(
                                    "the ledger has this thread {}: its title, objective and tags cannot change",
                                    old.status.as_str()
                                ),
                            );
                            continue;
                        }
                        if changes_content || old.status != t.status || old.parent_id != t.parent_id {
                            tx.prepare_cached(
                                "UPDATE sessions SET title = ?2, tags = ?3, objective = ?4, status = ?5 WHERE id = ?1",
                            )?
                            .execute(params![id, t.title, tags, t.objective, t.status.as_str()])?;
                            done.threads_updated += 1;
                        }
                    }
                }
            }
            // Parents once every thread is there.
            for (id, t) in registry.threads.iter().filter(|(id, _)| !stale.contains(id.as_str())) {
                tx.prepare_cached("UPDATE sessions SET parent_id = ?2 WHERE id = ?1 AND parent_id IS NOT ?2")?
                    .execute(params![id, t.parent_id])?;
            }
            for (i, op) in registry.operations.iter().enumerate() {
                let stored = tx
                    .prepare_cached(
                        "SELECT id, timestamp, command, operator, params FROM thread_operations WHERE id = ?1",
                    )?
                    .query_row([&op.id], operation_from_row)
                    .optional()?;
                match stored {
                    Some(same) if same == *op => {}
                    Some(_) => bad(
                        format!("operations[{i}].id"),
                        format!("operation {} is in the ledger's log with other content", op.id),
                    ),
                    None => {
                        tx.prepare_cached(
                            "INSERT INTO thread_operations (id, timestamp, command, operator, params)
                             VALUES (?1, ?2, ?3, ?4, ?5)",
                        )?
                        .execute(params![
                            op.id,
                            op.timestamp,
                            op.command,
                            op.operator.as_str(),
                            op.params.to_string()
                        ])?;
                        done.operations_added += 1;
                    }
                }
            }
            // References, with the asset paths their operations name.
            let mut assets: BTreeMap<(&str, &str), BTreeSet<String>> = BTreeMap::new();
            for op in registry.operations.iter().filter(|o| o.command == "reference") {
                let field = |k: &str| op.params.get(k).and_then(|v| v.as_str());
                if let (Some(from), Some(to)) = (field("from_id"), field("to_id")) {
                    let path = field("asset_path").unwrap_or("").to_string();
                    assets.entry((from, to)).or_default().insert(path);
                }
            }
            let now = crate::domain::now();
            for (from, r) in &registry.relations {
                for to in &r.references_to {
                    let paths = assets
                        .get(&(from.as_str(), to.as_str()))
                        .cloned()
                        .unwrap_or_else(|| BTreeSet::from([String::new()]));
                    for path in paths {
                        done.references_added += tx
                            .prepare_cached(
                                "INSERT OR IGNORE INTO thread_references (from_id, to_id, asset_path, created_at)
                                 VALUES (?1, ?2, ?3, ?4)",
                            )?
                            .execute(params![from, to, path, now])? as u64;
                    }
                }
            }
            for (from, r) in &registry.relations {
                for (i, to) in r.depends_on.iter().enumerate() {
                    // A chain through the ledger's own rows counts too.
                    if dependency_path(tx, to, from)?.is_some() {
                        bad(
                            format!("relations.{from}.depends_on[{i}]"),
                            format!("with the ledger's dependencies, {from} -> {to} closes a cycle"),
                        );
                        continue;
                    }
                    done.dependencies_added += tx
                        .prepare_cached(
                            "INSERT OR IGNORE INTO thread_dependencies (from_id, to_id, created_at) VALUES (?1, ?2, ?3)",
                        )?
                        .execute(params![from, to, now])? as u64;
                }
            }
            if !violations.is_empty() {
                // Returning the error rolls the transaction back.
                return Err(violations_error(&violations));
            }
            Ok(done)
        })
    }
}
