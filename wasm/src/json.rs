//! JSON coming in from JavaScript (payloads, metadata, answers): checked in
//! one walk by `js/json.js`, then converted member by member into
//! `serde_json` values.
//!
//! Hand-converted rather than through serde-wasm-bindgen's deserializer:
//! the check has already settled what is JSON, so the conversion is a plain
//! walk, and leaving serde's generic deserializer out of the module saves
//! about 10 KB of the package's `.wasm`.

use js_sys::{Array, Object, Reflect};
use loomfence_core::JsonObject;
use serde_json::{Number, Value};
use wasm_bindgen::{JsCast, JsValue};

use crate::js_errors;

/// The largest integer a JS number holds exactly, as a float.
const SAFE: f64 = 9_007_199_254_740_991.0;

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/json.js")]
extern "C" {
    #[wasm_bindgen(js_name = jsonValue)]
    fn json_value(value: &JsValue, path: &str) -> JsValue;
}

/// `value` as JSON, or an `InputError` with `code` naming where it is not.
pub(crate) fn value(path: &str, code: &str, value: &JsValue) -> Result<Value, JsValue> {
    let checked = json_value(value, path);
    let problem = Reflect::get(&checked, &JsValue::from_str("problem"))?;
    if let Some(problem) = problem.as_string() {
        return Err(js_errors::invalid(&problem, code));
    }
    let clean = Reflect::get(&checked, &JsValue::from_str("value"))?;
    convert(&clean)
        .ok_or_else(|| js_errors::invalid(&format!("{path}: changed while it was read"), code))
}

/// A JSON object (`undefined` is an empty one), or an `InputError`.
pub(crate) fn object(path: &str, code: &str, raw: &JsValue) -> Result<JsonObject, JsValue> {
    if raw.is_undefined() {
        return Ok(JsonObject::new());
    }
    if !raw.is_object() || Array::is_array(raw) {
        return Err(js_errors::invalid(
            &format!("{path} must be a plain object"),
            code,
        ));
    }
    match value(path, code, raw)? {
        Value::Object(map) => Ok(map),
        _ => Err(js_errors::invalid(
            &format!("{path} must be a plain object"),
            code,
        )),
    }
}

/// Converts a value `js/json.js` accepted; `None` if it is not JSON after
/// all (a getter that answered differently the second time).
fn convert(value: &JsValue) -> Option<Value> {
    if value.is_null() {
        return Some(Value::Null);
    }
    if let Some(flag) = value.as_bool() {
        return Some(Value::Bool(flag));
    }
    if let Some(number) = value.as_f64() {
        return convert_number(number);
    }
    if let Some(text) = value.as_string() {
        return Some(Value::String(text));
    }
    if Array::is_array(value) {
        let items: Array = value.clone().unchecked_into();
        return items.iter().map(|item| convert(&item)).collect();
    }
    if value.is_object() {
        let object: &Object = value.unchecked_ref();
        let mut map = JsonObject::new();
        for key in Object::keys::<JsValue>(object).iter() {
            let member = Reflect::get(value, &key).ok()?;
            if member.is_undefined() {
                continue;
            }
            map.insert(key.as_string()?, convert(&member)?);
        }
        return Some(Value::Object(map));
    }
    None
}

/// A finite JS number: an integer when it is a safe one (as JSON readers
/// store `1`), a float otherwise.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn convert_number(number: f64) -> Option<Value> {
    if number.fract() == 0.0 && number.abs() <= SAFE {
        return Some(if number >= 0.0 {
            Value::from(number as u64)
        } else {
            Value::from(number as i64)
        });
    }
    Number::from_f64(number).map(Value::Number)
}
