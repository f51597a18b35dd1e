use proptest::prelude::*;

use super::*;
use crate::domain::thread::{parse_registry, validate};
use crate::store::test_support::temp_store;

fn spawn(store: &Store, parent: Option<&str>, title: &str) -> Result<Thread> {
    store
        .spawn_thread(
            Spawn {
                parent_id: parent.map(str::to_string),
                session: NewSession::titled(title),
                objective: format!("objective of {title}"),
            },
            Operator::Agent,
        )
        .map(|(t, _)| t)
}

#[test]
fn existing_sessions_are_active_root_threads() {
    let (_d, store) = temp_store();
    let mut new = NewSession::titled("Old work");
    new.description = Some("what it was for".into());
    let s = store.create_session(new).unwrap();
    let (t, r) = store.thread(&s.id).unwrap();
    assert_eq!(t.status, ThreadStatus::Active);
    assert_eq!(t.parent_id, None);
    assert_eq!(t.objective, "what it was for");
    assert!(
        t.storage_path.starts_with("projects/_default/sessions/"),
        "{}",
        t.storage_path
    );
    assert!(t.storage_path.ends_with(&s.id));
    assert_eq!(r, Relations::default());
}

#[test]
fn the_log_refuses_updates_and_deletes() {
    let (_d, store) = temp_store();
    let a = spawn(&store, None, "a").unwrap();
    for sql in [
        "UPDATE thread_operations SET operator = 'user'",
        "DELETE FROM thread_operations",
    ] {
        let e = store.write(|tx| Ok(tx.execute(sql, [])?)).unwrap_err();
        assert!(e.to_string().contains("append-only"), "{sql}: {e}");
    }
    assert_eq!(store.thread_log(Some(&a.id), 10, 0).unwrap().total, 1);
}

#[test]
fn a_frozen_thread_refuses_changes_and_keeps_its_children_open() {
    let (_d, store) = temp_store();
    let a = spawn(&store, None, "a").unwrap();
    let b = spawn(&store, Some(&a.id), "b").unwrap();
    store
        .set_thread_status(&a.id, ThreadStatus::Frozen, Operator::User)
        .unwrap();
    let e = store
        .append_thought(
            crate::store::Target::Session(a.id.clone()),
            crate::domain::ThoughtInput {
                thought: "x".into(),
                next_thought_needed: true,
                ..Default::default()
            },
        )
        .unwrap_err();
    assert_eq!(e.code(), "INVALID_OPERATION");
    assert_eq!(e.details().unwrap()["status"], "frozen");
    assert_eq!(store.session(&a.id).unwrap().thought_count, 0);
    assert!(store.delete_session(&a.id).is_err());
    assert!(
        store
            .update_thread(
                &a.id,
                ThreadUpdate {
                    title: Some("t".into()),
                    ..Default::default()
                },
                Operator::Agent
            )
            .is_err()
    );
    // Its child is still active; references to it still work.
    assert_eq!(store.thread(&b.id).unwrap().0.status, ThreadStatus::Active);
    assert!(
        store
            .reference_thread(&b.id, &a.id, None, Operator::Agent)
            .unwrap()
            .is_some()
    );
    store
        .set_thread_status(&a.id, ThreadStatus::Archived, Operator::User)
        .unwrap();
    let e = spawn(&store, Some(&a.id), "c").unwrap_err();
    assert!(e.to_string().contains("archived"), "{e}");
}

#[test]
fn dependencies_refuse_cycles_and_relations_mirror() {
    let (_d, store) = temp_store();
    let [a, b, c] = ["a", "b", "c"].map(|n| spawn(&store, None, n).unwrap().id);
    store.depend_thread(&a, &b, Operator::Agent).unwrap();
    store.depend_thread(&b, &c, Operator::Agent).unwrap();
    let e = store.depend_thread(&c, &a, Operator::Agent).unwrap_err();
    assert_eq!(e.details().unwrap()["cycle"], json!([a, b, c]));
    assert!(store.depend_thread(&a, &a, Operator::Agent).is_err());
    assert!(
        store.depend_thread(&a, &b, Operator::Agent).unwrap().is_none(),
        "recorded once"
    );
    store
        .reference_thread(&a, &c, Some("projects/x/y.json"), Operator::Agent)
        .unwrap();
    assert_eq!(store.thread(&c).unwrap().1.referenced_by, vec![a.clone()]);
    assert_eq!(store.thread(&a).unwrap().1.depends_on, vec![b.clone()]);
}

#[test]
fn export_import_export_is_identical() {
    let (_d, store) = temp_store();
    let a = spawn(&store, None, "a").unwrap().id;
    let b = spawn(&store, Some(&a), "b").unwrap().id;
    store
        .reference_thread(&b, &a, Some("notes/plan.md"), Operator::Agent)
        .unwrap();
    store.reference_thread(&b, &a, None, Operator::Agent).unwrap();
    store.depend_thread(&a, &b, Operator::System).unwrap();
    store
        .set_thread_status(&b, ThreadStatus::Frozen, Operator::User)
        .unwrap();
    let first = serde_json::to_string_pretty(&store.export_registry().unwrap()).unwrap();
    let parsed = parse_registry(&first).unwrap();
    let (_d2, empty) = temp_store();
    let done = empty.import_registry(&parsed).unwrap();
    assert_eq!(done.threads_created, 2);
    assert_eq!(done.references_added, 2, "both asset paths come back from the log");
    let second = serde_json::to_string_pretty(&empty.export_registry().unwrap()).unwrap();
    assert_eq!(first, second);
    // Again into the same ledger: nothing new.
    let again = empty.import_registry(&parsed).unwrap();
    assert_eq!(again, RegistryImport::default());
}

/// One registry change, on threads chosen by index among those existing.
#[derive(Debug, Clone)]
enum Step {
    Spawn(Option<usize>),
    Reference(usize, usize, bool),
    Depend(usize, usize),
    Freeze(usize),
    Archive(usize),
    Update(usize),
    Delete(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => proptest::option::of(0..8usize).prop_map(Step::Spawn),
        2 => (0..8usize, 0..8usize, any::<bool>()).prop_map(|(a, b, p)| Step::Reference(a, b, p)),
        2 => (0..8usize, 0..8usize).prop_map(|(a, b)| Step::Depend(a, b)),
        1 => (0..8usize).prop_map(Step::Freeze),
        1 => (0..8usize).prop_map(Step::Archive),
        1 => (0..8usize).prop_map(Step::Update),
        1 => (0..8usize).prop_map(Step::Delete),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever sequence of changes (refused ones included), the exported
    /// registry keeps every validation rule of the format, and survives an
    /// export -> import -> export round trip unchanged.
    #[test]
    fn random_changes_keep_every_rule(steps in proptest::collection::vec(step(), 1..40)) {
        let (_d, store) = temp_store();
        let mut ids: Vec<String> = Vec::new();
        let pick = |ids: &[String], i: usize| ids.get(i % ids.len().max(1)).cloned();
        for s in steps {
            let op = Operator::Agent;
            // Refusals are part of the test: they must leave the rules true.
            let _ = match s {
                Step::Spawn(p) => {
                    let parent = p.and_then(|i| pick(&ids, i));
                    spawn(&store, parent.as_deref(), "t").map(|t| ids.push(t.id))
                }
                Step::Reference(a, b, with_path) => match (pick(&ids, a), pick(&ids, b)) {
                    (Some(a), Some(b)) => {
                        store.reference_thread(&a, &b, with_path.then_some("files/x.md"), op).map(|_| ())
                    }
                    _ => Ok(()),
                },
                Step::Depend(a, b) => match (pick(&ids, a), pick(&ids, b)) {
                    (Some(a), Some(b)) => store.depend_thread(&a, &b, op).map(|_| ()),
                    _ => Ok(()),
                },
                Step::Freeze(a) | Step::Archive(a) => match pick(&ids, a) {
                    Some(id) => {
                        let to = if matches!(s, Step::Freeze(_)) { ThreadStatus::Frozen } else { ThreadStatus::Archived };
                        store.set_thread_status(&id, to, op).map(|_| ())
                    }
                    None => Ok(()),
                },
                Step::Update(a) => match pick(&ids, a) {
                    Some(id) => store
                        .update_thread(&id, ThreadUpdate { objective: Some("new".into()), ..Default::default() }, op)
                        .map(|_| ()),
                    None => Ok(()),
                },
                Step::Delete(a) => match pick(&ids, a) {
                    Some(id) => store.delete_session(&id).map(|_| ids.retain(|i| *i != id)),
                    None => Ok(()),
                },
            };
        }
        let exported = store.export_registry().unwrap();
        let value = serde_json::to_value(&exported).unwrap();
        prop_assert_eq!(validate(&value, None), vec![]);
        prop_assert_eq!(exported.metadata.thread_count as usize, ids.len());
        let text = serde_json::to_string(&exported).unwrap();
        let (_d2, empty) = temp_store();
        empty.import_registry(&parse_registry(&text).unwrap()).unwrap();
        prop_assert_eq!(serde_json::to_string(&empty.export_registry().unwrap()).unwrap(), text);
    }
}
