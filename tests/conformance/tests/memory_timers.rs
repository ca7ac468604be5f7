//! The timer kit against the in-memory timer store: the reference every
//! other adapter is held to.

use std::sync::Arc;

use loomfence_conformance::timers::unreadable::{self, Corruption};
use loomfence_conformance::timers::{Timers, case_count, forwarded, run_all};
use loomfence_store::MemoryTimerStore;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_timers_pass_the_whole_timer_kit() {
    let report = run_all("memory", || async {
        Arc::new(MemoryTimerStore::new()) as Timers
    })
    .await;
    assert_eq!(report.passed, case_count());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_timers_behind_the_forwarding_decorator_pass_the_whole_timer_kit() {
    let report = run_all("memory-forwarded", || async {
        forwarded(Arc::new(MemoryTimerStore::new()))
    })
    .await;
    assert_eq!(report.passed, case_count());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_timers_cannot_hold_an_unreadable_row() {
    let report = unreadable::run_all("memory", || async {
        (
            Arc::new(MemoryTimerStore::new()) as Timers,
            Corruption::Impossible,
        )
    })
    .await;
    assert_eq!(report.not_applicable.len(), unreadable::ALL.len());
}
