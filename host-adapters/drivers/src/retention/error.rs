//! Why a sweep stopped.

use loomfence_core::{SweepError, SweepMachineError, SweepReport};
use loomfence_store::StoreError;

use super::archive::ArchiveError;

/// Why a retention sweep stopped before the end. Each carries what was done
/// until then: deletions before the failure stand.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RetentionError {
    /// A log could not be judged (a corrupt recorded parent, a parent's
    /// unreadable park); it was kept. Fix or delete it by hand: the next
    /// sweep stops on it again.
    #[error("the sweep stopped on a log it cannot judge: {source}")]
    Judge {
        /// What the sweep did before.
        report: Box<SweepReport>,
        /// The log and what is wrong with it.
        #[source]
        source: SweepError,
    },
    /// The store failed (a read, the listing, the delete). Nothing was
    /// deleted for the execution at hand unless the delete's outcome is
    /// unknown ([`StoreError::OutcomeUnknown`]).
    #[error("the store failed during the sweep: {source}")]
    Store {
        /// What the sweep did before.
        report: Box<SweepReport>,
        /// The store's error.
        #[source]
        source: StoreError,
    },
    /// The archive did not take a log; it was not deleted.
    #[error("the archive failed during the sweep: {source}")]
    Archive {
        /// What the sweep did before.
        report: Box<SweepReport>,
        /// The sink's error.
        #[source]
        source: ArchiveError,
    },
    /// The store answered something the sweep cannot use (a listing that
    /// repeats its cursor, events of another execution): a broken adapter.
    #[error("the store answered out of contract: {source}")]
    Contract {
        /// What the sweep did before.
        report: Box<SweepReport>,
        /// What was wrong.
        #[source]
        source: SweepMachineError,
    },
}

impl RetentionError {
    /// What the sweep did before it stopped.
    #[must_use]
    pub fn report(&self) -> &SweepReport {
        match self {
            RetentionError::Judge { report, .. }
            | RetentionError::Store { report, .. }
            | RetentionError::Archive { report, .. }
            | RetentionError::Contract { report, .. } => report,
        }
    }
}
