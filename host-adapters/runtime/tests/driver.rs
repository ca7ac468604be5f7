//! The async resume driver and the body handle over the memory adapter.

mod common;

use common::{park_on, resumes};
use loomfence_core::{Capability, KernelKind, NewEvent, ResumeRequest, Wait};
use loomfence_runtime::{Body, ResumeFailure, resume};
use loomfence_store::{EventStore, MemoryEventStore, StoreError};
use serde_json::json;

fn timer() -> Vec<Wait> {
    vec![Wait::Timer { wake_at: 10 }]
}

#[tokio::test]
async fn a_resume_lands_and_its_body_appends_under_the_token() {
    let store = MemoryEventStore::new();
    let park = park_on(&store, "p", &timer()).await;
    let resumed = resume(&store, "p", ResumeRequest::new(park, json!("tick"), 11))
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
    let park = park_on(&store, "p", &timer()).await;
    let resumed = resume(&store, "p", ResumeRequest::new(park, json!(null), 11))
        .await
        .expect("resumes");
    let mut body = Body::new(&store, resumed);
    store
        .acquire_fence("p")
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
        let park = park_on(&store, "p", &timer()).await;
        let resumed = resume(&store, "p", ResumeRequest::new(park, json!(null), 11))
            .await
            .expect("resumes");
        assert_eq!(resumed.fence, fence, "{capability:?}");
        let again = resume(&store, "p", ResumeRequest::new(park, json!(null), 12)).await;
        assert!(
            matches!(again, Err(ResumeFailure::Refused(_))),
            "{capability:?}: {again:?}"
        );
        assert_eq!(resumes(&store, "p").await.len(), 1);
    }
}

#[tokio::test]
async fn bad_ids_are_a_store_input_error() {
    let store = MemoryEventStore::new();
    let failure = resume(&store, "", ResumeRequest::new(1, json!(null), 0)).await;
    assert!(
        matches!(failure, Err(ResumeFailure::Store(StoreError::Input(_)))),
        "{failure:?}"
    );
    assert!(!failure.expect_err("refused").is_retryable());
}

#[tokio::test]
async fn an_answer_no_store_accepts_is_refused_before_any_token_is_taken() {
    let store = MemoryEventStore::new();
    let park = park_on(&store, "p", &timer()).await;
    let before = store.read_range("p", 1, None).await.expect("reads");
    for request in [
        ResumeRequest::new(park, json!({ "note": "a\u{0}b" }), 11),
        ResumeRequest::new(park, json!(null), i64::MAX),
    ] {
        let refused = resume(&store, "p", request).await;
        assert!(
            matches!(refused, Err(ResumeFailure::Store(StoreError::Input(_)))),
            "{refused:?}"
        );
    }
    // Refused up front: no dead acquirer left behind, nothing appended.
    assert_eq!(store.current_fence("p").await.expect("reads"), 0);
    assert_eq!(store.read_range("p", 1, None).await.expect("reads"), before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_resumers_one_lands() {
    let store = std::sync::Arc::new(MemoryEventStore::new());
    let park = park_on(&*store, "p", &timer()).await;
    let tasks: Vec<_> = (0..16)
        .map(|n| {
            let store = store.clone();
            tokio::spawn(async move {
                resume(&*store, "p", ResumeRequest::new(park, json!(n), 11)).await
            })
        })
        .collect();
    let mut landed = 0;
    for task in tasks {
        match task.await.expect("task") {
            Ok(_) => landed += 1,
            Err(ResumeFailure::Refused(_) | ResumeFailure::Contended(_)) => {}
            Err(other) => panic!("unexpected failure {other:?}"),
        }
    }
    assert_eq!(landed, 1);
    assert_eq!(resumes(&*store, "p").await.len(), 1);
}
