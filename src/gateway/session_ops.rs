//! The `session` operation and its sub-operations.

use serde_json::{Value, json};

use super::ops::{open_session, thought_json};
use super::{Args, Gateway};
use crate::error::{Error, Result};
use crate::export::{self, Format};
use crate::tree::{self, writer::ExportOptions};

pub const SUB_OPERATIONS: &[&str] = &["list", "get", "search", "resume", "export", "delete"];

pub async fn session(gw: &Gateway, args: Args) -> Result<Value> {
    let (name, args) = args.sub_operation()?;
    let Some(name) = name else {
        return Err(Error::invalid_with(
            "subOperation",
            "session needs subOperation: one of list, get, search, resume, export, delete",
            json!({ "subOperations": SUB_OPERATIONS }),
        ));
    };
    match name.as_str() {
        "list" => super::ops::list_sessions(gw, args).await,
        "get" => get(gw, args).await,
        "search" => search(gw, args).await,
        "resume" => {
            let id = args.str_req(&["sessionId", "session_id"])?;
            open_session(gw, id.trim().to_string()).await
        }
        "export" => export(gw, args).await,
        "delete" => delete(gw, args).await,
        other => Err(Error::InvalidOperation {
            message: format!("unknown session sub-operation {other:?}"),
            details: Some(json!({ "subOperation": other, "validSubOperations": SUB_OPERATIONS })),
        }),
    }
}

async fn get(gw: &Gateway, args: Args) -> Result<Value> {
    let id = args.str_req(&["sessionId", "session_id"])?;
    let (session, thoughts) = gw.blocking(move |s| s.session_thoughts(id.trim())).await?;
    let mut main = Vec::new();
    let mut branches = serde_json::Map::new();
    for t in &thoughts {
        match &t.data.branch_id {
            None => main.push(thought_json(t)),
            Some(b) => {
                if let Value::Array(list) = branches.entry(b.clone()).or_insert_with(|| Value::Array(Vec::new())) {
                    list.push(thought_json(t));
                }
            }
        }
    }
    Ok(json!({ "session": session, "thoughts": main, "branches": branches }))
}

async fn search(gw: &Gateway, args: Args) -> Result<Value> {
    let query = args.str_req(&["query", "q"])?;
    let limit = args.int_opt(&["limit"], 1, 100)?.unwrap_or(10) as u32;
    let q = query.clone();
    let hits = gw.blocking(move |s| s.search(&q, limit)).await?;
    Ok(json!({ "query": query, "count": hits.len(), "sessions": hits }))
}

async fn export(gw: &Gateway, args: Args) -> Result<Value> {
    let id = args.str_req(&["sessionId", "session_id"])?;
    let format = args.enum_opt(&["format"], Format::parse, &["json", "markdown", "cipher"])?;
    let include_metadata = args.bool_opt(&["includeMetadata"])?.unwrap_or(true);
    if let Some(dest) = args.str_opt(&["destination"])? {
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
        let dest =
            std::path::absolute(dest.trim()).map_err(|e| Error::io(format!("resolving destination {dest:?}"), e))?;
        let opts = ExportOptions {
            sessions: vec![id.trim().to_string()],
            ..Default::default()
        };
        let summary = gw
            .blocking(move |s| tree::writer::export_tree(s, &dest, &opts, &mut |_, _| {}))
            .await?;
        let Some(session) = summary.sessions.first() else {
            return Err(Error::Internal("the export wrote no session".into()));
        };
        return Ok(json!({
            "sessionId": session.session_id,
            "format": "json",
            "destination": summary.destination,
            "path": session.path,
            "thoughts": session.thoughts,
            "filesWritten": summary.files_written,
            "filesUnchanged": summary.files_unchanged,
        }));
    }
    let format = format.unwrap_or_default();
    let (session, thoughts) = gw.blocking(move |s| s.session_thoughts(id.trim())).await?;
    let content = export::render(format, &session, &thoughts, include_metadata)?;
    Ok(json!({ "sessionId": session.id, "format": format.as_str(), "content": content }))
}

async fn delete(gw: &Gateway, args: Args) -> Result<Value> {
    let id = args.str_req(&["sessionId", "session_id"])?.trim().to_string();
    let sid = id.clone();
    let removed = gw.blocking(move |s| s.delete_session(&sid)).await?;
    gw.wrote();
    if gw.active_session().as_deref() == Some(id.as_str()) {
        gw.set_active_session(None);
    }
    Ok(json!({ "sessionId": id, "deleted": true, "thoughtsDeleted": removed }))
}
