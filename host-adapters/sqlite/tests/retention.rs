//! Retention on SQLite beyond the kit: the guarded delete against a park
//! written by another connection to the same file, the listing over a file
//! of 10,000 executions, and the listing's index on a file an earlier build
//! wrote. (The listing's query plan is asserted next to its SQL, in
//! `src/retention_ops/tests.rs`, which can see the statement.)

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{AT, TempDir, files, id, kernel};
use loomfence_conformance::cases::retention::{family, guard_of, pages};
use loomfence_core::{
    ExecutionId, KernelKind, NewEvent,
    park::{Wait, park_payload},
    retention::{DeleteGuard, Ended, GuardedDelete, pin_parked_children},
};
use loomfence_sqlite::{Durability, SCHEMA_VERSION, SqliteEventStore, SqliteOptions};
use loomfence_store::{EventStore, StoreError};
use rusqlite::Connection;

/// Executions in the large listing.
const EXECUTIONS: usize = 10_000;

/// The large listing's page size.
const PAGE: u32 = 1_000;

/// The listing's index, as the store names it.
const ENDED_INDEX: &str = "events_ended";

/// Opens the store at `path` with `busy_timeout`.
async fn open_waiting(path: &Path, busy_timeout: Duration) -> SqliteEventStore {
    SqliteEventStore::open(
        path,
        SqliteOptions {
            busy_timeout,
            ..SqliteOptions::default()
        },
    )
    .await
    .expect("opens")
}

/// A finished child of `parent`, and `parent` running (started, one step):
/// what a sweep finds before the race. Returns the guard the sweep would
/// delete under, after checking (as it does) that the parent does not pin
/// the child yet.
async fn finished_child_of_a_running_parent(
    store: &SqliteEventStore,
    child: &ExecutionId,
    parent: &ExecutionId,
) -> DeleteGuard {
    let (head, seen) = family(store, parent, child).await;
    let parent_log = store.read_range(parent, 1, None).await.expect("reads");
    assert!(
        !pin_parked_children(child, &parent_log).expect("a readable parent"),
        "the parent does not wait on the child yet"
    );
    guard_of(head, &[(parent, seen)])
}

/// Begins a write transaction on a second connection to the file and
/// appends `kind` (with `payload`) to `parent`'s log in it, as the store's
/// own append writes a row, without committing: the file's write lock stays
/// with this connection until the caller commits or rolls back.
fn uncommitted_append(path: &Path, parent: &ExecutionId, kind: &str, payload: &str) -> Connection {
    let conn = files::raw(path);
    conn.execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    conn.execute(
        "INSERT INTO events (execution_id, sequence, kind, payload, metadata, at) \
         SELECT ?1, COALESCE(MAX(sequence), 0) + 1, ?2, ?3, '{}', ?4 FROM events \
         WHERE execution_id = ?1",
        rusqlite::params![parent.as_str(), kind, payload, AT],
    )
    .expect("appends inside the open transaction");
    conn
}

/// The race of retention's window (design: retention), on one file with two connections: the
/// sweep's guarded delete of a finished child is issued while connection B
/// holds the write lock with `kind` appended to the parent, uncommitted.
/// The delete must wait for the lock (it cannot finish while B holds it),
/// and is decided after B commits.
async fn delete_racing_a_parent_append(label: &str, kind: &str, payload: &str) -> Race {
    let dir = TempDir::new(label);
    let path = dir.file("store.db");
    // Long enough that the delete never gives up waiting for B in this test.
    let store = open_waiting(&path, Duration::from_secs(60)).await;
    let (child, parent) = (id("child"), id("parent"));
    let guard = finished_child_of_a_running_parent(&store, &child, &parent).await;
    let before = store
        .read_range(&child, 1, None)
        .await
        .expect("reads")
        .len();

    let b = uncommitted_append(&path, &parent, kind, payload);
    let delete = tokio::spawn({
        let store = store.clone();
        let child = child.clone();
        async move { store.delete_execution_if(&child, &guard).await }
    });
    // Gives the writer thread time to reach its BEGIN IMMEDIATE and wait
    // in the busy handler: only that makes the interleaving the one named
    // above likely. The answer asserted is the same if the delete starts
    // later, and it cannot finish before B commits either way: B holds the
    // lock, and the busy timeout is far off.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !delete.is_finished(),
        "the guarded delete finished while B held the write lock"
    );
    b.execute_batch("COMMIT").expect("B commits");
    let answer = delete
        .await
        .expect("the delete task")
        .expect("the delete answers");
    let after = store
        .read_range(&child, 1, None)
        .await
        .expect("reads")
        .len();
    Race {
        answer,
        before,
        after,
        store,
        _dir: dir,
    }
}

/// How [`delete_racing_a_parent_append`] ended.
struct Race {
    /// The guarded delete's answer.
    answer: GuardedDelete,
    /// The child's log length before the race.
    before: usize,
    /// And after it.
    after: usize,
    /// The store, still open on the file.
    store: SqliteEventStore,
    /// The file's directory, removed once the store is done with.
    _dir: TempDir,
}

/// B parks the parent on the child (an `EXECUTION_SUSPENDED` with a
/// `CHILD_DONE` wait naming it) while the sweep's delete of the child is in
/// flight: the delete waits for B's commit, then sees the parent moved and
/// keeps the child, which the parent now waits on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_park_committed_while_the_guarded_delete_waits_keeps_the_child() {
    let child = id("child");
    let parent = id("parent");
    let park = serde_json::to_string(&park_payload(&[Wait::Child(child.clone())]))
        .expect("a park payload");
    let Race {
        answer,
        before,
        after,
        store,
        _dir,
    } = delete_racing_a_parent_append("park-race", KernelKind::ExecutionSuspended.as_str(), &park)
        .await;
    assert_eq!(
        answer,
        GuardedDelete::ParentMoved {
            parent: parent.clone()
        },
        "the park B committed while the delete waited must refuse it"
    );
    assert_eq!((before, after), (2, 2), "the child's log is kept whole");
    let parent_log = store.read_range(&parent, 1, None).await.expect("reads");
    assert!(
        pin_parked_children(&child, &parent_log).expect("a readable park"),
        "the parent is parked on the child it kept"
    );
}

/// The same race with an application event of the parent instead of a
/// park: it cannot change the pin, so the delete goes ahead once B commits.
/// (The refusal above is the parent check's, not any write's.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_step_committed_while_the_guarded_delete_waits_does_not_keep_the_child() {
    let race = delete_racing_a_parent_append("step-race", "app.step", "{}").await;
    let (answer, before, after) = (race.answer, race.before, race.after);
    assert_eq!(answer, GuardedDelete::Deleted);
    assert_eq!((before, after), (2, 0), "the child's log is gone");
}

/// A guarded delete that cannot get the write lock within the busy timeout
/// fails retryably and changes nothing; once the lock is free it deletes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_delete_kept_from_the_write_lock_fails_retryably_and_changes_nothing() {
    let dir = TempDir::new("busy-delete");
    let path = dir.file("store.db");
    let store = open_waiting(&path, Duration::from_millis(50)).await;
    let (child, parent) = (id("child"), id("parent"));
    let guard = finished_child_of_a_running_parent(&store, &child, &parent).await;
    let before = common::Witness::capture(&store, &child).await;

    let b = files::raw(&path);
    b.execute_batch("BEGIN IMMEDIATE")
        .expect("takes the write lock");
    let refused = store.delete_execution_if(&child, &guard).await;
    assert!(
        matches!(&refused, Err(e @ StoreError::Backend(_)) if e.is_retryable()),
        "expected a retryable busy error, got {refused:?}"
    );
    b.execute_batch("ROLLBACK").expect("B lets go");
    before
        .assert_unchanged(&store, "a delete that never got the lock")
        .await;
    assert_eq!(
        store
            .delete_execution_if(&child, &guard)
            .await
            .expect("deletes"),
        GuardedDelete::Deleted
    );
}

/// The ids of the large listing: numbered, written out of order.
fn large_id(n: usize) -> ExecutionId {
    id(&format!("exec-{n:05}"))
}

/// A file with [`EXECUTIONS`] executions, written through the store
/// (concurrently, so the writer's group commits keep it quick): each
/// started, every even one ended at `AT + n`, every third one a step
/// longer; plus fence rows without a log, which a listing never reports.
async fn large_file(path: &Path) -> SqliteEventStore {
    let store = SqliteEventStore::open(
        path,
        SqliteOptions {
            durability: Durability::Normal,
            ..SqliteOptions::default()
        },
    )
    .await
    .expect("opens");
    let mut writes = tokio::task::JoinSet::new();
    for k in 0..EXECUTIONS {
        let n = (k * 7_919) % EXECUTIONS;
        let store = store.clone();
        writes.spawn(async move {
            let mut batch = vec![kernel(KernelKind::ExecutionStarted)];
            if n.is_multiple_of(3) {
                batch.push(NewEvent::new("app.step", AT));
            }
            if n.is_multiple_of(2) {
                let at = AT + i64::try_from(n).expect("small");
                batch.push(NewEvent::kernel(KernelKind::ExecutionCompleted, at));
            }
            store.append_many(&large_id(n), batch).await.map(drop)
        });
    }
    while let Some(written) = writes.join_next().await {
        written.expect("the write task").expect("appends");
    }
    for fenced in ["exec-00000-fence-only", "exec-99999-fence-only"] {
        store.acquire_fence(&id(fenced)).await.expect("acquires");
    }
    store
}

/// Pages of [`PAGE`] list a file of [`EXECUTIONS`] executions exactly once,
/// in byte order, each with its head and end, and stop on an empty page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_ten_thousand_executions_on_a_file_pages_by_a_thousand() {
    let dir = TempDir::new("large-listing");
    let path = dir.file("store.db");
    let store = large_file(&path).await;

    let started = Instant::now();
    let pages = pages(&store, PAGE).await;
    let took = started.elapsed();
    println!(
        "listed {EXECUTIONS} executions in {} pages of {PAGE} (and the empty one) in {took:.2?}",
        pages.len()
    );

    assert_eq!(pages.len(), EXECUTIONS / PAGE as usize);
    assert!(pages.iter().all(|page| page.len() == PAGE as usize));
    let listed: Vec<_> = pages.into_iter().flatten().collect();
    assert_eq!(listed.len(), EXECUTIONS);
    assert!(
        listed
            .windows(2)
            .all(|pair| pair[0].execution_id < pair[1].execution_id),
        "ascending, so no id is listed twice"
    );
    let ids: BTreeSet<ExecutionId> = listed.iter().map(|s| s.execution_id.clone()).collect();
    assert_eq!(ids, (0..EXECUTIONS).map(large_id).collect());
    for (n, summary) in listed.iter().enumerate() {
        let head = 1 + u64::from(n.is_multiple_of(3)) + u64::from(n.is_multiple_of(2));
        let ended = n.is_multiple_of(2).then(|| Ended {
            sequence: head,
            at: AT + i64::try_from(n).expect("small"),
        });
        assert_eq!(
            (summary.head, summary.ended),
            (head, ended),
            "{:?}",
            summary.execution_id
        );
    }
}

/// The listing's index, as the file's catalog records it: `None` when
/// absent.
fn ended_index(path: &Path) -> Option<String> {
    files::raw(path)
        .query_row(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?1",
            [ENDED_INDEX],
            |row| row.get(0),
        )
        .ok()
}

/// A file written before the listing's index existed (the index dropped
/// behind the store's back stands in for it) gets the index on the next
/// open, in the opening transaction, with the version unchanged and every
/// row kept; the listing then answers from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opening_a_file_without_the_listing_index_creates_it_and_keeps_the_version() {
    let dir = TempDir::new("ended-index");
    let path = dir.file("store.db");
    let store = common::open(&path).await;
    let done = id("done");
    store
        .append_many(
            &done,
            vec![
                kernel(KernelKind::ExecutionStarted),
                kernel(KernelKind::ExecutionFailed),
            ],
        )
        .await
        .expect("appends");
    let before = common::Witness::capture(&store, &done).await;
    drop(store);
    let created = ended_index(&path).expect("a new file has the index");
    for kind in [
        KernelKind::ExecutionCompleted,
        KernelKind::ExecutionFailed,
        KernelKind::ExecutionCancelled,
        KernelKind::ExecutionContinued,
    ] {
        assert!(created.contains(kind.as_str()), "{created}");
    }
    files::raw(&path)
        .execute_batch(&format!("DROP INDEX {ENDED_INDEX}"))
        .expect("drops the index");
    assert_eq!(ended_index(&path), None);

    let reopened = common::open(&path).await;
    assert_eq!(ended_index(&path), Some(created), "recreated as it was");
    assert_eq!(
        files::pragma(&path, "user_version"),
        SCHEMA_VERSION.to_string()
    );
    before.assert_unchanged(&reopened, "reopening").await;
    let page = reopened.list_executions(None, 10).await.expect("lists");
    assert_eq!(page.len(), 1);
    assert_eq!(
        page[0].ended,
        Some(Ended {
            sequence: 2,
            at: AT
        })
    );
    assert_eq!(files::integrity(&path), "ok");
}
