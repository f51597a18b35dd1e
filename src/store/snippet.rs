//! Search snippets: a short passage of a matching text with the query's
//! words marked `[word]`.
//!
//! Made here rather than with FTS5's `snippet()`, whose cost grows with the
//! square of the number of times the words occur in the text: one 1 MiB
//! thought or pattern repeating a searched word kept a search busy for
//! minutes. This is linear in the text's length.

/// A token of `text`: a run of letters and digits, as the index splits
/// text, by byte range.
fn tokens(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(i),
            (false, Some(s)) => {
                out.push((s, i));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        out.push((s, text.len()));
    }
    out
}

/// Which of `words` (lower case) the token is, if any.
fn word_of(token: &str, words: &[String]) -> Option<usize> {
    // Most tokens are short and do not match: compare lengths first.
    words
        .iter()
        .position(|w| w.len() == token.len() && token.to_lowercase() == *w)
        .or_else(|| {
            // Lower-casing can change the length (rare letters).
            let lower = token.to_lowercase();
            words.iter().position(|w| *w == lower)
        })
}

/// Up to `width` tokens of `text` around the words of a search (lower
/// case): the window holding the most of the distinct words (the earliest
/// such), centred on them, the words marked `[...]`, and `...` where text
/// was left out. `None` when no word occurs in `text` as a whole token.
pub fn snippet(text: &str, words: &[String], width: usize) -> Option<String> {
    let width = width.max(1);
    let toks = tokens(text);
    let hits: Vec<Option<usize>> = toks.iter().map(|&(s, e)| word_of(&text[s..e], words)).collect();
    if hits.iter().all(Option::is_none) {
        return None;
    }
    // Sliding window: how many distinct words each window holds.
    let mut counts = vec![0usize; words.len()];
    let mut distinct = 0;
    let (mut best, mut best_start) = (0, 0);
    for i in 0..toks.len() {
        if let Some(w) = hits[i] {
            counts[w] += 1;
            if counts[w] == 1 {
                distinct += 1;
            }
        }
        if i >= width
            && let Some(w) = hits[i - width]
        {
            counts[w] -= 1;
            if counts[w] == 0 {
                distinct -= 1;
            }
        }
        let start = (i + 1).saturating_sub(width);
        if distinct > best {
            best = distinct;
            best_start = start;
        }
    }
    // Centre the words found in that window.
    let end = (best_start + width).min(toks.len());
    let first = (best_start..end).find(|&i| hits[i].is_some()).unwrap_or(best_start);
    let last = (best_start..end).rev().find(|&i| hits[i].is_some()).unwrap_or(first);
    let slack = width.saturating_sub(last - first + 1);
    let start = first.saturating_sub(slack / 2).min(toks.len().saturating_sub(width));
    let start = start.min(first);
    let end = (start + width).min(toks.len());
    let mut out = String::new();
    if start > 0 {
        out.push_str("...");
    }
    let mut at = toks[start].0;
    for i in start..end {
        let (s, e) = toks[i];
        out.push_str(&text[at..s]);
        if hits[i].is_some() {
            out.push('[');
            out.push_str(&text[s..e]);
            out.push(']');
        } else {
            out.push_str(&text[s..e]);
        }
        at = e;
    }
    if end < toks.len() {
        out.push_str("...");
    }
    Some(out)
}

/// The snippet of the first of `texts` (a record's fields) that holds the
/// most of the distinct words; the start of the first non-empty field when
/// none holds one as a whole token (a match the index made by folding
/// accents, say).
pub fn best_snippet(texts: &[&str], words: &[String], width: usize) -> String {
    let mut best: Option<(usize, String)> = None;
    for text in texts {
        if let Some(s) = snippet(text, words, width) {
            let found = words.iter().filter(|w| contains_word(&s, w)).count();
            if best.as_ref().is_none_or(|(n, _)| found > *n) {
                best = Some((found, s));
            }
        }
    }
    match best {
        Some((_, s)) => s,
        None => texts
            .iter()
            .find(|t| !t.trim().is_empty())
            .map(|t| head(t, width))
            .unwrap_or_default(),
    }
}

/// Whether `snippet` marks `word`.
fn contains_word(snippet: &str, word: &str) -> bool {
    snippet
        .split('[')
        .skip(1)
        .filter_map(|s| s.split(']').next())
        .any(|w| w.to_lowercase() == word)
}

/// The first `width` tokens of `text`.
pub fn head(text: &str, width: usize) -> String {
    let toks = tokens(text);
    match toks.get(width) {
        Some(&(s, _)) => format!("{}...", text[..s].trim_end()),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(words: &[&str]) -> Vec<String> {
        words.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn marks_the_words_in_a_window_around_them() {
        let text = "One two three four five six seven eight nine ten. The Redis cache evicts keys; eleven twelve \
                    thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty.";
        let s = snippet(text, &w(&["redis", "evicts"]), 8).unwrap();
        assert_eq!(s, "...ten. The [Redis] cache [evicts] keys; eleven twelve...");
        assert_eq!(
            snippet("short redis text", &w(&["redis"]), 16).unwrap(),
            "short [redis] text"
        );
        assert_eq!(snippet("nothing here", &w(&["redis"]), 16), None);
        // A word inside another is not a match.
        assert_eq!(snippet("redistribute", &w(&["redis"]), 16), None);
    }

    #[test]
    fn prefers_the_window_with_more_distinct_words() {
        let text = format!("alpha {} alpha beta", "x ".repeat(40));
        let s = snippet(&text, &w(&["alpha", "beta"]), 6).unwrap();
        assert!(s.ends_with("[alpha] [beta]"), "{s}");
    }

    /// A text that repeats the word hundreds of thousands of times costs a
    /// pass over it, not one per occurrence (FTS5's snippet() took minutes).
    #[test]
    fn a_word_repeated_everywhere_is_cheap() {
        let text = "word ".repeat(210_000);
        let s = snippet(&text, &w(&["word"]), 16).unwrap();
        assert!(s.starts_with("[word] [word]") && s.ends_with("..."), "{}", &s[..40]);
    }

    #[test]
    fn the_best_field_or_the_start_of_the_first() {
        let fields = ["Cache title", "about the cache and its eviction", ""];
        assert_eq!(
            best_snippet(&fields, &w(&["cache", "eviction"]), 16),
            "about the [cache] and its [eviction]"
        );
        assert_eq!(best_snippet(&["Café au lait", "x"], &w(&["cafe"]), 2), "Café au...");
    }
}
