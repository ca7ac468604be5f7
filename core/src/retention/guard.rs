//! The guarded delete: what closes the window between retention's pin check
//! and its delete.
//!
//! The sweep reads a finished child, then each parent that could wait on it.
//! A parent that parks on the child after that read and before the delete
//! would wait forever on a log that is gone. So the delete carries what the
//! sweep saw, and the store refuses it, in the same atomic step as the
//! delete, if any of it changed: the child's log is not the one the sweep
//! read (it grew, so an archive of it would miss events, or it was deleted),
//! or a parent has written an answering event past the head the sweep saw
//! (a park, a resume, an end: anything that could change the pin's answer).
//! Non-answering events of the parent (steps, audits) cannot change it and
//! do not refuse the delete. A parent whose log is gone waits on nothing,
//! so its deletion does not refuse the delete either: a sweep that deletes
//! an old parent and its old child in one page keeps neither.
//!
//! A sweep deletes a page's executions in batches ([`DeleteIf`]), each
//! entry judged by its own guard; see
//! [`SweepAction::Delete`](crate::retention::SweepAction::Delete).

use crate::fence::check_safe;
use crate::input::{ExecutionId, InputError};

/// The most parents one guarded delete may name: each is one more lock and
/// one more check inside the delete's atomic step.
pub const MAX_GUARD_PARENTS: usize = 1_000;

/// The most entries one batch of guarded deletes may hold: a store checks
/// it before it takes any lock. The sweep's own batches are far smaller
/// ([`DELETE_BATCH_KEYS`]).
pub const MAX_DELETE_BATCH: usize = 1_000;

/// The most executions (children and the parents their guards name,
/// counted once each) one batch of the sweep's guarded deletes locks.
///
/// A batch is one transaction on the SQL stores. Its size is the trade of
/// three costs: round trips and commits (fewer with larger batches), how
/// long a live parent's append may wait on a lock the batch holds, and the
/// lock table and the xmin horizon a transaction holds while it runs
/// (smaller with smaller ones). A few hundred keeps each batch to a few
/// milliseconds of locks, well inside PostgreSQL's default lock table (64
/// locks per connection slot), while the per-batch overhead stays under a
/// hundredth of the work.
pub const DELETE_BATCH_KEYS: usize = 256;

/// A parent's log as the pin check saw it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ParentMark {
    /// The parent.
    pub parent: ExecutionId,
    /// Its head when it was read (0 for no log).
    pub seen: u64,
}

/// What the sweep saw, which must still hold for its delete to happen.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeleteGuard {
    /// The head of the log being deleted, as read (and archived).
    pub head: u64,
    /// Every parent whose pin was checked, with the head it was checked at.
    pub parents: Vec<ParentMark>,
}

/// One entry of a batch of guarded deletes: the execution and what must
/// still hold for it to go.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DeleteIf {
    /// The execution to delete.
    pub execution_id: ExecutionId,
    /// What the sweep saw of it and of its parents.
    pub guard: DeleteGuard,
}

/// The answer of a guarded delete. A refusal is an expected race, so it is
/// a value: the execution is kept and the next sweep looks again.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum GuardedDelete {
    /// The log was deleted (a real token survives it, as with a plain
    /// delete).
    Deleted,
    /// The log's head is `head`, not the one read: it grew, or it is gone
    /// (`head` 0, another sweep deleted it). Nothing changed.
    LogChanged {
        /// The head as it stands.
        head: u64,
    },
    /// `parent` wrote an answering event past the head the pin check saw,
    /// or has a log again that is shorter than that head. Nothing changed.
    ParentMoved {
        /// The first parent found moved, in guard order.
        parent: ExecutionId,
    },
}

/// Checks a guard's numbers and size before a store takes any lock.
pub fn check_guard(guard: &DeleteGuard) -> Result<(), InputError> {
    check_safe("head", guard.head)?;
    if guard.parents.len() > MAX_GUARD_PARENTS {
        return Err(InputError::Limit {
            what: "parents",
            value: u64::try_from(guard.parents.len()).unwrap_or(u64::MAX),
            max: MAX_GUARD_PARENTS as u64,
        });
    }
    for mark in &guard.parents {
        check_safe("seen", mark.seen)?;
    }
    Ok(())
}

/// Checks a batch of guarded deletes before a store takes any lock: its
/// size, each guard ([`check_guard`]), and that it names each execution
/// once (a store may judge a batch entry by entry or all at once, which
/// agree only then).
pub fn check_delete_batch(batch: &[DeleteIf]) -> Result<(), InputError> {
    if batch.len() > MAX_DELETE_BATCH {
        return Err(InputError::Limit {
            what: "deletes",
            value: u64::try_from(batch.len()).unwrap_or(u64::MAX),
            max: MAX_DELETE_BATCH as u64,
        });
    }
    batch
        .iter()
        .try_for_each(|entry| check_guard(&entry.guard))?;
    let mut ids: Vec<&ExecutionId> = batch.iter().map(|entry| &entry.execution_id).collect();
    ids.sort_unstable();
    match ids.windows(2).find(|pair| pair[0] == pair[1]) {
        Some(pair) => Err(InputError::RepeatedId {
            execution_id: pair[0].clone(),
        }),
        None => Ok(()),
    }
}

/// Whether a parent moved past the head `seen` the pin check read: it has
/// a log again, shorter than that (the log the check saw was replaced), or
/// an answering event after it. A parent with no log (`head` 0) has not
/// moved: nothing of it waits on anything. Every store applies this rule
/// inside its delete's atomic step.
#[must_use]
pub fn parent_moved(head: u64, seen: u64, answering_after_seen: bool) -> bool {
    (head != 0 && head < seen) || answering_after_seen
}
