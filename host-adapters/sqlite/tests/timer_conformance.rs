//! The timer kit against SQLite, unchanged: on a file and on `:memory:`.
//! On the file, each case gets the timer handle of an event store, as a
//! host keeping both in one database does.

use std::sync::Arc;

use loomfence_conformance::timers::unreadable::{self, Corruption, RawTimerRows};
use loomfence_conformance::timers::{Timers, case_count, forwarded, run_all};
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
    assert_eq!(report.passed, case_count());
    std::fs::remove_dir_all(&dir).expect("cleans up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_timers_in_memory_pass_the_whole_timer_kit() {
    let report = run_all("sqlite-memory", || async {
        Arc::new(SqliteTimerStore::open_in_memory().await.expect("opens")) as Timers
    })
    .await;
    assert_eq!(report.passed, case_count());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_timers_behind_the_forwarding_decorator_pass_the_whole_timer_kit() {
    let report = run_all("sqlite-forwarded", || async {
        forwarded(Arc::new(
            SqliteTimerStore::open_in_memory().await.expect("opens"),
        ))
    })
    .await;
    assert_eq!(report.passed, case_count());
}

/// Plants raw rows through a connection of its own on the store's file.
struct SqliteRaw(std::sync::Mutex<rusqlite::Connection>);

#[async_trait::async_trait]
impl RawTimerRows for SqliteRaw {
    fn holds_invalid_json(&self) -> bool {
        true
    }

    async fn plant(&self, execution_id: &str, wake_at: i64, redrive: Option<&str>, claims: i64) {
        self.0
            .lock()
            .expect("the raw connection")
            .execute(
                "INSERT INTO timers (execution_id, wake_at, redrive, claims) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![execution_id, wake_at, redrive, claims],
            )
            .unwrap_or_else(|e| panic!("plants ({execution_id:?}, {wake_at}): {e}"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_timers_pass_the_unreadable_row_kit() {
    let dir = std::env::temp_dir().join(format!(
        "loomfence-sqlite-unreadable-kit-{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let mut n = 0;
    let report = unreadable::run_all("sqlite", || {
        n += 1;
        let path = dir.join(format!("case-{n}.db"));
        async move {
            let timers = SqliteTimerStore::open(&path, SqliteOptions::default())
                .await
                .expect("opens");
            let conn = rusqlite::Connection::open(&path).expect("a raw connection");
            conn.busy_timeout(std::time::Duration::from_secs(10))
                .expect("a busy timeout");
            let raw = Arc::new(SqliteRaw(std::sync::Mutex::new(conn)));
            (Arc::new(timers) as Timers, Corruption::Raw(raw))
        }
    })
    .await;
    assert_eq!(report.passed, unreadable::ALL.len());
    std::fs::remove_dir_all(&dir).expect("cleans up");
}
