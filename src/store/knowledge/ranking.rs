//! Searching patterns and notes by text: each table's index and text, the
//! newest matches read and scored with BM25 and the server's word weights
//! as thoughts are ([`ranked_tx`]), and the hits with their snippets. Both
//! pattern searches (`search` and `list_patterns`) score through here, so
//! a pattern scores the same in either.

use rusqlite::Row;

use crate::error::Result;
use crate::knowledge::{KnowledgeHit, KnowledgeHits, KnowledgePattern, note_uri, pattern_uri};
use crate::store::search::{QueryPlan, SNIPPET_TOKENS, Scorer, query_words};
use crate::store::snippet::best_snippet;
use crate::store::{Store, Tx};

/// A pattern's text, all fields, as a search by text reads it.
pub(super) const PATTERN_TEXT: &str = "(p.title || ' ' || p.description || ' ' || p.tags || ' ' || p.content)";

/// A table the knowledge search reads: its index, its rows, the
/// description, tags and content a hit's snippet comes from, and all its
/// text as one expression.
pub(super) struct Searched {
    pub(super) fts: &'static str,
    pub(super) table: &'static str,
    pub(super) alias: &'static str,
    pub(super) fields: &'static str,
    pub(super) text: &'static str,
    pub(super) uri: fn(&str) -> String,
}

pub(super) const PATTERNS: Searched = Searched {
    fts: "knowledge_patterns_fts",
    table: "knowledge_patterns",
    alias: "p",
    // Tags as stored (a JSON array): [`ranked_from_row`] makes them words.
    fields: "p.description, p.tags, p.content",
    text: PATTERN_TEXT,
    uri: pattern_uri,
};

pub(super) const NOTES: Searched = Searched {
    fts: "scratchpad_notes_fts",
    table: "scratchpad_notes",
    alias: "n",
    fields: "'', '', n.content",
    text: "(n.title || ' ' || n.content)",
    uri: note_uri,
};

/// The snippet of a pattern found by a search: from whichever of its
/// fields holds the most of the query's words.
pub(super) fn pattern_snippet(p: &KnowledgePattern, words: &[String]) -> String {
    let tags = p.tags.join(" ");
    best_snippet(&[&p.title, &p.description, &tags, &p.content], words, SNIPPET_TOKENS)
}

/// A pattern or note found by a search, with the fields its score and
/// snippet come from.
pub(super) struct Ranked {
    pub(super) seq: i64,
    pub(super) id: String,
    pub(super) title: String,
    pub(super) description: String,
    pub(super) tags: String,
    pub(super) content: String,
}

pub(super) fn ranked_from_row(r: &Row<'_>) -> rusqlite::Result<Ranked> {
    Ok(Ranked {
        seq: r.get(0)?,
        id: r.get(1)?,
        title: r.get(2)?,
        description: r.get(3)?,
        tags: tag_words(&r.get::<_, String>(4)?),
        content: r.get(5)?,
    })
}

/// A pattern's tags (a JSON array) as words separated by spaces, as
/// SQLite's `group_concat` over `json_each` gives them (nulls left out;
/// only a hand edit stores tags that are not strings), read here: that
/// subquery was half the cost of reading a match (~3 ms per 1,000). Not an
/// array (a note has no tags): none.
pub(super) fn tag_words(json: &str) -> String {
    let Ok(tags) = serde_json::from_str::<Vec<serde_json::Value>>(json) else {
        return String::new();
    };
    let words: Vec<String> = tags
        .into_iter()
        .filter_map(|t| match t {
            serde_json::Value::String(s) => Some(s),
            serde_json::Value::Null => None,
            serde_json::Value::Bool(b) => Some(u8::from(b).to_string()),
            other => Some(other.to_string()),
        })
        .collect();
    words.join(" ")
}

/// The text a match is scored by: all its fields, as the index holds them
/// (tags as words). Both pattern searches build it here, so that a pattern
/// scores the same in either.
pub(super) fn scored_text(title: &str, description: &str, tags: &str, content: &str) -> String {
    format!("{title} {description} {tags} {content}")
}

impl Ranked {
    pub(super) fn text(&self) -> String {
        scored_text(&self.title, &self.description, &self.tags, &self.content)
    }
}

/// How many of a query's newest matches are read and ranked by score, as
/// thought search ranks its newest [`crate::store::search::CANDIDATES`]: reading
/// and scoring every match cost ~0.5 s for a word in each of 50,000
/// patterns (`cargo bench --bench patterns`).
pub(super) const RANKED_MATCHES: usize = 1000;

/// A query's matches in one table, as both pattern searches order them.
pub(super) struct Ranking {
    /// The newest matches, up to the bound, each with its score, best
    /// first, ties to the newest.
    pub(super) ranked: Vec<(Ranked, f64)>,
    /// Scores any match as it would score among the ranked ones.
    pub(super) scorer: Scorer,
    /// The bound was reached: older matches may follow, below the oldest
    /// ranked seq.
    pub(super) capped: Option<i64>,
}

/// The newest `bound` rows of `table` matching the query (`plan` has words
/// for the index; `None` when it has none), scored with BM25 and the
/// server's word weights, as thoughts and sessions are scored, best first.
///
/// Both pattern searches (`search` and `list_patterns`) score through here,
/// so a pattern has the same score for the same query in either, whatever
/// the page, limit or tags asked for (FTS5's bm25 would give ~3e-6 beside
/// search's ~0.4). A score depends on the pattern's own text and on what the
/// [`Scorer`] fixes for the query: each word's weight in the index and the
/// average length of the ranked matches, which are the query's newest `bound`
/// matches whatever the filters. So a match older than those (read only when
/// a page reaches it) scores as it would among them, and a tag filter changes
/// no score.
pub(super) fn ranked_tx(
    tx: &Tx<'_>,
    table: &Searched,
    plan: &QueryPlan,
    text: &str,
    bound: usize,
) -> Result<Option<Ranking>> {
    let Searched {
        fts,
        table: base,
        alias: a,
        fields,
        text: all_text,
        ..
    } = table;
    if plan.is_empty() {
        return Ok(None);
    }
    let (mut clauses, mut values) = plan.text_conditions(all_text);
    let sql = match &plan.fts {
        // Newest first from the index itself (its rowids are the seqs), so
        // the bound stops the read: rescoring keeps this order among equal
        // scores.
        Some(q) => {
            clauses.push(format!("{fts} MATCH ?"));
            values.push(q.clone());
            format!(
                "SELECT {a}.seq, {a}.id, {a}.title, {fields} FROM {fts} CROSS JOIN {base} AS {a} ON {a}.seq = {fts}.rowid
                 WHERE {} ORDER BY {fts}.rowid DESC LIMIT {bound}",
                clauses.join(" AND ")
            )
        }
        // Only words of scripts written without spaces, which the index
        // cannot find inside a run of letters: found by their text, newest
        // first, and scored as the index's words are (not unscored, newest
        // first, whatever they hold).
        None => format!(
            "SELECT {a}.seq, {a}.id, {a}.title, {fields} FROM {base} AS {a}
             WHERE {} ORDER BY {a}.seq DESC LIMIT {bound}",
            clauses.join(" AND ")
        ),
    };
    let rows = tx
        .prepare_cached(&sql)?
        .query_map(rusqlite::params_from_iter(&values), ranked_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let texts: Vec<String> = rows.iter().map(Ranked::text).collect();
    let (scorer, scores) = Scorer::rank(
        tx,
        text,
        &texts,
        &format!("SELECT coalesce(max(seq), 0) FROM {base}"),
        fts,
    )?;
    let capped = (rows.len() >= bound).then(|| rows.last().map_or(0, |r| r.seq));
    let mut ranked: Vec<(Ranked, f64)> = rows.into_iter().zip(scores).collect();
    // Stable: equal scores stay newest first.
    ranked.sort_by(|x, y| y.1.total_cmp(&x.1));
    Ok(Some(Ranking { ranked, scorer, capped }))
}

impl Store {
    /// Patterns matching all words of `text`, best first, with snippets.
    pub fn search_patterns(&self, text: &str, limit: u32) -> Result<KnowledgeHits> {
        self.search_knowledge(&PATTERNS, text, limit, RANKED_MATCHES)
    }

    /// Run one of the knowledge searches: the best `limit` of the query's
    /// newest `bound` matches, ranked by [`ranked_tx`] (words of scripts
    /// written without spaces found by their text, and scored alike).
    pub(super) fn search_knowledge(
        &self,
        table: &Searched,
        text: &str,
        limit: u32,
        bound: usize,
    ) -> Result<KnowledgeHits> {
        let plan = QueryPlan::of(text);
        if plan.is_empty() {
            return Ok(KnowledgeHits::default());
        }
        let words = query_words(text);
        let hit = |r: Ranked, score: f64| KnowledgeHit {
            uri: (table.uri)(&r.id),
            snippet: best_snippet(&[&r.title, &r.description, &r.tags, &r.content], &words, SNIPPET_TOKENS),
            id: r.id,
            title: r.title,
            score,
        };
        self.read(|tx| {
            let Some(Ranking { ranked, capped, .. }) = ranked_tx(tx, table, &plan, text, bound)? else {
                return Ok(KnowledgeHits::default());
            };
            let more = ranked.len() > limit as usize || capped.is_some();
            Ok(KnowledgeHits {
                hits: ranked
                    .into_iter()
                    .take(limit as usize)
                    .map(|(r, score)| hit(r, score))
                    .collect(),
                more,
                ranked_newest: capped.map(|_| bound),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::test_support::temp_store;

    /// Tags read as words here are what SQLite's `json_each` makes of them.
    #[test]
    fn tag_words_are_sqlites_words() {
        let (_d, store) = temp_store();
        let conn = store.conn().unwrap();
        for json in [
            "[]",
            r#"["ops"]"#,
            r#"["a b","déjà-vu","数据库","say \"hi\"",""]"#,
            r#"["x",null,3,2.5,true,["n"],{"k":1}]"#,
        ] {
            let sqlite: String = conn
                .query_row(
                    "SELECT coalesce(group_concat(value, ' '), '') FROM json_each(?1)",
                    [json],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(tag_words(json), sqlite, "{json}");
        }
        assert_eq!(tag_words(""), "");
    }
}
