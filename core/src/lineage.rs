//! The child → parent edge, as the child's own log records it.
//!
//! You need it when you start a child, or find a child's parent (retention,
//! a supervisor).
//!
//! A child's `EXECUTION_STARTED` carries `payload.parent`, the id of the
//! execution that started it. Retention reads it to know whose park to
//! check before deleting a finished child: the edge lives in the child's
//! log, so it survives every restart and needs no supervisor. A log written
//! without it (before this field existed, or by a host that does not write
//! it) has no recorded parent; the runtime then falls back to the parents a
//! supervisor knows from their parks.

use serde_json::Value;

use crate::event::{Envelope, NewEvent};
use crate::input::{ExecutionId, InputError};
use crate::json::JsonObject;
use crate::kind::KernelKind;

/// The payload field of `EXECUTION_STARTED` that names the parent.
pub const PARENT_FIELD: &str = "parent";

/// The `EXECUTION_STARTED` of a child started by `parent`, at `at`.
///
/// Writing the edge into the child's first event (rather than only into the
/// parent's park) is what lets retention find the one park that could pin
/// the child with one read, and after any restart.
#[must_use]
pub fn started_child(parent: &ExecutionId, at: i64) -> NewEvent {
    let mut payload = JsonObject::new();
    payload.insert(
        PARENT_FIELD.to_owned(),
        Value::String(parent.as_str().to_owned()),
    );
    NewEvent::kernel(KernelKind::ExecutionStarted, at).with_payload(payload)
}

/// The parent recorded by the log's first `EXECUTION_STARTED`: `None` when
/// the log has no start, or its start names no parent (`parent` absent or
/// `null`, as a root execution writes it).
pub fn parent_of(events: &[Envelope]) -> Result<Option<ExecutionId>, InputError> {
    let Some(start) = events
        .iter()
        .find(|e| e.kernel_kind() == Some(KernelKind::ExecutionStarted))
    else {
        return Ok(None);
    };
    match start.payload.get(PARENT_FIELD) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(id)) => {
            ExecutionId::new(id.as_str())
                .map(Some)
                .map_err(|source| InputError::BadParent {
                    sequence: start.sequence,
                    source: Box::new(source),
                })
        }
        Some(other) => Err(InputError::ParentNotAString {
            sequence: start.sequence,
            found: other.to_string(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn id(s: &str) -> ExecutionId {
        ExecutionId::new(s).expect("valid")
    }

    fn log(events: Vec<NewEvent>) -> Vec<Envelope> {
        events
            .into_iter()
            .zip(1..)
            .map(|(e, seq)| e.into_envelope(id("child"), seq))
            .collect()
    }

    fn started_with(parent: Value) -> NewEvent {
        let mut payload = JsonObject::new();
        payload.insert(PARENT_FIELD.to_owned(), parent);
        NewEvent::kernel(KernelKind::ExecutionStarted, 1).with_payload(payload)
    }

    #[test]
    fn the_helper_writes_what_the_reader_reads() {
        let events = log(vec![
            NewEvent::new("app.audit", 0),
            started_child(&id("order-1"), 1),
            started_with(json!("someone-else")),
        ]);
        assert_eq!(parent_of(&events), Ok(Some(id("order-1"))));
    }

    #[test]
    fn a_root_or_an_old_log_has_no_recorded_parent() {
        assert_eq!(parent_of(&[]), Ok(None));
        assert_eq!(
            parent_of(&log(vec![NewEvent::kernel(
                KernelKind::ExecutionStarted,
                1
            )])),
            Ok(None)
        );
        assert_eq!(parent_of(&log(vec![started_with(Value::Null)])), Ok(None));
    }

    #[test]
    fn a_corrupt_parent_is_an_error_not_a_guess() {
        assert!(matches!(
            parent_of(&log(vec![started_with(json!(7))])),
            Err(InputError::ParentNotAString { sequence: 1, .. })
        ));
        assert!(matches!(
            parent_of(&log(vec![started_with(json!(""))])),
            Err(InputError::BadParent { sequence: 1, .. })
        ));
    }
}
