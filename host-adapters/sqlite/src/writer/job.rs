//! A queued job: its stages, its answer, the failure of its group as it
//! hears it, and the answer it gives for itself when it is dropped
//! unanswered.

use std::panic::{AssertUnwindSafe, catch_unwind};

use loomfence_store::{BackendError, StoreError};
use rusqlite::Connection;

use crate::error;
use tokio::sync::oneshot;

/// One queued write, its types erased.
pub(super) trait Job: Send {
    /// Work that needs no connection (encoding), run before the group's
    /// transaction begins so the write lock is not held meanwhile.
    fn prepare(&mut self);
    /// Runs the write on `conn` (inside the job's savepoint) and keeps its
    /// result. Returns whether the writes are to be kept.
    fn apply(&mut self, conn: &Connection) -> bool;
    /// Sends the result back, or `failure` instead when the group's
    /// transaction failed (a job that failed on its own keeps its answer if
    /// the group may have been committed: it wrote nothing either way).
    fn answer(self: Box<Self>, failure: Option<&GroupFailure>);
}

/// A write with its stages and its reply.
pub(super) struct Typed<P, T, Prep, Apply> {
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

impl<P, T, Prep, Apply> Typed<P, T, Prep, Apply> {
    /// A job not yet run, answering on `reply`; `writes` says whether it
    /// writes (a lost answer to a write leaves its outcome unknown).
    pub(super) fn new(
        prepare: Prep,
        apply: Apply,
        reply: oneshot::Sender<Result<T, StoreError>>,
        writes: bool,
    ) -> Self {
        Self {
            stage: Stage::Queued(prepare, apply),
            reply: Some(reply),
            writes,
        }
    }
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
            // It failed on its own and its savepoint was rolled back: it
            // wrote nothing, whatever became of its group.
            (Some(failure), Stage::Done(Err(refused))) if failure.is_unknown() => Err(refused),
            (Some(failure), _) => Err(failure.to_store(self.writes)),
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
pub(super) fn stopped() -> StoreError {
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

/// Why a group's transaction failed, kept so each job gets its own copy.
pub(super) struct GroupFailure {
    /// Whether the group may have been committed anyway.
    unknown: bool,
    /// Whether trying again may succeed.
    retryable: bool,
    /// What SQLite said.
    message: String,
}

impl GroupFailure {
    /// Classifies an SQLite failure of the group's transaction itself.
    pub(super) fn new(error: rusqlite::Error, unknown: bool) -> Self {
        let backend = error::backend(error);
        Self {
            unknown,
            retryable: backend.retryable,
            message: backend.source.to_string(),
        }
    }

    /// Whether the group may have been committed despite the failure.
    pub(super) fn is_unknown(&self) -> bool {
        self.unknown
    }

    /// This failure as one job's answer; `writes` says whether the job
    /// writes (a read is never of unknown outcome).
    pub(super) fn to_store(&self, writes: bool) -> StoreError {
        let unknown = self.unknown && writes;
        let what = match (self.unknown, writes) {
            (true, true) => "the write's group may have been committed",
            (true, false) => "the read's group may have been committed, which voids the read",
            (false, true) => "the write's group was not committed",
            (false, false) => "the read's group was not committed",
        };
        let message = format!("{what}: {}", self.message);
        let backend = if self.retryable {
            BackendError::retryable(message)
        } else {
            BackendError::permanent(message)
        };
        if unknown {
            StoreError::OutcomeUnknown(backend)
        } else {
            StoreError::Backend(backend)
        }
    }
}
