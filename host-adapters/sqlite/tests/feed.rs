//! The change feed on a file: a file of schema version 1 (before the feed)
//! gains it on open, its open parks indexed and its feed starting empty; a
//! delete of the newest log never lets a position be handed out again, even
//! across a reopen; two stores writing one file (as two processes do) hand
//! out every position once; a `feed` value the store cannot have written
//! fails the read with a permanent error naming the row (a value below 1
//! sits before every cursor, as the events from before the feed do, and is
//! never listed).

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use common::files::{pragma, raw};
use common::{TempDir, id, kernel};
use loomfence_conformance::cases::feed::read_to_end;
use loomfence_conformance::support::event;
use loomfence_core::KernelKind;
use loomfence_core::feed::{FeedCursor, MAX_FEED_LIMIT};
use loomfence_sqlite::{SCHEMA_VERSION, SqliteEventStore, SqliteOptions};
use loomfence_store::{EventStore, StoreError};
use rusqlite::params;

/// The tables of schema version 1, exactly as that build created them.
const VERSION_1: &str = "
    CREATE TABLE events (
        execution_id TEXT NOT NULL,
        sequence INTEGER NOT NULL,
        kind TEXT NOT NULL,
        payload TEXT NOT NULL,
        metadata TEXT NOT NULL,
        at INTEGER NOT NULL,
        PRIMARY KEY (execution_id, sequence)
    ) WITHOUT ROWID;
    CREATE TABLE fences (
        execution_id TEXT PRIMARY KEY,
        token INTEGER NOT NULL
    ) WITHOUT ROWID;
    PRAGMA user_version = 1;
";

/// The logs the old file holds: `old-parked` parked at 2, `old-resumed`
/// resumed, `old-ended` ended, `old-child` parked at 1.
const OLD_ROWS: &[(&str, i64, &str)] = &[
    ("old-parked", 1, "EXECUTION_STARTED"),
    ("old-parked", 2, "EXECUTION_SUSPENDED"),
    ("old-parked", 3, "app.noise"),
    ("old-resumed", 1, "EXECUTION_SUSPENDED"),
    ("old-resumed", 2, "EXECUTION_RESUMED"),
    ("old-ended", 1, "EXECUTION_SUSPENDED"),
    ("old-ended", 2, "EXECUTION_FAILED"),
    ("old-child", 1, "EXECUTION_SUSPENDED"),
];

/// Writes a file of schema version 1 holding [`OLD_ROWS`].
fn version_1_file(path: &Path) {
    let conn = rusqlite::Connection::open(path).expect("creates the file");
    conn.execute_batch("PRAGMA journal_mode = WAL")
        .expect("WAL, as a store's file is");
    conn.execute_batch(VERSION_1).expect("the old tables");
    for (execution, sequence, kind) in OLD_ROWS {
        conn.execute(
            "INSERT INTO events VALUES (?1, ?2, ?3, '{}', '{}', 5)",
            params![execution, sequence, kind],
        )
        .expect("an old row");
    }
}

/// Every open park, one page.
async fn open_parks(store: &SqliteEventStore) -> Vec<String> {
    store
        .open_parks(None, MAX_FEED_LIMIT)
        .await
        .expect("lists the open parks")
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// `(execution, sequence, position)` of the whole feed.
async fn whole_feed(store: &SqliteEventStore) -> Vec<(String, u64, u64)> {
    read_to_end(store, FeedCursor::START, MAX_FEED_LIMIT)
        .await
        .into_iter()
        .map(|entry| {
            (
                entry.event.execution_id.to_string(),
                entry.event.sequence,
                entry.cursor.position(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_file_gains_the_feed_with_its_open_parks_indexed() {
    let dir = TempDir::new("feed-v1");
    let path = dir.file("v1.db");
    version_1_file(&path);

    let store = common::open(&path).await;
    assert_eq!(pragma(&path, "user_version"), SCHEMA_VERSION.to_string());
    assert_eq!(
        open_parks(&store).await,
        ["old-child", "old-parked"],
        "the migration indexed what the old logs leave parked"
    );
    assert_eq!(
        store.feed_head().await.expect("reads the head"),
        FeedCursor::START
    );
    assert!(
        whole_feed(&store).await.is_empty(),
        "the feed starts at the migration"
    );
    assert_eq!(
        store
            .read_range(&id("old-parked"), 1, None)
            .await
            .expect("reads an old log")
            .len(),
        3
    );

    // New appends, on old logs and new, enter the feed in order and keep
    // the index.
    store
        .append(&id("old-parked"), kernel(KernelKind::ExecutionResumed))
        .await
        .expect("resumes an old park");
    common::park(&store, &id("new-parked")).await;
    store
        .append(&id("old-ended"), event("app.late"))
        .await
        .expect("appends after an end");
    assert_eq!(
        whole_feed(&store).await,
        [
            ("old-parked".to_owned(), 4, 1),
            ("new-parked".to_owned(), 1, 2),
            ("new-parked".to_owned(), 2, 3),
            ("old-ended".to_owned(), 3, 4),
        ]
    );
    assert_eq!(open_parks(&store).await, ["new-parked", "old-child"]);
    drop(store);

    // Reopening migrates nothing again.
    let store = common::open(&path).await;
    assert_eq!(open_parks(&store).await, ["new-parked", "old-child"]);
    assert_eq!(whole_feed(&store).await.len(), 4);
    assert_eq!(
        store.feed_head().await.expect("reads the head"),
        FeedCursor::new(0, 4).expect("a cursor")
    );
}

/// Two openers of one version-1 file at once (two connections, as two
/// processes have) both boot: the migration and the version it raises
/// commit together, so the second finds the file migrated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_openers_of_one_version_1_file_both_boot() {
    let dir = TempDir::new("feed-v1-race");
    for round in 0..10 {
        let path = dir.file(&format!("race-{round}.db"));
        version_1_file(&path);
        let (first, second) = tokio::join!(
            SqliteEventStore::open(&path, SqliteOptions::default()),
            SqliteEventStore::open(&path, SqliteOptions::default()),
        );
        let (first, second) = (first.expect("opens"), second.expect("opens"));
        assert_eq!(open_parks(&first).await, ["old-child", "old-parked"]);
        common::park(&second, &id("new")).await;
        assert_eq!(
            whole_feed(&first).await,
            [("new".to_owned(), 1, 1), ("new".to_owned(), 2, 2)]
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_newest_log_never_lends_its_positions_again_even_after_a_reopen() {
    let dir = TempDir::new("feed-delete");
    let path = dir.file("delete.db");
    let (kept, newest) = (&id("kept"), &id("newest"));
    {
        let store = common::open(&path).await;
        store.append(kept, event("app.one")).await.expect("appends");
        common::park(&store, newest).await;
        let head = store.feed_head().await.expect("reads the head");
        assert_eq!(head.position(), 3);
        assert!(store.delete_execution(newest).await.expect("deletes"));
        assert_eq!(store.feed_head().await.expect("reads the head"), head);
        assert!(
            open_parks(&store).await.is_empty(),
            "a delete takes its park out"
        );
    }
    let store = common::open(&path).await;
    assert_eq!(
        store.feed_head().await.expect("reads the head").position(),
        3,
        "the mark outlives the store"
    );
    store
        .append(newest, event("app.again"))
        .await
        .expect("re-creates the log");
    assert_eq!(
        whole_feed(&store).await,
        [("kept".to_owned(), 1, 1), ("newest".to_owned(), 1, 4)]
    );
    // Deleting everything keeps the head too.
    assert!(store.delete_execution(kept).await.expect("deletes"));
    assert!(store.delete_execution(newest).await.expect("deletes"));
    assert_eq!(
        store.feed_head().await.expect("reads the head").position(),
        4
    );
    assert!(whole_feed(&store).await.is_empty());
}

/// Two stores on one file have a writer each, as two processes do: their
/// appends interleave under SQLite's write lock and every position is
/// handed out once, in the order the feed lists.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_writers_on_one_file_hand_out_every_position_once() {
    const EACH: usize = 40;
    let dir = TempDir::new("feed-two");
    let path = dir.file("two.db");
    let first = common::open(&path).await;
    let second = SqliteEventStore::open(&path, SqliteOptions::default())
        .await
        .expect("opens a second time");
    let write = |store: SqliteEventStore, name: &'static str| {
        tokio::spawn(async move {
            for _ in 0..EACH {
                store
                    .append(&id(name), event("app.tick"))
                    .await
                    .expect("appends");
            }
        })
    };
    let (a, b) = (
        write(first.clone(), "from-first"),
        write(second, "from-second"),
    );
    a.await.expect("the first writer finishes");
    b.await.expect("the second writer finishes");
    let feed = whole_feed(&first).await;
    assert_eq!(feed.len(), 2 * EACH);
    let positions: BTreeSet<u64> = feed.iter().map(|(_, _, position)| *position).collect();
    assert_eq!(positions.len(), 2 * EACH, "no position twice");
    for name in ["from-first", "from-second"] {
        let sequences: Vec<u64> = feed
            .iter()
            .filter(|(execution, ..)| execution == name)
            .map(|(_, sequence, _)| *sequence)
            .collect();
        assert_eq!(
            sequences,
            (1..=EACH as u64).collect::<Vec<_>>(),
            "each log in sequence order"
        );
    }
}

/// A permanent backend error whose message names `needle`.
fn assert_corrupt<T: std::fmt::Debug>(result: Result<T, StoreError>, needle: &str) {
    match result {
        Err(StoreError::Backend(error)) => {
            assert!(!error.retryable, "corruption is not retryable: {error:?}");
            let message = error.source.to_string();
            assert!(message.contains("corrupt row"), "{message}");
            assert!(message.contains(needle), "{message} names {needle}");
        }
        other => panic!("expected a permanent backend error, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feed_value_the_store_cannot_have_written_fails_with_a_typed_error() {
    let dir = TempDir::new("feed-hostile");
    let path = dir.file("hostile.db");
    let one = &id("hostile");
    let store = common::open(&path).await;
    common::park(&store, one).await;

    for (bad, needle) in [
        ("'seven'", "Text"),
        ("1.5", "Real"),
        ("x'00'", "Blob"),
        ("9007199254740992", "out of range"),
    ] {
        raw(&path)
            .execute_batch(&format!(
                "UPDATE events SET feed = {bad} WHERE execution_id = 'hostile' AND sequence = 2"
            ))
            .expect("writes a hostile value");
        assert_corrupt(store.feed(FeedCursor::START, 10).await, "(\"hostile\", 2)");
        assert_corrupt(store.feed(FeedCursor::START, 10).await, needle);
    }
    // A largest value that is not a position stops the head and the
    // appends too, rather than numbering after it.
    assert_corrupt(store.feed_head().await, "largest feed position");
    assert_corrupt(
        store.append(one, event("app.more")).await,
        "largest feed position",
    );
    raw(&path)
        .execute_batch("UPDATE events SET feed = 2 WHERE execution_id = 'hostile' AND sequence = 2")
        .expect("repairs the row");
    assert_eq!(whole_feed(&store).await.len(), 2);
    assert_eq!(
        store.feed_head().await.expect("reads the head").position(),
        2
    );

    // The open-parks index: an id that is not text, or not a valid id.
    for (bad, needle) in [
        ("x'ff'", "not text"),
        ("'a' || char(0) || 'b'", "not a valid id"),
    ] {
        let conn = raw(&path);
        conn.execute_batch("DELETE FROM open_parks WHERE execution_id <> 'hostile'")
            .expect("clears the hostile rows");
        conn.execute_batch(&format!("INSERT INTO open_parks VALUES ({bad}, 1)"))
            .expect("writes a hostile row");
        assert_corrupt(store.open_parks(None, 10).await, needle);
    }
}
