//! `connect_read_only`: a role that may only read (USAGE on the schema,
//! SELECT on its tables) reads a store; the sessions refuse writes whoever
//! connects; nothing is migrated, and a schema that would need a migration
//! is refused with the ledger as it was.

mod common;

use loomfence_core::KernelKind;
use loomfence_postgres::migration::SCHEMA_VERSION;
use loomfence_postgres::{OpenError, PostgresEventStore, PostgresOptions, Schema};
use loomfence_store::EventStore;

/// `url` (`postgres://USER@HOST…`, as `cargo xtask pg` gives it) with
/// another user.
fn as_user(url: &str, user: &str) -> String {
    let rest = url.strip_prefix("postgres://").expect("a postgres:// URL");
    let host = rest.split_once('@').map_or(rest, |(_, host)| host);
    format!("postgres://{user}@{host}")
}

/// Every message in `error`'s chain, joined.
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(next) = cause {
        text.push_str(": ");
        text.push_str(&next.to_string());
        cause = next.source();
    }
    text
}

/// Read-only options on `schema`.
fn on(schema: &Schema) -> PostgresOptions {
    PostgresOptions {
        schema: schema.clone(),
        pool_size: 2,
        migrate_on_connect: false,
        ..PostgresOptions::default()
    }
}

/// The ledger's rows, for "unchanged".
async fn ledger(admin: &tokio_postgres::Client, schema: &Schema) -> Vec<(String, Option<String>)> {
    admin
        .query(
            &format!("SELECT name, detail FROM {schema}.migrations ORDER BY name"),
            &[],
        )
        .await
        .expect("reads the ledger")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_role_that_may_only_read_reads_and_every_write_is_refused() {
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    let schema = store.schema().clone();
    let done = common::id("done");
    store
        .append_many(
            &done,
            vec![
                common::kernel(KernelKind::ExecutionStarted),
                common::kernel(KernelKind::ExecutionCompleted),
            ],
        )
        .await
        .unwrap();
    drop(store);
    let admin = common::admin(&url).await;
    let role = common::unique("reader");
    admin
        .batch_execute(&format!(
            "CREATE ROLE {role} LOGIN; GRANT USAGE ON SCHEMA {schema} TO {role}; \
             GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}"
        ))
        .await
        .expect("creates the reader role");
    let reader_url = as_user(&url, &role);

    // A writer's open migrates, which the role may not do.
    let writer = PostgresEventStore::connect(
        &reader_url,
        PostgresOptions {
            migrate_on_connect: true,
            ..on(&schema)
        },
    )
    .await;
    assert!(writer.is_err(), "a writer's open needs more than SELECT");

    let before = ledger(&admin, &schema).await;
    let reader = PostgresEventStore::connect_read_only(&reader_url, on(&schema))
        .await
        .expect("a read-only open needs only USAGE and SELECT");
    let listed = reader.list_executions(None, 10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert!(listed[0].ended.is_some());
    assert_eq!(reader.read_range(&done, 1, None).await.unwrap().len(), 2);
    assert_eq!(
        reader.read_logs(std::slice::from_ref(&done)).await.unwrap()[0].len(),
        2
    );
    assert!(matches!(
        reader.migrate().await,
        Err(OpenError::ReadOnly { .. })
    ));
    drop(reader);

    // The sessions are read-only whoever connects: the superuser too.
    let reader = PostgresEventStore::connect_read_only(&url, on(&schema))
        .await
        .unwrap();
    let append = reader
        .append(&done, common::kernel(KernelKind::StepStarted))
        .await
        .unwrap_err();
    let append = chain(&append);
    assert!(append.contains("read-only transaction"), "{append}");
    let delete = reader.delete_execution(&done).await.unwrap_err();
    let delete = chain(&delete);
    assert!(delete.contains("read-only transaction"), "{delete}");
    assert_eq!(reader.read_range(&done, 1, None).await.unwrap().len(), 2);
    drop(reader);
    assert_eq!(
        ledger(&admin, &schema).await,
        before,
        "nothing was migrated"
    );

    admin
        .batch_execute(&format!(
            "DROP OWNED BY {role}; DROP ROLE {role}; DROP SCHEMA {schema} CASCADE"
        ))
        .await
        .expect("cleans up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_schema_that_needs_a_migration_is_refused_untouched() {
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    let schema = store.schema().clone();
    drop(store);
    let admin = common::admin(&url).await;
    admin
        .batch_execute(&format!(
            "UPDATE {schema}.migrations SET detail = '{}' WHERE name = 'schema-version'",
            SCHEMA_VERSION - 1
        ))
        .await
        .unwrap();
    let before = ledger(&admin, &schema).await;
    match PostgresEventStore::connect_read_only(&url, on(&schema)).await {
        Err(error @ OpenError::NeedsMigration { .. }) => {
            let text = error.to_string();
            assert!(
                text.contains(&format!("schema version {}", SCHEMA_VERSION - 1)),
                "{text}"
            );
            assert!(!error.is_retryable());
        }
        other => panic!("expected NeedsMigration, got {other:?}"),
    }
    assert_eq!(
        ledger(&admin, &schema).await,
        before,
        "the ledger is untouched"
    );

    admin
        .batch_execute(&format!(
            "UPDATE {schema}.migrations SET detail = '99' WHERE name = 'schema-version'"
        ))
        .await
        .unwrap();
    assert!(matches!(
        PostgresEventStore::connect_read_only(&url, on(&schema)).await,
        Err(OpenError::NewerSchema { found: 99, .. })
    ));

    // A schema with no store at all is not created.
    let empty = common::fresh_schema();
    assert!(matches!(
        PostgresEventStore::connect_read_only(&url, on(&empty)).await,
        Err(OpenError::NeedsMigration { .. })
    ));
    let exists: bool = admin
        .query_one(
            "SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)",
            &[&empty.as_str()],
        )
        .await
        .unwrap()
        .get(0);
    assert!(!exists, "a read-only open creates no schema");
    admin
        .batch_execute(&format!("DROP SCHEMA {schema} CASCADE"))
        .await
        .unwrap();
}
