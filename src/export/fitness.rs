//! What an import refuses in a session's rows, checked as an export streams
//! them, so that no export (the directory layout or one SessionExport file)
//! writes a session that `thoughtbox import` would then refuse.
//!
//! The schema refuses all of this on the way in; a ledger can still hold such
//! rows from before its checks (versions 8 to 12), edited by hand. Such a
//! session is named with what is wrong, and `thoughtbox repair` lists the
//! rows with the SQL that mends them.

use std::collections::{BTreeMap, HashSet};

use crate::domain::{MAX_THOUGHT_BYTES, Session, Thought, node_id};
use crate::error::{Error, Result};

/// Collects what the checks of a whole session need while its thoughts go by.
pub struct ImportFitness<'s> {
    session: &'s Session,
    nodes: HashSet<String>,
    main_nodes: HashSet<String>,
    /// Each branch's fork point, as its first thought names it.
    forks: BTreeMap<String, String>,
}

impl<'s> ImportFitness<'s> {
    /// Checks the session's own fields.
    pub fn new(session: &'s Session) -> Result<Self> {
        let fit = ImportFitness {
            session,
            nodes: HashSet::new(),
            main_nodes: HashSet::new(),
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
            (None, None) => {
                self.main_nodes.insert(t.node_id.clone());
            }
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
        self.nodes.insert(t.node_id.clone());
        Ok(())
    }

    /// Checks what only the whole session shows, once every thought went
    /// by: each fork point is a thought of the main chain, and each `prev`
    /// (`prevs`: every node some thought follows) a thought of the session.
    pub fn finish<'p>(self, mut prevs: impl Iterator<Item = &'p String>) -> Result<()> {
        if let Some((b, origin)) = self.forks.iter().find(|(_, origin)| !self.main_nodes.contains(*origin)) {
            return Err(self.unfit(format!(
                "branch {b:?} forks from {origin}, which is not a thought of its main chain"
            )));
        }
        if let Some(missing) = prevs.find(|p| !self.nodes.contains(*p)) {
            return Err(self.unfit(format!("a thought follows {missing:?}, which is not a thought of it")));
        }
        Ok(())
    }
}
