//! The writer thread: the one connection that writes, owned by a thread of
//! its own, committing the writes that queue up meanwhile as one group.
//!
//! Writes arrive as jobs on a channel. The thread takes every job waiting
//! (up to [`MAX_GROUP`]) and runs them in one `BEGIN IMMEDIATE` transaction,
//! each in a savepoint of its own: a job that fails (a stale fence, a bad
//! input) rolls back its savepoint alone, and the group commits once. Every
//! caller hears back only after that `COMMIT` returned, so an answer always
//! describes state that is on disk; if the `COMMIT` fails, every job of the
//! group gets that failure and none of them is written.
//!
//! Each job still reads, decides and writes under SQLite's write lock, and
//! the jobs of a group run one after another, so the group is serial: it
//! behaves exactly as the same jobs in separate transactions, one per
//! caller, in queue order. What it saves is the commit: one fsync (with
//! `Durability::Full`) and one lock round per group instead of per write,
//! which is most of a small write's cost on a real disk.
//!
//! No job waits for a group to fill: a write that finds the queue empty is
//! committed alone at once, so a lone writer sees no added latency.
//!
//! If the thread goes away between taking a write and answering it (a panic
//! outside a job's own guard, after the group may have committed), the
//! write's caller hears [`StoreError::OutcomeUnknown`]: its job is dropped
//! unanswered, and the job answers for itself on drop. A write that never
//! reached the thread (the queue was already closed, or it was still queued
//! when the thread died) did not happen and is a plain
//! [`StoreError::Backend`]; a job that had failed on its own (a stale
//! fence, bad input) wrote nothing whatever the group did, and keeps its
//! own answer. Reads queued here (`:memory:`) never report an unknown
//! outcome.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use loomfence_store::{BackendError, StoreError};
use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::oneshot;

use crate::error;

/// The most jobs one transaction takes: bounds how long the first caller
/// of a group waits behind the others.
const MAX_GROUP: usize = 128;

/// One queued write, its types erased.
trait Job: Send {
    /// Work that needs no connection (encoding), run before the group's
    /// transaction begins so the write lock is not held meanwhile.
    fn prepare(&mut self);
    /// Runs the write on `conn` (inside the job's savepoint) and keeps its
    /// result. Returns whether the writes are to be kept.
    fn apply(&mut self, conn: &Connection) -> bool;
    /// Sends the result back, or `failure` instead when the group's commit
    /// failed.
    fn answer(self: Box<Self>, failure: Option<&GroupFailure>);
}

/// A write with its stages and its reply.
struct Typed<P, T, Prep, Apply> {
    /// Where the write is.
    stage: Stage<P, T, Prep, Apply>,
    /// Where its answer goes; `None` once answered.
    reply: Option<oneshot::Sender<Result<T, StoreError>>>,
    /// Whether the job writes (a read queued on the writer of a `:memory:`
    /// database does not).
    writes: bool,
}

/// Where a [`Typed`] job is.
enum Stage<P, T, Prep, Apply> {
    /// Nothing done.
    Queued(Prep, Apply),
    /// Prepared, not yet applied.
    Prepared(P, Apply),
    /// Finished (or failed in preparing).
    Done(Result<T, StoreError>),
    /// Only while moving between stages.
    Moving,
}

impl<P, T, Prep, Apply> Job for Typed<P, T, Prep, Apply>
where
    P: Send,
    T: Send,
    Prep: FnOnce() -> Result<P, StoreError> + Send,
    Apply: FnOnce(&Connection, P) -> Result<T, StoreError> + Send,
{
    fn prepare(&mut self) {
        self.stage = match std::mem::replace(&mut self.stage, Stage::Moving) {
            Stage::Queued(prep, apply) => match guarded(prep) {
                Ok(prepared) => Stage::Prepared(prepared, apply),
                Err(e) => Stage::Done(Err(e)),
            },
            other => other,
        };
    }

    fn apply(&mut self, conn: &Connection) -> bool {
        self.stage = match std::mem::replace(&mut self.stage, Stage::Moving) {
            Stage::Prepared(prepared, apply) => Stage::Done(guarded(|| apply(conn, prepared))),
            other => other,
        };
        matches!(self.stage, Stage::Done(Ok(_)))
    }

    fn answer(mut self: Box<Self>, failure: Option<&GroupFailure>) {
        let result = match (failure, std::mem::replace(&mut self.stage, Stage::Moving)) {
            (Some(failure), _) => Err(failure.to_store()),
            (None, Stage::Done(result)) => result,
            (None, _) => Err(StoreError::Backend(BackendError::permanent(
                "a queued SQLite write was never run",
            ))),
        };
        // A caller that stopped waiting (its future was dropped) needs no
        // answer; its write has the same fate as if it had waited.
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(result);
        }
    }
}

impl<P, T, Prep, Apply> Drop for Typed<P, T, Prep, Apply> {
    /// A job dropped unanswered: the writer thread went away (it panicked
    /// outside a job's guard, or its queue was dropped with jobs in it).
    fn drop(&mut self) {
        let Some(reply) = self.reply.take() else {
            return;
        };
        let result = match std::mem::replace(&mut self.stage, Stage::Moving) {
            // Never taken by the writer: nothing happened.
            Stage::Queued(..) => Err(stopped()),
            // It failed on its own and its savepoint was rolled back, so it
            // wrote nothing whatever became of its group.
            Stage::Done(Err(refused)) => Err(refused),
            // Taken, and perhaps in a group that committed.
            _ if self.writes => Err(StoreError::OutcomeUnknown(BackendError::permanent(
                "the SQLite writer thread went away after taking this write and before \
                 answering: it may be in a committed group",
            ))),
            _ => Err(stopped()),
        };
        let _ = reply.send(result);
    }
}

/// The answer to a call the writer thread will never run.
fn stopped() -> StoreError {
    StoreError::Backend(BackendError::permanent(
        "the SQLite writer thread has stopped",
    ))
}

/// Runs `f`, turning a panic into a permanent failure of this job alone.
fn guarded<R>(f: impl FnOnce() -> Result<R, StoreError>) -> Result<R, StoreError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(StoreError::Backend(BackendError::permanent(
            "an SQLite write panicked; its savepoint was rolled back",
        )))
    })
}

/// Why a whole group was not written, kept so each job gets its own copy.
struct GroupFailure {
    /// Whether trying again may succeed.
    retryable: bool,
    /// What SQLite said.
    message: String,
}

impl GroupFailure {
    /// Classifies an SQLite failure of the group's transaction itself.
    fn new(error: rusqlite::Error) -> Self {
        let backend = error::backend(error);
        Self {
            retryable: backend.retryable,
            message: backend.source.to_string(),
        }
    }

    /// This failure as one job's answer.
    fn to_store(&self) -> StoreError {
        let message = format!("the write's group was not committed: {}", self.message);
        StoreError::Backend(if self.retryable {
            BackendError::retryable(message)
        } else {
            BackendError::permanent(message)
        })
    }
}

/// The handle on the writer thread.
#[derive(Debug)]
pub(crate) struct Writer {
    /// The queue; `None` once closing.
    jobs: Option<Sender<Box<dyn Job>>>,
    /// The thread, joined on drop so the connection is closed (and the WAL
    /// checkpointed) by the time the store is gone.
    thread: Option<JoinHandle<()>>,
}

impl Writer {
    /// Moves `conn` onto a new writer thread.
    pub(crate) fn spawn(conn: Connection) -> std::io::Result<Self> {
        let (jobs, queue) = channel();
        let thread = std::thread::Builder::new()
            .name("loomfence-sqlite-writer".to_owned())
            .spawn(move || serve(conn, &queue))?;
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// Queues a write and waits for its committed answer: `prepare` runs
    /// before the group's transaction, `apply` inside it.
    pub(crate) async fn run<P, T>(
        &self,
        prepare: impl FnOnce() -> Result<P, StoreError> + Send + 'static,
        apply: impl FnOnce(&Connection, P) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError>
    where
        P: Send + 'static,
        T: Send + 'static,
    {
        self.queue(prepare, apply, true).await
    }

    /// Queues a read (of a `:memory:` database, whose only connection is
    /// the writer's) and waits for its answer.
    pub(crate) async fn read<T>(
        &self,
        work: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError>
    where
        T: Send + 'static,
    {
        self.queue(|| Ok(()), move |conn, ()| work(conn), false)
            .await
    }

    /// Queues a job and waits for its answer.
    async fn queue<P, T>(
        &self,
        prepare: impl FnOnce() -> Result<P, StoreError> + Send + 'static,
        apply: impl FnOnce(&Connection, P) -> Result<T, StoreError> + Send + 'static,
        writes: bool,
    ) -> Result<T, StoreError>
    where
        P: Send + 'static,
        T: Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(Typed {
            stage: Stage::Queued(prepare, apply),
            reply: Some(reply),
            writes,
        });
        // A refused send drops the job, which answers for itself; the
        // answer is not awaited, though: nothing reached the thread.
        self.jobs
            .as_ref()
            .ok_or_else(stopped)?
            .send(job)
            .map_err(|_| stopped())?;
        // Every job answers, if only from its drop; a reply lost anyway (a
        // job leaked on a dying thread) is judged as if it had been taken.
        answer.await.unwrap_or_else(|_| {
            Err(if writes {
                StoreError::OutcomeUnknown(BackendError::permanent(
                    "the SQLite writer thread went away without answering this write",
                ))
            } else {
                stopped()
            })
        })
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        // Closing the queue ends the thread once it has answered every job
        // already queued.
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The thread's loop: one group per turn until the queue closes.
fn serve(mut conn: Connection, queue: &Receiver<Box<dyn Job>>) {
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        group.extend(queue.try_iter().take(MAX_GROUP - 1));
        commit_group(&mut conn, group);
    }
}

/// Runs one group in one transaction and answers every job in it.
fn commit_group(conn: &mut Connection, mut group: Vec<Box<dyn Job>>) {
    for job in &mut group {
        job.prepare();
    }
    let failure = run_group(conn, &mut group).err().map(GroupFailure::new);
    for job in group {
        job.answer(failure.as_ref());
    }
}

/// `BEGIN IMMEDIATE`, every job in its savepoint, `COMMIT`. Any error here
/// is the transaction's own, and nothing of the group was written.
///
/// The savepoint statements are prepared once and cached: parsing them per
/// job was a measurable share of the writer thread's time.
fn run_group(conn: &mut Connection, group: &mut [Box<dyn Job>]) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    for job in group {
        tx.prepare_cached("SAVEPOINT job")?.execute([])?;
        if !job.apply(&tx) {
            // Explicitly: a rollback that fails must fail the group, not
            // leave half a job in it.
            tx.prepare_cached("ROLLBACK TO job")?.execute([])?;
        }
        tx.prepare_cached("RELEASE job")?.execute([])?;
    }
    tx.commit()
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;

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
        use loomfence_core::{ConditionalAppend, ExecutionId, KernelKind, NewEvent};
        use loomfence_store::EventStore;

        use crate::{SqliteEventStore, SqliteOptions};

        let file = TempFile::new("store");
        let id = ExecutionId::new("job-1").unwrap();
        let at = 1_700_000_000_000;
        let store = SqliteEventStore::open(&file.0, SqliteOptions::default())
            .await
            .unwrap();
        let parked = store
            .append_many(
                &id,
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, at),
                    NewEvent::kernel(KernelKind::ExecutionSuspended, at),
                ],
            )
            .await
            .unwrap();
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
        use loomfence_core::{DeleteGuard, ExecutionId, GuardedDelete, KernelKind, NewEvent};
        use loomfence_store::EventStore;

        use crate::{SqliteEventStore, SqliteOptions};

        let file = TempFile::new("guarded-delete");
        let id = ExecutionId::new("job-1").unwrap();
        let at = 1_700_000_000_000;
        let store = SqliteEventStore::open(&file.0, SqliteOptions::default())
            .await
            .unwrap();
        store
            .append_many(
                &id,
                vec![
                    NewEvent::kernel(KernelKind::ExecutionStarted, at),
                    NewEvent::kernel(KernelKind::ExecutionCompleted, at),
                ],
            )
            .await
            .unwrap();
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
        use loomfence_core::{DueFilter, ExecutionId, TimerRow};
        use loomfence_store::{TimerStore, TimerStoreError};

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
            matches!(scheduled, Err(TimerStoreError::OutcomeUnknown(_))),
            "expected OutcomeUnknown, got {scheduled:?}"
        );
        assert!(
            scheduled.unwrap_err().is_retryable(),
            "a schedule is safe to repeat"
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
}
