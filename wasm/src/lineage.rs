//! The child → parent edge and the pin, for hosts that start children or
//! judge them in JavaScript: the core's `started_child`, `parent_of` and
//! `pin_parked_children`, nothing decided here.

use loomfence_core::{
    Envelope, InputError,
    lineage::{parent_of, started_child},
    retention::pin_parked_children,
};
use wasm_bindgen::prelude::*;

use crate::events::envelopes;
use crate::js_errors::{self, INVALID_LINEAGE, INVALID_PARK, UNKNOWN_KIND};
use crate::out;
use crate::values::{execution_id, timestamp};

/// A log handed in: an array (else `TypeError` `NOT_AN_ARRAY`) of
/// envelopes (else `InputError` `INVALID_EVENT`), as `locatePark` reads it.
fn log(what: &str, value: &JsValue) -> Result<Vec<Envelope>, JsValue> {
    if !crate::values::is_array(value) {
        return Err(js_errors::wrong_type(
            &format!("{what} must be an array of envelopes"),
            "NOT_AN_ARRAY",
        ));
    }
    envelopes(what, "INVALID_EVENT", value)
}

/// The `EXECUTION_STARTED` of a child started by `parentId`, at `at`: its
/// `payload.parent` is the edge retention reads to find the one park that
/// could pin the child, after any restart.
#[wasm_bindgen(js_name = startedChild)]
pub fn started_child_js(parent_id: JsValue, at: JsValue) -> Result<JsValue, JsValue> {
    let parent = execution_id(&parent_id)?;
    let at = timestamp("at", "INVALID_EVENT", &at)?;
    Ok(out::new_event(&started_child(&parent, at)))
}

/// The parent the log's first `EXECUTION_STARTED` records, or `null` (no
/// start, or a root: `parent` absent or `null`). A recorded parent that is
/// not an id is an `InputError` `INVALID_LINEAGE`: corrupt, never guessed.
#[wasm_bindgen(js_name = parentOf)]
pub fn parent_of_js(events: JsValue) -> Result<JsValue, JsValue> {
    match parent_of(&log("events", &events)?) {
        Ok(parent) => Ok(parent.map_or(JsValue::NULL, |p| JsValue::from_str(p.as_str()))),
        Err(error) => Err(js_errors::invalid(&error.to_string(), INVALID_LINEAGE)),
    }
}

/// Whether `childId` must be kept because the parent whose log is
/// `parentEvents` is parked on it (not terminal, and its open park has a
/// `CHILD_DONE` wait naming the child, by key or in a group). An open park
/// whose waits cannot be read is an `InputError` `INVALID_PARK`, and one
/// followed by a kernel kind this node does not know is `UNKNOWN_KIND`:
/// never a guess either way.
#[wasm_bindgen(js_name = pinParkedChildren)]
pub fn pin_parked_children_js(child_id: JsValue, parent_events: JsValue) -> Result<bool, JsValue> {
    let child = execution_id(&child_id)?;
    pin_parked_children(&child, &log("parentEvents", &parent_events)?).map_err(|error| {
        let code = match error {
            InputError::UnknownKind { .. } => UNKNOWN_KIND,
            _ => INVALID_PARK,
        };
        js_errors::invalid(
            &format!("whether the parent's open park waits on the child is unknown: {error}"),
            code,
        )
    })
}
