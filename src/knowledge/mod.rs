//! The knowledge garden: reusable reasoning patterns (KnowledgePattern) and
//! scratchpad notes (ScratchpadNote). Types, slugs and validation live here;
//! `store::knowledge` keeps them in SQLite with full-text indexes.

use serde::Serialize;

use crate::domain::{SortBy, SortOrder};
use crate::error::{Error, Result};

/// Longest slug (pattern and note ids), in bytes; ids are ASCII.
pub const MAX_SLUG: usize = 64;
/// Longest pattern title or note topic, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 2_000;
/// Largest pattern or note content, in bytes (1 MiB, as a thought).
pub const MAX_CONTENT_BYTES: usize = 1 << 20;
/// Most tags on a pattern, and longest tag.
pub const MAX_TAGS: usize = 32;
pub const MAX_TAG_CHARS: usize = 64;

/// The ASCII spelling of common accented Latin letters, so that "Café" and
/// "Über" keep their words in a slug.
fn ascii_of(c: char) -> Option<&'static str> {
    Some(match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ă' | 'ą' => "a",
        'æ' => "ae",
        'ç' | 'ć' | 'č' => "c",
        'ď' | 'đ' | 'ð' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ė' | 'ę' | 'ě' => "e",
        'ğ' => "g",
        'ì' | 'í' | 'î' | 'ï' | 'ī' | 'į' | 'ı' => "i",
        'ł' | 'ľ' => "l",
        'ñ' | 'ń' | 'ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => "o",
        'œ' => "oe",
        'ř' => "r",
        'ś' | 'š' | 'ş' => "s",
        'ß' => "ss",
        'ť' | 'ţ' => "t",
        'þ' => "th",
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' | 'ų' => "u",
        'ý' | 'ÿ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        _ => return None,
    })
}

/// A URL-safe slug: lower-case ASCII letters and digits, words joined by
/// single `-`, at most [`MAX_SLUG`] bytes. Accented Latin letters lose their
/// accents; other characters separate words. Empty when nothing is left.
pub fn slugify(text: &str) -> String {
    let mut out = full_slug(text);
    if out.len() > MAX_SLUG {
        out.truncate(MAX_SLUG);
    }
    out.trim_end_matches('-').to_string()
}

/// [`slugify`] without the length limit.
pub fn full_slug(text: &str) -> String {
    let mut out = String::new();
    let mut gap = false;
    for c in text.chars().flat_map(char::to_lowercase) {
        let piece: Option<std::borrow::Cow<'_, str>> = if c.is_ascii_alphanumeric() {
            Some(c.to_string().into())
        } else {
            ascii_of(c).map(Into::into)
        };
        match piece {
            Some(p) => {
                if gap && !out.is_empty() {
                    out.push('-');
                }
                gap = false;
                out.push_str(&p);
            }
            None => gap = true,
        }
    }
    out
}

/// FNV-1a, 64 bits: stable across runs and platforms.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A slug too long for [`MAX_SLUG`], cut and made distinct by a hash of
/// the whole: `<first 47 bytes>-<16 hex digits>`.
pub fn hashed_slug(full: &str) -> String {
    let mut stem = full.to_string();
    stem.truncate(MAX_SLUG - 17);
    format!("{}-{:016x}", stem.trim_end_matches('-'), fnv1a(full.as_bytes()))
}

/// The id for text that has no ASCII letters or digits at all (a title in
/// another script): a stable hash, so the same topic always gets the same id.
pub fn fallback_slug(prefix: &str, text: &str) -> String {
    format!("{prefix}-{:016x}", fnv1a(text.trim().as_bytes()))
}

/// The slug of `text`, or its hash-based fallback.
pub fn slug_or_fallback(prefix: &str, text: &str) -> String {
    let s = slugify(text);
    if s.is_empty() { fallback_slug(prefix, text) } else { s }
}

/// How a call names a scratchpad note: by its id, or by its topic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteRef {
    Id(String),
    Topic(String),
}

/// `base`, or `base-2`, `base-3`... : a candidate `taken` says is free,
/// found in O(log n) lookups for n collisions. While the numbered slugs run
/// without a gap (2 to m), that is the next one, `base-{m+1}`; where some
/// were deleted, a free one above a taken one (never a deleted pattern's
/// slug below the highest, as long as the run is unbroken). The base is
/// shortened so that the suffix fits in [`MAX_SLUG`].
pub fn unique_slug(base: &str, mut taken: impl FnMut(&str) -> Result<bool>) -> Result<String> {
    if !taken(base)? {
        return Ok(base.to_string());
    }
    let candidate = |k: u64| {
        let suffix = format!("-{k}");
        let mut stem = base.to_string();
        stem.truncate(MAX_SLUG - suffix.len());
        format!("{}{suffix}", stem.trim_end_matches('-'))
    };
    // `low` is taken (1 stands for the base itself), `high` is free.
    let mut low = 1u64;
    let mut high = 2u64;
    while taken(&candidate(high))? {
        low = high;
        high = high
            .checked_mul(2)
            .ok_or_else(|| Error::Internal("no free slug".into()))?;
    }
    while high - low > 1 {
        let mid = low + (high - low) / 2;
        if taken(&candidate(mid))? {
            low = mid;
        } else {
            high = mid;
        }
    }
    Ok(candidate(high))
}

/// Whether `id` has the shape of a slug (`^[a-z0-9-]+$`, at most 80 bytes).
pub fn is_slug(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 80
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// A reasoning pattern (KnowledgePattern).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgePattern {
    pub id: String,
    pub title: String,
    pub description: String,
    pub tags: Vec<String>,
    pub content: String,
    pub derived_from_sessions: Vec<String>,
    pub created_by: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// CreatePatternParams after validation.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewPattern {
    pub title: String,
    pub description: String,
    pub tags: Vec<String>,
    pub content: String,
    pub derived_from_sessions: Vec<String>,
    pub created_by: Option<String>,
}

/// The fields `update_pattern` may change; `None` keeps the stored value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PatternUpdate {
    pub title: Option<String>,
    pub description: Option<String>,
    pub tags: Option<Vec<String>>,
    pub content: Option<String>,
    pub derived_from_sessions: Option<Vec<String>>,
    /// One session added to the sessions the pattern was derived from (the
    /// ones it has, or `derived_from_sessions` when given), kept once.
    pub add_derived_session: Option<String>,
    pub created_by: Option<String>,
}

impl PatternUpdate {
    pub fn is_empty(&self) -> bool {
        *self == PatternUpdate::default()
    }
}

/// PatternFilter: tags (all must match), full-text search, paging, sorting.
/// With `search` and no explicit `sortBy`, results come best match first.
#[derive(Debug, Clone, PartialEq)]
pub struct PatternFilter {
    pub tags: Vec<String>,
    pub search: Option<String>,
    pub limit: u32,
    pub offset: u32,
    pub sort_by: Option<SortBy>,
    pub sort_order: SortOrder,
}

impl Default for PatternFilter {
    fn default() -> Self {
        PatternFilter {
            tags: Vec::new(),
            search: None,
            limit: 20,
            offset: 0,
            sort_by: None,
            sort_order: SortOrder::Desc,
        }
    }
}

/// A pattern in a list, with a search snippet when the list was a search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PatternListItem {
    #[serde(flatten)]
    pub pattern: KnowledgePattern,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snippet: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PatternPage {
    pub patterns: Vec<PatternListItem>,
    pub count: usize,
    pub total: u64,
    pub has_more: bool,
}

/// A tag with the number of patterns carrying it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TagCount {
    pub name: String,
    pub count: u64,
}

/// A scratchpad note (ScratchpadNote).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScratchpadNote {
    pub id: String,
    pub title: String,
    pub content: String,
    pub created_at: String,
    pub updated_at: String,
}

/// A full-text hit in the garden.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct KnowledgeHit {
    pub id: String,
    pub title: String,
    pub snippet: String,
    pub score: f64,
    pub uri: String,
}

/// What a knowledge search found in one kind (patterns or notes): the best
/// `limit` matches, and whether it stopped short.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KnowledgeHits {
    pub hits: Vec<KnowledgeHit>,
    /// More matched than `hits` holds.
    pub more: bool,
    /// More matched than the search ranks: `hits` are the best of this
    /// many newest matches, and an older one may have scored higher.
    pub ranked_newest: Option<usize>,
}

/// The MCP resource URI of a pattern.
pub fn pattern_uri(id: &str) -> String {
    format!("thoughtbox://knowledge/patterns/{id}")
}

/// The MCP resource URI of a note.
pub fn note_uri(id: &str) -> String {
    format!("thoughtbox://knowledge/notes/{id}")
}

fn check_title(field: &str, title: &str) -> Result<String> {
    let t = title.trim();
    if crate::domain::is_blank(t) {
        return Err(Error::invalid(
            field,
            format!("{field} must not be empty (spaces and invisible characters alone do not count)"),
        ));
    }
    if t.chars().count() > MAX_TITLE_CHARS {
        return Err(Error::invalid(
            field,
            format!("{field} is at most {MAX_TITLE_CHARS} characters"),
        ));
    }
    Ok(t.to_string())
}

fn check_description(d: &str) -> Result<String> {
    let d = d.trim();
    if d.is_empty() {
        return Err(Error::invalid("description", "description must not be empty"));
    }
    if d.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(Error::invalid(
            "description",
            format!("description is at most {MAX_DESCRIPTION_CHARS} characters"),
        ));
    }
    Ok(d.to_string())
}

/// Content: at most 1 MiB; `allow_empty` for notes (a note may be cleared).
pub fn check_content(content: &str, allow_empty: bool) -> Result<()> {
    if !allow_empty && content.trim().is_empty() {
        return Err(Error::invalid("content", "content must not be empty"));
    }
    if content.contains('\0') {
        return Err(Error::invalid(
            "content",
            "content must not contain NUL characters (U+0000)",
        ));
    }
    if content.len() > MAX_CONTENT_BYTES {
        return Err(Error::invalid_with(
            "content",
            format!(
                "content is {} bytes; the limit is {MAX_CONTENT_BYTES} bytes (1 MiB)",
                content.len()
            ),
            serde_json::json!({ "maxBytes": MAX_CONTENT_BYTES }),
        ));
    }
    Ok(())
}

/// Tags: trimmed, non-empty, at most [`MAX_TAG_CHARS`] each and [`MAX_TAGS`]
/// in all; duplicates dropped, order kept.
pub fn check_tags(tags: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for t in tags {
        let t = t.trim();
        if t.is_empty() {
            return Err(Error::invalid("tags", "tags must be non-empty strings"));
        }
        if t.chars().count() > MAX_TAG_CHARS {
            return Err(Error::invalid(
                "tags",
                format!("a tag is at most {MAX_TAG_CHARS} characters"),
            ));
        }
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    if out.len() > MAX_TAGS {
        return Err(Error::invalid("tags", format!("at most {MAX_TAGS} tags")));
    }
    Ok(out)
}

fn check_sessions(ids: &[String]) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for id in ids {
        let id = id.trim();
        if id.is_empty() {
            return Err(Error::invalid(
                "derivedFromSessions",
                "derivedFromSessions must hold session ids",
            ));
        }
        if !out.iter().any(|o| o == id) {
            out.push(id.to_string());
        }
    }
    Ok(out)
}

fn check_created_by(c: &str) -> Result<String> {
    let c = c.trim();
    if c.is_empty() || c.chars().count() > MAX_TITLE_CHARS {
        return Err(Error::invalid(
            "createdBy",
            format!("createdBy must be 1 to {MAX_TITLE_CHARS} characters"),
        ));
    }
    Ok(c.to_string())
}

impl NewPattern {
    /// Check every field (sessions are checked for existence by the store).
    pub fn validated(self) -> Result<NewPattern> {
        let title = check_title("title", &self.title)?;
        let description = check_description(&self.description)?;
        check_content(&self.content, false)?;
        Ok(NewPattern {
            title,
            description,
            tags: check_tags(&self.tags)?,
            content: self.content,
            derived_from_sessions: check_sessions(&self.derived_from_sessions)?,
            created_by: self.created_by.as_deref().map(check_created_by).transpose()?,
        })
    }
}

impl PatternUpdate {
    pub fn validated(self) -> Result<PatternUpdate> {
        if self.is_empty() {
            return Err(Error::invalid(
                "title",
                "update_pattern needs at least one of title, description, content, tags, derivedFromSessions, sessionId, createdBy",
            ));
        }
        if let Some(c) = &self.content {
            check_content(c, false)?;
        }
        Ok(PatternUpdate {
            title: self.title.as_deref().map(|t| check_title("title", t)).transpose()?,
            description: self.description.as_deref().map(check_description).transpose()?,
            tags: self.tags.as_deref().map(check_tags).transpose()?,
            content: self.content,
            derived_from_sessions: self.derived_from_sessions.as_deref().map(check_sessions).transpose()?,
            add_derived_session: match self.add_derived_session {
                Some(id) => check_sessions(std::slice::from_ref(&id))?.pop(),
                None => None,
            },
            created_by: self.created_by.as_deref().map(check_created_by).transpose()?,
        })
    }
}

/// A note's topic: trimmed, 1 to 200 characters.
/// A note's topic, checked as a title; errors name `field` (`topic`, or
/// `title` where a client names the topic that way).
pub fn check_topic(field: &str, topic: &str) -> Result<String> {
    check_title(field, topic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slugify("API Design Ideas"), "api-design-ideas");
        assert_eq!(slugify("  Debugging: race conditions!! "), "debugging-race-conditions");
        assert_eq!(slugify("snake_case and--dashes"), "snake-case-and-dashes");
        assert_eq!(slugify("Café über Straße"), "cafe-uber-strasse");
        assert_eq!(slugify("日本語"), "");
        assert_eq!(slugify("x".repeat(100).as_str()).len(), MAX_SLUG);
        assert!(is_slug(&slugify("a b c")));
        let f = slug_or_fallback("note", "日本語");
        assert!(f.starts_with("note-") && is_slug(&f));
        assert_eq!(f, slug_or_fallback("note", "日本語"));
        assert_ne!(f, slug_or_fallback("note", "中文"));
    }

    #[test]
    fn long_slugs_are_cut_with_a_hash_of_the_whole() {
        let a = full_slug(&format!("{} part 1", "planning review ".repeat(5)));
        let b = full_slug(&format!("{} part 2", "planning review ".repeat(5)));
        assert!(a.len() > MAX_SLUG);
        let (ha, hb) = (hashed_slug(&a), hashed_slug(&b));
        assert_ne!(ha, hb);
        assert!(ha.len() <= MAX_SLUG && is_slug(&ha) && is_slug(&hb), "{ha} {hb}");
        assert_eq!(ha, hashed_slug(&a));
        assert_eq!(slugify(&a), slugify(&b), "the plain cut collides");
    }

    #[test]
    fn collisions_get_numbered_suffixes() {
        let taken = ["a", "a-2"];
        let s = unique_slug("a", |c| Ok(taken.contains(&c))).unwrap();
        assert_eq!(s, "a-3");
        // A run of 5,000: the next, in a few lookups rather than 5,000.
        let mut lookups = 0;
        let s = unique_slug("b", |c| {
            lookups += 1;
            Ok(c == "b"
                || c.strip_prefix("b-")
                    .and_then(|k| k.parse::<u32>().ok())
                    .is_some_and(|k| k <= 5000))
        })
        .unwrap();
        assert_eq!(s, "b-5001");
        assert!(lookups < 30, "{lookups}");
        let long = "x".repeat(MAX_SLUG);
        let s = unique_slug(&long, |c| Ok(c == long)).unwrap();
        assert!(s.ends_with("-2") && s.len() <= MAX_SLUG);
    }

    #[test]
    fn validation() {
        let ok = NewPattern {
            title: " T ".into(),
            description: "d".into(),
            content: "c".into(),
            tags: vec!["a".into(), "a".into(), "b".into()],
            ..Default::default()
        }
        .validated()
        .unwrap();
        assert_eq!(ok.title, "T");
        assert_eq!(ok.tags, ["a", "b"]);
        let bad = |p: NewPattern, field: &str| {
            let e = p.validated().unwrap_err();
            assert_eq!(e.details().unwrap()["field"], field);
        };
        let base = NewPattern {
            title: "t".into(),
            description: "d".into(),
            content: "c".into(),
            ..Default::default()
        };
        bad(
            NewPattern {
                title: " ".into(),
                ..base.clone()
            },
            "title",
        );
        bad(
            NewPattern {
                description: "".into(),
                ..base.clone()
            },
            "description",
        );
        bad(
            NewPattern {
                content: "x".repeat(MAX_CONTENT_BYTES + 1),
                ..base.clone()
            },
            "content",
        );
        bad(
            NewPattern {
                tags: vec![" ".into()],
                ..base.clone()
            },
            "tags",
        );
        assert!(PatternUpdate::default().validated().is_err());
    }
}
