//! Helpers shared by the runtime's integration tests.

#![allow(dead_code, unreachable_pub)]

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use loomfence_conformance::support::{Around, around};
use loomfence_core::{
    AcquireOutcome, Capability, ConditionalAppend, Envelope, ExecutionId, JsonObject, KernelKind,
    NewEvent, ParkExpectation,
    park::{Wait, park_payload},
};
use loomfence_store::forwarding::Hooks;
use loomfence_store::{BackendError, EventStore, Forwarding, MemoryEventStore, StoreError};
use serde_json::Value;

/// The execution id `text`; panics if it is invalid (a bug in the test).
pub fn id(text: &str) -> ExecutionId {
    ExecutionId::new(text).expect("a valid id")
}

/// Starts `id` and parks it on `waits`; returns the park's sequence.
pub async fn park_on(store: &dyn EventStore, id: &ExecutionId, waits: &[Wait]) -> u64 {
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
pub async fn finish(store: &dyn EventStore, id: &ExecutionId, kind: KernelKind, output: Value) {
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
pub async fn resumes(store: &dyn EventStore, id: &ExecutionId) -> Vec<Envelope> {
    store
        .read_range(id, 1, None)
        .await
        .expect("reads")
        .into_iter()
        .filter(|e| e.kernel_kind() == Some(KernelKind::ExecutionResumed))
        .collect()
}

/// Hooks that yield to the scheduler before every store call, so that on a
/// current-thread runtime concurrent tasks interleave at every store call,
/// deterministically: the widest race windows, every time.
pub struct Yield;

#[async_trait]
impl Hooks for Yield {
    async fn before(&self, _operation: &'static str) -> Result<(), StoreError> {
        tokio::task::yield_now().await;
        Ok(())
    }
}

/// A fresh memory store that yields before every call.
pub fn yielding() -> Forwarding<Arc<dyn EventStore>, Yield> {
    Forwarding::new(Arc::new(MemoryEventStore::new()), Yield)
}

/// Which write a [`LosesAnswer`] store loses the answer of, the first time
/// it is called: what a connection that dies after the commit was sent
/// looks like from the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lost {
    /// `append_if_parked` is written, then reported outcome-unknown.
    AppendWritten,
    /// `append_if_parked` is not written, and reported outcome-unknown.
    AppendNotWritten,
    /// `acquire_fence_if` takes the token, then is reported outcome-unknown.
    AcquireIfTaken,
    /// `acquire_fence` takes the token, then is reported outcome-unknown.
    AcquireTaken,
}

/// What a write whose answer was lost reports.
pub fn connection_lost() -> StoreError {
    StoreError::OutcomeUnknown(BackendError::retryable("connection lost"))
}

/// A memory store that loses the answer of one write, once, after or
/// instead of performing it. Counts the calls of the write it targets.
pub type LosesAnswer = Around<Loses>;

/// The hooks of a [`LosesAnswer`] store.
pub struct Loses {
    pub lost: Lost,
    armed: AtomicBool,
    pub calls: AtomicU32,
}

impl Loses {
    /// Hooks that lose the answer of `lost`, once.
    pub fn new(lost: Lost) -> Self {
        Self {
            lost,
            armed: AtomicBool::new(true),
            calls: AtomicU32::new(0),
        }
    }

    /// Counts a call of `write` and says whether this one loses its answer.
    fn loses(&self, write: &[Lost]) -> Option<Lost> {
        if !write.contains(&self.lost) {
            return None;
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.armed
            .swap(false, Ordering::SeqCst)
            .then_some(self.lost)
    }
}

#[async_trait]
impl Hooks for Loses {
    async fn append_if_parked(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        match self.loses(&[Lost::AppendWritten, Lost::AppendNotWritten]) {
            Some(Lost::AppendWritten) => {
                let landed = inner.append_if_parked(id, park_seq, events).await?;
                assert!(
                    matches!(landed, ConditionalAppend::Appended(_)),
                    "the lost append landed: {landed:?}"
                );
                Err(connection_lost())
            }
            Some(_) => Err(connection_lost()),
            None => inner.append_if_parked(id, park_seq, events).await,
        }
    }
    async fn acquire_fence(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
    ) -> Result<u64, StoreError> {
        let token = inner.acquire_fence(id).await?;
        match self.loses(&[Lost::AcquireTaken]) {
            Some(_) => Err(connection_lost()),
            None => Ok(token),
        }
    }
    async fn acquire_fence_if(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        let outcome = inner.acquire_fence_if(id, expect).await?;
        match self.loses(&[Lost::AcquireIfTaken]) {
            Some(_) => {
                assert!(
                    outcome.is_acquired(),
                    "the lost acquire landed: {outcome:?}"
                );
                Err(connection_lost())
            }
            None => Ok(outcome),
        }
    }
}

/// A memory store with a rival in front of every conditional acquire.
pub type Hostile = Around<Rival>;

/// Dead acquirers: while `fencing`, each of `acquirers` takes the fence
/// (bumps the token, unconditionally, and never appends) right before every
/// conditional acquire, so every conditional try is contended: the worst
/// contention a resumer can meet. It counts the conditional acquires it
/// saw and the dead acquires it made, and notes the time of each
/// conditional acquire on `clock`, if it has one.
pub struct Rival {
    pub acquirers: u32,
    pub fencing: AtomicBool,
    pub conditional_acquires: AtomicU32,
    pub dead_acquires: AtomicU32,
    pub clock: Option<VirtualClock>,
    pub times: Mutex<Vec<i64>>,
}

impl Rival {
    /// `acquirers` dead acquirers, fencing.
    pub fn new(acquirers: u32) -> Self {
        Self {
            acquirers,
            fencing: AtomicBool::new(true),
            conditional_acquires: AtomicU32::new(0),
            dead_acquires: AtomicU32::new(0),
            clock: None,
            times: Mutex::new(Vec::new()),
        }
    }

    /// One dead acquirer that notes the virtual time of every conditional
    /// acquire.
    pub fn timed(clock: &VirtualClock) -> Self {
        Self {
            clock: Some(clock.clone()),
            ..Self::new(1)
        }
    }

    /// The times of the conditional acquires, in order.
    pub fn times(&self) -> Vec<i64> {
        self.times.lock().expect("lock").clone()
    }
}

impl Default for Rival {
    /// One dead acquirer.
    fn default() -> Self {
        Self::new(1)
    }
}

#[async_trait]
impl Hooks for Rival {
    async fn acquire_fence_if(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        self.conditional_acquires.fetch_add(1, Ordering::SeqCst);
        if let Some(clock) = &self.clock {
            self.times.lock().expect("lock").push(clock.get());
        }
        if self.fencing.load(Ordering::SeqCst) {
            for _ in 0..self.acquirers {
                inner.acquire_fence(id).await?;
                self.dead_acquires.fetch_add(1, Ordering::SeqCst);
            }
        }
        inner.acquire_fence_if(id, expect).await
    }
}

/// A memory event store with three dead acquirers in front of every
/// conditional acquire.
pub fn fenced_by_three() -> Arc<Hostile> {
    Arc::new(around(Capability::Conditional, Rival::new(3)))
}

/// A virtual clock the test advances.
#[derive(Clone)]
pub struct VirtualClock(Arc<AtomicI64>);

impl VirtualClock {
    /// A [`Clock`](loomfence_runtime::clock::Clock) reading this one.
    pub fn clock(&self) -> loomfence_runtime::clock::Clock {
        let time = self.clone();
        Arc::new(move || time.get())
    }

    pub fn at(now: i64) -> Self {
        Self(Arc::new(AtomicI64::new(now)))
    }
    pub fn set(&self, now: i64) {
        self.0.store(now, Ordering::SeqCst);
    }
    pub fn get(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Refuses every listing (a follower must never list the store), counting
/// the tries, and fails the planned number of reads of each execution, as a
/// dropped connection does.
#[derive(Default)]
pub struct NoListing {
    /// Reads still to fail, per execution.
    pub fail_reads: Mutex<std::collections::BTreeMap<ExecutionId, usize>>,
    /// Listings tried.
    pub listings: std::sync::atomic::AtomicUsize,
}

impl NoListing {
    /// Plans `times` failed reads of `id`.
    pub fn fail_reads_of(&self, id: &ExecutionId, times: usize) {
        self.fail_reads
            .lock()
            .expect("lock")
            .insert(id.clone(), times);
    }

    /// Planned failures not yet spent.
    pub fn failures_left(&self) -> usize {
        self.fail_reads.lock().expect("lock").values().sum()
    }
}

#[async_trait]
impl Hooks for NoListing {
    async fn list_executions(
        &self,
        _: &dyn EventStore,
        _: Option<&ExecutionId>,
        _: u32,
    ) -> Result<Vec<loomfence_core::retention::ExecutionSummary>, StoreError> {
        self.listings.fetch_add(1, Ordering::SeqCst);
        Err(StoreError::Backend(BackendError::permanent(
            "a follower listed the store",
        )))
    }

    async fn read_range(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        if let Some(left) = self.fail_reads.lock().expect("lock").get_mut(id)
            && *left > 0
        {
            *left -= 1;
            return Err(connection_lost());
        }
        inner.read_range(id, from_seq, to_seq).await
    }
}
