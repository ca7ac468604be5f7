//! The one forwarding decorator: a store that passes every call to another,
//! through [hooks](crate::forwarding::Hooks) that may change any of them.

use std::borrow::Borrow;
use std::sync::Arc;

use async_trait::async_trait;
use loomfence_core::feed::{FeedCursor, FeedEntry};
use loomfence_core::inbox::{InboxEntry, Message, MessageKey, Sent, StoredMessage};
use loomfence_core::timer::{
    Claim, Completed, DueFilter, ExhaustedQuery, ExhaustedRow, Exhaustion, Lease, TimerQuery,
    TimerRow,
};
use loomfence_core::{
    AcquireOutcome, Capability, ConditionalAppend, Envelope, ExecutionId, NewEvent,
    ParkExpectation,
    retention::{DeleteGuard, DeleteIf, ExecutionSummary, GuardedDelete},
};

use crate::forwarding::{Forward, Hooks};
use crate::{ClaimPage, EventStore, InboxStore, StoreError, TimerListing, TimerStore};

/// A store that forwards every call to `inner`, through `hooks`: an
/// [`EventStore`] when `inner` is one, a [`TimerStore`] when `inner` is
/// one, an [`InboxStore`] (and so a timer store) when `inner` is one.
///
/// Tests and tools that need a store "like that one, except …" (a rival
/// placed in a race window, a yield before each call, a stop on Ctrl-C, a
/// capability reported lower) implement [`Hooks`] instead of writing a
/// whole store: a new trait method then reaches every decorator through
/// the hooks' default, and cannot be forgotten by one of them. With the
/// default [`Forward`] hooks it changes nothing, and it passes the whole
/// conformance kit, events, timers and inbox, on every adapter.
///
/// `inner` is anything that borrows as a store: an
/// `Arc<dyn EventStore>`, a `&dyn EventStore`, a `Box<dyn TimerStore>`,
/// an `Arc<dyn InboxStore>`…
pub struct Forwarding<S, H = Forward> {
    /// The store every call reaches, unless a hook answers instead.
    pub inner: S,
    /// What runs in place of each call.
    pub hooks: H,
}

impl<S, H> Forwarding<S, H> {
    /// `inner` seen through `hooks`.
    pub fn new(inner: S, hooks: H) -> Self {
        Self { inner, hooks }
    }
}

#[async_trait]
impl<'s, S, H> EventStore for Forwarding<S, H>
where
    S: Borrow<dyn EventStore + 's> + Send + Sync,
    H: Hooks,
{
    fn capability(&self) -> Capability {
        self.hooks.capability(self.inner.borrow())
    }
    async fn append(&self, id: &ExecutionId, event: NewEvent) -> Result<Envelope, StoreError> {
        self.hooks.append(self.inner.borrow(), id, event).await
    }
    async fn append_many(
        &self,
        id: &ExecutionId,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.hooks
            .append_many(self.inner.borrow(), id, events)
            .await
    }
    async fn append_if_parked(
        &self,
        id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        let inner = self.inner.borrow();
        self.hooks
            .append_if_parked(inner, id, park_seq, events)
            .await
    }
    async fn read_range(
        &self,
        id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        let inner = self.inner.borrow();
        self.hooks.read_range(inner, id, from_seq, to_seq).await
    }
    async fn current_fence(&self, id: &ExecutionId) -> Result<u64, StoreError> {
        self.hooks.current_fence(self.inner.borrow(), id).await
    }
    async fn acquire_fence(&self, id: &ExecutionId) -> Result<u64, StoreError> {
        self.hooks.acquire_fence(self.inner.borrow(), id).await
    }
    async fn acquire_fence_if(
        &self,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        let inner = self.inner.borrow();
        self.hooks.acquire_fence_if(inner, id, expect).await
    }
    async fn delete_execution(&self, id: &ExecutionId) -> Result<bool, StoreError> {
        self.hooks.delete_execution(self.inner.borrow(), id).await
    }
    async fn delete_execution_if(
        &self,
        id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError> {
        let inner = self.inner.borrow();
        self.hooks.delete_execution_if(inner, id, guard).await
    }
    async fn read_logs(&self, ids: &[ExecutionId]) -> Result<Vec<Vec<Envelope>>, StoreError> {
        self.hooks.read_logs(self.inner.borrow(), ids).await
    }
    async fn delete_executions_if(
        &self,
        batch: &[DeleteIf],
    ) -> Result<Vec<GuardedDelete>, StoreError> {
        self.hooks
            .delete_executions_if(self.inner.borrow(), batch)
            .await
    }
    async fn list_executions(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        let inner = self.inner.borrow();
        self.hooks.list_executions(inner, after, limit).await
    }
    async fn feed(&self, after: FeedCursor, limit: u32) -> Result<Vec<FeedEntry>, StoreError> {
        self.hooks.feed(self.inner.borrow(), after, limit).await
    }
    async fn feed_head(&self) -> Result<FeedCursor, StoreError> {
        self.hooks.feed_head(self.inner.borrow()).await
    }
    async fn open_parks(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionId>, StoreError> {
        self.hooks
            .open_parks(self.inner.borrow(), after, limit)
            .await
    }
    async fn wait_for_feed(&self, after: FeedCursor) -> Result<(), StoreError> {
        self.hooks.wait_for_feed(self.inner.borrow(), after).await
    }
}

#[async_trait]
impl<'s, S, H> TimerStore for Forwarding<S, H>
where
    S: Borrow<dyn TimerStore + 's> + Send + Sync,
    H: Hooks,
{
    async fn schedule(&self, row: &TimerRow) -> Result<(), StoreError> {
        self.hooks.schedule(self.inner.borrow(), row).await
    }
    async fn due(
        &self,
        now: i64,
        limit: usize,
        filter: DueFilter,
    ) -> Result<Vec<TimerRow>, StoreError> {
        let inner = self.inner.borrow();
        self.hooks.due(inner, now, limit, filter).await
    }
    async fn claim_due(
        &self,
        lease: &Lease,
        limit: usize,
        filter: DueFilter,
    ) -> Result<ClaimPage, StoreError> {
        let inner = self.inner.borrow();
        self.hooks.claim_due(inner, lease, limit, filter).await
    }
    async fn complete(&self, claim: &Claim) -> Result<Completed, StoreError> {
        self.hooks.complete(self.inner.borrow(), claim).await
    }
    async fn reschedule(&self, claim: &Claim, next: &TimerRow) -> Result<Completed, StoreError> {
        let inner = self.inner.borrow();
        self.hooks.reschedule(inner, claim, next).await
    }
    async fn release(&self, claim: &Claim) -> Result<Completed, StoreError> {
        self.hooks.release(self.inner.borrow(), claim).await
    }
    async fn exhaust(
        &self,
        claim: &Claim,
        exhaustion: &Exhaustion,
    ) -> Result<Completed, StoreError> {
        let inner = self.inner.borrow();
        self.hooks.exhaust(inner, claim, exhaustion).await
    }
    async fn list(&self, query: &TimerQuery) -> Result<TimerListing, StoreError> {
        self.hooks.list(self.inner.borrow(), query).await
    }
    async fn exhausted(&self, query: &ExhaustedQuery) -> Result<Vec<ExhaustedRow>, StoreError> {
        self.hooks.exhausted(self.inner.borrow(), query).await
    }
    async fn clear_exhausted(
        &self,
        execution_id: &ExecutionId,
        wake_at: i64,
    ) -> Result<bool, StoreError> {
        let inner = self.inner.borrow();
        self.hooks
            .clear_exhausted(inner, execution_id, wake_at)
            .await
    }
}

#[async_trait]
impl<'s, S, H> InboxStore for Forwarding<S, H>
where
    S: Borrow<dyn InboxStore + 's> + Borrow<dyn TimerStore + 's> + Send + Sync,
    H: Hooks,
{
    async fn send(&self, message: &Message, intent: &TimerRow) -> Result<Sent, StoreError> {
        let inner: &dyn InboxStore = self.inner.borrow();
        self.hooks.send(inner, message, intent).await
    }
    async fn pending(
        &self,
        execution_id: &ExecutionId,
        channels: &[String],
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        let inner: &dyn InboxStore = self.inner.borrow();
        self.hooks
            .pending(inner, execution_id, channels, limit)
            .await
    }
    async fn mark_consumed(&self, key: &MessageKey) -> Result<bool, StoreError> {
        let inner: &dyn InboxStore = self.inner.borrow();
        self.hooks.mark_consumed(inner, key).await
    }
    async fn purge(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        let inner: &dyn InboxStore = self.inner.borrow();
        self.hooks.purge(inner, execution_id).await
    }
    async fn messages(&self, execution_id: &ExecutionId) -> Result<Vec<InboxEntry>, StoreError> {
        let inner: &dyn InboxStore = self.inner.borrow();
        self.hooks.messages(inner, execution_id).await
    }
}

/// An inbox store seen as the timer store it is, so a [`Forwarding`]
/// around an `Arc<dyn InboxStore>` is a timer store too (its timer calls
/// reach the same store): what the inbox impl above needs of its inner
/// store besides the inbox itself.
impl<'s> Borrow<dyn TimerStore + 's> for Arc<dyn InboxStore + 's> {
    fn borrow(&self) -> &(dyn TimerStore + 's) {
        &**self
    }
}

/// See the `Arc` impl: the same for a boxed inbox store.
impl<'s> Borrow<dyn TimerStore + 's> for Box<dyn InboxStore + 's> {
    fn borrow(&self) -> &(dyn TimerStore + 's) {
        &**self
    }
}

/// See the `Arc` impl: the same for a borrowed inbox store.
impl<'s> Borrow<dyn TimerStore + 's> for &(dyn InboxStore + 's) {
    fn borrow(&self) -> &(dyn TimerStore + 's) {
        *self
    }
}
