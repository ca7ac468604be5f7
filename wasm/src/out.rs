//! Results going out to JavaScript, built field by field: plain objects,
//! arrays and numbers, as JSON would have them (no `Map`s, no `BigInt`s).
//!
//! By hand rather than through serde-wasm-bindgen's serializer: a serializer
//! instantiated for each outgoing type, with its generic sequence and map
//! code, cost the package about 10 KB of its `.wasm`, and every value here
//! is one of a handful of shapes.

use js_sys::{Array, Object, Reflect};
use loomfence_core::{Envelope, JsonObject, NewEvent, ParkExpectation};
use serde_json::Value;
use wasm_bindgen::JsValue;

use crate::js_errors::number;

/// A plain object built field by field: smaller in the `.wasm` than a
/// serde serializer instantiated for each outgoing type.
pub(crate) struct Out(Object);

impl Out {
    /// An empty object.
    pub(crate) fn new() -> Self {
        Self(Object::new())
    }

    /// Sets `key`; a fresh plain object takes every key.
    pub(crate) fn set(self, key: &str, value: &JsValue) -> Self {
        let _ = Reflect::set(&self.0, &JsValue::from_str(key), value);
        self
    }

    /// Sets `key` to a time or count. Every one the core hands out is a
    /// safe integer but a backoff's `nextTryAt`, which is `now` plus at most
    /// the cap and is rounded past 2^53-1 (a time ~285 000 years away).
    #[allow(clippy::cast_precision_loss)]
    pub(crate) fn number(self, key: &str, value: i64) -> Self {
        self.set(key, &JsValue::from_f64(value as f64))
    }

    /// The object.
    pub(crate) fn done(self) -> JsValue {
        self.0.into()
    }
}

/// A JSON value as the plain JS value `JSON.parse` would give.
pub(crate) fn json(value: &Value) -> JsValue {
    match value {
        Value::Null => JsValue::NULL,
        Value::Bool(flag) => JsValue::from_bool(*flag),
        Value::Number(n) => JsValue::from_f64(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(text) => JsValue::from_str(text),
        Value::Array(items) => items.iter().map(json).collect::<Array>().into(),
        Value::Object(map) => object(map),
    }
}

/// A JSON object as a plain JS object.
pub(crate) fn object(map: &JsonObject) -> JsValue {
    map.iter()
        .fold(Out::new(), |out, (key, member)| out.set(key, &json(member)))
        .done()
}

/// A stored event: `{ executionId, sequence, kind, payload, metadata, at }`.
pub(crate) fn envelope(event: &Envelope) -> JsValue {
    Out::new()
        .set(
            "executionId",
            &JsValue::from_str(event.execution_id.as_str()),
        )
        .set("sequence", &JsValue::from_f64(number(event.sequence)))
        .set("kind", &JsValue::from_str(&event.kind))
        .set("payload", &object(&event.payload))
        .set("metadata", &object(&event.metadata))
        .number("at", event.at)
        .done()
}

/// Stored events, as an array.
pub(crate) fn envelopes(events: &[Envelope]) -> JsValue {
    events.iter().map(envelope).collect::<Array>().into()
}

/// An event to be stored: `{ kind, payload, metadata, at }`.
pub(crate) fn new_event(event: &NewEvent) -> JsValue {
    Out::new()
        .set("kind", &JsValue::from_str(&event.kind))
        .set("payload", &object(&event.payload))
        .set("metadata", &object(&event.metadata))
        .number("at", event.at)
        .done()
}

/// A conditional acquire's expectation: `{ fence, parkSeq }`.
pub(crate) fn expectation(expect: ParkExpectation) -> JsValue {
    Out::new()
        .set("fence", &JsValue::from_f64(number(expect.fence)))
        .set("parkSeq", &JsValue::from_f64(number(expect.park_seq)))
        .done()
}
