//! What a store operation can fail with, beyond the answers that are values.

use std::error::Error;
use std::fmt;

use loomfence_core::{AppendError, Capability, InputError, StaleFenceError};

/// Why a store operation did not happen: the one error of both store
/// traits, [`EventStore`](crate::EventStore) and
/// [`TimerStore`](crate::TimerStore).
///
/// Expected races are not here: a conditional acquire that loses answers
/// [`AcquireOutcome::Stale`](loomfence_core::AcquireOutcome::Stale), a
/// timer claim that finds nothing free answers an empty page, a complete by
/// a node that no longer holds the row answers
/// [`Completed::NotHeld`](loomfence_core::timer::Completed::NotHeld). What is here
/// is a refusal (a stale token, bad input, a capability the store lacks) or
/// a backend failure, each its own variant so callers match rather than
/// parse messages.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The append's writer no longer holds the execution: someone acquired
    /// after it. Nothing was written.
    #[error(transparent)]
    StaleFence(#[from] StaleFenceError),
    /// The id, an event or an argument is malformed, or a timer's time,
    /// attempt, limit, lease or node id is out of range. Nothing was read
    /// or written.
    #[error(transparent)]
    Input(#[from] InputError),
    /// The store does not offer this operation. Callers fall back by
    /// [`Capability`] instead of discovering this at run time; getting it
    /// means a store misreported its capability.
    #[error("{operation} is not offered by a {capability:?} store")]
    Unsupported {
        /// The operation asked for.
        operation: &'static str,
        /// What the store offers.
        capability: Capability,
    },
    /// The backend failed (connection lost, disk error, lock timeout)
    /// before the operation could take effect: it did not happen.
    /// [`BackendError::retryable`] says whether trying again can help.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A write failed after it may have been committed (the connection died
    /// after the commit was sent, the writer went away before answering): it
    /// happened entirely or not at all, and the store cannot say which. Only
    /// writes report this; a read that fails is [`StoreError::Backend`].
    ///
    /// Retrying an event write blindly could write twice, so it is not
    /// [retryable](StoreError::is_retryable): read back to settle it, as
    /// the resume driver does. Every timer write is safe to repeat (a
    /// schedule is an upsert; a complete, release or reschedule of a claim
    /// that already took effect answers `Completed::NotHeld`), so a timer
    /// caller retries it or leaves the row to its lease.
    #[error("the write's outcome is unknown (it may have been committed): {0}")]
    OutcomeUnknown(#[source] BackendError),
}

impl StoreError {
    /// Whether trying the same call again may succeed and cannot do harm.
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        matches!(self, StoreError::Backend(backend) if backend.retryable)
    }

    /// Whether the call was a write that may or may not have happened.
    #[must_use]
    pub fn is_outcome_unknown(&self) -> bool {
        matches!(self, StoreError::OutcomeUnknown(_))
    }
}

impl From<AppendError> for StoreError {
    fn from(error: AppendError) -> Self {
        match error {
            AppendError::Stale(stale) => StoreError::StaleFence(stale),
            AppendError::Input(input) => StoreError::Input(input),
            other => StoreError::Backend(BackendError::permanent(other.to_string())),
        }
    }
}

/// The cause of a [`StoreError::Backend`] or [`StoreError::OutcomeUnknown`]
/// (and of an adapter's opening error): the backend's own error, boxed,
/// with whether trying again may help.
///
/// It is a source, not an error layer: it has no cases to match, only the
/// one fact callers act on (`retryable`), which the backend that made it
/// knows and the layers above cannot work out from a message.
#[derive(Debug)]
pub struct BackendError {
    /// Whether the same call may succeed if tried again (a dropped connection,
    /// a busy database) as opposed to never (a corrupt file).
    pub retryable: bool,
    /// The backend's own error.
    pub source: Box<dyn Error + Send + Sync>,
}

impl fmt::Display for BackendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.retryable {
            "retryable"
        } else {
            "permanent"
        };
        write!(f, "storage backend failed ({kind}): {}", self.source)
    }
}

impl Error for BackendError {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.source)
    }
}

impl BackendError {
    /// A failure worth retrying.
    pub fn retryable(source: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        Self {
            retryable: true,
            source: source.into(),
        }
    }

    /// A failure that retrying will not fix.
    pub fn permanent(source: impl Into<Box<dyn Error + Send + Sync>>) -> Self {
        Self {
            retryable: false,
            source: source.into(),
        }
    }
}
