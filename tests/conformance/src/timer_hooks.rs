//! A timer store that forwards to another through hooks: the timer twin of
//! [`Around`](crate::support::Around), so a test puts a stall, a fault or a
//! probe exactly where it wants one and forwards everything else unchanged.

use std::sync::Arc;

use async_trait::async_trait;
use loomfence_core::timer::{Claim, Completed, DueFilter, Lease, TimerRow};
use loomfence_store::{ClaimPage, StoreError, TimerStore};

/// What an [`AroundTimers`] store does in place of the operations a test
/// intercepts. Each hook gets the wrapped store; the defaults forward to it
/// unchanged.
#[async_trait]
pub trait TimerHooks: Send + Sync {
    /// In place of [`TimerStore::schedule`].
    async fn schedule(&self, inner: &dyn TimerStore, row: &TimerRow) -> Result<(), StoreError> {
        inner.schedule(row).await
    }

    /// In place of [`TimerStore::claim_due`].
    async fn claim_due(
        &self,
        inner: &dyn TimerStore,
        lease: &Lease,
        limit: usize,
        filter: DueFilter,
    ) -> Result<ClaimPage, StoreError> {
        inner.claim_due(lease, limit, filter).await
    }

    /// In place of [`TimerStore::complete`].
    async fn complete(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
    ) -> Result<Completed, StoreError> {
        inner.complete(claim).await
    }

    /// In place of [`TimerStore::reschedule`].
    async fn reschedule(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
        next: &TimerRow,
    ) -> Result<Completed, StoreError> {
        inner.reschedule(claim, next).await
    }
}

/// A timer store that forwards every operation to `inner`, through `hooks`
/// for those [`TimerHooks`] covers.
pub struct AroundTimers<H> {
    /// The store wrapped, which holds every row.
    pub inner: Arc<dyn TimerStore>,
    /// What runs in place of the intercepted operations.
    pub hooks: H,
}

#[async_trait]
impl<H: TimerHooks> TimerStore for AroundTimers<H> {
    async fn schedule(&self, row: &TimerRow) -> Result<(), StoreError> {
        self.hooks.schedule(&*self.inner, row).await
    }
    async fn due(
        &self,
        now: i64,
        limit: usize,
        filter: DueFilter,
    ) -> Result<Vec<TimerRow>, StoreError> {
        self.inner.due(now, limit, filter).await
    }
    async fn claim_due(
        &self,
        lease: &Lease,
        limit: usize,
        filter: DueFilter,
    ) -> Result<ClaimPage, StoreError> {
        self.hooks
            .claim_due(&*self.inner, lease, limit, filter)
            .await
    }
    async fn complete(&self, claim: &Claim) -> Result<Completed, StoreError> {
        self.hooks.complete(&*self.inner, claim).await
    }
    async fn release(&self, claim: &Claim) -> Result<Completed, StoreError> {
        self.inner.release(claim).await
    }
    async fn reschedule(&self, claim: &Claim, next: &TimerRow) -> Result<Completed, StoreError> {
        self.hooks.reschedule(&*self.inner, claim, next).await
    }
}
