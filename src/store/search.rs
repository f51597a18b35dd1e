//! Full-text search with FTS5.
//!
//! Thought text is indexed off the append path: [`Store::index_pending`]
//! copies thoughts newer than the `thoughts_fts_state` watermark into the
//! index in batches, and every search first indexes whatever is pending, so
//! a search sees every thought acknowledged before it.
//!
//! Ranking: bm25 over a bounded candidate set, the newest
//! [`CANDIDATES`] matching thoughts. A rare term therefore gets an exact
//! bm25 ranking; a term found in a million thoughts costs the same as one
//! found in a thousand, and recent reasoning wins over old.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};
use serde::Serialize;

use super::Store;
use super::sessions::{SESSION_COLUMNS, session_from_row};
use crate::domain::Session;
use crate::error::Result;

/// How many of the newest matching thoughts are ranked by bm25.
pub const CANDIDATES: i64 = 1000;

/// Turn user text into an FTS5 query that matches all its words. Every word
/// is quoted, so no input can be read as FTS syntax. `None` when the text has
/// no letters or digits.
pub fn fts_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\""))
        .collect();
    if words.is_empty() { None } else { Some(words.join(" ")) }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThoughtHit {
    pub session_id: String,
    pub thought_number: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
    pub node_id: String,
    pub snippet: String,
    pub score: f64,
}

/// One session in a search answer, with the thoughts that matched.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHits {
    pub session: Session,
    /// The session's title, description or tags matched.
    pub matched_session: bool,
    pub matches: Vec<ThoughtHit>,
    pub score: f64,
}

pub type SearchHit = ThoughtHit;

impl Store {
    /// Index up to `max_rows` thoughts not yet in the full-text index.
    /// Returns how many were indexed.
    pub fn index_pending(&self, max_rows: i64) -> Result<usize> {
        let pending = self.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT (SELECT indexed_through FROM thoughts_fts_state WHERE id = 1) < COALESCE((SELECT MAX(id) FROM thoughts), 0)",
                )?
                .query_row([], |r| r.get::<_, bool>(0))?)
        })?;
        if !pending {
            return Ok(0);
        }
        self.write(|tx| {
            let from: i64 = tx.query_row("SELECT indexed_through FROM thoughts_fts_state WHERE id = 1", [], |r| r.get(0))?;
            let through: Option<i64> = tx
                .prepare_cached(
                    "SELECT MAX(id) FROM (SELECT id FROM thoughts WHERE id > ?1 ORDER BY id LIMIT ?2)",
                )?
                .query_row(params![from, max_rows], |r| r.get(0))?;
            let Some(through) = through else { return Ok(0) };
            let n = tx
                .prepare_cached(
                    "INSERT INTO thoughts_fts (rowid, thought) SELECT id, thought FROM thoughts WHERE id > ?1 AND id <= ?2",
                )?
                .execute(params![from, through])?;
            tx.execute("UPDATE thoughts_fts_state SET indexed_through = ?1 WHERE id = 1", [through])?;
            Ok(n)
        })
    }

    /// Index everything pending, in batches.
    pub fn index_all_pending(&self) -> Result<usize> {
        let mut total = 0;
        loop {
            let n = self.index_pending(2000)?;
            total += n;
            if n == 0 {
                return Ok(total);
            }
        }
    }

    /// Thoughts matching all words of `text`, best first.
    pub fn search_thoughts(&self, text: &str, limit: u32, session_id: Option<&str>) -> Result<Vec<ThoughtHit>> {
        let Some(q) = fts_query(text) else {
            return Ok(Vec::new());
        };
        self.index_all_pending()?;
        self.read(|tx| {
            // The rowid of the CANDIDATES-th newest match bounds the ranked set.
            let cutoff: i64 = match session_id {
                None => tx
                    .prepare_cached(
                        "SELECT rowid FROM thoughts_fts WHERE thoughts_fts MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2",
                    )?
                    .query_row(params![q, CANDIDATES - 1], |r| r.get(0))
                    .optional()?
                    .unwrap_or(0),
                Some(_) => 0,
            };
            let ranked: Vec<(i64, f64)> = match session_id {
                None => tx
                    .prepare_cached(
                        "SELECT rowid, bm25(thoughts_fts) AS r FROM thoughts_fts
                         WHERE thoughts_fts MATCH ?1 AND rowid >= ?2 ORDER BY r, rowid DESC LIMIT ?3",
                    )?
                    .query_map(params![q, cutoff, limit], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?,
                Some(sid) => tx
                    .prepare_cached(
                        "SELECT f.rowid, bm25(thoughts_fts) AS r FROM thoughts_fts AS f
                         JOIN thoughts AS t ON t.id = f.rowid
                         WHERE thoughts_fts MATCH ?1 AND t.session_id = ?3 ORDER BY r, f.rowid DESC LIMIT ?2",
                    )?
                    .query_map(params![q, limit, sid], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<rusqlite::Result<_>>()?,
            };
            let mut snippet = tx.prepare_cached(
                "SELECT t.session_id, t.thought_number, t.branch_id, t.node_id,
                        snippet(thoughts_fts, 0, '[', ']', '...', 16)
                 FROM thoughts_fts JOIN thoughts AS t ON t.id = thoughts_fts.rowid
                 WHERE thoughts_fts MATCH ?1 AND thoughts_fts.rowid = ?2",
            )?;
            let mut hits = Vec::with_capacity(ranked.len());
            for (rowid, score) in ranked {
                if let Some(hit) = snippet
                    .query_row(params![q, rowid], |r| {
                        Ok(ThoughtHit {
                            session_id: r.get(0)?,
                            thought_number: r.get(1)?,
                            branch_id: r.get(2)?,
                            node_id: r.get(3)?,
                            snippet: r.get(4)?,
                            score: -score,
                        })
                    })
                    .optional()?
                {
                    hits.push(hit);
                }
            }
            Ok(hits)
        })
    }

    /// Sessions whose title, description or tags match all words of `text`, best first.
    pub fn search_session_fields(&self, text: &str, limit: u32) -> Result<Vec<(Session, f64)>> {
        let Some(q) = fts_query(text) else {
            return Ok(Vec::new());
        };
        let granularity = self.granularity();
        self.read(|tx| {
            let cols = SESSION_COLUMNS
                .split(", ")
                .map(|c| format!("s.{c}"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "SELECT {cols}, bm25(sessions_fts) AS r FROM sessions_fts JOIN sessions AS s ON s.seq = sessions_fts.rowid
                 WHERE sessions_fts MATCH ?1 ORDER BY r LIMIT ?2"
            );
            let rows = tx
                .prepare_cached(&sql)?
                .query_map(params![q, limit], |r| Ok((session_from_row(r, granularity)?, -r.get::<_, f64>(11)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok(rows)
        })
    }

    /// `session search`: sessions matching by their own fields or their
    /// thoughts, each with its matching thoughts (numbers and snippets).
    pub fn search(&self, text: &str, limit: u32) -> Result<Vec<SessionHits>> {
        let thought_hits = self.search_thoughts(text, limit.saturating_mul(5).max(20), None)?;
        let session_hits = self.search_session_fields(text, limit)?;
        let mut order: Vec<String> = Vec::new();
        let mut by_session: HashMap<String, SessionHits> = HashMap::new();
        for (session, score) in session_hits {
            order.push(session.id.clone());
            by_session.insert(
                session.id.clone(),
                SessionHits {
                    session,
                    matched_session: true,
                    matches: Vec::new(),
                    score,
                },
            );
        }
        for hit in thought_hits {
            if let Some(entry) = by_session.get_mut(&hit.session_id) {
                entry.score = entry.score.max(hit.score);
                entry.matches.push(hit);
                continue;
            }
            let session = match self.session(&hit.session_id) {
                Ok(s) => s,
                Err(e) if e.code() == "SESSION_NOT_FOUND" => continue,
                Err(e) => return Err(e),
            };
            order.push(session.id.clone());
            by_session.insert(
                session.id.clone(),
                SessionHits {
                    session,
                    matched_session: false,
                    score: hit.score,
                    matches: vec![hit],
                },
            );
        }
        let mut out: Vec<SessionHits> = order.into_iter().filter_map(|id| by_session.remove(&id)).collect();
        out.sort_by(|a, b| b.score.total_cmp(&a.score));
        out.truncate(limit as usize);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{NewSession, ThoughtInput};
    use crate::store::test_support::temp_store;

    #[test]
    fn user_text_never_becomes_fts_syntax() {
        assert_eq!(fts_query("NEAR( \"x\" *").as_deref(), Some("\"NEAR\" \"x\""));
        assert_eq!(fts_query("\" * ) ("), None);
        assert_eq!(fts_query("naïve café").as_deref(), Some("\"naïve\" \"café\""));
    }

    #[test]
    fn search_sees_unindexed_thoughts_and_deletes() {
        let (_d, store) = temp_store();
        let s = store
            .create_session(NewSession {
                title: "Cache design".into(),
                ..Default::default()
            })
            .unwrap();
        for text in ["redis would work", "memcached is simpler", "redis cluster costs"] {
            store
                .append_thought(
                    crate::store::Target::Session(s.id.clone()),
                    ThoughtInput {
                        thought: text.into(),
                        next_thought_needed: true,
                        ..Default::default()
                    },
                )
                .unwrap();
        }
        let hits = store.search_thoughts("redis", 10, None).unwrap();
        assert_eq!(hits.len(), 2);
        assert!(hits[0].snippet.contains("[redis]"));
        for q in ["\"", "*", "NEAR(", ")", "redis\" OR \"x"] {
            store.search(q, 10).unwrap();
        }
        let sessions = store.search("cache", 10).unwrap();
        assert_eq!(sessions.len(), 1);
        assert!(sessions[0].matched_session);
        store.delete_session(&s.id).unwrap();
        assert!(store.search_thoughts("redis", 10, None).unwrap().is_empty());
        // The index stays consistent after deleting indexed rows.
        let conn = store.conn().unwrap();
        conn.execute("INSERT INTO thoughts_fts (thoughts_fts) VALUES ('integrity-check')", [])
            .unwrap();
    }
}
