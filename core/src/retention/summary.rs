//! What a paged listing says about each execution: enough to decide, without
//! reading its log, whether retention may even consider it.

use crate::event::Envelope;
use crate::input::{ExecutionId, InputError};

/// The most executions one page of a listing may ask for. A sweep pages
/// through a store of any size; a bound keeps one page's memory and one
/// query's time bounded on every backend.
pub const MAX_PAGE_LIMIT: u32 = 10_000;

/// When an execution ended: its first terminal event. Terminal is absorbing,
/// so this never changes once set, and it is what a retention cutoff is
/// compared with (a late audit event does not make an old end young).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Ended {
    /// The terminal event's sequence.
    pub sequence: u64,
    /// Its `at`, in ms since the epoch.
    pub at: i64,
}

/// One execution as a listing reports it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ExecutionSummary {
    /// The execution.
    pub execution_id: ExecutionId,
    /// Its last sequence (a listed execution has a log, so at least 1).
    pub head: u64,
    /// When it ended, `None` while it has not.
    pub ended: Option<Ended>,
}

/// The first terminal event of `events`, which is where the status fold
/// becomes terminal: a store computes the same thing with an index on
/// terminal kinds instead of folding.
#[must_use]
pub fn ended_of(events: &[Envelope]) -> Option<Ended> {
    events.iter().find(|e| e.is_terminal()).map(|e| Ended {
        sequence: e.sequence,
        at: e.at,
    })
}

/// The summary of a non-empty log; `None` for an empty one (a listing only
/// reports executions that have a log).
#[must_use]
pub fn summarize(execution_id: &ExecutionId, events: &[Envelope]) -> Option<ExecutionSummary> {
    let last = events.last()?;
    Some(ExecutionSummary {
        execution_id: execution_id.clone(),
        head: last.sequence,
        ended: ended_of(events),
    })
}

/// Checks a batched read of whole logs: at most [`MAX_PAGE_LIMIT`] ids
/// (a sweep asks for one page's at most), checked before anything is
/// read.
pub fn check_read_batch(ids: &[ExecutionId]) -> Result<(), InputError> {
    if ids.len() > MAX_PAGE_LIMIT as usize {
        return Err(InputError::Limit {
            what: "ids",
            value: u64::try_from(ids.len()).unwrap_or(u64::MAX),
            max: u64::from(MAX_PAGE_LIMIT),
        });
    }
    Ok(())
}

/// Checks a listing's page limit: 1 to [`MAX_PAGE_LIMIT`].
pub fn check_page_limit(limit: u32) -> Result<u32, InputError> {
    if limit == 0 || limit > MAX_PAGE_LIMIT {
        Err(InputError::Limit {
            what: "limit",
            value: u64::from(limit),
            max: u64::from(MAX_PAGE_LIMIT),
        })
    } else {
        Ok(limit)
    }
}
