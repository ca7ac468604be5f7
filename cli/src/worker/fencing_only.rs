//! The negative control's store: the worker's own store, offering only the
//! unconditional acquire.

use std::sync::Arc;

use async_trait::async_trait;
use loomfence_core::{
    Capability, ConditionalAppend, Envelope, ExecutionId, NewEvent,
    retention::{DeleteGuard, ExecutionSummary, GuardedDelete},
};
use loomfence_store::{EventStore, StoreError};

/// Forwards everything to the store it wraps but says its capability is
/// [`Capability::FencingOnly`], so every resume machine on the worker takes
/// the unconditional `acquire_fence`: the acquire the conditional one
/// replaced (design: the conditional acquire), with its window (a loser
/// acquiring after the winner's resume landed fences the winner's body
/// out). `acquire_fence_if` is not
/// forwarded: it answers `Unsupported`, as a fencing-only store's does.
///
/// `loomfence worker --unconditional` runs on it, so that `loomfence fleet
/// --unconditional` can show that the fleet's check bites.
pub(crate) struct FencingOnly(pub(crate) Arc<dyn EventStore>);

#[async_trait]
impl EventStore for FencingOnly {
    fn capability(&self) -> Capability {
        Capability::FencingOnly
    }

    async fn append_many(
        &self,
        execution_id: &ExecutionId,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.0.append_many(execution_id, events).await
    }

    async fn append_if_parked(
        &self,
        execution_id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        self.0
            .append_if_parked(execution_id, park_seq, events)
            .await
    }

    async fn read_range(
        &self,
        execution_id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.0.read_range(execution_id, from_seq, to_seq).await
    }

    async fn current_fence(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        self.0.current_fence(execution_id).await
    }

    async fn acquire_fence(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        self.0.acquire_fence(execution_id).await
    }

    async fn delete_execution(&self, execution_id: &ExecutionId) -> Result<bool, StoreError> {
        self.0.delete_execution(execution_id).await
    }

    async fn delete_execution_if(
        &self,
        execution_id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError> {
        self.0.delete_execution_if(execution_id, guard).await
    }

    async fn list_executions(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        self.0.list_executions(after, limit).await
    }
}
