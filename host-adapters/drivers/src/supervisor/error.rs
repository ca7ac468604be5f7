//! Why supervising one parent failed.

use loomfence_core::{ExecutionId, ParkError, ResumeError};
use loomfence_store::StoreError;

use crate::error::ResumeFailure;

/// A failure while supervising one parent. Each is also passed to
/// `on_error`, once.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SupervisorError {
    /// Resuming the parent failed. A contended resume
    /// ([`SupervisorError::is_contended`]) left the park open: the edges
    /// are kept, so the next [`ChildSupervisor::child_ended`] or
    /// [`ChildSupervisor::rebuild`] tries again.
    #[error(transparent)]
    Resume(#[from] ResumeFailure),
    /// The parent's open park has a payload that cannot be read as waits.
    #[error("the park of {parent:?} is unreadable: {source}")]
    Park {
        /// The parent.
        parent: ExecutionId,
        /// Why its park is unreadable.
        #[source]
        source: ParkError,
    },
}

impl SupervisorError {
    /// Whether every conditional try was contended: the park is still open
    /// and a later try is expected to work.
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
