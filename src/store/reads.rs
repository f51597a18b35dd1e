//! Reading a chain's thoughts back: one by number, the last few, a range,
//! or a whole branch ([`ThoughtQuery`]), stopped early by a caller's check
//! and saying what it did not read ([`Unread`]).

use rusqlite::params;
use serde_json::json;

use super::Store;
use super::sessions::session_exists_tx;
use super::thoughts::{MAX_BRANCHES_NAMED, THOUGHT_COLUMNS, branches_with_number_tx, thought_from_row};
use crate::domain::Thought;
use crate::error::{Error, Result};

/// Which thoughts `read_thoughts` returns: a pick from one chain.
#[derive(Debug, Clone, PartialEq)]
pub struct ThoughtQuery {
    /// The branch, or `None` for the main chain.
    pub branch: Option<String>,
    pub pick: Pick,
}

/// Which thoughts of a chain a [`ThoughtQuery`] takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Pick {
    /// One thought by number.
    Number(u32),
    /// The last N by number.
    Last(u32),
    /// Numbers in `[start, end]`.
    Range(u32, u32),
    /// Every thought of the chain.
    All,
}

impl ThoughtQuery {
    /// `pick` from the main chain.
    pub fn main(pick: Pick) -> ThoughtQuery {
        ThoughtQuery { branch: None, pick }
    }

    /// `pick` from `branch`, or from the main chain for `None`.
    pub fn on(branch: Option<String>, pick: Pick) -> ThoughtQuery {
        ThoughtQuery { branch, pick }
    }
}

impl Store {
    /// Thoughts selected by `query`. `SESSION_NOT_FOUND` for an unknown
    /// session, `THOUGHT_NOT_FOUND` for a missing thought or branch.
    pub fn read_thoughts(&self, session_id: &str, query: &ThoughtQuery) -> Result<Vec<Thought>> {
        Ok(self.read_thoughts_checked(session_id, query, &mut |_| Ok(true))?.0)
    }

    /// [`Store::read_thoughts`], showing each thought to `check` as it is
    /// read (for `Last`, newest first): `false` from it stops the read
    /// before that thought, and the answer says what was left
    /// ([`Unread`]); an error ends it, so a caller can give up on an answer
    /// that grows too long before the rest of the rows are loaded.
    pub fn read_thoughts_checked(
        &self,
        session_id: &str,
        query: &ThoughtQuery,
        check: &mut dyn FnMut(&Thought) -> Result<bool>,
    ) -> Result<(Vec<Thought>, Option<Unread>)> {
        let mut stopped = false;
        self.read(|tx| {
            if !session_exists_tx(tx, session_id)? {
                return Err(Error::session_not_found(session_id));
            }
            // `IS` matches the main chain's NULL too, and uses the index as `=` does.
            let chain = format!("SELECT {THOUGHT_COLUMNS} FROM thoughts WHERE session_id = ?1 AND branch_id IS ?2");
            let branch = query.branch.as_deref();
            let mut collect = |rows: &mut dyn Iterator<Item = rusqlite::Result<Thought>>| -> Result<Vec<Thought>> {
                let mut kept = Vec::new();
                for row in rows {
                    let thought = row?;
                    if !check(&thought)? {
                        stopped = true;
                        break;
                    }
                    kept.push(thought);
                }
                Ok(kept)
            };
            let rows = match query.pick {
                Pick::Number(n) => collect(
                    &mut tx
                        .prepare_cached(&format!("{chain} AND thought_number = ?3"))?
                        .query_map(params![session_id, branch, n], thought_from_row)?,
                )?,
                Pick::Last(n) => {
                    let mut v = collect(
                        &mut tx
                            .prepare_cached(&format!("{chain} ORDER BY thought_number DESC LIMIT ?3"))?
                            .query_map(params![session_id, branch, n], thought_from_row)?,
                    )?;
                    v.reverse();
                    v
                }
                Pick::Range(a, b) => collect(
                    &mut tx
                        .prepare_cached(&format!(
                            "{chain} AND thought_number BETWEEN ?3 AND ?4 ORDER BY thought_number"
                        ))?
                        .query_map(params![session_id, branch, a, b], thought_from_row)?,
                )?,
                Pick::All => collect(
                    &mut tx
                        .prepare_cached(&format!("{chain} ORDER BY thought_number"))?
                        .query_map(params![session_id, branch], thought_from_row)?,
                )?,
            };
            if stopped {
                let unread = unread_tx(tx, session_id, query, &rows)?;
                return Ok((rows, unread));
            }
            if !rows.is_empty() {
                return Ok((rows, None));
            }
            match (&query.branch, query.pick) {
                (None, Pick::Number(n)) => {
                    let on = branches_with_number_tx(tx, session_id, n, "", MAX_BRANCHES_NAMED)?;
                    let hint = match on.first() {
                        Some(b) => format!(
                            "; branch {b} has a thought {n}{}: read it with branchId and thoughtNumber",
                            if on.len() > 1 { ", and others too" } else { "" }
                        ),
                        None => String::new(),
                    };
                    Err(Error::ThoughtNotFound {
                        message: format!("thought {n} not found on the main chain of session {session_id}{hint}"),
                        details: json!({
                            "sessionId": session_id, "thoughtNumber": n, "branchId": null, "onBranches": on,
                        }),
                    })
                }
                (Some(b), _) if !branch_exists_tx(tx, session_id, b)? => Err(Error::ThoughtNotFound {
                    message: format!("session {session_id} has no branch '{b}'"),
                    details: json!({ "sessionId": session_id, "branchId": b }),
                }),
                (Some(b), Pick::Number(n)) => Err(Error::ThoughtNotFound {
                    message: format!("thought {n} not found on branch '{b}' of session {session_id}"),
                    details: json!({ "sessionId": session_id, "thoughtNumber": n, "branchId": b }),
                }),
                _ => Ok((rows, None)),
            }
        })
    }
}

/// The thoughts a read stopped by its check did not take: how many, and a
/// range of numbers that holds them all on the query's chain.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Unread {
    pub count: usize,
    pub first: u32,
    pub last: u32,
}

/// What `query` picks beyond `kept`, the thoughts read before a stop (for
/// `Last`, the newest; else the lowest numbers), read in the same
/// transaction.
fn unread_tx(
    tx: &rusqlite::Connection,
    session_id: &str,
    query: &ThoughtQuery,
    kept: &[Thought],
) -> Result<Option<Unread>> {
    // Every pick as numbers between two ends, the newest `limit` of them
    // (SQLite reads a negative limit as none).
    let (from, to, limit) = match query.pick {
        Pick::Number(_) => return Ok(None),
        Pick::Last(n) => (1, u32::MAX, i64::from(n)),
        Pick::Range(a, b) => (a, b, -1),
        Pick::All => (1, u32::MAX, -1),
    };
    let (count, low, high): (i64, Option<u32>, Option<u32>) = tx.query_row(
        "SELECT count(*), min(n), max(n) FROM (SELECT thought_number AS n FROM thoughts
         WHERE session_id = ?1 AND branch_id IS ?2 AND thought_number BETWEEN ?3 AND ?4
         ORDER BY n DESC LIMIT ?5)",
        params![session_id, query.branch.as_deref(), from, to, limit],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
    )?;
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    let numbers = kept.iter().map(|t| t.data.thought_number);
    let range = match (query.pick, low, high) {
        (Pick::Last(_), Some(low), _) => numbers.min().map(|oldest| (low, oldest.saturating_sub(1))),
        (_, _, Some(high)) => numbers.max().map(|newest| (newest + 1, high)),
        _ => None,
    };
    Ok(range
        .filter(|(first, last)| first <= last && count > kept.len())
        .map(|(first, last)| Unread {
            count: count - kept.len(),
            first,
            last,
        }))
}

/// Whether session `session_id` has a thought on branch `branch`.
fn branch_exists_tx(tx: &rusqlite::Connection, session_id: &str, branch: &str) -> Result<bool> {
    Ok(tx
        .prepare_cached("SELECT 1 FROM thoughts WHERE session_id = ?1 AND branch_id = ?2 LIMIT 1")?
        .exists(params![session_id, branch])?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::{NewSession, ThoughtInput};
    use crate::store::Target;
    use crate::store::test_support::temp_store;

    #[test]
    fn reads() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("s")).unwrap();
        for i in 0..8 {
            store
                .append_thought(Target::Session(s.id.clone()), ThoughtInput::text(format!("t{i}")))
                .unwrap();
        }
        let last = store.read_thoughts(&s.id, &ThoughtQuery::main(Pick::Last(3))).unwrap();
        assert_eq!(
            last.iter().map(|t| t.data.thought_number).collect::<Vec<_>>(),
            [6, 7, 8]
        );
        let range = store
            .read_thoughts(&s.id, &ThoughtQuery::main(Pick::Range(2, 4)))
            .unwrap();
        assert_eq!(range.len(), 3);
        assert_eq!(
            store
                .read_thoughts(&s.id, &ThoughtQuery::main(Pick::Number(9)))
                .unwrap_err()
                .code(),
            "THOUGHT_NOT_FOUND"
        );
        // A number only a branch holds: the refusal names the branch.
        for _ in 0..2 {
            store
                .append_thought(
                    Target::Session(s.id.clone()),
                    ThoughtInput {
                        branch_id: Some("deep".into()),
                        branch_from_thought: Some(8),
                        ..ThoughtInput::text("b")
                    },
                )
                .unwrap();
        }
        let e = store
            .read_thoughts(&s.id, &ThoughtQuery::main(Pick::Number(10)))
            .unwrap_err();
        assert_eq!(e.code(), "THOUGHT_NOT_FOUND");
        assert!(e.to_string().contains("branch deep has a thought 10"), "{e}");
        assert_eq!(e.payload()["details"]["onBranches"], json!(["deep"]));
        assert_eq!(store.branches_with_number(&s.id, 9, "", 5).unwrap(), ["deep"]);
        assert!(store.branches_with_number(&s.id, 9, "deep", 5).unwrap().is_empty());
        for pick in [Pick::All, Pick::Number(9), Pick::Range(1, 3), Pick::Last(1)] {
            let e = store
                .read_thoughts(&s.id, &ThoughtQuery::on(Some("x".into()), pick))
                .unwrap_err();
            assert_eq!(e.code(), "THOUGHT_NOT_FOUND");
            assert!(e.to_string().contains("no branch 'x'"), "{e}");
        }
        // A branch's own numbers, read with its name.
        let deep = |pick| store.read_thoughts(&s.id, &ThoughtQuery::on(Some("deep".into()), pick));
        assert_eq!(deep(Pick::Number(10)).unwrap()[0].data.thought, "b");
        assert_eq!(deep(Pick::Last(1)).unwrap()[0].data.thought_number, 10);
        assert_eq!(deep(Pick::Range(1, 9)).unwrap().len(), 1);
        assert!(
            deep(Pick::Range(20, 30)).unwrap().is_empty(),
            "an empty part of a branch is no error"
        );
        let e = deep(Pick::Number(3)).unwrap_err();
        assert!(e.to_string().contains("not found on branch 'deep'"), "{e}");
    }

    /// The check sees each row as it is read and can end the read early
    /// (an answer that can no longer fit), before the rest is loaded; or
    /// stop it, and the answer says what was not read.
    #[test]
    fn a_check_ends_a_read_at_the_row_it_refuses() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("t")).unwrap();
        for _ in 0..6 {
            store
                .append_thought(Target::Session(s.id.clone()), ThoughtInput::text("x"))
                .unwrap();
        }
        for (query, first_seen) in [
            (ThoughtQuery::main(Pick::Range(1, 6)), 1),
            (ThoughtQuery::main(Pick::Last(6)), 6),
        ] {
            let mut seen = Vec::new();
            let err = store
                .read_thoughts_checked(&s.id, &query, &mut |t| {
                    seen.push(t.data.thought_number);
                    if seen.len() == 2 {
                        return Err(Error::invalid("range", "too much"));
                    }
                    Ok(true)
                })
                .unwrap_err();
            assert_eq!(err.code(), "INVALID_PAYLOAD");
            assert_eq!(seen.len(), 2, "{seen:?}");
            assert_eq!(seen[0], first_seen);
        }
        for (pick, kept, unread) in [
            (Pick::Range(2, 6), vec![2, 3], (3, 4, 6)),
            (Pick::Last(5), vec![5, 6], (3, 2, 4)),
            (Pick::All, vec![1, 2], (4, 3, 6)),
        ] {
            let mut n = 0;
            let (read, left) = store
                .read_thoughts_checked(&s.id, &ThoughtQuery::main(pick), &mut |_| {
                    n += 1;
                    Ok(n <= 2)
                })
                .unwrap();
            assert_eq!(read.iter().map(|t| t.data.thought_number).collect::<Vec<_>>(), kept);
            let left = left.unwrap();
            assert_eq!((left.count, left.first, left.last), unread, "{pick:?}");
        }
    }
}
