//! The answering-kind table and park location, for hosts that fold logs in
//! JavaScript: the same decisions every store makes.

use loomfence_core::{
    JsonObject,
    log::{KERNEL_EVENT_KINDS, KindFacts, is_answering, open_park_index},
};
use wasm_bindgen::prelude::*;

use crate::events::{code_facts, fold_codes, fold_facts};
use crate::js_errors;
use crate::json;
use crate::values::property;

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
    if !crate::values::is_array(&events) {
        return Err(js_errors::wrong_type(
            "events must be an array of envelopes",
            "NOT_AN_ARRAY",
        ));
    }
    // Folded in JavaScript, its throws caught there, element by element: a
    // log has no length limit, and a malformed element stops the fold at
    // once, so a copy first would cost what a 2^32-1 hole array holds.
    // One code per element when every kind is a well-formed string (the
    // kernel kinds by their index, any other by its stamp alone: all the
    // fold reads of it); otherwise each kind as text.
    let index = match fold_codes(&events)? {
        Some(codes) => {
            let mut facts = Vec::with_capacity(codes.len());
            for code in codes.bytes() {
                let Some(fact) = code_facts(code) else {
                    return Err(js_errors::internal("locatePark: a fold code that is none"));
                };
                facts.push(fact);
            }
            open_park_index(&facts)
        }
        None => {
            let facts = fold_facts(&events)?;
            let facts: Vec<KindFacts<'_>> = facts
                .iter()
                .map(|(kind, stamped)| KindFacts {
                    kind,
                    stamped: *stamped,
                })
                .collect();
            open_park_index(&facts)
        }
    };
    // The caller's own element, as `Array.prototype.find` gives it. It is
    // read again, its throw caught: the fold read it as a park, so anything
    // but an object now is a Proxy that answered otherwise the second time.
    let Some(index) = index.and_then(|i| u32::try_from(i).ok()) else {
        return Ok(JsValue::UNDEFINED);
    };
    let park = element_at(&events, index);
    if park.is_object() {
        Ok(park)
    } else {
        Err(js_errors::invalid(
            "events changed while they were read: the park could not be read again",
            "INVALID_EVENT",
        ))
    }
}

#[wasm_bindgen(module = "/js/keys.js")]
extern "C" {
    #[wasm_bindgen(js_name = elementAt)]
    fn element_at(list: &JsValue, index: u32) -> JsValue;
}

/// Every kernel kind's name; the package exports it frozen as
/// `KERNEL_EVENT_KINDS`.
#[wasm_bindgen(js_name = kernelEventKinds)]
#[must_use]
pub fn kernel_event_kinds() -> Vec<String> {
    KERNEL_EVENT_KINDS.iter().map(|&k| k.to_owned()).collect()
}
