//! One group's transaction, and what its callers hear when it fails.
//!
//! A failure before `COMMIT` (beginning, a savepoint statement) wrote
//! nothing. A failed `COMMIT` is judged by whether SQLite kept the
//! transaction open: if it did (`SQLITE_BUSY`), it is rolled back and
//! nothing was written; if it closed it (an I/O error, such as a WAL fsync
//! that failed after the frames were written), recovery may find the group
//! committed, so every write in it is of unknown outcome.

use rusqlite::{Connection, Transaction, TransactionBehavior};

use super::commit_fault::CommitHook;
use super::job::{GroupFailure, Job};

/// Runs one group in one transaction and answers every job in it.
pub(super) fn commit_group(conn: &mut Connection, mut group: Vec<Box<dyn Job>>, hook: &CommitHook) {
    for job in &mut group {
        job.prepare();
    }
    let failure = run_group(conn, &mut group, hook).err();
    for job in group {
        job.answer(failure.as_ref());
    }
}

/// `BEGIN IMMEDIATE`, every job in its savepoint, `COMMIT`. Any error here
/// is the transaction's own.
fn run_group(
    conn: &mut Connection,
    group: &mut [Box<dyn Job>],
    hook: &CommitHook,
) -> Result<(), GroupFailure> {
    let tx = apply_all(conn, group).map_err(|e| GroupFailure::new(e, false))?;
    let Err(e) = hook.commit(&tx) else {
        return Ok(());
    };
    if tx.is_autocommit() {
        // SQLite ended the transaction: committed or rolled back, it cannot
        // say which (a dropped `Transaction` on a closed one does nothing).
        return Err(GroupFailure::new(e, true));
    }
    if let Err(rollback) = tx.rollback() {
        tracing::warn!(error = %rollback, "rolling back a group whose commit failed");
    }
    Err(GroupFailure::new(e, false))
}

/// Begins the group's transaction and runs every job in its savepoint.
///
/// The savepoint statements are prepared once and cached: parsing them per
/// job was a measurable share of the writer thread's time.
fn apply_all<'c>(
    conn: &'c mut Connection,
    group: &mut [Box<dyn Job>],
) -> rusqlite::Result<Transaction<'c>> {
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
    Ok(tx)
}
