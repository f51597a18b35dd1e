//! Who may talk to the HTTP server: one bearer token, always, even on
//! loopback (decision 0030), and `Host` and `Origin` checks against DNS
//! rebinding.
//!
//! The token comes from `THOUGHTBOX_TOKEN` or `--token-file`; on a loopback
//! address without either, from a file beside the database, created (mode
//! 0600) on first start. Any other address without a token given refuses to
//! start. MCP clients send `Authorization: Bearer <token>`; the Observatory's
//! page sends the cookie its login form set (`HttpOnly`, `SameSite=Strict`;
//! a secret of the process, not the token), which `/mcp` does not accept. The token is never logged, and never read
//! from a URL.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use subtle::ConstantTimeEq;

use crate::error::{Error, Result};

/// The name of the Observatory's cookie.
pub(super) const COOKIE: &str = "thoughtbox_token";

/// Given tokens shorter than this are refused: a guessable token on a
/// network address is no protection.
const MIN_TOKEN: usize = 16;

/// The bearer token. Its `Debug` never shows it.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// Whether `given` is the token, compared in constant time.
    pub(super) fn matches(&self, given: &str) -> bool {
        self.0.as_bytes().ct_eq(given.as_bytes()).into()
    }

    pub(super) fn as_str(&self) -> &str {
        &self.0
    }
}

/// Where the token came from, said on stderr at start (never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenSource {
    Environment,
    File(PathBuf),
    /// Created now, beside the database.
    Created(PathBuf),
}

/// The token for a server on `addr`: the `--token-file`, else
/// `THOUGHTBOX_TOKEN` (`from_env`), else (loopback only) the file beside
/// the database `db`, created when missing.
pub fn resolve_token(
    addr: SocketAddr,
    from_env: Option<String>,
    token_file: Option<&Path>,
    db: &Path,
) -> Result<(Token, TokenSource)> {
    if let Some(path) = token_file {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::io(format!("reading the token file {}", path.display()), e))?;
        warn_if_others_can_read(path);
        return Ok((
            given(text.trim(), "--token-file")?,
            TokenSource::File(path.to_path_buf()),
        ));
    }
    if let Some(text) = from_env.filter(|t| !t.trim().is_empty()) {
        return Ok((given(text.trim(), "THOUGHTBOX_TOKEN")?, TokenSource::Environment));
    }
    if !addr.ip().is_loopback() {
        return Err(Error::invalid(
            "http",
            format!(
                "refusing to serve HTTP on {addr} without a token: it is not a loopback address, so other machines \
                 can reach it. Give the token with THOUGHTBOX_TOKEN or --token-file (at least {MIN_TOKEN} \
                 characters; e.g. `openssl rand -hex 32`), or serve on 127.0.0.1"
            ),
        ));
    }
    let path = token_path(db);
    match read_token_file(&path)? {
        Some(token) => Ok((token, TokenSource::File(path))),
        None => {
            let token = create_token_file(&path)?;
            Ok((token, TokenSource::Created(path)))
        }
    }
}

/// The token file of the ledger `db`: beside it, `<stem>.token`.
pub fn token_path(db: &Path) -> PathBuf {
    db.with_extension("token")
}

fn given(text: &str, from: &str) -> Result<Token> {
    if text.chars().count() < MIN_TOKEN || text.chars().any(|c| c.is_control() || c == ' ') {
        return Err(Error::invalid(
            "token",
            format!(
                "the token from {from} must be at least {MIN_TOKEN} characters, without spaces or control \
                 characters (e.g. `openssl rand -hex 32`)"
            ),
        ));
    }
    Ok(Token(text.into()))
}

/// The token kept in `path`, if the file exists.
fn read_token_file(path: &Path) -> Result<Option<Token>> {
    match std::fs::read_to_string(path) {
        Ok(text) => {
            warn_if_others_can_read(path);
            given(text.trim(), &path.display().to_string()).map(Some)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(format!("reading the token file {}", path.display()), e)),
    }
}

/// Say so when a token file may be read by other users of the machine
/// (mode beyond 0600): anyone who reads it can run notebook cells here.
fn warn_if_others_can_read(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(
                "the token file {} can be read by other users (mode {:o}); chmod 600 it",
                path.display(),
                meta.permissions().mode() & 0o777
            );
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

/// Mint a token and write it to `path`, readable by its owner only. Two
/// servers starting at once: the second reads what the first wrote.
fn create_token_file(path: &Path) -> Result<Token> {
    use std::io::Write;
    let token = mint()?;
    let mut opts = crate::private::file_options();
    opts.write(true).create_new(true);
    match opts.open(path) {
        Ok(mut file) => {
            file.write_all(format!("{}\n", token.as_str()).as_bytes())
                .and_then(|()| file.sync_all())
                .map_err(|e| Error::io(format!("writing the token file {}", path.display()), e))?;
            Ok(token)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // Another server wrote it just now; it may still be writing.
            for _ in 0..50 {
                if let Some(token) = read_token_file(path).ok().flatten() {
                    return Ok(token);
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            read_token_file(path)?.ok_or_else(|| Error::invalid("token", "the token file is empty"))
        }
        Err(e) => Err(Error::io(format!("creating the token file {}", path.display()), e)),
    }
}

/// 32 bytes from the operating system's random source, as hex.
fn mint() -> Result<Token> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| Error::Internal(format!("no random bytes for the token: {e}")))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(Token(hex.into()))
}

/// What every request is checked against.
#[derive(Debug, Clone)]
pub struct Guard {
    pub token: Token,
    /// What the Observatory's cookie holds once the token was typed: a
    /// secret of this process, not the token, since a browser sends a
    /// cookie to every port of the host, and so to other local servers.
    pub(super) cookie: Token,
    /// Host names accepted in `Host` besides `localhost` and IP literals
    /// (`--allowed-host`).
    pub hosts: Vec<String>,
}

/// The host of a `Host` header or an origin's authority, without its port
/// or the brackets of an IPv6 literal.
fn host_of(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    authority.rsplit_once(':').map_or(authority, |(host, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) {
            host
        } else {
            authority
        }
    })
}

impl Guard {
    /// A guard for `token`, with a new cookie secret.
    pub fn new(token: Token, hosts: Vec<String>) -> Result<Guard> {
        Ok(Guard {
            token,
            cookie: mint()?,
            hosts,
        })
    }

    /// DNS rebinding needs a name that resolves to this machine: an IP
    /// literal cannot be one, `localhost` is this machine, and any other
    /// name must have been allowed.
    fn host_allowed(&self, host: &str) -> bool {
        let host = host_of(host.trim()).trim_end_matches('.');
        host.parse::<IpAddr>().is_ok()
            || host.eq_ignore_ascii_case("localhost")
            || self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }

    /// A page of another origin may not call this server: an `Origin`
    /// (sent by browsers) must be this server's own.
    fn origin_allowed(&self, origin: &str, host: Option<&str>) -> bool {
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        if !matches!(scheme, "http" | "https") {
            return false;
        }
        match host {
            Some(host) => authority.eq_ignore_ascii_case(host) && self.host_allowed(authority),
            None => self.host_allowed(authority),
        }
    }

    /// Why a request is refused before its token is looked at, if it is.
    fn refusal(&self, headers: &HeaderMap) -> Option<&'static str> {
        let host = match headers.get(header::HOST).map(HeaderValue::to_str) {
            Some(Ok(h)) => Some(h),
            Some(Err(_)) => return Some("the Host header is not text"),
            None => None,
        };
        if host.is_some_and(|h| !self.host_allowed(h)) {
            return Some(
                "the Host header names a host this server does not answer to (start it with --allowed-host NAME to \
                 allow one)",
            );
        }
        match headers.get(header::ORIGIN).map(HeaderValue::to_str) {
            None => None,
            Some(Ok(origin)) if self.origin_allowed(origin, host) => None,
            Some(_) => Some("requests from pages of another origin are refused"),
        }
    }

    fn bearer(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::AUTHORIZATION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .filter_map(|v| v.split_once(' '))
            .any(|(scheme, token)| scheme.eq_ignore_ascii_case("bearer") && self.token.matches(token.trim()))
    }

    pub(super) fn cookie(&self, headers: &HeaderMap) -> bool {
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| name == COOKIE && self.cookie.matches(value))
    }
}

/// Paths served without the token: the login form, its style (a file, for
/// the Content-Security-Policy allows no inline style) and what it posts to.
fn public(method: &Method, path: &str) -> bool {
    (path == "/login" && (method == Method::GET || method == Method::POST))
        || (path == "/login.css" && method == Method::GET)
}

/// The middleware in front of every route: Host and Origin, then the token
/// (the bearer header anywhere; the cookie outside `/mcp`). A refused request
/// reaches nothing behind it.
pub(super) async fn check(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    if let Some(why) = guard.refusal(request.headers()) {
        return refuse(StatusCode::FORBIDDEN, why);
    }
    let path = request.uri().path();
    if public(request.method(), path) {
        return next.run(request).await;
    }
    let mcp = path == "/mcp" || path.starts_with("/mcp/");
    if guard.bearer(request.headers()) || (!mcp && guard.cookie(request.headers())) {
        return next.run(request).await;
    }
    if !mcp && request.method() == Method::GET && path == "/" {
        // A browser opening the Observatory: the login form first.
        return (StatusCode::SEE_OTHER, [(header::LOCATION, "/login")]).into_response();
    }
    let mut response = refuse(
        StatusCode::UNAUTHORIZED,
        "a bearer token is required: send the header `Authorization: Bearer <token>` (the token is in \
         THOUGHTBOX_TOKEN, the --token-file, or the file beside the database that the server named at start)",
    );
    response.headers_mut().insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"thoughtbox\""),
    );
    response
}

/// A refusal as a small JSON body.
fn refuse(status: StatusCode, why: &str) -> Response {
    (status, axum::Json(serde_json::json!({ "error": why }))).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guard() -> Guard {
        Guard {
            token: Token("0123456789abcdef0123".into()),
            cookie: Token("cookie-secret-0123456789".into()),
            hosts: vec!["ledger.example".into()],
        }
    }

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(k.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn hosts_that_a_rebinding_name_could_take_are_refused() {
        let g = guard();
        for ok in [
            "127.0.0.1:1731",
            "localhost:1731",
            "LOCALHOST",
            "[::1]:1731",
            "10.1.2.3",
            "ledger.example:1731",
        ] {
            assert!(g.refusal(&headers(&[(header::HOST, ok)])).is_none(), "{ok}");
        }
        for bad in ["evil.example:1731", "localhost.evil.example", "127.0.0.1.nip.io"] {
            assert!(g.refusal(&headers(&[(header::HOST, bad)])).is_some(), "{bad}");
        }
    }

    #[test]
    fn only_this_servers_own_origin_passes() {
        let g = guard();
        let host = (header::HOST, "127.0.0.1:1731");
        assert!(
            g.refusal(&headers(&[host.clone(), (header::ORIGIN, "http://127.0.0.1:1731")]))
                .is_none()
        );
        for bad in ["http://evil.example", "null", "http://127.0.0.1:9999", "file://"] {
            assert!(
                g.refusal(&headers(&[host.clone(), (header::ORIGIN, bad)])).is_some(),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_token_is_read_from_the_header_or_the_cookie_only() {
        let g = guard();
        assert!(g.bearer(&headers(&[(header::AUTHORIZATION, "Bearer 0123456789abcdef0123")])));
        assert!(g.bearer(&headers(&[(header::AUTHORIZATION, "bearer 0123456789abcdef0123")])));
        assert!(!g.bearer(&headers(&[(header::AUTHORIZATION, "Bearer 0123456789abcdef012")])));
        assert!(!g.bearer(&headers(&[(header::AUTHORIZATION, "Basic 0123456789abcdef0123")])));
        assert!(g.cookie(&headers(&[(
            header::COOKIE,
            "a=b; thoughtbox_token=cookie-secret-0123456789"
        )])));
        assert!(!g.cookie(&headers(&[(header::COOKIE, "thoughtbox_token=wrong")])));
        // The token itself is no cookie, and the cookie's secret no token.
        assert!(!g.cookie(&headers(&[(header::COOKIE, "thoughtbox_token=0123456789abcdef0123")])));
        assert!(!g.bearer(&headers(&[(header::AUTHORIZATION, "Bearer cookie-secret-0123456789")])));
        let minted = Guard::new(g.token.clone(), vec![]).unwrap();
        assert!(!minted.cookie.matches(minted.token.as_str()));
        assert_ne!(
            minted.cookie.as_str(),
            Guard::new(g.token.clone(), vec![]).unwrap().cookie.as_str()
        );
    }

    #[test]
    fn a_loopback_server_makes_its_token_file_once_and_others_need_one() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("ledger.db");
        let local: SocketAddr = "127.0.0.1:1731".parse().unwrap();
        let (first, source) = resolve_token(local, None, None, &db).unwrap();
        assert_eq!(source, TokenSource::Created(dir.path().join("ledger.token")));
        assert_eq!(first.as_str().len(), 64);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join("ledger.token"))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let (again, source) = resolve_token(local, None, None, &db).unwrap();
        assert!(again.matches(first.as_str()));
        assert_eq!(source, TokenSource::File(dir.path().join("ledger.token")));
        let open: SocketAddr = "0.0.0.0:1731".parse().unwrap();
        let e = resolve_token(open, None, None, &db).unwrap_err().to_string();
        assert!(e.contains("refusing") && e.contains("THOUGHTBOX_TOKEN"), "{e}");
        let e = resolve_token(open, Some("short".into()), None, &db)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 16"), "{e}");
        let (given, source) = resolve_token(open, Some("a-long-enough-token-here".into()), None, &db).unwrap();
        assert!(given.matches("a-long-enough-token-here"));
        assert_eq!(source, TokenSource::Environment);
        assert!(!format!("{given:?}").contains("long-enough"));
    }
}
