//! The inbox in the store's file: an execution's messages go with its log
//! when either delete removes it, a send's message and intent row commit
//! together or not at all, and a row the store did not write fails the
//! listings with a permanent backend error naming it, never a panic.

mod common;

use std::path::Path;

use common::files::raw;
use common::{TempDir, id, kernel};
use loomfence_core::inbox::{DEFAULT_INTENT_DELAY_MS, Message, MessageKey, Sent};
use loomfence_core::retention::{DeleteGuard, GuardedDelete};
use loomfence_core::{ExecutionId, KernelKind};
use loomfence_sqlite::{SqliteEventStore, SqliteTimerStore};
use loomfence_store::{EventStore, InboxStore, StoreError};
use serde_json::json;

/// The instant the messages are sent at.
const T0: i64 = 1_700_000_000_000;

/// A message for `execution` on channel `c`.
fn message(execution: &str, message_id: &str) -> Message {
    Message {
        key: MessageKey::new(id(execution), "c", message_id).expect("a key"),
        payload: json!({"id": message_id}),
        sent_at: T0,
    }
}

/// Sends `message` with its default intent and expects it stored.
async fn send(inbox: &SqliteTimerStore, message: &Message) {
    let intent = message.intent(DEFAULT_INTENT_DELAY_MS).expect("an intent");
    assert!(matches!(
        inbox.send(message, &intent).await.expect("sends"),
        Sent::Stored { .. }
    ));
}

/// An execution `name` that started and completed, with two messages, and
/// a neighbour `name-2` with one, both in `store`'s file.
async fn ended_with_messages(store: &SqliteEventStore, name: &str) -> ExecutionId {
    let inbox = store.timers();
    let ended = id(name);
    store
        .append_many(
            &ended,
            vec![
                kernel(KernelKind::ExecutionStarted),
                kernel(KernelKind::ExecutionCompleted),
            ],
        )
        .await
        .expect("writes the log");
    send(&inbox, &message(name, "1")).await;
    send(&inbox, &message(name, "2")).await;
    send(&inbox, &message(&format!("{name}-2"), "1")).await;
    ended
}

/// The number of inbox rows of `execution` in the file, read raw.
fn rows_of(path: &Path, execution: &str) -> i64 {
    raw(path)
        .query_row(
            "SELECT count(*) FROM inbox WHERE execution_id = ?1",
            [execution],
            |row| row.get(0),
        )
        .expect("counts")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_an_execution_deletes_its_messages_and_only_its() {
    let dir = TempDir::new("inbox-delete");
    let path = dir.file("store.db");
    let store = common::open(&path).await;
    let ended = ended_with_messages(&store, "job").await;
    assert_eq!(rows_of(&path, "job"), 2);
    assert!(store.delete_execution(&ended).await.expect("deletes"));
    assert_eq!(rows_of(&path, "job"), 0, "the messages went with the log");
    assert_eq!(rows_of(&path, "job-2"), 1, "the neighbour's stayed");
    assert_eq!(store.timers().messages(&ended).await.expect("lists"), []);
    // The key is free again, as after a purge.
    send(&store.timers(), &message("job", "1")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_delete_deletes_the_messages_only_when_it_deletes_the_log() {
    let dir = TempDir::new("inbox-delete-if");
    let path = dir.file("store.db");
    let store = common::open(&path).await;
    let ended = ended_with_messages(&store, "job").await;
    let stale = DeleteGuard {
        head: 1,
        parents: Vec::new(),
    };
    assert_eq!(
        store
            .delete_execution_if(&ended, &stale)
            .await
            .expect("answers"),
        GuardedDelete::LogChanged { head: 2 }
    );
    assert_eq!(
        rows_of(&path, "job"),
        2,
        "a refused delete keeps the messages"
    );
    let guard = DeleteGuard {
        head: 2,
        parents: Vec::new(),
    };
    assert_eq!(
        store
            .delete_execution_if(&ended, &guard)
            .await
            .expect("deletes"),
        GuardedDelete::Deleted
    );
    assert_eq!(rows_of(&path, "job"), 0, "the messages went with the log");
    assert_eq!(rows_of(&path, "job-2"), 1, "the neighbour's stayed");
}

/// Plants a row through a raw connection: `payload` as given, the rest
/// well-formed.
fn plant(path: &Path, message_id: &str, payload: &str, sent_at: i64) {
    raw(path)
        .execute(
            "INSERT INTO inbox (execution_id, channel, message_id, payload, sent_at) \
             VALUES ('job', 'c', ?1, ?2, ?3)",
            rusqlite::params![message_id, payload, sent_at],
        )
        .expect("plants a row");
}

/// The permanent backend error inside `result`, as text.
fn permanent<T: std::fmt::Debug>(result: Result<T, StoreError>) -> String {
    match result {
        Err(StoreError::Backend(error)) if !error.retryable => error.to_string(),
        other => panic!("expected a permanent backend error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_that_does_not_read_back_fails_the_listings_naming_it() {
    let cases = [
        ("not-json", "{\"half\":", T0, "payload is not JSON"),
        ("bad-time", "1", -5, "sent_at is not a time"),
    ];
    for (message_id, payload, sent_at, says) in cases {
        let dir = TempDir::new("inbox-unreadable");
        let path = dir.file("store.db");
        let inbox = SqliteTimerStore::open(&path, loomfence_sqlite::SqliteOptions::default())
            .await
            .expect("opens");
        send(&inbox, &message("job", "good")).await;
        plant(&path, message_id, payload, sent_at);
        let channels = vec!["c".to_owned()];
        for error in [
            permanent(inbox.pending(&id("job"), &channels, 10).await),
            permanent(inbox.messages(&id("job")).await),
        ] {
            assert!(error.contains(says), "{error}");
            assert!(
                error.contains(&format!("(\"job\", \"c\", \"{message_id}\")")),
                "names the row: {error}"
            );
        }
        // The store goes on: the row can be marked and purged, and other
        // executions list.
        let planted = MessageKey::new(id("job"), "c", message_id).expect("a key");
        assert!(inbox.mark_consumed(&planted).await.expect("marks"));
        assert_eq!(
            inbox
                .pending(&id("job"), &channels, 10)
                .await
                .expect("lists")
                .len(),
            1,
            "a consumed row is not read by pending"
        );
        assert_eq!(inbox.purge(&id("job")).await.expect("purges"), 2);
        assert_eq!(inbox.messages(&id("job")).await.expect("lists"), []);
    }
}

/// The message and its intent row are one step: when the intent row
/// cannot be written (the timer table is gone from under the store), the
/// send fails and the message is not stored either; once the table is
/// back, the same send stores both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_whose_intent_row_fails_stores_no_message() {
    let dir = TempDir::new("inbox-atomic");
    let path = dir.file("store.db");
    let inbox = SqliteTimerStore::open(&path, loomfence_sqlite::SqliteOptions::default())
        .await
        .expect("opens");
    let sent = message("job", "1");
    raw(&path)
        .execute_batch("ALTER TABLE timers RENAME TO timers_away")
        .expect("moves the timer table away");
    let intent = sent.intent(DEFAULT_INTENT_DELAY_MS).expect("an intent");
    let failed = inbox.send(&sent, &intent).await;
    assert!(
        matches!(&failed, Err(StoreError::Backend(e)) if e.to_string().contains("timers")),
        "{failed:?}"
    );
    assert_eq!(rows_of(&path, "job"), 0, "the message was rolled back");
    raw(&path)
        .execute_batch("ALTER TABLE timers_away RENAME TO timers")
        .expect("brings it back");
    send(&inbox, &sent).await;
    assert_eq!(rows_of(&path, "job"), 1);
    let rows: i64 = raw(&path)
        .query_row(
            "SELECT count(*) FROM timers WHERE execution_id = 'job'",
            [],
            |r| r.get(0),
        )
        .expect("counts");
    assert_eq!(rows, 1, "the intent row with it");
}
