//! ExtractedLearning: reusable lessons drawn from a session's
//! key moments. Nothing is written anywhere: `targetPath` is a suggestion for
//! the client (the gateway can save patterns to the knowledge garden when asked).

use serde::Serialize;
use serde_json::json;

use super::{Facts, ratio, round2};
use crate::domain::{Session, Thought};
use crate::error::{Error, Result};
use crate::knowledge::slugify;

/// What kind of moment a key moment is: the specification's insight,
/// decision, pivot and revision, plus branch (ours).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MomentKind {
    Insight,
    Decision,
    Pivot,
    Revision,
    Branch,
}

impl MomentKind {
    pub const NAMES: &'static [&'static str] = &["insight", "decision", "pivot", "revision", "branch"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "insight" => Some(MomentKind::Insight),
            "decision" => Some(MomentKind::Decision),
            "pivot" => Some(MomentKind::Pivot),
            "revision" => Some(MomentKind::Revision),
            "branch" => Some(MomentKind::Branch),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            MomentKind::Insight => "insight",
            MomentKind::Decision => "decision",
            MomentKind::Pivot => "pivot",
            MomentKind::Revision => "revision",
            MomentKind::Branch => "branch",
        }
    }
}

/// A thought the caller singled out as significant.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyMoment {
    pub thought_number: u32,
    /// The branch the thought is on (main chain when absent).
    pub branch_id: Option<String>,
    pub kind: MomentKind,
    /// 1 to 10; 5 when not given.
    pub significance: Option<u8>,
    pub summary: Option<String>,
}

/// ExtractedLearning `type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum LearningType {
    Pattern,
    AntiPattern,
    Signal,
}

impl LearningType {
    pub const NAMES: &'static [&'static str] = &["pattern", "anti-pattern", "signal"];

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pattern" => Some(LearningType::Pattern),
            "anti-pattern" => Some(LearningType::AntiPattern),
            "signal" => Some(LearningType::Signal),
            _ => None,
        }
    }
}

/// Scores of a learning, each an integer from 1 to 10.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BehaviorCharacteristics {
    /// 1 + ⌊words of the source thought / 20⌋: a longer, more detailed step is more specific.
    pub specificity: u8,
    /// 11 − specificity: the more specific a lesson, the fewer situations it fits.
    pub applicability: u8,
    /// 1 + branches + revisions of the session: reasoning that needed more
    /// exploration and correction is harder to repeat.
    pub complexity: u8,
    /// 1 + 4 if the session is complete + ⌊significance / 2⌋: a lesson from a
    /// finished session that its author rated highly is more proven.
    pub maturity: u8,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LearningMetadata {
    pub source_session: String,
    pub source_thoughts: Vec<u32>,
    /// The branch of the source thoughts, when they are on one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_branch: Option<String>,
    pub extracted_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behavior_characteristics: Option<BehaviorCharacteristics>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExtractedLearning {
    #[serde(rename = "type")]
    pub kind: LearningType,
    pub content: String,
    pub target_path: String,
    pub metadata: LearningMetadata,
    /// A short title: a pattern's is the moment's summary or the thought's
    /// first line; an anti-pattern's the first line of the thought revised
    /// (what not to believe), whichever thought the moment names.
    pub title: String,
}

/// The answer of `session extract_learnings`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Extraction {
    pub session_id: String,
    pub extracted_count: usize,
    pub learnings: Vec<ExtractedLearning>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn clamp10(x: usize) -> u8 {
    x.clamp(1, 10) as u8
}

fn excerpt(text: &str, max_chars: usize) -> String {
    let text = text.trim();
    if text.chars().count() <= max_chars {
        return text.to_string();
    }
    let mut s: String = text.chars().take(max_chars.saturating_sub(1)).collect();
    s.push('…');
    s
}

fn quote(text: &str) -> String {
    text.lines().map(|l| format!("> {l}")).collect::<Vec<_>>().join("\n")
}

/// A text's first line that has something on it.
fn first_line(text: &str) -> &str {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("")
}

/// An anti-pattern's title when the thought revised says `believed`: its
/// first line, cut to 80 characters.
pub(crate) fn belief_title(believed: &str) -> String {
    excerpt(first_line(believed), 80)
}

/// The file name a learning titled `title`, from thought `number`, is filed
/// under, without `.md` (and without the `-2`, `-3`... that tell it from
/// another of the same call).
pub(crate) fn learning_stem(title: &str, number: u32) -> String {
    let mut slug = slugify(title);
    slug.truncate(48);
    let slug = slug.trim_end_matches('-');
    if slug.is_empty() {
        format!("thought-{number}")
    } else {
        slug.to_string()
    }
}

fn heading(moment: &KeyMoment, thought: &Thought) -> String {
    let source = moment
        .summary
        .as_deref()
        .filter(|s| !s.trim().is_empty())
        .unwrap_or_else(|| first_line(&thought.data.thought));
    excerpt(source, 80)
}

/// The directory a session's learnings are filed under: its domain, else
/// its first tag without a `key:` prefix, else `general`.
fn category(session: &Session) -> String {
    let raw = session
        .domain
        .clone()
        .or_else(|| session.tags.iter().find(|t| !t.contains(':')).cloned())
        .unwrap_or_default();
    let slug = slugify(&raw);
    if slug.is_empty() { "general".into() } else { slug }
}

fn find<'a>(thoughts: &'a [Thought], number: u32, branch: Option<&str>) -> Option<&'a Thought> {
    thoughts
        .iter()
        .find(|t| t.data.thought_number == number && t.data.branch_id.as_deref() == branch)
}

fn chain_label(branch: Option<&str>) -> String {
    branch.map(|b| format!(" on branch `{b}`")).unwrap_or_default()
}

/// The thought a `branch` key moment (the `i`th) given without `branchId`
/// means: thought `number` of the one branch that has one, and a note
/// saying so. Refused (`keyMoments[i].branchId`) when no branch or several
/// have it: the main chain's thought of that number would be used for a
/// moment about a branch.
fn branch_of<'a>(session: &Session, thoughts: &'a [Thought], i: usize, number: u32) -> Result<(&'a Thought, String)> {
    let mut branches: Vec<&str> = Vec::new();
    let mut found: Option<&'a Thought> = None;
    for t in thoughts.iter().filter(|t| t.data.thought_number == number) {
        if let Some(b) = t.data.branch_id.as_deref()
            && !branches.contains(&b)
        {
            branches.push(b);
            found.get_or_insert(t);
        }
    }
    let field = format!("keyMoments[{i}].branchId");
    match (found, branches.as_slice()) {
        (Some(t), [only]) => Ok((
            t,
            format!(
                "key moment {i} (branch, thought {number}) gave no branchId; branch `{only}` is the only one with a \
                 thought {number}, so that thought was used."
            ),
        )),
        (_, []) => {
            let mut all: Vec<&str> = thoughts.iter().filter_map(|t| t.data.branch_id.as_deref()).collect();
            all.sort_unstable();
            all.dedup();
            Err(Error::invalid_with(
                field.clone(),
                format!(
                    "{field}: a branch key moment names its branch with branchId, and no branch of session {} has \
                     a thought {number} (nothing was done)",
                    session.id
                ),
                json!({ "thoughtNumber": number, "branches": all }),
            ))
        }
        _ => Err(Error::invalid_with(
            field.clone(),
            format!(
                "{field}: a branch key moment names its branch with branchId; branches {} each have a thought \
                 {number} (nothing was done)",
                branches.join(", ")
            ),
            json!({ "thoughtNumber": number, "candidates": branches }),
        )),
    }
}

/// Extract learnings of the `targets` types from `moments`.
///
/// - `pattern`: one per moment of kind insight, decision, pivot or branch.
/// - `anti-pattern`: one per moment of kind revision (what was believed, and
///   the correction, when the thought revises another).
/// - `signal`: one per call, the session's outcome and metrics as JSON.
///
/// A moment naming a thought the session does not have is `THOUGHT_NOT_FOUND`.
pub fn extract_learnings(
    session: &Session,
    thoughts: &[Thought],
    critique_requests: u64,
    moments: &[KeyMoment],
    targets: &[LearningType],
    extracted_at: &str,
) -> Result<Extraction> {
    let mut resolved = Vec::with_capacity(moments.len());
    let mut notes: Vec<String> = Vec::new();
    for (i, m) in moments.iter().enumerate() {
        if m.kind == MomentKind::Branch && m.branch_id.is_none() {
            let (t, note) = branch_of(session, thoughts, i, m.thought_number)?;
            resolved.push((m, t));
            notes.push(note);
            continue;
        }
        match find(thoughts, m.thought_number, m.branch_id.as_deref()) {
            Some(t) => resolved.push((m, t)),
            None => {
                return Err(Error::ThoughtNotFound {
                    message: format!(
                        "key moment names thought {}{} but session {} has no such thought",
                        m.thought_number,
                        chain_label(m.branch_id.as_deref()),
                        session.id
                    ),
                    details: json!({
                        "sessionId": session.id,
                        "thoughtNumber": m.thought_number,
                        "branchId": m.branch_id,
                    }),
                });
            }
        }
    }
    let f = Facts::new(thoughts);
    let cat = category(session);
    let complexity = clamp10(1 + f.branches.len() + f.revisions);
    let characteristics = |m: &KeyMoment, t: &Thought| {
        let words = t.data.thought.split_whitespace().count();
        let specificity = clamp10(1 + words / 20);
        BehaviorCharacteristics {
            specificity,
            applicability: clamp10(11 - usize::from(specificity)),
            complexity,
            maturity: clamp10(
                1 + if f.complete { 4 } else { 0 } + usize::from(m.significance.unwrap_or(5).clamp(1, 10)) / 2,
            ),
        }
    };
    let metadata = |numbers: Vec<u32>, branch: Option<&str>, bc: Option<BehaviorCharacteristics>| LearningMetadata {
        source_session: session.id.clone(),
        source_thoughts: numbers,
        source_branch: branch.map(str::to_string),
        extracted_at: extracted_at.to_string(),
        behavior_characteristics: bc,
    };
    let mut used_paths: Vec<String> = Vec::new();
    let mut unique_path = |dir: &str, title: &str, number: u32| {
        let base = learning_stem(title, number);
        let mut path = format!("{dir}/{cat}/{base}.md");
        let mut k = 2;
        while used_paths.contains(&path) {
            path = format!("{dir}/{cat}/{base}-{k}.md");
            k += 1;
        }
        used_paths.push(path.clone());
        path
    };

    let mut learnings = Vec::new();
    let source_line = |t: &Thought| {
        format!(
            "- Source: session \"{}\" (`{}`), thought {}{}",
            session.title,
            session.id,
            t.data.thought_number,
            chain_label(t.data.branch_id.as_deref())
        )
    };

    if targets.contains(&LearningType::Pattern) {
        let before = learnings.len();
        for (m, t) in resolved.iter().filter(|(m, _)| m.kind != MomentKind::Revision) {
            let title = heading(m, t);
            let significance = m.significance.unwrap_or(5);
            let why = m
                .summary
                .clone()
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| "No summary was given; read the step in its session for context.".into());
            let content = format!(
                "# {title}\n\n{}\n- Moment: {}, significance {significance}/10\n\n## The step\n\n{}\n\n## Why it matters\n\n{why}\n",
                source_line(t),
                m.kind.as_str(),
                quote(&excerpt(&t.data.thought, 500)),
            );
            learnings.push(ExtractedLearning {
                kind: LearningType::Pattern,
                target_path: unique_path("patterns", &title, t.data.thought_number),
                metadata: metadata(
                    vec![t.data.thought_number],
                    t.data.branch_id.as_deref(),
                    Some(characteristics(m, t)),
                ),
                content,
                title,
            });
        }
        if learnings.len() == before {
            notes.push("No patterns extracted: pass keyMoments of type insight, decision, pivot or branch.".into());
        }
    }

    if targets.contains(&LearningType::AntiPattern) {
        let before = learnings.len();
        // One anti-pattern for one correction with one lesson, however the
        // moments name it: the revision, or the thought it revised.
        let mut seen: Vec<(i64, Option<u8>, Option<&str>)> = Vec::new();
        for (m, t) in resolved.iter().filter(|(m, _)| m.kind == MomentKind::Revision) {
            let branch = t.data.branch_id.as_deref();
            // The moment names the revision, or the thought revised (then
            // its newest revision is the correction); a thought that is
            // neither gives no anti-pattern (it would be stored as one, and a
            // revised thought's correction left out).
            let (revised, correction) = match t.data.revises_thought {
                Some(r) => (find(thoughts, r, branch), *t),
                None => match thoughts
                    .iter()
                    .filter(|x| {
                        x.data.revises_thought == Some(t.data.thought_number) && x.data.branch_id.as_deref() == branch
                    })
                    .max_by_key(|x| x.seq)
                {
                    Some(newest) => (Some(*t), newest),
                    None => {
                        notes.push(format!(
                            "thought {}{} is no revision and was not revised, so it gives no anti-pattern: name a \
                             revision, or the thought a revision corrected.",
                            t.data.thought_number,
                            chain_label(branch)
                        ));
                        continue;
                    }
                },
            };
            let lesson_given = m.summary.as_deref().filter(|s| !s.trim().is_empty());
            let key = (correction.seq, m.significance, lesson_given);
            if seen.contains(&key) {
                notes.push(format!(
                    "thought {}{} names the correction of an earlier revision moment (thought {}), with the same \
                     significance and summary: one anti-pattern for both.",
                    t.data.thought_number,
                    chain_label(branch),
                    correction.data.thought_number
                ));
                continue;
            }
            seen.push(key);
            // "Avoid: ..." names what was believed, whichever of the two
            // thoughts the moment names; the summary is the lesson (titled
            // with the correction, it would tell later readers to avoid the
            // right answer).
            let title = match revised {
                Some(r) => belief_title(&r.data.thought),
                // The thought revised is gone (a hand edit): named, not quoted.
                None => format!(
                    "thought {}{}, revised by thought {}",
                    t.data.revises_thought.unwrap_or_default(),
                    chain_label(branch),
                    correction.data.thought_number
                ),
            };
            let mut numbers = vec![correction.data.thought_number];
            let body = match revised {
                Some(r) => {
                    numbers.insert(0, r.data.thought_number);
                    format!(
                        "## What was believed (thought {})\n\n{}\n\n## The correction (thought {})\n\n{}",
                        r.data.thought_number,
                        quote(&excerpt(&r.data.thought, 300)),
                        correction.data.thought_number,
                        quote(&excerpt(&correction.data.thought, 300)),
                    )
                }
                None => format!("## The step\n\n{}", quote(&excerpt(&correction.data.thought, 300))),
            };
            let lesson = m
                .summary
                .clone()
                .filter(|s| !s.trim().is_empty())
                .unwrap_or_else(|| "Check this kind of belief earlier next time.".into());
            // The correction is the source, whichever thought the moment
            // names, so that naming either gives the same anti-pattern
            // (and `save` keeps one).
            let content = format!(
                "# Avoid: {title}\n\n{}\n- Moment: revision, significance {}/10\n\n{body}\n\n## Lesson\n\n{lesson}\n",
                source_line(correction),
                m.significance.unwrap_or(5),
            );
            learnings.push(ExtractedLearning {
                kind: LearningType::AntiPattern,
                target_path: unique_path("anti-patterns", &title, correction.data.thought_number),
                metadata: metadata(numbers, branch, Some(characteristics(m, correction))),
                content,
                title,
            });
        }
        if learnings.len() == before {
            notes.push("No anti-patterns extracted: pass keyMoments of type revision.".into());
        }
    }

    if targets.contains(&LearningType::Signal) {
        let n = f.total();
        let signal = json!({
            "sessionId": session.id,
            "title": session.title,
            "outcome": if f.complete { "success" } else { "incomplete" },
            "metrics": {
                "thoughts": n,
                "branches": f.branches.len(),
                "revisions": f.revisions,
                "durationMs": f.duration_ms,
                "linearityScore": f.linearity(),
                "revisionRate": round2(ratio(f.revisions, n)),
                "critiqueRequests": critique_requests,
            },
            "extractedAt": extracted_at,
        });
        learnings.push(ExtractedLearning {
            kind: LearningType::Signal,
            content: signal.to_string(),
            target_path: format!("signals/{cat}.jsonl"),
            metadata: metadata(Vec::new(), None, None),
            title: format!("Session outcome: {}", if f.complete { "success" } else { "incomplete" }),
        });
    }

    Ok(Extraction {
        session_id: session.id.clone(),
        extracted_count: learnings.len(),
        learnings,
        note: if notes.is_empty() { None } else { Some(notes.join(" ")) },
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::*;
    use super::*;

    const AT: &str = "2026-02-01T00:00:00.000Z";

    fn moment(n: u32, kind: MomentKind) -> KeyMoment {
        KeyMoment {
            thought_number: n,
            branch_id: None,
            kind,
            significance: None,
            summary: None,
        }
    }

    #[test]
    fn default_signal_only() {
        let x = extract_learnings(&session("s"), &linear(), 0, &[], &[LearningType::Signal], AT).unwrap();
        assert_eq!(x.extracted_count, 1);
        let l = &x.learnings[0];
        assert_eq!(l.kind, LearningType::Signal);
        // The first tag without "key:" names the category.
        assert_eq!(l.target_path, "signals/debugging.jsonl");
        let v: serde_json::Value = serde_json::from_str(&l.content).unwrap();
        assert_eq!(v["outcome"], "success");
        assert_eq!(v["metrics"]["thoughts"], 4);
        assert_eq!(v["metrics"]["linearityScore"], 1.0);
        assert!(l.metadata.source_thoughts.is_empty());
        assert_eq!(l.metadata.extracted_at, AT);
        assert!(x.note.is_none());
    }

    #[test]
    fn patterns_from_key_moments_with_hand_computed_scores() {
        let mut m = moment(3, MomentKind::Insight);
        m.significance = Some(8);
        m.summary = Some("Check the query plan first".into());
        let x = extract_learnings(&session("s"), &linear(), 0, &[m], &[LearningType::Pattern], AT).unwrap();
        assert_eq!(x.extracted_count, 1);
        let l = &x.learnings[0];
        assert_eq!(l.target_path, "patterns/debugging/check-the-query-plan-first.md");
        assert_eq!(l.metadata.source_thoughts, [3]);
        assert!(l.content.contains("The query misses an index."));
        let bc = l.metadata.behavior_characteristics.unwrap();
        // "The query misses an index." has 5 words: 1 + 5/20 = 1.
        assert_eq!(bc.specificity, 1);
        assert_eq!(bc.applicability, 10);
        // No branches, no revisions.
        assert_eq!(bc.complexity, 1);
        // Complete (+4), significance 8 (+4): 9.
        assert_eq!(bc.maturity, 9);
    }

    #[test]
    fn anti_patterns_from_revisions_of_a_revising_session() {
        let moments = [moment(4, MomentKind::Revision), moment(5, MomentKind::Revision)];
        let x = extract_learnings(
            &session("s"),
            &revising(),
            0,
            &moments,
            &[LearningType::AntiPattern, LearningType::Pattern],
            AT,
        )
        .unwrap();
        assert_eq!(x.extracted_count, 2);
        assert_eq!(x.learnings[0].kind, LearningType::AntiPattern);
        // Thought 4 revises thought 2.
        assert_eq!(x.learnings[0].metadata.source_thoughts, [2, 4]);
        assert!(x.learnings[0].content.contains("CI must use another timezone."));
        let bc = x.learnings[0].metadata.behavior_characteristics.unwrap();
        // Two revisions, no branches: 1 + 2.
        assert_eq!(bc.complexity, 3);
        // Complete (+4), default significance 5 (+2): 7.
        assert_eq!(bc.maturity, 7);
        // Every learning gets its own path.
        assert_ne!(x.learnings[0].target_path, x.learnings[1].target_path);
        assert!(x.note.as_deref().unwrap().contains("No patterns"));
    }

    /// A revision moment naming the thought revised takes its newest
    /// revision as the correction; one naming a thought that is neither
    /// revised nor a revision gives nothing, and a note.
    #[test]
    fn a_revision_moment_on_the_revised_thought_or_on_neither() {
        let moments = [moment(2, MomentKind::Revision), moment(1, MomentKind::Revision)];
        let x = extract_learnings(
            &session("s"),
            &revising(),
            0,
            &moments,
            &[LearningType::AntiPattern],
            AT,
        )
        .unwrap();
        assert_eq!(x.extracted_count, 1);
        let l = &x.learnings[0];
        // Thoughts 4 and 5 revise thought 2; 5 is the newest.
        assert_eq!(l.metadata.source_thoughts, [2, 5]);
        assert!(l.content.contains("## The correction (thought 5)"), "{}", l.content);
        assert!(l.content.contains("It is the locale, not the timezone."));
        let note = x.note.as_deref().unwrap();
        assert!(note.contains("thought 1 is no revision and was not revised"), "{note}");
    }

    /// An anti-pattern's title and "Avoid:" heading are the belief revised,
    /// whether the moment names the revision or the thought revised, and
    /// with or without a summary (that is the lesson); naming the revision
    /// once titled it with the correction.
    #[test]
    fn an_anti_pattern_is_titled_with_the_belief_revised() {
        let ts = revising();
        for named in [4, 2] {
            for summary in [None, Some("Check the locale first")] {
                let mut m = moment(named, MomentKind::Revision);
                m.summary = summary.map(str::to_string);
                let x = extract_learnings(&session("s"), &ts, 0, &[m], &[LearningType::AntiPattern], AT).unwrap();
                let l = &x.learnings[0];
                let case = format!("moment on thought {named}, summary {summary:?}");
                assert_eq!(l.title, "CI must use another timezone.", "{case}");
                assert!(
                    l.content.starts_with("# Avoid: CI must use another timezone.\n"),
                    "{case}: {}",
                    l.content
                );
                assert_eq!(
                    l.target_path, "anti-patterns/debugging/ci-must-use-another-timezone.md",
                    "{case}"
                );
                let lesson = summary.unwrap_or("Check this kind of belief earlier next time.");
                assert!(
                    l.content.ends_with(&format!("## Lesson\n\n{lesson}\n")),
                    "{case}: {}",
                    l.content
                );
            }
        }
        // Naming either thought gives the same anti-pattern, its source the
        // correction; both in one call give one, and a note.
        let one = |named: &[u32]| {
            let ms: Vec<KeyMoment> = named.iter().map(|&n| moment(n, MomentKind::Revision)).collect();
            extract_learnings(&session("s"), &ts, 0, &ms, &[LearningType::AntiPattern], AT).unwrap()
        };
        let (by_revision, by_revised) = (one(&[5]), one(&[2]));
        assert_eq!(by_revision.learnings, by_revised.learnings);
        assert!(
            by_revised.learnings[0].content.contains("), thought 5\n"),
            "{}",
            by_revised.learnings[0].content
        );
        let both = one(&[2, 5]);
        assert_eq!(both.learnings, by_revised.learnings);
        let note = both.note.unwrap_or_default();
        assert!(note.contains("one anti-pattern for both"), "{note}");
        // Thought 4 is another correction of thought 2: its own learning.
        assert_eq!(one(&[4, 2]).learnings.len(), 2);
        // The thought revised is gone (a hand edit): named, not guessed.
        let mut ts = revising();
        ts.retain(|t| t.data.thought_number != 2);
        let x = extract_learnings(
            &session("s"),
            &ts,
            0,
            &[moment(4, MomentKind::Revision)],
            &[LearningType::AntiPattern],
            AT,
        )
        .unwrap();
        assert_eq!(x.learnings[0].title, "thought 2, revised by thought 4");
    }

    #[test]
    fn branch_moments_and_missing_thoughts() {
        let ts = branching();
        let mut m = moment(4, MomentKind::Branch);
        m.branch_id = Some("alt".into());
        let x = extract_learnings(&session("s"), &ts, 0, &[m], &[LearningType::Pattern], AT).unwrap();
        let l = &x.learnings[0];
        assert_eq!(l.metadata.source_branch.as_deref(), Some("alt"));
        // Two branches, no revisions: 1 + 2; incomplete, significance 5: 1 + 0 + 2.
        let bc = l.metadata.behavior_characteristics.unwrap();
        assert_eq!((bc.complexity, bc.maturity), (3, 3));
        // Thought 4 exists on branches, not on the main chain.
        let e = extract_learnings(
            &session("s"),
            &ts,
            0,
            &[moment(4, MomentKind::Insight)],
            &[LearningType::Pattern],
            AT,
        )
        .unwrap_err();
        assert_eq!(e.code(), "THOUGHT_NOT_FOUND");
    }

    /// A branch moment without branchId: the one branch with that thought,
    /// said in the note; none or several refused, naming the moment's
    /// branchId (else it would take the main chain's thought).
    #[test]
    fn a_branch_moment_without_branch_id() {
        let ts = branching();
        let run = |n: u32| {
            let mut moments = vec![moment(1, MomentKind::Insight)];
            moments.push(moment(n, MomentKind::Branch));
            extract_learnings(&session("s"), &ts, 0, &moments, &[LearningType::Pattern], AT)
        };
        // Thought 3: main chain and `alt`; only `alt` is a branch.
        let x = run(3).unwrap();
        let l = &x.learnings[1];
        assert_eq!(l.metadata.source_branch.as_deref(), Some("alt"));
        assert!(l.content.contains("Redis survives restarts."), "{}", l.content);
        let note = x.note.as_deref().unwrap();
        assert!(note.contains("branch `alt` is the only one with a thought 3"), "{note}");
        // Thought 4 is on `alt` and `dead`; thought 1 on no branch.
        for (n, listed) in [(4, "candidates"), (1, "branches")] {
            let e = run(n).unwrap_err();
            assert_eq!(e.code(), "INVALID_PAYLOAD");
            let p = e.payload();
            assert_eq!(p["details"]["field"], "keyMoments[1].branchId", "{p}");
            assert_eq!(p["details"][listed], json!(["alt", "dead"]), "{p}");
        }
    }

    #[test]
    fn empty_session_gives_an_incomplete_signal() {
        let x = extract_learnings(
            &session("s"),
            &[],
            0,
            &[],
            &[LearningType::Signal, LearningType::Pattern],
            AT,
        )
        .unwrap();
        assert_eq!(x.extracted_count, 1);
        let v: serde_json::Value = serde_json::from_str(&x.learnings[0].content).unwrap();
        assert_eq!(v["outcome"], "incomplete");
        assert_eq!(v["metrics"]["thoughts"], 0);
        assert!(x.note.is_some());
    }
}
