//! The Srcbook `.src.md` format, as Srcbook and the TypeScript Thoughtbox
//! write it: a header line `<!-- srcbook:{"language":...} -->`, then the
//! cells separated by blank lines: `# title`, markdown as it is, and the
//! package.json and code cells as `###### filename` with a fenced block.
//!
//! Two things Srcbook's writer leaves ambiguous are settled so that export,
//! import and export again give the same bytes:
//! - a code cell's fence is longer than any run of backticks opening a line
//!   of its source, so a ``` inside the code never ends the block;
//! - a markdown line that would read as a cell heading (`# ` or `###### `,
//!   after up to three spaces) gets a backslash before the `#`, which
//!   Markdown shows as the `#` itself; lines already starting with
//!   backslashes there get one more, and import takes one away.
//!
//! Markdown is written without leading and trailing blank lines, and two
//! markdown cells in a row come back as one (the format has no boundary
//! between them).

use serde_json::{Value, json};

use super::{Cell, CellKind, Language, NewCell, Notebook};
use crate::error::{Error, Result};

const HEADER_START: &str = "<!-- srcbook:";
const HEADER_END: &str = " -->";

/// What a `.src.md` text holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub language: Language,
    pub tsconfig: Option<String>,
    pub cells: Vec<NewCell>,
}

impl Decoded {
    /// The first title cell's text, the notebook's name.
    pub fn title(&self) -> Option<&str> {
        self.cells
            .iter()
            .find(|c| c.kind == CellKind::Title)
            .map(|c| c.content.as_str())
    }

    /// Ready to become a notebook: every cell checked, and its name the one
    /// `name` gives, else its first title cell's text, else "Imported
    /// notebook" (checked as a title, trimmed). A `name` given renames the
    /// first title cell too, since the title cell is the notebook's name.
    pub fn checked(self, name: Option<String>) -> Result<(String, Decoded)> {
        let mut cells = self
            .cells
            .into_iter()
            .map(NewCell::checked)
            .collect::<Result<Vec<_>>>()?;
        if let Some(name) = &name {
            super::check_title("name", name)?;
            if let Some(title) = cells.iter_mut().find(|c| c.kind == CellKind::Title) {
                title.content = name.trim().to_string();
            }
        }
        let decoded = Decoded { cells, ..self };
        let name = name
            .or_else(|| decoded.title().map(str::to_string))
            .unwrap_or_else(|| "Imported notebook".into());
        super::check_title("name", &name)?;
        Ok((name.trim().to_string(), decoded))
    }
}

/// The notebook as `.src.md` text.
pub fn encode(notebook: &Notebook) -> String {
    let mut header = json!({ "language": notebook.language.as_str() });
    if let Some(ts) = notebook.tsconfig.as_deref() {
        header["tsconfig.json"] = serde_json::from_str(ts).unwrap_or(Value::String(ts.to_string()));
    }
    let mut blocks = vec![format!("{HEADER_START}{header}{HEADER_END}")];
    // Its name travels with it even when its title cell was deleted.
    if notebook.cells.iter().all(|c| c.kind != CellKind::Title) {
        blocks.push(format!("# {}", notebook.name));
    }
    blocks.extend(notebook.cells.iter().filter_map(|c| encode_cell(c, notebook.language)));
    let mut out = blocks.join("\n\n");
    out.push('\n');
    out
}

fn encode_cell(cell: &Cell, default: Language) -> Option<String> {
    match cell.kind {
        CellKind::Title => Some(format!("# {}", cell.content)),
        CellKind::Markdown => {
            let text = escape_markdown(&trim_blank_lines(&cell.content));
            (!text.is_empty()).then_some(text)
        }
        CellKind::PackageJson | CellKind::Code => {
            let info = match cell.kind {
                CellKind::PackageJson => "json",
                _ => cell.language.unwrap_or(default).as_str(),
            };
            let fence = fence_for(&cell.content);
            let filename = cell.filename.as_deref().unwrap_or("package.json");
            Some(format!("###### {filename}\n\n{fence}{info}\n{}\n{fence}", cell.content))
        }
    }
}

/// Backticks enough to fence `source`: one more than the longest run that
/// opens one of its lines (after up to three spaces), three at least.
fn fence_for(source: &str) -> String {
    let longest = source
        .split('\n')
        .map(|line| {
            let rest = strip_indent(line);
            rest.chars().take_while(|c| *c == '`').count()
        })
        .max()
        .unwrap_or(0);
    "`".repeat((longest + 1).max(3))
}

/// `line` without up to three leading spaces.
fn strip_indent(line: &str) -> &str {
    let spaces = line.chars().take(3).take_while(|c| *c == ' ').count();
    &line[spaces..]
}

/// Whether `rest` (a line after its indent and backslashes) opens with a
/// level 1 or level 6 heading marker.
fn heading_marker(rest: &str) -> bool {
    ["#", "######"].iter().any(|m| {
        rest.strip_prefix(m)
            .is_some_and(|after| after.is_empty() || after.starts_with([' ', '\t']))
    })
}

/// Split a line into its indent, its leading backslashes and the rest.
fn split_escapes(line: &str) -> (&str, &str, &str) {
    let indent = line.len() - strip_indent(line).len();
    let after = &line[indent..];
    let slashes = after.len() - after.trim_start_matches('\\').len();
    (&line[..indent], &after[..slashes], &after[slashes..])
}

fn escape_markdown(text: &str) -> String {
    map_lines(
        text,
        |indent, slashes, rest| format!("{indent}\\{slashes}{rest}"),
        false,
    )
}

fn unescape_markdown(text: &str) -> String {
    map_lines(
        text,
        |indent, slashes, rest| format!("{indent}{}{rest}", &slashes[1..]),
        true,
    )
}

fn map_lines(text: &str, change: impl Fn(&str, &str, &str) -> String, needs_slash: bool) -> String {
    text.split('\n')
        .map(|line| {
            let (indent, slashes, rest) = split_escapes(line);
            if heading_marker(rest) && (!needs_slash || !slashes.is_empty()) {
                change(indent, slashes, rest)
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `text` without its leading and trailing lines that are blank.
fn trim_blank_lines(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let first = lines.iter().position(|l| !l.trim().is_empty());
    let last = lines.iter().rposition(|l| !l.trim().is_empty());
    match (first, last) {
        (Some(a), Some(b)) => lines[a..=b].join("\n"),
        _ => String::new(),
    }
}

fn parse_error(line: usize, why: impl std::fmt::Display) -> Error {
    Error::invalid_with(
        "content",
        format!("the .src.md text does not parse: line {line}: {why}"),
        json!({ "line": line }),
    )
}

/// The largest `.src.md` file an import reads.
const MAX_FILE_BYTES: u64 = 16 << 20;

/// A `.src.md` file's text, at most 16 MiB of UTF-8.
pub fn read_file(path: &std::path::Path) -> Result<String> {
    let bad = |why: String| Error::invalid("path", format!("{}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| bad(e.to_string()))?;
    if !meta.is_file() || meta.len() > MAX_FILE_BYTES {
        return Err(bad("not a .src.md file of at most 16 MiB".into()));
    }
    let bytes = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    String::from_utf8(bytes).map_err(|_| bad("not UTF-8 text".into()))
}

/// Read a `.src.md` text (ours, the TypeScript Thoughtbox's or Srcbook's own).
pub fn decode(text: &str) -> Result<Decoded> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // Lines keep a `\r` of their own: code and markdown holding CRLF come
    // back as they were; headings and fences are read without it.
    let lines: Vec<&str> = text.split('\n').collect();
    let header = lines.first().copied().unwrap_or_default().trim();
    let meta = header
        .strip_prefix(HEADER_START)
        .and_then(|h| h.strip_suffix(HEADER_END.trim_start()))
        .map(str::trim)
        .ok_or_else(|| parse_error(1, "missing or invalid srcbook metadata header (<!-- srcbook:{...} -->)"))?;
    let meta: Value =
        serde_json::from_str(meta).map_err(|e| parse_error(1, format!("the srcbook metadata is not JSON: {e}")))?;
    let language = match meta.get("language").and_then(Value::as_str).and_then(Language::parse) {
        Some(l) => l,
        None => {
            return Err(parse_error(
                1,
                "the metadata's language must be \"javascript\" or \"typescript\"",
            ));
        }
    };
    let tsconfig = match meta.get("tsconfig.json") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v) => Some(v.to_string()),
    };
    let mut cells = Vec::new();
    let mut i = 1;
    while i < lines.len() {
        let line = lines[i];
        if line.trim().is_empty() {
            i += 1;
            continue;
        }
        if let Some(title) = line.strip_prefix("# ") {
            cells.push(NewCell::title(title.strip_suffix('\r').unwrap_or(title)));
            i += 1;
        } else if let Some(name) = line.strip_prefix("###### ") {
            let (cell, next) = decode_file_cell(&lines, i, name.trim(), language)?;
            cells.push(cell);
            i = next;
        } else {
            let start = i;
            while i < lines.len() && !lines[i].starts_with("# ") && !lines[i].starts_with("###### ") {
                i += 1;
            }
            let text = unescape_markdown(&trim_blank_lines(&lines[start..i].join("\n")));
            cells.push(NewCell::markdown(text));
        }
    }
    for cell in &cells {
        if cell.kind == CellKind::Code {
            let name = cell.filename.as_deref().unwrap_or_default();
            super::check_filename(name, cell.language).map_err(|e| {
                let at = lines
                    .iter()
                    .position(|l| l.strip_prefix("###### ").map(str::trim) == Some(name));
                parse_error(at.map_or(0, |n| n + 1), e.message())
            })?;
        }
    }
    Ok(Decoded {
        language,
        tsconfig,
        cells,
    })
}

/// The package.json or code cell headed by `###### name` at line `at`, and
/// the line after it.
fn decode_file_cell(lines: &[&str], at: usize, name: &str, language: Language) -> Result<(NewCell, usize)> {
    let mut i = at + 1;
    while i < lines.len() && lines[i].trim().is_empty() {
        i += 1;
    }
    let open = lines.get(i).copied().unwrap_or_default();
    let body = strip_indent(open);
    let ticks = body.chars().take_while(|c| *c == '`').count();
    // Srcbook's non-inline form links the file instead: nothing to read.
    if name == "package.json" && body.starts_with("[package.json](") {
        return Ok((NewCell::package_json("{}"), i + 1));
    }
    if ticks < 3 {
        return Err(parse_error(
            i + 1,
            format!(
                "###### {name} (line {}) must be followed by a fenced code block",
                at + 1
            ),
        ));
    }
    let info = body[ticks..].trim();
    let mut end = i + 1;
    loop {
        let Some(line) = lines.get(end) else {
            return Err(parse_error(
                i + 1,
                format!(
                    "the code block of {name} opened here is never closed ({} backticks)",
                    ticks
                ),
            ));
        };
        let t = line.trim();
        if t.len() >= ticks && t.chars().all(|c| c == '`') {
            break;
        }
        end += 1;
    }
    let source = lines[i + 1..end].join("\n");
    let cell = if name == "package.json" {
        NewCell::package_json(source)
    } else {
        let lang = Language::parse(info)
            .or_else(|| Language::of_filename(name))
            .unwrap_or(language);
        NewCell::code(name, lang, source)
    };
    Ok((cell, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::notebook::CellStatus;

    fn cell(kind: CellKind, content: &str, filename: Option<&str>) -> Cell {
        Cell {
            id: "x".into(),
            kind,
            content: content.into(),
            filename: filename.map(String::from),
            language: (kind == CellKind::Code).then_some(Language::JavaScript),
            status: kind.runs().then_some(CellStatus::Idle),
            output: None,
            error: None,
        }
    }

    fn notebook(cells: Vec<Cell>) -> Notebook {
        Notebook {
            id: "n".into(),
            name: "N".into(),
            language: Language::JavaScript,
            tsconfig: None,
            session_id: None,
            allow_child_processes: false,
            created_at: 0,
            updated_at: 0,
            cells,
        }
    }

    fn reimport(text: &str) -> Notebook {
        let d = decode(text).unwrap();
        notebook(
            d.cells
                .into_iter()
                .map(|c| Cell {
                    id: "x".into(),
                    kind: c.kind,
                    content: c.content,
                    filename: c.filename,
                    language: c.language,
                    status: c.kind.runs().then_some(CellStatus::Idle),
                    output: None,
                    error: None,
                })
                .collect(),
        )
    }

    #[test]
    fn a_name_given_renames_the_title_cell_and_a_lost_title_is_exported() {
        let text = encode(&notebook(vec![cell(CellKind::Title, "Original", None)]));
        let (name, decoded) = decode(&text).unwrap().checked(Some(" Copy ".into())).unwrap();
        assert_eq!(name, "Copy");
        assert_eq!(decoded.title(), Some("Copy"));
        // A notebook whose title cell was deleted keeps its name in the file.
        let untitled = encode(&notebook(vec![cell(CellKind::Code, "1;\n", Some("a.js"))]));
        let (name, decoded) = decode(&untitled).unwrap().checked(None).unwrap();
        assert_eq!(name, "N", "{untitled}");
        assert_eq!(decoded.title(), Some("N"));
    }

    #[test]
    fn export_import_export_is_byte_identical() {
        let nb = notebook(vec![
            cell(CellKind::Title, "Fences and headings", None),
            cell(
                CellKind::PackageJson,
                "{\n  \"type\": \"module\"\n}",
                Some("package.json"),
            ),
            cell(
                CellKind::Markdown,
                "\n# not a title\n###### not a file\n \\# already escaped\nplain\n   # indented\n\n",
                None,
            ),
            cell(
                CellKind::Code,
                "const md = `\n```\n# inside\n````\n`;\nconsole.log(md);\n",
                Some("a.js"),
            ),
            cell(
                CellKind::Code,
                "const crlf = 1;\r\nconsole.log(crlf);\r\n",
                Some("crlf.js"),
            ),
            cell(CellKind::Code, "", Some("empty.js")),
        ]);
        let first = encode(&nb);
        assert!(first.starts_with("<!-- srcbook:{\"language\":\"javascript\"} -->\n\n# Fences and headings\n"));
        assert!(first.contains("\n`````javascript\n"), "{first}");
        let again = reimport(&first);
        assert_eq!(again.cells.len(), 6, "{first}");
        assert_eq!(
            again.cells[2].content,
            "# not a title\n###### not a file\n \\# already escaped\nplain\n   # indented"
        );
        assert_eq!(again.cells[3].content, nb.cells[3].content);
        assert_eq!(again.cells[4].content, nb.cells[4].content, "CRLF kept");
        assert_eq!(again.cells[5].content, "");
        assert_eq!(encode(&again), first);
    }

    #[test]
    fn the_references_text_reads() {
        let text = "<!-- srcbook:{\"language\":\"typescript\",\"tsconfig.json\":{\"compilerOptions\":{}}} -->\n\n\
                    # Demo\n\n###### package.json\n\n```json\n{\"type\":\"module\",\"dependencies\":{}}\n```\n\n\
                    Some *text*.\n\n###### main.ts\n\n```typescript\nconst x: number = 1;\n```\n";
        let d = decode(text).unwrap();
        assert_eq!(d.language, Language::TypeScript);
        assert_eq!(d.tsconfig.as_deref(), Some("{\"compilerOptions\":{}}"));
        assert_eq!(d.title(), Some("Demo"));
        let kinds: Vec<_> = d.cells.iter().map(|c| c.kind).collect();
        assert_eq!(
            kinds,
            [
                CellKind::Title,
                CellKind::PackageJson,
                CellKind::Markdown,
                CellKind::Code
            ]
        );
        assert_eq!(d.cells[3].language, Some(Language::TypeScript));
    }

    #[test]
    fn bad_text_names_the_line() {
        let e = decode("# no header\n").unwrap_err();
        assert!(e.message().contains("line 1"), "{e}");
        let e = decode("<!-- srcbook:{\"language\":\"javascript\"} -->\n\n###### a.js\n\nno fence\n").unwrap_err();
        assert!(e.message().contains("line 5"), "{e}");
        let e = decode("<!-- srcbook:{\"language\":\"javascript\"} -->\n\n###### a.js\n\n```js\nx\n").unwrap_err();
        assert!(e.message().contains("never closed"), "{e}");
        let e =
            decode("<!-- srcbook:{\"language\":\"javascript\"} -->\n\n###### ../a.js\n\n```js\nx\n```\n").unwrap_err();
        assert!(e.message().contains("line 3"), "{e}");
        let e = decode("<!-- srcbook:{\"language\":\"cobol\"} -->\n").unwrap_err();
        assert!(e.message().contains("language"), "{e}");
    }
}
