//! The window the guarded delete closes, forced both ways on real sessions.
//!
//! A parent's park is an append, and every append takes its execution's
//! lock first; the guarded delete takes the locks of the child and of every
//! parent before it checks anything. So:
//!
//! - park first: an admin session calls the store's own `append` function
//!   for the parent inside a transaction it leaves open; the store's
//!   guarded delete must wait for that lock, and once the park commits it
//!   must see it and refuse (`ParentMoved`), leaving the child's log whole;
//! - delete first: an admin session calls the `delete_execution_if`
//!   function inside a transaction it leaves open; the store's park append
//!   must wait, and lands once the delete commits. The child is gone: a
//!   park on an already-deleted child, which the guarded delete cannot
//!   prevent (the park came after the delete) and the supervisor reports
//!   as for any child whose log is missing. It is not a violation: the
//!   sweep's pin check and delete happened before the parent waited.

use std::sync::Arc;

use loomfence_conformance::cases::retention::guard_of;
use loomfence_core::{
    JsonObject, KernelKind,
    park::{Wait, park_payload},
    retention::GuardedDelete,
};
use loomfence_postgres::PostgresEventStore;
use loomfence_store::EventStore;
use tokio_postgres::types::Json;

use crate::common::{self, AT, Witness, wait_for_advisory_waiter};
use crate::{answering_kinds, family, kernel_kinds, park_on};

/// A store whose backends carry a unique application name, so a test can
/// find them in `pg_locks`.
async fn named_store(url: &str) -> (Arc<PostgresEventStore>, String) {
    let app = common::unique("lf_retention");
    let store =
        common::store_with(&common::with_application_name(url, &app), common::options()).await;
    (Arc::new(store), app)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_park_in_flight_makes_the_guarded_delete_wait_then_refuse() {
    let Some(url) = common::url() else { return };
    let (store, app) = named_store(&url).await;
    let (parent, child) = (common::id("il-parent"), common::id("il-child"));
    let (head, seen) = family(&*store, &parent, &child).await;
    let before = Witness::capture(&*store, &child).await;

    let admin = common::admin(&url).await;
    let monitor = common::admin(&url).await;
    admin.batch_execute("BEGIN").await.expect("begins");
    // The park opens at offset 1: the open parks' upkeep, as the store passes it.
    let inserted: i64 = admin
        .query_one(
            &format!(
                "SELECT inserted FROM {}.append($1, $2::text[], $3::jsonb[], $4::jsonb[], $5::int8[], \
                 NULL, true, true, true, NULL, $6::text[], $7::text[], 1, false)",
                store.schema()
            ),
            &[
                &parent.as_str(),
                &vec![KernelKind::ExecutionSuspended.as_str()],
                &vec![Json(park_payload(&[Wait::Child(child.clone())]))],
                &vec![Json(JsonObject::new())],
                &vec![AT],
                &answering_kinds(),
                &kernel_kinds(),
            ],
        )
        .await
        .expect("parks the parent, uncommitted")
        .get(0);
    assert_eq!(inserted, 1);

    let guard = guard_of(head, &[(&parent, seen)]);
    let delete = {
        let (store, child) = (store.clone(), child.clone());
        tokio::spawn(async move { store.delete_execution_if(&child, &guard).await })
    };
    let waits = wait_for_advisory_waiter(&monitor, &app, || delete.is_finished()).await;
    if !waits || delete.is_finished() {
        admin.batch_execute("ROLLBACK").await.expect("rolls back");
        panic!(
            "the guarded delete did not wait for the parent's park in flight; it answered {:?}",
            delete.await.expect("the delete task")
        );
    }
    admin
        .batch_execute("COMMIT")
        .await
        .expect("commits the park");
    assert_eq!(
        delete.await.expect("the delete task").expect("answers"),
        GuardedDelete::ParentMoved {
            parent: parent.clone()
        },
        "the park committed while the delete waited: the delete must see it"
    );
    before
        .assert_unchanged(&*store, "a delete refused for a park in flight")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_guarded_delete_in_flight_makes_the_park_wait_then_land_on_a_deleted_child() {
    let Some(url) = common::url() else { return };
    let (store, app) = named_store(&url).await;
    let (parent, child) = (common::id("im-parent"), common::id("im-child"));
    let (head, seen) = family(&*store, &parent, &child).await;

    let admin = common::admin(&url).await;
    let monitor = common::admin(&url).await;
    admin.batch_execute("BEGIN").await.expect("begins");
    let outcome: String = admin
        .query_one(
            &format!(
                "SELECT outcome FROM {}.delete_execution_if($1, $2, $3::text[], $4::int8[], $5::text[], $6::text[])",
                store.schema()
            ),
            &[
                &child.as_str(),
                &i64::try_from(head).expect("small"),
                &vec![parent.as_str()],
                &vec![i64::try_from(seen).expect("small")],
                &answering_kinds(),
                &kernel_kinds(),
            ],
        )
        .await
        .expect("deletes the child, uncommitted")
        .get(0);
    assert_eq!(outcome, "deleted");

    let park = {
        let (store, parent, child) = (store.clone(), parent.clone(), child.clone());
        tokio::spawn(async move { store.append(&parent, park_on(&child)).await })
    };
    let waits = wait_for_advisory_waiter(&monitor, &app, || park.is_finished()).await;
    if !waits || park.is_finished() {
        admin.batch_execute("ROLLBACK").await.expect("rolls back");
        panic!(
            "the park did not wait for the guarded delete in flight; it answered {:?}",
            park.await.expect("the park task")
        );
    }
    admin
        .batch_execute("COMMIT")
        .await
        .expect("commits the delete");
    let parked = park.await.expect("the park task").expect("the park lands");
    assert_eq!(parked.sequence, seen + 1);
    assert!(
        store
            .read_range(&child, 1, None)
            .await
            .expect("reads")
            .is_empty(),
        "the child was deleted before the parent parked on it"
    );
    let log = store.read_range(&parent, 1, None).await.expect("reads");
    assert_eq!(
        log.last().map(|e| e.kind.as_str()),
        Some(KernelKind::ExecutionSuspended.as_str())
    );
}
