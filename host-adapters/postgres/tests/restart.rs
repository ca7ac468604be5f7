//! Restart safety: a store operation whose server backend dies mid-flight
//! (here: killed with `pg_terminate_backend` while it waits on a row lock)
//! fails with a retryable backend error, leaves the log and the token
//! exactly as they were, and the store carries on: the pool replaces the dead
//! connection and the same call then succeeds.
//!
//! The store gets a pool of ONE connection, so the call after the kill must
//! go through a replaced connection rather than a spare one. (A sequential
//! caller has one connection whatever the pool size: the pool opens a
//! second only when the first is busy.)

mod common;

use std::time::Duration;

use common::kernel;
use loomfence_core::{AcquireOutcome, ExecutionId, KernelKind, ParkExpectation};
use loomfence_postgres::{AcquireStrategy, PostgresEventStore, PostgresOptions};
use loomfence_store::{EventStore, StoreError};

/// The operation that is made to block and is then killed.
#[derive(Clone, Copy, Debug)]
enum Op {
    /// `acquire_fence_if({1, park})`.
    AcquireIf,
    /// An answering `append` (`EXECUTION_RESUMED` under token 1).
    AnsweringAppend,
    /// `delete_execution`.
    Delete,
}

impl Op {
    /// Runs the operation; describes what it did.
    async fn run(
        self,
        store: &PostgresEventStore,
        id: &ExecutionId,
        park_seq: u64,
    ) -> Result<String, StoreError> {
        match self {
            Op::AcquireIf => store
                .acquire_fence_if(id, ParkExpectation { fence: 1, park_seq })
                .await
                .map(|outcome| format!("{outcome:?}")),
            Op::AnsweringAppend => store
                .append(id, kernel(KernelKind::ExecutionResumed).with_fence(1))
                .await
                .map(|envelope| format!("appended at {}", envelope.sequence)),
            Op::Delete => store
                .delete_execution(id)
                .await
                .map(|existed| format!("deleted: {existed}")),
        }
    }

    /// What the operation must answer once nothing blocks it.
    fn expected(self) -> &'static str {
        match self {
            Op::AcquireIf => "Acquired { fence: 2 }",
            Op::AnsweringAppend => "appended at 3",
            Op::Delete => "deleted: true",
        }
    }
}

/// Rounds per test, each on a fresh execution: whether the dead connection
/// is noticed before it is reused is a race, so one round proves little.
const ROUNDS: usize = 10;

/// Blocks `op` behind a fence-row lock held by `admin`, kills its backend
/// from a second session, and checks the error, the untouched state, and
/// that the store then works; `ROUNDS` times.
async fn killed_while_blocked(op: Op, acquire: AcquireStrategy) {
    let Some(url) = common::url() else { return };
    let app = common::unique("lf_restart");
    let store = std::sync::Arc::new(
        common::store_with(
            &common::with_application_name(&url, &app),
            PostgresOptions {
                pool_size: 1,
                acquire,
                ..common::options()
            },
        )
        .await,
    );
    let admin = common::admin(&url).await;
    let monitor = common::admin(&url).await;
    for round in 0..ROUNDS {
        let id = format!("killed-{op:?}-{acquire:?}-{round}");
        kill_once(&store, &app, &admin, &monitor, op, &id).await;
    }
}

/// One round of [`killed_while_blocked`] on execution `id`.
async fn kill_once(
    store: &std::sync::Arc<PostgresEventStore>,
    app: &str,
    admin: &tokio_postgres::Client,
    monitor: &tokio_postgres::Client,
    op: Op,
    id: &str,
) {
    let schema = store.schema().to_string();
    let (text, id) = (id, &common::id(id));
    let park_seq = common::park(&**store, id).await;
    assert_eq!(
        store
            .acquire_fence_if(id, ParkExpectation { fence: 0, park_seq })
            .await
            .expect("the first acquire"),
        AcquireOutcome::Acquired { fence: 1 }
    );
    let before = common::Witness::capture(&**store, id).await;

    admin.batch_execute("BEGIN").await.expect("begins");
    let locked = admin
        .query_opt(
            &format!("SELECT token FROM {schema}.fences WHERE execution_id = $1 FOR UPDATE"),
            &[&text],
        )
        .await
        .expect("locks the fence row");
    assert!(locked.is_some(), "the park wrote the fence row");

    let blocked = {
        let (store, id) = (store.clone(), id.to_owned());
        tokio::spawn(async move { op.run(&store, &id, park_seq).await })
    };
    let waiters = common::wait_for_waiters(monitor, app, |w| !w.is_empty(), || false).await;
    let [pid] = waiters[..] else {
        panic!("{id}: expected the store's one backend to wait on the fence row, found {waiters:?}")
    };
    let killed: bool = monitor
        .query_one("SELECT pg_terminate_backend($1)", &[&pid])
        .await
        .expect("terminates the backend")
        .get(0);
    assert!(killed);
    let result = tokio::time::timeout(Duration::from_secs(10), blocked)
        .await
        .expect("the killed call returns")
        .expect("the task");
    match &result {
        Err(StoreError::Backend(backend)) => assert!(
            backend.retryable,
            "{id}: a killed connection must be retryable: {backend}"
        ),
        other => panic!("{id}: expected a backend error, got {other:?}"),
    }
    admin.batch_execute("ROLLBACK").await.expect("rolls back");

    // The first calls after the kill: the pool must not hand the dead
    // connection out again.
    let log = store.read_range(id, 1, None).await.unwrap_or_else(|e| {
        panic!("{id}: the first call after the kill failed (the pool reused the dead connection?): {e:?}")
    });
    let fence = store
        .current_fence(id)
        .await
        .unwrap_or_else(|e| panic!("{id}: reading the token after the kill: {e:?}"));
    assert_eq!(
        (&log, fence),
        (&before.events, before.fence),
        "{id}: the killed call changed nothing"
    );

    let again = op
        .run(store, id, park_seq)
        .await
        .unwrap_or_else(|e| panic!("{id}: the same call after the kill: {e:?}"));
    assert_eq!(again, op.expected(), "{id}");
}

/// The function-strategy acquire, killed while it waits for the row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_conditional_acquire_changes_nothing_and_the_store_recovers() {
    killed_while_blocked(Op::AcquireIf, AcquireStrategy::Function).await;
}

/// The pipelined acquire, killed inside its explicit transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_pipelined_acquire_changes_nothing_and_the_store_recovers() {
    killed_while_blocked(Op::AcquireIf, AcquireStrategy::Pipelined).await;
}

/// An answering append, killed while its `FOR SHARE` read waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_answering_append_changes_nothing_and_the_store_recovers() {
    killed_while_blocked(Op::AnsweringAppend, AcquireStrategy::Function).await;
}

/// A delete, killed while it waits for the fence row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_delete_changes_nothing_and_the_store_recovers() {
    killed_while_blocked(Op::Delete, AcquireStrategy::Function).await;
}
