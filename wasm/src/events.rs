//! Events coming in from JavaScript (what writers hand to a store) and
//! envelopes (what host stores and callers hand back), read field by field
//! so every mistake gets its own typed error before the core is called.

use loomfence_core::{Envelope, ExecutionId, NewEvent};
use wasm_bindgen::{JsCast, JsValue};

use crate::values::{counter, property, timestamp};
use crate::{js_errors, json};

/// Reads one event as a writer hands it over, field by field, so each
/// mistake gets its own error: an unknown field (an envelope passed where
/// an event belongs, a misspelt `metdata`), a `kind` that is not a string,
/// an `at` or `metadata.fence` that is not a safe integer (`RangeError`),
/// a payload or metadata that is not a plain JSON object. `undefined`
/// payload or metadata is the same as leaving it out. The rest (the kind's
/// length, NUL characters) is the core's check, made by the store.
pub(crate) fn event(value: JsValue) -> Result<NewEvent, JsValue> {
    if !value.is_object() || js_sys::Array::is_array(&value) {
        return Err(js_errors::wrong_type(
            "event must be an object { kind, payload?, metadata?, at }",
            "NOT_AN_OBJECT",
        ));
    }
    for key in js_sys::Object::keys::<JsValue>(value.unchecked_ref()).iter() {
        let key = key.as_string().unwrap_or_default();
        if !EVENT_FIELDS.contains(&key.as_str()) {
            return Err(bad_event(&format!(
                "unknown field `{key}`, expected one of kind, payload, metadata, at"
            )));
        }
    }
    let Some(kind) = property(&value, "kind")?.as_string() else {
        return Err(bad_event("`kind` must be a string"));
    };
    let at = timestamp("event.at", "INVALID_EVENT", &property(&value, "at")?)?;
    let metadata = property(&value, "metadata")?;
    check_fence(&property(&metadata, "fence")?)?;
    let metadata = json::object("event.metadata", "INVALID_EVENT", &metadata)?;
    Ok(NewEvent {
        kind,
        payload: json::object(
            "event.payload",
            "INVALID_EVENT",
            &property(&value, "payload")?,
        )?,
        metadata,
        at,
    })
}

/// `metadata.fence`, if present, is a counter under the same rule as every
/// fence argument: a number must be a safe non-negative integer
/// (`RangeError`), anything else is a `TypeError`.
fn check_fence(fence: &JsValue) -> Result<(), JsValue> {
    if fence.is_undefined() {
        return Ok(());
    }
    let Some(number) = fence.as_f64() else {
        return Err(js_errors::wrong_type(
            "metadata.fence must be a number (the writer's token)",
            "BAD_FENCE",
        ));
    };
    counter("metadata.fence", fence).map(drop).map_err(|_| {
        js_errors::out_of_range(
            &format!(
                "metadata.fence must be a safe non-negative integer, got {}",
                js_errors::show(number)
            ),
            "BAD_FENCE",
        )
    })
}

/// The fields of an event as a writer hands it over.
const EVENT_FIELDS: [&str; 4] = ["kind", "payload", "metadata", "at"];

/// An `InputError` about an event.
fn bad_event(detail: &str) -> JsValue {
    js_errors::invalid(&format!("event: {detail}"), "INVALID_EVENT")
}

/// Reads a batch of events.
pub(crate) fn events(value: JsValue) -> Result<Vec<NewEvent>, JsValue> {
    if !js_sys::Array::is_array(&value) {
        return Err(js_errors::wrong_type(
            "events must be an array",
            "NOT_AN_ARRAY",
        ));
    }
    js_sys::Array::from(&value)
        .iter()
        .enumerate()
        .map(|(index, item)| event(item).inspect_err(|e| prefix(e, &format!("events[{index}]: "))))
        .collect()
}

/// Prefixes an error's message, to say where in a batch it was.
fn prefix(error: &JsValue, text: &str) {
    if let Some(message) = js_sys::Reflect::get(error, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
    {
        let _ = js_sys::Reflect::set(
            error,
            &JsValue::from_str("message"),
            &JsValue::from_str(&format!("{text}{message}")),
        );
    }
}

/// Reads the envelopes a host store returned (or a log handed to
/// `locatePark`), refusing anything else with an `InputError` with `code`.
pub(crate) fn envelopes(what: &str, code: &str, value: &JsValue) -> Result<Vec<Envelope>, JsValue> {
    if !js_sys::Array::is_array(value) {
        return Err(js_errors::invalid(
            &format!("{what} must be an array of envelopes"),
            code,
        ));
    }
    js_sys::Array::from(value)
        .iter()
        .enumerate()
        .map(|(index, item)| envelope(&format!("{what}[{index}]"), code, &item))
        .collect()
}

/// Reads one stored event, field by field. Fields an envelope does not
/// have are ignored: a host store may keep its own beside them.
pub(crate) fn envelope(what: &str, code: &str, value: &JsValue) -> Result<Envelope, JsValue> {
    let wrong = |detail: &str| js_errors::invalid(&format!("{what}: {detail}"), code);
    if !value.is_object() || js_sys::Array::is_array(value) {
        return Err(wrong("not an envelope object"));
    }
    let Some(id) = property(value, "executionId")?.as_string() else {
        return Err(wrong("`executionId` must be a string"));
    };
    let Some(kind) = property(value, "kind")?.as_string() else {
        return Err(wrong("`kind` must be a string"));
    };
    Ok(Envelope {
        execution_id: ExecutionId::try_from(id.as_str()).map_err(|e| wrong(&e.to_string()))?,
        sequence: counter("sequence", &property(value, "sequence")?)
            .map_err(|_| wrong("`sequence` must be a safe non-negative integer"))?,
        kind,
        payload: json::object(
            &format!("{what}.payload"),
            code,
            &property(value, "payload")?,
        )?,
        metadata: json::object(
            &format!("{what}.metadata"),
            code,
            &property(value, "metadata")?,
        )?,
        at: timestamp(&format!("{what}.at"), code, &property(value, "at")?)?,
    })
}
