//! The `knowledge` operation: patterns and scratchpad notes of the garden.
//! The sub-operation comes as `subOperation`, `operation` or (the
//! TypeScript Thoughtbox's form) `action`.

use serde_json::{Value, json};

use super::answers::knowledge::{
    DeletedAnswer, KnowledgeSearchAnswer, NoteListAnswer, NoteView, NoteWrittenAnswer, PatternListAnswer,
    PatternTagsAnswer, PatternView,
};
use super::ops::refuse_unknown_sessions;
use super::{Args, Gateway, answers, params};
use crate::domain::{SessionId, SortOrder, Stage};
use crate::error::{Error, Result};
use crate::knowledge::{NewPattern, NoteRef, PatternFilter, PatternUpdate, check_content, check_topic, is_slug};

pub async fn knowledge(gw: &Gateway, args: Args) -> Result<Value> {
    let (name, args) = args.sub_operation("knowledge")?;
    let name = super::refused::required_sub_operation("knowledge", name)?;
    let out = match name.as_str() {
        "create_pattern" => create_pattern(gw, args).await,
        "get_pattern" => {
            let p: params::PatternRef = args.parse("knowledge.get_pattern")?;
            let id = slug("id", &p.id, "pattern")?;
            let p = gw.blocking(move |s| s.pattern(&id)).await?;
            answers::to_value(&PatternView::of(&p))
        }
        "update_pattern" => update_pattern(gw, args).await,
        "delete_pattern" => {
            let p: params::PatternRef = args.parse("knowledge.delete_pattern")?;
            let id = slug("id", &p.id, "pattern")?;
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
            let _: params::ListPatternTags = args.parse("knowledge.list_tags")?;
            let tags = gw.blocking(|s| s.pattern_tags()).await?;
            answers::to_value(&PatternTagsAnswer {
                count: tags.len(),
                tags,
            })
        }
        "write_scratchpad" => write_scratchpad(gw, args).await,
        "read_scratchpad" => {
            let id = note_ref(gw, args.parse("knowledge.read_scratchpad")?).await?;
            let n = gw.blocking(move |s| s.note(&id)).await?;
            answers::to_value(&NoteView::of(&n, true))
        }
        "list_scratchpad" => {
            let p: params::ListScratchpad = args.parse("knowledge.list_scratchpad")?;
            let limit = p.limit.get("limit")?;
            let offset = p.offset.unwrap_or(0);
            let with_content = p.include_content.unwrap_or(true);
            let (notes, total) = gw.blocking(move |s| s.list_notes(limit, offset)).await?;
            answers::to_value(&NoteListAnswer {
                notes: notes.iter().map(|n| NoteView::item(n, with_content)).collect(),
                count: notes.len(),
                total,
                has_more: u64::from(offset) + (notes.len() as u64) < total,
            })
        }
        "delete_scratchpad" => {
            let id = note_ref(gw, args.parse("knowledge.delete_scratchpad")?).await?;
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
        other => Err(super::refused::unknown_sub_operation("knowledge", other)),
    }?;
    // Using the garden is a domain operation: it moves a connection that has
    // loaded the cipher to stage 3 (nothing requires stage 3; get_state shows it).
    if gw.stage() >= Stage::CipherLoaded {
        gw.advance(Stage::DomainActive, "knowledge");
    }
    Ok(out)
}

/// A pattern's or note's id: lower-case letters, digits and `-`.
fn slug(field: &str, given: &str, what: &str) -> Result<String> {
    let id = given.trim().to_string();
    if !is_slug(&id) {
        return Err(Error::invalid(
            field,
            format!("{field} must be a {what} id: lower-case letters, digits and '-' (got {id:?})"),
        ));
    }
    Ok(id)
}

/// A note is named by its `id`, or by its `topic`; both must name the same
/// note: a delete naming two notes is refused, not guessed at.
async fn note_ref(gw: &Gateway, p: params::NoteRef) -> Result<NoteRef> {
    let topic = p.topic.filter(|t| !t.trim().is_empty() || p.id.is_none());
    let Some(id) = p.id else {
        return match topic {
            Some(t) => Ok(NoteRef::Topic(check_topic("topic", &t)?)),
            None => Err(Error::invalid("id", "give the note's id (or its topic)")),
        };
    };
    let id = slug("id", &id, "note")?;
    if let Some(topic) = topic {
        let by_topic = NoteRef::Topic(check_topic("topic", &topic)?);
        let named = match gw.blocking(move |s| s.note(&by_topic)).await {
            Ok(n) => Some(n.id),
            Err(Error::InvalidPayload { .. }) => None,
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
    Ok(NoteRef::Id(id))
}

/// Session ids as the store takes them (the parameters read them in the
/// form the ledger stores).
fn derived_sessions(ids: Option<Vec<SessionId>>) -> Option<Vec<String>> {
    ids.map(|ids| ids.into_iter().map(SessionId::into_string).collect())
}

/// `sessionId` on a pattern: the one session it comes from, added to
/// `derivedFromSessions` (an agent that names the session it is working in
/// means that link, and would otherwise find it missing).
fn derived_session(id: Option<SessionId>) -> Result<Option<String>> {
    match id {
        Some(id) if id.is_empty() => Err(Error::invalid(
            "sessionId",
            "sessionId must name a session (or leave it out)",
        )),
        id => Ok(id.map(SessionId::into_string)),
    }
}

/// The parameters `key`'s schema requires (the sub-operation's own name
/// aside).
fn required_of(key: &str) -> Vec<&'static str> {
    params::schema_of_op(key)
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|names| {
            names
                .iter()
                .filter_map(Value::as_str)
                .filter(|n| *n != "subOperation")
                .collect()
        })
        .unwrap_or_default()
}

async fn create_pattern(gw: &Gateway, args: Args) -> Result<Value> {
    // Every required field missing is named at once, not one per call.
    let missing: Vec<&str> = required_of("knowledge.create_pattern")
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
    let p: params::CreatePattern = args.parse("knowledge.create_pattern")?;
    let new = NewPattern {
        title: p.title,
        description: p.description,
        content: p.content,
        tags: p.tags.unwrap_or_default(),
        derived_from_sessions: {
            let mut sessions = derived_sessions(p.derived_from_sessions).unwrap_or_default();
            if let Some(one) = derived_session(p.session_id)?
                && !sessions.contains(&one)
            {
                sessions.push(one);
            }
            sessions
        },
        created_by: p.created_by,
    }
    .validated()?;
    refuse_unknown_sessions(gw, new.derived_from_sessions.clone()).await?;
    let p = gw.write(move |s| s.create_pattern(new)).await?;
    gw.wrote();
    answers::to_value(&PatternView::of(&p))
}

/// The fields update_pattern changes, as its schema names them.
fn update_fields() -> Vec<&'static str> {
    params::schema_of_op("knowledge.update_pattern")
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).filter(|k| *k != "id").collect())
        .unwrap_or_default()
}

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
    let fields = update_fields();
    if let Some(meant) = super::args::misspelling_of(name, false).filter(|m| fields.contains(m)) {
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
            fields
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
            update_fields().join(", ")
        ),
    };
    let mut details = json!({ "parameters": update_fields() });
    if let Some(m) = meant {
        details["didYouMean"] = json!(m);
    }
    Some(Error::invalid_with(name.as_str(), message, details))
}

async fn update_pattern(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::UpdatePattern = args.parse("knowledge.update_pattern")?;
    let id = slug("id", &p.id, "pattern")?;
    let upd = PatternUpdate {
        title: p.title,
        description: p.description,
        content: p.content,
        tags: p.tags,
        derived_from_sessions: derived_sessions(p.derived_from_sessions),
        add_derived_session: derived_session(p.session_id)?,
        created_by: p.created_by,
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
    let p: params::ListPatterns = args.parse("knowledge.list_patterns")?;
    // The filter as one object, or its fields flat.
    let f = p.filter.unwrap_or(params::PatternFilter {
        tags: p.tags,
        search: p.search,
        limit: p.limit,
        offset: p.offset,
        sort_by: p.sort_by,
        sort_order: p.sort_order,
        include_content: p.include_content,
    });
    let filter = PatternFilter {
        tags: params::tag_filter(f.tags)?,
        search: params::search_text("search", f.search)?,
        limit: f.limit.get("limit")?,
        offset: f.offset.unwrap_or(0),
        sort_by: f.sort_by.map(Into::into),
        sort_order: f.sort_order.map_or(SortOrder::Desc, Into::into),
    };
    // `includeContent: false`: a page without each pattern's text (a page
    // of extracted learnings runs to ~1.2 KB a pattern).
    let with_content = f.include_content.unwrap_or(true);
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
    let p: params::WriteScratchpad = args.parse("knowledge.write_scratchpad")?;
    let topic = check_topic("topic", &p.topic)?;
    let content = p.content;
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
    let p: params::KnowledgeSearch = args.parse("knowledge.search")?;
    let query = params::search_text("query", Some(p.query))?
        .ok_or_else(|| Error::invalid("query", "query must not be blank"))?;
    let limit = p.limit.get("limit")?;
    let include = p
        .include
        .unwrap_or_else(|| vec![params::KnowledgeInclude::Patterns, params::KnowledgeInclude::Notes]);
    let (want_p, want_n) = (
        include.contains(&params::KnowledgeInclude::Patterns),
        include.contains(&params::KnowledgeInclude::Notes),
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
