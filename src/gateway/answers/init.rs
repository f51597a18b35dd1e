//! The answers about a connection's project and operations: `list_roots`,
//! `bind_root`, `navigate` and `session discovery`, and the project as
//! `get_state` shows it.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::gateway::BoundRoot;
use crate::store::SessionPage;

/// The connection's project.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProjectInfo {
    pub name: String,
    /// `root` (bound with `bind_root`) or `default` (`--project`).
    pub source: &'static str,
    /// The root's URI, `null` for the default project.
    pub root_uri: Option<String>,
}

/// A root as the client listed it, or as it was bound.
#[derive(Debug, Serialize)]
pub(crate) struct RootRef {
    pub uri: String,
    pub name: String,
}

impl From<BoundRoot> for RootRef {
    fn from(b: BoundRoot) -> RootRef {
        RootRef {
            uri: b.uri,
            name: b.name,
        }
    }
}

/// `list_roots`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RootsAnswer {
    pub roots: Vec<RootListed>,
    pub count: usize,
    /// `null` when no root is bound.
    pub bound_root: Option<RootRef>,
    pub message: String,
}

/// One of the client's roots, and whether it is the one bound.
#[derive(Debug, Serialize)]
pub(crate) struct RootListed {
    #[serde(flatten)]
    pub root: RootRef,
    pub bound: bool,
}

/// `bind_root`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BindRootAnswer {
    pub bound_root: RootRef,
    /// The project new sessions are tagged with: the root's name.
    pub project: String,
    /// `null` when none was bound before.
    pub previous_root: Option<RootRef>,
    pub message: String,
    pub next_steps: [&'static str; 2],
}

/// `navigate`: without a project, the ledger's projects; with one, its
/// sessions, tasks and aspects (and the projects, when it has none).
#[derive(Debug, Serialize)]
pub(crate) struct NavigateAnswer {
    pub target: Target,
    pub message: String,
    #[serde(flatten)]
    pub found: Option<Navigated>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub projects: Option<Vec<TagValue>>,
}

/// The parts of a project navigated to; `null` when not given.
#[derive(Debug, Default, Serialize)]
pub(crate) struct Target {
    pub project: Option<String>,
    pub task: Option<String>,
    pub aspect: Option<String>,
}

/// What a project (and task, and aspect) holds.
#[derive(Debug, Serialize)]
pub(crate) struct Navigated {
    /// The parts given, joined with `/`.
    pub path: String,
    #[serde(flatten)]
    pub page: SessionPage,
    /// The project's tasks, and the aspects within the target.
    pub tasks: Vec<TagValue>,
    pub aspects: Vec<TagValue>,
}

/// A project, task or aspect, and how many sessions carry it.
#[derive(Debug, Serialize)]
pub(crate) struct TagValue {
    pub name: String,
    pub sessions: u64,
}

impl TagValue {
    pub(crate) fn all(counts: Vec<(String, u64)>) -> Vec<TagValue> {
        counts
            .into_iter()
            .map(|(name, sessions)| TagValue { name, sessions })
            .collect()
    }
}

/// `session discovery`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct DiscoveryAnswer {
    /// `list`, `hide` or `show`.
    pub action: String,
    pub success: bool,
    /// With `list`: every optional operation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub optional_operations: Option<Vec<OptionalOperation>>,
    /// The operations hidden on this connection now.
    pub hidden: BTreeSet<String>,
    /// With `hide` or `show`: whether anything changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<bool>,
    pub message: String,
}

/// An operation a connection may hide.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OptionalOperation {
    pub name: &'static str,
    pub hidden: bool,
    pub minimum_stage: u8,
    pub description: &'static str,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::gateway::answers::to_value;

    #[test]
    fn navigating_without_a_project_answers_the_projects_alone() {
        let answer = NavigateAnswer {
            target: Target::default(),
            message: "m".into(),
            found: None,
            projects: Some(TagValue::all(vec![("app".into(), 2)])),
        };
        assert_eq!(
            to_value(&answer).unwrap(),
            json!({
                "target": { "project": null, "task": null, "aspect": null },
                "message": "m",
                "projects": [{ "name": "app", "sessions": 2 }],
            })
        );
    }

    #[test]
    fn a_project_navigated_to_answers_its_page_beside_its_parts() {
        let answer = NavigateAnswer {
            target: Target {
                project: Some("app".into()),
                ..Target::default()
            },
            message: "m".into(),
            found: Some(Navigated {
                path: "app".into(),
                page: SessionPage {
                    sessions: Vec::new(),
                    count: 0,
                    total: 0,
                    has_more: false,
                },
                tasks: Vec::new(),
                aspects: TagValue::all(vec![("ui".into(), 1)]),
            }),
            projects: None,
        };
        assert_eq!(
            to_value(&answer).unwrap(),
            json!({
                "target": { "project": "app", "task": null, "aspect": null },
                "path": "app",
                "message": "m",
                "sessions": [],
                "count": 0,
                "total": 0,
                "hasMore": false,
                "tasks": [],
                "aspects": [{ "name": "ui", "sessions": 1 }],
            })
        );
    }
}
