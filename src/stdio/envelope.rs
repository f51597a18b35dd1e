//! Reading what a JSON-RPC message says at its top level without trusting
//! the rest: the `id` and `method` of a request the MCP library would drop
//! unanswered, and the shape of its `params`.

use crate::json_text::{FirstDuplicate, Key, Seen, first_duplicate_in_map, shown};
use serde::de::IgnoredAny;
use serde_json::error::Category;

/// What to do with one message before the MCP library reads it.
#[derive(Debug, PartialEq)]
pub(super) enum Verdict {
    /// Hand it on as it is.
    Pass,
    /// A request the MCP library would answer wrongly, without its id, or
    /// not at all: the gateway answers it with an error under its id.
    Refuse {
        id: serde_json::Value,
        method: String,
        problem: Problem,
    },
    /// Not JSON: the MCP library ignores it (there is no id to answer).
    NotJson(String),
    /// A message without `jsonrpc`: read as JSON-RPC 2.0 (the MCP library
    /// would answer it with an error without an id, a notification or a
    /// reply included), once the member is added.
    AddVersion,
    /// A notification or a reply that names another `jsonrpc` version:
    /// dropped (with a log line), since nothing may answer it.
    Ignore,
}

/// What a message's `jsonrpc` member says.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Version {
    Missing,
    Two,
    Other,
}

#[derive(Debug, PartialEq)]
pub(super) enum Problem {
    /// `params` is there but is not an object (what it is instead).
    ParamsNot(&'static str),
    /// An object names one key twice, at this path (`params.arguments.x`).
    /// JSON readers keep one of the two values, and which one differs, so
    /// a call such as `{"subOperation":"get","subOperation":"delete"}`
    /// would run as whatever the reader kept: it is refused instead.
    DuplicateKey(String),
    /// Objects and arrays nested past the JSON reader's limit (128 levels).
    TooDeep,
    /// `jsonrpc` not `"2.0"`: the MCP library answers such a request
    /// without its id, which no client can match to it.
    NotVersion2,
    /// A number past the largest a JSON reader holds (`1e400`): valid JSON
    /// text that no reader turns into a value, so the MCP library drops it.
    NumberTooLarge,
    /// Not valid JSON (a `NaN`, a trailing comma, a line cut short), but
    /// with an `id` and `method` at its top level: the MCP library would
    /// drop it, and the client would wait for an answer for ever.
    NotJson(String),
    /// A line of this many bytes, over the 16 MiB a message may have.
    TooLong(usize),
    /// A line that grew past 16 MiB when its invalid UTF-8 was replaced.
    TooLongRepaired,
    /// An `id` that is no string and no whole number a reader holds
    /// (`1.5`, `true`, `null`, `1e29`): the MCP library drops the request.
    BadId,
    /// A `method` that is no string.
    MethodNotString,
    /// A JSON array: a batch, which MCP no longer has.
    Batch,
}

/// Whether the MCP library reads `id` as a request id: a string, or a
/// whole number that fits in 64 bits with a sign.
fn readable_id(id: &serde_json::Value) -> bool {
    id.is_string() || id.as_i64().is_some()
}

/// The id to answer under: a number read as a float past the integers a
/// float holds exactly (`18446744073709551623`) would come back as another
/// number (`1.8446744073709552e19`), so it is answered as null, the id of
/// a request whose id could not be read (JSON-RPC 2.0).
fn echoable(id: serde_json::Value) -> serde_json::Value {
    match id.as_f64() {
        Some(f) if !(id.is_i64() || id.is_u64()) && f.abs() >= 9.0e15 => serde_json::Value::Null,
        _ => id,
    }
}

/// serde_json's limit on nested objects and arrays.
const MAX_DEPTH: usize = 128;

/// How deeply `line` nests objects and arrays, strings aside.
fn nesting_depth(line: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in line {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// Whether the syntax error `e` of a one-line message stopped at a number
/// past the largest a JSON reader holds (`1e400`), read where it stopped.
fn stopped_after_number(line: &[u8], e: &serde_json::Error) -> bool {
    if e.line() != 1 {
        return false;
    }
    let number = |b: &u8| b.is_ascii_digit() || b"+-.eE".contains(b);
    // The column is at the number's last character or just past it.
    let mut end = e.column().min(line.len());
    if end > 0 && !number(&line[end - 1]) {
        end -= 1;
    }
    let start = line[..end].iter().rposition(|b| !number(b)).map_or(0, |i| i + 1);
    std::str::from_utf8(&line[start..end])
        .ok()
        .and_then(|t| t.parse::<f64>().ok())
        .is_some_and(f64::is_infinite)
}

/// Look at one message (a whole line) before the MCP library does.
pub(super) fn inspect(line: &[u8]) -> Verdict {
    let refuse = |problem| match request_of(line) {
        Some((id, method)) => Verdict::Refuse { id, method, problem },
        None => Verdict::Pass,
    };
    match serde_json::from_slice::<Envelope>(line) {
        Ok(Envelope {
            id: Some(id),
            method: Some(method),
            duplicate,
            params,
            version,
            ..
        }) => {
            let problem = match (duplicate, params) {
                (Some(key), _) => Problem::DuplicateKey(key),
                _ if !readable_id(&id) => Problem::BadId,
                (None, Some(ParamsShape::Not(kind))) => Problem::ParamsNot(kind),
                (None, Some(ParamsShape::Object { duplicate: Some(path) })) => {
                    Problem::DuplicateKey(format!("params{path}"))
                }
                _ => match version {
                    Version::Two => return Verdict::Pass,
                    Version::Missing => return Verdict::AddVersion,
                    Version::Other => Problem::NotVersion2,
                },
            };
            Verdict::Refuse {
                id: echoable(id),
                method,
                problem,
            }
        }
        // A notification, or a reply of the client's: nothing to answer.
        Ok(Envelope {
            version, method, reply, ..
        }) if method.is_some() || reply => match version {
            Version::Two => Verdict::Pass,
            Version::Missing => Verdict::AddVersion,
            Version::Other => Verdict::Ignore,
        },
        // Not a JSON-RPC message at all: the MCP library's to refuse.
        Ok(_) => Verdict::Pass,
        Err(e) if e.classify() == Category::Syntax && nesting_depth(line) >= MAX_DEPTH => refuse(Problem::TooDeep),
        Err(e) if e.classify() == Category::Syntax && stopped_after_number(line, &e) => refuse(Problem::NumberTooLarge),
        // Valid JSON of another shape (a method that is not a string, an
        // array): see `other_shape`.
        Err(e) => match serde_json::from_slice::<IgnoredAny>(line) {
            Ok(_) => other_shape(line),
            Err(_) => match request_of(line) {
                Some((id, method)) => Verdict::Refuse {
                    id,
                    method,
                    problem: Problem::NotJson(e.to_string()),
                },
                None => Verdict::NotJson(e.to_string()),
            },
        },
    }
}

/// Valid JSON that is no JSON-RPC message this reader takes: a batch, or
/// a request whose method is no string, is answered (the MCP library
/// would drop it, and its client wait for ever); the rest is passed on.
fn other_shape(line: &[u8]) -> Verdict {
    match serde_json::from_slice::<serde_json::Value>(line) {
        Ok(serde_json::Value::Array(_)) => Verdict::Refuse {
            id: serde_json::Value::Null,
            method: "batch".into(),
            problem: Problem::Batch,
        },
        Ok(serde_json::Value::Object(m)) => match (m.get("id"), m.get("method")) {
            (Some(id), Some(method)) if !method.is_string() => Verdict::Refuse {
                id: if readable_id(id) {
                    id.clone()
                } else {
                    serde_json::Value::Null
                },
                method: method.to_string(),
                problem: Problem::MethodNotString,
            },
            _ => Verdict::Pass,
        },
        _ => Verdict::Pass,
    }
}

/// The `id` and `method` of a request, read from its top level alone,
/// whatever the rest holds (`None` for a notification or a reply).
pub(super) fn request_of(line: &[u8]) -> Option<(serde_json::Value, String)> {
    let mut scan = TopLevel::default();
    scan.feed(line);
    scan.request()
}

/// The top level of a JSON-RPC message, as far as the repair needs it.
struct Envelope {
    id: Option<serde_json::Value>,
    method: Option<String>,
    params: Option<ParamsShape>,
    /// A top-level member named twice.
    duplicate: Option<String>,
    /// What `jsonrpc` says.
    version: Version,
    /// Whether it has a `result` or an `error` (a reply).
    reply: bool,
}

impl<'de> serde::Deserialize<'de> for Envelope {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Top;
        impl<'de> serde::de::Visitor<'de> for Top {
            type Value = Envelope;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON-RPC message")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> std::result::Result<Envelope, A::Error> {
                let mut envelope = Envelope {
                    id: None,
                    method: None,
                    params: None,
                    duplicate: None,
                    version: Version::Missing,
                    reply: false,
                };
                let mut seen = Seen::default();
                while let Some(Key(key)) = map.next_key()? {
                    match &*key {
                        // `null` too: a request with a null id, not a notification.
                        "id" => envelope.id = Some(map.next_value::<serde_json::Value>()?),
                        "method" => envelope.method = Some(map.next_value()?),
                        "params" => envelope.params = Some(map.next_value()?),
                        "jsonrpc" => {
                            envelope.version = match map.next_value::<serde_json::Value>()? == "2.0" {
                                true => Version::Two,
                                false => Version::Other,
                            }
                        }
                        other => {
                            envelope.reply |= matches!(other, "result" | "error");
                            map.next_value::<FirstDuplicate>()?;
                        }
                    }
                    if envelope.duplicate.is_none() && seen.contains(&key) {
                        envelope.duplicate = Some(shown(&key));
                    }
                    seen.insert(key);
                }
                Ok(envelope)
            }
        }
        d.deserialize_map(Top)
    }
}

/// Whether `params` is an object (and the first key it names twice,
/// however deep), read without keeping its contents.
enum ParamsShape {
    Object { duplicate: Option<String> },
    Not(&'static str),
}

impl<'de> serde::Deserialize<'de> for ParamsShape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Shape;
        impl<'de> serde::de::Visitor<'de> for Shape {
            type Value = ParamsShape;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<ParamsShape, A::Error> {
                Ok(ParamsShape::Object {
                    duplicate: first_duplicate_in_map(map)?,
                })
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<ParamsShape, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(ParamsShape::Not("an array"))
            }
            fn visit_str<E>(self, _: &str) -> std::result::Result<ParamsShape, E> {
                Ok(ParamsShape::Not("a string"))
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<ParamsShape, E> {
                Ok(ParamsShape::Not("a boolean"))
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<ParamsShape, E> {
                Ok(ParamsShape::Not("a number"))
            }
            fn visit_u64<E>(self, _: u64) -> std::result::Result<ParamsShape, E> {
                Ok(ParamsShape::Not("a number"))
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<ParamsShape, E> {
                Ok(ParamsShape::Not("a number"))
            }
        }
        d.deserialize_any(Shape)
    }
}

/// Reads the top level of one JSON object as its bytes stream past,
/// keeping only the `id` and `method` members (and whether it has a
/// `result` or `error`), whatever their order (the TypeScript SDK writes
/// `id` last, after the params) and however long the rest is.
#[derive(Default)]
pub(super) struct TopLevel {
    /// Bytes seen.
    pub(super) bytes: usize,
    /// Nesting depth: 1 inside the top-level object.
    depth: u32,
    in_string: bool,
    escaped: bool,
    /// At depth 1, whether the next string is a member name.
    expect_key: bool,
    /// Reading a member name at depth 1 (its first bytes).
    in_key: bool,
    key: Vec<u8>,
    /// The member whose value is being read at depth 1, if it is one of
    /// ours, and the value's bytes so far.
    member: Option<Member>,
    value: Vec<u8>,
    id: Option<serde_json::Value>,
    method: Option<String>,
    reply: bool,
    /// A top-level request has closed: what follows (a second message on
    /// the same line) is not read, so that its id is not taken for this
    /// one's.
    done: bool,
}

#[derive(Clone, Copy, PartialEq)]
enum Member {
    Id,
    Method,
    Other,
}

/// A scalar value longer than this (an id or method name) is not one.
const MAX_MEMBER: usize = 64 << 10;

impl TopLevel {
    pub(super) fn feed(&mut self, part: &[u8]) {
        self.bytes += part.len();
        for &b in part {
            self.step(b);
        }
    }

    fn step(&mut self, b: u8) {
        if self.done {
            return;
        }
        let capturing = self.depth == 1 && matches!(self.member, Some(Member::Id | Member::Method));
        if self.in_string {
            if self.in_key {
                if self.key.len() < 16 {
                    self.key.push(b);
                }
            } else if capturing && self.value.len() < MAX_MEMBER {
                self.value.push(b);
            }
            if self.escaped {
                self.escaped = false;
            } else if b == b'\\' {
                self.escaped = true;
            } else if b == b'"' {
                self.in_string = false;
                if self.in_key {
                    self.in_key = false;
                    self.key.pop();
                }
            }
            return;
        }
        match b {
            b'"' => {
                self.in_string = true;
                if self.depth == 1 && self.expect_key {
                    self.expect_key = false;
                    self.in_key = true;
                    self.key.clear();
                } else if capturing {
                    self.value.push(b);
                }
            }
            b'{' | b'[' => {
                if self.depth == 0 && b == b'{' {
                    self.expect_key = true;
                } else if capturing {
                    // An object or array is no id or method.
                    self.member = Some(Member::Other);
                }
                self.depth += 1;
            }
            b'}' | b']' => {
                if self.depth == 1 {
                    self.end_member();
                    // A request ends the reading; after a notification or
                    // a reply, a request that follows on the line is read.
                    if self.id.is_some() && self.method.is_some() && !self.reply {
                        self.done = true;
                    } else {
                        self.id = None;
                        self.method = None;
                        self.reply = false;
                    }
                }
                self.depth = self.depth.saturating_sub(1);
            }
            b':' if self.depth == 1 && self.member.is_none() => {
                self.member = Some(match self.key.as_slice() {
                    b"id" => Member::Id,
                    b"method" => Member::Method,
                    b"result" | b"error" => {
                        self.reply = true;
                        Member::Other
                    }
                    _ => Member::Other,
                });
                self.value.clear();
            }
            b',' if self.depth == 1 => {
                self.end_member();
                self.expect_key = true;
            }
            b if b.is_ascii_whitespace() => {}
            _ if capturing && self.value.len() < MAX_MEMBER => self.value.push(b),
            _ => {}
        }
    }

    /// The value of the member at depth 1 has ended.
    fn end_member(&mut self) {
        let parsed = || serde_json::from_slice::<serde_json::Value>(&self.value).ok();
        match self.member.take() {
            // A JSON-RPC id is a string or an integer (`1e3` and `1.0` are
            // integers written as floats, which the MCP library accepts too).
            Some(Member::Id) => {
                self.id = match parsed() {
                    Some(serde_json::Value::Number(n)) if !(n.is_i64() || n.is_u64()) => Some(
                        n.as_f64()
                            .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                            .map_or(serde_json::Value::Null, |f| serde_json::Value::from(f as i64)),
                    ),
                    Some(v @ (serde_json::Value::Number(_) | serde_json::Value::String(_))) => Some(v),
                    Some(_) => None,
                    // A number past what a reader holds (`1e400`): an id
                    // that cannot be read, answered as null (JSON-RPC 2.0).
                    None if self.value.first().is_some_and(|b| b.is_ascii_digit() || *b == b'-') => {
                        Some(serde_json::Value::Null)
                    }
                    None => None,
                };
            }
            Some(Member::Method) => {
                self.method = parsed().and_then(|v| v.as_str().map(str::to_string));
            }
            _ => {}
        }
        self.value.clear();
    }

    /// The id and method, if this was a request: both present, and no
    /// `result` or `error` (a reply of the client's).
    pub(super) fn request(self) -> Option<(serde_json::Value, String)> {
        if self.reply {
            return None;
        }
        Some((self.id?, self.method?))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn refused(line: &str) -> Option<(serde_json::Value, Problem)> {
        match inspect(line.as_bytes()) {
            Verdict::Refuse { id, problem, .. } => Some((id, problem)),
            _ => None,
        }
    }

    #[test]
    fn a_key_named_twice_anywhere_in_a_request_is_found_with_its_path() {
        let dup = |path: &str| Problem::DuplicateKey(path.to_string());
        let cases = [
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"g","arguments":{"operation":"session","args":{"subOperation":"get","subOperation":"delete"}}}}"#,
                dup("params.arguments.args.subOperation"),
            ),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"operation":"get_state","operation":"session"},"name":"g"}}"#,
                dup("params.arguments.operation"),
            ),
            // Escapes are read before comparing, as a JSON reader does.
            (
                r#"{"id":1,"method":"m","params":{"a":{"list":[1,{"k":1,"\u006b":2}]}}}"#,
                dup("params.a.list[1].k"),
            ),
            (r#"{"id":1,"method":"m","method":"n","params":{}}"#, dup("method")),
            (
                r#"{"id":1,"jsonrpc":"2.0","jsonrpc":"2.0","method":"m"}"#,
                dup("jsonrpc"),
            ),
        ];
        for (line, problem) in cases {
            assert_eq!(refused(line), Some((json!(1), problem)), "{line}");
        }
        // The same key in different objects, and a notification or reply
        // with a key twice (nothing to answer), pass.
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"m","params":{"a":{"k":1},"b":{"k":2},"k":[{"k":1},{"k":2}]}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/x","params":{"a":1,"a":2}}"#,
            r#"{"jsonrpc":"2.0","id":1,"result":{"a":1,"a":2}}"#,
        ] {
            assert_eq!(inspect(line.as_bytes()), Verdict::Pass, "{line}");
        }
    }

    #[test]
    fn a_request_nested_past_the_readers_limit_is_refused_under_its_id() {
        let deep = |levels: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"arguments":{{"x":{}{}}}}}}}"#,
                "[".repeat(levels),
                "]".repeat(levels)
            )
        };
        assert_eq!(inspect(deep(100).as_bytes()), Verdict::Pass);
        assert_eq!(refused(&deep(130)), Some((json!(7), Problem::TooDeep)));
        assert_eq!(refused(&deep(100_000)), Some((json!(7), Problem::TooDeep)));
        // What the MCP library reads with serde_json too: where ours stops, so does it.
        let limit = (100..200)
            .find(|&n| serde_json::from_str::<serde_json::Value>(&deep(n)).is_err())
            .unwrap_or(0);
        assert_eq!(inspect(deep(limit - 1).as_bytes()), Verdict::Pass);
        assert!(refused(&deep(limit)).is_some());
    }

    /// Requests the MCP library would drop without a word, its client
    /// waiting for ever, are answered: an id it cannot read (under that
    /// id), a method that is no string, a batch (under a null id).
    #[test]
    fn ids_and_methods_the_library_cannot_read_and_batches_are_answered() {
        for id in ["1.5", "true", "null", "9223372036854775808"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            let expected: serde_json::Value = serde_json::from_str(id).unwrap();
            assert_eq!(refused(&line), Some((expected, Problem::BadId)), "{line}");
        }
        // Read as floats, they would come back as other numbers: null.
        for id in ["1e29", "18446744073709551616", "-9223372036854775809"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            assert_eq!(refused(&line), Some((json!(null), Problem::BadId)), "{line}");
        }
        for id in [r#""s""#, "7", "-3", "9223372036854775807"] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            assert_eq!(inspect(line.as_bytes()), Verdict::Pass, "{line}");
        }
        assert_eq!(
            refused(r#"{"jsonrpc":"2.0","id":3,"method":5}"#),
            Some((json!(3), Problem::MethodNotString))
        );
        assert_eq!(
            refused(r#"[{"jsonrpc":"2.0","id":2,"method":"ping"}]"#),
            Some((serde_json::Value::Null, Problem::Batch))
        );
        // A notification has no id to answer under.
        assert_eq!(
            inspect(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#),
            Verdict::Pass
        );
    }

    /// The MCP library answers a message whose `jsonrpc` is missing or
    /// not "2.0" with an error without an id (a notification or a reply
    /// too). Without the member it is read as 2.0; a request naming another
    /// version is answered under its id; a notification or a reply naming
    /// one is dropped, since nothing may answer it.
    #[test]
    fn messages_that_do_not_say_json_rpc_2() {
        for line in [
            r#"{"jsonrpc":"1.0","id":5,"method":"ping"}"#,
            r#"{"jsonrpc":2.0,"id":5,"method":"ping","params":{}}"#,
            r#"{"jsonrpc":null,"id":5,"method":"ping"}"#,
        ] {
            assert_eq!(refused(line), Some((json!(5), Problem::NotVersion2)), "{line}");
        }
        for line in [
            r#"{"id":5,"method":"ping"}"#,
            r#"{"method":"notifications/initialized"}"#,
            r#"{"id":5,"result":{}}"#,
            r#"{"id":5,"error":{"code":1,"message":"x"}}"#,
        ] {
            assert_eq!(inspect(line.as_bytes()), Verdict::AddVersion, "{line}");
        }
        for line in [
            r#"{"jsonrpc":"1.0","method":"notifications/x"}"#,
            r#"{"jsonrpc":"1.0","id":77,"result":{}}"#,
        ] {
            assert_eq!(inspect(line.as_bytes()), Verdict::Ignore, "{line}");
        }
        assert_eq!(inspect(br#"{"jsonrpc":"2.0","id":5,"method":"ping"}"#), Verdict::Pass);
        // Without the member, the other checks still come first.
        assert_eq!(
            refused(r#"{"id":5,"method":"ping","params":[1]}"#),
            Some((json!(5), Problem::ParamsNot("an array")))
        );
    }

    #[test]
    fn a_request_holding_a_number_too_large_to_read_is_refused_under_its_id() {
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"args":{"x":1e400}}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"last":-1E+999}}}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"ping","params":{"_meta":{"x":[1,2e308]}}}"#,
        ] {
            assert_eq!(refused(line), Some((json!(7), Problem::NumberTooLarge)), "{line}");
            assert!(serde_json::from_str::<serde_json::Value>(line).is_err());
        }
        // As the id itself: answered under a null id, since none was read.
        let digits = "9".repeat(400);
        for id in ["1e400", "-1e999", digits.as_str()] {
            let line = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#);
            assert_eq!(refused(&line), Some((json!(null), Problem::NumberTooLarge)), "{line}");
        }
        // Large but readable numbers pass.
        let line =
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":1e300,"b":100000000000000000000000000000}}"#;
        assert_eq!(inspect(line.as_bytes()), Verdict::Pass);
    }

    #[test]
    fn params_that_are_not_an_object_and_text_that_is_not_json() {
        assert_eq!(
            refused(r#"{"id":"a","method":"ping","params":[1]}"#),
            Some((json!("a"), Problem::ParamsNot("an array")))
        );
        assert!(matches!(inspect(b"{\"id\":1,"), Verdict::NotJson(_)));
        // Two messages on one line: the first one's id, not the second's.
        assert!(
            matches!(refused(r#"{"jsonrpc":"2.0","id":11,"method":"ping"}{"jsonrpc":"2.0","id":12,"method":"ping"}"#),
                Some((id, Problem::NotJson(_))) if id == json!(11))
        );
        // A notification first: the request after it is answered.
        assert!(
            matches!(refused(r#"{"jsonrpc":"2.0","method":"notifications/x"}{"jsonrpc":"2.0","id":9,"method":"ping"}"#),
                Some((id, Problem::NotJson(_))) if id == json!(9))
        );
        // Broken further in, with an id and a method: answered under its id.
        for line in [
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":NaN}}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"a":[1,]},"id":7}"#,
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"a":"#,
        ] {
            assert!(
                matches!(refused(line), Some((id, Problem::NotJson(_))) if id == json!(7)),
                "{line}"
            );
        }
        assert_eq!(
            refused(r#"{"id":1,"method":2}"#),
            Some((json!(1), Problem::MethodNotString))
        );
    }

    /// What the scanner makes of a whole message fed in pieces of `piece` bytes.
    fn scanned(message: &str, piece: usize) -> Option<(serde_json::Value, String)> {
        let mut scan = TopLevel::default();
        for part in message.as_bytes().chunks(piece) {
            scan.feed(part);
        }
        scan.request()
    }

    #[test]
    fn the_top_level_id_and_method_are_found_in_any_order() {
        let answered = [
            (
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}"#,
                json!(7),
                "tools/call",
            ),
            // The TypeScript SDK's order: the id comes last.
            (
                r#"{"method":"tools/call","params":{"a":[1,{"b":"}"}]},"jsonrpc":"2.0","id":"x-1"}"#,
                json!("x-1"),
                "tools/call",
            ),
            // Members of the params named id or method, escaped quotes and
            // braces inside strings do not count.
            (
                r#"{"method":"ping","params":{"id":99,"method":"no","t":"say \"id\":5 } ]"},"id":8}"#,
                json!(8),
                "ping",
            ),
            ("\u{feff} { \"id\" : 9 , \"method\" : \"ping\" }\r", json!(9), "ping"),
            (r#"{"id":1e3,"method":"ping"}"#, json!(1000), "ping"),
            (r#"{"id":2.0,"method":"ping"}"#, json!(2), "ping"),
        ];
        for (message, id, method) in answered {
            for piece in [1, 3, 1000] {
                assert_eq!(
                    scanned(message, piece),
                    Some((id.clone(), method.to_string())),
                    "{message} / {piece}"
                );
            }
        }
        // Numbers that are no id, or that no reader holds: a request whose
        // id could not be read, answered under null.
        for message in [
            r#"{"id":1.5,"method":"ping"}"#,
            r#"{"id":1e300,"method":"ping"}"#,
            r#"{"id":1e400,"method":"ping"}"#,
        ] {
            assert_eq!(
                scanned(message, 2),
                Some((json!(null), "ping".to_string())),
                "{message}"
            );
        }
        for message in [
            // A notification, a reply of the client's, ids that are not ids.
            r#"{"jsonrpc":"2.0","method":"notifications/x","params":{"id":1}}"#,
            r#"{"jsonrpc":"2.0","id":5,"result":{"method":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"x","error":{}}"#,
            r#"{"id":{"n":1},"method":"ping"}"#,
            r#"{"id":null,"method":"ping"}"#,
            r#"{"id":1,"method":["ping"]}"#,
            "not json at all",
        ] {
            assert_eq!(scanned(message, 2), None, "{message}");
        }
    }
}
