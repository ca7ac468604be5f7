//! The pin: retention's one question about a finished child.

use crate::event::Envelope;
use crate::input::{ExecutionId, InputError};
use crate::kind::{KernelKind, KindClass, has_kernel_stamp};
use crate::park::waits_of;
use crate::status::Status;

/// Whether `child` must be kept because the parent whose log is
/// `parent_events` is parked on it: the parent is not terminal and its open
/// park has a `CHILD_DONE` wait naming the child, by its own key or in a
/// group.
///
/// Only that pins. A parent that is running, answered, parked on something
/// else or on another child, or gone (an empty log) does not: the child is
/// then retention's to delete like any other, which is the design's rule ("left
/// exactly where it is" only while the parent waits on it).
///
/// The open park here is the newest park no *known* answering kind
/// follows. A park whose waits cannot be read, or that is followed by a
/// kernel-stamped kind this node does not know, is an error (an
/// [`InputError`] about the park, or [`InputError::UnknownKind`]), never a
/// guess either way. Retention keeps the child either way: guessing
/// "pinned" keeps a log forever, guessing "free" may delete the one child
/// the parent needs.
pub fn pin_parked_children(
    child: &ExecutionId,
    parent_events: &[Envelope],
) -> Result<bool, InputError> {
    let kernel = |event: &Envelope| KernelKind::from_name(&event.kind);
    if parent_events
        .iter()
        .any(|event| Status::Pending.after(kernel(event)).is_terminal())
    {
        return Ok(false);
    }
    let Some(index) = parent_events
        .iter()
        .rposition(|event| kernel(event).is_some_and(|k| k.class() == KindClass::Answering))
    else {
        return Ok(false);
    };
    let park = &parent_events[index];
    if !park.is_park() {
        return Ok(false);
    }
    if let Some(unknown) = parent_events[index + 1..]
        .iter()
        .find(|event| kernel(event).is_none() && has_kernel_stamp(&event.metadata))
    {
        return Err(InputError::UnknownKind {
            sequence: unknown.sequence,
            kind: unknown.kind.clone(),
        });
    }
    Ok(waits_of(park)?
        .iter()
        .any(|wait| wait.children().contains(child)))
}
