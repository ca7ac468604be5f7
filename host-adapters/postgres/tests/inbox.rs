//! The PostgreSQL inbox against a real server: a send and its intent row
//! in one transaction, duplicates stored once, arrival order equal to
//! commit order on a channel (forced with a held channel lock, and raced by
//! eight sessions), rows this store did not write, the migration that
//! brings an older schema the table, and retention's deletes taking the
//! messages with the log.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use loomfence_core::inbox::{InboxEntry, Message, MessageKey, Sent, StoredMessage};
use loomfence_core::retention::{DeleteGuard, GuardedDelete};
use loomfence_core::timer::{DueFilter, TimerRow};
use loomfence_core::{ExecutionId, InputError};
use loomfence_postgres::migration::{MigrateOptions, migrate};
use loomfence_postgres::{OpenError, PostgresEventStore, PostgresOptions, PostgresTimerStore};
use loomfence_store::{EventStore, InboxStore, StoreError, TimerStore};
use serde_json::{Value, json};
use tokio::sync::Barrier;
use tokio_postgres::types::Json;

/// The delay of every intent row here.
const DELAY_MS: i64 = 5_000;

/// A message of `id` on `channel`, sent at `sent_at`.
fn message(
    id: &ExecutionId,
    channel: &str,
    message_id: &str,
    payload: Value,
    sent_at: i64,
) -> Message {
    Message {
        key: MessageKey::new(id.clone(), channel, message_id).expect("a valid key"),
        payload,
        sent_at,
    }
}

/// Sends `message` with its default intent row; the answer.
async fn send(store: &PostgresTimerStore, message: &Message) -> Sent {
    let intent = message.intent(DELAY_MS).expect("an intent row");
    store.send(message, &intent).await.expect("sends")
}

/// The arrival of a stored send, failing on a duplicate.
fn stored(sent: Sent) -> u64 {
    match sent {
        Sent::Stored { arrival } => arrival,
        Sent::Duplicate { arrival } => {
            panic!("expected a new message, got a duplicate at {arrival}")
        }
    }
}

/// The message ids of a listing, in its order.
fn ids(listed: &[StoredMessage]) -> Vec<String> {
    listed
        .iter()
        .map(|m| m.message.key.message_id.clone())
        .collect()
}

/// Every due timer row, far in the future.
async fn all_due(store: &PostgresTimerStore) -> Vec<TimerRow> {
    store
        .due(i64::from(u32::MAX), 1_000, DueFilter::default())
        .await
        .expect("lists")
}

/// A message and its intent row: the answer is `Stored` with arrival 1 or
/// more, the message reads back whole (nested payload, `sent_at`), pending
/// and listed, and the intent row is the timer store's own row, due at
/// `sent_at + delay` and not before.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_message_round_trips_with_its_intent_row() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let id = common::id("round-trip");
    let sent = message(
        &id,
        "approvals",
        "m-1",
        json!({"by": "ada", "ok": true, "n": [1, 2.5, null], "deep": {"é": "ünï"}}),
        1_000,
    );
    let arrival = stored(send(&store, &sent).await);
    assert!(arrival >= 1);

    let expected = StoredMessage {
        message: sent.clone(),
        arrival,
    };
    assert_eq!(
        store
            .pending(&id, &["approvals".to_owned()], 10)
            .await
            .expect("lists"),
        std::slice::from_ref(&expected)
    );
    assert_eq!(
        store.messages(&id).await.expect("lists"),
        [InboxEntry {
            message: expected,
            consumed: false
        }]
    );
    let intent = TimerRow::redrive(id.clone(), 1_000 + DELAY_MS, 0);
    assert_eq!(all_due(&store).await, [intent]);
    assert!(
        store
            .due(1_000 + DELAY_MS - 1, 10, DueFilter::default())
            .await
            .expect("lists")
            .is_empty(),
        "not due before sent_at + delay"
    );
    assert!(
        store
            .due(1_000 + DELAY_MS, 10, DueFilter { redrive: false })
            .await
            .expect("lists")
            .is_empty(),
        "the intent row is a re-drive row, not a plain wake"
    );
}

/// The same key twice: one row with the first payload, a `Duplicate`
/// answer carrying the first arrival, and only the first send's intent row
/// (the second's, at another time, is not written).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_duplicate_is_stored_once_with_the_first_payload() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let id = common::id("duplicate");
    let first = message(&id, "c", "same", json!({"v": 1}), 100);
    let arrival = stored(send(&store, &first).await);
    let again = message(&id, "c", "same", json!({"v": 2}), 900);
    assert_eq!(send(&store, &again).await, Sent::Duplicate { arrival });

    let listed = store.messages(&id).await.expect("lists");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].message.message, first, "the first payload stands");
    assert_eq!(
        all_due(&store).await,
        [TimerRow::redrive(id.clone(), 100 + DELAY_MS, 0)],
        "one intent row, the first send's"
    );

    // A consumed message is still recognised as sent.
    assert!(store.mark_consumed(&first.key).await.expect("marks"));
    assert_eq!(send(&store, &again).await, Sent::Duplicate { arrival });

    // A duplicate draws no arrival number, as in the core's table: the
    // next message takes the next number.
    let next = message(&id, "c", "next", json!({"v": 3}), 950);
    assert_eq!(
        send(&store, &next).await,
        Sent::Stored {
            arrival: arrival + 1
        }
    );
}

/// Marking: true once, false after, false for a key never sent; a marked
/// message leaves pending but stays listed, flagged.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn mark_consumed_answers_once_and_hides_the_message_from_pending() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let id = common::id("consume");
    let a = message(&id, "c", "a", json!("A"), 1);
    let b = message(&id, "c", "b", json!("B"), 2);
    stored(send(&store, &a).await);
    stored(send(&store, &b).await);

    assert!(store.mark_consumed(&a.key).await.expect("marks"));
    assert!(!store.mark_consumed(&a.key).await.expect("marks again"));
    let never = MessageKey::new(id.clone(), "c", "never").expect("a valid key");
    assert!(!store.mark_consumed(&never).await.expect("marks nothing"));

    let pending = store
        .pending(&id, &["c".to_owned()], 10)
        .await
        .expect("lists");
    assert_eq!(ids(&pending), ["b"]);
    let flags: Vec<(String, bool)> = store
        .messages(&id)
        .await
        .expect("lists")
        .into_iter()
        .map(|entry| (entry.message.message.key.message_id, entry.consumed))
        .collect();
    assert_eq!(flags, [("a".to_owned(), true), ("b".to_owned(), false)]);
}

/// Pending filters by execution and channel, lists in arrival order across
/// channels, and stops at the limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn pending_lists_the_asked_channels_in_arrival_order_up_to_the_limit() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let id = common::id("channels");
    let other = common::id("channels-other");
    for (n, channel) in ["x", "y", "x", "z", "y", "x"].iter().enumerate() {
        stored(
            send(
                &store,
                &message(&id, channel, &format!("{channel}{n}"), json!(n), 5),
            )
            .await,
        );
    }
    stored(send(&store, &message(&other, "x", "elsewhere", json!(0), 5)).await);

    let channels = |names: &[&str]| names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
    let listed = store
        .pending(&id, &channels(&["x", "y"]), 10)
        .await
        .expect("lists");
    assert_eq!(ids(&listed), ["x0", "y1", "x2", "y4", "x5"]);
    assert!(listed.windows(2).all(|w| w[0].arrival < w[1].arrival));
    let limited = store
        .pending(&id, &channels(&["x", "y"]), 2)
        .await
        .expect("lists");
    assert_eq!(ids(&limited), ["x0", "y1"]);
    assert!(
        store
            .pending(&id, &channels(&["w"]), 10)
            .await
            .expect("lists")
            .is_empty()
    );
}

/// Purge deletes one execution's messages, consumed or not, and answers
/// how many; the other execution's stay; a second purge finds none.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn purge_deletes_only_its_executions_messages() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let gone = common::id("purged");
    let kept = common::id("kept");
    let consumed = message(&gone, "c", "1", json!(1), 1);
    stored(send(&store, &consumed).await);
    stored(send(&store, &message(&gone, "d", "2", json!(2), 1)).await);
    stored(send(&store, &message(&kept, "c", "1", json!(3), 1)).await);
    assert!(store.mark_consumed(&consumed.key).await.expect("marks"));

    assert_eq!(store.purge(&gone).await.expect("purges"), 2);
    assert!(store.messages(&gone).await.expect("lists").is_empty());
    assert_eq!(store.messages(&kept).await.expect("lists").len(), 1);
    assert_eq!(store.purge(&gone).await.expect("purges again"), 0);
    // After a purge the key is free again: a re-created execution's sender
    // is not told its new message is a duplicate of the old one.
    stored(send(&store, &consumed).await);
}

/// Refused input is a typed `Input` error, and nothing is stored.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_input_is_refused_and_stores_nothing() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let id = common::id("refused");
    let mut bad = message(&id, "c", "m", json!({"text": "a\u{0}b"}), 1);
    let intent = TimerRow::redrive(id.clone(), 10, 0);
    assert!(matches!(
        store.send(&bad, &intent).await,
        Err(StoreError::Input(InputError::Nul { .. }))
    ));
    bad.payload = json!("x".repeat(loomfence_core::inbox::MAX_MESSAGE_BYTES));
    assert!(matches!(
        store.send(&bad, &intent).await,
        Err(StoreError::Input(InputError::Limit { .. }))
    ));
    bad.payload = json!(1);
    bad.key.channel = String::new();
    assert!(matches!(
        store.send(&bad, &intent).await,
        Err(StoreError::Input(InputError::MessageField {
            field: "channel",
            ..
        }))
    ));
    let good = message(&id, "c", "m", json!(1), 1);
    let no_time = TimerRow::redrive(id.clone(), -1, 0);
    assert!(matches!(
        store.send(&good, &no_time).await,
        Err(StoreError::Input(_))
    ));
    assert!(matches!(
        store.pending(&id, &["c".to_owned()], 0).await,
        Err(StoreError::Input(InputError::Limit { what: "limit", .. }))
    ));
    assert!(matches!(
        store.mark_consumed(&bad.key).await,
        Err(StoreError::Input(_))
    ));
    assert!(store.messages(&id).await.expect("lists").is_empty());
    assert!(all_due(&store).await.is_empty(), "no intent row either");
}

/// Rows this store did not write (an empty channel, a negative `sent_at`)
/// fail the listing with a permanent backend error naming the row, not a
/// panic and not a wrong message.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_row_that_does_not_read_back_is_a_permanent_error_naming_it() {
    let Some(url) = common::url() else { return };
    let store = common::timers(&url).await;
    let admin = common::admin(&url).await;
    let schema = store.schema().clone();
    for (n, (channel, sent_at)) in [("", 1_i64), ("c", -5)].into_iter().enumerate() {
        let id = format!("corrupt-{n}");
        admin
            .execute(
                &format!(
                    "INSERT INTO {schema}.inbox (execution_id, channel, message_id, payload, sent_at) \
                     VALUES ($1, $2, 'planted', '{{}}'::jsonb, $3)"
                ),
                &[&id, &channel, &sent_at],
            )
            .await
            .expect("plants a row");
        let id = common::id(&id);
        let mut failures = vec![store.messages(&id).await.map(|_| ())];
        if !channel.is_empty() {
            // An empty channel cannot be asked for; the other row can.
            let channels = [channel.to_owned()];
            failures.push(store.pending(&id, &channels, 10).await.map(|_| ()));
        }
        for failed in failures {
            match failed {
                Err(StoreError::Backend(backend)) => {
                    assert!(!backend.retryable);
                    let text = backend.to_string();
                    assert!(text.contains("corrupt inbox row"), "{text}");
                    assert!(
                        text.contains(id.as_str()) && text.contains("planted"),
                        "{text}"
                    );
                }
                other => panic!("expected a permanent backend error, got {other:?}"),
            }
        }
    }
}

/// Arrival order is commit order on a channel, forced: an admin session
/// takes the channel lock the store takes and inserts a message with the
/// store's own statements, then holds its transaction open. A send on the
/// same channel waits for it (seen in `pg_locks`), a send on another
/// channel of the execution does not, and no listing shows the waiting
/// send before the held one. Once the held one commits, the send finishes
/// and pending lists the two in commit order.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_send_waits_for_an_earlier_send_of_its_channel_to_commit() {
    let Some(url) = common::url() else { return };
    let app = common::unique("inbox_order");
    let options = common::options();
    let store = common::store_with(&common::with_application_name(&url, &app), options).await;
    let timers = store.timers();
    let monitor = common::admin(&url).await;
    let id = common::id("ordered");
    let channel = "orders".to_owned();
    let (lock, insert) = timers.inbox_send_statements();

    let held = common::admin(&url).await;
    held.batch_execute("BEGIN").await.expect("begins");
    held.query_one(lock, &[&id.as_str(), &channel])
        .await
        .expect("takes the channel lock");
    let first: i64 = held
        .query_one(
            insert,
            &[
                &id.as_str(),
                &channel,
                &"first",
                &Json(json!("one")),
                &10_i64,
            ],
        )
        .await
        .expect("inserts")
        .get(0);

    let done = Arc::new(AtomicBool::new(false));
    let second = {
        let (timers, id, done) = (timers.clone(), id.clone(), done.clone());
        tokio::spawn(async move {
            let sent = send(&timers, &message(&id, "orders", "second", json!("two"), 20)).await;
            done.store(true, Ordering::SeqCst);
            sent
        })
    };
    assert!(
        common::wait_for_advisory_waiter(&monitor, &app, || done.load(Ordering::SeqCst)).await,
        "the second send must wait for the channel lock, not draw its arrival and commit first"
    );
    assert!(!done.load(Ordering::SeqCst));
    // Another channel of the same execution is not held up.
    stored(send(&timers, &message(&id, "other", "free", json!(0), 30)).await);
    assert!(
        timers
            .pending(&id, std::slice::from_ref(&channel), 10)
            .await
            .expect("lists")
            .is_empty(),
        "nothing of the channel is visible while its first send is open"
    );

    held.batch_execute("COMMIT").await.expect("commits");
    let second = stored(second.await.expect("the send task"));
    let first = u64::try_from(first).expect("a positive arrival");
    assert!(second > first, "{second} after {first}");
    let listed = timers.pending(&id, &[channel], 10).await.expect("lists");
    assert_eq!(ids(&listed), ["first", "second"]);
    assert_eq!(
        listed.iter().map(|m| m.arrival).collect::<Vec<_>>(),
        [first, second]
    );
}

/// Senders on one channel.
const SENDERS: usize = 8;

/// Messages per sender.
const PER_SENDER: usize = 25;

/// Eight sessions each send 25 messages on one channel at once, while a
/// ninth reads the channel over and over. Every listing the reader saw is
/// a prefix of the final order (a listed message never had an earlier one
/// still to commit), each sender's messages arrive in the order it sent
/// them, and paging through pending (marking each page consumed, as a
/// delivery does) lists all 200, arrivals strictly increasing.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_senders_on_one_channel_list_in_commit_order() {
    let Some(url) = common::url() else { return };
    let first = common::store(&url).await;
    let mut senders = Vec::new();
    for _ in 0..=SENDERS {
        let node = PostgresEventStore::connect(
            &url,
            PostgresOptions {
                schema: first.schema().clone(),
                pool_size: 1,
                migrate_on_connect: false,
                ..PostgresOptions::default()
            },
        )
        .await
        .expect("connects");
        senders.push(node.timers());
    }
    let reader = senders.pop().expect("a reader");
    let id = common::id("crowded");
    let channel = vec!["busy".to_owned()];
    let barrier = Arc::new(Barrier::new(SENDERS));
    let finished = Arc::new(AtomicBool::new(false));

    let watching = {
        let (reader, id, channel, finished) = (
            reader.clone(),
            id.clone(),
            channel.clone(),
            finished.clone(),
        );
        tokio::spawn(async move {
            let mut seen = Vec::new();
            while !finished.load(Ordering::SeqCst) {
                let listed = reader.pending(&id, &channel, 1_000).await.expect("lists");
                seen.push(listed.iter().map(|m| m.arrival).collect::<Vec<u64>>());
            }
            seen
        })
    };
    let mut tasks = Vec::new();
    for (n, sender) in senders.into_iter().enumerate() {
        let (barrier, id) = (barrier.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let mut arrivals = Vec::new();
            for j in 0..PER_SENDER {
                let sent = message(&id, "busy", &format!("s{n}-{j:02}"), json!([n, j]), 1);
                arrivals.push(stored(send(&sender, &sent).await));
            }
            arrivals
        }));
    }
    for task in tasks {
        let arrivals = task.await.expect("a sender");
        assert!(
            arrivals.windows(2).all(|w| w[0] < w[1]),
            "one sender's messages arrive in its order: {arrivals:?}"
        );
    }
    finished.store(true, Ordering::SeqCst);
    let seen = watching.await.expect("the reader");

    let mut all = Vec::new();
    loop {
        let page = reader.pending(&id, &channel, 30).await.expect("lists");
        if page.is_empty() {
            break;
        }
        for listed in &page {
            assert!(
                reader
                    .mark_consumed(&listed.message.key)
                    .await
                    .expect("marks"),
                "each listed message is pending"
            );
        }
        all.extend(page);
    }
    assert_eq!(all.len(), SENDERS * PER_SENDER);
    let arrivals: Vec<u64> = all.iter().map(|m| m.arrival).collect();
    assert!(
        arrivals.windows(2).all(|w| w[0] < w[1]),
        "strictly increasing across pages"
    );
    let distinct: BTreeSet<String> = ids(&all).into_iter().collect();
    assert_eq!(distinct.len(), SENDERS * PER_SENDER);
    assert!(seen.len() > 1, "the reader listed while the senders ran");
    for listing in &seen {
        assert_eq!(
            listing[..],
            arrivals[..listing.len()],
            "a listing during the sends is a prefix of the commit order"
        );
    }
    println!(
        "{} listings during the sends, the longest {}",
        seen.len(),
        seen.iter().map(Vec::len).max().unwrap_or(0)
    );
}

/// Options for a fresh schema that is not migrated on connect.
fn unmigrated() -> PostgresOptions {
    PostgresOptions {
        migrate_on_connect: false,
        pool_size: 4,
        ..common::options()
    }
}

/// A schema as the migration before the inbox left its timers: the table
/// in its current shape with the due index, and rows (one claimed).
async fn timers_before_the_inbox(
    admin: &tokio_postgres::Client,
    schema: &loomfence_postgres::Schema,
) {
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; \
             CREATE TABLE {schema}.timers (execution_id text NOT NULL, wake_at bigint NOT NULL, \
               redrive jsonb NULL, holder text NULL, lease_until bigint NULL, \
               claims bigint NOT NULL DEFAULT 0, PRIMARY KEY (execution_id, wake_at)); \
             CREATE INDEX timers_due ON {schema}.timers (wake_at, execution_id COLLATE \"C\"); \
             INSERT INTO {schema}.timers (execution_id, wake_at, redrive) \
               VALUES ('kept-a', 100, NULL), ('kept-r', 70, '{{\"attempt\": 3}}'); \
             INSERT INTO {schema}.timers (execution_id, wake_at, holder, lease_until, claims) \
               VALUES ('kept-c', 60, 'node-1', 500, 4)"
        ))
        .await
        .expect("creates the schema before the inbox");
}

/// Whether `schema.name` exists.
async fn exists(
    admin: &tokio_postgres::Client,
    schema: &loomfence_postgres::Schema,
    name: &str,
) -> bool {
    admin
        .query_one(
            "SELECT to_regclass($1)::text",
            &[&format!("{schema}.{name}")],
        )
        .await
        .expect("reads the catalog")
        .get::<_, Option<String>>(0)
        .is_some()
}

/// A schema whose timers were migrated before the inbox existed gains the
/// table and its pending index on `migrate`, keeps every timer row (the
/// claimed one still claimed: not due before its lease ends), and sends
/// work; migrating again changes nothing. Four boots racing on a fresh
/// schema all succeed (they queue on the migration's advisory lock).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_schema_before_the_inbox_gains_it_and_keeps_its_timer_rows() {
    let Some(url) = common::url() else { return };
    let admin = common::admin(&url).await;
    let store = PostgresEventStore::connect(&url, unmigrated())
        .await
        .expect("connects");
    let schema = store.schema().clone();
    timers_before_the_inbox(&admin, &schema).await;
    assert!(!exists(&admin, &schema, "inbox").await);

    let report = store.migrate().await.expect("migrates");
    assert!(report.timer_columns_added.is_empty());
    assert!(exists(&admin, &schema, "inbox").await);
    assert!(exists(&admin, &schema, "inbox_pending").await);
    let timers = store.timers();
    assert_eq!(
        timers
            .due(1_000, 10, DueFilter::default())
            .await
            .expect("lists"),
        [
            TimerRow::wake(common::id("kept-c"), 60),
            TimerRow::redrive(common::id("kept-r"), 70, 3),
            TimerRow::wake(common::id("kept-a"), 100),
        ],
        "the timer rows survive"
    );
    let claimable = timers
        .claim_due(
            &loomfence_core::timer::Lease {
                holder: loomfence_core::timer::NodeId::new("node-2").expect("a node id"),
                now: 400,
                duration_ms: 1_000,
            },
            10,
            DueFilter::default(),
        )
        .await
        .expect("claims");
    let claimed: Vec<&str> = claimable
        .claims
        .iter()
        .map(|c| c.row.execution_id.as_str())
        .collect();
    assert_eq!(
        claimed,
        ["kept-r", "kept-a"],
        "the held claim is still held"
    );

    let id = common::id("after-migration");
    stored(send(&timers, &message(&id, "c", "m", json!(1), 1)).await);
    store.migrate().await.expect("migrates again");
    assert_eq!(timers.messages(&id).await.expect("lists").len(), 1);

    // Racing boots on a fresh schema.
    let options = unmigrated();
    let pool = PostgresEventStore::connect(&url, options)
        .await
        .expect("connects");
    let racing = (0..4).map(|_| {
        let (pool, schema) = (pool.pool().clone(), pool.schema().clone());
        tokio::spawn(async move { migrate(&pool, &schema, &MigrateOptions::default()).await })
    });
    for boot in racing {
        boot.await.expect("a boot").expect("migrates");
    }
    assert!(exists(&admin, pool.schema(), "inbox_pending").await);
    stored(send(&pool.timers(), &message(&id, "c", "m", json!(1), 1)).await);
}

/// A boot against a current inbox reads the catalog and takes no lock on
/// the table, so it does not wait for a session that holds the table
/// locked outright; a table named `inbox` that lacks the columns is
/// refused, permanently, and left as it is.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_boot_does_not_wait_for_a_current_inbox_and_refuses_a_foreign_one() {
    let Some(url) = common::url() else { return };
    let store = common::store(&url).await;
    let table = format!("{}.inbox", store.schema());
    let holder = common::hold_lock(&url, "LOCK TABLE {t} IN ACCESS EXCLUSIVE MODE", &table).await;
    let started = Instant::now();
    tokio::time::timeout(Duration::from_secs(10), store.migrate())
        .await
        .expect("migrate did not wait for the table's lock")
        .expect("migrates");
    assert!(started.elapsed() < Duration::from_secs(5));
    holder.batch_execute("ROLLBACK").await.expect("releases");

    let admin = common::admin(&url).await;
    let foreign = PostgresEventStore::connect(&url, unmigrated())
        .await
        .expect("connects");
    let schema = foreign.schema().clone();
    admin
        .batch_execute(&format!(
            "CREATE SCHEMA {schema}; CREATE TABLE {schema}.inbox (id bigint PRIMARY KEY, body text)"
        ))
        .await
        .expect("creates a foreign table");
    match foreign.migrate().await {
        Err(error @ OpenError::Backend(_)) => {
            assert!(!error.is_retryable());
            assert!(error.to_string().contains("execution_id"), "{error}");
        }
        other => panic!("expected a permanent backend error, got {other:?}"),
    }
    assert!(!exists(&admin, &schema, "inbox_pending").await);
    assert!(
        !exists(&admin, &schema, "events").await,
        "the migration rolled back"
    );
}

/// Retention's deletes take the execution's messages with its log, in the
/// same transaction, and leave other executions' messages; a schema whose
/// inbox table is gone still deletes logs.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_deletes_take_the_executions_messages_with_its_log() {
    let Some(url) = common::url() else { return };
    let events = common::store(&url).await;
    let timers = events.timers();
    let guarded = common::id("guarded");
    let plain = common::id("plain");
    let bystander = common::id("bystander");
    for id in [&guarded, &plain, &bystander] {
        common::park(&events, id).await;
        stored(send(&timers, &message(id, "c", "1", json!(1), 1)).await);
        stored(send(&timers, &message(id, "d", "2", json!(2), 1)).await);
    }

    let head = common::park(&events, &guarded).await;
    let stale = DeleteGuard {
        head: head - 1,
        parents: Vec::new(),
    };
    assert!(matches!(
        events
            .delete_execution_if(&guarded, &stale)
            .await
            .expect("answers"),
        GuardedDelete::LogChanged { .. }
    ));
    assert_eq!(
        timers.messages(&guarded).await.expect("lists").len(),
        2,
        "a refused delete keeps the messages"
    );
    let guard = DeleteGuard {
        head,
        parents: Vec::new(),
    };
    assert_eq!(
        events
            .delete_execution_if(&guarded, &guard)
            .await
            .expect("deletes"),
        GuardedDelete::Deleted
    );
    assert!(timers.messages(&guarded).await.expect("lists").is_empty());
    assert!(events.delete_execution(&plain).await.expect("deletes"));
    assert!(timers.messages(&plain).await.expect("lists").is_empty());
    assert_eq!(timers.messages(&bystander).await.expect("lists").len(), 2);

    // Events but no inbox (a table dropped, or never made): deletes work.
    let admin = common::admin(&url).await;
    admin
        .batch_execute(&format!("DROP TABLE {}.inbox", events.schema()))
        .await
        .expect("drops the inbox");
    assert!(events.delete_execution(&bystander).await.expect("deletes"));
}
