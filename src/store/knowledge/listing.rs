//! Listing patterns: the filters of `list_patterns` (tags, text), its
//! sort orders and pages, pages of text matches ranked by score or sorted
//! as asked, and the counts and spellings of the patterns' tags.

use std::collections::HashSet;

use rusqlite::ToSql;

use super::ranking::{PATTERN_TEXT, PATTERNS, RANKED_MATCHES, pattern_snippet, ranked_tx, scored_text, tag_words};
use super::{PATTERN_COLUMNS, pattern_from_row};
use crate::domain::{SortBy, SortOrder};
use crate::error::{Error, Result};
use crate::knowledge::{PatternFilter, PatternListItem, PatternPage, TagCount};
use crate::store::search::{QueryPlan, query_words};
use crate::store::tag_filter::TagTable;
use crate::store::{Store, Tx};

/// The seqs of every pattern matching the query, newest first: from the
/// index alone unless words must be found by their text. For counting and
/// paging past the ranked matches: a pass over the index's entries, without
/// reading or scoring the patterns (or, for a query of words found by their
/// text only, a pass over the patterns).
pub(super) fn matched_seqs_tx(tx: &Tx<'_>, plan: &QueryPlan) -> Result<Vec<i64>> {
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
pub(super) fn tagged_seqs_tx(tx: &Tx<'_>, tags: &[String]) -> Result<HashSet<i64>> {
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
pub(super) fn pattern_order(filter: &PatternFilter) -> String {
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

pub(super) fn page_of(patterns: Vec<PatternListItem>, total: u64, offset: u32) -> PatternPage {
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
pub(super) fn searched_page_tx(
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
pub(super) fn sorted_page_tx(tx: &Tx<'_>, filter: &PatternFilter, matches: Vec<i64>, few: usize) -> Result<Vec<i64>> {
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
pub(super) const PATTERN_TAGS: TagTable = TagTable {
    table: "knowledge_pattern_tags",
    owner: "pattern_id",
    id: "p.id",
    rows: "knowledge_patterns",
    seq: "seq",
};

impl Store {
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
    pub(super) fn list_patterns_ranking(&self, filter: &PatternFilter, bound: usize) -> Result<PatternPage> {
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
    pub(super) fn listed_page(&self, filter: &PatternFilter) -> Result<PatternPage> {
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
}
