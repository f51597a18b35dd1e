//! Scratchpad notes: one note per topic (its slug is the note's id, a long
//! topic's hashed so that two never share one), written over by topic,
//! read, listed newest first, deleted and searched as patterns are.

use rusqlite::{OptionalExtension, Row, params};
use serde_json::json;

use super::ranking::{NOTES, RANKED_MATCHES};
use crate::domain;
use crate::error::{Error, Result};
use crate::knowledge::{KnowledgeHits, NoteRef, ScratchpadNote, fallback_slug, full_slug, hashed_slug, slugify};
use crate::store::{Store, Tx};

pub(super) const NOTE_COLUMNS: &str = "n.id, n.title, n.content, n.created_at, n.updated_at";

pub(super) fn note_from_row(r: &Row<'_>) -> rusqlite::Result<ScratchpadNote> {
    Ok(ScratchpadNote {
        id: r.get(0)?,
        title: r.get(1)?,
        content: r.get(2)?,
        created_at: r.get(3)?,
        updated_at: r.get(4)?,
    })
}

/// No note where `note` points (`id` is where it resolved to): refused
/// on the parameter the caller gave.
pub(super) fn no_note(note: &NoteRef, id: &str) -> Error {
    match note {
        NoteRef::Id(_) => Error::invalid_with(
            "id",
            format!("no scratchpad note with id '{id}' (list_scratchpad shows the ids)"),
            json!({ "id": id }),
        ),
        NoteRef::Topic(topic) => Error::invalid_with(
            "topic",
            format!("no scratchpad note with topic '{topic}' (list_scratchpad shows the topics)"),
            json!({ "topic": topic, "id": id }),
        ),
    }
}

/// The id of the note `topic` names: its slug, cut to [`MAX_SLUG`](crate::knowledge::MAX_SLUG). Two
/// topics can share that id: a long one cut to the other's whole slug, or
/// two long ones that differ only past the cut. The id belongs to the
/// first topic written there (so notes written before stay where they
/// are); any other topic gets its own id, cut and ended with a hash of its
/// whole slug ([`hashed_slug`]).
pub(super) fn note_id_tx(tx: &Tx<'_>, topic: &str) -> Result<String> {
    let full = full_slug(topic);
    if full.is_empty() {
        return Ok(fallback_slug("note", topic));
    }
    let plain = slugify(topic);
    let holder = get_note_tx(tx, &plain)?;
    if holder.as_ref().is_some_and(|n| full_slug(&n.title) == full) {
        return Ok(plain);
    }
    let hashed = hashed_slug(&full);
    if holder.is_none() && get_note_tx(tx, &hashed)?.is_none() {
        return Ok(plain);
    }
    Ok(hashed)
}

pub(super) fn resolve_note(tx: &Tx<'_>, note: &NoteRef) -> Result<String> {
    match note {
        NoteRef::Id(id) => Ok(id.clone()),
        NoteRef::Topic(topic) => note_id_tx(tx, topic),
    }
}

pub(super) fn get_note_tx(tx: &Tx<'_>, id: &str) -> Result<Option<ScratchpadNote>> {
    Ok(tx
        .prepare_cached(&format!(
            "SELECT {NOTE_COLUMNS} FROM scratchpad_notes AS n WHERE n.id = ?1"
        ))?
        .query_row([id], note_from_row)
        .optional()?)
}

impl Store {
    /// Create or overwrite the note of a topic (already validated). Returns
    /// the note and whether it was created. An overwrite keeps the title:
    /// another spelling of the topic (`build-ideas` for `Build ideas`)
    /// names the same note, and is no rename.
    pub fn write_note(&self, topic: &str, content: &str) -> Result<(ScratchpadNote, bool)> {
        self.write(|tx| {
            let now = domain::now();
            let id = note_id_tx(tx, topic)?;
            let created = get_note_tx(tx, &id)?.is_none();
            tx.prepare_cached(
                "INSERT INTO scratchpad_notes (id, title, content, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)
                 ON CONFLICT (id) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
            )?
            .execute(params![id, topic, content, now])?;
            let note = get_note_tx(tx, &id)?.ok_or_else(|| Error::Internal("note vanished".into()))?;
            Ok((note, created))
        })
    }

    /// `Ok` when the note exists, else the error [`Store::note`] gives,
    /// without reading its content.
    pub fn note_exists(&self, note: &NoteRef) -> Result<()> {
        self.read(|tx| {
            let id = resolve_note(tx, note)?;
            let found: bool = tx
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM scratchpad_notes WHERE id = ?1)")?
                .query_row([&id], |r| r.get(0))?;
            if found { Ok(()) } else { Err(no_note(note, &id)) }
        })
    }

    pub fn note(&self, note: &NoteRef) -> Result<ScratchpadNote> {
        self.read(|tx| {
            let id = resolve_note(tx, note)?;
            get_note_tx(tx, &id)?.ok_or_else(|| no_note(note, &id))
        })
    }

    pub fn delete_note(&self, note: &NoteRef) -> Result<ScratchpadNote> {
        self.write(|tx| {
            let id = resolve_note(tx, note)?;
            let old = get_note_tx(tx, &id)?.ok_or_else(|| no_note(note, &id))?;
            tx.prepare_cached("DELETE FROM scratchpad_notes WHERE id = ?1")?
                .execute([&id])?;
            Ok(old)
        })
    }

    /// Notes, most recently updated first, and their total number.
    pub fn list_notes(&self, limit: u32, offset: u32) -> Result<(Vec<ScratchpadNote>, u64)> {
        self.read(|tx| {
            let notes = tx
                .prepare_cached(&format!(
                    "SELECT {NOTE_COLUMNS} FROM scratchpad_notes AS n ORDER BY n.updated_at DESC, n.seq DESC
                     LIMIT ?1 OFFSET ?2"
                ))?
                .query_map([limit, offset], note_from_row)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let total: i64 = tx.query_row("SELECT count(*) FROM scratchpad_notes", [], |r| r.get(0))?;
            Ok((notes, total.max(0) as u64))
        })
    }

    /// Notes matching all words of `text`, best first, with snippets.
    pub fn search_notes(&self, text: &str, limit: u32) -> Result<KnowledgeHits> {
        self.search_knowledge(&NOTES, text, limit, RANKED_MATCHES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::MAX_SLUG;
    use crate::store::test_support::temp_store;

    #[test]
    fn notes_overwrite_by_topic() {
        let (_d, store) = temp_store();
        let (n, created) = store.write_note("API Design Ideas", "v1").unwrap();
        assert!(created);
        assert_eq!(n.id, "api-design-ideas");
        let (m, created) = store.write_note("api design ideas", "v2 with pagination").unwrap();
        assert!(!created);
        assert_eq!(m.created_at, n.created_at);
        assert_eq!(m.content, "v2 with pagination");
        // Another spelling of the topic is the same note, not a rename.
        assert_eq!(m.title, "API Design Ideas");
        assert_eq!(store.list_notes(10, 0).unwrap().1, 1);
        assert_eq!(
            store.search_notes("pagination", 5).unwrap().hits[0].id,
            "api-design-ideas"
        );
        assert!(store.search_notes("v1", 5).unwrap().hits.is_empty());
        let id = |s: &str| NoteRef::Id(s.into());
        store.delete_note(&id("api-design-ideas")).unwrap();
        assert_eq!(
            store.note(&id("api-design-ideas")).unwrap_err().code(),
            "INVALID_PAYLOAD"
        );
    }

    #[test]
    fn long_topics_that_differ_past_the_cut_get_their_own_notes() {
        let (_d, store) = temp_store();
        let topic = |part: u32| {
            format!("Meeting notes for the quarterly planning review of the infrastructure team - part {part}")
        };
        let (one, created) = store.write_note(&topic(1), "decisions").unwrap();
        assert!(created);
        // The first keeps the cut id notes of long topics always had.
        assert_eq!(one.id, slugify(&topic(1)));
        let (two, created) = store.write_note(&topic(2), "staffing").unwrap();
        assert!(created, "a different topic is a different note");
        assert_ne!(two.id, one.id);
        assert!(two.id.len() <= MAX_SLUG);
        let read = |part: u32| store.note(&NoteRef::Topic(topic(part))).unwrap();
        assert_eq!(read(1).content, "decisions");
        assert_eq!(read(2).content, "staffing");
        // Writing again by topic updates the same notes.
        let (again, created) = store.write_note(&topic(2), "staffing v2").unwrap();
        assert!(!created);
        assert_eq!(again.id, two.id);
        // With part 1 gone, part 2 still finds its own note, not a new one.
        store.delete_note(&NoteRef::Topic(topic(1))).unwrap();
        let (again, created) = store.write_note(&topic(2), "staffing v3").unwrap();
        assert!(!created);
        assert_eq!(again.id, two.id);
        assert_eq!(store.list_notes(10, 0).unwrap().1, 1);
    }

    #[test]
    fn a_short_topic_never_takes_over_a_long_topics_note() {
        let (_d, store) = temp_store();
        // A 64-character slug, and a longer topic that starts with it.
        let short = "Design notes for the billing service migration to the new ledger";
        assert_eq!(slugify(short).len(), MAX_SLUG);
        let long = format!("{short} - part 2");
        let read = |t: &str| store.note(&NoteRef::Topic(t.into())).unwrap().content;
        let (l, created) = store.write_note(&long, "long first").unwrap();
        assert!(created);
        let (s, created) = store.write_note(short, "short second").unwrap();
        assert!(created, "a different topic is a different note");
        assert_ne!(s.id, l.id);
        assert_eq!(read(&long), "long first");
        assert_eq!(read(short), "short second");
        // And the other way round, in a fresh ledger.
        let (_d2, store) = temp_store();
        let read = |t: &str| store.note(&NoteRef::Topic(t.into())).unwrap().content;
        store.write_note(short, "short first").unwrap();
        store.write_note(&long, "long second").unwrap();
        assert_eq!(read(short), "short first");
        assert_eq!(read(&long), "long second");
        assert_eq!(store.list_notes(10, 0).unwrap().1, 2);
    }
}
