//! The gateway's session operations before a thought: state, start,
//! resume, list, cipher; and the helpers every operation on a session uses
//! (which session a call names, refusals of ids it cannot use).

use std::collections::HashMap;

use serde_json::{Value, json};

use super::preview::Preview;
use super::{Args, Gateway, OPERATIONS, answers, params};
use crate::content;
use crate::domain::{self, NewSession, SessionFilter, SessionId, Stage, Thought};
use crate::error::{Error, Result};
use crate::events::{self, EventType};
use crate::store::{Pick, ThoughtQuery};

/// A thought as answered to clients: every ThoughtData field plus its node id.
pub(crate) fn thought_json(t: &Thought) -> Value {
    let mut v = serde_json::to_value(&t.data).unwrap_or_else(|_| json!({}));
    v["nodeId"] = Value::String(t.node_id.clone());
    v
}

/// [`thought_json`] with `revisedBy`, the numbers of the thoughts revising
/// it (on its chain, oldest first), when it was revised: read back later, a
/// corrected thought says so.
pub(crate) fn read_thought_json(t: &Thought, revised_by: &HashMap<String, Vec<u32>>) -> Value {
    let mut v = thought_json(t);
    if let Some(by) = revised_by.get(&t.node_id) {
        v["revisedBy"] = json!(by);
    }
    v
}

/// A required `sessionId` as the typed parameters read it (already in the
/// form the ledger stores, [`SessionId`]); blank is refused.
pub(crate) fn session_id_given(id: SessionId) -> Result<String> {
    if id.is_empty() {
        return Err(Error::invalid("sessionId", "sessionId must not be empty"));
    }
    Ok(id.into_string())
}

/// The session `given` (a typed `sessionId`), else the connection's
/// current one; `args` tells a session named under an unknown name apart.
pub(crate) fn session_or_active(gw: &Gateway, given: Option<SessionId>, args: &Args) -> Result<String> {
    match given {
        Some(id) if !id.is_empty() => Ok(id.into_string()),
        Some(_) => Err(Error::invalid("sessionId", "sessionId must not be empty")),
        // A session named under a name this does not know: not the active
        // one in its place (a misspelt `sessionUUID` would otherwise export
        // the active session).
        None if let Some(k) = args.unknown_like("session") => Err(Error::invalid_with(
            k.clone(),
            format!("{k} is not a parameter: name the session with sessionId (nothing was done)"),
            json!({ "didYouMean": "sessionId" }),
        )),
        None if gw.stateless() => Err(no_session_without_handle()),
        None => gw.active_session().ok_or_else(|| match gw.closed_session() {
            // Right after a close an agent reads, exports or analyses what it
            // closed: name it, or the call answers without it.
            Some(closed) => Error::invalid_with(
                "sessionId",
                format!(
                    "no session is active on this connection: session {closed} was closed by nextThoughtNeeded: \
                     false; pass sessionId {closed} to read, export or analyse it (nothing was done)"
                ),
                json!({ "closedSessionId": closed }),
            ),
            None => Error::invalid(
                "sessionId",
                "no session is active on this connection: pass sessionId, or call start_new or load_context first",
            ),
        }),
    }
}

/// A stateless request (MCP 2026-07-28 over HTTP) names no session: it has
/// no MCP session, and so no current session to fall back on.
pub(crate) fn no_session_without_handle() -> Error {
    Error::invalid(
        "sessionId",
        "this request is stateless (MCP 2026-07-28 over HTTP): there is no current session, so pass sessionId, the \
         handle that start_new (or list_sessions) returned (nothing was done)",
    )
}

/// Refuse a call given a session id under a name it does not read (`sid`,
/// `target`), once it has read its parameters and before it does anything,
/// when that id is not the session the call acts on (`using`; for a
/// `thought`, the active session, none when the thought would start one):
/// ignored, the call would answer for the active session, or file a thought
/// there for good. The session in use itself, given once more, is only named
/// in `ignoredArguments`.
pub(crate) fn refuse_stray_session_id(args: &Args, using: Option<&str>, thought: bool) -> Result<()> {
    let Some((k, id)) = args.stray_session_id(using) else {
        return Ok(());
    };
    let name = super::clip(&k);
    let (message, details) = if thought {
        let active = match using {
            Some(active) => format!("without sessionId a thought goes to the current session, {active}"),
            None => "no session is current, so this thought would start a new one".to_string(),
        };
        (
            format!(
                "{name} is not a parameter of thought, and it names session {id}: {active}; to write to {id}, pass \
                 it as sessionId (nothing was recorded)"
            ),
            json!({ "didYouMean": "sessionId", "givenSessionId": id, "activeSessionId": using }),
        )
    } else {
        let using_said = using.map(|u| format!(" ({u})")).unwrap_or_default();
        (
            format!(
                "{name} is not a parameter of this operation, and it names session {id}, not the session this call \
                 would use{using_said}: pass it as sessionId (nothing was done)"
            ),
            json!({ "didYouMean": "sessionId", "givenSessionId": id, "sessionInUse": using }),
        )
    };
    Err(Error::invalid_with(k, message, details))
}

pub async fn get_state(gw: &Gateway, args: Args) -> Result<Value> {
    let params: params::GetState = args.parse("get_state")?;
    // A session named is reported on whatever this connection did last
    // (several conversations may share it); one that is gone is an error.
    let named = match params.session_id {
        Some(id) if !id.is_empty() => Some(id.into_string()),
        Some(_) => return Err(Error::invalid("sessionId", "sessionId must not be empty")),
        None => None,
    };
    let mut stage = gw.stage();
    let mut gone = None;
    let mut completed = false;
    let active = match named.clone().or_else(|| gw.active_session()) {
        Some(id) => match gw.blocking(move |s| Ok((s.session(&id)?, s.session_stage(&id)?))).await {
            Ok((s, session_stage)) => {
                // What this connection may call: its stage or its current
                // session's, whichever is higher (the stage check's rule).
                stage = stage.max(session_stage.unwrap_or_default());
                completed = s.completed_at.is_some();
                Some(answers::ActiveSession {
                    id: s.id,
                    title: s.title,
                    thought_count: s.thought_count,
                    branch_count: s.branch_count,
                    status: if completed { "completed" } else { "active" },
                })
            }
            Err(e @ Error::SessionNotFound { .. }) if named.is_some() => return Err(e),
            Err(Error::SessionNotFound { session_id }) => {
                // Deleted elsewhere: say so, as a thought would have.
                gw.clear_active_session_if(&session_id);
                gone = Some(session_id);
                None
            }
            Err(e) => return Err(e),
        },
        None => None,
    };
    let hidden = gw.with_client(|c| c.hidden.clone());
    let available: Vec<&str> = OPERATIONS
        .iter()
        .filter(|(n, s, _)| (!gw.options.stages || *s <= stage) && !hidden.contains(*n))
        .map(|(n, _, _)| *n)
        .collect();
    let next = match stage {
        _ if gw.read_only() && stage >= Stage::CipherLoaded => READ_ONLY_NEXT_STEP,
        // Without stages the next step is the same at every stage.
        _ if !gw.options.stages && gone.is_some() => {
            "The active session was deleted (perhaps by another process). Call thought to start a new session, \
             or start_new / load_context to choose one."
        }
        _ if !gw.options.stages && active.is_none() => {
            "No session is active: call start_new with a sessionTitle for new work, or load_context to continue \
             one (a thought sent now starts a session with a generated title)."
        }
        _ if !gw.options.stages && completed => completed_next_step(gw, stage),
        _ if !gw.options.stages => "Call thought to record the next step.",
        Stage::InitComplete if gone.is_some() => {
            "The active session was deleted (perhaps by another process). Call cipher, then thought to start a \
             new session, or start_new / load_context to choose one."
        }
        _ if gone.is_some() => {
            "The active session was deleted (perhaps by another process). Call thought to start a new session, \
             or start_new / load_context to choose one."
        }
        Stage::Entry => "Call start_new to begin a session, or list_sessions then load_context to resume one.",
        _ if completed => completed_next_step(gw, stage),
        Stage::InitComplete => {
            "Call cipher to load the notation guide and unlock thought (cipher with brief: true if you have read it)."
        }
        // After a close: a title the agent chooses beats a generated one
        // (else its runs pile up "Reasoning session <time>").
        _ if active.is_none() => {
            "No session is active: call start_new with a sessionTitle for new work, or load_context to continue \
             one (a thought sent now starts a session with a generated title)."
        }
        _ => "Call thought to record the next step.",
    };
    answers::to_value(&answers::StateAnswer {
        stage: stage.number(),
        stage_name: stage.name(),
        stages_enforced: gw.options.stages,
        active: active.into(),
        available_operations: available,
        hidden_operations: hidden,
        project: super::init_ops::project_json(gw),
        next_step: next,
        server: answers::ServerInfo::THIS,
        database: gw.store.path().display().to_string(),
        active_session_cleared: gone.map(|session_id| answers::SessionCleared {
            session_id,
            reason: "the session no longer exists",
        }),
    })
}

/// What a new session is made of, as `start_new` or a session's first
/// `thought` gives it.
#[derive(Debug, Default)]
pub(super) struct SessionFields {
    pub title: Option<String>,
    pub description: Option<String>,
    pub tags: Option<Vec<String>>,
    pub domain: Option<String>,
    pub new_work: Option<params::NewWork>,
    /// project, task and aspect given flat, as `start_new` takes them
    /// beside `newWork` (a thought takes them in `newWork` only).
    pub flat_work: [Option<String>; 3],
}

pub(super) fn new_session_from(f: SessionFields) -> Result<NewSession> {
    let mut tags = f.tags.unwrap_or_default();
    // `project: "p"` as the tag `project:p`, named `field` in errors.
    let tag_of = |field: &str, key: &str, v: &str| -> Result<String> {
        if v.trim().is_empty() {
            return Err(Error::invalid(
                field,
                format!("{field} is empty: give a name, or leave it out"),
            ));
        }
        let tag = format!("{key}:{}", v.trim());
        if tag.chars().count() > crate::domain::MAX_TAG_CHARS {
            return Err(Error::invalid(
                field,
                format!(
                    "{field} is too long: it becomes the tag {key}:..., and a tag is at most {} characters (a \
                     longer account of the work belongs in description)",
                    crate::domain::MAX_TAG_CHARS
                ),
            ));
        }
        Ok(tag)
    };
    let work = f.new_work.unwrap_or_default();
    let nested = [work.project, work.task, work.aspect];
    for ((key, flat), nested) in ["project", "task", "aspect"].into_iter().zip(f.flat_work).zip(nested) {
        match (flat, nested) {
            (Some(flat), Some(n)) if flat.trim() != n.trim() => {
                return Err(Error::invalid(
                    key,
                    format!("{key} is given twice with different values, flat and in newWork; give it once"),
                ));
            }
            (_, Some(n)) => tags.push(tag_of(&format!("newWork.{key}"), key, &n)?),
            (Some(flat), None) => tags.push(tag_of(key, key, &flat)?),
            (None, None) => {}
        }
    }
    let domain = f.domain.or(work.domain);
    // A domain of blanks names nothing, as a title or tag of blanks would.
    if domain.as_deref().is_some_and(|d| d.trim().is_empty()) {
        return Err(Error::invalid("domain", "domain is empty: give one, or leave it out"));
    }
    Ok(NewSession {
        title: f
            .title
            .unwrap_or_else(|| format!("Reasoning session {}", domain::now())),
        description: f.description,
        tags,
        domain: domain.map(|d| d.trim().to_string()),
    })
}

/// What a connection whose session is completed (opened to read by
/// `load_context`) calls next: reads its stage allows (not read_thoughts at
/// stage 1, which refuses it).
fn completed_next_step(gw: &Gateway, stage: Stage) -> &'static str {
    if gw.options.stages && stage < Stage::CipherLoaded {
        "The session is completed and open here to read: session export and deep_analysis read it now; call \
         cipher (brief: true) to unlock read_thoughts and get_structure. A thought recorded here reopens it; for \
         new work, call start_new."
    } else {
        "The session is completed and open here to read: read_thoughts, get_structure, session export or \
         deep_analysis read it. A thought recorded here reopens it; for new work, call start_new."
    }
}

/// The next step on a read-only ledger (a standby), where every write,
/// `thought` included, is refused.
const READ_ONLY_NEXT_STEP: &str = "This ledger is open read-only (a standby): read with read_thoughts, \
     get_structure, session get, search and export; thought and other writes are refused.";

/// What a connection with an open session calls next.
/// It names the handle: a stateless request, or another conversation on
/// the same process, has no current session to fall back on.
fn next_step_in_session(gw: &Gateway, stage: Stage, id: &str) -> String {
    if gw.read_only() {
        format!("{READ_ONLY_NEXT_STEP} Pass sessionId \"{id}\".")
    } else if gw.options.stages && stage < Stage::CipherLoaded {
        format!("Call cipher (brief: true if you have read its guide), then thought, passing sessionId \"{id}\".")
    } else {
        format!("Call thought with sessionId \"{id}\".")
    }
}

pub async fn start_new(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::StartNew = args.parse("start_new")?;
    let mut new = new_session_from(SessionFields {
        title: p.session_title,
        description: p.description,
        tags: p.tags,
        domain: p.domain,
        new_work: p.new_work,
        flat_work: [p.project, p.task, p.aspect],
    })?;
    super::init_ops::scope_new_session(gw, &mut new);
    // Refused at once, not after waiting for another program's write lock.
    new.checked()?;
    let order = gw.session_order().await;
    let session = gw.write(move |s| s.create_session(new)).await?;
    gw.wrote();
    gw.set_active_session(session.id.clone());
    drop(order);
    gw.emit(EventType::SessionStarted, Some(&session.id), || {
        events::session_started(&session)
    });
    gw.advance(Stage::InitComplete, "start_new");
    let stage = gw.settle_session_stage(&session.id, true, "start_new").await;
    // An agent that meant to go on with a session it named again gets a
    // new one: say which one it may have meant.
    let (title, id) = (session.title.clone(), session.id.clone());
    let namesake = gw.blocking(move |s| s.session_titled(&title, &id)).await?;
    let (same_title_session_id, note) = match namesake {
        Some((other, updated)) => {
            let note = format!(
                "another session has this title ({other}, updated {updated}); to continue it instead, call \
                 load_context with sessionId {other}"
            );
            (Some(other), Some(note))
        }
        None => (None, None),
    };
    answers::to_value(&answers::StartNewAnswer {
        session_id: session.id.clone(),
        message: format!(
            "Session \"{}\" created and active. Pass its sessionId on every later call about it.",
            session.title
        ),
        next_step: next_step_in_session(gw, stage, &session.id),
        session,
        stage: stage.number(),
        note,
        same_title_session_id,
    })
}

/// What `load_context` shows of a session besides its row: the last five
/// main-chain thoughts (as answered), the highest main-chain number, the
/// branch ids, and the thought recorded last when it is on a branch: an
/// agent that stopped on a branch learns where it was, not only the main
/// chain's next number.
struct Restoration {
    recent: Vec<Value>,
    current: u32,
    branches: Vec<String>,
    on_branch: Option<answers::LastOnBranch>,
}

fn recent_and_branches(s: &crate::store::Store, id: &str) -> Result<Restoration> {
    let recent = s.read_thoughts(id, &ThoughtQuery::main(Pick::Last(5)))?;
    let current = recent.last().map_or(0, |t| t.data.thought_number);
    let revised_by = s.revised_by_nodes(id, recent.iter().map(|t| t.node_id.as_str()))?;
    let recent = recent.iter().map(|t| read_thought_json(t, &revised_by)).collect();
    let on_branch = match s.last_recorded(id)? {
        Some((node_id, thought_number, Some(branch_id))) => {
            // The number the branch's next thought gets: after its highest,
            // which the thought recorded last need not be.
            let highest = s.highest_number(id, Some(&branch_id))?.unwrap_or(thought_number);
            Some(answers::LastOnBranch {
                node_id,
                branch_id,
                thought_number,
                next_thought_number: highest
                    .checked_add(1)
                    .filter(|n| *n <= crate::domain::MAX_THOUGHT_NUMBER),
            })
        }
        _ => None,
    };
    Ok(Restoration {
        recent,
        current,
        branches: s.branch_ids(id)?,
        on_branch,
    })
}

/// Refuse, with SESSION_NOT_FOUND, the first of `ids` that names no
/// session, by reading: before a write that would check the same, so that
/// the answer comes at once rather than after waiting for another program's
/// write lock. The write checks again.
pub(crate) async fn refuse_unknown_sessions(gw: &Gateway, ids: Vec<String>) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    match gw
        .blocking(move |s| Ok(s.first_missing_session(&ids)?.cloned()))
        .await?
    {
        Some(id) => Err(Error::session_not_found(id)),
        None => Ok(()),
    }
}

/// Open a session on this connection: the answer of `load_context` and
/// `session resume`. `reopen: false` opens a completed session to read it
/// without reopening it (its next thought here still does, and says so): a
/// new connection reaches the session reads through `load_context` only.
pub(crate) async fn open_session(gw: &Gateway, args: &Args, trigger: &str) -> Result<Value> {
    // `session resume` is keyed `session.resume` in the schema.
    let p: params::LoadContext = args.parse(&trigger.replace(' ', "."))?;
    let id = session_id_given(p.session_id)?;
    let reopen_it = p.reopen.unwrap_or(true);
    refuse_stray_session_id(args, Some(&id), false)?;
    let order = gw.session_order().await;
    // To read only, nothing is written: no wait behind another program's
    // write lock (an import or an open sqlite3 shell would keep a reader out
    // for the busy timeout, then refuse it).
    // A read-only server notes no access and reopens nothing: it reads.
    let reopen_it = reopen_it && !gw.read_only();
    let reopen = if reopen_it {
        refuse_unknown_sessions(gw, vec![id.clone()]).await?;
        let id = id.clone();
        gw.write(move |s| {
            let (session, was_completed) = s.reopen_session(&id)?;
            let restoration = recent_and_branches(s, &id)?;
            Ok((session, was_completed, restoration))
        })
        .await
    } else {
        let id = id.clone();
        gw.blocking(move |s| {
            let restoration = recent_and_branches(s, &id)?;
            Ok((s.session(&id)?, None, restoration))
        })
        .await
    };
    // On a full disk or a file system gone read-only, noting the access
    // (and reopening a completed session) cannot be written; the session
    // is still opened for reading, rather than every read of this
    // connection staying locked behind a stage it cannot reach. A thought,
    // once it can be written, reopens the session then.
    let mut unrecorded = None;
    let (session, was_completed, restoration) = match reopen {
        Ok(opened) => {
            if reopen_it {
                gw.wrote();
            }
            opened
        }
        // Another program's write lock held past the busy timeout too.
        Err(e) if reopen_it && (e.is_file_system_refusal() || e.is_busy()) => {
            tracing::warn!("{trigger}: could not record the access ({e}); opening the session to read");
            unrecorded = Some(e.message());
            gw.blocking(move |s| {
                let restoration = recent_and_branches(s, &id)?;
                Ok((s.session(&id)?, None, restoration))
            })
            .await?
        }
        Err(e) => return Err(e),
    };
    gw.set_active_session(session.id.clone());
    drop(order);
    gw.emit(EventType::SessionLoaded, Some(&session.id), || {
        events::session_loaded(&session)
    });
    gw.advance(Stage::InitComplete, trigger);
    let stage = gw.settle_session_stage(&session.id, reopen_it, trigger).await;
    let Restoration {
        recent,
        current,
        branches,
        on_branch,
    } = restoration;
    let mut preview = Preview::new(false);
    let recent = preview.apply(recent, true);
    let mut next_step = next_step_in_session(gw, stage, &session.id);
    let mut note = None;
    // A frozen or archived thread is opened to read: it takes no thought.
    let sid = session.id.clone();
    let settled = match gw.blocking(move |s| s.thread_status(&sid)).await {
        Ok(status) if !status.writable() => Some(status),
        _ => None,
    };
    if let Some(status) = settled {
        next_step = "This session is a settled thread: read it (read_thoughts, get_structure, session export, thread \
                     get) or cite it (thread reference); for new work, thread spawn or start_new."
            .into();
        note = Some(format!(
            "session {} is {} thread: it can be read and cited, and accepts no thought",
            session.id,
            if status == domain::thread::ThreadStatus::Archived {
                "an archived"
            } else {
                "a frozen"
            }
        ));
    } else if was_completed.is_none()
        && let Some(at) = session.completed_at.as_deref()
    {
        // Open to read: the next step is a read, not a thought, which would
        // reopen a finished session.
        next_step = completed_next_step(gw, stage).into();
        note = Some(if reopen_it {
            format!(
                "the session was completed at {at} and could not be reopened now (see warning); it is open here \
                 to read, and a thought recorded here reopens it"
            )
        } else {
            format!(
                "the session was completed at {at} and stays so (reopen: false); it is open here to read. A \
                 thought recorded now goes into this session and reopens it: for new work, call start_new first"
            )
        });
    }
    let warning = unrecorded.map(|why| {
        format!(
            "the session is open on this connection, but the ledger could not record it ({why}); reads work, \
             and thoughts can be recorded once the ledger can be written again"
        )
    });
    let restoration_info = answers::RestorationInfo {
        thought_count: session.thought_count,
        current_thought_number: current,
        branch_count: session.branch_count,
        branches,
        message: if current >= crate::domain::MAX_THOUGHT_NUMBER {
            crate::domain::chain_full(None)
        } else {
            format!("Next thought will be #{}", current + 1)
        },
        last_recorded_on_branch: on_branch,
    };
    answers::to_value(&answers::OpenAnswer {
        session_id: session.id.clone(),
        session,
        recent_thoughts: recent,
        restoration_info,
        stage: stage.number(),
        next_step,
        truncated: preview.truncated(),
        reopened: was_completed.is_some(),
        previously_completed_at: was_completed,
        note,
        warning,
    })
}

pub async fn load_context(gw: &Gateway, args: Args) -> Result<Value> {
    open_session(gw, &args, "load_context").await
}

/// An empty list for a search: what it searched, and where thought text is.
pub(crate) const SEARCH_HERE_NOTE: &str = "search here matches session titles, descriptions and tags; to search \
     the text of thoughts, use session with subOperation search (stage 1: after start_new, or load_context with \
     reopen: false)";

/// Why a search text without letters or digits (`*`, an emoji) found
/// nothing: search matches whole words, and it has none.
pub(crate) const UNSEARCHABLE_NOTE: &str =
    "the search text has no letters or digits; search matches whole words, so it found nothing";

/// The SessionFilter of `list_sessions` (flat, or nested under
/// `filters`), with project / task / aspect as `project:<p>` style tags.
pub(crate) fn session_filter(p: params::ListSessions) -> Result<SessionFilter> {
    let f = p.filters.unwrap_or(params::SessionFilter {
        tags: p.tags,
        project: p.project,
        task: p.task,
        aspect: p.aspect,
        search: p.search,
        status: p.status,
        limit: p.limit,
        offset: p.offset,
        sort_by: p.sort_by,
        sort_order: p.sort_order,
    });
    let mut tags = params::tag_filter(f.tags)?;
    for (key, given) in [("project", f.project), ("task", f.task), ("aspect", f.aspect)] {
        if let Some(v) = given.filter(|v| !v.trim().is_empty()) {
            tags.push(format!("{key}:{}", v.trim()));
        }
    }
    tags.sort();
    tags.dedup();
    crate::domain::check_tag_filter(&tags)?;
    Ok(SessionFilter {
        tags,
        search: params::search_text("search", f.search)?,
        status: f.status.map(|s| match s {
            params::StatusName::Active => domain::SessionStatus::Active,
            params::StatusName::Completed => domain::SessionStatus::Completed,
        }),
        limit: f.limit.get("limit")?,
        offset: f.offset.unwrap_or(0),
        sort_by: f.sort_by.map(Into::into).unwrap_or_default(),
        sort_order: f.sort_order.map(Into::into).unwrap_or_default(),
    })
}

/// `list_sessions` and `session list`: a SessionFilter; without a project
/// filter, the connection's project (bound root or `--project`) scopes the
/// list unless `allProjects: true`.
pub async fn list_sessions(gw: &Gateway, args: Args) -> Result<Value> {
    // `session list` takes the same type.
    let p: params::ListSessions = args.parse("list_sessions")?;
    let all = p.all_projects.unwrap_or(false);
    let mut filter = session_filter(p)?;
    let mut project = filter
        .tags
        .iter()
        .find_map(|t| t.strip_prefix("project:"))
        .map(str::to_string);
    // The filter without the project the server or a bound root added.
    let mut unscoped = None;
    if !all
        && !filter.tags.iter().any(|t| t.starts_with("project:"))
        && let Some((current, _)) = super::init_ops::current_project(gw)
    {
        unscoped = Some(filter.clone());
        filter.tags.push(format!("project:{current}"));
        project = Some(current);
    }
    let unsearchable = filter
        .search
        .as_deref()
        .is_some_and(|q| crate::store::fts_query(q).is_none());
    let searched = filter.search.is_some();
    // The same filter with any status, for an empty answer, to say what other
    // statuses hold.
    let any_status = filter.status.map(|_| SessionFilter {
        status: None,
        limit: 1,
        offset: 0,
        ..filter.clone()
    });
    let tags = filter.tags.clone();
    let page = gw.blocking(move |s| s.list_sessions(&filter)).await?;
    let empty = page.total == 0;
    let mut out = answers::SessionListAnswer {
        page,
        project,
        note: None,
        other_projects_total: None,
        other_status_total: None,
        other_spellings: None,
    };
    if unsearchable {
        out.note = Some(UNSEARCHABLE_NOTE.to_string());
    } else if empty && let Some(mut unscoped) = unscoped {
        // Nothing in this project: say whether other projects have some,
        // rather than let an agent conclude there is no history.
        unscoped.limit = 1;
        unscoped.offset = 0;
        let elsewhere = gw.blocking(move |s| s.list_sessions(&unscoped)).await?.total;
        if elsewhere > 0 {
            out.note = Some(format!(
                "no session of project {} matches; {elsewhere} session(s) of other projects, or of none, do: \
                 pass allProjects: true to list them",
                out.project.as_deref().unwrap_or_default()
            ));
            out.other_projects_total = Some(elsewhere);
        }
    }
    if empty
        && out.note.is_none()
        && let Some(any) = any_status
    {
        let other = gw.blocking(move |s| s.list_sessions(&any)).await?.total;
        if other > 0 {
            out.note = Some(format!(
                "no session with this status matches; {other} session(s) with the other status do: drop status \
                 to list them"
            ));
            out.other_status_total = Some(other);
        }
    }
    if empty && out.note.is_none() && !tags.is_empty() {
        let spelled = gw.blocking(move |s| s.session_tag_spellings(&tags)).await?;
        if let Some(said) = answers::TagSpellings::of("session", &spelled) {
            out.note = Some(said.note);
            out.other_spellings = Some(said.other_spellings);
        }
    }
    if empty && searched && out.note.is_none() {
        out.note = Some(SEARCH_HERE_NOTE.to_string());
    }
    answers::to_value(&out)
}

/// For a list that matched nothing: the filter's tags that no `kind` (session
/// or pattern) carries but that others carry in another letter case, as a
/// `note` and `otherSpellings` (`{"Q3 Plan": ["q3 plan"]}`). Tags match
/// exactly; an agent recalling its tag in other capitals concluded there was
/// no such session and started a duplicate.
pub(crate) fn tell_tag_spellings(out: &mut Value, kind: &str, spelled: &[(String, Vec<String>)]) {
    if let Some(said) = answers::TagSpellings::of(kind, spelled) {
        out["note"] = json!(said.note);
        out["otherSpellings"] = json!(said.other_spellings);
    }
}

/// `cipher`: the notation guide, which unlocks stage 2. With `brief: true`
/// the stage is unlocked without the guide (~9 KB, twice in each answer),
/// for an agent resuming work that has read it before.
pub async fn cipher(gw: &Gateway, args: Args) -> Result<Value> {
    let params: params::Cipher = args.parse("cipher")?;
    let brief = params.brief.unwrap_or(false);
    let named = params.session_id.is_some();
    // The session named, else the current one, keeps the stage too, for a
    // later connection that comes back with its id.
    let session = match params.session_id {
        Some(id) if !id.is_empty() => Some(id.into_string()),
        Some(_) => return Err(Error::invalid("sessionId", "sessionId must not be empty")),
        None => gw.active_session(),
    };
    if let Some(id) = session.clone()
        && gw.read_only()
    {
        // Nothing recorded: the connection's stage alone is raised.
        if named {
            gw.blocking(move |s| s.session(&id)).await?;
        }
    } else if let Some(id) = session.clone() {
        let raised = gw.write(move |s| s.raise_session_stage(&id, Stage::CipherLoaded)).await;
        match raised {
            Ok(true) => gw.wrote(),
            // Named but unknown: said, rather than a stage given to nothing.
            Ok(false) if named => {
                return Err(Error::session_not_found(session.unwrap_or_default()));
            }
            Ok(false) => {}
            Err(e) => tracing::warn!("cipher: could not record the session's stage: {e}"),
        }
    }
    let stage = gw.advance(Stage::CipherLoaded, "cipher");
    gw.emit(
        EventType::CipherLoaded,
        session.as_deref(),
        || json!({ "stage": stage.number() }),
    );
    // The operations this stage opens, but those this connection has hidden.
    let hidden = gw.with_client(|c| c.hidden.clone());
    let open: Vec<&str> = OPERATIONS
        .iter()
        .filter(|(name, needs, _)| *needs == Stage::CipherLoaded && !hidden.contains(*name))
        .map(|(name, _, _)| *name)
        .collect();
    answers::to_value(&answers::CipherAnswer {
        stage: stage.number(),
        guide: (!brief).then_some(content::CIPHER_GUIDE),
        guide_resource: brief.then_some("thoughtbox://cipher"),
        guide_bytes: brief.then_some(content::CIPHER_GUIDE.len()),
        next_step: match &session {
            _ if gw.read_only() => READ_ONLY_NEXT_STEP.to_string(),
            Some(id) => format!("{} are now available; pass sessionId \"{id}\".", open.join(", ")),
            None => format!("{} are now available.", open.join(", ")),
        },
        session_id: session,
    })
}
