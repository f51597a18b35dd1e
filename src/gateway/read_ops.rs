//! Reading a session back: `read_thoughts` and `get_structure`.

use serde_json::{Value, json};

use super::ops::{read_thought_json, refuse_stray_session_id, session_or_active};
use super::preview::{Preview, ReadRest};
use super::{Args, Gateway, answers, params};
use crate::domain;
use crate::error::{Error, Result};
use crate::store::{Pick, Structure, ThoughtQuery};

fn read_query(p: &params::ReadThoughts) -> Result<(ThoughtQuery, answers::QueryEcho)> {
    let number = params::thought_number("thoughtNumber", p.thought_number)?;
    let last = params::thought_number("last", p.last)?;
    let branch = p.branch_id.clone();
    // A bad end is reported on `range`, the field the caller sent.
    let range = match p.range.map(params::ThoughtRange::ends) {
        Some((start, end)) => {
            let end_of = |name: &str, n: u32| {
                params::thought_number(name, Some(n)).map(|_| n).map_err(|e| match e {
                    Error::InvalidPayload { message, details, .. } => Error::InvalidPayload {
                        field: "range".into(),
                        message: format!("range {message}"),
                        details,
                    },
                    other => other,
                })
            };
            Some((end_of("start", start)?, end_of("end", end)?))
        }
        None => None,
    };
    if let Some(b) = &branch {
        domain::validate_branch_id("branchId", b)?;
    }
    let picks = [number.is_some(), last.is_some(), range.is_some()];
    if picks.iter().filter(|m| **m).count() > 1 {
        // The specification's query modes are exclusive; `branchId` says
        // which chain any one of them reads.
        return Err(Error::InvalidOperation {
            message: "read_thoughts takes one of thoughtNumber, last or range (each with branchId to read a \
                      branch's thoughts instead of the main chain's), not several"
                .into(),
            details: Some(json!({ "modes": ["thoughtNumber", "last", "range", "branchId"] })),
        });
    }
    let pick = if let Some(n) = number {
        Pick::Number(n)
    } else if let Some(n) = last {
        Pick::Last(n)
    } else if let Some((start, end)) = range {
        if start > end {
            return Err(Error::invalid(
                "range",
                format!("range start {start} is after its end {end}"),
            ));
        }
        Pick::Range(start, end)
    } else if branch.is_some() {
        Pick::All
    } else {
        let query = ThoughtQuery::main(Pick::Last(5));
        let echo = answers::QueryEcho::of(&query, true);
        return Ok((query, echo));
    };
    let query = ThoughtQuery::on(branch, pick);
    let echo = answers::QueryEcho::of(&query, false);
    Ok((query, echo))
}

/// The arguments of `read_thoughts`; a range in neither form is said as
/// the two forms it takes.
fn read_params(args: &Args) -> Result<params::ReadThoughts> {
    args.parse("read_thoughts").map_err(|e| match e {
        Error::InvalidPayload { field, .. }
            if field == "range" || field.starts_with("range.") || field.starts_with("range[") =>
        {
            Error::invalid(
                "range",
                "range must be [start, end] or { \"start\": s, \"end\": e }, each a whole number",
            )
        }
        other => other,
    })
}

pub async fn read_thoughts(gw: &Gateway, args: Args) -> Result<Value> {
    let p = read_params(&args)?;
    let (query, echo) = read_query(&p)?;
    // One thought asked for by number is answered whole; every other read
    // is an overview, cut for a model unless `full: true`.
    let full = p.full.unwrap_or(false) || matches!(query.pick, Pick::Number(_));
    let newest_first = matches!(query.pick, Pick::Last(_));
    let session_id = session_or_active(gw, p.session_id, &args)?;
    refuse_stray_session_id(&args, Some(&session_id), false)?;
    let sid = session_id.clone();
    let branch = query.branch.clone();
    // An overview stops reading at the first thought it would not list (in
    // the order it spends its budget, as the rows come); a whole read is
    // given up as soon as its text could no longer fit in one answer,
    // before the rest is loaded (`last` or `range` may span a whole session).
    let (thoughts, unread, also_on, loaded) = gw
        .blocking(move |s| {
            let mut budget = super::TextBudget::default();
            let mut listing = Preview::new(full);
            let (thoughts, unread) = s.read_thoughts_checked(&sid, &query, &mut |t| {
                if full {
                    budget.add(t)?;
                }
                let critique = t.data.critique.as_ref().map_or(0, |c| c.text.chars().count());
                Ok(listing.admit(t.data.thought.chars().count(), critique).is_some())
            })?;
            let loaded = budget.bytes;
            let revised_by = s.revised_by_nodes(&sid, thoughts.iter().map(|t| t.node_id.as_str()))?;
            // A number alone names a main-chain thought; branches may hold
            // the same number, which the agent may have meant: they are named.
            let also_on = match (&query.branch, query.pick) {
                (None, Pick::Number(n)) => s.branches_with_number(&sid, n, "", crate::store::MAX_BRANCHES_NAMED)?,
                _ => Vec::new(),
            };
            let thoughts = thoughts
                .iter()
                .map(|t| read_thought_json(t, &revised_by))
                .collect::<Vec<_>>();
            Ok((thoughts, unread, also_on, loaded))
        })
        .await?;
    // Megabytes read and then cut are heavy work all the same: the memory
    // they took goes back to the system (see crate::memory).
    if loaded >= crate::memory::LARGE_ANSWER {
        gw.release.heavy_work_done();
    }
    let mut preview = Preview::new(full);
    let thoughts = preview.apply(thoughts, newest_first);
    if let Some(unread) = unread {
        preview.also_left_out(unread.count);
        preview.read_rest(ReadRest {
            session_id: session_id.clone(),
            range: [unread.first, unread.last],
            branch_id: branch,
        });
    }
    answers::to_value(&answers::ReadThoughtsAnswer {
        session_id,
        query: echo,
        count: thoughts.len(),
        thoughts,
        also_on_branches: also_on,
        truncated: preview.truncated(),
    })
}

/// The branches, and the revisions, `get_structure` lists at most.
const MAX_SHAPES: usize = 1_000;

/// A session's shape as `get_structure` answers it.
fn structure_answer(session_id: String, st: Structure) -> answers::StructureAnswer {
    let revisions: Vec<answers::RevisionShape> = st
        .revisions
        .into_iter()
        .filter_map(|s| {
            s.revises.map(|revises| answers::RevisionShape {
                thought_number: s.number,
                revises,
                branch_id: s.branch_id,
            })
        })
        .collect();
    let branches: Vec<answers::BranchShape> = st
        .branches
        .into_iter()
        .map(|b| answers::BranchShape {
            id: b.id,
            from_thought: b.from_thought,
            count: b.count,
            range: answers::Ends {
                first: b.first,
                last: b.last,
            },
        })
        .collect();
    let (first, last) = (st.main_first, st.main_last);
    let (branch_count, revision_count) = (branches.len(), revisions.len());
    // The counts say how many there are; the lists stay a size a model
    // reads (5,000 branches listed made an answer of 1.3 MB).
    let mut branches = branches;
    let mut revisions = revisions;
    branches.truncate(MAX_SHAPES);
    revisions.truncate(MAX_SHAPES);
    answers::StructureAnswer {
        session_id,
        main_chain: answers::MainChain {
            count: st.main_count,
            range: answers::Ends { first, last },
            length: st.main_count,
            head: first,
            tail: last,
        },
        summary: answers::StructureSummary {
            total_thoughts: st.thoughts,
            total_branches: branch_count,
            total_revisions: revision_count,
        },
        total_thoughts: st.thoughts,
        branch_count,
        revision_count,
        branches,
        revisions,
    }
}

pub async fn get_structure(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::GetStructure = args.parse("get_structure")?;
    let session_id = session_or_active(gw, p.session_id, &args)?;
    refuse_stray_session_id(&args, Some(&session_id), false)?;
    let sid = session_id.clone();
    let structure = gw.blocking(move |s| s.structure(&sid)).await?;
    answers::to_value(&structure_answer(session_id, structure))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Branch;

    #[test]
    fn a_structure_lists_a_bounded_number_of_branches_and_counts_all() {
        let branches = (0..MAX_SHAPES + 5)
            .map(|i| Branch {
                id: format!("b{i}"),
                from_thought: 1,
                origin_node: "s:1".into(),
                count: 1,
                first: Some(2),
                last: Some(2),
                created_at: String::new(),
            })
            .collect();
        let st = Structure {
            thoughts: 1_006,
            main_count: 1,
            main_first: Some(1),
            main_last: Some(1),
            branches,
            revisions: Vec::new(),
        };
        let answer = structure_answer("s".into(), st);
        assert_eq!(answer.branches.len(), MAX_SHAPES);
        assert_eq!(
            (answer.branch_count, answer.summary.total_branches),
            (MAX_SHAPES + 5, MAX_SHAPES + 5)
        );
    }
}
