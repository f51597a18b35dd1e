//! The server's stdin and stdout as async streams, and the one repair made
//! to what clients send.
//!
//! JSON lets a string escape half of a surrogate pair (`"\ud83d"`), and
//! JavaScript clients produce exactly that when they cut text in the middle
//! of an emoji. serde_json refuses such a string, and the MCP library then
//! drops the whole message without an answer, so the agent waits for its
//! timeout and its thought is lost. [`RepairedLines`] replaces each unpaired
//! surrogate escape with U+FFFD (`\ufffd`, the replacement character) before
//! the MCP library parses the line. Bytes that are not UTF-8 (text cut in the
//! middle of a character, or sent in another encoding) are replaced the same
//! way, since the library would drop those messages too. A line that is not
//! JSON for any other reason is logged and passed on unchanged; the MCP
//! library ignores it, as the other MCP SDKs do (there is no id to answer).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::Notify;

mod envelope;

pub(crate) use envelope::first_duplicate_key;

use envelope::{Problem, TopLevel, Verdict};

/// The MCP library's limit on one line (newline included): it drops a
/// longer line without an answer. Such a line is answered here instead.
const MAX_LINE: usize = 16 << 20;

/// Reads lines from `inner` and hands them on whole, each repaired if it
/// holds bytes that are not UTF-8 or unpaired surrogate escapes.
pub struct RepairedLines<R> {
    inner: R,
    /// The line being read, up to its newline.
    line: Vec<u8>,
    /// Bytes ready for the reader: whole lines, repaired.
    ready: Vec<u8>,
    /// How much of `ready` the reader has taken.
    taken: usize,
    /// Set while a line over [`MAX_LINE`] is skipped, until its newline:
    /// what it says at its top level (id, method) is read on the way.
    skipping: Option<TopLevel>,
    eof: bool,
}

impl<R> RepairedLines<R> {
    pub fn new(inner: R) -> Self {
        RepairedLines {
            inner,
            line: Vec::new(),
            ready: Vec::new(),
            taken: 0,
            skipping: None,
            eof: false,
        }
    }

    /// Take in bytes just read from the client.
    fn accept(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let end = newline.map_or(bytes.len(), |i| i + 1);
            let (part, rest) = bytes.split_at(end);
            bytes = rest;
            if let Some(scan) = &mut self.skipping {
                scan.feed(part);
                if newline.is_some() {
                    self.finish_oversized();
                }
                continue;
            }
            self.line.extend_from_slice(part);
            if self.line.len() > MAX_LINE {
                let mut scan = TopLevel::default();
                scan.feed(&self.line);
                self.line = Vec::new();
                self.skipping = Some(scan);
                if newline.is_some() {
                    self.finish_oversized();
                }
            } else if newline.is_some() {
                self.finish_line();
            }
        }
    }

    /// The whole of a line over [`MAX_LINE`] has been skipped. The MCP
    /// library would drop it and leave the client waiting, so a request is
    /// answered with an error under its id.
    fn finish_oversized(&mut self) {
        let Some(scan) = self.skipping.take() else { return };
        let bytes = scan.bytes;
        match scan.request() {
            Some((id, method)) => {
                tracing::warn!("a message of {bytes} bytes is over the 16 MiB limit; answering it with an error");
                let request = serde_json::json!({
                    "jsonrpc": "2.0", "id": id, "method": INVALID_PARAMS_METHOD,
                    "params": {
                        "method": method,
                        "reason": format!("the message is {bytes} bytes, over the 16 MiB limit"),
                    },
                });
                self.ready.extend_from_slice(request.to_string().as_bytes());
                self.ready.push(b'\n');
            }
            // A notification, or the client's answer to a request of ours:
            // nothing to answer.
            None => tracing::warn!(
                "ignoring a message of {bytes} bytes, over the 16 MiB limit, that is not a request with an id"
            ),
        }
    }

    /// Move the complete line in `self.line` to `ready`, repaired if need be.
    fn finish_line(&mut self) {
        // A byte-order mark (Windows tools write one) is not JSON: the MCP
        // library would drop the message.
        if self.line.starts_with(b"\xEF\xBB\xBF") {
            self.line.drain(..3);
        }
        let body = self.line.strip_suffix(b"\n").unwrap_or(&self.line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if body.iter().all(u8::is_ascii_whitespace) {
            self.ready.append(&mut self.line);
            return;
        }
        // Invalid UTF-8 (text cut in the middle of a character, or another
        // encoding) would make the MCP library drop the message unanswered.
        let mut fixed: Option<Vec<u8>> = None;
        if std::str::from_utf8(body).is_err() {
            tracing::warn!(
                "replaced invalid UTF-8 in a message of {} bytes with U+FFFD",
                body.len()
            );
            fixed = Some(String::from_utf8_lossy(body).into_owned().into_bytes());
        }
        let current = fixed.as_deref().unwrap_or(body);
        if has_surrogate_escape(current)
            && let Some((repaired, replaced)) = repair_surrogates(current)
        {
            tracing::warn!("replaced {replaced} unpaired UTF-16 surrogate escape(s) in a message with U+FFFD");
            fixed = Some(repaired);
        }
        let current = fixed.as_deref().unwrap_or(body);
        // Each invalid byte became three: a line under the MCP library's
        // limit may now be over it, and would be dropped without an answer.
        if fixed.is_some()
            && current.len() >= MAX_LINE
            && let Some((id, method)) = envelope::request_of(current)
        {
            tracing::warn!(
                "a message grew past 16 MiB when its invalid UTF-8 was replaced; answering it with an error"
            );
            let request = serde_json::json!({
                "jsonrpc": "2.0", "id": id, "method": INVALID_PARAMS_METHOD,
                "params": { "method": method, "reason": "the message is over 16 MiB once its invalid UTF-8 is replaced" },
            });
            self.ready.extend_from_slice(request.to_string().as_bytes());
            self.ready.push(b'\n');
            self.line.clear();
            return;
        }
        match envelope::inspect(current) {
            Verdict::Pass => {}
            // The MCP library would answer -32600 without the request's id
            // (params not an object), which no client can match to its
            // request, or not at all (nested too deep), or run whichever of
            // two values of one key its reader kept. Hand it on as a request
            // the gateway answers with an error under the right id.
            Verdict::Refuse { id, method, problem } => {
                let params = match problem {
                    Problem::ParamsNot(kind) => serde_json::json!({ "method": method, "got": kind }),
                    Problem::DuplicateKey(path) => {
                        tracing::warn!("refusing a request that names the key {path} twice");
                        serde_json::json!({ "method": method, "duplicate": path })
                    }
                    Problem::NotVersion2 => serde_json::json!({ "method": method, "reason":
                        "a JSON-RPC 2.0 request needs \"jsonrpc\": \"2.0\"" }),
                    Problem::NumberTooLarge => {
                        tracing::warn!("refusing a request holding a number too large to read");
                        serde_json::json!({ "method": method, "reason":
                            "the message holds a number too large to read (the largest is about 1.8e308)" })
                    }
                    Problem::NotJson(e) => {
                        tracing::warn!("answering a request that is not valid JSON ({e})");
                        serde_json::json!({ "method": method, "parse": e })
                    }
                    Problem::TooDeep => {
                        tracing::warn!("refusing a request nested past the JSON reader's limit");
                        serde_json::json!({ "method": method, "reason":
                            "the message nests objects and arrays too deeply (the limit is 128 levels in all)" })
                    }
                };
                let request = serde_json::json!({
                    "jsonrpc": "2.0", "id": id, "method": INVALID_PARAMS_METHOD, "params": params,
                });
                fixed = Some(request.to_string().into_bytes());
            }
            Verdict::AddVersion => fixed = Some(with_version(current)),
            Verdict::Ignore => {
                tracing::warn!("ignoring a notification or reply whose jsonrpc is not \"2.0\"");
                self.line.clear();
                return;
            }
            Verdict::NotJson(e) => {
                // The text itself only at debug level: it may hold thought text.
                tracing::warn!(
                    "ignoring a message that is not valid JSON ({e}; {} bytes)",
                    current.len()
                );
                tracing::debug!("the message that is not JSON: {}", preview(current));
            }
        }
        match fixed {
            Some(fixed) => {
                self.ready.extend_from_slice(&fixed);
                self.ready.push(b'\n');
                self.line.clear();
            }
            None => self.ready.append(&mut self.line),
        }
    }
}

/// `line` (a JSON object) with `"jsonrpc":"2.0"` as its first member.
fn with_version(line: &[u8]) -> Vec<u8> {
    let open = line.iter().position(|&b| b == b'{').map_or(0, |i| i + 1);
    let rest = &line[open..];
    let empty = rest.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'}');
    let mut out = Vec::with_capacity(line.len() + 17);
    out.extend_from_slice(&line[..open]);
    out.extend_from_slice(br#""jsonrpc":"2.0""#);
    if !empty {
        out.push(b',');
    }
    out.extend_from_slice(rest);
    out
}

/// The method a request the MCP library could not answer with its id is
/// renamed to (params that is not an object, a key named twice, nesting
/// past the reader's limit, a message too long once repaired), so that the
/// gateway answers it under its id. Its params hold the original `method`,
/// and what params `got`, the `duplicate` key's path, or the `reason`.
pub const INVALID_PARAMS_METHOD: &str = "thoughtbox/invalid-params";

/// Whether `line` holds something like `\uD83D` (which may still be half of
/// a valid pair, or an escaped backslash followed by text).
fn has_surrogate_escape(line: &[u8]) -> bool {
    // Most lines hold no backslash at all: `contains` finds that a word at
    // a time, where the window scan tests every byte.
    line.contains(&b'\\')
        && line.windows(4).any(|w| {
            w[0] == b'\\' && w[1] == b'u' && (w[2] | 0x20) == b'd' && matches!(w[3] | 0x20, b'8' | b'9' | b'a'..=b'f')
        })
}

/// The start of a line, for the log.
fn preview(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(&line[..line.len().min(200)]).into_owned();
    if line.len() > 200 { format!("{text}...") } else { text }
}

impl<R: AsyncRead + Unpin> AsyncRead for RepairedLines<R> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if this.taken < this.ready.len() {
                let n = (this.ready.len() - this.taken).min(buf.remaining());
                buf.put_slice(&this.ready[this.taken..this.taken + n]);
                this.taken += n;
                if this.taken == this.ready.len() {
                    this.ready.clear();
                    this.taken = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                // An unterminated last line (a client that closed stdin
                // right after it, a file without a final newline) is read as
                // if it ended there: the MCP library would drop it unanswered.
                // One too long is refused as with its newline.
                if !this.line.is_empty() || this.skipping.is_some() {
                    this.accept(b"\n");
                    continue;
                }
                return Poll::Ready(Ok(()));
            }
            // Left uninitialised: the read fills what it reports, and
            // zeroing 8 KiB before each of the several reads per request
            // was a third of the protocol thread's instructions (callgrind).
            let mut chunk = [std::mem::MaybeUninit::<u8>::uninit(); 8192];
            let mut read = ReadBuf::uninit(&mut chunk);
            match Pin::new(&mut this.inner).poll_read(cx, &mut read) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Ready(Ok(())) => {
                    if read.filled().is_empty() {
                        this.eof = true;
                    } else {
                        this.accept(read.filled());
                    }
                }
            }
        }
    }
}

/// Replace every `\uXXXX` escape inside a JSON string that is half of a
/// surrogate pair without its other half by `\ufffd`. Answers the repaired
/// text and how many escapes were replaced, or `None` if there were none.
pub fn repair_surrogates(json: &[u8]) -> Option<(Vec<u8>, usize)> {
    let hex = |at: usize| -> Option<u16> {
        let digits = json.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    // The code unit of a `\uXXXX` escape starting at `at`, if there is one.
    let escape = |at: usize| -> Option<u16> {
        if json.get(at) == Some(&b'\\') && json.get(at + 1) == Some(&b'u') {
            hex(at + 2)
        } else {
            None
        }
    };
    let mut out = Vec::with_capacity(json.len());
    let mut replaced = 0;
    let mut in_string = false;
    let mut i = 0;
    while i < json.len() {
        let b = json[i];
        if !in_string {
            in_string = b == b'"';
            out.push(b);
            i += 1;
            continue;
        }
        match b {
            b'"' => {
                in_string = false;
                out.push(b);
                i += 1;
            }
            b'\\' => match escape(i) {
                Some(0xD800..=0xDBFF) => {
                    if matches!(escape(i + 6), Some(0xDC00..=0xDFFF)) {
                        out.extend_from_slice(&json[i..i + 12]);
                        i += 12;
                    } else {
                        out.extend_from_slice(b"\\ufffd");
                        replaced += 1;
                        i += 6;
                    }
                }
                Some(0xDC00..=0xDFFF) => {
                    out.extend_from_slice(b"\\ufffd");
                    replaced += 1;
                    i += 6;
                }
                Some(_) => {
                    out.extend_from_slice(&json[i..i + 6]);
                    i += 6;
                }
                None => {
                    // Any other escape: the backslash and the escaped byte.
                    let end = (i + 2).min(json.len());
                    out.extend_from_slice(&json[i..end]);
                    i = end;
                }
            },
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    (replaced > 0).then_some((out, replaced))
}

type Input = Box<dyn AsyncRead + Send + Unpin>;
type Output = Box<dyn tokio::io::AsyncWrite + Send + Unpin>;

/// stdin (with [`RepairedLines`]) and stdout as async streams. When they are
/// pipes or sockets (as MCP clients spawn us) they are registered with the
/// reactor directly; tokio's own stdin/stdout would send every read and
/// write through the blocking thread pool, which more than doubles the cost
/// of a small request. The third value is told when the client stops
/// reading stdout (see [`Watched`]).
pub fn streams() -> (Input, Output, Arc<StdoutGone>) {
    let gone = Arc::new(StdoutGone::default());
    let output = Box::new(BeforeInitialize::new(Watched {
        inner: writer(),
        gone: gone.clone(),
    }));
    #[cfg(unix)]
    unix::watch_stdout(&gone);
    (Box::new(RepairedLines::new(reader())), output, gone)
}

/// What the MCP library answers a request sent before `initialize` (it
/// reads such a request as one of the stateless protocol, 2026-07-28, which
/// carries its version and capabilities in `_meta`).
const MISSING_META: &[u8] = b"request _meta is missing or has malformed required fields";

/// The most messages [`BeforeInitialize`] holds to their newline.
const HELD_LINES: usize = 16;

/// stdout, saying more in the MCP library's answer to a request sent
/// before `initialize`: "request _meta is missing or has malformed required
/// fields: io.modelcontextprotocol/protocolVersion, ..." does not tell
/// someone trying the server by hand (`echo '{...tools/list}' |
/// thoughtbox`) that a session starts with `initialize`. Until the server
/// answers `initialize` (or has written [`HELD_LINES`] messages, as it does
/// to a client of the stateless protocol, which never sends it), each
/// message is held until its newline and that answer's message is
/// extended; from then on every write passes straight through, so a
/// session pays for this on its first message only. (An answer to a `ping`
/// before `initialize` does not end it: code review 18.)
struct BeforeInitialize<W> {
    inner: W,
    /// Once set, writes pass through (after `held` is out).
    through: bool,
    /// Messages written while held.
    lines: usize,
    /// Bytes accepted and not yet written: whole lines, then the start of one.
    held: Vec<u8>,
}

impl<W> BeforeInitialize<W> {
    fn new(inner: W) -> Self {
        BeforeInitialize {
            inner,
            through: false,
            lines: 0,
            held: Vec::new(),
        }
    }

    /// `line` (one JSON-RPC message, without its newline) as it goes out.
    fn said(&mut self, line: &[u8]) -> Vec<u8> {
        self.lines += 1;
        let holds = |needle: &[u8]| line.windows(needle.len()).any(|w| w == needle);
        if !holds(MISSING_META) {
            // The answer to `initialize` names the server: the session has
            // started. Or the client speaks the stateless protocol.
            if self.lines >= HELD_LINES || holds(br#""serverInfo""#) {
                self.through = true;
            }
            return line.to_vec();
        }
        let Ok(mut message) = serde_json::from_slice::<serde_json::Value>(line) else {
            return line.to_vec();
        };
        if let Some(text) = message["error"]["message"].as_str() {
            message["error"]["message"] = serde_json::Value::String(format!(
                "{text} (an MCP session starts with an initialize request, then the \
                 notifications/initialized notification; send initialize first. A client of the \
                 stateless protocol, 2026-07-28, sends those _meta fields with every request instead)"
            ));
        }
        message.to_string().into_bytes()
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> BeforeInitialize<W> {
    /// Write out what is held, as far as the inner writer takes it now.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while !self.held.is_empty() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.held) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.held.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }

    /// Whether writes now go straight through: once the server has
    /// written something else, and what was held is out.
    fn passing(&self) -> bool {
        self.through && self.held.is_empty()
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for BeforeInitialize<W> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.passing() {
            return Pin::new(&mut this.inner).poll_write(cx, buf);
        }
        if this.through {
            // Held bytes first, in order; then this write passes through.
            return match this.drain(cx) {
                Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_write(cx, buf),
                Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                Poll::Pending => Poll::Pending,
            };
        }
        // Accepted whole; each line completed by it is rewritten if need be.
        let start = this.held.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        this.held.extend_from_slice(buf);
        let mut out = this.held[..start].to_vec();
        let mut rest = &this.held[start..];
        let mut lines = Vec::new();
        while let Some(i) = rest.iter().position(|&b| b == b'\n') {
            lines.push(rest[..i].to_vec());
            rest = &rest[i + 1..];
        }
        let tail = rest.to_vec();
        for line in lines {
            out.extend_from_slice(&this.said(&line));
            out.push(b'\n');
        }
        out.extend_from_slice(&tail);
        this.held = out;
        // Written out as far as possible now; what the inner writer does not
        // take yet goes with the next write or flush.
        let complete = this.held.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if complete > 0 {
            let pending: Vec<u8> = this.held.split_off(complete);
            let result = this.drain(cx);
            this.held.extend_from_slice(&pending);
            // `buf` is taken whatever happened: an error is the flush's
            // to report (it tries again), or a caller retrying this write
            // would send its bytes twice (code review 18).
            if let Poll::Ready(Err(e)) = result {
                tracing::debug!("writing to stdout failed ({e}); the flush will try again");
            }
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        // Only whole lines are written before initialize; a part of one
        // waits for its newline.
        let complete = this.held.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        let complete = if this.through { this.held.len() } else { complete };
        let pending = this.held.split_off(complete);
        let result = this.drain(cx);
        this.held.extend_from_slice(&pending);
        match result {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match this.drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

/// Whether the client has stopped reading stdout (a broken pipe), and a
/// wake-up for whoever waits for that.
#[derive(Default)]
pub struct StdoutGone {
    gone: std::sync::atomic::AtomicBool,
    notify: Notify,
}

impl StdoutGone {
    pub fn is_gone(&self) -> bool {
        self.gone.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Wait until the client has stopped reading stdout.
    pub async fn wait(&self) {
        loop {
            let woken = self.notify.notified();
            if self.is_gone() {
                return;
            }
            woken.await;
        }
    }

    fn set(&self) {
        self.gone.store(true, std::sync::atomic::Ordering::SeqCst);
        self.notify.notify_waiters();
    }
}

/// stdout, telling `gone` when the client has stopped reading it (a broken
/// pipe): no answer can reach the client any more, so the server stops
/// rather than carry out requests whose answers nobody receives.
struct Watched {
    inner: Output,
    gone: Arc<StdoutGone>,
}

impl Watched {
    fn check<T>(&self, result: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(e)) = &result
            && e.kind() == io::ErrorKind::BrokenPipe
        {
            self.gone.set();
        }
        result
    }
}

impl tokio::io::AsyncWrite for Watched {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write(cx, buf);
        self.check(result)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let result = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        self.check(result)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_flush(cx);
        self.check(result)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let result = Pin::new(&mut self.inner).poll_shutdown(cx);
        self.check(result)
    }
}

/// stdin: a pipe or socket through the reactor, anything else (a file, a
/// terminal) through tokio's blocking stdin.
fn reader() -> Box<dyn AsyncRead + Send + Unpin> {
    #[cfg(unix)]
    {
        if let Some(r) = unix::reader() {
            return r;
        }
    }
    Box::new(tokio::io::stdin())
}

/// stdout, chosen the same way as stdin and independently of it.
fn writer() -> Output {
    #[cfg(unix)]
    {
        if let Some(w) = unix::writer() {
            return w;
        }
    }
    Box::new(tokio::io::stdout())
}

#[cfg(unix)]
pub use unix::{is_stdin_or_stdout, path_is_stdin_or_stdout, stderr_is_stdout};

/// Whether `file` is the server's stdin or stdout: never, off unix.
#[cfg(not(unix))]
pub fn is_stdin_or_stdout(_file: &std::fs::File) -> bool {
    false
}

/// Whether `path` names the server's stdin or stdout: never, off unix.
#[cfg(not(unix))]
pub fn path_is_stdin_or_stdout(_path: &std::path::Path) -> bool {
    false
}

/// Whether stderr is stdout's pipe or socket: never, off unix.
#[cfg(not(unix))]
pub fn stderr_is_stdout() -> bool {
    false
}

/// Each of fd 0 and fd 1 is looked at on its own, and converted only once
/// it is known to be a pipe or a socket: converting makes the open file
/// non-blocking, which tokio's blocking stdin/stdout could not cope with.
/// A socket is kept whole (never split), so that dropping one side never
/// shuts down a direction the other fd still uses (inetd and socat give
/// the server one socket as both stdin and stdout).
#[cfg(unix)]
mod unix {
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    use std::sync::atomic::{AtomicBool, Ordering};

    use tokio::io::{AsyncRead, AsyncWrite};

    enum Kind {
        Pipe,
        Socket,
    }

    /// What `fd` is, read through a duplicate of it.
    fn metadata(fd: BorrowedFd<'_>) -> Option<std::fs::Metadata> {
        std::fs::File::from(fd.try_clone_to_owned().ok()?).metadata().ok()
    }

    fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
        a.dev() == b.dev() && a.ino() == b.ino()
    }

    /// Whether `file` is the server's stdin or stdout (the same pipe, socket
    /// or file, however it was named: `/dev/stdout`, `/proc/self/fd/0`...).
    pub fn is_stdin_or_stdout(file: &std::fs::File) -> bool {
        file.metadata().is_ok_and(|m| is_stdin_or_stdout_file(&m))
    }

    /// [`is_stdin_or_stdout`] for a path, without opening it (false for a
    /// path that does not exist yet).
    pub fn path_is_stdin_or_stdout(path: &std::path::Path) -> bool {
        std::fs::metadata(path).is_ok_and(|m| is_stdin_or_stdout_file(&m))
    }

    fn is_stdin_or_stdout_file(ours: &std::fs::Metadata) -> bool {
        let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
        [metadata(stdin.as_fd()), metadata(stdout.as_fd())]
            .into_iter()
            .flatten()
            .any(|m| same_file(&m, ours))
    }

    /// Whether stderr is the very pipe or socket stdout is (inetd, and
    /// systemd socket activation by default, hand the server one socket as
    /// fds 0, 1 and 2). Logs written there would reach the client inside the
    /// JSON-RPC stream, so the server then keeps quiet. A terminal shared by
    /// both is not a protocol stream and does not count.
    pub fn stderr_is_stdout() -> bool {
        let (stdout, stderr) = (std::io::stdout(), std::io::stderr());
        match (metadata(stdout.as_fd()), metadata(stderr.as_fd())) {
            (Some(out), Some(err)) => {
                let stream = out.file_type().is_fifo() || out.file_type().is_socket();
                stream && same_file(&out, &err)
            }
            _ => false,
        }
    }

    /// A duplicate of `fd` if it is a pipe or a socket. Changes nothing.
    fn probe(fd: BorrowedFd<'_>) -> Option<(OwnedFd, Kind)> {
        let file = std::fs::File::from(fd.try_clone_to_owned().ok()?);
        let kind = file.metadata().ok()?.file_type();
        let kind = if kind.is_fifo() {
            Kind::Pipe
        } else if kind.is_socket() {
            Kind::Socket
        } else {
            return None;
        };
        Some((OwnedFd::from(file), kind))
    }

    fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let stream = std::os::unix::net::UnixStream::from(fd);
        stream.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(stream).ok()
    }

    /// Set once fd 0 or fd 1 has been made non-blocking by the server (not
    /// when it came non-blocking: that is left as it was found).
    static MADE_NONBLOCKING: [AtomicBool; 2] = [AtomicBool::new(false), AtomicBool::new(false)];

    /// Note that fd `which` (0 or 1) is about to be made non-blocking, unless
    /// it already is.
    fn note_nonblocking(which: usize, fd: &OwnedFd) {
        let was = rustix::fs::fcntl_getfl(fd).is_ok_and(|flags| flags.contains(rustix::fs::OFlags::NONBLOCK));
        MADE_NONBLOCKING[which].store(!was, Ordering::SeqCst);
    }

    pub(super) fn reader() -> Option<Box<dyn AsyncRead + Send + Unpin>> {
        let stdin = std::io::stdin();
        let (fd, kind) = probe(stdin.as_fd())?;
        note_nonblocking(0, &fd);
        match kind {
            Kind::Pipe => Some(Box::new(tokio::net::unix::pipe::Receiver::from_owned_fd(fd).ok()?)),
            Kind::Socket => Some(Box::new(socket(fd)?)),
        }
    }

    pub(super) fn writer() -> Option<Box<dyn AsyncWrite + Send + Unpin>> {
        let stdout = std::io::stdout();
        let (fd, kind) = probe(stdout.as_fd())?;
        note_nonblocking(1, &fd);
        match kind {
            Kind::Pipe => Some(Box::new(tokio::net::unix::pipe::Sender::from_owned_fd(fd).ok()?)),
            Kind::Socket => Some(Box::new(socket(fd)?)),
        }
    }

    /// Tell `gone` as soon as the client closes its end of stdout, when
    /// stdout is a pipe or a socket: a write would find out only at the
    /// next answer, and an idle server would wait for its client forever
    /// (review 12-a). A thread sleeps in `poll` on fd 1 asking for no
    /// event, so only the error or hang-up of a closed peer wakes it.
    pub(super) fn watch_stdout(gone: &std::sync::Arc<super::StdoutGone>) {
        let stdout = std::io::stdout();
        let Some((fd, _)) = probe(stdout.as_fd()) else {
            return;
        };
        let gone = gone.clone();
        let watching = std::thread::Builder::new().name("stdout-watch".into()).spawn(move || {
            use rustix::event::{PollFd, PollFlags, poll};
            loop {
                let mut fds = [PollFd::new(&fd, PollFlags::empty())];
                match poll(&mut fds, None) {
                    Ok(_) if fds[0].revents().intersects(PollFlags::ERR | PollFlags::HUP) => {
                        tracing::info!("the client closed its end of stdout");
                        gone.set();
                        return;
                    }
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => {
                        tracing::debug!("cannot watch stdout: {e}");
                        return;
                    }
                }
            }
        });
        if let Err(e) = watching {
            tracing::debug!("cannot watch stdout: {e}");
        }
    }

    /// Make fd 0 and fd 1 blocking again where [`reader`] or [`writer`]
    /// made them non-blocking (one that came non-blocking stays so). The flag belongs to the open file, which the
    /// process that started the server shares: a shell pipeline's next
    /// command writing to the same pipe would otherwise fail with EAGAIN.
    pub(super) fn restore_blocking() {
        let (stdin, stdout) = (std::io::stdin(), std::io::stdout());
        for (flag, fd) in MADE_NONBLOCKING.iter().zip([stdin.as_fd(), stdout.as_fd()]) {
            if flag.swap(false, Ordering::SeqCst)
                && let Ok(owned) = fd.try_clone_to_owned()
            {
                // FIONBIO, which works on any file, pipes included.
                let _ = std::os::unix::net::UnixStream::from(owned).set_nonblocking(false);
            }
        }
    }
}

/// Undo what [`streams`] changed on stdin and stdout (their non-blocking
/// mode), for whatever uses them after the server.
pub fn restore() {
    #[cfg(unix)]
    unix::restore_blocking();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn repaired(s: &str) -> Option<String> {
        repair_surrogates(s.as_bytes()).map(|(v, _)| String::from_utf8(v).expect("utf-8"))
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        assert_eq!(
            repaired(r#"{"t":"cut \ud83d"}"#).as_deref(),
            Some(r#"{"t":"cut \ufffd"}"#)
        );
        assert_eq!(
            repaired(r#"{"t":"\uDE00 low"}"#).as_deref(),
            Some(r#"{"t":"\ufffd low"}"#)
        );
        assert_eq!(
            repaired(r#"{"t":"\ud83d\ud83d\ude00"}"#).as_deref(),
            Some(r#"{"t":"\ufffd\ud83d\ude00"}"#)
        );
        assert_eq!(repaired(r#"{"t":"\ud83dx"}"#).as_deref(), Some(r#"{"t":"\ufffdx"}"#));
        let fixed = repaired(r#"{"t":"a\ud83d","n":1}"#).expect("repaired");
        let v: serde_json::Value = serde_json::from_str(&fixed).expect("parses");
        assert_eq!(v["t"], "a\u{fffd}");
    }

    #[test]
    fn valid_text_is_left_alone() {
        for s in [
            r#"{"t":"\ud83d\ude00 pair"}"#,
            r#"{"t":"\\ud83d is an escaped backslash"}"#,
            r#"{"t":"quote \" then \ud83d\ude00"}"#,
            r#"{"t":"\u00e9\n\t"}"#,
            r#"["\\", "\\\\ud800"]"#,
        ] {
            assert_eq!(repaired(s), None, "{s}");
        }
    }

    #[test]
    fn truncated_escapes_do_not_panic() {
        for s in [
            r#""\u"#,
            r#""\ud8"#,
            r#""\ud83d\u"#,
            r#""\ud83d\ude"#,
            "\"\\",
            "\"\\u12zz\"",
        ] {
            let _ = repair_surrogates(s.as_bytes());
        }
    }

    async fn read_all(input: &[u8], chunk: usize) -> String {
        // Feed the input in small pieces, as a pipe may deliver it.
        let (mut tx, rx) = tokio::io::duplex(64);
        let input = input.to_vec();
        let feeder = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for piece in input.chunks(chunk) {
                tx.write_all(piece).await.expect("write");
            }
        });
        let mut out = String::new();
        RepairedLines::new(rx).read_to_string(&mut out).await.expect("read");
        feeder.await.expect("feeder");
        out
    }

    #[tokio::test]
    async fn lines_pass_through_whole_and_repaired() {
        let input = concat!(
            "{\"a\":1}\n",
            "{\"t\":\"cut \\ud83d\"}\r\n",
            "\n",
            "not json at all\n",
            "{\"t\":\"\\ud83d\\ude00\"}\n",
            "{\"last\":true}"
        );
        let expected = concat!(
            "{\"a\":1}\n",
            "{\"t\":\"cut \\ufffd\"}\n",
            "\n",
            "not json at all\n",
            "{\"t\":\"\\ud83d\\ude00\"}\n",
            // Ended by the end of input.
            "{\"last\":true}\n"
        );
        for chunk in [1, 3, 7, 64, 4096] {
            assert_eq!(read_all(input.as_bytes(), chunk).await, expected, "chunk {chunk}");
        }
    }

    #[tokio::test]
    async fn requests_whose_params_is_not_an_object_keep_their_id() {
        let input = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":[1]}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"params\":[1]}}\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":[1]}\n",
        );
        let out = read_all(input.as_bytes(), 4096).await;
        let lines: Vec<serde_json::Value> = out.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines[0]["id"], 3);
        assert_eq!(lines[0]["method"], INVALID_PARAMS_METHOD);
        assert_eq!(
            lines[0]["params"],
            serde_json::json!({ "method": "tools/call", "got": "an array" })
        );
        // An object params (whatever it holds) and a notification pass unchanged.
        assert_eq!(out.lines().nth(1).unwrap(), input.lines().nth(1).unwrap());
        assert_eq!(out.lines().nth(2).unwrap(), input.lines().nth(2).unwrap());
    }

    #[test]
    fn a_request_too_long_once_repaired_is_answered_not_dropped() {
        let mut line =
            br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"t","arguments":{"thought":""#
                .to_vec();
        line.extend(std::iter::repeat_n(0xE9u8, 6 << 20));
        line.extend_from_slice(b"\"}}}\n");
        let mut lines = RepairedLines::new(tokio::io::empty());
        lines.accept(&line);
        let out: serde_json::Value = serde_json::from_slice(&lines.ready).unwrap();
        assert_eq!(out["id"], "big");
        assert_eq!(out["method"], INVALID_PARAMS_METHOD);
        assert_eq!(out["params"]["method"], "tools/call");
        assert!(out["params"]["reason"].as_str().unwrap().contains("16 MiB"));
    }

    /// Feed `input` to the repair in pieces of `piece` bytes; what comes out.
    fn accept_in_pieces(input: &[u8], piece: usize) -> Vec<u8> {
        let mut lines = RepairedLines::new(tokio::io::empty());
        let mut out = Vec::new();
        for part in input.chunks(piece) {
            lines.accept(part);
            out.append(&mut lines.ready);
        }
        out
    }

    #[test]
    fn a_request_over_the_line_limit_is_answered_and_the_next_one_passes() {
        let mut input =
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"thought":""#.to_vec();
        input.resize(MAX_LINE + 10, b'a');
        input.extend_from_slice(b"\"}}}\n");
        let size = input.len();
        let next = b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n";
        input.extend_from_slice(next);
        for piece in [8192, 1 << 20, input.len()] {
            let out = accept_in_pieces(&input, piece);
            let mut lines = out.split(|&b| b == b'\n');
            let answer: serde_json::Value = serde_json::from_slice(lines.next().unwrap()).unwrap();
            assert_eq!(answer["id"], 7, "piece {piece}");
            assert_eq!(answer["method"], INVALID_PARAMS_METHOD);
            assert_eq!(answer["params"]["method"], "tools/call");
            let reason = answer["params"]["reason"].as_str().unwrap();
            assert!(
                reason.contains(&size.to_string()) && reason.contains("16 MiB"),
                "{reason}"
            );
            assert_eq!(lines.next().unwrap(), &next[..next.len() - 1], "piece {piece}");
            assert_eq!(lines.next().unwrap(), b"");
            assert!(lines.next().is_none());
        }
    }

    #[test]
    fn a_line_at_the_limit_passes_and_one_byte_more_does_not() {
        let line = |len: usize| {
            let mut l = br#"{"jsonrpc":"2.0","id":"x","method":"ping","params":{"pad":""#.to_vec();
            l.resize(len - 4, b'p');
            l.extend_from_slice(b"\"}}\n");
            l
        };
        let at = line(MAX_LINE);
        assert_eq!(accept_in_pieces(&at, 1 << 16), at);
        let over: serde_json::Value = serde_json::from_slice(&accept_in_pieces(&line(MAX_LINE + 1), 1 << 16)).unwrap();
        assert_eq!(over["id"], "x");
        assert_eq!(over["method"], INVALID_PARAMS_METHOD);
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_answered_whatever_its_member_order() {
        // The TypeScript SDK's order, a notification, a reply, and an
        // unterminated line at the end of input.
        let mut input = br#"{"method":"tools/call","params":{"p":""#.to_vec();
        input.resize(MAX_LINE + 1, b'n');
        input.extend_from_slice(
            b"\"},\"jsonrpc\":\"2.0\",\"id\":3}\n{\"method\":\"notifications/x\",\"params\":{\"p\":\"",
        );
        input.resize(input.len() + MAX_LINE + 10, b'q');
        input.extend_from_slice(b"\"}}\n{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"p\":\"");
        input.resize(input.len() + MAX_LINE + 10, b'r');
        input.extend_from_slice(b"\"}}\n{\"id\":5,\"method\":\"ping\",\"x\":\"");
        input.resize(input.len() + MAX_LINE + 10, b's');
        let expect = |out: &[u8], ids: &[u64]| {
            let lines: Vec<&[u8]> = out.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
            assert_eq!(lines.len(), ids.len(), "{} bytes out", out.len());
            for (line, id) in lines.iter().zip(ids) {
                let answer: serde_json::Value = serde_json::from_slice(line).unwrap();
                assert_eq!(answer["id"], *id);
                assert_eq!(answer["method"], INVALID_PARAMS_METHOD);
            }
            let first: serde_json::Value = serde_json::from_slice(lines[0]).unwrap();
            assert_eq!(first["params"]["method"], "tools/call");
        };
        // Still unterminated: the last line is not over yet.
        expect(&accept_in_pieces(&input, 1 << 20), &[3]);
        // At the end of input, it is over.
        let mut out = Vec::new();
        RepairedLines::new(&input[..])
            .read_to_end(&mut out)
            .await
            .expect("read");
        expect(&out, &[3, 5]);
    }

    /// A last line without its newline (a file of requests, a client that
    /// closed stdin right after writing) is read as a whole line.
    #[tokio::test]
    async fn an_unterminated_last_line_ends_at_the_end_of_input() {
        let input =
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}";
        let expected = format!("{input}\n");
        for chunk in [1, 3, 4096] {
            assert_eq!(read_all(input.as_bytes(), chunk).await, expected, "chunk {chunk}");
        }
        assert_eq!(read_all(b"  ", 4096).await, "  \n");
    }

    /// The MCP library's answer to a request sent before `initialize` is
    /// extended, in whatever pieces it is written, the answer to a `ping`
    /// between them included; once `initialize` is answered, every write
    /// passes unchanged (the same refusal included).
    #[tokio::test]
    async fn an_answer_before_initialize_says_to_initialize() {
        use tokio::io::AsyncWriteExt;
        let refusal = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"request _meta is missing or has malformed required fields: x"}}"#;
        let mut out = BeforeInitialize::new(Vec::new());
        for piece in refusal.chunks(7) {
            out.write_all(piece).await.unwrap();
        }
        out.write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n")
            .await
            .unwrap();
        out.write_all(refusal).await.unwrap();
        out.write_all(b"\n{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{\"serverInfo\":{}}}\n")
            .await
            .unwrap();
        out.write_all(refusal).await.unwrap();
        out.write_all(b"\n").await.unwrap();
        out.flush().await.unwrap();
        assert!(out.passing());
        let written = String::from_utf8(out.inner).unwrap();
        let lines: Vec<&str> = written.lines().collect();
        assert_eq!(lines.len(), 5, "{written}");
        for i in [0, 2] {
            let refused: serde_json::Value = serde_json::from_str(lines[i]).unwrap();
            assert_eq!(refused["id"], 1);
            let message = refused["error"]["message"].as_str().unwrap();
            assert!(
                message.starts_with("request _meta is missing") && message.contains("send initialize first"),
                "{message}"
            );
        }
        assert_eq!(lines[1], r#"{"jsonrpc":"2.0","id":2,"result":{}}"#);
        assert_eq!(lines[3], r#"{"jsonrpc":"2.0","id":3,"result":{"serverInfo":{}}}"#);
        assert_eq!(lines[4].as_bytes(), refusal);
    }

    /// A writer that takes at most 5 bytes a call, and every other call is
    /// not ready (and wakes its task at once).
    struct Grudging {
        written: Vec<u8>,
        calls: usize,
    }

    impl tokio::io::AsyncWrite for Grudging {
        fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
            self.calls += 1;
            if self.calls.is_multiple_of(2) {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let n = buf.len().min(5);
            self.written.extend_from_slice(&buf[..n]);
            Poll::Ready(Ok(n))
        }
        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Short writes and writes not ready lose, repeat and reorder nothing,
    /// before and after writes pass through, each message flushed as the
    /// MCP library does.
    #[tokio::test]
    async fn a_slow_stdout_gets_every_byte_in_order() {
        use tokio::io::AsyncWriteExt;
        let mut out = BeforeInitialize::new(Grudging {
            written: Vec::new(),
            calls: 0,
        });
        let mut sent = Vec::new();
        let init = b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"serverInfo\":{}}}\n".to_vec();
        let mut messages = vec![init];
        messages.extend((1..40).map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"result\":{{}}}}\n").into_bytes()));
        for m in &messages {
            for piece in m.chunks(11) {
                out.write_all(piece).await.unwrap();
            }
            out.flush().await.unwrap();
            sent.extend_from_slice(m);
        }
        assert!(out.passing());
        assert_eq!(
            String::from_utf8_lossy(&out.inner.written),
            String::from_utf8_lossy(&sent)
        );
    }

    /// A part of a line is not written before its newline, until writes
    /// pass through.
    #[tokio::test]
    async fn a_part_of_an_answer_waits_for_its_newline() {
        use tokio::io::AsyncWriteExt;
        let mut out = BeforeInitialize::new(Vec::new());
        out.write_all(b"{\"jsonrpc\":\"2.0\",").await.unwrap();
        out.flush().await.unwrap();
        assert!(out.inner.is_empty());
        out.write_all(b"\"id\":0,\"result\":{\"serverInfo\":{}}}\n{\"jsonrpc\"")
            .await
            .unwrap();
        out.flush().await.unwrap();
        assert_eq!(
            out.inner,
            b"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"serverInfo\":{}}}\n{\"jsonrpc\""
        );
        out.write_all(b":\"2.0\"}\n").await.unwrap();
        assert!(out.passing());
        assert!(out.inner.ends_with(b"{\"jsonrpc\":\"2.0\"}\n"));
    }

    #[test]
    fn the_version_is_added_as_the_first_member() {
        let added = |line: &str| String::from_utf8(with_version(line.as_bytes())).unwrap();
        assert_eq!(
            added(r#"{"id":1,"method":"ping"}"#),
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#
        );
        assert_eq!(added(r#"  { "id":1}"#), r#"  {"jsonrpc":"2.0", "id":1}"#);
        assert_eq!(added("{ }"), r#"{"jsonrpc":"2.0" }"#);
        for line in [r#"{"id":1,"method":"ping"}"#, r#"  { "id":1}"#, "{ }"] {
            let v: serde_json::Value = serde_json::from_str(&added(line)).unwrap();
            assert_eq!(v["jsonrpc"], "2.0", "{line}");
        }
    }

    #[tokio::test]
    async fn a_byte_order_mark_is_dropped() {
        let input = "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"t\":\"\u{feff} inside\"}\n";
        let expected = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"t\":\"\u{feff} inside\"}\n";
        for chunk in [1, 2, 4096] {
            assert_eq!(read_all(input.as_bytes(), chunk).await, expected, "chunk {chunk}");
        }
    }

    #[tokio::test]
    async fn invalid_utf8_becomes_replacement_characters() {
        // A character split across reads is whole again by the end of its line.
        let mut input = "{\"t\":\"caf\u{e9} \u{1F600}\"}\n".as_bytes().to_vec();
        // Cut in the middle of a character, then a Latin-1 byte.
        input.extend_from_slice(b"{\"t\":\"caf\xC3 and \xE9\"}\n");
        let expected = "{\"t\":\"caf\u{e9} \u{1F600}\"}\n{\"t\":\"caf\u{FFFD} and \u{FFFD}\"}\n";
        for chunk in [1, 2, 5, 4096] {
            assert_eq!(read_all(&input, chunk).await, expected, "chunk {chunk}");
        }
    }
}
