//! The notebook tables (migrations/V15): `notebooks`, `notebook_cells` in
//! order, `notebook_runs`, and the cells' full-text index. A cell's status
//! moves `idle -> running -> completed | failed` here, in write
//! transactions, under the cell's run lock ([`crate::notebook::lock`]), so
//! that two callers never run one cell at once and a run whose server died
//! is found and marked failed.

use rusqlite::{OptionalExtension, Row, params};
use serde::Serialize;
use serde_json::json;

use super::search::{QueryPlan, SNIPPET_TOKENS, Scorer, query_words};
use super::snippet::best_snippet;
use super::{Store, Tx};
use crate::error::{Error, Result};
use crate::notebook::Outcome;
use crate::notebook::lock::{self, RunLock};
use crate::notebook::{Cell, CellKind, CellStatus, Language, MAX_CELLS, NewCell, Notebook, NotebookSummary, now_ms};

/// A notebook to create: its cells come from a template or an import.
#[derive(Debug, Clone)]
pub struct NewNotebook {
    pub name: String,
    pub language: Language,
    pub tsconfig: Option<String>,
    pub session_id: Option<String>,
    pub allow_child_processes: bool,
    pub cells: Vec<NewCell>,
}

/// A cell found by a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NotebookHit {
    pub notebook_id: String,
    pub notebook_title: String,
    pub cell_id: String,
    pub cell_type: &'static str,
    pub snippet: String,
    pub score: f64,
}

/// Whether a run is a cell's or an install's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    Run,
    Install,
}

const CELL_COLUMNS: &str = "id, type, content, filename, language, status, output, error";

fn cell_from_row(r: &Row<'_>) -> rusqlite::Result<Cell> {
    let kind: String = r.get(1)?;
    let language: Option<String> = r.get(4)?;
    let status: Option<String> = r.get(5)?;
    Ok(Cell {
        id: r.get(0)?,
        kind: CellKind::parse(&kind).unwrap_or(CellKind::Markdown),
        content: r.get(2)?,
        filename: r.get(3)?,
        language: language.as_deref().and_then(Language::parse),
        status: status.as_deref().and_then(CellStatus::parse),
        output: r.get(6)?,
        error: r.get(7)?,
    })
}

pub(crate) fn no_notebook(id: &str) -> Error {
    Error::invalid_with(
        "notebookId",
        format!("no notebook with id {id:?} (notebook list shows the notebooks)"),
        json!({ "notebookId": id }),
    )
}

fn no_cell(notebook: &str, cell: &str, field: &str) -> Error {
    Error::invalid_with(
        field,
        format!("notebook {notebook} has no cell with id {cell:?} (notebook get lists its cells)"),
        json!({ "notebookId": notebook, "cellId": cell }),
    )
}

/// The refusal of a call that needs cell `cell` idle while it runs.
pub fn running(notebook: &str, cell: &str) -> Error {
    Error::InvalidOperation {
        message: format!("cell {cell} is running; wait for its run to end (its status says when), then try again"),
        details: Some(json!({ "notebookId": notebook, "cellId": cell, "status": "running" })),
    }
}

fn notebook_tx(tx: &Tx<'_>, id: &str) -> Result<Notebook> {
    let head = tx
        .prepare_cached(
            "SELECT id, name, language, tsconfig, session_id, created_at, updated_at, allow_child_process
             FROM notebooks WHERE id = ?1",
        )?
        .query_row([id], |r| {
            let language: String = r.get(2)?;
            Ok(Notebook {
                id: r.get(0)?,
                name: r.get(1)?,
                language: Language::parse(&language).unwrap_or(Language::JavaScript),
                tsconfig: r.get(3)?,
                session_id: r.get(4)?,
                allow_child_processes: r.get(7)?,
                created_at: r.get(5)?,
                updated_at: r.get(6)?,
                cells: Vec::new(),
            })
        })
        .optional()?;
    let mut notebook = head.ok_or_else(|| no_notebook(id))?;
    notebook.cells = tx
        .prepare_cached(&format!(
            "SELECT {CELL_COLUMNS} FROM notebook_cells WHERE notebook_id = ?1 ORDER BY position"
        ))?
        .query_map([id], cell_from_row)?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(notebook)
}

fn touch(tx: &Tx<'_>, id: &str) -> Result<()> {
    tx.prepare_cached("UPDATE notebooks SET updated_at = max(updated_at, ?2) WHERE id = ?1")?
        .execute(params![id, now_ms()])?;
    Ok(())
}

fn insert_cell_tx(tx: &Tx<'_>, notebook: &str, position: i64, cell: &NewCell) -> Result<String> {
    let id = uuid::Uuid::new_v4().to_string();
    tx.prepare_cached(
        "INSERT INTO notebook_cells (id, notebook_id, position, type, content, filename, language, status)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![
        id,
        notebook,
        position,
        cell.kind.as_str(),
        cell.content,
        cell.filename,
        cell.language.map(Language::as_str),
        cell.kind.runs().then_some("idle"),
    ])?;
    Ok(id)
}

/// Refuse a second cell of the same file (each cell is one file of the
/// notebook's directory) and a second package.json cell.
fn check_unique_file(nb: &Notebook, cell: &NewCell, except: Option<&str>) -> Result<()> {
    let Some(name) = cell.filename.as_deref() else {
        return Ok(());
    };
    if nb
        .cells
        .iter()
        .any(|c| c.filename.as_deref() == Some(name) && Some(c.id.as_str()) != except)
    {
        return Err(Error::invalid_with(
            "filename",
            format!(
                "notebook {} has a cell of file {name:?} already: choose another filename",
                nb.id
            ),
            json!({ "notebookId": nb.id, "filename": name }),
        ));
    }
    Ok(())
}

/// Why a run left `running` by a server that stopped failed.
const ORPHANED: &str = "the server running this cell stopped before the run ended (it was killed or shut down); run it \
                        again";

/// Mark cell `cell_id`'s run failed: its server stopped mid-run.
fn fail_orphaned_tx(tx: &Tx<'_>, cell_id: &str) -> Result<()> {
    tx.prepare_cached("UPDATE notebook_cells SET status = 'failed', error = ?2, runner = NULL WHERE id = ?1")?
        .execute(params![cell_id, ORPHANED])?;
    tx.prepare_cached(
        "UPDATE notebook_runs SET status = 'failed', error = ?2 WHERE cell_id = ?1 AND status = 'running'",
    )?
    .execute(params![cell_id, ORPHANED])?;
    Ok(())
}

impl Store {
    /// Whether cell `cell` of `nb` is running in a server that is still
    /// alive (this one or another): its status says running and its run
    /// lock is held, or cannot be asked about.
    fn live_run(&self, nb: &Notebook, cell: &Cell) -> bool {
        cell.status == Some(CellStatus::Running) && lock::held(self.path(), &nb.id, &cell.id)
    }

    /// The cell `cell_id` of `nb`, cells running in a live server refused.
    fn idle_cell<'a>(&self, nb: &'a Notebook, cell_id: &str) -> Result<&'a Cell> {
        let cell = nb.cell(cell_id).ok_or_else(|| no_cell(&nb.id, cell_id, "cellId"))?;
        if self.live_run(nb, cell) {
            return Err(running(&nb.id, cell_id));
        }
        Ok(cell)
    }
}

impl Store {
    /// Create a notebook with its cells, linked to `session_id` (which
    /// must exist) when given.
    pub fn create_notebook(&self, new: NewNotebook) -> Result<Notebook> {
        if new.cells.len() > MAX_CELLS {
            return Err(Error::invalid(
                "content",
                format!("a notebook holds at most {MAX_CELLS} cells"),
            ));
        }
        self.write(|tx| {
            if let Some(s) = &new.session_id
                && !super::sessions::session_exists_tx(tx, s)?
            {
                return Err(Error::session_not_found(s.as_str()));
            }
            let id = uuid::Uuid::new_v4().to_string();
            let now = now_ms();
            tx.prepare_cached(
                "INSERT INTO notebooks (id, name, language, tsconfig, session_id, created_at, updated_at,
                     allow_child_process)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)",
            )?
            .execute(params![
                id,
                new.name,
                new.language.as_str(),
                new.tsconfig,
                new.session_id,
                now,
                new.allow_child_processes
            ])?;
            let mut seen: Vec<&str> = Vec::new();
            for (i, cell) in new.cells.iter().enumerate() {
                if let Some(f) = cell.filename.as_deref() {
                    if seen.contains(&f) {
                        return Err(Error::invalid_with(
                            "filename",
                            format!("two cells of file {f:?}: each cell is one file, and needs its own name"),
                            json!({ "filename": f }),
                        ));
                    }
                    seen.push(f);
                }
                insert_cell_tx(tx, &id, i as i64, cell)?;
            }
            notebook_tx(tx, &id)
        })
    }

    pub fn notebook(&self, id: &str) -> Result<Notebook> {
        self.read(|tx| notebook_tx(tx, id))
    }

    /// Notebooks newest changed first, of one session when `session` is
    /// given; with the total.
    pub fn list_notebooks(
        &self,
        session: Option<&str>,
        limit: u32,
        offset: u32,
    ) -> Result<(Vec<NotebookSummary>, u64)> {
        self.read(|tx| {
            let rows = tx
                .prepare_cached(
                    "SELECT n.id, n.name, n.language, n.session_id, n.created_at, n.updated_at,
                         (SELECT count(*) FROM notebook_cells AS c WHERE c.notebook_id = n.id),
                         (SELECT c.content FROM notebook_cells AS c WHERE c.notebook_id = n.id AND c.type = 'title'
                          ORDER BY c.position LIMIT 1)
                     FROM notebooks AS n WHERE ?1 IS NULL OR n.session_id = ?1
                     ORDER BY n.updated_at DESC, n.seq DESC LIMIT ?2 OFFSET ?3",
                )?
                .query_map(params![session, limit, offset], |r| {
                    let language: String = r.get(2)?;
                    let name: String = r.get(1)?;
                    let title: Option<String> = r.get(7)?;
                    Ok(NotebookSummary {
                        id: r.get(0)?,
                        title: title.unwrap_or(name),
                        language: Language::parse(&language).unwrap_or(Language::JavaScript).as_str(),
                        session_id: r.get(3)?,
                        created_at: r.get(4)?,
                        updated_at: r.get(5)?,
                        cell_count: r.get::<_, i64>(6)?.max(0) as u64,
                    })
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let total: i64 = tx
                .prepare_cached("SELECT count(*) FROM notebooks WHERE ?1 IS NULL OR session_id = ?1")?
                .query_row([session], |r| r.get(0))?;
            Ok((rows, total.max(0) as u64))
        })
    }

    /// Add `cell` after `after` (a cell of the notebook), else at the end.
    pub fn add_cell(&self, notebook: &str, cell: NewCell, after: Option<&str>) -> Result<Cell> {
        self.write(|tx| {
            let nb = notebook_tx(tx, notebook)?;
            if nb.cells.len() >= MAX_CELLS {
                return Err(Error::invalid(
                    "notebookId",
                    format!("notebook {notebook} holds {MAX_CELLS} cells, the most a notebook holds"),
                ));
            }
            check_unique_file(&nb, &cell, None)?;
            if cell.kind == CellKind::PackageJson && nb.package_json().is_some() {
                return Err(Error::invalid(
                    "type",
                    "the notebook has its package.json cell already: update that one",
                ));
            }
            let position = match after {
                Some(a) => {
                    let at = nb
                        .cells
                        .iter()
                        .position(|c| c.id == a)
                        .ok_or_else(|| no_cell(notebook, a, "afterCellId"))?;
                    tx.prepare_cached(
                        "UPDATE notebook_cells SET position = position + 1 WHERE notebook_id = ?1 AND position > ?2",
                    )?
                    .execute(params![notebook, at as i64])?;
                    at as i64 + 1
                }
                None => nb.cells.len() as i64,
            };
            let id = insert_cell_tx(tx, notebook, position, &cell)?;
            touch(tx, notebook)?;
            let nb = notebook_tx(tx, notebook)?;
            nb.cell(&id)
                .cloned()
                .ok_or_else(|| Error::Internal("the cell added is gone".into()))
        })
    }

    /// Replace a cell's content (checked by the caller for its kind). A
    /// code cell's status goes back to idle: its output was of the old source
    /// (the runs table keeps it).
    pub fn update_cell(&self, notebook: &str, cell_id: &str, content: String) -> Result<Cell> {
        self.write(|tx| {
            let nb = notebook_tx(tx, notebook)?;
            let cell = self.idle_cell(&nb, cell_id)?;
            crate::notebook::check_content(cell.kind, &content)?;
            if cell.kind == CellKind::PackageJson {
                crate::notebook::check_package_json(&content)?;
            }
            tx.prepare_cached(
                "UPDATE notebook_cells SET content = ?2,
                     status = CASE WHEN status IS NULL THEN NULL ELSE 'idle' END, output = NULL, error = NULL
                 WHERE id = ?1",
            )?
            .execute(params![cell_id, content])?;
            touch(tx, notebook)?;
            let nb = notebook_tx(tx, notebook)?;
            nb.cell(cell_id)
                .cloned()
                .ok_or_else(|| no_cell(notebook, cell_id, "cellId"))
        })
    }

    pub fn delete_cell(&self, notebook: &str, cell_id: &str) -> Result<Cell> {
        self.write(|tx| {
            let nb = notebook_tx(tx, notebook)?;
            let cell = self.idle_cell(&nb, cell_id)?.clone();
            if cell.kind == CellKind::PackageJson {
                return Err(Error::InvalidOperation {
                    message: "the package.json cell stays with its notebook (Srcbook needs it, install_deps reads \
                              it): update it instead"
                        .into(),
                    details: Some(json!({ "notebookId": notebook, "cellId": cell_id })),
                });
            }
            let at = nb.cells.iter().position(|c| c.id == cell_id).unwrap_or_default();
            tx.prepare_cached("DELETE FROM notebook_cells WHERE id = ?1")?
                .execute([cell_id])?;
            tx.prepare_cached(
                "UPDATE notebook_cells SET position = position - 1 WHERE notebook_id = ?1 AND position > ?2",
            )?
            .execute(params![notebook, at as i64])?;
            touch(tx, notebook)?;
            Ok(cell)
        })
    }

    /// Delete a notebook, its cells and runs; refused while a cell runs in
    /// a live server.
    pub fn delete_notebook(&self, id: &str) -> Result<Notebook> {
        self.write(|tx| {
            let nb = notebook_tx(tx, id)?;
            if let Some(c) = nb.cells.iter().find(|c| self.live_run(&nb, c)) {
                return Err(running(id, &c.id));
            }
            tx.prepare_cached("DELETE FROM notebooks WHERE id = ?1")?
                .execute([id])?;
            Ok(nb)
        })
    }

    /// Mark cell `cell_id` running by `runner` (a [`runner_id`]) and record
    /// the run's start: answers the notebook (to write its files) and the
    /// run's key. The caller holds the cell's run lock (`_held`), so a cell
    /// still marked running is one whose server died: its run is marked
    /// failed and the cell taken over.
    ///
    /// [`runner_id`]: crate::notebook::runner::runner_id
    pub fn start_run(
        &self,
        notebook: &str,
        cell_id: &str,
        runner: &str,
        kind: RunKind,
        _held: &RunLock,
    ) -> Result<(Notebook, i64)> {
        self.write(|tx| {
            let nb = notebook_tx(tx, notebook)?;
            let cell = nb.cell(cell_id).ok_or_else(|| no_cell(notebook, cell_id, "cellId"))?;
            if cell.status == Some(CellStatus::Running) {
                fail_orphaned_tx(tx, cell_id)?;
            }
            tx.prepare_cached(
                "UPDATE notebook_cells SET status = 'running', runner = ?2, output = NULL, error = NULL WHERE id = ?1",
            )?
            .execute(params![cell_id, runner])?;
            let kind = match kind {
                RunKind::Run => "run",
                RunKind::Install => "install",
            };
            tx.prepare_cached(
                "INSERT INTO notebook_runs (notebook_id, cell_id, kind, started_at, status)
                 VALUES (?1, ?2, ?3, ?4, 'running')",
            )?
            .execute(params![notebook, cell_id, kind, crate::domain::now()])?;
            let run = tx.last_insert_rowid();
            touch(tx, notebook)?;
            Ok((notebook_tx(tx, notebook)?, run))
        })
    }

    /// Record how run `run` of cell `cell_id`, by `runner`, ended;
    /// `source`, for an install that succeeded, is the package.json cell's
    /// new source. The run's row is finished; the cell only while `runner`
    /// still holds it (a cell deleted or taken over meanwhile keeps what it
    /// has).
    pub fn finish_run(
        &self,
        notebook: &str,
        cell_id: &str,
        runner: &str,
        run: i64,
        outcome: &Outcome,
        source: Option<&str>,
    ) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached(
                "UPDATE notebook_runs SET duration_ms = ?2, exit_code = ?3, status = ?4, output = ?5, error = ?6
                 WHERE seq = ?1",
            )?
            .execute(params![
                run,
                outcome.duration_ms as i64,
                outcome.exit_code,
                outcome.status.as_str(),
                outcome.output,
                outcome.error
            ])?;
            tx.prepare_cached(
                "UPDATE notebook_cells SET status = ?2, output = ?3, error = ?4, runner = NULL,
                     content = coalesce(?5, content)
                 WHERE id = ?1 AND runner = ?6",
            )?
            .execute(params![
                cell_id,
                outcome.status.as_str(),
                outcome.output,
                outcome.error,
                source,
                runner
            ])?;
            touch(tx, notebook)?;
            Ok(())
        })
    }

    /// Put back cell `cell_id` as it was before [`Store::start_run`] by
    /// `runner` when the run could not start at all (a cell taken over
    /// meanwhile is left alone), and drop the run's row. A cell that was
    /// running then had been left by a dead server: it goes back failed.
    pub fn abandon_run(&self, cell_id: &str, runner: &str, run: i64, before: &Cell) -> Result<()> {
        self.write(|tx| {
            tx.prepare_cached("DELETE FROM notebook_runs WHERE seq = ?1")?
                .execute([run])?;
            let (status, error) = match before.status {
                Some(CellStatus::Running) => (CellStatus::Failed, Some(ORPHANED)),
                status => (status.unwrap_or(CellStatus::Idle), before.error.as_deref()),
            };
            tx.prepare_cached(
                "UPDATE notebook_cells SET status = ?2, output = ?3, error = ?4, runner = NULL
                 WHERE id = ?1 AND runner = ?5",
            )?
            .execute(params![cell_id, status.as_str(), before.output, error, runner])?;
            Ok(())
        })
    }

    /// Mark failed every cell left `running` by a server that no longer
    /// runs (killed mid-run; its run lock is free): none stays stuck in
    /// `running`. Answers how many were marked.
    pub fn fail_orphaned_runs(&self) -> Result<usize> {
        self.write(|tx| {
            let stuck: Vec<(String, String)> = tx
                .prepare_cached("SELECT id, notebook_id FROM notebook_cells WHERE status = 'running'")?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let mut marked = 0;
            for (id, notebook) in stuck {
                if lock::held(self.path(), &notebook, &id) {
                    continue;
                }
                fail_orphaned_tx(tx, &id)?;
                marked += 1;
            }
            Ok(marked)
        })
    }

    /// How many runs cell `cell_id` has had.
    #[cfg(test)]
    pub fn run_count(&self, cell_id: &str) -> Result<u64> {
        self.read(|tx| {
            let n: i64 = tx
                .prepare_cached("SELECT count(*) FROM notebook_runs WHERE cell_id = ?1")?
                .query_row([cell_id], |r| r.get(0))?;
            Ok(n.max(0) as u64)
        })
    }

    /// Cells whose text or output holds all words of `text`, best first
    /// (BM25 with the server's word weights, as thoughts are scored), with
    /// whether more matched than `limit`.
    pub fn search_notebooks(&self, text: &str, limit: u32) -> Result<(Vec<NotebookHit>, bool)> {
        const BOUND: usize = 1000;
        let plan = QueryPlan::of(text);
        if plan.is_empty() {
            return Ok((Vec::new(), false));
        }
        let words = query_words(text);
        let all = "(c.content || ' ' || coalesce(c.output, '') || ' ' || coalesce(c.error, ''))";
        self.read(|tx| {
            let (mut clauses, mut values) = plan.text_conditions(all);
            let from = match &plan.fts {
                Some(q) => {
                    clauses.push("notebook_cells_fts MATCH ?".into());
                    values.push(q.clone());
                    "notebook_cells_fts CROSS JOIN notebook_cells AS c ON c.seq = notebook_cells_fts.rowid"
                }
                None => "notebook_cells AS c",
            };
            let sql = format!(
                "SELECT c.id, c.notebook_id, coalesce((SELECT t.content FROM notebook_cells AS t
                     WHERE t.notebook_id = c.notebook_id AND t.type = 'title' ORDER BY t.position LIMIT 1), n.name),
                     c.type, c.content, coalesce(c.output, ''), coalesce(c.error, '')
                 FROM {from} JOIN notebooks AS n ON n.id = c.notebook_id
                 WHERE {} ORDER BY c.seq DESC LIMIT {BOUND}",
                clauses.join(" AND ")
            );
            type Row7 = (String, String, String, String, String, String, String);
            let rows: Vec<Row7> = tx
                .prepare_cached(&sql)?
                .query_map(rusqlite::params_from_iter(&values), |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                        r.get(6)?,
                    ))
                })?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let texts: Vec<String> = rows.iter().map(|r| format!("{} {} {}", r.4, r.5, r.6)).collect();
            let (_, scores) = Scorer::rank(
                tx,
                text,
                &texts,
                "SELECT coalesce(max(seq), 0) FROM notebook_cells",
                "notebook_cells_fts",
            )?;
            let mut hits: Vec<NotebookHit> = rows
                .into_iter()
                .zip(scores)
                .map(|(r, score)| NotebookHit {
                    snippet: best_snippet(&[&r.4, &r.5, &r.6], &words, SNIPPET_TOKENS),
                    cell_type: CellKind::parse(&r.3).unwrap_or(CellKind::Markdown).as_str(),
                    notebook_id: r.1,
                    notebook_title: r.2,
                    cell_id: r.0,
                    score,
                })
                .collect();
            hits.sort_by(|a, b| b.score.total_cmp(&a.score));
            let more = hits.len() > limit as usize;
            hits.truncate(limit as usize);
            Ok((hits, more))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::NewSession;
    use crate::notebook::{Template, template_cells};
    use crate::store::test_support::temp_store;

    fn new(store: &Store, session: Option<String>) -> Notebook {
        let _ = store;
        let cells = template_cells(Template::Blank, "Probe", Language::JavaScript, "2026-12-07");
        store
            .create_notebook(NewNotebook {
                name: "Probe".into(),
                language: Language::JavaScript,
                tsconfig: None,
                session_id: session,
                allow_child_processes: false,
                cells,
            })
            .unwrap()
    }

    #[test]
    fn cells_keep_their_order_and_files_their_names() {
        let (_d, store) = temp_store();
        let nb = new(&store, None);
        let a = store
            .add_cell(&nb.id, NewCell::code("a.js", Language::JavaScript, "1"), None)
            .unwrap();
        let b = store
            .add_cell(&nb.id, NewCell::markdown("between"), Some(&nb.cells[1].id))
            .unwrap();
        let nb2 = store.notebook(&nb.id).unwrap();
        let ids: Vec<&str> = nb2.cells.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, [nb.cells[0].id.as_str(), nb.cells[1].id.as_str(), &b.id, &a.id]);
        let e = store
            .add_cell(&nb.id, NewCell::code("a.js", Language::JavaScript, "2"), None)
            .unwrap_err();
        assert_eq!(e.code(), "INVALID_PAYLOAD");
        let e = store
            .add_cell(&nb.id, NewCell::markdown("x"), Some("nope"))
            .unwrap_err();
        assert_eq!(e.details().unwrap()["cellId"], "nope");
        store.delete_cell(&nb.id, &b.id).unwrap();
        assert_eq!(store.notebook(&nb.id).unwrap().cells[2].id, a.id);
        assert_eq!(store.list_notebooks(None, 10, 0).unwrap().1, 1);
    }

    fn outcome(output: &str) -> Outcome {
        Outcome {
            status: CellStatus::Completed,
            output: output.into(),
            error: None,
            exit_code: Some(0),
            duration_ms: 3,
            started_at: crate::domain::now(),
            sandbox: "process",
        }
    }

    fn cell_of(store: &Store, nb: &str, cell: &str) -> Cell {
        store.notebook(nb).unwrap().cell(cell).cloned().unwrap()
    }

    #[test]
    fn a_run_holding_its_lock_is_alive_and_one_without_is_failed() {
        let (_d, store) = temp_store();
        let nb = new(&store, None);
        let c = store
            .add_cell(&nb.id, NewCell::code("a.js", Language::JavaScript, "1"), None)
            .unwrap();
        let lock = RunLock::try_take(store.path(), &nb.id, &c.id).unwrap().unwrap();
        store.start_run(&nb.id, &c.id, "1:a", RunKind::Run, &lock).unwrap();
        // Whatever its runner's name says, a held lock keeps the run alive.
        assert_eq!(store.fail_orphaned_runs().unwrap(), 0);
        assert!(RunLock::try_take(store.path(), &nb.id, &c.id).unwrap().is_none());
        assert_eq!(store.delete_notebook(&nb.id).unwrap_err().code(), "INVALID_OPERATION");
        assert_eq!(
            store.delete_cell(&nb.id, &c.id).unwrap_err().code(),
            "INVALID_OPERATION"
        );
        let e = store.update_cell(&nb.id, &c.id, "2".into()).unwrap_err();
        assert_eq!(e.code(), "INVALID_OPERATION");
        assert_eq!(cell_of(&store, &nb.id, &c.id).status, Some(CellStatus::Running));
        // Its server gone (the kernel lets its lock go), the sweep fails it.
        drop(lock);
        assert_eq!(store.fail_orphaned_runs().unwrap(), 1);
        let cell = cell_of(&store, &nb.id, &c.id);
        assert_eq!(cell.status, Some(CellStatus::Failed));
        assert!(cell.error.unwrap().contains("server running this cell stopped"));
        assert_eq!(store.fail_orphaned_runs().unwrap(), 0);
    }

    #[test]
    fn only_the_run_that_holds_the_cell_records_its_end() {
        let (_d, store) = temp_store();
        let nb = new(&store, None);
        let c = store
            .add_cell(&nb.id, NewCell::code("a.js", Language::JavaScript, "1"), None)
            .unwrap();
        let first = RunLock::try_take(store.path(), &nb.id, &c.id).unwrap().unwrap();
        let (_, run_a) = store.start_run(&nb.id, &c.id, "1:a", RunKind::Run, &first).unwrap();
        // Its server dies; another takes the cell over.
        drop(first);
        let second = RunLock::try_take(store.path(), &nb.id, &c.id).unwrap().unwrap();
        let before = cell_of(&store, &nb.id, &c.id);
        let (_, run_b) = store.start_run(&nb.id, &c.id, "2:b", RunKind::Run, &second).unwrap();
        // The first run's row is failed by the take-over.
        let status: String = store
            .read(|tx| {
                Ok(tx
                    .prepare("SELECT status FROM notebook_runs WHERE seq = ?1")?
                    .query_row([run_a], |r| r.get(0))?)
            })
            .unwrap();
        assert_eq!(status, "failed");
        // The first run, were it to end after all, changes only its own row.
        store
            .finish_run(&nb.id, &c.id, "1:a", run_a, &outcome("first"), None)
            .unwrap();
        store.abandon_run(&c.id, "1:a", run_a, &before).unwrap();
        let cell = cell_of(&store, &nb.id, &c.id);
        assert_eq!(cell.status, Some(CellStatus::Running));
        assert_eq!(cell.output, None);
        store
            .finish_run(&nb.id, &c.id, "2:b", run_b, &outcome("second"), None)
            .unwrap();
        let cell = cell_of(&store, &nb.id, &c.id);
        assert_eq!(cell.status, Some(CellStatus::Completed));
        assert_eq!(cell.output.as_deref(), Some("second"));
        drop(second);
        // A run that could not start puts back a cell its dead server had
        // left running as failed, not running.
        let third = RunLock::try_take(store.path(), &nb.id, &c.id).unwrap().unwrap();
        let (_, run_c) = store.start_run(&nb.id, &c.id, "3:c", RunKind::Run, &third).unwrap();
        drop(third);
        let fourth = RunLock::try_take(store.path(), &nb.id, &c.id).unwrap().unwrap();
        let before = cell_of(&store, &nb.id, &c.id);
        let (_, run_d) = store.start_run(&nb.id, &c.id, "4:d", RunKind::Run, &fourth).unwrap();
        store.abandon_run(&c.id, "4:d", run_d, &before).unwrap();
        assert_eq!(cell_of(&store, &nb.id, &c.id).status, Some(CellStatus::Failed));
        assert!(run_c < run_d);
        // Rows left: b's and c's (an abandoned run drops its own).
        assert_eq!(store.run_count(&c.id).unwrap(), 2);
    }

    #[test]
    fn cells_and_outputs_are_searchable_and_sessions_linked() {
        let (_d, store) = temp_store();
        let sid = store.create_session(NewSession::titled("s")).unwrap().id;
        let nb = new(&store, Some(sid.clone()));
        let c = store
            .add_cell(
                &nb.id,
                NewCell::code("a.js", Language::JavaScript, "console.log(1)"),
                None,
            )
            .unwrap();
        let lock = RunLock::try_take(store.path(), &nb.id, &c.id).unwrap().unwrap();
        let (_, run) = store.start_run(&nb.id, &c.id, "1:1", RunKind::Run, &lock).unwrap();
        store
            .finish_run(&nb.id, &c.id, "1:1", run, &outcome("zanzibar quokka"), None)
            .unwrap();
        drop(lock);
        let (hits, more) = store.search_notebooks("quokka", 10).unwrap();
        assert!(!more);
        assert_eq!(hits.len(), 1);
        assert_eq!(hits[0].cell_id, c.id);
        assert!(hits[0].snippet.contains("quokka"));
        assert_eq!(store.list_notebooks(Some(&sid), 10, 0).unwrap().0.len(), 1);
        assert_eq!(store.run_count(&c.id).unwrap(), 1);
        // Deleting the session keeps the notebook, unlinked.
        store.delete_session(&sid).unwrap();
        assert_eq!(store.notebook(&nb.id).unwrap().session_id, None);
        store.delete_notebook(&nb.id).unwrap();
        assert!(store.search_notebooks("quokka", 10).unwrap().0.is_empty());
    }
}
