//! The real resume driver (`loomfence-runtime`) against the store: what the
//! store-level cases guarantee, seen from the protocol.

use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use loomfence_core::{
    AcquireOutcome, Capability, ExecutionId, KernelKind, ParkExpectation, ResumeError,
    ResumeRequest,
    resume::{RefusalReason, ResumeRefusedError},
};
use loomfence_runtime::{RuntimeError, resume, resume_from};
use loomfence_store::{EventStore, StoreError};
use serde_json::json;

use crate::Store;
use crate::support::{AT, Around, Witness, append_ok, id, kernel, park};
use loomfence_store::forwarding::Hooks;

/// Hooks that delete right after every acquire that takes a token: around
/// the store under test, the widest window a delete can hit a resume in,
/// between its acquire and its append.
struct DeletesAfterAcquire {
    /// Deletes made.
    deletes: AtomicU32,
}

impl DeletesAfterAcquire {
    /// Deletes `id` from `inner`; it must have had a log.
    async fn delete(&self, inner: &dyn EventStore, id: &ExecutionId) -> Result<(), StoreError> {
        assert!(inner.delete_execution(id).await?, "the deleter found a log");
        self.deletes.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[async_trait]
impl Hooks for DeletesAfterAcquire {
    async fn acquire_fence(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
    ) -> Result<u64, StoreError> {
        let token = inner.acquire_fence(id).await?;
        self.delete(inner, id).await?;
        Ok(token)
    }
    async fn acquire_fence_if(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        let outcome = inner.acquire_fence_if(id, expect).await?;
        if outcome.is_acquired() {
            self.delete(inner, id).await?;
        }
        Ok(outcome)
    }
}

/// Asserts `failure` is the final refusal `NotSuspended` of the park at
/// `park_seq` of `id`.
fn assert_not_suspended(failure: RuntimeError, id: &ExecutionId, park_seq: u64) {
    assert!(!failure.is_retryable(), "{failure:?}");
    match failure {
        RuntimeError::Resume(ResumeError::Refused(refused)) => assert_eq!(
            refused,
            ResumeRefusedError {
                execution_id: id.clone(),
                park_seq,
                reason: RefusalReason::NotSuspended,
            }
        ),
        other => panic!("expected a NotSuspended refusal, got {other:?}"),
    }
}

/// A resume whose execution is deleted between its winning acquire and its
/// append (the delete keeps the token, by design) is refused as not
/// suspended, final and not retryable, and writes nothing: no phantom
/// one-event log, the token it took still 1. The store-level half is
/// `delete::a_delete_under_a_fenced_resume_writes_nothing`.
pub async fn a_delete_under_a_fenced_resume_is_refused_and_writes_nothing(store: Store) {
    let id = &id("resume-delete-under");
    let park_seq = park(&*store, id).await;
    let deleting = Around {
        inner: store.clone(),
        hooks: DeletesAfterAcquire {
            deletes: AtomicU32::new(0),
        },
    };
    let request = ResumeRequest::new(park_seq, json!({ "paid": true }), AT + 1);
    let failure = resume(&deleting, id, request)
        .await
        .expect_err("the park was deleted under the resume");
    assert_not_suspended(failure, id, park_seq);
    assert_eq!(
        deleting.hooks.deletes.load(Ordering::SeqCst),
        1,
        "one acquire"
    );
    let after = Witness::capture(&*store, id).await;
    assert_eq!(after.events, [], "no phantom log");
    assert_eq!(after.fence, 1, "the delete kept the resume's token");
}

/// A slow resumer read the park; meanwhile another resume landed, the
/// execution was deleted (which keeps a real token, by design) and its log
/// grew back past the park: the body's step at 1, under its token, and an
/// unfenced audit record at 2, where the park was. Going on from what it
/// read, the slow resumer is refused as not suspended and writes nothing
/// (no resume on the regrown log); except on a fencing-only store, whose
/// unconditional acquire is the documented residual window, it takes no
/// token either, so the live body is not fenced out. The store-level half
/// is `delete::a_log_regrown_past_the_park_after_a_delete_is_not_taken_for_the_park`.
pub async fn a_log_regrown_past_the_park_after_a_delete_is_refused_and_writes_nothing(
    store: Store,
) {
    let id = &id("resume-regrown");
    let park_seq = park(&*store, id).await;
    let read = store
        .read_range(id, 1, None)
        .await
        .expect("the slow resumer reads the park");
    let first = ResumeRequest::new(park_seq, json!({ "first": true }), AT + 1);
    let winner = resume(&*store, id, first)
        .await
        .expect("the first resume lands");
    assert!(store.delete_execution(id).await.expect("deletes"));
    let mut step = kernel(KernelKind::StepCompleted);
    if let Some(token) = winner.fence {
        step = step.with_fence(token);
    }
    append_ok(&store, id, step).await;
    let audit = append_ok(&store, id, kernel(KernelKind::ExecutionDenied)).await;
    assert_eq!(
        audit.sequence, park_seq,
        "the log has grown back to the park"
    );
    let regrown = Witness::capture(&*store, id).await;
    let late = ResumeRequest::new(park_seq, json!({ "late": true }), AT + 2);
    let failure = resume_from(&*store, id, late, &read)
        .await
        .expect_err("the park the slow resumer read is gone");
    assert_not_suspended(failure, id, park_seq);
    if store.capability() == Capability::FencingOnly {
        let after = Witness::capture(&*store, id).await;
        assert_eq!(after.events, regrown.events, "no resume on the regrown log");
    } else {
        regrown
            .assert_unchanged(&*store, "a late resume on the regrown log")
            .await;
    }
}
