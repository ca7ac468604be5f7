//! The timer conformance kit against PostgreSQL, unchanged, each case on a
//! fresh schema.

mod common;

use std::sync::Arc;

use loomfence_conformance::timers::{ALL, Timers, run_all};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_timers_pass_the_whole_timer_kit() {
    let Some(url) = common::url() else { return };
    let report = run_all("postgres", || {
        let url = url.clone();
        async move { Arc::new(common::timers(&url).await) as Timers }
    })
    .await;
    if std::env::var("LOOMFENCE_CASE").is_err() {
        assert_eq!(report.passed, ALL.len());
    }
}
