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
//! do not refuse the delete.

use crate::fence::check_safe;
use crate::input::{ExecutionId, InputError};

/// The most parents one guarded delete may name: each is one more lock and
/// one more check inside the delete's atomic step.
pub const MAX_GUARD_PARENTS: usize = 1_000;

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
    /// or its log is shorter than that head. Nothing changed.
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

/// Whether a parent moved past the head `seen` the pin check read: its log
/// is now shorter than that (the log the check saw is gone), or it has an
/// answering event after it. Every store applies this rule inside its
/// delete's atomic step.
#[must_use]
pub fn parent_moved(head: u64, seen: u64, answering_after_seen: bool) -> bool {
    head < seen || answering_after_seen
}
