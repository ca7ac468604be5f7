//! The in-memory adapter: the core's [`MemoryStore`] behind a mutex.

use std::hash::BuildHasher as _;
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use loomfence_core::{
    AcquireOutcome, Capability, ConditionalAppend, Envelope, ExecutionId, MemoryStore, NewEvent,
    ParkExpectation,
    feed::{FeedCursor, FeedEntry},
    retention::{DeleteGuard, ExecutionSummary, GuardedDelete},
};

use crate::{EventStore, StoreError};

/// The core's in-memory store, shared across tasks and threads.
///
/// Each core operation is a short synchronous step, so a plain mutex held for
/// exactly that step gives every method its atomicity; no lock is held across
/// an `.await`.
///
/// [`MemoryEventStore::with_capability`] emulates a weaker backend, so the
/// fallback paths of the resume machine and the kit's capability gating can
/// be exercised without one.
#[derive(Debug)]
pub struct MemoryEventStore {
    /// The store itself.
    inner: Mutex<MemoryStore>,
    /// What this instance advertises and allows.
    capability: Capability,
    /// Woken after every write, for [`EventStore::wait_for_feed`].
    written: tokio::sync::Notify,
}

impl Default for MemoryEventStore {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryEventStore {
    /// An empty, fully conditional store.
    #[must_use]
    pub fn new() -> Self {
        Self::with_capability(Capability::Conditional)
    }

    /// An empty store that offers only `capability`: a
    /// [`Capability::FencingOnly`] one refuses the conditional acquire, a
    /// [`Capability::NonFencing`] one refuses both acquires (so every token
    /// stays 0 and the guard never refuses).
    #[must_use]
    pub fn with_capability(capability: Capability) -> Self {
        // The core draws no randomness: the map's hash seed is the
        // operating system's, through std's RandomState, so that ids from
        // outside cannot be chosen to collide.
        let seed = std::collections::hash_map::RandomState::new().hash_one(0_u8);
        Self::from_store(MemoryStore::with_hash_seed(seed), capability)
    }

    /// Wraps an existing store value, e.g. a simulation's snapshot.
    #[must_use]
    pub fn from_store(store: MemoryStore, capability: Capability) -> Self {
        Self {
            inner: Mutex::new(store),
            capability,
            written: tokio::sync::Notify::new(),
        }
    }

    /// A copy of the whole store, for comparisons and snapshots.
    #[must_use]
    pub fn snapshot(&self) -> MemoryStore {
        self.lock().clone()
    }

    /// Locks the store. A panic while locked cannot leave it half-written
    /// (every core operation validates before it mutates), so a poisoned lock
    /// is recovered rather than propagated.
    fn lock(&self) -> MutexGuard<'_, MemoryStore> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses an operation this instance's capability does not include.
    fn require(&self, operation: &'static str, allowed: bool) -> Result<(), StoreError> {
        if allowed {
            Ok(())
        } else {
            Err(StoreError::Unsupported {
                operation,
                capability: self.capability,
            })
        }
    }
}

#[async_trait]
impl EventStore for MemoryEventStore {
    fn capability(&self) -> Capability {
        self.capability
    }

    async fn append_many(
        &self,
        execution_id: &ExecutionId,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError> {
        let written = self.lock().append_many(execution_id, events)?;
        self.written.notify_waiters();
        Ok(written)
    }

    async fn append_if_parked(
        &self,
        execution_id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        let answer = self
            .lock()
            .append_if_parked(execution_id, park_seq, events)?;
        self.written.notify_waiters();
        Ok(answer)
    }

    async fn read_range(
        &self,
        execution_id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        Ok(self.lock().read_range(execution_id, from_seq, to_seq)?)
    }

    async fn current_fence(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        Ok(self.lock().current_fence(execution_id))
    }

    async fn acquire_fence(&self, execution_id: &ExecutionId) -> Result<u64, StoreError> {
        self.require("acquire_fence", self.capability.fences())?;
        Ok(self.lock().acquire_fence(execution_id))
    }

    async fn acquire_fence_if(
        &self,
        execution_id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        self.require("acquire_fence_if", self.capability.is_conditional())?;
        Ok(self.lock().acquire_fence_if(execution_id, expect)?)
    }

    async fn delete_execution(&self, execution_id: &ExecutionId) -> Result<bool, StoreError> {
        Ok(self.lock().delete_execution(execution_id))
    }

    async fn delete_execution_if(
        &self,
        execution_id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError> {
        Ok(self.lock().delete_execution_if(execution_id, guard)?)
    }

    async fn list_executions(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        Ok(self.lock().list_executions(after, limit)?)
    }

    async fn feed(&self, after: FeedCursor, limit: u32) -> Result<Vec<FeedEntry>, StoreError> {
        Ok(self.lock().feed(after, limit)?)
    }

    async fn feed_head(&self) -> Result<FeedCursor, StoreError> {
        Ok(self.lock().feed_head()?)
    }

    async fn open_parks(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionId>, StoreError> {
        Ok(self.lock().open_parks(after, limit)?)
    }

    async fn wait_for_feed(&self, after: FeedCursor) -> Result<(), StoreError> {
        // Registered before the head is read, so a write in between wakes it.
        let written = self.written.notified();
        let mut written = std::pin::pin!(written);
        written.as_mut().enable();
        if self.lock().feed_head()? > after {
            return Ok(());
        }
        written.await;
        Ok(())
    }
}
