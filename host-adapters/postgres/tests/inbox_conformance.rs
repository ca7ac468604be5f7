//! The inbox conformance kit against PostgreSQL, unchanged, each case on a
//! fresh schema, plainly and behind the forwarding decorator.

mod common;

use std::sync::Arc;

use loomfence_conformance::inbox::{ALL, Inbox, forwarded, run_all};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_inbox_passes_the_whole_inbox_kit() {
    let Some(url) = common::url() else { return };
    let report = run_all("postgres", || {
        let url = url.clone();
        async move { Arc::new(common::timers(&url).await) as Inbox }
    })
    .await;
    if std::env::var("LOOMFENCE_CASE").is_err() {
        assert_eq!(report.passed, ALL.len());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_inbox_behind_the_forwarding_decorator_passes_the_whole_inbox_kit() {
    let Some(url) = common::url() else { return };
    let report = run_all("postgres-forwarded", || {
        let url = url.clone();
        async move { forwarded(Arc::new(common::timers(&url).await)) }
    })
    .await;
    if std::env::var("LOOMFENCE_CASE").is_err() {
        assert_eq!(report.passed, ALL.len());
    }
}
