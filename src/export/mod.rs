//! Rendering sessions: SessionExport v1.0 JSON (with ThoughtNodes), Markdown,
//! and the compact cipher form.
//!
//! Every renderer writes as it goes, taking one thought at a time from a
//! [`SessionSource`]: a session streamed from the database
//! ([`SessionSnapshot`]) is exported in memory that does not grow with it.
//!
//! This file holds what the formats share (the source of thoughts, `next`
//! links, one-line text); each format has its file: `json`, `markdown`,
//! `cipher`. What an import would refuse is checked in `fitness`.

use std::collections::HashMap;
use std::io::Write;

use serde::Serialize;

use crate::domain::{Session, Thought, ThoughtData};
use crate::error::{Error, Result};
use crate::store::SessionSnapshot;

mod cipher;
mod fitness;
mod json;
#[cfg(test)]
mod loaded;
mod markdown;

use cipher::write_cipher;
pub use fitness::ImportFitness;
use json::write_json;
use markdown::write_markdown;

/// Export formats of `session export`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Json,
    Markdown,
    Cipher,
}

impl Format {
    pub const NAMES: &'static [&'static str] = &["json", "markdown", "cipher"];

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

/// ThoughtNode, one thought file of the tree: a thought with its links.
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

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::cipher::step_type;
    use super::loaded::{Loaded, nodes};
    use super::markdown::{block_quote, in_steps};
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

    /// A thought that opens a code fence or an HTML comment must not swallow
    /// every thought after it, nor imitate the document's headings; a title
    /// with a line break must not add header lines.
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

    /// Tags ["a b", "c,d", "<x>"] written `a b, c,d, &lt;x>` would be four
    /// tags to a reader: each is a code span, read back as exactly the tag,
    /// whatever backticks, spaces or HTML it holds.
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

    /// A link reference definition in one thought would make a `[x]` in every
    /// other thought a link: its `[` is escaped where a CommonMark parser
    /// reads a definition, and nowhere else (in code a `\` would show).
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

    /// Definitions a line-by-line check misses (a label over two lines, an
    /// escaped `]`, a tab after a quote marker, inside list items, after a
    /// backtick "fence" that is none), and raw HTML that swallows the rest of
    /// the page. The whole document, parsed as CommonMark, defines nothing
    /// and holds no HTML, whatever the thoughts, description and critique
    /// hold.
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
        // One label defined again and again: the parser reports one per label
        // (so each would take a parse of the whole text).
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

    /// Control characters must not reach the files raw (an escape sequence
    /// acts on the terminal that shows the file), a tag must not add fields
    /// to the cipher header, nor a thought's text make itself a revision in
    /// the cipher.
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
    /// letter; its lines are joined by ` ¦ `, not run together (not `1O 1O
    /// dashboard: ... since v2.3 2H(.1) missing index ...`).
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
            thought_number: n,
            ..ThoughtInput::text(text)
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
                        // Branches in creation order, not by name, as every
                        // other answer lists them.
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
    /// "unfounded" no evidence, and a decision is a conclusion.
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
