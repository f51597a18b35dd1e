//! The `thread` operation: the thread registry (docs/threads.md) over
//! sessions. Each change runs in one write transaction with its
//! operations-log row (see `store::threads`); the operator is `agent` unless
//! the call names one.

use serde_json::{Value, json};

use super::answers::thread::{
    LinkAnswer, ThreadChangedAnswer, ThreadGetAnswer, ThreadListAnswer, ThreadLogAnswer, ThreadTreeAnswer, nest,
};
use super::{Args, Gateway, answers, params};
use crate::domain::thread::{Operation, Operator, Thread, ThreadStatus, parse_registry, violations_error};
use crate::domain::{NewSession, SessionId};
use crate::error::{Error, Result};
use crate::store::{Spawn, ThreadFilter};

pub async fn thread(gw: &Gateway, args: Args) -> Result<Value> {
    let (name, args) = args.sub_operation("thread")?;
    let name = super::refused::required_sub_operation("thread", name)?;
    match name.as_str() {
        "spawn" => spawn(gw, args).await,
        "reference" => reference(gw, args).await,
        "depend" => depend(gw, args).await,
        "freeze" => set_status(gw, args, ThreadStatus::Frozen).await,
        "archive" => set_status(gw, args, ThreadStatus::Archived).await,
        "update" => update(gw, args).await,
        "get" => get(gw, args).await,
        "list" => list(gw, args).await,
        "tree" => tree(gw, args).await,
        "log" => log(gw, args).await,
        "export" => {
            let _: params::ThreadExport = args.parse("thread.export")?;
            let registry = gw.heavy(|s| s.export_registry()).await?;
            answers::to_value(&registry)
        }
        "import" => import(gw, args).await,
        other => Err(super::refused::unknown_sub_operation("thread", other)),
    }
}

fn operator(given: Option<params::OperatorName>) -> Operator {
    match given {
        Some(params::OperatorName::User) => Operator::User,
        Some(params::OperatorName::System) => Operator::System,
        Some(params::OperatorName::Agent) | None => Operator::Agent,
    }
}

/// A required thread id named `field` (read in the form the ledger
/// stores); blank is refused.
fn id_given(field: &str, id: &SessionId) -> Result<String> {
    if id.is_empty() {
        return Err(Error::invalid(field, format!("{field} must not be empty")));
    }
    Ok(id.to_string())
}

async fn spawn(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ThreadSpawn = args.parse("thread.spawn")?;
    // A stateless client names its session to be admitted: a spawn from
    // it means a child of it, not a root thread.
    let root = p.root.unwrap_or(false);
    let parent_id = match (&p.parent_id, &p.session_id) {
        (Some(_), _) if root => {
            return Err(Error::invalid(
                "root",
                "root: true spawns a thread with no parent: leave out parentId, or root (nothing was created)",
            ));
        }
        (Some(id), _) => Some(id_given("parentId", id)?),
        (None, _) if root => None,
        (None, Some(id)) => Some(id_given("sessionId", id)?),
        (None, None) => None,
    };
    let mut session = NewSession {
        title: p.title,
        tags: p.tags.unwrap_or_default(),
        ..Default::default()
    };
    if parent_id.is_none() {
        super::init_ops::scope_new_session(gw, &mut session);
    }
    session.checked_as_thread()?;
    let spawn = Spawn {
        parent_id,
        session,
        objective: p.objective,
    };
    let by = operator(p.operator);
    let handle = (p.parent_id.is_none() && !root).then_some(p.session_id).flatten();
    let (thread, op) = gw
        .write(move |s| s.spawn_thread(spawn, by))
        .await
        .map_err(|e| match (e, handle) {
            // The parent came from the handle: an unknown one is that.
            (Error::InvalidPayload { field, .. }, Some(id)) if field == "parentId" => {
                Error::session_not_found(id.into_string())
            }
            (e, _) => e,
        })?;
    gw.wrote();
    changed(
        &thread,
        &op,
        Some(
            "The child session exists: record its thoughts with thought, passing this sessionId (a sub-agent \
             given the sessionId can work in it).",
        ),
    )
}

async fn reference(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ThreadReference = args.parse("thread.reference")?;
    let from = id_given("fromId", &p.from_id)?;
    let to = id_given("toId", &p.to_id)?;
    let by = operator(p.operator);
    let asset = p.asset_path.clone();
    let (f, t) = (from.clone(), to.clone());
    let (op, relations) = gw
        .write(move |s| {
            let op = s.reference_thread(&f, &t, asset.as_deref(), by)?;
            Ok((op, s.thread(&f)?.1))
        })
        .await?;
    gw.wrote();
    answers::to_value(&LinkAnswer {
        session_id: &from,
        from_id: &from,
        to_id: &to,
        asset_path: p.asset_path.as_deref(),
        recorded: op.is_some(),
        operation: op.as_ref(),
        relations: &relations,
    })
}

async fn depend(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ThreadDepend = args.parse("thread.depend")?;
    let from = id_given("fromId", &p.from_id)?;
    let to = id_given("toId", &p.to_id)?;
    let by = operator(p.operator);
    let (f, t) = (from.clone(), to.clone());
    let (op, relations) = gw
        .write(move |s| {
            let op = s.depend_thread(&f, &t, by)?;
            Ok((op, s.thread(&f)?.1))
        })
        .await?;
    gw.wrote();
    answers::to_value(&LinkAnswer {
        session_id: &from,
        from_id: &from,
        to_id: &to,
        asset_path: None,
        recorded: op.is_some(),
        operation: op.as_ref(),
        relations: &relations,
    })
}

async fn set_status(gw: &Gateway, args: Args, to: ThreadStatus) -> Result<Value> {
    let key = if to == ThreadStatus::Frozen {
        "thread.freeze"
    } else {
        "thread.archive"
    };
    let p: params::ThreadRef = args.parse(key)?;
    let id = id_given("threadId", &p.thread_id)?;
    let by = operator(p.operator);
    let (thread, op) = gw.write(move |s| s.set_thread_status(&id, to, by)).await?;
    gw.wrote();
    changed(&thread, &op, None)
}

async fn update(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ThreadUpdate = args.parse("thread.update")?;
    let id = id_given("threadId", &p.thread_id)?;
    let by = operator(p.operator);
    let change = crate::store::ThreadUpdate {
        title: p.title,
        objective: p.objective,
        tags: p.tags,
    };
    let (thread, op) = gw.write(move |s| s.update_thread(&id, change, by)).await?;
    gw.wrote();
    changed(&thread, &op, None)
}

async fn get(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ThreadGet = args.parse("thread.get")?;
    let id = id_given("threadId", &p.thread_id)?;
    let (thread, relations) = gw.blocking(move |s| s.thread(&id)).await?;
    answers::to_value(&ThreadGetAnswer {
        thread_id: &thread.id,
        session_id: &thread.id,
        thread: &thread,
        relations: &relations,
    })
}

async fn list(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ThreadList = args.parse("thread.list")?;
    let limit = p.limit.get("limit")?;
    let filter = ThreadFilter {
        status: p.status.map(|s| match s {
            params::ThreadStatusName::Active => ThreadStatus::Active,
            params::ThreadStatusName::Frozen => ThreadStatus::Frozen,
            params::ThreadStatusName::Archived => ThreadStatus::Archived,
        }),
        parent_id: p.parent_id.as_ref().map(|id| id_given("parentId", id)).transpose()?,
        tag: p.tag,
        limit,
        offset: p.offset.unwrap_or(0),
    };
    let offset = filter.offset;
    let page = gw.blocking(move |s| s.list_threads(&filter)).await?;
    answers::to_value(&ThreadListAnswer {
        count: page.threads.len(),
        has_more: u64::from(offset) + (page.threads.len() as u64) < page.total,
        threads: &page.threads,
        total: page.total,
    })
}

async fn tree(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ThreadGet = args.parse("thread.tree")?;
    let id = id_given("threadId", &p.thread_id)?;
    let crate::store::ThreadTree {
        root,
        descendants,
        truncated,
    } = gw.heavy(move |s| s.thread_tree(&id)).await?;
    let count = descendants.len();
    answers::to_value(&ThreadTreeAnswer {
        thread_id: &root.id,
        session_id: &root.id,
        children: nest(&root.id, descendants),
        thread: &root,
        count,
        truncated,
    })
}

async fn log(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ThreadLog = args.parse("thread.log")?;
    let id = p.thread_id.as_ref().map(|id| id_given("threadId", id)).transpose()?;
    let limit = p.limit.get("limit")?;
    let offset = p.offset.unwrap_or(0);
    let asked = id.clone();
    let page = gw
        .blocking(move |s| s.thread_log(asked.as_deref(), limit, offset))
        .await?;
    answers::to_value(&ThreadLogAnswer {
        thread_id: id.as_deref(),
        count: page.operations.len(),
        has_more: u64::from(offset) + (page.operations.len() as u64) < page.total,
        operations: &page.operations,
        total: page.total,
    })
}

async fn import(gw: &Gateway, args: Args) -> Result<Value> {
    let p: params::ThreadImport = args.parse("thread.import")?;
    let text = Value::Object(p.registry).to_string();
    let registry = parse_registry(&text).map_err(|v| violations_error(&v))?;
    let done = gw.write(move |s| s.import_registry(&registry)).await?;
    gw.wrote();
    let mut out = answers::to_value(&done)?;
    out["imported"] = json!(true);
    Ok(out)
}

/// The answer of a change to a thread: the thread, whose id is also its
/// session's handle, and the logged operation.
fn changed(thread: &Thread, op: &Operation, next_step: Option<&'static str>) -> Result<Value> {
    answers::to_value(&ThreadChangedAnswer {
        thread_id: &thread.id,
        session_id: &thread.id,
        thread,
        operation: op,
        next_step,
    })
}
