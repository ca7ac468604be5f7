//! The fence decisions, as pure functions every backend applies the same way.
//!
//! A store owns the atomicity (a mutex, a `BEGIN IMMEDIATE`, a row lock); these
//! functions own the rules. Keeping them here means the memory store, SQLite,
//! PostgreSQL and a JavaScript host cannot disagree on what an append or an
//! acquire is allowed to do.

use serde::{Deserialize, Serialize};

use crate::event::{Envelope, EventFacts, MAX_SAFE_INTEGER, NewEvent};
use crate::input::{ExecutionId, InputError};
use crate::kind::{KernelKind, KindClass};

/// What a caller expects when it acquires conditionally: the token under which
/// the park it answers was written, and that park's sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ParkExpectation {
    /// The token the caller believes is current.
    pub fence: u64,
    /// The sequence of the park being answered.
    pub park_seq: u64,
}

/// The answer of a conditional acquire. Losing the race is an expected answer,
/// not an error: the caller decides whether to re-read and retry.
#[must_use]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AcquireOutcome {
    /// The token matched and the park is unanswered: `fence` is the caller's
    /// new token.
    Acquired {
        /// The new, now current, token.
        fence: u64,
    },
    /// The token moved or the park was answered: nothing changed, and `fence`
    /// is the current token.
    Stale {
        /// The token as it stands.
        fence: u64,
    },
}

impl AcquireOutcome {
    /// The token this outcome reports: new when acquired, current when stale.
    #[must_use]
    pub fn fence(self) -> u64 {
        match self {
            AcquireOutcome::Acquired { fence } | AcquireOutcome::Stale { fence } => fence,
        }
    }

    /// Whether the caller now holds the fence.
    #[must_use]
    pub fn is_acquired(self) -> bool {
        matches!(self, AcquireOutcome::Acquired { .. })
    }
}

/// The answer of a park-conditional append. A park that was answered first
/// is an expected race, so it is a value, not an error.
#[must_use]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ConditionalAppend {
    /// The park was still open; the batch is stored at these envelopes.
    Appended(Vec<Envelope>),
    /// An answering event already follows the park; nothing was written.
    ParkAnswered,
}

/// An append refused because its writer no longer holds the execution.
///
/// This is the refusal that keeps two bodies from writing one log: a batch
/// under an older token than the current one, or an unfenced answering batch
/// once anyone has acquired.
#[derive(Clone, Debug, PartialEq, Eq, Hash, thiserror::Error)]
#[error("{}", describe_stale(.execution_id, *.presented, *.current))]
pub struct StaleFenceError {
    /// The execution the append was for.
    pub execution_id: ExecutionId,
    /// The token the batch carried; `None` for an unfenced batch.
    pub presented: Option<u64>,
    /// The execution's current token.
    pub current: u64,
}

/// Renders a [`StaleFenceError`], which reads differently for unfenced
/// batches.
fn describe_stale(id: &ExecutionId, presented: Option<u64>, current: u64) -> String {
    match presented {
        Some(token) => format!(
            "stale fence on execution {id:?}: the batch holds token {token}, the current token is {current}"
        ),
        None => format!(
            "unfenced answering append refused: execution {id:?} is fenced at token {current}"
        ),
    }
}

/// What the append guard needs to know about a whole batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchFacts {
    /// The batch's token, `None` when unfenced.
    pub fence: Option<u64>,
    /// Whether any event of the batch answers a park.
    pub answering: bool,
}

/// Validates every event of a batch and summarises it for the guard.
///
/// Returns the per-event facts too, so a store can keep each event's class
/// without classifying it twice.
pub fn check_batch(events: &[NewEvent]) -> Result<(BatchFacts, Vec<EventFacts>), InputError> {
    let facts = events
        .iter()
        .enumerate()
        .map(|(index, event)| {
            event.check().map_err(|source| InputError::Event {
                index,
                source: Box::new(source),
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let first = facts.first().and_then(|f| f.fence);
    if let Some(index) = facts.iter().position(|f| f.fence != first) {
        return Err(InputError::MixedFences {
            index,
            first,
            found: facts[index].fence,
        });
    }
    let batch = BatchFacts {
        fence: first,
        answering: facts.iter().any(|f| f.class == KindClass::Answering),
    };
    Ok((batch, facts))
}

/// The append guard: one decision for a whole batch, given the execution's
/// current token.
///
/// A fenced batch passes while its token is at least the current one. An
/// unfenced batch passes when it only holds ignorable events, or while nobody
/// has ever acquired; an unfenced answering batch on a fenced execution is
/// refused for good, which is what sends a supervisor's unfenced first try to
/// the conditional path.
pub fn guard_append(
    execution_id: &ExecutionId,
    current: u64,
    batch: BatchFacts,
) -> Result<(), StaleFenceError> {
    let passes = match batch.fence {
        Some(token) => token >= current,
        None => !batch.answering || current == 0,
    };
    if passes {
        Ok(())
    } else {
        Err(StaleFenceError {
            execution_id: execution_id.clone(),
            presented: batch.fence,
            current,
        })
    }
}

/// The token an unconditional acquire moves to.
#[must_use]
pub fn next_token(current: u64) -> u64 {
    current.saturating_add(1)
}

/// The conditional acquire: bump only if the token is the expected one AND no
/// answering event follows the park.
///
/// The token condition catches a rival that acquired; the park condition
/// catches a rival whose resume already landed (a resume's append does not
/// move the token), which a retry on a re-read token would otherwise miss.
pub fn decide_acquire_if(
    current: u64,
    expect: ParkExpectation,
    answered_after_park: bool,
) -> AcquireOutcome {
    if current == expect.fence && !answered_after_park {
        AcquireOutcome::Acquired {
            fence: next_token(current),
        }
    } else {
        AcquireOutcome::Stale { fence: current }
    }
}

/// Checks that a numeric argument fits a JavaScript number exactly.
pub fn check_safe(what: &'static str, value: u64) -> Result<u64, InputError> {
    if value > MAX_SAFE_INTEGER {
        Err(InputError::OutOfRange { what, value })
    } else {
        Ok(value)
    }
}

/// Checks that `park_seq` names an event of a log whose last sequence is
/// `head`: a conditional operation about a park that is not there is
/// refused before anything changes.
pub fn check_park_seq(park_seq: u64, head: u64) -> Result<(), InputError> {
    check_safe("parkSeq", park_seq)?;
    if park_seq == 0 || park_seq > head {
        return Err(InputError::ParkSeqOutOfRange { park_seq, head });
    }
    Ok(())
}

/// Checks that the event at `park_seq`, of kind `kind`, is a park. Together
/// with [`check_park_seq`] this is what every store checks, in the same
/// atomic step, before a conditional acquire or append: after a delete, a
/// log can grow back past the sequence a resumer read as its park.
pub fn check_is_park(park_seq: u64, kind: &str) -> Result<(), InputError> {
    if KernelKind::from_name(kind) == Some(KernelKind::ExecutionSuspended) {
        Ok(())
    } else {
        Err(InputError::NotAPark {
            park_seq,
            kind: kind.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> ExecutionId {
        ExecutionId::new("e").expect("valid")
    }

    fn batch(fence: Option<u64>, answering: bool) -> BatchFacts {
        BatchFacts { fence, answering }
    }

    #[test]
    fn the_guard_table() {
        // (current, fence, answering) -> passes
        let table = [
            (0, None, false, true),
            (0, None, true, true),
            (3, None, false, true),
            (3, None, true, false),
            (3, Some(2), false, false),
            (3, Some(2), true, false),
            (3, Some(3), true, true),
            (3, Some(4), true, true),
            (0, Some(0), true, true),
        ];
        for (current, fence, answering, passes) in table {
            let verdict = guard_append(&id(), current, batch(fence, answering));
            assert_eq!(
                verdict.is_ok(),
                passes,
                "current {current}, fence {fence:?}, answering {answering}"
            );
            if let Err(stale) = verdict {
                assert_eq!((stale.presented, stale.current), (fence, current));
            }
        }
    }

    #[test]
    fn the_acquire_if_table() {
        let expect = ParkExpectation {
            fence: 5,
            park_seq: 9,
        };
        assert_eq!(
            decide_acquire_if(5, expect, false),
            AcquireOutcome::Acquired { fence: 6 }
        );
        assert_eq!(
            decide_acquire_if(6, expect, false),
            AcquireOutcome::Stale { fence: 6 }
        );
        assert_eq!(
            decide_acquire_if(5, expect, true),
            AcquireOutcome::Stale { fence: 5 }
        );
        assert_eq!(
            decide_acquire_if(4, expect, true),
            AcquireOutcome::Stale { fence: 4 }
        );
    }

    #[test]
    fn a_batch_has_one_token() {
        let events = [
            NewEvent::kernel(KernelKind::MessageConsumed, 0).with_fence(2),
            NewEvent::kernel(KernelKind::ExecutionResumed, 0).with_fence(2),
        ];
        let (facts, each) = check_batch(&events).expect("valid batch");
        assert_eq!(facts, batch(Some(2), true));
        assert_eq!(each.len(), 2);

        let mixed = [
            NewEvent::kernel(KernelKind::MessageConsumed, 0).with_fence(2),
            NewEvent::kernel(KernelKind::ExecutionResumed, 0),
        ];
        assert_eq!(
            check_batch(&mixed),
            Err(InputError::MixedFences {
                index: 1,
                first: Some(2),
                found: None
            })
        );
    }

    #[test]
    fn the_first_invalid_event_is_named() {
        let events = [NewEvent::new("ok", 0), NewEvent::new("", 0)];
        assert_eq!(
            check_batch(&events),
            Err(InputError::Event {
                index: 1,
                source: Box::new(InputError::KindEmpty)
            })
        );
    }

    #[test]
    fn park_seqs_must_point_into_the_log() {
        assert_eq!(check_park_seq(3, 3), Ok(()));
        assert_eq!(
            check_park_seq(4, 3),
            Err(InputError::ParkSeqOutOfRange {
                park_seq: 4,
                head: 3
            })
        );
        assert_eq!(
            check_park_seq(0, 3),
            Err(InputError::ParkSeqOutOfRange {
                park_seq: 0,
                head: 3
            })
        );
        assert_eq!(
            check_park_seq(MAX_SAFE_INTEGER + 1, 3),
            Err(InputError::OutOfRange {
                what: "parkSeq",
                value: MAX_SAFE_INTEGER + 1
            })
        );
    }

    #[test]
    fn only_a_suspension_is_a_park() {
        assert_eq!(check_is_park(2, "EXECUTION_SUSPENDED"), Ok(()));
        let refused = check_is_park(2, "STEP_COMPLETED");
        assert_eq!(
            refused,
            Err(InputError::NotAPark {
                park_seq: 2,
                kind: "STEP_COMPLETED".to_owned()
            })
        );
        assert!(refused.is_err_and(|e| e.is_park_gone()));
        assert!(
            InputError::ParkSeqOutOfRange {
                park_seq: 1,
                head: 0
            }
            .is_park_gone()
        );
    }

    #[test]
    fn stale_errors_read_well() {
        let fenced = StaleFenceError {
            execution_id: id(),
            presented: Some(1),
            current: 2,
        };
        assert!(fenced.to_string().contains("token 1"));
        let unfenced = StaleFenceError {
            execution_id: id(),
            presented: None,
            current: 2,
        };
        assert!(
            unfenced
                .to_string()
                .starts_with("unfenced answering append refused")
        );
    }
}
