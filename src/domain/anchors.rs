//! Cross-session anchors: `@<keyword>:S<n>` or `@<keyword>:S<a>-S<b>` in a
//! thought's text points at thoughts of another session, named by a
//! keyword rather than an id. A JSON `session export` resolves them
//! (`resolveAnchors`, default true) into `crossReferences`: the sessions
//! each keyword may mean, best first, and the one chosen when the match
//! is clear. The keyword matches a session's tag exactly (confidence 0.95)
//! or the words of its title (0.85 times the share of the keyword's words
//! found there; under 0.6 is no match).

use serde::Serialize;

/// The longest range an anchor may span: `S1-S1000000` names no thoughts
/// rather than a million numbers.
const MAX_RANGE: u32 = 1_000;
/// Candidates kept per anchor.
const MAX_CANDIDATES: usize = 5;
const TAG_CONFIDENCE: f64 = 0.95;
const TITLE_WEIGHT: f64 = 0.85;
const MIN_CONFIDENCE: f64 = 0.6;

/// One anchor as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Anchor {
    /// As written: `@auth-design:S3-S5`.
    pub raw: String,
    pub keyword: String,
    /// The part after the colon: `S3-S5`.
    pub thought_ref: String,
    /// The thoughts it names; none for a descending or too long range.
    pub thought_numbers: Vec<u32>,
}

/// A session the ledger holds, as the matching needs it.
#[derive(Debug, Clone)]
pub struct SessionRef {
    pub id: String,
    pub title: String,
    pub tags: Vec<String>,
    pub thought_count: u64,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    pub session_id: String,
    pub title: String,
    pub thought_count: u64,
    pub created_at: String,
    /// `tag` or `title`.
    pub match_reason: &'static str,
    pub confidence: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Resolved,
    Ambiguous,
    Unresolved,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Selected {
    pub session_id: String,
    pub thoughts: Vec<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    pub anchor: Anchor,
    pub status: Status,
    pub candidates: Vec<Candidate>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selected: Option<Selected>,
}

/// The anchors of one thought.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThoughtAnchors {
    pub thought_number: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_id: Option<String>,
    pub anchors: Vec<Resolution>,
}

/// `crossReferences` of a JSON export.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CrossReferences {
    /// Thoughts with at least one anchor.
    pub anchors_found: usize,
    pub resolved: usize,
    pub ambiguous: usize,
    pub unresolved: usize,
    pub details: Vec<ThoughtAnchors>,
}

/// The anchors in `text`, in order. An `@` inside a word (an e-mail
/// address) starts none.
pub fn find(text: &str) -> Vec<Anchor> {
    let mut found = Vec::new();
    let mut previous: Option<char> = None;
    for (at, c) in text.char_indices() {
        let starts = c == '@' && !previous.is_some_and(is_keyword_char);
        previous = Some(c);
        if !starts {
            continue;
        }
        if let Some(anchor) = anchor_at(&text[at + 1..]) {
            found.push(anchor);
        }
    }
    found
}

fn is_keyword_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// The anchor `rest` (the text after an `@`) starts with.
fn anchor_at(rest: &str) -> Option<Anchor> {
    let keyword_len = rest.find(|c: char| !is_keyword_char(c)).unwrap_or(rest.len());
    let keyword = &rest[..keyword_len];
    let reference = rest[keyword_len..].strip_prefix(':')?;
    let (first, after) = thought_number(reference)?;
    let (last, used) = match after.strip_prefix('-').and_then(thought_number) {
        Some((last, tail)) => (Some(last), reference.len() - tail.len()),
        None => (None, reference.len() - after.len()),
    };
    // `S3x` is no anchor: the reference must end where a word would.
    if reference[used..].chars().next().is_some_and(is_keyword_char) || keyword.trim_matches('-').is_empty() {
        return None;
    }
    let thought_numbers = match last {
        None => vec![first],
        Some(last) if last >= first && last - first < MAX_RANGE => (first..=last).collect(),
        Some(_) => Vec::new(),
    };
    let thought_ref = &reference[..used];
    Some(Anchor {
        raw: format!("@{keyword}:{thought_ref}"),
        keyword: keyword.to_string(),
        thought_ref: thought_ref.to_string(),
        thought_numbers,
    })
}

/// `S<n>` (n ≥ 1) at the start of `s`, and what follows it.
fn thought_number(s: &str) -> Option<(u32, &str)> {
    let digits = s.strip_prefix('S').or_else(|| s.strip_prefix('s'))?;
    let len = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    let n: u32 = digits[..len].parse().ok().filter(|n| *n >= 1)?;
    Some((n, &digits[len..]))
}

/// Resolve `anchor` against `sessions`.
pub fn resolve(anchor: Anchor, sessions: &[SessionRef]) -> Resolution {
    let mut candidates: Vec<Candidate> = sessions
        .iter()
        .filter_map(|s| {
            let (match_reason, confidence) = score(&anchor.keyword, s)?;
            Some(Candidate {
                session_id: s.id.clone(),
                title: s.title.clone(),
                thought_count: s.thought_count,
                created_at: s.created_at.clone(),
                match_reason,
                confidence,
            })
        })
        .collect();
    // Best first; among equals the newest session.
    candidates.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then_with(|| b.created_at.cmp(&a.created_at))
    });
    candidates.truncate(MAX_CANDIDATES);
    let clear = match candidates.as_slice() {
        [only] => Some(only),
        [best, second, ..] if best.confidence >= TAG_CONFIDENCE && second.confidence < TAG_CONFIDENCE => Some(best),
        _ => None,
    };
    let (status, selected) = match clear {
        Some(c) => (
            Status::Resolved,
            Some(Selected {
                session_id: c.session_id.clone(),
                thoughts: anchor.thought_numbers.clone(),
            }),
        ),
        None if candidates.is_empty() => (Status::Unresolved, None),
        None => (Status::Ambiguous, None),
    };
    Resolution {
        anchor,
        status,
        candidates,
        selected,
    }
}

/// How well `keyword` names `session`: a tag equal to it, else the share
/// of its words (split at `-`, `_`) that a title word contains or is
/// contained in.
fn score(keyword: &str, session: &SessionRef) -> Option<(&'static str, f64)> {
    if session.tags.iter().any(|t| t.eq_ignore_ascii_case(keyword)) {
        return Some(("tag", TAG_CONFIDENCE));
    }
    let wanted: Vec<String> = keyword
        .split(['-', '_'])
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect();
    let title: Vec<String> = session
        .title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .collect();
    if wanted.is_empty() || title.is_empty() {
        return None;
    }
    let matched = wanted
        .iter()
        .filter(|w| {
            title
                .iter()
                .any(|t| t.contains(w.as_str()) || (t.chars().count() >= 3 && w.contains(t.as_str())))
        })
        .count();
    let confidence = TITLE_WEIGHT * matched as f64 / wanted.len() as f64;
    // Two decimals: the figure is a ranking hint, not a measurement.
    let confidence = (confidence * 100.0).round() / 100.0;
    (confidence >= MIN_CONFIDENCE).then_some(("title", confidence))
}

/// The anchors of one thought: its number, its branch, and the anchors.
pub type Found = (u64, Option<String>, Vec<Anchor>);

/// The thoughts (number, branch, text) that have anchors, with them.
pub fn find_in<'a>(thoughts: impl IntoIterator<Item = (u64, Option<String>, &'a str)>) -> Vec<Found> {
    thoughts
        .into_iter()
        .map(|(n, branch, text)| (n, branch, find(text)))
        .filter(|(_, _, anchors)| !anchors.is_empty())
        .collect()
}

/// `crossReferences`: each anchor of `found` resolved against `sessions`.
pub fn cross_references(found: Vec<Found>, sessions: &[SessionRef]) -> CrossReferences {
    let mut refs = CrossReferences {
        anchors_found: found.len(),
        resolved: 0,
        ambiguous: 0,
        unresolved: 0,
        details: Vec::with_capacity(found.len()),
    };
    for (thought_number, branch_id, anchors) in found {
        let anchors: Vec<Resolution> = anchors.into_iter().map(|a| resolve(a, sessions)).collect();
        for a in &anchors {
            match a.status {
                Status::Resolved => refs.resolved += 1,
                Status::Ambiguous => refs.ambiguous += 1,
                Status::Unresolved => refs.unresolved += 1,
            }
        }
        refs.details.push(ThoughtAnchors {
            thought_number,
            branch_id,
            anchors,
        });
    }
    refs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, title: &str, tags: &[&str], created_at: &str) -> SessionRef {
        SessionRef {
            id: id.into(),
            title: title.into(),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            thought_count: 7,
            created_at: created_at.into(),
        }
    }

    #[test]
    fn anchors_are_found_as_written() {
        let a = find("see @auth-design:S3 and @cache:S2-S4, then (@db_plan:s10).");
        let raw: Vec<&str> = a.iter().map(|a| a.raw.as_str()).collect();
        assert_eq!(raw, ["@auth-design:S3", "@cache:S2-S4", "@db_plan:s10"]);
        assert_eq!(a[0].keyword, "auth-design");
        assert_eq!(a[0].thought_numbers, [3]);
        assert_eq!(a[1].thought_ref, "S2-S4");
        assert_eq!(a[1].thought_numbers, [2, 3, 4]);
        assert_eq!(a[2].thought_numbers, [10]);
    }

    #[test]
    fn what_is_no_anchor() {
        for text in [
            "mail me at ann@host:S1",
            "@auth:S0",
            "@auth:T3",
            "@auth:S3x",
            "@:S3",
            "@--:S3",
            "@auth S3",
            "@auth:S99999999999",
        ] {
            assert_eq!(find(text), [], "{text}");
        }
        // A descending or huge range names no thoughts, but is an anchor.
        assert_eq!(find("@a:S5-S2")[0].thought_numbers, Vec::<u32>::new());
        assert_eq!(find("@a:S1-S5000")[0].thought_numbers, Vec::<u32>::new());
        // A reference runs to the end of a word: `S5-` is none.
        assert_eq!(find("@a:S5-"), []);
        assert_eq!(find("@a:S5.")[0].raw, "@a:S5");
    }

    #[test]
    fn a_tag_beats_a_title_and_settles_it() {
        let sessions = [
            session("t", "Caching layer", &["auth-design"], "2026-01-01"),
            session("w", "Auth design review", &[], "2026-02-01"),
        ];
        let r = resolve(find("@auth-design:S2")[0].clone(), &sessions);
        assert_eq!(r.status, Status::Resolved);
        assert_eq!(r.candidates[0].session_id, "t");
        assert_eq!(r.candidates[0].match_reason, "tag");
        assert_eq!(r.candidates[1].confidence, 0.85);
        assert_eq!(r.selected.unwrap().session_id, "t");
    }

    #[test]
    fn titles_alone_are_ambiguous_unless_one_matches() {
        let sessions = [
            session("a", "Auth design", &[], "2026-01-01"),
            session("b", "Design of auth tokens", &[], "2026-03-01"),
            session("c", "Unrelated", &[], "2026-02-01"),
        ];
        let r = resolve(find("@auth-design:S1")[0].clone(), &sessions);
        assert_eq!(r.status, Status::Ambiguous);
        // Equal scores: the newest first.
        let ids: Vec<&str> = r.candidates.iter().map(|c| c.session_id.as_str()).collect();
        assert_eq!(ids, ["b", "a"]);
        assert!(r.selected.is_none());
        let r = resolve(find("@tokens:S1")[0].clone(), &sessions);
        assert_eq!(r.status, Status::Resolved);
        // Half the words is 0.43: no match.
        let r = resolve(find("@auth-billing:S1")[0].clone(), &sessions);
        assert_eq!(r.status, Status::Unresolved);
        assert!(r.candidates.is_empty());
    }

    #[test]
    fn each_thought_with_anchors_is_counted_once() {
        let found = find_in([(1, None, "plain"), (2, Some("alt".into()), "@x:S1 @y:S2")]);
        assert_eq!(found.len(), 1);
        let refs = cross_references(found, &[session("s", "X marks", &["x"], "2026-01-01")]);
        assert_eq!((refs.anchors_found, refs.resolved, refs.unresolved), (1, 1, 1));
        assert_eq!(refs.details[0].thought_number, 2);
        assert_eq!(refs.details[0].branch_id.as_deref(), Some("alt"));
    }
}
