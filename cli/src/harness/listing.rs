//! Every execution of a store, for the commands that look at all of them
//! at once (the fleet's drain and verdict).

use loomfence_core::retention::{ExecutionSummary, MAX_PAGE_LIMIT};
use loomfence_store::{EventStore, StoreError};

/// Every execution of `store`, in its order, paged by the last id seen
/// (the largest pages the store allows).
pub(crate) async fn list_all(store: &dyn EventStore) -> Result<Vec<ExecutionSummary>, StoreError> {
    let mut all: Vec<ExecutionSummary> = Vec::new();
    loop {
        let after = all.last().map(|summary| &summary.execution_id);
        let page = store.list_executions(after, MAX_PAGE_LIMIT).await?;
        if page.is_empty() {
            return Ok(all);
        }
        all.extend(page);
    }
}
