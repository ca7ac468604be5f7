//! The hooks of the one forwarding decorator,
//! [`Forwarding`](crate::Forwarding): what runs in place of each call of an
//! [`EventStore`], a [`TimerStore`] or an [`InboxStore`], and [`Forward`],
//! the hooks that change nothing.

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

use crate::{ClaimPage, EventStore, InboxStore, StoreError, TimerListing, TimerStore};

/// Hooks that change nothing: every call reaches the inner store as made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forward;

impl Hooks for Forward {}

/// What a [`Forwarding`](crate::Forwarding) store runs in place of each
/// call. Every hook gets the inner store; each default runs
/// [`Hooks::before`] and then forwards the call unchanged, so a decorator
/// implements only what it changes.
///
/// One trait covers every store trait: the event hooks get a
/// `&dyn EventStore`, the timer hooks a `&dyn TimerStore`, the inbox hooks
/// a `&dyn InboxStore`, and a `Forwarding` is whichever store its inner one
/// is (around an inbox store, its timer hooks see the same store as a
/// timer store). A hook sees only its
/// own call: [`EventStore::append`] forwards to the inner `append`, not
/// through the `append_many` hook.
#[async_trait]
pub trait Hooks: Send + Sync {
    /// Runs before every forwarded call except [`Hooks::capability`]; an
    /// error answers the call without reaching the inner store. The default
    /// does nothing. `operation` is the trait method's name.
    async fn before(&self, operation: &'static str) -> Result<(), StoreError> {
        let _ = operation;
        Ok(())
    }

    /// In place of [`EventStore::capability`].
    fn capability(&self, inner: &dyn EventStore) -> Capability {
        inner.capability()
    }

    /// In place of [`EventStore::append`].
    async fn append(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        event: NewEvent,
    ) -> Result<Envelope, StoreError> {
        self.before("append").await?;
        inner.append(id, event).await
    }

    /// In place of [`EventStore::append_many`].
    async fn append_many(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.before("append_many").await?;
        inner.append_many(id, events).await
    }

    /// In place of [`EventStore::append_if_parked`].
    async fn append_if_parked(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        self.before("append_if_parked").await?;
        inner.append_if_parked(id, park_seq, events).await
    }

    /// In place of [`EventStore::read_range`].
    async fn read_range(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.before("read_range").await?;
        inner.read_range(id, from_seq, to_seq).await
    }

    /// In place of [`EventStore::current_fence`].
    async fn current_fence(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
    ) -> Result<u64, StoreError> {
        self.before("current_fence").await?;
        inner.current_fence(id).await
    }

    /// In place of [`EventStore::acquire_fence`].
    async fn acquire_fence(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
    ) -> Result<u64, StoreError> {
        self.before("acquire_fence").await?;
        inner.acquire_fence(id).await
    }

    /// In place of [`EventStore::acquire_fence_if`].
    async fn acquire_fence_if(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        self.before("acquire_fence_if").await?;
        inner.acquire_fence_if(id, expect).await
    }

    /// In place of [`EventStore::delete_execution`].
    async fn delete_execution(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
    ) -> Result<bool, StoreError> {
        self.before("delete_execution").await?;
        inner.delete_execution(id).await
    }

    /// In place of [`EventStore::delete_execution_if`].
    async fn delete_execution_if(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError> {
        self.before("delete_execution_if").await?;
        inner.delete_execution_if(id, guard).await
    }

    /// In place of [`EventStore::read_logs`].
    async fn read_logs(
        &self,
        inner: &dyn EventStore,
        ids: &[ExecutionId],
    ) -> Result<Vec<Vec<Envelope>>, StoreError> {
        self.before("read_logs").await?;
        inner.read_logs(ids).await
    }

    /// In place of [`EventStore::delete_executions_if`].
    async fn delete_executions_if(
        &self,
        inner: &dyn EventStore,
        batch: &[DeleteIf],
    ) -> Result<Vec<GuardedDelete>, StoreError> {
        self.before("delete_executions_if").await?;
        inner.delete_executions_if(batch).await
    }

    /// In place of [`EventStore::list_executions`].
    async fn list_executions(
        &self,
        inner: &dyn EventStore,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        self.before("list_executions").await?;
        inner.list_executions(after, limit).await
    }

    /// In place of [`EventStore::feed`].
    async fn feed(
        &self,
        inner: &dyn EventStore,
        after: FeedCursor,
        limit: u32,
    ) -> Result<Vec<FeedEntry>, StoreError> {
        self.before("feed").await?;
        inner.feed(after, limit).await
    }

    /// In place of [`EventStore::feed_head`].
    async fn feed_head(&self, inner: &dyn EventStore) -> Result<FeedCursor, StoreError> {
        self.before("feed_head").await?;
        inner.feed_head().await
    }

    /// In place of [`EventStore::open_parks`].
    async fn open_parks(
        &self,
        inner: &dyn EventStore,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionId>, StoreError> {
        self.before("open_parks").await?;
        inner.open_parks(after, limit).await
    }

    /// In place of [`EventStore::wait_for_feed`].
    async fn wait_for_feed(
        &self,
        inner: &dyn EventStore,
        after: FeedCursor,
    ) -> Result<(), StoreError> {
        self.before("wait_for_feed").await?;
        inner.wait_for_feed(after).await
    }

    /// In place of [`TimerStore::schedule`].
    async fn schedule(&self, inner: &dyn TimerStore, row: &TimerRow) -> Result<(), StoreError> {
        self.before("schedule").await?;
        inner.schedule(row).await
    }

    /// In place of [`TimerStore::due`].
    async fn due(
        &self,
        inner: &dyn TimerStore,
        now: i64,
        limit: usize,
        filter: DueFilter,
    ) -> Result<Vec<TimerRow>, StoreError> {
        self.before("due").await?;
        inner.due(now, limit, filter).await
    }

    /// In place of [`TimerStore::claim_due`].
    async fn claim_due(
        &self,
        inner: &dyn TimerStore,
        lease: &Lease,
        limit: usize,
        filter: DueFilter,
    ) -> Result<ClaimPage, StoreError> {
        self.before("claim_due").await?;
        inner.claim_due(lease, limit, filter).await
    }

    /// In place of [`TimerStore::complete`].
    async fn complete(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
    ) -> Result<Completed, StoreError> {
        self.before("complete").await?;
        inner.complete(claim).await
    }

    /// In place of [`TimerStore::reschedule`].
    async fn reschedule(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
        next: &TimerRow,
    ) -> Result<Completed, StoreError> {
        self.before("reschedule").await?;
        inner.reschedule(claim, next).await
    }

    /// In place of [`TimerStore::release`].
    async fn release(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
    ) -> Result<Completed, StoreError> {
        self.before("release").await?;
        inner.release(claim).await
    }

    /// In place of [`TimerStore::exhaust`].
    async fn exhaust(
        &self,
        inner: &dyn TimerStore,
        claim: &Claim,
        exhaustion: &Exhaustion,
    ) -> Result<Completed, StoreError> {
        self.before("exhaust").await?;
        inner.exhaust(claim, exhaustion).await
    }

    /// In place of [`TimerStore::list`].
    async fn list(
        &self,
        inner: &dyn TimerStore,
        query: &TimerQuery,
    ) -> Result<TimerListing, StoreError> {
        self.before("list").await?;
        inner.list(query).await
    }

    /// In place of [`TimerStore::exhausted`].
    async fn exhausted(
        &self,
        inner: &dyn TimerStore,
        query: &ExhaustedQuery,
    ) -> Result<Vec<ExhaustedRow>, StoreError> {
        self.before("exhausted").await?;
        inner.exhausted(query).await
    }

    /// In place of [`TimerStore::clear_exhausted`].
    async fn clear_exhausted(
        &self,
        inner: &dyn TimerStore,
        execution_id: &ExecutionId,
        wake_at: i64,
    ) -> Result<bool, StoreError> {
        self.before("clear_exhausted").await?;
        inner.clear_exhausted(execution_id, wake_at).await
    }
    /// In place of [`InboxStore::send`].
    async fn send(
        &self,
        inner: &dyn InboxStore,
        message: &Message,
        intent: &TimerRow,
    ) -> Result<Sent, StoreError> {
        self.before("send").await?;
        inner.send(message, intent).await
    }

    /// In place of [`InboxStore::pending`].
    async fn pending(
        &self,
        inner: &dyn InboxStore,
        execution_id: &ExecutionId,
        channels: &[String],
        limit: usize,
    ) -> Result<Vec<StoredMessage>, StoreError> {
        self.before("pending").await?;
        inner.pending(execution_id, channels, limit).await
    }

    /// In place of [`InboxStore::mark_consumed`].
    async fn mark_consumed(
        &self,
        inner: &dyn InboxStore,
        key: &MessageKey,
    ) -> Result<bool, StoreError> {
        self.before("mark_consumed").await?;
        inner.mark_consumed(key).await
    }

    /// In place of [`InboxStore::purge`].
    async fn purge(
        &self,
        inner: &dyn InboxStore,
        execution_id: &ExecutionId,
    ) -> Result<u64, StoreError> {
        self.before("purge").await?;
        inner.purge(execution_id).await
    }

    /// In place of [`InboxStore::messages`].
    async fn messages(
        &self,
        inner: &dyn InboxStore,
        execution_id: &ExecutionId,
    ) -> Result<Vec<InboxEntry>, StoreError> {
        self.before("messages").await?;
        inner.messages(execution_id).await
    }
}
