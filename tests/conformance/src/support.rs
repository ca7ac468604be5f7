//! Small helpers the cases share: ids, event builders, park set-up, the
//! "nothing changed" witness and a store wrapper that intercepts chosen
//! operations (timer stores are wrapped the same way, in a
//! [`Forwarding`] of their own).

use std::sync::Arc;

use loomfence_core::{
    AcquireOutcome, Capability, Envelope, ExecutionId, InputError, KernelKind, NewEvent,
    ParkExpectation,
};
use loomfence_store::forwarding::Hooks;
use loomfence_store::{EventStore, Forwarding, MemoryEventStore, StoreError};
use serde_json::Value;

use crate::Store;

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

/// A memory store seen through `hooks`: a rival, a deleter or a lost answer
/// placed exactly where a test wants it. A test reads the counts its hooks
/// keep through the `hooks` field.
pub type Around<H> = Forwarding<Store, H>;

/// `ids`' whole logs, read one at a time through `hooks`' own
/// `read_range`: for hooks that change reads, so that a sweep's batched
/// reads (`read_logs`) meet the change too.
pub async fn read_logs_through<H: Hooks + ?Sized>(
    hooks: &H,
    inner: &dyn EventStore,
    ids: &[ExecutionId],
) -> Result<Vec<Vec<Envelope>>, StoreError> {
    let mut logs = Vec::with_capacity(ids.len());
    for id in ids {
        logs.push(hooks.read_range(inner, id, 1, None).await?);
    }
    Ok(logs)
}

/// `hooks` around a fresh memory store that offers `capability`.
#[must_use]
pub fn around<H>(capability: Capability, hooks: H) -> Around<H> {
    Forwarding::new(
        Arc::new(MemoryEventStore::with_capability(capability)),
        hooks,
    )
}
