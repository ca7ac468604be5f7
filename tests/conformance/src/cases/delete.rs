//! Deleting an execution.

use loomfence_core::KernelKind;

use crate::Store;
use crate::support::{append_ok, assert_stale, event, kernel, park};

/// Deleting drops the log but keeps a real token: a zombie holder of an old
/// token stays fenced out of a re-created id, whose sequences restart at 1.
pub async fn delete_keeps_a_real_token_against_zombies(store: Store) {
    let id = "delete-fenced";
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
    let id = "delete-unfenced";
    park(&*store, id).await;
    store.append(id, event("app.x")).await.expect("appends");
    assert!(store.delete_execution(id).await.expect("deletes"));
    assert!(!store.delete_execution(id).await.expect("deletes again"));
    assert!(
        !store
            .delete_execution("delete-never-written")
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
