//! Numbering and linking: where a new thought goes in the node graph.
//!
//! The ledger never overwrites. A thought lands on one chain (the main chain
//! or one branch); its number is unique on that chain; its `prev` is the node
//! created just before it on the same chain, or the fork point for the first
//! thought of a branch. Everything here is decided from [`ChainFacts`], which
//! the store answers inside the write transaction, so the decision and the
//! insert see the same data even with several processes writing.

use serde_json::json;

use super::types::ThoughtData;
use super::{MAX_THOUGHT_BYTES, MAX_THOUGHT_NUMBER};
use crate::error::{Error, Result};

/// The `thought` operation's input after type checking.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ThoughtInput {
    pub thought: String,
    pub next_thought_needed: bool,
    pub thought_number: Option<u32>,
    pub total_thoughts: Option<u32>,
    pub is_revision: Option<bool>,
    pub revises_thought: Option<u32>,
    pub branch_from_thought: Option<u32>,
    pub branch_id: Option<String>,
    pub needs_more_thoughts: Option<bool>,
    pub include_guide: Option<bool>,
    /// Sent with `critique: true`: recorded with the thought itself, so
    /// that the request is in the ledger while the client writes the
    /// critique, and stays there if the server stops meanwhile.
    pub critique_requested: bool,
}

#[cfg(test)]
impl ThoughtInput {
    /// A thought of `text` that wants a next one, nothing else set: what
    /// most tests start from (`ThoughtInput { branch_id, ..ThoughtInput::text("x") }`).
    pub(crate) fn text(text: impl Into<String>) -> ThoughtInput {
        ThoughtInput {
            thought: text.into(),
            next_thought_needed: true,
            ..Default::default()
        }
    }
}

/// Questions about a session's existing chains. `branch: None` is the main chain.
pub trait ChainFacts {
    /// Highest thought number on the chain, if it has any thought.
    fn max_number(&mut self, branch: Option<&str>) -> Result<Option<u32>>;
    /// Node id of the thought created last on the chain.
    fn last_node(&mut self, branch: Option<&str>) -> Result<Option<String>>;
    /// Whether the chain holds a thought with this number.
    fn has_thought(&mut self, branch: Option<&str>, number: u32) -> Result<bool>;
    /// The main-chain thought an existing branch forks from.
    fn branch_from(&mut self, branch: &str) -> Result<Option<u32>>;
}

/// Where and how a new thought is stored.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedThought {
    pub node_id: String,
    pub prev_node: Option<String>,
    pub revises_node: Option<String>,
    pub branch_origin: Option<String>,
    pub data: ThoughtData,
    /// This thought opens a branch.
    pub new_branch: bool,
    /// The number was assigned by the server.
    pub auto_numbered: bool,
}

/// Node id: main chain `{sessionId}:{n}`, branch `{sessionId}:{branchId}:{n}`.
pub fn node_id(session_id: &str, branch: Option<&str>, number: u32) -> String {
    match branch {
        Some(b) => format!("{session_id}:{b}:{number}"),
        None => format!("{session_id}:{number}"),
    }
}

/// Branch ids are 1 to 64 characters of `[a-z0-9-]`, so they are safe as
/// directory names and unambiguous inside node ids.
pub fn validate_branch_id(field: &str, id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            format!("branchId must be 1-64 characters of lower-case letters, digits and '-' (got {id:?})"),
        ))
    }
}

fn chain_name(branch: Option<&str>) -> String {
    match branch {
        Some(b) => format!("branch '{b}'"),
        None => "the main chain".to_string(),
    }
}

/// Why no thought can be appended to a chain whose last number is the
/// highest there is, and where to go on instead.
pub fn chain_full(branch: Option<&str>) -> String {
    format!(
        "{} has used the highest thought number ({MAX_THOUGHT_NUMBER}); give a thoughtNumber not used yet on it, \
         or go on in a new branch (branchFromThought earlier than {MAX_THOUGHT_NUMBER}) or a new session",
        chain_name(branch)
    )
}

/// True when `text` has nothing a reader could see: only whitespace,
/// control characters and invisible format characters (zero-width spaces
/// and joiners, direction marks and overrides, word joiner and invisible
/// operators, byte-order mark, soft hyphen, Hangul fillers, the blank
/// Braille pattern, interlinear annotation marks, variation selectors, tag
/// characters).
pub fn is_blank(text: &str) -> bool {
    text.chars().all(|c| {
        c.is_whitespace()
            || c.is_control()
            || matches!(
                c,
                '\u{00AD}'
                    | '\u{034F}'
                    | '\u{061C}'
                    | '\u{115F}'
                    | '\u{1160}'
                    | '\u{17B4}'
                    | '\u{17B5}'
                    | '\u{180B}'..='\u{180F}'
                    | '\u{200B}'..='\u{200F}'
                    | '\u{202A}'..='\u{202E}'
                    | '\u{2060}'..='\u{206F}'
                    | '\u{2800}'
                    | '\u{3164}'
                    | '\u{FE00}'..='\u{FE0F}'
                    | '\u{FEFF}'
                    | '\u{FFA0}'
                    | '\u{FFF9}'..='\u{FFFB}'
                    | '\u{1D173}'..='\u{1D17A}'
                    | '\u{E0000}'..='\u{E007F}'
                    | '\u{E0100}'..='\u{E01EF}'
            )
    })
}

/// Refuse what is wrong with a thought whatever the ledger holds: its text
/// (blank, NUL, over the size limit), a malformed `branchId`, a fork point
/// without a branch, an explicit number past the last there is, and
/// revision fields that contradict each other.
///
/// [`plan_thought`] runs it first; a server runs it again before it waits
/// for the write lock, so that such a thought is refused at once even while
/// another program holds the lock (else it waits for the busy timeout, then
/// gets "database is locked" instead of the field at fault).
pub fn check_thought_input(input: &ThoughtInput) -> Result<()> {
    if is_blank(&input.thought) {
        return Err(Error::invalid(
            "thought",
            "thought must be non-empty text (spaces and invisible characters alone do not count)",
        ));
    }
    if input.thought.contains('\0') {
        return Err(Error::invalid(
            "thought",
            "thought must not contain NUL characters (U+0000)",
        ));
    }
    if input.thought.len() > MAX_THOUGHT_BYTES {
        return Err(Error::invalid_with(
            "thought",
            format!(
                "thought text is {} bytes; the limit is {MAX_THOUGHT_BYTES} bytes (1 MiB)",
                input.thought.len()
            ),
            json!({ "maxBytes": MAX_THOUGHT_BYTES }),
        ));
    }
    match input.branch_id.as_deref() {
        Some(b) => validate_branch_id("branchId", b)?,
        None if input.branch_from_thought.is_some() => {
            return Err(Error::invalid(
                "branchId",
                "branchFromThought needs a branchId naming the branch (e.g. { \"branchFromThought\": 3, \"branchId\": \"alt-approach\" })",
            ));
        }
        None => {}
    }
    if let Some(n) = input.thought_number
        && n > MAX_THOUGHT_NUMBER
    {
        return Err(Error::invalid(
            "thoughtNumber",
            format!("thought numbers stop at {MAX_THOUGHT_NUMBER}"),
        ));
    }
    match (input.is_revision, input.revises_thought) {
        (Some(true), None) => Err(Error::invalid(
            "revisesThought",
            "isRevision: true needs revisesThought: the number of the thought being revised",
        )),
        (Some(false), Some(_)) => Err(Error::invalid(
            "isRevision",
            "revisesThought was given with isRevision: false; drop one of them",
        )),
        _ => Ok(()),
    }
}

/// Decide the number, links and stored fields of a new thought.
pub fn plan_thought(
    session_id: &str,
    input: ThoughtInput,
    facts: &mut impl ChainFacts,
    timestamp: String,
) -> Result<PlannedThought> {
    check_thought_input(&input)?;
    let branch = input.branch_id.as_deref();

    // Which chain, and (for a branch) its fork point.
    let mut new_branch = false;
    let fork = match branch {
        None => None,
        Some(b) => match facts.branch_from(b)? {
            Some(existing) => {
                if let Some(given) = input.branch_from_thought
                    && given != existing
                {
                    return Err(Error::invalid_with(
                        "branchFromThought",
                        format!(
                            "branch '{b}' already forks from thought {existing}; a branch is one chain from one fork point (use a new branchId to fork from thought {given})"
                        ),
                        json!({ "branchFromThought": existing }),
                    ));
                }
                Some(existing)
            }
            None => {
                let Some(from) = input.branch_from_thought else {
                    // `main` is how reads name the main chain: an agent
                    // sending it means that chain.
                    let main = if b == "main" {
                        " (for the main chain itself, leave branchId out)"
                    } else {
                        ""
                    };
                    return Err(Error::invalid(
                        "branchFromThought",
                        format!(
                            "the first thought of branch '{b}' needs branchFromThought: the main-chain thought it forks from{main}"
                        ),
                    ));
                };
                if !facts.has_thought(None, from)? {
                    return Err(Error::invalid_with(
                        "branchFromThought",
                        format!("cannot branch from thought {from}: the main chain has no thought {from}"),
                        json!({ "missingThought": from }),
                    ));
                }
                new_branch = true;
                Some(from)
            }
        },
    };

    // Number: explicit (must be free on this chain) or the next on the chain.
    let max = facts.max_number(branch)?;
    let next_free = || -> u32 {
        match (max, fork) {
            (Some(m), _) => m.saturating_add(1),
            (None, Some(from)) => from.saturating_add(1),
            (None, None) => 1,
        }
    };
    let (number, auto_numbered) = match input.thought_number {
        Some(n) => {
            if facts.has_thought(branch, n)? {
                let message = if next_free() > MAX_THOUGHT_NUMBER {
                    format!(
                        "thought {n} already exists on {}; the ledger never overwrites, and {}",
                        chain_name(branch),
                        chain_full(branch)
                    )
                } else {
                    format!(
                        "thought {n} already exists on {}; the ledger never overwrites (omit thoughtNumber to append as #{})",
                        chain_name(branch),
                        next_free()
                    )
                };
                let details = if next_free() > MAX_THOUGHT_NUMBER {
                    json!({ "chainFull": true })
                } else {
                    json!({ "nextThoughtNumber": next_free() })
                };
                return Err(Error::invalid_with("thoughtNumber", message, details));
            }
            (n, false)
        }
        None => (next_free(), true),
    };
    // Only a number the server gave can be past the last (an agent's own
    // was checked above).
    if number > MAX_THOUGHT_NUMBER {
        let message = if max.is_none() && fork.is_some() {
            // A new branch from the last number there is: nothing after it.
            format!(
                "a branch from thought {MAX_THOUGHT_NUMBER} has no number after it; branch from an earlier thought, \
                 or give this one a thoughtNumber"
            )
        } else {
            chain_full(branch)
        };
        return Err(Error::invalid("thoughtNumber", message));
    }

    // Revision target: an existing thought on the same chain, not this one
    // (the flags agree: checked above).
    let is_revision = input.revises_thought.is_some();
    let revises_node = match input.revises_thought {
        None => None,
        Some(r) if r == number => {
            // On a branch the numbers are the branch's own: an agent asking
            // for a main-chain thought gets told where it is.
            let how = match branch {
                Some(_) => format!(
                    " (revisions are numbered within their own chain, and this thought is number {number} of {}; \
                     to revise the main chain's thought {r}, record the revision without branchId)",
                    chain_name(branch)
                ),
                None => String::new(),
            };
            return Err(Error::invalid(
                "revisesThought",
                format!("thought {number} cannot revise itself{how}"),
            ));
        }
        Some(r) => {
            if !facts.has_thought(branch, r)? {
                return Err(Error::invalid_with(
                    "revisesThought",
                    format!("cannot revise thought {r}: {} has no thought {r}", chain_name(branch)),
                    json!({ "missingThought": r }),
                ));
            }
            Some(node_id(session_id, branch, r))
        }
    };

    let branch_origin = fork.map(|from| node_id(session_id, None, from));
    let prev_node = match facts.last_node(branch)? {
        Some(last) => Some(last),
        None => branch_origin.clone(),
    };
    let total = input.total_thoughts.unwrap_or(number).max(number);

    Ok(PlannedThought {
        node_id: node_id(session_id, branch, number),
        prev_node,
        revises_node,
        branch_origin,
        new_branch,
        auto_numbered,
        data: ThoughtData {
            thought: input.thought,
            thought_number: number,
            total_thoughts: total,
            next_thought_needed: input.next_thought_needed,
            is_revision,
            revises_thought: input.revises_thought,
            branch_from_thought: fork,
            branch_id: input.branch_id,
            needs_more_thoughts: input.needs_more_thoughts,
            include_guide: input.include_guide,
            timestamp,
            critique: None,
            critique_requested: input.critique_requested.then_some(true),
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// An in-memory ledger of one session, for testing the rules alone.
    #[derive(Default)]
    pub struct FakeChains {
        pub nodes: Vec<PlannedThought>,
    }

    impl FakeChains {
        fn on(&self, branch: Option<&str>) -> impl Iterator<Item = &PlannedThought> {
            let branch = branch.map(str::to_string);
            self.nodes.iter().filter(move |n| n.data.branch_id == branch)
        }

        pub fn add(&mut self, input: ThoughtInput) -> Result<PlannedThought> {
            let planned = plan_thought("s", input, self, "t".into())?;
            self.nodes.push(planned.clone());
            Ok(planned)
        }
    }

    impl ChainFacts for FakeChains {
        fn max_number(&mut self, branch: Option<&str>) -> Result<Option<u32>> {
            Ok(self.on(branch).map(|n| n.data.thought_number).max())
        }
        fn last_node(&mut self, branch: Option<&str>) -> Result<Option<String>> {
            Ok(self.on(branch).last().map(|n| n.node_id.clone()))
        }
        fn has_thought(&mut self, branch: Option<&str>, number: u32) -> Result<bool> {
            Ok(self.on(branch).any(|n| n.data.thought_number == number))
        }
        fn branch_from(&mut self, branch: &str) -> Result<Option<u32>> {
            Ok(self.on(Some(branch)).next().and_then(|n| n.data.branch_from_thought))
        }
    }

    fn text(t: &str) -> ThoughtInput {
        ThoughtInput::text(t)
    }

    #[test]
    fn auto_numbering_appends_to_each_chain() {
        let mut l = FakeChains::default();
        assert_eq!(l.add(text("a")).unwrap().node_id, "s:1");
        assert_eq!(l.add(text("b")).unwrap().node_id, "s:2");
        let b1 = l
            .add(ThoughtInput {
                branch_id: Some("alt".into()),
                branch_from_thought: Some(1),
                ..text("c")
            })
            .unwrap();
        assert_eq!(b1.node_id, "s:alt:2");
        assert_eq!(b1.prev_node.as_deref(), Some("s:1"));
        assert_eq!(b1.branch_origin.as_deref(), Some("s:1"));
        assert!(b1.new_branch);
        let b2 = l
            .add(ThoughtInput {
                branch_id: Some("alt".into()),
                ..text("d")
            })
            .unwrap();
        assert_eq!(b2.node_id, "s:alt:3");
        assert_eq!(b2.prev_node.as_deref(), Some("s:alt:2"));
        assert_eq!(b2.data.branch_from_thought, Some(1));
        assert_eq!(l.add(text("e")).unwrap().node_id, "s:3");
    }

    /// `main` is what reads call the main chain: sent as a branch id, the
    /// refusal says to leave branchId out.
    #[test]
    fn a_branch_named_main_points_to_the_main_chain() {
        let mut l = FakeChains::default();
        l.add(text("a")).unwrap();
        let err = l
            .add(ThoughtInput {
                branch_id: Some("main".into()),
                ..text("b")
            })
            .unwrap_err()
            .to_string();
        assert!(err.contains("for the main chain itself, leave branchId out"), "{err}");
        let err = l
            .add(ThoughtInput {
                branch_id: Some("alt".into()),
                ..text("b")
            })
            .unwrap_err()
            .to_string();
        assert!(!err.contains("main chain itself"), "{err}");
    }

    #[test]
    fn duplicates_are_rejected_with_the_next_number() {
        let mut l = FakeChains::default();
        l.add(text("a")).unwrap();
        let err = l
            .add(ThoughtInput {
                thought_number: Some(1),
                ..text("again")
            })
            .unwrap_err();
        assert_eq!(err.code(), "INVALID_PAYLOAD");
        assert_eq!(err.details().unwrap()["nextThoughtNumber"], 2);
    }

    /// A chain whose last thought has the highest number offers no number
    /// past it: it says to go on in a branch or a new session.
    #[test]
    fn a_chain_at_the_highest_number_says_where_to_go_on() {
        let mut l = FakeChains::default();
        l.add(ThoughtInput {
            thought_number: Some(MAX_THOUGHT_NUMBER),
            ..text("last")
        })
        .unwrap();
        let again = l
            .add(ThoughtInput {
                thought_number: Some(MAX_THOUGHT_NUMBER),
                ..text("again")
            })
            .unwrap_err();
        assert_eq!(again.code(), "INVALID_PAYLOAD");
        assert_eq!(again.details().unwrap()["chainFull"], true);
        assert!(again.details().unwrap().get("nextThoughtNumber").is_none());
        assert!(again.to_string().contains("new branch"), "{again}");
        let next = l.add(text("next")).unwrap_err();
        assert!(next.to_string().contains("highest thought number"), "{next}");
        // A new branch from that last thought has no number after it either.
        let fork = l
            .add(ThoughtInput {
                branch_id: Some("on".into()),
                branch_from_thought: Some(MAX_THOUGHT_NUMBER),
                ..text("on")
            })
            .unwrap_err();
        assert!(fork.to_string().contains("branch from an earlier thought"), "{fork}");
    }

    #[test]
    fn backward_thinking_links_in_creation_order() {
        let mut l = FakeChains::default();
        for n in (1..=5).rev() {
            let p = l
                .add(ThoughtInput {
                    thought_number: Some(n),
                    total_thoughts: Some(5),
                    ..text("x")
                })
                .unwrap();
            assert_eq!(p.data.total_thoughts, 5);
        }
        assert_eq!(l.nodes[0].prev_node, None);
        assert_eq!(l.nodes[4].node_id, "s:1");
        assert_eq!(l.nodes[4].prev_node.as_deref(), Some("s:2"));
        // The next auto-numbered thought follows the highest number.
        assert_eq!(l.add(text("y")).unwrap().node_id, "s:6");
    }

    #[test]
    fn revisions_need_an_existing_target_on_the_same_chain() {
        let mut l = FakeChains::default();
        l.add(text("a")).unwrap();
        let r = l
            .add(ThoughtInput {
                revises_thought: Some(1),
                ..text("fix")
            })
            .unwrap();
        assert!(r.data.is_revision);
        assert_eq!(r.revises_node.as_deref(), Some("s:1"));
        for bad in [
            ThoughtInput {
                revises_thought: Some(9),
                ..text("x")
            },
            ThoughtInput {
                is_revision: Some(true),
                ..text("x")
            },
            ThoughtInput {
                thought_number: Some(7),
                revises_thought: Some(7),
                ..text("x")
            },
            ThoughtInput {
                is_revision: Some(false),
                revises_thought: Some(1),
                ..text("x")
            },
        ] {
            assert_eq!(l.add(bad).unwrap_err().code(), "INVALID_PAYLOAD");
        }
        assert_eq!(l.nodes.len(), 2);
    }

    #[test]
    fn branch_rules() {
        let mut l = FakeChains::default();
        l.add(text("a")).unwrap();
        let cases = [
            ThoughtInput {
                branch_id: Some("x".into()),
                ..text("no fork point")
            },
            ThoughtInput {
                branch_id: Some("x".into()),
                branch_from_thought: Some(5),
                ..text("missing fork")
            },
            ThoughtInput {
                branch_from_thought: Some(1),
                ..text("no branch id")
            },
            ThoughtInput {
                branch_id: Some("../../x".into()),
                branch_from_thought: Some(1),
                ..text("bad id")
            },
            ThoughtInput {
                branch_id: Some("UPPER".into()),
                branch_from_thought: Some(1),
                ..text("bad id")
            },
        ];
        for bad in cases {
            assert_eq!(l.add(bad).unwrap_err().code(), "INVALID_PAYLOAD");
        }
        l.add(ThoughtInput {
            branch_id: Some("x".into()),
            branch_from_thought: Some(1),
            ..text("ok")
        })
        .unwrap();
        let err = l
            .add(ThoughtInput {
                branch_id: Some("x".into()),
                branch_from_thought: Some(2),
                ..text("other fork")
            })
            .unwrap_err();
        assert_eq!(err.details().unwrap()["field"], "branchFromThought");
        // A branch thought revising its own number is told that numbers are
        // the branch's own, and how to revise the main chain's.
        let err = l
            .add(ThoughtInput {
                branch_id: Some("x".into()),
                thought_number: Some(3),
                revises_thought: Some(3),
                ..text("revise main 3?")
            })
            .unwrap_err();
        let message = err.to_string();
        assert!(
            message.contains("cannot revise itself")
                && message.contains("branch 'x'")
                && message.contains("without branchId"),
            "{message}"
        );
    }

    #[test]
    fn text_limits() {
        let mut l = FakeChains::default();
        assert!(l.add(text("   ")).is_err());
        assert!(l.add(text("\u{200B}")).is_err());
        assert!(l.add(text(" \u{FEFF}\u{2060}\n")).is_err());
        assert!(l.add(text("\u{200B}a")).is_ok());
        for invisible in [
            "\u{202E}",
            "\u{061C}",
            "\u{3164}",
            "\u{FE0F}",
            "\u{E0020}",
            "\u{1}\u{7F}",
            "\u{2066}\u{2069}",
            "\u{2800}",
            "\u{FFF9}\u{FFFB}",
        ] {
            assert!(l.add(text(invisible)).is_err(), "{invisible:?}");
        }
        assert!(
            l.add(text("\u{FE0F}\u{2764}")).is_ok(),
            "a heart with its selector is visible"
        );
        assert!(l.add(text("a\u{0}b")).is_err());
        assert!(l.add(text(&"x".repeat(MAX_THOUGHT_BYTES + 1))).is_err());
        assert!(l.add(text(&"x".repeat(MAX_THOUGHT_BYTES))).is_ok());
    }

    /// The checks that need no ledger data refuse alone what
    /// `plan_thought` refuses for them, with the same field, whatever the
    /// chains hold; and they let through what needs the chains to judge.
    #[test]
    fn input_checks_need_no_chains() {
        let field = |input: ThoughtInput| match check_thought_input(&input) {
            Err(Error::InvalidPayload { field, .. }) => field,
            other => panic!("{input:?}: {other:?}"),
        };
        let with = |f: fn(&mut ThoughtInput)| {
            let mut input = text("x");
            f(&mut input);
            input
        };
        let refused = [
            (text(" \u{200B}"), "thought"),
            (text("a\u{0}b"), "thought"),
            (text(&"x".repeat(MAX_THOUGHT_BYTES + 1)), "thought"),
            (with(|i| i.branch_id = Some("../../x".into())), "branchId"),
            (with(|i| i.branch_from_thought = Some(1)), "branchId"),
            (
                with(|i| i.thought_number = Some(MAX_THOUGHT_NUMBER + 1)),
                "thoughtNumber",
            ),
            (with(|i| i.is_revision = Some(true)), "revisesThought"),
            (
                with(|i| {
                    i.is_revision = Some(false);
                    i.revises_thought = Some(1);
                }),
                "isRevision",
            ),
        ];
        for (input, expected) in refused {
            assert_eq!(field(input.clone()), expected);
            let mut l = FakeChains::default();
            l.add(text("one")).unwrap();
            match l.add(input) {
                Err(Error::InvalidPayload { field, .. }) => assert_eq!(field, expected),
                other => panic!("{other:?}"),
            }
        }
        // A duplicate number, a missing fork point or revision target: only
        // the chains can tell.
        for input in [
            with(|i| i.thought_number = Some(1)),
            with(|i| i.branch_id = Some("new".into())),
            with(|i| i.revises_thought = Some(9)),
        ] {
            assert!(check_thought_input(&input).is_ok(), "{input:?}");
        }
    }

    #[derive(Debug, Clone)]
    enum Step {
        Main(Option<u32>),
        Branch(u8, Option<u32>, Option<u32>),
        Revise(Option<u8>, u32),
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            4 => proptest::option::weighted(0.3, 1u32..12).prop_map(Step::Main),
            2 => (0u8..3, proptest::option::of(1u32..8), proptest::option::weighted(0.2, 1u32..12))
                .prop_map(|(b, f, n)| Step::Branch(b, f, n)),
            1 => (proptest::option::of(0u8..3), 1u32..12).prop_map(|(b, r)| Step::Revise(b, r)),
        ]
    }

    proptest! {
        #[test]
        fn numbering_and_linking_invariants(steps in proptest::collection::vec(step(), 1..60)) {
            let mut l = FakeChains::default();
            for s in steps {
                let input = match s {
                    Step::Main(n) => ThoughtInput { thought_number: n, ..text("m") },
                    Step::Branch(b, from, n) => ThoughtInput {
                        branch_id: Some(format!("b{b}")), branch_from_thought: from, thought_number: n, ..text("b")
                    },
                    Step::Revise(b, r) => ThoughtInput {
                        branch_id: b.map(|b| format!("b{b}")), revises_thought: Some(r), ..text("r")
                    },
                };
                let before = l.nodes.len();
                match l.add(input) {
                    Ok(p) => {
                        // Auto-numbered thoughts take max + 1 (or fork + 1) on their chain.
                        let chain: Vec<_> = l.nodes[..before].iter()
                            .filter(|n| n.data.branch_id == p.data.branch_id).collect();
                        if p.auto_numbered {
                            let expect = chain.iter().map(|n| n.data.thought_number).max()
                                .map(|m| m + 1)
                                .or(p.data.branch_from_thought.map(|f| f + 1))
                                .unwrap_or(1);
                            prop_assert_eq!(p.data.thought_number, expect);
                        }
                        // prev is the last node created on the chain, else the fork point.
                        let expect_prev = chain.last().map(|n| n.node_id.clone()).or(p.branch_origin.clone());
                        prop_assert_eq!(&p.prev_node, &expect_prev);
                        prop_assert!(p.data.total_thoughts >= p.data.thought_number);
                    }
                    Err(e) => {
                        prop_assert_eq!(e.code(), "INVALID_PAYLOAD");
                        prop_assert_eq!(l.nodes.len(), before);
                    }
                }
            }
            // Node ids are unique; every link points at an existing node.
            let ids: std::collections::HashSet<_> = l.nodes.iter().map(|n| n.node_id.clone()).collect();
            prop_assert_eq!(ids.len(), l.nodes.len());
            for n in &l.nodes {
                for link in [&n.prev_node, &n.revises_node, &n.branch_origin].into_iter().flatten() {
                    prop_assert!(ids.contains(link), "dangling link {}", link);
                }
                if n.data.branch_id.is_some() {
                    prop_assert!(n.branch_origin.as_ref().is_some_and(|o| !o.contains(":b")));
                }
            }
        }
    }
}
