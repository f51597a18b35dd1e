//! Cross-session anchors: `@<keyword>:S<n>` or `@<keyword>:S<a>-S<b>` in a
//! thought's text points at thoughts of another session, named by a
//! keyword rather than an id. A JSON `session export` resolves them
//! (`resolveAnchors`, default true) into `crossReferences`: the sessions
//! each keyword may mean, best first, and the one chosen when the match
//! is clear. The keyword matches a session's tag exactly, letter case
//! aside (confidence 0.95), or the words of its title (0.85 times the
//! share of the keyword's words found there; under 0.6 is no match).
//!
//! Thought text is the agent's to write, so what an export resolves is
//! bounded: at most [`MAX_ANCHORS`] anchors and [`MAX_KEYWORDS`] keywords
//! (each matched once against the ledger), keywords of at most 64
//! characters, a range's first 100 thoughts; the rest is counted.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

/// The most thoughts a range names: `S1-S1000` names its first hundred
/// rather than a thousand numbers.
const MAX_RANGE: u32 = 100;
/// The longest keyword, as for tags and branch ids.
const MAX_KEYWORD_CHARS: usize = 64;
/// Anchors resolved per export.
pub const MAX_ANCHORS: usize = 1_000;
/// Distinct keywords (letter case aside) resolved per export.
pub const MAX_KEYWORDS: usize = 100;
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
    /// The thoughts it names: none for a descending range, the first
    /// [`MAX_RANGE`] of a longer one.
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
    /// Thoughts with at least one anchor, as the reference counts them;
    /// the three counts after it are of anchors.
    pub anchors_found: usize,
    pub resolved: usize,
    pub ambiguous: usize,
    pub unresolved: usize,
    /// Anchors past [`MAX_ANCHORS`], or with a keyword past
    /// [`MAX_KEYWORDS`]: found, not resolved.
    #[serde(skip_serializing_if = "is_zero")]
    pub anchors_omitted: usize,
    pub details: Vec<ThoughtAnchors>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The anchors in `text`, in order. An `@` inside a word (an e-mail
/// address) starts none.
pub fn anchors(text: &str) -> impl Iterator<Item = Anchor> + '_ {
    let mut previous: Option<char> = None;
    text.char_indices().filter_map(move |(at, c)| {
        let starts = c == '@' && !previous.is_some_and(is_keyword_char);
        previous = Some(c);
        starts.then(|| anchor_at(&text[at + 1..])).flatten()
    })
}

fn is_keyword_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// The anchor `rest` (the text after an `@`) starts with.
fn anchor_at(rest: &str) -> Option<Anchor> {
    let keyword_len = rest.find(|c: char| !is_keyword_char(c)).unwrap_or(rest.len());
    let keyword = &rest[..keyword_len];
    if keyword.chars().count() > MAX_KEYWORD_CHARS || !keyword.chars().any(char::is_alphanumeric) {
        return None;
    }
    let reference = rest[keyword_len..].strip_prefix(':')?;
    let (first, after) = thought_number(reference)?;
    let (last, used) = match after.strip_prefix('-').and_then(thought_number) {
        Some((last, tail)) => (Some(last), reference.len() - tail.len()),
        None => (None, reference.len() - after.len()),
    };
    // `S3x` is no anchor: the reference must end where a word would.
    if reference[used..].chars().next().is_some_and(is_keyword_char) {
        return None;
    }
    let thought_numbers = match last {
        None => vec![first],
        Some(last) if last >= first => (first..=last.min(first.saturating_add(MAX_RANGE - 1))).collect(),
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

/// The anchors of one thought: its number, its branch, and the anchors.
pub type Found = (u64, Option<String>, Vec<Anchor>);

/// What an export's thoughts (number, branch, text) hold: those with
/// anchors, with them, within the bounds; and how many anchors were left
/// out past them.
pub fn find_in<'a>(thoughts: impl IntoIterator<Item = (u64, Option<String>, &'a str)>) -> (Vec<Found>, usize) {
    let (mut found, mut kept, mut omitted) = (Vec::new(), 0, 0);
    let mut keywords: HashSet<String> = HashSet::new();
    for (n, branch, text) in thoughts {
        let mut here = Vec::new();
        for anchor in anchors(text) {
            let keyword = anchor.keyword.to_lowercase();
            let room = keywords.contains(&keyword) || keywords.len() < MAX_KEYWORDS;
            if kept < MAX_ANCHORS && room {
                keywords.insert(keyword);
                here.push(anchor);
                kept += 1;
            } else {
                omitted += 1;
            }
        }
        if !here.is_empty() {
            found.push((n, branch, here));
        }
    }
    (found, omitted)
}

/// A session as it is matched: its tags and title words in lower case.
struct Prepared<'a> {
    session: &'a SessionRef,
    tags: Vec<String>,
    words: Vec<String>,
}

/// Matches keywords against the ledger's sessions, each keyword once.
pub struct Matcher<'a> {
    sessions: Vec<Prepared<'a>>,
    known: HashMap<String, Vec<Candidate>>,
}

impl<'a> Matcher<'a> {
    /// Over `sessions` but the one `except` (the session exported: an
    /// anchor points at another).
    pub fn new(sessions: &'a [SessionRef], except: &str) -> Self {
        let sessions = sessions
            .iter()
            .filter(|s| s.id != except)
            .map(|session| Prepared {
                session,
                tags: session.tags.iter().map(|t| t.to_lowercase()).collect(),
                words: session
                    .title
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.chars().count() >= 2)
                    .map(str::to_lowercase)
                    .collect(),
            })
            .collect();
        Matcher {
            sessions,
            known: HashMap::new(),
        }
    }

    /// Resolve `anchor`.
    pub fn resolve(&mut self, anchor: Anchor) -> Resolution {
        let keyword = anchor.keyword.to_lowercase();
        let candidates = match self.known.get(&keyword) {
            Some(c) => c.clone(),
            None => {
                let c = self.candidates(&keyword);
                self.known.insert(keyword, c.clone());
                c
            }
        };
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

    /// The best sessions for `keyword` (lower case): best first, among
    /// equals the newest; never more than [`MAX_CANDIDATES`] held.
    fn candidates(&self, keyword: &str) -> Vec<Candidate> {
        let wanted: Vec<&str> = keyword.split(['-', '_']).filter(|w| !w.is_empty()).collect();
        let mut best: Vec<Candidate> = Vec::with_capacity(MAX_CANDIDATES + 1);
        for p in &self.sessions {
            let Some((match_reason, confidence)) = score(keyword, &wanted, p) else {
                continue;
            };
            best.push(Candidate {
                session_id: p.session.id.clone(),
                title: p.session.title.clone(),
                thought_count: p.session.thought_count,
                created_at: p.session.created_at.clone(),
                match_reason,
                confidence,
            });
            best.sort_by(|a, b| {
                b.confidence
                    .total_cmp(&a.confidence)
                    .then_with(|| b.created_at.cmp(&a.created_at))
            });
            best.truncate(MAX_CANDIDATES);
        }
        best
    }
}

/// How well `keyword` (its `wanted` words) names session `p`: a tag equal
/// to it, else the share of its words that a title word contains or is
/// contained in.
fn score(keyword: &str, wanted: &[&str], p: &Prepared<'_>) -> Option<(&'static str, f64)> {
    if p.tags.iter().any(|t| t == keyword) {
        return Some(("tag", TAG_CONFIDENCE));
    }
    if wanted.is_empty() || p.words.is_empty() {
        return None;
    }
    let matched = wanted
        .iter()
        .filter(|w| {
            p.words
                .iter()
                .any(|t| t.contains(*w) || (t.chars().count() >= 3 && w.contains(t.as_str())))
        })
        .count();
    let confidence = TITLE_WEIGHT * matched as f64 / wanted.len() as f64;
    // Two decimals: the figure is a ranking hint, not a measurement.
    let confidence = (confidence * 100.0).round() / 100.0;
    (confidence >= MIN_CONFIDENCE).then_some(("title", confidence))
}

/// `crossReferences`: each anchor of `found` resolved by `matcher`.
pub fn cross_references(found: Vec<Found>, omitted: usize, matcher: &mut Matcher<'_>) -> CrossReferences {
    let mut refs = CrossReferences {
        anchors_found: found.len(),
        resolved: 0,
        ambiguous: 0,
        unresolved: 0,
        anchors_omitted: omitted,
        details: Vec::with_capacity(found.len()),
    };
    for (thought_number, branch_id, anchors) in found {
        let anchors: Vec<Resolution> = anchors.into_iter().map(|a| matcher.resolve(a)).collect();
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

    fn find(text: &str) -> Vec<Anchor> {
        anchors(text).collect()
    }

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
            "@_:S1",
        ] {
            assert_eq!(find(text), [], "{text}");
        }
        // A descending range names no thoughts, but is an anchor; a huge
        // one names its first hundred.
        assert_eq!(find("@a:S5-S2")[0].thought_numbers, Vec::<u32>::new());
        assert_eq!(find("@a:S1-S5000")[0].thought_numbers, (1..=100).collect::<Vec<u32>>());
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
        let r = Matcher::new(&sessions, "").resolve(find("@auth-design:S2")[0].clone());
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
        let mut m = Matcher::new(&sessions, "");
        let r = m.resolve(find("@auth-design:S1")[0].clone());
        assert_eq!(r.status, Status::Ambiguous);
        // Equal scores: the newest first.
        let ids: Vec<&str> = r.candidates.iter().map(|c| c.session_id.as_str()).collect();
        assert_eq!(ids, ["b", "a"]);
        assert!(r.selected.is_none());
        let r = m.resolve(find("@tokens:S1")[0].clone());
        assert_eq!(r.status, Status::Resolved);
        // Half the words is 0.43: no match.
        let r = m.resolve(find("@auth-billing:S1")[0].clone());
        assert_eq!(r.status, Status::Unresolved);
        assert!(r.candidates.is_empty());
    }

    #[test]
    fn each_thought_with_anchors_is_counted_once() {
        let (found, omitted) = find_in([(1, None, "plain"), (2, Some("alt".into()), "@x:S1 @y:S2")]);
        assert_eq!((found.len(), omitted), (1, 0));
        let sessions = [session("s", "X marks", &["x"], "2026-01-01")];
        let refs = cross_references(found, omitted, &mut Matcher::new(&sessions, ""));
        assert_eq!((refs.anchors_found, refs.resolved, refs.unresolved), (1, 1, 1));
        assert_eq!(refs.details[0].thought_number, 2);
        assert_eq!(refs.details[0].branch_id.as_deref(), Some("alt"));
    }

    #[test]
    fn tags_match_in_any_letter_case_and_never_the_session_itself() {
        let sessions = [
            session("self", "Ключ", &["ключ"], "2026-03-01"),
            session("other", "Something", &["Ключ"], "2026-01-01"),
        ];
        let r = Matcher::new(&sessions, "self").resolve(find("@КЛЮЧ:S1")[0].clone());
        assert_eq!(r.status, Status::Resolved);
        let ids: Vec<&str> = r.candidates.iter().map(|c| c.session_id.as_str()).collect();
        assert_eq!(ids, ["other"]);
    }

    #[test]
    fn what_an_export_resolves_is_bounded() {
        let long = format!("@{}:S1", "k".repeat(MAX_KEYWORD_CHARS + 1));
        assert_eq!(find(&long), []);
        assert_eq!(find("@a:S1-S100")[0].thought_numbers.len(), 100);
        assert_eq!(find("@a:S2-S101")[0].thought_numbers.len(), 100);
        assert_eq!(find("@a:S1-S101")[0].thought_numbers.last(), Some(&100));
        let top = format!("@a:S{}-S{}", u32::MAX - 1, u32::MAX);
        assert_eq!(find(&top)[0].thought_numbers, [u32::MAX - 1, u32::MAX]);
        // Anchors past the cap are counted, not resolved.
        let many = "@x:S1 ".repeat(MAX_ANCHORS + 7);
        let (found, omitted) = find_in([(1, None, many.as_str()), (2, None, "@x:S2")]);
        assert_eq!(found.iter().map(|f| f.2.len()).sum::<usize>(), MAX_ANCHORS);
        assert_eq!(omitted, 8);
        // So are anchors whose keyword comes past the keywords' cap; one
        // already seen (letter case aside) still counts.
        let keywords: String = (0..MAX_KEYWORDS + 2).map(|i| format!("@k{i}:S1 ")).collect();
        let text = format!("{keywords} @K0:S2");
        let (found, omitted) = find_in([(1, None, text.as_str())]);
        assert_eq!((found[0].2.len(), omitted), (MAX_KEYWORDS + 1, 2));
        // Each keyword is matched against the sessions once.
        let sessions: Vec<SessionRef> = (0..50)
            .map(|i| session(&format!("s{i}"), "x", &["x"], "2026-01-01"))
            .collect();
        let mut m = Matcher::new(&sessions, "");
        let (found, omitted) = find_in([(1, None, many.as_str())]);
        let refs = cross_references(found, omitted, &mut m);
        assert_eq!(m.known.len(), 1);
        assert_eq!(refs.details[0].anchors[0].candidates.len(), MAX_CANDIDATES);
        assert_eq!(refs.anchors_omitted, 7);
    }
}
