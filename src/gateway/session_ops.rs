//! The `session` operation and its sub-operations.

use std::collections::BTreeMap;

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::answers;
use super::ops::{
    open_session, read_thought_json, refuse_stray_session_id, refuse_unknown_sessions, session_id_given,
    session_or_active,
};
use super::preview::Preview;
use super::{AnswerBuffer, Args, Gateway, params};
use crate::domain::anchors;
use crate::error::{Error, Result};
use crate::events::EventType;
use crate::export::{self, Format, Layout};
use crate::tree::{self, writer::ExportOptions};

/// How long an agent's export to a destination waits for another export
/// into the same directory (a nightly `thoughtbox export`) to finish.
const EXPORT_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

pub async fn session(gw: &Gateway, args: Args, ctx: Option<&RequestContext<RoleServer>>) -> Result<Value> {
    let (name, args) = args.sub_operation("session")?;
    let name = super::refused::required_sub_operation("session", name)?;
    match name.as_str() {
        "list" => super::ops::list_sessions(gw, args).await,
        "get" => get(gw, args).await,
        "search" => search(gw, args).await,
        "resume" => open_session(gw, &args, "session resume").await,
        "export" => export(gw, args).await,
        "delete" => delete(gw, args).await,
        "analyze" => super::analysis_ops::analyze(gw, args).await,
        "extract_learnings" => super::analysis_ops::extract_learnings(gw, args).await,
        "discovery" => super::init_ops::discovery(gw, args, ctx).await,
        other => Err(super::refused::unknown_sub_operation("session", other)),
    }
}

async fn get(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::SessionGet = args.parse("session.get")?;
    let id = session_or_active(gw, p.session_id, &args)?;
    // Every thought's text is most of the answer (~140 KB for 200 thoughts
    // of 500 characters, past some clients' limit for one tool answer):
    // `includeThoughts: false` answers the session alone.
    let include_thoughts = p.include_thoughts.unwrap_or(true);
    let full = p.full.unwrap_or(false);
    refuse_stray_session_id(&args, Some(&id), false)?;
    if !include_thoughts {
        let session = gw.blocking(move |s| s.session(&id)).await?;
        let notebooks = session_notebooks(gw, &session.id).await?;
        return answers::to_value(&answers::SessionGetAnswer {
            session_id: session.id.clone(),
            session,
            thoughts: None,
            notebooks,
        });
    }
    // Read one thought at a time, as an export is, and given up as soon as
    // the text alone could no longer fit in one answer (a session of a
    // hundred thousand thoughts is refused without being loaded).
    let answer = gw
        .heavy(move |s| {
            s.with_session(&id, |snapshot| {
                let mut main = Vec::new();
                let mut branches: BTreeMap<String, Vec<Value>> = BTreeMap::new();
                let mut budget = super::TextBudget::default();
                let mut preview = Preview::new(full);
                let revised_by = snapshot.revised_by()?;
                snapshot.each_thought(&mut |t| {
                    let mut v = read_thought_json(&t, &revised_by);
                    if !preview.one(&mut v) {
                        return Ok(());
                    }
                    budget.add_answered(&v)?;
                    match &t.data.branch_id {
                        None => main.push(v),
                        Some(b) => branches.entry(b.clone()).or_default().push(v),
                    }
                    Ok(())
                })?;
                Ok(answers::SessionGetAnswer {
                    session_id: snapshot.session.id.clone(),
                    session: snapshot.session.clone(),
                    thoughts: Some(answers::SessionThoughts {
                        thoughts: main,
                        branches,
                        truncated: preview.truncated(),
                    }),
                    notebooks: Vec::new(),
                })
            })
        })
        .await?;
    let mut answer = answer;
    answer.notebooks = session_notebooks(gw, &answer.session_id).await?;
    answers::to_value(&answer)
}

/// The notebooks created in session `id` (at most 100, newest changed first).
async fn session_notebooks(gw: &Gateway, id: &str) -> Result<Vec<crate::notebook::NotebookSummary>> {
    let id = id.to_string();
    Ok(gw.blocking(move |s| s.list_notebooks(Some(&id), 100, 0)).await?.0)
}

/// An empty `session search` for one word: what it searched.
const SEARCHED_NOTE: &str = "no session matched: session search matches the text of thoughts (every branch \
     included) and sessions' titles, descriptions and tags, not their domain";

async fn search(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::SessionSearch = args.parse("session.search")?;
    let query = params::search_text("query", Some(p.query))?
        .ok_or_else(|| Error::invalid("query", "query must not be blank"))?;
    let limit = p.limit.get("limit")?;
    // At most this many matches per session, best first (`moreMatches`
    // says how many were left out).
    let per_session = p.matches_per_session.get("matchesPerSession")?;
    let include = p.include.unwrap_or_default();
    let patterns = include.contains(&params::SessionSearchInclude::Patterns);
    let notes = include.contains(&params::SessionSearchInclude::Notes);
    let notebooks = include.contains(&params::SessionSearchInclude::Notebooks);
    let q = query.clone();
    // Thoughts still waiting for the full-text index are indexed first, by
    // the writer thread like every other write of this server.
    // Not past a shutdown either: a backlog of 250,000 long thoughts took
    // 7.5 s to index, and held up the exit that long.
    let store = gw.store.clone();
    gw.writer
        .index_unless_locked_or(move || super::request_cancelled() || store.reads_stopped())
        .await?;
    let ((hits, more), pattern_hits, note_hits, notebook_hits) = gw
        .heavy(move |s| {
            let hits = s.search_indexed(&q, limit, per_session)?;
            let p = if patterns {
                Some(s.search_patterns(&q, limit)?)
            } else {
                None
            };
            let n = if notes { Some(s.search_notes(&q, limit)?) } else { None };
            let b = if notebooks {
                Some(s.search_notebooks(&q, limit)?)
            } else {
                None
            };
            Ok((hits, p, n, b))
        })
        .await?;
    // The best `limit` sessions, without paging: counting every matching
    // session would cost a pass over every match, which the ranking avoids
    // (see the README's Search). Say when the answer stopped short, or may
    // have (more matches than the ranking looks at). Matches a session
    // leaves out are counted on it (`moreMatches`).
    let note = if crate::store::fts_query(&query).is_none() {
        Some(super::ops::UNSEARCHABLE_NOTE)
    } else if hits.is_empty() && crate::store::query_phrases(&query).len() > 1 {
        // Says why `kafka rebalances` finds nothing when one thought says
        // kafka and another rebalances. About sessions only: patterns and
        // notes beside it may have matched.
        Some(
            "no session matched every word: a match needs all the words in one thought, or in one session's \
             title, description and tags together; search with fewer words to find them apart",
        )
    } else if hits.is_empty() {
        // What was searched, as list_sessions says when it finds nothing: a
        // session's domain is not, though agents search for one.
        Some(SEARCHED_NOTE)
    } else {
        None
    };
    answers::to_value(&answers::SessionSearchAnswer {
        query,
        count: hits.len(),
        limit,
        limit_reached: more,
        sessions: hits,
        note,
        patterns: pattern_hits.map(answers::PatternHits::from),
        notes: note_hits.map(answers::NoteHits::from),
        notebooks: notebook_hits.map(|(notebooks, more_notebooks)| answers::notebook::NotebookHits {
            notebooks,
            more_notebooks,
        }),
    })
}

async fn export(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::SessionExport = args.parse("session.export")?;
    let id = session_or_active(gw, p.session_id, &args)?;
    let format = p.format.map(Format::from);
    let destination = p.destination;
    let resolve_anchors = p.resolve_anchors;
    refuse_stray_session_id(&args, Some(&id), false)?;
    // Anchors are resolved into a JSON answer only, not into files.
    if resolve_anchors.is_some() && (destination.is_some() || format.is_some_and(|f| f != Format::Json)) {
        args.mark_unread("resolveAnchors");
    }
    if let Some(dest) = destination {
        // The directory layout is made of JSON files; another format with it is a contradiction.
        if format.is_some_and(|f| f != Format::Json) {
            return Err(Error::invalid(
                "format",
                "destination writes the directory layout (JSON files); drop format, or drop destination to get markdown or cipher text",
            ));
        }
        if dest.trim().is_empty() {
            return Err(Error::invalid("destination", "destination must name a directory"));
        }
        // A relative path would be taken from the server's working
        // directory, which the MCP client chose and the agent cannot see.
        let dest = crate::config::expand_agent_path(std::path::PathBuf::from(dest.trim()))?;
        if !dest.is_absolute() {
            let cwd = std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            return Err(Error::invalid_with(
                "destination",
                format!(
                    "destination must be an absolute path (or start with ~/): {} is relative, and would be read from \
                     the server's working directory ({cwd}), which its MCP client chose",
                    super::clip(&dest.display().to_string())
                ),
                json!({ "workingDirectory": cwd }),
            ));
        }
        let dest = super::paths::agent_path(gw, "destination", dest)?;
        let opts = ExportOptions {
            sessions: vec![id.clone()],
            // Behind a long export into the same directory: an error, not a hang.
            lock_wait: Some(EXPORT_LOCK_WAIT),
            ..Default::default()
        };
        // Its notebooks are read in the same uncancelled task: a client's
        // cancel must not turn a finished export into an error.
        let sid = id.clone();
        let (summary, notebooks) = gw
            .blocking_to_end(move |s| {
                let summary = tree::writer::export_tree(s, &dest, &opts, &mut |_, _| {})?;
                Ok((summary, s.list_notebooks(Some(&sid), 100, 0)?.0))
            })
            .await?;
        let Some(session) = summary.sessions.first() else {
            // Deleted (by another process) while the export waited.
            return Err(Error::session_not_found(id));
        };
        gw.emit(EventType::SessionExported, Some(&session.session_id), || {
            json!({ "sessionId": session.session_id, "format": "json", "thoughtCount": session.thoughts,
                    "destination": summary.destination })
        });
        return answers::to_value(&answers::ExportedToAnswer {
            session_id: session.session_id.clone(),
            format: "json",
            destination: summary.destination.clone(),
            path: session.path.clone(),
            thoughts: session.thoughts,
            files_written: summary.files_written,
            files_unchanged: summary.files_unchanged,
            notebooks,
        });
    }
    let format = format.unwrap_or_default();
    // Markdown's and cipher's header lines. A JSON export always carries the
    // session (an import needs it): there the argument is left unread, so
    // the answer names it in ignoredArguments.
    let include_metadata = match format {
        Format::Json => {
            if p.include_metadata.is_some() {
                args.mark_unread("includeMetadata");
            }
            true
        }
        Format::Markdown | Format::Cipher => p.include_metadata.unwrap_or(true),
    };
    // Rendered as it is read from the database, and given up as soon as it
    // could no longer fit in the answer.
    let (session, rendered) = gw
        .heavy(move |s| {
            s.with_session(&id, |snapshot| {
                let mut buffer = AnswerBuffer::default();
                let written = export::write(&mut buffer, format, snapshot, include_metadata, Layout::Compact);
                if buffer.overflowed {
                    return Err(super::answer_too_long());
                }
                written?;
                Ok((snapshot.session.clone(), buffer.bytes))
            })
        })
        .await?;
    let content = match format {
        Format::Json => serde_json::from_slice(&rendered)
            .map_err(|e| Error::Internal(format!("reading back the rendered export: {e}")))?,
        // Rendered from text: always UTF-8.
        Format::Markdown | Format::Cipher => Value::String(
            String::from_utf8(rendered).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()),
        ),
    };
    let content = match content {
        Value::Object(export) if format == Format::Json && resolve_anchors != Some(false) => {
            // Matching is CPU work of its own: off the protocol's thread.
            let except = session.id.clone();
            let (mut export, refs) = gw
                .heavy(move |s| {
                    let refs = cross_references(s, &export, &except)?;
                    Ok((export, refs))
                })
                .await?;
            if let Some(refs) = refs {
                export.insert("crossReferences".into(), refs);
            }
            Value::Object(export)
        }
        content => content,
    };
    gw.emit(
        EventType::SessionExported,
        Some(&session.id),
        || json!({ "sessionId": session.id, "format": format.as_str(), "thoughtCount": session.thought_count }),
    );
    let notebooks = session_notebooks(gw, &session.id).await?;
    answers::to_value(&answers::ExportAnswer {
        session_id: session.id,
        format: format.as_str(),
        content,
        notebooks,
    })
}

/// The `crossReferences` of a JSON export of session `except`: the
/// anchors in its thoughts' text and the other sessions they may mean;
/// `None` when it has no anchor (the sessions are not read then).
fn cross_references(store: &crate::store::Store, export: &Map<String, Value>, except: &str) -> Result<Option<Value>> {
    /// What anchors are read from in an exported node.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Said<'a> {
        thought: &'a str,
        thought_number: u64,
        branch_id: Option<String>,
    }
    let nodes = export
        .get("nodes")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let said = nodes
        .iter()
        .filter_map(|node| node.get("data").and_then(|d| Said::deserialize(d).ok()));
    let (found, omitted) = anchors::find_in(said.map(|s| (s.thought_number, s.branch_id, s.thought)));
    if found.is_empty() && omitted == 0 {
        return Ok(None);
    }
    let sessions = store.anchor_sessions()?;
    let refs = anchors::cross_references(found, omitted, &mut anchors::Matcher::new(&sessions, except));
    answers::to_value(&refs).map(Some)
}

async fn delete(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::SessionDelete = args.parse("session.delete")?;
    let id = session_id_given(p.session_id)?;
    refuse_stray_session_id(&args, Some(&id), false)?;
    refuse_unknown_sessions(gw, vec![id.clone()]).await?;
    let sid = id.clone();
    let removed = gw.write(move |s| s.delete_session(&sid)).await?;
    gw.wrote();
    gw.session_deleted_here(&id);
    answers::to_value(&answers::DeleteAnswer {
        session_id: id,
        deleted: true,
        thoughts_deleted: removed,
    })
}
