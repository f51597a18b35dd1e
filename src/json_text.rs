//! Repairs of the JSON text clients write: a string may escape half of a
//! surrogate pair (`"\ud83d"`), as JavaScript clients do when they cut text
//! in the middle of an emoji, and serde_json refuses such a string. Used on
//! the protocol's input (`stdio`) and on exported files read back (`tree`).

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

#[cfg(test)]
mod tests {
    use super::*;

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

    /// Text cut inside an escape: nothing to read is left alone, and a
    /// high surrogate whose partner is cut off is replaced (the rest is
    /// for the JSON reader to refuse).
    #[test]
    fn truncated_escapes_are_left_or_repaired_without_panicking() {
        for s in [r#""\u"#, r#""\ud8"#, "\"\\", "\"\\u12zz\""] {
            assert_eq!(repair_surrogates(s.as_bytes()), None, "{s}");
        }
        for (s, fixed) in [(r#""\ud83d\u"#, r#""\ufffd\u"#), (r#""\ud83d\ude"#, r#""\ufffd\ude"#)] {
            assert_eq!(
                repair_surrogates(s.as_bytes()),
                Some((fixed.as_bytes().to_vec(), 1)),
                "{s}"
            );
        }
    }
}
