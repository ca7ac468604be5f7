//! Helpers shared by the runtime's integration tests.

#![allow(dead_code, unreachable_pub)]

use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use loomfence_core::park::park_payload;
use loomfence_core::{
    AcquireOutcome, Capability, ConditionalAppend, Envelope, JsonObject, KernelKind, NewEvent,
    ParkExpectation, Wait,
};
use loomfence_store::{EventStore, MemoryEventStore, StoreError};
use serde_json::Value;

/// Starts `id` and parks it on `waits`; returns the park's sequence.
pub async fn park_on(store: &dyn EventStore, id: &str, waits: &[Wait]) -> u64 {
    let written = store
        .append_many(
            id,
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 0),
                NewEvent::kernel(KernelKind::ExecutionSuspended, 1)
                    .with_payload(park_payload(waits)),
            ],
        )
        .await
        .expect("parks");
    written[1].sequence
}

/// Runs `id` to completion with `output`, unfenced.
pub async fn finish(store: &dyn EventStore, id: &str, kind: KernelKind, output: Value) {
    let mut payload = JsonObject::new();
    payload.insert("output".to_owned(), output);
    store
        .append_many(
            id,
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, 0),
                NewEvent::kernel(kind, 5).with_payload(payload),
            ],
        )
        .await
        .expect("finishes");
}

/// The `EXECUTION_RESUMED` events of `id`.
pub async fn resumes(store: &dyn EventStore, id: &str) -> Vec<Envelope> {
    store
        .read_range(id, 1, None)
        .await
        .expect("reads")
        .into_iter()
        .filter(|e| e.kernel_kind() == Some(KernelKind::ExecutionResumed))
        .collect()
}

/// A memory store with a rival that takes the fence, unconditionally,
/// right before every conditional acquire: the worst contention a resumer
/// can meet. Counts the conditional acquires it saw.
#[derive(Default)]
pub struct Hostile {
    pub inner: MemoryEventStore,
    pub conditional_acquires: AtomicU32,
}

#[async_trait]
impl EventStore for Hostile {
    fn capability(&self) -> Capability {
        self.inner.capability()
    }
    async fn append(&self, id: &str, event: NewEvent) -> Result<Envelope, StoreError> {
        self.inner.append(id, event).await
    }
    async fn append_many(
        &self,
        id: &str,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.inner.append_many(id, events).await
    }
    async fn append_if_parked(
        &self,
        id: &str,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        self.inner.append_if_parked(id, park_seq, events).await
    }
    async fn read_range(
        &self,
        id: &str,
        from: u64,
        to: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.inner.read_range(id, from, to).await
    }
    async fn current_fence(&self, id: &str) -> Result<u64, StoreError> {
        self.inner.current_fence(id).await
    }
    async fn acquire_fence(&self, id: &str) -> Result<u64, StoreError> {
        self.inner.acquire_fence(id).await
    }
    async fn acquire_fence_if(
        &self,
        id: &str,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        self.conditional_acquires.fetch_add(1, Ordering::SeqCst);
        self.inner.acquire_fence(id).await?;
        self.inner.acquire_fence_if(id, expect).await
    }
    async fn delete_execution(&self, id: &str) -> Result<bool, StoreError> {
        self.inner.delete_execution(id).await
    }
}

/// A store that yields to the scheduler before every operation, so that on a
/// current-thread runtime concurrent tasks interleave at every store call,
/// deterministically: the widest race windows, every time.
pub struct Yielding<S>(pub S);

#[async_trait]
impl<S: EventStore> EventStore for Yielding<S> {
    fn capability(&self) -> Capability {
        self.0.capability()
    }
    async fn append(&self, id: &str, event: NewEvent) -> Result<Envelope, StoreError> {
        tokio::task::yield_now().await;
        self.0.append(id, event).await
    }
    async fn append_many(
        &self,
        id: &str,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError> {
        tokio::task::yield_now().await;
        self.0.append_many(id, events).await
    }
    async fn append_if_parked(
        &self,
        id: &str,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        tokio::task::yield_now().await;
        self.0.append_if_parked(id, park_seq, events).await
    }
    async fn read_range(
        &self,
        id: &str,
        from: u64,
        to: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        tokio::task::yield_now().await;
        self.0.read_range(id, from, to).await
    }
    async fn current_fence(&self, id: &str) -> Result<u64, StoreError> {
        tokio::task::yield_now().await;
        self.0.current_fence(id).await
    }
    async fn acquire_fence(&self, id: &str) -> Result<u64, StoreError> {
        tokio::task::yield_now().await;
        self.0.acquire_fence(id).await
    }
    async fn acquire_fence_if(
        &self,
        id: &str,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        tokio::task::yield_now().await;
        self.0.acquire_fence_if(id, expect).await
    }
    async fn delete_execution(&self, id: &str) -> Result<bool, StoreError> {
        tokio::task::yield_now().await;
        self.0.delete_execution(id).await
    }
}
