//! The conformance kit against PostgreSQL, unchanged, with each acquire
//! strategy.

mod common;

use loomfence_postgres::AcquireStrategy;

/// Runs the whole kit, each case on a fresh schema.
async fn kit(label: &str, acquire: AcquireStrategy) {
    let Some(url) = common::url() else { return };
    common::run_kit(label, &url, acquire).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_passes_the_whole_kit() {
    kit("postgres", AcquireStrategy::Function).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_with_the_pipelined_acquire_passes_the_whole_kit() {
    kit("postgres-pipelined", AcquireStrategy::Pipelined).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_behind_the_forwarding_decorator_passes_the_whole_kit() {
    let Some(url) = common::url() else { return };
    common::run_kit_through(
        "postgres-forwarded",
        &url,
        AcquireStrategy::Function,
        loomfence_conformance::forwarded,
    )
    .await;
}
