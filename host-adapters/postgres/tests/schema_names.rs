//! The schema names `Schema::new` refuses are the ones the server cannot
//! take, checked against the server's own key word table
//! (`pg_get_keywords()`): every reserved key word (categories `R` and `T`,
//! "reserved" and "reserved (can be function or type)" in the docs) is
//! refused by both, every other key word is accepted by both, and `pg_`
//! names are refused by both.

mod common;

use loomfence_postgres::{OpenError, PostgresEventStore, PostgresOptions, Schema};
use tokio_postgres::error::SqlState;

/// Both tests create schemas named after key words in the one test
/// database; run at once, two `CREATE SCHEMA` of the same name collide on
/// the catalog's unique index. They take turns.
static KEY_WORD_SCHEMAS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Every key word the server knows: `(word, category)`.
async fn key_words(admin: &tokio_postgres::Client) -> Vec<(String, String)> {
    admin
        .query("SELECT word, catcode::text FROM pg_get_keywords()", &[])
        .await
        .expect("reads the key words")
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

/// Runs `sql` inside a savepoint of the admin's open transaction, undoing
/// whatever it did; returns its error, if any.
async fn attempt(admin: &tokio_postgres::Client, sql: &str) -> Option<tokio_postgres::Error> {
    admin
        .batch_execute("SAVEPOINT probe")
        .await
        .expect("a savepoint");
    let result = admin.batch_execute(sql).await;
    admin
        .batch_execute("ROLLBACK TO SAVEPOINT probe")
        .await
        .expect("rolls back to the savepoint");
    result.err()
}

/// What the store does with its schema name, in short: create it, a table
/// in it, and read that table qualified by it.
fn uses(schema: &str) -> String {
    format!(
        "CREATE SCHEMA IF NOT EXISTS {schema}; \
         CREATE TABLE {schema}.probe (x bigint); \
         SELECT x FROM {schema}.probe"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_schema_names_are_exactly_the_ones_the_server_refuses() {
    let Some(url) = common::url() else { return };
    let _turn = KEY_WORD_SCHEMAS.lock().await;
    let admin = common::admin(&url).await;
    let words = key_words(&admin).await;
    assert!(words.len() > 400, "the server's key words: {}", words.len());
    admin.batch_execute("BEGIN").await.expect("begins");
    let mut reserved = 0;
    for (word, category) in &words {
        let ours = Schema::new(word.as_str());
        let server = attempt(&admin, &uses(word)).await;
        match category.as_str() {
            "R" | "T" => {
                reserved += 1;
                assert!(
                    matches!(&ours, Err(OpenError::ReservedSchema { name }) if name == word),
                    "{word} ({category}) is reserved: {ours:?}"
                );
                let code = server.as_ref().and_then(tokio_postgres::Error::code);
                assert_eq!(
                    code,
                    Some(&SqlState::SYNTAX_ERROR),
                    "the server refuses {word} ({category}): {server:?}"
                );
            }
            _ => {
                assert!(
                    ours.is_ok(),
                    "{word} ({category}) is not reserved: {ours:?}"
                );
                assert!(
                    server.is_none(),
                    "the server takes {word} ({category}): {server:?}"
                );
            }
        }
    }
    assert_eq!(reserved, 100, "PostgreSQL 15 reserves 100 key words");

    for system in ["pg_loomfence", "pg_"] {
        assert!(matches!(
            Schema::new(system),
            Err(OpenError::SystemSchema { name }) if name == system
        ));
        let server = attempt(&admin, &uses(system)).await;
        assert_eq!(
            server.as_ref().and_then(tokio_postgres::Error::code),
            Some(&SqlState::RESERVED_NAME),
            "the server refuses {system}: {server:?}"
        );
    }
    admin.batch_execute("ROLLBACK").await.expect("rolls back");
}

/// Key words PostgreSQL does not reserve but PL/pgSQL does (`loop`,
/// `declare`…) are fine schema names for the whole store: its functions'
/// bodies mention the schema, and they migrate and run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pl_pgsql_key_words_that_sql_does_not_reserve_are_whole_stores() {
    use loomfence_store::EventStore;

    let Some(url) = common::url() else { return };
    let _turn = KEY_WORD_SCHEMAS.lock().await;
    let admin = common::admin(&url).await;
    for name in [
        "loop", "declare", "begin", "execute", "strict", "while", "if", "by",
    ] {
        let schema = Schema::new(name).expect("not reserved");
        admin
            .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
            .await
            .expect("clears a leftover");
        let store = PostgresEventStore::connect(
            &url,
            PostgresOptions {
                schema,
                pool_size: 2,
                ..PostgresOptions::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: connects and migrates: {e}"));
        let id = common::id("job");
        let park_seq = common::park(&store, &id).await;
        let outcome = store
            .acquire_fence_if(&id, loomfence_core::ParkExpectation { fence: 0, park_seq })
            .await
            .unwrap_or_else(|e| panic!("{name}: acquires: {e}"));
        assert!(outcome.is_acquired(), "{name}");
        assert!(store.delete_execution(&id).await.expect("deletes"));
        drop(store);
        admin
            .batch_execute(&format!("DROP SCHEMA {name} CASCADE"))
            .await
            .unwrap_or_else(|e| panic!("{name}: drops the schema: {e}"));
    }
}
