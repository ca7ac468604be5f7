//! The world outside the fleet: it ends the children at their drawn times.

use std::sync::Arc;

use loomfence_core::{ExecutionId, JsonObject, KernelKind, NewEvent};
use loomfence_store::EventStore;
use serde_json::json;
use tokio::task::JoinSet;

use super::FleetError;
use crate::resumer::now_ms;

/// Children ended at once.
const CONCURRENCY: usize = 8;

/// Ends `children` (an `EXECUTION_COMPLETED` each, unfenced, as the world
/// outside the fleet ends them), a few at a time.
pub(super) async fn end_children(
    events: &Arc<dyn EventStore>,
    children: Vec<ExecutionId>,
) -> Result<(), FleetError> {
    let mut tasks = JoinSet::new();
    for child in children {
        let events = Arc::clone(events);
        tasks.spawn(async move {
            let mut payload = JsonObject::new();
            payload.insert("output".to_owned(), json!({ "child": child.as_str() }));
            events
                .append(
                    &child,
                    NewEvent::kernel(KernelKind::ExecutionCompleted, now_ms())
                        .with_payload(payload),
                )
                .await
        });
        if tasks.len() >= CONCURRENCY
            && let Some(done) = tasks.join_next().await
        {
            done??;
        }
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    Ok(())
}
