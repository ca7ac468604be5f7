//! The conformance kit against the in-memory adapter, at every capability it
//! can emulate: the full store, and the weaker ones whose cases the kit must
//! gate rather than fail.

use std::sync::Arc;

use loomfence_conformance::{Store, cases, forwarded, run_all};
use loomfence_core::Capability;
use loomfence_store::MemoryEventStore;

/// Runs the kit against memory stores that advertise `capability`.
async fn run(label: &str, capability: Capability) -> loomfence_conformance::Report {
    run_all(label, || async move {
        Arc::new(MemoryEventStore::with_capability(capability)) as Store
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_conditional_passes_the_whole_kit() {
    let report = run("memory", Capability::Conditional).await;
    assert_eq!(report.passed, cases::ALL.len());
    assert!(report.passed >= 25, "the kit has at least 25 cases");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_fencing_only_runs_every_case_but_the_conditional_ones() {
    let report = run("memory-fencing-only", Capability::FencingOnly).await;
    let conditional = cases::ALL
        .iter()
        .filter(|c| c.needs == loomfence_conformance::Needs::Conditional)
        .count();
    assert_eq!(report.not_applicable.len(), conditional);
    assert_eq!(report.passed, cases::ALL.len() - conditional);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_non_fencing_runs_only_the_unfenced_cases() {
    let report = run("memory-non-fencing", Capability::NonFencing).await;
    let any = cases::ALL
        .iter()
        .filter(|c| c.needs == loomfence_conformance::Needs::Any)
        .count();
    assert_eq!(report.passed, any);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn memory_behind_the_forwarding_decorator_passes_the_whole_kit() {
    let report = run_all("memory-forwarded", || async {
        forwarded(Arc::new(MemoryEventStore::new()))
    })
    .await;
    assert_eq!(report.passed, cases::ALL.len());
}
