//! JSON coming in from JavaScript (payloads, metadata, answers, events,
//! envelopes): checked in one pass by `js/json.js` and `js/events.js`,
//! which hand over JSON text, then read here by `json_text.rs`.
//!
//! Text rather than a walk across the boundary: one crossing per value
//! instead of one per member (each with its key decoded), which made a
//! field-by-field conversion the largest cost of every call.

use loomfence_core::JsonObject;
use serde_json::Value;
use wasm_bindgen::JsValue;

use crate::js_errors;
use crate::json_text::{Reader, TextError};

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/json.js")]
extern "C" {
    #[wasm_bindgen(js_name = jsonText)]
    fn json_text(value: &JsValue, path: &str, code: &str) -> JsValue;
}

/// `value` as JSON, or an `InputError` with `code` naming where it is not.
pub(crate) fn value(path: &str, code: &str, value: &JsValue) -> Result<Value, JsValue> {
    read_value(path, code, &json_text(value, path, code))
}

/// Reads the text a `js/` checker wrote for one JSON value, or passes on
/// the error it made instead.
pub(crate) fn read_value(path: &str, code: &str, text: &JsValue) -> Result<Value, JsValue> {
    let Some(text) = text.as_string() else {
        return Err(text.clone());
    };
    let mut reader = Reader::new(&text);
    let value = reader
        .line(Reader::any)
        .map_err(|e| js_errors::invalid(&format!("{path}: {e}"), code))?;
    if !reader.at_end() {
        return Err(js_errors::invalid(
            &format!("{path}: not one JSON value"),
            code,
        ));
    }
    Ok(value)
}

/// [`lines`] for a text that holds exactly one item; more (or none) is an
/// `InputError` with `code`.
pub(crate) fn one<T>(
    what: &str,
    code: &str,
    text: &JsValue,
    read: impl FnMut(&mut Reader<'_>) -> Result<T, TextError>,
) -> Result<T, JsValue> {
    let mut items = lines(what, code, text, read)?;
    match (items.pop(), items.is_empty()) {
        (Some(item), true) => Ok(item),
        _ => Err(js_errors::invalid(&format!("{what}: not one item"), code)),
    }
}

/// A JSON object (`undefined` is an empty one), or an `InputError`.
pub(crate) fn object(path: &str, code: &str, raw: &JsValue) -> Result<JsonObject, JsValue> {
    if raw.is_undefined() {
        return Ok(JsonObject::new());
    }
    match value(path, code, raw)? {
        Value::Object(map) => Ok(map),
        _ => Err(js_errors::invalid(
            &format!("{path} must be a plain object"),
            code,
        )),
    }
}

/// Reads what a `js/` checker answered: its text, one item per line, each
/// read by `read`; or the error it made (passed on as it is). A line that
/// does not read (a lone surrogate in a string) is an `InputError` with
/// `code` naming the item as `what[index]`: refused, never stored
/// reshaped.
pub(crate) fn lines<T>(
    what: &str,
    code: &str,
    text: &JsValue,
    mut read: impl FnMut(&mut Reader<'_>) -> Result<T, TextError>,
) -> Result<Vec<T>, JsValue> {
    let Some(text) = text.as_string() else {
        return Err(text.clone());
    };
    let mut reader = Reader::new(&text);
    let mut items = Vec::new();
    while !reader.at_end() {
        let index = items.len();
        let item = reader
            .line(&mut read)
            .map_err(|e| js_errors::invalid(&format!("{what}[{index}]: {e}"), code))?;
        items.push(item);
    }
    Ok(items)
}
