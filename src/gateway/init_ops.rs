//! Project scope: the client's roots (`list_roots`, `bind_root`), the
//! connection's project, `navigate`, and `session discovery`.
//!
//! A connection's project is the root bound with `bind_root`, else the
//! server's `--project` / `THOUGHTBOX_PROJECT`, else none. Sessions created
//! while there is one carry the tag `project:<name>` unless the caller names
//! a project itself (an explicit `newWork.project` or `project:` tag wins).
//!
//! `roots/list` is a server-to-client request that rmcp marks deprecated
//! (protocol 2026-07-28 drops it); clients on 2025-11-25 answer it, and a
//! 2026-07-28 client is asked in an `InputRequiredResult` instead
//! ([`super::mrtr`]). The capability check and the timeout cover clients
//! that cannot or do not answer.
#![allow(deprecated)]

use rmcp::RoleServer;
use rmcp::model::{ListRootsResult, Root};
use rmcp::service::RequestContext;
use serde_json::{Value, json};

use super::answers::init::{
    BindRootAnswer, DiscoveryAnswer, NavigateAnswer, Navigated, OptionalOperation, ProjectInfo, RootListed, RootRef,
    RootsAnswer, TagValue, Target,
};
use super::{Args, BoundRoot, Gateway, OPERATIONS, answers, mrtr, params};
use crate::domain::{NewSession, SessionFilter};
use crate::error::{Error, Result};

/// Operations a connection may hide with `session discovery`.
pub const OPTIONAL_OPERATIONS: &[&str] = &[
    "navigate",
    "list_roots",
    "bind_root",
    "deep_analysis",
    "mental_models",
    "knowledge",
];

/// The connection's project and where it comes from (`root` or `default`).
pub(crate) fn current_project(gw: &Gateway) -> Option<(String, &'static str)> {
    if let Some(root) = gw.with_client(|c| c.root.clone()) {
        return Some((root.name, "root"));
    }
    gw.options.default_project.clone().map(|p| (p, "default"))
}

/// The project as `get_state` shows it.
pub(crate) fn project_json(gw: &Gateway) -> Option<ProjectInfo> {
    let root = gw.with_client(|c| c.root.clone());
    current_project(gw).map(|(name, source)| ProjectInfo {
        name,
        source,
        root_uri: root.map(|r| r.uri),
    })
}

/// Tag a session about to be created with the connection's project, unless
/// the caller already gave it one.
pub(crate) fn scope_new_session(gw: &Gateway, new: &mut NewSession) {
    if new.tags.iter().any(|t| t.starts_with("project:")) {
        return;
    }
    if let Some((project, _)) = current_project(gw) {
        new.tags.push(format!("project:{project}"));
    }
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Decode `%XX` escapes of a URI segment (invalid escapes stay as they are).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// A root's name: the one the client gave, else the last segment of its
/// URI; made fit to be a project (the tag of every session created while it
/// is bound): control characters become spaces, and it is cut to
/// [`domain::MAX_PROJECT_CHARS`] (a 300-character root name would make every
/// later `start_new` fail on a tag the caller never sent).
pub(crate) fn root_name(root: &Root) -> String {
    let given = root.name.as_deref().map(str::trim).filter(|n| !n.is_empty());
    let raw = match given {
        Some(n) => n.to_string(),
        None => {
            let path = root.uri.split_once("://").map(|(_, rest)| rest).unwrap_or(&root.uri);
            let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
            percent_decode(last)
        }
    };
    let clean: String = raw
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(crate::domain::MAX_PROJECT_CHARS)
        .collect();
    let name = clean.trim();
    if name.is_empty() {
        "root".into()
    } else {
        name.to_string()
    }
}

fn roots_error(reason: &str, message: String) -> Error {
    Error::InvalidOperation {
        message,
        details: Some(json!({
            "reason": reason,
            "suggestion": "Pass newWork.project to start_new, or start the server with --project (THOUGHTBOX_PROJECT).",
        })),
    }
}

/// Ask the client for its roots: capability check, then `roots/list`
/// within the timeout for a client that initialised with an older
/// protocol; for a 2026-07-28 client, an `InputRequiredResult` asking for
/// them, and in the call's retry the roots it sent.
async fn client_roots(gw: &Gateway, ctx: Option<&RequestContext<RoleServer>>) -> Result<Vec<Root>> {
    if let Some(answer) = mrtr::roots_answer() {
        let Some(answer) = answer else {
            return Err(roots_error(
                "ROOTS_FAILED",
                format!(
                    "the client sent the call again without its answer to roots/list (inputResponses.{})",
                    mrtr::ROOTS_KEY
                ),
            ));
        };
        return serde_json::from_value::<ListRootsResult>(answer)
            .map(|r| r.roots)
            .map_err(|e| {
                roots_error(
                    "ROOTS_FAILED",
                    format!(
                        "the client's answer to roots/list (inputResponses.{}) is not a roots list: {e}",
                        mrtr::ROOTS_KEY
                    ),
                )
            });
    }
    let Some(ctx) = ctx else {
        return Err(roots_error(
            "ROOTS_NOT_SUPPORTED",
            "no MCP client to ask for roots".into(),
        ));
    };
    if ctx.client_capabilities().is_none_or(|c| c.roots.is_none()) {
        return Err(roots_error(
            "ROOTS_NOT_SUPPORTED",
            "the client did not declare the roots capability, so it has no roots (workspace folders) to list or bind"
                .into(),
        ));
    }
    if mrtr::modern(ctx) {
        // The call answers the request instead of this error, and runs
        // again when the client sends the roots.
        return Err(if mrtr::ask(mrtr::Ask::Roots) {
            roots_error(
                "INPUT_REQUIRED",
                "the client is asked for its roots; it answers by sending this call again".into(),
            )
        } else {
            roots_error(
                "ROOTS_NOT_SUPPORTED",
                "this call cannot carry a request to the client".into(),
            )
        });
    }
    let timeout = gw.options.roots_timeout;
    let call = tokio::time::timeout(timeout, ctx.peer.list_roots());
    let answer = gw.ask_client(ctx, call).await.ok_or_else(|| {
        roots_error(
            "ROOTS_FAILED",
            "the request was cancelled, or the server is stopping, before the client answered roots/list".into(),
        )
    })?;
    match answer {
        Err(_) => Err(roots_error(
            "ROOTS_TIMEOUT",
            format!(
                "the client did not answer roots/list within {} s (--roots-timeout)",
                timeout.as_secs()
            ),
        )),
        Ok(Err(e)) => Err(roots_error(
            "ROOTS_FAILED",
            format!("the client failed roots/list: {e}"),
        )),
        Ok(Ok(result)) => Ok(result.roots),
    }
}

fn root_listed(root: &Root, bound: Option<&BoundRoot>) -> RootListed {
    RootListed {
        root: RootRef {
            uri: root.uri.clone(),
            name: root_name(root),
        },
        bound: bound.is_some_and(|b| b.uri == root.uri),
    }
}

pub async fn list_roots(gw: &Gateway, ctx: Option<&RequestContext<RoleServer>>) -> Result<Value> {
    let roots = client_roots(gw, ctx).await?;
    let bound = gw.with_client(|c| c.root.clone());
    let message = match (roots.len(), &bound) {
        (0, _) => "The client shares no roots; use newWork.project or --project to name a project.".to_string(),
        (n, Some(b)) => format!("Found {n} root(s); bound to {}.", b.name),
        (n, None) => format!("Found {n} root(s); bind_root with a rootUri makes one this connection's project."),
    };
    answers::to_value(&RootsAnswer {
        roots: roots.iter().map(|r| root_listed(r, bound.as_ref())).collect(),
        count: roots.len(),
        bound_root: bound.map(RootRef::from),
        message,
    })
}

pub async fn bind_root(gw: &Gateway, args: Args, ctx: Option<&RequestContext<RoleServer>>) -> Result<Value> {
    let p: params::BindRoot = args.parse("bind_root")?;
    let uri = p.root_uri.map(|u| u.trim().to_string());
    let name = p.name.map(|n| n.trim().to_string());
    let (field, wanted) = match (&uri, &name) {
        (Some(u), _) if !u.is_empty() => ("rootUri", u.clone()),
        (None, Some(n)) if !n.is_empty() => ("name", n.clone()),
        (Some(_), _) | (None, Some(_)) => return Err(Error::invalid("rootUri", "rootUri must not be empty")),
        (None, None) => {
            return Err(Error::invalid(
                "rootUri",
                "bind_root needs rootUri: one of the URIs list_roots answers",
            ));
        }
    };
    let roots = client_roots(gw, ctx).await?;
    let matching: Vec<&Root> = roots
        .iter()
        .filter(|r| {
            if field == "rootUri" {
                r.uri == wanted
            } else {
                root_name(r) == wanted
            }
        })
        .collect();
    // The same root listed twice is one root.
    let mut matching = matching;
    let mut seen = std::collections::HashSet::new();
    matching.retain(|r| seen.insert(r.uri.clone()));
    // Two roots of one name (`/a/app` and `/b/app`): which one is meant is
    // the agent's call, not a guess.
    if matching.len() > 1 {
        let uris: Vec<&str> = matching.iter().map(|r| r.uri.as_str()).collect();
        return Err(Error::invalid_with(
            field,
            format!(
                "{} of the client's roots are named {wanted:?}; pass rootUri to say which: {}",
                uris.len(),
                uris.join(", ")
            ),
            json!({ "matchingRoots": uris }),
        ));
    }
    let found = matching.first().copied();
    let Some(root) = found else {
        let available: Vec<&str> = roots.iter().map(|r| r.uri.as_str()).collect();
        return Err(Error::invalid_with(
            field,
            format!("the client has no root {wanted:?}; its roots: {}", available.join(", ")),
            json!({ "availableRoots": available }),
        ));
    };
    let bound = BoundRoot {
        uri: root.uri.clone(),
        name: root_name(root),
    };
    let previous = gw.with_client(|c| c.root.replace(bound.clone()));
    answers::to_value(&BindRootAnswer {
        message: format!(
            "Bound to root {}: new sessions get the tag project:{}.",
            bound.name, bound.name
        ),
        project: bound.name.clone(),
        bound_root: RootRef::from(bound),
        previous_root: previous.map(RootRef::from),
        next_steps: [
            "start_new to begin a session in this project",
            "list_sessions to see its sessions",
        ],
    })
}

/// `navigate`: the sessions of a project (and task, and aspect: all given
/// parts must match), newest first, with the project's tasks and aspects.
pub async fn navigate(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::Navigate = args.parse("navigate")?;
    // The target as one object, or its fields flat.
    let target = p.target.unwrap_or(params::NavigateTarget {
        project: p.project,
        task: p.task,
        aspect: p.aspect,
    });
    let mut parts: Vec<(&str, String)> = Vec::new();
    for (key, given) in [
        ("project", target.project),
        ("task", target.task),
        ("aspect", target.aspect),
    ] {
        if let Some(v) = given {
            let v = v.trim();
            if v.is_empty() {
                return Err(Error::invalid(key, format!("{key} must not be empty")));
            }
            parts.push((key, v.to_string()));
        }
    }
    if !parts.iter().any(|(k, _)| *k == "project") {
        match current_project(gw) {
            Some((p, _)) => parts.insert(0, ("project", p)),
            None if parts.is_empty() => {
                // No project to look at: the ledger's projects, to choose one
                // (else an agent cannot find them).
                let projects = gw.blocking(|s| s.tag_values(&[], "project:")).await?;
                return answers::to_value(&NavigateAnswer {
                    target: Target::default(),
                    message: format!(
                        "No project chosen: the ledger has {} project(s); call navigate with target.project to look \
                         at one (or bind_root, or start the server with --project)",
                        projects.len()
                    ),
                    found: None,
                    projects: Some(TagValue::all(projects)),
                });
            }
            None => {
                return Err(Error::invalid(
                    "target",
                    "navigate with a task or aspect needs target.project (or a project bound with bind_root or set \
                     with --project); navigate with no target lists the projects",
                ));
            }
        }
    }
    let limit = p.limit.get("limit")?;
    let offset = p.offset.unwrap_or(0);
    let tags: Vec<String> = parts.iter().map(|(k, v)| format!("{k}:{v}")).collect();
    let project_tag = tags[0].clone();
    let filter = SessionFilter {
        tags: tags.clone(),
        limit,
        offset,
        ..SessionFilter::default()
    };
    let (page, tasks, aspects) = gw
        .blocking(move |s| {
            let page = s.list_sessions(&filter)?;
            let within = [project_tag];
            let tasks = s.tag_values(&within, "task:")?;
            let aspects = s.tag_values(&tags, "aspect:")?;
            Ok((page, tasks, aspects))
        })
        .await?;
    let path = parts.iter().map(|(_, v)| v.as_str()).collect::<Vec<_>>().join("/");
    let part = |k: &str| parts.iter().find(|(p, _)| *p == k).map(|(_, v)| v.clone());
    let nothing_here = page.total == 0 && tasks.is_empty();
    let mut out = NavigateAnswer {
        target: Target {
            project: part("project"),
            task: part("task"),
            aspect: part("aspect"),
        },
        message: format!("Navigated to {path}: {} session(s).", page.total),
        found: None,
        projects: None,
    };
    if nothing_here {
        // A project no session has: the ones there are.
        let projects = gw.blocking(|s| s.tag_values(&[], "project:")).await?;
        out.message = format!("No session is in {path}; the ledger's projects are listed in projects");
        out.projects = Some(TagValue::all(projects));
    }
    out.found = Some(Navigated {
        path,
        page,
        tasks: TagValue::all(tasks),
        aspects: TagValue::all(aspects),
    });
    answers::to_value(&out)
}

/// Every optional operation, and whether it is in `hidden`.
fn optional_operations(hidden: &std::collections::BTreeSet<String>) -> Vec<OptionalOperation> {
    OPTIONAL_OPERATIONS
        .iter()
        .filter_map(|name| OPERATIONS.iter().find(|(n, _, _)| n == name))
        .map(|(name, stage, what)| OptionalOperation {
            name,
            hidden: hidden.contains(*name),
            minimum_stage: stage.number(),
            description: what,
        })
        .collect()
}

/// `session discovery`: list, hide or show the optional operations of this connection.
pub async fn discovery(gw: &Gateway, args: Args, ctx: Option<&RequestContext<RoleServer>>) -> Result<Value> {
    let p: params::Discovery = args.parse("session.discovery")?;
    let action = match p.action {
        params::DiscoveryAction::List => "list",
        params::DiscoveryAction::Hide => "hide",
        params::DiscoveryAction::Show => "show",
    }
    .to_string();
    if action == "list" {
        let hidden = gw.with_client(|c| c.hidden.clone());
        return answers::to_value(&DiscoveryAnswer {
            action,
            success: true,
            optional_operations: Some(optional_operations(&hidden)),
            hidden,
            changed: None,
            message: "Optional operations of this connection; hide the ones you do not need.".into(),
        });
    }
    let name = p
        .tool_name
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| Error::invalid("toolName", format!("discovery {action} needs toolName")))?;
    if !OPTIONAL_OPERATIONS.contains(&name.as_str()) {
        return Err(Error::invalid_with(
            "toolName",
            format!(
                "{name:?} is not an optional operation; these can be hidden or shown: {}",
                OPTIONAL_OPERATIONS.join(", ")
            ),
            json!({ "allowed": OPTIONAL_OPERATIONS }),
        ));
    }
    let changed = gw.with_client(|c| {
        if action == "hide" {
            c.hidden.insert(name.clone())
        } else {
            c.hidden.remove(&name)
        }
    });
    if changed && let Some(ctx) = ctx {
        // Clients that follow tools/list_changed refresh the operation list.
        if let Err(e) = ctx.peer.notify_tool_list_changed().await {
            tracing::debug!("tools/list_changed not delivered: {e}");
        }
    }
    // The change and what is hidden now; `action: list` gives the whole
    // catalogue (repeated in each answer, it is ~4 KB).
    let message = match (action.as_str(), changed) {
        ("hide", true) => format!("{name} is hidden on this connection."),
        ("hide", false) => format!("{name} was already hidden."),
        (_, true) => format!("{name} is available again."),
        _ => format!("{name} was not hidden."),
    };
    answers::to_value(&DiscoveryAnswer {
        action,
        success: true,
        optional_operations: None,
        hidden: gw.with_client(|c| c.hidden.clone()),
        changed: Some(changed),
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_names() {
        let mut r = Root::new("file:///home/ada/my%20project/");
        assert_eq!(root_name(&r), "my project");
        r.name = Some("Engine".into());
        assert_eq!(root_name(&r), "Engine");
        assert_eq!(root_name(&Root::new("file:///")), "root");
        assert_eq!(root_name(&Root::new("file:///x/%zz")), "%zz");
        assert_eq!(root_name(&Root::new("file:///x/a%")), "a%");
        assert_eq!(root_name(&Root::new("file:///x/%é1")), "%é1");
        // Fit to be a project tag: no control characters, not too long.
        assert_eq!(root_name(&Root::new("file:///x/a%00b%0A%1B[31mc")), "a b  [31mc");
        assert_eq!(root_name(&Root::new("file:///x/my%20%20app")), "my  app");
        let long = root_name(&Root::new(format!("file:///x/{}", "z".repeat(300))));
        assert_eq!(long.chars().count(), crate::domain::MAX_PROJECT_CHARS);
        assert!(crate::domain::project_problem(&long).is_none());
    }
}
