//! The `sessions` and `session_tags` tables.

use rusqlite::{OptionalExtension, Row, ToSql};

use super::search::{QueryPlan, SESSION_TEXT};
use super::tag_filter::TagTable;
use super::{Store, Tx};
use crate::domain::{self, Granularity, NewSession, Session, SessionFilter, SessionStatus, SortBy, SortOrder, Stage};
use crate::error::{Error, Result};

/// Where sessions keep their tags, for filtering by them.
const SESSION_TAGS: TagTable = TagTable {
    table: "session_tags",
    owner: "session_id",
    id: "s.id",
    rows: "sessions",
    seq: "seq",
};

pub(crate) const SESSION_COLUMNS: &str = "id, title, description, tags, thought_count, branch_count, created_at, updated_at, last_accessed_at, completed_at, domain";

pub(crate) fn session_from_row(row: &Row<'_>, granularity: Granularity) -> rusqlite::Result<Session> {
    let tags: String = row.get(3)?;
    let created_at: String = row.get(6)?;
    Ok(Session {
        id: row.get(0)?,
        title: row.get(1)?,
        description: row.get(2)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        thought_count: row.get::<_, i64>(4)?.max(0) as u64,
        branch_count: row.get::<_, i64>(5)?.max(0) as u64,
        partition_path: domain::partition_path(granularity, &created_at),
        created_at,
        updated_at: row.get(7)?,
        last_accessed_at: row.get(8)?,
        completed_at: row.get(9)?,
        domain: row.get(10)?,
    })
}

/// One page of sessions (the answer to `session list`).
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionPage {
    pub sessions: Vec<Session>,
    pub count: usize,
    pub total: u64,
    pub has_more: bool,
}

/// The sessions [`Store::sessions_meant`] found, `(id, title)`, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionsMeant {
    /// Their ids start with the text given.
    ByIdStart(Vec<(String, String)>),
    /// Their title is the text given, letter case aside.
    ByTitle(Vec<(String, String)>),
}

impl SessionsMeant {
    pub fn found(&self) -> &[(String, String)] {
        match self {
            SessionsMeant::ByIdStart(f) | SessionsMeant::ByTitle(f) => f,
        }
    }
}

impl Store {
    /// Create a session and return it.
    pub fn create_session(&self, new: NewSession) -> Result<Session> {
        let granularity = self.granularity;
        self.write(|tx| insert_session_tx(tx, &new, granularity))
    }

    /// The first of `ids` that names no session, if any (one read).
    pub fn first_missing_session<'a>(&self, ids: &'a [String]) -> Result<Option<&'a String>> {
        self.read(|tx| {
            for id in ids {
                if !session_exists_tx(tx, id)? {
                    return Ok(Some(id));
                }
            }
            Ok(None)
        })
    }

    /// The node id of the thought last recorded in session `id`, on any
    /// chain; `None` when it has none (or there is no such session).
    pub fn newest_node(&self, id: &str) -> Result<Option<String>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached("SELECT node_id FROM thoughts WHERE session_id = ?1 ORDER BY id DESC LIMIT 1")?
                .query_row([id], |r| r.get(0))
                .optional()?)
        })
    }

    /// The stage session `id` has reached, `None` when there is no such session.
    pub fn session_stage(&self, id: &str) -> Result<Option<Stage>> {
        self.read(|tx| {
            let stage: Option<i64> = tx
                // A session with a thought had the cipher (schema V14), also
                // when an import before that rule left its column at 1.
                .prepare_cached(
                    "SELECT CASE WHEN thought_count > 0 THEN max(stage, 2) ELSE stage END FROM sessions WHERE id = ?1",
                )?
                .query_row([id], |r| r.get(0))
                .optional()?;
            Ok(stage.map(Stage::from_number))
        })
    }

    /// Raise session `id` to stage `to` (a stage never goes down); false
    /// when there is no such session. Leaves `updated_at` alone: the stage
    /// is how far an agent has read the guide, not a change of the session.
    pub fn raise_session_stage(&self, id: &str, to: Stage) -> Result<bool> {
        self.write(|tx| {
            if !session_exists_tx(tx, id)? {
                return Ok(false);
            }
            tx.prepare_cached("UPDATE sessions SET stage = ?2 WHERE id = ?1 AND stage < ?2")?
                .execute((id, i64::from(to.number())))?;
            Ok(true)
        })
    }

    /// A session by id, or `SESSION_NOT_FOUND`.
    pub fn session(&self, id: &str) -> Result<Session> {
        let granularity = self.granularity;
        self.read(|tx| get_session_tx(tx, id, granularity))
    }

    /// Delete a session and everything in it, in one transaction. Returns the
    /// number of thoughts removed.
    pub fn delete_session(&self, id: &str) -> Result<u64> {
        self.write(|tx| {
            super::threads::status_tx(tx, id)?.check_writable(id, "delete")?;
            let removed: i64 = tx
                .prepare_cached("SELECT count(*) FROM thoughts WHERE session_id = ?1")?
                .query_row([id], |r| r.get(0))?;
            super::threads::log_deletion_effects_tx(tx, id)?;
            // The session row goes first, so that the triggers removing its
            // thoughts (and their search index entries) find no counters to
            // keep up to date; see migrations/V4.
            tx.execute("DELETE FROM sessions WHERE id = ?1", [id])?;
            Ok(removed as u64)
        })
    }

    /// Sessions matching a SessionFilter, newest first by default.
    /// Tags of `tags` no session carries, each with those sessions carry
    /// that differ from it only in letter case ([`TagTable::other_spellings`]).
    pub fn session_tag_spellings(&self, tags: &[String]) -> Result<Vec<(String, Vec<String>)>> {
        self.read(|tx| SESSION_TAGS.other_spellings(tx, tags))
    }

    pub fn list_sessions(&self, filter: &SessionFilter) -> Result<SessionPage> {
        let mut clauses: Vec<String> = Vec::new();
        let mut values: Vec<String> = Vec::new();
        if let Some(search) = filter.search.as_deref() {
            let plan = QueryPlan::of(search);
            // Nothing searchable in the text (only punctuation): nothing matches.
            if plan.is_empty() {
                clauses.push("0".into());
            }
            // `+s.seq`: not through an index on seq. Beside the tag clause
            // (or a server's project tag), SQLite 3.53 would otherwise probe
            // the (id, seq) index once per pair of the two lists: 60 s over
            // 10,000 sessions that all match both; now 0.04 s (BENCHMARKS.md).
            let (found, texts) = plan.conditions(SESSION_TEXT, "+s.seq", "sessions_fts");
            clauses.extend(found);
            values.extend(texts);
        }
        match filter.status {
            Some(SessionStatus::Active) => clauses.push("s.completed_at IS NULL".into()),
            Some(SessionStatus::Completed) => clauses.push("s.completed_at IS NOT NULL".into()),
            None => {}
        }
        let dir = match filter.sort_order {
            SortOrder::Asc => "ASC",
            SortOrder::Desc => "DESC",
        };
        let order = match filter.sort_by {
            SortBy::CreatedAt => format!("s.created_at {dir}, s.seq {dir}"),
            SortBy::UpdatedAt => format!("s.updated_at {dir}, s.seq {dir}"),
            SortBy::Title => format!("s.title COLLATE NOCASE {dir}, s.seq {dir}"),
        };
        let granularity = self.granularity;
        let limit = filter.limit;
        let offset = filter.offset;
        self.read(|tx| {
            // The tags' clauses come first, their values too.
            let tags = SESSION_TAGS.clauses(tx, &filter.tags, u64::from(offset) + u64::from(limit))?;
            let where_sql = |tag_clauses: &[String]| {
                let all: Vec<&str> = tag_clauses.iter().chain(&clauses).map(String::as_str).collect();
                if all.is_empty() {
                    String::new()
                } else {
                    format!("WHERE {}", all.join(" AND "))
                }
            };
            let refs: Vec<&dyn ToSql> = tags.values.iter().chain(&values).map(|v| v as &dyn ToSql).collect();
            let cols = SESSION_COLUMNS
                .split(", ")
                .map(|c| format!("s.{c}"))
                .collect::<Vec<_>>()
                .join(", ");
            let sql = format!(
                "SELECT {cols} FROM sessions AS s {} ORDER BY {order} LIMIT {limit} OFFSET {offset}",
                where_sql(&tags.page)
            );
            let mut stmt = tx.prepare_cached(&sql)?;
            let sessions = stmt
                .query_map(refs.as_slice(), |r| session_from_row(r, granularity))?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            // Open sessions are most of a ledger and have no index of their
            // own (one would be rewritten by every append): alone, they are
            // counted as all sessions less the completed ones, which have
            // (migrations/V13).
            let count_sql = if filter.status == Some(SessionStatus::Active) && clauses.len() == 1 && filter.tags.is_empty()
            {
                "SELECT (SELECT count(*) FROM sessions) - (SELECT count(*) FROM sessions WHERE completed_at IS NOT NULL)"
                    .to_string()
            } else {
                format!("SELECT count(*) FROM sessions AS s {}", where_sql(&tags.count))
            };
            let total = tags.total(tx, clauses.is_empty(), &count_sql, refs.as_slice())?;
            let total = total.max(0) as u64;
            Ok(SessionPage {
                count: sessions.len(),
                has_more: u64::from(offset) + (sessions.len() as u64) < total,
                sessions,
                total,
            })
        })
    }

    /// Mark a session completed, for tests: the real way is a main-chain
    /// thought saying nextThoughtNeeded: false (`append_thought`).
    #[cfg(test)]
    pub fn complete_session(&self, id: &str) -> Result<()> {
        self.write(|tx| {
            let now = domain::now();
            tx.execute("UPDATE sessions SET completed_at = ?2 WHERE id = ?1", (id, &now))?;
            Ok(())
        })
    }

    /// The ids (and titles) of at most `limit` sessions a session id not
    /// found may have meant, most recently updated first: those whose id
    /// starts with `given` in lower case (an id given shortened or in upper
    /// case; a range over the primary key), else those titled `given`,
    /// letter case aside, through the title index (agents remember a
    /// session by its title). Text that cannot start an id (under 4
    /// characters, or not hex digits and `-`) is only a title; one that can
    /// (`2024-06-01`, `cafe`) is a title when no id starts so.
    pub fn sessions_meant(&self, given: &str, limit: u32) -> Result<SessionsMeant> {
        let given = given.trim();
        if given.is_empty() {
            return Ok(SessionsMeant::ByTitle(Vec::new()));
        }
        self.read(|tx| {
            let rows = |sql: &str, key: &str| -> Result<Vec<(String, String)>> {
                let mut stmt = tx.prepare_cached(sql)?;
                let rows = stmt.query_map((key, limit), |r| Ok((r.get(0)?, r.get(1)?)))?;
                Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
            };
            if (4..=36).contains(&given.len()) && given.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
                let by_id = rows(
                    "SELECT id, title FROM sessions WHERE id >= ?1 AND id < ?1 || '~'
                     ORDER BY updated_at DESC, seq DESC LIMIT ?2",
                    &given.to_ascii_lowercase(),
                )?;
                if !by_id.is_empty() {
                    return Ok(SessionsMeant::ByIdStart(by_id));
                }
            }
            Ok(SessionsMeant::ByTitle(rows(
                "SELECT id, title FROM sessions WHERE title = ?1 COLLATE NOCASE
                 ORDER BY updated_at DESC, seq DESC LIMIT ?2",
                given,
            )?))
        })
    }

    /// The most recently updated session other than `except` with this
    /// title (letter case aside): `(id, updatedAt)`. Through the title index.
    pub fn session_titled(&self, title: &str, except: &str) -> Result<Option<(String, String)>> {
        self.read(|tx| {
            Ok(tx
                .prepare_cached(
                    "SELECT id, updated_at FROM sessions WHERE title = ?1 COLLATE NOCASE AND id <> ?2
                     ORDER BY updated_at DESC LIMIT 1",
                )?
                .query_row([title, except], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?)
        })
    }

    /// Every session, as cross-session anchors are matched against it
    /// (one pass over the table: an export with anchors reads it once).
    pub fn anchor_sessions(&self) -> Result<Vec<crate::domain::anchors::SessionRef>> {
        self.read(|tx| {
            let mut stmt = tx.prepare_cached("SELECT id, title, tags, thought_count, created_at FROM sessions")?;
            let rows = stmt.query_map([], |r| {
                let tags: String = r.get(2)?;
                Ok(crate::domain::anchors::SessionRef {
                    id: r.get(0)?,
                    title: r.get(1)?,
                    // The column is checked to be a JSON array (of strings,
                    // as the store writes it).
                    tags: serde_json::from_str(&tags).unwrap_or_default(),
                    thought_count: r.get::<_, i64>(3)?.max(0) as u64,
                    created_at: r.get(4)?,
                })
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })
    }

    /// Number of sessions and thoughts in the ledger.
    pub fn counts(&self) -> Result<(u64, u64)> {
        self.read(|tx| {
            let s: i64 = tx.query_row("SELECT count(*) FROM sessions", [], |r| r.get(0))?;
            let t: i64 = tx.query_row("SELECT count(*) FROM thoughts", [], |r| r.get(0))?;
            Ok((s.max(0) as u64, t.max(0) as u64))
        })
    }

    /// Open a session to continue it (`load_context`, `session resume`):
    /// bumps `lastAccessedAt` and, for a completed session, clears
    /// `completedAt`, since an agent that loads it means to go on with it.
    /// `updatedAt` stays: no reasoning was added. Answers the session as it
    /// is now and when it had been completed, if it had.
    pub fn reopen_session(&self, id: &str) -> Result<(Session, Option<String>)> {
        let granularity = self.granularity;
        self.write(|tx| {
            let now = domain::now();
            let found: Option<(Option<String>, String)> = tx
                .prepare_cached("SELECT completed_at, status FROM sessions WHERE id = ?1")?
                .query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            let Some((was_completed, status)) = found else {
                return Err(Error::session_not_found(id));
            };
            // A frozen or archived thread takes no thought: opening it is a read.
            let reopen = status == "active";
            tx.prepare_cached(
                "UPDATE sessions SET last_accessed_at = ?2, completed_at = CASE WHEN ?3 THEN NULL ELSE completed_at END
                 WHERE id = ?1",
            )?
            .execute(rusqlite::params![id, &now, reopen])?;
            Ok((get_session_tx(tx, id, granularity)?, was_completed.filter(|_| reopen)))
        })
    }
}

/// Whether a session with this id exists, inside a transaction.
pub(crate) fn session_exists_tx(conn: &rusqlite::Connection, id: &str) -> Result<bool> {
    Ok(conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM sessions WHERE id = ?1)")?
        .query_row([id], |r| r.get(0))?)
}

/// Validate and insert a new session inside a write transaction.
pub(crate) fn insert_session_tx(tx: &Tx<'_>, new: &NewSession, granularity: Granularity) -> Result<Session> {
    let (title, tags) = new.checked()?;
    let id = uuid::Uuid::new_v4().to_string();
    let now = domain::now();
    let tags_json = serde_json::to_string(&tags).map_err(|e| Error::Internal(e.to_string()))?;
    tx.prepare_cached(
        "INSERT INTO sessions (id, title, description, tags, domain, created_at, updated_at, last_accessed_at)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?6)",
    )?
    .execute((&id, &title, &new.description, &tags_json, &new.domain, &now))?;
    // (A trigger fills session_tags from `tags`.)
    get_session_tx(tx, &id, granularity)
}

pub(crate) fn get_session_tx(tx: &Tx<'_>, id: &str, granularity: Granularity) -> Result<Session> {
    tx.prepare_cached(&format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"))?
        .query_row([id], |r| session_from_row(r, granularity))
        .optional()?
        .ok_or_else(|| Error::session_not_found(id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::ThoughtInput;
    use crate::store::Target;
    use crate::store::test_support::temp_store;

    /// A session starts at stage 1, its first thought puts it at 2, and a
    /// raise never lowers it; `updated_at` is left alone by a raise.
    #[test]
    fn a_session_keeps_its_stage_and_it_never_goes_down() {
        let (_d, store) = temp_store();
        let s = store.create_session(NewSession::titled("staged")).unwrap();
        assert_eq!(store.session_stage(&s.id).unwrap(), Some(Stage::InitComplete));
        let input = ThoughtInput::text("first");
        store.append_thought(Target::Session(s.id.clone()), input).unwrap();
        assert_eq!(store.session_stage(&s.id).unwrap(), Some(Stage::CipherLoaded));
        let updated = store.session(&s.id).unwrap().updated_at;
        assert!(store.raise_session_stage(&s.id, Stage::InitComplete).unwrap());
        assert_eq!(store.session_stage(&s.id).unwrap(), Some(Stage::CipherLoaded));
        assert!(store.raise_session_stage(&s.id, Stage::DomainActive).unwrap());
        assert_eq!(store.session_stage(&s.id).unwrap(), Some(Stage::DomainActive));
        assert_eq!(store.session(&s.id).unwrap().updated_at, updated);
        let nobody = "0b6f2c1e-8d4a-4c5e-9f3b-2a7d1e6c8b90";
        assert!(!store.raise_session_stage(nobody, Stage::CipherLoaded).unwrap());
        assert_eq!(store.session_stage(nobody).unwrap(), None);
    }

    /// A list by status counts and pages the completed sessions along their
    /// own index, and the open ones as all less those: neither reads every
    /// session row (reading them took 15 ms at 16,000 sessions, growing).
    #[test]
    fn lists_by_status_count_without_reading_every_session() {
        let (_d, store) = temp_store();
        let ids: Vec<String> = (0..7)
            .map(|i| store.create_session(NewSession::titled(format!("s{i}"))).unwrap().id)
            .collect();
        for id in &ids[..3] {
            store.complete_session(id).unwrap();
        }
        let list = |status, offset| {
            store
                .list_sessions(&SessionFilter {
                    status: Some(status),
                    limit: 2,
                    offset,
                    ..SessionFilter::default()
                })
                .unwrap()
        };
        let completed = list(SessionStatus::Completed, 0);
        assert_eq!((completed.total, completed.count, completed.has_more), (3, 2, true));
        assert!(completed.sessions.iter().all(|s| s.completed_at.is_some()));
        let active = list(SessionStatus::Active, 2);
        assert_eq!((active.total, active.count, active.has_more), (4, 2, false));
        assert!(active.sessions.iter().all(|s| s.completed_at.is_none()));

        let plan = |sql| crate::store::test_support::plan(&store, sql);
        for sql in [
            "SELECT count(*) FROM sessions AS s WHERE s.completed_at IS NOT NULL",
            "SELECT s.id FROM sessions AS s WHERE s.completed_at IS NOT NULL ORDER BY s.updated_at DESC, s.seq DESC LIMIT 20",
        ] {
            let p = plan(sql);
            assert!(
                p.contains("sessions_completed") && !p.contains("TEMP B-TREE"),
                "{sql}: {p}"
            );
        }
    }

    /// An id not found may be an id's start, or a title: one that could
    /// start an id (`cafe`, a date) is read as a title when no id starts so.
    #[test]
    fn sessions_meant_by_id_start_then_by_title() {
        let (_d, store) = temp_store();
        let a = store.create_session(NewSession::titled("Heron study")).unwrap();
        let b = store.create_session(NewSession::titled("2024-06-01")).unwrap();
        let c = store.create_session(NewSession::titled("CAFE")).unwrap();
        let pair = |s: &Session| (s.id.clone(), s.title.clone());
        assert_eq!(
            store.sessions_meant(&a.id[..8].to_uppercase(), 5).unwrap(),
            SessionsMeant::ByIdStart(vec![pair(&a)])
        );
        assert_eq!(
            store.sessions_meant(" heron STUDY ", 5).unwrap(),
            SessionsMeant::ByTitle(vec![pair(&a)])
        );
        for (given, meant) in [("2024-06-01", &b), ("cafe", &c)] {
            // Unless an id happens to start so.
            let found = store.sessions_meant(given, 5).unwrap();
            if !found.found().iter().any(|(id, _)| id.starts_with(given)) {
                assert_eq!(found, SessionsMeant::ByTitle(vec![pair(meant)]));
            }
        }
        assert!(store.sessions_meant("nothing like it", 5).unwrap().found().is_empty());
        assert!(store.sessions_meant("  ", 5).unwrap().found().is_empty());
    }

    fn new(title: &str, tags: &[&str]) -> NewSession {
        NewSession {
            title: title.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            ..Default::default()
        }
    }

    /// A 3 MiB description would make every list and search answer too long
    /// for one message: oversized fields are refused, naming the field, and
    /// nothing is created.
    #[test]
    fn oversized_descriptions_and_tags_are_refused() {
        let (_d, store) = temp_store();
        let long = |n: usize| "é".repeat(n);
        let cases = [
            (
                "description",
                NewSession {
                    description: Some(long(10_001)),
                    ..new("d", &[])
                },
            ),
            (
                "domain",
                NewSession {
                    domain: Some(long(201)),
                    ..new("d", &[])
                },
            ),
            ("tags", new("t", &[long(201).as_str()])),
            (
                "tags",
                NewSession {
                    tags: (0..101).map(|i| format!("t{i}")).collect(),
                    ..new("t", &[])
                },
            ),
        ];
        for (field, session) in cases {
            match store.create_session(session) {
                Err(Error::InvalidPayload { field: f, message, .. }) => {
                    assert_eq!(f, field, "{message}");
                    assert!(message.contains("at most"), "{message}");
                }
                other => panic!("{field}: {other:?}"),
            }
        }
        assert_eq!(store.list_sessions(&SessionFilter::default()).unwrap().total, 0);
        // At the limits, in characters (not bytes), all is well.
        let s = NewSession {
            description: Some(long(10_000)),
            domain: Some(long(200)),
            tags: (0..100).map(|i| format!("{i}{}", long(190))).collect(),
            ..new("at the limits", &[])
        };
        assert_eq!(store.create_session(s).unwrap().tags.len(), 100);
    }

    #[test]
    fn tags_filter_with_and_semantics() {
        let (_d, store) = temp_store();
        store.create_session(new("one", &["project:a", "task:x"])).unwrap();
        store.create_session(new("two", &["project:a"])).unwrap();
        store.create_session(new("three", &["task:x"])).unwrap();
        let f = SessionFilter {
            tags: vec!["project:a".into(), "task:x".into()],
            ..Default::default()
        };
        let page = store.list_sessions(&f).unwrap();
        assert_eq!(page.total, 1);
        assert_eq!(page.sessions[0].title, "one");
    }

    /// A common tag is walked in the list's order, a rare one drives the
    /// query (store::tag_filter); either way the same pages come back.
    #[test]
    fn pages_filtered_by_common_and_rare_tags() {
        let (_d, store) = temp_store();
        for i in 0..60 {
            let mut tags = vec!["project:p"];
            if i % 3 == 0 {
                tags.push("third");
            }
            if i == 7 || i == 40 {
                tags.push("rare");
            }
            store.create_session(new(&format!("s{i:02}"), &tags)).unwrap();
        }
        let titles = |tags: &[&str], search: Option<&str>, limit: u32, offset: u32| {
            let page = store
                .list_sessions(&SessionFilter {
                    tags: tags.iter().map(|t| t.to_string()).collect(),
                    search: search.map(str::to_string),
                    status: None,
                    sort_by: SortBy::Title,
                    sort_order: SortOrder::Asc,
                    limit,
                    offset,
                })
                .unwrap();
            let titles: Vec<String> = page.sessions.iter().map(|s| s.title.clone()).collect();
            (titles, page.total, page.has_more)
        };
        let (all, total, more) = titles(&["project:p"], None, 2, 3);
        assert_eq!(
            (all, total, more),
            (vec!["s03".to_string(), "s04".to_string()], 60, true)
        );
        let (thirds, total, more) = titles(&["third", "project:p", "third"], None, 3, 2);
        assert_eq!(
            (thirds, total, more),
            (vec!["s06".into(), "s09".into(), "s12".into()], 20, true)
        );
        let (rare, total, more) = titles(&["project:p", "rare"], None, 20, 0);
        assert_eq!((rare, total, more), (vec!["s07".into(), "s40".into()], 2, false));
        let (none, total, _) = titles(&["project:p", "rare", "third"], None, 20, 0);
        assert_eq!((none.len(), total), (0, 0));
        // Beside a search, the count joins the sessions.
        let (found, total, _) = titles(&["project:p", "third"], Some("s33"), 20, 0);
        assert_eq!((found, total), (vec!["s33".to_string()], 1));
    }

    #[test]
    fn paging_and_sorting() {
        let (_d, store) = temp_store();
        for t in ["b", "a", "c"] {
            store.create_session(new(t, &[])).unwrap();
        }
        let f = SessionFilter {
            sort_by: SortBy::Title,
            sort_order: SortOrder::Asc,
            limit: 2,
            ..Default::default()
        };
        let page = store.list_sessions(&f).unwrap();
        assert_eq!(
            page.sessions.iter().map(|s| s.title.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert!(page.has_more);
        assert_eq!(page.total, 3);
        let page = store.list_sessions(&SessionFilter { offset: 2, ..f }).unwrap();
        assert_eq!(page.sessions[0].title, "c");
        assert!(!page.has_more);
    }

    #[test]
    fn search_matches_title_words_and_tolerates_fts_syntax() {
        let (_d, store) = temp_store();
        store
            .create_session(new("Debug authentication flow", &["auth"]))
            .unwrap();
        for q in ["\"", "*", "NEAR(", ")", "a OR", "authentication*"] {
            store
                .list_sessions(&SessionFilter {
                    search: Some(q.into()),
                    ..Default::default()
                })
                .unwrap();
        }
        let page = store
            .list_sessions(&SessionFilter {
                search: Some("AUTHENTICATION".into()),
                ..Default::default()
            })
            .unwrap();
        assert_eq!(page.total, 1);
    }

    #[test]
    fn delete_removes_everything() {
        let (_d, store) = temp_store();
        let s = store.create_session(new("gone", &["x"])).unwrap();
        store.delete_session(&s.id).unwrap();
        assert_eq!(store.session(&s.id).unwrap_err().code(), "SESSION_NOT_FOUND");
        assert_eq!(store.delete_session(&s.id).unwrap_err().code(), "SESSION_NOT_FOUND");
    }

    #[test]
    fn bad_titles_are_rejected() {
        let (_d, store) = temp_store();
        assert!(store.create_session(new("  ", &[])).is_err());
        assert!(store.create_session(new(&"x".repeat(201), &[])).is_err());
        assert!(store.create_session(new("ok", &[""])).is_err());
        assert_eq!(store.counts().unwrap().0, 0);
    }
}
