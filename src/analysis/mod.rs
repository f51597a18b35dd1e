//! Analyses of one reasoning session: pure functions over a `Session` and
//! every one of its thoughts (main chain and branches), with no I/O.
//!
//! - [`session_analysis`]: the SessionAnalysis of `session analyze`.
//! - [`extract_learnings`]: ExtractedLearning items of `session extract_learnings`.
//! - [`deep_analysis`]: the DeepAnalysisResult of `deep_analysis`.
//!
//! All three start from the same `Facts`, computed once from the thoughts
//! in the order they were recorded (their ledger row order, not their
//! numbers). Every formula is written next to the field it fills; ratios are
//! rounded to two decimals and always lie in `[0, 1]`; an empty session is
//! valid input and gives zeros (and a linearity of 1).

mod deep;
mod learnings;
mod session;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

pub use deep::{AnalysisType, Comparison, DeepAnalysisResult, DeepOptions, Pattern, compare, deep_analysis};
pub use learnings::{
    BehaviorCharacteristics, ExtractedLearning, Extraction, KeyMoment, LearningMetadata, LearningType, MomentKind,
    extract_learnings,
};
pub(crate) use learnings::{belief_title, learning_stem};
pub use session::{SessionAnalysis, session_analysis};

use crate::domain::Thought;

/// Round to two decimals (ratios and rates in every analysis).
pub(crate) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// `part / whole`, 0 when `whole` is 0, clamped to `[0, 1]`.
pub(crate) fn ratio(part: usize, whole: usize) -> f64 {
    if whole == 0 {
        0.0
    } else {
        (part as f64 / whole as f64).clamp(0.0, 1.0)
    }
}

fn parse_time(ts: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(ts).ok().map(|t| t.with_timezone(&Utc))
}

/// One branch of a session as the analyses see it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BranchFacts {
    pub id: String,
    /// The main-chain thought it forks from.
    pub from_thought: Option<u32>,
    /// Thought numbers on the branch, in recording order.
    pub numbers: Vec<u32>,
    /// Their node ids, in the same order.
    pub nodes: Vec<String>,
    /// The main chain received a thought after this branch's last thought:
    /// the reasoning came back from the exploration.
    pub converged: bool,
}

/// What every analysis needs to know about a session, computed once.
#[derive(Debug, Clone)]
pub(crate) struct Facts<'a> {
    /// Every thought in recording order.
    pub ordered: Vec<&'a Thought>,
    /// Main-chain thoughts in recording order.
    pub main: Vec<&'a Thought>,
    /// Branches in the order their first thought was recorded.
    pub branches: Vec<BranchFacts>,
    /// Thoughts with `isRevision` (main chain and branches).
    pub revisions: usize,
    /// Milliseconds from the earliest to the latest thought timestamp; 0 with
    /// fewer than two thoughts.
    pub duration_ms: u64,
    /// The last main-chain thought recorded says `nextThoughtNeeded: false`.
    pub complete: bool,
}

impl<'a> Facts<'a> {
    pub fn new(thoughts: &'a [Thought]) -> Facts<'a> {
        let mut ordered: Vec<&Thought> = thoughts.iter().collect();
        ordered.sort_by_key(|t| t.seq);
        let main: Vec<&Thought> = ordered.iter().copied().filter(|t| t.data.branch_id.is_none()).collect();
        let last_main_seq = main.last().map(|t| t.seq);

        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        let mut branches: Vec<BranchFacts> = Vec::new();
        let mut last_seq: Vec<i64> = Vec::new();
        for t in &ordered {
            let Some(b) = t.data.branch_id.as_deref() else { continue };
            let i = *index.entry(b).or_insert_with(|| {
                branches.push(BranchFacts {
                    id: b.to_string(),
                    from_thought: t.data.branch_from_thought,
                    numbers: Vec::new(),
                    nodes: Vec::new(),
                    converged: false,
                });
                last_seq.push(t.seq);
                branches.len() - 1
            });
            branches[i].numbers.push(t.data.thought_number);
            branches[i].nodes.push(t.node_id.clone());
            if branches[i].from_thought.is_none() {
                branches[i].from_thought = t.data.branch_from_thought;
            }
            last_seq[i] = t.seq;
        }
        for (b, seq) in branches.iter_mut().zip(&last_seq) {
            b.converged = last_main_seq.is_some_and(|m| m > *seq);
        }

        let times: Vec<DateTime<Utc>> = ordered.iter().filter_map(|t| parse_time(&t.data.timestamp)).collect();
        let duration_ms = match (times.iter().min(), times.iter().max()) {
            (Some(a), Some(b)) if times.len() >= 2 => (*b - *a).num_milliseconds().max(0) as u64,
            _ => 0,
        };
        Facts {
            revisions: ordered.iter().filter(|t| t.data.is_revision).count(),
            complete: main.last().is_some_and(|t| !t.data.next_thought_needed),
            ordered,
            main,
            branches,
            duration_ms,
        }
    }

    pub fn total(&self) -> usize {
        self.ordered.len()
    }

    /// linearityScore = (main-chain thoughts that are not revisions) / all
    /// thoughts; 1 for an empty session. A thought on a branch or a revision
    /// is a step away from straight-line reasoning.
    pub fn linearity(&self) -> f64 {
        if self.ordered.is_empty() {
            return 1.0;
        }
        let straight = self.main.iter().filter(|t| !t.data.is_revision).count();
        round2(ratio(straight, self.total()))
    }

    /// Branches after which the main chain continued.
    pub fn converged_branches(&self) -> usize {
        self.branches.iter().filter(|b| b.converged).count()
    }

    /// Mean thought length in characters, rounded; 0 when empty.
    pub fn average_length(&self) -> u64 {
        if self.ordered.is_empty() {
            return 0;
        }
        let chars: usize = self.ordered.iter().map(|t| t.data.thought.chars().count()).sum();
        (chars as f64 / self.total() as f64).round() as u64
    }
}

#[cfg(test)]
pub(crate) mod fixtures {
    //! Hand-built sessions for the analysis tests. Thought `k` (1-based, in
    //! the order given) is recorded at 00:00:00 + 30 s × (k - 1), so a session
    //! of k thoughts lasts 30 (k - 1) seconds.

    use crate::domain::{Session, Thought, ThoughtData};

    pub const SID: &str = "00000000-0000-4000-8000-000000000001";

    pub fn session(title: &str) -> Session {
        Session {
            id: SID.into(),
            title: title.into(),
            description: None,
            tags: vec!["project:demo".into(), "debugging".into()],
            thought_count: 0,
            branch_count: 0,
            partition_path: None,
            created_at: "2026-01-01T00:00:00.000Z".into(),
            updated_at: "2026-01-01T01:00:00.000Z".into(),
            last_accessed_at: "2026-01-01T01:00:00.000Z".into(),
            completed_at: None,
            domain: None,
        }
    }

    /// A thought spec: (number, branch, branchFrom, revises, nextThoughtNeeded, text).
    pub type Spec<'a> = (u32, Option<&'a str>, Option<u32>, Option<u32>, bool, &'a str);

    pub fn thoughts(specs: &[Spec<'_>]) -> Vec<Thought> {
        specs
            .iter()
            .enumerate()
            .map(|(i, (n, branch, from, revises, next, text))| {
                let secs = 30 * i as u32;
                Thought {
                    seq: i as i64 + 1,
                    session_id: SID.into(),
                    node_id: match branch {
                        Some(b) => format!("{SID}:{b}:{n}"),
                        None => format!("{SID}:{n}"),
                    },
                    prev_node: None,
                    revises_node: revises.map(|r| match branch {
                        Some(b) => format!("{SID}:{b}:{r}"),
                        None => format!("{SID}:{r}"),
                    }),
                    branch_origin: None,
                    data: ThoughtData {
                        thought: text.to_string(),
                        thought_number: *n,
                        total_thoughts: *n,
                        next_thought_needed: *next,
                        is_revision: revises.is_some(),
                        revises_thought: *revises,
                        branch_from_thought: *from,
                        branch_id: branch.map(str::to_string),
                        needs_more_thoughts: None,
                        include_guide: None,
                        timestamp: format!("2026-01-01T00:{:02}:{:02}.000Z", secs / 60, secs % 60),
                        critique: None,
                        critique_requested: None,
                    },
                }
            })
            .collect()
    }

    /// Four main-chain thoughts, the last one closing the session.
    pub fn linear() -> Vec<Thought> {
        thoughts(&[
            (1, None, None, None, true, "The API got slower after the deploy."),
            (2, None, None, None, true, "The slow endpoint runs a new query."),
            (3, None, None, None, true, "The query misses an index."),
            (4, None, None, None, false, "Add the index; latency is back to normal."),
        ])
    }

    /// Main 1, 2; branch "alt" from 2 with two thoughts; main 3 (back from
    /// the branch); branch "dead" from 3 with one thought that never returns.
    pub fn branching() -> Vec<Thought> {
        thoughts(&[
            (1, None, None, None, true, "Two ways to cache: in process or in Redis."),
            (2, None, None, None, true, "In-process cache is simplest."),
            (3, Some("alt"), Some(2), None, true, "Redis survives restarts."),
            (4, Some("alt"), None, None, true, "Redis adds a network hop."),
            (3, None, None, None, true, "Stay in process; restarts are rare."),
            (4, Some("dead"), Some(3), None, true, "Maybe no cache at all?"),
        ])
    }

    /// Main 1..3, then 4 revises 2, 5 revises 2 again, 6 closes.
    pub fn revising() -> Vec<Thought> {
        thoughts(&[
            (1, None, None, None, true, "The test fails on CI only."),
            (2, None, None, None, true, "CI must use another timezone."),
            (3, None, None, None, true, "Set TZ in CI."),
            (4, None, None, Some(2), true, "No: CI and laptops share the timezone."),
            (5, None, None, Some(2), true, "It is the locale, not the timezone."),
            (6, None, None, None, false, "Pin the locale in the test."),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::fixtures::*;
    use super::*;

    #[test]
    fn facts_of_a_branching_session() {
        let ts = branching();
        let f = Facts::new(&ts);
        assert_eq!(f.total(), 6);
        assert_eq!(f.main.len(), 3);
        assert_eq!(f.branches.len(), 2);
        assert_eq!(f.branches[0].id, "alt");
        assert_eq!(f.branches[0].numbers, [3, 4]);
        assert_eq!(f.branches[0].from_thought, Some(2));
        // Main thought 3 was recorded after alt's last thought, not after dead's.
        assert!(f.branches[0].converged);
        assert!(!f.branches[1].converged);
        assert_eq!(f.duration_ms, 150_000);
        // Three main-chain thoughts, none a revision, of six: 3 / 6.
        assert_eq!(f.linearity(), 0.5);
        assert!(!f.complete);
    }

    #[test]
    fn facts_of_an_empty_session() {
        let f = Facts::new(&[]);
        assert_eq!(f.total(), 0);
        assert_eq!(f.duration_ms, 0);
        assert_eq!(f.linearity(), 1.0);
        assert_eq!(f.average_length(), 0);
        assert!(!f.complete);
    }

    #[test]
    fn ratios_never_leave_the_unit_interval() {
        assert_eq!(ratio(3, 0), 0.0);
        assert_eq!(ratio(5, 4), 1.0);
        assert_eq!(round2(1.0 / 3.0), 0.33);
    }
}
