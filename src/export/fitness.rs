//! What an import refuses in a session's rows, checked as an export streams
//! them, so that no export (the directory layout or one SessionExport file)
//! writes a session that `thoughtbox import` would then refuse.
//!
//! The schema refuses all of this on the way in; a ledger can still hold such
//! rows from before its checks (versions 8 to 12), edited by hand. Such a
//! session is named with what is wrong, and `thoughtbox repair` lists the
//! rows with the SQL that mends them.

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::domain::{MAX_THOUGHT_BYTES, Session, Thought, node_id};
use crate::error::{Error, Result};

/// A thought of the session as its chain and number: chain 0 is the main
/// chain, `i` the `i`-th branch met. Every node id went by checked to be
/// the one its branch and number make, so the pair names it; eight bytes
/// instead of the id (a set of 100,000 ids took about 16 MiB).
type Key = (u32, u32);

/// Collects what the checks of a whole session need while its thoughts go by.
pub struct ImportFitness<'s> {
    session: &'s Session,
    /// Each branch's chain number in [`Key`]s.
    chains: HashMap<String, u32>,
    nodes: HashSet<Key>,
    /// Each branch's fork point, as its first thought names it.
    forks: BTreeMap<String, String>,
}

impl<'s> ImportFitness<'s> {
    /// Checks the session's own fields.
    pub fn new(session: &'s Session) -> Result<Self> {
        let fit = ImportFitness {
            session,
            chains: HashMap::new(),
            nodes: HashSet::new(),
            forks: BTreeMap::new(),
        };
        for (name, time) in [
            ("createdAt", Some(&session.created_at)),
            ("updatedAt", Some(&session.updated_at)),
            ("completedAt", session.completed_at.as_ref()),
        ] {
            if let Some(t) = time
                && chrono::DateTime::parse_from_rfc3339(t).is_err()
            {
                return Err(fit.unfit(format!("its {name} {t:?} is not an ISO 8601 date-time")));
            }
        }
        Ok(fit)
    }

    /// The error naming the session and what is wrong with it.
    pub fn unfit(&self, what: String) -> Error {
        Error::invalid(
            "sessionId",
            format!(
                "session {}: {what} (edited by hand? `thoughtbox repair` names such rows)",
                self.session.id
            ),
        )
    }

    /// Checks one thought of the session.
    pub fn thought(&mut self, t: &Thought) -> Result<()> {
        let expected = node_id(&self.session.id, t.data.branch_id.as_deref(), t.data.thought_number);
        if t.node_id != expected {
            return Err(self.unfit(format!(
                "thought {:?} should be named {expected:?} for its branch and number",
                t.node_id
            )));
        }
        if chrono::DateTime::parse_from_rfc3339(&t.data.timestamp).is_err() {
            return Err(self.unfit(format!(
                "thought {} has the time {:?}, not an ISO 8601 date-time",
                t.node_id, t.data.timestamp
            )));
        }
        if t.data.thought.len() > MAX_THOUGHT_BYTES {
            return Err(self.unfit(format!(
                "thought {} is {} bytes of text, over the {MAX_THOUGHT_BYTES} an import takes",
                t.node_id,
                t.data.thought.len(),
            )));
        }
        // A fork point as an import takes it: none on the main chain, one
        // per branch (branchOrigin, else branchFromThought).
        let stated = t
            .branch_origin
            .clone()
            .or_else(|| t.data.branch_from_thought.map(|f| node_id(&self.session.id, None, f)));
        match (t.data.branch_id.as_deref(), stated) {
            (None, None) => {}
            (None, Some(origin)) => {
                return Err(self.unfit(format!(
                    "thought {} is on the main chain but names the fork point {origin}",
                    t.node_id
                )));
            }
            (Some(b), None) => {
                return Err(self.unfit(format!("thought {} of branch {b:?} names no fork point", t.node_id)));
            }
            (Some(b), Some(origin)) => match self.forks.get(b) {
                Some(first) if *first != origin => {
                    return Err(self.unfit(format!(
                        "branch {b:?} forks from both {first} and {origin} (thought {})",
                        t.node_id
                    )));
                }
                Some(_) => {}
                None => {
                    self.forks.insert(b.to_string(), origin);
                }
            },
        }
        let chain = match t.data.branch_id.as_deref() {
            None => 0,
            Some(b) => match self.chains.get(b) {
                Some(&chain) => chain,
                None => {
                    let chain = u32::try_from(self.chains.len() + 1)
                        .map_err(|_| Error::Internal("more branches than a u32 counts".into()))?;
                    self.chains.insert(b.to_string(), chain);
                    chain
                }
            },
        };
        self.nodes.insert((chain, t.data.thought_number));
        Ok(())
    }

    /// Whether `node` is the id of a thought that went by: main chain
    /// (`chain: Some(0)`) or any (`None`).
    fn seen(&self, node: &str, chain: Option<u32>) -> bool {
        let Some(rest) = node
            .strip_prefix(self.session.id.as_str())
            .and_then(|r| r.strip_prefix(':'))
        else {
            return false;
        };
        let (branch, number) = match rest.rsplit_once(':') {
            Some((b, n)) => (Some(b), n),
            None => (None, rest),
        };
        let Ok(n) = number.parse::<u32>() else {
            return false;
        };
        let key = match branch {
            None => 0,
            Some(b) => match self.chains.get(b) {
                Some(&k) => k,
                None => return false,
            },
        };
        // The id as the pair makes it (no "07" for 7).
        chain.is_none_or(|c| c == key) && self.nodes.contains(&(key, n)) && node_id(&self.session.id, branch, n) == node
    }

    /// Checks what only the whole session shows, once every thought went
    /// by: each fork point is a thought of the main chain, and each `prev`
    /// (`prevs`: every node some thought follows) a thought of the session.
    pub fn finish<'p>(self, mut prevs: impl Iterator<Item = &'p String>) -> Result<()> {
        if let Some((b, origin)) = self.forks.iter().find(|(_, origin)| !self.seen(origin, Some(0))) {
            return Err(self.unfit(format!(
                "branch {b:?} forks from {origin}, which is not a thought of its main chain"
            )));
        }
        if let Some(missing) = prevs.find(|p| !self.seen(p, None)) {
            return Err(self.unfit(format!("a thought follows {missing:?}, which is not a thought of it")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::tests::{session, thought};

    /// Runs a session's thoughts and their `prev`s through the checks.
    fn check(thoughts: &[Thought]) -> Result<()> {
        let s = session();
        let mut fit = ImportFitness::new(&s)?;
        for t in thoughts {
            fit.thought(t)?;
        }
        let prevs: Vec<String> = thoughts.iter().filter_map(|t| t.prev_node.clone()).collect();
        fit.finish(prevs.iter())
    }

    fn branch(n: u32, b: &str, prev: &str, origin: &str) -> Thought {
        let mut t = thought(i64::from(n), n, Some(b), Some(prev), "b");
        t.branch_origin = Some(origin.into());
        t
    }

    /// Nodes are kept as chain and number: every id still has to be the
    /// very one of a thought that went by, on the chain it names.
    #[test]
    fn links_must_name_thoughts_that_went_by() {
        let main = [thought(1, 1, None, None, "a"), thought(2, 2, None, Some("s:1"), "b")];
        let fine = [
            main[0].clone(),
            main[1].clone(),
            branch(2, "x", "s:1", "s:1"),
            branch(3, "x", "s:x:2", "s:1"),
        ];
        check(&fine).unwrap();

        let refused = |ts: &[Thought], what: &str| {
            let e = check(ts).unwrap_err().to_string();
            assert!(e.contains(what), "{e}");
        };
        // A fork point on a branch, or on no thought at all.
        let mut on_branch = fine.to_vec();
        on_branch.push(branch(2, "y", "s:x:2", "s:x:2"));
        refused(
            &on_branch,
            "branch \"y\" forks from s:x:2, which is not a thought of its main chain",
        );
        refused(&[main[0].clone(), branch(2, "x", "s:1", "s:7")], "forks from s:7");
        // A prev that is not quite a node id of the session.
        for stray in ["s:01", "s:+1", "s:3", "s:y:2", "s:x:9", "t:1", "s1", "s:", "s:x:"] {
            let mut ts = fine.to_vec();
            ts.push(thought(9, 9, None, Some(stray), "c"));
            refused(
                &ts,
                &format!("a thought follows {stray:?}, which is not a thought of it"),
            );
        }
    }
}
