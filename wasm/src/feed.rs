//! The change feed's values at the boundary: a cursor as the plain object
//! `{ epoch, position }` (two safe integers, so a JS host can hold one
//! without `BigInt`s), a feed or open-parks limit, and a feed entry written
//! as JSON text, as `readRange` writes its envelopes.
//!
//! Every bound is the core's: a limit is refused by the core's own check
//! (`MAX_FEED_LIMIT`), a cursor by [`FeedCursor::new`]; this module only
//! refuses what is not a number or an object at all.

use std::fmt::Write as _;

use loomfence_core::feed::FeedCursor;
use loomfence_core::{ExecutionId, NewEvent};
use wasm_bindgen::JsValue;

use crate::js_errors::{self, INVALID_LIMIT, number, show};
use crate::json_text;
use crate::out::Out;
use crate::values::{counter, property};

#[wasm_bindgen::prelude::wasm_bindgen(module = "/js/feed.js")]
extern "C" {
    #[wasm_bindgen(js_name = feedWaiter)]
    fn feed_waiter() -> JsValue;
    #[wasm_bindgen(js_name = feedWaiting)]
    fn feed_waiting(waiter: &JsValue) -> JsValue;
    #[wasm_bindgen(js_name = feedWake)]
    fn feed_wake(waiter: &JsValue);
}

/// A fresh wait for the next append (see `js/feed.js`).
pub(crate) fn waiter() -> JsValue {
    feed_waiter()
}

/// The promise `waiter` resolves.
pub(crate) fn waiting(waiter: &JsValue) -> JsValue {
    feed_waiting(waiter)
}

/// Resolves `waiter`'s promise.
pub(crate) fn wake(waiter: &JsValue) {
    feed_wake(waiter);
}

/// A cursor: an object (else `TypeError` `NOT_AN_OBJECT`) whose `epoch`
/// and `position` are counters (`TypeError` `NOT_A_NUMBER`, `RangeError`
/// `OUT_OF_RANGE`). The messages name the fields, not the argument: one
/// message per field keeps the `.wasm` from formatting names it never shows.
pub(crate) fn cursor(value: &JsValue) -> Result<FeedCursor, JsValue> {
    if !value.is_object() {
        return Err(js_errors::wrong_type(
            "a feed cursor must be an object { epoch, position }",
            "NOT_AN_OBJECT",
        ));
    }
    let epoch = counter("cursor.epoch", &property(value, "epoch")?)?;
    let position = counter("cursor.position", &property(value, "position")?)?;
    FeedCursor::new(epoch, position).map_err(|e| js_errors::input(&e))
}

/// A feed or open-parks limit named `name`: a number (else `TypeError`
/// `NOT_A_NUMBER`); one that is not a whole `u32` is `InputError`
/// `INVALID_LIMIT` here, and the core refuses the rest of what is outside
/// 1 to `MAX_FEED_LIMIT` with the same code.
pub(crate) fn limit(name: &str, value: &JsValue) -> Result<u32, JsValue> {
    let Some(n) = value.as_f64() else {
        return Err(js_errors::wrong_type(
            &format!("{name} must be a number"),
            "NOT_A_NUMBER",
        ));
    };
    if n.fract() != 0.0 || !(0.0..=f64::from(u32::MAX)).contains(&n) {
        return Err(js_errors::invalid(
            &format!("{name} must be a whole number of entries, got {}", show(n)),
            INVALID_LIMIT,
        ));
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(n as u32)
}

/// A cursor as `{ epoch, position }`.
pub(crate) fn cursor_js(cursor: FeedCursor) -> JsValue {
    Out::new()
        .set("epoch", &JsValue::from_f64(number(cursor.epoch())))
        .set("position", &JsValue::from_f64(number(cursor.position())))
        .done()
}

/// One feed entry, `{"cursor":{"epoch":…,"position":…},"event":…}`, the
/// event as `readRange` writes it.
pub(crate) fn write_entry(
    text: &mut String,
    cursor: FeedCursor,
    id: &ExecutionId,
    sequence: u64,
    event: &NewEvent,
) {
    let _ = write!(
        text,
        "{{\"cursor\":{{\"epoch\":{},\"position\":{}}},\"event\":",
        cursor.epoch(),
        cursor.position()
    );
    json_text::write_stored(text, id.as_str(), sequence, event);
    text.push('}');
}
