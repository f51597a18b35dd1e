//! stdin as a sequence of messages: each line read whole, repaired where a
//! client's bytes would make the MCP library drop it, or refused with what
//! is wrong when it must be answered under its id instead.
//!
//! JSON lets a string escape half of a surrogate pair (`"\ud83d"`), and
//! JavaScript clients produce exactly that when they cut text in the middle
//! of an emoji. serde_json refuses such a string, which would lose the
//! message and leave the agent waiting for its timeout. Each unpaired
//! surrogate escape becomes U+FFFD (`\ufffd`, the replacement character).
//! Bytes that are not UTF-8 (text cut in the middle of a character, or sent
//! in another encoding) are replaced the same way, a byte-order mark is
//! dropped, and a message without `"jsonrpc"` gets `"2.0"`.

use std::collections::VecDeque;
use std::io;

use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::envelope::{self, Problem, TopLevel, Verdict};
use crate::json_text::repair_surrogates;

/// The longest line read (newline included), as the MCP libraries limit
/// one message. A request in a longer line is refused under its id.
pub(super) const MAX_LINE: usize = 16 << 20;

/// One message from the client.
#[derive(Debug, PartialEq)]
pub(super) enum Incoming {
    /// A line to hand to the MCP library, repaired if it had to be.
    Message(Vec<u8>),
    /// A request refused before it is read: answered with an error under
    /// its own id, and never run.
    Refused {
        id: Value,
        method: String,
        problem: Problem,
    },
}

/// Reads whole lines from `inner` and makes each an [`Incoming`].
/// [`Lines::next`] is cancel-safe: the MCP library may drop it half-way
/// (it selects between reading and its other work), and nothing read is
/// lost then.
pub(super) struct Lines<R> {
    inner: R,
    eof: bool,
    /// What each read fills: made once, since zeroing a buffer before every
    /// read was a third of the protocol thread's instructions (callgrind).
    buf: Box<[u8]>,
    split: Split,
}

/// The bytes read, cut into messages.
#[derive(Default)]
struct Split {
    /// The line being read, up to its newline.
    line: Vec<u8>,
    ready: VecDeque<Incoming>,
    /// Set while a line over [`MAX_LINE`] is skipped, until its newline:
    /// what it says at its top level (id, method) is read on the way.
    skipping: Option<TopLevel>,
}

impl<R: AsyncRead + Unpin> Lines<R> {
    pub(super) fn new(inner: R) -> Self {
        Lines {
            inner,
            eof: false,
            buf: vec![0; 8192].into_boxed_slice(),
            split: Split::default(),
        }
    }

    /// The next message, `None` once the client has closed its end.
    pub(super) async fn next(&mut self) -> io::Result<Option<Incoming>> {
        loop {
            if let Some(item) = self.split.ready.pop_front() {
                return Ok(Some(item));
            }
            if self.eof {
                // An unterminated last line (a client that closed stdin
                // right after it, a file without a final newline) is read as
                // if it ended there; one too long is refused as with its
                // newline.
                if !self.split.line.is_empty() || self.split.skipping.is_some() {
                    self.split.accept(b"\n");
                    continue;
                }
                return Ok(None);
            }
            match self.inner.read(&mut self.buf).await? {
                0 => self.eof = true,
                n => self.split.accept(&self.buf[..n]),
            }
        }
    }
}

impl Split {
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

    /// The whole of a line over [`MAX_LINE`] has been skipped: a request is
    /// refused under its id.
    fn finish_oversized(&mut self) {
        let Some(scan) = self.skipping.take() else { return };
        let bytes = scan.bytes;
        match scan.request() {
            Some((id, method)) => {
                tracing::warn!("a message of {bytes} bytes is over the 16 MiB limit; answering it with an error");
                self.ready.push_back(Incoming::Refused {
                    id,
                    method,
                    problem: Problem::TooLong(bytes),
                });
            }
            // A notification, or the client's answer to a request of ours:
            // nothing to answer.
            None => tracing::warn!(
                "ignoring a message of {bytes} bytes, over the 16 MiB limit, that is not a request with an id"
            ),
        }
    }

    /// Make the complete line in `self.line` an [`Incoming`].
    fn finish_line(&mut self) {
        let mut line = std::mem::take(&mut self.line);
        // A byte-order mark (Windows tools write one) is not JSON.
        if line.starts_with(b"\xEF\xBB\xBF") {
            line.drain(..3);
        }
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if body.iter().all(u8::is_ascii_whitespace) {
            return;
        }
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
        // Each invalid byte became three: a line under the limit may now be
        // over it.
        if fixed.is_some()
            && current.len() >= MAX_LINE
            && let Some((id, method)) = envelope::request_of(current)
        {
            tracing::warn!(
                "a message grew past 16 MiB when its invalid UTF-8 was replaced; answering it with an error"
            );
            self.ready.push_back(Incoming::Refused {
                id,
                method,
                problem: Problem::TooLongRepaired,
            });
            return;
        }
        let message = match envelope::inspect(current) {
            Verdict::Pass => fixed.unwrap_or_else(|| body.to_vec()),
            Verdict::Refuse { id, method, problem } => {
                tracing::warn!("refusing {method}: {problem:?}");
                self.ready.push_back(Incoming::Refused { id, method, problem });
                return;
            }
            Verdict::AddVersion => with_version(current),
            Verdict::Ignore => {
                tracing::warn!("ignoring a notification or reply whose jsonrpc is not \"2.0\"");
                return;
            }
            Verdict::NotJson(e) => {
                // The text itself only at debug level: it may hold thought text.
                tracing::warn!(
                    "ignoring a message that is not valid JSON ({e}; {} bytes)",
                    current.len()
                );
                tracing::debug!("the message that is not JSON: {}", preview(current));
                return;
            }
        };
        self.ready.push_back(Incoming::Message(message));
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Every message of `input`, fed in pieces of `chunk` bytes as a pipe
    /// may deliver it.
    async fn read_all(input: &[u8], chunk: usize) -> Vec<Incoming> {
        let (mut tx, rx) = tokio::io::duplex(64);
        let input = input.to_vec();
        let feeder = tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            for piece in input.chunks(chunk) {
                tx.write_all(piece).await.expect("write");
            }
        });
        let mut lines = Lines::new(rx);
        let mut out = Vec::new();
        while let Some(item) = lines.next().await.expect("read") {
            out.push(item);
        }
        feeder.await.expect("feeder");
        out
    }

    /// The messages of `items` as text, one a line.
    fn shown(items: &[Incoming]) -> String {
        items
            .iter()
            .map(|i| match i {
                Incoming::Message(m) => format!("{}\n", String::from_utf8_lossy(m)),
                Incoming::Refused { id, method, problem } => format!("refused {id} {method} {problem:?}\n"),
            })
            .collect()
    }

    /// Feed `input` in pieces of `piece` bytes without reading; what is ready.
    fn accept_in_pieces(input: &[u8], piece: usize) -> Vec<Incoming> {
        let mut split = Split::default();
        for part in input.chunks(piece) {
            split.accept(part);
        }
        split.ready.into_iter().collect()
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
        // Blank lines and lines that are not JSON (no id to answer) are
        // left out; the last line is ended by the end of input.
        let expected = concat!(
            "{\"a\":1}\n",
            "{\"t\":\"cut \\ufffd\"}\n",
            "{\"t\":\"\\ud83d\\ude00\"}\n",
            "{\"last\":true}\n"
        );
        for chunk in [1, 3, 7, 64, 4096] {
            assert_eq!(
                shown(&read_all(input.as_bytes(), chunk).await),
                expected,
                "chunk {chunk}"
            );
        }
    }

    #[tokio::test]
    async fn requests_whose_params_is_not_an_object_are_refused_with_their_id() {
        let input = concat!(
            "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":[1]}\n",
            "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":{\"params\":[1]}}\n",
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\",\"params\":[1]}\n",
        );
        let out = read_all(input.as_bytes(), 4096).await;
        assert_eq!(
            out[0],
            Incoming::Refused {
                id: serde_json::json!(3),
                method: "tools/call".into(),
                problem: Problem::ParamsNot("an array"),
            }
        );
        // An object params (whatever it holds) and a notification pass unchanged.
        assert_eq!(
            out[1],
            Incoming::Message(input.lines().nth(1).unwrap().as_bytes().to_vec())
        );
        assert_eq!(
            out[2],
            Incoming::Message(input.lines().nth(2).unwrap().as_bytes().to_vec())
        );
    }

    #[test]
    fn a_request_too_long_once_repaired_is_refused_not_dropped() {
        let mut line =
            br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"t","arguments":{"thought":""#
                .to_vec();
        line.extend(std::iter::repeat_n(0xE9u8, 6 << 20));
        line.extend_from_slice(b"\"}}}\n");
        assert_eq!(
            accept_in_pieces(&line, line.len()),
            vec![Incoming::Refused {
                id: serde_json::json!("big"),
                method: "tools/call".into(),
                problem: Problem::TooLongRepaired,
            }]
        );
    }

    #[test]
    fn a_request_over_the_line_limit_is_refused_and_the_next_one_passes() {
        let mut input =
            br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"t","arguments":{"thought":""#.to_vec();
        input.resize(MAX_LINE + 10, b'a');
        input.extend_from_slice(b"\"}}}\n");
        let size = input.len();
        let next = b"{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\"}\n";
        input.extend_from_slice(next);
        for piece in [8192, 1 << 20, input.len()] {
            let out = accept_in_pieces(&input, piece);
            assert_eq!(
                out,
                vec![
                    Incoming::Refused {
                        id: serde_json::json!(7),
                        method: "tools/call".into(),
                        problem: Problem::TooLong(size),
                    },
                    Incoming::Message(next[..next.len() - 1].to_vec()),
                ],
                "piece {piece}"
            );
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
        assert_eq!(
            accept_in_pieces(&at, 1 << 16),
            vec![Incoming::Message(at[..at.len() - 1].to_vec())]
        );
        let over = accept_in_pieces(&line(MAX_LINE + 1), 1 << 16);
        assert!(
            matches!(
                &over[..],
                [Incoming::Refused {
                    problem: Problem::TooLong(_),
                    ..
                }]
            ),
            "{over:?}"
        );
    }

    #[tokio::test]
    async fn a_line_over_the_limit_is_refused_whatever_its_member_order() {
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
        let ids = |out: &[Incoming]| -> Vec<Value> {
            out.iter()
                .map(|i| match i {
                    Incoming::Refused { id, .. } => id.clone(),
                    Incoming::Message(_) => Value::Null,
                })
                .collect()
        };
        // Still unterminated: the last line is not over yet.
        assert_eq!(ids(&accept_in_pieces(&input, 1 << 20)), vec![serde_json::json!(3)]);
        // At the end of input, it is over.
        let mut lines = Lines::new(&input[..]);
        let mut out = Vec::new();
        while let Some(item) = lines.next().await.expect("read") {
            out.push(item);
        }
        assert_eq!(ids(&out), vec![serde_json::json!(3), serde_json::json!(5)]);
        assert!(matches!(&out[0], Incoming::Refused { method, .. } if method == "tools/call"));
    }

    /// A last line without its newline (a file of requests, a client that
    /// closed stdin right after writing) is read as a whole line.
    #[tokio::test]
    async fn an_unterminated_last_line_ends_at_the_end_of_input() {
        let input =
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}";
        let expected = format!("{input}\n");
        for chunk in [1, 3, 4096] {
            assert_eq!(
                shown(&read_all(input.as_bytes(), chunk).await),
                expected,
                "chunk {chunk}"
            );
        }
        assert!(read_all(b"  ", 4096).await.is_empty());
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
            assert_eq!(
                shown(&read_all(input.as_bytes(), chunk).await),
                expected,
                "chunk {chunk}"
            );
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
            assert_eq!(shown(&read_all(&input, chunk).await), expected, "chunk {chunk}");
        }
    }
}
