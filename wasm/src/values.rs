//! Values crossing the boundary: ids, numbers, events and envelopes.
//!
//! Every check happens here, before the core is called, so a bad value is
//! refused with a typed error and nothing in a store changes.

use loomfence_core::{Envelope, ExecutionId, MAX_SAFE_INTEGER, NewEvent};
use serde::Serialize;
use wasm_bindgen::{JsCast, JsValue};

use crate::{js_errors, json};

/// Reads an execution id: a string (else `TypeError`) that the core accepts
/// (else `InputError`).
pub(crate) fn execution_id(value: &JsValue) -> Result<ExecutionId, JsValue> {
    let Some(text) = value.as_string() else {
        return Err(js_errors::wrong_type(
            "executionId must be a string",
            "NOT_A_STRING",
        ));
    };
    ExecutionId::try_from(text.as_str()).map_err(|e| js_errors::id(&e))
}

/// Reads a fence or sequence: a number (else `TypeError`) that is a safe,
/// non-negative integer (else `RangeError`).
pub(crate) fn counter(name: &str, value: &JsValue) -> Result<u64, JsValue> {
    let Some(number) = value.as_f64() else {
        return Err(js_errors::wrong_type(
            &format!("{name} must be a number"),
            "NOT_A_NUMBER",
        ));
    };
    // Exact for every integer up to 2^53, so the round trip below proves
    // the value was a whole number in range.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let whole = number as u64;
    if number.fract() != 0.0
        || !number.is_finite()
        || number < 0.0
        || whole > MAX_SAFE_INTEGER
        || js_errors::number(whole) != number
    {
        return Err(js_errors::out_of_range(
            &format!(
                "{name} must be a safe non-negative integer, got {}",
                js_errors::show(number)
            ),
            "OUT_OF_RANGE",
        ));
    }
    Ok(whole)
}

/// Reads an optional counter: `undefined` and `null` are `None`.
pub(crate) fn optional_counter(name: &str, value: &JsValue) -> Result<Option<u64>, JsValue> {
    if value.is_undefined() || value.is_null() {
        Ok(None)
    } else {
        counter(name, value).map(Some)
    }
}

/// Reads a property of an options object (`undefined` when `options` is
/// not an object).
pub(crate) fn property(options: &JsValue, name: &str) -> Result<JsValue, JsValue> {
    if !options.is_object() {
        return Ok(JsValue::UNDEFINED);
    }
    js_sys::Reflect::get(options, &JsValue::from_str(name))
}

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
    let fence = property(&metadata, "fence")?;
    if !fence.is_undefined() && fence.as_f64().is_none() {
        return Err(js_errors::wrong_type(
            "metadata.fence must be a number (the writer's token)",
            "BAD_FENCE",
        ));
    }
    if fence.as_f64().is_some() {
        // A token is a counter, under the same rule as every fence argument.
        counter("metadata.fence", &fence).map_err(|_| {
            js_errors::out_of_range(
                &format!(
                    "metadata.fence must be a safe non-negative integer, got {}",
                    js_errors::show(fence.as_f64().unwrap_or_default())
                ),
                "BAD_FENCE",
            )
        })?;
    }
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

/// The fields of an event as a writer hands it over.
const EVENT_FIELDS: [&str; 4] = ["kind", "payload", "metadata", "at"];

/// An `InputError` about an event.
fn bad_event(detail: &str) -> JsValue {
    js_errors::invalid(&format!("event: {detail}"), "INVALID_EVENT")
}

/// A timestamp in ms: a number (else an `InputError` with `code`) that is
/// a safe integer, negative allowed (else a `RangeError`).
pub(crate) fn timestamp(name: &str, code: &str, value: &JsValue) -> Result<i64, JsValue> {
    let Some(ms) = value.as_f64() else {
        return Err(js_errors::invalid(
            &format!("{name} must be a number of milliseconds"),
            code,
        ));
    };
    if ms.fract() != 0.0 || !ms.is_finite() || ms.abs() > js_errors::number(MAX_SAFE_INTEGER) {
        return Err(js_errors::out_of_range(
            &format!("{name} must be a safe integer, got {}", js_errors::show(ms)),
            "AT_OUT_OF_RANGE",
        ));
    }
    #[allow(clippy::cast_possible_truncation)]
    Ok(ms as i64)
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

/// Writes a value as plain JSON-like JS: objects, arrays and numbers, no
/// `Map`s and no `BigInt`s.
pub(crate) fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, JsValue> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| js_errors::wrong_type(&format!("unrepresentable value: {e}"), "ENCODE"))
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
