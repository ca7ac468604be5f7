//! A server whose default isolation is REPEATABLE READ (design: the
//! conditional acquire needs a fresh snapshot per statement after its
//! row lock is granted, and a frozen one would let it miss an answer that
//! committed while it waited).
//!
//! Each test creates its own database with `default_transaction_isolation =
//! 'repeatable read'`, points the store at it, and drops the database at the
//! end, pass or fail.

mod common;

use std::future::Future;
use std::sync::Arc;

use common::race::{self, Path};
use loomfence_core::KernelKind;
use loomfence_postgres::{AcquireStrategy, PostgresOptions};
use loomfence_store::EventStore;
use tokio_postgres::error::SqlState;

/// Creates a database defaulting to REPEATABLE READ, runs `body` with its
/// URL, and drops the database whatever `body` did.
async fn in_repeatable_read_database<F, Fut>(body: F)
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let Some(url) = common::url() else { return };
    let db = common::unique("lf_rr");
    let admin = common::admin(&url).await;
    admin
        .batch_execute(&format!("CREATE DATABASE {db}"))
        .await
        .expect("creates the test database");
    admin
        .batch_execute(&format!(
            "ALTER DATABASE {db} SET default_transaction_isolation = 'repeatable read'"
        ))
        .await
        .expect("sets its default isolation");
    let db_url = common::with_dbname(&url, &db);
    let plain = common::admin(&db_url).await;
    let default: String = plain
        .query_one("SHOW transaction_isolation", &[])
        .await
        .expect("reads the isolation")
        .get(0);
    drop(plain);
    let outcome = if default == "repeatable read" {
        tokio::spawn(body(db_url)).await
    } else {
        Ok(())
    };
    admin
        .batch_execute(&format!("DROP DATABASE {db} WITH (FORCE)"))
        .await
        .expect("drops the test database");
    assert_eq!(
        default, "repeatable read",
        "a plain session on the database must default to REPEATABLE READ"
    );
    if let Err(join) = outcome {
        std::panic::resume_unwind(join.into_panic());
    }
}

/// The whole kit passes against a REPEATABLE READ database, with either
/// acquire strategy, and the store's own sessions are pinned to READ
/// COMMITTED.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_kit_passes_on_a_repeatable_read_database() {
    in_repeatable_read_database(|url| async move {
        let store = common::store_with(&url, common::options()).await;
        let pooled = store.pool().get().await.expect("a pooled connection");
        let pinned: String = pooled
            .query_one("SHOW transaction_isolation", &[])
            .await
            .expect("reads the isolation")
            .get(0);
        assert_eq!(pinned, "read committed", "the store pins its sessions");
        drop(pooled);
        for acquire in [AcquireStrategy::Function, AcquireStrategy::Pipelined] {
            common::run_kit(&format!("postgres-rr-{acquire:?}"), &url, acquire).await;
        }
    })
    .await;
}

/// The single-path race keeps exactly one winner per trial on a REPEATABLE
/// READ database.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_race_keeps_one_winner_on_a_repeatable_read_database() {
    in_repeatable_read_database(|url| async move {
        let store = Arc::new(
            common::store_with(
                &url,
                PostgresOptions {
                    pool_size: 10,
                    ..common::options()
                },
            )
            .await,
        );
        let tally = race::run(
            &store,
            race::fresh_trials("rr-race", Path::Single, 250),
            4,
            false,
        )
        .await;
        println!("race Single on a REPEATABLE READ database: {tally}");
        tally.assert_exclusive("race on a REPEATABLE READ database");
        assert_eq!(tally.trials, 250);
        assert!(tally.append_won > 0 && tally.acquire_won > 0, "{tally}");
    })
    .await;
}

/// Called by hand outside READ COMMITTED, the installed function refuses
/// with SQLSTATE 25000 and changes nothing; the same call under READ
/// COMMITTED on the same connection acquires.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_function_fails_closed_outside_read_committed() {
    in_repeatable_read_database(|url| async move {
        let store = common::store_with(&url, common::options()).await;
        let text = "rr-by-hand";
        let id = &common::id(text);
        let park_seq = common::park(&store, id).await;
        let before = common::Witness::capture(&store, id).await;
        let call = format!(
            "SELECT acquired, token FROM {}.acquire_fence_if($1, $2, $3, $4::text[], $5::text[])",
            store.schema()
        );
        let answering: Vec<&str> = KernelKind::answering().map(KernelKind::as_str).collect();
        let kernel: Vec<&str> = KernelKind::ALL.iter().map(|k| k.as_str()).collect();
        let park = i64::try_from(park_seq).expect("a small sequence");
        let plain = common::admin(&url).await;

        plain.batch_execute("BEGIN").await.expect("begins");
        let isolation: String = plain
            .query_one("SHOW transaction_isolation", &[])
            .await
            .expect("reads the isolation")
            .get(0);
        assert_eq!(isolation, "repeatable read");
        let refused = plain
            .query_one(call.as_str(), &[&text, &0_i64, &park, &answering, &kernel])
            .await
            .expect_err("the function must refuse a REPEATABLE READ transaction");
        assert_eq!(refused.code(), Some(&SqlState::INVALID_TRANSACTION_STATE));
        plain.batch_execute("ROLLBACK").await.expect("rolls back");

        // Autocommit is a transaction at the database default too.
        let refused = plain
            .query_one(call.as_str(), &[&text, &0_i64, &park, &answering, &kernel])
            .await
            .expect_err("an autocommit call runs at REPEATABLE READ too");
        assert_eq!(refused.code(), Some(&SqlState::INVALID_TRANSACTION_STATE));
        assert_eq!(
            common::Witness::capture(&store, id).await,
            before,
            "nothing changed"
        );

        // The control: the same call under READ COMMITTED acquires.
        plain
            .batch_execute("BEGIN ISOLATION LEVEL READ COMMITTED")
            .await
            .expect("begins");
        let row = plain
            .query_one(call.as_str(), &[&text, &0_i64, &park, &answering, &kernel])
            .await
            .expect("the function runs under READ COMMITTED");
        assert_eq!(
            (row.get::<_, bool>(0), row.get::<_, i64>(1)),
            (true, 1),
            "acquired token 1"
        );
        plain.batch_execute("COMMIT").await.expect("commits");
        assert_eq!(store.current_fence(id).await.expect("reads"), 1);
    })
    .await;
}
