//! The answering-kind table and park location, for hosts that fold logs in
//! JavaScript: the same decisions every store makes.

use loomfence_core::{JsonObject, KERNEL_EVENT_KINDS, KindFacts, is_answering, open_park_index};
use wasm_bindgen::prelude::*;

use crate::events::fold_facts;
use crate::js_errors;
use crate::json;
use crate::values::{NotList, list, property};

/// Whether `event` (an envelope or a new event: `kind` and optional
/// `metadata`) answers a park: a kernel answering kind, or an unknown kind
/// stamped `metadata.kernel === true`.
#[wasm_bindgen(js_name = isAnsweringKind)]
pub fn is_answering_kind(event: JsValue) -> Result<bool, JsValue> {
    if !event.is_object() {
        return Err(js_errors::wrong_type(
            "event must be an object with a kind",
            "NOT_AN_OBJECT",
        ));
    }
    let Some(kind) = property(&event, "kind")?.as_string() else {
        return Err(js_errors::wrong_type(
            "event.kind must be a string",
            "NOT_A_STRING",
        ));
    };
    let metadata = property(&event, "metadata")?;
    let metadata: JsonObject = if metadata.is_null() {
        JsonObject::new()
    } else {
        json::object("event.metadata", "INVALID_EVENT", &metadata)?
    };
    Ok(is_answering(&kind, &metadata))
}

/// The open park of a log (envelopes in sequence order): the newest
/// `EXECUTION_SUSPENDED` with no answering event after it, or `undefined`.
#[wasm_bindgen(js_name = locatePark)]
pub fn locate_park_js(events: JsValue) -> Result<JsValue, JsValue> {
    // A plain copy first (a log has no length limit): the fold and the
    // element handed back are the same reads, and a trap that throws is
    // caught in the copy, never met while the fold walks it.
    let events = list(&events, u32::MAX as usize).map_err(|not| match not {
        NotList::Unreadable(thrown) => js_errors::unreadable("events", thrown),
        _ => js_errors::wrong_type("events must be an array of envelopes", "NOT_AN_ARRAY"),
    })?;
    let facts = fold_facts(&events)?;
    let facts: Vec<KindFacts<'_>> = facts
        .iter()
        .map(|(kind, stamped)| KindFacts {
            kind,
            stamped: *stamped,
        })
        .collect();
    // The caller's own element, as `Array.prototype.find` gives it.
    Ok(
        match open_park_index(&facts).and_then(|i| u32::try_from(i).ok()) {
            Some(index) => events.get(index),
            None => JsValue::UNDEFINED,
        },
    )
}

/// Every kernel kind's name; the package exports it frozen as
/// `KERNEL_EVENT_KINDS`.
#[wasm_bindgen(js_name = kernelEventKinds)]
#[must_use]
pub fn kernel_event_kinds() -> Vec<String> {
    KERNEL_EVENT_KINDS.iter().map(|&k| k.to_owned()).collect()
}
