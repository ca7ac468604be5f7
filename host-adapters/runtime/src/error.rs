//! Why a resume did not land, as the runtime reports it.

use loomfence_core::{ContractError, ResumeError};
use loomfence_store::StoreError;

/// Why a resume did not land: the protocol's own answer, or a failure of
/// the part underneath it. The step-wise [`perform`](crate::perform) and the whole
/// [`resume`](crate::resume) both report it, and the supervisor wraps it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeFailure {
    /// The protocol's answer: refused (final, nothing appended, no token
    /// taken), contended (retryable, nothing appended), or an unfenced
    /// resume that met a fenced execution (retry with a fence).
    #[error(transparent)]
    Resume(#[from] ResumeError),
    /// The store failed; [`StoreError::is_retryable`] says whether to retry.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The store answered something the machine cannot accept: it broke its
    /// contract.
    #[error(transparent)]
    Machine(#[from] ContractError),
    /// The machine asked for a step this driver does not know: the core is
    /// newer than the driver. Nothing more was done.
    #[error("the resume machine asked for a step this driver does not know: {0}")]
    Unsupported(String),
}

impl ResumeFailure {
    /// Whether trying the same resume again may succeed.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            ResumeFailure::Resume(ResumeError::Contended(_)) => true,
            ResumeFailure::Store(store) => store.is_retryable(),
            _ => false,
        }
    }
}
