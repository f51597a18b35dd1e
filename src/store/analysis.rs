//! What the analyses need beyond the thoughts themselves: which thoughts
//! asked for a critique (the `critique_requested` column).

use super::Store;
use crate::domain::{Session, Thought};
use crate::error::Result;

impl Store {
    /// A session, all its thoughts and its number of critique requests: the
    /// input of every analysis, read in one transaction so that the three
    /// agree while other connections write.
    pub fn analysis_input(&self, session_id: &str) -> Result<(Session, Vec<Thought>, u64)> {
        let granularity = self.granularity();
        self.read(|tx| {
            let (session, thoughts) = super::thoughts::session_thoughts_tx(tx, session_id, granularity)?;
            let requests = critique_requests_tx(tx, session_id)?;
            Ok((session, thoughts, requests))
        })
    }
}

/// Thoughts of a session recorded with `critique: true`, answered or not.
fn critique_requests_tx(tx: &rusqlite::Connection, session_id: &str) -> Result<u64> {
    let n: i64 = tx
        .prepare_cached(
            "SELECT count(*) FROM thoughts
             WHERE session_id = ?1 AND (critique_requested = 1 OR critique IS NOT NULL)",
        )?
        .query_row([session_id], |r| r.get(0))?;
    Ok(n.max(0) as u64)
}
