//! Full-text search with FTS5.
//!
//! Thought text is indexed off the append path: [`Store::index_pending`]
//! copies thoughts newer than the `thoughts_fts_state` watermark into the
//! index in batches, and every search first indexes whatever is pending, so
//! a search sees every thought acknowledged before it.
//!
//! Ranking: BM25 over a bounded candidate set, the newest [`CANDIDATES`]
//! matching thoughts, scored here rather than with FTS5's `bm25()`: that
//! function reads the whole posting list of every query word to count its
//! documents (about 30 ms for a word in a million thoughts), whatever the
//! candidate bound. Here each word's document count stops at [`rank::DF_CAP`]; a
//! word that common has an inverse document frequency near zero anyway. So a
//! search costs the same for a word found in a million thoughts as for one
//! found in a thousand; a rare word is ranked exactly; ties go to the newest.
//!
//! This file runs the searches; reading the query is in `query`, scoring
//! and picking in `rank`, keeping the index up to date in `index`.

mod index;
mod query;
mod rank;

use std::collections::HashMap;
use std::time::Duration;

use rusqlite::params;
use serde::Serialize;

use super::Store;
use super::sessions::{SESSION_COLUMNS, session_from_row};
use super::snippet::{QueryWords, best_snippet};
use crate::domain::Session;
use crate::error::Result;

use index::PENDING_SCAN;
pub use query::fts_query;
pub(crate) use query::{QueryPlan, query_phrases, query_words, unspaced};
use rank::{Pick, idfs, score_candidates};
pub(super) use rank::{Scorer, rescore};

/// How long a search waits for another program's write lock to index
/// what is pending, before reading the pending thoughts itself.
pub const SEARCH_INDEX_WAIT: Duration = Duration::from_millis(200);

/// Tokens in a search snippet.
pub(crate) const SNIPPET_TOKENS: usize = 16;

/// The most entries of a session's thoughts read to tell whether it has a
/// thought older than the ranked candidates (see [`Store::search_indexed`]).
const OLDER_PROBE: i64 = 1000;

/// How many of the newest matching thoughts are ranked.
pub const CANDIDATES: i64 = 1000;

struct Candidate {
    rowid: i64,
    session_id: String,
    thought_number: u32,
    branch_id: Option<String>,
    node_id: String,
    text: String,
}

fn candidate_from_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Candidate> {
    Ok(Candidate {
        rowid: r.get(0)?,
        session_id: r.get(1)?,
        thought_number: r.get(2)?,
        branch_id: r.get(3)?,
        node_id: r.get(4)?,
        text: r.get(5)?,
    })
}

/// How many of the newest thoughts a search for words of scripts written
/// without spaces reads (about 0.2 s here): older ones are not searched,
/// and the answer says it may have stopped short.
pub const TEXT_SCAN: i64 = 100_000;

/// A session's own searchable text (title, description, tags), for the
/// searches that read it rather than its index.
pub(crate) const SESSION_TEXT: &str = "(s.title || ' ' || coalesce(s.description, '') || ' ' || s.tags)";

/// The condition that the session whose id is `column` carries every tag
/// of a JSON array, the parameter `param` (a search restricted to a
/// project or tag: one lookup of the tag table's key per tag and row).
fn carries_tags(column: &str, param: &str) -> String {
    format!(
        "NOT EXISTS (SELECT 1 FROM json_each({param}) AS j WHERE NOT EXISTS
           (SELECT 1 FROM session_tags AS st WHERE st.tag = j.value AND st.session_id = {column}))"
    )
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThoughtHit {
    /// Not in answers: the session the hit is listed under says it.
    #[serde(skip)]
    pub session_id: String,
    pub thought_number: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
    pub node_id: String,
    pub snippet: String,
    pub score: f64,
    /// The thoughts revising this one (see `Store::revised_by_nodes`): a match
    /// in a thought since corrected says so.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub revised_by: Vec<u32>,
}

/// One session in a search answer, with the thoughts that matched.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHits {
    /// Flattened: a search item has the same session fields as a list item
    /// (`id`, `title`, ... at its top level), plus its matches and score.
    #[serde(flatten)]
    pub session: Session,
    /// The session's title, description or tags matched.
    pub matched_session: bool,
    pub matches: Vec<ThoughtHit>,
    /// Matches of this session left out of `matches` by the per-session
    /// limit (the gateway's `matchesPerSession`), counted among the ranked
    /// candidates: absent when none were, unless the count is a lower bound.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more_matches: Option<usize>,
    /// `more_matches` is a lower bound: the ranking looked at the newest
    /// [`CANDIDATES`] matches only, and this session has older thoughts,
    /// which may match too (even when `more_matches` is 0).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub more_matches_at_least: bool,
    pub score: f64,
}

pub type SearchHit = ThoughtHit;

/// The thought matches of a search, as a [`Pick`] kept them.
#[derive(Default)]
struct ThoughtSearch {
    hits: Vec<ThoughtHit>,
    /// Whether matches were left out that could change which sessions are
    /// found: of sessions not picked, or older than the ranked candidates.
    more: bool,
    /// `Pick::Sessions`: each picked session's matches among the ranked
    /// candidates, shown or not.
    counts: HashMap<String, usize>,
    /// Matches in thoughts older than this id (rowid) may be missing from
    /// the candidates: the ranking stopped at its bound, or the text scan
    /// at its window. `None`: every match was ranked, so the counts are
    /// exact.
    older_missing: Option<i64>,
}

impl Store {
    /// Thoughts matching all words of `text`, best first: BM25 over the
    /// newest [`CANDIDATES`] matches (see the module comment).
    pub fn search_thoughts(&self, text: &str, limit: u32) -> Result<Vec<ThoughtHit>> {
        self.index_before_search()?;
        Ok(self
            .search_thoughts_indexed(text, Pick::Best(limit as usize), CANDIDATES, None)?
            .hits)
    }

    /// [`Store::search_thoughts`] for a caller that has just indexed
    /// whatever was pending itself (the server does, on its writer thread),
    /// ranking the newest `bound` matches and picking hits as `pick` says;
    /// with `within` (a JSON array of tags), of sessions carrying them all.
    fn search_thoughts_indexed(
        &self,
        text: &str,
        pick: Pick<'_>,
        bound: i64,
        within: Option<&str>,
    ) -> Result<ThoughtSearch> {
        let plan = QueryPlan::of(text);
        if plan.is_empty() {
            return Ok(ThoughtSearch::default());
        }
        let words = query_words(text);
        self.read(|tx| {
            const COLUMNS: &str = "t.id, t.session_id, t.thought_number, t.branch_id, t.node_id, t.thought";
            // Matches older than this thought id may be missing from the
            // candidates (see ThoughtSearch::older_missing).
            let mut older_missing: Option<i64> = None;
            let mut candidates: Vec<Candidate> = if plan.texts.is_empty() {
                let found: Vec<Candidate> = match within {
                    None => tx
                        .prepare_cached(&format!(
                            "SELECT {COLUMNS} FROM thoughts AS t
                             WHERE t.id IN (SELECT rowid FROM thoughts_fts WHERE thoughts_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2)"
                        ))?
                        .query_map(params![plan.fts, bound], candidate_from_row)?
                        .collect::<rusqlite::Result<_>>()?,
                    // The index's matches, newest first, each kept when its
                    // session carries the tags, until `bound` are kept.
                    Some(tags) => tx
                        .prepare_cached(&format!(
                            "SELECT {COLUMNS} FROM thoughts_fts AS f CROSS JOIN thoughts AS t ON t.id = f.rowid
                             WHERE f.thoughts_fts MATCH ?1 AND {} ORDER BY f.rowid DESC LIMIT ?2",
                            carries_tags("t.session_id", "?3")
                        ))?
                        .query_map(params![plan.fts, bound, tags], candidate_from_row)?
                        .collect::<rusqlite::Result<_>>()?,
                };
                if found.len() as i64 >= bound {
                    older_missing = found.iter().map(|c| c.rowid).min();
                }
                found
            } else {
                // Words the index cannot find inside a run of letters: the
                // newest thoughts holding their text (and the index's
                // words, if any), indexed or not.
                let newest: i64 = tx.query_row("SELECT coalesce(max(id), 0) FROM thoughts", [], |r| r.get(0))?;
                let from = newest - TEXT_SCAN;
                let (mut clauses, mut texts) = plan.conditions("t.thought", "t.id", "thoughts_fts");
                if let Some(tags) = within {
                    clauses.push(carries_tags("t.session_id", "?"));
                    texts.push(tags.to_string());
                }
                let sql = format!(
                    "SELECT {COLUMNS} FROM thoughts AS t WHERE t.id > ? AND {} ORDER BY t.id DESC LIMIT ?",
                    clauses.join(" AND ")
                );
                let mut values: Vec<rusqlite::types::Value> = vec![from.into()];
                values.extend(texts.into_iter().map(Into::into));
                values.push(bound.into());
                let found: Vec<Candidate> = tx
                    .prepare(&sql)?
                    .query_map(rusqlite::params_from_iter(values), candidate_from_row)?
                    .collect::<rusqlite::Result<_>>()?;
                if found.len() as i64 >= bound {
                    older_missing = found.iter().map(|c| c.rowid).min();
                } else if from > 0 {
                    // The thoughts before the scan were not read.
                    older_missing = Some(from + 1);
                }
                found
            };
            // Thoughts not in the index yet (another program's write lock
            // kept it from catching up): read here, newest first, and kept
            // when they hold every word, as the index would match them.
            if plan.fts.is_some() {
                let scan = if self.may_write() { PENDING_SCAN } else { -1 };
                let restricted = within.map(|_| format!("AND {}", carries_tags("t.session_id", "?2")));
                let mut values: Vec<rusqlite::types::Value> = vec![scan.into()];
                values.extend(within.map(|tags| tags.to_string().into()));
                let pending = tx
                    .prepare_cached(&format!(
                        "SELECT {COLUMNS} FROM thoughts AS t
                         WHERE t.id > (SELECT indexed_through FROM thoughts_fts_state WHERE id = 1) {}
                         ORDER BY t.id DESC LIMIT ?1",
                        restricted.unwrap_or_default()
                    ))?
                    .query_map(rusqlite::params_from_iter(values), candidate_from_row)?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                // Pending thoughts older than those read were not looked
                // at; every indexed candidate is older than any of them.
                if scan > 0 && pending.len() as i64 >= scan {
                    older_missing = pending.iter().map(|c| c.rowid).min().max(older_missing);
                }
                let seen: std::collections::HashSet<i64> = candidates.iter().map(|c| c.rowid).collect();
                candidates.extend(
                    pending
                        .into_iter()
                        .filter(|c| !seen.contains(&c.rowid) && plan.holds(&c.text)),
                );
            }
            if candidates.is_empty() {
                return Ok(ThoughtSearch {
                    older_missing,
                    more: older_missing.is_some(),
                    ..Default::default()
                });
            }
            let idf = idfs(tx, &words, "SELECT COALESCE(MAX(id), 0) FROM thoughts", "thoughts_fts")?;
            let scored = score_candidates(&candidates, &QueryWords::new(&words), &idf);
            let picked = pick.apply(scored, |i| candidates[i].session_id.as_str());
            let mut hits = Vec::with_capacity(picked.entries.len());
            for (i, score) in picked.entries {
                let c = &candidates[i];
                hits.push(ThoughtHit {
                    session_id: c.session_id.clone(),
                    thought_number: c.thought_number,
                    branch_id: c.branch_id.clone(),
                    node_id: c.node_id.clone(),
                    snippet: best_snippet(&[&c.text], &words, SNIPPET_TOKENS),
                    score,
                    revised_by: Vec::new(),
                });
            }
            Ok(ThoughtSearch {
                hits,
                more: picked.more || older_missing.is_some(),
                counts: picked.counts,
                older_missing,
            })
        })
    }

    /// Sessions whose title, description or tags match all words of `text`,
    /// best first: the newest [`CANDIDATES`] of them ranked, as thoughts are
    /// (a word in most sessions' descriptions had FTS5 score every one of
    /// them: 25 ms a search at 16,000 sessions, growing).
    pub fn search_session_fields(&self, text: &str, limit: u32) -> Result<Vec<(Session, f64)>> {
        self.search_session_fields_within(text, limit, None)
    }

    /// [`Store::search_session_fields`]; with `within` (a JSON array of
    /// tags), of sessions carrying them all.
    fn search_session_fields_within(
        &self,
        text: &str,
        limit: u32,
        within: Option<&str>,
    ) -> Result<Vec<(Session, f64)>> {
        let plan = QueryPlan::of(text);
        if plan.is_empty() {
            return Ok(Vec::new());
        }
        let granularity = self.granularity();
        self.read(|tx| {
            let cols = SESSION_COLUMNS
                .split(", ")
                .map(|c| format!("s.{c}"))
                .collect::<Vec<_>>()
                .join(", ");
            let rows = if plan.texts.is_empty() {
                // Restricted, the newest matches carrying the tags (the
                // limit after the restriction, not before).
                let sql = match within {
                    None => format!(
                        "SELECT {cols} FROM sessions AS s
                         WHERE s.seq IN (SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ?1 ORDER BY rowid DESC LIMIT ?2)
                         ORDER BY s.seq DESC"
                    ),
                    Some(_) => format!(
                        "SELECT {cols} FROM sessions AS s
                         WHERE s.seq IN (SELECT rowid FROM sessions_fts WHERE sessions_fts MATCH ?1) AND {}
                         ORDER BY s.seq DESC LIMIT ?2",
                        carries_tags("s.id", "?3")
                    ),
                };
                let mut values: Vec<rusqlite::types::Value> = vec![plan.fts.clone().into(), CANDIDATES.into()];
                if let Some(tags) = within {
                    values.push(tags.to_string().into());
                }
                tx.prepare_cached(&sql)?
                    .query_map(rusqlite::params_from_iter(values), |r| session_from_row(r, granularity))?
                    .collect::<rusqlite::Result<Vec<Session>>>()?
            } else {
                // Words of scripts written without spaces: by their text,
                // newest sessions first (sessions are few beside thoughts).
                let (mut clauses, mut texts) = plan.conditions(SESSION_TEXT, "s.seq", "sessions_fts");
                if let Some(tags) = within {
                    clauses.push(carries_tags("s.id", "?"));
                    texts.push(tags.to_string());
                }
                let sql = format!(
                    "SELECT {cols} FROM sessions AS s WHERE {} ORDER BY s.seq DESC LIMIT ?",
                    clauses.join(" AND ")
                );
                let mut values: Vec<rusqlite::types::Value> = texts.into_iter().map(Into::into).collect();
                values.push(CANDIDATES.into());
                tx.prepare(&sql)?
                    .query_map(rusqlite::params_from_iter(values), |r| session_from_row(r, granularity))?
                    .collect::<rusqlite::Result<Vec<Session>>>()?
            };
            if rows.is_empty() {
                return Ok(Vec::new());
            }
            // Scored as thoughts are (FTS5's own bm25 floors the weight of a
            // word most sessions hold at 1e-6, so that a title match ranked
            // below any passing mention in a thought).
            let texts: Vec<String> = rows
                .iter()
                .map(|s| {
                    format!(
                        "{} {} {}",
                        s.title,
                        s.description.as_deref().unwrap_or_default(),
                        s.tags.join(" ")
                    )
                })
                .collect();
            let scores = rescore(tx, text, &texts, "SELECT coalesce(max(seq), 0) FROM sessions", "sessions_fts")?;
            // Best first; ties go to the newest (the order read).
            let mut ranked: Vec<(Session, f64)> = rows.into_iter().zip(scores).collect();
            ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
            ranked.truncate(limit as usize);
            Ok(ranked)
        })
    }

    /// `session search`: sessions matching by their own fields or their
    /// thoughts, each with its best `per_session` matching thoughts
    /// (numbers and snippets) and how many it has besides. Also answers
    /// whether sessions may have been left out (see [`Store::search_indexed`]).
    pub fn search(&self, text: &str, limit: u32, per_session: u32) -> Result<(Vec<SessionHits>, bool)> {
        self.index_before_search()?;
        self.search_indexed(text, limit, per_session)
    }

    /// [`Store::search`] without indexing first: for a caller that has just
    /// indexed whatever was pending itself. Also answers whether sessions
    /// may have been left out (more matched than `limit`, or than the
    /// ranking looks at).
    pub fn search_indexed(&self, text: &str, limit: u32, per_session: u32) -> Result<(Vec<SessionHits>, bool)> {
        self.search_within(text, limit, per_session, CANDIDATES, None)
    }

    /// [`Store::search`] among the sessions carrying every one of `tags`
    /// (the Observatory's search with a project or tag chosen): the same
    /// matches, thought text included, and the same ranking.
    pub fn search_tagged(
        &self,
        text: &str,
        tags: &[String],
        limit: u32,
        per_session: u32,
    ) -> Result<(Vec<SessionHits>, bool)> {
        self.index_before_search()?;
        let within = (!tags.is_empty())
            .then(|| serde_json::to_string(tags))
            .transpose()
            .map_err(|e| crate::Error::Internal(e.to_string()))?;
        self.search_within(text, limit, per_session, CANDIDATES, within.as_deref())
    }

    /// [`Store::search_indexed`] ranking the newest `bound` matching
    /// thoughts; with `within` (a JSON array of tags), of sessions carrying
    /// them all.
    fn search_within(
        &self,
        text: &str,
        limit: u32,
        per_session: u32,
        bound: i64,
        within: Option<&str>,
    ) -> Result<(Vec<SessionHits>, bool)> {
        // One more than asked for, to know whether there are more.
        let mut session_hits = self.search_session_fields_within(text, limit.saturating_add(1), within)?;
        let more_sessions = session_hits.len() > limit as usize;
        session_hits.truncate(limit as usize);
        // The best thoughts of the `limit` sessions with the best thoughts,
        // and of the sessions matching by their own fields: a session with
        // many strong matches does not crowd out the rest, and a session
        // listed for its title still shows its matching thoughts.
        let keep: Vec<String> = session_hits.iter().map(|(s, _)| s.id.clone()).collect();
        let pick = Pick::Sessions {
            sessions: limit as usize,
            per_session: per_session as usize,
            keep: &keep,
        };
        let found = self.search_thoughts_indexed(text, pick, bound, within)?;
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
                    more_matches: None,
                    more_matches_at_least: false,
                    score,
                },
            );
        }
        for hit in found.hits {
            if let Some(entry) = by_session.get_mut(&hit.session_id) {
                entry.score = entry.score.max(hit.score);
                entry.matches.push(hit);
                continue;
            }
            let session = match self.session(&hit.session_id) {
                Ok(s) => s,
                Err(crate::Error::SessionNotFound { .. }) => continue,
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
                    more_matches: None,
                    more_matches_at_least: false,
                },
            );
        }
        let mut out: Vec<SessionHits> = order.into_iter().filter_map(|id| by_session.remove(&id)).collect();
        out.sort_by(|a, b| b.score.total_cmp(&a.score));
        let more = found.more || more_sessions || out.len() > limit as usize;
        out.truncate(limit as usize);
        // Where the ranking stopped short of every match, a session whose
        // thoughts are all newer than where it stopped was still counted
        // whole; another may have more matches than counted. No index
        // orders a session's thoughts by id, so proving that none is older
        // reads the session's entries of the chain index: at most
        // OLDER_PROBE of them for each session answered (at most 100), and
        // a session larger than that, with none older among them, counts
        // as "at least" too (a whole probe of a 300,000-thought session
        // took 36 ms).
        if let Some(below) = found.older_missing {
            self.read(|tx| {
                let mut older = tx.prepare_cached(
                    "SELECT coalesce(max(id < ?2), 0) OR count(*) >= ?3
                     FROM (SELECT id FROM thoughts WHERE session_id = ?1 LIMIT ?3)",
                )?;
                for entry in &mut out {
                    entry.more_matches_at_least =
                        older.query_row(params![entry.session.id, below, OLDER_PROBE], |r| r.get::<_, bool>(0))?;
                }
                Ok(())
            })?;
        }
        for entry in &mut out {
            let counted = found.counts.get(&entry.session.id).copied().unwrap_or(0);
            let left_out = counted.saturating_sub(entry.matches.len());
            if left_out > 0 || entry.more_matches_at_least {
                entry.more_matches = Some(left_out);
            }
            if entry.matches.is_empty() {
                continue;
            }
            let revised_by =
                self.revised_by_nodes(&entry.session.id, entry.matches.iter().map(|h| h.node_id.as_str()))?;
            for hit in &mut entry.matches {
                if let Some(by) = revised_by.get(&hit.node_id) {
                    hit.revised_by = by.clone();
                }
            }
        }
        Ok((out, more))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{NewSession, ThoughtInput};
    use crate::store::test_support::temp_store;

    /// On a full disk the index cannot grow, and a search reads the pending
    /// thoughts itself rather than failing (a disk fills during a burst,
    /// which leaves the last thoughts pending). `max_page_count` makes the
    /// file "full" here.
    #[test]
    fn a_search_on_a_full_disk_reads_pending_thoughts_itself() {
        use crate::store::Target;
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("full")).unwrap();
        store.index_pending(1000).unwrap();
        for i in 0..200 {
            let input = ThoughtInput::text(format!("pending{i} words {}", "y".repeat(400)));
            store.append_thought(Target::Session(s.id.clone()), input).unwrap();
        }
        // Every pooled connection at once, so that each gets the limit.
        let conns: Vec<_> = (0..store.pool.max_size()).map(|_| store.conn().unwrap()).collect();
        for c in &conns {
            let pages: i64 = c.query_row("PRAGMA page_count", [], |r| r.get(0)).unwrap();
            c.query_row(&format!("PRAGMA max_page_count = {pages}"), [], |_| Ok(()))
                .unwrap();
        }
        drop(conns);
        let e = store.index_pending(1000).unwrap_err();
        assert!(e.is_file_system_refusal(), "{e}");
        assert!(e.to_string().contains("nothing was written"), "{e}");
        assert_eq!(store.search_thoughts("pending199", 10).unwrap().len(), 1);
        assert_eq!(store.search_thoughts("words", 300).unwrap().len(), 200);
    }

    /// Restricted to a project or tag, a search finds what it finds
    /// without, among those sessions only: thought text included, and
    /// words of scripts written without spaces.
    #[test]
    fn a_search_within_tags_matches_thought_text_of_those_sessions_only() {
        use crate::store::Target;
        let (_d, store) = temp_store();
        let session = |title: &str, tags: &[&str]| {
            let new = NewSession {
                title: title.into(),
                tags: tags.iter().map(|t| t.to_string()).collect(),
                ..Default::default()
            };
            store.create_session(new).unwrap().id
        };
        let add = |id: &str, text: &str| {
            let input = ThoughtInput::text(text.to_string());
            store.append_thought(Target::Session(id.to_string()), input).unwrap();
        };
        let web = session("Cache design", &["project:web", "caching"]);
        add(&web, "eviction by age 数据库");
        let api = session("Other", &["project:api"]);
        add(&api, "eviction by size 数据库");
        let titled = session("Eviction notes", &["project:web"]);
        let tags = |t: &[&str]| t.iter().map(|t| t.to_string()).collect::<Vec<_>>();
        let found = |text: &str, t: &[&str]| {
            let (hits, more) = store.search_tagged(text, &tags(t), 10, 3).unwrap();
            assert!(!more);
            let mut ids: Vec<String> = hits.into_iter().map(|h| h.session.id).collect();
            ids.sort();
            ids
        };
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        assert_eq!(found("eviction", &[]).len(), 3);
        assert_eq!(
            found("eviction", &["project:web"]),
            sorted(vec![web.clone(), titled.clone()])
        );
        assert_eq!(found("eviction", &["project:api"]), vec![api.clone()]);
        assert_eq!(found("eviction", &["project:web", "caching"]), vec![web.clone()]);
        assert!(found("eviction", &["project:none"]).is_empty());
        assert_eq!(found("数据库", &["project:api"]), vec![api.clone()]);
        // Thoughts recorded since the last search are found too.
        add(&api, "a walrus in the cache");
        add(&web, "another walrus");
        assert_eq!(found("walrus", &["project:api"]), vec![api.clone()]);
        let (hits, _) = store.search_tagged("walrus", &tags(&["project:web"]), 10, 3).unwrap();
        assert!(hits[0].matches[0].snippet.contains("walrus"), "{:?}", hits[0].matches);
    }

    /// A session with many strong matches does not crowd out one with a
    /// single match (else the older session goes missing with `limitReached`
    /// false), and whether sessions were left out is told.
    #[test]
    fn every_matching_session_is_found_and_a_cut_is_told() {
        use crate::store::Target;
        let (_d, store) = temp_store();
        let add = |session: &str, text: String| {
            let input = ThoughtInput::text(text);
            store
                .append_thought(Target::Session(session.to_string()), input)
                .unwrap();
        };
        let older = store.create_session(NewSession::titled("Older")).unwrap();
        add(&older.id, "a cache invalidation idea".into());
        let newer = store.create_session(NewSession::titled("Newer")).unwrap();
        for i in 0..50 {
            add(&newer.id, format!("cache step {i}"));
        }
        let (found, more) = store.search_indexed("cache", 10, 20).unwrap();
        let titles: Vec<&str> = found.iter().map(|h| h.session.title.as_str()).collect();
        assert_eq!(titles.len(), 2, "{titles:?}");
        assert!(titles.contains(&"Older") && titles.contains(&"Newer"));
        assert!(!more);
        // The newer session still brings its further matches, best first,
        // and counts the rest.
        let newer = found.iter().find(|h| h.session.title == "Newer").unwrap();
        assert_eq!(newer.matches.len(), 20);
        assert_eq!(newer.more_matches, Some(30));
        assert!(newer.matches.windows(2).all(|w| w[0].score >= w[1].score));
        // Room for one session: the other is left out, and that is said.
        let (found, more) = store.search_indexed("cache", 1, 5).unwrap();
        assert_eq!(found.len(), 1);
        assert!(more);
        // Sessions matching by title count too.
        let (found, more) = store.search_indexed("older", 1, 5).unwrap();
        assert_eq!(found.len(), 1);
        assert!(!more);
    }

    /// Appends one thought with `text` to `session`.
    fn add(store: &Store, session: &str, text: &str) {
        let input = ThoughtInput::text(text);
        store
            .append_thought(crate::store::Target::Session(session.to_string()), input)
            .unwrap();
    }

    /// One session with 120 matches and one with 3: a pool of max(20, 5 ×
    /// limit) matches shared by all sessions would answer 5 of the 120 with
    /// 42 more, or 47 of them with none said to be missing, so each session
    /// keeps its own best matches, and counts every other.
    #[test]
    fn each_session_keeps_its_best_matches_and_counts_the_rest() {
        let (_d, store) = temp_store();
        let big = store.create_session(NewSession::titled("big")).unwrap();
        for i in 0..120 {
            add(&store, &big.id, &format!("walrus sighting {i}"));
        }
        let small = store.create_session(NewSession::titled("small")).unwrap();
        for i in 0..3 {
            add(&store, &small.id, &format!("a walrus, once more {i}"));
        }
        let shown = |limit: u32, per_session: u32| {
            let (found, more) = store.search("walrus", limit, per_session).unwrap();
            let mut out: Vec<(String, usize, Option<usize>, bool)> = found
                .iter()
                .map(|h| {
                    (
                        h.session.title.clone(),
                        h.matches.len(),
                        h.more_matches,
                        h.more_matches_at_least,
                    )
                })
                .collect();
            out.sort();
            (out, more)
        };
        let row = |title: &str, n: usize, more: Option<usize>| (title.to_string(), n, more, false);
        assert_eq!(
            shown(10, 5),
            (vec![row("big", 5, Some(115)), row("small", 3, None)], false)
        );
        assert_eq!(
            shown(10, 100),
            (vec![row("big", 100, Some(20)), row("small", 3, None)], false)
        );
        assert_eq!(
            shown(2, 100),
            (vec![row("big", 100, Some(20)), row("small", 3, None)], false)
        );
        // One session: the other one's matches are left out, and that is said.
        let (found, more) = store.search("walrus", 1, 5).unwrap();
        assert_eq!((found.len(), more), (1, true));
    }

    /// When more thoughts match than the ranking looks at, a session's count
    /// is a lower bound, and says so, unless every thought of the session is
    /// newer than the oldest one ranked; the answer says sessions may be
    /// missing. A bound of 50 stands in for CANDIDATES.
    #[test]
    fn counts_past_the_ranked_candidates_are_lower_bounds() {
        let (_d, store) = temp_store();
        // Matches by its title, with two matching thoughts older than any ranked.
        let titled = store.create_session(NewSession::titled("walrus notes")).unwrap();
        add(&store, &titled.id, "a walrus in the notes");
        add(&store, &titled.id, "another walrus in the notes");
        let old = store.create_session(NewSession::titled("old")).unwrap();
        for i in 0..100 {
            add(&store, &old.id, &format!("walrus sighting {i}"));
        }
        let new = store.create_session(NewSession::titled("new")).unwrap();
        for i in 0..30 {
            add(&store, &new.id, &format!("walrus seen again {i}"));
        }
        store.index_all_pending().unwrap();
        let (found, more) = store.search_within("walrus", 10, 5, 50, None).unwrap();
        assert!(more);
        let of = |title: &str| found.iter().find(|h| h.session.title == title).unwrap();
        // The newest 50 matches: the 30 of "new" and 20 of "old".
        let old = of("old");
        assert_eq!(
            (old.matches.len(), old.more_matches, old.more_matches_at_least),
            (5, Some(15), true)
        );
        let new = of("new");
        assert_eq!(
            (new.matches.len(), new.more_matches, new.more_matches_at_least),
            (5, Some(25), false)
        );
        let titled = of("walrus notes");
        assert!(titled.matched_session);
        assert_eq!(
            (titled.matches.len(), titled.more_matches, titled.more_matches_at_least),
            (0, Some(0), true)
        );
        // Within the bound, every count is exact again.
        let (found, more) = store.search_within("walrus", 10, 5, 1000, None).unwrap();
        assert!(!more);
        assert!(found.iter().all(|h| !h.more_matches_at_least));
        let old = found.iter().find(|h| h.session.title == "old").unwrap();
        assert_eq!(old.more_matches, Some(95));
        let titled = found.iter().find(|h| h.session.title == "walrus notes").unwrap();
        assert_eq!((titled.matches.len(), titled.more_matches), (2, None));
    }

    /// While another program holds the write lock (a `sqlite3` shell inside
    /// `BEGIN IMMEDIATE`), pending thoughts cannot be indexed: a search reads
    /// them itself rather than failing after the busy timeout.
    #[test]
    fn search_reads_pending_thoughts_when_it_cannot_index_them() {
        use crate::domain::{NewSession, ThoughtInput};
        use crate::store::Target;
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("locked")).unwrap();
        for text in [
            "indexed cache note",
            "The Café cache, pending",
            "unrelated pending text",
            "my re\u{301}sume\u{301}, мой дом",
        ] {
            store
                .append_thought(Target::Session(s.id.clone()), ThoughtInput::text(text))
                .unwrap();
            if text.starts_with("indexed") {
                store.index_all_pending().unwrap();
            }
        }
        let shell = rusqlite::Connection::open(store.path()).unwrap();
        shell.execute_batch("BEGIN IMMEDIATE").unwrap();
        let hits = store.search_thoughts("cafe cache", 10).unwrap();
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(hits[0].thought_number, 2);
        assert!(hits[0].snippet.contains("[Café] [cache]"), "{}", hits[0].snippet);
        assert_eq!(store.search_thoughts("cache", 10).unwrap().len(), 2);
        assert_eq!(store.search("pending", 10, 5).unwrap().0[0].matches.len(), 2);
        // Matched as the index would: a decomposed accent stays in its word,
        // and Cyrillic accents are kept.
        assert_eq!(store.search_thoughts("resume", 10).unwrap().len(), 1);
        assert!(store.search_thoughts("sume", 10).unwrap().is_empty());
        assert!(store.search_thoughts("мои", 10).unwrap().is_empty());
        assert_eq!(store.search_thoughts("мой", 10).unwrap().len(), 1);
        shell.execute_batch("ROLLBACK").unwrap();
        // Once the lock is gone, the next search indexes them.
        store.search_thoughts("cache", 10).unwrap();
        let pending: i64 = store
            .conn()
            .unwrap()
            .query_row(
                "SELECT count(*) FROM thoughts WHERE id > (SELECT indexed_through FROM thoughts_fts_state)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(pending, 0);
    }

    /// Versions, identifiers and quoted spans match as phrases, in the index
    /// and among thoughts not indexed yet alike; a query typed with separate
    /// accents finds its word.
    #[test]
    fn joined_and_quoted_words_match_in_order() {
        use crate::store::Target;
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("phrases")).unwrap();
        let texts = [
            "bump serde to 1.2.3 today",
            "serde 3.2.1 broke the build (see 1 and 2)",
            "invalidation of the cache is hard",
            "cache invalidation, again",
            "read user_id from the token; the user has an id",
            "my résumé",
            "we moved the queue from redis to kafka",
            "Ελληνικα\u{301} and \u{1103}\u{1166}\u{110b}\u{1175}\u{1110}\u{1165} stored decomposed",
        ];
        for text in texts {
            store
                .append_thought(Target::Session(s.id.clone()), ThoughtInput::text(text))
                .unwrap();
        }
        let numbers = |q: &str| -> Vec<u32> {
            let mut n: Vec<u32> = store
                .search_thoughts(q, 10)
                .unwrap()
                .iter()
                .map(|h| h.thought_number)
                .collect();
            n.sort();
            n
        };
        let check = || {
            assert_eq!(numbers("1.2.3"), [1]);
            assert_eq!(numbers("serde 3.2.1"), [2]);
            assert_eq!(numbers("\"cache invalidation\""), [4]);
            assert_eq!(numbers("cache invalidation"), [3, 4]);
            assert_eq!(numbers("user_id"), [5]);
            assert_eq!(numbers("re\u{301}sume\u{301}"), [6]);
            // A list written without spaces is still a list.
            for q in ["kafka,redis", "redis/kafka", "queue:redis", "kafka+redis|queue"] {
                assert_eq!(numbers(q), [7], "{q}");
            }
            // Text stored decomposed (Greek accents and Korean jamo, which
            // the index keeps as stored) is found by a composed query.
            assert_eq!(numbers("Ελληνικά"), [8]);
            assert_eq!(numbers("데이터"), [8]);
        };
        // Not indexed yet, behind another program's write lock: read directly.
        let shell = rusqlite::Connection::open(store.path()).unwrap();
        shell.execute_batch("BEGIN IMMEDIATE").unwrap();
        check();
        shell.execute_batch("ROLLBACK").unwrap();
        store.index_all_pending().unwrap();
        check();
    }

    /// A word inside a run of Chinese, Japanese, Korean or Thai letters is
    /// one token to the index, which cannot find it: such words are found by
    /// their text, among thoughts indexed or not, in session fields and in
    /// the session list's filter; other words of the same query still go
    /// through the index.
    #[test]
    fn words_of_scripts_without_spaces_are_found_inside_runs() {
        use crate::domain::SessionFilter;
        use crate::store::Target;
        let (_d, store) = temp_store();
        let s = store
            .create_session(NewSession {
                description: Some("关于数据库设计的讨论".into()),
                ..NewSession::titled("设计会议")
            })
            .unwrap();
        let texts = [
            "我们讨论数据库设计",
            "Redisを使ってキャッシュする",
            "데이터베이스를 설계합니다",
            "ภาษาไทยไม่มีช่องว่าง",
            "cache 数据库 tuning",
            "unrelated english text",
        ];
        let add = |text: &str| {
            store
                .append_thought(Target::Session(s.id.clone()), ThoughtInput::text(text))
                .unwrap();
        };
        for text in texts {
            add(text);
        }
        store.index_all_pending().unwrap();
        let numbers = |q: &str| -> Vec<u32> {
            let mut n: Vec<u32> = store
                .search_thoughts(q, 10)
                .unwrap()
                .iter()
                .map(|h| h.thought_number)
                .collect();
            n.sort();
            n
        };
        assert_eq!(numbers("数据库"), [1, 5]);
        assert_eq!(numbers("キャッシュ"), [2]);
        assert_eq!(numbers("데이터베이스"), [3]);
        assert_eq!(numbers("ภาษาไทย"), [4]);
        assert_eq!(numbers("数据库 cache"), [5]);
        assert_eq!(numbers("数据库 missing"), Vec::<u32>::new());
        // The Latin words of a quoted span beside such words still go through
        // the index (whole words, any case).
        assert_eq!(numbers("\"CACHE 数据库\""), [5]);
        assert_eq!(numbers("\"cach 数据库\""), Vec::<u32>::new());
        // The snippet marks the word inside its run of letters.
        let hit = store.search_thoughts("数据库", 10).unwrap();
        assert!(
            hit.iter().any(|h| h.snippet.contains("我们讨论[数据库]设计")),
            "{:?}",
            hit
        );
        // Not indexed yet, behind another program's write lock.
        add("新的数据库 cache 想法");
        let shell = rusqlite::Connection::open(store.path()).unwrap();
        shell.execute_batch("BEGIN IMMEDIATE").unwrap();
        assert_eq!(numbers("数据库"), [1, 5, 7]);
        assert_eq!(numbers("数据库 cache"), [5, 7]);
        shell.execute_batch("ROLLBACK").unwrap();
        // The session's own fields, in session search and in the list filter.
        let hits = store.search_session_fields("数据库", 10).unwrap();
        assert_eq!(hits.len(), 1);
        assert!(hits[0].1 > 0.0);
        assert_eq!(store.search("会议", 10, 5).unwrap().0.len(), 1);
        let listed = |q: &str| {
            store
                .list_sessions(&SessionFilter {
                    search: Some(q.into()),
                    ..Default::default()
                })
                .unwrap()
                .total
        };
        assert_eq!(listed("会议"), 1);
        assert_eq!(listed("会议 nothing"), 0);
        assert_eq!(listed("!!"), 0);
    }

    /// A session matching by its title is scored as thoughts are: FTS5 gave
    /// ~1e-6 (its floor for a word most sessions hold), below any passing
    /// mention in a thought.
    #[test]
    fn a_title_match_is_scored_as_a_thought_match_is() {
        let (_d, store) = temp_store();
        for title in ["Kafka consumer lag", "kafka topics", "Weekly notes"] {
            store.create_session(NewSession::titled(title)).unwrap();
        }
        let hits = store.search_session_fields("kafka", 10).unwrap();
        assert_eq!(hits.len(), 2);
        for (session, score) in &hits {
            assert!(*score > 0.1, "{} {score}", session.title);
        }
        let hits = store.search_session_fields("kafka lag", 10).unwrap();
        assert_eq!(hits.len(), 1);
        assert!(hits[0].1 > 1.0, "{hits:?}");
    }

    /// Sessions matching by their own fields are ranked among the newest
    /// CANDIDATES of them, as thoughts are: a word in every session's
    /// description costs a bounded search, and the best of those comes first,
    /// ties to the newest.
    #[test]
    fn session_fields_are_ranked_among_the_newest_matches() {
        let (_d, store) = temp_store();
        let title = |i: i64| match i {
            // Three mentions: the best match, but older than the bound.
            0 => "kafka kafka kafka".to_string(),
            // Two: the best of the newest.
            500 => "kafka kafka lag".to_string(),
            i => format!("kafka note {i}"),
        };
        let ids: Vec<String> = (0..=CANDIDATES)
            .map(|i| store.create_session(NewSession::titled(title(i))).unwrap().id)
            .collect();
        let hits = store.search_session_fields("kafka", 3).unwrap();
        assert_eq!(hits.len(), 3);
        assert_eq!(hits[0].0.title, "kafka kafka lag", "{hits:?}");
        // Then the newest of the equal ones.
        assert_eq!(hits[1].0.id, ids[CANDIDATES as usize]);
        assert_eq!(hits[2].0.id, ids[CANDIDATES as usize - 1]);
        assert!(hits.iter().all(|(s, _)| s.id != ids[0]));
    }

    /// A store opened only to read (`thoughtbox sessions search`) finds the
    /// thoughts not indexed yet without indexing them: the file stays as it was.
    #[test]
    fn a_read_only_search_finds_pending_thoughts_and_writes_nothing() {
        use crate::domain::{NewSession, ThoughtInput};
        use crate::store::{Access, OpenOptionsStore, Target};
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("pending")).unwrap();
        store
            .append_thought(Target::Session(s.id.clone()), ThoughtInput::text("a zebra crossing"))
            .unwrap();
        // More pending thoughts than a search that may index reads itself,
        // all newer than the one that matches.
        store
            .conn()
            .unwrap()
            .execute(
                "WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < ?2 + 1)
                 INSERT INTO thoughts (session_id, node_id, thought_number, total_thoughts, thought,
                                       next_thought_needed, created_at)
                 SELECT ?1, ?1 || ':' || i, i, i, 'filler ' || i, 1, '2026-01-01T00:00:00.000Z' FROM n",
                (&s.id, PENDING_SCAN),
            )
            .unwrap();
        store.checkpoint().unwrap();
        let before = std::fs::read(store.path()).unwrap();
        let reader = Store::open(
            store.path(),
            OpenOptionsStore {
                access: Access::Read,
                ..Default::default()
            },
        )
        .unwrap();
        let (hits, _) = reader.search("zebra", 10, 5).unwrap();
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].matches.len(), 1);
        drop(reader);
        store.checkpoint().unwrap();
        assert_eq!(std::fs::read(store.path()).unwrap(), before);
    }

    #[test]
    fn search_sees_unindexed_thoughts_and_deletes() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("Cache design")).unwrap();
        for text in ["redis would work", "memcached is simpler", "redis cluster costs"] {
            store
                .append_thought(crate::store::Target::Session(s.id.clone()), ThoughtInput::text(text))
                .unwrap();
        }
        let hits = store.search_thoughts("redis", 10).unwrap();
        assert_eq!(hits.len(), 2);
        assert!(hits[0].snippet.contains("[redis]"));
        for q in ["\"", "*", "NEAR(", ")", "redis\" OR \"x"] {
            store.search(q, 10, 5).unwrap();
        }
        let (sessions, _) = store.search("cache", 10, 5).unwrap();
        assert_eq!(sessions.len(), 1);
        assert!(sessions[0].matched_session);
        store.delete_session(&s.id).unwrap();
        assert!(store.search_thoughts("redis", 10).unwrap().is_empty());
        // The index stays consistent after deleting indexed rows.
        let conn = store.conn().unwrap();
        conn.execute("INSERT INTO thoughts_fts (thoughts_fts) VALUES ('integrity-check')", [])
            .unwrap();
    }
}
