//! The answers of `session analyze`, `session extract_learnings` and
//! `deep_analysis`: the analyses of [`crate::analysis`] as they are, and
//! what the gateway says beside them. `session analyze` answers its
//! [`SessionAnalysis`](crate::analysis::SessionAnalysis) alone.

use serde::Serialize;

use crate::analysis::{Comparison, DeepAnalysisResult, Extraction};

/// `session extract_learnings`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExtractionAnswer {
    #[serde(flatten)]
    pub extraction: Extraction,
    /// With `save: true`, every learning's pattern id.
    #[serde(flatten)]
    pub saved: Option<SavedPatterns>,
}

/// The patterns `save: true` stored, or found stored by an earlier call.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SavedPatterns {
    pub saved_patterns: Vec<String>,
    /// Those saved by an earlier call (the same learning of the same session).
    pub already_saved: Vec<String>,
}

/// `deep_analysis`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DeepAnalysisAnswer {
    #[serde(flatten)]
    pub analysis: DeepAnalysisResult,
    /// With `compareWith`: each session found, beside the analysed one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub comparison: Vec<Comparison>,
    /// The sessions of `compareWith` that do not exist.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub compare_with_not_found: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
