//! The change feed against a real server, where the kit cannot reach: a
//! transaction held open across a follower's reads (the skip a bare
//! sequence would make), and a wake that crosses processes.

mod common;

use std::time::Duration;

use loomfence_conformance::cases::feed::{read_to_end, settled};
use loomfence_conformance::support::event;
use loomfence_core::feed::FeedCursor;
use loomfence_store::EventStore;

/// `(execution, sequence)` of each entry.
fn places(entries: &[loomfence_core::feed::FeedEntry]) -> Vec<(String, u64)> {
    entries
        .iter()
        .map(|entry| (entry.event.execution_id.to_string(), entry.event.sequence))
        .collect()
}

/// A transaction that wrote an event and stays open holds the feed at its
/// start: an append committed meanwhile is not listed past it, and once it
/// commits a follower reading from the cursor it had lists both, the held
/// one first. The same follower reading without the horizon (the order a
/// bare sequence gives) lists the later append, keeps its cursor, and never
/// sees the held event: the skip the horizon is there to prevent.
/// The horizon a feed read stops at is the whole cluster's: while one test
/// holds a transaction open, another's reads lag behind its own appends.
/// The tests of this file that hold a transaction, or read the feed's
/// exact state, take this in turn.
static HORIZON: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A session that wrote an event of `held` and keeps its transaction open:
/// the horizon stays below it until the session commits.
async fn hold(url: &str, schema: &loomfence_postgres::Schema) -> tokio_postgres::Client {
    let held = common::admin(url).await;
    held.batch_execute("BEGIN").await.expect("begins");
    held.batch_execute(&format!(
        "INSERT INTO {schema}.events (execution_id, sequence, kind, payload, metadata, at) \
         VALUES ('held', 1, 'app.held', '{{}}', '{{}}', 0)"
    ))
    .await
    .expect("writes an event and holds its transaction");
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_held_transaction_holds_the_feed_and_nothing_is_skipped() {
    let Some(url) = common::url() else { return };
    let _turn = HORIZON.lock().await;
    let store = common::store(&url).await;
    let schema = store.schema().clone();
    let held = hold(&url, &schema).await;
    let later = common::id("later");
    store
        .append(&later, event("app.later"))
        .await
        .expect("appends");

    let with_horizon = read_to_end(&store, FeedCursor::START, 10).await;
    assert!(
        with_horizon.is_empty(),
        "nothing past the held transaction: {:?}",
        places(&with_horizon)
    );
    assert_eq!(
        store.feed_head().await.expect("reads the head"),
        FeedCursor::START
    );
    let bare = store
        .feed_without_horizon(FeedCursor::START, 10)
        .await
        .expect("reads");
    assert_eq!(places(&bare), [("later".to_owned(), 1)]);
    let bare_cursor = bare[0].cursor;

    held.batch_execute("COMMIT").await.expect("commits");
    let resumed = read_to_end(&store, FeedCursor::START, 10).await;
    assert_eq!(
        places(&resumed),
        [("held".to_owned(), 1), ("later".to_owned(), 1)],
        "the held event, then the later one"
    );
    let skipped = store
        .feed_without_horizon(bare_cursor, 10)
        .await
        .expect("reads");
    assert!(
        skipped.is_empty(),
        "without the horizon the held event is behind the cursor: skipped"
    );
    assert!(
        resumed[0].cursor < bare_cursor,
        "the held event's cursor is before the one the bare read handed out"
    );
}

/// A waiter on one store wakes when another store (its own pool, as a
/// second process would have) appends: the notification crosses.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_wait_wakes_on_another_processs_append() {
    let Some(url) = common::url() else { return };
    let _turn = HORIZON.lock().await;
    let writer = common::store(&url).await;
    let options = loomfence_postgres::PostgresOptions {
        schema: writer.schema().clone(),
        ..common::options()
    };
    let follower = std::sync::Arc::new(common::store_with(&url, options).await);
    let id = common::id("crossing");
    writer.append(&id, event("app.one")).await.expect("appends");
    // The head is held below the oldest transaction running anywhere in the
    // cluster (other test binaries run beside this one): wait until it
    // covers the first append, or the wait below would wake on that one.
    let listed = settled(&*follower, FeedCursor::START, 10, 1).await;
    assert_eq!(listed.len(), 1, "the first append is listed within 10 s");
    let head = follower.feed_head().await.expect("reads the head");
    assert!(head >= listed[0].cursor, "the head covers what is listed");
    let waiter = {
        let follower = std::sync::Arc::clone(&follower);
        tokio::spawn(async move { follower.wait_for_feed(head).await })
    };
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(!waiter.is_finished(), "nothing new yet");
    writer.append(&id, event("app.two")).await.expect("appends");
    tokio::time::timeout(Duration::from_secs(10), waiter)
        .await
        .expect("the other store's append wakes the waiter")
        .expect("the waiter runs")
        .expect("waits");
    assert!(follower.feed_head().await.expect("reads the head") > head);
}

/// The append keeps the open parks in its own statement: a conditional
/// append that is refused (the park was answered) changes nothing, and a
/// delete takes the execution out.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_refused_append_leaves_the_open_parks_alone() {
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    let id = common::id("refused");
    let park_seq = common::park(&store, &id).await;
    store
        .append(
            &id,
            common::kernel(loomfence_core::KernelKind::ExecutionResumed),
        )
        .await
        .expect("resumes");
    assert!(store.open_parks(None, 10).await.expect("lists").is_empty());
    let refused = store
        .append_if_parked(
            &id,
            park_seq,
            vec![common::kernel(
                loomfence_core::KernelKind::ExecutionSuspended,
            )],
        )
        .await
        .expect("answers");
    assert_eq!(refused, loomfence_core::ConditionalAppend::ParkAnswered);
    assert!(
        store.open_parks(None, 10).await.expect("lists").is_empty(),
        "a refused park does not open"
    );
    common::park(&store, &id).await;
    assert_eq!(
        store.open_parks(None, 10).await.expect("lists"),
        std::slice::from_ref(&id)
    );
    assert!(store.delete_execution(&id).await.expect("deletes"));
    assert!(store.open_parks(None, 10).await.expect("lists").is_empty());
}

/// Deletes while a transaction holds the horizon: the head never goes back,
/// neither when the log it named goes nor when a log above the horizon
/// goes, and once the transaction ends it moves past both. The table that
/// keeps deleted cursors stays a few rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deletes_under_a_held_horizon_never_move_the_head_back() {
    let Some(url) = common::url() else { return };
    let _turn = HORIZON.lock().await;
    let store = common::store(&url).await;
    let schema = store.schema().clone();
    let (a, b) = (common::id("head-a"), common::id("head-b"));
    store.append(&a, event("app.one")).await.expect("appends");
    let named = store.feed_head().await.expect("reads the head");
    assert!(named > FeedCursor::START);

    let held = hold(&url, &schema).await;
    let b_cursor = {
        store.append(&b, event("app.two")).await.expect("appends");
        let bare = store.feed_without_horizon(named, 10).await.expect("reads");
        bare.last().expect("b's event").cursor
    };
    assert_eq!(store.feed_head().await.expect("reads the head"), named);

    assert!(store.delete_execution(&b).await.expect("deletes"));
    assert_eq!(store.feed_head().await.expect("reads the head"), named);
    assert!(store.delete_execution(&a).await.expect("deletes"));
    assert_eq!(
        store.feed_head().await.expect("reads the head"),
        named,
        "the deleted log the head named still holds it"
    );

    held.batch_execute("COMMIT").await.expect("commits");
    let head = store.feed_head().await.expect("reads the head");
    assert_eq!(head, b_cursor, "past the held event, at the deleted one");
    assert_eq!(
        places(&read_to_end(&store, named, 10).await),
        [("held".to_owned(), 1)]
    );
    for n in 0..5 {
        let id = common::id(&format!("churn-{n}"));
        store.append(&id, event("app.step")).await.expect("appends");
        assert!(store.delete_execution(&id).await.expect("deletes"));
    }
    let kept: i64 = common::admin(&url)
        .await
        .query_one(&format!("SELECT count(*) FROM {schema}.feed_high"), &[])
        .await
        .expect("counts")
        .get(0);
    assert!(kept <= 2, "deleted cursors are pruned: {kept} kept");
}
