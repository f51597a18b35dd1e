//! What changed since a mark: the thoughts and sessions recorded after
//! given row numbers, by this process or any other on the same file, for
//! the Observatory's live updates (a cheap indexed read, polled).

use rusqlite::params;

use super::Store;
use super::sessions::{SESSION_COLUMNS, session_from_row};
use super::thoughts::{THOUGHT_COLUMNS, thought_from_row};
use crate::domain::{Session, Thought};
use crate::error::Result;

/// How far the ledger has come: the last thought's and session's row numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    pub thought: i64,
    pub session: i64,
}

/// Sessions created after a mark, each with its row number, and thoughts
/// recorded after it.
pub type Changes = (Vec<(i64, Session)>, Vec<Thought>);

impl Store {
    /// The ledger's current [`Mark`].
    pub fn mark(&self) -> Result<Mark> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT (SELECT coalesce(max(id), 0) FROM thoughts), (SELECT coalesce(max(seq), 0) FROM sessions)",
                )?
                .query_row([], |r| {
                    Ok(Mark {
                        thought: r.get(0)?,
                        session: r.get(1)?,
                    })
                })?)
        })
    }

    /// Sessions created after `mark` (in creation order, at most `limit`),
    /// with their row numbers, and thoughts recorded after it (likewise).
    pub fn changes_since(&self, mark: Mark, limit: u32) -> Result<Changes> {
        let granularity = self.granularity();
        self.read(|tx| {
            let sessions = tx
                .prepare_cached(&format!(
                    "SELECT {SESSION_COLUMNS}, seq FROM sessions WHERE seq > ?1 ORDER BY seq LIMIT ?2"
                ))?
                .query_map(params![mark.session, limit], |r| {
                    // The row number follows the session's own columns.
                    Ok((r.get(11)?, session_from_row(r, granularity)?))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let thoughts = tx
                .prepare_cached(&format!(
                    "SELECT {THOUGHT_COLUMNS} FROM thoughts WHERE id > ?1 ORDER BY id LIMIT ?2"
                ))?
                .query_map(params![mark.thought, limit], thought_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((sessions, thoughts))
        })
    }
}

impl Store {
    /// Every tag of the ledger with how many sessions carry it, most used
    /// first (the Observatory's project and tag filters).
    pub fn tag_counts(&self, limit: u32) -> Result<Vec<(String, u64)>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT tag, count(*) AS n FROM session_tags GROUP BY tag ORDER BY n DESC, tag LIMIT ?1",
                )?
                .query_map([limit], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64)))?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::{NewSession, ThoughtInput};
    use crate::store::Target;
    use crate::store::test_support::temp_store;

    #[test]
    fn changes_since_a_mark_are_what_came_after_it() {
        let (_dir, store) = temp_store();
        let before = store.mark().unwrap();
        let s = store.create_session(NewSession::titled("watched")).unwrap().id;
        for i in 0..3 {
            let input = ThoughtInput {
                thought: format!("t{i}"),
                next_thought_needed: true,
                ..Default::default()
            };
            store.append_thought(Target::Session(s.clone()), input).unwrap();
        }
        let (sessions, thoughts) = store.changes_since(before, 100).unwrap();
        assert_eq!(sessions.len(), 1);
        assert_eq!(sessions[0].1.id, s);
        assert_eq!(
            thoughts.iter().map(|t| t.data.thought.as_str()).collect::<Vec<_>>(),
            ["t0", "t1", "t2"]
        );
        let after = store.mark().unwrap();
        assert_eq!(after.session, sessions[0].0);
        assert_eq!(after.thought, thoughts[2].seq);
        let (sessions, thoughts) = store.changes_since(after, 100).unwrap();
        assert!(sessions.is_empty() && thoughts.is_empty());
        // Limited, oldest first.
        let (_, first) = store.changes_since(before, 2).unwrap();
        assert_eq!(first.len(), 2);
    }
}
