//! Deleting an execution.

use loomfence_core::{AcquireOutcome, InputError, KernelKind, ParkExpectation};

use crate::Store;
use crate::support::{
    Witness, acquire_if, append_ok, assert_stale, event, expect_input, id, kernel, park,
};

/// Deleting drops the log but keeps a real token: a zombie holder of an old
/// token stays fenced out of a re-created id, whose sequences restart at 1.
pub async fn delete_keeps_a_real_token_against_zombies(store: Store) {
    let id = &id("delete-fenced");
    park(&*store, id).await;
    let zombie = store.acquire_fence(id).await.expect("acquires");
    let current = store.acquire_fence(id).await.expect("acquires");
    assert!(store.delete_execution(id).await.expect("deletes"));
    assert!(
        store
            .read_range(id, 1, None)
            .await
            .expect("reads")
            .is_empty()
    );
    assert_eq!(store.current_fence(id).await.expect("reads"), current);
    assert_stale(
        store
            .append(id, kernel(KernelKind::ExecutionStarted).with_fence(zombie))
            .await,
        Some(zombie),
        current,
    );
    let reborn = append_ok(
        &store,
        id,
        kernel(KernelKind::ExecutionStarted).with_fence(current),
    )
    .await;
    assert_eq!(reborn.sequence, 1);
}

/// Deleting an unfenced execution leaves nothing behind; a second delete
/// reports there was nothing to delete.
pub async fn delete_of_an_unfenced_execution_leaves_nothing(store: Store) {
    let never = &id("delete-never-written");
    let id = &id("delete-unfenced");
    park(&*store, id).await;
    store.append(id, event("app.x")).await.expect("appends");
    assert!(store.delete_execution(id).await.expect("deletes"));
    assert!(!store.delete_execution(id).await.expect("deletes again"));
    assert!(
        !store
            .delete_execution(never)
            .await
            .expect("deletes nothing")
    );
    assert_eq!(store.current_fence(id).await.expect("reads"), 0);
    assert!(
        store
            .read_range(id, 1, None)
            .await
            .expect("reads")
            .is_empty()
    );
    assert_eq!(append_ok(&store, id, event("app.y")).await.sequence, 1);
}

/// A resume racing a delete must not recreate the log. The resumer's
/// acquire wins (token 1); the execution is deleted, which keeps the token
/// by design; the resumer's append, fenced and conditional on its park, is
/// then refused with `ParkSeqOutOfRange` (the park is no longer in the log)
/// and writes nothing: no phantom one-event log, the token still 1. The
/// same holds once the id is reborn with a log shorter than the park.
pub async fn a_delete_under_a_fenced_resume_writes_nothing(store: Store) {
    let id = &id("delete-under-resume");
    let park_seq = park(&*store, id).await;
    let token = if store.capability().is_conditional() {
        let outcome = acquire_if(&store, id, 0, park_seq).await;
        assert_eq!(outcome, AcquireOutcome::Acquired { fence: 1 });
        outcome.fence()
    } else {
        store.acquire_fence(id).await.expect("acquires")
    };
    assert_eq!(token, 1);
    assert!(store.delete_execution(id).await.expect("deletes"));
    let deleted = Witness::capture(&*store, id).await;
    assert_eq!((deleted.events.len(), deleted.fence), (0, token));
    let resume = || vec![kernel(KernelKind::ExecutionResumed).with_fence(token)];
    let refused = store.append_if_parked(id, park_seq, resume()).await;
    assert_eq!(
        expect_input(refused, "a fenced resume of a deleted park"),
        InputError::ParkSeqOutOfRange { park_seq, head: 0 }
    );
    deleted
        .assert_unchanged(&*store, "a fenced resume of a deleted park")
        .await;
    assert!(
        store
            .read_range(id, 1, None)
            .await
            .expect("reads")
            .is_empty(),
        "no phantom log"
    );
    assert_eq!(store.current_fence(id).await.expect("reads"), token);

    let reborn = append_ok(
        &store,
        id,
        kernel(KernelKind::ExecutionStarted).with_fence(token),
    )
    .await;
    assert_eq!(reborn.sequence, 1);
    let before = Witness::capture(&*store, id).await;
    let refused = store.append_if_parked(id, park_seq, resume()).await;
    assert_eq!(
        expect_input(refused, "a fenced resume of a park past a reborn log"),
        InputError::ParkSeqOutOfRange { park_seq, head: 1 }
    );
    before
        .assert_unchanged(&*store, "a fenced resume of a park past a reborn log")
        .await;
}

/// After a delete (which keeps a real token, by design) a log can grow back
/// past the sequence a slow resumer read as its park: here the body that
/// won token 1 writes its step at 1, and an unfenced audit record lands at
/// 2, where the park was. A conditional acquire or a park-conditional
/// append naming "park" 2 must not take that log for the park: both are
/// refused with `NotAPark`, the token stays 1 (the live body is not fenced
/// out) and no resume is written on the regrown log.
pub async fn a_log_regrown_past_the_park_after_a_delete_is_not_taken_for_the_park(store: Store) {
    let id = &id("delete-regrown");
    let park_seq = park(&*store, id).await;
    assert_eq!(park_seq, 2);
    let conditional = store.capability().is_conditional();
    let token = if conditional {
        acquire_if(&store, id, 0, park_seq).await.fence()
    } else {
        store.acquire_fence(id).await.expect("acquires")
    };
    assert_eq!(token, 1);
    assert!(store.delete_execution(id).await.expect("deletes"));
    let step = append_ok(
        &store,
        id,
        kernel(KernelKind::StepCompleted).with_fence(token),
    )
    .await;
    let audit = append_ok(&store, id, kernel(KernelKind::ExecutionDenied)).await;
    assert_eq!((step.sequence, audit.sequence), (1, park_seq));
    let regrown = Witness::capture(&*store, id).await;
    assert_eq!(regrown.fence, token, "the delete kept the token");
    let not_a_park = InputError::NotAPark {
        park_seq,
        kind: KernelKind::ExecutionDenied.as_str().to_owned(),
    };
    if conditional {
        let expect = ParkExpectation {
            fence: token,
            park_seq,
        };
        assert_eq!(
            expect_input(
                store.acquire_fence_if(id, expect).await,
                "a late acquire of a park the regrown log covers"
            ),
            not_a_park
        );
        regrown
            .assert_unchanged(&*store, "a late acquire on the regrown log")
            .await;
    }
    let resume = vec![kernel(KernelKind::ExecutionResumed).with_fence(token)];
    assert_eq!(
        expect_input(
            store.append_if_parked(id, park_seq, resume).await,
            "a late resume of a park the regrown log covers"
        ),
        not_a_park
    );
    regrown
        .assert_unchanged(&*store, "a late resume on the regrown log")
        .await;
    append_ok(
        &store,
        id,
        kernel(KernelKind::StepCompleted).with_fence(token),
    )
    .await;
}
