//! The answers of `knowledge`: patterns and scratchpad notes as the garden
//! holds them, each with its resource URI.
//!
//! A pattern or a note is answered field by field (borrowed) rather than
//! flattened, since a page may leave its `content` out; a unit test keeps
//! the fields in step with [`KnowledgePattern`] and [`ScratchpadNote`].

use serde::Serialize;

use crate::knowledge::{
    KnowledgeHit, KnowledgeHits, KnowledgePattern, PatternListItem, ScratchpadNote, TagCount, note_uri, pattern_uri,
};

/// A pattern: `create_pattern`, `get_pattern`, `update_pattern`, and each
/// item of `list_patterns`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PatternView<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub description: &'a str,
    pub tags: &'a [String],
    /// Left out of a page with `includeContent: false`; cut in a page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<&'a str>,
    /// The whole content's length in characters, when a page cut it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_chars: Option<usize>,
    pub derived_from_sessions: &'a [String],
    /// `null` when nobody was named.
    pub created_by: Option<&'a str>,
    pub created_at: &'a str,
    pub updated_at: &'a str,
    pub uri: String,
    /// With a `search`: where it matched, and how well.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

impl<'a> PatternView<'a> {
    pub(crate) fn of(p: &'a KnowledgePattern) -> PatternView<'a> {
        PatternView {
            id: &p.id,
            title: &p.title,
            description: &p.description,
            tags: &p.tags,
            content: Some(&p.content),
            content_chars: None,
            derived_from_sessions: &p.derived_from_sessions,
            created_by: p.created_by.as_deref(),
            created_at: &p.created_at,
            updated_at: &p.updated_at,
            uri: pattern_uri(&p.id),
            snippet: None,
            score: None,
        }
    }

    /// An item of a page, with its text cut unless `with_content` is
    /// false (`get_pattern` answers one whole).
    pub(crate) fn item(item: &'a PatternListItem, with_content: bool) -> PatternView<'a> {
        let (content, content_chars) = page_content(&item.pattern.content, with_content);
        PatternView {
            content,
            content_chars,
            snippet: item.snippet.as_deref(),
            score: item.score,
            ..PatternView::of(&item.pattern)
        }
    }
}

/// A scratchpad note: `read_scratchpad`, and each item of `list_scratchpad`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NoteView<'a> {
    pub id: &'a str,
    pub title: &'a str,
    /// Left out of a page with `includeContent: false`; cut in a page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<&'a str>,
    /// The whole content's length in characters, when a page cut it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content_chars: Option<usize>,
    pub created_at: &'a str,
    pub updated_at: &'a str,
    pub uri: String,
}

impl<'a> NoteView<'a> {
    pub(crate) fn of(n: &'a ScratchpadNote, with_content: bool) -> NoteView<'a> {
        NoteView {
            id: &n.id,
            title: &n.title,
            content: with_content.then_some(n.content.as_str()),
            content_chars: None,
            created_at: &n.created_at,
            updated_at: &n.updated_at,
            uri: note_uri(&n.id),
        }
    }

    /// An item of a page, with its text cut unless `with_content` is
    /// false (`read_scratchpad` answers one whole).
    pub(crate) fn item(n: &'a ScratchpadNote, with_content: bool) -> NoteView<'a> {
        let (content, content_chars) = page_content(&n.content, with_content);
        NoteView {
            content,
            content_chars,
            ..NoteView::of(n, false)
        }
    }
}

/// A content as a page of a list shows it: cut to
/// [`PREVIEW_CHARS`](crate::gateway::preview::PREVIEW_CHARS) characters, with its whole length when cut.
fn page_content(text: &str, with_content: bool) -> (Option<&str>, Option<usize>) {
    if !with_content {
        return (None, None);
    }
    match text.char_indices().nth(crate::gateway::preview::PREVIEW_CHARS) {
        Some((at, _)) => (Some(&text[..at]), Some(text.chars().count())),
        None => (Some(text), None),
    }
}

/// `write_scratchpad`: the note, and whether the topic was new.
#[derive(Debug, Serialize)]
pub(crate) struct NoteWrittenAnswer<'a> {
    #[serde(flatten)]
    pub note: NoteView<'a>,
    pub created: bool,
    /// A note is one per topic: writing the topic again replaced its text.
    pub replaced: bool,
}

/// `delete_pattern` and `delete_scratchpad`.
#[derive(Debug, Serialize)]
pub(crate) struct DeletedAnswer {
    pub id: String,
    pub title: String,
    pub deleted: bool,
}

/// `list_tags`: the patterns' tags, each with how many carry it.
#[derive(Debug, Serialize)]
pub(crate) struct PatternTagsAnswer {
    pub count: usize,
    pub tags: Vec<TagCount>,
}

/// `list_patterns`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PatternListAnswer<'a> {
    pub patterns: Vec<PatternView<'a>>,
    pub count: usize,
    pub total: u64,
    pub has_more: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<&'static str>,
}

/// `list_scratchpad`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct NoteListAnswer<'a> {
    pub notes: Vec<NoteView<'a>>,
    pub count: usize,
    pub total: u64,
    pub has_more: bool,
}

/// `knowledge search`: patterns and notes found together.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct KnowledgeSearchAnswer {
    pub query: String,
    pub count: usize,
    pub patterns: Vec<KnowledgeHit>,
    pub notes: Vec<KnowledgeHit>,
    pub limit: u32,
    /// Patterns or notes stopped at `limit`.
    pub limit_reached: bool,
    /// Whether the patterns stopped short, when patterns were searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more_patterns: Option<bool>,
    /// More patterns matched than the search ranks: the hits are the best of
    /// this many newest.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub patterns_ranked_newest: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub more_notes: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes_ranked_newest: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl KnowledgeSearchAnswer {
    /// What `query` found of each kind searched (`None`: not searched).
    pub(crate) fn new(
        query: String,
        limit: u32,
        patterns: Option<KnowledgeHits>,
        notes: Option<KnowledgeHits>,
    ) -> KnowledgeSearchAnswer {
        let (more_patterns, patterns_ranked_newest) = stopped(patterns.as_ref());
        let (more_notes, notes_ranked_newest) = stopped(notes.as_ref());
        let (patterns, notes) = (patterns.unwrap_or_default(), notes.unwrap_or_default());
        KnowledgeSearchAnswer {
            query,
            count: patterns.hits.len() + notes.hits.len(),
            limit,
            limit_reached: patterns.more || notes.more,
            patterns: patterns.hits,
            notes: notes.hits,
            more_patterns,
            patterns_ranked_newest,
            more_notes,
            notes_ranked_newest,
            note: None,
        }
    }
}

fn stopped(found: Option<&KnowledgeHits>) -> (Option<bool>, Option<usize>) {
    (found.map(|f| f.more), found.and_then(|f| f.ranked_newest))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::gateway::answers::{NoteHits, PatternHits, to_value};

    fn pattern() -> KnowledgePattern {
        KnowledgePattern {
            id: "p".into(),
            title: "t".into(),
            description: "d".into(),
            tags: vec!["x".into()],
            content: "c".into(),
            derived_from_sessions: vec!["s".into()],
            created_by: None,
            created_at: "a".into(),
            updated_at: "b".into(),
        }
    }

    /// `v` as the garden serializes it, with its URI.
    fn with_uri(v: &impl Serialize, uri: String) -> Value {
        let mut v = to_value(v).unwrap();
        v["uri"] = json!(uri);
        v
    }

    #[test]
    fn a_pattern_is_answered_with_every_field_it_has() {
        let p = pattern();
        assert_eq!(to_value(&PatternView::of(&p)).unwrap(), with_uri(&p, pattern_uri("p")));
        let item = PatternListItem {
            pattern: p,
            snippet: Some("s".into()),
            score: Some(0.5),
        };
        let mut listed = with_uri(&item, pattern_uri("p"));
        assert_eq!(to_value(&PatternView::item(&item, true)).unwrap(), listed);
        listed.as_object_mut().unwrap().remove("content");
        assert_eq!(to_value(&PatternView::item(&item, false)).unwrap(), listed);
    }

    #[test]
    fn a_note_is_answered_with_every_field_it_has() {
        let n = ScratchpadNote {
            id: "n".into(),
            title: "t".into(),
            content: "c".into(),
            created_at: "a".into(),
            updated_at: "b".into(),
        };
        let mut whole = with_uri(&n, note_uri("n"));
        assert_eq!(to_value(&NoteView::of(&n, true)).unwrap(), whole);
        whole.as_object_mut().unwrap().remove("content");
        assert_eq!(to_value(&NoteView::of(&n, false)).unwrap(), whole);
    }

    #[test]
    fn a_search_says_how_each_kind_searched_stopped() {
        let found = || KnowledgeHits {
            hits: Vec::new(),
            more: true,
            ranked_newest: Some(7),
        };
        let both = to_value(&KnowledgeSearchAnswer::new("q".into(), 5, Some(found()), Some(found()))).unwrap();
        // Named as `session search` names them beside its sessions.
        for beside in [
            to_value(&PatternHits::from(found())).unwrap(),
            to_value(&NoteHits::from(found())).unwrap(),
        ] {
            for (key, value) in beside.as_object().unwrap() {
                assert_eq!(&both[key], value, "{key}");
            }
        }
        assert_eq!(both["limitReached"], true);
        let notes_only = to_value(&KnowledgeSearchAnswer::new("q".into(), 5, None, Some(found()))).unwrap();
        assert_eq!(notes_only["patterns"], json!([]));
        assert!(notes_only.get("morePatterns").is_none());
        assert!(notes_only.get("patternsRankedNewest").is_none());
        assert_eq!(notes_only["moreNotes"], true);
    }
}
