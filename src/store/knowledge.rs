//! The knowledge garden tables: `knowledge_patterns` (+ tags) and
//! `scratchpad_notes`, each with an FTS5 index kept in sync by triggers.
//!
//! This file saves, reads, updates and deletes patterns (a learning saved
//! twice is kept once); notes are in `notes`, searching both by text in
//! `ranking`, `list_patterns` with its filters and pages in `listing`, and
//! the one-off rewrite of anti-patterns saved in an older wording in
//! `legacy`.

pub(super) mod legacy;
mod listing;
mod notes;
mod ranking;

use rusqlite::{OptionalExtension, Row, params};
use serde_json::json;

use super::{Store, Tx};
use crate::domain;
use crate::error::{Error, Result};
use crate::knowledge::{KnowledgePattern, NewPattern, PatternUpdate, slug_or_fallback, unique_slug};

const PATTERN_COLUMNS: &str = "p.id, p.title, p.description, p.tags, p.content, p.derived_from_sessions, p.created_by, p.created_at, p.updated_at";

/// A pattern or a note, as a resource listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct KnowledgeItem {
    /// A scratchpad note (else a pattern).
    pub note: bool,
    pub id: String,
    pub title: String,
    pub description: String,
    /// Its place in creation order (pages continue after it).
    pub seq: i64,
}

fn pattern_from_row(r: &Row<'_>) -> rusqlite::Result<KnowledgePattern> {
    let tags: String = r.get(3)?;
    let sessions: String = r.get(5)?;
    Ok(KnowledgePattern {
        id: r.get(0)?,
        title: r.get(1)?,
        description: r.get(2)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        content: r.get(4)?,
        derived_from_sessions: serde_json::from_str(&sessions).unwrap_or_default(),
        created_by: r.get(6)?,
        created_at: r.get(7)?,
        updated_at: r.get(8)?,
    })
}

fn no_pattern(id: &str) -> Error {
    Error::invalid_with(
        "id",
        format!("no knowledge pattern with id '{id}' (list_patterns shows the ids)"),
        json!({ "id": id }),
    )
}

fn to_json(v: &[String]) -> Result<String> {
    serde_json::to_string(v).map_err(|e| Error::Internal(e.to_string()))
}

/// Every id in `sessions` names an existing session.
fn check_sessions_exist(tx: &Tx<'_>, sessions: &[String]) -> Result<()> {
    for id in sessions {
        if !super::sessions::session_exists_tx(tx, id)? {
            return Err(Error::session_not_found(id.as_str()));
        }
    }
    Ok(())
}

fn get_pattern_tx(tx: &Tx<'_>, id: &str) -> Result<KnowledgePattern> {
    tx.prepare_cached(&format!(
        "SELECT {PATTERN_COLUMNS} FROM knowledge_patterns AS p WHERE p.id = ?1"
    ))?
    .query_row([id], pattern_from_row)
    .optional()?
    .ok_or_else(|| no_pattern(id))
}

fn insert_pattern_tx(tx: &Tx<'_>, new: &NewPattern, now: &str) -> Result<KnowledgePattern> {
    check_sessions_exist(tx, &new.derived_from_sessions)?;
    let base = slug_or_fallback("pattern", &new.title);
    let mut exists = tx.prepare_cached("SELECT EXISTS (SELECT 1 FROM knowledge_patterns WHERE id = ?1)")?;
    let id = unique_slug(&base, |c| Ok(exists.query_row([c], |r| r.get::<_, bool>(0))?))?;
    tx.prepare_cached(
        "INSERT INTO knowledge_patterns
             (id, title, description, tags, content, derived_from_sessions, created_by, created_at, updated_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?8)",
    )?
    .execute(params![
        id,
        new.title,
        new.description,
        to_json(&new.tags)?,
        new.content,
        to_json(&new.derived_from_sessions)?,
        new.created_by,
        now
    ])?;
    // (A trigger fills knowledge_pattern_tags from `tags`.)
    get_pattern_tx(tx, &id)
}

/// What [`Store::create_patterns_once`] did with a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Saved {
    Created,
    /// The same pattern was stored already; left as it is.
    Already,
}

impl Store {
    /// Create a pattern (already validated). Its id is the title's slug,
    /// with `-2`, `-3`... on collision.
    pub fn create_pattern(&self, new: NewPattern) -> Result<KnowledgePattern> {
        self.write(|tx| insert_pattern_tx(tx, &new, &domain::now()))
    }

    /// Create several patterns in one transaction, all or none, except
    /// those stored already: a pattern with the same title, description,
    /// content and author (what `extract_learnings` saves again when an
    /// agent repeats the call) is answered as it is ([`Saved::Already`]).
    /// Anti-patterns saved in an older wording were rewritten into the
    /// current one once, when the ledger was upgraded (migration V17 and
    /// [`legacy`]), so the same learning is the same text.
    pub fn create_patterns_once(&self, new: &[NewPattern]) -> Result<Vec<(KnowledgePattern, Saved)>> {
        self.write(|tx| {
            let now = domain::now();
            // `title = ?1 COLLATE NOCASE` lets the title index find the few
            // candidates; the exact comparisons then decide.
            let mut same = tx.prepare_cached(
                "SELECT id FROM knowledge_patterns
                 WHERE title = ?1 COLLATE NOCASE AND title = ?1 AND description = ?2 AND content = ?3
                   AND created_by IS ?4
                 ORDER BY created_at LIMIT 1",
            )?;
            let mut out = Vec::with_capacity(new.len());
            for n in new {
                let existing: Option<String> = same
                    .query_row(params![n.title, n.description, n.content, n.created_by], |r| r.get(0))
                    .optional()?;
                out.push(match existing {
                    Some(id) => (get_pattern_tx(tx, &id)?, Saved::Already),
                    None => (insert_pattern_tx(tx, n, &now)?, Saved::Created),
                });
            }
            Ok(out)
        })
    }

    /// `Ok` when the pattern exists, else the error [`Store::pattern`]
    /// gives, without reading its content.
    pub fn pattern_exists(&self, id: &str) -> Result<()> {
        self.read(|tx| {
            let found: bool = tx
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM knowledge_patterns WHERE id = ?1)")?
                .query_row([id], |r| r.get(0))?;
            if found { Ok(()) } else { Err(no_pattern(id)) }
        })
    }

    pub fn pattern(&self, id: &str) -> Result<KnowledgePattern> {
        self.read(|tx| get_pattern_tx(tx, id))
    }

    /// Change some fields of a pattern (already validated); its id stays.
    pub fn update_pattern(&self, id: &str, upd: PatternUpdate) -> Result<KnowledgePattern> {
        self.write(|tx| {
            let now = domain::now();
            let old = get_pattern_tx(tx, id)?;
            let mut sessions = upd.derived_from_sessions.clone();
            if let Some(one) = &upd.add_derived_session {
                let list = sessions.get_or_insert_with(|| old.derived_from_sessions.clone());
                if !list.contains(one) {
                    list.push(one.clone());
                }
            }
            if let Some(s) = &sessions {
                // Only the sessions added must exist: a session the pattern
                // was derived from may have been deleted since, and an agent
                // sends back the list get_pattern gave it.
                let added: Vec<String> = s
                    .iter()
                    .filter(|id| !old.derived_from_sessions.contains(id))
                    .cloned()
                    .collect();
                check_sessions_exist(tx, &added)?;
            }
            let tags = upd.tags.unwrap_or(old.tags);
            tx.prepare_cached(
                "UPDATE knowledge_patterns SET title = ?2, description = ?3, tags = ?4, content = ?5,
                     derived_from_sessions = ?6, created_by = ?7, updated_at = ?8
                 WHERE id = ?1",
            )?
            .execute(params![
                id,
                upd.title.unwrap_or(old.title),
                upd.description.unwrap_or(old.description),
                to_json(&tags)?,
                upd.content.unwrap_or(old.content),
                to_json(&sessions.unwrap_or(old.derived_from_sessions))?,
                upd.created_by.or(old.created_by),
                now
            ])?;
            get_pattern_tx(tx, id)
        })
    }

    pub fn delete_pattern(&self, id: &str) -> Result<KnowledgePattern> {
        self.write(|tx| {
            let old = get_pattern_tx(tx, id)?;
            tx.prepare_cached("DELETE FROM knowledge_patterns WHERE id = ?1")?
                .execute([id])?;
            Ok(old)
        })
    }

    /// One page of the knowledge garden's items for resource listings:
    /// patterns, then notes, each newest created first, without their
    /// content. `after` is where the previous page stopped (the last item's
    /// kind and seq); items created, changed or deleted between pages never
    /// shift the ones not listed yet. Answers up to `limit` items, and
    /// whether more follow.
    pub fn knowledge_items(&self, after: Option<(bool, i64)>, limit: u32) -> Result<(Vec<KnowledgeItem>, bool)> {
        // Each table read backwards along its primary key from where the
        // previous page stopped: a page costs its own rows, however many
        // there are before it.
        let want = limit as usize + 1;
        self.read(|tx| {
            let mut items = Vec::with_capacity(want);
            let read = |note: bool, below: i64, n: usize, items: &mut Vec<KnowledgeItem>| -> Result<()> {
                let sql = if note {
                    "SELECT id, title, '', seq FROM scratchpad_notes WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2"
                } else {
                    "SELECT id, title, description, seq FROM knowledge_patterns WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2"
                };
                let rows = tx
                    .prepare_cached(sql)?
                    .query_map(params![below, n as i64], |r| {
                        Ok(KnowledgeItem {
                            note,
                            id: r.get(0)?,
                            title: r.get(1)?,
                            description: r.get(2)?,
                            seq: r.get(3)?,
                        })
                    })?
                    .collect::<rusqlite::Result<Vec<_>>>()?;
                items.extend(rows);
                Ok(())
            };
            match after {
                Some((true, seq)) => read(true, seq, want, &mut items)?,
                _ => {
                    let below = after.map_or(i64::MAX, |(_, seq)| seq);
                    read(false, below, want, &mut items)?;
                    if items.len() < want {
                        read(true, i64::MAX, want - items.len(), &mut items)?;
                    }
                }
            }
            let more = items.len() > limit as usize;
            items.truncate(limit as usize);
            Ok((items, more))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::ranking::PATTERNS;
    use super::*;
    use crate::domain::NewSession;
    use crate::domain::{SortBy, SortOrder};
    use crate::knowledge::{KnowledgeHit, PatternFilter, PatternPage};
    use crate::store::test_support::temp_store;

    fn p(title: &str, tags: &[&str], content: &str) -> NewPattern {
        NewPattern {
            title: title.into(),
            description: format!("about {title}"),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            content: content.into(),
            ..Default::default()
        }
    }

    /// A learning saved again (same title, description, content and
    /// author) answers the stored one; one that differs in any of them is
    /// another pattern. (Older wordings were rewritten at the upgrade to
    /// schema 17: see `legacy`.)
    #[test]
    fn a_learning_saved_twice_is_kept_once() {
        let (_d, store) = temp_store();
        let learning = || NewPattern {
            description: "An anti-pattern extracted from session s (anti-patterns/x/db.md).".into(),
            created_by: Some("extract_learnings".into()),
            ..p(
                "DB reads dominate",
                &["learning"],
                "# Avoid: DB reads dominate\n\n## Lesson\n\nProfile first\n",
            )
        };
        let (first, saved) = store.create_patterns_once(&[learning()]).unwrap().remove(0);
        assert_eq!(saved, Saved::Created);
        let (again, saved) = store.create_patterns_once(&[learning()]).unwrap().remove(0);
        assert_eq!((again.id.as_str(), saved), (first.id.as_str(), Saved::Already));
        let others = [
            NewPattern {
                description: "A anti-pattern extracted from session s (anti-patterns/x/db.md).".into(),
                ..learning()
            },
            NewPattern {
                content: learning().content.replace("Profile", "Measure"),
                ..learning()
            },
            NewPattern {
                created_by: None,
                ..learning()
            },
        ];
        for other in others {
            let (made, saved) = store
                .create_patterns_once(std::slice::from_ref(&other))
                .unwrap()
                .remove(0);
            assert_eq!(saved, Saved::Created, "{other:?}");
            assert_ne!(made.id, first.id);
        }
    }

    #[test]
    fn patterns_crud_slugs_tags_and_search() {
        let (_d, store) = temp_store();
        let a = store
            .create_pattern(p(
                "Race conditions",
                &["debugging", "concurrency"],
                "Look for shared state.",
            ))
            .unwrap();
        assert_eq!(a.id, "race-conditions");
        let b = store
            .create_pattern(p("Race Conditions!", &["debugging"], "Add a lock around the counter."))
            .unwrap();
        assert_eq!(b.id, "race-conditions-2");
        store.create_pattern(p("Race conditions", &[], "third")).unwrap();
        assert!(store.pattern("race-conditions-3").is_ok());

        let f = PatternFilter {
            tags: vec!["debugging".into(), "concurrency".into()],
            ..Default::default()
        };
        let page = store.list_patterns(&f).unwrap();
        assert_eq!(page.total, 1);
        assert_eq!(page.patterns[0].pattern.id, "race-conditions");

        let hits = store
            .list_patterns(&PatternFilter {
                search: Some("lock counter".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(hits.total, 1);
        assert!(hits.patterns[0].snippet.as_deref().unwrap().contains("[lock]"));
        for q in ["\"", "*", "NEAR(", "a OR"] {
            store
                .list_patterns(&PatternFilter {
                    search: Some(q.into()),
                    ..Default::default()
                })
                .unwrap();
            store.search_patterns(q, 5).unwrap();
        }

        let up = store
            .update_pattern(
                "race-conditions",
                PatternUpdate {
                    title: Some("Data races".into()),
                    tags: Some(vec!["threads".into()]),
                    ..Default::default()
                },
            )
            .unwrap();
        assert_eq!(up.id, "race-conditions");
        assert_eq!(up.title, "Data races");
        assert_eq!(up.content, "Look for shared state.");
        assert_eq!(store.pattern_tags().unwrap()[0].name, "debugging");
        assert_eq!(
            store.search_patterns("data races", 5).unwrap().hits[0].id,
            "race-conditions"
        );

        store.delete_pattern("race-conditions").unwrap();
        assert_eq!(store.pattern("race-conditions").unwrap_err().code(), "INVALID_PAYLOAD");
        assert!(store.search_patterns("shared", 5).unwrap().hits.is_empty());
        let conn = store.conn().unwrap();
        conn.execute(
            "INSERT INTO knowledge_patterns_fts (knowledge_patterns_fts) VALUES ('integrity-check')",
            [],
        )
        .unwrap();
    }

    /// A Chinese or Japanese word inside a run of such letters (one token to
    /// the index) is found in the garden too.
    #[test]
    fn words_inside_runs_of_unspaced_letters_are_found() {
        let (_d, store) = temp_store();
        store
            .create_pattern(p("数据库设计", &["架构"], "我们讨论数据库设计和缓存失效"))
            .unwrap();
        store
            .create_pattern(p("Cache notes", &[], "缓存 cache invalidation"))
            .unwrap();
        store.write_note("会议", "今日のデータベース会議: cache").unwrap();
        let titles = |hits: Vec<KnowledgeHit>| hits.into_iter().map(|h| h.title).collect::<Vec<_>>();
        assert_eq!(titles(store.search_patterns("数据库", 5).unwrap().hits), ["数据库设计"]);
        // Every word must be there: one found by its text, one by the index.
        assert_eq!(
            titles(store.search_patterns("缓存 cache", 5).unwrap().hits),
            ["Cache notes"]
        );
        assert!(store.search_patterns("数据库 cache", 5).unwrap().hits.is_empty());
        // Tags are searched too.
        assert_eq!(titles(store.search_patterns("架构", 5).unwrap().hits), ["数据库设计"]);
        // Found by text: one more read than the limit tells what was left.
        let one = store.search_patterns("数据库", 1).unwrap();
        assert_eq!((one.hits.len(), one.more, one.ranked_newest), (1, false, None));
        let first = store.search_patterns("缓存", 1).unwrap();
        assert_eq!((first.hits.len(), first.more, first.ranked_newest), (1, true, None));
        // Ranked as the index's words are (not newest first with score 0):
        // the pattern holding it most comes first, though the other is newer;
        // list_patterns scores them alike.
        store
            .create_pattern(p("数据库设计模式", &[], "数据库 数据库 数据库 设计"))
            .unwrap();
        store
            .create_pattern(p("other", &[], &format!("{} 数据库", "很长的文本 ".repeat(50))))
            .unwrap();
        let found = store.search_patterns("数据库", 10).unwrap().hits;
        let ranked: Vec<(&str, f64)> = found.iter().map(|h| (h.title.as_str(), h.score)).collect();
        assert_eq!(ranked[0].0, "数据库设计模式", "{ranked:?}");
        assert!(ranked.iter().all(|(_, s)| *s > 0.0), "{ranked:?}");
        assert!(ranked.windows(2).all(|w| w[0].1 >= w[1].1), "{ranked:?}");
        let listed = store
            .list_patterns(&PatternFilter {
                search: Some("数据库".into()),
                ..Default::default()
            })
            .unwrap();
        let listed: Vec<(&str, f64)> = listed
            .patterns
            .iter()
            .map(|i| (i.pattern.title.as_str(), i.score.unwrap_or_default()))
            .collect();
        assert_eq!(listed, ranked);
        let listed = store
            .list_patterns(&PatternFilter {
                search: Some("缓存".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(listed.total, 2);
        assert!(listed.patterns.iter().all(|p| p.score.is_some() && p.snippet.is_some()));
        let notes = store.search_notes("データベース", 5).unwrap().hits;
        assert_eq!(notes.len(), 1);
        assert!(notes[0].snippet.contains("データベース"), "{}", notes[0].snippet);
        assert_eq!(store.search_notes("データベース cache", 5).unwrap().hits.len(), 1);
        assert!(store.search_notes("数据库", 5).unwrap().hits.is_empty());
    }

    #[test]
    fn derived_sessions_must_exist_and_failures_change_nothing() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("s")).unwrap();
        let mut new = p("From a session", &[], "c");
        new.derived_from_sessions = vec![s.id.clone()];
        assert_eq!(store.create_pattern(new.clone()).unwrap().derived_from_sessions, [s.id]);
        new.derived_from_sessions = vec!["nope".into()];
        new.title = "Other".into();
        assert_eq!(store.create_pattern(new).unwrap_err().code(), "SESSION_NOT_FOUND");
        assert_eq!(store.list_patterns(&PatternFilter::default()).unwrap().total, 1);
    }

    /// A session a pattern was derived from may be deleted later: the
    /// pattern keeps naming it, and an update that sends the list back with
    /// a session added goes through; a new unknown session is still refused.
    #[test]
    fn an_update_keeps_a_deleted_source_session() {
        let (_d, store) = temp_store();
        let gone = store.create_session(NewSession::titled("gone")).unwrap();
        let kept = store.create_session(NewSession::titled("kept")).unwrap();
        let mut new = p("From a session", &[], "c");
        new.derived_from_sessions = vec![gone.id.clone()];
        let id = store.create_pattern(new).unwrap().id;
        store.delete_session(&gone.id).unwrap();
        assert_eq!(
            store.pattern(&id).unwrap().derived_from_sessions,
            std::slice::from_ref(&gone.id)
        );
        let update = |sessions: Vec<String>| PatternUpdate {
            derived_from_sessions: Some(sessions),
            ..Default::default()
        };
        let updated = store
            .update_pattern(&id, update(vec![gone.id.clone(), kept.id.clone()]))
            .unwrap();
        assert_eq!(updated.derived_from_sessions, [gone.id.clone(), kept.id.clone()]);
        let err = store
            .update_pattern(&id, update(vec![gone.id.clone(), "nope".into()]))
            .unwrap_err();
        assert_eq!(err.code(), "SESSION_NOT_FOUND");
        // One session added keeps the ones the pattern has, once each.
        let add = |one: &str| PatternUpdate {
            add_derived_session: Some(one.to_string()),
            ..Default::default()
        };
        let added = store.update_pattern(&id, add(&kept.id)).unwrap();
        assert_eq!(added.derived_from_sessions, [gone.id.clone(), kept.id.clone()]);
        let err = store.update_pattern(&id, add(&gone.id)).unwrap();
        assert_eq!(err.derived_from_sessions, [gone.id.clone(), kept.id.clone()]);
        assert_eq!(
            store.update_pattern(&id, add("nope")).unwrap_err().code(),
            "SESSION_NOT_FOUND"
        );
        let replaced = PatternUpdate {
            derived_from_sessions: Some(vec![kept.id.clone()]),
            add_derived_session: Some(gone.id.clone()),
            ..Default::default()
        };
        let both = store.update_pattern(&id, replaced).unwrap();
        assert_eq!(both.derived_from_sessions, [kept.id.clone(), gone.id.clone()]);
    }

    /// Patterns, notes and thoughts of a megabyte repeating the searched
    /// word: every search answers with a short snippet (FTS5's snippet()
    /// took minutes here, its cost growing with the square of the matches).
    #[test]
    fn searching_text_that_repeats_the_word_everywhere() {
        use crate::domain::ThoughtInput;
        use crate::store::Target;
        let (_d, store) = temp_store();
        let text = "word ".repeat(200_000);
        for i in 0..3 {
            store.create_pattern(p(&format!("Repeats {i}"), &[], &text)).unwrap();
            store.write_note(&format!("repeats {i}"), &text).unwrap();
        }
        let s = store.create_session(NewSession::titled("repeats")).unwrap();
        store
            .append_thought(Target::Session(s.id), ThoughtInput::text(text.clone()))
            .unwrap();
        let listed = store
            .list_patterns(&PatternFilter {
                search: Some("word".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(listed.total, 3);
        let mut snippets: Vec<String> = listed.patterns.into_iter().filter_map(|p| p.snippet).collect();
        snippets.extend(
            store
                .search_patterns("word", 5)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| h.snippet),
        );
        snippets.extend(
            store
                .search_notes("word", 5)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| h.snippet),
        );
        snippets.extend(store.search_thoughts("word", 5).unwrap().into_iter().map(|h| h.snippet));
        assert_eq!(snippets.len(), 3 + 3 + 3 + 1);
        for s in snippets {
            assert!(s.starts_with("[word]") && s.len() < 200, "{s}");
        }
    }

    /// With more matches than the bound, the newest are ranked and the
    /// rest follow newest first: pages, tags and sorts see every match
    /// once, each with one score whichever way it is listed, and `total`
    /// counts them all.
    #[test]
    fn matches_past_the_ranking_bound_are_paged_newest_first_with_their_scores() {
        let (_d, store) = temp_store();
        // Seq order is creation order: pattern 7 is the newest. "ledger" is
        // in all eight, more often in some; odd ones are tagged "odd", and
        // 1, 2 and 6 hold "缓存" (found by its text).
        for i in 0..8 {
            let tags: &[&str] = if i % 2 == 1 { &["odd", "all"] } else { &["all"] };
            let extra = if [1, 2, 6].contains(&i) { " 缓存" } else { "" };
            let content = format!("{} of the pattern body{extra}", "ledger ".repeat(1 + (i * 3) % 5));
            store.create_pattern(p(&format!("P{i}"), tags, &content)).unwrap();
        }
        const BOUND: usize = 3;
        let list = |search: &str, tags: &[&str], limit: u32, offset: u32, sort_by: Option<SortBy>| {
            store
                .list_patterns_ranking(
                    &PatternFilter {
                        search: Some(search.into()),
                        tags: tags.iter().map(|t| t.to_string()).collect(),
                        limit,
                        offset,
                        sort_by,
                        ..Default::default()
                    },
                    BOUND,
                )
                .unwrap()
        };
        let scored = |page: &PatternPage| -> Vec<(String, f64)> {
            page.patterns
                .iter()
                .map(|p| (p.pattern.title.clone(), p.score.unwrap()))
                .collect()
        };
        let all = list("ledger", &[], 100, 0, None);
        assert_eq!((all.total, all.count, all.has_more), (8, 8, false));
        let listed = scored(&all);
        // The three newest, best first; then the others, newest first.
        let mut ranked: Vec<(String, f64)> = listed[..BOUND].to_vec();
        let mut titles: Vec<&str> = ranked.iter().map(|(t, _)| t.as_str()).collect();
        titles.sort();
        assert_eq!(titles, ["P5", "P6", "P7"]);
        assert!(ranked.windows(2).all(|w| w[0].1 >= w[1].1), "{ranked:?}");
        let older: Vec<&str> = listed[BOUND..].iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(older, ["P4", "P3", "P2", "P1", "P0"]);
        assert!(listed.iter().all(|(_, s)| *s > 0.0), "{listed:?}");
        // `search` answers the ranked ones, with the same scores.
        let searched = || -> Vec<(String, f64)> {
            store
                .search_knowledge(&PATTERNS, "ledger", 10, BOUND)
                .unwrap()
                .hits
                .into_iter()
                .map(|h| (h.title, h.score))
                .collect()
        };
        assert_eq!(searched(), ranked);
        // It says so: more matched than it ranked, the newest BOUND.
        let told = store.search_knowledge(&PATTERNS, "ledger", 10, BOUND).unwrap();
        assert_eq!((told.more, told.ranked_newest), (true, Some(BOUND)));
        // Every match ranked: whether more matched than the limit.
        let all_ranked = store.search_knowledge(&PATTERNS, "ledger", 8, 100).unwrap();
        assert_eq!(
            (all_ranked.hits.len(), all_ranked.more, all_ranked.ranked_newest),
            (8, false, None)
        );
        let short = store.search_knowledge(&PATTERNS, "ledger", 7, 100).unwrap();
        assert_eq!((short.hits.len(), short.more, short.ranked_newest), (7, true, None));
        // One to a page, across the bound: the same patterns, the same scores.
        for (i, one) in listed.iter().enumerate() {
            let page = list("ledger", &[], 1, i as u32, None);
            assert_eq!(scored(&page), std::slice::from_ref(one), "page {i}");
            assert_eq!((page.total, page.has_more), (8, i + 1 < 8), "page {i}");
        }
        let page = list("ledger", &[], 2, 2, None);
        assert_eq!(scored(&page), listed[2..4]);
        // A tag filters that order: none moves, no score changes.
        let odd = list("ledger", &["odd"], 100, 0, None);
        let expected: Vec<(String, f64)> = listed
            .iter()
            .filter(|(t, _)| t[1..].parse::<u32>().unwrap() % 2 == 1)
            .cloned()
            .collect();
        assert_eq!(scored(&odd), expected);
        assert_eq!(odd.total, 4);
        let both = list("ledger", &["odd", "all", "odd"], 1, 3, None);
        assert_eq!(scored(&both), expected[3..]);
        assert_eq!((both.total, both.has_more), (4, false));
        assert_eq!(list("ledger", &["none"], 100, 0, None).total, 0);
        // Sorted by title: every match, each with its score.
        let by_title = list("ledger", &[], 100, 0, Some(SortBy::Title));
        let mut expected = listed.clone();
        expected.sort_by(|a, b| b.0.cmp(&a.0));
        assert_eq!(scored(&by_title), expected);
        // (Descending: P7, then P5 and P3 on the page, P1.)
        let page = list("ledger", &["odd"], 2, 1, Some(SortBy::Title));
        let odd_titles: Vec<(String, f64)> = expected.into_iter().filter(|(t, _)| t == "P5" || t == "P3").collect();
        assert_eq!(scored(&page), odd_titles);
        assert_eq!(page.total, 4);
        // A word found by its text, with one for the index, ranking one:
        // P6 (the newest match holding both), then P2 and P1.
        let filter = PatternFilter {
            search: Some("缓存 ledger".into()),
            ..Default::default()
        };
        let mixed = store.list_patterns_ranking(&filter, 1).unwrap();
        let titles: Vec<&str> = mixed.patterns.iter().map(|p| p.pattern.title.as_str()).collect();
        assert_eq!(titles, ["P6", "P2", "P1"]);
        assert_eq!(mixed.total, 3);
        // Few enough matches to sort as they are (up to the bound), and the
        // same page walked along the index (past it): the same patterns,
        // each with its score under that bound.
        let sorted = |bound: usize| {
            let sort = PatternFilter {
                sort_by: Some(SortBy::Title),
                sort_order: SortOrder::Asc,
                limit: 2,
                offset: 1,
                ..filter.clone()
            };
            let scores = scored(&store.list_patterns_ranking(&filter, bound).unwrap());
            let page = store.list_patterns_ranking(&sort, bound).unwrap();
            let expected: Vec<(String, f64)> = ["P2", "P6"]
                .iter()
                .map(|t| scores.iter().find(|(title, _)| title == t).unwrap().clone())
                .collect();
            assert_eq!(scored(&page), expected, "bound {bound}");
            assert_eq!((page.total, page.has_more), (3, false), "bound {bound}");
        };
        sorted(3);
        sorted(1);
        // A pattern written now is among the ranked ones at once.
        store
            .create_pattern(p("P8", &[], "ledger ledger ledger ledger ledger"))
            .unwrap();
        ranked = searched();
        assert!(ranked.iter().any(|(t, _)| t == "P8"), "{ranked:?}");
        assert_eq!(list("ledger", &[], 100, 0, None).total, 9);
    }

    /// A word every note holds: FTS5's bm25 gave the notes ~1e-6 beside
    /// patterns at ~1; scored as thoughts are, they compare.
    #[test]
    fn notes_and_patterns_are_scored_alike() {
        let (_d, store) = temp_store();
        store
            .write_note("tenant notes", "tenant tenant isolation for tenant keys")
            .unwrap();
        store.write_note("other tenant", "one tenant per bucket").unwrap();
        for i in 0..4 {
            let content = if i == 0 {
                "tenant keys are prefixed"
            } else {
                "unrelated"
            };
            store.create_pattern(p(&format!("pattern {i}"), &[], content)).unwrap();
        }
        let notes = store.search_notes("tenant", 10).unwrap().hits;
        let patterns = store.search_patterns("tenant", 10).unwrap().hits;
        assert_eq!((notes.len(), patterns.len()), (2, 1));
        assert!(notes.iter().all(|n| n.score > 0.01), "{notes:?}");
        assert!(notes[0].score >= notes[1].score);
        // The note saying it most ranks first, its snippet from its content.
        assert_eq!(notes[0].title, "tenant notes");
        assert!(notes[0].snippet.contains("isolation"), "{}", notes[0].snippet);
    }
}
