//! The tests' reference for what streaming a session from the database
//! must give: a session whose thoughts are in memory, in any order.

use std::collections::HashMap;

use super::{NextLinks, SessionSource, ThoughtNode};
use crate::domain::{Session, Thought};
use crate::error::Result;

/// A session whose thoughts are already in memory, in any order (the
/// tests' reference for what streaming from the database must give).
pub struct Loaded<'a> {
    pub session: &'a Session,
    pub thoughts: &'a [Thought],
}

impl SessionSource for Loaded<'_> {
    fn session(&self) -> &Session {
        self.session
    }

    fn links(&self) -> Result<Vec<(String, String)>> {
        Ok(links_of(self.thoughts))
    }

    fn creation_order(&self) -> Result<Vec<i64>> {
        let mut seqs: Vec<i64> = self.thoughts.iter().map(|t| t.seq).collect();
        seqs.sort_unstable();
        Ok(seqs)
    }

    fn each_thought(&self, f: &mut dyn FnMut(Thought) -> Result<()>) -> Result<()> {
        // A branch's row is created with its first thought, at that
        // thought's time: branches by that time, then by id, as the store
        // has them.
        let mut created: HashMap<&str, &str> = HashMap::new();
        for t in self.thoughts {
            if let Some(b) = t.data.branch_id.as_deref() {
                let at = created.entry(b).or_insert(&t.data.timestamp);
                *at = (*at).min(t.data.timestamp.as_str());
            }
        }
        let chain = |t: &'_ Thought| -> Option<(&str, String)> {
            t.data
                .branch_id
                .as_deref()
                .map(|b| (created.get(b).copied().unwrap_or_default(), b.to_string()))
        };
        let mut in_order: Vec<&Thought> = self.thoughts.iter().collect();
        in_order.sort_by(|a, b| (chain(a), a.data.thought_number).cmp(&(chain(b), b.data.thought_number)));
        in_order.into_iter().try_for_each(|t| f(t.clone()))
    }
}

/// `(prev_node, node_id)` of every thought that follows another, in creation order.
fn links_of(thoughts: &[Thought]) -> Vec<(String, String)> {
    let mut by_seq: Vec<&Thought> = thoughts.iter().collect();
    by_seq.sort_by_key(|t| t.seq);
    by_seq
        .into_iter()
        .filter_map(|t| Some((t.prev_node.clone()?, t.node_id.clone())))
        .collect()
}

/// The nodes of loaded thoughts, in the order given. `next` lists every node
/// whose `prev` is the node, in creation order.
pub(super) fn nodes(thoughts: &[Thought]) -> Vec<ThoughtNode> {
    let next = NextLinks::new(links_of(thoughts));
    thoughts.iter().map(|t| next.node(t.clone())).collect()
}
