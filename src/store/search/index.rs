//! Keeping the full-text index up to date off the append path: thoughts
//! newer than the `thoughts_fts_state` watermark are copied into the index
//! in batches bounded by rows and by text, by the server after its writes
//! and by every search before it reads.

use std::time::Duration;

use rusqlite::params;

use super::SEARCH_INDEX_WAIT;
use crate::error::Result;
use crate::store::Store;

/// Pending thoughts a search reads itself, newest first (normally none: the
/// server indexes right after its writes). A store opened only to read,
/// which never indexes, reads them all.
pub(super) const PENDING_SCAN: i64 = 10_000;

/// The most text one indexing batch takes (unless its first thought alone
/// is longer): about 3 ms of tokenizing here, so that an append waiting
/// behind a batch waits about that long, however long the thoughts are
/// (128 thoughts of 100 KB held one up for 150 ms).
pub(super) const INDEX_BATCH_BYTES: i64 = 256 << 10;

impl Store {
    /// Index up to `max_rows` thoughts not yet in the full-text index.
    /// Returns how many were indexed.
    pub fn index_pending(&self, max_rows: i64) -> Result<usize> {
        self.index_batch(max_rows, None)
    }

    /// [`Store::index_pending`] for a search about to run: it waits at most
    /// [`SEARCH_INDEX_WAIT`] for another program's write transaction (a
    /// `sqlite3` shell inside `BEGIN IMMEDIATE`). `None` when it cannot
    /// index now: that lock is held, or writes are refused because the
    /// ledger's files changed under the server (logged once, when seen).
    /// The search then reads the thoughts still pending itself.
    pub fn index_pending_for_search(&self, max_rows: i64) -> Result<Option<usize>> {
        if !self.may_write() {
            return Ok(None);
        }
        match self.index_batch(max_rows, Some(SEARCH_INDEX_WAIT)) {
            Ok(n) => Ok(Some(n)),
            Err(e) if e.is_busy() => {
                tracing::debug!("another connection holds the write lock; pending thoughts are searched directly");
                Ok(None)
            }
            Err(crate::error::Error::FilesChanged { .. }) => Ok(None),
            // A full disk or a file system gone read-only: the search reads
            // the pending thoughts itself, as a read-only store does.
            Err(e) if e.is_file_system_refusal() => {
                tracing::warn!("indexing before a search failed ({e}); pending thoughts are searched directly");
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Index what is pending before a search, as far as another program's
    /// write lock allows (see [`Store::index_pending_for_search`]). A store
    /// opened only to read ([`crate::store::Access::Read`]) writes nothing: its
    /// searches read the pending thoughts themselves.
    pub fn index_before_search(&self) -> Result<()> {
        if !self.may_write() {
            return Ok(());
        }
        loop {
            match self.index_pending_for_search(2000)? {
                Some(0) | None => return Ok(()),
                Some(_) => {}
            }
        }
    }

    pub(super) fn index_batch(&self, max_rows: i64, wait: Option<Duration>) -> Result<usize> {
        let pending = self.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT (SELECT indexed_through FROM thoughts_fts_state WHERE id = 1) < COALESCE((SELECT MAX(id) FROM thoughts), 0)",
                )?
                .query_row([], |r| r.get::<_, bool>(0))?)
        })?;
        if !pending {
            return Ok(0);
        }
        let batch = |tx: &crate::store::Tx<'_>| -> Result<usize> {
            let from: i64 = tx.query_row("SELECT indexed_through FROM thoughts_fts_state WHERE id = 1", [], |r| {
                r.get(0)
            })?;
            // Up to max_rows thoughts, and up to INDEX_BATCH_BYTES of text
            // (at least one thought): the writer thread runs a batch
            // between two appends, which wait for it. octet_length reads a
            // value's size without its text.
            let mut through = None;
            let mut bytes = 0;
            let mut sizes =
                tx.prepare_cached("SELECT id, octet_length(thought) FROM thoughts WHERE id > ?1 ORDER BY id LIMIT ?2")?;
            let mut rows = sizes.query(params![from, max_rows])?;
            while let Some(row) = rows.next()? {
                bytes += row.get::<_, Option<i64>>(1)?.unwrap_or(0);
                if through.is_some() && bytes > INDEX_BATCH_BYTES {
                    break;
                }
                through = Some(row.get::<_, i64>(0)?);
            }
            drop(rows);
            let Some(through) = through else { return Ok(0) };
            let n = tx
                .prepare_cached(
                    "INSERT INTO thoughts_fts (rowid, thought) SELECT id, thought FROM thoughts WHERE id > ?1 AND id <= ?2",
                )?
                .execute(params![from, through])?;
            tx.execute(
                "UPDATE thoughts_fts_state SET indexed_through = ?1 WHERE id = 1",
                [through],
            )?;
            Ok(n)
        };
        match wait {
            Some(wait) => self.write_within(wait, batch),
            None => self.write(batch),
        }
    }

    /// Index everything pending, in batches.
    pub fn index_all_pending(&self) -> Result<usize> {
        let mut total = 0;
        loop {
            let n = self.index_pending(2000)?;
            total += n;
            if n == 0 {
                return Ok(total);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::domain::{NewSession, ThoughtInput};
    use crate::store::test_support::temp_store;

    /// A batch stops at INDEX_BATCH_BYTES of text, so that long thoughts
    /// do not hold the writer thread (and the appends behind it) for long;
    /// a thought longer than that alone is still one batch.
    #[test]
    fn an_indexing_batch_is_bounded_by_text_as_well_as_rows() {
        use crate::store::Target;
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("long thoughts")).unwrap();
        let append = |len: usize, word: &str| {
            let input = ThoughtInput::text(format!("{word} {}", "x".repeat(len)));
            store.append_thought(Target::Session(s.id.clone()), input).unwrap();
        };
        append(300 << 10, "huge");
        for _ in 0..5 {
            append(100 << 10, "long");
        }
        append(10, "short");
        // 300 KiB alone, then 100 + 100 KiB (a third would pass 256 KiB),
        // twice, then the rest.
        let batches: Vec<usize> = std::iter::from_fn(|| Some(store.index_pending(128).unwrap()))
            .take_while(|&n| n > 0)
            .collect();
        assert_eq!(batches, [1, 2, 2, 2]);
        assert_eq!(store.search_thoughts("short", 10).unwrap().len(), 1);
        assert_eq!(store.search_thoughts("long", 10).unwrap().len(), 5);
    }
}
