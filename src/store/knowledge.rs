//! The knowledge garden tables: `knowledge_patterns` (+ tags) and
//! `scratchpad_notes`, each with an FTS5 index kept in sync by triggers.

use std::collections::HashSet;

use rusqlite::{OptionalExtension, Row, ToSql, params};
use serde_json::json;

use super::search::{QueryPlan, SNIPPET_TOKENS, Scorer, query_words};
use super::snippet::best_snippet;
use super::tag_filter::TagTable;
use super::{Store, Tx};
use crate::domain::{self, SortBy, SortOrder};
use crate::error::{Error, Result};
use crate::knowledge::{
    KnowledgeHit, KnowledgeHits, KnowledgePattern, NewPattern, NoteRef, PatternFilter, PatternListItem, PatternPage,
    PatternUpdate, ScratchpadNote, TagCount, fallback_slug, full_slug, hashed_slug, note_uri, pattern_uri,
    slug_or_fallback, slugify, unique_slug,
};

const PATTERN_COLUMNS: &str = "p.id, p.title, p.description, p.tags, p.content, p.derived_from_sessions, p.created_by, p.created_at, p.updated_at";
const NOTE_COLUMNS: &str = "n.id, n.title, n.content, n.created_at, n.updated_at";
/// A pattern's text, all fields, as a search by text reads it.
const PATTERN_TEXT: &str = "(p.title || ' ' || p.description || ' ' || p.tags || ' ' || p.content)";

/// A table the knowledge search reads: its index, its rows, the
/// description, tags and content a hit's snippet comes from, and all its
/// text as one expression.
struct Searched {
    fts: &'static str,
    table: &'static str,
    alias: &'static str,
    fields: &'static str,
    text: &'static str,
    uri: fn(&str) -> String,
}

const PATTERNS: Searched = Searched {
    fts: "knowledge_patterns_fts",
    table: "knowledge_patterns",
    alias: "p",
    // Tags as stored (a JSON array): [`ranked_from_row`] makes them words.
    fields: "p.description, p.tags, p.content",
    text: PATTERN_TEXT,
    uri: pattern_uri,
};

const NOTES: Searched = Searched {
    fts: "scratchpad_notes_fts",
    table: "scratchpad_notes",
    alias: "n",
    fields: "'', '', n.content",
    text: "(n.title || ' ' || n.content)",
    uri: note_uri,
};

/// A pattern or a note, as a resource listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct KnowledgeItem {
    /// A scratchpad note (else a pattern).
    pub note: bool,
    pub id: String,
    pub title: String,
    pub description: String,
    /// Its place in creation order (pages continue after it).
    pub seq: i64,
}

/// The snippet of a pattern found by a search: from whichever of its
/// fields holds the most of the query's words.
fn pattern_snippet(p: &KnowledgePattern, words: &[String]) -> String {
    let tags = p.tags.join(" ");
    best_snippet(&[&p.title, &p.description, &tags, &p.content], words, SNIPPET_TOKENS)
}

fn pattern_from_row(r: &Row<'_>) -> rusqlite::Result<KnowledgePattern> {
    let tags: String = r.get(3)?;
    let sessions: String = r.get(5)?;
    Ok(KnowledgePattern {
        id: r.get(0)?,
        title: r.get(1)?,
        description: r.get(2)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        content: r.get(4)?,
        derived_from_sessions: serde_json::from_str(&sessions).unwrap_or_default(),
        created_by: r.get(6)?,
        created_at: r.get(7)?,
        updated_at: r.get(8)?,
    })
}

fn note_from_row(r: &Row<'_>) -> rusqlite::Result<ScratchpadNote> {
    Ok(ScratchpadNote {
        id: r.get(0)?,
        title: r.get(1)?,
        content: r.get(2)?,
        created_at: r.get(3)?,
        updated_at: r.get(4)?,
    })
}

fn no_pattern(id: &str) -> Error {
    Error::invalid_with(
        "id",
        format!("no knowledge pattern with id '{id}' (list_patterns shows the ids)"),
        json!({ "id": id }),
    )
}

fn no_note(id: &str) -> Error {
    Error::invalid_with(
        "id",
        format!("no scratchpad note with id '{id}' (list_scratchpad shows the ids)"),
        json!({ "id": id }),
    )
}

fn to_json(v: &[String]) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::Internal(e.to_string()))
}

/// Every id in `sessions` names an existing session.
fn check_sessions_exist(tx: &Tx<'_>, sessions: &[String]) -> Result<()> {
    for id in sessions {
        if !super::sessions::session_exists_tx(tx, id)? {
            return Err(Error::session_not_found(id.as_str()));
        }
    }
    Ok(())
}

fn get_pattern_tx(tx: &Tx<'_>, id: &str) -> Result<KnowledgePattern> {
    tx.prepare_cached(&format!(
        "SELECT {PATTERN_COLUMNS} FROM knowledge_patterns AS p WHERE p.id = ?1"
    ))?
    .query_row([id], pattern_from_row)
    .optional()?
    .ok_or_else(|| no_pattern(id))
}

fn insert_pattern_tx(tx: &Tx<'_>, new: &NewPattern, now: &str) -> Result<KnowledgePattern> {
    check_sessions_exist(tx, &new.derived_from_sessions)?;
    let base = slug_or_fallback("pattern", &new.title);
    let mut exists = tx.prepare_cached("SELECT EXISTS (SELECT 1 FROM knowledge_patterns WHERE id = ?1)")?;
    let id = unique_slug(&base, |c| Ok(exists.query_row([c], |r| r.get::<_, bool>(0))?))?;
    tx.prepare_cached(
        "INSERT INTO knowledge_patterns
             (id, title, description, tags, content, derived_from_sessions, created_by, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
    )?
    .execute(params![
        id,
        new.title,
        new.description,
        to_json(&new.tags)?,
        new.content,
        to_json(&new.derived_from_sessions)?,
        new.created_by,
        now
    ])?;
    // (A trigger fills knowledge_pattern_tags from `tags`.)
    get_pattern_tx(tx, &id)
}

/// What [`Store::create_patterns_once`] did with a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    Created,
    /// The same pattern was stored already; left as it is.
    Already,
    /// The same anti-pattern was stored with the older, inverted heading;
    /// its title, description and content were replaced.
    Retitled,
}

/// The content of a learning without its "- Source: ..." line.
fn without_source_line(content: &str) -> String {
    content
        .split_inclusive('\n')
        .filter(|line| !line.starts_with("- Source: "))
        .collect()
}

/// The same anti-pattern as `n` (title, description and author; `older` is
/// its description in the older wording), saved with another thought as its
/// source: before the correction was always the source, a moment naming the
/// thought revised and one naming its revision saved two (session 19). Its
/// id (the oldest, if several).
fn same_anti_pattern_other_source_tx(tx: &Tx<'_>, n: &NewPattern, older: &str) -> Result<Option<String>> {
    if !n.description.starts_with("An anti-pattern ") {
        return Ok(None);
    }
    let mut candidates = tx.prepare_cached(
        "SELECT id, content FROM knowledge_patterns
         WHERE title = ?1 COLLATE NOCASE AND title = ?1 AND description IN (?2, ?3) AND created_by IS ?4
         ORDER BY created_at, seq",
    )?;
    let rows = candidates.query_map(params![n.title, n.description, older, n.created_by], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
    })?;
    let want = without_source_line(&n.content);
    for row in rows {
        let (id, content) = row?;
        if without_source_line(&content) == want {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// An anti-pattern `extract_learnings` saved before its "Avoid:" heading
/// named the belief revised (review 18), the same learning as `n`: by the
/// same author, its content the same below the heading line, and its title
/// still the one that heading gave it (a title someone changed since is
/// theirs, and left alone). Its id (the oldest, if several).
fn misheaded_anti_pattern_tx(tx: &Tx<'_>, n: &NewPattern) -> Result<Option<String>> {
    const AVOID: &str = "# Avoid: ";
    let (Some(body_at), true) = (
        n.content.find('\n'),
        n.description.starts_with("An anti-pattern ") && n.content.starts_with(AVOID),
    ) else {
        return Ok(None);
    };
    // `instr` counts characters from 1 and `substr` takes characters: the
    // content from its first line break, as `body` is.
    let body = &n.content[body_at..];
    let mut candidates = tx.prepare_cached(
        "SELECT id, title, content FROM knowledge_patterns
         WHERE created_by IS ?1 AND title <> ?2 AND substr(content, 1, 9) = '# Avoid: '
           AND instr(content, char(10)) > 0 AND substr(content, instr(content, char(10))) = ?3
         ORDER BY created_at, seq",
    )?;
    let rows = candidates.query_map(params![n.created_by, n.title, body], |r| {
        Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?))
    })?;
    for row in rows {
        let (id, title, content) = row?;
        let heading = content.lines().next().unwrap_or("").strip_prefix(AVOID).unwrap_or("");
        let as_saved: String = heading.chars().take(crate::knowledge::MAX_TITLE_CHARS).collect();
        if title == as_saved {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// The id of the note `topic` names: its slug, cut to [`MAX_SLUG`]. Two
/// topics can share that id: a long one cut to the other's whole slug, or
/// two long ones that differ only past the cut. The id belongs to the
/// first topic written there (so notes written before stay where they
/// are); any other topic gets its own id, cut and ended with a hash of its
/// whole slug ([`hashed_slug`]).
fn note_id_tx(tx: &Tx<'_>, topic: &str) -> Result<String> {
    let full = full_slug(topic);
    if full.is_empty() {
        return Ok(fallback_slug("note", topic));
    }
    let plain = slugify(topic);
    let holder = get_note_tx(tx, &plain)?;
    if holder.as_ref().is_some_and(|n| full_slug(&n.title) == full) {
        return Ok(plain);
    }
    let hashed = hashed_slug(&full);
    if holder.is_none() && get_note_tx(tx, &hashed)?.is_none() {
        return Ok(plain);
    }
    Ok(hashed)
}

fn resolve_note(tx: &Tx<'_>, note: &NoteRef) -> Result<String> {
    match note {
        NoteRef::Id(id) => Ok(id.clone()),
        NoteRef::Topic(topic) => note_id_tx(tx, topic),
    }
}

fn get_note_tx(tx: &Tx<'_>, id: &str) -> Result<Option<ScratchpadNote>> {
    Ok(tx
        .prepare_cached(&format!(
            "SELECT {NOTE_COLUMNS} FROM scratchpad_notes AS n WHERE n.id = ?1"
        ))?
        .query_row([id], note_from_row)
        .optional()?)
}

/// A pattern or note found by a search, with the fields its score and
/// snippet come from.
struct Ranked {
    seq: i64,
    id: String,
    title: String,
    description: String,
    tags: String,
    content: String,
}

fn ranked_from_row(r: &Row<'_>) -> rusqlite::Result<Ranked> {
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
fn tag_words(json: &str) -> String {
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
fn scored_text(title: &str, description: &str, tags: &str, content: &str) -> String {
    format!("{title} {description} {tags} {content}")
}

impl Ranked {
    fn text(&self) -> String {
        scored_text(&self.title, &self.description, &self.tags, &self.content)
    }
}

/// How many of a query's newest matches are read and ranked by score, as
/// thought search ranks its newest [`super::search::CANDIDATES`]: reading
/// and scoring every match cost ~0.5 s for a word in each of 50,000
/// patterns (`cargo bench --bench patterns`).
const RANKED_MATCHES: usize = 1000;

/// A query's matches in one table, as both pattern searches order them.
struct Ranking {
    /// The newest matches, up to the bound, each with its score, best
    /// first, ties to the newest.
    ranked: Vec<(Ranked, f64)>,
    /// Scores any match as it would score among the ranked ones.
    scorer: Scorer,
    /// The bound was reached: older matches may follow, below the oldest
    /// ranked seq.
    capped: Option<i64>,
}

/// The newest `bound` rows of `table` matching the query (`plan` has words
/// for the index; `None` when it has none), scored with BM25 and the
/// server's word weights, as thoughts and sessions are scored, best first.
///
/// Both pattern searches (`search` and `list_patterns`) score through here,
/// so a pattern has the same score for the same query in either, whatever
/// the page, limit or tags asked for (review 17-a: list_patterns answered
/// FTS5's bm25, ~3e-6 beside search's ~0.4). A score depends on the pattern's
/// own text and on what the [`Scorer`] fixes for the query: each word's
/// weight in the index and the average length of the ranked matches, which
/// are the query's newest `bound` matches whatever the filters. So a match
/// older than those (read only when a page reaches it) scores as it would
/// among them, and a tag filter changes no score.
fn ranked_tx(tx: &Tx<'_>, table: &Searched, plan: &QueryPlan, text: &str, bound: usize) -> Result<Option<Ranking>> {
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
        // first, and scored as the index's words are (review 19-a: they
        // were listed unscored, newest first, whatever they held).
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

/// The seqs of every pattern matching the query, newest first: from the
/// index alone unless words must be found by their text. For counting and
/// paging past the ranked matches: a pass over the index's entries, without
/// reading or scoring the patterns (or, for a query of words found by their
/// text only, a pass over the patterns).
fn matched_seqs_tx(tx: &Tx<'_>, plan: &QueryPlan) -> Result<Vec<i64>> {
    let fts = PATTERNS.fts;
    let (mut clauses, mut values) = plan.text_conditions(PATTERN_TEXT);
    if plan.fts.is_none() {
        let sql = format!(
            "SELECT p.seq FROM knowledge_patterns AS p WHERE {} ORDER BY p.seq DESC",
            clauses.join(" AND ")
        );
        return Ok(tx
            .prepare_cached(&sql)?
            .query_map(rusqlite::params_from_iter(&values), |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?);
    }
    let join = if clauses.is_empty() {
        String::new()
    } else {
        format!("CROSS JOIN knowledge_patterns AS p ON p.seq = {fts}.rowid")
    };
    clauses.push(format!("{fts} MATCH ?"));
    values.push(plan.fts.clone().unwrap_or_default());
    let sql = format!(
        "SELECT {fts}.rowid FROM {fts} {join} WHERE {} ORDER BY {fts}.rowid DESC",
        clauses.join(" AND ")
    );
    Ok(tx
        .prepare_cached(&sql)?
        .query_map(rusqlite::params_from_iter(&values), |r| r.get(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?)
}

/// The seqs of the patterns carrying every tag of `tags` (not empty), from
/// the tag table and the id index alone: driven by the rarest tag's rows,
/// each checked for the others. (Checking each match for its tags instead
/// reads every matching pattern: ~0.3 s at 50,000; and SQLite, left to join
/// the tag rows with a list of matches, took minutes there.)
fn tagged_seqs_tx(tx: &Tx<'_>, tags: &[String]) -> Result<HashSet<i64>> {
    // Deduplicated, rarest first.
    let tags = PATTERN_TAGS.clauses(tx, tags, 0)?.values;
    let mut sql = String::from(
        "SELECT p.seq FROM knowledge_pattern_tags AS t CROSS JOIN knowledge_patterns AS p ON p.id = t.pattern_id
         WHERE t.tag = ?",
    );
    for _ in 1..tags.len() {
        sql.push_str(
            " AND EXISTS (SELECT 1 FROM knowledge_pattern_tags AS tf WHERE tf.tag = ? AND tf.pattern_id = t.pattern_id)",
        );
    }
    Ok(tx
        .prepare_cached(&sql)?
        .query_map(rusqlite::params_from_iter(&tags), |r| r.get(0))?
        .collect::<rusqlite::Result<HashSet<_>>>()?)
}

/// The order of a list sorted by a field (`updatedAt` unless another is
/// asked for), equal values in creation order, the same way round.
fn pattern_order(filter: &PatternFilter) -> String {
    let dir = match filter.sort_order {
        SortOrder::Asc => "ASC",
        SortOrder::Desc => "DESC",
    };
    match filter.sort_by {
        Some(SortBy::CreatedAt) => format!("p.created_at {dir}, p.seq {dir}"),
        Some(SortBy::Title) => format!("p.title COLLATE NOCASE {dir}, p.seq {dir}"),
        Some(SortBy::UpdatedAt) | None => format!("p.updated_at {dir}, p.seq {dir}"),
    }
}

fn page_of(patterns: Vec<PatternListItem>, total: u64, offset: u32) -> PatternPage {
    PatternPage {
        count: patterns.len(),
        has_more: u64::from(offset) + (patterns.len() as u64) < total,
        patterns,
        total,
    }
}

/// One page of a search with words for the index, best first unless
/// `sortBy` is given.
///
/// The order is the [`ranked_tx`] ranking of the query's newest
/// [`RANKED_MATCHES`] matches (as thought search ranks its newest), then
/// any older matches, newest first: a page past the ranked ones reads and
/// scores its own patterns only. With fewer matches than that (any garden
/// of fewer patterns), every match is ranked. Tags filter that order; they
/// change neither a pattern's place among the others nor its score.
/// `total` counts every match carrying the tags, from the index and the
/// tag table (a pass over their entries, not over the patterns).
fn searched_page_tx(
    tx: &Tx<'_>,
    filter: &PatternFilter,
    plan: &QueryPlan,
    text: &str,
    bound: usize,
) -> Result<PatternPage> {
    let Some(ranking) = ranked_tx(tx, &PATTERNS, plan, text, bound)? else {
        return Ok(page_of(Vec::new(), 0, filter.offset));
    };
    let tagged = match filter.tags.as_slice() {
        [] => None,
        tags => Some(tagged_seqs_tx(tx, tags)?),
    };
    let keep = |seq: &i64| tagged.as_ref().is_none_or(|t| t.contains(seq));
    let mut seqs: Vec<i64> = ranking.ranked.iter().map(|(r, _)| r.seq).filter(keep).collect();
    if let Some(below) = ranking.capped {
        seqs.extend(
            matched_seqs_tx(tx, plan)?
                .into_iter()
                .filter(|seq| *seq < below && keep(seq)),
        );
    }
    let total = seqs.len() as u64;
    let page = match filter.sort_by {
        None => seqs
            .into_iter()
            .skip(filter.offset as usize)
            .take(filter.limit as usize)
            .collect(),
        Some(_) => sorted_page_tx(tx, filter, seqs, bound)?,
    };
    // The page's seqs, in order, as a JSON array (`key` is the place).
    let page = serde_json::to_string(&page).map_err(|e| Error::Internal(e.to_string()))?;
    let sql = format!(
        "SELECT {PATTERN_COLUMNS} FROM json_each(?1) AS r
         CROSS JOIN knowledge_patterns AS p ON p.seq = r.value ORDER BY r.key"
    );
    let words = query_words(text);
    let patterns = tx
        .prepare_cached(&sql)?
        .query_map([page], |r| {
            let pattern = pattern_from_row(r)?;
            // Its text as the ranking read it (tags as stored, made words).
            let tags = tag_words(&r.get::<_, String>(3)?);
            let score = ranking.scorer.score(&scored_text(
                &pattern.title,
                &pattern.description,
                &tags,
                &pattern.content,
            ));
            Ok(PatternListItem {
                snippet: Some(pattern_snippet(&pattern, &words)),
                score: Some(score),
                pattern,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(page_of(patterns, total, filter.offset))
}

/// The seqs of one page of `matches` (seqs of patterns) in the order
/// `filter` sorts by. Up to `few` matches (as many as are ranked) are read
/// and sorted; more are found walking that order's index and keeping the
/// matches until the page is full: sorting a word found in each of 50,000
/// patterns read every one of them (~0.1 s), where the walk reads index
/// entries alone, about as many as the page for so common a word.
fn sorted_page_tx(tx: &Tx<'_>, filter: &PatternFilter, matches: Vec<i64>, few: usize) -> Result<Vec<i64>> {
    let order = pattern_order(filter);
    let (limit, offset) = (filter.limit as usize, filter.offset as usize);
    if matches.len() <= few {
        let matches = serde_json::to_string(&matches).map_err(|e| Error::Internal(e.to_string()))?;
        return Ok(tx
            .prepare_cached(&format!(
                "SELECT p.seq FROM knowledge_patterns AS p WHERE p.seq IN (SELECT value FROM json_each(?1))
                 ORDER BY {order} LIMIT {limit} OFFSET {offset}"
            ))?
            .query_map([matches], |r| r.get(0))?
            .collect::<rusqlite::Result<Vec<_>>>()?);
    }
    let matches: HashSet<i64> = matches.into_iter().collect();
    let mut walk = tx.prepare_cached(&format!("SELECT p.seq FROM knowledge_patterns AS p ORDER BY {order}"))?;
    let mut rows = walk.query([])?;
    let mut page = Vec::with_capacity(limit);
    let mut skip = offset;
    while page.len() < limit
        && let Some(row) = rows.next()?
    {
        let seq: i64 = row.get(0)?;
        if !matches.contains(&seq) {
            continue;
        }
        if skip > 0 {
            skip -= 1;
        } else {
            page.push(seq);
        }
    }
    Ok(page)
}

/// Where patterns keep their tags, for filtering by them.
const PATTERN_TAGS: TagTable = TagTable {
    table: "knowledge_pattern_tags",
    owner: "pattern_id",
    id: "p.id",
    rows: "knowledge_patterns",
    seq: "seq",
};

impl Store {
    /// Create a pattern (already validated). Its id is the title's slug,
    /// with `-2`, `-3`... on collision.
    pub fn create_pattern(&self, new: NewPattern) -> Result<KnowledgePattern> {
        self.write(|tx| insert_pattern_tx(tx, &new, &domain::now()))
    }

    /// Create several patterns in one transaction, all or none, except
    /// those stored already: a pattern with the same title, description,
    /// content and author (what `extract_learnings` saves again when an
    /// agent repeats the call) is answered as it is ([`Saved::Already`]).
    /// An anti-pattern saved in the older wording, headed "Avoid:" with
    /// the correction or the moment's summary, is the same learning: it
    /// is retitled in place ([`Saved::Retitled`]) rather than kept beside
    /// a copy that says the opposite (review 18).
    pub fn create_patterns_once(&self, new: &[NewPattern]) -> Result<Vec<(KnowledgePattern, Saved)>> {
        self.write(|tx| {
            let now = domain::now();
            // `title = ?1 COLLATE NOCASE` lets the title index find the few
            // candidates; the exact comparisons then decide.
            let mut same = tx.prepare_cached(
                "SELECT id FROM knowledge_patterns
                 WHERE title = ?1 COLLATE NOCASE AND title = ?1 AND description IN (?2, ?5) AND content = ?3
                   AND created_by IS ?4
                 ORDER BY created_at LIMIT 1",
            )?;
            let mut out = Vec::with_capacity(new.len());
            for n in new {
                // Anti-patterns saved before "A anti-pattern" became "An
                // anti-pattern" are the same learning.
                let older = n
                    .description
                    .strip_prefix("An anti-pattern ")
                    .map_or_else(|| n.description.clone(), |rest| format!("A anti-pattern {rest}"));
                let existing: Option<String> = same
                    .query_row(params![n.title, n.description, n.content, n.created_by, older], |r| {
                        r.get(0)
                    })
                    .optional()?;
                let existing = match existing {
                    Some(id) => Some(id),
                    None => same_anti_pattern_other_source_tx(tx, n, &older)?,
                };
                out.push(match existing {
                    Some(id) => (get_pattern_tx(tx, &id)?, Saved::Already),
                    None => match misheaded_anti_pattern_tx(tx, n)? {
                        Some(id) => {
                            tx.prepare_cached(
                                "UPDATE knowledge_patterns SET title = ?2, description = ?3, content = ?4,
                                     updated_at = ?5
                                 WHERE id = ?1",
                            )?
                            .execute(params![
                                id,
                                n.title,
                                n.description,
                                n.content,
                                now
                            ])?;
                            (get_pattern_tx(tx, &id)?, Saved::Retitled)
                        }
                        None => (insert_pattern_tx(tx, n, &now)?, Saved::Created),
                    },
                });
            }
            Ok(out)
        })
    }

    /// `Ok` when the pattern exists, else the error [`Store::pattern`]
    /// gives, without reading its content.
    pub fn pattern_exists(&self, id: &str) -> Result<()> {
        self.read(|tx| {
            let found: bool = tx
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM knowledge_patterns WHERE id = ?1)")?
                .query_row([id], |r| r.get(0))?;
            if found { Ok(()) } else { Err(no_pattern(id)) }
        })
    }

    pub fn pattern(&self, id: &str) -> Result<KnowledgePattern> {
        self.read(|tx| get_pattern_tx(tx, id))
    }

    /// Change some fields of a pattern (already validated); its id stays.
    pub fn update_pattern(&self, id: &str, upd: PatternUpdate) -> Result<KnowledgePattern> {
        self.write(|tx| {
            let now = domain::now();
            let old = get_pattern_tx(tx, id)?;
            let mut sessions = upd.derived_from_sessions.clone();
            if let Some(one) = &upd.add_derived_session {
                let list = sessions.get_or_insert_with(|| old.derived_from_sessions.clone());
                if !list.contains(one) {
                    list.push(one.clone());
                }
            }
            if let Some(s) = &sessions {
                // Only the sessions added must exist: a session the pattern
                // was derived from may have been deleted since, and an agent
                // sends back the list get_pattern gave it.
                let added: Vec<String> = s
                    .iter()
                    .filter(|id| !old.derived_from_sessions.contains(id))
                    .cloned()
                    .collect();
                check_sessions_exist(tx, &added)?;
            }
            let tags = upd.tags.unwrap_or(old.tags);
            tx.prepare_cached(
                "UPDATE knowledge_patterns SET title = ?2, description = ?3, tags = ?4, content = ?5,
                     derived_from_sessions = ?6, created_by = ?7, updated_at = ?8
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                upd.title.unwrap_or(old.title),
                upd.description.unwrap_or(old.description),
                to_json(&tags)?,
                upd.content.unwrap_or(old.content),
                to_json(&sessions.unwrap_or(old.derived_from_sessions))?,
                upd.created_by.or(old.created_by),
                now
            ])?;
            get_pattern_tx(tx, id)
        })
    }

    pub fn delete_pattern(&self, id: &str) -> Result<KnowledgePattern> {
        self.write(|tx| {
            let old = get_pattern_tx(tx, id)?;
            tx.prepare_cached("DELETE FROM knowledge_patterns WHERE id = ?1")?
                .execute([id])?;
            Ok(old)
        })
    }

    /// Patterns matching a PatternFilter.
    /// Tags of `tags` no pattern carries, each with those patterns carry
    /// that differ from it only in letter case.
    pub fn pattern_tag_spellings(&self, tags: &[String]) -> Result<Vec<(String, Vec<String>)>> {
        self.read(|tx| PATTERN_TAGS.other_spellings(tx, tags))
    }

    pub fn list_patterns(&self, filter: &PatternFilter) -> Result<PatternPage> {
        self.list_patterns_ranking(filter, RANKED_MATCHES)
    }

    /// [`Store::list_patterns`], a search ranking the newest `bound` matches.
    fn list_patterns_ranking(&self, filter: &PatternFilter, bound: usize) -> Result<PatternPage> {
        let plan = filter.search.as_deref().map(QueryPlan::of);
        match (&plan, &filter.search) {
            // Nothing searchable in the text: nothing matches.
            (Some(p), _) if p.is_empty() => Ok(PatternPage {
                patterns: Vec::new(),
                count: 0,
                total: 0,
                has_more: false,
            }),
            // Scored as `search` scores them.
            (Some(p), Some(text)) => self.read(|tx| searched_page_tx(tx, filter, p, text, bound)),
            _ => self.listed_page(filter),
        }
    }

    /// A page of patterns without a search: every pattern (that carries the
    /// tags), in the order asked for.
    fn listed_page(&self, filter: &PatternFilter) -> Result<PatternPage> {
        let order = pattern_order(filter);
        let (limit, offset) = (filter.limit, filter.offset);
        self.read(|tx| {
            let tags = PATTERN_TAGS.clauses(tx, &filter.tags, u64::from(offset) + u64::from(limit))?;
            let where_sql = |tag_clauses: &[String]| {
                if tag_clauses.is_empty() {
                    String::new()
                } else {
                    format!("WHERE {}", tag_clauses.join(" AND "))
                }
            };
            let refs: Vec<&dyn ToSql> = tags.values.iter().map(|v| v as &dyn ToSql).collect();
            let sql = format!(
                "SELECT {PATTERN_COLUMNS} FROM knowledge_patterns AS p {} ORDER BY {order} LIMIT {limit} OFFSET {offset}",
                where_sql(&tags.page)
            );
            let patterns = tx
                .prepare_cached(&sql)?
                .query_map(refs.as_slice(), |r| {
                    Ok(PatternListItem {
                        snippet: None,
                        score: None,
                        pattern: pattern_from_row(r)?,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let total = tags.total(
                tx,
                true,
                &format!("SELECT count(*) FROM knowledge_patterns AS p {}", where_sql(&tags.count)),
                refs.as_slice(),
            )?;
            Ok(page_of(patterns, total.max(0) as u64, offset))
        })
    }

    /// Every pattern tag with its number of patterns, most used first.
    pub fn pattern_tags(&self) -> Result<Vec<TagCount>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT tag, count(*) AS n FROM knowledge_pattern_tags GROUP BY tag ORDER BY n DESC, tag",
                )?
                .query_map([], |r| {
                    Ok(TagCount {
                        name: r.get(0)?,
                        count: r.get::<_, i64>(1)?.max(0) as u64,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// One page of the knowledge garden's items for resource listings:
    /// patterns, then notes, each newest created first, without their
    /// content. `after` is where the previous page stopped (the last item's
    /// kind and seq); items created, changed or deleted between pages never
    /// shift the ones not listed yet. Answers up to `limit` items, and
    /// whether more follow.
    pub fn knowledge_items(&self, after: Option<(bool, i64)>, limit: u32) -> Result<(Vec<KnowledgeItem>, bool)> {
        // Each table read backwards along its primary key from where the
        // previous page stopped: a page costs its own rows, however many
        // there are before it.
        let want = limit as usize + 1;
        self.read(|tx| {
            let mut items = Vec::with_capacity(want);
            let read = |note: bool, below: i64, n: usize, items: &mut Vec<KnowledgeItem>| -> Result<()> {
                let sql = if note {
                    "SELECT id, title, '', seq FROM scratchpad_notes WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2"
                } else {
                    "SELECT id, title, description, seq FROM knowledge_patterns WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2"
                };
                let rows = tx
                    .prepare_cached(sql)?
                    .query_map(params![below, n as i64], |r| {
                        Ok(KnowledgeItem {
                            note,
                            id: r.get(0)?,
                            title: r.get(1)?,
                            description: r.get(2)?,
                            seq: r.get(3)?,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                items.extend(rows);
                Ok(())
            };
            match after {
                Some((true, seq)) => read(true, seq, want, &mut items)?,
                _ => {
                    let below = after.map_or(i64::MAX, |(_, seq)| seq);
                    read(false, below, want, &mut items)?;
                    if items.len() < want {
                        read(true, i64::MAX, want - items.len(), &mut items)?;
                    }
                }
            }
            let more = items.len() > limit as usize;
            items.truncate(limit as usize);
            Ok((items, more))
        })
    }

    /// Patterns matching all words of `text`, best first, with snippets.
    pub fn search_patterns(&self, text: &str, limit: u32) -> Result<KnowledgeHits> {
        self.search_knowledge(&PATTERNS, text, limit, RANKED_MATCHES)
    }

    /// Run one of the knowledge searches: the best `limit` of the query's
    /// newest `bound` matches, ranked by [`ranked_tx`] (words of scripts
    /// written without spaces found by their text, and scored alike).
    fn search_knowledge(&self, table: &Searched, text: &str, limit: u32, bound: usize) -> Result<KnowledgeHits> {
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

    /// Create or overwrite the note of a topic (already validated). Returns
    /// the note and whether it was created.
    pub fn write_note(&self, topic: &str, content: &str) -> Result<(ScratchpadNote, bool)> {
        self.write(|tx| {
            let now = domain::now();
            let id = note_id_tx(tx, topic)?;
            let created = get_note_tx(tx, &id)?.is_none();
            tx.prepare_cached(
                "INSERT INTO scratchpad_notes (id, title, content, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)
                 ON CONFLICT (id) DO UPDATE SET title = excluded.title, content = excluded.content,
                     updated_at = excluded.updated_at",
            )?
            .execute(params![id, topic, content, now])?;
            let note = get_note_tx(tx, &id)?.ok_or_else(|| Error::Internal("note vanished".into()))?;
            Ok((note, created))
        })
    }

    /// `Ok` when the note exists, else the error [`Store::note`] gives,
    /// without reading its content.
    pub fn note_exists(&self, note: &NoteRef) -> Result<()> {
        self.read(|tx| {
            let id = resolve_note(tx, note)?;
            let found: bool = tx
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM scratchpad_notes WHERE id = ?1)")?
                .query_row([&id], |r| r.get(0))?;
            if found { Ok(()) } else { Err(no_note(&id)) }
        })
    }

    pub fn note(&self, note: &NoteRef) -> Result<ScratchpadNote> {
        self.read(|tx| {
            let id = resolve_note(tx, note)?;
            get_note_tx(tx, &id)?.ok_or_else(|| no_note(&id))
        })
    }

    pub fn delete_note(&self, note: &NoteRef) -> Result<ScratchpadNote> {
        self.write(|tx| {
            let id = resolve_note(tx, note)?;
            let old = get_note_tx(tx, &id)?.ok_or_else(|| no_note(&id))?;
            tx.prepare_cached("DELETE FROM scratchpad_notes WHERE id = ?1")?
                .execute([&id])?;
            Ok(old)
        })
    }

    /// Notes, most recently updated first, and their total number.
    pub fn list_notes(&self, limit: u32, offset: u32) -> Result<(Vec<ScratchpadNote>, u64)> {
        self.read(|tx| {
            let notes = tx
                .prepare_cached(&format!(
                    "SELECT {NOTE_COLUMNS} FROM scratchpad_notes AS n ORDER BY n.updated_at DESC, n.seq DESC
                     LIMIT ?1 OFFSET ?2"
                ))?
                .query_map([limit, offset], note_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let total: i64 = tx.query_row("SELECT count(*) FROM scratchpad_notes", [], |r| r.get(0))?;
            Ok((notes, total.max(0) as u64))
        })
    }

    /// Notes matching all words of `text`, best first, with snippets.
    pub fn search_notes(&self, text: &str, limit: u32) -> Result<KnowledgeHits> {
        self.search_knowledge(&NOTES, text, limit, RANKED_MATCHES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::NewSession;
    use crate::knowledge::MAX_SLUG;
    use crate::store::test_support::temp_store;

    fn p(title: &str, tags: &[&str], content: &str) -> NewPattern {
        NewPattern {
            title: title.into(),
            description: format!("about {title}"),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            content: content.into(),
            ..Default::default()
        }
    }

    /// An anti-pattern saved before its description read "An anti-pattern"
    /// is the same learning when extract_learnings saves it again.
    #[test]
    fn a_learning_saved_with_the_older_article_is_not_saved_twice() {
        let (_d, store) = temp_store();
        let learning = |description: &str| NewPattern {
            description: description.into(),
            created_by: Some("extract_learnings".into()),
            ..p("Do not cache tokens", &["learning"], "Caching tokens broke logout.")
        };
        let before = learning("A anti-pattern extracted from session s (patterns/x.md).");
        let (first, saved) = store.create_patterns_once(&[before]).unwrap().remove(0);
        assert_eq!(saved, Saved::Created);
        let now = learning("An anti-pattern extracted from session s (patterns/x.md).");
        let (again, saved) = store.create_patterns_once(&[now]).unwrap().remove(0);
        assert_eq!(saved, Saved::Already, "a second copy was saved");
        assert_eq!(again.id, first.id);
    }

    /// An anti-pattern saved headed "Avoid: <the correction>" is retitled
    /// when the same learning is saved headed with the belief revised; one
    /// whose title was changed since, or whose body differs, is not the
    /// same learning (review 18).
    #[test]
    fn an_anti_pattern_saved_with_the_inverted_heading_is_retitled_in_place() {
        let (_d, store) = temp_store();
        let body = "\n\n- Source: session \"s\"\n\n## What was believed (thought 1)\n\n> Reads\n";
        let learning = |title: &str, article: &str, body: &str| NewPattern {
            title: title.into(),
            description: format!("{article} anti-pattern extracted from session s (anti-patterns/x/{title}.md)."),
            tags: vec!["learning".into(), "anti-pattern".into()],
            content: format!("# Avoid: {title}{body}"),
            created_by: Some("extract_learnings".into()),
            ..Default::default()
        };
        let old = learning("No: N+1 queries", "A", body);
        let edited = learning("Mine", "An", body);
        let other = learning("No: N+1 queries", "An", "\n\nanother body");
        // (Each created as it is: saved once, each would retitle the one before.)
        let [old, edited, other] = [old, edited, other].map(|n| store.create_pattern(n).unwrap());
        // Someone retitled this one by hand: theirs.
        store
            .update_pattern(
                &edited.id,
                PatternUpdate {
                    title: Some("Reads first".into()),
                    ..Default::default()
                },
            )
            .unwrap();
        let now = learning("DB reads dominate", "An", body);
        let (fixed, saved) = store
            .create_patterns_once(std::slice::from_ref(&now))
            .unwrap()
            .remove(0);
        assert_eq!(saved, Saved::Retitled);
        assert_eq!(fixed.id, old.id, "ids stay");
        assert_eq!(
            (fixed.title.as_str(), fixed.content.as_str()),
            (now.title.as_str(), now.content.as_str())
        );
        assert_eq!(fixed.description, now.description);
        assert_eq!(fixed.tags, ["learning", "anti-pattern"]);
        // Saved again: already there; the others untouched.
        let (again, saved) = store.create_patterns_once(&[now]).unwrap().remove(0);
        assert_eq!((again.id.as_str(), saved), (old.id.as_str(), Saved::Already));
        assert_eq!(store.pattern(&edited.id).unwrap().title, "Reads first");
        assert_eq!(store.pattern(&other.id).unwrap().title, "No: N+1 queries");
    }

    /// An anti-pattern saved with the thought revised as its source (a
    /// moment naming that thought, before the correction was always the
    /// source) is the same learning: not saved twice (session 19).
    #[test]
    fn an_anti_pattern_saved_from_the_other_thought_is_already_saved() {
        let (_d, store) = temp_store();
        let learning = |source: u32, lesson: &str| NewPattern {
            title: "DB reads dominate".into(),
            description: "An anti-pattern extracted from session s (anti-patterns/x/db.md).".into(),
            content: format!(
                "# Avoid: DB reads dominate\n\n- Source: session \"s\" (`s`), thought {source}\n- Moment: revision\n\n## Lesson\n\n{lesson}\n"
            ),
            created_by: Some("extract_learnings".into()),
            ..Default::default()
        };
        let before = store.create_pattern(learning(2, "Profile first")).unwrap();
        let (same, saved) = store
            .create_patterns_once(&[learning(3, "Profile first")])
            .unwrap()
            .remove(0);
        assert_eq!((same.id.as_str(), saved), (before.id.as_str(), Saved::Already));
        assert!(same.content.contains("thought 2"), "left as it is");
        // Another lesson is another learning.
        let (other, saved) = store.create_patterns_once(&[learning(3, "Measure")]).unwrap().remove(0);
        assert_eq!(saved, Saved::Created);
        assert_ne!(other.id, before.id);
        // And a pattern (not an anti-pattern) is matched by its whole text.
        let pattern = |source: u32| NewPattern {
            description: "A pattern extracted from session s (patterns/x/db.md).".into(),
            ..learning(source, "x")
        };
        store.create_pattern(pattern(2)).unwrap();
        assert_eq!(store.create_patterns_once(&[pattern(3)]).unwrap()[0].1, Saved::Created);
    }

    #[test]
    fn patterns_crud_slugs_tags_and_search() {
        let (_d, store) = temp_store();
        let a = store
            .create_pattern(p(
                "Race conditions",
                &["debugging", "concurrency"],
                "Look for shared state.",
            ))
            .unwrap();
        assert_eq!(a.id, "race-conditions");
        let b = store
            .create_pattern(p("Race Conditions!", &["debugging"], "Add a lock around the counter."))
            .unwrap();
        assert_eq!(b.id, "race-conditions-2");
        store.create_pattern(p("Race conditions", &[], "third")).unwrap();
        assert!(store.pattern("race-conditions-3").is_ok());

        let f = PatternFilter {
            tags: vec!["debugging".into(), "concurrency".into()],
            ..Default::default()
        };
        let page = store.list_patterns(&f).unwrap();
        assert_eq!(page.total, 1);
        assert_eq!(page.patterns[0].pattern.id, "race-conditions");

        let hits = store
            .list_patterns(&PatternFilter {
                search: Some("lock counter".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(hits.total, 1);
        assert!(hits.patterns[0].snippet.as_deref().unwrap().contains("[lock]"));
        for q in ["\"", "*", "NEAR(", "a OR"] {
            store
                .list_patterns(&PatternFilter {
                    search: Some(q.into()),
                    ..Default::default()
                })
                .unwrap();
            store.search_patterns(q, 5).unwrap();
        }

        let up = store
            .update_pattern(
                "race-conditions",
                PatternUpdate {
                    title: Some("Data races".into()),
                    tags: Some(vec!["threads".into()]),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(up.id, "race-conditions");
        assert_eq!(up.title, "Data races");
        assert_eq!(up.content, "Look for shared state.");
        assert_eq!(store.pattern_tags().unwrap()[0].name, "debugging");
        assert_eq!(
            store.search_patterns("data races", 5).unwrap().hits[0].id,
            "race-conditions"
        );

        store.delete_pattern("race-conditions").unwrap();
        assert_eq!(store.pattern("race-conditions").unwrap_err().code(), "INVALID_PAYLOAD");
        assert!(store.search_patterns("shared", 5).unwrap().hits.is_empty());
        let conn = store.conn().unwrap();
        conn.execute(
            "INSERT INTO knowledge_patterns_fts (knowledge_patterns_fts) VALUES ('integrity-check')",
            [],
        )
        .unwrap();
    }

    /// Review 10-b: a Chinese or Japanese word inside a run of such
    /// letters (one token to the index) was never found in the garden.
    #[test]
    fn words_inside_runs_of_unspaced_letters_are_found() {
        let (_d, store) = temp_store();
        store
            .create_pattern(p("数据库设计", &["架构"], "我们讨论数据库设计和缓存失效"))
            .unwrap();
        store
            .create_pattern(p("Cache notes", &[], "缓存 cache invalidation"))
            .unwrap();
        store.write_note("会议", "今日のデータベース会議: cache").unwrap();
        let titles = |hits: Vec<KnowledgeHit>| hits.into_iter().map(|h| h.title).collect::<Vec<_>>();
        assert_eq!(titles(store.search_patterns("数据库", 5).unwrap().hits), ["数据库设计"]);
        // Every word must be there: one found by its text, one by the index.
        assert_eq!(
            titles(store.search_patterns("缓存 cache", 5).unwrap().hits),
            ["Cache notes"]
        );
        assert!(store.search_patterns("数据库 cache", 5).unwrap().hits.is_empty());
        // Tags are searched too.
        assert_eq!(titles(store.search_patterns("架构", 5).unwrap().hits), ["数据库设计"]);
        // Found by text: one more read than the limit tells what was left.
        let one = store.search_patterns("数据库", 1).unwrap();
        assert_eq!((one.hits.len(), one.more, one.ranked_newest), (1, false, None));
        let first = store.search_patterns("缓存", 1).unwrap();
        assert_eq!((first.hits.len(), first.more, first.ranked_newest), (1, true, None));
        // Ranked as the index's words are (review 19-a: listed newest
        // first with score 0): the pattern holding it most comes first,
        // though the other is newer; list_patterns scores them alike.
        store
            .create_pattern(p("数据库设计模式", &[], "数据库 数据库 数据库 设计"))
            .unwrap();
        store
            .create_pattern(p("other", &[], &format!("{} 数据库", "很长的文本 ".repeat(50))))
            .unwrap();
        let found = store.search_patterns("数据库", 10).unwrap().hits;
        let ranked: Vec<(&str, f64)> = found.iter().map(|h| (h.title.as_str(), h.score)).collect();
        assert_eq!(ranked[0].0, "数据库设计模式", "{ranked:?}");
        assert!(ranked.iter().all(|(_, s)| *s > 0.0), "{ranked:?}");
        assert!(ranked.windows(2).all(|w| w[0].1 >= w[1].1), "{ranked:?}");
        let listed = store
            .list_patterns(&PatternFilter {
                search: Some("数据库".into()),
                ..Default::default()
            })
            .unwrap();
        let listed: Vec<(&str, f64)> = listed
            .patterns
            .iter()
            .map(|i| (i.pattern.title.as_str(), i.score.unwrap_or_default()))
            .collect();
        assert_eq!(listed, ranked);
        let listed = store
            .list_patterns(&PatternFilter {
                search: Some("缓存".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(listed.total, 2);
        assert!(listed.patterns.iter().all(|p| p.score.is_some() && p.snippet.is_some()));
        let notes = store.search_notes("データベース", 5).unwrap().hits;
        assert_eq!(notes.len(), 1);
        assert!(notes[0].snippet.contains("データベース"), "{}", notes[0].snippet);
        assert_eq!(store.search_notes("データベース cache", 5).unwrap().hits.len(), 1);
        assert!(store.search_notes("数据库", 5).unwrap().hits.is_empty());
    }

    #[test]
    fn derived_sessions_must_exist_and_failures_change_nothing() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("s")).unwrap();
        let mut new = p("From a session", &[], "c");
        new.derived_from_sessions = vec![s.id.clone()];
        assert_eq!(store.create_pattern(new.clone()).unwrap().derived_from_sessions, [s.id]);
        new.derived_from_sessions = vec!["nope".into()];
        new.title = "Other".into();
        assert_eq!(store.create_pattern(new).unwrap_err().code(), "SESSION_NOT_FOUND");
        assert_eq!(store.list_patterns(&PatternFilter::default()).unwrap().total, 1);
    }

    /// A session a pattern was derived from may be deleted later: the
    /// pattern keeps naming it, and an update that sends the list back with
    /// a session added goes through; a new unknown session is still refused.
    #[test]
    fn an_update_keeps_a_deleted_source_session() {
        let (_d, store) = temp_store();
        let gone = store.create_session(NewSession::titled("gone")).unwrap();
        let kept = store.create_session(NewSession::titled("kept")).unwrap();
        let mut new = p("From a session", &[], "c");
        new.derived_from_sessions = vec![gone.id.clone()];
        let id = store.create_pattern(new).unwrap().id;
        store.delete_session(&gone.id).unwrap();
        assert_eq!(
            store.pattern(&id).unwrap().derived_from_sessions,
            std::slice::from_ref(&gone.id)
        );
        let update = |sessions: Vec<String>| PatternUpdate {
            derived_from_sessions: Some(sessions),
            ..Default::default()
        };
        let updated = store
            .update_pattern(&id, update(vec![gone.id.clone(), kept.id.clone()]))
            .unwrap();
        assert_eq!(updated.derived_from_sessions, [gone.id.clone(), kept.id.clone()]);
        let err = store
            .update_pattern(&id, update(vec![gone.id.clone(), "nope".into()]))
            .unwrap_err();
        assert_eq!(err.code(), "SESSION_NOT_FOUND");
        // One session added keeps the ones the pattern has, once each.
        let add = |one: &str| PatternUpdate {
            add_derived_session: Some(one.to_string()),
            ..Default::default()
        };
        let added = store.update_pattern(&id, add(&kept.id)).unwrap();
        assert_eq!(added.derived_from_sessions, [gone.id.clone(), kept.id.clone()]);
        let err = store.update_pattern(&id, add(&gone.id)).unwrap();
        assert_eq!(err.derived_from_sessions, [gone.id.clone(), kept.id.clone()]);
        assert_eq!(
            store.update_pattern(&id, add("nope")).unwrap_err().code(),
            "SESSION_NOT_FOUND"
        );
        let replaced = PatternUpdate {
            derived_from_sessions: Some(vec![kept.id.clone()]),
            add_derived_session: Some(gone.id.clone()),
            ..Default::default()
        };
        let both = store.update_pattern(&id, replaced).unwrap();
        assert_eq!(both.derived_from_sessions, [kept.id.clone(), gone.id.clone()]);
    }

    #[test]
    fn notes_overwrite_by_topic() {
        let (_d, store) = temp_store();
        let (n, created) = store.write_note("API Design Ideas", "v1").unwrap();
        assert!(created);
        assert_eq!(n.id, "api-design-ideas");
        let (m, created) = store.write_note("api design ideas", "v2 with pagination").unwrap();
        assert!(!created);
        assert_eq!(m.created_at, n.created_at);
        assert_eq!(m.content, "v2 with pagination");
        assert_eq!(store.list_notes(10, 0).unwrap().1, 1);
        assert_eq!(
            store.search_notes("pagination", 5).unwrap().hits[0].id,
            "api-design-ideas"
        );
        assert!(store.search_notes("v1", 5).unwrap().hits.is_empty());
        let id = |s: &str| NoteRef::Id(s.into());
        store.delete_note(&id("api-design-ideas")).unwrap();
        assert_eq!(
            store.note(&id("api-design-ideas")).unwrap_err().code(),
            "INVALID_PAYLOAD"
        );
    }

    #[test]
    fn long_topics_that_differ_past_the_cut_get_their_own_notes() {
        let (_d, store) = temp_store();
        let topic = |part: u32| {
            format!("Meeting notes for the quarterly planning review of the infrastructure team - part {part}")
        };
        let (one, created) = store.write_note(&topic(1), "decisions").unwrap();
        assert!(created);
        // The first keeps the cut id notes of long topics always had.
        assert_eq!(one.id, slugify(&topic(1)));
        let (two, created) = store.write_note(&topic(2), "staffing").unwrap();
        assert!(created, "a different topic is a different note");
        assert_ne!(two.id, one.id);
        assert!(two.id.len() <= MAX_SLUG);
        let read = |part: u32| store.note(&NoteRef::Topic(topic(part))).unwrap();
        assert_eq!(read(1).content, "decisions");
        assert_eq!(read(2).content, "staffing");
        // Writing again by topic updates the same notes.
        let (again, created) = store.write_note(&topic(2), "staffing v2").unwrap();
        assert!(!created);
        assert_eq!(again.id, two.id);
        // With part 1 gone, part 2 still finds its own note, not a new one.
        store.delete_note(&NoteRef::Topic(topic(1))).unwrap();
        let (again, created) = store.write_note(&topic(2), "staffing v3").unwrap();
        assert!(!created);
        assert_eq!(again.id, two.id);
        assert_eq!(store.list_notes(10, 0).unwrap().1, 1);
    }

    #[test]
    fn a_short_topic_never_takes_over_a_long_topics_note() {
        let (_d, store) = temp_store();
        // A 64-character slug, and a longer topic that starts with it.
        let short = "Design notes for the billing service migration to the new ledger";
        assert_eq!(slugify(short).len(), MAX_SLUG);
        let long = format!("{short} - part 2");
        let read = |t: &str| store.note(&NoteRef::Topic(t.into())).unwrap().content;
        let (l, created) = store.write_note(&long, "long first").unwrap();
        assert!(created);
        let (s, created) = store.write_note(short, "short second").unwrap();
        assert!(created, "a different topic is a different note");
        assert_ne!(s.id, l.id);
        assert_eq!(read(&long), "long first");
        assert_eq!(read(short), "short second");
        // And the other way round, in a fresh ledger.
        let (_d2, store) = temp_store();
        let read = |t: &str| store.note(&NoteRef::Topic(t.into())).unwrap().content;
        store.write_note(short, "short first").unwrap();
        store.write_note(&long, "long second").unwrap();
        assert_eq!(read(short), "short first");
        assert_eq!(read(&long), "long second");
        assert_eq!(store.list_notes(10, 0).unwrap().1, 2);
    }

    /// Patterns, notes and thoughts of a megabyte repeating the searched
    /// word: every search answers with a short snippet (FTS5's snippet()
    /// took minutes here, its cost growing with the square of the matches).
    #[test]
    fn searching_text_that_repeats_the_word_everywhere() {
        use crate::domain::ThoughtInput;
        use crate::store::Target;
        let (_d, store) = temp_store();
        let text = "word ".repeat(200_000);
        for i in 0..3 {
            store.create_pattern(p(&format!("Repeats {i}"), &[], &text)).unwrap();
            store.write_note(&format!("repeats {i}"), &text).unwrap();
        }
        let s = store.create_session(NewSession::titled("repeats")).unwrap();
        store
            .append_thought(
                Target::Session(s.id),
                ThoughtInput {
                    thought: text.clone(),
                    next_thought_needed: true,
                    ..Default::default()
                },
            )
            .unwrap();
        let listed = store
            .list_patterns(&PatternFilter {
                search: Some("word".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(listed.total, 3);
        let mut snippets: Vec<String> = listed.patterns.into_iter().filter_map(|p| p.snippet).collect();
        snippets.extend(
            store
                .search_patterns("word", 5)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| h.snippet),
        );
        snippets.extend(
            store
                .search_notes("word", 5)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| h.snippet),
        );
        snippets.extend(store.search_thoughts("word", 5).unwrap().into_iter().map(|h| h.snippet));
        assert_eq!(snippets.len(), 3 + 3 + 3 + 1);
        for s in snippets {
            assert!(s.starts_with("[word]") && s.len() < 200, "{s}");
        }
    }

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

    /// With more matches than the bound, the newest are ranked and the
    /// rest follow newest first: pages, tags and sorts see every match
    /// once, each with one score whichever way it is listed, and `total`
    /// counts them all.
    #[test]
    fn matches_past_the_ranking_bound_are_paged_newest_first_with_their_scores() {
        let (_d, store) = temp_store();
        // Seq order is creation order: pattern 7 is the newest. "ledger" is
        // in all eight, more often in some; odd ones are tagged "odd", and
        // 1, 2 and 6 hold "缓存" (found by its text).
        for i in 0..8 {
            let tags: &[&str] = if i % 2 == 1 { &["odd", "all"] } else { &["all"] };
            let extra = if [1, 2, 6].contains(&i) { " 缓存" } else { "" };
            let content = format!("{} of the pattern body{extra}", "ledger ".repeat(1 + (i * 3) % 5));
            store.create_pattern(p(&format!("P{i}"), tags, &content)).unwrap();
        }
        const BOUND: usize = 3;
        let list = |search: &str, tags: &[&str], limit: u32, offset: u32, sort_by: Option<SortBy>| {
            store
                .list_patterns_ranking(
                    &PatternFilter {
                        search: Some(search.into()),
                        tags: tags.iter().map(|t| t.to_string()).collect(),
                        limit,
                        offset,
                        sort_by,
                        ..Default::default()
                    },
                    BOUND,
                )
                .unwrap()
        };
        let scored = |page: &PatternPage| -> Vec<(String, f64)> {
            page.patterns
                .iter()
                .map(|p| (p.pattern.title.clone(), p.score.unwrap()))
                .collect()
        };
        let all = list("ledger", &[], 100, 0, None);
        assert_eq!((all.total, all.count, all.has_more), (8, 8, false));
        let listed = scored(&all);
        // The three newest, best first; then the others, newest first.
        let mut ranked: Vec<(String, f64)> = listed[..BOUND].to_vec();
        let mut titles: Vec<&str> = ranked.iter().map(|(t, _)| t.as_str()).collect();
        titles.sort();
        assert_eq!(titles, ["P5", "P6", "P7"]);
        assert!(ranked.windows(2).all(|w| w[0].1 >= w[1].1), "{ranked:?}");
        let older: Vec<&str> = listed[BOUND..].iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(older, ["P4", "P3", "P2", "P1", "P0"]);
        assert!(listed.iter().all(|(_, s)| *s > 0.0), "{listed:?}");
        // `search` answers the ranked ones, with the same scores.
        let searched = || -> Vec<(String, f64)> {
            store
                .search_knowledge(&PATTERNS, "ledger", 10, BOUND)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| (h.title, h.score))
                .collect()
        };
        assert_eq!(searched(), ranked);
        // It says so: more matched than it ranked, the newest BOUND.
        let told = store.search_knowledge(&PATTERNS, "ledger", 10, BOUND).unwrap();
        assert_eq!((told.more, told.ranked_newest), (true, Some(BOUND)));
        // Every match ranked: whether more matched than the limit.
        let all_ranked = store.search_knowledge(&PATTERNS, "ledger", 8, 100).unwrap();
        assert_eq!(
            (all_ranked.hits.len(), all_ranked.more, all_ranked.ranked_newest),
            (8, false, None)
        );
        let short = store.search_knowledge(&PATTERNS, "ledger", 7, 100).unwrap();
        assert_eq!((short.hits.len(), short.more, short.ranked_newest), (7, true, None));
        // One to a page, across the bound: the same patterns, the same scores.
        for (i, one) in listed.iter().enumerate() {
            let page = list("ledger", &[], 1, i as u32, None);
            assert_eq!(scored(&page), std::slice::from_ref(one), "page {i}");
            assert_eq!((page.total, page.has_more), (8, i + 1 < 8), "page {i}");
        }
        let page = list("ledger", &[], 2, 2, None);
        assert_eq!(scored(&page), listed[2..4]);
        // A tag filters that order: none moves, no score changes.
        let odd = list("ledger", &["odd"], 100, 0, None);
        let expected: Vec<(String, f64)> = listed
            .iter()
            .filter(|(t, _)| t[1..].parse::<u32>().unwrap() % 2 == 1)
            .cloned()
            .collect();
        assert_eq!(scored(&odd), expected);
        assert_eq!(odd.total, 4);
        let both = list("ledger", &["odd", "all", "odd"], 1, 3, None);
        assert_eq!(scored(&both), expected[3..]);
        assert_eq!((both.total, both.has_more), (4, false));
        assert_eq!(list("ledger", &["none"], 100, 0, None).total, 0);
        // Sorted by title: every match, each with its score.
        let by_title = list("ledger", &[], 100, 0, Some(SortBy::Title));
        let mut expected = listed.clone();
        expected.sort_by(|a, b| b.0.cmp(&a.0));
        assert_eq!(scored(&by_title), expected);
        // (Descending: P7, then P5 and P3 on the page, P1.)
        let page = list("ledger", &["odd"], 2, 1, Some(SortBy::Title));
        let odd_titles: Vec<(String, f64)> = expected.into_iter().filter(|(t, _)| t == "P5" || t == "P3").collect();
        assert_eq!(scored(&page), odd_titles);
        assert_eq!(page.total, 4);
        // A word found by its text, with one for the index, ranking one:
        // P6 (the newest match holding both), then P2 and P1.
        let filter = PatternFilter {
            search: Some("缓存 ledger".into()),
            ..Default::default()
        };
        let mixed = store.list_patterns_ranking(&filter, 1).unwrap();
        let titles: Vec<&str> = mixed.patterns.iter().map(|p| p.pattern.title.as_str()).collect();
        assert_eq!(titles, ["P6", "P2", "P1"]);
        assert_eq!(mixed.total, 3);
        // Few enough matches to sort as they are (up to the bound), and the
        // same page walked along the index (past it): the same patterns,
        // each with its score under that bound.
        let sorted = |bound: usize| {
            let sort = PatternFilter {
                sort_by: Some(SortBy::Title),
                sort_order: SortOrder::Asc,
                limit: 2,
                offset: 1,
                ..filter.clone()
            };
            let scores = scored(&store.list_patterns_ranking(&filter, bound).unwrap());
            let page = store.list_patterns_ranking(&sort, bound).unwrap();
            let expected: Vec<(String, f64)> = ["P2", "P6"]
                .iter()
                .map(|t| scores.iter().find(|(title, _)| title == t).unwrap().clone())
                .collect();
            assert_eq!(scored(&page), expected, "bound {bound}");
            assert_eq!((page.total, page.has_more), (3, false), "bound {bound}");
        };
        sorted(3);
        sorted(1);
        // A pattern written now is among the ranked ones at once.
        store
            .create_pattern(p("P8", &[], "ledger ledger ledger ledger ledger"))
            .unwrap();
        ranked = searched();
        assert!(ranked.iter().any(|(t, _)| t == "P8"), "{ranked:?}");
        assert_eq!(list("ledger", &[], 100, 0, None).total, 9);
    }

    /// A word every note holds: FTS5's bm25 gave the notes ~1e-6 beside
    /// patterns at ~1; scored as thoughts are, they compare (review 16-e).
    #[test]
    fn notes_and_patterns_are_scored_alike() {
        let (_d, store) = temp_store();
        store
            .write_note("tenant notes", "tenant tenant isolation for tenant keys")
            .unwrap();
        store.write_note("other tenant", "one tenant per bucket").unwrap();
        for i in 0..4 {
            let content = if i == 0 {
                "tenant keys are prefixed"
            } else {
                "unrelated"
            };
            store.create_pattern(p(&format!("pattern {i}"), &[], content)).unwrap();
        }
        let notes = store.search_notes("tenant", 10).unwrap().hits;
        let patterns = store.search_patterns("tenant", 10).unwrap().hits;
        assert_eq!((notes.len(), patterns.len()), (2, 1));
        assert!(notes.iter().all(|n| n.score > 0.01), "{notes:?}");
        assert!(notes[0].score >= notes[1].score);
        // The note saying it most ranks first, its snippet from its content.
        assert_eq!(notes[0].title, "tenant notes");
        assert!(notes[0].snippet.contains("isolation"), "{}", notes[0].snippet);
    }
}
