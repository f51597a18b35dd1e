//! DeepAnalysisResult with SessionPatternAnalysis, plus the `cognitiveLoad`,
//! `decisionPoints` and `timeline` objects that the `deep_analysis` tool
//! description adds.
//!
//! The data model and the tool description both name a `patterns` object; the
//! data model's shape wins (`dominantPattern`, `allPatterns`, `transitions`)
//! and the tool description's fields (`totalThoughts`, `revisionCount`,
//! `branchCount`, `averageThoughtLength`) are added to the same object, since
//! no name collides (the rule docs/architecture.md states for answers the
//! specification describes twice).

use serde::Serialize;

use super::{Facts, ratio, round2};
use crate::domain::{Session, Thought};

/// `analysisType`: which of the optional objects (`cognitiveLoad`,
/// `decisionPoints`) are added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AnalysisType {
    Patterns,
    CognitiveLoad,
    DecisionPoints,
    #[default]
    Full,
}

impl AnalysisType {
    pub const NAMES: &'static [&'static str] = &["patterns", "cognitive_load", "decision_points", "full"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "patterns" => Some(AnalysisType::Patterns),
            "cognitive_load" => Some(AnalysisType::CognitiveLoad),
            "decision_points" => Some(AnalysisType::DecisionPoints),
            "full" => Some(AnalysisType::Full),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            AnalysisType::Patterns => "patterns",
            AnalysisType::CognitiveLoad => "cognitive_load",
            AnalysisType::DecisionPoints => "decision_points",
            AnalysisType::Full => "full",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeepOptions {
    pub analysis_type: AnalysisType,
    pub include_timeline: bool,
    /// Whether the timeline lists every thought (`timeline.entries`): an
    /// entry per thought is most of a large session's answer, so only on
    /// request.
    pub timeline_entries: bool,
}

impl Default for DeepOptions {
    fn default() -> Self {
        DeepOptions {
            analysis_type: AnalysisType::Full,
            include_timeline: true,
            timeline_entries: false,
        }
    }
}

/// The reasoning pattern of one thought, and of a session (its most frequent).
///
/// Each thought, in recording order, gets the first label that applies:
/// 1. `iterative`: it is a revision;
/// 2. `exploratory`: it is on a branch after which the main chain continued;
/// 3. `divergent`: it is on a branch the main chain never came back from;
/// 4. `convergent`: it is a main-chain thought recorded right after a branch thought;
/// 5. `linear`: any other main-chain thought.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Linear,
    Exploratory,
    Iterative,
    Convergent,
    Divergent,
}

impl Pattern {
    /// Listing order of `allPatterns`.
    const ALL: [Pattern; 5] = [
        Pattern::Linear,
        Pattern::Exploratory,
        Pattern::Iterative,
        Pattern::Convergent,
        Pattern::Divergent,
    ];
    /// Tie-break for the dominant pattern: the rarer structure wins a tie.
    const PRECEDENCE: [Pattern; 5] = [
        Pattern::Iterative,
        Pattern::Convergent,
        Pattern::Divergent,
        Pattern::Exploratory,
        Pattern::Linear,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Linear => "linear",
            Pattern::Exploratory => "exploratory",
            Pattern::Iterative => "iterative",
            Pattern::Convergent => "convergent",
            Pattern::Divergent => "divergent",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PatternFrequency {
    pub pattern: Pattern,
    /// Thoughts with this label / all thoughts (0 when empty).
    pub frequency: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Transition {
    pub from: Pattern,
    pub to: Pattern,
    /// The number of the first thought with the new label.
    pub at_thought: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
}

/// SessionPatternAnalysis plus the tool description's `patterns` fields
/// (`totalThoughts`, `revisionCount`, `branchCount`, `averageThoughtLength`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PatternSection {
    /// The label with the highest frequency (ties: iterative, convergent,
    /// divergent, exploratory, linear); `linear` for an empty session.
    pub dominant_pattern: Pattern,
    pub all_patterns: Vec<PatternFrequency>,
    /// Every change of label between consecutive thoughts in recording
    /// order (the first [`MAX_LISTED`]).
    pub transitions: Vec<Transition>,
    /// How many transitions there were, when more than listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transition_count: Option<usize>,
    pub total_thoughts: u64,
    pub revision_count: u64,
    pub branch_count: u64,
    /// Mean thought length in characters, rounded.
    pub average_thought_length: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    /// How much the reasoning holds at once (volume, structure, density of
    /// each step): 0.4 × min(1, thoughts / 25) + 0.35 × min(1, (branches +
    /// revisions) / 10) + 0.25 × min(1, mean thought length / 800 characters).
    pub cognitive_load: f64,
    /// As in SessionAnalysis: main-chain non-revisions / all thoughts.
    pub linearity_score: f64,
    /// Thoughts on the longest branch (0 without branches).
    pub exploration_depth: u64,
    /// Branches after which the main chain continued / branches (0 without branches).
    pub convergence_rate: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InsightType {
    PatternDetected,
    Anomaly,
    OptimizationSuggestion,
    QualityObservation,
}

/// An observation with a confidence in `[0, 1]` (the rule for each is in [`insights`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Insight {
    #[serde(rename = "type")]
    pub kind: InsightType,
    pub description: String,
    pub confidence: f64,
    pub related_thoughts: Vec<u32>,
    /// The same thoughts by node id (our addition): a number alone is
    /// ambiguous once branches reuse the main chain's numbers.
    pub related_nodes: Vec<String>,
    /// How many thoughts the insight is about, when that is more than the
    /// [`MAX_RELATED`] listed (the first ones in recording order).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub related_count: Option<usize>,
}

/// Thoughts listed per insight. The dominant pattern of a long session
/// covers most of its thoughts: listed whole, 200,000 of them made the
/// answer too long to send at all, and even 100 were half of a 10 KB answer;
/// the rest are in the timeline and an export.
pub const MAX_RELATED: usize = 20;
/// Insights of one kind (a branch never followed, a thought revised again)
/// listed one by one; the rest are told in one insight.
const MAX_EACH: usize = 10;
/// Entries listed in `transitions`, `decisionPoints` and `timeline.entries`
/// (the first ones), for the same reason; each says how many there were
/// when it was cut.
pub const MAX_LISTED: usize = 1000;

/// Cut `list` to `max` entries; the length it had, if it was cut.
fn cut<T>(list: &mut Vec<T>, max: usize) -> Option<usize> {
    let len = list.len();
    (len > max).then(|| {
        list.truncate(max);
        len
    })
}

/// The tool description's `cognitiveLoad` object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CognitiveLoad {
    /// round(100 × metrics.cognitiveLoad), 0 to 100.
    pub complexity_score: u32,
    /// Thoughts on the longest path from the first thought: the main chain,
    /// or a branch plus the main-chain thoughts up to its fork point.
    pub depth_indicator: u64,
    /// Chains with thoughts: the main chain (if not empty) plus every branch.
    pub breadth_indicator: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DecisionKind {
    Branch,
    Revision,
}

/// A thought where the reasoning changed course: a branch's first thought
/// (reference: the thought it forks from) or a revision (reference: the
/// thought it revises).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionPoint {
    pub thought_number: u32,
    #[serde(rename = "type")]
    pub kind: DecisionKind,
    pub reference: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    pub thought_number: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
    pub timestamp: String,
    pub pattern: Pattern,
}

/// The tool description's `timeline` object, plus the thoughts in
/// recording order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timeline {
    pub created_at: String,
    pub updated_at: String,
    /// The duration in words ("2 minutes 30 seconds"); "unknown" without thoughts.
    pub duration_estimate: String,
    pub duration_ms: u64,
    pub first_thought_at: Option<String>,
    pub last_thought_at: Option<String>,
    /// The thoughts in recording order (the first [`MAX_LISTED`]), when
    /// asked for ([`DeepOptions::timeline_entries`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entries: Option<Vec<TimelineEntry>>,
    /// How many thoughts there were, when more than listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub entry_count: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeepAnalysisResult {
    pub session_id: String,
    pub analysis_type: &'static str,
    pub analysis_timestamp: String,
    /// `analysisTimestamp` again, under the tool description's name.
    pub timestamp: String,
    pub patterns: PatternSection,
    pub metrics: Metrics,
    pub insights: Vec<Insight>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cognitive_load: Option<CognitiveLoad>,
    /// The first [`MAX_LISTED`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision_points: Option<Vec<DecisionPoint>>,
    /// How many decision points there were, when more than listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decision_point_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
}

/// One compared session (`options.compareWith`), side by side with the analysed one.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub session_id: String,
    pub title: String,
    pub dominant_pattern: Pattern,
    pub same_dominant_pattern: bool,
    pub thought_count: u64,
    pub branch_count: u64,
    pub revision_count: u64,
    pub metrics: Metrics,
    /// This session's metric minus the analysed session's.
    pub differences: MetricDifferences,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricDifferences {
    pub cognitive_load: f64,
    pub linearity_score: f64,
    pub exploration_depth: i64,
    pub convergence_rate: f64,
}

fn labels(f: &Facts<'_>) -> Vec<Pattern> {
    let mut out = Vec::with_capacity(f.total());
    let mut previous_on_branch = false;
    for t in &f.ordered {
        let label = if t.data.is_revision {
            Pattern::Iterative
        } else if let Some(b) = t.data.branch_id.as_deref() {
            if f.branches.iter().any(|x| x.id == b && x.converged) {
                Pattern::Exploratory
            } else {
                Pattern::Divergent
            }
        } else if previous_on_branch {
            Pattern::Convergent
        } else {
            Pattern::Linear
        };
        previous_on_branch = t.data.branch_id.is_some();
        out.push(label);
    }
    out
}

fn metrics(f: &Facts<'_>) -> Metrics {
    let n = f.total();
    let volume = (n as f64 / 25.0).min(1.0);
    let structure = ((f.branches.len() + f.revisions) as f64 / 10.0).min(1.0);
    let verbosity = (f.average_length() as f64 / 800.0).min(1.0);
    Metrics {
        cognitive_load: round2(0.4 * volume + 0.35 * structure + 0.25 * verbosity),
        linearity_score: f.linearity(),
        exploration_depth: f.branches.iter().map(|b| b.numbers.len() as u64).max().unwrap_or(0),
        convergence_rate: round2(ratio(f.converged_branches(), f.branches.len())),
    }
}

fn plural(n: u64, unit: &str) -> String {
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

/// A duration in words: seconds below a minute, minutes and seconds below an
/// hour, hours and minutes above.
pub(crate) fn duration_words(ms: u64) -> String {
    let secs = ms / 1000;
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    match (h, m, s) {
        (0, 0, s) => plural(s, "second"),
        (0, m, 0) => plural(m, "minute"),
        (0, m, s) => format!("{} {}", plural(m, "minute"), plural(s, "second")),
        (h, 0, _) => plural(h, "hour"),
        (h, m, _) => format!("{} {}", plural(h, "hour"), plural(m, "minute")),
    }
}

fn percent(x: f64) -> u32 {
    (x * 100.0).round() as u32
}

/// The insights and their confidence rules:
/// - `pattern_detected`: the dominant pattern; confidence = its frequency.
/// - `anomaly`, one per branch the main chain never came back from;
///   confidence 0.6 (a branch may be abandoned on purpose).
/// - `anomaly`, one per thought revised twice or more (m times);
///   confidence = min(1, 0.4 + 0.2 × m).
/// - `optimization_suggestion` for five or more thoughts with neither a branch
///   nor a revision; confidence 0.5.
/// - `optimization_suggestion` when revisions are at least 30 % of at least
///   four thoughts; confidence = the revision rate.
/// - `quality_observation` on whether the session reached a conclusion;
///   confidence 1 (it is a fact of the ledger).
fn insights(f: &Facts<'_>, labels: &[Pattern], dominant: Pattern, dominant_freq: f64) -> Vec<Insight> {
    let mut out = Vec::new();
    let n = f.total();
    if n == 0 {
        out.push(Insight {
            kind: InsightType::QualityObservation,
            description: "The session has no thoughts yet.".into(),
            confidence: 1.0,
            related_thoughts: Vec::new(),
            related_nodes: Vec::new(),
            related_count: None,
        });
        return out;
    }
    let numbers = |ts: &[&Thought]| ts.iter().map(|t| t.data.thought_number).collect::<Vec<u32>>();
    let nodes = |ts: &[&Thought]| ts.iter().map(|t| t.node_id.clone()).collect::<Vec<String>>();
    let dominant_thoughts: Vec<&Thought> = f
        .ordered
        .iter()
        .zip(labels)
        .filter(|(_, l)| **l == dominant)
        .map(|(t, _)| *t)
        .collect();
    let mut related = numbers(&dominant_thoughts);
    related.dedup();
    out.push(Insight {
        kind: InsightType::PatternDetected,
        description: format!(
            "Dominant pattern: {} ({}% of thoughts).",
            dominant.as_str(),
            percent(dominant_freq)
        ),
        confidence: dominant_freq,
        related_thoughts: related,
        related_nodes: nodes(&dominant_thoughts),
        related_count: None,
    });
    let unfollowed: Vec<_> = f.branches.iter().filter(|b| !b.converged).collect();
    for b in unfollowed.iter().take(MAX_EACH) {
        let from = b.from_thought.map(|k| format!(" from thought {k}")).unwrap_or_default();
        out.push(Insight {
            kind: InsightType::Anomaly,
            description: format!(
                "Branch '{}'{from} ({}) was never followed by the main chain: its conclusion is not carried forward.",
                b.id,
                plural(b.numbers.len() as u64, "thought")
            ),
            confidence: 0.6,
            related_thoughts: b.numbers.clone(),
            related_nodes: b.nodes.clone(),
            related_count: None,
        });
    }
    if let Some(rest) = unfollowed.get(MAX_EACH..).filter(|r| !r.is_empty()) {
        out.push(Insight {
            kind: InsightType::Anomaly,
            description: format!(
                "{} more branches were never followed by the main chain: their conclusions are not carried forward.",
                rest.len()
            ),
            confidence: 0.6,
            related_thoughts: rest.iter().flat_map(|b| b.numbers.iter().copied()).collect(),
            related_nodes: rest.iter().flat_map(|b| b.nodes.iter().cloned()).collect(),
            related_count: None,
        });
    }
    let mut revised: std::collections::BTreeMap<(Option<&str>, u32), Vec<&Thought>> = std::collections::BTreeMap::new();
    for t in f.ordered.iter().filter(|t| t.data.is_revision) {
        if let Some(r) = t.data.revises_thought {
            revised.entry((t.data.branch_id.as_deref(), r)).or_default().push(t);
        }
    }
    let revised_again: Vec<_> = revised.iter().filter(|(_, by)| by.len() >= 2).collect();
    for ((_, target), by) in revised_again.iter().take(MAX_EACH) {
        let mut related = vec![*target];
        related.extend(numbers(by));
        let mut related_nodes: Vec<String> = by[0].revises_node.iter().cloned().collect();
        related_nodes.extend(nodes(by));
        out.push(Insight {
            kind: InsightType::Anomaly,
            description: format!(
                "Thought {target} was revised {} times: the belief behind it may need checking at its source.",
                by.len()
            ),
            confidence: round2((0.4 + 0.2 * by.len() as f64).min(1.0)),
            related_thoughts: related,
            related_nodes,
            related_count: None,
        });
    }
    if let Some(rest) = revised_again.get(MAX_EACH..).filter(|r| !r.is_empty()) {
        out.push(Insight {
            kind: InsightType::Anomaly,
            description: format!(
                "{} more thoughts were each revised more than once: the beliefs behind them may need checking.",
                rest.len()
            ),
            confidence: 0.8,
            related_thoughts: rest.iter().map(|((_, target), _)| *target).collect(),
            related_nodes: rest.iter().filter_map(|(_, by)| by[0].revises_node.clone()).collect(),
            related_count: None,
        });
    }
    if n >= 5 && f.branches.is_empty() && f.revisions == 0 {
        out.push(Insight {
            kind: InsightType::OptimizationSuggestion,
            description: format!(
                "{n} thoughts in a straight line: consider a branch to test an alternative, or revisiting an early assumption."
            ),
            confidence: 0.5,
            related_thoughts: Vec::new(),
            related_nodes: Vec::new(),
            related_count: None,
        });
    }
    let revision_rate = round2(ratio(f.revisions, n));
    if n >= 4 && revision_rate >= 0.3 {
        let revisions: Vec<&Thought> = f.ordered.iter().copied().filter(|t| t.data.is_revision).collect();
        out.push(Insight {
            kind: InsightType::OptimizationSuggestion,
            description: format!(
                "{}% of thoughts are revisions: surfacing assumptions before moving on (mental model 'assumption-surfacing') may save rework.",
                percent(revision_rate)
            ),
            confidence: revision_rate,
            related_thoughts: numbers(&revisions),
            related_nodes: nodes(&revisions),
            related_count: None,
        });
    }
    let last_main = f.main.last().map(|t| t.data.thought_number);
    out.push(Insight {
        kind: InsightType::QualityObservation,
        description: match (f.complete, last_main) {
            (true, Some(k)) => format!("The session reached a conclusion: thought {k} closed it."),
            _ => "The session has no concluding thought yet (nextThoughtNeeded is still true).".into(),
        },
        confidence: 1.0,
        related_thoughts: last_main.into_iter().collect(),
        related_nodes: f.main.last().map(|t| t.node_id.clone()).into_iter().collect(),
        related_count: None,
    });
    out
}

/// Analyse a session in depth. `now` is the analysis timestamp.
pub fn deep_analysis(session: &Session, thoughts: &[Thought], options: DeepOptions, now: &str) -> DeepAnalysisResult {
    let f = Facts::new(thoughts);
    let n = f.total();
    let labels = labels(&f);
    let count = |p: Pattern| labels.iter().filter(|l| **l == p).count();
    let all_patterns: Vec<PatternFrequency> = Pattern::ALL
        .iter()
        .map(|p| PatternFrequency {
            pattern: *p,
            frequency: round2(ratio(count(*p), n)),
        })
        .collect();
    let dominant = if n == 0 {
        Pattern::Linear
    } else {
        let best = Pattern::PRECEDENCE.iter().map(|p| count(*p)).max().unwrap_or(0);
        Pattern::PRECEDENCE
            .iter()
            .copied()
            .find(|p| count(*p) == best)
            .unwrap_or(Pattern::Linear)
    };
    let dominant_freq = round2(ratio(count(dominant), n));
    let mut transitions = Vec::new();
    for (i, pair) in labels.windows(2).enumerate() {
        if pair[0] != pair[1] {
            let t = f.ordered[i + 1];
            transitions.push(Transition {
                from: pair[0],
                to: pair[1],
                at_thought: t.data.thought_number,
                branch_id: t.data.branch_id.clone(),
            });
        }
    }
    let metrics = metrics(&f);
    let kind = options.analysis_type;
    let cognitive_load = matches!(kind, AnalysisType::CognitiveLoad | AnalysisType::Full).then(|| {
        let main_up_to = |k: Option<u32>| {
            f.main
                .iter()
                .filter(|t| k.is_some_and(|k| t.data.thought_number <= k))
                .count()
        };
        let deepest_branch = f
            .branches
            .iter()
            .map(|b| main_up_to(b.from_thought) + b.numbers.len())
            .max()
            .unwrap_or(0);
        CognitiveLoad {
            complexity_score: (metrics.cognitive_load * 100.0).round() as u32,
            depth_indicator: f.main.len().max(deepest_branch) as u64,
            breadth_indicator: (usize::from(!f.main.is_empty()) + f.branches.len()) as u64,
        }
    });
    let decision_points = matches!(kind, AnalysisType::DecisionPoints | AnalysisType::Full).then(|| {
        let mut seen_branches: Vec<&str> = Vec::new();
        let mut points = Vec::new();
        for t in &f.ordered {
            if let Some(b) = t.data.branch_id.as_deref()
                && !seen_branches.contains(&b)
            {
                seen_branches.push(b);
                if let Some(from) = t.data.branch_from_thought {
                    points.push(DecisionPoint {
                        thought_number: t.data.thought_number,
                        kind: DecisionKind::Branch,
                        reference: from,
                        branch_id: Some(b.to_string()),
                    });
                }
            }
            if let (true, Some(r)) = (t.data.is_revision, t.data.revises_thought) {
                points.push(DecisionPoint {
                    thought_number: t.data.thought_number,
                    kind: DecisionKind::Revision,
                    reference: r,
                    branch_id: t.data.branch_id.clone(),
                });
            }
        }
        points
    });
    let timeline = options.include_timeline.then(|| Timeline {
        created_at: session.created_at.clone(),
        updated_at: session.updated_at.clone(),
        duration_estimate: if n == 0 {
            "unknown".into()
        } else {
            duration_words(f.duration_ms)
        },
        duration_ms: f.duration_ms,
        first_thought_at: f.ordered.first().map(|t| t.data.timestamp.clone()),
        last_thought_at: f.ordered.last().map(|t| t.data.timestamp.clone()),
        entries: options.timeline_entries.then(|| {
            f.ordered
                .iter()
                .zip(&labels)
                .take(MAX_LISTED)
                .map(|(t, l)| TimelineEntry {
                    thought_number: t.data.thought_number,
                    branch_id: t.data.branch_id.clone(),
                    timestamp: t.data.timestamp.clone(),
                    pattern: *l,
                })
                .collect()
        }),
        entry_count: (options.timeline_entries && n > MAX_LISTED).then_some(n),
    });
    let transition_count = cut(&mut transitions, MAX_LISTED);
    let mut decision_points = decision_points;
    let decision_point_count = decision_points.as_mut().and_then(|p| cut(p, MAX_LISTED));
    let mut insights = insights(&f, &labels, dominant, dominant_freq);
    for i in &mut insights {
        let count = cut(&mut i.related_thoughts, MAX_RELATED).max(cut(&mut i.related_nodes, MAX_RELATED));
        i.related_count = count;
    }
    DeepAnalysisResult {
        session_id: session.id.clone(),
        analysis_type: kind.as_str(),
        analysis_timestamp: now.to_string(),
        timestamp: now.to_string(),
        insights,
        patterns: PatternSection {
            dominant_pattern: dominant,
            all_patterns,
            transitions,
            transition_count,
            total_thoughts: n as u64,
            revision_count: f.revisions as u64,
            branch_count: f.branches.len() as u64,
            average_thought_length: f.average_length(),
        },
        metrics,
        cognitive_load,
        decision_points,
        decision_point_count,
        timeline,
    }
}

/// Put another session's analysis beside `base`.
pub fn compare(base: &DeepAnalysisResult, other: &DeepAnalysisResult, other_title: &str) -> Comparison {
    Comparison {
        session_id: other.session_id.clone(),
        title: other_title.to_string(),
        dominant_pattern: other.patterns.dominant_pattern,
        same_dominant_pattern: other.patterns.dominant_pattern == base.patterns.dominant_pattern,
        thought_count: other.patterns.total_thoughts,
        branch_count: other.patterns.branch_count,
        revision_count: other.patterns.revision_count,
        differences: MetricDifferences {
            cognitive_load: round2(other.metrics.cognitive_load - base.metrics.cognitive_load),
            linearity_score: round2(other.metrics.linearity_score - base.metrics.linearity_score),
            exploration_depth: other.metrics.exploration_depth as i64 - base.metrics.exploration_depth as i64,
            convergence_rate: round2(other.metrics.convergence_rate - base.metrics.convergence_rate),
        },
        metrics: other.metrics.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    const NOW: &str = "2026-02-01T00:00:00.000Z";

    fn run(ts: &[Thought]) -> DeepAnalysisResult {
        let options = DeepOptions {
            timeline_entries: true,
            ..DeepOptions::default()
        };
        deep_analysis(&session("s"), ts, options, NOW)
    }

    fn freq(r: &DeepAnalysisResult, p: Pattern) -> f64 {
        r.patterns
            .all_patterns
            .iter()
            .find(|x| x.pattern == p)
            .map(|x| x.frequency)
            .unwrap()
    }

    fn in_range(r: &DeepAnalysisResult) {
        for x in [
            r.metrics.cognitive_load,
            r.metrics.linearity_score,
            r.metrics.convergence_rate,
        ] {
            assert!((0.0..=1.0).contains(&x), "{x}");
        }
        for p in &r.patterns.all_patterns {
            assert!((0.0..=1.0).contains(&p.frequency));
        }
        for i in &r.insights {
            assert!((0.0..=1.0).contains(&i.confidence));
        }
        assert!(r.cognitive_load.as_ref().is_none_or(|c| c.complexity_score <= 100));
    }

    /// A session of thousands of thoughts (one of 210,000 would otherwise
    /// answer over 16 MiB, too long to send) lists the first ones of every
    /// list that grows with it, and says how many there were.
    #[test]
    fn lists_that_grow_with_the_session_are_cut_and_counted() {
        let texts: Vec<String> = (1..=3000).map(|i| format!("step {i}")).collect();
        let specs: Vec<Spec<'_>> = (1..=3000u32)
            .map(|i| {
                let revises = (i % 2 == 0).then(|| i - 1);
                (i, None, None, revises, true, texts[i as usize - 1].as_str())
            })
            .collect();
        let r = run(&thoughts(&specs));
        let tl = r.timeline.as_ref().unwrap();
        let entries = tl.entries.as_ref().unwrap();
        assert_eq!((entries.len(), tl.entry_count), (MAX_LISTED, Some(3000)));
        assert_eq!(entries[0].thought_number, 1);
        let points = r.decision_points.as_ref().unwrap();
        assert_eq!((points.len(), r.decision_point_count), (MAX_LISTED, Some(1500)));
        assert_eq!(r.patterns.transitions.len(), MAX_LISTED);
        assert!(r.patterns.transition_count.is_some_and(|n| n > MAX_LISTED));
        for i in &r.insights {
            assert!(i.related_thoughts.len() <= MAX_RELATED && i.related_nodes.len() <= MAX_RELATED);
        }
        let dominant = &r.insights[0];
        assert_eq!(dominant.related_nodes.len(), MAX_RELATED);
        assert!(
            dominant.related_count.is_some_and(|n| n >= 1500),
            "{:?}",
            dominant.related_count
        );
        // The whole answer stays small, and a short session's has no counts.
        assert!(serde_json::to_string(&r).unwrap().len() < 512 << 10);
        let short = serde_json::to_value(run(&linear())).unwrap();
        let text = short.to_string();
        for field in ["entryCount", "transitionCount", "decisionPointCount", "relatedCount"] {
            assert!(!text.contains(field), "{field}: {text}");
        }
    }

    /// Thousands of branches never followed are told in one insight past
    /// the first ten, not one each (as are thoughts revised again).
    #[test]
    fn insights_of_one_kind_past_ten_are_told_together() {
        let names: Vec<String> = (0..30).map(|i| format!("b{i}")).collect();
        let mut specs: Vec<Spec<'_>> = vec![(1, None, None, None, true, "root"), (2, None, None, None, true, "two")];
        for name in &names {
            specs.push((2, Some(name.as_str()), Some(1), None, true, "aside"));
        }
        let r = run(&thoughts(&specs));
        let unfollowed: Vec<&Insight> = r
            .insights
            .iter()
            .filter(|i| i.description.contains("never followed"))
            .collect();
        assert_eq!(unfollowed.len(), MAX_EACH + 1);
        assert!(
            unfollowed[MAX_EACH].description.starts_with("20 more branches"),
            "{:?}",
            unfollowed[MAX_EACH]
        );
        assert_eq!(unfollowed[MAX_EACH].related_nodes.len(), 20);
    }

    #[test]
    fn linear_session() {
        let r = run(&linear());
        in_range(&r);
        assert_eq!(r.patterns.dominant_pattern, Pattern::Linear);
        assert_eq!(freq(&r, Pattern::Linear), 1.0);
        assert!(r.patterns.transitions.is_empty());
        assert_eq!(r.metrics.linearity_score, 1.0);
        assert_eq!(r.metrics.exploration_depth, 0);
        assert_eq!(r.metrics.convergence_rate, 0.0);
        // Lengths 36, 35, 26, 41 chars: mean 34.5 -> 35 (rounded half away from zero).
        assert_eq!(r.patterns.average_thought_length, 35);
        // 0.4 × 4/25 + 0.35 × 0 + 0.25 × 35/800 = 0.064 + 0.0109 = 0.07
        assert_eq!(r.metrics.cognitive_load, 0.07);
        let c = r.cognitive_load.as_ref().unwrap();
        assert_eq!((c.complexity_score, c.depth_indicator, c.breadth_indicator), (7, 4, 1));
        assert!(r.decision_points.as_ref().unwrap().is_empty());
        let tl = r.timeline.as_ref().unwrap();
        assert_eq!(tl.duration_estimate, "1 minute 30 seconds");
        assert_eq!(tl.entries.as_ref().map(Vec::len), Some(4));
        assert!(
            r.insights
                .iter()
                .any(|i| i.kind == InsightType::QualityObservation && i.description.contains("thought 4"))
        );
    }

    #[test]
    fn branching_session() {
        let r = run(&branching());
        in_range(&r);
        // Labels in recording order: linear, linear, exploratory (alt), exploratory,
        // convergent (main 3 after alt), divergent (dead never returns).
        assert_eq!(freq(&r, Pattern::Linear), 0.33);
        assert_eq!(freq(&r, Pattern::Exploratory), 0.33);
        assert_eq!(freq(&r, Pattern::Convergent), 0.17);
        assert_eq!(freq(&r, Pattern::Divergent), 0.17);
        // Tie between exploratory and linear: exploratory comes first in precedence.
        assert_eq!(r.patterns.dominant_pattern, Pattern::Exploratory);
        let t: Vec<(Pattern, Pattern, u32)> = r
            .patterns
            .transitions
            .iter()
            .map(|t| (t.from, t.to, t.at_thought))
            .collect();
        assert_eq!(
            t,
            [
                (Pattern::Linear, Pattern::Exploratory, 3),
                (Pattern::Exploratory, Pattern::Convergent, 3),
                (Pattern::Convergent, Pattern::Divergent, 4),
            ]
        );
        // alt has 2 thoughts; 1 of 2 branches converged.
        assert_eq!(r.metrics.exploration_depth, 2);
        assert_eq!(r.metrics.convergence_rate, 0.5);
        assert_eq!(r.metrics.linearity_score, 0.5);
        let c = r.cognitive_load.as_ref().unwrap();
        // alt: main thoughts up to 2 (two) + 2 = 4; dead: up to 3 (three) + 1 = 4; main 3.
        assert_eq!(c.depth_indicator, 4);
        assert_eq!(c.breadth_indicator, 3);
        let d = r.decision_points.as_ref().unwrap();
        assert_eq!(d.len(), 2);
        assert_eq!(
            (d[0].thought_number, d[0].kind, d[0].reference),
            (3, DecisionKind::Branch, 2)
        );
        assert_eq!(d[1].branch_id.as_deref(), Some("dead"));
        assert!(
            r.insights
                .iter()
                .any(|i| i.kind == InsightType::Anomaly && i.description.contains("'dead'") && i.confidence == 0.6)
        );
        // By node id, unlike the numbers, which the main chain also uses.
        let dead = r.insights.iter().find(|i| i.description.contains("'dead'")).unwrap();
        assert_eq!(dead.related_nodes.len(), dead.related_thoughts.len());
        assert!(
            dead.related_nodes.iter().all(|n| n.contains(":dead:")),
            "{:?}",
            dead.related_nodes
        );
        assert_eq!(r.timeline.as_ref().unwrap().duration_estimate, "2 minutes 30 seconds");
    }

    #[test]
    fn revising_session() {
        let r = run(&revising());
        in_range(&r);
        // linear 1, 2, 3, 6; iterative 4, 5.
        assert_eq!(freq(&r, Pattern::Iterative), 0.33);
        assert_eq!(r.patterns.dominant_pattern, Pattern::Linear);
        assert_eq!(r.patterns.revision_count, 2);
        let d = r.decision_points.as_ref().unwrap();
        assert_eq!(
            d.iter().map(|p| (p.thought_number, p.reference)).collect::<Vec<_>>(),
            [(4, 2), (5, 2)]
        );
        // Thought 2 revised twice: 0.4 + 0.2 × 2.
        let twice = r
            .insights
            .iter()
            .find(|i| i.description.starts_with("Thought 2 was revised 2 times"))
            .unwrap();
        assert_eq!(twice.confidence, 0.8);
        assert_eq!(twice.related_thoughts, [2, 4, 5]);
        let node = |n: u32| format!("{}:{n}", super::super::fixtures::SID);
        assert_eq!(twice.related_nodes, [node(2), node(4), node(5)]);
        // 2 / 6 = 0.33 >= 0.3: a suggestion with that confidence.
        assert!(
            r.insights
                .iter()
                .any(|i| i.kind == InsightType::OptimizationSuggestion && i.confidence == 0.33)
        );
        // 0.4 × 6/25 + 0.35 × 2/10 + 0.25 × mean/800.
        let mean = r.patterns.average_thought_length as f64;
        assert_eq!(
            r.metrics.cognitive_load,
            round2(0.4 * 6.0 / 25.0 + 0.35 * 0.2 + 0.25 * mean / 800.0)
        );
    }

    #[test]
    fn empty_session() {
        let r = run(&[]);
        in_range(&r);
        assert_eq!(r.patterns.dominant_pattern, Pattern::Linear);
        assert!(r.patterns.all_patterns.iter().all(|p| p.frequency == 0.0));
        assert_eq!(r.metrics.cognitive_load, 0.0);
        assert_eq!(r.metrics.linearity_score, 1.0);
        assert_eq!(r.insights.len(), 1);
        let c = r.cognitive_load.as_ref().unwrap();
        assert_eq!((c.complexity_score, c.depth_indicator, c.breadth_indicator), (0, 0, 0));
        assert_eq!(r.timeline.as_ref().unwrap().duration_estimate, "unknown");
    }

    #[test]
    fn analysis_type_selects_sections() {
        let opts = DeepOptions {
            analysis_type: AnalysisType::Patterns,
            include_timeline: false,
            timeline_entries: false,
        };
        let r = deep_analysis(&session("s"), &linear(), opts, NOW);
        assert!(r.cognitive_load.is_none() && r.decision_points.is_none() && r.timeline.is_none());
        let v = serde_json::to_value(&r).unwrap();
        for k in ["sessionId", "patterns", "metrics", "insights", "analysisTimestamp"] {
            assert!(v.get(k).is_some(), "{k}");
        }
        assert_eq!(v["patterns"]["dominantPattern"], "linear");
        assert_eq!(v["insights"][0]["type"], "pattern_detected");
    }

    #[test]
    fn comparison_is_the_difference() {
        let a = run(&linear());
        let b = run(&branching());
        let c = compare(&a, &b, "other");
        assert!(!c.same_dominant_pattern);
        assert_eq!(c.differences.linearity_score, -0.5);
        assert_eq!(c.differences.exploration_depth, 2);
        assert_eq!(c.differences.convergence_rate, 0.5);
    }

    #[test]
    fn durations_in_words() {
        assert_eq!(duration_words(0), "0 seconds");
        assert_eq!(duration_words(1_000), "1 second");
        assert_eq!(duration_words(120_000), "2 minutes");
        assert_eq!(duration_words(3_600_000), "1 hour");
        assert_eq!(duration_words(3_720_000), "1 hour 2 minutes");
    }
}
