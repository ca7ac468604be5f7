//! What a store's answers to a sweep must be, checked by the machine before
//! it decides anything on them: one set of checks for every host, so a
//! broken adapter stops the Rust runtime and the npm package alike.

use crate::contract::ContractError;
use crate::event::Envelope;
use crate::input::ExecutionId;
use crate::retention::guard::{DeleteGuard, GuardedDelete};
use crate::retention::summary::ExecutionSummary;

/// Checks a listing page after `after`, asked with `limit`.
pub(crate) fn check_page(
    page: &[ExecutionSummary],
    after: Option<&ExecutionId>,
    limit: u32,
) -> Result<(), ContractError> {
    if page.len() > limit as usize {
        return Err(ContractError::PageOverLimit {
            limit,
            listed: page.len(),
        });
    }
    for summary in page {
        if after == Some(&summary.execution_id) {
            return Err(ContractError::PageRepeatsCursor {
                after: summary.execution_id.clone(),
            });
        }
        let ended = summary.ended.map(|ended| ended.sequence);
        if summary.head == 0 || ended.is_some_and(|seq| seq == 0 || seq > summary.head) {
            return Err(ContractError::InvalidSummary {
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
pub(crate) fn check_log(expected: &ExecutionId, events: &[Envelope]) -> Result<(), ContractError> {
    for (due, event) in (1..).zip(events) {
        if &event.execution_id != expected {
            return Err(ContractError::WrongLog {
                expected: expected.clone(),
                got: event.execution_id.clone(),
            });
        }
        if event.sequence != due {
            return Err(ContractError::LogNotWhole {
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
) -> Result<(), ContractError> {
    let answers = match outcome {
        GuardedDelete::Deleted => true,
        GuardedDelete::LogChanged { head } => *head != guard.head,
        GuardedDelete::ParentMoved { parent } => guard.parents.iter().any(|m| &m.parent == parent),
    };
    if answers {
        Ok(())
    } else {
        Err(ContractError::OutcomeOutsideGuard {
            execution_id: execution_id.clone(),
            outcome: outcome.clone(),
        })
    }
}

/// Checks that a batched call answered `answered` answers to `asked`
/// questions: one each, or none can be matched to what was asked.
pub(crate) fn check_answer_count(
    what: &'static str,
    asked: usize,
    answered: usize,
) -> Result<(), ContractError> {
    if asked == answered {
        Ok(())
    } else {
        Err(ContractError::BatchLength {
            what,
            asked,
            answered,
        })
    }
}
