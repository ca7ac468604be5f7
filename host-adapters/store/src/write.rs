//! The checks every adapter makes before a write reaches its backend.

use loomfence_core::fence::{BatchFacts, check_batch, check_safe};
use loomfence_core::{ExecutionId, InputError, NewEvent};

use crate::StoreError;

/// A write that passed the input checks: a valid id, well-formed events
/// under one token, a JS-safe `park_seq`.
#[derive(Debug)]
pub struct CheckedWrite {
    /// The execution.
    pub id: ExecutionId,
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
    execution_id: &str,
    events: Vec<NewEvent>,
    park_seq: Option<u64>,
) -> Result<Option<CheckedWrite>, StoreError> {
    let id = ExecutionId::try_from(execution_id).map_err(InputError::from)?;
    let (batch, _) = check_batch(&events)?;
    match park_seq {
        Some(park_seq) => {
            check_safe("parkSeq", park_seq)?;
        }
        None if events.is_empty() => return Ok(None),
        None => {}
    }
    Ok(Some(CheckedWrite {
        id,
        batch,
        events,
        park_seq,
    }))
}
