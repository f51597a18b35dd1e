//! Reading a search query: the words and phrases a user's text asks for
//! (double-quoted spans, words joined by punctuation, scripts written
//! without spaces), the FTS5 query they become, which never lets user text
//! act as FTS5 syntax, and the [`QueryPlan`] each table's search builds its
//! conditions from.

use unicode_normalization::UnicodeNormalization;

use crate::store::snippet::{self, QueryWords};

/// The query as groups of words that must stand together, in order: a
/// span the user put in double quotes, or words joined by punctuation with
/// no space between them (`1.2.3`, `user_id`, `foo.bar()`, `well-known`),
/// which the index splits. The text is first composed (NFC), so a query
/// typed with separate accents (`re\u{301}sume\u{301}`) finds what the index
/// holds; a word keeps the accents that do not compose, as the index does.
pub(crate) fn query_phrases(text: &str) -> Vec<Vec<String>> {
    let text: String = text.nfc().collect();
    let pieces: Vec<&str> = text.split('"').collect();
    let mut phrases: Vec<Vec<String>> = Vec::new();
    let mut add = |part: &str| {
        let words: Vec<String> = snippet::tokens(part)
            .into_iter()
            .map(|(s, e)| part[s..e].to_string())
            .collect();
        if !words.is_empty() && !phrases.contains(&words) {
            phrases.push(words);
        }
    };
    for (i, piece) in pieces.iter().enumerate() {
        // Odd pieces are quoted, if a quote closes them.
        if i % 2 == 1 && i + 1 < pieces.len() {
            add(piece);
            continue;
        }
        for chunk in piece.split_whitespace() {
            // Within a chunk, only the punctuation of names and numbers
            // (`.`, `_`, `-`, an apostrophe, `::`) joins words; any other
            // (`kafka,redis`, `read/write`, `error:timeout`) separates them.
            let chars: Vec<(usize, char)> = chunk.char_indices().collect();
            let mut start = 0;
            for (k, &(at, c)) in chars.iter().enumerate() {
                let double_colon =
                    c == ':' && (chars.get(k + 1).is_some_and(|n| n.1 == ':') || k > 0 && chars[k - 1].1 == ':');
                let joins = c.is_alphanumeric()
                    || unicode_normalization::char::is_combining_mark(c)
                    || matches!(c, '.' | '_' | '-' | '\'' | '\u{2019}')
                    || double_colon;
                if !joins {
                    add(&chunk[start..at]);
                    start = at + c.len_utf8();
                }
            }
            add(&chunk[start..]);
        }
    }
    phrases
}

/// One query group as FTS5 syntax: the words quoted as a phrase, or, when
/// decomposing them (NFD) gives other text, either form: the index keeps the
/// accents of Greek, Cyrillic and other scripts, and Korean written as
/// separate jamo, as they were stored.
pub(super) fn fts_phrase(words: &[String]) -> String {
    let composed = words.join(" ");
    // Latin accents the index removes either way.
    let decomposed: String = composed.nfd().collect();
    if decomposed == composed || composed.chars().all(|c| !c.is_alphabetic() || snippet::latin(c)) {
        format!("\"{composed}\"")
    } else {
        format!("(\"{composed}\" OR \"{decomposed}\")")
    }
}

/// The query's words as the index sees them: letters and digits, lower-cased.
pub(crate) fn query_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = query_phrases(text)
        .into_iter()
        .flatten()
        .map(|w| w.to_lowercase())
        .collect();
    words.sort();
    words.dedup();
    words
}

/// Whether `c` belongs to a script written without spaces between words
/// (Chinese, Japanese, Thai, Lao, Khmer, Burmese), or to Korean, whose
/// words carry their particles: the index keeps a run of such letters as
/// one token, so a word inside the run is found by its text instead.
pub(crate) fn unspaced(c: char) -> bool {
    matches!(c,
        '\u{0e00}'..='\u{0eff}'      // Thai, Lao
        | '\u{1000}'..='\u{109f}'    // Myanmar
        | '\u{1100}'..='\u{11ff}'    // Hangul Jamo
        | '\u{1780}'..='\u{17ff}'    // Khmer
        | '\u{3040}'..='\u{30ff}'    // Hiragana, Katakana
        | '\u{3130}'..='\u{318f}'    // Hangul compatibility Jamo
        | '\u{31f0}'..='\u{31ff}'    // Katakana extensions
        | '\u{3400}'..='\u{4dbf}'    // CJK extension A
        | '\u{4e00}'..='\u{9fff}'    // CJK unified ideographs
        | '\u{ac00}'..='\u{d7af}'    // Hangul syllables
        | '\u{f900}'..='\u{faff}'    // CJK compatibility ideographs
        | '\u{ff66}'..='\u{ff9f}'    // half-width Katakana
        | '\u{20000}'..='\u{3134f}') // CJK extensions B-G
}

/// A query split by how its words are found: the groups the index can
/// match (as [`fts_query`] writes them, `None` when there are none), and
/// the words of scripts written without spaces, found by their text
/// ([`unspaced`]).
pub(crate) struct QueryPlan {
    pub fts: Option<String>,
    pub fts_phrases: Vec<Vec<String>>,
    /// Each word found by its text, composed (NFC) and decomposed (NFD).
    pub texts: Vec<(String, String)>,
}

impl QueryPlan {
    pub fn of(text: &str) -> QueryPlan {
        let mut fts_phrases: Vec<Vec<String>> = Vec::new();
        let mut texts: Vec<(String, String)> = Vec::new();
        for phrase in query_phrases(text) {
            if !phrase.iter().any(|w| w.chars().any(unspaced)) {
                fts_phrases.push(phrase);
                continue;
            }
            // A group with words of scripts without spaces: those words by
            // their text, the others through the index, each on its own.
            for w in phrase {
                if w.chars().any(unspaced) {
                    let decomposed: String = w.nfd().collect();
                    if !texts.iter().any(|(c, _)| *c == w) {
                        texts.push((w, decomposed));
                    }
                } else if !fts_phrases.contains(&vec![w.clone()]) {
                    fts_phrases.push(vec![w]);
                }
            }
        }
        let fts = (!fts_phrases.is_empty()).then(|| {
            fts_phrases
                .iter()
                .map(|words| fts_phrase(words))
                .collect::<Vec<_>>()
                .join(" ")
        });
        QueryPlan {
            fts,
            fts_phrases,
            texts,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.fts.is_none() && self.texts.is_empty()
    }

    /// Whether `text` holds the whole query, as the index and the text
    /// search would find it (for thoughts not indexed yet).
    pub(super) fn holds(&self, text: &str) -> bool {
        self.texts
            .iter()
            .all(|(c, d)| text.contains(c.as_str()) || text.contains(d.as_str()))
            && self.fts_phrases.iter().all(|p| {
                let words: Vec<String> = p.iter().map(|w| w.to_lowercase()).collect();
                QueryWords::new(&words).counts(text).1.iter().all(|&n| n > 0) && snippet::holds_phrase(text, p)
            })
    }

    /// The conditions for the words found by their text alone, each in
    /// `column` (either form), and their values in order: for a search that
    /// matches the index in its own FROM clause (to rank by bm25).
    pub fn text_conditions(&self, column: &str) -> (Vec<String>, Vec<String>) {
        let mut clauses = Vec::new();
        let mut values = Vec::new();
        for (composed, decomposed) in &self.texts {
            clauses.push(format!("(instr({column}, ?) > 0 OR instr({column}, ?) > 0)"));
            values.extend([composed.clone(), decomposed.clone()]);
        }
        (clauses, values)
    }

    /// The conditions that keep the rows holding the whole query, in SQL
    /// with `?` placeholders, and their values in order: each text word in
    /// `column` (either form), and the index's groups through `fts`, whose
    /// rowids are `rowid`. One place for every search that reads a table.
    pub fn conditions(&self, column: &str, rowid: &str, fts: &str) -> (Vec<String>, Vec<String>) {
        let (mut clauses, mut values) = self.text_conditions(column);
        if let Some(q) = &self.fts {
            clauses.push(format!("{rowid} IN (SELECT rowid FROM {fts} WHERE {fts} MATCH ?)"));
            values.push(q.clone());
        }
        (clauses, values)
    }
}

/// Turn user text into an FTS5 query that matches all its words, each group
/// of [`query_phrases`] as a phrase. Only letters and digits go in, each
/// group quoted, so no input can be read as FTS syntax. `None` when the text has
/// no letters or digits.
pub fn fts_query(text: &str) -> Option<String> {
    let phrases: Vec<String> = query_phrases(text).iter().map(|words| fts_phrase(words)).collect();
    if phrases.is_empty() {
        None
    } else {
        Some(phrases.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_text_never_becomes_fts_syntax() {
        assert_eq!(fts_query("NEAR( \"x\" *").as_deref(), Some("\"NEAR\" \"x\""));
        assert_eq!(fts_query("\" * ) ("), None);
        assert_eq!(fts_query("naïve café").as_deref(), Some("\"naïve\" \"café\""));
        // Joined words and quoted spans are phrases, and a query typed with
        // separate accents is composed first.
        assert_eq!(fts_query("bump 1.2.3").as_deref(), Some("\"bump\" \"1 2 3\""));
        assert_eq!(
            fts_query("user_id foo.bar() C++").as_deref(),
            Some("\"user id\" \"foo bar\" \"C\"")
        );
        assert_eq!(
            fts_query("\"cache invalidation\" now \"open").as_deref(),
            Some("\"cache invalidation\" \"now\" \"open\"")
        );
        assert_eq!(fts_query("re\u{301}sume\u{301}").as_deref(), Some("\"résumé\""));
        assert_eq!(
            query_words("re\u{301}sume\u{301} \"Cache  x\""),
            vec!["cache", "résumé", "x"]
        );
    }
}
