//! One answer in one MCP message: the byte count of an answer, the limits
//! it must keep, and what is cut to keep them.

use serde_json::{Value, json};

use crate::error::{Error, Result};

/// The longest message a tool answer may make. The answer goes out twice
/// in one message, as JSON and as that JSON in a text string (where every
/// `"` and `\\` takes one byte more), and MCP libraries (the Rust one among
/// them) drop a message over 16 MiB without a word, which leaves the agent
/// waiting. A little is left for the envelope.
pub(crate) const MAX_MESSAGE: usize = (16 << 20) - (64 << 10);

/// How many bytes `value` takes in an answer's message, counted up to a
/// little past [`MAX_MESSAGE`] (the count stops there).
pub(super) fn message_bytes(value: &Value) -> usize {
    /// Counts bytes and the ones escaped again in the text copy, and stops
    /// the serializer once past the limit.
    struct Count {
        bytes: usize,
        escaped: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.bytes += buf.len();
            self.escaped += buf.iter().filter(|&&b| b == b'"' || b == b'\\').count();
            if 2 * self.bytes + self.escaped > MAX_MESSAGE {
                return Err(std::io::Error::other("too long"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count { bytes: 0, escaped: 0 };
    let _ = serde_json::to_writer(&mut count, value);
    2 * count.bytes + count.escaped
}

/// Holds the content of an answer while it is rendered, and refuses to grow
/// past what one MCP message could carry: a whole session that is far too
/// long is refused after a few MiB, not after being rendered in full.
#[derive(Default)]
pub(crate) struct AnswerBuffer {
    pub bytes: Vec<u8>,
    pub overflowed: bool,
}

impl std::io::Write for AnswerBuffer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The content goes out at least twice (as text and as structured content).
        if 2 * (self.bytes.len() + buf.len()) > MAX_MESSAGE {
            self.overflowed = true;
            return Err(std::io::Error::other("the answer is too long for one MCP message"));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The thought text an answer has read so far, to give up on one that can
/// no longer fit in a message before the rest of its rows are loaded.
#[derive(Default)]
pub(crate) struct TextBudget {
    pub(super) bytes: usize,
}

impl TextBudget {
    /// Count `t`'s text and critique: [`answer_too_long`] once they alone
    /// (each at least doubled in the answer: text block and structured
    /// content) could not fit.
    pub(crate) fn add(&mut self, t: &crate::domain::Thought) -> Result<()> {
        self.bytes += t.data.thought.len() + t.data.critique.as_ref().map_or(0, |c| c.text.len());
        self.check()
    }

    /// [`TextBudget::add`] for a thought as answered (its text perhaps cut
    /// by a [`preview::Preview`]).
    pub(crate) fn add_answered(&mut self, thought: &Value) -> Result<()> {
        let text = |v: &Value| v.as_str().map_or(0, str::len);
        self.bytes += text(&thought["thought"]) + text(&thought["critique"]["text"]);
        self.check()
    }

    fn check(&self) -> Result<()> {
        if 2 * self.bytes > MAX_MESSAGE {
            return Err(answer_too_long());
        }
        Ok(())
    }
}

/// The refusal of an answer too long for one MCP message.
pub(crate) fn answer_too_long() -> Error {
    Error::InvalidOperation {
        message: "the answer is longer than one MCP message can carry (16 MiB); ask for less: a smaller limit \
                  (with offset for the rest) for a list, read_thoughts with a smaller range or one thoughtNumber, \
                  or session export with a destination directory to write the whole session to files"
            .into(),
        details: Some(json!({ "maxMessageBytes": MAX_MESSAGE })),
    }
}

/// Add `say` to an answer's `note`, after what it already says: two
/// notes of one answer both reach the agent.
pub(crate) fn add_note(note: &mut Option<String>, say: &str) {
    *note = Some(match note.take() {
        Some(n) if n.ends_with('.') => format!("{n} {say}"),
        Some(n) => format!("{n}; {say}"),
        None => say.to_string(),
    });
}

/// `text` (a name the client sent) as an error message may repeat it: cut
/// to 200 characters, since a message over 16 MiB would never arrive.
pub(crate) fn clip(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

/// Make sure an answer fits in one MCP message. (`load_context` and
/// `session resume` always fit: their recent thoughts are cut by
/// [`preview::Preview`].)
/// - A call that changed something (`read_only` false) keeps its
///   short top-level fields and names the ones left out.
/// - A call that only read is refused, saying how to ask for less.
///
/// `bytes`: the answer's [`message_bytes`].
pub(super) fn fits_one_message(mut value: Value, bytes: usize, read_only: bool) -> Result<Value> {
    if bytes <= MAX_MESSAGE {
        return Ok(value);
    }
    if !read_only && let Value::Object(fields) = &mut value {
        let long: Vec<String> = fields
            .iter()
            .filter(|(_, v)| message_bytes(v) > 64 << 10)
            .map(|(k, _)| k.clone())
            .collect();
        for key in &long {
            fields.remove(key);
        }
        let note = json!({
            "omittedFields": long,
            "reason": "the whole answer is too long for one MCP message; what was asked was done: read it back in parts",
        });
        fields.insert("answerShortened".into(), note.clone());
        if message_bytes(&value) > MAX_MESSAGE {
            // Many fields, each short: keep only the note.
            return Ok(json!({ "answerShortened": note }));
        }
        return Ok(value);
    }
    Err(answer_too_long())
}

/// An error's payload, kept short: a message that repeats a long input (an
/// unknown operation name of megabytes, a session id of thousands of
/// characters) is cut past [`MAX_ERROR_MESSAGE`] characters, and strings in
/// its details past [`MAX_DETAIL`]; the details themselves (`field`, the
/// stage a call needs) stay.
pub(super) fn bounded_error(mut payload: Value) -> Value {
    if let Some(message) = payload["message"].as_str()
        && message.chars().nth(MAX_ERROR_MESSAGE).is_some()
    {
        let cut: String = message.chars().take(MAX_ERROR_MESSAGE).collect();
        payload["message"] = json!(format!("{cut}... (cut: the message repeated a long input)"));
    }
    if let Some(details) = payload.get_mut("details") {
        clip_strings(details);
    }
    // Details of many entries, each short: first the arguments received
    // (a call of thousands of names) go, then all but the field.
    for last_resort in [false, true] {
        if message_bytes(&payload) > 64 << 10
            && let Value::Object(fields) = &mut payload
            && let Some(Value::Object(details)) = fields.get_mut("details")
        {
            if last_resort {
                details.retain(|k, _| k == "field");
            } else {
                details.remove("receivedArguments");
            }
        }
    }
    payload
}

/// Characters of an error message kept (our own messages are far shorter).
const MAX_ERROR_MESSAGE: usize = 1000;
/// Characters of each string in an error's details kept.
const MAX_DETAIL: usize = 200;

/// Details that are the server's own text, never a repeated input: kept whole
/// (cut, a stage error's suggestion would end mid-word).
const OWN_DETAILS: &[&str] = &["suggestion"];

fn clip_strings(value: &mut Value) {
    match value {
        Value::String(s) if s.chars().nth(MAX_DETAIL).is_some() => *s = clip(s),
        Value::Array(items) => items.iter_mut().for_each(clip_strings),
        Value::Object(fields) => fields
            .iter_mut()
            .filter(|(k, _)| !OWN_DETAILS.contains(&k.as_str()))
            .for_each(|(_, v)| clip_strings(v)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_of_many_short_fields_still_fits() {
        let mut fields = serde_json::Map::new();
        for i in 0..400 {
            fields.insert(format!("f{i}"), json!("\"".repeat(40 << 10)));
        }
        let fields = Value::Object(fields);
        let answer = fits_one_message(fields.clone(), message_bytes(&fields), false).unwrap();
        assert!(message_bytes(&answer) <= MAX_MESSAGE);
        assert!(answer.get("answerShortened").is_some());
    }

    #[test]
    fn only_calls_that_read_are_refused_for_a_long_answer() {
        let long = "\"".repeat(6 << 20);
        // A thought with a huge critique: it was recorded, so it answers
        // without the long field, and says so.
        let answer = json!({ "sessionId": "s", "thoughtNumber": 3, "critique": { "text": long } });
        let shortened = fits_one_message(answer.clone(), message_bytes(&answer), false).unwrap();
        assert_eq!(shortened["thoughtNumber"], 3);
        assert!(shortened.get("critique").is_none());
        assert_eq!(shortened["answerShortened"]["omittedFields"], json!(["critique"]));
        // A read of the same size is refused, saying how to ask for less.
        let err = fits_one_message(answer.clone(), message_bytes(&answer), true).unwrap_err();
        assert_eq!(err.code(), "INVALID_OPERATION");
        assert!(err.to_string().contains("read_thoughts"));
        // Short answers pass untouched either way.
        let small = json!({ "thoughtNumber": 1 });
        assert_eq!(
            fits_one_message(small.clone(), message_bytes(&small), true).unwrap(),
            small
        );
        assert_eq!(clip(&"x".repeat(1 << 20)).len(), 203);
        assert_eq!(clip("short"), "short");
    }

    #[test]
    fn an_error_that_repeats_a_long_input_is_cut() {
        let e = Error::operation(format!("unknown operation {:?}", "\"".repeat(1 << 20)));
        let payload = bounded_error(e.payload());
        assert_eq!(payload["code"], "INVALID_OPERATION");
        assert!(payload["message"].as_str().unwrap().len() < 1200);
        assert!(payload.get("details").is_none());
        // A repeated input of 30,000 characters is cut too, and past 64 KiB
        // the details (with `field`) stay.
        for long in [30_000, 40_000] {
            let e = Error::invalid_with(
                "last",
                format!("last must be a whole number, got {:?}", "z".repeat(long)),
                json!({ "got": "z".repeat(long), "valid": ["a", "b"] }),
            );
            let payload = bounded_error(e.payload());
            assert!(payload["message"].as_str().unwrap().len() < 1100, "{long}");
            assert_eq!(payload["details"]["field"], "last");
            assert_eq!(payload["details"]["valid"], json!(["a", "b"]));
            assert!(payload["details"]["got"].as_str().unwrap().len() < 210);
        }
        let gone = bounded_error(Error::session_not_found("x".repeat(10_000)).payload());
        assert!(gone.to_string().len() < 1500, "{gone}");
        assert_eq!(gone["code"], "SESSION_NOT_FOUND");
        let short = Error::operation("unknown operation \"x\"").payload();
        assert_eq!(bounded_error(short.clone()), short);
    }
}
