//! `thought`: one reasoning step recorded, as named steps: which session
//! it goes to, the checks that need no ledger, the write and its events,
//! the critique, and the answer with its notes.

use rmcp::RoleServer;
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::ops::{SessionFields, new_session_from, refuse_stray_session_id, refuse_unknown_sessions};
use super::{Args, Gateway, answers, params};
use crate::content;
use crate::domain::{self, SessionId, Thought, ThoughtInput};
use crate::error::{Error, Result};
use crate::events::{self, EventType};
use crate::store::{Appended, Target};

fn thought_input(p: &params::Thought) -> Result<ThoughtInput> {
    Ok(ThoughtInput {
        thought: p.thought.clone(),
        next_thought_needed: p.next_thought_needed,
        thought_number: params::thought_number("thoughtNumber", p.thought_number)?,
        total_thoughts: params::thought_number("totalThoughts", p.total_thoughts)?,
        is_revision: p.is_revision,
        revises_thought: params::thought_number("revisesThought", p.revises_thought)?,
        branch_from_thought: params::thought_number("branchFromThought", p.branch_from_thought)?,
        branch_id: p.branch_id.clone(),
        needs_more_thoughts: p.needs_more_thoughts,
        include_guide: p.include_guide,
        critique_requested: p.critique.unwrap_or(false),
    })
}

/// What a thought refers back to (a thought to revise, a fork point, a
/// branch to continue), kept to explain a refusal when no session was
/// active: those references then point into the brand-new session the
/// thought would have started, where nothing exists yet.
struct ReferenceBack {
    revises: Option<u32>,
    branch_from: Option<u32>,
    branch: Option<String>,
    /// Whether the agent numbered the thought itself.
    numbered: bool,
}

impl ReferenceBack {
    fn of(input: &ThoughtInput) -> ReferenceBack {
        ReferenceBack {
            numbered: input.thought_number.is_some(),
            revises: input.revises_thought,
            branch_from: input.branch_from_thought,
            branch: input.branch_id.clone(),
        }
    }

    /// Whether the thought refers back at all.
    fn refers(&self) -> bool {
        self.revises.is_some() || self.branch_from.is_some() || self.branch.is_some()
    }

    /// `e`, the refusal of a thought that would have started a session,
    /// told as what happened when it is about a reference back: no session
    /// is active (the one `closed` was closed, when this connection closed
    /// one), and how to continue one. The code and field stay.
    fn explain(&self, e: Error, closed: Option<String>) -> Error {
        let Error::InvalidPayload {
            field,
            message,
            details,
        } = e
        else {
            return e;
        };
        let missing = details.as_ref().and_then(|d| d.get("missingThought")).is_some();
        // Unnumbered, the thought would be #1 of the new session, so a
        // revision of thought 1 would be one of itself: missing all the same.
        let revises_missing = missing || (!self.numbered && self.revises == Some(1));
        let what = match field.as_str() {
            "revisesThought" if revises_missing => self.revises.map(|r| format!("cannot revise thought {r}")),
            "branchFromThought" if missing => self.branch_from.map(|f| format!("cannot branch from thought {f}")),
            // A branch continued without its fork point: new to the new session.
            "branchFromThought" if self.branch_from.is_none() => {
                self.branch.as_ref().map(|b| format!("cannot continue branch '{b}'"))
            }
            _ => None,
        };
        let Some(what) = what else {
            return Error::InvalidPayload {
                field,
                message,
                details,
            };
        };
        let (why, how) = match &closed {
            Some(id) => (
                format!(" (session {id} was closed by nextThoughtNeeded: false)"),
                format!("call load_context with sessionId {id} to continue it, then send this thought again"),
            ),
            None => (
                String::new(),
                "call load_context with the session's sessionId (list_sessions finds it) to continue it, then send \
                 this thought again"
                    .to_string(),
            ),
        };
        let mut d = match details {
            Some(Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        d.insert("activeSession".into(), Value::Null);
        d.insert("wouldCreateSession".into(), json!(true));
        if let Some(id) = closed {
            d.insert("closedSessionId".into(), json!(id));
        }
        Error::InvalidPayload {
            message: format!(
                "{what}: no session is active on this connection{why}, so this thought would start a new, empty \
                 session; {how}"
            ),
            field,
            details: Some(Value::Object(d)),
        }
    }
}

/// The refusal of a thought numbered `n` (above 1) sent with no session
/// active: it would start a new session at #n, a session of one stray
/// thought, when the agent meant to go on with the one it closed (`closed`)
/// or another. Said as a reference back is ([`ReferenceBack::explain`]).
fn numbered_without_session(n: u32, closed: Option<String>) -> Error {
    let (why, how) = match &closed {
        Some(id) => (
            format!(" (session {id} was closed by nextThoughtNeeded: false)"),
            format!("to continue it, call load_context with sessionId {id}, then send this thought again"),
        ),
        None => (
            String::new(),
            "to continue a session, call load_context with its sessionId (list_sessions finds it), then send this \
             thought again"
                .to_string(),
        ),
    };
    let mut details = json!({ "activeSession": null, "wouldCreateSession": true });
    if let Some(id) = closed {
        details["closedSessionId"] = json!(id);
    }
    Error::invalid_with(
        "thoughtNumber",
        format!(
            "thought {n} cannot start a session: no session is active on this connection{why}, so this thought \
             would start a new session at #{n}; {how}; to start a new session, call start_new, or send the \
             thought numbered 1 or without thoughtNumber (nothing was recorded)"
        ),
        details,
    )
}

/// Refuse a `thought` that names its session, branch or revised thought
/// under a name `thought` does not take (`sessionUUID`, `branchName: "alt"`,
/// `revisionOf: 3`): ignored, the thought would go to the active session,
/// the main chain, or be no revision, for good. Names that only mention a
/// session (`sessionSummary: "..."`) are reported unused, as others are.
fn refuse_misnamed_placement(args: &Args) -> Result<()> {
    type Rule = (fn(&str, &Value) -> bool, &'static str, &'static str);
    const RULES: [Rule; 3] = [
        (
            |k, v| {
                k.contains("session")
                    && (["id", "uuid", "key", "ref"].iter().any(|end| k.ends_with(end))
                        || v.as_str()
                            .is_some_and(|s| crate::tree::is_session_id(&SessionId::new(s))))
            },
            "sessionId",
            "a thought names the session it goes to with sessionId (without it, the current session)",
        ),
        (
            |k, v| k.contains("branch") && v.is_string(),
            "branchId",
            "a thought names its branch with branchId",
        ),
        (
            |k, v| {
                k.contains("revis") && (v.is_number() || v.as_str().is_some_and(|s| s.trim().parse::<u32>().is_ok()))
            },
            "revisesThought",
            "a thought names the thought it revises with revisesThought",
        ),
    ];
    match args.unknown_find(|k, v| RULES.iter().find(|(applies, ..)| applies(k, v))) {
        Some((k, (_, meant, how))) => Err(Error::invalid_with(
            k.clone(),
            format!("{k} is not a parameter: {how} (nothing was recorded)"),
            json!({ "didYouMean": meant }),
        )),
        None => Ok(()),
    }
}

/// A thought's parameters that make the session it starts, used (and
/// counted as read) only when it starts one.
const NEW_SESSION_FIELDS: &[&str] = &["sessionTitle", "sessionTags", "description", "domain", "newWork"];

pub async fn thought(gw: &Gateway, args: Args, ctx: Option<&RequestContext<RoleServer>>) -> Result<Value> {
    refuse_misnamed_placement(&args)?;
    // What a new session is made of counts as used only when the thought
    // starts one (read through `args` then).
    let p: params::Thought = args.parse_leaving("thought", NEW_SESSION_FIELDS)?;
    let input = thought_input(&p)?;
    let verbose = p.verbose.unwrap_or(false);
    let include_guide = input.include_guide.unwrap_or(false);
    let want_critique = input.critique_requested;
    // Until this thought has set the current session, the next thought or
    // session switch this client sent waits (the critique comes after).
    let order = gw.session_order().await;
    let fields = SessionFields {
        title: p.session_title.clone(),
        description: p.description.clone(),
        tags: p.session_tags.clone(),
        domain: p.domain.clone(),
        new_work: p.new_work.clone(),
        flat_work: Default::default(),
    };
    let placement = resolve_target(gw, p.session_id, fields, &args).await?;
    check_before_write(gw, &placement, &input)?;
    let mut written = record(gw, placement, input).await?;
    drop(order);
    // Asked for once the thought is recorded, which it stays whatever
    // happens to its critique.
    // Boxed, as a request to the client is a large future that most
    // thoughts never make (see `Gateway::dispatch`).
    let critique = if want_critique {
        Some(
            Box::pin(super::critique::critique_thought(
                gw,
                ctx,
                &mut written.appended.thought,
            ))
            .await,
        )
    } else {
        None
    };
    let answer = answer(gw, written, critique, verbose, include_guide).await?;
    answers::to_value(&answer)
}

/// Where a thought goes, decided before anything is written.
struct Placement {
    /// The session the call named with `sessionId`.
    named: Option<String>,
    target: Target,
    /// The session this connection had closed, or lost to a deletion,
    /// before this thought: said when the thought starts a new one.
    closed_before: Option<String>,
    deleted_before: Option<String>,
}

impl Placement {
    fn creates_session(&self) -> bool {
        matches!(self.target, Target::New(_))
    }
}

/// The session a thought goes to: the one named is the one written to,
/// whatever this connection did before, since a session id is the agent's
/// handle and one server process may serve several conversations. Without
/// one, the connection's current session; without that, a new session.
async fn resolve_target(
    gw: &Gateway,
    session_id: Option<SessionId>,
    fields: SessionFields,
    args: &Args,
) -> Result<Placement> {
    // An empty id is no id: some clients fill every optional field.
    let named = session_id.filter(|id| !id.is_empty()).map(SessionId::into_string);
    if let Some(id) = &named {
        refuse_unknown_sessions(gw, vec![id.clone()]).await?;
    }
    if named.is_none() && gw.stateless() {
        return Err(super::ops::no_session_without_handle());
    }
    let active = named.clone().or_else(|| gw.active_session());
    let target = match &active {
        Some(id) => Target::Session(id.clone()),
        None => {
            args.mark_all_read(NEW_SESSION_FIELDS);
            let mut new = new_session_from(fields)?;
            super::init_ops::scope_new_session(gw, &mut new);
            new.checked()?;
            Target::New(new)
        }
    };
    refuse_stray_session_id(args, active.as_deref(), true)?;
    Ok(Placement {
        named,
        target,
        closed_before: gw.closed_session(),
        deleted_before: gw.deleted_session(),
    })
}

/// Refuse what needs no ledger data before the write lock is waited for:
/// another program may hold it for seconds.
fn check_before_write(gw: &Gateway, placement: &Placement, input: &ThoughtInput) -> Result<()> {
    // A thought that also refers back is refused for that below (nothing
    // it refers to exists in a new session), as it was.
    let refers_back = ReferenceBack::of(input);
    if placement.creates_session()
        && !refers_back.refers()
        && let Some(n) = input.thought_number.filter(|n| *n > 1)
    {
        return Err(numbered_without_session(n, placement.closed_before.clone()));
    }
    domain::check_thought_input(input).map_err(|e| {
        if placement.creates_session() {
            refers_back.explain(e, gw.closed_session())
        } else {
            e
        }
    })
}

/// A thought recorded, and what the connection knew before it.
struct Written {
    appended: Appended,
    creates_session: bool,
    closed_before: Option<String>,
    deleted_before: Option<String>,
}

/// Write the thought, tell the event subscribers, and make its session
/// this connection's current one (or its closed one, when the thought
/// closed it).
async fn record(gw: &Gateway, placement: Placement, input: ThoughtInput) -> Result<Written> {
    let creates_session = placement.creates_session();
    let Placement {
        named,
        target,
        closed_before,
        deleted_before,
    } = placement;
    let refers_back = ReferenceBack::of(&input);
    let appended = match gw.append(move |s| s.append_thought(target, input)).await {
        Ok(a) => a,
        Err(e) if creates_session => return Err(refers_back.explain(e, gw.closed_session())),
        Err(e) => {
            // The current session was deleted (perhaps by another process):
            // forget it so the next thought starts a new one, and say so.
            // A session named in the call is simply not found.
            return Err(match e {
                Error::SessionNotFound { session_id } if named.is_none() => {
                    gw.clear_active_session_if(&session_id);
                    Error::ActiveSessionGone { session_id }
                }
                e => e,
            });
        }
    };
    gw.wrote();
    let (thought, session_id) = (&appended.thought, appended.thought.session_id.as_str());
    if creates_session {
        gw.emit(EventType::SessionStarted, Some(session_id), || {
            events::session_started(&appended.session)
        });
    }
    gw.emit(EventType::ThoughtAdded, Some(session_id), || {
        events::thought_added(thought)
    });
    if thought.data.is_revision {
        gw.emit(EventType::ThoughtRevised, Some(session_id), || {
            events::thought_revised(thought)
        });
    }
    if appended.new_branch {
        gw.emit(EventType::BranchCreated, Some(session_id), || {
            events::branch_created(thought)
        });
    }
    if appended.closed {
        gw.emit(EventType::SessionCompleted, Some(session_id), || {
            events::session_completed(&appended.session)
        });
        gw.close_active_session(session_id);
    } else {
        gw.set_active_session(session_id.to_string());
    }
    Ok(Written {
        appended,
        creates_session,
        closed_before,
        deleted_before,
    })
}

/// The thought's answer: where it was recorded, what `verbose` adds, its
/// critique, and what the agent may not have expected (a new session, a
/// close, a reopening, a fork point it did not mean).
async fn answer(
    gw: &Gateway,
    written: Written,
    critique: Option<super::critique::Outcome>,
    verbose: bool,
    include_guide: bool,
) -> Result<answers::ThoughtAnswer> {
    let Written {
        appended,
        creates_session,
        closed_before,
        deleted_before,
    } = written;
    let data = &appended.thought.data;
    let session_id = appended.thought.session_id.clone();
    let mut out = answers::ThoughtAnswer::new(
        session_id.clone(),
        data.thought_number,
        appended.thought.node_id.clone(),
    );
    if verbose {
        let sid = session_id.clone();
        out.progress = Some(answers::ThoughtProgress {
            total_thoughts: data.total_thoughts,
            next_thought_needed: data.next_thought_needed,
            branches: gw.blocking(move |s| s.branch_ids(&sid)).await?,
            thought_history_length: appended.session.thought_count,
            auto_numbered: appended.auto_numbered,
        });
    }
    // A critique asked for is answered in minimal answers too: it is what
    // the agent asked this call for, and it is made only once.
    out.critique = critique.and_then(answers::CritiqueAnswer::of);
    if creates_session {
        // No session was active: say so, so that an agent that meant to
        // continue one (deleted, closed or never started) notices.
        out.session_created = true;
        out.session_title = Some(appended.session.title.clone());
        if let Some(previous) = closed_before.filter(|p| *p != session_id) {
            answers::add_note(
                &mut out.note,
                &format!(
                    "session {previous} was closed by nextThoughtNeeded: false, so this thought started a new \
                     session; to add to the closed one instead, call load_context with sessionId {previous}"
                ),
            );
            out.previous_session_id = Some(previous);
        } else if let Some(previous) = deleted_before.filter(|p| *p != session_id) {
            answers::add_note(
                &mut out.note,
                &format!(
                    "session {previous}, active on this connection, was deleted (perhaps by another process), so \
                     this thought started a new session"
                ),
            );
            out.previous_session_id = Some(previous);
        }
    }
    if !data.next_thought_needed && data.branch_id.is_some() && !appended.closed {
        answers::add_note(
            &mut out.note,
            "nextThoughtNeeded: false on a branch closes nothing: the session stays open, and closes with \
             nextThoughtNeeded: false on the main chain",
        );
    }
    if appended.closed {
        out.session_closed = true;
        out.closed_session_id = Some(session_id.clone());
    }
    if let Some(at) = &appended.reopened_from {
        // Closed elsewhere while this connection still had it active: the
        // agent learns that this thought reopened it, as load_context says.
        out.reopened = true;
        out.previously_completed_at = Some(at.clone());
    }
    if appended.new_branch
        && let Some(say) = fork_point_note(gw, &appended.thought).await?
    {
        answers::add_note(&mut out.note, &say);
    }
    if include_guide {
        out.guide = Some(content::PATTERNS_GUIDE);
    }
    Ok(out)
}

/// For the first thought of a new branch: a new branch forks from a
/// main-chain thought, and an agent working on a branch that names a
/// number of its branch forks from the main chain's thought of that number
/// without knowing. Says so when other branches hold that number.
async fn fork_point_note(gw: &Gateway, thought: &Thought) -> Result<Option<String>> {
    let (Some(from), Some(own)) = (thought.data.branch_from_thought, thought.data.branch_id.clone()) else {
        return Ok(None);
    };
    let sid = thought.session_id.clone();
    let mut others = gw
        .blocking(move |s| s.branches_with_number(&sid, from, &own, 4))
        .await?;
    if others.is_empty() {
        return Ok(None);
    }
    // The branches written to last first; past three, "others".
    let more = others.len() > 3;
    others.truncate(3);
    Ok(Some(format!(
        "branch {} forks from main-chain thought {from}: branches fork from the main chain only, so thought \
         {from} of branch {}{} is not its fork point",
        thought.data.branch_id.as_deref().unwrap_or_default(),
        others.join(" or "),
        if more { " (or of other branches)" } else { "" }
    )))
}

#[cfg(test)]
mod tests {
    /// Written here by hand: each must stay a parameter of `thought`, or
    /// it would count as read when no session is made.
    #[test]
    fn new_session_fields_are_thought_parameters() {
        let schema = super::params::schema_of_op("thought").unwrap();
        for name in super::NEW_SESSION_FIELDS {
            assert!(schema["properties"].get(*name).is_some(), "{name}");
        }
    }
}
