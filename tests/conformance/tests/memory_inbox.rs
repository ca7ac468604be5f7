//! The inbox kit against the in-memory store: the reference every other
//! adapter is held to.

use std::sync::Arc;

use loomfence_conformance::inbox::{ALL, Inbox, forwarded, run_all};
use loomfence_store::MemoryTimerStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_inbox_passes_the_whole_inbox_kit() {
    let report = run_all("memory", || async {
        Arc::new(MemoryTimerStore::new()) as Inbox
    })
    .await;
    assert_eq!(report.passed, ALL.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_inbox_behind_the_forwarding_decorator_passes_the_whole_inbox_kit() {
    let report = run_all("memory-forwarded", || async {
        forwarded(Arc::new(MemoryTimerStore::new()))
    })
    .await;
    assert_eq!(report.passed, ALL.len());
}
