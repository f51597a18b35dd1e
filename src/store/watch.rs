//! What changed since a mark: the thoughts and sessions recorded after
//! given row numbers, by this process or any other on the same file, for
//! the Observatory's live updates (a cheap indexed read, polled); and the
//! Observatory's reads of a session, its thoughts' text cut in SQL so that
//! a session of 1 MiB thoughts never sits whole in memory.

use rusqlite::{OptionalExtension, params};
use serde_json::json;

use super::Store;
use super::sessions::{SESSION_COLUMNS, get_session_tx, session_exists_tx, session_from_row};
use super::thoughts::{THOUGHT_COLUMNS, thought_from_row};
use crate::domain::{Session, Thought};
use crate::error::{Error, Result};

/// The characters of a thought's text the Observatory sends without being
/// asked for that thought (the page reads a longer one whole when shown).
pub const OBSERVED_CHARS: u32 = 4_000;

/// A thought whose text is cut to [`OBSERVED_CHARS`], with the whole
/// text's length in characters.
pub type CutThought = (Thought, u64);

/// [`THOUGHT_COLUMNS`] with the text cut, and its whole length after them.
fn cut_columns() -> String {
    let cut = THOUGHT_COLUMNS.replacen(", thought,", &format!(", substr(thought, 1, {OBSERVED_CHARS}),"), 1);
    format!("{cut}, length(thought)")
}

fn cut_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CutThought> {
    Ok((thought_from_row(r)?, r.get::<_, i64>(19)?.max(0) as u64))
}

/// How far the ledger has come: the last thought's and session's row numbers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    pub thought: i64,
    pub session: i64,
}

/// Sessions created after a mark, each with its row number, and thoughts
/// recorded after it (cut).
pub type Changes = (Vec<(i64, Session)>, Vec<CutThought>);

/// About what a thought's fields other than its text take as JSON in a
/// snapshot (ids, numbers, time, flags: ~230 bytes measured), so that a
/// session of many short thoughts is bounded as one of long ones is.
pub const JSON_PER_THOUGHT: usize = 256;

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
                    "SELECT {} FROM thoughts WHERE id > ?1 ORDER BY id LIMIT ?2",
                    cut_columns()
                ))?
                .query_map(params![mark.thought, limit], cut_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((sessions, thoughts))
        })
    }

    /// A session and its thoughts, cut, as [`Store::session_thoughts`]
    /// orders them; with `budget`, the reading stops once the thoughts read
    /// pass that many bytes as JSON (each text escaped, plus
    /// [`JSON_PER_THOUGHT`]),
    /// and the answer says whether it read them all.
    pub fn session_cut(&self, session_id: &str, budget: Option<usize>) -> Result<(Session, Vec<CutThought>, bool)> {
        let granularity = self.granularity();
        self.read(|tx| {
            let session = get_session_tx(tx, session_id, granularity)?;
            let mut stmt = tx.prepare_cached(&format!(
                "SELECT {} FROM thoughts WHERE session_id = ?1 ORDER BY branch_id, thought_number",
                cut_columns()
            ))?;
            let mut thoughts = Vec::new();
            let mut bytes = 0usize;
            for row in stmt.query_map([session_id], cut_from_row)? {
                let thought = row?;
                bytes += crate::json_text::escaped_len(&thought.0.data.thought) + JSON_PER_THOUGHT;
                thoughts.push(thought);
                if budget.is_some_and(|b| bytes > b) {
                    return Ok((session, thoughts, false));
                }
            }
            Ok((session, thoughts, true))
        })
    }

    /// One thought of a session, whole, by its node id.
    pub fn thought_by_node(&self, session_id: &str, node_id: &str) -> Result<Thought> {
        self.read(|tx| {
            if !session_exists_tx(tx, session_id)? {
                return Err(Error::session_not_found(session_id));
            }
            tx.prepare_cached(&format!(
                "SELECT {THOUGHT_COLUMNS} FROM thoughts WHERE node_id = ?1 AND session_id = ?2"
            ))?
            .query_row([node_id, session_id], thought_from_row)
            .optional()?
            .ok_or_else(|| Error::ThoughtNotFound {
                message: format!("session {session_id} has no thought {node_id}"),
                details: json!({ "sessionId": session_id, "nodeId": node_id }),
            })
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
    use super::*;
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
            thoughts
                .iter()
                .map(|(t, _)| t.data.thought.as_str())
                .collect::<Vec<_>>(),
            ["t0", "t1", "t2"]
        );
        let after = store.mark().unwrap();
        assert_eq!(after.session, sessions[0].0);
        assert_eq!(after.thought, thoughts[2].0.seq);
        let (sessions, thoughts) = store.changes_since(after, 100).unwrap();
        assert!(sessions.is_empty() && thoughts.is_empty());
        // Limited, oldest first.
        let (_, first) = store.changes_since(before, 2).unwrap();
        assert_eq!(first.len(), 2);
    }

    #[test]
    fn the_observatory_reads_texts_cut_and_one_thought_whole() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("big")).unwrap();
        let long = "é".repeat(OBSERVED_CHARS as usize + 10);
        for text in [long.as_str(), "short"] {
            let input = ThoughtInput::text(text.to_string());
            store.append_thought(Target::Session(s.id.clone()), input).unwrap();
        }
        let (_, cut, whole) = store.session_cut(&s.id, None).unwrap();
        assert!(whole);
        // Past a budget, the reading stops and says so.
        let (_, first, whole) = store.session_cut(&s.id, Some(10)).unwrap();
        assert_eq!((first.len(), whole), (1, false));
        assert_eq!(cut[0].0.data.thought.chars().count(), OBSERVED_CHARS as usize);
        assert_eq!(cut[0].1, OBSERVED_CHARS as u64 + 10);
        assert_eq!((cut[1].0.data.thought.as_str(), cut[1].1), ("short", 5));
        let (_, changed) = store.changes_since(Mark::default(), 10).unwrap();
        assert_eq!(changed[0].0.data.thought.chars().count(), OBSERVED_CHARS as usize);
        let whole = store.thought_by_node(&s.id, &cut[0].0.node_id).unwrap();
        assert_eq!(whole.data.thought, long);
        let missing = store.thought_by_node(&s.id, "nope").unwrap_err();
        assert!(matches!(missing, Error::ThoughtNotFound { .. }), "{missing}");
        let other = store.thought_by_node("no-such-session", &cut[0].0.node_id).unwrap_err();
        assert!(matches!(other, Error::SessionNotFound { .. }), "{other}");
    }

    /// Short thoughts count their fields too: many of them are bounded as
    /// a few long ones are.
    #[test]
    fn a_budget_counts_each_thoughts_fields() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("many")).unwrap();
        for _ in 0..20 {
            let input = ThoughtInput::text("x".to_string());
            store.append_thought(Target::Session(s.id.clone()), input).unwrap();
        }
        let (_, read, whole) = store.session_cut(&s.id, Some(10 * JSON_PER_THOUGHT)).unwrap();
        assert!(!whole);
        assert_eq!(read.len(), 10);
    }
}
