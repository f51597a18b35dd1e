//! Anti-patterns `extract_learnings` saved in an older wording, rewritten
//! once into the current one when a ledger is upgraded past schema 16
//! (migration V17 then records it, and fixes the article of the rest):
//! headed "Avoid:" and titled with the belief revised (they were headed with
//! the moment's summary or the correction), with the correction as their
//! source (a moment naming the thought revised made that the source), and
//! described as "An anti-pattern" filed under that title. What SQL cannot
//! do: the title is the quoted belief's first line cut to 80 characters,
//! and its file name a slug of it.

use rusqlite::{Connection, params};

use crate::analysis::{belief_title, learning_stem};
use crate::error::Result;

const AVOID: &str = "# Avoid: ";
const MOMENT: &str = "\n- Moment: revision, significance ";
const BELIEVED: &str = "## What was believed (thought ";
const CORRECTION: &str = "## The correction (thought ";

/// A pattern's title, description and content.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Wording {
    pub title: String,
    pub description: String,
    pub content: String,
}

/// Rewrite, in one transaction, every anti-pattern of `extract_learnings`
/// still in an older wording. Rows already in the current wording, titled
/// by hand since (their title no longer their heading), or not in the
/// shape `extract_learnings` writes are left as they are, so running it
/// again changes nothing. Answers how many were rewritten.
pub(in crate::store) fn rewrite_older_anti_patterns(conn: &mut Connection) -> Result<usize> {
    let tx = conn.transaction()?;
    let older: Vec<(String, Wording)> = {
        let mut stmt = tx.prepare(
            // A row changed since it was saved (`update_pattern`, a hand
            // edit through the gateway) is its editor's, whatever it reads.
            "SELECT id, title, description, content FROM knowledge_patterns
             WHERE created_by = 'extract_learnings' AND substr(content, 1, 9) = '# Avoid: '
               AND updated_at = created_at",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                Wording {
                    title: r.get(1)?,
                    description: r.get(2)?,
                    content: r.get(3)?,
                },
            ))
        })?;
        let mut older = Vec::new();
        for row in rows {
            let (id, saved) = row?;
            if let Some(now) = current_wording(&saved) {
                older.push((id, now));
            }
        }
        older
    };
    {
        // `updated_at` stays: the learning is the same, and lists sorted by
        // it (list_patterns' default) keep their order.
        let mut update =
            tx.prepare("UPDATE knowledge_patterns SET title = ?2, description = ?3, content = ?4 WHERE id = ?1")?;
        for (id, w) in &older {
            update.execute(params![id, w.title, w.description, w.content])?;
        }
    }
    tx.commit()?;
    if !older.is_empty() {
        tracing::info!(
            "{} anti-pattern(s) saved by extract_learnings in an older wording now read as it saves them today",
            older.len()
        );
    }
    Ok(older.len())
}

/// The number at the start of `text`, and what follows it.
fn number(text: &str) -> Option<(u32, &str)> {
    let end = text.find(|c: char| !c.is_ascii_digit()).unwrap_or(text.len());
    Some((text[..end].parse().ok()?, &text[end..]))
}

/// What `extract_learnings` would save today for an anti-pattern it saved
/// as `saved`; `None` when that is what it holds, or when it is not one of
/// its anti-patterns as written (then it is left alone).
fn current_wording(saved: &Wording) -> Option<Wording> {
    let rest = saved.content.strip_prefix(AVOID)?;
    let (heading, below) = rest.split_at(rest.find('\n')?);
    // A title someone changed since is theirs.
    if saved.title
        != heading
            .chars()
            .take(crate::knowledge::MAX_TITLE_CHARS)
            .collect::<String>()
    {
        return None;
    }
    // The source line: `- Source: session "<title>" (`<id>`), thought N<branch>`.
    let source = below.strip_prefix("\n\n- Source: session ")?;
    let source_end = source.find(MOMENT)?;
    let (source, after_source) = source.split_at(source_end);
    let number_at = source.rfind("), thought ")? + "), thought ".len();
    let (named, chain) = number(&source[number_at..])?;
    if !(chain.is_empty() || (chain.starts_with(" on branch `") && chain.ends_with('`'))) {
        return None;
    }
    // `- Moment: ...`, a blank line, then what was believed, quoted.
    let moment_end = after_source[1..].find('\n')? + 1;
    let body = after_source[moment_end..]
        .strip_prefix("\n\n")?
        .strip_prefix(BELIEVED)?;
    let (revised, body) = number(body)?;
    let mut lines = body.strip_prefix(")\n\n")?.split('\n');
    let mut believed: Vec<&str> = Vec::new();
    let next = loop {
        match lines.next()? {
            line if line.starts_with('>') => {
                believed.push(line.strip_prefix("> ").unwrap_or(&line[1..]));
            }
            line => break line,
        }
    };
    let correction_line = lines.next()?;
    if believed.is_empty() || !next.is_empty() {
        return None;
    }
    let (correction, close) = number(correction_line.strip_prefix(CORRECTION)?)?;
    if close != ")" || (named != revised && named != correction) {
        return None;
    }
    // The quote holds the belief cut to 300 characters: its first line, cut
    // to 80, is the same as the whole thought's.
    let title = belief_title(&believed.join("\n"));
    if title.is_empty() {
        // (A title must hold something: it stays as it was.)
        return None;
    }
    let content = format!(
        "{AVOID}{title}\n\n- Source: session {}{correction}{chain}{after_source}",
        &source[..number_at]
    );
    let description = described(&saved.description, &title, title == saved.title, correction)?;
    let now = Wording {
        title,
        description,
        content,
    };
    (now != *saved).then_some(now)
}

/// `An anti-pattern extracted from session <id> (anti-patterns/<category>/<file>.md).`
/// for an anti-pattern titled `title`, from the description it was saved
/// with: its file named after the title (when the title stays, a `-2` it
/// had to tell it from another learning of its call is kept).
fn described(saved: &str, title: &str, same_title: bool, correction: u32) -> Option<String> {
    const FROM: &str = " anti-pattern extracted from session ";
    let rest = saved
        .strip_prefix("An")
        .or_else(|| saved.strip_prefix('A'))?
        .strip_prefix(FROM)?
        .strip_suffix(").")?;
    let (session, path) = rest.rsplit_once(" (")?;
    let (category, file) = path.strip_prefix("anti-patterns/")?.rsplit_once('/')?;
    let stem = file.strip_suffix(".md")?;
    if category.is_empty() || category.contains('/') {
        return None;
    }
    let wanted = learning_stem(title, correction);
    let kept = stem == wanted
        || same_title
            && stem
                .strip_prefix(wanted.as_str())
                .and_then(|n| n.strip_prefix('-'))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    let file = if kept { stem } else { wanted.as_str() };
    Some(format!("An{FROM}{session} (anti-patterns/{category}/{file}.md)."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::fixtures::{SID, revising, session, thoughts};
    use crate::analysis::{KeyMoment, LearningType, MomentKind, extract_learnings};
    use crate::knowledge::NewPattern;
    use crate::store::knowledge::Saved;
    use crate::store::{OpenOptionsStore, Store};

    /// What `session extract_learnings` with `save: true` stores today for
    /// a revision moment on thought `named`.
    fn saved_today(ts: &[crate::domain::Thought], named: u32, summary: Option<&str>) -> NewPattern {
        let m = KeyMoment {
            thought_number: named,
            branch_id: None,
            kind: MomentKind::Revision,
            significance: Some(6),
            summary: summary.map(str::to_string),
        };
        let x = extract_learnings(&session("s"), ts, 0, &[m], &[LearningType::AntiPattern], "2026-01-01").unwrap();
        let l = &x.learnings[0];
        NewPattern {
            title: l.title.clone(),
            description: format!("An anti-pattern extracted from session {SID} ({}).", l.target_path),
            tags: vec!["learning".into(), "anti-pattern".into()],
            content: l.content.clone(),
            derived_from_sessions: vec![SID.into()],
            created_by: Some("extract_learnings".into()),
        }
    }

    fn wording(p: &NewPattern) -> Wording {
        Wording {
            title: p.title.clone(),
            description: p.description.clone(),
            content: p.content.clone(),
        }
    }

    /// `w` headed and titled `heading`, filed under its slug, with the older
    /// article.
    fn headed(w: &Wording, heading: &str) -> Wording {
        let first = w.content.find('\n').unwrap();
        let path = format!("anti-patterns/debugging/{}.md", learning_stem(heading, 5));
        Wording {
            title: heading.into(),
            description: format!("A anti-pattern extracted from session {SID} ({path})."),
            content: format!("{AVOID}{heading}{}", &w.content[first..]),
        }
    }

    /// `w` with thought `n` as its source.
    fn sourced(w: &Wording, n: u32) -> Wording {
        Wording {
            content: w.content.replacen("), thought 5\n", &format!("), thought {n}\n"), 1),
            ..w.clone()
        }
    }

    /// The older wordings of one learning (headed with the moment's
    /// summary, its source the thought revised, both, the older article)
    /// all read as it is saved today; what is today's, retitled by hand, or
    /// not in the shape extract_learnings writes is left alone.
    #[test]
    fn older_wordings_read_as_today() {
        let ts = revising();
        let today = wording(&saved_today(&ts, 5, Some("Check the locale first")));
        assert_eq!(today.title, "CI must use another timezone.");
        assert!(today.content.contains("), thought 5\n"), "{}", today.content);
        // Naming the thought revised (its newest revision is thought 5)
        // gives the same learning today.
        assert_eq!(wording(&saved_today(&ts, 2, Some("Check the locale first"))), today);
        let summary = headed(&today, "Check the locale first");
        let revised = sourced(&today, 2);
        let both = sourced(&summary, 2);
        let article = Wording {
            description: today.description.replacen("An ", "A ", 1),
            ..today.clone()
        };
        for older in [&summary, &revised, &both, &article] {
            assert_eq!(current_wording(older).as_ref(), Some(&today), "{older:?}");
        }
        assert_eq!(current_wording(&today), None);
        let by_hand = Wording {
            title: "Mine".into(),
            ..summary.clone()
        };
        assert_eq!(current_wording(&by_hand), None);
        // A source naming neither thought, a body edited out of shape.
        assert_eq!(current_wording(&sourced(&summary, 3)), None);
        let reshaped = Wording {
            content: summary.content.replacen("## The correction", "## Fixed", 1),
            ..summary.clone()
        };
        assert_eq!(current_wording(&reshaped), None);
        // The thought revised gone (a hand edit): its number is not in the
        // text, so neither is today's title.
        let mut gone = ts.clone();
        gone.retain(|t| t.data.thought_number != 2);
        let step = headed(
            &wording(&saved_today(&gone, 5, None)),
            "It is the locale, not the timezone.",
        );
        assert!(step.content.contains("## The step"), "{}", step.content);
        assert_eq!(current_wording(&step), None);
    }

    /// The title is the belief's first line cut to 80 characters, as
    /// extract_learnings cuts it, though the quote holds it cut to 300; a
    /// file name told apart with `-2` keeps it while the title stays.
    #[test]
    fn long_beliefs_and_numbered_files() {
        let long = format!("  {}\nsecond line", "word ".repeat(100));
        let ts = thoughts(&[
            (1, None, None, None, true, long.as_str()),
            (2, None, None, Some(1), false, "No."),
        ]);
        let today = saved_today(&ts, 2, None);
        assert_eq!(today.title.chars().count(), 80, "{}", today.title);
        let older = headed(&wording(&today), "No.");
        assert_eq!(current_wording(&older), Some(wording(&today)));
        let numbered = Wording {
            description: today.description.replacen(".md)", "-2.md)", 1),
            ..wording(&today)
        };
        assert_eq!(current_wording(&numbered), None);
        let older_numbered = Wording {
            description: numbered.description.replacen("An ", "A ", 1),
            ..numbered.clone()
        };
        assert_eq!(current_wording(&older_numbered), Some(numbered));
    }

    /// A ledger at schema 16 holding anti-patterns in older wordings: once
    /// opened, they read as extract_learnings saves them today, so saving
    /// that learning again answers the stored one; the rest is left as it
    /// was, `updated_at` included, and the rewrite does nothing a second time.
    #[test]
    fn a_ledger_at_16_is_rewritten_once_when_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("v16.db");
        let ts = revising();
        let now = saved_today(&ts, 5, Some("Check the locale first"));
        let today = wording(&now);
        let summary = headed(&today, "Check the locale first");
        let both = sourced(&summary, 2);
        let by_hand = Wording {
            title: "Mine".into(),
            ..summary.clone()
        };
        let someone = Wording {
            title: "Someone's".into(),
            ..headed(&today, "Someone's")
        };
        // Renamed through update_pattern, title and heading alike.
        let renamed = Wording {
            title: "Do not blame the timezone".into(),
            ..headed(&today, "Do not blame the timezone")
        };
        let rows = [
            ("oldest", &summary, Some("extract_learnings")),
            ("other-thought", &both, Some("extract_learnings")),
            ("by-hand", &by_hand, Some("extract_learnings")),
            ("someone", &someone, None),
            ("renamed", &renamed, Some("extract_learnings")),
        ];
        {
            let conn = super::super::super::open::ledger_at(&path, 16);
            for (i, (id, w, by)) in rows.iter().enumerate() {
                conn.execute(
                    "INSERT INTO knowledge_patterns (id, title, description, content, created_by, created_at, updated_at)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                    params![id, w.title, w.description, w.content, by, format!("2026-01-0{}T00:00:00.000Z", i + 1)],
                )
                .unwrap();
            }
            conn.execute(
                "UPDATE knowledge_patterns SET updated_at = '2026-02-01T00:00:00.000Z' WHERE id = 'renamed'",
                [],
            )
            .unwrap();
        }
        let store = Store::open(&path, OpenOptionsStore::default()).unwrap();
        assert!(store.schema_version().unwrap() >= 17);
        let read = |id: &str| {
            let p = store.pattern(id).unwrap();
            (
                Wording {
                    title: p.title,
                    description: p.description,
                    content: p.content,
                },
                p.updated_at,
            )
        };
        for id in ["oldest", "other-thought"] {
            assert_eq!(read(id).0, today, "{id}");
        }
        assert_eq!(read("oldest").1, "2026-01-01T00:00:00.000Z", "updated_at stays");
        // Retitled by hand: only the article changes.
        let hand = Wording {
            description: by_hand.description.replacen("A ", "An ", 1),
            ..by_hand.clone()
        };
        assert_eq!(read("by-hand").0, hand);
        assert_eq!(read("someone").0, someone, "not saved by extract_learnings");
        let renamed_now = Wording {
            description: renamed.description.replacen("A ", "An ", 1),
            ..renamed.clone()
        };
        assert_eq!(
            read("renamed").0,
            renamed_now,
            "changed since it was saved: its editor's"
        );
        // Saved again: the oldest copy answers; nothing is added.
        let (found, saved) = store.create_patterns_once(&[now]).unwrap().remove(0);
        assert_eq!((found.id.as_str(), saved), ("oldest", Saved::Already));
        let all = store
            .list_patterns(&crate::knowledge::PatternFilter::default())
            .unwrap();
        assert_eq!(all.total, rows.len() as u64);
        drop(store);
        let mut conn = Connection::open(&path).unwrap();
        assert_eq!(rewrite_older_anti_patterns(&mut conn).unwrap(), 0);
    }
}
