//! The Observatory: a page at `/` that watches reasoning happen, its JSON API
//! under `/api`, and its WebSocket at `/ws` (the payloads are listed in
//! `docs/observatory.md`). The page's HTML, script and style are compiled
//! into the binary: it works offline, with nothing fetched from elsewhere.

mod live;
mod login;
mod payloads;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::json;

use crate::domain::{SessionFilter, SessionId, SortBy};
use crate::error::Error;
use crate::export::{self, Format, Layout};
use crate::gateway::Gateway;
use crate::shutdown::Shutdown;
use crate::store::Store;
use payloads::{ObservatorySession, ObservatoryThought, SessionSnapshotPayload};

const PAGE: &str = include_str!("assets/index.html");
const SCRIPT: &str = include_str!("assets/observatory.js");
const STYLE: &str = include_str!("assets/observatory.css");
const LOGIN_STYLE: &str = include_str!("assets/login.css");

/// What the Observatory's handlers share.
#[derive(Clone)]
pub(super) struct Observatory {
    store: Store,
    hub: live::Hub,
}

/// The Observatory's routes (the guard in front checks the token).
pub(super) fn routes(gateway: &Gateway, shutdown: Arc<Shutdown>) -> Router {
    let store = gateway.store.clone();
    let state = Observatory {
        hub: live::Hub::start(store.clone(), shutdown),
        store,
    };
    let logins = Arc::new(crate::http::throttle::Throttle::default());
    Router::new()
        .route(
            "/login",
            get(login::form).post(login::submit).layer(axum::Extension(logins)),
        )
        .route(
            "/login.css",
            get(|| async { asset("text/css; charset=utf-8", LOGIN_STYLE) }),
        )
        .route("/", get(|| async { Html(PAGE) }))
        .route(
            "/observatory.js",
            get(|| async { asset("text/javascript; charset=utf-8", SCRIPT) }),
        )
        .route(
            "/observatory.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE) }),
        )
        .route("/api/sessions", get(sessions))
        .route("/api/tags", get(tags))
        .route("/api/sessions/{id}", get(session))
        .route("/api/sessions/{id}/export", get(export_session))
        .route("/api/sessions/{id}/analysis", get(analysis))
        .route("/api/sessions/{id}/thread", get(thread))
        .route("/api/sessions/{id}/thoughts/{node}", get(thought))
        .route("/ws", get(live::upgrade))
        .with_state(state)
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// An error as JSON, with the status its kind calls for.
fn failed(e: Error) -> Response {
    let status = match &e {
        Error::SessionNotFound { .. } | Error::ThoughtNotFound { .. } => StatusCode::NOT_FOUND,
        Error::InvalidPayload { .. } | Error::InvalidOperation { .. } => StatusCode::BAD_REQUEST,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, axum::Json(json!({ "error": e.to_string() }))).into_response()
}

/// Run a read off the runtime.
async fn reading<T: Send + 'static>(
    store: &Store,
    f: impl FnOnce(&Store) -> crate::Result<T> + Send + 'static,
) -> Result<T, Response> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || f(&store))
        .await
        .map_err(|e| failed(Error::Internal(e.to_string())))?
        .map_err(failed)
}

#[derive(Deserialize)]
struct ListQuery {
    search: Option<String>,
    project: Option<String>,
    tag: Option<String>,
    limit: Option<u32>,
    offset: Option<u32>,
}

/// Sessions, newest first; with `search`, those the full-text index finds
/// (best first, with the matching thoughts); `project` and `tag` filter
/// either.
async fn sessions(State(o): State<Observatory>, Query(q): Query<ListQuery>) -> Response {
    let mut tags: Vec<String> = Vec::new();
    if let Some(p) = q.project.as_deref().map(str::trim).filter(|p| !p.is_empty()) {
        tags.push(format!("project:{p}"));
    }
    if let Some(t) = q.tag.as_deref().map(str::trim).filter(|t| !t.is_empty()) {
        tags.push(t.to_string());
    }
    let limit = q.limit.unwrap_or(50).clamp(1, 100);
    let offset = q.offset.unwrap_or(0);
    let search = q.search.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
    let answer = reading(&o.store, move |s| match search {
        // Ranked, with the matching thoughts: the best `offset + limit`,
        // the first `offset` skipped. Counting every match would cost a pass
        // over all of them, which the ranking avoids: `total` is given only
        // when the ranking saw every matching session.
        Some(text) => {
            let (hits, more) = s.search_tagged(&text, &tags, offset.saturating_add(limit), 3)?;
            let seen = hits.len();
            let items: Vec<_> = hits
                .into_iter()
                .skip(offset as usize)
                .map(|h| {
                    let mut item = serde_json::to_value(ObservatorySession::from(&h.session)).unwrap_or_default();
                    item["matches"] = serde_json::to_value(&h.matches).unwrap_or_default();
                    item
                })
                .collect();
            let total = (!more).then_some(seen);
            Ok(json!({ "sessions": items, "total": total, "hasMore": more }))
        }
        // Otherwise the list, newest first, paged and counted exactly.
        None => {
            let filter = SessionFilter {
                tags,
                limit,
                offset,
                sort_by: SortBy::CreatedAt,
                ..SessionFilter::default()
            };
            let page = s.list_sessions(&filter)?;
            let items: Vec<ObservatorySession> = page.sessions.iter().map(ObservatorySession::from).collect();
            Ok(json!({ "sessions": items, "total": page.total, "hasMore": page.has_more }))
        }
    })
    .await;
    match answer {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

/// Tags in use, most used first, projects apart (for the filters).
async fn tags(State(o): State<Observatory>) -> Response {
    match reading(&o.store, |s| s.tag_counts(500)).await {
        Ok(counts) => {
            let (projects, tags): (Vec<_>, Vec<_>) = counts.into_iter().partition(|(t, _)| t.starts_with("project:"));
            let projects: Vec<_> = projects
                .into_iter()
                .map(|(t, n)| json!({ "name": t.trim_start_matches("project:"), "count": n }))
                .collect();
            let tags: Vec<_> = tags
                .into_iter()
                .map(|(t, n)| json!({ "name": t, "count": n }))
                .collect();
            axum::Json(json!({ "projects": projects, "tags": tags })).into_response()
        }
        Err(r) => r,
    }
}

/// What the page reads of a session at most (as JSON, about): a session
/// past it is drawn from its first thoughts, and says so.
const PAGE_SNAPSHOT_MAX: usize = 16 << 20;

#[derive(Deserialize)]
struct SnapshotQuery {
    full: Option<bool>,
}

/// One session, as the WebSocket's `session_snapshot` payload: each text
/// cut as there, unless `full=true`.
async fn session(State(o): State<Observatory>, Path(id): Path<SessionId>, Query(q): Query<SnapshotQuery>) -> Response {
    let id = id.into_string();
    let read = reading(&o.store, move |s| {
        Ok(if q.full == Some(true) {
            let (session, thoughts) = s.session_thoughts(&id)?;
            SessionSnapshotPayload::of(&session, &thoughts)
        } else {
            let (session, thoughts, whole) = s.session_cut(&id, Some(PAGE_SNAPSHOT_MAX))?;
            SessionSnapshotPayload {
                partial: !whole,
                ..SessionSnapshotPayload::cut(&session, &thoughts)
            }
        })
    })
    .await;
    match read {
        Ok(snapshot) => axum::Json(snapshot).into_response(),
        Err(r) => r,
    }
}

/// One thought whole (ObservatoryThought), by its node id: what the page
/// reads to show a thought whose text the snapshot cut.
async fn thought(State(o): State<Observatory>, Path((id, node)): Path<(SessionId, String)>) -> Response {
    let id = id.into_string();
    match reading(&o.store, move |s| s.thought_by_node(&id, &node)).await {
        Ok(t) => axum::Json(ObservatoryThought::from(&t)).into_response(),
        Err(r) => r,
    }
}

/// A session as a thread (docs/threads.md): its status, parent and relations,
/// with the title of every thread it names, so the page can link them.
async fn thread(State(o): State<Observatory>, Path(id): Path<SessionId>) -> Response {
    let id = id.into_string();
    let read = reading(&o.store, move |s| {
        let (thread, relations) = s.thread(&id)?;
        let named: std::collections::BTreeSet<String> = thread
            .parent_id
            .iter()
            .chain(&relations.children)
            .chain(&relations.references_to)
            .chain(&relations.referenced_by)
            .chain(&relations.depends_on)
            .cloned()
            .collect();
        let mut titles = serde_json::Map::new();
        for other in named {
            // A reference may name an asset path rather than a thread.
            if let Ok((t, _)) = s.thread(&other) {
                titles.insert(other, serde_json::Value::String(t.title));
            }
        }
        Ok(json!({ "thread": thread, "relations": relations, "titles": titles }))
    })
    .await;
    match read {
        Ok(v) => axum::Json(v).into_response(),
        Err(r) => r,
    }
}

#[derive(Deserialize)]
struct ExportQuery {
    format: Option<String>,
}

/// A session as a file to download: SessionExport JSON (the default) or Markdown.
async fn export_session(
    State(o): State<Observatory>,
    Path(id): Path<SessionId>,
    Query(q): Query<ExportQuery>,
) -> Response {
    let format = match q.format.as_deref().unwrap_or("json") {
        "json" => Format::Json,
        "markdown" | "md" => Format::Markdown,
        other => {
            return failed(Error::invalid(
                "format",
                format!("format {other:?} is not json or markdown"),
            ));
        }
    };
    let id = id.into_string();
    let sid = id.clone();
    let rendered = reading(&o.store, move |s| {
        s.with_session(&sid, |snapshot| {
            let mut out = Vec::new();
            export::write(&mut out, format, snapshot, true, Layout::Pretty)?;
            Ok(out)
        })
    })
    .await;
    let body = match rendered {
        Ok(b) => b,
        Err(r) => return r,
    };
    let (kind, extension) = match format {
        Format::Markdown => ("text/markdown; charset=utf-8", "md"),
        _ => ("application/json", "json"),
    };
    let name = format!("attachment; filename=\"thoughtbox-{id}.{extension}\"");
    let disposition = HeaderValue::from_str(&name).unwrap_or(HeaderValue::from_static("attachment"));
    (
        [
            (header::CONTENT_TYPE, HeaderValue::from_static(kind)),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        body,
    )
        .into_response()
}

/// The session's analysis (SessionAnalysis, as `session analyze` answers it).
async fn analysis(State(o): State<Observatory>, Path(id): Path<SessionId>) -> Response {
    let id = id.into_string();
    let answer = reading(&o.store, move |s| {
        let (session, thoughts, critiques) = s.analysis_input(&id)?;
        Ok(crate::analysis::session_analysis(&session, &thoughts, critiques))
    })
    .await;
    match answer {
        Ok(a) => axum::Json(a).into_response(),
        Err(r) => r,
    }
}
