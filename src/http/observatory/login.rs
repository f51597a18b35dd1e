//! The login form: the token typed once, answered with a cookie that holds
//! a secret of this process rather than the token (a browser sends it to
//! every port of the host), which the page's scripts cannot read
//! (`HttpOnly`) and no other site's page can send (`SameSite=Strict`).
//! Failed attempts slow down the next ones from their address
//! ([`crate::http::throttle`]).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Extension;
use axum::Form;
use axum::extract::{ConnectInfo, FromRequest, Request};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use super::super::auth::COOKIE;
use super::super::conn::Limits;
use super::super::throttle::Throttle;
use crate::http::Guard;

const PAGE: &str = include_str!("assets/login.html");

/// The most a login body may be: a token and its field name.
const BODY_MAX: usize = 16 << 10;

pub(super) async fn form() -> Html<String> {
    Html(PAGE.replace("{{message}}", ""))
}

#[derive(Deserialize)]
pub(super) struct Login {
    token: String,
}

fn page(status: StatusCode, message: &str) -> Response {
    let page = PAGE.replace("{{message}}", &format!("<p class=\"error\">{message}</p>"));
    (status, Html(page)).into_response()
}

pub(super) async fn submit(
    Extension(guard): Extension<Arc<Guard>>,
    Extension(throttle): Extension<Arc<Throttle>>,
    request: Request,
) -> Response {
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip());
    // The form is a few dozen bytes: it has as long to arrive as headers
    // have, or a client trickling it would hold a connection without the
    // token.
    let deadline = request
        .extensions()
        .get::<Limits>()
        .map_or(Limits::for_open_files(u64::MAX).header_read, |l| l.header_read);
    let (parts, body) = request.into_parts();
    let bytes = match tokio::time::timeout(deadline, axum::body::to_bytes(body, BODY_MAX)).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(_)) => return page(StatusCode::PAYLOAD_TOO_LARGE, "The form was too large, or cut off."),
        Err(_) => return page(StatusCode::REQUEST_TIMEOUT, "The form took too long to arrive."),
    };
    let request = Request::from_parts(parts, axum::body::Body::from(bytes));
    let login = match Form::<Login>::from_request(request, &()).await {
        Ok(Form(login)) => login,
        Err(rejection) => return rejection.into_response(),
    };
    // Every connection is given its address (src/http/conn.rs); without
    // one, all attempts share a turn.
    let peer = peer.unwrap_or(std::net::IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED));
    let Ok(turn) = throttle.turn(peer) else {
        let mut response = page(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many sign-in attempts from this address at once: wait a few seconds and try again.",
        );
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("2"));
        return response;
    };
    turn.wait().await;
    if !guard.token.matches(login.token.trim()) {
        turn.failed().await;
        return page(StatusCode::UNAUTHORIZED, "That is not this server's token.");
    }
    turn.succeeded();
    let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", guard.cookie.as_str());
    match HeaderValue::from_str(&cookie) {
        Ok(cookie) => (
            StatusCode::SEE_OTHER,
            [
                (header::SET_COOKIE, cookie),
                (header::LOCATION, HeaderValue::from_static("/")),
            ],
        )
            .into_response(),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "the token cannot be put in a cookie").into_response(),
    }
}
