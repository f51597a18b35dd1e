//! Parameters of `notebook`'s sub-operations.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Limit, names_enum};
use crate::domain::SessionId;

names_enum! {
    /// The cells a new notebook starts with.
    TemplateName { Blank = "blank", SequentialFeynman = "sequential-feynman" }
}

names_enum! {
    /// A notebook's or a code cell's language.
    LanguageName { JavaScript = "javascript", TypeScript = "typescript" }
}

names_enum! {
    /// The kinds of cell `add_cell` adds (the package.json cell comes with the notebook).
    CellTypeName { Title = "title", Markdown = "markdown", Code = "code" }
}

/// `notebook create`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateNotebook {
    /// The notebook's name, its title cell (one line, at most 200 characters).
    #[serde(alias = "title")]
    pub name: String,
    /// The cells it starts with.
    #[schemars(extend("default" = "blank"))]
    pub template: Option<TemplateName>,
    /// The language of its code cells.
    #[schemars(extend("default" = "javascript"))]
    pub language: Option<LanguageName>,
    /// The session it belongs to (default: the connection's current session, if any).
    #[serde(alias = "session_id")]
    pub session_id: Option<SessionId>,
    /// true: its cells may start other processes (which Node's permission model does not confine).
    #[schemars(extend("default" = false))]
    pub allow_child_processes: Option<bool>,
}

/// `notebook get`, `delete`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotebookRef {
    /// The notebook's id (create and list answer it).
    #[serde(alias = "id")]
    pub notebook_id: String,
}

/// `notebook get` and `list_cells`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotebookGet {
    /// The notebook's id (create and list answer it).
    #[serde(alias = "id")]
    pub notebook_id: String,
    /// true: every cell's output whole. Without it, each output is cut to 4,000 characters (get_cell answers one cell whole).
    #[schemars(extend("default" = false))]
    pub full: Option<bool>,
}

/// `notebook list`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListNotebooks {
    /// Only the notebooks of this session (unless allSessions is true).
    #[serde(alias = "session_id")]
    pub session_id: Option<SessionId>,
    /// Every session's notebooks; a sessionId then only admits the call,
    /// as a client without a current session must name one.
    #[serde(alias = "all")]
    #[schemars(extend("default" = false))]
    pub all_sessions: Option<bool>,
    /// Page size.
    #[serde(default)]
    pub limit: Limit<20>,
    /// Notebooks to skip.
    #[schemars(extend("default" = 0))]
    pub offset: Option<u32>,
}

/// `notebook add_cell`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AddCell {
    /// The notebook.
    pub notebook_id: String,
    /// The kind of cell.
    #[serde(rename = "type", alias = "cellType")]
    pub kind: CellTypeName,
    /// A code cell's source; a title's or markdown cell's text (at most 1 MiB).
    pub content: String,
    /// Add it after this cell (default: at the end).
    pub after_cell_id: Option<String>,
    /// A code cell's file name in the notebook's directory (default cell-N.js or .ts); no '/' or '..'.
    pub filename: Option<String>,
    /// A code cell's language (default: the notebook's).
    pub language: Option<LanguageName>,
}

/// `notebook update_cell`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdateCell {
    /// The notebook.
    pub notebook_id: String,
    /// The cell.
    pub cell_id: String,
    /// Its new source or text (a code cell goes back to idle).
    pub content: String,
}

/// `notebook delete_cell`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CellRef {
    /// The notebook.
    pub notebook_id: String,
    /// The cell.
    pub cell_id: String,
}

/// `notebook run_cell`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunCell {
    /// The notebook.
    pub notebook_id: String,
    /// The code cell to run.
    pub cell_id: String,
    /// Seconds the run may take before it is killed, 1-600 (default: the server's, 30).
    #[schemars(range(min = 1, max = 600))]
    pub timeout_secs: Option<u32>,
}

/// `notebook install_deps`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstallDeps {
    /// The notebook.
    pub notebook_id: String,
    /// Registry packages to add to the package.json cell first: name, name@range or @scope/name@range.
    pub packages: Option<Vec<String>>,
    /// Seconds npm install may take before it is killed, 1-600 (default: the server's, 30).
    #[schemars(range(min = 1, max = 600))]
    pub timeout_secs: Option<u32>,
}

/// `notebook export`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportNotebook {
    /// The notebook.
    #[serde(alias = "id")]
    pub notebook_id: String,
    /// Write a file instead of answering the text: an absolute path ending in .src.md, or a directory for <slug>.src.md.
    #[serde(alias = "path")]
    pub destination: Option<String>,
}

/// `notebook import`: give content or path.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportNotebook {
    /// The .src.md text.
    pub content: Option<String>,
    /// An absolute path of a .src.md file, instead of content.
    pub path: Option<String>,
    /// The name (default: the first title cell's text).
    #[serde(alias = "title")]
    pub name: Option<String>,
    /// The session it belongs to (default: the connection's current session, if any).
    #[serde(alias = "session_id")]
    pub session_id: Option<SessionId>,
}
