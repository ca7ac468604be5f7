//! Results going out to JavaScript: plain objects, arrays and numbers, as
//! JSON would have them (no `Map`s, no `BigInt`s).
//!
//! Small results (a few numbers and flags) are built field by field; events
//! and JSON values go out as JSON text parsed once on the JS side (see
//! [`via_text`]), one crossing each.

use js_sys::{Object, Reflect};
use loomfence_core::{Envelope, NewEvent, ParkExpectation};
use serde_json::Value;
use wasm_bindgen::JsValue;

use crate::js_errors::number;
use crate::json_text;

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

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/json.js")]
extern "C" {
    /// JSON text this crate wrote, as the plain values `JSON.parse` gives.
    #[wasm_bindgen(js_name = parseJson)]
    pub(crate) fn parse_json(text: &str) -> JsValue;
}

/// Text `write` wrote, parsed by `JSON.parse` on the JS side: one crossing
/// for the whole value, and the plain objects, arrays and numbers JSON has
/// (every key an own data property, `__proto__` too).
pub(crate) fn via_text(write: impl FnOnce(&mut String)) -> JsValue {
    let mut text = String::new();
    write(&mut text);
    parse_json(&text)
}

/// A JSON value as the plain JS value `JSON.parse` would give.
pub(crate) fn json(value: &Value) -> JsValue {
    via_text(|out| json_text::write_value(out, value))
}

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/events.js")]
extern "C" {
    #[wasm_bindgen(js_name = envelopesFromLines)]
    fn envelopes_from_lines(text: &str) -> JsValue;
    #[wasm_bindgen(js_name = resumeAnswerFromLines)]
    fn resume_answer_from_lines(text: &str) -> JsValue;
    #[wasm_bindgen(js_name = storedEnvelope)]
    fn stored_envelope(execution_id: &JsValue, sequence: f64, text: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = storedEnvelopes)]
    fn stored_envelopes(execution_id: &JsValue, first: f64, lines: &JsValue) -> JsValue;
}

/// The envelope of an event just stored, built on the JS side from the
/// text the event was read from (see `events::event`): the very JSON the
/// store parsed, so nothing is written back out here. `id` is the caller's
/// own string, which [`values::execution_id`](crate::values::execution_id)
/// accepted, so it is the id stored.
pub(crate) fn stored(id: &JsValue, sequence: u64, text: &JsValue) -> JsValue {
    stored_envelope(id, number(sequence), text)
}

/// The envelopes of a batch just stored from `first` on, as [`stored`]
/// builds one.
pub(crate) fn stored_batch(id: &JsValue, first: u64, lines: &JsValue) -> JsValue {
    stored_envelopes(id, number(first), lines)
}

/// Stored events, as an array, from what `write` wrote of them: each
/// event's lines ([`json_text::write_envelope_lines`]), one after the other
/// with a line break between. `JSON.parse` of the whole array costs about
/// half as much again as the objects built around the payloads' and
/// metadata's own texts.
pub(crate) fn stored_events(write: impl FnOnce(&mut String)) -> JsValue {
    let mut text = String::new();
    write(&mut text);
    envelopes_from_lines(&text)
}

/// A resume's answer `{ executionId, fence, resumed, attempts, head }`
/// from its lines: the id as a JSON string, the token (`null` when none was
/// taken), the attempts, the head, then the resumed event's lines.
pub(crate) fn resume_answer(write: impl FnOnce(&mut String)) -> JsValue {
    let mut text = String::new();
    write(&mut text);
    resume_answer_from_lines(&text)
}

/// Stored events, as an array.
pub(crate) fn envelopes(events: &[Envelope]) -> JsValue {
    via_text(|out| {
        out.push('[');
        for (index, event) in events.iter().enumerate() {
            if index > 0 {
                out.push(',');
            }
            json_text::write_envelope(out, event);
        }
        out.push(']');
    })
}

/// An event to be stored: `{ kind, payload, metadata, at }`.
pub(crate) fn new_event(event: &NewEvent) -> JsValue {
    via_text(|out| json_text::write_new_event(out, event))
}

/// A conditional acquire's expectation: `{ fence, parkSeq }`.
pub(crate) fn expectation(expect: ParkExpectation) -> JsValue {
    Out::new()
        .set("fence", &JsValue::from_f64(number(expect.fence)))
        .set("parkSeq", &JsValue::from_f64(number(expect.park_seq)))
        .done()
}
