//! SessionAnalysis: objective metrics of one session.

use serde::Serialize;

use super::{Facts, ratio, round2};
use crate::domain::{Session, Thought};

/// The SessionAnalysis data model, plus the summary fields the `session
/// analyze` tool description lists (`linearity`, `density`, `completion`,
/// `branchCount`), which do not collide with it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionAnalysis {
    pub session_id: String,
    pub metadata: Metadata,
    pub structure: Structure,
    pub quality: Quality,
    /// Same as `structure.linearityScore`.
    pub linearity: f64,
    /// Same as `structure.thoughtDensity`.
    pub density: f64,
    /// 1 when the session is complete; otherwise the highest main-chain
    /// thought number divided by the latest `totalThoughts` estimate (the one
    /// on the last main-chain thought), at most 0.99; 0 when empty.
    pub completion: f64,
    /// Same as `metadata.branchCount`.
    pub branch_count: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metadata {
    pub title: String,
    pub tags: Vec<String>,
    /// Every thought, main chain and branches.
    pub thought_count: u64,
    /// Distinct branch ids.
    pub branch_count: u64,
    /// Thoughts with `isRevision`.
    pub revision_count: u64,
    /// Milliseconds from the earliest to the latest thought timestamp (0 with fewer than two thoughts).
    pub duration: u64,
    pub created_at: String,
    pub last_updated_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Structure {
    /// Main-chain thoughts that are not revisions / all thoughts (1 when empty).
    pub linearity_score: f64,
    /// Revisions / all thoughts (0 when empty).
    pub revision_rate: f64,
    /// Count of distinct branch ids: the field's documented meaning,
    /// whatever its name suggests.
    pub max_depth: u64,
    /// Thoughts per minute: all thoughts / (duration in minutes); 0 when the duration is 0.
    pub thought_density: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quality {
    /// Thoughts recorded with `critique: true` (answered or not).
    pub critique_requests: u64,
    /// Some branch was followed by more main-chain thoughts.
    pub has_convergence: bool,
    /// The last main-chain thought recorded has `nextThoughtNeeded: false`.
    pub is_complete: bool,
}

/// Analyse a session. `critique_requests` is the number of its thoughts
/// recorded with `critique: true`, which the ledger keeps beside the thoughts.
pub fn session_analysis(session: &Session, thoughts: &[Thought], critique_requests: u64) -> SessionAnalysis {
    let f = Facts::new(thoughts);
    let n = f.total();
    let linearity = f.linearity();
    let density = if f.duration_ms == 0 {
        0.0
    } else {
        round2(n as f64 / (f.duration_ms as f64 / 60_000.0))
    };
    let completion = if f.complete {
        1.0
    } else {
        match f.main.last() {
            None => 0.0,
            Some(last) => {
                let highest = f.main.iter().map(|t| t.data.thought_number).max().unwrap_or(0);
                let estimate = last.data.total_thoughts.max(1);
                round2((f64::from(highest) / f64::from(estimate)).min(0.99))
            }
        }
    };
    let branch_count = f.branches.len() as u64;
    SessionAnalysis {
        session_id: session.id.clone(),
        metadata: Metadata {
            title: session.title.clone(),
            tags: session.tags.clone(),
            thought_count: n as u64,
            branch_count,
            revision_count: f.revisions as u64,
            duration: f.duration_ms,
            created_at: session.created_at.clone(),
            last_updated_at: session.updated_at.clone(),
        },
        structure: Structure {
            linearity_score: linearity,
            revision_rate: round2(ratio(f.revisions, n)),
            max_depth: branch_count,
            thought_density: density,
        },
        quality: Quality {
            critique_requests,
            has_convergence: f.converged_branches() > 0,
            is_complete: f.complete,
        },
        linearity,
        density,
        completion,
        branch_count,
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    #[test]
    fn linear_session() {
        let a = session_analysis(&session("linear"), &linear(), 0);
        assert_eq!(a.metadata.thought_count, 4);
        assert_eq!(a.metadata.branch_count, 0);
        assert_eq!(a.metadata.revision_count, 0);
        // Four thoughts 30 s apart: 90 s.
        assert_eq!(a.metadata.duration, 90_000);
        assert_eq!(a.structure.linearity_score, 1.0);
        assert_eq!(a.structure.revision_rate, 0.0);
        assert_eq!(a.structure.max_depth, 0);
        // 4 thoughts / 1.5 minutes = 2.666...
        assert_eq!(a.structure.thought_density, 2.67);
        assert!(!a.quality.has_convergence);
        assert!(a.quality.is_complete);
        assert_eq!(a.completion, 1.0);
        assert_eq!(a.metadata.created_at, "2026-01-01T00:00:00.000Z");
        assert_eq!(a.metadata.last_updated_at, "2026-01-01T01:00:00.000Z");
    }

    #[test]
    fn branching_session() {
        let a = session_analysis(&session("branching"), &branching(), 1);
        assert_eq!(a.metadata.thought_count, 6);
        assert_eq!(a.metadata.branch_count, 2);
        assert_eq!(a.branch_count, 2);
        // Main 1, 2, 3 are straight; the three branch thoughts are not: 3 / 6.
        assert_eq!(a.structure.linearity_score, 0.5);
        assert_eq!(a.linearity, 0.5);
        assert_eq!(a.structure.max_depth, 2);
        // 6 thoughts over 150 s = 2.5 minutes.
        assert_eq!(a.structure.thought_density, 2.4);
        assert_eq!(a.quality.critique_requests, 1);
        // Main thought 3 came after branch "alt".
        assert!(a.quality.has_convergence);
        assert!(!a.quality.is_complete);
        // Highest main number 3, latest estimate 3: capped at 0.99 until closed.
        assert_eq!(a.completion, 0.99);
    }

    #[test]
    fn revising_session() {
        let a = session_analysis(&session("revising"), &revising(), 0);
        assert_eq!(a.metadata.revision_count, 2);
        // Main-chain non-revisions 1, 2, 3, 6: 4 / 6.
        assert_eq!(a.structure.linearity_score, 0.67);
        // 2 / 6.
        assert_eq!(a.structure.revision_rate, 0.33);
        assert_eq!(a.structure.max_depth, 0);
        assert_eq!(a.structure.thought_density, 2.4);
        assert!(!a.quality.has_convergence);
        assert!(a.quality.is_complete);
    }

    #[test]
    fn empty_session() {
        let a = session_analysis(&session("empty"), &[], 0);
        assert_eq!(a.metadata.thought_count, 0);
        assert_eq!(a.metadata.duration, 0);
        assert_eq!(a.structure.linearity_score, 1.0);
        assert_eq!(a.structure.revision_rate, 0.0);
        assert_eq!(a.structure.thought_density, 0.0);
        assert!(!a.quality.is_complete);
        assert!(!a.quality.has_convergence);
        assert_eq!(a.completion, 0.0);
    }

    #[test]
    fn one_thought_has_no_duration_or_density() {
        let ts = thoughts(&[(1, None, None, None, true, "only")]);
        let a = session_analysis(&session("one"), &ts, 0);
        assert_eq!(a.metadata.duration, 0);
        assert_eq!(a.structure.thought_density, 0.0);
        assert_eq!(a.completion, 0.99);
    }
}
