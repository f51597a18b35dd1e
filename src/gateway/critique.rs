//! Critique of a thought through MCP sampling (`sampling/createMessage`).
//!
//! rmcp marks the sampling request deprecated because protocol 2026-07-28
//! drops server-to-client requests: a client that initialised with an
//! older protocol is sent the request; a 2026-07-28 client is asked in an
//! `InputRequiredResult` and answers by retrying the call ([`super::mrtr`]).
//! The capability check, the timeout and the `SAMPLING_NOT_SUPPORTED`
//! answer cover clients that cannot or do not answer.
#![allow(deprecated)]

use rmcp::RoleServer;
use rmcp::model::{CreateMessageRequestParams, CreateMessageResult, SamplingMessage};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::Gateway;
use super::mrtr::{self, Recorded};
use super::preview::{BUDGET_CHARS, PREVIEW_CHARS};
use crate::domain::{self, Critique, MAX_CRITIQUE_BYTES, Thought};
use crate::error::{Error, Result};
use crate::store::{Pick, ThoughtQuery};

const CRITIC_PROMPT: &str = "You review one step of someone's reasoning. Point out logical errors, unstated assumptions, \
missed alternatives and unconsidered edge cases, and suggest concrete improvements. Be brief and specific; \
if the step is sound, say so in one sentence.";

/// `text` cut to [`MAX_CRITIQUE_BYTES`] (between two characters), with a
/// note of how long it was. The prompt asks for at most 1,000 tokens; a
/// client sending megabytes anyway has its critique cut, saying so.
fn bounded(mut text: String) -> String {
    if text.len() <= MAX_CRITIQUE_BYTES {
        return text;
    }
    let sent = text.len();
    let note =
        format!("\n[critique cut here: the model sent {sent} bytes; thoughtbox keeps at most {MAX_CRITIQUE_BYTES}]");
    let keep = text.floor_char_boundary(MAX_CRITIQUE_BYTES - note.len());
    text.truncate(keep);
    text.push_str(&note);
    text
}

/// How many earlier thoughts go with a sampling request as context.
const CONTEXT_THOUGHTS: u32 = 5;

/// "Thought 3", or "Thought 3 (branch alt)" for a branch's thought.
fn label(t: &Thought) -> String {
    match &t.data.branch_id {
        Some(b) => format!("Thought {} (branch {b})", t.data.thought_number),
        None => format!("Thought {}", t.data.thought_number),
    }
}

/// What a `thought` with `critique: true` answers about its critique.
pub(crate) enum Outcome {
    /// Made and stored.
    Made(Critique),
    /// None was stored: why, as an ErrorPayload.
    Failed(Value),
    /// Asked of a 2026-07-28 client in an `InputRequiredResult`: the call's
    /// retry answers it.
    Asked,
}

impl Outcome {
    /// Add `critique` (and `critiqueError` when there is none) to a
    /// thought's answer.
    pub(crate) fn answer(self, out: &mut Value) {
        match self {
            Outcome::Made(c) => out["critique"] = json!(c),
            Outcome::Failed(error) => {
                out["critique"] = Value::Null;
                out["critiqueError"] = error;
            }
            Outcome::Asked => {}
        }
    }
}

/// The critique of a thought just recorded (with `critique_requested`):
/// asked by a sampling request of a client that initialised with an older
/// protocol, or by an `InputRequiredResult` for a 2026-07-28 client. The
/// thought stands whatever happens here: a failure is the critique's error,
/// never the call's, or a client retrying the call would record the
/// thought twice.
pub(crate) async fn critique_thought(
    gw: &Gateway,
    ctx: Option<&RequestContext<RoleServer>>,
    thought: &mut Thought,
) -> Outcome {
    let Some(ctx) = ctx else {
        return Outcome::Failed(Error::SamplingNotSupported("no MCP client to ask".into()).payload());
    };
    if ctx.client_capabilities().is_none_or(|c| c.sampling.is_none()) {
        return Outcome::Failed(
            Error::SamplingNotSupported("the client did not declare the sampling capability".into()).payload(),
        );
    }
    let params = match sampling_request(gw, thought).await {
        Ok(p) => p,
        Err(e) => return Outcome::Failed(e.payload()),
    };
    if mrtr::modern(ctx) {
        let asked = mrtr::ask(mrtr::Ask::Critique {
            recorded: Recorded {
                session_id: thought.session_id.clone(),
                node_id: thought.node_id.clone(),
                thought_number: thought.data.thought_number,
                branch_id: thought.data.branch_id.clone(),
            },
            request: Box::new(params),
        });
        return if asked {
            Outcome::Asked
        } else {
            Outcome::Failed(
                Error::SamplingNotSupported("this call cannot carry a request to the client".into()).payload(),
            )
        };
    }
    let outcome = match request_critique(gw, ctx, params).await {
        Ok(c) => store(gw, &thought.node_id, c).await,
        // The thought was recorded with critique_requested = 1: nothing
        // more to write.
        Err(e) => Outcome::Failed(e.payload()),
    };
    if let Outcome::Made(c) = &outcome {
        thought.data.critique = Some(c.clone());
        // Answered: reads show the critique, not the request.
        thought.data.critique_requested = None;
    }
    outcome
}

/// The retry of a 2026-07-28 client's `thought` call: attach the critique
/// in `response` (the client's answer to the sampling request) to the
/// thought recorded in the first round, and answer what that round would
/// have answered, with the critique. Never records a thought. A retry sent
/// again answers the critique stored by the first one, writing nothing.
pub(crate) async fn resume(gw: &Gateway, recorded: Recorded, mut answer: Value, response: Option<Value>) -> Value {
    let outcome = match stored_critique(gw, &recorded).await {
        Err(e) => Outcome::Failed(e.payload()),
        Ok(Some(c)) => Outcome::Made(c),
        Ok(None) => match response {
            None => Outcome::Failed(
                Error::SamplingNotSupported(format!(
                    "the client sent the call again without an answer to the sampling request \
                     (inputResponses.{}); the thought is recorded without a critique",
                    mrtr::CRITIQUE_KEY
                ))
                .payload(),
            ),
            Some(response) => match serde_json::from_value::<CreateMessageResult>(response) {
                Err(e) => Outcome::Failed(
                    Error::SamplingNotSupported(format!(
                        "the client's answer to the sampling request (inputResponses.{}) is not a sampling \
                         result: {e}",
                        mrtr::CRITIQUE_KEY
                    ))
                    .payload(),
                ),
                Ok(result) => match critique_of(result) {
                    Ok(c) => store(gw, &recorded.node_id, c).await,
                    Err(e) => Outcome::Failed(e.payload()),
                },
            },
        },
    };
    outcome.answer(&mut answer);
    answer
}

/// Whether a call with the arguments of one whose critique was never
/// answered sends that call again, rather than a new thought of the same
/// text: it acts on the same session (the one it names, else the
/// connection's current one, else the one it just closed), and nothing has
/// been recorded there since.
pub(crate) async fn is_resend(
    gw: &Gateway,
    recorded: &Recorded,
    arguments: Option<&serde_json::Map<String, Value>>,
) -> bool {
    let names = super::params::find("thought", None).map(super::params::Params::handle_names);
    let named = arguments.and_then(|map| {
        let nested = map.get("args").and_then(Value::as_object);
        names.iter().flatten().find_map(|k| {
            map.get(*k)
                .or_else(|| nested.and_then(|n| n.get(*k)))
                .and_then(Value::as_str)
                .filter(|id| !id.trim().is_empty())
                .map(|id| crate::domain::SessionId::new(id).into_string())
        })
    });
    // A thought that closed its session left the connection without a
    // current one: the session it closed is where its resend goes.
    let Some(target) = named.or_else(|| gw.active_session()).or_else(|| gw.closed_session()) else {
        return false;
    };
    if target != recorded.session_id {
        return false;
    }
    matches!(
        gw.blocking(move |s| s.newest_node(&target)).await,
        Ok(Some(node)) if node == recorded.node_id
    )
}

/// A first round sent again (the same arguments, no `requestState`) while
/// its critique was never answered: the client declined or failed the
/// sampling request, and its agent resent the thought. The thought recorded
/// then is the answer; it is not recorded twice.
pub(crate) async fn repeated(gw: &Gateway, recorded: Recorded, mut answer: Value) -> Value {
    let outcome = match stored_critique(gw, &recorded).await {
        Err(e) => Outcome::Failed(e.payload()),
        Ok(Some(c)) => Outcome::Made(c),
        Ok(None) => Outcome::Failed(
            Error::SamplingNotSupported(
                "the critique asked for when this thought was recorded was never answered (the sampling \
                 request was declined or failed)"
                    .into(),
            )
            .payload(),
        ),
    };
    outcome.answer(&mut answer);
    let repeat = format!(
        "this call repeats one whose thought was recorded as {} while its critique was asked for: it was not \
         recorded again (the same call sent once more records a new thought)",
        recorded.node_id
    );
    answer["note"] = match answer.get("note").and_then(Value::as_str) {
        Some(earlier) => json!(format!("{repeat}; {earlier}")),
        None => json!(repeat),
    };
    answer
}

/// The critique already attached to a recorded thought (a retry sent
/// twice); `THOUGHT_NOT_FOUND` once the thought is gone.
async fn stored_critique(gw: &Gateway, recorded: &Recorded) -> Result<Option<Critique>> {
    let session = recorded.session_id.clone();
    let query = ThoughtQuery::on(recorded.branch_id.clone(), Pick::Number(recorded.thought_number));
    let gone = || Error::ThoughtNotFound {
        message: format!(
            "thought {} no longer exists (its session was deleted before the critique came); the critique was \
             not stored",
            recorded.node_id
        ),
        details: json!({ "nodeId": recorded.node_id }),
    };
    let thoughts = match gw.blocking(move |s| s.read_thoughts(&session, &query)).await {
        Ok(t) => t,
        Err(Error::SessionNotFound { .. } | Error::ThoughtNotFound { .. }) => return Err(gone()),
        Err(e) => return Err(e),
    };
    match thoughts.into_iter().find(|t| t.node_id == recorded.node_id) {
        Some(t) => Ok(t.data.critique),
        None => Err(gone()),
    }
}

/// Store a critique on its thought.
async fn store(gw: &Gateway, node_id: &str, c: Critique) -> Outcome {
    let node = node_id.to_string();
    let stored = c.clone();
    match gw.write(move |s| s.set_critique(&node, &stored)).await {
        Ok(true) => {
            gw.wrote();
            Outcome::Made(c)
        }
        // Another program's lock held past the busy timeout, the server
        // stopping.
        Err(e) => {
            tracing::warn!("thought {node_id} was recorded but its critique could not be stored: {e}");
            let mut payload = e.payload();
            if let Some(m) = payload.get("message").and_then(Value::as_str) {
                payload["message"] = json!(format!(
                    "the thought was recorded, but its critique could not be stored: {m}"
                ));
            }
            Outcome::Failed(payload)
        }
        // Deleted (by another process) while the client wrote it.
        Ok(false) => Outcome::Failed(
            Error::ThoughtNotFound {
                message: format!(
                    "thought {node_id} no longer exists (its session was deleted while the critique was being \
                     written); the critique was not stored"
                ),
                details: json!({ "nodeId": node_id }),
            }
            .payload(),
        ),
    }
}

/// The sampling request for a thought's critique, with the thoughts before
/// it as context.
async fn sampling_request(gw: &Gateway, t: &Thought) -> Result<CreateMessageRequestParams> {
    // The thoughts before this one on its path (up to CONTEXT_THOUGHTS, as
    // docs/gateway.md says): for a branch, its earlier thoughts and then the
    // main chain back from the fork point; never "the highest numbers", which
    // miss a branch's ancestry and get backward-numbered thoughts wrong.
    let node = t.node_id.clone();
    let earlier = gw.blocking(move |s| s.thoughts_before(&node, CONTEXT_THOUGHTS)).await?;
    let mut prompt = String::from(if earlier.is_empty() {
        "No earlier thoughts: this is the first step.\n"
    } else {
        "Earlier thoughts, oldest first:\n"
    });
    // Cut as overview reads cut them: a request of megabytes would fail
    // with any model, and the critique with it.
    for e in &earlier {
        prompt.push_str(&format!(
            "{}: {}\n",
            label(e),
            cut_for_model(&e.data.thought, PREVIEW_CHARS)
        ));
    }
    prompt.push_str(&format!(
        "\n{} to review:\n{}\n\nGive a critical analysis of this thought.",
        label(t),
        cut_for_model(&t.data.thought, BUDGET_CHARS)
    ));
    Ok(
        CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], 1000)
            .with_system_prompt(CRITIC_PROMPT),
    )
}

/// `text` cut to its first `chars` characters, saying how much was left out.
fn cut_for_model(text: &str, chars: usize) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{} [... {} more characters]", &text[..at], text[at..].chars().count()).into(),
        None => text.into(),
    }
}

/// Ask the client's model for a critique by a sampling request (clients
/// that initialised with a protocol older than 2026-07-28).
async fn request_critique(
    gw: &Gateway,
    ctx: &RequestContext<RoleServer>,
    params: CreateMessageRequestParams,
) -> Result<Critique> {
    let call = tokio::time::timeout(gw.options.critique_timeout, ctx.peer.create_message(params));
    let result = gw
        .ask_client(ctx, call)
        .await
        .ok_or_else(|| {
            Error::SamplingNotSupported(
                "the request was cancelled, or the server is stopping, before the client answered the sampling \
                 request"
                    .into(),
            )
        })?
        .map_err(|_| {
            Error::SamplingNotSupported(format!(
                "the client did not answer the sampling request within {} s (--critique-timeout)",
                gw.options.critique_timeout.as_secs()
            ))
        })?
        .map_err(|e| Error::SamplingNotSupported(format!("the sampling request failed: {e}")))?;
    critique_of(result)
}

/// The critique in a client's answer to the sampling request.
fn critique_of(result: CreateMessageResult) -> Result<Critique> {
    let text = result
        .message
        .content
        .into_vec()
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n");
    if text.trim().is_empty() {
        return Err(Error::SamplingNotSupported(
            "the client answered the sampling request without text".into(),
        ));
    }
    if text.len() > MAX_CRITIQUE_BYTES {
        tracing::warn!(
            bytes = text.len(),
            "the client's critique is longer than thoughtbox keeps: cut"
        );
    }
    // NUL is refused in everything a client sends as an argument; the
    // client's sampling answer is kept without it too (SQLite's text
    // functions stop at it).
    let no_nul = |s: String| {
        if s.contains('\0') {
            s.replace('\0', "\u{FFFD}")
        } else {
            s
        }
    };
    // The model name is the client's to choose: kept to a name's length.
    let mut model = no_nul(result.model);
    if let Some((cut, _)) = model.char_indices().nth(domain::MAX_CRITIQUE_MODEL_CHARS) {
        tracing::warn!(
            chars = model.chars().count(),
            "the client's model name is longer than thoughtbox keeps: cut"
        );
        model.truncate(cut);
    }
    Ok(Critique {
        text: bounded(no_nul(text)),
        model,
        timestamp: domain::now(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_critique_over_the_limit_is_cut_between_characters_with_a_note() {
        assert_eq!(bounded("short".into()), "short");
        let exact = "a".repeat(MAX_CRITIQUE_BYTES);
        assert_eq!(bounded(exact.clone()), exact);
        // Three-byte characters, so the cut falls inside one unless moved.
        let long = "€".repeat(MAX_CRITIQUE_BYTES);
        let cut = bounded(long.clone());
        assert!(cut.len() <= MAX_CRITIQUE_BYTES, "{}", cut.len());
        assert!(cut.len() > MAX_CRITIQUE_BYTES - 200);
        assert!(cut.ends_with(&format!(
            "the model sent {} bytes; thoughtbox keeps at most {MAX_CRITIQUE_BYTES}]",
            long.len()
        )));
        assert!(long.starts_with(cut.split('\n').next().unwrap_or_default()));
    }

    /// The model name comes from the client too: a few thousand characters
    /// of it are not kept (import refuses such a name).
    #[test]
    fn the_model_name_is_cut_to_its_limit() {
        let answer = |model: String| {
            critique_of(CreateMessageResult::new(
                SamplingMessage::assistant_text("sound"),
                model,
            ))
            .unwrap()
        };
        assert_eq!(answer("claude-sonnet-4".into()).model, "claude-sonnet-4");
        let exact = "é".repeat(domain::MAX_CRITIQUE_MODEL_CHARS);
        assert_eq!(answer(exact.clone()).model, exact);
        let cut = answer(format!("{exact}and more, 5,000 characters in all"));
        assert_eq!(cut.model, exact);
        assert_eq!(answer("a\0b".into()).model, "a\u{FFFD}b");
        assert_eq!(cut.text, "sound");
    }
}
