//! Repairs and checks of the JSON text clients write: a string may escape
//! half of a surrogate pair (`"\ud83d"`), as JavaScript clients do when they
//! cut text in the middle of an emoji, and serde_json refuses such a string;
//! an object may name a key twice, which serde_json reads as the last one.
//! Used on the protocol's input (`stdio`, `gateway`), on registries
//! imported (`domain`) and on exported files read back (`tree`).

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

/// An object key, borrowed from the text unless it holds escapes.
pub(crate) struct Key<'de>(pub std::borrow::Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Text;
        impl<'de> serde::de::Visitor<'de> for Text {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Key<'de>, E> {
                Ok(Key(std::borrow::Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(Text)
    }
}

/// The keys of one object so far: a short list (most objects have a few
/// keys), a hash set past that, so that an object of many keys costs no
/// more than reading it.
#[derive(Default)]
pub(crate) struct Seen<'de> {
    few: Vec<std::borrow::Cow<'de, str>>,
    many: std::collections::HashSet<std::borrow::Cow<'de, str>>,
}

impl<'de> Seen<'de> {
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.few.iter().any(|k| k == key) || self.many.contains(key)
    }

    /// Note `key`; false if it was there already.
    pub(crate) fn insert(&mut self, key: std::borrow::Cow<'de, str>) -> bool {
        if self.many.is_empty() {
            if self.few.contains(&key) {
                return false;
            }
            if self.few.len() < 16 {
                self.few.push(key);
                return true;
            }
            self.many.extend(self.few.drain(..));
        }
        self.many.insert(key)
    }
}

/// A key as a path shows it: cut to 100 characters.
pub(crate) fn shown(key: &str) -> String {
    match key.char_indices().nth(100) {
        Some((at, _)) => format!("{}...", &key[..at]),
        None => key.to_string(),
    }
}

/// Any JSON value, read for the path of the first key some object in it
/// names twice (keys compared once their escapes are read, as a JSON reader
/// compares them): `.a.b[2].c` below the value.
pub(crate) struct FirstDuplicate(pub Option<String>);

impl<'de> serde::Deserialize<'de> for FirstDuplicate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct Walk;
        impl<'de> serde::de::Visitor<'de> for Walk {
            type Value = FirstDuplicate;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<FirstDuplicate, A::Error> {
                Ok(FirstDuplicate(first_duplicate_in_map(map)?))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<FirstDuplicate, A::Error> {
                let mut found = None;
                let mut at = 0usize;
                while let Some(FirstDuplicate(inner)) = seq.next_element()? {
                    if found.is_none() {
                        found = inner.map(|path| format!("[{at}]{path}"));
                    }
                    at += 1;
                }
                Ok(FirstDuplicate(found))
            }
            fn visit_str<E>(self, _: &str) -> std::result::Result<FirstDuplicate, E> {
                Ok(FirstDuplicate(None))
            }
            fn visit_bool<E>(self, _: bool) -> std::result::Result<FirstDuplicate, E> {
                Ok(FirstDuplicate(None))
            }
            fn visit_i64<E>(self, _: i64) -> std::result::Result<FirstDuplicate, E> {
                Ok(FirstDuplicate(None))
            }
            fn visit_u64<E>(self, _: u64) -> std::result::Result<FirstDuplicate, E> {
                Ok(FirstDuplicate(None))
            }
            fn visit_f64<E>(self, _: f64) -> std::result::Result<FirstDuplicate, E> {
                Ok(FirstDuplicate(None))
            }
            fn visit_unit<E>(self) -> std::result::Result<FirstDuplicate, E> {
                Ok(FirstDuplicate(None))
            }
        }
        d.deserialize_any(Walk)
    }
}

/// The path (`.a.b[2].c`) of the first key some object in the JSON text
/// `text` names twice; `None` when there is none or `text` is not JSON.
pub(crate) fn first_duplicate_key(text: &str) -> Option<String> {
    serde_json::from_str::<FirstDuplicate>(text).ok()?.0
}

/// [`FirstDuplicate`] of an object.
pub(crate) fn first_duplicate_in_map<'de, A: serde::de::MapAccess<'de>>(
    mut map: A,
) -> std::result::Result<Option<String>, A::Error> {
    let mut seen = Seen::default();
    let mut found = None;
    while let Some(Key(key)) = map.next_key()? {
        let FirstDuplicate(inner) = map.next_value()?;
        let shown_key = |key: &str| format!(".{}", shown(key));
        found = match (found, inner) {
            (Some(earlier), _) => Some(earlier),
            (None, Some(path)) => Some(format!("{}{path}", shown_key(&key))),
            (None, None) if seen.contains(&key) => Some(shown_key(&key)),
            (None, None) => None,
        };
        seen.insert(key);
    }
    Ok(found)
}

/// How many bytes `text` takes as a JSON string's contents, as serde_json
/// writes it (quotes, backslashes and control characters escaped; the rest
/// as UTF-8), without writing it.
pub fn escaped_len(text: &str) -> usize {
    text.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_len_is_what_serde_json_writes() {
        for text in [
            "plain",
            "é and 🦀",
            "quote \" back \\ nl \n tab \t",
            "\u{1}\u{1f}\u{8}\u{c}\r",
            "",
        ] {
            let written = serde_json::to_string(text).unwrap();
            assert_eq!(escaped_len(text), written.len() - 2, "{text:?}");
        }
    }

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
