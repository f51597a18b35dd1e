//! Figures about the whole ledger, for `thoughtbox stats` and `thoughtbox info`.

use serde::Serialize;

use super::Store;
use crate::error::Result;

/// Counts over the whole ledger.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LedgerStats {
    pub sessions: u64,
    pub completed_sessions: u64,
    pub thoughts: u64,
    pub main_chain_thoughts: u64,
    pub branch_thoughts: u64,
    pub branches: u64,
    pub revisions: u64,
    pub critiques: u64,
    /// The knowledge garden, which `backup` carries and the directory
    /// layout does not.
    pub patterns: u64,
    pub notes: u64,
    /// Thoughts written but not yet in the full-text index.
    pub unindexed_thoughts: u64,
    pub first_thought_at: Option<String>,
    pub last_thought_at: Option<String>,
    /// The most used tags, most used first: `(tag, sessions)`.
    pub top_tags: Vec<(String, u64)>,
}

/// Sizes in bytes of the database file and its WAL companions.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileSizes {
    pub database: u64,
    pub wal: u64,
    pub shm: u64,
    pub total: u64,
}

fn count(v: i64) -> u64 {
    v.max(0) as u64
}

impl Store {
    /// Ledger-wide counts, from one consistent snapshot.
    pub fn stats(&self, top_tags: u32) -> Result<LedgerStats> {
        self.read(|tx| {
            let one = |sql: &str| -> Result<i64> { Ok(tx.prepare_cached(sql)?.query_row([], |r| r.get(0))?) };
            let (thoughts, main, revisions, critiques, first, last) = tx
                .prepare_cached(
                    "SELECT count(*), count(*) FILTER (WHERE branch_id IS NULL), count(*) FILTER (WHERE is_revision = 1),
                            count(critique), min(created_at), max(created_at)
                     FROM thoughts",
                )?
                .query_row([], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, i64>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, i64>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, Option<String>>(5)?,
                    ))
                })?;
            let tags = tx
                .prepare_cached(
                    "SELECT tag, count(*) AS n FROM session_tags GROUP BY tag ORDER BY n DESC, tag LIMIT ?1",
                )?
                .query_map([top_tags], |r| Ok((r.get::<_, String>(0)?, count(r.get(1)?))))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(LedgerStats {
                sessions: count(one("SELECT count(*) FROM sessions")?),
                completed_sessions: count(one("SELECT count(*) FROM sessions WHERE completed_at IS NOT NULL")?),
                thoughts: count(thoughts),
                main_chain_thoughts: count(main),
                branch_thoughts: count(thoughts - main),
                branches: count(one("SELECT count(*) FROM branches")?),
                revisions: count(revisions),
                critiques: count(critiques),
                patterns: count(one("SELECT count(*) FROM knowledge_patterns")?),
                notes: count(one("SELECT count(*) FROM scratchpad_notes")?),
                unindexed_thoughts: count(one(
                    "SELECT count(*) FROM thoughts WHERE id > (SELECT indexed_through FROM thoughts_fts_state WHERE id = 1)",
                )?),
                first_thought_at: first,
                last_thought_at: last,
                top_tags: tags,
            })
        })
    }

    /// Sizes of the database file, `-wal` and `-shm` (0 when absent).
    #[cfg(test)]
    pub fn file_sizes(&self) -> FileSizes {
        FileSizes::of(self.path())
    }
}

impl FileSizes {
    /// The sizes of the database at `path` and its -wal and -shm files (0
    /// for one that is not there), read without opening it: a command that
    /// reports them reads them before its own connection makes a -shm.
    pub fn of(path: &std::path::Path) -> FileSizes {
        // The -wal and -shm are beside the file a symlink points to.
        let real = super::real_path(path);
        let size = |suffix: &str| {
            std::fs::metadata(crate::files::with_suffix(&real, suffix))
                .map(|m| m.len())
                .unwrap_or(0)
        };
        let (database, wal, shm) = (size(""), size("-wal"), size("-shm"));
        FileSizes {
            database,
            wal,
            shm,
            total: database + wal + shm,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::{NewSession, ThoughtInput};
    use crate::store::Target;
    use crate::store::test_support::temp_store;

    #[test]
    fn stats_count_chains_revisions_and_tags() {
        let (_d, store) = temp_store();
        let s = store
            .create_session(NewSession {
                title: "s".into(),
                tags: vec!["a".into(), "b".into()],
                ..Default::default()
            })
            .unwrap();
        store
            .create_session(NewSession {
                title: "t".into(),
                tags: vec!["a".into()],
                ..Default::default()
            })
            .unwrap();
        let add = |input: ThoughtInput| store.append_thought(Target::Session(s.id.clone()), input).unwrap();
        add(ThoughtInput::text("one"));
        add(ThoughtInput {
            revises_thought: Some(1),
            ..ThoughtInput::text("fix")
        });
        add(ThoughtInput {
            branch_id: Some("x".into()),
            branch_from_thought: Some(1),
            ..ThoughtInput::text("alt")
        });
        let st = store.stats(5).unwrap();
        assert_eq!(
            (st.sessions, st.thoughts, st.main_chain_thoughts, st.branch_thoughts),
            (2, 3, 2, 1)
        );
        assert_eq!(
            (st.branches, st.revisions, st.critiques, st.unindexed_thoughts),
            (1, 1, 0, 3)
        );
        assert_eq!(st.top_tags, vec![("a".to_string(), 2), ("b".to_string(), 1)]);
        assert!(st.first_thought_at <= st.last_thought_at);
        let sizes = store.file_sizes();
        assert!(sizes.database > 0);
        assert_eq!(sizes.total, sizes.database + sizes.wal + sizes.shm);
    }
}
