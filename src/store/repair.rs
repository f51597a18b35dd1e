//! `thoughtbox repair`: recompute everything in the ledger that is derived
//! from something else, for a file edited by hand before the schema kept it
//! right by itself (version 4), or damaged some other way.

use serde::Serialize;

use super::Store;
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
    /// Thoughts in the rebuilt search index.
    pub thoughts_indexed: u64,
    /// SQLite's `PRAGMA integrity_check` afterwards: `["ok"]` when sound.
    pub integrity: Vec<String>,
}

impl Store {
    /// Recompute, in one write transaction, every derived row and column:
    /// remove orphans and empty branches, rebuild the tag rows from the
    /// `tags` JSON, recount sessions and recompute chain tails, and rebuild
    /// every full-text index from the rows it indexes. Of the rows a person
    /// wrote (thoughts, sessions, patterns, notes), only thoughts whose
    /// session is gone are removed.
    pub fn repair(&self) -> Result<RepairReport> {
        let mut report = self.write(|tx| {
            let mut r = RepairReport::default();
            let count = |sql: &str| -> Result<u64> { Ok(tx.execute(sql, [])? as u64) };
            // First every full-text index, from its rows (the thoughts' index
            // is then complete, so its watermark is the newest thought): the
            // triggers that remove what is deleted below need a sound index.
            for index in ["thoughts_fts", "sessions_fts", "knowledge_patterns_fts", "scratchpad_notes_fts"] {
                tx.execute(&format!("INSERT INTO {index} ({index}) VALUES ('rebuild')"), [])?;
            }
            tx.execute(
                "UPDATE thoughts_fts_state SET indexed_through = coalesce((SELECT max(id) FROM thoughts), 0) WHERE id = 1",
                [],
            )?;
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
            r.tag_rows_fixed += count(
                "DELETE FROM session_tags AS st WHERE NOT EXISTS (
                     SELECT 1 FROM sessions AS s, json_each(s.tags) AS j
                     WHERE s.id = st.session_id AND j.value = st.tag)",
            )?;
            r.tag_rows_fixed += count(
                "INSERT OR IGNORE INTO session_tags (tag, session_id)
                 SELECT j.value, s.id FROM sessions AS s, json_each(s.tags) AS j WHERE j.type = 'text'",
            )?;
            r.tag_rows_fixed += count(
                "DELETE FROM knowledge_pattern_tags AS pt WHERE NOT EXISTS (
                     SELECT 1 FROM knowledge_patterns AS p, json_each(p.tags) AS j
                     WHERE p.id = pt.pattern_id AND j.value = pt.tag)",
            )?;
            r.tag_rows_fixed += count(
                "INSERT OR IGNORE INTO knowledge_pattern_tags (tag, pattern_id)
                 SELECT j.value, p.id FROM knowledge_patterns AS p, json_each(p.tags) AS j WHERE j.type = 'text'",
            )?;
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
            r.thoughts_indexed = tx.query_row("SELECT count(*) FROM thoughts", [], |row| row.get::<_, i64>(0))? as u64;
            Ok(r)
        })?;
        let conn = self.conn()?;
        let mut stmt = conn.prepare("PRAGMA integrity_check")?;
        report.integrity = stmt
            .query_map([], |row| row.get::<_, String>(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(report)
    }
}
