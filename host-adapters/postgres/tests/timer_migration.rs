//! `migrate` and the `timers` table: an older table (design: the re-drive,
//! keyed `(execution_id, wake_at)` and nothing else) gains the missing
//! columns and keeps its rows; a boot that finds the table current never
//! waits for the table's users; a boot that must add columns while the
//! table is in use gives up after the lock timeout, retryably, and a later
//! boot succeeds.

mod common;

use std::time::{Duration, Instant};

use loomfence_core::timer::{
    Completed, DueFilter, ExhaustedQuery, ExhaustedRow, Exhaustion, Lease, NodeId, TimerRow,
};
use loomfence_postgres::migration::{MigrateOptions, SCHEMA_VERSION, migrate};
use loomfence_postgres::{OpenError, PostgresEventStore, PostgresOptions, Schema};
use loomfence_store::TimerStore;

/// The columns `migrate` adds to the oldest table, in its order.
const ADDED: [&str; 4] = ["redrive", "holder", "lease_until", "claims"];

/// Options for a fresh schema that is not migrated on connect.
fn unmigrated() -> PostgresOptions {
    PostgresOptions {
        migrate_on_connect: false,
        pool_size: 2,
        ..common::options()
    }
}

/// Creates `schema` with the older `timers` table
/// (`with_redrive`: the shape that already had the flag) and two rows.
async fn old_table(admin: &tokio_postgres::Client, schema: &Schema, with_redrive: bool) {
    let redrive = if with_redrive { ", redrive JSONB" } else { "" };
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; \
             CREATE TABLE {schema}.timers (execution_id TEXT, wake_at BIGINT{redrive}, \
               PRIMARY KEY (execution_id, wake_at)); \
             INSERT INTO {schema}.timers (execution_id, wake_at) VALUES ('old-a', 100), ('old-b', 50)"
        ))
        .await
        .expect("creates the old table");
    if with_redrive {
        admin
            .batch_execute(&format!(
                "INSERT INTO {schema}.timers VALUES ('old-r', 70, '{{\"attempt\": 2}}')"
            ))
            .await
            .expect("writes an old re-drive row");
    }
}

/// The columns of `schema.timers`, as the catalog lists them.
async fn columns(admin: &tokio_postgres::Client, schema: &Schema) -> Vec<String> {
    admin
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = 'timers' ORDER BY ordinal_position",
            &[&schema.as_str()],
        )
        .await
        .expect("reads the catalog")
        .iter()
        .map(|row| row.get(0))
        .collect()
}

/// A lease at `now`.
fn lease(now: i64) -> Lease {
    Lease {
        holder: NodeId::new("migrated-node").expect("a valid node id"),
        now,
        duration_ms: 1_000,
    }
}

/// The oldest timer table, with rows: `migrate` adds exactly
/// the four missing columns and the due index; the old rows read back as
/// plain wakes, a re-drive row can be written on an old key and a new one,
/// claims work; a second migration adds nothing. The shape that already
/// had `redrive` gains only the claim columns and keeps its flags.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_old_table_gains_the_missing_columns_and_keeps_its_rows() {
    let Some(url) = common::url() else { return };
    let admin = common::admin(&url).await;
    for with_redrive in [false, true] {
        let store = PostgresEventStore::connect(&url, unmigrated())
            .await
            .expect("connects");
        let schema = store.schema().clone();
        old_table(&admin, &schema, with_redrive).await;

        let report = store.migrate().await.expect("migrates the old table");
        let expected: &[&str] = if with_redrive { &ADDED[1..] } else { &ADDED };
        assert_eq!(report.timer_columns_added, expected);
        let mut all = vec!["execution_id", "wake_at"];
        if with_redrive {
            all.push("redrive");
        }
        all.extend(expected);
        assert_eq!(columns(&admin, &schema).await, all);
        let index: Option<String> = admin
            .query_one(
                "SELECT to_regclass($1)::text",
                &[&format!("{schema}.timers_due")],
            )
            .await
            .expect("reads the catalog")
            .get(0);
        assert!(index.is_some(), "the due index was created");

        let timers = store.timers();
        let mut old = vec![
            TimerRow::wake(common::id("old-b"), 50),
            TimerRow::wake(common::id("old-a"), 100),
        ];
        if with_redrive {
            old.insert(1, TimerRow::redrive(common::id("old-r"), 70, 2));
        }
        assert_eq!(
            timers
                .due(1_000, 10, DueFilter::default())
                .await
                .expect("lists"),
            old,
            "the old rows survive"
        );

        timers
            .schedule(&TimerRow::redrive(common::id("old-a"), 100, 1))
            .await
            .expect("flags an old row");
        timers
            .schedule(&TimerRow::redrive(common::id("new"), 10, 0))
            .await
            .expect("writes a new re-drive row");
        let mut now = vec![TimerRow::redrive(common::id("new"), 10, 0)];
        now.extend(old.iter().cloned().map(|row| {
            if row.execution_id.as_str() == "old-a" {
                TimerRow::redrive(row.execution_id, 100, 1)
            } else {
                row
            }
        }));
        assert_eq!(
            timers
                .due(1_000, 10, DueFilter::default())
                .await
                .expect("lists"),
            now
        );
        let plain: Vec<TimerRow> = now
            .iter()
            .filter(|row| !row.is_redrive())
            .cloned()
            .collect();
        let claimed = timers
            .claim_due(&lease(1_000), 10, DueFilter { redrive: false })
            .await
            .expect("claims")
            .claims;
        assert_eq!(
            claimed
                .into_iter()
                .map(|claim| (claim.row, claim.number))
                .collect::<Vec<_>>(),
            plain.into_iter().map(|row| (row, 1)).collect::<Vec<_>>()
        );

        let again = store.migrate().await.expect("migrates again");
        assert!(again.timer_columns_added.is_empty());
    }
}

/// The table is current, and another session holds a lock on it: an open
/// transaction that wrote to it (ROW EXCLUSIVE), or one that locked it
/// outright (ACCESS EXCLUSIVE, which conflicts with everything). A boot
/// (a `connect`, and a `migrate` of a running store) does not wait: it
/// reads the catalog, finds nothing to change, and touches no lock on the
/// table. As a control, a bare `ADD COLUMN IF NOT EXISTS` of a column that
/// is there waits for that lock and times out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_boot_against_a_current_table_does_not_wait_for_its_users() {
    let Some(url) = common::url() else { return };
    for lock in [
        "INSERT INTO {t} (execution_id, wake_at) VALUES ('in-flight', 1)",
        "LOCK TABLE {t} IN ACCESS EXCLUSIVE MODE",
    ] {
        let store = common::store(&url).await;
        let schema = store.schema().clone();
        let table = format!("{schema}.timers");
        let holder = common::hold_lock(&url, lock, &table).await;

        let options = PostgresOptions {
            schema: schema.clone(),
            pool_size: 1,
            ..PostgresOptions::default()
        };
        let started = Instant::now();
        let booted = tokio::time::timeout(
            Duration::from_secs(10),
            PostgresEventStore::connect(&url, options),
        )
        .await
        .unwrap_or_else(|_| panic!("{lock}: the boot waited for the table's lock"))
        .expect("boots");
        let report = tokio::time::timeout(Duration::from_secs(10), store.migrate())
            .await
            .unwrap_or_else(|_| panic!("{lock}: migrate waited for the table's lock"))
            .expect("migrates");
        assert!(report.timer_columns_added.is_empty());
        let waited = started.elapsed();
        assert!(waited < Duration::from_secs(5), "{lock}: took {waited:?}");
        drop(booted);

        common::assert_ddl_waits(
            &url,
            &format!("ALTER TABLE {table} ADD COLUMN IF NOT EXISTS redrive jsonb"),
            lock,
        )
        .await;
        holder.batch_execute("ROLLBACK").await.expect("releases");
    }
}

/// The old table is in use (an open transaction read it, so it holds
/// ACCESS SHARE, which the `ALTER` must wait for): the boot gives up after
/// its lock timeout with the retryable `TableLocked`, naming the table and
/// the columns, and changes nothing, not even the rest of the first
/// migration. Once that transaction ends, the next boot adds the columns.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_boot_that_must_alter_a_table_in_use_times_out_retryably_then_succeeds() {
    let Some(url) = common::url() else { return };
    let admin = common::admin(&url).await;
    let store = PostgresEventStore::connect(&url, unmigrated())
        .await
        .expect("connects");
    let schema = store.schema().clone();
    old_table(&admin, &schema, false).await;
    let reader = common::admin(&url).await;
    reader
        .batch_execute(&format!("BEGIN; SELECT count(*) FROM {schema}.timers"))
        .await
        .expect("reads the table in an open transaction");

    let options = MigrateOptions {
        lock_timeout: Duration::from_millis(200),
        ..MigrateOptions::default()
    };
    let started = Instant::now();
    let refused = migrate(store.pool(), &schema, &options).await;
    let waited = started.elapsed();
    match &refused {
        Err(
            error @ OpenError::TableLocked {
                table,
                action,
                waited_ms,
            },
        ) => {
            assert_eq!(table, &format!("{schema}.timers"));
            assert_eq!(
                action,
                "add the column(s) redrive, holder, lease_until, claims"
            );
            assert_eq!(*waited_ms, 200);
            assert!(error.is_retryable());
            println!("as expected: {error}");
        }
        other => panic!("expected TableLocked, got {other:?}"),
    }
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(5),
        "gave up after {waited:?}"
    );
    assert_eq!(
        columns(&admin, &schema).await,
        ["execution_id", "wake_at"],
        "no column was added"
    );
    let events: Option<String> = admin
        .query_one(
            "SELECT to_regclass($1)::text",
            &[&format!("{schema}.events")],
        )
        .await
        .expect("reads the catalog")
        .get(0);
    assert_eq!(events, None, "the whole migration was rolled back");

    reader.batch_execute("COMMIT").await.expect("ends the read");
    let report = migrate(store.pool(), &schema, &options)
        .await
        .expect("migrates once the table is free");
    assert_eq!(report.timer_columns_added, ADDED);
    let timers = store.timers();
    timers
        .schedule(&TimerRow::redrive(common::id("after-the-wait"), 10, 0))
        .await
        .expect("writes a re-drive row");
    assert_eq!(
        timers
            .due(1_000, 10, DueFilter::default())
            .await
            .expect("lists"),
        [
            TimerRow::redrive(common::id("after-the-wait"), 10, 0),
            TimerRow::wake(common::id("old-b"), 50),
            TimerRow::wake(common::id("old-a"), 100),
        ]
    );
}

/// A table named `timers` without the key columns is not one the store can
/// use: the boot fails, permanently, with a message naming the column,
/// rather than adding columns to someone else's table.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_foreign_timers_table_is_refused() {
    let Some(url) = common::url() else { return };
    let admin = common::admin(&url).await;
    let store = PostgresEventStore::connect(&url, unmigrated())
        .await
        .expect("connects");
    let schema = store.schema().clone();
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; CREATE TABLE {schema}.timers (id bigint PRIMARY KEY, at timestamptz)"
        ))
        .await
        .expect("creates a foreign table");
    match store.migrate().await {
        Err(error @ OpenError::Backend(_)) => {
            assert!(!error.is_retryable());
            assert!(error.to_string().contains("execution_id"), "{error}");
        }
        other => panic!("expected a permanent backend error, got {other:?}"),
    }
    assert_eq!(columns(&admin, &schema).await, ["id", "at"]);
}

/// Whether `schema.exhausted_timers` exists.
async fn has_exhausted_table(admin: &tokio_postgres::Client, schema: &Schema) -> bool {
    let found: Option<String> = admin
        .query_one(
            "SELECT to_regclass($1)::text",
            &[&format!("{schema}.exhausted_timers")],
        )
        .await
        .expect("reads the catalog")
        .get(0);
    found.is_some()
}

/// A schema migrated by the build before exhaustion records (its `timers`
/// table current, no `exhausted_timers`) gains the table on `migrate`: its
/// rows stay, an exhaustion is recorded, a second migration keeps the
/// record, and the schema version does not move (the table is additive).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_schema_without_the_exhausted_table_gains_it() {
    let Some(url) = common::url() else { return };
    let admin = common::admin(&url).await;
    let store = common::store(&url).await;
    let schema = store.schema().clone();
    let timers = store.timers();
    let chain = TimerRow::redrive(common::id("chain"), 100, 3);
    timers.schedule(&chain).await.expect("schedules");
    admin
        .batch_execute(&format!("DROP TABLE {schema}.exhausted_timers"))
        .await
        .expect("drops the table, as the earlier build had none");
    assert!(!has_exhausted_table(&admin, &schema).await);

    let report = store.migrate().await.expect("migrates");
    assert!(
        has_exhausted_table(&admin, &schema).await,
        "migrate made it"
    );
    assert_eq!(
        report.version, SCHEMA_VERSION,
        "an additive table keeps the version"
    );
    assert!(report.timer_columns_added.is_empty());
    assert_eq!(
        timers
            .due(1_000, 10, DueFilter::default())
            .await
            .expect("lists"),
        std::slice::from_ref(&chain),
        "the rows stay"
    );
    let claims = timers
        .claim_due(&lease(1_000), 10, DueFilter::default())
        .await
        .expect("claims")
        .claims;
    let given_up = Exhaustion {
        attempts: 4,
        at: 1_001,
    };
    assert_eq!(
        timers
            .exhaust(&claims[0], &given_up)
            .await
            .expect("exhausts"),
        Completed::Done
    );
    store.migrate().await.expect("migrates again");
    assert_eq!(
        timers
            .exhausted(&ExhaustedQuery::default())
            .await
            .expect("lists the records"),
        [ExhaustedRow::new(chain, given_up)],
        "the record survives a migration"
    );
}

/// A table named `exhausted_timers` without one of its columns is someone
/// else's: the boot fails, permanently, naming the column, and the table
/// is left as it was.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_foreign_exhausted_table_is_refused() {
    let Some(url) = common::url() else { return };
    let admin = common::admin(&url).await;
    let store = PostgresEventStore::connect(&url, unmigrated())
        .await
        .expect("connects");
    let schema = store.schema().clone();
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; \
             CREATE TABLE {schema}.exhausted_timers (execution_id text, wake_at bigint, why text)"
        ))
        .await
        .expect("creates a foreign table");
    match store.migrate().await {
        Err(error @ OpenError::Backend(_)) => {
            assert!(!error.is_retryable());
            assert!(error.to_string().contains("redrive"), "{error}");
        }
        other => panic!("expected a permanent backend error, got {other:?}"),
    }
    let kept: Vec<String> = admin
        .query(
            "SELECT column_name::text FROM information_schema.columns \
             WHERE table_schema = $1 AND table_name = 'exhausted_timers' \
             ORDER BY ordinal_position",
            &[&schema.as_str()],
        )
        .await
        .expect("reads the catalog")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert_eq!(kept, ["execution_id", "wake_at", "why"]);
}

/// Another session holds the current `exhausted_timers` table locked
/// outright: a boot reads the catalog, finds nothing to change, and does
/// not wait for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_boot_does_not_wait_for_the_exhausted_tables_users() {
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    let schema = store.schema().clone();
    let table = format!("{schema}.exhausted_timers");
    let lock = "LOCK TABLE {t} IN ACCESS EXCLUSIVE MODE";
    let holder = common::hold_lock(&url, lock, &table).await;
    tokio::time::timeout(Duration::from_secs(10), store.migrate())
        .await
        .unwrap_or_else(|_| panic!("migrate waited for the exhausted table's lock"))
        .expect("migrates");
    // The control: the lock blocks even a read of the table.
    common::assert_ddl_waits(&url, &format!("SELECT 1 FROM {table} LIMIT 1"), lock).await;
    holder.batch_execute("ROLLBACK").await.expect("releases");
}
