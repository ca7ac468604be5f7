//! The negative control's store: the worker's own store, offering only the
//! unconditional acquire.

use std::sync::Arc;

use async_trait::async_trait;
use loomfence_core::{AcquireOutcome, Capability, ExecutionId, ParkExpectation};
use loomfence_store::forwarding::Hooks;
use loomfence_store::{EventStore, Forwarding, StoreError};

/// Forwards everything to the store it wraps but says its capability is
/// [`Capability::FencingOnly`], so every resume machine on the worker takes
/// the unconditional `acquire_fence`: the acquire the conditional one
/// replaced, with its window (a loser acquiring after the winner's resume
/// landed fences the winner's body out). `acquire_fence_if` is not
/// forwarded: it answers `Unsupported`, as a fencing-only store's does.
///
/// `loomfence worker --unconditional` runs on it, so that `loomfence fleet
/// --unconditional` can show that the fleet's check bites.
pub(crate) fn fencing_only(
    inner: Arc<dyn EventStore>,
) -> Forwarding<Arc<dyn EventStore>, FencingOnly> {
    Forwarding::new(inner, FencingOnly)
}

/// The hooks of [`fencing_only`]: a lower capability, and no conditional
/// acquire.
pub(crate) struct FencingOnly;

#[async_trait]
impl Hooks for FencingOnly {
    fn capability(&self, _inner: &dyn EventStore) -> Capability {
        Capability::FencingOnly
    }

    async fn acquire_fence_if(
        &self,
        _inner: &dyn EventStore,
        _id: &ExecutionId,
        _expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        Err(StoreError::Unsupported {
            operation: "acquire_fence_if",
            capability: Capability::FencingOnly,
        })
    }
}
