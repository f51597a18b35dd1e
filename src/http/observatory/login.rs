//! The login form: the token typed once, answered with a cookie that holds
//! a secret of this process rather than the token (a browser sends it to
//! every port of the host), which the page's scripts cannot read
//! (`HttpOnly`) and no other site's page can send (`SameSite=Strict`).

use std::sync::Arc;

use axum::Extension;
use axum::Form;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use serde::Deserialize;

use super::super::auth::COOKIE;
use crate::http::Guard;

const PAGE: &str = include_str!("assets/login.html");

pub(super) async fn form() -> Html<String> {
    Html(PAGE.replace("{{message}}", ""))
}

#[derive(Deserialize)]
pub(super) struct Login {
    token: String,
}

pub(super) async fn submit(Extension(guard): Extension<Arc<Guard>>, Form(login): Form<Login>) -> Response {
    let token = login.token.trim();
    if !guard.token.matches(token) {
        let page = PAGE.replace("{{message}}", "<p class=\"error\">That is not this server's token.</p>");
        return (StatusCode::UNAUTHORIZED, Html(page)).into_response();
    }
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
