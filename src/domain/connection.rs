//! What a stateful connection (stdio; a legacy HTTP session) remembers
//! between calls: the stage it reached and its current session. A client of
//! the stateless protocol passes `sessionId` instead; this state is only
//! the fallback for calls without one (sessions are handles, decision 0002).

use super::Stage;

/// The session a call without `sessionId` acts on, and why there may be
/// none. At most one session is remembered, so the three cases exclude each
/// other.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Current {
    #[default]
    None,
    /// Started, loaded, resumed or written to last.
    Open(String),
    /// Closed by `nextThoughtNeeded: false`, none opened since: the errors of
    /// a call without a session point back to it.
    Closed(String),
    /// Found deleted (by another process), none opened since: the thought
    /// that starts a new session says why.
    Deleted(String),
}

/// A connection's stage and current session, with the transitions the
/// gateway makes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ConnectionState {
    stage: Stage,
    current: Current,
}

impl ConnectionState {
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// Raise the stage to `to` (it never goes down): `Some((before, now))`
    /// when it rose.
    pub fn advance(&mut self, to: Stage) -> Option<(Stage, Stage)> {
        let before = self.stage;
        (to > before).then(|| {
            self.stage = to;
            (before, to)
        })
    }

    /// The session a call without `sessionId` acts on.
    pub fn current(&self) -> Option<&str> {
        match &self.current {
            Current::Open(id) => Some(id),
            _ => None,
        }
    }

    /// The session closed here, if none has been opened since.
    pub fn closed(&self) -> Option<&str> {
        match &self.current {
            Current::Closed(id) => Some(id),
            _ => None,
        }
    }

    /// The current session found deleted, if none has been opened since.
    pub fn deleted(&self) -> Option<&str> {
        match &self.current {
            Current::Deleted(id) => Some(id),
            _ => None,
        }
    }

    /// `id` was started, loaded, resumed or written to.
    pub fn open(&mut self, id: String) {
        self.current = Current::Open(id);
    }

    /// `id` was closed by `nextThoughtNeeded: false`.
    pub fn close(&mut self, id: String) {
        self.current = Current::Closed(id);
    }

    /// The current session, if still `id` (a request running meanwhile may
    /// have opened another), was found deleted elsewhere.
    pub fn found_deleted(&mut self, id: &str) {
        if self.current() == Some(id) {
            self.current = Current::Deleted(id.to_string());
        }
    }

    /// `id` was deleted through this connection: it is neither current nor
    /// to be pointed back to.
    pub fn deleted_here(&mut self, id: &str) {
        if matches!(&self.current, Current::Open(c) | Current::Closed(c) if c == id) {
            self.current = Current::None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stage_only_rises() {
        let mut c = ConnectionState::default();
        assert_eq!(
            c.advance(Stage::CipherLoaded),
            Some((Stage::Entry, Stage::CipherLoaded))
        );
        assert_eq!(c.advance(Stage::InitComplete), None);
        assert_eq!(c.stage(), Stage::CipherLoaded);
        // Closing or losing a session leaves the stage alone.
        c.open("a".into());
        c.close("a".into());
        assert_eq!(c.stage(), Stage::CipherLoaded);
    }

    #[test]
    fn one_session_is_remembered_open_closed_or_deleted() {
        let mut c = ConnectionState::default();
        assert_eq!((c.current(), c.closed(), c.deleted()), (None, None, None));
        c.open("a".into());
        assert_eq!(c.current(), Some("a"));
        c.close("a".into());
        assert_eq!((c.current(), c.closed()), (None, Some("a")));
        c.open("b".into());
        assert_eq!((c.current(), c.closed()), (Some("b"), None));
        c.found_deleted("b");
        assert_eq!((c.current(), c.deleted()), (None, Some("b")));
        c.open("c".into());
        assert_eq!(c.deleted(), None);
    }

    #[test]
    fn a_deletion_of_another_session_changes_nothing() {
        let mut c = ConnectionState::default();
        c.open("a".into());
        c.found_deleted("b");
        c.deleted_here("b");
        assert_eq!(c.current(), Some("a"));
        c.deleted_here("a");
        assert_eq!(c.current(), None);
        c.close("x".into());
        c.deleted_here("x");
        assert_eq!((c.current(), c.closed(), c.deleted()), (None, None, None));
    }
}
