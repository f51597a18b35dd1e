//! Multi round-trip requests (MCP 2026-07-28): what replaces the
//! server-to-client requests (sampling for `critique`, `roots/list`) for a
//! client of that protocol.
//!
//! The first round of a tool call runs as any call; an operation that needs
//! the client's input asks for it here ([`ask`]) instead of sending a
//! request, and the call answers an `InputRequiredResult` carrying that
//! request and a sealed `requestState`. The client answers the request and
//! sends the same call again with `inputResponses` and the `requestState`.
//!
//! - Roots: nothing is written before the roots are known, so the retry runs
//!   the operation again, with the client's answer in place of a request.
//! - Critique: the thought is recorded in the first round; the state holds
//!   its node and the answer made then, so the retry only attaches the
//!   critique and never runs `thought` again (a retried call never repeats
//!   a write).
//!
//! The state is sealed with an HMAC (rmcp's `RequestStateCodec`) under a key
//! made from the system's random source the first time this server process
//! seals or opens one, and kept only in memory: a state from an earlier
//! process, like a forged or altered one, is refused.
#![allow(deprecated)] // sampling and roots request types

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{
    CallToolRequestParams, CreateMessageRequest, CreateMessageRequestParams, InputRequest, InputRequests,
    InputRequiredResult, ProtocolVersion, RequestStateCodec, RequestStateError, SealOptions,
};
use rmcp::service::RequestContext;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::{Gateway, Refused};
use crate::error::{Error, Result};

/// The key of the sampling request in `inputRequests` / `inputResponses`.
pub(crate) const CRITIQUE_KEY: &str = "critique";
/// The key of the roots request in `inputRequests` / `inputResponses`.
pub(crate) const ROOTS_KEY: &str = "roots";

/// How long a client has to answer and retry: a person may be asked to
/// approve the sampling request first.
const STATE_TTL: Duration = Duration::from_secs(60 * 60);

/// Bound into every seal, so that a state means nothing to another use of
/// the same codec.
const ASSOCIATED_DATA: &[u8] = b"thoughtbox_gateway tools/call";

/// This process's sealing key: 32 bytes from two v4 UUIDs (244 random
/// bits, from the system's random source), made once.
static CODEC: LazyLock<RequestStateCodec> = LazyLock::new(|| {
    let mut key = Vec::with_capacity(32);
    key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    key.extend_from_slice(uuid::Uuid::new_v4().as_bytes());
    // 32 bytes, the codec's minimum: `try_new` cannot refuse it.
    RequestStateCodec::new_unchecked(key)
});

/// How many unanswered critique rounds are remembered (the oldest go first).
const WAITING_MAX: usize = 1_000;

/// How long an unanswered critique round is remembered: an agent resends
/// at once when its call fails; later, the same text is more likely a new
/// step (another agent of the session, say).
const WAITING_TTL: Duration = Duration::from_secs(10 * 60);

/// Critiques asked of 2026-07-28 clients and not answered yet, by the
/// digest of the call that asked, with when: a client whose sampling was
/// declined or failed cannot say so (its SDK ends the call with an error),
/// and the agent sends the thought again as a new call. That call is
/// answered with the thought already recorded, once, not recorded twice.
/// Kept beside the sealing key: a state means nothing to another process.
static WAITING: LazyLock<Mutex<Waiting>> = LazyLock::new(Default::default);

/// Each waiting call's digest, when it asked, its thought and its answer.
type Waiting = HashMap<u64, (Instant, Recorded, Value)>;

fn waiting() -> std::sync::MutexGuard<'static, Waiting> {
    WAITING.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Remember that `call` waits for a critique of `recorded`.
fn remember(call: u64, recorded: &Recorded, answer: &Value) {
    let mut waiting = waiting();
    waiting.retain(|_, (at, _, _)| at.elapsed() < WAITING_TTL);
    if waiting.len() >= WAITING_MAX
        && let Some(oldest) = waiting.iter().min_by_key(|(_, (at, _, _))| *at).map(|(k, _)| *k)
    {
        waiting.remove(&oldest);
    }
    waiting.insert(call, (Instant::now(), recorded.clone(), answer.clone()));
}

/// The critique round `call` left unanswered, taken (a repeat is answered
/// once; the one after it records a thought).
fn take_waiting(call: u64) -> Option<(Recorded, Value)> {
    let (at, recorded, answer) = waiting().remove(&call)?;
    (at.elapsed() < WAITING_TTL).then_some((recorded, answer))
}

/// Where a thought that waits for its critique is, as the retry of the
/// call finds it again.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Recorded {
    pub session_id: String,
    pub node_id: String,
    pub thought_number: u32,
    pub branch_id: Option<String>,
}

/// What a `requestState` holds: what the call waits for, and which call
/// it is (a digest of its arguments), since a state sent with another call
/// must not answer that one with the first call's result.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct State {
    call: u64,
    #[serde(flatten)]
    waiting: Sealed,
}

/// What a call waits for.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub(crate) enum Sealed {
    /// A `thought` recorded in the first round, waiting for its critique.
    Critique {
        #[serde(flatten)]
        recorded: Recorded,
        /// The call's answer as the first round made it, without the
        /// critique.
        answer: Value,
    },
    /// `list_roots` or `bind_root`, waiting for the client's roots.
    Roots,
}

/// Which call `arguments` make: the same arguments sent again give the
/// same digest (a map hashes its entries in key order). Hashed as values,
/// not as JSON text: every call is digested, and writing out a long
/// thought cost each one. The seal keeps the digest from being altered; a
/// collision needs a client that holds the token already, so SipHash is
/// enough.
fn call_digest(arguments: Option<&serde_json::Map<String, Value>>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::hash::DefaultHasher::new();
    arguments.hash(&mut hasher);
    hasher.finish()
}

/// What an operation asks of a 2026-07-28 client in this round.
pub(crate) enum Ask {
    Critique {
        recorded: Recorded,
        request: Box<CreateMessageRequestParams>,
    },
    Roots,
}

/// This round's input and what it asks for, kept for the tool call
/// running in this task.
#[derive(Default)]
struct Round {
    /// In a roots retry: the client's answer (`None`: none was sent).
    roots: Option<Option<Value>>,
    asked: Option<Ask>,
}

tokio::task_local! {
    static ROUND: RefCell<Round>;
}

/// Whether the request comes from a client of protocol 2026-07-28 or
/// newer, which cannot be sent requests and is asked by multi round-trip
/// requests instead.
pub(crate) fn modern(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// Ask the client for input in this call's answer. False outside a tool
/// call (nothing would carry the request to the client).
pub(crate) fn ask(ask: Ask) -> bool {
    ROUND.try_with(|round| round.borrow_mut().asked = Some(ask)).is_ok()
}

/// In the retry of a call that asked for roots: the client's answer to
/// `roots/list` (`Some(None)`: it sent none). `None` in a first round.
pub(crate) fn roots_answer() -> Option<Option<Value>> {
    ROUND.try_with(|round| round.borrow_mut().roots.take()).ok().flatten()
}

/// What a tool call answers.
pub(crate) enum Called {
    Answer(Value),
    InputRequired(InputRequiredResult),
}

/// Run a `tools/call` of the gateway: a first round, or a retry carrying
/// `requestState` and `inputResponses`.
pub(crate) async fn call(
    gw: &Gateway,
    request: CallToolRequestParams,
    ctx: &RequestContext<RoleServer>,
) -> std::result::Result<Called, Refused> {
    let mut responses = request.input_responses.unwrap_or_default();
    let call = call_digest(request.arguments.as_ref());
    let opened = request.request_state.as_deref().map(open).transpose()?;
    if let Some(state) = &opened
        && state.call != call
    {
        return Err(Refused {
            error: refused_state(
                "requestState was made for another call: send it with the same arguments as the call whose \
                 answer asked for input"
                    .into(),
            ),
            received: None,
        });
    }
    if opened.is_none()
        && modern(ctx)
        && let Some((recorded, answer)) = take_waiting(call)
        && super::critique::is_resend(gw, &recorded, request.arguments.as_ref()).await
    {
        let answer = Box::pin(super::critique::repeated(gw, recorded, answer)).await;
        return Ok(Called::Answer(answer));
    }
    let round = match opened.map(|s| s.waiting) {
        None => Round::default(),
        Some(Sealed::Roots) => Round {
            roots: Some(responses.remove(ROOTS_KEY)),
            asked: None,
        },
        Some(Sealed::Critique { recorded, answer }) => {
            waiting().remove(&call);
            let answer = Box::pin(super::critique::resume(
                gw,
                recorded,
                answer,
                responses.remove(CRITIQUE_KEY),
            ))
            .await;
            return Ok(Called::Answer(answer));
        }
    };
    let (answer, asked) = ROUND
        .scope(RefCell::new(round), async {
            let answer = gw.call(request.arguments, Some(ctx)).await;
            (answer, ROUND.with(|round| round.borrow_mut().asked.take()))
        })
        .await;
    match asked {
        None => answer.map(Called::Answer),
        // The operation stopped to ask: what it answered is not the answer.
        Some(Ask::Roots) => Ok(Called::InputRequired(input_required(
            ROOTS_KEY,
            InputRequest::ListRoots(Default::default()),
            State {
                call,
                waiting: Sealed::Roots,
            },
        )?)),
        Some(Ask::Critique { recorded, request }) => {
            // The thought is recorded; an error after that (a read for the
            // verbose answer) is the call's answer, as it would be without
            // a critique.
            let answer = answer?;
            remember(call, &recorded, &answer);
            let state = State {
                call,
                waiting: Sealed::Critique { recorded, answer },
            };
            Ok(Called::InputRequired(input_required(
                CRITIQUE_KEY,
                InputRequest::CreateMessage(CreateMessageRequest::new(*request)),
                state,
            )?))
        }
    }
}

fn input_required(key: &str, request: InputRequest, state: State) -> Result<InputRequiredResult> {
    let sealed = CODEC
        .seal_json_with(
            &state,
            &SealOptions::new().associated_data(ASSOCIATED_DATA).ttl(STATE_TTL),
        )
        .map_err(|e| Error::Internal(format!("sealing the request state failed: {e}")))?;
    let requests = InputRequests::from([(key.to_string(), request)]);
    Ok(InputRequiredResult::new(Some(requests), Some(sealed)))
}

/// A `requestState` refused for `why`: nothing was done.
fn refused_state(why: String) -> Error {
    Error::invalid_with(
        "requestState",
        format!(
            "{why}; nothing was done. A thought sent with critique: true was recorded in the call's first \
             round: read it with read_thoughts rather than sending it again"
        ),
        json!({ "reason": "REQUEST_STATE_REFUSED" }),
    )
}

/// The state a client sent back, if this process sealed it.
fn open(sealed: &str) -> Result<State> {
    let refuse = refused_state;
    CODEC.open_json_with(sealed, ASSOCIATED_DATA).map_err(|e| match e {
        RequestStateError::Expired => refuse(format!(
            "requestState has expired: a retry is taken within {} minutes of the answer that asked for it",
            STATE_TTL.as_secs() / 60
        )),
        RequestStateError::IntegrityCheckFailed => refuse(
            "requestState was not sealed by this server process: it was altered, or made by a server \
                 process that has since stopped (each process seals with its own key)"
                .into(),
        ),
        _ => refuse("requestState is not one this server made".into()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seal(waiting: Sealed, ttl: Duration) -> String {
        let state = State { call: 7, waiting };
        CODEC
            .seal_json_with(&state, &SealOptions::new().associated_data(ASSOCIATED_DATA).ttl(ttl))
            .unwrap()
    }

    fn refusal(sealed: &str) -> String {
        match open(sealed) {
            Err(Error::InvalidPayload { field, message, .. }) => {
                assert_eq!(field, "requestState");
                message
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_state_opens_as_sealed_and_not_once_altered() {
        let recorded = |n: u32| Recorded {
            session_id: "s".into(),
            node_id: format!("s:{n}"),
            thought_number: n,
            branch_id: None,
        };
        let state = Sealed::Critique {
            recorded: recorded(1),
            answer: json!({ "thoughtNumber": 1 }),
        };
        let sealed = seal(state, STATE_TTL);
        match open(&sealed) {
            Ok(State {
                call: 7,
                waiting: Sealed::Critique { recorded, answer },
            }) => {
                assert_eq!(recorded.node_id, "s:1");
                assert_eq!(answer, json!({ "thoughtNumber": 1 }));
            }
            other => panic!("{other:?}"),
        }
        // Another node, under the same tag: the HMAC no longer matches.
        let mut parts: Vec<String> = sealed.split('.').map(String::from).collect();
        let other = seal(
            Sealed::Critique {
                recorded: recorded(2),
                answer: json!({}),
            },
            STATE_TTL,
        );
        parts[1] = other.split('.').nth(1).unwrap().to_string();
        assert!(refusal(&parts.join(".")).contains("not sealed by this server process"));
        assert!(refusal("forged").contains("not one this server made"));
        // Sealed under another key, as by an earlier process.
        let stranger = RequestStateCodec::new_unchecked(vec![7u8; 32])
            .seal_json_with(
                &State {
                    call: 7,
                    waiting: Sealed::Roots,
                },
                &SealOptions::new().associated_data(ASSOCIATED_DATA),
            )
            .unwrap();
        assert!(refusal(&stranger).contains("not sealed by this server process"));
    }

    #[test]
    fn the_same_arguments_are_the_same_call() {
        let args = |v: Value| v.as_object().cloned();
        let a = args(json!({ "operation": "thought", "args": { "thought": "x", "critique": true } }));
        let again = args(json!({ "args": { "critique": true, "thought": "x" }, "operation": "thought" }));
        let other = args(json!({ "operation": "session", "args": { "subOperation": "delete" } }));
        assert_eq!(call_digest(a.as_ref()), call_digest(again.as_ref()));
        assert_ne!(call_digest(a.as_ref()), call_digest(other.as_ref()));
        assert_ne!(call_digest(a.as_ref()), call_digest(None));
    }

    #[test]
    fn an_expired_state_is_refused_as_such() {
        let sealed = seal(Sealed::Roots, Duration::from_millis(1));
        std::thread::sleep(Duration::from_millis(20));
        assert!(refusal(&sealed).contains("expired"));
    }
}
