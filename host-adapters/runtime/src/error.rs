//! Why driving a machine against a store stopped short.

use loomfence_core::resume::MachineError;
use loomfence_core::{ResumeContendedError, ResumeError, ResumeRefusedError, StaleFenceError};
use loomfence_store::StoreError;

/// One step could not be completed.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    /// The store failed or refused the request itself (not an expected race:
    /// those are fed to the machine as answers).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The machine rejected the store's answer: the store broke its contract.
    #[error(transparent)]
    Machine(#[from] MachineError),
}

/// Why a resume did not land: the protocol's own answers first, then the
/// failures of the parts underneath it.
#[derive(Debug, thiserror::Error)]
pub enum ResumeFailure {
    /// The park is not the open park; final, nothing appended, no token taken.
    #[error(transparent)]
    Refused(#[from] ResumeRefusedError),
    /// Rivals kept moving the token; retryable, nothing appended.
    #[error(transparent)]
    Contended(#[from] ResumeContendedError),
    /// An unfenced resume met a fenced execution; retry with a fence.
    #[error(transparent)]
    StaleFence(#[from] StaleFenceError),
    /// The store failed; [`StoreError::is_retryable`] says whether to retry.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store answered something the machine cannot accept.
    #[error(transparent)]
    Machine(#[from] MachineError),
}

impl ResumeFailure {
    /// Whether trying the same resume again may succeed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            ResumeFailure::Contended(_) => true,
            ResumeFailure::Store(store) => store.is_retryable(),
            ResumeFailure::Refused(_)
            | ResumeFailure::StaleFence(_)
            | ResumeFailure::Machine(_) => false,
        }
    }
}

impl From<ResumeError> for ResumeFailure {
    fn from(error: ResumeError) -> Self {
        match error {
            ResumeError::Refused(refused) => ResumeFailure::Refused(refused),
            ResumeError::Contended(contended) => ResumeFailure::Contended(contended),
            ResumeError::StaleFence(stale) => ResumeFailure::StaleFence(stale),
        }
    }
}

impl From<DriveError> for ResumeFailure {
    fn from(error: DriveError) -> Self {
        match error {
            DriveError::Store(store) => ResumeFailure::Store(store),
            DriveError::Machine(machine) => ResumeFailure::Machine(machine),
        }
    }
}
