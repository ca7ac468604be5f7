//! The child supervisor: unfenced first try, conditional on a stale fence,
//! several nodes at once, and rebuilding after a restart.

mod common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use common::{Rival, finish, id, park_on, resumes, yielding};
use loomfence_conformance::support::around;
use loomfence_core::{Capability, ExecutionId, InputError, KernelKind, ResumeError, park::Wait};
use loomfence_runtime::{
    ChildSupervisor, RuntimeError, supervise::Supervised, supervise::SupervisorOptions,
};
use loomfence_store::{EventStore, MemoryEventStore};
use serde_json::json;

/// Options with a fixed clock and an `on_error` that records what it gets.
fn recording() -> (SupervisorOptions, Arc<Mutex<Vec<String>>>) {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let sink = errors.clone();
    let options = SupervisorOptions {
        conditional_tries: 3,
        on_error: Arc::new(move |parent: &ExecutionId, error: &RuntimeError| {
            sink.lock()
                .expect("lock")
                .push(format!("{parent}: {error}"));
        }),
        now: Arc::new(|| 1_000),
        ..SupervisorOptions::default()
    };
    (options, errors)
}

fn resumed(result: Result<Supervised, RuntimeError>) -> loomfence_core::Resumed {
    match result {
        Ok(Supervised::Resumed(resumed)) => resumed,
        other => panic!("expected a resume, got {other:?}"),
    }
}

#[tokio::test]
async fn a_parent_is_resumed_unfenced_with_its_childs_outcome() {
    let store = Arc::new(MemoryEventStore::new());
    park_on(&*store, &id("parent"), &[Wait::Child(id("child"))]).await;
    let (options, errors) = recording();
    let supervisor = ChildSupervisor::new(store.clone(), options);
    assert_eq!(
        supervisor.watch(&id("parent")).await.expect("watches"),
        Supervised::Waiting
    );
    assert_eq!(supervisor.parents_waiting_on(&id("child")), [id("parent")]);

    finish(
        &*store,
        &id("child"),
        KernelKind::ExecutionCompleted,
        json!({ "total": 7 }),
    )
    .await;
    let results = supervisor.child_ended(&id("child")).await;
    assert_eq!(results.len(), 1);
    let resumed = resumed(results.into_iter().next().expect("one parent").1);
    assert_eq!(resumed.fence, None, "the first try takes no token");
    assert_eq!(store.current_fence(&id("parent")).await.expect("reads"), 0);
    assert_eq!(
        resumed.resumed.payload["answer"],
        json!({ "wait": 0, "children": { "child": { "status": "completed", "output": { "output": { "total": 7 } } } } })
    );
    assert_eq!(resumed.resumed.at, 1_000);
    assert!(supervisor.parents_waiting_on(&id("child")).is_empty());
    assert!(errors.lock().expect("lock").is_empty());
}

#[tokio::test]
async fn a_group_is_answered_only_when_every_member_has_ended() {
    let store = Arc::new(MemoryEventStore::new());
    park_on(
        &*store,
        &id("parent"),
        &[Wait::Group(vec![id("a"), id("b")])],
    )
    .await;
    let supervisor = ChildSupervisor::new(store.clone(), recording().0);
    assert_eq!(
        supervisor.watch(&id("parent")).await.expect("watches"),
        Supervised::Waiting
    );
    finish(&*store, &id("a"), KernelKind::ExecutionCompleted, json!(1)).await;
    let first = supervisor.child_ended(&id("a")).await;
    assert!(matches!(first[0].1, Ok(Supervised::Waiting)), "{first:?}");
    finish(
        &*store,
        &id("b"),
        KernelKind::ExecutionFailed,
        json!("boom"),
    )
    .await;
    let answer = resumed(supervisor.child_ended(&id("b")).await.remove(0).1)
        .resumed
        .payload["answer"]
        .clone();
    assert_eq!(answer["children"]["a"]["status"], json!("completed"));
    assert_eq!(answer["children"]["b"]["status"], json!("failed"));
}

#[tokio::test]
async fn a_fenced_parent_is_resumed_conditionally_past_a_dead_acquirer() {
    let store = Arc::new(MemoryEventStore::new());
    park_on(&*store, &id("parent"), &[Wait::Child(id("child"))]).await;
    store
        .acquire_fence(&id("parent"))
        .await
        .expect("a crashed node acquired once");
    finish(
        &*store,
        &id("child"),
        KernelKind::ExecutionCompleted,
        json!(null),
    )
    .await;
    let supervisor = ChildSupervisor::new(store.clone(), recording().0);
    let resumed = resumed(supervisor.watch(&id("parent")).await);
    assert_eq!((resumed.fence, resumed.attempts), (Some(2), 2));
    assert_eq!(resumes(&*store, &id("parent")).await.len(), 1);
}

#[tokio::test]
async fn a_rival_behind_every_acquire_exhausts_three_tries_then_reports_once() {
    let store = Arc::new(around(Capability::Conditional, Rival::default()));
    park_on(&*store, &id("parent"), &[Wait::Child(id("child"))]).await;
    store
        .acquire_fence(&id("parent"))
        .await
        .expect("fenced, so the unfenced try is stale");
    finish(
        &*store,
        &id("child"),
        KernelKind::ExecutionCompleted,
        json!(null),
    )
    .await;
    let (options, errors) = recording();
    let supervisor = ChildSupervisor::new(store.clone(), options);
    let error = supervisor
        .watch(&id("parent"))
        .await
        .expect_err("every try was contended");
    assert!(error.is_contended(), "{error:?}");
    match &error {
        RuntimeError::Resume(ResumeError::Contended(contended)) => {
            assert_eq!(contended.attempts, 3);
            assert_eq!(contended.execution_id, id("parent"));
        }
        other => panic!("expected a contended resume, got {other:?}"),
    }
    assert_eq!(
        store.hooks.conditional_acquires.load(Ordering::SeqCst),
        9,
        "three resumes of three attempts"
    );
    assert!(resumes(&*store, &id("parent")).await.is_empty());
    {
        let errors = errors.lock().expect("lock");
        assert_eq!(errors.len(), 1, "reported once: {errors:?}");
        assert!(errors[0].contains("contended"), "{errors:?}");
    }
    assert_eq!(
        supervisor.parents_waiting_on(&id("child")),
        [id("parent")],
        "still watched"
    );

    // The kept edges make the next notice try again: reported again, once.
    let again = supervisor.child_ended(&id("child")).await;
    assert_eq!(again.len(), 1, "{again:?}");
    assert_eq!(again[0].0, id("parent"));
    assert!(
        again[0].1.as_ref().is_err_and(RuntimeError::is_contended),
        "{again:?}"
    );
    assert_eq!(errors.lock().expect("lock").len(), 2);
    assert_eq!(store.hooks.conditional_acquires.load(Ordering::SeqCst), 18);
    assert_eq!(
        supervisor.parents_waiting_on(&id("child")),
        [id("parent")],
        "still watched"
    );
}

#[tokio::test]
async fn a_park_without_child_waits_is_not_the_supervisors() {
    let store = Arc::new(MemoryEventStore::new());
    park_on(&*store, &id("parent"), &[Wait::Timer { wake_at: 5 }]).await;
    let supervisor = ChildSupervisor::new(store, recording().0);
    assert_eq!(
        supervisor.watch(&id("parent")).await.expect("watches"),
        Supervised::NotWaitingOnChildren
    );
}

#[tokio::test]
async fn an_unreadable_park_is_reported() {
    let store = Arc::new(MemoryEventStore::new());
    store
        .append(
            &id("parent"),
            loomfence_core::NewEvent::kernel(KernelKind::ExecutionSuspended, 0),
        )
        .await
        .expect("parks with no waits");
    let (options, errors) = recording();
    let supervisor = ChildSupervisor::new(store, options);
    let result = supervisor.watch(&id("parent")).await;
    assert!(
        matches!(
            result,
            Err(RuntimeError::Input(InputError::UnreadablePark { .. }))
        ),
        "{result:?}"
    );
    assert_eq!(errors.lock().expect("lock").len(), 1);
}

#[tokio::test]
async fn after_a_restart_rebuild_resumes_what_became_ready() {
    let store = Arc::new(MemoryEventStore::new());
    for n in 0..3 {
        park_on(
            &*store,
            &id(&format!("parent-{n}")),
            &[Wait::Child(id(&format!("child-{n}")))],
        )
        .await;
    }
    {
        let before_restart = ChildSupervisor::new(store.clone(), recording().0);
        for n in 0..3 {
            assert_eq!(
                before_restart
                    .watch(&id(&format!("parent-{n}")))
                    .await
                    .expect("watches"),
                Supervised::Waiting
            );
        }
    }
    finish(
        &*store,
        &id("child-1"),
        KernelKind::ExecutionCompleted,
        json!(null),
    )
    .await;
    let after_restart = ChildSupervisor::new(store.clone(), recording().0);
    let results = after_restart
        .rebuild(["parent-0", "parent-1", "parent-2"].map(id))
        .await;
    let outcomes: Vec<bool> = results
        .iter()
        .map(|(_, r)| matches!(r, Ok(Supervised::Resumed(_))))
        .collect();
    assert_eq!(outcomes, [false, true, false]);
    assert_eq!(
        after_restart.parents_waiting_on(&id("child-0")),
        [id("parent-0")]
    );
    assert!(after_restart.parents_waiting_on(&id("child-1")).is_empty());
}

/// Four nodes rebuild over the same parents at once. The store yields before
/// every call, so on this single-threaded runtime the nodes interleave at
/// every store call: each node reads each park before any node appends.
/// Without the park-conditional append, every unfenced first try would land.
#[tokio::test(flavor = "current_thread")]
async fn supervisors_on_several_nodes_resume_each_parent_once() {
    for fenced in [false, true] {
        let store = Arc::new(yielding());
        let parents: Vec<ExecutionId> = (0..25).map(|n| id(&format!("parent-{n}"))).collect();
        for (n, parent) in parents.iter().enumerate() {
            park_on(&*store, parent, &[Wait::Child(id(&format!("child-{n}")))]).await;
            if fenced {
                store.acquire_fence(parent).await.expect("fenced before");
            }
            finish(
                &*store,
                &id(&format!("child-{n}")),
                KernelKind::ExecutionCompleted,
                json!(n),
            )
            .await;
        }
        let nodes: Vec<_> = (0..4)
            .map(|_| {
                let (store, parents) = (store.clone(), parents.clone());
                tokio::spawn(async move {
                    let node = ChildSupervisor::new(store, recording().0);
                    let mut landed = 0;
                    for (_, result) in node.rebuild(parents).await {
                        match result {
                            Ok(Supervised::Resumed(_)) => landed += 1,
                            // A parent another node resumed before this one read it has no
                            // open park left: not waiting on children any more.
                            Ok(Supervised::AlreadyAnswered | Supervised::NotWaitingOnChildren) => {}
                            // Rival nodes kept the token moving; the park is still open.
                            Err(error) if error.is_contended() => {}
                            other => panic!("unexpected {other:?}"),
                        }
                    }
                    landed
                })
            })
            .collect();
        let mut landed = 0;
        for node in nodes {
            landed += node.await.expect("node");
        }
        for parent in &parents {
            assert!(
                resumes(&*store, parent).await.len() <= 1,
                "fenced {fenced}: {parent} resumed twice"
            );
        }
        let total: usize = {
            let mut total = 0;
            for parent in &parents {
                total += resumes(&*store, parent).await.len();
            }
            total
        };
        assert_eq!(
            landed, total,
            "fenced {fenced}: every landed resume is in a log, once"
        );
        assert!(total > 0);
    }
}
