//! `thoughtbox repair --check`: whether a ledger is whole, read without
//! writing anything, for a copy that must not change (a restored replica, a
//! backup) or a ledger a server is writing.

use serde::Serialize;

use super::Store;
use super::repair::left_for_you;
use crate::error::Result;

/// What a check found; `sound` when nothing at all.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    /// SQLite's `PRAGMA integrity_check`: `["ok"]` when the file is sound.
    pub integrity: Vec<String>,
    /// Rows `PRAGMA foreign_key_check` names.
    pub foreign_key_violations: u64,
    /// Thoughts, branches and tag rows of sessions that do not exist.
    pub orphan_rows: u64,
    /// Sessions whose thought or branch count or main-chain tail disagree
    /// with their rows.
    pub sessions_miscounted: u64,
    /// Branches whose tail is not their newest thought.
    pub branch_tails_wrong: u64,
    /// Thoughts whose `prev_node` names a node that does not exist.
    pub dangling_links: u64,
    /// What only a person can decide (see [`super::RepairReport`]).
    pub left_for_you: Vec<String>,
    /// Thoughts, sessions and branches in the ledger.
    pub thoughts: u64,
    pub sessions: u64,
    pub branches: u64,
    /// Nothing found.
    pub sound: bool,
}

impl Store {
    /// Check the ledger in one read transaction; nothing is written.
    pub fn check(&self) -> Result<CheckReport> {
        self.read(|tx| {
            let count = |sql: &str| -> Result<u64> { Ok(tx.query_row(sql, [], |r| r.get::<_, i64>(0))?.max(0) as u64) };
            let mut r = CheckReport {
                integrity: tx
                    .prepare("PRAGMA integrity_check")?
                    .query_map([], |row| row.get::<_, String>(0))?
                    .collect::<rusqlite::Result<Vec<_>>>()?,
                foreign_key_violations: tx
                    .prepare("PRAGMA foreign_key_check")?
                    .query_map([], |_| Ok(()))?
                    .count() as u64,
                ..Default::default()
            };
            for table in ["thoughts", "branches", "session_tags"] {
                r.orphan_rows += count(&format!(
                    "SELECT count(*) FROM {table} WHERE session_id NOT IN (SELECT id FROM sessions)"
                ))?;
            }
            r.sessions_miscounted = count(
                "SELECT count(*) FROM sessions AS s
                 WHERE s.thought_count <> (SELECT count(*) FROM thoughts AS t WHERE t.session_id = s.id)
                    OR s.branch_count <> (SELECT count(*) FROM branches AS b WHERE b.session_id = s.id)
                    OR s.tail_node IS NOT (SELECT t.node_id FROM thoughts AS t
                                           WHERE t.session_id = s.id AND t.branch_id IS NULL
                                           ORDER BY t.id DESC LIMIT 1)",
            )?;
            r.branch_tails_wrong = count(
                "SELECT count(*) FROM branches AS b
                 WHERE b.tail_node IS NOT (SELECT t.node_id FROM thoughts AS t
                                           WHERE t.session_id = b.session_id AND t.branch_id = b.branch_id
                                           ORDER BY t.id DESC LIMIT 1)",
            )?;
            r.dangling_links = count(
                "SELECT count(*) FROM thoughts AS t
                 WHERE t.prev_node IS NOT NULL AND NOT EXISTS (SELECT 1 FROM thoughts AS p WHERE p.node_id = t.prev_node)",
            )?;
            r.left_for_you = left_for_you(tx)?;
            r.thoughts = count("SELECT count(*) FROM thoughts")?;
            r.sessions = count("SELECT count(*) FROM sessions")?;
            r.branches = count("SELECT count(*) FROM branches")?;
            r.sound = r.integrity == ["ok"]
                && r.foreign_key_violations == 0
                && r.orphan_rows == 0
                && r.sessions_miscounted == 0
                && r.branch_tails_wrong == 0
                && r.dangling_links == 0
                && r.left_for_you.is_empty();
            Ok(r)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::{NewSession, ThoughtInput};
    use crate::store::Target;
    use crate::store::test_support::temp_store;

    #[test]
    fn a_whole_ledger_is_sound_and_a_miscount_is_found_without_writing() {
        let (_dir, store) = temp_store();
        let sid = store.create_session(NewSession::titled("checked")).unwrap().id;
        for text in ["one", "two"] {
            store
                .append_thought(Target::Session(sid.clone()), ThoughtInput::text(text))
                .unwrap();
        }
        let report = store.check().unwrap();
        assert!(report.sound, "{report:?}");
        assert_eq!((report.thoughts, report.sessions), (2, 1));
        store
            .conn()
            .unwrap()
            .execute("UPDATE sessions SET thought_count = 7", [])
            .unwrap();
        let report = store.check().unwrap();
        assert_eq!(report.sessions_miscounted, 1);
        assert!(!report.sound);
        let count: i64 = store
            .conn()
            .unwrap()
            .query_row("SELECT thought_count FROM sessions", [], |r| r.get(0))
            .unwrap();
        assert_eq!(count, 7, "a check changes nothing");
    }
}
