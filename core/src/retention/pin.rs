//! The pin: retention's one question about a finished child.

use crate::event::Envelope;
use crate::fold::ExecutionView;
use crate::id::ExecutionId;
use crate::park::{ParkError, waits_of};

/// Whether `child` must be kept because the parent whose log is
/// `parent_events` is parked on it: the parent is not terminal and its open
/// park has a `CHILD_DONE` wait naming the child, by its own key or in a
/// group.
///
/// Only that pins. A parent that is running, answered, parked on something
/// else or on another child, or gone (an empty log) does not: the child is
/// then retention's to delete like any other, which is the ADR's rule ("left
/// exactly where it is" only while the parent waits on it). A park whose
/// waits cannot be read is an error, never a guess either way: guessing
/// "pinned" keeps a log forever, guessing "free" may delete the one child
/// the parent needs.
pub fn pin_parked_children(
    child: &ExecutionId,
    parent_events: &[Envelope],
) -> Result<bool, ParkError> {
    let view = ExecutionView::fold(parent_events);
    if view.status.is_terminal() {
        return Ok(false);
    }
    let Some(open) = view.open_park else {
        return Ok(false);
    };
    let Some(park) = parent_events.iter().find(|e| e.sequence == open.sequence) else {
        return Ok(false);
    };
    Ok(waits_of(park)?
        .iter()
        .any(|wait| wait.children().contains(child)))
}
