//! The conformance kit against PostgreSQL, unchanged, with each acquire
//! strategy.

mod common;

use std::sync::Arc;

use loomfence_conformance::{Store, cases, run_all};
use loomfence_postgres::{AcquireStrategy, PostgresEventStore, PostgresOptions};

/// Runs the whole kit, each case on a fresh schema.
async fn kit(label: &str, acquire: AcquireStrategy) {
    let Some(url) = common::url() else { return };
    let report = run_all(label, || {
        let url = url.clone();
        async move {
            let options = PostgresOptions {
                acquire,
                ..common::options()
            };
            Arc::new(
                PostgresEventStore::connect(&url, options)
                    .await
                    .expect("connects"),
            ) as Store
        }
    })
    .await;
    assert_eq!(report.passed, cases::ALL.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_passes_the_whole_kit() {
    kit("postgres", AcquireStrategy::Function).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_with_the_pipelined_acquire_passes_the_whole_kit() {
    kit("postgres-pipelined", AcquireStrategy::Pipelined).await;
}
