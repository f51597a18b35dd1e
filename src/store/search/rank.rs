//! Ranking: BM25 over the candidates a search read, with document counts
//! that stop at [`DF_CAP`] (see the parent module), and how the ranked
//! thoughts are picked: the best overall, or each session's share.

use std::collections::HashMap;

use rusqlite::params;

use super::Candidate;
use super::query::query_words;
use crate::error::Result;
use crate::store::snippet::QueryWords;

/// Document counts stop here (see the module comment).
pub const DF_CAP: i64 = 10_000;

/// BM25 parameters (the usual values).
pub(super) const K1: f64 = 1.2;

pub(super) const B: f64 = 0.75;

/// Inverse document frequency, in the form that never goes negative.
pub(super) fn bm25_idf(total: f64, df: f64) -> f64 {
    (1.0 + (total - df + 0.5) / (df + 0.5)).ln()
}

/// The inverse document frequency of each word in the index `fts`, of
/// documents counted by `total_sql` (document counts stop at [`DF_CAP`]).
pub(super) fn idfs(tx: &rusqlite::Connection, words: &[String], total_sql: &str, fts: &str) -> Result<Vec<f64>> {
    let total: i64 = tx.query_row(total_sql, [], |r| r.get(0))?;
    let mut df_stmt = tx.prepare_cached(&format!(
        "SELECT count(*) FROM (SELECT rowid FROM {fts} WHERE {fts} MATCH ?1 LIMIT ?2)"
    ))?;
    words
        .iter()
        .map(|w| {
            let df: i64 = df_stmt.query_row(params![format!("\"{w}\""), DF_CAP], |r| r.get(0))?;
            Ok(bm25_idf(total as f64, df as f64))
        })
        .collect()
}

/// Records an FTS query matched (their texts, in the order FTS5 ranked
/// them), scored as thoughts are: FTS5's own bm25 floors the weight of a
/// word most records hold at 1e-6, which ranked a session's title below any
/// passing mention in a thought, and put every knowledge note far below every
/// pattern (docs/decisions/0050). `total_sql` counts the records (an upper
/// bound is enough), `fts` is their index.
pub(in crate::store) fn rescore(
    tx: &rusqlite::Connection,
    query: &str,
    texts: &[String],
    total_sql: &str,
    fts: &str,
) -> Result<Vec<f64>> {
    Ok(Scorer::rank(tx, query, texts, total_sql, fts)?.1)
}

/// BM25 as thoughts are scored, with what a query's score depends on
/// besides the text fixed once: each word's weight in the index, and the
/// average length of the matches ranked together. A text scored later with
/// the same scorer (a match beyond the ones ranked) scores as it would
/// have among them.
pub(in crate::store) struct Scorer {
    words: QueryWords,
    idf: Vec<f64>,
    avg_len: f64,
}

impl Scorer {
    /// The scorer of `query`, its lengths averaged over `texts` (records the
    /// query matched; see [`rescore`] for `total_sql` and `fts`), and the
    /// score of each of `texts`, in their order.
    pub(in crate::store) fn rank(
        tx: &rusqlite::Connection,
        query: &str,
        texts: &[String],
        total_sql: &str,
        fts: &str,
    ) -> Result<(Scorer, Vec<f64>)> {
        let words = query_words(query);
        let idf = idfs(tx, &words, total_sql, fts)?;
        let words = QueryWords::new(&words);
        let counts: Vec<(usize, Vec<usize>)> = texts.iter().map(|t| words.counts(t)).collect();
        let scorer = Scorer {
            words,
            idf,
            avg_len: average_length(&counts),
        };
        let scores = counts.iter().map(|(len, tf)| scorer.bm25(*len, tf)).collect();
        Ok((scorer, scores))
    }

    /// The score of a text the query matched.
    pub(in crate::store) fn score(&self, text: &str) -> f64 {
        let (len, tf) = self.words.counts(text);
        self.bm25(len, &tf)
    }

    pub(super) fn bm25(&self, len: usize, tf: &[usize]) -> f64 {
        bm25(len, tf, &self.idf, self.avg_len)
    }
}

/// The average length in tokens of texts counted by [`QueryWords::counts`]
/// (1 at least, and for none).
pub(super) fn average_length(counts: &[(usize, Vec<usize>)]) -> f64 {
    if counts.is_empty() {
        return 1.0;
    }
    (counts.iter().map(|(l, _)| *l).sum::<usize>() as f64 / counts.len() as f64).max(1.0)
}

/// BM25 of a text of `len` tokens holding each query word `tf` times.
/// Every text scored matched every word, so a word counts at least once
/// even where the index folded it differently (diacritics) from this
/// simple tokenizer.
pub(super) fn bm25(len: usize, tf: &[usize], idf: &[f64], avg_len: f64) -> f64 {
    let norm = K1 * (1.0 - B + B * len as f64 / avg_len);
    tf.iter()
        .zip(idf)
        .map(|(tf, idf)| {
            let tf = (*tf as f64).max(1.0);
            idf * tf * (K1 + 1.0) / (tf + norm)
        })
        .sum::<f64>()
}

/// Which of the ranked thought matches become hits.
#[derive(Clone, Copy, Debug)]
pub(super) enum Pick<'k> {
    /// The best ones.
    Best(usize),
    /// Up to `per_session` best matches of each of the best `sessions`
    /// sessions (ranked by their best match), and of each session in `keep`
    /// (those matching by their own fields, which may rank among them
    /// whatever their thoughts score). Every match of a picked session is
    /// counted, shown or not.
    Sessions {
        sessions: usize,
        per_session: usize,
        keep: &'k [String],
    },
}

/// What a [`Pick`] kept of the ranked matches.
pub(super) struct Picked {
    /// Best first, as ranked.
    pub(super) entries: Vec<(usize, f64)>,
    /// Whether matches were left out that belong to sessions not picked
    /// (for `Best`: whether any were left out at all).
    pub(super) more: bool,
    /// `Sessions`: each picked session's matches among those ranked.
    pub(super) counts: HashMap<String, usize>,
}

impl Pick<'_> {
    pub(super) fn apply<'a>(self, mut scored: Vec<(usize, f64)>, session_of: impl Fn(usize) -> &'a str) -> Picked {
        match self {
            Pick::Best(n) => {
                let more = scored.len() > n;
                scored.truncate(n);
                Picked {
                    entries: scored,
                    more,
                    counts: HashMap::new(),
                }
            }
            Pick::Sessions {
                sessions,
                per_session,
                keep,
            } => {
                // Each session's share is taken from its own matches, not
                // from a pool shared by all: a pool of 50 left one session
                // of 120 matches with 47 of them and a count of 42 more.
                let mut counts: HashMap<&str, usize> = HashMap::new();
                let mut ranked_sessions = 0;
                let mut entries = Vec::new();
                let mut more = false;
                for (i, score) in scored {
                    let session = session_of(i);
                    let count = match counts.get_mut(session) {
                        Some(count) => count,
                        None => {
                            if !keep.iter().any(|k| k == session) {
                                if ranked_sessions == sessions {
                                    more = true;
                                    continue;
                                }
                                ranked_sessions += 1;
                            }
                            counts.entry(session).or_insert(0)
                        }
                    };
                    *count += 1;
                    if *count <= per_session {
                        entries.push((i, score));
                    }
                }
                Picked {
                    entries,
                    more,
                    counts: counts.into_iter().map(|(s, n)| (s.to_string(), n)).collect(),
                }
            }
        }
    }
}

/// BM25 of each candidate, best first, ties to the newest.
pub(super) fn score_candidates(candidates: &[Candidate], words: &QueryWords, idf: &[f64]) -> Vec<(usize, f64)> {
    // Per candidate: its length in tokens and each query word's count,
    // matched as the index matches words.
    let counts: Vec<(usize, Vec<usize>)> = candidates.iter().map(|c| words.counts(&c.text)).collect();
    let avg_len = average_length(&counts);
    let mut scored: Vec<(usize, f64)> = counts
        .iter()
        .enumerate()
        .map(|(i, (len, tf))| (i, bm25(*len, tf, idf, avg_len)))
        .collect();
    scored.sort_by(|a, b| {
        b.1.total_cmp(&a.1)
            .then(candidates[b.0].rowid.cmp(&candidates[a.0].rowid))
    });
    scored
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(rowid: i64, text: &str) -> Candidate {
        Candidate {
            rowid,
            session_id: "s".into(),
            thought_number: rowid as u32,
            branch_id: None,
            node_id: format!("s:{rowid}"),
            text: text.into(),
        }
    }

    #[test]
    fn bm25_prefers_frequent_and_rare_words_and_breaks_ties_newest_first() {
        let words = vec!["cache".to_string(), "redis".to_string()];
        let idf = vec![bm25_idf(1000.0, 900.0), bm25_idf(1000.0, 5.0)];
        assert!(idf[1] > idf[0] && idf[0] > 0.0);
        let c = vec![
            cand(1, "cache redis"),
            cand(2, "cache redis redis redis"),
            cand(3, "cache cache cache redis"),
            cand(4, "cache redis"),
        ];
        let order: Vec<i64> = score_candidates(&c, &QueryWords::new(&words), &idf)
            .iter()
            .map(|(i, _)| c[*i].rowid)
            .collect();
        // The rare word three times wins; a short text with the rare word once
        // beats a longer one padded with the common word (length
        // normalisation); equal texts: newest first.
        assert_eq!(order, vec![2, 4, 1, 3]);
        assert_eq!(query_words("Redis, REDIS and cache!"), vec!["and", "cache", "redis"]);
    }

    /// Many query words are counted as a few are: looked up rather than
    /// compared one by one, with the same counts.
    #[test]
    fn many_words_are_counted_as_few_are() {
        let text = "Redis cache misses; the CACHE warms slowly. Über alles, über den Cache.";
        let few: Vec<String> = vec!["cache".into(), "über".into(), "redis".into()];
        let mut many = few.clone();
        many.extend((0..20).map(|i| format!("filler{i}")));
        let (len_few, tf_few) = QueryWords::new(&few).counts(text);
        let (len_many, tf_many) = QueryWords::new(&many).counts(text);
        assert_eq!((len_few, &tf_few[..]), (12, &[3, 2, 1][..]));
        assert_eq!((len_many, &tf_many[..3]), (12, &tf_few[..]));
    }

    /// The sessions picked for their thoughts are the best `sessions`; a
    /// session matching by its own fields keeps its matches besides,
    /// whatever they score, and each picked session is counted whole.
    #[test]
    fn a_pick_keeps_each_sessions_share_and_the_sessions_matching_by_fields() {
        // Ranked entries (index, score), best first, and their sessions.
        let sessions = ["a", "a", "b", "a", "c", "b", "c", "a"];
        let scored: Vec<(usize, f64)> = (0..sessions.len()).map(|i| (i, 10.0 - i as f64)).collect();
        let keep = vec!["c".to_string()];
        let picked = Pick::Sessions {
            sessions: 1,
            per_session: 2,
            keep: &keep,
        }
        .apply(scored.clone(), |i| sessions[i]);
        let kept: Vec<usize> = picked.entries.iter().map(|(i, _)| *i).collect();
        assert_eq!(kept, [0, 1, 4, 6]);
        assert!(picked.more, "b was left out");
        assert_eq!(picked.counts.get("a"), Some(&4));
        assert_eq!(picked.counts.get("c"), Some(&2));
        assert_eq!(picked.counts.get("b"), None);
        let picked = Pick::Sessions {
            sessions: 3,
            per_session: 1,
            keep: &[],
        }
        .apply(scored, |i| sessions[i]);
        let kept: Vec<usize> = picked.entries.iter().map(|(i, _)| *i).collect();
        assert_eq!(kept, [0, 2, 4]);
        assert!(!picked.more);
        assert_eq!(picked.counts.values().sum::<usize>(), sessions.len());
    }
}
