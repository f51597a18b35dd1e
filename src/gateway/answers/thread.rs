//! The answers of `thread`. A thread and its relations are answered as the
//! registry JSON writes them (snake_case fields), so that an agent reads one
//! shape in `get`, `list` and `export`; the answer's own fields are camelCase
//! like every other answer's, with `sessionId`, the handle, beside
//! `threadId`.

use serde::Serialize;

use crate::domain::thread::{Operation, Relations, Thread};

/// `spawn`, `freeze`, `archive`, `update`: the thread as it is now and the
/// operation logged.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadChangedAnswer<'a> {
    pub thread_id: &'a str,
    pub session_id: &'a str,
    pub thread: &'a Thread,
    pub operation: &'a Operation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_step: Option<&'static str>,
}

/// `reference` and `depend`: `recorded: false` (and no operation) when the
/// same link was recorded before.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LinkAnswer<'a> {
    pub session_id: &'a str,
    pub from_id: &'a str,
    pub to_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub asset_path: Option<&'a str>,
    pub recorded: bool,
    pub operation: Option<&'a Operation>,
    /// `fromId`'s relations after the change.
    pub relations: &'a Relations,
}

/// `get`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadGetAnswer<'a> {
    pub thread_id: &'a str,
    pub session_id: &'a str,
    pub thread: &'a Thread,
    pub relations: &'a Relations,
}

/// `list`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadListAnswer<'a> {
    pub threads: &'a [Thread],
    pub count: usize,
    pub total: u64,
    pub has_more: bool,
}

/// One thread of a tree, with its children.
#[derive(Debug, Serialize)]
pub(crate) struct TreeNode {
    #[serde(flatten)]
    pub thread: Thread,
    pub depth: u32,
    pub children: Vec<TreeNode>,
}

/// `tree`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadTreeAnswer<'a> {
    pub thread_id: &'a str,
    pub session_id: &'a str,
    pub thread: &'a Thread,
    pub children: Vec<TreeNode>,
    /// Descendants answered.
    pub count: usize,
    /// More than the descendants answered exist.
    pub truncated: bool,
}

/// `log`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadLogAnswer<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<&'a str>,
    pub operations: &'a [Operation],
    pub count: usize,
    pub total: u64,
    pub has_more: bool,
}

/// Nest `descendants` (parents before children, each with its depth) under
/// the thread `root`.
pub(crate) fn nest(root: &str, descendants: Vec<(Thread, u32)>) -> Vec<TreeNode> {
    fn take(parent: &str, rest: &mut Vec<(Thread, u32)>) -> Vec<TreeNode> {
        let mine: Vec<(Thread, u32)> = {
            let (mine, others): (Vec<_>, Vec<_>) = std::mem::take(rest)
                .into_iter()
                .partition(|(t, _)| t.parent_id.as_deref() == Some(parent));
            *rest = others;
            mine
        };
        mine.into_iter()
            .map(|(thread, depth)| {
                let children = take(&thread.id, rest);
                TreeNode {
                    thread,
                    depth,
                    children,
                }
            })
            .collect()
    }
    let mut rest = descendants;
    take(root, &mut rest)
}
