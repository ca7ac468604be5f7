//! What a store's answers to a sweep must be, checked by the machine before
//! it decides anything on them: one set of checks for every host, so a
//! broken adapter stops the Rust runtime and the npm package alike.

use crate::event::Envelope;
use crate::id::ExecutionId;
use crate::retention::guard::{DeleteGuard, GuardedDelete};
use crate::retention::summary::ExecutionSummary;

/// A driver that answered out of turn or with an answer about something
/// else, or a store that answered outside its interface. The machine's
/// state is unchanged; the driver stops the sweep with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SweepMachineError {
    /// A `handle_*` call that does not answer the pending action.
    #[error("{got} does not answer the pending action ({expected})")]
    UnexpectedInput {
        /// What the machine waits for.
        expected: &'static str,
        /// What it was given.
        got: &'static str,
    },
    /// Events of another execution than the one asked for.
    #[error("the store answered with events of {got:?} to a read of {expected:?}")]
    WrongExecution {
        /// The execution asked for.
        expected: ExecutionId,
        /// The one in the answer.
        got: ExecutionId,
    },
    /// A page that lists the previous page's last id again: a listing
    /// whose `after` is not exclusive would never end.
    #[error(
        "the listing after {after:?} listed {after:?} again: the cursor is exclusive, or the sweep would never end"
    )]
    PageRepeatsCursor {
        /// The cursor given.
        after: ExecutionId,
    },
    /// A page longer than the limit asked for: the listing ignores its
    /// bound, so its paging cannot be trusted either.
    #[error("the listing answered {listed} executions to a limit of {limit}")]
    PageOverLimit {
        /// The limit asked for.
        limit: u32,
        /// How many were listed.
        listed: usize,
    },
    /// A summary that contradicts itself: a head of 0 (a listed execution
    /// has a log) or an end outside the log. Its end is what eligibility
    /// is judged by, so it cannot be used.
    #[error(
        "the listing's summary of {execution_id:?} is not of a log: a head of 0, or an end outside it (head {head})"
    )]
    InvalidSummary {
        /// The execution.
        execution_id: ExecutionId,
        /// The head listed.
        head: u64,
        /// The end's sequence listed.
        ended: Option<u64>,
    },
    /// A whole-log read whose events do not run from sequence 1, one by
    /// one: judging or archiving it would miss events.
    #[error(
        "the read of {execution_id:?}'s whole log answered sequence {got} where {expected} belongs: a log runs from 1, contiguous"
    )]
    LogNotWhole {
        /// The execution read.
        execution_id: ExecutionId,
        /// The sequence due at that place.
        expected: u64,
        /// The one answered.
        got: u64,
    },
    /// A refused delete that cannot be the answer to the guard sent: the
    /// log "changed" to the very head the guard names, or a parent the
    /// guard does not name "moved".
    #[error(
        "the guarded delete of {execution_id:?} was refused with an answer that cannot answer its guard: the log's own head, or a parent it does not name"
    )]
    OutcomeOutsideGuard {
        /// The execution.
        execution_id: ExecutionId,
        /// The answer.
        outcome: GuardedDelete,
    },
}

/// Checks a listing page after `after`, asked with `limit`.
pub(crate) fn check_page(
    page: &[ExecutionSummary],
    after: Option<&ExecutionId>,
    limit: u32,
) -> Result<(), SweepMachineError> {
    if page.len() > limit as usize {
        return Err(SweepMachineError::PageOverLimit {
            limit,
            listed: page.len(),
        });
    }
    for summary in page {
        if after == Some(&summary.execution_id) {
            return Err(SweepMachineError::PageRepeatsCursor {
                after: summary.execution_id.clone(),
            });
        }
        let ended = summary.ended.map(|ended| ended.sequence);
        if summary.head == 0 || ended.is_some_and(|seq| seq == 0 || seq > summary.head) {
            return Err(SweepMachineError::InvalidSummary {
                execution_id: summary.execution_id.clone(),
                head: summary.head,
                ended,
            });
        }
    }
    Ok(())
}

/// Checks that `events` are the whole log of `expected`: its own events,
/// from sequence 1, contiguous.
pub(crate) fn check_log(
    expected: &ExecutionId,
    events: &[Envelope],
) -> Result<(), SweepMachineError> {
    for (due, event) in (1..).zip(events) {
        if &event.execution_id != expected {
            return Err(SweepMachineError::WrongExecution {
                expected: expected.clone(),
                got: event.execution_id.clone(),
            });
        }
        if event.sequence != due {
            return Err(SweepMachineError::LogNotWhole {
                execution_id: expected.clone(),
                expected: due,
                got: event.sequence,
            });
        }
    }
    Ok(())
}

/// Checks that `outcome` can answer a guarded delete of `execution_id`
/// under `guard`.
pub(crate) fn check_outcome(
    execution_id: &ExecutionId,
    guard: &DeleteGuard,
    outcome: &GuardedDelete,
) -> Result<(), SweepMachineError> {
    let answers = match outcome {
        GuardedDelete::Deleted => true,
        GuardedDelete::LogChanged { head } => *head != guard.head,
        GuardedDelete::ParentMoved { parent } => guard.parents.iter().any(|m| &m.parent == parent),
    };
    if answers {
        Ok(())
    } else {
        Err(SweepMachineError::OutcomeOutsideGuard {
            execution_id: execution_id.clone(),
            outcome: outcome.clone(),
        })
    }
}
