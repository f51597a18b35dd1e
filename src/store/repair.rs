//! `thoughtbox repair`: recompute everything in the ledger that is derived
//! from something else, for a file edited by hand before the schema kept it
//! right by itself (version 4), or damaged some other way.

use std::collections::HashMap;

use serde::Serialize;

use super::Store;
use crate::domain::ConfigKey;
use crate::error::Result;

/// What a repair found wrong and put right.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RepairReport {
    /// Thoughts, branches and tag rows of sessions (or patterns) that no
    /// longer exist, removed.
    pub orphans_removed: u64,
    /// Branch rows without a thought, removed.
    pub empty_branches_removed: u64,
    /// Tag rows added or removed to match the `tags` JSON of their owner.
    pub tag_rows_fixed: u64,
    /// Sessions whose counts or main-chain tail were wrong.
    pub sessions_fixed: u64,
    /// Branches whose tail was wrong.
    pub branch_tails_fixed: u64,
    /// Branch rows put back for thoughts on a branch that had none.
    pub branches_restored: u64,
    /// Thoughts whose `prev_node` named themselves, a node that is gone, or
    /// a node an earlier thought of their chain already follows, linked to
    /// the thought before them on their chain.
    pub links_fixed: u64,
    /// Thoughts with a critique whose `critique_requested` said 0 (earlier
    /// servers set it only when the critique failed), set to 1.
    pub critique_flags_set: u64,
    /// Thoughts in the rebuilt search index (refilled in batches once the
    /// rest of the repair is committed).
    pub thoughts_indexed: u64,
    /// The `installId` was blank (set so by hand before version 12) and
    /// was given a new one.
    pub install_id_set: bool,
    /// What only a person can decide, left as it is: each line names the
    /// rows and the statement that would put them right. Thought numbers
    /// outside 1 to 2147483647 (every read of their session fails), two
    /// thoughts with one number on one chain, chains with more than one
    /// thought that follows nothing, prev-link loops, and rows from before
    /// versions 8, 9, 11 and 12 in forms their triggers refuse.
    pub left_for_you: Vec<String>,
    /// Why the repair could not be done (nothing was changed then), or why
    /// the search index's rebuild after it stopped (the repair itself is
    /// committed then).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// SQLite's `PRAGMA integrity_check` afterwards: `["ok"]` when sound.
    pub integrity: Vec<String>,
}

/// Timestamps as the server writes them (UTC, milliseconds); the same
/// pattern as migration V8's triggers.
const TIME_GLOB: &str = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:[0-9][0-9].[0-9][0-9][0-9]Z";

/// Session ids as the server makes them: lower-case hyphenated UUIDs.
const ID_GLOB: &str = "[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f]-[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]";

/// At most this many lines of [`RepairReport::left_for_you`] (then one
/// line with how many more there are).
const LEFT_LINES: usize = 100;

/// The rows `repair` cannot put right by itself, a line each.
/// `text` as it goes between single quotes in SQL (`'` doubled): ids in the
/// suggestions below come from hand-edited rows, and a suggestion pasted
/// into sqlite3 must do what it says.
fn sql_text(text: &str) -> String {
    text.replace('\'', "''")
}

pub(super) fn left_for_you(tx: &rusqlite::Connection) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    let mut more = 0u64;
    let mut push = |line: String| {
        if lines.len() < LEFT_LINES {
            lines.push(line);
        } else {
            more += 1;
        }
    };
    let mut stmt = tx.prepare(
        "SELECT node_id, thought_number, total_thoughts, revises_thought, branch_from_thought FROM thoughts
         WHERE thought_number NOT BETWEEN 1 AND 2147483647 OR total_thoughts NOT BETWEEN 1 AND 2147483647
            OR revises_thought NOT BETWEEN 1 AND 2147483647 OR branch_from_thought NOT BETWEEN 1 AND 2147483647
         ORDER BY id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let node = sql_text(&row.get::<_, String>(0)?);
        let number: i64 = row.get(1)?;
        let out = |v: Option<i64>| v.is_some_and(|v| !(1..=i64::from(i32::MAX)).contains(&v));
        if out(Some(number)) {
            push(format!(
                "thought {node}: thought_number {number} is outside 1 to 2147483647 and cannot change; \
                 delete it (DELETE FROM thoughts WHERE node_id = '{node}')"
            ));
            continue;
        }
        for (i, column) in [
            (2, "total_thoughts"),
            (3, "revises_thought"),
            (4, "branch_from_thought"),
        ] {
            let value: Option<i64> = row.get(i)?;
            if let Some(value) = value.filter(|_| out(value)) {
                push(format!(
                    "thought {node}: {column} {value} is outside 1 to 2147483647; \
                     UPDATE thoughts SET {column} = ... WHERE node_id = '{node}'"
                ));
            }
        }
    }
    // A chain has one thought that follows nothing: the main chain's first
    // (a branch's first follows its fork point). Which of two is the first
    // only a person can tell (a thought put back under a new id is newer
    // but may come first).
    let mut stmt = tx.prepare(
        "SELECT session_id, group_concat(node_id, ', ')
         FROM thoughts WHERE prev_node IS NULL AND branch_id IS NULL
         GROUP BY session_id HAVING count(*) > 1
         ORDER BY session_id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (session, nodes): (String, String) = (row.get(0)?, row.get(1)?);
        push(format!(
            "session {session}: on the main chain, {nodes} follow no thought; set the prev_node of each but the first \
             (UPDATE thoughts SET prev_node = '<the node it follows>' WHERE node_id = '...')"
        ));
    }
    // On a branch every thought follows one: the first its fork point, the
    // others the thought before them. (`fix_links` has linked a branch's
    // only such thought to the fork point when no other thought follows
    // it: that one is the branch's first.)
    let mut stmt = tx.prepare(
        "SELECT t.session_id, t.branch_id, group_concat(t.node_id, ', '), count(*),
                (SELECT b.origin_node FROM branches AS b
                 WHERE b.session_id = t.session_id AND b.branch_id = t.branch_id)
         FROM thoughts AS t WHERE t.prev_node IS NULL AND t.branch_id IS NOT NULL
         GROUP BY t.session_id, t.branch_id
         ORDER BY t.session_id, t.branch_id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (session, branch, nodes, count, fork): (String, String, String, i64, Option<String>) =
            (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?);
        let (verb, fork) = (
            if count > 1 { "follow" } else { "follows" },
            fork.map_or_else(
                || "its fork point (the branch names none yet: see its line about the fork point)".to_string(),
                |f| format!("its fork point {f}"),
            ),
        );
        push(format!(
            "session {session}: on branch {branch}, {nodes} {verb} no thought; a branch's first thought follows \
             {fork} and each other one the thought before it on the branch \
             (UPDATE thoughts SET prev_node = '<the node it follows>' WHERE node_id = '...')"
        ));
    }
    let mut stmt = tx.prepare(
        "SELECT session_id, coalesce('branch ' || branch_id, 'the main chain'), thought_number,
                group_concat(node_id, ', ')
         FROM thoughts GROUP BY session_id, branch_id, thought_number HAVING count(*) > 1
         ORDER BY session_id, branch_id, thought_number",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (session, chain, number, nodes): (String, String, i64, String) =
            (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
        push(format!(
            "session {session}: {chain} has thought {number} more than once ({nodes}); \
             keep one (DELETE FROM thoughts WHERE node_id = '...' for the others)"
        ));
    }
    // Rows from before version 8 in forms its triggers now refuse.
    let mut stmt = tx.prepare(&format!(
        "SELECT id FROM sessions WHERE id NOT GLOB '{ID_GLOB}' ORDER BY seq"
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let id = sql_text(&row.get::<_, String>(0)?);
        push(format!(
            "session {id}: its id is not a lower-case UUID, so the server cannot open or export it and ids \
             cannot change; delete it if it is not wanted (DELETE FROM sessions WHERE id = '{id}')"
        ));
    }
    let mut stmt = tx.prepare(
        &[
            ("sessions", "id", "id", "created_at"),
            ("sessions", "id", "id", "updated_at"),
            ("sessions", "id", "id", "last_accessed_at"),
            ("sessions", "id", "id", "completed_at"),
            ("thoughts", "node_id", "node_id", "created_at"),
        ]
        .map(|(table, key, id, column)| {
            format!("SELECT '{table}', '{key}', {id}, '{column}', {column} FROM {table} WHERE {column} NOT GLOB '{TIME_GLOB}'")
        })
        .join(" UNION ALL "),
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (table, key, id, column, value): (String, String, String, String, String) =
            (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?);
        let id = sql_text(&id);
        push(format!(
            "{table} {id}: {column} {value:?} is not a UTC time with milliseconds, so it sorts wrongly and \
             cannot be exported; UPDATE {table} SET {column} = 'YYYY-MM-DDTHH:MM:SS.mmmZ' WHERE {key} = '{id}'"
        ));
    }
    let mut stmt = tx.prepare(
        "SELECT node_id, session_id || ':' || coalesce(branch_id || ':', '') || thought_number FROM thoughts
         WHERE node_id IS NOT session_id || ':' || coalesce(branch_id || ':', '') || thought_number ORDER BY id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (node, expected): (String, String) = (row.get(0)?, row.get(1)?);
        let node = sql_text(&node);
        push(format!(
            "thought {node}: its node id should be {expected} for its branch and number, so its session cannot be \
             exported; node ids cannot change: delete it (DELETE FROM thoughts WHERE node_id = '{node}')"
        ));
    }
    // Text over the limit, written by hand before version 9.
    let mut stmt = tx.prepare(&format!(
        "SELECT node_id, length(CAST(thought AS BLOB)) FROM thoughts
         WHERE length(CAST(thought AS BLOB)) > {} ORDER BY id",
        crate::domain::MAX_THOUGHT_BYTES
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (node, bytes): (String, i64) = (row.get(0)?, row.get(1)?);
        let node = sql_text(&node);
        push(format!(
            "thought {node}: its text is {bytes} bytes, over the 1 MiB (1048576 bytes) the server and imports \
             take, so its session's export cannot be imported; shorten it (UPDATE thoughts SET thought = ... \
             WHERE node_id = '{node}'), or delete it if no thought revises or branches from it"
        ));
    }
    // Revision links that disagree, written by hand before version 11.
    // Which of the two was meant only a person can tell.
    let mut stmt = tx.prepare(
        "SELECT node_id, revises_thought, revises_node,
                session_id || ':' || coalesce(branch_id || ':', '') || revises_thought
         FROM thoughts
         WHERE (revises_node IS NOT session_id || ':' || coalesce(branch_id || ':', '') || revises_thought
                OR revises_thought IS thought_number)
           AND coalesce(revises_thought BETWEEN 1 AND 2147483647, 1)
         ORDER BY id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (node, number, revised, expected): (String, Option<i64>, Option<String>, Option<String>) =
            (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
        let (node, expected) = (sql_text(&node), expected.as_deref().map(sql_text));
        let clear = format!(
            "UPDATE thoughts SET revises_thought = NULL, revises_node = NULL WHERE node_id = '{node}' if it revises none"
        );
        push(match (number, revised, expected) {
            (Some(_), _, Some(expected)) if expected == node => format!(
                "thought {node} revises itself, so its session's export cannot be imported; {clear}, or set both \
                 columns to the thought it revises"
            ),
            (Some(number), revised, Some(expected)) => format!(
                "thought {node}: revises_thought {number} and revises_node {} name different thoughts (answers show \
                 the one, structure and thought_latest_view follow the other), so its session's export cannot be \
                 imported; UPDATE thoughts SET revises_node = '{expected}' WHERE node_id = '{node}' if it revises \
                 thought {number}, else set both columns to the thought it revises, or {clear}",
                revised.as_deref().unwrap_or("NULL")
            ),
            (_, revised, _) => format!(
                "thought {node}: revises_node {} is set without revises_thought, so its session's export cannot be \
                 imported; set revises_thought to the number of the thought it revises on its own chain \
                 (UPDATE thoughts SET revises_thought = ... WHERE node_id = '{node}'), or {clear}",
                revised.as_deref().unwrap_or("NULL")
            ),
        });
    }
    // Fork points that disagree, written by hand before version 12: an
    // import takes a branch with one fork point, a main-chain thought of its
    // session, and main-chain thoughts with none.
    let mut stmt = tx.prepare(
        "SELECT node_id, branch_origin, branch_from_thought FROM thoughts
         WHERE branch_id IS NULL AND (branch_origin IS NOT NULL OR branch_from_thought IS NOT NULL)
           AND coalesce(branch_from_thought BETWEEN 1 AND 2147483647, 1)
         ORDER BY id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (node, origin, from): (String, Option<String>, Option<i64>) = (row.get(0)?, row.get(1)?, row.get(2)?);
        let node = sql_text(&node);
        push(format!(
            "thought {node} is on the main chain but names a fork point (branch_origin {}, branch_from_thought {}), \
             so its session's export cannot be imported; UPDATE thoughts SET branch_origin = NULL, \
             branch_from_thought = NULL WHERE node_id = '{node}'",
            origin.as_deref().unwrap_or("NULL"),
            from.map_or("NULL".to_string(), |f| f.to_string())
        ));
    }
    let mut stmt = tx.prepare(
        "SELECT t.node_id, t.branch_id, t.branch_origin, t.branch_from_thought, b.origin_node, b.from_thought
         FROM thoughts AS t JOIN branches AS b ON b.session_id = t.session_id AND b.branch_id = t.branch_id
         WHERE (t.branch_origin IS NOT b.origin_node OR t.branch_from_thought IS NOT b.from_thought)
           AND coalesce(t.branch_from_thought BETWEEN 1 AND 2147483647, 1)
           AND b.origin_node IS b.session_id || ':' || b.from_thought
         ORDER BY t.id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (node, branch, origin, from, fork, fork_number): (
            String,
            String,
            Option<String>,
            Option<i64>,
            String,
            i64,
        ) = (
            row.get(0)?,
            row.get(1)?,
            row.get(2)?,
            row.get(3)?,
            row.get(4)?,
            row.get(5)?,
        );
        let (node, fork) = (sql_text(&node), sql_text(&fork));
        push(format!(
            "thought {node}: branch {branch} forks from {fork}, but this thought names branch_origin {} and \
             branch_from_thought {}; a branch has one fork point, so its session's export cannot be imported; \
             UPDATE thoughts SET branch_from_thought = {fork_number}, branch_origin = '{fork}' WHERE node_id = '{node}'",
            origin.as_deref().unwrap_or("NULL"),
            from.map_or("NULL".to_string(), |f| f.to_string())
        ));
    }
    // A branch still without its row: none of its thoughts names a fork
    // point that is a thought of the main chain (the others got their row
    // back above).
    let mut stmt = tx.prepare(
        "SELECT t.session_id, t.branch_id, group_concat(t.node_id, ', ')
         FROM thoughts AS t
         WHERE t.branch_id IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM branches AS b WHERE b.session_id = t.session_id AND b.branch_id = t.branch_id)
         GROUP BY t.session_id, t.branch_id ORDER BY t.session_id, t.branch_id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (session, branch, nodes): (String, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
        let (session, branch) = (sql_text(&session), sql_text(&branch));
        push(format!(
            "session {session}: branch {branch} ({nodes}) names no fork point that is a thought of the main chain, \
             so the server cannot continue it and its export cannot be imported; set it on its thoughts \
             (UPDATE thoughts SET branch_from_thought = N, branch_origin = '{session}:' || N \
             WHERE session_id = '{session}' AND branch_id = '{branch}', N the number of the main-chain thought it \
             forks from: that gives the branch its row), or delete them \
             (DELETE FROM thoughts WHERE session_id = '{session}' AND branch_id = '{branch}')"
        ));
    }
    // A branch row naming a fork point that is gone or malformed (written
    // by hand, or left by a delete before version 4).
    let mut stmt = tx.prepare(
        "SELECT b.session_id, b.branch_id, b.origin_node, b.from_thought FROM branches AS b
         WHERE b.origin_node IS NOT b.session_id || ':' || b.from_thought
            OR NOT EXISTS (SELECT 1 FROM thoughts AS o WHERE o.node_id = b.origin_node AND o.branch_id IS NULL)
         ORDER BY b.session_id, b.branch_id",
    )?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let (session, branch, origin, from): (String, String, String, i64) =
            (row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?);
        let (session, branch) = (sql_text(&session), sql_text(&branch));
        push(format!(
            "session {session}: branch {branch}'s row forks from {origin} (from_thought {from}), which is not a \
             thought of the main chain, so its export cannot be imported and a branch row cannot change; put that \
             thought back, or delete the branch (DELETE FROM thoughts WHERE session_id = '{session}' AND \
             branch_id = '{branch}')"
        ));
    }
    // Critiques of another shape, written by hand before version 12: reads
    // and exports leave them out.
    let mut stmt = tx.prepare(&format!(
        "SELECT node_id FROM thoughts
         WHERE critique IS NOT NULL
           AND NOT (json_valid(critique) AND json_type(critique) = 'object'
                    AND coalesce(json_type(critique, '$.text') = 'text', 0)
                    AND coalesce(json_type(critique, '$.model') = 'text', 0)
                    AND coalesce(json_type(critique, '$.timestamp') = 'text', 0)
                    AND json_extract(critique, '$.timestamp') GLOB '{TIME_GLOB}')
         ORDER BY id"
    ))?;
    let mut rows = stmt.query([])?;
    while let Some(row) = rows.next()? {
        let node = sql_text(&row.get::<_, String>(0)?);
        push(format!(
            "thought {node}: its critique is not an object of three strings text, model and timestamp (UTC with \
             milliseconds), so reads and exports leave it out; UPDATE thoughts SET critique = \
             json_object('text', '...', 'model', '...', 'timestamp', '2026-11-23T08:42:10.000Z') \
             WHERE node_id = '{node}', or SET critique = NULL"
        ));
    }
    for (session, nodes) in loops(tx)? {
        let first = nodes.first().cloned().unwrap_or_default();
        push(format!(
            "session {session}: {} follow one another in a loop (each follows the next), so they are read in no \
             order; set the prev_node of the one that comes first to the thought before it \
             (UPDATE thoughts SET prev_node = '<the node it follows>' WHERE node_id = '...'; {first} follows {})",
            nodes.join(", "),
            nodes.get(1).cloned().unwrap_or_default()
        ));
    }
    if more > 0 {
        lines.push(format!("and {more} more"));
    }
    Ok(lines)
}

/// How many times the link fixes run at most (each pass mends what the one
/// before left; a sound ledger needs one).
const MAX_LINK_PASSES: usize = 10;

/// Relinks the later of two thoughts of one chain that follow the same
/// node (see [`fix_links`]). The thoughts to relink are found first
/// (MATERIALIZED): SQLite 3.53 otherwise looks up `before`, a pass over the
/// chain, for every thought of the ledger, which took 192 s for 31,000
/// thoughts on chains of 1,200, the write lock held all along.
const RELINK_FOLLOWERS: &str = "WITH followers AS MATERIALIZED (
     SELECT t.id, t.session_id, t.branch_id
     FROM thoughts AS t
     WHERE t.prev_node IS NOT NULL
       AND EXISTS (SELECT 1 FROM thoughts AS s
                   WHERE s.prev_node = t.prev_node AND s.session_id = t.session_id
                     AND s.branch_id IS t.branch_id AND s.id < t.id)),
 later AS (
     SELECT f.id,
            (SELECT p.node_id FROM thoughts AS p
             WHERE p.session_id = f.session_id AND p.branch_id IS f.branch_id AND p.id < f.id
             ORDER BY p.id DESC LIMIT 1) AS before
     FROM followers AS f)
 UPDATE thoughts SET prev_node = later.before
 FROM later
 WHERE thoughts.id = later.id AND thoughts.prev_node IS NOT later.before";

/// One pass of the link fixes; returns how many links changed.
fn fix_links(tx: &rusqlite::Connection) -> Result<u64> {
    // A prev link to the thought itself (an older version's doing after a
    // hand delete) or to a node that is gone: the thought before it on its
    // chain, or a branch's fork point.
    let gone = tx.execute(
        "UPDATE thoughts AS t SET prev_node = coalesce(
             (SELECT p.node_id FROM thoughts AS p
              WHERE p.session_id = t.session_id AND p.branch_id IS t.branch_id AND p.id < t.id
              ORDER BY p.id DESC LIMIT 1),
             (SELECT o.node_id FROM thoughts AS o
              WHERE t.branch_id IS NOT NULL AND o.node_id = t.branch_origin))
         WHERE t.prev_node IS NOT NULL
           AND (t.prev_node = t.node_id
                OR NOT EXISTS (SELECT 1 FROM thoughts AS q WHERE q.node_id = t.prev_node))",
        [],
    )?;
    // Two thoughts of one chain following the same node (thoughts put back
    // by hand newest first): a chain is its thoughts in the order they were
    // written, so the later one follows the thought written just before it
    // on the chain, where that is another node than it follows now.
    let forked = tx.execute(RELINK_FOLLOWERS, [])?;
    // A branch thought that follows nothing (inserted by hand without
    // prev_node) is the branch's first when it is the only one and no other
    // thought of the branch follows the fork point: it follows the fork
    // point, as the server links a branch's first thought.
    let headless = tx.execute(
        "UPDATE thoughts AS t SET prev_node = b.origin_node
         FROM branches AS b
         WHERE t.prev_node IS NULL AND t.branch_id IS NOT NULL
           AND b.session_id = t.session_id AND b.branch_id = t.branch_id
           AND EXISTS (SELECT 1 FROM thoughts AS o WHERE o.node_id = b.origin_node)
           AND NOT EXISTS (SELECT 1 FROM thoughts AS s
                           WHERE s.session_id = t.session_id AND s.branch_id = t.branch_id AND s.id <> t.id
                             AND (s.prev_node IS NULL OR s.prev_node = b.origin_node))",
        [],
    )?;
    Ok((gone + forked + headless) as u64)
}

/// Thoughts whose `prev_node` links lead round in a loop (set so by hand),
/// each loop's node ids in the order the links run, per session. A loop
/// never reaches the chain's start, so the thoughts in it are read in no
/// order; which link is wrong only a person can tell.
fn loops(tx: &rusqlite::Connection) -> Result<Vec<(String, Vec<String>)>> {
    let mut stmt = tx.prepare(
        "SELECT session_id, node_id, prev_node FROM thoughts WHERE prev_node IS NOT NULL ORDER BY session_id",
    )?;
    let mut rows = stmt.query([])?;
    let mut found = Vec::new();
    let mut session: Option<String> = None;
    let mut prev: HashMap<String, String> = HashMap::new();
    let mut flush = |session: &Option<String>, prev: &mut HashMap<String, String>| {
        if let Some(s) = session {
            for lp in loops_in(prev) {
                found.push((s.clone(), lp));
            }
        }
        prev.clear();
    };
    while let Some(row) = rows.next()? {
        let (s, node, p): (String, String, String) = (row.get(0)?, row.get(1)?, row.get(2)?);
        if session.as_deref() != Some(s.as_str()) {
            flush(&session, &mut prev);
            session = Some(s);
        }
        prev.insert(node, p);
    }
    flush(&session, &mut prev);
    Ok(found)
}

/// The loops among `prev` links (node -> the node it follows): each node
/// follows one node, so every walk along the links either ends or enters a
/// loop, and each node is walked once.
fn loops_in(prev: &HashMap<String, String>) -> Vec<Vec<String>> {
    let mut walked: HashMap<&str, usize> = HashMap::new();
    let mut starts: Vec<&String> = prev.keys().collect();
    starts.sort();
    let mut found = Vec::new();
    for (walk, start) in starts.into_iter().enumerate() {
        let mut path: Vec<&str> = Vec::new();
        let mut at = start.as_str();
        loop {
            match walked.get(at) {
                Some(&w) if w == walk => {
                    if let Some(i) = path.iter().position(|n| *n == at) {
                        found.push(path[i..].iter().map(|n| n.to_string()).collect());
                    }
                    break;
                }
                Some(_) => break,
                None => {}
            }
            walked.insert(at, walk);
            path.push(at);
            match prev.get(at) {
                Some(p) => at = p.as_str(),
                None => break,
            }
        }
    }
    found
}

impl Store {
    /// Recompute, in one write transaction, every derived row and column:
    /// remove orphans and empty branches, rebuild the tag rows from the
    /// `tags` JSON, recount sessions and recompute chain tails, and rebuild
    /// every full-text index from the rows it indexes. Of the rows a person
    /// wrote (thoughts, sessions, patterns, notes), only thoughts whose
    /// session is gone are removed.
    pub fn repair(&self) -> Result<RepairReport> {
        let mended = self.write(|tx| {
            let mut r = RepairReport::default();
            let count = |sql: &str| -> Result<u64> { Ok(tx.execute(sql, [])? as u64) };
            // Every b-tree index, from its table (a damaged index page is the
            // commonest damage SQLite reports, and the cheapest to mend).
            tx.execute_batch("REINDEX")?;
            // First every full-text index, from its rows: the triggers that
            // remove what is deleted below need a sound index. The small
            // ones are rebuilt here. The thoughts' index is emptied, with
            // nothing indexed (so those triggers leave it alone), and
            // refilled after this transaction in the small batches the
            // server indexes new thoughts in: rebuilding it here took ~10 s
            // per 300 MB of thought text, and every server's writes waited
            // that long behind it, giving up at 10 s. Searches meanwhile read
            // the thoughts not yet indexed.
            for index in [
                "sessions_fts",
                "knowledge_patterns_fts",
                "scratchpad_notes_fts",
                "notebook_cells_fts",
            ] {
                tx.execute(&format!("INSERT INTO {index} ({index}) VALUES ('rebuild')"), [])?;
            }
            tx.execute("INSERT INTO thoughts_fts (thoughts_fts) VALUES ('delete-all')", [])?;
            tx.execute("UPDATE thoughts_fts_state SET indexed_through = 0 WHERE id = 1", [])?;
            for table in ["thoughts", "branches", "session_tags"] {
                r.orphans_removed += count(&format!(
                    "DELETE FROM {table} WHERE session_id NOT IN (SELECT id FROM sessions)"
                ))?;
            }
            r.orphans_removed +=
                count("DELETE FROM knowledge_pattern_tags WHERE pattern_id NOT IN (SELECT id FROM knowledge_patterns)")?;
            r.empty_branches_removed += count(
                "DELETE FROM branches AS b WHERE NOT EXISTS (
                     SELECT 1 FROM thoughts AS t WHERE t.session_id = b.session_id AND t.branch_id = b.branch_id)",
            )?;
            // Tag rows as their owner's `tags` JSON says.
            for (tags, owner, owners) in [
                ("session_tags", "session_id", "sessions"),
                ("knowledge_pattern_tags", "pattern_id", "knowledge_patterns"),
            ] {
                r.tag_rows_fixed += count(&format!(
                    "DELETE FROM {tags} AS t WHERE NOT EXISTS (
                         SELECT 1 FROM {owners} AS o, json_each(o.tags) AS j
                         WHERE o.id = t.{owner} AND j.value = t.tag)"
                ))?;
                r.tag_rows_fixed += count(&format!(
                    "INSERT OR IGNORE INTO {tags} (tag, {owner})
                     SELECT j.value, o.id FROM {owners} AS o, json_each(o.tags) AS j WHERE j.type = 'text'"
                ))?;
            }
            // Thoughts on a branch whose row is gone get it back, from the
            // branch's first thought that names a fork point on the main
            // chain; a branch none of whose thoughts does is left to you
            // (a fork point made up here would export a session that no
            // import takes).
            // One pass over the branch thoughts, the branch row's lookup
            // first: it was a subquery over the whole branch for each of
            // its thoughts, which took 42 s on branches of 1,200 long
            // thoughts, while every server's writes waited.
            r.branches_restored += count(
                "INSERT OR IGNORE INTO branches (session_id, branch_id, from_thought, origin_node, created_at)
                 SELECT t.session_id, t.branch_id, t.branch_from_thought, t.branch_origin, t.created_at
                 FROM thoughts AS t
                 WHERE t.id IN (
                     SELECT min(x.id) FROM thoughts AS x
                     WHERE x.branch_id IS NOT NULL
                       AND NOT EXISTS (SELECT 1 FROM branches AS b
                                       WHERE b.session_id = x.session_id AND b.branch_id = x.branch_id)
                       AND x.branch_origin = x.session_id || ':' || x.branch_from_thought
                       AND EXISTS (SELECT 1 FROM thoughts AS o
                                   WHERE o.node_id = x.branch_origin AND o.branch_id IS NULL)
                     GROUP BY x.session_id, x.branch_id)",
            )?;
            // A ledger whose installId was blanked by hand before version
            // 12 gets one: a blank one tells it from no other ledger.
            r.install_id_set = tx.execute(
                "UPDATE config SET value = ?1 WHERE key = ?2 AND trim(value, ' ' || char(9, 10, 13)) = ''",
                (uuid::Uuid::new_v4().to_string(), ConfigKey::InstallId.name()),
            )? > 0;
            // Each pass can leave what the next one mends (a thought
            // relinked to one that another pass relinks), so they run until
            // nothing changes; only links that change are counted.
            for _ in 0..MAX_LINK_PASSES {
                let fixed = fix_links(tx)?;
                r.links_fixed += fixed;
                if fixed == 0 {
                    break;
                }
            }
            // The counts and tails as the rows say they are.
            r.sessions_fixed += count(
                "WITH truth AS (
                     SELECT s.id,
                            (SELECT count(*) FROM thoughts AS t WHERE t.session_id = s.id) AS thoughts,
                            (SELECT count(*) FROM branches AS b WHERE b.session_id = s.id) AS branches,
                            (SELECT t.node_id FROM thoughts AS t WHERE t.session_id = s.id AND t.branch_id IS NULL
                             ORDER BY t.id DESC LIMIT 1) AS tail
                     FROM sessions AS s)
                 UPDATE sessions SET thought_count = truth.thoughts, branch_count = truth.branches, tail_node = truth.tail
                 FROM truth
                 WHERE truth.id = sessions.id
                   AND (thought_count <> truth.thoughts OR branch_count <> truth.branches
                        OR tail_node IS NOT truth.tail)",
            )?;
            r.branch_tails_fixed += count(
                "WITH truth AS (
                     SELECT b.session_id, b.branch_id,
                            (SELECT t.node_id FROM thoughts AS t
                             WHERE t.session_id = b.session_id AND t.branch_id = b.branch_id
                             ORDER BY t.id DESC LIMIT 1) AS tail
                     FROM branches AS b)
                 UPDATE branches SET tail_node = truth.tail
                 FROM truth
                 WHERE truth.session_id = branches.session_id AND truth.branch_id = branches.branch_id
                   AND tail_node IS NOT truth.tail",
            )?;
            r.critique_flags_set +=
                count("UPDATE thoughts SET critique_requested = 1 WHERE critique IS NOT NULL AND critique_requested = 0")?;
            r.thoughts_indexed = tx.query_row("SELECT count(*) FROM thoughts", [], |row| row.get::<_, i64>(0))? as u64;
            r.left_for_you = left_for_you(tx)?;
            Ok(r)
        });
        // A file too damaged to mend still gets its integrity check.
        let mut report = match mended {
            // Batch by batch, each a short write transaction; what a server
            // indexes meanwhile is not done twice. Interrupted (killed, or
            // another program's lock), the rest is indexed by the next
            // server, or searched without the index until then; what was
            // mended stays mended, and the report says both.
            Ok(mut report) => {
                if let Err(e) = self.index_all_pending() {
                    report.failed = Some(format!(
                        "the repair is committed, but rebuilding the search index stopped ({e}); the next server \
                         indexes the rest, and searches read the thoughts not yet indexed until then"
                    ));
                }
                report
            }
            Err(e) => RepairReport {
                failed: Some(e.to_string()),
                ..Default::default()
            },
        };
        let conn = self.conn()?;
        let mut stmt = conn.prepare("PRAGMA integrity_check")?;
        report.integrity = stmt
            .query_map([], |row| row.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::{plan, temp_store};

    /// Relinking looks up a thought's predecessor (a pass over its chain)
    /// only for the thoughts found to need it, not for every thought: the
    /// other plan was quadratic in a chain's length.
    #[test]
    fn relinking_reads_chains_only_for_the_thoughts_it_relinks() {
        let (_dir, store) = temp_store();
        let plan = plan(&store, RELINK_FOLLOWERS);
        let materialized = plan.find("MATERIALIZE followers").expect(&plan);
        let scan = plan.find("SCAN f").expect(&plan);
        let chain = plan.find("SEARCH p USING INDEX thoughts_by_chain_number").expect(&plan);
        assert!(materialized < scan && scan < chain, "{plan}");
    }
}
