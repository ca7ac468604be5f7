//! The migration that adds the change feed, on a table that has rows: it
//! alters `events` without a rewrite (writers wait only for an instant),
//! fills the open-parks index from the logs, and starts the feed empty.
//! Also what the feed's columns cost an append.
//!
//! The previous version's shape is made from a current schema: the feed's
//! columns, tables, index and sequence dropped, and its `append` put back
//! as it was (the current one without the open parks' upkeep, which is the
//! whole difference).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use loomfence_conformance::support::event;
use loomfence_core::KernelKind;
use loomfence_core::feed::FeedCursor;
use loomfence_postgres::{PostgresEventStore, Schema};
use loomfence_store::EventStore;

/// The current append function's identity.
const APPEND: &str = "append(text, text[], jsonb[], jsonb[], bigint[], bigint, boolean, boolean, \
                      boolean, bigint, text[], text[], bigint, boolean)";

/// The append without a park condition, which the previous version did
/// not have.
const APPEND_PLAIN: &str = "append_plain(text, text[], jsonb[], jsonb[], bigint[], bigint, \
                            boolean, boolean, boolean, bigint, boolean)";

/// The previous version's `append`, from the current one's definition: the
/// upkeep's two arguments and its two CTEs (`opened`, `closed`, just
/// before `ins`) removed, and the short path with them (the previous
/// version ran every append through the conditional statement).
async fn previous_append(admin: &tokio_postgres::Client, schema: &Schema) -> String {
    let mut text: String = admin
        .query_one(
            "SELECT pg_get_functiondef(to_regprocedure($1))",
            &[&format!("{schema}.{APPEND}")],
        )
        .await
        .expect("reads the append function")
        .get(0);
    let arguments = ", p_opens bigint, p_closes boolean";
    assert!(text.contains(arguments), "{text}");
    text = text.replace(arguments, "");
    let branch = "IF p_park IS NOT NULL THEN ";
    let start = text.find(branch).expect("the conditional branch");
    text.replace_range(start..start + branch.len(), "");
    let start = text
        .find(" RETURN; END IF; IF p_ensure")
        .expect("the short path");
    let end = text.find("RETURN NEXT;").expect("the short path's end") + "RETURN NEXT;".len();
    text.replace_range(start..end, "");
    for _ in 0..2 {
        let start = text.find("opened AS (").expect("the upkeep's first CTE");
        let end = start + text[start..].find("ins AS (").expect("the insert's CTE");
        text.replace_range(start..end, "");
    }
    assert!(!text.contains("open_parks"), "{text}");
    text
}

/// Takes a current schema back to the previous version's shape.
async fn to_previous_version(admin: &tokio_postgres::Client, schema: &Schema) {
    let append = previous_append(admin, schema).await;
    admin
        .batch_execute(&format!(
            "DROP INDEX IF EXISTS {schema}.events_feed; \
             ALTER TABLE {schema}.events DROP COLUMN txid, DROP COLUMN feed_seq; \
             DROP TABLE {schema}.open_parks, {schema}.feed_high; \
             DROP SEQUENCE {schema}.feed_seq; \
             DROP FUNCTION {schema}.{APPEND}; \
             DROP FUNCTION {schema}.{APPEND_PLAIN}; \
             {append}; \
             UPDATE {schema}.migrations SET detail = '2' WHERE name = 'schema-version'; \
             DELETE FROM {schema}.migrations WHERE name = 'open-parks-backfill'"
        ))
        .await
        .expect("goes back to the previous version's shape");
}

/// Fills `executions` logs of ten events each: a third end parked (open),
/// a third parked then resumed, a third completed.
async fn fill(admin: &tokio_postgres::Client, schema: &Schema, executions: i64) {
    let [started, suspended, resumed, completed] = [
        KernelKind::ExecutionStarted,
        KernelKind::ExecutionSuspended,
        KernelKind::ExecutionResumed,
        KernelKind::ExecutionCompleted,
    ]
    .map(KernelKind::as_str);
    admin
        .execute(
            &format!(
                "INSERT INTO {schema}.events (execution_id, sequence, kind, payload, metadata, at) \
                 SELECT 'x' || i, seq, \
                   CASE WHEN seq = 1 THEN '{started}' \
                        WHEN seq = 10 AND i % 3 = 0 THEN '{suspended}' \
                        WHEN seq = 9 AND i % 3 = 1 THEN '{suspended}' \
                        WHEN seq = 10 AND i % 3 = 1 THEN '{resumed}' \
                        WHEN seq = 10 AND i % 3 = 2 THEN '{completed}' \
                        ELSE 'app.step' END, \
                   '{{}}'::jsonb, '{{}}'::jsonb, 0 \
                 FROM generate_series(0, $1::int8 - 1) i, generate_series(1, 10) seq"
            ),
            &[&executions],
        )
        .await
        .expect("fills the logs");
    admin
        .batch_execute(&format!("VACUUM ANALYZE {schema}.events"))
        .await
        .expect("vacuums");
}

/// Migrates a previous-version schema holding `executions` ten-event logs
/// while a writer inserts into `events` all along; checks the backfill and
/// the empty start of the feed; prints the migration's time and the
/// writer's longest wait.
async fn migrate_populated(executions: i64) {
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    let schema = store.schema().clone();
    let admin = common::admin(&url).await;
    to_previous_version(&admin, &schema).await;
    let filled = Instant::now();
    fill(&admin, &schema, executions).await;
    let filled = filled.elapsed();

    let done = Arc::new(AtomicBool::new(false));
    let writer = {
        let (done, schema) = (Arc::clone(&done), schema.clone());
        let writer = common::admin(&url).await;
        tokio::spawn(async move {
            let (mut longest, mut writes) = (Duration::ZERO, 0_i64);
            while !done.load(Ordering::SeqCst) {
                writes += 1;
                let started = Instant::now();
                writer
                    .execute(
                        &format!(
                            "INSERT INTO {schema}.events (execution_id, sequence, kind, payload, metadata, at) \
                             VALUES ('probe', $1, 'app.probe', '{{}}', '{{}}', 0)"
                        ),
                        &[&writes],
                    )
                    .await
                    .expect("the writer inserts");
                longest = longest.max(started.elapsed());
            }
            (longest, writes)
        })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let started = Instant::now();
    let report = store.migrate().await.expect("migrates");
    let took = started.elapsed();
    done.store(true, Ordering::SeqCst);
    let (longest, writes) = writer.await.expect("the writer");
    println!(
        "feed migration of {} events: {:.0} ms (fill {:.0} ms); writer's longest insert {:.1} ms \
         over {writes} inserts; {report:?}",
        executions * 10,
        took.as_secs_f64() * 1e3,
        filled.as_secs_f64() * 1e3,
        longest.as_secs_f64() * 1e3,
    );
    assert!(report.feed_columns_added);
    let open = u64::try_from((executions + 2) / 3).expect("a count");
    assert_eq!(report.open_parks_backfilled, Some(open));
    let mut listed = 0;
    let mut after = None;
    loop {
        let page = store.open_parks(after.as_ref(), 1000).await.expect("lists");
        let Some(last) = page.last().cloned() else {
            break;
        };
        assert!(page.iter().all(|id| {
            let n: i64 = id.as_str()[1..].parse().expect("x<n>");
            n % 3 == 0
        }));
        listed += page.len();
        after = Some(last);
    }
    assert_eq!(listed as u64, open, "every open park, and only those");

    let before = read_all(&store).await;
    assert!(
        before.iter().all(|id| id == "probe"),
        "the logs before the migration are not in the feed"
    );
    let fresh = common::id("after-the-migration");
    store
        .append(&fresh, event("app.one"))
        .await
        .expect("appends");
    let after = read_all(&store).await;
    assert_eq!(
        after.last().map(String::as_str),
        Some("after-the-migration")
    );
}

/// Every execution id the feed lists, in order.
async fn read_all(store: &PostgresEventStore) -> Vec<String> {
    loomfence_conformance::cases::feed::read_to_end(store, FeedCursor::START, 1000)
        .await
        .into_iter()
        .map(|entry| entry.event.execution_id.to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_feed_migration_on_a_populated_table_backfills_the_open_parks() {
    migrate_populated(3_000).await;
}

/// The same on a million events: run by hand for the figures
/// (`-- --ignored --nocapture`).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a million rows: a measurement, run by hand"]
async fn the_feed_migration_on_a_million_events() {
    migrate_populated(100_000).await;
}

/// Appends through the previous version's function and the current one,
/// on two schemas of one server, in alternating rounds: what the feed's
/// columns and the upkeep cost a plain append.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement, run by hand"]
async fn append_cost_before_and_after_the_feed() {
    const ROUNDS: usize = 5;
    const EACH: i64 = 2_000;
    let Some(url) = common::url() else { return };
    let admin = common::admin(&url).await;
    let old = common::store(&url).await;
    to_previous_version(&admin, old.schema()).await;
    let new = common::store(&url).await;
    let answering: Vec<&str> = KernelKind::answering().map(KernelKind::as_str).collect();
    let kernel: Vec<&str> = KernelKind::ALL.iter().map(|k| k.as_str()).collect();
    let client = common::admin(&url).await;
    let call = |schema: &Schema, feed: bool| {
        let upkeep = if feed { ", NULL::int8, false" } else { "" };
        format!(
            "SELECT inserted FROM {schema}.append($1, ARRAY['app.step'], ARRAY['{{}}'::jsonb], \
             ARRAY['{{}}'::jsonb], ARRAY[0::int8], NULL::int8, false, false, false, NULL::int8, \
             $2::text[], $3::text[]{upkeep})"
        )
    };
    let statements = [
        client
            .prepare(&call(old.schema(), false))
            .await
            .expect("prepares"),
        client
            .prepare(&call(new.schema(), true))
            .await
            .expect("prepares"),
    ];
    let mut totals = [Duration::ZERO; 2];
    for round in 0..ROUNDS {
        for (which, statement) in statements.iter().enumerate() {
            let started = Instant::now();
            for n in 0..EACH {
                let id = format!("c{}", n % 100);
                client
                    .query_one(statement, &[&id, &answering, &kernel])
                    .await
                    .expect("appends");
            }
            if round > 0 {
                totals[which] += started.elapsed();
            }
        }
    }
    let per = |total: Duration| total.as_secs_f64() * 1e6 / (EACH as f64 * (ROUNDS - 1) as f64);
    println!(
        "append: previous version {:.1} us, with the feed {:.1} us, ratio {:.3}",
        per(totals[0]),
        per(totals[1]),
        totals[1].as_secs_f64() / totals[0].as_secs_f64()
    );
}
