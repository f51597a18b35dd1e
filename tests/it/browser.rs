//! The Observatory's page in headless Chromium (Debian's `chromium` and
//! `chromium-driver`, installed by `.ci/run`), driven through chromedriver's
//! WebDriver API: the page lists sessions, a thought recorded through MCP
//! appears in the open page, a branch is drawn as a branch, search finds a
//! thought. With THOUGHTBOX_SCREENSHOTS=DIR, screenshots of the list and of
//! a session's graph are saved there (the ones in docs/ come from this).

use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

use crate::http::HttpServer;

/// The W3C WebDriver element key.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process and one browser session on it.
struct Browser {
    driver: tokio::process::Child,
    base: String,
    session: String,
    http: reqwest::Client,
    _profile: tempfile::TempDir,
}

impl Browser {
    async fn start() -> Browser {
        let chromedriver = ["/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .expect("chromedriver is not installed: apt-get install -y chromium chromium-driver (as .ci/run does)");
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").expect("free port");
            l.local_addr().expect("addr").port()
        };
        let driver = tokio::process::Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start chromedriver");
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = http.get(format!("{base}/status")).send().await;
            if let Ok(r) = ready
                && let Ok(v) = r.json::<Value>().await
                && v["value"]["ready"] == true
            {
                break;
            }
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().expect("profile dir");
        let args = json!([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1400,900",
            format!("--user-data-dir={}", profile.path().display()),
        ]);
        let created: Value = http
            .post(format!("{base}/session"))
            .json(&json!({ "capabilities": { "alwaysMatch": {
                "browserName": "chrome",
                "goog:chromeOptions": { "binary": "/usr/bin/chromium", "args": args } } } }))
            .send()
            .await
            .expect("new browser session")
            .json()
            .await
            .expect("JSON");
        let session = created["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {created}"))
            .to_string();
        Browser {
            driver,
            base,
            session,
            http,
            _profile: profile,
        }
    }

    async fn command(&self, method: reqwest::Method, path: &str, body: Value) -> Value {
        let url = format!("{}/session/{}{path}", self.base, self.session);
        let mut request = self.http.request(method.clone(), url);
        if method == reqwest::Method::POST {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.expect("WebDriver").json().await.expect("JSON");
        if answer["value"]["error"].is_string() {
            panic!("WebDriver {path}: {answer}");
        }
        answer["value"].clone()
    }

    async fn go(&self, url: &str) {
        self.command(reqwest::Method::POST, "/url", json!({ "url": url })).await;
    }

    async fn find(&self, css: &str) -> String {
        let found = self
            .command(
                reqwest::Method::POST,
                "/element",
                json!({ "using": "css selector", "value": css }),
            )
            .await;
        found[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {found}"))
            .to_string()
    }

    async fn type_into(&self, css: &str, text: &str) {
        let e = self.find(css).await;
        self.command(
            reqwest::Method::POST,
            &format!("/element/{e}/value"),
            json!({ "text": text }),
        )
        .await;
    }

    /// Click the element `css` names, found when clicked: the list and the
    /// graph are drawn again as updates arrive, which would leave an
    /// element found earlier stale.
    async fn click(&self, css: &str) {
        let script = format!(
            "const e = document.querySelector({css:?}); if (!e) return false; \
             if (typeof e.click === 'function') e.click(); \
             else e.dispatchEvent(new MouseEvent('click', {{ bubbles: true }})); return true;"
        );
        assert_eq!(
            self.script(&script).await,
            Value::Bool(true),
            "nothing to click at {css}"
        );
    }

    async fn script(&self, script: &str) -> Value {
        self.command(
            reqwest::Method::POST,
            "/execute/sync",
            json!({ "script": script, "args": [] }),
        )
        .await
    }

    /// Wait (at most a minute) until `script` returns true.
    async fn until(&self, what: &str, script: &str) -> Duration {
        let start = Instant::now();
        while self.script(script).await != Value::Bool(true) {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the page never showed {what}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        start.elapsed()
    }

    /// Save a screenshot as `name` in THOUGHTBOX_SCREENSHOTS, when set.
    async fn screenshot(&self, name: &str) {
        let Some(dir) = std::env::var_os("THOUGHTBOX_SCREENSHOTS") else {
            return;
        };
        let png = self.command(reqwest::Method::GET, "/screenshot", Value::Null).await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(png.as_str().expect("base64"))
            .expect("PNG");
        std::fs::write(std::path::Path::new(&dir).join(name), bytes).expect("write screenshot");
    }

    async fn quit(mut self) {
        let _ = self
            .http
            .delete(format!("{}/session/{}", self.base, self.session))
            .send()
            .await;
        let _ = self.driver.kill().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_lists_draws_updates_and_searches_sessions() {
    let server = HttpServer::start().await;
    let s = server.legacy().await;
    let other = s.ready("Caching the token refresh").await;
    s.ok(
        "start_new",
        json!({ "sessionTitle": "Unrelated", "newWork": { "project": "web" } }),
    )
    .await;
    s.thought(json!({ "thought": "A zeppelin carries the idea.", "nextThoughtNeeded": true }))
        .await;
    let id = s.ready("Why the build is slow").await;
    for text in [
        "Link time dominates.",
        "Measure each crate.",
        "Split the largest crate.",
    ] {
        s.thought(json!({ "thought": text, "nextThoughtNeeded": true })).await;
    }
    s.thought(
        json!({ "thought": "Or cache the artefacts.", "branchId": "cache", "branchFromThought": 2,
        "nextThoughtNeeded": true }),
    )
    .await;
    s.thought(json!({ "thought": "A shared cache for CI.", "branchId": "cache", "nextThoughtNeeded": true }))
        .await;
    s.thought(
        json!({ "thought": "Linking, not compiling, dominates.", "isRevision": true, "revisesThought": 1,
        "nextThoughtNeeded": true }),
    )
    .await;
    let base = server.url.trim_end_matches("/mcp").to_string();

    let browser = Browser::start().await;
    // Not signed in: the login form.
    browser.go(&format!("{base}/")).await;
    browser
        .until("the login form", "return !!document.querySelector('#token')")
        .await;
    browser.type_into("#token", &server.token).await;
    browser.click("button[type=submit]").await;
    browser
        .until(
            "three sessions",
            "return document.querySelectorAll('#sessions li[data-session-id]').length === 3",
        )
        .await;
    let first = browser
        .script("return document.querySelector('#sessions li').dataset.sessionId")
        .await;
    assert_eq!(first, id.as_str(), "newest first");
    browser
        .until(
            "the live connection",
            "return document.querySelector('#live').textContent === 'live'",
        )
        .await;

    // One session as a graph: main chain, the branch drawn as a branch.
    browser.click(&format!("#sessions li[data-session-id='{id}']")).await;
    browser
        .until(
            "the session's graph",
            "return document.querySelectorAll('#graph g.node').length === 6",
        )
        .await;
    let shape = browser
        .script(
            "return { branch: document.querySelectorAll('#graph g.node.branch').length, \
             fork: !!document.querySelector('#graph path.fork[data-fork=cache]'), \
             revises: document.querySelectorAll('#graph path.revises').length }",
        )
        .await;
    assert_eq!(shape, json!({ "branch": 2, "fork": true, "revises": 1 }));
    // A thought's text on click.
    browser.click("#graph g.node[data-number='2']:not(.branch)").await;
    browser
        .until(
            "the thought's text",
            "return document.querySelector('#detail-text').textContent === 'Measure each crate.'",
        )
        .await;
    browser.screenshot("observatory-session.png").await;

    // Recorded through MCP: it appears in the open page, and in the list.
    s.thought(json!({ "sessionId": id, "thought": "Try mold as the linker.", "nextThoughtNeeded": true }))
        .await;
    let took = browser
        .until(
            "the new thought",
            "return [...document.querySelectorAll('#graph g.node')].some(n => n.textContent.includes('mold'))",
        )
        .await;
    eprintln!("a thought recorded through MCP appeared in the page after {took:?}");
    browser
        .until(
            "the list's count",
            &format!(
                "return document.querySelector(\"#sessions li[data-session-id='{id}'] .meta\").textContent.startsWith('7 thoughts')"
            ),
        )
        .await;

    // Search finds a thought, and the list shows only its session.
    browser.type_into("#search", "zeppelin").await;
    browser
        .until(
            "the search result",
            "const li = document.querySelectorAll('#sessions li'); \
             return li.length === 1 && li[0].textContent.includes('zeppelin')",
        )
        .await;
    browser
        .type_into(
            "#search",
            "\u{e003}\u{e003}\u{e003}\u{e003}\u{e003}\u{e003}\u{e003}\u{e003}",
        )
        .await;
    browser
        .until(
            "the whole list again",
            "return document.querySelectorAll('#sessions li').length === 3",
        )
        .await;
    // A child thread of the open session: a link to it, and back.
    let child = s
        .ok(
            "thread",
            json!({ "subOperation": "spawn", "parentId": id, "title": "Measure the linker", "objective": "o" }),
        )
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    browser.click(&format!("#sessions li[data-session-id='{other}']")).await;
    browser.click(&format!("#sessions li[data-session-id='{id}']")).await;
    browser
        .until(
            "the graph again",
            "return document.querySelectorAll('#graph g.node').length === 7",
        )
        .await;
    browser
        .until(
            "the link to the child thread",
            &format!(
                "const a = document.querySelector(\"#session-thread .thread-children a[data-thread-id='{child}']\"); \
                 return !!a && a.textContent === 'Measure the linker'"
            ),
        )
        .await;
    browser
        .click(&format!("#session-thread .thread-children a[data-thread-id='{child}']"))
        .await;
    browser
        .until(
            "the child thread, with its parent",
            &format!(
                "return document.querySelector('#session-title').textContent === 'Measure the linker' && \
                 !!document.querySelector(\"#session-thread .thread-parent a[data-thread-id='{id}']\")"
            ),
        )
        .await;
    browser
        .click(&format!("#session-thread .thread-parent a[data-thread-id='{id}']"))
        .await;
    browser
        .until(
            "the parent again",
            "return document.querySelector('#session-title').textContent === 'Why the build is slow' && \
             document.querySelectorAll('#graph g.node').length === 7",
        )
        .await;
    browser.screenshot("observatory-list.png").await;
    browser.quit().await;
}

/// Open the page and sign in with the token.
async fn signed_in(browser: &Browser, server: &HttpServer) {
    browser.go(&format!("{}/", server.url.trim_end_matches("/mcp"))).await;
    browser
        .until("the login form", "return !!document.querySelector('#token')")
        .await;
    browser.type_into("#token", &server.token).await;
    browser.click("button[type=submit]").await;
}

/// More sessions than a page: the list says how many it shows of how many,
/// and "More" brings the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_counts_its_sessions_and_pages_through_them() {
    let server = HttpServer::start().await;
    let s = server.legacy().await;
    let oldest = s.ready("Session 0").await;
    for i in 1..53 {
        s.ok("start_new", json!({ "sessionTitle": format!("Session {i}") }))
            .await;
    }
    s.thought(json!({ "thought": "One.", "nextThoughtNeeded": true })).await;
    s.thought(json!({ "thought": "Aside.", "branchId": "b", "branchFromThought": 1, "nextThoughtNeeded": true }))
        .await;
    let browser = Browser::start().await;
    signed_in(&browser, &server).await;
    browser
        .until(
            "a page of sessions, counted",
            "return document.querySelectorAll('#sessions li').length === 50 && \
             document.querySelector('#list-count').textContent === '50 of 53' && \
             !document.querySelector('#more').hidden",
        )
        .await;
    let meta = browser
        .script("return document.querySelector('#sessions li .meta').textContent")
        .await;
    assert!(
        meta.as_str().is_some_and(|m| m.starts_with("2 thoughts · 1 branch ·")),
        "{meta}"
    );
    browser.click("#more").await;
    browser
        .until(
            "every session",
            &format!(
                "const ids = [...document.querySelectorAll('#sessions li')].map(li => li.dataset.sessionId); \
                 return ids.length === 53 && new Set(ids).size === 53 && ids.includes('{oldest}') && \
                 document.querySelector('#list-count').textContent === '53 of 53' && \
                 document.querySelector('#more').hidden"
            ),
        )
        .await;
    // A session created now is counted too.
    s.ok("start_new", json!({ "sessionTitle": "Session 53" })).await;
    browser
        .until(
            "the new session, counted",
            "return document.querySelectorAll('#sessions li').length === 54 && \
             document.querySelector('#list-count').textContent === '54 of 54'",
        )
        .await;
    browser.quit().await;
}

/// The page keeps up: a long thought is shown whole, a completed session
/// that gets a new thought is active again, a deleted session leaves the
/// list when the page finds it gone, and a socket closed on a page whose
/// cookie the server no longer takes sends the user to the sign-in form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_keeps_up_with_long_thoughts_reopens_deletes_and_sign_outs() {
    let server = HttpServer::start().await;
    let s = server.legacy().await;
    let doomed = s.ready("To be deleted").await;
    let id = s.ready("Finished, then reopened").await;
    let long = format!("long {}", "x".repeat(4995));
    for (text, more) in [("First.", true), (long.as_str(), true), ("Done.", false)] {
        s.thought(json!({ "thought": text, "nextThoughtNeeded": more })).await;
    }
    let browser = Browser::start().await;
    signed_in(&browser, &server).await;
    browser
        .until(
            "two sessions",
            "return document.querySelectorAll('#sessions li').length === 2",
        )
        .await;
    browser.click(&format!("#sessions li[data-session-id='{id}']")).await;
    browser
        .until(
            "the completed session",
            &format!(
                "return document.querySelectorAll('#graph g.node').length === 3 && \
                 document.querySelector('#session-meta').textContent.startsWith('completed') && \
                 !!document.querySelector(\"#sessions li[data-session-id='{id}'] .status-completed\")"
            ),
        )
        .await;
    // The socket carried the long thought cut: shown, it is read whole.
    browser
        .until(
            "the live connection",
            "return document.querySelector('#live').textContent === 'live'",
        )
        .await;
    browser.click("#graph g.node[data-number='2']").await;
    browser
        .until(
            "the long thought whole",
            "return document.querySelector('#detail-text').textContent.length === 5000",
        )
        .await;
    let shown = browser
        .script("return document.querySelector('#detail-text').textContent")
        .await;
    assert_eq!(shown.as_str(), Some(long.as_str()));
    // Reopened and continued: active again, in the list and the header.
    s.ok("load_context", json!({ "sessionId": id })).await;
    s.thought(json!({ "sessionId": id, "thought": "Back to it.", "nextThoughtNeeded": true }))
        .await;
    browser
        .until(
            "the session active again",
            &format!(
                "return document.querySelectorAll('#graph g.node').length === 4 && \
                 document.querySelector('#session-meta').textContent.startsWith('active') && \
                 !!document.querySelector(\"#sessions li[data-session-id='{id}'] .status-active\")"
            ),
        )
        .await;
    // Deleted elsewhere: opening it takes it out of the list.
    s.ok("session", json!({ "subOperation": "delete", "sessionId": doomed }))
        .await;
    browser
        .click(&format!("#sessions li[data-session-id='{doomed}']"))
        .await;
    browser
        .until(
            "the deleted session gone",
            &format!(
                "return !document.querySelector(\"#sessions li[data-session-id='{doomed}']\") && \
                 document.querySelector('#session-empty').textContent.includes('gone') && \
                 document.querySelector('#list-count').textContent === '1 of 1'"
            ),
        )
        .await;
    // As after a restart, the cookie is no longer taken: when the socket
    // closes, the page goes to the sign-in form.
    browser.command(reqwest::Method::DELETE, "/cookie", Value::Null).await;
    browser.script("state.socket.close(); return true").await;
    browser
        .until(
            "the sign-in form",
            "return location.pathname === '/login' && !!document.querySelector('#token')",
        )
        .await;
    browser.quit().await;
}

/// Under the server's Content-Security-Policy the sign-in form and the page
/// get their styles, scripts, API and live socket; and text from the ledger
/// is laid out apart from what surrounds it, its bidi controls shown as
/// marks instead of obeyed: a right-to-left override reverses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_works_under_its_policy_and_isolates_ledger_text() {
    let server = HttpServer::start().await;
    let s = server.legacy().await;
    let reversed = "\u{202e}gnp.exe";
    let started = s
        .ok(
            "start_new",
            json!({ "sessionTitle": reversed, "tags": ["\u{202e}first", "second"] }),
        )
        .await;
    let id = started["session"]["id"].as_str().expect("id").to_string();
    s.ok("cipher", Value::Null).await;
    s.thought(json!({ "thought": format!("{reversed} then plain"), "nextThoughtNeeded": true }))
        .await;
    let browser = Browser::start().await;
    browser.go(&format!("{}/", server.base())).await;
    browser
        .until(
            "the sign-in form styled by /login.css",
            "const f = document.querySelector('form'); \
             return !!f && getComputedStyle(f).backgroundColor === 'rgb(255, 255, 255)'",
        )
        .await;
    signed_in(&browser, &server).await;
    browser
        .until(
            "the list, styled, with the live socket open",
            "return document.querySelectorAll('#sessions li').length === 1 && \
             getComputedStyle(document.querySelector('header')).backgroundColor === 'rgb(29, 36, 48)' && \
             document.querySelector('#live').textContent === 'live'",
        )
        .await;
    let title = browser
        .script(
            "const b = document.querySelector('#sessions li .title bdi'); \
             return [b.textContent, getComputedStyle(b).unicodeBidi]",
        )
        .await;
    assert_eq!(title, json!(["\u{27e8}RLO\u{27e9}gnp.exe", "isolate"]));
    // The override is a mark, not obeyed: both tags read left to right
    // (each one's first letter left of its last).
    let order = browser
        .script(
            "const x = (node, i) => { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1); \
               return r.getBoundingClientRect().left; }; \
             const [a, b] = [...document.querySelectorAll('#sessions li .meta bdi')]; \
             return [a.textContent, a.querySelector('.bidi-control').title, x(a.lastChild, 0) < x(a.lastChild, 4), \
                     b.textContent, x(b.firstChild, 0) < x(b.firstChild, 5)]",
        )
        .await;
    assert_eq!(
        order,
        json!([
            "\u{27e8}RLO\u{27e9}first",
            "U+202E, a bidi control, shown instead of obeyed",
            true,
            "second",
            true
        ])
    );
    browser.click(&format!("#sessions li[data-session-id='{id}']")).await;
    browser
        .until(
            "the graph, its label isolated",
            "const t = document.querySelector('#graph g.node text tspan.user'); \
             return !!t && getComputedStyle(t).unicodeBidi === 'isolate'",
        )
        .await;
    browser.click("#graph g.node").await;
    browser
        .until(
            "the thought's text, isolated",
            &format!(
                "const b = document.querySelector('#detail-text bdi'); \
                 return !!b && b.textContent === {}",
                json!("\u{27e8}RLO\u{27e9}gnp.exe then plain")
            ),
        )
        .await;
    browser.quit().await;
}
