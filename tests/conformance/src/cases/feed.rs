//! The change feed: every committed event once, in an order a cursor can
//! keep, deletes dropped, the open parks indexed, and a wake when
//! something is committed (the contract in `loomfence_core::feed`).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use loomfence_core::feed::{FeedCursor, FeedEntry, MAX_FEED_LIMIT};
use loomfence_core::{ExecutionId, InputError, KernelKind};
use loomfence_store::EventStore;

use crate::Store;
use crate::support::{event, expect_input, id, kernel, park};

/// Reads the feed after `after` to its end, a page of `limit` at a time,
/// checking the cursors move forward; answers the entries.
pub async fn read_to_end(store: &dyn EventStore, after: FeedCursor, limit: u32) -> Vec<FeedEntry> {
    let (mut cursor, mut all) = (after, Vec::new());
    loop {
        let page = store.feed(cursor, limit).await.expect("reads the feed");
        assert!(
            page.len() <= limit as usize,
            "a page holds at most the limit"
        );
        for entry in &page {
            assert!(
                entry.cursor > cursor,
                "cursors move forward: {entry:?} after {cursor}"
            );
            cursor = entry.cursor;
        }
        let short = page.len() < limit as usize;
        all.extend(page);
        if short {
            return all;
        }
    }
}

/// [`read_to_end`] again until it lists at least `count` entries, or 10 s
/// pass. A store's reads may lag behind its commits (PostgreSQL holds the
/// feed below the oldest transaction running anywhere in its cluster, and
/// other tests run beside this one); the contract allows the delay, never
/// a skip, and the callers still compare what is listed exactly.
pub async fn settled(
    store: &dyn EventStore,
    after: FeedCursor,
    limit: u32,
    count: usize,
) -> Vec<FeedEntry> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let entries = read_to_end(store, after, limit).await;
        if entries.len() >= count || Instant::now() >= deadline {
            return entries;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `(execution, sequence)` of each entry.
fn places(entries: &[FeedEntry]) -> Vec<(String, u64)> {
    entries
        .iter()
        .map(|entry| (entry.event.execution_id.to_string(), entry.event.sequence))
        .collect()
}

/// Every event appended is listed once, each execution's in sequence order,
/// the same whatever the page size, and the head is the last one's cursor.
pub async fn the_feed_lists_every_event_once_in_order(store: Store) {
    let (a, b) = (&id("feed-a"), &id("feed-b"));
    assert_eq!(
        store.feed_head().await.expect("reads the head"),
        FeedCursor::START
    );
    assert!(read_to_end(&*store, FeedCursor::START, 10).await.is_empty());
    park(&*store, a).await;
    store.append(b, event("app.one")).await.expect("appends");
    store
        .append(a, kernel(KernelKind::ExecutionResumed))
        .await
        .expect("appends");
    store.append(b, event("app.two")).await.expect("appends");
    let all = settled(&*store, FeedCursor::START, MAX_FEED_LIMIT, 5).await;
    let seen = places(&all);
    assert_eq!(
        seen,
        [
            ("feed-a".to_owned(), 1),
            ("feed-a".to_owned(), 2),
            ("feed-b".to_owned(), 1),
            ("feed-a".to_owned(), 3),
            ("feed-b".to_owned(), 2),
        ],
        "appends made one after another are listed in that order"
    );
    assert_eq!(all[3].event.kind, "EXECUTION_RESUMED", "events come whole");
    assert_eq!(
        places(&settled(&*store, FeedCursor::START, 1, 5).await),
        seen
    );
    assert_eq!(
        places(&settled(&*store, all[1].cursor, 2, 3).await),
        seen[2..],
        "a read after a cursor starts right after it"
    );
    assert_eq!(
        store.feed_head().await.expect("reads the head"),
        all[4].cursor
    );
}

/// Appenders racing a follower: the follower, reading as they write and once
/// more after, sees every event exactly once.
pub async fn a_follower_racing_appenders_skips_nothing(store: Store) {
    const WRITERS: usize = 6;
    const EACH: u64 = 8;
    let writers: Vec<_> = (0..WRITERS)
        .map(|writer| {
            let store = Arc::clone(&store);
            tokio::spawn(async move {
                let id = id(&format!("feed-race-{writer}"));
                for _ in 0..EACH {
                    store.append(&id, event("app.tick")).await.expect("appends");
                }
            })
        })
        .collect();
    let mut seen = Vec::new();
    let mut cursor = FeedCursor::START;
    let mut done = false;
    loop {
        let page = read_to_end(&*store, cursor, 3).await;
        if let Some(last) = page.last() {
            cursor = last.cursor;
        }
        seen.extend(places(&page));
        if done {
            break;
        }
        done = writers.iter().all(tokio::task::JoinHandle::is_finished);
        tokio::task::yield_now().await;
    }
    for writer in writers {
        writer.await.expect("a writer finishes");
    }
    let left = (WRITERS * EACH as usize).saturating_sub(seen.len());
    seen.extend(places(&settled(&*store, cursor, 3, left).await));
    let unique: BTreeSet<_> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "no event is listed twice");
    assert_eq!(seen.len(), WRITERS * EACH as usize, "no event is skipped");
}

/// A deleted log's events drop out of the feed; the head never goes back,
/// and a re-created log's events come after it.
pub async fn deleted_logs_drop_out_and_the_head_never_goes_back(store: Store) {
    let (gone, kept) = (&id("feed-gone"), &id("feed-kept"));
    park(&*store, gone).await;
    store.append(kept, event("app.one")).await.expect("appends");
    store
        .append(gone, kernel(KernelKind::ExecutionCompleted))
        .await
        .expect("appends");
    // The head is read once the four events are readable, so it names them.
    settled(&*store, FeedCursor::START, 10, 4).await;
    let head = store.feed_head().await.expect("reads the head");
    assert!(store.delete_execution(gone).await.expect("deletes"));
    assert_eq!(
        places(&read_to_end(&*store, FeedCursor::START, 10).await),
        [("feed-kept".to_owned(), 1)]
    );
    assert!(
        store.feed_head().await.expect("reads the head") >= head,
        "the head never goes back"
    );
    store
        .append(gone, event("app.again"))
        .await
        .expect("appends");
    let after = settled(&*store, head, 10, 1).await;
    assert_eq!(
        places(&after),
        [("feed-gone".to_owned(), 1)],
        "a re-created log is new to the feed"
    );
}

/// The open parks are the executions whose last answering event is a park,
/// in id order, paged by the last id; a resume, an end or a delete takes
/// one out.
pub async fn open_parks_list_the_parked_executions(store: Store) {
    let ids: Vec<ExecutionId> = ["op-a", "op-b", "op-c", "op-d", "op-e", "op-f"]
        .into_iter()
        .map(id)
        .collect();
    for parked in &ids {
        park(&*store, parked).await;
    }
    store
        .append(&ids[1], kernel(KernelKind::ExecutionResumed))
        .await
        .expect("appends");
    store
        .append(&ids[2], kernel(KernelKind::ExecutionFailed))
        .await
        .expect("appends");
    store
        .append(&ids[3], event("app.noise"))
        .await
        .expect("appends");
    assert!(store.delete_execution(&ids[4]).await.expect("deletes"));
    store
        .append_many(
            &ids[1],
            vec![event("app.step"), kernel(KernelKind::ExecutionSuspended)],
        )
        .await
        .expect("parks again");
    store
        .append(&id("op-running"), kernel(KernelKind::ExecutionStarted))
        .await
        .expect("appends");
    let expected = vec![
        ids[0].clone(),
        ids[1].clone(),
        ids[3].clone(),
        ids[5].clone(),
    ];
    assert_eq!(store.open_parks(None, 100).await.expect("lists"), expected);
    let mut paged = Vec::new();
    let mut after: Option<ExecutionId> = None;
    loop {
        let page = store.open_parks(after.as_ref(), 1).await.expect("lists");
        let Some(last) = page.last().cloned() else {
            break;
        };
        paged.extend(page);
        after = Some(last);
    }
    assert_eq!(paged, expected, "paging by the last id");
}

/// Limits outside 1 to `MAX_FEED_LIMIT` are refused, and the store still
/// answers afterwards.
pub async fn feed_limits_are_checked(store: Store) {
    let one = &id("feed-limit");
    park(&*store, one).await;
    for limit in [0, MAX_FEED_LIMIT + 1, u32::MAX] {
        let error = expect_input(store.feed(FeedCursor::START, limit).await, "feed limit");
        assert!(
            matches!(error, InputError::Limit { .. }),
            "feed limit {limit}: {error:?}"
        );
        let error = expect_input(store.open_parks(None, limit).await, "open-parks limit");
        assert!(
            matches!(error, InputError::Limit { .. }),
            "parks limit {limit}: {error:?}"
        );
    }
    assert_eq!(settled(&*store, FeedCursor::START, 1, 2).await.len(), 2);
    assert_eq!(
        store.open_parks(None, 1).await.expect("lists"),
        std::slice::from_ref(one)
    );
}

/// A wait behind the head returns at once; a wait at the head returns once
/// something is committed.
pub async fn a_wait_returns_once_something_is_committed(store: Store) {
    let one = &id("feed-wait");
    store.append(one, event("app.one")).await.expect("appends");
    // Behind the head once the event is readable.
    settled(&*store, FeedCursor::START, 10, 1).await;
    let bound = Duration::from_secs(10);
    tokio::time::timeout(bound, store.wait_for_feed(FeedCursor::START))
        .await
        .expect("a wait behind the head returns")
        .expect("waits");
    let head = store.feed_head().await.expect("reads the head");
    let waiter = {
        let store = Arc::clone(&store);
        tokio::spawn(async move { store.wait_for_feed(head).await })
    };
    tokio::time::sleep(Duration::from_millis(50)).await;
    store.append(one, event("app.two")).await.expect("appends");
    tokio::time::timeout(bound, waiter)
        .await
        .expect("the wait ends once an event is committed")
        .expect("the waiter runs")
        .expect("waits");
}
