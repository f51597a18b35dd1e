//! Search snippets: a short passage of a matching text with the query's
//! words marked `[word]`.
//!
//! Made here rather than with FTS5's `snippet()`, whose cost grows with the
//! square of the number of times the words occur in the text: one 1 MiB
//! thought or pattern repeating a searched word kept a search busy for
//! minutes. This is linear in the text's length.

use std::collections::HashMap;

use unicode_normalization::UnicodeNormalization;

/// Longest run of text between two tokens a snippet shows whole.
const MAX_GAP: usize = 24;
/// Longest token a snippet shows whole (a CJK run is one token).
const MAX_TOKEN: usize = 40;

/// Whether `c` is a combining mark (an accent written as its own code
/// point): part of the token it follows, as the index sees it.
fn combining(c: char) -> bool {
    matches!(c, '\u{300}'..='\u{36f}' | '\u{1ab0}'..='\u{1aff}' | '\u{1dc0}'..='\u{1dff}'
        | '\u{20d0}'..='\u{20ff}' | '\u{fe20}'..='\u{fe2f}')
}

/// The tokens of `text`, by byte range: runs of letters and digits (with
/// their combining marks), as the index splits text.
pub(crate) fn tokens(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    for (i, c) in text.char_indices() {
        let inside = c.is_alphanumeric() || (start.is_some() && combining(c));
        match (inside, start) {
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

/// Whether `c` is a Latin letter, the script whose accents the index
/// removes (its tokenizer keeps Greek and Cyrillic accents).
pub(crate) fn latin(c: char) -> bool {
    c.is_ascii_alphabetic() || matches!(c, '\u{c0}'..='\u{24f}' | '\u{1e00}'..='\u{1eff}')
}

/// A word as the index compares it: lower case, final sigma as sigma, and
/// the accents of Latin letters removed (decomposed, their combining marks
/// dropped): a search for `cafe` finds `Café`, `bucuresti` `București`.
/// Letters the index keeps whole (ß, æ, ø, ł) stay as they are, and so do
/// Greek and Cyrillic accents.
pub fn fold(word: &str) -> String {
    if word.is_ascii() {
        return word.to_ascii_lowercase();
    }
    let mut out = String::with_capacity(word.len());
    let mut after_latin = false;
    for c in word.nfd() {
        if combining(c) {
            if !after_latin {
                out.push(c);
            }
            continue;
        }
        after_latin = latin(c);
        out.extend(c.to_lowercase());
    }
    out.nfc().map(|c| if c == 'ς' { 'σ' } else { c }).collect()
}

/// The words of a search, matched against a text's tokens the way the index
/// matches them ([`fold`]). Snippets, scoring and the search of thoughts not
/// yet indexed all match through this, so they agree.
/// Whether `phrase` (words of one query group) occurs in `text` as
/// consecutive tokens, compared as the index compares words.
pub fn holds_phrase(text: &str, phrase: &[String]) -> bool {
    if phrase.len() < 2 {
        return true;
    }
    let want: Vec<String> = phrase.iter().map(|w| fold(w)).collect();
    let got: Vec<String> = tokens(text).into_iter().map(|(s, e)| fold(&text[s..e])).collect();
    got.windows(want.len()).any(|w| w == want.as_slice())
}

pub struct QueryWords {
    folded: Vec<String>,
    index: HashMap<String, usize>,
}

impl QueryWords {
    pub fn new(words: &[String]) -> QueryWords {
        let folded: Vec<String> = words.iter().map(|w| fold(w)).collect();
        let index = folded.iter().enumerate().map(|(i, w)| (w.clone(), i)).collect();
        QueryWords { folded, index }
    }

    pub fn len(&self) -> usize {
        self.folded.len()
    }

    pub fn is_empty(&self) -> bool {
        self.folded.is_empty()
    }

    /// Which word `token` is, if any. A few words are compared in place
    /// (no allocation for an ASCII token, the usual case); more are looked
    /// up, one fold per token, so the cost does not grow with their number.
    pub fn position(&self, token: &str) -> Option<usize> {
        if token.is_ascii() && self.folded.len() <= FEW_WORDS {
            return self.folded.iter().position(|w| w.eq_ignore_ascii_case(token));
        }
        self.index.get(&fold(token)).copied()
    }

    /// A text's length in tokens and how often each word occurs in it.
    pub fn counts(&self, text: &str) -> (usize, Vec<usize>) {
        let mut tf = vec![0usize; self.folded.len()];
        let toks = tokens(text);
        for &(s, e) in &toks {
            if let Some(i) = self.position(&text[s..e]) {
                tf[i] += 1;
            }
        }
        (toks.len(), tf)
    }
}

/// Query words compared one by one rather than looked up.
const FEW_WORDS: usize = 8;

/// `text` whole when short, else its first `max` characters and `...`.
fn clipped(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}...", &text[..at]).into(),
        None => text.into(),
    }
}

/// The text between two tokens, shortened when long (a run of punctuation
/// or emoji).
fn gap(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(MAX_GAP) {
        Some(_) => {
            let head: String = text.chars().take(MAX_GAP / 2).collect();
            format!("{head}... ").into()
        }
        None => text.into(),
    }
}

/// `toks` with each token that holds a word of a script written without
/// spaces (a run of Chinese or Japanese letters, found by its text) cut
/// around that word, so that the word is a token of its own and is marked.
fn split_at_words(text: &str, toks: Vec<(usize, usize)>, words: &[String]) -> Vec<(usize, usize)> {
    let inner: Vec<&str> = words
        .iter()
        .filter(|w| !w.is_empty() && w.chars().any(super::search::unspaced))
        .map(String::as_str)
        .collect();
    if inner.is_empty() {
        return toks;
    }
    let mut out = Vec::with_capacity(toks.len());
    for (s, e) in toks {
        let mut at = s;
        // The leftmost word in what is left of the token, then on past it.
        while let Some((from, to)) = inner
            .iter()
            .filter_map(|w| text[at..e].find(w).map(|i| (at + i, at + i + w.len())))
            .min()
        {
            if from > at {
                out.push((at, from));
            }
            out.push((from, to));
            at = to;
        }
        if at < e {
            out.push((at, e));
        }
    }
    out
}

/// Up to `width` tokens of `text` around the words of a search: the
/// window holding the most of the distinct words (the earliest such),
/// centred on them, the words marked `[...]`, and `...` where text was left
/// out. Words match as the index matches them (case and accents aside).
/// `None` when no word occurs in `text`. One pass over the text, whatever
/// the number of words or of matches.
pub fn snippet(text: &str, words: &[String], width: usize) -> Option<String> {
    let width = width.max(1);
    let wanted = QueryWords::new(words);
    let toks = split_at_words(text, tokens(text), words);
    let hits: Vec<Option<usize>> = toks.iter().map(|&(s, e)| wanted.position(&text[s..e])).collect();
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
        if distinct > best {
            best = distinct;
            best_start = (i + 1).saturating_sub(width);
        }
    }
    // Centre the words found in that window.
    let end = (best_start + width).min(toks.len());
    let first = (best_start..end).find(|&i| hits[i].is_some()).unwrap_or(best_start);
    let last = (best_start..end).rev().find(|&i| hits[i].is_some()).unwrap_or(first);
    let slack = width.saturating_sub(last - first + 1);
    let start = first
        .saturating_sub(slack / 2)
        .min(toks.len().saturating_sub(width))
        .min(first);
    let end = (start + width).min(toks.len());
    let mut out = String::new();
    if start > 0 {
        out.push_str("...");
    } else {
        // What comes before the first word (a quote, a backtick) belongs with it.
        out.push_str(gap(&text[..toks[0].0]).trim_start());
    }
    for i in start..end {
        let (s, e) = toks[i];
        if i > start {
            out.push_str(&gap(&text[toks[i - 1].1..s]));
        }
        let token = clipped(&text[s..e], MAX_TOKEN);
        if hits[i].is_some() {
            out.push('[');
            out.push_str(&token);
            out.push(']');
        } else {
            out.push_str(&token);
        }
    }
    if end < toks.len() {
        out.push_str("...");
    } else {
        // What follows the last word (a full stop) belongs with it.
        out.push_str(gap(&text[toks[end - 1].1..]).trim_end());
    }
    Some(out)
}

/// The snippet of the first of `texts` (a record's fields) that holds the
/// most of the distinct words, then the most matches; the start of the
/// first non-empty field when none holds one.
pub fn best_snippet(texts: &[&str], words: &[String], width: usize) -> String {
    // Most query words, then most matches: a note's content saying "tenant"
    // four times beats its title saying it once.
    let mut best: Option<((usize, usize), String)> = None;
    for text in texts {
        if let Some(s) = snippet(text, words, width) {
            let found = (marked_words(&s, words), s.matches('[').count());
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

/// How many of `words` `snippet` marks.
fn marked_words(snippet: &str, words: &[String]) -> usize {
    let marked: Vec<String> = snippet
        .split('[')
        .skip(1)
        .filter_map(|s| s.split(']').next())
        .map(fold)
        .collect();
    words.iter().filter(|w| marked.contains(&fold(w))).count()
}

/// The first `width` tokens of `text`, shortened like a snippet.
pub fn head(text: &str, width: usize) -> String {
    let toks = tokens(text);
    if toks.is_empty() {
        return clipped(text.trim(), MAX_TOKEN).into_owned();
    }
    let end = toks.len().min(width);
    let mut out = String::new();
    for i in 0..end {
        let (s, e) = toks[i];
        if i > 0 {
            out.push_str(&gap(&text[toks[i - 1].1..s]));
        }
        out.push_str(&clipped(&text[s..e], MAX_TOKEN));
    }
    if end < toks.len() {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {

    /// A word of Chinese or Japanese inside a run of such letters (one
    /// token to the index) is marked where it is, each time it occurs.
    #[test]
    fn words_inside_runs_of_unspaced_letters_are_marked() {
        let words = vec!["数据库".to_string(), "cache".to_string()];
        assert_eq!(
            snippet("我们讨论数据库设计, then the cache", &words, 20).as_deref(),
            Some("我们讨论[数据库]设计, then the [cache]")
        );
        assert_eq!(
            snippet("数据库和数据库", &words[..1], 20).as_deref(),
            Some("[数据库]和[数据库]")
        );
        assert_eq!(snippet("无关的文字", &words[..1], 20), None);
    }

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
        // Accents and case aside, as the index matches.
        assert_eq!(best_snippet(&["Café au lait", "x"], &w(&["cafe"]), 2), "[Café] au...");
        let long = format!("{} then the Café closes.", "w ".repeat(40));
        assert!(
            snippet(&long, &w(&["cafe"]), 4)
                .unwrap()
                .ends_with("the [Café] closes.")
        );
        assert_eq!(snippet("e\u{301}cole", &w(&["ecole"]), 4).unwrap(), "[e\u{301}cole]");
        assert_eq!(snippet("İstanbul", &w(&["istanbul"]), 4).unwrap(), "[İstanbul]");
        for (text, word) in [
            ("la Bucureștiul vechi", "bucurestiul"),
            ("ĉiuj homoj", "ciuj"),
            ("người Việt", "nguoi"),
            ("Ķiefer", "kiefer"),
            ("ΣΊΣΥΦΟΣ", "σίσυφος"),
        ] {
            let s = snippet(text, &w(&[word]), 8).unwrap_or_default();
            assert!(s.contains('['), "{text} / {word}: {s}");
        }
        // The index keeps ß whole: strasse does not find straße; and it
        // keeps Greek and Cyrillic accents.
        assert_eq!(snippet("straße", &w(&["strasse"]), 4), None);
        assert_eq!(snippet("οδός", &w(&["οδος"]), 4), None);
        assert_eq!(snippet("мой дом", &w(&["мои"]), 4), None);
        assert!(snippet("ΟΔΌΣ", &w(&["οδός"]), 4).is_some());
        assert_eq!(snippet("`thought` args", &w(&["args"]), 4).unwrap(), "`thought` [args]");
        // No word: the start of the first field, shortened.
        assert_eq!(best_snippet(&["", "one two three"], &w(&["zzz"]), 2), "one two...");
    }

    /// Long runs without words, and very long tokens, are shortened.
    #[test]
    fn snippets_stay_short() {
        let text = format!("alpha {} omega", "!".repeat(1_000_000));
        let s = snippet(&text, &w(&["alpha", "omega"]), 16).unwrap();
        assert!(s.len() < 100, "{}", s.len());
        let cjk = "字".repeat(300_000);
        assert!(head(&cjk, 16).len() < 200);
        let emoji = format!("Café {}", "🚀".repeat(250_000));
        assert!(best_snippet(&[&emoji], &w(&["zzz"]), 16).len() < 200);
        // Many query words cost one lookup per token.
        let many: Vec<String> = (0..500).map(|i| format!("w{i}")).collect();
        let text = (0..100_000).map(|i| format!("w{} ", i % 700)).collect::<String>();
        assert!(snippet(&text, &many, 16).is_some());
    }

    /// Fields with the same words: the one with more matches gives the
    /// snippet (not a note's title over its content).
    #[test]
    fn the_field_with_more_matches_gives_the_snippet() {
        let s = best_snippet(
            &["tenant notes", "tenant tenant tenant isolation for tenant keys"],
            &w(&["tenant"]),
            8,
        );
        assert!(s.contains("isolation"), "{s}");
        let s = best_snippet(&["tenant notes", "nothing here"], &w(&["tenant"]), 8);
        assert_eq!(s, "[tenant] notes");
    }
}
