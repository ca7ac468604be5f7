//! `migrate` against a real server: nodes booting together, a migration lock
//! held by someone else, and a schema written by a newer version.

mod common;

use std::time::{Duration, Instant};

use loomfence_postgres::migration::{MigrateOptions, SCHEMA_VERSION, migrate};
use loomfence_postgres::{OpenError, PostgresEventStore, PostgresOptions};
use loomfence_store::EventStore;

/// Options for a store on a fresh schema that does not migrate on connect.
fn unmigrated() -> PostgresOptions {
    PostgresOptions {
        migrate_on_connect: false,
        pool_size: 2,
        ..common::options()
    }
}

/// Nodes booting together, per fresh schema.
const NODES: usize = 6;

/// Fresh schemas each booted by `NODES` nodes at once.
const ROUNDS: usize = 3;

/// Opens `NODES` stores with `options` side by side.
async fn open_together(url: &str, options: &PostgresOptions) -> Vec<PostgresEventStore> {
    let tasks: Vec<_> = (0..NODES)
        .map(|_| {
            let (url, options) = (url.to_owned(), options.clone());
            tokio::spawn(async move { PostgresEventStore::connect(&url, options).await })
        })
        .collect();
    let mut stores = Vec::new();
    for task in tasks {
        stores.push(task.await.expect("a boot task").expect("connects"));
    }
    stores
}

/// `migrate` calls on a fresh schema at once all succeed (one creates, the
/// others wait for it and find the work done); another is idempotent.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_migrations_all_succeed_and_another_is_idempotent() {
    let Some(url) = common::url() else { return };
    for _ in 0..ROUNDS {
        let stores = std::sync::Arc::new(open_together(&url, &unmigrated()).await);
        let tasks: Vec<_> = (0..NODES)
            .map(|node| {
                let stores = stores.clone();
                tokio::spawn(async move { stores[node].migrate().await })
            })
            .collect();
        let mut backfills = Vec::new();
        for task in tasks {
            let report = task.await.expect("a migrate task").expect("migrates");
            assert_eq!(report.version, SCHEMA_VERSION);
            backfills.push(report.backfilled);
        }
        backfills.sort();
        let mut expected = vec![None; NODES - 1];
        expected.push(Some(0));
        assert_eq!(backfills, expected, "exactly one ran the (empty) backfill");
        let again = stores[0].migrate().await.expect("migrates again");
        assert_eq!((again.version, again.backfilled), (SCHEMA_VERSION, None));
        common::park(&stores[0], &common::id("after-migrate")).await;
        let log = stores[NODES - 1]
            .read_range(&common::id("after-migrate"), 1, None)
            .await
            .expect("reads");
        assert_eq!(log.len(), 2);
    }
}

/// `connect` calls on the same fresh schema at once all succeed.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_connects_all_succeed() {
    let Some(url) = common::url() else { return };
    for _ in 0..ROUNDS {
        let options = PostgresOptions {
            pool_size: 2,
            ..common::options()
        };
        let stores = open_together(&url, &options).await;
        common::park(&stores[0], &common::id("all-booted")).await;
        let log = stores[NODES - 1]
            .read_range(&common::id("all-booted"), 1, None)
            .await
            .expect("reads");
        assert_eq!(log.len(), 2);
        assert_eq!(
            stores[1].migrate().await.expect("idempotent").backfilled,
            None
        );
    }
}

/// While another session holds the schema's migration lock, `migrate` gives
/// up after its lock timeout with the retryable `LockTimeout`; once the lock
/// is released it succeeds.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_migration_lock_times_out_retryably_then_migrates() {
    let Some(url) = common::url() else { return };
    let store = PostgresEventStore::connect(&url, unmigrated())
        .await
        .expect("connects");
    let admin = common::admin(&url).await;
    admin.batch_execute("BEGIN").await.expect("begins");
    admin
        .query(
            "SELECT pg_advisory_xact_lock(hashtext($1))",
            &[&format!("loomfence.migrate.{}", store.schema())],
        )
        .await
        .expect("takes the migration lock");
    let options = MigrateOptions {
        lock_timeout: Duration::from_millis(200),
        ..MigrateOptions::default()
    };
    let started = Instant::now();
    let refused = migrate(store.pool(), store.schema(), &options).await;
    let waited = started.elapsed();
    match &refused {
        Err(error @ OpenError::LockTimeout { waited_ms }) => {
            assert_eq!(*waited_ms, 200);
            assert!(error.is_retryable());
        }
        other => panic!("expected LockTimeout, got {other:?}"),
    }
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(5),
        "gave up after {waited:?}"
    );
    let created: Option<String> = admin
        .query_one(
            "SELECT to_regclass($1)::text",
            &[&format!("{}.events", store.schema())],
        )
        .await
        .expect("reads the catalog")
        .get(0);
    assert_eq!(created, None, "the timed-out migration created nothing");
    admin
        .batch_execute("COMMIT")
        .await
        .expect("releases the lock");
    let report = migrate(store.pool(), store.schema(), &options)
        .await
        .expect("migrates once the lock is free");
    assert_eq!(report.version, SCHEMA_VERSION);
    common::park(&store, &common::id("after-the-wait")).await;
}

/// A schema whose version ledger says 99 was written by a newer loomfence:
/// `migrate` refuses with `NewerSchema { found: 99, .. }` and touches
/// nothing (it would otherwise reinstall the function and run the backfill).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_newer_schema_is_refused_and_left_alone() {
    let Some(url) = common::url() else { return };
    let store = common::store_with(&url, common::options()).await;
    let schema = store.schema().clone();
    common::park(&store, &common::id("parked-before")).await;
    let admin = common::admin(&url).await;
    admin
        .batch_execute(&format!(
            "UPDATE {schema}.migrations SET detail = '99' WHERE name = 'schema-version'; \
             DELETE FROM {schema}.migrations WHERE name = 'park-fence-backfill'; \
             DELETE FROM {schema}.fences; \
             DROP FUNCTION {schema}.acquire_fence_if(text, bigint, bigint, text[], text[])"
        ))
        .await
        .expect("makes the schema look newer");
    let ledger = format!("SELECT name, detail FROM {schema}.migrations ORDER BY name");
    let before: Vec<(String, Option<String>)> = admin
        .query(ledger.as_str(), &[])
        .await
        .expect("reads the ledger")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();

    match store.migrate().await {
        Err(error @ OpenError::NewerSchema { found, supported }) => {
            assert_eq!((found, supported), (99, SCHEMA_VERSION));
            assert!(!error.is_retryable());
        }
        other => panic!("expected NewerSchema, got {other:?}"),
    }

    let after: Vec<(String, Option<String>)> = admin
        .query(ledger.as_str(), &[])
        .await
        .expect("reads the ledger")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect();
    assert_eq!(after, before, "the ledger is untouched");
    let function: Option<String> = admin
        .query_one(
            "SELECT to_regprocedure($1)::text",
            &[&format!(
                "{schema}.acquire_fence_if(text, bigint, bigint, text[], text[])"
            )],
        )
        .await
        .expect("reads the catalog")
        .get(0);
    assert_eq!(function, None, "the function was not reinstalled");
    let fences: i64 = admin
        .query_one(&format!("SELECT count(*) FROM {schema}.fences"), &[])
        .await
        .expect("counts")
        .get(0);
    assert_eq!(fences, 0, "the backfill did not run");
    let connect = PostgresEventStore::connect(
        &url,
        PostgresOptions {
            schema,
            pool_size: 1,
            ..PostgresOptions::default()
        },
    )
    .await;
    assert!(
        matches!(connect, Err(OpenError::NewerSchema { found: 99, .. })),
        "connect refuses too: {connect:?}"
    );
}

/// The append and conditional acquire functions exactly as the previous
/// version installed them (before the park-kind check; read back with
/// `pg_get_functiondef`), `{schema}` standing for the schema's name.
const FUNCTIONS_BEFORE_THE_PARK_CHECK: &str =
    include_str!("fixtures/functions_before_the_park_check.sql");

/// The two functions whose result columns the park-kind check changed, as
/// the previous version installed them.
const CHANGED: [&str; 2] = [
    "append(text, text[], jsonb[], jsonb[], bigint[], bigint, boolean, boolean, boolean, bigint, text[], text[])",
    "acquire_fence_if(text, bigint, bigint, text[], text[])",
];

/// The same two as this version installs them: the append also takes the
/// open parks' upkeep.
const CURRENT: [&str; 2] = [
    "append(text, text[], jsonb[], jsonb[], bigint[], bigint, boolean, boolean, boolean, bigint, text[], text[], bigint, boolean)",
    "acquire_fence_if(text, bigint, bigint, text[], text[])",
];

/// The installed function `{schema}.{signature}`: its oid and its argument
/// names (result columns included), or `None` when it is not there.
async fn function(
    admin: &tokio_postgres::Client,
    schema: &loomfence_postgres::Schema,
    signature: &str,
) -> Option<(u32, Vec<String>)> {
    admin
        .query_opt(
            "SELECT oid, proargnames FROM pg_proc WHERE oid = to_regprocedure($1)",
            &[&format!("{schema}.{signature}")],
        )
        .await
        .expect("reads the catalog")
        .map(|row| (row.get(0), row.get(1)))
}

/// A schema whose functions the previous version installed (their results
/// have no `park_kind`, and they take any event for a park) migrates
/// cleanly: `CREATE OR REPLACE` cannot change a function's result columns,
/// so `migrate` drops such a function first, in its one transaction, and
/// the new ones refuse a sequence that is not a park. A second migration
/// leaves the current functions in place (same oids). And an older build's
/// migration (its `CREATE OR REPLACE` of the old functions) now fails
/// instead of silently taking the check away.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn functions_of_the_previous_version_are_replaced_by_the_park_check() {
    let Some(url) = common::url() else { return };
    let store = common::store_with(&url, common::options()).await;
    let schema = store.schema().clone();
    let id = &common::id("upgraded");
    let park_seq = common::park(&store, id).await;
    let hole = &common::id("upgraded-hole");
    common::park(&store, hole).await;
    let denied = common::kernel(loomfence_core::KernelKind::ExecutionDenied);
    let audit = store.append(hole, denied).await.expect("appends");
    let admin = common::admin(&url).await;
    let previous = FUNCTIONS_BEFORE_THE_PARK_CHECK.replace("{schema}", schema.as_str());
    let drop_current: String = CURRENT
        .iter()
        .map(|signature| format!("DROP FUNCTION {schema}.{signature}; "))
        .collect();
    admin
        .batch_execute(&format!("{drop_current}{previous}"))
        .await
        .expect("installs the previous version's functions");
    for signature in CHANGED {
        let (_, names) = function(&admin, &schema, signature)
            .await
            .expect("installed");
        assert!(!names.contains(&"park_kind".to_owned()), "{names:?}");
    }
    // What the previous function did: it took an audit record for a park.
    let answering: Vec<&str> = loomfence_core::KernelKind::answering()
        .map(loomfence_core::KernelKind::as_str)
        .collect();
    let kernel: Vec<&str> = loomfence_core::KernelKind::ALL
        .iter()
        .map(|k| k.as_str())
        .collect();
    let acquired: bool = admin
        .query_one(
            &format!(
                "SELECT acquired FROM {schema}.acquire_fence_if($1, 0, $2, $3::text[], $4::text[])"
            ),
            &[
                &hole.as_str(),
                &i64::try_from(audit.sequence).expect("a small sequence"),
                &answering,
                &kernel,
            ],
        )
        .await
        .expect("the previous function runs")
        .get(0);
    assert!(
        acquired,
        "the previous function took an audit record for a park"
    );

    let report = store
        .migrate()
        .await
        .expect("migrates a schema with the previous functions");
    assert_eq!(report.version, SCHEMA_VERSION);
    assert!(
        function(&admin, &schema, CHANGED[0]).await.is_none(),
        "the previous append is gone, not kept beside the current one"
    );
    let mut oids = Vec::new();
    for signature in CURRENT {
        let (oid, names) = function(&admin, &schema, signature)
            .await
            .expect("installed");
        assert!(names.contains(&"park_kind".to_owned()), "{names:?}");
        oids.push(oid);
    }
    let before = common::Witness::capture(&store, id).await;
    let not_a_park = loomfence_core::InputError::NotAPark {
        park_seq: 1,
        kind: "EXECUTION_STARTED".to_owned(),
    };
    let expect = loomfence_core::ParkExpectation {
        fence: 0,
        park_seq: 1,
    };
    match store.acquire_fence_if(id, expect).await {
        Err(loomfence_store::StoreError::Input(input)) => assert_eq!(input, not_a_park),
        other => panic!("expected NotAPark, got {other:?}"),
    }
    let resume = vec![common::kernel(loomfence_core::KernelKind::ExecutionResumed)];
    match store.append_if_parked(id, 1, resume).await {
        Err(loomfence_store::StoreError::Input(input)) => assert_eq!(input, not_a_park),
        other => panic!("expected NotAPark, got {other:?}"),
    }
    before
        .assert_unchanged(&store, "conditional operations on the start")
        .await;
    let expect = loomfence_core::ParkExpectation { fence: 0, park_seq };
    assert_eq!(
        store
            .acquire_fence_if(id, expect)
            .await
            .expect("acquires the park"),
        loomfence_core::AcquireOutcome::Acquired { fence: 1 }
    );

    store.migrate().await.expect("migrates again");
    for (signature, oid) in CURRENT.into_iter().zip(oids) {
        let (again, _) = function(&admin, &schema, signature)
            .await
            .expect("installed");
        assert_eq!(again, oid, "a current {signature} is left in place");
    }
    let downgrade = admin
        .batch_execute(&previous)
        .await
        .expect_err("an older build cannot reinstall the previous functions");
    assert_eq!(
        downgrade.code(),
        Some(&tokio_postgres::error::SqlState::INVALID_FUNCTION_DEFINITION),
        "{downgrade}"
    );
}
