//! Live updates: one task polls the ledger for what was recorded since its
//! last look (by this server or any other process on the same file) and
//! broadcasts the frames; each WebSocket forwards those its client
//! subscribed to. A socket whose client does not read is dropped rather
//! than let it hold anything up.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::extract::ws::{Message, Utf8Bytes, WebSocket, WebSocketUpgrade};
use axum::response::Response;
use serde::Deserialize;
use tokio::sync::broadcast;

use super::payloads::{Frame, SessionSnapshotPayload, session_started, thought_frames};
use crate::domain::SessionId;
use crate::shutdown::Shutdown;
use crate::store::{Mark, Store};

/// How often the ledger is asked what changed, while anyone watches: well
/// within the second a new thought may take to appear.
const POLL: Duration = Duration::from_millis(250);

/// The most changes read per look; the rest come at the next.
const BATCH: u32 = 100;

/// Frames a slow socket may fall behind by before it is dropped.
const BACKLOG: usize = 256;

/// What may wait to go out to one socket: frames a slow client has not
/// read yet. One frame is far smaller (a thought's text is cut to
/// `OBSERVED_CHARS`, and a snapshot is at most [`SNAPSHOT_MAX`]).
const OUT_BUFFER: usize = 8 << 20;

/// The largest `session_snapshot` frame sent. A session too large for it
/// even with its texts cut (about 1,500 thoughts of 4,000 characters)
/// gets an `error` frame instead, and its live frames all the same: a
/// frame over [`OUT_BUFFER`] would close the socket, and the page, which
/// reconnects and subscribes again, would have it closed again.
const SNAPSHOT_MAX: usize = 6 << 20;

/// How long one frame may take to go out before its socket is dropped
/// (debug builds take `send_wait_ms` from `THOUGHTBOX_HTTP_LIMITS`).
const SEND_WAIT: Duration = Duration::from_secs(5);

/// The frames of the ledger's changes, for every socket.
#[derive(Clone)]
pub(super) struct Hub {
    frames: broadcast::Sender<Arc<(Option<String>, Utf8Bytes)>>,
    store: Store,
    shutdown: Arc<Shutdown>,
    send_wait: Duration,
}

impl Hub {
    /// Start the polling task; it ends when the server stops.
    pub(super) fn start(store: Store, shutdown: Arc<Shutdown>) -> Hub {
        let (frames, _) = broadcast::channel(BACKLOG);
        let hub = Hub {
            frames,
            store,
            shutdown,
            send_wait: crate::http::conn::debug_limit("send_wait_ms").map_or(SEND_WAIT, Duration::from_millis),
        };
        let polling = hub.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = polling.poll() => {}
                () = polling.shutdown.wait() => {}
            }
        });
        hub
    }

    async fn poll(&self) {
        let mut mark: Option<Mark> = None;
        let mut tick = tokio::time::interval(POLL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let store = self.store.clone();
            // Nobody watches: only keep the mark current (two indexed
            // maxima), so that a socket opened now misses nothing after it.
            let from = mark.filter(|_| self.frames.receiver_count() > 0);
            let looked = tokio::task::spawn_blocking(move || match from {
                None => store.mark().map(|m| (m, Vec::new())),
                Some(from) => store.changes_since(from, BATCH).map(|(sessions, thoughts)| {
                    let mut to = from;
                    if let Some((seq, _)) = sessions.last() {
                        to.session = *seq;
                    }
                    if let Some((t, _)) = thoughts.last() {
                        to.thought = t.seq;
                    }
                    // The final count of a session a thought closed.
                    let counts: Vec<Option<u64>> = thoughts
                        .iter()
                        .map(|(t, _)| {
                            (t.data.branch_id.is_none() && !t.data.next_thought_needed)
                                .then(|| store.session(&t.session_id).ok().map(|s| s.thought_count))
                                .flatten()
                        })
                        .collect();
                    let frames = sessions
                        .iter()
                        .map(|(_, s)| session_started(s))
                        .chain(thoughts.iter().zip(counts).flat_map(|(t, n)| thought_frames(t, n)))
                        .collect::<Vec<Frame>>();
                    (to, frames)
                }),
            })
            .await;
            match looked {
                Ok(Ok((to, frames))) => {
                    mark = Some(to);
                    for frame in frames {
                        if let Ok(text) = serde_json::to_string(&frame) {
                            let _ = self.frames.send(Arc::new((frame.session_id, text.into())));
                        }
                    }
                }
                Ok(Err(e)) => tracing::debug!("the Observatory could not read the ledger's changes: {e}"),
                Err(e) => tracing::debug!("the Observatory's poll failed: {e}"),
            }
        }
    }
}

/// A client's message: `{ "type": "subscribe" | "unsubscribe", "sessionId" }`
/// or `{ "type": "subscribe", "scope": "sessions" }`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Request {
    #[serde(rename = "type")]
    kind: String,
    session_id: Option<SessionId>,
    scope: Option<String>,
}

pub(super) async fn upgrade(State(state): State<super::Observatory>, ws: WebSocketUpgrade) -> Response {
    let hub = state.hub.clone();
    // A small read buffer: an idle socket then costs a few KiB, not the
    // 128 KiB tungstenite allocates up front (a client only sends short
    // subscribe messages).
    // And a bound on what waits to go out: frames the client does not
    // read pile up there (a send completes once its frame is buffered),
    // and past it the socket is dropped.
    ws.max_message_size(64 << 10)
        .read_buffer_size(4 << 10)
        .max_write_buffer_size(OUT_BUFFER)
        .on_upgrade(move |socket| serve(hub, socket))
}

/// What one socket's client asked to watch.
#[derive(Default)]
struct Watching {
    sessions: bool,
    ids: HashSet<String>,
}

impl Watching {
    fn wants(&self, session: Option<&str>) -> bool {
        self.sessions || session.is_some_and(|s| self.ids.contains(s))
    }
}

async fn serve(hub: Hub, mut socket: WebSocket) {
    let mut frames = hub.frames.subscribe();
    let mut watching = Watching::default();
    loop {
        tokio::select! {
            incoming = socket.recv() => {
                let Some(Ok(message)) = incoming else { return };
                let text = match message {
                    Message::Text(t) => t,
                    Message::Close(_) => return,
                    _ => continue,
                };
                let reply = match serde_json::from_str::<Request>(&text) {
                    Ok(r) => handle(&hub, &mut watching, r).await,
                    Err(e) => Some(error_frame(&format!("not a subscribe message: {e}"))),
                };
                if let Some(reply) = reply
                    && !send(&mut socket, reply, hub.send_wait).await
                {
                    return;
                }
            }
            frame = frames.recv() => match frame {
                Ok(frame) => {
                    if watching.wants(frame.0.as_deref()) && !send(&mut socket, frame.1.clone(), hub.send_wait).await {
                        tracing::debug!("dropped a WebSocket that does not read");
                        return;
                    }
                }
                // Fell behind: dropped, so that it never holds the others up.
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let _ = send(&mut socket, error_frame("too far behind; reconnect"), hub.send_wait).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            },
            () = hub.shutdown.wait() => {
                let _ = socket.send(Message::Close(None)).await;
                return;
            }
        }
    }
}

/// Act on a client's message: the answer to send it, if any.
async fn handle(hub: &Hub, watching: &mut Watching, request: Request) -> Option<Utf8Bytes> {
    match (request.kind.as_str(), request.session_id, request.scope.as_deref()) {
        ("subscribe", _, Some("sessions")) => {
            watching.sessions = true;
            None
        }
        ("unsubscribe", _, Some("sessions")) => {
            watching.sessions = false;
            None
        }
        ("subscribe", Some(id), _) => {
            let id = id.into_string();
            let store = hub.store.clone();
            let sid = id.clone();
            // The texts alone past the frame's bound: the rest is not read.
            let snapshot = tokio::task::spawn_blocking(move || {
                store
                    .session_cut(&sid, Some(SNAPSHOT_MAX))
                    .map(|(session, thoughts, whole)| {
                        let frame = whole.then(|| {
                            let payload = SessionSnapshotPayload::cut(&session, &thoughts);
                            serde_json::json!({ "type": "session_snapshot", "sessionId": sid, "payload": payload })
                                .to_string()
                        });
                        (frame, session.thought_count)
                    })
            })
            .await;
            match snapshot {
                Ok(Ok((frame, count))) => {
                    watching.ids.insert(id.clone());
                    let frame = frame.filter(|f| f.len() <= SNAPSHOT_MAX);
                    let Some(frame) = frame else {
                        let message = format!(
                            "session {id} is too large for a snapshot ({count} thoughts; a snapshot is at most \
                             {SNAPSHOT_MAX} bytes): read it from /api/sessions/{id}; its new thoughts still come here"
                        );
                        return Some(
                            serde_json::json!({ "type": "error", "sessionId": id, "payload": { "message": message } })
                                .to_string()
                                .into(),
                        );
                    };
                    Some(frame.into())
                }
                Ok(Err(e)) => Some(error_frame(&e.to_string())),
                Err(e) => Some(error_frame(&e.to_string())),
            }
        }
        ("unsubscribe", Some(id), _) => {
            watching.ids.remove(id.as_str());
            None
        }
        _ => Some(error_frame(
            "expected {\"type\":\"subscribe\",\"sessionId\":...} or {\"type\":\"subscribe\",\"scope\":\"sessions\"}",
        )),
    }
}

fn error_frame(message: &str) -> Utf8Bytes {
    serde_json::json!({ "type": "error", "payload": { "message": message } })
        .to_string()
        .into()
}

/// Send one frame; false when the socket is gone or did not take it
/// within `wait`.
async fn send(socket: &mut WebSocket, text: Utf8Bytes, wait: Duration) -> bool {
    matches!(
        tokio::time::timeout(wait, socket.send(Message::Text(text))).await,
        Ok(Ok(()))
    )
}
