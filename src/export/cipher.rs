//! The compact cipher form: one line per thought, a step letter (Hypothesis,
//! Evidence, Conclusion, ...) guessed from its words, its links, and its
//! text squashed to one line and cut at a length that never splits what
//! shows as one character, saying how many characters were left out.

use std::io::Write;

use super::markdown::in_steps;
use super::{SessionSource, each_in_chains, one_line, visible_controls, written};
use crate::domain::ThoughtData;
use crate::error::Result;

/// The step-type letter of the cipher notation for a thought in prose: `R`
/// for a revision, else a guess from its wording (`O` when nothing fits).
pub(super) fn step_type(d: &ThoughtData) -> char {
    if d.is_revision {
        return 'R';
    }
    let text = d.thought.trim_start();
    // Whole words and phrases, so that "explanation" is no plan and
    // "unfounded" no evidence; a key ending in '*' is a word start.
    let words: Vec<String> = text
        .to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    let padded = format!(" {} ", words.join(" "));
    let has = |keys: &[&str]| {
        keys.iter().any(|k| match k.strip_suffix('*') {
            Some(start) => words.iter().any(|w| w.starts_with(start)),
            None => padded.contains(&format!(" {k} ")),
        })
    };
    if has(&[
        "therefore",
        "conclusion",
        "conclude",
        "so the answer",
        "decision",
        "decided",
        "decide",
    ]) {
        'C'
    } else if has(&["hypothes*", "maybe", "might be", "suspect"]) {
        'H'
    } else if has(&["assume", "assuming"]) {
        'A'
    } else if has(&["plan", "next step", "i will", "let's"]) {
        'P'
    } else if has(&["evidence", "found", "measured", "shows"]) {
        'E'
    } else if text.trim_end().ends_with('?') {
        'Q'
    } else {
        'O'
    }
}

/// Whether `c` belongs to the character before it on screen: a combining
/// mark of any script (Thai vowels, Arabic harakat, Devanagari vowel signs,
/// kana voicing marks...), a joiner, a variation selector, an emoji skin
/// tone, or a Hangul jamo after the first.
pub(super) fn extends_previous(c: char) -> bool {
    unicode_normalization::char::is_combining_mark(c)
        || matches!(c, '\u{200c}' | '\u{200d}' | '\u{fe00}'..='\u{fe0f}' | '\u{1f3fb}'..='\u{1f3ff}'
            | '\u{e0020}'..='\u{e007f}'
            // Hangul vowel and final jamo, which follow an initial one.
            | '\u{1160}'..='\u{11ff}' | '\u{d7b0}'..='\u{d7ff}')
}

pub(super) fn regional_indicator(c: char) -> bool {
    matches!(c, '\u{1f1e6}'..='\u{1f1ff}')
}

/// Between two lines of a thought on its one line of the cipher export: no
/// symbol of the notation, and nothing a step's text would hold.
pub(super) const LINE_BREAK: &str = " ¦ ";

/// `text` on one line, cut after about `max` characters: its whitespace
/// runs as one space, and its line breaks (blank lines left out) as ` ¦ `,
/// so that a thought's step lines stay apart (joined by spaces, "since v2.3
/// 2H(.1) missing index" would read as one clause). The cut never splits what
/// shows as one character: an accent from its letter, an emoji sequence
/// joined by U+200D, a flag.
///
/// A cut is marked `…[+N chars]`, N the characters of `text` after the
/// last one shown, whitespace and line breaks included: what the reader
/// does not see of the thought, not of its one-line form (which counted a
/// run of spaces as one, and left out trailing ones).
pub(super) fn squash(text: &str, max: usize) -> String {
    // Each character of the line, with how many characters of `text` it
    // shows up to and including itself; `None` for the spaces and ` ¦ `
    // that stand for whitespace. `visible_controls` maps character to
    // character, so its positions are `text`'s.
    let mut line: Vec<(char, Option<usize>)> = Vec::new();
    // Whitespace since the last character shown: `Some(true)` when it
    // held a line break.
    let mut gap: Option<bool> = None;
    let mut total = 0;
    for (i, c) in visible_controls(text).chars().enumerate() {
        total = i + 1;
        let breaks = matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}');
        if breaks || c.is_whitespace() {
            if !line.is_empty() {
                gap = Some(gap.unwrap_or(false) || breaks);
            }
            continue;
        }
        if let Some(breaks) = gap.take() {
            let between = if breaks { LINE_BREAK } else { " " };
            line.extend(between.chars().map(|c| (c, None)));
        }
        line.push((c, Some(i + 1)));
    }
    let chars: Vec<char> = line.iter().map(|(c, _)| *c).collect();
    if chars.len() <= max {
        return chars.into_iter().collect();
    }
    let mut end = max;
    // A flag is two regional indicators: do not keep half of one.
    let indicators = chars[..end]
        .iter()
        .rev()
        .take_while(|c| regional_indicator(**c))
        .count();
    if indicators % 2 == 1 && chars.get(end).copied().is_some_and(regional_indicator) {
        end += 1;
    }
    while end < chars.len() && (extends_previous(chars[end]) || chars[end - 1] == '\u{200d}') {
        end += 1;
    }
    // The cut ends on a character of the text, not on a space or half a
    // ` ¦ ` standing for whitespace.
    while end > 0 && line[end - 1].1.is_none() {
        end -= 1;
    }
    let shown = line[..end].iter().rev().find_map(|(_, at)| *at).unwrap_or(0);
    let cut: String = chars[..end].iter().collect();
    // Not ` ..`, which in the cipher means "continued in the next thought".
    format!("{cut} …[+{} chars]", total - shown)
}

/// The tags of a cipher header, one word: a tag's spaces become `_` and its
/// commas `;`, so that no tag can read as more tags or as the header's
/// other fields (`x n:99 done`).
pub(super) fn cipher_tags(tags: &[String]) -> String {
    tags.iter()
        .map(|t| {
            one_line(t)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join("_")
                .replace(',', ";")
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// The session in cipher notation: one line per thought,
/// `<n><T>(<refs>) <text>`, with `r@k` for a revision of thought k and
/// `b@f` for a branch's fork point. A thought written in step lines keeps
/// its own: `<n>(<refs>): <its steps>` (not `1O 1O dashboard`, a second type
/// letter before the thought's own step 1).
pub(super) fn write_cipher(out: &mut dyn Write, source: &dyn SessionSource, include_metadata: bool) -> Result<()> {
    let session = source.session();
    let mut s = format!("# {}\n", one_line(&session.title));
    if include_metadata {
        s.push_str(&format!(
            "id:{} tags:{} n:{} b:{} {}\n",
            session.id,
            cipher_tags(&session.tags),
            session.thought_count,
            session.branch_count,
            if session.completed_at.is_some() { "done" } else { "open" }
        ));
    }
    out.write_all(s.as_bytes()).map_err(written)?;
    each_in_chains(source, &mut |t, first| {
        let d = &t.data;
        let mut s = String::new();
        if first {
            match &d.branch_id {
                Some(b) => s.push_str(&format!("\n## {b} b@{}\n", d.branch_from_thought.unwrap_or(0))),
                None => s.push('\n'),
            }
        }
        let refs = match d.revises_thought {
            Some(r) => format!("(r@{r})"),
            None => String::new(),
        };
        let text = squash(&d.thought, 200);
        let n = d.thought_number;
        s.push_str(&if in_steps(&d.thought) {
            format!("{n}{refs}: {text}\n")
        } else {
            format!("{n}{}{refs} {text}\n", step_type(d))
        });
        out.write_all(s.as_bytes()).map_err(written)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cipher cut must not split a family emoji, a flag, or an accent
    /// from its letter.
    #[test]
    fn the_cipher_cut_keeps_what_shows_as_one_character() {
        let pad = "a".repeat(199);
        let family = "\u{1f468}\u{200d}\u{1f469}\u{200d}\u{1f467}";
        assert_eq!(
            squash(&format!("{pad}{family} tail"), 200),
            format!("{pad}{family} …[+5 chars]")
        );
        let flag = "\u{1f1ef}\u{1f1f5}";
        assert_eq!(
            squash(&format!("{pad}{flag} tail"), 200),
            format!("{pad}{flag} …[+5 chars]")
        );
        assert_eq!(
            squash(&format!("{pad}e\u{301}x"), 200),
            format!("{pad}e\u{301} …[+1 chars]")
        );
        assert_eq!(squash(&format!("{pad}bc"), 200), format!("{pad}b …[+1 chars]"));
        // Likewise marks of other scripts, and Korean written as jamo.
        for cluster in ["กิ", "بِ", "कि", "בּ", "\u{304b}\u{3099}", "\u{1100}\u{1161}\u{11a8}"] {
            assert_eq!(
                squash(&format!("{pad}{cluster}x"), 200),
                format!("{pad}{cluster} …[+1 chars]"),
                "{cluster:?}"
            );
        }
        assert_eq!(squash("short  text\n", 200), "short text");
    }

    /// A 156,000-character thought ending in a space shows 200 characters and
    /// `…[+155800 chars]`, not a count of its one-line form: N is every
    /// character of the thought after the last one shown, whitespace and line
    /// breaks included.
    #[test]
    fn the_cipher_cut_counts_the_characters_left_out() {
        let long = format!("{} ", "x".repeat(155_999));
        assert_eq!(squash(&long, 200), format!("{} …[+155800 chars]", "x".repeat(200)));
        // Runs of whitespace after the cut count whole.
        let pad = "a".repeat(199);
        assert_eq!(
            squash(&format!("{pad}b   c\n\n  d  "), 200),
            format!("{pad}b …[+11 chars]")
        );
        // A cut that falls in a run of whitespace (or in the ` ¦ ` of a line
        // break) ends on the character before it, and counts the run.
        let pad = "a".repeat(198);
        assert_eq!(squash(&format!("{pad}b   c"), 200), format!("{pad}b …[+4 chars]"));
        assert_eq!(squash(&format!("{pad}b\r\n\tcd"), 200), format!("{pad}b …[+5 chars]"));
        // Whitespace collapsed before the cut is not counted: it is shown, as one space.
        let text = format!("{}    {}", "a".repeat(100), "b".repeat(150));
        assert_eq!(
            squash(&text, 200),
            format!("{} {} …[+51 chars]", "a".repeat(100), "b".repeat(99))
        );
        // Control characters are shown one for one, so they count as one.
        let text = format!("{}\u{1b}\u{1b}zz", "a".repeat(199));
        assert_eq!(squash(&text, 200), format!("{}\u{241b} …[+3 chars]", "a".repeat(199)));
    }
}
