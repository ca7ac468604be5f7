//! The listing's plan on 10,000 executions: the primary key serves the walk
//! of ids and the heads, the partial index of terminal events serves the
//! ends, and nothing scans `events` whole, for a small page, a page from
//! the middle and a page as large as the table, in the custom plan and in
//! the generic plan a pooled connection may settle on. Prints the plans
//! and (informational, not asserted) how long paging through the 10,000
//! takes.

use std::time::Instant;

use loomfence_core::ExecutionId;
use loomfence_postgres::PostgresEventStore;
use loomfence_store::EventStore;

use crate::common::{self, AT};

/// Executions written.
const EXECUTIONS: usize = 10_000;

/// Writes [`EXECUTIONS`] logs of five events in one statement (the store's
/// own appends would take minutes of a test's time and prove nothing
/// more here): started, two steps, then every other one completes, and an
/// audit event after that.
pub(crate) async fn ten_thousand(store: &PostgresEventStore, url: &str) {
    let admin = common::admin(url).await;
    admin
        .execute(
            &format!(
                "INSERT INTO {}.events (execution_id, sequence, kind, payload, metadata, at) \
                 SELECT 'exec-' || lpad(i::text, 5, '0'), s, \
                        CASE WHEN s = 1 THEN 'EXECUTION_STARTED' \
                             WHEN s = 4 AND i % 2 = 0 THEN 'EXECUTION_COMPLETED' \
                             WHEN s = 5 THEN 'app.audit' ELSE 'app.step' END, \
                        '{{}}', '{{}}', $1::int8 + s \
                 FROM generate_series(1, $2::int) i, generate_series(1, 5) s",
                store.schema()
            ),
            &[&AT, &i32::try_from(EXECUTIONS).expect("small")],
        )
        .await
        .expect("writes the logs");
    admin
        .batch_execute(&format!("ANALYZE {}.events", store.schema()))
        .await
        .expect("analyzes");
}

/// Pages through every execution with `limit`; returns how many were listed
/// and how many had ended.
async fn page_through(store: &PostgresEventStore, limit: u32) -> (usize, usize) {
    let (mut listed, mut ended) = (0, 0);
    let mut after: Option<ExecutionId> = None;
    loop {
        let page = store
            .list_executions(after.as_ref(), limit)
            .await
            .expect("lists");
        let Some(last) = page.last() else {
            return (listed, ended);
        };
        listed += page.len();
        ended += page.iter().filter(|s| s.ended.is_some()).count();
        after = Some(last.execution_id.clone());
    }
}

/// Fails unless `plan` reads `events` only through the two indexes.
pub(crate) fn assert_indexed(plan: &str, what: &str) {
    assert!(
        plan.contains("using events_pkey"),
        "{what}: the primary key is not used:\n{plan}"
    );
    assert!(
        plan.contains("using events_ended"),
        "{what}: the terminal index is not used:\n{plan}"
    );
    assert!(
        !plan.contains("Seq Scan"),
        "{what}: a sequential scan:\n{plan}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_listing_reads_through_the_two_indexes_only() {
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    ten_thousand(&store, &url).await;
    let middle = common::id("exec-05000");
    for generic in [false, true] {
        for (after, limit) in [(None, 100), (Some(&middle), 1_000), (None, 10_000)] {
            let what = format!(
                "{} plan, after {after:?}, limit {limit}",
                if generic { "generic" } else { "custom" }
            );
            let plan = store
                .explain_list_executions(after, limit, generic)
                .await
                .expect("explains");
            println!("==== {what}\n{plan}\n");
            assert_indexed(&plan, &what);
        }
    }
    for limit in [100, 1_000, 10_000] {
        let mut runs = Vec::new();
        for _ in 0..3 {
            let started = Instant::now();
            let counted = page_through(&store, limit).await;
            runs.push(started.elapsed());
            assert_eq!(counted, (EXECUTIONS, EXECUTIONS / 2), "limit {limit}");
        }
        println!(
            "informational: listing {EXECUTIONS} executions with limit {limit} took {:?} (three runs)",
            runs
        );
    }
}
