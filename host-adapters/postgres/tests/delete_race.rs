//! `delete_execution` racing an append or a conditional acquire of the same
//! execution. Whichever lands first, the log stays contiguous from sequence
//! 1 (the append is deleted with the log, or it starts a re-created log at
//! 1), and an acquire of a park that was deleted under it takes no token
//! (`ParkSeqOutOfRange`, as for any park outside the log).
//!
//! The forced interleavings hold the delete half-way: an admin session
//! holds the execution's event rows `FOR SHARE`, so the store's delete takes
//! its locks and then waits at its `DELETE`; the rival call starts while
//! the delete waits (and either finishes or waits too); then the admin lets
//! go. The store's backends are found by application name, so the tests do
//! not depend on the SQL the store sends. A last test leaves the race to
//! chance, many times.

mod common;

use std::sync::Arc;

use common::kernel;
use loomfence_core::{Envelope, InputError, KernelKind, NewEvent, ParkExpectation};
use loomfence_postgres::{AcquireStrategy, PostgresEventStore, PostgresOptions};
use loomfence_store::{EventStore, StoreError};
use tokio::task::JoinHandle;

/// A parked execution, its store (whose backends carry a unique application
/// name), and the admin session holding its event rows.
struct HeldDelete {
    /// The store.
    store: Arc<PostgresEventStore>,
    /// The store's application name.
    app: String,
    /// Holds the event rows until [`HeldDelete::release`].
    admin: tokio_postgres::Client,
    /// Reads `pg_stat_activity`, outside any transaction.
    monitor: tokio_postgres::Client,
    /// The store's delete, waiting at its `DELETE`.
    delete: JoinHandle<Result<bool, StoreError>>,
}

/// The execution every forced interleaving is about.
const ID: &str = "deleted-under-a-rival";

impl HeldDelete {
    /// Parks [`ID`], holds its event rows, and starts the store's delete;
    /// returns once the delete waits on a lock.
    async fn start(url: &str, acquire: AcquireStrategy) -> Self {
        let app = common::unique("lf_delete");
        let store = Arc::new(
            common::store_with(
                &common::with_application_name(url, &app),
                PostgresOptions {
                    acquire,
                    ..common::options()
                },
            )
            .await,
        );
        common::park(&*store, &common::id(ID)).await;
        let admin = common::admin(url).await;
        let monitor = common::admin(url).await;
        admin.batch_execute("BEGIN").await.expect("begins");
        admin
            .query(
                &format!(
                    "SELECT 1 FROM {}.events WHERE execution_id = $1 FOR SHARE",
                    store.schema()
                ),
                &[&ID],
            )
            .await
            .expect("holds the event rows");
        let delete = {
            let store = store.clone();
            tokio::spawn(async move { store.delete_execution(&common::id(ID)).await })
        };
        let waiting =
            common::wait_for_waiters(&monitor, &app, |w| w.len() == 1, || delete.is_finished())
                .await;
        assert_eq!(waiting.len(), 1, "the delete waits at its DELETE");
        Self {
            store,
            app,
            admin,
            monitor,
            delete,
        }
    }

    /// Waits until `rival` has finished or waits on a lock too, then lets
    /// the delete go; returns the rival's answer.
    async fn release<T>(self, rival: JoinHandle<T>) -> (Arc<PostgresEventStore>, T) {
        common::wait_for_waiters(
            &self.monitor,
            &self.app,
            |w| w.len() >= 2,
            || rival.is_finished(),
        )
        .await;
        self.admin.batch_execute("COMMIT").await.expect("lets go");
        assert!(
            self.delete
                .await
                .expect("the delete task")
                .expect("deletes"),
            "the delete found the log"
        );
        (self.store, rival.await.expect("the rival task"))
    }
}

/// Fails unless `log` is empty or numbered 1, 2, 3, ….
fn assert_contiguous(log: &[Envelope], what: &str) {
    let sequences: Vec<u64> = log.iter().map(|e| e.sequence).collect();
    let expected: Vec<u64> = (1..=log.len() as u64).collect();
    assert_eq!(
        sequences, expected,
        "{what}: after a delete raced by an append the log must be empty or start at 1: {log:?}"
    );
}

/// Appends `event` to [`ID`] while the store's delete of it is held
/// half-way; the log afterwards must be contiguous.
async fn append_during_delete(event: NewEvent) {
    let Some(url) = common::url() else { return };
    let what = event.kind.clone();
    let held = HeldDelete::start(&url, AcquireStrategy::Function).await;
    let append = {
        let store = held.store.clone();
        tokio::spawn(async move { store.append(&common::id(ID), event).await })
    };
    let (store, appended) = held.release(append).await;
    println!("{what} appended during a delete: {appended:?}");
    appended.expect("the append is not refused");
    let log = store
        .read_range(&common::id(ID), 1, None)
        .await
        .expect("reads");
    assert_contiguous(&log, &what);
}

/// A plain (ignorable) append during a delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_plain_append_during_a_delete_keeps_the_log_contiguous() {
    append_during_delete(kernel(KernelKind::StepStarted)).await;
}

/// An answering append (it reads the fence row `FOR SHARE`, which the
/// delete holds) during a delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_answering_append_during_a_delete_keeps_the_log_contiguous() {
    append_during_delete(kernel(KernelKind::ExecutionResumed)).await;
}

/// `acquire_fence_if` on the park while the store's delete of the execution
/// is held half-way: once the delete lands the park is outside the log, so
/// the answer is `ParkSeqOutOfRange` and no token or fence row is left.
async fn acquire_during_delete(acquire: AcquireStrategy) {
    let Some(url) = common::url() else { return };
    let held = HeldDelete::start(&url, acquire).await;
    let rival = {
        let store = held.store.clone();
        tokio::spawn(async move {
            store
                .acquire_fence_if(
                    &common::id(ID),
                    ParkExpectation {
                        fence: 0,
                        park_seq: 2,
                    },
                )
                .await
        })
    };
    let (store, acquired) = held.release(rival).await;
    println!("acquire_fence_if ({acquire:?}) during a delete: {acquired:?}");
    assert!(
        matches!(
            acquired,
            Err(StoreError::Input(InputError::ParkSeqOutOfRange {
                park_seq: 2,
                head: 0
            }))
        ),
        "{acquire:?}: the park was deleted under the acquire: {acquired:?}"
    );
    let after = common::Witness::capture(&*store, &common::id(ID)).await;
    assert_eq!((after.events.len(), after.fence), (0, 0), "{acquire:?}");
    let admin = common::admin(&url).await;
    let rows: i64 = admin
        .query_one(
            &format!("SELECT count(*) FROM {}.fences", store.schema()),
            &[],
        )
        .await
        .expect("counts fence rows")
        .get(0);
    assert_eq!(rows, 0, "{acquire:?}: no fence row is left behind");
}

/// The function strategy's acquire during a delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_function_acquire_during_a_delete_takes_no_token() {
    acquire_during_delete(AcquireStrategy::Function).await;
}

/// The pipelined acquire during a delete.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pipelined_acquire_during_a_delete_takes_no_token() {
    acquire_during_delete(AcquireStrategy::Pipelined).await;
}

/// Trials per kind of append in the unforced race.
const TRIALS: usize = 200;

/// The append race left to chance: `delete_execution` and an append of the
/// same parked execution released together by a barrier, many times, with a
/// plain and with an answering append. The log afterwards must be empty
/// (the append landed first) or start at 1 (the append re-created it).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_delete_racing_appends_never_leaves_a_gap() {
    let Some(url) = common::url() else { return };
    let store = Arc::new(common::store(&url).await);
    let mut failures = Vec::new();
    for kind in [KernelKind::StepStarted, KernelKind::ExecutionResumed] {
        let (mut appended_first, mut deleted_first, mut gaps) = (0, 0, 0);
        for trial in 0..TRIALS {
            let id = common::id(&format!("raced-{}-{trial}", kind.as_str()));
            common::park(&*store, &id).await;
            let start = Arc::new(tokio::sync::Barrier::new(2));
            let delete = {
                let (store, start, id) = (store.clone(), start.clone(), id.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    store.delete_execution(&id).await
                })
            };
            let append = {
                let (store, start, id) = (store.clone(), start.clone(), id.clone());
                tokio::spawn(async move {
                    start.wait().await;
                    store.append(&id, kernel(kind)).await
                })
            };
            assert!(delete.await.expect("the delete task").expect("deletes"));
            append.await.expect("the append task").expect("appends");
            let log = store.read_range(&id, 1, None).await.expect("reads");
            match log.first().map(|e| e.sequence) {
                None => appended_first += 1,
                Some(1) => deleted_first += 1,
                Some(_) => {
                    gaps += 1;
                    if failures.len() < 3 {
                        failures.push(log);
                    }
                }
            }
        }
        println!(
            "delete vs {}: {TRIALS} trials: append then delete {appended_first}, \
             delete then append (log re-created at 1) {deleted_first}, log left starting past 1: {gaps}",
            kind.as_str()
        );
    }
    assert!(
        failures.is_empty(),
        "a delete raced by an append left a log that does not start at 1: {failures:#?}"
    );
}
