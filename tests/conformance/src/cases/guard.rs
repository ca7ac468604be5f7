//! The append guard: one decision per batch against the current token.

use loomfence_core::KernelKind;

use crate::Store;
use crate::support::{Witness, append_ok, assert_stale, event, id, kernel, park};

/// A batch under a lower token than the current one is refused, whatever
/// its kinds, and nothing is written.
pub async fn a_lower_token_is_refused(store: Store) {
    let id = &id("guard-lower");
    park(&*store, id).await;
    store.acquire_fence(id).await.expect("acquires");
    let current = store.acquire_fence(id).await.expect("acquires");
    let before = Witness::capture(&*store, id).await;
    for late in [
        kernel(KernelKind::ExecutionResumed),
        kernel(KernelKind::StepCompleted),
        event("app.output"),
    ] {
        assert_stale(
            store.append(id, late.with_fence(current - 1)).await,
            Some(current - 1),
            current,
        );
    }
    before
        .assert_unchanged(&*store, "appends under a lower token")
        .await;
}

/// A batch under the current token passes, answering or not.
pub async fn the_current_token_passes(store: Store) {
    let id = &id("guard-current");
    park(&*store, id).await;
    let token = store.acquire_fence(id).await.expect("acquires");
    let written = store
        .append_many(
            id,
            vec![
                kernel(KernelKind::ExecutionResumed).with_fence(token),
                kernel(KernelKind::StepStarted).with_fence(token),
            ],
        )
        .await
        .expect("the holder's batch lands");
    assert_eq!(
        written.iter().map(|e| e.sequence).collect::<Vec<_>>(),
        [3, 4]
    );
}

/// Once anyone has acquired, an unfenced batch holding an answering event is
/// refused for good, alone or mixed with audit events.
pub async fn an_unfenced_answering_batch_is_refused_once_fenced(store: Store) {
    let id = &id("guard-unfenced-answer");
    park(&*store, id).await;
    let current = store.acquire_fence(id).await.expect("acquires");
    let before = Witness::capture(&*store, id).await;
    assert_stale(
        store.append(id, kernel(KernelKind::ExecutionResumed)).await,
        None,
        current,
    );
    let mixed = vec![
        kernel(KernelKind::ExecutionDenied),
        kernel(KernelKind::ExecutionResumed),
    ];
    assert_stale(store.append_many(id, mixed).await, None, current);
    let stamped = vec![event("EXECUTION_PAUSED").with_kernel_stamp()];
    assert_stale(store.append_many(id, stamped).await, None, current);
    before
        .assert_unchanged(&*store, "unfenced answering appends")
        .await;
}

/// While nobody has acquired (token 0), unfenced answering appends pass: this
/// is how an engine without fencing, or a supervisor's first try, resumes.
pub async fn an_unfenced_answering_append_passes_before_any_acquire(store: Store) {
    let id = &id("guard-unfenced-zero");
    park(&*store, id).await;
    let resumed = append_ok(&store, id, kernel(KernelKind::ExecutionResumed)).await;
    assert_eq!(resumed.sequence, 3);
}

/// Unfenced audit appends (denials, step failures, application events) pass
/// on a fenced execution: they never answer a park.
pub async fn an_unfenced_audit_append_passes_when_fenced(store: Store) {
    let id = &id("guard-audit");
    park(&*store, id).await;
    store.acquire_fence(id).await.expect("acquires");
    append_ok(&store, id, kernel(KernelKind::ExecutionDenied)).await;
    let batch = store
        .append_many(
            id,
            vec![
                kernel(KernelKind::StepFailed),
                event("app.output"),
                kernel(KernelKind::AnnotationAdded),
            ],
        )
        .await
        .expect("an unfenced audit batch lands");
    assert_eq!(batch.last().map(|e| e.sequence), Some(6));
}

/// One decision for the whole batch: a refused batch writes none of its
/// events, including the ones that alone would have passed.
pub async fn a_refused_batch_writes_none_of_its_events(store: Store) {
    let id = &id("guard-batch");
    park(&*store, id).await;
    let current = store.acquire_fence(id).await.expect("acquires");
    let before = Witness::capture(&*store, id).await;
    let batch = (0..5)
        .map(|n| {
            if n == 4 {
                kernel(KernelKind::ExecutionCompleted)
            } else {
                kernel(KernelKind::StepCompleted)
            }
        })
        .collect();
    assert_stale(store.append_many(id, batch).await, None, current);
    before.assert_unchanged(&*store, "a refused batch").await;
    let next = append_ok(
        &store,
        id,
        kernel(KernelKind::StepStarted).with_fence(current),
    )
    .await;
    assert_eq!(next.sequence, before.events.len() as u64 + 1);
}
