//! The async resume driver and the body handle over the memory adapter.

mod common;

use std::sync::atomic::Ordering;

use common::{Loses, LosesAnswer, Lost, id, park_on, resumes};
use loomfence_conformance::support::around;
use loomfence_core::{
    Capability, KernelKind, NewEvent, ResumeError, ResumeRequest, Resumed, park::Wait,
    resume::RefusalReason,
};
use loomfence_runtime::{Body, RuntimeError, resume};
use loomfence_store::{EventStore, MemoryEventStore, StoreError};
use serde_json::json;

fn timer() -> Vec<Wait> {
    vec![Wait::Timer { wake_at: 10 }]
}

#[tokio::test]
async fn a_resume_lands_and_its_body_appends_under_the_token() {
    let store = MemoryEventStore::new();
    let p = &id("p");
    let park = park_on(&store, p, &timer()).await;
    let resumed = resume(&store, p, ResumeRequest::new(park, json!("tick"), 11))
        .await
        .expect("resumes");
    assert_eq!(resumed.fence, Some(1));
    let mut body = Body::new(&store, resumed);
    let step = body
        .append(NewEvent::kernel(KernelKind::StepCompleted, 12).with_fence(99))
        .await
        .expect("the holder appends");
    assert_eq!(
        step.fence().expect("valid"),
        Some(1),
        "the body's own token replaces the caller's"
    );
    let done = body
        .complete(json!({ "ok": true }), 13)
        .await
        .expect("completes");
    assert_eq!(done.sequence, 5);
    assert_eq!(done.payload["output"], json!({ "ok": true }));
}

#[tokio::test]
async fn a_body_fenced_out_by_a_rival_learns_it_on_its_next_append() {
    let store = MemoryEventStore::new();
    let p = &id("p");
    let park = park_on(&store, p, &timer()).await;
    let resumed = resume(&store, p, ResumeRequest::new(park, json!(null), 11))
        .await
        .expect("resumes");
    let mut body = Body::new(&store, resumed);
    store
        .acquire_fence(p)
        .await
        .expect("a rival acquires unconditionally");
    let refused = body
        .append(NewEvent::kernel(KernelKind::StepStarted, 12))
        .await;
    assert!(
        matches!(refused, Err(StoreError::StaleFence(ref s)) if s.presented == Some(1) && s.current == 2),
        "{refused:?}"
    );
}

#[tokio::test]
async fn weaker_stores_take_their_fallback_path() {
    for (capability, fence) in [
        (Capability::FencingOnly, Some(1)),
        (Capability::NonFencing, None),
    ] {
        let store = MemoryEventStore::with_capability(capability);
        let p = &id("p");
        let park = park_on(&store, p, &timer()).await;
        let resumed = resume(&store, p, ResumeRequest::new(park, json!(null), 11))
            .await
            .expect("resumes");
        assert_eq!(resumed.fence, fence, "{capability:?}");
        let again = resume(&store, p, ResumeRequest::new(park, json!(null), 12)).await;
        assert!(
            matches!(again, Err(RuntimeError::Resume(ResumeError::Refused(_)))),
            "{capability:?}: {again:?}"
        );
        assert_eq!(resumes(&store, p).await.len(), 1);
    }
}

#[tokio::test]
async fn an_answer_no_store_accepts_is_refused_before_any_token_is_taken() {
    let store = MemoryEventStore::new();
    let p = &id("p");
    let park = park_on(&store, p, &timer()).await;
    let before = store.read_range(p, 1, None).await.expect("reads");
    for request in [
        ResumeRequest::new(park, json!({ "note": "a\u{0}b" }), 11),
        ResumeRequest::new(park, json!(null), i64::MAX),
    ] {
        let refused = resume(&store, p, request).await;
        assert!(
            matches!(refused, Err(RuntimeError::Input(_))),
            "{refused:?}"
        );
        assert!(!refused.expect_err("refused").is_retryable());
    }
    // Refused up front: no dead acquirer left behind, nothing appended.
    assert_eq!(store.current_fence(p).await.expect("reads"), 0);
    assert_eq!(store.read_range(p, 1, None).await.expect("reads"), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_resumers_one_lands() {
    let store = std::sync::Arc::new(MemoryEventStore::new());
    let p = id("p");
    let park = park_on(&*store, &p, &timer()).await;
    let tasks: Vec<_> = (0..16)
        .map(|n| {
            let (store, p) = (store.clone(), p.clone());
            tokio::spawn(async move {
                resume(&*store, &p, ResumeRequest::new(park, json!(n), 11)).await
            })
        })
        .collect();
    let mut landed = 0;
    for task in tasks {
        match task.await.expect("task") {
            Ok(_) => landed += 1,
            Err(RuntimeError::Resume(ResumeError::Refused(_) | ResumeError::Contended(_))) => {}
            Err(other) => panic!("unexpected failure {other:?}"),
        }
    }
    assert_eq!(landed, 1);
    assert_eq!(resumes(&*store, &p).await.len(), 1);
}

// A write whose answer the store lost (`StoreError::OutcomeUnknown`: the
// connection died after the commit was sent) is settled by the driver,
// never surfaced and never blindly repeated.

/// Parks `p` on `store` and resumes it; the resume must land.
async fn resume_through(store: &LosesAnswer) -> Resumed {
    let p = &id("p");
    let park = park_on(store, p, &timer()).await;
    resume(store, p, ResumeRequest::new(park, json!("paid"), 11))
        .await
        .unwrap_or_else(|failure| {
            panic!(
                "{:?}: the resume must settle: {failure:?}",
                store.hooks.lost
            )
        })
}

/// The log holds exactly one resume, and it is the one `resumed` reports.
async fn assert_one_resume(store: &LosesAnswer, resumed: &Resumed) {
    let landed = resumes(store, &id("p")).await;
    assert_eq!(
        landed,
        std::slice::from_ref(&resumed.resumed),
        "{:?}",
        store.hooks.lost
    );
    assert_eq!(resumed.view.head, resumed.resumed.sequence);
}

#[tokio::test]
async fn an_append_that_landed_before_its_answer_was_lost_is_the_resume() {
    let store = around(Capability::Conditional, Loses::new(Lost::AppendWritten));
    let resumed = resume_through(&store).await;
    assert_eq!((resumed.fence, resumed.attempts), (Some(1), 1));
    assert_eq!(resumed.resumed.fence().expect("valid"), Some(1));
    assert_eq!(resumed.resumed.payload["answer"], json!("paid"));
    assert_one_resume(&store, &resumed).await;
    assert_eq!(
        store.hooks.calls.load(Ordering::SeqCst),
        1,
        "settled by reading, not by appending again"
    );
    // The body continues right after the resume that landed.
    let mut body = Body::new(&store, resumed);
    let step = body
        .append(NewEvent::kernel(KernelKind::StepStarted, 12))
        .await
        .expect("the holder appends");
    assert_eq!(step.sequence, 4);
}

#[tokio::test]
async fn an_append_that_did_not_land_before_its_answer_was_lost_is_tried_again() {
    let store = around(Capability::Conditional, Loses::new(Lost::AppendNotWritten));
    let resumed = resume_through(&store).await;
    assert_eq!((resumed.fence, resumed.attempts), (Some(1), 1));
    assert_one_resume(&store, &resumed).await;
    assert_eq!(resumed.resumed.sequence, 3);
    assert_eq!(
        store.hooks.calls.load(Ordering::SeqCst),
        2,
        "the park was still open, so the conditional append went again"
    );
    assert_eq!(store.current_fence(&id("p")).await.expect("reads"), 1);
}

#[tokio::test]
async fn a_conditional_acquire_that_landed_before_its_answer_was_lost_is_passed() {
    let store = around(Capability::Conditional, Loses::new(Lost::AcquireIfTaken));
    let resumed = resume_through(&store).await;
    // Token 1 was taken and its answer lost: a dead acquirer, passed like
    // any other (stale on 0, then acquired on 1).
    assert_eq!((resumed.fence, resumed.attempts), (Some(2), 3));
    assert_eq!(resumed.resumed.fence().expect("valid"), Some(2));
    assert_one_resume(&store, &resumed).await;
    assert_eq!(store.hooks.calls.load(Ordering::SeqCst), 3);
    assert_eq!(store.current_fence(&id("p")).await.expect("reads"), 2);
}

#[tokio::test]
async fn an_unconditional_acquire_that_landed_before_its_answer_was_lost_is_passed() {
    let store = around(Capability::FencingOnly, Loses::new(Lost::AcquireTaken));
    let resumed = resume_through(&store).await;
    assert_eq!((resumed.fence, resumed.attempts), (Some(2), 2));
    assert_one_resume(&store, &resumed).await;
    assert_eq!(store.hooks.calls.load(Ordering::SeqCst), 2);
    assert_eq!(store.current_fence(&id("p")).await.expect("reads"), 2);
}

/// Without a token, the resume cannot tell its own event from an identical
/// rival's, so it never claims the one it finds: refused, final, and the
/// log still holds exactly one resume (at worst a resumed execution without
/// a body, as after a crash right after the append).
#[tokio::test]
async fn a_tokenless_append_whose_answer_was_lost_never_claims_the_resume() {
    let store = around(Capability::NonFencing, Loses::new(Lost::AppendWritten));
    let p = &id("p");
    let park = park_on(&store, p, &timer()).await;
    let failure = resume(&store, p, ResumeRequest::new(park, json!("paid"), 11))
        .await
        .expect_err("a tokenless resume cannot claim the event it finds");
    match &failure {
        RuntimeError::Resume(ResumeError::Refused(refused)) => {
            assert_eq!(
                (&refused.execution_id, refused.park_seq, refused.reason),
                (p, park, RefusalReason::NotSuspended)
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert!(!failure.is_retryable());
    assert_eq!(resumes(&store, p).await.len(), 1);
    assert_eq!(store.hooks.calls.load(Ordering::SeqCst), 1);
}
