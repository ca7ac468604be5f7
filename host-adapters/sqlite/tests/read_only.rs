//! Opening read-only: the reads a report makes work, every write is refused
//! with a typed error, a file that would need a migration is refused, and
//! the file's bytes are the same afterwards whatever happened.

mod common;

use common::files::{bytes, raw, side_files};
use common::{TempDir, kernel};
use loomfence_core::KernelKind;
use loomfence_core::timer::TimerRow;
use loomfence_sqlite::{OpenError, ReadOnlyStore, SqliteEventStore, SqliteOptions};
use loomfence_store::{EventStore, StoreError, TimerStore};

/// A closed store holding `done` (started, completed) and `running`
/// (started).
async fn kept_store(dir: &TempDir) -> std::path::PathBuf {
    let path = dir.file("kept.db");
    let store = common::open(&path).await;
    let done = common::id("done");
    store
        .append_many(
            &done,
            vec![
                kernel(KernelKind::ExecutionStarted),
                kernel(KernelKind::ExecutionCompleted),
            ],
        )
        .await
        .expect("appends");
    store
        .append(&common::id("running"), kernel(KernelKind::ExecutionStarted))
        .await
        .expect("appends");
    drop(store);
    path
}

/// Whether `error` is a write refused by a read-only store.
fn refused_read_only(error: &StoreError) -> bool {
    let StoreError::Backend(backend) = error else {
        return false;
    };
    std::error::Error::source(backend)
        .and_then(|source| source.downcast_ref::<ReadOnlyStore>())
        .is_some()
}

/// Opens `path` read-only and expects the refusal `check` describes, with
/// the file unchanged.
async fn refused(path: &std::path::Path, check: impl Fn(&OpenError) -> bool) {
    let before = bytes(path);
    match SqliteEventStore::open_read_only(path, SqliteOptions::default()).await {
        Err(e) if check(&e) => {}
        Err(other) => panic!("{}: unexpected refusal {other:?}", path.display()),
        Ok(_) => panic!("{}: opened read-only", path.display()),
    }
    assert_eq!(bytes(path), before, "the file is unchanged");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_work_writes_are_refused_and_the_bytes_stay() {
    let dir = TempDir::new("read-only");
    let path = kept_store(&dir).await;
    let before = bytes(&path);
    let store = SqliteEventStore::open_read_only(&path, SqliteOptions::default())
        .await
        .unwrap();
    // What a retention dry run reads: the listing, the logs.
    let listed = store.list_executions(None, 10).await.unwrap();
    let ids: Vec<&str> = listed.iter().map(|s| s.execution_id.as_str()).collect();
    assert_eq!(ids, ["done", "running"]);
    assert!(listed[0].ended.is_some() && listed[1].ended.is_none());
    let done = common::id("done");
    assert_eq!(store.read_range(&done, 1, None).await.unwrap().len(), 2);
    let logs = store
        .read_logs(&[done.clone(), common::id("running")])
        .await
        .unwrap();
    assert_eq!(logs.iter().map(Vec::len).collect::<Vec<_>>(), [2, 1]);

    // Every kind of write, each refused with the typed error.
    let append = store
        .append(&done, kernel(KernelKind::StepStarted))
        .await
        .unwrap_err();
    assert!(refused_read_only(&append), "{append:?}");
    assert!(append.to_string().contains("read-only"), "{append}");
    let acquire = store.acquire_fence(&done).await.unwrap_err();
    assert!(refused_read_only(&acquire), "{acquire:?}");
    let delete = store.delete_execution(&done).await.unwrap_err();
    assert!(refused_read_only(&delete), "{delete:?}");
    let timers = store.timers();
    let schedule = timers
        .schedule(&TimerRow::wake(done.clone(), 5))
        .await
        .unwrap_err();
    assert!(refused_read_only(&schedule), "{schedule:?}");
    // The reads still answer as before.
    assert_eq!(store.read_range(&done, 1, None).await.unwrap().len(), 2);
    drop(timers);
    drop(store);
    assert_eq!(bytes(&path), before, "the database's bytes are unchanged");
    // And a writer opens it as before.
    let writer = common::open(&path).await;
    assert_eq!(writer.read_range(&done, 1, None).await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_that_needs_a_migration_is_refused_not_migrated() {
    let dir = TempDir::new("read-only-old");
    let path = kept_store(&dir).await;

    // An older schema version.
    raw(&path).pragma_update(None, "user_version", 1).unwrap();
    refused(&path, |e| {
        matches!(e, OpenError::NeedsMigration { needs, .. } if needs.contains("schema version 1"))
            && e.to_string().contains("open it read-write once")
    })
    .await;
    raw(&path).pragma_update(None, "user_version", 2).unwrap();

    // The current version, without an index this build adds on open.
    raw(&path).execute_batch("DROP INDEX events_ended").unwrap();
    refused(&path, |e| {
        matches!(e, OpenError::NeedsMigration { needs, .. } if needs == "no index events_ended")
    })
    .await;
    // A writer's open puts it back; then the read-only open works.
    drop(common::open(&path).await);
    let store = SqliteEventStore::open_read_only(&path, SqliteOptions::default())
        .await
        .unwrap();
    assert_eq!(store.list_executions(None, 10).await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_writer_refuses_is_refused_and_nothing_is_created() {
    let dir = TempDir::new("read-only-refused");
    // A missing file is not created.
    let missing = dir.file("missing.db");
    assert!(
        SqliteEventStore::open_read_only(&missing, SqliteOptions::default())
            .await
            .is_err()
    );
    assert!(!missing.exists(), "a read-only open creates nothing");

    // An empty database: no schema to read.
    let empty = dir.file("empty.db");
    std::fs::write(&empty, b"").unwrap();
    refused(&empty, |e| matches!(e, OpenError::NeedsMigration { .. })).await;

    // Another application's database.
    let foreign = dir.file("foreign.db");
    std::fs::write(&foreign, b"").unwrap();
    raw(&foreign)
        .execute_batch("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('x');")
        .unwrap();
    refused(&foreign, |e| matches!(e, OpenError::Foreign { .. })).await;

    // A text file.
    let text = dir.file("notes.txt");
    std::fs::write(
        &text,
        "not a database, just some text long enough\n".repeat(20),
    )
    .unwrap();
    refused(&text, |e| matches!(e, OpenError::NotADatabase { .. })).await;

    // A newer loomfence.
    let newer_dir = TempDir::new("read-only-newer");
    let newer = kept_store(&newer_dir).await;
    raw(&newer).pragma_update(None, "user_version", 99).unwrap();
    refused(&newer, |e| {
        matches!(e, OpenError::NewerSchema { found: 99, .. })
    })
    .await;

    // In memory there is nothing to read.
    assert!(matches!(
        SqliteEventStore::open_read_only(":memory:", SqliteOptions::default()).await,
        Err(OpenError::NeedsMigration { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_store_is_read_without_making_a_wal_or_shm() {
    let dir = TempDir::new("read-only-closed");
    let path = kept_store(&dir).await;
    assert!(side_files(&path).is_empty(), "a closed store has none");
    let store = SqliteEventStore::open_read_only(&path, SqliteOptions::default())
        .await
        .unwrap();
    assert_eq!(store.list_executions(None, 10).await.unwrap().len(), 2);
    assert!(side_files(&path).is_empty(), "none while it reads");
    drop(store);
    assert!(side_files(&path).is_empty(), "none after");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beside_a_live_writer_every_commit_is_read() {
    let dir = TempDir::new("read-only-live");
    let path = kept_store(&dir).await;
    let writer = common::open(&path).await;
    let late = common::id("late");
    writer
        .append(&late, kernel(KernelKind::ExecutionStarted))
        .await
        .unwrap();
    // The writer's commits are in its WAL, not yet in the file.
    let reader = SqliteEventStore::open_read_only(&path, SqliteOptions::default())
        .await
        .unwrap();
    assert_eq!(reader.read_range(&late, 1, None).await.unwrap().len(), 1);
    writer
        .append(&late, kernel(KernelKind::StepStarted))
        .await
        .unwrap();
    assert_eq!(
        reader.read_range(&late, 1, None).await.unwrap().len(),
        2,
        "a commit made after the open is read too"
    );
    assert_eq!(reader.list_executions(None, 10).await.unwrap().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_with_uri_characters_and_a_double_slash_is_read() {
    let dir = TempDir::new("read-only-odd");
    let odd = dir.file("a b%3F?#.db");
    let path = kept_store(&dir).await;
    std::fs::rename(&path, &odd).unwrap();
    let doubled = std::path::PathBuf::from(format!("/{}", odd.display()));
    for path in [&odd, &doubled] {
        let store = SqliteEventStore::open_read_only(path, SqliteOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_eq!(store.list_executions(None, 10).await.unwrap().len(), 2);
    }
}
