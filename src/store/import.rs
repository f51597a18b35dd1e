//! What the directory-tree exporter and importer need from the database:
//! every session id, and inserting a whole session as it was recorded.

use rusqlite::{OptionalExtension, params};

use super::Store;
use super::thoughts::insert_thought;
use crate::domain::{Session, Thought};
use crate::error::{Error, Result};

/// What happened to a session given to [`Store::import_session`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportOutcome {
    /// Inserted with this many thoughts.
    Imported(u64),
    /// A session with this id is already in the ledger; nothing was written.
    /// Carries the ledger's thought count for the session.
    AlreadyPresent(u64),
}

/// WAL pages between automatic checkpoints on a connection that imports (32 MiB).
const IMPORT_AUTOCHECKPOINT: i64 = 8192;

impl Store {
    /// Every session id, oldest first.
    pub fn session_ids(&self) -> Result<Vec<String>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached("SELECT id FROM sessions ORDER BY created_at, id")?
                .query_map([], |r| r.get(0))?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Insert a session with its thoughts (given in creation order, links
    /// already checked) in one `BEGIN IMMEDIATE` transaction, keeping ids,
    /// node ids, timestamps and critiques. A session already present is left
    /// alone, which makes importing a tree twice a no-op. The counters are
    /// set from the rows; branches are recorded from each one's first thought.
    /// Thought text reaches the full-text index through the usual watermark.
    pub fn import_session(&self, session: &Session, thoughts: &[Thought]) -> Result<ImportOutcome> {
        let tags = serde_json::to_string(&session.tags).map_err(|e| Error::Internal(e.to_string()))?;
        self.write(|tx| {
            // Many sessions in a row write the same index pages again and
            // again; checkpointing every 1,000 pages (the default) would copy
            // them to the database file, with two fsyncs, each time.
            // Litestream's checkpoints only, where it replicates the ledger.
            if !self.checkpoints_left_to_litestream() {
                tx.pragma_update(None, "wal_autocheckpoint", IMPORT_AUTOCHECKPOINT)?;
            }
            let present: Option<i64> = tx
                .prepare_cached("SELECT thought_count FROM sessions WHERE id = ?1")?
                .query_row([&session.id], |r| r.get(0))
                .optional()?;
            if let Some(count) = present {
                return Ok(ImportOutcome::AlreadyPresent(count.max(0) as u64));
            }
            let branch_count = {
                let mut seen: Vec<&str> = thoughts.iter().filter_map(|t| t.data.branch_id.as_deref()).collect();
                seen.sort_unstable();
                seen.dedup();
                seen.len()
            };
            tx.prepare_cached(
                "INSERT INTO sessions (id, title, description, tags, domain, thought_count, branch_count,
                     created_at, updated_at, last_accessed_at, completed_at, stage)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, CASE WHEN ?6 > 0 THEN 2 ELSE 1 END)",
            )?
            .execute(params![
                session.id,
                session.title,
                session.description,
                tags,
                session.domain,
                thoughts.len() as i64,
                branch_count as i64,
                session.created_at,
                session.updated_at,
                session.last_accessed_at,
                session.completed_at,
            ])?;
            // (A trigger fills session_tags from `tags`.)
            let mut branch_stmt = tx.prepare_cached(
                "INSERT OR IGNORE INTO branches (session_id, branch_id, from_thought, origin_node, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            // The node inserted last on each chain is its tail (rows are
            // inserted in creation order).
            let mut main_tail: Option<&str> = None;
            let mut branch_tails: std::collections::BTreeMap<&str, &str> = std::collections::BTreeMap::new();
            for t in thoughts {
                let d = &t.data;
                if let (Some(b), Some(from), Some(origin)) = (
                    d.branch_id.as_deref(),
                    d.branch_from_thought,
                    t.branch_origin.as_deref(),
                ) {
                    branch_stmt.execute(params![session.id, b, from, origin, d.timestamp])?;
                }
                insert_thought(tx, &session.id, t)?;
                match d.branch_id.as_deref() {
                    None => main_tail = Some(&t.node_id),
                    Some(b) => {
                        branch_tails.insert(b, &t.node_id);
                    }
                }
            }
            tx.prepare_cached("UPDATE sessions SET tail_node = ?2 WHERE id = ?1")?
                .execute(params![session.id, main_tail])?;
            let mut tail_stmt =
                tx.prepare_cached("UPDATE branches SET tail_node = ?3 WHERE session_id = ?1 AND branch_id = ?2")?;
            for (b, node) in branch_tails {
                tail_stmt.execute(params![session.id, b, node])?;
            }
            Ok(ImportOutcome::Imported(thoughts.len() as u64))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{NewSession, ThoughtInput};
    use crate::store::Target;
    use crate::store::test_support::temp_store;

    #[test]
    fn a_copied_session_imports_once_with_identical_rows() {
        let (_d, from) = temp_store();
        let s = from
            .create_session(NewSession {
                title: "copy me".into(),
                tags: vec!["project:x".into()],
                ..Default::default()
            })
            .unwrap();
        for (text, branch) in [("one", None), ("two", None), ("alt", Some("alt"))] {
            from.append_thought(
                Target::Session(s.id.clone()),
                ThoughtInput {
                    branch_id: branch.map(str::to_string),
                    branch_from_thought: branch.map(|_| 1),
                    ..ThoughtInput::text(text)
                },
            )
            .unwrap();
        }
        let (session, thoughts) = from.session_thoughts(&s.id).unwrap();
        let mut in_order = thoughts.clone();
        in_order.sort_by_key(|t| t.seq);

        let (_d2, to) = temp_store();
        assert_eq!(
            to.import_session(&session, &in_order).unwrap(),
            ImportOutcome::Imported(3)
        );
        assert_eq!(
            to.import_session(&session, &in_order).unwrap(),
            ImportOutcome::AlreadyPresent(3)
        );
        let (session2, thoughts2) = to.session_thoughts(&s.id).unwrap();
        assert_eq!(session2.thought_count, 3);
        assert_eq!(session2.branch_count, 1);
        assert_eq!(session2.tags, session.tags);
        let strip = |v: Vec<Thought>| {
            v.into_iter()
                .map(|t| (t.node_id, t.prev_node, t.data))
                .collect::<Vec<_>>()
        };
        assert_eq!(strip(thoughts2), strip(thoughts));
        assert_eq!(to.branches(&s.id).unwrap()[0].origin_node, format!("{}:1", s.id));
        assert_eq!(to.session_ids().unwrap(), vec![s.id.clone()]);
        // The imported text is searchable once the watermark indexer has run.
        assert_eq!(to.search_thoughts("alt", 10).unwrap().len(), 1);
    }
}
