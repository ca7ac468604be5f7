//! The runtime's one error: why a resume, a supervision, a timer fire or a
//! retention sweep did not do what was asked.

use std::error::Error;
use std::io;
use std::path::PathBuf;

use loomfence_core::{
    ContractError, ExecutionId, InputError, ResumeError, redrive::RedriveExhaustedError,
    retention::SweepReport, timer::UnreadableRow,
};
use loomfence_store::StoreError;

/// Why the runtime could not do what was asked.
///
/// It wraps the layer below rather than repeating it: the protocol's answer
/// ([`ResumeError`]), a store's failure ([`StoreError`], the event store's
/// and the timer store's apart), a broken contract ([`ContractError`]) and
/// the core's refusals of an input. A few variants add context around
/// another `RuntimeError` (which re-drive, which re-driver, which sweep).
/// Callers branch on the methods ([`is_retryable`](Self::is_retryable),
/// [`is_contended`](Self::is_contended), [`store_error`](Self::store_error),
/// [`partial_report`](Self::partial_report), ...) rather than on the shape.
///
/// Expected races are values, not errors, wherever a caller can act on
/// them: a supervision whose park was answered first is
/// `Supervised::AlreadyAnswered`, a timer fire that lost its race is a fire
/// outcome in the tick's report. Only the caller of a resume sees a lost
/// race here, as [`RuntimeError::Resume`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RuntimeError {
    /// The protocol's answer: refused (final, nothing appended, no token
    /// taken), contended (retryable, nothing appended), or an unfenced
    /// resume that met a fenced execution (retry with a fence).
    #[error(transparent)]
    Resume(#[from] ResumeError),
    /// The event store failed; [`StoreError::is_retryable`] says whether to
    /// retry. A timer fire that meets it leaves its claim to expire.
    #[error(transparent)]
    Store(StoreError),
    /// The timer store failed: a claim (the tick fires nothing), a
    /// reschedule, a complete or a release (the claim is left to expire),
    /// or the write of a supervisor's re-drive row. Every timer write is
    /// safe to repeat.
    #[error("timer store: {0}")]
    Timers(StoreError),
    /// A store answered something the machine cannot accept: it broke its
    /// contract. Nothing more was done.
    #[error(transparent)]
    Contract(#[from] ContractError),
    /// An input was refused before anything was read or written: a resume
    /// request out of range, a random draw outside `[0, 1)`, a row or time
    /// the fire machine cannot take, a parent park that cannot be read as
    /// waits, or sweep options the core refuses (`archive: true` without a
    /// sink: deleting logs meant to be archived cannot be undone).
    #[error(transparent)]
    Input(#[from] InputError),
    /// A retry chain (a contended plain wake's, or a re-drive row's) gave
    /// up: its row was retired and the execution is left to `recover()`.
    /// A timer service reports it once per chain, to `on_error`; it is also
    /// the fire's outcome in the tick's report.
    #[error(transparent)]
    Exhausted(RedriveExhaustedError),
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
    /// An archive file could not be opened, written or synced. A log whose
    /// write or sync failed was cut back off the file: the file is as it
    /// was, and the next log can be appended.
    #[error("archive {path}: {source}")]
    ArchiveIo {
        /// The archive file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: io::Error,
    },
    /// An event could not be encoded for the archive (it cannot happen for
    /// a log a store returned; reported rather than unwrapped).
    #[error("an event of {execution_id:?} could not be encoded: {source}")]
    ArchiveEncode {
        /// The execution.
        execution_id: ExecutionId,
        /// The encoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// An earlier append failed and the bytes it left could not be cut
    /// off, so the file may end in a torn line: this archive appends
    /// nothing more. Opening the file again ends the torn line (with a
    /// newline, so the next record starts on a line of its own), or cut
    /// the file back to `whole_len` bytes, where its last whole record
    /// ends.
    #[error(
        "archive {path} is broken: a failed append left bytes past {whole_len} that could not be cut off; reopen it, or cut it to {whole_len} bytes"
    )]
    ArchiveBroken {
        /// The archive file.
        path: PathBuf,
        /// The length of the file's whole records.
        whole_len: u64,
    },
    /// A part of the host's own failed: an archive sink or a re-driver it
    /// wrote. The runtime only passes it on.
    #[error("{0}")]
    Host(#[source] Box<dyn Error + Send + Sync>),
    /// A machine asked for a step, or ended in an outcome, that this
    /// runtime does not know (the core is newer than the runtime), or named
    /// a re-driver that is not registered. Nothing more was done; a fire's
    /// claim is left to expire.
    #[error("the {machine} machine asked for something this runtime does not know: {detail}")]
    Unsupported {
        /// Which machine: `resume`, `supervise`, `fire` or `tick`.
        machine: &'static str,
        /// What it asked for.
        detail: String,
    },
    /// A re-driver returned an error. The timer service goes on: the error
    /// is the answer
    /// [`RedriveAnswer::Failed`](loomfence_core::timer::RedriveAnswer::Failed),
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
        source: Box<RuntimeError>,
    },
    /// Every conditional try of a supervision was contended, re-drive is
    /// on, and the re-drive row could not be written (the timer store, the
    /// random source or the clock failed): nothing will re-drive the park,
    /// which is still open. As for a contended resume without re-drive,
    /// the edges are kept, so the next notice or rebuild tries again.
    #[error(
        "the resume of {parent:?} was contended and its re-drive row was not written: {source}"
    )]
    Redrive {
        /// The parent.
        parent: ExecutionId,
        /// Why the row was not written.
        #[source]
        source: Box<RuntimeError>,
    },
    /// A retention sweep was refused or stopped before the end. Deletions
    /// before the failure stand: `report` says what was done
    /// ([`RuntimeError::partial_report`]). A log the sweep cannot judge is
    /// not an error: it is kept and listed in [`SweepReport::undecided`].
    #[error("{}", sweep_text(source))]
    Sweep {
        /// What the sweep did before it stopped (nothing, for a refused
        /// one).
        report: Box<SweepReport>,
        /// Why it stopped: the store (nothing was deleted for the execution
        /// at hand unless the delete's outcome is unknown), the archive
        /// (the log was not deleted), a broken contract, or options the
        /// core refused.
        #[source]
        source: Box<RuntimeError>,
    },
}

impl RuntimeError {
    /// Whether trying the same thing again may succeed: a contended resume,
    /// or a store failure its store calls retryable (looked for through
    /// the context variants).
    #[must_use]
    pub fn is_retryable(&self) -> bool {
        match self {
            RuntimeError::Resume(ResumeError::Contended(_)) => true,
            RuntimeError::Store(store) | RuntimeError::Timers(store) => store.is_retryable(),
            _ => self.inner().is_some_and(Self::is_retryable),
        }
    }

    /// Whether a store write may or may not have happened
    /// ([`StoreError::OutcomeUnknown`]), looked for through the context
    /// variants. Read back before writing again.
    #[must_use]
    pub fn is_outcome_unknown(&self) -> bool {
        self.store_error()
            .is_some_and(StoreError::is_outcome_unknown)
    }

    /// Whether this is a resume whose every acquire found the fence moved
    /// while the park stayed open: a later try is expected to work. A
    /// contended supervision whose re-drive row could not be written is a
    /// [`RuntimeError::Redrive`], not this.
    #[must_use]
    pub fn is_contended(&self) -> bool {
        matches!(self, RuntimeError::Resume(ResumeError::Contended(_)))
    }

    /// Whether this is a resume refused because its park was answered (or
    /// deleted) first: final, the loser's answer.
    #[must_use]
    pub fn is_refused(&self) -> bool {
        matches!(self, RuntimeError::Resume(ResumeError::Refused(_)))
    }

    /// The protocol's answer, if that is what this is (looked for through
    /// the context variants).
    #[must_use]
    pub fn resume_error(&self) -> Option<&ResumeError> {
        match self {
            RuntimeError::Resume(answer) => Some(answer),
            _ => self.inner().and_then(Self::resume_error),
        }
    }

    /// The store's error, event store or timer store, if a store failed
    /// (looked for through the context variants).
    #[must_use]
    pub fn store_error(&self) -> Option<&StoreError> {
        match self {
            RuntimeError::Store(store) | RuntimeError::Timers(store) => Some(store),
            _ => self.inner().and_then(Self::store_error),
        }
    }

    /// What a retention sweep did before it stopped (an empty report for
    /// one refused before it listed anything); `None` for anything but a
    /// sweep.
    #[must_use]
    pub fn partial_report(&self) -> Option<&SweepReport> {
        match self {
            RuntimeError::Sweep { report, .. } => Some(report),
            _ => None,
        }
    }

    /// The error a context variant (which re-driver, which re-drive,
    /// which sweep) wraps; the queries above look through it.
    fn inner(&self) -> Option<&RuntimeError> {
        match self {
            RuntimeError::Redriver { source, .. }
            | RuntimeError::Redrive { source, .. }
            | RuntimeError::Sweep { source, .. } => Some(source),
            _ => None,
        }
    }

    /// A machine's request this runtime does not know.
    pub(crate) fn unsupported(machine: &'static str, what: &dyn std::fmt::Debug) -> Self {
        RuntimeError::Unsupported {
            machine,
            detail: format!("{what:?}"),
        }
    }
}

/// The message of a stopped sweep: where it stopped, then why.
fn sweep_text(source: &RuntimeError) -> String {
    match source {
        RuntimeError::Store(error) => format!("the store failed during the sweep: {error}"),
        RuntimeError::Contract(error) => format!("the store answered out of contract: {error}"),
        RuntimeError::Input(refused) => refused.to_string(),
        RuntimeError::ArchiveIo { .. }
        | RuntimeError::ArchiveEncode { .. }
        | RuntimeError::ArchiveBroken { .. }
        | RuntimeError::Host(_) => format!("the archive failed during the sweep: {source}"),
        other => format!("the sweep stopped: {other}"),
    }
}

#[cfg(test)]
mod tests {
    use loomfence_store::BackendError;

    use super::*;

    fn sweep(source: RuntimeError) -> RuntimeError {
        RuntimeError::Sweep {
            report: Box::new(SweepReport {
                deleted: 3,
                ..SweepReport::default()
            }),
            source: Box::new(source),
        }
    }

    #[test]
    fn the_store_is_found_through_the_context() {
        let lost = sweep(RuntimeError::Store(StoreError::OutcomeUnknown(
            BackendError::retryable("cut"),
        )));
        assert!(lost.is_outcome_unknown());
        assert!(
            !lost.is_retryable(),
            "an unknown write is not retried blindly"
        );
        assert_eq!(lost.partial_report().map(|report| report.deleted), Some(3));

        let busy = RuntimeError::Redrive {
            parent: ExecutionId::new("p").expect("valid"),
            source: Box::new(RuntimeError::Timers(StoreError::Backend(
                BackendError::retryable("busy"),
            ))),
        };
        assert!(busy.is_retryable());
        assert!(busy.store_error().is_some());
        assert!(!busy.is_contended(), "a row not written is not contention");
        assert!(busy.partial_report().is_none());
    }

    #[test]
    fn a_sweep_says_where_it_stopped() {
        let store = sweep(RuntimeError::Store(StoreError::Backend(
            BackendError::permanent("disk"),
        )));
        assert!(
            store
                .to_string()
                .starts_with("the store failed during the sweep: "),
            "{store}"
        );
        let host = sweep(RuntimeError::Host("stopped".into()));
        assert_eq!(
            host.to_string(),
            "the archive failed during the sweep: stopped"
        );
        let refused = sweep(RuntimeError::Input(
            loomfence_core::InputError::ArchiveWithoutSink,
        ));
        assert_eq!(
            refused.to_string(),
            "the sweep's options ask for an archive, but no archive sink was given"
        );
    }
}
