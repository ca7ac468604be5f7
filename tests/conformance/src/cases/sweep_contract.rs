//! What the sweep refuses: options, before anything is listed; and a store
//! that answers outside the interface (a listing past its limit or with a
//! summary its own log contradicts, a log that does not run from sequence
//! 1, a delete refusal that does not answer the guard), which stops the
//! sweep with a contract error and the partial report, nothing deleted
//! for it. The rules are the core `SweepMachine`'s, so the Rust runtime and
//! the npm package refuse the same (`sweep-contract-kit.js` ports these
//! cases).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use loomfence_core::{
    Envelope, ExecutionId, InputError,
    retention::{DeleteGuard, DeleteIf, Ended, ExecutionSummary, GuardedDelete},
};
use loomfence_runtime::{RuntimeError, Sweep};
use loomfence_store::{EventStore, StoreError};

use crate::Store;
use crate::cases::sweep::{LONG_AGO, exists, finished_child, options, start};
use crate::support::{Around, id};
use loomfence_store::forwarding::Hooks;

/// How a hook lies.
#[derive(Clone, Copy, Debug)]
enum Lie {
    /// Lists one more execution than asked for.
    PastTheLimit,
    /// Says the listed child ended past its own head.
    EndedPastHead,
    /// Reads the child's log without its first event.
    LogWithoutItsStart,
    /// Refuses the delete with the head the guard already names.
    GuardsOwnHead,
    /// Refuses the delete naming a parent the guard does not name.
    StrangerMoved,
    /// Answers a batch of deletes with one outcome fewer than its entries.
    OutcomesShort,
}

/// Answers the sweep with `lie` about `child`, forwarding the rest.
struct Liar {
    /// The lie.
    lie: Lie,
    /// The child lied about.
    child: ExecutionId,
}

#[async_trait]
impl Hooks for Liar {
    async fn read_logs(
        &self,
        inner: &dyn EventStore,
        ids: &[ExecutionId],
    ) -> Result<Vec<Vec<Envelope>>, StoreError> {
        crate::support::read_logs_through(self, inner, ids).await
    }

    async fn list_executions(
        &self,
        inner: &dyn EventStore,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        match self.lie {
            Lie::PastTheLimit => inner.list_executions(after, limit + 1).await,
            Lie::EndedPastHead => {
                let mut page = inner.list_executions(after, limit).await?;
                for summary in &mut page {
                    if summary.execution_id == self.child {
                        summary.ended = Some(Ended {
                            sequence: summary.head + 1,
                            at: LONG_AGO,
                        });
                    }
                }
                Ok(page)
            }
            _ => inner.list_executions(after, limit).await,
        }
    }

    async fn read_range(
        &self,
        inner: &dyn EventStore,
        id: &ExecutionId,
        from_seq: u64,
        to_seq: Option<u64>,
    ) -> Result<Vec<Envelope>, StoreError> {
        let mut events = inner.read_range(id, from_seq, to_seq).await?;
        if matches!(self.lie, Lie::LogWithoutItsStart) && id == &self.child && !events.is_empty() {
            events.remove(0);
        }
        Ok(events)
    }

    async fn delete_execution_if(
        &self,
        inner: &dyn EventStore,
        execution_id: &ExecutionId,
        guard: &DeleteGuard,
    ) -> Result<GuardedDelete, StoreError> {
        match self.lie {
            Lie::GuardsOwnHead if execution_id == &self.child => {
                Ok(GuardedDelete::LogChanged { head: guard.head })
            }
            Lie::StrangerMoved if execution_id == &self.child => Ok(GuardedDelete::ParentMoved {
                parent: id("contract-stranger"),
            }),
            _ => inner.delete_execution_if(execution_id, guard).await,
        }
    }

    async fn delete_executions_if(
        &self,
        inner: &dyn EventStore,
        batch: &[DeleteIf],
    ) -> Result<Vec<GuardedDelete>, StoreError> {
        if matches!(self.lie, Lie::OutcomesShort) {
            return Ok(vec![GuardedDelete::Deleted; batch.len().saturating_sub(1)]);
        }
        let mut outcomes = Vec::with_capacity(batch.len());
        for entry in batch {
            outcomes.push(
                self.delete_execution_if(inner, &entry.execution_id, &entry.guard)
                    .await?,
            );
        }
        Ok(outcomes)
    }
}

/// Sweeps `store` through a [`Liar`] telling `lie` about an old child of a
/// running parent; expects a contract error, the child and its parent
/// still there.
async fn expect_contract(store: &Store, lie: Lie) {
    let (parent, child) = (
        id(&format!("contract-{lie:?}-parent")),
        id(&format!("contract-{lie:?}-child")),
    );
    start(&**store, &parent).await;
    finished_child(&**store, &child, Some(&parent), LONG_AGO).await;
    let lying = Around {
        inner: Arc::clone(store),
        hooks: Liar {
            lie,
            child: child.clone(),
        },
    };
    match Sweep::new(&lying, options(1)).run().await {
        Err(RuntimeError::Sweep { report, source })
            if matches!(*source, RuntimeError::Contract(_)) =>
        {
            assert!(
                report.kept.iter().all(|kept| kept.execution_id != child),
                "{lie:?}: a refusal outside the guard is not a kept execution: {source}"
            );
        }
        other => panic!("{lie:?}: expected a contract error, got {other:?}"),
    }
    assert!(exists(&**store, &child).await, "{lie:?}: the child is kept");
    assert!(
        exists(&**store, &parent).await,
        "{lie:?}: the parent is kept"
    );
}

/// A listing past its limit, or a summary whose end is past its own head,
/// is a broken store: the sweep stops before it judges anything by it.
pub async fn a_listing_outside_the_interface_stops_the_sweep(store: Store) {
    expect_contract(&store, Lie::PastTheLimit).await;
    expect_contract(&store, Lie::EndedPastHead).await;
}

/// A log that does not run from sequence 1 is not the whole log: judging
/// or archiving it would lose events, so the sweep stops.
pub async fn a_log_not_from_sequence_one_stops_the_sweep(store: Store) {
    expect_contract(&store, Lie::LogWithoutItsStart).await;
}

/// A refusal that cannot be the answer to the guard sent (the log "changed"
/// to the head the guard names, a parent the guard does not name "moved"),
/// or a batch answered with fewer outcomes than entries, is a broken store,
/// not a kept execution.
pub async fn a_delete_answer_outside_the_guard_stops_the_sweep(store: Store) {
    expect_contract(&store, Lie::GuardsOwnHead).await;
    expect_contract(&store, Lie::StrangerMoved).await;
    expect_contract(&store, Lie::OutcomesShort).await;
}

/// Counts listings.
#[derive(Default)]
struct Listings(AtomicUsize);

#[async_trait]
impl Hooks for Listings {
    async fn list_executions(
        &self,
        inner: &dyn EventStore,
        after: Option<&ExecutionId>,
        limit: u32,
    ) -> Result<Vec<ExecutionSummary>, StoreError> {
        self.0.fetch_add(1, Ordering::SeqCst);
        inner.list_executions(after, limit).await
    }
}

/// A page limit out of bounds is refused before anything is listed, with
/// the listing's own error and an empty report.
pub async fn a_page_limit_out_of_bounds_is_refused_before_listing(store: Store) {
    let root = id("contract-limit-root");
    finished_child(&*store, &root, None, LONG_AGO).await;
    let counting = Around {
        inner: Arc::clone(&store),
        hooks: Listings::default(),
    };
    for limit in [0, loomfence_core::retention::MAX_PAGE_LIMIT + 1] {
        match Sweep::new(&counting, options(limit)).run().await {
            Err(error) => match (error.store_error(), error.partial_report()) {
                (Some(StoreError::Input(InputError::Limit { value, .. })), Some(report)) => {
                    assert_eq!((*value, report.pages), (u64::from(limit), 0), "{limit}");
                }
                _ => panic!("limit {limit}: expected the limit's error, got {error:?}"),
            },
            other => panic!("limit {limit}: expected the limit's error, got {other:?}"),
        }
    }
    assert_eq!(
        counting.hooks.0.load(Ordering::SeqCst),
        0,
        "nothing was listed"
    );
    assert!(exists(&*store, &root).await);
}
