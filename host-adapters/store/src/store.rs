//! The async store trait every adapter implements.

use async_trait::async_trait;
use loomfence_core::{
    AcquireOutcome, Capability, ConditionalAppend, Envelope, ExecutionId, NewEvent,
    ParkExpectation,
    feed::{FeedCursor, FeedEntry},
    retention::{
        DeleteGuard, DeleteIf, ExecutionSummary, GuardedDelete, check_delete_batch,
        check_read_batch,
    },
};

use crate::StoreError;

/// An event log with fence tokens: the one interface the resume machine, the
/// supervisor and the conformance kit need from storage.
///
/// Every method is one atomic step at the backend: it fully happens or not at
/// all (a write whose answer was lost says so with
/// [`StoreError::OutcomeUnknown`]). Ids arrive as [`ExecutionId`], checked
/// once where they enter the program (a JS call, a command line, a row), as
/// object_store takes a `&Path`: a store never sees an invalid id, so no
/// adapter re-validates one or can disagree with another about it.
#[async_trait]
pub trait EventStore: Send + Sync {
    /// What this store offers; constant for the store's lifetime.
    fn capability(&self) -> Capability;

    /// Appends one event at the next sequence, under the append guard: a
    /// batch of one, unless the adapter has a faster path.
    async fn append(
        &self,
        execution_id: &ExecutionId,
        event: NewEvent,
    ) -> Result<Envelope, StoreError> {
        let mut written = self.append_many(execution_id, vec![event]).await?;
        written.pop().ok_or_else(|| {
            StoreError::Backend(crate::BackendError::permanent(
                "a one-event append stored nothing",
            ))
        })
    }

    /// Appends a batch at contiguous sequences, all or nothing, under one guard
    /// decision for the whole batch.
    async fn append_many(
        &self,
        execution_id: &ExecutionId,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError>;

    /// Appends a batch only while no answering event follows `park_seq`,
    /// under the same guard as [`EventStore::append_many`]; answers
    /// [`ConditionalAppend::ParkAnswered`] and writes nothing otherwise.
    ///
    /// Sequences are assigned by the store, so a plain append cannot be made
    /// conditional by the caller. This is what keeps a resume that takes no
    /// token (a non-fencing store, a supervisor's unfenced first try) to at
    /// most one per park when several nodes race it.
    async fn append_if_parked(
        &self,
        execution_id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError>;

    /// Events with `from_seq <= sequence <= to_seq` (to the head when `None`),
    /// in order. An unknown execution reads as empty.
    async fn read_range(
        &self,
        execution_id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError>;

    /// The current token, 0 if nobody ever acquired (always 0 on a
    /// non-fencing store).
    async fn current_fence(&self, execution_id: &ExecutionId) -> Result<u64, StoreError>;

    /// Bumps the token unconditionally and returns the new one.
    ///
    /// Offered by [`Capability::Conditional`] and [`Capability::FencingOnly`]
    /// stores; the default answers [`StoreError::Unsupported`].
    async fn acquire_fence(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        let _ = execution_id;
        Err(StoreError::Unsupported {
            operation: "acquire_fence",
            capability: self.capability(),
        })
    }

    /// Bumps the token only if it equals `expect.fence` and no answering event
    /// follows `expect.park_seq`; otherwise answers
    /// [`AcquireOutcome::Stale`] with the current token and changes nothing.
    ///
    /// Offered by [`Capability::Conditional`] stores; the default answers
    /// [`StoreError::Unsupported`].
    async fn acquire_fence_if(
        &self,
        execution_id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        let _ = (execution_id, expect);
        Err(StoreError::Unsupported {
            operation: "acquire_fence_if",
            capability: self.capability(),
        })
    }

    /// Deletes the execution's log. A token above 0 survives, so a zombie
    /// writer of a re-created id stays fenced out. Returns whether a log
    /// existed.
    async fn delete_execution(&self, execution_id: &ExecutionId) -> Result<bool, StoreError>;

    /// Deletes the log as [`EventStore::delete_execution`] does, only while
    /// `guard` holds, checked in the same atomic step as the delete: the
    /// log's head is still `guard.head`, and no parent in `guard.parents`
    /// has an answering event past the head its pin check saw, or a log
    /// again that is shorter than it (a parent with no log has not moved). Otherwise answers what changed and deletes nothing.
    ///
    /// This is retention's delete: it closes the window in which a parent
    /// parks on a finished child after the sweep checked the pin and before
    /// it deleted the child (see `loomfence_core::retention::SweepMachine`).
    async fn delete_execution_if(
        &self,
        execution_id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError>;

    /// The whole logs of `execution_ids`, one per id in the same order (an
    /// id with no log reads as empty): a retention sweep's reads of a page
    /// in one call. At most
    /// [`MAX_PAGE_LIMIT`](loomfence_core::retention::MAX_PAGE_LIMIT) ids.
    ///
    /// The default reads one log at a time with [`EventStore::read_range`],
    /// so a store that does not batch still sweeps. Each log must be whole
    /// as of its own read; a store need not read them all in one snapshot.
    async fn read_logs(
        &self,
        execution_ids: &[ExecutionId],
    ) -> Result<Vec<Vec<Envelope>>, StoreError> {
        check_read_batch(execution_ids)?;
        let mut logs = Vec::with_capacity(execution_ids.len());
        for execution_id in execution_ids {
            logs.push(self.read_range(execution_id, 1, None).await?);
        }
        Ok(logs)
    }

    /// Each entry's guarded delete, as [`EventStore::delete_execution_if`]
    /// does it, in order: one outcome per entry. At most
    /// [`MAX_DELETE_BATCH`](loomfence_core::retention::MAX_DELETE_BATCH)
    /// entries, checked whole before anything is deleted.
    ///
    /// A store may run the batch as one atomic step (the SQL stores run it
    /// as one transaction, taking its locks in their one global order), or
    /// entry by entry: every entry is judged by its own guard either way,
    /// and the outcomes are the same, since a parent deleted earlier in the
    /// batch has no log and waits on nothing. The default deletes one at a
    /// time; an error part way leaves the entries before it deleted (each
    /// was atomic), and the next sweep finds the rest.
    async fn delete_executions_if(
        &self,
        batch: &[DeleteIf],
    ) -> Result<Vec<GuardedDelete>, StoreError> {
        check_delete_batch(batch)?;
        let mut outcomes = Vec::with_capacity(batch.len());
        for entry in batch {
            outcomes.push(
                self.delete_execution_if(&entry.execution_id, &entry.guard)
                    .await?,
            );
        }
        Ok(outcomes)
    }

    /// Up to `limit` (1 to [`MAX_PAGE_LIMIT`](loomfence_core::retention::MAX_PAGE_LIMIT))
    /// executions that have a log and whose ids follow `after` (from the
    /// first when `None`), in the store's id order, each with its head and
    /// its first terminal event. An empty page is the end.
    ///
    /// Paging by the last id seen (not by offset) keeps a sweep that
    /// deletes as it goes from skipping or repeating anything. The order is
    /// byte order on every adapter except PostgreSQL, which uses the
    /// `execution_id` column's collation so that its primary-key index
    /// serves the page; a sweep only needs `after` and the order to agree.
    async fn list_executions(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError>;

    /// Up to `limit` (1 to [`MAX_FEED_LIMIT`](loomfence_core::feed::MAX_FEED_LIMIT))
    /// events committed after `after`, in feed order: the change feed a
    /// follower keeps a cursor into instead of listing the store.
    ///
    /// The contract (no skip, order, deletes drop out; see
    /// [`loomfence_core::feed`]) is what the kit's feed cases check. The
    /// default answers [`StoreError::Unsupported`].
    async fn feed(&self, after: FeedCursor, limit: u32) -> Result<Vec<FeedEntry>, StoreError> {
        let _ = (after, limit);
        Err(StoreError::Unsupported {
            operation: "feed",
            capability: self.capability(),
        })
    }

    /// The cursor of the last event a feed read could list now
    /// ([`FeedCursor::START`] on an empty store). It never goes back, so
    /// a follower that reads it before listing the open parks misses
    /// nothing committed in between. The default answers
    /// [`StoreError::Unsupported`].
    async fn feed_head(&self) -> Result<FeedCursor, StoreError> {
        Err(StoreError::Unsupported {
            operation: "feed_head",
            capability: self.capability(),
        })
    }

    /// Up to `limit` (1 to [`MAX_FEED_LIMIT`](loomfence_core::feed::MAX_FEED_LIMIT))
    /// executions after `after` (from the first when `None`), in the
    /// order of [`EventStore::list_executions`], whose last answering event
    /// is a park: what a restarted follower watches, read from an index
    /// kept by the appends (see [`park_change`](loomfence_core::feed::park_change))
    /// rather than from every log. The default answers
    /// [`StoreError::Unsupported`].
    async fn open_parks(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionId>, StoreError> {
        let _ = (after, limit);
        Err(StoreError::Unsupported {
            operation: "open_parks",
            capability: self.capability(),
        })
    }

    /// Returns once the feed may hold something after `after` (at once if
    /// it already does). A wake is a hint, never the truth: it may come
    /// with nothing new, and a follower also reads on its own interval in
    /// case one was lost. The default never returns, for a store that
    /// cannot notify: its followers read on their interval alone.
    async fn wait_for_feed(&self, after: FeedCursor) -> Result<(), StoreError> {
        let _ = after;
        std::future::pending().await
    }
}
