//! Answers sized for a model's context. The reads that return thought text
//! without being asked for one thought (`load_context`, `session resume`,
//! `session get`, `read_thoughts` without `thoughtNumber`) cut each
//! thought's text to [`PREVIEW_CHARS`] characters and all of it to
//! [`BUDGET_CHARS`]: five thoughts of a megabyte each once made a
//! `load_context` answer of 10 MB, which no model reads. A cut thought says
//! so (`thoughtTruncated`, `thoughtChars`), and so does the answer
//! (`truncated`), with how to read it whole.

use serde::Serialize;
use serde_json::Value;

/// The characters of one thought's text an overview read answers.
pub const PREVIEW_CHARS: usize = 4_000;
/// The characters of thought text an overview read answers in all.
pub const BUDGET_CHARS: usize = 40_000;

/// What the answer says when it cut something.
#[derive(Debug, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Truncated {
    /// How many thoughts' text was cut.
    thoughts: usize,
    max_chars_per_thought: usize,
    max_chars: usize,
    read_whole: &'static str,
}

/// Cuts thought texts of one answer to its budget.
#[derive(Debug)]
pub(crate) struct Preview {
    /// `None`: the reader asked for the whole text (`full: true`).
    left: Option<usize>,
    cut: usize,
}

impl Preview {
    pub fn new(full: bool) -> Preview {
        Preview {
            left: (!full).then_some(BUDGET_CHARS),
            cut: 0,
        }
    }

    /// Cut each of `thoughts` (answered thought objects), spending the
    /// budget on the newest first when `newest_first`, as an agent
    /// resuming work reads from its last thought back.
    pub fn apply(&mut self, thoughts: &mut [Value], newest_first: bool) {
        if newest_first {
            thoughts.iter_mut().rev().for_each(|t| self.one(t));
        } else {
            thoughts.iter_mut().for_each(|t| self.one(t));
        }
    }

    /// Cut one answered thought object's `thought` text.
    pub fn one(&mut self, thought: &mut Value) {
        let Some(left) = self.left.as_mut() else {
            return;
        };
        let Some(Value::String(text)) = thought.get_mut("thought") else {
            return;
        };
        let keep = PREVIEW_CHARS.min(*left);
        match text.char_indices().nth(keep) {
            Some((at, _)) => {
                let chars = keep + text[at..].chars().count();
                text.truncate(at);
                *left -= keep;
                self.cut += 1;
                thought["thoughtTruncated"] = Value::Bool(true);
                thought["thoughtChars"] = Value::from(chars);
            }
            None => *left -= text.chars().count(),
        }
    }

    /// The answer's `truncated` field, when a text was cut.
    pub fn truncated(&self) -> Option<Truncated> {
        (self.cut > 0).then_some(Truncated {
            thoughts: self.cut,
            max_chars_per_thought: PREVIEW_CHARS,
            max_chars: BUDGET_CHARS,
            read_whole: "read_thoughts with sessionId and thoughtNumber answers one main-chain thought whole; \
                         full: true (with branchId for a branch's thoughts) answers every text whole",
        })
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
        p.one(&mut t);
        assert_eq!(t["thought"].as_str().unwrap().chars().count(), PREVIEW_CHARS);
        assert!(t.get("thoughtTruncated").is_none());
        assert!(p.truncated().is_none());
    }

    #[test]
    fn a_long_thought_is_cut_between_characters_and_says_its_length() {
        let mut p = Preview::new(false);
        let mut t = thought(PREVIEW_CHARS + 10);
        p.one(&mut t);
        assert_eq!(t["thought"].as_str().unwrap().chars().count(), PREVIEW_CHARS);
        assert_eq!(t["thoughtTruncated"], true);
        assert_eq!(t["thoughtChars"], PREVIEW_CHARS + 10);
        let said = serde_json::to_value(p.truncated()).unwrap();
        assert_eq!(said["thoughts"], 1);
        assert_eq!(said["maxCharsPerThought"], PREVIEW_CHARS);
    }

    #[test]
    fn the_budget_goes_to_the_newest_thoughts_first() {
        let mut p = Preview::new(false);
        let n = BUDGET_CHARS / PREVIEW_CHARS + 2;
        let mut all: Vec<Value> = (0..n).map(|_| thought(PREVIEW_CHARS)).collect();
        p.apply(&mut all, true);
        // The newest fit whole; the two oldest are left empty and marked.
        assert!(all[n - 1].get("thoughtTruncated").is_none());
        assert_eq!(all[0]["thought"], "");
        assert_eq!(all[1]["thought"], "");
        assert_eq!(all[0]["thoughtChars"], PREVIEW_CHARS);
        assert_eq!(p.truncated().unwrap().thoughts, 2);
        let kept: usize = all.iter().map(|t| t["thought"].as_str().unwrap().chars().count()).sum();
        assert_eq!(kept, BUDGET_CHARS);
    }

    #[test]
    fn full_answers_every_text_whole() {
        let mut p = Preview::new(true);
        let mut all = vec![thought(BUDGET_CHARS * 2)];
        p.apply(&mut all, false);
        assert_eq!(all[0]["thought"].as_str().unwrap().chars().count(), BUDGET_CHARS * 2);
        assert!(p.truncated().is_none());
    }
}
