//! Guarded deletes whose children and parents are each other's: each takes
//! every execution's lock it names, in one global order, so none can hold
//! one while waiting for another's. Taken in the order named, the crossed
//! deletes deadlock (PostgreSQL aborts one with `40P01`) as soon as each got
//! its first lock.
//!
//! Every round runs [`PAIRS`] such pairs at once, each pair's two single
//! guarded deletes, and two batches that name every pair crossed: one of
//! each pair's `a` (parent `b`) in order, one of each pair's `b` (parent
//! `a`) in reverse. Every delete then succeeds: a parent deleted first has
//! no log, and a parent with no log waits on nothing.

use std::sync::Arc;

use loomfence_conformance::cases::retention::guard_of;
use loomfence_core::{
    ExecutionId, KernelKind,
    retention::{DeleteIf, GuardedDelete},
};
use loomfence_postgres::{PostgresEventStore, PostgresOptions};
use loomfence_store::{EventStore, StoreError};

use crate::common::{self, kernel};

/// Rounds of the race.
const ROUNDS: usize = 150;

/// Pairs racing in each round.
const PAIRS: usize = 8;

/// The error and its innermost cause (the server's message and SQLSTATE,
/// which the store's error wraps).
fn cause(error: &StoreError) -> String {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        text = format!("{text}: {inner}");
        source = inner.source();
    }
    text
}

/// The guarded delete of `child`, which saw `parent` at head 2.
async fn delete(
    store: Arc<PostgresEventStore>,
    child: ExecutionId,
    parent: ExecutionId,
) -> Result<GuardedDelete, StoreError> {
    store
        .delete_execution_if(&child, &guard_of(2, &[(&parent, 2)]))
        .await
}

/// The batched guarded delete of each `(child, parent)`, every parent seen
/// at head 2; every outcome must be `Deleted` or, for a child a crossed
/// delete already took, `LogChanged { head: 0 }`.
async fn delete_batch(
    store: Arc<PostgresEventStore>,
    pairs: Vec<(ExecutionId, ExecutionId)>,
) -> Result<Vec<GuardedDelete>, StoreError> {
    let batch: Vec<DeleteIf> = pairs
        .iter()
        .map(|(child, parent)| DeleteIf {
            execution_id: child.clone(),
            guard: guard_of(2, &[(parent, 2)]),
        })
        .collect();
    store.delete_executions_if(&batch).await
}

/// Whether `outcome` is what a crossed delete may answer: it deleted, or
/// another delete had taken the log already.
fn deleted_or_gone(outcome: &GuardedDelete) -> bool {
    matches!(
        outcome,
        GuardedDelete::Deleted | GuardedDelete::LogChanged { head: 0 }
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn crossed_guarded_deletes_never_deadlock() {
    let Some(url) = common::url() else { return };
    let store = Arc::new(
        common::store_with(
            &url,
            PostgresOptions {
                pool_size: 2 * PAIRS,
                ..common::options()
            },
        )
        .await,
    );
    for round in 0..ROUNDS {
        let mut pairs = Vec::new();
        for pair in 0..PAIRS {
            let a = common::id(&format!("x{round}-{pair}-a"));
            let b = common::id(&format!("x{round}-{pair}-b"));
            for id in [&a, &b] {
                store
                    .append_many(
                        id,
                        vec![
                            kernel(KernelKind::ExecutionStarted),
                            kernel(KernelKind::ExecutionCompleted),
                        ],
                    )
                    .await
                    .expect("writes a finished log");
            }
            pairs.push((a, b));
        }
        let forward: Vec<_> = pairs.iter().map(|(a, b)| (a.clone(), b.clone())).collect();
        let backward: Vec<_> = pairs
            .iter()
            .rev()
            .map(|(a, b)| (b.clone(), a.clone()))
            .collect();
        let batches = [
            tokio::spawn(delete_batch(store.clone(), forward)),
            tokio::spawn(delete_batch(store.clone(), backward)),
        ];
        let mut singles = Vec::new();
        for (a, b) in &pairs {
            singles.push(tokio::spawn(delete(store.clone(), a.clone(), b.clone())));
            singles.push(tokio::spawn(delete(store.clone(), b.clone(), a.clone())));
        }
        for single in singles {
            let outcome = single.await.expect("the task").unwrap_or_else(|e| {
                panic!(
                    "round {round}: a single guarded delete failed: {}",
                    cause(&e)
                )
            });
            assert!(deleted_or_gone(&outcome), "round {round}: {outcome:?}");
        }
        for batch in batches {
            let outcomes = batch.await.expect("the task").unwrap_or_else(|e| {
                panic!(
                    "round {round}: a batch of guarded deletes failed: {}",
                    cause(&e)
                )
            });
            assert_eq!(outcomes.len(), PAIRS);
            assert!(
                outcomes.iter().all(deleted_or_gone),
                "round {round}: {outcomes:?}"
            );
        }
        for (a, b) in &pairs {
            for id in [a, b] {
                assert!(
                    store
                        .read_range(id, 1, None)
                        .await
                        .expect("reads")
                        .is_empty(),
                    "round {round}: {id:?} is gone"
                );
            }
        }
    }
}
