//! Why the timer service could not fire a row, or a retry chain that gave
//! up: what it hands to `on_error`. Its own file, so that the options
//! (which name it in `on_error`) and the service both import it and
//! neither imports the other.

use loomfence_core::{
    ContractError, ExecutionId, InputError, redrive::RedriveExhaustedError, timer::UnreadableRow,
};
use loomfence_store::StoreError;

use crate::error::ResumeFailure;
use crate::redriver::RedriveFailure;

/// A failure of the timer service, or a retry chain that gave up. Each is
/// passed to `on_error` once; the service goes on.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TimerServiceError {
    /// A retry chain (a contended plain wake's, or a re-drive row's) gave
    /// up: its row was retired and the execution is left to `recover()`.
    /// Reported exactly once per chain, by the fire whose complete retired
    /// the row.
    #[error(transparent)]
    Exhausted(RedriveExhaustedError),
    /// The timer store failed: a claim (the tick fires nothing), a
    /// reschedule, a complete or a release. A fire's claim is left to
    /// expire.
    #[error("timer store: {0}")]
    Timers(StoreError),
    /// The event store failed reading a log. The fire's claim is left to
    /// expire.
    #[error("event store: {0}")]
    Events(StoreError),
    /// A plain wake's resume failed otherwise than refused or contended
    /// (those are answers the fire machine takes): its store failed, or
    /// broke the resume machine's contract. The claim is left to expire.
    #[error("resume: {0}")]
    Resume(#[from] ResumeFailure),
    /// The fire machine refused its input: the row or the time out of
    /// range, a row not due, or an answer that does not fit (a store that
    /// broke its contract). The claim is left to expire.
    #[error("fire decision: {0}")]
    Machine(ContractError),
    /// The random source gave a number outside `[0, 1)`. The fire was not
    /// made; the claim is left to expire.
    #[error("random source: {0}")]
    Draw(#[from] InputError),
    /// A due row the timer store could not read (see
    /// [`ClaimPage::unreadable`](loomfence_store::ClaimPage::unreadable)): it was not claimed, the other rows went
    /// on. Reported once per node and row (see
    /// [`UnreadableReports`](loomfence_core::timer::UnreadableReports)),
    /// counted in [`TickReport::unreadable`](loomfence_core::tick::TickReport::unreadable) rather than `errors`.
    #[error(
        "unreadable timer row ({:?}, {}): {:?}: {}; it is not fired until repaired or deleted",
        .0.execution_id,
        .0.wake_at.map_or_else(|| "?".to_owned(), |at| at.to_string()),
        .0.field,
        .0.detail
    )]
    Unreadable(UnreadableRow),
    /// A re-driver returned an error. The fire goes on: the error is the
    /// answer [`RedriveAnswer::Failed`](loomfence_core::timer::RedriveAnswer::Failed),
    /// treated as contended, so the chain continues and the row is not
    /// lost.
    #[error("re-driver {index} failed on {execution_id:?}: {source}")]
    Redriver {
        /// The re-driver's place in registration order, from 0.
        index: usize,
        /// The execution it was re-driving.
        execution_id: ExecutionId,
        /// What it returned.
        #[source]
        source: RedriveFailure,
    },
    /// The fire machine asked for an action, or ended in an outcome, this
    /// service does not know (the core is newer than the runtime), or named
    /// a re-driver that is not registered. Nothing more was done; the claim
    /// is left to expire.
    #[error("the fire machine asked for something this service does not know: {0}")]
    Unsupported(String),
}
