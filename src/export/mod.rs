//! Rendering sessions: SessionExport v1.0 JSON (with ThoughtNodes), Markdown,
//! and the compact cipher form.
//!
//! Every renderer writes as it goes, taking one thought at a time from a
//! [`SessionSource`]: a session streamed from the database
//! ([`SessionSnapshot`]) is exported in memory that does not grow with it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::io::Write;

use serde::{Serialize, Serializer, ser::SerializeSeq};

use crate::domain::{Session, Thought, ThoughtData};
use crate::error::{Error, Result};
use crate::store::SessionSnapshot;

mod fitness;
pub use fitness::ImportFitness;

/// Export formats of `session export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Json,
    Markdown,
    Cipher,
}

impl Format {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "json" => Some(Format::Json),
            "markdown" | "md" => Some(Format::Markdown),
            "cipher" => Some(Format::Cipher),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Markdown => "markdown",
            Format::Cipher => "cipher",
        }
    }
}

/// ThoughtNode of DATA-MODELS: a thought with its links.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThoughtNode {
    pub id: String,
    pub data: ThoughtData,
    pub prev: Option<String>,
    pub next: Vec<String>,
    pub revises_node: Option<String>,
    pub branch_origin: Option<String>,
    pub branch_id: Option<String>,
}

/// The version a SessionExport is written with (and the one an import reads).
pub const VERSION: &str = "1.0";

/// SessionExport v1.0.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionExport {
    pub version: String,
    pub session: Session,
    pub nodes: Vec<ThoughtNode>,
    pub exported_at: String,
}

/// Where the thoughts of a session being rendered come from.
pub trait SessionSource {
    fn session(&self) -> &Session;
    /// `(prev_node, node_id)` of every thought that follows another, in
    /// creation order.
    fn links(&self) -> Result<Vec<(String, String)>>;
    /// Every thought's `seq`, in creation order.
    fn creation_order(&self) -> Result<Vec<i64>>;
    /// Call `f` with every thought, the main chain by number, then each
    /// branch by number, the branches in creation order (then by id); stop
    /// at `f`'s first error and return it.
    fn each_thought(&self, f: &mut dyn FnMut(Thought) -> Result<()>) -> Result<()>;
    /// For each revised thought's node id, the numbers of the thoughts
    /// revising it, oldest first (a pass over the thoughts, unless the
    /// source has them at hand).
    fn revised_by(&self) -> Result<HashMap<String, Vec<u32>>> {
        let mut by: HashMap<String, Vec<(i64, u32)>> = HashMap::new();
        self.each_thought(&mut |t| {
            if let (Some(node), Some(_)) = (t.revises_node, t.data.revises_thought) {
                by.entry(node).or_default().push((t.seq, t.data.thought_number));
            }
            Ok(())
        })?;
        Ok(by
            .into_iter()
            .map(|(node, mut v)| {
                v.sort_unstable();
                (node, v.into_iter().map(|(_, n)| n).collect())
            })
            .collect())
    }
}

impl SessionSource for SessionSnapshot<'_> {
    fn session(&self) -> &Session {
        &self.session
    }

    fn links(&self) -> Result<Vec<(String, String)>> {
        SessionSnapshot::links(self)
    }

    fn creation_order(&self) -> Result<Vec<i64>> {
        SessionSnapshot::creation_order(self)
    }

    fn each_thought(&self, f: &mut dyn FnMut(Thought) -> Result<()>) -> Result<()> {
        SessionSnapshot::each_thought(self, f)
    }

    fn revised_by(&self) -> Result<HashMap<String, Vec<u32>>> {
        SessionSnapshot::revised_by(self)
    }
}

/// A session whose thoughts are already in memory, in any order (the
/// tests' reference for what streaming from the database must give).
#[cfg(test)]
pub struct Loaded<'a> {
    pub session: &'a Session,
    pub thoughts: &'a [Thought],
}

#[cfg(test)]
impl SessionSource for Loaded<'_> {
    fn session(&self) -> &Session {
        self.session
    }

    fn links(&self) -> Result<Vec<(String, String)>> {
        Ok(links_of(self.thoughts))
    }

    fn creation_order(&self) -> Result<Vec<i64>> {
        let mut seqs: Vec<i64> = self.thoughts.iter().map(|t| t.seq).collect();
        seqs.sort_unstable();
        Ok(seqs)
    }

    fn each_thought(&self, f: &mut dyn FnMut(Thought) -> Result<()>) -> Result<()> {
        // A branch's row is created with its first thought, at that
        // thought's time: branches by that time, then by id, as the store
        // has them.
        let mut created: HashMap<&str, &str> = HashMap::new();
        for t in self.thoughts {
            if let Some(b) = t.data.branch_id.as_deref() {
                let at = created.entry(b).or_insert(&t.data.timestamp);
                *at = (*at).min(t.data.timestamp.as_str());
            }
        }
        let chain = |t: &'_ Thought| -> Option<(&str, String)> {
            t.data
                .branch_id
                .as_deref()
                .map(|b| (created.get(b).copied().unwrap_or_default(), b.to_string()))
        };
        let mut in_order: Vec<&Thought> = self.thoughts.iter().collect();
        in_order.sort_by(|a, b| (chain(a), a.data.thought_number).cmp(&(chain(b), b.data.thought_number)));
        in_order.into_iter().try_for_each(|t| f(t.clone()))
    }
}

/// `(prev_node, node_id)` of every thought that follows another, in creation order.
#[cfg(test)]
fn links_of(thoughts: &[Thought]) -> Vec<(String, String)> {
    let mut by_seq: Vec<&Thought> = thoughts.iter().collect();
    by_seq.sort_by_key(|t| t.seq);
    by_seq
        .into_iter()
        .filter_map(|t| Some((t.prev_node.clone()?, t.node_id.clone())))
        .collect()
}

/// For each node, the nodes whose `prev` it is, in creation order.
pub struct NextLinks(HashMap<String, Vec<String>>);

impl NextLinks {
    pub fn new(links: Vec<(String, String)>) -> Self {
        let mut next: HashMap<String, Vec<String>> = HashMap::new();
        for (prev, node) in links {
            next.entry(prev).or_default().push(node);
        }
        NextLinks(next)
    }

    pub fn of(source: &dyn SessionSource) -> Result<Self> {
        Ok(NextLinks::new(source.links()?))
    }

    /// Every node some thought names as its `prev`.
    pub fn prevs(&self) -> impl Iterator<Item = &String> {
        self.0.keys()
    }

    /// The ThoughtNode of `t`.
    pub fn node(&self, t: Thought) -> ThoughtNode {
        ThoughtNode {
            next: self.0.get(&t.node_id).cloned().unwrap_or_default(),
            id: t.node_id,
            prev: t.prev_node,
            revises_node: t.revises_node,
            branch_origin: t.branch_origin,
            branch_id: t.data.branch_id.clone(),
            data: t.data,
        }
    }
}

/// The nodes of loaded thoughts, in the order given. `next` lists every node
/// whose `prev` is the node, in creation order.
#[cfg(test)]
fn nodes(thoughts: &[Thought]) -> Vec<ThoughtNode> {
    let next = NextLinks::new(links_of(thoughts));
    thoughts.iter().map(|t| next.node(t.clone())).collect()
}

/// How the JSON form is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Indented, for files and terminals.
    Pretty,
    /// One line, for answers.
    Compact,
}

/// Write the session in `format` to `out`, one thought at a time. A
/// SessionExport of a session an import would refuse (see
/// [`ImportFitness`]) stops with that error as the nodes go by: for a
/// destination that drops what an error leaves (an answer, a file written
/// aside and renamed).
pub fn write(
    out: &mut dyn Write,
    format: Format,
    source: &dyn SessionSource,
    include_metadata: bool,
    layout: Layout,
) -> Result<()> {
    match format {
        Format::Json => {
            let fitness = ImportFitness::new(source.session())?;
            write_json(out, layout, source, NextLinks::of(source)?, Some(fitness))
        }
        Format::Markdown => write_markdown(out, source, include_metadata),
        Format::Cipher => write_cipher(out, source, include_metadata),
    }
}

/// [`write`] for a destination that keeps whatever was written (stdout): a
/// SessionExport is checked in a pass of its own first, so that a session
/// an import would refuse is refused before a byte is written.
pub fn write_to_stream(
    out: &mut dyn Write,
    format: Format,
    source: &dyn SessionSource,
    include_metadata: bool,
    layout: Layout,
) -> Result<()> {
    if format != Format::Json {
        return write(out, format, source, include_metadata, layout);
    }
    let mut fitness = ImportFitness::new(source.session())?;
    source.each_thought(&mut |t| fitness.thought(&t))?;
    let next = NextLinks::of(source)?;
    fitness.finish(next.prevs())?;
    write_json(out, layout, source, next, None)
}

fn written(e: std::io::Error) -> Error {
    Error::io("writing the export", e)
}

fn json_written(e: serde_json::Error) -> Error {
    if e.is_io() {
        written(e.into())
    } else {
        Error::Internal(format!("rendering the export as JSON: {e}"))
    }
}

/// SessionExport v1.0 with its nodes streamed.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct StreamedExport<'a> {
    version: &'static str,
    session: &'a Session,
    nodes: StreamedNodes<'a>,
    exported_at: String,
}

struct StreamedNodes<'a> {
    source: &'a dyn SessionSource,
    next: NextLinks,
    /// What an import would refuse, checked as the nodes go by (such a
    /// session is not exported); `None` when it was checked before.
    fitness: RefCell<Option<ImportFitness<'a>>>,
    /// The source's own error, kept whole: serde passes only its text on.
    failure: RefCell<Option<Error>>,
}

impl Serialize for StreamedNodes<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(None)?;
        let mut write_error = None;
        let mut fitness = self.fitness.borrow_mut().take();
        let walked = self
            .source
            .each_thought(&mut |t| {
                if let Some(fitness) = &mut fitness {
                    fitness.thought(&t)?;
                }
                seq.serialize_element(&self.next.node(t)).map_err(|e| {
                    write_error = Some(e);
                    Error::Internal("stopped writing".into())
                })
            })
            .and_then(|()| fitness.map_or(Ok(()), |f| f.finish(self.next.prevs())));
        if let Some(e) = write_error {
            return Err(e);
        }
        if let Err(e) = walked {
            let text = e.to_string();
            *self.failure.borrow_mut() = Some(e);
            return Err(serde::ser::Error::custom(text));
        }
        seq.end()
    }
}

fn write_json<'a>(
    out: &mut dyn Write,
    layout: Layout,
    source: &'a dyn SessionSource,
    next: NextLinks,
    fitness: Option<ImportFitness<'a>>,
) -> Result<()> {
    let doc = StreamedExport {
        version: VERSION,
        session: source.session(),
        nodes: StreamedNodes {
            source,
            next,
            fitness: RefCell::new(fitness),
            failure: RefCell::new(None),
        },
        exported_at: crate::domain::now(),
    };
    let result = match layout {
        Layout::Pretty => doc.serialize(&mut serde_json::Serializer::pretty(out)),
        Layout::Compact => doc.serialize(&mut serde_json::Serializer::new(out)),
    };
    if let Some(e) = doc.nodes.failure.take() {
        return Err(e);
    }
    result.map_err(json_written)
}

/// Call `f` with each thought and whether it starts a chain (the main
/// chain, or a branch).
fn each_in_chains(source: &dyn SessionSource, f: &mut dyn FnMut(&Thought, bool) -> Result<()>) -> Result<()> {
    let mut chain: Option<Option<String>> = None;
    source.each_thought(&mut |t| {
        let first = chain.as_ref() != Some(&t.data.branch_id);
        if first {
            chain = Some(t.data.branch_id.clone());
        }
        f(&t, first)
    })
}

/// `text` with every control character other than line breaks and tabs
/// shown as its symbol (U+2400 to U+2421: `␛` for ESC) or U+FFFD: written
/// raw into a Markdown or cipher file, an escape sequence would act on the
/// terminal that shows the file.
fn visible_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let hidden = |c: char| c.is_control() && !matches!(c, '\n' | '\r' | '\t');
    if !text.chars().any(hidden) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars()
        .map(|c| match c {
            c if !hidden(c) => c,
            '\u{7f}' => '\u{2421}',
            c if (c as u32) < 0x20 => char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'),
            _ => '\u{fffd}',
        })
        .collect::<String>()
        .into()
}

/// `text` on one line: line breaks and other control characters become
/// spaces, so that a title or tag cannot add lines to a document's header.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() || matches!(c, '\u{2028}' | '\u{2029}') {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// `text` on one line of the Markdown document's own (its title, tags, a
/// critique's model), with raw HTML shown as text (review 13-f: a title
/// `<textarea>` swallowed the page). A definition cannot start on such a
/// line: it is a heading or follows other text.
fn markdown_line(text: &str) -> String {
    one_line(text).replace('<', "&lt;")
}

/// `text` on one line as a Markdown code span, which shows it as written:
/// fenced by one backtick more than its longest run of them, and padded
/// with a space on each side where CommonMark takes one away (text that
/// starts or ends with a backtick, or with a space at both ends).
fn code_span(text: &str) -> String {
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
fn block_quote(out: &mut String, text: &str) {
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
fn neutralized(text: &str) -> String {
    use pulldown_cmark::{Event, Options, Parser, Tag};
    let mut text = text.to_string();
    // Each round removes at least one. The parser reports one definition
    // per label, so a text repeating one label would take a round (a parse
    // of the whole text) for each: after a few rounds, every `[` and `<`
    // outside code is escaped in one pass instead (review 13-f).
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
const NEUTRALIZING_ROUNDS: usize = 4;

/// `text` with every `[` and `<` outside code (blocks and spans) that is
/// not escaped already written `\[` and `&lt;`: no definition and no HTML
/// can start then. Links in the text show as text.
fn escaped_outside_code(text: &str) -> String {
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
fn write_markdown(out: &mut dyn Write, source: &dyn SessionSource, include_metadata: bool) -> Result<()> {
    let session = source.session();
    let mut s = format!("# {}\n\n", markdown_line(&session.title));
    if include_metadata {
        s.push_str(&format!("- **Session:** {}\n", session.id));
        if !session.tags.is_empty() {
            // Each tag a code span: written as it is (no Markdown or HTML
            // acts in one) and plainly one tag, commas and all (review:
            // `a b, c,d, &lt;x>` read as four tags).
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
fn step_prefix(line: &str) -> Option<usize> {
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
fn in_steps(text: &str) -> bool {
    text.lines()
        .map(str::trim_start)
        .find(|l| !l.is_empty())
        .is_some_and(|l| step_prefix(l).is_some())
}

/// The step-type letter of the cipher notation for a thought in prose: `R`
/// for a revision, else a guess from its wording (`O` when nothing fits).
fn step_type(d: &ThoughtData) -> char {
    if d.is_revision {
        return 'R';
    }
    let text = d.thought.trim_start();
    // Whole words and phrases, so that "explanation" is no plan and
    // "unfounded" no evidence (review 16-e); a key ending in '*' is a word
    // start.
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
fn extends_previous(c: char) -> bool {
    unicode_normalization::char::is_combining_mark(c)
        || matches!(c, '\u{200c}' | '\u{200d}' | '\u{fe00}'..='\u{fe0f}' | '\u{1f3fb}'..='\u{1f3ff}'
            | '\u{e0020}'..='\u{e007f}'
            // Hangul vowel and final jamo, which follow an initial one.
            | '\u{1160}'..='\u{11ff}' | '\u{d7b0}'..='\u{d7ff}')
}

fn regional_indicator(c: char) -> bool {
    matches!(c, '\u{1f1e6}'..='\u{1f1ff}')
}

/// Between two lines of a thought on its one line of the cipher export: no
/// symbol of the notation, and nothing a step's text would hold.
const LINE_BREAK: &str = " ¦ ";

/// `text` on one line, cut after about `max` characters: its whitespace
/// runs as one space, and its line breaks (blank lines left out) as ` ¦ `,
/// so that a thought's step lines stay apart (review 18: joined by spaces,
/// "since v2.3 2H(.1) missing index" read as one clause). The cut never
/// splits what shows as one character: an accent from its letter, an emoji
/// sequence joined by U+200D, a flag.
///
/// A cut is marked `…[+N chars]`, N the characters of `text` after the
/// last one shown, whitespace and line breaks included: what the reader
/// does not see of the thought, not of its one-line form (which counted a
/// run of spaces as one, and left out trailing ones).
fn squash(text: &str, max: usize) -> String {
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
fn cipher_tags(tags: &[String]) -> String {
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
/// its own: `<n>(<refs>): <its steps>` (review 18: `1O 1O dashboard`, a
/// second type letter before the thought's own step 1).
fn write_cipher(out: &mut dyn Write, source: &dyn SessionSource, include_metadata: bool) -> Result<()> {
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
    use serde_json::Value;

    use super::*;

    /// Render loaded thoughts as Markdown.
    fn markdown(session: &Session, thoughts: &[Thought], include_metadata: bool) -> String {
        to_text(Format::Markdown, &Loaded { session, thoughts }, include_metadata)
    }

    /// Render loaded thoughts in cipher notation.
    fn cipher(session: &Session, thoughts: &[Thought]) -> String {
        to_text(Format::Cipher, &Loaded { session, thoughts }, true)
    }

    fn to_text(format: Format, source: &dyn SessionSource, include_metadata: bool) -> String {
        let mut bytes = Vec::new();
        // Writing to memory from memory: nothing here can fail.
        let _ = write(&mut bytes, format, source, include_metadata, Layout::Pretty);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    pub(super) fn thought(seq: i64, n: u32, branch: Option<&str>, prev: Option<&str>, text: &str) -> Thought {
        Thought {
            seq,
            session_id: "s".into(),
            node_id: crate::domain::node_id("s", branch, n),
            prev_node: prev.map(str::to_string),
            revises_node: None,
            branch_origin: None,
            data: ThoughtData {
                thought: text.into(),
                thought_number: n,
                total_thoughts: n,
                next_thought_needed: true,
                is_revision: false,
                revises_thought: None,
                branch_from_thought: branch.map(|_| 1),
                branch_id: branch.map(str::to_string),
                needs_more_thoughts: None,
                include_guide: None,
                timestamp: "2025-01-01T00:00:00.000Z".into(),
                critique: None,
                critique_requested: None,
            },
        }
    }

    pub(super) fn session() -> Session {
        Session {
            id: "s".into(),
            title: "T".into(),
            description: None,
            tags: vec!["a".into()],
            thought_count: 3,
            branch_count: 1,
            partition_path: None,
            created_at: "2025-01-01T00:00:00.000Z".into(),
            updated_at: "2025-01-01T00:00:00.000Z".into(),
            last_accessed_at: "2025-01-01T00:00:00.000Z".into(),
            completed_at: None,
            domain: None,
        }
    }

    /// Rows edited by hand before the schema refused them: a SessionExport
    /// of them is refused naming what is wrong, as `import` would refuse it,
    /// and nothing of it is written; Markdown, which is not imported, is.
    #[test]
    fn a_session_import_would_refuse_is_not_exported_as_json() {
        let mut stray = thought(2, 2, Some("x"), Some("s:1"), "forks from 9");
        stray.branch_origin = Some("s:9".into());
        let ts = vec![thought(1, 1, None, None, "a"), stray];
        let source = Loaded {
            session: &session(),
            thoughts: &ts,
        };
        let mut bytes = Vec::new();
        let err = write(&mut bytes, Format::Json, &source, true, Layout::Compact).unwrap_err();
        assert!(
            err.to_string()
                .contains("branch \"x\" forks from s:9, which is not a thought of its main chain"),
            "{err}"
        );
        let mut late = session();
        late.updated_at = "yesterday".into();
        let mut bytes = Vec::new();
        let err = write(
            &mut bytes,
            Format::Json,
            &Loaded {
                session: &late,
                thoughts: &ts[..1],
            },
            true,
            Layout::Compact,
        )
        .unwrap_err();
        assert!(err.to_string().contains("updatedAt \"yesterday\""), "{err}");
        assert!(bytes.is_empty(), "{}", String::from_utf8_lossy(&bytes));
        assert!(markdown(&session(), &ts, true).contains("forks from 9"));
    }

    #[test]
    fn next_lists_children_in_creation_order() {
        let ts = vec![
            thought(1, 1, None, None, "a"),
            thought(3, 2, None, Some("s:1"), "b"),
            thought(2, 2, Some("x"), Some("s:1"), "c"),
        ];
        let nodes = nodes(&ts);
        assert_eq!(nodes[0].next, vec!["s:x:2".to_string(), "s:2".to_string()]);
        assert!(nodes[1].next.is_empty());
    }

    /// Review 10-b: a thought that opened a code fence or an HTML comment
    /// swallowed every thought after it, and one could imitate the
    /// document's headings; a title with a line break added header lines.
    #[test]
    fn a_thought_cannot_change_the_markdown_around_it() {
        let ts = vec![
            thought(1, 1, None, None, "```python\ndef f():\n\n    pass"),
            thought(
                2,
                2,
                None,
                Some("s:1"),
                "<!-- hidden\r### Thought 9/9 (revises #1)\r\n\n## Branch `evil`",
            ),
            thought(3, 3, None, Some("s:2"), "**bold** and a list:\n- one"),
        ];
        let mut s = session();
        s.title = "Title\n## Main chain".into();
        s.tags = vec!["a\nb".into()];
        let md = markdown(&s, &ts, true);
        let unquoted: Vec<&str> = md.lines().filter(|l| !l.starts_with('>')).collect();
        assert_eq!(
            unquoted
                .iter()
                .filter(|l| l.starts_with('#'))
                .copied()
                .collect::<Vec<_>>(),
            [
                "# Title ## Main chain",
                "## Main chain",
                "### Thought 1/1",
                "### Thought 2/2",
                "### Thought 3/3"
            ],
            "{md}"
        );
        assert!(md.contains("- **Tags:** `a b`\n"), "{md}");
        // Tab-indented code keeps its four columns inside the quote.
        let mut quoted = String::new();
        block_quote(&mut quoted, "run:\n\n\tcargo build\n  \tx");
        assert_eq!(quoted, "> run:\n>\n>     cargo build\n>     x\n\n");
        assert!(
            md.contains("> ```python\n> def f():\n>\n>     pass\n\n### Thought 2/2"),
            "{md}"
        );
        assert!(
            md.contains("> &lt;!-- hidden\n> ### Thought 9/9 (revises #1)\n>\n> ## Branch `evil`\n"),
            "{md}"
        );
        let c = cipher(&s, &ts);
        assert!(c.starts_with("# Title ## Main chain\nid:s tags:a_b "), "{c}");
    }

    /// Review: tags ["a b", "c,d", "<x>"] were written `a b, c,d, &lt;x>`,
    /// four tags to a reader. Each is a code span, read back as exactly
    /// the tag, whatever backticks, spaces or HTML it holds.
    #[test]
    fn markdown_tags_read_back_one_by_one() {
        let mut s = session();
        s.tags = vec![
            "a b".into(),
            "c,d".into(),
            "<x>".into(),
            "x`y".into(),
            "`z".into(),
            "``".into(),
            " sp ".into(),
            " lead".into(),
            "&amp; *no* [link](u)".into(),
        ];
        let md = markdown(&s, &[], true);
        assert!(
            md.contains("- **Tags:** `a b`, `c,d`, `<x>`, ``x`y``, `` `z ``, ``` `` ```, `  sp  `,"),
            "{md}"
        );
        let line = md.lines().find(|l| l.starts_with("- **Tags:**")).expect("tags line");
        let mut spans = Vec::new();
        for event in pulldown_cmark::Parser::new(line) {
            match event {
                pulldown_cmark::Event::Code(code) => spans.push(code.to_string()),
                pulldown_cmark::Event::Text(t) => {
                    assert!(
                        t.trim().is_empty() || t.trim() == "," || t.trim() == "Tags:",
                        "{t:?} in {line}"
                    )
                }
                pulldown_cmark::Event::Html(_) | pulldown_cmark::Event::InlineHtml(_) => panic!("HTML in {line}"),
                _ => {}
            }
        }
        assert_eq!(spans, s.tags, "{line}");
    }

    /// Review 10-b: a link reference definition in one thought made a
    /// `[x]` in every other thought a link. Its `[` is escaped where a
    /// CommonMark parser reads a definition, and nowhere else (in code a
    /// `\` would show).
    #[test]
    fn a_link_definition_in_a_thought_reaches_no_other_thought() {
        let mut quoted = String::new();
        block_quote(
            &mut quoted,
            "[x]: https://example.com/a\nsee [x]\n[x]: not one, inside a paragraph\n\n  [^1]: note\n\n> [y]: /b\n\n\
             [not a definition]\n```toml\n[x]: kept\n```\n~~~~\n[x]: kept too\n~~~\n~~~~\n\n    [x]: indented code\n\n\
             []: empty\n`[x]: <b>` in a code span",
        );
        assert_eq!(
            quoted,
            "> \\[x]: https://example.com/a\n> see [x]\n> [x]: not one, inside a paragraph\n>\n>   \\[^1]: note\n>\n\
             > > \\[y]: /b\n>\n> [not a definition]\n> ```toml\n> [x]: kept\n> ```\n> ~~~~\n> [x]: kept too\n> ~~~\n\
             > ~~~~\n>\n>     [x]: indented code\n>\n> []: empty\n> `[x]: <b>` in a code span\n\n"
        );
    }

    /// The last resort of `neutralized`: every `[` and `<` outside code,
    /// not escaped already, is.
    #[test]
    fn escaping_outside_code_leaves_code_and_escapes_alone() {
        assert_eq!(
            escaped_outside_code("a [b] `[c] <d>` \\[e <f> é[\n\n    [g] <h>\n\n```\n[i]: <j>\n```"),
            "a \\[b] `[c] <d>` \\[e &lt;f> é\\[\n\n    [g] <h>\n\n```\n[i]: <j>\n```"
        );
    }

    /// Review 13-e: definitions a line-by-line check missed (a label over
    /// two lines, an escaped `]`, a tab after a quote marker, inside list
    /// items, after a backtick "fence" that is none), and raw HTML that
    /// swallows the rest of the page. The whole document, parsed as
    /// CommonMark, defines nothing and holds no HTML, whatever the thoughts,
    /// description and critique hold.
    #[test]
    fn no_thought_defines_links_or_writes_html_into_the_document() {
        let attacks = [
            "[multi\nline]: http://evil-1",
            "[a\\]b]: http://evil-2",
            ">\t[tabq]: http://evil-3",
            "- [listdef]: http://evil-4",
            "1. [olist]: http://evil-5",
            "- item\n\n    [indlist]: http://evil-6",
            "```a`b\n\n[btinfo]: http://evil-7",
            "[^note]: a footnote\n\nsee [^note]",
            "<!-- unclosed comment swallows the rest",
            "<textarea>",
            "text with <span onclick=x>inline html</span> and <!-- a comment -->",
            "<div>\n*block html*\n</div>",
            "    <b>indented code is code</b>",
            "`<code span>` and ``[x]: `y` `` stay",
        ];
        let mut ts = Vec::new();
        for (i, text) in attacks.iter().enumerate() {
            let n = i as u32 + 1;
            let prev = (n > 1).then(|| format!("s:{}", n - 1));
            let mut t = thought(i as i64 + 1, n, None, prev.as_deref(), text);
            t.data.critique = Some(crate::domain::Critique {
                text: format!("critique: {text}"),
                model: "m".into(),
                timestamp: "2025-01-01T00:00:00.000Z".into(),
            });
            ts.push(t);
        }
        let mut s = session();
        s.description = Some("[descdef\nx]: http://evil-desc\n\n<!--".into());
        s.title = "<textarea> title".into();
        s.tags = vec!["<!-- tag".into(), "<style>".into()];
        if let Some(c) = ts[0].data.critique.as_mut() {
            c.model = "<b>model".into();
        }
        // One label defined again and again: the parser reports one per
        // label (review 13-f: each took a parse of the whole text).
        ts[1].data.thought = "[x]: http://evil-dup\n\n".repeat(4000);
        let md = markdown(&s, &ts, true);
        let mut events =
            pulldown_cmark::Parser::new_ext(&md, pulldown_cmark::Options::ENABLE_FOOTNOTES).into_offset_iter();
        let mut html = Vec::new();
        let mut footnotes = 0;
        for (event, range) in events.by_ref() {
            match event {
                pulldown_cmark::Event::Html(_) | pulldown_cmark::Event::InlineHtml(_) => {
                    html.push(md[range].to_string())
                }
                pulldown_cmark::Event::Start(pulldown_cmark::Tag::FootnoteDefinition(_)) => footnotes += 1,
                _ => {}
            }
        }
        let definitions: Vec<String> = events
            .reference_definitions()
            .iter()
            .map(|(l, _)| l.to_string())
            .collect();
        assert!(definitions.is_empty(), "{definitions:?}\n{md}");
        assert!(html.is_empty(), "{html:?}\n{md}");
        assert_eq!(footnotes, 0, "{md}");
        // Code is left as written.
        assert!(md.contains(">     <b>indented code is code</b>\n"), "{md}");
        assert!(md.contains("> `<code span>` and ``[x]: `y` `` stay\n"), "{md}");
        // Every thought is there, as text.
        assert!(md.contains("> &lt;textarea>\n"), "{md}");
        assert!(md.contains("> \\[multi\n> line]: http://evil-1\n"), "{md}");
    }

    /// Review 13-e: control characters reached the files raw (an escape
    /// sequence acts on the terminal that shows the file); a tag could add
    /// fields to the cipher header; a thought's text could make itself a
    /// revision in the cipher.
    #[test]
    fn exports_show_control_characters_and_keep_the_cipher_header_whole() {
        let ts = vec![
            thought(1, 1, None, None, "red \u{1b}[31m alert\u{7}\u{0} and \u{9b}2J, a\ttab"),
            thought(2, 2, None, Some("s:1"), "1R(r@1) not a revision"),
        ];
        let mut s = session();
        s.tags = vec!["x n:99 b:7 done".into(), "a,b".into()];
        let md = markdown(&s, &ts, true);
        assert!(
            !md.chars().any(|c| c.is_control() && !matches!(c, '\n' | '\t')),
            "{md:?}"
        );
        assert!(
            md.contains("> red \u{241b}[31m alert\u{2407}\u{2400} and \u{fffd}2J, a"),
            "{md:?}"
        );
        let c = cipher(&s, &ts);
        assert!(!c.chars().any(|c| c.is_control() && c != '\n'), "{c:?}");
        assert!(c.contains("id:s tags:x_n:99_b:7_done,a;b n:"), "{c}");
        // Its own step prefix is kept as written, after the thought's
        // number; the ledger's `(r@k)` is not there, nor an `R` of its own.
        assert!(c.contains("\n2: 1R(r@1) not a revision\n"), "{c}");
    }

    /// A thought written as the guide teaches keeps its own step prefixes,
    /// after its number and the ledger's references, without a second type
    /// letter; its lines are joined by ` ¦ `, not run together (review 18:
    /// `1O 1O dashboard: ... since v2.3 2H(.1) missing index ...`).
    #[test]
    fn a_thought_in_step_lines_keeps_its_steps_apart() {
        let mut revision = thought(
            2,
            2,
            None,
            Some("s:1"),
            "1R(r@1) index exists; cause is lock contention [++]\n\n  2C(.1) => tune pool\n",
        );
        revision.data.is_revision = true;
        revision.data.revises_thought = Some(1);
        let ts = vec![
            thought(
                1,
                1,
                None,
                None,
                "1O dashboard: p95 `/login` 120ms -> 840ms since v2.3\n2H(.1) missing index on \
                 `sessions.user_id` [+]\n3P chk query plan",
            ),
            revision,
            thought(3, 3, None, Some("s:2"), "First line of prose\r\nsecond  line"),
            thought(4, 4, None, Some("s:3"), &format!("1C adopt it\n{}", "x".repeat(300))),
        ];
        let c = cipher(&session(), &ts);
        let lines: Vec<&str> = c.lines().skip(3).collect();
        assert_eq!(
            lines[..3],
            [
                "1: 1O dashboard: p95 `/login` 120ms -> 840ms since v2.3 ¦ 2H(.1) missing index on \
                 `sessions.user_id` [+] ¦ 3P chk query plan",
                "2(r@1): 1R(r@1) index exists; cause is lock contention [++] ¦ 2C(.1) => tune pool",
                "3O First line of prose ¦ second line",
            ],
            "{c}"
        );
        // The cut counts the separators, and is marked as before.
        assert!(lines[3].starts_with("4: 1C adopt it ¦ xxx"), "{c}");
        assert!(lines[3].ends_with(" …[+114 chars]"), "{c}");
        // Ordinary text that starts with a number is prose.
        for text in [
            "1 thing to check",
            "3D printing",
            "2A",
            "2A ",
            "10P() empty refs",
            "1H(a b) spaced refs",
            "1H(.1 unclosed",
            "0P zero",
            "1234P four digits",
            "1p lower case",
        ] {
            assert!(!in_steps(text), "{text:?}");
        }
        for text in [
            "1H guess",
            "12X(.1,@3) no",
            "\n\n  3P(@redis-cache:6)\tnext",
            "1C(x@6) done",
        ] {
            assert!(in_steps(text), "{text:?}");
        }
    }

    /// Review 10-b: the cipher cut split a family emoji, a flag, and an
    /// accent from its letter.
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
        // Review 10-d: marks of other scripts, and Korean written as jamo.
        for cluster in ["กิ", "بِ", "कि", "בּ", "\u{304b}\u{3099}", "\u{1100}\u{1161}\u{11a8}"] {
            assert_eq!(
                squash(&format!("{pad}{cluster}x"), 200),
                format!("{pad}{cluster} …[+1 chars]"),
                "{cluster:?}"
            );
        }
        assert_eq!(squash("short  text\n", 200), "short text");
    }

    /// Review: a 156,000-character thought ending in a space showed 200
    /// characters and `…[+155799 chars]`, counting its one-line form. N is
    /// every character of the thought after the last one shown, whitespace
    /// and line breaks included.
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

    #[test]
    fn markdown_and_cipher_include_branches() {
        let ts = vec![
            thought(1, 1, None, None, "We found the bug"),
            thought(2, 2, Some("x"), Some("s:1"), "Maybe it is the cache?"),
        ];
        let md = markdown(&session(), &ts, true);
        assert!(md.contains("## Branch `x` (from thought 1)"));
        let c = cipher(&session(), &ts);
        assert!(c.contains("1E We found the bug"), "{c}");
        assert!(c.contains("## x b@1\n2H Maybe"), "{c}");
    }

    /// A session streamed from the database renders exactly as the same
    /// thoughts loaded into memory, in every format, branches, revisions and
    /// backward numbering included.
    #[test]
    fn streamed_from_the_database_renders_as_loaded() {
        use crate::domain::{NewSession, ThoughtInput};
        use crate::store::Target;
        use crate::store::test_support::temp_store;
        let (_d, store) = temp_store();
        let id = store.create_session(NewSession::titled("streamed")).unwrap().id;
        let add = |input: ThoughtInput| {
            store.append_thought(Target::Session(id.clone()), input).unwrap();
        };
        let plain = |text: &str, n: Option<u32>| ThoughtInput {
            thought: text.into(),
            next_thought_needed: true,
            thought_number: n,
            ..Default::default()
        };
        add(plain("Maybe the cache is stale", Some(3)));
        add(plain("We found the bug", Some(1)));
        add(plain("Therefore restart it", Some(2)));
        for b in ["zeta", "alpha"] {
            add(ThoughtInput {
                branch_id: Some(b.into()),
                branch_from_thought: Some(1),
                ..plain(&format!("on {b}"), None)
            });
            // Times in milliseconds: created in the same one, they would be
            // in the order of their ids.
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
        add(ThoughtInput {
            revises_thought: Some(2),
            ..plain("Actually, clear it", Some(4))
        });
        let (session, thoughts) = store.session_thoughts(&id).unwrap();
        for format in [Format::Json, Format::Markdown, Format::Cipher] {
            let mut streamed = Vec::new();
            store
                .with_session(&id, |snapshot| {
                    write(&mut streamed, format, snapshot, true, Layout::Pretty)
                })
                .unwrap();
            let mut loaded = Vec::new();
            write(
                &mut loaded,
                format,
                &Loaded {
                    session: &session,
                    thoughts: &thoughts,
                },
                true,
                Layout::Pretty,
            )
            .unwrap();
            if format == Format::Json {
                let mut a: Value = serde_json::from_slice(&streamed).unwrap();
                let mut b: Value = serde_json::from_slice(&loaded).unwrap();
                a["exportedAt"] = Value::from("then");
                b["exportedAt"] = Value::from("then");
                assert_eq!(a, b);
                let doc: SessionExport = serde_json::from_value(a).unwrap();
                let loaded = Loaded {
                    session: &session,
                    thoughts: &thoughts,
                };
                let mut in_order = Vec::new();
                loaded
                    .each_thought(&mut |t| {
                        in_order.push(t);
                        Ok(())
                    })
                    .unwrap();
                assert_eq!(doc.nodes, nodes(&in_order));
                let numbers: Vec<_> = doc
                    .nodes
                    .iter()
                    .map(|n| (n.branch_id.clone(), n.data.thought_number))
                    .collect();
                assert_eq!(
                    numbers,
                    vec![
                        (None, 1),
                        (None, 2),
                        (None, 3),
                        (None, 4),
                        // Branches in creation order, not by name
                        // (review 18).
                        (Some("zeta".into()), 2),
                        (Some("alpha".into()), 2)
                    ]
                );
            } else {
                assert_eq!(String::from_utf8(streamed).unwrap(), String::from_utf8(loaded).unwrap());
            }
        }
    }

    /// A destination that fails mid-way gives the write error, not a
    /// rendering one.
    #[test]
    fn a_failing_destination_is_an_io_error() {
        struct Full(usize);
        impl std::io::Write for Full {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                if self.0 < buf.len() {
                    return Err(std::io::Error::other("no space left"));
                }
                self.0 -= buf.len();
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let ts: Vec<Thought> = (1..=50)
            .map(|n| thought(n as i64, n, None, None, "some text"))
            .collect();
        for format in [Format::Json, Format::Markdown, Format::Cipher] {
            let e = write(
                &mut Full(300),
                format,
                &Loaded {
                    session: &session(),
                    thoughts: &ts,
                },
                true,
                Layout::Pretty,
            )
            .unwrap_err();
            assert!(matches!(e, Error::Io { .. }), "{format:?}: {e:?}");
        }
    }

    /// Step letters come from whole words: "explanation" is no plan,
    /// "unfounded" no evidence, and a decision is a conclusion (review 16-e).
    #[test]
    fn step_letters_read_whole_words() {
        let letter = |text: &str| step_type(&thought(1, 1, None, None, text).data);
        assert_eq!(letter("An explanation of the cache"), 'O');
        assert_eq!(letter("That worry was unfounded"), 'O');
        assert_eq!(letter("Decision: token bucket per key"), 'C');
        assert_eq!(letter("Testing plan for the limiter"), 'P');
        assert_eq!(letter("Hypothesis: the clock drifts"), 'H');
        assert_eq!(letter("We found two slow queries"), 'E');
        assert_eq!(letter("Let's measure it"), 'P');
    }
}
