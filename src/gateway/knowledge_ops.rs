//! The `knowledge` operation: patterns and scratchpad notes of the garden.
//! The sub-operation comes as `subOperation`, `operation` or (the
//! reference's form) `action`.

use serde_json::{Value, json};

use super::answers::knowledge::{
    DeletedAnswer, KnowledgeSearchAnswer, NoteListAnswer, NoteView, NoteWrittenAnswer, PatternListAnswer,
    PatternTagsAnswer, PatternView,
};
use super::ops::refuse_unknown_sessions;
use super::{Args, Gateway, answers};
use crate::domain::{SortOrder, Stage};
use crate::error::{Error, Result};
use crate::knowledge::{NewPattern, NoteRef, PatternFilter, PatternUpdate, check_content, check_topic, is_slug};

pub const SUB_OPERATIONS: &[&str] = &[
    "create_pattern",
    "get_pattern",
    "update_pattern",
    "delete_pattern",
    "list_patterns",
    "list_tags",
    "write_scratchpad",
    "read_scratchpad",
    "list_scratchpad",
    "delete_scratchpad",
    "search",
];

pub async fn knowledge(gw: &Gateway, args: Args) -> Result<Value> {
    let (name, args) = args.sub_operation_named(&["subOperation", "operation", "action"])?;
    let Some(name) = name else {
        return Err(Error::invalid_with(
            "subOperation",
            format!("knowledge needs subOperation: one of {}", SUB_OPERATIONS.join(", ")),
            json!({ "subOperations": SUB_OPERATIONS }),
        ));
    };
    let out = match name.as_str() {
        "create_pattern" => create_pattern(gw, args).await,
        "get_pattern" => {
            let id = pattern_id(&args)?;
            let p = gw.blocking(move |s| s.pattern(&id)).await?;
            answers::to_value(&PatternView::of(&p))
        }
        "update_pattern" => update_pattern(gw, args).await,
        "delete_pattern" => {
            let id = pattern_id(&args)?;
            // Unknown: refused at once, not after waiting for the write lock.
            let known = id.clone();
            gw.blocking(move |s| s.pattern_exists(&known)).await?;
            let p = gw.write(move |s| s.delete_pattern(&id)).await?;
            gw.wrote();
            answers::to_value(&DeletedAnswer {
                id: p.id,
                title: p.title,
                deleted: true,
            })
        }
        "list_patterns" => list_patterns(gw, args).await,
        "list_tags" => {
            let tags = gw.blocking(|s| s.pattern_tags()).await?;
            answers::to_value(&PatternTagsAnswer {
                count: tags.len(),
                tags,
            })
        }
        "write_scratchpad" => write_scratchpad(gw, args).await,
        "read_scratchpad" => {
            let id = note_ref(gw, &args).await?;
            let n = gw.blocking(move |s| s.note(&id)).await?;
            answers::to_value(&NoteView::of(&n, true))
        }
        "list_scratchpad" => {
            let limit = args.int_opt(&["limit"], 1, 100)?.unwrap_or(20) as u32;
            let offset = args.int_opt(&["offset"], 0, i64::from(u32::MAX))?.unwrap_or(0) as u32;
            let with_content = args.bool_opt(&["includeContent"])?.unwrap_or(true);
            let (notes, total) = gw.blocking(move |s| s.list_notes(limit, offset)).await?;
            answers::to_value(&NoteListAnswer {
                notes: notes.iter().map(|n| NoteView::of(n, with_content)).collect(),
                count: notes.len(),
                total,
                has_more: u64::from(offset) + (notes.len() as u64) < total,
            })
        }
        "delete_scratchpad" => {
            let id = note_ref(gw, &args).await?;
            // Unknown: refused at once, not after waiting for the write lock.
            let known = id.clone();
            gw.blocking(move |s| s.note_exists(&known)).await?;
            let n = gw.write(move |s| s.delete_note(&id)).await?;
            gw.wrote();
            answers::to_value(&DeletedAnswer {
                id: n.id,
                title: n.title,
                deleted: true,
            })
        }
        "search" => search(gw, args).await,
        other => Err(super::unknown_name(
            "knowledge sub-operation",
            other,
            SUB_OPERATIONS,
            ("subOperation", "validSubOperations"),
        )),
    }?;
    // Using the garden is a domain operation: it moves a connection that has
    // loaded the cipher to stage 3 (nothing requires stage 3; get_state shows it).
    if gw.stage() >= Stage::CipherLoaded {
        gw.advance(Stage::DomainActive, "knowledge");
    }
    Ok(out)
}

fn slug_arg(args: &Args, keys: &[&str], what: &str) -> Result<String> {
    let id = args.str_req(keys)?.trim().to_string();
    if !is_slug(&id) {
        return Err(Error::invalid(
            keys[0],
            format!(
                "{} must be a {what} id: lower-case letters, digits and '-' (got {id:?})",
                keys[0]
            ),
        ));
    }
    Ok(id)
}

fn pattern_id(args: &Args) -> Result<String> {
    slug_arg(args, &["id", "patternId"], "pattern")
}

/// A note is named by its `id`, or by its `topic`.
fn note_id(args: &Args) -> Result<NoteRef> {
    if args.has("id") || args.has("noteId") {
        return slug_arg(args, &["id", "noteId"], "note").map(NoteRef::Id);
    }
    match args.str_opt(&["topic", "title"])? {
        Some(t) => Ok(NoteRef::Topic(check_topic("topic", &t)?)),
        None => Err(Error::invalid("id", "give the note's id (or its topic)")),
    }
}

/// [`note_id`], and when both an id and a topic are given, they must name
/// the same note: a delete naming two notes is refused, not guessed at.
async fn note_ref(gw: &Gateway, args: &Args) -> Result<NoteRef> {
    let note = note_id(args)?;
    if let NoteRef::Id(id) = &note
        && let Some(topic) = args.str_opt(&["topic", "title"])?
    {
        let by_topic = NoteRef::Topic(check_topic("topic", &topic)?);
        let named = match gw.blocking(move |s| s.note(&by_topic)).await {
            Ok(n) => Some(n.id),
            Err(e) if e.code() == "INVALID_PAYLOAD" => None,
            Err(e) => return Err(e),
        };
        if named.as_deref() != Some(id.as_str()) {
            return Err(Error::invalid_with(
                "topic",
                format!(
                    "id {id:?} and topic {:?} do not name the same note: give one of them",
                    super::clip(&topic)
                ),
                json!({ "id": id, "topicNoteId": named }),
            ));
        }
    }
    Ok(note)
}

/// Session ids in the form the ledger stores (upper-case UUIDs lowered).
fn derived_sessions(args: &Args) -> Result<Option<Vec<String>>> {
    Ok(args
        .str_list_opt(&["derivedFromSessions"])?
        .map(|ids| ids.iter().map(|id| crate::domain::canonical_session_id(id)).collect()))
}

/// `sessionId` on a pattern: the one session it comes from, added to
/// `derivedFromSessions` (an agent that names the session it is working in
/// means that link, and would otherwise find it missing).
fn derived_session(args: &Args) -> Result<Option<String>> {
    match args.str_opt(&["sessionId", "session_id"])? {
        Some(id) if id.trim().is_empty() => Err(Error::invalid(
            "sessionId",
            "sessionId must name a session (or leave it out)",
        )),
        id => Ok(id.map(|id| crate::domain::canonical_session_id(&id))),
    }
}

async fn create_pattern(gw: &Gateway, args: Args) -> Result<Value> {
    // Every required field missing is named at once, not one per call.
    let missing: Vec<&str> = ["title", "description", "content"]
        .into_iter()
        .filter(|k| !args.has(k))
        .collect();
    if let [first, ..] = missing[..] {
        return Err(Error::invalid_with(
            first,
            format!("create_pattern needs {}: missing", missing.join(", ")),
            json!({ "missing": missing }),
        ));
    }
    let new = NewPattern {
        title: args.str_req(&["title"])?,
        description: args.str_req(&["description"])?,
        content: args.str_req(&["content"])?,
        tags: args.str_list_opt(&["tags"])?.unwrap_or_default(),
        derived_from_sessions: {
            let mut sessions = derived_sessions(&args)?.unwrap_or_default();
            if let Some(one) = derived_session(&args)?
                && !sessions.contains(&one)
            {
                sessions.push(one);
            }
            sessions
        },
        created_by: args.str_opt(&["createdBy"])?,
    }
    .validated()?;
    refuse_unknown_sessions(gw, new.derived_from_sessions.clone()).await?;
    let p = gw.write(move |s| s.create_pattern(new)).await?;
    gw.wrote();
    answers::to_value(&PatternView::of(&p))
}

/// The fields update_pattern changes, as it names them.
const UPDATE_FIELDS: &[&str] = &[
    "title",
    "description",
    "content",
    "tags",
    "derivedFromSessions",
    "sessionId",
    "createdBy",
];

/// Other names agents give the fields update_pattern changes (folded:
/// lower case, without `_`, `-` or spaces).
const UPDATE_SYNONYMS: &[(&str, &[&str])] = &[
    (
        "content",
        &[
            "body", "text", "contents", "markdown", "md", "details", "steps", "pattern",
        ],
    ),
    ("title", &["name", "heading", "subject", "newtitle"]),
    ("description", &["desc", "summary", "about", "abstract"]),
    ("tags", &["tag", "labels", "label", "keywords", "addtags"]),
    ("createdBy", &["author", "by", "creator", "owner", "agent"]),
    (
        "derivedFromSessions",
        &[
            "sessions",
            "sessionids",
            "derivedfrom",
            "sourcesessions",
            "fromsessions",
        ],
    ),
];

/// The update_pattern field `name` most likely means: one misspelt, or
/// another name for it.
fn meant_update_field(name: &str) -> Option<&'static str> {
    if let Some(meant) = super::args::misspelling_of(name, false).filter(|m| UPDATE_FIELDS.contains(m)) {
        return Some(meant);
    }
    let folded = super::args::folded(name);
    UPDATE_SYNONYMS
        .iter()
        .find(|(_, names)| names.contains(&folded.as_str()))
        .map(|(field, _)| *field)
        .or_else(|| {
            // Two letters wrong, missing, extra or swapped (`contnet`).
            let given: Vec<char> = folded.chars().collect();
            UPDATE_FIELDS
                .iter()
                .map(|f| {
                    (
                        super::args::edits(&given, &f.to_lowercase().chars().collect::<Vec<_>>()),
                        *f,
                    )
                })
                .filter(|(d, _)| given.len() >= 4 && *d <= 2)
                .min_by_key(|(d, _)| *d)
                .map(|(_, f)| f)
        })
}

/// An update_pattern that changes nothing but was given names it does not
/// take (`body`): refused naming the first such name (one it can tell the
/// meaning of first), and the field meant, rather than as an update with
/// no field, which would name `title`.
fn unknown_update_field(unread: &[String]) -> Option<Error> {
    let (name, meant) = unread
        .iter()
        .find_map(|n| meant_update_field(n).map(|m| (n, Some(m))))
        .or_else(|| unread.first().map(|n| (n, None)))?;
    let message = match meant {
        Some(m) => format!("{name} is not a parameter of update_pattern; did you mean {m}? (nothing was changed)"),
        None => format!(
            "{name} is not a parameter of update_pattern, which changes {} (nothing was changed)",
            UPDATE_FIELDS.join(", ")
        ),
    };
    let mut details = json!({ "parameters": UPDATE_FIELDS });
    if let Some(m) = meant {
        details["didYouMean"] = json!(m);
    }
    Some(Error::invalid_with(name.as_str(), message, details))
}

async fn update_pattern(gw: &Gateway, args: Args) -> Result<Value> {
    let id = pattern_id(&args)?;
    let upd = PatternUpdate {
        title: args.str_opt(&["title"])?,
        description: args.str_opt(&["description"])?,
        content: args.str_opt(&["content"])?,
        tags: args.str_list_opt(&["tags"])?,
        derived_from_sessions: derived_sessions(&args)?,
        add_derived_session: derived_session(&args)?,
        created_by: args.str_opt(&["createdBy"])?,
    };
    if upd.is_empty()
        && let Some(err) = unknown_update_field(&args.unread())
    {
        return Err(err);
    }
    let upd = upd.validated()?;
    // Unknown: refused at once, not after waiting for the write lock.
    let known = id.clone();
    let old = gw.blocking(move |s| s.pattern(&known)).await?;
    // Only sessions added must exist (a session the pattern was derived
    // from may have been deleted since), as the write checks.
    let added: Vec<String> = upd
        .derived_from_sessions
        .iter()
        .flatten()
        .chain(&upd.add_derived_session)
        .filter(|id| !old.derived_from_sessions.contains(id))
        .cloned()
        .collect();
    refuse_unknown_sessions(gw, added).await?;
    let p = gw.write(move |s| s.update_pattern(&id, upd)).await?;
    gw.wrote();
    answers::to_value(&PatternView::of(&p))
}

async fn list_patterns(gw: &Gateway, args: Args) -> Result<Value> {
    let args = args.object_opt(&["filter", "filters"])?.unwrap_or(args);
    let (sort_by, sort_order) = args.sort_opt()?;
    let filter = PatternFilter {
        tags: args.tag_filter(&["tags", "tag"])?,
        search: args.search_opt(&["search", "query"])?,
        limit: args.int_opt(&["limit"], 1, 100)?.unwrap_or(20) as u32,
        offset: args.int_opt(&["offset"], 0, i64::from(u32::MAX))?.unwrap_or(0) as u32,
        sort_by,
        sort_order: sort_order.unwrap_or(SortOrder::Desc),
    };
    // `includeContent: false`: a page without each pattern's text (a page
    // of extracted learnings run to ~1.2 KB each).
    let with_content = args.bool_opt(&["includeContent"])?.unwrap_or(true);
    let unsearchable = filter
        .search
        .as_deref()
        .is_some_and(|q| crate::store::fts_query(q).is_none());
    let tags = filter.tags.clone();
    let page = gw.blocking(move |s| s.list_patterns(&filter)).await?;
    let empty = page.total == 0;
    let mut out = answers::to_value(&PatternListAnswer {
        patterns: page
            .patterns
            .iter()
            .map(|item| PatternView::item(item, with_content))
            .collect(),
        count: page.count,
        total: page.total,
        has_more: page.has_more,
        note: unsearchable.then_some(super::ops::UNSEARCHABLE_NOTE),
    })?;
    if !unsearchable && empty && !tags.is_empty() {
        let spelled = gw.blocking(move |s| s.pattern_tag_spellings(&tags)).await?;
        // Said as `list_sessions` says it, by the helper of ops.rs, which
        // takes the answer as JSON.
        super::ops::tell_tag_spellings(&mut out, "pattern", &spelled);
    }
    Ok(out)
}

async fn write_scratchpad(gw: &Gateway, args: Args) -> Result<Value> {
    // A note's topic, or its title where no topic is given (the answer
    // shows it as `title`); both together are the topic and a title unused.
    // An empty topic is none (clients fill every optional field with "").
    let topic = match args.str_opt(&["topic"])?.filter(|t| !t.trim().is_empty()) {
        Some(t) => check_topic("topic", &t)?,
        None => match args.str_opt(&["title"])? {
            Some(t) => check_topic("title", &t)?,
            None => return Err(Error::invalid("topic", "topic is required")),
        },
    };
    let content = match args.get("content") {
        Some(Value::String(c)) => c.clone(),
        Some(_) => return Err(Error::invalid("content", "content must be a string")),
        None => return Err(Error::invalid("content", "content is required")),
    };
    check_content(&content, true)?;
    let (note, created) = gw.write(move |s| s.write_note(&topic, &content)).await?;
    gw.wrote();
    answers::to_value(&NoteWrittenAnswer {
        note: NoteView::of(&note, true),
        created,
        replaced: !created,
    })
}

/// Search patterns and notes together (`include` narrows it to one of them).
async fn search(gw: &Gateway, args: Args) -> Result<Value> {
    let query = args.search_req(&["query", "q"])?;
    let limit = args.int_opt(&["limit"], 1, 100)?.unwrap_or(10) as u32;
    let include = args
        .str_list_opt(&["include"])?
        .unwrap_or_else(|| vec!["patterns".into(), "notes".into()]);
    if let Some(bad) = include.iter().find(|i| !matches!(i.as_str(), "patterns" | "notes")) {
        return Err(Error::invalid_with(
            "include",
            format!("include may hold patterns and notes; got {bad:?}"),
            json!({ "allowed": ["patterns", "notes"] }),
        ));
    }
    let (want_p, want_n) = (
        include.iter().any(|i| i == "patterns"),
        include.iter().any(|i| i == "notes"),
    );
    let q = query.clone();
    let (patterns, notes) = gw
        .heavy(move |s| {
            let p = want_p.then(|| s.search_patterns(&q, limit)).transpose()?;
            let n = want_n.then(|| s.search_notes(&q, limit)).transpose()?;
            Ok((p, n))
        })
        .await?;
    let unsearchable = crate::store::fts_query(&query).is_none();
    let mut out = KnowledgeSearchAnswer::new(query, limit, patterns, notes);
    if unsearchable {
        out.note = Some(super::ops::UNSEARCHABLE_NOTE.to_string());
    } else if let Some(bound) = out.patterns_ranked_newest.or(out.notes_ranked_newest) {
        out.note = Some(format!(
            "more than {bound} matched: these are the best of the newest {bound}, and an older one may score higher; \
             add words to narrow the search, or page through every match with list_patterns {{ search }}"
        ));
    }
    answers::to_value(&out)
}
