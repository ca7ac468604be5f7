//! Reaching the test server: `LOOMFENCE_PG_URL`, which `cargo xtask test`
//! sets after starting a throwaway cluster.
//!
//! Without it a test skips, unless `CI` is set: then it fails, because a CI
//! run that silently skipped the database would prove nothing.

#![allow(dead_code, unreachable_pub)]

use std::sync::atomic::{AtomicU32, Ordering};

use loomfence_postgres::{PostgresEventStore, PostgresOptions, Schema};

/// The server's URL, or `None` (after saying so) when tests may skip.
pub fn url() -> Option<String> {
    match std::env::var("LOOMFENCE_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ if std::env::var("CI").is_ok_and(|ci| !ci.is_empty()) => {
            panic!(
                "CI is set but LOOMFENCE_PG_URL is not: the PostgreSQL tests must not skip in CI"
            )
        }
        _ => {
            eprintln!(
                "skipped: set LOOMFENCE_PG_URL, or run `cargo xtask test`, to run the PostgreSQL tests"
            );
            None
        }
    }
}

/// A schema name no other test in any process uses.
pub fn fresh_schema() -> Schema {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let n = NEXT.fetch_add(1, Ordering::SeqCst);
    Schema::new(format!("t{}_{n}", std::process::id())).expect("a valid schema name")
}

/// Options for a fresh schema.
pub fn options() -> PostgresOptions {
    PostgresOptions {
        schema: fresh_schema(),
        pool_size: 12,
        ..PostgresOptions::default()
    }
}

/// A migrated store on a fresh schema.
pub async fn store(url: &str) -> PostgresEventStore {
    PostgresEventStore::connect(url, options())
        .await
        .expect("connects and migrates")
}
