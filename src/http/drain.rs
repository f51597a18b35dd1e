//! The MCP calls in flight over HTTP, so that a shutdown answers them
//! before it ends the MCP sessions: ending a session drops the answers of
//! its calls still running, and a write among them may commit all the
//! same, which a client told nothing would send again.
//!
//! A call counts from the moment its POST reaches `/mcp` until its
//! response body has been sent (or dropped with its connection): a
//! stateful session answers on a stream that ends after the answer. Once
//! the shutdown has closed the count, a new POST is refused before the MCP
//! library sees it, so none can start after the sessions end.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Notify;

#[derive(Debug, Default)]
pub(super) struct Drain {
    /// Calls in flight, and whether the count is closed. One lock for
    /// both: a call entering and the shutdown closing are then ordered.
    state: Mutex<(usize, bool)>,
    idle: Notify,
}

/// One call in flight; leaving the count when dropped.
pub(super) struct Entered(Arc<Drain>);

impl Drop for Entered {
    fn drop(&mut self) {
        let Ok(mut state) = self.0.state.lock() else {
            return;
        };
        state.0 = state.0.saturating_sub(1);
        if state.0 == 0 {
            self.0.idle.notify_waiters();
        }
    }
}

impl Drain {
    /// Count a call in, unless the shutdown has closed the count.
    fn enter(self: &Arc<Self>) -> Option<Entered> {
        let mut state = self.state.lock().ok()?;
        if state.1 {
            return None;
        }
        state.0 += 1;
        Some(Entered(self.clone()))
    }

    /// Take no more calls, and resolve once those in flight are done.
    pub(super) async fn close(&self) {
        loop {
            let idle = self.idle.notified();
            tokio::pin!(idle);
            // Registered before the count is read, so a last call leaving
            // in between is seen.
            idle.as_mut().enable();
            {
                let Ok(mut state) = self.state.lock() else {
                    return;
                };
                state.1 = true;
                if state.0 == 0 {
                    return;
                }
            }
            idle.await;
        }
    }
}

/// Middleware on `/mcp`: count each POST until its answer has been sent,
/// and refuse one that comes once the shutdown has closed the count.
pub(super) async fn count(State(drain): State<Arc<Drain>>, request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let Some(entered) = drain.enter() else {
        let error = serde_json::json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {
                "code": -32000,
                "message": "the server is shutting down; nothing was done: send the request again once it is back",
            },
        });
        return (StatusCode::SERVICE_UNAVAILABLE, axum::Json(error)).into_response();
    };
    let (parts, body) = next.run(request).await.into_parts();
    Response::from_parts(
        parts,
        Body::new(Counted {
            inner: body,
            _entered: entered,
        }),
    )
}

/// A response body that keeps its call counted until it is dropped.
struct Counted {
    inner: Body,
    _entered: Entered,
}

impl HttpBody for Counted {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn closing_waits_for_the_calls_in_flight_and_refuses_new_ones() {
        let drain = Arc::new(Drain::default());
        let first = drain.enter().expect("open");
        let second = drain.enter().expect("open");
        let closing = tokio::spawn({
            let drain = drain.clone();
            async move { drain.close().await }
        });
        // Closed once the closing task has run (an entry taken meanwhile
        // leaves again at once).
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while let Some(entered) = drain.enter() {
                drop(entered);
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the count closes");
        drop(first);
        tokio::task::yield_now().await;
        assert!(!closing.is_finished(), "one call is still in flight");
        drop(second);
        tokio::time::timeout(std::time::Duration::from_secs(5), closing)
            .await
            .expect("closed once the last call left")
            .expect("join");
        // With nothing in flight it resolves at once.
        tokio::time::timeout(std::time::Duration::from_secs(5), Drain::default().close())
            .await
            .expect("closed at once");
    }
}
