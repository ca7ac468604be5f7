//! Small helpers the cases share: ids, event builders, park set-up, the
//! "nothing changed" witness and store wrappers (events and timers) that
//! intercept chosen operations.

use std::sync::Arc;

use async_trait::async_trait;
use loomfence_core::{
    AcquireOutcome, Capability, ConditionalAppend, Envelope, ExecutionId, InputError, KernelKind,
    NewEvent, ParkExpectation,
    retention::{DeleteGuard, ExecutionSummary, GuardedDelete},
};
use loomfence_store::{EventStore, MemoryEventStore, StoreError};
use serde_json::Value;

use crate::Store;
pub use crate::timer_hooks::{AroundTimers, TimerHooks};

/// The timestamp every kit event carries; the kernel never reads a clock, so
/// any fixed value will do.
pub const AT: i64 = 1_700_000_000_000;

/// The execution id `text`; panics if it is not a valid id, which is a bug
/// in the case. Ids are checked where they enter the program, so a store
/// only ever sees valid ones.
#[must_use]
pub fn id(text: &str) -> ExecutionId {
    ExecutionId::new(text).unwrap_or_else(|e| panic!("{text:?} is not a valid execution id: {e}"))
}

/// An unfenced event of `kind`.
#[must_use]
pub fn event(kind: &str) -> NewEvent {
    NewEvent::new(kind, AT)
}

/// An unfenced kernel event.
#[must_use]
pub fn kernel(kind: KernelKind) -> NewEvent {
    NewEvent::kernel(kind, AT)
}

/// A JSON object from a `json!` literal; panics on anything else, which is a
/// bug in the case.
#[must_use]
pub fn object(value: Value) -> loomfence_core::JsonObject {
    match value {
        Value::Object(map) => map,
        other => panic!("a kit payload must be a JSON object, got {other}"),
    }
}

/// Starts `id` and parks it, unfenced, in one batch. Returns the park's
/// sequence. Takes any store, so adapters' own tests use it too.
pub async fn park(store: &dyn EventStore, id: &ExecutionId) -> u64 {
    let written = store
        .append_many(
            id,
            vec![
                kernel(KernelKind::ExecutionStarted),
                kernel(KernelKind::ExecutionSuspended),
            ],
        )
        .await
        .expect("starting and parking a fresh execution");
    written[1].sequence
}

/// Acquires conditionally and returns the outcome, failing the case on an
/// error (the kit's happy paths never expect one).
pub async fn acquire_if(
    store: &Store,
    id: &ExecutionId,
    fence: u64,
    park_seq: u64,
) -> AcquireOutcome {
    store
        .acquire_fence_if(id, ParkExpectation { fence, park_seq })
        .await
        .expect("acquire_fence_if with a valid expectation")
}

/// Appends and fails the case if the store refuses.
pub async fn append_ok(store: &Store, id: &ExecutionId, event: NewEvent) -> Envelope {
    store
        .append(id, event)
        .await
        .expect("an append the guard must accept")
}

/// Asserts `result` is a stale-fence refusal with these tokens.
pub fn assert_stale<T: std::fmt::Debug>(
    result: Result<T, StoreError>,
    presented: Option<u64>,
    current: u64,
) {
    match result {
        Err(StoreError::StaleFence(stale)) => {
            assert_eq!(
                (stale.presented, stale.current),
                (presented, current),
                "stale refusal carries the wrong tokens: {stale}"
            );
        }
        other => {
            panic!("expected StaleFence(presented {presented:?}, current {current}), got {other:?}")
        }
    }
}

/// Asserts `result` is an input refusal and returns it for finer checks.
pub fn expect_input<T: std::fmt::Debug>(result: Result<T, StoreError>, what: &str) -> InputError {
    match result {
        Err(StoreError::Input(input)) => input,
        other => panic!("{what}: expected a typed input error, got {other:?}"),
    }
}

/// Everything observable about one execution: its log and its token. Taken
/// before a refused call and compared after, it proves the call changed
/// nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    /// The execution observed.
    pub id: ExecutionId,
    /// Its whole log.
    pub events: Vec<Envelope>,
    /// Its token.
    pub fence: u64,
}

impl Witness {
    /// Observes `id` now.
    pub async fn capture(store: &dyn EventStore, id: &ExecutionId) -> Self {
        Self {
            id: id.clone(),
            events: store
                .read_range(id, 1, None)
                .await
                .expect("reading a witness log"),
            fence: store
                .current_fence(id)
                .await
                .expect("reading a witness token"),
        }
    }

    /// Fails the case if `id` changed since the capture.
    pub async fn assert_unchanged(&self, store: &dyn EventStore, after: &str) {
        let now = Self::capture(store, &self.id).await;
        assert_eq!(&now, self, "execution {:?} changed after {after}", self.id);
    }
}

/// What an [`Around`] store does in place of the operations a test
/// intercepts. Each hook gets the wrapped store; the defaults forward to it
/// unchanged, so a test implements only the hooks it changes.
#[async_trait]
pub trait Hooks: Send + Sync {
    /// In place of [`EventStore::append_if_parked`].
    async fn append_if_parked(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
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
        inner.read_range(id, from_seq, to_seq).await
    }

    /// In place of [`EventStore::acquire_fence`].
    async fn acquire_fence(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
    ) -> Result<u64, StoreError> {
        inner.acquire_fence(id).await
    }

    /// In place of [`EventStore::acquire_fence_if`].
    async fn acquire_fence_if(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        inner.acquire_fence_if(id, expect).await
    }

    /// In place of [`EventStore::delete_execution_if`].
    async fn delete_execution_if(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError> {
        inner.delete_execution_if(id, guard).await
    }

    /// In place of [`EventStore::list_executions`].
    async fn list_executions(
        &self,
        inner: &dyn EventStore,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        inner.list_executions(after, limit).await
    }
}

/// A store that forwards every operation to `inner`, through `hooks` for
/// those [`Hooks`] covers: a rival, a deleter or a lost answer placed
/// exactly where a test wants it. A test reads the counts its hooks keep
/// through [`Around::hooks`].
pub struct Around<H> {
    /// The store wrapped, which holds every event.
    pub inner: Store,
    /// What runs in place of the intercepted operations.
    pub hooks: H,
}

impl<H> Around<H> {
    /// `hooks` around a fresh memory store that offers
    /// `capability`.
    #[must_use]
    pub fn new(capability: Capability, hooks: H) -> Self {
        Self {
            inner: Arc::new(MemoryEventStore::with_capability(capability)),
            hooks,
        }
    }
}

impl<H: Default> Default for Around<H> {
    /// Default hooks around a fresh, fully conditional memory store.
    fn default() -> Self {
        Self::new(Capability::Conditional, H::default())
    }
}

#[async_trait]
impl<H: Hooks> EventStore for Around<H> {
    fn capability(&self) -> Capability {
        self.inner.capability()
    }
    async fn append(&self, id: &ExecutionId, event: NewEvent) -> Result<Envelope, StoreError> {
        self.inner.append(id, event).await
    }
    async fn append_many(
        &self,
        id: &ExecutionId,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.inner.append_many(id, events).await
    }
    async fn append_if_parked(
        &self,
        id: &ExecutionId,
        park_seq: u64,
        events: Vec<NewEvent>,
    ) -> Result<ConditionalAppend, StoreError> {
        self.hooks
            .append_if_parked(&*self.inner, id, park_seq, events)
            .await
    }
    async fn read_range(
        &self,
        id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        self.hooks
            .read_range(&*self.inner, id, from_seq, to_seq)
            .await
    }
    async fn current_fence(&self, id: &ExecutionId) -> Result<u64, StoreError> {
        self.inner.current_fence(id).await
    }
    async fn acquire_fence(&self, id: &ExecutionId) -> Result<u64, StoreError> {
        self.hooks.acquire_fence(&*self.inner, id).await
    }
    async fn acquire_fence_if(
        &self,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        self.hooks.acquire_fence_if(&*self.inner, id, expect).await
    }
    async fn delete_execution(&self, id: &ExecutionId) -> Result<bool, StoreError> {
        self.inner.delete_execution(id).await
    }
    async fn delete_execution_if(
        &self,
        id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError> {
        self.hooks
            .delete_execution_if(&*self.inner, id, guard)
            .await
    }
    async fn list_executions(
        &self,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        self.hooks.list_executions(&*self.inner, after, limit).await
    }
}
