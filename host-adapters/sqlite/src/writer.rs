//! The writer thread: the one connection that writes, owned by a thread of
//! its own, committing the writes that queue up meanwhile as one group.
//!
//! Writes arrive as jobs on a channel. The thread takes every job waiting
//! (up to [`MAX_GROUP`]) and runs them in one `BEGIN IMMEDIATE` transaction,
//! each in a savepoint of its own: a job that fails (a stale fence, a bad
//! input) rolls back its savepoint alone, and the group commits once. Every
//! caller hears back only after that `COMMIT` returned, so an answer always
//! describes state that is on disk. If the `COMMIT` fails while SQLite
//! keeps the transaction open (`SQLITE_BUSY`), the group is rolled back,
//! every job of it gets that failure and none is written; if SQLite closed
//! the transaction (an I/O error, such as a WAL fsync that failed after the
//! frames were written), the group may be there after recovery, and every
//! write of it that had not failed on its own hears
//! [`StoreError::OutcomeUnknown`] (see [`commit`]).
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
//! write's caller hears [`StoreError::OutcomeUnknown`] too: its job is dropped
//! unanswered, and the job answers for itself on drop. A write that never
//! reached the thread (the queue was already closed, or it was still queued
//! when the thread died) did not happen and is a plain
//! [`StoreError::Backend`]; a job that had failed on its own (a stale
//! fence, bad input) wrote nothing whatever the group did, and keeps its
//! own answer. Reads queued here (`:memory:`) never report an unknown
//! outcome.

mod commit;
mod commit_fault;
mod job;

use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::JoinHandle;

use loomfence_store::{BackendError, StoreError};
use rusqlite::Connection;
use tokio::sync::oneshot;

use self::commit::commit_group;
#[cfg(test)]
pub(crate) use self::commit_fault::CommitFault;
use self::commit_fault::CommitHook;
use self::job::{Job, Typed, stopped};

/// The most jobs one transaction takes: bounds how long the first caller
/// of a group waits behind the others.
const MAX_GROUP: usize = 128;

/// The handle on the writer thread.
#[derive(Debug)]
pub(crate) struct Writer {
    /// The queue; `None` once closing.
    jobs: Option<Sender<Box<dyn Job>>>,
    /// The thread, joined on drop so the connection is closed (and the WAL
    /// checkpointed) by the time the store is gone.
    thread: Option<JoinHandle<()>>,
    /// How the thread commits, shared with it so tests can arm a fault.
    #[cfg(test)]
    hook: CommitHook,
}

impl Writer {
    /// Moves `conn` onto a new writer thread.
    pub(crate) fn spawn(conn: Connection) -> std::io::Result<Self> {
        let (jobs, queue) = channel();
        let hook = CommitHook::default();
        let thread = {
            let hook = hook.clone();
            std::thread::Builder::new()
                .name("loomfence-sqlite-writer".to_owned())
                .spawn(move || serve(conn, &queue, &hook))?
        };
        Ok(Self {
            jobs: Some(jobs),
            thread: Some(thread),
            #[cfg(test)]
            hook,
        })
    }

    /// Makes the next group's `COMMIT` fail as `fault` says.
    #[cfg(test)]
    pub(crate) fn fail_next_commit(&self, fault: CommitFault) {
        self.hook.arm(fault);
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
        let job: Box<dyn Job> = Box::new(Typed::new(prepare, apply, reply, writes));
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
fn serve(mut conn: Connection, queue: &Receiver<Box<dyn Job>>, hook: &CommitHook) {
    while let Ok(first) = queue.recv() {
        let mut group = vec![first];
        group.extend(queue.try_iter().take(MAX_GROUP - 1));
        commit_group(&mut conn, group, hook);
    }
}

#[cfg(test)]
mod tests;
