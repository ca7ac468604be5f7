//! The store as the senders of a race of messages see it: a yield before
//! every call, and the dead acquirers in front of a notify's first
//! conditional acquires.
//!
//! The inbox drives the resume itself, so the dead acquirers cannot be
//! placed between its steps as the resumers place them: they live in the
//! store the inbox is given instead. A sender runs each notify inside
//! [`with_dead_acquirers`]; within it, right before each of the first `K`
//! `acquire_fence_if` calls, a node that read the same log takes the token
//! with the same expectation and dies without appending. The timer
//! service's re-drives run outside any such scope, so the dead acquirers
//! strike racing deliveries only, as they strike racing resumes only.

use std::cell::Cell;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use loomfence_core::{AcquireOutcome, ExecutionId, ParkExpectation};
use loomfence_store::{EventStore, StoreError, forwarding::Hooks};
use tokio::task::yield_now;

tokio::task_local! {
    /// Dead acquires left in front of the current notify's acquires.
    static DEAD_LEFT: Cell<u32>;
}

/// Runs `delivery` with `count` dead acquirers in front of its first
/// `count` conditional acquires.
pub(crate) async fn with_dead_acquirers<F: Future>(count: u32, delivery: F) -> F::Output {
    DEAD_LEFT.scope(Cell::new(count), delivery).await
}

/// The race's hooks: every call yields first (the memory store never
/// awaits, and without the yield a notify would run whole before a rival
/// got in), and a conditional acquire inside [`with_dead_acquirers`] is
/// preceded by a dead one while the scope has some left.
#[derive(Debug, Default)]
pub(crate) struct RaceHooks {
    /// Tokens the dead acquirers took; shared, as the hooks move into the
    /// store.
    pub(crate) dead_acquires: Arc<AtomicU64>,
}

#[async_trait]
impl Hooks for RaceHooks {
    async fn before(&self, _operation: &'static str) -> Result<(), StoreError> {
        yield_now().await;
        Ok(())
    }

    async fn acquire_fence_if(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        expect: ParkExpectation,
    ) -> Result<AcquireOutcome, StoreError> {
        let dead = DEAD_LEFT
            .try_with(|left| {
                let dead = left.get() > 0;
                left.set(left.get().saturating_sub(1));
                dead
            })
            .unwrap_or(false);
        if dead {
            let outcome = inner.acquire_fence_if(id, expect).await?;
            if matches!(outcome, AcquireOutcome::Acquired { .. }) {
                self.dead_acquires.fetch_add(1, Ordering::Relaxed);
            }
        }
        yield_now().await;
        inner.acquire_fence_if(id, expect).await
    }
}
