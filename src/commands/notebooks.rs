//! `thoughtbox notebooks list | show | export | import`: the ledger's
//! notebooks from the command line, on the same database as the server.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;

use super::{clip, out, out_json, table};
use crate::cli::{DbArgs, user_path};
use crate::domain::SessionId;
use crate::error::Result;
use crate::notebook::{CellKind, srcbook};
use crate::store::NewNotebook;

#[derive(Debug, Subcommand)]
pub enum NotebooksCommand {
    /// List notebooks, most recently changed first
    List {
        /// Only the notebooks of this session
        #[arg(long, value_name = "ID")]
        session: Option<SessionId>,
        /// Notebooks per page (1-1000)
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        /// Notebooks to skip
        #[arg(long, default_value_t = 0)]
        offset: u32,
        /// Print the page as JSON ({ notebooks, count, total })
        #[arg(long)]
        json: bool,
    },
    /// Show a notebook's cells with their status and output
    Show {
        /// Notebook id
        id: String,
        /// Print the notebook as JSON (its cells, with their status and output)
        #[arg(long)]
        json: bool,
    },
    /// Write a notebook as Srcbook .src.md text (to stdout, or to --out)
    Export {
        /// Notebook id
        id: String,
        /// The file to write
        #[arg(long, value_parser = user_path())]
        out: Option<PathBuf>,
    },
    /// Create a notebook from a .src.md file; prints its id
    Import {
        /// The .src.md file
        #[arg(value_parser = user_path())]
        path: PathBuf,
        /// The session it belongs to
        #[arg(long, value_name = "ID")]
        session: Option<SessionId>,
        /// Its name (default: its first title)
        #[arg(long)]
        name: Option<String>,
    },
}

pub fn notebooks(db: &DbArgs, command: NotebooksCommand) -> Result<ExitCode> {
    match command {
        NotebooksCommand::List {
            session,
            limit,
            offset,
            json,
        } => {
            let store = db.open_existing()?;
            let (notebooks, total) = store.list_notebooks(session.as_deref(), limit, offset)?;
            if json {
                return out_json(&json!({ "notebooks": notebooks, "count": notebooks.len(), "total": total }))
                    .map(|()| ExitCode::SUCCESS);
            }
            let rows: Vec<Vec<String>> = notebooks
                .iter()
                .map(|n| {
                    vec![
                        n.id.clone(),
                        clip(&n.title, 40),
                        n.language.to_string(),
                        n.cell_count.to_string(),
                        n.session_id.clone().unwrap_or_else(|| "-".into()),
                    ]
                })
                .collect();
            let mut text = table(&["ID", "TITLE", "LANGUAGE", "CELLS", "SESSION"], &rows);
            text.push_str(&format!("{} of {total} notebook(s)\n", notebooks.len()));
            out(&text)?;
        }
        NotebooksCommand::Show { id, json } => {
            let store = db.open_existing()?;
            let nb = store.notebook(id.trim())?;
            if json {
                return out_json(&nb).map(|()| ExitCode::SUCCESS);
            }
            let mut text = format!(
                "{} ({}, {} cells{})\n",
                nb.title(),
                nb.language.as_str(),
                nb.cells.len(),
                nb.session_id
                    .as_deref()
                    .map(|s| format!(", session {s}"))
                    .unwrap_or_default()
            );
            for c in &nb.cells {
                let what = match c.kind {
                    CellKind::Title | CellKind::Markdown => c.kind.as_str().to_string(),
                    _ => format!(
                        "{} {} [{}]",
                        c.kind.as_str(),
                        c.filename.as_deref().unwrap_or_default(),
                        c.status.map_or("idle", |s| s.as_str())
                    ),
                };
                text.push_str(&format!("\n--- {} {what}\n{}\n", c.id, c.content.trim_end()));
                if let Some(o) = c.output.as_deref().filter(|o| !o.is_empty()) {
                    text.push_str(&format!("--- output\n{}\n", o.trim_end()));
                }
                if let Some(e) = c.error.as_deref() {
                    text.push_str(&format!("--- error\n{}\n", e.trim_end()));
                }
            }
            out(&text)?;
        }
        NotebooksCommand::Export { id, out: file } => {
            let store = db.open_existing()?;
            let text = srcbook::encode(&store.notebook(id.trim())?);
            match file {
                Some(path) => {
                    store.check_export_destination(&path)?;
                    crate::tree::writer::write_atomic(&path, text.as_bytes())?;
                    println!("{}", path.display());
                }
                None => out(&text)?,
            }
        }
        NotebooksCommand::Import { path, session, name } => {
            let text = srcbook::read_file(&path)?;
            let (name, decoded) = srcbook::decode(&text)?.checked(name)?;
            let store = db.open_present(crate::store::Access::Existing)?;
            let nb = store.create_notebook(NewNotebook {
                name,
                language: decoded.language,
                tsconfig: decoded.tsconfig,
                session_id: session.map(SessionId::into_string),
                allow_child_processes: false,
                cells: decoded.cells,
            })?;
            println!("{}", nb.id);
        }
    }
    Ok(ExitCode::SUCCESS)
}
