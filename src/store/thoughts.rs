//! The `thoughts` and `branches` tables: appending and reading thoughts.
//!
//! Appending costs a handful of indexed point lookups and one insert,
//! whatever the size of the session: the chain's highest number and last
//! node come from indexes, and the session's counters are updated in place.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, Row, params};

use super::sessions::{SESSION_COLUMNS, get_session_tx, insert_session_tx, session_from_row};
use super::{Store, Tx};
use crate::domain::{
    self, Branch, ChainFacts, Critique, NewSession, PlannedThought, Session, Thought, ThoughtData, ThoughtInput,
    plan_thought,
};
use crate::error::{Error, Result};

pub(super) const THOUGHT_COLUMNS: &str = "id, session_id, node_id, branch_id, thought_number, total_thoughts, thought, next_thought_needed, is_revision, revises_thought, branch_from_thought, needs_more_thoughts, include_guide, prev_node, revises_node, branch_origin, critique, created_at, critique_requested";

pub(super) fn thought_from_row(row: &Row<'_>) -> rusqlite::Result<Thought> {
    let critique: Option<String> = row.get(16)?;
    Ok(Thought {
        seq: row.get(0)?,
        session_id: row.get(1)?,
        node_id: row.get(2)?,
        prev_node: row.get(13)?,
        revises_node: row.get(14)?,
        branch_origin: row.get(15)?,
        data: ThoughtData {
            thought: row.get(6)?,
            thought_number: row.get(4)?,
            total_thoughts: row.get(5)?,
            next_thought_needed: row.get(7)?,
            is_revision: row.get(8)?,
            revises_thought: row.get(9)?,
            branch_from_thought: row.get(10)?,
            branch_id: row.get(3)?,
            needs_more_thoughts: row.get(11)?,
            include_guide: row.get(12)?,
            timestamp: row.get(17)?,
            critique_requested: (critique.is_none() && row.get::<_, bool>(18)?).then_some(true),
            critique: critique.and_then(|c| serde_json::from_str(&c).ok()),
        },
    })
}

/// A session as one read transaction sees it; see [`Store::with_session`].
pub struct SessionSnapshot<'a> {
    conn: &'a rusqlite::Connection,
    pub session: Session,
}

/// For each thought of the session that has been revised, the numbers of
/// the thoughts revising it (on its chain), in the order recorded: what a
/// read shows as `revisedBy`, so that a thought read back says it was
/// corrected. One pass over the session's revisions.
fn revised_by_tx(conn: &rusqlite::Connection, session_id: &str) -> Result<HashMap<String, Vec<u32>>> {
    let mut by: HashMap<String, Vec<u32>> = HashMap::new();
    let mut stmt = conn.prepare_cached(
        "SELECT revises_node, thought_number FROM thoughts
         WHERE session_id = ?1 AND revises_thought IS NOT NULL ORDER BY id",
    )?;
    let mut rows = stmt.query([session_id])?;
    while let Some(row) = rows.next()? {
        if let Some(node) = row.get::<_, Option<String>>(0)? {
            by.entry(node).or_default().push(row.get(1)?);
        }
    }
    Ok(by)
}

impl SessionSnapshot<'_> {
    /// See [`revised_by_tx`].
    pub fn revised_by(&self) -> Result<HashMap<String, Vec<u32>>> {
        revised_by_tx(self.conn, &self.session.id)
    }

    /// `(prev_node, node_id)` of every thought that follows another, in
    /// creation order.
    pub fn links(&self) -> Result<Vec<(String, String)>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT prev_node, node_id FROM thoughts
                 WHERE session_id = ?1 AND prev_node IS NOT NULL ORDER BY id",
            )?
            .query_map([&self.session.id], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Every thought's `seq` (row id), in creation order.
    pub fn creation_order(&self) -> Result<Vec<i64>> {
        Ok(self
            .conn
            .prepare_cached("SELECT id FROM thoughts WHERE session_id = ?1 ORDER BY id")?
            .query_map([&self.session.id], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Call `f` with every thought, the main chain by number, then each
    /// branch by number, the branches in creation order: the order
    /// `get_structure` and `restorationInfo` list them in (the exports too,
    /// not by name). One walk of the chain index per chain, so that the
    /// thoughts stream instead of being sorted. Stops at the first error `f`
    /// returns, and returns it.
    pub fn each_thought(&self, f: &mut dyn FnMut(Thought) -> Result<()>) -> Result<()> {
        let mut main = self.conn.prepare_cached(&format!(
            "SELECT {THOUGHT_COLUMNS} FROM thoughts WHERE session_id = ?1 AND branch_id IS NULL
             ORDER BY thought_number"
        ))?;
        let mut rows = main.query([&self.session.id])?;
        while let Some(row) = rows.next()? {
            f(thought_from_row(row)?)?;
        }
        let mut branch = self.conn.prepare_cached(&format!(
            "SELECT {THOUGHT_COLUMNS} FROM thoughts WHERE session_id = ?1 AND branch_id = ?2
             ORDER BY thought_number"
        ))?;
        let ids: Vec<String> = self
            .conn
            .prepare_cached("SELECT branch_id FROM branches WHERE session_id = ?1 ORDER BY created_at, branch_id")?
            .query_map([&self.session.id], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        for b in &ids {
            let mut rows = branch.query(params![self.session.id, b])?;
            while let Some(row) = rows.next()? {
                f(thought_from_row(row)?)?;
            }
        }
        // Thoughts whose branch has no row (a ledger of a version before 4
        // edited by hand, not repaired yet), by branch: an export leaves
        // none out.
        let mut rest = self.conn.prepare_cached(&format!(
            "SELECT {THOUGHT_COLUMNS} FROM thoughts
             WHERE session_id = ?1 AND branch_id IS NOT NULL
               AND branch_id NOT IN (SELECT branch_id FROM branches WHERE session_id = ?1)
             ORDER BY branch_id, thought_number"
        ))?;
        let mut rows = rest.query([&self.session.id])?;
        while let Some(row) = rows.next()? {
            f(thought_from_row(row)?)?;
        }
        Ok(())
    }
}

/// A revision without its text, for structure queries.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    pub number: u32,
    pub branch_id: Option<String>,
    pub revises: Option<u32>,
}

/// A session's shape (`get_structure`), read in one transaction from the
/// indexes, never from the thought rows' text: its main chain's size and
/// number range, its branches, and its revisions.
#[derive(Debug, Clone, PartialEq)]
pub struct Structure {
    pub thoughts: u64,
    pub main_count: u64,
    pub main_first: Option<u32>,
    pub main_last: Option<u32>,
    pub branches: Vec<Branch>,
    /// Every revision, in the order recorded.
    pub revisions: Vec<Shape>,
}

/// Which session a thought goes to.
#[derive(Debug, Clone)]
pub enum Target {
    Session(String),
    /// Create this session in the same transaction (no session was active).
    New(NewSession),
}

/// What appending a thought produced.
#[derive(Debug, Clone)]
pub struct Appended {
    pub thought: Thought,
    pub session: Session,
    pub new_branch: bool,
    pub auto_numbered: bool,
    /// A main-chain thought with nextThoughtNeeded: false completed the session.
    pub closed: bool,
    /// The session had been completed (by another connection or process:
    /// the one that closes a session no longer has it active), at this
    /// time, and this thought reopened it.
    pub reopened_from: Option<String>,
}

/// The highest thought number on a chain (the main chain with `None`).
fn max_number_tx(conn: &rusqlite::Connection, session_id: &str, branch: Option<&str>) -> Result<Option<u32>> {
    Ok(conn
        .prepare_cached("SELECT MAX(thought_number) FROM thoughts WHERE session_id = ?1 AND branch_id IS ?2")?
        .query_row(params![session_id, branch], |r| r.get(0))?)
}

/// [`ChainFacts`] answered from inside the write transaction.
struct TxFacts<'a, 'c> {
    tx: &'a Tx<'c>,
    session_id: &'a str,
}

impl ChainFacts for TxFacts<'_, '_> {
    fn max_number(&mut self, branch: Option<&str>) -> Result<Option<u32>> {
        max_number_tx(self.tx, self.session_id, branch)
    }

    fn last_node(&mut self, branch: Option<&str>) -> Result<Option<String>> {
        // The chain's owner row keeps its tail (see migration V3)...
        let tail = match branch {
            None => self
                .tx
                .prepare_cached("SELECT tail_node FROM sessions WHERE id = ?1")?
                .query_row([self.session_id], |r| r.get(0))
                .optional()?,
            Some(b) => self
                .tx
                .prepare_cached("SELECT tail_node FROM branches WHERE session_id = ?1 AND branch_id = ?2")?
                .query_row([self.session_id, b], |r| r.get(0))
                .optional()?,
        };
        let tail: Option<String> = tail.flatten();
        // ...unless another writer on the file (an older thoughtbox, or a
        // person with sqlite3) appended without moving it, or set it by
        // hand: then a row on this chain follows the tail, the tail is no
        // thought of this chain (the next thought would follow a node that
        // does not exist), or the chain has rows but no tail.
        let stale: bool = match &tail {
            Some(t) => self
                .tx
                .prepare_cached(
                    "SELECT EXISTS (SELECT 1 FROM thoughts WHERE prev_node = ?1 AND session_id = ?2 AND branch_id IS ?3)
                         OR NOT EXISTS (SELECT 1 FROM thoughts WHERE node_id = ?1 AND session_id = ?2 AND branch_id IS ?3)",
                )?
                .query_row(params![t, self.session_id, branch], |r| r.get(0))?,
            None => self
                .tx
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM thoughts WHERE session_id = ?1 AND branch_id IS ?2)")?
                .query_row(params![self.session_id, branch], |r| r.get(0))?,
        };
        if !stale {
            return Ok(tail);
        }
        Ok(self
            .tx
            .prepare_cached(
                "SELECT node_id FROM thoughts WHERE session_id = ?1 AND branch_id IS ?2 ORDER BY id DESC LIMIT 1",
            )?
            .query_row(params![self.session_id, branch], |r| r.get(0))
            .optional()?)
    }

    fn has_thought(&mut self, branch: Option<&str>, number: u32) -> Result<bool> {
        let id = domain::node_id(self.session_id, branch, number);
        Ok(self
            .tx
            .prepare_cached("SELECT EXISTS (SELECT 1 FROM thoughts WHERE node_id = ?1)")?
            .query_row([id], |r| r.get(0))?)
    }

    fn branch_from(&mut self, branch: &str) -> Result<Option<u32>> {
        Ok(self
            .tx
            .prepare_cached("SELECT from_thought FROM branches WHERE session_id = ?1 AND branch_id = ?2")?
            .query_row((self.session_id, branch), |r| r.get(0))
            .optional()?)
    }
}

/// The one place a thought row is written: by appends and by imports.
pub(crate) fn insert_thought(tx: &Tx<'_>, session_id: &str, t: &Thought) -> Result<i64> {
    let d = &t.data;
    let critique = d
        .critique
        .as_ref()
        .map(|c| serde_json::to_string(c).map_err(|e| Error::Internal(e.to_string())))
        .transpose()?;
    let requested = critique.is_some() || d.critique_requested == Some(true);
    tx.prepare_cached(
        "INSERT INTO thoughts (session_id, node_id, branch_id, thought_number, total_thoughts, thought,
             next_thought_needed, is_revision, revises_thought, branch_from_thought, needs_more_thoughts,
             include_guide, prev_node, revises_node, branch_origin, critique, created_at, critique_requested)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
    )?
    .execute(params![
        session_id,
        t.node_id,
        d.branch_id,
        d.thought_number,
        d.total_thoughts,
        d.thought,
        d.next_thought_needed,
        d.is_revision,
        d.revises_thought,
        d.branch_from_thought,
        d.needs_more_thoughts,
        d.include_guide,
        t.prev_node,
        t.revises_node,
        t.branch_origin,
        critique,
        d.timestamp,
        // A critique stored is one that was asked for.
        requested,
    ])?;
    Ok(tx.last_insert_rowid())
}

impl Store {
    /// Append a thought to a session: number it, link it, store it, and
    /// update the session, all in one [`Store::write`] (a savepoint of the
    /// writer's group, committed before the caller is answered).
    pub fn append_thought(&self, target: Target, input: ThoughtInput) -> Result<Appended> {
        let granularity = self.granularity();
        self.write(|tx| {
            // Taken once the write lock is held, so that the times of a
            // chain's thoughts follow their order when several processes
            // append to it.
            let now = domain::now();
            // And when the session had been completed, which this thought
            // undoes unless it closes it again.
            let (session_id, completed_at) = match &target {
                Target::Session(id) => {
                    let (completed_at, status): (Option<String>, String) = tx
                        .prepare_cached("SELECT completed_at, status FROM sessions WHERE id = ?1")?
                        .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                        .optional()?
                        .ok_or_else(|| Error::session_not_found(id.as_str()))?;
                    // A frozen or archived thread's reasoning is settled:
                    // checked under the write lock, so nothing is written.
                    super::threads::status_of(id, &status)?.check_writable(id, "thought, revision or branch")?;
                    (id.clone(), completed_at)
                }
                Target::New(new) => (insert_session_tx(tx, new, granularity)?.id, None),
            };
            let session_id = session_id.as_str();
            let mut facts = TxFacts { tx, session_id };
            let PlannedThought {
                node_id,
                prev_node,
                revises_node,
                branch_origin,
                data,
                new_branch,
                auto_numbered,
            } = plan_thought(session_id, input, &mut facts, now.clone())?;
            let mut thought = Thought {
                seq: 0,
                session_id: session_id.to_string(),
                node_id,
                prev_node,
                revises_node,
                branch_origin,
                data,
            };
            let branch = thought.data.branch_id.as_deref();
            // A new branch's row goes in before its first thought, as
            // imports do it: the insert checks of migration V12 then find
            // its fork point there.
            if new_branch {
                let (Some(branch), Some(from), Some(origin)) = (
                    branch,
                    thought.data.branch_from_thought,
                    thought.branch_origin.as_deref(),
                ) else {
                    return Err(Error::Internal("a new branch without its fork point".into()));
                };
                tx.prepare_cached(
                    "INSERT INTO branches (session_id, branch_id, from_thought, origin_node, created_at, tail_node)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )?
                .execute(params![session_id, branch, from, origin, now, thought.node_id])?;
            } else if let Some(branch) = branch {
                tx.prepare_cached("UPDATE branches SET tail_node = ?3 WHERE session_id = ?1 AND branch_id = ?2")?
                    .execute(params![session_id, branch, thought.node_id])?;
            }
            let seq = insert_thought(tx, session_id, &thought)?;
            let closed = branch.is_none() && !thought.data.next_thought_needed;
            // Update the counters, the main chain's tail and the stage (a session
            // with a thought has had the cipher), and read the
            // session back, in one statement.
            let session = tx
                .prepare_cached(&format!(
                    "UPDATE sessions SET thought_count = thought_count + 1, branch_count = branch_count + ?2,
                         stage = max(stage, 2), updated_at = ?3, completed_at = CASE WHEN ?4 THEN ?3 ELSE NULL END,
                         tail_node = CASE WHEN ?5 THEN ?6 ELSE tail_node END
                     WHERE id = ?1 RETURNING {SESSION_COLUMNS}"
                ))?
                .query_row(
                    params![
                        session_id,
                        i64::from(new_branch),
                        now,
                        closed,
                        branch.is_none(),
                        thought.node_id
                    ],
                    |r| session_from_row(r, granularity),
                )?;
            thought.seq = seq;
            Ok(Appended {
                new_branch,
                auto_numbered,
                closed,
                reopened_from: completed_at.filter(|_| !closed),
                session,
                thought,
            })
        })
    }

    /// Store the critique of a thought (set once; the thought itself is never
    /// rewritten). Answers whether it was stored: not when the thought is
    /// gone (its session deleted while the critique was being written) or
    /// already has one.
    pub fn set_critique(&self, node_id: &str, critique: &Critique) -> Result<bool> {
        let json = serde_json::to_string(critique).map_err(|e| Error::Internal(e.to_string()))?;
        self.write(|tx| {
            let changed = tx.execute(
                "UPDATE thoughts SET critique = ?2, critique_requested = 1 WHERE node_id = ?1 AND critique IS NULL",
                (node_id, json),
            )?;
            Ok(changed == 1)
        })
    }

    /// Every thought of a session: the main chain by number, then each branch by number.
    pub fn session_thoughts(&self, session_id: &str) -> Result<(Session, Vec<Thought>)> {
        let granularity = self.granularity();
        self.read(|tx| session_thoughts_tx(tx, session_id, granularity))
    }

    /// Read one session in one transaction, its thoughts streamed from the
    /// database instead of loaded at once: an export of a session of any
    /// size holds one thought at a time (plus the links between them).
    pub fn with_session<R>(&self, session_id: &str, f: impl FnOnce(&SessionSnapshot<'_>) -> Result<R>) -> Result<R> {
        let granularity = self.granularity();
        self.read(|tx| {
            let session = get_session_tx(tx, session_id, granularity)?;
            f(&SessionSnapshot { conn: tx, session })
        })
    }

    /// The ids of a session's branches, in creation order: one read of the
    /// `branches` rows, however many thoughts the branches hold.
    pub fn branch_ids(&self, session_id: &str) -> Result<Vec<String>> {
        self.read(|tx| {
            let ids = tx
                .prepare_cached("SELECT branch_id FROM branches WHERE session_id = ?1 ORDER BY created_at, branch_id")?
                .query_map([session_id], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<String>>>()?;
            Ok(ids)
        })
    }

    /// The branches of a session, in creation order, with their sizes.
    pub fn branches(&self, session_id: &str) -> Result<Vec<Branch>> {
        self.read(|tx| branches_tx(tx, session_id))
    }

    /// The session's shape, in one read (see [`Structure`]).
    pub fn structure(&self, session_id: &str) -> Result<Structure> {
        let granularity = self.granularity();
        self.read(|tx| {
            // Refuses a session that does not exist.
            get_session_tx(tx, session_id, granularity)?;
            // One pass over the chain index counts both; the main chain's
            // ends are one lookup each.
            let (thoughts, main_count): (i64, i64) = tx
                .prepare_cached(
                    "SELECT count(*), count(*) FILTER (WHERE branch_id IS NULL) FROM thoughts WHERE session_id = ?1",
                )?
                .query_row([session_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            let end = |sql: &str| -> Result<Option<u32>> {
                Ok(tx
                    .prepare_cached(sql)?
                    .query_row([session_id], |r| r.get(0))
                    .optional()?)
            };
            let main_first = end(
                "SELECT thought_number FROM thoughts WHERE session_id = ?1 AND branch_id IS NULL
                 ORDER BY thought_number LIMIT 1",
            )?;
            let main_last = end(
                "SELECT thought_number FROM thoughts WHERE session_id = ?1 AND branch_id IS NULL
                 ORDER BY thought_number DESC LIMIT 1",
            )?;
            let revisions = tx
                .prepare_cached(
                    "SELECT thought_number, branch_id, revises_thought FROM thoughts
                     WHERE session_id = ?1 AND revises_thought IS NOT NULL ORDER BY id",
                )?
                .query_map([session_id], |r| {
                    Ok(Shape {
                        number: r.get(0)?,
                        branch_id: r.get(1)?,
                        revises: r.get(2)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(Structure {
                thoughts: thoughts.max(0) as u64,
                main_count: main_count.max(0) as u64,
                main_first,
                main_last,
                branches: branches_tx(tx, session_id)?,
                revisions,
            })
        })
    }

    /// The highest thought number on a chain (the main chain with `None`).
    pub fn highest_number(&self, session_id: &str, branch: Option<&str>) -> Result<Option<u32>> {
        self.read(|tx| max_number_tx(tx, session_id, branch))
    }

    /// Branches of the session other than `except` holding a thought
    /// numbered `number`, the one written to last first (at most `limit`).
    pub fn branches_with_number(&self, session_id: &str, number: u32, except: &str, limit: u32) -> Result<Vec<String>> {
        self.read(|tx| branches_with_number_tx(tx, session_id, number, except, limit))
    }

    /// The session's most recently recorded thought, on any chain:
    /// `(node_id, thought_number, branch_id)`. Read from the chains' tails
    /// (one per chain), not the session's rows.
    pub fn last_recorded(&self, session_id: &str) -> Result<Option<(String, u32, Option<String>)>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT node_id, thought_number, branch_id FROM thoughts
                     WHERE node_id IN (SELECT tail_node FROM sessions WHERE id = ?1
                                       UNION ALL SELECT tail_node FROM branches WHERE session_id = ?1)
                     ORDER BY id DESC LIMIT 1",
                )?
                .query_row([session_id], |r| Ok((r.get::<_, String>(0)?, r.get(1)?, r.get(2)?)))
                .optional()?
                // A tail set by hand to another session's node is not this one's.
                .filter(|(node, _, _)| node.strip_prefix(session_id).is_some_and(|rest| rest.starts_with(':'))))
        })
    }

    /// [`SessionSnapshot::revised_by`] for the given nodes only: one lookup each in
    /// the index on `revises_node`, so that a read of a few thoughts costs
    /// the same in a session of any size.
    pub fn revised_by_nodes<'n>(
        &self,
        session_id: &str,
        nodes: impl IntoIterator<Item = &'n str>,
    ) -> Result<HashMap<String, Vec<u32>>> {
        self.read(|tx| {
            let mut stmt =
                // As in revised_by_tx: a revision is a row of the session with
                // revises_thought (a link set by hand into another session's
                // thought is not one of its revisions).
                tx.prepare_cached(
                    "SELECT thought_number FROM thoughts
                     WHERE revises_node = ?1 AND revises_thought IS NOT NULL AND session_id = ?2 ORDER BY id",
                )?;
            let mut by = HashMap::new();
            for node in nodes {
                let numbers = stmt
                    .query_map([node, session_id], |r| r.get(0))?
                    .collect::<rusqlite::Result<Vec<u32>>>()?;
                if !numbers.is_empty() {
                    by.insert(node.to_string(), numbers);
                }
            }
            Ok(by)
        })
    }

    /// Node ids whose `prev` is `node_id`, in creation order.
    #[cfg(test)]
    pub fn next_nodes(&self, node_id: &str) -> Result<Vec<String>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached("SELECT node_id FROM thoughts WHERE prev_node = ?1 ORDER BY id")?
                .query_map([node_id], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Up to `n` thoughts before `node_id` on its path, oldest first: its
    /// `prev` links followed back, so a branch thought gets the branch's
    /// earlier thoughts and then the main chain from the fork point back.
    /// One indexed lookup (node ids are unique) per thought, whatever the
    /// size of the session; the depth bound also stops any cycle a hand
    /// edit of the file could make.
    pub fn thoughts_before(&self, node_id: &str, n: u32) -> Result<Vec<Thought>> {
        if n == 0 {
            return Ok(Vec::new());
        }
        self.read(|tx| {
            Ok(tx
                .prepare_cached(&format!(
                    "WITH RECURSIVE back(node, depth) AS (
                         SELECT prev_node, 1 FROM thoughts WHERE node_id = ?1 AND prev_node IS NOT NULL
                         UNION ALL
                         SELECT t.prev_node, back.depth + 1 FROM back JOIN thoughts AS t ON t.node_id = back.node
                         WHERE back.depth < ?2 AND t.prev_node IS NOT NULL
                     )
                     SELECT {THOUGHT_COLUMNS} FROM back JOIN thoughts ON thoughts.node_id = back.node
                     ORDER BY back.depth DESC"
                ))?
                .query_map(params![node_id, n], thought_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

/// A session and all its thoughts, main chain first, each chain in number order.
pub(super) fn session_thoughts_tx(
    tx: &super::Tx<'_>,
    session_id: &str,
    granularity: crate::domain::Granularity,
) -> Result<(Session, Vec<Thought>)> {
    let session = get_session_tx(tx, session_id, granularity)?;
    let thoughts = tx
        .prepare_cached(&format!(
            "SELECT {THOUGHT_COLUMNS} FROM thoughts WHERE session_id = ?1
             ORDER BY branch_id, thought_number"
        ))?
        .query_map([session_id], thought_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok((session, thoughts))
}

/// How many branches a read by number names that hold the same number.
pub const MAX_BRANCHES_NAMED: u32 = 20;

/// From the branch rows, one probe of the chain index (session, branch,
/// number) each: read from the thoughts, it went through every branch
/// thought of the session (31 ms for 300,000), and every read by number asks.
const BRANCHES_WITH_NUMBER: &str = "SELECT b.branch_id FROM branches AS b
     WHERE b.session_id = ?1 AND b.branch_id <> ?3
       AND EXISTS (SELECT 1 FROM thoughts AS t WHERE t.session_id = b.session_id
                   AND t.branch_id = b.branch_id AND t.thought_number = ?2)
     ORDER BY (SELECT id FROM thoughts WHERE node_id = b.tail_node) DESC LIMIT ?4";

/// See [`Store::branches_with_number`].
pub(super) fn branches_with_number_tx(
    tx: &Tx<'_>,
    session_id: &str,
    number: u32,
    except: &str,
    limit: u32,
) -> Result<Vec<String>> {
    Ok(tx
        .prepare_cached(BRANCHES_WITH_NUMBER)?
        .query_map((session_id, number, except, limit), |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<String>>>()?)
}

/// The branches of a session, in creation order, with their sizes.
fn branches_tx(tx: &rusqlite::Connection, session_id: &str) -> Result<Vec<Branch>> {
    let rows = tx
        .prepare_cached(
            "SELECT b.branch_id, b.from_thought, b.origin_node, b.created_at,
                    count(t.id), min(t.thought_number), max(t.thought_number)
             FROM branches AS b
             LEFT JOIN thoughts AS t ON t.session_id = b.session_id AND t.branch_id = b.branch_id
             WHERE b.session_id = ?1
             GROUP BY b.branch_id
             ORDER BY b.created_at, b.branch_id",
        )?
        .query_map([session_id], |r| {
            Ok(Branch {
                id: r.get(0)?,
                from_thought: r.get(1)?,
                origin_node: r.get(2)?,
                created_at: r.get(3)?,
                count: r.get::<_, i64>(4)?.max(0) as u64,
                first: r.get(5)?,
                last: r.get(6)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::NewSession;
    use crate::store::test_support::{plan, temp_store};

    /// A session's structure and an append's check of its chain's tail
    /// read indexes, never the thought rows (which hold the text): their
    /// cost follows what they answer, not the session's size.
    #[test]
    fn structure_and_tail_checks_read_indexes_only() {
        let (_d, store) = temp_store();
        let count = plan(
            &store,
            "SELECT count(*), count(*) FILTER (WHERE branch_id IS NULL) FROM thoughts WHERE session_id = ?1",
        );
        assert!(count.contains("COVERING INDEX thoughts_by_chain_number"), "{count}");
        let last = plan(
            &store,
            "SELECT thought_number FROM thoughts WHERE session_id = ?1 AND branch_id IS NULL
             ORDER BY thought_number DESC LIMIT 1",
        );
        assert!(last.contains("COVERING INDEX thoughts_by_chain_number"), "{last}");
        assert!(!last.contains("TEMP B-TREE"), "{last}");
        let revisions = plan(
            &store,
            "SELECT thought_number, branch_id, revises_thought FROM thoughts
             WHERE session_id = ?1 AND revises_thought IS NOT NULL ORDER BY id",
        );
        assert!(revisions.contains("INDEX thoughts_revising"), "{revisions}");
        assert!(!revisions.contains("TEMP B-TREE"), "{revisions}");
        let tail = plan(
            &store,
            "SELECT EXISTS (SELECT 1 FROM thoughts WHERE prev_node = ?1 AND session_id = ?2 AND branch_id IS ?3)",
        );
        assert!(
            tail.contains("INDEX thoughts_by_prev (prev_node=? AND branch_id=?)"),
            "{tail}"
        );
        // `revisedBy` of the thoughts a read answers: one index lookup each.
        let revised = plan(
            &store,
            "SELECT thought_number FROM thoughts
             WHERE revises_node = ?1 AND revises_thought IS NOT NULL AND session_id = ?2 ORDER BY id",
        );
        assert!(
            revised.contains("INDEX thoughts_by_revises (revises_node=?)"),
            "{revised}"
        );
        assert!(!revised.contains("TEMP B-TREE"), "{revised}");
        // The branches holding a number: one chain-index probe per branch.
        let numbered = plan(&store, BRANCHES_WITH_NUMBER);
        assert!(
            numbered.contains("INDEX thoughts_by_chain_number (session_id=? AND branch_id=? AND thought_number=?)"),
            "{numbered}"
        );
        // The thought recorded last: one lookup per chain tail.
        let last = plan(
            &store,
            "SELECT node_id, thought_number, branch_id FROM thoughts
             WHERE node_id IN (SELECT tail_node FROM sessions WHERE id = ?1
                               UNION ALL SELECT tail_node FROM branches WHERE session_id = ?1)
             ORDER BY id DESC LIMIT 1",
        );
        assert!(!last.contains("SCAN thoughts"), "{last}");
        assert!(last.contains("(node_id=?)"), "{last}");
    }

    /// The structure and the analyses' input each come from one moment,
    /// while another connection appends (as transactions of their own, their
    /// parts could disagree).
    #[test]
    fn structure_and_analysis_input_agree_with_themselves_during_appends() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("busy")).unwrap();
        let writer = {
            let (store, id) = (store.clone(), s.id.clone());
            std::thread::spawn(move || {
                for i in 0..400 {
                    let mut input = ThoughtInput::text(format!("thought {i}"));
                    input.critique_requested = true;
                    if i % 4 == 3 {
                        input.branch_from_thought = Some(1);
                        input.branch_id = Some(format!("b{}", i % 3));
                    }
                    store.append_thought(Target::Session(id.clone()), input).unwrap();
                }
            })
        };
        let mut reads = 0;
        while !writer.is_finished() {
            let st = store.structure(&s.id).unwrap();
            let on_chains = st.main_count + st.branches.iter().map(|b| b.count).sum::<u64>();
            assert_eq!(on_chains, st.thoughts, "{st:?}");
            let (_, thoughts, requests) = store.analysis_input(&s.id).unwrap();
            assert_eq!(thoughts.len() as u64, requests);
            reads += 1;
        }
        writer.join().unwrap();
        assert!(reads > 0);
        assert_eq!(store.structure(&s.id).unwrap().thoughts, 400);
    }

    #[test]
    fn a_critique_is_stored_once_and_never_for_a_thought_that_is_gone() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("s")).unwrap();
        let a = store
            .append_thought(Target::Session(s.id.clone()), ThoughtInput::text("one"))
            .unwrap();
        let critique = |text: &str| crate::domain::Critique {
            text: text.into(),
            model: "m".into(),
            timestamp: "2026-11-22T00:00:00.000Z".into(),
        };
        assert!(store.set_critique(&a.thought.node_id, &critique("first")).unwrap());
        assert!(!store.set_critique(&a.thought.node_id, &critique("second")).unwrap());
        store.delete_session(&s.id).unwrap();
        assert!(!store.set_critique(&a.thought.node_id, &critique("late")).unwrap());
    }

    #[test]
    fn append_links_and_counts() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("s")).unwrap();
        let a = store
            .append_thought(Target::Session(s.id.clone()), ThoughtInput::text("one"))
            .unwrap();
        assert_eq!(a.thought.data.thought_number, 1);
        let b = store
            .append_thought(Target::Session(s.id.clone()), ThoughtInput::text("two"))
            .unwrap();
        assert_eq!(b.thought.prev_node.as_deref(), Some(a.thought.node_id.as_str()));
        let br = store
            .append_thought(
                Target::Session(s.id.clone()),
                ThoughtInput {
                    branch_id: Some("alt".into()),
                    branch_from_thought: Some(1),
                    ..ThoughtInput::text("alt")
                },
            )
            .unwrap();
        assert!(br.new_branch);
        assert_eq!(br.session.thought_count, 3);
        assert_eq!(br.session.branch_count, 1);
        assert_eq!(
            store.next_nodes(&a.thought.node_id).unwrap(),
            vec![b.thought.node_id.clone(), br.thought.node_id.clone()]
        );
        let branches = store.branches(&s.id).unwrap();
        assert_eq!(branches[0].id, "alt");
        assert_eq!(branches[0].count, 1);
        let closing = store
            .append_thought(
                Target::Session(s.id.clone()),
                ThoughtInput {
                    next_thought_needed: false,
                    ..ThoughtInput::text("done")
                },
            )
            .unwrap();
        assert!(closing.closed);
        assert!(closing.session.completed_at.is_some());
    }

    #[test]
    fn failed_appends_change_nothing() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("s")).unwrap();
        store
            .append_thought(Target::Session(s.id.clone()), ThoughtInput::text("one"))
            .unwrap();
        let before = store.session(&s.id).unwrap();
        assert!(
            store
                .append_thought(
                    Target::Session(s.id.clone()),
                    ThoughtInput {
                        thought_number: Some(1),
                        ..ThoughtInput::text("dup")
                    }
                )
                .is_err()
        );
        assert!(
            store
                .append_thought(
                    Target::Session(s.id.clone()),
                    ThoughtInput {
                        revises_thought: Some(5),
                        ..ThoughtInput::text("r")
                    }
                )
                .is_err()
        );
        assert_eq!(
            store
                .append_thought(Target::Session("nope".into()), ThoughtInput::text("x"))
                .unwrap_err()
                .code(),
            "SESSION_NOT_FOUND"
        );
        assert_eq!(store.session(&s.id).unwrap(), before);
    }
}
