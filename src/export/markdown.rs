//! The Markdown form: a heading and metadata, then each thought as a block
//! quote under its own heading, in chain order. Thought text is written so
//! that nothing in it can change the document around it: no link
//! definitions, no raw HTML, no heading or list that escapes its quote.

use std::io::Write;

use super::{SessionSource, each_in_chains, one_line, visible_controls, written};
use crate::error::Result;

/// `text` on one line of the Markdown document's own (its title, tags, a
/// critique's model), with raw HTML shown as text (a title `<textarea>` would
/// swallow the page). A definition cannot start on such a line: it is a
/// heading or follows other text.
pub(super) fn markdown_line(text: &str) -> String {
    one_line(text).replace('<', "&lt;")
}

/// `text` on one line as a Markdown code span, which shows it as written:
/// fenced by one backtick more than its longest run of them, and padded
/// with a space on each side where CommonMark takes one away (text that
/// starts or ends with a backtick, or with a space at both ends).
pub(super) fn code_span(text: &str) -> String {
    let text = one_line(text);
    if text.is_empty() {
        return "` `".into();
    }
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = text.starts_with('`')
        || text.ends_with('`')
        || (text.starts_with(' ') && text.ends_with(' ') && !text.trim_start_matches(' ').is_empty());
    let pad = if pad { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `text` as a Markdown block quote, every line of it (CR, LF and CRLF all
/// end a line in Markdown). Whatever block the text opens (an unclosed code
/// fence, a list, a line that looks like this document's own headings)
/// stays inside the quote: a block quote ends every block opened in it.
///
/// Two things a block quote does not contain, which [`neutralized`] takes
/// out of the text first: a link reference definition (`[x]: https://...`)
/// or footnote definition counts for the whole document, and would turn a
/// `[x]` in another thought into a link; and raw HTML reaches the page as
/// HTML, where an unclosed `<!--` or `<textarea>` swallows the rest of the
/// document. Both are found by parsing the text as CommonMark, so code
/// (fenced, indented or inline) is left exactly as it is.
pub(super) fn block_quote(out: &mut String, text: &str) {
    let text = visible_controls(text.trim_end())
        .replace("\r\n", "\n")
        .replace('\r', "\n");
    // Leading tabs as spaces: after `> ` a tab reaches only column 4 of the
    // line, and tab-indented code would lose its indent.
    let mut spaced = String::with_capacity(text.len());
    for (i, line) in text.split('\n').enumerate() {
        if i > 0 {
            spaced.push('\n');
        }
        let rest = line.trim_start_matches([' ', '\t']);
        let mut column = 0;
        for c in line[..line.len() - rest.len()].chars() {
            let width = if c == '\t' { 4 - column % 4 } else { 1 };
            spaced.extend(std::iter::repeat_n(' ', width));
            column += width;
        }
        spaced.push_str(rest);
    }
    for line in neutralized(&spaced).split('\n') {
        out.push('>');
        if !line.is_empty() {
            out.push(' ');
            out.push_str(line);
        }
        out.push('\n');
    }
    out.push('\n');
}

/// `text` with the `[` of every link reference or footnote definition
/// escaped (`\[`, which shows as `[`) and the `<` of every piece of raw HTML
/// written `&lt;` (it shows as `<`, as text), as a CommonMark parser with
/// footnotes (GitHub's flavour) reads the text. Taking one out can make
/// another appear (text that followed a definition), so it parses again
/// until none is left.
pub(super) fn neutralized(text: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag};
    let mut text = text.to_string();
    // Each round removes at least one. The parser reports one definition
    // per label, so a text repeating one label would take a round (a parse
    // of the whole text) for each: after a few rounds, every `[` and `<`
    // outside code is escaped in one pass instead.
    for _ in 0..NEUTRALIZING_ROUNDS {
        let mut brackets: Vec<usize> = Vec::new();
        let mut angles: Vec<usize> = Vec::new();
        let mut events = Parser::new_ext(&text, Options::ENABLE_FOOTNOTES).into_offset_iter();
        for (event, range) in events.by_ref() {
            match event {
                Event::Html(_) | Event::InlineHtml(_) => {
                    angles.extend(text[range.clone()].match_indices('<').map(|(i, _)| range.start + i));
                }
                Event::Start(Tag::FootnoteDefinition(_)) => {
                    brackets.extend(text[range.clone()].find('[').map(|i| range.start + i));
                }
                _ => {}
            }
        }
        for (_, def) in events.reference_definitions().iter() {
            brackets.extend(text[def.span.clone()].find('[').map(|i| def.span.start + i));
        }
        if brackets.is_empty() && angles.is_empty() {
            return text;
        }
        let mut edits: Vec<(usize, &str)> = brackets
            .into_iter()
            .map(|i| (i, "\\["))
            .chain(angles.into_iter().map(|i| (i, "&lt;")))
            .collect();
        edits.sort_unstable();
        edits.dedup_by_key(|(i, _)| *i);
        for (at, with) in edits.into_iter().rev() {
            text.replace_range(at..at + 1, with);
        }
    }
    escaped_outside_code(&text)
}

/// Rounds of [`neutralized`] before it escapes everything outside code.
pub(super) const NEUTRALIZING_ROUNDS: usize = 4;

/// `text` with every `[` and `<` outside code (blocks and spans) that is
/// not escaped already written `\[` and `&lt;`: no definition and no HTML
/// can start then. Links in the text show as text.
pub(super) fn escaped_outside_code(text: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag};
    let mut code: Vec<std::ops::Range<usize>> = Vec::new();
    for (event, range) in Parser::new_ext(text, Options::ENABLE_FOOTNOTES).into_offset_iter() {
        if matches!(event, Event::Code(_) | Event::Start(Tag::CodeBlock(_))) {
            code.push(range);
        }
    }
    // In document order: one pass over both.
    code.sort_unstable_by_key(|r| r.start);
    let mut next_code = 0;
    let mut backslashes = 0;
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (i, c) in text.char_indices() {
        while next_code < code.len() && code[next_code].end <= i {
            next_code += 1;
        }
        let in_code = code.get(next_code).is_some_and(|r| r.start <= i);
        let escaped = backslashes % 2 == 1;
        backslashes = if c == '\\' { backslashes + 1 } else { 0 };
        match c {
            '[' if !escaped && !in_code => out.push_str("\\["),
            '<' if !escaped && !in_code => out.push_str("&lt;"),
            c => out.push(c),
        }
    }
    out
}

/// A readable Markdown document with every chain. Each thought is a block
/// quote (its own Markdown renders inside it), so no thought can change the
/// structure around it.
pub(super) fn write_markdown(out: &mut dyn Write, source: &dyn SessionSource, include_metadata: bool) -> Result<()> {
    let session = source.session();
    let mut s = format!("# {}\n\n", markdown_line(&session.title));
    if include_metadata {
        s.push_str(&format!("- **Session:** {}\n", session.id));
        if !session.tags.is_empty() {
            // Each tag a code span: written as it is (no Markdown or HTML
            // acts in one) and plainly one tag, commas and all (`a b, c,d,
            // &lt;x>` would read as four tags).
            let tags: Vec<String> = session.tags.iter().map(|t| code_span(t)).collect();
            s.push_str(&format!("- **Tags:** {}\n", tags.join(", ")));
        }
        s.push_str(&format!("- **Created:** {}\n", session.created_at));
        s.push_str(&format!("- **Updated:** {}\n", session.updated_at));
        s.push_str(&format!(
            "- **Thoughts:** {} ({} {})\n",
            session.thought_count,
            session.branch_count,
            if session.branch_count == 1 {
                "branch"
            } else {
                "branches"
            }
        ));
        s.push_str(&format!(
            "- **Status:** {}\n",
            if session.completed_at.is_some() {
                "completed"
            } else {
                "active"
            }
        ));
        if let Some(d) = session.description.as_deref().filter(|d| !d.is_empty()) {
            s.push('\n');
            block_quote(&mut s, d);
        } else {
            s.push('\n');
        }
    }
    out.write_all(s.as_bytes()).map_err(written)?;
    let revised_by = source.revised_by()?;
    each_in_chains(source, &mut |t, first| {
        let d = &t.data;
        let mut s = String::new();
        if first {
            match &d.branch_id {
                None => s.push_str("## Main chain\n\n"),
                Some(b) => {
                    let from = d.branch_from_thought.unwrap_or(0);
                    s.push_str(&format!("## Branch `{b}` (from thought {from})\n\n"));
                }
            }
        }
        s.push_str(&format!("### Thought {}/{}", d.thought_number, d.total_thoughts));
        if let Some(r) = d.revises_thought {
            s.push_str(&format!(" (revises #{r})"));
        }
        if let Some(by) = revised_by.get(&t.node_id) {
            let by: Vec<String> = by.iter().map(|n| format!("#{n}")).collect();
            s.push_str(&format!(" (revised by {})", by.join(", ")));
        }
        s.push_str("\n\n");
        block_quote(&mut s, &d.thought);
        if let Some(c) = &d.critique {
            s.push_str(&format!("**Critique** ({}):\n\n", markdown_line(&c.model)));
            block_quote(&mut s, &c.text);
        }
        if d.critique_requested == Some(true) {
            s.push_str("**Critique** asked for, none received.\n\n");
        }
        out.write_all(s.as_bytes()).map_err(written)
    })
}

/// The length of the step prefix `<n><T>(<refs>)` a line of cipher starts
/// with (the guide's grammar: a step number of one to three digits, not
/// starting with 0; a step-type letter; references in parentheses, no
/// spaces), when a space and some content follow it; else `None`, so that
/// "1 thing" or "3D printing" is no step.
pub(super) fn step_prefix(line: &str) -> Option<usize> {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    if !(1..=3).contains(&digits) || line.starts_with('0') {
        return None;
    }
    let rest = &line[digits..];
    let mut end = digits + 1;
    if !rest.starts_with(|c: char| "HEOAQPRXC".contains(c)) {
        return None;
    }
    if let Some(refs) = line[end..].strip_prefix('(') {
        let inside = refs.find(')')?;
        if inside == 0 || refs[..inside].contains(char::is_whitespace) {
            return None;
        }
        end += inside + 2;
    }
    let after = &line[end..];
    (after.starts_with([' ', '\t']) && !after.trim().is_empty()).then_some(end)
}

/// Whether a thought is written in the cipher's step lines: its first line
/// with something on it starts with a step prefix.
pub(super) fn in_steps(text: &str) -> bool {
    text.lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty())
        .is_some_and(|l| step_prefix(l).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The last resort of `neutralized`: every `[` and `<` outside code,
    /// not escaped already, is.
    #[test]
    fn escaping_outside_code_leaves_code_and_escapes_alone() {
        assert_eq!(
            escaped_outside_code("a [b] `[c] <d>` \\[e <f> é[\n\n    [g] <h>\n\n```\n[i]: <j>\n```"),
            "a \\[b] `[c] <d>` \\[e &lt;f> é\\[\n\n    [g] <h>\n\n```\n[i]: <j>\n```"
        );
    }
}
