//! One group's transaction, and what its caller hears when it fails.

use loomfence_store::{BackendError, StoreError};
use rusqlite::{Connection, TransactionBehavior};

use super::job::Job;
use crate::error;
/// Runs one group in one transaction and answers every job in it.
pub(super) fn commit_group(conn: &mut Connection, mut group: Vec<Box<dyn Job>>) {
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

/// Why a whole group was not written, kept so each job gets its own copy.
pub(super) struct GroupFailure {
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
    pub(super) fn to_store(&self) -> StoreError {
        let message = format!("the write's group was not committed: {}", self.message);
        StoreError::Backend(if self.retryable {
            BackendError::retryable(message)
        } else {
            BackendError::permanent(message)
        })
    }
}
