//! Parameters of `mental_models` and `knowledge`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Limit, SortByName, SortOrderName, names_enum};
use crate::domain::SessionId;

names_enum! {
    /// What `knowledge search` searches.
    KnowledgeInclude { Patterns = "patterns", Notes = "notes" }
}

/// `mental_models get_model`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetModel {
    /// The model's name (five-whys, pre-mortem ...); list_models lists them.
    #[serde(alias = "model", alias = "name")]
    pub model_id: String,
}

/// `mental_models list_models`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListModels {
    /// Models with this tag.
    pub tag: Option<String>,
    /// Models with all these tags.
    pub tags: Option<Vec<String>>,
}

/// No parameters.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ListModelTags {}

/// No parameters.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ListPatternTags {}

/// `knowledge create_pattern`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatePattern {
    /// Its title (at most 200 characters).
    pub title: String,
    /// What it is for (at most 2,000 characters).
    pub description: String,
    /// The pattern itself, in Markdown (at most 1 MiB).
    pub content: String,
    /// Its tags (at most 32, each at most 64 characters).
    pub tags: Option<Vec<String>>,
    /// The sessions it comes from (they must exist).
    pub derived_from_sessions: Option<Vec<SessionId>>,
    /// One more session it comes from, added to derivedFromSessions.
    #[serde(alias = "session_id")]
    pub session_id: Option<SessionId>,
    /// Who wrote it.
    pub created_by: Option<String>,
}

/// `knowledge get_pattern` and `delete_pattern`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PatternRef {
    /// The pattern's id (a slug).
    #[serde(alias = "patternId")]
    pub id: String,
}

/// `knowledge update_pattern`: the id, and what changes.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UpdatePattern {
    /// The pattern's id (a slug); it never changes.
    #[serde(alias = "patternId")]
    pub id: String,
    /// A new title.
    pub title: Option<String>,
    /// A new description.
    pub description: Option<String>,
    /// New content.
    pub content: Option<String>,
    /// New tags (replacing the old).
    pub tags: Option<Vec<String>>,
    /// The sessions it comes from (replacing the old; added ones must exist).
    pub derived_from_sessions: Option<Vec<SessionId>>,
    /// One more session it comes from.
    #[serde(alias = "session_id")]
    pub session_id: Option<SessionId>,
    /// Who wrote it.
    pub created_by: Option<String>,
}

/// Declares a struct with PatternFilter's fields and `$extra` ones, so the
/// fields are written once for the filter under `filter` and given flat.
macro_rules! with_pattern_filter_fields {
    ($(#[$meta:meta])* pub struct $name:ident { $($extra:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, Default, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $($extra)*
            /// Patterns carrying all these tags.
            #[serde(alias = "tag")]
            pub tags: Option<Vec<String>>,
            /// Words to find; ranked best first unless sortBy is given.
            #[serde(alias = "query")]
            pub search: Option<String>,
            /// Page size.
            #[serde(default)]
            pub limit: Limit<20>,
            /// Patterns to skip.
            #[schemars(extend("default" = 0))]
            pub offset: Option<u32>,
            /// Sort key.
            pub sort_by: Option<SortByName>,
            /// Sort order.
            #[schemars(extend("default" = "desc"))]
            pub sort_order: Option<SortOrderName>,
            /// false: leave out each pattern's content. Else each is cut to 4,000 characters (contentChars: its whole length); get_pattern answers one whole.
            #[schemars(extend("default" = true))]
            pub include_content: Option<bool>,
        }
    };
}

with_pattern_filter_fields! {
    /// The PatternFilter of `list_patterns`, as given under `filter`.
    pub struct PatternFilter {}
}

with_pattern_filter_fields! {
    /// `knowledge list_patterns`: a PatternFilter, flat or under `filter`.
    pub struct ListPatterns {
        /// The filter's fields below as one object, instead of flat.
        #[serde(alias = "filters")]
        #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
        pub filter: Option<PatternFilter>,
    }
}

/// `knowledge write_scratchpad`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WriteScratchpad {
    /// The note's topic; one note per topic.
    #[serde(alias = "title")]
    pub topic: String,
    /// The note's text (at most 1 MiB); replaces the topic's note.
    pub content: String,
}

/// `knowledge read_scratchpad` and `delete_scratchpad`: give id or topic.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NoteRef {
    /// The note's id (a slug).
    #[serde(alias = "noteId")]
    pub id: Option<String>,
    /// The note's topic, instead of its id.
    #[serde(alias = "title")]
    pub topic: Option<String>,
}

/// `knowledge list_scratchpad`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListScratchpad {
    /// Page size.
    #[serde(default)]
    pub limit: Limit<20>,
    /// Notes to skip.
    #[schemars(extend("default" = 0))]
    pub offset: Option<u32>,
    /// false: leave out each note's content. Else each is cut to 4,000 characters (contentChars: its whole length); read_scratchpad answers one whole.
    #[schemars(extend("default" = true))]
    pub include_content: Option<bool>,
}

/// `knowledge search`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeSearch {
    /// The words to find (at most 1,000 characters, 64 words).
    #[serde(alias = "q")]
    pub query: String,
    /// Results of each kind.
    #[serde(default)]
    pub limit: Limit<10>,
    /// Which kinds to search (default both).
    pub include: Option<Vec<KnowledgeInclude>>,
}
