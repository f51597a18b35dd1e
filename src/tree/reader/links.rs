//! Linking a loaded session's nodes: every link must name a node of the
//! session and every branch fork from one main-chain node; the habits of
//! the TypeScript Thoughtbox (star-shaped branches, `next` lists never
//! updated) are repaired with a warning; and the thoughts are put in
//! creation order for the ledger.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

use super::{Loader, Node, small_number};
use crate::domain::{self, Thought};

impl Loader<'_> {
    /// Check that every link names a node of the session and that each branch
    /// forks from one main-chain node; fill in what the links imply.
    pub(super) fn check_links(&mut self, sid: &str, mut nodes: Vec<Node>) -> Option<Vec<Node>> {
        let mut index: HashMap<String, usize> = HashMap::new();
        for (i, n) in nodes.iter().enumerate() {
            if index.insert(n.id.clone(), i).is_some() {
                self.error(format!("node {} appears twice", n.id));
            }
        }
        // Each branch's fork point: the origin its nodes state (branchOrigin,
        // else branchFromThought), which must agree.
        let mut forks: BTreeMap<String, String> = BTreeMap::new();
        for n in &nodes {
            if n.branch.is_some()
                && let Some(why) = fork_disagreement(sid, n.data.branch_from_thought, n.branch_origin.as_deref())
            {
                self.error(format!("{}: {why}", n.file));
            }
            let stated = n
                .branch_origin
                .clone()
                .or_else(|| n.data.branch_from_thought.map(|f| domain::node_id(sid, None, f)));
            match (&n.branch, stated) {
                (None, Some(_)) => self.error(format!(
                    "{}: a main-chain thought cannot have branchOrigin or branchFromThought",
                    n.file
                )),
                (Some(b), Some(origin)) => match forks.get(b) {
                    Some(existing) if *existing != origin => self.error(format!(
                        "branch {b:?} forks from both {existing} and {origin}; a branch has one fork point"
                    )),
                    Some(_) => {}
                    None => {
                        forks.insert(b.clone(), origin);
                    }
                },
                _ => {}
            }
        }
        let mut fork_numbers: HashMap<String, u32> = HashMap::new();
        let branches: HashSet<String> = nodes.iter().filter_map(|n| n.branch.clone()).collect();
        for b in &branches {
            let origin = forks.get(b).and_then(|o| index.get(o).map(|&i| &nodes[i]));
            match origin {
                Some(o) if o.branch.is_none() => {
                    fork_numbers.insert(b.clone(), o.data.thought_number);
                }
                _ => self.error(format!(
                    "branch {b:?} does not fork from a main-chain thought of this session (fork point: {})",
                    forks.get(b).map_or("none given", String::as_str)
                )),
            }
        }
        for n in &mut nodes {
            let stated = n.data.revises_thought;
            match revision_link(sid, n.branch.as_deref(), stated, n.revises_node.as_deref()) {
                Ok(Some((number, node))) => {
                    if stated.is_none() {
                        self.report.warnings.push(format!(
                            "{}: revisesThought was missing; {number} was taken from revisesNode {node}",
                            n.file
                        ));
                    }
                    n.data.revises_thought = Some(number);
                    n.data.is_revision = true;
                    n.revises_node = Some(node);
                }
                Ok(None) => {}
                Err(why) => {
                    self.error(format!("{}: {why}", n.file));
                    // Refused: not checked again below as a link.
                    n.revises_node = None;
                }
            }
            if let Some(b) = &n.branch
                && let Some(&f) = fork_numbers.get(b)
            {
                n.branch_origin = Some(domain::node_id(sid, None, f));
                n.data.branch_from_thought = Some(f);
            }
        }
        // Thoughtbox 1.2.2 links a thought to itself when its number is
        // recorded twice in a row; the chain is relinked in timestamp order
        // below, like any chain that is not one chain of links.
        for n in &mut nodes {
            if n.prev.as_deref() == Some(n.id.as_str()) {
                n.prev = None;
                if let Some(next) = &mut n.next {
                    next.retain(|id| *id != n.id);
                }
                self.report.warnings.push(format!(
                    "{}: prev named the node itself (Thoughtbox 1.2.2 does this when a thought number is recorded twice); its chain is relinked in timestamp order",
                    n.file
                ));
            }
        }
        let mut errors = Vec::new();
        for n in &nodes {
            for (what, link) in [("prev", &n.prev), ("revisesNode", &n.revises_node)] {
                if let Some(l) = link
                    && !index.contains_key(l)
                {
                    errors.push(format!(
                        "{}: {what} names {l}, which is not a node of this session",
                        n.file
                    ));
                }
            }
            if n.revises_node.as_deref() == Some(n.id.as_str()) {
                errors.push(format!("{}: the node revises itself", n.file));
            }
        }
        for e in errors {
            self.error(e);
        }
        self.report.result.errors.is_empty().then_some(nodes)
    }

    /// Make each chain a single chain of `prev` links (relinking it in
    /// timestamp order when it is not), then order all nodes as they were
    /// created: a node after its `prev`, siblings in the order of their
    /// parent's `next` list where that list agrees, otherwise by timestamp.
    pub(super) fn creation_order(&mut self, sid: &str, mut nodes: Vec<Node>) -> Vec<Thought> {
        // Our exporter writes each thought's place in the creation order:
        // where every file has one it decides; otherwise the timestamps do.
        let by_seq = nodes.iter().all(|n| n.seq.is_some());
        let when = |n: &Node| {
            if by_seq {
                (n.seq.unwrap_or(i64::MAX), 0)
            } else {
                (n.millis, n.seq.unwrap_or(i64::MAX))
            }
        };
        let index: HashMap<String, usize> = nodes.iter().enumerate().map(|(i, n)| (n.id.clone(), i)).collect();
        let mut chains: BTreeMap<Option<String>, Vec<usize>> = BTreeMap::new();
        for (i, n) in nodes.iter().enumerate() {
            chains.entry(n.branch.clone()).or_default().push(i);
        }
        for (branch, members) in &chains {
            let head_prev = members.first().and_then(|&i| nodes[i].branch_origin.clone());
            if is_single_chain(&nodes, members, &head_prev) {
                continue;
            }
            let mut ordered = members.clone();
            ordered.sort_by_key(|&i| (when(&nodes[i]), nodes[i].data.thought_number));
            let mut prev = head_prev;
            for i in ordered {
                nodes[i].prev = prev;
                prev = Some(nodes[i].id.clone());
            }
            self.report.warnings.push(match branch {
                Some(b) => format!(
                    "branch {b:?} was not one chain of prev links (Thoughtbox 1.2.x links every branch thought to the fork point); relinked in timestamp order"
                ),
                None => "the main chain was not one chain of prev links; relinked in timestamp order".to_string(),
            });
        }
        // children[p] = nodes whose prev is p, in the file order.
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        let mut indegree = vec![0usize; nodes.len()];
        for (i, n) in nodes.iter().enumerate() {
            if let Some(&p) = n.prev.as_ref().and_then(|p| index.get(p)) {
                children[p].push(i);
                indegree[i] += 1;
            }
        }
        // Sibling order from `next`, where it names exactly the children.
        let mut after: Vec<Vec<usize>> = vec![Vec::new(); nodes.len()];
        let mut stale = false;
        for (p, kids) in children.iter().enumerate() {
            let listed: Vec<usize> = nodes[p]
                .next
                .iter()
                .flatten()
                .filter_map(|id| index.get(id).copied())
                .collect();
            let agrees = nodes[p].next.as_ref().is_some_and(|n| n.len() == kids.len())
                && listed.len() == kids.len()
                && kids.iter().all(|k| listed.contains(k));
            if !agrees {
                stale |= nodes[p].next.as_ref().is_some_and(|n| !n.is_empty()) || !kids.is_empty();
                continue;
            }
            for pair in listed.windows(2) {
                after[pair[0]].push(pair[1]);
                indegree[pair[1]] += 1;
            }
        }
        if stale {
            self.report.warnings.push(
                "next lists disagree with prev links (Thoughtbox 1.2.x never updates them); next is rebuilt from prev"
                    .to_string(),
            );
        }
        let mut ready: BinaryHeap<Reverse<((i64, i64), usize)>> = BinaryHeap::new();
        for (i, n) in nodes.iter().enumerate() {
            if indegree[i] == 0 {
                ready.push(Reverse((when(n), i)));
            }
        }
        let mut order = Vec::with_capacity(nodes.len());
        while let Some(Reverse((_, i))) = ready.pop() {
            order.push(i);
            for &c in children[i].iter().chain(&after[i]) {
                indegree[c] -= 1;
                if indegree[c] == 0 {
                    ready.push(Reverse((when(&nodes[c]), c)));
                }
            }
        }
        let mut slots: Vec<Option<Node>> = nodes.into_iter().map(Some).collect();
        order
            .into_iter()
            .enumerate()
            .filter_map(|(seq, i)| {
                let n = slots[i].take()?;
                Some(Thought {
                    seq: seq as i64,
                    session_id: sid.to_string(),
                    node_id: n.id,
                    prev_node: n.prev,
                    revises_node: n.revises_node,
                    branch_origin: n.branch_origin,
                    data: n.data,
                })
            })
            .collect()
    }
}

/// The revision a node states, as the number and the node id the ledger
/// keeps of it, which name one thought: a thought revises one of its own
/// chain, so revising thought k is `revisesNode` `{sid}:k` on the main chain
/// and `{sid}:{branch}:k` on a branch (Thoughtbox 1.2.x writes them so, and
/// so does our exporter). Either may be missing: the other gives it. When
/// they disagree, or `revisesNode` alone names no thought of the node's own
/// chain, reads would follow one and show the other, and which one the file
/// meant only its author knows: the message names both, and what each
/// would have to be.
pub(super) fn revision_link(
    sid: &str,
    branch: Option<&str>,
    number: Option<u32>,
    node: Option<&str>,
) -> Result<Option<(u32, String)>, String> {
    let chain = match branch {
        Some(b) => format!("branch {b:?}"),
        None => "the main chain".to_string(),
    };
    match (number, node) {
        (None, None) => Ok(None),
        (Some(k), None) => Ok(Some((k, domain::node_id(sid, branch, k)))),
        (Some(k), Some(node)) => {
            let expected = domain::node_id(sid, branch, k);
            if node == expected {
                return Ok(Some((k, expected)));
            }
            Err(match number_on_chain(sid, branch, node) {
                Some(m) => format!(
                    "revisesThought {k} and revisesNode {node} (thought {m}) disagree: they must name one \
                     thought, either revisesThought {k} with revisesNode {expected} or revisesThought {m} with \
                     revisesNode {node}"
                ),
                None => format!(
                    "revisesThought {k} and revisesNode {node} disagree: a thought of {chain} revises one of \
                     {chain}, so revisesThought {k} goes with revisesNode {expected}"
                ),
            })
        }
        (None, Some(node)) => match number_on_chain(sid, branch, node) {
            Some(m) => Ok(Some((m, node.to_string()))),
            None => {
                let pattern = match branch {
                    Some(b) => format!("{sid}:{b}:N"),
                    None => format!("{sid}:N"),
                };
                Err(format!(
                    "revisesNode {node} is not a thought of {chain}, and revisesThought is not given: a thought \
                     revises one of {chain}, so revising thought N is revisesThought N with revisesNode {pattern}"
                ))
            }
        },
    }
}

/// Why a branch thought's `branchFromThought` and `branchOrigin` do not
/// name one thought, when they do not: as for a revision, which one the
/// file meant only its author knows, so the message names both and what
/// each would have to be.
fn fork_disagreement(sid: &str, number: Option<u32>, origin: Option<&str>) -> Option<String> {
    let (k, origin) = (number?, origin?);
    let expected = domain::node_id(sid, None, k);
    if origin == expected {
        return None;
    }
    Some(match number_on_chain(sid, None, origin) {
        Some(m) => format!(
            "branchFromThought {k} and branchOrigin {origin} (thought {m}) disagree: they must name one thought, \
             either branchFromThought {k} with branchOrigin {expected} or branchFromThought {m} with branchOrigin \
             {origin}"
        ),
        None => format!(
            "branchFromThought {k} and branchOrigin {origin} disagree: a branch forks from a main-chain thought, \
             so branchFromThought {k} goes with branchOrigin {expected}"
        ),
    })
}

/// The thought number `node` names when it is a node id of `branch` (None:
/// the main chain) of session `sid`, in the one form the ledger writes it.
pub(super) fn number_on_chain(sid: &str, branch: Option<&str>, node: &str) -> Option<u32> {
    let rest = node.strip_prefix(sid)?.strip_prefix(':')?;
    let rest = match branch {
        Some(b) => rest.strip_prefix(b)?.strip_prefix(':')?,
        None => rest,
    };
    let k = small_number(rest.parse().ok()?)?;
    (domain::node_id(sid, branch, k) == node).then_some(k)
}

/// True when `members` (one chain's nodes) are linked as one chain: one head
/// whose `prev` is `head_prev`, every other node's `prev` a member, no member
/// the `prev` of two others, and every member reachable from the head.
pub(super) fn is_single_chain(nodes: &[Node], members: &[usize], head_prev: &Option<String>) -> bool {
    let ids: HashMap<&str, usize> = members.iter().map(|&i| (nodes[i].id.as_str(), i)).collect();
    let mut heads = Vec::new();
    let mut child_of: HashMap<usize, usize> = HashMap::new();
    for &i in members {
        match nodes[i].prev.as_deref().and_then(|p| ids.get(p)) {
            Some(&p) => {
                if child_of.insert(p, i).is_some() {
                    return false;
                }
            }
            None if nodes[i].prev == *head_prev => heads.push(i),
            None => return false,
        }
    }
    let [head] = heads[..] else { return false };
    let mut seen = 1;
    let mut at = head;
    while let Some(&c) = child_of.get(&at) {
        seen += 1;
        if seen > members.len() {
            return false;
        }
        at = c;
    }
    seen == members.len()
}
