//! The Observatory: a page at `/` that watches reasoning happen, its JSON
//! API under `/api`, and its WebSocket at `/ws` (seed 000's Observatory
//! payloads). Its assets are compiled into the binary.

mod login;

use std::sync::Arc;

use axum::Router;
use axum::routing::get;

use crate::gateway::Gateway;
use crate::shutdown::Shutdown;

/// The Observatory's routes (the guard in front checks the token).
pub(super) fn routes(_gateway: &Gateway, _shutdown: Arc<Shutdown>) -> Router {
    Router::new().route("/login", get(login::form).post(login::submit))
}
