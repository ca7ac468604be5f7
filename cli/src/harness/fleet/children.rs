//! The world outside the fleet: it ends the children at their drawn times.

use futures_util::{StreamExt, TryStreamExt, stream};
use loomfence_core::{ExecutionId, JsonObject, KernelKind, NewEvent};
use loomfence_store::{EventStore, StoreError};
use serde_json::json;

use crate::clock::now_ms;

/// Children ended at once.
const CONCURRENCY: usize = 8;

/// Ends `children` (an `EXECUTION_COMPLETED` each, unfenced, as the world
/// outside the fleet ends them), a few at a time.
pub(super) async fn end_children(
    events: &dyn EventStore,
    children: Vec<ExecutionId>,
) -> Result<(), StoreError> {
    stream::iter(children)
        .map(Ok)
        .try_for_each_concurrent(CONCURRENCY, |child| async move {
            let mut payload = JsonObject::new();
            payload.insert("output".to_owned(), json!({ "child": child.as_str() }));
            let ended =
                NewEvent::kernel(KernelKind::ExecutionCompleted, now_ms()).with_payload(payload);
            events.append(&child, ended).await.map(drop)
        })
        .await
}
