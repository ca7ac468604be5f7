//! Why a sweep stopped.

use loomfence_core::retention::SweepReport;
use loomfence_core::{ContractError, InputError};
use loomfence_store::StoreError;

use super::archive::ArchiveError;

/// Why a retention sweep was refused or stopped before the end. Each that
/// stopped a sweep carries what was done until then: deletions before the
/// failure stand. A log the sweep cannot judge is not an error: it is kept
/// and listed in [`SweepReport::undecided`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RetentionError {
    /// The options ask for an archive (`archive: true`) but no
    /// [sink](super::Sweep::archive) was given. Refused before anything was
    /// listed: deleting logs that were meant to be archived cannot be
    /// undone.
    #[error("the sweep's options ask for an archive, but no archive sink was given")]
    ArchiveWithoutSink {
        /// What the sweep did: nothing (an empty report).
        report: Box<SweepReport>,
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
        source: ContractError,
    },
}

impl RetentionError {
    /// The error for options the core refused before anything was listed,
    /// with an empty report: a page limit out of bounds is the listing's
    /// own error, as the store would have given it.
    pub(crate) fn refused(refused: InputError, dry_run: bool) -> Self {
        let report = Box::new(SweepReport {
            dry_run,
            ..SweepReport::default()
        });
        match refused {
            InputError::ArchiveWithoutSink => RetentionError::ArchiveWithoutSink { report },
            source => RetentionError::Store {
                report,
                source: StoreError::Input(source),
            },
        }
    }

    /// What the sweep did before it stopped (nothing, for a refused one).
    #[must_use]
    pub fn report(&self) -> &SweepReport {
        match self {
            RetentionError::ArchiveWithoutSink { report }
            | RetentionError::Store { report, .. }
            | RetentionError::Archive { report, .. }
            | RetentionError::Contract { report, .. } => report,
        }
    }
}
