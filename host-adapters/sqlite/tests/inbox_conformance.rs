//! The inbox kit against SQLite, unchanged: on a file (the timer handle of
//! an event store, as a host keeping everything in one database has it),
//! on `:memory:`, and behind the forwarding decorator.

use std::sync::Arc;

use loomfence_conformance::inbox::{ALL, Inbox, forwarded, run_all};
use loomfence_sqlite::{SqliteEventStore, SqliteOptions, SqliteTimerStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_inbox_on_a_file_passes_the_whole_inbox_kit() {
    let dir =
        std::env::temp_dir().join(format!("loomfence-sqlite-inbox-kit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let mut n = 0;
    let report = run_all("sqlite-file", || {
        n += 1;
        let path = dir.join(format!("case-{n}.db"));
        async move {
            let events = SqliteEventStore::open(&path, SqliteOptions::default())
                .await
                .expect("opens");
            Arc::new(events.timers()) as Inbox
        }
    })
    .await;
    assert_eq!(report.passed, ALL.len());
    std::fs::remove_dir_all(&dir).expect("cleans up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_inbox_in_memory_passes_the_whole_inbox_kit() {
    let report = run_all("sqlite-memory", || async {
        Arc::new(SqliteTimerStore::open_in_memory().await.expect("opens")) as Inbox
    })
    .await;
    assert_eq!(report.passed, ALL.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_inbox_behind_the_forwarding_decorator_passes_the_whole_inbox_kit() {
    let report = run_all("sqlite-forwarded", || async {
        forwarded(Arc::new(
            SqliteTimerStore::open_in_memory().await.expect("opens"),
        ))
    })
    .await;
    assert_eq!(report.passed, ALL.len());
}
