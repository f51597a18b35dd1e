//! Parameters of `session`'s sub-operations and of `deep_analysis`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Limit, names_enum};
use crate::domain::SessionId;

names_enum! {
    /// What `session search` searches besides sessions.
    SessionSearchInclude { Sessions = "sessions", Patterns = "patterns", Notes = "notes", Notebooks = "notebooks" }
}

names_enum! {
    /// The text formats of `session export`.
    ExportFormat { Json = "json", Markdown = "markdown", Cipher = "cipher" }
}

names_enum! {
    /// The kinds of key moment.
    MomentKindName { Insight = "insight", Decision = "decision", Pivot = "pivot", Revision = "revision", Branch = "branch" }
}

names_enum! {
    /// The kinds of learning.
    LearningTypeName { Pattern = "pattern", AntiPattern = "anti-pattern", Signal = "signal" }
}

names_enum! {
    /// What `session discovery` does.
    DiscoveryAction { List = "list", Hide = "hide", Show = "show" }
}

names_enum! {
    /// The parts of a deep analysis.
    AnalysisTypeName {
        Patterns = "patterns",
        CognitiveLoad = "cognitive_load",
        DecisionPoints = "decision_points",
        Full = "full",
    }
}

/// `session get`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionGet {
    /// The session (default: the connection's current session).
    #[serde(alias = "session_id", alias = "id")]
    pub session_id: Option<SessionId>,
    /// false: the session alone, without its thoughts.
    #[schemars(extend("default" = true))]
    pub include_thoughts: Option<bool>,
    /// true: every text whole, every thought listed. Without it, each text is cut to 4,000 characters and all of them to 40,000, at most 50 thoughts are listed, and truncated says what was cut or left out.
    #[schemars(extend("default" = false))]
    pub full: Option<bool>,
}

/// `session search`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionSearch {
    /// The words to find (at most 1,000 characters, 64 words); all must match.
    #[serde(alias = "q")]
    pub query: String,
    /// Sessions answered.
    #[serde(default)]
    pub limit: Limit<10>,
    /// Matches answered per session, its best.
    // Five by default: a search over ten sessions answered ~18 KB with
    // six snippets each, and one session with many matches ~7 KB for 50.
    #[serde(default)]
    pub matches_per_session: Limit<5>,
    /// Also search knowledge patterns and notes, and notebook cells (text and output).
    pub include: Option<Vec<SessionSearchInclude>>,
}

/// `session export`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionExport {
    /// The session (default: the connection's current session).
    #[serde(alias = "session_id", alias = "id")]
    pub session_id: Option<SessionId>,
    /// The text format: json and markdown hold every field; cipher is a summary, one line a thought cut at 200 characters, without critiques.
    #[schemars(extend("default" = "json"))]
    pub format: Option<ExportFormat>,
    /// An absolute directory: write the session's files there instead (JSON layout).
    pub destination: Option<String>,
    /// false: leave out the metadata lines of a markdown or cipher export.
    #[schemars(extend("default" = true))]
    pub include_metadata: Option<bool>,
    /// JSON: resolve anchors such as @auth-design:S3 in thought text to the sessions they name (crossReferences).
    #[schemars(extend("default" = true))]
    pub resolve_anchors: Option<bool>,
}

/// `session delete`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDelete {
    /// The session to delete, with all its thoughts.
    #[serde(alias = "session_id", alias = "id")]
    pub session_id: SessionId,
}

/// `session analyze`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionAnalyze {
    /// The session (default: the connection's current session).
    #[serde(alias = "session_id", alias = "id")]
    pub session_id: Option<SessionId>,
}

/// A moment of a session worth learning from.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyMoment {
    /// The thought's number.
    #[schemars(range(min = 1))]
    pub thought_number: u32,
    /// insight, decision, pivot, branch (patterns) or revision (anti-patterns).
    #[serde(rename = "type")]
    pub kind: MomentKindName,
    /// How much it matters, 1-10.
    #[schemars(range(min = 1, max = 10))]
    pub significance: Option<u8>,
    /// Its lesson in a sentence.
    pub summary: Option<String>,
    /// The branch the thought is on.
    pub branch_id: Option<String>,
}

/// `session extract_learnings`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExtractLearnings {
    /// The session (default: the connection's current session).
    #[serde(alias = "session_id", alias = "id")]
    pub session_id: Option<SessionId>,
    /// The moments to learn from (at most 100).
    #[schemars(length(max = 100))]
    pub key_moments: Option<Vec<KeyMoment>>,
    /// The learnings wanted.
    #[schemars(extend("default" = ["signal"]))]
    pub target_types: Option<Vec<LearningTypeName>>,
    /// Keep the pattern and anti-pattern learnings as knowledge patterns (stage 2).
    #[serde(alias = "persist")]
    #[schemars(extend("default" = false))]
    pub save: Option<bool>,
}

/// `session discovery`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Discovery {
    /// list the optional operations, or hide or show one.
    pub action: DiscoveryAction,
    /// The operation to hide or show: navigate, list_roots, bind_root, deep_analysis, mental_models or knowledge.
    #[serde(alias = "tool", alias = "name")]
    pub tool_name: Option<String>,
}

/// What `deep_analysis` includes.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeepOptions {
    /// Include the timeline.
    #[schemars(extend("default" = true))]
    pub include_timeline: Option<bool>,
    /// Include every thought in order in the timeline.
    #[schemars(extend("default" = false))]
    pub include_timeline_entries: Option<bool>,
    /// Sessions to compare with (at most 10).
    #[schemars(length(max = 10))]
    pub compare_with: Option<Vec<SessionId>>,
}

/// `deep_analysis`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeepAnalysis {
    /// The session (default: the connection's current session).
    #[serde(alias = "session_id", alias = "id")]
    pub session_id: Option<SessionId>,
    /// The analysis wanted.
    #[schemars(extend("default" = "full"))]
    pub analysis_type: Option<AnalysisTypeName>,
    /// includeTimeline, includeTimelineEntries, compareWith.
    pub options: Option<DeepOptions>,
    /// options.includeTimeline given flat.
    pub include_timeline: Option<bool>,
    /// options.includeTimelineEntries given flat.
    pub include_timeline_entries: Option<bool>,
    /// options.compareWith given flat.
    pub compare_with: Option<Vec<SessionId>>,
}
