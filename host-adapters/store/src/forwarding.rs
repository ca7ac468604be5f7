//! The one forwarding decorator: a store that passes every call to another,
//! through hooks that may change any of them.

use std::borrow::Borrow;

use async_trait::async_trait;
use loomfence_core::{
    AcquireOutcome, Capability, ConditionalAppend, Envelope, ExecutionId, NewEvent,
    ParkExpectation,
    retention::{DeleteGuard, ExecutionSummary, GuardedDelete},
};

use crate::{EventStore, StoreError};

/// A store that forwards every [`EventStore`] call to `inner`, through
/// `hooks`.
///
/// Tests and tools that need a store "like that one, except …" (a rival
/// placed in a race window, a yield before each call, a stop on Ctrl-C, a
/// capability reported lower) implement [`Hooks`] instead of writing a
/// whole store: a new trait method then reaches every decorator through
/// the hooks' default, and cannot be forgotten by one of them. With the
/// default [`Forward`] hooks it changes nothing, and it passes the whole
/// conformance kit on every adapter.
///
/// `inner` is anything that borrows as a store: an
/// `Arc<dyn EventStore>`, a `&dyn EventStore` or a `Box<dyn EventStore>`.
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

/// Hooks that change nothing: every call reaches the inner store as made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Forward;

impl Hooks for Forward {}

/// What a [`Forwarding`] store runs in place of each call. Every hook gets
/// the inner store; each default runs [`Hooks::before`] and then forwards
/// the call unchanged, so a decorator implements only what it changes.
///
/// A hook sees only its own call: [`EventStore::append`] forwards to the
/// inner `append`, not through the `append_many` hook.
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
    async fn list_executions(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        let inner = self.inner.borrow();
        self.hooks.list_executions(inner, after, limit).await
    }
}
