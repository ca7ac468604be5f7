//! The timer conformance kit against PostgreSQL, unchanged, each case on a
//! fresh schema, plainly and behind the forwarding decorator.

mod common;

use std::sync::Arc;

use loomfence_conformance::timers::unreadable::{self, Corruption, RawTimerRows};
use loomfence_conformance::timers::{Timers, case_count, forwarded, run_all};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_timers_pass_the_whole_timer_kit() {
    let Some(url) = common::url() else { return };
    let report = run_all("postgres", || {
        let url = url.clone();
        async move { Arc::new(common::timers(&url).await) as Timers }
    })
    .await;
    if std::env::var("LOOMFENCE_CASE").is_err() {
        assert_eq!(report.passed, case_count());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_timers_behind_the_forwarding_decorator_pass_the_whole_timer_kit() {
    let Some(url) = common::url() else { return };
    let report = run_all("postgres-forwarded", || {
        let url = url.clone();
        async move { forwarded(Arc::new(common::timers(&url).await)) }
    })
    .await;
    if std::env::var("LOOMFENCE_CASE").is_err() {
        assert_eq!(report.passed, case_count());
    }
}

/// Plants raw rows into the store's table through an admin connection.
struct PostgresRaw {
    /// The admin connection.
    admin: tokio_postgres::Client,
    /// `schema.timers`.
    table: String,
}

#[async_trait::async_trait]
impl RawTimerRows for PostgresRaw {
    fn holds_invalid_json(&self) -> bool {
        false
    }

    async fn plant(&self, execution_id: &str, wake_at: i64, redrive: Option<&str>, claims: i64) {
        self.admin
            .execute(
                &format!(
                    "INSERT INTO {} (execution_id, wake_at, redrive, claims) \
                     VALUES ($1, $2, $3::text::jsonb, $4)",
                    self.table
                ),
                &[&execution_id, &wake_at, &redrive, &claims],
            )
            .await
            .unwrap_or_else(|e| panic!("plants ({execution_id:?}, {wake_at}): {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_timers_pass_the_unreadable_row_kit() {
    let Some(url) = common::url() else { return };
    let report = unreadable::run_all("postgres", || {
        let url = url.clone();
        async move {
            let timers = common::timers(&url).await;
            let raw = PostgresRaw {
                admin: common::admin(&url).await,
                table: format!("{}.timers", timers.schema()),
            };
            (Arc::new(timers) as Timers, Corruption::Raw(Arc::new(raw)))
        }
    })
    .await;
    if std::env::var("LOOMFENCE_CASE").is_err() {
        assert_eq!(report.passed, unreadable::ALL.len());
    }
}
