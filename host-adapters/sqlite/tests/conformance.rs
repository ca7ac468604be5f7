//! The conformance kit against SQLite, unchanged: on a file and on
//! `:memory:`.

use std::sync::Arc;

use loomfence_conformance::{Store, cases, forwarded, run_all};
use loomfence_sqlite::{SqliteEventStore, SqliteOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_on_a_file_passes_the_whole_kit() {
    let dir = std::env::temp_dir().join(format!("loomfence-sqlite-kit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let mut n = 0;
    let report = run_all("sqlite-file", || {
        n += 1;
        let path = dir.join(format!("case-{n}.db"));
        async move {
            Arc::new(
                SqliteEventStore::open(&path, SqliteOptions::default())
                    .await
                    .expect("opens"),
            ) as Store
        }
    })
    .await;
    assert_eq!(report.passed, cases::ALL.len());
    std::fs::remove_dir_all(&dir).expect("cleans up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_in_memory_passes_the_whole_kit() {
    let report = run_all("sqlite-memory", || async {
        Arc::new(SqliteEventStore::open_in_memory().await.expect("opens")) as Store
    })
    .await;
    assert_eq!(report.passed, cases::ALL.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_behind_the_forwarding_decorator_passes_the_whole_kit() {
    let report = run_all("sqlite-forwarded", || async {
        forwarded(Arc::new(
            SqliteEventStore::open_in_memory().await.expect("opens"),
        ))
    })
    .await;
    assert_eq!(report.passed, cases::ALL.len());
}
