//! The answers of `notebook`: a notebook in the specification's Notebook
//! shape (with its title, session and cell count besides), cells in its
//! Cell shapes, and each run's outcome. Every answer names the notebook in
//! `notebookId`, the handle an agent passes back.

use serde::Serialize;

use crate::gateway::preview::PREVIEW_CHARS;
use crate::notebook::Outcome;
use crate::notebook::{Cell, Notebook, NotebookSummary};
use crate::store::NotebookHit;

/// `create`, `get` and `import`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NotebookAnswer<'a> {
    pub notebook_id: &'a str,
    pub notebook: &'a Notebook,
    /// Where its cells run, under the data directory.
    pub directory: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<&'static str>,
    /// Outputs cut to a preview, when some were.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<OutputsTruncated>,
}

/// What `get` says when it cut cells' outputs.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OutputsTruncated {
    /// The cells whose output was cut, with each output's whole length.
    pub cells: Vec<CutOutput>,
    pub max_chars_per_output: usize,
    pub read_whole: &'static str,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CutOutput {
    pub cell_id: String,
    pub output_chars: usize,
}

/// `list_cells`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CellsAnswer<'a> {
    pub notebook_id: &'a str,
    pub cells: &'a [Cell],
    pub count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<OutputsTruncated>,
}

/// `add_cell` and `update_cell`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CellAnswer<'a> {
    pub notebook_id: &'a str,
    pub cell: &'a Cell,
}

/// `delete_cell` and `delete`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeletedAnswer<'a> {
    pub notebook_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cell_id: Option<&'a str>,
    pub deleted: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cells_deleted: Option<usize>,
}

/// `run_cell` and `install_deps`: how the run ended. A program that threw
/// or exited non-zero is a `failed` status here, not a tool error.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunAnswer<'a> {
    pub notebook_id: &'a str,
    pub cell_id: &'a str,
    pub status: &'static str,
    pub output: &'a str,
    pub error: Option<&'a str>,
    /// `null` when the run was killed (time limit) or ended by a signal.
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
    pub started_at: &'a str,
    /// `node-permission` (file access confined to the notebook's directory) or `process`.
    pub sandbox: &'static str,
    pub node: String,
    pub time_limit_secs: u64,
    /// install_deps: the package.json cell's dependencies after the install.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_json: Option<&'a str>,
    /// The output was cut to its end, where a run's result and errors are.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<RunOutputCut>,
}

/// What a run's answer says when it cut the output.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunOutputCut {
    /// The whole output's length, in characters.
    pub output_chars: usize,
    /// How many of its last characters `output` holds.
    pub shown_chars: usize,
    pub read_whole: &'static str,
}

impl<'a> RunAnswer<'a> {
    pub(crate) fn of(
        notebook_id: &'a str,
        cell_id: &'a str,
        o: &'a Outcome,
        node: String,
        limit: u64,
    ) -> RunAnswer<'a> {
        let chars = o.output.chars().count();
        let (output, truncated) = match o.output.char_indices().nth_back(PREVIEW_CHARS - 1) {
            Some((at, _)) if chars > PREVIEW_CHARS => (
                &o.output[at..],
                Some(RunOutputCut {
                    output_chars: chars,
                    shown_chars: PREVIEW_CHARS,
                    read_whole: "notebook get_cell with notebookId and cellId answers the cell's output whole",
                }),
            ),
            _ => (o.output.as_str(), None),
        };
        RunAnswer {
            notebook_id,
            cell_id,
            status: o.status.as_str(),
            output,
            error: o.error.as_deref(),
            exit_code: o.exit_code,
            duration_ms: o.duration_ms,
            started_at: &o.started_at,
            sandbox: o.sandbox,
            node,
            time_limit_secs: limit,
            package_json: None,
            truncated,
        }
    }
}

/// `list`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NotebookListAnswer {
    pub notebooks: Vec<NotebookSummary>,
    pub count: usize,
    pub total: u64,
    pub has_more: bool,
}

/// `export`: the text, or the file written.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NotebookExportAnswer<'a> {
    pub notebook_id: &'a str,
    pub format: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub bytes: usize,
}

/// Notebook cells found by `session search` with `include: ["notebooks"]`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NotebookHits {
    pub notebooks: Vec<NotebookHit>,
    pub more_notebooks: bool,
}
