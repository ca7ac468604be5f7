//! Two guarded deletes whose child and parent are each other's: each takes
//! both executions' locks, and in one global order, so neither can hold one
//! while waiting for the other's. Taken child first, the pair deadlocks
//! (PostgreSQL aborts one with `40P01`) as soon as both got their first
//! lock.
//!
//! Every round runs [`PAIRS`] such pairs at once; in each pair exactly one
//! delete wins (it deletes a log of head 2) and the other sees its parent
//! shrink below the head it saw (`ParentMoved`).

use std::sync::Arc;

use loomfence_conformance::cases::retention::guard_of;
use loomfence_core::{ExecutionId, KernelKind, retention::GuardedDelete};
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
        let mut tasks = Vec::new();
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
            tasks.push((
                (a.clone(), b.clone()),
                tokio::spawn(delete(store.clone(), a.clone(), b.clone())),
                tokio::spawn(delete(store.clone(), b, a)),
            ));
        }
        for ((a, b), first, second) in tasks {
            let first = first.await.expect("the task").unwrap_or_else(|e| {
                panic!(
                    "round {round}: the guarded delete of {a:?} failed: {}",
                    cause(&e)
                )
            });
            let second = second.await.expect("the task").unwrap_or_else(|e| {
                panic!(
                    "round {round}: the guarded delete of {b:?} failed: {}",
                    cause(&e)
                )
            });
            let answers = [first, second];
            assert!(
                answers
                    == [
                        GuardedDelete::Deleted,
                        GuardedDelete::ParentMoved { parent: a.clone() }
                    ]
                    || answers
                        == [
                            GuardedDelete::ParentMoved { parent: b.clone() },
                            GuardedDelete::Deleted
                        ],
                "round {round}: exactly one of a crossed pair deletes, the other sees its parent gone: {answers:?}"
            );
        }
    }
}
