//! The async store trait every adapter implements.

use async_trait::async_trait;
use loomfence_core::{AcquireOutcome, Envelope, NewEvent, ParkExpectation};

use crate::StoreError;

/// How much fencing a store offers; the resume path picks its strategy from
/// this rather than by trying and failing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Capability {
    /// Tokens, the append guard, and the conditional acquire
    /// ([`EventStore::acquire_fence_if`]): both race windows are closed.
    Conditional,
    /// Tokens and the append guard, but only the unconditional acquire: a
    /// resumer falls back to [`EventStore::acquire_fence`] and accepts the
    /// documented residual window.
    FencingOnly,
    /// No tokens at all: a single-writer deployment where the process is the
    /// failure domain. Appends are never refused for staleness.
    NonFencing,
}

impl Capability {
    /// Whether the store keeps tokens and guards appends with them.
    #[must_use]
    pub fn fences(self) -> bool {
        self != Capability::NonFencing
    }

    /// Whether the store offers the conditional acquire.
    #[must_use]
    pub fn is_conditional(self) -> bool {
        self == Capability::Conditional
    }
}

/// An event log with fence tokens: the one interface the resume machine, the
/// supervisor and the conformance kit need from storage.
///
/// Every method is one atomic step at the backend: it fully happens or not at
/// all. Ids arrive as `&str` and are validated by the store, so bad ids from
/// any host (JS, SQL rows, command lines) get the same typed
/// [`StoreError::Input`] and change nothing.
#[async_trait]
pub trait EventStore: Send + Sync {
    /// What this store offers; constant for the store's lifetime.
    fn capability(&self) -> Capability;

    /// Appends one event at the next sequence, under the append guard.
    async fn append(&self, execution_id: &str, event: NewEvent) -> Result<Envelope, StoreError>;

    /// Appends a batch at contiguous sequences, all or nothing, under one guard
    /// decision for the whole batch.
    async fn append_many(
        &self,
        execution_id: &str,
        events: Vec<NewEvent>,
    ) -> Result<Vec<Envelope>, StoreError>;

    /// Events with `from_seq <= sequence <= to_seq` (to the head when `None`),
    /// in order. An unknown execution reads as empty.
    async fn read_range(
        &self,
        execution_id: &str,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError>;

    /// The current token, 0 if nobody ever acquired (always 0 on a
    /// non-fencing store).
    async fn current_fence(&self, execution_id: &str) -> Result<u64, StoreError>;

    /// Bumps the token unconditionally and returns the new one.
    ///
    /// Offered by [`Capability::Conditional`] and [`Capability::FencingOnly`]
    /// stores; the default answers [`StoreError::Unsupported`].
    async fn acquire_fence(&self, execution_id: &str) -> Result<u64, StoreError> {
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
        execution_id: &str,
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
    async fn delete_execution(&self, execution_id: &str) -> Result<bool, StoreError>;
}
