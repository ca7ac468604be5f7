//! Why supervising one parent failed.

use loomfence_core::{ExecutionId, InputError, ResumeError};
use loomfence_store::StoreError;

use crate::error::ResumeFailure;

/// A failure while supervising one parent. Each is also passed to
/// `on_error`, once; a contended resume is not when it is handled (a
/// re-drive row written, or a re-driver answering
/// [`Contended`](loomfence_core::timer::RedriveAnswer::Contended)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SupervisorError {
    /// Resuming the parent failed. A contended resume
    /// ([`SupervisorError::is_contended`]) left the park open: the edges
    /// are kept, so the next [`ChildSupervisor::child_ended`] or
    /// [`ChildSupervisor::rebuild`] tries again.
    ///
    /// [`ChildSupervisor::child_ended`]: super::ChildSupervisor::child_ended
    /// [`ChildSupervisor::rebuild`]: super::ChildSupervisor::rebuild
    #[error(transparent)]
    Resume(#[from] ResumeFailure),
    /// The parent's open park has a payload that cannot be read as waits.
    #[error("the park of {parent:?} is unreadable: {source}")]
    Park {
        /// The parent.
        parent: ExecutionId,
        /// Why its park is unreadable.
        #[source]
        source: InputError,
    },
    /// The store answered something the supervise machine cannot accept
    /// (a log of another execution, a refusal of another park): it broke
    /// its contract. The edges are left as they were.
    #[error("the store's answer does not fit the supervision: {0}")]
    Answer(loomfence_core::Error),
    /// Every conditional try was contended, re-drive is on, and its row
    /// could not be written: nothing will re-drive the park, which is still
    /// open. As for a contended resume without re-drive, the edges are
    /// kept, so the next notice or rebuild tries again.
    #[error(
        "the resume of {parent:?} was contended and its re-drive row was not written: {source}"
    )]
    Redrive {
        /// The parent.
        parent: ExecutionId,
        /// Why the row was not written.
        #[source]
        source: RedriveScheduleError,
    },
}

impl SupervisorError {
    /// Whether every conditional try was contended and nothing else went
    /// wrong: the park is still open and a later try is expected to work.
    /// A contended resume whose re-drive row could not be written is a
    /// [`SupervisorError::Redrive`], not this.
    #[must_use]
    pub fn is_contended(&self) -> bool {
        matches!(
            self,
            SupervisorError::Resume(ResumeFailure::Resume(ResumeError::Contended(_)))
        )
    }
}

impl From<StoreError> for SupervisorError {
    fn from(error: StoreError) -> Self {
        SupervisorError::Resume(ResumeFailure::Store(error))
    }
}

/// Why the re-drive row of a contended resume was not written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RedriveScheduleError {
    /// The timer store failed; [`StoreError::is_retryable`] says
    /// whether writing again may work.
    #[error(transparent)]
    Timers(#[from] StoreError),
    /// The random source gave a number outside `[0, 1)`.
    #[error(transparent)]
    Draw(#[from] InputError),
    /// No storable time (`0..=MAX_TIMER_MS`) follows `now`: the clock is
    /// out of range.
    #[error("no storable re-drive time follows {now} ms")]
    NoWakeTime {
        /// The clock's reading.
        now: i64,
    },
}
