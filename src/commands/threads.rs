//! `thoughtbox threads`: the thread registry (docs/threads.md) from the command
//! line. Changes made here are logged with the operator `user`.

use std::io::Read;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};

use super::{clip, out, out_json, table};
use crate::cli::DbArgs;
use crate::domain::SessionId;
use crate::domain::thread::{Operator, Thread, ThreadStatus, parse_registry, violations_error};
use crate::error::{Error, Result};
use crate::store::{Store, ThreadFilter};

#[derive(Debug, Clone, Subcommand)]
pub enum ThreadsCommand {
    /// List threads, oldest first
    List {
        /// Only threads with this status
        #[arg(long, value_enum)]
        status: Option<ThreadStatusArg>,
        /// Only the children of this thread
        #[arg(long, value_name = "ID")]
        parent: Option<SessionId>,
        /// Only threads with this tag (exact)
        #[arg(long, value_name = "TAG")]
        tag: Option<String>,
        /// Threads per page (1-1000)
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        /// Threads to skip
        #[arg(long, default_value_t = 0)]
        offset: u32,
        /// Print the page as JSON ({ threads, count, total, hasMore })
        #[arg(long)]
        json: bool,
    },
    /// Show one thread with its relations
    Show {
        id: SessionId,
        /// Print { thread, relations } as JSON
        #[arg(long)]
        json: bool,
    },
    /// Show a thread's descendants
    Tree {
        id: SessionId,
        /// Print the descendants as JSON, each with its depth
        #[arg(long)]
        json: bool,
    },
    /// The operations log, newest first (of one thread, or all)
    Log {
        id: Option<SessionId>,
        /// Operations per page (1-1000)
        #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        /// Operations to skip
        #[arg(long, default_value_t = 0)]
        offset: u32,
        /// Print { operations, count, total } as JSON
        #[arg(long)]
        json: bool,
    },
    /// Freeze a thread: it can be read and cited, not changed
    Freeze { id: SessionId },
    /// Archive a thread (final)
    Archive { id: SessionId },
    /// Write the thread registry as JSON (to stdout, or to --out)
    Export {
        #[arg(long, value_name = "FILE", value_parser = crate::cli::user_path())]
        out: Option<PathBuf>,
    },
    /// Check a registry JSON file by every rule of the registry format and
    /// bring it in; nothing is written when a rule fails
    Import {
        /// The file, or - for stdin
        #[arg(value_name = "FILE")]
        file: String,
        /// Print the summary as JSON
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ThreadStatusArg {
    Active,
    Frozen,
    Archived,
}

impl From<ThreadStatusArg> for ThreadStatus {
    fn from(s: ThreadStatusArg) -> ThreadStatus {
        match s {
            ThreadStatusArg::Active => ThreadStatus::Active,
            ThreadStatusArg::Frozen => ThreadStatus::Frozen,
            ThreadStatusArg::Archived => ThreadStatus::Archived,
        }
    }
}

/// Run `thoughtbox threads ...`.
pub fn threads(db: &DbArgs, command: ThreadsCommand) -> Result<ExitCode> {
    match command {
        ThreadsCommand::Import { file, json } => import(db, &file, json),
        ThreadsCommand::Freeze { id } => change(db, &id, ThreadStatus::Frozen),
        ThreadsCommand::Archive { id } => change(db, &id, ThreadStatus::Archived),
        other => {
            let store = db.open_existing()?;
            read(&store, other).map_err(|e| super::name_sessions_meant(&store, e))
        }
    }
}

fn change(db: &DbArgs, id: &str, to: ThreadStatus) -> Result<ExitCode> {
    let store = db.open_present(crate::store::Access::Existing)?;
    let (thread, op) = store
        .set_thread_status(id, to, Operator::User)
        .map_err(|e| super::name_sessions_meant(&store, e))?;
    out(&format!(
        "{} is now {} (operation {})\n",
        thread.id,
        thread.status.as_str(),
        op.id
    ))?;
    Ok(ExitCode::SUCCESS)
}

fn import(db: &DbArgs, file: &str, json: bool) -> Result<ExitCode> {
    let mut text = String::new();
    if file == "-" {
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| Error::io("reading the registry from stdin", e))?;
    } else {
        let path = crate::config::expand_operator_path(PathBuf::from(file))?;
        text = std::fs::read_to_string(&path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    }
    let report = |violations: &[crate::domain::thread::Violation]| {
        for v in violations {
            let at = if v.path.is_empty() { "(root)" } else { v.path.as_str() };
            eprintln!("{at}: {}", v.message);
        }
        violations_error(violations)
    };
    let registry = parse_registry(&text).map_err(|v| report(&v))?;
    let store = db.open_present(crate::store::Access::Existing)?;
    let done = store.import_registry(&registry).inspect_err(|e| {
        if let Some(violations) = e.details().and_then(|d| d.get("violations").cloned())
            && let Ok(list) = serde_json::from_value::<Vec<ViolationText>>(violations)
        {
            for v in list {
                eprintln!("{}: {}", v.path, v.message);
            }
        }
    })?;
    if json {
        out_json(&done)?;
    } else {
        out(&format!(
            "imported: {} thread(s) created, {} updated, {} kept as the ledger changed them later, {} operation(s), \
             {} reference(s), {} dependenc(ies)\n",
            done.threads_created,
            done.threads_updated,
            done.threads_kept,
            done.operations_added,
            done.references_added,
            done.dependencies_added
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// A violation read back from an error's details.
#[derive(serde::Deserialize)]
struct ViolationText {
    path: String,
    message: String,
}

fn rows(threads: &[Thread], depth: Option<&[u32]>) -> String {
    let rows: Vec<Vec<String>> = threads
        .iter()
        .enumerate()
        .map(|(i, t)| {
            // A child under its parent's title, so the indent reads as a tree.
            let indent = match depth.map(|d| d[i] as usize) {
                Some(d) if d > 0 => format!("{}└─ ", "   ".repeat(d - 1)),
                _ => String::new(),
            };
            vec![
                t.id.clone(),
                t.status.as_str().to_string(),
                format!("{indent}{}", clip(&t.title, 48)),
                t.parent_id.clone().unwrap_or_else(|| "-".into()),
            ]
        })
        .collect();
    table(&["ID", "STATUS", "TITLE", "PARENT"], &rows)
}

fn read(store: &Store, command: ThreadsCommand) -> Result<ExitCode> {
    match command {
        ThreadsCommand::List {
            status,
            parent,
            tag,
            limit,
            offset,
            json,
        } => {
            let page = store.list_threads(&ThreadFilter {
                status: status.map(Into::into),
                parent_id: parent.map(String::from),
                tag,
                limit,
                offset,
            })?;
            let has_more = u64::from(offset) + (page.threads.len() as u64) < page.total;
            if json {
                out_json(&serde_json::json!({
                    "threads": page.threads,
                    "count": page.threads.len(),
                    "total": page.total,
                    "hasMore": has_more,
                }))?;
            } else {
                out(&rows(&page.threads, None))?;
                out(&format!("{} of {} thread(s)\n", page.threads.len(), page.total))?;
            }
        }
        ThreadsCommand::Show { id, json } => {
            let (thread, relations) = store.thread(&id)?;
            if json {
                out_json(&serde_json::json!({ "thread": thread, "relations": relations }))?;
            } else {
                let list = |l: &[String]| if l.is_empty() { "-".to_string() } else { l.join(", ") };
                out(&format!(
                    "id:            {}\ntitle:         {}\nobjective:     {}\nstatus:        {}\nparent:        {}\n\
                     created:       {}\ntags:          {}\nstorage path:  {}\nchildren:      {}\nreferences:    {}\n\
                     referenced by: {}\ndepends on:    {}\n",
                    thread.id,
                    clip(&thread.title, 200),
                    clip(&thread.objective, 400),
                    thread.status.as_str(),
                    thread.parent_id.as_deref().unwrap_or("-"),
                    thread.created_at,
                    list(&thread.tags),
                    thread.storage_path,
                    list(&relations.children),
                    list(&relations.references_to),
                    list(&relations.referenced_by),
                    list(&relations.depends_on),
                ))?;
            }
        }
        ThreadsCommand::Tree { id, json } => {
            let crate::store::ThreadTree {
                root,
                descendants: below,
                truncated,
            } = store.thread_tree(&id)?;
            if json {
                let below: Vec<_> = below
                    .iter()
                    .map(|(t, d)| serde_json::json!({ "thread": t, "depth": d }))
                    .collect();
                out_json(&serde_json::json!({ "thread": root, "descendants": below, "truncated": truncated }))?;
            } else {
                let ordered = depth_first(&root.id, below);
                let depths: Vec<u32> = std::iter::once(0).chain(ordered.iter().map(|(_, d)| *d)).collect();
                let threads: Vec<Thread> = std::iter::once(root)
                    .chain(ordered.into_iter().map(|(t, _)| t))
                    .collect();
                out(&rows(&threads, Some(&depths)))?;
                if truncated {
                    out(&format!(
                        "(only the first {} descendants)\n",
                        crate::store::MAX_TREE_THREADS
                    ))?;
                }
            }
        }
        ThreadsCommand::Log {
            id,
            limit,
            offset,
            json,
        } => {
            let page = store.thread_log(id.as_deref(), limit, offset)?;
            if json {
                out_json(&serde_json::json!({
                    "operations": page.operations,
                    "count": page.operations.len(),
                    "total": page.total,
                }))?;
            } else {
                let rows: Vec<Vec<String>> = page
                    .operations
                    .iter()
                    .map(|o| {
                        vec![
                            o.timestamp.clone(),
                            o.command.clone(),
                            o.operator.as_str().to_string(),
                            clip(&o.params.to_string(), 100),
                        ]
                    })
                    .collect();
                out(&table(&["TIME", "COMMAND", "OPERATOR", "PARAMS"], &rows))?;
            }
        }
        ThreadsCommand::Export { out: path } => {
            let registry = store.export_registry()?;
            let mut text = serde_json::to_string_pretty(&registry).map_err(|e| Error::Internal(e.to_string()))?;
            text.push('\n');
            match path {
                None => out(&text)?,
                Some(path) => {
                    // Written as the other exports are: 0600, whole or not at all.
                    store.check_export_destination(&path)?;
                    crate::tree::writer::write_atomic(&path, text.as_bytes())?;
                    eprintln!(
                        "wrote {} thread(s) and {} operation(s) to {}",
                        registry.metadata.thread_count,
                        registry.operations.len(),
                        path.display()
                    );
                }
            }
        }
        ThreadsCommand::Freeze { .. } | ThreadsCommand::Archive { .. } | ThreadsCommand::Import { .. } => {
            return Err(Error::Internal("a change reached the read-only commands".into()));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The descendants in depth-first order (each parent followed by its children).
fn depth_first(root: &str, below: Vec<(Thread, u32)>) -> Vec<(Thread, u32)> {
    let mut out = Vec::with_capacity(below.len());
    let mut rest = below;
    fn walk(parent: &str, rest: &mut Vec<(Thread, u32)>, out: &mut Vec<(Thread, u32)>) {
        let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(rest)
            .into_iter()
            .partition(|(t, _)| t.parent_id.as_deref() == Some(parent));
        *rest = others;
        for (t, d) in mine {
            let id = t.id.clone();
            out.push((t, d));
            walk(&id, rest, out);
        }
    }
    walk(root, &mut rest, &mut out);
    out
}
