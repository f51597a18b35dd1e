//! The `notebook` operation: notebooks kept in the ledger, their cells,
//! running a code cell in its sandbox (see [`crate::notebook::runner`]),
//! installing dependencies, and the `.src.md` export and import.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use super::answers::notebook::{
    CellAnswer, CellsAnswer, CutOutput, DeletedAnswer, NotebookAnswer, NotebookExportAnswer, NotebookListAnswer,
    OutputsTruncated, RunAnswer,
};
use super::ops::refuse_unknown_sessions;
use super::preview::PREVIEW_CHARS;
use super::{Args, Gateway, answers, params};
use crate::domain::SessionId;
use crate::error::{Error, Result};
use crate::notebook::Outcome;
use crate::notebook::install;
use crate::notebook::lock::{self, RunLock};
use crate::notebook::runner::{self, Limits, Node};
use crate::notebook::{
    Cell, CellKind, Language, NewCell, Notebook, Template, check_package_json, check_title, default_tsconfig,
    parse_package_spec, srcbook, template_cells, with_dependencies,
};
use crate::store::{NewNotebook, RunKind};

pub async fn notebook(gw: &Gateway, args: Args) -> Result<Value> {
    let (name, args) = args.sub_operation("notebook")?;
    let name = super::refused::required_sub_operation("notebook", name)?;
    match name.as_str() {
        "create" => create(gw, args).await,
        "list" => list(gw, args).await,
        "get" => {
            let p: params::NotebookGet = args.parse("notebook.get")?;
            let id = p.notebook_id.trim().to_string();
            let mut nb = gw.blocking(move |s| s.notebook(&id)).await?;
            let truncated = cut_outputs(&mut nb.cells, p.full.unwrap_or(false));
            answers::to_value(&NotebookAnswer {
                notebook_id: &nb.id,
                notebook: &nb,
                directory: runner::notebook_dir(gw.store.path(), &nb.id).display().to_string(),
                next_step: None,
                truncated,
            })
        }
        "add_cell" => add_cell(gw, args).await,
        "update_cell" => {
            let p: params::UpdateCell = args.parse("notebook.update_cell")?;
            let (nb, cell) = (p.notebook_id.trim().to_string(), p.cell_id.trim().to_string());
            known_notebook(gw, &nb).await?;
            let (n, content) = (nb.clone(), p.content);
            let updated = gw.write(move |s| s.update_cell(&n, &cell, content)).await?;
            gw.wrote();
            answers::to_value(&CellAnswer {
                notebook_id: &nb,
                cell: &updated,
            })
        }
        "delete_cell" => {
            let p: params::CellRef = args.parse("notebook.delete_cell")?;
            let (nb, cell) = (p.notebook_id.trim().to_string(), p.cell_id.trim().to_string());
            known_notebook(gw, &nb).await?;
            let (n, c) = (nb.clone(), cell.clone());
            let removed = gw.write(move |s| s.delete_cell(&n, &c)).await?;
            gw.wrote();
            if let Some(f) = removed.filename.as_deref().filter(|_| removed.kind == CellKind::Code) {
                // Its file would otherwise stay importable by the other cells.
                let file = runner::notebook_dir(gw.store.path(), &nb).join("src").join(f);
                if let Err(e) = std::fs::remove_file(&file)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!("could not remove the deleted cell's file {}: {e}", file.display());
                }
            }
            lock::remove(gw.store.path(), &nb, Some(&cell));
            answers::to_value(&DeletedAnswer {
                notebook_id: &nb,
                cell_id: Some(&cell),
                deleted: true,
                cells_deleted: None,
            })
        }
        "get_cell" => {
            let p: params::CellRef = args.parse("notebook.get_cell")?;
            let (nb_id, cell_id) = (p.notebook_id.trim().to_string(), p.cell_id.trim().to_string());
            let id = nb_id.clone();
            let nb = gw.blocking(move |s| s.notebook(&id)).await?;
            let cell = nb.cell(&cell_id).ok_or_else(|| {
                Error::invalid_with(
                    "cellId",
                    format!("notebook {nb_id} has no cell with id {cell_id:?} (notebook get lists its cells)"),
                    json!({ "notebookId": nb_id, "cellId": cell_id }),
                )
            })?;
            answers::to_value(&CellAnswer {
                notebook_id: &nb_id,
                cell,
            })
        }
        // The TypeScript Thoughtbox's names: the cells alone, and import.
        "list_cells" => {
            let p: params::NotebookGet = args.parse("notebook.get")?;
            let id = p.notebook_id.trim().to_string();
            let mut nb = gw.blocking(move |s| s.notebook(&id)).await?;
            let truncated = cut_outputs(&mut nb.cells, p.full.unwrap_or(false));
            answers::to_value(&CellsAnswer {
                notebook_id: &nb.id,
                cells: &nb.cells,
                count: nb.cells.len(),
                truncated,
            })
        }
        "run_cell" => run_cell(gw, args).await,
        "install_deps" => install_deps(gw, args).await,
        "export" => export(gw, args).await,
        "import" | "load" => import(gw, args).await,
        "delete" => {
            let p: params::NotebookRef = args.parse("notebook.delete")?;
            let id = p.notebook_id.trim().to_string();
            known_notebook(gw, &id).await?;
            let i = id.clone();
            let nb = gw.write(move |s| s.delete_notebook(&i)).await?;
            gw.wrote();
            let dir = runner::notebook_dir(gw.store.path(), &id);
            if dir.exists()
                && let Err(e) = std::fs::remove_dir_all(&dir)
            {
                tracing::warn!("could not remove notebook directory {}: {e}", dir.display());
            }
            lock::remove(gw.store.path(), &id, None);
            answers::to_value(&DeletedAnswer {
                notebook_id: &id,
                cell_id: None,
                deleted: true,
                cells_deleted: Some(nb.cells.len()),
            })
        }
        other => Err(super::refused::unknown_sub_operation("notebook", other)),
    }
}

/// Refuse an unknown notebook by reading, before a write would wait for
/// the write lock to say the same.
async fn known_notebook(gw: &Gateway, id: &str) -> Result<()> {
    let id = id.to_string();
    gw.blocking(move |s| s.notebook(&id).map(|_| ())).await
}

/// The session a new notebook belongs to: the one named, else the
/// connection's current one, else none.
async fn linked_session(gw: &Gateway, given: Option<SessionId>) -> Result<Option<String>> {
    let session = match given {
        Some(id) if id.is_empty() => {
            return Err(Error::invalid(
                "sessionId",
                "sessionId must name a session (or leave it out)",
            ));
        }
        Some(id) => Some(id.into_string()),
        None => gw.active_session(),
    };
    refuse_unknown_sessions(gw, session.iter().cloned().collect()).await?;
    Ok(session)
}

fn answer_notebook(gw: &Gateway, nb: &Notebook, next_step: Option<&'static str>) -> Result<Value> {
    answers::to_value(&NotebookAnswer {
        notebook_id: &nb.id,
        notebook: nb,
        directory: runner::notebook_dir(gw.store.path(), &nb.id).display().to_string(),
        next_step,
        truncated: None,
    })
}

/// Cut each cell's output to [`PREVIEW_CHARS`] characters unless `full`:
/// a run keeps up to 1 MiB of output, and a notebook of many such cells
/// would make an answer no model reads (as thought texts are cut).
fn cut_outputs(cells: &mut [Cell], full: bool) -> Option<OutputsTruncated> {
    if full {
        return None;
    }
    let mut cut = Vec::new();
    for cell in cells {
        let Some(output) = cell.output.as_mut() else { continue };
        if let Some((at, _)) = output.char_indices().nth(PREVIEW_CHARS) {
            let chars = PREVIEW_CHARS + output[at..].chars().count();
            output.truncate(at);
            cut.push(CutOutput {
                cell_id: cell.id.clone(),
                output_chars: chars,
            });
        }
    }
    (!cut.is_empty()).then_some(OutputsTruncated {
        cells: cut,
        max_chars_per_output: PREVIEW_CHARS,
        read_whole: "notebook get_cell with notebookId and cellId answers one cell whole; full: true answers every \
                     output whole",
    })
}

fn language_of(l: params::LanguageName) -> Language {
    match l {
        params::LanguageName::JavaScript => Language::JavaScript,
        params::LanguageName::TypeScript => Language::TypeScript,
    }
}

async fn create(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::CreateNotebook = args.parse("notebook.create")?;
    check_title("name", &p.name)?;
    let name = p.name.trim().to_string();
    let language = p.language.map_or(Language::JavaScript, language_of);
    let template = match p.template {
        Some(params::TemplateName::SequentialFeynman) => Template::SequentialFeynman,
        _ => Template::Blank,
    };
    let allow_child_processes = p.allow_child_processes.unwrap_or(false);
    if allow_child_processes {
        child_processes_allowed(gw, "leave it out to create the notebook; nothing was created")?;
    }
    let session_id = linked_session(gw, p.session_id).await?;
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let new = NewNotebook {
        cells: template_cells(template, &name, language, &today),
        tsconfig: (language == Language::TypeScript).then(default_tsconfig),
        name,
        language,
        session_id,
        allow_child_processes,
    };
    let nb = gw.write(move |s| s.create_notebook(new)).await?;
    gw.wrote();
    answer_notebook(
        gw,
        &nb,
        Some("add_cell adds markdown and code cells; run_cell runs a code cell; pass this notebookId back."),
    )
}

/// Refuse `allowChildProcesses` unless the server was started with
/// `--notebook-child-processes`: the processes a cell starts are outside
/// the sandbox (they can read what the server's user can), so whoever runs
/// the server chooses, not the agent. `then` says what became of the call.
fn child_processes_allowed(gw: &Gateway, then: &str) -> Result<()> {
    if gw.options.notebook_child_processes {
        return Ok(());
    }
    Err(Error::invalid_with(
        "allowChildProcesses",
        format!(
            "allowChildProcesses: true lets a notebook's cells start processes outside the sandbox, and this server \
             does not allow it: whoever runs the server enables it with `thoughtbox serve \
             --notebook-child-processes` (or THOUGHTBOX_NOTEBOOK_CHILD_PROCESSES=on); {then}"
        ),
        json!({ "allowChildProcesses": true, "enable": "--notebook-child-processes" }),
    ))
}

async fn list(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ListNotebooks = args.parse("notebook.list")?;
    let limit = p.limit.get("limit")?;
    let offset = p.offset.unwrap_or(0);
    let session = p
        .session_id
        .filter(|_| p.all_sessions != Some(true))
        .map(SessionId::into_string);
    let (notebooks, total) = gw
        .blocking(move |s| {
            // A session that does not exist is an error, not an empty list.
            if let Some(id) = &session {
                s.session(id)?;
            }
            s.list_notebooks(session.as_deref(), limit, offset)
        })
        .await?;
    answers::to_value(&NotebookListAnswer {
        count: notebooks.len(),
        has_more: u64::from(offset) + (notebooks.len() as u64) < total,
        notebooks,
        total,
    })
}

async fn add_cell(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::AddCell = args.parse("notebook.add_cell")?;
    let nb_id = p.notebook_id.trim().to_string();
    let id = nb_id.clone();
    let nb = gw.blocking(move |s| s.notebook(&id)).await?;
    let cell = match p.kind {
        params::CellTypeName::Title => NewCell::title(p.content),
        params::CellTypeName::Markdown => NewCell::markdown(p.content),
        params::CellTypeName::Code => {
            let language = p.language.map(language_of);
            let filename = match p.filename {
                Some(f) => f.trim().to_string(),
                None => {
                    let language = language.unwrap_or(nb.language);
                    (1..)
                        .map(|n| format!("cell-{n}.{}", language.extension()))
                        .find(|f| nb.cells.iter().all(|c| c.filename.as_deref() != Some(f)))
                        .unwrap_or_default()
                }
            };
            let language = language
                .or_else(|| Language::of_filename(&filename))
                .unwrap_or(nb.language);
            NewCell::code(filename, language, p.content)
        }
    };
    if p.kind != params::CellTypeName::Code && (args.has("filename") || args.has("language")) {
        return Err(Error::invalid(
            if args.has("filename") { "filename" } else { "language" },
            "filename and language are a code cell's: leave them out of a title or markdown cell",
        ));
    }
    let cell = cell.checked()?;
    let after = p.after_cell_id.map(|a| a.trim().to_string());
    let added = gw.write(move |s| s.add_cell(&nb_id, cell, after.as_deref())).await?;
    gw.wrote();
    answers::to_value(&CellAnswer {
        notebook_id: &nb.id,
        cell: &added,
    })
}

/// A run's time limit: the call's, else the server's.
fn time_limit(gw: &Gateway, secs: Option<u32>) -> Result<Duration> {
    match secs {
        None => Ok(gw.options.notebook_timeout),
        Some(s) if (1..=runner::MAX_TIME_LIMIT.as_secs()).contains(&u64::from(s)) => Ok(Duration::from_secs(s.into())),
        Some(s) => Err(Error::invalid(
            "timeoutSecs",
            format!(
                "timeoutSecs must be between 1 and {}, got {s}",
                runner::MAX_TIME_LIMIT.as_secs()
            ),
        )),
    }
}

/// Take cell `cell_id`'s run lock and mark it running (a run of `kind`):
/// answers the notebook, the run's key, its runner and the lock, which the
/// run holds until its end is recorded. A cell whose lock another run holds
/// (in this server or another) is running.
async fn start_run(
    gw: &Gateway,
    notebook: &str,
    cell_id: &str,
    kind: RunKind,
) -> Result<(Notebook, i64, String, RunLock)> {
    let (database, n, c) = (gw.store.path().to_path_buf(), notebook.to_string(), cell_id.to_string());
    let taken = tokio::task::spawn_blocking(move || RunLock::try_take(&database, &n, &c))
        .await
        .map_err(|e| Error::Internal(format!("taking the run lock: {e}")))??;
    let Some(held) = taken else {
        return Err(crate::store::cell_running(notebook, cell_id));
    };
    let runner = runner::runner_id();
    let (n, c, r) = (notebook.to_string(), cell_id.to_string(), runner.clone());
    let (nb, run, held) = gw
        .write(move |s| s.start_run(&n, &c, &r, kind, &held).map(|(nb, run)| (nb, run, held)))
        .await?;
    gw.wrote();
    Ok((nb, run, runner, held))
}

/// Run `work` (a run of `cell_id`, already marked running as `run` by
/// `runner`, holding `held`) in a task of its own and record how it ended:
/// a client that stops waiting does not leave the cell half-recorded. A
/// run that could not start at all puts the cell back as it was. The lock
/// goes once the end is recorded.
async fn recorded_run(
    gw: &Gateway,
    (nb, run, runner, held): (Notebook, i64, String, RunLock),
    before: Cell,
    source: Option<String>,
    work: impl std::future::Future<Output = Result<Outcome>> + Send + 'static,
) -> Result<Outcome> {
    let cell_id = before.id.clone();
    let gw2 = gw.clone();
    let task = tokio::spawn(async move {
        let outcome = work.await;
        let (n, c) = (nb.id.clone(), cell_id.clone());
        let recorded = match &outcome {
            Ok(o) => {
                let o = o.clone();
                let src = source.filter(|_| o.status == crate::notebook::CellStatus::Completed);
                gw2.write(move |s| s.finish_run(&n, &c, &runner, run, &o, src.as_deref()))
                    .await
            }
            Err(_) => gw2.write(move |s| s.abandon_run(&c, &runner, run, &before)).await,
        };
        drop(held);
        recorded?;
        gw2.wrote();
        outcome
    });
    task.await
        .map_err(|e| Error::Internal(format!("the run's task failed: {e}")))?
}

async fn run_cell(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::RunCell = args.parse("notebook.run_cell")?;
    let limits = Limits {
        time: time_limit(gw, p.timeout_secs)?,
        ..Limits::default()
    };
    let (nb_id, cell_id) = (p.notebook_id.trim().to_string(), p.cell_id.trim().to_string());
    let id = nb_id.clone();
    let nb = gw.blocking(move |s| s.notebook(&id)).await?;
    let cell = nb.cell(&cell_id).cloned().ok_or_else(|| {
        Error::invalid_with(
            "cellId",
            format!("notebook {nb_id} has no cell with id {cell_id:?} (notebook get lists its cells)"),
            json!({ "notebookId": nb_id, "cellId": cell_id }),
        )
    })?;
    if cell.kind != CellKind::Code {
        let hint = if cell.kind == CellKind::PackageJson {
            " (install_deps installs what the package.json cell lists)"
        } else {
            ""
        };
        return Err(Error::InvalidOperation {
            message: format!(
                "cell {cell_id} is a {} cell: only code cells run{hint}",
                cell.kind.as_str()
            ),
            details: Some(json!({ "notebookId": nb_id, "cellId": cell_id, "type": cell.kind.as_str() })),
        });
    }
    if nb.allow_child_processes {
        child_processes_allowed(
            gw,
            &format!("notebook {nb_id} was created with allowChildProcesses: true; nothing was run"),
        )?;
    }
    let node = Node::find().await?;
    let started = start_run(gw, &nb_id, &cell_id, RunKind::Run).await?;
    let nb = started.0.clone();
    let database = gw.store.path().to_path_buf();
    let (node2, nb2, before) = (node.clone(), nb.clone(), cell.clone());
    let nb2_children = nb.allow_child_processes;
    let work = async move {
        let cell = nb2
            .cell(&cell.id)
            .cloned()
            .ok_or_else(|| Error::Internal("the cell run is gone".into()))?;
        let dir = prepared(database, nb2).await?;
        runner::run_cell(&node2, &dir, &cell, limits, nb2_children).await
    };
    let outcome = recorded_run(gw, started, before, None, work).await?;
    answers::to_value(&RunAnswer::of(
        &nb_id,
        &cell_id,
        &outcome,
        node.version_text(),
        limits.time.as_secs(),
    ))
}

/// The notebook's directory with its files written, off the runtime.
async fn prepared(database: PathBuf, nb: Notebook) -> Result<PathBuf> {
    tokio::task::spawn_blocking(move || runner::prepare(&database, &nb))
        .await
        .map_err(|e| Error::Internal(format!("preparing the notebook's directory: {e}")))?
}

async fn install_deps(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::InstallDeps = args.parse("notebook.install_deps")?;
    let limits = Limits {
        time: time_limit(gw, p.timeout_secs)?,
        ..Limits::default()
    };
    let specs = p
        .packages
        .unwrap_or_default()
        .iter()
        .map(|s| parse_package_spec(s))
        .collect::<Result<Vec<_>>>()?;
    let nb_id = p.notebook_id.trim().to_string();
    let id = nb_id.clone();
    let nb = gw.blocking(move |s| s.notebook(&id)).await?;
    let Some(package) = nb.package_json().cloned() else {
        return Err(Error::InvalidOperation {
            message: format!("notebook {nb_id} has no package.json cell, which install_deps installs from"),
            details: Some(json!({ "notebookId": nb_id })),
        });
    };
    // A package.json kept from before its dependencies were checked is
    // refused here, before anything runs.
    check_package_json(&package.content)?;
    let source = if specs.is_empty() {
        None
    } else {
        Some(with_dependencies(&package.content, &specs)?)
    };
    let node = Node::find().await?;
    node.npm()?;
    let started = start_run(gw, &nb_id, &package.id, RunKind::Install).await?;
    let database = gw.store.path().to_path_buf();
    let mut staged = started.0.clone();
    if let (Some(src), Some(cell)) = (&source, staged.cells.iter_mut().find(|c| c.id == package.id)) {
        cell.content = src.clone();
    }
    let (node2, old) = (node.clone(), package.content.clone());
    let installed = source.clone().unwrap_or_else(|| old.clone());
    let work = async move {
        let dir = prepared(database, staged).await?;
        let outcome = install::npm_install(&node2, &dir, &installed, limits).await;
        if !outcome
            .as_ref()
            .is_ok_and(|o| o.status == crate::notebook::CellStatus::Completed)
        {
            // The cell keeps its source: so does its file.
            let file = dir.join("package.json");
            if let Err(e) = std::fs::write(&file, old) {
                tracing::warn!("could not put back {} after a failed install: {e}", file.display());
            }
        }
        outcome
    };
    let outcome = recorded_run(gw, started, package.clone(), source.clone(), work).await?;
    let completed = outcome.status == crate::notebook::CellStatus::Completed;
    let mut answer = RunAnswer::of(
        &nb_id,
        &package.id,
        &outcome,
        node.version_text(),
        limits.time.as_secs(),
    );
    let now = if completed { source.as_deref() } else { None };
    answer.package_json = Some(now.unwrap_or(&package.content));
    answers::to_value(&answer)
}

/// An absolute path from the agent: a relative one would be read from the
/// server's working directory, which the client chose and the agent cannot see.
/// Over HTTP, only inside the files root ([`super::paths`]).
fn absolute(gw: &Gateway, field: &str, given: &str) -> Result<PathBuf> {
    let path = crate::config::expand_agent_path(PathBuf::from(given.trim()))?;
    if given.trim().is_empty() || !path.is_absolute() {
        return Err(Error::invalid(
            field,
            format!(
                "{field} must be an absolute path (or start with ~/), not {:?}",
                super::clip(given)
            ),
        ));
    }
    super::paths::agent_path(gw, field, path)
}

async fn export(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ExportNotebook = args.parse("notebook.export")?;
    let id = p.notebook_id.trim().to_string();
    let destination = p
        .destination
        .as_deref()
        .map(|d| absolute(gw, "destination", d))
        .transpose()?;
    let i = id.clone();
    let nb = gw.blocking(move |s| s.notebook(&i)).await?;
    let text = srcbook::encode(&nb);
    let Some(destination) = destination else {
        return answers::to_value(&NotebookExportAnswer {
            notebook_id: &id,
            format: "srcmd",
            content: Some(&text),
            path: None,
            bytes: text.len(),
        });
    };
    // A path ending in .src.md is the file (the TypeScript Thoughtbox's
    // `path`), unless it is a directory; else a directory to write
    // <slug of the title>.src.md into.
    let (dir, file) = match destination.parent() {
        Some(parent) if destination.to_string_lossy().ends_with(".src.md") && !destination.is_dir() => {
            (parent.to_path_buf(), destination.clone())
        }
        _ => {
            let name = format!("{}.src.md", crate::knowledge::slug_or_fallback("notebook", nb.title()));
            (destination.clone(), destination.join(name))
        }
    };
    let (f, t) = (file.clone(), text.clone());
    gw.blocking_to_end(move |store| {
        if dir.exists() && !dir.is_dir() {
            return Err(Error::invalid(
                "destination",
                format!(
                    "{} is a file, not a directory: give a directory to write the notebook into, or a path \
                     ending in .src.md; nothing was written",
                    dir.display()
                ),
            ));
        }
        // Folders it makes are private, as an export's are.
        crate::tree::writer::create_private_dirs(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        // Never over the ledger, another database or one of their files.
        store.check_export_destination(&f).map_err(|e| match e {
            Error::InvalidPayload { message, details, .. } => Error::InvalidPayload {
                field: "destination".into(),
                message,
                details,
            },
            e => e,
        })?;
        crate::tree::writer::remove_leftovers_of(&f);
        crate::tree::writer::write_atomic(&f, t.as_bytes())
    })
    .await?;
    answers::to_value(&NotebookExportAnswer {
        notebook_id: &id,
        format: "srcmd",
        content: None,
        path: Some(file.display().to_string()),
        bytes: text.len(),
    })
}

async fn import(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ImportNotebook = args.parse("notebook.import")?;
    let text = match (p.content, p.path) {
        (Some(_), Some(_)) => {
            return Err(Error::InvalidOperation {
                message: "give content or path, not both (nothing was imported)".into(),
                details: Some(json!({ "field": "path" })),
            });
        }
        (None, None) => {
            return Err(Error::invalid(
                "content",
                "import needs content (the .src.md text) or path",
            ));
        }
        (Some(text), None) => text,
        (None, Some(path)) => {
            let path = absolute(gw, "path", &path)?;
            tokio::task::spawn_blocking(move || srcbook::read_file(&path))
                .await
                .map_err(|e| Error::Internal(format!("reading the file: {e}")))??
        }
    };
    let (name, decoded) = srcbook::decode(&text)?.checked(p.name)?;
    let session_id = linked_session(gw, p.session_id).await?;
    let new = NewNotebook {
        name,
        language: decoded.language,
        tsconfig: decoded.tsconfig,
        session_id,
        allow_child_processes: false,
        cells: decoded.cells,
    };
    let nb = gw.write(move |s| s.create_notebook(new)).await?;
    gw.wrote();
    answer_notebook(gw, &nb, None)
}
