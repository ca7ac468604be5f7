//! The input checks every adapter makes before a call reaches its backend,
//! so all of them refuse the same input with the same [`StoreError::Input`].
//! (Ids need none: they arrive as a checked
//! [`ExecutionId`](loomfence_core::ExecutionId).)

use loomfence_core::backend::{BatchFacts, check_batch, check_safe};
use loomfence_core::{NewEvent, ParkExpectation, log::MAX_SAFE_INTEGER};

use crate::StoreError;

/// A write that passed the input checks: well-formed events under one
/// token, a JS-safe `park_seq`.
#[derive(Debug)]
pub struct CheckedWrite {
    /// What the append guard needs to know about the batch.
    pub batch: BatchFacts,
    /// The events, in order.
    pub events: Vec<NewEvent>,
    /// The park a conditional append depends on.
    pub park_seq: Option<u64>,
}

/// Validates an append (`park_seq: None`) or a park-conditional append, so
/// every adapter refuses the same input with the same [`StoreError::Input`]
/// before it touches anything.
///
/// Returns `None` for an unconditional empty batch, which writes nothing on
/// any backend; a conditional empty batch still goes through, because its
/// answer (park open, answered, or outside the log) is the backend's.
pub fn check_write(
    events: Vec<NewEvent>,
    park_seq: Option<u64>,
) -> Result<Option<CheckedWrite>, StoreError> {
    let (batch, _) = check_batch(&events)?;
    match park_seq {
        Some(park_seq) => {
            check_safe("parkSeq", park_seq)?;
        }
        None if events.is_empty() => return Ok(None),
        None => {}
    }
    Ok(Some(CheckedWrite {
        batch,
        events,
        park_seq,
    }))
}

/// A read that passed the input checks.
#[derive(Debug)]
pub struct CheckedRead {
    /// The first sequence to read.
    pub from_seq: u64,
    /// The last sequence to read: `to_seq`, or [`MAX_SAFE_INTEGER`] (past
    /// any log) when it was open.
    pub to_seq: u64,
}

/// Validates a `read_range`: JS-safe bounds.
pub fn check_read(from_seq: u64, to_seq: Option<u64>) -> Result<CheckedRead, StoreError> {
    check_safe("fromSeq", from_seq)?;
    let to_seq = match to_seq {
        Some(to) => check_safe("toSeq", to)?,
        None => MAX_SAFE_INTEGER,
    };
    Ok(CheckedRead { from_seq, to_seq })
}

/// Validates a conditional acquire: a JS-safe token and park sequence.
/// Whether the park is in the log is the backend's answer.
pub fn check_acquire_if(expect: ParkExpectation) -> Result<(), StoreError> {
    check_safe("fence", expect.fence)?;
    check_safe("parkSeq", expect.park_seq)?;
    Ok(())
}
