//! The thread registry's rows: the thread columns of `sessions`
//! (`objective`, `status`, `parent_id`), `thread_references`,
//! `thread_dependencies` and the append-only `thread_operations`. Every
//! change writes its operation row in the transaction of the change; the
//! relations are read from the rows, never stored.

mod registry;

use rusqlite::{OptionalExtension, Row, params};
use serde_json::{Value, json};

pub use registry::RegistryImport;

use super::sessions::{insert_session_tx, session_exists_tx};
use super::{Store, Tx};
use crate::domain::thread::{Command, Operation, Operator, Relations, Thread, ThreadStatus, check_asset_path};
use crate::domain::{self, Granularity, NewSession};
use crate::error::{Error, Result};

/// The columns [`thread_from_row`] reads.
const THREAD_COLUMNS: &str = "id, title, coalesce(objective, description, title), created_at, status, tags, parent_id";

/// The most threads a tree answers.
pub const MAX_TREE_THREADS: usize = 1_000;

fn thread_from_row(row: &Row<'_>, granularity: Granularity) -> rusqlite::Result<Thread> {
    let id: String = row.get(0)?;
    let created_at: String = row.get(3)?;
    let status: String = row.get(4)?;
    let tags: Vec<String> = serde_json::from_str(&row.get::<_, String>(5)?).unwrap_or_default();
    Ok(Thread {
        storage_path: storage_path(granularity, &tags, &created_at, &id),
        title: row.get(1)?,
        objective: row.get(2)?,
        status: ThreadStatus::parse(&status).unwrap_or(ThreadStatus::Active),
        parent_id: row.get(6)?,
        id,
        created_at,
        tags,
    })
}

/// The session's directory in the layout `thoughtbox export` writes
/// (`projects/{project}/sessions/{partition}/{id}`, partition optional).
fn storage_path(granularity: Granularity, tags: &[String], created_at: &str, id: &str) -> String {
    let project = crate::domain::layout::project_from_tags(tags);
    match domain::partition_path(granularity, created_at) {
        Some(part) => format!("projects/{project}/sessions/{part}/{id}"),
        None => format!("projects/{project}/sessions/{id}"),
    }
}

/// A stored status as the domain's; a value the table's CHECK lets through
/// only by a hand edit is refused as what it is.
pub(crate) fn status_of(id: &str, status: &str) -> Result<ThreadStatus> {
    ThreadStatus::parse(status)
        .ok_or_else(|| Error::Internal(format!("session {id} has the unknown thread status {status:?}")))
}

/// The status of thread `id`, or SESSION_NOT_FOUND.
pub(crate) fn status_tx(tx: &Tx<'_>, id: &str) -> Result<ThreadStatus> {
    let status: String = tx
        .prepare_cached("SELECT status FROM sessions WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?
        .ok_or_else(|| Error::session_not_found(id))?;
    status_of(id, &status)
}

fn thread_tx(tx: &Tx<'_>, id: &str, granularity: Granularity) -> Result<Thread> {
    tx.prepare_cached(&format!("SELECT {THREAD_COLUMNS} FROM sessions WHERE id = ?1"))?
        .query_row([id], |r| thread_from_row(r, granularity))
        .optional()?
        .ok_or_else(|| Error::session_not_found(id))
}

fn ids(tx: &Tx<'_>, sql: &str, id: &str) -> Result<Vec<String>> {
    let mut stmt = tx.prepare_cached(sql)?;
    let rows = stmt.query_map([id], |r| r.get(0))?;
    Ok(rows.collect::<rusqlite::Result<Vec<String>>>()?)
}

/// The relations of thread `id`, read from the parent column and the
/// reference and dependency rows, each list sorted.
pub(crate) fn relations_tx(tx: &Tx<'_>, id: &str) -> Result<Relations> {
    Ok(Relations {
        children: ids(tx, "SELECT id FROM sessions WHERE parent_id = ?1 ORDER BY id", id)?,
        references_to: ids(
            tx,
            "SELECT DISTINCT to_id FROM thread_references WHERE from_id = ?1 ORDER BY to_id",
            id,
        )?,
        referenced_by: ids(
            tx,
            "SELECT DISTINCT from_id FROM thread_references WHERE to_id = ?1 ORDER BY from_id",
            id,
        )?,
        depends_on: ids(
            tx,
            "SELECT to_id FROM thread_dependencies WHERE from_id = ?1 ORDER BY to_id",
            id,
        )?,
    })
}

/// Append one row to the operations log, inside the change's transaction.
/// Log, as the server's own changes, what deleting session `id` is about to
/// do to other threads (the schema's triggers do it): its children become
/// root threads, and references and dependencies naming it go. Called in
/// the deletion's transaction, before the row goes; settled threads too,
/// whose records would otherwise change without a trace.
pub(crate) fn log_deletion_effects_tx(tx: &Tx<'_>, id: &str) -> Result<()> {
    let ids = |sql: &str| -> Result<Vec<String>> {
        let mut stmt = tx.prepare_cached(sql)?;
        let found = stmt.query_map([id], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        Ok(found)
    };
    let children = ids("SELECT id FROM sessions WHERE parent_id = ?1 ORDER BY id")?;
    let citing = ids("SELECT DISTINCT from_id FROM thread_references WHERE to_id = ?1 AND from_id <> ?1 ORDER BY 1")?;
    let depending = ids("SELECT from_id FROM thread_dependencies WHERE to_id = ?1 AND from_id <> ?1 ORDER BY 1")?;
    let mut affected: std::collections::BTreeMap<String, Value> = std::collections::BTreeMap::new();
    let mut note = |thread: &String, key: &str, value: Value| {
        let entry = affected
            .entry(thread.clone())
            .or_insert_with(|| json!({ "thread_id": thread, "deleted_id": id }));
        entry[key] = value;
    };
    for child in &children {
        note(child, "parent_id", Value::Null);
    }
    for from in &citing {
        note(from, "reference_removed", json!(id));
    }
    for from in &depending {
        note(from, "dependency_removed", json!(id));
    }
    for params in affected.into_values() {
        log_tx(tx, Command::Update, Operator::System, params)?;
    }
    Ok(())
}

fn log_tx(tx: &Tx<'_>, command: Command, operator: Operator, params: Value) -> Result<Operation> {
    let op = Operation {
        id: uuid::Uuid::new_v4().to_string(),
        timestamp: domain::now(),
        command: command.as_str().to_string(),
        operator,
        params,
    };
    tx.prepare_cached(
        "INSERT INTO thread_operations (id, timestamp, command, operator, params) VALUES (?1, ?2, ?3, ?4, ?5)",
    )?
    .execute(params![
        op.id,
        op.timestamp,
        op.command,
        op.operator.as_str(),
        op.params.to_string()
    ])?;
    Ok(op)
}

fn operation_from_row(row: &Row<'_>) -> rusqlite::Result<Operation> {
    let operator: String = row.get(3)?;
    let params: String = row.get(4)?;
    Ok(Operation {
        id: row.get(0)?,
        timestamp: row.get(1)?,
        command: row.get(2)?,
        operator: match operator.as_str() {
            "user" => Operator::User,
            "system" => Operator::System,
            _ => Operator::Agent,
        },
        params: serde_json::from_str(&params).unwrap_or_else(|_| json!({})),
    })
}

/// A new child thread: its session's title and tags, and its objective.
#[derive(Debug, Clone)]
pub struct Spawn {
    pub parent_id: Option<String>,
    pub session: NewSession,
    pub objective: String,
}

/// The fields `update` changes (none given: refused).
#[derive(Debug, Clone, Default)]
pub struct ThreadUpdate {
    pub title: Option<String>,
    pub objective: Option<String>,
    pub tags: Option<Vec<String>>,
}

/// What `list` filters by.
#[derive(Debug, Clone)]
pub struct ThreadFilter {
    pub status: Option<ThreadStatus>,
    pub parent_id: Option<String>,
    pub tag: Option<String>,
    pub limit: u32,
    pub offset: u32,
}

/// One page of threads.
#[derive(Debug, Clone)]
pub struct ThreadPage {
    pub threads: Vec<Thread>,
    pub total: u64,
}

/// A thread and its descendants, each with its depth (1 for a child),
/// parents before children.
#[derive(Debug, Clone)]
pub struct ThreadTree {
    pub root: Thread,
    pub descendants: Vec<(Thread, u32)>,
    /// More than [`MAX_TREE_THREADS`] descendants exist.
    pub truncated: bool,
}

/// One page of the operations log, newest first.
#[derive(Debug, Clone)]
pub struct OperationPage {
    pub operations: Vec<Operation>,
    pub total: u64,
}

/// Check an objective's length.
fn check_objective(objective: &str) -> Result<()> {
    if domain::is_blank(objective) {
        return Err(Error::invalid("objective", "objective must not be empty"));
    }
    let max = domain::MAX_DESCRIPTION_CHARS;
    if objective.chars().count() > max {
        return Err(Error::invalid(
            "objective",
            format!("an objective is at most {max} characters; thoughts hold the long text"),
        ));
    }
    Ok(())
}

/// Both ends of a reference or dependency: existing, different threads.
fn two_threads(tx: &Tx<'_>, from: &str, to: &str, what: &str) -> Result<ThreadStatus> {
    if from == to {
        return Err(Error::invalid_with(
            "toId",
            format!("a thread cannot {what} itself: fromId and toId are both {from} (nothing was recorded)"),
            json!({ "fromId": from, "toId": to }),
        ));
    }
    let status = status_tx(tx, from)?;
    if !session_exists_tx(tx, to)? {
        return Err(Error::session_not_found(to));
    }
    status.check_writable(from, &format!("new {what}"))?;
    Ok(status)
}

impl Store {
    /// Thread `id` with its relations.
    pub fn thread(&self, id: &str) -> Result<(Thread, Relations)> {
        let granularity = self.granularity;
        self.read(|tx| Ok((thread_tx(tx, id, granularity)?, relations_tx(tx, id)?)))
    }

    /// The status of thread `id`.
    pub fn thread_status(&self, id: &str) -> Result<ThreadStatus> {
        self.read(|tx| status_tx(tx, id))
    }

    /// Create a child session of `parent_id` (or a root thread) and log it.
    pub fn spawn_thread(&self, spawn: Spawn, operator: Operator) -> Result<(Thread, Operation)> {
        check_objective(&spawn.objective)?;
        let granularity = self.granularity;
        self.write(|tx| {
            let mut new = spawn.session.clone();
            if let Some(parent) = spawn.parent_id.as_deref() {
                let status = status_tx(tx, parent).map_err(|e| match e {
                    Error::SessionNotFound { .. } => Error::invalid_with(
                        "parentId",
                        format!("parentId {parent} names no session (nothing was created)"),
                        json!({ "sessionId": parent }),
                    ),
                    e => e,
                })?;
                if status == ThreadStatus::Archived {
                    return Err(Error::InvalidOperation {
                        message: format!(
                            "thread {parent} is archived: no thread can be spawned under it; spawn under an \
                             active or frozen thread, or a root thread with root: true (nothing was created)"
                        ),
                        details: Some(json!({ "threadId": parent, "status": status.as_str() })),
                    });
                }
                // The child files under its parent's project unless told otherwise.
                if !new.tags.iter().any(|t| t.starts_with("project:")) {
                    let parent_tags = thread_tx(tx, parent, granularity)?.tags;
                    if let Some(p) = parent_tags.into_iter().find(|t| t.starts_with("project:")) {
                        new.tags.push(p);
                    }
                }
            }
            let session = insert_session_tx(tx, &new, granularity)?;
            tx.prepare_cached("UPDATE sessions SET objective = ?2, parent_id = ?3 WHERE id = ?1")?
                .execute(params![session.id, spawn.objective, spawn.parent_id])?;
            let thread = thread_tx(tx, &session.id, granularity)?;
            let op = log_tx(
                tx,
                Command::Spawn,
                operator,
                json!({
                    "parent_id": spawn.parent_id,
                    "child_id": thread.id,
                    "objective": thread.objective,
                    "title": thread.title,
                    "tags": thread.tags,
                }),
            )?;
            Ok((thread, op))
        })
    }

    /// Record that `from` references `to` (or an asset of it); `None` when
    /// that reference was recorded before (nothing is written then).
    pub fn reference_thread(
        &self,
        from: &str,
        to: &str,
        asset_path: Option<&str>,
        operator: Operator,
    ) -> Result<Option<Operation>> {
        if let Some(path) = asset_path {
            check_asset_path(path)?;
        }
        self.write(|tx| {
            two_threads(tx, from, to, "reference")?;
            // A node id of the thread referenced must name one of its thoughts.
            if let Some(node) = asset_path.filter(|p| p.starts_with(&format!("{to}:"))) {
                let found: bool = tx
                    .prepare_cached("SELECT EXISTS (SELECT 1 FROM thoughts WHERE node_id = ?1 AND session_id = ?2)")?
                    .query_row([node, to], |r| r.get(0))?;
                if !found {
                    return Err(Error::ThoughtNotFound {
                        message: format!("assetPath {node} names no thought of thread {to} (nothing was recorded)"),
                        details: json!({ "field": "assetPath", "nodeId": node, "sessionId": to }),
                    });
                }
            }
            // A UUID is a notebook id, which must be one of the thread's.
            if let Some(notebook) = asset_path.filter(|p| uuid::Uuid::try_parse(p).is_ok()) {
                let found: bool = tx
                    .prepare_cached("SELECT EXISTS (SELECT 1 FROM notebooks WHERE id = ?1 AND session_id = ?2)")?
                    .query_row([notebook, to], |r| r.get(0))?;
                if !found {
                    return Err(Error::invalid_with(
                        "assetPath",
                        format!(
                            "assetPath {notebook} names no notebook of thread {to} (notebook list with its sessionId \
                             shows them; nothing was recorded)"
                        ),
                        json!({ "notebookId": notebook, "sessionId": to }),
                    ));
                }
            }
            let inserted = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO thread_references (from_id, to_id, asset_path, created_at)
                     VALUES (?1, ?2, ?3, ?4)",
                )?
                .execute(params![from, to, asset_path.unwrap_or(""), domain::now()])?;
            if inserted == 0 {
                return Ok(None);
            }
            let op = json!({ "from_id": from, "to_id": to, "asset_path": asset_path });
            Ok(Some(log_tx(tx, Command::Reference, operator, op)?))
        })
    }

    /// Record that `from` depends on `to`, refusing a cycle; `None` when
    /// recorded before.
    pub fn depend_thread(&self, from: &str, to: &str, operator: Operator) -> Result<Option<Operation>> {
        self.write(|tx| {
            two_threads(tx, from, to, "depend on")?;
            if let Some(path) = dependency_path(tx, to, from)? {
                return Err(Error::invalid_with(
                    "toId",
                    format!(
                        "{from} cannot depend on {to}: {to} already depends on {from} ({}), and depends_on must \
                         not form a cycle (nothing was recorded)",
                        path.join(" -> ")
                    ),
                    json!({ "fromId": from, "toId": to, "cycle": path }),
                ));
            }
            let inserted = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO thread_dependencies (from_id, to_id, created_at) VALUES (?1, ?2, ?3)",
                )?
                .execute(params![from, to, domain::now()])?;
            if inserted == 0 {
                return Ok(None);
            }
            Ok(Some(log_tx(
                tx,
                Command::Depend,
                operator,
                json!({ "from_id": from, "to_id": to }),
            )?))
        })
    }

    /// Move thread `id` to `to` (frozen or archived) by the status rules.
    pub fn set_thread_status(&self, id: &str, to: ThreadStatus, operator: Operator) -> Result<(Thread, Operation)> {
        let granularity = self.granularity;
        let command = match to {
            ThreadStatus::Frozen => Command::Freeze,
            ThreadStatus::Archived => Command::Archive,
            ThreadStatus::Active => return Err(Error::Internal("no command makes a thread active".into())),
        };
        self.write(|tx| {
            status_tx(tx, id)?.check_transition(id, to)?;
            tx.prepare_cached("UPDATE sessions SET status = ?2 WHERE id = ?1")?
                .execute(params![id, to.as_str()])?;
            let op = log_tx(tx, command, operator, json!({ "thread_id": id }))?;
            Ok((thread_tx(tx, id, granularity)?, op))
        })
    }

    /// Change an active thread's title, objective or tags.
    pub fn update_thread(&self, id: &str, update: ThreadUpdate, operator: Operator) -> Result<(Thread, Operation)> {
        if update.title.is_none() && update.objective.is_none() && update.tags.is_none() {
            return Err(Error::invalid(
                "title",
                "update needs at least one of title, objective, tags (freeze and archive change a thread's status; \
                 nothing was changed)",
            ));
        }
        if let Some(o) = &update.objective {
            check_objective(o)?;
        }
        let granularity = self.granularity;
        self.write(|tx| {
            status_tx(tx, id)?.check_writable(id, "update")?;
            let before = thread_tx(tx, id, granularity)?;
            let checked = NewSession {
                title: update.title.clone().unwrap_or(before.title.clone()),
                // Tags given replace the old ones but for the project, which
                // files the thread (its storage path): kept unless one is given.
                tags: match update.tags.clone() {
                    Some(mut tags) if !tags.iter().any(|t| t.starts_with("project:")) => {
                        tags.extend(before.tags.iter().filter(|t| t.starts_with("project:")).cloned());
                        tags
                    }
                    Some(tags) => tags,
                    None => before.tags.clone(),
                },
                ..Default::default()
            }
            .checked_as_thread()?;
            let (title, tags) = checked;
            let tags_json = serde_json::to_string(&tags).map_err(|e| Error::Internal(e.to_string()))?;
            tx.prepare_cached(
                "UPDATE sessions SET title = ?2, tags = ?3, objective = coalesce(?4, objective), updated_at = ?5
                 WHERE id = ?1",
            )?
            .execute(params![id, title, tags_json, update.objective, domain::now()])?;
            let mut params = json!({ "thread_id": id });
            if update.title.is_some() {
                params["title"] = json!(title);
            }
            if let Some(o) = &update.objective {
                params["objective"] = json!(o);
            }
            if update.tags.is_some() {
                params["tags"] = json!(tags);
            }
            let op = log_tx(tx, Command::Update, operator, params)?;
            Ok((thread_tx(tx, id, granularity)?, op))
        })
    }

    /// Threads by status, parent and tag, oldest first.
    pub fn list_threads(&self, filter: &ThreadFilter) -> Result<ThreadPage> {
        let granularity = self.granularity;
        self.read(|tx| {
            if let Some(parent) = filter.parent_id.as_deref()
                && !session_exists_tx(tx, parent)?
            {
                return Err(Error::session_not_found(parent));
            }
            let filters = "(?1 IS NULL OR status = ?1) AND (?2 IS NULL OR parent_id = ?2)
                 AND (?3 IS NULL OR EXISTS (SELECT 1 FROM session_tags t WHERE t.tag = ?3 AND t.session_id = id))";
            let status = filter.status.map(ThreadStatus::as_str);
            let args = params![status, filter.parent_id, filter.tag];
            let total: i64 = tx
                .prepare_cached(&format!("SELECT count(*) FROM sessions WHERE {filters}"))?
                .query_row(args, |r| r.get(0))?;
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {THREAD_COLUMNS} FROM sessions WHERE {filters} ORDER BY created_at, seq LIMIT ?4 OFFSET ?5"
            ))?;
            let rows = stmt.query_map(
                params![status, filter.parent_id, filter.tag, filter.limit, filter.offset],
                |r| thread_from_row(r, granularity),
            )?;
            Ok(ThreadPage {
                threads: rows.collect::<rusqlite::Result<_>>()?,
                total: total.max(0) as u64,
            })
        })
    }

    /// The descendants of thread `id`, each with its depth (1 for a child),
    /// parents before children, at most [`MAX_TREE_THREADS`]; and whether
    /// there were more.
    pub fn thread_tree(&self, id: &str) -> Result<ThreadTree> {
        let granularity = self.granularity;
        self.read(|tx| {
            let root = thread_tx(tx, id, granularity)?;
            let mut stmt = tx.prepare_cached(&format!(
                "WITH RECURSIVE below (id, depth) AS (
                     SELECT id, 1 FROM sessions WHERE parent_id = ?1
                     UNION ALL
                     SELECT s.id, b.depth + 1 FROM sessions s JOIN below b ON s.parent_id = b.id WHERE b.depth < 10000
                 )
                 SELECT {THREAD_COLUMNS}, b.depth FROM below b JOIN sessions USING (id)
                 ORDER BY b.depth, created_at, seq LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![id, MAX_TREE_THREADS as i64 + 1], |r| {
                Ok((thread_from_row(r, granularity)?, r.get::<_, u32>(7)?))
            })?;
            let mut found: Vec<(Thread, u32)> = rows.collect::<rusqlite::Result<_>>()?;
            let more = found.len() > MAX_TREE_THREADS;
            found.truncate(MAX_TREE_THREADS);
            Ok(ThreadTree {
                root,
                descendants: found,
                truncated: more,
            })
        })
    }

    /// The operations log, newest first: all of it, or the operations
    /// naming thread `id` in their parameters.
    pub fn thread_log(&self, id: Option<&str>, limit: u32, offset: u32) -> Result<OperationPage> {
        self.read(|tx| {
            let filter = "(?1 IS NULL OR ?1 IN (json_extract(params, '$.thread_id'), json_extract(params, '$.parent_id'),
                 json_extract(params, '$.child_id'), json_extract(params, '$.from_id'), json_extract(params, '$.to_id')))";
            let total: i64 = tx
                .prepare_cached(&format!("SELECT count(*) FROM thread_operations WHERE {filter}"))?
                .query_row([id], |r| r.get(0))?;
            if let Some(id) = id
                && total == 0
                && !session_exists_tx(tx, id)?
            {
                return Err(Error::session_not_found(id));
            }
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT id, timestamp, command, operator, params FROM thread_operations WHERE {filter}
                 ORDER BY seq DESC LIMIT ?2 OFFSET ?3"
            ))?;
            let rows = stmt.query_map(params![id, limit, offset], operation_from_row)?;
            Ok(OperationPage {
                operations: rows.collect::<rusqlite::Result<_>>()?,
                total: total.max(0) as u64,
            })
        })
    }
}

/// The chain of dependencies from `start` to `goal`, if `start` reaches it
/// (breadth first: the shortest chain).
fn dependency_path(tx: &Tx<'_>, start: &str, goal: &str) -> Result<Option<Vec<String>>> {
    // Whether at all in one statement (UNION keeps each thread once, so it
    // ends on any graph); the chain itself only for a refusal.
    let reached: bool = tx
        .prepare_cached(
            "WITH RECURSIVE reach (id) AS (
                 SELECT ?1 UNION SELECT d.to_id FROM thread_dependencies d JOIN reach r ON d.from_id = r.id
             )
             SELECT EXISTS (SELECT 1 FROM reach WHERE id = ?2)",
        )?
        .query_row([start, goal], |r| r.get(0))?;
    if !reached {
        return Ok(None);
    }
    let mut came_from: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut queue = std::collections::VecDeque::from([start.to_string()]);
    let mut stmt = tx.prepare_cached("SELECT to_id FROM thread_dependencies WHERE from_id = ?1")?;
    while let Some(at) = queue.pop_front() {
        if at == goal {
            let mut path = vec![at.clone()];
            let mut step = at;
            while let Some(prev) = came_from.get(&step) {
                path.push(prev.clone());
                step = prev.clone();
            }
            path.reverse();
            return Ok(Some(path));
        }
        let next: Vec<String> = stmt.query_map([&at], |r| r.get(0))?.collect::<rusqlite::Result<_>>()?;
        for n in next {
            if n != start && !came_from.contains_key(&n) {
                came_from.insert(n.clone(), at.clone());
                queue.push_back(n);
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests;
