//! `export`, `import` and `validate`.

use std::io::Write;
use std::process::ExitCode;

use serde_json::json;

use super::progress::Progress;
use super::{ExportArgs, ImportArgs, ValidateArgs, counted, out, out_json};
use crate::cli::DbArgs;
use crate::error::{Error, Result};
use crate::export::{self, Format, Layout};
use crate::tree::check_session_id;
use crate::tree::importer::{SessionResult, Status, import_loaded, import_tree};
use crate::tree::integrity::SessionReport;
use crate::tree::reader::{is_export_file, load_export_file, load_session, session_dirs_to_read};
use crate::tree::writer::{ExportOptions, export_tree, lock_for_reading, write_atomic_with};

pub fn export(db: &DbArgs, args: ExportArgs) -> Result<ExitCode> {
    let sessions: Vec<String> = args.sessions.into_iter().map(String::from).collect();
    if let Some(format) = args.format {
        return export_file(db, sessions, format.into(), args.out);
    }
    let Some(dest) = args.out else {
        return Err(Error::invalid(
            "out",
            "export needs --out DIR for the directory tree (or --format with one --session for a single file)",
        ));
    };
    let store = db.open_existing()?;
    // A shortened id (ids are often shown cut) names the sessions it may
    // mean, as `export --format` and `sessions show` do (rather than refuse
    // it as no lower-case UUID).
    for id in &sessions {
        if !crate::tree::is_session_id(id) {
            let meant = super::name_sessions_meant(&store, Error::session_not_found(id));
            if !matches!(meant, Error::SessionNotFound { .. }) {
                return Err(meant);
            }
        }
    }
    let opts = ExportOptions {
        sessions,
        project: args.project.as_deref().map(crate::tree::project_folder).transpose()?,
        granularity: args.partition.map(Into::into),
        lock_wait: None,
    };
    let mut progress = Progress::new("exporting");
    let summary = export_tree(&store, &dest, &opts, &mut |done, total| {
        progress.step(done, total, || format!("exported {done}/{total}"))
    })?;
    progress.finish();
    if args.json {
        out_json(&summary)?;
    } else {
        let partitions = match summary.granularity.as_str() {
            "none" => "no partitions".to_string(),
            g => format!("{g} partitions"),
        };
        out(&format!(
            "exported {} ({}) to {} with {partitions}: {} written, {} unchanged, {} removed\n",
            counted(summary.sessions.len() as u64, "session", "sessions"),
            counted(summary.thoughts, "thought", "thoughts"),
            dest.display(),
            counted(summary.files_written as u64, "file", "files"),
            summary.files_unchanged,
            summary.files_removed
        ))?;
        if !summary.sessions_gone.is_empty() {
            out(&format!(
                "{} sessions were deleted while the export ran and are not in it: {}\n",
                summary.sessions_gone.len(),
                summary.sessions_gone.join(", ")
            ))?;
        }
    }
    if summary.sessions_skipped.is_empty() {
        return Ok(ExitCode::SUCCESS);
    }
    // The rest is written; the exit code says the tree is not the whole ledger.
    for skipped in &summary.sessions_skipped {
        eprintln!(
            "thoughtbox: session {} was left out: {}",
            skipped.session_id, skipped.reason
        );
    }
    eprintln!(
        "thoughtbox: {} sessions could not be exported (rows edited by hand?); the others were",
        summary.sessions_skipped.len()
    );
    Ok(ExitCode::FAILURE)
}

/// One session as SessionExport JSON, Markdown or cipher, to a file or stdout.
fn export_file(
    db: &DbArgs,
    sessions: Vec<String>,
    format: Format,
    dest: Option<std::path::PathBuf>,
) -> Result<ExitCode> {
    let [id] = &sessions[..] else {
        return Err(Error::invalid(
            "session",
            "export --format writes one session: name it with exactly one --session ID",
        ));
    };
    if let Some(d) = &dest
        && d.is_dir()
    {
        return Err(Error::invalid(
            "out",
            format!("{} is a directory; with --format, --out names a file", d.display()),
        ));
    }
    let store = db.open_existing()?;
    if let Some(path) = &dest {
        store.check_export_destination(path)?;
    }
    // Streamed from one read transaction: a session of any size is written
    // without being held in memory.
    store
        .with_session(id, |session| {
            // A file is written aside and renamed: an error leaves nothing.
            // Stdout keeps what it got: the checks come first there.
            let render = |w: &mut dyn Write, to_stdout: bool| -> Result<()> {
                match to_stdout {
                    true => export::write_to_stream(w, format, session, true, Layout::Pretty)?,
                    false => export::write(w, format, session, true, Layout::Pretty)?,
                }
                if format == Format::Json {
                    w.write_all(b"\n").map_err(|e| Error::io("writing the export", e))?;
                }
                Ok(())
            };
            match &dest {
                Some(path) => {
                    crate::tree::writer::remove_leftovers_of(path);
                    write_atomic_with(path, |w| render(w, false))?;
                    eprintln!("wrote session {id} as {} to {}", format.as_str(), path.display());
                }
                None => {
                    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
                    render(&mut stdout, true)?;
                    stdout.flush().map_err(|e| Error::io("writing to stdout", e))?;
                }
            }
            Ok(())
        })
        .map_err(|e| super::name_sessions_meant(&store, e))?;
    Ok(ExitCode::SUCCESS)
}

pub fn import(db: &DbArgs, args: ImportArgs) -> Result<ExitCode> {
    // Look at the tree, or read the file, before opening (and maybe
    // creating) the database.
    let file = if is_export_file(&args.dir) {
        Some(load_export_file(&args.dir)?)
    } else {
        session_dirs_to_read(&args.dir)?;
        // A bad thread registry refuses the import: say so before a
        // database is made. The import reads it again under the tree's lock.
        crate::tree::threads::read_registry_file(&args.dir).map_err(crate::tree::importer::nothing_imported)?;
        None
    };
    let from_file = file.is_some();
    let store = db.open()?;
    let mut progress = Progress::new("importing");
    let mut step = |done: usize, total: usize, r: &SessionResult| {
        progress.step(done, total, || {
            let what = match r.status {
                Status::Imported => format!("imported {}", counted(r.thoughts, "thought", "thoughts")),
                Status::AlreadyPresent => "already in the ledger".to_string(),
                Status::Invalid => format!(
                    "INVALID: {}",
                    r.report.result.errors.first().map_or("missing files", String::as_str)
                ),
            };
            format!("[{done}/{total}] {} {what}", r.report.session_id)
        })
    };
    let summary = match file {
        Some(sessions) => import_loaded(&store, &args.dir, sessions, &mut step)?,
        None => import_tree(&store, &args.dir, &mut step)?,
    };
    progress.finish();
    if args.json {
        out_json(&summary)?;
    } else {
        let found = summary.sessions_found as u64;
        let mut text = format!(
            "{} in {}: {} imported ({}), {} already present, {} invalid and skipped\n",
            if from_file {
                counted(found, "session", "sessions")
            } else {
                counted(found, "session directory", "session directories")
            },
            summary.source.display(),
            summary.imported,
            counted(summary.thoughts_imported, "thought", "thoughts"),
            summary.already_present,
            summary.invalid
        );
        for w in &summary.warnings {
            text.push_str(&format!("warning: {w}\n"));
        }
        if let Some(t) = &summary.threads {
            let d = &t.done;
            text.push_str(&format!(
                "thread registry: {} created, {} updated, {} operations, {} references and {} dependencies added\n",
                d.threads_created, d.threads_updated, d.operations_added, d.references_added, d.dependencies_added
            ));
            if d.threads_kept > 0 {
                text.push_str(&format!(
                    "thread registry: {} kept as the ledger has them (changed here after the export was written)\n",
                    counted(d.threads_kept, "thread", "threads")
                ));
            }
            if !t.threads_left_out.is_empty() {
                text.push_str(&format!(
                    "thread registry: {} left out, their sessions not being in the ledger: {}\n",
                    counted(t.threads_left_out.len() as u64, "thread", "threads"),
                    t.threads_left_out.join(", ")
                ));
            }
        }
        if let Some(e) = &summary.threads_error {
            text.push_str(&format!("error: {e}\n"));
        }
        for r in summary
            .sessions
            .iter()
            .filter(|r| r.status == Status::Invalid || !r.report.warnings.is_empty())
        {
            text.push_str(&r.report.describe());
        }
        out(&text)?;
    }
    Ok(if summary.invalid > 0 || summary.threads_error.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

pub fn validate(args: ValidateArgs) -> Result<ExitCode> {
    if let Some(id) = &args.session {
        check_session_id(id)?;
    }
    let wanted = |report: &SessionReport| args.session.as_ref().is_none_or(|id| *id == report.session_id);
    let mut reports = Vec::new();
    // What `import` would refuse the whole tree for (one session checked:
    // not asked about).
    let mut threads_error = None;
    if is_export_file(&args.dir) {
        let sessions = load_export_file(&args.dir)?;
        reports.extend(sessions.into_iter().map(|(report, _)| report).filter(wanted));
    } else {
        // Not while an export is writing into the tree.
        let _lock = lock_for_reading(&args.dir);
        let dirs = session_dirs_to_read(&args.dir)?;
        if args.session.is_none() {
            threads_error = crate::tree::threads::read_registry_file(&args.dir)
                .err()
                .map(|e| e.to_string());
        }
        for dir in dirs {
            let (report, _) = load_session(&dir);
            if wanted(&report) {
                reports.push(report);
            }
        }
    }
    if let Some(id) = &args.session
        && reports.is_empty()
    {
        return Err(Error::session_not_found(format!(
            "{id} (no such session in {})",
            args.dir.display()
        )));
    }
    let invalid = reports.iter().filter(|r| !r.result.valid).count();
    if args.json {
        let mut answer = json!({
            "valid": invalid == 0 && threads_error.is_none(),
            "sessionsChecked": reports.len(),
            "invalid": invalid,
            "sessions": reports,
        });
        if let Some(e) = &threads_error {
            answer["threadsError"] = json!(e);
        }
        out_json(&answer)?;
    } else {
        let mut text: String = reports.iter().map(|r| r.describe()).collect();
        if let Some(e) = &threads_error {
            text.push_str(&format!("error: {e}\n"));
        }
        text.push_str(&format!(
            "{} checked in {}: {} valid, {invalid} invalid\n",
            counted(reports.len() as u64, "session", "sessions"),
            args.dir.display(),
            reports.len() - invalid
        ));
        out(&text)?;
    }
    Ok(if invalid > 0 || threads_error.is_some() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
