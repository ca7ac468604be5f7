//! The writer's tests: group commit, a job's own failure, a failed
//! transaction, and a writer thread that dies after its commit. A
//! `COMMIT` that fails is in [`commit_fault`].

use std::sync::mpsc;

use super::*;
use crate::error;

mod commit_fault;

/// A writer over an in-memory table of numbers.
fn writer() -> Writer {
    let conn = Connection::open_in_memory().unwrap();
    conn.execute_batch("CREATE TABLE t (n INTEGER PRIMARY KEY)")
        .unwrap();
    Writer::spawn(conn).unwrap()
}

/// Inserts `n`, then answers `outcome`.
fn insert(
    n: i64,
    outcome: Result<(), &'static str>,
) -> impl FnOnce(&Connection, ()) -> Result<i64, StoreError> + Send + 'static {
    move |conn, ()| {
        conn.execute("INSERT INTO t VALUES (?1)", [n])
            .map_err(error::store)?;
        outcome
            .map(|()| n)
            .map_err(|e| StoreError::Backend(BackendError::permanent(e)))
    }
}

/// The numbers in the table.
async fn rows(writer: &Writer) -> Vec<i64> {
    writer
        .run(
            || Ok(()),
            |conn, ()| {
                let mut s = conn.prepare("SELECT n FROM t ORDER BY n").unwrap();
                let rows = s.query_map([], |r| r.get(0)).unwrap();
                Ok(rows.map(Result::unwrap).collect())
            },
        )
        .await
        .unwrap()
}

/// A job that holds the writer thread until `release` fires, and says
/// when it has started: everything queued after that runs as one group.
struct Hold<F> {
    release: mpsc::Sender<()>,
    started: oneshot::Receiver<()>,
    job: F,
}

fn hold(writer: &Writer) -> Hold<impl Future<Output = Result<(), StoreError>> + '_> {
    let (release, held) = mpsc::channel::<()>();
    let (started_tx, started) = oneshot::channel();
    let job = writer.run(
        || Ok(()),
        move |_, ()| {
            started_tx.send(()).unwrap();
            held.recv().unwrap();
            Ok(())
        },
    );
    Hold {
        release,
        started,
        job,
    }
}

/// A result that panics when it is dropped on the writer thread. That
/// happens only when its caller stopped waiting (the reply cannot be
/// delivered, so the writer drops it): the writer thread then dies
/// answering, after its group committed and before it answered the jobs
/// behind it in the group. No switch inside the writer: a real panic on
/// its answering path.
struct PanicsOnWriterThread;

impl Drop for PanicsOnWriterThread {
    fn drop(&mut self) {
        if std::thread::current().name() == Some("loomfence-sqlite-writer") {
            panic!("the writer thread dies answering a caller that left");
        }
    }
}

/// Queues a job whose answer kills the writer thread, and stops waiting
/// for it (its future is polled once, which queues it, then dropped).
async fn queue_poison(writer: &Writer) {
    let mut poison = Box::pin(writer.run(|| Ok(()), |_, ()| Ok(PanicsOnWriterThread)));
    std::future::poll_fn(|cx| {
        assert!(
            poison.as_mut().poll(cx).is_pending(),
            "queued, not answered"
        );
        std::task::Poll::Ready(())
    })
    .await;
}

/// A temporary database file, removed on drop.
struct TempFile(std::path::PathBuf);

impl TempFile {
    fn new(label: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Self(std::env::temp_dir().join(format!(
            "loomfence-sqlite-writer-{label}-{}-{nanos}.db",
            std::process::id()
        )))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = self.0.as_os_str().to_owned();
            name.push(suffix);
            let _ignored = std::fs::remove_file(std::path::PathBuf::from(name));
        }
    }
}
/// The instant every store-level test here writes at.
const AT: i64 = 1_700_000_000_000;

/// A store in `file` with `job-1` started and then `next` (a park or an
/// end), both at [`AT`]: the set-up the store-level tests share.
async fn store_with_job(
    file: &TempFile,
    next: loomfence_core::KernelKind,
) -> (
    crate::SqliteEventStore,
    loomfence_core::ExecutionId,
    Vec<loomfence_core::Envelope>,
) {
    use loomfence_core::{ExecutionId, KernelKind, NewEvent};
    use loomfence_store::EventStore;

    let id = ExecutionId::new("job-1").unwrap();
    let store = crate::SqliteEventStore::open(&file.0, crate::SqliteOptions::default())
        .await
        .unwrap();
    let written = store
        .append_many(
            &id,
            vec![
                NewEvent::kernel(KernelKind::ExecutionStarted, AT),
                NewEvent::kernel(next, AT),
            ],
        )
        .await
        .unwrap();
    (store, id, written)
}

/// The numbers in the table of the file at `path`, read by a fresh
/// connection.
fn rows_in(path: &std::path::Path) -> Vec<i64> {
    let conn = Connection::open(path).unwrap();
    let mut s = conn.prepare("SELECT n FROM t ORDER BY n").unwrap();
    let rows = s.query_map([], |r| r.get(0)).unwrap();
    rows.map(Result::unwrap).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_that_dies_after_the_commit_leaves_the_outcome_unknown_not_failed() {
    let file = TempFile::new("dies");
    let conn = Connection::open(&file.0).unwrap();
    conn.execute_batch("PRAGMA journal_mode = WAL; CREATE TABLE t (n INTEGER PRIMARY KEY)")
        .unwrap();
    let writer = Writer::spawn(conn).unwrap();
    let Hold {
        release,
        started,
        job,
    } = hold(&writer);
    let group = async {
        started.await.unwrap();
        // The next group: the poisoned job, then ours.
        queue_poison(&writer).await;
        let ours = writer.run(|| Ok(()), insert(7, Ok(())));
        tokio::join!(ours, async {
            release.send(()).unwrap();
        })
    };
    let (held, (ours, ())) = tokio::join!(job, group);
    held.unwrap();
    match ours {
        Err(StoreError::OutcomeUnknown(lost)) => {
            assert!(
                lost.to_string().contains("may be in a committed group"),
                "{lost}"
            );
        }
        other => panic!("expected OutcomeUnknown, got {other:?}"),
    }
    assert_eq!(
        rows_in(&file.0),
        [7],
        "the group committed: our write landed"
    );
    // A write that never reached the writer did not happen, and says so.
    match writer.run(|| Ok(()), insert(8, Ok(()))).await {
        Err(StoreError::Backend(stopped)) => {
            assert!(stopped.to_string().contains("stopped"), "{stopped}");
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
    assert_eq!(rows_in(&file.0), [7]);
    drop(writer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_write_whose_writer_died_after_the_commit_is_outcome_unknown_and_landed() {
    use loomfence_core::{ConditionalAppend, KernelKind, NewEvent};
    use loomfence_store::EventStore;

    use crate::{SqliteEventStore, SqliteOptions};

    let file = TempFile::new("store");
    let at = AT;
    let (store, id, parked) = store_with_job(&file, KernelKind::ExecutionSuspended).await;
    let park_seq = parked[1].sequence;
    let writer = store.db().writer();
    let Hold {
        release,
        started,
        job,
    } = hold(writer);
    let group = async {
        started.await.unwrap();
        queue_poison(writer).await;
        let resume = store.append_if_parked(
            &id,
            park_seq,
            vec![NewEvent::kernel(KernelKind::ExecutionResumed, at)],
        );
        tokio::join!(resume, async {
            release.send(()).unwrap();
        })
    };
    let (held, (resume, ())) = tokio::join!(job, group);
    held.unwrap();
    assert!(
        matches!(resume, Err(StoreError::OutcomeUnknown(_))),
        "expected OutcomeUnknown, got {resume:?}"
    );
    drop(store);
    let reopened = SqliteEventStore::open(&file.0, SqliteOptions::default())
        .await
        .unwrap();
    let log = reopened.read_range(&id, 1, None).await.unwrap();
    let kinds: Vec<&str> = log.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "EXECUTION_STARTED",
            "EXECUTION_SUSPENDED",
            "EXECUTION_RESUMED"
        ],
        "the resume landed in the committed group"
    );
    // The write is settled: the park is answered.
    assert!(matches!(
        reopened
            .append_if_parked(
                &id,
                park_seq,
                vec![NewEvent::kernel(KernelKind::ExecutionResumed, at)]
            )
            .await,
        Ok(ConditionalAppend::ParkAnswered)
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_delete_whose_writer_died_after_the_commit_is_outcome_unknown_and_landed() {
    use loomfence_core::{
        KernelKind,
        retention::{DeleteGuard, GuardedDelete},
    };
    use loomfence_store::EventStore;

    use crate::{SqliteEventStore, SqliteOptions};

    let file = TempFile::new("guarded-delete");
    let (store, id, _) = store_with_job(&file, KernelKind::ExecutionCompleted).await;
    let guard = DeleteGuard {
        head: 2,
        parents: Vec::new(),
    };
    let writer = store.db().writer();
    let Hold {
        release,
        started,
        job,
    } = hold(writer);
    let group = async {
        started.await.unwrap();
        queue_poison(writer).await;
        tokio::join!(store.delete_execution_if(&id, &guard), async {
            release.send(()).unwrap();
        })
    };
    let (held, (deleted, ())) = tokio::join!(job, group);
    held.unwrap();
    assert!(
        matches!(deleted, Err(StoreError::OutcomeUnknown(_))),
        "expected OutcomeUnknown, got {deleted:?}"
    );
    drop(store);
    let reopened = SqliteEventStore::open(&file.0, SqliteOptions::default())
        .await
        .unwrap();
    assert!(
        reopened.read_range(&id, 1, None).await.unwrap().is_empty(),
        "the delete landed in the committed group"
    );
    // Settled: the log the guard names is gone.
    assert_eq!(
        reopened.delete_execution_if(&id, &guard).await.unwrap(),
        GuardedDelete::LogChanged { head: 0 }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timer_write_whose_writer_died_after_the_commit_is_outcome_unknown_and_landed() {
    use loomfence_core::{
        ExecutionId,
        timer::{DueFilter, TimerRow},
    };
    use loomfence_store::{StoreError, TimerStore};

    use crate::{SqliteEventStore, SqliteOptions, SqliteTimerStore};

    let file = TempFile::new("timers");
    let store = SqliteEventStore::open(&file.0, SqliteOptions::default())
        .await
        .unwrap();
    let timers = store.timers();
    let row = TimerRow::redrive(ExecutionId::new("job-1").unwrap(), 5, 1);
    let writer = store.db().writer();
    let Hold {
        release,
        started,
        job,
    } = hold(writer);
    let group = async {
        started.await.unwrap();
        queue_poison(writer).await;
        tokio::join!(timers.schedule(&row), async {
            release.send(()).unwrap();
        })
    };
    let (held, (scheduled, ())) = tokio::join!(job, group);
    held.unwrap();
    assert!(
        matches!(scheduled, Err(StoreError::OutcomeUnknown(_))),
        "expected OutcomeUnknown, got {scheduled:?}"
    );
    assert!(
        !scheduled.unwrap_err().is_retryable(),
        "a lost answer is settled by the caller: a schedule is safe to repeat"
    );
    drop((store, timers));
    let reopened = SqliteTimerStore::open(&file.0, SqliteOptions::default())
        .await
        .unwrap();
    assert_eq!(
        reopened.due(5, 10, DueFilter::default()).await.unwrap(),
        [row],
        "the schedule landed in the committed group"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_or_panicking_job_rolls_back_alone_and_the_group_commits() {
    let writer = writer();
    let Hold {
        release,
        started,
        job,
    } = hold(&writer);
    let group = async {
        started.await.unwrap();
        let kept = writer.run(|| Ok(()), insert(1, Ok(())));
        let failed = writer.run(|| Ok(()), insert(2, Err("refused")));
        let panicked = writer.run(
            || Ok(()),
            |conn: &Connection, ()| -> Result<i64, StoreError> {
                conn.execute("INSERT INTO t VALUES (3)", []).unwrap();
                panic!("a bug in one write");
            },
        );
        let also_kept = writer.run(|| Ok(()), insert(4, Ok(())));
        // join! polls in order: all four are queued before the release.
        tokio::join!(kept, failed, panicked, also_kept, async {
            release.send(()).unwrap();
        })
    };
    let (held, answers) = tokio::join!(job, group);
    held.unwrap();
    assert_eq!(answers.0.unwrap(), 1);
    assert!(answers.1.unwrap_err().to_string().contains("refused"));
    assert!(answers.2.unwrap_err().to_string().contains("panicked"));
    assert_eq!(answers.3.unwrap(), 4);
    assert_eq!(rows(&writer).await, [1, 4]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_transaction_fails_every_job_and_writes_nothing() {
    let writer = writer();
    assert_eq!(writer.run(|| Ok(()), insert(1, Ok(()))).await.unwrap(), 1);
    let Hold {
        release,
        started,
        job,
    } = hold(&writer);
    let group = async {
        started.await.unwrap();
        let before = writer.run(|| Ok(()), insert(2, Ok(())));
        // Ends the group's transaction under it, so its own savepoint
        // release, and the commit, fail.
        let breaker = writer.run(
            || Ok(()),
            |conn: &Connection, ()| {
                conn.execute_batch("ROLLBACK").map_err(error::store)?;
                Ok(0)
            },
        );
        let after = writer.run(|| Ok(()), insert(3, Ok(())));
        tokio::join!(before, breaker, after, async {
            release.send(()).unwrap();
        })
    };
    let (held, answers) = tokio::join!(job, group);
    held.unwrap();
    for answer in [answers.0, answers.1, answers.2] {
        let error = answer.unwrap_err();
        assert!(error.to_string().contains("was not committed"), "{error}");
    }
    assert_eq!(rows(&writer).await, [1]);
    // The writer goes on after a failed group.
    assert_eq!(writer.run(|| Ok(()), insert(5, Ok(()))).await.unwrap(), 5);
    assert_eq!(rows(&writer).await, [1, 5]);
}
