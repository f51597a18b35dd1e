//! Notebooks (the specification's Notebook and Cell): literate JavaScript or
//! TypeScript kept in the ledger. This module holds the types and their
//! rules (cell kinds, filenames, sizes, templates, dependency specs);
//! [`srcbook`] reads and writes the `.src.md` format and [`runner`] runs a
//! cell in its sandbox. SQL is in `store::notebooks`, the gateway's
//! operation in `gateway::notebook_ops`.

pub mod install;
pub mod lock;
pub mod runner;
pub mod srcbook;
mod templates;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};

pub use templates::{Template, template_cells};

/// The longest cell content (a title, markdown text or source), as a thought's.
pub const MAX_CONTENT_BYTES: usize = 1 << 20;
/// The longest notebook name and title cell, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// The longest filename, in bytes.
pub const MAX_FILENAME: usize = 100;
/// The most cells one notebook holds.
pub const MAX_CELLS: usize = 1000;

/// A notebook's (and a code cell's) language.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    JavaScript,
    TypeScript,
}

impl Language {
    pub const NAMES: &'static [&'static str] = &["javascript", "typescript"];

    pub fn as_str(self) -> &'static str {
        match self {
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
        }
    }

    /// The language's name, or its usual short name (`js`, `ts`).
    pub fn parse(s: &str) -> Option<Language> {
        match s.trim().to_ascii_lowercase().as_str() {
            "javascript" | "js" => Some(Language::JavaScript),
            "typescript" | "ts" => Some(Language::TypeScript),
            _ => None,
        }
    }

    /// The language a filename's extension says, if any.
    pub fn of_filename(name: &str) -> Option<Language> {
        let ext = name.rsplit_once('.')?.1;
        match ext {
            "js" | "mjs" | "cjs" => Some(Language::JavaScript),
            "ts" | "mts" | "cts" => Some(Language::TypeScript),
            _ => None,
        }
    }

    /// The usual extension of a file of this language.
    pub fn extension(self) -> &'static str {
        match self {
            Language::JavaScript => "js",
            Language::TypeScript => "ts",
        }
    }
}

/// A code cell's status (the specification's CellStatus).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellStatus {
    Idle,
    Running,
    Completed,
    Failed,
}

impl CellStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CellStatus::Idle => "idle",
            CellStatus::Running => "running",
            CellStatus::Completed => "completed",
            CellStatus::Failed => "failed",
        }
    }

    pub fn parse(s: &str) -> Option<CellStatus> {
        match s {
            "idle" => Some(CellStatus::Idle),
            "running" => Some(CellStatus::Running),
            "completed" => Some(CellStatus::Completed),
            "failed" => Some(CellStatus::Failed),
            _ => None,
        }
    }
}

/// The four kinds of cell the specification's Cell type allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellKind {
    Title,
    Markdown,
    PackageJson,
    Code,
}

impl CellKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CellKind::Title => "title",
            CellKind::Markdown => "markdown",
            CellKind::PackageJson => "package.json",
            CellKind::Code => "code",
        }
    }

    pub fn parse(s: &str) -> Option<CellKind> {
        match s {
            "title" => Some(CellKind::Title),
            "markdown" => Some(CellKind::Markdown),
            "package.json" => Some(CellKind::PackageJson),
            "code" => Some(CellKind::Code),
            _ => None,
        }
    }

    /// Whether the cell has a file, a status, an output and an error.
    pub fn runs(self) -> bool {
        matches!(self, CellKind::PackageJson | CellKind::Code)
    }
}

/// One cell, as stored. Serialized in the specification's form: `text` for
/// title and markdown cells, `source`, `filename`, `status`, `output`,
/// `error` (and `language` for code) for the others.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    pub id: String,
    pub kind: CellKind,
    pub content: String,
    pub filename: Option<String>,
    pub language: Option<Language>,
    pub status: Option<CellStatus>,
    pub output: Option<String>,
    pub error: Option<String>,
}

impl Serialize for Cell {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("type", self.kind.as_str())?;
        if !self.kind.runs() {
            m.serialize_entry("text", &self.content)?;
            return m.end();
        }
        if let Some(l) = self.language {
            m.serialize_entry("language", l.as_str())?;
        }
        m.serialize_entry("filename", &self.filename)?;
        m.serialize_entry("source", &self.content)?;
        m.serialize_entry("status", self.status.unwrap_or(CellStatus::Idle).as_str())?;
        m.serialize_entry("output", &self.output)?;
        m.serialize_entry("error", &self.error)?;
        m.end()
    }
}

/// A cell to add: what `add_cell`, a template or an import gives.
#[derive(Debug, Clone, PartialEq)]
pub struct NewCell {
    pub kind: CellKind,
    pub content: String,
    pub filename: Option<String>,
    pub language: Option<Language>,
}

impl NewCell {
    pub fn title(text: impl Into<String>) -> NewCell {
        NewCell {
            kind: CellKind::Title,
            content: text.into(),
            filename: None,
            language: None,
        }
    }

    pub fn markdown(text: impl Into<String>) -> NewCell {
        NewCell {
            kind: CellKind::Markdown,
            content: text.into(),
            filename: None,
            language: None,
        }
    }

    pub fn package_json(source: impl Into<String>) -> NewCell {
        NewCell {
            kind: CellKind::PackageJson,
            content: source.into(),
            filename: Some("package.json".into()),
            language: None,
        }
    }

    pub fn code(filename: impl Into<String>, language: Language, source: impl Into<String>) -> NewCell {
        NewCell {
            kind: CellKind::Code,
            content: source.into(),
            filename: Some(filename.into()),
            language: Some(language),
        }
    }

    /// Check the cell against the rules of its kind (see [`check_content`]
    /// and [`check_filename`]).
    pub fn checked(self) -> Result<NewCell> {
        check_content(self.kind, &self.content)?;
        match self.kind {
            CellKind::Code => {
                let name = self.filename.as_deref().unwrap_or_default();
                check_filename(name, self.language)?;
            }
            CellKind::PackageJson => check_package_json(&self.content)?,
            CellKind::Title | CellKind::Markdown => {}
        }
        Ok(self)
    }
}

/// A notebook with its cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Notebook {
    pub id: String,
    pub name: String,
    pub language: Language,
    pub tsconfig: Option<String>,
    pub session_id: Option<String>,
    /// Its cells may start other processes (opted in at creation).
    pub allow_child_processes: bool,
    pub created_at: i64,
    pub updated_at: i64,
    pub cells: Vec<Cell>,
}

impl Notebook {
    /// Its title: the first title cell's text, else its name.
    pub fn title(&self) -> &str {
        self.cells
            .iter()
            .find(|c| c.kind == CellKind::Title)
            .map_or(self.name.as_str(), |c| c.content.as_str())
    }

    pub fn cell(&self, id: &str) -> Option<&Cell> {
        self.cells.iter().find(|c| c.id == id)
    }

    /// The package.json cell's source, if it has one.
    pub fn package_json(&self) -> Option<&Cell> {
        self.cells.iter().find(|c| c.kind == CellKind::PackageJson)
    }
}

impl Serialize for Notebook {
    /// The specification's Notebook, with its title, session and cell count
    /// besides.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("title", self.title())?;
        m.serialize_entry("language", self.language.as_str())?;
        if let Some(ts) = &self.tsconfig {
            m.serialize_entry("tsconfig.json", ts)?;
        }
        m.serialize_entry("sessionId", &self.session_id)?;
        m.serialize_entry("allowChildProcesses", &self.allow_child_processes)?;
        m.serialize_entry("createdAt", &self.created_at)?;
        m.serialize_entry("updatedAt", &self.updated_at)?;
        m.serialize_entry("cellCount", &self.cells.len())?;
        m.serialize_entry("cells", &self.cells)?;
        m.end()
    }
}

/// A notebook as lists show it: no cells, their count.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotebookSummary {
    pub id: String,
    pub title: String,
    pub language: &'static str,
    pub session_id: Option<String>,
    pub cell_count: u64,
    pub created_at: i64,
    pub updated_at: i64,
}

/// How a cell's run ended, as [`runner`] reports it and the store records it.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub status: CellStatus,
    /// Standard output and standard error in the order they came, cut at
    /// the output limit with a note.
    pub output: String,
    /// Why it failed (with the end of standard error), `None` when it did not.
    pub error: Option<String>,
    /// `None` when it was killed or ended by a signal.
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub started_at: String,
    /// `node-permission` when Node's permission model confined it, else `process`.
    pub sandbox: &'static str,
}

/// Unix milliseconds now, the type of a notebook's times in its JSON.
pub fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// A cell's content: at most [`MAX_CONTENT_BYTES`]; a title one line of at
/// most [`MAX_TITLE_CHARS`] characters, not blank; markdown not blank (an
/// empty markdown cell has nothing to keep, and `.src.md` cannot hold one).
pub fn check_content(kind: CellKind, content: &str) -> Result<()> {
    if content.len() > MAX_CONTENT_BYTES {
        return Err(Error::invalid(
            "content",
            format!(
                "content is {} bytes; a cell holds at most {MAX_CONTENT_BYTES} (1 MiB)",
                content.len()
            ),
        ));
    }
    match kind {
        CellKind::Title => check_title("content", content),
        CellKind::Markdown if content.trim().is_empty() => {
            Err(Error::invalid("content", "a markdown cell's content must not be blank"))
        }
        _ => Ok(()),
    }
}

/// A notebook name or title cell: one line, not blank, at most
/// [`MAX_TITLE_CHARS`] characters.
pub fn check_title(field: &str, text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::invalid(field, format!("{field} must not be blank")));
    }
    if text.contains(['\n', '\r']) {
        return Err(Error::invalid(
            field,
            format!("{field} is a title: one line, without line breaks"),
        ));
    }
    if text.chars().count() > MAX_TITLE_CHARS {
        return Err(Error::invalid(
            field,
            format!("{field} is at most {MAX_TITLE_CHARS} characters"),
        ));
    }
    Ok(())
}

/// A code cell's filename: a plain name (letters, digits, `.`, `_`, `-`;
/// no `/`, `\` or `..`, not starting with `.`), at most [`MAX_FILENAME`]
/// bytes, with an extension of its language (`.js`, `.mjs`, `.cjs`, or
/// `.ts`, `.mts`, `.cts`); `package.json` is the package.json cell's.
pub fn check_filename(name: &str, language: Option<Language>) -> Result<()> {
    let bad = |why: String| Err(Error::invalid_with("filename", why, json!({ "filename": name })));
    if name.contains(['/', '\\']) || name.contains("..") {
        return bad(format!(
            "filename {name:?} must be a plain file name: no '/', '\\' or '..' (each cell is one file in the \
             notebook's directory)"
        ));
    }
    if name.is_empty() || name.len() > MAX_FILENAME {
        return bad(format!("filename must be 1 to {MAX_FILENAME} bytes"));
    }
    if name.starts_with('.') || !name.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)) {
        return bad(format!(
            "filename {name:?} may hold letters, digits, '.', '_' and '-', and not start with '.'"
        ));
    }
    if name == "package.json" {
        return bad("package.json is the notebook's package.json cell; name code cells otherwise".into());
    }
    match (Language::of_filename(name), language) {
        (None, _) => bad(format!(
            "filename {name:?} needs the extension of its language: .js, .mjs or .cjs (javascript), .ts, .mts or \
             .cts (typescript)"
        )),
        (Some(of_name), Some(l)) if of_name != l => bad(format!(
            "filename {name:?} is a {} file, but the cell's language is {}",
            of_name.as_str(),
            l.as_str()
        )),
        _ => Ok(()),
    }
}

/// The fields of package.json that name packages to install.
pub const DEPENDENCY_FIELDS: &[&str] = &[
    "dependencies",
    "devDependencies",
    "optionalDependencies",
    "peerDependencies",
];

/// Fields of package.json that make npm fetch or link packages other than
/// the registry versions the dependency fields name.
const REFUSED_FIELDS: &[&str] = &[
    "overrides",
    "workspaces",
    "bundleDependencies",
    "bundledDependencies",
    "resolutions",
];

/// The package.json cell: a JSON object whose dependency fields
/// ([`DEPENDENCY_FIELDS`]), when given, map npm package names to registry
/// versions, ranges or dist-tags, as [`parse_package_spec`] allows them:
/// a `file:`, `link:`, git, URL, `user/repo`, `npm:` or `workspace:` value
/// would have npm link or fetch from anywhere, a folder outside the
/// notebook's included. [`REFUSED_FIELDS`] are refused for the same reason.
pub fn check_package_json(source: &str) -> Result<()> {
    let parsed: Value = serde_json::from_str(source)
        .map_err(|e| Error::invalid("content", format!("the package.json cell is not JSON: {e}")))?;
    let Value::Object(fields) = parsed else {
        return Err(Error::invalid("content", "the package.json cell must be a JSON object"));
    };
    if let Some(key) = REFUSED_FIELDS.iter().find(|k| fields.contains_key(**k)) {
        return Err(Error::invalid_with(
            "content",
            format!(
                "package.json's {key} is not allowed in a notebook: it makes npm install packages other than the \
                 registry versions its dependencies name (nothing was changed)"
            ),
            json!({ "packageJsonField": key }),
        ));
    }
    for key in DEPENDENCY_FIELDS {
        let deps = match fields.get(*key) {
            None => continue,
            Some(Value::Object(deps)) => deps,
            Some(_) => {
                return Err(Error::invalid(
                    "content",
                    format!("package.json's {key} must be an object of version strings"),
                ));
            }
        };
        for (name, version) in deps {
            let problem = match version {
                Value::String(v) => name_problem(name).or_else(|| version_problem(v)),
                _ => Some("the version must be a string"),
            };
            if let Some(why) = problem {
                return Err(Error::invalid_with(
                    "content",
                    format!(
                        "package.json's {key} {:?}: {why} (only registry packages; nothing was changed)",
                        name.chars().take(80).collect::<String>()
                    ),
                    json!({ "packageJsonField": key, "package": name }),
                ));
            }
        }
    }
    Ok(())
}

/// The package.json cell of a new notebook: an ES module package; a
/// TypeScript notebook on a Node without type stripping also lists the
/// TypeScript compiler that `install_deps` brings (see docs/notebooks.md).
pub fn default_package_json(language: Language) -> String {
    let value = match language {
        Language::JavaScript => json!({ "type": "module", "dependencies": {} }),
        Language::TypeScript => json!({
            "type": "module",
            "dependencies": {},
            "devDependencies": { "typescript": runner::TYPESCRIPT_VERSION },
        }),
    };
    serde_json::to_string_pretty(&value).unwrap_or_default()
}

/// The tsconfig.json of a new TypeScript notebook.
pub fn default_tsconfig() -> String {
    json!({
        "compilerOptions": {
            "module": "nodenext",
            "moduleResolution": "nodenext",
            "target": "es2022",
            "strict": true,
            "skipLibCheck": true,
        }
    })
    .to_string()
}

/// One package `install_deps` adds: its name and the version range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageSpec {
    pub name: String,
    pub version: String,
}

/// Read `name`, `name@range` or `@scope/name@range`. Only registry
/// packages: names as npm allows them, and ranges of versions (no `file:`,
/// `git+`, URLs or paths), since npm would fetch those from anywhere.
pub fn parse_package_spec(spec: &str) -> Result<PackageSpec> {
    let spec = spec.trim();
    let (name, version) = match spec.char_indices().skip(1).find(|(_, c)| *c == '@') {
        Some((at, _)) => (&spec[..at], &spec[at + 1..]),
        None => (spec, "latest"),
    };
    if let Some(why) = name_problem(name).or_else(|| version_problem(version)) {
        return Err(Error::invalid_with(
            "packages",
            format!("package {:?}: {why}", spec.chars().take(80).collect::<String>()),
            json!({ "package": spec }),
        ));
    }
    Ok(PackageSpec {
        name: name.to_string(),
        version: version.to_string(),
    })
}

/// Why `name` is not an npm package name, if it is not: lower-case letters,
/// digits, `-`, `.`, `_`, `~`, optionally under `@scope/` (so never a path
/// leaving `node_modules`).
fn name_problem(name: &str) -> Option<&'static str> {
    let part_ok = |p: &str| {
        !p.is_empty()
            && !p.starts_with(['.', '_', '-'])
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._~".contains(c))
    };
    let name_ok = match name.strip_prefix('@') {
        Some(scoped) => scoped.split_once('/').is_some_and(|(s, n)| part_ok(s) && part_ok(n)),
        None => part_ok(name),
    };
    (!name_ok || name.len() > 214)
        .then_some("not an npm package name (lower-case letters, digits, '-', '.', '_', '~', optionally @scope/)")
}

/// Why `version` is not a registry version, range or dist-tag, if it is
/// not: no ':' or '/', so no `file:`, `link:`, git, URL, `user/repo`,
/// `npm:` alias or `workspace:`.
fn version_problem(version: &str) -> Option<&'static str> {
    let ok = !version.is_empty()
        && version.len() <= 64
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".^~<>=*|-+ ".contains(c))
        // npm reads a version starting with a dot as a folder (`..`), and
        // one ending in an archive's extension as a file.
        && !version.starts_with('.')
        && ![".tgz", ".tar", ".tar.gz"].iter().any(|ext| version.to_ascii_lowercase().ends_with(ext));
    (!ok).then_some("the version must be a version or range (1.2.3, ^4, latest), not a path, URL or git address")
}

/// The package.json `source` with `packages` added to its dependencies.
pub fn with_dependencies(source: &str, packages: &[PackageSpec]) -> Result<String> {
    check_package_json(source)?;
    let mut value: Map<String, Value> = serde_json::from_str(source)
        .map_err(|e| Error::invalid("content", format!("the package.json cell is not JSON: {e}")))?;
    let deps = value.entry("dependencies").or_insert_with(|| json!({}));
    if let Value::Object(deps) = deps {
        for p in packages {
            deps.insert(p.name.clone(), Value::String(p.version.clone()));
        }
    }
    serde_json::to_string_pretty(&Value::Object(value)).map_err(|e| Error::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filenames_are_plain_names_of_their_language() {
        for ok in ["a.js", "cell-1.mjs", "x_y.cjs", "T.ts", "m.mts"] {
            check_filename(ok, None).unwrap();
        }
        for bad in [
            "../x.js",
            "a/b.js",
            "a\\b.js",
            "..js",
            ".hidden.js",
            "",
            "a.txt",
            "a b.js",
            "package.json",
            "a..b.js",
        ] {
            let e = check_filename(bad, None).unwrap_err();
            assert_eq!(e.code(), "INVALID_PAYLOAD", "{bad}");
        }
        assert!(check_filename("a.ts", Some(Language::JavaScript)).is_err());
        assert!(check_filename("a.ts", Some(Language::TypeScript)).is_ok());
    }

    #[test]
    fn package_specs_are_registry_packages_only() {
        let p = parse_package_spec("lodash").unwrap();
        assert_eq!((p.name.as_str(), p.version.as_str()), ("lodash", "latest"));
        let p = parse_package_spec("@types/node@^20.1").unwrap();
        assert_eq!((p.name.as_str(), p.version.as_str()), ("@types/node", "^20.1"));
        for bad in [
            "Lodash",
            "x@file:../y",
            "x@git+ssh://h/r",
            "x@http://h",
            "../x",
            "@scope",
            "-x",
            "",
            "x@",
            "x@..",
            "x@a.tgz",
        ] {
            assert!(parse_package_spec(bad).is_err(), "{bad}");
        }
        let source = with_dependencies(&default_package_json(Language::JavaScript), &[p]).unwrap();
        let v: Value = serde_json::from_str(&source).unwrap();
        assert_eq!(v["dependencies"]["@types/node"], "^20.1");
        assert_eq!(v["type"], "module");
    }

    #[test]
    fn package_json_names_registry_packages_only() {
        let ok = r#"{"type":"module","dependencies":{"a":"^1.2","@s/b":"latest"},"devDependencies":{"c":"1.0.0 - 2"},
                    "optionalDependencies":{"d":"*"},"peerDependencies":{"e":">=3 <4 || 5"}}"#;
        check_package_json(ok).unwrap();
        for field in DEPENDENCY_FIELDS {
            for bad in [
                "file:../..",
                "file:/",
                "link:../x",
                "../x",
                "/abs",
                "git+https://h/r.git",
                "git://h/r",
                "https://h/x.tgz",
                "user/repo",
                "github:user/repo",
                "npm:other@1",
                "workspace:*",
                ".",
                "..",
                "a.tgz",
                "x.TAR.GZ",
                "",
            ] {
                let source = json!({ *field: { "x": bad } }).to_string();
                let e = check_package_json(&source).unwrap_err();
                assert_eq!(e.code(), "INVALID_PAYLOAD", "{field} {bad}");
            }
            for bad_name in ["../x", "X", "@s", ".x", "a/b"] {
                let source = json!({ *field: { bad_name: "1" } }).to_string();
                assert!(check_package_json(&source).is_err(), "{field} {bad_name}");
            }
        }
        for refused in REFUSED_FIELDS {
            let source = json!({ "dependencies": {}, *refused: {} }).to_string();
            assert!(check_package_json(&source).is_err(), "{refused}");
        }
    }

    #[test]
    fn cells_serialize_in_the_seed_form() {
        let title = Cell {
            id: "t".into(),
            kind: CellKind::Title,
            content: "Hello".into(),
            filename: None,
            language: None,
            status: None,
            output: None,
            error: None,
        };
        assert_eq!(
            serde_json::to_value(&title).unwrap(),
            json!({ "id": "t", "type": "title", "text": "Hello" })
        );
        let code = Cell {
            id: "c".into(),
            kind: CellKind::Code,
            content: "1".into(),
            filename: Some("a.js".into()),
            language: Some(Language::JavaScript),
            status: Some(CellStatus::Completed),
            output: Some("1\n".into()),
            error: None,
        };
        assert_eq!(
            serde_json::to_value(&code).unwrap(),
            json!({ "id": "c", "type": "code", "language": "javascript", "filename": "a.js", "source": "1",
                    "status": "completed", "output": "1\n", "error": null })
        );
    }

    #[test]
    fn titles_are_one_line() {
        assert!(check_content(CellKind::Title, "a\nb").is_err());
        assert!(check_content(CellKind::Title, " ").is_err());
        assert!(check_content(CellKind::Markdown, "\n\n").is_err());
        assert!(check_content(CellKind::Code, "").is_ok());
        assert!(check_package_json("[]").is_err());
        assert!(check_package_json(r#"{"dependencies": {"a": 1}}"#).is_err());
    }
}
