//! The timer kit against SQLite, unchanged: on a file and on `:memory:`.
//! On the file, each case gets the timer handle of an event store, as a
//! host keeping both in one database does.

use std::sync::Arc;

use loomfence_conformance::timers::{ALL, Timers, run_all};
use loomfence_sqlite::{SqliteEventStore, SqliteOptions, SqliteTimerStore};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_timers_on_a_file_pass_the_whole_timer_kit() {
    let dir =
        std::env::temp_dir().join(format!("loomfence-sqlite-timer-kit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let mut n = 0;
    let report = run_all("sqlite-file", || {
        n += 1;
        let path = dir.join(format!("case-{n}.db"));
        async move {
            let events = SqliteEventStore::open(&path, SqliteOptions::default())
                .await
                .expect("opens");
            Arc::new(events.timers()) as Timers
        }
    })
    .await;
    assert_eq!(report.passed, ALL.len());
    std::fs::remove_dir_all(&dir).expect("cleans up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_timers_in_memory_pass_the_whole_timer_kit() {
    let report = run_all("sqlite-memory", || async {
        Arc::new(SqliteTimerStore::open_in_memory().await.expect("opens")) as Timers
    })
    .await;
    assert_eq!(report.passed, ALL.len());
}
