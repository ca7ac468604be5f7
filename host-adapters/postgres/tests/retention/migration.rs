//! `migrate` and retention's additions: an older schema (no index of
//! terminal events, no `delete_execution_if`) gains both, plainly when
//! `events` is empty and `CONCURRENTLY` when it has rows; a boot against a
//! current schema never waits for a lock on `events`; a build that cannot
//! get its locks gives up retryably and the next boot finishes it; and a
//! build another session is running is not waited for.

use std::time::Duration;

use loomfence_conformance::cases::retention::guard_of;
use loomfence_core::retention::GuardedDelete;
use loomfence_postgres::migration::{IndexBuild, MigrateOptions, migrate};
use loomfence_postgres::{OpenError, PostgresEventStore, Schema};
use loomfence_store::EventStore;

use crate::common;
use crate::family;

/// The options of a boot that gives up on a lock after 200 ms.
fn impatient() -> MigrateOptions {
    MigrateOptions {
        lock_timeout: Duration::from_millis(200),
        ..MigrateOptions::default()
    }
}

/// Takes `schema` back to the shape before retention: no index of
/// terminal events, no guarded delete function.
async fn make_old(admin: &tokio_postgres::Client, schema: &Schema) {
    admin
        .batch_execute(&format!(
            "DROP INDEX {schema}.events_ended; \
             DROP FUNCTION {schema}.delete_execution_if(text, bigint, text[], bigint[], text[], text[])"
        ))
        .await
        .expect("drops retention's additions");
}

/// Whether the index exists (`None` if not) and is valid.
async fn index(admin: &tokio_postgres::Client, schema: &Schema) -> Option<bool> {
    admin
        .query_opt(
            "SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)",
            &[&format!("{schema}.events_ended")],
        )
        .await
        .expect("reads the catalog")
        .map(|row| row.get(0))
}

/// Whether the guarded delete function is installed.
async fn function(admin: &tokio_postgres::Client, schema: &Schema) -> bool {
    admin
        .query_one(
            "SELECT to_regprocedure($1) IS NOT NULL",
            &[&format!(
                "{schema}.delete_execution_if(text, bigint, text[], bigint[], text[], text[])"
            )],
        )
        .await
        .expect("reads the catalog")
        .get(0)
}

/// A parent and a finished child; checks the listing and the guarded
/// delete work on what `migrate` left.
async fn retention_works(store: &PostgresEventStore, tag: &str) {
    let (parent, child) = (
        common::id(&format!("{tag}-parent")),
        common::id(&format!("{tag}-child")),
    );
    let (head, seen) = family(store, &parent, &child).await;
    let listed = store.list_executions(None, 100).await.expect("lists");
    let summary = listed
        .iter()
        .find(|s| s.execution_id == child)
        .expect("the child is listed");
    assert_eq!(summary.ended.map(|e| e.sequence), Some(2));
    let guard = guard_of(head, &[(&parent, seen)]);
    assert_eq!(
        store
            .delete_execution_if(&child, &guard)
            .await
            .expect("deletes"),
        GuardedDelete::Deleted
    );
}

/// Migrates `store`'s old schema and checks it gained the index (built as
/// `built`, for the reason `why`) and the function, and that retention
/// works on it (with executions named after `tag`).
async fn migrates_to_retention(
    admin: &tokio_postgres::Client,
    store: &PostgresEventStore,
    tag: &str,
    built: IndexBuild,
    why: &str,
) {
    let report = store.migrate().await.expect("migrates");
    assert_eq!(report.ended_index, built, "{why}");
    assert_eq!(index(admin, store.schema()).await, Some(true));
    assert!(function(admin, store.schema()).await);
    retention_works(store, tag).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_old_schema_gains_the_index_and_the_function() {
    let Some(url) = common::url() else { return };
    let admin = common::admin(&url).await;

    let empty = common::store(&url).await;
    make_old(&admin, empty.schema()).await;
    migrates_to_retention(
        &admin,
        &empty,
        "empty",
        IndexBuild::Created,
        "an empty table is indexed in the transaction",
    )
    .await;

    let full = common::store(&url).await;
    family(&full, &common::id("old-parent"), &common::id("old-child")).await;
    make_old(&admin, full.schema()).await;
    migrates_to_retention(
        &admin,
        &full,
        "full",
        IndexBuild::BuiltConcurrently,
        "a table with rows is indexed without blocking appends",
    )
    .await;
    let again = full.migrate().await.expect("migrates again");
    assert_eq!(again.ended_index, IndexBuild::Present);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_boot_against_a_current_schema_does_not_wait_for_a_lock_on_events() {
    let Some(url) = common::url() else { return };
    for lock in [
        "INSERT INTO {t} VALUES ('in-flight', 1, 'app.step', '{}', '{}', 0)",
        "LOCK TABLE {t} IN ACCESS EXCLUSIVE MODE",
    ] {
        let store = common::store(&url).await;
        family(&store, &common::id("p"), &common::id("c")).await;
        let schema = store.schema().clone();
        let table = format!("{schema}.events");
        let holder = common::hold_lock(&url, lock, &table).await;

        let report = migrate(store.pool(), &schema, &impatient())
            .await
            .unwrap_or_else(|e| panic!("{lock}: a boot against a current schema waited: {e}"));
        assert_eq!(report.ended_index, IndexBuild::Present);

        common::assert_ddl_waits(
            &url,
            &format!("CREATE INDEX IF NOT EXISTS events_ended ON {table} (execution_id, sequence)"),
            lock,
        )
        .await;
        holder.batch_execute("ROLLBACK").await.expect("releases");
    }
}

/// A fresh store with a family in its log, taken back to the schema before
/// retention; with an admin session and the store's schema.
async fn old_store_with_rows(url: &str) -> (tokio_postgres::Client, PostgresEventStore, Schema) {
    let admin = common::admin(url).await;
    let store = common::store(url).await;
    let schema = store.schema().clone();
    family(&store, &common::id("p"), &common::id("c")).await;
    make_old(&admin, &schema).await;
    (admin, store, schema)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_build_kept_waiting_gives_up_retryably_and_the_next_boot_finishes_it() {
    let Some(url) = common::url() else { return };
    let (admin, store, schema) = old_store_with_rows(&url).await;
    let writer = common::hold_lock(
        &url,
        "INSERT INTO {t} VALUES ('in-flight', 1, 'app.step', '{}', '{}', 0)",
        &format!("{schema}.events"),
    )
    .await;

    match migrate(store.pool(), &schema, &impatient()).await {
        Err(error @ OpenError::TableLocked { .. }) => {
            assert!(error.is_retryable());
            assert!(error.to_string().contains("concurrently"), "{error}");
            println!("as expected: {error}");
        }
        other => panic!("expected TableLocked, got {other:?}"),
    }
    assert!(
        !function(&admin, &schema).await,
        "the migration's transaction did not run"
    );
    assert_ne!(index(&admin, &schema).await, Some(true));

    writer
        .batch_execute("COMMIT")
        .await
        .expect("the append lands");
    let report = migrate(store.pool(), &schema, &impatient())
        .await
        .expect("migrates once the writer is done");
    assert_eq!(report.ended_index, IndexBuild::BuiltConcurrently);
    assert_eq!(index(&admin, &schema).await, Some(true));
    retention_works(&store, "after").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_build_running_elsewhere_is_not_waited_for() {
    let Some(url) = common::url() else { return };
    let (admin, store, schema) = old_store_with_rows(&url).await;
    // The builders' lock, as another booting node holds it while it builds.
    let builder = common::admin(&url).await;
    let key = format!("loomfence.ended-index.{schema}");
    builder
        .query("SELECT pg_advisory_lock(hashtext($1))", &[&key])
        .await
        .expect("holds the builders' lock");

    let report = migrate(store.pool(), &schema, &impatient())
        .await
        .expect("boots without waiting for the build");
    assert_eq!(report.ended_index, IndexBuild::BuildingElsewhere);
    assert_eq!(index(&admin, &schema).await, None);
    assert!(function(&admin, &schema).await);
    retention_works(&store, "meanwhile").await;

    builder
        .query("SELECT pg_advisory_unlock(hashtext($1))", &[&key])
        .await
        .expect("lets go");
    let report = store.migrate().await.expect("migrates");
    assert_eq!(report.ended_index, IndexBuild::BuiltConcurrently);
}
