//! Values crossing the boundary: ids, numbers, timestamps, option
//! properties, and results on their way out.
//!
//! Every check happens here, before the core is called, so a bad value is
//! refused with a typed error and nothing in a store changes.

use js_sys::Array;
use loomfence_core::{ExecutionId, log::MAX_SAFE_INTEGER};
use wasm_bindgen::{JsCast, JsValue};

use crate::js_errors;

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/json.js")]
extern "C" {
    #[wasm_bindgen(js_name = wellFormedText)]
    fn well_formed_text(value: &JsValue) -> Option<String>;
    #[wasm_bindgen(js_name = isArray)]
    fn is_array_caught(value: &JsValue) -> bool;
}

/// Whether a caller's value is an array; a value `Array.isArray` throws on
/// (a revoked Proxy) is not one, and is refused as such by the caller. The
/// throw is caught in JavaScript (`js/json.js`), so no exception unwinds
/// through the WebAssembly frames and the call needs no catching glue.
pub(crate) fn is_array(value: &JsValue) -> bool {
    is_array_caught(value)
}

/// Why a JavaScript value is not the text of an id.
pub(crate) enum NotText {
    /// Not a string at all.
    NotAString,
    /// A string with a lone surrogate: it would cross into Rust with U+FFFD
    /// in its place, so two distinct ids would become one.
    LoneSurrogate,
}

/// The text of an id (an execution id, a lease holder) exactly as
/// JavaScript holds it. Every id that crosses the boundary, on the event
/// side and the timer side, in an argument or a store's answer, is read
/// here, so they are refused the same way. One crossing when the id is
/// good (every call on the hot path); why it is not is asked only then.
pub(crate) fn id_text(value: &JsValue) -> Result<String, NotText> {
    well_formed_text(value).ok_or_else(|| {
        if value.is_string() {
            NotText::LoneSurrogate
        } else {
            NotText::NotAString
        }
    })
}

/// The message of a lone-surrogate refusal of `what`.
pub(crate) fn lone_surrogate(what: &str) -> String {
    format!("{what} has a lone surrogate (not well-formed UTF-16)")
}

/// An execution id in a store's or a callback's answer, `None` when it is
/// not one: the caller refuses the answer as a whole.
pub(crate) fn answered_id(value: &JsValue) -> Option<ExecutionId> {
    ExecutionId::try_from(id_text(value).ok()?).ok()
}

/// Reads an execution id: a string (else `TypeError`) that the core accepts
/// and that has no lone surrogate (else `InputError`), as [`id_text`]
/// reads it.
pub(crate) fn execution_id(value: &JsValue) -> Result<ExecutionId, JsValue> {
    let text = id_text(value).map_err(|not| match not {
        NotText::NotAString => {
            js_errors::wrong_type("executionId must be a string", "NOT_A_STRING")
        }
        NotText::LoneSurrogate => js_errors::invalid(&lone_surrogate("executionId"), "INVALID_ID"),
    })?;
    // Taken, not copied: the id keeps the text's allocation.
    ExecutionId::try_from(text).map_err(|e| js_errors::id(&e))
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
/// not an object); one that throws while read (a getter, a Proxy trap, a
/// revoked Proxy) is an `InputError` `UNREADABLE`, never its thrown value.
pub(crate) fn property(options: &JsValue, name: &str) -> Result<JsValue, JsValue> {
    property_as(options, name, name, js_errors::UNREADABLE)
}

/// [`property`], a throw refused as `what` with `code`: a store's reply
/// that throws is that store's contract error, not the caller's input.
pub(crate) fn property_as(
    value: &JsValue,
    name: &str,
    what: &str,
    code: &str,
) -> Result<JsValue, JsValue> {
    if !value.is_object() {
        return Ok(JsValue::UNDEFINED);
    }
    js_sys::Reflect::get(value, &JsValue::from_str(name))
        .map_err(|thrown| js_errors::unreadable_as(what, code, thrown))
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

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/keys.js")]
extern "C" {
    #[wasm_bindgen(js_name = listOf)]
    fn list_of(value: &JsValue, max: u32) -> JsValue;
}

/// Why a caller's value is not a list the package reads.
pub(crate) enum NotList {
    /// Not an array.
    NotArray,
    /// An array longer than the limit: its length, no element read.
    TooLong(f64),
    /// Reading it threw (a revoked Proxy, an element `get` trap): what it
    /// threw, for the refusal's `cause`.
    Unreadable(JsValue),
}

/// `value`'s elements as a plain copy when it is an array of at most `max`
/// (`js/keys.js` `listOf`): the length is read first, and no element is
/// read from a list over its limit, so a 2^32-1 hole array costs nothing;
/// a trap that throws is caught in JavaScript, so nothing unwinds through
/// the WebAssembly frames while the copy is walked.
#[inline(never)]
pub(crate) fn list(value: &JsValue, max: usize) -> Result<Array, NotList> {
    let copy = list_of(value, u32::try_from(max).unwrap_or(u32::MAX));
    if copy.is_undefined() {
        Err(NotList::NotArray)
    } else if let Some(length) = copy.as_f64() {
        Err(NotList::TooLong(length))
    } else if is_array(&copy) {
        Ok(copy.unchecked_into())
    } else {
        Err(NotList::Unreadable(
            js_sys::Reflect::get(&copy, &JsValue::from_str("thrown")).unwrap_or_default(),
        ))
    }
}
