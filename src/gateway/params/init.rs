//! Parameters of the stage-0 operations (sessions, projects, roots) and of
//! `cipher`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Limit, names_enum};
use crate::domain::SessionId;

names_enum! {
    /// A session's status in lists.
    StatusName { Active = "active", Completed = "completed" }
}

names_enum! {
    /// What a list is sorted by.
    SortByName { CreatedAt = "createdAt", UpdatedAt = "updatedAt", Title = "title" }
}

names_enum! {
    /// Which way a list is sorted.
    SortOrderName { Asc = "asc", Desc = "desc" }
}

/// `get_state`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GetState {
    /// The session to report on, with the stage it and this connection reach together (default: the connection's current session).
    #[serde(alias = "session_id")]
    pub session_id: Option<SessionId>,
}

/// No parameters.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ListRoots {}

/// The TypeScript Thoughtbox's description of new work, kept as tags
/// `project:<p>`, `task:<t>`, `aspect:<a>`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewWork {
    /// The project: the tag `project:<project>`.
    pub project: Option<String>,
    /// The task: the tag `task:<task>`.
    pub task: Option<String>,
    /// The aspect: the tag `aspect:<aspect>`.
    pub aspect: Option<String>,
    /// The session's domain, when not given beside newWork.
    pub domain: Option<String>,
}

/// `start_new`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StartNew {
    /// The session's title (default: "Reasoning session <time>"); at most 200 characters.
    #[serde(alias = "title")]
    pub session_title: Option<String>,
    /// What the session is about; at most 10,000 characters.
    pub description: Option<String>,
    /// Tags of the session (at most 100, each at most 200 characters).
    #[serde(alias = "sessionTags")]
    pub tags: Option<Vec<String>>,
    /// The session's domain.
    pub domain: Option<String>,
    /// The work this session is for, as tags project:<p>, task:<t>, aspect:<a>.
    pub new_work: Option<NewWork>,
    /// newWork.project given flat.
    pub project: Option<String>,
    /// newWork.task given flat.
    pub task: Option<String>,
    /// newWork.aspect given flat.
    pub aspect: Option<String>,
}

/// `load_context` and `session resume`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LoadContext {
    /// The session to resume (its id: the handle start_new answered, or one list_sessions shows).
    #[serde(alias = "session_id", alias = "id")]
    pub session_id: SessionId,
    /// Reopen a completed session; false opens it to read and leaves it completed.
    #[schemars(extend("default" = true))]
    pub reopen: Option<bool>,
}

/// Declares a struct with SessionFilter's fields and `$extra` ones: the
/// filter's fields are written once, for the filter given under `filters`
/// and for the same fields given flat.
macro_rules! with_session_filter_fields {
    ($(#[$meta:meta])* pub struct $name:ident { $($extra:tt)* }) => {
        $(#[$meta])*
        #[derive(Debug, Default, Deserialize, JsonSchema)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $($extra)*
            /// Sessions carrying all these tags (exact, letter case too).
            #[serde(alias = "tag")]
            pub tags: Option<Vec<String>>,
            /// Sessions of this project (the tag project:<project>).
            pub project: Option<String>,
            /// Sessions of this task (the tag task:<task>).
            pub task: Option<String>,
            /// Sessions of this aspect (the tag aspect:<aspect>).
            pub aspect: Option<String>,
            /// Words in session titles, descriptions and tags (session search searches thought text).
            #[serde(alias = "query", alias = "q")]
            pub search: Option<String>,
            /// Only active or only completed sessions.
            pub status: Option<StatusName>,
            /// Page size.
            #[serde(default)]
            pub limit: Limit<20>,
            /// Sessions to skip.
            #[schemars(extend("default" = 0))]
            pub offset: Option<u32>,
            /// Sort key.
            #[schemars(extend("default" = "updatedAt"))]
            pub sort_by: Option<SortByName>,
            /// Sort order.
            #[schemars(extend("default" = "desc"))]
            pub sort_order: Option<SortOrderName>,
        }
    };
}

with_session_filter_fields! {
    /// The SessionFilter of `list_sessions` and `session list`, as given
    /// under `filters`.
    pub struct SessionFilter {}
}

with_session_filter_fields! {
    /// `list_sessions` and `session list`: a SessionFilter, flat or under `filters`.
    pub struct ListSessions {
        /// The filter's fields below as one object, instead of flat.
        #[serde(alias = "filter")]
        #[schemars(with = "Option<serde_json::Map<String, serde_json::Value>>")]
        pub filters: Option<SessionFilter>,
        /// With a project bound or set by the server, true lists every project's sessions.
        #[schemars(extend("default" = false))]
        pub all_projects: Option<bool>,
    }
}

/// Where `navigate` looks.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NavigateTarget {
    /// The project (default: the bound project).
    pub project: Option<String>,
    /// A task within it.
    pub task: Option<String>,
    /// An aspect within it.
    pub aspect: Option<String>,
}

/// `navigate`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Navigate {
    /// Where to look (all given parts must match); without a project, the bound one.
    pub target: Option<NavigateTarget>,
    /// target.project given flat.
    pub project: Option<String>,
    /// target.task given flat.
    pub task: Option<String>,
    /// target.aspect given flat.
    pub aspect: Option<String>,
    /// Page size of its sessions.
    #[serde(default)]
    pub limit: Limit<20>,
    /// Sessions to skip.
    #[schemars(extend("default" = 0))]
    pub offset: Option<u32>,
}

/// `bind_root`: give rootUri or name.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BindRoot {
    /// One of the URIs list_roots answers.
    #[serde(alias = "uri", alias = "root")]
    pub root_uri: Option<String>,
    /// A root's name, instead of its URI.
    pub name: Option<String>,
}

/// `cipher`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cipher {
    /// true: unlock the stage without the ~9 KB guide, for an agent that has read it (it stays at thoughtbox://cipher).
    #[schemars(extend("default" = false))]
    pub brief: Option<bool>,
    /// The session that keeps the stage too, for a later connection that comes back with its id (default: the connection's current session).
    #[serde(alias = "session_id")]
    pub session_id: Option<SessionId>,
}
