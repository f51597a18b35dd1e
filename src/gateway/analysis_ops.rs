//! `session analyze`, `session extract_learnings` and `deep_analysis`: read
//! a session with all its branches, run the pure analyses of
//! [`crate::analysis`], shape the answer.

use serde_json::{Value, json};

use super::answers::analysis::{DeepAnalysisAnswer, ExtractionAnswer, SavedPatterns};
use super::ops::{refuse_stray_session_id, session_or_active};
use super::{Args, Gateway, answers, params};
use crate::analysis::{
    self, AnalysisType, DeepOptions, ExtractedLearning, KeyMoment, LearningType, MomentKind, compare,
};
use crate::domain::{self, SessionId, Stage};
use crate::error::{Error, Result};
use crate::knowledge::NewPattern;
use crate::store::Saved;

/// Most sessions `compareWith` may name, and most key moments per call.
const MAX_COMPARE: usize = 10;
const MAX_KEY_MOMENTS: usize = 100;

pub async fn analyze(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::SessionAnalyze = args.parse("session.analyze")?;
    let id = session_or_active(gw, p.session_id, &args)?;
    refuse_stray_session_id(&args, Some(&id), false)?;
    let (session, thoughts, critiques) = gw.heavy(move |s| s.analysis_input(&id)).await?;
    answers::to_value(&analysis::session_analysis(&session, &thoughts, critiques))
}

/// Prefix the field of a payload error with where it sits in a list.
fn within(prefix: String, e: Error) -> Error {
    match e {
        Error::InvalidPayload {
            field,
            message,
            details,
        } => Error::InvalidPayload {
            field: format!("{prefix}.{field}"),
            message: format!("{prefix}: {message}"),
            details,
        },
        other => other,
    }
}

/// A key moment as the analysis takes it; a branch id is checked, since one
/// ignored would save a pattern from the main chain's thought.
fn key_moment(i: usize, m: params::KeyMoment) -> Result<KeyMoment> {
    use params::MomentKindName as Name;
    let field = format!("keyMoments[{i}]");
    let thought_number =
        params::thought_number(&format!("{field}.thoughtNumber"), Some(m.thought_number))?.unwrap_or(m.thought_number);
    if let Some(b) = &m.branch_id {
        domain::validate_branch_id("branchId", b).map_err(|e| within(field.clone(), e))?;
    }
    if let Some(s) = m.significance
        && !(1..=10).contains(&s)
    {
        return Err(Error::invalid(
            format!("{field}.significance"),
            format!("{field}.significance must be between 1 and 10, got {s}"),
        ));
    }
    Ok(KeyMoment {
        thought_number,
        branch_id: m.branch_id,
        kind: match m.kind {
            Name::Insight => MomentKind::Insight,
            Name::Decision => MomentKind::Decision,
            Name::Pivot => MomentKind::Pivot,
            Name::Revision => MomentKind::Revision,
            Name::Branch => MomentKind::Branch,
        },
        significance: m.significance,
        summary: m.summary,
    })
}

/// The parts of a learning saved as a knowledge pattern.
fn as_pattern(l: &ExtractedLearning, session_id: &str, tags: Vec<String>) -> NewPattern {
    let kind = match l.kind {
        LearningType::AntiPattern => "An anti-pattern",
        _ => "A pattern",
    };
    NewPattern {
        title: l.title.chars().take(crate::knowledge::MAX_TITLE_CHARS).collect(),
        description: format!("{kind} extracted from session {session_id} ({}).", l.target_path),
        tags,
        content: l.content.clone(),
        derived_from_sessions: vec![session_id.to_string()],
        created_by: Some("extract_learnings".into()),
    }
}

/// `session extract_learnings`: learnings from key moments; with `save: true`
/// the pattern and anti-pattern learnings are also stored as knowledge
/// patterns (the only thing this operation ever writes).
pub async fn extract_learnings(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ExtractLearnings = args.parse("session.extract_learnings")?;
    let id = session_or_active(gw, p.session_id, &args)?;
    let moments = p.key_moments.unwrap_or_default();
    if moments.len() > MAX_KEY_MOMENTS {
        return Err(Error::invalid(
            "keyMoments",
            format!("at most {MAX_KEY_MOMENTS} key moments per call"),
        ));
    }
    let moments: Vec<KeyMoment> = moments
        .into_iter()
        .enumerate()
        .map(|(i, m)| key_moment(i, m))
        .collect::<Result<_>>()?;
    let given_targets = p.target_types.is_some();
    let moments_given = !moments.is_empty();
    let targets: Vec<LearningType> = match p.target_types {
        None => vec![LearningType::Signal],
        Some(list) if list.is_empty() => {
            return Err(Error::invalid_with(
                "targetTypes",
                "targetTypes must name at least one of pattern, anti-pattern, signal",
                json!({ "allowed": LearningType::NAMES }),
            ));
        }
        Some(list) => list
            .into_iter()
            .map(|t| match t {
                params::LearningTypeName::Pattern => LearningType::Pattern,
                params::LearningTypeName::AntiPattern => LearningType::AntiPattern,
                params::LearningTypeName::Signal => LearningType::Signal,
            })
            .collect(),
    };
    let save = p.save.unwrap_or(false);
    refuse_stray_session_id(&args, Some(&id), false)?;
    if save && gw.options.stages && gw.stage() < Stage::CipherLoaded {
        return Err(Error::StageRequirementNotMet {
            operation: "session extract_learnings with save".into(),
            current: gw.stage().number(),
            required: Stage::CipherLoaded.number(),
            suggestion: Stage::CipherLoaded.how_to_reach().into(),
        });
    }
    let now = domain::now();
    // The analysis reads on the blocking pool; saving its patterns is a
    // write, for the writer thread.
    let (mut extraction, to_save) = gw
        .heavy(move |s| {
            let (session, thoughts, critiques) = s.analysis_input(&id)?;
            let x = analysis::extract_learnings(&session, &thoughts, critiques, &moments, &targets, &now)?;
            let mut to_save = Vec::new();
            if save {
                to_save = x
                    .learnings
                    .iter()
                    .filter(|l| l.kind != LearningType::Signal)
                    .map(|l| {
                        let kind = if l.kind == LearningType::Pattern {
                            "pattern"
                        } else {
                            "anti-pattern"
                        };
                        // With the session's project, so that a project's
                        // learnings can be listed by tag.
                        let mut tags = vec!["learning".to_string(), kind.to_string()];
                        tags.extend(session.tags.iter().filter(|t| t.starts_with("project:")).cloned());
                        as_pattern(l, &session.id, tags).validated()
                    })
                    .collect::<Result<Vec<_>>>()?;
            }
            Ok((x, to_save))
        })
        .await?;
    let saved = if save {
        gw.write(move |s| s.create_patterns_once(&to_save)).await?
    } else {
        Vec::new()
    };
    // Key moments with the default targetTypes (the signal only) give no
    // learning from them and save nothing: said in a note.
    if moments_given && !given_targets {
        let say = "keyMoments were given, but targetTypes defaults to [\"signal\"] (the session's outcome only): pass \
                   targetTypes: [\"pattern\", \"anti-pattern\"] to extract learnings from them (and save: true to \
                   keep them as knowledge patterns)";
        answers::add_note(&mut extraction.note, say);
    }
    // Without key moments only the signal can be drawn: say how to get more.
    if !moments_given {
        let say = "no keyMoments were given, so only the session's signal (its outcome and metrics, as JSON text in \
                   content) was drawn: pass keyMoments [{thoughtNumber, type, significance}] and targetTypes \
                   [\"pattern\", \"anti-pattern\"] to extract learnings (save: true keeps them as knowledge patterns)";
        answers::add_note(&mut extraction.note, say);
    }
    let saved = save.then(|| {
        gw.wrote();
        // Every learning's pattern id; those saved by an earlier call (the
        // same learning of the same session) also under alreadySaved.
        let ids = |keep: fn(Saved) -> bool| -> Vec<String> {
            saved
                .iter()
                .filter(|(_, how)| keep(*how))
                .map(|(p, _)| p.id.clone())
                .collect()
        };
        SavedPatterns {
            saved_patterns: ids(|_| true),
            already_saved: ids(|how| how == Saved::Already),
        }
    });
    answers::to_value(&ExtractionAnswer { extraction, saved })
}

/// The arguments of `deep_analysis`. A bad field inside `options` is
/// reported on its own name (`includeTimeline`, `compareWith`), as it was
/// when `options` was read as arguments of its own.
fn deep_params(args: &Args) -> Result<params::DeepAnalysis> {
    let p = args.parse("deep_analysis").map_err(|e| match e {
        Error::InvalidPayload {
            field,
            message,
            details,
        } if field.starts_with("options.") => Error::InvalidPayload {
            field: field["options.".len()..]
                .split('[')
                .next()
                .unwrap_or_default()
                .to_string(),
            message,
            details,
        },
        other => other,
    })?;
    Ok(p)
}

fn deep_options(p: params::DeepAnalysis) -> Result<(DeepOptions, Vec<String>)> {
    use params::AnalysisTypeName as Name;
    let analysis_type = match p.analysis_type {
        Some(Name::Patterns) => AnalysisType::Patterns,
        Some(Name::CognitiveLoad) => AnalysisType::CognitiveLoad,
        Some(Name::DecisionPoints) => AnalysisType::DecisionPoints,
        Some(Name::Full) | None => AnalysisType::Full,
    };
    // What `options` says comes first, then the same name given flat.
    let options = p.options.unwrap_or_default();
    let include_timeline = options.include_timeline.or(p.include_timeline).unwrap_or(true);
    let timeline_entries = options
        .include_timeline_entries
        .or(p.include_timeline_entries)
        .unwrap_or(false);
    let mut compare_with = options.compare_with.or(p.compare_with).unwrap_or_default();
    // Each session once (one id named eleven times is not "more than 10
    // sessions").
    let mut seen = std::collections::HashSet::new();
    compare_with.retain(|c| seen.insert(c.clone()));
    if compare_with.len() > MAX_COMPARE {
        return Err(Error::invalid(
            "compareWith",
            format!("compareWith names at most {MAX_COMPARE} sessions"),
        ));
    }
    if compare_with.iter().any(|c| c.is_empty()) {
        return Err(Error::invalid("compareWith", "compareWith must hold session ids"));
    }
    Ok((
        DeepOptions {
            analysis_type,
            include_timeline,
            timeline_entries,
        },
        compare_with.into_iter().map(SessionId::into_string).collect(),
    ))
}

pub async fn deep_analysis(gw: &Gateway, args: Args) -> Result<Value> {
    let mut p = deep_params(&args)?;
    let id = session_or_active(gw, p.session_id.take(), &args)?;
    let (options, compare_with) = deep_options(p)?;
    refuse_stray_session_id(&args, Some(&id), false)?;
    let now = domain::now();
    let (result, comparisons, missing) = gw
        .heavy(move |s| {
            let (session, thoughts) = s.session_thoughts(&id)?;
            let base = analysis::deep_analysis(&session, &thoughts, options, &now);
            let mut comparisons = Vec::with_capacity(compare_with.len());
            // A session to compare with that is gone (deleted meanwhile, or
            // mistyped) is named, and the rest answered, rather than failing
            // the whole analysis.
            let mut missing = Vec::new();
            for other in &compare_with {
                let (os, ot) = match s.session_thoughts(other) {
                    Ok(found) => found,
                    Err(Error::SessionNotFound { .. }) => {
                        missing.push(other.clone());
                        continue;
                    }
                    Err(e) => return Err(e),
                };
                let r = analysis::deep_analysis(&os, &ot, options, &now);
                comparisons.push(compare(&base, &r, &os.title));
            }
            Ok((base, comparisons, missing))
        })
        .await?;
    let note = (!missing.is_empty()).then(|| {
        format!(
            "no session has the id {}: left out of the comparison",
            missing.join(", ")
        )
    });
    answers::to_value(&DeepAnalysisAnswer {
        analysis: result,
        comparison: comparisons,
        compare_with_not_found: missing,
        note,
    })
}
