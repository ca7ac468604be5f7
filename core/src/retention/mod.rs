//! Retention that never deletes a child its parent still waits on (design:
//! retention), as pure decisions: what a listing reports
//! ([`ExecutionSummary`]), the pin ([`pin_parked_children`]), the guarded
//! delete that closes the window between the pin check and the delete
//! ([`DeleteGuard`]), and the sweep that puts them together
//! ([`SweepMachine`]), which keeps and names a child it cannot judge
//! ([`Undecided`]).
//!
//! You need it when you delete finished executions, or write a store's
//! listing and guarded delete.

mod guard;
mod pin;
mod summary;
mod sweep;
mod sweep_answers;
mod sweep_options;
#[cfg(test)]
mod sweep_rules_tests;
#[cfg(test)]
mod tests;
mod undecided;

pub use guard::{
    DELETE_BATCH_KEYS, DeleteGuard, DeleteIf, GuardedDelete, MAX_DELETE_BATCH, MAX_GUARD_PARENTS,
    ParentMark, check_delete_batch, check_guard, parent_moved,
};
pub use pin::pin_parked_children;
pub use summary::{
    Ended, ExecutionSummary, MAX_PAGE_LIMIT, check_page_limit, check_read_batch, ended_of,
    summarize,
};
pub use sweep::{
    ExecutionLog, Kept, Pinned, SweepAction, SweepFailure, SweepFailureVerdict, SweepMachine,
    SweepPoll, SweepReport,
};
pub use sweep_options::SweepOptions;
pub use undecided::{Undecided, UndecidedReason};
