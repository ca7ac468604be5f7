//! The unconditional acquire.

use loomfence_core::KernelKind;

use crate::Store;
use crate::support::{Witness, append_ok, assert_stale, id, kernel, park};

/// Each acquire returns the next token, from 1, with or without a log.
pub async fn acquire_returns_the_next_token(store: Store) {
    let logged = &id("acquire-next-logged");
    let id = &id("acquire-next");
    assert_eq!(store.current_fence(id).await.expect("reads"), 0);
    assert_eq!(store.acquire_fence(id).await.expect("acquires"), 1);
    assert_eq!(store.acquire_fence(id).await.expect("acquires"), 2);
    assert_eq!(store.current_fence(id).await.expect("reads"), 2);
    park(&*store, logged).await;
    assert_eq!(store.acquire_fence(logged).await.expect("acquires"), 1);
}

/// After a rival acquires, the old holder's appends are refused and the new
/// holder's land.
pub async fn acquire_fences_out_the_old_holder(store: Store) {
    let id = &id("acquire-fence-out");
    park(&*store, id).await;
    let holder = store.acquire_fence(id).await.expect("acquires");
    append_ok(
        &store,
        id,
        kernel(KernelKind::ExecutionResumed).with_fence(holder),
    )
    .await;
    let rival = store.acquire_fence(id).await.expect("acquires");
    assert_eq!(rival, holder + 1);
    let before = Witness::capture(&*store, id).await;
    let late = store
        .append(id, kernel(KernelKind::StepCompleted).with_fence(holder))
        .await;
    assert_stale(late, Some(holder), rival);
    before
        .assert_unchanged(&*store, "the old holder's refused append")
        .await;
    let landed = append_ok(
        &store,
        id,
        kernel(KernelKind::StepCompleted).with_fence(rival),
    )
    .await;
    assert_eq!(landed.sequence, before.events.len() as u64 + 1);
}
