//! Parameters of `thread`'s sub-operations (the thread registry,
//! docs/threads.md).

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::{Limit, names_enum};
use crate::domain::SessionId;

names_enum! {
    /// Who makes a registry change.
    OperatorName { User = "user", System = "system", Agent = "agent" }
}

names_enum! {
    /// A thread's status.
    ThreadStatusName { Active = "active", Frozen = "frozen", Archived = "archived" }
}

/// `thread spawn`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSpawn {
    /// The thread to spawn under (not an archived one); none: the sessionId given, else a root thread.
    #[serde(alias = "parent_id")]
    pub parent_id: Option<SessionId>,
    /// The session whose stage admits the call; the parent when parentId is not given and root is not true.
    #[serde(alias = "session_id")]
    pub session_id: Option<SessionId>,
    /// A root thread, whatever sessionId is given (not with parentId).
    pub root: Option<bool>,
    /// The new session's title (at most 200 characters).
    pub title: String,
    /// What the new thread is for (at most 10,000 characters).
    pub objective: String,
    /// Its tags (a project:<name> tag files it under that project; default the parent's).
    pub tags: Option<Vec<String>>,
    /// Who asks.
    #[schemars(extend("default" = "agent"))]
    pub operator: Option<OperatorName>,
}

/// `thread reference`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadReference {
    /// The thread that cites (an active one).
    #[serde(alias = "from_id")]
    pub from_id: SessionId,
    /// The thread cited (any status).
    #[serde(alias = "to_id")]
    pub to_id: SessionId,
    /// What of it: a thought node id ("<toId>:3"), a notebook id, or a relative path in the export layout.
    #[serde(alias = "asset_path")]
    pub asset_path: Option<String>,
    /// Who asks.
    #[schemars(extend("default" = "agent"))]
    pub operator: Option<OperatorName>,
}

/// `thread depend`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadDepend {
    /// The thread whose work depends on the other (an active one).
    #[serde(alias = "from_id")]
    pub from_id: SessionId,
    /// The thread it depends on; a dependency cycle is refused.
    #[serde(alias = "to_id")]
    pub to_id: SessionId,
    /// Who asks.
    #[schemars(extend("default" = "agent"))]
    pub operator: Option<OperatorName>,
}

/// `thread freeze` and `thread archive`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadRef {
    /// The thread (a session id).
    #[serde(alias = "thread_id", alias = "sessionId", alias = "session_id", alias = "id")]
    pub thread_id: SessionId,
    /// Who asks.
    #[schemars(extend("default" = "agent"))]
    pub operator: Option<OperatorName>,
}

/// `thread update`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadUpdate {
    /// The thread (an active one).
    #[serde(alias = "thread_id", alias = "sessionId", alias = "session_id", alias = "id")]
    pub thread_id: SessionId,
    /// A new title.
    pub title: Option<String>,
    /// A new objective.
    pub objective: Option<String>,
    /// New tags: they replace the old ones, but a project:<name> tag is kept unless one is given.
    pub tags: Option<Vec<String>>,
    /// Who asks.
    #[schemars(extend("default" = "agent"))]
    pub operator: Option<OperatorName>,
}

/// `thread get` and `thread tree`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadGet {
    /// The thread (a session id).
    #[serde(alias = "thread_id", alias = "sessionId", alias = "session_id", alias = "id")]
    pub thread_id: SessionId,
}

/// `thread list`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadList {
    /// Only threads with this status.
    pub status: Option<ThreadStatusName>,
    /// Only the children of this thread.
    #[serde(alias = "parent_id")]
    pub parent_id: Option<SessionId>,
    /// Only threads with this tag (exact).
    pub tag: Option<String>,
    /// Threads answered.
    #[serde(default)]
    pub limit: Limit<20>,
    /// Threads skipped (oldest first).
    #[schemars(extend("default" = 0))]
    pub offset: Option<u32>,
}

/// `thread log`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadLog {
    /// Only the operations naming this thread; none: the whole log.
    #[serde(alias = "thread_id", alias = "sessionId", alias = "session_id", alias = "id")]
    pub thread_id: Option<SessionId>,
    /// Operations answered, newest first.
    #[serde(default)]
    pub limit: Limit<20>,
    /// Operations skipped.
    #[schemars(extend("default" = 0))]
    pub offset: Option<u32>,
}

/// `thread export`: no parameters.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct ThreadExport {}

/// `thread import`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ThreadImport {
    /// The thread registry JSON (version, metadata, threads, operations, relations), as thread export answers it.
    pub registry: Map<String, Value>,
}
