//! Answers sized for a model's context. The reads that return thought text
//! without being asked for one thought (`load_context`, `session resume`,
//! `session get`, `read_thoughts` without `thoughtNumber`) cut each
//! thought's text (and critique) to [`PREVIEW_CHARS`] characters, all of
//! them to [`BUDGET_CHARS`], and list at most [`MAX_LISTED`]
//! thoughts: five thoughts of a megabyte each once made a `load_context`
//! answer of 10 MB, and the entries of 20,000 short ones 6 MB, which no
//! model reads. A cut thought says so (`thoughtTruncated`, `thoughtChars`),
//! and so does the answer (`truncated`), with how many thoughts it left out
//! and how to read them.

use serde::Serialize;
use serde_json::Value;

/// The characters of one thought's text (or critique) an overview read answers.
pub const PREVIEW_CHARS: usize = 4_000;
/// The characters of thought and critique text an overview read answers in all.
pub const BUDGET_CHARS: usize = 40_000;
/// The thoughts an overview read lists at most.
pub const MAX_LISTED: usize = 50;

/// What the answer says when it cut something.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Truncated {
    /// How many listed thoughts' text was cut.
    thoughts: usize,
    /// How many listed thoughts' critique was cut.
    #[serde(skip_serializing_if = "is_zero")]
    critiques: usize,
    /// How many thoughts were not listed, the budget spent.
    #[serde(skip_serializing_if = "is_zero")]
    left_out: usize,
    max_chars_per_thought: usize,
    max_chars: usize,
    max_thoughts: usize,
    read_whole: &'static str,
    /// The `read_thoughts` arguments that read on from what was left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    read_rest: Option<ReadRest>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// `read_thoughts` arguments for the thoughts an answer left out.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ReadRest {
    pub session_id: String,
    pub range: [u32; 2],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
}

/// Cuts thought texts of one answer to its budget.
#[derive(Debug)]
pub(crate) struct Preview {
    /// `None`: the reader asked for the whole text (`full: true`).
    left: Option<usize>,
    listed: usize,
    cut: usize,
    critiques_cut: usize,
    left_out: usize,
    read_rest: Option<ReadRest>,
}

impl Preview {
    pub fn new(full: bool) -> Preview {
        Preview {
            left: (!full).then_some(BUDGET_CHARS),
            listed: 0,
            cut: 0,
            critiques_cut: 0,
            left_out: 0,
            read_rest: None,
        }
    }

    /// Whether a thought of `chars` characters, with a critique of
    /// `critique_chars`, is listed, next in the order the budget is spent
    /// in, and how many characters of each it keeps: the critique is paid
    /// for from the same budget as the text.
    pub fn admit(&mut self, chars: usize, critique_chars: usize) -> Option<(usize, usize)> {
        let Some(left) = self.left.as_mut() else {
            return Some((chars, critique_chars));
        };
        if self.listed == MAX_LISTED || *left == 0 {
            self.left_out += 1;
            return None;
        }
        self.listed += 1;
        let keep = chars.min(PREVIEW_CHARS).min(*left);
        *left -= keep;
        let keep_critique = critique_chars.min(PREVIEW_CHARS).min(*left);
        *left -= keep_critique;
        self.cut += usize::from(keep < chars);
        self.critiques_cut += usize::from(keep_critique < critique_chars);
        Some((keep, keep_critique))
    }

    /// The listed ones of `thoughts` (answered thought objects), each cut,
    /// spending the budget on the newest first when `newest_first`, as an
    /// agent resuming work reads from its last thought back.
    pub fn apply(&mut self, thoughts: Vec<Value>, newest_first: bool) -> Vec<Value> {
        if newest_first {
            let mut kept: Vec<Value> = thoughts
                .into_iter()
                .rev()
                .filter_map(|mut t| self.one(&mut t).then_some(t))
                .collect();
            kept.reverse();
            kept
        } else {
            thoughts
                .into_iter()
                .filter_map(|mut t| self.one(&mut t).then_some(t))
                .collect()
        }
    }

    /// Whether one answered thought object is listed; its `thought` text
    /// and critique cut if so.
    pub fn one(&mut self, thought: &mut Value) -> bool {
        let chars_of = |v: Option<&Value>| v.and_then(Value::as_str).map_or(0, |t| t.chars().count());
        let chars = chars_of(thought.get("thought"));
        let critique_chars = chars_of(thought.pointer("/critique/text"));
        let Some((keep, keep_critique)) = self.admit(chars, critique_chars) else {
            return false;
        };
        if keep < chars {
            if let Some(Value::String(text)) = thought.get_mut("thought") {
                cut(text, keep);
            }
            thought["thoughtTruncated"] = Value::Bool(true);
            thought["thoughtChars"] = Value::from(chars);
        }
        if keep_critique < critique_chars {
            if let Some(Value::String(text)) = thought.pointer_mut("/critique/text") {
                cut(text, keep_critique);
            }
            thought["critique"]["textTruncated"] = Value::Bool(true);
            thought["critique"]["textChars"] = Value::from(critique_chars);
        }
        true
    }

    /// Say which `read_thoughts` call reads on from what was left out.
    pub fn read_rest(&mut self, rest: ReadRest) {
        self.read_rest = Some(rest);
    }

    /// Count `n` more thoughts left out (found past the last one read).
    pub fn also_left_out(&mut self, n: usize) {
        self.left_out += n;
    }

    /// The answer's `truncated` field, when something was cut or left out.
    pub fn truncated(self) -> Option<Truncated> {
        (self.cut > 0 || self.critiques_cut > 0 || self.left_out > 0).then_some(Truncated {
            thoughts: self.cut,
            critiques: self.critiques_cut,
            left_out: self.left_out,
            max_chars_per_thought: PREVIEW_CHARS,
            max_chars: BUDGET_CHARS,
            max_thoughts: MAX_LISTED,
            read_whole: "read_thoughts with sessionId and thoughtNumber (and branchId for a branch's) answers one \
                         thought whole; range (with branchId for a branch) reads a part; full: true answers every \
                         text whole",
            read_rest: self.read_rest,
        })
    }
}

/// `text` cut to its first `chars` characters.
fn cut(text: &mut String, chars: usize) {
    if let Some((at, _)) = text.char_indices().nth(chars) {
        text.truncate(at);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn thought(chars: usize) -> Value {
        json!({ "thought": "é".repeat(chars), "thoughtNumber": 1 })
    }

    #[test]
    fn a_short_thought_is_left_whole_and_unmarked() {
        let mut p = Preview::new(false);
        let mut t = thought(PREVIEW_CHARS);
        assert!(p.one(&mut t));
        assert_eq!(t["thought"].as_str().unwrap().chars().count(), PREVIEW_CHARS);
        assert!(t.get("thoughtTruncated").is_none());
        assert!(p.truncated().is_none());
    }

    #[test]
    fn a_long_thought_is_cut_between_characters_and_says_its_length() {
        let mut p = Preview::new(false);
        let mut t = thought(PREVIEW_CHARS + 10);
        t["critique"] = json!({ "text": "é".repeat(PREVIEW_CHARS + 1), "model": "m" });
        assert!(p.one(&mut t));
        assert_eq!(t["thought"].as_str().unwrap().chars().count(), PREVIEW_CHARS);
        assert_eq!(t["thoughtTruncated"], true);
        assert_eq!(t["thoughtChars"], PREVIEW_CHARS + 10);
        assert_eq!(t["critique"]["text"].as_str().unwrap().chars().count(), PREVIEW_CHARS);
        assert_eq!(t["critique"]["textChars"], PREVIEW_CHARS + 1);
        let said = serde_json::to_value(p.truncated()).unwrap();
        assert_eq!(said["thoughts"], 1);
        assert_eq!(said["maxCharsPerThought"], PREVIEW_CHARS);
        assert!(said.get("leftOut").is_none(), "{said}");
        assert_eq!(said["critiques"], 1);
    }

    /// A critique is paid for from the same budget: an answer whose
    /// critiques alone are cut still says so, and lists fewer thoughts.
    #[test]
    fn critiques_share_the_budget_and_are_told_cut() {
        let mut p = Preview::new(false);
        let all: Vec<Value> = (0..20)
            .map(|_| json!({ "thought": "short", "critique": { "text": "c".repeat(6_000) } }))
            .collect();
        let kept = p.apply(all, false);
        // Each listed thought costs 5 + 4,000 characters of the 40,000.
        assert_eq!(kept.len(), 10);
        assert_eq!(kept[0]["critique"]["textChars"], 6_000);
        let said = p.truncated().unwrap();
        assert_eq!((said.thoughts, said.critiques, said.left_out), (0, 10, 10));
    }

    #[test]
    fn the_budget_goes_to_the_newest_thoughts_first_and_the_rest_is_left_out() {
        let mut p = Preview::new(false);
        let n = BUDGET_CHARS / PREVIEW_CHARS + 2;
        let all: Vec<Value> = (0..n)
            .map(|i| json!({ "thought": "é".repeat(PREVIEW_CHARS), "thoughtNumber": i + 1 }))
            .collect();
        let kept = p.apply(all, true);
        // The newest fit whole, in their order; the two oldest are not listed.
        assert_eq!(kept.len(), n - 2);
        assert_eq!(kept[0]["thoughtNumber"], 3);
        assert_eq!(kept[n - 3]["thoughtNumber"], n);
        assert!(kept.iter().all(|t| t.get("thoughtTruncated").is_none()));
        let said = p.truncated().unwrap();
        assert_eq!((said.thoughts, said.left_out), (0, 2));
    }

    #[test]
    fn an_overview_lists_a_bounded_number_of_thoughts() {
        let mut p = Preview::new(false);
        let all: Vec<Value> = (0..MAX_LISTED + 7).map(|_| thought(3)).collect();
        let kept = p.apply(all, false);
        assert_eq!(kept.len(), MAX_LISTED);
        assert_eq!(p.truncated().unwrap().left_out, 7);
    }

    #[test]
    fn full_answers_every_text_whole() {
        let mut p = Preview::new(true);
        let mut all = vec![thought(BUDGET_CHARS * 2)];
        all.extend((0..MAX_LISTED).map(|_| thought(1)));
        let all = p.apply(all, false);
        assert_eq!(all.len(), MAX_LISTED + 1);
        assert_eq!(all[0]["thought"].as_str().unwrap().chars().count(), BUDGET_CHARS * 2);
        assert!(p.truncated().is_none());
    }
}
